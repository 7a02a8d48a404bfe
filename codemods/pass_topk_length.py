"""Pass FlashMLA's per-row `topk_length` to `flash_mla_sparse_fwd`.

Without it the sparse kernel scans the whole -1-padded top-k width for every row
shorter than index_topk (the first 2048 tokens of each prefill, short decode and
verify rows). The fix mirrors SGLang's: the helper that calls the kernel gains
`topk_length: Optional[torch.Tensor] = None`, a shape-only guard falls back to the
full width if its rows differ from q's, and the callers pass the clipped-seqlen
metadata they already hold. The output is bitwise identical; no sync is added.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Set, Tuple

import libcst as cst

from topk_migrate.cstutil import add_keyword, add_param
from topk_migrate.model import Capability, Site, Status
from topk_migrate.resolve import CallInfo, Function, ModuleFacts, collect, dotted

# Python entry points of the kernel, with the position of topk_length in their
# signature (sgl_kernel / flash_mla: q, kv, indices, sm_scale, d_v, attn_sink, topk_length).
ENTRY_POINTS: Dict[str, Optional[int]] = {"flash_mla_sparse_fwd": 6, "flash_mla_sparse_prefill": None}
OP_NAME = "sparse_prefill_fwd"  # torch.ops.<ns>.sparse_prefill_fwd[.default], or an extension module's
OP_TOPK_LENGTH_POSITION = 6

# First release of each distribution whose flash_mla_sparse_fwd takes topk_length
# (None: no release does; sgl-kernel stopped at 0.3.x before the parameter existed).
MIN_KERNEL: Dict[str, Optional[str]] = {"sglang-kernel": "0.4.3", "sgl-kernel": None}
# Which distributions can provide a kernel imported from a top-level module.
KERNEL_DISTS: Dict[str, Tuple[str, ...]] = {
    "sgl_kernel": ("sglang-kernel", "sgl-kernel"),
    "flash_mla": ("flash-mla",),
    "vllm": ("vllm",),
}

# Metadata known to satisfy the contract: per-row valid-index count (seqlens clipped
# to topk), int32, 1-D, row-aligned with q, updated in place under CUDA-graph replay.
KNOWN_METADATA = ("metadata.dsa_cache_seqlens_int32", "metadata.nsa_cache_seqlens_int32")

PARAM = "topk_length"
SUPPRESS = re.compile(r"#\s*topk-migrate:\s*ignore\b[\s:\-\u2014\[(]*(?P<reason>[^\])]*)")
GUARD_COMMENT = "# topk-migrate: use the full top-k width if the row counts ever differ from q's."


# callee -> Capability: does the kernel behind it accept topk_length (see api.kernel_gate)
Gate = Callable[[str], Capability]


@dataclass
class Plan:
    """Edits to make, keyed by the identity of the original nodes."""

    keywords: Dict[int, str] = field(default_factory=dict)  # call -> topk_length value
    # statement -> guards to put before it: (q expression, metadata to bind first or None)
    guards: Dict[int, List[Tuple[str, Optional[str]]]] = field(default_factory=dict)
    params: Set[int] = field(default_factory=set)  # helpers that gain the parameter

    def __bool__(self) -> bool:
        return bool(self.keywords or self.guards or self.params)


def is_op_level(callee: str) -> bool:
    parts = callee.split(".")
    return len(parts) > 1 and (parts[-1] == OP_NAME or parts[-2:] == [OP_NAME, "default"])


def is_kernel(callee: str) -> bool:
    return callee.rsplit(".", 1)[-1] in ENTRY_POINTS or is_op_level(callee)


def _at(calls: Sequence[CallInfo]) -> str:
    lines = ", ".join(str(k.range.start.line) for k in calls)
    return f"callers at line{'s' if len(calls) > 1 else ''} {lines}"


def _is_none(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "None"


class _Analysis:
    def __init__(self, facts: ModuleFacts, source: str, path: str, gate: Gate, metadata: Sequence[str]):
        self.facts, self.path, self.gate = facts, path, gate
        self.lines = source.splitlines()
        # Defaults count only where the module itself uses that field; user mappings always count.
        self.metadata = [m for m in metadata] + [
            m for m in KNOWN_METADATA if re.search(rf"\b{m.rsplit('.', 1)[1]}\b", source)
        ]
        self.plan = Plan()

    # -- helpers ----------------------------------------------------------
    def site(self, c: CallInfo, status: Status, reason: str, metadata: Optional[str] = None) -> Site:
        s = c.range.start
        return Site(self.path, s.line, s.column + 1, c.callee, status, reason, metadata)

    def metadata_in(self, fn: Optional[Function], line: int) -> Optional[str]:
        """The first known metadata expression whose root name is bound in fn before `line`."""
        if fn is None:
            return None
        for expr in self.metadata:
            bound_at = fn.bound.get(expr.split(".")[0])
            if bound_at is not None and bound_at <= line:
                return expr
        return None

    def suppression(self, c: CallInfo) -> Optional[str]:
        for text in self.lines[c.range.start.line - 1 : c.range.end.line]:
            m = SUPPRESS.search(text)
            if m:
                return m.group("reason").strip() or "no reason given"
        return None

    # -- classification ---------------------------------------------------------
    def classify(self, c: CallInfo) -> Site:
        args = c.node.args
        for a in args:
            if a.keyword and a.keyword.value == PARAM:
                if _is_none(a.value):
                    return self.site(c, Status.OPT_OUT, "passes topk_length=None explicitly")
                return self.site(c, Status.COMPLIANT, "passes topk_length", dotted(a.value))
        op_level = is_op_level(c.callee)
        cap = self.gate(c.callee)
        pos = OP_TOPK_LENGTH_POSITION if op_level else ENTRY_POINTS.get(c.callee.rsplit(".", 1)[-1])
        if cap.position is not None:
            pos = cap.position
        positional = [a for a in args if not a.keyword and not a.star]
        if pos is not None and len(positional) > pos and not any(a.star for a in args[: args.index(positional[pos])]):
            if _is_none(positional[pos].value):
                return self.site(c, Status.OPT_OUT, "passes topk_length=None positionally")
            return self.site(c, Status.COMPLIANT, "passes topk_length positionally", dotted(positional[pos].value))
        reason = self.suppression(c)
        if reason is not None:
            return self.site(c, Status.OPT_OUT, f"suppressed by comment: {reason}")
        if any(a.star == "**" for a in args):
            return self.site(c, Status.MANUAL, "**kwargs may already carry topk_length; pass it explicitly")
        if any(a.star == "*" for a in args):
            return self.site(c, Status.MANUAL, "*args may already carry topk_length; pass it explicitly")
        if op_level:
            return self.site(c, Status.MANUAL, "op-level call: its schema is fixed by the kernel build; call the Python wrapper with topk_length")
        if cap.accepts is False:
            return self.site(c, Status.MANUAL, f"kernel too old: {cap.detail}")
        if cap.accepts is None:
            return self.site(c, Status.MANUAL, f"kernel capability unknown (pass --kernel): {cap.detail}")
        return self.contract(c)

    def q_rows(self, c: CallInfo) -> Optional[str]:
        for a in c.node.args:
            if a.keyword and a.keyword.value == "q":
                return dotted(a.value)
        first = c.node.args[0] if c.node.args else None
        return dotted(first.value) if first is not None and not first.keyword and not first.star else None

    def contract(self, c: CallInfo) -> Site:
        q = self.q_rows(c)
        if q is None:
            return self.site(c, Status.MANUAL, "q is not a plain name; its rows cannot be checked without re-evaluating it")
        here = self.metadata_in(c.function, c.range.start.line)
        if here and c.statement is not None and PARAM not in c.function.bound:
            self.plan.guards.setdefault(id(c.statement), []).append((q, here))
            self.plan.keywords[id(c.node)] = PARAM
            return self.site(c, Status.FIXABLE, f"passes {here} (guarded by q's row count)", here)
        if here:  # no statement of its own to put the guard before: guard inline
            self.plan.keywords[id(c.node)] = f"{here} if {here}.shape[0] == {q}.shape[0] else None"
            return self.site(c, Status.FIXABLE, f"passes {here} (guarded inline by q's row count)", here)
        return self.through_helper(c, q)

    def callers(self, fn: Function) -> List[CallInfo]:
        names = {f"self.{fn.name}", f"cls.{fn.name}"} if fn.class_name else {fn.name}
        return [k for k in self.facts.calls if k.callee in names and k.function is not fn]

    def through_helper(self, c: CallInfo, q: str) -> Site:
        fn = c.function
        wanted = " or ".join(self.metadata) or "clipped-seqlen metadata (metadata.dsa_cache_seqlens_int32)"
        if fn is None:
            return self.site(c, Status.MANUAL, f"no {wanted} in scope at module level")
        if c.statement is None:
            return self.site(c, Status.MANUAL, "the call is not a statement of its own block, so the row guard has no place")
        params = fn.node.params
        has_param = any(p.name.value == PARAM for p in (*params.params, *params.kwonly_params))
        if not has_param and PARAM in fn.bound:
            return self.site(c, Status.MANUAL, f"{fn.qualname} already binds a local named topk_length")
        if not has_param and isinstance(params.star_kwarg, cst.Param):
            return self.site(c, Status.MANUAL, f"{fn.qualname} takes **kwargs; add topk_length to it by hand")
        if fn.class_name:  # `self.helper(..., topk_length=...)` also reaches same-named overrides
            for other in self.facts.functions:
                op = other.node.params
                if (other.name == fn.name and other is not fn and other.class_name
                        and not any(p.name.value == PARAM for p in (*op.params, *op.kwonly_params))
                        and not isinstance(op.star_kwarg, cst.Param)):
                    return self.site(c, Status.MANUAL, f"{other.qualname} overrides {fn.qualname} without topk_length")
        passing, lacking, found, already = [], [], None, 0
        for k in self.callers(fn):
            if any(a.keyword and a.keyword.value == PARAM for a in k.node.args):
                already += 1
                continue
            expr = self.metadata_in(k.function, k.range.start.line)
            if expr is None or any(a.star for a in k.node.args):  # *args/**kwargs may fill it
                lacking.append(k)
            else:
                passing.append((k, expr))
                found = found or expr
        if has_param and already and not passing:  # half-migrated: callers pass it, the kernel call drops it
            self.plan.guards.setdefault(id(c.statement), []).append((q, None))
            self.plan.keywords[id(c.node)] = PARAM
            return self.site(c, Status.FIXABLE, f"{fn.qualname} takes topk_length from its callers but does not forward it")
        if not passing:
            why = f"no {wanted} in scope of {fn.qualname}"
            why += f", nor in its {_at(lacking)}" if lacking else ", and it has no callers in this module"
            return self.site(c, Status.MANUAL, why)
        for k, expr in passing:
            self.plan.keywords[id(k.node)] = expr
        if not has_param:
            self.plan.params.add(id(fn.node))
        self.plan.guards.setdefault(id(c.statement), []).append((q, None))
        self.plan.keywords[id(c.node)] = PARAM
        reason = f"{fn.qualname} gains topk_length; {_at([k for k, _ in passing])} pass it"
        if lacking:
            reason += f"; {_at(lacking)} have no metadata and keep the full width"
        return self.site(c, Status.FIXABLE, reason, found)


class _Rewrite(cst.CSTTransformer):
    def __init__(self, plan: Plan, annotation: str):
        self.plan, self.annotation = plan, annotation

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.Call:
        value = self.plan.keywords.get(id(original))
        return add_keyword(updated, PARAM, value) if value else updated

    def leave_FunctionDef(self, original: cst.FunctionDef, updated: cst.FunctionDef) -> cst.FunctionDef:
        if id(original) in self.plan.params:
            return add_param(updated, f"{PARAM}: {self.annotation} = None")
        return updated

    def _guarded(self, original_body, updated_body):
        out = []
        for orig, upd in zip(original_body, updated_body):
            for q, metadata in self.plan.guards.get(id(orig), ()):
                lead = upd.leading_lines
                blank = [cst.EmptyLine(indent=False)] if lead and lead[0].comment is None else []
                first = [*blank, cst.EmptyLine(comment=cst.Comment(GUARD_COMMENT))]
                if metadata:  # bind it here, then the same guard as in a helper
                    out.append(cst.parse_statement(f"{PARAM} = {metadata}\n").with_changes(leading_lines=first))
                    first = []
                    test = f"{PARAM}.shape[0] != {q}.shape[0]"
                else:
                    test = f"{PARAM} is not None and {PARAM}.shape[0] != {q}.shape[0]"
                guard = cst.parse_statement(f"if {test}:\n    {PARAM} = None\n")
                out.append(guard.with_changes(leading_lines=first))
                if not blank:
                    upd = upd.with_changes(leading_lines=[cst.EmptyLine(indent=False), *lead])
            out.append(upd)
        return out

    def leave_IndentedBlock(self, original: cst.IndentedBlock, updated: cst.IndentedBlock) -> cst.IndentedBlock:
        if any(id(s) in self.plan.guards for s in original.body):
            return updated.with_changes(body=self._guarded(original.body, updated.body))
        return updated


def _optional_annotation(module: cst.Module, facts: ModuleFacts) -> Tuple[str, bool]:
    """The annotation to write and whether `Optional` must be imported."""
    tensor = "torch.Tensor" if facts.imports.get("torch") == "torch" and "torch" in facts.module_names else '"torch.Tensor"'
    if facts.imports.get("Optional") == "typing.Optional" and "Optional" in facts.module_names:
        return f"Optional[{tensor}]", False
    if facts.imports.get("typing") == "typing" and "typing" in facts.module_names:
        return f"typing.Optional[{tensor}]", False
    return f"Optional[{tensor}]", True


def migrate(source: str, path: str, gate: Gate, metadata: Sequence[str] = ()) -> Tuple[str, List[Site]]:
    """Classify every kernel call in `source` and return (rewritten source, sites)."""
    module = cst.parse_module(source)
    facts = collect(module)
    analysis = _Analysis(facts, source, path, gate, metadata)
    sites = [analysis.classify(c) for c in facts.calls if is_kernel(c.callee)]
    plan = analysis.plan
    if not plan:
        return source, sites
    annotation, need_import = _optional_annotation(module, facts)
    new = module.visit(_Rewrite(plan, annotation))
    if plan.params and need_import:
        from libcst.codemod import CodemodContext
        from libcst.codemod.visitors import AddImportsVisitor

        ctx = CodemodContext()
        AddImportsVisitor.add_needed_import(ctx, "typing", "Optional")
        new = AddImportsVisitor(ctx).transform_module(new)
    return new.code, sites


# -- examples: the rule's documentation and its tests (tests/test_rule_examples.py) -----------
@dataclass(frozen=True)
class Example:
    """`code` must classify as `status` (reason containing `reason`); if `after` is set, apply gives it."""

    code: str
    status: Optional[Status]  # None: no site at all
    reason: str = ""
    after: Optional[str] = None
    kernel: Optional[str] = "sglang-kernel==0.4.6"


_HELPER_BEFORE = '''\
from typing import Optional

import torch


class Backend:
    def forward_decode(self, q, kv, layer):
        metadata = self.forward_metadata
        return self._forward_flashmla_sparse(
            q_all=q,
            kv_cache=kv,
            page_table_1=metadata.page_table_1,
            sm_scale=layer.scaling,
        )

    def _forward_flashmla_sparse(
        self,
        q_all: torch.Tensor,
        kv_cache: torch.Tensor,
        page_table_1: torch.Tensor,
        sm_scale: float,
    ) -> torch.Tensor:
        from sgl_kernel.flash_mla import flash_mla_sparse_fwd

        indices = page_table_1.unsqueeze(1)

        o, _, _ = flash_mla_sparse_fwd(
            q=q_all,
            kv=kv_cache,
            indices=indices,
            sm_scale=sm_scale,
        )
        return o


class Metadata:
    dsa_cache_seqlens_int32: torch.Tensor  # seqlens clipped to topk
'''

VALID = [
    Example(_HELPER_BEFORE.replace("sm_scale=sm_scale,\n        )", "sm_scale=sm_scale,\n            topk_length=lens,\n        )"),
            Status.COMPLIANT, "passes topk_length"),
    Example("from sgl_kernel.flash_mla import flash_mla_sparse_fwd\nflash_mla_sparse_fwd(q, kv, idx, s, topk_length=None)\n",
            Status.OPT_OUT, "topk_length=None"),
    Example("import sgl_kernel\nsgl_kernel.flash_mla_sparse_fwd(q, kv, idx, s, 512, sink, lens)\n",
            Status.COMPLIANT, "positionally"),
    Example("from sgl_kernel.flash_mla import flash_mla_sparse_fwd\n"
            "o = flash_mla_sparse_fwd(q, kv, idx, s)  # topk-migrate: ignore -- indices have interior -1 gaps\n",
            Status.OPT_OUT, "interior -1 gaps"),
    Example("from sgl_kernel.flash_mla import flash_mla_with_kvcache, sparse_mla_q8kv8_prefill_fwd\n"
            "flash_mla_with_kvcache(q, kv)\nsparse_mla_q8kv8_prefill_fwd(q, kv, idx)\n"
            "triton_sparse_mla_fwd(q, kv, idx)\nsparse_mla_prefill(q, kv, idx)\n", None),
    Example("def flash_mla_sparse_fwd(q, kv, indices, sm_scale, d_v=512, attn_sink=None, topk_length=None):\n"
            "    return q\n", None),
    Example("from sgl_kernel.flash_mla import flash_mla_sparse_fwd\n"
            "def f(metadata, q, kv, idx, **kw):\n    return flash_mla_sparse_fwd(q, kv, idx, 1.0, **kw)\n"
            "class M:\n    dsa_cache_seqlens_int32 = None\n",
            Status.MANUAL, "**kwargs may already carry"),
    Example("from sgl_kernel.flash_mla import flash_mla_sparse_fwd\n"
            "def f(q, kv, idx, seq_lens):\n    return flash_mla_sparse_fwd(q, kv, idx, 1.0)\n",
            Status.MANUAL, "no clipped-seqlen metadata"),
    Example("import torch\ntorch.ops.sgl_kernel.sparse_prefill_fwd.default(q, kv, idx, s, 512)\n",
            Status.MANUAL, "op-level call"),
    Example(_HELPER_BEFORE, Status.MANUAL, "kernel too old", kernel="sglang-kernel==0.4.2.post2"),
    Example(_HELPER_BEFORE, Status.MANUAL, "kernel too old", kernel="sgl-kernel==0.3.21"),
    Example(_HELPER_BEFORE, Status.MANUAL, "kernel capability unknown (pass --kernel)", kernel=None),
    Example("from sgl_kernel.flash_mla import flash_mla_sparse_fwd\n"
            "def f(metadata, x, kv, idx):\n    return flash_mla_sparse_fwd(q=pad(x), kv=kv, indices=idx, sm_scale=1.0)\n"
            "# metadata.dsa_cache_seqlens_int32\n",
            Status.MANUAL, "q is not a plain name"),
]

INVALID = [
    # The reference shape: the kernel sits in a helper whose callers hold the metadata.
    Example(_HELPER_BEFORE, Status.FIXABLE, "gains topk_length", after=_HELPER_BEFORE.replace(
        "            sm_scale=layer.scaling,\n        )",
        "            sm_scale=layer.scaling,\n            topk_length=metadata.dsa_cache_seqlens_int32,\n        )",
    ).replace(
        "        sm_scale: float,\n    ) -> torch.Tensor:",
        "        sm_scale: float,\n        topk_length: Optional[torch.Tensor] = None,\n    ) -> torch.Tensor:",
    ).replace(
        "        indices = page_table_1.unsqueeze(1)\n\n",
        "        indices = page_table_1.unsqueeze(1)\n\n"
        f"        {GUARD_COMMENT}\n"
        "        if topk_length is not None and topk_length.shape[0] != q_all.shape[0]:\n"
        "            topk_length = None\n\n",
    ).replace(
        "            sm_scale=sm_scale,\n        )",
        "            sm_scale=sm_scale,\n            topk_length=topk_length,\n        )",
    )),
    # Metadata in scope at the call itself, kernel imported under an alias (older NSA names).
    Example(
        "from sgl_kernel.flash_mla import flash_mla_sparse_fwd as sparse_fwd\n\n"
        "def attend(q, kv, idx, metadata):\n    return sparse_fwd(q, kv, idx, 0.1)\n\n"
        "# metadata.nsa_cache_seqlens_int32: clipped to topk\n",
        Status.FIXABLE, "passes metadata.nsa_cache_seqlens_int32",
        after="from sgl_kernel.flash_mla import flash_mla_sparse_fwd as sparse_fwd\n\n"
        f"def attend(q, kv, idx, metadata):\n    {GUARD_COMMENT}\n"
        "    topk_length = metadata.nsa_cache_seqlens_int32\n"
        "    if topk_length.shape[0] != q.shape[0]:\n        topk_length = None\n\n"
        "    return sparse_fwd(q, kv, idx, 0.1, topk_length=topk_length)\n\n"
        "# metadata.nsa_cache_seqlens_int32: clipped to topk\n",
    ),
    # A one-line suite leaves no statement to guard before (it would run even when the branch
    # does not): the guard goes inline.
    Example(
        "from sgl_kernel.flash_mla import flash_mla_sparse_fwd\n\n"
        "def attend(q, kv, idx, metadata):\n    if metadata is not None: return flash_mla_sparse_fwd(q, kv, idx, 0.1)\n\n"
        "# metadata.dsa_cache_seqlens_int32\n",
        Status.FIXABLE, "guarded inline",
        after="from sgl_kernel.flash_mla import flash_mla_sparse_fwd\n\n"
        "def attend(q, kv, idx, metadata):\n    if metadata is not None: return flash_mla_sparse_fwd(q, kv, idx, 0.1, "
        "topk_length=metadata.dsa_cache_seqlens_int32 if metadata.dsa_cache_seqlens_int32.shape[0] == q.shape[0] else None)\n\n"
        "# metadata.dsa_cache_seqlens_int32\n",
    ),
    # Module import alias, try/except fallback to None, and Optional not yet imported.
    Example(
        "import torch\ntry:\n    import sgl_kernel.flash_mla as fm\nexcept ImportError:\n    fm = None\n\n\n"
        "def run(metadata, q, kv, idx):\n    return helper(q, kv, idx)\n\n\n"
        "def helper(q, kv, idx):\n    out = fm.flash_mla_sparse_fwd(q, kv, idx, 1.0)  # the kernel\n    return out\n"
        "# dsa_cache_seqlens_int32\n",
        Status.FIXABLE, "helper gains topk_length",
        after="import torch\nfrom typing import Optional\n\ntry:\n    import sgl_kernel.flash_mla as fm\nexcept ImportError:\n    fm = None\n\n\n"
        "def run(metadata, q, kv, idx):\n    return helper(q, kv, idx, topk_length=metadata.dsa_cache_seqlens_int32)\n\n\n"
        "def helper(q, kv, idx, topk_length: Optional[torch.Tensor] = None):\n"
        f"    {GUARD_COMMENT}\n"
        "    if topk_length is not None and topk_length.shape[0] != q.shape[0]:\n        topk_length = None\n\n"
        "    out = fm.flash_mla_sparse_fwd(q, kv, idx, 1.0, topk_length=topk_length)  # the kernel\n    return out\n"
        "# dsa_cache_seqlens_int32\n",
    ),
]
