"""gitignore-style patterns (.gitignore, --exclude, configuration), matched in time linear in the path's length
whatever a fork's ignore files hold, and the ignore files that apply where a walk is."""
from __future__ import annotations

import os
import re
from typing import Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

from .reads import Note, read_project_text

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


def unshare() -> None:
    """Forget what share() made shared (a split walk's end, or an earlier run's that did not finish)."""
    for spec in _SHARED:
        spec.shared = None
    _SHARED.clear()


def share(specs: List["PatternSet"]) -> None:
    """Make `specs` what every process of a split walk holds (before the fork): each then pickles as its place."""
    unshare()
    _SHARED[:] = specs
    for i, spec in enumerate(_SHARED):
        spec.shared = i


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


def outer_ignore_files(root: str) -> List[Tuple[str, str]]:
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


def git_top(real: str) -> Tuple[Optional[str], Tuple[str, ...]]:
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
