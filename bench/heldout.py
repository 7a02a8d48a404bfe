#!/usr/bin/env python3
"""Run a red-team round's held-out suite against a frozen copy of the tree (results/red-team.md's tables).

    python3 bench/heldout.py snap DIR                     # copy the tree as the wheel lays it out
    python3 bench/heldout.py run SUITE.py --snap DIR [--jobs N]
    python3 bench/heldout.py one SUITE.py NAME --snap DIR [-v]

A suite is a module with `VARIANTS` (tests/adversarial/harness.Variant): `u_*` variants break the
contract if rewritten, so they must be refused or stay right; `s_*` variants are safe and must be
fixed. Each variant runs in its own process (an analysis crash or hang costs one verdict, not the
run), against the snapshot, so the tree can change while a round runs. The suites are not tests:
nothing under tests/ reads them, and a fix answers the mechanism a variant shows, never its name.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SNAPSHOT_PARTS = (("topk_migrate", "topk_migrate"), ("codemods", "topk_migrate/codemods"),
                  ("fixtures", "topk_migrate/fixtures"), ("tests", "tests"), ("docs", "docs"))


def snapshot(target: Path) -> None:
    """The tree with codemods/ and fixtures/ inside topk_migrate/, as pip installs them."""
    shutil.rmtree(target, ignore_errors=True)
    for source, place in SNAPSHOT_PARTS:
        shutil.copytree(REPO / source, target / place, ignore=shutil.ignore_patterns("__pycache__"))


def load_variants(suite: str) -> list:
    spec = importlib.util.spec_from_file_location("heldout_" + Path(suite).stem, suite)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.VARIANTS


def verdict(outcome) -> str:
    """SAFE-OK / SAFE-REFUSED / SAFE-WRONG for s_*; UNSAFE-OK / UNSAFE-WRONG for the rest; BROKEN."""
    if any("variant is broken" in p for p in outcome.problems):
        return "BROKEN"
    if outcome.variant.name.startswith("s_"):
        if outcome.fixed and not outcome.problems:
            return "SAFE-OK"
        return "SAFE-REFUSED" if not outcome.fixed else "SAFE-WRONG"
    return "UNSAFE-WRONG" if outcome.problems else "UNSAFE-OK"


def run_one(suite: str, name: str, verbose: bool) -> None:
    """In this process (whose sys.path starts at the snapshot): one variant, one RESULT line."""
    import topk_migrate

    snap = sys.path[0]
    assert topk_migrate.__file__.startswith(snap), "the snapshot's tool must be the one run"
    sys.path.insert(0, os.path.join(snap, "tests"))  # (as generator_run.py: not a `tests.` import the tool would follow)
    from adversarial import harness
    variant = next(v for v in load_variants(suite) if v.name == name)
    with tempfile.TemporaryDirectory() as root, harness.stub_kernels():
        outcome = harness.run_variant(variant, Path(root))
    print("RESULT " + json.dumps({"name": name, "verdict": verdict(outcome), "problems": outcome.problems,
                                  "sites": outcome.sites}))
    if verbose:
        print(outcome.describe() if outcome.problems else "\n".join(f"  site {s}" for s in outcome.sites))
        print(outcome.diff)


def _in_process(suite: str, name: str, snap: str) -> dict:
    command = [sys.executable, __file__, "one", suite, name, "--snap", snap]
    done = subprocess.run(command, capture_output=True, text=True, timeout=900, check=False)
    for line in done.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    return {"name": name, "verdict": "ERROR", "problems": [done.stderr[-400:]], "sites": []}


def run_suite(suite: str, snap: str, jobs: int) -> None:
    names = [v.name for v in load_variants(suite)]
    with ThreadPoolExecutor(jobs) as pool:
        results = list(pool.map(lambda n: _in_process(suite, n, snap), names))
    for r in results:
        why = "; ".join(r["problems"]) if r["verdict"] not in ("UNSAFE-OK", "SAFE-OK") else ""
        if r["verdict"] == "UNSAFE-OK" and r["sites"]:
            why = r["sites"][0][2]
        print(f"{r['verdict']:13} {r['name']:55} {why[:160]}")
    unsafe = [r for r in results if not r["name"].startswith("s_")]
    safe = [r for r in results if r["name"].startswith("s_")]
    print(f"== {suite}: unsafe wrong {sum(r['verdict'] == 'UNSAFE-WRONG' for r in unsafe)}/{len(unsafe)}, "
          f"safe refused {sum(r['verdict'] != 'SAFE-OK' for r in safe)}/{len(safe)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=("snap", "run", "one"))
    parser.add_argument("target", help="the snapshot's folder (snap) or the suite's file")
    parser.add_argument("name", nargs="?", help="one variant's name (one)")
    parser.add_argument("--snap", help="the snapshot to run against")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("-v", action="store_true", help="one: print the problems and apply's diff")
    args = parser.parse_args()
    if args.command == "snap":
        snapshot(Path(args.target))
        return
    snap = os.path.abspath(args.snap)
    sys.path.insert(0, snap)
    if args.command == "one":
        run_one(os.path.abspath(args.target), args.name, args.v)
    else:
        run_suite(os.path.abspath(args.target), snap, args.jobs)


if __name__ == "__main__":
    main()
