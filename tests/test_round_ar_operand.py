"""Round AR: the clip's operand grown while its batch is made (a constructor's default-deny), and a module read as its
package's attribute (`import pkg.mod as m`, `from pkg import mod`) that the package's `__init__` binds otherwise."""
import pytest

from helpers import KERNEL
from test_soundness import _CONFIG_BACKEND
from topk_migrate import kernels
from topk_migrate.api import migrate_source
from topk_migrate.model import Status

_KIMPORT = "from sgl_kernel.flash_mla import flash_mla_sparse_fwd\n"


def _backend(imports=_KIMPORT, width="hf_config.index_topk", kernel="flash_mla_sparse_fwd"):
    """test_soundness's config backend, its kernel import, width and kernel's spelling given."""
    return _CONFIG_BACKEND.replace(_KIMPORT, imports).replace("= hf_config.index_topk", f"= {width}").replace(
        "return flash_mla_sparse_fwd(", f"return {kernel}(")


def _files_site(tmp_path, files: dict, src: str):
    """The one site of backend.py beside the other files of the fork (relative path -> text)."""
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    (tmp_path / "backend.py").write_text(src)
    (site,) = migrate_source(src, str(tmp_path / "backend.py"), kernel=KERNEL).sites
    return site


_INIT = "import torch\n\n\nclass StepBatch:\n    def __init__(self, seq_lens, num_draft_tokens=0):\n"
_POST = ("from dataclasses import dataclass\n\nimport torch\n\n\n@dataclass\nclass StepBatch:\n"
         "    seq_lens: torch.Tensor\n    num_draft_tokens: int = 0\n\n    def __post_init__(self):\n")
_HELPER = "def _count(lens, n):\n    torch.add(lens, n, out=lens)\n\n\n"


@pytest.mark.parametrize("batch, fixable", [
    # the stored object aliased and grown, grown before the store, grown through a view or `.data`, handed to a helper
    (_INIT + "        self.seq_lens = seq_lens\n        self.kv_lens = seq_lens\n        self.kv_lens += num_draft_tokens\n",
     False),
    (_INIT + "        if num_draft_tokens:\n            seq_lens += num_draft_tokens\n        self.seq_lens = seq_lens\n",
     False),
    (_POST + "        self.seq_lens.view(-1).add_(self.num_draft_tokens)\n", False),
    (_POST + "        self.seq_lens.data.add_(self.num_draft_tokens)\n", False),
    (_INIT.replace("import torch\n\n\n", "import torch\n\n\n" + _HELPER)
     + "        self.seq_lens = seq_lens\n        _count(self.seq_lens, num_draft_tokens)\n", False),
    (_INIT + "        lens = seq_lens\n        self.seq_lens = seq_lens\n", False),
    # the plain store, inert reads (a shape, a dtype, `len()`, `is None`) and a copy under another name
    (_INIT + "        self.seq_lens = seq_lens\n", True),
    (_INIT + "        assert seq_lens is not None and seq_lens.dtype == torch.int64\n        self.seq_lens = seq_lens\n"
     "        self.bs = len(self.seq_lens)\n        self.rows = self.seq_lens.shape[0]\n"
     "        self.kv_lens = seq_lens.clone()\n", True),
    (_POST + "        self.seq_lens = self.seq_lens.to(torch.int32)\n", True)])
def test_round_ar_a_constructor_using_the_stored_lengths_serves_them(tmp_path, batch, fixable):
    site = _files_site(tmp_path, {"fork_batch.py": batch}, _backend())
    assert (site.status is Status.FIXABLE) is fixable, site.reason
    assert fixable or "serves `seq_lens` by code" in site.reason


_OPS_NEW = "from sgl_kernel.flash_mla import flash_mla_sparse_fwd  # noqa: F401\n"
_OPS_OLD = "from flash_mla import flash_mla_sparse_fwd  # noqa: F401\n"
_COMPAT = "from . import attention as _next  # noqa: F401\nfrom . import attention_v03 as attention  # noqa: F401\n"


@pytest.mark.parametrize("imports, init, fixable", [
    ("import fork_ops.attention as attn\n", _COMPAT, False),
    ("from fork_ops import attention as attn\n", _COMPAT, False),
    ("import fork_ops.attention as attn\n", "attention = None\n", False),
    ("import fork_ops.attention as attn\n", "from . import attention  # noqa: F401\n", True),
    ("import fork_ops.attention as attn\n", '"""The fork\'s ops."""\n', True)])
def test_round_ar_a_kernel_module_read_as_its_packages_attribute(tmp_path, imports, init, fixable):
    files = {"fork_ops/__init__.py": init, "fork_ops/attention.py": _OPS_NEW, "fork_ops/attention_v03.py": _OPS_OLD}
    site = _files_site(tmp_path, files, _backend(imports=imports, kernel="attn.flash_mla_sparse_fwd"))
    assert (site.status is Status.FIXABLE) is fixable, site.reason


_GETTERS = "def get_index_topk(cfg):\n    return cfg.index_topk\n"
_LOWMEM = "def get_index_topk(cfg):\n    return min(cfg.index_topk, 8)\n"
_SWAP = ("import os\n\nfrom . import getters  # noqa: F401\n\nif os.environ.get('LOW') == '1':\n"
         "    from . import getters_lowmem as getters  # noqa: F811\n")


@pytest.mark.parametrize("imports, init, fixable", [
    ("import fork_config.getters as cfg_getters\n", _SWAP, False),
    ("from fork_config import getters as cfg_getters\n", _SWAP, False),
    ("import fork_config.getters as cfg_getters\n", "def getters():\n    pass\n", False),
    ("import fork_config.getters as cfg_getters\n", '"""The fork\'s config."""\n', True),
    ("from fork_config import getters as cfg_getters\n", "from . import getters  # noqa: F401\n", True)])
def test_round_ar_a_width_getter_module_read_as_its_packages_attribute(tmp_path, imports, init, fixable):
    files = {"fork_config/__init__.py": init, "fork_config/getters.py": _GETTERS,
             "fork_config/getters_lowmem.py": _LOWMEM}
    site = _files_site(tmp_path, files, _backend(imports=_KIMPORT + imports,
                                                 width="cfg_getters.get_index_topk(hf_config)"))
    assert (site.status is Status.FIXABLE) is fixable, site.reason


def test_round_ar_every_package_on_the_dotted_path_is_read(tmp_path):
    """`import a.b.c as m` reads `a`'s attribute `b`, then `b`'s `c`: an outer package rebinding `b` is a doubt."""
    (tmp_path / "fork_ops" / "v2").mkdir(parents=True)
    (tmp_path / "fork_ops" / "v2" / "__init__.py").write_text("")
    (tmp_path / "fork_ops" / "v2" / "attention.py").write_text(_OPS_NEW)
    (tmp_path / "fork_ops" / "v1.py").write_text(_OPS_OLD)
    (tmp_path / "fork_ops" / "__init__.py").write_text("from . import v1 as v2  # noqa: F401\n")
    (tmp_path / "backend.py").write_text("import fork_ops.v2.attention as attn\n")
    doubt = kernels.package_attribute_doubt(str(tmp_path / "backend.py"), "fork_ops.v2.attention")
    assert doubt and "__init__.py:1" in doubt and "`v2`" in doubt
    (tmp_path / "fork_ops" / "__init__.py").write_text("")
    assert kernels.package_attribute_doubt(str(tmp_path / "backend.py"), "fork_ops.v2.attention") is None
