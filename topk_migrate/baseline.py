"""`--new-since REF`: only the sites a change brought, for a pull request's check.

A site is old when REF had one like it: the same rule, callee and status, and the same code on the
call's line (its text without the indentation). Line numbers and file names play no part, so code that
moved (within a file or to another) is not new, while an edited call, a new one or one whose verdict
changed is. Sites are compared as multisets: two identical calls where REF had one make one new site.
The sites of REF come from the same analysis run on that commit (`audit --rev`, its caller's); their
lines are read from git's objects, bounded, never from the work tree.
"""
from __future__ import annotations

import os
from collections import Counter
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Tuple

from .discover import read_regular
from .model import Site
from .subprocesses import GitStopped, git

Key = Tuple[str, str, str, str]
LINE_BYTES = 1 << 20  # a file read for its call's line is read under this bound (else its line is unknown)


def line_of(data: bytes, line: int) -> str:
    """The text of 1-based line `line` in data, without its indentation and line end ("" past the end)."""
    lines = data.split(b"\n")
    if not 1 <= line <= len(lines):
        return ""
    return lines[line - 1].decode("utf-8", "replace").strip()


def key(site: Site, code: str) -> Key:
    return (site.rule or "", site.callee, site.status.value, " ".join(code.split()))


def disk_reader(root: str) -> Callable[[str], Optional[bytes]]:
    """Reads the work tree's file at a reported path (relative to root, or absolute)."""
    def read(path: str) -> Optional[bytes]:
        try:
            return read_regular(os.path.join(root, path), LINE_BYTES)[0]
        except OSError:
            return None
    return read


def git_reader(root: str, commit: str) -> Callable[[str], Optional[bytes]]:
    """Reads a file as `commit` holds it, at a path reported relative to root (inside its work tree)."""
    def read(path: str) -> Optional[bytes]:
        rel = os.path.relpath(os.path.join(root, path), root).replace(os.sep, "/")
        try:
            r = git(["cat-file", "blob", f"{commit}:./{rel}"], root)
        except (GitStopped, OSError):
            return None
        return bytes(r.stdout) if r.returncode == 0 and len(r.stdout) <= LINE_BYTES else None
    return read


def keys(sites: Iterable[Site], read: Callable[[str], Optional[bytes]]) -> List[Key]:
    """Each site's key, each file read once."""
    cache: Dict[str, Optional[bytes]] = {}
    out = []
    for s in sites:
        if s.path not in cache:
            cache[s.path] = read(s.path)
        data = cache[s.path]
        out.append(key(s, line_of(data, s.line) if data is not None else f"<{s.path}:{s.line}>"))
    return out


def new_sites(now: Sequence[Site], now_keys: Sequence[Key], then: Sequence[Site], then_keys: Sequence[Key]
              ) -> List[Site]:
    """The sites of `now` that `then` had no match for, in now's order. A site is matched first with one of
    the same key in the same file, then with one of the same key anywhere (code that moved)."""
    in_file = Counter(zip(then_keys, (s.path for s in then)))
    unmatched = [(s, k) for s, k in zip(now, now_keys) if not _take(in_file, (k, s.path))]
    anywhere = Counter()
    for (k, _), n in in_file.items():
        anywhere[k] += n  # what REF had that no site in its own file took
    return [s for s, k in unmatched if not _take(anywhere, k)]


def _take(left: Counter, k) -> bool:
    """One of `k` from the multiset `left`, if it holds one."""
    if left[k] > 0:
        left[k] -= 1
        return True
    return False


def only_new(now: Sequence[Site], root: str, then: Sequence[Site], commit: str) -> List[Site]:
    """The sites of `now` (paths relative to root, in the work tree) that commit's sites `then` (paths
    relative to root too, as `audit --rev` reported them) have no match for."""
    return new_sites(now, keys(now, disk_reader(root)), then, keys(then, git_reader(root, commit)))
