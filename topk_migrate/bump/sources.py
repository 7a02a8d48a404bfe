"""Find a kernel release and read its wrapper signatures, cached by wheel sha256.

A release is named as `NAME==VERSION` (the wheel is downloaded once, without dependencies, into
~/.cache/topk-migrate/wheels), a wheel file, a site-packages directory, a source tree, a
wrapper module file, or a signature JSON file written before. Only the wrapper module's members are read from a wheel (a 370 MB
sglang-kernel wheel is never unpacked), and what was read is kept as JSON under
~/.cache/topk-migrate/signatures/<sha256>.json, so a second run needs neither the wheel's
bytes nor the index.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Optional, Tuple

from .signatures import SCHEMA, WRAPPER_MODULES, Release, read_module


class SourceError(Exception):
    """A release that cannot be found or read: one line for the user."""


def cache_dir() -> Path:
    return Path(os.environ.get("TOPK_MIGRATE_CACHE", Path.home() / ".cache" / "topk-migrate"))


PIN = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*==\s*([A-Za-z0-9][A-Za-z0-9.+!_-]*)\s*$")


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def load(spec: str) -> Release:
    """The release named by `spec` (NAME==VER, a .whl, a directory or a wrapper .py file)."""
    path = Path(spec)
    if spec.endswith(".whl") or path.exists():
        if not path.exists():
            raise SourceError(f"{spec}: no such file")
        if path.is_dir():
            return _from_dir(path)
        if path.suffix == ".whl":
            return from_wheel(path)
        if path.suffix == ".json":
            return _from_json(path)
        return _from_module_file(path)
    m = PIN.match(spec)
    if not m:
        raise SourceError(f"{spec}: not NAME==VERSION, a wheel file or a path")
    return _from_pin(_norm(m.group(1)), m.group(2))


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _cached(sha: str) -> Optional[Release]:
    f = cache_dir() / "signatures" / f"{sha}.json"
    try:
        data = json.loads(f.read_text())
    except (OSError, ValueError):
        return None
    return Release.from_json(data) if data.get("schema") == SCHEMA else None


def _store(release: Release) -> None:
    d = cache_dir() / "signatures"
    d.mkdir(parents=True, exist_ok=True)
    tmp = d / f".{release.sha256}.{os.getpid()}.tmp"
    tmp.write_text(json.dumps(release.to_json(), indent=1, sort_keys=True))
    os.replace(tmp, d / f"{release.sha256}.json")


def _wheel_name(path: Path) -> Tuple[Optional[str], Optional[str]]:
    parts = path.name[:-len(".whl")].split("-")
    return (_norm(parts[0]), parts[1]) if len(parts) >= 5 else (None, None)


def from_wheel(path: Path, cached: bool = True) -> Release:
    """Read the wrapper module(s) straight from the wheel's zip members; cached by sha256
    (cached=False reads the wheel again, and refreshes the cache)."""
    sha = _sha256(path)
    hit = _cached(sha) if cached else None
    if hit is not None:
        return hit
    dist, version = _wheel_name(path)
    eps = {}
    try:
        with zipfile.ZipFile(path) as z:
            names = set(z.namelist())
            for module in WRAPPER_MODULES:
                if module in names:
                    eps.update(read_module(z.read(module).decode("utf-8"), module))
    except (zipfile.BadZipFile, OSError, SyntaxError, UnicodeDecodeError) as e:
        raise SourceError(f"{path}: cannot read the wheel ({e})") from None
    if not eps:
        raise SourceError(f"{path}: holds no FlashMLA wrapper module ({', '.join(WRAPPER_MODULES)})")
    release = Release(dist, version, f"{path.name} (sha256 {sha[:16]})", eps, sha)
    _store(release)
    return release


def _dist_of(root: Path, module: str) -> Tuple[Optional[str], Optional[str]]:
    """In site-packages: the distribution whose RECORD lists the module."""
    for info in sorted(root.glob("*.dist-info")):
        try:
            if not any(line.split(",")[0] == module for line in (info / "RECORD").read_text().splitlines()):
                continue
            meta = (info / "METADATA").read_text(errors="replace")
        except OSError:
            continue
        name = re.search(r"^Name:\s*(\S+)", meta, re.M)
        version = re.search(r"^Version:\s*(\S+)", meta, re.M)
        return (_norm(name.group(1)) if name else None, version.group(1) if version else None)
    return None, None


def _from_dir(root: Path) -> Release:
    """site-packages or a source tree: the wrapper modules at the top, or one or two levels down
    (sgl-kernel's tree keeps them under python/)."""
    eps, dist, version, read = {}, None, None, []
    for module in WRAPPER_MODULES:
        for base in (root, root / "python", root / "sgl-kernel" / "python"):
            f = base / module
            if f.is_file():
                try:
                    eps.update(read_module(f.read_text(encoding="utf-8"), module))
                except (OSError, SyntaxError, UnicodeDecodeError) as e:
                    raise SourceError(f"{f}: cannot read ({e})") from None
                read.append(str(f))
                if dist is None:
                    dist, version = _dist_of(base, module)
                break
    if not eps:
        raise SourceError(f"{root}: holds no FlashMLA wrapper module ({', '.join(WRAPPER_MODULES)})")
    return Release(dist, version, ", ".join(read), eps)


def _from_module_file(path: Path) -> Release:
    module = next((m for m in WRAPPER_MODULES if str(path).replace(os.sep, "/").endswith(m)), path.name)
    try:
        eps = read_module(path.read_text(encoding="utf-8"), module)
    except (OSError, SyntaxError, UnicodeDecodeError) as e:
        raise SourceError(f"{path}: cannot read ({e})") from None
    return Release(None, None, str(path), eps)


def _from_json(path: Path) -> Release:
    """Signatures saved before (`Release.to_json`): a release read once, kept with the project."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("schema") != SCHEMA:
            raise ValueError(f"schema {data.get('schema')!r}, expected {SCHEMA}")
        return Release.from_json(data)
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise SourceError(f"{path}: not a signature file ({e})") from None


def _pin_index(dist: str, version: str) -> Path:
    return cache_dir() / "signatures" / "by-pin" / f"{dist}=={version}"


def wheel_path(dist: str, version: str) -> Optional[Path]:
    """The cached wheel of a release, if it was downloaded before."""
    found = sorted((cache_dir() / "wheels").glob(f"{_norm(dist).replace('-', '_')}-{version}-*.whl"))
    return found[0] if found else None


def _from_pin(dist: str, version: str) -> Release:
    index = _pin_index(dist, version)
    try:
        hit = _cached(index.read_text().strip())
        if hit is not None:
            return hit
    except OSError:
        pass
    wheel = wheel_path(dist, version)
    if wheel is None:
        _download(dist, version, cache_dir() / "wheels")
        wheel = wheel_path(dist, version)
        if wheel is None:
            raise SourceError(f"{dist}=={version}: the download gave no wheel; pass a wheel file or a path")
    release = from_wheel(wheel)
    index.parent.mkdir(parents=True, exist_ok=True)
    index.write_text(release.sha256 + "\n")
    return release


def _download(dist: str, version: str, dest: Path) -> None:
    """Into a private temporary folder, then renamed into `dest`: a second run (or a test worker)
    never sees half a wheel."""
    import shutil
    import tempfile

    dest.mkdir(parents=True, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".download-", dir=dest)
    try:
        _download_into(dist, version, tmp)
        for name in os.listdir(tmp):
            os.replace(os.path.join(tmp, name), dest / name)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _download_into(dist: str, version: str, dest: str) -> None:
    base = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:", "-d", dest]
    # The wrapper is pure Python: any platform's wheel will do, so retry for Linux x86-64 if this
    # machine's platform has none.
    attempts = ([], ["--platform", "manylinux2014_x86_64", "--python-version", "3.10", "--implementation", "cp"])
    err = ""
    for extra in attempts:
        try:
            r = subprocess.run(base + extra + [f"{dist}=={version}"], capture_output=True, text=True, timeout=1800)
        except (OSError, subprocess.TimeoutExpired) as e:
            err = str(e)
            continue
        if r.returncode == 0:
            return
        err = next((ln for ln in reversed(r.stderr.splitlines()) if ln.strip() and not ln.startswith("WARNING")), "")
    raise SourceError(f"cannot download {dist}=={version} ({err.strip() or 'pip failed'}); "
                      "pass a wheel file or a path (site-packages or a source tree) instead")
