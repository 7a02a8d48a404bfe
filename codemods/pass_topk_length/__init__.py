"""Pass FlashMLA's per-row `topk_length` to `flash_mla_sparse_fwd`.

Without it the sparse kernel scans the whole -1-padded top-k width for every row
shorter than index_topk (the first 2048 tokens of each prefill, short decode and
verify rows). The fix mirrors SGLang's: the helper that calls the kernel gains
`topk_length: Optional[torch.Tensor] = None`, a shape-only guard falls back to the
full width if its rows differ from q's, and the callers pass the clipped-seqlen
metadata they already hold. The output is bitwise identical; no sync is added.

With `--lengths derived` (or `lengths = "derived"` in [tool.topk-migrate]), a call whose kernel takes
the parameter but where that fix is not proven passes lengths derived at the call from the indices it
hands the kernel instead (each row's last valid slot, rounded up to 8 slots): right for any index layout,
row order and CUDA-graph replay, at the cost of a few small kernels per call, so only from 4096 rows
(None below). The kernel's
identity and capability must still be proven (docs/check-apply.md, results/gpu/derived-envelope.md).

Soundness (docs/soundness.md): each planned rewrite is checked on the rewritten module by
`validate_rewrite` (LibCST scope analysis) before it is accepted; what it cannot prove
safe becomes `manual` with a reason that names the hazard.
"""
# This package is the rule: INFO here (standard library only); `rule` holds its driver, its examples and
# its hooks; `quick` the kernel's names and the verdicts that need no LibCST; `analysis` what it reads of a
# module (each statement of docs/soundness.md in a module of its own: `identity`, `whole_project`, ...);
# `rewrite` its edit and the edit's validation; `values` the sites where the kernel is used as a value;
# `smoke/` its rewrite run on the kernel (`topk-migrate smoke`: INFO.proof; torch only when it runs).
# (A comment, not the docstring: `rules --explain` prints the docstring to the rule's users.)
from typing import Dict, Optional

from topk_migrate.rules import RuleInfo

# First release of each distribution whose flash_mla_sparse_fwd takes topk_length
# (None: no release does; sgl-kernel stopped at 0.3.x before the parameter existed).
# vllm bundles FlashMLA: its own wrapper (vllm.v1.attention.ops.flashmla) passes
# topk_length from 0.15.0 on (0.14.x's flash_mla_sparse_prefill has no such parameter).
# tokenspeed-kernel re-exports flash_mla from tokenspeed-flashmla, whose every release
# (from 1.0.0.post20251110) has it; tokenspeed-kernel 0.1.3, its first, pins one of them.
MIN_KERNEL: Dict[str, Optional[str]] = {
    "sglang-kernel": "0.4.3",
    "sgl-kernel": None,
    "vllm": "0.15.0",
    "tokenspeed-flashmla": "1.0.0.post20251110",
    "tokenspeed-kernel": "0.1.3",
}

INFO = RuleInfo(
    id="pass-topk-length",
    summary="Sparse FlashMLA prefill call without topk_length",
    help="Without topk_length the sparse prefill kernel scans the whole -1-padded top-k width of every "
         "row. `topk-migrate apply` passes the clipped-seqlen metadata the callers already hold, through "
         "the helper that calls the kernel, with a guard that falls back to the full width if the rows "
         "ever differ from q's; a site it cannot prove safe is `manual`, with the hazard named.",
    entry_points=("flash_mla_sparse_fwd", "flash_mla_sparse_prefill", "sparse_prefill_fwd"),
    param="topk_length",
    min_kernel=MIN_KERNEL,
    providers={
        "sgl_kernel": ("sglang-kernel", "sgl-kernel"),
        "flash_mla": ("flash-mla", "tokenspeed-flashmla"),
        "vllm": ("vllm",),
        "tokenspeed_kernel": ("tokenspeed-kernel", "tokenspeed-flashmla"),
    },
    wrappers={"sgl_kernel/flash_mla.py": "sgl_kernel", "flash_mla/flash_mla_interface.py": "flash_mla"},
    has_sites=True,
    has_bump=True,
    quick="quick",
    proof="smoke.command:smoke_command",
    tags=("performance", "flashmla"),
)
