"""`topk-migrate audit`: classify every kernel call site of a whole tree, fast.

A tree of tens of thousands of files holds a handful of calls, so the work is
arranged around not parsing: scanner processes read each file a window at a time
and keep it only if its bytes contain a kernel name (discover.file_may_hold_site):
memory stays flat, and no list of contents is held. One directory given is walked
by the scanners themselves, in parts (discover.SplitWalk); otherwise this process
lists the files (honouring .gitignore and --exclude) and hands them over a chunk
at a time. Scanners never import the engine. The candidates go, as soon as they come
back, to the engine, each narrowed first to what the engine reads of it
(narrow.py), in worker processes: at the first candidate one process (the
zygote) starts importing LibCST and forks the workers from itself, while the scan
goes on; a worker that dies costs the file it held (one error line) and is
replaced; a scanner that dies has its chunk scanned here. This process never
imports libcst or torch. With -j 1 all of it runs in this one process.

With --rev, files are read from a git commit (ls-tree + one cat-file --batch)
without touching the work tree; the candidates and the files the kernel gate and
config read (pyproject.toml, setup.cfg, setup.py, requirements*, dist-info
METADATA/RECORD) are laid out in a temporary directory and analysed there. The
commit may be an attacker's: a path with a `..`, `.`, `.git`, empty or absolute
component or a backslash is refused (unsafe_path), and every file is created new,
under the temporary directory's real path, never through a symlink (_lay_out).
"""
from __future__ import annotations

import errno
import multiprocessing
import os
import shutil
import signal
import sys
import tempfile
import time
from dataclasses import dataclass, field, replace
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Tuple

import click

from . import project as project_mod
from .config import config_for, dir_filters, kept, project_files, project_filter
from .discover import (
    SCAN_WINDOW,
    Prefilter,
    SplitWalk,
    compile_patterns,
    declares_other_codec,
    file_may_hold_site,
    may_hold_site,
    prefilter,
    prefilter_for,
    scanning_for,
)
from .model import CHECK_STATUSES, InputError, Site, Status, exit_code, internal_error
from .options import (
    follow_links_option,
    kernel_option,
    new_since_option,
    output_option,
    skipped_note,
    statistics_option,
    validate_kernel,
    verbose_option,
)
from .progress import Progress  # noqa: F401  (also audit.Progress, as bump and the tests name it)
from .run_context import in_run

FORMATS = ("text", "json", "sarif", "github")
PROJECT_FILES = ("pyproject.toml", "setup.cfg", "setup.py")


class AuditError(Exception):
    """The run as a whole cannot go on (bad --rev, not a git repo...): exit 2 with one line."""


@dataclass
class AuditResult:
    sites: List[Site]
    errors: List[Tuple[str, str]]  # (path, one-line error)
    summary: dict

    def exit_code(self) -> int:
        """As in check: 0 nothing left to do, 1 sites remain, 2 errors."""
        return exit_code(self.sites, bool(self.errors), (Status.FIXABLE, Status.MANUAL))


# -- the engine, run in workers ------------------------------------------------


def _warm() -> None:
    """Import the engine (LibCST), and what it imports on its first file, in the zygote: once,
    not again in each worker it forks."""
    import libcst.native  # noqa: F401
    import packaging.requirements  # noqa: F401
    import packaging.tags  # noqa: F401

    from . import api, files, guard, kernels, memory, narrow, project, rules  # noqa: F401

    for r in rules.enabled():
        if r.has_sites:
            rules.load(r.id)


def analyse(path: str, kernel: Optional[str], cwd: Optional[str] = None) -> Tuple[str, List[Site], Optional[str]]:
    """(path, sites, error line) of one candidate file; never raises (it runs in a worker)."""
    from . import narrow
    from .api import process_file

    back = os.getcwd() if cwd else None
    try:
        if cwd:
            os.chdir(cwd)  # --rev: relative paths in reasons come out repo-relative
        out = process_file(path, kernel, narrowed=narrow.enabled())
        return path, out.sites, out.error
    finally:
        if back:
            os.chdir(back)


def classify_without_engine(path: str, kernel: Optional[str]) -> Optional[Tuple[str, List[Site], Optional[str]]]:
    """analyse()'s answer where it needs no LibCST (the file holds no call, cannot be read, or the
    rules' quick classifiers answer for it); None where it does. Run where the file is found."""
    from . import narrow
    from .api import process_file

    out = process_file(path, kernel, narrowed=narrow.enabled(), engine=False)
    return None if out.needs_engine else (path, out.sites, out.error)


def _import_for_classify() -> None:
    """What classify_without_engine imports, imported in this process before the scanners are forked,
    not again in each of them (kernels.py too: the vendored interfaces a tree with kernel calls usually
    holds ask the kernel gate, and a scanner importing it on the last candidate found would hold up the
    end of the run)."""
    import importlib

    from . import api, config, files, guard, kernels, memory, narrow, rules  # noqa: F401

    for s in rules.enabled():
        if s.quick:
            importlib.import_module(f"{s.module}.{s.quick}")


def _serve(task, tasks, results, main: int, zygote: int) -> None:
    import queue

    from .guard import exit_with_parent

    exit_with_parent(zygote)
    send, lock = results
    while True:
        try:
            job = tasks.get(timeout=1)
        except queue.Empty:
            if _alive(main):
                continue
            return  # the main process was killed outright: do not linger
        if job is None:
            return
        i, args = job
        with lock:  # says which file this worker holds, should it die on it
            send.send(("start", os.getpid(), i))
        out = task(*args)
        with lock:  # straight into the pipe: a result is never lost in a buffer if we die next
            send.send(("done", os.getpid(), i, out))


def _zygote(  # noqa: PLR0913  (a process target: the queues and pipe it starts with)
        ctx, task, tasks, results, recv, workers: int, main: int) -> None:
    """Import the engine once, then fork the workers from this warm process and watch them:
    one that dies (a native crash, the OOM killer) is reported with the file it held and
    replaced, so the run goes on.

    The workers form a process group of their own: Ctrl-C reaches only the main
    process, which ends the whole group (see Runner.close). Each process here dies with
    its parent (PR_SET_PDEATHSIG, and polling where that is missing), and none holds the
    read end of the result pipe: if the main process is gone, a write fails instead of
    blocking forever. What remains: a worker killed while it holds a queue's lock (inside
    get or send, not while analysing) leaves that lock taken, and the run waits."""
    from multiprocessing.connection import wait

    from .guard import exit_with_parent

    exit_with_parent(main)
    recv.close()
    _own_group(os.getpid())
    _warm()
    send, lock = results
    kids: Dict[int, "multiprocessing.process.BaseProcess"] = {}

    def spawn() -> None:
        k = ctx.Process(target=_serve, args=(task, tasks, results, main, os.getpid()))
        k.start()
        kids[k.sentinel] = k

    for _ in range(workers):
        spawn()
    replaced = 0
    while kids:
        ready = wait(list(kids), timeout=1)
        if not ready and not _alive(main):
            break
        for sentinel in ready:
            k = kids.pop(sentinel)
            k.join()
            if k.exitcode and _alive(main) and replaced < _MAX_REPLACED:
                with lock:
                    send.send(("died", k.pid, _how(k.exitcode)))
                replaced += 1
                spawn()  # takes the dead one's share of the work, and its end-of-work marker
    for k in kids.values():
        k.kill()


_MAX_REPLACED = 1000  # a safety net against a worker that dies before taking any file


def _how(exitcode: int) -> str:
    if exitcode < 0:
        try:
            return f"signal {-exitcode} ({signal.Signals(-exitcode).name})"
        except ValueError:
            return f"signal {-exitcode}"
    return f"exit status {exitcode}"


def _own_group(pid: int) -> None:
    try:
        os.setpgid(pid, pid)  # done by both sides, so it holds whichever runs first
    except OSError:
        pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except OSError:
        return True


EAGER_FROM = 4  # jobs from which bump's workers start with the run, not with its first candidate


class Runner:
    """Runs `task` (analyse(), or bump's per-file analysis) in-process with one job; otherwise in
    worker processes forked from a zygote that imports LibCST (once, while this process and the
    scanners go on reading), started with its first candidate, or with the run if `eager` (bump,
    whose every candidate needs LibCST, on EAGER_FROM jobs or more: cores to spare). Audit's
    candidates mostly need no LibCST (classify_without_engine), and a tree may hold none that do.
    `task` is a module-level function taking a path first and returning (path, results, error
    line); it never raises."""

    def __init__(self, jobs: int, task=None, eager: bool = False):
        self.jobs = max(1, jobs)
        self.task = task or analyse
        self.queued: List[tuple] = []
        self.sent: List[tuple] = []
        self.early: List[tuple] = []  # results received while still submitting
        self.done: List[tuple] = []  # results that needed no engine (classify_without_engine)
        self.pool = None
        if eager and self.jobs > 1:  # import the engine while the scan looks for work
            self._start()

    def submit(self, *args) -> None:
        if self.pool is None and self.jobs == 1:
            self.queued.append(args)
            return
        if self.pool is None:
            self._start()
        self.sent.append(args)
        self._put(len(self.sent) - 1, args)

    def _start(self) -> None:
        if sys.platform == "linux":
            ctx = multiprocessing.get_context("fork")
            tasks = ctx.Queue()  # put() never blocks this process, however far behind the workers are
            recv, send = ctx.Pipe(duplex=False)
            proc = ctx.Process(target=_zygote, args=(ctx, self.task, tasks, (send, ctx.Lock()), recv, self.jobs,
                                                       os.getpid()))
            proc.start()  # before the first put: no queue thread exists yet to be forked
            _own_group(proc.pid)
            self.pool = (tasks, recv, proc)
        else:  # no cheap fork: one pool process per worker, each importing the engine
            from concurrent.futures import ProcessPoolExecutor

            self.pool = ProcessPoolExecutor(self.jobs, initializer=_warm)
        for args in self.queued:
            self.sent.append(args)
            self._put(len(self.sent) - 1, args)
        self.queued = []

    def _put(self, i: int, args: tuple) -> None:
        if isinstance(self.pool, tuple):
            self.pool[0].put((i, args))
            recv = self.pool[1]
            try:
                while recv.poll(0):  # take what is done, so no worker waits on a full pipe meanwhile
                    self.early.append(recv.recv())
            except EOFError:
                pass  # no worker is left; _collect reports what they did not do
        else:
            self.sent[i] = (args, self.pool.submit(self.task, *args))

    def results(self, progress: "Progress") -> Iterable[Tuple[str, List[Site], Optional[str]]]:
        yield from self.done
        total = len(self.queued) + len(self.sent)
        done = 0
        if isinstance(self.pool, tuple) and not self.sent:
            self.close()  # started early, and nothing needed it: do not wait for its import to finish
            return
        for args in self.queued:
            yield self.task(*args)
            done += 1
            progress.show(f"analysed {done}/{total} candidate files")
        if self.pool is None:
            return
        for res in (self._collect() if isinstance(self.pool, tuple) else self._collect_futures()):
            yield res
            done += 1
            progress.show(f"analysed {done}/{total} candidate files")

    def _collect(self) -> Iterable[Tuple[str, List[Site], Optional[str]]]:
        tasks, recv, proc = self.pool
        for _ in range(self.jobs):
            tasks.put(None)
        pending = set(range(len(self.sent)))
        holding: Dict[int, int] = {}  # worker pid -> the task it started last
        while pending:
            if self.early:
                msg = self.early.pop(0)
            elif not recv.poll(0.2):
                if not proc.is_alive():
                    break  # the zygote is gone, and its workers with it: what is pending is lost
                continue
            else:
                try:
                    msg = recv.recv()
                except EOFError:
                    break  # every worker has closed its end: none is left
            if msg[0] == "start":
                holding[msg[1]] = msg[2]
            elif msg[0] == "done":
                holding.pop(msg[1], None)
                if msg[2] in pending:
                    pending.discard(msg[2])
                    yield msg[3]
            elif msg[0] == "died":
                i = holding.pop(msg[1], None)
                if i in pending:
                    pending.discard(i)
                    yield self.sent[i][0], [], f"the worker process analysing it died ({msg[2]}); skipped"
        for i in sorted(pending):
            yield self.sent[i][0], [], "internal error: a worker process died before analysing it"
        proc.join()
        recv.close()
        tasks.close()
        tasks.join_thread()

    def close(self) -> None:
        """End the workers if the run stops early (Ctrl-C, an error): none is left behind, nothing waits."""
        if isinstance(self.pool, tuple) and self.pool[2].is_alive():
            tasks, _, proc = self.pool
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except OSError:
                proc.terminate()
            proc.join(5)
            tasks.cancel_join_thread()
        elif self.pool is not None and not isinstance(self.pool, tuple):
            self.pool.shutdown(wait=False, cancel_futures=True)

    def _collect_futures(self) -> Iterable[Tuple[str, List[Site], Optional[str]]]:
        for args, fut in self.sent:
            try:
                yield fut.result()
            except Exception as e:  # BrokenProcessPool: a worker died
                yield args[0], [], internal_error(e)
        self.pool.shutdown()


# -- which files ------------------------------------------------------------


def display_root(paths: Sequence[str]) -> str:
    """The directory reported paths are relative to: the one directory given, else the common parent."""
    ab = [os.path.abspath(p) for p in paths]
    dirs = [p if os.path.isdir(p) else os.path.dirname(p) for p in ab]
    if len(ab) == 1 and os.path.isdir(ab[0]):
        return ab[0]
    return os.path.commonpath(dirs) if dirs else os.getcwd()


def _rel(path: str, root: str) -> str:
    return os.path.relpath(os.path.abspath(path), root).replace(os.sep, "/")


# -- the run ----------------------------------------------------------------


@dataclass
class Tally:
    files: int = 0
    candidates: int = 0
    errors: List[Tuple[str, str]] = field(default_factory=list)


@in_run
def audit(  # noqa: PLR0913  (public API: keyword options with defaults)
    paths: Sequence[str],
    rev: Optional[str] = None,
    exclude: Sequence[str] = (),
    kernel: Optional[str] = None,
    jobs: Optional[int] = None,
    gitignore: bool = True,
    progress: bool = False,
    follow_links: bool = False,
    note=None,
    relative_to: Optional[str] = None,
) -> AuditResult:
    """Classify every site under `paths` (in the work tree, or in commit `rev`), in one run
    (run_context: what it reads of the tree, its scanners and workers inherit; the next run reads afresh).

    follow_links and note (told what a walk leaves out, and why): as discover.iter_python_files.
    relative_to: the directory reported paths are relative to (default: display_root of the paths; for
    `--rev`, the work tree's place of them)."""
    t0 = time.perf_counter()
    prog = Progress(progress)
    prefilter = _rules_prefilter(paths)  # before any process is forked
    runner = Runner(jobs or os.cpu_count() or 1)
    tally = Tally()
    tmp = commit = top = None
    with scanning_for(prefilter):  # scanners forked inside look for these rules' names
        try:
            if rev is None:
                root = display_root(paths)
                _scan_disk(paths, exclude, gitignore, kernel, runner, tally, prog, follow_links, note)
            else:
                tmp = os.path.realpath(tempfile.mkdtemp(prefix="topk-migrate-rev-"))
                root, top, commit = _scan_rev(paths, rev, exclude, kernel, runner, tally, prog, tmp)
            if relative_to is not None:
                root = os.path.abspath(relative_to)
            sites: List[Site] = []
            for path, got, err in runner.results(prog):
                if tmp:  # from the temporary layout back to the work tree's paths
                    path = os.path.join(top, path[len(tmp) + 1 :])
                    err = err and err.replace(tmp + os.sep, "")
                if err:
                    tally.errors.append((path, err))
                for s in got:
                    reason = s.reason.replace(tmp + os.sep, "") if tmp else s.reason
                    p = path if tmp else s.path
                    sites.append(replace(s, path=_rel(p, root), reason=reason))
        finally:
            runner.close()
            prog.close()
            if tmp:
                shutil.rmtree(tmp, ignore_errors=True)
    return _result(sites, tally, root, rev, commit, t0)


def _new_since(  # noqa: PLR0913  (audit()'s options, passed on to the audit of ref)
        now: AuditResult, paths, ref, exclude, kernel, jobs, gitignore, relative_to) -> AuditResult:
    """now's sites less those commit `ref` had (baseline.py), its summary counted again."""
    from .baseline import only_new

    root = os.path.abspath(relative_to) if relative_to is not None else display_root(paths)
    then = audit(paths, rev=ref, exclude=exclude, kernel=kernel, jobs=jobs, gitignore=gitignore, relative_to=root)
    sites = only_new(now.sites, root, then.sites, then.summary["commit"])
    summary = {**now.summary, "sites": len(sites),
               "by_status": {st.value: sum(s.status is st for s in sites) for st in CHECK_STATUSES}}
    return AuditResult(sites, now.errors, summary)


def _rules_prefilter(paths: Sequence[str]):
    """What the scan looks for: the names of every site rule. Which rules a file is read for is its own
    project's choice ([tool.topk-migrate] enable, where the file lies: _own_rules_hold), as in check, never
    that of the directory a walk starts from (`audit .` above a `python/pyproject.toml` that enables
    decode-topk-length still reads its files for that rule)."""
    return prefilter_for(everything=True)


def _own_rules_hold(path: str, data: Optional[bytes] = None, buf: Optional[bytearray] = None) -> bool:
    """Does the file at `path` (its bytes `data`, or read a window at a time into `buf`), which holds a name
    some site rule looks for, hold one of a rule its own project runs? What api.process_file asks before it
    parses: the rules on by default, and those the [tool.topk-migrate] of the file's project enables. A
    configuration that cannot be read: yes (the engine reports it, one line)."""
    def holds(pf) -> bool:
        if data is not None:
            return pf.matches(data)
        with scanning_for(pf):
            return file_may_hold_site(path, buf)

    try:
        if holds(prefilter_for(())):
            return True
        enable = config_for(os.path.dirname(os.path.abspath(path))).enable
    except InputError:
        return True
    except OSError:
        return True  # the engine words why it cannot be read
    return bool(enable) and holds(prefilter_for(tuple(sorted(enable))))


def _result(sites, tally, root, rev, commit, t0) -> AuditResult:
    sites.sort(key=lambda s: (s.path, s.line, s.column))
    # a path that does not exist is named as given: relative to root it would name something else
    errors = sorted((_rel(p, root) if rev or os.path.lexists(p) else p, e) for p, e in tally.errors)
    summary = {
        "files": tally.files,
        "parsed": tally.candidates,
        "sites": len(sites),
        "by_status": {st.value: sum(s.status is st for s in sites) for st in CHECK_STATUSES},
        "errors": len(errors),
        "seconds": round(time.perf_counter() - t0, 3),
        "rev": rev,
        "commit": commit,
    }
    return AuditResult(sites, errors, summary)


def _scan_disk(  # noqa: PLR0913  (the walk's options and the run's state)
        paths, exclude, gitignore, kernel, runner: Runner, tally: Tally, prog: Progress,
        follow_links: bool = False, note=None) -> None:
    """Classify each candidate where it is found if no LibCST is needed; hand the others to the runner
    as soon as they come back, so parsing starts while the scan goes on."""
    from functools import partial

    scan_disk(paths, exclude, gitignore, runner.jobs, tally, prog, lambda path: runner.submit(path, kernel),
              follow_links, note, classify=partial(classify_without_engine, kernel=kernel),
              classified=runner.done.append)


def scan_disk(  # noqa: PLR0913  (the walk's options and callbacks; bump's engine calls it too)
        paths, exclude, gitignore, jobs: int, tally: Tally, prog: Progress, take_one,
        follow_links: bool = False, note=None, classify=None, classified=None) -> None:
    """Walk, read and prefilter (in `jobs` scanner processes; with the prefilter discover.prefilter()
    gives), calling take_one(path) for each candidate as it comes back. The files are
    config.project_files', as every command reads them. One directory given is walked by the
    scanners themselves, in parts (discover.SplitWalk); otherwise this process walks and hands them
    a chunk of paths at a time. classify(path), if given, runs on each candidate where it was read:
    what it answers goes to classified(answer), a candidate it answers None for to take_one."""
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
        scanners = _Scanners(jobs, classify, plan)
        try:
            if plan is None:
                feed(project_files(paths, exclude, gitignore, follow_links, note))
            else:
                feed(first)
                _walk_split(plan, scanners, jobs, feed, take, tally, prog, classify is not None)
            take(scanners.drain())
        finally:
            scanners.close()
    except InputError as e:  # a directory's [tool.topk-migrate]
        raise AuditError(str(e)) from None


def _walk_split(  # noqa: PLR0913  (the walk's plan, callbacks and the run's state)
        plan: SplitWalk, scanners: "_Scanners", jobs: int, feed, take, tally: Tally,
        prog: Progress, classify: bool) -> None:
    """The scanners walk the parts; the seeds a part donates go to the next idle one, a share of
    what is left at a time (fewer messages than one a seed, and the last parts still small). The
    candidates a part finds are classified by the next idle scanners, not by the one that walked it:
    one directory can hold several of a tree's few candidates, each the longest work of a run."""
    from collections import deque

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


def _scan_chunk(paths: List[str], buf: bytearray, classify=None) -> List[Tuple[str, object]]:
    """(path, classify(path) or None) for those of `paths` that may hold a site, or cannot be read
    (the engine words that error). Under audit's scan (every site rule's names) a file is kept only for a
    rule its own project runs (_own_rules_hold); bump's scan looks for its releases' names alone."""
    own_rules = prefilter() is prefilter_for(everything=True)
    keep = []
    for path in paths:
        try:
            hit = file_may_hold_site(path, buf) and (not own_rules or _own_rules_hold(path, buf=buf))
        except OSError:
            hit = True
        if hit:
            keep.append((path, classify(path) if classify else None))
    return keep


def _walk_part(plan: SplitWalk, seeds: List[tuple], buf: bytearray, share=float("inf")) -> tuple:
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
    return n, errors, plan.result(w), _scan_chunk(paths, buf)


def _scanner(conn, main: int, others, classify, plan) -> None:
    """A scanning process: chunks of paths (or parts of a split walk) in, the candidates among them
    out (with classify's answers). It never imports LibCST, dies with the main process
    (PR_SET_PDEATHSIG, or the pipe's end), and holds one SCAN_WINDOW buffer whatever it reads."""
    from .guard import exit_with_parent

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
            conn.send(([], _walk_part(plan, work[1], buf, PART_SHARE)))
        else:
            conn.send((_scan_chunk(work, buf, classify), None))


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

    def __init__(self, jobs: int, classify=None, plan: Optional[SplitWalk] = None):
        self.buf = bytearray(SCAN_WINDOW)
        self.plan = plan
        self.idle: List[tuple] = []  # (process, connection)
        self.busy: Dict[object, Tuple[tuple, object]] = {}  # connection -> (scanner, work it holds)
        self.parts: List[tuple] = []  # walked parts' (files, errors, result, candidates), not yet taken
        self.here = classify  # what work done here is classified with
        if not _forks_scanners(jobs):
            return
        self.here = None
        if classify is not None:
            _import_for_classify()  # once, before forking (with no scanner, classify imports what it needs)
        ctx = multiprocessing.get_context("fork")
        for _ in range(jobs):
            mine, theirs = ctx.Pipe()
            proc = ctx.Process(target=_scanner, args=(theirs, os.getpid(), [c for _, c in self.idle], classify, plan),
                               daemon=True)
            proc.start()
            _own_group(proc.pid)
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
            return _scan_chunk(work, self.buf, classify)
        self.parts.append(_walk_part(self.plan, work[1], self.buf))
        return []

    def drain(self) -> List[Tuple[str, object]]:
        got: List[Tuple[str, object]] = []
        while self.busy:
            got += self.wait()
        return got

    def wait(self) -> List[Tuple[str, object]]:
        """The candidates of the scanners that answer next (at least one)."""
        from multiprocessing.connection import wait

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
    from .files import max_bytes

    mb = max_bytes()
    return max(REV_READ_LIMIT, 64 * mb), max(REV_LAYOUT_LIMIT, 16 * mb)


def _git(args: List[str], cwd: str, stdin=None) -> bytes:
    """A git command's output (subprocesses.git: no transport, no lazy fetch, scrubbed environment, a
    time limit and bounded output); AuditError, one line, if it fails."""
    from .subprocesses import GitStopped, git

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
    from .subprocesses import GitStopped, git_popen

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


def _directories_among(rels: Sequence[str], paths: Iterable[str]) -> set:
    """Which of `rels` (repository-relative paths from the command line, "" the top) are directories
    of the commit whose files are `paths`. One prefix comparison per path and rel: time linear in the
    listing's size whatever its depth (the set of every directory, built by cutting each path at each
    of its slashes, costs the cube of a deep chain's depth)."""
    found = {r for r in rels if not r}
    left = [(r, r + "/") for r in dict.fromkeys(rels) if r]
    for p in paths:
        if not left:
            break
        hit = [rh for rh in left if p.startswith(rh[1])]
        if hit:
            found.update(r for r, _ in hit)
            left = [rh for rh in left if rh not in hit]
    return found


def _scan_rev(  # noqa: PLR0913  (lay_out_rev's inputs and the runner)
        paths, rev, exclude, kernel, runner, tally, prog, tmp) -> Tuple[str, str, str]:
    """List and prefilter the files of commit `rev`; lay candidates out under tmp and hand them to the
    workers. Returns (root, top, commit)."""
    root, top, commit, laid = lay_out_rev(paths, rev, exclude, tally, prog, tmp)
    for dest in laid:  # only now: the gate may read one candidate (a vendored interface) for another
        runner.submit(dest, kernel, tmp)
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
    """lay_out_rev's `keep` as given (its `needles`, if any, for a blob over the cap), or audit's prefilter."""
    own_rules = keep is None  # audit's: each candidate by the rules of its own project (_own_rules_hold)
    if keep is None:
        keep, scan = may_hold_site, prefilter()
    else:
        needles = getattr(keep, "needles", None)
        scan = Prefilter([bytes(n) for n in needles]) if needles else None
    return _Keep(keep, scan, own_rules)


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


def _rev_root(rels: Sequence[str], entries: Sequence[Tuple[str, str, str]], top: str) -> str:
    """The directory the report is relative to: the one directory given, or what the paths have in common."""
    dirs = _directories_among(rels, (p for _, _, p in entries))
    absd = [os.path.join(top, r) if r else top for r in rels]
    return absd[0] if len(rels) == 1 and rels[0] in dirs else \
        os.path.commonpath([a if r in dirs else os.path.dirname(a) for a, r in zip(absd, rels)])


def _rev_candidate(rel: str, path: str, excl) -> bool:
    """Whether a file of the commit under `rel` is looked at: `rel` itself (named on the command line), or
    a .py file below it, outside hidden directories and not --exclude'd, as the walk on disk would."""
    if path == rel:  # a file named on the command line: always looked at
        return True
    below = path[len(rel) + 1 :] if rel else path
    if not path.endswith(".py") or any(c.startswith(".") for c in below.split("/")[:-1]):
        return False
    return not (excl is not None and excl.match_file(below))


def _rev_wanted(rels, entries, exclude, rev, top, tally) -> List[Tuple[str, str]]:
    """(sha, path) of each candidate under each rel, symlinks left out (a path string in a commit, not a
    file to read); a rel that names nothing in the commit is an error line."""
    excl = compile_patterns(exclude)
    wanted: List[Tuple[str, str]] = []
    for rel in rels:
        matched = False
        for mode, sha, path in entries:
            if rel and path != rel and not path.startswith(rel + "/"):
                continue
            matched = True
            if mode == "120000":
                continue  # a symlink in a commit is a path string, not a file to read
            if _rev_candidate(rel, path, excl):
                wanted.append((sha, path))
        if not matched:
            tally.errors.append((os.path.join(top, rel), f"not in {rev}"))
    return wanted


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
    """The candidates, each path once, less those the laid-out project files' [tool.topk-migrate]
    filters leave out, as on disk (their project files must be laid out first)."""
    try:
        filters = dir_filters(os.path.join(tmp, rel) if rel else tmp for rel in rels)
    except InputError as e:
        raise AuditError(str(e)) from None
    seen = set()
    wanted = [w for w in wanted if not (w[1] in seen or seen.add(w[1]))]
    if filters:
        wanted = [(sha, path) for sha, path in wanted if kept(filters, os.path.join(tmp, path))]
    return wanted


def _too_large(size: int, limit: int) -> str:
    """A candidate's error line over TOPK_MIGRATE_MAX_BYTES, as on disk."""
    from .files import MAX_BYTES_ENV

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
        if own_rules and not _own_rules_hold(os.path.join(files.tmp, path), data):
            continue  # its project's project files are laid out already: config_for reads them
        dest = files.lay_out(path, sha, data)
        if dest:
            laid.append(dest)
    return laid


def _lay_out_candidates(files: _RevFiles, wanted, keep: _Keep, prog) -> List[str]:
    """Read the candidates' blobs in one cat-file and lay out those keep holds for; one over the cap is
    only scanned, and the error line if it may hold a call, as on disk."""
    from .files import max_bytes

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


def lay_out_rev(  # noqa: PLR0913  (the commit's paths and options, the run's state; bump's engine calls it too)
        paths, rev, exclude, tally, prog, tmp, keep=None) -> Tuple[str, str, str, List[str]]:
    """The files of commit `rev` under `paths` for which keep(bytes) holds (default: the prefilter),
    and the project files the gate and config read, laid out under tmp (bump --rev reads them too).
    Returns (root, top, commit, the laid-out candidates).

    Sizes come first (cat-file --batch-check), and nothing over its cap is read. A candidate over
    TOPK_MIGRATE_MAX_BYTES is scanned a window at a time for the names keep looks for (the
    prefilter's; a keep with a `needles` attribute, those; any other keep: every such file) and is
    the usual "file too large" error line if one is there, as on disk. A project file over
    project.PROJECT_FILE_LIMIT (a RECORD: project.RECORD_LIMIT) is an error line. A blob the
    repository lacks (a partial clone) is an error line, never fetched. Each blob is written once
    (the same blob under other paths is hard-linked), and a run reads and lays out at most
    _rev_limits() bytes."""
    keeping = _rev_keep(keep)
    top = _rev_top(paths)
    commit = _rev_commit(rev, top)
    rels = _rev_rels(paths, top)
    entries = _rev_entries(top, commit, rev, tally)
    root = _rev_root(rels, entries, top)
    project = [(sha, path) for _, sha, path in entries if _is_project_file(path)]
    wanted = _rev_wanted(rels, entries, exclude, rev, top, tally)
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


# -- the command ------------------------------------------------------------


@click.command("audit")
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--rev", metavar="REF", help="Audit this git commit (tag, branch, sha) without checking it out.")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True,
              help="text table, json (schemas/audit-v1.schema.json), sarif 2.1.0, or github annotations.")
@click.option("--exclude", multiple=True, metavar="PATTERN",
              help="Skip paths matching this gitignore-style pattern, relative to each PATH (repeatable).")
@click.option("--no-gitignore", is_flag=True, help="Walk paths that .gitignore files exclude.")
@kernel_option
@click.option("-j", "--jobs", type=click.IntRange(1), help="Worker processes for parsing [default: CPU count].")
@click.option("--progress/--no-progress", default=None, help="Progress line on stderr [default: when stderr is a terminal].")
@follow_links_option
@statistics_option
@new_since_option
@verbose_option(command="audit")
@output_option(default="-", allow_dash=True)
@click.option("--relative-to", metavar="DIR", type=click.Path(file_okay=False),
              help="Report paths relative to DIR (the GitHub Action gives the workspace's top, as SARIF and "
                   "annotations want them) [default: the working directory where the audited directory lies "
                   "under it, as check names paths; else the directory audited; with --rev, the directory audited].")
def audit_command(  # noqa: PLR0913  (a click command: one parameter per option)
        paths, rev, fmt, exclude, no_gitignore, kernel, jobs, progress, follow_links, statistics, new_since,
        verbose, output, relative_to):
    """Classify every kernel call site under PATHs (default: .), fast.

    Files that cannot hold a call are never parsed. Hidden directories,
    .gitignore'd paths, symlinked directories and links that lead outside a
    PATH are skipped when walking; files named explicitly are always read.
    Reported paths are relative to the working directory where what is audited lies under it (as check
    names them), else to the directory given (or the common parent of several PATHs; with --rev, always),
    or to --relative-to DIR. With -o the report file is replaced only once the run
    is done, and the summary goes to stderr.

    Exit codes: 0 nothing left to do, 1 fixable or manual sites remain, 2 errors.
    """
    from . import report
    from .escape import fit, printable
    from .output import write_output

    validate_kernel(kernel)
    if new_since and rev:
        raise click.UsageError("--new-since compares the work tree with REF; it does not go with --rev")
    paths = paths or (".",)
    if progress is None:
        progress = sys.stderr.isatty()
    if relative_to is None and not rev and project_mod.inside(display_root(paths), os.getcwd()):
        relative_to = os.curdir  # as check and ruff name them: `audit python` lists python/sglang/...
    try:
        result = audit(paths, rev=rev, exclude=exclude, kernel=kernel, jobs=jobs, gitignore=not no_gitignore,
                       progress=progress, follow_links=follow_links, note=skipped_note(verbose),
                       relative_to=relative_to)
        if new_since:
            result = _new_since(result, paths, new_since, exclude, kernel, jobs, not no_gitignore, relative_to)
    except AuditError as e:
        click.echo(fit(f"error: {printable(str(e))}", sys.stderr.encoding), err=True)
        if output == "-":
            sys.exit(2)
        # a report that says the run failed, not none: a fork must not blank its own code scan
        top = os.path.abspath(relative_to or paths[0])
        result = _result([], Tally(errors=[(paths[0], str(e))]), top if os.path.isdir(top) else os.path.dirname(top),
                         rev, None, time.perf_counter())
    if statistics and fmt == "text":
        text = report.statistics(result.sites) + report.render_text([], result.errors, result.summary)
    else:
        text = report.render(fmt, result.sites, result.errors, result.summary)
    if output == "-":
        sys.stdout.write(fit(text, sys.stdout.encoding))
        sys.stdout.flush()
        click.echo(fit(report.summary_line(result.summary), sys.stderr.encoding), err=True)
    else:
        try:
            write_output(output, text)
        except OSError as e:
            click.echo(fit(f"error: cannot write the report to {printable(output)}: "
                           f"{(e.strerror or str(e)).lower()}", sys.stderr.encoding), err=True)
            sys.exit(2)
        where = f"{report.summary_line(result.summary)}; report written to {printable(output)}"
        click.echo(fit(where, sys.stderr.encoding), err=True)
    sys.exit(result.exit_code())
