"""Rules are plug-ins: a fourth rule, with its own kernel parameter (`d_v`), is one new package
(tests/data/toy_rules/explicit_d_v/), found by discovery; its sites reach check, apply, audit (its
quick classifier too) and bump in every format, with no engine file changed."""
import json
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

import topk_migrate.codemods as codemods
from helpers import KERNEL, ROOT
from rule_examples import check_example
from topk_migrate import api, discover, rules
from topk_migrate.cli import main

TOY = Path(__file__).parent / "data" / "toy_rules"
BUMP_DATA = Path(__file__).parent / "data" / "bump"
SRC = ("from sgl_kernel.flash_mla import flash_mla_sparse_fwd\n\n"
       "def prefill(q, kv, idx, n):\n    return flash_mla_sparse_fwd(q, kv, idx, 1.0, topk_length=n)\n")
FIXED = SRC.replace("topk_length=n)", "topk_length=n, d_v=512)")
REASON = "leaves d_v to the kernel's default"


def _clear():
    rules.specs.cache_clear()
    rules.load.cache_clear()
    discover.prefilter_for.cache_clear()


@pytest.fixture
def toy(monkeypatch):
    """The toy rules' folder on the codemods package's path: how a rule package is added."""
    monkeypatch.setattr(codemods, "__path__", [*codemods.__path__, str(TOY)])
    _clear()
    yield rules.load("explicit-d-v")
    monkeypatch.undo()
    _clear()


def test_no_engine_file_names_a_rule():
    """The engine knows rules only through the registry: no module outside codemods/ imports one."""
    engine = [p for p in (ROOT / "topk_migrate").rglob("*.py")]
    for p in engine:
        text = p.read_text()
        for spec in rules.specs():
            module = spec.module.rsplit(".", 1)[1]
            assert f"codemods.{module}" not in text and f"import {module}" not in text, (p, spec.id)


# Where the engine may still say a rule's words, and why: the example a message or an option's help shows.
# (The first rule's GPU proof, its kernel, emitters and contract, is its own: codemods/pass_topk_length/smoke/.)
SAYS = {
    "config.py": {"sglang-kernel"},  # `kernel: expected a string such as "sglang-kernel==0.4.6"`
    "kernels.py": {"sglang-kernel", "sgl_kernel", "flash_mla", "topk_length"},  # parse_pin's examples
    "options.py": {"sglang-kernel"},  # --kernel's help
    "rules.py": {"pass-topk-length"},  # the example of a valid rule id
    "bump/sources.py": {"sgl-kernel"},  # a source tree's layout: sglang keeps its kernel under sgl-kernel/python/
}


def _words(spec) -> set:
    words = {spec.id, *spec.entry_points, *spec.providers, *spec.tags, *spec.wrappers,
             *(d for ds in spec.providers.values() for d in ds)}
    return words | ({spec.param} if spec.param else set())


def test_no_engine_code_says_a_rules_parameter_entry_points_or_kernels():
    """Beyond imports: no name, attribute or string in the engine's code (docstrings and comments
    aside) is one of a rule's id, parameter, entry points, kernel modules, distributions, wrapper
    paths or tags, except the examples in SAYS; the engine takes them all from RuleInfo."""
    import ast

    words = set().union(*(_words(s) for s in rules.specs()))
    found = []
    for p in sorted((ROOT / "topk_migrate").rglob("*.py")):
        rel = p.relative_to(ROOT / "topk_migrate").as_posix()
        tree = ast.parse(p.read_text())
        docs = {id(n.body[0].value) for n in ast.walk(tree)
                if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
        for n in ast.walk(tree):
            said = n.value if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs else \
                n.id if isinstance(n, ast.Name) else n.attr if isinstance(n, ast.Attribute) else None
            if said is None:
                continue
            hits = {w for w in words if w in said} - SAYS.get(rel, set())
            if hits:
                found.append(f"{rel}:{n.lineno}: {sorted(hits)}")
    assert not found, "\n".join(found)


def test_the_toy_rule_is_discovered_with_its_examples(toy, tmp_path):
    """Its examples are its tests, run as every shipped rule's are (tests/rule_examples.py)."""
    assert "explicit-d-v" in rules.ids() and rules.spec("explicit-d-v").param == "d_v"
    assert toy.EXAMPLES
    for i, ex in enumerate(toy.EXAMPLES):
        (tmp_path / str(i)).mkdir()
        check_example(toy.id, i, ex, tmp_path / str(i))


def test_the_toy_rules_sites_show_in_every_format(toy, tmp_path):
    (tmp_path / "fork.py").write_text(SRC)
    run = CliRunner().invoke
    check = run(main, ["check", "--kernel", KERNEL, str(tmp_path / "fork.py")])
    assert check.exit_code == 1 and REASON in check.output and "[explicit-d-v]" in check.output, check.output
    audits = {fmt: run(main, ["audit", "--kernel", KERNEL, "--format", fmt, str(tmp_path)])
              for fmt in ("text", "json", "sarif", "github")}
    assert all(r.exit_code == 1 for r in audits.values()), {k: r.output for k, r in audits.items()}
    assert REASON in audits["text"].output and "explicit-d-v" in audits["text"].output
    doc = json.loads(audits["json"].stdout)
    assert sorted((s["rule"], s["status"]) for s in doc["sites"]) == [("explicit-d-v", "fixable"),
                                                                      ("pass-topk-length", "compliant")]
    sarif = json.loads(audits["sarif"].stdout)["runs"][0]
    assert {r["id"] for r in sarif["tool"]["driver"]["rules"]} >= {"pass-topk-length", "explicit-d-v"}
    assert [r["ruleId"] for r in sarif["results"]] == ["explicit-d-v"]
    assert "title=topk-migrate explicit-d-v%3A fixable" in audits["github"].output
    tags = {r["id"]: r["properties"]["tags"] for r in sarif["tool"]["driver"]["rules"]}
    assert tags["explicit-d-v"] == ["correctness"] and tags["pass-topk-length"] == ["performance", "flashmla"]
    old, new = str(BUMP_DATA / "sgl-kernel-0.3.17.json"), str(BUMP_DATA / "sglang-kernel-0.4.6.json")
    for fmt, needle in (("text", "`d_v` is left to"), ("json", '"rule": "explicit-d-v"'), ("markdown", "| opportunity |"),
                        ("sarif", '"ruleId": "explicit-d-v"'), ("github", "explicit-d-v")):
        r = run(main, ["bump", "--from", old, "--to", new, "--format", fmt, str(tmp_path)])
        assert needle in r.output, (fmt, r.output)
    diff = run(main, ["apply", "--diff", "--kernel", KERNEL, str(tmp_path / "fork.py")])
    assert "+    return flash_mla_sparse_fwd(q, kv, idx, 1.0, topk_length=n, d_v=512)" in diff.output, diff.output
    applied = run(main, ["apply", "--kernel", KERNEL, str(tmp_path / "fork.py")])
    assert applied.exit_code == 1 and (tmp_path / "fork.py").read_text() == FIXED, applied.output  # 1: it rewrote


def test_the_toy_rules_quick_classifier_answers_for_audit(toy, tmp_path):
    """A file whose every call passes both rules' parameters is classified without LibCST (audit's
    scanners), by both quick classifiers, with the sites the rules' own hooks give."""
    p = tmp_path / "fork.py"
    p.write_text(FIXED)
    quick = api.process_file(str(p), kernel=KERNEL, narrowed=True, engine=False)
    assert not quick.needs_engine and sorted((s.rule, s.status.value) for s in quick.sites) == [
        ("explicit-d-v", "compliant"), ("pass-topk-length", "compliant")], quick
    full = api.process_file(str(p), kernel=KERNEL)
    assert sorted((s.rule, s.status.value, s.line) for s in full.sites) == sorted(
        (s.rule, s.status.value, s.line) for s in quick.sites)
    p.write_text(SRC)  # passes topk_length only: the narrowing keeps what the toy rule needs, and declines
    assert api.process_file(str(p), kernel=KERNEL, narrowed=True, engine=False).needs_engine


def test_a_rule_can_be_switched_off_per_project_and_suppressed_per_call(toy, tmp_path):
    (tmp_path / "fork.py").write_text(SRC)
    (tmp_path / "pyproject.toml").write_text('[tool.topk-migrate]\ndisable = ["explicit-d-v"]\n')
    r = CliRunner().invoke(main, ["check", "--kernel", KERNEL, str(tmp_path / "fork.py")])
    assert r.exit_code == 0 and REASON not in r.output, r.output
    other = tmp_path / "other"
    other.mkdir()
    (other / "fork.py").write_text(SRC)
    (other / "pyproject.toml").write_text('[tool.topk-migrate]\ndisable = ["explicit-d-"]\n')
    r = CliRunner().invoke(main, ["check", "--kernel", KERNEL, str(other / "fork.py")])
    assert r.exit_code == 2 and "did you mean 'explicit-d-v'" in r.output, r.output


def test_a_suppression_names_the_rule_it_silences(tmp_path):
    from topk_migrate.api import migrate_source

    call = "    return flash_mla_sparse_fwd(q, kv, idx, 1.0)"
    head = "from sgl_kernel.flash_mla import flash_mla_sparse_fwd\n\ndef f(q, kv, idx, metadata):\n"
    for comment, silenced in (("# topk-migrate: ignore[pass-topk-length] rows differ", True),
                              ("# topk-migrate: ignore[decode-topk-length] other rule", False),
                              ("# topk-migrate: ignore[decode-topk-length, pass-topk-length] both", True),
                              ("# topk-migrate: ignore rows differ", True)):
        site, = migrate_source(f"{head}{call}  {comment}\n", str(tmp_path / "x.py"), kernel=KERNEL).sites
        assert (site.status.value == "opt-out") is silenced, (comment, site)


def test_decode_rule_is_off_by_default(tmp_path):
    """Its examples (tests/test_rule_examples.py runs them enabled) give no site while it is off."""
    decode = rules.load("decode-topk-length")
    from topk_migrate.api import migrate_source

    for i, ex in enumerate(e for e in decode.EXAMPLES if e.bump is None):
        assert migrate_source(ex.code, str(tmp_path / f"d{i}.py"), kernel=ex.kernel).sites == []


def test_rules_command_lists_every_rule():
    r = subprocess.run(["topk-migrate", "rules"], capture_output=True, text=True)
    assert r.returncode == 0
    for spec in rules.specs():
        assert spec.id in r.stdout and spec.summary in r.stdout


@pytest.mark.parametrize("info,error", [
    ('RuleInfo(id="Toy", summary="s", help="h")', "lower-case"),
    ('RuleInfo(id="toy", summary="two\\nlines", help="h")', "one-line"),
    ('RuleInfo(id="toy", summary="s", help="h", quick="a.b")', "quick"),
    ('RuleInfo(id="toy", summary="s", help="h", proof="smoke")', "proof"),
    ('RuleInfo(id="toy", summary="s", help="h", proof="smoke.command:")', "proof"),
    ('{"id": "toy"}', "RuleInfo"),
    (None, "RuleInfo"),
])
def test_a_rule_package_declares_a_valid_info(tmp_path, monkeypatch, info, error):
    """The registry imports a rule package's __init__ and reads INFO; a bad one is one error naming the file."""
    pkg = tmp_path / "bad_rule"
    pkg.mkdir()
    head = "from topk_migrate.rules import RuleInfo\n"
    (pkg / "__init__.py").write_text(head + (f"INFO = {info}\n" if info else ""))
    monkeypatch.setattr(codemods, "__path__", [*codemods.__path__, str(tmp_path)])
    _clear()
    try:
        with pytest.raises(rules.RuleError, match=error) as e:
            rules.specs()
        assert str(pkg / "__init__.py") in str(e.value)
    finally:
        monkeypatch.undo()
        import sys

        sys.modules.pop("topk_migrate.codemods.bad_rule", None)
        _clear()


def test_smoke_is_the_proof_a_rule_declares():
    """The CLI's `smoke` is the command the registry's rule names in INFO.proof, imported from its package."""
    import click

    owner = rules.proof_rule()
    assert owner is not None and owner.id == "pass-topk-length" and owner.proof
    command = main.get_command(click.Context(main), "smoke")
    assert command is rules.load_proof(owner.id) and command.callback.__module__.startswith(owner.module + ".")


def test_without_a_proof_there_is_no_smoke_command(monkeypatch):
    monkeypatch.setattr(rules, "proof_rule", lambda: None)
    monkeypatch.delitem(main.commands, "smoke", raising=False)  # where an earlier test resolved it
    r = CliRunner().invoke(main, ["--help"])
    assert r.exit_code == 0 and " smoke " not in r.output and " check " in r.output, r.output
    assert CliRunner().invoke(main, ["smoke", "--help"]).exit_code == 2


def test_one_rule_at_most_declares_a_proof(tmp_path, monkeypatch):
    pkg = tmp_path / "second_proof"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from topk_migrate.rules import RuleInfo\n"
                                     'INFO = RuleInfo(id="second-proof", summary="s", help="h", proof="p:command")\n')
    monkeypatch.setattr(codemods, "__path__", [*codemods.__path__, str(tmp_path)])
    _clear()
    try:
        with pytest.raises(rules.RuleError, match="runs one rule's proof") as e:
            rules.proof_rule()
        assert str(pkg / "__init__.py") in str(e.value)
    finally:
        monkeypatch.undo()
        import sys

        sys.modules.pop("topk_migrate.codemods.second_proof", None)
        _clear()


def test_a_call_a_quick_classifier_declines_is_left_to_the_engine(toy, tmp_path):
    """The call passes topk_length but not d_v: the toy's quick classifier declines, so audit's scanners
    hand the file to the engine, which gives both rules' sites."""
    import ast

    from topk_migrate import audit

    assert api.quick_sites(SRC, ast.parse(SRC), str(tmp_path / "m.py"), KERNEL) is None
    (tmp_path / "fork.py").write_text(SRC)
    got = audit.audit([str(tmp_path)], kernel=KERNEL, jobs=1)
    assert sorted((s.rule, s.status.value) for s in got.sites) == [("explicit-d-v", "fixable"), ("pass-topk-length", "compliant")], got.sites

def test_the_registry_imports_no_rule_hooks():
    """Reading every rule's INFO imports its package's __init__ only: no LibCST, no hook module."""
    import sys

    code = ("import sys; from topk_migrate import rules; rules.specs(); "
            "print('libcst' in sys.modules, sorted(m for m in sys.modules if m.endswith('.rule')))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert r.stdout.split() == ["False", "[]"], r.stdout + r.stderr


# A file three site rules read: the toy's call (no d_v) and pass-topk-length's (no topk_length) are one call, each
# rule rewrites it; decode-topk-length reports the sparse decode call.
BOTH = ("from sgl_kernel.flash_mla import flash_mla_sparse_fwd, flash_mla_with_kvcache\n\n"
        "def prefill(q, kv, idx, metadata):\n    return flash_mla_sparse_fwd(q, kv, idx, 1.0)\n\n"
        "def decode(q, k, bt, sl, meta, ns, idx):\n"
        "    return flash_mla_with_kvcache(q, k, bt, sl, 512, meta, ns, indices=idx)\n"
        "# metadata.dsa_cache_seqlens_int32\n")


def test_a_file_is_parsed_once_for_every_rule_that_reads_it(toy, monkeypatch, tmp_path):
    """Issue 38 item 2: the engine parses the file once and hands that module, and one scope tree, to every
    site rule (rule_context.RuleContext); a second rule that rewrites makes its rewrite on a parse of the text
    the first one wrote; the rules then read the text made once more, to find it settled (api._settled). Three
    rules reading one file, two of them rewriting: 3 parses (5 when each rule parsed the text itself)."""
    import libcst

    from topk_migrate.cst import scopecheck

    real_parse, real_tree = libcst.parse_module, scopecheck.Tree.__init__
    parsed, trees = [], []
    monkeypatch.setattr(libcst, "parse_module", lambda source, *a, **k: (parsed.append(source), real_parse(source, *a, **k))[1])
    monkeypatch.setattr(scopecheck.Tree, "__init__", lambda self, module, positions=True, source=None: (
        trees.append(source) if positions else None, real_tree(self, module, positions, source))[1])
    m = api.migrate_source(BOTH, str(tmp_path / "fork.py"), kernel=KERNEL, enable=["decode-topk-length"])
    assert [(s.rule, s.status.value) for s in m.sites] == [
        ("explicit-d-v", "fixable"), ("pass-topk-length", "fixable"), ("decode-topk-length", "manual")]
    assert "d_v=512, topk_length=topk_length)" in m.new_source
    first = BOTH.replace("1.0)", "1.0, d_v=512)")  # the toy's rewrite: pass-topk-length's is made on top of it
    assert parsed == [BOTH, first, m.new_source]
    assert trees == [BOTH, first, m.new_source]  # the file's text (every rule's), the rewrite on top, the settled text


def test_a_rule_reads_the_context_it_is_handed(toy, tmp_path):
    """A rule's hook called alone, with a context of its own (RuleContext.of): the sites the engine reports,
    less the id and the kernel's source the engine adds, and the same rewrite."""
    from topk_migrate.rule_context import RuleContext

    path = str(tmp_path / "fork.py")
    ctx = RuleContext.of(SRC, path, api.kernel_gate(path, KERNEL, toy))
    new, found = toy.sites(ctx)
    assert new == FIXED and [(s.line, s.status.value) for s in found] == [(4, "fixable")] and REASON in found[0].reason
    assert ctx.module.code == SRC and ctx.tree.module is ctx.module  # parsed once, on first use
    engine = api.migrate_source(SRC, path, kernel=KERNEL)
    assert [s for s in engine.sites if s.rule == toy.id][0].reason == found[0].reason


def test_the_declared_hooks_are_the_rules_hooks(toy):
    """INFO.has_sites/has_bump stay declared: the byte prefilter, narrowing, audit's scanners and the report
    formats read them in processes that never import a rule's hooks (LibCST). Every discovered rule's
    declaration is its Rule class's hooks, and a declaration that is not is refused when the rule loads."""
    for spec in rules.specs():
        rule = rules.load(spec.id)
        assert (spec.has_sites, spec.has_bump) == (type(rule).sites is not None, type(rule).bump is not None), spec.id


def test_a_declaration_that_disagrees_with_the_hooks_is_refused(toy, monkeypatch):
    from dataclasses import replace

    real = rules.spec("explicit-d-v")
    rules.load.cache_clear()
    monkeypatch.setattr(rules, "spec", lambda rule_id: replace(real, has_bump=False) if rule_id == real.id else real)
    with pytest.raises(rules.RuleError, match="has_sites/has_bump disagree"):
        rules.load("explicit-d-v")
    rules.load.cache_clear()
