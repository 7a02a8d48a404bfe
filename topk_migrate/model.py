"""The vocabulary every part of the tool shares: a call site, its status, and the exit-code rule."""
from __future__ import annotations

from dataclasses import asdict, dataclass
from enum import Enum
from typing import Collection, Iterable, Optional, Tuple


class Status(str, Enum):
    # what check, apply and audit say of a call
    COMPLIANT = "compliant"  # already does what the rule asks (passes topk_length)
    OPT_OUT = "opt-out"  # opts out on purpose (topk_length=None), or suppressed by comment
    FIXABLE = "fixable"  # apply will rewrite it
    MANUAL = "manual"  # needs a human; `reason` says why (bump says it too)
    # what bump says a kernel release change does to a call
    BREAKS = "breaks"  # a TypeError under the new release
    REBINDS = "rebinds"  # a positional argument lands in another parameter, no error
    CHANGES_DEFAULT = "changes-default"  # an argument left to a default whose value changed
    CHANGES_CALLEE = "changes-callee"  # the same arguments now run other ops or functions of the release
    OPPORTUNITY = "opportunity"  # a new optional parameter left out, that applies on the call's paths
    NOT_APPLICABLE = "not-applicable"  # a new optional parameter the release refuses on the call's paths
    UNCHANGED = "unchanged"

    def __str__(self) -> str:
        return self.value


CHECK_STATUSES = (Status.COMPLIANT, Status.OPT_OUT, Status.FIXABLE, Status.MANUAL)
BUMP_STATUSES = (Status.BREAKS, Status.REBINDS, Status.MANUAL, Status.CHANGES_DEFAULT, Status.CHANGES_CALLEE,
                 Status.OPPORTUNITY, Status.NOT_APPLICABLE, Status.UNCHANGED)  # most serious first


@dataclass(frozen=True)
class Finding:
    """One thing bump found about a call: the status it argues for, and why."""

    verdict: str  # a Status value, or "note" (worth reading, changes nothing)
    reason: str
    param: Optional[str] = None  # the parameter it is about (a rule's finding replaces the generic one)
    rule: Optional[str] = None  # the rule that made it (None: the signature diff itself)
    fix: Optional[str] = None  # the command that fixes it, where a rule has a rewrite


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
    # bump: the release entry point the call binds to, the command that fixes it, and every finding
    # behind the status (most serious first)
    entry_point: Optional[str] = None
    fix: Optional[str] = None
    findings: Tuple[Finding, ...] = ()

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
    # the parameters of the interface the answer was read from, in order (empty where none was read: a pin
    # decided): every rule matches a call's positional arguments to them (`indices` of the decode wrapper)
    params: Tuple[str, ...] = ()


class InputError(Exception):
    """An expected problem with one input file: reported in one line, the run goes on."""


INTERNAL_ERROR_CHARS = 300


def internal_error(e: BaseException) -> str:
    """One short line for a bug of ours met on a file (an exception's text may hold a whole node's repr)."""
    text = f"{type(e).__name__}: {e}"
    if len(text) > INTERNAL_ERROR_CHARS:
        text = text[:INTERNAL_ERROR_CHARS - 3] + "..."
    return f"internal error: {text}"


def exit_code(sites: Iterable[Site], errors: bool, failing: Collection[Status], rewrote: bool = False) -> int:
    """Every command's exit code: 2 an input could not be read, 1 a site is in the command's `failing`
    statuses (or a file was rewritten), 0 nothing left to do."""
    if errors:
        return 2
    return 1 if rewrote or any(s.status in failing for s in sites) else 0
