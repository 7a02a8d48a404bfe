"""The metadata contract `topk_length` relies on, as kernel inputs and as a check.

Contract: row i of the indices holds its topk_length[i] valid kv indices first
and -1 after; topk_length[i] = min(visible kv of row i, topk), 0 on pad rows.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import List, Optional

import torch

from .reference import B_TOPK


@dataclass
class Case:
    """Inputs of one helper call, following the contract."""

    name: str
    q: torch.Tensor  # [s_q, h, 576] bf16
    kv: torch.Tensor  # [s_kv, 1, 576] bf16
    indices: torch.Tensor  # [s_q, topk] int32, front-packed
    topk_length: torch.Tensor  # [s_q] int32
    sm_scale: float


_P1, _P2 = 10007, 10009  # primes: a stride coprime to every row's visible count


def front_packed_indices(lengths, visible, topk: int, gen: torch.Generator) -> torch.Tensor:
    """Row i: lengths[i] distinct slots spread over its first visible[i] kv
    slots, in random order, then -1 (what a sorted top-k emits)."""
    dev = gen.device
    lens = torch.as_tensor(lengths, dtype=torch.int64, device=dev)
    vis = torch.as_tensor(visible, dtype=torch.int64, device=dev).clamp(min=1)
    j = torch.arange(topk, device=dev)
    tail = j[None, :] >= lens[:, None]
    order = torch.rand((len(lengths), topk), generator=gen, device=dev).masked_fill(tail, 2.0).argsort(dim=1)
    stride = torch.where(vis % _P1 != 0, _P1, _P2)
    start = (torch.rand(len(lengths), generator=gen, device=dev) * vis).long()
    idx = (start[:, None] + order * stride[:, None]) % vis[:, None]
    return idx.masked_fill(tail, -1).to(torch.int32)


def make_case(name, lengths, visible, topk, s_kv, heads, device, seed=0, d_qk=576) -> Case:
    assert max(visible, default=0) <= s_kv and all(n <= min(v, topk) for n, v in zip(lengths, visible))
    gen = torch.Generator(device=device).manual_seed(seed)
    q = (torch.randn((len(lengths), heads, d_qk), generator=gen, device=device) / 4).to(torch.bfloat16)
    kv = (torch.randn((s_kv, 1, d_qk), generator=gen, device=device) / 4).to(torch.bfloat16)
    idx = front_packed_indices(lengths, visible, topk, gen)
    tl = torch.tensor(lengths, dtype=torch.int32, device=device)
    return Case(name, q, kv, idx, tl, d_qk ** -0.5)


@dataclass
class Violation:
    row: int
    why: str


def check_front_packed(indices: torch.Tensor, topk_length: Optional[torch.Tensor], s_kv: int) -> List[Violation]:
    """Rows breaking the contract: length outside [0, topk], an invalid index
    inside the valid prefix, or a valid index after it. With no topk_length,
    the valid count of each row is taken as its length (the row must still be
    a valid prefix then -1)."""
    idx = indices.reshape(indices.shape[0], -1).cpu().long()
    rows, topk = idx.shape
    valid = (idx >= 0) & (idx < s_kv)
    if topk_length is None:
        lengths = valid.sum(dim=1)
    else:
        lengths = topk_length.cpu().long()
        if lengths.shape != (rows,):
            return [Violation(-1, f"topk_length has shape {tuple(lengths.shape)}, indices have {rows} rows")]
    out = []
    pos = torch.arange(topk)
    in_prefix = pos[None, :] < lengths.clamp(0, topk)[:, None]
    bad_len = ((lengths < 0) | (lengths > topk)).nonzero().flatten().tolist()
    hole = (in_prefix & ~valid).any(dim=1).nonzero().flatten().tolist()
    tail = (~in_prefix & (idx != -1)).any(dim=1).nonzero().flatten().tolist()
    for r in bad_len:
        out.append(Violation(r, f"topk_length={int(lengths[r])} outside [0, {topk}]"))
    for r in hole:
        out.append(Violation(r, f"invalid index inside the first {int(lengths[r])} slots"))
    for r in tail:
        out.append(Violation(r, f"index other than -1 after slot {int(lengths[r])}"))
    return sorted(out, key=lambda v: v.row)


def check_distinct(indices: torch.Tensor) -> List[Violation]:
    """Rows that name one kv index twice (the kernel would weigh it twice)."""
    idx = indices.reshape(indices.shape[0], -1).cpu().long()
    ordered = idx.sort(dim=1).values
    twice = (ordered[:, 1:] == ordered[:, :-1]) & (ordered[:, 1:] >= 0)
    return [Violation(r, "the same kv index twice") for r in twice.any(dim=1).nonzero().flatten().tolist()]


def blocks(lengths: torch.Tensor) -> int:
    """64-wide top-k blocks the kernel walks for these row lengths."""
    return int(sum(math.ceil(int(n) / B_TOPK) for n in lengths.tolist()))


def ideal_ratio(topk_length: torch.Tensor, topk: int) -> float:
    """Unpatched work / patched work, in the kernel's top-k blocks."""
    full = topk_length.shape[0] * math.ceil(topk / B_TOPK)
    return full / max(1, blocks(topk_length))
