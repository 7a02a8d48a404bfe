"""Sources for the narrowing tests (tests/test_audit_narrow.py) and the quick classifier's
(tests/test_quick.py): both hold audit's shortcut to the engine's verdicts on the same made-up edge cases
and the same fixture files, with the same reference (`verdicts`: what check reports)."""
from helpers import KERNEL, ROOT
from topk_migrate import narrow
from topk_migrate.api import migrate_source
from topk_migrate.discover import may_hold_site
from topk_migrate.model import InputError

HEAD = "import torch\nfrom typing import Optional\nfrom sgl_kernel import flash_mla_sparse_fwd\n"
CASES = {
    "helper route through callers": HEAD + '''
class Backend:
    def _sparse(self, q, kv, idx):
        out, _, _ = flash_mla_sparse_fwd(q, kv, idx, 1.0)
        return out

    def forward_extend(self, q, kv, idx, metadata):
        return self._sparse(q, kv, idx)

    def forward_decode(self, q, kv, idx, seq_lens):
        x = self._sparse(q, kv, idx)
        return x

    def unrelated(self, a, metadata):
        import numpy as np
        return np.zeros(a) + metadata.dsa_cache_seqlens_int32
''',
    "an override that takes the parameter": HEAD + '''
class Backend:
    def _sparse(self, q, kv, idx):
        return flash_mla_sparse_fwd(q, kv, idx, 1.0)

    def forward(self, q, kv, idx, metadata):
        return self._sparse(q, kv, idx) + metadata.dsa_cache_seqlens_int32


class Child(Backend):
    def _sparse(self, q, kv, idx, topk_length=None):
        return q


class Other:
    def run(self, q):
        return q
''',
    "aliases and module spellings": '''
import sgl_kernel.flash_mla as fmla
from flash_mla import flash_mla_sparse_fwd as fwd
from vllm.attention import (
    flash_mla_sparse_prefill  # the wrapper
    as prefill,
)

def a(q, kv, i, metadata):
    return fwd(q, kv, i, 1.0)

def b(q, kv, i, metadata):
    return fmla.flash_mla_sparse_fwd(q, kv, i, 1.0, topk_length=metadata.dsa_cache_seqlens_int32)

def c(q, kv, i):
    return prefill(q, kv, i)

def d(x):
    """Mentions flash_mla_sparse_fwd in a docstring only."""
    return x
''',
    "op level and module level": '''
import torch
out = torch.ops.sgl_kernel.sparse_prefill_fwd.default(q, kv, idx, 1.0)
def g(q):
    return torch.ops.sgl_kernel.sparse_prefill_fwd(q, 1, 2, 3, topk_length=None)
''',
    "compliant calls at several depths, with odd neighbours": HEAD + '''
x = 1; y = 2


@decorator(flash=True)
async def top(q, kv, idx, m):
    """Docstring with "quotes" and a backslash \\n and r\'\'\'raw\'\'\'."""
    if q is not None:
        with torch.no_grad():
            out = flash_mla_sparse_fwd(q, kv, idx, 1.0, topk_length=m.lens)
            out2 = flash_mla_sparse_fwd(q, kv, idx, 1.0, topk_length=m.lens)
        return out
    for i in range(3):
        o = flash_mla_sparse_fwd(q, kv, idx, 1.0, topk_length=None); z = 1

    return flash_mla_sparse_fwd(
        q, kv, idx, 1.0,
        topk_length=m.lens,  # trailing comment
    )


class K:
    class Inner:
        def m(self, q):
            from sgl_kernel import flash_mla_sparse_fwd as other

            return other(q, topk_length=q)

    def one_liner(self): return 1


def tabs(self):
\tif self:
\t\treturn flash_mla_sparse_fwd(self, topk_length=self)
''',
    "compliant calls whose blocks collide": HEAD + '''
def f(q, kv, idx, m):
    for i in range(3):
        o = flash_mla_sparse_fwd(q, kv, idx, 1.0, topk_length=None)
    return flash_mla_sparse_fwd(q, kv, idx, 1.0, topk_length=m.lens)


def g(q):
    return q
''',
    "calls whose context matters next to ones that pass": HEAD + '''
def first_binding_wins():
    import torch as torch
    from other import Optional


def helper(q, kv, idx):
    return flash_mla_sparse_fwd(q, kv, idx, 1.0)  # topk-migrate: ignore rows differ


def ok(q, kv, idx, metadata):
    return flash_mla_sparse_fwd(q, kv, idx, 1.0, topk_length=metadata.nsa_cache_seqlens_int32)


def caller(q, kv, idx, metadata):
    if True: import os
    return helper(q, kv, idx)


@flash_mla_sparse_fwd
def decorated(q):
    return q


def default_arg(q, f=flash_mla_sparse_fwd(1, topk_length=2)):
    return q
''',
    "metadata field named only in a stubbed function": HEAD + '''
def uses(q, kv, idx, metadata):
    return flash_mla_sparse_fwd(q, kv, idx, 1.0)


def elsewhere(metadata):
    return metadata.dsa_cache_seqlens_int32
''',
    "a fallback that rebinds the name, the call without topk_length": '''
try:
    from sgl_kernel import flash_mla_sparse_fwd
except ImportError:
    flash_mla_sparse_fwd = None


def f(q, kv, i):
    return flash_mla_sparse_fwd(q, kv, i, 1.0)


def g(x):
    return x
''',
    "the kernel stored in an attribute, and rebound from it": HEAD + '''
class B:
    def __init__(self):
        self.flash_mla_sparse_fwd = flash_mla_sparse_fwd

    def f(self, q, kv, i, m):
        flash_mla_sparse_fwd = self.flash_mla_sparse_fwd
        return flash_mla_sparse_fwd(q, kv, i, 1.0, topk_length=m.lens)
''',
    "docstring mention only": '"""Wraps flash_mla_sparse_fwd; see sparse_prefill_fwd."""\nimport torch\n\ndef f(x):\n    return x\n',
    "syntax error": "def f(:\n    flash_mla_sparse_fwd(q)\n",
    "windows newlines": HEAD.replace("\n", "\r\n") + "def f(q):\r\n    return flash_mla_sparse_fwd(q, 1, 2, 3)\r\n",
}


def verdicts(source, path, kernel=KERNEL, small=None):
    """check's sites for `source` (as dicts, or the InputError's text); `small`: classify it instead (NOTHING: none)."""
    try:
        if small == narrow.NOTHING:
            return []
        return [s.to_dict() for s in migrate_source(source if small is None else small, path, kernel=kernel).sites]
    except InputError as e:
        return f"InputError: {e}"


# The fixture files that may hold a kernel call site.
FIXTURES = sorted(p for p in (ROOT / "fixtures").rglob("*.py") if may_hold_site(p.read_bytes()))
