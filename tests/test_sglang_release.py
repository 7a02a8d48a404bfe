"""Done-when of the core issue: on sglang 0.5.16's real dsa_backend.py, `apply` produces the
fix that 0.5.17 merged, function by function; 0.5.17 is compliant and left byte-identical."""
import ast
import subprocess
import sys
from types import SimpleNamespace

import pytest

from sglang_wheels import install_like_site_packages

HELPER, CALLERS = "_forward_flashmla_sparse", ("forward_extend", "forward_decode")


def cli(*args):
    return subprocess.run([sys.executable, "-m", "topk_migrate", *args], capture_output=True, text=True)


def functions(src):
    return {n.name: n for n in ast.walk(ast.parse(src)) if isinstance(n, ast.FunctionDef)}


def kernel_keywords(fn):
    calls = [n for n in ast.walk(fn) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "flash_mla_sparse_fwd"]
    assert len(calls) == 1
    return {k.arg: ast.unparse(k.value) for k in calls[0].keywords}


def helper_calls(fn):
    return [{k.arg: ast.unparse(k.value) for k in n.keywords} for n in ast.walk(fn)
            if isinstance(n, ast.Call) and ast.unparse(n.func) == f"self.{HELPER}"]


def guard(fn):
    ifs = [n for n in fn.body if isinstance(n, ast.If) and "topk_length" in ast.unparse(n.test)]
    assert len(ifs) == 1, "exactly one row-count guard"
    return ifs[0]


def guard_result(guard_node, topk_rows, q_rows):
    """Run the guard alone with shape-only stand-ins: what topk_length does it leave?"""
    q = SimpleNamespace(shape=(q_rows, 128, 576))
    lens = None if topk_rows is None else SimpleNamespace(shape=(topk_rows,))
    env = {"topk_length": lens, "q_all": q, "q_input": q, "num_tokens": q_rows}
    exec(compile(ast.Module([guard_node], []), "<guard>", "exec"), env)
    return env["topk_length"] is lens


@pytest.fixture
def releases(tmp_path):
    base = tmp_path
    old = install_like_site_packages("0.5.16", base / "v16")
    new = install_like_site_packages("0.5.17", base / "v17")
    return old, new


def test_0517_is_compliant_and_untouched(releases):
    _, new = releases
    before = new.read_bytes()
    r = cli("check", str(new))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "1 compliant" in r.stderr
    r = cli("apply", str(new))
    assert r.returncode == 0
    assert new.read_bytes() == before


def test_0516_apply_reproduces_the_merged_fix(releases):
    old, new = releases
    original = old.read_text()
    r = cli("check", str(old))  # the kernel pin comes from sglang's own METADATA (sglang-kernel==0.4.5)
    assert r.returncode == 1 and " fixable sgl_kernel.flash_mla.flash_mla_sparse_fwd " in r.stdout, r.stdout + r.stderr
    r = cli("apply", str(old))
    assert r.returncode == 1, r.stderr
    ours, theirs, untouched = functions(old.read_text()), functions(new.read_text()), functions(original)

    # same helper signature
    assert ast.unparse(ours[HELPER].args) == ast.unparse(theirs[HELPER].args)
    assert "topk_length: Optional[torch.Tensor]=None" in ast.unparse(ours[HELPER].args)
    # same kernel keyword
    assert kernel_keywords(ours[HELPER]) == kernel_keywords(theirs[HELPER])
    # equivalent guard: same decision for matching, mismatching and absent lengths
    for topk_rows, q_rows in [(4, 4), (8, 4), (None, 4), (0, 0)]:
        assert guard_result(guard(ours[HELPER]), topk_rows, q_rows) == guard_result(guard(theirs[HELPER]), topk_rows, q_rows)
    # same two caller keywords
    for name in CALLERS:
        mine, merged = helper_calls(ours[name]), helper_calls(theirs[name])
        assert [c.get("topk_length") for c in mine] == ["metadata.dsa_cache_seqlens_int32"]
        assert [c.get("topk_length") for c in mine] == [c.get("topk_length") for c in merged]
    # every other function unchanged
    for name, fn in untouched.items():
        if name not in (HELPER, *CALLERS):
            assert ast.dump(ours[name]) == ast.dump(fn), name
    # and idempotent
    after = old.read_bytes()
    assert cli("apply", str(old)).returncode == 0
    assert old.read_bytes() == after


def test_0516_with_an_old_kernel_is_manual_and_untouched(releases):
    old, _ = releases
    before = old.read_bytes()
    r = cli("apply", "--kernel", "sglang-kernel==0.4.2.post2", str(old))
    assert r.returncode == 1
    assert " manual sgl_kernel.flash_mla.flash_mla_sparse_fwd \u2014 kernel too old" in r.stdout
    assert old.read_bytes() == before
