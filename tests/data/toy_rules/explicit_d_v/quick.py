"""explicit-d-v's verdicts that need no LibCST: a kernel call that passes d_v (by keyword, or fifth
in its place) is compliant; anything else is declined, for the rule's own hook to read."""
from __future__ import annotations

import ast
from typing import Optional

from topk_migrate.model import Site, Status

from . import INFO

POSITION = 4  # q, kv, indices, sm_scale, d_v


def quick_sites(tree: ast.Module, source: str, path: str, gate) -> Optional[list]:
    imports = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            imports.update({a.asname or a.name: f"{node.module}.{a.name}" for a in node.names})
        elif isinstance(node, ast.Import):
            imports.update({a.asname or a.name.split(".")[0]: a.asname and a.name or a.name.split(".")[0]
                            for a in node.names})
    sites = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in INFO.entry_points and not _called(tree, node):
            return None  # the kernel used as a value: the rule reads the file
        if not isinstance(node, ast.Call):
            continue
        dotted = _dotted(node.func)
        if dotted is None or dotted.rsplit(".", 1)[-1] not in INFO.entry_points:
            continue
        root, _, rest = dotted.partition(".")
        callee = imports.get(root, root) + ("." + rest if rest else "")
        if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
            return None
        if any(k.arg == INFO.param for k in node.keywords) or len(node.args) > POSITION:
            sites.append(Site(path, node.lineno, node.col_offset + 1, callee, Status.COMPLIANT, "passes d_v"))
        else:
            return None  # a call to rewrite: the rule's hook
    return sites


def _dotted(node: ast.AST) -> Optional[str]:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = _dotted(node.value)
        return f"{head}.{node.attr}" if head else None
    return None


def _called(tree: ast.Module, name: ast.Name) -> bool:
    return any(isinstance(n, ast.Call) and (n.func is name or isinstance(n.func, ast.Attribute) and n.func.value is name)
               for n in ast.walk(tree))
