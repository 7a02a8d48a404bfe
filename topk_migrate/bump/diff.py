"""Typed changes between two releases' entry points (what a reviewer reads before the bump)."""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import List, Optional

from .signatures import EntryPoint, Release

# Change kinds, in the order a reviewer should read them.
ENTRY_REMOVED, ENTRY_ADDED = "entry-point-removed", "entry-point-added"
PARAM_REMOVED, PARAM_RENAMED = "param-removed", "param-renamed"
PARAM_ADDED_REQUIRED, PARAM_ADDED_OPTIONAL = "param-added-required", "param-added-optional"
POSITION_CHANGED, KIND_CHANGED, DEFAULT_CHANGED = "position-changed", "kind-changed", "default-changed"
NOW_REQUIRED, NOW_OPTIONAL = "param-now-required", "param-now-optional"
GUARD_ADDED, GUARD_REMOVED = "guard-added", "guard-removed"
ORDER = [ENTRY_REMOVED, PARAM_REMOVED, PARAM_RENAMED, PARAM_ADDED_REQUIRED, NOW_REQUIRED, POSITION_CHANGED,
         KIND_CHANGED, DEFAULT_CHANGED, GUARD_ADDED, PARAM_ADDED_OPTIONAL, NOW_OPTIONAL, GUARD_REMOVED, ENTRY_ADDED]


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
    for name in sorted(set(new.entry_points) - set(old.entry_points)):
        out.append(Change(ENTRY_ADDED, name, None, new.entry_points[name].signature()))
    for name in sorted(set(old.entry_points) & set(new.entry_points)):
        out += diff_entry(old.entry_points[name], new.entry_points[name])
    return sorted(out, key=lambda c: (ORDER.index(c.kind), c.entry_point))


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
                where = f" at position {new_pos.index(p.name)}" if p.positional else ""
                out.append(Change(PARAM_ADDED_OPTIONAL, name, p.name, f"`{p.name}={p.default}`{where}"))
            continue
        if p.positional and was.positional and old_pos.index(p.name) != new_pos.index(p.name):
            out.append(Change(POSITION_CHANGED, name, p.name,
                              f"`{p.name}` moved from position {old_pos.index(p.name)} to {new_pos.index(p.name)}"))
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
    return out
