"""Small LibCST helpers that keep the user's formatting when a list grows by one item."""
from __future__ import annotations

import contextlib
import dataclasses
import keyword
from typing import Callable, List, Optional, Sequence, Tuple, TypeVar, Union

import libcst as cst

from . import accel
from .cstwalk import is_node_type

T = TypeVar("T", cst.Arg, cst.Param)
PW = cst.ParenthesizedWhitespace
Whitespace = Union[cst.SimpleWhitespace, cst.ParenthesizedWhitespace]


def _plain(ws: Whitespace) -> Whitespace:
    """The same line break and indentation, without any comment on it."""
    if isinstance(ws, PW):
        return ws.with_changes(first_line=cst.TrailingWhitespace(), empty_lines=[])
    return ws


def append_item(items: Sequence[T], new: T, open_ws: Whitespace, ws_attr: str) -> List[T]:
    """Append `new` to call args or def params, laid out like the items already there.

    Comments stay on the line they were on; a trailing comma stays trailing.
    `ws_attr` is the field holding the space before the closing paren.
    """
    if not items:
        return [new]
    last = items[-1]
    prev = items[-2].comma if len(items) >= 2 else None
    if isinstance(prev, cst.Comma):
        sep = _plain(prev.whitespace_after)
    else:
        sep = _plain(open_ws) if isinstance(open_ws, PW) else cst.SimpleWhitespace(" ")
    trailing = isinstance(last.comma, cst.Comma)
    tail = last.comma.whitespace_after if trailing else getattr(last, ws_attr)
    if isinstance(tail, PW) and isinstance(sep, PW):
        # multi-line: `last,` keeps its comment; the new item goes on its own line
        last_comma = cst.Comma(
            whitespace_before=last.comma.whitespace_before if trailing else cst.SimpleWhitespace(""),
            whitespace_after=tail.with_changes(indent=sep.indent, last_line=sep.last_line),
        )
        close = PW(first_line=cst.TrailingWhitespace(), indent=tail.indent, last_line=tail.last_line)
        if trailing:
            new = new.with_changes(comma=cst.Comma(whitespace_after=close))
        else:
            new = new.with_changes(**{ws_attr: close})
    else:
        last_comma = cst.Comma(whitespace_after=sep)
        new = new.with_changes(comma=last.comma) if trailing else new.with_changes(**{ws_attr: tail})
    last = last.with_changes(comma=last_comma, **({} if trailing else {ws_attr: cst.SimpleWhitespace("")}))
    return [*items[:-1], last, new]


_PARSED: dict = {}  # code -> its expression, parsed once per run of many sites (bounded)


def _expression(code: str) -> cst.BaseExpression:
    """`code` as an expression node of its own: a dotted name built directly (most keyword values; the parser
    costs a millisecond a call), anything else parsed once and copied for each further site."""
    parts = code.split(".")
    if all(p.isidentifier() and not keyword.iskeyword(p) for p in parts):
        node: cst.BaseExpression = cst.Name(parts[0])
        for part in parts[1:]:
            node = cst.Attribute(value=node, attr=cst.Name(part))
        return node
    parsed = _PARSED.get(code)
    if parsed is None:
        if len(_PARSED) >= 64:
            _PARSED.clear()
        parsed = _PARSED[code] = cst.parse_expression(code)
    return copy_tree(parsed)


_FIELD_NAMES: dict = {}  # node type -> its dataclass fields' names


def _field_names(t: type) -> tuple:
    names = _FIELD_NAMES[t] = tuple(f.name for f in dataclasses.fields(t))
    return names
_SHARED = (cst.BaseParenthesizableWhitespace, cst.EmptyLine, cst.TrailingWhitespace, cst.Newline, cst.Comment)
_KINDS: dict = {}  # type -> 0: not a node, 1: a node to copy, 2: whitespace, shared as it is
_NOT_NODE, _COPY, _SHARE = 0, 1, 2


def _kind(t: type) -> int:
    got = _KINDS.get(t)
    if got is None:
        got = _KINDS[t] = _NOT_NODE if not is_node_type(t) else _SHARE if issubclass(t, _SHARED) else _COPY
    return got


def copy_tree(node: cst.CSTNode) -> cst.CSTNode:
    """A copy of node made of new node objects, field for field (the analyses tell nodes apart by identity), but
    its whitespace and comments, which no analysis asks of and which are immutable, shared. Built without
    LibCST's constructors: they validate what the parser built and validated already, and cost twice a parse
    of it (deep_clone three times). Where the accelerators are off (accel.py): LibCST's deep_clone."""
    if not accel.on():
        return node.deep_clone()
    return _copy_tree(node)


def _copy_tree(node: cst.CSTNode) -> cst.CSTNode:
    t = type(node)
    names = _FIELD_NAMES.get(t) or _field_names(t)
    new = object.__new__(t)
    for name in names:
        value = getattr(node, name)
        vt = type(value)
        if vt is tuple or vt is list:
            if value:
                value = vt(_copy_tree(v) if (_KINDS.get(type(v)) or _kind(type(v))) == _COPY else v for v in value)
            elif vt is list:
                value = []
        elif (_KINDS.get(vt) or _kind(vt)) == _COPY:
            value = _copy_tree(value)
        object.__setattr__(new, name, value)
    return new


def add_keyword(call: cst.Call, name: str, value: str) -> cst.Call:
    arg = cst.Arg(
        keyword=cst.Name(name),
        value=_expression(value),
        equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")),
    )
    return call.with_changes(args=append_item(call.args, arg, call.whitespace_before_args, "whitespace_after_arg"))


def add_param(fn: cst.FunctionDef, source: str) -> cst.FunctionDef:
    """Add a defaulted parameter such as `topk_length: Optional[torch.Tensor] = None`."""
    param = cst.ensure_type(cst.parse_statement(f"def _({source}): pass").params.params[0], cst.Param)
    params = fn.params
    if params.kwonly_params or isinstance(params.star_arg, cst.Param):
        group, field = params.kwonly_params, "kwonly_params"
    else:
        group, field = params.params, "params"
    grown = append_item(group, param, fn.whitespace_before_params, "whitespace_after_param")
    return fn.with_changes(params=params.with_changes(**{field: grown}))


# -- the rewritten module's code, generating only what the rewrite replaced ---------------------------

_NO_RECORD = contextlib.nullcontext()


def _plain_state():
    """LibCST's CodegenState, recording no position: its record_syntactic_position is a generator-made context
    manager entered around most nodes, that records nothing there either. A private class of LibCST's: used
    only where the accelerators are on (accel.py)."""
    from libcst._nodes.internal import CodegenState  # noqa: PLC0415 - on demand: private, where the accelerators are on

    class _State(CodegenState):
        __slots__ = ()

        def record_syntactic_position(self, node, *, start_node=None, end_node=None):
            return _NO_RECORD

    return _State


_STATE: list = []


def _code_at(node: cst.CSTNode, module: cst.Module, indents: Sequence[str]) -> str:
    """node's code where it stands: inside blocks indented by `indents` (Module.code_for_node, with the
    indentation the blocks around it give every line it generates)."""
    if not _STATE:
        _STATE.append(_plain_state())
    state = _STATE[0](default_indent=module.default_indent, default_newline=module.default_newline)
    state.indent_tokens.extend(indents)
    node._codegen(state)
    return "".join(state.tokens)


def _replaced(old: Sequence[cst.CSTNode], new: Sequence[cst.CSTNode], indents: List[str], module: cst.Module,
              out: list, around: tuple = ()) -> bool:
    """The statements that differ between two statement lists, as (old, new, indents, around): descending into
    a compound statement whose only change is its block's statements, `around` the (old, new, indents) of
    the statements descended through, outermost first. False where the lists do not pair up."""
    if len(old) != len(new):
        return False
    for o, n in zip(old, new):
        if o is n:
            continue
        body_o, body_n = getattr(o, "body", None), getattr(n, "body", None)
        if (type(o) is type(n) and isinstance(o, cst.BaseCompoundStatement) and isinstance(body_o, cst.IndentedBlock)
                and type(body_n) is cst.IndentedBlock and _same_but(o, n, "body")
                and _same_but(body_o, body_n, "body")):
            indent = module.default_indent if body_o.indent is None else body_o.indent
            inner: list = []
            if _replaced(body_o.body, body_n.body, indents + [indent], module, inner, around + ((o, n, list(indents)),)):
                out += inner
                continue
        out.append((o, n, list(indents), around))
    return True


def _same_but(a: cst.CSTNode, b: cst.CSTNode, name: str) -> bool:
    """Do two nodes of one type hold the same (_same) in every field but `name`?"""

    t = type(a)
    names = _FIELD_NAMES.get(t) or _field_names(t)
    return all(_same(getattr(a, f), getattr(b, f)) for f in names if f != name)


def _same(a: object, b: object) -> bool:
    """The same object, or one generating the same code: a transformer rebuilds the layout and sequences it
    passes (brackets, blank lines, a block's header), equal node for node (deep_equals)."""
    if a is b:
        return True
    if isinstance(a, cst.CSTNode):
        return isinstance(b, cst.CSTNode) and a.deep_equals(b)
    return (type(a) in (tuple, list) and type(b) in (tuple, list) and len(a) == len(b)
            and all(_same(x, y) for x, y in zip(a, b)))


def rewritten_code(module: cst.Module, new: cst.Module, source: str,
                   known: Callable[[cst.CSTNode], Optional[Tuple[int, str]]] = lambda node: None,
                   place: Callable[[cst.CSTNode, str], Optional[int]] = lambda node, text: None) -> str:
    """new.code, for `new` a rewrite of `module` (parsed from `source`) that shares the nodes it left alone,
    generating only the statements it replaced (spliced_code); the whole module where that cannot be done, or
    where the accelerators are off (LibCST's Module.code)."""
    if not accel.on():
        return new.code
    got = spliced_code(module, new, source, lambda node: True, known, place)
    return _code_at(new, new, ()) if got is None else got


# At most this many replaced statements are searched for in the whole source (spliced_code): each search
# reads the source, so a file of N statements replaced, none placed by its positions, would cost N x N;
# past it the whole module is generated instead (linear, the same bytes).
SEARCHES = 16


def spliced_code(module: cst.Module, new: cst.Module, source: str,
                 original: Callable[[cst.CSTNode], bool] = lambda node: True,
                 known: Callable[[cst.CSTNode], Optional[Tuple[int, str]]] = lambda node: None,
                 place: Callable[[cst.CSTNode, str], Optional[int]] = lambda node, text: None) -> Optional[str]:
    """The source with each statement `new` replaced swapped for its new code, or None where that cannot be
    done. A replaced statement's old code is found where it occurs exactly once in the source (LibCST gives
    back the source byte for byte, so that one occurrence is the statement's); one whose text occurs twice is
    replaced with the statement around it. `module` may be a cut-down copy of the module parsed from `source`
    (a rewrite's validation module): `original` then says which of its nodes are the parsed module's own, and
    only those are looked for (another's text need not stand where it stands). None for a module without a
    final newline, a changed frame, or a list of statements that does not pair up. `known`: where a statement's
    code stands in the source, as its positions were worked out (StatementPositions.text_of), if they were;
    `place`: the offset where the source holds a statement's code, from its positions (StatementPositions.place),
    or None. Only a statement neither places is searched for, SEARCHES at most (past them: None). None where
    the accelerators are off (a statement's code alone is generated with LibCST's private codegen state)."""
    if not accel.on():
        return None
    same_frame = all(_same(getattr(module, f), getattr(new, f)) for f in (
        "header", "footer", "encoding", "default_indent", "default_newline", "has_trailing_newline"))
    edits: list = []
    if not same_frame or not module.has_trailing_newline or not _replaced(module.body, new.body, [], module, edits):
        return None
    spans = []  # (start, end, new text, around)
    dropped: set = set()  # ids of the statements replaced with the one around them: the edits inside are not made
    searches = 0
    while edits:
        o, n, indents, around = edits.pop()
        if dropped and any(id(a[0]) in dropped for a in around):
            continue
        found = known(o) if original(o) else None
        if found is not None:  # its place is known: generated there, and its text checked there
            at, before = found
            spans.append((at, at + len(before), _code_at(n, module, indents), around))
            continue
        before = _code_at(o, module, indents) if original(o) else ""
        at = place(o, before) if before else None
        if at is not None:  # where its positions put it, its text checked there
            spans.append((at, at + len(before), _code_at(n, module, indents), around))
            continue
        searches += 1
        if searches > SEARCHES:
            return None
        at = source.find(before) if before else -1
        if at >= 0 and source.find(before, at + 1) < 0:
            spans.append((at, at + len(before), _code_at(n, module, indents), around))
            continue
        if not around or not original(o):
            return None
        outer = around[-1][0]  # the statement around it, instead of it and of every other edit inside it
        dropped.add(id(outer))
        edits.append((*around[-1], around[:-1]))
    if dropped:
        spans = [sp for sp in spans if not any(id(a[0]) in dropped for a in sp[3])]
    spans.sort(key=lambda sp: sp[0])
    if any(a[1] > b[0] for a, b in zip(spans, spans[1:])):
        return None
    parts, last = [], 0
    for start, end, text, _ in spans:
        parts += [source[last:start], text]
        last = end
    parts.append(source[last:])
    return "".join(parts)
