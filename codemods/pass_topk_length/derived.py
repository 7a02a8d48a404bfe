"""`--lengths derived`: each row's topk_length derived at the call from the indices the kernel is handed.

The kernel stops a row after ceil(topk_length / 64) blocks of its indices, so any length from the last
valid slot + 1 up to the end of that slot's block reads the same blocks and gives the same bits. The
end of the last word (of the indices' own dtype: 4 slots) holding a valid slot is such a length for any layout of that row
(front-packed or not), any row order and on every CUDA-graph replay: it is computed from the very
tensor the kernel reads, on the device, from tensor metadata only (no host sync), and reads no name but
the indices (every tensor it makes is a method of theirs), so no module's `torch` matters. It costs one pass
over the indices and a few small kernels per call, so it is passed only where the call has enough
rows to repay them (`MIN_ROWS`, a host-side shape: free, and fixed under a CUDA graph) and a width of
whole words; otherwise the call passes None (the full width, as before). The figures behind both
choices are in results/gpu/derived-envelope.md (bench/derived_envelope.py on the H200).
"""
from __future__ import annotations

from typing import Callable, Dict

# The fewest rows (q.shape[0] == indices.shape[0]) for which the derived lengths are passed: the largest measured
# size at or below 4096 from which the guarded fix was never 3% slower than passing nothing (eager back to back and
# under a CUDA graph; ramp and full rows) and kept 80% of the reference gain at 4096 and 8192 rows,
# results/gpu/derived-envelope.md. Below it the derivation (about 10 us of host time per op, 20-50 us of device
# work, plus the 0.2-1.2% any topk_length costs the kernel on full rows) is not repaid.
MIN_ROWS = 4096
# The guard's width multiple: whole words of any index dtype up to 8 bytes (own-word reads the valid mask in
# words of the indices' own size, `word` as int64). FlashMLA's sparse prefill requires a width of whole 128-slot
# steps; any other width gets None, so the derivation never fails where the call would not.
WORD = 8
# The name the rewrite binds the call's indices to (`:=`), where reading them again might not read the same object.
BOUND_NAME = "topk_length_indices"
# What a `manual` site's reason adds where the derived lengths would fix it (the cost: results/gpu/derived-envelope.md).
HINT = ("; `--lengths derived` would fix it by deriving each row's length from this call's indices "
        f"(passed from {MIN_ROWS} rows; at 4096 rows on an H200 1.18x on a causal ramp, 0.99x with every row full; "
        "None below)")


def _last_arange(indices: str) -> str:
    """Valid slots times their 1-based position, the largest per row (int32 throughout; reads `torch`)."""
    slots = f"torch.arange(1, {indices}.shape[-1] + 1, device={indices}.device, dtype=torch.int32)"
    return f"(({indices} >= 0) * {slots}).flatten(1).amax(1)"


def _last_word(indices: str) -> str:
    """The end of the last WORD-slot word holding a valid slot: the valid mask (one pass over the indices),
    read as int64 words (a view), then the last nonzero word per row on WORD times fewer values (reads `torch`)."""
    words = f"({indices} >= 0).contiguous().view(torch.int64)"
    ends = f"torch.arange({WORD}, {indices}.shape[-1] + 1, {WORD}, device={indices}.device, dtype=torch.int32)"
    return f"(({words} != 0) * {ends}).flatten(1).amax(1)"


def _last_own_word(indices: str) -> str:
    """As _last_word, with words of the indices' own dtype (4 slots for int32) and every tensor made by a
    method of the indices: the expression reads no name but `indices`, so no write to any module's `torch`
    (a shim, a star import, a reflective loop) can reach it."""
    size = f"{indices}.element_size()"
    words = f"({indices} >= 0).contiguous().view({indices}.dtype)"
    ends = f"{indices}.new_full(({indices}.shape[-1] // {size},), {size}).cumsum(0, dtype={indices}.dtype)"
    return f"(({words} != 0) * {ends}).flatten(1).amax(1)"


# The tensor methods (and operators) the chosen formulation calls on the indices: a tensor subclass of the
# project overriding one of them changes what the derived lengths compute (reach.Project.tensor_interceptors).
TENSOR_METHODS = {"view", "contiguous", "new_full", "cumsum", "flatten", "amax", "element_size", "__ge__", "__ne__",
                  "__mul__", "__rmul__", "__getattribute__", "__getattr__", "shape", "dtype"}

# Formulations measured by bench/derived_envelope.py; FORMULATION is the one the rewrite writes.
FORMULATIONS: Dict[str, Callable[[str], str]] = {"arange": _last_arange, "word": _last_word, "own-word": _last_own_word}
# Only a formulation that reads no module name may be chosen (READS_NO_MODULE); the others are measured beside it.
READS_NO_MODULE = {"own-word"}
FORMULATION = "own-word"


def lengths_of(indices: str) -> str:
    """The expression of each row's derived length of `indices` (an int32 tensor of its rows)."""
    return FORMULATIONS[FORMULATION](indices)


def derived_value(indices: str) -> str:
    """The topk_length argument the rewrite passes: the derived lengths, or None below MIN_ROWS rows or
    on a width that is empty (no slot to reduce over) or of partial words."""
    guard = f"{indices}.shape[0] >= {MIN_ROWS} and {indices}.shape[-1] > 0 and {indices}.shape[-1] % {WORD} == 0"
    return f"{lengths_of(indices)} if {guard} else None"
