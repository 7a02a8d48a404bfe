"""Where a project ends, and how its own files are read.

Every decision about a file (its [tool.topk-migrate] configuration, the kernel
pins, the installed distribution that owns it, a vendored kernel interface) is
taken from inside its project, never from the directories around it: a fork
checked out under someone else's tree, or a revision laid out in a temporary
directory, must not pick up what happens to lie above it. `project_root` is the
one place that decides where that search stops.
"""
from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from typing import FrozenSet, Optional, Tuple

# PROJECT_FILE_LIMIT: the one bound of a project file (audit and bump read it from here)
from .discover import PROJECT_FILE_LIMIT, PatternSet, compile_patterns, read_regular
from .run_context import per_run

PROJECT_FILES = ("pyproject.toml", "setup.cfg", "setup.py")
# requirements*.txt, pyproject.toml, setup.*, METADATA, modules read for facts: a bigger one is not
# read (PROJECT_FILE_LIMIT, discover's: the one bound for every project file, .gitignore included).
# Only a RECORD gets more, under its own bound: those of the biggest wheels, torch and vLLM, are 0.7
# to 1.3 MB.
RECORD_LIMIT = 16 << 20


# A test suite's folders and modules: the analysis reaches them only through an import naming them, the kernel gate
# never reads them (they install into a test environment, not the serving one). One list for both layers.
TEST_DIRS = frozenset({"tests", "test"})


def is_test_module(name: str) -> bool:
    """A test module by its file name (`test_*.py`, `*_test.py`, `conftest.py`), as pytest collects them."""
    return name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py"


def is_test_code(rel: str) -> bool:
    """A file of a test suite: under a `tests/`/`test/` folder, or a test module by its name."""
    parts = rel.replace(os.sep, "/").split("/")
    return any(p in TEST_DIRS for p in parts[:-1]) or is_test_module(parts[-1])


@per_run
def listing(directory: str) -> Tuple[str, ...]:
    """The entry names of a directory (empty if it cannot be listed); read once per run (run_context)."""
    try:
        return tuple(sorted(os.listdir(directory)))
    except OSError:
        return ()


def is_site_dir(names: Tuple[str, ...]) -> bool:
    return any(n.endswith(".dist-info") for n in names)


def _has_requirements(names: Tuple[str, ...]) -> bool:
    return any(n.startswith("requirements") and n.endswith((".txt", ".in")) for n in names)


@per_run
def shared(directory: str) -> bool:
    """Can other users add files to `directory`? World-writable (/tmp, /var/tmp), or, for a user
    other than root, owned by another user (root runs over checkouts it does not own, in containers)."""
    try:
        st = os.stat(directory)
    except OSError:
        return False
    if st.st_mode & stat.S_IWOTH:
        return True
    uid = os.geteuid() if hasattr(os, "geteuid") else 0
    return uid != 0 and st.st_uid not in (uid, 0)


@per_run
def _root_of_dir(start: str, stop: Optional[str] = None) -> str:
    d, marked, loose = start, None, None
    while True:
        names = listing(d)
        if is_site_dir(names):  # installed: wheels ship nested pyproject.toml/setup.py of their own
            return d
        if ".git" in names:
            ignored = ignored_dir(d, start)
            if ignored is None:
                return marked or d
            # What the repository ignores (a build folder, a kernel fetched into .carry/) is none of its
            # project: the climb ends at that directory, as it ends outside any repository.
            return _root_of_dir(start, ignored)
        if marked is None and any(n in PROJECT_FILES for n in names):
            marked = d
        if loose is None and _has_requirements(names):
            loose = d
        parent = os.path.dirname(d)
        if d == stop or parent == d or shared(parent):  # what another user planted above never governs the project
            if loose is not None and (marked is None or len(loose) > len(marked)):
                return loose  # a folder with its own requirements file: not a parent's project
            return marked or loose or start
        d = parent


@per_run
def _ignore_patterns(path: str) -> Optional[PatternSet]:
    """The patterns of one ignore file (None: absent, empty, or symlinked, which git does not read)."""
    text = None if os.path.islink(path) else read_project_file(path)
    return compile_patterns(text.splitlines()) if text else None


def ignored_dir(top: str, start: str) -> Optional[str]:
    """The shallowest directory from `top` (a git work tree's top) down to `start` that git's ignore
    rules exclude, as git reads them (.git/info/exclude, then each .gitignore on the way, the deeper
    deciding); None if none does. Read statically: a file git tracks inside an ignored directory is
    not told apart (git itself adds one only when forced)."""
    rel = os.path.relpath(start, top)
    if rel == os.curdir or rel.split(os.sep)[0] == os.pardir:
        return None
    parts = rel.split(os.sep)
    specs = []  # (how many components down its base is, its patterns), deepest last
    for depth in range(len(parts)):
        d = os.path.join(top, *parts[:depth])
        files = [os.path.join(top, ".git", "info", "exclude")] if depth == 0 else []
        for f in files + [os.path.join(d, ".gitignore")]:
            spec = _ignore_patterns(f)
            if spec is not None:
                specs.append((depth, spec))
        for base, spec in reversed(specs):
            decided = spec.check_parts(parts[:depth + 1], base, True)
            if decided is not None:
                if decided:
                    return os.path.join(top, *parts[:depth + 1])
                break
    return None


def project_root(path: str) -> str:
    """The directory every upward search from `path` (a file or a directory) stops at.

    Climbing from `path` no higher than the first `.git` entry (a repository, or the
    top of a revision `audit --rev` lays out): a directory of installed distributions
    (`*.dist-info`, site-packages) if one is met; else the first directory holding a
    project file (pyproject.toml, setup.cfg, setup.py); else the `.git` directory itself. A
    directory the repository's ignore rules exclude (`ignored_dir`) is none of its project: from
    inside one the climb ends there, as outside any repository.
    Outside any repository: the nearest directory holding a project file or a requirements
    file (a folder of scripts), else the directory itself. The climb never enters a directory
    others can write to (`shared`: /tmp), so a `pyproject.toml` planted there governs nothing.
    """
    a = os.path.abspath(path)
    return _root_of_dir(a if os.path.isdir(a) else os.path.dirname(a))


def upward(path: str):
    """The directories from `path`'s own up to its project root, nearest first."""
    a = os.path.abspath(path)
    d = a if os.path.isdir(a) else os.path.dirname(a)
    root = project_root(a)
    while True:
        yield d
        parent = os.path.dirname(d)
        if d == root or parent == d:
            return
        d = parent


def inside(path: str, root: str) -> bool:
    """Is `path`, symlinks resolved, within `root`?"""
    real, top = os.path.realpath(path), os.path.realpath(root)
    return real == top or real.startswith(top.rstrip(os.sep) + os.sep)


def read_project_file(path: str, limit: int = PROJECT_FILE_LIMIT) -> Optional[str]:
    """The text of a regular file of at most `limit` bytes; None for anything else.

    Opened without blocking and checked with fstat before reading (discover.read_regular):
    a FIFO named requirements.txt never hangs the run, a link to /dev/zero is never read.
    """
    try:
        data, st = read_regular(path, limit)
    except OSError:
        return None
    if planted(path, st):
        return None
    return data.decode("utf-8", "replace")


def planted(path: str, st: os.stat_result) -> bool:
    """A file another user left in a directory anyone can write to: never one of this project's."""
    uid = os.geteuid() if hasattr(os, "geteuid") else 0
    return st.st_uid != uid and shared(os.path.dirname(os.path.abspath(path)))


# -- the project of an installed file: its distribution's own files -----------------------------------


@per_run
def _record(info: str) -> str:
    """The RECORD of a *.dist-info folder, its lines joined by "\n" after a leading one."""
    return "\n" + "\n".join((read_project_file(os.path.join(info, "RECORD"), RECORD_LIMIT) or "").splitlines())


def _lists(record: str, rel: str) -> bool:
    """Whether a line of `record` (_record) is an entry for `rel` (its text before the last two commas).
    A text search for the path, each hit checked: no table of the thousands of entries is built."""
    at = record.find("\n" + rel)
    while at >= 0:
        end = record.find("\n", at + 1)
        if record[at + 1 : end if end >= 0 else None].rsplit(",", 2)[0] == rel:
            return True
        at = record.find("\n" + rel, at + 1)
    return False


@per_run
def owner(path: str, site_dir: str) -> Optional[str]:
    """The *.dist-info folder in site_dir whose RECORD lists `path` (the first, in listing order)."""
    rel = os.path.relpath(os.path.abspath(path), site_dir).replace(os.sep, "/")
    for name in listing(site_dir):
        if name.endswith(".dist-info") and _lists(_record(os.path.join(site_dir, name)), rel):
            return os.path.join(site_dir, name)
    return None


@dataclass(frozen=True)
class Scope:
    """The files of one project (docs/project.md): everything under `root`, or, where root is a directory of
    installed distributions, the files of one distribution only: those its RECORD lists (`files`), or, for a
    file no RECORD lists, everything under its top-level entry. `tops` are root's entries that hold them."""

    root: str  # where every upward search stops; paths are shown relative to it
    installed: bool = False
    tops: Tuple[str, ...] = ()
    files: Optional[FrozenSet[str]] = None  # '/'-separated, relative to root

    def walked(self) -> Tuple[str, ...]:
        """The paths whose Python files the project's scan walks."""
        return tuple(os.path.join(self.root, t) for t in self.tops) if self.installed else (self.root,)

    def holds_rel(self, rel: str) -> bool:
        """Is the file at `rel` ('/'-separated, relative to root, inside it) one of the project's?"""
        if not self.installed:
            return True
        return rel in self.files if self.files is not None else rel.split("/")[0] in self.tops

    def holds(self, path: str) -> bool:
        """Is `path`, symlinks resolved, one of the project's files?"""
        if not inside(path, self.root):
            return False
        real, top = os.path.realpath(path), os.path.realpath(self.root)
        return self.holds_rel(os.path.relpath(real, top).replace(os.sep, "/"))


def _entry(line: str) -> Optional[str]:
    """The path of one RECORD line, '/'-separated and normalized; None for one outside the site directory
    (`../../bin/x`, an absolute path) or empty."""
    path = line.rsplit(",", 2)[0] if line.count(",") >= 2 else line
    if path.startswith('"') and path.endswith('"') and len(path) > 1:  # a quoted name holding a comma
        path = path[1:-1].replace('""', '"')
    if not path or path.startswith("/") or ".." in path.split("/"):
        return None
    return os.path.normpath(path).replace(os.sep, "/")


@per_run
def _distribution(site_dir: str, info: str) -> Scope:
    files = frozenset(e for e in map(_entry, _record(info).splitlines()) if e and e != ".")
    tops = sorted({e.split("/")[0] for e in files if e.endswith(".py")})  # a package, or a top-level module
    return Scope(site_dir, True, tuple(tops), files)


@per_run
def project_scope(path: str) -> Scope:
    """The project the file (or directory) at `path` belongs to, and so the files whose code can rebind its
    names (docs/project.md). Under a directory of installed distributions: the distribution whose RECORD
    lists it, its own files only, or, where none lists it, its top-level package; every other distribution
    there is other people's code, read (where at all) as an interface. Anywhere else: everything under
    `project_root`."""
    root = project_root(path)
    if not is_site_dir(listing(root)):
        return Scope(root)
    info = owner(path, root)
    if info is not None:
        return _distribution(root, info)
    top = os.path.relpath(os.path.abspath(path), root).split(os.sep)[0]
    return Scope(root, True, () if top in (os.curdir, os.pardir) else (top,))
