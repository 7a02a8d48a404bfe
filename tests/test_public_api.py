"""The package's declared surface: `__version__`, `__all__`, and public names for what modules use of each other."""
import ast
import re
import subprocess
import sys
from pathlib import Path

import topk_migrate
from helpers import ROOT


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


def _private_uses(path: Path):
    """(line, name) of each underscore name path takes from another module of the package."""
    tree = ast.parse(path.read_text())
    modules = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("topk_migrate")):
            for a in node.names:
                if a.name.startswith("_") and not a.name.startswith("__"):
                    yield node.lineno, a.name
                modules.add(a.asname or a.name)
        elif isinstance(node, ast.Import):
            modules.update((a.asname or a.name).split(".")[0] for a in node.names if a.name.startswith("topk_migrate"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules \
                and node.attr.startswith("_") and not node.attr.startswith("__"):
            yield node.lineno, f"{node.value.id}.{node.attr}"


def test_the_engine_uses_no_other_modules_private_names():
    found = [f"{p.relative_to(ROOT)}:{line}: {name}" for p in sorted((ROOT / "topk_migrate").rglob("*.py"))
             for line, name in _private_uses(p)]
    assert found == []


def test_one_bound_for_a_project_file():
    """pyproject.toml, requirements, METADATA, .gitignore: one PROJECT_FILE_LIMIT; a RECORD its own."""
    assigned = [p.name for p in (ROOT / "topk_migrate").rglob("*.py")
                if re.search(r"(?m)^PROJECT_FILE_LIMIT\s*=", p.read_text())]
    assert assigned == ["reads.py"]
    from topk_migrate import discover, project

    assert project.PROJECT_FILE_LIMIT == discover.PROJECT_FILE_LIMIT < project.RECORD_LIMIT
