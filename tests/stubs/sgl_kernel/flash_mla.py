"""A CPU stand-in for sgl_kernel.flash_mla that enforces the sparse kernel's contract.

The real kernel reads `indices[i, :, :topk_length[i]]`: the value must be the count of
front-packed valid (>= 0) indices of row i of this call's q. A length that disagrees is
recorded in CALLS (the real kernel would silently attend over the wrong tokens); rows that
differ from q's raise like the real kernel's shape check. Outputs come from a plain masked
softmax, so a correct topk_length gives bitwise the same result as none.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import List

import torch


@dataclass
class Call:
    """One kernel call: whether topk_length came, and what broke the contract."""

    topk_length_given: bool
    violations: List[str] = field(default_factory=list)


CALLS: List[Call] = []


class ContractError(RuntimeError):
    """What the real kernel raises on a malformed argument."""


def _check_length(call: Call, q, indices, topk_length) -> None:
    if not isinstance(topk_length, torch.Tensor):
        call.violations.append(f"topk_length is {type(topk_length).__name__} {topk_length!r}, not an int32 tensor")
        raise ContractError(f"topk_length must be a tensor, got {type(topk_length).__name__}")
    if topk_length.dtype != torch.int32 or topk_length.dim() != 1:
        call.violations.append(f"topk_length is {topk_length.dtype} with shape {tuple(topk_length.shape)}, not int32 [s_q]")
        raise ContractError("topk_length must be a 1-D int32 tensor")
    if topk_length.shape[0] != q.shape[0]:
        call.violations.append(f"topk_length has {topk_length.shape[0]} rows, q has {q.shape[0]}")
        raise ContractError(f"topk_length must have shape [s_q={q.shape[0]}], got {tuple(topk_length.shape)}")
    past = ((topk_length < 0) | (topk_length > indices.shape[2])).nonzero().flatten().tolist()
    if past:
        call.violations.append(f"topk_length outside [0, {indices.shape[2]}] on rows {past}: "
                               f"{topk_length[past].tolist()} (the kernel would read past the row)")
    # Row i's valid entries must be exactly its first topk_length[i] slots.
    valid = indices[:, 0, :] >= 0
    expected = torch.arange(valid.shape[1])[None, :] < topk_length[:, None].long()
    wrong = (valid != expected).any(dim=-1).nonzero().flatten().tolist()
    if wrong:
        counts = valid.sum(dim=-1)
        gaps = [r for r in wrong if not valid[r, : int(counts[r])].all()]
        call.violations.append(
            f"wrong length on rows {wrong}: topk_length {topk_length[wrong].tolist()} but the indices hold "
            f"{counts[wrong].tolist()} valid entries (width {valid.shape[1]})"
            + (f"; rows {gaps} have -1 gaps before valid entries" if gaps else ""))


def _attend(q, kv, indices, sm_scale, d_v, topk_length):
    """(out, max_logits, lse) of softmax attention over each row's valid indices."""
    topk = indices.shape[2]
    idx = indices[:, 0, :].long()
    dead = idx < 0
    if topk_length is not None:
        dead = dead | (torch.arange(topk)[None, :] >= topk_length[:, None].long())
    keys = kv[:, 0, :][idx.clamp(min=0)].float()  # [s_q, topk, d]
    logits = torch.bmm(q.float(), keys.transpose(1, 2)) * sm_scale  # [s_q, h, topk]
    logits = logits.masked_fill(dead[:, None, :], float("-inf"))
    max_logits = logits.amax(dim=-1)
    lse = torch.logsumexp(logits, dim=-1)
    empty = torch.isinf(lse)
    probs = torch.exp(logits - lse.masked_fill(empty, 0.0)[..., None])
    out = torch.bmm(probs, keys[..., :d_v]).to(q.dtype)
    return out, max_logits, lse.masked_fill(empty, float("inf"))


def _check_shapes(q, kv, indices):
    if q.dim() != 3 or kv.dim() != 3 or indices.dim() != 3:
        raise ContractError(f"expected q [s_q,h,d], kv [s_kv,1,d], indices [s_q,h_kv,topk]; got "
                            f"{tuple(q.shape)} {tuple(kv.shape)} {tuple(indices.shape)}")
    if indices.dtype != torch.int32 or indices.shape[0] != q.shape[0]:
        raise ContractError(f"indices must be int32 [s_q={q.shape[0]}, h_kv, topk], got {indices.dtype} {tuple(indices.shape)}")


def _current(q, kv, indices, sm_scale, d_v=512, attn_sink=None, topk_length=None):
    call = Call(topk_length is not None)
    CALLS.append(call)
    _check_shapes(q, kv, indices)
    if topk_length is not None:
        _check_length(call, q, indices, topk_length)
    return _attend(q, kv, indices, sm_scale, d_v, topk_length)


def _legacy(q, kv, indices, sm_scale, d_v=512, attn_sink=None):
    """The signature of kernels older than topk_length (sglang-kernel <= 0.4.2.post2)."""
    CALLS.append(Call(False))
    _check_shapes(q, kv, indices)
    return _attend(q, kv, indices, sm_scale, d_v, None)


flash_mla_sparse_fwd = _current


def flash_mla_with_kvcache(*args, **kwargs):
    raise NotImplementedError("the stub models only flash_mla_sparse_fwd")


def configure(legacy: bool = False) -> None:
    """Pick the kernel generation that `flash_mla_sparse_fwd` stands for, and clear CALLS."""
    global flash_mla_sparse_fwd
    flash_mla_sparse_fwd = _legacy if legacy else _current
    package = sys.modules.get(__name__.rpartition(".")[0])
    if package is not None:
        package.flash_mla_sparse_fwd = flash_mla_sparse_fwd
    CALLS.clear()


def legacy_fwd(q, kv, indices, sm_scale, d_v=512, attn_sink=None):
    """Always the old signature (for stand-ins of other kernel modules)."""
    return _legacy(q, kv, indices, sm_scale, d_v, attn_sink)
