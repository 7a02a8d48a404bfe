"""A toy rule, added as this one file: `flash_mla_sparse_fwd` called with a literal scale of 1.0.

tests/test_plugin_rules.py puts this folder on topk_migrate.codemods' path and checks that the
engine finds the rule and that its sites reach every command and format, with no engine change.
"""
from __future__ import annotations

from typing import List, Sequence, Tuple

from topk_migrate import suppress
from topk_migrate.model import Site, Status
from topk_migrate.rules import Rule

_IMPORT = "from sgl_kernel.flash_mla import flash_mla_sparse_fwd\n"
_REASON = "a literal sm_scale of 1.0 is almost never the softmax scale; pass 1/sqrt(head_dim)"


def _literal_one(args) -> bool:
    import libcst as cst

    positional = [a for a in args if not a.keyword and not a.star]
    scale = next((a.value for a in args if a.keyword and a.keyword.value == "sm_scale"),
                 positional[3].value if len(positional) > 3 else None)
    return isinstance(scale, cst.Float) and float(scale.value) == 1.0


class ToyLiteralScale(Rule):
    """A softmax scale written as the literal 1.0 in a sparse FlashMLA call (a toy: the plug-in test)."""

    id = "toy-literal-scale"
    summary = "Sparse FlashMLA call with a literal sm_scale of 1.0"
    entry_points = ("flash_mla_sparse_fwd",)
    EXAMPLES: List[Tuple[str, object]] = [  # (source, the status of its one site, or None: no site)
        (_IMPORT + "def f(q, kv, idx):\n    return flash_mla_sparse_fwd(q, kv, idx, 1.0)\n", Status.MANUAL),
        (_IMPORT + "def f(q, kv, idx, s):\n    return flash_mla_sparse_fwd(q, kv, idx, s)\n", None),
        (_IMPORT + "def f(q, kv, idx):\n    return flash_mla_sparse_fwd(q, kv, idx, 1.0)  "
         "# topk-migrate: ignore[toy-literal-scale] unit test\n", Status.OPT_OUT),
    ]

    def sites(self, source: str, path: str, gate, metadata: Sequence[str] = ()) -> Tuple[str, List[Site]]:
        import libcst as cst

        from topk_migrate.resolve import collect

        lines, out = source.splitlines(), []
        for c in collect(cst.parse_module(source)).calls:
            if c.callee.rsplit(".", 1)[-1] in self.entry_points and _literal_one(c.node.args):
                at = c.range.start
                why = suppress.reason(lines, at.line, c.range.end.line, self.id)
                status, reason = (Status.OPT_OUT, f"suppressed by comment: {why}") if why else (Status.MANUAL, _REASON)
                out.append(Site(path, at.line, at.column + 1, c.callee, status, reason))
        return source, out

    def bump(self, ctx) -> list:
        from topk_migrate.bump.bind import MANUAL
        from topk_migrate.model import Finding

        if ctx.entry_point in self.entry_points and ctx.args.passes(ctx.new_ep, "sm_scale") == "1.0":
            return [Finding(MANUAL, _REASON, "sm_scale", self.id)]
        return []
