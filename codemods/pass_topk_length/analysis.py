"""What the pass-topk-length rule reads of a module (codemods/pass_topk_length/rule.py): the analysis that
classifies each kernel call (classify) and plans its rewrite: the metadata at the call (contract), or the helper
that calls the kernel and its callers (through_helper), where q's rows and the indices come from (rows.py).
Each statement of docs/soundness.md it proves is a mixin of _Analysis in a module of its own: identity.py
(`callee-identity`), helper_identity.py, whole_project.py, reflection.py (`no-reflection`),
metadata_in_scope.py, metadata_type.py, field_meaning.py, graph_replay.py, and the derived lengths' own checks
(derived_proof.py), over the module's indexes (indexes.py). The kernel's uses as a value: value_use.py; the
planned rewrite and its guard: group.py; the syntax helpers they share: syntax.py. The kernel's names, and the
verdicts that need no LibCST: quick.py. The rewrite and its validation: rewrite.py."""
from __future__ import annotations

import re
from dataclasses import replace
from typing import Callable, Dict, List, Optional, Sequence, Set, Tuple

import libcst as cst
from libcst.helpers import get_full_name_for_node

from topk_migrate import suppress
from topk_migrate.cst.resolve import CallInfo, Function, ModuleFacts, dotted
from topk_migrate.cst.scopecheck import Tree
from topk_migrate.model import Capability, Site, Status
from topk_migrate.rules import RuleOptions

from .derived_proof import DerivedLengths
from .field_meaning import FieldMeaning
from .graph_capture import CaptureFiling
from .graph_replay import GraphReplay
from .group import Group, _direct_reason
from .helper_identity import HelperIdentity
from .identity import CalleeIdentity, _misplaced
from .implicit_runs import ImplicitRuns
from .indexes import ModuleIndexes
from .metadata_in_scope import MetadataInScope
from .metadata_type import MetadataType
from .quick import ENTRY_POINTS, OP_TOPK_LENGTH_POSITION, PARAM, is_op_level
from .reflection import NoReflection
from .rows import _kv_arg, foreign_write, index_hazard, row_hazard
from .syntax import _argument_for, _indices_arg, _is_none, _q_arg, _top_level_imports
from .whole_project import WholeProject
from .writers_after import WritersAfter

# Metadata known to satisfy the contract: per-row valid-index count (seqlens clipped
# to topk), int32, 1-D, row-aligned with q, updated in place under CUDA-graph replay.
KNOWN_METADATA = ("metadata.dsa_cache_seqlens_int32", "metadata.nsa_cache_seqlens_int32")

RULE_ID = "pass-topk-length"


# callee -> Capability: does the kernel behind it accept topk_length (see api.kernel_gate)
Gate = Callable[[str], Capability]


def _at(calls: Sequence[CallInfo]) -> str:
    lines = ", ".join(str(k.range.start.line) for k in calls)
    return f"callers at line{'s' if len(calls) > 1 else ''} {lines}"


def _mapped(a: cst.Arg) -> Optional[cst.DictElement]:
    """`**{"topk_length": value, ...}`'s element (the derived lengths under a `**` mapping: rewrite.merged_mapping)."""
    if a.star != "**" or not isinstance(a.value, cst.Dict):
        return None
    return next((e for e in a.value.elements if isinstance(e, cst.DictElement) and isinstance(e.key, cst.SimpleString)
                 and e.key.evaluated_value == PARAM), None)


class _Analysis(MetadataInScope, ImplicitRuns, WritersAfter, MetadataType, FieldMeaning, GraphReplay, CaptureFiling,
                CalleeIdentity, NoReflection, HelperIdentity, WholeProject, DerivedLengths, ModuleIndexes):
    """One module's analysis: each kernel call classified (classify), the reference fix planned where its
    statements hold (contract, through_helper), else the derived lengths (derived_or). Each
    statement of docs/soundness.md it proves is a mixin from a module of its own; the indexes of the module
    they read through: indexes.ModuleIndexes."""

    def __init__(self, facts: ModuleFacts, tree: Tree, source: str, path: str, gate: Gate, options: RuleOptions):
        self.facts, self.tree, self.path, self.gate = facts, tree, path, gate
        self.lengths = options.lengths
        metadata = options.metadata
        # what the module binds torch to at import time (the derived lengths and the checked guards read it)
        self.torch = next((k for k, v in sorted(_top_level_imports(tree.module).items()) if v == "torch"), None)
        self.source = source  # (the module as checked: the project reads it instead of the file on disk)
        self.lines = source.splitlines()
        # Defaults count only where the module itself uses that field; user mappings always count.
        self.user_metadata = list(metadata)
        self.metadata = list(metadata) + [
            m for m in KNOWN_METADATA if re.search(rf"\b{m.rsplit('.', 1)[1]}\b", source)
        ]
        self.sites: List[Site] = []
        self.groups: List[Group] = []
        self.joined: Dict[int, Group] = {}  # id of a kernel call -> the helper group it joined after the first
        self.through_alias: Set[int] = set()  # ids of the kernel calls made through an alias (kernel_calls)
        self.sealed: Set[str] = set()  # attributes holding the kernel that only this module reads (held_callee)
        self._helper_groups: Dict[int, Group] = {}
        self._external: Dict[str, Optional[Tuple[Tree, cst.FunctionDef]]] = {}
        self._project = None
        self._indexes: Dict[str, object] = {}
        self._assumed_named: Set[int] = set()  # ids of the locals metadata_type reads assuming they hold the class

    # -- helpers ----------------------------------------------------------
    def site(self, c: CallInfo, status: Status, reason: str, metadata: Optional[str] = None) -> Site:
        s = c.range.start
        return Site(self.path, s.line, s.column + 1, c.callee, status, reason, metadata)

    def suppression(self, c: CallInfo) -> Optional[str]:
        return suppress.reason(self.lines, c.range.start.line, c.range.end.line, RULE_ID)

    # -- classification ---------------------------------------------------------
    def classify(self, c: CallInfo) -> Site:
        args = c.node.args
        for a in args:
            if a.keyword and a.keyword.value == PARAM or _mapped(a) is not None:
                a = _mapped(a) or a
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
        mapping = [a for a in args if a.star == "**"]
        if len(mapping) > 1:
            return self.site(c, Status.MANUAL, "**kwargs may already carry topk_length; pass it explicitly")
        if any(a.star == "*" for a in args):
            return self.site(c, Status.MANUAL, "*args may already carry topk_length; pass it explicitly")
        if op_level:
            return self.site(c, Status.MANUAL, "op-level call: its schema is fixed by the kernel build; call the Python wrapper with topk_length")
        if cap.accepts is False:
            return self.site(c, Status.MANUAL, f"kernel too old: {cap.detail}")
        why = self.callee_identity(c) or self.reflection()
        if why:  # the real blocker first: a name that may not be the kernel, whatever the kernel takes
            return self.site(c, Status.MANUAL, why)
        if cap.accepts is None:
            return self.site(c, Status.MANUAL, f"kernel capability unknown (pass --kernel): {cap.detail}")
        why = _misplaced(positional, cap)
        if why:
            return self.site(c, Status.MANUAL, why)
        if mapping:  # the derived lengths go under the mapping's own (rewrite.merged_mapping): it still wins
            site = self.site(c, Status.MANUAL, "**kwargs may already carry topk_length, so the reference fix cannot add it")
            why = self._impure_mapping(c, mapping[0])
            return replace(site, reason=f"{site.reason}; {why}") if why else self.derived_or(c, site)
        if self.lengths == "derived-everywhere":
            return self.derived_or(c, self.site(c, Status.MANUAL, "the derived lengths asked for everywhere"))
        site = self.contract(c)
        return self.derived_or(c, site) if site.status is Status.MANUAL else site

    def contract(self, c: CallInfo) -> Site:
        q_expr = _q_arg(c.node)
        q = dotted(q_expr) if q_expr is not None else None
        if q is None and c.function is not None and _is_test(c.function) and not self.callers(c.function) \
                and not self.metadata_at(c.node)[0]:
            return self.through_helper(c, q_expr, None)  # a pytest test without metadata: that is the blocker
        if q is None:
            return self.site(c, Status.MANUAL, "q is not a plain name; its rows cannot be checked without re-evaluating it")
        here, form, why_not = self.metadata_at(c.node) if c.function is not None else (None, "plain", None)
        if here:
            batch = self.tree.binding(c.node, here.split(".")[0]).assignments[0].scope
            hazard, rows_from = row_hazard(self.tree, q_expr, batch, self.hooks)
            if hazard:
                return self.site(c, Status.MANUAL, _rows_reason(hazard))
            hazard, indices_from = self.indices_hazard(c)
            if hazard:
                return self.site(c, Status.MANUAL, _indices_reason(hazard))
            root = here.split(".")[0]
            fdef = getattr(batch, "node", None)
            meta = {root} if isinstance(fdef, cst.FunctionDef) and root in {
                p.name.value for p in (*fdef.params.posonly_params, *fdef.params.params, *fdef.params.kwonly_params)} else set()
            why = self.whole_project(c, None) or (self.callers_hand_on(fdef, rows_from, indices_from, meta) if isinstance(
                fdef, cst.FunctionDef) else None)
            if why:
                return self.site(c, Status.MANUAL, why)
            g = Group("direct", [c], [], metadata=here, form=form, inline=c.statement is None)
            self.groups.append(g)
            return self.site(c, Status.FIXABLE, _direct_reason(g), here)
        return self.through_helper(c, q_expr, why_not)

    # -- the helper route -------------------------------------------------------------
    def callers(self, fn: Function) -> List[CallInfo]:
        """Calls that reach this helper: `self.helper(...)` from a method of its class or a
        subclass (receiver = that method's first parameter), or `helper(...)` resolving to it."""
        out = []
        if fn.class_name:
            classes = self.subclasses(fn.class_name)
            for k in self.calls_named(fn.name):
                f = k.function
                if k.function is fn or f is None or f.class_name not in classes:
                    continue
                func = k.node.func
                if not (isinstance(func, cst.Attribute) and func.attr.value == fn.name and isinstance(func.value, cst.Name)):
                    continue
                first = (f.node.params.posonly_params or f.node.params.params or [None])[0]
                if first is not None and first.name.value == func.value.value:
                    b = self.tree.binding(func.value, func.value.value)
                    if len(b.assignments) == 1 and getattr(b.assignments[0], "node", None) is first:
                        out.append(k)
            return out
        own = self.tree.binding(fn.node, fn.name)
        for k in self.calls_named(fn.name):
            if k.function is fn or not isinstance(k.node.func, cst.Name) or k.node.func.value != fn.name:
                continue
            b = self.tree.binding(k.node.func, fn.name)
            if [getattr(a, "node", None) for a in b.assignments] == [fn.node] and own.scope_rank == b.scope_rank:
                out.append(k)
        return out

    def through_helper(self, c: CallInfo, q_expr: cst.BaseExpression, why_not: Optional[str]) -> Site:
        fn = c.function
        wanted = " or ".join(self.metadata) or "clipped-seqlen metadata (metadata.dsa_cache_seqlens_int32)"
        if fn is None:
            return self.site(c, Status.MANUAL, f"no {wanted} in scope at module level")
        if why_not:
            return self.site(c, Status.MANUAL, f"{why_not}; the {wanted} is not provably there at the call")
        existing = self.helper_groups_of(fn)
        if existing is not None:  # a second kernel call in the same helper joins its group
            hazard, rows_from = row_hazard(self.tree, q_expr, self.tree.scope_of.get(fn.node.body), self.hooks,
                                           params_only=True)
            if hazard:
                return self.site(c, Status.MANUAL, _rows_reason(hazard))
            hazard, indices_from = self.indices_hazard(c)
            if hazard:
                return self.site(c, Status.MANUAL, _indices_reason(hazard))
            untraced = sorted((rows_from - existing.row_sources) | (indices_from - existing.index_sources))
            if untraced:  # the callers' arguments were traced for the first call's parameters only
                return self.site(c, Status.MANUAL, f"this call's q or indices come from `{untraced[0]}`, a parameter of "
                                 f"{fn.qualname} the first kernel call's do not come from, so what its callers pass "
                                 "for it is not checked; pass topk_length by hand")
            existing.calls.append(c)
            self.joined[id(c.node)] = existing
            return self.site(c, Status.FIXABLE, existing.reason, existing.callers[0][1] if existing.callers else None)
        params = fn.node.params
        all_params = [*params.posonly_params, *params.params, *params.kwonly_params]
        mine = next((p for p in all_params if p.name.value == PARAM), None)
        # the real blocker first (issue 26): no metadata, then rows or indices that cannot align, are what a
        # maintainer must solve; a decorator, an override or **kwargs only decide how the value is passed
        identity = f"{fn.qualname} takes **kwargs; add topk_length to it by hand" \
            if mine is None and isinstance(params.star_kwarg, cst.Param) else self.helper_identity(fn)
        hazard, sources = row_hazard(self.tree, q_expr, self.tree.scope_of.get(fn.node.body), self.hooks,
                                     params_only=True)
        rows_why = _rows_reason(hazard) if hazard else None
        hazard, index_sources = self.indices_hazard(c)
        indices_why = _indices_reason(hazard) if hazard else None
        if mine is not None:
            why = self.existing_param(fn, mine, all_params)
            if why:
                return self.site(c, Status.MANUAL, why)
        positions = {p.name.value: i for i, p in enumerate([*params.posonly_params, *params.params])}
        shift = 1 if fn.class_name and not any(
            get_full_name_for_node(d.decorator) == "staticmethod" for d in fn.node.decorators) else 0
        passing, lacking, found, already, blocker, handing = [], [], None, 0, None, []
        for k in self.callers(fn):
            if any(a.keyword and a.keyword.value == PARAM for a in k.node.args):
                already += 1
                continue
            expr, form, why_not_here = self.metadata_at(k.node)
            blocker = blocker or why_not_here
            if expr is None or any(a.star for a in k.node.args):  # *args/**kwargs may fill it
                lacking.append(k)
                continue
            if mine is not None and mine.name.value in positions and \
                    len([a for a in k.node.args if not a.keyword]) > positions[PARAM] - shift:
                return self.site(c, Status.MANUAL, f"the caller at line {k.range.start.line} already passes "
                                 f"{fn.qualname}'s topk_length positionally; its meaning is unknown")
            batch = self.tree.binding(k.node, expr.split(".")[0]).assignments[0].scope
            handed: Tuple[Set[str], Set[str]] = (set(), set())  # the caller's own parameters they come from
            for p in sources:
                arg = _argument_for(k.node, p, positions.get(p), shift)
                hazard, got = row_hazard(self.tree, arg, batch, self.hooks) if arg is not None else (None, set())
                handed[0].update(got)
                if hazard:
                    return self.site(c, Status.MANUAL, f"at the caller on line {k.range.start.line}: " + _rows_reason(hazard))
            for p in index_sources:
                arg = _argument_for(k.node, p, positions.get(p), shift)
                hazard, got = index_hazard(self.tree, arg, self.hooks) if arg is not None else (None, set())
                handed[1].update(got)
                if hazard:
                    return self.site(c, Status.MANUAL, f"at the caller on line {k.range.start.line}: " + _indices_reason(hazard))
            hazard = index_sources and self.caller_foreign_write(c, k, sources, positions, shift)
            if hazard:
                return self.site(c, Status.MANUAL, f"at the caller on line {k.range.start.line}: " + _indices_reason(hazard))
            handing.append((k, handed))
            passing.append((k, expr, form))
            found = found or expr
        if not passing and not (mine is not None and already):
            if blocker:  # the real blocker first: the metadata is there, but not provably what topk_length needs
                return self.site(c, Status.MANUAL, f"at the {_at(lacking)}: {blocker}")
            if identity and not lacking and not _is_test(fn) and fn.class_name is None and any(
                    isinstance(k.node.func, cst.Name) and k.function is not fn for k in self.calls_named(fn.name)):
                return self.site(c, Status.MANUAL, identity)  # calls of its name that are not callers: its identity is why
            why = f"no {wanted} in scope of {fn.qualname}"
            why += f", nor in its {_at(lacking)}" if lacking else ", and it has no callers in this module"
            if _is_test(fn):  # pytest fills a test's parameters with fixtures: never tell it to gain one
                why += ("; it is a pytest test, so pass topk_length to the kernel call itself: the count of valid "
                        "(front-packed) indices of each row of the indices it builds")
            return self.site(c, Status.MANUAL, why)
        if rows_why or indices_why:
            return self.site(c, Status.MANUAL, rows_why or indices_why)
        if identity:
            return self.site(c, Status.MANUAL, identity + _by_hand(found, passing))
        why = self.whole_project(c, fn) or next(filter(None, (
            self.callers_hand_on(k.function.node, *got) for k, got in handing if k.function is not None)), None)
        if why:
            return self.site(c, Status.MANUAL, why)
        if mine is not None and already and not passing:  # half-migrated: callers pass it, the kernel call drops it
            g = Group("helper", [c], [], helper=fn, inline=c.statement is None, row_sources=sources,
                      index_sources=index_sources)
            g.reason = f"{fn.qualname} takes topk_length from its callers but does not forward it"
            self._remember(fn, g)
            return self.site(c, Status.FIXABLE, g.reason)
        g = Group("helper", [c], [], helper=fn, callers=passing, add_param=mine is None, inline=c.statement is None,
                  row_sources=sources, index_sources=index_sources)
        g.reason = f"{fn.qualname} gains topk_length; {_at([k for k, _, _ in passing])} pass it"
        if lacking:
            g.reason += f"; {_at(lacking)} have no metadata and keep the full width"
        self._remember(fn, g)
        return self.site(c, Status.FIXABLE, g.reason, found)

    def indices_hazard(self, c: CallInfo) -> Tuple[Optional[str], Set[str]]:
        arg = _indices_arg(c.node)
        hazard, sources = index_hazard(self.tree, arg, self.hooks) if arg is not None else (None, set())
        return hazard or self.foreign_write_at(c.node), sources

    def foreign_write_at(self, call: cst.Call, values: Optional[List[cst.BaseExpression]] = None) -> Optional[str]:
        """rows.foreign_write before `call` in its function, the metadata's fields exempt (`values`: what a caller
        hands, exempt too)."""
        fields = {m.rsplit(".", 1)[-1] for m in self.metadata}
        return foreign_write(self.tree, call, lambda n: [f.node for f in self.functions_named(n)], fields,
                             self.index("foreign-writes", dict), values)

    def caller_foreign_write(self, c: CallInfo, k: CallInfo, sources: Set[str], positions, shift: int) -> Optional[str]:
        """rows' foreign_write in a caller of the helper: before it calls the helper, it writes in place nothing that
        may be the indices' storage under another name (a sibling view of the batch's top-k, another parameter)."""
        kv = _kv_arg(c.node)
        params = sources | ({kv.value} if isinstance(kv, cst.Name) else set())
        values = [a for a in (_argument_for(k.node, p, positions.get(p), shift) for p in params) if a is not None]
        return self.foreign_write_at(k.node, values)

    def helper_groups_of(self, fn: Function) -> Optional[Group]:
        return self._helper_groups.get(id(fn.node))

    def _remember(self, fn: Function, g: Group) -> None:
        self._helper_groups[id(fn.node)] = g
        self.groups.append(g)

    def existing_param(self, fn: Function, param: cst.Param, all_params: List[cst.Param]) -> Optional[str]:
        """The new parameter's name: a `topk_length` parameter the helper already has is reused only if it is
        the unused, None-defaulted slot of a half-done migration."""
        if param.default is None or not _is_none(param.default):
            return (f"{fn.qualname} already has a parameter `topk_length` without a None default; "
                    "its meaning is unknown, rename it or migrate by hand")
        scope = self.tree.scope_of.get(fn.node.body)
        for a in scope[PARAM] if scope is not None else ():
            for access in getattr(a, "references", ()):
                return (f"{fn.qualname} already reads its parameter `topk_length` (line "
                        f"{self.tree.line(access.node)}); its meaning is unknown, migrate by hand")
        return None


def _is_test(fn: Function) -> bool:
    """A function pytest collects (test_* at module level or in a Test* class): its parameters are fixtures."""
    return fn.name.startswith("test") and (fn.class_name is None or fn.class_name.startswith("Test"))


def _by_hand(found: Optional[str], passing) -> str:
    """For a decorator or override reason: the value a hand migration must pass, and from where."""
    if not found:
        return ""
    many = len(passing) > 1
    lines = ", ".join(str(k.range.start.line) for k, _, _ in passing)
    return (f" (the value to pass is {found}, which the caller{'s' if many else ''} at line{'s' if many else ''} "
            f"{lines} hold{'' if many else 's'})")


def _rows_reason(hazard: str) -> str:
    return (f"q's rows may not be the metadata's rows: {hazard}; the row-count guard cannot tell, "
            "so pass topk_length by hand if they align")


def _indices_reason(hazard: str) -> str:
    return (f"the indices may not be the top-k the metadata counts: {hazard}; topk_length would cut rows "
            "short or read past them, so pass a length computed from these indices by hand")
