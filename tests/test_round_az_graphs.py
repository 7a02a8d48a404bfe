"""Red-team round AZ: a record's `copy_` loop copying from a source that may be the record itself, a graph record of
another file's class (its `copy_` is not the module's), and the indices stored into a container's item (or put in
by a method) then written in place through it."""
import pytest

from test_soundness import HANDED_INDICES, _files_site
from topk_migrate.model import Status

_CLIP = "forward_batch.seq_lens.clamp(max=self.dsa_index_topk).to(torch.int32)"
_HEAD = '''"""Fork backend; metadata.dsa_cache_seqlens_int32 holds seqlens clipped to topk."""
from dataclasses import dataclass, fields
from typing import Optional

import torch
from sgl_kernel.flash_mla import flash_mla_sparse_fwd
{imports}

@dataclass
class DSAMetadata:
    dsa_cache_seqlens_int32: torch.Tensor
    page_table_1: torch.Tensor
'''
_GRAPH = _HEAD + f'''
    def copy_(self, other):
{{copy}}


class Backend:
    def __init__(self, dsa_index_topk):
        self.dsa_index_topk = dsa_index_topk
        self.forward_metadata: Optional[DSAMetadata] = None
        self._graph_metadata: Optional[DSAMetadata] = None

    def _build_metadata(self, forward_batch):
        return DSAMetadata(dsa_cache_seqlens_int32={_CLIP}, page_table_1=forward_batch.page_table)

    def init_forward_metadata(self, forward_batch):
        self.forward_metadata = self._build_metadata(forward_batch)

    def init_forward_metadata_capture_cuda_graph(self, bs, forward_batch):
        self._graph_metadata = {{record}}
        self.forward_metadata = self._graph_metadata

    def init_forward_metadata_replay_cuda_graph(self, bs, forward_batch):
        self._graph_metadata.copy_(self._build_metadata(forward_batch))
        self.forward_metadata = self._graph_metadata

    def forward(self, q, kv, topk_indices, sm_scale):
        metadata = self.forward_metadata
        return flash_mla_sparse_fwd(q=q, kv=kv, indices=topk_indices, sm_scale=sm_scale)[0]
'''
_LOOP = "        for f in fields(self):\n            getattr(self, f.name).copy_(getattr({src}, f.name))\n"
_MAYBE_SELF = "        src = other if other.page_table_1.shape == self.page_table_1.shape else self\n"
_OWN = "self._build_metadata(forward_batch)"
_OTHER = f"GraphDSAMetadata(dsa_cache_seqlens_int32={_CLIP}, page_table_1=forward_batch.page_table)"
_RECORDS = ('"""The fork\'s graph records."""\nfrom dataclasses import dataclass\n\nimport torch\n\n\n@dataclass\n'
            "class GraphDSAMetadata:\n    dsa_cache_seqlens_int32: torch.Tensor\n    page_table_1: torch.Tensor\n\n"
            "    def copy_(self, other):\n        self.page_table_1.copy_(other.page_table_1)\n")


@pytest.mark.parametrize("copy, record, imports, fixable", [
    (_LOOP.format(src="other"), _OWN, "", True),
    # the loop's source is the record itself where the new plan's page table is another width
    (_MAYBE_SELF + _LOOP.format(src="src"), _OWN, "", False),
    # the capture keeps a record of another file's class: its `copy_` (the page table only) runs, not the module's
    (_LOOP.format(src="other"), _OTHER, "from graph_records import GraphDSAMetadata\n", False),
    (_LOOP.format(src="other"), f"DSAMetadata(dsa_cache_seqlens_int32={_CLIP}, page_table_1=forward_batch.page_table)",
     "", True)])
def test_round_az_the_replayed_record_copies_the_lengths_from_the_plan(tmp_path, copy, record, imports, fixable):
    src = _GRAPH.replace("{copy}", copy).replace("{record}", record).replace("{imports}", imports)
    site = _files_site(tmp_path, {"graph_records.py": _RECORDS, "requirements.txt": "sglang-kernel==0.4.6\n"}, src)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


def _steps(*lines: str) -> str:
    return "".join(f"        {line}\n" for line in lines)


_WRITE = ".masked_fill_({0} >= 24, -1)"


@pytest.mark.parametrize("pre, fixable", [
    (_steps("staged = {}", 'staged["w"] = torch.ones(4)', 'staged["w"].mul_(2.0)'), True),
    # an item store, then an in-place write through the item
    (_steps("staged = {}", 'staged["topk_indices"] = indices', 'staged["topk_indices"]' + _WRITE.format("indices")),
     False),
    (_steps("ring = [None] * 2", "ring[1] = indices", "ring[1]" + _WRITE.format("indices")), False),
    # a container filled by a method
    (_steps("ring = []", "ring.append(indices)", "ring[0]" + _WRITE.format("indices")), False),
    (_steps("staged = {}", 'staged.setdefault("k", indices)', 'staged["k"]' + _WRITE.format("indices")), False),
    (_steps("ring = []", "ring.extend([indices])", "ring[0]" + _WRITE.format("indices")), False),
    # a `for` target that is an item
    (_steps("ring = [None]", "for ring[0] in (indices,):", "    pass", "ring[0]" + _WRITE.format("indices")), False),
])
def test_round_az_an_item_store_holds_the_indices(tmp_path, pre, fixable):
    src = "import torch\n" + HANDED_INDICES.replace(
        "        return flash_mla_sparse_fwd(", "{pre}        return flash_mla_sparse_fwd(").replace("{pre}", pre)
    site = _files_site(tmp_path, {}, src)
    assert (site.status is Status.FIXABLE) is fixable, site.reason
