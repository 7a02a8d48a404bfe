#!/usr/bin/env python3
"""Benchmark `topk-migrate bump` against `audit` on one tree (target: bump <= 1.5x audit, signatures cached).

Paired runs in alternating order after one warm-up of each (which also caches the releases' signatures);
figures are the medians and the median of the per-pair ratios. The report is appended to --write.

    bench/build_tree.sh /tmp/topk-bench-tree
    python3 bench/bump_bench.py --tree /tmp/topk-bench-tree --write results/bump-bench.md
"""
from __future__ import annotations

import argparse
import datetime
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from audit_bench import HERE, paired, timed, tool_cmd  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tree", type=Path, default=Path("/tmp/topk-bench-tree"))
    ap.add_argument("--pairs", type=int, default=7)
    ap.add_argument("--old", default="sglang-kernel==0.4.2.post2")
    ap.add_argument("--new", default="sglang-kernel==0.4.6")
    ap.add_argument("--write", type=Path, help="append the markdown report here")
    args = ap.parse_args()
    tree = args.tree.resolve()
    if not (tree / ".topk-bench-tree").exists():
        subprocess.run(["bash", str(HERE / "build_tree.sh"), str(tree)], check=True)
    # bytecode compiled, as a pip install leaves it (see audit_bench.py)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(HERE.parent / "topk_migrate"),
                    str(HERE.parent / "codemods")], check=True,
                   env={k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"})
    out = Path(tempfile.mkdtemp(prefix="topk-bump-bench-"))
    tool = tool_cmd()
    audit = tool + ["audit", str(tree), "--format", "json", "-o", str(out / "audit.json")]
    bump = tool + ["bump", "--from", args.old, "--to", args.new, str(tree), "--format", "json",
                   "-o", str(out / "bump.json")]
    for cmd in (audit, bump):
        if timed(cmd)[2] not in (0, 1):
            sys.exit(f"{shlex.join(cmd)} failed")
    load0 = os.getloadavg()[0]
    r = paired(audit, bump, args.pairs)
    load1 = os.getloadavg()[0]
    commit = subprocess.run(["git", "-C", str(HERE.parent), "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip() or "?"
    text = "\n".join([
        f"## {datetime.datetime.now().isoformat(timespec='minutes')} at {commit}, {os.cpu_count()} cores, "
        f"load {load0:.2f} / {load1:.2f}",
        "",
        f"- audit: median wall {r['a_wall']:.2f} s, CPU {r['a_cpu']:.2f} s",
        f"- bump {args.old} -> {args.new}: median wall {r['b_wall']:.2f} s, CPU {r['b_cpu']:.2f} s",
        f"- **bump / audit: {r['ratio_wall']:.2f}x wall, {r['ratio_cpu']:.2f}x CPU** (median of {r['n']} "
        "interleaved pairs; target <= 1.5x)",
        "",
        "```",
        shlex.join([sys.executable] + sys.argv),
        shlex.join(audit).replace(str(out), "OUT"),
        shlex.join(bump).replace(str(out), "OUT"),
        "```",
        "",
    ])
    print(text)
    if args.write:
        head = "" if args.write.exists() else "# bump vs audit on the benchmark tree\n\n"
        with args.write.open("a") as f:
            f.write(head + text + "\n")


if __name__ == "__main__":
    main()
