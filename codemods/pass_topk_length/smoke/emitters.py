"""The indexer's top-k emitters: the kernels whose output the sparse kernel reads.

`topk_length` is only right if the emitter writes each row's valid indices
first and -1 after, and the engine's clipped seqlens equal that count. So the
smoke drives the emitters that ship in the same sgl_kernel build as the
attention kernel (on the GPU), or torch models of them with the same
signatures and the same output rules (on the CPU):

* `fast_topk_v2(score, lengths, topk, row_starts=None)`: per row, positions
  (relative to row_starts) of the best scores in `score[row, start:start+len]`;
  a row with len <= topk gets 0..len-1, then -1.
* `fast_topk_transform_fused(score, lengths, page_table_size_1, cu_seqlens_q,
  topk, row_starts=None)`: the same positions mapped through the request's
  page-table row (page size 1): kv-pool slots.
* `fast_topk_transform_ragged_fused(score, lengths, topk_indices_offset, topk,
  row_starts=None)`: the same positions plus the row's offset in a ragged kv.

Which of them an engine's top-k path calls is read from its source
(`engine_topk_path`), and the engine's own clip of seqlens to top-k is run
where it can be isolated (`engine_function`).
"""
from __future__ import annotations

import ast
import contextlib
import importlib
import sys
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

import torch

from . import isolate

NAMES = ("fast_topk_v2", "fast_topk_transform_fused", "fast_topk_transform_ragged_fused")


# -- torch models of the emitters ---------------------------------------------


def _positions(score, lengths, topk, row_starts):
    """[rows, topk] int64 row-relative positions, -1 after each row's count."""
    rows, width = score.shape
    dev = score.device
    lens = lengths.long()
    starts = torch.zeros_like(lens) if row_starts is None else row_starts.long()
    out = torch.full((rows, topk), -1, dtype=torch.int64, device=dev)
    slot = torch.arange(topk, device=dev)
    short = lens <= topk
    out = torch.where(short[:, None] & (slot[None, :] < lens[:, None]), slot[None, :].expand(rows, topk), out)
    if (~short).any():
        col = torch.arange(width, device=dev)
        inside = (col[None, :] >= starts[:, None]) & (col[None, :] < (starts + lens)[:, None])
        masked = score.float().masked_fill(~inside, float("-inf"))
        best = masked.topk(min(topk, width), dim=1).indices - starts[:, None]
        long_rows = (~short).nonzero().flatten()
        out[long_rows, : best.shape[1]] = best[long_rows]
    return out


def ref_fast_topk_v2(score, lengths, topk, row_starts=None):
    return _positions(score, lengths, topk, row_starts).to(torch.int32)


def _row_to_batch(rows: int, cu_seqlens_q: torch.Tensor) -> torch.Tensor:
    return torch.searchsorted(cu_seqlens_q.long(), torch.arange(rows, device=cu_seqlens_q.device), right=True) - 1


def ref_fast_topk_transform_fused(score, lengths, page_table_size_1, cu_seqlens_q, topk, row_starts=None):
    pos = _positions(score, lengths, topk, row_starts)
    rows = score.shape[0]
    decode = row_starts is None and page_table_size_1.shape[0] == rows
    batch = torch.arange(rows, device=score.device) if decode else _row_to_batch(rows, cu_seqlens_q)
    slots = page_table_size_1.long()[batch[:, None], pos.clamp(min=0)]
    return slots.masked_fill(pos < 0, -1).to(torch.int32)


def ref_fast_topk_transform_ragged_fused(score, lengths, topk_indices_offset, topk, row_starts=None):
    pos = _positions(score, lengths, topk, row_starts)
    return (pos + topk_indices_offset.long()[:, None]).masked_fill(pos < 0, -1).to(torch.int32)


REFERENCE = {
    "fast_topk_v2": ref_fast_topk_v2,
    "fast_topk_transform_fused": ref_fast_topk_transform_fused,
    "fast_topk_transform_ragged_fused": ref_fast_topk_transform_ragged_fused,
}


# -- faults, for the negative control -------------------------------------------

FAULTS = ("hole", "tail")


SCATTER = "scatter"  # not a fault of the emitters: the layout the derived lengths must stand (smoke --lengths derived)


def scatter_rows(out: torch.Tensor) -> torch.Tensor:
    """Each row's valid entries moved to scrambled slots among the row's first 2 * count (the whole row
    from half full), -1 in the others: not front-packed, holes inside, every valid entry kept once.

    The order is a fixed function of (row, slot), no generator and no host sync, so the same output
    scatters the same way twice (pinned emitter calls) and inside a CUDA-graph capture."""
    rows, width = out.shape
    count = (out >= 0).sum(dim=1, keepdim=True)
    slot = torch.arange(width, device=out.device)[None, :]
    row = torch.arange(rows, device=out.device)[:, None]
    key = (slot * 40503 + row * 104729) % 65521  # 65521 is prime: distinct keys within a row of up to 65521 slots
    dest = key.masked_fill(slot >= (2 * count).clamp(max=width), 1 << 20).argsort(dim=1)
    packed = out.gather(1, (out < 0).to(torch.int32).argsort(dim=1, stable=True))  # valid entries first, -1 after
    return torch.full_like(out, -1).scatter_(1, dest, packed)


def break_contract(out: torch.Tensor, fault: str) -> torch.Tensor:
    """An emitter output that breaks the contract: `hole` puts -1 in slot 0 of
    every row with two or more valid entries (an interior -1); `tail` writes a
    valid index right after the count of every row shorter than the width;
    `scatter` (scatter_rows) leaves only the valid entries' set intact."""
    if fault == SCATTER:
        return scatter_rows(out)
    if fault not in FAULTS:
        raise ValueError(f"unknown emitter fault {fault!r} (one of {', '.join(FAULTS)})")
    out = out.clone()  # no host sync below: the fault also works inside a CUDA-graph capture
    count = (out >= 0).sum(dim=1)
    if fault == "hole":
        out[:, 0] = torch.where(count >= 2, torch.full_like(out[:, 0], -1), out[:, 0])
    else:
        at = count.clamp(max=out.shape[1] - 1)[:, None]
        hit = ((count >= 1) & (count < out.shape[1]))[:, None]
        out.scatter_(1, at, torch.where(hit, out[:, :1], out.gather(1, at)))
    return out


# -- the emitter set the smoke runs ------------------------------------------------


@dataclass
class EmitterCall:
    name: str
    out: torch.Tensor  # as handed to the caller (after any fault)
    lengths: torch.Tensor
    score: Optional[torch.Tensor] = None  # kept while not pinning, to pin a later call to this one


@dataclass
class Pinned:
    """An earlier call's output, handed back when the same inputs come again."""

    out: torch.Tensor
    score: torch.Tensor
    lengths: torch.Tensor


@dataclass
class Emitters:
    """Emitter name -> callable with sgl_kernel's signature, plus a call log.

    The real emitters pick rows longer than topk with atomics: two calls on the
    same scores may list a row's indices in another order (and, on tied scores,
    pick other equals). The kernel's sums then round differently. So to compare
    two versions of a backend bitwise, the second version's emitter calls are
    `pin`ned to the first's outputs when their inputs are equal: the rewrite
    cannot change what an emitter picks, only what the kernel reads of it."""

    fns: Dict[str, Callable]
    source: str  # "sglang-kernel==0.4.6" or "torch reference (cpu)"
    fault: Optional[str] = None
    calls: List[EmitterCall] = field(default_factory=list)
    record: bool = True
    pinned: Optional[List[Pinned]] = None
    repinned_rows: int = 0  # rows whose own output differed from the pinned one (same inputs)
    unpinned: int = 0  # calls whose inputs differed from the pinned call's: their own output was used
    last_out: Optional[torch.Tensor] = None  # the latest output tensor itself (a graph's static buffer)

    def wrapped(self, name: str) -> Callable:
        """`name` as code under test sees it: faults applied, calls logged, pins honoured."""
        fn = self.fns[name]

        def emit(score, lengths, *args, **kwargs):
            out = fn(score, lengths, *args, **kwargs)
            if self.fault:
                out = break_contract(out, self.fault)
            if self.pinned is not None:
                out = self._pin(out, score, lengths)
            if self.record:
                self.calls.append(EmitterCall(name, out.clone(), lengths.clone(), score.clone() if self.pinned is None else None))
            self.last_out = out
            return out

        emit.__name__ = name
        return emit

    def _pin(self, out, score, lengths):
        want = self.pinned.pop(0) if self.pinned else None
        if want is None or want.out.shape != out.shape or not (torch.equal(want.score, score) and torch.equal(want.lengths, lengths)):
            self.unpinned += 1
            return out
        self.repinned_rows += int((want.out != out).any(dim=1).sum())
        return want.out.clone()

    def pin(self, calls: List[EmitterCall]) -> None:
        """Hand these calls' outputs back to the next calls with the same inputs."""
        self.pinned = [Pinned(c.out, c.score, c.lengths) for c in calls]
        self.repinned_rows = self.unpinned = 0

    def unpin(self) -> str:
        """Stop pinning; a note on what pinning did (empty if nothing)."""
        self.pinned = None
        notes = []
        if self.repinned_rows:
            notes.append(f"the emitter's re-run listed {self.repinned_rows} row(s) differently on the same inputs; fed the first run's")
        if self.unpinned:
            notes.append(f"{self.unpinned} emitter call(s) had other inputs than the first run's")
        return "; ".join(notes)

    def take_calls(self) -> List[EmitterCall]:
        calls, self.calls = self.calls, []
        return calls


def load_emitters(device: str, version: str, fault: Optional[str] = None) -> Emitters:
    """The installed sgl_kernel's emitters on cuda (those it has); the models on cpu."""
    if device == "cpu":
        return Emitters(dict(REFERENCE), "torch reference (cpu)", fault)
    mod = importlib.import_module("sgl_kernel")
    fns = {n: getattr(mod, n) for n in NAMES if callable(getattr(mod, n, None))}
    return Emitters(fns, f"sglang-kernel=={version}", fault)


@contextlib.contextmanager
def injected_emitters(emitters: Emitters):
    """Serve `from sgl_kernel import <emitter>` (inside `kernel.injected`) from `emitters`."""
    pkg = sys.modules.get("sgl_kernel")
    if pkg is None:
        pkg = types.ModuleType("sgl_kernel")
        pkg.__path__ = []
    saved = {n: getattr(pkg, n, None) for n in emitters.fns}
    sys.modules["sgl_kernel"] = pkg
    for n in emitters.fns:
        setattr(pkg, n, emitters.wrapped(n))
    try:
        yield emitters
    finally:
        for n, v in saved.items():
            if v is None:
                delattr(pkg, n)
            else:
                setattr(pkg, n, v)


# -- what the engine's own code says ------------------------------------------------


def _own_modules(path: Path, source: str) -> List[Tuple[Path, str]]:
    """(file, text): the engine file, then the modules of its own package it
    imports at module level (found as files in the tree holding the engine)."""
    found = [(path, source)]
    for node in ast.parse(source).body:
        if not isinstance(node, ast.ImportFrom) or node.level or not node.module:
            continue
        rel = Path(*node.module.split("."))
        for root in path.resolve().parents:
            target = root / rel.with_suffix(".py")
            if target.is_file() and str(path.resolve()).startswith(str(root / rel.parts[0]) + "/"):
                if all(target != p for p, _ in found):
                    found.append((target, target.read_text(encoding="utf-8", errors="replace")))
                break
    return found


def _label(file: Path, line: int, engine: Path) -> str:
    try:
        return f"{file.resolve().relative_to(engine.resolve().parent)}:{line}"
    except ValueError:
        return f"{file}:{line}"


def engine_topk_path(path: str, source: str) -> Dict[str, str]:
    """Emitters the engine's top-k path imports from sgl_kernel: name -> where
    (the file itself, or a module of its own package it imports)."""
    engine = Path(path)
    uses: Dict[str, str] = {}
    for file, text in _own_modules(engine, source):
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module in ("sgl_kernel", "sgl_kernel.top_k"):
                for a in node.names:
                    if a.name in NAMES:
                        uses.setdefault(a.name, _label(file, node.lineno, engine))
    return uses


def engine_function(path: str, source: str, name: str) -> Optional[Tuple[Callable, str]]:
    """The engine's own `name` (a function, or a method of any class that needs
    no `self` state), isolated like the helper; (callable, where) or None."""
    engine = Path(path)
    for file, text in _own_modules(engine, source):
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        candidates = [(n.name, n.lineno) for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name]
        candidates += [
            (f"{c.name}.{m.name}", m.lineno)
            for c in tree.body if isinstance(c, ast.ClassDef)
            for m in c.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)) and m.name == name
        ]
        for qualname, line in candidates:
            try:
                fn = isolate.isolate(text, str(file), qualname).bind({})
            except (isolate.IsolationError, SyntaxError):
                continue
            return fn, f"{qualname} at {_label(file, line, engine)}"
    return None
