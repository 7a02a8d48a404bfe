"""`# topk-migrate: ignore[rule-id, ...] reason` on a call's lines: that rule leaves the call alone.

Without brackets the comment silences every rule. The bracket must follow `ignore` directly
(`ignore [x]` is a reason, as it always was). A rule asks with its own id; the engine knows
no rule by name.
"""
from __future__ import annotations

import re
from typing import Optional, Sequence

_COMMENT = re.compile(r"#\s*topk-migrate:\s*ignore\b(?P<rules>\[[^\]]*\])?[\s:\-\u2014\[(]*(?P<reason>[^\])]*)")


def reason(lines: Sequence[str], first: int, last: int, rule_id: str) -> Optional[str]:
    """The suppression reason for `rule_id` on lines first..last (1-based), or None."""
    for text in lines[first - 1: last]:
        for m in _COMMENT.finditer(text):
            rules = m.group("rules")
            if rules is not None and rule_id not in {r.strip() for r in rules[1:-1].split(",")}:
                continue
            return m.group("reason").strip() or "no reason given"
    return None
