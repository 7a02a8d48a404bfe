"""Which files a run looks at, and which of them can hold a kernel call at all.

Only the standard library is imported here at module level: this runs before
anything is parsed, on every file of a tree, and must stay cheap. `pathspec`
(gitignore semantics) is imported only when a .gitignore or --exclude is met.
"""
from __future__ import annotations

import errno
import os
import stat
from typing import Iterable, Iterator, List, Optional, Sequence, Tuple

# Every spelling the resolver knows ends in one of these names; a file without
# any of them cannot hold a site and is never parsed.
NEEDLES = (b"flash_mla_sparse_fwd", b"flash_mla_sparse_prefill", b"sparse_prefill_fwd")
_COMMON = b"sparse_"  # in every needle: one cheap scan rules out most files


def may_hold_site(data: bytes) -> bool:
    return _COMMON in data and any(n in data for n in NEEDLES)


class NotRegularFile(OSError):
    """A path that opened but is not a regular file (directory, FIFO, device)."""


def read_regular(path: str) -> Tuple[bytes, os.stat_result]:
    """The bytes and stat of a regular file; OSError otherwise (never blocks on a FIFO)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            isdir = stat.S_ISDIR(st.st_mode)
            raise NotRegularFile(errno.EISDIR if isdir else errno.EINVAL, "is a directory" if isdir else "not a regular file")
        data = os.read(fd, st.st_size + 1)  # one read for the whole file, as a rule
        if len(data) <= st.st_size:
            return data, st
        chunks = [data]  # it grew since fstat
        while True:
            b = os.read(fd, 1 << 20)
            if not b:
                return b"".join(chunks), st
            chunks.append(b)
    finally:
        os.close(fd)


def read_bytes(path: str) -> bytes:
    return read_regular(path)[0]


def _why_unreadable(path: str) -> str:
    """One-line reason for a path that is neither a directory nor a regular file."""
    try:
        st = os.stat(path)
    except OSError as e:
        if e.errno == errno.ELOOP:
            return "symlink loop"
        if e.errno == errno.ENOENT:
            if os.path.islink(path):
                return f"broken symlink (points to {os.readlink(path)!r})"
            return "no such file or directory"
        return f"cannot read: {(e.strerror or str(e)).lower()}"
    if stat.S_ISDIR(st.st_mode):
        return "is a directory"
    return "not a regular file"


class Ignore:
    """gitignore-style pattern sets, each anchored at an absolute directory."""

    def __init__(self, specs: Sequence[Tuple[str, object]] = ()):
        self.specs = list(specs)  # (dir, spec), shallowest first

    def with_dir(self, d: str, lines: Iterable[str]) -> "Ignore":
        spec = _compile(lines)
        return Ignore(self.specs + [(d, spec)]) if spec is not None else self

    def ignored(self, path: str, is_dir: bool) -> bool:
        """Git's rule: the deepest file with a matching pattern decides; its last match wins.

        path is absolute and below every anchor (the walker guarantees it).
        """
        for d, spec in reversed(self.specs):
            rel = path[len(d):].lstrip(os.sep).replace(os.sep, "/")
            r = spec.check_file(rel + "/" if is_dir else rel)
            if r.include is not None:
                return r.include
        return False


def _compile(lines: Iterable[str]):
    lines = [ln for ln in lines if ln.strip() and not ln.lstrip().startswith("#")]
    if not lines:
        return None
    import pathspec  # deferred: only trees with a .gitignore or --exclude pay for it

    return pathspec.GitIgnoreSpec.from_lines(lines)


def _read_lines(path: str) -> List[str]:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read().splitlines()
    except OSError:
        return []


def _outer_ignores(root: str) -> Ignore:
    """.gitignore files above root, up to its git work tree's top (plus .git/info/exclude)."""
    chain, d = [], os.path.dirname(root)
    while True:
        chain.append(d)
        if os.path.exists(os.path.join(d, ".git")):
            break
        parent = os.path.dirname(d)
        if parent == d:
            return Ignore()  # not in a git work tree: nothing above root applies
        d = parent
    ig = Ignore().with_dir(d, _read_lines(os.path.join(d, ".git", "info", "exclude")))
    for d in reversed(chain):
        ig = ig.with_dir(d, _read_lines(os.path.join(d, ".gitignore")))
    return ig


def iter_python_files(
    paths: Iterable[str], exclude: Sequence[str] = (), gitignore: bool = True
) -> Iterator[Tuple[str, Optional[str]]]:
    """Yield (path, error) for every file to look at; error is a one-line reason or None.

    Files named on the command line are always looked at. Directories are walked
    in sorted order, following symlinks (a link back to an ancestor is reported as
    a symlink loop), skipping hidden directories, .gitignore'd paths and paths that
    match an `exclude` pattern (gitignore syntax, relative to the directory given).
    A directory named *.py is walked like any other; a *.py entry that is not a
    regular file (broken link, link loop, FIFO, ...) is reported, not read.
    """
    excl = _compile(exclude)
    for p in paths:
        if os.path.isdir(p):
            top = os.path.normpath(p)
            atop = os.path.abspath(top)
            ig = _outer_ignores(atop) if gitignore else Ignore()
            yield from _walk(top, atop, ig, excl, gitignore)
        elif os.path.isfile(p):
            yield p, None
        else:
            yield p, _why_unreadable(p)


def _walk(top: str, atop: str, ig: Ignore, excl, gitignore: bool) -> Iterator[Tuple[str, Optional[str]]]:
    """Walk one directory; `excl` is tested on its own so no .gitignore negation can undo it."""
    n = len(top)
    seen = set()

    def skip(ig: Ignore, apath: str, is_dir: bool) -> bool:
        if excl is not None:
            rel = apath[len(atop):].lstrip(os.sep).replace(os.sep, "/")
            if excl.match_file(rel + "/" if is_dir else rel):
                return True
        return bool(ig.specs) and ig.ignored(apath, is_dir)

    def walk(d: str, ig: Ignore, ancestors: frozenset) -> Iterator[Tuple[str, Optional[str]]]:
        try:
            st = os.stat(d)
        except OSError:
            yield d, _why_unreadable(d)
            return
        key = (st.st_dev, st.st_ino)
        if key in ancestors:
            yield d, "symlink loop"
            return
        if key in seen:  # reached again through another symlink: already walked
            return
        seen.add(key)
        ancestors = ancestors | {key}
        try:
            with os.scandir(d) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as e:
            yield d, f"cannot list: {(e.strerror or str(e)).lower()}"
            return
        if gitignore and any(e.name == ".gitignore" for e in entries):
            ig = ig.with_dir(atop + d[n:], _read_lines(os.path.join(d, ".gitignore")))
        for e in entries:
            try:
                is_dir = e.is_dir()
            except OSError:
                is_dir = False
            if is_dir:
                if not e.name.startswith(".") and not skip(ig, atop + e.path[n:], True):
                    yield from walk(e.path, ig, ancestors)
            elif e.name.endswith(".py") and not skip(ig, atop + e.path[n:], False):
                try:
                    ok = e.is_file()
                except OSError:
                    ok = False
                yield (e.path, None) if ok else (e.path, _why_unreadable(e.path))

    yield from walk(top, ig, frozenset())
