"""What a file must pass before LibCST parses it, and a child process for the risky ones.

LibCST's native parser and its Python visitors recurse once per nesting level:
3,000 nested parentheses overflow the C stack (the process dies with SIGSEGV,
taking the whole run with it), and a chain of a few hundred `+ 1` or `.attr`
exhausts Python's recursion limit. So, before LibCST sees a file:

* CPython's own parser must accept it (it refuses too-deep nesting with a
  SyntaxError); a file it rejects for another reason (syntax newer than this
  interpreter, or plain bad syntax) is parsed by LibCST in a child process, which
  words the error or parses the newer syntax;
* its nesting, as LibCST will recurse on it, must stay under MAX_NESTING (a
  nested block costs LibCST about 3 expression levels of stack); deeper is a
  one-line error, never a crash;
* files whose nesting comes near the limit are parsed in a child process too
  (isolated()), so that if our limit is ever wrong, that file is one error line.
"""
from __future__ import annotations

import ast
import faulthandler
import io
import os
import pickle
import signal
import tokenize
import warnings
from typing import Any, Callable, Optional, Union

from .model import InputError
from .run_context import per_run

# Measured (libcst 1.0.1, CPython 3.11, default recursion limit): an expression
# chain fails at ~330 levels, 95 nested blocks plus ~90 expression levels fail.
# Each block counts BLOCK_COST: the limit keeps a margin of about 40% under both.
MAX_NESTING = 200
BLOCK_COST = 3
ISOLATE_NESTING = 100  # above this, parse in a child process
_NESTING_ERRORS = ("too many nested", "too many levels of indentation", "too many statically nested")


def parse_checked(text: str, path: str, measure: bool = True) -> Optional[ast.Module]:
    """CPython's AST of text, or None when CPython rejects it for a reason LibCST may
    word better (or parse: newer syntax). Raises InputError for what must never reach
    LibCST: nesting CPython refuses, or (measure) deeper than MAX_NESTING. Without
    measure, the caller checks the depth of the text LibCST will get (a narrowed one)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = compile(text, path, "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as e:
        if any(m in (e.msg or "") for m in _NESTING_ERRORS):
            raise InputError(f"syntax error at line {e.lineno}: {e.msg}") from None
        return None
    except (RecursionError, MemoryError) as e:
        raise InputError(f"expression nesting too deep for a safe rewrite: more than Python's parser takes "
                         f"({type(e).__name__}; limit {MAX_NESTING} levels)") from None
    except ValueError as e:  # e.g. a NUL byte, in a string not rejected before
        raise InputError(f"cannot parse: {e}") from None
    _last_tree()[:] = [text, tree]
    return measured(tree, text) if measure else tree


@per_run
def _last_tree() -> list:
    """[text, CPython's AST of it]: the run's last file parsed here (one slot: a run reads many files)."""
    return [None, None]


def tree_of(text: str) -> ast.Module:
    """CPython's AST of text (SyntaxError, ValueError as ast.parse), the one parse_checked made of the
    same text in this run if it was the last: the rule's analysis and the project scan read the file the
    guard just parsed. Shared: read it, never change it."""
    slot = _last_tree()
    if slot[0] is not None and (slot[0] is text or slot[0] == text):
        return slot[1]
    tree = ast.parse(text)
    slot[:] = [text, tree]
    return tree


def for_libcst(tree: Optional[ast.Module], text: str, cut: Optional[str], path: str) -> Optional[ast.Module]:
    """The measured AST of what LibCST will parse: the narrowed `cut` when there is one (parsed
    here), else `text`, whose `tree` (parsed without measure; None if CPython rejected it) is measured."""
    if cut is None:
        return measured(tree, text) if tree is not None else None
    return parse_checked(cut, path)


def measured(tree: ast.Module, text: Optional[str] = None) -> ast.Module:
    """`tree` (CPython's AST of `text`), its depth recorded for needs_isolation(); InputError if
    LibCST must not see it."""
    depth = nesting(tree, text)
    if depth > MAX_NESTING:
        raise InputError(f"expression nesting too deep for a safe rewrite: {depth} levels (limit {MAX_NESTING}, "
                         f"a nested block counting {BLOCK_COST})")
    tree.topk_nesting = depth
    return tree


def nesting(tree: ast.AST, text: Optional[str] = None) -> int:
    """The deepest path from the root as LibCST will nest it: a statement counts BLOCK_COST, any
    other node 1, plus the levels of what CPython keeps flat and LibCST nests one level per
    part (_flat_run). `text` is the source of `tree`, for runs of implicitly joined strings."""
    deepest, todo = 0, [(tree, 0)]
    lines = _Lines(text) if text is not None else None
    kinds = _KINDS
    AST = ast.AST
    while todo:
        node, depth = todo.pop()
        kind = kinds.get(type(node)) or _kind(type(node))
        depth += kind[0]
        if kind[1]:
            depth += _flat_run(node, lines)
        if depth > deepest:
            deepest = depth
        for name in kind[2]:  # ast.iter_child_nodes, without a generator per node
            value = getattr(node, name, None)
            if isinstance(value, AST):
                todo.append((value, depth))
            elif isinstance(value, list):
                todo.extend((v, depth) for v in value if isinstance(v, AST))
    return deepest


_KINDS: dict = {}


def _kind(t: type) -> tuple:
    """(the levels a node of type t counts, whether CPython keeps a run of it flat, its fields)."""
    got = _KINDS[t] = (BLOCK_COST if issubclass(t, ast.stmt) else 1, issubclass(t, _FLAT_NODES), t._fields)
    return got


# Where CPython's AST is flat and LibCST's tree is not: `a and b and c` is one BoolOp but a
# BooleanOperation per operator; `import a.b.c` one alias but an Attribute per dot; `"a" "b" "c"`
# one Constant but a ConcatenatedString per join. 8,000 `and` terms (48 KB) or 6,000 dotted parts
# (12 KB) crashed LibCST's native parser, 500 joined strings its visitors.
_FLAT_NODES = (ast.BoolOp, ast.alias, ast.ImportFrom, ast.Constant, ast.JoinedStr)
_MANY_QUOTES = 64  # fewer quote characters than this in a literal: it cannot join enough pieces to matter


class _Lines:
    """Line start offsets of a text, built on first use, for source segments of string literals. A node's
    columns count UTF-8 bytes: a text that is not ASCII is sliced as its UTF-8 encoding (taken as
    characters, a literal after an `é` was cut short and tokenized as an unterminated string)."""

    def __init__(self, text: str):
        self.text, self.starts = text, None
        self.data: Union[str, bytes] = text
        self.runs: dict = {}  # _flat_run's answer per span: the parts of an f-string (3.11) all span it whole

    def segment(self, node: ast.AST) -> str:
        if self.starts is None:
            if not self.text.isascii():
                self.data = self.text.encode("utf-8", "surrogatepass")
            self.starts = [0]
            find, newline = self.data.find, "\n" if isinstance(self.data, str) else b"\n"
            at = find(newline)
            while at >= 0:
                self.starts.append(at + 1)
                at = find(newline, at + 1)
        try:
            lo = self.starts[node.lineno - 1] + node.col_offset
            hi = self.starts[node.end_lineno - 1] + node.end_col_offset
        except (IndexError, TypeError, AttributeError):
            return ""
        piece = self.data[lo:hi]
        return piece if isinstance(piece, str) else piece.decode("utf-8", "replace")


def _flat_run(node: ast.AST, lines: Optional[_Lines]) -> int:
    if isinstance(node, ast.BoolOp):
        return len(node.values) - 1
    if isinstance(node, ast.alias):
        return node.name.count(".")
    if isinstance(node, ast.ImportFrom):
        return (node.module or "").count(".")
    if lines is None or (isinstance(node, ast.Constant) and not isinstance(node.value, (str, bytes))):
        return 0
    span = (getattr(node, "lineno", None), getattr(node, "col_offset", None), getattr(node, "end_lineno", None),
            getattr(node, "end_col_offset", None))
    run = lines.runs.get(span)
    if run is None:  # once per span: an f-string of k parts is k Constants with its span, read k times it was quadratic
        seg = lines.segment(node)
        quotes = seg.count('"') + seg.count("'")
        run = lines.runs[span] = 0 if quotes < _MANY_QUOTES else max(_string_pieces(seg) - 1, 0)
    return run


def _string_pieces(segment: str) -> int:
    """How many string literals are joined in `segment` (CPython 3.12 tokenizes f-strings in parts:
    their starts count); the quote count halved if it cannot be tokenized (an upper bound)."""
    kinds = {tokenize.STRING, getattr(tokenize, "FSTRING_START", tokenize.STRING)}
    pieces = 0
    try:
        for t in tokenize.generate_tokens(io.StringIO(f"({segment})").readline):
            if t.type == tokenize.ERRORTOKEN:  # an unterminated quote: tokenize would read the rest of the
                break  # line again from each quote after it (quadratic); no literal's source holds one
            pieces += t.type in kinds
        else:
            return pieces
    except (tokenize.TokenError, SyntaxError, IndentationError, RecursionError, MemoryError):
        pass
    return (segment.count('"') + segment.count("'")) // 2


def needs_isolation(tree: Optional[ast.Module]) -> bool:
    """Parse in a child process: CPython could not vouch for the file, or it nests deep."""
    return tree is None or getattr(tree, "topk_nesting", 0) > ISOLATE_NESTING


def isolated(fn: Callable[..., Any], *args) -> Any:
    """fn(*args) in a forked child: its result, or its exception re-raised here; if the
    child dies (a native crash, the memory limit), InputError with one line.

    Without fork (Windows), fn runs here."""
    if not hasattr(os, "fork"):
        return fn(*args)
    parent = os.getpid()
    rd, wr = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into the caller's code
        code = 0
        try:
            os.close(rd)
            exit_with_parent(parent)
            faulthandler.disable()  # a crash is reported by the parent, in one line
            try:
                out = (True, fn(*args))
            except BaseException as e:  # noqa: BLE001 - handed to the parent as is
                out = (False, e)
            try:
                data = pickle.dumps(out)
            except Exception as e:
                data = pickle.dumps((False, InputError(f"internal error: result not transferable: {e}")))
            with os.fdopen(wr, "wb") as f:
                f.write(data)
        except BaseException:
            code = 70
        finally:
            os._exit(code)
    os.close(wr)
    with os.fdopen(rd, "rb") as f:
        data = f.read()
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status) or not data:
        sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
        if sig == signal.SIGINT:  # Ctrl-C reached the child too: the run stops, as without a child
            raise KeyboardInterrupt
        how = f"signal {sig} ({signal.Signals(sig).name})" if sig else f"exit status {os.WEXITSTATUS(status)}"
        raise InputError(f"the parser crashed on this file ({how}); skipped, the other files go on")
    ok, value = pickle.loads(data)
    if ok:
        return value
    raise value


def exit_with_parent(parent: int) -> None:
    """Ask Linux to SIGKILL this process when its parent (pid `parent`) dies, however it dies;
    exit now if it is already gone. Elsewhere a no-op: callers also poll their parent."""
    try:
        import ctypes  # noqa: PLC0415 - on demand: ctypes only for prctl in a worker (Linux)

        libc = ctypes.CDLL(None, use_errno=True)
        PR_SET_PDEATHSIG = 1
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # it died before prctl took effect
        os._exit(1)
