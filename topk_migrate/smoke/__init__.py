"""`topk-migrate smoke`: run a migrated backend against the real kernel (or its
torch reference on the CPU) and report whether the rewrite kept the output
bitwise identical, stayed CUDA-graph safe, and how much time it saved.

Needs the `[smoke]` extra (torch). Nothing here imports torch until a smoke
actually runs, so the rest of the tool stays torch-free.
"""
from __future__ import annotations

from typing import Optional


def run_smoke(path: Optional[str] = None, function: Optional[str] = None, device: str = "cuda",
              json_path: Optional[str] = None, emitter_fault: Optional[str] = None) -> int:
    """Patch PATH (default: the bundled example), smoke it; 0 iff every check passed."""
    from .runner import run_smoke as _run

    return _run(path=path, function=function, device=device, json_path=json_path, emitter_fault=emitter_fault)
