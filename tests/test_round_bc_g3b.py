"""Red-team round BC (bc3, helper G3b): a mapping read under a second key after its binding was traced for the first
(in the function, or in a helper's returns), a parameter left out of a call running with its default (a helper's, the
traced function's own, another file's override's), and the kernel launched in a nested def or lambda whose calls in
the enclosing function hand it other indices."""
import pytest

from test_callers import verdict
from topk_migrate.model import Status

_HEAD = ("import torch\nfrom sgl_kernel.flash_mla import flash_mla_sparse_fwd\n\n"
         "_WARMUP = torch.zeros(8, 1, 16, dtype=torch.int32)  # capture warmup: every slot is token 0\n\n\n"
         "class DSAMetadata:\n    dsa_cache_seqlens_int32: torch.Tensor\n\n\n"
         "def _layout(idx=_WARMUP, *, flat=None):\n    return idx.view(idx.shape[0], 1, -1)\n\n\n"
         "class Backend:\n    forward_metadata: DSAMetadata\n    warm = False\n\n"
         "    def _stage(self, idx, draft):\n        return {'topk': idx, 'draft': draft.flip(-1)}\n\n"
         "    def forward(self, q, kv, indices, scale, draft=None):\n        metadata = self.forward_metadata\n")


def _backend(body: str, signature: str = "") -> str:
    src = _HEAD + "".join(f"        {line}\n" for line in body.strip("\n").split("\n"))
    return src.replace("def forward(self, q, kv, indices, scale, draft=None)", signature) if signature else src


_KERNEL = "return flash_mla_sparse_fwd(q, kv, sel, scale)[0]"


@pytest.mark.parametrize("body, word", [
    # a mapping traced under one key, then looked up under another
    ("staged = {'topk': indices, 'draft': indices.flip(-1)}\n"
     "sel = staged['topk'] if draft is None else staged['draft']\n" + _KERNEL, "flip"),
    ("sel = self._stage(indices, draft)['topk'] if draft is None else self._stage(indices, draft)['draft']\n"
     + _KERNEL, "flip"),
    # a parameter left out runs with its default
    ("sel = _layout() if self.warm else _layout(indices)\n" + _KERNEL, "default"),
    # the kernel in a nested def or lambda, called with other indices, or read as a value
    ("def attend(sel):\n    " + _KERNEL + "\nreturn attend(indices.flip(-1) if self.warm else indices)", "flip"),
    ("def attend(sel):\n    " + _KERNEL + "\nreturn attend(sel=indices.roll(1, -1))", "roll"),
    ("attend = lambda sel: flash_mla_sparse_fwd(q, kv, sel, scale)[0]\nreturn attend(indices.roll(1, -1))", "roll"),
    ("return (lambda sel: flash_mla_sparse_fwd(q, kv, sel, scale)[0])(indices.roll(1, -1))", "roll"),
    ("def attend(sel=_WARMUP):\n    " + _KERNEL + "\nreturn attend() if self.warm else attend(indices)", "default"),
    ("def attend(sel):\n    " + _KERNEL + "\nreturn torch.compile(attend)(indices.flip(-1))", "value"),
    ("def attend(sel):\n    " + _KERNEL + "\nrun = attend\nreturn run(indices.flip(-1))", "value"),
    ("def outer(x):\n    def attend(sel):\n        " + _KERNEL + "\n    return attend(x)\nreturn outer(indices.flip(-1))",
     "flip"),
])
def test_round_bc_g3b_indices_from_a_second_key_a_default_or_a_closure_call_are_traced(tmp_path, body, word):
    site = verdict(tmp_path, _backend(body))
    assert site.status is Status.MANUAL and word in site.reason, site.reason


@pytest.mark.parametrize("body", [
    "staged = {'topk': indices, 'lengths': scale}\nsel = staged['topk'] if draft is None else staged['topk']\n" + _KERNEL,
    "sel = self._stage(indices, draft)['topk'] if draft is None else self._stage(indices, indices)['topk']\n" + _KERNEL,
    "sel = _layout(indices)\n" + _KERNEL,
    "sel = _layout(idx=indices, flat=True)\n" + _KERNEL,
    "def attend(sel):\n    " + _KERNEL + "\nreturn attend(indices)",
    "attend = lambda sel: flash_mla_sparse_fwd(q, kv, sel, scale)[0]\nreturn attend(indices)",
    "def attend(sel):\n    " + _KERNEL + "\nreturn attend(indices) if self.warm else attend(indices.contiguous())",
    "def attend(sel=None):\n    " + _KERNEL + "\nreturn attend(sel=indices)",
    "def outer(x):\n    def attend(sel):\n        " + _KERNEL + "\n    return attend(x)\nreturn outer(indices)",
])
def test_round_bc_g3b_safe_twins_stay_fixable(tmp_path, body):
    site = verdict(tmp_path, _backend(body))
    assert site.status is Status.FIXABLE, site.reason


@pytest.mark.parametrize("signature, fixable", [
    ("def forward(self, q, kv, scale, indices=_WARMUP)", False),
    ("def forward(self, q, kv, scale, *, indices=_WARMUP)", False),
    ("def forward(self, q, kv, scale, indices=None)", True),
])
def test_round_bc_g3b_the_traced_functions_own_default_is_traced(tmp_path, signature, fixable):
    site = verdict(tmp_path, _backend("sel = indices\n" + _KERNEL, signature))
    assert (site.status is Status.FIXABLE) is fixable, site.reason
    assert fixable or "default" in site.reason, site.reason


_OVERRIDE = ("import torch\nfrom backend import Backend\n\n_DUMMY = torch.zeros(8, 1, 16, dtype=torch.int32)\n\n\n"
             "class Warm(Backend):\n    def forward(self, q, kv, indices{default}, scale=1.0, draft=None):\n"
             "        return super().forward(q, kv, indices, scale, draft)\n\n\n"
             "def warmup(q, kv):\n    return Warm().forward(q, kv)\n\n\n"
             "def step(q, kv, indices, scale):\n    return Warm().forward(q, kv, indices, scale)\n")


@pytest.mark.parametrize("default, fixable", [("=_DUMMY", False), ("=None", True), ("", True)])
def test_round_bc_g3b_an_override_handing_on_its_default_is_refused(tmp_path, default, fixable):
    """callers._default_runs: another file's override of the traced name hands `super().forward` its parameter,
    whose tensor default a call leaving it out runs with (the walk read it as an override, never its default)."""
    site = verdict(tmp_path, _backend("sel = indices\n" + _KERNEL), others=[("warm.py", _OVERRIDE.format(default=default))])
    assert (site.status is Status.FIXABLE) is fixable, site.reason
    assert fixable or "default" in site.reason, site.reason
