"""docs/soundness.md `graph-replay`, its every-path half: does each run of a replay hook that returns reach an
update of the captured lengths? Each path through the def's statements is followed (both sides of each `if`,
each `match` arm and the case none matches, a loop run zero times or again, a `with` whose manager may swallow
an exception, a `try` handler that does), as a set of states: whether an update was passed, the locals that may be
bound, and the locals bound to a literal `True`/`False`. A path that reads a local it never bound raises (sglang
0.5.16's mode chain has no `else`: `seqlens_expanded` is unbound after it), and a test of a literal-bound flag
takes its one side (0.5.16's `if not used_fused_metadata_generation:`). A generator or a coroutine updates late,
or never: its body runs when its caller steps it (round X)."""
from __future__ import annotations

from typing import Callable, Dict, FrozenSet, List, Optional, Sequence, Set, Tuple

import libcst as cst
from libcst.helpers import get_full_name_for_node
from libcst.metadata import ImportAssignment

from .rows import TRANSPARENT_DECORATORS, _engine_import, imported_names
from .syntax import _code, _root

# managers that never swallow an exception from their block (their `__exit__` returns nothing true)
NON_SUPPRESSING = {
    "torch.no_grad", "torch.inference_mode", "torch.enable_grad", "torch.cuda.stream", "torch.cuda.device",
    "torch.cuda.nvtx.range", "torch.profiler.record_function", "torch.autograd.profiler.record_function",
    "contextlib.nullcontext", "nullcontext",
}
MAX_STATES = 2048  # past this many distinct states on one statement, the def is not proven (never a guess)

# (updated, locals that may be bound, literal flags as (name, value))
State = Tuple[bool, FrozenSet[str], FrozenSet[Tuple[str, bool]]]

_NOT_DIRECT = (cst.Lambda, cst.FunctionDef, cst.ClassDef, cst.ListComp, cst.SetComp, cst.DictComp,
               cst.GeneratorExp, cst.IfExp, cst.BooleanOperation)


class _Unproven(Exception):
    """A path returns without the update, or the walk cannot follow a statement."""


class ReplayPaths:
    """One def's paths. `updates(small_statement)`: does it (not a lambda, a comprehension or a branch of an
    expression in it) update the captured lengths on every run of it."""

    def __init__(self, tree, fdef: cst.FunctionDef, updates: Callable[[cst.CSTNode], bool]):
        self.tree, self.fdef, self.updates = tree, fdef, updates
        scope = tree.scope_of.get(fdef.body.body[0]) if fdef.body.body else None
        self.locals: Set[str] = {a.name for a in scope.assignments} if scope is not None else set()
        self._rebound = {a.name for a in scope.assignments if not isinstance(a.node, cst.Param)} if scope else set()
        params = fdef.params
        self.params = frozenset(p.name.value for p in [*params.posonly_params, *params.params, *params.kwonly_params]) \
            | {p.name.value for p in (params.star_arg, params.star_kwarg) if isinstance(p, cst.Param)}
        self._reads = {id(a.node): a.node.value for a in (scope.accesses if scope is not None else ())
                       if isinstance(a.node, cst.Name) and a.node.value in self.locals}
        self._declared = self._declared_modes()
        # locals a nested def rebinds (`nonlocal used_fast_path`): a literal flag of one says nothing (round AB)
        self._shared = {n.name.value for d in tree.find((cst.Nonlocal, cst.Global), within=fdef) for n in d.names}
        # (and a module's global the hook declares, which any function may rebind: round AC)
        self._loops: List[Tuple[Set[State], Set[State]]] = []  # each loop's (break, continue) states
        self._failing: List[Set[State]] = []  # each enclosing `try`/`with`: the states its statements were entered with

    def covers(self) -> bool:
        """Does every path through the def that ends without raising pass an update?"""
        if self.fdef.asynchronous is not None or self._yields() or not all(map(_keeps_the_call, self.fdef.decorators)):
            return False  # (a decorator of the project may run the body later, or never: round Y)
        try:
            ends = self._walk(self.fdef.body.body, {(False, self.params, frozenset())})
        except _Unproven:
            return False
        return all(updated for updated, _, _ in ends)

    def _yields(self) -> bool:
        """Is the def a generator: a `yield` in its own body at any depth (a branch of an expression too), not in a
        nested def or lambda?"""
        def own(y: cst.CSTNode) -> bool:
            for up in self.tree.ancestors(y):
                if up is self.fdef:
                    return True
                if isinstance(up, (cst.FunctionDef, cst.Lambda)):
                    return False
            return False
        return any(own(y) for y in self.tree.find((cst.Yield, cst.Await), within=self.fdef.body))

    def _direct(self, node: cst.CSTNode, stop: cst.CSTNode) -> bool:
        """Is node run whenever stop is (no nested def, lambda, comprehension or branch of an expression between)?"""
        for up in self.tree.ancestors(node):
            if up is stop:
                return True
            if isinstance(up, _NOT_DIRECT):
                return False
        return False

    # -- statements --------------------------------------------------------------
    def _walk(self, stmts: Sequence[cst.BaseStatement], states: Set[State]) -> Set[State]:
        for stmt in stmts:
            if not states:
                return states
            for entered in self._failing:  # a failure in stmt leaves with the states it was entered with
                entered |= states
            states = self._statement(stmt, states)
            if len(states) > MAX_STATES:
                raise _Unproven()
        return states

    def _statement(self, stmt: cst.BaseStatement, states: Set[State]) -> Set[State]:
        if isinstance(stmt, cst.SimpleStatementLine):
            for i, small in enumerate(stmt.body):
                if i:
                    for entered in self._failing:  # (`a; b`: b may fail after a ran)
                        entered |= states
                states = self._small(small, states)
            return states
        if isinstance(stmt, cst.If):
            return self._if(stmt, states)
        if isinstance(stmt, (cst.For, cst.While)):
            return self._loop(stmt, states)
        if isinstance(stmt, cst.With):
            return self._with(stmt, states)
        if isinstance(stmt, (cst.Try, cst.TryStar)):
            return self._try(stmt, states)
        if isinstance(stmt, cst.Match):
            return self._match(stmt, states)
        if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            return {self._bind(s, [stmt.name.value]) for s in states}
        raise _Unproven()

    def _small(self, small: cst.BaseSmallStatement, states: Set[State]) -> Set[State]:
        states = self._reading(small, states)
        if isinstance(small, cst.Return):
            if any(not updated for updated, _, _ in states):
                raise _Unproven()
            return set()
        if isinstance(small, cst.Raise):
            return set()
        if isinstance(small, (cst.Break, cst.Continue)):
            if not self._loops:
                raise _Unproven()
            self._loops[-1][isinstance(small, cst.Continue)].update(states)
            return set()
        bound = self._bound_by(small)
        flag = _literal_flag(small)
        flag = None if flag is None or flag[0] in self._shared else flag
        updated = self.updates(small)
        out = set()
        for done, names, flags in states:
            flags = frozenset((n, v) for n, v in flags if n not in bound)
            if flag is not None:
                flags |= {flag}
            out.add((done or updated, names | bound, flags))
        return out

    def _if(self, stmt: cst.If, states: Set[State], tests: Tuple[cst.BaseExpression, ...] = ()) -> Set[State]:
        states = self._reading(stmt.test, states)
        tests += (stmt.test,)
        taken, other = set(), set()
        for s in states:
            side = _decided(stmt.test, s[2])
            if side is not False:
                taken.add(s)
            if side is not True:
                other.add(s)
        out = self._walk(stmt.body.body, taken)
        if self._settled(stmt):
            other = {(True, names, flags) for _, names, flags in other}
        if isinstance(stmt.orelse, cst.If):
            return out | self._if(stmt.orelse, other, tests)
        if isinstance(stmt.orelse, cst.Else):
            return out | self._walk(stmt.orelse.body.body, other)
        if self._names_every_declared_mode(tests):
            return out  # (a mode the hook is never replayed in: sglang 0.5.12's precomputed copy, round Z)
        return out | other

    # -- modes ---------------------------------------------------------------------
    def _mode_tests(self, tests: Sequence[cst.BaseExpression]) -> Optional[Tuple[str, FrozenSet[str]]]:
        """A chain's tests as (the parameter they ask, the predicates asked), where each is `p.is_x(...)` or an `or`
        of those, all on one parameter the def never rebinds; else None."""
        asked: Set[Tuple[str, str]] = set()
        todo = list(tests)
        while todo:
            test = todo.pop()
            if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.Or):
                todo += [test.left, test.right]
                continue
            func = test.func if isinstance(test, cst.Call) else None
            if not (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name)
                    and func.attr.value.startswith("is_") and func.value.value in self.params
                    and func.value.value not in self._rebound and not self._changed(func.value.value)):
                return None
            asked.add((func.value.value, _code(test).strip()[len(func.value.value):]))
        bases = {b for b, _ in asked}
        return (bases.pop(), frozenset(p for _, p in asked)) if len(bases) == 1 else None

    def _changed(self, param: str) -> bool:
        """May the def change what the parameter's predicates answer: an attribute or item of it stored
        (`forward_batch.forward_mode = "decode"` between two chains: round AB), the parameter handed to a call, or a
        method of it called that asks nothing (`is_*` asks)? The engine's `ForwardMode`, an enum, changes by no call."""
        if self._engine_modes(param, "ForwardMode"):
            return False
        def rooted(e: cst.BaseExpression) -> bool:
            while isinstance(e, (cst.Attribute, cst.Subscript)):
                e = e.value
            return _is_param(e, param)
        for node in self.tree.find((cst.AssignTarget, cst.AugAssign, cst.AnnAssign, cst.Call), within=self.fdef.body):
            if isinstance(node, cst.Call):
                func = node.func
                if any(isinstance(up, cst.Raise) for up in self.tree.ancestors(node)) or \
                        (get_full_name_for_node(func) or "") in _READING_BUILTINS:
                    continue  # (`raise ValueError(mode)` ends the path; `isinstance(mode, ...)` reads)
                if any(_is_param(a.value, param) for a in node.args) or isinstance(
                        func, cst.Attribute) and _is_param(func.value, param) and not func.attr.value.startswith("is_"):
                    return True
            elif isinstance(node.target, (cst.Attribute, cst.Subscript)) and rooted(node.target):
                return True
        return False

    def _declared_modes(self) -> Dict[str, FrozenSet[str]]:
        """The modes the hook declares it is replayed in: for a parameter, the predicates of a chain over it whose
        last `else` only raises (`else: raise ValueError(f"Unsupported forward_mode")`)."""
        declared: Dict[str, FrozenSet[str]] = {}
        for stmt in self.tree.find(cst.If, within=self.fdef.body):
            if not self._direct(stmt, self.fdef):
                continue  # (a nested def's or lambda's chain declares nothing of this hook's)
            top = stmt in self.fdef.body.body  # (one under a branch, `if self.debug_checks:`, may not run: round AC)
            tests, link = [], stmt
            while isinstance(link, cst.If):
                tests.append(link.test)
                link = link.orelse
            if isinstance(link, cst.Else) and _only_raises(link.body) and (asked := self._mode_tests(tests)) \
                    and (top and self._always_raised(stmt, link) or self._engine_modes(asked[0])):
                base, modes = asked
                declared[base] = declared.get(base, frozenset()) | modes
        return declared

    def _always_raised(self, chain: cst.If, raising: cst.Else) -> bool:
        """Is the chain's raise a failure of the step in every mode it leaves undeclared: no `return` of the hook
        before the chain (a mode returning early is never asked), no `try` of the hook around the raise (a mode
        whose raise is caught goes on)? Round AA: a1's early return and caught raise."""
        start = self.tree.line(chain)
        if any(self._direct(r, self.fdef) and self.tree.line(r) < start
               for r in self.tree.find(cst.Return, within=self.fdef.body)):
            return False
        for up in self.tree.ancestors(raising):
            if up is self.fdef:
                return True
            if isinstance(up, cst.Try) and up.handlers or isinstance(up, getattr(cst, "TryStar", ())) \
                    or isinstance(up, cst.With):
                return False
        return True

    def _engine_modes(self, base: str, named: str = "") -> bool:
        """Is the chain's parameter annotated with a class the engine's packages define (sglang's ForwardMode, whose
        replayed modes are the engine's: an engine-data assumption, sglang 0.5.12's declaring chain sits in a `try`
        that logs and falls back), of that name where one is given?"""
        param = next((p for p in self.fdef.params.params + self.fdef.params.kwonly_params if p.name.value == base),
                     None)
        annotation = param.annotation.annotation if param is not None and param.annotation is not None else None
        return isinstance(annotation, (cst.Name, cst.Attribute)) and _engine_import(self.tree, annotation) and (
            not named or (get_full_name_for_node(annotation) or "").rsplit(".", 1)[-1] == named)

    def _names_every_declared_mode(self, tests: Sequence[cst.BaseExpression]) -> bool:
        """Does a chain with no `else` ask, over a parameter, every mode the hook declares (_declared_modes), so that
        falling through it is a mode the hook is never replayed in?"""
        asked = self._mode_tests(tests)
        return asked is not None and asked[0] in self._declared and self._declared[asked[0]] <= asked[1]

    def _loop(self, stmt, states: Set[State]) -> Set[State]:
        """The states the loop leaves with: after any number of runs of its body (zero too, but for a `while True`
        or a loop over a non-empty display), and at each `break`."""
        head = stmt.iter if isinstance(stmt, cst.For) else stmt.test
        states = self._reading(head, states)
        if isinstance(stmt, cst.For):
            states = {self._bind(s, self._names_in(stmt.target)) for s in states}
        forever = isinstance(stmt, cst.While) and isinstance(stmt.test, cst.Name) and stmt.test.value == "True"
        runs = forever or isinstance(stmt, cst.For) and isinstance(stmt.iter, (cst.Tuple, cst.List)) and any(
            isinstance(e, cst.Element) for e in stmt.iter.elements)  # (`[*records]` may be empty: round AA)
        ended = set() if runs else set(states)  # the test failing, or the iterator done
        broke: Set[State] = set()
        seen, todo = set(states), set(states)
        for _ in range(8):  # a run more each pass: the states only grow, and are few
            self._loops.append((set(), set()))
            after = self._walk(stmt.body.body, todo)
            breaks, continues = self._loops.pop()
            broke |= breaks
            if not forever:
                ended |= after | continues
            todo = (after | continues) - seen
            seen |= todo
            if not todo:
                break
        else:
            raise _Unproven()
        if stmt.orelse is not None:
            ended = self._walk(stmt.orelse.body.body, ended)
        return ended | broke

    def _with(self, stmt: cst.With, states: Set[State]) -> Set[State]:
        for item in stmt.items:
            states = self._reading(item.item, states)
            if item.asname is not None:
                states = {self._bind(s, self._names_in(item.asname.name)) for s in states}
        if stmt.asynchronous is None and all(keeps_exceptions(self.tree, i.item) for i in stmt.items):
            return self._walk(stmt.body.body, states)
        done, failed = self._guarded(stmt.body, states)
        return done | failed  # the manager may swallow a failure of any statement of the block

    def _try(self, stmt, states: Set[State]) -> Set[State]:
        done, failed = self._guarded(stmt.body, states)
        through = set(failed)  # failures that reach `finally` (no handler may match: all of the body's)
        if stmt.orelse is not None:
            done, escaped = self._guarded(stmt.orelse.body, done)
            through |= escaped
        for handler in stmt.handlers:
            entry = failed if handler.name is None else {self._bind(s, self._names_in(handler.name.name)) for s in failed}
            more, escaped = self._guarded(handler.body, entry)
            done |= more
            through |= escaped
        if stmt.finalbody is not None:
            # (a failure passes through `finally` too: a `return` there swallows it, and must have updated: round Z)
            self._walk(stmt.finalbody.body.body, through)
            done = self._walk(stmt.finalbody.body.body, done)
        return done

    def _guarded(self, block: cst.BaseSuite, states: Set[State]) -> Tuple[Set[State], Set[State]]:
        """The block's states where it ends, and where a failure in it leaves: the states any statement of it (at
        any depth) was entered with, which a statement that fails midway has bound nothing of yet."""
        self._failing.append(set())
        try:
            done = self._walk(block.body, states)
        finally:
            failed = self._failing.pop()
        return done, failed

    def _match(self, stmt: cst.Match, states: Set[State]) -> Set[State]:
        states = self._reading(stmt.subject, states)
        out: Set[State] = set()
        total = False
        for case in stmt.cases:
            entry = {self._bind(s, self._names_in(case.pattern)) for s in states}
            out |= self._walk(case.body.body, entry)
            total = total or case.guard is None and isinstance(case.pattern, cst.MatchAs) and case.pattern.pattern is None
        return out if total else out | states

    def _settled(self, stmt: cst.If) -> bool:
        """`if not torch.equal(a, b): a.copy_(b)` (an update): where the test fails, a already holds b."""
        test = stmt.test
        if not (isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not)
                and isinstance(test.expression, cst.Call)
                and get_full_name_for_node(test.expression.func) == "torch.equal" and len(test.expression.args) == 2):
            return False
        a, b = (_code(x.value).strip() for x in test.expression.args)
        for line in stmt.body.body:
            for small in getattr(line, "body", ()) if isinstance(line, cst.SimpleStatementLine) else ():
                call = small.value if isinstance(small, cst.Expr) else None
                if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and call.func.attr.value == "copy_" \
                        and len(call.args) == 1 and _code(call.func.value).strip() == a and _code(call.args[0].value).strip() == b \
                        and self.updates(small):
                    return True
        return False

    # -- states ------------------------------------------------------------------
    def _reading(self, node: cst.CSTNode, states: Set[State]) -> Set[State]:
        """The paths that survive node's reads (one reading a local no path to it may have bound raises), with what
        its `:=` binds bound (round Z: `if (md := self.T.get(bs)) is None: return`)."""
        reads = {self._reads[id(n)] for n in self.tree.find(cst.Name, within=node)
                 if id(n) in self._reads and (n is node or self._direct(n, node))}
        states = {s for s in states if reads <= s[1]} if reads else states
        walrus = frozenset(n for w in self.tree.find(cst.NamedExpr, within=node) for n in self._names_in(w.target))
        return {self._bind(s, walrus) for s in states} if walrus else states

    def _bind(self, state: State, names) -> State:
        names = frozenset(names)
        return state[0], state[1] | names, frozenset((n, v) for n, v in state[2] if n not in names)

    def _bound_by(self, small: cst.CSTNode) -> FrozenSet[str]:
        return self._names_in(small) if not isinstance(small, cst.Expr) or self.tree.find(
            cst.NamedExpr, within=small) else frozenset()

    def _names_in(self, node: Optional[cst.CSTNode]) -> FrozenSet[str]:
        """The locals node may bind (every name of the def's own locals it spells but does not read)."""
        if node is None:
            return frozenset()
        return frozenset(n.value for n in self.tree.find(cst.Name, within=node)
                         if n.value in self.locals and id(n) not in self._reads)



def keeps_exceptions(tree, manager: cst.BaseExpression) -> bool:
    """Does a `with` item's manager never swallow its block's exception: a read or call of NON_SUPPRESSING, its root
    name bound only by imports, each of it (a name the module binds otherwise may be any manager)?"""
    func = manager.func if isinstance(manager, cst.Call) else manager
    root = _root(func)
    if root is None:
        return False
    names = imported_names(tree, func)
    return bool(names) and all(n in NON_SUPPRESSING for n in names) and all(
        isinstance(a, ImportAssignment) for a in tree.binding(root, root.value).assignments)


def _keeps_the_call(decorator: cst.Decorator) -> bool:
    """A decorator that runs the def when it is called: rows.TRANSPARENT_DECORATORS, bare or called with nothing."""
    d = decorator.decorator
    if isinstance(d, cst.Call):
        if d.args:
            return False
        d = d.func
    return (get_full_name_for_node(d) or "") in TRANSPARENT_DECORATORS


def _only_raises(block: cst.BaseSuite) -> bool:
    body = block.body
    return len(body) == 1 and isinstance(body[0], cst.SimpleStatementLine) and len(body[0].body) == 1 \
        and isinstance(body[0].body[0], cst.Raise)


def _literal_flag(small: cst.CSTNode) -> Optional[Tuple[str, bool]]:
    """`flag = True` / `flag = False` (one name): (flag, value)."""
    if isinstance(small, (cst.Assign, cst.AnnAssign)) and isinstance(small.value, cst.Name) \
            and small.value.value in ("True", "False"):
        target = small.targets[0].target if isinstance(small, cst.Assign) and len(small.targets) == 1 else \
            getattr(small, "target", None)
        if isinstance(target, cst.Name):
            return target.value, small.value.value == "True"
    return None


def _decided(test: cst.BaseExpression, flags: FrozenSet[Tuple[str, bool]]) -> Optional[bool]:
    """The test's value on a path where these locals hold these literals: `flag`, `not flag`; else None."""
    negate = isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not)
    name = test.expression if negate else test
    if not isinstance(name, cst.Name):
        return None
    value = dict(flags).get(name.value)
    return None if value is None else value != negate


_READING_BUILTINS = {"isinstance", "str", "repr", "print", "type", "len", "id", "hash", "format"}


def _is_param(e: cst.BaseExpression, param: str) -> bool:
    return isinstance(e, cst.Name) and e.value == param
