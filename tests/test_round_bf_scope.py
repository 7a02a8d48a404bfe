"""Red-team round BF (bf1): statements that run code with no call spelled are calls too (implicit_runs.
_hidden_runs, _hidden_write, _hidden_why): after the planner refreshes the static record in place, a plain store
running a property's setter, the class's `__setattr__` or a descriptor's `__set__`, or a `with` whose manager's
`__exit__` runs, may stage another batch's lengths into the record; in eager planners and replay hooks alike."""
import pytest

from test_soundness import _files_site
from topk_migrate.model import Status

_HEAD = '''"""Fork DSA backend; metadata.dsa_cache_seqlens_int32 holds seqlens clipped to topk."""
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
_STAGE = "self.forward_metadata.dsa_cache_seqlens_int32.copy_(draft_batch.seq_lens.clamp(max=self.dsa_index_topk).to(torch.int32))"
_BACKEND = '''
class Backend:
    def __init__(self, dsa_index_topk, warmup_batch, max_bs=8):
        self.dsa_index_topk = dsa_index_topk
        self.forward_metadata = DSAMetadata(dsa_cache_seqlens_int32=warmup_batch.seq_lens.clamp(max=self.dsa_index_topk).to(torch.int32),
                                            page_table_1=torch.zeros(max_bs, 64, dtype=torch.int32))
HOOKS
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
_STORE = "self.spec_info = forward_batch.spec_info"
_STAGER = '''
class _Stager:
    """Overlap: stages the draft input's lengths into the backend's record when the plan's block ends."""
    def __init__(self, backend, dsa_index_topk):
        self.backend = backend
        self.dsa_index_topk = dsa_index_topk
        self.draft = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.draft is not None:
            EXIT
        return False
'''
_EXIT_HANDS_ON = "self.backend._stage_draft(*exc)"  # (the helper's lengths read off its parameter: no value rule refuses
# first, so the hook's own reading is what the case tests)
_STAGE_DEF = f"""
    def _stage_draft(self, draft_batch):
        {_STAGE}
"""
_SETTER = f'''
    @property
    def spec_info(self):
        return self._spec_info

    @spec_info.setter
    def spec_info(self, draft_batch):
        self._spec_info = draft_batch
        if draft_batch is not None:
            {_STAGE}
'''
_SETATTR = f'''
    def __setattr__(self, name, value):
        super().__setattr__(name, value)
        if name == "spec_info" and value is not None:
            self._stage_draft(value)

    def _stage_draft(self, draft_batch):
        {_STAGE}
'''
_PROFILE = '''
    def __setattr__(self, name, value):
        super().__setattr__(name, value)
        if name == "spec_info":
            _SET_COUNTS[name] = _SET_COUNTS.get(name, 0) + 1
'''
_DESCRIPTOR = '''
class _Staged:
    """A descriptor staging a draft input's lengths into its owner's record when set."""
    def __get__(self, obj, cls=None):
        return obj._draft

    def __set__(self, obj, draft_batch):
        obj._draft = draft_batch
        if draft_batch is not None:
            obj._stage_draft(draft_batch)
'''
_SETTER_BOUND = f'''
    def _get_spec_info(self):
        return self._spec_info

    def _set_spec_info(self, draft_batch):
        self._spec_info = draft_batch
        if draft_batch is not None:
            {_STAGE}

    spec_info = property(_get_spec_info, _set_spec_info)
'''
_ADOPT = '''
    def _adopt(self, forward_batch):
        self.spec_info = forward_batch.spec_info
'''
_WITH = _REFRESH + "\n        with self._stager as stager:\n            stager.draft = forward_batch.spec_info"


def _source(hooks="", eager=_REFRESH, replay=_REFRESH, top="", exit_=None):
    if exit_ is not None:  # (a manager of the module the planner's `with` enters)
        top += _STAGER.replace("EXIT", exit_)
        hooks = "        self._stager = _Stager(self, dsa_index_topk)\n" + hooks
    return _HEAD.replace("@TOP@", top) + _BACKEND.replace("HOOKS", hooks).replace("EAGER", eager).replace("REPLAY", replay)


@pytest.mark.parametrize("src, word", ids=["setter", "property-call-replay", "setattr", "descriptor", "with-exit", "with-exit-replay", "helper-store"], argvalues=[
    # round BF's u_draft_staged_by_property_setter: the store after the refresh runs the setter staging the draft
    (_source(_SETTER, eager=_REFRESH + "\n        " + _STORE), "setter"),
    # its replay-hook twin (the setter bound by `property(get, set)` in the class body: a decorated one's store
    # is refused as a store of a def's name, graph-replay's)
    (_source(_SETTER_BOUND, replay=_REFRESH + "\n        " + _STORE), "setter"),
    # u_draft_staged_by_setattr_hook: the class's own `__setattr__` stages the draft on a store of `spec_info`
    (_source(_SETATTR, eager=_REFRESH + "\n        " + _STORE), ""),
    # a descriptor bound in the class body: its `__set__` stages the draft's lengths into the owner's record
    (_source("    spec_info = _Staged()\n" + _STAGE_DEF, eager=_REFRESH + "\n        " + _STORE, top=_DESCRIPTOR), "__set__"),
    # `with self._stager:` after the refresh: the manager's `__exit__` stages the draft's lengths through the
    # backend's helper (one staging them itself is refused first by the value rules)
    (_source(_STAGE_DEF, eager=_WITH, exit_=_EXIT_HANDS_ON), "__exit__"),
    # its replay-hook twin
    (_source(_STAGE_DEF, replay=_WITH, exit_=_EXIT_HANDS_ON), "__exit__"),
    # a helper called after the refresh whose plain store runs the setter
    (_source(_SETTER + _ADOPT, eager=_REFRESH + "\n        self._adopt(forward_batch)"), "_adopt"),
])
def test_round_bf_a_store_or_a_with_running_a_hook_after_the_refresh(tmp_path, src, word):
    site = _files_site(tmp_path, {"requirements.txt": "sglang-kernel==0.4.6\n"}, src)
    assert site.status is Status.MANUAL, site.reason
    assert word in site.reason


@pytest.mark.parametrize("src", ids=["setter-first", "setattr-profiling", "exit-no-write", "no-grad", "plain"], argvalues=[
    # round BF's s_setter_stages_before_refresh: the setter runs before the refresh, which is the last write
    _source(_SETTER, eager=_STORE + "\n        " + _REFRESH),
    # s_setattr_hook_profiling_only: a `__setattr__` that only counts the stores
    _source(_PROFILE, eager=_REFRESH + "\n        " + _STORE, top="_SET_COUNTS = {}\n"),
    # a manager whose `__exit__` writes no record; a library's manager (`torch.no_grad()`) after the refresh
    _source(eager=_WITH, replay=_WITH, exit_="self.draft = None"),
    _source(_STAGE_DEF, exit_=_EXIT_HANDS_ON, eager=_REFRESH + "\n        with torch.no_grad():\n            self._steps = 1"),
    # the reference shape: the static record refreshed in place by both hooks, nothing after
    _source(),
])
def test_round_bf_hooks_that_write_no_record_after_the_refresh_stay_fixable(tmp_path, src):
    site = _files_site(tmp_path, {"requirements.txt": "sglang-kernel==0.4.6\n"}, src)
    assert site.status is Status.FIXABLE, site.reason


@pytest.mark.parametrize("eager, replay", [(_REFRESH + "\n        " + _STORE, _REFRESH), (_REFRESH, _REFRESH + "\n        " + _STORE)],
                         ids=["eager", "replay"])
def test_round_bf_the_classes_setattr_is_read_as_a_call_alone(tmp_path, monkeypatch, eager, replay):
    """u_draft_staged_by_setattr_hook, the rules on the value written set aside (they refuse its `__setattr__`'s
    `value` first): the store after the refresh runs `__setattr__`, which stages the draft's lengths."""
    from topk_migrate.codemods.pass_topk_length import field_meaning
    monkeypatch.setattr(field_meaning.FieldMeaning, "unclipped_write", lambda self, field_name: None)
    site = _files_site(tmp_path, {"requirements.txt": "sglang-kernel==0.4.6\n"}, _source(_SETATTR, eager=eager, replay=replay))
    assert site.status is Status.MANUAL and "__setattr__" in site.reason, site.reason
    profiling = _source(_PROFILE, eager=eager, replay=replay, top="_SET_COUNTS = {}\n")
    assert _files_site(tmp_path, {}, profiling).status is Status.FIXABLE
