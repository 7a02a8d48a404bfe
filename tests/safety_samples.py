"""Shared inputs and helpers for the safety tests (CLI, interrupt, fuzz)."""
import hashlib
import os
import stat

from helpers import run_cli

KERNEL = "sglang-kernel==0.4.5"  # a release whose flash_mla_sparse_fwd takes topk_length

# Two fixable sites: a direct call with metadata in scope, and a helper whose
# caller holds the metadata (the helper gains a parameter and a row guard).
FIXABLE = '''\
import torch
from sgl_kernel import flash_mla_sparse_fwd

# metadata.dsa_cache_seqlens_int32: the clipped seqlens the kernel takes


def forward(q, kv, indices, metadata, scale):
    o, _, _ = flash_mla_sparse_fwd(q, kv, indices, scale)
    return o


class Backend:
    def _fwd(self, q, kv, indices, scale):
        o, _, _ = flash_mla_sparse_fwd(
            q=q,
            kv=kv,
            indices=indices,
            sm_scale=scale,
        )
        return o

    def forward_extend(self, q, kv, indices, metadata, scale):
        return self._fwd(q, kv, indices, scale)
'''

# Nothing to do here: compliant, so apply must leave it byte-identical.
COMPLIANT = '''\
from sgl_kernel import flash_mla_sparse_fwd


def forward(q, kv, indices, lens, scale):
    return flash_mla_sparse_fwd(q, kv, indices, scale, topk_length=lens)
'''


cli = run_cli  # `python -m topk_migrate ARGS`, text output, 300 s


def snapshot(root):
    """relpath -> (sha256, mode) of every file and symlink under root (links not followed)."""
    out = {}
    for d, dirs, files in os.walk(root):
        for name in files + [x for x in dirs if os.path.islink(os.path.join(d, x))]:
            p = os.path.join(d, name)
            rel = os.path.relpath(p, root)
            st = os.lstat(p)
            if os.path.islink(p):
                out[rel] = ("link:" + os.readlink(p), 0)
                continue
            if not stat.S_ISREG(st.st_mode):  # a FIFO must not be opened
                out[rel] = (f"special:{stat.S_IFMT(st.st_mode)}", st.st_mode & 0o7777)
                continue
            try:
                with open(p, "rb") as f:
                    h = hashlib.sha256(f.read()).hexdigest()
            except OSError as e:
                h = f"unreadable:{e.errno}"
            out[rel] = (h, st.st_mode & 0o7777)
    return out


def temp_files(root):
    return sorted(
        os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs if f.startswith(".topk-migrate-")
    )
