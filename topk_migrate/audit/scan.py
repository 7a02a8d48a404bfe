"""The scanners: processes that read each file a window at a time and keep it only if its bytes may hold a
kernel call; one directory given is walked by the scanners themselves, in parts (discover.SplitWalk)."""
from __future__ import annotations

import multiprocessing
import os
import sys
from collections import deque
from dataclasses import dataclass
from functools import partial
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from ..config import config_for, project_files, project_filter
from ..discover import (
    SCAN_WINDOW,
    Prefilter,
    SplitWalk,
    prefilter_for,
)
from ..model import InputError
from ..progress import Progress
from .pool import Runner, classify_without_engine, import_for_classify, own_group
from .results import AuditError, Tally


@dataclass(frozen=True)
class WalkOptions:
    """What a scan walks, and how: the paths, --exclude's patterns, whether ignore files count, whether
    symlinks are followed, and note (told what the walk leaves out): as config.project_files."""

    paths: Sequence[str]
    exclude: Sequence[str] = ()
    gitignore: bool = True
    follow_links: bool = False
    note: object = None


@dataclass(frozen=True)
class RunState:
    """A scan's share of the run: its processes (`jobs`), the tally it counts into, its progress line."""

    jobs: int
    tally: Tally
    prog: Progress


@dataclass(frozen=True)
class ScanFor:
    """What a scan keeps, handed down to every process that reads files: a file whose bytes `prefilter`
    finds a name in; with own_rules (audit's), only for a rule the file's own project runs (own_rules_hold).
    Bump's scan looks for its releases' names alone: ScanFor(Prefilter(needles))."""

    prefilter: Prefilter
    own_rules: bool = False

    def keeps(self, path: str, buf: bytearray) -> bool:
        """Whether the file at `path` is a candidate (one that cannot be read is: the engine words why)."""
        try:
            return self.prefilter.matches_file(path, buf) and (not self.own_rules or own_rules_hold(path, buf=buf))
        except OSError:
            return True


def rules_scan(paths: Sequence[str]) -> ScanFor:
    """What audit's scan looks for: the names of every site rule. Which rules a file is read for is its own
    project's choice ([tool.topk-migrate] enable, where the file lies: own_rules_hold), as in check, never
    that of the directory a walk starts from (`audit .` above a `python/pyproject.toml` that enables
    decode-topk-length still reads its files for that rule)."""
    return ScanFor(prefilter_for(everything=True), own_rules=True)


def own_rules_hold(path: str, data: Optional[bytes] = None, buf: Optional[bytearray] = None) -> bool:
    """Does the file at `path` (its bytes `data`, or read a window at a time into `buf`), which holds a name
    some site rule looks for, hold one of a rule its own project runs? What api.process_file asks before it
    parses: the rules on by default, and those the [tool.topk-migrate] of the file's project enables. A
    configuration that cannot be read: yes (the engine reports it, one line)."""
    def holds(pf) -> bool:
        return pf.matches(data) if data is not None else pf.matches_file(path, buf)

    try:
        if holds(prefilter_for(())):
            return True
        enable = config_for(os.path.dirname(os.path.abspath(path))).enable
    except InputError:
        return True
    except OSError:
        return True  # the engine words why it cannot be read
    return bool(enable) and holds(prefilter_for(tuple(sorted(enable))))


def scan_into_runner(walk: WalkOptions, kernel, runner: Runner, tally: Tally, prog: Progress, *,
                     scan: ScanFor) -> None:
    """Classify each candidate where it is found if no LibCST is needed; hand the others to the runner
    as soon as they come back, so parsing starts while the scan goes on. Both read a file over the size
    bound with `scan`'s prefilter."""
    pf = scan.prefilter
    scan_disk(walk, RunState(runner.jobs, tally, prog), lambda path: runner.submit(path, kernel, None, pf),
              classify=partial(classify_without_engine, kernel=kernel, prefilter=pf),
              classified=runner.done.append, scan=scan)


def scan_disk(walk: WalkOptions, state: RunState, take_one, classify=None, classified=None, *,
              scan: ScanFor) -> None:
    """Walk, read and prefilter (in `jobs` scanner processes; what `scan` keeps), calling take_one(path)
    for each candidate as it comes back. The files are
    config.project_files', as every command reads them. One directory given is walked by the
    scanners themselves, in parts (discover.SplitWalk); otherwise this process walks and hands them
    a chunk of paths at a time. classify(path), if given, runs on each candidate where it was read:
    what it answers goes to classified(answer), a candidate it answers None for to take_one."""
    paths, exclude, gitignore, follow_links, note = walk.paths, walk.exclude, walk.gitignore, walk.follow_links, walk.note
    jobs, tally, prog = state.jobs, state.tally, state.prog
    chunk: List[str] = []

    def take(candidates: List[Tuple[str, object]]) -> None:
        for path, answer in candidates:
            tally.candidates += 1
            if answer is None:
                take_one(path)
            else:
                classified(answer)

    def feed(files: Iterable[Tuple[str, Optional[str]]]) -> None:
        nonlocal chunk
        for path, err in files:
            tally.files += 1
            if err:
                tally.errors.append((path, err))
                continue
            chunk.append(path)
            if len(chunk) == SCAN_CHUNK:
                take(scanners.scan(chunk))
                chunk = []
                prog.show(f"{tally.files} files scanned, {tally.candidates} to analyse")
        take(scanners.scan(chunk))
        chunk = []

    try:
        plan = SplitWalk.plan(paths, exclude, gitignore, follow_links, note, project_filter) if _forks_scanners(jobs) else None
        first = plan.start(2 * jobs) if plan is not None else []  # before the fork: see SplitWalk.start
        scanners = _Scanners(jobs, scan, classify, plan)
        try:
            if plan is None:
                feed(project_files(paths, exclude, gitignore, follow_links, note))
            else:
                feed(first)
                _walk_split(plan, scanners, state, feed, take, classify is not None)
            take(scanners.drain())
        finally:
            scanners.close()
    except InputError as e:  # a directory's [tool.topk-migrate]
        raise AuditError(str(e)) from None


def _walk_split(plan: SplitWalk, scanners: "_Scanners", state: RunState, feed, take, classify: bool) -> None:
    """The scanners walk the parts; the seeds a part donates go to the next idle one, a share of
    what is left at a time (fewer messages than one a seed, and the last parts still small). The
    candidates a part finds are classified by the next idle scanners, not by the one that walked it:
    one directory can hold several of a tree's few candidates, each the longest work of a run."""
    jobs, tally, prog = state.jobs, state.tally, state.prog

    def share(queue: deque) -> list:
        return [queue.popleft() for _ in range(max(1, len(queue) // (2 * jobs)))]

    seeds, to_classify = deque(plan.seeds), deque()
    while seeds or to_classify or scanners.busy:
        while (seeds or to_classify) and (scanners.idle or not scanners.busy):
            take(scanners.scan(share(to_classify)) if to_classify else scanners.walk(share(seeds)))
        if scanners.busy:
            take(scanners.wait())
        for files, errors, result, candidates in scanners.walked():
            tally.files += files
            tally.errors += errors
            seeds.extendleft(reversed(plan.absorb(result)))  # a big subtree's rest first: it is what a run waits for
            if classify:
                to_classify.extend(path for path, _ in candidates)
            else:
                take(candidates)
        prog.show(f"{tally.files} files scanned, {tally.candidates} to analyse")
    feed(plan.finish())


SCAN_CHUNK = 128  # paths per message to a scanner: few messages (fewer cost less CPU on 2 cores), the work still spread
PART_SHARE = 256  # files a scanner walks of a part before it donates the directories it has not entered


def _scan_chunk(paths: List[str], buf: bytearray, scan: ScanFor, classify=None) -> List[Tuple[str, object]]:
    """(path, classify(path) or None) for those of `paths` that `scan` keeps (ScanFor.keeps)."""
    return [(path, classify(path) if classify else None) for path in paths if scan.keeps(path, buf)]


def _walk_part(plan: SplitWalk, seeds: List[tuple], buf: bytearray, scan: ScanFor, share=float("inf")) -> tuple:
    """Walk a part of a split walk and prefilter its files: (files, errors, the rest of the part's
    result for plan.absorb, the candidates, not classified)."""
    w = plan.part()
    paths, errors, n = [], [], 0
    for path, err in plan.files(w, seeds, share):
        n += 1
        if err:
            errors.append((path, err))
        else:
            paths.append(path)
    return n, errors, plan.result(w), _scan_chunk(paths, buf, scan)


def _scanner(conn, main: int, others, scan: ScanFor, classify, plan) -> None:
    """A scanning process: chunks of paths (or parts of a split walk) in, the candidates among them
    out (with classify's answers). It never imports LibCST, dies with the main process
    (PR_SET_PDEATHSIG, or the pipe's end), and holds one SCAN_WINDOW buffer whatever it reads."""
    from ..guard import exit_with_parent  # noqa: PLC0415 - light: not for --help

    exit_with_parent(main)
    for c in others:  # the main process's ends of the other scanners' pipes
        c.close()
    buf = bytearray(SCAN_WINDOW)
    while True:
        try:
            work = conn.recv()
        except (EOFError, OSError):
            return
        if work is None:
            return
        if isinstance(work, tuple):  # ("walk", seeds)
            conn.send(([], _walk_part(plan, work[1], buf, scan, PART_SHARE)))
        else:
            conn.send((_scan_chunk(work, buf, scan, classify), None))


def _forks_scanners(jobs: int) -> bool:
    """Whether a run with `jobs` has scanner processes (forked: Linux only)."""
    return jobs > 1 and sys.platform == "linux"


class _Scanners:
    """Processes that read and prefilter (and walk, with a split walk) while this one goes on; with
    none (-j 1), the scan is done here.

    Each scanner holds at most one message at a time (so neither side can block the other on a full
    pipe). One that dies has its work done here instead, without classify (which parses, and might
    be what it died of): its candidates go to the engine's workers, where a file that kills its
    process costs one error line. They are forked before any thread exists in this process (the
    runner's queue thread starts with the first candidate), each in its own process group so Ctrl-C
    reaches only this process, which ends them (close). With none, classify runs here."""

    def __init__(self, jobs: int, scan: ScanFor, classify=None, plan: Optional[SplitWalk] = None):
        self.buf = bytearray(SCAN_WINDOW)
        self.scan_for = scan
        self.plan = plan
        self.idle: List[tuple] = []  # (process, connection)
        self.busy: Dict[object, Tuple[tuple, object]] = {}  # connection -> (scanner, work it holds)
        self.parts: List[tuple] = []  # walked parts' (files, errors, result, candidates), not yet taken
        self.here = classify  # what work done here is classified with
        if not _forks_scanners(jobs):
            return
        self.here = None
        if classify is not None:
            import_for_classify()  # once, before forking (with no scanner, classify imports what it needs)
        ctx = multiprocessing.get_context("fork")
        for _ in range(jobs):
            mine, theirs = ctx.Pipe()
            proc = ctx.Process(target=_scanner, args=(theirs, os.getpid(), [c for _, c in self.idle], scan, classify, plan),
                               daemon=True)
            proc.start()
            own_group(proc.pid)
            theirs.close()
            self.idle.append((proc, mine))

    def scan(self, chunk: List[str]) -> List[Tuple[str, object]]:
        """Hand `chunk` to a scanner (waiting for one if all are busy); the candidates that came back meanwhile."""
        return self._hand(chunk) if chunk else []

    def walk(self, seeds: List[tuple]) -> List[Tuple[str, object]]:
        """Hand a part of the split walk to a scanner, as scan(); its result comes from walked()."""
        return self._hand(("walk", seeds))

    def walked(self) -> List[tuple]:
        parts, self.parts = self.parts, []
        return parts

    def _hand(self, work) -> List[Tuple[str, object]]:
        got: List[Tuple[str, object]] = []
        while not self.idle and self.busy:
            got += self.wait()
        if not self.idle:  # none left (or none at all): do it here
            return got + self._here(work, self.here)
        proc, conn = self.idle.pop()
        try:
            conn.send(work)
        except OSError:  # it died; its pipe is gone
            self._drop((proc, conn))
            return got + self._here(work)
        self.busy[conn] = ((proc, conn), work)
        return got

    def _here(self, work, classify=None) -> List[Tuple[str, object]]:
        if not isinstance(work, tuple):
            return _scan_chunk(work, self.buf, self.scan_for, classify)
        self.parts.append(_walk_part(self.plan, work[1], self.buf, self.scan_for))
        return []

    def drain(self) -> List[Tuple[str, object]]:
        got: List[Tuple[str, object]] = []
        while self.busy:
            got += self.wait()
        return got

    def wait(self) -> List[Tuple[str, object]]:
        """The candidates of the scanners that answer next (at least one)."""
        from multiprocessing.connection import wait  # noqa: PLC0415 - light: not for --help

        got: List[Tuple[str, object]] = []
        sentinels = {s[0].sentinel: conn for conn, (s, _) in self.busy.items()}
        for ready in wait(list(self.busy) + list(sentinels)):
            conn = sentinels.get(ready, ready)
            if conn not in self.busy:
                continue  # both its pipe and its sentinel were ready
            scanner, work = self.busy.pop(conn)
            try:
                found, part = conn.recv()
            except (EOFError, OSError):  # it died on this work: do it here
                self._drop(scanner)
                got += self._here(work)
                continue
            self.idle.append(scanner)
            got += found
            if part is not None:
                self.parts.append(part)
        return got

    def _drop(self, scanner: tuple) -> None:
        scanner[1].close()
        scanner[0].kill()
        scanner[0].join()

    def close(self) -> None:
        for proc, conn in self.idle + [s for s, _ in self.busy.values()]:
            try:
                conn.send(None) if proc.is_alive() else None
            except OSError:
                pass
            conn.close()
        for proc, _ in self.idle + [s for s, _ in self.busy.values()]:
            proc.join(1)
            if proc.is_alive():
                proc.kill()
                proc.join()
        self.idle, self.busy = [], {}
