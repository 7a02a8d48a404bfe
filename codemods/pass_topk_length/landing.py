"""docs/soundness.md `value-use`: where a kernel value taken as a value lands, and the calls that may call it there.

A value use the rule cannot contain is a manual site; each call that may run the kernel through it is one too, so
that every place the kernel runs is reported (round AR: a tuple's unpacking, a generator's `yield`, a
`contextmanager`, a lambda or cached getter, a property, an Enum member, a dataclass field's default,
`functools.wraps`' `__wrapped__`, `K.__call__`). The flow is read by name, over the whole module and on no path:
a place is a name, an attribute name or a def whose calls hand the value back, and every read of one is followed.
This over-reports (a call through any object with that attribute name), which is the safe side: it only adds
manual sites beside a value use that is one already."""
from __future__ import annotations

from typing import Iterator, List, Set, Tuple

import libcst as cst

from .syntax import bound_targets

Place = Tuple[str, str, bool]  # ("name" | "attr" | "def", the name, whether it may hold the kernel itself)
_MAX_PLACES = 64
# lookups on a holder that hand back what it holds (`registry.get(key)(...)`)
_LOOKUPS = {"get", "pop", "setdefault", "values", "items", "__getitem__", "__get__", "__func__"}
# what hands on what it holds whole: a container's element, a branch of a conditional, an await
_PASS_ON = (cst.Element, cst.StarredElement, cst.Tuple, cst.List, cst.Set, cst.DictElement, cst.Dict, cst.IfExp,
            cst.BooleanOperation, cst.Lambda, cst.Await)


def landing_calls(tree, node: cst.CSTNode, imported: Set[str] = frozenset()) -> List[cst.Call]:
    """The calls of the module that may call the kernel value at `node`, in source order (each place it lands
    followed, 64 places at most). `imported`: the names the module binds by imports (a module's function handed
    the value keeps it nowhere the module reads: `pkgutil.resolve_name(...)`)."""
    calls: dict = {}
    seen: Set[Tuple[str, str]] = {("name", n) for n in imported}
    todo = list(_places(tree, node, True, calls))
    while todo and len(seen) < _MAX_PLACES:
        kind, name, itself = todo.pop()
        if (kind, name) in seen:
            continue
        seen.add((kind, name))
        for read in _reads(tree, kind, name):
            todo += _places(tree, read, itself and kind != "def", calls)
    return sorted(calls.values(), key=lambda c: tree.order[id(c)])


def _places(tree, node: cst.CSTNode, itself: bool, calls: dict) -> Iterator[Place]:
    """Where the expression at `node` lands (recording each call that may call it on the way); `itself`: it is the
    kernel, not something holding or making it."""
    top, itself = _climb(tree, node, itself, calls)
    up = tree.parent.get(top)
    if isinstance(up, cst.NamedExpr) and up.value is top:  # (`(fn := K)`: the name, and where the expression goes)
        yield ("name", getattr(up.target, "value", ""), itself)
        yield from _places(tree, up, itself, calls)
        return
    if isinstance(up, cst.Arg) and up.value is top:  # an argument: the call's receiver may keep it
        call = tree.parent.get(up)
        if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute):
            yield from _place_of_target(call.func.value)
        if isinstance(call, cst.Call):
            yield from _places(tree, call, False, calls)  # (`partial(K)`, `next(gen())`, `Ops(fn=K)`: its result)
        return
    if isinstance(up, (cst.Assign, cst.AnnAssign, cst.AugAssign)) and up.value is top:
        targets = [t.target for t in up.targets] if isinstance(up, cst.Assign) else [up.target]
        in_class = _in_class_body(tree, up)
        for t in targets:
            for part in bound_targets(t):
                part = part.value if isinstance(part, cst.StarredElement) else part
                yield from _place_of_target(part, itself)
                if in_class and isinstance(part, cst.Name):
                    yield ("attr", part.value, itself)  # read off the class or an instance
                    if part.value == "__call__":  # an instance is called (`Op()(...)`)
                        yield ("def", _class_name(tree, up), False)
    elif isinstance(up, cst.Return) or isinstance(top, cst.Yield):  # a getter's or a generator's def
        fdef = next((a for a in tree.ancestors(top) if isinstance(a, (cst.FunctionDef, cst.Lambda))), None)
        if isinstance(fdef, cst.FunctionDef):
            yield ("def", fdef.name.value, False)
    elif isinstance(up, cst.Param) and up.default is top:
        yield ("name", up.name.value, itself)
    elif isinstance(up, cst.Decorator):  # (`@functools.wraps(K)`: the def keeps it in `__wrapped__`)
        fdef = tree.parent.get(up)
        if isinstance(fdef, (cst.FunctionDef, cst.ClassDef)):
            yield ("def", fdef.name.value, False)
    elif isinstance(up, (cst.For, cst.CompFor)) and up.iter is top:
        for part in bound_targets(up.target):
            yield from _place_of_target(part)
    elif isinstance(up, cst.WithItem) and up.item is top and up.asname is not None:
        for part in bound_targets(up.asname.name):
            yield from _place_of_target(part)


def _climb(tree, node: cst.CSTNode, itself: bool, calls: dict) -> Tuple[cst.CSTNode, bool]:
    """Up from `node` through reads off it (an attribute, an item, a lookup), calls of it (each recorded; a call
    of the kernel itself ends the climb: its result is the kernel's output, but a call of what holds or makes it,
    a getter, a factory, a generator, may hand it back), and what hands it on whole (_PASS_ON); with whether the
    top is the kernel itself."""
    top = node
    while True:
        up = tree.parent.get(top)
        if isinstance(up, (cst.Attribute, cst.Subscript)) and up.value is top:
            top = up  # (`K.__call__` is the kernel's call still; an item or attribute of a holder, a holder)
        elif isinstance(up, cst.Call) and up.func is top:
            calls[id(up)] = up
            if itself:
                return up, False
            top = up
        elif isinstance(up, cst.Yield):
            return up, itself
        elif isinstance(up, _PASS_ON):
            top, itself = up, itself and isinstance(up, (cst.IfExp, cst.BooleanOperation, cst.Await))
        else:
            return top, itself


def _place_of_target(t: cst.CSTNode, itself: bool = False) -> Iterator[Place]:
    """The place a binding target names: a name, an attribute's name, or (an item stored) its holder's place."""
    while isinstance(t, cst.Subscript):
        t, itself = t.value, False
    if isinstance(t, cst.Name):
        yield ("name", t.value, itself)
    elif isinstance(t, cst.Attribute):
        yield ("attr", t.attr.value, itself)


def _reads(tree, kind: str, name: str) -> Iterator[cst.CSTNode]:
    """Each read of a place: the name read, an attribute of that name read off anything, or a def's name read
    (called, or its attribute)."""
    if kind in ("name", "def"):
        for n in tree.find(cst.Name, lambda n: n.value == name):
            up = tree.parent.get(n)
            bound = isinstance(up, (cst.AssignTarget, cst.AnnAssign, cst.AugAssign)) and up.target is n \
                or isinstance(up, (cst.Param, cst.FunctionDef, cst.ClassDef, cst.AsName, cst.ImportAlias)) \
                or isinstance(up, cst.Attribute) and up.attr is n or isinstance(up, cst.Arg) and up.keyword is n \
                or isinstance(up, (cst.For, cst.CompFor)) and up.target is n
            if not bound:
                yield n
    if kind in ("attr", "def"):
        for a in tree.find(cst.Attribute, lambda a: a.attr.value == name):
            up = tree.parent.get(a)
            if not (isinstance(up, (cst.AssignTarget, cst.AnnAssign, cst.AugAssign)) and up.target is a):
                yield a


def _in_class_body(tree, node: cst.CSTNode) -> bool:
    up = tree.parent.get(node)
    while up is not None and not isinstance(up, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
        up = tree.parent.get(up)
    return isinstance(up, cst.ClassDef)


def _class_name(tree, node: cst.CSTNode) -> str:
    return next(a.name.value for a in tree.ancestors(node) if isinstance(a, cst.ClassDef))
