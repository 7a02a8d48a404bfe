"""Every import spelling of the kernel is found; similar-named kernels never are."""
import pytest

from helpers import KERNEL
from topk_migrate.api import migrate_source

SPELLINGS = {
    "module-level": ("from sgl_kernel.flash_mla import flash_mla_sparse_fwd\n"
                     "def f(q, kv, i):\n    return flash_mla_sparse_fwd(q, kv, i, 1.0)\n",
                     "sgl_kernel.flash_mla.flash_mla_sparse_fwd"),
    "function-local": ("def f(q, kv, i):\n    from sgl_kernel.flash_mla import flash_mla_sparse_fwd\n"
                       "    return flash_mla_sparse_fwd(q, kv, i, 1.0)\n",
                       "sgl_kernel.flash_mla.flash_mla_sparse_fwd"),
    "parenthesised": ("from sgl_kernel.flash_mla import (\n    flash_mla_with_kvcache,\n    flash_mla_sparse_fwd,\n)\n"
                      "flash_mla_sparse_fwd(q, kv, i, 1.0)\n", "sgl_kernel.flash_mla.flash_mla_sparse_fwd"),
    "try/except None fallback": ("try:\n    from sgl_kernel.flash_mla import flash_mla_sparse_fwd\n"
                                 "except ImportError:\n    flash_mla_sparse_fwd = None\n"
                                 "flash_mla_sparse_fwd(q, kv, i, 1.0)\n", "sgl_kernel.flash_mla.flash_mla_sparse_fwd"),
    "import as": ("import sgl_kernel.flash_mla as fmla\nfmla.flash_mla_sparse_fwd(q, kv, i, 1.0)\n",
                  "sgl_kernel.flash_mla.flash_mla_sparse_fwd"),
    "from import as": ("from sgl_kernel.flash_mla import flash_mla_sparse_fwd as sparse\nsparse(q, kv, i, 1.0)\n",
                       "sgl_kernel.flash_mla.flash_mla_sparse_fwd"),
    "dotted import": ("import sgl_kernel.flash_mla\nsgl_kernel.flash_mla.flash_mla_sparse_fwd(q, kv, i, 1.0)\n",
                      "sgl_kernel.flash_mla.flash_mla_sparse_fwd"),
    "module attribute": ("from sgl_kernel import flash_mla\nflash_mla.flash_mla_sparse_fwd(q, kv, i, 1.0)\n",
                         "sgl_kernel.flash_mla.flash_mla_sparse_fwd"),
    "self attribute": ("class B:\n    def f(self, q, kv, i):\n        return self.flash_mla.flash_mla_sparse_fwd(q, kv, i, 1.0)\n",
                       "self.flash_mla.flash_mla_sparse_fwd"),
    "external flash_mla": ("from flash_mla import flash_mla_sparse_fwd\nflash_mla_sparse_fwd(q, kv, i, 1.0)\n",
                           "flash_mla.flash_mla_sparse_fwd"),
    "vllm wrapper": ("from vllm.attention.ops.flashmla import flash_mla_sparse_prefill\n"
                     "flash_mla_sparse_prefill(q, kv, i, 1.0)\n", "vllm.attention.ops.flashmla.flash_mla_sparse_prefill"),
    "op-level": ("import torch\ntorch.ops._flashmla_C.sparse_prefill_fwd(q, kv, i, 1.0, 512)\n",
                 "torch.ops._flashmla_C.sparse_prefill_fwd"),
    "extension module op": ("import vllm._flashmla_C\nflash_mla_cuda.sparse_prefill_fwd(q, kv, i, 1.0, 512, None, lens)\n",
                            "flash_mla_cuda.sparse_prefill_fwd"),
    "op-level default overload": ("import torch\nops = 1\ntorch.ops.sgl_kernel.sparse_prefill_fwd.default(q, kv, i, 1.0, 512)\n",
                                  "torch.ops.sgl_kernel.sparse_prefill_fwd.default"),
}


@pytest.mark.parametrize("name", SPELLINGS)
def test_every_spelling_is_one_site(name, tmp_path):
    src, callee = SPELLINGS[name]
    sites = migrate_source(src, str(tmp_path / "m.py"), kernel=KERNEL).sites
    assert [s.callee for s in sites] == [callee]


@pytest.mark.parametrize("src", [
    "from sgl_kernel.flash_mla import flash_mla_sparse_fwd\n",  # an import is not a call
    "def flash_mla_sparse_fwd(q, kv, indices, sm_scale):\n    return q\n",  # a def is not a call
    "sparse_mla_q8kv8_prefill_fwd(q, kv, i)\nsparse_mla_prefill(q, kv, i)\ntriton_sparse_mla_fwd(q, kv, i)\n",
    "from sgl_kernel.flash_mla import flash_mla_with_kvcache\nflash_mla_with_kvcache(q, kv)\n",
    "x = 'flash_mla_sparse_fwd(q, kv, i, 1.0)'\n",  # a string is not a call
])
def test_lookalikes_are_never_sites(src, tmp_path):
    m = migrate_source(src, str(tmp_path / "m.py"), kernel=KERNEL)
    assert m.sites == [] and m.new_source == src


def test_positions_are_one_based(tmp_path):
    src = "import sgl_kernel\n\nx = sgl_kernel.flash_mla_sparse_fwd(q, kv, i, 1.0)\n"
    (site,) = migrate_source(src, str(tmp_path / "m.py"), kernel=KERNEL).sites
    assert (site.line, site.column) == (3, 5)
