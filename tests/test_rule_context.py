"""rule_context: what a site rule's hook is handed (issue 38 item 2)."""
import libcst
import pytest

from helpers import KERNEL
from topk_migrate import api, rules
from topk_migrate.rule_context import Parsed, ProjectView, RuleContext


def _gate(path):
    return api.kernel_gate(path, KERNEL, rules.load("pass-topk-length"))


def test_the_text_is_parsed_on_first_use_and_once(monkeypatch, tmp_path):
    parsed = []
    real = libcst.parse_module
    monkeypatch.setattr(libcst, "parse_module", lambda source: (parsed.append(source), real(source))[1])
    text = Parsed("x = 1\n")
    ctx = RuleContext(str(tmp_path / "m.py"), text, _gate(str(tmp_path / "m.py")))
    other = RuleContext(ctx.path, text, ctx.gate, rules.RuleOptions(lengths="derived"))  # another rule, the same text
    assert parsed == []
    assert ctx.module is other.module and ctx.tree is other.tree and ctx.tree.module is ctx.module
    assert parsed == ["x = 1\n"] and other.options.lengths == "derived" and ctx.options == rules.RuleOptions()


def test_a_text_libcst_cannot_parse_raises_where_a_rule_reads_it(tmp_path):
    """Inside the rule's hook, where api._migrate turns it into the file's one-line error, as before."""
    ctx = RuleContext.of("def f(:\n", str(tmp_path / "m.py"), _gate(str(tmp_path / "m.py")))
    assert ctx.source == "def f(:\n"
    with pytest.raises(libcst.ParserSyntaxError):
        ctx.module  # noqa: B018  (the parse is made here)


def test_the_project_view_finds_and_reads_the_projects_files(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'fork'\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "ops.py").write_text("def f():\n    pass\n")
    (tmp_path / "pkg" / "backend.py").write_text("from .ops import f\n")
    view = RuleContext.of("", str(tmp_path / "pkg" / "backend.py"), None).project
    assert view == ProjectView(str(tmp_path / "pkg" / "backend.py")) and view.root == str(tmp_path)
    found = view.find_module("pkg.ops")
    assert found is not None and view.find_module(".ops") == found and view.find_module("pkg.nothing") is None
    assert view.read(found) == "def f():\n    pass\n" and view.read(str(tmp_path / "pkg")) is None


def test_a_tree_another_rule_asked_for_scopes_gives_pass_topk_length_the_same_answer(tmp_path):
    """Bodies are left out of the scope analysis (Tree.skip_bodies) only before it ran: where a rule before
    pass-topk-length in the file's run asked the shared tree for scopes, it reads the whole analysis."""
    from helpers import ROOT

    source = (ROOT / "fixtures" / "examples" / "dsa_backend.py").read_text()
    path = str(tmp_path / "dsa_backend.py")
    rule = rules.load("pass-topk-length")
    fresh = RuleContext.of(source, path, _gate(path))
    asked = RuleContext.of(source, path, _gate(path))
    assert asked.tree.scopes  # another rule's scope fact, asked first
    assert rule.sites(asked) == rule.sites(fresh)


class _Appender:
    """A stand-in site rule: it reads every file, and appends `line` once `after` is in the text."""

    param, min_kernel = None, {}

    def __init__(self, line, after=""):
        self.line, self.after = line, after

    def sites(self, ctx):
        text = ctx.source
        return (text + self.line if self.after in text and self.line not in text else text), []


def _two_rules(monkeypatch, first, second):
    specs = [rules.RuleInfo(id="rule-a", summary="", help="", entry_points=("x",), has_sites=True),
             rules.RuleInfo(id="rule-b", summary="", help="", entry_points=("x",), has_sites=True)]
    hooks = {"rule-a": first, "rule-b": second}
    monkeypatch.setattr(api.rules, "enabled", lambda *a: specs)
    monkeypatch.setattr(api.rules, "load", lambda rule_id: hooks[rule_id])


def test_rules_that_make_work_for_each_other_run_to_a_fixed_point(monkeypatch, tmp_path):
    """rule-a's line is due only after rule-b's: one pass in the registry's order would miss it."""
    _two_rules(monkeypatch, _Appender("# a\n", after="# b"), _Appender("# b\n"))
    out = api._migrate("x = 1\n", str(tmp_path / "m.py"), KERNEL, rules.RuleOptions())
    assert out.new_source == "x = 1\n# b\n# a\n"


def test_rewrites_that_never_settle_refuse_the_file(monkeypatch, tmp_path):
    class Flip(_Appender):
        def sites(self, ctx):
            return ctx.source + self.line, []  # always one more line: never settles
    _two_rules(monkeypatch, Flip("# a\n"), Flip("# b\n"))
    with pytest.raises(api.InputError, match="still change each other's text after 3 passes"):
        api._migrate("x = 1\n", str(tmp_path / "m.py"), KERNEL, rules.RuleOptions())
