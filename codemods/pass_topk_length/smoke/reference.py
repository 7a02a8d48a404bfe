"""A torch model of FlashMLA's sparse prefill kernel, `flash_mla_sparse_fwd`.

Semantics are those sgl_kernel documents for this kernel (0.4.x wrapper:
"lse: 2-based log-sum-exp") and that the H200 run confirmed: logits are
P = q.k * sm_scale * log2(e); max_logits = max P and lse = log2(sum 2^P),
both in base-2 units; out = softmax(P) @ v. A row with nothing to attend
gets out = 0, max_logits = -inf, lse = +inf. It runs the smoke on the CPU, and
on the GPU it cross-checks the real kernel's numerics.

Inputs are validated the way the kernel would reject them, plus one check the
kernel cannot make: `topk_length` values outside [0, topk] (the kernel would
read past the row) raise instead of returning garbage.
"""
from __future__ import annotations

import contextlib
import math
from typing import Iterator, Optional, Tuple

import torch

B_TOPK = 64  # the kernel's top-k block on sm90


def _check_inputs(q, kv, indices, d_v, topk_length, head_multiple):
    if q.dtype != torch.bfloat16 or kv.dtype != torch.bfloat16:
        raise TypeError(f"q and kv must be bfloat16, got {q.dtype} and {kv.dtype}")
    if q.dim() != 3 or kv.dim() != 3 or kv.shape[1] != 1:
        raise ValueError(f"expected q [s_q, h_q, d_qk] and kv [s_kv, 1, d_qk], got {tuple(q.shape)} {tuple(kv.shape)}")
    s_q, h_q, d_qk = q.shape
    if kv.shape[2] != d_qk or d_qk not in (512, 576) or d_v != 512:
        raise ValueError(f"unsupported head dims d_qk={d_qk} (kv {kv.shape[2]}), d_v={d_v}")
    if head_multiple and h_q % head_multiple:
        raise ValueError(f"h_q={h_q} must be a multiple of {head_multiple}")
    if indices.dtype != torch.int32 or indices.dim() != 3 or indices.shape[:2] != (s_q, 1):
        raise ValueError(f"indices must be int32 [s_q={s_q}, 1, topk], got {indices.dtype} {tuple(indices.shape)}")
    if topk_length is not None:
        if topk_length.dtype != torch.int32 or tuple(topk_length.shape) != (s_q,):
            raise ValueError(f"topk_length must be int32 [{s_q}], got {topk_length.dtype} {tuple(topk_length.shape)}")
        topk = indices.shape[2]
        bad = ((topk_length < 0) | (topk_length > topk)).nonzero().flatten().tolist()
        if bad:
            raise ValueError(f"topk_length outside [0, {topk}] on rows {bad[:8]}: the kernel would read past the row")


@contextlib.contextmanager
def _one_thread() -> Iterator[None]:
    """A CPU matmul split over threads may sum in a different order from one call to the next (seen on a CI
    machine: one row's lse moved by 9e-5 between two identical calls); the smoke compares two calls bit for bit."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def sparse_attention_reference(
    q: torch.Tensor,
    kv: torch.Tensor,
    indices: torch.Tensor,
    sm_scale: float,
    d_v: int = 512,
    attn_sink: Optional[torch.Tensor] = None,
    topk_length: Optional[torch.Tensor] = None,
    *,
    head_multiple: int = 64,
    chunk_rows: int = 128,
) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(out [s_q,h_q,d_v] bf16, max_logits [s_q,h_q] f32, lse [s_q,h_q] f32).

    An index takes part when 0 <= index < s_kv and its position is below the
    row's topk_length (when given). Computed `chunk_rows` q rows at a time to
    bound memory, in float32 on a GPU; on the CPU in float64 on one thread, so
    two calls on the same inputs give the same bits whatever path the BLAS
    takes. `attn_sink` is not modelled (no caller here uses it).
    """
    if attn_sink is not None:
        raise NotImplementedError("the reference does not model attn_sink")
    _check_inputs(q, kv, indices, d_v, topk_length, head_multiple)
    if q.device.type != "cpu":
        return _attend(q, kv, indices, sm_scale, d_v, topk_length, chunk_rows, torch.float32)
    with _one_thread():
        return _attend(q, kv, indices, sm_scale, d_v, topk_length, chunk_rows, torch.float64)


def _attend(q, kv, indices, sm_scale, d_v, topk_length, chunk_rows, work):
    s_q, h_q, _ = q.shape
    s_kv, topk = kv.shape[0], indices.shape[2]
    kv2 = kv[:, 0, :].to(work)
    position = torch.arange(topk, device=q.device)
    out = torch.empty((s_q, h_q, d_v), dtype=torch.bfloat16, device=q.device)
    max_logits = torch.empty((s_q, h_q), dtype=torch.float32, device=q.device)
    lse = torch.empty_like(max_logits)
    for lo in range(0, s_q, chunk_rows):
        hi = min(lo + chunk_rows, s_q)
        idx = indices[lo:hi, 0, :].long()
        dead = (idx < 0) | (idx >= s_kv)
        if topk_length is not None:
            dead |= position[None, :] >= topk_length[lo:hi, None].long()
        picked = kv2[idx.masked_fill(dead, 0)]  # [rows, topk, d_qk]
        logits = torch.bmm(q[lo:hi].to(work), picked.transpose(1, 2)) * (sm_scale * math.log2(math.e))
        logits.masked_fill_(dead[:, None, :], float("-inf"))  # [rows, h_q, topk], base-2 units
        row_lse = torch.logsumexp(logits * math.log(2), dim=-1) * math.log2(math.e)
        norm = row_lse.masked_fill(row_lse == float("-inf"), float("inf"))  # empty row -> out 0
        probs = torch.exp2(logits - norm[..., None])
        out[lo:hi] = torch.bmm(probs, picked[..., :d_v]).to(torch.bfloat16)
        max_logits[lo:hi] = logits.amax(dim=-1).float()
        lse[lo:hi] = norm.float()
    return out, max_logits, lse


def flash_mla_sparse_fwd(
    q: torch.Tensor,
    kv: torch.Tensor,
    indices: torch.Tensor,
    sm_scale: float,
    d_v: int = 512,
    attn_sink: Optional[torch.Tensor] = None,
    topk_length: Optional[torch.Tensor] = None,
) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Drop-in stand-in with the kernel's signature (sm90 head multiple)."""
    return sparse_attention_reference(q, kv, indices, sm_scale, d_v, attn_sink, topk_length)
