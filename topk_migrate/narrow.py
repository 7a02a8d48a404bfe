"""Shrink a candidate file to what the engine reads, before LibCST parses it.

LibCST costs ~0.1-0.3 ms per line, and the few files of a tree that hold a
kernel call are often its biggest (5,000-line attention backends): parsed
whole, they are nearly all of `audit`'s time. What the engine reads of a file:

* every call, to find the kernel calls; it resolves a callee by expanding its
  first name through the file's imports (all scopes; the first binding wins);
* for a call that passes the rules' parameters (RuleInfo.param) itself, nothing more: it is compliant
  (or opt-out, for None), whatever surrounds it;
* for any other call, the function holding it, the functions that call that
  one and the same-named methods (overrides), with their bindings; module- and
  class-level statements; the name each def binds; the words of the whole text
  (the default metadata fields are looked up in it).

narrow() uses the standard library's C parser (ast) to keep just that:

* None (parse it whole) when a kernel name is used other than as a callee (passed
  to functools.partial, stored, looked up with getattr): the engine reports those
  (a name rebound, `flash_mla_sparse_fwd = fallback`, is no such use);
* NOTHING when no call is spelled like a kernel call (the engine is skipped);
* when every kernel call passes them: the statements holding the
  calls and the imports that bind their callees' first names, each where it was;
* otherwise every module- or class-level def that neither holds a kernel call
  nor names an open holder becomes a stub: `def name():` (its first line kept as
  a comment), its imports on their lines, the rest of its lines raw strings.

Lines that go keep their words, inside raw strings; kept lines and columns do
not move, so the sites come out identical. tests/test_audit_narrow.py checks that
on every fixture, on edge cases, on the real tree, and in the engine's own tests.
TOPK_MIGRATE_NO_NARROW=1 parses files whole.
"""
from __future__ import annotations

import ast
import os
import re
from bisect import bisect_left
from typing import List, Optional, Set, Tuple, Union

from . import rules

_Def = Union[ast.FunctionDef, ast.AsyncFunctionDef]
_Import = Union[ast.Import, ast.ImportFrom]
_HOLDERS = (ast.excepthandler, getattr(ast, "match_case", ast.excepthandler))  # hold a body of statements
Found = Tuple[str, ast.stmt, ast.Call]  # (innermost function name, innermost statement, call)

NOTHING = ""  # narrow()'s answer for a file without any call spelled like a kernel call


def enabled() -> bool:
    return not os.environ.get("TOPK_MIGRATE_NO_NARROW")


def narrow(text: str, tree: Union[ast.Module, None, str] = "parse", entry_points: Tuple[str, ...] = (),
           calls_only: bool = False, params: Optional[Tuple[Optional[str], ...]] = None) -> Optional[str]:
    """The narrowed source, NOTHING, or None when it cannot be done safely (parse it whole).

    tree: ast.parse(text) when the caller has it already (None: CPython could not parse it).
    entry_points: the names the enabled rules read (default: those of the rules on by default).
    params: the parameters of those rules (RuleInfo.param; None for a rule without one); a call that
    passes each of them by keyword needs nothing around it.
    calls_only: the reader needs each call and the resolution of its callee, nothing around it
    (bump binds arguments to signatures): the call statements and their imports, whatever they pass."""
    if not entry_points:
        entry_points = tuple(e for r in rules.enabled() if r.has_sites for e in r.entry_points)
    if params is None:
        params = tuple(r.param for r in rules.enabled() if r.has_sites)
    if "\r" in text or "\f" in text or "\v" in text or "\x1c" in text or "\x1d" in text or "\x1e" in text:
        return None  # line splitting below must agree with the parsers': only \n here
    if tree == "parse":
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            tree = None
    if tree is None:
        return None  # let the engine report it (or parse syntax newer than ours)
    lines = text.split("\n")
    import_lines = _lines_of(text, ("import",))
    names = set(entry_points) | _aliases(tree.body, entry_points, import_lines)
    scan = _Scan(text, lines, names, import_lines)
    scan.block(tree.body, "")
    calls, imports = scan.calls, scan.imports
    if scan.value_use and not calls_only:  # the engine reports such uses; bump reads calls alone
        return None
    if not calls:
        return NOTHING
    if calls_only or all(_passes(c, params) for _, _, c in calls):
        minimal = _minimal(lines, calls, imports)
        if minimal is not None:
            return minimal
    return _stub_defs(tree, text, lines, scan, calls, params)


def _aliases(body: List[ast.stmt], entry_points: Tuple[str, ...], import_lines: List[int]) -> Set[str]:
    """The other names an entry point is imported under (`from m import flash_mla_sparse_fwd as fwd`,
    `import m.flash_mla_sparse_fwd as fwd`), read from the import statements the tree holds, at any depth.

    Once some import gives another name to a name ending in an entry point, the local name of every
    import of a name holding one is a kernel name (what a search of the text for an entry point, then
    blanks, continuations or comments, then `as` decided before; that regex backtracked exponentially
    over a run of `#` after a kernel name). Work: each statement whose lines hold the word `import` is
    looked at once (an explicit stack, no recursion), each alias once per entry point."""
    imports: List[_Import] = []
    stack = [body]
    while stack:
        for st in stack.pop():
            if not _within(import_lines, st.lineno, st.end_lineno):
                continue  # no import statement inside (decorators hold none)
            if isinstance(st, (ast.Import, ast.ImportFrom)):
                imports.append(st)
                continue
            for _, value in ast.iter_fields(st):
                if isinstance(value, list):  # a body, orelse, finalbody; handlers and cases hold bodies
                    stack.append([v for v in value if isinstance(v, ast.stmt)])
                    stack.extend(v.body for v in value if isinstance(v, _HOLDERS))
    renamed = [a for imp in imports for a in imp.names if a.asname]
    if not any(a.name.endswith(n) for a in renamed for n in entry_points):
        return set()
    return {a.asname for a in renamed if any(n in a.name for n in entry_points)}


_STUB = re.compile(r'r"""[^"]*"""')  # a stubbed run of lines: _strings() leaves no '"' inside


def without_stubs(narrowed: str) -> str:
    """The narrowed text with each stubbed run emptied: what LibCST will hold as code (each
    run is one string token to it), for the memory estimate."""
    return _STUB.sub('""', narrowed)


def _chain(expr: ast.AST) -> List[str]:
    """The names in a callee like `torch.ops.ns.sparse_prefill_fwd.default` or `f`."""
    out = []
    while isinstance(expr, ast.Attribute):
        out.append(expr.attr)
        expr = expr.value
    if isinstance(expr, ast.Name):
        out.append(expr.id)
    return out


def _bound(imp: _Import) -> Set[str]:
    """The local names an import statement binds."""
    if isinstance(imp, ast.Import):
        return {a.asname or a.name.split(".")[0] for a in imp.names}
    return {a.asname or a.name for a in imp.names}


def _passes(call: ast.Call, params: Tuple[Optional[str], ...]) -> bool:
    """Does the call pass every rule's parameter by keyword (a rule with none: never)?"""
    passed = {k.arg for k in call.keywords}
    return bool(params) and all(p is not None and p in passed for p in params)


def _simple(stmt: ast.stmt) -> bool:
    return not hasattr(stmt, "body")


class _Scan:
    """Collect kernel calls (with their innermost function and statement) and import statements,
    reading only the statements whose text has a kernel name or the word `import`."""

    def __init__(self, text: str, lines: List[str], names: Set[str], import_lines: Optional[List[int]] = None):
        self.lines, self.names = lines, names
        # the lines (1-based, sorted) holding a kernel name, and those holding "import": a statement is
        # read if its lines hold either (one pass over the text, not one search per statement and level)
        self.kernel_lines = _lines_of(text, names, whole_word=True)
        self.import_lines = _lines_of(text, ("import",)) if import_lines is None else import_lines
        self.calls: List[Found] = []
        self.imports: List[_Import] = []
        self.value_use = False  # a kernel name used other than as a callee: parse the file whole

    def block(self, stmts: List[ast.stmt], fn: str) -> None:
        for st in stmts:
            first = _first(st) if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) else st.lineno
            kernel = _within(self.kernel_lines, first, st.end_lineno)
            if not kernel and not _within(self.import_lines, first, st.end_lineno):
                continue
            if isinstance(st, (ast.Import, ast.ImportFrom)):
                self.imports.append(st)
                continue
            inner = st.name if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)) else fn
            self.node(st, fn, inner, st, kernel)

    def node(self, node: ast.AST, fn: str, inner: str, stmt: ast.stmt, kernel: bool) -> None:
        for name, value in ast.iter_fields(node):
            items = value if isinstance(value, list) else [value]
            stmts = [v for v in items if isinstance(v, ast.stmt)]
            if stmts:
                self.block(stmts, inner)
                continue
            for v in items:
                if isinstance(v, (ast.excepthandler, getattr(ast, "match_case", ast.excepthandler))):
                    self.node(v, inner, inner, stmt, kernel)
                elif kernel and isinstance(v, ast.AST):
                    found = [x for x in ast.walk(v) if isinstance(x, ast.Call) and not self.names.isdisjoint(_chain(x.func))]
                    self.calls.extend((fn, stmt, x) for x in found)
                    if not self.value_use and name != "decorator_list" and not _rebinding(node, name, v):
                        self.value_use = _used_as_value(v, found, self.names)  # (a decorator is read as a call)


def _lines_of(text: str, words, whole_word: bool = False) -> List[int]:
    """The numbers (1-based, ascending, once each) of the lines that hold one of `words` (as a whole
    word: not inside a longer name). str.find per word, which searches at memory speed."""
    def word_char(i: int) -> bool:
        return 0 <= i < len(text) and (text[i].isalnum() or text[i] == "_")

    found = []
    for w in words:
        at = text.find(w)
        while at >= 0:
            if not whole_word or not (word_char(at - 1) or word_char(at + len(w))):
                found.append(at)
            at = text.find(w, at + 1)
    out: List[int] = []
    line, last = 1, 0
    for at in sorted(found):
        line += text.count("\n", last, at)
        last = at
        if not out or out[-1] != line:
            out.append(line)
    return out


def _within(hits: List[int], first: int, last: int) -> bool:
    i = bisect_left(hits, first)
    return i < len(hits) and hits[i] <= last


def _rebinding(stmt: ast.AST, field: str, target: ast.AST) -> bool:
    """Whether `target` is an assignment's whole target, a plain name or attribute chain
    (`flash_mla_sparse_fwd = fallback`): the engine takes it for no value use either."""
    if not (isinstance(stmt, ast.Assign) and field == "targets"
            or isinstance(stmt, (ast.AnnAssign, ast.AugAssign)) and field == "target"):
        return False
    while isinstance(target, ast.Attribute):
        target = target.value
    return isinstance(target, ast.Name)


def _used_as_value(tree: ast.AST, calls: List[ast.Call], names: Set[str]) -> bool:
    """Whether a kernel name appears in `tree` other than in the callee of one of `calls`:
    passed on (`partial(f, ...)`), stored (`self.k = mod.f`), or looked up by name (getattr)."""
    callee_parts = set()
    for c in calls:
        x = c.func
        while isinstance(x, ast.Attribute):
            callee_parts.add(id(x))
            x = x.value
        callee_parts.add(id(x))
    for x in ast.walk(tree):
        if id(x) in callee_parts:
            continue
        if isinstance(x, ast.Name) and x.id in names or isinstance(x, ast.Attribute) and x.attr in names \
                or isinstance(x, ast.Constant) and isinstance(x.value, str) and x.value in names:
            return True
    return False


def _strings(lines: List[str], seg: List[int], indent: str, out: List[str]) -> None:
    """Turn lines seg (1-based, consecutive) of `out` into one raw string statement."""
    if seg:
        for k in seg:  # a raw string cannot hold these; the words stay
            out[k - 1] = lines[k - 1].replace('"', "'").replace("\\", "/")
        out[seg[0] - 1] = f'{indent}r"""{out[seg[0] - 1]}'
        out[seg[-1] - 1] += '"""'


def _minimal(lines: List[str], calls: List[Found], imports: List[_Import]) -> Optional[str]:
    """The imports of the callees' first names (moved to column 0) and the call statements
    (each in an `if 1:` block opened on the line above, where it is indented) on their own
    lines; None if they collide."""
    keep: List[Optional[str]] = [None] * len(lines)
    roots = {_chain(c.func)[-1] for _, _, c in calls}  # a callee is resolved through its first name only
    for imp in imports:
        if roots.isdisjoint(_bound(imp)):
            continue
        if lines[imp.lineno - 1][: imp.col_offset].strip():
            return None  # shares its line with other code
        keep[imp.lineno - 1] = lines[imp.lineno - 1].lstrip()
        keep[imp.lineno : imp.end_lineno] = lines[imp.lineno : imp.end_lineno]
    block = None  # (last line, column) of the kept statement an `if 1:` block is open for
    for start, end, col in sorted({(s.lineno, s.end_lineno, s.col_offset) for _, s, _ in calls}):
        st_lines = range(start - 1, end)
        if any(keep[k] is not None for k in st_lines):
            if block and start <= block[0]:
                continue  # a second call in a statement kept already
            return None
        if lines[start - 1][:col].strip():
            return None  # shares its line with other code
        if col and not (block and block == (start - 1, col)):
            if start < 2 or keep[start - 2] is not None:
                return None  # no free line above for the block header
            keep[start - 2] = f"if 1:  #{lines[start - 2]}"
        keep[start - 1 : end] = lines[start - 1 : end]
        block = (end, col)
    if not all(_simple(s) for _, s, _ in calls):
        return None
    out = list(keep)
    seg: List[int] = []
    for i, k in enumerate(keep, 1):
        if k is None:
            seg.append(i)
        else:
            _strings(lines, seg, "", out)
            seg = []
    _strings(lines, seg, "", out)
    return "\n".join(out)


def _top_defs(body: List[ast.stmt], out: List[_Def]) -> List[_Def]:
    """Defs directly in the module or in a (nested) class body: the ones that can be stubbed."""
    for st in body:
        if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out.append(st)
        elif isinstance(st, ast.ClassDef):
            _top_defs(st.body, out)
    return out


def _first(d: Union[_Def, ast.ClassDef]) -> int:
    return min([x.lineno for x in d.decorator_list] + [d.lineno])


def _stub_defs(tree: ast.Module, text: str, lines: List[str], scan: "_Scan", calls: List[Found],
               params: Tuple[Optional[str], ...]) -> str:
    # Functions holding a kernel call that does not pass the rules' parameters itself: the
    # engine may read their callers and overrides (a word search finds both).
    open_fns = {fn for fn, _, c in calls if not _passes(c, params) and fn}
    named_open = _lines_of(text, open_fns, whole_word=True)
    out = list(lines)
    defs = list(_top_defs(tree.body, []))
    kept = [d for d in defs if _within(scan.kernel_lines, _first(d), d.end_lineno)
            or _within(named_open, _first(d), d.end_lineno)]
    read = {x.attr for d in kept for x in ast.walk(d) if isinstance(x, ast.Attribute)}
    read |= {x.target.id for c in tree.body if isinstance(c, ast.ClassDef) for x in c.body
             if isinstance(x, ast.AnnAssign) and isinstance(x.target, ast.Name)}  # declared fields (a metadata class)
    # (membership by id, and each def walked once for the names it calls: a list searched per def, and every
    # module-wide def walked again per round, made a file of N defs cost N x N)
    held = {id(d) for d in kept}
    whole = kept + [d for d in defs if id(d) not in held and _module_wide(d, read)]
    held.update(id(d) for d in whole)
    called: Set[str] = set()
    more = whole[len(kept):]
    while more:  # what the module-wide defs call is read with them (a clip helper of a metadata builder)
        called |= {_callee_name(x) for d in more for x in ast.walk(d) if isinstance(x, ast.Call)}
        more = [d for d in defs if id(d) not in held and d.name in called]
        whole += more
        held.update(id(d) for d in more)
    for d in defs:
        if id(d) not in held:
            _stub(d, lines, out, _within(scan.import_lines, _first(d), d.end_lineno))
    return "\n".join(out)


def _callee_name(call: ast.Call) -> str:
    f = call.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""


_REFLECTIVE = {"setattr", "delattr", "exec", "eval", "compile", "globals", "vars", "locals"}


def _module_wide(d: "_Def", read: Set[str]) -> bool:
    """Does d hold what the engine reads of the whole module, wherever it sits: reflection (a computed
    setattr, exec, a write through globals() or __dict__), a CUDA-graph replay method, or a write of an
    attribute the kept functions read or a class of the module declares (a metadata field built by another
    method)? Such a def is kept whole."""
    if "replay" in d.name:
        return True
    for x in ast.walk(d):
        if isinstance(x, ast.Call) and isinstance(x.func, ast.Name) and x.func.id in _REFLECTIVE:
            return True
        if isinstance(x, ast.Attribute) and (x.attr in ("__dict__", "__globals__") or (
                x.attr == "modules" and isinstance(x.value, ast.Name) and x.value.id == "sys")):
            return True
        if isinstance(x, ast.keyword) and x.arg in read:
            return True
        if isinstance(x, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = x.targets if isinstance(x, ast.Assign) else [x.target]
            if any(isinstance(t, ast.Attribute) and t.attr in read for t in targets):
                return True
        if isinstance(x, ast.Call) and isinstance(x.func, ast.Attribute) and x.func.attr == "copy_" \
                and isinstance(x.func.value, ast.Attribute) and x.func.value.attr in read:
            return True
    return False


def _stub(d: _Def, lines: List[str], out: List[str], has_import: bool) -> None:
    """Stub d in `out`, keeping its imports where they are."""
    first = _first(d)
    body = d.body[0]
    if body.lineno <= first or lines[body.lineno - 1][: body.col_offset].strip():
        return  # one-line def, or body shares a line with its header: leave it
    imports = {}
    for x in ast.walk(d) if has_import else ():
        if isinstance(x, (ast.Import, ast.ImportFrom)):
            if x.lineno == first or lines[x.lineno - 1][: x.col_offset].strip():
                return  # shares its line with other code: keep the def whole
            imports[x.lineno] = x.end_lineno
    indent = lines[body.lineno - 1][: body.col_offset]
    head = lines[d.lineno - 1][: d.col_offset]
    kw = "async def " if isinstance(d, ast.AsyncFunctionDef) else "def "
    out[first - 1] = f"{head}{kw}{d.name}():  #{lines[first - 1]}"
    seg: List[int] = []
    ln = first + 1
    while ln <= d.end_lineno:
        if ln in imports:
            _strings(lines, seg, indent, out)
            seg = []
            out[ln - 1] = indent + lines[ln - 1].lstrip()
            ln = imports[ln] + 1  # continuation lines of a multi-line import stay as they are
        else:
            seg.append(ln)
            ln += 1
    _strings(lines, seg, indent, out)
