"""Kernel gate: does the kernel a call resolves to accept `topk_length`?

Answered statically, without importing the kernel, from (in order) an explicit
pin, the pins of the project or installed distribution that owns the file, and
a kernel interface vendored in the same tree.
"""
from __future__ import annotations

import ast
import functools
import os
import re
from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

PROJECT_FILES = ("pyproject.toml", "setup.cfg", "setup.py")
_SPEC = re.compile(r"(===|==|~=|>=|<=|!=|>|<)\s*([0-9][0-9A-Za-z.+!-]*)")


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def parse_version(v: str) -> Tuple:
    """A sortable key for the release strings kernels use (0.4.2.post2, 0.4.3rc1)."""
    m = re.match(r"(\d+(?:\.\d+)*)(?:\.?(a|b|rc)(\d+))?(?:\.?post(\d+))?", v.strip())
    if not m:
        return (0,)
    release = tuple(int(x) for x in m.group(1).split("."))
    release = release + (0,) * (4 - len(release))
    pre = (0, m.group(2), int(m.group(3))) if m.group(2) else (1, "", 0)
    post = int(m.group(4)) if m.group(4) else -1
    return release + (pre, post)


@dataclass(frozen=True)
class Pin:
    dist: str  # normalized distribution name
    spec: str  # e.g. "==0.4.5" or ">=0.4.3,<0.5"
    source: str  # where it was found, for the reason text

    def __str__(self) -> str:
        return f"{self.dist}{self.spec}"


def parse_pin(text: str, source: str) -> Pin:
    """`NAME==VERSION` (or any specifier set) as given on the command line."""
    m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(.*)$", text)
    if not m or not _SPEC.search(m.group(2)):
        raise ValueError(f"expected NAME==VERSION, got {text!r}")
    return Pin(normalize(m.group(1)), m.group(2).replace(" ", ""), source)


def accepts(pin: Pin, min_versions: Dict[str, Optional[str]]) -> Optional[bool]:
    """True/False when every version the pin allows does/doesn't accept topk_length; None if unknown."""
    if pin.dist not in min_versions:
        return None
    floor = min_versions[pin.dist]
    if floor is None:  # no release of this distribution has the parameter
        return False
    lo_ok, hi_bad = False, False
    need = parse_version(floor)
    for op, ver in _SPEC.findall(pin.spec):
        v = parse_version(ver)
        if op in ("==", "==="):
            return v >= need
        if op in (">=", ">", "~=") and v >= need:
            lo_ok = True
        if (op == "<" and v <= need) or (op == "<=" and v < need):
            hi_bad = True
    if hi_bad:
        return False
    return True if lo_ok else None


def _pins_in_text(text: str, dists: Iterable[str], source: str) -> List[Pin]:
    pins = []
    for dist in dists:
        pat = re.escape(dist).replace(r"\-", "[-_.]")
        for m in re.finditer(rf"(?<![\w.-]){pat}\s*((?:(?:===|==|~=|>=|<=|!=|>|<)\s*[0-9][0-9A-Za-z.+!-]*\s*,?\s*)+)", text, re.I):
            pins.append(Pin(dist, re.sub(r"\s", "", m.group(1)).rstrip(","), source))
    return pins


@functools.lru_cache(maxsize=None)
def _dir_listing(d: str) -> Tuple[str, ...]:
    try:
        return tuple(sorted(os.listdir(d)))
    except OSError:
        return ()


@functools.lru_cache(maxsize=None)
def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return ""


@functools.lru_cache(maxsize=None)
def _owners(site_dir: str) -> Dict[str, str]:
    """Every file listed in a RECORD of site_dir -> the *.dist-info folder that lists it."""
    owners: Dict[str, str] = {}
    for name in _dir_listing(site_dir):
        if name.endswith(".dist-info"):
            info = os.path.join(site_dir, name)
            for line in _read(os.path.join(info, "RECORD")).splitlines():
                owners.setdefault(line.rsplit(",", 2)[0], info)
    return owners


def project_pins(path: str, dists: Sequence[str]) -> List[Pin]:
    """Pins of `dists` in the nearest project (or installed distribution) that holds `path`."""
    d = os.path.dirname(os.path.abspath(path))
    while True:
        listing = _dir_listing(d)
        if any(n.endswith(".dist-info") for n in listing):
            rel = os.path.relpath(os.path.abspath(path), d).replace(os.sep, "/")
            owner = _owners(d).get(rel)
            if owner:
                meta = os.path.join(owner, "METADATA")
                return _pins_in_text(_read(meta), dists, os.path.relpath(meta, d))
        found: List[Pin] = []
        for name in listing:
            if name in PROJECT_FILES or (name.startswith("requirements") and name.endswith((".txt", ".in"))):
                f = os.path.join(d, name)
                found += _pins_in_text(_read(f), dists, f)
        if found:
            return found
        parent = os.path.dirname(d)
        if parent == d or ".git" in listing:
            return []
        d = parent


@dataclass(frozen=True)
class Interface:
    path: str
    line: int
    params: Tuple[str, ...]
    has_var_kwargs: bool


def vendored_interface(path: str, qualname: str) -> Optional[Interface]:
    """Read `def NAME(...)` of the module `qualname` points at, if that module sits in the same tree."""
    module, _, func = qualname.rpartition(".")
    if not module:
        return None
    d = os.path.dirname(os.path.abspath(path))
    if module.startswith("."):  # relative import: resolve from the file's own package
        level = len(module) - len(module.lstrip("."))
        for _ in range(level - 1):
            d = os.path.dirname(d)
        rest = module.lstrip(".")
        base = os.path.join(d, *rest.split(".")) if rest else None
        for cand in ((base + ".py", os.path.join(base, "__init__.py")) if base else (os.path.join(d, "__init__.py"),)):
            if os.path.isfile(cand):
                return read_interface(cand, func)
        return None
    parts = module.split(".")
    while True:
        for cand in (os.path.join(d, *parts) + ".py", os.path.join(d, *parts, "__init__.py")):
            if os.path.isfile(cand):
                return read_interface(cand, func)
        parent = os.path.dirname(d)
        if parent == d:
            return None
        d = parent


def read_interface(file: str, func: str) -> Optional[Interface]:
    try:
        tree = ast.parse(_read(file))
    except SyntaxError:
        return None
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == func:
            a = node.args
            names = tuple(x.arg for x in a.posonlyargs + a.args + a.kwonlyargs)
            return Interface(file, node.lineno, names, a.kwarg is not None)
    return None
