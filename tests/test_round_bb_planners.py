"""Red-team round BB (bb1): a record made once in `__init__` and refreshed in place by each planner, which then calls
a method writing the same record for another batch (itself with the draft's batch, another mode's planner): the
refresh must be the last write of the field on every path (metadata_in_scope._rewritten_after_refresh)."""
import pytest

from test_soundness import _files_site
from topk_migrate.model import Status

_CLIP = "forward_batch.seq_lens.clamp(max=self.dsa_index_topk).to(torch.int32)"
_STATIC = '''"""Fork DSA backend; metadata.dsa_cache_seqlens_int32 holds seqlens clipped to topk."""
from dataclasses import dataclass

import torch
from sgl_kernel.flash_mla import flash_mla_sparse_fwd


@dataclass
class DSAMetadata:
    dsa_cache_seqlens_int32: torch.Tensor
    page_table_1: torch.Tensor


class Backend:
    def __init__(self, dsa_index_topk, warmup_batch, max_bs=8):
        self.dsa_index_topk = dsa_index_topk
        self.forward_metadata = DSAMetadata(
            dsa_cache_seqlens_int32=warmup_batch.seq_lens.clamp(max=self.dsa_index_topk).to(torch.int32),
            page_table_1=torch.zeros(max_bs, 64, dtype=torch.int32))
'''
_SRC = _STATIC + f'''
    def init_forward_metadata(self, forward_batch):
        self.forward_metadata.dsa_cache_seqlens_int32.copy_({_CLIP})
        self.forward_metadata.page_table_1.copy_(forward_batch.page_table)
{{after}}
    def init_forward_metadata_draft_extend(self, forward_batch):
        self.forward_metadata.dsa_cache_seqlens_int32.copy_({_CLIP})
        self.forward_metadata.page_table_1.copy_(forward_batch.page_table)

    def _log_plan(self, forward_batch):
        self.planned = forward_batch.batch_size

    def _pre_plan(self, forward_batch):
        self.init_forward_metadata_draft_extend(forward_batch.draft_extend_batch)

    def forward(self, q, kv, topk_indices, sm_scale):
        metadata = self.forward_metadata
        return flash_mla_sparse_fwd(q=q, kv=kv, indices=topk_indices, sm_scale=sm_scale)[0]
'''


def _after(*lines: str) -> str:
    return "".join(f"        {line}\n" for line in lines)


@pytest.mark.parametrize("after, fixable", [
    ("", True),
    # EAGLE with one backend for target and draft: the planner plans the draft's batch into the record after its own
    (_after("if getattr(forward_batch, 'draft_batch', None) is not None:",
            "    self.init_forward_metadata(forward_batch.draft_batch)"), False),
    # the verify planner then plans the draft-extend step, through that mode's planner
    (_after("if forward_batch.draft_extend_batch is not None:",
            "    self.init_forward_metadata_draft_extend(forward_batch.draft_extend_batch)"), False),
    # through a helper handed this batch, which plans the other batch in turn
    (_after("self._pre_plan(forward_batch)"), False),
    # a method of self the module does not define (a base of another file) may write it, with whatever it is handed
    # or reads off it (default-deny)
    (_after("self._plan_draft(forward_batch.draft_batch)"), False),
    (_after("self._plan_draft(forward_batch)"), False),
    # twins: the other mode's planner with this call's own batch, a helper writing no length
    (_after("self.init_forward_metadata_draft_extend(forward_batch)"), True),
    (_after("self._log_plan(forward_batch.draft_batch)"), True),
])
def test_round_bb_the_refresh_is_the_last_write_of_the_field(tmp_path, after, fixable):
    src = _SRC.replace("{after}", after)
    site = _files_site(tmp_path, {"requirements.txt": "sglang-kernel==0.4.6\n"}, src)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


_REPLAY = f'''"""Fork DSA backend; metadata.dsa_cache_seqlens_int32 holds seqlens clipped to topk."""
from dataclasses import dataclass

import torch
from sgl_kernel.flash_mla import flash_mla_sparse_fwd


@dataclass
class DSAMetadata:
    dsa_cache_seqlens_int32: torch.Tensor
    page_table_1: torch.Tensor


class Backend:
    def __init__(self, dsa_index_topk):
        self.dsa_index_topk = dsa_index_topk
        self.forward_metadata = None
        self._graph = {{}}

    def init_forward_metadata(self, forward_batch):
        self.forward_metadata = DSAMetadata(dsa_cache_seqlens_int32={_CLIP}, page_table_1=forward_batch.page_table)

    def init_forward_metadata_capture_cuda_graph(self, bs, forward_batch):
        self._graph[bs] = DSAMetadata(dsa_cache_seqlens_int32={_CLIP}, page_table_1=forward_batch.page_table)
        self.forward_metadata = self._graph[bs]

    def init_forward_metadata_replay_cuda_graph(self, bs, forward_batch):
        md = self._graph[bs]
        md.dsa_cache_seqlens_int32.copy_({_CLIP})
        md.page_table_1.copy_(forward_batch.page_table)
        self.forward_metadata = md
{{after}}
    def _replay_draft(self, bs, forward_batch):
        md = self._graph[bs]
        md.dsa_cache_seqlens_int32.copy_({_CLIP})
        self.forward_metadata = md

    def forward(self, q, kv, topk_indices, sm_scale):
        metadata = self.forward_metadata
        return flash_mla_sparse_fwd(q=q, kv=kv, indices=topk_indices, sm_scale=sm_scale)[0]
'''


@pytest.mark.parametrize("after, fixable", [
    ("", True),
    (_after("self._replay_draft(bs, forward_batch)"), True),
    # the replay hook replays the draft's batch into the same graph record after its own refresh
    (_after("self._replay_draft(bs, forward_batch.draft_batch)"), False),
    (_after("self.init_forward_metadata_replay_cuda_graph(bs, forward_batch.draft_batch)"), False),
])
def test_round_bb_a_replayed_record_is_not_replanned_for_another_batch(tmp_path, after, fixable):
    site = _files_site(tmp_path, {"requirements.txt": "sglang-kernel==0.4.6\n"}, _REPLAY.replace("{after}", after))
    assert (site.status is Status.FIXABLE) is fixable, site.reason
