"""docs/soundness.md `callers` (round AL): a lookup by a name the program builds. `getattr(b, f"forward_{mode}")`,
`methodcaller("forward_" + mode, ...)`, a name found by scanning `dir(b)` or taken from a def's `__name__` may be the
rows method's name without spelling it, and its caller is then never seen. Each such lookup's name is read as a
pattern: the literal text the program puts in it, any text where it puts something else; a name read from data
alone (a parameter, a request's field: no literal of the program in it) is stated as not the rows method's (a name
a call hands as a literal is a lookup the spelled walk already sees)."""
from __future__ import annotations

import ast
import re
from typing import Callable, List, Optional, Tuple

from . import reach

# Calls that look an attribute up by a name they are handed: (the callee's last name, the name argument's place)
_LOOKUPS = {"getattr": 1, "getattr_static": 1, "methodcaller": 0, "attrgetter": 0, "__getattribute__": None}
# What yields the names an object holds: a loop over one reads them all
_NAMESPACES = {"dir", "vars", "getmembers", "__dir__"}
HOLE = None  # any text
_OWN = "\0own"  # (after a HOLE: a name the program takes from its own objects, any name at all)
Pattern = Tuple[Optional[str], ...]


def lookup(proj, name: str, elsewhere: Callable[[object, ast.AST], bool]) -> Optional[reach.Finding]:
    """The first lookup of the project (this module's too) by a built name that may be `name`, on an object that may
    be the rows method's (`elsewhere(file, obj)`: proven another class's instance), or None."""
    for f, call, patterns in _built_lookups(proj):
        obj = _looked_up_on(call)
        if any(_matches(p, name) for p in patterns) and not (obj is not None and elsewhere(f, obj)):
            return reach.Finding(proj.rel(f.path), call.lineno,
                                 f"`{reach._unparse(call)[:60]}` looks up a name it builds, which may be `{name}`: what "
                                 "calls it is not seen; call the method by its name")
    return None


def _built_lookups(proj) -> List[Tuple[object, ast.Call, List[Pattern]]]:
    """Every lookup of the project by a name not spelled as a literal, with the patterns that name may take (read
    once per project)."""
    cache = proj.__dict__.setdefault("_built_lookups", {})
    own = proj.own()
    key = id(own)
    if key not in cache:
        files = proj.files_naming(sorted(_LOOKUPS))
        out = []
        for f in files + ([own] if own is not None and own not in files else []):
            for call in (n for n in ast.walk(f.tree) if isinstance(n, ast.Call)):
                arg = _name_argument(call)
                if arg is None or isinstance(arg, ast.Constant):
                    continue
                patterns = _patterns(f, arg, 0)
                held = [p for p in patterns if p == (HOLE, _OWN)]  # (any name an object holds: called at once only)
                if held and _may_be_called(f, call, 0, strict=True) or len(held) < len(patterns) and _may_be_called(
                        f, call, 0):
                    out.append((f, call, patterns))
        cache.clear()
        cache[key] = out
    return cache[key]


def _last_name(call: ast.Call) -> Optional[str]:
    """The callee's last name: `getattr`, `operator.methodcaller` -> `methodcaller`."""
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None


def _name_argument(call: ast.Call) -> Optional[ast.AST]:
    func, last = call.func, _last_name(call)
    if last not in _LOOKUPS:
        return None
    place = _LOOKUPS[last]
    if place is None:  # `object.__getattribute__(b, name)` or `b.__getattribute__(name)`
        place = 1 if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in (
            "object", "type") else 0
    return call.args[place] if len(call.args) > place and not isinstance(call.args[place], ast.Starred) else None


def _looked_up_on(call: ast.Call) -> Optional[ast.AST]:
    """The object a getattr-like call reads off (None for `methodcaller`/`attrgetter`: handed later)."""
    func, last = call.func, _last_name(call)
    if last in ("getattr", "getattr_static") and call.args:
        return call.args[0]
    if last == "__getattribute__" and isinstance(func, ast.Attribute):  # `object.__getattribute__(b, n)`, `b.__...(n)`
        return call.args[0] if _name_argument(call) is not None and len(call.args) > 1 else func.value
    return None


# Calls that only look at what they are handed: the looked-up method is not called through them
_INSPECTS = {"callable", "isinstance", "issubclass", "hasattr", "print", "repr", "str", "type", "id", "len", "bool",
             "format", "signature", "getattr", "setattr", "iscoroutinefunction", "ismethod", "isfunction"}
# Calls that hand back what they are handed (or an element of it): the result is read as the looked-up value
_PASSES = {"next", "iter", "list", "tuple", "filter", "reversed", "sorted"}


def _may_be_called(f, node: ast.AST, depth: int, strict: bool = False) -> bool:
    """May the looked-up value be called: called at once, or kept (bound, stored, returned, handed on) where a later
    call may run it? Read off the result (an attribute, an item), tested, compared or printed, it is not. `strict`:
    called at once (through a local, `next(...)`, a conditional) only: a scan of an object's names copying values."""
    if isinstance(node, ast.Call) and reach._unparse(node.func).rsplit(".", 1)[-1] == "methodcaller":
        return True
    up = f.parents.get(id(node))
    if depth > 4:
        return True
    if isinstance(up, ast.BoolOp):  # (`getattr(b, n, None) or fallback`)
        return _may_be_called(f, up, depth + 1, strict)
    if up is None or isinstance(up, (ast.Expr, ast.Compare, ast.BinOp, ast.UnaryOp, ast.If, ast.While, ast.Assert,
                                     ast.FormattedValue, ast.Subscript)):
        return False
    if isinstance(up, ast.Attribute):
        return up.attr in ("__call__", "__func__") and _may_be_called(f, up, depth + 1, strict)
    if isinstance(up, ast.IfExp):
        return up.test is not node and _may_be_called(f, up, depth + 1, strict)
    if isinstance(up, (ast.Starred, ast.GeneratorExp, ast.ListComp, ast.SetComp, ast.keyword, ast.List, ast.Tuple,
                       ast.Await)):
        return _may_be_called(f, up, depth + 1, strict)
    if isinstance(up, ast.Call):
        if up.func is node:
            return True
        callee = reach._unparse(up.func).rsplit(".", 1)[-1]
        return callee in _PASSES and _may_be_called(f, up, depth + 1, strict) or not strict and callee not in (
            _INSPECTS | _PASSES)
    if isinstance(up, (ast.Assign, ast.AnnAssign, ast.NamedExpr)):
        targets = up.targets if isinstance(up, ast.Assign) else [up.target]
        return any(_name_may_be_called(f, up, t.id, depth, strict) if isinstance(t, ast.Name) else not strict
                   for t in targets)
    return not strict  # (returned, yielded, a dict's value, a default: kept)


def _name_may_be_called(f, at: ast.AST, name: str, depth: int, strict: bool) -> bool:
    fn = f.enclosing(at, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
    return any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)
               and _may_be_called(f, n, depth + 1, strict) for n in ast.walk(fn if fn is not None else f.tree))


def _patterns(f, e: ast.AST, depth: int) -> List[Pattern]:
    """The patterns the name `e` may take where the program builds it; [] where it is data alone."""
    found = _pieces(f, e, depth)
    return [p for p in found if any(isinstance(x, str) and x for x in p) or p == (HOLE, _OWN)]


def _pieces(f, e: ast.AST, depth: int) -> List[Pattern]:
    if depth > 4:
        return [(HOLE,)]
    if isinstance(e, ast.Constant):
        return [(e.value,)] if isinstance(e.value, str) else []
    if isinstance(e, ast.JoinedStr):
        alts: List[Pattern] = [()]
        for v in e.values:
            part = [(v.value,)] if isinstance(v, ast.Constant) else _as_part(_pieces(f, v.value, depth + 1))
            alts = [a + b for a in alts for b in part][:16]
        return alts
    if isinstance(e, ast.BinOp) and isinstance(e.op, ast.Add):
        left, right = _as_part(_pieces(f, e.left, depth + 1)), _as_part(_pieces(f, e.right, depth + 1))
        return [a + b for a in left for b in right][:16]
    if isinstance(e, ast.BinOp) and isinstance(e.op, ast.Mod) and isinstance(e.left, ast.Constant) \
            and isinstance(e.left.value, str):
        return [_template(e.left.value, r"%(?:\([^)]*\))?[-#0 +]*\d*(?:\.\d+)?[a-zA-Z%]")]
    if isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and isinstance(e.func.value, ast.Constant) \
            and isinstance(e.func.value.value, str):
        if e.func.attr == "format":
            return [_template(e.func.value.value, r"\{[^}]*\}")]
        if e.func.attr == "join":
            return [(HOLE, _OWN)] if any(isinstance(n, ast.Constant) and isinstance(n.value, str)
                                         for a in e.args for n in ast.walk(a)) else [(HOLE,)]
    if isinstance(e, ast.Attribute) and e.attr in ("__name__", "__qualname__"):
        return [(HOLE, _OWN)]  # (a def's name: a delegating decorator's `getattr(inner, method.__name__)`)
    if isinstance(e, ast.IfExp):
        return _pieces(f, e.body, depth + 1) + _pieces(f, e.orelse, depth + 1)
    if isinstance(e, ast.Name):
        return _name_pieces(f, e, depth)
    return [(HOLE,)]


def _as_part(alts: List[Pattern]) -> List[Pattern]:
    """Alternatives used inside a larger name: a name the program takes from its objects is any text there."""
    return [tuple(x for x in p if x != _OWN) for p in alts] or [(HOLE,)]


def _template(text: str, hole: str) -> Pattern:
    out: List[Optional[str]] = []
    for i, part in enumerate(re.split(hole, text)):
        if i:
            out.append(HOLE)
        if part:
            out.append(part)
    return tuple(out)


def _name_pieces(f, e: ast.Name, depth: int) -> List[Pattern]:
    """A local or a module name: what its bindings in the enclosing function (or the module) give it; a loop's
    target over an object's names (`for n in dir(b)`) any name it holds; a parameter is data."""
    fn = f.enclosing(e, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
    out = _bound_pieces(f, fn if fn is not None else f.tree, e.id, depth)
    params = {a.arg for a in ast.walk(fn.args) if isinstance(a, ast.arg)} if fn is not None else set()
    if not out and fn is not None and e.id not in params:  # (a module's constant: `PREFIX + mode`)
        out = _bound_pieces(f, ast.Module(body=[s for s in f.tree.body if not isinstance(
            s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))], type_ignores=[]), e.id, depth)
    return out


def _bound_pieces(f, scope: ast.AST, name: str, depth: int) -> List[Pattern]:
    out: List[Pattern] = []
    for node in ast.walk(scope):
        if isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)) and _binds(node.target, name):
            out += [(HOLE, _OWN)] if _over_names(node.iter) else [
                p for elt in _elements(node.iter) for p in _pieces(f, elt, depth + 1)] or [(HOLE,)]
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.NamedExpr)) and node.value is not None and any(
                _binds(t, name) for t in (node.targets if isinstance(node, ast.Assign) else [node.target])):
            out += _pieces(f, node.value, depth + 1)
    return out


def _binds(target: ast.AST, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(target))


def _over_names(it: ast.AST) -> bool:
    """Does the loop run over an object's names (`dir(b)`, `vars(b)`, `b.__dict__`, `getmembers(b)`)?"""
    return any(isinstance(n, ast.Call) and reach._unparse(n.func).rsplit(".", 1)[-1] in _NAMESPACES
               or isinstance(n, ast.Attribute) and n.attr == "__dict__" for n in ast.walk(it))


def _elements(it: ast.AST) -> List[ast.AST]:
    return list(it.elts) if isinstance(it, (ast.List, ast.Tuple, ast.Set)) else []


def _matches(pattern: Pattern, name: str) -> bool:
    if pattern == (HOLE, _OWN):
        return True
    regex = "".join(".*" if x is HOLE else re.escape(x) for x in pattern if x != _OWN)
    return re.fullmatch(regex, name, re.S) is not None
