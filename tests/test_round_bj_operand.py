"""Red-team round BJ (bj4): the clip's operand written in place under another name before the clip, so the clip does
not read these rows' lengths: a local alias, a tuple's or a loop's or a comprehension's target, `:=`, a foreach op's
list (displayed or gathered by a helper), a dict's item, a record's attribute, a literal `getattr`, the tensor kept on
self and advanced by another method (field_meaning._Sharing, FieldMeaning._operand_written, _kept_operand_written)."""
import pytest

from test_soundness import _files_site
from topk_migrate.model import Status

_SRC = '''"""Fork DSA backend; metadata.dsa_cache_seqlens_int32 holds seqlens clipped to topk."""
import types
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

    def init_forward_metadata(self, forward_batch):
PLAN
        self.forward_metadata = DSAMetadata(
            dsa_cache_seqlens_int32=torch.clamp(forward_batch.seq_lens, max=self.dsa_index_topk).to(torch.int32))

    def forward(self, q, kv, indices, scale):
        metadata = self.forward_metadata
        out, _, _ = flash_mla_sparse_fwd(q=q, kv=kv, indices=indices, sm_scale=scale)
        return out

    def _length_tensors(self, fb):
        return [fb.seq_lens, fb.positions]

    def stage(self, forward_batch):
        self._lens = forward_batch.seq_lens
        self._pos = forward_batch.positions

    def advance(self, n):
        KEPT += n
'''


@pytest.mark.parametrize("plan, kept, fixable", [
    ("lens = forward_batch.seq_lens\nlens += 2", "self._pos", False),
    ("torch._foreach_add_([forward_batch.seq_lens, forward_batch.positions], 2)", "self._pos", False),
    ("torch._foreach_add_(self._length_tensors(forward_batch), 2)", "self._pos", False),
    ("for lens in (forward_batch.seq_lens, forward_batch.positions):\n    lens.add_(2)", "self._pos", False),
    ("[t.add_(2) for t in (forward_batch.seq_lens, forward_batch.positions)]", "self._pos", False),
    ("lens, pos = forward_batch.seq_lens, forward_batch.positions\nlens += 2", "self._pos", False),
    ("self.stage(forward_batch)\nself.advance(2)", "self._lens", False),
    ('lengths = {"seq_lens": forward_batch.seq_lens}\nfor key in lengths:\n    lengths[key] += 2', "self._pos", False),
    ("spec = types.SimpleNamespace(lens=forward_batch.seq_lens, steps=2)\nspec.lens += spec.steps", "self._pos", False),
    ('getattr(forward_batch, "seq_lens").add_(2)', "self._pos", False),
    ("if (lens := forward_batch.seq_lens).numel():\n    lens += 2", "self._pos", False),
    ("b = forward_batch\nb.seq_lens.view(-1)[0] = 1", "self._pos", False),
    # safe twins: other tensors written, aliases read only, copies written, the kept alias never written
    ("torch._foreach_add_([forward_batch.positions, forward_batch.out_cache_loc], 2)", "self._pos", True),
    ("for t in (forward_batch.positions, forward_batch.out_cache_loc):\n    t.add_(2)", "self._pos", True),
    ("lens, pos = forward_batch.seq_lens, forward_batch.positions\nassert lens.shape == pos.shape", "self._pos", True),
    ("lens = forward_batch.seq_lens.clone()\nlens += 2", "self._pos", True),
    ("spec = types.SimpleNamespace(lens=forward_batch.seq_lens, steps=2)\nspec.steps += 1", "self._pos", True),
    ("self.stage(forward_batch)\nself.advance(2)", "self._pos", True),
    ("pass", "self._pos", True),
])
def test_round_bj_the_clips_operand_written_under_another_name(tmp_path, plan, kept, fixable):
    body = "\n".join("        " + line for line in plan.splitlines())
    src = _SRC.replace("PLAN", body).replace("KEPT", kept)
    site = _files_site(tmp_path, {"requirements.txt": "sglang-kernel==0.4.6\n"}, src)
    assert (site.status is Status.FIXABLE) is fixable, site.reason
    if not fixable:
        assert "in place" in site.reason, site.reason
