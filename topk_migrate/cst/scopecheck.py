"""Scope facts of one module tree, used to plan a rewrite and to validate it afterwards.

Built on LibCST's ScopeProvider (parents from one walk of our own). Nodes are numbered in source
(preorder) order and scopes by the order of the nodes that open them, so two trees that
differ only by inserted code (which never opens a scope) can be compared access by access.

Scopes and positions come from scopefast (LibCST's internals, for speed) where the accelerators' switch is
on (accel.py), else from LibCST's MetadataWrapper: the same answers.
"""
from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from functools import cached_property
from typing import Callable, Dict, Iterator, List, Optional, Sequence, Set, Tuple

import libcst as cst
from libcst.helpers import get_full_name_for_node
from libcst.metadata import (
    Assignment,
    BuiltinScope,
    FunctionScope,
    GlobalScope,
    MetadataWrapper,
    PositionProvider,
    Scope,
    ScopeProvider,
)

from . import accel, cstwalk

if accel.on():  # the accelerated providers: LibCST's internals, imported only where the switch is on
    from . import scopefast
    from .scopefast import LazyScopes as _LazyScopes
    from .scopefast import StatementPositions

BLOCKS = (cst.Module, cst.IndentedBlock, cst.SimpleStatementLine, cst.SimpleStatementSuite)
PLAIN_TYPES = {"dict", "list", "tuple", "str", "int", "float", "bool", "bytes", "set", "Dict", "List", "Tuple",
               "Mapping", "MutableMapping", "Sequence", "Set", "FrozenSet", "frozenset"}


class _Numberer(cst.CSTVisitor):
    """Source order, subtree ends and parents in one walk (cheaper than ParentNodeProvider)."""

    def __init__(self) -> None:
        self.order: Dict[int, int] = {}
        self.end: Dict[int, int] = {}
        self.parent: Dict[cst.CSTNode, cst.CSTNode] = {}
        self._stack: List[cst.CSTNode] = []
        self._n = 0

    def on_visit(self, node: cst.CSTNode) -> bool:
        self.order[id(node)] = self._n
        self._n += 1
        if self._stack:
            self.parent[node] = self._stack[-1]
        self._stack.append(node)
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self._stack.pop()
        self.end[id(original_node)] = self._n - 1


def _positions(wrapper: MetadataWrapper):
    """wrapper.resolve(PositionProvider) (scopefast's, where the accelerators are on)."""
    if accel.on():
        return scopefast.positions(wrapper)
    return wrapper.resolve(PositionProvider)


def scope_map(module: cst.Module, provider=None, context=None):
    """What MetadataWrapper.resolve(ScopeProvider) gives, node -> scope: scopefast.scope_map where the
    accelerators are on (`provider`, `context`: instances of its providers to fill), else LibCST's."""
    if accel.on():
        return scopefast.scope_map(module, provider, context)
    return MetadataWrapper(module, unsafe_skip_copy=True).resolve(ScopeProvider)


# Tree.skip_bodies leaves bodies out (scopefast's partial visitors) only where the accelerators are on
_PARTIAL = accel.on()


@dataclass
class Binding:
    """Where a name read resolves: the scope (by rank) and the assignments Python may use."""

    scope_rank: Optional[int]  # None: unbound; -1: builtin
    assignments: Tuple[object, ...]


class Tree:
    """One parsed module with positions; scopes, parents and source order are worked out on first
    use (a module whose kernel calls all pass the parameter never needs them)."""

    def __init__(self, module: cst.Module, positions: bool = True, source: Optional[str] = None):
        """positions: the module's, all at once; or, given its `source`, each statement's when a node in it
        is asked (StatementPositions, where the accelerators are on). Without positions, `position` is empty."""
        self.module = module
        if not positions:
            self.position = {}
        elif source is not None and accel.on():
            self.position = StatementPositions(self, source)
        else:
            self.position = _positions(MetadataWrapper(module, unsafe_skip_copy=True))
        self._skipped: Optional[Tuple[List[int], List[int], List[cst.FunctionDef]]] = None  # bodies left out
        self._bindings: Dict[Tuple[int, str], Binding] = {}

    def skip_bodies(self, defs: Sequence[cst.FunctionDef]) -> None:
        """Before the first scope fact: the scope analysis leaves out the bodies (their names, decorators,
        parameters and annotations are analysed) of those of these defs that lie outside every other def and
        whose bodies declare no `global` or `nonlocal` (walked later, such a body could add to a scope
        outside it), until a fact is asked of one (_LazyScopes)."""
        assert "scope_of" not in self.__dict__, "skip_bodies after the scope analysis ran"
        if not _PARTIAL:
            return
        defs = [d for d in defs if id(d.body) in self.order
                and not any(isinstance(a, cst.FunctionDef) for a in self.ancestors(d))
                and not self.find((cst.Global, cst.Nonlocal), within=d.body)]
        spans = sorted((self.order[id(d.body)], self.end[id(d.body)], i, d) for i, d in enumerate(defs))
        if spans:
            self._skipped = ([a for a, _, _, _ in spans], [b for _, b, _, _ in spans], [d for _, _, _, d in spans])

    def left_out_def(self, node: cst.CSTNode) -> Optional[cst.FunctionDef]:
        """The def left out (skip_bodies) whose body holds node, or None."""
        if self._skipped is None or id(node) not in self.order:
            return None
        starts, ends, defs = self._skipped
        i = bisect_right(starts, self.order[id(node)]) - 1
        return defs[i] if i >= 0 and self.order[id(node)] <= ends[i] else None

    @cached_property
    def scope_of(self):
        if self._skipped is None:
            return scope_map(self.module)
        return _LazyScopes(self.module, frozenset(id(d) for d in self._skipped[2]), self, scope_map)

    def numberer(self) -> Optional["_Numberer"]:
        """A numbering to fill in a walk of the module made anyway (resolve.collect), before the first use
        of the order or the parents; None once they are known."""
        if "_numbered" in self.__dict__:
            return None
        num = self.__dict__["_numbered"] = _Numberer()
        return num

    @cached_property
    def _numbered(self) -> _Numberer:
        num = _Numberer()
        self.module.visit(num)
        return num

    @property
    def order(self) -> Dict[int, int]:
        return self._numbered.order

    @property
    def end(self) -> Dict[int, int]:
        return self._numbered.end

    @property
    def parent(self) -> Dict[cst.CSTNode, cst.CSTNode]:
        return self._numbered.parent

    @cached_property
    def scopes(self) -> List[Scope]:
        return sorted({s for s in self.scope_of.values() if s is not None}, key=self._scope_key)

    @cached_property
    def rank(self) -> Dict[int, int]:
        """Each scope's place among the module's scopes in source order (a partial analysis: in the order
        they are first ranked, rank_of; a rank is then never renumbered)."""
        return {} if self._skipped is not None else {id(s): i for i, s in enumerate(self.scopes)}

    def rank_of(self, scope: Optional[Scope], default: Optional[int] = None) -> Optional[int]:
        if scope is None or isinstance(scope, BuiltinScope):
            return default
        got = self.rank.get(id(scope))
        if got is None and self._skipped is not None:
            got = self.rank[id(scope)] = len(self.rank)
        return default if got is None else got

    def _scope_key(self, scope: Scope) -> int:
        if isinstance(scope, (GlobalScope, BuiltinScope)):
            return -1 if isinstance(scope, GlobalScope) else -2
        return self.order[id(scope.node)]

    def none_attributes(self) -> Set[str]:
        """Attribute names this module assigns None to, or declares Optional (`self.x = None`,
        `x: Optional[T] = None` in a class body)."""
        if not hasattr(self, "_none_attrs"):  # from the node index: no walk of the module of its own
            finder = _NoneAttributes()
            for node in self.find((cst.Assign, cst.AnnAssign)):
                finder.at(node, self)
            self._none_attrs = finder.names
        return self._none_attrs

    def find(self, kinds, where: Optional[Callable[[cst.CSTNode], bool]] = None,
             within: Optional[cst.CSTNode] = None) -> List[cst.CSTNode]:
        """Nodes of the given types in source order (for which `where` holds, inside `within`): one
        walk of the module is shared by every lookup. (Plain predicates, not libcst.matchers: importing
        that costs each audit worker more than all the lookups of a file.)"""
        if not hasattr(self, "_by_type"):
            self._by_type: Dict[type, List[cst.CSTNode]] = {}
            self._sorted: Dict[tuple, Tuple[List[int], List[cst.CSTNode]]] = {}
            for node in self.parent:
                self._by_type.setdefault(type(node), []).append(node)
        kinds = kinds if isinstance(kinds, tuple) else (kinds,)
        if kinds not in self._sorted:  # sorted once per kind; `within` is then a slice by source order
            nodes = sorted((n for k in kinds for n in self._by_type.get(k, ())), key=lambda n: self.order[id(n)])
            self._sorted[kinds] = ([self.order[id(n)] for n in nodes], nodes)
        orders, found = self._sorted[kinds]
        if within is not None:
            found = found[bisect_left(orders, self.order[id(within)]):bisect_right(orders, self.end[id(within)])]
        return [n for n in found if where is None or where(n)]

    def defs(self) -> List[cst.FunctionDef]:
        return self.find(cst.FunctionDef)

    def is_method(self, fdef: cst.FunctionDef) -> bool:
        body = self.parent.get(fdef)
        return isinstance(body, cst.IndentedBlock) and isinstance(self.parent.get(body), cst.ClassDef)

    def none_tested(self) -> Set[str]:
        """Names (bare, or the last part of an attribute) this module compares with None or tests with `not`."""
        if not hasattr(self, "_none_tested"):
            v = _NoneTests()
            for node in self.find((cst.Comparison, cst.UnaryOperation)):
                v.at(node)
            self._none_tested = v.names
        return self._none_tested

    def none_tested_in(self, body: cst.CSTNode) -> Set[str]:
        """Dotted names the code under `body` compares with None or tests with `not` (a code
        that does expects None there). Walked once per body: every read in it shares the answer."""
        if not hasattr(self, "_none_tested_in"):
            self._none_tested_in: Dict[int, Set[str]] = {}
        found = self._none_tested_in.get(id(body))
        if found is None:
            v = _NoneTests()
            if id(body) in self.order and body in self.parent or body is self.module:
                for node in self.find((cst.Comparison, cst.UnaryOperation), within=body):
                    v.at(node)
            else:
                body.visit(v)
            found = self._none_tested_in[id(body)] = v.full
        return found

    # -- structure ----------------------------------------------------------------
    def line(self, node: cst.CSTNode) -> int:
        pos = self.position.get(node)
        return pos.start.line if pos else 0

    def inside(self, node: cst.CSTNode, ancestor: cst.CSTNode) -> bool:
        i = self.order[id(node)]
        return self.order[id(ancestor)] <= i <= self.end[id(ancestor)]

    def ancestors(self, node: cst.CSTNode) -> Iterator[cst.CSTNode]:
        parent = self.parent.get
        node = parent(node)
        while node is not None:
            yield node
            node = parent(node)

    def dominates(self, stmt: cst.CSTNode, target: cst.CSTNode) -> bool:
        """Does executing `target` imply `stmt` ran before it, on every path?

        True when target lies in a later sibling of stmt within one of the blocks
        enclosing stmt without a branch in between (a line of small statements, then the
        indented block or module holding that line).
        """
        while True:
            block = self.parent.get(stmt)
            if not isinstance(block, BLOCKS):
                return False
            if self.inside(target, block) and not self.inside(target, stmt):
                child = target
                while self.parent.get(child) is not block:
                    child = self.parent[child]
                return self.order[id(child)] > self.order[id(stmt)]
            if not isinstance(block, cst.SimpleStatementLine):
                return False
            stmt = block

    # -- names --------------------------------------------------------------------
    def binding(self, node: cst.CSTNode, name: str) -> Binding:
        """Python's resolution of `name` read at node (a name assigned anywhere in a
        function is local to all of it; class bodies are skipped by inner functions)."""
        return self.binding_in(self.scope_of.get(node), name)

    def binding_in(self, scope: Optional[Scope], name: str) -> Binding:
        if scope is None:
            return Binding(None, ())
        key = (id(scope), name)  # the analysis is made once: each (scope, name) has one answer
        got = self._bindings.get(key)
        if got is None:
            found = tuple(sorted(scope[name], key=self._source_order))  # (LibCST's set: any order, each run)
            got = self._bindings[key] = Binding(self.rank_of(found[0].scope, -2), found) if found else Binding(None, ())
        return got

    def _source_order(self, assignment) -> int:
        return self.order.get(id(getattr(assignment, "node", None)), -1)

    def accesses(self) -> Iterator[Tuple[int, str, cst.CSTNode, object]]:
        """(scope rank, name, node, access) for every name read in the module."""
        for scope in self.scopes:  # a partial analysis walks every body left out first
            rank = self.rank_of(scope)
            for access in scope.accesses:
                node = access.node
                t = type(node)
                if t is cst.Name:  # most reads: get_full_name_for_node's answer, without its isinstance chain
                    name = node.value
                elif t is cst.Attribute or t is not cst.SimpleString and isinstance(node, (cst.Name, cst.Attribute)):
                    name = get_full_name_for_node(node)
                else:
                    continue
                if name:
                    yield rank, name, node, access

    def assignment_statement(self, a: object) -> Optional[cst.CSTNode]:
        """For `x = ...` / `x: T = ...` (also in tuple targets): the small statement; else None."""
        node = getattr(a, "node", None)
        if not isinstance(node, cst.Name):
            return None
        for anc in self.ancestors(node):
            if isinstance(anc, (cst.Tuple, cst.List, cst.Element, cst.StarredElement, cst.AssignTarget)):
                continue
            if isinstance(anc, (cst.Assign, cst.AnnAssign)) and getattr(anc, "value", None) is not None:
                return anc
            return None
        return None

    def assigned_values(self, node: cst.CSTNode, name: str) -> List[Optional[cst.BaseExpression]]:
        """The value each binding of `name` seen from node assigns (`x = v`, `x: T = v`), None for any other
        binding (a parameter, a loop, an import)."""
        return [getattr(self.assignment_statement(a), "value", None) for a in self.binding(node, name).assignments]

    def binds_after_value(self, a: object) -> int:
        """Source-order index at which an assignment takes effect (`x = f(x)` binds after f)."""
        node = getattr(a, "node", None)
        if node is None or id(node) not in self.order:
            return -1
        for anc in self.ancestors(node):
            if isinstance(anc, (cst.Assign, cst.AnnAssign, cst.AugAssign, cst.NamedExpr, cst.For, cst.CompFor)):
                return self.end[id(anc)]
            if isinstance(anc, BLOCKS):
                break
        return self.order[id(node)]


def may_be_none(tree: Tree, a: object, name: str) -> bool:
    """Can the object bound by assignment `a` to `name` be None where it is read?"""
    node = getattr(a, "node", None)
    if isinstance(node, cst.Param):
        if node.default is not None and _is_none(node.default):
            return True
        if node.annotation is not None and _mentions_none(node.annotation.annotation):
            return True
    stmt = tree.assignment_statement(a)
    if stmt is not None and _maybe_none_value(stmt.value):
        return True
    if stmt is not None and isinstance(stmt.value, cst.Attribute) and (
            stmt.value.attr.value in tree.none_attributes() or stmt.value.attr.value in tree.none_tested()):
        return True  # `metadata = self.forward_metadata` where the module sets it to None or tests it for None
    if name in tree.none_tested():
        return True  # the module expects a `metadata` that is None somewhere (a None check in any function)
    scope = getattr(a, "scope", None)
    body = getattr(scope, "node", None)
    return body is not None and name in tree.none_tested_in(body)


def _is_none(e: cst.BaseExpression) -> bool:
    return isinstance(e, cst.Name) and e.value == "None"


def _mentions_none(e: cst.BaseExpression) -> bool:
    code = cst.Module([]).code_for_node(e)
    return "Optional" in code or "None" in code


def _maybe_none_value(e: cst.BaseExpression) -> bool:
    if _is_none(e):
        return True
    if isinstance(e, cst.IfExp):
        return _maybe_none_value(e.body) or _maybe_none_value(e.orelse)
    if isinstance(e, cst.BooleanOperation):
        return _maybe_none_value(e.left) or _maybe_none_value(e.right)
    if isinstance(e, cst.Call) and get_full_name_for_node(e.func) in ("getattr", "dict.get") and len(e.args) >= 3:
        return True
    return False


class _NoneAttributes(cst.CSTVisitor):
    def __init__(self) -> None:
        self.names: Set[str] = set()
        self._classes = 0
        self._functions = 0

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._classes += 1

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        self._classes -= 1

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._functions += 1

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._functions -= 1

    def _target(self, target: cst.BaseExpression) -> None:
        if isinstance(target, cst.Attribute):
            self.names.add(target.attr.value)
        elif isinstance(target, cst.Name) and self._classes and not self._functions:
            self.names.add(target.value)

    def visit_Assign(self, node: cst.Assign) -> None:
        if _maybe_none_value(node.value):
            for t in node.targets:
                self._target(t.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if (node.value is not None and _maybe_none_value(node.value)) or _mentions_none(node.annotation.annotation):
            self._target(node.target)

    def at(self, node, tree: "Tree") -> None:
        """What visiting `node` (an Assign or AnnAssign of `tree`) adds, its nesting read from the parents."""
        self._classes = self._functions = 0
        for a in tree.ancestors(node):
            if isinstance(a, cst.ClassDef):
                self._classes += 1
            elif isinstance(a, cst.FunctionDef):
                self._functions += 1
        (self.visit_Assign if isinstance(node, cst.Assign) else self.visit_AnnAssign)(node)


class _NoneTests(cst.CSTVisitor):
    """Finds `x is None`-style tests: the full dotted names tested (full), and the bare
    name or last attribute part of each (names)."""

    def __init__(self) -> None:
        self.full: Set[str] = set()
        self.names: Set[str] = set()

    def _tested(self, e: cst.BaseExpression) -> None:
        if isinstance(e, cst.Name):
            self.names.add(e.value)
        elif isinstance(e, cst.Attribute):
            self.names.add(e.attr.value)
        full = get_full_name_for_node(e)
        if full is not None:
            self.full.add(full)

    def visit_Comparison(self, node: cst.Comparison) -> None:
        sides = [node.left, *(c.comparator for c in node.comparisons)]
        if any(_is_none(s) for s in sides):
            for side in sides:
                self._tested(side)

    def visit_UnaryOperation(self, node: cst.UnaryOperation) -> None:
        if isinstance(node.operator, cst.Not):
            self._tested(node.expression)

    def at(self, node) -> None:
        (self.visit_Comparison if isinstance(node, cst.Comparison) else self.visit_UnaryOperation)(node)


def root_binding(tree: Tree, node: cst.CSTNode, name: str, what: str = "metadata") -> Tuple[Optional[str], bool]:
    """Is the object `name` holds at node the one bound once in its function, on every path?

    Returns (why not, or None; whether it may be None). Class 2 of issue 8: a binding counts
    only if it reaches node on every path and is the only one in its function.
    """
    b = tree.binding(node, name)
    if not b.assignments:
        return f"`{name}` is not bound where the rewrite would read it", False
    scope = b.assignments[0].scope
    if not isinstance(scope, FunctionScope):
        return f"`{name}` is not bound in the function that holds the call", False
    if len(b.assignments) > 1:
        lines = sorted({tree.line(getattr(a, "node", None)) for a in b.assignments if getattr(a, "node", None) is not None} - {0})
        at = f" (lines {', '.join(map(str, lines))})" if lines else ""
        return f"`{name}` is bound {len(b.assignments)} times in its function{at}; the {what} at the call is not provably one object", False
    a = b.assignments[0]
    if not isinstance(a, Assignment):
        return f"`{name}` is not a local binding", False
    if not isinstance(a.node, cst.Param):
        stmt = tree.assignment_statement(a)
        if stmt is None:
            return f"`{name}` is bound by a loop, `with`, `:=` or import (line {tree.line(a.node)}), not a plain assignment", False
        if not tree.dominates(stmt, node):
            return f"`{name}` is bound at line {tree.line(a.node)} only on some paths to the call", False
    cache = tree.__dict__.setdefault("_binding_facts", {})
    if id(a) not in cache:  # what follows depends on the binding alone: once per binding, not per read
        cache[id(a)] = _binding_facts(tree, a, name)
    return cache[id(a)]


def _binding_facts(tree: Tree, a: Assignment, name: str) -> Tuple[Optional[str], bool]:
    """root_binding's checks that hold for every read of the one binding `a`."""
    for access in a.references:
        if any(type(anc) is cst.Del for anc in tree.ancestors(access.node)):
            return f"`{name}` is deleted at line {tree.line(access.node)}", False
        parent = tree.parent.get(access.node)
        if isinstance(parent, cst.Subscript) and parent.value is access.node:
            return f"`{name}` is indexed like a mapping at line {tree.line(access.node)}, not an object with fields", False
    if isinstance(a.node, cst.Param) and a.node.annotation is not None:
        kind = get_full_name_for_node(a.node.annotation.annotation) or ""
        if kind.rsplit(".", 1)[-1] in PLAIN_TYPES:
            return f"`{name}` is annotated `{kind}`, not an object with fields", False
    return None, may_be_none(tree, a, name)


def inserted_ids(roots: Sequence[cst.CSTNode], kinds: Optional[Set[type]] = None) -> Set[int]:
    """ids of every node in the given subtrees but their layout (cstwalk.TRIVIA: no name is read or bound
    in it; the validation asks these ids of names read and bound only); their types added to `kinds`."""
    out: Set[int] = set()
    stack = list(roots)
    while stack:
        n = stack.pop()
        if id(n) in out:
            continue
        out.add(id(n))
        if kinds is not None:
            kinds.add(type(n))
        names = cstwalk.substantive_fields(type(n))
        if names is None:
            stack.extend(c for c in n.children if not cstwalk.is_trivia(c))
            continue
        for name in names:
            value = getattr(n, name)
            if cstwalk.is_node(value):
                stack.append(value)
            elif isinstance(value, (tuple, list)):
                stack.extend(v for v in value if cstwalk.is_node(v))
    return out


def resolution_table(tree: Tree, skip: Set[int] = frozenset(), names: Optional[Set[str]] = None,
                     ) -> Dict[Tuple[int, str], List[Tuple[Optional[int], cst.CSTNode]]]:
    """(scope rank, name) -> [(rank of the scope the read resolves to, node)] in source order (of the
    names in `names` only, when given)."""
    table: Dict[Tuple[int, str], List[Tuple[int, Optional[int], cst.CSTNode]]] = {}
    order, binding_in = tree.order, tree.binding_in
    for rank, name, node, access in tree.accesses():
        if id(node) in skip or names is not None and name not in names:
            continue
        table.setdefault((rank, name), []).append((order[id(node)], binding_in(access.scope, name).scope_rank, node))
    return {k: [(r, n) for _, r, n in sorted(v, key=lambda t: t[0])] for k, v in table.items()}
