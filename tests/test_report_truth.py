"""Issue 26: every report is right. A value use is a site only where the kernel can reach a call the tool has
not checked (a pytest marker, an alias whose calls are checked, a lazy getter are not sites); reasons name
what the code names. Each case is a shape met in a public repository (tests/corpus/manifest.toml)."""
import textwrap

from topk_migrate import api
from topk_migrate.model import Status

K = "sglang-kernel==0.4.6"


def sites(src: str, kernel: str = K):
    return api.migrate_source(textwrap.dedent(src), "backend.py", kernel).sites


def statuses(src: str, kernel: str = K):
    return [(s.line, s.status) for s in sites(src, kernel)]


MARKER = """
    import pytest
    from sgl_kernel.flash_mla import flash_mla_sparse_fwd


    @pytest.mark.flash_mla_sparse_fwd
    def test_bare(q):
        assert flash_mla_sparse_fwd(q, q, q, 0.1, topk_length=None) is not None


    @pytest.mark.flash_mla_sparse_fwd(reason="the marker called")
    def test_called(q):
        assert flash_mla_sparse_fwd(q, q, q, 0.1, topk_length=None) is not None
"""


def test_a_pytest_marker_named_after_the_kernel_is_not_a_site():
    assert statuses(MARKER) == [(8, Status.OPT_OUT), (13, Status.OPT_OUT)]


ALIAS = """
    import sgl_kernel.flash_mla as kernel_module

    flash_mla_sparse_fwd = kernel_module.flash_mla_sparse_fwd


    def attend(q, kv, idx, metadata):
        return flash_mla_sparse_fwd(q, kv, idx, 0.1, topk_length=metadata.dsa_cache_seqlens_int32)
"""


def test_a_module_alias_whose_only_call_is_checked_is_not_a_site():
    assert statuses(ALIAS) == [(8, Status.COMPLIANT)]


def test_an_alias_under_a_public_name_other_modules_can_import_stays_a_site():
    src = ALIAS.replace("flash_mla_sparse_fwd = kernel", "SPARSE = kernel").replace("return flash_mla_sparse_fwd(", "return SPARSE(")
    got = sites(src)
    assert [(s.line, s.status) for s in got] == [(4, Status.MANUAL), (8, Status.COMPLIANT)]  # (its call: the kernel's)
    assert "bound to `SPARSE`, a name other code may call it through" in got[0].reason


GETTER = """
    class Impl:
        def __init__(self):
            self.flash_mla_sparse_fwd = None

        def _get_flash_mla_sparse_fwd(self):
            if self.flash_mla_sparse_fwd is not None:
                return self.flash_mla_sparse_fwd
            import flash_mla
            self.flash_mla_sparse_fwd = flash_mla.flash_mla_sparse_fwd
            return self.flash_mla_sparse_fwd

        def _sparse(self, q, k, idx):
            flash_mla_sparse_fwd = self._get_flash_mla_sparse_fwd()
            return flash_mla_sparse_fwd(q, k, idx, sm_scale=1.0)
"""


def test_a_lazy_getter_is_not_a_site_only_the_real_call_is():
    got = sites(GETTER)
    assert [s.line for s in got] == [15]


def test_a_getter_passed_on_is_still_a_site():
    src = GETTER + "\n        def register(self, table):\n            table.add(self._get_flash_mla_sparse_fwd)\n"
    assert 10 in [s.line for s in sites(src)]


HOLDER = """
    _flash_mla_sparse_fwd = None


    def _ensure():
        global _flash_mla_sparse_fwd
        if _flash_mla_sparse_fwd is not None:
            return
        from sgl_kernel.flash_mla import flash_mla_sparse_fwd as _fwd
        _flash_mla_sparse_fwd = _fwd


    def attend(q, kv, idx, lens):
        _ensure()
        return _flash_mla_sparse_fwd(q, kv, idx, 0.1, topk_length=lens)


    def attend_full(q, kv, idx):
        _ensure()
        return _flash_mla_sparse_fwd(q, kv, idx, 0.1)
"""


def test_calls_through_a_private_holder_are_the_sites():
    got = sites(HOLDER)
    assert [(s.line, s.status) for s in got] == [(15, Status.COMPLIANT), (20, Status.MANUAL)]
    assert "through `_flash_mla_sparse_fwd`" in got[1].reason and "line 10" in got[1].reason
    assert got[1].callee == "sgl_kernel.flash_mla.flash_mla_sparse_fwd"


def test_check_exits_0_on_files_with_nothing_to_do(tmp_path):
    for i, src in enumerate((MARKER, ALIAS)):
        (tmp_path / f"f{i}.py").write_text(textwrap.dedent(src))
    assert api.run([str(tmp_path)], kernel=K).exit_code() == 0


def test_a_value_passed_to_super_init_names_it_as_written():
    src = """
        from sgl_kernel.flash_mla import flash_mla_sparse_fwd


        class Bench(Base):
            def __init__(self):
                super().__init__("sparse", flash_mla_sparse_fwd)
    """
    got = sites(src)
    assert len(got) == 1 and "passed to `super().__init__` as a value" in got[0].reason, got[0].reason


def test_reasons_print_paths_from_the_project_root_never_absolute(tmp_path):
    """With --kernel, a kernel defined in this project without the parameter is named by its path from
    the project root, in the text and the JSON report alike."""
    import json
    import subprocess
    import sys

    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'fork'\nversion = '0'\n")
    (tmp_path / "sgl_kernel").mkdir()
    (tmp_path / "sgl_kernel" / "__init__.py").write_text("")
    (tmp_path / "sgl_kernel" / "flash_mla.py").write_text(
        "def flash_mla_sparse_fwd(q, kv, indices, sm_scale, d_v=512):\n    return q\n")
    (tmp_path / "backend.py").write_text(
        "from sgl_kernel.flash_mla import flash_mla_sparse_fwd\n\n\n"
        "def attend(q, kv, idx, metadata):\n    return flash_mla_sparse_fwd(q, kv, idx, 0.1)\n\n"
        "# metadata.dsa_cache_seqlens_int32\n")
    got = api.run([str(tmp_path / "backend.py")], kernel=K).sites
    assert len(got) == 1 and "defined in this project (sgl_kernel/flash_mla.py:1)" in got[0].reason, got[0].reason
    for fmt in ([], ["--format", "json"]):
        cmd = [sys.executable, "-m", "topk_migrate", "check" if not fmt else "audit", *fmt, "--kernel", K,
               str(tmp_path / "backend.py")]
        r = subprocess.run(cmd, capture_output=True, text=True, cwd=str(tmp_path.parent))
        out = r.stdout
        assert "sgl_kernel/flash_mla.py:1" in out, (r.stdout, r.stderr)
        assert str(tmp_path) + "/sgl_kernel" not in out
        if fmt:
            assert all(str(tmp_path) not in s["reason"] for s in json.loads(out)["sites"])


# -- the real blocker first -------------------------------------------------------------------------------
DECORATED = """
    from typing import Optional

    import torch
    from sgl_kernel.flash_mla import flash_mla_sparse_fwd
    from tensorrt_llm._utils import nvtx_range


    class Backend:
        @nvtx_range("sparse")
        def _sparse(self, q, kv, idx):
            return flash_mla_sparse_fwd(q, kv, idx, 0.1)

        def forward(self, q, kv, idx, metadata):
            return self._sparse(q, kv, idx)

    # metadata.dsa_cache_seqlens_int32: clipped to the top-k width
"""


def test_a_decorator_reason_says_what_value_would_have_to_be_passed():
    (s,) = sites(DECORATED)
    assert s.status is Status.MANUAL and "decorated with `@nvtx_range`" in s.reason
    assert "the value to pass is metadata.dsa_cache_seqlens_int32, which the caller at line 15 holds" in s.reason, s.reason


def test_rows_that_cannot_align_come_before_the_decorator():
    """TensorRT-LLM's DeepSeek-V4 Hopper shape: q cut into 512-row chunks inside a decorated helper."""
    src = DECORATED.replace("return flash_mla_sparse_fwd(q, kv, idx, 0.1)",
                            "q = q[i:i + 512]\n            return flash_mla_sparse_fwd(q, kv, idx, 0.1)").replace(
        "def _sparse(self, q, kv, idx):", "def _sparse(self, q, kv, idx, i=0):")
    (s,) = sites(src)
    assert s.status is Status.MANUAL and s.reason.startswith("q's rows may not be the metadata's rows"), s.reason
    assert "nvtx_range" not in s.reason


def test_no_metadata_comes_before_the_decorator():
    src = DECORATED.replace("# metadata.dsa_cache_seqlens_int32: clipped to the top-k width", "").replace(
        "def forward(self, q, kv, idx, metadata):", "def forward(self, q, kv, idx, meta):")
    (s,) = sites(src)
    assert s.status is Status.MANUAL and s.reason.startswith("no clipped-seqlen metadata"), s.reason
    assert "nvtx_range" not in s.reason


def test_a_pytest_test_is_never_told_to_add_a_parameter():
    src = """
        import pytest
        import torch
        from sgl_kernel.flash_mla import flash_mla_sparse_fwd


        @pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
        def test_sparse_prefill(q, kv):
            idx = torch.full((64, 1, 2048), -1, dtype=torch.int32)
            out = flash_mla_sparse_fwd(q, kv, idx, 0.1)
            assert out is not None
    """
    (s,) = sites(src)
    assert s.status is Status.MANUAL
    assert "add the parameter" not in s.reason and "skipif" not in s.reason, s.reason
    assert "it is a pytest test, so pass topk_length to the kernel call itself" in s.reason
    # indices drawn at random: still no metadata first (nothing to pass), and no parameter to add
    (s,) = sites(src.replace("torch.full((64, 1, 2048), -1, dtype=torch.int32)", "torch.randint(0, 256, (64, 1, 2048))"))
    assert "it is a pytest test, so pass topk_length to the kernel call itself" in s.reason, s.reason


def test_no_metadata_comes_before_rows_that_cannot_align():
    """A benchmark helper with no metadata anywhere: nothing to pass is the blocker, not how q was built."""
    src = DECORATED.replace("# metadata.dsa_cache_seqlens_int32: clipped to the top-k width", "").replace(
        "def forward(self, q, kv, idx, metadata):", "def forward(self, q, kv, idx, meta):").replace(
        "return flash_mla_sparse_fwd(q, kv, idx, 0.1)", "q = q[order]\n            return flash_mla_sparse_fwd(q, kv, idx, 0.1)")
    (s,) = sites(src)
    assert s.reason.startswith("no clipped-seqlen metadata"), s.reason


def test_a_name_that_may_not_be_the_kernel_comes_before_an_unknown_kernel():
    """lmdeploy's shape: the kernel reaches a local through a lazy getter; no kernel declared. Declaring one
    would not help (the name is not an import), so the reason is the name, not the kernel's capability."""
    (s,) = sites(GETTER, kernel=None)
    assert s.status is Status.MANUAL and "may not be the kernel at run time" in s.reason, s.reason
    assert "capability unknown" not in s.reason


def test_a_closure_defined_twice_and_handed_to_a_timer_is_told_the_metadata_is_missing():
    """SGLang's q8kv8 prefill benchmark: `fn` is defined on two branches and passed to the timer; no metadata
    anywhere. Renaming one `fn` would not help: the reason is the missing metadata."""
    src = """
        from sgl_kernel.flash_mla import flash_mla_sparse_fwd


        def bench(q, kv, idx, fp8, timer):
            if fp8:
                def fn():
                    return flash_mla_sparse_fwd(q, kv, idx, 0.1)
            else:
                def fn():
                    return q
            return timer(fn)
    """
    (s,) = sites(src)
    assert s.reason.startswith("no clipped-seqlen metadata"), s.reason


def test_a_test_without_metadata_calling_with_an_expression_for_q_is_told_the_metadata_is_missing():
    """sgl-kernel's test_flashmla.py: `flash_mla_sparse_fwd(q.squeeze(0), ...)` in a pytest test."""
    src = """
        import torch
        from sgl_kernel.flash_mla import flash_mla_sparse_fwd


        def test_flash_mla_prefill(q, kv, indices):
            out, _, _ = flash_mla_sparse_fwd(q.squeeze(0), kv.squeeze(0), indices.squeeze(0), sm_scale=0.1)
            assert out is not None
    """
    (s,) = sites(src)
    assert "it is a pytest test, so pass topk_length to the kernel call itself" in s.reason, s.reason


def test_an_override_in_a_module_without_metadata_is_told_the_metadata_is_missing():
    """rtp-llm's SparseMlaOp / SparseMlaFp8Op: the module holds no clipped seqlens at all."""
    src = """
        from flash_mla import flash_mla_sparse_fwd


        class SparseMlaOp:
            def forward(self, q, kv, topk_indices):
                out, _, _ = flash_mla_sparse_fwd(q, kv, topk_indices, 0.1, d_v=512)
                return out


        class SparseMlaFp8Op(SparseMlaOp):
            def forward(self, q, kv, topk_indices, scales):
                return q


        def run(op, q, kv, idx):
            return op.forward(q, kv, idx)
    """
    (s,) = sites(src, kernel="flash_mla:topk_length")
    assert s.reason.startswith("no clipped-seqlen metadata"), s.reason


def test_a_module_alias_rebound_is_named_as_the_module_not_the_kernel():
    src = """
        import sgl_kernel.flash_mla as fm
        import legacy

        if FAST:
            fm = legacy


        def attend(q, kv, idx, metadata):
            return fm.flash_mla_sparse_fwd(q, kv, idx, 0.1)

        # metadata.dsa_cache_seqlens_int32
    """
    (s,) = sites(src)
    assert "`fm` may not be the kernel's module at run time" in s.reason, s.reason
    assert "`fm` may not be the kernel at run time" not in s.reason
