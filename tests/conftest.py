"""Two tiers: the default run (README command 2) stays fast; `heavy` tests (real 13k-file trees,
big wheel downloads) run with `-m heavy` or TOPK_MIGRATE_HEAVY=1, as .ci/run does after the default run.
Heavy tests are always collected (the count is the same on every machine) and skipped with the reason."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import ROOT

# Under xdist (`-n auto`: one worker per core) torch's intra-op threads, one per core and spinning while
# they wait, only contend with the other workers: on 2 cores they doubled the CPU time of test_smoke.py.
# One thread per worker (set before any test module imports torch; subprocesses inherit it).
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.setdefault("OMP_NUM_THREADS", "1")

# Every property test draws the same examples on every run (a CI verdict must not depend on a draw);
# TOPK_FUZZ_RANDOM=1 draws fresh ones, to hunt. Tests' own @settings keep this for what they do not set.
try:
    from hypothesis import settings as _hypothesis_settings

    _hypothesis_settings.register_profile("topk", derandomize=os.environ.get("TOPK_FUZZ_RANDOM") != "1")
    _hypothesis_settings.load_profile("topk")
except ImportError:  # the test extra is not installed: the property tests skip on their own
    pass

HEAVY_HINT = "heavy tier: run `python3 -m pytest -m heavy` (.ci/run does)"


def pytest_configure(config):
    """Compile the engine's bytecode once, before the workers start, where PYTHONDONTWRITEBYTECODE is set.

    The tests run the CLI as a user does, in several hundred child processes (`python -m topk_migrate`);
    under PYTHONDONTWRITEBYTECODE an editable checkout (no __pycache__, none written) recompiles every
    module of topk_migrate and its rules in each of them: about a fifth of the default tier's time on
    2 cores. An installed tool has its bytecode compiled by pip, and bench/check_bench.py and
    bench/audit_bench.py compile it the same way. Hash-checked .pyc files (in the ignored __pycache__/):
    a source edited during the run is recompiled, never run from a stale .pyc. Without the variable
    the first child writes them itself, as Python does."""
    if not os.environ.get("PYTHONDONTWRITEBYTECODE") or hasattr(config, "workerinput"):  # not set, or a worker
        return
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([sys.executable, "-m", "compileall", "-q", "--invalidation-mode", "checked-hash",
                    str(ROOT / "topk_migrate"), str(ROOT / "codemods")], env=env, capture_output=True, timeout=120)


def heavy_selected(config) -> bool:
    return os.environ.get("TOPK_MIGRATE_HEAVY") == "1" or "heavy" in (config.getoption("-m") or "")


def pytest_collection_modifyitems(config, items):
    if heavy_selected(config):
        return
    skip = pytest.mark.skip(reason=HEAVY_HINT)
    for item in items:
        if "heavy" in item.keywords:
            item.add_marker(skip)


BENCH_TREE = Path(os.environ.get("TOPK_BENCH_TREE", "/tmp/topk-bench-tree"))


@pytest.fixture(scope="session")
def bench_tree():
    """The 13k-file benchmark tree (bench/build_tree.sh: PyPI wheels, cached), built once for the heavy tier."""
    if not (BENCH_TREE / ".topk-bench-tree").exists():
        script = ROOT / "bench" / "build_tree.sh"
        r = subprocess.run(["bash", str(script), str(BENCH_TREE)], capture_output=True, text=True, timeout=1200)
        if r.returncode != 0:
            msg = f"cannot build the benchmark tree: {(r.stderr or r.stdout).strip()[-300:]}"
            if os.environ.get("CI"):
                pytest.fail(msg)
            pytest.skip(msg)
    return BENCH_TREE

