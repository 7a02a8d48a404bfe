#!/usr/bin/env python3
"""Where the wall time of one `audit` goes, phase by phase (issue 12's critical path).

Runs audit() in this process, timing: the imports, forking the scanners, the walk (the
main process lists the files; with scanners and one directory, they walk it in parts), the drain (waiting for the scanners' last chunks), the
engine's results and the end. Prints one line per phase, median over --rounds runs.

    python3 bench/audit_phases.py --tree /tmp/topk-bench-tree --jobs 16 --rounds 5
"""
from __future__ import annotations

import argparse
import statistics
import time

T0 = time.perf_counter()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tree", required=True)
    ap.add_argument("--jobs", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--candidates", action="store_true",
                    help="also: each candidate's classification in this process (CPU), and where it was decided")
    ap.add_argument("--share", type=int, help="audit.scan.PART_SHARE for these runs (files a scanner walks before it donates)")
    args = ap.parse_args()
    from topk_migrate import audit

    if args.share:
        audit.scan.PART_SHARE = args.share

    imported = time.perf_counter() - T0
    marks = {}
    real_init, real_drain, real_files = audit.scan._Scanners.__init__, audit.scan._Scanners.drain, audit.scan.project_files
    real_split = audit.scan._walk_split

    def init(self, *a, **k):
        marks["fork scanners"] = time.perf_counter()
        real_init(self, *a, **k)
        marks["fork scanners"] = time.perf_counter() - marks["fork scanners"]

    def files(*a, **k):
        t = time.perf_counter()
        yield from real_files(*a, **k)
        marks["walk (with dispatch)"] = time.perf_counter() - t
        marks["_walk_end"] = time.perf_counter()

    def split(*a, **k):
        t = time.perf_counter()
        real_split(*a, **k)
        marks["split walk (with dispatch)"] = time.perf_counter() - t

    def drain(self):
        t = time.perf_counter()
        out = real_drain(self)
        marks["drain"] = time.perf_counter() - t
        return out

    audit.scan._Scanners.__init__, audit.scan._Scanners.drain, audit.scan.project_files = init, drain, files
    audit.scan._walk_split = split
    rows = []
    for _ in range(args.rounds):
        marks.clear()
        t = time.perf_counter()
        audit.audit([args.tree], jobs=args.jobs)
        total = time.perf_counter() - t
        rows.append({**{k: v for k, v in marks.items() if not k.startswith("_")}, "whole audit()": total})
    walks = []
    for _ in range(args.rounds):
        t = time.perf_counter()
        n = sum(1 for _ in real_files([args.tree]))
        walks.append(time.perf_counter() - t)
    print(f"imports before the first run: {imported:.3f} s")
    print(f"the walk alone ({n} files, nothing read): {statistics.median(walks):.3f} s")
    for k in rows[0]:
        print(f"{k}: {statistics.median(r[k] for r in rows):.3f} s")
    if args.candidates:
        candidates(args.tree)


def candidates(tree: str) -> None:
    """Each candidate's classify_without_engine in this process (after the imports a run does first)."""
    import os

    from topk_migrate import audit
    from topk_migrate.config import project_files
    from topk_migrate.discover import file_may_hold_site

    audit.pool.import_for_classify()
    found = [p for p, err in project_files([tree]) if not err and file_may_hold_site(p)]
    print("\n| candidate | bytes | CPU | answered |\n|---|---|---|---|")
    total = 0.0
    for path in found:
        t = time.process_time()
        answer = audit.classify_without_engine(path, None)
        cpu = time.process_time() - t
        total += cpu
        how = "engine needed" if answer is None else f"{len(answer[1])} site(s)" if answer[1] else "no call"
        print(f"| {os.path.relpath(path, tree)} | {os.path.getsize(path)} | {cpu * 1000:.1f} ms | {how} |")
    print(f"| all {len(found)} | | {total * 1000:.0f} ms | |")


if __name__ == "__main__":
    main()
