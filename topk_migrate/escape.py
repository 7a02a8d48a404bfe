"""Text that came from a tree someone else wrote (file names, messages quoting them), made safe to show.

A file name may hold terminal escapes (ESC ] 0; title BEL, ESC [ 31 m), carriage
returns, bidi overrides that reorder what a reader sees, or bytes that are not
UTF-8 (decoded with surrogateescape). Human-readable output shows each of them as
a backslash escape; `fit` makes the result writable to a stream whatever its
encoding. Standard library only, and cheap to import: `check` uses it.
"""
from __future__ import annotations

import re
from typing import Optional

# C0 and C1 controls, DEL, bidi controls, line/paragraph separators, and surrogates
# (the undecodable bytes of a file name read with surrogateescape).
UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
SURROGATE = re.compile("[\ud800-\udfff]")


def escape(m: re.Match) -> str:
    """The escape for one UNSAFE character: a surrogateescape'd byte as the raw byte."""
    c = ord(m.group())
    if 0xDC80 <= c <= 0xDCFF:  # surrogateescape: the raw byte
        return f"\\x{c - 0xDC00:02x}"
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def printable(text: str, keep_newlines: bool = False) -> str:
    """text with every character that could drive a terminal or hide a line shown as an escape."""
    if keep_newlines:
        return "\n".join(printable(line) for line in text.split("\n"))
    return UNSAFE.sub(escape, text)


def lead(text: str) -> str:
    """text that begins a line with a name a fork chose (a path): `./` before it unless it starts with a
    letter, a digit, `_`, `.`, `/` or `-` (standard input is `-`). A CI runner reads a line that starts, after blanks, with `::` (GitHub)
    or `##` (Azure) as a command to it; `./::error ...` is only a path, as `./-x` is for git and ls."""
    first = text[:1]
    if not first or first.isalnum() or first in "_./-":
        return text
    return "./" + text


# A code listing on a terminal (`apply --diff` into a tty): every UNSAFE character but the line
# feed and the tab escaped. Into a pipe or file the diff stays byte-exact, for `git apply`.
_LISTING_UNSAFE = re.compile(UNSAFE.pattern.replace("\x00-\x1f", "\x00-\x08\x0b-\x1f"))


def listing(text: str) -> str:
    """text as a terminal may show it: lines and tabs kept, any other control escaped."""
    return _LISTING_UNSAFE.sub(escape, text)


def fit(text: str, encoding: Optional[str]) -> str:
    """text as `encoding` can carry it: an em dash becomes "--", anything else it lacks a backslash escape."""
    encoding = encoding or "utf-8"
    try:
        text.encode(encoding)
        return text
    except (UnicodeEncodeError, LookupError):
        pass
    text = text.replace("\u2014", "--")
    try:
        return text.encode(encoding, "backslashreplace").decode(encoding)
    except LookupError:
        return text.encode("ascii", "backslashreplace").decode("ascii")
