"""Red-team round BH (bh1's lead): a replay hook's in-place write through an index updates a captured record only
where it reaches a prefix of its rows (graph_replay._prefix): the rows past it are the graph's padding. A write
from another row or by a step (`[1:]`, `[::2]`), to one row (`[0]`) or narrowing a later dimension leaves a real
row with the capture-time lengths. Other rules still read every such write as a write of the field (`"any"`)."""
import pytest

from test_soundness import _graph_site

_CLIP = "seq_lens.clamp(max=self.dsa_index_topk).to(torch.int32)"
_CAPTURE = f"md = DSAMetadata(dsa_cache_seqlens_int32={_CLIP})\n        self.graph_metadata[bs] = md\n        self.forward_metadata = md"


def _replay(view, value=_CLIP):
    return (f"md = self.graph_metadata[bs]\n        md.dsa_cache_seqlens_int32{view}.copy_({value})\n"
            "        self.forward_metadata = md")


@pytest.mark.parametrize("view, fixable", [
    ("[:bs]", True), ("[0:bs]", True), ("[:bs:1]", True), ("[...]", True), ("[:]", True),
    ("[1:]", False), ("[::2]", False), ("[1:bs + 1]", False), ("[0]", False), ("[:bs][1:]", False),
])
def test_round_bh_a_replay_write_updates_the_record_through_a_prefix_only(tmp_path, view, fixable):
    value = _CLIP
    site = _graph_site(tmp_path, _CAPTURE, _replay(view, value))
    assert (site.status.value == "fixable") is fixable, site.reason


def test_round_bh_an_item_store_updates_through_a_prefix_only(tmp_path):
    ok = _graph_site(tmp_path, _CAPTURE, _replay("", _CLIP).replace(
        f"md.dsa_cache_seqlens_int32.copy_({_CLIP})", f"md.dsa_cache_seqlens_int32[:bs] = {_CLIP}"))
    assert ok.status.value == "fixable", ok.reason
    stale = _graph_site(tmp_path, _CAPTURE, _replay("", _CLIP).replace(
        f"md.dsa_cache_seqlens_int32.copy_({_CLIP})", f"md.dsa_cache_seqlens_int32[1:] = {_CLIP}"))
    assert stale.status.value == "manual", stale.reason
