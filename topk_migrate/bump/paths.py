"""Which paths through a release's wrapper one call takes, read from what the call itself passes.

The signatures hold each guard (an assert, a raise) and each op or function the wrapper calls with
the path condition it sits under, in the entry point's own names (signatures.py). Here those texts are
read against one call: a parameter the call passes as the literal `None`, or leaves to a default, is
that value; one passed as a literal constant is that constant; one passed as any other expression is
read as not None (an *assumption*, said wherever it decides something: `indices=page_table` is a
tensor, not None); one the call may pass through `*args`/`**kwargs`, or that the wrapper reassigns
on the way (`stale`), is unknown. What is left undecided (`isinstance(tile_scheduler_metadata,
FlashMLASchedMeta)`, `q.element_size() == 1`) is a path variable: every combination of them is a
path the call may take at run time, and a verdict holds only if it holds on all of them.

Three questions are answered that way:

* `applicability`: does a new parameter the call leaves out apply on the call's paths, or does the
  release refuse it there (`assert kv_format is None` when `indices is None`, for a call that passes no
  `indices`)? A guard refuses it where its test is false once the parameter is passed (a test that
  stays undecided, such as a shape check, is a contract, not a refusal).
* `refusals`: on which of the call's paths does a guard refuse the call as it stands?
* `callee_changes`: on which paths does the new release run other ops or functions than the old one?

Everything is bounded: a text past MAX_TEXT characters, or nested past MAX_DEPTH, is one undecided
whole; past MAX_ATOMS path variables, or MAX_WORK steps of judging them, a question is not decided
("cannot tell").
"""
from __future__ import annotations

import ast
import itertools
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Sequence, Set, Tuple, Union

from ..run_context import per_run
from .signatures import VAR_KEYWORD, VAR_POSITIONAL, Callee, EntryPoint, Guard, negation

MAX_TEXT = 4000
MAX_DEPTH = 40
MAX_ATOMS = 10
MAX_WORK = 2_000_000  # paths x nodes of the conditions judged on each: past it, not decided

# A condition, partly decided: True, False, an undecided atom (its text), or not/and/or of those.
R = Union[bool, Tuple]


@dataclass
class Value:
    """What one parameter holds when the call reaches the wrapper, as far as the call says."""

    kind: str  # "none" | "const" | "notnone" | "unknown"
    value: object = None  # the constant
    text: Optional[str] = None  # what the call passes, as source text (None: left to the default)
    assumed: bool = False  # notnone read from an expression, not from a literal


UNKNOWN = Value("unknown")


@per_run  # a release's and a fork's texts: kept for the run only (run_context), never the process
def _parse(text: str) -> Optional[ast.expr]:
    if len(text) > MAX_TEXT:
        return None
    try:
        return ast.parse(text.strip(), mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def value_of(text: Optional[str], default: Optional[str] = None) -> Value:
    """A parameter's value from what the call passes (`text`), else from its default."""
    if text is None:
        if default is None:
            return UNKNOWN
        v = value_of(default)
        return Value(v.kind, v.value, None, v.assumed)
    node = _parse(text)
    if node is None:
        return UNKNOWN
    if isinstance(node, ast.Constant):
        return Value("none", None, text) if node.value is None else Value("const", node.value, text)
    try:
        return Value("const", ast.literal_eval(node), text)  # -1, (1, 2), "V32"
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        pass
    if isinstance(node, (ast.List, ast.Dict, ast.Set, ast.Tuple, ast.JoinedStr, ast.Lambda, ast.ListComp,
                         ast.SetComp, ast.DictComp, ast.GeneratorExp)):
        return Value("notnone", None, text)
    if isinstance(node, (ast.IfExp, ast.BoolOp, ast.NamedExpr, ast.Await, ast.Yield, ast.YieldFrom, ast.Starred)):
        return Value("unknown", None, text)  # `x if c else None`, `a or None`: may be None
    return Value("notnone", None, text, assumed=True)


def call_values(ep: EntryPoint, args, overrides: Optional[Dict[str, Value]] = None) -> Dict[str, Value]:
    """Each parameter of `ep` as `args` (bind.CallArgs) binds it; what *args/**kwargs may bind, unknown."""
    out: Dict[str, Value] = {}
    positional = [p.name for p in ep.positional()]
    for p in ep.params:
        if p.kind in (VAR_POSITIONAL, VAR_KEYWORD):
            continue
        passed = args.passes(ep, p.name)
        if passed is not None:
            out[p.name] = value_of(passed)
        elif args.double_star or (args.star and p.name in positional
                                  and positional.index(p.name) >= len(args.positional)):
            out[p.name] = UNKNOWN
        else:
            out[p.name] = value_of(None, p.default)
    out.update(overrides or {})
    return out


# -- partly deciding a condition ---------------------------------------------------------------------

def _not(r: R) -> R:
    if r is True or r is False:
        return not r
    return r[1] if r[0] == "not" else ("not", r)


def _and(parts: Iterable[R]) -> R:
    kept, seen = [], set()
    for p in parts:
        if p is False:
            return False
        if p is not True and id(p) not in seen:  # the same reading twice (a memo's), once
            seen.add(id(p))
            kept.append(p)
    return True if not kept else kept[0] if len(kept) == 1 else ("and", tuple(kept))


def _or(parts: Iterable[R]) -> R:
    kept, seen = [], set()
    for p in parts:
        if p is True:
            return True
        if p is not False and id(p) not in seen:
            seen.add(id(p))
            kept.append(p)
    return False if not kept else kept[0] if len(kept) == 1 else ("or", tuple(kept))


_ATOMS: Dict[int, tuple] = {}  # id(node) -> (node, its text): parsed texts are cached, so are their atoms


def _atom(node: ast.expr) -> R:
    got = _ATOMS.get(id(node))
    if got is None or got[0] is not node:
        if len(_ATOMS) > 100_000:
            _ATOMS.clear()
        got = _ATOMS[id(node)] = (node, ast.unparse(node))  # the node is kept: its id is not reused
    return ("atom", got[1])


class Reader:
    """Decides what it can of conditions with the values a call gives its parameters."""

    def __init__(self, values: Dict[str, Value]):
        self.values = values
        self.used: Set[str] = set()  # parameters whose value decided something
        self._memo: Dict[tuple, tuple] = {}

    def read(self, text: Optional[str], stale: Sequence[str] = ()) -> R:
        if text is None:
            return True
        key = (text, tuple(stale))
        got = self._memo.get(key)
        if got is None:
            node = _parse(text)
            before, self.used = self.used, set()
            r = ("atom", text) if node is None else self._read(node, set(stale), 0)
            got = self._memo[key] = (r, frozenset(self.used))
            self.used = before
        self.used |= got[1]
        return got[0]

    def _value(self, node: ast.expr, stale: set) -> Optional[Value]:
        if isinstance(node, ast.Constant):
            return Value("none") if node.value is None else Value("const", node.value)
        if isinstance(node, ast.Name) and node.id in self.values and node.id not in stale:
            v = self.values[node.id]
            return None if v.kind == "unknown" else v
        return None

    def _decided(self, node: ast.expr) -> None:
        if isinstance(node, ast.Name):
            self.used.add(node.id)

    def _read(self, node: ast.expr, stale: set, depth: int) -> R:
        if depth > MAX_DEPTH:
            return _atom(node)
        if isinstance(node, ast.BoolOp):
            parts = [self._read(v, stale, depth + 1) for v in node.values]
            return _and(parts) if isinstance(node.op, ast.And) else _or(parts)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return _not(self._read(node.operand, stale, depth + 1))
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            op, left, right = node.ops[0], node.left, node.comparators[0]
            if isinstance(op, (ast.IsNot, ast.NotEq)):
                flip = ast.Is() if isinstance(op, ast.IsNot) else ast.Eq()
                return _not(self._read(ast.Compare(left, [flip], [right]), stale, depth + 1))
            if isinstance(op, (ast.Is, ast.Eq)):
                a, b = self._value(left, stale), self._value(right, stale)
                got = _same(a, b, isinstance(op, ast.Is))
                if got is None:
                    return _atom(node)
                self._decided(left)
                self._decided(right)
                return got
            return _atom(node)
        if isinstance(node, ast.Name):
            v = self._value(node, stale)
            if v is not None and v.kind in ("none", "const"):
                self._decided(node)
                return bool(v.value)
            return _atom(node)
        if isinstance(node, ast.Constant):
            return bool(node.value)
        return _atom(node)


def _same(a: Optional[Value], b: Optional[Value], identity: bool) -> Optional[bool]:
    """`a is b` (identity) or `a == b`, where the values decide it; None where they do not."""
    if a is None or b is None:
        return None
    kinds = {a.kind, b.kind}
    if kinds == {"none"}:
        return True
    if kinds == {"none", "const"}:
        return False
    if kinds == {"none", "notnone"}:
        return False  # a tensor (say) is not None, and == None is False for it
    if kinds == {"const"}:
        try:
            return bool(a.value is b.value) if identity and (a.value is None or b.value is None) else bool(a.value == b.value)
        except Exception:
            return None
    return None


def atoms(r: R, out: Optional[set] = None, seen: Optional[set] = None) -> set:
    out = set() if out is None else out
    seen = set() if seen is None else seen
    if isinstance(r, tuple) and id(r) not in seen:
        seen.add(id(r))
        if r[0] == "atom":
            out.add(r[1])
        elif r[0] == "not":
            atoms(r[1], out, seen)
        else:
            for p in r[1]:
                atoms(p, out, seen)
    return out


def holds(r: R, assignment: Dict[str, bool]) -> bool:
    if r is True or r is False:
        return r
    if r[0] == "atom":
        return assignment[r[1]]
    if r[0] == "not":
        return not holds(r[1], assignment)
    if r[0] == "and":
        return all(holds(p, assignment) for p in r[1])
    return any(holds(p, assignment) for p in r[1])


def _size(r: R) -> int:
    if not isinstance(r, tuple) or r[0] == "atom":
        return 1
    return 1 + (_size(r[1]) if r[0] == "not" else sum(_size(p) for p in r[1]))


def paths(rs: Sequence[R]) -> Optional[List[Dict[str, bool]]]:
    """Every assignment of the atoms of `rs` (one, empty, when none is left); None past MAX_ATOMS, or when
    judging `rs` on every one would take more than MAX_WORK steps."""
    found: set = set()
    seen: set = set()
    for r in rs:
        atoms(r, found, seen)
        if len(found) > MAX_ATOMS:
            return None
    names = sorted(found)
    if (sum(_size(r) for r in {id(r): r for r in rs}.values()) << len(names)) > MAX_WORK:
        return None
    return [dict(zip(names, bits)) for bits in itertools.product((False, True), repeat=len(names))]


def literal(atom: str, value: bool) -> str:
    """An atom as a path condition says it: `indices is None`, or its negation."""
    if value:
        return atom
    node = _parse(atom)
    if node is None:
        return f"not ({atom})"
    return ast.unparse(negation(node))


# -- guards --------------------------------------------------------------------------------------------

@dataclass
class Refusal:
    guard: Guard
    when: R  # on which paths it refuses


def refusals(ep: EntryPoint, reader: Reader, only: Optional[Sequence[Guard]] = None) -> List[Refusal]:
    """The guards that refuse the call (as the reader's values have it) on some path: an assert whose
    test is false there, a raise where its path is taken. An assert whose test stays undecided (a shape
    check) is a contract the call must meet, not a refusal."""
    out = []
    for g in (ep.guards if only is None else only):
        if g.kind == "assert":
            if reader.read(g.test, g.stale) is not False:
                continue
            when = reader.read(g.condition, g.stale)
        else:
            when = reader.read(g.condition, g.stale)
        if when is not False:
            out.append(Refusal(g, when))
    return out


def viable(rs: Sequence[Refusal]) -> R:
    """The paths on which none of `rs` refuses."""
    return _not(_or(r.when for r in rs))


@dataclass
class Applicability:
    verdict: str  # "applies" | "refused" | "unknown"
    refusals: List[Refusal] = field(default_factory=list)  # the guards that refuse it on the call's paths
    assumed: List[str] = field(default_factory=list)  # parameters read as not None from an expression
    decided_by: List[str] = field(default_factory=list)  # parameters whose value decided a path


def applicability(ep: EntryPoint, values: Dict[str, Value], param: str, free: Sequence[str] = ()) -> Applicability:
    """Whether passing `param` (any value but None) is refused on the paths the call takes. `free`: other
    parameters the call leaves out that may be passed with it (unknown here)."""
    base = Reader(values)
    cut = refusals(ep, base)
    live = viable(cut)
    reader = Reader({**values, **{f: UNKNOWN for f in free}, param: Value("notnone", None, "a value")})
    mine = refusals(ep, reader, [g for g in ep.guards if param in g.params])
    used = (base.used | reader.used) - {param}
    assumed = sorted(n for n in used if values.get(n, UNKNOWN).assumed)
    if not mine:
        return Applicability("applies", [], assumed, sorted(used))
    refused = _or(r.when for r in mine)
    every = paths([live, refused])
    if every is None:
        return Applicability("unknown", mine, assumed, sorted(used))
    taken = [a for a in every if holds(live, a)] or every  # a call refused anyway: judge every path
    hits = [holds(refused, a) for a in taken]
    verdict = "refused" if all(hits) else "applies" if not any(hits) else "unknown"
    # refused: every guard that refuses it (on whichever path); unknown: those on the call's paths
    shown = mine if verdict == "refused" else [r for r in mine if any(holds(r.when, a) for a in taken)]
    # what the call passes that decides it: the refusals' conditions, and what rules other paths out
    # where that changes the verdict
    why = Reader(values)
    for r in shown:
        why.read(r.guard.condition, r.guard.stale)
    everywhere = [holds(refused, a) for a in every]
    if verdict != ("refused" if all(everywhere) else "applies" if not any(everywhere) else "unknown"):
        for r in cut:
            if any(holds(r.when, a) for a in every):
                why.read(r.guard.test, r.guard.stale)
                why.read(r.guard.condition, r.guard.stale)
    return Applicability(verdict, shown, assumed, sorted(why.used - {param}))


@dataclass
class NewRefusal:
    verdict: str  # "every" (on every path the call took) | "some"
    refusals: List[Refusal]
    assumed: List[str]


def new_refusals(old_ep: EntryPoint, new_ep: EntryPoint, old_values: Dict[str, Value],
                 new_values: Dict[str, Value]) -> Optional[NewRefusal]:
    """The guards new in `new_ep` that refuse the call as it stands, on paths it took under `old_ep`."""
    old_keys = {g.key() for g in old_ep.guards}
    fresh = [g for g in new_ep.guards if g.key() not in old_keys]
    reader = Reader(new_values)
    hits = refusals(new_ep, reader, fresh)
    if not hits:
        return None
    old_reader = Reader(old_values)
    live = viable(refusals(old_ep, old_reader))
    refused = _or(r.when for r in hits)
    assumed = sorted(n for n in (reader.used | old_reader.used) if new_values.get(n, UNKNOWN).assumed)
    every = paths([live, refused])
    if every is None:
        return NewRefusal("some", hits, assumed)
    taken = [a for a in every if holds(live, a)]
    if not taken:
        return None  # the call failed on every path before: nothing it did is refused now
    return NewRefusal("every" if all(holds(refused, a) for a in taken) else "some", hits, assumed)


# -- callees -------------------------------------------------------------------------------------------

@dataclass
class CalleeChange:
    when: List[str]  # the path, as literals (empty: every path the call takes)
    old: List[str]
    new: List[str]


def _reached(calls: Sequence[Callee], reader: Reader) -> List[Tuple[str, R]]:
    return [(c.name, reader.read(c.condition, c.stale)) for c in calls]


def callee_changes(old_ep: EntryPoint, new_ep: EntryPoint, old_values: Dict[str, Value],
                   new_values: Dict[str, Value]) -> Tuple[Optional[List[CalleeChange]], List[str]]:
    """(the paths on which the new release runs other ops or functions than the old one for this call,
    with both sets; None when it cannot be told: past MAX_ATOMS; the parameters read as not None)."""
    old_reader, new_reader = Reader(old_values), Reader(new_values)
    old_calls, new_calls = _reached(old_ep.calls, old_reader), _reached(new_ep.calls, new_reader)
    old_refusals, new_refusals_ = refusals(old_ep, old_reader), refusals(new_ep, new_reader)
    old_live, new_live = viable(old_refusals), viable(new_refusals_)
    # what decided the paths: the calls' conditions and the guards that refuse on some path
    why = Reader({**old_values, **new_values})
    for c in (*old_ep.calls, *new_ep.calls):
        why.read(c.condition, c.stale)
    for r in (*old_refusals, *new_refusals_):
        why.read(r.guard.test, r.guard.stale)
        why.read(r.guard.condition, r.guard.stale)
    assumed = sorted(n for n in why.used if {**old_values, **new_values}.get(n, UNKNOWN).assumed)
    every = paths([old_live, new_live] + [r for _, r in old_calls + new_calls])
    if every is None:
        return None, assumed
    groups: Dict[tuple, List[Dict[str, bool]]] = {}
    taken = [a for a in every if holds(old_live, a) and holds(new_live, a)]
    for a in taken:
        was = tuple(sorted({n for n, r in old_calls if holds(r, a)}))
        now = tuple(sorted({n for n, r in new_calls if holds(r, a)}))
        if was != now:
            groups.setdefault((was, now), []).append(a)
    out = []
    for (was, now), hit in groups.items():
        keys = sorted(hit[0])
        fixed = [k for k in keys if len({a[k] for a in hit}) == 1]
        # the path: the atoms fixed across the group; none when it is every path the call takes
        when = [] if len(hit) == len(taken) else [literal(k, hit[0][k]) for k in fixed
                                                   if len({a[k] for a in taken}) > 1]
        out.append(CalleeChange(when, list(was), list(now)))
    return out, assumed
