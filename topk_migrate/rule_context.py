"""What a site rule's `sites` hook is handed: one file's text, parsed once for every rule that reads it.

The engine (api._migrate) makes one `Parsed` of a file's text and hands each enabled site rule a
`RuleContext` over it, with that rule's kernel gate: the LibCST module is parsed on the first rule's
first use, and the scope tree (cst/scopecheck.Tree) built on the first rule's ask, then shared by every
rule of that text. A rule that rewrites returns the new text; where a later rule's rewrite must be made
on top of it, that rule is handed a context of the new text (parsed again only because the text
changed). Imported only where a file is analysed (it imports LibCST).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Optional

import libcst as cst

from . import kernels, project
from .cst.scopecheck import Tree
from .rules import RuleOptions

if TYPE_CHECKING:
    from .gate import KernelGate


class Parsed:
    """One text, its LibCST module and its scope tree: each made on first use, then shared by every rule
    handed this text. The module and the tree are read, never changed: LibCST's nodes are immutable, and
    an edit is a new module (a Tree's facts are worked out on demand and stay true of its module)."""

    def __init__(self, source: str):
        self.source = source

    @cached_property
    def module(self) -> cst.Module:
        return cst.parse_module(self.source)  # libcst.ParserSyntaxError: the engine reports the file's error

    @cached_property
    def tree(self) -> Tree:
        return Tree(self.module, source=self.source)


@dataclass(frozen=True)
class ProjectView:
    """What a rule may read of the project the file at `path` belongs to, beyond the file itself: read only."""

    path: str

    @property
    def root(self) -> str:
        """The directory every upward search from the file stops at (project.project_root)."""
        return project.project_root(self.path)

    def find_module(self, module: str) -> Optional[str]:
        """The file of `module` (absolute, or relative to the file) among the project's files; None if none is."""
        return kernels.find_module(self.path, module)

    def read(self, path: str) -> Optional[str]:
        """The text of a project file (a regular file under the bound project.read_project_file keeps); None
        for anything else."""
        return project.read_project_file(path)


@dataclass(frozen=True)
class RuleContext:
    """One text of the file at `path`, as one site rule is handed it: its parse (shared with every rule of
    this text), the rule's kernel gate and the run's options."""

    path: str  # where the file is (pins, config and the project are found from it) and how sites name it
    parsed: Parsed
    gate: "KernelGate"  # callee -> Capability: does the kernel take this rule's parameter (gate.py)
    options: RuleOptions = field(default_factory=RuleOptions)

    @classmethod
    def of(cls, source: str, path: str, gate: "KernelGate", options: Optional[RuleOptions] = None) -> "RuleContext":
        """A context of its own for `source` (a rule's test, or a caller with one rule)."""
        return cls(path, Parsed(source), gate, options or RuleOptions())

    @property
    def source(self) -> str:
        return self.parsed.source

    @property
    def module(self) -> cst.Module:
        """The text parsed by LibCST: once for every rule handed this text."""
        return self.parsed.module

    @property
    def tree(self) -> Tree:
        """The module's scope tree (positions, parents, scopes on demand): built once for every rule."""
        return self.parsed.tree

    @property
    def project(self) -> ProjectView:
        return ProjectView(self.path)
