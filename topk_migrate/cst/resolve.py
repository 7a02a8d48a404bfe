"""Static facts about one module: what each called name resolves to, and where.

Import bindings are collected from every scope (module, function-local, try/except
fallbacks), which is what call-site discovery needs: a kernel imported in a helper
body is still the kernel.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Optional, Set

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider

from . import cstwalk


def dotted(expr: cst.BaseExpression) -> Optional[str]:
    """`a.b.c` for a Name/Attribute chain, else None."""
    if isinstance(expr, cst.Name):
        return expr.value
    if isinstance(expr, cst.Attribute):
        base = dotted(expr.value)
        return f"{base}.{expr.attr.value}" if base else None
    return None


@dataclass
class Function:
    node: cst.FunctionDef
    name: str
    qualname: str
    class_name: Optional[str]


@dataclass
class CallInfo:
    node: cst.Call
    callee: str  # dotted, with import aliases expanded
    function: Optional[Function]  # innermost enclosing def
    statement: Optional[cst.BaseStatement]  # innermost statement that sits in an indented block
    positions: Mapping[cst.CSTNode, CodeRange] = field(repr=False, compare=False)

    @property
    def range(self) -> CodeRange:
        """Where the call is: worked out when asked (a module's positions may be computed per statement)."""
        return self.positions[self.node]


@dataclass
class ModuleFacts:
    module: cst.Module
    imports: Dict[str, str]  # local name -> qualified name
    module_names: Set[str]  # names bound at module level
    calls: List[CallInfo]
    functions: List[Function]


_OTHER, _STATEMENT, _SUITE = 0, 1, 2
_KINDS: Dict[type, int] = {}


def _kind(t: type) -> int:
    """Is a node type a statement, a one-line suite, or neither (an ABC isinstance once per type, not per node)?"""
    try:
        return _KINDS[t]
    except KeyError:
        got = _KINDS[t] = (_STATEMENT if issubclass(t, cst.BaseStatement)
                           else _SUITE if issubclass(t, cst.SimpleStatementSuite) else _OTHER)
        return got


class _Collector(cst.CSTVisitor):

    def __init__(self) -> None:
        self.imports: Dict[str, str] = {}
        self.module_names: Set[str] = set()
        self.functions: List[Function] = []
        self.raw_calls: List[tuple] = []
        self._funcs: List[Function] = []
        self._classes: List[str] = []
        self._stmts: List[Optional[cst.BaseStatement]] = []
        self._block_children: Set[int] = set()
        self.numberer = None

    # -- scopes ---------------------------------------------------------
    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._bind(node.name.value, node)
        self._classes.append(node.name.value)

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        self._classes.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._bind(node.name.value, node)
        outer = self._funcs[-1] if self._funcs else None
        cls = self._classes[-1] if self._classes and outer is None else None
        prefix = outer.qualname + ".<locals>." if outer else (cls + "." if cls else "")
        fn = Function(node, node.name.value, prefix + node.name.value, cls)
        self.functions.append(fn)
        self._funcs.append(fn)

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._funcs.pop()

    # -- statements (for guard placement) -----------------------------------
    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self._block_children.update(id(s) for s in node.body)

    def visit_Module(self, node: cst.Module) -> None:
        self._block_children.update(id(s) for s in node.body)

    def on_visit(self, node: cst.CSTNode) -> bool:
        if self.numberer is not None:
            self.numberer.on_visit(node)
        kind = _kind(type(node))
        if kind == _STATEMENT:
            self._stmts.append(node if id(node) in self._block_children else None)
        elif kind == _SUITE:  # `if x: f()`: no statement of its own
            self._stmts.append(None)
        return cstwalk.visit_hook(self, node)

    def on_leave(self, original_node: cst.CSTNode) -> None:
        cstwalk.leave_hook(self, original_node)
        if _kind(type(original_node)) != _OTHER:
            self._stmts.pop()
        if self.numberer is not None:
            self.numberer.on_leave(original_node)

    # -- bindings --------------------------------------------------------
    def _bind(self, name: str, node: cst.CSTNode) -> None:
        if not self._funcs:  # a function's own names: the scope analysis answers for them
            self.module_names.add(name)

    def _bind_target(self, target: cst.BaseExpression, node: cst.CSTNode) -> None:
        if isinstance(target, cst.Name):
            self._bind(target.value, node)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for el in target.elements:
                self._bind_target(el.value, node)
        elif isinstance(target, cst.StarredElement):
            self._bind_target(target.value, node)

    def visit_Assign(self, node: cst.Assign) -> None:
        for t in node.targets:
            self._bind_target(t.target, node)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._bind_target(node.target, node)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._bind_target(node.target, node)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._bind_target(node.target, node)

    def visit_For(self, node: cst.For) -> None:
        self._bind_target(node.target, node)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname:
            self._bind_target(node.asname.name, node)

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            full = dotted(alias.name)
            if alias.asname:
                local = alias.asname.name.value
                self.imports[local] = full
            else:
                local = full.split(".")[0]
                self.imports.setdefault(local, local)
            self._bind(local, node)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if isinstance(node.names, cst.ImportStar):
            return
        base = "." * len(node.relative) + (dotted(node.module) if node.module else "")
        for alias in node.names:
            name = alias.name.value
            local = alias.asname.name.value if alias.asname else name
            self.imports.setdefault(local, f"{base}.{name}" if base and not base.endswith(".") else base + name)
            self._bind(local, node)

    # -- calls ------------------------------------------------------------
    def visit_Call(self, node: cst.Call) -> None:
        stmt = self._stmts[-1] if self._stmts else None
        fn = self._funcs[-1] if self._funcs else None
        self.raw_calls.append((node, fn, stmt))


def collect(module: cst.Module, positions: Optional[Mapping[cst.CSTNode, CodeRange]] = None,
            numberer=None) -> ModuleFacts:
    """positions: the module's (scopecheck.Tree.position; LibCST's PositionProvider if not given), read
    only where a call's range is asked. numberer: a visitor told of every node of the same walk
    (scopecheck's numbering: no walk of its own)."""
    if positions is None:
        positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    c = _Collector()
    c.numberer = numberer
    module.visit(c)
    calls = []
    for node, fn, stmt in c.raw_calls:
        name = dotted(node.func)
        if name is None:
            continue
        root, _, rest = name.partition(".")
        if root in c.imports:
            name = c.imports[root] + ("." + rest if rest else "")
        calls.append(CallInfo(node, name, fn, stmt, positions))
    return ModuleFacts(module, c.imports, c.module_names, calls, c.functions)
