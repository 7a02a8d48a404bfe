"""topk-migrate: pass FlashMLA's per-row `topk_length` where a serving backend's call leaves it out.

The library (what the CLI runs; every name below is imported only when first used, so importing the
package costs nothing, and audit's scanners never load the engine):

- `run(paths, kernel=None, write=False, ...)` -> `Report`: `check` (and, with write, `apply`) over
  files and directories; `process_file(path, ...)` -> `FileOutcome` for one file or standard input's
  bytes; `migrate_source(source, path, kernel=...)` -> `Migration` for a string.
- `topk_migrate.audit.audit(paths, rev=None, ...)` -> `AuditResult` (`AuditError` when the run cannot
  start): the same verdicts over a tree or a git commit.
- `Site`, `Status`, `InputError`: what the results are made of; `Config`: a [tool.topk-migrate] table.
- `RunContext`: what one run has read of a tree (each call above is one run; see run_context).
"""
from __future__ import annotations

import importlib

__version__ = "0.1.0"  # [project] version in pyproject.toml (tests/test_public_api.py holds them equal)

_PUBLIC = {
    "run": "api", "process_file": "api", "migrate_source": "api", "Report": "api", "FileOutcome": "api",
    "Migration": "api", "AuditResult": "audit", "AuditError": "audit", "Site": "model", "Status": "model",
    "InputError": "model", "Config": "config", "RunContext": "run_context",
}

__all__ = ["__version__", *_PUBLIC]


def __getattr__(name: str):
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted({*globals(), *_PUBLIC})
