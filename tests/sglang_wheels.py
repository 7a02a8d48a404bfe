"""Real sglang wheels from PyPI, downloaded once and cached (the tests skip only if PyPI is unreachable)."""
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

CACHE = Path(os.environ.get("TOPK_MIGRATE_TEST_CACHE", Path.home() / ".cache" / "topk-migrate-tests"))
DSA = "sglang/srt/layers/attention/dsa_backend.py"


def wheel(version: str) -> Path:
    found = sorted(CACHE.glob(f"sglang-{version}-*.whl"))
    if not found:
        CACHE.mkdir(parents=True, exist_ok=True)
        r = subprocess.run(
            [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
             "-d", str(CACHE), f"sglang=={version}"],
            capture_output=True, text=True, timeout=600,
        )
        found = sorted(CACHE.glob(f"sglang-{version}-*.whl"))
        if not found:
            pytest.skip(f"PyPI unreachable, cannot fetch sglang=={version}: {r.stderr.strip()[-200:]}")
    return found[0]


def install_like_site_packages(version: str, dest: Path) -> Path:
    """Unpack the attention package and the dist-info, as pip would lay them out in site-packages."""
    with zipfile.ZipFile(wheel(version)) as z:
        for name in z.namelist():
            if name.startswith("sglang/srt/layers/attention/") or ".dist-info/" in name:
                z.extract(name, dest)
    return dest / DSA
