"""The decode-topk-length rule's hooks and examples (the package's docstring says what it does)."""
from __future__ import annotations

from typing import Dict, List, Sequence, Tuple

import libcst as cst

from topk_migrate import suppress
from topk_migrate.bump.bind import OPPORTUNITY, refusals
from topk_migrate.bump.context import Context, new_param
from topk_migrate.cst.resolve import collect
from topk_migrate.model import Finding, Site, Status
from topk_migrate.rule_context import RuleContext
from topk_migrate.rules import Rule, RuleExample

from . import INFO

ENTRY_POINT = "flash_mla_with_kvcache"
# Positional arguments before `indices` in every release that has it (q, k_cache, block_table,
# cache_seqlens, head_dim_v, tile_scheduler_metadata, num_splits, softmax_scale, causal,
# descale_q, descale_k, is_fp8_kvcache); sgl-kernel 0.3.17 had two fewer.
INDICES_FROM = 10
_IMPORT = "from sgl_kernel.flash_mla import flash_mla_with_kvcache\n"
_KERNEL = "sglang-kernel==0.4.6"


def _positional(args, params: Sequence[str], name: str):
    """The argument a call passes positionally for `name`, by the interface's parameter order `params`;
    None where it passes none there (or a `*args` comes before that place)."""
    if name not in params:
        return None
    at = params.index(name)
    seen = 0
    for a in args:
        if a.keyword:
            continue
        if a.star:
            return None
        if seen == at:
            return a.value
        seen += 1
    return None


class DecodeTopkLength(Rule):
    """The hooks of decode-topk-length (INFO.help says what it does)."""

    info = INFO
    # Releases whose sparse decode kernel was run with topk_length, and what happened.
    MEASURED: Dict[str, str] = {
        "sglang-kernel==0.4.6": "on an H200 the sm90 sparse decode op raised `RuntimeError: ... V3.2 does not "
                                "support dynamic topk length` with tensor metadata and with a FlashMLASchedMeta "
                                "rebuilt per call (results/gpu/README.md, Decode)",
    }
    HAZARD = ("never rewritten: with tensor scheduling metadata the wrapper asserts `topk_length is None`, and a "
              "reused FlashMLASchedMeta keeps the split schedule of its first call; pass topk_length by hand only "
              "where the metadata is built per call and the kernel accepts it, or add `# topk-migrate: "
              "ignore[decode-topk-length] <why>`")
    EXAMPLES = [
        RuleExample(_IMPORT + "def f(q, k, bt, sl, meta, ns, idx):\n"
                    "    return flash_mla_with_kvcache(q, k, bt, sl, 512, meta, ns, indices=idx, is_fp8_kvcache=True)\n",
                    "manual", "never rewritten", kernel=_KERNEL),
        RuleExample(_IMPORT + "def f(q, k, bt, sl, meta, ns, idx, n):\n"
                    "    return flash_mla_with_kvcache(q, k, bt, sl, 512, meta, ns, indices=idx, topk_length=n)\n",
                    "compliant", "passes topk_length", kernel=_KERNEL),
        RuleExample(_IMPORT + "def f(q, k, bt, sl, meta, ns):\n    return flash_mla_with_kvcache(q, k, bt, sl, 512, meta, ns)\n",
                    None, "", kernel=_KERNEL),
        RuleExample(_IMPORT + "def f(q, k, bt, sl, meta, ns, idx):\n"
                    "    return flash_mla_with_kvcache(q, k, bt, sl, 512, meta, ns, indices=idx)  "
                    "# topk-migrate: ignore[decode-topk-length] schedule reused\n",
                    "opt-out", "schedule reused", kernel=_KERNEL),
        RuleExample(_IMPORT + "def f(q, k, bt, sl, meta, ns, idx):\n"
                    "    return flash_mla_with_kvcache(q, k, bt, sl, 512, meta, ns, indices=idx, is_fp8_kvcache=True)\n",
                    OPPORTUNITY, bump=("sglang-kernel-0.4.2.post2", "sglang-kernel-0.4.6")),
        RuleExample(_IMPORT + "def f(q, k, bt, sl, meta, ns):\n    return flash_mla_with_kvcache(q, k, bt, sl, 512, meta, ns)\n",
                    None, bump=("sglang-kernel-0.4.2.post2", "sglang-kernel-0.4.6")),
    ]

    def sites(self, ctx: RuleContext) -> Tuple[str, List[Site]]:
        source, path, gate = ctx.source, ctx.path, ctx.gate
        lines = source.splitlines()
        out = []
        for c in collect(ctx.module, ctx.tree.position, ctx.tree.numberer()).calls:
            if c.callee.rsplit(".", 1)[-1] != ENTRY_POINT:
                continue
            keywords = {a.keyword.value: a.value for a in c.node.args if a.keyword}
            positional = [a for a in c.node.args if not a.keyword and not a.star]
            starred = any(a.star for a in c.node.args)
            at = c.range.start

            def site(status: Status, reason: str, at=at, c=c) -> Site:  # (called in this iteration)
                return Site(path, at.line, at.column + 1, c.callee, status, reason)

            if self.param in keywords:
                value = keywords[self.param]
                none = isinstance(value, cst.Name) and value.value == "None"
                out.append(site(Status.OPT_OUT if none else Status.COMPLIANT,
                                "passes topk_length=None explicitly" if none else "passes topk_length"))
                continue
            # where the gate read the interface the call runs (in the tree, or installed), its positional
            # arguments are that signature's: `topk_length` and `indices` in their places there
            params = gate(c.callee).params
            value = _positional(c.node.args, params, self.param)
            if value is not None:
                none = isinstance(value, cst.Name) and value.value == "None"
                out.append(site(Status.OPT_OUT if none else Status.COMPLIANT,
                                "passes topk_length=None positionally" if none else "passes topk_length positionally"))
                continue
            indices = keywords.get("indices")
            if indices is None and "indices" in params and not starred:
                indices = _positional(c.node.args, params, "indices")
                if indices is None:
                    continue  # dense decode: indices not passed
            if indices is None and len(positional) <= INDICES_FROM and not starred:
                continue  # dense decode: topk_length has no meaning there
            if isinstance(indices, cst.Name) and indices.value == "None":
                continue
            why = suppress.reason(lines, at.line, c.range.end.line, self.id)
            if why is not None:
                out.append(site(Status.OPT_OUT, f"suppressed by comment: {why}"))
            elif indices is None:
                out.append(site(Status.MANUAL, "indices may be passed positionally or through *args, where its "
                                               "position depends on the release; pass indices= and topk_length= "
                                               "by keyword"))
            else:
                cap = gate(c.callee)
                old = f"; the kernel does not take it yet ({cap.detail})" if cap.accepts is False else ""
                out.append(site(Status.MANUAL, f"sparse decode without topk_length{old}; " + self.HAZARD))
        return source, out

    def bump(self, ctx: Context) -> List[Finding]:
        if ctx.entry_point != ENTRY_POINT or not new_param(ctx, self.param):
            return []
        if ctx.args.passes(ctx.new_ep, "indices") in (None, "None"):
            return []  # dense decode: topk_length has no meaning there
        hazards = [f"the wrapper has `{g.describe()}`" for g in refusals(ctx.new_ep, self.param)
                   if (g.condition or "").startswith("not isinstance(tile_scheduler_metadata")]
        hazards.append("with a reused FlashMLASchedMeta the split schedule is built from its first call's "
                       "`topk_length`, so the metadata must be built per call")
        if ctx.new.pin in self.MEASURED:
            hazards.append(self.MEASURED[ctx.new.pin])
        else:
            hazards.append(f"no run of {ctx.new.label}'s sparse decode with topk_length is recorded")
        return [Finding(OPPORTUNITY, f"sparse decode (`indices` passed) without `topk_length`, new in "
                                     f"{ctx.new.label}; never rewritten: " + "; ".join(hazards),
                        self.param, self.id)]
