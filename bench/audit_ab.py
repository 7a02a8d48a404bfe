#!/usr/bin/env python3
"""grep vs `audit --format json` before vs after a change to the audit layer, same engine, rotating order.

Set up two copies of the package that differ only in the files compared (here: audit.py and
discover.py at a given commit), each with codemods/ placed as topk_migrate/codemods:

    for v in old new; do mkdir -p /tmp/cmp/$v; cp -r topk_migrate /tmp/cmp/$v/; rm -rf /tmp/cmp/$v/topk_migrate/codemods
        cp -r codemods /tmp/cmp/$v/topk_migrate/codemods; done
    git show fe42c4c:topk_migrate/audit.py > /tmp/cmp/old/topk_migrate/audit.py
    git show fe42c4c:topk_migrate/discover.py > /tmp/cmp/old/topk_migrate/discover.py
    python3 bench/audit_ab.py 9        # rounds; prints a markdown table of medians and per-round ratios to grep
"""
import os
import statistics
import subprocess
import sys
import time

T = "/tmp/topk-bench-tree"
def cmd(v): return ["env", f"PYTHONPATH=/tmp/cmp/{v}", sys.executable, "-m", "topk_migrate", "audit", T, "--format", "json", "-o", f"/tmp/cmp/{v}.json"]
C = {"grep": ["grep", "-rl", "flash_mla_sparse_fwd", T], "before": cmd("old"), "after": cmd("new")}
def timed(c):
    t = time.perf_counter(); p = subprocess.Popen(c, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, st, ru = os.wait4(p.pid, 0); return time.perf_counter() - t, ru.ru_utime + ru.ru_stime
n = int(sys.argv[1]); names = list(C); runs = {k: [] for k in C}
load0 = os.getloadavg()[0]
for k in names: timed(C[k])
for r in range(n):
    for k in names[r % 3:] + names[: r % 3]: runs[k].append(timed(C[k]))
g = runs["grep"]
for k in names:
    w = statistics.median(x for x, _ in runs[k]); c = statistics.median(y for _, y in runs[k])
    rw = statistics.median(a[0] / b[0] for a, b in zip(runs[k], g)); rc = statistics.median(a[1] / b[1] for a, b in zip(runs[k], g))
    print(f"| {k} | {w:.3f} s | {c:.3f} s | {rw:.2f}x | {rc:.2f}x |")
print(f"load {load0:.2f} before, {os.getloadavg()[0]:.2f} after; {n} rounds")
