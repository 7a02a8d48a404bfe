"""Bind each call site of the fork against the old and the new signature, statically.

A call is found the way `check` finds kernel calls (topk_migrate.resolve.collect: every import
spelling, function-local and aliased imports); it is one of the release's entry points when its
resolved name starts with the wrapper's import root (`sgl_kernel`, `flash_mla`). Verdicts, most
serious first: breaks (a TypeError under the new release), rebinds (a positional argument lands
in another parameter, no error), manual (cannot be bound statically, or the new release refuses
what the call passes), changes-default, opportunity (a new optional parameter left out),
unchanged.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Dict, List, Optional, Sequence, Tuple

from topk_migrate.model import BUMP_STATUSES, Finding, Site, Status

from .diff import renamed_pairs
from .signatures import VAR_KEYWORD, VAR_POSITIONAL, EntryPoint, Release

if TYPE_CHECKING:  # LibCST is imported only where a file is parsed (in audit's workers)
    import libcst as cst

BREAKS, REBINDS, MANUAL = Status.BREAKS.value, Status.REBINDS.value, Status.MANUAL.value
CHANGES_DEFAULT, OPPORTUNITY, UNCHANGED = Status.CHANGES_DEFAULT.value, Status.OPPORTUNITY.value, Status.UNCHANGED.value
NOTE = "note"  # a fact worth reading that does not change the verdict (a refusal on another path)
SEVERITY = [s.value for s in BUMP_STATUSES]
_ORDER = SEVERITY + [NOTE]
FAILING = (Status.BREAKS, Status.REBINDS)  # what makes `bump` exit 1

_REFUSAL = re.compile(r"^(\w+) is None$")  # `assert X is None`: the release refuses any X


@dataclass
class CallArgs:
    """What a call passes, as far as it can be read statically."""

    positional: List[str]  # source text of each positional argument
    keywords: Dict[str, str]  # keyword -> source text
    star: bool = False  # *args
    double_star: bool = False  # **kwargs

    @classmethod
    def of(cls, call: cst.Call, module: cst.Module) -> "CallArgs":
        out = cls([], {})
        for a in call.args:
            text = module.code_for_node(a.value)
            if a.star == "*":
                out.star = True
            elif a.star == "**":
                out.double_star = True
            elif a.keyword is not None:
                out.keywords[a.keyword.value] = text
            else:
                out.positional.append(text)
        return out

    def passes(self, ep: EntryPoint, name: str) -> Optional[str]:
        """The source text passed for `name` (by keyword or position), else None."""
        if name in self.keywords:
            return self.keywords[name]
        pos = [p.name for p in ep.positional()]
        if name in pos and pos.index(name) < len(self.positional):
            return self.positional[pos.index(name)]
        return None


def bind(ep: EntryPoint, args: CallArgs) -> Tuple[Dict[str, str], List[str]]:
    """(parameter -> what binds it, TypeErrors Python would raise). Unknowable parts (*args,
    **kwargs) bind nothing and raise nothing."""
    bound: Dict[str, str] = {}
    errors: List[str] = []
    pos = ep.positional()
    var_pos = any(p.kind == VAR_POSITIONAL for p in ep.params)
    var_kw = any(p.kind == VAR_KEYWORD for p in ep.params)
    for i, text in enumerate(args.positional):
        if i < len(pos):
            bound[pos[i].name] = f"positional argument {i + 1} (`{text}`)"
        elif not var_pos:
            errors.append(f"takes {len(pos)} positional arguments but {len(args.positional)} are given")
            break
    for kw in args.keywords:
        p = ep.param(kw)
        if p is None or p.kind in (VAR_POSITIONAL, VAR_KEYWORD) or p.kind == "positional-only":
            if not var_kw:
                errors.append(f"unexpected keyword argument `{kw}`")
        elif kw in bound:
            errors.append(f"multiple values for argument `{kw}`")
        else:
            bound[kw] = "keyword"
    if not (args.star or args.double_star):
        missing = [p.name for p in ep.params if p.required and p.name not in bound]
        if missing:
            errors.append("missing required argument(s) " + ", ".join(f"`{m}`" for m in missing))
    return bound, errors


def settle(path: str, line: int, column: int, callee: str, entry_point: str, findings: List[Finding]) -> Site:
    """The call's site: a rule's finding about a parameter replaces the diff's; the status is the most
    serious finding's; the reason gathers that status's findings (new optional parameters a rule says
    nothing about in one clause); the site's rule is the one behind the status, else the diff's own
    `signature-<status>`."""
    ruled = {f.param for f in findings if f.rule and f.param}
    kept = sorted((f for f in findings if f.rule or f.param not in ruled),
                  key=lambda f: (_ORDER.index(f.verdict), f.rule is None))
    verdict = kept[0].verdict if kept and kept[0].verdict != NOTE else UNCHANGED
    shown = [f for f in kept if f.verdict == verdict]
    plain = [f.param for f in shown if f.verdict == OPPORTUNITY and f.rule is None and f.param]
    parts = [f.reason for f in shown if not (f.verdict == OPPORTUNITY and f.rule is None and f.param)]
    if plain:
        parts.append(("also " if parts else "") + "new in the release, not passed: "
                     + ", ".join(f"`{p}`" for p in plain))
    return Site(path, line, column, callee, Status(verdict), "; ".join(parts) or "binds the same way; no new parameter",
                rule=next((f.rule for f in shown if f.rule), f"signature-{verdict}"), entry_point=entry_point,
                fix=next((f.fix for f in kept if f.fix), None), findings=tuple(kept))


def notes(site: Site) -> List[str]:
    """What the findings say beyond the status (a refusal on another path)."""
    return [f.reason for f in site.findings if f.verdict == NOTE]


def compare(old_ep: Optional[EntryPoint], new_ep: Optional[EntryPoint], args: CallArgs,
            old: Release, new: Release) -> List[Finding]:
    """What the bump does to one call, from the two signatures alone."""
    if new_ep is None:
        return [Finding(BREAKS, f"`{old_ep.name}` is not in {new.label} (AttributeError/ImportError)")]
    new_bound, new_errors = bind(new_ep, args)
    if old_ep is None:
        if new_errors:
            return [Finding(BREAKS, f"TypeError under {new.label}: " + "; ".join(new_errors))]
        return [Finding(UNCHANGED, f"`{new_ep.name}` is new in {new.label}; the call binds")]
    _, old_errors = bind(old_ep, args)
    out: List[Finding] = []
    refused: Dict[str, List[str]] = {}  # path condition -> new parameters the release refuses there
    if new_errors:
        was = " (it already fails under the old release)" if old_errors else ""
        out.append(Finding(BREAKS, f"TypeError under {new.label}: " + "; ".join(new_errors) + was))
    elif old_errors:
        out.append(Finding(UNCHANGED, f"written for the new release: it binds under {new.label}, not under "
                                      f"{old.label} (" + "; ".join(old_errors) + ")"))
    old_pos, new_pos = old_ep.positional(), new_ep.positional()
    if args.star and [p.name for p in old_pos] != [p.name for p in new_pos]:
        out.append(Finding(MANUAL, "`*args`: the positional parameters changed, so where its items land "
                                   "cannot be read statically; bind them by keyword"))
    renamed = renamed_pairs(old_ep, new_ep)
    for i, text in enumerate(args.positional):
        a = old_pos[i].name if i < len(old_pos) else None
        b = new_pos[i].name if i < len(new_pos) else None
        if a and b and a != b:
            if renamed.get(a) == b:  # a heuristic: said, and still a rebind until a reviewer agrees
                out.append(Finding(REBINDS, f"positional argument {i + 1} (`{text}`) binds `{b}`, was `{a}`: "
                                            f"probably `{a}` renamed (heuristic: same slot and kind); check "
                                            f"that `{b}` means the same", param=a))
                continue
            out.append(Finding(REBINDS, f"positional argument {i + 1} (`{text}`) binds `{b}`, was `{a}`; "
                                        f"pass it as `{a}=...`", param=a))
    for p in new_ep.params:
        was = old_ep.param(p.name)
        if p.name in new_bound or p.kind in (VAR_POSITIONAL, VAR_KEYWORD):
            continue
        if was is not None and was.default is not None and p.default is not None and was.default != p.default:
            out.append(Finding(CHANGES_DEFAULT, f"`{p.name}` is left to its default, which changed from "
                                                f"{was.default} to {p.default}", param=p.name))
        elif was is None and not p.required and not args.double_star:
            out.append(Finding(OPPORTUNITY, f"`{p.name}={p.default}` is new in {new.label} and not passed",
                               param=p.name))
            for g in refusals(new_ep, p.name):
                refused.setdefault(g.condition or "always", []).append(p.name)
    for condition, params in refused.items():
        out.append(Finding(NOTE, f"{new.label} refuses {', '.join(f'`{n}`' for n in params)} when {condition}"))
    old_guards = {g.key() for g in old_ep.guards}
    for g in new_ep.guards:
        m = _REFUSAL.match(g.test) if g.kind == "assert" else None
        passed = args.passes(new_ep, m.group(1)) if m else None
        if passed is None or passed == "None" or g.key() in old_guards:
            continue
        if g.condition is None:
            out.append(Finding(MANUAL, f"{new.label} refuses `{m.group(1)}={passed}`: {g.describe()}",
                               param=m.group(1)))
        else:  # which path a call takes is a runtime fact: said, not judged
            out.append(Finding(NOTE, f"{new.label} refuses `{m.group(1)}` when {g.condition} "
                                     f"(`{g.describe()}`); this call passes `{passed}`"))
    return out


def refusals(ep: EntryPoint, param: str) -> list:
    """The release's `assert param is None` guards: the paths on which it refuses the parameter."""
    return [g for g in ep.guards if g.kind == "assert" and g.test == f"{param} is None"]


def match(callee: str, names: Sequence[str], roots: Sequence[str]) -> Optional[str]:
    """The entry point a resolved callee names, if it reaches the wrapper through its import root."""
    parts = callee.split(".")
    if len(parts) >= 2 and parts[0] in roots and parts[-1] in names:
        return parts[-1]
    return None
