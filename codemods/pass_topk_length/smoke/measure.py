"""What a hot path costs besides the kernel: ops dispatched, host syncs,
allocations; and paired CUDA-event timing of two versions."""
from __future__ import annotations

import statistics
import warnings
from collections import Counter
from dataclasses import dataclass
from typing import Callable, Optional

import torch
from torch.utils._python_dispatch import TorchDispatchMode


class _OpLog(TorchDispatchMode):
    """Counts aten ops outside the kernel; notes which of them are views."""

    def __init__(self, kernel):
        super().__init__()
        self.kernel = kernel
        self.ops: Counter = Counter()
        self.views: set = set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if not self.kernel.inside:
            name = str(func)
            self.ops[name] += 1
            if getattr(func, "is_view", False):
                self.views.add(name)
        return func(*args, **(kwargs or {}))


@dataclass
class Costs:
    ops: Counter
    views: set
    syncs: Optional[int]  # None off-GPU
    allocations: Optional[int]  # caching-allocator requests; None off-GPU
    sync_messages: list  # what torch said about each sync (first few)


def _count_syncs(fn: Callable[[], object]):
    """Syncs torch reports in one run of fn, under set_sync_debug_mode("warn").
    The mode's first use is discarded: one-time setup can warn once."""
    counts, messages = [], []
    for _ in range(2):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            torch.cuda.set_sync_debug_mode("warn")
            try:
                fn()
            finally:
                torch.cuda.set_sync_debug_mode("default")
        torch.cuda.synchronize()
        hits = [str(w.message) for w in caught if "synchroniz" in str(w.message).lower()]
        counts.append(len(hits))
        messages = hits[:3]
    return counts[-1], messages


def hot_path_costs(fn: Callable[[], object], kernel, device: str) -> Costs:
    """Run `fn` once to warm up, then once per probe."""
    record, kernel.record = kernel.record, False
    try:
        fn()
        log = _OpLog(kernel)
        with log:
            fn()
        syncs = allocations = None
        sync_ops: list = []
        if device == "cuda":
            torch.cuda.synchronize()
            before = torch.cuda.memory_stats().get("allocation.all.allocated", 0)
            fn()
            torch.cuda.synchronize()
            allocations = torch.cuda.memory_stats().get("allocation.all.allocated", 0) - before
            syncs, sync_ops = _count_syncs(fn)
            torch.cuda.synchronize()
        return Costs(log.ops, log.views, syncs, allocations, sync_ops)
    finally:
        kernel.record = record


@dataclass
class Timing:
    unpatched_ms: float
    patched_ms: float
    speedup: float  # median of per-pair ratios
    pairs: int


def paired_timing(unpatched: Callable, patched: Callable, pairs: int = 60, warmup: int = 5) -> Timing:
    """Interleaved A/B with CUDA events, order alternating each pair so drift
    and clock ramps hit both versions alike; medians of >= `pairs` pairs."""
    for _ in range(warmup):
        unpatched()
        patched()
    torch.cuda.synchronize()
    events = []
    for i in range(pairs):
        order = (0, 1) if i % 2 == 0 else (1, 0)
        pair = {}
        for which in order:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            (unpatched if which == 0 else patched)()
            end.record()
            pair[which] = (start, end)
        events.append(pair)
    torch.cuda.synchronize()
    a = [p[0][0].elapsed_time(p[0][1]) for p in events]
    b = [p[1][0].elapsed_time(p[1][1]) for p in events]
    ratio = statistics.median(x / y for x, y in zip(a, b))
    return Timing(statistics.median(a), statistics.median(b), ratio, pairs)
