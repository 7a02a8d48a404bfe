"""Reading and writing user source files without ever losing them.

read_source() turns every expected problem with an input (missing, directory,
broken symlink, symlink loop, FIFO, unreadable, binary, bad encoding, too
large) into an InputError whose message is one line.

write_source() replaces a file only if
  * the new text still compiles (so never invalid code, never a repeated keyword),
  * the file on disk still has the bytes that were read (no racing editor lost),
  * the file is writable (a read-only file is a user's "do not touch"),
and then does it atomically: temp file in the same directory, fsync, rename
(a swap on Linux, undone if another writer got in: see write_source), with
SIGINT/SIGTERM/SIGHUP held back for that window so an interrupted run leaves
each file either original or fully rewritten and no temp files behind. Only
SIGKILL can leave a temp file; its name holds the writer's pid, and the next
apply in that directory removes it (remove_stale_temps).
Mode, owner (where permitted), encoding (PEP 263 cookie), UTF-8 BOM, line
endings and the trailing-newline state are kept.
"""
from __future__ import annotations

import contextlib
import errno
import io
import os
import re
import signal
import stat
import tempfile
import tokenize
import warnings
from dataclasses import dataclass
from typing import Iterator, List, Optional, Tuple

from .discover import NotRegularFile, file_may_hold_site, may_hold_site, read_regular
from .model import InputError

# Files above this size that could hold a site are refused rather than parsed
# (LibCST on tens of MB takes minutes and GBs). Override with the environment.
DEFAULT_MAX_BYTES = 8 * 1024 * 1024
MAX_BYTES_ENV = "TOPK_MIGRATE_MAX_BYTES"
TEMP_PREFIX = ".topk-migrate-"  # then the writer's pid, "-", mkstemp's random part
TEMP_SUFFIX = ".tmp"
_OUR_TEMP = re.compile(re.escape(TEMP_PREFIX) + r"(\d+)-[A-Za-z0-9_]+" + re.escape(TEMP_SUFFIX))

_DEFERRED_SIGNALS = tuple(
    s for s in (getattr(signal, n, None) for n in ("SIGINT", "SIGTERM", "SIGHUP")) if s is not None
)


@dataclass(frozen=True)
class SourceFile:
    path: str
    text: str  # decoded, newlines exactly as in the file (no universal newlines)
    encoding: str  # codec to write back with; "utf-8-sig" when the file had a BOM
    mode: int = 0o644  # st_mode & 0o7777 of the file read
    uid: int = -1
    gid: int = -1
    size: int = 0

    @property
    def bom(self) -> bool:
        return self.encoding == "utf-8-sig"

    @property
    def digest(self) -> str:
        """sha256 of the bytes read, to detect concurrent edits: the text encodes back to exactly those bytes
        (decode_source refuses a file that does not round-trip), so only a write pays for it."""
        import hashlib

        return hashlib.sha256(self.text.encode(self.encoding)).hexdigest()

    @property
    def newline(self) -> Optional[str]:
        """The file's line ending: "\\n", "\\r\\n", "\\r", "mixed", or None if it has none."""
        crlf = self.text.count("\r\n")
        lf = self.text.count("\n") - crlf
        cr = self.text.count("\r") - crlf
        kinds = [nl for nl, n in (("\n", lf), ("\r\n", crlf), ("\r", cr)) if n]
        return None if not kinds else kinds[0] if len(kinds) == 1 else "mixed"


def max_bytes() -> int:
    from .memory import env_limit

    return env_limit(MAX_BYTES_ENV, DEFAULT_MAX_BYTES)


def input_error(e: OSError, path: str) -> InputError:
    """The one-line InputError for an OSError met while reading `path`."""
    if isinstance(e, NotRegularFile):
        return InputError(e.strerror)
    if e.errno == errno.ENOENT and os.path.islink(path):
        return InputError(f"broken symlink (points to {os.readlink(path)!r})")
    if e.errno == errno.ELOOP:
        return InputError("symlink loop")
    if e.errno == errno.EISDIR:
        return InputError("is a directory")
    return InputError(f"cannot read: {(e.strerror or str(e)).lower()}")


def read_candidate(path: str) -> Optional[Tuple[bytes, os.stat_result]]:
    """The bytes and stat of a file that may hold a site, never holding more than max_bytes() of it:
    a bigger file is scanned in windows and is None when it names no kernel, else InputError
    (a sparse 2 GiB file costs its windows, not 2 GB per worker). OSError as read_regular."""
    limit = max_bytes()
    try:
        return read_regular(path, limit)
    except OSError as e:
        if e.errno != errno.EFBIG:
            raise
    if not file_may_hold_site(path):
        return None
    size = os.stat(path).st_size
    raise InputError(f"file too large ({size} bytes > {limit}); skipped (raise {MAX_BYTES_ENV} to process it)")


def read_source(path: str, limit: Optional[int] = None) -> SourceFile:
    """Read and decode one Python source file, or raise InputError with a one-line reason."""
    try:
        raw, st = read_regular(path)
    except OSError as e:
        raise input_error(e, path) from None
    return decode_source(path, raw, st, limit)


def source_codec(raw: bytes) -> str:
    """The codec Python decodes a source file's bytes with: its PEP 263 cookie's, "utf-8-sig" after a BOM,
    else UTF-8. SyntaxError for a bad declaration."""
    # The cookie may only sit on line 1 or 2, and CPython counts a lone CR as a
    # line end; detect_encoding splits at LF only, so it would search a whole
    # CR-only file as "line 1" and find a stray "coding: x" anywhere in it.
    first_two = re.match(rb"[^\r\n]*(?:\r\n|\r|\n)?[^\r\n]*(?:\r\n|\r|\n)?", raw).group(0)
    return tokenize.detect_encoding(io.BytesIO(first_two.replace(b"\r\n", b"\n").replace(b"\r", b"\n")).readline)[0]


def python_text(raw: bytes) -> str:
    """A source file's bytes as the text Python reads (source_codec), what it cannot decode replaced; a file
    that declares a codec Python does not know (it cannot be imported) as UTF-8."""
    try:
        return raw.decode(source_codec(raw), "replace")
    except (SyntaxError, LookupError):
        return raw.decode("utf-8", "replace")


def decode_source(path: str, raw: bytes, st: os.stat_result, limit: Optional[int] = None) -> SourceFile:
    """The SourceFile for bytes already read from `path` (with their stat), or InputError."""
    limit = max_bytes() if limit is None else limit
    if len(raw) > limit and may_hold_site(raw):
        raise InputError(
            f"file too large ({len(raw)} bytes > {limit}); skipped (raise {MAX_BYTES_ENV} to process it)"
        )
    nul = raw.find(b"\0")
    if nul >= 0:
        raise InputError(f"binary file (NUL byte at offset {nul})")
    try:
        encoding = source_codec(raw)
    except SyntaxError as e:
        raise InputError(f"bad encoding declaration: {e.msg}") from None
    try:
        text = raw.decode(encoding)
    except UnicodeDecodeError as e:
        line = len(re.findall(rb"\r\n|\r|\n", raw[: e.start])) + 1
        name = "utf-8" if encoding == "utf-8-sig" else encoding
        raise InputError(f"not valid {name} at line {line} (byte {e.start})") from None
    if text.encode(encoding) != raw:  # a lossy codec would change bytes we never meant to touch
        raise InputError(f"{encoding} does not round-trip this file's bytes; skipped")
    return SourceFile(path, text, encoding, stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid, len(raw))


_NEWLINE_AT_END = re.compile(r"(\r\n|\r|\n)\Z")


def keep_tail(old: str, new: str) -> str:
    """Give new the trailing-newline state of old (LibCST drops a final lone CR, for one)."""
    o, n = _NEWLINE_AT_END.search(old), _NEWLINE_AT_END.search(new)
    if o and not n:
        return new + o.group(1)
    if n and not o and old:
        return new[: n.start()]
    return new


_PY2_HINTS = (
    (re.compile(r"^\s*print\s+[^\s(=.,)\[]"), "print statement"),
    (re.compile(r"^\s*exec\s+[\"'\w]"), "exec statement"),
    (re.compile(r"^\s*except\s+[\w.(), ]+,\s*\w+\s*:"), "except X, e"),
    (re.compile(r"^\s*raise\s+[\w.]+\s*,"), "raise E, msg"),
    (re.compile(r"\b0[0-7]+\b"), "old octal literal"),
    (re.compile(r"`[^`]*`|<>"), "backticks or <>"),
    (re.compile(r"\bur[\"']", re.I), "ur'' string"),
)


def syntax_error_message(text: str, path: str = "<source>") -> Optional[str]:
    """One line describing why text is not valid Python here, or None if it compiles.

    Adds "looks like Python 2 (...)" when the offending line has a Python 2 idiom.
    """
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(text, path, "exec", dont_inherit=True)
    except SyntaxError as e:
        lines = text.splitlines()
        bad = lines[e.lineno - 1] if e.lineno and 0 < e.lineno <= len(lines) else ""
        hint = next((why for rx, why in _PY2_HINTS if rx.search(bad)), None)
        msg = f"syntax error at line {e.lineno}: {e.msg}"
        return f"{msg} (looks like Python 2: {hint})" if hint else msg
    except (ValueError, RecursionError, MemoryError, OverflowError) as e:
        return f"cannot compile: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}".rstrip(": ")
    return None


def check_rewrite(old: str, new: str, path: str) -> None:
    """Raise InputError unless new is valid Python (whenever old was, on this interpreter)."""
    err = syntax_error_message(new, path)
    if err is None:
        return
    if syntax_error_message(old, path) is not None:
        # The original does not compile on this interpreter either (newer syntax
        # than ours, say): fall back to checking that LibCST can parse the result.
        try:
            import libcst

            libcst.parse_module(new)
            return
        except Exception as e:  # libcst.ParserSyntaxError and friends
            err = f"rewrite does not parse: {str(e).splitlines()[0] if str(e) else type(e).__name__}"
    raise InputError(f"rewrite rejected, file left unchanged: {err}")


@contextlib.contextmanager
def deferred_signals() -> Iterator[None]:
    """Hold SIGINT/SIGTERM/SIGHUP until the block ends; they are delivered right after.

    Uses the thread's signal mask, so it works for the default SIGTERM action
    (kill) as well as for Python's SIGINT handler. A no-op where unavailable.
    """
    if not hasattr(signal, "pthread_sigmask") or not _DEFERRED_SIGNALS:
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, _DEFERRED_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _digest(path: str) -> Optional[str]:
    import hashlib

    h = hashlib.sha256()
    try:
        with open(path, "rb") as f:  # a window at a time: the file may have grown since it was read
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
    except OSError:
        return None
    return h.hexdigest()


def _stamp(st: os.stat_result) -> tuple:
    return (st.st_ino, st.st_dev, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _exchange(a: str, b: str) -> bool:
    """Swap the files at paths a and b atomically (Linux renameat2); False where unsupported."""
    global _renameat2
    if _renameat2 is None:
        try:
            import ctypes

            fn = ctypes.CDLL(None, use_errno=True).renameat2
            fn.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint)
            _renameat2 = fn
        except (OSError, AttributeError):
            _renameat2 = False
    if not _renameat2:
        return False
    import ctypes

    if _renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False  # this file system (or kernel) cannot swap: plain rename
    raise OSError(err, os.strerror(err))


_renameat2 = None  # libc's renameat2 once looked up; False when there is none


def _read_only(path: str, st: os.stat_result) -> bool:
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        return not (st.st_mode & 0o222)  # root may write anything; honour the mode bits
    return not os.access(path, os.W_OK)


def write_source(src: SourceFile, new_text: str) -> bool:
    """Atomically replace src.path with new_text; False if there was nothing to change.

    Raises InputError (file untouched) if the rewrite does not compile, the file
    changed on disk since it was read, it is read-only, or it cannot be written.

    Racing writers: the bytes on disk are compared with those read (digest) after
    the new file is written and synced, then the file's stat is compared again just
    before the swap. On Linux the swap is renameat2(RENAME_EXCHANGE): the original
    comes out under the temporary name, and if it is not the file that was read (an
    editor saved in between), it is swapped back at once and the file is reported,
    not rewritten. What remains: a writer that still holds the original open and
    writes to it after the swap writes to the replaced file (as with any editor's
    atomic save); where RENAME_EXCHANGE is missing (other systems, some file
    systems), a save landing between the last stat and the rename is lost.
    """
    new_text = keep_tail(src.text, new_text)
    if new_text == src.text:
        return False
    check_rewrite(src.text, new_text, src.path)
    try:
        data = new_text.encode(src.encoding)
    except UnicodeEncodeError as e:
        raise InputError(f"rewrite cannot be encoded as {src.encoding} ({e.reason}); file left unchanged") from None
    # Write through a symlink to its target, so the link itself survives.
    real = os.path.realpath(src.path)
    try:
        st = os.stat(real)
    except OSError as e:
        raise InputError(f"cannot write: {(e.strerror or str(e)).lower()}") from None
    if _read_only(real, st):
        raise InputError("read-only file; not overwritten")
    d = os.path.dirname(real)
    with deferred_signals():
        try:
            fd, tmp = tempfile.mkstemp(dir=d, prefix=f"{TEMP_PREFIX}{os.getpid()}-", suffix=TEMP_SUFFIX)
        except OSError as e:
            raise InputError(f"cannot write: {(e.strerror or str(e)).lower()}") from None
        keep = False
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                if hasattr(os, "fchown"):
                    try:
                        os.fchown(f.fileno(), st.st_uid, st.st_gid)
                    except OSError:
                        pass  # not permitted: the file becomes ours, as any editor would do
                os.fsync(f.fileno())
            os.chmod(tmp, stat.S_IMODE(st.st_mode))  # after chown, which may clear set-id bits
            # Last looks before the swap: someone else may have written it meanwhile.
            seen = os.stat(real)
            if _digest(real) != src.digest or _stamp(os.stat(real)) != _stamp(seen):
                raise InputError("changed on disk since it was read; not overwritten")
            if _exchange(tmp, real):
                if _digest(tmp) != src.digest:  # what was swapped out is not what we read
                    keep = True  # until it is back in place, tmp holds the other writer's version
                    _exchange(tmp, real)
                    keep = False
                    raise InputError("changed on disk while being rewritten; the other version is kept, not overwritten")
                os.unlink(tmp)
            else:
                os.replace(tmp, real)
        except BaseException as e:
            if keep:
                raise InputError(f"changed on disk while being rewritten; the other version is in {tmp}") from None
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            if isinstance(e, OSError):
                raise InputError(f"cannot write: {(e.strerror or str(e)).lower()}") from None
            raise
        with contextlib.suppress(OSError):  # make the rename itself durable
            dfd = os.open(d, os.O_RDONLY)
            try:
                os.fsync(dfd)
            finally:
                os.close(dfd)
    return True


def remove_stale_temps(directory: str) -> List[str]:
    """Remove this tool's temporary files in `directory` whose writer is dead (a run killed
    by SIGKILL inside the write window leaves one); returns their names.

    Only what a killed write can have left is touched: a name of our own form (prefix, a pid
    this system can have, mkstemp's suffix), a regular file of ours with mkstemp's mode 0600
    (a checkout, and so a file a fork commits under that name, has its umask's mode), and only
    when no process has that pid: a live run's temp file, and anything else, is left alone."""
    removed = []
    try:
        names = [n for n in os.listdir(directory) if n.startswith(TEMP_PREFIX)]
    except OSError:
        return removed
    uid = os.geteuid() if hasattr(os, "geteuid") else -1
    for name in names:
        m = _OUR_TEMP.fullmatch(name)
        if not m or len(m.group(1)) > 10 or _pid_alive(int(m.group(1))):
            continue
        path = os.path.join(directory, name)
        with contextlib.suppress(OSError):
            st = os.lstat(path)
            if stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600 and st.st_uid in (uid, -1):
                os.unlink(path)
                removed.append(name)
    return removed


def _pid_alive(pid: int) -> bool:
    if pid <= 0 or pid > 2**31 - 1:
        return True  # not a pid we wrote: leave it
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # exists, owned by someone else
    return True
