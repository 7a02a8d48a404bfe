"""Done-when of the core issue: on sglang 0.5.16's real dsa_backend.py, `apply` produces the
fix that 0.5.17 merged, function by function; 0.5.17 is compliant and left byte-identical."""
import ast
import functools

import pytest

from helpers import KERNEL, run_cli
from sglang_wheels import DSA, NSA, install_like_site_packages

HELPER, CALLERS = "_forward_flashmla_sparse", ("forward_extend", "forward_decode")


cli = functools.partial(run_cli, timeout=None)


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


def guard_result(guard_node, topk_rows, q_rows, dtype="int32"):
    """Run the guard alone on small CPU tensors: does it keep topk_length?"""
    import torch
    q = torch.empty(q_rows, 1, 1)
    lens = None if topk_rows is None else torch.zeros(topk_rows, dtype=getattr(torch, dtype))
    env = {"torch": torch, "topk_length": lens, "q_all": q, "q_input": q, "num_tokens": q_rows}
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
    # the same decision as the merged guard for matching, mismatching and absent lengths
    for topk_rows, q_rows in [(4, 4), (8, 4), (None, 4), (0, 0)]:
        assert guard_result(guard(ours[HELPER]), topk_rows, q_rows) == guard_result(guard(theirs[HELPER]), topk_rows, q_rows)
    # and stricter where the merged guard lets the kernel fail: lengths of another dtype fall back to the full width
    assert not guard_result(guard(ours[HELPER]), 4, 4, "int64") and guard_result(guard(theirs[HELPER]), 4, 4, "int64")
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


# -- no over-refusal (issue 8): the real releases that need the fix stay fixable, with the reference shape --------

# The default tier keeps 0.5.16 (test_0516_*: the merged fix, the old kernel), 0.5.17 and 0.5.12.post1's own
# pin (test_release_pinning_an_old_kernel_...); the reference shape on every other release is in the heavy tier
# (0.5.16's whole wheel is applied there by test_installed_project, its diff held to the installed engine's).
HEAVY = pytest.mark.heavy
RELEASES = [  # (distribution, version, backend file, --kernel or None: the wheel's own pin decides)
    pytest.param("sglang", "0.5.14", DSA, None, marks=HEAVY),
    pytest.param("sglang", "0.5.15", DSA, None, marks=HEAVY),
    pytest.param("sglang", "0.5.9", NSA, KERNEL, marks=HEAVY),  # pins sgl-kernel==0.3.21: too old unless the kernel is declared
    pytest.param("sglang", "0.5.12.post1", NSA, KERNEL, marks=HEAVY),  # pins sglang-kernel==0.4.2.post2
    pytest.param("sglang-kt", "0.7.2", NSA, KERNEL, marks=HEAVY),  # pins kt-kernel only; a 97 MB wheel
]


def seqlens_field(src):
    """The clipped-seqlen metadata the tree itself uses (dsa_ from 0.5.13 on, nsa_ before)."""
    return "metadata.dsa_cache_seqlens_int32" if "dsa_cache_seqlens_int32" in src else "metadata.nsa_cache_seqlens_int32"


@pytest.mark.parametrize("dist,version,backend,kernel", RELEASES, ids=[f"{p.values[0]}-{p.values[1]}" for p in RELEASES])
def test_real_release_is_fixable_with_the_reference_shape(tmp_path, dist, version, backend, kernel):
    # the whole wheel: every other file of the engine is read for overrides and patches (whole-project)
    path = install_like_site_packages(version, tmp_path, dist, backend, whole=True)
    original = path.read_text()
    flag = ("--kernel", kernel) if kernel else ()
    r = cli("apply", "-v", *flag, str(path))  # (apply decides as check does: one analysis of the wheel, not two)
    assert r.returncode == 1, r.stdout + r.stderr
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith(str(path))]
    assert len(lines) == 1 and " fixed sgl_kernel.flash_mla.flash_mla_sparse_fwd " in lines[0], r.stdout + r.stderr
    decided = "sglang-kernel==0.4.6 from --kernel" if kernel else f"from {dist.replace('-', '_')}-{version}.dist-info/METADATA"
    assert "    kernel: " in r.stdout and decided in r.stdout, r.stdout
    patched = path.read_text()
    ours, untouched = functions(patched), functions(original)
    field = seqlens_field(original)
    # the helper gains the parameter, guards it by q's rows and passes it on
    assert "topk_length: Optional[torch.Tensor]=None" in ast.unparse(ours[HELPER].args)
    assert kernel_keywords(ours[HELPER])["topk_length"] == "topk_length"
    g = guard(ours[HELPER])
    assert guard_result(g, 4, 4) and not guard_result(g, 8, 4) and guard_result(g, None, 4) and guard_result(g, 0, 0)
    # every caller holding the metadata passes it, and only callers and helper change
    callers = {name for name, fn in ours.items() if helper_calls(fn)}
    assert callers == set(CALLERS), callers
    for name in CALLERS:
        assert [c.get("topk_length") for c in helper_calls(ours[name])] == [field]
    for name, fn in untouched.items():
        if name not in (HELPER, *CALLERS):
            assert ast.dump(ours[name]) == ast.dump(fn), name
    compile(patched, str(path), "exec")
    assert cli("apply", *flag, str(path)).returncode == 0 and path.read_text() == patched  # idempotent


@pytest.mark.parametrize("version,pinned", [pytest.param("0.5.9", "sgl-kernel==0.3.21", marks=HEAVY),
                                            ("0.5.12.post1", "sglang-kernel==0.4.2.post2")])
def test_release_pinning_an_old_kernel_is_too_old_from_its_own_metadata(tmp_path, version, pinned):
    path = install_like_site_packages(version, tmp_path, "sglang", NSA)
    r = cli("check", str(path))
    assert r.returncode == 1
    assert f" manual sgl_kernel.flash_mla.flash_mla_sparse_fwd \u2014 kernel too old: {pinned} from sglang-{version}.dist-info/METADATA" in r.stdout, r.stdout


@HEAVY
def test_sglang_kt_without_a_kernel_says_what_to_declare(tmp_path):
    path = install_like_site_packages("0.7.2", tmp_path, "sglang-kt", NSA)
    r = cli("check", str(path))
    assert r.returncode == 1
    assert ("kernel capability unknown (pass --kernel): no pin of sglang-kernel or sgl-kernel (the distributions of "
            "sgl_kernel) found; topk_length needs sglang-kernel>=0.4.3, and no sgl-kernel release has it; declare the "
            'kernel with --kernel sglang-kernel==VERSION or kernel = "sglang-kernel==VERSION" in [tool.topk-migrate]'
            ) in r.stdout, r.stdout
