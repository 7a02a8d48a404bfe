"""Red-team round BE: a record picked by a key read off state (`self._records[self._slot]`) and moved between its
refresh and its publish (metadata_in_scope._keyed_by_state, _container_moved, _other_statement_between); a record
made by a class read off an object through a local or a partial (`Record = type(md)`: reach._class_of_object)."""
import pytest

from test_round_bd import _HANDED
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

'''
_FWD = '''
    def forward(self, q, kv, topk_indices, sm_scale):
        metadata = self.forward_metadata
        return flash_mla_sparse_fwd(q=q, kv=kv, indices=topk_indices, sm_scale=sm_scale)[0]
'''
_CLIP = "forward_batch.seq_lens.clamp(max=self.dsa_index_topk).to(torch.int32)"
_RING = f'''
class Backend:
    def __init__(self, dsa_index_topk, warmup_batch, max_bs=8):
        self.dsa_index_topk = dsa_index_topk
        lens = warmup_batch.seq_lens.clamp(max=self.dsa_index_topk).to(torch.int32)
        self._records = [DSAMetadata(dsa_cache_seqlens_int32=lens.clone(), page_table_1=torch.zeros(max_bs, 64)),
                         DSAMetadata(dsa_cache_seqlens_int32=lens.clone(), page_table_1=torch.zeros(max_bs, 64))]
        self._slot = 0
        self.forward_metadata = None

    def init_forward_metadata(self, forward_batch):
        self._records[KEY].dsa_cache_seqlens_int32.copy_({_CLIP})
        self._records[KEY].page_table_1.copy_(forward_batch.page_table)
        BETWEEN
        self.forward_metadata = self._records[KEY]
'''


@pytest.mark.parametrize("key, between, fixable", [
    ("self._slot", "self._slot ^= 1", False),
    ("self._slot", "self._slot = 1 - self._slot", False),
    ("0", "self._records.reverse()", False),
    ("self._slot", "self._advance()", False),  # (a method the module does not define may move the key)
    # safe twins: a constant key or the key read off state, nothing between the refresh and the publish
    ("0", "pass", True),
    ("self._slot", "pass", True),
])
def test_round_be_a_record_keyed_by_state_may_move_before_its_publish(tmp_path, key, between, fixable):
    src = _HEAD + _RING.replace("KEY", key).replace("BETWEEN", between) + _FWD
    site = _files_site(tmp_path, {"requirements.txt": "sglang-kernel==0.4.6\n"}, src)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


_MADE = _HANDED.replace("{top}", "import functools").replace("    md = {record}", "    STEPS")


@pytest.mark.parametrize("steps, fixable", [
    (("Record = type(batch.metadata)", "md = Record(batch.lengths.flip(0))"), False),
    (("make = functools.partial(type(batch.metadata))", "md = make(batch.lengths.flip(0))"), False),
    (("Meta = batch.Meta", "md = Meta(batch.lengths.flip(0))"), False),
    (("md = batch.metadata",), True),
])
def test_round_be_a_record_made_by_a_class_kept_in_a_local_is_not_read(tmp_path, steps, fixable):
    src = _MADE.replace("STEPS", "\n    ".join(steps))
    site = _files_site(tmp_path, {"requirements.txt": "sglang-kernel==0.4.6\n"}, src)
    assert (site.status is Status.FIXABLE) is fixable, site.reason
