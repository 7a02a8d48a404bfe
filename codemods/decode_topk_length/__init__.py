"""`flash_mla_with_kvcache(..., indices=...)` without `topk_length`: reported, never rewritten.

The decode wrapper takes topk_length from sglang-kernel 0.4.3 on, but passing it can turn a
working decode into a crash: with tensor scheduling metadata (get_mla_metadata(cache_seqlens,
...)) the wrapper asserts `topk_length is None` (0.4.3-0.4.10, read from the releases); with a
FlashMLASchedMeta the split schedule is built on its first call and reused; and on an H200 with
sglang-kernel 0.4.6 the sm90 sparse decode op raised "V3.2 does not support dynamic topk length"
on every path (results/gpu/README.md, Decode). Off by default in check/apply/audit (enable it
with `enable = ["decode-topk-length"]`); a bump always runs it.
"""
from topk_migrate.rules import RuleInfo

INFO = RuleInfo(
    id="decode-topk-length",
    summary="Sparse FlashMLA decode call (indices passed) without topk_length",
    help="Sparse decode without topk_length keeps scanning the whole top-k width, but the fix is not "
         "mechanical: with tensor scheduling metadata the wrapper asserts `topk_length is None`, a reused "
         "FlashMLASchedMeta keeps its first call's split schedule, and sglang-kernel 0.4.6's sm90 sparse "
         "decode refuses a dynamic topk length. Pass it only where the kernel and the schedule allow.",
    entry_points=("flash_mla_with_kvcache",),
    param="topk_length",
    min_kernel={"sglang-kernel": "0.4.3", "sgl-kernel": None},
    providers={"sgl_kernel": ("sglang-kernel", "sgl-kernel")},
    default_enabled=False,
    wrappers={"sgl_kernel/flash_mla.py": "sgl_kernel", "flash_mla/flash_mla_interface.py": "flash_mla"},
    has_sites=True,
    has_bump=True,
    tags=("performance", "flashmla"),
)
