"""Rules are plug-ins: a third rule is one new file (tests/data/toy_rules/), found by discovery,
and its sites reach check, audit and bump in every format, with no engine file changed."""
import json
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

import topk_migrate.codemods as codemods
from topk_migrate import api, discover, rules
from topk_migrate.cli import main

ROOT = Path(__file__).resolve().parents[1]
TOY = Path(__file__).parent / "data" / "toy_rules"
BUMP_DATA = Path(__file__).parent / "data" / "bump"
KERNEL = "sglang-kernel==0.4.6"
SRC = ("from sgl_kernel.flash_mla import flash_mla_sparse_fwd\n\n"
       "def prefill(q, kv, idx, n):\n    return flash_mla_sparse_fwd(q, kv, idx, 1.0, topk_length=n)\n")
REASON = "a literal sm_scale of 1.0"


def _clear():
    rules.specs.cache_clear()
    rules.load.cache_clear()
    discover.prefilter_for.cache_clear()


@pytest.fixture
def toy(monkeypatch):
    """The toy rule's folder on the codemods package's path: how a rule file is added."""
    monkeypatch.setattr(codemods, "__path__", [*codemods.__path__, str(TOY)])
    _clear()
    yield rules.load("toy-literal-scale")
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


def test_the_toy_rule_is_discovered_with_its_examples(toy, tmp_path):
    from topk_migrate.api import migrate_source

    assert "toy-literal-scale" in rules.ids()
    for i, (source, status) in enumerate(toy.EXAMPLES):
        sites = [s for s in migrate_source(source, str(tmp_path / f"ex{i}.py"), kernel=KERNEL).sites
                 if s.rule == toy.id]
        assert [s.status for s in sites] == ([status] if status else []), source


def test_the_toy_rules_sites_show_in_every_format(toy, tmp_path):
    (tmp_path / "fork.py").write_text(SRC)
    run = CliRunner().invoke
    check = run(main, ["check", "--kernel", KERNEL, str(tmp_path / "fork.py")])
    assert check.exit_code == 1 and REASON in check.output and "[toy-literal-scale]" in check.output, check.output
    audits = {fmt: run(main, ["audit", "--kernel", KERNEL, "--format", fmt, str(tmp_path)])
              for fmt in ("text", "json", "sarif", "github")}
    assert all(r.exit_code == 1 for r in audits.values()), {k: r.output for k, r in audits.items()}
    assert REASON in audits["text"].output and "toy-literal-scale" in audits["text"].output
    doc = json.loads(audits["json"].stdout)
    assert [(s["rule"], s["status"]) for s in doc["sites"]] == [("pass-topk-length", "compliant"),
                                                                ("toy-literal-scale", "manual")]
    sarif = json.loads(audits["sarif"].stdout)["runs"][0]
    assert {r["id"] for r in sarif["tool"]["driver"]["rules"]} >= {"pass-topk-length", "toy-literal-scale"}
    assert [r["ruleId"] for r in sarif["results"]] == ["toy-literal-scale"]
    assert "title=topk-migrate toy-literal-scale%3A manual" in audits["github"].output
    old, new = str(BUMP_DATA / "sglang-kernel-0.4.6.json"), str(BUMP_DATA / "sglang-kernel-0.4.6.json")
    for fmt, needle in (("text", REASON), ("json", '"rule": "toy-literal-scale"'), ("markdown", "| manual |"),
                        ("sarif", '"ruleId": "toy-literal-scale"'), ("github", "toy-literal-scale")):
        r = run(main, ["bump", "--from", old, "--to", new, "--format", fmt, str(tmp_path)])
        assert needle in r.output, (fmt, r.output)


def test_a_rule_can_be_switched_off_per_project_and_suppressed_per_call(toy, tmp_path):
    (tmp_path / "fork.py").write_text(SRC)
    (tmp_path / "pyproject.toml").write_text('[tool.topk-migrate]\ndisable = ["toy-literal-scale"]\n')
    r = CliRunner().invoke(main, ["check", "--kernel", KERNEL, str(tmp_path / "fork.py")])
    assert r.exit_code == 0 and REASON not in r.output, r.output
    other = tmp_path / "other"
    other.mkdir()
    (other / "fork.py").write_text(SRC)
    (other / "pyproject.toml").write_text('[tool.topk-migrate]\ndisable = ["toy-literal-scal"]\n')
    r = CliRunner().invoke(main, ["check", "--kernel", KERNEL, str(other / "fork.py")])
    assert r.exit_code == 2 and "did you mean 'toy-literal-scale'" in r.output, r.output


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


def test_decode_rule_is_off_by_default_and_reports_its_hazard_when_enabled(tmp_path):
    decode = rules.load("decode-topk-length")
    from topk_migrate.api import migrate_source

    for i, (source, status, text) in enumerate(decode.EXAMPLES):
        path = str(tmp_path / f"d{i}.py")
        assert migrate_source(source, path, kernel=KERNEL).sites == []  # off by default
        sites = migrate_source(source, path, kernel=KERNEL, enable=["decode-topk-length"]).sites
        assert [s.status for s in sites] == ([status] if status else []), source
        assert all(text in s.reason and s.rule == decode.id for s in sites)
        assert migrate_source(source, path, kernel=KERNEL, enable=["decode-topk-length"]).new_source == source


def test_rules_command_lists_every_rule():
    r = subprocess.run(["topk-migrate", "rules"], capture_output=True, text=True)
    assert r.returncode == 0
    for spec in rules.specs():
        assert spec.id in r.stdout and spec.summary in r.stdout


@pytest.mark.parametrize("quick,ok", [('"_toy_quick"', True), ('"toy_quick"', False), ("QUICK", False), ('"_a.b"', False)])
def test_a_rules_quick_module_is_declared_as_a_private_module_name(tmp_path, quick, ok):
    """`quick` is read without importing the rule: a literal naming a private module of its package."""
    path = tmp_path / "toy.py"
    path.write_text(f'class Toy(Rule):\n    id = "toy"\n    summary = "s"\n    quick = {quick}\n')
    if ok:
        assert rules._read_spec("toy", str(path)).quick == "_toy_quick"
    else:
        with pytest.raises(rules.RuleError, match="quick|literal"):
            rules._read_spec("toy", str(path))


def test_a_rule_without_a_quick_module_leaves_the_file_to_the_engine(toy, tmp_path):
    """The toy rule reads the kernel's calls too and has no quick module: audit cannot answer for a
    file it reads without running it, so the toy's site is there."""
    import ast

    from topk_migrate import audit

    assert api.quick_sites(SRC, ast.parse(SRC), str(tmp_path / "m.py"), KERNEL) is None
    (tmp_path / "fork.py").write_text(SRC)
    got = audit.audit([str(tmp_path)], kernel=KERNEL, jobs=1)
    assert sorted(s.rule for s in got.sites) == ["pass-topk-length", "toy-literal-scale"]
