"""docs/soundness.md `whole-project`, round AW: a class of the helper's family handed off as a value reaches
code that no file naming it shows. A registry (`BACKENDS["dsa"] = Backend`), a project decorator, a module's
list, `Base.__subclasses__()` of a base it derives from or `gc.get_objects()` hand it to a file that may rebind
its methods by a computed `setattr`; where one does, every file of the project is read for reflective writes
(reach.Project.reflection's `everywhere`)."""
from __future__ import annotations

import ast
from typing import Iterator, List, Optional, Set, Tuple

from . import reach

# Calls that only read what they are handed (a class object stays where it is).
_READS = {"isinstance", "issubclass", "super", "type", "id", "repr", "str", "hash", "callable", "print", "getattr",
          "hasattr", "vars", "dir", "len", "bool", "format"}
_SEQUENCES = {"tuple", "list", "set", "frozenset"}  # a copy of a local display of classes: followed as it
_GROWS = {"append", "add", "insert", "extend"}  # a local display grown with the class: followed as it
_HEAPS = {"get_objects", "get_referrers", "get_referents"}  # gc's views of every object


def handed_off(proj: "reach.Project", seeds: Set[str]) -> Optional[reach.Finding]:
    """Where a class of `seeds`' family (the module's classes and those deriving from them) is handed to code
    as a value, or may be reached without its name, first; None where every use reads, calls or subclasses it."""
    cache = proj.__dict__.setdefault("_handed_off", {})
    key = frozenset(seeds)
    if key not in cache:
        cache[key] = next(_hand_offs(proj, seeds), None)
    return cache[key]


def _hand_offs(proj: "reach.Project", seeds: Set[str]) -> Iterator[reach.Finding]:
    family = set(seeds) | {c.name for _, c in proj.subclasses(set(seeds))}
    own = proj.own()
    files = {id(g): g for g in proj.files_naming(sorted(family)) + ([own] if own is not None else [])}
    for g in files.values():
        by_name = _named_nodes(g)
        for node in (n for name in sorted(family) for n in by_name.get(name, ())):
            if isinstance(node, ast.ClassDef) and any(proj._project_defined(g, d) for d in node.decorator_list):
                yield reach.Finding(proj.rel(g.path), node.lineno, f"`{node.name}` handed to its decorator")
            elif _names_class(node, family) and hands_off(g, node):
                yield reach.Finding(proj.rel(g.path), node.lineno, f"`{reach._unparse(g.parents[id(node)])}`")
    ancestors = {(g.path, c.name) for g, c in proj.ancestors(set(seeds))}
    for g in proj.files_naming(["__subclasses__"]):
        for node in ast.walk(g.tree):
            if _walks_subclasses(proj, g, node, ancestors, family):
                yield reach.Finding(proj.rel(g.path), getattr(node, "lineno", 0), f"`{reach._unparse(node)}`")
    for g in proj.files_naming(sorted(_HEAPS)):
        for node in ast.walk(g.tree):
            if isinstance(node, ast.Call) and reach._unparse(node.func).rsplit(".", 1)[-1] in _HEAPS \
                    and not reach._builtin_call(g.parents.get(id(node)), ("len",)):
                yield reach.Finding(proj.rel(g.path), node.lineno, f"`{reach._unparse(node.func)}()`")


def _named_nodes(g: "reach._File") -> dict:
    """Each name -> the file's class statements of that name and its reads by that name (`X`, `m.X`): one walk per
    file, so that each class asks only for its own (test_scale: a module of many classes)."""
    cached = g.__dict__.get("_named_nodes")
    if cached is None:
        cached = {}
        for n in ast.walk(g.tree):
            key = n.name if isinstance(n, ast.ClassDef) else n.id if isinstance(n, ast.Name) else \
                n.attr if isinstance(n, ast.Attribute) else None
            if key is not None:
                cached.setdefault(key, []).append(n)
        g.__dict__["_named_nodes"] = cached
    return cached


def _names_class(node: ast.AST, family: Set[str]) -> bool:
    """Is node a read of a class of `family` by its name (`Backend`, `backends.Backend`)?"""
    if isinstance(node, ast.Name):
        return node.id in family and isinstance(node.ctx, ast.Load)
    return isinstance(node, ast.Attribute) and node.attr in family and isinstance(node.ctx, ast.Load)


def hands_off(g: "reach._File", node: ast.AST) -> bool:
    """Does the value at `node` (a class object) leave what the file's reading of it shows: stored, returned,
    handed to a call that is not a read, bound to another name (a local list only grown and tested against keeps
    it: `kinds.append(Backend); isinstance(b, tuple(kinds))`)?"""
    return _hands_off(g, node, 0)


def kept_locally(g: "reach._File", node: ast.AST) -> bool:
    """Is the class at `node` only added to a function's local list that is grown and tested against
    (`kinds.append(Backend)`; sglang 0.5.16's draft worker)?"""
    up = g.parents.get(id(node))
    func = up.func if isinstance(up, ast.Call) else None
    return isinstance(func, ast.Attribute) and func.attr in _GROWS and node is not func.value \
        and _local_kept(g, func.value, 0)


def _hands_off(g: "reach._File", node: ast.AST, depth: int) -> bool:
    up = g.parents.get(id(node))
    if depth > 6 or up is None:
        return True
    if _annotation(g, node) or isinstance(up, (ast.Attribute, ast.Compare, ast.Expr, ast.ExceptHandler, ast.If,
                                                ast.While, ast.Assert)):
        return False
    if isinstance(up, ast.Subscript):  # `Type[Backend]`, a lookup by the class: read; a store under it is kept
        return up.value is not node and not isinstance(up.ctx, ast.Load)
    if isinstance(up, ast.ClassDef):
        return node in up.decorator_list
    if isinstance(up, ast.keyword):
        return _hands_to_call(g, g.parents.get(id(up)), node, depth)
    if isinstance(up, ast.Call):
        return _hands_to_call(g, up, node, depth)
    if isinstance(up, (ast.Tuple, ast.List, ast.Set, ast.Starred, ast.IfExp, ast.BoolOp)):
        return _hands_off(g, up, depth + 1) if not (isinstance(up, ast.IfExp) and up.test is node) else False
    if isinstance(up, ast.Assign) and up.value is node:
        return not all(_same_name(t, node) or _local_kept(g, t, depth) for t in up.targets)
    return True


def _hands_to_call(g: "reach._File", call: Optional[ast.AST], node: ast.AST, depth: int) -> bool:
    if not isinstance(call, ast.Call):
        return True
    if call.func is node:
        return False  # constructed
    callee = reach._unparse(call.func)
    if callee in _READS:
        return False
    if callee in _SEQUENCES:
        return _hands_off(g, call, depth + 1)
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr in _GROWS and node is not func.value:
        return not _local_kept(g, func.value, depth)
    return True


def _same_name(target: ast.AST, node: ast.AST) -> bool:
    """`Backend = Backend` (a module's re-binding of its own name, sglang 0.5.16's dsa_backend)."""
    return isinstance(target, ast.Name) and isinstance(node, ast.Name) and target.id == node.id


def _local_kept(g: "reach._File", target: ast.AST, depth: int) -> bool:
    """Is `target` a function's local (not global or nonlocal) whose every read only grows it, copies it or hands
    it to a read (`kinds = [A]; kinds.append(Backend); isinstance(x, tuple(kinds))`)?"""
    if not isinstance(target, ast.Name):
        return False
    fn = g.enclosing(target, (ast.FunctionDef, ast.AsyncFunctionDef))
    if fn is None or any(isinstance(n, (ast.Global, ast.Nonlocal)) and target.id in n.names for n in ast.walk(fn)):
        return False
    for use in _uses(fn, target.id):
        up = g.parents.get(id(use))
        if isinstance(use.ctx, ast.Store):
            if not (isinstance(up, ast.Assign) and isinstance(up.value, (ast.List, ast.Tuple, ast.Set))):
                return False
        elif isinstance(use.ctx, ast.Del) or not (
                isinstance(up, ast.Attribute) and up.attr in _GROWS and isinstance(g.parents.get(id(up)), ast.Call)
                or not _hands_off(g, use, depth + 1)):
            return False
    return True


def _uses(fn: ast.AST, name: str) -> List[ast.Name]:
    return [n for n in ast.walk(fn) if isinstance(n, ast.Name) and n.id == name]


def _annotation(g: "reach._File", node: ast.AST) -> bool:
    """Is node inside an annotation (a parameter's, a variable's, a return's), nested only in subscripts, tuples,
    unions and dotted names? (A call there may run where the def or the module runs: unlike callers._annotation,
    which reads a function's locals, whose annotations are never evaluated.)"""
    child, up = node, g.parents.get(id(node))
    for _ in range(8):
        if up is None:
            return False
        if isinstance(up, (ast.arg, ast.AnnAssign)) and up.annotation is child or isinstance(
                up, (ast.FunctionDef, ast.AsyncFunctionDef)) and up.returns is child:
            return True
        if not isinstance(up, (ast.Subscript, ast.Tuple, ast.BinOp, ast.Attribute, ast.List)):
            return False
        child, up = up, g.parents.get(id(up))
    return False


def _walks_subclasses(proj: "reach.Project", g: "reach._File", node: ast.AST, ancestors: Set[Tuple[str, str]],
                      family: Set[str]) -> bool:
    """Does `node` enumerate the subclasses of what may be a class of the family or one it derives from
    (`Base.__subclasses__()`; a spelling not read off a named class of the project, `type.__subclasses__(x)`,
    `getattr(c, "__subclasses__")`, reaches any)?"""
    if isinstance(node, ast.Attribute) and node.attr == "__subclasses__":
        named = proj._class_named(g, node.value)
        return named is None or named[0] is None or named in ancestors or named[1] in family
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and "__subclasses__" in node.value
