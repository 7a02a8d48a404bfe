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
from topk_migrate.model import Site, Status
from topk_migrate.resolve import CallInfo, Function, ModuleFacts, collect, dotted

# Python entry points of the kernel, with the position of topk_length in their
# signature (sgl_kernel / flash_mla: q, kv, indices, sm_scale, d_v, attn_sink, topk_length).
ENTRY_POINTS: Dict[str, Optional[int]] = {"flash_mla_sparse_fwd": 6, "flash_mla_sparse_prefill": None}
OP_NAME = "sparse_prefill_fwd"  # torch.ops.<ns>.sparse_prefill_fwd[.default]
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


@dataclass
class Gate:
    """Answers whether the kernel behind a callee accepts topk_length (see api.kernel_gate)."""

    check: Callable[[str], "Capability"]


@dataclass
class Plan:
    """Edits to make, keyed by the identity of the original nodes."""

    keywords: Dict[int, str] = field(default_factory=dict)  # call -> topk_length value
    guards: Dict[int, List[str]] = field(default_factory=dict)  # statement -> guard q expressions
    params: Set[int] = field(default_factory=set)  # helpers that gain the parameter

    def __bool__(self) -> bool:
        return bool(self.keywords or self.guards or self.params)


def is_kernel(callee: str) -> bool:
    parts = callee.split(".")
    if callee.startswith("torch.ops."):
        return OP_NAME in parts[3:]
    return parts[-1] in ENTRY_POINTS


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
        op_level = c.callee.startswith("torch.ops.")
        cap = self.gate.check(c.callee)
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
        if here:
            self.plan.keywords[id(c.node)] = f"{here} if {here}.shape[0] == {q}.shape[0] else None"
            return self.site(c, Status.FIXABLE, f"passes {here} (guarded by q's row count)", here)
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
        passing, lacking, found = [], [], None
        for k in self.callers(fn):
            if any(a.keyword and a.keyword.value == PARAM for a in k.node.args):
                continue
            expr = self.metadata_in(k.function, k.range.start.line)
            if expr is None or any(a.star == "*" for a in k.node.args):
                lacking.append(k)
            else:
                passing.append((k, expr))
                found = found or expr
        if not passing:
            why = f"no {wanted} in scope of {fn.qualname}"
            why += f", nor in its callers (lines {', '.join(str(k.range.start.line) for k in lacking)})" if lacking else ", and it has no callers in this module"
            return self.site(c, Status.MANUAL, why)
        for k, expr in passing:
            self.plan.keywords[id(k.node)] = expr
        if not has_param:
            self.plan.params.add(id(fn.node))
        self.plan.guards.setdefault(id(c.statement), []).append(q)
        self.plan.keywords[id(c.node)] = PARAM
        reason = f"{fn.qualname} gains topk_length; callers at line {', '.join(str(k.range.start.line) for k, _ in passing)} pass it"
        if lacking:
            reason += f"; callers at line {', '.join(str(k.range.start.line) for k in lacking)} have no metadata and keep the full width"
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
            for q in self.plan.guards.get(id(orig), ()):
                guard = cst.parse_statement(
                    f"if {PARAM} is not None and {PARAM}.shape[0] != {q}.shape[0]:\n    {PARAM} = None\n"
                )
                lead = upd.leading_lines
                blank = [cst.EmptyLine(indent=False)] if lead and lead[0].comment is None else []
                out.append(guard.with_changes(leading_lines=[*blank, cst.EmptyLine(comment=cst.Comment(GUARD_COMMENT))]))
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
