"""Directories laid out as pip lays out site-packages: distributions with their *.dist-info (RECORD, METADATA),
for the tests of what an installed file's project is (docs/project.md). A plain module, not a test module."""
import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path


def dist(site: Path, name: str, version: str, files: dict, requires=()) -> Path:
    """Install `files` (path -> text) into `site` as distribution name==version, each listed in its RECORD."""
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    for rel, text in files.items():
        (site / rel).parent.mkdir(parents=True, exist_ok=True)
        (site / rel).write_text(text)
    listed = [*files, f"{info.name}/METADATA", f"{info.name}/RECORD", "../../../bin/" + name]
    (info / "RECORD").write_text("".join(f"{rel},sha256=x,1\n" for rel in listed))
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
                                   + "".join(f"Requires-Dist: {r}\n" for r in requires) + "\n")
    return info


def pip_target(site: Path, *what: str) -> None:
    """`pip install --no-deps --target site WHAT...`: a wheel, or a source tree (built without isolation)."""
    r = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                        "--no-compile", "--target", str(site), *what], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr


def torch_beside(site: Path) -> bool:
    """The running Python's torch, installed into `site` as pip would put it beside the engine: its package and
    its dist-info, each file a hard link (a copy of the Python files and a symlink for the rest where the two
    directories are on different file systems: importable, and the Python files are the site's own). False
    where torch is not installed."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return False
    src = Path(next(iter(spec.submodule_search_locations)))
    infos = sorted(src.parent.glob("torch-*.dist-info"))

    def place(a: str, b: str) -> None:
        try:
            os.link(a, b)
        except OSError:
            if a.endswith(".py") or ".dist-info" in a:
                shutil.copy2(a, b)
            else:
                os.symlink(os.path.realpath(a), b)

    for tree in [src, *infos[:1]]:
        shutil.copytree(tree, site / tree.name, copy_function=place, symlinks=True,
                        ignore=shutil.ignore_patterns("__pycache__"))
    return True
