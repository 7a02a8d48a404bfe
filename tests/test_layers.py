"""The structure CI holds (.ci/run): the import contracts of pyproject.toml (one-way layers, no cycle) and
ruff's pyflakes, bugbear, isort, complexity, parameter-count and imports-inside-functions rules with zero
findings. Both tools come with the `test` extra."""
import subprocess
import sys

from helpers import ROOT


def test_import_contracts_are_kept():
    code = "import sys; from importlinter.cli import lint_imports; sys.exit(lint_imports(no_cache=True))"
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]


def test_ruff_finds_nothing():
    r = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "."], cwd=ROOT, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
