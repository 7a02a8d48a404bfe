"""Which `flash_mla_sparse_fwd` the smoke runs, and how code under test gets it.

Backends import the kernel inside their helper (`from sgl_kernel.flash_mla
import flash_mla_sparse_fwd`), so the smoke puts a module of its own at
`sys.modules["sgl_kernel.flash_mla"]` whose function records each call and
forwards it to the real kernel (GPU) or to the torch reference (CPU).
"""
from __future__ import annotations

import contextlib
import importlib
import inspect
import sys
import types
from dataclasses import dataclass, field
from typing import Callable, List, Optional

import torch

from . import reference

MODULE = "sgl_kernel.flash_mla"


@dataclass
class KernelCall:
    indices: torch.Tensor  # [s_q, 1, topk], cloned at the call
    topk_length: Optional[torch.Tensor]  # cloned at the call
    result: tuple  # (out, max_logits, lse) as the kernel returned them
    s_kv: int


@dataclass
class Kernel:
    """The kernel entry point plus a log of its calls."""

    fn: Callable
    name: str  # e.g. "sglang-kernel==0.4.6" or "reference"
    pin: str  # what the codemod's kernel gate is told
    calls: List[KernelCall] = field(default_factory=list)
    record: bool = True
    inside: bool = False  # True while the kernel runs: op counters skip its ops

    def __call__(self, q, kv, indices, sm_scale, d_v=512, attn_sink=None, topk_length=None):
        self.inside = True
        try:
            result = self.fn(q, kv, indices, sm_scale, d_v, attn_sink, topk_length)
            if self.record:
                tl = None if topk_length is None else topk_length.clone()
                self.calls.append(KernelCall(indices.clone(), tl, tuple(result), kv.shape[0]))
        finally:
            self.inside = False
        return result

    def accepts_topk_length(self) -> bool:
        try:
            return "topk_length" in inspect.signature(self.fn).parameters
        except (TypeError, ValueError):
            return False

    def take_calls(self) -> List[KernelCall]:
        calls, self.calls = self.calls, []
        return calls


def load_kernel(device: str) -> Kernel:
    """The real kernel on cuda; the torch reference on cpu."""
    if device == "cpu":
        return Kernel(reference.flash_mla_sparse_fwd, "torch reference (cpu)", "sglang-kernel==0.4.6")
    mod = importlib.import_module(MODULE)  # raises ImportError with the kernel's own message
    err = getattr(mod, "_flashmla_import_error", None)
    if err is not None:
        raise ImportError(f"sgl_kernel.flash_mla is present but its extension failed to load: {err}")
    version = getattr(sys.modules.get("sgl_kernel"), "__version__", "unknown")
    return Kernel(mod.flash_mla_sparse_fwd, f"sglang-kernel=={version}", f"sglang-kernel=={version}")


@contextlib.contextmanager
def injected(kernel: Kernel):
    """Serve `from sgl_kernel.flash_mla import flash_mla_sparse_fwd` from `kernel`, and FlashMLA's own
    `from flash_mla import flash_mla_sparse_fwd` (the same interface, for a backend built on external FlashMLA)."""
    saved = {k: sys.modules.get(k) for k in ("sgl_kernel", MODULE, "flash_mla")}
    shim = types.ModuleType(MODULE)
    shim.flash_mla_sparse_fwd = kernel
    external = types.ModuleType("flash_mla")
    external.flash_mla_sparse_fwd = kernel
    sys.modules["flash_mla"] = external
    if saved["sgl_kernel"] is None:
        pkg = types.ModuleType("sgl_kernel")
        pkg.__path__ = []  # a namespace-like stand-in: nothing else resolves under it
        sys.modules["sgl_kernel"] = pkg
    sys.modules[MODULE] = shim
    try:
        yield kernel
    finally:
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v
