"""A second rule, added as this one package: a sparse FlashMLA call that leaves `d_v` to its default.

`flash_mla_sparse_fwd(q, kv, indices, sm_scale, d_v=512, ...)`: a call that omits `d_v` computes
with whatever default the installed kernel declares. `apply` writes `d_v=512` into it, so that the
call says the head dimension it was written for (every release the kernel gate accepts defaults to
512). tests/test_plugin_rules.py puts tests/data/toy_rules/ on topk_migrate.codemods' path and checks
that the engine finds the rule and that it reaches check, apply, audit (its quick classifier too),
bump and every report format, with no engine file changed: the engine knows it only by this INFO.
"""
from topk_migrate.rules import RuleInfo

INFO = RuleInfo(
    id="explicit-d-v",
    summary="Sparse FlashMLA call that leaves d_v to the kernel's default",
    help="A sparse FlashMLA call without d_v computes with the head dimension the installed kernel "
         "defaults to; `apply` writes d_v=512 (the default of every release that takes d_v) so that the "
         "call keeps it across kernel upgrades.",
    entry_points=("flash_mla_sparse_fwd",),
    param="d_v",
    min_kernel={"sglang-kernel": "0.4.0", "sgl-kernel": "0.3.17"},
    providers={"sgl_kernel": ("sglang-kernel", "sgl-kernel")},
    wrappers={"sgl_kernel/flash_mla.py": "sgl_kernel", "flash_mla/flash_mla_interface.py": "flash_mla"},
    has_sites=True,
    has_bump=True,
    quick="quick",
    tags=("correctness",),
)
