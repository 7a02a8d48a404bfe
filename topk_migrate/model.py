"""The vocabulary every part of the tool shares: a call site and its status."""
from __future__ import annotations

from dataclasses import dataclass, asdict
from enum import Enum
from typing import Optional


class Status(str, Enum):
    COMPLIANT = "compliant"  # already does what the rule asks (passes topk_length)
    OPT_OUT = "opt-out"  # opts out on purpose (topk_length=None), or suppressed by comment
    FIXABLE = "fixable"  # apply will rewrite it
    MANUAL = "manual"  # needs a human; `reason` says why

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Site:
    path: str
    line: int
    column: int  # 1-based, like compilers print it
    callee: str  # resolved qualified name of the kernel entry point
    status: Status
    reason: str
    metadata: Optional[str] = None  # expression a fix passes as topk_length
    kernel: Optional[str] = None  # the kernel decision the gate used and where it came from
    rule: str = ""  # id of the rule that reported it (topk_migrate/rules.py)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["status"] = self.status.value
        return d

    def format(self) -> str:
        rule = f" [{self.rule}]" if self.rule else ""
        return f"{self.path}:{self.line}:{self.column} {self.status.value} {self.callee} \u2014 {self.reason}{rule}"


@dataclass(frozen=True)
class Capability:
    """What the kernel gate knows about the kernel behind a callee."""

    accepts: Optional[bool]  # does it take topk_length? None: unknown
    detail: str = ""  # where that came from, for the reason text
    position: Optional[int] = None  # where topk_length sits in a wrapper's signature
    # which kernel the answer rests on and where that came from, e.g.
    # "sglang-kernel==0.4.5 from sglang-0.5.16.dist-info/METADATA" (check -v, JSON `kernel`)
    decision: Optional[str] = None


class InputError(Exception):
    """An expected problem with one input file: reported in one line, the run goes on."""
