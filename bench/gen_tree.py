#!/usr/bin/env python3
"""Write a synthetic tree shaped like the benchmark tree (bench/build_tree.sh), where no wheels can be had.

13,233 .py files of 16.6 KB on average (log-normal sizes, from a few hundred bytes
to 1 MB), seven to a directory, three to five directories deep; 12 of them call
the kernel (half passing topk_length), and 1 in 20 holds a decoy that the byte
prefilter must look at twice (`sparse_` without a kernel name). Deterministic
(--seed). --copies N writes N such trees side by side (the 10x-size measurement).

    python3 bench/gen_tree.py /tmp/synth-tree [--files 13233] [--copies 1]
"""
from __future__ import annotations

import argparse
import os
import random

CALL = ("import torch\nfrom sgl_kernel.flash_mla import flash_mla_sparse_fwd\n\n\n"
        "def forward_{i}(q, kv, indices, metadata):\n"
        "    return flash_mla_sparse_fwd(q, kv, indices, 1.0{extra})\n\n\n")
DECOY = "def sparse_attention(x):  # sparse_ kernels elsewhere\n    return x\n\n\n"


def corpus(rng: random.Random) -> str:
    """A few MB of ordinary-looking Python, cut into files at line boundaries."""
    words = ["hidden", "states", "weight", "bias", "layer", "config", "tensor", "batch", "seq_len", "head_dim",
             "num_heads", "dtype", "device", "kv_cache", "block", "scale", "output", "residual", "norm", "rope"]
    out = []
    for i in range(12000):
        a, b, c = rng.choice(words), rng.choice(words), rng.choice(words)
        out.append(f"def {a}_{b}_{i}(self, {c}, {b}=None):\n"
                   f"    \"\"\"Compute {a} from {b} and {c}.\"\"\"\n"
                   f"    {a} = self.{b}({c}) * {rng.randint(1, 999)}\n"
                   f"    if {b} is not None:\n        {a} = {a} + {b}.view(-1, {rng.randint(1, 64)})\n"
                   f"    return {a}\n\n\n")
    return "".join(out)


def write_tree(top: str, files: int, seed: int) -> int:
    rng = random.Random(seed)
    text = corpus(rng)
    calls = set(rng.sample(range(files), 12))
    total = 0
    for n in range(files):
        depth = 3 + n % 3
        parts = [f"pkg{(n // 7) % 13}", *(f"mod{(n // (7 * 13 ** k)) % 11}" for k in range(1, depth))]
        d = os.path.join(top, *parts)
        os.makedirs(d, exist_ok=True)
        size = min(int(rng.lognormvariate(9.1, 1.0)), 1 << 20)
        start = text.find("\ndef ", rng.randrange(0, max(1, len(text) - size)))
        body = text[start + 1:start + 1 + size] if start >= 0 else text[:size]
        while len(body) < size:  # a big file: the corpus again
            body += text[: size - len(body)]
        body = body[: body.rfind("\n\n\n") + 3]  # whole functions only
        if n in calls:
            body = CALL.format(i=n, extra=", topk_length=metadata.lens" if n % 2 else "") + body
        elif n % 20 == 0:
            body = DECOY + body
        with open(os.path.join(d, f"file_{n}.py"), "w") as f:
            f.write(body)
        total += len(body)
    return total


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("top")
    ap.add_argument("--files", type=int, default=13233)
    ap.add_argument("--copies", type=int, default=1)
    ap.add_argument("--seed", type=int, default=12)
    args = ap.parse_args()
    total = 0
    for c in range(args.copies):
        total += write_tree(os.path.join(args.top, f"copy{c}") if args.copies > 1 else args.top, args.files, args.seed)
    print(f"{args.copies * args.files} files, {total / 1e6:.0f} MB under {args.top}")


if __name__ == "__main__":
    main()
