"""What one run has read from the trees it looks at, kept for that run only.

A run (`api.run`, `api.process_file`, `api.migrate_source`, `audit.audit`, bump's `engine.run`) asks
the same questions of a tree for file after file: a directory's listing, whether others can write
to it, a project's root, its [tool.topk-migrate], the pins of its project files, an installed
distribution's RECORD and METADATA, whether a directory's stale temporary files were removed. Each
is answered once per run and kept in that run's `RunContext`; the next run starts with an empty
one, so a process that runs more than once (the library, an editor integration, a service, the
tests) sees the tree as it is then, never what an earlier run read (a changed requirements.txt).
Outside any run nothing is kept: each question reads the tree.

The context is the current run's (a `contextvars` variable set by the outermost of those calls;
the ones inside join it); processes forked during a run (audit's scanners and workers) inherit what
it has read so far. Only what depends on the tree is kept here: caches of code and constants (the
rule registry, compiled patterns) stay with the modules that make them.
"""
from __future__ import annotations

import contextvars
import functools
from typing import Any, Callable, Dict, Optional, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


class RunContext:
    """One run's answers: for each function marked `per_run`, its results by arguments."""

    __slots__ = ("tables",)

    def __init__(self) -> None:
        self.tables: Dict[str, Dict[Any, Any]] = {}


_CURRENT: contextvars.ContextVar[Optional[RunContext]] = contextvars.ContextVar("topk_migrate_run", default=None)


def current() -> Optional[RunContext]:
    """The context of the run in progress, or None outside any run."""
    return _CURRENT.get()


def in_run(fn: F) -> F:
    """Mark a top-level call: it runs in the current run's context, or, called outside any run, in a
    new one that ends with it."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if _CURRENT.get() is not None:
            return fn(*args, **kwargs)
        token = _CURRENT.set(RunContext())
        try:
            return fn(*args, **kwargs)
        finally:
            _CURRENT.reset(token)

    return wrapper  # type: ignore[return-value]


def per_run(fn: F) -> F:
    """Answer fn(*args) once per run: the value it returned is kept in the run's context, keyed by its
    (hashable) arguments; an exception is raised again each time it is asked (as functools.lru_cache
    does). Outside any run fn is called every time."""
    name = f"{fn.__module__}.{fn.__qualname__}"

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        ctx = _CURRENT.get()
        if ctx is None:
            return fn(*args, **kwargs)
        table = ctx.tables.get(name)
        if table is None:
            table = ctx.tables[name] = {}
        key = (args, tuple(sorted(kwargs.items()))) if kwargs else args
        try:
            return table[key]
        except KeyError:
            pass
        value = table[key] = fn(*args, **kwargs)
        return value

    return wrapper  # type: ignore[return-value]
