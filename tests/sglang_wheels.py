"""Real sglang wheels from PyPI, downloaded once and cached in ~/.cache/topk-migrate-tests
(TOPK_MIGRATE_TEST_CACHE overrides it). Where PyPI is unreachable the tests skip, except under CI
(`CI` set, as conftest's bench_tree does): there they fail, so a green CI always carries the
real-release checks."""
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import pytest

CACHE = Path(os.environ.get("TOPK_MIGRATE_TEST_CACHE", Path.home() / ".cache" / "topk-migrate-tests"))
ATTENTION = "sglang/srt/layers/attention/"
DSA = ATTENTION + "dsa_backend.py"
NSA = ATTENTION + "nsa_backend.py"  # the DSA backend's name before 0.5.13


def wheel(version: str, dist: str = "sglang") -> Path:
    stem = dist.replace("-", "_")  # wheel file names spell sglang-kt as sglang_kt
    found = sorted(CACHE.glob(f"{stem}-{version}-*.whl"))
    if not found:
        CACHE.mkdir(parents=True, exist_ok=True)
        # Into a private folder, then renamed: a test worker running beside this one never
        # reads half a wheel.
        with tempfile.TemporaryDirectory(prefix=".download-", dir=CACHE) as tmp:
            r = subprocess.run(
                [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                 "-d", tmp, f"{dist}=={version}"],
                capture_output=True, text=True, timeout=600,
            )
            for name in os.listdir(tmp):
                os.replace(os.path.join(tmp, name), CACHE / name)
        found = sorted(CACHE.glob(f"{stem}-{version}-*.whl"))
        if not found:
            msg = f"PyPI unreachable, cannot fetch {dist}=={version}: {r.stderr.strip()[-200:]}"
            if os.environ.get("CI"):
                pytest.fail(msg)
            pytest.skip(msg)
    return found[0]


def install_like_site_packages(version: str, dest: Path, dist: str = "sglang", backend: str = DSA,
                               whole: bool = False) -> Path:
    """Unpack the attention package (`whole`: every Python file of the wheel, for the checks that read the
    whole project) and the dist-info, as pip would lay them out in site-packages; returns the path of `backend`."""
    with zipfile.ZipFile(wheel(version, dist)) as z:
        for name in z.namelist():
            if name.startswith(ATTENTION) or ".dist-info/" in name or (whole and name.endswith(".py")):
                z.extract(name, dest)
    return dest / backend
