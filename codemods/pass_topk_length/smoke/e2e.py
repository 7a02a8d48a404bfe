"""Drive a runnable backend (the bundled example's API) through its own paths:
metadata, top-k emitter, extend / decode / verify, and CUDA-graph replay.

A module opts in by naming its backend class in `TOPK_MIGRATE_SMOKE`; the class
and the module's `ForwardMode`, `ForwardBatch` and `AttentionLayer` follow
`fixtures/examples/dsa_backend.py`.
"""
from __future__ import annotations

import ast
import sys
import types
from dataclasses import dataclass
from typing import List, Optional

import torch

MARKER = "TOPK_MIGRATE_SMOKE"


def is_runnable(source: str) -> bool:
    """True when the file opts in to the end-to-end driver."""
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == MARKER for t in node.targets):
            return True
    return False


def load_module(source: str, filename: str, tag: str) -> types.ModuleType:
    """Execute a backend's source as a fresh module (one per version)."""
    name = f"topk_smoke_{tag}"
    mod = types.ModuleType(name)
    mod.__file__ = filename
    sys.modules[name] = mod  # dataclasses look their module up here
    try:
        exec(compile(source, filename, "exec", dont_inherit=True), mod.__dict__)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return mod


def unload(mod: types.ModuleType) -> None:
    sys.modules.pop(mod.__name__, None)


@dataclass
class Scenario:
    name: str
    mode: str  # EXTEND | DECODE | TARGET_VERIFY
    seq_lens: List[int]
    extend_lens: List[int]
    heads: int
    padded_rows: Optional[int] = None


def scenarios(topk: int, heads: int, small: bool) -> List[Scenario]:
    t = topk
    ramp = [160, 40] if small else [3000, 700]
    few = 16 if heads > 16 else heads
    return [
        Scenario("e2e_extend_causal_ramp", "EXTEND", ramp, ramp, heads),
        Scenario("e2e_extend_prefix_all_full", "EXTEND", [t + 200, 2 * t], [40, 24], heads),
        Scenario("e2e_extend_dp_padded_rows", "EXTEND", [50, t + 10], [50, 8], heads, padded_rows=74),
        Scenario("e2e_decode_short_ctx", "DECODE", [1, 5, 63, 64, 65, 200, t, 3 * t], [1] * 8, heads),
        Scenario("e2e_decode_graph_padded_rows", "DECODE", [7, 900, t + 1], [1] * 3, heads, padded_rows=8),
        Scenario("e2e_verify_spec_rows", "TARGET_VERIFY", [10, 130, t + 3], [4, 4, 4], heads),
        Scenario("e2e_decode_heads_padded", "DECODE", [3, 77, t + 5, 640], [1] * 4, few),
        Scenario("e2e_extend_heads_padded", "EXTEND", [120, t + 30], [120, 30], max(few, 32) if heads > 32 else few),
    ]


@dataclass
class Inputs:
    q: torch.Tensor  # [padded rows, heads * 576] bf16
    scores: torch.Tensor  # [real rows, max_ctx] f32: what an indexer would score
    kv_pool: torch.Tensor  # [slots, 1, 576] bf16
    req_to_token: torch.Tensor  # [bs, max_ctx] int32


def make_inputs(sc: Scenario, device: str, seed: int) -> Inputs:
    gen = torch.Generator(device=device).manual_seed(seed)
    rows = sum(sc.extend_lens)
    padded = sc.padded_rows or rows
    max_ctx = max(1, max(sc.seq_lens))
    slots = sum(sc.seq_lens) + 8
    perm = torch.randperm(slots, generator=gen, device=device).to(torch.int32)
    table = torch.zeros((len(sc.seq_lens), max_ctx), dtype=torch.int32, device=device)
    at = 0
    for b, n in enumerate(sc.seq_lens):
        table[b, :n] = perm[at : at + n]
        at += n
    q = (torch.randn((padded, sc.heads * 576), generator=gen, device=device) / 4).to(torch.bfloat16)
    scores = torch.randn((rows, max_ctx), generator=gen, device=device)
    kv = (torch.randn((slots, 1, 576), generator=gen, device=device) / 4).to(torch.bfloat16)
    return Inputs(q, scores, kv, table)


class Driver:
    """One backend version (module) driven through its forward paths."""

    def __init__(self, mod: types.ModuleType, topk: int, device: str, sm_major: int):
        self.mod, self.topk, self.device, self.sm_major = mod, topk, device, sm_major
        self.cls = getattr(mod, getattr(mod, MARKER))

    def backend(self, heads: int, kv_pool: torch.Tensor):
        b = self.cls(heads, index_topk=self.topk, device=self.device, device_sm_major=self.sm_major)
        b.kv_pool = kv_pool
        return b

    def batch(self, sc: Scenario, inp: Inputs):
        mode = getattr(self.mod.ForwardMode, sc.mode)
        return self.mod.ForwardBatch(mode, list(sc.seq_lens), list(sc.extend_lens), inp.req_to_token, sc.padded_rows)

    def layer(self, heads: int):
        return self.mod.AttentionLayer(num_heads=heads, scaling=576 ** -0.5)

    def step(self, backend, sc: Scenario, inp: Inputs, batch=None):
        """The hot path: indexer top-k, then the mode's forward."""
        batch = batch or self.batch(sc, inp)
        topk = backend.emit_topk(inp.scores)
        fwd = backend.forward_decode if sc.mode == "DECODE" else backend.forward_extend
        return fwd(inp.q, self.layer(sc.heads), batch, topk)

    def run(self, sc: Scenario, inp: Inputs):
        """Fresh backend, metadata, then one step; returns (backend, out)."""
        backend = self.backend(sc.heads, inp.kv_pool)
        backend.init_forward_metadata(self.batch(sc, inp))
        return backend, self.step(backend, sc, inp)
