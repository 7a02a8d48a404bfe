"""Round BH (bh2): a runner packing one step's tensors in a record and reading them back is traced through the
record's making (callers._record_fields) where the class stores each argument as handed: a `typing.NamedTuple`
class (callers._named_tuple_fields) and a dataclass whose extra field is a `dataclasses.field(...)` of a literal
default and display settings (callers._plain_field). Rows reordered into the record, fields made otherwise, or a
class that may serve the read differently still refuse."""
import pytest

from test_soundness import _files_site
from topk_migrate.model import Status

_BACKEND = '''"""Fork DSA backend; metadata.dsa_cache_seqlens_int32 holds seqlens clipped to topk."""
from sgl_kernel.flash_mla import flash_mla_sparse_fwd


class Backend:
    def __init__(self, metadata):
        self.forward_metadata = metadata

    def forward(self, q, kv, topk_indices, scale):
        metadata = self.forward_metadata
        return self._forward_flashmla_sparse(q, kv, topk_indices, scale)

    def _forward_flashmla_sparse(self, q_all, kv_cache, indices, sm_scale):
        out, _, _ = flash_mla_sparse_fwd(q=q_all, kv=kv_cache, indices=indices, sm_scale=sm_scale)
        return out
'''

# the runner packing one step's tensors in a record `Step` and reading them back (@ARGS@: what it hands `Step`)
_LAYER_RUNNER = '''
class LayerRunner:
    def __init__(self, backend):
        self.backend = backend

    def attend(self, step):
        return self.backend.forward(step.q, step.kv, step.indices, step.scale)


def run(runner, q, kv, indices, scale):
    return runner.attend(Step(@ARGS@))
'''
_RUNNER = '''@IMPORTS@
import torch


@DECL@
    q: torch.Tensor
    kv: torch.Tensor
    indices: torch.Tensor
    scale: float
@EXTRA@
''' + _LAYER_RUNNER

_NT = ("from typing import NamedTuple", "class Step(NamedTuple):")
_DC = ("from dataclasses import dataclass, field\nfrom typing import Optional", "@dataclass\nclass Step:")
_DRAFT = "    draft_indices: Optional[torch.Tensor] = field(default=None, repr=False)\n"
_IN_ORDER = "q, kv, indices, scale"


def _site(tmp_path, decl, extra="", args=_IN_ORDER):
    runner = _RUNNER.replace("@IMPORTS@", decl[0]).replace("@DECL@", decl[1]).replace("@EXTRA@", extra) \
        .replace("@ARGS@", args)
    return _files_site(tmp_path, {"requirements.txt": "sglang-kernel==0.4.6\n", "runner.py": runner}, _BACKEND)


@pytest.mark.parametrize("decl, extra", [
    (_NT, ""),  # s_namedtuple_step_record
    (_NT, "    draft: int = 0\n\n    def rows(self):\n        return self.q.shape[0]\n"),  # a default, a method
    (_DC, _DRAFT),  # s_dataclass_step_record_field_default
])
def test_round_bh_a_record_storing_each_argument_as_handed_is_traced(tmp_path, decl, extra):
    site = _site(tmp_path, decl, extra)
    assert site.status is Status.FIXABLE, site.reason


@pytest.mark.parametrize("decl, extra, args", [
    (_NT, "", "q, kv, indices.flip(0), scale"),  # rows reordered into the record
    (_NT, "", "q, kv, indices[order], scale"),  # rows gathered into the record (a free name: not proven)
    (_NT, "\n    def __getattr__(self, name):\n        return None\n", _IN_ORDER),  # a read hook of its own
    (_NT, "    q: torch.Tensor = None\n", _IN_ORDER),  # a field declared twice
    (("from typing import NamedTuple as Base", "class Step(Base):"), "\n    @property\n    def q(self):\n"
     "        return self.kv\n", _IN_ORDER),  # a property named as a field
    (("import typing\nclass NamedTuple:\n    pass", "class Step(NamedTuple):"), "", _IN_ORDER),  # not typing's
    (_DC, "    draft_indices: Optional[torch.Tensor] = field(default_factory=list, init=False)\n", _IN_ORDER),
    (_DC, "    draft_indices: Optional[torch.Tensor] = field(default=None, kw_only=True)\n", _IN_ORDER),
    (("from dataclasses import dataclass\nfrom typing import Optional\nfield = lambda **k: None",
      "@dataclass\nclass Step:"), _DRAFT, _IN_ORDER),  # `field` not dataclasses'
])
def test_round_bh_a_record_made_otherwise_refuses(tmp_path, decl, extra, args):
    site = _site(tmp_path, decl, extra, args)
    assert site.status is Status.MANUAL, site.reason
