"""The one way a command writes a report file (`audit -o`, `bump -o`, `smoke --json`).

The docs put `-o` inside the checkout being audited, so the path may name something the fork
committed: a symlink to `~/.bashrc`, to a tool in a writable bin, or a directory link leading
out. Therefore:

* a symlink is never written through: not as the last component, and, for a relative path (the
  one a fork can predict), not as any directory on the way;
* the report is a new file put in place by an atomic rename (a failed or killed run leaves the
  previous report whole), and never keeps execute or set-id bits of the file it replaces;
* what is not a regular file is written into, not replaced, only where that is safe: a FIFO
  (opened without blocking: with no reader it is an error, not a hang), and the streams under
  /dev and /proc a user names (`-o /dev/stdout`, `-o >(cmd)`, `-o /dev/null`); a device or socket
  elsewhere is refused.
"""
from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile

SYSTEM_STREAMS = ("/dev/", "/proc/")


def _refuse(why: str) -> OSError:
    return OSError(errno.EPERM, why)


def _no_links_on_the_way(path: str) -> None:
    """A relative path's directories, from the current one down, are real directories."""
    if os.path.isabs(path):
        return
    parts = os.path.normpath(path).split(os.sep)[:-1]
    at = ""
    for part in parts:
        at = os.path.join(at, part) if at else part
        if part == "..":
            continue
        with contextlib.suppress(FileNotFoundError):
            if stat.S_ISLNK(os.lstat(at).st_mode):
                raise _refuse(f"{at} is a symbolic link; a report is never written through one")


def _write_into(path: str, data: bytes) -> None:
    """Write into an existing stream (FIFO, /dev/stdout) by the name given."""
    fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        os.set_blocking(fd, True)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)


def write_output(path: str, text: str) -> None:
    """Put `text` (UTF-8) at `path` as the module docstring says; OSError with a one-line reason if refused."""
    data = text.encode("utf-8", "backslashreplace")
    if os.path.isabs(path) and path.startswith(SYSTEM_STREAMS):
        _write_into(path, data)
        return
    _no_links_on_the_way(path)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        st = None
    if st is not None:
        if stat.S_ISLNK(st.st_mode):
            raise _refuse("is a symbolic link; a report is never written through one (name its target)")
        if stat.S_ISFIFO(st.st_mode):
            _write_into(path, data)
            return
        if stat.S_ISDIR(st.st_mode):
            raise OSError(errno.EISDIR, "is a directory")
        if not stat.S_ISREG(st.st_mode):
            raise _refuse("not a regular file; a report replaces only a regular file")
        mode = stat.S_IMODE(st.st_mode) & 0o666
    else:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    parent = os.path.dirname(path) or "."
    fd, tmp = tempfile.mkstemp(dir=parent, prefix=".topk-migrate-report-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
