"""Red-team round BB (bb1): a double buffer swapped by one tuple assignment (`self.md, self._spare = self._spare,
self.md`): the targets bind after the value is read, so the refresh of `self._spare` after it writes the retired
record (and reading the swap's cycle of attributes once, not forever: it raised RecursionError)."""
import pytest

from test_callers import verdict

_BACKEND = '''"""Fork backend; metadata.dsa_cache_seqlens_int32 holds seqlens clipped to topk."""
from dataclasses import dataclass

import torch
from sgl_kernel.flash_mla import flash_mla_sparse_fwd


@dataclass
class DSAMetadata:
    dsa_cache_seqlens_int32: torch.Tensor


class Backend:
    def __init__(self, dsa_index_topk, warm):
        self.dsa_index_topk = dsa_index_topk
        self.forward_metadata = DSAMetadata(
            dsa_cache_seqlens_int32=warm.seq_lens.clamp(max=self.dsa_index_topk).to(torch.int32))
        self._spare = DSAMetadata(
            dsa_cache_seqlens_int32=warm.seq_lens.clamp(max=self.dsa_index_topk).to(torch.int32))

    def init_forward_metadata(self, forward_batch):
        clip = forward_batch.seq_lens.clamp(max=self.dsa_index_topk).to(torch.int32)
{plan}
    def forward(self, q, kv, indices, scale):
        metadata = self.forward_metadata
        return flash_mla_sparse_fwd(q, kv, indices, scale)[0]
'''


def _lines(*lines: str) -> str:
    return "".join(f"        {line}\n" for line in lines)


@pytest.mark.parametrize("plan, fixable", [
    (_lines("self.forward_metadata, self._spare = self._spare, self.forward_metadata",
            "self._spare.dsa_cache_seqlens_int32.copy_(clip)"), False),
    # the record the holder keeps, refreshed in place (no swap)
    (_lines("self.forward_metadata.dsa_cache_seqlens_int32.copy_(clip)"), True),
])
def test_a_swapped_double_buffer_refreshes_the_record_the_holder_gets(tmp_path, plan, fixable):
    site = verdict(tmp_path, _BACKEND.format(plan=plan))
    assert (site.status.value == "fixable") is fixable, site.reason
