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
SIGKILL can leave a temp file; its name holds the writer's pid and a tag that
only this user's runs can make, and the next apply in that directory removes it
(remove_stale_temps).
Mode, owner (where permitted), encoding (PEP 263 cookie), UTF-8 BOM, line
endings and the trailing-newline state are kept.
"""
from __future__ import annotations

import contextlib
import errno
import hashlib
import hmac
import io
import os
import re
import secrets
import signal
import stat
import tempfile
import tokenize
import warnings
from dataclasses import dataclass
from typing import Dict, Iterator, List, Optional, Tuple

from .discover import NotRegularFile, Prefilter, may_hold_site, prefilter_for, read_regular
from .model import InputError

# Files above this size that could hold a site are refused rather than parsed
# (LibCST on tens of MB takes minutes and GBs). Override with the environment.
DEFAULT_MAX_BYTES = 8 * 1024 * 1024
MAX_BYTES_ENV = "TOPK_MIGRATE_MAX_BYTES"
TEMP_PREFIX = ".topk-migrate-"  # then the writer's pid, "-", mkstemp's random part, "-", the tag (_claim)
TEMP_SUFFIX = ".tmp"
_OUR_TEMP = re.compile(re.escape(TEMP_PREFIX) + r"((\d{1,10})-[A-Za-z0-9_]+)-([0-9a-f]{32})" + re.escape(TEMP_SUFFIX))
TEMP_KEY = "temp-key"  # in the cache directory: this user's secret, which tags the temp files its runs make
_KEY_BYTES = 32

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
    from .memory import env_limit  # noqa: PLC0415 - self-contained: files, model, discover read alone (test_unreadable_file)

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


def read_candidate(path: str, prefilter: Optional[Prefilter] = None) -> Optional[Tuple[bytes, os.stat_result]]:
    """The bytes and stat of a file that may hold a site, never holding more than max_bytes() of it:
    a bigger file is scanned in windows and is None when `prefilter` (default: the rules on by default,
    check's) finds no name in it, else InputError (a sparse 2 GiB file costs its windows, not 2 GB per
    worker). OSError as read_regular."""
    limit = max_bytes()
    try:
        return read_regular(path, limit)
    except OSError as e:
        if e.errno != errno.EFBIG:
            raise
    if not (prefilter or prefilter_for()).matches_file(path):
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
    # `except\s+[\w.(), ]+` split a run of blanks between \s+ and the class in every way: quadratic in
    # the line. The same language with one split: blanks ending in one that is not a space, or one space.
    (re.compile(r"^\s*except(?:\s*[^\S ]|[ ])[\w.(), ]+,\s*\w+\s*:"), "except X, e"),
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
            import libcst  # noqa: PLC0415 - libcst: only where CPython cannot compile the original

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
            import ctypes  # noqa: PLC0415 - on demand: ctypes only for renameat2 (Linux)

            fn = ctypes.CDLL(None, use_errno=True).renameat2
            fn.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint)
            _renameat2 = fn
        except (OSError, AttributeError):
            _renameat2 = False
    if not _renameat2:
        return False
    import ctypes  # noqa: PLC0415 - on demand: ctypes only for renameat2 (Linux)

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
    key = temp_key()
    with deferred_signals():
        try:
            fd, tmp = tempfile.mkstemp(dir=d, prefix=f"{TEMP_PREFIX}{os.getpid()}-", suffix=TEMP_SUFFIX)
        except OSError as e:
            raise InputError(f"cannot write: {(e.strerror or str(e)).lower()}") from None
        tmp = _claim(fd, tmp, key)
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


# -- temporary files a killed run left -------------------------------------------------------------
#
# A name proves nothing: a fork can commit a file under any name, with any pid in it, and the mode
# a checkout gets is the umask's (under umask 077, or from a tar extracted as root, 0600, mkstemp's
# own). So a temp file is ours only if its name carries a tag that nothing but this user's runs can
# make: an HMAC, under a secret kept in the user's cache directory (TEMP_KEY, made once, 0600), of the
# name and of the inode the name was given to. A committed file cannot carry it (the fork does not
# know the key); and once the swap of write_source has put another file (the original, or another
# writer's version) under the temp name, that name no longer matches its inode and is kept.


def _key_dir() -> Optional[str]:
    """The cache directory bump uses (bump.sources.cache_dir, whose module is not imported for this):
    $TOPK_MIGRATE_CACHE when absolute, else ~/.cache/topk-migrate; None where neither can be had."""
    value = os.environ.get("TOPK_MIGRATE_CACHE", "")
    if value:
        return value if os.path.isabs(value) else None  # relative: the tree it runs in, which a fork writes
    home = os.path.expanduser("~")
    return os.path.join(home, ".cache", "topk-migrate") if os.path.isabs(home) else None


def _read_key(path: str) -> Optional[bytes]:
    """The key at `path`: a regular file of ours that no one else may read or write, of _KEY_BYTES."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        mine = not hasattr(os, "geteuid") or st.st_uid == os.geteuid()
        if not stat.S_ISREG(st.st_mode) or st.st_size != _KEY_BYTES or st.st_mode & 0o077 or not mine:
            return None
        data = os.read(fd, _KEY_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    return data if len(data) == _KEY_BYTES else None


_keys: Dict[str, Optional[bytes]] = {}


def temp_key() -> Optional[bytes]:
    """This user's secret for tagging temp files (TEMP_KEY in the cache directory; made, privately and
    whole, the first time), or None where there is none to be had (then no temp file is ever removed)."""
    d = _key_dir()
    if d is None:
        return None
    if d not in _keys:
        path = os.path.join(d, TEMP_KEY)
        key = _read_key(path)
        if key is None:
            with contextlib.suppress(OSError):
                os.makedirs(d, mode=0o700, exist_ok=True)
                fd, new = tempfile.mkstemp(dir=d, prefix=".temp-key-")
                try:
                    with os.fdopen(fd, "wb") as f:
                        f.write(secrets.token_bytes(_KEY_BYTES))
                        f.flush()
                        os.fsync(f.fileno())
                    with contextlib.suppress(FileExistsError):  # another run made it first: theirs is read
                        os.link(new, path)  # whole or not at all, never over another
                finally:
                    os.unlink(new)
            key = _read_key(path)
        _keys[d] = key
    return _keys[d]


def _tag(key: bytes, stem: str, inode: int) -> str:
    return hmac.new(key, f"{stem}\0{inode}".encode(), hashlib.sha256).hexdigest()[:32]


def _claim(fd: int, tmp: str, key: Optional[bytes]) -> str:
    """The new temp file `tmp` (open as `fd`) renamed to carry its tag (the key's HMAC of its name and
    inode); `tmp` as it is where there is no key or the rename fails (it is then never removed). The
    tagged name cannot exist already: no one without the key can make it."""
    if key is None:
        return tmp
    stem = os.path.basename(tmp)[len(TEMP_PREFIX) : -len(TEMP_SUFFIX)]
    tagged = os.path.join(os.path.dirname(tmp), f"{TEMP_PREFIX}{stem}-{_tag(key, stem, os.fstat(fd).st_ino)}{TEMP_SUFFIX}")
    try:
        os.rename(tmp, tagged)
    except OSError:
        return tmp
    return tagged


def remove_stale_temps(directory: str) -> List[str]:
    """Remove this tool's temporary files in `directory` whose writer is dead (a run killed
    by SIGKILL inside the write window leaves one); returns their names.

    A file is ours only by its tag (see above): a name of our form whose tag is the HMAC, under this
    user's key, of its name and of the inode it names now, a regular file owned by us. Never by its
    mode. And only when no process has the pid in its name: a live run's temp file is left alone.
    Without a key nothing is removed."""
    removed: List[str] = []
    try:
        names = [n for n in os.listdir(directory) if n.startswith(TEMP_PREFIX)]
    except OSError:
        return removed
    uid = os.geteuid() if hasattr(os, "geteuid") else -1
    key = None
    for name in names:
        m = _OUR_TEMP.fullmatch(name)
        if not m or _pid_alive(int(m.group(2))):
            continue
        key = key or temp_key()
        if key is None:
            return removed
        path = os.path.join(directory, name)
        with contextlib.suppress(OSError):
            st = os.lstat(path)
            if stat.S_ISREG(st.st_mode) and st.st_uid in (uid, -1) and \
                    hmac.compare_digest(m.group(3), _tag(key, m.group(1), st.st_ino)):
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
