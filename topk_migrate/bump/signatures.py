"""The public entry points of a FlashMLA wrapper module, read with `ast` (never imported).

For each public top-level function: its parameters (kind, default as source text) and the
asserts/raises that guard a parameter, each with the path condition under which it runs
(`assert topk_length is None` when `not isinstance(tile_scheduler_metadata, FlashMLASchedMeta)`).
Guards in a private helper the entry point calls with `name=name` keywords are followed one level.
"""
from __future__ import annotations

import ast
import keyword
import re
from dataclasses import asdict, dataclass, field
from typing import Any, Dict, Iterator, List, Optional, Sequence

from topk_migrate import rules
from topk_migrate.model import InputError

# The wrapper modules a release is read from, by path inside a wheel / site-packages / source tree, and
# what a call site imports to reach each, are the rules' data (RuleInfo.wrappers, rules.wrapper_modules()).

POSITIONAL_ONLY, POSITIONAL_OR_KEYWORD, VAR_POSITIONAL = "positional-only", "positional-or-keyword", "var-positional"
KEYWORD_ONLY, VAR_KEYWORD = "keyword-only", "var-keyword"
SCHEMA = 1  # bump when the JSON layout changes (cached extractions are then re-read)
KINDS = (POSITIONAL_ONLY, POSITIONAL_OR_KEYWORD, VAR_POSITIONAL, KEYWORD_ONLY, VAR_KEYWORD)  # in a def's order
GUARD_KINDS = ("assert", "raise")

# What one release may hold, however it is read (a wrapper module, a signature file, the cache):
# a real wrapper has a handful of entry points of a few dozen parameters and guards each. Past
# these, the diff and the binding (linear scans per parameter) would cost minutes, so it is refused.
MAX_ENTRY_POINTS = 256
MAX_PARAMS = 128
MAX_GUARDS = 512
# Steps (AST nodes visited, and characters of source text made, in 16s) reading one wrapper
# module may take: a real one takes some 10^4-10^5; a crafted one (a helper of 10^5 statements
# followed from 10^5 entry points, 10^5 early returns each adding to every later guard's
# condition) would take hours and gigabytes.
WORK_LIMIT = 4_000_000

_DIST = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?\Z")
_VERSION = re.compile(r"[A-Za-z0-9][A-Za-z0-9.+!_-]*\Z")
_MODULE = re.compile(r"(?:[A-Za-z0-9_][A-Za-z0-9_.-]*/)*[A-Za-z0-9_][A-Za-z0-9_.-]*\.py\Z")
_SHA256 = re.compile(r"[0-9a-f]{64}\Z")


class SignatureError(ValueError):
    """Signatures (a signature file, a cache entry) of the wrong shape: one line for the user."""


def is_name(text: Any) -> bool:
    """A Python identifier that can name a function or parameter (what a `def` gives)."""
    return isinstance(text, str) and text.isidentifier() and not keyword.iskeyword(text)


def valid_dist(text: Any) -> bool:
    """A distribution name as PEP 508 spells one."""
    return isinstance(text, str) and len(text) <= 200 and _DIST.match(text) is not None


def valid_version(text: Any) -> bool:
    """A version as PEP 440 spells one (packaging parses it)."""
    if not (isinstance(text, str) and len(text) <= 100 and _VERSION.match(text)):
        return False
    from packaging.version import Version

    try:
        Version(text)
    except Exception:  # InvalidVersion, or whatever else packaging raises on what it cannot read
        return False
    return True


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
        roots = rules.wrapper_modules()
        return sorted({roots.get(e.module, e.module.split("/")[0]) for e in self.entry_points.values()})

    def to_json(self) -> dict:
        return {"schema": SCHEMA, "dist": self.dist, "version": self.version, "origin": self.origin,
                "sha256": self.sha256,
                "entry_points": {n: asdict(e) for n, e in sorted(self.entry_points.items())}}

    @classmethod
    def from_json(cls, data: Any) -> "Release":
        """The release a signature file (or cache entry) holds; SignatureError unless every field has
        the shape `to_json` writes: names are identifiers, modules paths of .py files, each field typed."""
        if not isinstance(data, dict):
            raise SignatureError(f"a JSON object expected, not {type(data).__name__}")
        if type(data.get("schema")) is not int or data["schema"] != SCHEMA:
            raise SignatureError(f"schema {_short(data.get('schema'))}, expected {SCHEMA}")
        for key in ("dist", "version", "origin", "entry_points"):
            if key not in data:
                raise SignatureError(f"no {key!r}")
        dist, version, origin, sha = data["dist"], data["version"], data["origin"], data.get("sha256")
        if dist is not None and not valid_dist(dist):
            raise SignatureError(f"dist {_short(dist)} is not a distribution name")
        if version is not None and not valid_version(version):
            raise SignatureError(f"version {_short(version)} is not a version")
        if not isinstance(origin, str):
            raise SignatureError("origin is not a string")
        if sha is not None and not (isinstance(sha, str) and _SHA256.match(sha)):
            raise SignatureError("sha256 is not 64 hexadecimal digits")
        raw = data["entry_points"]
        if not isinstance(raw, dict):
            raise SignatureError("entry_points is not an object")
        if len(raw) > MAX_ENTRY_POINTS:
            raise SignatureError(f"more than {MAX_ENTRY_POINTS} entry points")
        eps = {name: _entry_from_json(name, e) for name, e in raw.items()}
        return cls(dist, version, origin, eps, sha)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _fields(obj: Any, what: str, required: Sequence[str], optional: Sequence[str]) -> dict:
    if not isinstance(obj, dict):
        raise SignatureError(f"{what}: a JSON object expected, not {type(obj).__name__}")
    unknown = set(obj) - set(required) - set(optional)
    if unknown:
        raise SignatureError(f"{what}: unknown field {_short(sorted(map(str, unknown))[0])}")
    missing = [k for k in required if k not in obj]
    if missing:
        raise SignatureError(f"{what}: no {missing[0]!r}")
    return obj


def _text_or_none(value: Any, what: str) -> Optional[str]:
    if value is not None and not isinstance(value, str):
        raise SignatureError(f"{what} is not a string")
    return value


def _entry_from_json(name: Any, e: Any) -> EntryPoint:
    if not is_name(name):
        raise SignatureError(f"entry point {_short(name)} is not a Python name")
    what = f"entry point {name}"
    e = _fields(e, what, ("name", "module", "line", "params", "guards"), ())
    if e["name"] != name:
        raise SignatureError(f"{what}: its name is {_short(e['name'])}")
    if not (isinstance(e["module"], str) and _MODULE.match(e["module"])):
        raise SignatureError(f"{what}: module {_short(e['module'])} is not a path to a .py file")
    if type(e["line"]) is not int or e["line"] < 0:
        raise SignatureError(f"{what}: line is not a line number")
    if not isinstance(e["params"], list) or len(e["params"]) > MAX_PARAMS:
        raise SignatureError(f"{what}: params is not a list of at most {MAX_PARAMS}")
    if not isinstance(e["guards"], list) or len(e["guards"]) > MAX_GUARDS:
        raise SignatureError(f"{what}: guards is not a list of at most {MAX_GUARDS}")
    params = []
    for p in e["params"]:
        p = _fields(p, f"{what}: a parameter", ("name", "kind"), ("default", "annotation"))
        if not is_name(p["name"]):
            raise SignatureError(f"{what}: parameter {_short(p['name'])} is not a Python name")
        if p["kind"] not in KINDS:
            raise SignatureError(f"{what}: parameter {p['name']}: kind {_short(p['kind'])}")
        params.append(Param(p["name"], p["kind"], _text_or_none(p.get("default"), f"{what}: a default"),
                            _text_or_none(p.get("annotation"), f"{what}: an annotation")))
    check_params(params, what)
    names = {p.name for p in params}
    guards = []
    for g in e["guards"]:
        g = _fields(g, f"{what}: a guard", ("params", "kind", "test"), ("condition", "message", "via"))
        if not (isinstance(g["params"], list) and all(isinstance(n, str) and n in names for n in g["params"])):
            raise SignatureError(f"{what}: a guard's params are not parameters of the entry point")
        if g["kind"] not in GUARD_KINDS:
            raise SignatureError(f"{what}: guard kind {_short(g['kind'])}")
        if not isinstance(g["test"], str):
            raise SignatureError(f"{what}: a guard's test is not a string")
        via = _text_or_none(g.get("via"), f"{what}: a guard's via")
        if via is not None and not is_name(via):
            raise SignatureError(f"{what}: a guard's via {_short(via)} is not a Python name")
        guards.append(Guard(list(g["params"]), g["kind"], g["test"], _text_or_none(g.get("condition"), f"{what}: a condition"),
                            _text_or_none(g.get("message"), f"{what}: a message"), via))
    return EntryPoint(name, e["module"], e["line"], params, guards)


def check_params(params: Sequence[Param], what: str) -> None:
    """Parameters as a `def` can have them: distinct names, kinds in a def's order, one *args and one
    **kwargs at most and neither with a default, no required positional after one with a default."""
    if len(params) > MAX_PARAMS:
        raise SignatureError(f"{what}: more than {MAX_PARAMS} parameters")
    seen, rank, defaulted = set(), 0, False
    for p in params:
        if p.name in seen:
            raise SignatureError(f"{what}: parameter {p.name} twice")
        seen.add(p.name)
        r = KINDS.index(p.kind)
        if r < rank or (r == rank and p.kind in (VAR_POSITIONAL, VAR_KEYWORD)):
            raise SignatureError(f"{what}: parameter {p.name} ({p.kind}) out of a def's order")
        rank = r
        if p.kind in (VAR_POSITIONAL, VAR_KEYWORD) and p.default is not None:
            raise SignatureError(f"{what}: {p.kind} parameter {p.name} has a default")
        if p.positional:
            if p.default is None and defaulted:
                raise SignatureError(f"{what}: required parameter {p.name} after one with a default")
            defaulted = defaulted or p.default is not None


class _Budget:
    """The steps reading one wrapper module may take (WORK_LIMIT); InputError past them."""

    def __init__(self, limit: int = WORK_LIMIT):
        self.left = limit

    def spend(self, n: int = 1) -> None:
        self.left -= n
        if self.left < 0:
            raise InputError(f"the wrapper module is too complex to read (more than {WORK_LIMIT} steps); "
                             "not a FlashMLA wrapper as released")

    def walk(self, node: ast.AST) -> Iterator[ast.AST]:
        for n in ast.walk(node):
            self.spend()
            yield n

    def unparse(self, node: ast.AST) -> str:
        text = ast.unparse(node)
        self.spend(len(text) // 16 + 1)
        return text


def _params(args: ast.arguments, budget: _Budget) -> List[Param]:
    text = budget.unparse
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


def _names(node: ast.AST, budget: _Budget) -> set:
    return {n.id for n in budget.walk(node) if isinstance(n, ast.Name)}


def _local_names(body: Sequence[ast.stmt], budget: _Budget) -> set:
    return {n.id for st in body for n in budget.walk(st) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


_OPPOSITE = {ast.Is: ast.IsNot, ast.IsNot: ast.Is, ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.In: ast.NotIn, ast.NotIn: ast.In}


def _negate(test: ast.expr, budget: _Budget) -> str:
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and type(test.ops[0]) in _OPPOSITE:
        return budget.unparse(ast.Compare(test.left, [_OPPOSITE[type(test.ops[0])]()], test.comparators))
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return budget.unparse(test.operand)
    return f"not {budget.unparse(test)}" if isinstance(test, (ast.Call, ast.Name, ast.Attribute)) \
        else f"not ({budget.unparse(test)})"


def _terminates(body: Sequence[ast.stmt]) -> bool:
    return bool(body) and isinstance(body[-1], (ast.Return, ast.Raise))


class _GuardWalker:
    """Collects the guards of one function body, with their path conditions."""

    def __init__(self, params: Sequence[str], helpers: Dict[str, ast.FunctionDef], budget: _Budget):
        self.params = set(params)
        self.helpers = helpers
        self.budget = budget
        self.guards: List[Guard] = []
        self._followed: set = set()

    def walk(self, body: Sequence[ast.stmt], conds: List[str], rename: Dict[str, str], via: Optional[str],
             scope: Optional[set] = None) -> None:
        """scope: the function's own names (parameters, locals); a test on anything else (a module
        global such as an import-error flag) says nothing about the arguments and is left out."""
        budget = self.budget
        if scope is None:
            scope = _local_names(body, budget) | self.params
        for st in body:
            budget.spend(len(conds) + 1)  # the path's conditions are copied into what this statement adds
            if isinstance(st, ast.If):
                if not _names(st.test, budget) & scope:
                    self.walk(st.body, conds, rename, via, scope)
                    self.walk(st.orelse, conds, rename, via, scope)
                    continue
                yes, no = budget.unparse(st.test), _negate(st.test, budget)
                self.walk(st.body, conds + [yes], rename, via, scope)
                self.walk(st.orelse, conds + [no], rename, via, scope)
                if _terminates(st.body) and not _terminates(st.orelse):
                    conds = conds + [no]
                elif _terminates(st.orelse) and not _terminates(st.body):
                    conds = conds + [yes]
            elif isinstance(st, ast.Assert):
                self._add("assert", st.test, budget.unparse(st.test), conds, rename, via,
                          st.msg.value if isinstance(st.msg, ast.Constant) and isinstance(st.msg.value, str) else
                          (budget.unparse(st.msg) if st.msg else None))
            elif isinstance(st, ast.Raise) and conds:
                self._add("raise", None, budget.unparse(st), conds, rename, via, None)
            elif isinstance(st, (ast.For, ast.While, ast.With, ast.Try)):
                for part in ("body", "orelse", "finalbody"):
                    self.walk(getattr(st, part, []) or [], conds, rename, via, scope)
                for h in getattr(st, "handlers", []):
                    self.walk(h.body, conds, rename, via, scope)
            if via is None:
                for call in (n for n in budget.walk(st) if isinstance(n, ast.Call)):
                    self._follow(call, conds, rename)

    def _add(self, kind, test_node, test, conds, rename, via, message) -> None:
        mentioned = _names(test_node, self.budget) if test_node is not None else set()
        if kind == "raise":  # the test the raise sits under (`(yield x)` parses only in a def: no names then)
            try:
                mentioned = _names(ast.parse(conds[-1], mode="eval"), self.budget)
            except SyntaxError:
                mentioned = set()
        params = sorted({rename.get(n, n) for n in mentioned} & self.params)
        if not params:
            return
        condition = " and ".join(conds) if conds else None
        self.budget.spend(64 + len(condition or "") // 16)
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
        self.walk(helper.body, list(conds), mapping, name, _local_names(helper.body, self.budget) | own)


def read_module(source: str, module: str) -> Dict[str, EntryPoint]:
    """The public functions of a wrapper module (source text; `module` is its path in the release).

    SyntaxError for what does not parse; InputError (one line) for what is past the bounds: the
    memory a parse may take (topk_migrate.memory), nesting deeper than Python's recursion takes,
    more than WORK_LIMIT steps, MAX_ENTRY_POINTS, MAX_PARAMS or MAX_GUARDS."""
    from topk_migrate import memory

    memory.check(source, memory.PARSE_BYTES_PER_TOKEN, "parse")
    try:
        tree = ast.parse(source)
        return _read_tree(tree, module)
    except (RecursionError, MemoryError) as e:
        raise InputError(f"nesting too deep to read ({type(e).__name__})") from None
    except ValueError as e:  # a NUL byte (SyntaxError on newer Pythons)
        raise SyntaxError(str(e)) from None


def _read_tree(tree: ast.Module, module: str) -> Dict[str, EntryPoint]:
    budget = _Budget()
    helpers = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("_")}
    out: Dict[str, EntryPoint] = {}
    for node in tree.body:
        budget.spend()
        if not isinstance(node, ast.FunctionDef) or node.name.startswith("_"):
            continue
        if len(out) >= MAX_ENTRY_POINTS:
            raise InputError(f"more than {MAX_ENTRY_POINTS} public functions; not a FlashMLA wrapper as released")
        params = _params(node.args, budget)
        try:
            check_params(params, node.name)
        except SignatureError as e:
            raise InputError(str(e)) from None
        walker = _GuardWalker([p.name for p in params], helpers, budget)
        walker.walk(node.body, [], {}, None)
        if len(walker.guards) > MAX_GUARDS:
            raise InputError(f"{node.name}: more than {MAX_GUARDS} asserts/raises on its parameters")
        out[node.name] = EntryPoint(node.name, module, node.lineno, params, walker.guards)
    return out
