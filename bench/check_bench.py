"""`check` and `apply --diff` of one real backend against a LibCST parse of it (issue 23).

    python3 bench/check_bench.py [--rounds 5] [--many-rounds 3] [--skip-many] [--write results/check-bench.md]
    python3 bench/check_bench.py --checkout /tmp/old ...   # the engine of another checkout (git worktree add /tmp/old REV)
    python3 bench/check_bench.py --skip-real --shapes functions_meta,classes_meta --many 500,5000   # other shapes only

Times, in one run, paired and interleaved, each command a child process (CPU = user + system of
the child, from os.wait4; the machine's load moves wall times, so CPU is the figure):

* for each of sglang 0.5.16's `dsa_backend.py`, 0.5.12.post1's `nsa_backend.py` and sglang-kt
  0.7.2's `nsa_backend.py` (each alone in a folder of its own, from the cached wheels in
  ~/.cache/topk-migrate-tests, downloaded once if missing):
  `python3 -c "import libcst; libcst.parse_module(...)"`, `topk-migrate check --kernel K F` and
  `topk-migrate apply --diff --kernel K F`, in rotating order each round; the ratios are the
  medians of the per-round ratios to that round's parse (goal: <= 2x);
* `check` of a file without the kernel name (sglang's base_attn_backend.py) against
  `python3 -c "import click"` (goal: <= 1.2x);
* `check` of files with 500 and 5,000 fixable calls (bench/scale_bench.py's `direct` shape),
  interleaved (goal: 5,000 <= 10.5x 500, and <= 3 ms per site); --shapes: the same for each of these
  scale_bench.py shapes (N functions, N methods of a class, N classes, ...: the 10.5x goal for each,
  the per-site goal for `direct` only); --skip-real: only these.

Prints a markdown report and writes it to --write (default: print only).
"""
from __future__ import annotations

import argparse
import os
import shlex
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
import scale_bench  # noqa: E402  (the many-sites shapes)

CACHE = Path(os.environ.get("TOPK_MIGRATE_TEST_CACHE", Path.home() / ".cache" / "topk-migrate-tests"))
ATTENTION = "sglang/srt/layers/attention/"
REAL = [  # (label, distribution, version, path in the wheel)
    ("sglang 0.5.16 dsa_backend.py", "sglang", "0.5.16", ATTENTION + "dsa_backend.py"),
    ("sglang 0.5.12.post1 nsa_backend.py", "sglang", "0.5.12.post1", ATTENTION + "nsa_backend.py"),
    ("sglang-kt 0.7.2 nsa_backend.py", "sglang-kt", "0.7.2", ATTENTION + "nsa_backend.py"),
]
PLAIN = ("sglang", "0.5.16", ATTENTION + "base_attn_backend.py")  # no kernel name in it
KERNEL = "sglang-kernel==0.4.6"
PARSE = "import sys, libcst; libcst.parse_module(open(sys.argv[1], encoding='utf-8').read())"


def wheel(dist: str, version: str) -> Path:
    stem = dist.replace("-", "_")
    found = sorted(CACHE.glob(f"{stem}-{version}-*.whl"))
    if not found:
        CACHE.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                        "-d", str(CACHE), f"{dist}=={version}"], check=True)
        found = sorted(CACHE.glob(f"{stem}-{version}-*.whl"))
    return found[0]


def extract(dist: str, version: str, member: str, dest: Path) -> Path:
    """The member alone in a folder of its own (no sibling module, no pin: --kernel decides)."""
    folder = dest / f"{dist}-{version}"
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / os.path.basename(member)
    with zipfile.ZipFile(wheel(dist, version)) as z:
        target.write_bytes(z.read(member))
    return target


ENV = None  # --checkout: the environment that imports that checkout's engine
CWD = None


def engine_from(checkout: Path, dest: Path) -> None:
    """An importable copy of a checkout's engine, laid out as installed (codemods/ and fixtures/ inside
    topk_migrate/), found first on PYTHONPATH; the children then run from a folder outside every checkout."""
    import shutil

    global ENV, CWD
    pkg = dest / "topk_migrate"
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(checkout / "topk_migrate", pkg, ignore=ignore)
    shutil.copytree(checkout / "codemods", pkg / "codemods", ignore=ignore)
    shutil.copytree(checkout / "fixtures", pkg / "fixtures", ignore=ignore)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(pkg)], check=True)
    ENV = {**os.environ, "PYTHONPATH": str(dest)}
    CWD = str(dest)


def timed(cmd):
    """(wall seconds, CPU seconds of the child, exit code)."""
    t = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV, cwd=CWD)
    _, status, ru = os.wait4(p.pid, 0)
    return time.perf_counter() - t, ru.ru_utime + ru.ru_stime, os.waitstatus_to_exitcode(status)


def interleaved(cmds: dict, rounds: int, ok=(0, 1)) -> dict:
    """{key: [(wall, cpu), ...]}: each round runs every command once, the order rotated each round."""
    keys = list(cmds)
    runs = {k: [] for k in keys}
    for r in range(rounds):
        for k in keys[r % len(keys):] + keys[:r % len(keys)]:
            wall, cpu, rc = timed(cmds[k])
            if rc not in ok:
                sys.exit(f"{shlex.join(cmds[k])} exited {rc}")
            runs[k].append((wall, cpu))
    return runs


def med_cpu(runs) -> float:
    return statistics.median(c for _, c in runs)


def ratio(runs, base) -> float:
    """Median of the per-round CPU ratios."""
    return statistics.median(c / b for (_, c), (_, b) in zip(runs, base))


def tool_cmd():
    """The console script users run, else `python -m topk_migrate`."""
    script = Path(sysconfig.get_path("scripts")) / "topk-migrate"
    return [str(script)] if script.exists() else [sys.executable, "-m", "topk_migrate"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5, help="rounds for the real files (each runs every command once)")
    ap.add_argument("--click-pairs", type=int, default=15)
    ap.add_argument("--many-rounds", type=int, default=3, help="rounds for the 500/5,000-call files")
    ap.add_argument("--many", default="500,5000", help="the two call counts")
    ap.add_argument("--skip-many", action="store_true")
    ap.add_argument("--shapes", default="direct", help="scale_bench.py shapes for the many-sites files (comma-separated)")
    ap.add_argument("--skip-real", action="store_true", help="only the many-sites files")
    ap.add_argument("--write", type=Path, help="also write the markdown report here")
    ap.add_argument("--checkout", type=Path, help="time the engine of this checkout (a copy of it, made first)")
    args = ap.parse_args()
    # As an installed tool runs: bytecode compiled (an editable checkout would otherwise time the compiler).
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(REPO / "topk_migrate"), str(REPO / "codemods")],
                   check=True, env={k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"})
    tool = tool_cmd()
    source = args.checkout.resolve() if args.checkout else REPO
    engine_dir = tempfile.TemporaryDirectory(prefix="topk-check-engine-")
    if args.checkout:
        engine_from(source, Path(engine_dir.name))
        tool = [sys.executable, "-m", "topk_migrate"]
    commit = subprocess.run(["git", "-C", str(source), "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip() or "?"
    dirty = subprocess.run(["git", "-C", str(source), "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    load0 = os.getloadavg()
    out = [f"At {commit}{' (work tree modified)' if dirty else ''}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
           f"{os.cpu_count()} cores, load {load0[0]:.1f} at the start. Command:", "",
           f"    python3 bench/check_bench.py --rounds {args.rounds} --many-rounds {args.many_rounds}"
           + (" --skip-many" if args.skip_many else "") + (" --skip-real" if args.skip_real else "")
           + (f" --shapes {args.shapes}" if args.shapes != "direct" else "")
           + (f" --many {args.many}" if args.many != "500,5000" else "")
           + (f" --checkout {args.checkout}" if args.checkout else ""), ""]
    with tempfile.TemporaryDirectory(prefix="topk-check-bench-") as tmp:
        tmp = Path(tmp)
        if not args.skip_real:
            out += [f"Real files, median CPU of {args.rounds} interleaved rounds; ratio: median of the per-round ratios "
                    "to the round's LibCST parse (goal <= 2x):", "",
                    "| file | lines | LibCST parse | check | apply --diff | check / parse | apply --diff / parse | <= 2x |",
                    "|---|---|---|---|---|---|---|---|"]
            for label, dist, version, member in REAL:
                path = extract(dist, version, member, tmp / "real")
                cmds = {"parse": [sys.executable, "-c", PARSE, str(path)],
                        "check": tool + ["check", "--kernel", KERNEL, str(path)],
                        "diff": tool + ["apply", "--diff", "--kernel", KERNEL, str(path)]}
                print(f"{label} ...", flush=True)
                runs = interleaved(cmds, args.rounds)
                rc, rd = ratio(runs["check"], runs["parse"]), ratio(runs["diff"], runs["parse"])
                lines = path.read_text(encoding="utf-8").count("\n")
                out.append(f"| {label} | {lines:,} | {med_cpu(runs['parse']):.3f} s | {med_cpu(runs['check']):.3f} s | "
                           f"{med_cpu(runs['diff']):.3f} s | {rc:.2f}x | {rd:.2f}x | {'yes' if max(rc, rd) <= 2 else 'no'} |")
            plain = extract(*PLAIN, tmp / "plain")
            print("no kernel name vs import click ...", flush=True)
            runs = interleaved({"click": [sys.executable, "-c", "import click"],
                                "check": tool + ["check", str(plain)]}, args.click_pairs)
            rp = ratio(runs["check"], runs["click"])
            out += ["", f"A file without the kernel name ({PLAIN[0]} {PLAIN[1]} {os.path.basename(PLAIN[2])}), "
                        f"{args.click_pairs} interleaved pairs:", "",
                    "| command | median CPU | ratio | <= 1.2x |", "|---|---|---|---|",
                    f"| `python3 -c \"import click\"` | {med_cpu(runs['click']):.3f} s | 1.00x | |",
                    f"| `topk-migrate check F` | {med_cpu(runs['check']):.3f} s | {rp:.2f}x | {'yes' if rp <= 1.2 else 'no'} |"]
        if not args.skip_many:
            small, big = (int(x) for x in args.many.split(","))
            for shape in args.shapes.split(","):
                make = scale_bench.SHAPES[shape]
                cmds = {}
                for n in (small, big):
                    folder = tmp / f"{shape}_{n}"
                    folder.mkdir()
                    (folder / "backend.py").write_text(make(n))
                    cmds[n] = tool + ["check", "--kernel", KERNEL, str(folder / "backend.py")]
                print(f"{shape}: {small} and {big} calls ...", flush=True)
                runs = interleaved(cmds, args.many_rounds)
                rm = ratio(runs[big], runs[small])
                per_site = med_cpu(runs[big]) / big * 1000
                goal, met = ("<= 10.5x, <= 3 ms per site", rm <= 10.5 and per_site <= 3) if shape == "direct" else (
                    "<= 10.5x", rm <= 10.5)
                what = ": N fixable calls in one function" if shape == "direct" else ""
                out += ["", f"Many sites (scale_bench.py's `{shape}` shape{what}), `check`, median CPU of "
                            f"{args.many_rounds} interleaved rounds:", "",
                        f"| calls | median CPU | ms per site | ratio to {small} | goal | met |", "|---|---|---|---|---|---|",
                        f"| {small} | {med_cpu(runs[small]):.2f} s | {med_cpu(runs[small]) / small * 1000:.2f} | 1.00x | | |",
                        f"| {big} | {med_cpu(runs[big]):.2f} s | {per_site:.2f} | {rm:.2f}x | {goal} | "
                        f"{'yes' if met else 'no'} |"]
    load1 = os.getloadavg()
    out += ["", f"Load {load0[0]:.1f} before, {load1[0]:.1f} after.", ""]
    engine_dir.cleanup()
    text = "\n".join(out)
    print(text)
    if args.write:
        args.write.write_text(text)


if __name__ == "__main__":
    main()
