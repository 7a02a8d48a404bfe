"""Red-team round BD: a record made by the class read off an object (`type(md)(lens)`: whichever class md has, the
record's among them, its positional slots not read: reach._class_of_object), and a numpy view of the indices handed
to a def of the module whose numpy methods write its parameter with no trailing `_` (rows._host_handed)."""
import pytest

from test_round_bc_g3a import _INDICES
from test_soundness import _files_site
from topk_migrate.model import Status

_HANDED = '''"""Fork backend; metadata.dsa_cache_seqlens_int32 holds seqlens clipped to topk."""
import torch
from sgl_kernel.flash_mla import flash_mla_sparse_fwd
{top}

class Backend:
    def __init__(self, metadata):
        self.forward_metadata = metadata

    def forward(self, q, kv, indices, scale):
        metadata = self.forward_metadata
        return flash_mla_sparse_fwd(q=q, kv=kv, indices=indices, sm_scale=scale)[0]


def run(batch, q, kv, indices, scale):
    md = {record}
    return Backend(md).forward(q, kv, indices, scale)
'''
_LIKE = "\n\ndef record_like(template, lens):\n    return type(template)(lens)\n"
_SLOTS = ("\n\ndef _coalesce(slots):\n    slots.sort(axis=-1)\n    return slots\n"
          "\n\ndef _drop(slots, rows):\n    for r in rows:\n        slots[r].fill(-1)\n")


@pytest.mark.parametrize("top, record, fixable", [
    ("", "type(batch.metadata)(batch.lengths.flip(0))", False),
    ("", "type(batch.metadata)(*[batch.lengths.flip(0)])", False),
    (_LIKE, "record_like(batch.metadata, batch.lengths.sort(descending=True).values)", False),
    # safe twin: the engine's record handed on as is
    ("", "batch.metadata", True),
])
def test_round_bd_a_record_made_by_an_objects_class_is_not_read(tmp_path, top, record, fixable):
    src = _HANDED.replace("{top}", top).replace("{record}", record)
    site = _files_site(tmp_path, {"requirements.txt": "sglang-kernel==0.4.6\n"}, src)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("steps, fixable", [
    (("_coalesce(indices.numpy())",), False),
    (("host = indices.numpy()", "_drop(host, [1])"), False),
    (("_coalesce(indices[0].numpy())",), False),
    # safe twins: the helper handed a copy, or the tensor itself (its torch methods are read as before)
    (("_coalesce(indices.numpy().copy())",), True),
    (("plan = _coalesce(indices.cpu().numpy().copy())",), True),
])
def test_round_bd_a_host_view_handed_to_a_helper_may_be_written(tmp_path, steps, fixable):
    src = _INDICES.replace("{steps}", "".join(f"        {line}\n" for line in steps)) + _SLOTS
    site = _files_site(tmp_path, {}, src)
    assert (site.status is Status.FIXABLE) is fixable, site.reason
