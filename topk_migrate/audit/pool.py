"""The engine's worker processes: a zygote that imports LibCST once and forks workers from itself while the
scan goes on; a worker that dies costs the file it held and is replaced."""
from __future__ import annotations

import importlib
import multiprocessing
import os
import signal
import sys
from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional, Tuple

from ..api import process_file
from ..discover import Prefilter
from ..files import input_error, read_candidate
from ..model import InputError, Site, internal_error
from ..progress import Progress

# -- the engine, run in workers ------------------------------------------------


def _warm() -> None:
    """Import the engine (LibCST), and what it imports on its first file, in the zygote: once,
    not again in each worker it forks."""
    import libcst.native  # noqa: F401, PLC0415 - warm-up: the zygote's, once, before it forks the workers
    import packaging.requirements  # noqa: F401, PLC0415 - warm-up: the zygote's, once, before it forks the workers
    import packaging.tags  # noqa: F401, PLC0415 - warm-up: the zygote's, once, before it forks the workers

    from .. import api, files, guard, kernels, memory, narrow, project, rules  # noqa: F401, PLC0415 - warm-up: the zygote's, once, before it forks the workers

    for r in rules.enabled():
        if r.has_sites:
            rules.load(r.id)


def analyse(path: str, kernel: Optional[str], cwd: Optional[str] = None,
            prefilter: Optional[Prefilter] = None) -> Tuple[str, List[Site], Optional[str]]:
    """(path, sites, error line) of one candidate file; never raises (it runs in a worker). prefilter: what
    a file over the size bound is scanned for (the run's: _engine)."""
    back = os.getcwd() if cwd else None
    try:
        if cwd:
            os.chdir(cwd)  # --rev: relative paths in reasons come out repo-relative
        return _engine(path, kernel, prefilter, engine=True)
    finally:
        if back:
            os.chdir(back)


def classify_without_engine(path: str, kernel: Optional[str],
                            prefilter: Optional[Prefilter] = None) -> Optional[Tuple[str, List[Site], Optional[str]]]:
    """analyse()'s answer where it needs no LibCST (the file holds no call, cannot be read, or the
    rules' quick classifiers answer for it); None where it does. Run where the file is found."""
    return _engine(path, kernel, prefilter, engine=False)


def _engine(path: str, kernel: Optional[str], prefilter: Optional[Prefilter],
            engine: bool) -> Optional[Tuple[str, List[Site], Optional[str]]]:
    """process_file's answer for a candidate, read here with the run's prefilter (a file over the size bound
    is scanned for its names: files.read_candidate) and its bytes handed to the engine; None where engine
    is False and LibCST is needed."""
    from .. import narrow  # noqa: PLC0415 - light: not for --help

    data = None
    if prefilter is not None:
        try:
            got = read_candidate(path, prefilter)
        except OSError as e:
            return path, [], str(input_error(e, path))
        except InputError as e:  # too large, and names a kernel
            return path, [], str(e)
        if got is None:
            return path, [], None
        data = got[0]
    out = process_file(path, kernel, narrowed=narrow.enabled(), data=data, engine=engine)
    return None if out.needs_engine else (path, out.sites, out.error)


def import_for_classify() -> None:
    """What classify_without_engine imports, imported in this process before the scanners are forked,
    not again in each of them (kernels.py too: the vendored interfaces a tree with kernel calls usually
    holds ask the kernel gate, and a scanner importing it on the last candidate found would hold up the
    end of the run)."""
    from .. import api, config, files, guard, kernels, memory, narrow, rules  # noqa: F401, PLC0415 - warm-up: once, before the scanners are forked

    for s in rules.enabled():
        if s.quick:
            importlib.import_module(f"{s.module}.{s.quick}")


def _serve(task, tasks, results, main: int, zygote: int) -> None:
    import queue  # noqa: PLC0415 - light: not for --help

    from ..guard import exit_with_parent  # noqa: PLC0415 - light: not for --help

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


@dataclass(frozen=True)
class _Wiring:
    """What the zygote and the workers it forks start with: the fork context, the task, the job queue,
    the result pipe's send end with its lock, the main process's pid."""

    ctx: object
    task: object
    tasks: object
    results: tuple
    main: int


def _zygote(wiring: _Wiring, recv, workers: int) -> None:
    """Import the engine once, then fork the workers from this warm process and watch them:
    one that dies (a native crash, the OOM killer) is reported with the file it held and
    replaced, so the run goes on.

    The workers form a process group of their own: Ctrl-C reaches only the main
    process, which ends the whole group (see Runner.close). Each process here dies with
    its parent (PR_SET_PDEATHSIG, and polling where that is missing), and none holds the
    read end of the result pipe: if the main process is gone, a write fails instead of
    blocking forever. What remains: a worker killed while it holds a queue's lock (inside
    get or send, not while analysing) leaves that lock taken, and the run waits."""
    from multiprocessing.connection import wait  # noqa: PLC0415 - light: not for --help

    from ..guard import exit_with_parent  # noqa: PLC0415 - light: not for --help

    ctx, task, tasks, results, main = wiring.ctx, wiring.task, wiring.tasks, wiring.results, wiring.main
    exit_with_parent(main)
    recv.close()
    own_group(os.getpid())
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


def own_group(pid: int) -> None:
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
            proc = ctx.Process(target=_zygote, args=(_Wiring(ctx, self.task, tasks, (send, ctx.Lock()), os.getpid()),
                                                       recv, self.jobs))
            proc.start()  # before the first put: no queue thread exists yet to be forked
            own_group(proc.pid)
            self.pool = (tasks, recv, proc)
        else:  # no cheap fork: one pool process per worker, each importing the engine
            from concurrent.futures import ProcessPoolExecutor  # noqa: PLC0415 - on demand: concurrent.futures, only off Linux (no fork)

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
