"""Typed changes between two releases' entry points (what a reviewer reads before the bump).

Positions are 1-based, as a call's arguments are counted: `positional argument 19`. An entry point
new in the release says which module it is in (and whether that module is new) and whether it takes
a rule's parameter; `callee-changed` says on which paths an entry point now runs other ops or
functions (paths.py, every parameter undecided)."""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import List, Optional

from topk_migrate import rules

from . import paths
from .signatures import EntryPoint, Release

# Change kinds, in the order a reviewer should read them.
ENTRY_REMOVED, ENTRY_ADDED = "entry-point-removed", "entry-point-added"
PARAM_REMOVED, PARAM_RENAMED = "param-removed", "param-renamed"
PARAM_ADDED_REQUIRED, PARAM_ADDED_OPTIONAL = "param-added-required", "param-added-optional"
POSITION_CHANGED, KIND_CHANGED, DEFAULT_CHANGED = "position-changed", "kind-changed", "default-changed"
NOW_REQUIRED, NOW_OPTIONAL = "param-now-required", "param-now-optional"
GUARD_ADDED, GUARD_REMOVED = "guard-added", "guard-removed"
CALLEE_CHANGED = "callee-changed"
ORDER = [ENTRY_REMOVED, PARAM_REMOVED, PARAM_RENAMED, PARAM_ADDED_REQUIRED, NOW_REQUIRED, POSITION_CHANGED,
         KIND_CHANGED, DEFAULT_CHANGED, CALLEE_CHANGED, GUARD_ADDED, PARAM_ADDED_OPTIONAL, NOW_OPTIONAL, GUARD_REMOVED,
         ENTRY_ADDED]


@dataclass(frozen=True)
class Change:
    kind: str
    entry_point: str
    param: Optional[str]
    detail: str

    def to_dict(self) -> dict:
        return asdict(self)


def diff(old: Release, new: Release) -> List[Change]:
    out: List[Change] = []
    for name in sorted(set(old.entry_points) - set(new.entry_points)):
        out.append(Change(ENTRY_REMOVED, name, None, f"{old.entry_points[name].signature()} is gone"))
    old_modules = {e.module for e in old.entry_points.values()}
    for name in sorted(set(new.entry_points) - set(old.entry_points)):
        ep = new.entry_points[name]
        where = f"{ep.module}, a module new in this release" if ep.module not in old_modules else ep.module
        out.append(Change(ENTRY_ADDED, name, None, f"{ep.signature()} in {where}; {_rule_params(ep)}"))
    for name in sorted(set(old.entry_points) & set(new.entry_points)):
        out += diff_entry(old.entry_points[name], new.entry_points[name])
    return sorted(out, key=lambda c: (ORDER.index(c.kind), c.entry_point))


def _rule_params(ep: EntryPoint) -> str:
    """Whether a new entry point takes a rule's parameter, and whether that rule reads it."""
    said = []
    for param in sorted({r.param for r in rules.enabled(everything=True) if r.param}):
        if ep.param(param) is None:
            continue
        ids = sorted(r.id for r in rules.enabled(everything=True) if r.param == param)
        readers = sorted(r.id for r in rules.enabled(everything=True) if r.param == param and ep.name in r.entry_points)
        said.append(f"takes `{param}`, the parameter of {', '.join(ids)} ("
                    + (f"read by {', '.join(readers)})" if readers else "no rule reads this entry point)"))
    return "; ".join(said) or "takes no rule's parameter"


def renamed_pairs(old: EntryPoint, new: EntryPoint) -> dict:
    """Heuristic: a removed and an added parameter in the same positional slot, of the same kind,
    both required or both with a default, read as one renamed (old name -> new name)."""
    new_names = {p.name for p in new.params}
    old_names = {p.name for p in old.params}
    pairs = {}
    for i, p in enumerate(old.params):
        if p.name in new_names or i >= len(new.params):
            continue
        q = new.params[i]
        if q.name not in old_names and q.kind == p.kind and q.required == p.required:
            pairs[p.name] = q.name
    return pairs


def diff_entry(old: EntryPoint, new: EntryPoint) -> List[Change]:
    name, out = old.name, []
    renamed = renamed_pairs(old, new)
    for a, b in renamed.items():
        out.append(Change(PARAM_RENAMED, name, a, f"`{a}` -> `{b}` (heuristic: same slot and kind; "
                                                   f"keyword callers of `{a}` break)"))
    for p in old.params:
        if new.param(p.name) is None and p.name not in renamed:
            out.append(Change(PARAM_REMOVED, name, p.name, f"`{p.name}` ({p.kind}) is gone"))
    old_pos = [p.name for p in old.positional()]
    new_pos = [p.name for p in new.positional()]
    for p in new.params:
        was = old.param(p.name)
        if was is None:
            if p.name in renamed.values():
                continue
            if p.required:
                out.append(Change(PARAM_ADDED_REQUIRED, name, p.name, f"`{p.name}` ({p.kind}), required"))
            else:
                where = f", positional argument {new_pos.index(p.name) + 1}" if p.positional else ", keyword-only"
                out.append(Change(PARAM_ADDED_OPTIONAL, name, p.name, f"`{p.name}={p.default}`{where}"))
            continue
        if p.positional and was.positional and old_pos.index(p.name) != new_pos.index(p.name):
            out.append(Change(POSITION_CHANGED, name, p.name,
                              f"`{p.name}` moved from positional argument {old_pos.index(p.name) + 1} to "
                              f"{new_pos.index(p.name) + 1}"))
        if p.kind != was.kind:
            out.append(Change(KIND_CHANGED, name, p.name, f"`{p.name}`: {was.kind} -> {p.kind}"))
        if p.required and not was.required:
            out.append(Change(NOW_REQUIRED, name, p.name, f"`{p.name}` had the default {was.default}; "
                                                          "callers that leave it out break"))
        elif was.required and not p.required:
            out.append(Change(NOW_OPTIONAL, name, p.name, f"`{p.name}` now defaults to {p.default}"))
        elif p.default != was.default:
            out.append(Change(DEFAULT_CHANGED, name, p.name, f"`{p.name}`: default {was.default} -> {p.default}"))
    old_guards = {g.key() for g in old.guards}
    new_guards = {g.key() for g in new.guards}
    for g in new.guards:
        if g.key() not in old_guards:
            out.append(Change(GUARD_ADDED, name, ", ".join(g.params), g.describe()))
    for g in old.guards:
        if g.key() not in new_guards:
            out.append(Change(GUARD_REMOVED, name, ", ".join(g.params), g.describe()))
    out += callee_changed(old, new)
    return out


def callee_changed(old: EntryPoint, new: EntryPoint) -> List[Change]:
    """The paths on which `new` runs other ops or functions than `old`, whatever a call passes."""
    unknown = {p.name: paths.UNKNOWN for p in (*old.params, *new.params)}
    changes, _ = paths.callee_changes(old, new, unknown, unknown)
    if changes is None:
        return [Change(CALLEE_CHANGED, old.name, None, "other ops or functions on some paths (too many path "
                                                       "conditions to say which)")]
    out = []
    for c in changes:
        was = ", ".join(f"`{n}`" for n in c.old) or "no op or function"
        now = ", ".join(f"`{n}`" for n in c.new) or "no op or function"
        where = f"when {' and '.join(c.when)}: " if c.when else ""
        out.append(Change(CALLEE_CHANGED, old.name, None, f"{where}calls {now} (was {was})"))
    return out
