"""Read-only LibCST walks without LibCST's rebuild of every node visited.

`CSTNode.visit` rebuilds each node it passes through (`_visit_and_replace_children` calls the node's
constructor, and its validation) even for a visitor that changes nothing: a walk of a module costs
about half a parse of it. Inside `fast_visits()`, a CSTVisitor (never a transformer) walks the same
children in the same order, with the same callbacks, and nothing is rebuilt.

A node type's children come from its own `_visit_and_replace_children`: the field names it hands to
LibCST's visit helpers, in the order it calls them, read from its bytecode. A type whose method holds
a branch or a loop is walked LibCST's way (its own `_visit_and_replace_children`), so an unforeseen
LibCST release is slower, never different; tests/test_cstwalk.py checks the order against
`node.children` on every node of the fixtures.
"""
from __future__ import annotations

import dis
import re
from contextlib import contextmanager
from typing import Dict, Iterator, Optional, Tuple

from libcst import CSTNode, CSTVisitor

_HELPERS = frozenset({"visit_required", "visit_optional", "visit_sentinel", "visit_sequence",
                      "visit_body_sequence", "visit_iterable", "visit_body_iterable"})
_FIELDS: Dict[type, Optional[Tuple[str, ...]]] = {}
_HOOKS: Dict[type, object] = {}
_VISITORS: Dict[type, bool] = {}
_NODE_TYPES: Dict[type, bool] = {}
_ATTRIBUTE_HOOK = re.compile(r"(visit|leave)_([A-Z][A-Za-z]*)_\w+$")
_lib_visit = CSTNode.visit
_depth = 0


def _read_fields(cls: type) -> Optional[Tuple[str, ...]]:
    """The fields `cls._visit_and_replace_children` visits, in order; None where the bytecode is not
    one straight run of helper calls (a jump, or a helper without a field name right after it)."""
    method = getattr(cls, "_visit_and_replace_children", None)
    code = getattr(method, "__code__", None)
    if code is None:
        return None
    names, pending = [], False
    for ins in dis.get_instructions(method):
        if "JUMP" in ins.opname or ins.opname in ("FOR_ITER", "SEND", "YIELD_VALUE"):
            return None
        if ins.opname == "LOAD_GLOBAL" and ins.argval in _HELPERS:
            if pending:
                return None
            pending = True
        elif pending and ins.opname == "LOAD_CONST":
            if not isinstance(ins.argval, str):
                return None
            names.append(ins.argval)
            pending = False
    if pending or not names and code.co_names and any(n in _HELPERS for n in code.co_names):
        return None
    return tuple(names)


def fields(cls: type) -> Optional[Tuple[str, ...]]:
    try:
        return _FIELDS[cls]
    except KeyError:
        got = _FIELDS[cls] = _read_fields(cls)
        return got


def children(node: CSTNode) -> list:
    """node.children, read from the fields (no rebuild)."""
    names = fields(type(node))
    if names is None:
        return list(node.children)
    out = []
    for name in names:
        value = getattr(node, name)
        if isinstance(value, CSTNode):
            out.append(value)
        elif isinstance(value, (tuple, list)):
            out.extend(v for v in value if isinstance(v, CSTNode))
    return out


_ALL = "all"  # a visitor whose on_visit_attribute is its own: told of every field


def _hooked(cls: type):
    """How a visitor acts on entering a field: None (it does not), _ALL (an on_visit_attribute of its
    own), or the node type names it has `visit_ClassDef_bases`-style hooks for."""
    try:
        return _HOOKS[cls]
    except KeyError:
        pass
    if (cls.on_visit_attribute is not CSTVisitor.on_visit_attribute
            or cls.on_leave_attribute is not CSTVisitor.on_leave_attribute):
        got = _ALL
    else:
        got = frozenset(m.group(2) for m in map(_ATTRIBUTE_HOOK.match, dir(cls))  # CSTVisitor has a no-op for each
                        if m and getattr(cls, m.group(0)) is not getattr(CSTVisitor, m.group(0), None)) or None
    _HOOKS[cls] = got
    return got


def _is_node(t: type) -> bool:
    try:
        return _NODE_TYPES[t]
    except KeyError:  # CSTNode is an ABC: isinstance on it costs, once per type here
        got = _NODE_TYPES[t] = issubclass(t, CSTNode)
        return got


def _visit(self: CSTNode, visitor):
    kind = _VISITORS.get(type(visitor))
    if kind is None:
        kind = _VISITORS[type(visitor)] = isinstance(visitor, CSTVisitor)
    if not kind:  # a transformer: LibCST's own walk, which builds what it returns
        return _lib_visit(self, visitor)
    if visitor.on_visit(self):
        t = type(self)
        names = _FIELDS[t] if t in _FIELDS else fields(t)
        if names is None:  # LibCST's way for this node (its children still walked here)
            self._visit_and_replace_children(visitor)
        else:
            hooked = _hooked(type(visitor))
            if hooked is not None and (hooked is _ALL or t.__name__ in hooked):
                for name in names:
                    visitor.on_visit_attribute(self, name)
                    _visit_field(getattr(self, name), visitor)
                    visitor.on_leave_attribute(self, name)
            else:
                for name in names:
                    _visit_field(getattr(self, name), visitor)
    visitor.on_leave(self)
    return self


def _visit_field(value, visitor) -> None:
    t = type(value)
    if t is tuple or t is list:
        for v in value:
            if _is_node(type(v)):
                v.visit(visitor)
    elif _is_node(t):
        value.visit(visitor)
    elif value is not None and hasattr(value, "__iter__"):  # another sequence type a node was built with
        for v in value:
            if _is_node(type(v)):
                v.visit(visitor)


@contextmanager
def fast_visits() -> Iterator[None]:
    """While open, every CSTVisitor's walk (LibCST's metadata providers' too) goes without rebuilding."""
    global _depth
    if _depth == 0:
        CSTNode.visit = _visit
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        if _depth == 0:
            CSTNode.visit = _lib_visit
