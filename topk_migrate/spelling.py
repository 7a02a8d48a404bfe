"""Identifiers as Python reads them: in their NFKC form (PEP 3131).

CPython normalizes every identifier while it parses: flash_mla_sparse_fwd written with U+FB02 (the fl
ligature) for `fl`, or with U+FF46 (a fullwidth f) for `f`, imports and calls flash_mla_sparse_fwd, and a
keyword argument topk_length written with a fullwidth t passes topk_length. LibCST keeps each name as
written, and the engine compares names as strings (imports, callees, keywords, scopes, the rules' tables).
So the engine reads a file through `normal_form`: each identifier in its NFKC form, strings and comments as
written, lines where they were. It is the one place names are normalized for LibCST; CPython's `ast`
(narrow.py, the rules' quick classifiers and project readers) normalizes them itself, and the byte prefilter
(discover.Prefilter) searches a file's NFKC form where its bytes are not all ASCII.

The file's own bytes are never rewritten from that text: in a file with such a spelling a fixable site is
manual, its reason naming the spelling, and each site's column is the one of the file's own line
(`Spelling.sites`). A file of ASCII text, or whose identifiers are all in their normal form, is read as
it is: `normal_form` hands back the text itself.
"""
from __future__ import annotations

import ast
import bisect
import keyword
import re
import tokenize
import unicodedata
import warnings
from dataclasses import dataclass, field, replace
from typing import Dict, List, Sequence, Tuple

from . import rules
from .model import InputError, Site, Status

# A run of identifier characters as CPython's tokenizer takes them (ASCII letters, digits, `_`, and any
# non-ASCII character), holding a non-ASCII one; the look-behind anchors it at the run's start, so a long
# ASCII run is scanned once, not once per position.
_RUN = re.compile(r"(?<![0-9A-Za-z_\x80-\U0010ffff])[0-9A-Za-z_]*[\x80-\U0010ffff][0-9A-Za-z_\x80-\U0010ffff]*")
_LINES = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


Name = Tuple[int, int, int, str, str]  # (line, 0-based column in the text read, characters added, as written, as read)


@dataclass(frozen=True)
class Spelling:
    """The text the engine reads, and the identifiers the file writes otherwise."""

    text: str
    names: Tuple[Name, ...] = ()
    by_line: Dict[int, List[Name]] = field(default_factory=dict, compare=False, repr=False)

    @property
    def changed(self) -> bool:
        return bool(self.names)

    def column(self, line: int, column: int) -> int:
        """The 1-based `column` of `line` of `text`, in the file's own characters."""
        at, shift = column - 1, 0
        for _, col, added, _, read in self.by_line.get(line, ()):
            if col + len(read) <= at:
                shift += added
            elif col < at:  # inside a name: its start
                shift += at - col
        return column - shift

    def sites(self, sites: Sequence[Site]) -> List[Site]:
        """The engine's sites of `text` as sites of the file: columns in its own characters, and a fixable
        site manual (apply never writes the file from `text`)."""
        if not self.names:
            return list(sites)
        return [replace(s, column=self.column(s.line, s.column),
                        **({"status": Status.MANUAL, "reason": self.reason(s)} if s.status is Status.FIXABLE else {}))
                for s in sites]

    def reason(self, site: Site) -> str:
        line, _, _, written, read = (self.by_line.get(site.line) or self.names)[0]
        try:
            param = rules.spec(site.rule).param if site.rule else None
        except KeyError:
            param = None
        return (f"identifier spelled with non-NFKC-normal characters: `{written}` (line {line}) is `{read}` "
                "to Python (PEP 3131); apply does not rewrite a file so spelled: write its identifiers as "
                f"Python reads them and run again, or {f'pass {param}' if param else 'make the change'} by hand")


def normal_form(text: str) -> Spelling:
    """`text` with each identifier in its NFKC form, as CPython reads it (strings and comments as written;
    a name whose normal form is a keyword, such as a fullwidth `None`, stays as written: Python takes it for
    a name, not the keyword). Lines and line breaks do not move. InputError where an identifier is written
    otherwise but the text cannot be tokenized while CPython compiles it."""
    if not needs_reading(text):
        return Spelling(text)
    starts, lines = [], []
    at = 0
    for m in _LINES.finditer(text):
        starts.append(at)
        line = m.group()
        lines.append(line.rstrip("\r\n") + "\n" if line.endswith(("\r", "\n")) else line)
        at = m.end()
    try:
        skip = _strings_and_comments(lines, starts)
    except (tokenize.TokenError, SyntaxError):
        if _compiles(text):
            raise InputError("an identifier is written with characters Python reads otherwise (NFKC, PEP 3131), "
                             "and the file could not be read as Python reads it; write its identifiers in "
                             "their normal form") from None
        return Spelling(text)  # CPython refuses it: the engine words why, as for any file
    out: List[str] = []
    names: List[Name] = []
    last = line = added = 0  # added: characters the names before on `line` added
    for m in _RUN.finditer(text):
        i = bisect.bisect_right(skip, (m.start(), float("inf"))) - 1
        if i >= 0 and skip[i][0] <= m.start() < skip[i][1]:
            continue  # in a string or a comment: kept as written
        for start, word in _words(m.group(), m.start()):
            read = unicodedata.normalize("NFKC", word)
            if read == word or keyword.iskeyword(read) or text[start - 1:start] == "\\":
                continue  # (after a backslash, in an f-string's text: `\N` would start an escape)
            at = bisect.bisect_right(starts, start)
            if at != line:
                line, added = at, 0
            out.append(text[last:start])
            names.append((line, start - starts[line - 1] + added, len(read) - len(word), word, read))
            added += len(read) - len(word)
            out.append(read)
            last = start + len(word)
    if not names:
        return Spelling(text)
    out.append(text[last:])
    by_line: Dict[int, List[Name]] = {}
    for n in names:
        by_line.setdefault(n[0], []).append(n)
    return Spelling("".join(out), tuple(names), by_line)


def needs_reading(text: str) -> bool:
    """Whether some run of identifier characters in `text` changes under NFKC (anywhere: in a string or a
    comment too). Cheap: most files are ASCII, or in their normal form, or hold only other non-ASCII
    characters (the ellipsis or a fullwidth comma of a comment changes under NFKC, but is no identifier
    character)."""
    if text.isascii() or unicodedata.is_normalized("NFKC", text):
        return False
    return any(not unicodedata.is_normalized("NFKC", word)
               for m in _RUN.finditer(text) for _, word in _words(m.group(), m.start()))


def _identifier_char(c: str) -> bool:
    return c.isascii() and (c.isalnum() or c == "_") or not c.isascii() and ("_" + c).isidentifier()


def _words(run: str, base: int):
    """(offset, word) for each maximal stretch of identifier characters (ASCII letters, digits and `_`, and
    the non-ASCII characters of XID_Continue) of `run`, found at `base`, that holds a non-ASCII one."""
    i, n = 0, len(run)
    while i < n:
        if not _identifier_char(run[i]):
            i += 1
            continue
        j = i
        while j < n and _identifier_char(run[j]):
            j += 1
        word = run[i:j]
        if not word.isascii():
            yield base + i, word
        i = j


def _strings_and_comments(lines: List[str], starts: List[int]) -> List[Tuple[int, int]]:
    """(start, end) offsets, sorted, of the comments and of the string literals that hold no code (an
    f-string's fields are code: one is read like code, its text included)."""
    feed = iter(lines)
    spans = []
    for tok in tokenize.generate_tokens(lambda: next(feed, "")):
        if tok.type == tokenize.COMMENT or tok.type == tokenize.STRING and not _formatted(tok.string):
            (r0, c0), (r1, c1) = tok.start, tok.end
            spans.append((starts[r0 - 1] + c0, starts[r1 - 1] + c1))
    return spans


def _formatted(literal: str) -> bool:
    prefix = literal[: min(i for i in (literal.find("'"), literal.find('"')) if i >= 0)]
    return "f" in prefix.lower() or "t" in prefix.lower()


def _compiles(text: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(text, "<spelling>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True

