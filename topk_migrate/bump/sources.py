"""Find a kernel release and read its wrapper signatures, cached by wheel sha256.

A release is named as `NAME==VERSION` (the wheel is downloaded once, without dependencies, into
~/.cache/topk-migrate/wheels), a wheel file, a site-packages directory, a source tree, a
wrapper module file, or a signature JSON file written before. Only the FlashMLA modules' members are
read from a wheel (a 370 MB sglang-kernel wheel is never unpacked): the wrapper module, the modules
beside it whose names start with `flash_mla` (sglang-kernel 0.4.10's `sgl_kernel/flash_mla_mega.py`),
and the package's `__init__` (with the modules it star-imports, one level) for which entry points it
re-exports. What was read is kept as JSON under ~/.cache/topk-migrate/signatures/<sha256>.json, so a
second run needs neither the wheel's bytes nor the index. Before a download one line on stderr says
what is fetched, how big it is and where it goes; on a terminal a progress line follows (quiet=True:
neither).

Every release may come from someone else (a fork's vendored tree, a wheel or signature file it
ships, an index), so reading one is bounded and never runs or follows anything:

* `NAME==VERSION` (no path separator) is always a pin, never the path of that name (`./NAME==VER`
  is one); pip runs isolated (`python -I`) in a private empty directory with the scrubbed
  environment (topk_migrate.subprocesses), and the one wheel it gives must be named for that
  distribution and version before it is cached;
* a wheel's wrapper member is refused past MODULE_LIMIT (its declared size, then the bytes read);
  a source tree's wrapper module must lie inside the directory given (no link out), and is read as
  a regular file under the same cap; dist-info files through project.read_project_file (a FIFO or
  /dev/zero is never read);
* signature JSON (a file or a cache entry) is capped, and its shape checked (Release.from_json);
* whatever a crafted release raises is SourceError: one line, exit 2, never a traceback;
* TOPK_MIGRATE_CACHE: empty is unset, relative is an error; a cache that cannot be written is a
  note (the release is read, not kept).
"""
from __future__ import annotations

import errno
import hashlib
import json
import lzma
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
import zipfile
import zlib
from pathlib import Path
from typing import Optional, Tuple

import click
from packaging.requirements import Requirement
from packaging.utils import parse_wheel_filename
from packaging.version import Version

from topk_migrate import project, rules, subprocesses
from topk_migrate.discover import open_regular, read_regular
from topk_migrate.escape import printable
from topk_migrate.kernels import metadata_fields, normalize
from topk_migrate.model import InputError
from topk_migrate.progress import Progress
from topk_migrate.project import read_project_file

from .signatures import (
    MAX_ENTRY_POINTS,
    Release,
    SignatureError,
    package_names,
    read_module,
    valid_dist,
    valid_version,
    version_shaped,
)

CACHE_ENV = "TOPK_MIGRATE_CACHE"
# Caps on what a release's files may hold (the real ones: a wrapper module of 10-30 KB, signature
# JSON of 4-15 KB). dist-info files have the project files' caps (topk_migrate.project).
MODULE_LIMIT = 4 << 20  # a wrapper module: a wheel member (uncompressed) or a file of a tree
SIGNATURES_LIMIT = 16 << 20  # a signature JSON file or cache entry
INDEX_LIMIT = 4096  # a by-pin cache entry: one sha256
DOWNLOAD_TIMEOUT = 1800
MAX_SIBLINGS = 16  # such modules read from one release (a real one: 0-1)
MAX_STARS = 32  # modules a package's __init__ star-imports that are read for its exports


class SourceError(Exception):
    """A release that cannot be found or read: one line for the user."""


_noted: set = set()


def _note(text: str) -> None:
    """One `note:` line on stderr (escaped), once per process."""
    if text in _noted:
        return
    _noted.add(text)
    click.echo(f"note: {printable(text)}", err=True)


def _why(e: OSError) -> str:
    return (e.strerror or str(e)).lower()


def _kind(e: BaseException) -> str:
    """An exception's type as a reader knows it: `zlib.error`, `RuntimeError`."""
    t = type(e)
    return t.__name__ if t.__module__ == "builtins" else f"{t.__module__.lstrip('_')}.{t.__name__}"


def cache_dir() -> Path:
    """$TOPK_MIGRATE_CACHE (an absolute path; empty is unset), else ~/.cache/topk-migrate.
    SourceError for a relative value: it would be the tree bump runs in, which a fork writes."""
    value = os.environ.get(CACHE_ENV, "")
    if not value:
        try:
            home = Path.home()
        except (RuntimeError, KeyError) as e:
            raise SourceError(f"cannot find the home directory for the cache ({e}); "
                              f"set {CACHE_ENV} to an absolute path") from None
        if not home.is_absolute():
            raise SourceError(f"the home directory {str(home)!r} is not an absolute path; "
                              f"set {CACHE_ENV} to an absolute path for the cache")
        return home / ".cache" / "topk-migrate"
    if not os.path.isabs(value):
        raise SourceError(f"{CACHE_ENV}={value!r} is not an absolute path (a relative cache would be "
                          "the directory bump runs in); set it to an absolute path, or leave it empty")
    return Path(value)


def _cache_unusable(e: OSError) -> None:
    try:
        where = str(cache_dir())
    except SourceError:
        where = "the cache"
    _note(f"cannot write the cache {where} ({_why(e)}); the release is read, not kept")


def pin_of(spec: str) -> Optional[Tuple[str, str]]:
    """(distribution, version) when `spec` is a pin: NAME==VERSION with no path separator. That is a
    pin whatever exists under that name (a path of that form is named `./NAME==VERSION`).

    A requirement as packaging reads it with one `==` specifier (no wildcard, extras, marker nor URL); or
    NAME==VERSION whose VERSION packaging cannot read but is spelt with a version's characters
    (`sgl-kernel==1.0.x`), which load refuses as not a version, not as a path."""
    if "/" in spec or os.sep in spec or (os.altsep and os.altsep in spec):
        return None
    text = spec.strip()
    try:
        req = Requirement(text)
    except Exception:  # InvalidRequirement, or whatever else packaging raises on what it cannot read
        name, eq, version = text.partition("==")
        name, version = name.strip(), version.strip()
        return (name, version) if eq and valid_dist(name) and version_shaped(version) else None
    if req.url or req.marker or req.extras or len(req.specifier) != 1:
        return None
    (only,) = req.specifier
    if only.operator != "==" or only.version.endswith(".*"):
        return None
    return req.name, only.version


def load(spec: str, quiet: bool = False) -> Release:
    """The release named by `spec` (NAME==VER, a .whl, a directory, a wrapper .py file or a signature
    .json). SourceError (one line) for anything that cannot be found or read, whatever it raised.
    quiet: no line (nor progress) on stderr for a download."""
    try:
        return _load(spec, quiet)
    except SourceError:
        raise
    except InputError as e:
        raise SourceError(f"{spec}: {e}") from None
    except RecursionError:
        raise SourceError(f"{spec}: cannot read the release (nesting too deep)") from None
    except Exception as e:  # a crafted release is one line and exit 2, never a traceback (nor exit 1)
        text = str(e)
        text = text if len(text) <= 200 else text[:197] + "..."
        raise SourceError(f"{spec}: cannot read the release ({_kind(e)}: {text})") from None


def _load(spec: str, quiet: bool = False) -> Release:
    pin = pin_of(spec)
    if pin is not None:
        name, version = pin
        if not valid_version(version):
            raise SourceError(f"{spec}: {version!r} is not a version (PEP 440); name a path of that form as ./{spec.strip()}")
        if os.path.lexists(spec.strip()):
            _note(f"{spec.strip()} is read as a pin (NAME==VERSION), not as the path of that name; "
                  f"name the path as ./{spec.strip()}")
        return _from_pin(normalize(name), version, quiet)
    path = Path(spec)
    try:
        st = os.stat(spec)
    except OSError as e:
        if e.errno in (errno.ENOENT, errno.ENOTDIR) and not os.path.lexists(spec):
            if spec.endswith((".whl", ".json", ".py")) or "/" in spec or os.sep in spec:
                raise SourceError(f"{spec}: no such file") from None
            raise SourceError(f"{spec}: not NAME==VERSION, a wheel file or a path") from None
        raise SourceError(f"{spec}: cannot read ({_why(e)})") from None
    if stat.S_ISDIR(st.st_mode):
        return _from_dir(path)
    if path.suffix == ".whl":
        return from_wheel(path)
    if path.suffix == ".json":
        return _from_json(path)
    return _from_module_file(path)


# -- the cache -------------------------------------------------------------------------------

def _write_atomic(path: Path, text: str) -> None:
    """`text` at `path` in the cache: a private temporary file beside it, renamed over it."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".topk-migrate-", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _read_signatures(path: str, text: str) -> Release:
    """The release a signature JSON text holds; SignatureError (a ValueError) otherwise."""
    try:
        data = json.loads(text)
    except RecursionError:
        raise SignatureError("JSON nested too deep") from None
    return Release.from_json(data)


def _cached(sha: str) -> Optional[Release]:
    """The cache entry of the wheel whose sha256 is `sha`; None when there is none, or none of the right shape."""
    f = cache_dir() / "signatures" / f"{sha}.json"
    text = read_project_file(str(f), SIGNATURES_LIMIT)
    if text is None:
        return None
    try:
        release = _read_signatures(str(f), text)
    except (ValueError, MemoryError) as e:
        _note(f"{f}: not a signature file ({e}); the wheel is read again")
        return None
    return release if release.sha256 == sha else None


def _store(release: Release) -> None:
    try:
        d = cache_dir() / "signatures"
        d.mkdir(parents=True, exist_ok=True)
        _write_atomic(d / f"{release.sha256}.json", json.dumps(release.to_json(), indent=1, sort_keys=True))
    except OSError as e:
        _cache_unusable(e)


def _pin_index(dist: str, version: str) -> Path:
    return cache_dir() / "signatures" / "by-pin" / f"{dist}=={version}"


def _same_version(a: Optional[str], b: str) -> bool:
    try:
        return a is not None and Version(a) == Version(b)
    except Exception:  # a version packaging cannot read or compare is no match
        return False


def _pinned(dist: str, version: str) -> Optional[Release]:
    """The cached release the by-pin index names, when it is that distribution and version."""
    text = read_project_file(str(_pin_index(dist, version)), INDEX_LIMIT)
    sha = (text or "").strip()
    if not re.fullmatch(r"[0-9a-f]{64}", sha):
        return None
    hit = _cached(sha)
    if hit is None or hit.dist != dist or not _same_version(hit.version, version):
        return None
    return hit


def _index(dist: str, version: str, release: Release) -> None:
    index = _pin_index(dist, version)
    try:
        index.parent.mkdir(parents=True, exist_ok=True)
        _write_atomic(index, release.sha256 + "\n")
    except OSError as e:
        _cache_unusable(e)


# -- wheels ------------------------------------------------------------------------------------

def wheel_name(filename: str) -> Tuple[Optional[str], Optional[str]]:
    """(normalized distribution, version) a wheel's file name gives (PEP 427, as packaging reads it; the
    version as the name spells it); None for what is not valid."""
    try:
        parse_wheel_filename(filename)
    except Exception:  # InvalidWheelFilename, InvalidVersion (packaging < 23.2), whatever else it raises
        return None, None
    name, version = filename.split("-", 2)[:2]
    return (normalize(name) if valid_dist(name) else None, version if valid_version(version) else None)


def names_release(filename: str, dist: str, version: str) -> bool:
    """Whether a wheel's file name is for that distribution and version (names normalized, PEP 440 equality)."""
    name, got = wheel_name(filename)
    return name is not None and name == normalize(dist) and _same_version(got, version)


def wheel_path(dist: str, version: str) -> Optional[Path]:
    """The cached wheel of a release, if it was downloaded before."""
    d = cache_dir() / "wheels"
    try:
        names = sorted(os.listdir(d))
    except OSError:
        return None
    for name in names:
        if names_release(name, dist, version):
            try:
                if stat.S_ISREG(os.lstat(d / name).st_mode):
                    return d / name
            except OSError:
                continue
    return None


def _hash(f) -> str:
    h = hashlib.sha256()
    for chunk in iter(lambda: f.read(1 << 20), b""):
        h.update(chunk)
    return h.hexdigest()


def from_wheel(path: Path, cached: bool = True) -> Release:
    """Read the wrapper module(s) straight from the wheel's zip members; cached by sha256
    (cached=False reads the wheel again, and refreshes the cache)."""
    path = Path(path)
    try:
        fd, _ = open_regular(str(path))
    except OSError as e:
        raise SourceError(f"{path}: cannot read the wheel ({_why(e)})") from None
    with os.fdopen(fd, "rb") as f:  # one open file: what is hashed is what is read
        try:
            sha = _hash(f)
            hit = _cached(sha) if cached else None
            if hit is not None:
                return hit
            f.seek(0)
        except OSError as e:
            raise SourceError(f"{path}: cannot read the wheel ({_why(e)})") from None
        eps, exports = _read_wheel(f, path)
    dist, version = wheel_name(path.name)
    release = Release(dist, version, f"{path.name} (sha256 {sha[:16]})", eps, sha, exports)
    _store(release)
    return release


def _read_wheel(f, path: Path) -> Tuple[dict, Optional[dict]]:
    """(entry points, exports) of the FlashMLA members of the open wheel `f`; SourceError for any trouble."""
    eps: dict = {}
    exports = None
    module = None
    try:
        with zipfile.ZipFile(f) as z:
            members = set(z.namelist())

            def member(name: str) -> Optional[str]:
                """A member's text; None when absent. SourceError past MODULE_LIMIT."""
                if name not in members:
                    return None
                info = z.getinfo(name)
                if info.file_size > MODULE_LIMIT:
                    raise SourceError(f"{path}: {name} is {info.file_size} bytes (limit {MODULE_LIMIT}); "
                                      "not a FlashMLA wrapper as released")
                with z.open(info) as m:
                    data = m.read(MODULE_LIMIT + 1)
                if len(data) > MODULE_LIMIT:
                    raise SourceError(f"{path}: {name} is over {MODULE_LIMIT} bytes; not a FlashMLA wrapper as released")
                return data.decode("utf-8")

            for module in _modules(sorted(members)):
                _add_module(eps, member(module), module)
            module = None
            exports = _exports(eps, member)
    except SourceError:
        raise
    except InputError as e:
        raise SourceError(f"{path}: {module}: {e}") from None
    except UnicodeDecodeError:
        raise SourceError(f"{path}: {module}: not UTF-8") from None
    except SyntaxError as e:
        raise SourceError(f"{path}: {module}: syntax error at line {e.lineno}: {e.msg}") from None
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, NotImplementedError, RuntimeError,
            ValueError, KeyError, zlib.error, lzma.LZMAError, OverflowError, MemoryError) as e:
        # compression 99 (NotImplementedError), encryption (RuntimeError), a corrupt stream (zlib.error,
        # LZMAError, EOFError, BadZipFile), a truncated or lying central directory
        raise SourceError(f"{path}: cannot read the wheel ({_kind(e)}: {e})") from None
    if not eps:
        raise SourceError(f"{path}: holds no FlashMLA wrapper module ({', '.join(rules.wrapper_modules())})")
    if len(eps) > MAX_ENTRY_POINTS:
        raise SourceError(f"{path}: more than {MAX_ENTRY_POINTS} entry points; not a FlashMLA wrapper as released")
    return eps, exports


def _modules(members) -> list:
    """The kernel's modules among a release's files (paths with `/`): each wrapper module present (the rules'
    wrapper_modules), then the modules beside it whose names start with its own (sgl_kernel/flash_mla_mega.py
    beside flash_mla.py; at most MAX_SIBLINGS)."""
    present = set(members)
    out = [m for m in rules.wrapper_modules() if m in present]
    siblings = []
    for m in out:
        folder, _, own = m.rpartition("/")
        for name in members:
            d, _, base = name.rpartition("/")
            if (d == folder and base.startswith(own[:-3]) and base.endswith(".py") and name not in out
                    and name not in siblings):
                siblings.append(name)
    return out + sorted(siblings)[:MAX_SIBLINGS]


def _add_module(eps: dict, text: Optional[str], module: str) -> None:
    """A module's entry points, added to those read so far (a name already read keeps its first module)."""
    if text is None:
        return
    for name, ep in read_module(text, module).items():
        eps.setdefault(name, ep)


def _exports(eps: dict, member) -> Optional[dict]:
    """package -> the entry points its `__init__` re-exports, for each package of the entry points whose
    `__init__` can be read (member(path) -> text or None): a name it (or a module it star-imports, one
    level) mentions. A package whose names are dynamic, or that star-imports what cannot be read, is
    left out (unknown). None when no `__init__` was read."""
    out: dict = {}
    for package in sorted({e.dotted_module().rpartition(".")[0] for e in eps.values()} - {""}):
        init = package.replace(".", "/") + "/__init__.py"
        try:
            text = member(init)
            if text is None:
                continue
            names, stars, dynamic = package_names(text, init)
            for star in stars[:MAX_STARS]:
                if dynamic:
                    break
                own = [e.name for e in eps.values() if e.dotted_module() == star]
                if own:
                    names |= set(own)
                    continue
                base = star.replace(".", "/")
                got = next(((t, m) for m in (base + ".py", base + "/__init__.py") for t in [member(m)] if t is not None),
                           None)
                if got is None:  # an extension module, or outside the release: anything
                    dynamic = True
                    break
                more, _, more_dynamic = package_names(*got)
                names |= more
                dynamic = dynamic or more_dynamic
        except (SyntaxError, UnicodeDecodeError, InputError):
            continue  # not read: unknown, as if absent
        if dynamic or len(stars) > MAX_STARS:
            continue
        out[package] = sorted(e.name for e in eps.values() if e.name in names
                              and e.dotted_module().rpartition(".")[0] == package)
    return out or None


# -- directories and files ------------------------------------------------------------------------

def _read_module_file(path: Path, module: str) -> dict:
    try:
        raw, _ = read_regular(str(path), MODULE_LIMIT)
        return read_module(raw.decode("utf-8"), module)
    except OSError as e:
        if e.errno == errno.EFBIG:
            raise SourceError(f"{path}: over {MODULE_LIMIT} bytes; not a FlashMLA wrapper as released") from None
        raise SourceError(f"{path}: cannot read ({_why(e)})") from None
    except UnicodeDecodeError:
        raise SourceError(f"{path}: cannot read (not UTF-8)") from None
    except SyntaxError as e:
        raise SourceError(f"{path}: cannot read (syntax error at line {e.lineno}: {e.msg})") from None
    except InputError as e:
        raise SourceError(f"{path}: {e}") from None


def _dist_of(top: str, base: Path, module: str) -> Tuple[Optional[str], Optional[str]]:
    """In site-packages: the distribution whose RECORD lists the module (dist-info files inside `top`
    only, each a regular file under the project files' caps; its METADATA header read as the email parser
    reads it, kernels.metadata_fields; a Name or Version that is not one is left out)."""
    try:
        infos = sorted(n for n in os.listdir(base) if n.endswith(".dist-info"))
    except OSError:
        return None, None
    for info in infos:
        record, meta = str(base / info / "RECORD"), str(base / info / "METADATA")
        if not (project.inside(record, top) and project.inside(meta, top)):
            continue
        text = project.read_project_file(record, project.RECORD_LIMIT)
        if text is None or not any(line.split(",")[0] == module for line in text.splitlines()):
            continue
        text = project.read_project_file(meta, project.PROJECT_FILE_LIMIT)
        if text is None:
            continue
        name, version, _ = metadata_fields(text)
        if name is not None and not valid_dist(name) or version is not None and not valid_version(version):
            _note(f"{base / info}/METADATA: its Name or Version is not valid; the release is shown by its path")
            return None, None
        return (normalize(name) if name else None, version)
    return None, None


def _from_dir(root: Path) -> Release:
    """site-packages or a source tree: the wrapper modules at the top, or one or two levels down
    (sgl-kernel's tree keeps them under python/), with the FlashMLA modules beside them and their
    package's `__init__`. Nothing is read from outside `root`."""
    top = os.path.realpath(root)
    eps, dist, version, read = {}, None, None, []
    exports: dict = {}
    for module in rules.wrapper_modules():
        for base in (root, root / "python", root / "sgl-kernel" / "python"):
            f = base / module
            if not os.path.lexists(f):
                continue
            if not project.inside(str(f), top):
                raise SourceError(f"{f}: a symlink leading out of {root}; a release's files are read only "
                                  "from inside the directory given (name the target itself to read it)")
            folder = module.rpartition("/")[0]
            try:
                beside = sorted(f"{folder}/{n}" for n in os.listdir(base / folder))
            except OSError:
                beside = []
            mine: dict = {}
            for m in [module] + [m for m in _modules(beside) if m != module and m not in rules.wrapper_modules()]:
                text = _dir_member(base, top, m, strict=m == module)
                try:
                    _add_module(mine, text, m)
                except SyntaxError as e:
                    raise SourceError(f"{base / m}: cannot read (syntax error at line {e.lineno}: {e.msg})") from None
                except InputError as e:
                    raise SourceError(f"{base / m}: {e}") from None
            for name, ep in mine.items():
                eps.setdefault(name, ep)
            read.append(str(f))
            exports.update(_exports(mine, lambda m, base=base: _dir_member(base, top, m)) or {})
            if dist is None:
                dist, version = _dist_of(top, base, module)
            break
    if not eps:
        raise SourceError(f"{root}: holds no FlashMLA wrapper module ({', '.join(rules.wrapper_modules())})")
    return Release(dist, version, ", ".join(read), eps, None, exports or None)


def _dir_member(base: Path, top: str, module: str, strict: bool = False) -> Optional[str]:
    """The text of `module` under `base`, read as a regular file inside `top` under MODULE_LIMIT; None
    when absent (or, unless strict, not readable as one: a link out, another kind of file)."""
    f = base / module
    if not os.path.lexists(f):
        return None
    if not project.inside(str(f), top):
        if strict:
            raise SourceError(f"{f}: a symlink leading out of {base}; a release's files are read only "
                              "from inside the directory given (name the target itself to read it)")
        return None
    try:
        raw, _ = read_regular(str(f), MODULE_LIMIT)
    except OSError as e:
        if strict or e.errno == errno.EFBIG:
            raise SourceError(f"{f}: " + (f"over {MODULE_LIMIT} bytes; not a FlashMLA wrapper as released"
                                          if e.errno == errno.EFBIG else f"cannot read ({_why(e)})")) from None
        return None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise SourceError(f"{f}: cannot read (not UTF-8)") from None


def _from_module_file(path: Path) -> Release:
    module = next((m for m in rules.wrapper_modules() if str(path).replace(os.sep, "/").endswith(m)), path.name)
    return Release(None, None, str(path), _read_module_file(path, module))


def _from_json(path: Path) -> Release:
    """Signatures saved before (`Release.to_json`): a release read once, kept with the project."""
    try:
        raw, _ = read_regular(str(path), SIGNATURES_LIMIT)
    except OSError as e:
        raise SourceError(f"{path}: cannot read ({_why(e)})") from None
    try:
        release = _read_signatures(str(path), raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise SourceError(f"{path}: not a signature file (not UTF-8)") from None
    except ValueError as e:
        raise SourceError(f"{path}: not a signature file ({e})") from None
    release.origin = f"{path}, saved from {release.origin}"
    return release


# -- NAME==VERSION -----------------------------------------------------------------------------------

def _from_pin(dist: str, version: str, quiet: bool = False) -> Release:
    hit = _pinned(dist, version)
    if hit is not None:
        return hit
    wheel = wheel_path(dist, version)
    if wheel is not None:
        release = from_wheel(wheel)
    else:
        release = _download_and_read(dist, version, quiet)
    _index(dist, version, release)
    return release


def _download_and_read(dist: str, version: str, quiet: bool = False) -> Release:
    """The release downloaded into the cache; into a temporary folder, read and removed, when the
    cache cannot be written."""
    try:
        wheel = _download(dist, version, cache_dir() / "wheels", quiet)
    except _CacheUnwritable as e:
        _cache_unusable(e.error)
        with tempfile.TemporaryDirectory(prefix="topk-migrate-download-") as tmp:
            tmp = os.path.abspath(tmp)
            return from_wheel(Path(tmp) / _download_into(dist, version, tmp, quiet, "a temporary folder"))
    return from_wheel(wheel)


class _CacheUnwritable(Exception):
    def __init__(self, error: OSError):
        self.error = error


def _download(dist: str, version: str, dest: Path, quiet: bool = False) -> Path:
    """Into a private temporary folder, checked, then renamed into `dest`: a second run (or a test
    worker) never sees half a wheel, nor one of another release. The wheel's path."""
    try:
        dest.mkdir(parents=True, exist_ok=True)
        tmp = tempfile.mkdtemp(prefix=".download-", dir=dest)
    except OSError as e:
        raise _CacheUnwritable(e) from None
    try:
        name = _download_into(dist, version, os.path.abspath(tmp), quiet, str(dest))
        try:
            os.replace(os.path.join(tmp, name), dest / name)
        except OSError as e:
            raise _CacheUnwritable(e) from None
        return dest / name
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def check_download(dist: str, version: str, folder: str) -> str:
    """The file name of the one wheel pip put in `folder`, if it is for `dist`==`version`; SourceError
    otherwise (more files, none, another release's wheel, not a regular file)."""
    try:
        names = sorted(os.listdir(folder))
    except OSError as e:
        raise SourceError(f"{dist}=={version}: cannot read the download ({_why(e)})") from None
    if len(names) != 1 or not names[0].endswith(".whl"):
        got = ", ".join(printable(n) for n in names[:5]) or "nothing"
        raise SourceError(f"{dist}=={version}: the download gave {got}, not one wheel; not used")
    name = names[0]
    if not names_release(name, dist, version):
        raise SourceError(f"{dist}=={version}: the download gave {name!r}, not a wheel of {dist}=={version}; not used")
    try:
        if not stat.S_ISREG(os.lstat(os.path.join(folder, name)).st_mode):
            raise SourceError(f"{dist}=={version}: the download gave {name!r}, not a regular file; not used")
    except OSError as e:
        raise SourceError(f"{dist}=={version}: cannot read the download ({_why(e)})") from None
    return name


# pip's line before it fetches a file: `Downloading sglang_kernel-0.4.10-...whl (373.0 MB)`, or
# `Using cached ...` when its own cache has it.
_PIP_FETCH = re.compile(r"^\s*(Downloading|Using cached)\s+(\S+)\s+\(([^()]{1,40})\)\s*$")
_UNITS = {"B": 1, "kB": 1e3, "KB": 1e3, "MB": 1e6, "GB": 1e9}


class _Announce:
    """What bump says of a download on stderr: one line before it (what, how big, where to), and on a
    terminal a progress line (audit's Progress) while it runs; quiet: nothing."""

    def __init__(self, pin: str, where: str, quiet: bool, scratch: str):
        self.pin, self.where, self.quiet, self.scratch = pin, where, quiet, scratch
        self.said = False
        self.name, self.size, self.total = "the wheel", "size not given", 0.0
        self.progress = Progress(not quiet and sys.stderr.isatty())
        self.done = threading.Event()
        self.lock = threading.Lock()

    def line(self, text: str) -> None:
        """A line of pip's output."""
        m = _PIP_FETCH.match(text)
        if m:
            name = m.group(2).split("#")[0].split("?")[0].rstrip("/").rsplit("/", 1)[-1]
            number, _, unit = m.group(3).partition(" ")
            try:
                total = float(number) * _UNITS.get(unit, 0)
            except ValueError:
                total = 0.0
            self.say(name, m.group(3), total, m.group(1) == "Using cached")

    def say(self, name: str, size: str, total: float = 0.0, cached: bool = False) -> None:
        with self.lock:
            if self.said:
                return
            self.said, self.name, self.size, self.total = True, name, size, total
        if self.quiet:
            return
        source = " from pip's cache" if cached else ""
        _echo_err(printable(f"downloading {self.pin}: {name} ({size}){source} into {self.where}"))

    def watch(self) -> None:
        """Until done: the bytes pip has written so far (the biggest file in its scratch folder)."""
        while not self.done.wait(0.25):
            got = _biggest(self.scratch)
            if got and not self.said:
                self.say(self.name, self.size)
            if got and self.progress.enabled:
                of = f" of {self.total / 1e6:.1f} MB" if self.total else ""
                self.progress.show(printable(f"downloading {self.name}: {got / 1e6:.1f} MB{of}"))

    def close(self) -> None:
        self.done.set()
        self.progress.close()


def _echo_err(text: str) -> None:
    click.echo(text, err=True)


def _biggest(folder: str, limit: int = 2000) -> int:
    """The size of the biggest regular file under `folder` (a few levels, at most `limit` entries)."""
    best, seen = 0, 0
    for top, dirs, files in os.walk(folder):
        if top[len(folder):].count(os.sep) >= 3:
            dirs[:] = []
        for f in files:
            seen += 1
            if seen > limit:
                return best
            try:
                st = os.lstat(os.path.join(top, f))
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode):
                best = max(best, st.st_size)
    return best


def _run_pip(argv, on_line, timeout: float, env: dict) -> Tuple[int, str]:
    """argv (pip) in a fresh private directory with the scrubbed environment plus `env`: each line of
    its stdout to on_line as it comes, (exit status, the end of its stderr). Killed past `timeout`
    (subprocess.TimeoutExpired); OSError where it cannot start."""
    with tempfile.TemporaryDirectory(prefix="topk-migrate-run-") as private:
        proc = subprocess.Popen(list(argv), cwd=private, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, errors="replace", env=subprocesses.scrubbed_env(env))
        err: list = []

        def drain() -> None:  # the end of stderr (its last lines hold the error)
            kept = ""
            for chunk in iter(lambda: proc.stderr.read(1 << 14), ""):
                kept = (kept + chunk)[-(1 << 16):]
            err.append(kept)

        reader = threading.Thread(target=drain, daemon=True)
        reader.start()
        timer = threading.Timer(timeout, proc.kill)
        timer.start()
        try:
            for line in iter(lambda: proc.stdout.readline(1 << 16), ""):
                on_line(line)
            proc.wait()
        finally:
            timed_out = not timer.is_alive() and proc.returncode is not None and proc.returncode < 0
            timer.cancel()
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            reader.join(5)
        if timed_out:
            raise subprocess.TimeoutExpired(argv, timeout)
        return proc.returncode, "".join(err)


def _download_into(dist: str, version: str, dest: str, quiet: bool = False, where: Optional[str] = None) -> str:
    """pip, isolated (no current directory or PYTHON* on its path) in a private empty directory with
    the scrubbed environment (the user's PIP_* settings kept); the checked wheel's file name. `where`:
    the folder the wheel is kept in, for the line said before the download."""
    base = [*_pip_argv(), "download", "--no-deps", "--only-binary=:all:", "--progress-bar", "off",
            "--disable-pip-version-check", "-d", dest]
    # The wrapper is pure Python: any platform's wheel will do, so retry for Linux x86-64 if this
    # machine's platform has none.
    attempts = ([], ["--platform", "manylinux2014_x86_64", "--python-version", "3.10", "--implementation", "cp"])
    err = ""
    with tempfile.TemporaryDirectory(prefix="topk-migrate-pip-") as scratch:  # pip's TMPDIR: what it has so far
        for extra in attempts:
            announce = _Announce(f"{dist}=={version}", where or dest, quiet, scratch)
            watcher = threading.Thread(target=announce.watch, daemon=True)
            watcher.start()
            try:
                rc, stderr = _run_pip(base + extra + [f"{dist}=={version}"], announce.line, DOWNLOAD_TIMEOUT,
                                      {"TMPDIR": scratch})
            except (OSError, subprocess.TimeoutExpired) as e:
                err = str(e)
                continue
            finally:
                announce.close()
                watcher.join(5)
            if rc == 0:
                return check_download(dist, version, dest)
            err = next((ln for ln in reversed((stderr or "").splitlines())
                        if ln.strip() and not ln.startswith("WARNING")), "")
    raise SourceError(f"cannot download {dist}=={version} ({err.strip()[:300] or 'pip failed'}); "
                      "pass a wheel file or a path (site-packages or a source tree) instead")


def _pip_argv() -> list:
    return subprocesses.python_argv("-m", "pip")
