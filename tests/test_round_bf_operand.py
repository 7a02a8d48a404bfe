"""Red-team round BF (bf4, and round BE's be4): the clip's operand read off a name that may hold another object than
the planner's batch: the batch parameter rebound in its def (`forward_batch = forward_batch._replace(...)`, a staged
draft or a cached view preferred), a local or a helper's parameter the backend's code binds or hands a choice or an
attribute of the batch (`forward_batch.spec_info or forward_batch`) (field_meaning._another_object, _rebound_param)."""
import pytest

from test_soundness import _files_site
from topk_migrate.model import Status

_SRC = '''"""Fork DSA backend; metadata.dsa_cache_seqlens_int32 holds seqlens clipped to topk."""
from dataclasses import dataclass

import torch
from sgl_kernel.flash_mla import flash_mla_sparse_fwd


@dataclass
class DSAMetadata:
    dsa_cache_seqlens_int32: torch.Tensor


class Backend:
    def __init__(self, hf_config):
        self.dsa_index_topk = hf_config.index_topk
        self.forward_metadata = None
        self._views = {}
        self.num_draft = 1

    def init_forward_metadata(self, forward_batch, draft_batch=None):
        PLAN
HELPER
    def forward(self, q, kv, indices, scale):
        metadata = self.forward_metadata
        return flash_mla_sparse_fwd(q=q, kv=kv, indices=indices, sm_scale=scale)[0]
'''
_HELPER = '''
    def _fill_metadata(self, fb):
        self.forward_metadata = DSAMetadata(
            dsa_cache_seqlens_int32=torch.clamp(fb.seq_lens, max=self.dsa_index_topk).to(torch.int32))
'''
_CLIP = ("self.forward_metadata = DSAMetadata(\n            dsa_cache_seqlens_int32=torch.clamp(OPERAND.seq_lens, "
         "max=self.dsa_index_topk).to(torch.int32))")


def _site(tmp_path, *plan):
    body = "\n        ".join(plan)
    src = _SRC.replace("PLAN", body).replace("HELPER", _HELPER if "_fill_metadata" in body else "")
    return _files_site(tmp_path, {"requirements.txt": "sglang-kernel==0.4.6\n"}, src)


def _clip(operand):
    return _CLIP.replace("OPERAND", operand)


@pytest.mark.parametrize("plan, fixable", [
    # round BF (bf4): the batch parameter rebound before the clip reads it: the rebinding's object is clipped
    (("forward_batch = forward_batch._replace(seq_lens=forward_batch.seq_lens + self.num_draft)",
      _clip("forward_batch")), False),
    (("forward_batch = getattr(self, '_draft_batch', None) or forward_batch", _clip("forward_batch")), False),
    (("forward_batch = self._views.pop(id(forward_batch), forward_batch)", _clip("forward_batch")), False),
    (("for forward_batch in (forward_batch, forward_batch.spec_info):", "    pass", _clip("forward_batch")), False),
    (("if (forward_batch := forward_batch.spec_info or forward_batch) is None:", "    pass", _clip("forward_batch")), False),
    # round BE (be4): a local the backend binds to a choice of the batch or an object it holds
    (("fb = forward_batch.spec_info or forward_batch", _clip("fb")), False),
    (("fb = forward_batch.spec_info if forward_batch.spec_info is not None else forward_batch", _clip("fb")), False),
    (("for fb in (forward_batch, forward_batch.spec_info):", "    pass", _clip("fb")), False),
    (("match forward_batch:", "    case object(spec_info=fb) if fb is not None:", "        pass", "    case _:",
      "        fb = forward_batch", _clip("fb")), False),
    # a helper's parameter: each call in the backend must hand it the planner's own batch itself
    (("self._fill_metadata(forward_batch.spec_info if forward_batch.spec_info is not None else forward_batch)",), False),
    (("self._fill_metadata(forward_batch.spec_info or forward_batch)",), False),
    (("fb = forward_batch.spec_info or forward_batch", "self._fill_metadata(fb)"), False),
    (("forward_batch = forward_batch.spec_info or forward_batch", "self._fill_metadata(forward_batch)"), False),
    # safe twins: the batch parameter itself, a local bound to it, a helper handed it, the
    # planner's other batch parameter staged first (round BC's drafts), another parameter rebound
    ((_clip("forward_batch"),), True),
    (("fb = forward_batch", _clip("fb")), True),
    (("self._fill_metadata(forward_batch)",), True),
    (("if draft_batch is not None:", "    self._fill_metadata(draft_batch)", "self._fill_metadata(forward_batch)"), True),
    (("draft_batch = draft_batch", _clip("forward_batch")), True),
])
def test_round_bf_the_clips_operand_is_the_planners_batch_itself(tmp_path, plan, fixable):
    site = _site(tmp_path, *plan)
    assert (site.status is Status.FIXABLE) is fixable, site.reason
    if not fixable:
        assert "another object than the planner's batch" in site.reason, site.reason
