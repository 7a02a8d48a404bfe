"""Shrink a candidate file to what the engine reads before LibCST parses it.

LibCST spends ~0.3 ms per line; the few files that hold a kernel call are often
the biggest of a tree (5,000-line attention backends), so `audit` would spend
nearly all its time there. The engine only looks at: the kernel calls, the
function that holds each one and the functions that call that one (for their
bindings), import statements anywhere (first binding wins, so their order),
module- and class-level statements, the names every def binds, and the words of
the whole text (the default metadata fields are searched for in it).

narrow() keeps all of that and stubs every other module- or class-level def:
its header becomes `def name():` (the original first line kept as a comment),
its imports stay on their lines, and all its other lines become one raw string
that keeps their words. Line numbers and the columns of kept code do not move,
so sites come out identical; tests/test_audit_narrow.py checks that on every
fixture and on the real tree. Set TOPK_MIGRATE_NO_NARROW=1 to parse files whole.
Only the standard library's C parser (ast) runs here.
"""
from __future__ import annotations

import ast
import os
import re
from typing import List, Optional, Set, Union

from .discover import NEEDLES

_NAMES = tuple(n.decode() for n in NEEDLES)
# An entry point imported under another name; comments and continuations may sit before `as`.
_ALIAS = re.compile(r"(?:%s)(?:\s|\\|#[^\n]*)*as\b" % "|".join(_NAMES))
_Def = Union[ast.FunctionDef, ast.AsyncFunctionDef]


def enabled() -> bool:
    return not os.environ.get("TOPK_MIGRATE_NO_NARROW")


def _chain(expr: ast.AST) -> List[str]:
    """The names in a callee like `torch.ops.ns.sparse_prefill_fwd.default` or `f`."""
    out = []
    while isinstance(expr, ast.Attribute):
        out.append(expr.attr)
        expr = expr.value
    if isinstance(expr, ast.Name):
        out.append(expr.id)
    return out


def _top_defs(body: List[ast.stmt], out: List[_Def]) -> List[_Def]:
    """Defs directly in the module or in a (nested) class body: the ones that can be stubbed."""
    for st in body:
        if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out.append(st)
        elif isinstance(st, ast.ClassDef):
            _top_defs(st.body, out)
    return out


def narrow(text: str) -> Optional[str]:
    """The narrowed source, or None when it cannot be done safely (then parse the whole file)."""
    if "\r" in text or "\f" in text or "\v" in text or "\x1c" in text:
        return None  # line splitting below must agree with the parsers': only \n here
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None  # let the engine report it (or parse syntax newer than ours)
    lines = text.split("\n")

    # Names a kernel call can be spelled with: the entry points, and local names
    # an import binds them to (`... import flash_mla_sparse_fwd as fwd`).
    names = set(_NAMES)
    if _ALIAS.search(text):
        for x in ast.walk(tree):
            if isinstance(x, (ast.Import, ast.ImportFrom)):
                names.update(a.asname for a in x.names if a.asname and any(n in a.name for n in _NAMES))
    spelled = _words(names)

    defs = [(d, "\n".join(lines[_first(d) - 1 : d.end_lineno])) for d in _top_defs(tree.body, [])]
    holders = [d for d, src in defs if spelled.search(src)]
    # Functions with a kernel call that does not pass topk_length= itself: the
    # engine may read their callers (to thread the metadata through them).
    open_calls: Set[str] = set()
    for h in holders:
        _open_calls(h, h.name, names, open_calls)
    calls_open = _words(open_calls) if open_calls else None
    out = list(lines)
    held = set(map(id, holders))
    for d, src in defs:
        if id(d) in held or (calls_open is not None and calls_open.search(src)):
            continue  # holds a call, or may call a function that does: the engine reads it
        _stub(d, lines, out, "import" in src)
    return "\n".join(out)


def _words(names: Set[str]) -> "re.Pattern[str]":
    return re.compile(r"\b(?:%s)\b" % "|".join(map(re.escape, sorted(names))))


def _first(d: _Def) -> int:
    return min([x.lineno for x in d.decorator_list] + [d.lineno])


def _open_calls(node: ast.AST, fn: str, names: Set[str], out: Set[str]) -> None:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
            _open_calls(child, child.name, names, out)
            continue
        if isinstance(child, ast.Call) and not names.isdisjoint(_chain(child.func)):
            if not any(k.arg == "topk_length" for k in child.keywords):
                out.add(fn)
        _open_calls(child, fn, names, out)


def _stub(d: _Def, lines: List[str], out: List[str], has_import: bool) -> None:
    first = _first(d)
    body = d.body[0]
    if body.lineno <= first or lines[body.lineno - 1][: body.col_offset].strip():
        return  # one-line def, or body shares a line with its header: leave it
    imports = {}
    for x in ast.walk(d) if has_import else ():
        if isinstance(x, (ast.Import, ast.ImportFrom)):
            if x.lineno == first or lines[x.lineno - 1][: x.col_offset].strip():
                return  # shares its line with other code: keep the def whole
            imports[x.lineno] = x
    indent = lines[body.lineno - 1][: body.col_offset]
    head = lines[d.lineno - 1][: d.col_offset]
    kw = "async def " if isinstance(d, ast.AsyncFunctionDef) else "def "
    out[first - 1] = f"{head}{kw}{d.name}():  #{lines[first - 1]}"
    seg: List[int] = []

    def flush() -> None:
        if seg:
            for k in seg:  # a raw string cannot hold these; the words stay
                out[k - 1] = lines[k - 1].replace('"', "'").replace("\\", "/")
            out[seg[0] - 1] = f'{indent}r"""{out[seg[0] - 1]}'
            out[seg[-1] - 1] += '"""'
            seg.clear()

    ln = first + 1
    while ln <= d.end_lineno:
        imp = imports.get(ln)
        if imp is None:
            seg.append(ln)
            ln += 1
            continue
        flush()
        out[ln - 1] = indent + lines[ln - 1].lstrip()
        ln = imp.end_lineno + 1  # continuation lines of a multi-line import stay as they are
    flush()
