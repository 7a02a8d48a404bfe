"""`[tool.topk-migrate]` in the pyproject.toml of the project being migrated."""
from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from typing import Dict, Optional, Tuple

from .model import InputError


@dataclass(frozen=True)
class Config:
    kernel: Optional[str] = None  # "NAME==VERSION", like --kernel
    metadata: Tuple[str, ...] = ()  # extra expressions known to hold clipped seqlens
    include: Tuple[str, ...] = ()
    exclude: Tuple[str, ...] = ()
    source: Optional[str] = None  # the pyproject.toml it came from

    def merged(self, **overrides) -> "Config":
        return Config(**{**self.__dict__, **{k: v for k, v in overrides.items() if v}})


@functools.lru_cache(maxsize=None)
def _load(pyproject: str) -> Optional[Config]:
    try:  # imported here: most runs never meet a pyproject.toml that needs parsing
        import tomllib
    except ImportError:  # Python < 3.11
        import tomli as tomllib  # type: ignore[no-redef]
    try:
        with open(pyproject, "rb") as f:
            table = tomllib.load(f).get("tool", {}).get("topk-migrate")
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise InputError(f"{pyproject}: cannot read [tool.topk-migrate]: {e}") from None
    if table is None:
        return None
    unknown = set(table) - {"kernel", "metadata", "include", "exclude"}
    if unknown:
        raise InputError(f"{pyproject}: unknown key(s) in [tool.topk-migrate]: {', '.join(sorted(unknown))}")
    tup = lambda k: tuple(table.get(k, ()))
    return Config(table.get("kernel"), tup("metadata"), tup("include"), tup("exclude"), pyproject)


@functools.lru_cache(maxsize=None)
def config_for(directory: str) -> Config:
    """The nearest [tool.topk-migrate] at or above `directory` (empty if none)."""
    d = os.path.abspath(directory)
    while True:
        candidate = os.path.join(d, "pyproject.toml")
        if os.path.isfile(candidate):
            found = _load(candidate)
            if found is not None:
                return found
        parent = os.path.dirname(d)
        if parent == d or os.path.isdir(os.path.join(d, ".git")):
            return Config()
        d = parent


@dataclass
class PathFilter:
    """include/exclude of one [tool.topk-migrate] (gitignore syntax, relative to its pyproject.toml)."""

    base: str = ""
    include: object = None
    exclude: object = None

    @classmethod
    def for_dir(cls, directory: str) -> "PathFilter":
        from .discover import _compile

        cfg = config_for(directory)
        if not cfg.source or not (cfg.include or cfg.exclude):
            return cls()
        return cls(os.path.dirname(os.path.abspath(cfg.source)), _compile(cfg.include), _compile(cfg.exclude))

    def keeps(self, abspath: str) -> bool:
        if not self.base or not abspath.startswith(self.base + os.sep):
            return True
        rel = abspath[len(self.base) + 1 :].replace(os.sep, "/")
        if self.include is not None and not self.include.match_file(rel):
            return False
        return not (self.exclude is not None and self.exclude.match_file(rel))


def filter_for(filters: Dict[str, PathFilter], path: str) -> Optional[PathFilter]:
    """The filter of the walked directory `path` came from (files named on the command line: none)."""
    a = os.path.abspath(path)
    best = None
    for d, f in filters.items():
        if a.startswith(d + os.sep) and (best is None or len(d) > len(best[0])):
            best = (d, f)
    return best[1] if best else None
