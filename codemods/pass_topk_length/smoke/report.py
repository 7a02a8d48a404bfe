"""Smoke results: a list of named checks, printed as a table and saved as JSON."""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import List

from topk_migrate.escape import printable
from topk_migrate.output import write_output

PASS, FAIL, SKIP, INFO = "pass", "fail", "skip", "info"


@dataclass
class Check:
    name: str
    status: str  # pass | fail | skip | info (info never fails the run)
    detail: str
    data: dict = field(default_factory=dict)


@dataclass
class Report:
    target: str
    device: str
    meta: dict = field(default_factory=dict)
    checks: List[Check] = field(default_factory=list)

    def add(self, name: str, ok: bool, detail: str, **data) -> Check:
        c = Check(name, PASS if ok else FAIL, detail, data)
        self.checks.append(c)
        return c

    def skip(self, name: str, why: str) -> None:
        self.checks.append(Check(name, SKIP, why))

    def info(self, name: str, detail: str, **data) -> None:
        self.checks.append(Check(name, INFO, detail, data))

    @property
    def ok(self) -> bool:
        return bool(self.checks) and not any(c.status == FAIL for c in self.checks)

    def to_dict(self) -> dict:
        return {
            "target": self.target,
            "device": self.device,
            **self.meta,
            "ok": self.ok,
            "checks": [asdict(c) for c in self.checks],
        }

    def write_json(self, path: str) -> None:
        write_output(path, json.dumps(self.to_dict(), indent=2, default=str) + "\n")

    def table(self) -> str:
        width = max([len(c.name) for c in self.checks] + [5])
        # the target, the file's own names and the checks' details quote the file: escaped
        lines = [f"topk-migrate smoke: {printable(str(self.target))}"]
        lines += [f"  {k}: {printable(str(v))}" for k, v in self.meta.items() if not isinstance(v, (dict, list))]
        lines.append(f"{'CHECK'.ljust(width)}  STATUS  DETAIL")
        for c in self.checks:
            lines.append(f"{printable(c.name).ljust(width)}  {c.status.upper().ljust(6)}  {printable(str(c.detail))}")
        counts = {s: sum(c.status == s for c in self.checks) for s in (PASS, FAIL, SKIP, INFO)}
        verdict = "OK" if self.ok else "FAILED"
        lines.append(
            f"{verdict}: {counts[PASS]} passed, {counts[FAIL]} failed, {counts[SKIP]} skipped, {counts[INFO]} info"
        )
        return "\n".join(lines)
