"""Red-team round BJ (bj1): the clipped lengths' tensor held under another name by what the round-BI rule allowed:
`object.__setattr__`, a library call handing its argument back (`torch.atleast_1d`, `nn.Parameter`), a `**` making,
`dict(k=...)`, and a write through a local or a container method (`d.get(k)`): default-deny
(field_aliases.aliased_write)."""
import pytest

from test_soundness import _files_site
from topk_migrate.model import Status

_HEAD = '''"""Fork DSA backend; metadata.dsa_cache_seqlens_int32 holds seqlens clipped to topk."""
import types
from dataclasses import dataclass

import torch
from sgl_kernel.flash_mla import flash_mla_sparse_fwd


@dataclass
class DSAMetadata:
    dsa_cache_seqlens_int32: torch.Tensor
    cache_seqlens_int32: torch.Tensor
    page_table_1: torch.Tensor


@dataclass
class FA3Metadata:
    cache_seqlens_int32: torch.Tensor

'''
_CLIP = "forward_batch.seq_lens.clamp(max=self.dsa_index_topk).to(torch.int32)"
_BACKEND = f'''
class Backend:
    def __init__(self, dsa_index_topk, warmup_batch, max_bs=8):
        self.dsa_index_topk = dsa_index_topk
        lens = warmup_batch.seq_lens.clamp(max=self.dsa_index_topk).to(torch.int32)
        md = DSAMetadata(dsa_cache_seqlens_int32=lens, cache_seqlens_int32=torch.zeros(max_bs, dtype=torch.int32),
                         page_table_1=None)
        SHARE
        self.forward_metadata = md

    def init_forward_metadata(self, forward_batch):
        self.forward_metadata.dsa_cache_seqlens_int32.copy_({_CLIP})
        WRITE

    def forward(self, q, kv, topk_indices, sm_scale):
        metadata = self.forward_metadata
        return flash_mla_sparse_fwd(q=q, kv=kv, indices=topk_indices, sm_scale=sm_scale)[0]
'''
_FIELD = "md.dsa_cache_seqlens_int32"
_ALIAS = f"md.cache_seqlens_int32 = {_FIELD}"
_RAW = "self.forward_metadata.cache_seqlens_int32.copy_(forward_batch.seq_lens)"
_OWN = "self.fa3_lens.copy_(forward_batch.seq_lens)"
_LOOP = ("for buf, src in ((self.forward_metadata.cache_seqlens_int32, forward_batch.req_lens),):\n"
         "            buf.copy_(src)")
_LOCAL = "fa3 = self.forward_metadata.cache_seqlens_int32\n        fa3.copy_(forward_batch.seq_lens)"


@pytest.mark.parametrize("share, write, fixable", [
    # a frozen record's store by name (`object.__setattr__`), and `super().__setattr__`'s spelling
    (f'object.__setattr__(md, "cache_seqlens_int32", {_FIELD})', _RAW, False),
    (f'super().__setattr__("fa3_lens", {_FIELD})', _OWN, False),
    # a library call not known to return fresh storage hands its argument back
    (f"self.fa3_lens = torch.atleast_1d({_FIELD})", _OWN, False),
    (f"self.fa3_lens = torch.nn.Parameter({_FIELD}, requires_grad=False)",
     "self.fa3_lens.data.copy_(forward_batch.seq_lens)", False),
    # a write through a local holding an alias: a loop's target, a plain local
    (_ALIAS, _LOOP, False),
    (_ALIAS, _LOCAL, False),
    # `**` into a making, or into a library class
    (f'kw = {{"cache_seqlens_int32": {_FIELD}}}\n        self.fa3 = FA3Metadata(**kw)',
     "self.fa3.cache_seqlens_int32.copy_(forward_batch.seq_lens)", False),
    (f'kw = {{"lens": {_FIELD}}}\n        self.ns = types.SimpleNamespace(**kw)', "pass", False),
    # a container call's keywords, and a write through an item a container method returns
    (f"self.static = dict(seq_lens={_FIELD})", 'self.static["seq_lens"].copy_(forward_batch.seq_lens)', False),
    (f'self.static = {{"seq_lens": {_FIELD}}}', 'self.static.get("seq_lens").copy_(forward_batch.seq_lens)', False),
    (f'self.static = {{"seq_lens": {_FIELD}}}',
     "next(iter(self.static.values())).copy_(forward_batch.seq_lens)", False),
    # safe twins: read only, own tensors, a fresh result (`F.pad`, `clone`)
    (f"self.fa3_lens = torch.atleast_1d({_FIELD})", "pass", True),
    ("self.fa3_lens = torch.atleast_1d(md.cache_seqlens_int32)", _OWN, True),
    (f"self.fa3_lens = torch.nn.functional.pad({_FIELD}, (0, 1))", _OWN, True),
    ('object.__setattr__(md, "cache_seqlens_int32", torch.zeros(max_bs, dtype=torch.int32))', _RAW, True),
    ("pass", _LOOP, True),
    ("pass", _LOCAL, True),
    ('kw = {"cache_seqlens_int32": torch.zeros(max_bs, dtype=torch.int32)}\n        self.fa3 = FA3Metadata(**kw)',
     "self.fa3.cache_seqlens_int32.copy_(forward_batch.seq_lens)", True),
    (f"self.static = dict(seq_lens={_FIELD}.clone())", 'self.static["seq_lens"].copy_(forward_batch.seq_lens)', True),
    ('self.static = {"seq_lens": md.cache_seqlens_int32}', 'self.static.get("seq_lens").copy_(forward_batch.seq_lens)',
     True),
])
def test_round_bj_the_fields_tensor_written_under_another_name(tmp_path, share, write, fixable):
    src = (_HEAD + _BACKEND).replace("SHARE", share).replace("WRITE", write)
    site = _files_site(tmp_path, {"requirements.txt": "sglang-kernel==0.4.6\n"}, src)
    assert (site.status is Status.FIXABLE) is fixable, site.reason
    if not fixable:
        assert "tensor" in site.reason, site.reason
