"""The pass-topk-length rule's kernel names, and its verdicts that need no LibCST (standard library only).

A kernel call that passes topk_length, by keyword or in its place, is compliant (opt-out for None)
whatever surrounds it, and the rule reads nothing else of a file whose every kernel call does so and
that uses the kernel in no other way. quick_sites() gives those sites from CPython's AST of the
narrowed file (narrow.py), so that audit classifies them in processes that never import LibCST.
Anything else it declines (None), and the rule itself reads the file: a call without topk_length,
the kernel used as a value or reached through an expression, syntax LibCST may read otherwise than
CPython (from 3.12 on, an f-string the grammar before PEP 701 would not take). tests/test_quick.py
holds it to the rule's own sites.
"""
from __future__ import annotations

import ast
import re
import sys
from typing import Callable, Dict, List, Optional

from topk_migrate.model import Capability, Site, Status

from . import INFO

# Python entry points of the kernel, with the position of topk_length in their
# signature (sgl_kernel / flash_mla: q, kv, indices, sm_scale, d_v, attn_sink, topk_length).
ENTRY_POINTS: Dict[str, Optional[int]] = {"flash_mla_sparse_fwd": 6, "flash_mla_sparse_prefill": None}
OP_NAME = "sparse_prefill_fwd"  # torch.ops.<ns>.sparse_prefill_fwd[.default], or an extension module's
OP_TOPK_LENGTH_POSITION = 6
PARAM = INFO.param
MIN_KERNEL = INFO.min_kernel



def is_op_level(callee: str) -> bool:
    parts = callee.split(".")
    return len(parts) > 1 and (parts[-1] == OP_NAME or parts[-2:] == [OP_NAME, "default"])


def is_kernel(callee: str) -> bool:
    return callee.rsplit(".", 1)[-1] in ENTRY_POINTS or is_op_level(callee)


_PATH = re.compile(r"[A-Za-z_][\w.:]*")


def names_kernel(text: str) -> bool:
    """Is a string the kernel's name, or a dotted (or `module:attr`) path ending in it (a lookup by name may fetch
    the kernel with it: `pkgutil.resolve_name`, `pydoc.locate`, `vars(m).get`: round AN)?"""
    return bool(_PATH.fullmatch(text)) and is_kernel(text.replace(":", "."))


def expand(imports: Dict[str, str], name: str) -> str:
    """A dotted name with its first part expanded through a module's imports (as callees are)."""
    root, _, rest = name.partition(".")
    return imports.get(root, root) + ("." + rest if rest else "")


# Syntax this reader leaves to the rule: newer than some LibCST releases read (type parameters and
# aliases, except*), match (LibCST's patterns are its own).
_DECLINED = tuple(getattr(ast, n) for n in ("TypeAlias", "TryStar", "Match") if hasattr(ast, n))
_PEP_701 = sys.version_info >= (3, 12)  # f-strings CPython reads more of than the grammar before it
# Where a name is bound or declared outside Name nodes (kernel names there: the rule reads the file).
_NAME_FIELDS = {ast.keyword: ("arg",), ast.Global: ("names",), ast.Nonlocal: ("names",), ast.ExceptHandler: ("name",)}


def quick_sites(tree: ast.Module, source: str, path: str, gate: Callable[[str], Capability]) -> Optional[List[Site]]:
    """The rule's sites of `source` (whose AST is `tree`; gate: callee -> Capability, as the rule's), or None."""
    parent: Dict[ast.AST, ast.AST] = {}
    nodes: List[ast.AST] = []
    todo: List[ast.AST] = [tree]
    while todo:  # every node, parents first, in source order
        node = todo.pop()
        nodes.append(node)
        kids = list(ast.iter_child_nodes(node))
        for k in kids:
            parent[k] = node
        todo.extend(reversed(kids))
    imports = _imports(nodes)
    names = set(ENTRY_POINTS) | {OP_NAME} | {local for local, q in imports.items() if is_kernel(q)}
    lines = source.split("\n")
    sites = []
    for node in nodes:
        if isinstance(node, _DECLINED) or getattr(node, "type_params", None):
            return None
        if _PEP_701 and isinstance(node, ast.JoinedStr) and not isinstance(parent.get(node), ast.FormattedValue) \
                and not _old_style_fstring(node, lines):
            return None
        if isinstance(node, ast.Name) and node.id in names or isinstance(node, ast.Attribute) and node.attr in names:
            if not _callee_or_target(node, parent):
                return None  # a value use
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and (node.value in names or names_kernel(
                node.value)):
            return None  # getattr(m, "flash_mla_sparse_fwd"), resolve_name("m:flash_mla_sparse_fwd") and the like
        elif type(node) in _NAME_FIELDS:
            for f in _NAME_FIELDS[type(node)]:
                value = getattr(node, f)
                if not names.isdisjoint(value if isinstance(value, list) else [value]):
                    return None
        if not isinstance(node, ast.Call):
            continue
        name = _dotted(node.func)
        if name is None:
            if isinstance(node.func, ast.Attribute) and (node.func.attr in ENTRY_POINTS or node.func.attr == OP_NAME):
                return None  # reached through an expression: the rule reports it
            continue
        root, _, rest = name.partition(".")
        callee = imports.get(root, root) + ("." + rest if rest else "")
        if not is_kernel(callee):
            continue
        passed = _passed(node, callee, gate)
        if passed is None:
            return None
        value, positionally = passed
        line = lines[node.lineno - 1]
        column = node.col_offset if line.isascii() else len(line.encode()[: node.col_offset].decode())
        if isinstance(value, ast.Constant) and value.value is None:
            why = "passes topk_length=None " + ("positionally" if positionally else "explicitly")
            sites.append(Site(path, node.lineno, column + 1, callee, Status.OPT_OUT, why))
        else:
            why = "passes topk_length" + (" positionally" if positionally else "")
            sites.append(Site(path, node.lineno, column + 1, callee, Status.COMPLIANT, why, _dotted(value)))
    return sites


def _passed(call: ast.Call, callee: str, gate: Callable[[str], Capability]):
    """(the value passed as topk_length, whether positionally), or None if it is not passed."""
    for k in call.keywords:
        if k.arg == PARAM:
            return k.value, False
    cap = gate(callee)  # as the rule asks it: for every kernel call without the keyword
    pos = OP_TOPK_LENGTH_POSITION if is_op_level(callee) else ENTRY_POINTS.get(callee.rsplit(".", 1)[-1])
    if cap.position is not None:
        pos = cap.position
    positional = [a for a in call.args if not isinstance(a, ast.Starred)]
    if pos is None or len(positional) <= pos:
        return None
    if any(isinstance(a, ast.Starred) for a in call.args[: call.args.index(positional[pos])]):
        return None
    return positional[pos], True


def _old_style_fstring(node: ast.JoinedStr, lines: List[str]) -> bool:
    """Whether an f-string is also one in the grammar before 3.12 (which LibCST reads as CPython does): on
    one line, no backslash or `#` in it, and its quote character only around it (PEP 701 lets a
    replacement field reuse the quote, hold a backslash or a comment, and span lines)."""
    if node.lineno != node.end_lineno:
        return False
    text = lines[node.lineno - 1].encode()[node.col_offset : node.end_col_offset].decode(errors="replace")
    body = text.lstrip("fFrRbBuU")
    quote = body[:1]
    if quote not in ("'", '"') or body.startswith(quote * 3) or "\\" in text or "#" in text:
        return False
    return body.count(quote) == 2


def _dotted(node: ast.AST) -> Optional[str]:
    """`a.b.c` for a Name/Attribute chain, as LibCST spells it (None, True and False are names there)."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Constant) and (node.value is None or type(node.value) is bool):
        return repr(node.value)
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


def _imports(nodes: List[ast.AST]) -> Dict[str, str]:
    """Local name -> qualified name, from the imports of every scope, the first binding winning
    (but a plain import's `as` alias: the last), as resolve.collect reads them."""
    out: Dict[str, str] = {}
    for node in nodes:
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.asname:
                    out[a.asname] = a.name
                else:
                    out.setdefault(a.name.split(".")[0], a.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and not any(a.name == "*" for a in node.names):
            base = "." * node.level + (node.module or "")
            for a in node.names:
                out.setdefault(a.asname or a.name, f"{base}.{a.name}" if base and not base.endswith(".") else base + a.name)
    return out


def _callee_or_target(node: ast.AST, parent: Dict[ast.AST, ast.AST]) -> bool:
    """Whether the Name/Attribute chain holding `node` is a call's callee or an assignment's whole
    target: where the rule takes a kernel name for no value use (a def's, class's or parameter's
    name is no Name node here)."""
    top, up = node, parent.get(node)
    while isinstance(up, ast.Attribute) and up.value is top:
        top, up = up, parent.get(up)
    if isinstance(up, ast.Call):
        return up.func is top
    if isinstance(up, ast.Assign):
        return any(t is top for t in up.targets)
    return isinstance(up, (ast.AnnAssign, ast.AugAssign)) and up.target is top
