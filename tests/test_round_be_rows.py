"""Red-team round BE (be2, be3; fix G5): the kernel launched in a closure reading names its enclosing def binds (a
mask, a pad: their writes are looked for in the closure), a mapping the indices are looked up in filled by a method
(`setdefault`, `update`, `|=`), and the kernel called in a class defined inside a def (its methods' calls are not
traced) refuse (rows._free_read, _enclosing_binding, _mapping_fill, _nested_class)."""
import pytest

from test_soundness import _files_site
from topk_migrate.model import Status

_SRC = '''"""Fork DSA backend; metadata.dsa_cache_seqlens_int32 holds seqlens clipped to topk."""
import torch
from sgl_kernel.flash_mla import flash_mla_sparse_fwd


class Backend:
    def __init__(self, metadata):
        self.forward_metadata = metadata
        self.page_offset = 0

    def forward(self, q, kv, indices, scale, **kwargs):
        metadata = self.forward_metadata
{body}
'''


def _body(*lines: str) -> str:
    return "\n".join("        " + line for line in lines)


_KERNEL = "flash_mla_sparse_fwd(q=q, kv=kv, indices={}, sm_scale=scale)[0]"


@pytest.mark.parametrize("body, fixable, word", [
    # a closure's mask bound after the def, from the indices it is not handed (`launch(indices.flip(-1))`)
    (_body("def launch(indices):",
           "    return " + _KERNEL.format("torch.where(valid, indices + self.page_offset, -1)"),
           "valid = indices >= 0",
           "return launch(indices.flip(-1))"), False, "`valid`"),
    # a closure's mask narrowed in place in the enclosing def
    (_body("valid = indices >= 0",
           "valid.logical_and_(indices >= 20)",
           "def launch():",
           "    return " + _KERNEL.format("torch.where(valid, indices, -1)"),
           "return launch()"), False, "free name"),
    # a closure's pad written in place in the enclosing def (an attention sink)
    (_body("pad = indices.new_full((indices.shape[0], 1, 8), -1)",
           "pad[:, :, 0] = 0",
           "def launch():",
           "    return " + _KERNEL.format("torch.cat([indices, pad], dim=-1)"),
           "return launch()"), False, "free name"),
    # a lambda's indices joined with the enclosing def's pad
    (_body("pad = torch.full_like(indices, -1)",
           "launch = lambda: " + _KERNEL.format("torch.cat([indices, pad], dim=-1)"),
           "return launch()"), False, "free name"),
    # a mapping looked up by key, filled by `setdefault` or `update` with the key looked up
    (_body('kwargs.setdefault("topk_indices", torch.zeros(q.shape[0], 1, 16, dtype=torch.int32))',
           "return " + _KERNEL.format('kwargs["topk_indices"]')), False, "setdefault"),
    (_body('staged = {"topk_indices": indices, "scale": scale}',
           "staged.update(topk_indices=torch.full_like(indices, -1))",
           "return " + _KERNEL.format("staged['topk_indices']")), False, "update"),
    # the kernel in a method of a class defined in the def, or an autograd Function's forward there
    (_body("class _Launch:",
           "    def run(self, sel):",
           "        return " + _KERNEL.format("sel"),
           "return _Launch().run(indices.sort(dim=-1).values)"), False, "_Launch"),
    (_body("class _Attn(torch.autograd.Function):",
           "    @staticmethod",
           "    def forward(ctx, sel):",
           "        return " + _KERNEL.format("sel"),
           "return _Attn.apply(torch.sort(indices, dim=-1).values)"), False, "_Attn"),
    # twins: the closure handed the indices as a parameter; a fill of another literal key; the
    # kernel launched from the method itself
    (_body("def launch(sel):",
           "    return " + _KERNEL.format("sel"),
           "return launch(indices)"), True, ""),
    (_body('staged = {"topk_indices": indices}',
           "staged.update(scale=1.0)",
           'staged.setdefault("other", 1)',
           "return " + _KERNEL.format("staged['topk_indices']")), True, ""),
    (_body("valid = indices >= 0",
           "return " + _KERNEL.format("torch.where(valid, indices + self.page_offset, -1)")), True, ""),
])
def test_round_be_closures_mappings_and_local_classes(tmp_path, body, fixable, word):
    src = _SRC.replace("{body}", body)
    site = _files_site(tmp_path, {"requirements.txt": "sglang-kernel==0.4.6\n"}, src)
    assert (site.status is Status.FIXABLE) is fixable, site.reason
    assert fixable or word in site.reason, site.reason
