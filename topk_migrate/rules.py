"""Migration rules as plug-ins: each is one package in `topk_migrate.codemods`, found there, never named.

A rule package's `__init__` declares `INFO = RuleInfo(...)` with the standard library only: its id,
summary, the kernel entry points it reads, its parameter and the first kernel release of each
distribution that takes it, whether it is on by default, its hooks and its quick classifier. The byte
prefilter, the config check, the kernel gate and the report formats read that in processes that
never parse a candidate. The hooks live in the package's `rule` module (which may import LibCST),
imported (`load`) only where a file is analysed:
  sites(ctx) -> (new source, [Site])    check, apply, audit; ctx: rule_context.RuleContext (the path, the
                                        text, its LibCST module and scope tree, parsed once for every rule,
                                        the rule's kernel gate, the options, a read-only project view)
  bump(ctx) -> [Finding]                bump, one call site at a time; ctx: bump.context.Context
A `quick` module of the package may answer for the simplest files without LibCST (audit):
quick_sites(tree, source, path, gate) -> [Site] or None.
A rule may carry a proof of its rewrite on its kernel (`proof`, "module:command"): a click command of a
module of its package, which `topk-migrate smoke` runs (`load_proof`; one rule at most declares one).
"""
from __future__ import annotations

import functools
import importlib
from dataclasses import dataclass, field, replace
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

PACKAGE = "topk_migrate.codemods"


@dataclass(frozen=True)
class RuleInfo:
    """What a rule declares of itself (its package's `INFO`), and where the registry found it."""

    id: str  # lower-case words joined by '-': config, suppression comments, reports
    summary: str  # one line: SARIF's shortDescription, `topk-migrate rules`
    help: str  # a paragraph: what it finds and why (SARIF's help, `rules --explain`)
    entry_points: Tuple[str, ...] = ()  # names of the calls it reads: the byte prefilter's needles
    param: Optional[str] = None  # the kernel parameter the rule is about (the kernel gate asks for it)
    # First release of each kernel distribution whose entry points take `param` (None: no release).
    min_kernel: Mapping[str, Optional[str]] = field(default_factory=dict, hash=False, compare=False)
    # The kernel modules its entry points live in -> the distributions that provide each (the first one
    # the module's own): what `--kernel NAME==VERSION` and the project's pins may name.
    providers: Mapping[str, Tuple[str, ...]] = field(default_factory=dict, hash=False, compare=False)
    # Where a kernel release keeps the wrapper modules a bump reads signatures from (a path inside a
    # wheel or source tree) -> the module a call site imports to reach it.
    wrappers: Mapping[str, str] = field(default_factory=dict, hash=False, compare=False)
    default_enabled: bool = True  # off: only with `enable = ["id"]` in [tool.topk-migrate] (bump runs it anyway)
    # Its Rule has a sites hook, a bump hook: declared, not derived, as the prefilter, narrowing, audit's scanners and
    # the report formats read them where the rule module (LibCST) is never imported; `load` refuses a mismatch.
    has_sites: bool = False
    has_bump: bool = False
    quick: Optional[str] = None  # a module of its package, standard library only (see above)
    # "module:command": a module of its package and the click command in it that `topk-migrate smoke` runs;
    # importing the module must stay light (no torch: `topk-migrate --help` imports it)
    proof: Optional[str] = None
    tags: Tuple[str, ...] = ()  # SARIF's rule tags
    module: str = ""  # set by the registry: the package's importable name
    path: str = ""  # set by the registry: the package's __init__.py


LENGTHS = ("reference", "derived", "derived-everywhere")  # where the lengths a rule passes come from (RuleOptions.lengths)


@dataclass(frozen=True)
class RuleOptions:
    """What a project's [tool.topk-migrate] (or the command line) tells every site rule."""

    metadata: Tuple[str, ...] = ()  # extra dotted names known to hold clipped seqlens
    # "reference": the lengths the program already holds, where they are proven right, else `manual`;
    # "derived": where they are not, lengths computed at the call from its own arguments (opt-in: a cost per call);
    # "derived-everywhere": at every site, the reference fix's too (the smoke's proof of that shape on real engines;
    # a fork's choice where the reference fix's known gaps may hold: docs/soundness.md)
    lengths: str = "reference"


class Rule:
    """Base class of a rule's hooks (its package's `rule` module): `info` is the package's INFO."""

    info: RuleInfo
    sites = None  # (rule_context.RuleContext) -> (new_source, [Site]); None: not a site rule
    bump = None  # (bump.context.Context) -> [Finding]; None: says nothing in a bump
    EXAMPLES: Sequence["RuleExample"] = ()  # its documentation and its tests (tests/test_rule_examples.py)

    @property
    def id(self) -> str:
        return self.info.id

    @property
    def param(self) -> Optional[str]:
        return self.info.param

    @property
    def min_kernel(self) -> Mapping[str, Optional[str]]:
        return self.info.min_kernel

    @property
    def entry_points(self) -> Tuple[str, ...]:
        return self.info.entry_points


class RuleError(Exception):
    """A rule package the registry cannot use: one line naming the file."""


def _read_info(name: str) -> RuleInfo:
    module = f"{PACKAGE}.{name}"
    package = importlib.import_module(module)
    path = getattr(package, "__file__", None) or module
    info = getattr(package, "INFO", None)
    if not isinstance(info, RuleInfo):
        raise RuleError(f"{path}: a rule package declares INFO = RuleInfo(...) in its __init__")
    if not info.id or not info.id.replace("-", "").isalnum() or info.id != info.id.lower():
        raise RuleError(f"{path}: INFO.id must be a lower-case name such as \"pass-topk-length\", got {info.id!r}")
    if not isinstance(info.summary, str) or not info.summary or "\n" in info.summary:
        raise RuleError(f"{path}: INFO.summary must be a one-line string")
    if not all(isinstance(e, str) and e.isidentifier() for e in info.entry_points):
        raise RuleError(f"{path}: INFO.entry_points must be a tuple of names")
    if info.quick is not None and not (isinstance(info.quick, str) and info.quick.isidentifier()):
        raise RuleError(f"{path}: INFO.quick must name a module of its package, such as \"quick\"")
    if info.proof is not None and not _is_proof(info.proof):
        raise RuleError(f"{path}: INFO.proof must name a module of its package and its command, such as "
                        "\"smoke.command:smoke_command\"")
    return replace(info, module=module, path=path)


def _is_proof(proof: object) -> bool:
    module, _, command = proof.partition(":") if isinstance(proof, str) else ("", "", "")
    return command.isidentifier() and all(part.isidentifier() for part in module.split("."))


@functools.lru_cache(maxsize=None)
def specs() -> Tuple[RuleInfo, ...]:
    """Every rule in the codemods package (each directory of its __path__), sorted by id. Imports each
    rule package's __init__ (standard library only), never its hooks."""
    import pkgutil  # noqa: PLC0415 - light: not for importing the CLI

    package = importlib.import_module(PACKAGE)
    out: Dict[str, RuleInfo] = {}
    for info in pkgutil.iter_modules(package.__path__):
        if not info.ispkg or info.name.startswith("_"):
            continue
        spec = _read_info(info.name)
        if spec.id in out:
            raise RuleError(f"{spec.path}: rule id {spec.id!r} is also the id of {out[spec.id].path}")
        out[spec.id] = spec
    return tuple(out[k] for k in sorted(out))


def providers() -> Dict[str, Tuple[str, ...]]:
    """Kernel module -> the distributions that provide it, over every rule (each rule's order kept)."""
    out: Dict[str, Tuple[str, ...]] = {}
    for s in specs():
        for module, dists in s.providers.items():
            out[module] = tuple(dict.fromkeys((*out.get(module, ()), *dists)))
    return out


def wrapper_modules() -> Dict[str, str]:
    """Wrapper module path in a kernel release -> the module call sites import, over every rule."""
    out: Dict[str, str] = {}
    for s in specs():
        for path, module in s.wrappers.items():
            out.setdefault(path, module)
    return out


def ids() -> List[str]:
    return [s.id for s in specs()]


def spec(rule_id: str) -> RuleInfo:
    for s in specs():
        if s.id == rule_id:
            return s
    raise KeyError(rule_id)


@functools.lru_cache(maxsize=None)
def load(rule_id: str) -> Rule:
    """The rule's hooks (imports its package's `rule` module: LibCST and all)."""
    s = spec(rule_id)
    module = importlib.import_module(f"{s.module}.rule")
    for value in vars(module).values():
        if isinstance(value, type) and issubclass(value, Rule) and value is not Rule \
                and getattr(value, "info", None) is not None and value.info.id == rule_id:
            rule = value()
            rule.info = s  # the registry's copy: where it was found
            if (rule.sites is not None, rule.bump is not None) != (s.has_sites, s.has_bump):
                raise RuleError(f"{s.path}: INFO.has_sites/has_bump disagree with the hooks of {value.__name__}")
            return rule
    raise RuleError(f"{s.path}: no Rule subclass with info.id {rule_id!r} in {s.module}.rule")


def proof_rule() -> Optional[RuleInfo]:
    """The rule whose proof `topk-migrate smoke` runs: the one that declares one (None: no rule does)."""
    owners = [s for s in specs() if s.proof]
    if len(owners) > 1:
        raise RuleError(f"{owners[1].path}: INFO.proof: `topk-migrate smoke` runs one rule's proof, and "
                        f"{owners[0].id!r} declares one too")
    return owners[0] if owners else None


def load_proof(rule_id: str) -> object:
    """The rule's proof command (imports the module its INFO.proof names)."""
    s = spec(rule_id)
    if not s.proof:
        raise RuleError(f"{s.path}: rule {rule_id!r} declares no proof (INFO.proof)")
    module, _, command = s.proof.partition(":")
    found = getattr(importlib.import_module(f"{s.module}.{module}"), command, None)
    if found is None:
        raise RuleError(f"{s.path}: INFO.proof names {s.proof!r}, and {s.module}.{module} has no {command}")
    return found


def enabled(enable: Sequence[str] = (), disable: Sequence[str] = (), everything: bool = False) -> List[RuleInfo]:
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
        import difflib  # noqa: PLC0415 - on demand: difflib only for an unknown rule id

        hints = [f"{n!r} (did you mean {close[0]!r}?)" if (close := difflib.get_close_matches(n, ids(), 1)) else repr(n)
                 for n in unknown]
        raise ValueError(f"{where}: unknown rule(s) {', '.join(hints)}; rules: {', '.join(ids())}")



@dataclass(frozen=True)
class RuleExample:
    """One of a rule's examples (its EXAMPLES): its documentation (`rules --explain`) and its tests
    (tests/test_rule_examples.py runs every discovered rule's). A site example is checked with
    `--kernel kernel` and `--lengths lengths` (no project pins): its one site of the rule has `status`, a reason holding
    `reason`, and apply gives `after` (None: leaves it as it is). A bump example (`bump` set) is the
    call in a module bumped from the old to the new release fixture, and `status` the verdict."""

    code: str
    status: Optional[str]  # check's status (bump: the verdict); None: no site (no finding)
    reason: str = ""
    after: Optional[str] = None  # what apply makes of it; None: unchanged
    kernel: Optional[str] = None
    bump: Optional[Tuple[str, str]] = None  # (old, new) release fixtures, for a bump example
    lengths: str = "reference"  # RuleOptions.lengths it is checked with (--lengths)


def documentation(rule_id: str) -> Tuple[str, List[RuleExample]]:
    """The rule package's docstring and the rule's examples. Imports the rule."""
    module_doc = importlib.import_module(spec(rule_id).module).__doc__ or ""
    return module_doc.strip(), list(load(rule_id).EXAMPLES)
