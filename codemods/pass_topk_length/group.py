"""The rewrite the analysis plans (Group: kernel calls rewritten together) and the guard it inserts
(docs/soundness.md `guard`: `fits`, the test that the metadata may be the kernel's topk_length for q, read
from tensor metadata only)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional, Set, Tuple

from topk_migrate.cst.resolve import CallInfo, Function, dotted

from .syntax import _q_arg

# the guard checks all the kernel needs (fits), whatever the module's types say
GUARD_COMMENT = "# topk-migrate: use the full top-k width unless topk_length is int32, 1-D, one per row of q."


@dataclass(eq=False)
class Group:
    """Kernel calls rewritten together (one call, or every call in one helper plus its
    callers); validated together and refused together."""

    kind: str  # "direct": metadata at the call; "helper": the helper gains the parameter
    calls: List[CallInfo]
    sites: List[int]  # indices into the site list
    metadata: Optional[str] = None  # direct: the expression passed
    form: str = "plain"  # direct: how the metadata is read (see _metadata_value)
    helper: Optional[Function] = None
    callers: List[Tuple[CallInfo, str, str]] = field(default_factory=list)  # (call, expression, form)
    add_param: bool = False
    inline: bool = False  # guard inline in the call instead of a statement before it
    reason: str = ""
    # helper: the parameters its first kernel call's q and indices come from (the callers' arguments traced)
    row_sources: Set[str] = field(default_factory=set)
    index_sources: Set[str] = field(default_factory=set)
    # derived: the name the lengths are derived from, and whether the rewrite binds it at the call (`:=`)
    indices: Optional[str] = None
    bind_indices: bool = False

    def q(self, call: CallInfo) -> str:
        return dotted(_q_arg(call.node))


# How the metadata is read (`metadata-type`): "plain" where its root provably holds an object of a
# class here that declares the field, non-Optional (SGLang's `self.forward_metadata: DSAMetadata`);
# "none_safe" where that object may be None; "getattr" where nothing says what the root holds.

def _metadata_value(expr: str, form: str) -> str:
    root, (parent, field_name) = expr.split(".")[0], expr.rsplit(".", 1)
    if form == "getattr":
        return f'getattr({parent}, "{field_name}", None)'
    return f"{expr} if {root} is not None else None" if form == "none_safe" else expr


def _inline_value(expr: str, form: str, q: str, torch: Optional[str] = None) -> str:
    """The metadata, guarded (fits), as one expression (no statement of its own)."""
    value = _metadata_value(expr, "getattr" if form == "getattr" else "plain")
    test = f"{expr.split('.')[0]} is not None and " if form == "none_safe" else ""
    return f"{value} if {test}{value} is not None and {fits(value, q, torch)} else None"


def fits(value: str, q: str, torch: Optional[str] = None) -> str:
    """The test that `value` (not None) may be the kernel's topk_length for q: everything the kernel needs of
    it, read from tensor metadata only (no host sync, safe under CUDA-graph capture): a tensor, int32, 1-D, on
    q's device, q's rows. Checked even where the module's annotations name the field's class: an annotation
    is no proof of the dtype a write gives it (red-team round O: an int64 clamp). `torch`: the name the
    module binds torch to at import time, if any (else q's own type and the dtype's name)."""
    rows = f"{value}.shape[0] == {q}.shape[0]"
    if torch:
        kind = f"isinstance({value}, {torch}.Tensor) and {value}.dtype == {torch}.int32"
    else:
        kind = f'isinstance({value}, type({q})) and str({value}.dtype) == "torch.int32"'
    return f"({kind} and {value}.dim() == 1 and {rows} and {value}.device == {q}.device)"


def _direct_reason(g: Group) -> str:
    how = "guarded inline: int32, one per row of q" if g.inline else "guarded: int32, one per row of q"
    return f"passes {g.metadata} ({how})"
