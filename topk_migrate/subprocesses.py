"""The one way this tool runs another program: never where a fork can put code in its way.

A fork controls the directory a command runs in (the top of its checkout) and, when it is handed
over with its `.git`, that repository's configuration. So:

* Python child processes (pip) run isolated (`python -I`: no current directory on sys.path, no
  PYTHON* variables, no user site) with a private, empty working directory: a fork's `pip.py`
  or `sitecustomize.py` is never imported.
* The environment is scrubbed to an allowlist (the user's own locale, paths, proxy and pip
  settings); nothing the checkout sets reaches the child through it.
* git runs with every transport disallowed and lazy fetching off: a partial clone's missing
  blob is one error line, never a fetch that would run the repository's `core.sshCommand`.
  No git command this tool runs starts a filter, textconv, hook, pager or fsmonitor
  (`rev-parse`, `ls-tree`, `rev-list --objects --missing=print`, `cat-file --batch` /
  `--batch-check` only, each with the config that would start one overridden on its command line).
* git never hangs a run, nor fills its memory: what a repository names can block it (a config
  that includes a FIFO, a FIFO as `HEAD`, `packed-refs` or a loose object), so every git command
  may go at most `git_timeout()` seconds (GIT_TIMEOUT, or TOPK_MIGRATE_GIT_TIMEOUT) without
  answering, GIT_RUN_LIMIT times that in all, and gives at most GIT_OUTPUT_LIMIT bytes of output;
  the long-lived `cat-file --batch` has the limit on each read of its answers (`GitStream`). Past
  any of them the child is killed and the caller gets `GitStopped`, one line.
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
import time
from typing import IO, List, Mapping, Optional, Sequence, Union

from .memory import env_limit

# Variables a child may see: the user's locale, paths and network/pip settings, never PYTHON*
# or GIT_* (which redirect what runs or which repository is read).
_KEEP = ("PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ", "TMPDIR", "TEMP", "TMP",
         "SYSTEMROOT", "COMSPEC", "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
         "http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY")
_KEEP_PREFIXES = ("LC_", "PIP_")

# Overrides on git's command line (which beats every config file): no transport at all, so no
# program a repository names for one (core.sshCommand, a remote helper) can start.
GIT_CONFIG = ("-c", "protocol.allow=never", "-c", "core.fsmonitor=false", "-c", "core.sshCommand=false",
              "-c", "core.hooksPath=/dev/null", "-c", "core.pager=cat", "-c", "fetch.recurseSubmodules=false")
_GIT_ENV = {"GIT_NO_LAZY_FETCH": "1", "GIT_TERMINAL_PROMPT": "0", "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_PROTOCOL_FROM_USER": "0", "GIT_OPTIONAL_LOCKS": "0"}


def scrubbed_env(extra: Optional[Mapping[str, str]] = None) -> dict:
    """This process's environment cut to the allowlist, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if k in _KEEP or k.startswith(_KEEP_PREFIXES)}
    env.update(extra or {})
    return env


def python_argv(*args: str) -> List[str]:
    """`python -I ...` for this interpreter: a module run this way never imports from the cwd."""
    return [sys.executable, "-I", *args]


def git_argv(*args: str) -> List[str]:
    return ["git", *GIT_CONFIG, *args]


def run(argv: Sequence[str], *, cwd: Optional[str] = None, timeout: Optional[float] = None,
        stdin: Union[None, int, IO] = subprocess.DEVNULL, text: bool = False,
        env: Optional[Mapping[str, str]] = None) -> subprocess.CompletedProcess:
    """argv with its output captured, in `cwd` (default: a fresh empty private directory) and the
    scrubbed environment. OSError and TimeoutExpired pass to the caller, which words them."""
    if cwd is not None:
        return subprocess.run(list(argv), cwd=cwd, stdin=stdin, capture_output=True, text=text,
                              timeout=timeout, env=scrubbed_env(env))
    with tempfile.TemporaryDirectory(prefix="topk-migrate-run-") as private:
        return subprocess.run(list(argv), cwd=private, stdin=stdin, capture_output=True, text=text,
                              timeout=timeout, env=scrubbed_env(env))


# Bounds on every git command. A git that works answers at once and goes on answering: its output
# comes in a steady stream (ls-tree -r of a few hundred thousand files, tens of MB, in a second or
# two). One blocked on a FIFO answers nothing. So git may go GIT_TIMEOUT seconds without a byte of
# output (or, its output all given, without exiting), GIT_RUN_LIMIT times that for a whole command,
# and may give GIT_OUTPUT_LIMIT bytes of output.
GIT_TIMEOUT = 10
GIT_TIMEOUT_ENV = "TOPK_MIGRATE_GIT_TIMEOUT"
GIT_RUN_LIMIT = 60  # x git_timeout(): 10 minutes by default
GIT_OUTPUT_LIMIT = 256 << 20
_STDERR_KEPT = 64 << 10  # of git's stderr, the end (its last line is the error)
_CHUNK = 1 << 16


class GitStopped(Exception):
    """A git command stopped by a bound (time, output): the message, one line, says which."""


def git_timeout() -> int:
    """Seconds git may go without answering: TOPK_MIGRATE_GIT_TIMEOUT (whole seconds, at least 1), else
    GIT_TIMEOUT."""
    return max(env_limit(GIT_TIMEOUT_ENV, GIT_TIMEOUT), 1)


def _silent(name: str, timeout: int) -> GitStopped:
    return GitStopped(f"{name}: no answer for {timeout} s (a FIFO or device the repository or its configuration "
                      f"names?); stopped (raise {GIT_TIMEOUT_ENV}, in seconds, to wait longer)")


def _kill(proc: subprocess.Popen) -> None:
    try:
        proc.kill()
    except OSError:
        pass


def git(args: Sequence[str], cwd: str, stdin: Union[None, int, IO] = subprocess.DEVNULL) -> subprocess.CompletedProcess:
    """A git command in the repository at `cwd`, as the module docstring says: its stdout (at most
    GIT_OUTPUT_LIMIT bytes) and the end of its stderr. GitStopped, the child killed, when it goes
    git_timeout() seconds without a byte of output (or, its output given, without exiting), runs past
    GIT_RUN_LIMIT times that, or gives more output; OSError where it cannot start."""
    timeout, limit = git_timeout(), GIT_OUTPUT_LIMIT
    name = f"git {args[0]}" if args else "git"
    argv = git_argv(*args)
    proc = subprocess.Popen(argv, cwd=cwd, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=scrubbed_env(_GIT_ENV))
    out, err, over = bytearray(), bytearray(), []
    heard = [time.monotonic()]  # when git last gave a byte of output

    def drain(pipe, keep) -> None:
        try:
            while True:
                chunk = pipe.read1(_CHUNK)
                if not chunk or not keep(chunk):
                    return
        except (OSError, ValueError):  # closed under it: the run is over
            return

    def keep_out(chunk: bytes) -> bool:
        heard[0] = time.monotonic()
        if len(out) + len(chunk) > limit:
            over.append(True)
            _kill(proc)
            return False
        out.extend(chunk)
        return True

    def keep_err(chunk: bytes) -> bool:
        err.extend(chunk)
        del err[:-_STDERR_KEPT]
        return True

    readers = [threading.Thread(target=drain, args=a, daemon=True)
               for a in ((proc.stdout, keep_out), (proc.stderr, keep_err))]
    for t in readers:
        t.start()
    stopped = None
    end = heard[0] + timeout * GIT_RUN_LIMIT
    try:
        while proc.poll() is None:
            now = time.monotonic()
            if now >= end:
                stopped = GitStopped(f"{name}: still running after {timeout * GIT_RUN_LIMIT} s; stopped (raise "
                                     f"{GIT_TIMEOUT_ENV}, in seconds, to wait longer)")
            elif now >= heard[0] + timeout:
                stopped = _silent(name, timeout)
            if stopped is not None:
                break
            try:
                proc.wait(min(heard[0] + timeout, end) - now)
            except subprocess.TimeoutExpired:
                pass
    finally:
        if proc.poll() is None:
            _kill(proc)
            proc.wait()
        for t in readers:
            t.join(5)  # the pipes close with the child (git leaves no process holding them)
        proc.stdout.close()
        proc.stderr.close()
    if stopped is not None:
        raise stopped
    if over:
        raise GitStopped(f"{name}: more than {limit} bytes of output; stopped")
    return subprocess.CompletedProcess(argv, proc.returncode, bytes(out), bytes(err))


class GitStream:
    """A streaming git command (cat-file --batch): `read` and `readline` on its stdout (stderr
    discarded), under the same bound as git(): git_timeout() seconds for each piece of an answer
    (a header line, at most _CHUNK bytes of a body), else the child is killed and GitStopped raised.
    Between reads (while the caller works on an answer) no clock runs. `close` ends the child."""

    def __init__(self, args: Sequence[str], cwd: str, stdin: Union[int, IO]):
        self.name = f"git {args[0]}" if args else "git"
        self.timeout = git_timeout()
        self.proc = subprocess.Popen(git_argv(*args), cwd=cwd, stdin=stdin, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=scrubbed_env(_GIT_ENV))
        self._out = self.proc.stdout
        self._cond = threading.Condition()
        self._deadline: Optional[float] = None  # while a read waits: when it is given up
        self._expired = self._closed = False
        self._watch = threading.Thread(target=self._watchdog, daemon=True)
        self._watch.start()

    def _watchdog(self) -> None:
        with self._cond:
            while not self._closed:
                if self._deadline is None:
                    self._cond.wait()
                    continue
                left = self._deadline - time.monotonic()
                if left > 0:
                    self._cond.wait(left)
                    continue
                self._expired = True
                _kill(self.proc)  # the read it blocks returns what there is (EOF)
                return

    def _timed(self, read, n: int) -> bytes:
        with self._cond:
            if self._expired:
                raise _silent(self.name, self.timeout)
            self._deadline = time.monotonic() + self.timeout
            self._cond.notify()
        try:
            data = read(n)
        finally:
            with self._cond:
                self._deadline = None
        if self._expired:
            raise _silent(self.name, self.timeout)
        return data

    def read(self, n: int) -> bytes:
        """n bytes, fewer only at the end of the output."""
        parts, left = [], n
        while left > 0:
            chunk = self._timed(self._out.read1, min(left, _CHUNK))
            if not chunk:
                break
            parts.append(chunk)
            left -= len(chunk)
        return b"".join(parts)

    def readline(self, n: int) -> bytes:
        return self._timed(self._out.readline, n)

    def close(self) -> None:
        """Ends the child: it has answered all it was asked (or the caller stopped asking)."""
        with self._cond:
            self._closed = True
            self._cond.notify()
        self._out.close()
        try:
            self.proc.wait(self.timeout)
        except subprocess.TimeoutExpired:
            _kill(self.proc)
            self.proc.wait()


def git_popen(args: Sequence[str], cwd: str, stdin: Union[int, IO]) -> GitStream:
    """A streaming git command (cat-file --batch), its reads bounded in time: GitStream."""
    return GitStream(args, cwd, stdin)
