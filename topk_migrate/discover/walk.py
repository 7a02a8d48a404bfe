"""The walk over a tree: the Python files a run looks at, never leaving the directory it was given."""
from __future__ import annotations

import functools
import os
import re
import stat
from dataclasses import dataclass
from typing import Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

from . import ignore
from .ignore import Ignore, PatternSet, compile_patterns, git_top, outer_ignore_files, share, unshare
from .reads import Note
from .source import DISK, DiskTree, ListedTree

# (ignore.PATTERNS is read through the module: the one bound the walk and the ignore files share)


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
    from ..subprocesses import GitStopped, git  # noqa: PLC0415 - self-contained: files, model, discover read alone (test_unreadable_file)

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
        from ..run_context import per_run  # noqa: PLC0415 - self-contained: files, model, discover read alone (test_unreadable_file)

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
    follow_links: bool = False, note: Optional[Note] = None, source: Union[DiskTree, ListedTree] = DISK,
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

    source: the tree walked (source.py): the file system, or a listed tree (a git commit's files, read
    at the place of a directory: audit --rev), walked by the same rules.
    """
    note = note or (lambda path, why: None)
    excl = compile_patterns(exclude)
    yielded: set = set()  # real paths: a file reached twice is looked at once
    for p in paths:
        if source.isdir(p):
            found = False
            w = _Walker(p, _WalkOptions(excl, gitignore, follow_links, note), yielded, source)
            for got in w.whole():
                found = True
                yield got
            inside = os.path.join(source.realpath(p), "")
            if not found and not any(r.startswith(inside) for r in yielded):  # (not only given twice)
                note(p, NO_PYTHON_FILES)  # a wrong path in CI must not pass as "0 file(s)" unnoticed
        elif source.isfile(p):
            real = source.realpath(p)
            if real not in yielded:
                yielded.add(real)
                yield p, None
        elif os.path.abspath(p) not in yielded:  # a bad path named twice is one error
            yielded.add(os.path.abspath(p))
            why = source.why_unreadable(p)
            if why is not None:  # (None: a listed tree's symlink, nothing to read)
                yield p, why


@dataclass(frozen=True)
class _WalkOptions:
    """A walk's options: --exclude's compiled patterns, whether ignore files count, whether symlinked
    directories are followed, and note (told what the walk leaves out)."""

    excl: Optional[PatternSet]
    gitignore: bool
    follow_links: bool
    note: Note


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

    def __init__(self, top: str, options: _WalkOptions, yielded: set, source: Union[DiskTree, ListedTree] = DISK):
        excl, gitignore, follow_links, note = options.excl, options.gitignore, options.follow_links, options.note
        self.top = top = os.path.normpath(top)
        self.source = source
        gitignore = gitignore and source.ignore_files  # (a listed tree: a commit's files, every one tracked)
        atop, self.real_top = os.path.abspath(top), source.realpath(top)
        self.excl, self.gitignore, self.follow_links, self.yielded = excl, gitignore, follow_links, yielded
        self.tell: Callable[[tuple, str, str], None] = lambda key, path, why: note(path, why)
        self.walked: dict = {}  # (st_dev, st_ino) -> path: each directory once, so never into a loop
        self.symlinked: List[Tuple[tuple, str, str]] = []  # (key, path, real): looked at last
        self.donating, self.donated, self.donate_any = False, [], False
        # A directory given is walked even where git would ignore it (or one above it): as in ruff
        # and black, paths given are always processed; ignore rules apply to what the walk finds.
        ig = Ignore()
        for a, f in outer_ignore_files(atop) if gitignore else ():
            ig = ig.with_file(f, os.path.relpath(atop, a).split(os.sep), 0, note)
        states = [_after(spec, lead) for lead, _, spec in ig.specs]  # per spec: its `**` patterns' states here
        # a seed: (path, real path, components below top, ignore rules, their states, exclude's states)
        self.root = (top, self.real_top, (), ig, states, excl.start() if excl is not None else ())
        # where git tracks files: the work tree and top's place in it (a tracked file an ignore rule matches
        # is walked all the same: Tracked)
        self.git_top, self.git_lead = git_top(self.real_top) if gitignore else (None, ())

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
            key = self.source.dir_key(d)
        except OSError:
            return self.source.why_unreadable(d)
        if key in self.walked:
            self.tell(names, d, f"same directory as {self.walked[key]}, walked once")
            return None
        self.walked[key] = d
        try:
            entries = self.source.entries(d)
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
                real = self.source.realpath(e.path)
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
                    yield e.path, self.source.why_unreadable(e.path)
                elif link:
                    self.symlinked.append((names + (e.name,), e.path, real))
                elif real not in yielded:
                    yielded.add(real)
                    yield e.path, None

    def whole(self) -> Iterator[Tuple[str, Optional[str]]]:
        """Walk the directory given here, whole."""
        yield from self.walk([self.root])
        yield from self.linked(self.symlinked)

    def linked(self, symlinked: Iterable[Tuple[tuple, str, str]]) -> Iterator[Tuple[str, Optional[str]]]:
        """The symlinked files, in the walk's order: each whose target was not looked at already."""
        for key, path, real in symlinked:
            if real in self.yielded:
                self.tell(key, path, f"symlink to {real}, which is looked at once")
            else:
                self.yielded.add(real)
                yield path, None


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
        self.walker = w = _Walker(given, _WalkOptions(compile_patterns(exclude), gitignore, False, note), set())
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
        while seeds and len(seeds) < ways and _patterns_held(seeds) <= ignore.PATTERNS:
            w.donated, left = [], seeds[::-1]
            while left and _patterns_held(w.donated) <= ignore.PATTERNS:  # each directory listed adds its ignore file
                files += self._kept(w.walk([left.pop()]))
            seeds = w.donated + left[::-1]  # (any order: parts share no directory, notes are sorted)
        self.seeds = seeds
        share(_distinct_specs([self.walker.root, *seeds]))
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
        unshare()
