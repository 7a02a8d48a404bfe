"""narrow.py must never change a verdict: the engine gives the same sites on the narrowed source."""
import ast
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from helpers import KERNEL, ROOT
from narrow_cases import CASES, FIXTURES, verdicts
from topk_migrate import narrow
from topk_migrate.api import migrate_source
from topk_migrate.discover import may_hold_site


def assert_same(source, path, kernel=KERNEL):
    small = narrow.narrow(source)
    full = verdicts(source, path, kernel)
    assert verdicts(source, path, kernel, small if small is not None else source) == full
    return small, full


@pytest.mark.parametrize("name", CASES)
def test_made_up_edge_cases(name, tmp_path):
    small, full = assert_same(textwrap.dedent(CASES[name]), str(tmp_path / "m.py"))
    if name in ("syntax error", "windows newlines", "the kernel stored in an attribute, and rebound from it"):
        assert small is None  # not narrowed: parsed whole (a value use: the engine reports it)
    elif name == "docstring mention only":
        assert small == narrow.NOTHING and full == []
    elif name in ("aliases and module spellings", "op level and module level"):
        assert full and small.splitlines() == textwrap.dedent(CASES[name]).splitlines()  # nothing to stub
    else:
        assert small and small != textwrap.dedent(CASES[name]) and full  # narrowed, and there was something to find
    if name == "compliant calls at several depths, with odd neighbours":
        tree = ast.parse(small)  # only imports, call statements and strings are left
        assert "if 1:" in small and not any(type(n).__name__.endswith(("FunctionDef", "ClassDef")) for n in ast.walk(tree))
    if name == "compliant calls whose blocks collide":
        assert "if 1:" not in small and "def g():" in small  # falls back to stubbing defs


def test_narrowing_keeps_lines_and_shrinks_what_is_parsed():
    src = textwrap.dedent(CASES["compliant calls at several depths, with odd neighbours"])
    small = narrow.narrow(src)
    assert small.count("\n") == src.count("\n")
    kept = [ln for ln in small.splitlines() if "flash_mla_sparse_fwd(" in ln]
    assert all(ln in src.splitlines() for ln in kept) and len(kept) == 5


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: str(p.relative_to(ROOT)))
def test_fixtures(path):
    """Real files, with their real kernel pins (no --kernel): the gate reads the same project."""
    assert_same(path.read_text(), str(path), kernel=None)


@pytest.mark.heavy
def test_the_real_tree(bench_tree):
    """Every candidate of the 13k-file benchmark tree, with its real pins."""
    candidates = sorted(p for p in bench_tree.rglob("*.py") if may_hold_site(p.read_bytes()))
    assert candidates
    for path in candidates:
        assert_same(path.read_text(), str(path), kernel=None)


@pytest.mark.heavy  # runs six test files again under a shadow plugin (about 2.5 min on 2 loaded cores)
def test_in_the_engines_own_tests(tmp_path):
    """Every source the engine's tests feed it goes through narrowing too (tests/narrow_shadow.py)."""
    log = tmp_path / "shadow.jsonl"
    tests = [f"tests/{t}" for t in ("test_spellings.py", "test_contract_gate.py", "test_fuzz.py", "test_kernel_gate.py",
                                    "test_rule_examples.py", "test_fixture_pairs.py") if (ROOT / "tests" / t).exists()]
    env = {**os.environ, "NARROW_SHADOW_LOG": str(log), "PYTHONPATH": str(ROOT / "tests")}
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "narrow_shadow", "-p", "no:cacheprovider", *tests],
                       cwd=ROOT, env=env, capture_output=True, text=True)
    assert r.returncode in (0, 1), r.stdout[-2000:] + r.stderr[-2000:]  # their own failures are theirs to report
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    differ = [e for e in entries if not e["same"]]
    assert not differ, json.dumps(differ[:3], indent=1)[:4000]
    assert sum(e["narrowed"] for e in entries) >= 50, len(entries)
    assert sum(e["quick"] for e in entries if e["narrowed"]) >= 20, len(entries)


# What the analysis reads of the whole module, outside the functions that hold or call the kernel: the
# narrowed file must keep it, or audit says fixable where check says manual.
MODULE_WIDE = {
    "computed-setattr": ("", "\n\ndef _unrelated(obj, name, value):\n    setattr(obj, name, value)\n"),
    "unclipped-field": ("dsa_cache_seqlens_int32=pad_rows(compute_dsa_seqlens(seqlens, self.index_topk), rows),",
                        "dsa_cache_seqlens_int32=seqlens.to(torch.int32),"),
    "replay-elsewhere": ("", "\n\nclass Other:\n    def init_forward_metadata_replay_cuda_graph(self, bs):\n"
                             "        self.forward_metadata = DSAMetadata(1, 2)\n"),
}


@pytest.mark.parametrize("name", sorted(MODULE_WIDE))
def test_audit_keeps_what_the_analysis_reads_module_wide(name, tmp_path):
    from topk_migrate.audit import audit

    example = Path(__file__).resolve().parents[1] / "fixtures" / "examples"
    old, new = MODULE_WIDE[name]
    src = example.joinpath("dsa_backend.py").read_text()
    src = src.replace(old, new) if old else src + new
    (tmp_path / "requirements.txt").write_text(example.joinpath("requirements.txt").read_text())
    path = tmp_path / "dsa_backend.py"
    path.write_text(src)
    checked = [(s.status, s.reason) for s in migrate_source(src, str(path)).sites]
    audited = [(s.status, s.reason) for s in audit([str(tmp_path)]).sites]
    assert audited == checked and checked[0][0].value == "manual", (audited, checked)
