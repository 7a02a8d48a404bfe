"""A memory bound per file, decided before anything is parsed.

Python's ast and LibCST hold a few hundred bytes to a few KB per token: an 8 MB file
of `x = 1` lines takes 3.4 GB in ast.parse and far more in LibCST, enough for the
OOM killer on a CI runner. The peak of each stage grows with the number of tokens, so
each is estimated from a token count (a C-speed byte scan) and a file whose estimate
exceeds the budget is refused with one line instead of parsed.

Worst cases measured (CPython 3.11, libcst 1.0.1, results/memory-bench.md): ast.parse
up to ~830 bytes per token (dense `x=1` lines); the whole engine (LibCST parse, metadata,
rewrite and its validation) up to ~5.5 KB per token, ordinary backend code ~2.5 KB; a
long string literal costs a few bytes per byte. The constants below add a margin.
"""
from __future__ import annotations

import os
import sys
from typing import Union

from .escape import printable
from .model import InputError

PARSE_BYTES_PER_TOKEN = 900   # ast.parse (CPython's parser, then Python objects)
REWRITE_BYTES_PER_TOKEN = 6000  # the engine: LibCST's parse, metadata, rewrite, validation
BYTES_PER_BYTE = 8  # copies of the text and of long literals
DEFAULT_BUDGET_MIB = 2048
BUDGET_ENV = "TOPK_MIGRATE_MAX_MEMORY"  # MiB per file (per worker in audit)

_WORD = bytes(range(48, 58)) + bytes(range(65, 91)) + bytes(range(97, 123)) + b"_" + bytes(range(128, 256))
_CLASSES = bytes(
    ord("a") if c in _WORD else ord(" ") if c in b" \t\r\n\f\v" else ord(".") for c in range(256)
)


_warned: set = set()


def env_limit(name: str, default: int) -> int:
    """A limit from the environment: ASCII digits only (int() would take `٣` or `1_000`); anything
    else is the default, said once on stderr, since CI may set these from a fork's docs."""
    v = os.environ.get(name)
    if not v:
        return default
    if v.isascii() and v.strip().isdigit():
        return int(v)
    if name not in _warned:
        _warned.add(name)
        sys.stderr.write(f"warning: {name}={printable(v)!s} is not a whole number; using {default}\n")
    return default


def budget() -> int:
    """Bytes one file may cost, from TOPK_MIGRATE_MAX_MEMORY (MiB)."""
    return max(env_limit(BUDGET_ENV, DEFAULT_BUDGET_MIB), 1) << 20


def tokens(source: Union[str, bytes]) -> int:
    """An upper estimate of the number of Python tokens: runs of word characters plus every
    other non-blank byte (words inside strings and comments count too)."""
    data = source.encode("utf-8", "surrogatepass") if isinstance(source, str) else source
    kinds = data.translate(_CLASSES)
    words = kinds.count(b" a") + kinds.count(b".a") + (kinds[:1] == b"a")
    return words + kinds.count(b".")


def check(source: Union[str, bytes], per_token: int, stage: str) -> None:
    """Raise InputError (one line) when `stage` on `source` would cost more than the budget."""
    need = tokens(source) * per_token + len(source) * BYTES_PER_BYTE
    limit = budget()
    if need > limit:
        raise InputError(f"too big to {stage} within the memory bound: about {need >> 20} MiB needed, "
                         f"limit {limit >> 20} MiB; skipped (raise {BUDGET_ENV}, in MiB, to process it)")
