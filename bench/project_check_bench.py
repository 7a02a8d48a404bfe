"""`topk-migrate check` of sglang's `dsa_backend.py` inside its whole installed package (the project scan the
whole-project proof reads: thousands of files), one checkout's engine against another's, as CPU-time ratios.

Each pair runs both engines once, in alternating order, each in its own process on the same unpacked wheel;
the figure is the median of the pairs' CPU ratios (after / before), with both medians of CPU seconds.

    git worktree add /tmp/before <commit> && python3 bench/project_check_bench.py --before /tmp/before --pairs 5
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import sglang_wheels  # noqa: E402  (tests/: the cached wheels the heavy tier downloads)

DSA = "sglang/srt/layers/attention/dsa_backend.py"


def install_copy(checkout: Path, dest: Path) -> dict:
    """An environment importing that checkout's engine laid out as installed (codemods/ inside topk_migrate/)."""
    import shutil

    pkg = dest / "topk_migrate"
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(checkout / "topk_migrate", pkg, ignore=shutil.ignore_patterns("__pycache__", "codemods", "fixtures"))
    shutil.copytree(checkout / "codemods", pkg / "codemods", ignore=ignore)
    shutil.copytree(checkout / "fixtures", pkg / "fixtures", ignore=ignore)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(pkg)], check=True)
    return {**os.environ, "PYTHONPATH": str(dest)}


def cpu_of(env: dict, target: Path) -> float:
    """CPU seconds of one `check` (its own process and children), failing on an exit code but 0 and 1."""
    t = time.perf_counter()
    p = subprocess.Popen([sys.executable, "-m", "topk_migrate", "check", "--kernel", "sglang-kernel==0.4.6", str(target)],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=str(target.parents[5]))
    _, status, ru = os.wait4(p.pid, 0)
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1):
        sys.exit(f"check exited {code} ({time.perf_counter() - t:.1f} s)")
    return ru.ru_utime + ru.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", type=Path, required=True, help="the checkout to compare against")
    ap.add_argument("--after", type=Path, default=Path(__file__).resolve().parents[1], help="default: this checkout")
    ap.add_argument("--version", default="0.5.16", help="the sglang release whose wheel is unpacked")
    ap.add_argument("--pairs", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        site = Path(tmp) / "site"
        with zipfile.ZipFile(sglang_wheels.wheel(args.version)) as z:
            z.extractall(site)
        envs = {"before": install_copy(args.before, Path(tmp) / "before"), "after": install_copy(args.after, Path(tmp) / "after")}
        runs = {"before": [], "after": []}
        for i in range(args.pairs):
            for key in (("before", "after") if i % 2 == 0 else ("after", "before")):
                runs[key].append(cpu_of(envs[key], site / DSA))
    ratios = [a / b for a, b in zip(runs["after"], runs["before"])]
    print(f"sglang {args.version} {DSA} in its installed package, {args.pairs} pairs: CPU before "
          f"{statistics.median(runs['before']):.2f} s, after {statistics.median(runs['after']):.2f} s, "
          f"after/before {statistics.median(ratios):.3f} (pairs {', '.join(f'{r:.3f}' for r in ratios)})")


if __name__ == "__main__":
    main()
