"""Bind each call site of the fork against the old and the new signature, statically.

A call is found the way `check` finds kernel calls (topk_migrate.cst.resolve.collect: every import
spelling, function-local and aliased imports); it is one of the release's entry points when its
resolved name reaches one (`reach`): through the module that defines it, or through its package
where the package's `__init__` re-exports it. Verdicts, most serious first: breaks (a TypeError
under the new release), rebinds (a positional argument lands in another parameter, no error),
manual (cannot be bound statically: `*args`/`**kwargs` forwarded to an entry point that changed; or
the new release refuses the call on every path it takes), changes-default, changes-callee (the same
arguments now run other ops or functions), opportunity (a new optional parameter left out, that
applies on the call's paths), not-applicable (one the release refuses on them), unchanged. Which
paths a call takes is read from what it passes (paths.py).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Dict, List, Optional, Sequence, Tuple

from topk_migrate.model import BUMP_STATUSES, Finding, Site, Status

from . import paths
from .diff import GUARD_ADDED, GUARD_REMOVED, diff_entry, renamed_pairs
from .signatures import VAR_KEYWORD, VAR_POSITIONAL, EntryPoint, Release

if TYPE_CHECKING:  # LibCST is imported only where a file is parsed (in audit's workers)
    import libcst as cst

BREAKS, REBINDS, MANUAL = Status.BREAKS.value, Status.REBINDS.value, Status.MANUAL.value
CHANGES_DEFAULT, OPPORTUNITY, UNCHANGED = Status.CHANGES_DEFAULT.value, Status.OPPORTUNITY.value, Status.UNCHANGED.value
CHANGES_CALLEE, NOT_APPLICABLE = Status.CHANGES_CALLEE.value, Status.NOT_APPLICABLE.value
NOTE = "note"  # a fact worth reading that does not change the verdict (a refusal on another path)
SEVERITY = [s.value for s in BUMP_STATUSES]
_ORDER = SEVERITY + [NOTE]
FAILING = (Status.BREAKS, Status.REBINDS)  # what makes `bump` exit 1

_NOT_PASSED = " and not passed"  # how the plain finding of a new parameter that applies ends


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

    def is_plain(f: Finding) -> bool:
        return f.verdict == OPPORTUNITY and f.rule is None and bool(f.param) and f.reason.endswith(_NOT_PASSED)

    plain = [f.param for f in shown if is_plain(f)]
    parts = list(dict.fromkeys(f.reason for f in shown if not is_plain(f)))  # a reason shared by findings, once
    if plain:
        parts.append(("also " if parts else "") + "new in the release, not passed: "
                     + ", ".join(f"`{p}`" for p in plain))
    if verdict == OPPORTUNITY:
        refused = [f.param for f in kept if f.verdict == NOT_APPLICABLE and f.param]
        if refused:
            parts.append("not applicable here: " + ", ".join(f"`{p}`" for p in refused))
    elif _ORDER.index(verdict) < _ORDER.index(OPPORTUNITY):
        more = [f.param for f in kept if is_plain(f)]
        if more:
            parts.append("also new in the release, not passed: " + ", ".join(f"`{p}`" for p in more))
    return Site(path, line, column, callee, Status(verdict), "; ".join(parts) or "binds the same way; no new parameter",
                rule=next((f.rule for f in shown if f.rule), f"signature-{verdict}"), entry_point=entry_point,
                fix=next((f.fix for f in kept if f.fix), None), findings=tuple(kept))


def notes(site: Site) -> List[str]:
    """What the findings say beyond the status (a refusal on another path)."""
    return [f.reason for f in site.findings if f.verdict == NOTE]


def compare(old_ep: Optional[EntryPoint], new_ep: Optional[EntryPoint], args: CallArgs,
            old: Release, new: Release) -> List[Finding]:
    """What the bump does to one call, from the two signatures and the paths the call takes."""
    if new_ep is None:
        return [Finding(BREAKS, f"`{old_ep.name}` is not in {new.label} (AttributeError/ImportError)")]
    new_bound, new_errors = bind(new_ep, args)
    if old_ep is None:
        if new_errors:
            return [Finding(BREAKS, f"TypeError under {new.label}: " + "; ".join(new_errors))]
        return [Finding(UNCHANGED, f"`{new_ep.name}` is new in {new.label}; the call binds")]
    _, old_errors = bind(old_ep, args)
    out: List[Finding] = []
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
    forwards = " and ".join(w for w, on in (("*args", args.star), ("**kwargs", args.double_star)) if on)
    old_values, new_values = paths.call_values(old_ep, args), paths.call_values(new_ep, args)
    refused_params: List[tuple] = []
    added = [p for p in new_ep.params if old_ep.param(p.name) is None and not p.required
             and p.kind not in (VAR_POSITIONAL, VAR_KEYWORD) and p.name not in new_bound]
    for p in new_ep.params:
        was = old_ep.param(p.name)
        if p.name in new_bound or p.kind in (VAR_POSITIONAL, VAR_KEYWORD):
            continue
        if was is not None and was.default is not None and p.default is not None and was.default != p.default:
            out.append(Finding(CHANGES_DEFAULT, f"`{p.name}` is left to its default, which changed from "
                                                f"{was.default} to {p.default}", param=p.name))
        elif was is None and not p.required and not forwards:
            free = [q.name for q in added if q.name != p.name]
            a = paths.applicability(new_ep, new_values, p.name, free)
            if a.verdict == "refused":
                refused_params.append((p.name, p.default, a))
            else:
                out.append(_applicability(p.name, p.default, a, new_values, new))
    out += _not_applicable(refused_params, new_values, new)
    # a call that did not bind under the old release took no path through it: nothing of it is refused now
    refused = None if old_errors else paths.new_refusals(old_ep, new_ep, old_values, new_values)
    if refused is not None:
        out.append(_refused(refused, new_values, new))
    if forwards:
        changed = what_changed(old_ep, new_ep)
        if changed:
            out.append(Finding(MANUAL, f"cannot tell: the call forwards {forwards}, so what it passes cannot be "
                                       f"read statically; {new.label} changes `{new_ep.name}`: " + "; ".join(changed)))
        else:
            out.append(Finding(UNCHANGED, f"the call forwards {forwards}; `{new_ep.name}` is the same in both releases"))
    else:
        changes, assumed = paths.callee_changes(old_ep, new_ep, old_values, new_values)
        if changes is None:
            out.append(Finding(NOTE, "cannot tell whether the call runs other ops under "
                                     f"{new.label}: too many undecided path conditions"))
        elif changes:
            out.append(Finding(CHANGES_CALLEE, _callee_reason(changes, assumed, new_values, old, new)))
    return out


def _names(names: Sequence[str]) -> str:
    return ", ".join(f"`{n}`" for n in names)


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= 48 else text[:45] + "..."


def _passes(names: Sequence[str], values: Dict[str, "paths.Value"]) -> str:
    """What the call passes for `names`, as a reader checks it: "this call passes no `indices`,
    `num_splits=x` (read as not None)"."""
    absent, literal, assumed = [], [], []
    for n in names:
        v = values.get(n)
        if v is None or v.kind == "unknown":
            continue
        if v.text is None:
            absent.append(f"`{n}`")
        elif v.assumed:
            assumed.append(f"`{n}={_short(v.text)}`")
        else:
            literal.append(f"`{n}={_short(v.text)}`")
    parts = (["no " + " or ".join(absent)] if absent else []) + literal + (
        [", ".join(assumed) + " (read as not None)"] if assumed else [])
    return ("this call passes " + ", ".join(parts)) if parts else ""


def _guards(rs: Sequence["paths.Refusal"]) -> str:
    """The refusing guards, each once with its message, and the paths it refuses on."""
    wheres: Dict[str, List[str]] = {}
    for r in rs:
        g = r.guard
        what = (f"`assert {g.test}`" if g.kind == "assert" else f"`{g.test}`") + (
            f" (\"{g.message}\")" if g.message and g.message != g.test else "")
        where = (f"when {g.condition}" if g.condition else "on every path") + (f" (in {g.via})" if g.via else "")
        wheres.setdefault(what, [])
        if where not in wheres[what]:
            wheres[what].append(where)
    return "; ".join(f"{what} {', or '.join(where)}" for what, where in wheres.items())


def _facts(name: str, a: "paths.Applicability", values) -> str:
    """What the call passes that decides the paths on which `name` is refused."""
    return _passes(a.decided_by, values)


def _not_applicable(items: Sequence[tuple], values, new: Release) -> List[Finding]:
    """One finding per new parameter the release refuses on every path the call takes; those refused by
    the same kind of guard (`assert X is None`, no message) on the same paths share one reason."""
    groups: Dict[tuple, List[tuple]] = {}
    for name, default, a in items:
        plain = all(r.guard.kind == "assert" and r.guard.test == f"{name} is None" and not r.guard.message
                    for r in a.refusals)
        paths_ = tuple(sorted({(r.guard.condition or "", r.guard.via or "") for r in a.refusals}))
        key = (paths_, _facts(name, a, values)) if plain else (name,)
        groups.setdefault(key, []).append((name, default, a))
    out = []
    for key, members in groups.items():
        facts = _facts(members[0][0], members[0][2], values)
        tail = f"; {facts}" if facts else ""
        if len(members) == 1:
            name, default, a = members[0]
            reason = (f"`{name}={default}` is new in {new.label} but not applicable here: the release refuses it on "
                      f"every path this call takes: {_guards(a.refusals)}{tail}")
        else:
            where = ", or ".join((f"when {c}" if c else "on every path") + (f" (in {v})" if v else "")
                                 for c, v in key[0])
            reason = (f"new in {new.label} but not applicable here: {_names([m[0] for m in members])}: the release "
                      f"asserts each is None {where}{tail}")
        out += [Finding(NOT_APPLICABLE, reason, param=m[0]) for m in members]
    return out


def _applicability(name: str, default: Optional[str], a: "paths.Applicability", values, new: Release) -> Finding:
    if a.verdict == "applies":
        return Finding(OPPORTUNITY, f"`{name}={default}` is new in {new.label}" + _NOT_PASSED, param=name)
    facts = _facts(name, a, values)
    return Finding(OPPORTUNITY, f"`{name}={default}` is new in {new.label}, not passed; cannot tell whether it "
                                f"applies here: the release refuses it " + (_guards(a.refusals) or "on some paths")
                   + (f"; {facts}" if facts else ""), param=name)


def _refused(r: "paths.NewRefusal", values, new: Release) -> Finding:
    reader = paths.Reader(values)
    for x in r.refusals:
        reader.read(x.guard.test, x.guard.stale)
        reader.read(x.guard.condition, x.guard.stale)
    facts = _passes(sorted(reader.used), values)
    tail = f"; {facts}" if facts else ""
    if r.verdict == "every":
        return Finding(MANUAL, f"{new.label} refuses this call on every path it takes: {_guards(r.refusals)}{tail}")
    return Finding(NOTE, f"{new.label} refuses this call on some paths: {_guards(r.refusals)}{tail}")


def _callee_reason(changes: Sequence["paths.CalleeChange"], assumed: Sequence[str], values, old: Release,
                   new: Release) -> str:
    parts = []
    for c in changes:
        where = f"when {' and '.join(c.when)}" if c.when else "with this call's arguments"
        parts.append(f"{where}, {new.label} runs {_names(c.new) or 'no op or function'} where {old.label} ran "
                     f"{_names(c.old) or 'no op or function'}")
    facts = _passes(assumed, values)
    return "; ".join(parts) + (f"; {facts}" if facts else "") + "; check that the results are the same"


def what_changed(old_ep: EntryPoint, new_ep: EntryPoint) -> List[str]:
    """What the new release changes in an entry point, as a forwarding call's reason names it."""
    changes = diff_entry(old_ep, new_ep)
    out = [f"{c.kind} {c.detail}" for c in changes if c.kind not in (GUARD_ADDED, GUARD_REMOVED)]
    added = sum(c.kind == GUARD_ADDED for c in changes)
    removed = sum(c.kind == GUARD_REMOVED for c in changes)
    if added or removed:
        out.append(f"{added} assert/raise(s) added, {removed} removed")
    return out


def reach(release: Release, callee: str) -> Tuple[Optional[str], Optional[str]]:
    """(the entry point a resolved callee reaches in `release`, why not where it names one but does not
    reach it). Through the module that defines it (`sgl_kernel.flash_mla.X`); through its package where
    the package's `__init__` re-exports it, or was not read (`sgl_kernel.X`); through another module of
    the package that was not read, as that module may re-export it."""
    module, _, name = callee.rpartition(".")
    ep = release.entry_points.get(name)
    if ep is None or not module:
        return None, None
    own = ep.dotted_module()
    if module == own:
        return name, None
    package = own.rpartition(".")[0]
    if module == package:
        exported = (release.exports or {}).get(package)
        if exported is None or name in exported:
            return name, None
        return None, f"`{package.replace('.', '/')}/__init__.py` does not re-export `{name}`"
    if module in {e.dotted_module() for e in release.entry_points.values()}:
        return None, f"`{module}` has no `{name}`"
    return (name, None) if module.split(".")[0] == own.split(".")[0] else (None, None)


def refusals(ep: EntryPoint, param: str) -> list:
    """The release's `assert param is None` guards: the paths on which it refuses the parameter."""
    return [g for g in ep.guards if g.kind == "assert" and g.test == f"{param} is None"]


def match(callee: str, names: Sequence[str], roots: Sequence[str]) -> Optional[str]:
    """The entry point a resolved callee names, if it reaches the wrapper through its import root."""
    parts = callee.split(".")
    if len(parts) >= 2 and parts[0] in roots and parts[-1] in names:
        return parts[-1]
    return None
