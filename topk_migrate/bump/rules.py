"""Migration rules that sharpen a bump verdict where a parameter carries a known contract.

Each rule is a small class: the entry points and parameter it is about, the facts it rests on
(data), its check on one call, and VALID/INVALID examples (call source, pins, the verdict the
rule gives). The engine knows rules only through RULES, so each could become a discovered
plug-in without changing its body.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Tuple

from .bind import CHANGES_DEFAULT, OPPORTUNITY, CallArgs, Finding
from .signatures import EntryPoint, Release


@dataclass
class Context:
    """One call site, as a rule sees it."""

    path: str
    line: int
    column: int
    entry_point: str
    args: CallArgs
    old: Release
    new: Release
    old_ep: Optional[EntryPoint]
    new_ep: Optional[EntryPoint]
    topk_rule_sites: Callable[[], Dict[Tuple[int, int], object]]  # (line, col) -> pass_topk_length's Site


@dataclass(frozen=True)
class Example:
    """A call (in a module that imports the kernel), the releases, and the verdict the rule gives."""

    source: str
    old: str  # fixture name of the old release
    new: str
    verdict: Optional[str]  # None: the rule says nothing


def _new_param(ctx: Context, name: str) -> bool:
    """The new release has `name` on this entry point, the old one had not, and the call leaves it out."""
    return (ctx.new_ep is not None and ctx.new_ep.param(name) is not None
            and (ctx.old_ep is None or ctx.old_ep.param(name) is None)
            and ctx.new_ep is not None and ctx.args.passes(ctx.new_ep, name) is None and not ctx.args.double_star)


class PrefillTopkLength:
    """`flash_mla_sparse_fwd` gains `topk_length`: an opportunity, fixed by the pass_topk_length rule."""

    id = "pass-topk-length"
    entry_points = ("flash_mla_sparse_fwd",)
    param = "topk_length"
    EXAMPLES = [
        Example("from sgl_kernel.flash_mla import flash_mla_sparse_fwd\n"
                "def f(q, kv, idx, metadata):\n    return flash_mla_sparse_fwd(q, kv, idx, 1.0, d_v=512)\n",
                "sglang-kernel-0.4.2.post2", "sglang-kernel-0.4.6", OPPORTUNITY),
        Example("from sgl_kernel.flash_mla import flash_mla_sparse_fwd\n"
                "def f(q, kv, idx, n):\n    return flash_mla_sparse_fwd(q, kv, idx, 1.0, topk_length=n)\n",
                "sglang-kernel-0.4.2.post2", "sglang-kernel-0.4.6", None),
    ]

    def check(self, ctx: Context) -> List[Finding]:
        if ctx.entry_point not in self.entry_points or not _new_param(ctx, self.param):
            return []
        why = (f"`topk_length` is new in {ctx.new.label} and not passed: the sparse prefill kernel scans the "
               "whole -1-padded top-k width of every row")
        if ctx.new.pin is None:
            return [Finding(OPPORTUNITY, why + "; name the new release as NAME==VERSION to get the "
                                               "topk_length rule's verdict", self.param, self.id)]
        verdicts = ctx.topk_rule_sites()
        if "error" in verdicts:
            return [Finding(OPPORTUNITY, why + f"; the topk_length rule could not read the file ({verdicts['error']})",
                            self.param, self.id)]
        site = verdicts.get((ctx.line, ctx.column))
        status = getattr(getattr(site, "status", None), "value", None)
        if status == "fixable":
            passes = f" (passes `{site.metadata}`)" if site.metadata else ""
            return [Finding(OPPORTUNITY, why + f"; fixable by the topk_length rule{passes}", self.param, self.id,
                            fix=f"topk-migrate apply --kernel {ctx.new.pin} {ctx.path}")]
        detail = f": {status}, {site.reason}" if site is not None else ": the rule found no site here"
        return [Finding(OPPORTUNITY, why + f"; not fixable automatically (topk_length rule{detail})",
                        self.param, self.id)]


class DecodeTopkLength:
    """`flash_mla_with_kvcache(..., indices=...)` without `topk_length`: reported, never rewritten.

    The facts: with tensor scheduling metadata (get_mla_metadata(cache_seqlens, ...)) the wrapper
    asserts `topk_length is None` (read from the release); with a FlashMLASchedMeta the split
    schedule is built on its first call and reused; and on an H200 with sglang-kernel 0.4.6 the
    sm90 sparse decode op raised "V3.2 does not support dynamic topk length" on every path
    (results/gpu/README.md, Decode). So passing it could turn a working decode into a crash.
    """

    id = "decode-topk-length"
    entry_points = ("flash_mla_with_kvcache",)
    param = "topk_length"
    # Releases whose sparse decode kernel was run with topk_length, and what happened.
    MEASURED: Dict[str, str] = {
        "sglang-kernel==0.4.6": "on an H200 the sm90 sparse decode op raised `RuntimeError: ... V3.2 does not "
                                "support dynamic topk length` with tensor metadata and with a FlashMLASchedMeta "
                                "rebuilt per call (results/gpu/README.md, Decode)",
    }
    EXAMPLES = [
        Example("from sgl_kernel.flash_mla import flash_mla_with_kvcache\n"
                "def f(q, k, bt, sl, meta, ns, idx):\n"
                "    return flash_mla_with_kvcache(q, k, bt, sl, 512, meta, ns, indices=idx, is_fp8_kvcache=True)\n",
                "sglang-kernel-0.4.2.post2", "sglang-kernel-0.4.6", OPPORTUNITY),
        Example("from sgl_kernel.flash_mla import flash_mla_with_kvcache\n"
                "def f(q, k, bt, sl, meta, ns):\n    return flash_mla_with_kvcache(q, k, bt, sl, 512, meta, ns)\n",
                "sglang-kernel-0.4.2.post2", "sglang-kernel-0.4.6", None),
    ]

    def check(self, ctx: Context) -> List[Finding]:
        if ctx.entry_point not in self.entry_points or not _new_param(ctx, self.param):
            return []
        if ctx.args.passes(ctx.new_ep, "indices") in (None, "None"):
            return []  # dense decode: topk_length has no meaning there
        hazards = [f"the wrapper has `{g.describe()}`" for g in ctx.new_ep.guards
                   if g.kind == "assert" and g.test == f"{self.param} is None"
                   and (g.condition or "").startswith("not isinstance(tile_scheduler_metadata")]
        hazards.append("with a reused FlashMLASchedMeta the split schedule is built from its first call's "
                       "`topk_length`, so the metadata must be built per call")
        if ctx.new.pin in self.MEASURED:
            hazards.append(self.MEASURED[ctx.new.pin])
        else:
            hazards.append(f"no run of {ctx.new.label}'s sparse decode with topk_length is recorded")
        return [Finding(OPPORTUNITY, f"sparse decode (`indices` passed) without `topk_length`, new in "
                                     f"{ctx.new.label}; never rewritten: " + "; ".join(hazards),
                        self.param, self.id)]


class NewDefaultSemantics:
    """A new parameter whose default changes what an unchanged call does (no error, other results)."""

    id = "new-default-semantics"
    # (distribution of the new release, parameter) -> what its default now does to a call that omits it
    FACTS: Dict[Tuple[str, str], str] = {
        ("sgl-flash-mla", "use_legacy"): "defaults to False: the call now runs the current kernels, not the "
                                         "legacy ones (pass use_legacy=True to keep them)",
        ("sgl-flash-mla", "return_log2_lse"): "defaults to None: max_logits and lse come back in natural-log "
                                              "units; the legacy kernels return them in base 2 (pass "
                                              "return_log2_lse=True with use_legacy=True to keep base 2)",
    }
    EXAMPLES = [
        Example("import flash_mla\ndef f(q, kv, idx):\n    return flash_mla.flash_mla_sparse_fwd(q, kv, idx, 1.0)\n",
                "flashmla-upstream-9241ae3", "sgl-flash-mla-1.0.0", CHANGES_DEFAULT),
        Example("import flash_mla\ndef f(q, kv, idx):\n"
                "    return flash_mla.flash_mla_sparse_fwd(q, kv, idx, 1.0, use_legacy=True, return_log2_lse=True)\n",
                "flashmla-upstream-9241ae3", "sgl-flash-mla-1.0.0", None),
    ]

    def check(self, ctx: Context) -> List[Finding]:
        out = []
        for (dist, param), what in self.FACTS.items():
            if ctx.new.dist == dist and ctx.new_ep is not None and _new_param(ctx, param):
                p = ctx.new_ep.param(param)
                out.append(Finding(CHANGES_DEFAULT, f"`{param}={p.default}` is new in {ctx.new.label} and "
                                                    f"{what}", param, self.id))
        return out


RULES = [PrefillTopkLength(), DecodeTopkLength(), NewDefaultSemantics()]
