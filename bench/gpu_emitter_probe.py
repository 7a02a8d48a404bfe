"""Probe sgl_kernel's top-k emitters on edge rows: per row, how many entries
are valid, whether they are front-packed, distinct and in range. Prints one
line per (emitter, row kind); a first look before the smoke drives them.

    python3 bench/gpu_emitter_probe.py
"""
import torch
from sgl_kernel import fast_topk_transform_fused, fast_topk_transform_ragged_fused, fast_topk_v2

K = 2048


def summary(out, lengths, s_kv):
    out = out.cpu().long()
    lens = lengths.cpu().long().clamp(min=0, max=K)
    pos = torch.arange(K)
    valid = (out >= 0) & (out < s_kv)
    prefix = pos[None] < lens[:, None]
    count_ok = (valid.sum(1) == lens)
    packed = ~(prefix & ~valid).any(1) & ~(~prefix & (out != -1)).any(1)
    distinct = torch.tensor([len(set(r[:n].tolist())) == n for r, n in zip(out, lens.tolist())])
    return count_ok, packed, distinct


def poisoned(score, lengths):
    out = torch.full((score.shape[0], K), 7_777_777, dtype=torch.int32, device=score.device)
    torch.ops.sgl_kernel.fast_topk(score, out, lengths, None)
    return out


def main():
    dev = "cuda"
    g = torch.Generator(device=dev).manual_seed(0)
    kinds = {
        "len0": (0, "rand"), "len1": (1, "rand"), "len2047": (2047, "rand"), "len2048": (2048, "rand"),
        "len2049": (2049, "rand"), "len5000": (5000, "rand"), "len40000": (40000, "rand"),
        "ties_all_5000": (5000, "zeros"), "ties_all_20000": (20000, "zeros"), "ties_all_40000": (40000, "zeros"),
        "ties_few_values_9000": (9000, "few"), "neg_inf_tail_5000": (5000, "neginf"),
    }
    width = 40000
    names = list(kinds)
    lengths = torch.tensor([kinds[n][0] for n in names], dtype=torch.int32, device=dev)
    score = torch.randn((len(names), width), generator=g, device=dev)
    for i, n in enumerate(names):
        mode = kinds[n][1]
        if mode == "zeros":
            score[i] = 0.0
        elif mode == "few":
            score[i] = torch.randint(0, 4, (width,), generator=g, device=dev).float()
        elif mode == "neginf":
            score[i, 1000:] = float("-inf")
    rows = len(names)
    table = torch.randperm(rows * width, generator=g, device=dev).to(torch.int32).view(rows, width)
    cu = torch.arange(rows + 1, dtype=torch.int32, device=dev)
    offs = torch.arange(rows, dtype=torch.int32, device=dev) * width
    runs = {
        "fast_topk_v2": lambda: fast_topk_v2(score, lengths, K),
        "transform_fused(decode)": lambda: fast_topk_transform_fused(score, lengths, table, cu, K),
        "transform_fused(prefill,row_starts=0)": lambda: fast_topk_transform_fused(
            score, lengths, table, cu, K, row_starts=torch.zeros(rows, dtype=torch.int32, device=dev)),
        "ragged_fused": lambda: fast_topk_transform_ragged_fused(score, lengths, offs, K),
        "fast_topk op, output poisoned first": lambda: poisoned(score, lengths),
    }
    for name, fn in runs.items():
        for rep in range(2):
            out = fn()
            torch.cuda.synchronize()
            c, p, d = summary(out, lengths, rows * width)
            bad = [f"{names[i]}(count={'ok' if c[i] else 'BAD'},packed={'ok' if p[i] else 'BAD'},distinct={'ok' if d[i] else 'BAD'})"
                   for i in range(rows) if not (c[i] and p[i] and d[i])]
            print(f"{name} rep{rep}: {rows - len(bad)}/{rows} rows ok" + (": " + "; ".join(bad) if bad else ""))


if __name__ == "__main__":
    main()
