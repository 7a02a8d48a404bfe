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

Both read LibCST's internals: where the switch (accel.py) is off, `fast_visits()` changes nothing (LibCST's
own walk) and no field is read from bytecode (`fields` is None: `node.children` then).
"""
from __future__ import annotations

import dis
import re
import threading
import typing
from contextlib import contextmanager
from typing import Dict, Iterator, Optional, Tuple

import libcst as cst
from libcst import CSTNode, CSTVisitor

from . import accel

_HELPERS = frozenset({"visit_required", "visit_optional", "visit_sentinel", "visit_sequence",
                      "visit_body_sequence", "visit_iterable", "visit_body_iterable"})
_FIELDS: Dict[type, Optional[Tuple[str, ...]]] = {}
_SUBSTANTIVE: Dict[type, Optional[Tuple[str, ...]]] = {}
_VISITORS: Dict[type, Tuple[bool, object]] = {}
_TYPE_KINDS: Dict[type, int] = {}
_ATTRIBUTE_HOOK = re.compile(r"(visit|leave)_([A-Z][A-Za-z]*)_\w+$")
_HOOKS: Dict[tuple, object] = {}
# visitor classes whose instances are known to hold no `visit_`/`leave_`/`on_` attribute of their own (so
# CSTVisitor's getattr dispatch finds the class's): their walks skip the look at each instance's attributes
_NO_INSTANCE_HOOKS: set = set()
_MISSING = object()
_lib_visit = CSTNode.visit
_LIB_ON_VISIT, _LIB_ON_LEAVE = CSTVisitor.on_visit, CSTVisitor.on_leave
_depth = 0
_owner: Optional[int] = None  # the thread whose walks are fast
_lock = threading.Lock()
_get_ident = threading.get_ident


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
    """_read_fields(cls), once per type; None for every type where the accelerators are off."""
    try:
        return _FIELDS[cls]
    except KeyError:
        got = _FIELDS[cls] = _read_fields(cls) if accel.on() else None
        return got


def _leaf_types(hint) -> Iterator[object]:
    """The types a field's annotation allows (`Sequence[Union[A, B]]`, `Optional[A]`: A, B, NoneType)."""
    args = typing.get_args(hint)
    if not args:
        yield hint
        return
    for a in args:
        yield from _leaf_types(a)


def _holds_layout_only(hint) -> bool:
    return all(isinstance(t, type) and (issubclass(t, TRIVIA) or t in (cst.MaybeSentinel, type(None)))
               for t in _leaf_types(hint))


def substantive_fields(cls: type) -> Optional[Tuple[str, ...]]:
    """fields(cls) less those its annotations allow only TRIVIA in (`whitespace_after`, `lpar`, `comma`): the
    fields a walk without layout must read. A type whose annotations cannot be read keeps them all."""
    try:
        return _SUBSTANTIVE[cls]
    except KeyError:
        names = fields(cls)
        if names is not None:
            try:
                hints = typing.get_type_hints(cls)
            except Exception:  # an annotation this Python cannot evaluate: read every field
                hints = {}
            names = tuple(n for n in names if n not in hints or not _holds_layout_only(hints[n]))
        got = _SUBSTANTIVE[cls] = names
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
    own), or the node type names it has `visit_ClassDef_bases`-style hooks for. Only the classes
    above CSTVisitor count (it has a no-op for every field of every node)."""
    found = set()
    for k in cls.__mro__:
        if k is CSTVisitor:
            break
        for name in vars(k):
            if name in ("on_visit_attribute", "on_leave_attribute"):
                return _ALL
            m = _ATTRIBUTE_HOOK.match(name)
            if m:
                found.add(m.group(2))
    return frozenset(found) or None


def _visitor_kind(cls: type):
    """(a CSTVisitor, its field hooks), once per visitor class. Bounded: a rule may make a class per call."""
    try:
        return _VISITORS[cls]
    except KeyError:
        if len(_VISITORS) >= 256:
            _VISITORS.clear()
        visitor = issubclass(cls, CSTVisitor)
        got = _VISITORS[cls] = (visitor, _hooked(cls) if visitor else None)
        return got


# Layout only: whitespace, comments, line ends, punctuation and operator tokens. Two thirds of a
# module's nodes; no name, call or statement lies under one (an operator is read through its parent's
# field: `isinstance(node.operator, cst.Not)`).
TRIVIA = (cst.BaseParenthesizableWhitespace, cst.EmptyLine, cst.TrailingWhitespace, cst.Newline, cst.Comment,
          cst.Comma, cst.Dot, cst.Colon, cst.Semicolon, cst.AssignEqual, cst.LeftParen, cst.RightParen,
          cst.LeftSquareBracket, cst.RightSquareBracket, cst.LeftCurlyBrace, cst.RightCurlyBrace,
          cst.BaseBinaryOp, cst.BaseBooleanOp, cst.BaseCompOp, cst.BaseUnaryOp, cst.BaseAugOp, cst.Asynchronous)
_NOT_NODE, _NODE, _TRIVIA = 0, 1, 2
_skip_trivia = False


def _kind_of(t: type) -> int:
    try:
        return _TYPE_KINDS[t]
    except KeyError:  # CSTNode is an ABC: isinstance on it costs, once per type here
        got = _TYPE_KINDS[t] = (_NOT_NODE if not issubclass(t, CSTNode)
                                else _TRIVIA if issubclass(t, TRIVIA) else _NODE)
        return got


def is_node(value: object) -> bool:
    """isinstance(value, CSTNode), answered once per type (CSTNode is an ABC: each isinstance costs)."""
    return _kind_of(type(value)) != _NOT_NODE


def is_node_type(t: type) -> bool:
    return _kind_of(t) != _NOT_NODE


def is_trivia(node: CSTNode) -> bool:
    return _kind_of(type(node)) == _TRIVIA


def _visit(self: CSTNode, visitor):
    plain, hooked = _visitor_kind(type(visitor))
    if not plain or _get_ident() != _owner:  # a transformer, or another thread: LibCST's own walk
        return _lib_visit(self, visitor)
    cls = type(visitor)
    if cls in _NO_INSTANCE_HOOKS:
        shadowed = False
    else:
        own = vars(visitor) if hasattr(visitor, "__dict__") else {}
        shadowed = any(k.startswith(("visit_", "leave_", "on_visit", "on_leave")) for k in own)
    enter = _hooks_of(cls, "visit_") if cls.on_visit is _LIB_ON_VISIT and not shadowed else None
    leave = _hooks_of(cls, "leave_") if cls.on_leave is _LIB_ON_LEAVE and not shadowed else None
    _walk(self, visitor, hooked, enter, leave)
    return self


def no_instance_hooks(*classes: type) -> None:
    """Declare visitor classes whose instances never hold a hook of their own (the engine's scope visitors)."""
    _NO_INSTANCE_HOOKS.update(classes)


def _hooks_of(cls: type, prefix: str) -> Dict[type, object]:
    """cls's `visit_<Node>` (or `leave_<Node>`) functions by node type, filled as types are met: what
    CSTVisitor.on_visit and on_leave look up with getattr on every node. Bounded: a rule may make a class
    per call."""
    key = (cls, prefix)
    got = _HOOKS.get(key)
    if got is None:
        if len(_HOOKS) >= 512:
            _HOOKS.clear()
        got = _HOOKS[key] = {}
    return got


def _hook(hooks: Dict[type, object], cls: type, prefix: str, t: type):
    got = hooks[t] = getattr(cls, prefix + t.__name__, None)
    return got


def visit_hook(visitor: CSTVisitor, node: CSTNode) -> bool:
    """CSTVisitor.on_visit(visitor, node), the `visit_<Node>` method looked up once per (class, node type):
    for visitors of our own, whose on_visit adds to LibCST's and whose instances hold no hooks."""
    hooks = _hooks_of(type(visitor), "visit_")
    f = hooks.get(type(node), _MISSING)
    if f is _MISSING:
        f = _hook(hooks, type(visitor), "visit_", type(node))
    return f is None or f(visitor, node) is not False


def leave_hook(visitor: CSTVisitor, node: CSTNode) -> None:
    """CSTVisitor.on_leave(visitor, node), as visit_hook."""
    hooks = _hooks_of(type(visitor), "leave_")
    f = hooks.get(type(node), _MISSING)
    if f is _MISSING:
        f = _hook(hooks, type(visitor), "leave_", type(node))
    if f is not None:
        f(visitor, node)


def _walk(node: CSTNode, visitor, hooked, enter, leave) -> None:
    """LibCST's visit of node (its callbacks, in its order) without the rebuild; enter/leave: the visitor's
    class's hooks by node type (_hooks_of) where its on_visit/on_leave are CSTVisitor's."""
    t = type(node)
    if enter is not None:
        f = enter.get(t, _MISSING)
        if f is _MISSING:
            f = _hook(enter, type(visitor), "visit_", t)
        go = f is None or f(visitor, node) is not False
    else:
        go = visitor.on_visit(node)
    if go:
        if hooked is not None and (hooked is _ALL or t.__name__ in hooked):
            names = _FIELDS[t] if t in _FIELDS else fields(t)  # told of every field, layout or not
            if names is None:  # LibCST's way for this node (its children still walked here)
                node._visit_and_replace_children(visitor)
            else:
                for name in names:
                    visitor.on_visit_attribute(node, name)
                    _walk_field(getattr(node, name), visitor, hooked, enter, leave)
                    visitor.on_leave_attribute(node, name)
        else:
            if _skip_trivia:
                names = _SUBSTANTIVE[t] if t in _SUBSTANTIVE else substantive_fields(t)
            else:
                names = _FIELDS[t] if t in _FIELDS else fields(t)
            if names is None:
                node._visit_and_replace_children(visitor)
            else:
                for name in names:
                    _walk_field(getattr(node, name), visitor, hooked, enter, leave)
    if leave is not None:
        f = leave.get(t, _MISSING)
        if f is _MISSING:
            f = _hook(leave, type(visitor), "leave_", t)
        if f is not None:
            f(visitor, node)
    else:
        visitor.on_leave(node)


def _walk_field(value, visitor, hooked, enter, leave) -> None:
    t = type(value)
    if t is tuple or t is list or (_kind_of(t) == _NOT_NODE and value is not None and hasattr(value, "__iter__")):
        for v in value:  # a sequence (tuple or list, or another type a node was built with)
            kind = _kind_of(type(v))
            if kind == _NODE or kind == _TRIVIA and not _skip_trivia:
                _walk(v, visitor, hooked, enter, leave) if type(v).visit is _visit else v.visit(visitor)
    else:
        kind = _kind_of(t)
        if kind == _NODE or kind == _TRIVIA and not _skip_trivia:
            _walk(value, visitor, hooked, enter, leave) if t.visit is _visit else value.visit(visitor)


@contextmanager
def fast_visits(trivia: bool = True) -> Iterator[None]:
    """While open, every CSTVisitor's walk in this thread (LibCST's metadata providers' too) goes without
    rebuilding; other threads keep LibCST's walk (and, while one thread holds it, get it when they open one).
    trivia=False: nor into the TRIVIA under a node (for visitors that act on names, calls and
    statements only: the engine's and LibCST's scope and expression-context visitors). A walk started
    at a trivia node still sees it. Where the accelerators are off (accel.on()), nothing changes: LibCST's
    own walk, of every node."""
    global _depth, _skip_trivia, _owner
    me = _get_ident()
    if _depth and _owner != me or not accel.on():
        yield
        return
    with _lock:
        if _depth == 0:
            _owner = me
            CSTNode.visit = _visit
        _depth += 1
    before, _skip_trivia = _skip_trivia, _skip_trivia or not trivia
    try:
        yield
    finally:
        _skip_trivia = before
        with _lock:
            _depth -= 1
            if _depth == 0:
                CSTNode.visit = _lib_visit
                _owner = None
