"""The package's declared surface: `__version__`, `__all__`, and public names for what modules use of each other."""
import ast
import re
import subprocess
import sys
from pathlib import Path

import topk_migrate

ROOT = Path(__file__).resolve().parents[1]


def test_version_is_pyprojects():
    declared = re.search(r'(?m)^version = "([^"]+)"', (ROOT / "pyproject.toml").read_text()).group(1)
    assert topk_migrate.__version__ == declared


def test_every_public_name_resolves():
    for name in topk_migrate.__all__:
        assert getattr(topk_migrate, name) is not None, name
    assert topk_migrate.run.__module__ == "topk_migrate.api" and topk_migrate.Status.__module__ == "topk_migrate.model"


def test_importing_the_package_loads_nothing_else():
    code = "import sys, topk_migrate; print(sorted(m for m in sys.modules if m.startswith('topk_migrate')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['topk_migrate']"
