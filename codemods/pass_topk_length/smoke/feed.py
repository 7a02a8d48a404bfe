"""Batches as a DSA engine sees them, run through a top-k emitter the way the
engine calls it, giving the helper's inputs: the indices after the page-table
transform and the engine's clipped seqlens.

Layouts follow sglang's DSA backend: decode and verify rows score a paged
`[rows, max_ctx]` block (positions of the request); extend rows score the
ragged kv of the whole batch, `row_starts` = the request's offset in it.
Scores past a row's visible length hold large garbage, as the indexer leaves
them (clean_logits=False): an emitter that reads past `lengths` picks them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, List, Optional

import torch

from .emitters import Emitters

GARBAGE = 50.0  # above every real score


@dataclass
class Batch:
    name: str
    mode: str  # decode | verify | extend
    prefix: List[int]  # kv tokens each request has before this step (-1: an idle decode row)
    extend: List[int]  # q rows of each request in this step
    heads: int
    ties: bool = False  # scores with many equal values
    pad_rows: int = 0  # rows appended by DP / graph padding (length 0)

    @property
    def visible(self) -> List[int]:
        """Per q row: kv positions it sees (causal), the engine's seqlens_expanded."""
        return [p + j + 1 for p, n in zip(self.prefix, self.extend) for j in range(n)]


@dataclass
class Engine:
    """The engine's own pieces the feed uses, or stand-ins that say so."""

    clip: Callable  # compute_dsa_seqlens(seqlens, topk)
    pad: Callable  # _pad_topk_indices(indices, rows)
    clip_from: str
    pad_from: str


def default_engine() -> Engine:
    return Engine(
        clip=lambda seqlens, topk: seqlens.clamp(max=topk),
        pad=lambda idx, rows: torch.cat([idx, idx.new_full((rows - idx.shape[0], idx.shape[1]), -1)]),
        clip_from="min(length, topk) (no engine function found)",
        pad_from="-1 rows (no engine function found)",
    )


@dataclass
class Fed:
    """One helper call's inputs, from a real emitter."""

    name: str  # <emitter>.<batch>
    emitter: str
    batch: Batch
    q: torch.Tensor  # [rows + pad, heads, 576] bf16
    kv: torch.Tensor  # [s_kv, 1, 576] bf16: the pool (paged) or the ragged kv
    indices: torch.Tensor  # [rows + pad, topk] int32 at the kernel boundary
    topk_length: torch.Tensor  # [rows + pad] int32: the engine's clipped seqlens, 0 on pad rows
    visible: torch.Tensor  # [rows + pad] int32 (0 on pad rows)
    sm_scale: float


def applies(emitter: str, batch: Batch) -> bool:
    """The ragged transform only serves extend (not verify / decode), as in the engine."""
    return emitter != "fast_topk_transform_ragged_fused" or batch.mode == "extend"


def feed(emitters: Emitters, emitter: str, batch: Batch, topk: int, engine: Engine, device: str, seed: int) -> Fed:
    gen = torch.Generator(device=device).manual_seed(seed)
    i32 = dict(dtype=torch.int32, device=device)
    seq = [max(0, p + n) for p, n in zip(batch.prefix, batch.extend)]
    bs, max_ctx = len(seq), max(1, max(seq))
    slots = sum(seq) + 8
    perm = torch.randperm(slots, generator=gen, device=device).to(torch.int32)
    table = torch.zeros((bs, max_ctx), **i32)  # req_to_token, page size 1
    at = 0
    for b, n in enumerate(seq):
        table[b, :n] = perm[at: at + n]
        at += n
    visible = torch.tensor(batch.visible, **i32)
    rows = visible.shape[0]
    row_req = torch.repeat_interleave(torch.arange(bs, device=device), torch.tensor(batch.extend, device=device))
    cu_k = torch.zeros(bs + 1, **i32)
    cu_k[1:] = torch.tensor(seq, **i32).cumsum(0)
    cu_q = torch.zeros(bs + 1, **i32)
    cu_q[1:] = torch.tensor(batch.extend, **i32).cumsum(0)

    ragged = batch.mode == "extend"
    width = int(cu_k[-1]) if ragged else max_ctx
    starts = cu_k[:-1][row_req] if ragged else torch.zeros(rows, **i32)
    real = torch.randint(0, 3, (rows, max(1, width)), generator=gen, device=device).float() if batch.ties else torch.randn((rows, max(1, width)), generator=gen, device=device)
    col = torch.arange(max(1, width), device=device)
    inside = (col[None, :] >= starts[:, None]) & (col[None, :] < (starts + visible)[:, None])
    score = torch.where(inside, real, torch.full_like(real, GARBAGE))
    if batch.ties:
        score[::3] = torch.where(inside[::3], 0.0, GARBAGE)  # every third row: all scores equal

    pool = (torch.randn((slots, 1, 576), generator=gen, device=device) / 4).to(torch.bfloat16)
    fn = emitters.wrapped(emitter)
    kv = pool
    if emitter == "fast_topk_v2":  # positions, then the engine's page-table transform (page size 1)
        pos = fn(score, visible, topk, row_starts=starts if ragged else None)
        slot = table[row_req[:, None], pos.clamp(min=0).long()]
        indices = slot.masked_fill(pos < 0, -1)
    elif emitter == "fast_topk_transform_fused":
        if ragged:
            indices = fn(score, visible, table, cu_q, topk, row_starts=starts)
        else:  # decode / verify: one page-table row per q row (verify repeats it)
            indices = fn(score, visible, table[row_req].contiguous(), torch.arange(rows + 1, **i32), topk)
    else:  # ragged kv: the batch's kv tokens concatenated, offsets = cu_seqlens_k per row
        flat = torch.cat([table[b, :n] for b, n in enumerate(seq)]) if slots > 8 else table.new_zeros(0)
        kv = pool[flat.long()]
        indices = fn(score, visible, cu_k[:-1][row_req].contiguous(), topk, row_starts=starts)

    padded = rows + batch.pad_rows
    indices = engine.pad(indices, padded)
    clipped = engine.clip(visible, topk)
    topk_length = torch.cat([clipped, clipped.new_zeros(batch.pad_rows)]).to(torch.int32)
    vis = torch.cat([visible, visible.new_zeros(batch.pad_rows)])
    q = (torch.randn((padded, batch.heads, 576), generator=gen, device=device) / 4).to(torch.bfloat16)
    return Fed(f"{emitter}.{batch.name}", emitter, batch, q, kv, indices.contiguous(), topk_length, vis, 576 ** -0.5)


def batches(topk: int, heads: int, small: bool) -> List[Batch]:
    """The length mixes the issue names, in units of the top-k width."""
    t = topk
    s = 160 if small else 4096
    out = [
        Batch("prefill_ramp", "extend", [0], [s], heads),
        Batch("extend_on_prefix", "extend", [t + t // 2, 2 * t], [t // 3, 32], heads),
        Batch("ragged_batch", "extend", [0, 0, t // 2, 0, 5 * t], [40, t + 5, 10, 1, 3], heads),
        Batch("all_full", "extend", [2 * t], [s // 4], heads),
        Batch("decode_mixed", "decode", [x - 1 for x in (2, 63, 64, 65, 200, t - 1, t, t + 1, 3 * t, 10 * t)], [1] * 10, heads),
        Batch("decode_len_0_1", "decode", [-1, 0, -1, 0, 1], [1] * 5, heads),
        Batch("decode_padded_rows", "decode", [4, t + 8, 63, 64], [1] * 4, heads, pad_rows=12),
        Batch("verify_rows", "verify", [3, 100, t - 2, t + 40], [4] * 4, heads),
        Batch("ties_decode", "decode", [x - 1 for x in (50, t + 7, 3 * t, 5 * t, 10 * t, 2)], [1] * 6, heads, ties=True),
        Batch("ties_extend", "extend", [t], [s // 2], heads, ties=True),
    ]
    for h in ((16,) if small else (16, 32)):
        if h < heads:
            out.append(Batch(f"heads_{h}_padded", "extend", [0], [s // 2], h))
    return out


def timing_batches(topk: int) -> List[Batch]:
    """Causal ramps (no prefix) and a batch whose rows are all full."""
    out = [Batch(f"ramp_{s}", "extend", [0], [s], 128) for s in (1024, 2048, 4096, 8192, 16384)]
    out.append(Batch("all_full_8192", "extend", [8192], [8192], 128))
    return out


def pick(uses: dict, emitters: Emitters, preferred: str = "fast_topk_transform_fused") -> Optional[str]:
    """The emitter for graph and timing runs: the preferred one if the engine uses it."""
    names = [n for n in (uses or emitters.fns) if n in emitters.fns]
    return preferred if preferred in names else (names[0] if names else None)
