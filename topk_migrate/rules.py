"""Migration rules as plug-ins: each is one module in `topk_migrate.codemods`, found there, never named.

A rule module holds one class that derives from `Rule`. Its identity (id, summary, the kernel
entry points it reads, whether it is on by default) is plain literals, read here with `ast`
without importing the module: the byte prefilter, the config check and the report formats
need it in processes that never parse a candidate, and importing a rule imports LibCST.
A rule is imported (`load`) only where a file is analysed.

The engine asks a rule for two things, both optional:
  sites(source, path, gate, metadata) -> (new source, [Site])   check, apply, audit
  bump(ctx) -> [Finding]                                          bump, one call site at a time
and may name a `quick` module that answers for the simplest files without LibCST (audit).
"""
from __future__ import annotations

import ast
import functools
import importlib
import os
import re
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

PACKAGE = "topk_migrate.codemods"
# Class attributes read statically, with their defaults.
_SPEC_FIELDS = {"id": None, "summary": None, "entry_points": (), "default_enabled": True, "quick": None}


class Rule:
    """Base class of a migration rule (see the module docstring for the hooks)."""

    id: str = ""
    summary: str = ""  # one line: SARIF's shortDescription, `topk-migrate rules`
    entry_points: Tuple[str, ...] = ()  # names of the calls it reads: the byte prefilter's needles
    default_enabled: bool = True  # off: only with `enable = ["id"]` in [tool.topk-migrate] (bump runs it anyway)
    param: Optional[str] = None  # the kernel parameter the rule is about
    # First release of each kernel distribution whose entry points take `param` (None: no release).
    min_kernel: Dict[str, Optional[str]] = {}

    # A private module of this package, standard library only, whose quick_sites(tree, source, path, gate)
    # gives the rule's sites of a narrowed file from CPython's AST, or None to let the rule read it
    # (audit classifies what it can there, in processes that never import LibCST); it holds the rule's
    # PARAM and MIN_KERNEL, for the kernel gate.
    quick: Optional[str] = None
    sites = None  # (source, path, gate, metadata) -> (new_source, [Site]); None: not a site rule
    bump = None  # (bump.context.Context) -> [Finding]; None: says nothing in a bump


@dataclass(frozen=True)
class RuleSpec:
    """What is known of a rule without importing it."""

    id: str
    module: str  # importable name
    path: str
    summary: str
    help: str  # the class docstring
    entry_points: Tuple[str, ...]
    default_enabled: bool
    has_sites: bool
    has_bump: bool
    quick: Optional[str] = None


class RuleError(Exception):
    """A rule module the registry cannot use: one line naming the file."""


_CLASS = re.compile(rb"^class\s+\w+\s*\([^)]*\bRule\b[^)]*\)\s*:", re.M)


def _rule_class_source(data: bytes) -> bytes:
    """The top-level class statements deriving from Rule, cut from the file (parsing a rule's
    whole module costs tens of milliseconds in every run); the whole file if a cut would not parse."""
    parts = []
    for m in _CLASS.finditer(data):
        end = re.compile(rb"^(?=[^\s#])", re.M).search(data, m.end())
        parts.append(data[m.start(): end.start() if end else len(data)])
    return b"\n".join(parts) if parts else data


def _read_spec(name: str, path: str) -> Optional[RuleSpec]:
    with open(path, "rb") as f:
        data = f.read()
    try:
        tree = ast.parse(_rule_class_source(data), path)
    except SyntaxError:  # a class body with text at column 0 (a multi-line string): read it all
        tree = ast.parse(data, path)
    classes = [n for n in tree.body if isinstance(n, ast.ClassDef)
               and any(isinstance(b, ast.Name) and b.id == "Rule" for b in n.bases)]
    if not classes:
        return None  # a helper module, not a rule
    if len(classes) > 1:
        raise RuleError(f"{path}: one rule per module, found {', '.join(c.name for c in classes)}")
    cls = classes[0]
    found: Dict[str, object] = dict(_SPEC_FIELDS)
    hooks = set()
    for node in cls.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            hooks.add(node.name)
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        for t in targets:
            if isinstance(t, ast.Name) and t.id in _SPEC_FIELDS and getattr(node, "value", None) is not None:
                try:
                    found[t.id] = ast.literal_eval(node.value)
                except ValueError:
                    raise RuleError(f"{path}:{node.lineno}: {cls.name}.{t.id} must be a literal") from None
    rule_id, summary = found["id"], found["summary"]
    if not isinstance(rule_id, str) or not rule_id.replace("-", "").isalnum() or rule_id != rule_id.lower():
        raise RuleError(f"{path}: {cls.name}.id must be a lower-case name such as \"pass-topk-length\", got {rule_id!r}")
    if not isinstance(summary, str) or not summary:
        raise RuleError(f"{path}: {cls.name}.summary must be a one-line string")
    entry_points = tuple(found["entry_points"])
    if not all(isinstance(e, str) and e.isidentifier() for e in entry_points):
        raise RuleError(f"{path}: {cls.name}.entry_points must be a tuple of names")
    quick = found["quick"]
    if quick is not None and not (isinstance(quick, str) and quick.startswith("_") and quick.isidentifier()):
        raise RuleError(f"{path}: {cls.name}.quick must name a private module of its package, such as \"_x_quick\"")
    return RuleSpec(rule_id, f"{PACKAGE}.{name}", path, summary, ast.get_docstring(cls) or summary, entry_points,
                    bool(found["default_enabled"]), "sites" in hooks, "bump" in hooks, quick)


@functools.lru_cache(maxsize=None)
def specs() -> Tuple[RuleSpec, ...]:
    """Every rule in the codemods package (each directory of its __path__), sorted by id."""
    import pkgutil

    package = importlib.import_module(PACKAGE)
    out: Dict[str, RuleSpec] = {}
    for info in pkgutil.iter_modules(package.__path__):
        if info.ispkg or info.name.startswith("_"):
            continue
        path = os.path.join(info.module_finder.path, info.name + ".py")
        spec = _read_spec(info.name, path)
        if spec is None:
            continue
        if spec.id in out:
            raise RuleError(f"{path}: rule id {spec.id!r} is also the id of {out[spec.id].path}")
        out[spec.id] = spec
    return tuple(out[k] for k in sorted(out))


def ids() -> List[str]:
    return [s.id for s in specs()]


def spec(rule_id: str) -> RuleSpec:
    for s in specs():
        if s.id == rule_id:
            return s
    raise KeyError(rule_id)


@functools.lru_cache(maxsize=None)
def load(rule_id: str) -> Rule:
    """The rule's instance (imports its module: LibCST and all)."""
    s = spec(rule_id)
    module = importlib.import_module(s.module)
    for value in vars(module).values():
        if isinstance(value, type) and issubclass(value, Rule) and value is not Rule and value.id == rule_id:
            return value()
    raise RuleError(f"{s.path}: no Rule subclass with id {rule_id!r} after import")


def enabled(enable: Sequence[str] = (), disable: Sequence[str] = (), everything: bool = False) -> List[RuleSpec]:
    """The rules a run uses: those on by default, plus `enable`, less `disable`.
    everything: every rule not disabled (a bump asks for the whole picture)."""
    return [s for s in specs() if (everything or s.default_enabled or s.id in enable) and s.id not in disable]


def site_needles(enable: Sequence[str] = (), everything: bool = False) -> Tuple[bytes, ...]:
    """The names a file must hold for any enabled site rule to find a call in it."""
    return tuple(sorted({e.encode() for s in enabled(enable, everything=everything) if s.has_sites
                         for e in s.entry_points}))


def check_ids(names: Sequence[str], where: str) -> None:
    """ValueError naming `where` for a rule id no discovered rule has."""
    unknown = [n for n in names if n not in ids()]
    if unknown:
        import difflib

        hints = [f"{n!r} (did you mean {close[0]!r}?)" if (close := difflib.get_close_matches(n, ids(), 1)) else repr(n)
                 for n in unknown]
        raise ValueError(f"{where}: unknown rule(s) {', '.join(hints)}; rules: {', '.join(ids())}")



@dataclass(frozen=True)
class RuleExample:
    """One of a rule's own examples, whatever shape the rule keeps it in (`rules --explain`)."""

    code: str
    status: Optional[str]  # check's status (bump: its verdict); None: no site
    reason: str = ""
    after: Optional[str] = None  # what apply makes of it
    kernel: Optional[str] = None
    bump: Optional[Tuple[str, str]] = None  # (old, new) release fixtures, for a bump example


def documentation(rule_id: str) -> Tuple[str, List[RuleExample]]:
    """The rule module's docstring and the rule's examples (VALID/INVALID, EXAMPLES, BUMP_EXAMPLES),
    as its tests read them. Imports the rule."""
    with open(spec(rule_id).path, "rb") as f:
        module_doc = ast.get_docstring(ast.parse(f.read())) or ""
    cls = type(load(rule_id))
    out: List[RuleExample] = []
    for ex in list(getattr(cls, "INVALID", [])) + list(getattr(cls, "VALID", [])):
        status = getattr(ex.status, "value", ex.status)
        out.append(RuleExample(ex.code, status, ex.reason, ex.after, getattr(ex, "kernel", None)))
    for code, status, *reason in getattr(cls, "EXAMPLES", []):  # (source, status[, text its reason holds])
        out.append(RuleExample(code, getattr(status, "value", status), reason[0] if reason else ""))
    for ex in getattr(cls, "BUMP_EXAMPLES", []):
        out.append(RuleExample(ex.source, ex.verdict, bump=(ex.old, ex.new)))
    return module_doc, out
