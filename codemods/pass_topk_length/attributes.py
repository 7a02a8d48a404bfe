"""What `self.<attr>` holds, proven for the object (docs/soundness.md `self-attribute`): every way the project
can give an instance of the method's class that attribute is one of the writes read here, so the values those
writes store are all it can hold. Used for a kernel held in `self.sparse_fwd` (a call through it is the
kernel's) and for a `**self.opts` mapping that is a dict (unpacking it runs no code)."""
from __future__ import annotations

import ast
from typing import Callable, Dict, List, Optional, Set, Tuple

import libcst as cst
from libcst.metadata import FunctionScope

from topk_migrate.cst.resolve import CallInfo

from . import class_escape, reach
from .helper_identity import ARGUMENT_PASSING_DECORATORS
from .syntax import _code, _descendants, _is_name, assigned_target

# what changes how an instance's attribute is stored or read (reach's hooks, and a class's own layout): a class (or
# base, or subclass) defining one may make `self.x = v` store elsewhere, or `self.x` return something else
_ATTRIBUTE_HOOKS = reach._HOOKS | {"__slots__", "__set_name__"}
# writes a file may make to any object's attribute of that name, or to what decides its class
_OBJECT_WRITES = {"__class__", "__dict__"}

Accept = Callable[[cst.BaseExpression], bool]


def _shown(node: cst.CSTNode) -> str:
    return _code(node).strip()


def attribute_values(a, c: CallInfo, attr: str, accept: Accept, class_level: bool = True) -> Optional[str]:
    """Why `self.<attr>`, read in c's method, may hold a value `accept` refuses (or None: every value it can hold
    is one `accept` took). `a` is the module's analysis; `class_level`: a plain class-body `attr = value` is a
    value it may hold too (else such a binding refuses: a function there becomes a bound method)."""
    cls = _own_class(a, c)
    if isinstance(cls, str):
        return cls
    if not sealed(a, attr):  # (round N: a helper handed the instance sets it by name, `setattr(obj, k, v)`)
        return (f"another file of the project names `{attr}`: it may set `self.{attr}` on an instance it is handed, "
                "which the analysis does not follow")
    values, why = _module_values(a, cls, attr, class_level)
    if why:
        return why
    if not values:
        return f"`self.{attr}` is not set in `{cls.name.value}`, so what it holds cannot be checked"
    for value in values:
        if not accept(value):
            return f"`self.{attr}` is set at line {a.tree.line(value)} to `{_shown(value)[:60]}`"
    return _self_elsewhere(a, cls, c) or _project_writes(a, cls, attr) or a.reflection()


def _self_elsewhere(a, cls: cst.ClassDef, c: CallInfo) -> Optional[str]:
    """Why `self` in c's method may be no instance of cls (round M): the method taken from the class and called
    with another object (`Backend.forward(shim, ...)`, `forward = Backend.forward` in another class,
    `MethodType`), or handed to a decorator the project defines (reach.Project.self_is_anything); an object's
    class swapped, or a hook set from outside a class body (`cls.__setattr__ = ...`), anywhere in the project."""
    proj = a.project()
    own = proj.own()
    k = own.classes.get(cls.name.value) if own is not None else None
    fn = next((n for n in (k.body if k is not None else ()) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
               and n.name == c.function.name), None)
    if k is None or fn is None or proj.self_is_anything(own, k, fn):
        return (f"`{cls.name.value}.{c.function.name}` may be called with another object than an instance of "
                f"`{cls.name.value}` (taken from the class as a function), whose attributes are not these")
    for w in proj.attribute_hooks(_ATTRIBUTE_HOOKS | _OBJECT_WRITES):
        return f"{w.what} at {w.where()}: a class's hooks set outside its body, or an object's class swapped"
    for w in proj.opaque_classes():
        return (f"{w.what} at {w.where()} derives from a class the reader cannot name: it may derive from "
                f"`{cls.name.value}` and set or read attributes its own way")
    return None


def _own_class(a, c: CallInfo):
    """The module's one class named for c's method, `self` being the method's first parameter, never rebound;
    or why not."""
    fn = c.function
    method_of = _method_of(a, c.node) if fn is not None and fn.class_name is not None else None
    if method_of is None:
        return "the call is not in a plain method reading its own `self`"
    classes = [k for k in a.find(cst.ClassDef) if k.name.value == fn.class_name]
    if len(classes) != 1 or method_of is not classes[0]:
        return f"`{fn.class_name}` is not one class of the module"
    return classes[0]


def _method_of(a, node: cst.CSTNode) -> Optional[cst.ClassDef]:
    """The class whose undecorated method's own body (not a nested function's or lambda's) holds node, `self`
    its first parameter and never bound again."""
    fn = next((x for x in a.tree.ancestors(node) if isinstance(x, (cst.FunctionDef, cst.Lambda, cst.ClassDef))), None)
    if not isinstance(fn, cst.FunctionDef) or not all(_passes_self_on(a, d) for d in fn.decorators) or not fn.params.params \
            or fn.params.params[0].name.value != "self":
        return None
    first = fn.params.params[0]
    if any(getattr(x, "node", None) is not first or not isinstance(x.scope, FunctionScope)
           for x in a.tree.binding(node, "self").assignments):
        return None
    cls = a.tree.parent.get(a.tree.parent.get(fn))  # (the def sits in the class body's IndentedBlock)
    return cls if isinstance(cls, cst.ClassDef) else None


def _passes_self_on(a, d: cst.Decorator) -> bool:
    """`@torch.no_grad()`, `@torch.inference_mode()`: a context around the method, every argument handed on."""
    call = d.decorator
    return isinstance(call, cst.Call) and not call.args and a.expand(_shown(call.func)) in ARGUMENT_PASSING_DECORATORS


def _module_values(a, cls: cst.ClassDef, attr: str, class_level: bool) -> Tuple[List[cst.BaseExpression], Optional[str]]:
    """The values this module's writes give `attr` on an instance of cls (its methods' `self.attr = v`, its
    class body's `attr = v`), or why another write, or a hook of the class or a relative, may give it others."""
    family = _family(a, cls, attr)
    if isinstance(family, str):
        return [], family
    def plain_write(stmt: cst.CSTNode) -> bool:
        target = assigned_target(stmt)
        return isinstance(target, cst.Attribute) and target.attr.value == attr and _is_name(target.value, "self")

    plain = [n for n in a.find((cst.Assign, cst.AnnAssign), plain_write) if _method_of(a, n) is cls]
    other = a._other_attribute_writes(attr, [(n, None) for n in plain])
    if other is not None:
        return [], f"`{attr}` is also set at line {a.tree.line(other)} (`{_shown(other)[:60]}`)"
    values = [n.value for n in plain]
    for k in family:
        for stmt in _body_bindings(k, {attr}):
            if k is cls and class_level and isinstance(stmt, cst.Assign) and len(stmt.targets) == 1 \
                    and isinstance(stmt.targets[0].target, cst.Name):
                values.append(stmt.value)
                continue
            return [], f"`{k.name.value}` binds `{attr}` in its body (line {a.tree.line(stmt)})"
    return values, None


def _family(a, cls: cst.ClassDef, attr: str):
    """cls, its bases and the module's classes deriving from it, where every base is a class of the module,
    `object`, `abc.ABC` or a class of the project's other files that binds neither `attr` nor a hook
    (_foreign_base), and none has a metaclass, class keywords or a hook of _ATTRIBUTE_HOOKS; else why not."""
    by_name: Dict[str, List[cst.ClassDef]] = {}
    for k in a.find(cst.ClassDef):
        by_name.setdefault(k.name.value, []).append(k)
    family: List[cst.ClassDef] = []
    todo = [cls] + [k for n in a.subclasses(cls.name.value) - {cls.name.value} for k in by_name.get(n, [])]
    while todo:
        k = todo.pop()
        if any(k is f for f in family):
            continue
        family.append(k)
        if k.keywords or k.decorators:  # (`@dataclass`: its __init__ sets every annotated field, round N)
            return f"`{k.name.value}` has a decorator, a metaclass or class keywords"
        hooks = _body_bindings(k, _ATTRIBUTE_HOOKS)
        if hooks:
            return f"`{k.name.value}` defines how its attributes are set or read (line {a.tree.line(hooks[0])})"
        for b in k.bases:
            name = _shown(b.value)
            if b.keyword or b.star:
                return f"`{k.name.value}` has a base the reader cannot name (`{name}`)"
            if len(by_name.get(name, [])) == 1:
                todo.append(by_name[name][0])
                continue
            why = _foreign_base(a, name, attr)
            if why:
                return f"`{k.name.value}`'s base `{name}` {why}"
    return family


def _foreign_base(a, name: str, attr: str) -> Optional[str]:
    """Why a base that is no class of this module may set or read `attr` its own way: not `object`, `abc.ABC`
    or a class of another file of the project (reach: `_File.resolve_class`, `known_base`); that class, or one of
    its own bases, binding the name or a hook in its body, or having a metaclass. None where none does."""
    proj = a.project()
    own = proj.own()
    try:
        expr = ast.parse(name, mode="eval").body
    except SyntaxError:
        return "is not read"
    if own is None:
        return "is not read"
    if own.known_base(expr):
        return None
    path, cls_name = own.resolve_class(expr)
    g = proj._file_at(path) if path else None
    k = g.classes.get(cls_name) if g is not None else None
    return _foreign_class(proj, g, k, attr, 0) if k is not None else \
        "is not a class of this project, so what it sets is not read"


def _foreign_class(proj, g, k: ast.ClassDef, attr: str, depth: int) -> Optional[str]:
    """_foreign_base of a class another file of the project defines, its bases followed in that file."""
    if depth > 8 or k.keywords or k.decorator_list or any(_binds(stmt, {attr} | _ATTRIBUTE_HOOKS) for stmt in k.body):
        return f"({proj.rel(g.path)}:{k.lineno}) may set or read `{attr}` its own way"
    for b in k.bases:
        if g.known_base(b):
            continue
        path, cls_name = g.resolve_class(b)
        h = proj._file_at(path) if path else None
        base = h.classes.get(cls_name) if h is not None else None
        if base is None:
            return f"derives from `{ast.unparse(b)}` ({proj.rel(g.path)}:{k.lineno}), which is not read"
        why = _foreign_class(proj, h, base, attr, depth + 1)
        if why:
            return why
    return None


def _body_bindings(cls: cst.ClassDef, names: Set[str]) -> List[cst.CSTNode]:
    """The statements of cls's own body that may bind one of `names`: a def or class, an assignment or import
    of it, and any compound statement (`if`, `for`, `try`...) that spells it."""
    out: List[cst.CSTNode] = []
    for stmt in cls.body.body:
        if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            if stmt.name.value in names:
                out.append(stmt)
        elif isinstance(stmt, cst.SimpleStatementLine):
            out += [s for s in stmt.body if names & _bound(s)]
        elif any(isinstance(n, cst.Name) and n.value in names for n in _descendants(stmt)):
            out.append(stmt)
    return out


def _bound(small: cst.BaseSmallStatement) -> Set[str]:
    """The names a small statement of a class body binds."""
    if isinstance(small, cst.Assign):
        return {n.value for t in small.targets for n in _descendants(t.target) if isinstance(n, cst.Name)}
    if isinstance(small, cst.AnnAssign) and small.value is None:
        return set()  # (`sparse_fwd: Callable`: an annotation binds nothing)
    if isinstance(small, (cst.AnnAssign, cst.AugAssign)):
        return {n.value for n in _descendants(small.target) if isinstance(n, cst.Name)}
    if isinstance(small, (cst.Import, cst.ImportFrom)):
        return {"*"} if isinstance(small.names, cst.ImportStar) else {
            (x.asname.name.value if x.asname else _shown(x.name).split(".")[0]) for x in small.names}
    return {n.value for n in _descendants(small) if isinstance(n, cst.Name)} if isinstance(
        small, (cst.Global, cst.Nonlocal)) else set()


def _project_writes(a, cls: cst.ClassDef, attr: str) -> Optional[str]:
    """A subclass in another file binding the attribute or a hook in its body, a write of the attribute in
    another file on what may be an instance of cls (or of a subclass), or a reflective write that may reach one."""
    proj, seeds = a.project(), set(a.subclasses(cls.name.value))
    subclasses = proj.subclasses(seeds)
    family = seeds | {k.name for _, k in subclasses}
    for f, k in subclasses:
        other = [b for b in k.bases if ast.unparse(b).rsplit(".", 1)[-1] not in family]
        if k.keywords or k.decorator_list or other or any(_binds(stmt, {attr} | _ATTRIBUTE_HOOKS) for stmt in k.body):
            return (f"`{k.name}` ({proj.rel(f.path)}:{k.lineno}) derives from `{cls.name.value}`"
                    f"{' and from ' + ast.unparse(other[0]) if other else ''}, and may set or read `{attr}` its own way")
    for w in proj.attribute_writes({attr} | _OBJECT_WRITES, seeds, set()):
        return f"{w.what} at {w.where()}: it may give `self.{attr}` another value"
    for w in proj.reflection({attr, *seeds}, seeds, set(), attr, handed=class_escape.handed_off(proj, seeds)):
        return f"{w.what} at {w.where()} may give `self.{attr}` another value, which the analysis cannot follow"
    return None


def _binds(stmt: ast.stmt, names: Set[str]) -> bool:
    """May a statement of a class body (in another file) bind one of `names` (`locals()[name] = ...` may bind any)?"""
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return stmt.name in names
    if isinstance(stmt, ast.AnnAssign) and stmt.value is None or isinstance(stmt, ast.Pass):
        return False
    if any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in ("locals", "vars", "exec")
           for n in ast.walk(stmt)):
        return True
    if isinstance(stmt, ast.Expr):
        return False
    return any(isinstance(n, ast.Name) and n.id in names or isinstance(n, ast.alias) and
               (n.asname or n.name).split(".")[0] in names | {"*"} for n in ast.walk(stmt))


def sealed(a, attr: str) -> bool:
    """No other file of the project names `attr`: a holder of that name is read only in this module."""
    return not a.project().files_naming([attr])
