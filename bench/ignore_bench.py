#!/usr/bin/env python3
"""What a big .gitignore costs `audit`: the same tree with no ignore file and with each of several
adversarial ones at its top, `audit -j 1` run in rotating order, median wall time per variant and its
ratio to no ignore file (the same rounds).

    python3 bench/ignore_bench.py --tree /tmp/topk-bench-tree/sglang --work /tmp/ign --rounds 5

`--work` gets a hard-linked copy of the tree (the .gitignore is written there). To measure another
checkout of topk-migrate, run it with PYTHONPATH pointing at that checkout.

    python3 bench/ignore_bench.py --tree /tmp/topk-bench-tree/sglang --per-entry

times instead, in this process, the check of each directory and `.py` file of the tree against TYPICAL
(what a Python project's .gitignore holds), as the walk asks it: microseconds an entry, median of 5 passes.

    python3 bench/ignore_bench.py --work /tmp/ignmem --memory 31 90000 16

builds instead a tree of 31 directories, each with a .gitignore of 90,000 names (one directory fewer than
`-j 16` lists before forking its scanners) and runs `audit -j 16` on it once: the peak RSS of the largest
process, and the time.
"""
import argparse
import os
import random
import shutil
import statistics
import string
import subprocess
import sys
import time

VARIANTS = {
    "none": lambda: [],
    "100,000 names (`name17`)": lambda: [f"name{i}" for i in range(100_000)],
    "20,000 directory globs with a literal start (`pat17_*/`)": lambda: [f"pat{i}_*/" for i in range(20_000)],
    "1 MiB of one-letter lines": lambda: [random.Random(1).choice(string.ascii_lowercase) for _ in range(1 << 19)],
    "1,000 wildcards without a literal start or end (`*x17*`)": lambda: [f"*x{i}*" for i in range(1000)],
    "20,000 wildcards without a literal start or end (`*x17*`)": lambda: [f"*x{i}*" for i in range(20_000)],
    "1,000 `**/d17/**`": lambda: [f"**/d{i}/**" for i in range(1000)],
    "2,000 `**/d17/**`": lambda: [f"**/d{i}/**" for i in range(2000)],
}

# a Python project's usual kinds of lines: names, directories, extensions, a few globs
TYPICAL = (
    "__pycache__/ *.py[cod] *$py.class *.so .Python build/ develop-eggs/ dist/ downloads/ eggs/ .eggs/ lib/ "
    "lib64/ parts/ sdist/ var/ wheels/ share/python-wheels/ *.egg-info/ .installed.cfg *.egg MANIFEST "
    "*.manifest *.spec pip-log.txt htmlcov/ .tox/ .nox/ .coverage .coverage.* .cache nosetests.xml "
    "coverage.xml *.cover *.py,cover .hypothesis/ .pytest_cache/ cover/ *.mo *.pot *.log local_settings.py "
    "db.sqlite3 instance/ docs/_build/ target/ .ipynb_checkpoints profile_default/ ipython_config.py "
    "__pypackages__/ *.sage.py .env .venv env/ venv/ ENV/ env.bak/ venv.bak/ /site .mypy_cache/ "
    "dmypy.json .pyre/ .pytype/ cython_debug/ *.whl **/outputs/** [Bb]in/ *~ .idea/ .vscode/ *.swp "
    "*.orig /benchmarks/results/ /tmp/ *.pt *.safetensors *.ckpt wandb/ runs/ core.* nohup.out"
).split()


def per_entry(tree: str) -> None:
    from topk_migrate import discover

    entries = []
    for root, dirs, files in os.walk(tree):
        rel = os.path.relpath(root, tree)
        base = [] if rel == "." else rel.split(os.sep)
        entries += [(base + [d], True) for d in dirs] + [(base + [f], False) for f in files if f.endswith(".py")]
    spec = discover.compile_patterns(TYPICAL)
    states, passes = spec.start(), []
    for _ in range(5):
        t = time.perf_counter()
        for parts, is_dir in entries:
            spec.check_walk(parts, 0, is_dir, states)
        passes.append(time.perf_counter() - t)
    print(f"{discover.__file__}: {len(spec.patterns)} patterns, {len(entries)} entries: "
          f"{statistics.median(passes) * 1e6 / len(entries):.2f} us an entry")


def memory(work: str, dirs: int, lines: int, jobs: int) -> None:
    import resource

    shutil.rmtree(work, ignore_errors=True)
    for d in range(dirs):
        os.makedirs(os.path.join(work, f"d{d}", "sub"))
        with open(os.path.join(work, f"d{d}", ".gitignore"), "w") as f:
            f.write("".join(f"n{d}_{i}\n" for i in range(lines)))
        for k in range(3):
            with open(os.path.join(work, f"d{d}", "sub", f"m{k}.py"), "w") as f:
                f.write("x = 1\n")
    t = time.perf_counter()
    run = subprocess.run([sys.executable, "-m", "topk_migrate", "audit", "-j", str(jobs), "--format", "json",
                          "-o", os.path.join(work, "report.json"), work], capture_output=True, text=True)
    took = time.perf_counter() - t
    if run.returncode not in (0, 1):
        sys.exit(f"exit {run.returncode}: {run.stderr[-500:]}")
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"{dirs} directories, each a .gitignore of {lines} names; audit -j {jobs}: peak RSS {peak:.0f} MB "
          f"(the largest process), {took:.1f} s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tree")
    ap.add_argument("--work", help="a folder for the hard-linked copy (emptied first)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--only", action="append", default=[], help="variants whose name starts so (and none)")
    ap.add_argument("--per-entry", action="store_true", help="time the check of each entry against TYPICAL")
    ap.add_argument("--memory", nargs=3, type=int, metavar=("DIRS", "LINES", "JOBS"),
                    help="peak memory of audit on DIRS directories with a .gitignore of LINES names each")
    args = ap.parse_args()
    if args.per_entry:
        return per_entry(args.tree)
    if args.memory:
        return memory(args.work, *args.memory)
    if not args.work or not args.tree:
        ap.error("--tree and --work are needed")
    names = [n for n in VARIANTS if n == "none" or not args.only or any(n.startswith(o) for o in args.only)]
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    tree = os.path.join(args.work, "tree")
    subprocess.run(["cp", "-al", args.tree, tree], check=True)
    texts = {n: "".join(line + "\n" for line in VARIANTS[n]()) for n in names}
    report = os.path.join(args.work, "report.json")
    times: dict = {n: [] for n in names}
    for r in range(args.rounds):
        for n in names[r % len(names):] + names[:r % len(names)]:
            with open(os.path.join(tree, ".gitignore"), "w") as f:
                f.write(texts[n])
            t = time.perf_counter()
            run = subprocess.run([sys.executable, "-m", "topk_migrate", "audit", "-j", "1", "--format", "json",
                                  "-o", report, tree], capture_output=True, text=True)
            times[n].append(time.perf_counter() - t)
            if run.returncode not in (0, 1):
                sys.exit(f"{n}: exit {run.returncode}: {run.stderr[-500:]}")
    files = sum(1 for _, _, fs in os.walk(tree) for f in fs if f.endswith(".py"))
    base = statistics.median(times["none"])
    print(f"{files} .py files, {args.rounds} rounds, rotating order, load {os.getloadavg()[0]:.2f}\n")
    print("| top .gitignore | bytes | audit -j 1 (median) | / no ignore file |\n|---|---|---|---|")
    for n in names:
        m = statistics.median(times[n])
        print(f"| {n} | {len(texts[n].encode())} | {m:.2f} s | {m / base:.2f}x |")


if __name__ == "__main__":
    main()
