"""`smoke --lengths derived`: what the derived fix is held to, and what it is not.

The derived fix (codemods/pass_topk_length/derived.py) passes each row a length computed at the kernel
call from the indices it hands the kernel, from MIN_ROWS rows (None below). So the smoke checks, per
kernel call, that the kernel reads exactly the top-k blocks that hold a valid slot (the length covers
the last valid slot and ends in its block: found here from the flipped row, not from the rewrite's
expression, so a wrong expression shows), that the results stay bitwise identical, and that they still do when
the emitters' output is scattered (valid entries among -1, not front-packed): the layout the reference
fix cannot stand and the derived one must. The checks that hold the reference shape to its contract
(front-packing, clipped seqlens, the helper's new parameter) have nothing to check here: NOT_APPLICABLE.
"""
from __future__ import annotations

import contextlib
import dataclasses
from typing import Iterator, List, Optional, Tuple

import torch

from .. import derived  # the rule's derived rewrite: it reads derived.MIN_ROWS when it writes
from . import contract, e2e, feed
from .emitters import scatter_rows
from .reference import B_TOPK

# The cpu's shapes are 5..200 rows: MIN_ROWS 64 puts calls on both sides of it (the real one is thousands).
CPU_MIN_ROWS = 64

NOT_APPLICABLE = {
    "contract.emitter_output": "the emitters' output front-packed with count == clipped seqlens: the reference fix's "
                               "contract; the derived lengths read the indices themselves (the scattered.* cases)",
    "contract.front_packed": "front-packing at the kernel boundary: what the reference fix relies on, not the derived one",
    "guard.row_mismatch": "the helper gets no topk_length parameter to guard: the lengths come from the kernel call's "
                          "own indices, so their rows are always the call's",
    "rewrite.callers": "no caller passes metadata: the helper's signature and its callers are unchanged",
}


@contextlib.contextmanager
def rewrite_min_rows(device: str) -> Iterator[int]:
    """The MIN_ROWS the rewrite writes: the real one on cuda; CPU_MIN_ROWS on cpu, for this rewrite only."""
    saved = derived.MIN_ROWS
    if device == "cpu":
        derived.MIN_ROWS = CPU_MIN_ROWS
    try:
        yield derived.MIN_ROWS
    finally:
        derived.MIN_ROWS = saved


def describe(min_rows: int) -> str:
    """The report's `lengths` line: the shape on trial, and the MIN_ROWS its rewrite wrote."""
    real = derived.MIN_ROWS
    line = (f"derived: each row's length from the kernel call's own indices (its last valid slot's word end), at every kernel call "
            f"(lengths='derived-everywhere'), from MIN_ROWS {min_rows} rows, None below")
    if min_rows != real:
        line += (f"; MIN_ROWS lowered from {real} for this rewrite ({derived.__name__}.MIN_ROWS patched while it ran): "
                 "the cpu's shapes have 5..200 rows")
    return line


def expected(indices: torch.Tensor, min_rows: int) -> Optional[torch.Tensor]:
    """Each row's last valid slot + 1 (0 for a row with none), or None below min_rows rows: the least
    length the kernel may get. Found from the last valid slot of the flipped row, not the rewrite's expression."""
    idx = indices.reshape(indices.shape[0], -1)
    if idx.shape[0] < min_rows:
        return None
    valid = idx >= 0
    last = idx.shape[1] - valid.flip(1).to(torch.int32).argmax(dim=1)
    return torch.where(valid.any(dim=1), last, 0).to(torch.int32)


def verdict(call, min_rows: int) -> Tuple[bool, str]:
    """(the kernel got what the derived fix promises, what it got)."""
    rows, width = call.indices.shape[0], call.indices.shape[-1]
    want, got = expected(call.indices, min_rows), call.topk_length
    if want is None:
        return got is None, f"{rows} rows < MIN_ROWS {min_rows}: " + ("None (full width)" if got is None else "topk_length passed")
    if got is None:
        return False, f"{rows} rows >= MIN_ROWS {min_rows}: topk_length NOT passed to the kernel"
    got = got.cpu()
    if got.shape != want.shape or got.dtype != torch.int32:
        return False, f"topk_length {got.dtype} {tuple(got.shape)}, want int32 ({rows},)"
    least = want.cpu()
    most = ((least + B_TOPK - 1) // B_TOPK * B_TOPK).clamp(max=width)  # the end of the last valid slot's block
    off = ((got < least) | (got > most)).nonzero().flatten().tolist()
    if off:
        r = off[0]
        return False, (f"topk_length outside [last valid slot + 1, the end of its {B_TOPK}-slot block] on {len(off)} "
                       f"of {rows} rows (row {r}: {int(got[r])}, want {int(least[r])}..{int(most[r])})")
    return True, (f"topk_length reads exactly the blocks holding a valid slot on all {rows} rows "
                  f"(ideal {contract.ideal_ratio(got, width):.2f}x)")


def threshold_batches(min_rows: int, topk: int, heads: int) -> List[feed.Batch]:
    """Extend batches of MIN_ROWS - 1 and MIN_ROWS q rows, the two sides of the threshold (the usual
    batches may not reach it): a causal ramp from 1 (short rows) and a request after a 2 * topk prefix."""
    half = min_rows // 2
    return [feed.Batch(f"min_rows{tag}", "extend", [0, 2 * topk], [half + n, min_rows - half], heads)
            for tag, n in (("_minus_1", -1), ("", 0))]


def threshold_scenarios(min_rows: int, topk: int, heads: int) -> List[e2e.Scenario]:
    """The same MIN_ROWS q rows end to end, through the backend's own metadata, top-k and forward."""
    half = min_rows // 2
    return [e2e.Scenario("e2e_extend_min_rows", "EXTEND", [half, 2 * topk + min_rows - half], [half, min_rows - half], heads)]


def scattered(case):
    """A fed case with its emitter's output scattered (rows the engine padded stay all -1)."""
    return dataclasses.replace(case, name=f"scattered.{case.name}", indices=scatter_rows(case.indices))


def timing_batches(min_rows: int, topk: int) -> List[feed.Batch]:
    """Derived mode's timing batch besides feed.timing_batches: MIN_ROWS rows, all full, where the
    derivation has the most to cost and nothing to gain."""
    return [feed.Batch(f"all_full_{min_rows}", "extend", [topk], [min_rows], 128)]


def timing_bar(rows: int, min_rows: int, ideal: float, speedup: float, all_full: bool) -> Tuple[Optional[bool], str]:
    """(pass, fail or None for no bar; the bar). Below MIN_ROWS the call passes None after a host-side shape
    test: parity. With every row full there is nothing to gain: the derivation may cost at most 3% (the
    issue's floor). Where the ideal gain is 10% or more, the derived fix must pay: faster than unpatched.
    Smaller gains get no bar (results/gpu/derived-envelope.json has the margins)."""
    if rows < min_rows:
        return abs(speedup - 1) <= 0.02, f" (below MIN_ROWS {min_rows}, None passed: parity within 2%)"
    if all_full:
        return speedup >= 0.97, " (all rows full: at most 3% slower)"
    if ideal >= 1.1:
        return speedup > 1.0, " (ideal gain >= 10%: faster than unpatched)"
    return None, " (no bar: ideal gain under 10%)"
