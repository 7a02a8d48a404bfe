"""Decode facts for the decode rule: FlashMLA's sparse decode kernel
(`sgl_kernel.flash_mla.flash_mla_with_kvcache` with `indices`) and `topk_length`.

Answers, on the installed sgl_kernel (sglang-kernel 0.4.6 when recorded):
 (a) does passing topk_length run at all with *tensor* scheduling metadata
     (get_mla_metadata(cache_seqlens, ...) -> tensors, what sglang 0.5.16's
     `_forward_flashmla_kv` uses)? Through the wrapper, and through the op;
 (b) with scheduling metadata rebuilt per call (a fresh FlashMLASchedMeta, the
     newer API), is the output bitwise identical with and without topk_length?
 (c) is it faster, and by how much, on decode batches of mixed lengths?
     Paired, interleaved CUDA-event timing, median of per-pair ratios.

Sparse decode reads an FP8 cache: 656 bytes per token (512 fp8 e4m3 NoPE
values, 4 float32 scales, one per 128 values, then 64 bf16 RoPE values); the
cache here is quantized from random bf16 values the same way.

    python3 bench/gpu_decode_topk.py [--json out.json]
"""
from __future__ import annotations

import argparse
import json

import torch

from topk_migrate.codemods.pass_topk_length.smoke.measure import paired_timing  # the smoke's A/B timing, shared

TOPK, D_QK, D_V, PAGE = 2048, 576, 512, 64


def quantize_fp8_sparse(kv: torch.Tensor) -> torch.Tensor:
    """[tokens, 576] bf16 -> [tokens, 656] bytes in the sparse-decode FP8 layout."""
    n = kv.shape[0]
    nope, rope = kv[:, :D_V].float(), kv[:, D_V:]
    tiles = nope.view(n, 4, 128)
    scale = (tiles.abs().amax(dim=-1) / 448.0).clamp(min=1e-8)  # [n, 4] float32
    q8 = (tiles / scale[..., None]).clamp(-448, 448).to(torch.float8_e4m3fn).view(n, D_V)
    out = torch.empty((n, 656), dtype=torch.uint8, device=kv.device)
    out[:, :D_V] = q8.view(torch.uint8)
    out[:, D_V:D_V + 16] = scale.contiguous().view(torch.uint8)
    out[:, D_V + 16:] = rope.contiguous().view(torch.uint8)
    return out


def make_batch(lengths, heads, gen, device="cuda"):
    """q, fp8 cache, front-packed indices (like the top-k emitters' output) and topk_length."""
    bs = len(lengths)
    ctx = [max(1, v) for v in lengths]
    tokens = sum(ctx)
    blocks = (tokens + PAGE - 1) // PAGE + 1
    kv = (torch.randn((blocks * PAGE, D_QK), generator=gen, device=device) / 4).to(torch.bfloat16)
    cache = quantize_fp8_sparse(kv).view(blocks, PAGE, 1, 656)
    q = (torch.randn((bs, 1, heads, D_QK), generator=gen, device=device) / 4).to(torch.bfloat16)
    idx = torch.full((bs, 1, TOPK), -1, dtype=torch.int32, device=device)
    start = 0
    for b, n in enumerate(lengths):
        k = min(n, TOPK)
        if k:
            pos = torch.randperm(ctx[b], generator=gen, device=device)[:k]
            idx[b, 0, :k] = (start + pos).to(torch.int32)
        start += ctx[b]
    tl = torch.tensor([min(n, TOPK) for n in lengths], dtype=torch.int32, device=device)
    return q, cache, idx, tl


def same_bits(a, b) -> int:
    """Elements whose bits differ (-1 on shape/dtype mismatch)."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return -1
    view = {2: torch.int16, 4: torch.int32}[a.element_size()]
    return int((a.contiguous().view(view) != b.contiguous().view(view)).sum())


def ideal(tl) -> float:
    blocks = sum((int(n) + 63) // 64 for n in tl.tolist())
    return len(tl) * (TOPK // 64) / max(1, blocks)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    args = ap.parse_args()
    import sgl_kernel
    from sgl_kernel import flash_mla as fm

    facts = {"sgl_kernel": getattr(sgl_kernel, "__version__", "?"), "gpu": torch.cuda.get_device_name()}
    gen = torch.Generator(device="cuda").manual_seed(0)
    scale = D_QK ** -0.5
    mixed = [1, 5, 63, 64, 65, 200, 700, 1500, 2047, 2048, 2049, 4000, 9000, 30000, 0, 100] * 4
    runs_with_topk_length = False
    for heads in (64, 128):
        q, cache, idx, tl = make_batch(mixed, heads, gen)
        empty_bt = torch.empty((q.shape[0], 0), dtype=torch.int32, device="cuda")

        # (a) tensor scheduling metadata, as sglang 0.5.16's _forward_flashmla_kv builds it
        a = {}
        tsm, ns = fm.get_mla_metadata(cache_seqlens=tl, num_q_tokens_per_head_k=heads, num_heads_k=1,
                                      num_heads_q=heads, is_fp8_kvcache=True, topk=TOPK)
        kw = dict(q=q, k_cache=cache, block_table=empty_bt, cache_seqlens=tl, head_dim_v=D_V,
                  tile_scheduler_metadata=tsm, num_splits=ns, softmax_scale=scale, indices=idx, is_fp8_kvcache=True)
        try:
            base = fm.flash_mla_with_kvcache(**kw)
            torch.cuda.synchronize()
            a["without_topk_length"] = "runs"
        except Exception as e:
            base = None
            a["without_topk_length"] = f"{type(e).__name__}: {e}"
        try:
            fm.flash_mla_with_kvcache(**kw, topk_length=tl)
            a["wrapper_with_topk_length"] = "runs"
        except Exception as e:
            a["wrapper_with_topk_length"] = f"{type(e).__name__}: {str(e)[:200] or 'assert topk_length is None (sgl_kernel/flash_mla.py)'}"
        try:
            out = torch.ops.sgl_kernel.fwd_kvcache_mla.default(q, cache, D_V, tl, empty_bt, scale, False, tsm, ns, True,
                                                                idx, None, None, None, tl, None)
            torch.cuda.synchronize()
            a["op_with_topk_length"] = "runs"
            if base is not None:
                a["op_with_topk_length_bits_differ"] = {"out": same_bits(base[0], out[0]), "lse": same_bits(base[1], out[1])}
        except Exception as e:
            a["op_with_topk_length"] = f"{type(e).__name__}: {str(e)[:300]}"
        facts[f"a_tensor_metadata_h{heads}"] = a

        # (b) FlashMLASchedMeta rebuilt for every call
        def sched_call(tlen, q=q, cache=cache, idx=idx):  # (called in this iteration)
            return fm.flash_mla_with_kvcache(q=q, k_cache=cache, block_table=None, cache_seqlens=None, head_dim_v=D_V,
                                             tile_scheduler_metadata=fm.get_mla_metadata()[0], softmax_scale=scale,
                                             indices=idx, is_fp8_kvcache=True, topk_length=tlen)
        b = {}
        try:
            full = sched_call(None)
            torch.cuda.synchronize()
            b["without_topk_length"] = "runs"
            if base is not None:
                b["vs_tensor_metadata_bits_differ"] = {"out": same_bits(base[0], full[0]), "lse": same_bits(base[1], full[1])}
            short = sched_call(tl)
            torch.cuda.synchronize()
            b["with_topk_length"] = "runs"
            b["bits_differ"] = {"out": same_bits(full[0], short[0]), "lse": same_bits(full[1], short[1])}
            wrong = sched_call((tl - 1).clamp(min=0))  # a wrong length must show (the comparison can fail)
            b["off_by_one_bits_differ"] = same_bits(full[0], wrong[0])
            runs_with_topk_length = True
        except Exception as e:
            b["with_topk_length" if "without_topk_length" in b else "without_topk_length"] = f"{type(e).__name__}: {str(e)[:300]}"
        facts[f"b_sched_meta_per_call_h{heads}"] = b

    # (c) timing on mixed decode batches
    c = []
    if runs_with_topk_length:
        mixes = {
            "short_ctx_bs64": [int(x) for x in torch.randint(1, 2048, (64,), generator=torch.Generator().manual_seed(1))],
            "mixed_bs64": [int(x) for x in torch.randint(1, 8192, (64,), generator=torch.Generator().manual_seed(2))],
            "mixed_bs128": [int(x) for x in torch.randint(1, 8192, (128,), generator=torch.Generator().manual_seed(3))],
            "long_ctx_bs64": [int(x) for x in torch.randint(2048, 32768, (64,), generator=torch.Generator().manual_seed(4))],
            "very_short_bs128": [int(x) for x in torch.randint(1, 512, (128,), generator=torch.Generator().manual_seed(5))],
        }
        for h in (64, 128):
            for name, lens in mixes.items():
                q, cache, idx, tl = make_batch(lens, h, gen)
                s_full, s_short = fm.get_mla_metadata()[0], fm.get_mla_metadata()[0]

                def call(tlen, sched, q=q, cache=cache, idx=idx):  # (called in this iteration)
                    return fm.flash_mla_with_kvcache(q=q, k_cache=cache, block_table=None, cache_seqlens=None,
                                                     head_dim_v=D_V, tile_scheduler_metadata=sched,
                                                     softmax_scale=scale, indices=idx, is_fp8_kvcache=True,
                                                     topk_length=tlen)
                same = same_bits(call(None, fm.get_mla_metadata()[0])[0], call(tl, fm.get_mla_metadata()[0])[0])
                per_call = paired_timing(lambda call=call: call(None, fm.get_mla_metadata()[0]),
                                         lambda call=call, tl=tl: call(tl, fm.get_mla_metadata()[0]), pairs=50)
                reused = paired_timing(lambda call=call, s=s_full: call(None, s),
                                       lambda call=call, tl=tl, s=s_short: call(tl, s), pairs=50)
                row = dict(case=name, heads=h, bs=len(lens), ideal=ideal(tl), out_bits_differ=same,
                           rebuilt_ms=(per_call.unpatched_ms, per_call.patched_ms), rebuilt_speedup=per_call.speedup,
                           reused_ms=(reused.unpatched_ms, reused.patched_ms), reused_speedup=reused.speedup)
                c.append(row)
                print(f"{name:18s} h={h:3d} ideal {row['ideal']:.2f}x  rebuilt {per_call.unpatched_ms:.4f}->"
                      f"{per_call.patched_ms:.4f} ms {per_call.speedup:.3f}x  reused {reused.unpatched_ms:.4f}->"
                      f"{reused.patched_ms:.4f} ms {reused.speedup:.3f}x  differ {same}")
    facts["c_timing"] = c or "not measured: no call with topk_length ran"
    print(json.dumps({k: v for k, v in facts.items() if k != "c_timing"}, indent=1))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(facts, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
