"""What an audit returns: its result, its errors, the tally a run keeps, how it names paths."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import List, Sequence, Tuple

from ..model import Site, Status, exit_code

PROJECT_FILES = ("pyproject.toml", "setup.cfg", "setup.py")


class AuditError(Exception):
    """The run as a whole cannot go on (bad --rev, not a git repo...): exit 2 with one line."""


@dataclass
class AuditResult:
    sites: List[Site]
    errors: List[Tuple[str, str]]  # (path, one-line error)
    summary: dict

    def exit_code(self) -> int:
        """As in check: 0 nothing left to do, 1 sites remain, 2 errors."""
        return exit_code(self.sites, bool(self.errors), (Status.FIXABLE, Status.MANUAL))


# -- which files ------------------------------------------------------------


def display_root(paths: Sequence[str]) -> str:
    """The directory reported paths are relative to: the one directory given, else the common parent."""
    ab = [os.path.abspath(p) for p in paths]
    dirs = [p if os.path.isdir(p) else os.path.dirname(p) for p in ab]
    if len(ab) == 1 and os.path.isdir(ab[0]):
        return ab[0]
    return os.path.commonpath(dirs) if dirs else os.getcwd()


def rel_to(path: str, root: str) -> str:
    return os.path.relpath(os.path.abspath(path), root).replace(os.sep, "/")


# -- the run ----------------------------------------------------------------


@dataclass
class Tally:
    files: int = 0
    candidates: int = 0
    errors: List[Tuple[str, str]] = field(default_factory=list)
