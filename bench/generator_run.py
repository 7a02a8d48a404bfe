#!/usr/bin/env python3
"""Run generated programs (tests/adversarial/grammar.py) before and after apply; write results/generator.md.

    python3 bench/generator_run.py [--seed 25] [-n 1000] [-o results/generator.md]
    python3 bench/generator_run.py --seed S --index I      # one generated project, every run it allows

Each program runs under the contract-enforcing stub kernel (tests/stubs) before and after
`topk-migrate apply` (in-process, as tests/test_generator.py does); a program that ran before and
raises after, gets a length that disagrees with its indices, changes its output or hides a kernel
use is a wrong rewrite. Wrong programs are minimized and grouped by the construct that causes them.
The mutation section of the output file (bench/generator_mutations.py) is kept as it is.
"""
from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tests"))

from adversarial import genrun, grammar  # noqa: E402

MUTATIONS_BEGIN, MUTATIONS_END = "<!-- mutations: bench/generator_mutations.py -->", "<!-- /mutations -->"


def _commit() -> str:
    try:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", "topk_migrate", "codemods"],
                               cwd=REPO, capture_output=True, text=True).stdout.strip()
        return rev + (" (analysis files modified in the work tree)" if dirty else "")
    except OSError:
        return "?"


def _load() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "?"


def grammar_section() -> str:
    lines = ["## The grammar", "",
             "Productions (tests/adversarial/grammar.py; the first alternative is the reference shape):", ""]
    for prod, alts in grammar.every_production().items():
        lines.append(f"- `{prod}` ({len(alts)}): " + ", ".join(f"`{a}`" for a in alts))
    lines += ["", "Runs (files unchanged, read from the environment): the metadata object built "
              "(full, none, no field, a class named like the declared one), the kernel generation the pins allow, "
              "ADV_LEGACY / ADV_PATCH flags for the rebinding and reflection productions, sgl_kernel hidden "
              "for the try/except fallback.", ""]
    return "\n".join(lines)


def write(path: str, text: str) -> None:
    old = open(path).read() if os.path.exists(path) else ""
    keep = ""
    if MUTATIONS_BEGIN in old and MUTATIONS_END in old:
        keep = old[old.index(MUTATIONS_BEGIN):old.index(MUTATIONS_END) + len(MUTATIONS_END)]
    else:
        keep = MUTATIONS_BEGIN + "\n## Mutation check\n\nNot run yet: `python3 bench/generator_mutations.py`.\n" + MUTATIONS_END
    with open(path, "w") as f:
        f.write(text.rstrip() + "\n\n" + keep + "\n")


def one(seed: int, index: int) -> int:
    progs = [p for p in grammar.programs(seed, (index + 1) * 3 + 3) if p.index == index]
    if not progs:
        print(f"no program {seed}:{index}")
        return 2
    print(genrun.source_of(progs[0]))
    bad = 0
    with genrun.Runner() as runner:
        for sc in grammar.scenarios(progs[0].spec):
            r = runner.run(grammar.Program(seed, index, progs[0].spec, sc))
            state = "BROKEN ORIGINAL" if r.broken else "WRONG" if r.wrong else "fixed" if r.fixed else "not fixed (sound)"
            print(f"\n== run [{sc.label()}]: {state}")
            for x in r.problems:
                print("  -", x)
            for ln, st, why in r.sites:
                print(f"  site line {ln}: {st} \u2014 {why}")
            bad += r.wrong
            if r.diff and sc == grammar.scenarios(progs[0].spec)[0]:
                print(r.diff)
    print(f"\nspec: {progs[0].spec!r}")
    return 1 if bad else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=25)
    ap.add_argument("-n", type=int, default=1000, help="programs to run (default 1000: the default test tier)")
    ap.add_argument("--runs-per-spec", type=int, default=3)
    ap.add_argument("--index", type=int, help="show and run one generated project of --seed")
    ap.add_argument("--minimize-budget", type=int, default=120, help="runs per minimization")
    ap.add_argument("-o", "--output", default=os.path.join(REPO, "results", "generator.md"))
    ap.add_argument("--no-write", action="store_true")
    a = ap.parse_args(argv)
    if a.index is not None:
        return one(a.seed, a.index)
    progs = grammar.programs(a.seed, a.n, a.runs_per_spec)
    load0 = _load()
    with genrun.Runner() as runner:
        summary = genrun.run_many(progs, runner)
        print(f"{summary.programs} programs ({summary.specs} projects) in {summary.seconds:.1f} s: "
              f"{summary.rate:.1f} programs/s; broken originals {len(summary.broken)}; wrong {len(summary.wrong)}; "
              f"safe {summary.safe}, refused {len(summary.safe_refused)}", flush=True)
        t = time.perf_counter()
        classes = genrun.classify(runner, summary.wrong, a.minimize_budget)
        print(f"{len(classes)} classes of wrong rewrites (minimized in {time.perf_counter() - t:.1f} s)")
    for n, c in enumerate(classes, 1):
        print(f"  W{n}: {c.label} -- {c.kind} ({len(c.members)} programs, first {c.members[0].program.key})")
    cmd = f"python3 bench/generator_run.py --seed {a.seed} -n {a.n}" + (
        f" --runs-per-spec {a.runs_per_spec}" if a.runs_per_spec != 3 else "")
    head = ("# Program generator (issue 25, item 7)\n\n"
            "Generated DSA backends run before and after `topk-migrate apply` under the contract-enforcing stub "
            "kernel (tests/stubs): the oracle is execution only. The default test tier "
            "(`python3 -m pytest -q tests/test_generator.py`) runs a part of seed 25's first 1,000 programs (the first "
            "150 and the fewest more that draw every alternative of every production); the heavy tier (`-m heavy`) "
            f"all 1,000, and 8,000 of seed {genrun.HEAVY_SEED} (`TOPK_GEN_SEED=S` picks another, "
            "`TOPK_GEN_SEED=random` draws one).\n\n"
            f"Engine at {_commit()}; {platform.python_version()}, {os.cpu_count()} cores, "
            f"load average {load0} before the run.\n")
    text = report(summary, classes, cmd, head) + "\n" + grammar_section()
    if not a.no_write:
        write(a.output, text)
        print(f"wrote {a.output}")
    return 0


report = genrun.report

if __name__ == "__main__":
    sys.exit(main())
