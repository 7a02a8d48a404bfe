"""`topk-migrate smoke`: run a migrated backend against the real kernel (or its
torch reference on the CPU) and report whether the rewrite kept the output
bitwise identical, stayed CUDA-graph safe, and how much time it saved.

Needs the `[smoke]` extra (torch). Nothing here imports torch until a smoke
actually runs, so the rest of the tool stays torch-free.
"""
from __future__ import annotations
