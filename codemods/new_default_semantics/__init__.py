"""A new parameter whose default changes what an unchanged call does: no error, other results.

sgl-flash-mla 1.0.0 adds `use_legacy=False` to every entry point (sglang's own wrapper re-defaults
it to True) and `return_log2_lse` to flash_mla_sparse_fwd (the default LSE becomes natural-log):
a fork calling the package directly changes kernels and LSE base on upgrade. Bump only.
"""
from topk_migrate.rules import RuleInfo

INFO = RuleInfo(
    id="new-default-semantics",
    summary="New parameter whose default changes what an unchanged call computes",
    help="An argument left to a default that is new in the release and changes what the call computes. "
         "Pass the parameter explicitly to keep the old behaviour, or review the call against the release.",
    wrappers={"sgl_kernel/flash_mla.py": "sgl_kernel", "flash_mla/flash_mla_interface.py": "flash_mla"},
    has_bump=True,
    tags=("correctness", "flashmla"),
)
