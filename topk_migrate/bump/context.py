"""What a rule's `bump` hook sees of one call site, and the form of its bump examples.

The rules themselves are plug-ins in `topk_migrate.codemods` (topk_migrate/rules.py).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Dict, Optional

from .bind import CallArgs
from .signatures import EntryPoint, Release


@dataclass
class Context:
    """One call site, as a rule sees it."""

    path: str
    line: int
    column: int
    entry_point: str
    args: CallArgs
    old: Release
    new: Release
    old_ep: Optional[EntryPoint]
    new_ep: Optional[EntryPoint]
    # rule id -> {(line, col): Site} of that site rule on this file under the new pin, or {"error": line}
    rule_sites: Callable[[str], Dict[object, object]]


def new_param(ctx: Context, name: str) -> bool:
    """The new release has `name` on this entry point, the old one had not, and the call leaves it out."""
    return (ctx.new_ep is not None and ctx.new_ep.param(name) is not None
            and (ctx.old_ep is None or ctx.old_ep.param(name) is None)
            and ctx.args.passes(ctx.new_ep, name) is None and not ctx.args.double_star)
