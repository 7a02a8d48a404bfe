"""How `topk-migrate check` scales with the size of one file, for these shapes:

* copies: the example backend repeated N times (each copy re-defines the same classes and
  functions, so they override each other);
* direct: N direct kernel calls in one function, with the metadata in scope;
* helper: one helper that calls the kernel, and N methods that call the helper;
* functions: N module-level functions each calling the kernel once, the metadata a parameter they
  never read (each site manual); functions_meta: each reads `metadata.dsa_cache_seqlens_int32`
  first (each site fixable: the whole analysis and a guard inserted in each function);
* methods, methods_meta: one class with N such methods;
* classes, classes_meta: N classes with one such method each;
* nested: N kernel calls in a `with` block of one method (statements inside a block, not of a body).

    python3 bench/scale_bench.py [--shapes copies,direct,helper] [--sizes 25,50,100] [--limit 120]

Each run is a child process `python3 -m topk_migrate check --kernel sglang-kernel==0.4.6 FILE`;
its CPU time (user + system) comes from resource.getrusage(RUSAGE_CHILDREN). A shape stops
doubling once a run passes --limit seconds. The ratio is this size's CPU time over the previous
size's: about 2 per doubling is linear, 4 quadratic.
"""
import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time

BACKEND = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "examples", "dsa_backend.py")
IMPORT = ("import torch\nfrom sgl_kernel.flash_mla import flash_mla_sparse_fwd\n\n\n"
          "class DSAMetadata:\n    dsa_cache_seqlens_int32: torch.Tensor\n\n\n")


def copies(n: int) -> str:
    with open(BACKEND) as f:
        return f.read() * n


def direct(n: int) -> str:
    calls = "".join(
        f"        o{i}, _, _ = flash_mla_sparse_fwd(q=q, kv=kv, indices=indices, sm_scale=1.0, d_v=512)\n"
        for i in range(n))
    return (IMPORT + "class Backend:\n    def forward(self, q, kv, indices):\n"
            "        metadata = self.forward_metadata\n" + calls + "        return o0\n")


def helper(n: int) -> str:
    callers = "".join(
        f"    def forward_{i}(self, q, kv, indices):\n"
        f"        metadata = self.forward_metadata\n"
        f"        return self._sparse(q, kv, indices)\n\n"
        for i in range(n))
    return (IMPORT + "class Backend:\n" + callers +
            "    def _sparse(self, q_all, kv, indices):\n"
            "        out, _, _ = flash_mla_sparse_fwd(q=q_all, kv=kv, indices=indices, sm_scale=1.0, d_v=512)\n"
            "        return out\n")


def compliant(n: int) -> str:
    """`direct`, every call passing topk_length: what a migrated backend holds (audit's quick classifier)."""
    return direct(n).replace("d_v=512)", "d_v=512, topk_length=metadata.dsa_cache_seqlens_int32)")


KERNEL_IMPORT = "from sgl_kernel.flash_mla import flash_mla_sparse_fwd\n\n\n"
READ = "metadata.dsa_cache_seqlens_int32"


def _body(indent: str, meta: bool) -> str:
    return (f"{indent}s = {READ}\n" if meta else "") + f"{indent}return flash_mla_sparse_fwd(q, kv, idx, scale)\n"


def functions(n: int, meta: bool = False) -> str:
    return KERNEL_IMPORT + "\n\n".join(f"def f{i}(q, kv, idx, scale, metadata):\n{_body('    ', meta)}" for i in range(n))


def methods(n: int, meta: bool = False) -> str:
    return KERNEL_IMPORT + "class Backend:\n" + "\n".join(
        f"    def m{i}(self, q, kv, idx, scale, metadata):\n{_body('        ', meta)}" for i in range(n))


def classes(n: int, meta: bool = False) -> str:
    return KERNEL_IMPORT + "\n\n".join(
        f"class C{i}:\n    def m(self, q, kv, idx, scale, metadata):\n{_body('        ', meta)}" for i in range(n))


def nested(n: int) -> str:
    calls = "".join(f"            o{i} = flash_mla_sparse_fwd(q, kv, idx, 1.0)\n" for i in range(n))
    return ("import torch\n" + KERNEL_IMPORT + "class Backend:\n    def forward(self, q, kv, idx, metadata):\n"
            f"        s = {READ}\n        with torch.no_grad():\n" + calls + "        return o0\n")


SHAPES = {"copies": copies, "direct": direct, "helper": helper, "compliant": compliant,
          "functions": functions, "functions_meta": lambda n: functions(n, True),
          "methods": methods, "methods_meta": lambda n: methods(n, True),
          "classes": classes, "classes_meta": lambda n: classes(n, True), "nested": nested}


def measure(path: str, limit: float, command: str = "check"):
    """CPU seconds, wall seconds and exit code of one check (or audit) run (None on a timeout)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    try:
        rc = subprocess.run([sys.executable, "-m", "topk_migrate", command, "--kernel", "sglang-kernel==0.4.6", path],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=limit).returncode
    except subprocess.TimeoutExpired:
        return None, time.perf_counter() - start, None
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, time.perf_counter() - start, rc


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default="copies,direct,helper")
    ap.add_argument("--sizes", default="25,50,100")
    ap.add_argument("--limit", type=float, default=120.0, help="seconds before a run is stopped")
    ap.add_argument("--command", default="check", choices=["check", "audit"])
    args = ap.parse_args()
    env_note = "TOPK_MIGRATE_MAX_BYTES" in os.environ
    print("| shape | N | bytes | CPU s | wall s | rc | CPU ratio per doubling |" + (" (max bytes raised)" if env_note else ""))
    print("|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for shape in args.shapes.split(","):
            previous = None
            for n in (int(s) for s in args.sizes.split(",")):
                os.mkdir(os.path.join(tmp, f"{shape}_{n}"))  # alone in its folder: no sibling module to read
                path = os.path.join(tmp, f"{shape}_{n}", "backend.py")
                with open(path, "w") as f:
                    f.write(SHAPES[shape](n))
                cpu, wall, rc = measure(path, args.limit, args.command)
                if cpu is None:
                    print(f"| {shape} | {n} | {os.path.getsize(path)} | > {args.limit:.0f} (stopped) | {wall:.1f} | - | - |", flush=True)
                    break
                ratio = f"{cpu / previous:.2f}" if previous else "-"
                print(f"| {shape} | {n} | {os.path.getsize(path)} | {cpu:.2f} | {wall:.2f} | {rc} | {ratio} |", flush=True)
                previous = cpu


if __name__ == "__main__":
    main()
