"""The public entry points of a FlashMLA wrapper module, read with `ast` (never imported).

For each public top-level function: its parameters (kind, default as source text), the
asserts/raises that guard a parameter and the ops and functions it calls, each with the path
condition under which it runs (`assert topk_length is None` when `not isinstance(tile_scheduler_metadata,
FlashMLASchedMeta)`; `torch.ops.sgl_kernel.sparse_decode_fwd` when `indices is not None`). Guards and
calls in a private helper the entry point calls with `name=name` keywords are followed one level, in
the entry point's own names. A path condition reads a local set once as `x = A if C else None` (A an
expression that is never None: a shape, a size, a constant) as the test on C it stands for (`topk is
None` in a helper is `indices is None`). Each guard and call names the parameters its text mentions
that may no longer hold the caller's argument there (`stale`: reassigned on the way, or a helper's own
name), which a reading of the call leaves undecided.
"""
from __future__ import annotations

import ast
import copy
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
SCHEMA = 2  # bump when the JSON layout changes (cached extractions are then re-read)
KINDS = (POSITIONAL_ONLY, POSITIONAL_OR_KEYWORD, VAR_POSITIONAL, KEYWORD_ONLY, VAR_KEYWORD)  # in a def's order
GUARD_KINDS = ("assert", "raise")

# What one release may hold, however it is read (a wrapper module, a signature file, the cache):
# a real wrapper has a handful of entry points of a few dozen parameters and guards each. Past
# these, the diff and the binding (linear scans per parameter) would cost minutes, so it is refused.
MAX_ENTRY_POINTS = 256
MAX_PARAMS = 128
MAX_GUARDS = 512
MAX_CALLS = 512  # ops and functions an entry point calls (a real one: 2-10)
MAX_EXPORTS = 4096  # names a package's __init__ is recorded to re-export
# Steps (AST nodes visited, and characters of source text made, in 16s) reading one wrapper
# module may take: a real one takes some 10^4-10^5; a crafted one (a helper of 10^5 statements
# followed from 10^5 entry points, 10^5 early returns each adding to every later guard's
# condition) would take hours and gigabytes.
WORK_LIMIT = 4_000_000

_DIST = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?\Z")
_VERSION = re.compile(r"[A-Za-z0-9][A-Za-z0-9.+!_-]*\Z")
_MODULE = re.compile(r"(?:[A-Za-z0-9_][A-Za-z0-9_.-]*/)*[A-Za-z0-9_][A-Za-z0-9_.-]*\.py\Z")
_SHA256 = re.compile(r"[0-9a-f]{64}\Z")
_DOTTED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*\Z")
_CALLEE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\(\))?(?:\.[A-Za-z_][A-Za-z0-9_]*(?:\(\))?)*\Z")  # get_ops().f


class SignatureError(ValueError):
    """Signatures (a signature file, a cache entry) of the wrong shape: one line for the user."""


def is_name(text: Any) -> bool:
    """A Python identifier that can name a function or parameter (what a `def` gives)."""
    return isinstance(text, str) and text.isidentifier() and not keyword.iskeyword(text)


def valid_dist(text: Any) -> bool:
    """A distribution name as PEP 508 spells one."""
    return isinstance(text, str) and len(text) <= 200 and _DIST.match(text) is not None


def version_shaped(text: str) -> bool:
    """Spelt with a version's characters (letters, digits and .+!_-, from a letter or digit), whether or
    not packaging reads it."""
    return _VERSION.match(text) is not None


def valid_version(text: Any) -> bool:
    """A version as PEP 440 spells one (packaging parses it)."""
    if not (isinstance(text, str) and len(text) <= 100 and version_shaped(text)):
        return False
    from packaging.version import Version  # noqa: PLC0415 - light: not for --help

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
    stale: List[str] = field(default_factory=list)  # parameters its text names that may not hold the argument

    def key(self) -> tuple:
        return (self.kind, self.test, self.condition)

    def describe(self) -> str:
        what = f"assert {self.test}" if self.kind == "assert" else self.test
        where = f" when {self.condition}" if self.condition else ""
        return what + where + (f" (in {self.via})" if self.via else "")


@dataclass(frozen=True)
class Callee:
    """An op or function the entry point calls (`torch.ops.sgl_kernel.sparse_decode_fwd`, without its
    overload; `flash_mla.cuda.fwd_kvcache_mla`; a function of the module), on the path to it."""

    name: str
    condition: Optional[str] = None  # None: on every path
    via: Optional[str] = None
    stale: List[str] = field(default_factory=list)

    def describe(self) -> str:
        return f"`{self.name}`" + (f" when {self.condition}" if self.condition else "") + (
            f" (in {self.via})" if self.via else "")


@dataclass
class EntryPoint:
    name: str
    module: str  # path inside the release, e.g. sgl_kernel/flash_mla.py
    line: int
    params: List[Param]
    guards: List[Guard] = field(default_factory=list)
    calls: List[Callee] = field(default_factory=list)

    def param(self, name: str) -> Optional[Param]:
        return next((p for p in self.params if p.name == name), None)

    def positional(self) -> List[Param]:
        return [p for p in self.params if p.positional]

    def signature(self) -> str:
        """As the def spells it, `/` and a bare `*` included."""
        parts = []
        kinds = [p.kind for p in self.params]
        for i, p in enumerate(self.params):
            if p.kind == KEYWORD_ONLY and VAR_POSITIONAL not in kinds[:i] and (i == 0 or kinds[i - 1] != KEYWORD_ONLY):
                parts.append("*")
            star = "*" if p.kind == VAR_POSITIONAL else "**" if p.kind == VAR_KEYWORD else ""
            parts.append(star + p.name + (f"={p.default}" if p.default is not None else ""))
            if p.kind == POSITIONAL_ONLY and (i + 1 == len(kinds) or kinds[i + 1] != POSITIONAL_ONLY):
                parts.append("/")
        return f"{self.name}({', '.join(parts)})"

    def dotted_module(self) -> str:
        """The module as an import names it: sgl_kernel/flash_mla.py -> sgl_kernel.flash_mla."""
        return self.module[:-3].replace("/", ".") if self.module.endswith(".py") else self.module


@dataclass
class Release:
    """What one kernel release exposes: its entry points, and where they were read from."""

    dist: Optional[str]
    version: Optional[str]
    origin: str  # wheel file name (+ sha256) or path read
    entry_points: Dict[str, EntryPoint]
    sha256: Optional[str] = None
    # package -> the entry points its __init__ re-exports (`from sgl_kernel import X` reaches X only if
    # listed); a package not in it, or None, was not read: any name may be reached through it
    exports: Optional[Dict[str, List[str]]] = None

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
                "sha256": self.sha256, "exports": self.exports,
                "entry_points": {n: asdict(e) for n, e in sorted(self.entry_points.items())}}

    @classmethod
    def from_json(cls, data: Any) -> "Release":
        """The release a signature file (or cache entry) holds; SignatureError unless every field has
        the shape `to_json` writes: names are identifiers, modules paths of .py files, each field typed."""
        if not isinstance(data, dict):
            raise SignatureError(f"a JSON object expected, not {type(data).__name__}")
        if type(data.get("schema")) is not int or data["schema"] != SCHEMA:
            raise SignatureError(f"schema {_short(data.get('schema'))}, expected {SCHEMA} (read the release again "
                                 "to write it in this schema)")
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
        return cls(dist, version, origin, eps, sha, _exports_from_json(data.get("exports")))


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


def _exports_from_json(raw: Any) -> Optional[Dict[str, List[str]]]:
    if raw is None:
        return None
    if not isinstance(raw, dict) or len(raw) > MAX_ENTRY_POINTS:
        raise SignatureError("exports is not an object of packages")
    out = {}
    for package, names in raw.items():
        if not (isinstance(package, str) and _DOTTED.match(package) and len(package) <= 200):
            raise SignatureError(f"exports: {_short(package)} is not a package name")
        if not (isinstance(names, list) and len(names) <= MAX_EXPORTS and all(is_name(n) for n in names)):
            raise SignatureError(f"exports of {package}: not a list of names")
        out[package] = list(names)
    return out


def _stale_from_json(g: dict, what: str, names: set) -> List[str]:
    stale = g.get("stale", [])
    if not (isinstance(stale, list) and all(isinstance(n, str) and n in names for n in stale)):
        raise SignatureError(f"{what}: stale names are not parameters of the entry point")
    return list(stale)


def _entry_from_json(name: Any, e: Any) -> EntryPoint:
    if not is_name(name):
        raise SignatureError(f"entry point {_short(name)} is not a Python name")
    what = f"entry point {name}"
    e = _fields(e, what, ("name", "module", "line", "params", "guards"), ("calls",))
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
        g = _fields(g, f"{what}: a guard", ("params", "kind", "test"), ("condition", "message", "via", "stale"))
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
                            _text_or_none(g.get("message"), f"{what}: a message"), via,
                            _stale_from_json(g, f"{what}: a guard", names)))
    raw_calls = e.get("calls", [])
    if not isinstance(raw_calls, list) or len(raw_calls) > MAX_CALLS:
        raise SignatureError(f"{what}: calls is not a list of at most {MAX_CALLS}")
    calls = []
    for c in raw_calls:
        c = _fields(c, f"{what}: a call", ("name",), ("condition", "via", "stale"))
        if not (isinstance(c["name"], str) and len(c["name"]) <= 200 and _CALLEE.match(c["name"])):
            raise SignatureError(f"{what}: a call's name {_short(c['name'])} is not a dotted name")
        via = _text_or_none(c.get("via"), f"{what}: a call's via")
        if via is not None and not is_name(via):
            raise SignatureError(f"{what}: a call's via {_short(via)} is not a Python name")
        calls.append(Callee(c["name"], _text_or_none(c.get("condition"), f"{what}: a condition"), via,
                            _stale_from_json(c, f"{what}: a call", names)))
    return EntryPoint(name, e["module"], e["line"], params, guards, calls)


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


def _stores(node: ast.AST, budget: _Budget) -> List[str]:
    """Every name `node` binds (assignments, loop and with targets, imports, defs), once per binding."""
    out: List[str] = []
    for n in budget.walk(node):
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            out.append(n.id)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.append(n.name)
        elif isinstance(n, ast.alias):
            out.append(n.asname or n.name.split(".")[0])
    return out


_OPPOSITE = {ast.Is: ast.IsNot, ast.IsNot: ast.Is, ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.In: ast.NotIn, ast.NotIn: ast.In}


def negation(test: ast.expr) -> ast.expr:
    """The negation of a test, as a reader writes it (`x is not None`, `not isinstance(...)`)."""
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and type(test.ops[0]) in _OPPOSITE:
        return ast.Compare(test.left, [_OPPOSITE[type(test.ops[0])]()], test.comparators)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return test.operand
    return ast.UnaryOp(ast.Not(), test)


def _never_none(node: ast.expr) -> bool:
    """Whether an expression's value is never None as a wrapper uses it: a constant, a display, a shape,
    a size or count, arithmetic on them."""
    if isinstance(node, ast.Constant):
        return node.value is not None
    if isinstance(node, (ast.List, ast.Tuple, ast.Dict, ast.Set, ast.JoinedStr, ast.ListComp, ast.SetComp,
                         ast.DictComp, ast.GeneratorExp, ast.Lambda, ast.Compare, ast.BinOp)):
        return True
    if isinstance(node, ast.Subscript):
        return isinstance(node.value, ast.Attribute) and node.value.attr == "shape"
    if isinstance(node, ast.Attribute):
        return node.attr == "shape"
    if isinstance(node, ast.Call):
        f = node.func
        return (isinstance(f, ast.Name) and f.id in ("len", "int", "float", "bool", "str", "tuple", "isinstance")
                or isinstance(f, ast.Attribute) and f.attr in ("size", "dim", "numel", "element_size", "stride"))
    return False


def _terminates(body: Sequence[ast.stmt]) -> bool:
    return bool(body) and isinstance(body[-1], (ast.Return, ast.Raise))


def _dotted(node: ast.expr) -> Optional[str]:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


@dataclass(frozen=True)
class _Cond:
    text: str
    names: frozenset


class _Scope:
    """The function body being walked: an entry point's (rename empty) or a helper's, whose names
    `rename` gives in the entry point's."""

    def __init__(self, rename: Dict[str, str], via: Optional[str], scope: set, own: set, once: set,
                 counts: Dict[str, int]):
        self.rename, self.via, self.scope, self.own, self.once = rename, via, scope, own, once
        self.counts = counts  # name -> how many times the body binds it
        self.bases: set = set()  # names whose attributes the body calls (`ops` of `ops.dense_decode_fwd(...)`)
        self.defs: Dict[str, tuple] = {}  # local -> (test that is true iff it is None, its size in nodes)
        self.handles: Dict[str, str] = {}  # local set once to what a function returns -> `module.f()`


class _Rewrite(ast.NodeTransformer):
    """A test in the entry point's names: a helper's parameters renamed, `local is None` for a local
    set once as `A if C else None` replaced by the test on C it stands for."""

    def __init__(self, sc: _Scope, budget: _Budget):
        self.sc, self.budget = sc, budget

    def visit_Compare(self, node: ast.Compare) -> ast.AST:
        if (len(node.ops) == 1 and isinstance(node.ops[0], (ast.Is, ast.IsNot)) and isinstance(node.left, ast.Name)
                and node.left.id in self.sc.defs and isinstance(node.comparators[0], ast.Constant)
                and node.comparators[0].value is None):
            test, size = self.sc.defs[node.left.id]
            self.budget.spend(size)
            test = copy.deepcopy(test)
            return test if isinstance(node.ops[0], ast.Is) else negation(test)
        return self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> ast.AST:
        new = self.sc.rename.get(node.id)
        return ast.Name(new, node.ctx) if new else node


def _headers(st: ast.stmt) -> List[ast.expr]:
    """The expressions a compound statement evaluates on the way in."""
    if isinstance(st, (ast.For, ast.AsyncFor)):
        return [st.iter]
    if isinstance(st, ast.While):
        return [st.test]
    if isinstance(st, (ast.With, ast.AsyncWith)):
        return [i.context_expr for i in st.items]
    if isinstance(st, ast.Match):
        return [st.subject]
    return []


_COMPOUND = (ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try, ast.Match) + (
    (ast.TryStar,) if hasattr(ast, "TryStar") else ())


class _Walker:
    """Collects the guards and the calls of one entry point's body (and of the private helpers it
    calls, one level), each with its path condition."""

    def __init__(self, params: Sequence[str], helpers: Dict[str, ast.FunctionDef], budget: _Budget,
                 imports: Dict[str, str], functions: set):
        self.params = set(params)
        self.helpers = helpers
        self.budget = budget
        self.imports, self.functions = imports, functions
        self.guards: List[Guard] = []
        self.calls: List[Callee] = []
        self._seen_calls: set = set()
        self._followed: set = set()

    def entry(self, body: Sequence[ast.stmt]) -> None:
        """scope: the function's own names (parameters, locals); a test on anything else (a module
        global such as an import-error flag) says nothing about the arguments and is left out."""
        counts = self._counts(body)
        sc = _Scope({}, None, _local_names(body, self.budget) | self.params, set(self.params),
                    {n for n, k in counts.items() if k == 1}, counts)
        sc.bases = self._bases(body)
        self.walk(body, [], sc, set())

    def _bases(self, body: Sequence[ast.stmt]) -> set:
        return {n.func.value.id for st in body for n in self.budget.walk(st) if isinstance(n, ast.Call)
                and isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Name)}

    def _counts(self, body: Sequence[ast.stmt]) -> Dict[str, int]:
        counts: Dict[str, int] = {}
        for st in body:
            for n in _stores(st, self.budget):
                counts[n] = counts.get(n, 0) + 1
        return counts

    def _rewrite(self, node: ast.expr, sc: _Scope) -> tuple:
        for _ in self.budget.walk(node):  # what the copy costs
            pass
        new = _Rewrite(sc, self.budget).visit(copy.deepcopy(node))
        return new, self.budget.unparse(new), frozenset(_names(new, self.budget))

    def _stored(self, st: ast.AST, sc: _Scope) -> set:
        return {sc.rename.get(n, n) for n in _stores(st, self.budget)}

    def walk(self, body: Sequence[ast.stmt], conds: List[_Cond], sc: _Scope, assigned: set) -> set:
        """What `body` may have assigned (in the entry point's names) on the paths that go past it."""
        budget = self.budget
        for st in body:
            budget.spend(len(conds) + 1)  # the path's conditions are copied into what this statement adds
            if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                assigned = assigned | {sc.rename.get(st.name, st.name)}
                continue
            if isinstance(st, ast.If):
                self._calls(st.test, conds, sc, assigned)
                if not _names(st.test, budget) & sc.scope:
                    a = self.walk(st.body, conds, sc, set(assigned))
                    b = self.walk(st.orelse, conds, sc, set(assigned))
                else:
                    node, text, names = self._rewrite(st.test, sc)
                    yes, no = _Cond(text, names), _Cond(budget.unparse(negation(node)), names)
                    a = self.walk(st.body, conds + [yes], sc, set(assigned))
                    b = self.walk(st.orelse, conds + [no], sc, set(assigned))
                    if _terminates(st.body) and not _terminates(st.orelse):
                        conds = conds + [no]
                    elif _terminates(st.orelse) and not _terminates(st.body):
                        conds = conds + [yes]
                assigned = assigned | (set() if _terminates(st.body) else a) | (set() if _terminates(st.orelse) else b)
                continue
            if isinstance(st, _COMPOUND):
                for expr in _headers(st):
                    self._calls(expr, conds, sc, assigned)
                inside = assigned | self._stored(st, sc)
                for part in ("body", "orelse", "finalbody"):
                    self.walk(getattr(st, part, []) or [], conds, sc, set(inside))
                for h in getattr(st, "handlers", []) + getattr(st, "cases", []):
                    self.walk(h.body, conds, sc, set(inside))
                assigned = inside
                continue
            self._calls(st, conds, sc, assigned, skip=self._handle(st, sc))
            if isinstance(st, ast.Assert):
                self._add("assert", st, conds, sc, assigned,
                          st.msg.value if isinstance(st.msg, ast.Constant) and isinstance(st.msg.value, str) else
                          (budget.unparse(st.msg) if st.msg else None))
            elif isinstance(st, ast.Raise) and conds:
                self._add("raise", st, conds, sc, assigned, None)
            assigned = assigned | self._stored(st, sc)
            self._define(st, sc)
        return assigned

    def _handle(self, st: ast.stmt, sc: _Scope) -> Optional[ast.Call]:
        """`ops = get_ops(use_legacy)`, once: `ops.dense_decode_fwd(...)` is then recorded as
        `flash_mla._loader.get_ops().dense_decode_fwd`, and the call that made it is not recorded."""
        if not (isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name)
                and isinstance(st.value, ast.Call)):
            return None
        name = st.targets[0].id
        made = self._callee(st.value.func, sc)
        if made is None or name not in sc.once or name in sc.own or name not in sc.bases:
            return None
        sc.handles[name] = made + "()"
        return st.value

    def _define(self, st: ast.stmt, sc: _Scope) -> None:
        """A local set once as `A if C else None`, `None if C else A` or `A` (A never None): the test
        that is true iff it is None, for the tests that ask. A local set once to a parameter the body
        never reassigns (`indices_in_kvcache = indices`): that parameter."""
        if not (isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name)):
            return
        name, value = st.targets[0].id, st.value
        if name not in sc.once or name in sc.own:
            return
        if isinstance(value, ast.Name) and value.id in sc.own and value.id not in sc.counts:
            target = sc.rename.get(value.id, value.id) if sc.via else value.id
            if target in self.params:
                sc.rename[name] = target
            return
        none = lambda e: isinstance(e, ast.Constant) and e.value is None  # noqa: E731
        if isinstance(value, ast.IfExp) and none(value.orelse) and _never_none(value.body):
            test = negation(self._rewrite(value.test, sc)[0])
        elif isinstance(value, ast.IfExp) and none(value.body) and _never_none(value.orelse):
            test = self._rewrite(value.test, sc)[0]
        elif _never_none(value):
            test = ast.Constant(False)
        else:
            return
        sc.defs[name] = (test, sum(1 for _ in self.budget.walk(test)))

    def _calls(self, node: ast.AST, conds: List[_Cond], sc: _Scope, assigned: set,
               skip: Optional[ast.Call] = None) -> None:
        """The calls `node` makes: a private helper followed (from the entry point only), an op or a
        function of the module recorded."""
        for n in self.budget.walk(node):
            if not isinstance(n, ast.Call) or n is skip:
                continue
            f = n.func
            if sc.via is None and isinstance(f, ast.Name) and f.id in self.helpers:
                if f.id not in self._followed:
                    self._follow(n, conds, assigned)
                continue
            name = self._callee(f, sc)
            if name is not None:
                self._record(name, conds, sc, assigned)

    def _callee(self, func: ast.expr, sc: _Scope) -> Optional[str]:
        chain = _dotted(func)
        if chain is None:
            return None
        root, _, rest = chain.partition(".")
        if root in sc.handles and rest:
            return f"{sc.handles[root]}.{rest}"
        if root in sc.scope:  # a method of a parameter or a local (q.element_size())
            return None
        if root not in self.imports:
            return root if not rest and root in self.functions else None
        full = self.imports[root] + ("." + rest if rest else "")
        parts = full.split(".")
        if parts[0] == "torch":  # of torch, only its registered ops: torch.ops.<namespace>.<op>
            return ".".join(parts[:4]) if parts[:2] == ["torch", "ops"] and len(parts) >= 4 else None
        return full if rest or full not in _BUILTIN_MODULES else None

    def _path(self, conds: List[_Cond], sc: _Scope, assigned: set, names: frozenset = frozenset()) -> tuple:
        condition = " and ".join(c.text for c in conds) if conds else None
        every = set(names).union(*(c.names for c in conds)) if conds else set(names)
        return condition, sorted(every & self.params & assigned)

    def _record(self, name: str, conds: List[_Cond], sc: _Scope, assigned: set) -> None:
        condition, stale = self._path(conds, sc, assigned)
        key = (name, condition, sc.via)
        if key in self._seen_calls:
            return
        self._seen_calls.add(key)
        self.budget.spend(16 + len(condition or "") // 16)
        self.calls.append(Callee(name, condition, sc.via, stale))
        if len(self.calls) > MAX_CALLS:
            raise InputError(f"more than {MAX_CALLS} calls in one entry point; not a FlashMLA wrapper as released")

    def _add(self, kind: str, st: ast.stmt, conds: List[_Cond], sc: _Scope, assigned: set,
             message: Optional[str]) -> None:
        if kind == "assert":
            _, test, mentioned = self._rewrite(st.test, sc)
        else:  # the test the raise sits under
            test, mentioned = self.budget.unparse(st), conds[-1].names
        params = sorted(mentioned & self.params)
        if not params:
            return
        condition, stale = self._path(conds, sc, assigned, mentioned)
        self.budget.spend(64 + len(condition or "") // 16)
        self.guards.append(Guard(params, kind, test, condition, message, sc.via, stale))

    def _follow(self, call: ast.Call, conds: List[_Cond], assigned: set) -> None:
        """A private helper called as `_helper(x=x, ...)`: its guards and calls, in the caller's names.
        Its own names that are not so passed (and what the caller reassigned before) are stale."""
        name = call.func.id
        helper = self.helpers[name]
        self._followed.add(name)
        mapping = {k.arg: k.value.id for k in call.keywords
                   if k.arg and isinstance(k.value, ast.Name) and k.value.id in self.params}
        a = helper.args
        own = {x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs, *(v for v in (a.vararg, a.kwarg) if v))}
        scope = _local_names(helper.body, self.budget) | own
        start = {v for v in mapping.values() if v in assigned} | {n for n in scope if n not in mapping}
        counts = self._counts(helper.body)
        sc = _Scope(mapping, name, scope, own, {n for n, k in counts.items() if k == 1}, counts)
        sc.bases = self._bases(helper.body)
        self.walk(helper.body, list(conds), sc, start)


_BUILTIN_MODULES = frozenset({"typing", "dataclasses", "functools", "math", "os", "sys", "warnings", "logging"})


def _module_names(tree: ast.Module, module: str) -> tuple:
    """(local name -> what it imports, as an absolute dotted name; the module's functions), from its
    top-level statements (and those under a top-level if/try)."""
    package = module[:-3].replace("/", ".").rpartition(".")[0] if module.endswith(".py") else ""
    imports: Dict[str, str] = {}
    functions: set = set()
    stack = list(tree.body)
    while stack:
        st = stack.pop()
        if isinstance(st, ast.FunctionDef):
            functions.add(st.name)
        elif isinstance(st, ast.Import):
            for a in st.names:
                if a.asname:
                    imports[a.asname] = a.name
                else:
                    imports.setdefault(a.name.split(".")[0], a.name.split(".")[0])
        elif isinstance(st, ast.ImportFrom):
            base = st.module or ""
            if st.level:
                up = package.split(".") if package else []
                up = up[:len(up) - (st.level - 1)] if st.level > 1 else up
                base = ".".join(x for x in (*up, base) if x)
            for a in st.names:
                if a.name != "*":
                    imports[a.asname or a.name] = f"{base}.{a.name}" if base else a.name
        elif isinstance(st, (ast.If, ast.Try) + ((ast.TryStar,) if hasattr(ast, "TryStar") else ())):
            stack += list(st.body) + list(st.orelse) + list(getattr(st, "finalbody", []))
            for h in getattr(st, "handlers", []):
                stack += h.body
    return imports, functions


def read_module(source: str, module: str) -> Dict[str, EntryPoint]:
    """The public functions of a wrapper module (source text; `module` is its path in the release).

    SyntaxError for what does not parse; InputError (one line) for what is past the bounds: the
    memory a parse may take (topk_migrate.memory), nesting deeper than Python's recursion takes,
    more than WORK_LIMIT steps, MAX_ENTRY_POINTS, MAX_PARAMS, MAX_GUARDS or MAX_CALLS."""
    from topk_migrate import memory  # noqa: PLC0415 - light: not for --help

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
    imports, functions = _module_names(tree, module)
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
        walker = _Walker([p.name for p in params], helpers, budget, imports, functions)
        walker.entry(node.body)
        if len(walker.guards) > MAX_GUARDS:
            raise InputError(f"{node.name}: more than {MAX_GUARDS} asserts/raises on its parameters")
        out[node.name] = EntryPoint(node.name, module, node.lineno, params, walker.guards, walker.calls)
    return out


# Calls that make a module's names dynamic: what it binds cannot be read from its text.
_DYNAMIC = frozenset({"exec", "eval", "__import__", "import_module"})


def package_names(source: str, module: str) -> tuple:
    """What a package's `__init__` (or a module it star-imports) may bind, read statically: (every
    identifier it mentions: names, imported names, defs, attributes, identifier-like strings such as
    `__all__`'s or those a `globals()[name] = ...` loop reads; the modules it star-imports, absolute;
    whether its names are dynamic: a module-level `__getattr__`, exec/eval/__import__/import_module).
    SyntaxError, InputError as read_module."""
    from topk_migrate import memory  # noqa: PLC0415 - light: not for --help

    memory.check(source, memory.PARSE_BYTES_PER_TOKEN, "parse")
    try:
        tree = ast.parse(source)
    except (RecursionError, MemoryError) as e:
        raise InputError(f"nesting too deep to read ({type(e).__name__})") from None
    except ValueError as e:
        raise SyntaxError(str(e)) from None
    package = module[:-3].replace("/", ".") if module.endswith(".py") else module
    if package.endswith(".__init__"):
        package = package[:-len(".__init__")]
    else:
        package = package.rpartition(".")[0]
    budget = _Budget()
    names: set = set()
    stars: List[str] = []
    dynamic = any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == "__getattr__"
                  for n in tree.body)
    try:
        for n in budget.walk(tree):
            if isinstance(n, ast.Name):
                names.add(n.id)
                dynamic = dynamic or n.id in _DYNAMIC
            elif isinstance(n, ast.alias):
                names.update(n.name.split("."))
                if n.asname:
                    names.add(n.asname)
            elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(n.name)
            elif isinstance(n, ast.Attribute):
                names.add(n.attr)
                dynamic = dynamic or n.attr in _DYNAMIC
            elif isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.isidentifier():
                names.add(n.value)
            if isinstance(n, ast.ImportFrom) and any(a.name == "*" for a in n.names):
                base = n.module or ""
                if n.level:
                    up = package.split(".") if package else []
                    up = up[:len(up) - (n.level - 1)] if n.level > 1 else up
                    base = ".".join(x for x in (*up, base) if x)
                stars.append(base)
    except RecursionError:
        raise InputError("nesting too deep to read (RecursionError)") from None
    return names, stars, dynamic
