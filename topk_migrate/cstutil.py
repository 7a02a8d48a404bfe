"""Small LibCST helpers that keep the user's formatting when a list grows by one item."""
from __future__ import annotations

import keyword
from typing import List, Sequence, TypeVar, Union

import libcst as cst

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


def _expression(code: str) -> cst.BaseExpression:
    """`code` as an expression node: a dotted name built directly (most keyword values; the parser
    costs a millisecond a call), anything else parsed."""
    parts = code.split(".")
    if all(p.isidentifier() and not keyword.iskeyword(p) for p in parts):
        node: cst.BaseExpression = cst.Name(parts[0])
        for part in parts[1:]:
            node = cst.Attribute(value=node, attr=cst.Name(part))
        return node
    return cst.parse_expression(code)


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
