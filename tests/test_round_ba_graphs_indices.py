"""Red-team round BA: a graph record's `copy_` rebound outside its class body (a module-level swap under a build
flag, in a function, through an alias, from another file), and the indices converted to a dtype that cannot hold every slot
and -1 before their invalid entries are filled."""
import pytest

from test_round_az_graphs import _GRAPH, _OWN
from test_soundness import HANDED_INDICES, _files_site
from topk_migrate.model import Status

_FULL = "        self.dsa_cache_seqlens_int32.copy_(other.dsa_cache_seqlens_int32)\n" \
        "        self.page_table_1.copy_(other.page_table_1)\n"
_PAGES = "\n\ndef _copy_pages(self, other):\n    self.page_table_1.copy_(other.page_table_1)\n"
_BOTH = "\n\ndef _copy_pages(self, other):\n" + _FULL.replace("        ", "    ")
_PATCH = '"""Plugin: the fused replay copy."""\nimport backend\n\n\ndef _pages(self, other):\n' \
         "    self.page_table_1.copy_(other.page_table_1)\n\n\nbackend.DSAMetadata.copy_ = _pages\n"


def _graph(tail: str = "") -> str:
    src = _GRAPH.replace("{copy}", _FULL).replace("{record}", _OWN).replace("{imports}", "FUSED = True\n")
    return src + tail


@pytest.mark.parametrize("src, files, fixable", [
    # round BA (ba1): the module swaps in a copy of the page table only, at import under a flag
    (_graph(_PAGES + "\n\nif FUSED:\n    DSAMetadata.copy_ = _copy_pages\n"), {}, False),
    # ... in a function, through an alias of the class
    (_graph(_PAGES + "\n\ndef use_fused():\n    DSAMetadata.copy_ = _copy_pages\n"), {}, False),
    (_graph(_PAGES + "\n\ndef use_fused():\n    cls = DSAMetadata\n    cls.copy_ = _copy_pages\n"), {}, False),
    (_graph(), {"plugin.py": _PATCH}, False),  # (another file's store)
    # a copy the module cannot read (a factory's)
    (_graph(_PAGES + "\n\ndef _fused(fn):\n    return _copy_pages\n\n\nDSAMetadata.copy_ = _fused(None)\n"), {}, False),
    # the swapped-in copy refreshes every field; no swap at all
    (_graph(_BOTH + "\n\nif FUSED:\n    DSAMetadata.copy_ = _copy_pages\n"), {}, True),
    (_graph(), {}, True)], ids=["module-if", "function", "alias", "other-file", "factory", "full-copy",
                                "no-swap"])
def test_round_ba_a_record_method_rebound_outside_its_class(tmp_path, src, files, fixable):
    site = _files_site(tmp_path, {"requirements.txt": "sglang-kernel==0.4.6\n", **files}, src)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


_INDICES = "import torch\n" + HANDED_INDICES.replace(
    "        return flash_mla_sparse_fwd(", "        indices = {step}\n        return flash_mla_sparse_fwd(")


@pytest.mark.parametrize("step, fixable", [
    # round BA (ba3): the indices packed to a byte before their invalid entries are filled: -1 wraps to 255, a slot
    ("indices.to(torch.uint8).masked_fill(indices < 0, -1).to(torch.int32)", False),
    ("torch.masked_fill(indices.to(dtype=torch.uint8), indices < 0, -1).int()", False),
    ("indices.to(torch.int64).to(torch.int16).masked_fill(indices < 0, -1).long()", False),
    ("indices.to(kv.dtype).masked_fill(indices < 0, -1).int()", False),  # (another tensor's dtype: any)
    # ... the lookup's index so packed (a page table read at the wrapped slots)
    ("self.page_table.gather(1, indices.to(torch.uint8).clamp(min=0)).masked_fill(indices < 0, -1)", False),
    ("self.page_table.gather(1, indices.long().clamp(min=0)).masked_fill(indices < 0, -1)", True),
    # conversions that keep every index and -1
    ("indices.to(torch.int64).masked_fill(indices < 0, -1).to(torch.int32)", True),
    ("torch.masked_fill(indices.to(dtype=torch.int32), indices < 0, -1)", True),
    ("indices.long().masked_fill(indices < 0, -1).int()", True),
    ("indices.masked_fill(indices < 0, -1)", True),
    ("indices.to(torch.int64).to(torch.int32)", True)])
def test_round_ba_the_indices_filled_after_a_narrowing_conversion(tmp_path, step, fixable):
    site = _files_site(tmp_path, {}, _INDICES.replace("{step}", step))
    assert (site.status is Status.FIXABLE) is fixable, site.reason
