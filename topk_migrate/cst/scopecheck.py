"""Scope facts of one module tree, used to plan a rewrite and to validate it afterwards.

Built on LibCST's ScopeProvider (parents from one walk of our own). Nodes are numbered in source
(preorder) order and scopes by the order of the nodes that open them, so two trees that
differ only by inserted code (which never opens a scope) can be compared access by access.
"""
from __future__ import annotations

import ast
from bisect import bisect_left, bisect_right
from contextlib import ExitStack
from dataclasses import dataclass
from functools import cached_property
from typing import Callable, Dict, Iterator, List, Optional, Sequence, Set, Tuple

import libcst as cst
from libcst._position import CodePosition, CodeRange
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
from libcst.metadata import scope_provider as _scope_provider
from libcst.metadata.expression_context_provider import (
    ExpressionContext,
    ExpressionContextProvider,
    ExpressionContextVisitor,
)
from libcst.metadata.position_provider import NEWLINE_RE, PositionProvidingCodegenState
from libcst.metadata.scope_provider import AnnotationScope, ScopeVisitor

from .. import guard
from . import cstwalk

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


class _PositionState(PositionProvidingCodegenState):
    """LibCST's position-recording codegen, recording no cstwalk.TRIVIA node but brackets (two thirds of
    the nodes, none of which the analysis asks a line of), with a cheaper step over a token without a
    line break. Every other node gets the range LibCST gives it (tests/test_cstwalk.py)."""

    __slots__ = ()

    def _update_position(self, value: str) -> None:
        if "\n" in value or "\r" in value:
            segments = NEWLINE_RE.split(value)
            self.line += len(segments) - 1
            self.column = len(segments[-1])
        else:
            self.column += len(value)

    def before_codegen(self, node: cst.CSTNode) -> None:
        if not _unrecorded(node):
            self._stack.append(CodePosition(self.line, self.column))

    def after_codegen(self, node: cst.CSTNode) -> None:
        if not _unrecorded(node):
            start = self._stack.pop()
            if node not in self.provider._computed:
                self.provider._computed[node] = CodeRange(start, CodePosition(self.line, self.column))

    def record_syntactic_position(self, node: cst.CSTNode, *, start_node: Optional[cst.CSTNode] = None,
                                  end_node: Optional[cst.CSTNode] = None) -> "_Syntactic":
        return _Syntactic(self, node, start_node, end_node)


class _Syntactic:
    """PositionProvidingCodegenState.record_syntactic_position, as a plain context manager."""

    __slots__ = ("state", "node", "start_node", "end_node", "start")

    def __init__(self, state, node, start_node, end_node):
        self.state, self.node, self.start_node, self.end_node = state, node, start_node, end_node

    def __enter__(self) -> None:
        self.start = CodePosition(self.state.line, self.state.column)

    def __exit__(self, *exc) -> None:
        state = self.state
        computed = state.provider._computed
        try:  # a node's range hoisted from a child's (an import's ends at its `)`: recorded, not layout)
            start = computed[self.start_node].start if self.start_node is not None else self.start
            end = computed[self.end_node].end if self.end_node is not None else CodePosition(state.line, state.column)
        except KeyError:
            raise _Unrecorded from None
        computed[self.node] = CodeRange(start, end)


class _Unrecorded(Exception):
    """A node's range is hoisted from a layout node _PositionState did not record: LibCST's provider then."""


_BRACKETS = (cst.LeftParen, cst.RightParen, cst.LeftSquareBracket, cst.RightSquareBracket,
             cst.LeftCurlyBrace, cst.RightCurlyBrace)


_UNRECORDED: Dict[type, bool] = {}


def _unrecorded(node: cst.CSTNode) -> bool:
    t = type(node)
    got = _UNRECORDED.get(t)
    if got is None:  # once per type (isinstance on LibCST's abstract bases costs)
        got = _UNRECORDED[t] = cstwalk.is_trivia(node) and not issubclass(t, _BRACKETS)
    return got


class _Positions(PositionProvider):
    def _gen_impl(self, module: cst.Module) -> None:
        module._codegen(_PositionState(default_indent=module.default_indent,
                                       default_newline=module.default_newline, provider=self))


class StatementPositions:
    """A module's positions as _positions gives them, worked out one statement at a time, when a node's
    is asked: the statements of the module and of the bodies of its classes and functions (a method, a
    line of a method, an `if` block in it) are the units; the innermost holding the node is generated
    alone, from the line CPython's ast says it starts on (less its leading comment and blank lines). A
    unit whose generated text is not the source's text at that line, or a node outside every unit, has
    the whole module's positions computed instead: a doubt costs time, never a wrong line."""

    def __init__(self, tree: "Tree", source: str):
        self._tree, self._source = tree, source
        self._computed: Dict[cst.CSTNode, CodeRange] = {}
        self._units: Optional[Dict[int, Tuple[cst.CSTNode, int, Tuple[str, ...]]]] = None
        self._done: Set[int] = set()
        self._texts: Dict[int, Tuple[int, str]] = {}  # id(unit) -> (its offset in the source, its text)
        self._whole = False

    def get(self, node: cst.CSTNode, default=None):
        got = self._computed.get(node)
        if got is not None or self._whole:
            return default if got is None else got
        if id(node) not in self._tree.order and node is not self._tree.module:
            return default  # not a node of this module, or layout (which has no position of its own here)
        unit = self._unit_of(node)
        if unit is None:
            self._all()
        elif id(unit) not in self._done:
            self._generate(unit)
        return self._computed.get(node, default)

    def __getitem__(self, node: cst.CSTNode) -> CodeRange:
        got = self.get(node)
        if got is None:
            raise KeyError(node)
        return got

    def __contains__(self, node: object) -> bool:
        return isinstance(node, cst.CSTNode) and self.get(node) is not None

    def _unit_of(self, node: cst.CSTNode) -> Optional[cst.CSTNode]:
        units = self._find_units()
        if units is None:
            return None
        parent = self._tree.parent
        while node is not None:
            if id(node) in units:
                return node
            node = parent.get(node)
        return None

    def _find_units(self):
        if self._units is None:
            try:
                found: Dict[int, Tuple[cst.CSTNode, int, Tuple[str, ...]]] = {}
                _zip_units(self._tree.module.body, guard.tree_of(self._source).body, (), self._tree.module, found)
                self._units = found
            except Exception:  # _Unzipped, or a shape the pairing did not foresee: the whole module's then
                self._units = {}
        return self._units or None

    def _generate(self, unit: cst.CSTNode) -> None:
        _, line, indents = self._units[id(unit)]
        module = self._tree.module
        computed: Dict[cst.CSTNode, CodeRange] = {}
        state = _PositionState(default_indent=module.default_indent, default_newline=module.default_newline,
                               provider=_Store(computed))
        state.indent_tokens.extend(indents)
        state.line = line
        try:
            unit._codegen(state)
        except Exception:  # _Unrecorded, or a unit LibCST cannot generate alone: the whole module's then
            self._all()
            return
        starts = self._line_starts()
        text = "".join(state.tokens)
        at = starts[line - 1] if 0 < line <= len(starts) else -1
        if at < 0 or not self._source.startswith(text, at):
            self._all()
            return
        for node, rng in computed.items():
            self._computed.setdefault(node, rng)
        self._done.add(id(unit))
        self._texts[id(unit)] = (at, text)

    def text_of(self, node: cst.CSTNode) -> Optional[Tuple[int, str]]:
        """(offset in the source, code) of a statement generated as a unit, checked there; else None."""
        return self._texts.get(id(node))

    def place(self, node: cst.CSTNode, text: str) -> Optional[int]:
        """The offset at which the source holds `text`, a statement's code where it stands (its leading lines
        included), as the statement's positions place it; None where they cannot say (the caller then searches
        the whole source for it, which read once per statement is N x N for N of them). A unit's code starts
        on the line its pairing with CPython's statements gave; any other statement's as many lines above its
        own range's first as the node's code generated alone puts before it (leading lines, decorators). The
        text is checked there."""
        if self._lone_cr:
            return None  # a lone CR ends a line for LibCST and CPython, not for _line_starts
        units = self._find_units()
        if units is not None and id(node) in units:
            line = units[id(node)][1]
        else:
            rng, first = self.get(node), self._first_line_in(node)
            if rng is None or first is None:
                return None
            line = rng.start.line - (first - 1)
        starts = self._line_starts()
        at = starts[line - 1] if 0 < line <= len(starts) else -1
        return at if at >= 0 and self._source.startswith(text, at) else None

    def _first_line_in(self, node: cst.CSTNode) -> Optional[int]:
        """The line of node's code generated alone (1: its first) on which its own range starts."""
        module = self._tree.module
        computed: Dict[cst.CSTNode, CodeRange] = {}
        state = _PositionState(default_indent=module.default_indent, default_newline=module.default_newline,
                               provider=_Store(computed))
        try:
            node._codegen(state)
        except Exception:  # _Unrecorded, or a node LibCST cannot generate alone: searched for instead
            return None
        got = computed.get(node)
        return None if got is None else got.start.line

    @cached_property
    def _lone_cr(self) -> bool:
        return "\r" in self._source and self._source.count("\r") != self._source.count("\r\n")

    def _line_starts(self) -> List[int]:
        if not hasattr(self, "_starts"):
            self._starts, find, at = [0], self._source.find, self._source.find("\n")
            while at >= 0:
                self._starts.append(at + 1)
                at = find("\n", at + 1)
        return self._starts

    def _all(self) -> None:
        if not self._whole:
            self._computed = _positions(MetadataWrapper(self._tree.module, unsafe_skip_copy=True))
            self._whole = True


class _Store:
    """What a position-recording codegen state writes into (a provider's `_computed`)."""

    __slots__ = ("_computed",)

    def __init__(self, computed):
        self._computed = computed


class _Unzipped(Exception):
    """LibCST's statements and CPython's do not pair up as expected."""


def _zip_units(body, stmts, indents: Tuple[str, ...], module: cst.Module, found) -> None:
    """Pair the LibCST statements of a body with CPython's (a line of `a; b` is one LibCST statement and
    two of CPython's), recording each LibCST statement's first generated line; into the bodies of
    classes and functions."""
    i = 0
    for stmt in body:
        if i >= len(stmts):
            raise _Unzipped
        first = stmts[i]
        leading = len(getattr(stmt, "leading_lines", ()))
        decorators = getattr(stmt, "decorators", ())
        if decorators:
            line = first.decorator_list[0].lineno - leading - len(decorators[0].leading_lines)
        else:
            line = first.lineno - leading
        found[id(stmt)] = (stmt, line, indents)
        if isinstance(stmt, (cst.ClassDef, cst.FunctionDef)) and isinstance(stmt.body, cst.IndentedBlock):
            if not isinstance(first, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                raise _Unzipped
            indent = stmt.body.indent
            _zip_units(stmt.body.body, first.body, indents + (module.default_indent if indent is None else indent,),
                       module, found)
        i += len(stmt.body) if isinstance(stmt, cst.SimpleStatementLine) else 1
    if i != len(stmts):
        raise _Unzipped


def _positions(wrapper: MetadataWrapper):
    """wrapper.resolve(PositionProvider), without the walk LibCST's resolver makes for the (here empty)
    batch of batchable providers, and for the nodes that are not layout (_PositionState); stored in the
    wrapper as resolve would (visitors that depend on it)."""
    store = getattr(wrapper, "_metadata", None)
    if not isinstance(store, dict):
        return wrapper.resolve(PositionProvider)
    if PositionProvider not in store:
        try:
            store[PositionProvider] = _Positions()._gen(wrapper)
        except _Unrecorded:
            store[PositionProvider] = PositionProvider()._gen(wrapper)
    return store[PositionProvider]


_ASSIGNMENT_LIKE: Dict[type, bool] = {}
# ScopeVisitor.on_leave as LibCST 1.1-1.9 write it: set the node's scope, count assignment-like nodes, then
# CSTVisitor's dispatch. _ScopeVisitor does the same with the type test made once per node type (an
# isinstance against a tuple of eighteen ABCs on every node was a third of the walk); another release's
# on_leave is used as it is.
_KNOWN_ON_LEAVE = ("provider", "set_metadata", "scope", "isinstance", "_ASSIGNMENT_LIKE_NODES",
                   "_assignment_count", "super", "on_leave")


class _ScopeVisitor(ScopeVisitor):
    if ScopeVisitor.on_leave.__code__.co_names == _KNOWN_ON_LEAVE:
        def on_leave(self, original_node: cst.CSTNode) -> None:
            self.provider.set_metadata(original_node, self.scope)
            t = type(original_node)
            like = _ASSIGNMENT_LIKE.get(t)
            if like is None:
                like = _ASSIGNMENT_LIKE[t] = isinstance(original_node, _scope_provider._ASSIGNMENT_LIKE_NODES)
            if like:
                self.scope._assignment_count += 1
            cstwalk.leave_hook(self, original_node)


class _ScopeProvider(ScopeProvider):
    """LibCST's ScopeProvider, walking with _ScopeVisitor."""

    def visit_Module(self, node: cst.Module) -> Optional[bool]:
        visitor = _ScopeVisitor(self)
        node.visit(visitor)
        visitor.infer_accesses()
        return None


def scope_map(module: cst.Module, provider=_ScopeProvider, context=ExpressionContextProvider):
    """What MetadataWrapper.resolve(ScopeProvider) gives, in two walks of the module instead of four.

    Both LibCST providers involved (ScopeProvider and its dependency, ExpressionContextProvider) do all
    their work in visit_Module, with a walk of their own; resolved through the wrapper, each also
    costs a batched walk of the whole module that calls nothing. Here each provider's visit_Module
    runs alone, with the dependency's results handed over as the wrapper would. `provider`, `context`: the
    classes, or instances to fill (ones the caller keeps)."""
    context = context() if isinstance(context, type) else context
    context.visit_Module(module)
    scopes = provider() if isinstance(provider, type) else provider
    scopes.metadata = {ExpressionContextProvider: context._computed}
    scopes.visit_Module(module)
    return scopes._computed


class _PartialScopeVisitor(_ScopeVisitor):
    """LibCST's scope visitor, leaving out the bodies of the defs in provider.skip (a def's name,
    decorators, parameters, defaults, annotations and return annotation are visited as LibCST does),
    each def's FunctionScope kept in provider.pending for the walk of its body later (_LazyScopes)."""

    def visit_FunctionDef(self, node: cst.FunctionDef) -> Optional[bool]:
        if id(node) not in self.provider.skip:
            return super().visit_FunctionDef(node)
        self.scope.record_assignment(node.name.value, node)
        self.provider.set_metadata(node.name, self.scope)
        with ExitStack() as stack:
            if node.type_parameters:
                stack.enter_context(self._new_scope(AnnotationScope, node, None))
                node.type_parameters.visit(self)
            with self._new_scope(FunctionScope, node, get_full_name_for_node(node.name)):
                node.params.visit(self)
                self.provider.pending[id(node)] = (node, self.scope)  # where LibCST walks node.body
            for decorator in node.decorators:
                decorator.visit(self)
            if node.returns:
                node.returns.visit(self)
        return False


# The partial visitors below copy LibCST's visit_FunctionDef of each visitor, less `node.body.visit`: as
# LibCST 1.1-1.9 write them. Another release's are not copied: its analysis leaves no body out.
_PARTIAL = (ScopeVisitor.visit_FunctionDef.__code__.co_names == (
    "scope", "record_assignment", "name", "value", "provider", "set_metadata", "ExitStack", "type_parameters",
    "enter_context", "_new_scope", "AnnotationScope", "visit", "FunctionScope", "get_full_name_for_node", "params",
    "body", "decorators", "returns") and ExpressionContextVisitor.visit_FunctionDef.__code__.co_names == (
    "name", "visit", "ExpressionContextVisitor", "provider", "ExpressionContext", "STORE", "params", "body",
    "decorators", "returns"))


class _PartialContextVisitor(ExpressionContextVisitor):
    """LibCST's expression-context visitor, leaving out the bodies of the defs in `skip` as _PartialScopeVisitor
    does (a def's body is reached at statement level, in a Load context: _LazyScopes walks it so later)."""

    def __init__(self, provider, context, skip: frozenset):
        super().__init__(provider, context)
        self.skip = skip

    def visit_FunctionDef(self, node: cst.FunctionDef) -> Optional[bool]:
        if id(node) not in self.skip:
            return super().visit_FunctionDef(node)
        node.name.visit(ExpressionContextVisitor(self.provider, ExpressionContext.STORE))
        node.params.visit(self)
        for decorator in node.decorators:
            decorator.visit(self)
        if node.returns:
            node.returns.visit(self)
        return False


class _PartialContextProvider(ExpressionContextProvider):
    def __init__(self, skip: frozenset):
        super().__init__()
        self.skip = skip

    def visit_Module(self, node: cst.Module) -> Optional[bool]:
        node.visit(_PartialContextVisitor(self, ExpressionContext.LOAD, self.skip))
        return None


class _PartialScopeProvider(_ScopeProvider):
    def __init__(self, skip: frozenset):
        super().__init__()
        self.skip = skip
        self.pending: Dict[int, Tuple[cst.FunctionDef, Scope]] = {}  # id(def) -> (def, its FunctionScope)

    def visit_Module(self, node: cst.Module) -> Optional[bool]:
        visitor = _PartialScopeVisitor(self)
        node.visit(visitor)
        visitor.infer_accesses()
        return None


# their instances hold a provider, a scope or context and LibCST's own state, never a hook
cstwalk.no_instance_hooks(ExpressionContextVisitor, _ScopeVisitor, _PartialScopeVisitor, _PartialContextVisitor)


class _LazyScopes:
    """The scope map of an analysis that left some defs' bodies out: a body is walked the first time a fact
    is asked of a node in it, or of its def's FunctionScope, as LibCST walks it (inside that FunctionScope,
    after every scope around it is complete), and its reads resolved then.

    Why the answers are the whole analysis': a body left out declares no `global` or `nonlocal` (Tree.
    skip_bodies' caller sees to it), so walking it adds nothing to any scope outside it, and what outside
    code resolves is the same before and after; a read inside it resolves against scopes that are, by then,
    complete. The reads an outside name has (its assignments' references, a scope's accesses) are the one
    fact a body can add to: every_body() walks them all first (Tree.accesses, Tree.scopes)."""

    def __init__(self, module: cst.Module, skip: frozenset, tree: "Tree"):
        self._provider, self._context = _PartialScopeProvider(skip), _PartialContextProvider(skip)
        self._found = scope_map(module, self._provider, self._context)
        self._pending = self._provider.pending
        self._by_scope = {id(scope): key for key, (_, scope) in self._pending.items()}
        self._tree = tree

    def _walk_body(self, key: int) -> None:
        fdef, scope = self._pending.pop(key)
        del self._by_scope[id(scope)]
        fdef.body.visit(ExpressionContextVisitor(self._context, ExpressionContext.LOAD))  # as LibCST reaches it
        visitor = _ScopeVisitor(self._provider)
        visitor.scope = scope
        fdef.body.visit(visitor)
        visitor.infer_accesses()

    def get(self, node, default=None):
        got = self._found.get(node)
        if got is None:
            fdef = self._tree.left_out_def(node)
            if fdef is not None and id(fdef) in self._pending:
                self._walk_body(id(fdef))
                got = self._found.get(node)
        elif id(got) in self._by_scope:  # a parameter's scope: complete only with its body's names
            self._walk_body(self._by_scope[id(got)])
        return default if got is None else got

    def __getitem__(self, node):
        got = self.get(node)
        if got is None:
            raise KeyError(node)
        return got

    def every_body(self) -> None:
        for key in list(self._pending):
            self._walk_body(key)

    def values(self):
        self.every_body()
        return self._found.values()


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
        is asked (StatementPositions). Without positions, `position` is empty."""
        self.module = module
        if not positions:
            self.position = {}
        elif source is not None:
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
        return _LazyScopes(self.module, frozenset(id(d) for d in self._skipped[2]), self)

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
            found = tuple(scope[name])
            got = self._bindings[key] = Binding(self.rank_of(found[0].scope, -2), found) if found else Binding(None, ())
        return got

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
