"""Red-team round BG (bg1): the refresh of a static record must be the last write of the field on every path
(writers_after._field_writers, _writer_after_why): after it, a helper object's method, a bound method handed
to a library runner (an executor, an ExitStack) or an item store running a `__setitem__` that writes the field
(the project's defs writing it, closed over their callers by name) may stage another batch's lengths into the
record; in eager planners and replay hooks alike."""
import pytest

from test_soundness import _files_site
from topk_migrate.model import Status

_HEAD = '''"""Fork DSA backend; metadata.dsa_cache_seqlens_int32 holds seqlens clipped to topk."""
import concurrent.futures
import contextlib
from dataclasses import dataclass

import torch
from sgl_kernel.flash_mla import flash_mla_sparse_fwd

@dataclass
class DSAMetadata:
    dsa_cache_seqlens_int32: torch.Tensor
    page_table_1: torch.Tensor

@TOP@
'''
_CLIP = "forward_batch.seq_lens.clamp(max=self.dsa_index_topk).to(torch.int32)"
_BACKEND = '''
class Backend:
    def __init__(self, dsa_index_topk, warmup_batch, max_bs=8):
        self.dsa_index_topk = dsa_index_topk
        INIT
        self.forward_metadata = DSAMetadata(dsa_cache_seqlens_int32=warmup_batch.seq_lens.clamp(max=self.dsa_index_topk).to(torch.int32),
                                            page_table_1=torch.zeros(max_bs, 64, dtype=torch.int32))

    def _stage_draft_lens(self, draft_batch):
        self.forward_metadata.dsa_cache_seqlens_int32.copy_(draft_batch.seq_lens.clamp(max=self.dsa_index_topk).to(torch.int32))

    def init_forward_metadata(self, forward_batch):
        EAGER

    def init_forward_metadata_replay_cuda_graph(self, bs, forward_batch):
        REPLAY

    def forward(self, q, kv, topk_indices, sm_scale):
        metadata = self.forward_metadata
        return flash_mla_sparse_fwd(q=q, kv=kv, indices=topk_indices, sm_scale=sm_scale)[0]
'''
_REFRESH = (f"self.forward_metadata.dsa_cache_seqlens_int32.copy_({_CLIP})\n"
            "        self.forward_metadata.page_table_1.copy_(forward_batch.page_table)")
_DRAFTS = '''
class _DraftLens:
    """The draft's side of the backend: stages the draft's lengths into the backend's graph record."""
    def __init__(self, backend):
        self.backend = backend

    def stage(self, forward_batch):
        draft = forward_batch.spec_info
        if draft is not None:
            self.backend.forward_metadata.dsa_cache_seqlens_int32.copy_(
                draft.seq_lens.clamp(max=self.backend.dsa_index_topk).to(torch.int32))
'''
_COUNTER = '''
class _DraftLens:
    """Counts the plans (profiling): writes no record."""
    def __init__(self, backend):
        self.plans = 0

    def stage(self, forward_batch):
        self.plans += 1
'''
_INBOX = '''
class _DraftInbox(dict):
    """Draft inputs by batch size; filing one stages its lengths (overlap)."""
    def __init__(self, backend):
        super().__init__()
        self.backend = backend

    def __setitem__(self, bs, draft_batch):
        super().__setitem__(bs, draft_batch)
        if draft_batch is not None:
            self.backend._stage_draft_lens(draft_batch)
'''
_INBOX_COUNTS = '''
class _DraftInbox(dict):
    filed = 0

    def __init__(self, backend):
        super().__init__()

    def __setitem__(self, bs, draft_batch):
        super().__setitem__(bs, draft_batch)
        _DraftInbox.filed += 1
'''
_HELPER = "self._drafts.stage(forward_batch)"
_FILE = "self._draft_inbox[forward_batch.batch_size] = forward_batch.spec_info"
_SUBMIT = "self._side.submit(self._stage_draft_lens, forward_batch.spec_info).result()"
_EXITSTACK = ("with contextlib.ExitStack() as stack:\n            stack.callback(self._stage_draft_lens, forward_batch.spec_info)\n"
              "            self._steps = 1")


def _source(top="", init="self._side = None", eager=_REFRESH, replay=_REFRESH):
    body = _BACKEND.replace("INIT", init).replace("EAGER", eager).replace("REPLAY", replay)
    return _HEAD.replace("@TOP@", top) + body


def _after(stmt):
    return _REFRESH + "\n        " + stmt


@pytest.mark.parametrize("src, word", ids=["helper", "helper-replay", "setitem", "setitem-replay", "executor",
                                           "exitstack", "helper-other-file"], argvalues=[
    # u_helper_object_stages_after_refresh: a method of a project object held on self writes the field
    (_source(_DRAFTS, init="self._drafts = _DraftLens(self)", eager=_after(_HELPER)), "stage"),
    # u_replay_helper_object_stages: its replay-hook twin
    (_source(_DRAFTS, init="self._drafts = _DraftLens(self)", replay=_after(_HELPER)), "stage"),
    # u_draft_staged_by_setitem_table: an item store into a dict subclass whose `__setitem__` stages the draft
    (_source(_INBOX, init="self._draft_inbox = _DraftInbox(self)", eager=_after(_FILE)), "__setitem__"),
    # u_replay_draft_staged_by_setitem
    (_source(_INBOX, init="self._draft_inbox = _DraftInbox(self)",
             replay=_after("self._draft_inbox[bs] = forward_batch.spec_info")), "__setitem__"),
    # u_draft_staged_via_executor: the bound method handed as a value to a library runner
    (_source(init="self._side = concurrent.futures.ThreadPoolExecutor(max_workers=1)", eager=_after(_SUBMIT)),
     "_stage_draft_lens"),
    # u_draft_staged_exitstack_callback: registered on an ExitStack, run at the `with`'s exit
    (_source(eager=_after(_EXITSTACK)), "_stage_draft_lens"),
    # the helper class in another file of the project (its method found by name there)
    (_source("from drafts import _DraftLens\n", init="self._drafts = _DraftLens(self)", eager=_after(_HELPER)), "stage"),
])
def test_round_bg_a_def_writing_the_field_run_after_the_refresh(tmp_path, src, word):
    files = {"requirements.txt": "sglang-kernel==0.4.6\n", "drafts.py": "import torch\n" + _DRAFTS}
    site = _files_site(tmp_path, files, src)
    assert site.status is Status.MANUAL, site.reason
    assert word in site.reason and "last write" in site.reason, site.reason


@pytest.mark.parametrize("src", ids=["counts-only", "before-refresh", "setitem-counts", "exitstack-profiling",
                                     "literal-item", "plain"], argvalues=[
    # s_helper_object_counts_only: the helper's method writes no record
    _source(_COUNTER, init="self._drafts = _DraftLens(self)", eager=_after(_HELPER)),
    # s_helper_object_stages_before_refresh: the staging runs first, the refresh is the last write
    _source(_DRAFTS, init="self._drafts = _DraftLens(self)", eager=_HELPER + "\n        " + _REFRESH),
    # s_setitem_table_counts_only: a `__setitem__` that only counts
    _source(_INBOX_COUNTS, init="self._draft_inbox = _DraftInbox(self)", eager=_after(_FILE)),
    # s_exitstack_profiling_after_refresh: the callback writes no lengths
    _source(init="self._marks = []", eager=_after(_EXITSTACK.replace(
        "self._stage_draft_lens, forward_batch.spec_info", 'self._marks.append, "plan-done"'))),
    # an item store into a literal display, beside a `__setitem__` that stages (the literal's is the builtin's)
    _source(_INBOX, init="self._draft_inbox = _DraftInbox(self)", eager=_after("[0, 1][0] = 2")),
    # the reference shape: the static record refreshed in place by both hooks, nothing after
    _source(),
])
def test_round_bg_what_runs_after_the_refresh_writing_no_field_stays_fixable(tmp_path, src):
    files = {"requirements.txt": "sglang-kernel==0.4.6\n"}
    site = _files_site(tmp_path, files, src)
    assert site.status is Status.FIXABLE, site.reason
