"""explicit-d-v's hooks and examples (the package's docstring says what it does)."""
from __future__ import annotations

from typing import List, Tuple

import libcst as cst

from topk_migrate import suppress
from topk_migrate.bump.bind import OPPORTUNITY
from topk_migrate.bump.context import Context
from topk_migrate.cst.resolve import collect
from topk_migrate.model import Finding, Site, Status
from topk_migrate.rule_context import RuleContext
from topk_migrate.rules import Rule, RuleExample

from . import INFO
from .quick import POSITION

_IMPORT = "from sgl_kernel.flash_mla import flash_mla_sparse_fwd\n"
_KERNEL = "sglang-kernel==0.4.6"
_EQUAL = cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace(""))
_FIX = "leaves d_v to the kernel's default; apply writes d_v=512"


class ExplicitDV(Rule):
    """The hooks of explicit-d-v."""

    info = INFO
    EXAMPLES = [
        RuleExample(_IMPORT + "def f(q, kv, idx):\n    return flash_mla_sparse_fwd(q, kv, idx, 1.0)\n", "fixable", _FIX,
                    after=_IMPORT + "def f(q, kv, idx):\n    return flash_mla_sparse_fwd(q, kv, idx, 1.0, d_v=512)\n",
                    kernel=_KERNEL),
        RuleExample(_IMPORT + "def f(q, kv, idx):\n    return flash_mla_sparse_fwd(q, kv, idx, 1.0, d_v=512)\n",
                    "compliant", "passes d_v", kernel=_KERNEL),
        RuleExample(_IMPORT + "def f(q, kv, idx):\n    return flash_mla_sparse_fwd(q, kv, idx, 1.0)  "
                    "# topk-migrate: ignore[explicit-d-v] unit test\n", "opt-out", "suppressed by comment", kernel=_KERNEL),
        RuleExample(_IMPORT + "def f(q, kv, idx, **kw):\n    return flash_mla_sparse_fwd(q, kv, idx, 1.0, **kw)\n",
                    "manual", "**kwargs may carry d_v", kernel=_KERNEL),
        RuleExample(_IMPORT + "def f(q, kv, idx):\n    return flash_mla_sparse_fwd(q, kv, idx, 1.0)\n", "manual",
                    "kernel capability unknown", kernel=None),
        RuleExample(_IMPORT + "def f(q, kv, idx):\n    return flash_mla_sparse_fwd(q, kv, idx, 1.0)\n",
                    OPPORTUNITY, bump=("sgl-kernel-0.3.17", "sglang-kernel-0.4.6")),
        RuleExample(_IMPORT + "def f(q, kv, idx):\n    return flash_mla_sparse_fwd(q, kv, idx, 1.0, d_v=512)\n",
                    None, bump=("sgl-kernel-0.3.17", "sglang-kernel-0.4.6")),
    ]

    def sites(self, ctx: RuleContext) -> Tuple[str, List[Site]]:
        module, path, gate = ctx.module, ctx.path, ctx.gate  # the file's one parse, shared with the other rules
        lines, out, edits = ctx.source.splitlines(), [], {}
        for c in collect(module, ctx.tree.position).calls:
            if c.callee.rsplit(".", 1)[-1] not in self.entry_points:
                continue
            args = c.node.args
            at = c.range.start

            def site(status: Status, reason: str, at=at, c=c) -> Site:  # (called in this iteration)
                return Site(path, at.line, at.column + 1, c.callee, status, reason)

            positional = [a for a in args if not a.keyword and not a.star]
            if any(a.keyword and a.keyword.value == self.param for a in args) or len(positional) > POSITION:
                out.append(site(Status.COMPLIANT, "passes d_v"))
                continue
            why = suppress.reason(lines, at.line, c.range.end.line, self.id)
            if why is not None:
                out.append(site(Status.OPT_OUT, f"suppressed by comment: {why}"))
                continue
            if any(a.star for a in args):
                out.append(site(Status.MANUAL, "**kwargs may carry d_v" if any(a.star == "**" for a in args)
                                else "*args may carry d_v"))
                continue
            cap = gate(c.callee)
            if cap.accepts is not True:
                state = "kernel too old" if cap.accepts is False else "kernel capability unknown (pass --kernel)"
                out.append(site(Status.MANUAL, f"{state}: {cap.detail}"))
                continue
            out.append(site(Status.FIXABLE, _FIX))
            edits[c.node] = c.node.with_changes(args=[*args[:-1], args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT),
                                                      cst.Arg(cst.Integer("512"), keyword=cst.Name("d_v"), equal=_EQUAL)])
        for old, new in edits.items():
            module = module.deep_replace(old, new)
        return module.code, out

    def bump(self, ctx: Context) -> List[Finding]:
        if ctx.entry_point not in self.entry_points or ctx.new_ep is None or ctx.new_ep.param(self.param) is None:
            return []
        if ctx.args.passes(ctx.new_ep, self.param) is not None:
            return []
        return [Finding(OPPORTUNITY, f"`d_v` is left to {ctx.new.label}'s default; write d_v=512 before the "
                                     "upgrade so that the call keeps the head dimension it was written for",
                        self.param, self.id, fix=f"topk-migrate apply --enable explicit-d-v {ctx.path}")]
