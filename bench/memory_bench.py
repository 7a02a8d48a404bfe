"""Peak memory of `topk-migrate audit` and `check` on one generated file that mentions the
kernel: one import and `x = 1` lines (the densest ordinary code: ~0.5 tokens per byte),
the same with one kernel call, and the example backend repeated (ordinary code).

    python3 bench/memory_bench.py [--sizes 1,8,50] [--out results/memory-bench.md]

Each run is a child process; its peak RSS is read from resource.getrusage(RUSAGE_CHILDREN)
(the main process and, for audit, the largest worker). TOPK_MIGRATE_MAX_BYTES is raised
so the 50 MB file reaches the engine; the memory bound (TOPK_MIGRATE_MAX_MEMORY) is left
at its default unless --budget is given.
"""
import argparse
import os
import subprocess
import sys
import tempfile

HEAD = "from sgl_kernel import flash_mla_sparse_fwd\n"


BACKEND = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "examples", "dsa_backend.py")


def make(path, mb, shape):
    """dense: the import and `x = 1` lines (no call); dense+call: the same and one kernel call;
    backend: the example backend repeated (ordinary code, a fixable call per copy)."""
    n = int(mb * 1024 * 1024)
    if shape == "backend":
        b = open(BACKEND).read()
        text = b * max(1, n // len(b))
    else:
        call = "\n\ndef f(q, kv, i, m):\n    return flash_mla_sparse_fwd(q, kv, i, 1.0)\n" if shape == "dense+call" else ""
        text = HEAD + "x = 1\n" * ((n - len(HEAD)) // 6) + call
    with open(path, "w") as f:
        f.write(text)


def run(cmd, env):
    code = ("import resource, subprocess, sys, time; t = time.monotonic(); "
            "r = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
            "peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss; "
            "print(r.returncode, peak, round(time.monotonic() - t, 1)); "
            "lines = (r.stdout + r.stderr).splitlines(); err = [ln for ln in lines if ': error: ' in ln]; "
            "tail = [ln for ln in lines if ' error(s)' in ln]; print((err or tail or [''])[0])")
    out = subprocess.run([sys.executable, "-c", code, *cmd], capture_output=True, text=True, env=env).stdout.splitlines()
    rc, peak, secs = out[0].split()
    return int(rc), int(peak) / 1024, float(secs), (out[1] if len(out) > 1 else "")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1,8,50")
    ap.add_argument("--budget", help="TOPK_MIGRATE_MAX_MEMORY (MiB) for the runs")
    ap.add_argument("--out")
    a = ap.parse_args()
    env = dict(os.environ, TOPK_MIGRATE_MAX_BYTES=str(200 << 20))
    if a.budget:
        env["TOPK_MIGRATE_MAX_MEMORY"] = a.budget
    rows = []
    with tempfile.TemporaryDirectory() as d:
        for mb in [float(s) for s in a.sizes.split(",")]:
            for shape in ("dense", "dense+call", "backend"):
                p = os.path.join(d, "big.py")
                make(p, mb, shape)
                for cmd in (["audit", "-j", "1", p], ["audit", "-j", "2", d], ["check", "--kernel", "sglang-kernel==0.4.6", p]):
                    rc, peak, secs, first = run([sys.executable, "-m", "topk_migrate", *cmd], env)
                    name = " ".join(c if c not in (p, d) else ("FILE" if c == p else "DIR") for c in cmd)
                    said = first.split(": error: ", 1)[1] if ": error: " in first else first
                    rows.append((mb, shape, name, rc, peak, peak / mb, secs, said[:100]))
                    print(rows[-1], flush=True)
    lines = ["| input | shape | command | exit | peak RSS (MB) | per MB of input | seconds | what it said |",
             "|---|---|---|---|---|---|---|---|"]
    lines += [f"| {mb:g} MB | {c} | `{n}` | {rc} | {pk:.0f} | {per:.0f} | {s} | {fl.replace('|', '/')} |"
              for mb, c, n, rc, pk, per, s, fl in rows]
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
