"""Red-team round BI (bi1): the clipped lengths' tensor held under another attribute name and written in place there
after the refresh: a view kept as another keyword or attribute, a tuple store, a literal `setattr`, a positional slot,
`.data`/`set_`, a helper of another file, a second record, a child object handed it (field_aliases.aliased_write)."""
import pytest

from test_soundness import _files_site
from topk_migrate.model import Status

_HEAD = '''"""Fork DSA backend; metadata.dsa_cache_seqlens_int32 holds seqlens clipped to topk."""
from dataclasses import dataclass

import torch
from sgl_kernel.flash_mla import flash_mla_sparse_fwd
OTHER_IMPORT

@dataclass
class DSAMetadata:
    dsa_cache_seqlens_int32: torch.Tensor
    cache_seqlens_int32: torch.Tensor
    page_table_1: torch.Tensor


@dataclass
class FA3Metadata:
    cache_seqlens_int32: torch.Tensor


class FA3Reader:
    def __init__(self, dsa_lens):
        self.dsa_lens = dsa_lens

    def plan(self, forward_batch):
        return int(self.dsa_lens.sum())


class FA3Child:
    def __init__(self, seq_lens_buf):
        self.seq_lens_buf = seq_lens_buf

    def refresh(self, forward_batch):
        self.seq_lens_buf.copy_(forward_batch.seq_lens)

'''
_CLIP = "forward_batch.seq_lens.clamp(max=self.dsa_index_topk).to(torch.int32)"
_BACKEND = f'''
class Backend:
    def __init__(self, dsa_index_topk, warmup_batch, max_bs=8):
        self.dsa_index_topk = dsa_index_topk
        lens = warmup_batch.seq_lens.clamp(max=self.dsa_index_topk).to(torch.int32)
        md = DSAMetadata(MAKING)
        SHARE
        self.forward_metadata = md

    def init_forward_metadata(self, forward_batch):
        self.forward_metadata.dsa_cache_seqlens_int32.copy_({_CLIP})
        self.forward_metadata.page_table_1.copy_(forward_batch.page_table)
        WRITE

    def forward(self, q, kv, topk_indices, sm_scale):
        metadata = self.forward_metadata
        return flash_mla_sparse_fwd(q=q, kv=kv, indices=topk_indices, sm_scale=sm_scale)[0]
'''
_KW = "dsa_cache_seqlens_int32=lens, cache_seqlens_int32=torch.zeros(max_bs, dtype=torch.int32), page_table_1=None"
_RAW = "self.forward_metadata.cache_seqlens_int32.copy_(forward_batch.seq_lens)"
_HELPER = '''"""Graph memory helpers of the fork."""


def share(md):
    md.cache_seqlens_int32 = md.dsa_cache_seqlens_int32BODY
'''


@pytest.mark.parametrize("making, share, write, fixable", [
    # another keyword given a view of the field's local
    ("dsa_cache_seqlens_int32=lens, cache_seqlens_int32=lens.unsqueeze(1), page_table_1=None", "pass", _RAW, False),
    # a view stored under another name after the making
    (_KW, "md.cache_seqlens_int32 = md.dsa_cache_seqlens_int32.view(-1, 1)", _RAW, False),
    # a tuple store, a literal setattr, a `.data` swap, `set_`
    (_KW, "md.cache_seqlens_int32, md.page_table_1 = md.dsa_cache_seqlens_int32, None", _RAW, False),
    (_KW, 'setattr(md, "cache_seqlens_int32", md.dsa_cache_seqlens_int32)', _RAW, False),
    (_KW, "md.cache_seqlens_int32.data = md.dsa_cache_seqlens_int32.data", _RAW, False),
    # positional slots: one tensor in the field's and the next
    ("lens, lens, None", "pass", _RAW, False),
    # a helper of another file stores the field under another name
    (_KW, "graph_memory.share(md)", _RAW, False),
    # a callable a name holds handed the field: what it keeps is not read
    (_KW, "keep = self.keeper\n        keep(md.dsa_cache_seqlens_int32)", "pass", False),
    # a second record built on the field's tensor, written through its own attribute
    (_KW, "self.fa3 = FA3Metadata(cache_seqlens_int32=md.dsa_cache_seqlens_int32)",
     "self.fa3.cache_seqlens_int32.copy_(forward_batch.seq_lens)", False),
    # a child object keeps the tensor handed to it and writes it in place
    (_KW, "self.fa3 = FA3Child(md.dsa_cache_seqlens_int32)", "self.fa3.refresh(forward_batch)", False),
    # safe twins: the alias read only, or the other name given its own tensor (a clone)
    ("dsa_cache_seqlens_int32=lens, cache_seqlens_int32=lens.unsqueeze(1), page_table_1=None", "pass", "pass", True),
    ("dsa_cache_seqlens_int32=lens, cache_seqlens_int32=lens.clone(), page_table_1=None", "pass", _RAW, True),
    (_KW, "md.cache_seqlens_int32, md.page_table_1 = md.dsa_cache_seqlens_int32.clone(), None", _RAW, True),
    (_KW, "graph_memory.share(md)  # .clone()", _RAW, True),
    (_KW, "self.fa3 = FA3Reader(md.dsa_cache_seqlens_int32)", "self.fa3.plan(forward_batch)", True),
    (_KW, "pass", _RAW, True),
])
def test_round_bi_the_fields_tensor_written_under_another_name(tmp_path, making, share, write, fixable):
    src = (_HEAD.replace("OTHER_IMPORT", "import graph_memory\n") + _BACKEND).replace("MAKING", making).replace(
        "SHARE", share).replace("WRITE", write)
    helper = _HELPER.replace("BODY", "" if share == "graph_memory.share(md)" else ".clone()")
    site = _files_site(tmp_path, {"requirements.txt": "sglang-kernel==0.4.6\n", "graph_memory.py": helper}, src)
    assert (site.status is Status.FIXABLE) is fixable, site.reason
    if not fixable:
        assert "tensor" in site.reason, site.reason
