"""Kernel gate: does the kernel a call resolves to accept `topk_length`?

Answered statically, without importing the kernel, from (in order) an explicit
pin, the pins of the project or installed distribution that owns the file, and
a kernel interface vendored in the same project. Every search stops at
`project.project_root`; project files are read only if they are small regular
files. Requirements are parsed with `packaging` (PEP 508/440): a pin decides only
when every version it allows, in every environment its markers select, is on
the same side of the first release that has the parameter.
"""
from __future__ import annotations

import ast
import functools
import importlib.util
import json
import os
import re
import shlex
from dataclasses import dataclass, replace
from typing import Dict, Iterable, List, Optional, Sequence, Set, Tuple

from packaging.specifiers import Specifier, SpecifierSet
from packaging.version import Version

from . import bounded, rules
from .project import (
    PROJECT_FILE_LIMIT,
    PROJECT_FILES,
    TEST_DIRS,
    Scope,
    inside,
    is_site_dir,
    is_test_module,
    listing,
    owner,  # the dist-info that installed a file: project.py decides an installed file's project with it
    project_root,
    project_scope,
    read_project_file,
    upward,
)
from .run_context import per_run

MinVersions = Dict[str, Optional[str]]


def normalize(name: str) -> str:
    """A distribution name as PEP 503 compares them (packaging's canonicalize_name): the one normaliser of
    kernels and bump.sources."""
    from packaging.utils import canonicalize_name  # noqa: PLC0415 - on demand: packaging.utils (4-12 ms with packaging.tags)

    return canonicalize_name(name)


@dataclass(frozen=True)
class Pin:
    dist: str  # normalized distribution name
    spec: str  # specifier set, e.g. "==0.4.5" or ">=0.4.3,<0.5"; "" allows every version
    source: str  # where it was found, for the reason text
    marker: str = ""  # environment marker; "" applies everywhere
    extras: Tuple[str, ...] = ()  # the extras it asks for, normalized (`sglang[srt]==0.4.9.post2`)
    via: str = ""  # the engine pin that brings it (`sglang[srt]==0.4.9.post2`: brought_pins); "" the project's own

    def __str__(self) -> str:
        if self.dist == COMPUTED:
            return "dependencies computed when it installs (not read here)"
        extras = f"[{','.join(self.extras)}]" if self.extras else ""
        return f"{self.dist}{extras}{self.spec}" + (f"; {self.marker}" if self.marker else "") \
            + (f" (which {self.via} requires)" if self.via else "")


# A way to install whose dependencies are computed (setup.py's install_requires built by code, dynamic
# dependencies no file of the project lists): it may install any kernel release, so it decides nothing.
COMPUTED = "*"


# -- versions ------------------------------------------------------------------------

# An interval of public versions: (low, low included, high, high included); None is unbounded.
Interval = Tuple[Optional[Version], bool, Optional[Version], bool]
_EVERY: Interval = (None, False, None, False)


def _public(text: str) -> Version:
    return Version(Version(text).public)


def _next_prefix(release: Tuple[int, ...], epoch: int) -> Version:
    """The first version after every version that starts with `release` (for ==X.* and ~=)."""
    bumped = (*release[:-1], release[-1] + 1)
    return Version(f"{epoch}!{'.'.join(map(str, bumped))}.dev0")


def _intervals(s: Specifier) -> List[Interval]:
    """The public versions one specifier allows, as intervals (a superset where PEP 440 is finer).

    A version packaging cannot read or compare decides nothing, whatever packaging raises: not only
    InvalidVersion, but the plain ValueError of int() on a release segment past CPython's 4,300
    digits (`==111...1`), or of str() on one that ~= or .* bumps past it."""
    try:
        return _clause_intervals(s)
    except Exception:
        return [] if s.operator == "===" else [_EVERY]  # `===.py` names no version at all


def _clause_intervals(s: Specifier) -> List[Interval]:
    """_intervals, raising whatever packaging raises."""
    op, text = s.operator, s.version
    if text.endswith(".*"):
        base = Version(text[:-2])
        if base.pre or base.post or base.dev:
            return [_EVERY]
        lo = Version(f"{base.epoch}!{'.'.join(map(str, base.release))}.dev0")
        hi = _next_prefix(base.release, base.epoch)
        return [(lo, True, hi, False)] if op == "==" else [(None, False, lo, False), (hi, True, None, False)]
    if op == "===":  # arbitrary equality: that exact string, which no other spelling matches
        v = Version(text)
        return [(v, True, v, True)] if str(v) == text and not v.local else []
    v = _public(text)
    if op == "==":
        return [(v, True, v, True)]
    if op == "!=":
        if Version(text).local:  # excluding one local build leaves its public version allowed
            return [_EVERY]
        return [(None, False, v, False), (v, False, None, False)]
    if op == ">=":
        return [(v, True, None, False)]
    if op == ">":
        return [(v, False, None, False)]
    if op == "<=":
        return [(None, False, v, True)]
    if op == "<":
        return [(None, False, v, False)]
    if op == "~=" and len(v.release) >= 2:
        return [(v, True, _next_prefix(v.release[:-1], v.epoch), False)]
    return [_EVERY]


def _meet(a: Interval, b: Interval) -> Optional[Interval]:
    lo, lo_in = a[0], a[1]
    if b[0] is not None and (lo is None or b[0] > lo or (b[0] == lo and not b[1])):
        lo, lo_in = b[0], b[1]
    hi, hi_in = a[2], a[3]
    if b[2] is not None and (hi is None or b[2] < hi or (b[2] == hi and not b[3])):
        hi, hi_in = b[2], b[3]
    if lo is not None and hi is not None and (lo > hi or (lo == hi and not (lo_in and hi_in))):
        return None
    return (lo, lo_in, hi, hi_in)


# Version clauses one decision weighs, and kernel pins one install may hold. Real projects have a
# handful; each `!=` splits the intervals held, so a fork's thousands of them would cost time
# quadratic in what it wrote. Past either bound the pins decide nothing (the site is manual).
MAX_CLAUSES = 64
MAX_PINS = 64


def clause_count(spec: str) -> int:
    return spec.count(",") + 1 if spec else 0


def allowed(spec: str) -> List[Interval]:
    """Every public version `spec` allows (pre-releases included), as disjoint-enough intervals;
    [_EVERY] (a superset that decides nothing) past MAX_CLAUSES."""
    if clause_count(spec) > MAX_CLAUSES:
        return [_EVERY]
    try:
        clauses = list(SpecifierSet(spec))
    except Exception:  # not a specifier set packaging reads: it decides nothing
        return [_EVERY]
    out = [_EVERY]
    for s in clauses:
        ranges = _intervals(s)
        out = [m for a in out for b in ranges if (m := _meet(a, b)) is not None]
    return out


def decide(spec: str, floor: Optional[str]) -> Optional[bool]:
    """True if every version `spec` allows is >= floor, False if none is, None otherwise.

    floor None: no release has the parameter. An unsatisfiable spec decides nothing.
    """
    ranges = allowed(spec)
    if not ranges:
        return None
    if floor is None:
        return False
    try:
        f = Version(floor)
    except Exception:  # a rule's floor packaging cannot read: nothing is decided against it
        return None
    if all(lo is not None and lo >= f for lo, _, _, _ in ranges):
        return True
    if all(hi is not None and (hi < f or (hi == f and not hi_in)) for _, _, hi, hi_in in ranges):
        return False
    return None


# -- the kernel tables --------------------------------------------------------------------
# Which distributions can provide a kernel imported from a top-level module (the first is the one
# `--kernel MODULE==VERSION` means), and which of their versions take a parameter, are the rules'
# data (RuleInfo.providers, RuleInfo.min_kernel): rules.providers() merges the first.

EXAMPLE_KERNEL = "sglang-kernel==0.4.6"  # shown where a kernel must be declared


_DECLARATION = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_.-]*)\s*:\s*([A-Za-z_][A-Za-z0-9_]*)\s*$")


@dataclass(frozen=True)
class Declared:  # (installed.py says what a declaration is for)
    """`flash_mla:topk_length`: the kernel module's sparse entry point takes the parameter."""

    module: str  # top-level module the declaration is about
    param: str
    source: str  # --kernel, or the pyproject.toml key it came from

    def __str__(self) -> str:
        return f"{self.module}:{self.param}"

    @property
    def dist(self) -> str:  # no distribution: a declaration is about an interface, not a release
        return ""


def _module_of(name: str) -> str:
    """The top-level module a declaration names: itself, or the module a known distribution provides."""
    known = rules.providers()
    if name in known:
        return name
    dist = normalize(name)
    for module, dists in known.items():
        if dists[0] == dist:
            return module
    return name.replace("-", "_").split(".")[0]


def parse_declaration(text: str, source: str) -> Optional[Declared]:
    """`MODULE:PARAM` (or `DISTRIBUTION:PARAM` of a known kernel distribution), else None."""
    m = _DECLARATION.match(text)
    if not m:
        return None
    return Declared(_module_of(m.group(1)), m.group(2), source)


def parse_pin(text: str, source: str) -> Pin:
    """--kernel or [tool.topk-migrate] kernel: a kernel distribution (or the module users
    import, `sgl_kernel==0.4.5` meaning sglang-kernel) and a version specifier. ValueError
    with a one-line message saying what is expected otherwise."""
    kernel_dists = rules.providers()
    dists = sorted({d for ds in kernel_dists.values() for d in ds})
    expected = (f"expected NAME==VERSION (or another version specifier), NAME a kernel distribution or the "
                f"module it provides, e.g. {EXAMPLE_KERNEL} or sgl_kernel==0.4.6 "
                f"(distributions: {', '.join(dists)}; modules: {', '.join(sorted(kernel_dists))})")
    declared = parse_declaration(text, source)  # `flash_mla:topk_length`: the interface's capability
    if declared is not None:
        return declared  # type: ignore[return-value]
    expected += "; or MODULE:PARAM for a kernel whose interface takes PARAM (flash_mla:topk_length)"
    # (its marker grammar: the costliest import here)
    from packaging.requirements import Requirement  # noqa: PLC0415 - on demand: packaging.requirements, for a pin to parse

    try:
        req = Requirement(text.strip())
    except Exception:  # InvalidRequirement, or whatever else packaging raises on what it cannot read
        raise ValueError(f"{expected}; got {text!r}") from None
    if not req.specifier or req.url or req.marker or req.extras:
        raise ValueError(f"{expected}; got {text!r}")
    raw = req.name.strip()
    if raw in kernel_dists:  # the module name users see in their imports
        dist = kernel_dists[raw][0]
    else:
        dist = normalize(raw)
        if dist not in dists:
            raise ValueError(f"unknown kernel {raw!r}: {expected}")
    return Pin(dist, str(req.specifier), source)


def accepts(pin: Pin, min_versions: MinVersions) -> Optional[bool]:
    """True/False when every version the pin allows does/doesn't accept topk_length; None if unknown."""
    if pin.dist not in min_versions:
        return None
    return decide(pin.spec, min_versions[pin.dist])


# -- reading pins out of project files ------------------------------------------------------


def _requirement(text: str, source: str, extra_marker: str = "") -> Optional[Pin]:
    """The pin a PEP 508 line makes, or None where packaging cannot read it (whatever it raises: a line
    it cannot read pins nothing)."""
    from packaging.requirements import Requirement  # noqa: PLC0415 - on demand: packaging.requirements, for a pin to parse

    try:
        req = Requirement(text)
    except Exception:
        return None
    marker = str(req.marker) if req.marker else ""
    if extra_marker:
        marker = f"({marker}) and {extra_marker}" if marker else extra_marker
    extras = tuple(sorted(normalize(e) for e in req.extras))
    if req.url:
        return _url_pin(req.url, normalize(req.name), source, marker, extras)
    return Pin(normalize(req.name), str(req.specifier), source, marker, extras)


def _url_pin(url: str, name: str, source: str, marker: str, extras: Tuple[str, ...]) -> Pin:
    """`name @ URL` (round Z): the release a wheel's or an sdist's file name, or a git URL's tag, names; for the
    engine or a kernel distribution one that decides nothing where the URL names none (another is unpinned)."""
    base = url.split("#", 1)[0].split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1]
    wheel, sdist = _WHEEL.search(base), _SDIST.match(base)
    tag = re.search(r"@v?(\d+(?:\.\d+)+(?:\.?post\d+)?)$", url.split("#", 1)[0]) if "git+" in url else None
    version = wheel.group(2) if wheel else sdist.group(2) if sdist else tag.group(1) if tag else None
    if version is not None:
        return Pin(name, f"=={version}", f"{source} (a URL of that release)", marker, extras)
    if name == ENGINE or _kernel_words().fullmatch(name):
        return Pin(COMPUTED, "", f"{source} ({name} from a URL that names no release)", marker)
    return Pin(name, "", source, marker, extras)


_INCLUDE = re.compile(r"^(-r|--requirement|-c|--constraint)(?:\s*=\s*|\s+|(?<=-r)|(?<=-c))(\S+)")
_LETTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")


def without_options(line: str) -> str:
    """A requirements line (no line feed) cut before its first pip option, `pkg==1 --hash=sha256:...`:
    at the blanks before the first `-x` or `--x` (x an ASCII letter) that a blank precedes, what
    `re.sub(r"\\s+--?[A-Za-z].*$", "", line)` cut. That regex re-read a run of blanks from each of its
    starts: a line `a` + 80,000 blanks + `b` cost 14 s. Here each `-` is looked at once (str.find from the
    one before) and the blanks before the cut are stripped once: linear in the line."""
    at = line.find("-")
    while at >= 0:
        after = line[at + 1: at + 3]
        if at and line[at - 1].isspace() and (after[:1] in _LETTERS or after[:1] == "-" and after[1:] in _LETTERS):
            return line[:at].rstrip()  # str.isspace, rstrip and the regex's \s agree on every code point
        at = line.find("-", at + 1)
    return line


MAX_INCLUDE_DEPTH = 16  # -r/-c nesting followed; real projects use two or three levels


def requirements_file(path: str, root: str, rel: str, seen: Optional[Set[str]] = None, depth: int = 0) -> List[Pin]:
    """The pins of a requirements file and of the files it includes (-r/-c, relative to it).

    Constraints count as pins: they bound the version pip may install. An include that was already read (a
    cycle) adds nothing; one that leaves the project root, lies deeper than MAX_INCLUDE_DEPTH or cannot be
    read is not followed, and what it may add decides nothing (it may install the kernel: round J2).
    """
    seen = set() if seen is None else seen
    real = os.path.realpath(path)
    if real in seen or os.path.exists(real) and not os.path.isfile(real):  # (a device, a FIFO: no file pip reads)
        return []
    if depth > MAX_INCLUDE_DEPTH or not inside(real, root):  # what it adds is not read: it decides nothing
        return [Pin(COMPUTED, "", f"{rel} (an include not followed)")]
    seen.add(real)
    text = read_project_file(path)
    if text is None:
        return _unread(path, rel) if os.path.exists(path) else [Pin(COMPUTED, "", f"{rel} (an include not found)")]
    pins: List[Pin] = []
    for line in re.sub(r"\\\r?\n", " ", text.lstrip("\ufeff")).splitlines():
        line = re.sub(r"(^|\s)#.*$", "", line).strip()
        if not line:
            continue
        m = _INCLUDE.match(line)
        if m:
            target = m.group(2)
            if "://" not in target:
                inc = os.path.join(os.path.dirname(path), target)
                pins += requirements_file(inc, root, project_label(inc, root), seen, depth + 1)
            else:  # (what a remote file installs is not read: it decides nothing, round Z)
                pins.append(Pin(COMPUTED, "", f"{rel} (includes {target[:80]}, not read)"))
            continue
        if line.startswith("-"):  # -e, --index-url, -f ...: no version of a kernel
            continue
        pin = _requirement(without_options(line), rel)
        if pin is not None:
            pins.append(pin)
    return pins


def _toml(text: str) -> dict:
    try:
        return bounded.toml(text)
    except ValueError:
        return {}


def _strings(value) -> List[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def pyproject_pins(text: str, rel: str) -> List[Pin]:
    """[project] dependencies, optional-dependencies (as `extra == NAME`) and [dependency-groups]."""
    doc = _toml(text)
    project = doc.get("project") if isinstance(doc.get("project"), dict) else {}
    pins = [_requirement(r, rel) for r in _strings(project.get("dependencies"))]
    for table in (project.get("optional-dependencies"), doc.get("dependency-groups")):
        if isinstance(table, dict):
            for group, reqs in table.items():
                pins += [_requirement(r, rel, f'extra == "{group}"') for r in _strings(reqs)]
    return [p for p in pins if p is not None]


# configparser's `option = value` line, `(?P<option>.*?)\s*(?P<vi>=|:)\s*(?P<value>.*)$`, whose lazy `.*?` then
# `\s*` re-read a run of blanks from each of its starts (a setup.cfg line `a` + 100,000 blanks + `b`: minutes).
# Here the option runs to the first delimiter, each character read once; configparser strips what trails it.
_CFG_OPTION = re.compile(r"(?P<option>[^=:]*)(?P<vi>[=:])\s*(?P<value>.*)$")


def _setup_cfg(text: str):
    """The setup.cfg parsed (its option lines read by _CFG_OPTION), or None where configparser refuses it."""
    import configparser  # noqa: PLC0415 - on demand: configparser only for a setup.cfg

    cfg = configparser.ConfigParser(interpolation=None)
    cfg._optcre = _CFG_OPTION  # (read as .match(line).group("option", "vi", "value") from 3.9 to 3.13)
    try:
        cfg.read_string(text)
    except configparser.Error:
        return None
    return cfg


def setup_cfg_pins(text: str, rel: str) -> List[Pin]:
    """[options] install_requires and [options.extras_require]."""
    cfg = _setup_cfg(text)
    if cfg is None:
        return []
    lines = lambda v: [s.split(";", 1)[0].strip() if s.strip().startswith(";") else s.strip() for s in v.splitlines()]
    pins = [_requirement(r, rel) for r in lines(cfg.get("options", "install_requires", fallback="")) if r]
    if cfg.has_section("options.extras_require"):
        for group, value in cfg.items("options.extras_require"):
            pins += [_requirement(r, rel, f'extra == "{group}"') for r in lines(value) if r]
    return [p for p in pins if p is not None]


def setup_py_pins(text: str, rel: str) -> List[Pin]:
    """install_requires / extras_require of setup(...), read statically: string literals only
    (in the call, or in a module-level name it passes)."""
    tree = bounded.python_facts(text)
    if tree is None:
        return []
    return _setup_call_pins(tree, rel)[0]


def _setup_call_pins(tree: ast.Module, rel: str) -> Tuple[List[Pin], bool]:
    """setup(...)'s literal pins, and whether its install_requires or extras_require is computed."""
    names = {t.id: node.value for node in tree.body if isinstance(node, ast.Assign)
             for t in node.targets if isinstance(t, ast.Name)}

    def literal(node):
        if isinstance(node, ast.Name) and node.id in names:
            node = names[node.id]
        try:
            return ast.literal_eval(node)
        except (ValueError, SyntaxError, TypeError, RecursionError, MemoryError):
            return None

    pins: List[Optional[Pin]] = []
    computed = False
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            for kw in node.keywords:
                value = literal(kw.value) if kw.arg in ("install_requires", "extras_require") else None
                if kw.arg == "install_requires":
                    reqs = value.splitlines() if isinstance(value, str) else value
                    computed |= not isinstance(reqs, (list, tuple))
                    pins += [_requirement(r, rel) for r in _strings(list(reqs) if isinstance(reqs, (list, tuple)) else [])]
                elif kw.arg == "extras_require":
                    computed |= not isinstance(value, dict)
                    for group, reqs in (value if isinstance(value, dict) else {}).items():
                        pins += [_requirement(r, rel, f'extra == "{group}"') for r in _strings(reqs)]
    return [p for p in pins if p is not None], computed


MAX_NAMED_FILES = 64  # side files a project file's strings may name, read as its dependencies


def computed_ways(name: str, text: str, path: str, root: str) -> List[List[Pin]]:
    """Where a project file computes its dependencies (setup.py's install_requires built by code, a
    setup.cfg `file:` directive, pyproject.toml's dynamic dependencies), the ways it may install: each
    file of the project its strings name, read as a requirements file, and (setup.py) every pin its code
    spells; where it names no file of the project, one way that decides nothing."""
    computed, strings = _computed_dependencies(name, text)
    if not computed:
        return []
    rel = project_label(path, root)
    named = _named_files(strings, os.path.dirname(path), root)
    ways = [requirements_file(f, root, project_label(f, root)) for f in named]
    if name == "setup.py":
        ways.append(spelled_pins(text, rel))
    return ways if named else ways + [[Pin(COMPUTED, "", rel)]]


def _computed_dependencies(name: str, text: str) -> Tuple[bool, List[str]]:
    """Whether the project file computes its dependencies, and the strings that may name the files."""
    if name == "setup.py":
        tree = bounded.python_facts(text)
        if tree is None:
            return False, []
        strings = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
        return _setup_call_pins(tree, name)[1], strings
    if name == "setup.cfg":
        files = re.findall(r"(?m)^\s*(?:install_requires|[\w.-]+)\s*=\s*file:\s*(.+)$", text)
        return bool(files), [f.strip() for line in files for f in line.split(",")]
    doc = _toml(text)
    project = doc.get("project") if isinstance(doc.get("project"), dict) else {}
    dynamic = project.get("dynamic") if isinstance(project.get("dynamic"), list) else []
    computed = any(d in ("dependencies", "optional-dependencies") for d in dynamic)
    return computed, list(_toml_strings(doc.get("tool"))) if computed else []


def _toml_strings(value, depth: int = 0) -> Iterable[str]:
    """Every string of a TOML value (a build backend's table may name its requirement files anywhere)."""
    if depth > 16:
        return
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _toml_strings(v, depth + 1)
    elif isinstance(value, list):
        for v in value:
            yield from _toml_strings(v, depth + 1)


def _named_files(strings: Sequence[str], directory: str, root: str) -> List[str]:
    """The requirements files (`.txt`, `.in`) of the project the strings name, relative to `directory` or
    to one of its folders (`os.path.join("deps", "runtime.txt")` spells the name and the folder apart)."""
    folders = [directory] + [os.path.join(directory, n) for n in listing(directory)
                             if os.path.isdir(os.path.join(directory, n)) and not n.startswith(".")]
    found: List[str] = []
    for text in dict.fromkeys(strings):
        if not text or len(text) > 200 or "\n" in text or "\0" in text or os.path.isabs(text):
            continue
        for folder in folders:
            cand = os.path.normpath(os.path.join(folder, text))
            if cand.endswith((".txt", ".in")) and os.path.isfile(cand) and inside(cand, root) and cand not in found:
                found.append(cand)
                break
        if len(found) >= MAX_NAMED_FILES:
            break
    return found


def metadata_fields(text: str) -> Tuple[Optional[str], Optional[str], List[str]]:
    """Name, Version and Requires-Dist values of a METADATA file (the header part), as the email parser
    reads them: a folded line continues its field (the last Name and Version where one repeats)."""
    from email.parser import HeaderParser  # noqa: PLC0415 - on demand: email.parser (7-12 ms), for an installed distribution

    name = version = None
    requires = []
    header = text.partition("\n\n")[0]  # the parser would read the description after it too, only to skip it
    # raw_items: the values as written (compat32 would turn one with surrogates into a Header object)
    for key, value in HeaderParser().parsestr(header, headersonly=True).raw_items():
        key, value = key.strip().lower(), value.replace("\r", "").replace("\n", "").strip()  # unfolded
        if key == "name":
            name = value
        elif key == "version":
            version = value
        elif key == "requires-dist":
            requires.append(value)
    return name, version, requires


def project_label(path: str, root: str) -> str:
    """How a project file is named in a report: from the working directory where the project lies under
    it (`python/pyproject.toml`, as the sites' paths are), else from the project's root."""
    shown_root = os.path.relpath(root)
    rel = os.path.relpath(path, root if shown_root.startswith("..") else os.curdir)
    return rel.replace(os.sep, "/")


@per_run
def file_pins(directory: str, root: str) -> Tuple[Tuple[Pin, ...], ...]:
    """The pins of each project file in `directory`, one tuple per way to install (file_ways); read once per
    run, however many candidate files share the directory."""
    out: List[List[Pin]] = []
    for name in listing(directory):
        if _may_install(name):
            out += file_ways(os.path.join(directory, name), root)
    return tuple(map(tuple, out))


def file_ways(path: str, root: str) -> List[List[Pin]]:
    """The ways to install one file of the project spells (the directories above a module, file_pins, and
    every other file under the root, tree_ways): a project file's dependencies and what it computes them
    from (poetry's tables, uv's overrides, a kernel distribution's own release); a requirements or
    constraints file's pins, whatever its name; a recipe's spelled pins (conda's single `=` too); and one
    that decides nothing for a line naming a kernel that none of them reads. A Python file (a bootstrap
    script) gives the pins its installer calls spell, and one that decides nothing where it names a kernel with
    a version it computes; its inline script metadata (PEP 723); and each kernel or engine pin and tagged engine
    image its strings spell, but a message's (_pins_in_strings). A file too big to
    read decides nothing where its name says it installs; another (a tokenizer's vocabulary) installs nothing;
    a binary one (a wheel, an archive) is no recipe."""
    name, rel = os.path.basename(path), project_label(path, root)
    if name.lower().endswith(".whl"):  # a vendored wheel: a recipe may install the folder's wheels by a glob (round T)
        return [[Pin(normalize(w), f"=={v}", rel) for w, v in _WHEEL.findall(name)]]
    if name.lower().endswith(_SDISTS):  # a vendored source archive, as pip names one (round Y: `pip install /wheels/*`)
        return [[Pin(normalize(w), f"=={v}", rel) for w, v in _SDIST.findall(name)]]
    if name.lower().endswith(".conda"):  # a conda package, as conda names one (`name-version-build.conda`, round AA)
        return [[Pin(normalize(w), f"=={v}", rel) for w, v in _CONDA_PACKAGE.findall(name)]]
    text = read_project_file(path)
    if text is None:
        return [_unread(path, rel)] if name in PROJECT_FILES or _named_to_install(name) else []
    if name in PROJECT_FILES:
        parse = {"pyproject.toml": pyproject_pins, "setup.cfg": setup_cfg_pins, "setup.py": setup_py_pins}[name]
        extra = _own_release(text, rel) + _tool_pins(text, rel) if name == "pyproject.toml" else []
        ways = [parse(text, rel) + extra] + computed_ways(name, text, path, root)
        if name == "pyproject.toml":  # uv's overrides and constraints replace what the project declares
            ways += _poetry_choices(text, rel)
            ways.append(spelled_pins(" ".join(_UV_PINS.findall(text)), rel))
            others = _other_tables(text)  # pixi's, hatch's environments (round U); uv's sources, pdm's overrides (AP)
            ways.append(_mentioned_pins(others, rel, False) + _engine_mentions(others, rel) + _engine_blocks(text, rel))
            ways += toml_kernel_ways(text, rel, name)  # (round BI: a kernel's table at any depth)
        return ways
    if "\0" in text[:8192]:  # an archive, a wheel, a compiled library: no recipe pip or a shell reads
        return []
    if name.lower().endswith(".ipynb"):  # a notebook runs its cells' `!pip install ...` (round BH: a Colab recipe)
        text = _notebook_code(text)
    if name.endswith(_REQUIREMENT_SUFFIXES) or "requirements" in name or "constraints" in name:
        return [requirements_file(path, root, rel) + _mentioned_pins(text, rel, True)
                + _named_releases(text, rel, True)]
    python = name.endswith(_PYTHON_SUFFIXES) or _PYTHON_TEXT.search(text[:4096])
    tables = [] if python else toml_kernel_ways(text, rel, name)  # (round BI: `[feature.x.sgl-kernel]`, any name)
    if _spells_no_install(text):
        return tables  # names no installer, kernel or engine: nothing to read, parsed or not (the tree's modules)
    tree = bounded.python_facts(text) if python else None
    if tree is not None:  # (a shell script with a Python heredoc, or Python that does not parse: a recipe's text)
        return [_python_installs(tree, rel), _script_metadata_pins(text, rel), *_pins_in_strings(tree, rel)]
    text, scripts = _python_heredocs(text)
    embedded = [p for body in scripts for t in [bounded.python_facts(body)]  # (what a here-document prints is its
                for p in (_python_installs(t, rel) + [q for w in _pins_in_strings(t, rel, printing=True) for q in w]
                          if t is not None else _mentioned_pins(body, rel, False))]  # output: round AH)
    yaml = name.endswith((".yml", ".yaml"))
    conda = _CONDA_PIN.sub(r"\1==", text) if yaml else text
    return tables + [spelled_pins(conda, rel) + _mentioned_pins(text, rel, False) + _engine_refs(text, rel) + embedded
            + _engine_mentions(text, rel) + (_conda_engine(text, rel) if yaml else [])
            + _named_releases(text, rel, "lock" in name.lower()) + _engine_blocks(text, rel)
            + _recipe_includes(text, path, root, rel) + _installed_from_paths(text, path, root, rel)]


MAX_TOML_KEYS = 20000  # a TOML document's keys walked for a kernel's name; past it the rest decide nothing
_TOML_SOURCES = ("path", "git", "url", "file")  # a table installing from these names no release (round BI)


def toml_kernel_ways(text: str, rel: str, name: str) -> List[List[Pin]]:
    """Round BI: a TOML file read by its structure (pixi's `[feature.a100.pypi-dependencies.sgl-kernel]` then
    `version = "==0.2.5"`): each key or table naming a kernel distribution (normalized), at any depth, whose value is
    a version string or a table holding `version` is a pin, a way of its own (a feature, an environment); one holding
    `path`/`git`/`url` instead decides nothing; another table (`index = ...`) or value pins nothing. Where the
    text does not parse, a `.toml` or Pipfile is read by its table headers' lines (_toml_header_pins)."""
    low = text.lower()
    if not any(d.split("-")[0].lower() in low for ds in rules.providers().values() for d in ds):
        return []  # (no kernel's first word: `_names_a_kernel` misses `.sgl-kernel]`, a dotted header's part)
    try:
        document = bounded.toml(text)
    except ValueError:
        return [[p] for p in _toml_header_pins(text, rel)] if name.endswith(".toml") or name == "Pipfile" else []
    kernels = {normalize(d) for ds in rules.providers().values() for d in ds}
    ways: List[List[Pin]] = []
    todo: List[object] = [document]
    for _ in range(MAX_TOML_KEYS):
        if not todo:
            return ways
        value = todo.pop()
        items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
        for key, inner in items:
            if isinstance(key, str) and normalize(key) in kernels:
                ways += [[p] for p in _toml_value_pins(normalize(key), inner, rel)]
            if isinstance(inner, (dict, list)):
                todo.append(inner)
    return ways + [[Pin(COMPUTED, "", f"{rel} (more TOML keys than are read)")]]


def _toml_value_pins(dist: str, value: object, rel: str) -> List[Pin]:
    """The pin a kernel's TOML value makes: a version string (poetry's `^`/`~` with their ceilings, a bare
    version exact), a table's `version`; a table's `path`/`git`/`url` decides nothing; anything else pins nothing."""
    if isinstance(value, dict):
        if isinstance(value.get("version"), str):
            value = value["version"]
        elif any(k in value for k in _TOML_SOURCES):
            return [Pin(COMPUTED, "", f"{rel} ({dist} from a {next(k for k in _TOML_SOURCES if k in value)}, "
                                      "no release read)")]
        else:
            return []
    if not isinstance(value, str):
        return []
    pins = _keyed_pins(f'{dist} = "{value}"', rel, {dist}) if '"' not in value else []
    return pins or [Pin(COMPUTED, "", f"{rel} ({dist} = {value[:40]!r}, a version not read)")]


_TOML_HEADER = re.compile(r"""^\s*\[\[?\s*([^\]]*?)\s*\]\]?\s*(?:#.*)?$""")


def _toml_header_pins(text: str, rel: str) -> List[Pin]:
    """A TOML text that does not parse, read by lines: a table whose header's last part names a kernel is read by its
    `version = "..."` line (or its `path`/`git`/`url` line: decides nothing); `name = {version = ...}` inline."""
    kernels = {normalize(d) for ds in rules.providers().values() for d in ds}
    pins: List[Pin] = []
    table: Optional[str] = None
    for line in text.splitlines()[:50000]:
        header = _TOML_HEADER.match(line)
        if header:
            last = header.group(1).rsplit(".", 1)[-1].strip().strip("\"'")
            table = normalize(last) if normalize(last) in kernels else None
            continue
        key = _KEYED.match(line)
        if table is not None and key is not None and key.group(1) in ("version", *_TOML_SOURCES):
            pins += _toml_value_pins(table, {key.group(1): key.group(2)}, rel)
        inline = _INLINE_TABLE.match(line)
        if inline and normalize(inline.group(1)) in kernels:
            fields = dict(_TABLE_FIELD.findall(inline.group(2)))
            pins += _toml_value_pins(normalize(inline.group(1)), fields, rel)
    return pins


def _notebook_code(text: str) -> str:
    """A Jupyter notebook's code cells' sources as written (`!pip install ...`, `%pip install ...`, Python), read as a
    recipe's text (its markdown cells are documentation); the file's own text where it is no notebook JSON."""
    try:
        cells = json.loads(text).get("cells", [])
        return "\n".join("".join(c["source"]) if isinstance(c["source"], list) else str(c["source"])
                         for c in cells if isinstance(c, dict) and "source" in c and c.get("cell_type", "code") == "code")
    except (ValueError, RecursionError, AttributeError, TypeError):
        return text


def _spells_no_install(text: str) -> bool:
    """A text naming no installer (`install`, pip, uv), kernel distribution or the engine: it spells no pin, tag or
    include, Python or a recipe (round BG: hidden and doc folders' files, read by their text as every folder's are)."""
    return ("install" not in text and not ("pip" in text or "uv" in text) and ENGINE not in text.lower()
            and not _names_a_kernel(text))


def _names_a_kernel(text: str) -> bool:
    """_kernel_words' search, skipped where ASCII text holds no distribution's first word (case-insensitive, as the
    search is): its cost over hidden and doc folders' files (round BG)."""
    if text.isascii():
        low = text.lower()
        if not any(d.split("-")[0].lower() in low for ds in rules.providers().values() for d in ds):
            return False
    return _kernel_words().search(text) is not None


_RECIPE_INCLUDE = re.compile(r"(?:^|\s)(?:-r|--requirement|-c|--constraint)(?:\s*=\s*|\s+)([^\s;&|'\"]+)")


def _recipe_includes(text: str, path: str, root: str, rel: str) -> List[Pin]:
    """The requirements files a recipe's installer lines hand pip (`pip install -r X`, round Z): a URL decides
    nothing; a path is read where it lies in the tree (beside the recipe, from the root, or the longest tail of an
    absolute path in the image, `/srv/fork/.devcontainer/r.txt`), hidden folders too; one not in the tree (the
    base image's) is not read here: _installed_from_paths makes it decide nothing (round BI)."""
    pins: List[Pin] = []
    for line in re.sub(r"\\\r?\n", " ", text).splitlines():
        line = re.sub(r"(^|\s)#.*$", "", line)
        if not re.search(r"\b(?:pip3?|uv)\b", line):
            continue
        for target in _RECIPE_INCLUDE.findall(line)[:16]:
            if "://" in target:
                pins.append(Pin(COMPUTED, "", f"{rel} (installs from {target[:80]}, not read)"))
                continue
            found = _in_tree(target, os.path.dirname(path), root)
            if found is not None:
                pins += requirements_file(found, root, project_label(found, root))
    return pins


def _in_tree(target: str, here: str, root: str) -> Optional[str]:
    parts = [p for p in target.split("/") if p not in ("", ".")]
    for start in ([here, root] if not target.startswith("/") else [root]):
        for i in range(len(parts)):
            candidate = os.path.join(start, *parts[i:])
            if os.path.isfile(candidate) and inside(os.path.realpath(candidate), root):
                return candidate
    return None


# An installer command's arguments (round BI): what takes a requirements file, a folder of distributions, or a value
_FILE_OPTIONS = {"-r", "--requirement", "-c", "--constraint", "--constraints", "--override", "--overrides",
                 "--build-constraint", "--build-constraints"}
_LINK_OPTIONS = {"-f", "--find-links"}
_VALUE_OPTIONS = {"-i", "--index-url", "--extra-index-url", "-t", "--target", "--prefix", "--root", "--python", "-p",
                  "--src", "--upgrade-strategy", "--progress-bar", "--platform", "--python-version", "--implementation",
                  "--abi", "--no-binary", "--only-binary", "-C", "--config-settings", "--config-setting",
                  "--global-option", "--build-option", "--log", "--cache-dir", "--trusted-host", "--proxy", "--timeout",
                  "--retries", "--exists-action", "--cert", "--client-cert", "--report", "--index-strategy",
                  "--keyring-provider", "--extra", "--group", "--resolution", "--prerelease", "--exclude-newer",
                  "--link-mode", "--torch-backend", "--index", "--default-index", "--python-platform", "-n", "--name",
                  "--channel", "--repodata-fn", "--solver", "--subdir", "-e", "--editable"}
_COMMAND_BREAKS = {"&&", "||", ";", "|", "then", "do", "else", "elif", "fi", "done", "(", ")", "{", "}"}
_BUILT_INTO = re.compile(r"(?:\s|^)(?:--out|-o|--outdir|--out-dir|-w|--wheel-dir|-d|--dest|--dist-dir)(?:=|\s+)"
                         r"[\"']?([^\s\"';&|]+)")
_DISTRIBUTION_FILE = re.compile(r"(?i)\.(?:whl|tar\.gz|tgz|zip|tar\.bz2|conda)\Z")


def _installer_commands(text: str) -> Iterable[Tuple[str, List[str]]]:
    """Each installer command of a recipe's text (its continuations joined, comments cut), as its kind (`install`:
    pip's or uv's; `sync`: `uv pip sync`, `pip-sync`, whose positional arguments are requirements files; `conda`:
    conda's, mamba's, micromamba's install/update/create) and the arguments after its subcommand (round BI)."""
    for line in re.sub(r"\\\r?\n", " ", text).splitlines()[:20000]:
        line = re.sub(r"(^|\s)#.*$", "", line)
        if not re.search(r"\b(?:pip[\d.]*|pip-sync|uv|conda|mamba|micromamba)\b", line):
            continue
        try:
            tokens = shlex.split(line)
        except ValueError:
            tokens = line.split()
        command: List[str] = []
        for token in [*tokens[:4096], ";"]:
            word = token.rstrip(";")
            if word and word not in _COMMAND_BREAKS:
                command.append(word)
            if word != token or word in _COMMAND_BREAKS:  # (`a;` ends a command as `;` does)
                found = _installer_of(command)
                if found is not None:
                    yield found
                command = []


def _installer_of(tokens: List[str]) -> Optional[Tuple[str, List[str]]]:
    """(kind, arguments) where the tokens run an installer (_installer_commands), else None."""
    for i, token in enumerate(tokens):
        base = os.path.basename(token)
        if base == "pip-sync":
            return "sync", tokens[i + 1:]
        family = "pip" if re.fullmatch(r"pip[\d.]*", base) else "conda" if base in ("conda", "mamba", "micromamba") \
            else None
        if family is None:
            continue
        words = [t for t in tokens[i + 1:] if not t.startswith("-")]
        verb = words[1] if family == "conda" and words[:1] == ["env"] and len(words) > 1 else words[0] if words else ""
        rest = tokens[tokens.index(verb, i + 1) + 1:] if verb else []
        if family == "pip" and verb in ("install", "sync"):
            return verb, rest
        if family == "conda" and verb in ("install", "update", "create"):
            return "conda", rest
        return None
    return None


def _installer_targets(kind: str, args: List[str]) -> Iterable[Tuple[str, str, str]]:
    """What an installer command takes from files, with the option naming it (or "" by position): ("file", a
    requirements or environment file), ("path", a local distribution, folder or glob), ("links", a `--find-links`
    folder); a named distribution or a URL is no target here."""
    at = 0
    while at < len(args):
        arg = args[at]
        option, _, glued = arg.partition("=") if arg.startswith("--") else (arg[:2], "", arg[2:]) \
            if arg.startswith("-") and len(arg) > 2 and arg[:2] in ("-r", "-c", "-f", "-e") else (arg, "", "")
        takes = option.startswith("-") and option in _FILE_OPTIONS | _LINK_OPTIONS | _VALUE_OPTIONS
        value = glued or (args[at + 1] if takes and at + 1 < len(args) else "")
        at += 2 if takes and not glued else 1
        if not option.startswith("-"):
            if kind == "sync":
                yield "file", arg, ""
            elif kind == "install" and _path_like(arg):
                yield "path", arg, ""
        elif kind == "conda":
            if option in ("-f", "--file"):
                yield "file", value, option
        elif option in _FILE_OPTIONS:
            yield "file", value, option
        elif option in _LINK_OPTIONS:
            yield "links", value, option
        elif option in ("-e", "--editable") and _path_like(value):
            yield "path", value, option


def _path_like(arg: str) -> bool:
    """Is an installer's positional argument a local path (a folder, a glob, a distribution file), not a named
    requirement or a URL?"""
    if "://" in arg and not arg.startswith("file://") or " @ " in arg or arg.startswith(("git+", "$")) and "/" not in arg:
        return False
    return arg.startswith(("/", ".", "~", "file://")) or "/" in arg or bool(_DISTRIBUTION_FILE.search(arg))


def _installed_from_paths(text: str, path: str, root: str, rel: str) -> List[Pin]:
    """Round BI: what a recipe's installer takes from files it names. A requirements file taken by an option or by
    position (`uv pip sync FILE`, `pip-sync FILE`, `conda env update -f FILE`) is read where it lies in the tree and
    decides nothing where it does not (the base image's lock); a folder, a glob, an archive or a `--find-links` folder
    whose files are not in the tree (`COPY --from=<image> /wheels`) installs what is not read and decides nothing,
    unless the recipe builds into it (`--out dist`, `pip wheel -w`); one in the tree is read as its files are (round
    T). A wheel or archive named by its release is read by its name (_mentioned_pins)."""
    pins: List[Pin] = []
    here = os.path.dirname(path)
    built = {b.rstrip("/").rsplit("/", 1)[-1] for b in _BUILT_INTO.findall(text)} | _engine_clone_folders(text)
    for kind, args in _installer_commands(text):
        for what, target, option in list(_installer_targets(kind, args))[:64]:
            target = re.sub(r"\[[^\]/]*\]\Z", "", target)
            target = target[len("file://"):] if target.startswith("file://") else target
            if not target or "://" in target:  # (an index, or a remote file `-r` already decides nothing for)
                if target and what == "file" and option not in ("-r", "--requirement", "-c", "--constraint"):
                    pins.append(Pin(COMPUTED, "", f"{rel} (installs from {target[:80]}, not read)"))
            elif what == "file":
                found = _in_tree(target, here, root)
                if found is None:
                    pins.append(Pin(COMPUTED, "", f"{rel} (installs the requirements of {target[:80]}, "
                                                  "not in the tree)"))
                elif kind != "conda" and option not in ("-r", "--requirement", "-c", "--constraint"):
                    pins += requirements_file(found, root, project_label(found, root))  # (by position: an include)
            elif not _distribution_named(target) and not _in_tree_path(target, here, root, built):
                pins.append(Pin(COMPUTED, "", f"{rel} (installs what {target[:80]} holds, not in the tree)"))
    return pins


def _engine_clone_folders(text: str) -> Set[str]:
    """The folders a recipe clones the engine into (`git clone -b v0.5.16 .../sglang.git [DIR]`): what is installed
    from there is the clone's release, read by _engine_mentions (round AP), not a folder of unread files."""
    folders: Set[str] = set()
    for line in re.sub(r"\\\r?\n", " ", text).splitlines()[:20000]:
        clone = _ENGINE_CLONE.search(line)
        words = line[clone.start():].split()[2:] if clone else []
        given = [w.strip("\"'") for i, w in enumerate(words) if not w.startswith("-") and not (
            i and words[i - 1] in ("-b", "--branch", "--depth", "-c", "--config", "-o", "--origin", "--filter"))]
        given = given[:next((i for i, w in enumerate(given) if w in ("&&", "||", ";", "|")), len(given))]
        if given:
            folders.add((given[1] if len(given) > 1 else given[0]).rstrip("/").rsplit("/", 1)[-1]
                        .removesuffix(".git").rstrip(";"))
    return folders


def _distribution_named(target: str) -> bool:
    """A distribution file whose name is its release (`sgl_kernel-0.4.6-...whl`, no glob): read by its name."""
    base = target.rstrip("/").rsplit("/", 1)[-1]
    return not re.search(r"[*?\[$]", base) and bool(_WHEEL.search(base) or _SDIST.match(base)
                                                       or _CONDA_PACKAGE.match(base))


def _in_tree_path(target: str, here: str, root: str, built: Set[str]) -> bool:
    """Does a path an installer takes (a folder, a glob's folder, a file) lie in the tree (read there), or in a folder
    the recipe builds into? Only what follows a variable (`$HOME/wheels`) is matched, as the tail of an image's path."""
    parts = [p for p in target.split("/") if p not in ("", ".")]
    parts = parts[:next((i for i, p in enumerate(parts) if re.search(r"[*?\[]", p)), len(parts))]
    unknown = max((i for i, p in enumerate(parts) if "$" in p or p.startswith("~")), default=-1)
    if unknown >= 0 or target.startswith("~"):
        parts = parts[unknown + 1:]
    if any(p in built for p in parts):
        return True
    if not parts:  # the recipe's own folder (`pip install .`, `*.whl`), unless a variable or `/` names it
        return unknown < 0 and not target.startswith(("/", "~", "$"))
    for start in ([here, root] if not target.startswith("/") and unknown < 0 else [root]):
        for i in range(len(parts)):
            candidate = os.path.join(start, *parts[i:])
            if os.path.exists(candidate) and inside(os.path.realpath(candidate), root):
                return True
    return False


_HEREDOC = re.compile(r"<<-?[ \t]*(['\"]?)(\w+)(?!\w)\1")
MAX_HEREDOCS = 64


def _python_heredocs(text: str) -> Tuple[str, List[str]]:
    """A shell recipe's text less the bodies it hands Python on its standard input (`python - <<'EOF' ... EOF`),
    and those bodies, each read as a Python file (round U: a smoke test's `print("sgl_kernel", ...)` installs
    nothing). Each here-document's end is looked for once, from where it starts (at most MAX_HEREDOCS)."""
    out, bodies, at = [], [], 0
    for n, m in enumerate(_HEREDOC.finditer(text)):
        if n >= MAX_HEREDOCS:
            break
        line = text[text.rfind("\n", 0, m.start()) + 1:m.start()]
        if m.start() < at or "python" not in line:
            continue
        start = text.find("\n", m.end()) + 1  # (the body starts on the next line)
        end = re.compile(rf"(?m)^[ \t]*{re.escape(m.group(2))}[ \t]*$").search(text, start) if start else None
        if end is None:
            break
        out.append(text[at:start])
        bodies.append(text[start:end.start()])
        at = end.start()
    return "".join(out) + text[at:], bodies


_SPELLED_PIN = re.compile(r"""(?<![\w.-])([A-Za-z0-9][A-Za-z0-9._-]*\s*(?:\[[^\]\[]{0,200}\]\s*)?(?:==|~=|<=|>=|<|>|!=)\s*[\w.*+!-]+"""
                          r"""(?:\s*,\s*(?:==|~=|<=|>=|<|>|!=)\s*[\w.*+!-]+)*)""")
_CONDA_PIN = re.compile(r"(?m)^([ \t]*-[ \t]*[A-Za-z0-9][A-Za-z0-9._-]*)[ \t]*=[ \t]*(?==?[\w.*])=?")  # `- name=1.2` (conda's `=`)
_UV_PINS = re.compile(r"(?:override|constraint)-dependencies\s*=\s*\[([^\]]*)\]")


_CONDA_ENTRY = re.compile(r"[ \t]*-[ \t]*[\"']?(?:[\w.-]+::)?([A-Za-z0-9][A-Za-z0-9._-]*)[ \t]*(=?=|[<>!~]=|[<>])?[ \t]*([^\s#\"']*)")


def _conda_engine(text: str, rel: str) -> List[Pin]:
    """The engine in a conda environment's own list (`- sglang=0.4.9.post2`, `- conda-forge::sglang==0.4.9`, not
    its `- pip:` list, which spelled_pins reads as pip does): conda's single `=` is its version match, and a conda
    package holds whichever extras it was built with, so the release is read with every extra (round AR)."""
    pins: List[Pin] = []
    pip_indent: Optional[int] = None
    for line in text.splitlines():
        indent = len(line) - len(line.lstrip(" \t"))
        if pip_indent is not None and (indent <= pip_indent and line.strip()):
            pip_indent = None
        if re.match(r"[ \t]*-[ \t]*pip[ \t]*:", line):
            pip_indent = indent
        m = _CONDA_ENTRY.match(line)
        if pip_indent is not None or not m or normalize(m.group(1)) != ENGINE or not m.group(3):
            continue
        op, spec = m.group(2) or "==", m.group(3)
        if op in ("=", "=="):  # (conda's `=V=build`: the build string after the version)
            op, spec = "==", spec.split("=", 1)[0]
        pin = _requirement(f"{ENGINE}{op}{spec}", f"{rel} (a conda entry)") if "|" not in spec else None
        pins.append(_any_extras(ENGINE, pin.spec, pin.source) if pin is not None else
                    Pin(COMPUTED, "", f"{rel} ({ENGINE}'s conda entry not read)"))
    return pins[:MAX_PINS]


def spelled_pins(text: str, rel: str) -> List[Pin]:
    """Every `name==version`-like requirement a text spells (`pip install sglang-kernel==0.4.2` in a
    Dockerfile, a conda environment's pip list, uv's override-dependencies): each is what that way of
    installing puts in the environment."""
    return [p for m in _SPELLED_PIN.finditer(text) if (p := _requirement(m.group(1), rel)) is not None]


# -- installed distributions ------------------------------------------------------------------


@per_run
def _metadata(info: str) -> Tuple[Optional[str], Optional[str], Tuple[str, ...]]:
    """A `.dist-info`'s METADATA, or an `.egg-info`'s PKG-INFO (in its folder, or the file itself)."""
    if info.endswith(".egg-info"):
        path = os.path.join(info, "PKG-INFO") if os.path.isdir(info) else info
    else:
        path = os.path.join(info, "METADATA")
    name, version, requires = metadata_fields(read_project_file(path) or "")
    return name, version, tuple(requires)


_LEADING_NAME = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def _may_name(requirement: str, dists: Sequence[str]) -> bool:
    """False only where `requirement` cannot parse into one of `dists`: its leading name (as PEP 508
    reads it) is another distribution's. Spares parsing the hundreds of Requires-Dist lines of a
    big distribution for the one or two that name a kernel."""
    m = _LEADING_NAME.match(requirement)
    return m is None or normalize(m.group(1)) in dists


def installed_pins(path: str, site_dir: str, dists: Sequence[str]) -> List[Pin]:
    """Pins that decide the kernel of a file installed in site_dir.

    A distribution that is itself one of `dists` (vLLM ships its FlashMLA wrapper) is
    pinned by its own version; otherwise its Requires-Dist; failing that, a providing
    distribution installed beside it.
    """
    info = owner(path, site_dir)
    if info is not None:
        name, version, requires = _metadata(info)
        source = f"{os.path.basename(info)}/METADATA"
        if name and version and normalize(name) in dists:
            return [Pin(normalize(name), f"=={version}", source)]
        pins = [p for r in requires if _may_name(r, dists) and (p := _requirement(r, source)) is not None
                and p.dist in dists]
        if pins and not all("extra" in p.marker for p in pins):
            return pins
    else:
        pins = []
    return installed_beside(site_dir, dists) or pins  # pinned only by extras: the kernel installed beside decides


def installed_beside(site_dir: str, dists: Sequence[str]) -> List[Pin]:
    """The kernel distributions installed in site_dir, each pinned by its own version: `.dist-info`'s METADATA,
    or an `.egg-info`'s PKG-INFO (a file, or a folder holding one: setuptools' older layout, round J2)."""
    out = []
    for name in listing(site_dir):
        if name.endswith(".dist-info"):
            info, label = os.path.join(site_dir, name), f"{name}/METADATA"
        elif name.endswith(".egg-info"):
            info = os.path.join(site_dir, name)
            label = f"{name}/PKG-INFO" if os.path.isdir(info) else name
        else:
            continue
        dname, version, _ = _metadata(info)
        if dname and version and normalize(dname) in dists:
            out.append(Pin(normalize(dname), f"=={version}", f"{label} (installed beside it)"))
    return out


# -- kernels an engine pin brings -----------------------------------------------------------------
# sglang requires its kernel (`sgl-kernel==0.2.5` in its srt extra up to 0.5.2, in its base install from
# 0.5.3, `sglang-kernel` from 0.5.10): a project pinning `sglang[srt]==0.4.9.post2` installs that kernel too,
# and sgl-kernel and sglang-kernel install the same `sgl_kernel` module (whichever installs last wins).
ENGINE = "sglang"
ENGINE_TABLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "sglang_kernels.json")
EngineReleases = Dict[str, Dict[str, Tuple[str, ...]]]  # release -> extra ("" the base install) -> requirements


@functools.lru_cache(maxsize=1)
def engine_releases() -> EngineReleases:
    """The committed table of every sglang release's kernel requirements (bench/sglang_kernel_table.py),
    keyed by each release's normalized version and extra."""
    with open(ENGINE_TABLE, encoding="utf-8") as f:
        releases = json.load(f)["releases"]
    return {str(Version(v)): {normalize(g) if g else "": tuple(r) for g, r in groups.items()}
            for v, groups in releases.items()}


@functools.lru_cache(maxsize=1)
def newest_engine_release() -> Version:
    return max(map(Version, engine_releases()))


def exact_version(spec: str) -> Optional[Version]:
    """The one release `spec` names exactly (`==0.4.9.post2`, `===0.4.9.post2`, a local build's public
    release), else None: a range, a wildcard, a spec packaging cannot read."""
    try:
        exact = {Version(c.version).public for c in SpecifierSet(spec)
                 if c.operator in ("==", "===") and not c.version.endswith(".*")}
    except Exception:  # a spec or version packaging cannot read names no release
        return None
    return Version(exact.pop()) if len(exact) == 1 else None


def brought_pins(pin: Pin) -> List[Pin]:
    """The kernel requirements a sglang pin brings into its way to install, as pins of that way (its marker, its
    file; `via` names the release that brings each): an exact pin's release's base install's and its extras' (the
    table); a range bounded above (`==0.4.9.*`, `<0.4.10`, `~=0.4.9`) brings those of every release it admits,
    each weighed alone (pip may settle on any of them: round AR). A release newer than the table's newest brings
    nothing decisive (assumed: a later sglang requires no older kernel; the table's own releases never do,
    tests/test_engine_kernels.py); one the table does not hold below it (a release it missed, a yanked one) brings
    a pin that decides nothing. A range open above (`>=0.5.13`) brings nothing: pip installs the newest."""
    if pin.dist != ENGINE:
        return []
    version = exact_version(pin.spec)
    if version is None:
        return _range_brings(pin)
    releases = engine_releases()
    groups = releases.get(str(version))
    if groups is None:
        return [] if version > newest_engine_release() else [Pin(COMPUTED, "", f"{pin.source} ({pin}: a release not in topk-migrate's "
                                                             "table of sglang releases)", pin.marker)]
    wanted = [r for g in ("", *pin.extras) for r in groups.get(g, ())]
    brought = [_requirement(r, pin.source) for r in dict.fromkeys(wanted)]
    via = str(replace(pin, marker=""))
    return [replace(b, marker=pin.marker, via=via) for b in brought if b is not None]


def _range_brings(pin: Pin) -> List[Pin]:
    """A range of sglang bounded above: the kernel requirements each release of the table it admits brings (one
    pin per distinct requirement, named by the oldest release bringing it; pre-releases too), or one that decides
    nothing where it admits no release of the table and none above its newest (pip finds none the table knows)."""
    if clause_count(pin.spec) > MAX_CLAUSES:
        return [Pin(COMPUTED, "", f"{pin.source} ({ENGINE} with more than {MAX_CLAUSES} version clauses)", pin.marker)]
    ranges = allowed(pin.spec)
    if not ranges or any(hi is None for _, _, hi, _ in ranges):
        return []  # open above (or unsatisfiable): the newest release, as an unpinned engine
    try:
        spec = SpecifierSet(pin.spec)
        admitted = [v for v in sorted(map(Version, engine_releases())) if spec.contains(v, prereleases=True)]
    except Exception:  # a specifier packaging cannot read names no release
        admitted = []
    newest = newest_engine_release()
    if not admitted:
        return [] if any(hi > newest for _, _, hi, _ in ranges) else [
            Pin(COMPUTED, "", f"{pin.source} ({pin}: admits no release in topk-migrate's table of sglang releases)",
                pin.marker)]
    brought: Dict[Tuple[str, str], Pin] = {}
    for v in admitted:
        exact = replace(pin, spec=f"=={v}", source=f"{pin.source} ({pin} admits {v})")
        for b in brought_pins(exact):
            brought.setdefault((b.dist, b.spec), b)
    return list(brought.values())


def with_brought(pins: Sequence[Pin]) -> List[Pin]:
    """A way's pins and the kernel requirements its sglang pins bring (each distinct pin read once: a
    file repeating one line thousands of times costs one reading)."""
    engines = dict.fromkeys(p for p in pins if p.dist == ENGINE)
    return [*pins, *(b for p in engines for b in brought_pins(p))]


def first_engine_release(via: str, dists: Sequence[str], min_versions: MinVersions) -> Optional[str]:
    """The first sglang release from which every release in the table, with the extras of the engine pin `via`,
    brings a kernel of `dists` that takes the parameter (the remedy a reason names); None where the newest
    does not."""
    engine = _requirement(via, "")
    extras = engine.extras if engine is not None else ()
    first = None
    for version in sorted(engine_releases(), key=Version, reverse=True):
        pins = brought_pins(Pin(ENGINE, f"=={version}", "", extras=extras))
        if _decide_env([p for p in pins if p.dist in dists], min_versions) is not True:
            break
        first = version
    return first


# -- deciding over environments -----------------------------------------------------------------


@dataclass(frozen=True)
class Decision:
    accepts: Optional[bool]
    pins: Tuple[Pin, ...]  # what it rests on: for False the too-old pin(s), for None the undecided ones

    def describe(self) -> str:
        def shown(p: Pin) -> str:
            text = str(p)
            if clause_count(p.spec) > MAX_CLAUSES:
                text = f"{p.dist} ({clause_count(p.spec)} version clauses; more than {MAX_CLAUSES} are not weighed)"
            return f"{text[:200]}{'...' if len(text) > 200 else ''} from {p.source}"
        return "; ".join(map(shown, self.pins[:3])) + (f" (and {len(self.pins) - 3} more)" if len(self.pins) > 3 else "")


def _environments(pins: Sequence[Pin]) -> List[List[Pin]]:
    """The combinations of pins that can hold together: the unconditional ones, plus each
    conditional one (markers are not evaluated: every environment they select counts)."""
    base = [p for p in pins if not p.marker]
    conditional = [p for p in pins if p.marker]
    if not conditional:
        return [base]
    return [base + [c] for c in conditional] + ([base] if base else [])


def _decide_env(env: Sequence[Pin], min_versions: MinVersions) -> Optional[bool]:
    """Every distribution's pins in one environment must accept: the project's own pins of one distribution
    narrow each other, as pip's resolver does; a pin an engine brings is weighed alone (a later `pip install`
    may put either in place)."""
    by_dist: Dict[Tuple[str, str], List[Pin]] = {}
    for p in env:
        by_dist.setdefault((p.dist, p.via), []).append(p)
    verdicts = []
    for (dist, _), ps in by_dist.items():
        spec = ",".join(p.spec for p in ps if p.spec)
        verdicts.append(decide(spec, min_versions[dist]) if dist in min_versions else None)
    return _all(verdicts)


def _all(verdicts: Iterable[Optional[bool]]) -> Optional[bool]:
    vs = list(verdicts)
    if not vs:
        return None
    if False in vs:
        return False
    return True if all(v is True for v in vs) else None


def _holds_here(marker: str) -> bool:
    """Does the marker hold in the environment this runs in (no extra requested: `pip install .`)?"""
    from packaging.markers import InvalidMarker, Marker  # noqa: PLC0415 - on demand: a marker to evaluate

    try:
        return Marker(marker).evaluate({"extra": ""})
    except (InvalidMarker, ValueError, TypeError, KeyError):
        return False


def decide_pins(sources: Sequence[Sequence[Pin]], dists: Sequence[str], min_versions: MinVersions) -> Optional[Decision]:
    """Decide over every way to install (each file, each marker environment). None if no pin
    of `dists` was found at all. Every alternative must accept the parameter for True."""
    found = False
    worst: Dict[Optional[bool], Tuple[Pin, ...]] = {}
    for pins in sources:
        relevant = [p for p in with_brought(pins) if p.dist in dists or p.dist == COMPUTED]
        if not relevant:
            continue
        found = True
        if len(relevant) > MAX_PINS:  # environments grow with the product of pins: decide nothing
            worst.setdefault(None, tuple(relevant[:3]))
            continue
        for env in _environments(relevant):
            if env:
                worst.setdefault(_decide_env(env, min_versions), tuple(env))
        if all(p.marker for p in relevant) and not any(_holds_here(p.marker) for p in relevant):
            # only extras or markers pin the kernel, and none holds where this runs: `pip install .` without
            # the extras, or this very environment, installs whatever it finds (round J2)
            worst.setdefault(None, tuple(relevant)[:3])
    if not found:
        return None
    for verdict in (False, None, True):
        if verdict in worst:
            return Decision(verdict, worst[verdict])
    return None


def project_decision(path: str, dists: Sequence[str], min_versions: MinVersions) -> Optional[Decision]:
    """The pins of `dists` that hold for `path`: those of the installed distribution that owns it, or every
    way to install the project: the project files of each directory from the module's up to the root, and
    every other file under the root that may install a kernel (tree_ways)."""
    root = project_root(path)
    if is_site_dir(listing(root)):  # what the engine requires, and what is installed beside it: both must accept
        ways = [w for w in (installed_pins(path, root, dists), installed_beside(root, dists)) if w]
        return decide_pins(ways, dists, min_versions) if ways else None
    chain = list(upward(path))
    ways = [w for d in chain for w in file_pins(d, root)]
    return decide_pins(ways + list(tree_ways(root, frozenset(chain))), dists, min_versions)


# -- every file of the project that may install a kernel ------------------------------------------
MAX_TREE_ENTRIES = 50000  # directory entries looked at under the root, beyond the directories above the module
MAX_TREE_DEPTH = 16  # (past either, the rest decides nothing: round Y)
MAX_TREE_BYTES = 256 << 20  # bytes of those files read; past it the rest decide nothing
# Not the serving process's recipes: environments and caches (copies of other projects, a tool's output: hypothesis's
# example database, tox's and nox's environments and logs, notebook checkpoints), version control stores, and test
# suites with their data (a test environment's). Every other folder is the project's, a `build/` or a submodule
# holding the deploy recipes included (red-team round S), hidden ones and documentation too, each file read by its
# text as any other folder's is (round BG: a name allowlist missed `.ci/Jenkinsfile.gpu`, `docs/hpc/Singularity`,
# `.buildkite/pipeline.json`, `docs/deploy/main.tf`).
_NOT_THE_PROJECTS = {"site-packages", "dist-packages", "node_modules", "venv", "__pycache__", ".git", ".hg", ".svn",
                     ".mypy_cache", ".pytest_cache", ".ruff_cache", ".hypothesis", ".tox", ".nox", ".eggs",
                     ".ipynb_checkpoints", ".pyre", ".pytype"} | TEST_DIRS
_REQUIREMENT_SUFFIXES = (".txt", ".in", ".lock", ".pip")
_PYTHON_SUFFIXES = (".py", ".pyw")
# Python whatever its name (a script in bin/, a file named `-`): a python shebang, or a line that imports or defines
_PYTHON_TEXT = re.compile(r"\A#![^\n]*python|^(?:import [\w.]+|from [\w.]+ import |def \w+\(|class \w+[(:])", re.M)
# What no installer reads: documentation, compiled languages' sources, images and model data (a notebook is no
# documentation: its cells run `!pip install`, round BH). Any other file,
# whatever its name (`cu118.Dockerfile`, `bin/setup`, an Apptainer `.def`, a sourced `.env`), may install the
# kernel: its text, not its name, says whether it does (round S).
_NEVER_INSTALLS = (".md", ".rst", ".adoc", ".html", ".htm", ".tex", ".pdf", ".c", ".cc", ".cpp", ".cxx",
                   ".cu", ".cuh", ".h", ".hh", ".hpp", ".inl", ".rs", ".go", ".png", ".jpg", ".jpeg", ".gif", ".svg",
                   ".safetensors", ".bin", ".pt", ".pth", ".npy", ".pyc", ".so", ".o", ".a", ".whl", ".gz", ".zip")
_SDISTS = (".tar.gz", ".zip", ".tar.bz2", ".tgz")
_SDIST = re.compile(r"(?i)\A([a-z0-9][a-z0-9_.]*?(?:-[a-z][a-z0-9_.]*)*)-(\d[\w.+!]*?)\.(?:tar\.gz|zip|tar\.bz2|tgz)\Z")
_CONDA_PACKAGE = re.compile(r"(?i)\A([a-z0-9][a-z0-9_.-]*?)-(\d[\w.+!]*)-[^-]+\.conda\Z")
_WHEEL = re.compile(r"(?i)(?<![\w.-])([a-z0-9][a-z0-9_.]*?)-(\d[\w.+!]*)-[^\s/]*\.whl")


@per_run
def tree_ways(root: str, read: frozenset) -> Tuple[Tuple[Pin, ...], ...]:
    """The ways to install every other file under the root spells (directories in `read` are file_pins's):
    requirements and constraints files wherever they lie and whatever their name, sub-projects' pyproject.toml
    and setup.cfg, and every recipe whatever its name: Dockerfiles, shell and Python scripts, Makefiles,
    Pipfiles, tox.ini, conda environments, Ansible playbooks, env files. Each is one way; where it names a
    kernel distribution on a line not read as a pin (a version from a build argument, a local wheel without
    one, a file too big to read), that way decides nothing (red-team rounds J2 and S)."""
    out: List[Tuple[Pin, ...]] = []
    budget = MAX_TREE_BYTES
    files, unwalked = _tree_files(root, read)
    if unwalked is not None:  # what the folders left unwalked would install is not read: it decides nothing (round Y)
        out.append((Pin(COMPUTED, "", unwalked),))
    for path in files:
        if _linked_out(path, root):  # a recipe kept elsewhere: what it installs is not read (round BF)
            out.append((Pin(COMPUTED, "", f"{project_label(path, root)} (a link out of the project, not read)"),))
            continue
        try:
            budget -= os.stat(path).st_size
        except OSError:
            continue
        if budget < 0:  # what the rest would install is not read: it decides nothing
            rel = project_label(path, root)
            out.append((Pin(COMPUTED, "", f"{rel} and the files after it (past {MAX_TREE_BYTES >> 20} MiB read)"),))
            break
        out += map(tuple, file_ways(path, root))
    return tuple(w for w in out if w)


def _unread(path: str, rel: str) -> List[Pin]:
    """A way to install that decides nothing: a regular file too big to read (a FIFO or a device is no file
    pip reads, so it installs nothing)."""
    try:
        big = os.path.isfile(path) and os.stat(path).st_size > PROJECT_FILE_LIMIT
    except OSError:
        big = False
    return [Pin(COMPUTED, "", f"{rel} (too big to read)")] if big else []


def _named_to_install(name: str) -> bool:
    """A name that says the file installs something (not any `.txt`: a tokenizer's vocabulary is one too big
    to read that installs nothing)."""
    return any(w in name.lower() for w in ("requirement", "constraint", "lock", "docker", "container", "pipfile",
                                           "environment", "conda"))


def _may_install(name: str) -> bool:
    return not name.lower().endswith(_NEVER_INSTALLS) or name.lower().endswith((".whl", *_SDISTS))


def _tree_files(root: str, read: frozenset) -> Tuple[List[str], Optional[str]]:
    """The files under root that may install a kernel, outside the directories in `read`: environments, caches
    and version control stores left out, test suites too (project.TEST_DIRS, is_test_module); hidden folders and
    documentation chosen by kind as every other folder's files are (round BG, _may_install); bounded. With them, where the walk stopped short (a folder
    deeper than MAX_TREE_DEPTH, entries past MAX_TREE_ENTRIES), or None."""
    out: List[str] = []
    seen = 0
    for top, dirs, names in os.walk(root):
        depth = os.path.relpath(top, root).count(os.sep)
        kept = sorted(d for d in dirs if d not in _NOT_THE_PROJECTS
                      and not d.endswith(".egg-info") and not os.path.islink(os.path.join(top, d))
                      and not os.path.exists(os.path.join(top, d, "pyvenv.cfg")))  # (an environment)
        if kept and depth >= MAX_TREE_DEPTH:
            return out, f"{project_label(os.path.join(top, kept[0]), root)} (folders past {MAX_TREE_DEPTH} deep, not read)"
        dirs[:] = kept
        seen += len(dirs) + len(names)
        if seen > MAX_TREE_ENTRIES:
            return out, f"{project_label(top, root)} and the folders after it (past {MAX_TREE_ENTRIES} entries, not read)"
        if top in read:
            continue
        out += [os.path.join(top, n) for n in sorted(names) if _may_install(n)
                and not (n.endswith(_PYTHON_SUFFIXES) and is_test_module(n))]
    return out, None


def _linked_out(path: str, root: str) -> bool:
    """A link to a file outside the tree (round BF: never followed out of it; a link to a device is no file)."""
    return os.path.islink(path) and os.path.isfile(path) and not inside(path, root)


def _tool_pins(text: str, rel: str) -> List[Pin]:
    """Poetry's dependency tables (`[tool.poetry.dependencies]`, 1.x's `dev-dependencies`, its groups': a plain
    `poetry install` installs each): `name = "0.4.6"`, `"^0.4.6"`, or a table with `version`, read as _keyed_pins
    reads them. A list of them (the multiple-constraints form) is _poetry_choices'."""
    return [p for name, spec in _poetry_entries(text) if not isinstance(spec, list)
            for p in _poetry_constraint(name, spec, rel)]


def _poetry_choices(text: str, rel: str) -> List[List[Pin]]:
    """Poetry's multiple-constraints form (`k = [{version = "0.4.2", python = "<3.11"}, ...]`): each entry is a way
    of its own (the one its environment selects is installed), so every one must accept."""
    return [_poetry_constraint(name, one, rel) for name, spec in _poetry_entries(text) if isinstance(spec, list)
            for one in spec]


def _poetry_entries(text: str) -> List[Tuple[str, object]]:
    """Every (name, constraint) of poetry's dependency tables: its own, 1.x's `dev-dependencies`, its groups'."""
    tool = _toml(text).get("tool")
    poetry = tool.get("poetry") if isinstance(tool, dict) else None
    if not isinstance(poetry, dict):
        return []
    groups = poetry.get("group") if isinstance(poetry.get("group"), dict) else {}
    tables = [poetry.get("dependencies"), poetry.get("dev-dependencies")]
    tables += [g.get("dependencies") for g in groups.values() if isinstance(g, dict)]
    return [(name, spec) for table in tables if isinstance(table, dict) for name, spec in table.items()]


def _poetry_constraint(name: str, spec: object, rel: str) -> List[Pin]:
    """One poetry constraint of `name`; where a kernel's or the engine's is not read (a list's entry that is no
    string or table with `version`, a version no pin is read from), one that decides nothing: not a silent pass."""
    version = spec.get("version", "") if isinstance(spec, dict) else spec
    read = _keyed_pins(f'{name} = "{version}"', rel, {normalize(name)}) if isinstance(version, str) else []
    if not read and (_kernel_words().fullmatch(name) or normalize(name) == ENGINE):
        return [Pin(COMPUTED, "", f"{rel} (poetry's {name} constraint not read as a pin)")]
    return [_any_extras(p.dist, p.spec, p.source) for p in read]


_TABLE = re.compile(r"(?m)^[ \t]*\[\[?([^\]\n]*)\]")
_READ_TABLES = re.compile(r"^(?:project(?:\..*)?|dependency-groups|build-system|tool\.topk[-_]migrate(?:\..*)?"
                          r"|tool\.poetry(?:\.(?:dev-)?dependencies(?:\..*)?|\.group\.[^.]+(?:\.dependencies(?:\..*)?)?"
                          r"|\.(?:extras|scripts|plugins|urls|source|build|packages|include|exclude))?)$")
# (this tool's own table declares, installs nothing; poetry's tables _tool_pins does not read are read as a recipe's)


def _other_tables(text: str) -> str:
    """A pyproject.toml's text less the tables pyproject_pins, _tool_pins and _own_release read (and the build's
    isolated requirements, and this tool's own configuration): what another tool may install from
    (`[tool.pixi.pypi-dependencies]`, `[tool.hatch.envs.default]`, uv's `dev-dependencies`: round Z), each line
    naming a kernel read as a recipe's is."""
    out, keep, at = [], False, 0
    for m in _TABLE.finditer(text):
        if keep:
            out.append(text[at:m.start()])
        keep, at = not _READ_TABLES.match(m.group(1).strip().replace('"', "").replace("'", "")), m.start()
    if keep:
        out.append(text[at:])
    return "".join(out)


def _own_release(text: str, rel: str) -> List[Pin]:
    """A sub-project that is a kernel distribution itself (`sgl-kernel/pyproject.toml`): the release it builds.
    Not the engine's own (a fork's `python/pyproject.toml` named sglang): its dependencies, read beside, say
    which kernel it installs, not PyPI's release of its number (brought_pins)."""
    project = _toml(text).get("project")
    if not isinstance(project, dict) or not isinstance(project.get("name"), str) \
            or normalize(project["name"]) == ENGINE:
        return []
    version = project.get("version")
    spec = f"=={version}" if isinstance(version, str) else ""
    return [Pin(normalize(project["name"]), spec, f"{rel} (the release it builds)")]


def _mentioned_pins(text: str, rel: str, requirements: bool) -> List[Pin]:
    """The pins a recipe's lines spell (`pip install sglang-kernel==0.4.6`, a wheel's file name, poetry's and
    Pipfile's `name = "version"`), and one that decides nothing for any other line naming a kernel
    distribution (a continuation line, Ansible's `name: sgl-kernel`, an unpinned conda entry), but a line that
    imports the module of that name."""
    words = _kernel_words()
    pins: List[Pin] = []
    for line in text.lstrip("\ufeff").splitlines():
        line = re.sub(r"(^|\s)#.*$", "", line)
        named = {normalize(m.group(1)) for m in words.finditer(line)
                 if not _IMPORTED.search(line[max(0, m.start() - 80):m.start()])}
        if not named:
            continue
        read = _requirement(without_options(line.strip()), rel) if requirements else None
        if read is not None and read.dist in named:
            continue  # requirements_file's own pin, with its marker
        found = [p for p in spelled_pins(line, rel) if p.dist in named]
        found += [Pin(normalize(w), f"=={v}", rel) for w, v in _WHEEL.findall(line) if normalize(w) in named]
        found += _keyed_pins(line, rel, named)
        if found:
            pins += found
        else:
            pins.append(Pin(COMPUTED, "", f"{rel} (names {sorted(named)[0]} in a way not read as a pin)"))
    return pins


# The engine's release named by something that is no pin (round T): an image (`lmsysorg/sglang:v0.4.9.post2-cu118`
# in a FROM, a compose `image:`), a git URL's tag (`sglang.git@v0.4.9.post2`); an image named without its tag on the
# line is read off its mapping's tag key (round AR: helm's `repository:`/`tag:`, kustomize's `newName:`/`newTag:`),
# and with another tag (`:latest`) or none read decides nothing.
_ENGINE_REF = re.compile(rf"(?i)(?:(?<=[\s\"'=])|^)[^\s\"'=]*/{ENGINE}(?:\.git)?[:@](?P<tag>[\w.+-]*)|(?<![\w.-]){ENGINE}\.git@(?P<tag2>[\w.+-]*)")
_KEY_LINE = re.compile(r"""([ \t]*(?:-[ \t]+)?)["']?([\w.][\w.-]*)["']?(?:[ \t]*[:=][ \t]*|[ \t]+)["']?([^"'\s,]+)["']?[ \t]*(?:,[ \t]*)?$""")
_ENGINE_IMAGE = re.compile(rf"(?i)(?:[\w.-]+/)*{ENGINE}")
_RELEASE = re.compile(r"v?(\d+(?:\.\d+)+(?:\.?post\d+)?)")
_TAG = re.compile(r"v(\d+(?:\.\d+)+(?:\.?post\d+)?)")  # (the engine's tags, `v0.4.9.post2-cu124`: another
# registry's `25.01-py3` is its own container release, round AV)
MAX_SIBLINGS = 64  # a mapping's lines looked at on either side of an image's name


def _engine_refs(text: str, rel: str) -> List[Pin]:
    """The engine releases a recipe's images and URLs name (brought_pins brings each one's kernel)."""
    pins: List[Pin] = []
    lines = [re.sub(r"(^|\s)#.*$", "", line) for line in text.splitlines()]
    for line in lines:
        pins += [_tagged_ref(m, rel) for m in _ENGINE_REF.finditer(line)]
    named = [i for i, line in enumerate(lines) if ENGINE in line.lower() and _image_key(line) is not None]
    return pins + [p for i in named[:MAX_PINS] for p in _image_by_keys(lines, i, rel)]


def _tagged_ref(m: "re.Match[str]", rel: str) -> Pin:
    """An image or URL of the engine with its tag: the release the tag names, any extras (an image holds whichever
    extras it was built with); one that decides nothing for a tag naming no release (`:latest`, `@main`)."""
    release = _TAG.match(m.group("tag") or m.group("tag2") or "")
    if release is None:
        return Pin(COMPUTED, "", f"{rel} (an image or URL of {ENGINE} without a release)")
    return _any_extras(ENGINE, f"=={release.group(1)}", f"{rel} (an image or URL of that release, any extras)")


def _image_key(line: str) -> Optional[Tuple[int, str, str]]:
    """A mapping's `key: value` line (YAML, JSON, TOML, a Dockerfile's `FROM value`): the key's column, the key and
    its value; None for another line."""
    m = _KEY_LINE.match(line)
    return (len(m.group(1)), m.group(2), m.group(3)) if m else None


def _image_by_keys(lines: List[str], at: int, rel: str) -> List[Pin]:
    """The engine's image named under a name-like key without its tag (`repository: lmsysorg/sglang`, `newName:`,
    kustomize's `name: lmsysorg/sglang`, `FROM lmsysorg/sglang`): the release its mapping's tag-like key (`tag:`,
    `newTag:`, `imageTag:`, `version:`) names; one that decides nothing where no such key names a release (round
    AR). None for another value (a tagged image is _tagged_ref's) or key (a container `name: sglang`)."""
    column, key, value = _image_key(lines[at])  # type: ignore[misc]
    image_like = re.search(r"(?i)image|repo|^from$", key)
    if not _ENGINE_IMAGE.fullmatch(value) or not (image_like or "name" in key.lower() and "/" in value):
        return []
    for sibling_key, tag in _siblings(lines, at, column):
        if re.search(r"(?i)tag|version", sibling_key):
            release = (_TAG if "tag" in sibling_key.lower() else _RELEASE).match(tag)
            return [_any_extras(ENGINE, f"=={release.group(1)}", f"{rel}:{at + 1} (an image of that release)")
                    if release else Pin(COMPUTED, "", f"{rel}:{at + 1} (an image of {ENGINE} tagged {tag[:40]}, not read)")]
    return [Pin(COMPUTED, "", f"{rel}:{at + 1} (an image of {ENGINE} whose tag is not read)")]


def _siblings(lines: List[str], at: int, column: int) -> Iterable[Tuple[str, str]]:
    """The keys and values of the mapping line `at` belongs to (the lines at its column, up to a shallower line or
    the next list item; deeper lines nested), at most MAX_SIBLINGS lines either way."""
    starts = lines[at].lstrip().startswith("-")
    for step in (-1, 1):
        j = at + step
        while 0 <= j < len(lines) and abs(j - at) <= MAX_SIBLINGS and not (step < 0 and starts):
            found = _image_key(lines[j]) if lines[j].strip() else None
            j += step
            if found is None or found[0] > column:
                continue
            dash = found[0] > 0 and lines[j - step].lstrip().startswith("-")
            if found[0] < column or dash and step > 0:
                break
            yield found[1], found[2]
            if dash:
                break


# The engine's release spelled otherwise than as a pin (round AP): a version to be filled in by a variable the
# recipe binds (`ARG SGLANG_VERSION=0.4.9.post2` ... `sglang[srt]==${SGLANG_VERSION}`), a keyed table (Pipfile's
# `sglang = {version = "==0.4.9.post2"}`, pdm's overrides, uv's sources `{git = ..., tag = "v0.4.9.post2"}`), a
# wheel's file name, a `git clone -b <tag>` of the engine's repository.
_ENGINE_OPEN = re.compile(rf"(?i)(?<![\w./-]){ENGINE}\s*(?:\[[^\]\n]*\]\s*)?(?:===|==|~=|<=|>=|<|>|!=)\s*"
                          r"(?:(?P<hole>\$\{?(?P<var>\w+)[^\s\"'}]*\}?)|(?=[{%$]|$))")
_SHELL_BINDING = re.compile(r"(?m)^[ \t]*(?:ARG[ \t]+|ENV[ \t]+|export[ \t]+|declare[ \t]+(?:-\w+[ \t]+)?)?"
                            r"([A-Za-z_]\w*)(?:=|[ \t]+(?=[\"']?v?\d))[\"']?([\w.+!-]*)")
_INLINE_TABLE = re.compile(r"""^\s*["']?([A-Za-z0-9][A-Za-z0-9._-]*)["']?\s*=\s*\{(.*)\}""")
_TABLE_FIELD = re.compile(r"""(\w+)\s*=\s*["']([^"']*)["']""")
_ENGINE_CLONE = re.compile(rf"(?i)\bgit\s+(?:-\S+(?:\s+[^-\s]\S*)?\s+)*clone\b.*(?:/|\s){ENGINE}(?:\.git)?(?:[\s\"']|$)")
_CHECKOUT = re.compile(r"\bgit\s+(?:-\S+(?:\s+[^-\s]\S*)?\s+)*(?:checkout|switch|reset\s+--hard)\s+(?:--detach\s+|-[bBcC]\s+\S+\s+)?([^\s;&|-]\S*)")
_ARCHIVE = re.compile(rf"(?i)/{ENGINE}/(?:archive|tarball|zipball)/(?:refs/tags/)?(\S+?)(?:\.zip|\.tar\.gz|\.tgz)?(?=[\s\"'#]|$)"
                      rf"|(?<![\w.-]){ENGINE}-(\d+(?:\.\d+)+(?:\.?post\d+)?)(?![\w.+-]*\.whl)(?=[/\s\"'.]|$)")
_CLONE_BRANCH = re.compile(r"(?:\s-b|\s--branch)(?:\s+|=)(\S+)")


def _engine_mentions(text: str, rel: str) -> List[Pin]:
    """The engine's releases a recipe's or a table's lines spell otherwise than as a pin (_ENGINE_OPEN's), each
    brought as a pin is (brought_pins); one that decides nothing where the release is not read."""
    bound: Dict[str, Set[str]] = {}
    for m in list(_SHELL_BINDING.finditer(text))[:MAX_PINS * 8]:
        bound.setdefault(m.group(1), set()).add(m.group(2))
    pins: List[Pin] = []
    for line in text.lstrip("\ufeff").splitlines():
        line = re.sub(r"(^|\s)#.*$", "", line)
        if not re.search(rf"(?i){ENGINE}", line):
            continue
        for m in _ENGINE_OPEN.finditer(line):
            values = sorted(bound.get(m.group("var") or "", ()))
            pins += _filled(line[:m.start("hole")], values, line[m.end("hole"):], rel) if m.group("var") else [
                Pin(COMPUTED, "", f"{rel} ({ENGINE}'s release filled in from what is not read)")]
        pins += [_any_extras(ENGINE, f"=={v}", rel) for w, v in _WHEEL.findall(line) if normalize(w) == ENGINE]
        pins += [_any_extras(p.dist, p.spec, p.source) for p in _keyed_pins(line, rel, {ENGINE}) + _engine_table(line, rel)]
        if _ENGINE_CLONE.search(line):
            branch = _CLONE_BRANCH.search(line)
            pins += [_release_at(branch.group(1), rel, "a clone")] if branch else [
                _release_at(ref, rel, "a checkout") for ref in _CHECKOUT.findall(text)[:MAX_PINS]]
        for tag, directory in _ARCHIVE.findall(line):  # (a tag's archive, a directory named by its release: AV)
            pins.append(_release_at(tag or "v" + directory, rel, "a source archive"))
    return pins[:MAX_PINS] + ([Pin(COMPUTED, "", f"{rel} (more {ENGINE} releases than are read)")]
                              if len(pins) > MAX_PINS else [])


def _release_at(ref: str, rel: str, what: str) -> Pin:
    """The engine at a git ref or an archive's tag (`v0.4.9.post2`): that release with any extras; one that decides
    nothing for a ref naming no release (a branch, a commit)."""
    release = _TAG.fullmatch(ref.strip("\"'"))
    return _any_extras(ENGINE, f"=={release.group(1)}", f"{rel} ({what} of that release)") if release else Pin(
        COMPUTED, "", f"{rel} ({what} of {ENGINE} at {ref[:40]}, not read as a release)")


_ENGINE_HEADER = re.compile(rf"""(?i)^\s*\[[^\[\]]*?(?:^|\.|\[)["']?{ENGINE}["']?\]\s*$""")


def _engine_blocks(text: str, rel: str) -> List[Pin]:
    """A TOML table of its own naming the engine (`[tool.uv.sources.sglang]`, `[tool.poetry.dependencies.sglang]`
    with `git =` and `tag =` on lines of their own: round AV), read as the inline table it is (_engine_table)."""
    pins: List[Pin] = []
    lines = text.splitlines()[:MAX_PINS * 4096]
    for at, line in enumerate(lines):
        if not _ENGINE_HEADER.match(line):
            continue
        body = []
        for later in lines[at + 1:at + 1 + 64]:
            if later.lstrip().startswith("["):
                break
            body.append(later.strip())
        pins += _engine_table(f"{ENGINE} = {{{', '.join(b for b in body if b and not b.startswith('#'))}}}", rel)
    return pins[:MAX_PINS]


_NAMED_AS = re.compile(r"""^\s*-?\s*["']?(?:name|pname|package)["']?\s*[:=]\s*["']?([A-Za-z0-9][\w.-]*)["']?\s*[,;]?\s*$""")
_KEYED_BLOCK = re.compile(r"""^\s*["']?([A-Za-z0-9][\w.-]*)["']?\s*[:=]\s*\{\s*$""")
_INLINE_OBJECT = re.compile(r"""^\s*["']([A-Za-z0-9][\w.-]*)["']\s*:\s*\{(.*)\}\s*,?\s*$""")
_VERSION_FIELD = re.compile(r"""["']version["']\s*:\s*["'](?:==|=)?\s*([^"']*)["']""")
_VERSION_KEY = re.compile(r"""^\s*["']?version["']?\s*[:=]\s*["']?(?:==|=)?\s*([^"',;\s]*)""")
_NAMED_WINDOW = 8


def _named_releases(text: str, rel: str, lock: bool) -> List[Pin]:
    """The engine's or a kernel distribution's release a lock or a recipe keeps as a name and a version on lines of
    their own, whatever its format (uv.lock's and poetry.lock's `[[package]]` tables, Pipfile.lock's JSON
    `"sglang": {"version": "==V"}`, conda-lock's `name:` / `version:`, Nix's `pname = "sglang"; version = "V";`:
    rounds AS, AT): the version key among the next lines (up to the next name), the engine's with every extra of
    its release; in a lock (`lock`: its name says so), one that decides nothing where no version is read (elsewhere
    a name alone is no install: a compose file's container `name: sglang`)."""
    lines = text.splitlines()[:MAX_PINS * 4096]
    pins: List[Pin] = []
    for at, line in enumerate(lines):
        inline = _INLINE_OBJECT.match(line)  # (Pipfile.lock's `"sglang": {"extras": [...], "version": "==V"},`)
        m = inline or _NAMED_AS.match(line) or _KEYED_BLOCK.match(line)
        dist = normalize(m.group(1)) if m else ""
        if not dist or dist != ENGINE and not _kernel_words().fullmatch(dist):
            continue
        field = _VERSION_FIELD.search(inline.group(2)) if inline else None
        version = field.group(1) if field else None if inline else next(
            (v.group(1) for later in lines[at + 1:at + 1 + _NAMED_WINDOW]
             if not _NAMED_AS.match(later) for v in [_VERSION_KEY.match(later)] if v), None)
        release = _RELEASE.fullmatch(version or "")
        if release:
            pins.append(_any_extras(dist, f"=={release.group(1)}", f"{rel}:{at + 1} (a release kept by name)"))
        elif lock or version is not None:
            pins.append(Pin(COMPUTED, "", f"{rel}:{at + 1} ({dist} named with a version not read)"))
    return pins[:MAX_PINS]


def _filled(head: str, values: List[str], tail: str, rel: str) -> List[Pin]:
    """The engine's pins `head + value + tail` spells for each value the recipe binds the hole's variable to; one
    that decides nothing where it binds none, or a value reads as no release."""
    read = [p for v in values for p in spelled_pins(head + v + tail, rel) if p.dist == ENGINE]  # (its extras spelled)
    return read if values and len(read) >= len(values) else [
        Pin(COMPUTED, "", f"{rel} ({ENGINE}'s release filled in from what is not read)")]


def _any_extras(dist: str, spec: str, source: str) -> Pin:
    """An engine pin read off a wheel's name, a clone, a table, a conda entry or a source, with every extra of its
    release (of any release, for a range): which ones the project installs is said elsewhere (`sglang[srt]` in its
    dependencies), or not at all."""
    if dist != ENGINE:
        return Pin(dist, spec, source)
    release = exact_version(spec)
    groups = [engine_releases().get(str(release), {})] if release else engine_releases().values()
    return Pin(dist, spec, source, extras=tuple(sorted({g for gs in groups for g in gs if g})))


def _engine_table(line: str, rel: str) -> List[Pin]:
    """A keyed inline table naming the engine (Pipfile's `{version = "==0.4.9.post2", extras = [...]}`, uv's sources
    `{git = "...", tag = "v0.4.9.post2"}`): its version or its tag's release; one that decides nothing for another
    source (a path, a URL, a branch); none for no source (the newest release)."""
    m = _INLINE_TABLE.match(line)
    if not m or normalize(m.group(1)) != ENGINE:
        return []
    fields = dict(_TABLE_FIELD.findall(m.group(2)))
    if "version" in fields:
        return _keyed_pins(f'{ENGINE} = "{fields["version"]}"', rel, {ENGINE}) or [
            Pin(COMPUTED, "", f"{rel} ({ENGINE}'s version not read)")]
    for key in ("tag", "rev", "branch"):
        release = _RELEASE.fullmatch(fields.get(key, ""))
        if release:
            return [_any_extras(ENGINE, f"=={release.group(1)}", f"{rel} (a source of that release)")]
    if any(k in fields for k in ("git", "url", "path", "file", "index", "tag", "rev", "branch")):
        return [Pin(COMPUTED, "", f"{rel} ({ENGINE} from a source whose release is not read)")]
    return []


_IMPORTED = re.compile(r"\b(?:import|from)\s+$")  # `import sgl_kernel`: the module, not a distribution
def _python_installs(tree: ast.Module, rel: str) -> List[Pin]:
    """What a Python file's installer calls install (a bootstrap script's `subprocess.check_call([sys.executable,
    "-m", "pip", "install", spec])`, Modal's `.pip_install("sgl-kernel>=0.3.0")`): the pins of the literal
    arguments after `install`, and one that decides nothing for a computed argument (`KERNEL[cuda]`,
    `f"sgl-kernel=={v}"`). A command a runner is handed computed (a table of steps looped over, `shlex.split(...)`,
    `%`-formatting) is read through every string the file binds to what it is computed from: the pins those
    spell, and one that decides nothing where they name a kernel otherwise (round U). The pins its other strings
    spell are _pins_in_strings's."""
    pins: List[Pin] = []
    bound: Optional[Dict[str, Set[str]]] = None
    for call in (n for n in ast.walk(tree) if isinstance(n, ast.Call)):
        installed = _installed_arguments(call)
        for arg in installed:
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                pins += _mentioned_pins(arg.value, rel, False)
            elif isinstance(arg, ast.JoinedStr) and _ENGINE_OPEN.search(_text_of(arg)):
                bound = _strings_bound(tree) if bound is None else bound
                pins += _filled_string(arg, bound, f"{rel}:{arg.lineno}")
            elif _may_compute_a_kernel(arg):
                pins.append(Pin(COMPUTED, "", f"{rel}:{arg.lineno} (installs what it computes)"))
        if installed or not _runs_commands(call):
            continue
        bound = _strings_bound(tree) if bound is None else bound
        for arg in [*call.args, *(k.value for k in call.keywords)]:
            texts = _strings_reached(arg, bound)
            if any(_kernel_words().search(t) for t in texts):
                pins += _mentioned_pins("\n".join(texts), f"{rel}:{call.lineno}", False) or [
                    Pin(COMPUTED, "", f"{rel}:{call.lineno} (runs a command it computes from a kernel's name)")]
    return pins


_SCRIPT_BLOCK = re.compile(r"(?m)^# /// script[ \t]*\r?\n((?:^#(?:| .*)\r?\n)+)^# ///[ \t]*$")


def _script_metadata_pins(text: str, rel: str) -> List[Pin]:
    """A script's inline metadata (PEP 723: `uv run`, `pipx run`, `hatch run` install its `dependencies` in the
    script's own environment): its pins; one that decides nothing where the block cannot be read."""
    pins: List[Pin] = []
    for m in list(_SCRIPT_BLOCK.finditer(text))[:4]:
        body = "\n".join(line[2:] if line.startswith("# ") else line[1:] for line in m.group(1).splitlines())
        deps = _toml(body).get("dependencies")
        if not isinstance(deps, list):
            pins.append(Pin(COMPUTED, "", f"{rel} (a script's inline metadata not read)"))
            continue
        pins += [p for d in deps[:MAX_PINS] if isinstance(d, str) for p in [_requirement(d, rel)] if p is not None]
        pins += _mentioned_pins(_other_tables(body), rel, False)  # (its tools' tables: `[tool.uv]` overrides, round AH)
    return pins


def _pins_in_strings(tree: ast.Module, rel: str, printing: bool = False) -> List[List[Pin]]:
    """The kernel pins, the engine's pins and the engine's tagged images (`lmsysorg/sglang:v0.4.9.post2-cu126`) the
    strings of a Python file spell, each a way of its own, but a message's (_MessageReads; a script whose output is a
    recipe, a here-document's, `printing`, prints none): in a file that writes files or runs commands every such
    string (a recipe it renders or hands a runner, round AG's g3: where it goes is not followed); in any other, one
    handed to a call, in a list or through a name bound to it (pyinfra's `pip.packages(packages=[...])`, Modal's
    `Image.from_registry(...)`, round AR: what the call does with it is not read). One with a version left to be
    filled in (`"sgl-kernel=={v}"`) decides nothing; one naming a kernel without a version installs whatever is
    newest: none."""
    runs = printing or _writes_or_runs(tree)
    reads: Optional[_MessageReads] = None
    bound: Optional[Dict[str, Set[str]]] = None
    ways: List[List[Pin]] = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
            continue
        pins, open_pin = _string_pins(node.value, f"{rel}:{node.lineno}")
        if not (pins or open_pin):
            continue
        reads = reads or _MessageReads(tree, printing)
        if reads.message(node, 0) or not runs and not reads.handed(node, 0):
            continue
        joined = reads.parents.get(id(node))
        if open_pin and not pins and isinstance(joined, ast.JoinedStr) and _ENGINE_OPEN.search(_text_of(joined)):
            bound = bound if bound is not None else _strings_bound(tree)  # (`f"sglang[srt]=={V}"`: V's values)
            pins = _filled_string(joined, bound, f"{rel}:{node.lineno}")
        ways += [[p] for p in pins] or [[Pin(COMPUTED, "", f"{rel}:{node.lineno} (a pin filled in later)")]]
        if len(ways) > MAX_PINS:
            return ways[:MAX_PINS] + [[Pin(COMPUTED, "", f"{rel} (more kernel pins than are read)")]]
    return ways


def _string_pins(text: str, source: str) -> Tuple[List[Pin], bool]:
    """The kernel and engine pins and the engine's tagged images one string spells, and whether it names a kernel
    or the engine with a version left to be filled in."""
    words = _kernel_words()
    named = {normalize(m.group(1)) for m in words.finditer(text)}
    engine = ENGINE in text.lower()
    if not named and not engine:
        return [], False
    pins = [p for p in spelled_pins(text, source) if p.dist in named or engine and p.dist == ENGINE]
    pins += [_tagged_ref(m, source) for m in _ENGINE_REF.finditer(text)] if engine else []
    open_pin = any(_TO_FILL.match(text, m.end()) for m in words.finditer(text)) or engine and bool(
        _ENGINE_OPEN.search(text))
    return pins, open_pin


_TO_FILL = re.compile(r"\s*(?:\[[^\]]*\]\s*)?(?:==|~=|<=|>=|<|>|!=)\s*(?:$|[{%$])")  # a version to be filled in
_MESSAGE_CALLS = {"print", "logger", "logging", "log", "warnings", "warn", "LOGGER", "_logger"}


_WRITERS = {"write", "write_text", "write_bytes", "writelines", "dump"}
_RUNNER_MODULES = {"subprocess", "sh", "pexpect", "invoke", "fabric", "docker"}


def _writes_or_runs(tree: ast.Module) -> bool:
    """Does the file write a file (`write_text`, `.write`, `json.dump`, `print(..., file=)`) or run a command (a call
    into `subprocess` or a runner's module, a name imported from one, `os.system`/`popen`/`exec*`/`spawn*`)? Only
    then may its strings be a recipe something installs from."""
    runners = {a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
               and (n.module or "").split(".")[0] in _RUNNER_MODULES for a in n.names}
    for n in ast.walk(tree):
        if not isinstance(n, ast.Call):
            continue
        root = _call_root(n)
        name = n.func.attr if isinstance(n.func, ast.Attribute) else getattr(n.func, "id", "")
        if name in _WRITERS or isinstance(root, ast.Name) and (root.id in _RUNNER_MODULES or root.id in runners) \
                or name in ("system", "popen") or name.startswith(("exec", "spawn", "create_subprocess")) \
                or name == "print" and any(k.arg == "file" for k in n.keywords):
            return True
    return False


def _call_root(call: ast.Call) -> ast.AST:
    """What a call's dotted callee starts from (`subprocess` of `subprocess.run`, `logger` of `logger.info`)."""
    root = call.func
    while isinstance(root, ast.Attribute):
        root = root.value
    return root


def _declares_an_option(call: ast.Call) -> bool:
    """`parser.add_argument(...)`, `add_option`, click's `option`/`argument`: a command line's declaration."""
    name = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", "")
    return name in ("add_argument", "add_option", "option", "argument")


class _MessageReads:
    """Which strings of a Python file are only ever messages: a docstring, text handed to `print` with no `file=`,
    logging or `warnings`, raised, asserted or compared, an option's default, or bound once to a name (or an
    attribute: a class's table read off `self`) whose every read in the file is one (a version table the file never
    reads; stated: another module importing that table is not followed). A file reading its names reflectively
    (`globals()`, `vars()`, `locals()`, `__dict__`) binds none such; in a script whose output is a recipe
    (`printing`) a print is no message."""

    def __init__(self, tree: ast.Module, printing: bool):
        self.tree, self.printing = tree, printing
        self.parents = {id(c): p for p in ast.walk(tree) for c in ast.iter_child_nodes(p)}
        self.reflective = any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in (
            "globals", "vars", "locals") or isinstance(n, ast.Attribute) and n.attr == "__dict__" for n in ast.walk(tree))
        self.own_defs = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}

    def message(self, node: ast.AST, depth: int) -> bool:
        up = self.parents.get(id(node))
        while isinstance(up, (ast.JoinedStr, ast.FormattedValue, ast.BinOp, ast.Dict, ast.List, ast.Tuple, ast.Set)):
            node, up = up, self.parents.get(id(up))
        if isinstance(up, (ast.Expr, ast.Compare)) or isinstance(up, ast.keyword) and isinstance(
                self.parents.get(id(up)), ast.Call) and _declares_an_option(self.parents[id(up)]):
            return True  # (an option's default: what the script does with it is read where it installs)
        target = up.targets[0] if isinstance(up, ast.Assign) and up.value is node and len(up.targets) == 1 else None
        if isinstance(target, (ast.Name, ast.Attribute)):
            name = target.id if isinstance(target, ast.Name) else target.attr
            return depth < 2 and self._read_as_messages(name, self._scope(up) if isinstance(target, ast.Name)
                                                        else self.tree, depth)
        while up is not None and not isinstance(up, ast.stmt):
            if isinstance(up, ast.Call) and not _formats(up):
                root = _call_root(up)
                printed = isinstance(root, ast.Name) and root.id == "print"
                return _raises(up) or isinstance(root, ast.Name) and root.id in _MESSAGE_CALLS and not (
                    printed and (self.printing or any(k.arg == "file" for k in up.keywords)))
            up = self.parents.get(id(up))
        return isinstance(up, (ast.Raise, ast.Assert))

    def handed(self, node: ast.AST, depth: int) -> bool:
        """Is the string an argument of a call: itself, in a list, tuple, set, dict or f-string, through `.format`
        or `.join`, or through a name bound to it (twice at most) that is (round AR)?"""
        up = self.parents.get(id(node))
        while isinstance(up, (ast.JoinedStr, ast.FormattedValue, ast.BinOp, ast.Dict, ast.List, ast.Tuple, ast.Set,
                              ast.Starred, ast.keyword, ast.Attribute)) or isinstance(up, ast.Call) and _formats(up):
            if isinstance(up, ast.Attribute) and not _formats(self.parents.get(id(up))):
                return False  # (`"...".strip()`'s receiver, a name's attribute: no argument)
            node, up = up, self.parents.get(id(up))
        if isinstance(up, ast.Call):  # (not an exception's or a logger's text: a message, whatever else the file
            root = _call_root(up)  # does; nor an argument of the file's own def, read where that def installs)
            return node is not up.func and not _raises(up) and not (
                isinstance(root, ast.Name) and (root.id in _MESSAGE_CALLS and not self.printing
                                                or root.id in self.own_defs))
        if isinstance(up, (ast.Assign, ast.AnnAssign)) and up.value is node and depth < 2:
            targets = up.targets if isinstance(up, ast.Assign) else [up.target]
            names = {t.id for t in targets if isinstance(t, ast.Name)}
            return any(isinstance(n, ast.Name) and n.id in names and isinstance(n.ctx, ast.Load)
                       and self.handed(n, depth + 1) for n in ast.walk(self.tree))
        return False

    def _scope(self, node: ast.AST) -> ast.AST:
        """The function a name bound at `node` is local to, or the module."""
        up = self.parents.get(id(node))
        while up is not None and not isinstance(up, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            up = self.parents.get(id(up))
        return self.tree if up is None or any(isinstance(n, (ast.Global, ast.Nonlocal)) for n in ast.walk(up)) else up

    def _read_as_messages(self, name: str, scope: ast.AST, depth: int) -> bool:
        uses = [n for n in ast.walk(scope) if isinstance(n, ast.Name) and n.id == name
                or isinstance(n, ast.Attribute) and n.attr == name]
        stores = [n for n in uses if not isinstance(n.ctx, ast.Load)]
        by_string = any(isinstance(n, ast.Constant) and n.value == name for n in ast.walk(self.tree))  # (`getattr`)
        return not self.reflective and not by_string and len(stores) == 1 and all(
            self.message(n, depth + 1) for n in uses if n not in stores)


def _formats(node: Optional[ast.AST]) -> bool:
    """`"...".format(...)`, `.format_map`, `", ".join(...)`: a call whose result is the string it builds."""
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in (
        "format", "format_map", "join")


def _raises(call: ast.Call) -> bool:
    """An exception or a warning constructed (`RuntimeError("...")`): its text is a message."""
    name = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", "")
    return name.endswith(("Error", "Exception", "Warning"))


def _runs_commands(call: ast.Call) -> bool:
    """A function named for running a command (an exception's, `RuntimeError`, runs none)."""
    func = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", "")
    return not _raises(call) and any(w in func.lower() for w in _RUNS_COMMANDS) or func.lower().endswith("install")


MAX_BOUND_STRINGS = 4096  # strings followed through a file's bindings; past it, what the rest would add is not read


def _strings_bound(tree: ast.Module) -> Dict[str, Set[str]]:
    """Each name the file binds (an assignment, a loop's target, a `with`'s) and the string constants in what it is
    bound to, through the other names that value reads (a fixpoint, bounded)."""
    direct: Dict[str, Set[str]] = {}
    reads: Dict[str, Set[str]] = {}
    for node in ast.walk(tree):
        pairs = [(t, node.value) for t in node.targets] if isinstance(node, ast.Assign) else \
            [(node.target, node.value)] if isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.NamedExpr)) \
            and node.value is not None else [(node.target, node.iter)] if isinstance(node, (ast.For, ast.comprehension)) \
            else []
        for target, value in [(t, v) for t, v in pairs if t is not None and v is not None]:
            for t in (n for n in ast.walk(target) if isinstance(n, ast.Name)):
                direct.setdefault(t.id, set()).update(_constants(value))
                reads.setdefault(t.id, set()).update(n.id for n in ast.walk(value) if isinstance(n, ast.Name))
    out = {k: set(v) for k, v in direct.items()}
    changed, total = True, 0
    while changed and total < MAX_BOUND_STRINGS:
        changed = False
        for name, names in reads.items():
            before = len(out[name])
            for other in names & out.keys():
                out[name] |= out[other]
            changed = changed or len(out[name]) != before
            total += len(out[name]) - before
    return out


def _constants(e: ast.AST) -> List[str]:
    return [n.value for n in ast.walk(e) if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def _strings_reached(e: ast.AST, bound: Dict[str, Set[str]]) -> List[str]:
    """The string constants of `e` and those bound to the names it reads."""
    texts = _constants(e)
    for n in ast.walk(e):
        if isinstance(n, ast.Name):
            texts += sorted(bound.get(n.id, ()))
    return texts


def _filled_string(arg: ast.JoinedStr, bound: Dict[str, Set[str]], rel: str) -> List[Pin]:
    """An installer's f-string naming the engine (`f"sglang[srt]=={SGLANG_VERSION}"`, round AP): read with one
    hole, a name the file binds to strings, filled by each; else it decides nothing."""
    holes = [v for v in arg.values if not isinstance(v, ast.Constant)]
    name = holes[0].value if len(holes) == 1 and isinstance(holes[0], ast.FormattedValue) else None
    if not isinstance(name, ast.Name):
        return [Pin(COMPUTED, "", f"{rel} ({ENGINE}'s release computed)")]
    at = arg.values.index(holes[0])
    return _filled(_text_of(ast.JoinedStr(arg.values[:at])), sorted(bound.get(name.id, ())),
                   _text_of(ast.JoinedStr(arg.values[at + 1:])), rel)


def _may_compute_a_kernel(arg: ast.AST) -> bool:
    """A computed argument: a name, an item, a call; an f-string whose text names a kernel or begins computed
    (`f"{spec}"`); not one that begins with another distribution's name (`f"torch=={v}"`)."""
    if isinstance(arg, ast.Constant):
        return False
    if isinstance(arg, ast.JoinedStr):
        text = _text_of(arg)
        return text.startswith("{") or _kernel_words().search(text) is not None
    return True


def _installed_arguments(call: ast.Call) -> List[ast.AST]:
    """What an installer call installs: every argument of a function named for installing (`pip_install`), or
    those after an `"install"` element (`[sys.executable, "-m", "pip", "install", ...]`, `pip.main([...])`), or a
    command string that says `install` itself (`"pip install sgl-kernel==0.2.5"`, an f-string)."""
    flat: List[ast.AST] = []
    for a in [*call.args, *(k.value for k in call.keywords)]:
        a = a.value if isinstance(a, ast.Starred) else a
        flat += list(a.elts) if isinstance(a, (ast.List, ast.Tuple)) else [a]
    func = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", "")
    if func.lower().endswith("install"):
        return flat
    words = [isinstance(a, ast.Constant) and a.value == "install" for a in flat]
    if any(words):
        return flat[words.index(True) + 1:]
    if _raises(call) or not any(w in func.lower() for w in _RUNS_COMMANDS):  # a message (`ImportError("pip install ...")`) runs nothing
        return []
    return [a for a in flat if isinstance(a, (ast.Constant, ast.JoinedStr)) and "install" in _text_of(a)]


# the functions that run a command string (subprocess's, os.system, Modal's run_commands, fabric's run): by their name
_RUNS_COMMANDS = ("run", "call", "popen", "system", "exec", "spawn", "command", "shell", "output", "sh")


def _text_of(e: ast.AST) -> str:
    if isinstance(e, ast.Constant):
        return e.value if isinstance(e.value, str) else ""
    return "".join(v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) else "{}" for v in e.values)


def _kernel_words() -> "re.Pattern[str]":
    known = rules.providers()
    return _dist_words(tuple(sorted({d for ds in known.values() for d in ds})))


def _dist_words(dists: Tuple[str, ...]) -> "re.Pattern[str]":
    """The kernel distributions' names however spelled (`sglang-kernel`, `sglang_kernel`, `SGLang.Kernel`),
    also as a wheel's file name begins (`sglang_kernel-0.4.6-...`)."""
    spelled = "|".join("[-_.]".join(map(re.escape, d.split("-"))) for d in dists)
    return re.compile(rf"(?i)(?<![\w.-])({spelled})(?![a-z0-9_.])")
_KEYED = re.compile(r"""^\s*["']?([A-Za-z0-9][A-Za-z0-9._-]*)["']?\s*=\s*["']([^"']*)["']""")


def _keyed_pins(line: str, rel: str, named: Set[str]) -> List[Pin]:
    """Poetry's and Pipfile's `sglang-kernel = "0.4.6"` / `"==0.4.6"` / `"^0.4.6"` (a caret or tilde range is
    read with its ceiling: `^0.4.9` admits 0.4.x only, every release of which an engine's range brings)."""
    m = _KEYED.match(line)
    if not m or normalize(m.group(1)) not in named:
        return []
    spec = m.group(2).strip()
    if spec in ("*", ""):
        return [Pin(normalize(m.group(1)), "", rel)]
    if spec[0].isdigit():
        spec = "==" + spec
    elif spec[0] in "^~" and spec[1:2].isdigit():
        spec = _poetry_range(spec)
    return [Pin(normalize(m.group(1)), spec, rel)] if _requirement(f"x{spec}", rel) is not None else []



def _poetry_range(spec: str) -> str:
    """Poetry's `^X.Y.Z` (below the next bump of its first non-zero part) and `~X.Y.Z` (below the next minor, or
    major for `~X`) as PEP 440."""
    floor = spec[1:].lstrip("=").strip()
    try:
        nums = list(Version(floor).release)
    except Exception:  # a version packaging cannot read: the floor, which _requirement then refuses
        return ">=" + floor
    if spec[0] == "^":
        at = next((i for i, n in enumerate(nums) if n), len(nums) - 1)
    else:
        at = min(1, len(nums) - 1)
    ceiling = nums[:at] + [nums[at] + 1]
    return f">={floor},<{'.'.join(map(str, ceiling))}"

# -- vendored kernel interfaces -------------------------------------------------------------------


@dataclass(frozen=True)
class Interface:
    path: str
    line: int
    params: Tuple[str, ...]
    has_var_kwargs: bool
    installed: bool = False  # another distribution's, beside an installed one: an interface, not the project's code


def _module_file(base: str) -> Optional[str]:
    """The file `import` loads for `base`, in the import system's order: a package before a module file beside it
    (round U: a leftover `x.py` beside the package `x/` is never imported), and in each a built extension
    (`x.cpython-311-x86_64-linux-gnu.so`, `x.abi3.so`) before the source, a sourceless `x.pyc` after it (round AL:
    an in-place build beside its binding's source). A built one is named, never read: what it accepts is unknown."""
    for stem in (os.path.join(base, "__init__"), base):
        if stem != base and not os.path.isdir(base):
            continue
        found = _built(stem) or next((c for c in (stem + ".py", stem + ".pyc") if os.path.isfile(c)), None)
        if found:
            return found
    return None


def _built(stem: str) -> Optional[str]:
    """The built extension module `stem` names in its folder (any interpreter's tag: the fork's build is not this
    one's), or None."""
    folder, name = os.path.split(stem)
    return next((os.path.join(folder, n) for n in listing(folder) if n.startswith(name + ".")
                 and n.endswith((".so", ".pyd")) and re.fullmatch(r"[\w.-]*", n[len(name) + 1:-3])), None)


def is_built(path: str) -> bool:
    """Is the module file a built extension or bytecode (_module_file), whose code is not read?"""
    return path.endswith((".so", ".pyd", ".pyc"))


def find_module(path: str, module: str, scope: Optional[Scope] = None) -> Optional[str]:
    """The file of `module` (absolute, or relative to the file at `path`) among the files of path's project
    (`scope`, if given: project.project_scope(path))."""
    scope = scope or project_scope(path)
    here = os.path.dirname(os.path.abspath(path))
    if module.startswith("."):
        level = len(module) - len(module.lstrip("."))
        d = here
        for _ in range(level - 1):
            d = os.path.dirname(d)
        rest = module.lstrip(".")
        if rest:
            found = _module_file(os.path.join(d, *rest.split(".")))
        else:  # `from . import name`: the package itself
            found = os.path.join(d, "__init__.py") if os.path.isfile(os.path.join(d, "__init__.py")) else None
        return found if found and scope.holds(found) else None
    return _absolute_module(os.path.dirname(os.path.abspath(path)), module, scope)[0]


@per_run
def _absolute_module(here: str, module: str, scope: Scope) -> Tuple[Optional[str], bool]:
    """The file an absolute import of `module` from a file in `here` loads, and whether that is a guess (once per run
    and folder). Python searches the folders on sys.path, never a package's own folder (one with `__init__.py`)
    unless something puts it there: the nearest folder on the way up that is not one (or its src/) holds the module
    Python loads. A guess where the module is found only in a package's own folder, or in more than one folder on the
    way up (a folder with no `__init__.py` may be a namespace package as well as a root: round AH)."""
    found: List[Tuple[str, bool]] = []
    for d in upward(here):
        for base in (d, os.path.join(d, "src")):  # a src/ layout holds the project's packages under src/
            file = _module_file(os.path.join(base, *module.split(".")))
            if file and scope.holds(file) and file not in (f for f, _ in found):
                found.append((file, not os.path.isfile(os.path.join(base, "__init__.py"))))
    rooted = [f for f, root in found if root]
    chosen = rooted[0] if rooted else found[0][0] if found else None
    return chosen, len(found) > 1 or bool(found) and not rooted


def import_doubt(path: str, module: str, attribute: Optional[bool] = None) -> Optional[str]:
    """Why the file find_module names for `module` (imported at `path`) may not be what Python loads there, or None:
    an absolute import found in more than one folder on the way up, or only in a package's own folder (_absolute_
    module); where the module is taken as its package's attribute (`from pkg import m`; `attribute`, else as the
    importer's own imports say), a package `__init__` binding `m` otherwise, or serving names by a module `__getattr__`
    or a star import (the package's attribute comes first)."""
    scope = project_scope(path)
    found = find_module(path, module, scope)
    if found is None:
        return None
    if not module.startswith(".") and _absolute_module(os.path.dirname(os.path.abspath(path)), module, scope)[1]:
        rel = os.path.relpath(found, project_root(found)).replace(os.sep, "/")
        return (f"`{module}` may be {rel} or another module of that name: which one Python loads depends on the "
                "folders on sys.path")
    package = os.path.dirname(os.path.dirname(found) if found.endswith("__init__.py") else found)
    name = module.rstrip(".").rpartition(".")[2] or os.path.basename(os.path.dirname(found))
    if not (attribute if attribute is not None else _imports_as_attribute(path, package, name, scope)
            or _imports_dotted(path, module, scope)):
        return None
    return package_attribute_doubt(path, module)


def package_attribute_doubt(path: str, module: str) -> Optional[str]:
    """Why `module` (imported at `path`), read as its package's attribute, may be no module of that file, or None:
    Python 3.7+ takes `import pkg.mod as m`, `pkg.mod.f` and `from pkg import mod` off the package (`IMPORT_FROM`),
    so where the `__init__` of any package on its dotted path binds the next name to anything but that submodule (an
    assignment, another module imported under it, a def, a star import, a module `__getattr__`), the module the
    name reads is not known (round AR: identity and the width's getter module alike)."""
    scope = project_scope(path)
    found = find_module(path, module, scope)
    if found is None:
        return None
    here = os.path.dirname(found) if found.endswith("__init__.py") else found
    for _ in range(1 if module.startswith(".") else module.count(".")):
        package, name = os.path.dirname(here), os.path.splitext(os.path.basename(here))[0]
        init = os.path.join(package, "__init__.py")
        tree = bounded.python_facts(read_project_file(init)) if os.path.isfile(init) and scope.holds(init) else None
        at = _package_binds_otherwise(tree, name) if tree is not None else None
        if at:
            return (f"the package's {_where(init, at)} binds `{name}` itself (not as its submodule): `{module}` "
                    "read as its package's attribute (`from ... import`, `import ... as`) takes that first")
        here = package
    return None


def _imports_dotted(path: str, module: str, scope: Scope) -> bool:
    """Does the file at `path` import `module` by a dotted `import` (`import pkg.mod as m`, `import pkg.mod`),
    which Python 3.7+ reads as the attributes of the packages on the way (`IMPORT_FROM`)?"""
    tree = bounded.python_facts(read_project_file(path)) if "." in module.lstrip(".") and scope.holds(path) else None
    return tree is not None and any(isinstance(n, ast.Import) and any(
        a.name == module or a.name.startswith(module + ".") for a in n.names) for n in ast.walk(tree))


def _imports_as_attribute(path: str, package: str, name: str, scope: Scope) -> bool:
    """Does the file at `path` take `name` off the package at `package` by `from <package> import name`?"""
    tree = bounded.python_facts(read_project_file(path)) if scope.holds(path) else None
    for node in (n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)) if tree is not None else ():
        if any(a.name == name for a in node.names):
            source = "." * node.level + (node.module or "")
            init = find_module(path, source, scope)
            if init is not None and os.path.dirname(init) == package and init.endswith("__init__.py"):
                return True
    return False


def _package_binds_otherwise(tree: ast.Module, name: str) -> Optional[int]:
    """The line where a package's `__init__` binds `name` by anything but importing its own submodule of that
    name (`from . import name`), serves names by a module `__getattr__` or a star import, or binds reflectively."""
    reflective = _reflective(tree)
    if reflective is not None:
        return reflective[0]
    written = _global_writes(tree, name)
    if written is not None:
        return written
    for node in scope_nodes(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 1 and not node.module \
                and any(a.name == name and a.asname in (None, name) for a in node.names):
            continue
        imports = isinstance(node, (ast.Import, ast.ImportFrom)) and any(
            a.name == "*" or (a.asname or a.name.split(".")[0]) == name for a in node.names)
        served = isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == "__getattr__"
        if imports or served or _bound_name(node) == name:
            return node.lineno
    return None


def installed_module(path: str, module: str) -> Optional[str]:
    """For a file of an installed distribution, the file of `module` (absolute) that another distribution
    installed beside it ships (sgl_kernel beside sglang): none of the project's code, read only for the
    interface it declares."""
    scope = project_scope(path)
    if not scope.installed or module.startswith("."):
        return None
    found = _module_file(os.path.join(scope.root, *module.split(".")))
    return found if found and inside(found, scope.root) and not scope.holds(found) else None


def vendored_interface(path: str, qualname: str, param: str = "", _memo: Optional[dict] = None) -> Optional[Interface]:
    """Read `def NAME(...)` of the module `qualname` points at, if that module sits in the same project, or,
    for a file of an installed distribution, in another one installed beside it (`installed`: read as the
    kernel's interface, never as the project's code) (param: the parameter a rule asks about, which decides
    between several bindings of the name; `_memo`: read_interface's, whose interface_why says why it decided
    nothing)."""
    module, _, func = qualname.rpartition(".")
    if not module:
        return None
    found = find_module(path, module)
    doubt = import_doubt(path, module) if found else None
    if doubt:
        _undecided(_memo if _memo is not None else {}, doubt)
        return None
    if found:
        return read_interface(found, func, param=param, _memo=_memo)
    beside = installed_module(path, module)
    iface = read_interface(beside, func, param=param, _memo=_memo) if beside else None
    return replace(iface, installed=True) if iface is not None else None


def reexport_target(path: str, qualname: str) -> Optional[str]:
    """What a project module's name is where the module binds it once, by `from <module> import name` of a module
    outside the project (`fork_ops/__init__.py`: `from sgl_kernel.flash_mla import flash_mla_sparse_fwd`), followed
    through the project's re-exports 4 deep; None where it is anything else (a def, two bindings, a star import, a
    submodule of that name, a `global` write, a reflective module). Identity by resolution: the gate decides the
    kernel it resolves to."""
    module, _, func = qualname.rpartition(".")
    file = find_module(path, module) if module else None
    return _reexported(file, func, 0) if file and not import_doubt(path, module) else None


def _reexported(file: str, func: str, depth: int) -> Optional[str]:
    tree = bounded.python_facts(read_project_file(file)) if depth <= 4 else None
    if tree is None or _global_writes(tree, func) is not None or _reflective(tree) is not None:
        return None
    if file.endswith("__init__.py") and _module_file(os.path.join(os.path.dirname(file), func)):
        return None  # `import pkg.func` anywhere rebinds the package's attribute to the submodule
    nodes = list(scope_nodes(tree))
    binds = [(n, a) for n in nodes if isinstance(n, ast.ImportFrom) for a in n.names
             if a.name == "*" or (a.asname or a.name) == func]
    other = [n for n in nodes if _bound_name(n) == func or isinstance(n, ast.Import)
             and any((a.asname or a.name.split(".")[0]) == func for a in n.names)]
    if len(binds) != 1 or other or binds[0][1].name == "*":
        return None
    node, alias = binds[0]
    source = "." * node.level + (node.module or "")
    inner = find_module(file, source)
    if inner is not None and import_doubt(file, source):
        return None
    if inner is not None:  # a module of the project: its own binding decides
        return _reexported(inner, alias.name, depth + 1)
    return f"{source}.{alias.name}" if not node.level else None


def kwargs_target(file: str, func: str) -> Optional[str]:
    """The kernel a project wrapper hands its `**kwargs` to: where the module defines `func` once and its body (a
    docstring aside) is `return inner(..., **kwargs)` of its own `**kwargs`, `inner` bound once by `from <module
    outside the project> import name`; else None."""
    tree = bounded.python_facts(read_project_file(file))
    defs = [n for n in scope_nodes(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
            and n.name == func] if tree is not None else []
    if len(defs) != 1 or defs[0].args.kwarg is None:
        return None
    body = [b for b in defs[0].body if not (isinstance(b, ast.Expr) and isinstance(b.value, ast.Constant))]
    call = body[0].value if len(body) == 1 and isinstance(body[0], ast.Return) else None
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and any(
            k.arg is None and isinstance(k.value, ast.Name) and k.value.id == defs[0].args.kwarg.arg
            for k in call.keywords)):
        return None
    name = call.func.id
    binds = [(n, a) for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names
             if (a.asname or a.name) == name]
    other = [n for n in ast.walk(tree) if _bound_name(n) == name]
    if len(binds) != 1 or other or binds[0][0].level or find_module(file, binds[0][0].module or "") is not None:
        return None
    return f"{binds[0][0].module}.{binds[0][1].name}"


def read_interface(file: str, func: str, depth: int = 0, param: str = "",
                   _memo: Optional[dict] = None) -> Optional[Interface]:
    """The signature of `func` in `file`, following a re-export within the project (`from x import func`,
    or `from x import *` where x exports func: star_binds).

    Where the module binds the name more than once (an import and a fallback), the
    interface is one that every binding satisfies as to `param`, or None if they disagree.
    Each module is read once per call (`_memo`: a module whose re-exports reach it again, or that many
    modules re-export, costs one reading; one being read is not known).
    """
    memo: dict = {} if _memo is None else _memo
    key = ("interface", os.path.realpath(file), func)
    if key in memo:
        return memo[key]
    memo[key] = None
    memo[key] = _read_interface(file, func, depth, param, memo)
    return memo[key]


def importable_file(module: str) -> Optional[str]:
    """The source file the running Python would import for the absolute `module` (found, never imported:
    importlib's find_spec of its top-level package, then its path); None where it is not importable,
    not Python source, or not a file."""
    top = module.split(".")[0]
    if not module or module.startswith(".") or not all(p.isidentifier() for p in module.split(".")):
        return None
    try:
        spec = importlib.util.find_spec(top)  # a top-level name: no parent package is imported
    except (ImportError, ValueError, AttributeError):
        return None
    if spec is None:
        return None
    rest = module.split(".")[1:]
    origin = spec.origin if not rest else None
    for base in (spec.submodule_search_locations or ()) if rest else ():
        for cand in (os.path.join(base, *rest) + ".py", os.path.join(base, *rest, "__init__.py")):
            if os.path.isfile(cand):
                origin = cand
                break
        if origin:
            break
    return origin if origin and origin.endswith(".py") and os.path.isfile(origin) else None


def star_target(file: str, node: ast.ImportFrom) -> Tuple[Optional[str], str]:
    """The file `from <module> import *` at `file` reads (the project's module, else one installed beside an
    installed distribution, else the one the running Python would import), and the module as written."""
    module = "." * node.level + (node.module or "")
    target = find_module(file, module) or installed_module(file, module)
    return target or (importable_file(module) if not node.level else None), module


def star_import_binds(file: str, node: ast.ImportFrom, name: str, depth: int = 0,
                      _memo: Optional[dict] = None) -> Optional[bool]:
    """Does the star import `node` of the module at `file` bind `name`? A module that can be read decides
    (star_binds); one that is neither the project's nor installed here may bind anything: None."""
    target, _ = star_target(file, node)
    return star_binds(target, name, depth, _memo) if target else None


def scope_nodes(tree: ast.Module) -> Iterable[ast.AST]:
    """Every node that runs in the module's own scope, at any depth of its blocks (if/try/with/for/while/
    match, the expressions of its statements), but not the bodies of its functions, lambdas and classes
    (each def, lambda and class is yielded, with its decorators, defaults and bases). An `if` whose test is
    constant at run time (`TYPE_CHECKING`, `if False:`) yields only the branch that runs (round BI)."""
    checking = _type_checking_names(tree)
    todo: List[ast.AST] = [tree]
    while todo:
        node = todo.pop()
        yield node
        taken = _constant_test(node.test, checking) if isinstance(node, ast.If) else None
        if taken is not None:
            todo.extend(reversed([node.test, *(node.body if taken else node.orelse)]))  # type: ignore[attr-defined]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = node.args
            todo.extend([*node.decorator_list, *a.defaults, *(d for d in a.kw_defaults if d is not None)])
            todo.extend(x for x in (node.returns,) if x is not None)
        elif isinstance(node, ast.ClassDef):
            todo.extend([*node.decorator_list, *node.bases, *node.keywords])
        elif isinstance(node, ast.Lambda):
            todo.extend([*node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)])
        else:
            todo.extend(reversed(list(ast.iter_child_nodes(node))))


def _type_checking_names(tree: ast.Module) -> Set[str]:
    """The names that hold `typing.TYPE_CHECKING` in the module (False at run time): its own name, an import alias,
    a top-level `TC = TYPE_CHECKING`; not one the module assigns anything else (round BI)."""
    names = {"TYPE_CHECKING"}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module in ("typing", "typing_extensions"):
            names.update(a.asname or a.name for a in node.names if a.name == "TYPE_CHECKING")
        elif isinstance(node, ast.Assign) and _constant_test(node.value, names) is False:
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    rebound = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del))}
    kept = {n for n in names & rebound if all(_constant_test(a.value, {"TYPE_CHECKING"}) is False for a in ast.walk(tree)
                                              if isinstance(a, ast.Assign) and any(isinstance(t, ast.Name) and t.id == n
                                                                                  for t in a.targets))}
    return {n for n in names if n not in rebound or n in kept}


def _constant_test(test: ast.AST, checking: Set[str]) -> Optional[bool]:
    """What an `if` test is at run time where no code decides it: False for `TYPE_CHECKING` (any spelling in
    `checking`, `typing.TYPE_CHECKING`), `False`, `0`, `None`; True for their negation and true constants; else None
    (round BI: an import only type checkers see never binds the name)."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = _constant_test(test.operand, checking)
        return None if inner is None else not inner
    if isinstance(test, ast.Constant) and isinstance(test.value, (bool, int, type(None))):
        return bool(test.value)
    if isinstance(test, ast.Name) and test.id in checking or isinstance(test, ast.Attribute) \
            and test.attr == "TYPE_CHECKING" and isinstance(test.value, ast.Name) \
            and test.value.id in ("typing", "typing_extensions"):
        return False
    return None


_MATCH_NAMES = tuple(getattr(ast, n) for n in ("MatchAs", "MatchStar", "MatchMapping") if hasattr(ast, n))


def _bound_name(node: ast.AST) -> Optional[str]:
    """The name a node of the module's scope binds (or deletes), if it binds one by itself."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return node.name
    if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
        return node.id
    if isinstance(node, ast.ExceptHandler):
        return node.name
    if _MATCH_NAMES and isinstance(node, _MATCH_NAMES):
        return getattr(node, "name", None) or getattr(node, "rest", None)
    return None


def _global_writes(tree: ast.Module, name: str) -> Optional[int]:
    """The line of a `global name` in a function or class (a write to the module's binding from there)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Global) and name in node.names:
            return node.lineno
    return None


def _reflective(tree: ast.Module) -> Optional[Tuple[int, str]]:
    """exec(), globals()/vars(), sys.modules, setattr/delattr: a module binding that no reading can follow."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in ("exec", "globals", "vars", "setattr", "delattr"):
            return node.lineno, f"{node.func.id}()"
        if isinstance(node, ast.Attribute) and node.attr == "modules" and isinstance(node.value, ast.Name) \
                and node.value.id == "sys":
            return node.lineno, "sys.modules"
    return None


def _undecided(memo: dict, why: str) -> None:
    memo.setdefault("why", why)


def interface_why(memo: dict) -> Optional[str]:
    """Why read_interface (given this `_memo`) decided nothing, where it read something it cannot model."""
    return memo.get("why")


def _where(file: str, line: int) -> str:
    return f"{os.path.relpath(file, project_root(file)).replace(os.sep, '/')}:{line}"


def _read_interface(file: str, func: str, depth: int, param: str, memo: dict) -> Optional[Interface]:
    """Every binding of `func` in the module's scope, at any depth of its blocks, counts: a def, an import
    or re-export, `func = other_def` (or `func: T = other_def`); any other form (a class, a tuple or `for`
    target, with-as, a walrus, del, a `global` write from a function, a star import that may bind it, exec or
    a write through globals()) is one the reader cannot model, and decides nothing."""
    tree = bounded.python_facts(read_project_file(file)) if depth <= 4 else None
    if tree is None:
        return None
    line = _global_writes(tree, func)
    if line is not None:
        _undecided(memo, f"{_where(file, line)} writes `{func}` from a function (`global {func}`)")
        return None
    nodes = list(scope_nodes(tree))
    defs = {n.name: n for n in nodes if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    found: List[Optional[Interface]] = []
    plain: Set[int] = set()  # the Name targets of `func = other_def`, read as that def
    for node in nodes:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == func:
            a = node.args
            names = tuple(x.arg for x in a.posonlyargs + a.args + a.kwonlyargs)
            found.append(Interface(file, node.lineno, names, a.kwarg is not None))
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if alias.name == "*":  # `from .flash_mla_interface import *`: a binding where that module exports func
                    target, module = star_target(file, node)
                    binds = star_binds(target, func, depth + 1, memo) if target and depth < 4 else None
                    if binds is None:
                        _undecided(memo, f"`from {module} import *` at {_where(file, node.lineno)} may bind `{func}`"
                                         + ("" if target else ", and that module is not in the project nor "
                                                              "importable here to read"))
                    inner = read_interface(target, func, depth + 1, param, memo) if binds else None
                    if binds and inner is None:  # the star import's own line is the blocker to name
                        below = memo.get("why")
                        memo["why"] = f"`from {module} import *` at {_where(file, node.lineno)} may rebind `{func}`" \
                                      + (f" ({below})" if below and len(below) < 300 else "")
                    if binds is not False:
                        found.append(inner)
                elif (alias.asname or alias.name) == func:
                    source = "." * node.level + (node.module or "")
                    target = find_module(file, source) if depth < 4 else None
                    doubt = import_doubt(file, source) if target else None
                    if doubt:  # (the module Python loads may be another: round AH)
                        _undecided(memo, f"`from {source} import` at {_where(file, node.lineno)}: {doubt}")
                    found.append(read_interface(target, alias.name, depth + 1, param, memo)
                                 if target and not doubt else None)
        elif isinstance(node, ast.Import):
            if any((alias.asname or alias.name.split(".")[0]) == func for alias in node.names):
                _undecided(memo, f"`import` at {_where(file, node.lineno)} binds `{func}` to a module")
                found.append(None)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None and any(
                isinstance(t, ast.Name) and t.id == func for t in (node.targets if isinstance(node, ast.Assign)
                                                                    else [node.target])):
            plain.update(id(t) for t in (node.targets if isinstance(node, ast.Assign) else [node.target]))
            value = node.value
            if isinstance(value, ast.Name) and value.id in defs and value.id != func:
                d = defs[value.id].args
                found.append(Interface(file, node.lineno, tuple(x.arg for x in d.posonlyargs + d.args + d.kwonlyargs),
                                       d.kwarg is not None))
            else:
                if not (isinstance(value, ast.Constant) and value.value is None):  # (a `= None` fallback: as before)
                    _undecided(memo, f"{_where(file, node.lineno)} assigns `{func}` from something other than a "
                                     "def of the module")
                found.append(None)
        elif _bound_name(node) == func and id(node) not in plain and not isinstance(node, (ast.FunctionDef,
                                                                                            ast.AsyncFunctionDef)):
            what = "a class" if isinstance(node, ast.ClassDef) else "a binding the reader does not model"
            _undecided(memo, f"{_where(file, getattr(node, 'lineno', 0))} rebinds `{func}` ({what})")
            found.append(None)
    if found and not any(i is None for i in found):
        odd = _reflective(tree)
        if odd is not None:
            _undecided(memo, f"{_where(file, odd[0])} uses {odd[1]}, which may rebind `{func}`")
            return None
    if not found:
        _unbound_why(file, tree, nodes, func, memo)
    if not found or any(i is None for i in found):
        return None
    if len(found) == 1:
        return found[0]
    merged = _merge(found, param)  # type: ignore[arg-type]
    if merged is None:
        lines = ", ".join(str(i.line) for i in found)  # type: ignore[union-attr]
        _undecided(memo, f"{_where(file, found[0].line)} binds `{func}` {len(found)} times (lines {lines}) "  # type: ignore[union-attr]
                         "with different signatures; which one runs is not decided")
    return merged


def _unbound_why(file: str, tree: ast.Module, nodes: List[ast.AST], func: str, memo: dict) -> None:
    """Why a module that binds `func` nowhere that runs decides nothing: a module `__getattr__` (PEP 562) serves it,
    or it is bound only where type checkers look (round BI: `if TYPE_CHECKING:` imports the new wrapper, `__getattr__`
    serves the old one)."""
    served = next((n for n in nodes if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                   and n.name == "__getattr__"), None)
    typed = next((n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom)) and any(
        (a.asname or a.name.split(".")[0]) == func for a in n.names)), None)
    if served is not None:
        _undecided(memo, f"{_where(file, served.lineno)} serves `{func}` through a module `__getattr__` (PEP 562)"
                         + (f"; the import at line {typed.lineno} runs only for type checkers" if typed else "")
                         + ": what it returns at run time is not read")
    elif typed is not None:
        _undecided(memo, f"{_where(file, typed.lineno)} imports `{func}` only for type checkers (never at run time)")


def star_binds(file: str, name: str, depth: int = 0, _memo: Optional[dict] = None) -> Optional[bool]:
    """Does `from <the module at file> import *` bind `name`? As Python decides it: the names of a literal
    `__all__` if the module sets one, else every name it binds that does not start with `_` (its own
    star imports followed, 4 deep). None where that cannot be read: an `__all__` bound more than once or
    anywhere but one top-level literal assignment (in a block, augmented, extended, computed), a module too
    big or too deep to read, a star import past the depth or of a module neither the project's nor importable
    here, a cycle of star imports. Each module is read once per call (`_memo`, shared with read_interface)."""
    memo: dict = {} if _memo is None else _memo
    key = ("star", os.path.realpath(file), name)
    if key in memo:
        return memo[key]
    memo[key] = None
    memo[key] = _star_binds(file, name, depth, memo)
    return memo[key]


def _literal_all(tree: ast.Module, nodes: List[ast.AST]) -> Tuple[bool, Optional[Set[str]]]:
    """(does the module name `__all__`, the names of its one literal top-level assignment or None)."""
    uses = [n for n in nodes if isinstance(n, ast.Name) and n.id == "__all__"]
    if not uses and _global_writes(tree, "__all__") is None:
        return False, None
    tops = [s for s in tree.body if isinstance(s, (ast.Assign, ast.AnnAssign)) and s.value is not None
            and [t for t in (s.targets if isinstance(s, ast.Assign) else [s.target])
                 if isinstance(t, ast.Name) and t.id == "__all__"]]
    if len(uses) != 1 or len(tops) != 1 or _global_writes(tree, "__all__") is not None:
        return True, None  # bound twice, in a block, augmented, extended, read or written from elsewhere
    s = tops[0]
    targets = s.targets if isinstance(s, ast.Assign) else [s.target]
    value = s.value
    if len(targets) != 1 or not isinstance(value, (ast.List, ast.Tuple)) \
            or not all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in value.elts):
        return True, None  # computed
    return True, {e.value for e in value.elts}  # type: ignore[union-attr]


def _star_binds(file: str, name: str, depth: int, memo: dict) -> Optional[bool]:
    tree = bounded.python_facts(read_project_file(file)) if depth <= 4 else None
    if tree is None:
        return None
    nodes = list(scope_nodes(tree))
    named, exported = _literal_all(tree, nodes)
    if any(isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "__all__"
           for n in ast.walk(tree)):
        return None  # `__all__.append(...)` and the like: computed
    if named:
        return None if exported is None else name in exported
    if name.startswith("_"):
        return False
    unknown = False
    for node in ast.walk(tree):
        if _bound_name(node) == name \
                or isinstance(node, ast.alias) and (node.asname or node.name.split(".")[0]) == name:
            return True
    if _global_writes(tree, name) is not None:
        return True
    for node in nodes:
        if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
            inner = star_import_binds(file, node, name, depth + 1, memo) if depth < 4 else None
            if inner:
                return True
            unknown = unknown or inner is None
    return None if unknown else False


def _merge(found: List[Interface], param: str) -> Optional[Interface]:
    """Several bindings of one name (an import and a fallback, a TYPE_CHECKING stub and a def): one that
    cannot take `param` decides (the call would raise there); otherwise the ones with named parameters must
    agree (the same parameters in the same places, `**kwargs` or not; a `(*args, **kwargs)` fallback takes
    anything), or which one runs is not decided: None."""
    for i in found:
        if param not in i.params and not i.has_var_kwargs:
            return i
    named = [i for i in found if i.params] or found
    if len({(i.params, i.has_var_kwargs) for i in named}) > 1:
        return None
    return named[0]


@per_run
def packaged_elsewhere(root: str, package: str) -> Optional[str]:
    """The packaging file of the project at `root` that installs `package` (a kernel's top-level module) from a folder
    of its own (setup.py's or setup.cfg's `package_dir`, pyproject's `[tool.setuptools.package-dir]`: a vendored
    build mapped over the pinned wheel's, round AM), as `file: mapping`; None where none does (read bounded, never
    run; once per run and project)."""
    for here in _packaging_folders(root):
        for name, mapping in _package_dirs(here):
            name = os.path.relpath(os.path.join(here, name), root).replace(os.sep, "/")
            for key, folder in mapping.items():
                if key == package or key.startswith(package + "."):
                    return f"{name}: {key!r} -> {folder!r}"
                if key == "" and folder not in ("", ".", "src") and (
                        os.path.isdir(os.path.join(here, folder, package))
                        or os.path.isfile(os.path.join(here, folder, package + ".py"))):
                    return f"{name}: '' -> {folder!r}"
    return None


_PACKAGING = ("setup.py", "setup.cfg", "pyproject.toml")


def _packaging_folders(root: str, depth: int = 4, limit: int = 2000) -> Iterable[str]:
    """The root, then each folder below it (four deep, 2000 folders at most, links not followed, hidden and
    built folders skipped) holding a packaging file: a sub-project a Dockerfile or a script may install
    (`pip install ./third_party/flashmla`, whose setup.py maps the kernel's package to a folder: round AO)."""
    yield root
    seen = 0
    for here, dirs, names in os.walk(root):
        level = os.path.relpath(here, root).count(os.sep) + (here != root)
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _SKIPPED_FOLDERS) if level < depth else []
        seen += 1
        if seen > limit:
            return
        if here != root and any(n in names for n in _PACKAGING):
            yield here


_SKIPPED_FOLDERS = {"node_modules", "__pycache__", "site-packages", "build", "dist", "venv", "env"}


def _package_dirs(root: str) -> Iterable[Tuple[str, Dict[str, str]]]:
    """Each packaging file's `package_dir` mapping (text keys and values only)."""
    text = read_project_file(os.path.join(root, "setup.py"))
    tree = bounded.python_facts(text) if text else None
    for node in ast.walk(tree) if tree is not None else ():
        if isinstance(node, ast.keyword) and node.arg == "package_dir" and isinstance(node.value, ast.Dict):
            yield "setup.py", {k.value: v.value for k, v in zip(node.value.keys, node.value.values)
                               if isinstance(k, ast.Constant) and isinstance(v, ast.Constant)
                               and isinstance(k.value, str) and isinstance(v.value, str)}
    text = read_project_file(os.path.join(root, "pyproject.toml"))
    try:
        data = bounded.toml(text) if text else {}
    except ValueError:
        data = {}
    tool = data.get("tool") if isinstance(data, dict) else None
    setuptools = tool.get("setuptools") if isinstance(tool, dict) else None
    dirs = setuptools.get("package-dir") if isinstance(setuptools, dict) else None
    if isinstance(dirs, dict):
        yield "pyproject.toml", {str(k): str(v) for k, v in dirs.items()}
    text = read_project_file(os.path.join(root, "setup.cfg"))
    parser = _setup_cfg(text) if text else None
    if parser is None:
        return
    if parser.has_section("options.package_dir"):
        yield "setup.cfg", {k: v for k, v in parser.items("options.package_dir") if k != "__name__"}
    raw = parser.get("options", "package_dir", fallback="")
    pairs = [line.split("=", 1) for line in raw.splitlines() if "=" in line]
    if pairs:
        yield "setup.cfg", {k.strip(): v.strip() for k, v in pairs}
