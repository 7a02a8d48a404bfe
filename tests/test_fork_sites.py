"""Issue 34, items 2-4: the real fork sites the issue lists, each in a small tree of our own that has the
shape of the real one (its layout, the construct that decided the verdict; none of their code), with the
verdict judged by reading the real file, and beside each the variant that must keep the old verdict.

- vivienfanghuagood/sglang nsa_backend.py:1221 (`--kernel sglang-kernel==0.4.6`): fixable. A parameter
  annotated `PretrainedConfig` handed to `setattr` (configs/model_config.py:89), and a classmethod's
  `setattr(cls, ...)` of an unrelated class (speculative/spec_info.py:99), rebind nothing of the backend.
- meituan-longcat/SGLang-FluentLLM (and ZunhaiSu's copy) dsa_backend.py:967 (`--kernel flash_mla:topk_length`):
  fixable. The `elif` after the branch that returns the helper's call hands the indices to a decode method;
  it cannot run before that call (the rest of the real tree refuses it otherwise: a computed `setattr` in
  srt/utils.py's replace_submodule, on a receiver nothing declares).
- IISuperluminaLII/FlashMLA_Windows_Linux_sm120 tests/test_flash_mla_prefill.py:104: reported (manual, the
  interface in the tree has no topk_length) although `.gitignore` says `test_*.py`: git tracks it.
- PFCCLab/FlashMLA tests/lib.py:321 (and paddle_test/lib.py:427, paddle_tests/lib.py:444), decode rule:
  compliant, topk_length the 15th positional argument of the interface in the same tree.
- A FlashMLA package re-exporting its interface with `from .flash_mla_interface import *`; FlagGems'
  `flag_gems.flash_mla_sparse_fwd` defined under src/ and re-exported by star imports: the interface is read.
- Two copies of a backend side by side: each fixable (the other's `x = pad(fb, x)` after a clip).
- flytiger-eco/sglang-for-sail python/sglang/srt/layers/attention/hip_flash_mla.py:48: `audit .` from the
  repository's top lists it, as `python/pyproject.toml` (its project) enables decode-topk-length.
"""
import subprocess
import textwrap
from pathlib import Path

import pytest

from helpers import KERNEL
from topk_migrate import api
from topk_migrate.audit import audit
from topk_migrate.model import Status

EXAMPLE = (Path(__file__).resolve().parents[1] / "fixtures" / "examples" / "dsa_backend.py").read_text()


def write(root: Path, files: dict) -> Path:
    for name, text in files.items():
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text))
    return root


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.email=t@t", "-c", "user.name=t", *args], cwd=root, check=True,
                   capture_output=True)


def sites(paths, kernel=None):
    return [(Path(s.path).name, s.line, s.status, s.reason) for s in api.run([str(p) for p in paths], kernel=kernel).sites]


# -- vivienfanghuagood/sglang: receivers of a declared type ------------------------------------------------------
NSA_BACKEND = """\
import torch
from sgl_kernel.flash_mla import flash_mla_sparse_fwd

from sglang.srt.configs.model_config import get_nsa_index_topk
from sglang.srt.speculative.spec_info import SpeculativeAlgorithm


class NSAMetadata:
    nsa_cache_seqlens_int32: torch.Tensor


class NativeSparseAttnBackend:
    forward_metadata: NSAMetadata

    def forward_extend(self, q, kv, topk_indices, layer):
        metadata = self.forward_metadata
        return self._forward_flashmla_sparse(q, kv, topk_indices, layer.scaling)

    def _forward_flashmla_sparse(self, q_all, kv_cache, page_table_1, sm_scale):
        indices = page_table_1.unsqueeze(1)
        o, _, _ = flash_mla_sparse_fwd(q_all, kv_cache, indices, sm_scale)
        return o
"""
MODEL_CONFIG = """\
from transformers import PretrainedConfig


def get_nsa_index_topk(config: PretrainedConfig) -> int:
    return config.index_topk


def handle_rope_parameters(config: {annotation}):
    if hasattr(config, "rope_scaling"):
        for k, v in config.rope_scaling.items():
            if not hasattr(config, k):
                setattr(config, k, v)
"""
SPEC_INFO = """\
class SpeculativeAlgorithm:
    _registry = {}

    @classmethod
    def register(cls, name, value):
        cls._registry[name] = value
        setattr(cls, name.upper(), value)
"""


def sglang_fork(root: Path, annotation: str = "PretrainedConfig") -> Path:
    write(root, {"python/pyproject.toml": "[project]\nname = 'sglang'\n",
                 "python/sglang/srt/layers/attention/nsa_backend.py": NSA_BACKEND,
                 "python/sglang/srt/configs/model_config.py": MODEL_CONFIG.format(annotation=annotation),
                 "python/sglang/srt/speculative/spec_info.py": SPEC_INFO})
    (root / ".git").mkdir()
    return root / "python/sglang/srt/layers/attention/nsa_backend.py"


def test_vivienfanghuagood_sglang_nsa_backend_is_fixable_past_a_setattr_on_a_hugging_face_config(tmp_path):
    ((_, _, status, reason),) = sites([sglang_fork(tmp_path)], KERNEL)
    assert status is Status.FIXABLE, reason


@pytest.mark.parametrize("annotation", ["", "Any", "NativeSparseAttnBackend"])
def test_the_same_setattr_on_an_undeclared_or_related_receiver_still_refuses(tmp_path, annotation):
    fork = sglang_fork(tmp_path, annotation)
    model_config = fork.parents[2] / "configs" / "model_config.py"
    text = model_config.read_text().replace("(config: )", "(config)")
    if annotation == "Any":
        text = "from typing import Any\n" + text
    if annotation == "NativeSparseAttnBackend":
        text = "from sglang.srt.layers.attention.nsa_backend import NativeSparseAttnBackend\n" + text
    model_config.write_text(text)
    ((_, _, status, reason),) = sites([fork], KERNEL)
    assert status is Status.MANUAL and "model_config.py" in reason and "setattr" in reason, reason


# -- meituan-longcat/SGLang-FluentLLM: the elif after a returned call ---------------------------------------------
FLUENT_BACKEND = """\
import torch
from flash_mla import flash_mla_sparse_fwd

from sglang.srt.layers.quantization import quantize_k_cache


class DSAMetadata:
    nsa_cache_seqlens_int32: torch.Tensor


class DpskSparseAttnBackend:
    forward_metadata: DSAMetadata

    def forward_extend(self, q_all, kv_cache, topk_indices, layer):
        metadata = self.forward_metadata
        page_table_1 = topk_indices
        if self.nsa_prefill_impl == "flashmla_prefill":
            return self._forward_flashmla_prefill(q_all=q_all, kv_cache=kv_cache, page_table_1=page_table_1,
                                                  sm_scale=layer.scaling)
        elif self.nsa_prefill_impl == "flashmla_decode":
            o = self._forward_flashmla_decode(q_all=q_all, kv_cache=kv_cache, metadata=metadata,
                                              page_table_1=page_table_1)
            return o
        else:
            raise ValueError(self.nsa_prefill_impl)

    def _forward_flashmla_prefill(self, q_all, kv_cache, page_table_1, sm_scale):
        indices = page_table_1.unsqueeze(1)
        o, _, _ = flash_mla_sparse_fwd(q=q_all, kv=kv_cache, indices=indices, sm_scale=sm_scale)
        return o

    def _forward_flashmla_decode(self, q_all, kv_cache, metadata, page_table_1):
        kv_cache = quantize_k_cache(kv_cache)
        indices = page_table_1.unsqueeze(1)
        return q_all + indices.sum() + kv_cache.sum()
"""


def fluent_fork(root: Path, backend: str = FLUENT_BACKEND) -> Path:
    write(root, {"python/pyproject.toml": "[project]\nname = 'sglang'\n",
                 "python/sglang/srt/layers/attention/dsa_backend.py": backend,
                 "python/sglang/srt/layers/quantization.py": "def quantize_k_cache(x):\n    x.mul_(1.0)\n    return x\n"})
    (root / ".git").mkdir()
    return root / "python/sglang/srt/layers/attention/dsa_backend.py"


def test_meituan_longcat_fluentllm_dsa_backend_is_fixable_past_the_decode_elif(tmp_path):
    ((_, _, status, reason),) = sites([fluent_fork(tmp_path)], "flash_mla:topk_length")
    assert status is Status.FIXABLE, reason


def _decode_falls_through(writes_indices: bool) -> str:
    """FLUENT_BACKEND with the decode method in a branch that falls through to the prefill call: it runs first."""
    start = FLUENT_BACKEND.index('        if self.nsa_prefill_impl == "flashmla_prefill":')
    end = FLUENT_BACKEND.index("    def _forward_flashmla_prefill")
    backend = FLUENT_BACKEND[:start] + (
        '        if self.nsa_prefill_impl == "flashmla_decode":\n'
        "            self._forward_flashmla_decode(q_all=q_all, kv_cache=kv_cache, metadata=metadata,\n"
        "                                          page_table_1=page_table_1)\n"
        "        return self._forward_flashmla_prefill(q_all=q_all, kv_cache=kv_cache, page_table_1=page_table_1,\n"
        "                                              sm_scale=layer.scaling)\n\n") + FLUENT_BACKEND[end:]
    if writes_indices:
        backend = backend.replace("        indices = page_table_1.unsqueeze(1)\n        return q_all",
                                  "        page_table_1[:, -1] = -1\n        indices = page_table_1.unsqueeze(1)\n        return q_all")
    return backend


def test_the_decode_call_on_the_path_to_the_prefill_call_refuses_where_it_writes_the_indices(tmp_path):
    ((_, _, status, reason),) = sites([fluent_fork(tmp_path, _decode_falls_through(True))], "flash_mla:topk_length")
    assert status is Status.MANUAL and "_forward_flashmla_decode" in reason, reason


def test_a_method_that_writes_another_of_its_parameters_leaves_the_indices_alone(tmp_path):
    """The decode method writes kv_cache (quantize_k_cache) and only reads page_table_1: on the path or not,
    it changes no top-k entry (the parameters the indices are handed to decide, not the method's others)."""
    ((_, _, status, reason),) = sites([fluent_fork(tmp_path, _decode_falls_through(False))], "flash_mla:topk_length")
    assert status is Status.FIXABLE, reason


# -- IISuperluminaLII/FlashMLA_Windows_Linux_sm120: a tracked file the .gitignore matches ------------------------
def sm120_repo(root: Path) -> Path:
    write(root, {".gitignore": "build/\ntest_*.py\n*_test.py\n",
                 "setup.py": "from setuptools import setup\nsetup(name='flash_mla')\n",
                 "flash_mla/__init__.py": "from flash_mla.flash_mla_interface import flash_mla_sparse_fwd\n",
                 "flash_mla/flash_mla_interface.py": "def flash_mla_sparse_fwd(q, kv, indices, sm_scale, d_v=512):\n"
                                                     "    return q\n",
                 "tests/test_flash_mla_prefill.py": "import flash_mla\n\n\ndef test_prefill(q, kv, indices):\n"
                                                    "    out = flash_mla.flash_mla_sparse_fwd(q, kv, indices, 0.5)\n"
                                                    "    return out\n",
                 "tests/test_scratch.py": "import flash_mla\nflash_mla.flash_mla_sparse_fwd(q, kv, i, 1.0)\n",
                 "build/gen/kept.py": "import flash_mla\nflash_mla.flash_mla_sparse_fwd(q, kv, i, 1.0)\n",
                 "build/gen/stale.py": "import flash_mla\nflash_mla.flash_mla_sparse_fwd(q, kv, i, 1.0)\n"})
    git(root, "init", "-q")
    git(root, "add", "-f", "setup.py", ".gitignore", "flash_mla", "tests/test_flash_mla_prefill.py", "build/gen/kept.py")
    git(root, "commit", "-qm", "x")
    return root


def test_sm120_tracked_test_file_is_walked_although_gitignore_matches_it(tmp_path):
    repo = sm120_repo(tmp_path)
    found = sorted((name, line, status) for name, line, status, _ in sites([repo]))
    # the tracked ones (a test file `test_*.py` matches, a file under an ignored directory); never the
    # ignored files git does not track beside them (tests/test_scratch.py, build/gen/stale.py)
    assert found == [("kept.py", 2, Status.MANUAL), ("test_flash_mla_prefill.py", 5, Status.MANUAL)], found
    (prefill,) = [reason for name, _, _, reason in sites([repo]) if name == "test_flash_mla_prefill.py"]
    assert prefill.startswith("kernel too old: interface at flash_mla/flash_mla_interface.py:1"), prefill
    for jobs in (1, 2):
        got = sorted(Path(s.path).name for s in audit([str(repo)], jobs=jobs).sites)
        assert got == ["kept.py", "test_flash_mla_prefill.py"], (jobs, got)


def test_outside_a_git_work_tree_the_ignore_rules_alone_decide(tmp_path):
    repo = sm120_repo(tmp_path / "r")
    (tmp_path / "copy").mkdir()
    subprocess.run(["cp", "-r", str(repo / "."), str(tmp_path / "copy")], check=True)
    subprocess.run(["rm", "-rf", str(tmp_path / "copy" / ".git")], check=True)
    (tmp_path / "copy" / ".git").mkdir()  # a top git does not accept: it tells nothing, the rules decide
    assert sites([tmp_path / "copy"]) == []


# -- PFCCLab/FlashMLA: positional arguments by the interface in the tree (decode rule) ----------------------------
DECODE_INTERFACE = """\
def flash_mla_with_kvcache(q, k_cache, block_table, cache_seqlens, head_dim_v, tile_scheduler_metadata,
                           num_splits=None, softmax_scale=None, causal=False, is_fp8_kvcache=False, indices=None,
                           attn_sink=None, extra_k_cache=None, extra_indices_in_kvcache=None, topk_length=None,
                           extra_topk_length=None):
    return q
"""


def pfcc_repo(root: Path, call_args: str) -> Path:
    write(root, {"setup.py": "", "pyproject.toml": "[tool.topk-migrate]\nenable = ['decode-topk-length']\n",
                 "flash_mla/__init__.py": "from flash_mla.flash_mla_interface import (\n    flash_mla_with_kvcache,\n)\n",
                 "flash_mla/flash_mla_interface.py": DECODE_INTERFACE,
                 "tests/lib.py": f"import flash_mla\n\n\ndef run_flash_mla_decode(t, meta, splits):\n"
                                 f"    return flash_mla.flash_mla_with_kvcache(\n        {call_args}\n    )\n"})
    (root / ".git").mkdir()
    return root / "tests" / "lib.py"


FIFTEEN = ("t.q, t.kv, None, None, 512, meta, splits, t.sm_scale, False, True, t.indices, t.attn_sink, "
           "t.extra_kv, t.extra_indices, {topk}")


@pytest.mark.parametrize("topk,status,why", [
    ("t.topk_length, t.extra_topk_length", Status.COMPLIANT, "passes topk_length positionally"),
    ("None", Status.OPT_OUT, "passes topk_length=None positionally"),
])
def test_pfcclab_flashmla_lib_passes_topk_length_as_the_15th_positional_argument(tmp_path, topk, status, why):
    ((_, line, got, reason),) = sites([pfcc_repo(tmp_path, FIFTEEN.format(topk=topk))])
    assert (line, got, reason) == (5, status, why), reason


@pytest.mark.parametrize("args,expected", [
    # indices passed positionally, in its place there, and no topk_length: the decode hazard, reported
    ("t.q, t.kv, None, None, 512, meta, splits, t.sm_scale, False, True, t.indices", "sparse decode without topk_length"),
    ("t.q, t.kv, None, None, 512, meta, splits, *rest", "indices may be passed positionally or through *args"),
    ("t.q, t.kv, None, None, 512, meta, splits, t.sm_scale, False, True, t.indices, *rest",
     "indices may be passed positionally or through *args"),  # topk_length may be in *rest
    # the 11th is `indices` there, not the 12th the rule assumed before: dense, no site
    ("t.q, t.kv, None, None, 512, meta, splits, t.sm_scale, False, True", None),
])
def test_the_decode_rule_reads_indices_where_the_interface_puts_them(tmp_path, args, expected):
    got = sites([pfcc_repo(tmp_path, args)])
    assert [r for *_, r in got if expected and r.startswith(expected)] if expected else got == [], got


# -- star re-exports and src/ layouts --------------------------------------------------------------------------------
INTERFACE = "def flash_mla_sparse_fwd(q, kv, indices, sm_scale, d_v=512, attn_sink=None, topk_length=None):\n" \
            "    return flash_mla_cuda.sparse_prefill_fwd(q, kv, indices, sm_scale, d_v, attn_sink, topk_length)\n"


@pytest.mark.parametrize("init,interface_head,accepts", [
    ("from .flash_mla_interface import *\n", "", True),
    ("from flash_mla.flash_mla_interface import *\n", "__all__ = ['flash_mla_sparse_fwd']\n", True),
    ("from .outer import *\n", "", True),  # a star import of a star import
    # what the star import does not bind, or what cannot be read without running the module: not decided
    ("from .flash_mla_interface import *\n", "__all__ = ['get_mla_metadata']\n", False),
    ("from .flash_mla_interface import *\n", "__all__ = [n for n in dir() if n.startswith('flash')]\n", False),
    ("from .flash_mla_interface import *\n", "__all__ = ['flash_mla_sparse_fwd']\n__all__.append('x')\n", False),
])
def test_a_flash_mla_package_that_re_exports_its_interface_with_a_star_import(tmp_path, init, interface_head, accepts):
    write(tmp_path, {"pyproject.toml": "[project]\nname = 'engine'\n",
                     "flash_mla/__init__.py": init, "flash_mla/outer.py": "from .flash_mla_interface import *\n",
                     "flash_mla/flash_mla_interface.py": "import flash_mla_cuda\n" + interface_head + INTERFACE,
                     "engine/dsa_backend.py": EXAMPLE.replace("from sgl_kernel.flash_mla import", "from flash_mla import")})
    (tmp_path / ".git").mkdir()
    ((_, _, status, reason),) = sites([tmp_path / "engine" / "dsa_backend.py"])
    if accepts:
        assert status is Status.FIXABLE, reason
    else:
        assert status is Status.MANUAL and reason.startswith("kernel capability unknown"), reason


def test_flaggems_own_op_under_src_is_found_through_its_star_re_exports(tmp_path):
    write(tmp_path, {"pyproject.toml": "[project]\nname = 'flag_gems'\n",
                     "src/flag_gems/__init__.py": "from flag_gems.fused import *  # noqa: F403\n",
                     "src/flag_gems/fused/__init__.py": "from flag_gems.fused.flashmla_sparse import flash_mla_sparse_fwd\n\n"
                                                        "__all__ = ['flash_mla_sparse_fwd']\n",
                     "src/flag_gems/fused/flashmla_sparse.py": INTERFACE.replace("flash_mla_cuda.sparse_prefill_fwd",
                                                                                 "_launch"),
                     "tests/test_flash_mla_sparse_fwd.py": "import flag_gems\n\n\ndef test_sparse(q, kv, indices):\n"
                                                           "    return flag_gems.flash_mla_sparse_fwd(q, kv, indices, 0.5)\n"})
    (tmp_path / ".git").mkdir()
    ((_, _, status, reason),) = sites([tmp_path / "tests" / "test_flash_mla_sparse_fwd.py"])
    # as judged (tests/corpus: flagos-ai/FlagGems tests/test_flash_mla_sparse_fwd.py:383): manual, past the gate that
    # now reads the op (it was "kernel capability unknown"); the op hands on to its own launcher, whose body is not
    # read (round R: a wrapper's inner callee is proven, not trusted)
    assert status is Status.MANUAL and "hands on to `_launch`" in reason, reason
    # the op defined there is the project's own: held to the plain-forwarding rule, read where it is
    op = tmp_path / "src/flag_gems/fused/flashmla_sparse.py"
    op.write_text(op.read_text().replace("    return _launch(", "    q = q.flip(0)\n    return _launch("))
    ((_, _, status, reason),) = sites([tmp_path / "tests" / "test_flash_mla_sparse_fwd.py"])
    assert status is Status.MANUAL and "src/flag_gems/fused/flashmla_sparse.py:1" in reason, reason


def test_an_interface_in_the_tree_that_puts_other_parameters_where_q_and_indices_go(tmp_path):
    """The pass rule traces q as the first positional argument and the indices as the third: where the
    interface the call runs says otherwise, the call is refused, not traced on the wrong arguments."""
    write(tmp_path, {"pyproject.toml": "[project]\nname = 'engine'\n",
                     "flash_mla/__init__.py": "from .flash_mla_interface import *\n",
                     "flash_mla/flash_mla_interface.py": "import flash_mla_cuda\n" + INTERFACE.replace(
                         "(q, kv, indices, sm_scale,", "(q, indices, kv, sm_scale,"),
                     "engine/dsa_backend.py": EXAMPLE.replace("from sgl_kernel.flash_mla import", "from flash_mla import")
                     .replace("q=q_input,", "q_input,").replace("kv=kv_cache,", "kv_cache,")
                     .replace("indices=page_table_1.unsqueeze(1),", "page_table_1.unsqueeze(1),")})
    (tmp_path / ".git").mkdir()
    ((_, _, status, reason),) = sites([tmp_path / "engine" / "dsa_backend.py"])
    assert status is Status.MANUAL and "takes `kv` in place 3, where the rule reads `indices`" in reason, reason


# -- two copies of a backend side by side ---------------------------------------------------------------------------
COPY = """\
from dataclasses import dataclass

import torch
from sgl_kernel.flash_mla import flash_mla_sparse_fwd

from engine.dsa_utils import compute_dsa_seqlens, pad_dsa_cache_seqlens


@dataclass
class DSAMetadata:
    dsa_cache_seqlens_int32: torch.Tensor


class DSABackend:
    forward_metadata: DSAMetadata

    def init_forward_metadata(self, forward_batch):
        dsa_cache_seqlens_int32 = {first}
        dsa_cache_seqlens_int32 = pad_dsa_cache_seqlens(forward_batch, dsa_cache_seqlens_int32)
        self.forward_metadata = DSAMetadata(dsa_cache_seqlens_int32=dsa_cache_seqlens_int32)

    def forward(self, q, kv, topk_indices):
        metadata = self.forward_metadata
        return self._forward_flashmla_sparse(q, kv, topk_indices, 1.0)

    def _forward_flashmla_sparse(self, q_all, kv_cache, page_table_1, sm_scale):
        return flash_mla_sparse_fwd(q_all, kv_cache, page_table_1.unsqueeze(1), sm_scale)[0]
"""
CLIPPED = "compute_dsa_seqlens(forward_batch.seq_lens, dsa_index_topk=self.dsa_index_topk)"


def two_copies(root: Path, backup_first: str) -> Path:
    write(root, {"requirements.txt": "sglang-kernel==0.4.6\n",
                 "engine/dsa_utils.py": "def compute_dsa_seqlens(s, dsa_index_topk):\n    return s.clamp(max=dsa_index_topk)\n\n\n"
                                        "def pad_dsa_cache_seqlens(fb, s):\n    return s\n",
                 "engine/dsa_backend.py": COPY.format(first=CLIPPED),
                 "engine/dsa_backend_backup.py": COPY.format(first=backup_first)})
    (root / ".git").mkdir()
    return root / "engine"


def test_two_copies_of_a_backend_side_by_side_are_each_fixable(tmp_path):
    engine = two_copies(tmp_path, CLIPPED)
    got = sites([engine / "dsa_backend.py", engine / "dsa_backend_backup.py"])
    assert [(name, status) for name, _, status, _ in got] == [("dsa_backend.py", Status.FIXABLE),
                                                              ("dsa_backend_backup.py", Status.FIXABLE)], got


def test_a_copy_whose_field_is_not_clipped_before_the_padding_still_refuses_the_other(tmp_path):
    engine = two_copies(tmp_path, "forward_batch.seq_lens.to(torch.int32)")
    ((_, _, status, reason),) = sites([engine / "dsa_backend.py"])
    assert status is Status.MANUAL and "dsa_backend_backup.py:20" in reason and "not provably" in reason, reason


# -- flytiger-eco/sglang-for-sail: audit picks each file's rules by its own project --------------------------------
HIP = """\
from sgl_kernel.flash_mla import flash_mla_with_kvcache


def forward_decode(q, k_cache, block_table, cache_seqlens, meta, splits, topk_indices):
    return flash_mla_with_kvcache(q, k_cache, block_table, cache_seqlens, 512, meta, splits, indices=topk_indices)
"""


@pytest.mark.parametrize("rev", [False, True])
def test_sglang_for_sail_audit_from_the_top_reads_each_file_by_its_own_projects_rules(tmp_path, rev):
    write(tmp_path, {"python/pyproject.toml": "[project]\nname = 'sglang'\n\n[tool.topk-migrate]\n"
                                              "enable = ['decode-topk-length']\n",
                     "python/sglang/srt/layers/attention/hip_flash_mla.py": HIP,
                     # another project of the same repository that does not enable the rule: not read for it
                     "sgl-kernel/pyproject.toml": "[project]\nname = 'sgl-kernel'\n",
                     "sgl-kernel/bench/decode.py": HIP})
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-qm", "x")
    result = audit([str(tmp_path)], jobs=2, rev="HEAD" if rev else None)
    assert [(s.path, s.line, s.rule) for s in result.sites] == [
        ("python/sglang/srt/layers/attention/hip_flash_mla.py", 5, "decode-topk-length")], result.sites
    assert result.summary["parsed"] == 1, result.summary
    # as `audit python`, `audit FILE` and `check .` list it
    assert [s.line for s in audit([str(tmp_path / "python")], jobs=1).sites] == [5]
    assert [line for name, line, *_ in sites([tmp_path]) if name == "hip_flash_mla.py"] == [5]
