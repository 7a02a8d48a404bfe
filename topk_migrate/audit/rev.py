"""`--rev`: files read from a git commit (ls-tree, one cat-file --batch) without touching the work tree, the
candidates laid out in a temporary directory. The commit may be an attacker's: a path with a `..`, `.`, `.git`,
empty or absolute component or a backslash is refused (unsafe_path), and every file is created new, under the
temporary directory's real path, never through a symlink (_lay_out)."""
from __future__ import annotations

import errno
import os
import tempfile
from dataclasses import dataclass
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Tuple

from .. import project as project_mod
from ..config import dir_filters, kept
from ..discover import (
    SCAN_WINDOW,
    ListedTree,
    Prefilter,
    compile_patterns,
    declares_other_codec,
    iter_python_files,
)
from ..model import InputError
from .results import PROJECT_FILES, AuditError, Tally
from .scan import ScanFor, own_rules_hold

# -- git --rev --------------------------------------------------------------

# What one --rev run reads out of the repository, and lays out on disk, at most. git inflates what it
# is asked for, so a repository of a few hundred KB (one blob under many paths, deltas of one blob)
# can name far more bytes than it holds; past these bounds a file is one error line, not read (or not
# written). A file linked to another copy of the same blob counts in full: each copy is analysed.
REV_READ_LIMIT = 8 << 30
REV_LAYOUT_LIMIT = 1 << 30


def _rev_limits() -> Tuple[int, int]:
    """(bytes read, bytes laid out) one run allows: the constants, or more where TOPK_MIGRATE_MAX_BYTES
    was raised past what they hold of it."""
    from ..files import max_bytes  # noqa: PLC0415 - light: not for --help

    mb = max_bytes()
    return max(REV_READ_LIMIT, 64 * mb), max(REV_LAYOUT_LIMIT, 16 * mb)


def _git(args: List[str], cwd: str, stdin=None) -> bytes:
    """A git command's output (subprocesses.git: no transport, no lazy fetch, scrubbed environment, a
    time limit and bounded output); AuditError, one line, if it fails."""
    from ..subprocesses import GitStopped, git  # noqa: PLC0415 - light: not for --help

    try:
        r = git(args, cwd) if stdin is None else git(args, cwd, stdin=stdin)
    except OSError as e:
        raise AuditError(f"cannot run git: {e.strerror or e}") from None
    except GitStopped as e:  # a repository that blocks git (a FIFO its config includes) or floods it
        raise AuditError(f"{cwd}: {e}") from None
    if r.returncode != 0:
        msg = r.stderr.decode(errors="replace").strip().splitlines()
        raise AuditError(f"git {args[0]}: {msg[-1] if msg else 'failed'}")
    return r.stdout


def _is_project_file(path: str) -> bool:
    """Files the kernel gate and the config loader read besides the candidates."""
    name = path.rsplit("/", 1)[-1]
    if name in PROJECT_FILES or (name.startswith("requirements") and name.endswith((".txt", ".in"))):
        return True
    parts = path.split("/")
    return len(parts) >= 2 and parts[-2].endswith(".dist-info") and name in ("METADATA", "RECORD")


def _missing(top: str, commit: str) -> set:
    """The objects of `commit`'s tree that the repository lacks (a partial clone's blobs never fetched),
    found without fetching them (`--missing=print`): asked of cat-file, one would end it."""
    out = _git(["rev-list", "--objects", "--no-object-names", "--no-walk", "--missing=print", commit], top)
    return {line[1:].decode(errors="replace") for line in out.split(b"\n") if line.startswith(b"?")}


def _sizes(top: str, shas: List[str]) -> Dict[str, Tuple[str, int]]:
    """(type, size) of each object, through one `git cat-file --batch-check`: nothing is read yet."""
    if not shas:
        return {}
    with tempfile.TemporaryFile() as req:  # a file, not a pipe: no writer thread, no deadlock
        req.write("".join(s + "\n" for s in shas).encode())
        req.seek(0)
        lines = _git(["cat-file", "--batch-check"], top, stdin=req).splitlines()
    if len(lines) != len(shas):
        raise AuditError(f"git cat-file: {len(lines)} answers for {len(shas)} objects")
    out = {}
    for sha, line in zip(shas, lines):
        f = line.split()
        if len(f) == 3 and f[0].decode(errors="replace") == sha and f[2].isdigit():
            out[sha] = (f[1].decode(errors="replace"), int(f[2]))
        else:
            out[sha] = (f[-1].decode(errors="replace") if f else "missing", 0)
    return out


def _cat_blobs(top: str, reqs: List[Tuple[str, int, object]]) -> Iterable[object]:
    """For each (sha, size, scan), through one `git cat-file --batch`: the blob's bytes where scan is
    None (the caller has checked size against a cap), else whether the Prefilter `scan` finds a name
    in it, read a window at a time and never held whole. Only blobs _sizes found are asked for.
    Each read of an answer has git's time limit (subprocesses.GitStream): past it, one AuditError."""
    if not reqs:
        return
    from ..subprocesses import GitStopped, git_popen  # noqa: PLC0415 - light: not for --help

    with tempfile.TemporaryFile() as req:
        req.write("".join(s + "\n" for s, _, _ in reqs).encode())
        req.seek(0)
        try:
            out = git_popen(["cat-file", "--batch"], top, req)
        except OSError as e:
            raise AuditError(f"cannot run git: {e.strerror or e}") from None
        try:
            for sha, size, scan in reqs:
                line = out.readline(256)
                header = line.split()
                if header != [sha.encode(), b"blob", str(size).encode()]:
                    got = line.decode(errors="replace").strip() or "no answer"
                    raise AuditError(f"git cat-file: unexpected answer for {sha}: {got[:120]}")
                yield _read_exactly(out, size, sha) if scan is None else _scan_stream(out, size, scan, sha)
                if out.read(1) != b"\n":
                    raise AuditError(f"git cat-file: unexpected answer after {sha}")
        except GitStopped as e:
            raise AuditError(f"{top}: {e}") from None
        finally:
            out.close()


def _read_exactly(out, size: int, sha: str) -> bytes:
    data = out.read(size)
    if len(data) != size:
        raise AuditError(f"git cat-file: {sha} ended after {len(data)} of {size} bytes")
    return data


def _scan_stream(out, size: int, pf, sha: str) -> bool:
    """Whether `pf` finds a name in the next `size` bytes of `out`, all of which are consumed, a
    SCAN_WINDOW at a time (a name across two windows is still seen, and its codec is read in the first)."""
    found, tail, left, foreign = False, b"", size, None
    while left:
        chunk = out.read(min(left, SCAN_WINDOW))
        if not chunk:
            raise AuditError(f"git cat-file: {sha} ended after {size - left} of {size} bytes")
        left -= len(chunk)
        if not found:
            window = tail + chunk
            if foreign is None:
                foreign = declares_other_codec(window)
            found = pf.find(window, len(window), foreign)
            tail = window[len(window) - pf.carry:] if pf.carry else b""
    return found


@dataclass(frozen=True)
class RevLayout:
    """What lay_out_rev reads and where it writes: the files of commit `rev` under `paths`, less
    --exclude's patterns, laid out under `tmp`."""

    paths: Sequence[str]
    rev: str
    exclude: Sequence[str]
    tmp: str


def scan_rev(where: RevLayout, kernel, runner, tally, prog, scan: ScanFor) -> Tuple[str, str, str]:
    """List and prefilter (what `scan` keeps) the files of commit `rev`; lay candidates out under tmp and
    hand them to the workers. Returns (root, top, commit)."""
    root, top, commit, laid = lay_out_rev(where, tally, prog, scan)
    for dest in laid:  # only now: the gate may read one candidate (a vendored interface) for another
        runner.submit(dest, kernel, where.tmp, scan.prefilter)
    return root, top, commit


class _RevFiles:
    """What one run has read out of the revision and laid out: the bounds, and each blob written once."""

    def __init__(self, tmp, top, rev, tally, missing, sizes):
        self.tmp, self.top, self.rev, self.tally = tmp, top, rev, tally
        self.missing, self.sizes = missing, sizes
        self.read_limit, self.layout_limit = _rev_limits()
        self.read = self.laid = 0
        self.by_sha: Dict[str, str] = {}  # blob -> the first file laid out from it
        self.by_path: Dict[str, str] = {}  # path in the commit -> the file laid out
        self.failed: set = set()  # paths with their error line already

    def fail(self, paths: Sequence[str], why: str) -> None:
        for p in paths:
            self.failed.add(p)
            self.tally.errors.append((os.path.join(self.top, p), why))

    def size(self, sha: str, paths: Sequence[str]) -> Optional[int]:
        """The blob's size, or None with each path's error line (missing, or not a blob)."""
        kind, size = self.sizes.get(sha, ("missing", 0))
        if sha in self.missing or kind == "missing":
            self.fail(paths, "not in the repository (a partial clone's blob, never fetched: --rev fetches "
                             "nothing); skipped")
            return None
        if kind != "blob":
            self.fail(paths, f"object {sha} is a {kind}, not a blob; skipped")
            return None
        return size

    def may_read(self, size: int, paths: Sequence[str]) -> bool:
        if self.read + size > self.read_limit:
            self.fail(paths, f"not read: this run has read {self.read} bytes of {self.rev}'s files, and "
                             f"this one ({size} bytes) would pass the bound of {self.read_limit}; skipped")
            return False
        self.read += size
        return True

    def lay_out(self, path: str, sha: str, data: bytes) -> Optional[str]:
        if path in self.by_path:  # a project file that is also a candidate (setup.py): laid out once
            return self.by_path[path]
        if self.laid + len(data) > self.layout_limit:
            self.fail([path], f"not laid out: this run has laid out {self.laid} bytes of {self.rev}'s files, "
                              f"and this one ({len(data)} bytes) would pass the bound of {self.layout_limit}; skipped")
            return None
        dest = _lay_out(self.tmp, path, data, self.tally, self.top, self.by_sha.get(sha))
        if dest:
            self.laid += len(data)
            self.by_path[path] = dest
            self.by_sha.setdefault(sha, dest)
        return dest


def _by_blob(items: Iterable[Tuple[str, str]]) -> Dict[str, List[str]]:
    """{sha: its paths}, in the order the blobs first come."""
    out: Dict[str, List[str]] = {}
    for sha, path in items:
        out.setdefault(sha, []).append(path)
    return out


@dataclass(frozen=True)
class _Keep:
    """Which read blobs lay_out_rev lays out: `test` (keep), `scan` (the names a blob over the cap is
    scanned for; None: it may hold a call), `own_rules` (audit's: each by its own project's rules)."""

    test: Callable[[bytes], bool]
    scan: Optional[Prefilter]
    own_rules: bool


def _rev_keep(keep) -> _Keep:
    """lay_out_rev's `keep`: audit's ScanFor (its prefilter, each candidate by the rules of its own project
    where own_rules: own_rules_hold), or a test of the bytes as given (its `needles`, if any, for a blob
    over the cap)."""
    if isinstance(keep, ScanFor):
        return _Keep(keep.prefilter.matches, keep.prefilter, keep.own_rules)
    needles = getattr(keep, "needles", None)
    return _Keep(keep, Prefilter([bytes(n) for n in needles]) if needles else None, False)


def _rev_top(paths: Sequence[str]) -> str:
    """The top of the git repository holding the first path, asked from its nearest existing directory
    (the path may exist only in the commit)."""
    first = os.path.abspath(paths[0])
    start = first if os.path.isdir(first) else os.path.dirname(first)
    while not os.path.isdir(start):  # the path may exist only in that commit
        start = os.path.dirname(start)
    return os.path.realpath(_git(["rev-parse", "--show-toplevel"], start).decode().strip())


def _rev_commit(rev: str, top: str) -> str:
    """The commit `rev` names (a tag peeled; never read as an option), or the one-line AuditError."""
    try:
        return _git(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}"], top).decode().strip()
    except AuditError:
        raise AuditError(f"--rev {rev}: no such commit in {top}") from None


def _rev_rels(paths: Sequence[str], top: str) -> List[str]:
    """Each path relative to the repository's top ("" the top itself): a path outside it is refused."""
    rels = []
    for p in paths:
        a = os.path.realpath(p) if os.path.exists(p) else os.path.join(os.path.realpath(os.path.dirname(os.path.abspath(p))), os.path.basename(p))
        rel = os.path.relpath(a, top).replace(os.sep, "/")
        if rel == ".." or rel.startswith("../"):
            raise AuditError(f"{p}: outside the git repository at {top}")
        rels.append("" if rel == "." else rel)
    return rels


def _rev_entries(top: str, commit: str, rev: str, tally: Tally) -> List[Tuple[str, str, str]]:
    """The commit's blobs as (mode, sha, path); an unsafe path (an attacker's tree) is an error line,
    never laid out, never read."""
    listing = _git(["ls-tree", "-r", "-z", "--full-tree", commit], top).split(b"\0")
    entries = []  # (mode, sha, path)
    for item in listing:
        if item:
            meta, _, path = item.partition(b"\t")
            mode, kind, sha = meta.split()
            if kind == b"blob":
                path = path.decode("utf-8", "surrogateescape")
                why = unsafe_path(path)
                if why:  # an attacker's tree: never laid out, never read
                    tally.errors.append((top, f"unsafe path in {rev}: {path!r} {why}; skipped"))
                    continue
                entries.append((mode.decode(), sha.decode(), path))
    return entries


def _rev_tree(top: str, entries: Sequence[Tuple[str, str, str]], rev: str) -> ListedTree:
    """The commit's files as a tree the walker reads, at the work tree's place of them: a symlink is a path
    string in a commit, not a file to read (it makes its directory, and is nothing the walk yields); a path
    the commit does not hold is the error line `not in <rev>`."""
    return ListedTree(top, (p for mode, _, p in entries if mode != _SYMLINK),
                      (p for mode, _, p in entries if mode == _SYMLINK), missing=f"not in {rev}", max_depth=LAYOUT_DEPTH)


_SYMLINK = "120000"  # a tree entry's mode


def _rev_root(rels: Sequence[str], tree: ListedTree, top: str) -> str:
    """The directory the report is relative to: the one directory given, or what the paths have in common."""
    absd = [os.path.join(top, r) if r else top for r in rels]
    dirs = [tree.isdir(a) for a in absd]
    return absd[0] if len(rels) == 1 and dirs[0] else \
        os.path.commonpath([a if d else os.path.dirname(a) for a, d in zip(absd, dirs)])


def _rev_wanted(rels, tree: ListedTree, entries, exclude, top, tally) -> List[Tuple[str, str]]:
    """(sha, path) of each file of the commit under `rels` that the walk keeps, by the walker's own rules
    (discover.iter_python_files over the commit's tree, as on disk: a file named on the command line, else a
    .py file outside hidden directories that --exclude keeps; each once). Every file of a commit is tracked, so
    no ignore file leaves one out. A rel that names nothing in the commit is an error line. A file deeper
    than a layout may be (tree.beyond: never walked, which would cost its depth squared) is taken under the
    same rules, tested on its path alone; laying it out is then its error line (_lay_out), if it is kept."""
    sha: Dict[str, str] = {}
    for _, s, p in entries:
        sha.setdefault(p, s)  # a crafted tree's path twice: the first
    prefix = os.path.join(top, "")
    wanted = []
    for path, err in iter_python_files([os.path.join(top, r) if r else top for r in rels], exclude, source=tree):
        if err:
            tally.errors.append((path, err))
        else:
            rel = path[len(prefix):].replace(os.sep, "/")
            wanted.append((sha[rel], rel))
    return wanted + [(sha[p], p) for p in _deep_kept(rels, tree.beyond, exclude)]


def _deep_kept(rels: Sequence[str], deep: Sequence[str], exclude: Sequence[str]) -> List[str]:
    """Those of the files too deep to walk (and to lay out) that the walk would keep under a rel: a .py file
    outside hidden directories that --exclude keeps (its gitignore-style match of the whole path, as the walk's)."""
    if not deep:
        return []
    excl, out = compile_patterns(exclude), []
    for rel in dict.fromkeys(rels):
        for p in deep:
            below = p[len(rel) + 1:] if rel else p
            if rel and not p.startswith(rel + "/") or not p.endswith(".py"):
                continue
            if not any(c.startswith(".") for c in below.split("/")[:-1]) and not (excl is not None and excl.match_file(below)):
                out.append(p)
    return list(dict.fromkeys(out))


def _lay_out_project_files(files: _RevFiles, project: Sequence[Tuple[str, str]]) -> None:
    """Lay out the project files the gate and config read, each blob read once; one over the size they
    would read (project.PROJECT_FILE_LIMIT, a RECORD project.RECORD_LIMIT) is an error line, never read."""
    project_limit = project_mod.PROJECT_FILE_LIMIT
    record_limit = project_mod.RECORD_LIMIT  # a wheel's RECORD may hold more
    groups, reqs = _by_blob(project), []
    for sha, ps in groups.items():
        size = files.size(sha, ps)
        if size is None:
            continue
        for p in ps:
            cap = record_limit if p.endswith("/RECORD") else project_limit
            if size > cap:  # what the gate and the config would refuse to read: never read
                files.fail([p], f"file too large ({size} bytes > {cap}); skipped (a project file is read "
                                "up to that size)")
        ps[:] = [p for p in ps if p not in files.failed]
        if ps and files.may_read(size, ps):
            reqs.append((sha, size, None))
    for (sha, _, _), data in zip(reqs, _cat_blobs(files.top, reqs)):
        for path in groups[sha]:
            files.lay_out(path, sha, data)


def _rev_filtered(wanted: Sequence[Tuple[str, str]], rels: Sequence[str], tmp: str) -> List[Tuple[str, str]]:
    """The candidates less those the laid-out project files' [tool.topk-migrate] filters leave out, as on
    disk (their project files must be laid out first)."""
    try:
        filters = dir_filters(os.path.join(tmp, rel) if rel else tmp for rel in rels)
    except InputError as e:
        raise AuditError(str(e)) from None
    if filters:
        wanted = [(sha, path) for sha, path in wanted if kept(filters, os.path.join(tmp, path))]
    return wanted


def _too_large(size: int, limit: int) -> str:
    """A candidate's error line over TOPK_MIGRATE_MAX_BYTES, as on disk."""
    from ..files import MAX_BYTES_ENV  # noqa: PLC0415 - light: not for --help

    return ("file too large ({} bytes > %d); skipped (raise %s to process it)" % (limit, MAX_BYTES_ENV)).format(size)


def _candidate_reads(files: _RevFiles, wanted, scan: Optional[Prefilter], limit: int):
    """({sha: its paths}, the blobs to read as (sha, size, the scan for one over `limit`, else None)):
    a blob over it with no names to scan for may hold a call, so is the error line, never read."""
    groups, reqs = _by_blob((sha, path) for sha, path in wanted if path not in files.failed), []
    for sha, ps in groups.items():
        size = files.size(sha, ps)
        if size is None:
            continue
        if size > limit and scan is None:  # no names to look for: it may hold a call
            files.fail(ps, _too_large(size, limit))
        elif files.may_read(size, ps):
            reqs.append((sha, size, scan if size > limit else None))
    return groups, reqs


def _lay_out_kept(files: _RevFiles, sha: str, paths: Sequence[str], data: bytes, own_rules: bool) -> List[str]:
    """Lay out a kept blob under each of its paths (by audit's keep, only where its own project's rules
    hold); the files laid out."""
    laid = []
    for path in paths:
        if own_rules and not own_rules_hold(os.path.join(files.tmp, path), data):
            continue  # its project's project files are laid out already: config_for reads them
        dest = files.lay_out(path, sha, data)
        if dest:
            laid.append(dest)
    return laid


def _lay_out_candidates(files: _RevFiles, wanted, keep: _Keep, prog) -> List[str]:
    """Read the candidates' blobs in one cat-file and lay out those keep holds for; one over the cap is
    only scanned, and the error line if it may hold a call, as on disk."""
    from ..files import max_bytes  # noqa: PLC0415 - light: not for --help

    limit = max_bytes()
    groups, reqs = _candidate_reads(files, wanted, keep.scan, limit)
    laid: List[str] = []
    done = 0
    for (sha, size, scanned), got in zip(reqs, _cat_blobs(files.top, reqs)):
        ps = groups[sha]
        prog.bar(done, len(wanted), f", {len(laid)} to analyse")
        done += len(ps)
        if scanned is not None:  # over the cap: an error line if it may hold a call, as on disk
            if got:
                files.fail(ps, _too_large(size, limit))
        elif keep.test(got):
            laid += _lay_out_kept(files, sha, ps, got, keep.own_rules)
    return laid


def lay_out_rev(where: RevLayout, tally, prog, keep) -> Tuple[str, str, str, List[str]]:
    """The files of commit `rev` under `paths` that `keep` keeps (audit's ScanFor, or a test of the bytes),
    and the project files the gate and config read, laid out under tmp (bump --rev reads them too).
    Returns (root, top, commit, the laid-out candidates).

    Sizes come first (cat-file --batch-check), and nothing over its cap is read. A candidate over
    TOPK_MIGRATE_MAX_BYTES is scanned a window at a time for the names keep looks for (a ScanFor's
    prefilter's; a keep with a `needles` attribute, those; any other keep: every such file) and is
    the usual "file too large" error line if one is there, as on disk. A project file over
    project.PROJECT_FILE_LIMIT (a RECORD: project.RECORD_LIMIT) is an error line. A blob the
    repository lacks (a partial clone) is an error line, never fetched. Each blob is written once
    (the same blob under other paths is hard-linked), and a run reads and lays out at most
    _rev_limits() bytes."""
    paths, rev, exclude, tmp = where.paths, where.rev, where.exclude, where.tmp
    keeping = _rev_keep(keep)
    top = _rev_top(paths)
    commit = _rev_commit(rev, top)
    rels = _rev_rels(paths, top)
    entries = _rev_entries(top, commit, rev, tally)
    tree = _rev_tree(top, entries, rev)
    root = _rev_root(rels, tree, top)
    project = [(sha, path) for _, sha, path in entries if _is_project_file(path)]
    wanted = _rev_wanted(rels, tree, entries, exclude, top, tally)
    missing = _missing(top, commit) if project or wanted else set()
    shas = [s for s in dict.fromkeys(s for s, _ in project + wanted) if s not in missing]
    files = _RevFiles(tmp, top, rev, tally, missing, _sizes(top, shas))
    _lay_out_project_files(files, project)
    os.mkdir(os.path.join(tmp, ".git"))  # the gate and the config stop their upward search here
    wanted = _rev_filtered(wanted, rels, tmp)
    tally.files += len(wanted)
    laid = _lay_out_candidates(files, wanted, keeping, prog)
    tally.candidates = len(laid)
    return root, top, commit, laid


def unsafe_path(path: str) -> Optional[str]:
    """Why a path read from a commit's tree must not be laid out on disk, or None.

    Git stores tree entry names as given: a crafted commit (`git mktree`) can hold
    `..`, `.`, an empty name, backslashes or `.git`, which joined to a directory
    would reach outside it or into a repository's control files."""
    if not path or path.startswith("/"):
        return "is empty or absolute"
    if "\\" in path:
        return "has a backslash"
    for part in path.split("/"):
        if part in ("", ".", ".."):
            return f"has a {part!r} component"
        if part.lower() == ".git":
            return "has a '.git' component"
    return None


# Directories deep a laid-out file may be. Git sets no limit on a tree's depth, but what removes the
# layout (shutil.rmtree) recurses once per level; no project nests near this.
LAYOUT_DEPTH = 256


def _at_calls() -> bool:
    return {os.open, os.mkdir, os.link} <= os.supports_dir_fd


def _enter(inside: str, dirs: Sequence[str]) -> Optional[int]:
    """An fd of the directory inside/dirs..., each made (0o700) and entered one component at a time,
    never through a symlink: work linear in the depth, where a realpath per file is quadratic in it,
    and no recursion (os.makedirs recurses once per missing level). None where there are no *at()
    calls (Windows): there the directories are made by path and where they resolve is checked."""
    if not _at_calls():
        d = os.path.join(inside, *dirs)
        os.makedirs(d, exist_ok=True)
        real = os.path.realpath(d)
        if real != inside and not real.startswith(inside + os.sep):
            raise OSError(errno.EPERM, "would be written outside the temporary tree")
        return None
    fd = os.open(inside, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        for name in dirs:
            try:
                os.mkdir(name, 0o700, dir_fd=fd)
            except FileExistsError:
                pass
            sub = os.open(name, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0), dir_fd=fd)
            os.close(fd)
            fd = sub
    except BaseException:
        os.close(fd)
        raise
    return fd


def _lay_out(inside: str, path: str, data: bytes, tally: Tally, top: str, same: Optional[str] = None) -> Optional[str]:
    """Write a blob under the temporary directory `inside` (a real path); None, with an error, if refused.

    unsafe_path() has vetted the name already; this is the second lock: every directory on the way
    is entered from `inside` one component at a time, never through a symlink (none are laid out),
    and the file is created new, never over another. `same`: a file laid out already from the same
    blob: hard-linked, not written again (written where the link is refused)."""
    parts = path.split("/")
    dest = os.path.join(inside, *parts)
    if len(parts) > LAYOUT_DEPTH + 1 or len(os.fsencode(dest)) >= 4096:
        why = f"{len(parts) - 1} directories deep (at most {LAYOUT_DEPTH})" if len(parts) > LAYOUT_DEPTH + 1 \
            else "file name too long"
        tally.errors.append((os.path.join(top, path), f"cannot lay out from the revision: {why}"))
        return None
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    dfd = None
    try:
        dfd = _enter(inside, parts[:-1])
        if same is not None:
            try:
                if dfd is None:
                    os.link(same, dest)
                else:
                    os.link(same, parts[-1], dst_dir_fd=dfd, follow_symlinks=False)
                return dest
            except FileExistsError:
                raise
            except OSError:
                pass  # no hard links here (or too many to one file): a copy
        fd = os.open(dest, flags, 0o600) if dfd is None else os.open(parts[-1], flags, 0o600, dir_fd=dfd)
    except FileExistsError:
        return dest  # the same path twice in a crafted tree: laid out once
    except OSError as e:
        tally.errors.append((os.path.join(top, path), f"cannot lay out from the revision: {(e.strerror or str(e)).lower()}"))
        return None
    finally:
        if dfd is not None:
            os.close(dfd)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
    except OSError as e:  # a full disk: this file's error line, and no half-written file left to analyse
        try:
            os.unlink(dest)
        except OSError:
            pass
        tally.errors.append((os.path.join(top, path), f"cannot lay out from the revision: {(e.strerror or str(e)).lower()}"))
        return None
    return dest
