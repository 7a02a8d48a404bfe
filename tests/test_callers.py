"""docs/soundness.md `callers`: every call of the function the rows and indices come from hands them on as its
caller was handed them (round J1: a model layer that sorts its tokens, a subclass's new method calling
`super().forward(q[order], ...)`, an async step, a lookup by name), in this module and in every other file."""
import textwrap

import pytest

from topk_migrate.api import migrate_source

KERNEL = "sglang-kernel==0.4.6"
BACKEND = textwrap.dedent("""\
    import torch
    from sgl_kernel.flash_mla import flash_mla_sparse_fwd


    class DSAMetadata:
        dsa_cache_seqlens_int32: torch.Tensor


    class Backend:
        forward_metadata: DSAMetadata

        def forward(self, q, kv, indices, scale):
            metadata = self.forward_metadata
            return flash_mla_sparse_fwd(q, kv, indices, scale)[0]
    """)


def verdict(tmp_path, backend=BACKEND, others=()):
    (tmp_path / ".git").mkdir()
    for name, text in others:
        (tmp_path / name).write_text(text)
    (tmp_path / "backend.py").write_text(backend)
    (site,) = migrate_source(backend, str(tmp_path / "backend.py"), kernel=KERNEL).sites
    return site


LAYER = """\
class Layer:
    def __init__(self, backend):
        self.backend = backend

    {kind}def run(self, q, kv, indices, scale):
        {body}
"""


@pytest.mark.parametrize("body,fixable", [
    ("return self.backend.forward(q, kv, indices, scale)", True),
    ("n = q.shape[0]\n        return self.backend.forward(q, kv, indices=indices, scale=scale)", True),
    ("order = indices.argsort(0)\n        return self.backend.forward(q[order], kv, indices[order], scale)", False),
    ("return self.backend.forward(q.flip(0), kv, indices.flip(0), scale)", False),
    ("indices.masked_fill_(indices > 9, -1)\n        return self.backend.forward(q, kv, indices, scale)", False),
    ("self.sort_rows(q, indices)\n        return self.backend.forward(q, kv, indices, scale)", False),
    # a conversion under its own name keeps the rows (round AB); any other rebinding is not read
    ("q = q.contiguous()\n        return self.backend.forward(q, kv, indices, scale)", True),
    ("q = q.roll(1, 0)\n        return self.backend.forward(q, kv, indices, scale)", False),  # bound again
    ("return getattr(self.backend, 'forward')(q[::-1], kv, indices[::-1], scale)", False),  # round O: by name
    ("fwd = self.backend.forward\n        return fwd(q[::-1], kv, indices[::-1], scale)", False),
    # a binding that is not a store (an import, a def) gives the name another object
    ("try:\n            from .staging import reordered as indices\n        except ImportError:\n            pass\n"
     "        return self.backend.forward(q, kv, indices, scale)", False),
    ("if scale is None:\n            def indices():\n                pass\n"
     "        return self.backend.forward(q, kv, indices, scale)", False),
])
def test_another_files_call_hands_on_what_it_was_handed(tmp_path, body, fixable):
    site = verdict(tmp_path, others=[("layer.py", LAYER.format(kind="", body=body))])
    assert (site.status.value == "fixable") is fixable, site.reason
    assert fixable or "layer.py" in site.reason, site.reason


@pytest.mark.parametrize("body,fixable", [
    ("return self.backend.forward(q, kv, batch.topk_indices, scale)", True),
    ("n = batch.topk_indices.shape[0]\n        return self.backend.forward(q, kv, batch.topk_indices, scale)", True),
    # round R: a method of the holder the indices are read off may give them another tensor first
    ("batch.coalesce_topk()\n        return self.backend.forward(q, kv, batch.topk_indices, scale)", False),
])
def test_a_caller_reading_the_indices_off_a_holder_calls_none_of_its_methods(tmp_path, body, fixable):
    layer = LAYER.replace("indices, scale", "batch, scale").format(kind="", body=body)
    site = verdict(tmp_path, others=[("layer.py", layer)])
    assert (site.status.value == "fixable") is fixable, site.reason


@pytest.mark.parametrize("call,fixable", [("attend(q, kv, indices, scale, md)", True),
                                          ("attend(q[::-1], kv, indices[::-1], scale, md)", False)])
def test_a_call_through_an_import_alias_is_a_caller(tmp_path, call, fixable):
    """Round R's u_other_file_import_alias_caller: `from backend import attend as dsa_attend`."""
    backend = BACKEND.split("class Backend")[0] + (
        "def attend(q, kv, indices, scale, metadata: DSAMetadata):\n    return flash_mla_sparse_fwd(q, kv, indices, scale)[0]\n")
    runner = f"from backend import attend as dsa_attend\n\n\ndef run(q, kv, indices, scale, md):\n    return dsa_{call}\n"
    site = verdict(tmp_path, backend=backend, others=[("runner.py", runner)])
    assert (site.status.value == "fixable") is fixable, site.reason


@pytest.mark.parametrize("call,fixable", [("indices=indices", True), ("indices=indices.flip(0)", False)])
def test_indices_in_kwargs_are_what_the_callers_hand_it_by_keyword(tmp_path, call, fixable):
    """Round S: the indices read off `**kwargs` (sglang's shape) are each extra keyword a caller hands."""
    backend = BACKEND.replace("def forward(self, q, kv, indices, scale):", "def forward(self, q, kv, scale, **kwargs):") \
        .replace("flash_mla_sparse_fwd(q, kv, indices, scale)", "flash_mla_sparse_fwd(q, kv, kwargs['indices'], scale)")
    layer = LAYER.format(kind="", body=f"return self.backend.forward(q, kv, scale, {call})")
    site = verdict(tmp_path, backend=backend, others=[("layer.py", layer)])
    assert (site.status.value == "fixable") is fixable, site.reason


def test_an_async_caller_is_a_caller(tmp_path):
    body = "return await self.backend.forward(q[::-1], kv, indices[::-1], scale)"
    site = verdict(tmp_path, others=[("layer.py", LAYER.format(kind="async ", body=body))])
    assert site.status.value == "manual" and "layer.py:6" in site.reason, site.reason


def test_a_method_of_that_name_on_another_class_is_not_a_caller(tmp_path):
    other = "class Other:\n    def forward(self, x):\n        return x\n\n    def step(self, x):\n        return self.forward(x[::-1])\n"
    assert verdict(tmp_path, others=[("other.py", other)]).status.value == "fixable"


@pytest.mark.parametrize("extra,fixable", [
    ("    def run(self, q, kv, indices, scale):\n        return self.forward(q, kv, indices, scale)\n", True),
    ("    def run(self, q, kv, indices, scale):\n        return self.forward(q.view(q.shape[0], -1, q.shape[-1]), kv, "
     "indices.unsqueeze(1).squeeze(1), scale)\n", True),  # rows kept: traced as the call's own
    ("    def run(self, q, kv, indices, scale):\n        order = indices[:, 0, 0].argsort()\n"
     "        return super().forward(q[order], kv, indices[order], scale)\n", False),  # round J1
])
def test_this_modules_calls_are_traced_as_the_calls_own(tmp_path, extra, fixable):
    backend = BACKEND + "\n\nclass Balanced(Backend):\n" + extra
    site = verdict(tmp_path, backend=backend)
    assert (site.status.value == "fixable") is fixable, site.reason


@pytest.mark.parametrize("call,fixable", [
    # round P: a method read off the class, however the class is reached: the instance comes first
    ("import backend\n\n\ndef run(b, q, kv, idx, s):\n    return backend.Backend.forward(b, q, kv, idx, s)\n", True),
    ("import backend\n\n\ndef run(b, q, kv, idx, s):\n    return backend.Backend.forward(b, q, kv, idx.flip(0), s)\n", False),
    ("from backend import Backend as _impl\n\n\ndef run(b, q, kv, idx, s):\n"
     "    return _impl.forward(b, q, kv, idx.flip(0), s)\n", False),
    # a dispatch sibling handed the rows first may change them
    ("def run(b, q, kv, idx, s):\n    b.forward_idle(q, kv, idx, s)\n    return b.forward(q, kv, idx, s)\n", False),
    # one branch that always returns, then the other: sglang's hybrid backends
    ("def run(b, other, q, kv, idx, s):\n    if other is not None:\n        return other.forward(q, kv, idx, s)\n"
     "    return b.forward(q, kv, idx, s)\n", True),
])
def test_calls_through_a_class_or_a_sibling(tmp_path, call, fixable):
    site = verdict(tmp_path, others=[("runner.py", call)])
    assert (site.status.value == "fixable") is fixable, site.reason


def test_a_forks_own_dispatch_is_read_as_a_caller(tmp_path):
    """Round P: a fork's copy of base_attn_backend.py whose `AttentionBackend.forward` sorts the rows first."""
    base = ("class AttentionBackend:\n    def forward(self, q, kv, indices, scale, **kwargs):\n"
            "        order = indices[:, 0, 0].argsort()\n"
            "        return self.forward_decode(q[order], kv, indices[order], scale, **kwargs)\n")
    backend = BACKEND.replace("class Backend:", "from base_attn_backend import AttentionBackend\n\n\n"
                              "class Backend(AttentionBackend):").replace("def forward(", "def forward_decode(")
    site = verdict(tmp_path, backend=backend, others=[("base_attn_backend.py", base)])
    assert site.status.value == "manual" and "base_attn_backend.py" in site.reason, site.reason
    fine = base.replace("        order = indices[:, 0, 0].argsort()\n", "").replace("[order]", "")
    assert verdict(tmp_path / "x" if (tmp_path / "x").mkdir() is None else None, backend=backend,
                   others=[("base_attn_backend.py", fine)]).status.value == "fixable"
