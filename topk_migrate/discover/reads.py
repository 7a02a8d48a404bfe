"""Reading a file the way every run does: regular files only (never blocking on a FIFO), bounded where asked."""
from __future__ import annotations

import errno
import os
import stat
from typing import Callable, Optional, Tuple

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


def why_unreadable(path: str) -> str:
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
