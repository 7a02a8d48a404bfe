"""Parsing what a fork wrote, bounded: one place for each format this tool reads besides sources.

Every parser here turns whatever the text provokes (a decode error, nesting past the recursion
limit, more memory than the budget allows) into ValueError with a one-line reason, or None for
the fact-finding reads that treat an unreadable file as "no facts". A 6 KB `pyproject.toml` of
nested arrays is a RecursionError in tomllib; a 4 MB `setup.py` a 2 GB `ast.parse`.
"""
from __future__ import annotations

import ast
import json
from typing import Any, Optional

from . import memory
from .model import InputError

# Python files read for facts (setup.py pins, a vendored kernel interface, a sibling module's
# class): a bigger one is not parsed. Real ones are a few KB to a few hundred.
FACTS_SOURCE_LIMIT = 1 << 20


# tomllib's time grows with the square of a dotted key's parts (`a.a.a...a = 1`: 0.8 s at 10,000 parts, 21 s at
# 40,000, in a 200 KB file): a line with more dots than this is not read. At 128 a 1 MiB file of such lines
# costs about a second; real project files have a few dots per line.
TOML_LINE_DOTS = 128


def toml(text: str) -> dict:
    """The TOML document; ValueError (one line) for bad syntax, too deep, too big, or a line of more
    than TOML_LINE_DOTS dots."""
    if any(line.count(".") > TOML_LINE_DOTS for line in text.splitlines()):
        raise ValueError(f"a line with more than {TOML_LINE_DOTS} dots (a dotted key of that many parts is not read)")
    try:
        import tomllib  # noqa: PLC0415 - on demand: tomllib only for a TOML file to read
    except ImportError:  # Python < 3.11
        import tomli as tomllib  # type: ignore[no-redef]  # noqa: PLC0415 - on demand: tomllib only for a TOML file to read
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ValueError(str(e)) from None
    except RecursionError:
        raise ValueError("nested too deep to read") from None
    except MemoryError:
        raise ValueError("too big to read") from None


def json_value(text: str) -> Any:
    """The JSON value; ValueError (one line) for bad syntax, too deep or too big."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("nested too deep to read") from None
    except MemoryError:
        raise ValueError("too big to read") from None


def python_facts(text: Optional[str]) -> Optional[ast.Module]:
    """CPython's AST of a file read for facts, or None: too big for FACTS_SOURCE_LIMIT or the
    memory bound, not Python, or nested past what the parser takes."""
    if text is None or len(text) > FACTS_SOURCE_LIMIT:
        return None
    try:
        memory.check(text, memory.PARSE_BYTES_PER_TOKEN, "parse")
        return ast.parse(text)
    except (InputError, SyntaxError, ValueError, RecursionError, MemoryError):
        return None
