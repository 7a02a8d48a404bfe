#!/usr/bin/env python3
"""How `audit` scales with cores and with tree size, against grep, as one table.

For each tree: grep -rl, audit -j 1 and audit -j J (each --format json), in rotating
order for --rounds rounds (cache warmed first); medians of wall and CPU time (the
process and its children), and the peak resident memory of the largest process of
the run. The -j 1 and -j J reports must agree (sites and errors).

    python3 bench/cores_bench.py --tree /tmp/synth-1x --tree /tmp/synth-10x --jobs 16 --rounds 3
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import time


def timed(cmd):
    """(wall s, cpu s, peak RSS MB of the largest process waited for, stdout)."""
    t = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    out = p.stdout.read()
    _, status, ru = os.wait4(p.pid, 0)
    rc = os.waitstatus_to_exitcode(status)
    if rc not in (0, 1):
        sys.exit(f"{shlex.join(cmd)} exited {rc}")
    return time.perf_counter() - t, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tree", action="append", required=True)
    ap.add_argument("--jobs", type=int, default=os.cpu_count())
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    tool = [sys.executable, "-m", "topk_migrate"]
    print(f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}; {args.rounds} rounds, rotating order\n")
    print("| tree | command | wall (median) | CPU (median) | peak RSS | wall / grep | CPU / grep |")
    print("|---|---|---|---|---|---|---|")
    for tree in args.tree:
        cmds = {
            "grep -rl flash_mla_sparse_fwd": ["grep", "-rl", "flash_mla_sparse_fwd", tree],
            "audit -j 1": tool + ["audit", tree, "--format", "json", "-j", "1"],
            f"audit -j {args.jobs}": tool + ["audit", tree, "--format", "json", "-j", str(args.jobs)],
        }
        timed(cmds["grep -rl flash_mla_sparse_fwd"])  # page cache warm
        runs = {k: [] for k in cmds}
        reports = {}
        names = list(cmds)
        for r in range(args.rounds):
            for k in names[r % 3:] + names[: r % 3]:
                wall, cpu, rss, out = timed(cmds[k])
                runs[k].append((wall, cpu, rss))
                if k != names[0]:
                    doc = json.loads(out)
                    reports[k] = (doc["sites"], doc["errors"], doc["summary"]["files"], doc["summary"]["parsed"])
        a, b = reports[names[1]], reports[names[2]]
        assert a == b, "the reports of -j 1 and -j J differ"
        med = {k: (statistics.median(w for w, _, _ in v), statistics.median(c for _, c, _ in v), max(m for _, _, m in v))
               for k, v in runs.items()}
        g = med[names[0]]
        for k, (w, c, m) in med.items():
            print(f"| {tree} ({a[2]} files, {a[3]} parsed, {len(a[0])} sites) | `{k}` | {w:.3f} s | {c:.3f} s | {m:.0f} MB "
                  f"| {w / g[0]:.2f}x | {c / g[1]:.2f}x |", flush=True)
        print(f"| {tree} | speed-up -j {args.jobs} over -j 1 | {med[names[1]][0] / med[names[2]][0]:.2f}x | | | | |", flush=True)
    print(f"\nload after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
