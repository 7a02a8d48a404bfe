"""The new-default-semantics rule's hooks and examples (the package's docstring says what it does)."""
from __future__ import annotations

from typing import Dict, List, Tuple

from topk_migrate.bump.bind import CHANGES_DEFAULT
from topk_migrate.bump.context import Context, new_param
from topk_migrate.model import Finding
from topk_migrate.rules import Rule, RuleExample

from . import INFO


class NewDefaultSemantics(Rule):
    """The hooks of new-default-semantics (INFO.help says what it does)."""

    info = INFO
    # (distribution of the new release, parameter) -> what its default now does to a call that omits it
    FACTS: Dict[Tuple[str, str], str] = {
        ("sgl-flash-mla", "use_legacy"): "defaults to False: the call now runs the current kernels, not the "
                                         "legacy ones (pass use_legacy=True to keep them)",
        ("sgl-flash-mla", "return_log2_lse"): "defaults to None: max_logits and lse come back in natural-log "
                                              "units; the legacy kernels return them in base 2 (pass "
                                              "return_log2_lse=True with use_legacy=True to keep base 2)",
    }
    EXAMPLES = [
        RuleExample("import flash_mla\ndef f(q, kv, idx):\n    return flash_mla.flash_mla_sparse_fwd(q, kv, idx, 1.0)\n",
                    CHANGES_DEFAULT, bump=("flashmla-upstream-9241ae3", "sgl-flash-mla-1.0.0")),
        RuleExample("import flash_mla\ndef f(q, kv, idx):\n"
                    "    return flash_mla.flash_mla_sparse_fwd(q, kv, idx, 1.0, use_legacy=True, return_log2_lse=True)\n",
                    None, bump=("flashmla-upstream-9241ae3", "sgl-flash-mla-1.0.0")),
    ]

    def bump(self, ctx: Context) -> List[Finding]:
        out = []
        for (dist, param), what in self.FACTS.items():
            if ctx.new.dist == dist and new_param(ctx, param):
                p = ctx.new_ep.param(param)
                out.append(Finding(CHANGES_DEFAULT, f"`{param}={p.default}` is new in {ctx.new.label} and "
                                                    f"{what}", param, self.id))
        return out
