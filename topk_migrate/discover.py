"""Which files a run looks at, and which of them can hold a kernel call at all.

Only the standard library is imported here: this runs before anything is
parsed, on every file of a tree, and must stay cheap.

A walk never leaves the directory it was given: an entry whose real path lies
outside it (a symlink to elsewhere) is skipped, symlinked directories inside it
are followed only on request and each directory is walked once (never into a
loop), and a file reached by several paths is looked at once. The walk is a
loop, not a recursion, so no depth of tree can overflow the stack. Patterns
(.gitignore, --exclude, configuration) are matched by `PatternSet`, in time
linear in the path's length whatever a fork's .gitignore holds.
"""
from __future__ import annotations

import codecs
import errno
import functools
import os
import re
import stat
import unicodedata
from typing import Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple


class Prefilter:
    """Bytes that cannot hold a call of any needle are never parsed.

    Every spelling the resolver knows ends in a needle (an entry point of an enabled rule).
    The needles are covered by a few shared fragments (`sparse_` for the prefill names): one
    scan per fragment rules out most files, and the needles are searched only where one is.

    Python reads identifiers in their NFKC form (PEP 3131): the name spelled with U+FB02 (the fl
    ligature) or U+FF46 (a fullwidth f) is flash_mla_sparse_fwd when the code runs. Bytes with none
    of the needles are looked at again only where they are not all ASCII (`_spelled`): decoded as
    Python decodes them, NFKC-normalized, and searched for the needles. A file of ASCII bytes costs
    one more scan at memory speed (bytes.isascii), nothing else.
    """

    def __init__(self, needles: Sequence[bytes]):
        self.needles = tuple(sorted(set(needles)))
        self.groups = _cover(self.needles)  # (fragment, needles holding it)
        self.words = tuple(n.decode("ascii", "replace") for n in self.needles)
        # kept across windows: a name across the cut is still seen, however spelled (a letter Python reads
        # as ASCII takes at most 4 bytes of UTF-8)
        self.carry = _MAX_UTF8 * max(map(len, self.needles), default=1) - 1

    def matches(self, data) -> bool:
        return self.find(data, len(data))

    def find(self, buf, end: int, foreign: Optional[bool] = None) -> bool:
        """Whether buf[:end] may hold a needle. foreign: whether the file declares a codec other than
        UTF-8 (declares_other_codec of its first window); None: buf is the file's start, read it there."""
        if any(buf.find(frag, 0, end) >= 0 and any(buf.find(n, 0, end) >= 0 for n in group)
               for frag, group in self.groups):
            return True
        return self._spelled(buf, end, foreign)

    def _spelled(self, buf, end: int, foreign: Optional[bool]) -> bool:
        """A needle Python reads in buf[:end] spelled with non-ASCII characters (NFKC-equal to it)."""
        data = buf if end == len(buf) else bytes(memoryview(buf)[:end])
        if data.isascii():
            return False
        if foreign is None:
            foreign = declares_other_codec(data)
        if foreign:
            return True  # its non-ASCII bytes are other characters than UTF-8 says: the engine decodes them
        text = bytes(data).decode("utf-8", "surrogateescape")  # bytes Python cannot decode run nowhere
        if unicodedata.is_normalized("NFKC", text):
            return False  # read as written: the byte search said it all
        text = unicodedata.normalize("NFKC", text)
        return any(w in text for w in self.words)


_MAX_UTF8 = 4  # bytes of the longest UTF-8 character
_TWO_LINES = re.compile(rb"[^\r\n]*(?:\r\n|\r|\n)?[^\r\n]*")
_CODING = re.compile(rb"coding[:=][ \t]*([-\w.]+)")


def declares_other_codec(data) -> bool:
    """Whether the first two lines of `data` (a file's start) may hold a PEP 263 cookie naming a codec
    other than UTF-8 (a codec Python does not know included): over-approximated, any `coding:` or
    `coding=` in them counts, in a comment or not."""
    for m in _CODING.finditer(data, 0, _TWO_LINES.match(data).end()):
        try:
            if codecs.lookup(m.group(1).decode("ascii")).name != "utf-8":
                return True
        except (LookupError, UnicodeDecodeError):
            return True
    return False


def _cover(needles: Sequence[bytes], shortest: int = 6) -> List[Tuple[bytes, Tuple[bytes, ...]]]:
    """Greedy: the longest substring (of at least `shortest` bytes) shared by the most needles
    not yet covered, until every needle is; a needle no other shares is its own fragment."""
    left, out = list(needles), []
    while left:
        best, holders = left[0], [left[0]]
        for n in left:
            for i in range(len(n)):
                for j in range(i + shortest, len(n) + 1):
                    frag = n[i:j]
                    have = [m for m in left if frag in m]
                    if (len(have), len(frag)) > (len(holders), len(best)):
                        best, holders = frag, have
        out.append((best, tuple(holders)))
        left = [n for n in left if n not in holders]
    return out


@functools.lru_cache(maxsize=None)
def prefilter_for(enable: Tuple[str, ...] = (), everything: bool = False) -> Prefilter:
    """The prefilter of the site rules on by default plus `enable` (everything: of every site rule)."""
    from .rules import site_needles  # here: safe reading (read_regular...) works with no rule registry about

    return Prefilter(site_needles(enable, everything))


_override: Optional[Prefilter] = None


def prefilter() -> Prefilter:
    """What may_hold_site and the scanners look for: the rules on by default, unless a command says otherwise."""
    return _override or prefilter_for()


class scanning_for:
    """`with scanning_for(pf):` the scan looks for pf's names (audit: the rules the given paths'
    projects enable, prefilter_for(enable); bump: the entry points of two releases); scanner
    processes forked inside inherit it."""

    def __init__(self, pf: Prefilter):
        self.pf = pf

    def __enter__(self):
        global _override
        self.before, _override = _override, self.pf
        return self.pf

    def __exit__(self, *exc):
        global _override
        _override = self.before


def may_hold_site(data: bytes) -> bool:
    return prefilter().matches(data)


# .gitignore, pyproject.toml and the like: a bigger one is refused, not read.
PROJECT_FILE_LIMIT = 1 << 20

Note = Callable[[str, str], None]  # (path, why it was left out): `path: skipped: why` with -v


SCAN_WINDOW = 1 << 20  # bytes a scan holds of a file at once, whatever its size


def open_regular(path: str) -> Tuple[int, os.stat_result]:
    """An fd and stat of a regular file; NotRegularFile (never blocking on a FIFO) or OSError otherwise."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            isdir = stat.S_ISDIR(st.st_mode)
            raise NotRegularFile(errno.EISDIR if isdir else errno.EINVAL, "is a directory" if isdir else "not a regular file")
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def file_may_hold_site(path: str, buf: Optional[bytearray] = None) -> bool:
    """may_hold_site() of a file, read a window at a time into `buf` (a SCAN_WINDOW-byte buffer a
    caller reuses from file to file), so a scan allocates nothing per file and its memory stays flat
    however large a file is. OSError, as read_regular, for what is not a regular file (never blocks on
    a FIFO) or cannot be read."""
    fd, st = open_regular(path)
    pf = prefilter()
    try:
        if buf is None:
            buf = bytearray(SCAN_WINDOW)
        view = memoryview(buf)
        have = total = 0  # bytes carried over at the start of buf; bytes read so far
        foreign = None  # the file's codec is not UTF-8: known from its first window
        while True:
            want = len(buf) - have
            got = os.readv(fd, [view[have:]])
            total += got
            end = have + got
            if foreign is None and got:
                foreign = declares_other_codec(view[:end])
            if got and pf.find(buf, end, foreign):
                return True
            if got < want and total >= st.st_size or not got:
                return False  # the end (a short read at or past the size fstat gave)
            have = min(pf.carry, end, len(buf) // 2)  # (a small test buffer still reads on)
            view[:have] = bytes(view[end - have:end])
    finally:
        os.close(fd)


class NotRegularFile(OSError):
    """A path that opened but is not a regular file (directory, FIFO, device)."""


def read_regular(path: str, limit: Optional[int] = None) -> Tuple[bytes, os.stat_result]:
    """The bytes and stat of a regular file; OSError otherwise (never blocks on a FIFO).

    With `limit`, a file of more bytes (or one that grows past it while read) is
    refused with EFBIG before its contents are held in memory.
    """
    fd, st = open_regular(path)
    try:
        if limit is not None and st.st_size > limit:
            raise OSError(errno.EFBIG, f"file too large ({st.st_size} bytes > {limit})")
        data = os.read(fd, st.st_size + 1)  # one read for the whole file, as a rule
        if len(data) <= st.st_size:
            return data, st
        chunks, size = [data], len(data)  # it grew since fstat
        while True:
            b = os.read(fd, 1 << 20)
            if not b:
                return b"".join(chunks), st
            chunks.append(b)
            size += len(b)
            if limit is not None and size > limit:
                raise OSError(errno.EFBIG, f"file too large (grew past {limit} bytes while read)")
    finally:
        os.close(fd)


def read_bytes(path: str) -> bytes:
    return read_regular(path)[0]


def read_project_text(path: str, limit: int = PROJECT_FILE_LIMIT) -> str:
    """A small project file (.gitignore, pyproject.toml) as text; OSError if it is not a regular file or too big."""
    return read_regular(path, limit)[0].decode("utf-8", "replace")


def _why_unreadable(path: str) -> str:
    """One-line reason for a path that is neither a directory nor a regular file."""
    try:
        st = os.stat(path)
    except OSError as e:
        if e.errno == errno.ELOOP:
            return "symlink loop"
        if e.errno == errno.ENOENT:
            if os.path.islink(path):
                return f"broken symlink (points to {os.readlink(path)!r})"
            return "no such file or directory"
        return f"cannot read: {(e.strerror or str(e)).lower()}"
    if stat.S_ISDIR(st.st_mode):
        return "is a directory"
    return "not a regular file"


# -- gitignore patterns, matched without backtracking ------------------------------

_ANY = None  # a `**` path component: any number of components, none included

_POSIX_CLASSES = {
    "alnum": "a-zA-Z0-9", "alpha": "a-zA-Z", "digit": "0-9", "lower": "a-z", "upper": "A-Z",
    "xdigit": "0-9A-Fa-f", "space": " \\t\\n\\r\\f\\v", "blank": " \\t", "cntrl": "\\x00-\\x1f\\x7f",
    "print": "\\x20-\\x7e", "graph": "\\x21-\\x7e", "punct": re.escape("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"),
}


def _class_char(c: str) -> str:
    return "\\" + c if c in "\\]^-[" else c


def _bracket(text: str, i: int) -> Tuple[Optional[str], int]:
    """The regex class for the `[...]` at text[i], and the index after it; None if it never closes."""
    j = i + 1
    negate = j < len(text) and text[j] in "!^"
    j += negate
    items, first = [], True
    while j < len(text):
        c = text[j]
        if c == "]" and not first:
            body = "".join(items)
            return (f"[{'^' if negate else ''}{body}]" if body else ("." if negate else "(?!)")), j + 1
        first = False
        if text.startswith("[:", j):
            end = text.find(":]", j + 2)
            if end > 0 and text[j + 2:end] in _POSIX_CLASSES:
                items.append(_POSIX_CLASSES[text[j + 2:end]])
                j = end + 2
                continue
        if c == "\\" and j + 1 < len(text):
            c, j = text[j + 1], j + 2
        else:
            j += 1
        if j + 1 < len(text) and text[j] == "-" and text[j + 1] != "]":
            hi, j = (text[j + 2], j + 3) if text[j + 1] == "\\" and j + 2 < len(text) else (text[j + 1], j + 2)
            if c <= hi:  # a reversed range matches nothing, as in git
                items.append(f"{_class_char(c)}-{_class_char(hi)}")
            continue
        items.append(_class_char(c))
    return None, i + 1


class _Glob:
    """The glob of one path component (`*`, `?`, `[...]`, `\\x`), matched without backtracking.

    The glob is cut at its stars into pieces of fixed length; the first piece must
    start the name, the last must end it, and each one between is found leftmost
    after the previous one. That is O(len(name) * len(glob)) whatever the glob,
    where a translation to `re` (`.*a.*a.*b`) backtracks exponentially.
    `literal` is the name a glob without wildcards matches (compared, not compiled);
    `head`/`tail`, the characters a name must start/end with where a starred glob's
    first/last piece has no wildcard: what a PatternSet indexes it by. `needle`, its
    longest run without a wildcard, is in every name it matches: looked for first.
    """

    __slots__ = ("pieces", "lengths", "star", "literal", "head", "tail", "needle")

    def __init__(self, text: str):
        # between stars: (regex atom, its character, None for a wildcard), one character each
        pieces: List[List[Tuple[str, Optional[str]]]] = [[]]
        i = 0
        while i < len(text):
            c = text[i]
            if c == "*":
                if pieces[-1] or len(pieces) == 1:  # (a leading star: the head piece is empty)
                    pieces.append([])
                i += 1
                continue
            char: Optional[str] = None
            if c == "?":
                atom, i = ".", i + 1
            elif c == "[":
                atom, i = _bracket(text, i)
                if atom is None:
                    atom, char = re.escape("["), "["
            elif c == "\\" and i + 1 < len(text):
                char, i = text[i + 1], i + 2
                atom = re.escape(char)
            else:
                char, atom, i = c, re.escape(c), i + 1
            pieces[-1].append((atom, char))
        self.star = len(pieces) > 1
        self.lengths = [len(p) for p in pieces]
        texts = ["".join("\0" if c is None else c for _, c in p) for p in pieces]  # "\0" for a wildcard
        plain = [None if "\0" in t else t for t in texts]
        self.literal = None if self.star else plain[0]
        self.head = plain[0] or None if self.star else None
        self.tail = plain[-1] or None if self.star else None
        self.pieces, self.needle = [], ""
        if self.literal is None:
            self.pieces = [re.compile("".join(a for a, _ in p), re.DOTALL) for p in pieces]
            self.needle = max("\0".join(texts).split("\0"), key=len)

    def match(self, name: str) -> bool:
        if not self.star:
            if self.literal is not None:
                return name == self.literal
            return self.lengths[0] == len(name) and self.needle in name and self.pieces[0].fullmatch(name) is not None
        if self.needle not in name:
            return False
        head, tail = self.lengths[0], self.lengths[-1]
        end = len(name) - tail
        if end < head or not self.pieces[0].match(name) or not self.pieces[-1].fullmatch(name, end):
            return False
        pos = head
        for piece in self.pieces[1:-1]:
            found = piece.search(name, pos, end)
            if found is None:
                return False
            pos = found.end()
        return True


def _match_components(tokens: Sequence[Optional[_Glob]], parts: Sequence[str], start: int = 0) -> bool:
    """Do `tokens` (component globs, `_ANY` for `**`) match all of parts[start:]? Greedy, no backtracking:
    O(len(parts) * len(tokens)) component matches (the classic wildcard algorithm, one level up)."""
    i, j = start, 0
    star, mark = -1, 0
    while i < len(parts):
        if j < len(tokens) and tokens[j] is _ANY:
            star, mark, j = j, i, j + 1
        elif j < len(tokens) and tokens[j].match(parts[i]):
            i, j = i + 1, j + 1
        elif star >= 0:
            mark += 1
            i, j = mark, star + 1
        else:
            return False
    return all(t is _ANY for t in tokens[j:])


class _Pattern:
    """One gitignore line."""

    __slots__ = ("tokens", "negate", "dir_only", "basename", "fixed", "first", "last", "stepped", "start", "reach",
                 "memo")

    def __init__(self, tokens, negate: bool, dir_only: bool):
        self.tokens, self.negate, self.dir_only = tokens, negate, dir_only
        # `foo` (no slash) matches a name at any depth: only the last component need be looked at.
        self.basename = tokens[1] if len(tokens) == 2 and tokens[0] is _ANY and tokens[1] is not _ANY else None
        self.fixed = None if _ANY in tokens else len(tokens)  # component count of every path it can match
        self.first, self.last = tokens[0], tokens[-1]  # checked before the whole (unless `**`)
        # A pattern with `**` (other than a plain name) is matched by a walk one component at a time (advance):
        # checking every path from scratch would cost the depth of the tree per .gitignore above it.
        self.stepped = self.basename is None and self.fixed is None
        self.start = self._close(1) if self.stepped else 0
        # a state can accept after one more component only if it holds a position this far on
        # (from there on every token is `**`): what a check skips the step for
        self.reach = len(tokens) - next((n for n, t in enumerate(reversed(tokens)) if t is not _ANY), len(tokens))
        self.memo: dict = {}

    def _close(self, state: int) -> int:
        """The positions also reachable by letting each `**` match nothing (state: a bit per token)."""
        for p, t in enumerate(self.tokens):
            if t is _ANY and state >> p & 1:
                state |= 1 << (p + 1)
        return state

    def advance(self, state: int, name: str) -> int:
        """The state after one more path component (an NFA step: no backtracking, O(len(tokens))).

        Remembered: a walk asks the same step for every entry of a directory, and for
        each directory of a tree as deep as it is wide in .gitignore files."""
        key = (state, name)
        got = self.memo.get(key)
        if got is None:
            if len(self.memo) > 4096:
                self.memo.clear()
            got = self.memo[key] = self._step(state, name)
        return got

    def _step(self, state: int, name: str) -> int:
        nxt, rest, tokens = 0, state, self.tokens
        while rest:  # only the positions reached so far; a dead state (0) stays dead at no cost
            low = rest & -rest
            rest ^= low
            p = low.bit_length() - 1
            if p < len(tokens):
                t = tokens[p]
                if t is _ANY:
                    nxt |= low
                elif t.match(name):
                    nxt |= low << 1
        return self._close(nxt) if nxt else 0

    def index_key(self) -> Tuple[Optional[str], object]:
        """Where a PatternSet indexes it: ("names", name), ("heads", head), ("tails", tail) for a
        name at any depth; ("paths", components) for an anchored path without wildcards; else (None, None)."""
        g = self.basename
        if g is not None:
            for where, key in (("names", g.literal), ("heads", g.head), ("tails", g.tail)):
                if key is not None:
                    return where, key
        elif self.fixed is not None and all(t.literal is not None for t in self.tokens):
            return "paths", tuple(t.literal for t in self.tokens)
        return None, None

    def accepts(self, state: int, is_dir: bool) -> bool:
        return bool(state >> len(self.tokens) & 1) and (is_dir or not self.dir_only)

    def matches(self, parts: Sequence[str], start: int, is_dir: bool) -> bool:
        """Does it name this very path, parts[start:] (not a parent)? What a walk asks: parents were asked before."""
        if (self.dir_only and not is_dir) or len(parts) <= start:
            return False
        if self.basename is not None:
            return self.basename.match(parts[-1])
        if self.fixed is not None and len(parts) - start != self.fixed:
            return False
        if (self.first is not _ANY and not self.first.match(parts[start])) or \
                (self.last is not _ANY and not self.last.match(parts[-1])):
            return False
        return _match_components(self.tokens, parts, start)

    def matches_within(self, rel: str, is_dir: bool) -> bool:
        """Does it name this path or one of its parent directories?"""
        parts = rel.split("/")
        if self.dir_only and not is_dir:
            parts = parts[:-1]  # only the parents are directories
        return bool(parts) and _match_components(list(self.tokens) + [_ANY], parts)


def _parse_line(line: str) -> Optional[_Pattern]:
    """git's gitignore(5) syntax; None for blanks and comments."""
    end = len(line.rstrip(" "))
    if end < len(line) and (len(line[:end]) - len(line[:end].rstrip("\\"))) % 2:
        end += 1  # "foo\ " keeps its escaped space
    line = line[:end]
    if not line or line.startswith("#"):
        return None
    negate = line.startswith("!")
    if negate:
        line = line[1:]
    dir_only = line.endswith("/") and not line.endswith("\\/")
    line = line.rstrip("/") if dir_only else line
    anchored = "/" in line
    parts = [p for p in line.split("/") if p]
    if not parts:
        return None
    # a component of stars only is `**` (git's wildmatch reads `***` so too)
    tokens: List[Optional[_Glob]] = [_ANY if len(p) > 1 and not p.strip("*") else _Glob(p) for p in parts]
    if not anchored:
        tokens.insert(0, _ANY)
    elif len(tokens) > 1 and tokens[-1] is _ANY:
        tokens[-1:] = [_Glob("*"), _ANY]  # `dir/**`: everything inside dir, not dir itself
    return _Pattern(tokens, negate, dir_only)


_SHARED: List["PatternSet"] = []  # what every process of a split walk holds (made before the fork)


def _shared_pattern_set(i: int) -> "PatternSet":
    return _SHARED[i]


def _unshare() -> None:
    for spec in _SHARED:
        spec.shared = None
    _SHARED.clear()


class PatternSet:
    """Lines of gitignore syntax, matched against '/'-separated paths relative to their base.

    The last pattern that names a path decides. Patterns with a literal part are indexed by it
    (a name, an anchored path, a starred name's literal head or tail), so a check matches only
    the few the path's own components point to, then the rest (`general`) back to the last hit:
    a .gitignore of 100,000 names costs a lookup, not 100,000 matches, per path. What cannot be
    indexed is counted in `wild`, which callers bound (WILD_PATTERNS).
    """

    shared: Optional[int] = None  # its place in _SHARED: pickled as that, not as its patterns

    def __init__(self, patterns: Sequence[_Pattern]):
        self.patterns = list(patterns)
        self.stepped = [p for p in self.patterns if p.stepped]
        self.names: Dict[str, List[int]] = {}  # indexes of the patterns keyed so, last first
        self.paths: Dict[tuple, List[int]] = {}
        self.heads: Dict[str, List[int]] = {}
        self.tails: Dict[str, List[int]] = {}
        self.general: List[Tuple[int, _Pattern, int]] = []  # (index, pattern, its place among `stepped` or -1)
        k = 0
        for i, p in enumerate(self.patterns):
            where, key = p.index_key()
            if where is None:
                self.general.append((i, p, k if p.stepped else -1))
                k += p.stepped
                continue
            bucket = getattr(self, where).setdefault(key, [])
            if where in ("names", "paths"):  # the same name once per (negate, dir_only): the last
                bucket[:] = [j for j in bucket
                             if (self.patterns[j].negate, self.patterns[j].dir_only) != (p.negate, p.dir_only)]
            bucket.append(i)
        self.general.reverse()
        for index in (self.names, self.paths, self.heads, self.tails):
            for bucket in index.values():
                bucket.reverse()
        self.head_lengths = sorted({len(h) for h in self.heads})
        self.tail_lengths = sorted({len(t) for t in self.tails})
        self.indexed = bool(self.names or self.paths or self.heads or self.tails)
        # what a check may match beyond one pattern per bucket its path points to
        self.wild = len(self.general) + sum(len(b) - 1 for index in (self.heads, self.tails) for b in index.values())

    def __reduce_ex__(self, protocol):
        if self.shared is not None:
            return _shared_pattern_set, (self.shared,)
        return super().__reduce_ex__(protocol)

    def _buckets(self, name: str) -> Iterator[List[int]]:
        """The buckets of `name` as a last component: its name's, its heads' and its tails'."""
        bucket = self.names.get(name)
        if bucket:
            yield bucket
        for n in self.head_lengths:
            if n > len(name):
                break
            bucket = self.heads.get(name[:n])
            if bucket:
                yield bucket
        for n in self.tail_lengths:
            if n > len(name):
                break
            bucket = self.tails.get(name[-n:])
            if bucket:
                yield bucket

    def _last_hit(self, buckets: Iterable[Sequence[int]], hits: Callable[[_Pattern], bool]) -> int:
        """The index of the last pattern in `buckets` that hits, -1 if none."""
        best = -1
        for bucket in buckets:
            for i in bucket:  # last first: the first hit is the bucket's last
                if i <= best:
                    break
                if hits(self.patterns[i]):
                    best = i
                    break
        return best

    def _last_indexed(self, parts: Sequence[str], start: int, is_dir: bool) -> int:
        """The index of the last indexed pattern naming parts[start:], -1 if none."""
        if not self.indexed or len(parts) <= start:
            return -1
        found = list(self._buckets(parts[-1]))
        if self.paths:
            found.append(self.paths.get(tuple(parts[start:]), ()))
        return self._last_hit(found, lambda p: p.matches(parts, start, is_dir))

    def _decided(self, best: int) -> Optional[bool]:
        return None if best < 0 else not self.patterns[best].negate

    # A walk keeps, per directory, the states of the stepped patterns (a tuple, in order).

    def start(self) -> tuple:
        return tuple(p.start for p in self.stepped)

    def advance(self, states: tuple, name: str) -> tuple:
        return tuple(p.advance(st, name) for p, st in zip(self.stepped, states))

    def check_walk(self, parts: Sequence[str], start: int, is_dir: bool, states: tuple) -> Optional[bool]:
        """check_parts() of an entry of a walk; `states` are those of its directory."""
        best = self._last_indexed(parts, start, is_dir)
        for i, p, k in self.general:
            if i < best:
                break
            if k < 0:
                hit = p.matches(parts, start, is_dir)
            else:
                hit = states[k].bit_length() >= p.reach and p.accepts(p.advance(states[k], parts[-1]), is_dir)
            if hit:
                return not p.negate
        return self._decided(best)

    def check(self, rel: str, is_dir: bool) -> Optional[bool]:
        """True/False if the last pattern naming this very path excludes/re-includes it; None if none does.

        With a walk that prunes excluded directories this is git's own rule: a file
        under an excluded directory cannot be re-included.
        """
        return self.check_parts(rel.split("/"), 0, is_dir)

    def check_parts(self, parts: Sequence[str], start: int, is_dir: bool) -> Optional[bool]:
        """check() of the path whose components are parts[start:]."""
        best = self._last_indexed(parts, start, is_dir)
        for i, p, _ in self.general:
            if i < best:
                break
            if p.matches(parts, start, is_dir):
                return not p.negate
        return self._decided(best)

    def match_file(self, rel: str) -> bool:
        """For a whole path at once (no walk): the last pattern naming it or a parent decides.
        A trailing "/" marks a directory."""
        is_dir = rel.endswith("/")
        rel = rel.strip("/")
        best = -1
        if self.indexed:  # what each component (and each leading path) points to
            parts = rel.split("/")
            found = [b for name in parts for b in self._buckets(name)]
            if self.paths:
                found += [self.paths.get(tuple(parts[:n]), ()) for n in range(1, len(parts) + 1)]
            best = self._last_hit(found, lambda p: p.matches_within(rel, is_dir))
        for i, p, _ in self.general:
            if i < best:
                break
            if p.matches_within(rel, is_dir):
                return not p.negate
        return bool(self._decided(best))


def compile_patterns(lines: Iterable[str]) -> Optional[PatternSet]:
    """The patterns of `lines`; a line given again counts where it last stands (the earlier
    copy can never decide), so a file of repeated lines costs its distinct lines."""
    last = {line: i for i, line in enumerate(lines)}
    patterns = [p for p in map(_parse_line, sorted(last, key=last.__getitem__)) if p is not None]
    return PatternSet(patterns) if patterns else None


WILD_PATTERNS = 1000  # patterns no literal part indexes, over the ignore files that apply at one place
PATTERNS = 100_000  # patterns of any kind there: what a process holds of them (about 72 MB)


class Ignore:
    """The gitignore pattern sets that apply at one point of a walk, shallowest first.

    Each is (lead, depth, patterns). A path is given as its components below the
    walked directory, `parts`; a .gitignore inside the walk, `depth` components
    down, sees parts[depth:]; one above the walk sees lead + parts, where lead
    names the walked directory from it. No path string is rebuilt per pattern
    file, and `**` patterns advance one component per directory, so a tree deep
    in .gitignore files costs the square of its depth, not the cube.
    """

    def __init__(self, specs: Sequence[Tuple[List[str], int, PatternSet]] = ()):
        self.specs = list(specs)

    def with_file(self, path: str, lead: List[str], depth: int, note: Note) -> "Ignore":
        """These rules and those of the ignore file at `path`. One that would pass a bound with the files
        above it is not applied (told to `note`): WILD_PATTERNS, since each path would be matched against
        all of those, and PATTERNS, since the walk holds them all while it is below."""
        spec = compile_patterns(_read_lines(path, note))
        if spec is None:
            return self
        wild = spec.wild + sum(s.wild for _, _, s in self.specs)
        if wild > WILD_PATTERNS:
            note(path, f"{wild} wildcard patterns to match each path against, with the ignore files above it "
                       f"(at most {WILD_PATTERNS}; patterns with a literal name, start or end are not counted)")
            return self
        held = len(spec.patterns) + self.patterns()
        if held > PATTERNS:
            note(path, f"{held} patterns with the ignore files above it (at most {PATTERNS})")
            return self
        return Ignore(self.specs + [(lead, depth, spec)])

    def patterns(self) -> int:
        return sum(len(s.patterns) for _, _, s in self.specs)

    def travels(self) -> bool:
        """Whether a seed under these rules is cheap to send to another process: its pattern sets are
        shared, or small (a big .gitignore met by a scanner would be pickled with every seed below it)."""
        return all(spec.shared is not None or len(spec.patterns) <= TRAVELLING_PATTERNS for _, _, spec in self.specs)


TRAVELLING_PATTERNS = 64


def _read_lines(path: str, note: Note) -> List[str]:
    if os.path.islink(path):  # as git: a symlinked .gitignore is not read
        note(path, "a symlinked ignore file (git does not read one either)")
        return []
    try:
        return read_project_text(path).splitlines()
    except FileNotFoundError:
        return []
    except OSError as e:
        note(path, (e.strerror or str(e)).lower())
        return []


def _outer_ignore_files(root: str) -> List[Tuple[str, str]]:
    """(directory, file) of the ignore files above root, up to its git work tree's top
    (.git/info/exclude, then each .gitignore), shallowest first."""
    chain, d = [], os.path.dirname(root)
    while True:
        chain.append(d)
        if os.path.exists(os.path.join(d, ".git")):
            break
        parent = os.path.dirname(d)
        if parent == d:
            return []  # not in a git work tree: nothing above root applies
        d = parent
    return [(d, os.path.join(d, ".git", "info", "exclude"))] + [(a, os.path.join(a, ".gitignore")) for a in reversed(chain)]


def _git_top(real: str) -> Tuple[Optional[str], Tuple[str, ...]]:
    """The git work tree `real` (a real path) lies in, found as git finds it (the nearest directory up
    holding a `.git` entry), and real's components below it; (None, ()) outside any."""
    d = real
    while True:
        if os.path.lexists(os.path.join(d, ".git")):
            rel = os.path.relpath(real, d)
            return d, tuple(rel.split(os.sep)) if rel != os.curdir else ()
        parent = os.path.dirname(d)
        if parent == d:
            return None, ()
        d = parent


class Tracked:
    """The .py files git tracks in one work tree ('/'-separated, relative to its top), by directory: a file
    tracked there is walked even where an ignore rule matches it (git itself reads a tracked file whatever
    .gitignore says; a `test_*.py` line does not untrack the tests)."""

    def __init__(self, files: Iterable[str]):
        self.files: Dict[str, List[str]] = {}  # directory ('' for the top) -> the tracked .py files in it
        self.dirs: Dict[str, List[str]] = {}  # directory -> its subdirectories that hold one, at any depth
        for rel in sorted(set(files)):
            d, _, _ = rel.rpartition("/")
            self.files.setdefault(d, []).append(rel)
            while d and d not in self.dirs:
                up = d.rpartition("/")[0]
                self.dirs[d] = []
                self.dirs.setdefault(up, []).append(d)
                d = up

    def holds(self, rel: str, is_dir: bool) -> bool:
        return rel in self.dirs if is_dir else rel in self.files.get(rel.rpartition("/")[0], ())

    def below(self, rel: str) -> Iterator[str]:
        """The tracked .py files under the directory `rel`, in sorted order of their directories."""
        todo = [rel]
        while todo:
            d = todo.pop()
            yield from self.files.get(d, ())
            todo.extend(sorted(self.dirs.get(d, ()), reverse=True))


def _tracked_python_files(top: str) -> Optional[Tracked]:
    """The .py files git tracks in the work tree at `top`, read with `git ls-files` (subprocesses.git: its
    time, output and configuration bounds); None where git cannot tell (no git, a repository it refuses,
    a bound passed): then the ignore rules decide alone, as before."""
    from .subprocesses import GitStopped, git

    try:
        done = git(["ls-files", "-z", "--cached", "--", "*.py"], top)
    except (OSError, GitStopped):
        return None
    if done.returncode != 0:
        return None
    return Tracked(os.fsdecode(raw) for raw in done.stdout.split(b"\0") if raw)


_TRACKED: List[Callable[[str], Optional[Tracked]]] = []


def tracked_python_files(top: str) -> Optional[Tracked]:
    """_tracked_python_files, once per run (run_context, imported when first needed: a walk that meets no
    ignored .py file or directory never runs git)."""
    if not _TRACKED:
        from .run_context import per_run

        _TRACKED.append(per_run(_tracked_python_files))
    return _TRACKED[0](top)


def _after(spec: PatternSet, components: Sequence[str]) -> tuple:
    """The states of spec's `**` patterns once `components` are consumed."""
    states = spec.start()
    for c in components:
        states = spec.advance(states, c)
    return states


def _inside(real: str, top: str) -> bool:
    return real == top or real.startswith(top if top.endswith(os.sep) else top + os.sep)


NO_PYTHON_FILES = "no Python files found (after ignore rules)"  # told to `note` for a directory given


def iter_python_files(
    paths: Iterable[str], exclude: Sequence[str] = (), gitignore: bool = True,
    follow_links: bool = False, note: Optional[Note] = None,
) -> Iterator[Tuple[str, Optional[str]]]:
    """Yield (path, error) for every file to look at; error is a one-line reason or None.

    Files named on the command line are always looked at (a symlink among them:
    its target). Directories are walked in sorted order, skipping hidden
    directories, .gitignore'd paths, paths that match an `exclude` pattern
    (gitignore syntax, relative to the directory given), anything whose real path
    lies outside the directory given, and symlinked directories unless
    `follow_links`. Each skip for a reason of trust is told to `note`, and so is a
    directory given that holds no file to look at (NO_PYTHON_FILES). A file
    reached by several paths is yielded once. A *.py entry that is not a regular
    file (broken link, link loop, FIFO, ...) is reported, not read.
    """
    note = note or (lambda path, why: None)
    excl = compile_patterns(exclude)
    yielded: set = set()  # real paths: a file reached twice is looked at once
    for p in paths:
        if os.path.isdir(p):
            found = False
            for got in _walk(p, excl, gitignore, follow_links, note, yielded):
                found = True
                yield got
            inside = os.path.join(os.path.realpath(p), "")
            if not found and not any(r.startswith(inside) for r in yielded):  # (not only given twice)
                note(p, NO_PYTHON_FILES)  # a wrong path in CI must not pass as "0 file(s)" unnoticed
        elif os.path.isfile(p):
            real = os.path.realpath(p)
            if real not in yielded:
                yielded.add(real)
                yield p, None
        elif os.path.abspath(p) not in yielded:  # a bad path named twice is one error
            yielded.add(os.path.abspath(p))
            yield p, _why_unreadable(p)


class _Walker:
    """The walk of one directory given: its rules, and the directories and files it has seen.

    `walk(seeds)` walks each seed (the directory given is `root`) depth first in sorted order,
    with a stack instead of recursion; `linked()` then yields the symlinked files, which go last
    (a target's own name goes first). With `donating` set it enters no further directory: each
    becomes a seed in `donated` (its files are still yielded), so that the rest of a walk can go
    to another process. What is left out is told with a key: the path's components below the
    directory given, whose order is the walk's order. `excl` is tested on its own so no
    .gitignore negation can undo it.
    """

    def __init__(self, top: str, excl: Optional[PatternSet], gitignore: bool, follow_links: bool, note: Note,
                 yielded: set):
        self.top = top = os.path.normpath(top)
        atop, self.real_top = os.path.abspath(top), os.path.realpath(top)
        self.excl, self.gitignore, self.follow_links, self.yielded = excl, gitignore, follow_links, yielded
        self.tell: Callable[[tuple, str, str], None] = lambda key, path, why: note(path, why)
        self.walked: dict = {}  # (st_dev, st_ino) -> path: each directory once, so never into a loop
        self.symlinked: List[Tuple[tuple, str, str]] = []  # (key, path, real): looked at last
        self.donating, self.donated, self.donate_any = False, [], False
        # A directory given is walked even where git would ignore it (or one above it): as in ruff
        # and black, paths given are always processed; ignore rules apply to what the walk finds.
        ig = Ignore()
        for a, f in _outer_ignore_files(atop) if gitignore else ():
            ig = ig.with_file(f, os.path.relpath(atop, a).split(os.sep), 0, note)
        states = [_after(spec, lead) for lead, _, spec in ig.specs]  # per spec: its `**` patterns' states here
        # a seed: (path, real path, components below top, ignore rules, their states, exclude's states)
        self.root = (top, self.real_top, (), ig, states, excl.start() if excl is not None else ())
        # where git tracks files: the work tree and top's place in it (a tracked file an ignore rule matches
        # is walked all the same: Tracked)
        self.git_top, self.git_lead = _git_top(self.real_top) if gitignore else (None, ())

    def _skip(self, names: tuple, ig: "Ignore", states: list, xstates: tuple, name: str, is_dir: bool) -> bool:
        return self._skipped(names, ig, states, xstates, name, is_dir) is not None

    def _skipped(self, names: tuple, ig: "Ignore", states: list, xstates: tuple, name: str,
                 is_dir: bool) -> Optional[str]:
        """Why the entry is left out: "exclude" (--exclude, never undone), "ignore" (an ignore rule: for a
        file, one git does not track; a directory is never entered, the files git tracks under it are
        walked by _tracked_below), or None."""
        if self.excl is None and not ig.specs:
            return None
        parts = [*names, name]
        if self.excl is not None and self.excl.check_walk(parts, 0, is_dir, xstates):
            return "exclude"
        for (lead, depth, spec), st in zip(reversed(ig.specs), reversed(states)):
            decided = spec.check_walk(lead + parts if lead else parts, 0 if lead else depth, is_dir, st)
            if decided is not None:
                return "ignore" if decided and (is_dir or not self._tracked(parts, False)) else None
        return None

    def _tracked(self, parts: Sequence[str], is_dir: bool) -> bool:
        """Does git track the .py file at `parts` (below top), or, for a directory, a .py file under it?"""
        if self.git_top is None or not (is_dir or parts[-1].endswith(".py")):
            return False
        tracked = tracked_python_files(self.git_top)
        return tracked is not None and tracked.holds("/".join((*self.git_lead, *parts)), is_dir)

    def _tracked_below(self, names: tuple) -> Iterator[Tuple[str, Optional[str]]]:
        """The .py files git tracks under the directory `names` (below top), which an ignore rule excludes:
        each a regular file reached through no symlink, in no hidden directory, that --exclude keeps. Only
        those: the untracked files beside them stay ignored, as git ignores them."""
        tracked = tracked_python_files(self.git_top) if self.git_top is not None else None
        if tracked is None:
            return
        lead = len(self.git_lead)
        for rel in tracked.below("/".join((*self.git_lead, *names))):
            parts = rel.split("/")[lead:]
            if any(c.startswith(".") for c in parts[:-1]):
                continue
            if self.excl is not None and self.excl.match_file("/".join(parts)):
                continue
            path, real = os.path.join(self.top, *parts), os.path.join(self.real_top, *parts)
            try:
                st = os.lstat(path)
            except OSError:
                continue
            if not stat.S_ISREG(st.st_mode) or os.path.realpath(path) != real or real in self.yielded:
                continue
            self.yielded.add(real)
            yield path, None

    def _enter(self, seed: tuple):
        """The frame of a seed's directory (its sorted entries, the ignore rules and pattern states
        that apply in it, its real path + separator, its components), None if already walked, or an
        error line."""
        d, real, names, ig, states, xstates = seed
        try:
            st = os.stat(d)
        except OSError:
            return _why_unreadable(d)
        key = (st.st_dev, st.st_ino)
        if key in self.walked:
            self.tell(names, d, f"same directory as {self.walked[key]}, walked once")
            return None
        self.walked[key] = d
        try:
            with os.scandir(d) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as e:
            return f"cannot list: {(e.strerror or str(e)).lower()}"
        if self.gitignore and any(e.name == ".gitignore" for e in entries):
            told = lambda path, why: self.tell(names, path, why)  # noqa: E731 (before the entries)
            deeper = ig.with_file(os.path.join(d, ".gitignore"), [], len(names), told)
            if deeper is not ig:
                ig, states = deeper, states + [deeper.specs[-1][2].start()]
        return iter(entries), ig, real.rstrip(os.sep) + os.sep, states, xstates, names

    def walk(self, seeds: Iterable[tuple]) -> Iterator[Tuple[str, Optional[str]]]:
        for seed in seeds:
            first = self._enter(seed)
            if isinstance(first, str):
                yield seed[0], first
            elif first is not None:
                yield from self._descend([first])

    def _descend(self, stack: list) -> Iterator[Tuple[str, Optional[str]]]:
        excl, yielded = self.excl, self.yielded
        while stack:
            entries, ig, real_dir, states, xstates, names = stack[-1]  # real_dir ends with a separator
            e = next(entries, None)
            if e is None:
                stack.pop()
                continue
            try:
                link = e.is_symlink()
            except OSError:
                link = False
            if link:
                real = os.path.realpath(e.path)
                if not _inside(real, self.real_top):
                    self.tell(names + (e.name,), e.path, f"symlink to {real}, outside {self.top}")
                    continue
            else:
                real = real_dir + e.name
            try:
                is_dir = e.is_dir()
            except OSError:
                is_dir = False
            if is_dir:
                if e.name.startswith("."):
                    continue
                why = self._skipped(names, ig, states, xstates, e.name, True)
                if why is not None:
                    if why == "ignore" and not link and self._tracked((*names, e.name), True):
                        yield from self._tracked_below(names + (e.name,))
                    continue
                if link and not self.follow_links:
                    self.tell(names + (e.name,), e.path, "symlinked directory, not followed (pass --follow-links)")
                    continue
                seed = (e.path, real, names + (e.name,), ig,
                        [spec.advance(st, e.name) for (_, _, spec), st in zip(ig.specs, states)],
                        excl.advance(xstates, e.name) if excl is not None else ())
                if self.donating and (self.donate_any or ig.travels()):
                    self.donated.append(seed)
                    continue
                sub = self._enter(seed)
                if isinstance(sub, str):
                    yield e.path, sub
                elif sub is not None:
                    stack.append(sub)
            elif e.name.endswith(".py") and not self._skip(names, ig, states, xstates, e.name, False):
                try:
                    ok = e.is_file()
                except OSError:
                    ok = False
                if not ok:
                    yield e.path, _why_unreadable(e.path)
                elif link:
                    self.symlinked.append((names + (e.name,), e.path, real))
                elif real not in yielded:
                    yielded.add(real)
                    yield e.path, None

    def linked(self, symlinked: Iterable[Tuple[tuple, str, str]]) -> Iterator[Tuple[str, Optional[str]]]:
        """The symlinked files, in the walk's order: each whose target was not looked at already."""
        for key, path, real in symlinked:
            if real in self.yielded:
                self.tell(key, path, f"symlink to {real}, which is looked at once")
            else:
                self.yielded.add(real)
                yield path, None


def _walk(top: str, excl: Optional[PatternSet], gitignore: bool, follow_links: bool, note: Note,
          yielded: set) -> Iterator[Tuple[str, Optional[str]]]:
    """Walk one directory here, whole."""
    w = _Walker(top, excl, gitignore, follow_links, note, yielded)
    yield from w.walk([w.root])
    yield from w.linked(w.symlinked)


def _mount_points(table: str = "/proc/self/mountinfo") -> Optional[List[str]]:
    """The mount points this process sees (Linux's mount table), None if it cannot be read."""
    try:
        with open(table, "rb") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    unescape = functools.partial(re.compile(rb"\\([0-7]{3})").sub, lambda m: bytes([int(m.group(1), 8) & 0xFF]))
    return [os.fsdecode(unescape(line.split(b" ")[4])) for line in lines if line.count(b" ") >= 4]


def _distinct_specs(seeds: Sequence[tuple]) -> List[PatternSet]:
    """The ignore files the seeds' rules hold, each once."""
    return list({id(spec): spec for seed in seeds for _, _, spec in seed[3].specs}.values())


def _patterns_held(seeds: Sequence[tuple]) -> int:
    return sum(len(spec.patterns) for spec in _distinct_specs(seeds))


class SplitWalk:
    """The walk of one directory given, split into parts that other processes walk (audit's scanners).

    It yields what iter_python_files yields for that directory alone, as a set, and tells `note`
    the same things in the same order (at the end). That holds because each directory is reached
    once, by one path, so parts share no directory: it is planned only without --follow-links,
    for one directory given, with no mount point inside it (a bind mount could show a directory
    twice). Should a directory still come back twice (a mount made meanwhile), the part that found
    it again walks no further there, so no loop can run on.

    This process walks the first levels (`start`) until there are enough seeds (directories not
    walked yet) for the processes it has; a process walks a part (`part`), and donates the seeds
    it has not entered once it has walked its share; this process takes its results (`absorb`),
    and at the end (`finish`) the symlinked files, which go last in the walk's order.
    """

    def __init__(self, given: str, exclude: Sequence[str], gitignore: bool, note: Note,
                 keep_filter: Optional[Callable[[Sequence[str]], Optional[Callable[[str], bool]]]] = None):
        self.given, self.note = given, note
        # [tool.topk-migrate]'s include/exclude, as config.project_files applies them (config.project_filter)
        self.keeps = keep_filter([given]) if keep_filter is not None else None
        self.walker = w = _Walker(given, compile_patterns(exclude), gitignore, False, note, set())
        self.notes: List[Tuple[tuple, str, str]] = []
        w.tell = lambda key, path, why: self.notes.append((key, path, why))
        self.symlinked = w.symlinked  # those met here and in every part: (key, path, real)
        self.reals: List[str] = []  # each part's files' real paths, "\0"-joined: read only if a symlink needs them
        self.walked = w.walked  # every part's directories, to find one walked twice
        self.found = False  # anything yielded, before the filter

    @classmethod
    def plan(cls, paths: Sequence[str], exclude: Sequence[str], gitignore: bool, follow_links: bool,
             note: Optional[Note], keep_filter=None) -> Optional["SplitWalk"]:
        if len(paths) != 1 or follow_links or not os.path.isdir(paths[0]):
            return None
        real, points = os.path.realpath(paths[0]), _mount_points()
        if points is None or any(p != real and _inside(p, real) for p in points):
            return None
        return cls(paths[0], exclude, gitignore, note or (lambda path, why: None), keep_filter)

    def start(self, ways: int) -> List[Tuple[str, Optional[str]]]:
        """Walk here, a level at a time, until there are `ways` seeds (left in `seeds`) or none: the
        files met. Before the processes that walk the parts are forked: the ignore files read here are
        shared with them, so that a seed pickles as their places in _SHARED, not as their patterns."""
        w, seeds, files = self.walker, [self.walker.root], []
        w.donating = w.donate_any = True
        while seeds and len(seeds) < ways and _patterns_held(seeds) <= PATTERNS:
            w.donated, left = [], seeds[::-1]
            while left and _patterns_held(w.donated) <= PATTERNS:  # each directory listed adds its ignore file
                files += self._kept(w.walk([left.pop()]))
            seeds = w.donated + left[::-1]  # (any order: parts share no directory, notes are sorted)
        self.seeds = seeds
        _unshare()  # an earlier run's, if it did not finish
        _SHARED[:] = _distinct_specs([self.walker.root, *seeds])
        for i, spec in enumerate(_SHARED):
            spec.shared = i
        return files

    def _kept(self, found: Iterable[Tuple[str, Optional[str]]]) -> Iterator[Tuple[str, Optional[str]]]:
        for path, err in found:
            self.found = True
            if self.keeps is None or self.keeps(path):
                yield path, err

    def part(self) -> _Walker:
        """A walker for a part, in the process that walks it: the rules, none of what was seen."""
        w = _Walker.__new__(_Walker)
        w.__dict__.update(self.walker.__dict__)
        w.yielded, w.walked, w.symlinked, w.donated, w.donating, w.donate_any = set(), {}, [], [], False, False
        w.notes, w.found = [], False
        w.tell = lambda key, path, why: w.notes.append((key, path, why))
        return w

    def files(self, w: _Walker, seeds: List[tuple], share: float) -> Iterator[Tuple[str, Optional[str]]]:
        """A part's files (after the filter); from the `share`-th, the walker donates what it has not entered."""
        n, w.donating = 0, share <= 0
        for got in w.walk(seeds):
            w.found = True
            n += 1
            if n >= share:
                w.donating = True
            if self.keeps is None or self.keeps(got[0]):
                yield got

    @staticmethod
    def result(w: _Walker) -> tuple:
        """What a part sends back besides its files' verdicts."""
        return w.notes, w.symlinked, "\0".join(w.yielded), list(w.walked.items()), w.donated, w.found

    def absorb(self, result: tuple) -> List[tuple]:
        """Take a part's result; the seeds it donated, to walk next."""
        notes, symlinked, reals, walked, donated, found_any = result
        self.notes += notes
        self.symlinked += symlinked
        self.reals.append(reals)
        self.found = self.found or found_any
        for key, path in walked:
            if key in self.walked:  # a mount made meanwhile: walk no further below it
                self.notes.append((tuple(os.path.relpath(path, self.walker.top).split(os.sep)), path,
                                   f"same directory as {self.walked[key]}, walked once"))
                donated = []
            self.walked.setdefault(key, path)
        return donated

    def finish(self) -> Iterator[Tuple[str, Optional[str]]]:
        """Tell what the walk left out, in its order; the symlinked files not looked at already."""
        for _, path, why in sorted(self.notes, key=lambda n: n[0]):
            self.note(path, why)
        w = self.walker
        w.tell = lambda key, path, why: self.note(path, why)
        if self.symlinked:
            for joined in self.reals:
                w.yielded.update(joined.split("\0") if joined else ())
        yield from self._kept(w.linked(sorted(self.symlinked, key=lambda s: s[0])))
        if not self.found:
            self.note(self.given, NO_PYTHON_FILES)
        _unshare()
