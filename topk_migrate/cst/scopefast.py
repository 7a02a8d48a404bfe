"""LibCST's scope and position providers, faster: scopecheck's accelerated path (accel.py), imported only where
the switch is on. It reads and writes LibCST's internals, as LibCST 1.1-1.9 have them (accel.SELF_CHECKS):

- positions recorded by a subclass of LibCST's position-recording codegen state, for the nodes that are not
  layout, and per statement when asked (StatementPositions);
- the scope analysis' two providers run without the metadata resolver's batched walk (scope_map), its
  visitor's on_leave copied with a cheaper type test (_ScopeVisitor), and the bodies of chosen defs left out
  until a fact is asked of them (copies of both visitors' visit_FunctionDef less the walk of the body).

Where the switch is off, scopecheck answers the same through MetadataWrapper.resolve instead.
"""
from __future__ import annotations

import ast
from contextlib import ExitStack
from functools import cached_property
from typing import Callable, Dict, List, Optional, Set, Tuple

import libcst as cst
from libcst.helpers import get_full_name_for_node
from libcst.metadata import (
    CodePosition,
    CodeRange,
    ExpressionContext,
    ExpressionContextProvider,
    FunctionScope,
    MetadataWrapper,
    PositionProvider,
    Scope,
    ScopeProvider,
)
from libcst.metadata import scope_provider as _scope_provider
from libcst.metadata.expression_context_provider import ExpressionContextVisitor
from libcst.metadata.position_provider import NEWLINE_RE, PositionProvidingCodegenState
from libcst.metadata.scope_provider import AnnotationScope, ScopeVisitor

from .. import guard
from . import cstwalk


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
    """A module's positions as `positions` gives them, worked out one statement at a time, when a node's
    is asked: the statements of the module and of the bodies of its classes and functions (a method, a
    line of a method, an `if` block in it) are the units; the innermost holding the node is generated
    alone, from the line CPython's ast says it starts on (less its leading comment and blank lines). A
    unit whose generated text is not the source's text at that line, or a node outside every unit, has
    the whole module's positions computed instead: a doubt costs time, never a wrong line."""

    def __init__(self, tree, source: str):  # tree: the scopecheck.Tree
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
            self._computed = positions(MetadataWrapper(self._tree.module, unsafe_skip_copy=True))
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


def positions(wrapper: MetadataWrapper):
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


class _ScopeVisitor(ScopeVisitor):
    # ScopeVisitor.on_leave as LibCST 1.1-1.9 write it (accel.SELF_CHECKS): set the node's scope, count
    # assignment-like nodes, then CSTVisitor's dispatch; here with the type test made once per node type (an
    # isinstance against a tuple of eighteen ABCs on every node was a third of the walk).
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


def scope_map(module: cst.Module, provider=None, context=None):
    """What MetadataWrapper.resolve(ScopeProvider) gives, in two walks of the module instead of four.

    Both LibCST providers involved (ScopeProvider and its dependency, ExpressionContextProvider) do all
    their work in visit_Module, with a walk of their own; resolved through the wrapper, each also
    costs a batched walk of the whole module that calls nothing. Here each provider's visit_Module
    runs alone, with the dependency's results handed over as the wrapper would. `provider`, `context`: the
    instances to fill (ones the caller keeps); by default LibCST's expression contexts and _ScopeProvider."""
    context = ExpressionContextProvider() if context is None else context
    context.visit_Module(module)
    scopes = _ScopeProvider() if provider is None else provider
    scopes.metadata = {ExpressionContextProvider: context._computed}
    scopes.visit_Module(module)
    return scopes._computed


class _PartialScopeVisitor(_ScopeVisitor):
    """LibCST's scope visitor, leaving out the bodies of the defs in provider.skip (a def's name,
    decorators, parameters, defaults, annotations and return annotation are visited as LibCST does),
    each def's FunctionScope kept in provider.pending for the walk of its body later (LazyScopes)."""

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


# _PartialScopeVisitor above and _PartialContextVisitor below copy LibCST's visit_FunctionDef of each visitor,
# less `node.body.visit`: as LibCST 1.1-1.9 write them (accel.SELF_CHECKS).


class _PartialContextVisitor(ExpressionContextVisitor):
    """LibCST's expression-context visitor, leaving out the bodies of the defs in `skip` as _PartialScopeVisitor
    does (a def's body is reached at statement level, in a Load context: LazyScopes walks it so later)."""

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


class LazyScopes:
    """The scope map of an analysis that left some defs' bodies out: a body is walked the first time a fact
    is asked of a node in it, or of its def's FunctionScope, as LibCST walks it (inside that FunctionScope,
    after every scope around it is complete), and its reads resolved then.

    Why the answers are the whole analysis': a body left out declares no `global` or `nonlocal` (Tree.
    skip_bodies' caller sees to it), so walking it adds nothing to any scope outside it, and what outside
    code resolves is the same before and after; a read inside it resolves against scopes that are, by then,
    complete. The reads an outside name has (its assignments' references, a scope's accesses) are the one
    fact a body can add to: every_body() walks them all first (Tree.accesses, Tree.scopes). `tree`: the
    scopecheck.Tree analysed; `mapper`: the scope_map to run (scopecheck's)."""

    def __init__(self, module: cst.Module, skip: frozenset, tree, mapper: Callable = scope_map):
        self._provider, self._context = _PartialScopeProvider(skip), _PartialContextProvider(skip)
        self._found = mapper(module, self._provider, self._context)
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


