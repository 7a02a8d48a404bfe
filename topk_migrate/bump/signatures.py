"""The public entry points of a FlashMLA wrapper module, read with `ast` (never imported).

For each public top-level function: its parameters (kind, default as source text) and the
asserts/raises that guard a parameter, each with the path condition under which it runs
(`assert topk_length is None` when `not isinstance(tile_scheduler_metadata, FlashMLASchedMeta)`).
Guards in a private helper the entry point calls with `name=name` keywords are followed one level.
"""
from __future__ import annotations

import ast
from dataclasses import asdict, dataclass, field
from typing import Dict, List, Optional, Sequence

# Wrapper modules, by path inside a wheel / site-packages / source tree.
WRAPPER_MODULES = ("sgl_kernel/flash_mla.py", "flash_mla/flash_mla_interface.py")
# What a call site imports to reach each wrapper module (flash_mla re-exports its interface).
IMPORT_ROOTS = {"sgl_kernel/flash_mla.py": "sgl_kernel", "flash_mla/flash_mla_interface.py": "flash_mla"}

POSITIONAL_ONLY, POSITIONAL_OR_KEYWORD, VAR_POSITIONAL = "positional-only", "positional-or-keyword", "var-positional"
KEYWORD_ONLY, VAR_KEYWORD = "keyword-only", "var-keyword"
SCHEMA = 1  # bump when the JSON layout changes (cached extractions are then re-read)


@dataclass(frozen=True)
class Param:
    name: str
    kind: str
    default: Optional[str] = None  # source text; None: required (or *args/**kwargs)
    annotation: Optional[str] = None

    @property
    def positional(self) -> bool:
        return self.kind in (POSITIONAL_ONLY, POSITIONAL_OR_KEYWORD)

    @property
    def required(self) -> bool:
        return self.default is None and self.kind not in (VAR_POSITIONAL, VAR_KEYWORD)


@dataclass(frozen=True)
class Guard:
    """An assert (or a raise under an `if`) that mentions a parameter."""

    params: List[str]
    kind: str  # "assert" | "raise"
    test: str  # the asserted expression, or the raise statement
    condition: Optional[str] = None  # the path to it, as source text (None: always)
    message: Optional[str] = None
    via: Optional[str] = None  # the private helper it sits in

    def key(self) -> tuple:
        return (self.kind, self.test, self.condition)

    def describe(self) -> str:
        what = f"assert {self.test}" if self.kind == "assert" else self.test
        where = f" when {self.condition}" if self.condition else ""
        return what + where + (f" (in {self.via})" if self.via else "")


@dataclass
class EntryPoint:
    name: str
    module: str  # path inside the release, e.g. sgl_kernel/flash_mla.py
    line: int
    params: List[Param]
    guards: List[Guard] = field(default_factory=list)

    def param(self, name: str) -> Optional[Param]:
        return next((p for p in self.params if p.name == name), None)

    def positional(self) -> List[Param]:
        return [p for p in self.params if p.positional]

    def signature(self) -> str:
        parts = []
        for p in self.params:
            star = "*" if p.kind == VAR_POSITIONAL else "**" if p.kind == VAR_KEYWORD else ""
            parts.append(star + p.name + (f"={p.default}" if p.default is not None else ""))
        return f"{self.name}({', '.join(parts)})"


@dataclass
class Release:
    """What one kernel release exposes: its entry points, and where they were read from."""

    dist: Optional[str]
    version: Optional[str]
    origin: str  # wheel file name (+ sha256) or path read
    entry_points: Dict[str, EntryPoint]
    sha256: Optional[str] = None

    @property
    def pin(self) -> Optional[str]:
        return f"{self.dist}=={self.version}" if self.dist and self.version else None

    @property
    def label(self) -> str:
        return self.pin or self.origin

    def import_roots(self) -> List[str]:
        return sorted({IMPORT_ROOTS.get(e.module, e.module.split("/")[0]) for e in self.entry_points.values()})

    def to_json(self) -> dict:
        return {"schema": SCHEMA, "dist": self.dist, "version": self.version, "origin": self.origin,
                "sha256": self.sha256,
                "entry_points": {n: asdict(e) for n, e in sorted(self.entry_points.items())}}

    @classmethod
    def from_json(cls, data: dict) -> "Release":
        eps = {}
        for name, e in data["entry_points"].items():
            eps[name] = EntryPoint(e["name"], e["module"], e["line"], [Param(**p) for p in e["params"]],
                                   [Guard(**g) for g in e["guards"]])
        return cls(data["dist"], data["version"], data["origin"], eps, data.get("sha256"))


def _params(args: ast.arguments) -> List[Param]:
    text = ast.unparse
    out: List[Param] = []
    positional = [*args.posonlyargs, *args.args]
    defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    for i, (a, d) in enumerate(zip(positional, defaults)):
        kind = POSITIONAL_ONLY if i < len(args.posonlyargs) else POSITIONAL_OR_KEYWORD
        out.append(Param(a.arg, kind, text(d) if d is not None else None, text(a.annotation) if a.annotation else None))
    if args.vararg:
        out.append(Param(args.vararg.arg, VAR_POSITIONAL))
    for a, d in zip(args.kwonlyargs, args.kw_defaults):
        out.append(Param(a.arg, KEYWORD_ONLY, text(d) if d is not None else None,
                         text(a.annotation) if a.annotation else None))
    if args.kwarg:
        out.append(Param(args.kwarg.arg, VAR_KEYWORD))
    return out


def _names(node: ast.AST) -> set:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _local_names(body: Sequence[ast.stmt]) -> set:
    return {n.id for st in body for n in ast.walk(st) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


_OPPOSITE = {ast.Is: ast.IsNot, ast.IsNot: ast.Is, ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.In: ast.NotIn, ast.NotIn: ast.In}


def _negate(test: ast.expr) -> str:
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and type(test.ops[0]) in _OPPOSITE:
        return ast.unparse(ast.Compare(test.left, [_OPPOSITE[type(test.ops[0])]()], test.comparators))
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return ast.unparse(test.operand)
    return f"not {ast.unparse(test)}" if isinstance(test, (ast.Call, ast.Name, ast.Attribute)) \
        else f"not ({ast.unparse(test)})"


def _terminates(body: Sequence[ast.stmt]) -> bool:
    return bool(body) and isinstance(body[-1], (ast.Return, ast.Raise))


class _GuardWalker:
    """Collects the guards of one function body, with their path conditions."""

    def __init__(self, params: Sequence[str], helpers: Dict[str, ast.FunctionDef]):
        self.params = set(params)
        self.helpers = helpers
        self.guards: List[Guard] = []
        self._followed: set = set()

    def walk(self, body: Sequence[ast.stmt], conds: List[str], rename: Dict[str, str], via: Optional[str],
             scope: Optional[set] = None) -> None:
        """scope: the function's own names (parameters, locals); a test on anything else (a module
        global such as an import-error flag) says nothing about the arguments and is left out."""
        if scope is None:
            scope = _local_names(body) | self.params
        for st in body:
            if isinstance(st, ast.If):
                if not _names(st.test) & scope:
                    self.walk(st.body, conds, rename, via, scope)
                    self.walk(st.orelse, conds, rename, via, scope)
                    continue
                yes, no = ast.unparse(st.test), _negate(st.test)
                self.walk(st.body, conds + [yes], rename, via, scope)
                self.walk(st.orelse, conds + [no], rename, via, scope)
                if _terminates(st.body) and not _terminates(st.orelse):
                    conds = conds + [no]
                elif _terminates(st.orelse) and not _terminates(st.body):
                    conds = conds + [yes]
            elif isinstance(st, ast.Assert):
                self._add("assert", st.test, ast.unparse(st.test), conds, rename, via,
                          ast.literal_eval(st.msg) if isinstance(st.msg, ast.Constant) else
                          (ast.unparse(st.msg) if st.msg else None))
            elif isinstance(st, ast.Raise) and conds:
                self._add("raise", None, ast.unparse(st), conds, rename, via, None)
            elif isinstance(st, (ast.For, ast.While, ast.With, ast.Try)):
                for part in ("body", "orelse", "finalbody"):
                    self.walk(getattr(st, part, []) or [], conds, rename, via, scope)
                for h in getattr(st, "handlers", []):
                    self.walk(h.body, conds, rename, via, scope)
            if via is None:
                for call in (n for n in ast.walk(st) if isinstance(n, ast.Call)):
                    self._follow(call, conds, rename)

    def _add(self, kind, test_node, test, conds, rename, via, message) -> None:
        mentioned = _names(test_node) if test_node is not None else set()
        if kind == "raise":
            mentioned = _names(ast.parse(conds[-1], mode="eval"))  # the test the raise sits under
        params = sorted({rename.get(n, n) for n in mentioned} & self.params)
        if not params:
            return
        condition = " and ".join(conds) if conds else None
        self.guards.append(Guard(params, kind, test, condition, message, via))

    def _follow(self, call: ast.Call, conds: List[str], rename: Dict[str, str]) -> None:
        """A private helper called as `_helper(x=x, ...)`: its guards, in the caller's names."""
        name = call.func.id if isinstance(call.func, ast.Name) else None
        helper = self.helpers.get(name or "")
        if helper is None or name in self._followed:
            return
        self._followed.add(name)
        mapping = {k.arg: k.value.id for k in call.keywords
                   if k.arg and isinstance(k.value, ast.Name) and k.value.id in self.params}
        own = {a.arg for a in (*helper.args.posonlyargs, *helper.args.args, *helper.args.kwonlyargs)}
        self.walk(helper.body, list(conds), mapping, name, _local_names(helper.body) | own)


def read_module(source: str, module: str) -> Dict[str, EntryPoint]:
    """The public functions of a wrapper module (source text; `module` is its path in the release)."""
    tree = ast.parse(source)
    helpers = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("_")}
    out: Dict[str, EntryPoint] = {}
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef) or node.name.startswith("_"):
            continue
        params = _params(node.args)
        walker = _GuardWalker([p.name for p in params], helpers)
        walker.walk(node.body, [], {}, None)
        out[node.name] = EntryPoint(node.name, module, node.lineno, params, walker.guards)
    return out
