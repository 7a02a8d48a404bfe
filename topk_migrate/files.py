"""Reading and writing user source files without ever losing them."""
from __future__ import annotations

import hashlib
import os
import tempfile
from dataclasses import dataclass

from .model import InputError


@dataclass(frozen=True)
class SourceFile:
    path: str
    text: str  # decoded, newlines as in the file
    encoding: str
    digest: str  # sha256 of the bytes read, to detect concurrent edits


def read_source(path: str) -> SourceFile:
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise InputError(f"cannot read: {e.strerror or e}") from None
    encoding = "utf-8-sig" if raw.startswith(b"\xef\xbb\xbf") else "utf-8"
    try:
        text = raw.decode(encoding)
    except UnicodeDecodeError as e:
        raise InputError(f"not valid {encoding} at byte {e.start}") from None
    return SourceFile(path, text, encoding, hashlib.sha256(raw).hexdigest())


def write_source(src: SourceFile, new_text: str) -> None:
    """Atomically replace src.path with new_text, unless it changed since it was read."""
    with open(src.path, "rb") as f:
        if hashlib.sha256(f.read()).hexdigest() != src.digest:
            raise InputError("changed on disk since it was read; not overwritten")
    data = new_text.encode(src.encoding)
    d = os.path.dirname(os.path.abspath(src.path))
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".topk-migrate-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, os.stat(src.path).st_mode & 0o7777)
        os.replace(tmp, src.path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
