"""What check and apply give on a tree of sources and on every rule's examples, as one JSON document: run once
with the LibCST accelerators on and once with them off (TOPK_MIGRATE_NO_ACCEL=1), the two documents must be
equal but for their "accel" entry (tests/test_accel.py, in this Python and in fresh virtual environments
holding the lowest and newest LibCST the project allows).

    python accel_compare.py TREE > out.json

Runs with whatever Python starts it, against the topk_migrate that Python imports, and imports nothing of the
tests (a fresh venv holds only the project and its dependencies). TREE is copied to a folder of its own and
named by a relative path, so the reports of two runs name the same files. Per run, each child inherits this
process's environment (the switch with it):

- `check --format json --kernel K` of the tree (reference and derived lengths): the report, exit code and summary;
- `apply --format json --kernel K` of a copy of the tree (both lengths): the same, and every file's text after;
- each rule's site examples through the API (api.migrate_source): the sites and the rewritten source. With the
  switch off, in this process, the accelerated code is made to raise if called and its module never imported
  ("accel" says so).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

KERNEL = "sglang-kernel==0.4.6"


def _cli(*args: str, cwd: Path) -> dict:
    r = subprocess.run([sys.executable, "-m", "topk_migrate", *args], cwd=cwd, capture_output=True, text=True,
                       timeout=600)
    out = {"rc": r.returncode, "stderr": r.stderr}
    try:
        out["report"] = json.loads(r.stdout)
        out["report"].get("summary", {}).pop("seconds", None)  # the run's wall time
    except ValueError:
        out["stdout"] = r.stdout
    return out


def _texts(folder: Path) -> dict:
    return {p.relative_to(folder).as_posix(): p.read_bytes().decode("utf-8", "surrogateescape")
            for p in sorted(folder.rglob("*")) if p.is_file() and "__pycache__" not in p.parts}


def cli_runs(tree: Path, work: Path) -> dict:
    shutil.copytree(tree, work / "tree")
    runs = {}
    for lengths in ("reference", "derived"):
        runs[f"check {lengths}"] = _cli("check", "--format", "json", "--kernel", KERNEL, "--lengths", lengths, "tree",
                                        cwd=work)
    for lengths in ("reference", "derived"):
        folder = work / f"apply-{lengths}"
        shutil.copytree(tree, folder / "tree")
        run = _cli("apply", "--format", "json", "--kernel", KERNEL, "--lengths", lengths, "tree", cwd=folder)
        run["files"] = _texts(folder / "tree")
        runs[f"apply {lengths}"] = run
    return runs


def example_runs(work: Path) -> list:
    from topk_migrate import rules
    from topk_migrate.api import migrate_source

    out = []
    here = os.getcwd()
    os.chdir(work)  # relative paths: the two runs' sites name the same files
    for spec in rules.specs():
        for i, ex in enumerate(rules.load(spec.id).EXAMPLES):
            if getattr(ex, "bump", None) is not None:
                continue
            folder = Path(f"{spec.id}-{i}")
            folder.mkdir()
            m = migrate_source(ex.code, str(folder / "backend.py"), kernel=ex.kernel, enable=[spec.id],
                               lengths=ex.lengths)
            out.append({"example": f"{spec.id}-{i}", "sites": [s.to_dict() for s in m.sites],
                        "new_source": m.new_source})
    os.chdir(here)
    return out


def _tripwires() -> None:
    """The accelerated code, made to raise if the run calls it (the switch is off)."""
    from topk_migrate.cst import cstutil, cstwalk

    def tripped(*args, **kwargs):
        raise AssertionError("accelerated code ran with the accelerators off")

    for module, name in ((cstwalk, "_read_fields"), (cstwalk, "_visit"), (cstutil, "_code_at"),
                         (cstutil, "_copy_tree"), (cstutil, "_plain_state")):
        setattr(module, name, tripped)


def main() -> None:
    tree = Path(sys.argv[1]).resolve()
    from topk_migrate.cst import accel

    if not accel.on():
        _tripwires()
    with tempfile.TemporaryDirectory(prefix="topk-accel-") as tmp:
        work = Path(tmp)
        (work / "examples").mkdir()
        doc = {"libcst": accel.libcst_version(), "cli": cli_runs(tree, work), "examples": example_runs(work / "examples")}
    doc["accel"] = {"on": accel.on(), "why": accel.state()[1],
                    "scopefast imported": "topk_migrate.cst.scopefast" in sys.modules}
    json.dump(doc, sys.stdout, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
