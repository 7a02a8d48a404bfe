"""Is a def of the engine's name the engine's own? The transforms, clips and pool methods the traces trust by name
(rows.INDEX_KEEPING_FUNCTIONS, field_meaning.CLIPS, ...) are the engine's only where their text, with what they read
of their module, is a release's: a fork's own tree of sglang that changes one (sorts the rows, clips at 1) is the
fork's code, whatever its path (round AB's b3). Releases' defs are keyed by `fingerprint` in ENGINE_DEFS, rebuilt by
`python3 bench/engine_spellings.py`."""
from __future__ import annotations

import ast
import hashlib
from typing import Dict, Iterator, List, Optional

from .engine_spellings import ENGINE_DEFS


def _unit(module: ast.Module, fdef: ast.AST) -> ast.AST:
    """What a def runs with: a method's whole top-level class (its siblings through self), a function itself."""
    for top in module.body:
        if isinstance(top, ast.ClassDef) and any(n is fdef for n in ast.walk(top)):
            return top
    return fdef


def _bound_at_top(module: ast.Module) -> Dict[str, List[ast.stmt]]:
    """The module's top-level statements (under its `if`s and `try`s too) by each name they bind."""
    out: Dict[str, List[ast.stmt]] = {}
    for top in module.body:
        for node in ast.walk(top) if isinstance(top, (ast.If, ast.Try)) else [top]:
            for name in _binds(node):
                out.setdefault(name, []).append(top)
    return out


def _binds(node: ast.AST) -> Iterator[str]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        yield node.name
    elif isinstance(node, (ast.Import, ast.ImportFrom)):
        for a in node.names:
            yield a.asname or a.name.split(".")[0]
    elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
            yield from (n.id for n in ast.walk(target) if isinstance(n, ast.Name))


def fingerprint(module: ast.Module, fdef: ast.AST) -> str:
    """The def's unit and every top-level statement of its module it reads, by name, transitively (a helper, a
    kernel, an import, a constant), dumped without positions and hashed."""
    top = _bound_at_top(module)
    unit = _unit(module, fdef)
    parts, seen_nodes, seen_names = [ast.dump(unit)], {id(unit)}, set()
    todo: List[ast.AST] = [unit]
    while todo:
        for name in sorted({n.id for n in ast.walk(todo.pop()) if isinstance(n, ast.Name)} - seen_names):
            seen_names.add(name)
            for stmt in top.get(name, []):
                if id(stmt) not in seen_nodes:
                    seen_nodes.add(id(stmt))
                    parts.append(ast.dump(stmt))
                    todo.append(stmt)
    return hashlib.sha256("\n".join(parts).encode("utf-8", "surrogateescape")).hexdigest()[:24]


def defs_named(module: ast.Module, name: str) -> List[ast.AST]:
    """The module's defs of that name, at any depth (a pool class's method too)."""
    return [n for n in ast.walk(module) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name]


def release_def(module: ast.Module, fdef: ast.AST) -> bool:
    """Is the def, as its module has it, one of the engine's releases'?"""
    return fingerprint(module, fdef) in ENGINE_DEFS


def own_copies(files, name: str, rel) -> Optional[str]:
    """Where a file of the project defines `name` other than as a release does (files: parsed project files with
    `.tree` and `.path`; rel: a path as the project names it): the first such def's place; None where every def of
    the name in the project is a release's."""
    for f in files:
        for fdef in defs_named(f.tree, name):
            if not release_def(f.tree, fdef):
                return f"`{name}` defined at {rel(f.path)}:{fdef.lineno}, which no release of the engine has"
        for node in _rebinding(f.tree, name):
            return f"`{name}` bound at {rel(f.path)}:{node.lineno} other than by a def (no release of the engine does)"
    return None


def _rebinding(module: ast.Module, name: str) -> Iterator[ast.AST]:
    """Statements binding `name` (or an attribute of that name) otherwise than by a def or an import: `f = wrap(f)`
    after the release's def, a class body's `m = other` alias, a literal setattr (round AC)."""
    for node in ast.walk(module):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, (ast.AnnAssign, ast.AugAssign, ast.NamedExpr)) else []
        for t in targets:
            for x in ast.walk(t):
                if isinstance(x, ast.Name) and x.id == name or isinstance(x, ast.Attribute) and x.attr == name:
                    yield node
        if isinstance(node, ast.Call) and isinstance(node.func, (ast.Name, ast.Attribute)) and any(
                isinstance(a, ast.Constant) and a.value == name for a in node.args) and ast.unparse(
                node.func).rsplit(".", 1)[-1] in ("setattr", "__setattr__"):
            yield node

