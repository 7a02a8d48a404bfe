"""The structure CI holds (.ci/run): the import contracts of pyproject.toml (one-way layers, no cycle) and
ruff's pyflakes, bugbear, isort, complexity, parameter-count and imports-inside-functions rules with zero
findings. Both tools come with the `test` extra."""
import ast
import collections
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


def test_no_module_binds_a_top_level_name_twice():
    """A second top-level def, class or constant of the same name silently replaces the first for every caller in
    its module (two rules' helpers both called `_holds_field` did, in round BC); ruff's F811 misses it where the
    first is read inside a function."""
    twice = []
    for path in sorted([*(ROOT / "codemods").rglob("*.py"), *(ROOT / "topk_migrate").rglob("*.py")]):
        body = ast.parse(path.read_text()).body
        names = [n.name for n in body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
        names += [t.id for n in body if isinstance(n, ast.Assign) for t in n.targets
                  if isinstance(t, ast.Name) and t.id.lstrip("_").isupper()]
        twice += [f"{path.relative_to(ROOT)}: {name}" for name, count in collections.Counter(names).items() if count > 1]
    assert not twice, twice
