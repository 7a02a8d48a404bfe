"""A one-line status on stderr while a long run goes on: audit's walk and parse, check and apply over a
tree, bump's downloads. Only on a terminal (or when asked), and only once a run has taken a while."""
from __future__ import annotations

import sys
import time


class Progress:
    """A one-line status on stderr, only on a terminal and only once a run has taken a while."""

    DELAY, EVERY = 0.5, 0.1

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self.start, self.last = time.monotonic(), 0.0
        self.shown = False

    def show(self, text: str) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self.start < self.DELAY or now - self.last < self.EVERY:
            return
        self.last, self.shown = now, True
        sys.stderr.write(f"\r\033[K{text}")
        sys.stderr.flush()

    def bar(self, done: int, total: int, extra: str) -> None:
        if self.enabled:
            n = 30 * done // max(total, 1)
            self.show(f"[{'#' * n}{'.' * (30 - n)}] {done}/{total} files{extra}")

    def close(self) -> None:
        if self.shown:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()
