"""The baseline for bench/audit_bench.py: the same rule written the plain LibCST way.

Finds calls whose qualified name ends in a kernel entry point (any import
spelling, through LibCST's QualifiedNameProvider) and adds `topk_length=None`
where the call lacks it. Run by LibCST's own codemod CLI, which parses and
resolves every file it is given:

    python -m libcst.tool codemod -x --no-format topk_codemod.AddTopkLength DIR

(with a .libcst.codemod.yaml whose `modules` lists this directory's parent).
Not part of the package.
"""
from __future__ import annotations

import libcst as cst
from libcst.codemod import CodemodContext, VisitorBasedCodemodCommand
from libcst.metadata import QualifiedNameProvider

ENTRY_POINTS = ("flash_mla_sparse_fwd", "flash_mla_sparse_prefill")
OP_NAME = "sparse_prefill_fwd"


def is_kernel(name: str) -> bool:
    parts = name.split(".")
    return parts[-1] in ENTRY_POINTS or (len(parts) > 1 and (parts[-1] == OP_NAME or parts[-2:] == [OP_NAME, "default"]))


class AddTopkLength(VisitorBasedCodemodCommand):
    DESCRIPTION = "Pass topk_length to FlashMLA's sparse kernel where a call lacks it."
    METADATA_DEPENDENCIES = (QualifiedNameProvider,)

    def __init__(self, context: CodemodContext) -> None:
        super().__init__(context)

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.Call:
        names = self.get_metadata(QualifiedNameProvider, original, set())
        if not any(is_kernel(q.name) for q in names):
            return updated
        if any(a.keyword and a.keyword.value == "topk_length" for a in updated.args):
            return updated
        return updated.with_changes(args=[*updated.args, cst.Arg(cst.Name("None"), keyword=cst.Name("topk_length"))])
