"""Red-team round BA: a field of the metadata record written through a computed attribute name (`getattr(md, f.name)`
over `fields(md)`, `vars(md)`, `md.__dict__`) in the record's own method or in a def of another
file it is handed to: a write of every field, the lengths included (reach._computed_field_writes)."""
import pytest

from test_round_az_graphs import _CLIP, _HEAD
from test_soundness import _files_site
from topk_migrate.model import Status

_SRC = _HEAD + f'''
    def copy_(self, other):
        for f in fields(self):
            getattr(self, f.name).copy_(getattr(other, f.name))
{{method}}

class Backend:
    def __init__(self, dsa_index_topk):
        self.dsa_index_topk = dsa_index_topk
        self.forward_metadata: Optional[DSAMetadata] = None

    def init_forward_metadata(self, forward_batch):
        md = DSAMetadata(dsa_cache_seqlens_int32={_CLIP}, page_table_1=forward_batch.page_table.clone())
{{step}}
        self.forward_metadata = md

    def forward(self, q, kv, topk_indices, sm_scale):
        metadata = self.forward_metadata
        return flash_mla_sparse_fwd(q=q, kv=kv, indices=topk_indices, sm_scale=sm_scale)[0]
'''
_HELPERS = '''"""The fork's layout helpers."""
from dataclasses import fields


def split_layout(md, order):
    for f in fields(md):
        t = getattr(md, f.name)
        t.copy_(t[order])
    return md


def split_by_namespace(md, order):
    for k in list(md.__dict__):
        md.__dict__[k].copy_(md.__dict__[k][order])
    return md


def split_handed_on(md, order):
    _permute_all(md, order)
    return md


def _permute_all(rec, order):
    for v in vars(rec).values():
        v[:] = v[order]


def _attr(obj, name):
    return getattr(obj, name)


def checked(md):
    for f in fields(md):
        assert getattr(md, f.name).is_contiguous(), f.name
    return md


def described(md):
    return {f.name: tuple(getattr(md, f.name).shape) for f in fields(md)}
'''
_IMPORT = "from layout import _attr, checked, described, split_by_namespace, split_handed_on, split_layout\n"
_REORDER = ("\n    def reorder_(self, order):\n        for f in fields(self):\n            t = getattr(self, f.name)\n"
            "            t.copy_(t[order])\n")


def _step(*lines: str) -> str:
    return "".join(f"        {line}\n" for line in lines)


@pytest.mark.parametrize("method, step, fixable", [
    # an imported refiner handing back its parameter, each field reordered in place by a computed name
    ("", _step("md = split_layout(md, forward_batch.order)"), False),
    ("", _step("md = split_by_namespace(md, forward_batch.order)"), False),
    ("", _step("md = split_handed_on(md, forward_batch.order)"), False),
    # the record's own method, over `fields(self)` or `vars(self)`
    (_REORDER, _step("md.reorder_(forward_batch.order)"), False),
    # safe twins: a check, a description, a getter by another literal name, the full refresh from another record
    ("", _step("md = checked(md)"), True),
    ("", _step("shapes = described(md)"), True),
    ("", _step('rows = _attr(md, "page_table_1").shape[0]'), True),
    ("", _step("md.copy_(DSAMetadata(dsa_cache_seqlens_int32=md.dsa_cache_seqlens_int32.clone(), "
               "page_table_1=md.page_table_1.clone()))"), True),
    # the method defined and not called here: `self` may be any record of the class (another file may call it)
    (_REORDER, "", False),
])
def test_round_ba_a_computed_field_write_is_a_write_of_the_lengths(tmp_path, method, step, fixable):
    src = _SRC.replace("{imports}", _IMPORT).replace("{method}", method).replace("{step}", step)
    site = _files_site(tmp_path, {"layout.py": _HELPERS, "requirements.txt": "sglang-kernel==0.4.6\n"}, src)
    assert (site.status is Status.FIXABLE) is fixable, site.reason
