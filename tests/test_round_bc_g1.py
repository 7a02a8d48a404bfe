"""Red-team round BC (bc1, fix G1): a record made once in `__init__` and refreshed in place by each planner. The
refresh must be the last write of the field, of the planner's own batch: a call after it not spelled on self (a
closure, a hoisted bound method) is read as a self-call is, a direct write after it may read nothing the refresh does
not (a draft's batch), and a refreshing helper must itself be handed the planner's own batch
(metadata_in_scope._runs_hidden, _other_write_after, _refresh_handed_other, _writes_from_local)."""
import pytest

from test_round_bb_planners import _CLIP, _STATIC
from test_soundness import _files_site
from topk_migrate.model import Status

_SRC = _STATIC + '''
    def init_forward_metadata(self, forward_batch, draft_batch=None):
{eager}
    def init_forward_metadata_replay_cuda_graph(self, bs, forward_batch):
{replay}
    def _load_batch(self, batch):
        self.forward_metadata.dsa_cache_seqlens_int32.copy_(batch.seq_lens.clamp(max=self.dsa_index_topk).to(torch.int32))
        self.forward_metadata.page_table_1.copy_(batch.page_table)

    def _stage_draft(self, forward_batch):
        draft = forward_batch.draft_batch
        self.forward_metadata.dsa_cache_seqlens_int32.copy_(draft.seq_lens.clamp(max=self.dsa_index_topk).to(torch.int32))

    def forward(self, q, kv, topk_indices, sm_scale):
        metadata = self.forward_metadata
        return flash_mla_sparse_fwd(q=q, kv=kv, indices=topk_indices, sm_scale=sm_scale)[0]
'''


def _body(*lines: str) -> str:
    return "".join(f"        {line}\n" for line in lines)


_REFRESH = (f"self.forward_metadata.dsa_cache_seqlens_int32.copy_({_CLIP})",
            "self.forward_metadata.page_table_1.copy_(forward_batch.page_table)")
_DRAFT_CLIP = "draft.seq_lens.clamp(max=self.dsa_index_topk).to(torch.int32)"
_CLOSURE = ("md = self.forward_metadata", "",
            "def load(batch):",
            "    md.dsa_cache_seqlens_int32.copy_(batch.seq_lens.clamp(max=self.dsa_index_topk).to(torch.int32))", "")


@pytest.mark.parametrize("eager, replay, fixable, word", [
    (_body(*_REFRESH), _body(*_REFRESH), True, ""),
    # a closure of the planner staging the draft's batch after the refresh (`load(draft)`: no call on self)
    (_body(*_CLOSURE, *_REFRESH, "draft = getattr(forward_batch, 'draft_batch', None)", "if draft is not None:",
           "    load(draft)"), _body(*_REFRESH), False, "load(draft)"),
    # a zero-argument closure reading the planner's local `draft`
    (_body("md = self.forward_metadata", "draft = forward_batch.draft_batch", "", "def stage():",
           f"    md.dsa_cache_seqlens_int32.copy_({_DRAFT_CLIP})", "", *_REFRESH, "stage()"),
     _body(*_REFRESH), False, "stage()"),
    # the loader hoisted into a local (`stage = self._load_batch`) after the refresh
    (_body(*_REFRESH, "stage = self._load_batch", "for b in forward_batch.draft_batches:", "    stage(b)"),
     _body(*_REFRESH), False, "stage(b)"),
    # a direct write of the draft's lengths after the refresh (a parameter the refresh does not read)
    (_body(*_REFRESH, "if draft_batch is not None:",
           "    self.forward_metadata.dsa_cache_seqlens_int32.copy_("
           "draft_batch.seq_lens.clamp(max=self.dsa_index_topk).to(torch.int32))"), _body(*_REFRESH), False,
     "may write it again"),
    # a helper handed this batch that stages the draft's lengths off it
    (_body(*_REFRESH, "self._stage_draft(forward_batch)"), _body(*_REFRESH), False, "_stage_draft"),
    # the refreshing helper itself handed another batch (EAGLE's draft input), eagerly or on replay
    (_body("batch = forward_batch.spec_info.draft_input if forward_batch.spec_info is not None else forward_batch",
           "self._load_batch(batch)"), _body(*_REFRESH), False, "_load_batch(batch)"),
    (_body(*_REFRESH), _body("self._load_batch(forward_batch.spec_info.draft_input)"), False, "_load_batch"),
    # twins: the drafts staged first and the own refresh last; the helper handed the planner's own batch; a write
    # after the refresh reading no other batch (this batch's lengths once more); a closure call before it
    (_body("stage = self._load_batch", "for b in forward_batch.draft_batches:", "    stage(b)", *_REFRESH),
     _body(*_REFRESH), True, ""),
    (_body("self._load_batch(forward_batch)"), _body("self._load_batch(forward_batch)"), True, ""),
    (_body(*_REFRESH, f"self.forward_metadata.dsa_cache_seqlens_int32.copy_({_CLIP})"),
     _body(*_REFRESH), True, ""),
    (_body(*_CLOSURE, "load(forward_batch.draft_batch)", *_REFRESH), _body(*_REFRESH), True, ""),
])
def test_round_bc_the_refresh_is_the_last_write_of_the_own_batch(tmp_path, eager, replay, fixable, word):
    src = _SRC.replace("{eager}", eager).replace("{replay}", replay)
    site = _files_site(tmp_path, {"requirements.txt": "sglang-kernel==0.4.6\n"}, src)
    assert (site.status is Status.FIXABLE) is fixable, site.reason
    assert fixable or word in site.reason, site.reason
