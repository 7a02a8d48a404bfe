"""Small syntax helpers the pass-topk-length analysis' modules share (a name, an attribute, the root of a
dotted read, a call's q and indices, a node's code, the module's top-level imports). It imports no other
module of the rule, so every module of it may import this one."""
from __future__ import annotations

import ast
import textwrap
from typing import Dict, Iterator, List, Optional, Tuple

import libcst as cst
from libcst.helpers import get_full_name_for_node

CONSTANT_NAMES = {"None", "True", "False"}


def _is_none(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "None"


def _root(expr: cst.BaseExpression) -> Optional[cst.Name]:
    while isinstance(expr, (cst.Attribute, cst.Subscript, cst.Call)):
        expr = expr.value if not isinstance(expr, cst.Call) else expr.func
    return expr if isinstance(expr, cst.Name) else None


def _q_arg(call: cst.Call) -> Optional[cst.BaseExpression]:
    for a in call.args:
        if a.keyword and a.keyword.value == "q":
            return a.value
    first = call.args[0] if call.args else None
    return first.value if first is not None and not first.keyword and not first.star else None


def _indices_arg(call: cst.Call) -> Optional[cst.BaseExpression]:
    for a in call.args:
        if a.keyword and a.keyword.value == "indices":
            return a.value
    positional = [a for a in call.args if not a.keyword]
    return positional[2].value if len(positional) > 2 and not any(a.star for a in positional[:3]) else None


def constructor_call(e: Optional[cst.CSTNode]) -> bool:
    """A call whose callee's last name is capitalised (`DSAMetadata(...)`, `mod.Meta(...)`): taken for a class's
    constructor, a new instance."""
    return isinstance(e, cst.Call) and (get_full_name_for_node(e.func) or "").rsplit(".", 1)[-1][:1].isupper()


def bound_targets(target: Optional[cst.BaseExpression]) -> list:
    """What a binding target binds: itself, or each part of a tuple or list (nested too)."""
    if isinstance(target, (cst.Tuple, cst.List)):
        return [t for el in target.elements for t in bound_targets(el.value)]
    return [target] if target is not None else []


def _is_name(node: cst.CSTNode, name: str) -> bool:
    return isinstance(node, cst.Name) and node.value == name


def _is_attr(node: cst.CSTNode, base: str, attr: str) -> bool:
    """`node` is `base.attr`."""
    return isinstance(node, cst.Attribute) and _is_name(node.value, base) and node.attr.value == attr


def _targets_attribute(node) -> bool:
    """An assignment (`x.y = ...`, `x.y: T = ...`, `x.y += ...`) whose target is an attribute."""
    return isinstance(node.target, cst.Attribute)


def import_binding(alias: cst.ImportAlias) -> Tuple[str, str]:
    """(the name `import <alias>` binds, what it binds it to): `import a.b` binds `a` to `a`, `import a.b as c`
    binds `c` to `a.b`."""
    full = get_full_name_for_node(alias.name) or ""
    if alias.asname is None:
        return full.split(".")[0], full.split(".")[0]
    return get_full_name_for_node(alias.asname.name) or "", full


def _top_level_imports(module: cst.Module) -> Dict[str, str]:
    """Names bound by imports that run unconditionally at import time: local -> qualified."""
    out: Dict[str, str] = {}
    for stmt in module.body:
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            if isinstance(small, cst.Import):
                out.update(import_binding(alias) for alias in small.names)
            elif isinstance(small, cst.ImportFrom) and not isinstance(small.names, cst.ImportStar) and not small.relative:
                base = get_full_name_for_node(small.module) if small.module else ""
                for alias in small.names:
                    local = alias.asname.name.value if alias.asname else alias.name.value
                    out[local] = f"{base}.{alias.name.value}"
    return out


def _code(node: cst.CSTNode) -> str:
    return cst.Module([]).code_for_node(node)


def _brief(node: cst.CSTNode, width: int) -> str:
    """node's code on one line (each run of whitespace one space), cut at width: a reason quotes it."""
    return " ".join(_code(node).split())[:width]


def _as_ast(node: cst.FunctionDef) -> Optional[ast.AST]:
    """A def of this module as CPython's ast (what reach.py reads), or None if it cannot be read."""

    try:
        return ast.parse(textwrap.dedent(_code(node))).body[0]
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def only_handed_on(d: Optional[ast.AST], param: str) -> bool:
    """Does the def read `param` only as `param=param` in a call (to super(), the kernel) handing every other argument
    on as the def was handed it: no other meaning of its own (round S: an override whose `topk_length` caps slots)?"""
    if d is None:
        return False
    reads = sum(isinstance(n, ast.Name) and n.id == param for n in ast.walk(d))
    handing = [n for n in ast.walk(d) if isinstance(n, ast.Call) and any(
        k.arg == param and isinstance(k.value, ast.Name) and k.value.id == param for k in n.keywords)]
    params = {a.arg for a in [*d.args.posonlyargs, *d.args.args, *d.args.kwonlyargs]} - {"self", "cls"}
    rebound = {n.id for n in ast.walk(d) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    # (round AK: the call handing it on hands every other argument as the def was handed it: sorted indices beside a
    # forwarded length, half the selection's width, are another meaning of it)
    as_given = all(isinstance(a, ast.Name) and a.id in params - rebound for c in handing for a in c.args) and all(
        isinstance(k.value, ast.Name) and k.value.id in params - rebound for c in handing for k in c.keywords)
    return reads == len(handing) and as_given


def assigned_target(stmt: cst.CSTNode) -> Optional[cst.BaseAssignTargetExpression]:
    """The one target a plain assignment gives a value (`x.y = v`, `x.y: T = v`), else None."""
    if isinstance(stmt, cst.Assign) and len(stmt.targets) == 1:
        return stmt.targets[0].target
    return stmt.target if isinstance(stmt, cst.AnnAssign) and stmt.value is not None else None


def _descendants(node: cst.CSTNode):
    """node and every node under it."""
    todo = [node]
    while todo:
        n = todo.pop()
        yield n
        todo.extend(n.children)


def name_reads(tree, name: str) -> Iterator[Tuple[cst.Name, Optional[cst.CSTNode]]]:
    """Each `name` the module reads, with its parent: not a binding's target, a def's, class's, parameter's or
    import's own name, nor an attribute's or keyword's name that only spells it."""
    for n in tree.find(cst.Name, lambda n: n.value == name):
        up = tree.parent.get(n)
        bound = isinstance(up, (cst.AssignTarget, cst.AnnAssign)) and up.target is n \
            or isinstance(up, (cst.Param, cst.FunctionDef, cst.ClassDef, cst.AsName)) and up.name is n
        spelled = isinstance(up, cst.Attribute) and up.attr is n or isinstance(up, cst.Arg) and up.keyword is n
        if not (bound or spelled):
            yield n, up


def _bound_arguments(call: cst.Call, params: List[str]) -> Dict[str, Optional[cst.BaseExpression]]:
    """Each parameter's argument in the call (by place, then by keyword); None where a `*`/`**` argument may hand it."""
    out: Dict[str, Optional[cst.BaseExpression]] = {}
    starred = any(a.star for a in call.args)
    for i, arg in enumerate(a for a in call.args if a.keyword is None and not a.star):
        if i < len(params):
            out[params[i]] = arg.value
    for arg in call.args:
        if arg.keyword is not None:
            out[arg.keyword.value] = arg.value
    return {p: (None if starred else v) for p, v in out.items()}


def _argument_for(call: cst.Call, param: str, position: Optional[int], shift: int) -> Optional[cst.BaseExpression]:
    for a in call.args:
        if a.keyword and a.keyword.value == param:
            return a.value
    positional = [a for a in call.args if not a.keyword and not a.star]
    if position is not None and 0 <= position - shift < len(positional):
        return positional[position - shift].value
    return None


def binds(n: ast.AST, name: str, scope: ast.AST, own: Optional[ast.AST] = None) -> Optional[str]:
    """How ast node n (inside scope, a def or module) binds `name` other than by a plain store (a `del`, an import, a
    def or class but `own` and scope itself, `global`/`nonlocal`, a handler's or `match` capture's name), or None.
    One list for every check that a name keeps what it was given (indexes.rebinds, callers._untouched)."""
    if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Del):
        return "a `del`"
    if isinstance(n, (ast.Global, ast.Nonlocal)) and name in n.names:
        return "a `global` or `nonlocal`"
    if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n.name == name \
            and n is not scope and n is not own:
        return "a def"
    if isinstance(n, ast.ExceptHandler) and n.name == name:
        return "an `except ... as`"
    if isinstance(n, (ast.Import, ast.ImportFrom)) and any((a.asname or a.name.split(".")[0]) == name for a in n.names):
        return "an import"
    if isinstance(n, (ast.MatchAs, ast.MatchStar)) and n.name == name or isinstance(n, ast.MatchMapping) \
            and n.rest == name:
        return "a `match` capture"
    return None


def _own_statement(tree, node: cst.CSTNode, fdef: cst.FunctionDef) -> bool:
    """Is node fdef's own, not a nested def's or lambda's (whose `return` ends only that one)?"""
    return next((a for a in tree.ancestors(node) if isinstance(a, (cst.FunctionDef, cst.Lambda))), None) is fdef


def _class_bindings(cls: cst.ClassDef):
    """(name, value or None) for each name the class body binds, in `if`/`try`/`with`/loops of it too, not inside
    its functions: a def (value None), an assignment's targets (each part of a tuple), an annotated one with a value,
    an import."""
    todo = list(cls.body.body)
    while todo:
        stmt = todo.pop()
        if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            yield stmt.name.value, None
        elif isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if isinstance(small, cst.Assign):
                    for t in small.targets:
                        yield from ((x.value, small.value) for x in bound_targets(t.target) if isinstance(x, cst.Name))
                elif isinstance(small, cst.AnnAssign) and small.value is not None and isinstance(small.target, cst.Name):
                    yield small.target.value, small.value
                elif isinstance(small, (cst.Import, cst.ImportFrom)) and not isinstance(small.names, cst.ImportStar):
                    yield from (((get_full_name_for_node(a.asname.name if a.asname else a.name) or "").split(".")[0], None)
                                for a in small.names)
        else:  # if / try / with / for / while: their blocks are the class body's too
            todo += _blocks(stmt)


def _blocks(stmt: cst.CSTNode) -> list:
    """The statements of a compound statement's blocks (an `if`'s `elif`/`else`, a `try`'s handlers too)."""
    out: list = []
    parts = [getattr(stmt, "body", None), getattr(stmt, "orelse", None), getattr(stmt, "finalbody", None),
             *(h.body for h in getattr(stmt, "handlers", ()))]
    for part in parts:
        if isinstance(part, cst.If):
            out.append(part)
        elif isinstance(part, (cst.Else, cst.Finally)):
            out += list(part.body.body) if isinstance(part.body, cst.IndentedBlock) else []
        elif isinstance(part, cst.IndentedBlock):
            out += list(part.body)
    return out
