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
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from typing import IO, List, Mapping, Optional, Sequence, Union

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


def git(args: Sequence[str], cwd: str, stdin: Union[None, int, IO] = subprocess.DEVNULL) -> subprocess.CompletedProcess:
    """A git command in the repository at `cwd`, as the module docstring says."""
    return run(git_argv(*args), cwd=cwd, stdin=stdin, env=_GIT_ENV)


def git_popen(args: Sequence[str], cwd: str, stdin: Union[int, IO]) -> subprocess.Popen:
    """A streaming git command (cat-file --batch): stdout a pipe, stderr discarded."""
    return subprocess.Popen(git_argv(*args), cwd=cwd, stdin=stdin, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=scrubbed_env(_GIT_ENV))
