"""docs/soundness.md `metadata-in-scope`: the clipped-seqlen field's object is bound once, on every path to
the call, in the function that passes it, and is a parameter or a plain read of an attribute no class of the
module serves through code (metadata_at, which asks the other statements about the field it finds)."""
from __future__ import annotations

import ast
from typing import Dict, List, Optional, Set, Tuple

import libcst as cst
from libcst.helpers import get_full_name_for_node
from libcst.metadata import FunctionScope, GlobalScope, ImportAssignment

from topk_migrate.cst.resolve import dotted
from topk_migrate.cst.scopecheck import root_binding

from . import callers, field_aliases, reach
from .graph_replay import _BRANCHING, _a_record, _handed_self, _is_attr_of_self, _self_root_attr
from .indexes import handed_back, rebinds
from .quick import expand
from .replay_paths import ReplayPaths, _keeps_the_call, keeps_exceptions
from .rows import _own_returns, local_defs, unproven_local
from .syntax import (
    _bound_arguments,
    _brief,
    _class_bindings,
    _code,
    _is_name,
    _is_none,
    _own_statement,
    bound_targets,
    constructor_call,
)

_PLAIN_READS = {"isinstance", "getattr", "hasattr", "id", "type", "len", "print", "repr", "str", "vars", "dir"}  # (read; what
# is done through what they give is judged where it is done)


def _reached_name(x: cst.CSTNode, holder: str) -> Optional[str]:
    """The method a read of `self.m` / `super().m` reaches, or the function a call `f(...)` does (not the holder)."""
    if isinstance(x, cst.Attribute) and (_is_name(x.value, "self") or isinstance(x.value, cst.Call) and _is_name(
            x.value.func, "super")) and x.attr.value != holder:
        return x.attr.value
    if isinstance(x, cst.Call) and isinstance(x.func, cst.Name):
        return x.func.value
    return None



class _Rename(cst.CSTTransformer):
    """Variables (not attribute names, not keywords) of `names` replaced by the code given for them; any other
    variable, or one given none, is left and recorded in `missing`."""

    def __init__(self, names: Set[str], texts: Dict[str, Optional[str]]) -> None:
        super().__init__()
        self.names, self.texts, self.missing = names, texts, False

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        return False  # (leave_Attribute renames its object; its own name is no variable)

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.Attribute:
        return updated.with_changes(value=original.value.visit(self))

    def leave_Arg(self, original: cst.Arg, updated: cst.Arg) -> cst.Arg:
        return updated.with_changes(keyword=original.keyword)

    def leave_Name(self, original: cst.Name, updated: cst.BaseExpression) -> cst.BaseExpression:
        if original.value == "self":
            return updated
        text = self.texts.get(original.value) if original.value in self.names else None  # (a helper's own local
        # or a global names no object of the caller's)
        self.missing = self.missing or text is None
        return cst.parse_expression(text) if text is not None else updated


class MetadataInScope:
    """docs/soundness.md `metadata-in-scope` (a mixin of analysis._Analysis)."""

    def metadata_at(self, node: cst.CSTNode) -> Tuple[Optional[str], str, Optional[str]]:
        """(known metadata expression usable at node, how to read it: plain, none_safe or getattr, why none is).

        `metadata-in-scope`: its root must be bound once in the function, on every path to node."""
        why_not = None
        for expr in self.metadata:
            root = expr.split(".")[0]
            b = self.tree.binding(node, root)
            if not b.assignments or not isinstance(b.assignments[0].scope, FunctionScope):
                continue
            why, none = root_binding(self.tree, node, root)
            why = why or self._metadata_source(b.assignments[0], root)
            owner = getattr(b.assignments[0].scope, "node", None)
            target = self.attribute_writes_in(owner).get(expr) if why is None and owner is not None else None
            if target is not None:
                why = f"`{expr}` is assigned at line {self.tree.line(target.target)}, in the function that passes it"
            field_name = expr.rsplit(".", 1)[1]
            if why is None and expr not in self.user_metadata:
                why = self.unclipped_write(field_name) or self.clipped_fields_read(field_name) \
                    or self.replaced_field(field_name) or self.field_aliased(field_name) \
                    or self.replay_replaces(field_name) or self.replay_updates(field_name) \
                    or self.capture_files(field_name) or self.built_outside() or self.kept_in_holder(field_name) \
                    or self.planned_on_every_path()
            if why is None and owner is not None:
                why = self._deferred(owner, node, field_name) or self._two_batches(owner, node) \
                    or self.planned_in_graph(owner, field_name) or self._refreshed(owner, b.assignments[0], field_name) \
                    or self._staged_here(owner, root, field_name)
            if why is None:
                if expr in self.user_metadata:  # the user vouches for the object; None is still handled
                    return expr, "none_safe" if none else "plain", None
                typed = self.typed(b.assignments[0], expr.rsplit(".", 1)[1])
                form = "getattr" if typed is None else "none_safe" if (none or not typed) else "plain"
                return expr, form, None
            why_not = why_not or why
        return None, "plain", why_not

    def _metadata_source(self, a, root: str) -> Optional[str]:
        """Where the metadata object comes from (round J1): a parameter, or a plain read of an attribute (the
        engine's `metadata = self.forward_metadata`) that no class of this module serves by a property or
        another function; a call's result (a cache keyed by batch size hands an earlier batch's object back),
        an item of a table (another layer group's object) or a computed read is not proven this batch's."""
        stmt = self.tree.assignment_statement(a)
        value = getattr(stmt, "value", None)
        if value is None:
            return None  # a parameter: the caller's object (its callers are read by the rows' proof)
        if isinstance(value, cst.Attribute) and isinstance(value.value, cst.Name) and value.value.value == "self" \
                and self._class_held(value.attr.value):
            return (f"`{root}` is read from `self.{value.attr.value}`, which this module also sets on a class (line "
                    f"{self.tree.line(self._class_held(value.attr.value))}): every instance shares it, which batch's "
                    "metadata it holds is not proven")
        if isinstance(value, cst.Attribute) and isinstance(value.value, cst.Name) and value.value.value == "self":
            seeds = {c.name.value for c in self.find(cst.ClassDef)}
            found = self.project().related_holder_writes(value.attr.value, seeds) if seeds else []
            if found:
                return (f"`{root}` is read from `self.{value.attr.value}`, and a related class of another file gives it "
                        f"an object not made there ({found[0].what} at {found[0].where()}): which batch's metadata "
                        "it holds is not proven (round Y); pass topk_length by hand")
        if isinstance(value, cst.Attribute) and isinstance(value.value, cst.Name) and value.value.value == "self" \
                and self.assigned_elsewhere(value.attr.value, own=False):
            return (f"`{root}` is read from `self.{value.attr.value}`, which another file of the project assigns on an "
                    "object it is handed (a class decorator installing a shared descriptor, a runner storing another "
                    "object): which "
                    "batch's metadata it holds is not proven (round T); pass topk_length by hand")
        read = value  # (`self.backend.forward_metadata`, `forward_batch.attn_backend.forward_metadata`)
        while isinstance(value, cst.Attribute):
            if value.attr.value in self._served_names() or "*" in self._served_names():
                return (f"`{root}` is read from `{_code(value).strip()}` (line {self.tree.line(stmt)}), which a "
                        "property or method of this module serves: which batch's metadata it returns is not proven")
            value = value.value
        if isinstance(read, cst.Attribute) and isinstance(read.value, cst.Attribute):  # (another object's holder:
            return (f"`{root}` is read from `{_code(read).strip()}` (line {self.tree.line(stmt)}), another object's "
                    "attribute: what that object's methods give it (a cache, a free list) is not read, so which "  # round Y
                    "batch's metadata it holds is not proven; read it from `self`, or pass topk_length by hand")
        if isinstance(value, cst.Name) and value.value != "self" and read is not value:
            packed = self._packed_here(a, value)
            if packed is not None:
                return (f"`{root}` is read from `{_code(read).strip()}` (line {self.tree.line(stmt)}), an attribute of "
                        f"`{value.value}`, which this module hands that function packed at line {packed} (a record "
                        "carrying the holder): which batch's metadata it carries is not read; read it from `self`, or "
                        "pass topk_length by hand")
        if isinstance(value, cst.Name):
            return None
        return (f"`{root}` is bound at line {self.tree.line(stmt)} to `{_brief(stmt.value, 60)}`, not a plain "
                "read of the metadata the engine stored for this batch (a call's result, an item of a table); "
                "pass topk_length by hand")

    def _packed_here(self, a, name: cst.Name) -> Optional[int]:
        """Where `name` is a parameter of the function reading the metadata off it, and this module calls that
        function (`self.f(...)`) handing it anything but a parameter of its own caller (a record made there, packing
        the holder: round AF's `StepContext(self.forward_metadata, ...)`): the line of that call; else None."""
        fdef = getattr(a.scope, "node", None)
        found = self.tree.binding(name, name.value).assignments
        if not isinstance(fdef, cst.FunctionDef) or not found or not isinstance(getattr(found[0], "node", None), cst.Param):
            return None
        params = [p.name.value for p in (*fdef.params.posonly_params, *fdef.params.params, *fdef.params.kwonly_params)]
        for call in self.find(cst.Call, lambda c: isinstance(c.func, cst.Attribute) and c.func.attr.value == fdef.name.value):
            given = _bound_arguments(call, params[1:] if self.tree.is_method(fdef) else params).get(name.value)
            bound = self.tree.binding(given, given.value).assignments if isinstance(given, cst.Name) else []
            if given is not None and not (bound and all(isinstance(getattr(b, "node", None), cst.Param) for b in bound)):
                return self.tree.line(call)
        return None

    def kept_in_holder(self, field_name: str) -> Optional[str]:
        """Round W: what a method gives a holder the kernel's callers read is made for this batch (a construction, a
        def of the module returning one, a parameter: its caller's, None), or the object whose field the method
        writes in place: in a method that runs between CUDA-graph replays, the very object it updates (not another
        step's record, not the record of a batch size rebound since); elsewhere one it updates on every path (an
        item of an allocation cache, a pop from a free list, `self.holder or Cls(...)` hand back an earlier batch's
        object with its lengths)."""
        def build() -> Optional[str]:
            held = self.held_attributes()
            for lam in self.find(cst.Lambda):  # (a listener `lambda md: setattr(self, "forward_metadata", md)`: what
                for node, target, _ in self._writes_in(lam):  # calls it with which record is not read, round AD)
                    if isinstance(target, cst.Attribute) and target.attr.value in held:
                        return (f"a lambda gives `{_code(target).strip()}` what it is handed (line "
                                f"{self.tree.line(node)}): what calls it, with which batch's metadata, is not read; "
                                "pass topk_length by hand")
            named = next((a for a in sorted(held) if self._spelled_as_string(a, ("getattr", "hasattr", "setattr"))),
                         None)
            if named:
                return (f"a string of the module names the holder `{named}` outside a plain `getattr`/`setattr` (a "
                        "`partial(setattr, self, ...)` listener, a name handed on): what sets it, with which batch's "
                        "metadata, is not read; pass topk_length by hand")
            for fdef in self.find(cst.FunctionDef):
                replay = reach.graph_update(fdef.name.value)
                for node, target, value in self._writes_in(fdef):
                    if isinstance(node, cst.AnnAssign) and node.value is None:
                        continue  # `self.forward_metadata: DSAMetadata`: a declaration (sglang 0.5.16's __init__)
                    init_held = isinstance(target, cst.Attribute) and target.attr.value in held \
                        and self._made_once(fdef)  # (`init_cuda_graph_state`, a helper `__init__` calls: AJ)
                    if init_held and not _none(value) and not self._at_startup(fdef, 0):
                        return (f"`{fdef.name.value}` gives `{_code(target).strip()}` a value at line "
                                f"{self.tree.line(node)}, and neither the start-up nor a planner or graph hook runs it: "
                                "when it runs against the step's planner (after it, for the next batch: round AQ) is "
                                "not read; give the holder only in the planners, or pass topk_length by hand")
                    if init_held and self._a_parameter(value) and self._refreshed_anywhere(target.attr.value, field_name):
                        return (f"`{fdef.name.value}` gives `{_code(target).strip()}` the record it is handed (line "
                                f"{self.tree.line(node)}), which the planners refresh in place: another instance handed "
                                "the same record (a graph runner's one record for every backend) rewrites the lengths "
                                "this one's kernel reads (round AJ); make the record here, or pass topk_length by hand")
                    if init_held and not (self._made_by_call(value) or _none(value) or self._a_parameter(value)):
                        return (f"`{fdef.name.value}` gives `{_code(target).strip()}` `{_brief(value, 60)}` at line "
                                f"{self.tree.line(node)}, a record it neither makes nor is handed (another object's: a parent "
                                "backend's, a micro-batch sibling's), which lives across steps: a plan for one "
                                "rewrites the lengths the other's kernel reads (round AI); make the record in "
                                "`__init__`, or pass topk_length by hand")
                    static = init_held and self._made_by_call(value)  # (a record made there)
                    why = self._static_refreshed(target.attr.value, field_name) if static else None
                    if why:
                        return why
                    if not (isinstance(target, cst.Attribute) and target.attr.value in held) \
                            or self._made_for_batch(value, fdef):
                        continue
                    shared = self._shared_pool(fdef, value)
                    if shared:
                        return (f"{fdef.name.value} gives `{_code(target).strip()}` a record it may take from {shared} "
                                f"(line {self.tree.line(node)}), which every instance shares (a target and a draft "
                                "backend): another's plan rewrites the lengths this one's kernel reads; keep the pool on "
                                "the instance (`self._pool = {}` in `__init__`), or pass topk_length by hand")
                    if self._updated(fdef, value, field_name, replay, target.attr.value):
                        continue
                    what = _brief(value, 60) if value is not None else "?"
                    return (f"{fdef.name.value} gives `{_code(target).strip()}` `{what}` at line {self.tree.line(node)}: "
                            "neither an object made for this batch nor the one whose lengths it updates in place"
                            + (" on every path" if not replay else "") + ", so it may hold an earlier batch's or "
                            "another step's lengths; make a new object, update that one's field in place, or pass "
                            "topk_length by hand")
            return None
        return self.index(f"kept-in-holder:{field_name}", build)

    def _shared_pool(self, fdef: cst.FunctionDef, value: Optional[cst.BaseExpression], depth: int = 0) -> Optional[str]:
        """Where the local the holder is given may be read out of a container not the instance's own (round AG: a
        module's `_RECORD_POOL`, a mutable default `_pool={}`, a class attribute; round AJ: what a function returns;
        round AK: what a method of the class returns, `self._record_for(fb)`): that container, spelled; None where
        each of its values is made here or read off an attribute of self every store gives a new container."""
        if not isinstance(value, cst.Name) or depth > 3:
            return None
        for a in self.tree.binding(value, value.value).assignments:
            v = getattr(self.tree.assignment_statement(a), "value", None)
            while isinstance(v, (cst.Call, cst.Subscript, cst.Attribute)) and not (
                    isinstance(v, cst.Call) and self._made_for_batch(v, fdef)) and not _is_attr_of_self(v):
                if isinstance(v, cst.Call) and isinstance(v.func, cst.Name):
                    return f"`{_brief(v, 40)}`"  # (a function's pool: `static_records(max_bs)[bs]`, AJ)
                if isinstance(v, cst.Call) and self._self_method(v):
                    defs = local_defs(self.tree, v.func)
                    found = next((w for d in defs for r in self.find(cst.Return, None, d) if r.value is not None
                                  for w in [self._returned_pool(d, r.value, depth)] if w), None)
                    if found or not defs:
                        return found or f"`{_brief(v, 40)}`"
                    break
                v = v.func.value if isinstance(v, cst.Call) and isinstance(v.func, cst.Attribute) else \
                    v.value if isinstance(v, (cst.Subscript, cst.Attribute)) else None
            if v is None or isinstance(v, cst.Call) or _is_attr_of_self(v) and self._own_container(v.attr.value):
                continue
            if isinstance(v, cst.Name) and v.value != "self":
                return f"`{v.value}`"
            if _is_attr_of_self(v):
                return f"`self.{v.attr.value}`"
        return None

    def _returned_pool(self, fdef: cst.FunctionDef, value: cst.BaseExpression, depth: int) -> Optional[str]:
        """_shared_pool of what a method returns (a name: its bindings; anything else read as one bound to it)."""
        if isinstance(value, cst.Name):  # (a module's or a class's name: every instance's)
            found = self.tree.binding(value, value.value).assignments
            local = bool(found) and all(isinstance(a.scope, FunctionScope) for a in found)
            return self._shared_pool(fdef, value, depth + 1) if local else f"`{value.value}`"
        if self._made_for_batch(value, fdef):
            return None
        probe = value
        while isinstance(probe, (cst.Call, cst.Subscript, cst.Attribute)) and not _is_attr_of_self(probe):
            if isinstance(probe, cst.Call) and isinstance(probe.func, cst.Name):
                return f"`{_brief(probe, 40)}`"
            probe = probe.func.value if isinstance(probe, cst.Call) and isinstance(probe.func, cst.Attribute) else \
                probe.value if isinstance(probe, (cst.Subscript, cst.Attribute)) else None
        if isinstance(probe, cst.Name) and probe.value != "self":
            return f"`{probe.value}`"
        if _is_attr_of_self(probe) and not self._own_container(probe.attr.value):
            return f"`self.{probe.attr.value}`"
        return None

    def _own_container(self, attr: str) -> bool:
        """Is `self.<attr>` a container each instance makes its own: no class body binds it (a class attribute every
        instance shares), and every store gives it a new one (_fresh_container; not a module's pool, a parameter, a
        function's result, a copy of another's whose items are that one's, nor one of those on a branch: round AJ)?"""
        stores = [t.value if isinstance(t, cst.AnnAssign) else getattr(self.tree.parent.get(t), "value", None)
                  for t in self.targets_named(attr) if not isinstance(t, cst.AnnAssign) or t.value is not None]
        in_body = any(isinstance(t, cst.Name) and t.value == attr for c in self.find(cst.ClassDef)
                      for stmt in c.body.body for t in _class_level_targets(stmt))
        if in_body:
            return False
        if stores:
            return all(v is not None and _fresh_container(v) for v in stores)
        return self.project().base_binds(self.project().checked_file(self.source), attr) is None
        # (no store here: a mixin's class attribute of another file, every instance's, round AO; none at all is read
        # as before, the module narrowed for audit and bump may leave its stores out)

    def _made_once(self, fdef: cst.FunctionDef) -> bool:
        """Does what fdef gives the holder live across steps: fdef runs at start-up, or is neither a planner the
        engine calls each step (`init_forward_metadata*`), a graph's capture or replay hook (graph-replay reads
        those), nor a method one of them calls off self (a fork's `warmup` hook run once: round AL)?"""
        return self._at_startup(fdef, 0) or not self._run_from(fdef, reach.per_step_hook, 0)

    def _run_from(self, fdef: cst.FunctionDef, named, depth: int) -> bool:
        """Is fdef a method whose name `named` accepts, or one such a method calls off self (3 deep)?"""
        if named(fdef.name.value):
            return True
        owners = self.index("self-method-callers", self._self_method_callers).get(fdef.name.value, [])
        return depth < 3 and any(o is not fdef and self._run_from(o, named, depth + 1) for o in owners)

    def _self_method_callers(self) -> Dict[str, List[cst.FunctionDef]]:
        """Each method name -> the defs calling it off self (one walk of the module)."""
        out: Dict[str, List[cst.FunctionDef]] = {}
        for c in self.find(cst.Call, self._self_method):
            owner = next((a for a in self.tree.ancestors(c) if isinstance(a, cst.FunctionDef)), None)
            if owner is not None:
                out.setdefault(c.func.attr.value, []).append(owner)
        return out

    def _at_startup(self, fdef: cst.FunctionDef, depth: int) -> bool:
        """Does fdef run when the backend is made: `__init__`, the engine's `init_cuda_graph_state`, or a method of the
        class one of those calls off self (3 deep)? (A helper start-up calls makes a record that lives across steps,
        whoever else calls it: a cache flush, AK.)"""
        return self._run_from(fdef, lambda name: name in ("__init__", "init_cuda_graph_state"), depth)

    def _refreshed_anywhere(self, attr: str, field_name: str) -> bool:
        """Does any method of the module write `self.<attr>.<field>` in place?"""
        return any(self._object_key(t.value) == f"self.{attr}"
                   for f in self.find(cst.FunctionDef) for t in self._field_targets(f, field_name))

    def _a_parameter(self, value: Optional[cst.BaseExpression]) -> bool:
        """A parameter itself (what the making hands: the callers' rules read that), not an attribute of one."""
        found = self.tree.binding(value, value.value).assignments if isinstance(value, cst.Name) else []
        return bool(found) and all(isinstance(getattr(a, "node", None), cst.Param) for a in found)

    def _made_by_call(self, value: Optional[cst.BaseExpression]) -> bool:
        """A call's result, or a local bound only to one (`md = DSAMetadata(...)`: round AG)."""
        if isinstance(value, cst.Name):
            found = self.tree.binding(value, value.value).assignments
            return bool(found) and all(isinstance(getattr(self.tree.assignment_statement(a), "value", None), cst.Call)
                                       for a in found)
        return isinstance(value, cst.Call)

    def _static_refreshed(self, attr: str, field_name: str) -> Optional[str]:
        """A record the holder gets in `__init__` lives across steps (round AD: a static record built from a warm-up
        batch): each eager planner (`init_forward_metadata`) and each method run between a graph's replays
        (reach.graph_update: round AG, a replay hook moving the page table only, or refreshing the lengths in one mode)
        gives the holder a new one or rewrites its field in place on every run, with no branch or exit before; else
        why not."""
        planners = [f.node for f in self.facts.functions if f.class_name and reach.per_step_hook(f.name)
                    and not reach.graph_builder(f.name)]  # (round AG: a replay hook too; AR: a mode's planner,
        # `init_forward_metadata_draft_extend`, moving the page table only)
        rebound = next((t for p in planners for t in self.targets_named(p.name.value)
                        if isinstance(t.target, cst.Attribute)), None)
        if rebound is not None:  # (`self.init_forward_metadata = self._plan_pages_only` per instance: round AO)
            return (f"line {self.tree.line(rebound)} gives `{_code(rebound.target).strip()}` another value: the planner "
                    "that runs may not be the one read to refresh the record made once; pass topk_length by hand")
        runs = [(p.name.value, p) for p in planners]
        for p in planners:
            for node in self._class_bound_otherwise(p):
                target = self._alias_of_def(node)
                if target is None:  # (`if FAST: init_forward_metadata = _plan_pages_only`, an import: round BH)
                    return (f"line {self.tree.line(node)} binds `{p.name.value}` in the class body otherwise than by "
                            "a def of the class: the planner that runs may not be the one read to refresh the record "
                            "made once; pass topk_length by hand")
                runs.append((p.name.value, target))  # (a def of the class bound to the name under a flag: both may run)
        ahead = self._planner_ahead({p.name.value for p in planners}) or self._planner_inherited()
        if ahead:
            return ahead
        for name, p in runs:
            if any(isinstance(t, cst.Attribute) and t.attr.value == attr for _, t, _ in self._writes_in(p)):
                continue  # (given anew: planned_on_every_path and kept_in_holder read that store)
            if not self._refreshes(p, attr, field_name, 0, eager=not reach.graph_update(name)):
                planners = []
                break
            eager = not reach.graph_update(name)
            loader = self._refresh_handed_other(p, attr, field_name, 0, eager)
            if loader is not None:  # (round BC: `self._load_batch(forward_batch.spec_info.draft_input)`)
                return (f"{name} refreshes `self.{attr}.{field_name}` through `{_brief(loader, 60)}` (line "
                        f"{self.tree.line(loader)}), handed something other than this call's own batch (a draft's "
                        "input, a local): the kernel may read another batch's lengths; hand the helper the planner's "
                        "own parameters, or pass topk_length by hand")
            hidden = self._hidden_why(p, attr, field_name, eager)  # (round BF: a setter, `__setattr__`, a manager's exit)
            if hidden:
                return hidden
            later = self._rewritten_after_refresh(p, attr, field_name, 0, eager)
            if later is not None:  # (round BB: the planner calling itself with the draft's batch, another mode's planner)
                return (f"{name} refreshes `self.{attr}.{field_name}` in place, then `{_brief(later, 60)}` (line "
                        f"{self.tree.line(later)}) may write it again, handed something other than this call's own "
                        "batch (a draft's batch, another mode's): the kernel may read another batch's lengths; make "
                        "the refresh the last write of the field, or pass topk_length by hand")
            named = self._writer_after_why(p, attr, field_name, eager)  # (round BG: a helper object's method, a
            if named:  # bound method handed to a library runner, an item store running a `__setitem__`)
                return named
        return None if planners else (
            f"the start-up (`__init__`, `init_cuda_graph_state`, a hook no planner calls) gives the holder `self.{attr}` a record made once, and an eager planner or a replay hook "
            f"does not rewrite its `{field_name}` in place on every run (a mode or size it skips keeps an earlier "
            "step's lengths); refresh it on every path, or pass topk_length by hand")

    def _alias_of_def(self, node: cst.CSTNode) -> Optional[cst.FunctionDef]:
        """The def of the class a class body's `name = other` binds the name to (`init_forward_metadata = _plan_v2`):
        `other` bound in the class body by that one def only; None for any other binding (a call, an import, a loop)."""
        assign = self.tree.parent.get(self.tree.parent.get(node))
        if not (isinstance(assign, cst.Assign) and len(assign.targets) == 1 and assign.targets[0].target is node
                and isinstance(assign.value, cst.Name)):
            return None
        found = [a.node for a in self.tree.binding(assign.value, assign.value.value).assignments]
        return found[0] if len(found) == 1 and isinstance(found[0], cst.FunctionDef) \
            and self.tree.parent.get(self.tree.parent.get(found[0])) is self._class_around(assign) else None

    def _class_around(self, node: cst.CSTNode) -> Optional[cst.ClassDef]:
        return next((a for a in self.tree.ancestors(node) if isinstance(a, cst.ClassDef)), None)

    def _class_bound_otherwise(self, fdef: cst.FunctionDef) -> List[cst.CSTNode]:
        """The statements of fdef's class body binding its name other than by a def (an assignment, an import, a
        loop's or a `with`'s target, under an `if` too): Python runs what the last binding gives, not fdef."""
        return [a.node for a in self.tree.binding(fdef, fdef.name.value).assignments
                if not isinstance(a.node, cst.FunctionDef)]

    def _planner_ahead(self, names: Set[str]) -> Optional[str]:
        """A class of the module whose first base (left to right, depth first) defining one of the planners `names`
        is another file's, while the module defines it too (`class Draft(FastPlanMixin, Backend)`: the mixin's planner
        is the one Python runs, round AO): why; else None."""
        proj = self.project()
        own = proj.checked_file(self.source)
        for cls in own.class_defs if own is not None else ():
            if any(isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef)) and d.name in names for d in cls.body):
                continue
            definers = [(g, c, {d.name for d in c.body if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef))}
                         & names) for g, c in proj.bases_in_order(own, cls)]
            definers = [x for x in definers if x[2]]
            if definers and definers[0][0].path != own.path and any(g.path == own.path for g, _, _ in definers):
                g, c, defined = definers[0]
                return (f"{cls.name} runs `{sorted(defined)[0]}` of {c.name} at {proj.rel(g.path)}:{c.lineno}, a base "
                        "of another file ahead of this module's planner, which is not read as refreshing the record "
                        "made once; pass topk_length by hand")
        return None

    def field_aliased(self, field_name: str) -> Optional[str]:
        """The field's tensor is no other field's that the module writes in place (round AP): a making handing one
        value to the field and to another keyword (`DSAMetadata(cache_seqlens_int32=lens, dsa_cache_seqlens_int32=
        lens)`), or the field's object stored as another attribute (`md.cache_seqlens_int32 = md.dsa_cache_seqlens_
        int32`), where a write in place of an attribute of that name (`md.cache_seqlens_int32.copy_(raw)`) writes
        the field. Why, else None. (A store read only, `self._lens = md.field`, is fine.) Read once per field."""
        return self.index(f"field-aliased:{field_name}", lambda: self._field_aliased(field_name))

    def _field_aliased(self, field_name: str) -> Optional[str]:
        own = self.project().checked_file(self.source)
        others: dict = {}  # other attribute name -> the line sharing the field's tensor with it
        for node in ast.walk(own.tree) if own is not None else ():
            if isinstance(node, ast.Call):
                held = {reach._unparse(k.value) for k in node.keywords if k.arg == field_name} - {"None"}
                others.update({k.arg: node.lineno for k in node.keywords
                               if k.arg not in (None, field_name) and reach._unparse(k.value) in held})
            elif isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Attribute) \
                    and node.value.attr == field_name:
                others.update({t.attr: node.lineno for t in reach._flatten(
                    node.targets if isinstance(node, ast.Assign) else [node.target]) if isinstance(t, ast.Attribute)})
        for node in ast.walk(own.tree) if others else ():
            target = callers._written_target(own, node)
            while isinstance(target, ast.Subscript):
                target = target.value
            if isinstance(target, ast.Attribute) and target.attr in others:
                return (f"line {others[target.attr]} gives `{target.attr}` the `{field_name}` tensor, and line "
                        f"{node.lineno} writes `{target.attr}` in place: the field is written under that name; give "
                        f"`{field_name}` its own tensor, or pass topk_length by hand")
        # (round BI: a view, a positional slot, a tuple store, `setattr`, `.data`/`set_`, another file, a child)
        return field_aliases.aliased_write(self.project(), own, field_name) if own is not None else None

    def _planner_inherited(self) -> Optional[str]:
        """A class of the module holding the record (defining `__init__` or a replay hook) that defines no eager
        planner, where its first base defining one is another file's (a dense backend's planner moving the page
        table only, round AP): that planner runs between replays and is not read; why, else None."""
        proj = self.project()
        own = proj.checked_file(self.source)
        for cls in own.class_defs if own is not None else ():
            defined = {d.name for d in cls.body if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef))}
            if "init_forward_metadata" in defined or not (defined & {"__init__"} or any(map(reach.graph_update, defined))):
                continue
            definer = next(((g, c) for g, c in proj.bases_in_order(own, cls) if any(
                isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef)) and d.name == "init_forward_metadata"
                for d in c.body)), None)
            if definer is not None and definer[0].path != own.path:
                g, c = definer
                return (f"{cls.name} runs the eager planner `init_forward_metadata` of {c.name} at "
                        f"{proj.rel(g.path)}:{c.lineno}, a base of another file, which is not read as refreshing the "
                        "record made once; define it in the module, or pass topk_length by hand")
        return None

    def _refreshes(self, fdef: cst.FunctionDef, attr: str, field_name: str, depth: int, eager: bool = True) -> bool:
        """Does every run of fdef rewrite `self.<attr>.<field>` in place, itself or through a method of the class it
        calls off self first (`self._refresh(forward_batch)`: one def, nothing may replace it, 3 deep)? An eager
        planner's rewrite is of the whole field (`eager`); a replay hook's may be of a prefix (the rows past it are
        the graph's padding: stated)."""
        return self._refresh_point(fdef, attr, field_name, depth, eager) is not None

    def _refresh_point(self, fdef: cst.FunctionDef, attr: str, field_name: str, depth: int,
                       eager: bool) -> Optional[cst.CSTNode]:
        """_refreshes' first node of fdef by which every run has rewritten the field: the write, or the call of the
        helper refreshing it; None where there is none."""
        found: List[cst.CSTNode] = [t for t in self._field_targets(fdef, field_name, "whole" if eager else "prefix")
                                    if self._object_key(t.value) == f"self.{attr}" and self._unconditional(fdef, t)]
        found += [c for c in (self.find(cst.Call, self._self_method, fdef) if depth < 3 else [])
                  if self._unconditional(fdef, c) and len(local_defs(self.tree, c.func)) == 1
                  and not unproven_local(self.tree, c.func, self.method_rival)
                  and self._refreshes(local_defs(self.tree, c.func)[0], attr, field_name, depth + 1, eager)]
        return min(found, key=lambda n: self.tree.order[id(n)], default=None)

    def _rewritten_after_refresh(self, fdef: cst.FunctionDef, attr: str, field_name: str, depth: int,
                                 eager: bool) -> Optional[cst.Call]:
        """Round BB: a call after fdef's refresh of `self.<attr>.<field>` (or after its refreshing helper's, inside it)
        that may write the field again for another batch (a planner calling itself with the draft's batch, or another
        mode's planner): the refresh must be the last write of the field on every path."""
        at = self._refresh_point(fdef, attr, field_name, depth, eager)
        if at is None:
            return None
        found = self._other_write_after(fdef, at, field_name) \
            or self._other_batch_write(fdef, self._calls_after(fdef, at), attr, field_name, 0)
        if found is None and isinstance(at, cst.Call):
            return self._rewritten_after_refresh(local_defs(self.tree, at.func)[0], attr, field_name, depth + 1, eager)
        return found

    def _refresh_handed_other(self, fdef: cst.FunctionDef, attr: str, field_name: str, depth: int,
                              eager: bool) -> Optional[cst.Call]:
        """Round BC: the helper call refreshing the field (_refresh_point), or one it makes in turn, handed anything
        but its caller's own parameters (`self._load_batch(forward_batch.spec_info.draft_input)`); else None."""
        at = self._refresh_point(fdef, attr, field_name, depth, eager)
        if not isinstance(at, cst.Call):
            return None
        if not self._handed_own(fdef, at):
            return at
        return self._refresh_handed_other(local_defs(self.tree, at.func)[0], attr, field_name, depth + 1, eager)

    def _other_write_after(self, fdef: cst.FunctionDef, at: cst.CSTNode, field_name: str) -> Optional[cst.CSTNode]:
        """Round BC: fdef's own in-place write of the field after its refresh `at` reading a parameter or local the
        refresh does not (a draft's batch staged into the record after the target's): that statement; else None."""
        order, read = self.tree.order, {n.value for n in self._names_read_at(at)}
        return next((self._statement_around(t) for t in self._field_targets(fdef, field_name)
                     if order[id(t)] > order[id(at)] and _own_statement(self.tree, t, fdef)
                     and {n.value for n in self._names_read_at(t)} - read), None)

    def _statement_around(self, node: cst.CSTNode) -> cst.CSTNode:
        """The simple statement node sits in (itself where none)."""
        return next((a for a in self.tree.ancestors(node) if isinstance(a, cst.BaseSmallStatement)), node)

    def _names_read_at(self, node: cst.CSTNode) -> List[cst.Name]:
        """The parameters and locals (but `self`) the simple statement holding node reads, outside node where it is
        the written `X.field` (`md` of `md.field.copy_(lens)` names the record, not what it is given)."""
        stmt = self._statement_around(node)
        inside = {id(n) for n in self.find(cst.Name, None, node)} if isinstance(node, cst.Attribute) else set()
        names = [n for n in self.find(cst.Name, None, stmt) if n.value != "self" and id(n) not in inside and not (
            isinstance(self.tree.parent.get(n), cst.Attribute) and self.tree.parent[n].attr is n) and not (
            isinstance(self.tree.parent.get(n), cst.Arg) and self.tree.parent[n].keyword is n)]
        return [n for n in names if any(isinstance(a.scope, FunctionScope) for a in self.tree.binding(n, n.value).assignments)]

    def _runs_on_self(self, c: cst.Call) -> bool:
        """`self.m(...)`, `super().m(...)`, `Cls.m(self, ...)`, `f(self, ...)`: a call that may run code on self; and
        (round BC) one not spelled on self that may too (_runs_hidden)."""
        handed = bool(c.args) and isinstance(c.args[0].value, cst.Name) and c.args[0].value.value == "self"
        return self._self_method(c) or handed or isinstance(c.func, cst.Attribute) and isinstance(c.func.value, cst.Call) \
            and _is_name(c.func.value.func, "super") or self._runs_hidden(c)

    def _runs_hidden(self, c: cst.Call) -> bool:
        """Round BC: a call not spelled on self that may run code writing the record: a nested def (a closure over
        it: `load(draft)`), a local or parameter holding a callable (`stage = self._load_batch; stage(b)`), a function
        of the module, or a callee reaching self otherwise (`getattr(self, "_load")(b)`, `self._loaders[0](b)`). An
        import, a builtin or a class is none."""
        func = c.func
        if isinstance(func, cst.Name):
            return any(isinstance(getattr(a, "node", None), cst.FunctionDef) or isinstance(a.scope, FunctionScope)
                       and not isinstance(a, ImportAssignment) for a in self.tree.binding(func, func.value).assignments)
        return not isinstance(func, cst.Attribute) and any(_is_name(n, "self") for n in self.find(cst.Name, None, func))

    def _other_batch_write(self, fdef: cst.FunctionDef, calls: List[cst.Call], attr: str, field_name: str,
                           depth: int) -> Optional[cst.Call]:
        """The first of fdef's calls that may write the field or the holder (_may_write_field) handed anything but
        fdef's own parameters unchanged, or so handed reaching a def that makes such a call in turn (3 deep; a def
        not read, or deeper, may)."""
        for c in calls:
            defs = local_defs(self.tree, c.func)
            if not self._may_write_field(c, attr, field_name, 0):
                continue
            if not self._handed_own(fdef, c) or depth >= 3 or not defs or unproven_local(self.tree, c.func, self.method_rival):
                return c
            if any(self._writes_from_local(d, field_name) for d in defs):
                return c  # (round BC: a closure over the planner's `draft`; a helper staging `fb.draft`'s lengths)
            if any(self._other_batch_write(d, self.find(cst.Call, self._runs_on_self, d), attr, field_name, depth + 1)
                   or self._hidden_write(d, None, attr, field_name, depth + 1)  # (round BF: a store running a setter)
                   for d in defs if d is not fdef):
                return c
        return None

    def _may_write_field(self, c: cst.Call, attr: str, field_name: str, depth: int) -> bool:
        """May the call write `<x>.<field>` or bind `<x>.<attr>`: a def it reaches does, or a call of one on self does
        (3 deep); one whose def the module does not hold may (default-deny)."""
        defs = local_defs(self.tree, c.func)
        return not defs or depth >= 3 or any(
            self._writes_holder_anywhere(d, attr, field_name) is not None or self._field_targets(d, field_name)
            or self._hidden_may_write(d, attr, field_name, depth + 1)  # (round BF)
            or any(self._may_write_field(x, attr, field_name, depth + 1) for x in self.find(cst.Call, self._runs_on_self, d)
                   if x is not c) for d in defs)

    def _writes_from_local(self, d: cst.FunctionDef, field_name: str) -> bool:
        """Round BC: does d write the field in place from a local (`draft = fb.draft_batch`, or one a closure reads
        off the def around it), not only from parameters (its own, or a closure's enclosing def's) and self, as
        _handed_own asks of calls?"""
        return any(_own_statement(self.tree, t, d) and not all(self._a_parameter(n) for n in self._names_read_at(t))
                   for t in self._field_targets(d, field_name))

    def _handed_own(self, fdef: cst.FunctionDef, c: cst.Call) -> bool:
        """Is every argument of the call `self` or a parameter of fdef never bound again (this call's own batch)?"""
        return all(not a.star and isinstance(a.value, cst.Name) and (a.value.value == "self" or self._a_parameter(a.value))
                   and self._in(a.value, fdef) for a in c.args)

    def _in(self, name: cst.Name, fdef: cst.FunctionDef) -> bool:
        """Is the name's binding fdef's own (a parameter of fdef, not of an enclosing def)?"""
        found = self.tree.binding(name, name.value).assignments
        return name.value == "self" or all(getattr(a.scope, "node", None) is fdef for a in found)

    def _refresh_points(self, fdef: cst.FunctionDef, attr: str, field_name: str, eager: bool):
        """(def, refresh) for the refresh in fdef and, where it is a call of a local def, the refresh inside it, four
        deep: where a later statement may write the field again."""
        for depth in range(4):
            at = self._refresh_point(fdef, attr, field_name, depth, eager)
            if at is None:
                return
            yield fdef, at
            if not isinstance(at, cst.Call):
                return
            fdef = local_defs(self.tree, at.func)[0]

    def planned_on_every_path(self) -> Optional[str]:
        """Round AB: a method that gives the holder this batch's metadata (the eager planner, outside the graphs'
        capture and replay, which graph-replay reads) gives it on every path that returns: one that returns early
        (`if forward_batch is self._planned_for: return`) or falls through a mode chain leaves the last step's."""
        def build() -> Optional[str]:
            held = self.held_attributes()
            defs = self.find(cst.FunctionDef)
            givers = {attr: self._givers(defs, attr) for attr in held}
            for fdef in defs:
                name = fdef.name.value
                if reach.graph_update(name) or "capture" in name or name == "__init__":
                    continue  # (a builder is held to it too: an eager `_build_...` memo returning early, round AC)
                silent = name == "init_forward_metadata" and self._family_gives(fdef, held) and not any(
                    self._gives(fdef, a) or self._giving_calls(fdef, givers[a], a) or self._writes_through(fdef, a)
                    for a in held)  # (a record refreshed in place: _static_refreshed's)
                if silent:
                    return (f"{name} gives the holder no metadata by any call read (a table of per-mode planners, a "
                            "helper a subclass overrides, a base of another file): an eager step may keep an earlier "
                            "step's lengths; give it in the planner, or pass topk_length by hand")
                for attr in sorted(held):  # (each holder: per-mode holders the planner gives by one test and the
                    stores = self._gives(fdef, attr) | self._giving_calls(fdef, givers[attr], attr)  # dispatch reads by
                    # another, AD; or each given by a method of its own the planner calls, a base's: AF)
                    if stores and not ReplayPaths(self.tree, fdef, _one_of(stores)).covers():
                        return (f"{name} gives the holder `self.{attr}` this batch's metadata on some paths only (an early "
                                "return, a mode chain it falls through, another holder per mode): the kernel may read an "
                                "earlier step's lengths; give it on every path, or pass topk_length by hand")
            return None
        return self.index("planned-on-every-path", build)

    def _givers(self, defs: List[cst.FunctionDef], attr: str) -> Set[str]:
        """The methods giving the holder: storing it, or calling one that does (`_plan` calling `_set_plan`: round
        AG), to a fixed point."""
        found = {f.name.value for f in defs if self._gives(f, attr)}
        while True:
            more = {f.name.value for f in defs if f.name.value not in found and self._giving_calls(f, found)}
            if not more:
                return found
            found |= more

    def _giving_calls(self, fdef: cst.FunctionDef, givers: Set[str], attr: Optional[str] = None) -> Set[int]:
        """fdef's calls of another method of self giving the holder (`self._plan_decode(fb)`; with `attr`, each def
        of its name in the module does), or of a base's (`super().init_forward_metadata(fb)`, a def of the module)."""
        def giving(c: cst.Call) -> bool:
            if not isinstance(c.func, cst.Attribute) or c.func.attr.value not in givers:
                return False
            if _code(c.func.value).strip() == "super()":
                return not self._super_elsewhere(fdef, c.func.attr.value)
            if attr is not None and _is_name(c.func.value, "self") and any(  # (each def of the name: a subclass's
                    not (self._gives(d, attr) or self._giving_calls(d, givers)) for d in self.find(  # override of
                        cst.FunctionDef, lambda d: d.name.value == c.func.attr.value)):  # `_plan` runs for its
                return False  # instances, round AQ)
            return _handed_self(c) or _is_name(c.func.value, "self") \
                and c.func.attr.value != fdef.name.value  # (`Base.init_forward_metadata(self, fb)`: round AM)
        return {id(c) for c in self.find(cst.Call, giving, fdef)}

    def _writes_through(self, fdef: cst.FunctionDef, attr: str) -> bool:
        """Does fdef write into the holder's record in place (`self.<attr>.f.copy_(...)`, `self.<attr>.f[:] = v`,
        `self.<attr>.f = v`), itself or through a method of self it calls (a refresh helper)?"""
        prefix = f"self.{attr}."
        inplace = self.find(cst.Call, lambda c: isinstance(c.func, cst.Attribute) and c.func.attr.value.endswith("_")
                            and _code(c.func.value).strip().startswith(prefix), fdef)
        stored = [t for _, t, _ in self._writes_in(fdef) if _code(t).strip().startswith(prefix)]
        helpers = [local_defs(self.tree, c.func) for c in self.find(cst.Call, self._self_method, fdef)]
        return bool(inplace or stored) or any(len(d) == 1 and d[0] is not fdef and any(
            isinstance(c.func, cst.Attribute) and c.func.attr.value.endswith("_")
            and _code(c.func.value).strip().startswith(prefix) for c in self.find(cst.Call, None, d[0])) for d in helpers)

    def _family_gives(self, fdef: cst.FunctionDef, held: Set[str]) -> bool:
        """Does a method of fdef's class, or of a class of the module it derives from or that derives from it, store
        a holder on self (the planner's class is one the holder belongs to: round AQ)?"""
        classes = {c.name.value: c for c in self.find(cst.ClassDef)}
        cls = next((u for u in self.tree.ancestors(fdef) if isinstance(u, cst.ClassDef)), None)
        if cls is None:
            return False
        bases = lambda c: {_code(b.value).strip() for b in c.bases}  # noqa: E731
        family, grown = {cls.name.value}, True
        while grown:
            more = {n for n, c in classes.items() if n not in family and (bases(c) & family or any(
                n in bases(classes[m]) for m in family if m in classes))}
            family |= more
            grown = bool(more)
        return any(self._gives(d, a) for n in family for d in self.find(cst.FunctionDef, None, classes[n]) for a in held
                   if d.name.value != "__init__")  # (a record made once, refreshed in place: _static_refreshed's)

    def _super_elsewhere(self, fdef: cst.FunctionDef, name: str) -> bool:
        """Does `super().<name>` in fdef run a def of another file: the first base after fdef's class, in Python's
        lookup order, that defines it (a base moving the page table only, round AQ)?"""
        cls = next((u for u in self.tree.ancestors(fdef) if isinstance(u, cst.ClassDef)), None)
        proj = self.project()
        own = proj.checked_file(self.source)
        node = own.classes.get(cls.name.value) if cls is not None and own is not None else None
        if node is None:
            return False
        definer = next(((g, c) for g, c in proj.bases_in_order(own, node) if c is not node and any(
            isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef)) and d.name == name for d in c.body)), None)
        return definer is not None and definer[0].path != own.path

    def _gives(self, fdef: cst.FunctionDef, attr: str) -> Set[int]:
        """The statements of fdef storing `self.<attr>` (a declaration aside)."""
        return {id(node) for node, target, _ in self._writes_in(fdef)
                if isinstance(target, cst.Attribute) and _is_attr_of_self(target) and target.attr.value == attr
                and not (isinstance(node, cst.AnnAssign) and node.value is None)}

    def _updated(self, fdef: cst.FunctionDef, value: Optional[cst.BaseExpression], field_name: str, replay: bool,
                 attr: str = "") -> bool:
        """Does fdef write `field_name` in place on the object `value` names? A replay hook that writes it on no
        object is left to graph-replay's checks; one that does must write this object, with no exit before the
        write that leaves the holder as it is (round W: `if not self.paged_indexer: return`); elsewhere the write
        must be on every path through fdef; and no call after it may write the field again for another batch
        (_other_batch_write, round BB: a replay hook replaying the draft's batch into the same record)."""
        written = [(t.value, t) for t in self._field_targets(fdef, field_name, "prefix")] + [
            (c.func.value, c) for c in self.find(cst.Call, lambda c: isinstance(c.func, cst.Attribute)
                                                 and c.func.attr.value == "copy_" and _a_record(c.func.value), fdef)
            if self._copies_fields("copy_", field_name) and all(  # (from a record made for this batch: a staged
                i < len(c.args) and self._made_for_batch(c.args[i].value, fdef)  # plan, `self._staged`, is another
                for i in self._copied_from("copy_"))]  # batch's, round AD)
        if replay and not written:  # (through a helper: the record it writes, its arguments read as its parameters)
            keys = self._helper_written_keys(fdef, field_name, 0)
            return not keys or value is not None and self._given_key(value) in keys
        return value is not None and any(
            self._same_object(fdef, value, obj, at) and (self._no_bare_exit(fdef, at) if replay else self._unconditional(fdef, at))
            and self._other_batch_write(fdef, self._calls_after(fdef, at), attr, field_name, 0) is None  # (round BB)
            and self._hidden_write(fdef, at, attr, field_name, 0) is None  # (round BF: a setter run by a store)
            for obj, at in written)

    def _calls_after(self, fdef: cst.FunctionDef, at: cst.CSTNode) -> List[cst.Call]:
        """fdef's calls that may run code on self (_runs_on_self, a callable not spelled on self too) after `at`."""
        return [c for c in self.find(cst.Call, self._runs_on_self, fdef) if self.tree.order[id(c)] > self.tree.order[id(at)]]

    def _helper_written_keys(self, fdef: cst.FunctionDef, field_name: str, depth: int) -> Set[Optional[str]]:
        """The records whose `field_name` the methods fdef calls off self write in place (3 deep), each spelled as
        fdef would (the helper's parameters read as the call's arguments: round AL, a replay hook refreshing
        `self.graph_metadata[forward_batch.num_tokens]` and publishing `self.graph_metadata[bs]`); None for one no
        spelling names (a call it cannot read)."""
        out: Set[Optional[str]] = set()
        for call in self.find(cst.Call, self._self_method, fdef) if depth < 3 else []:
            defs = local_defs(self.tree, call.func)
            if len(defs) != 1 or defs[0] is fdef:
                continue
            inner = {self._object_key(t.value) for t in self._field_targets(defs[0], field_name, "prefix")}
            inner |= self._helper_written_keys(defs[0], field_name, depth + 1)
            if inner and unproven_local(self.tree, call.func, self.method_rival):
                out.add(None)
            out |= {self._spelled_in_caller(k, call, defs[0]) for k in inner}
        return out

    def _spelled_in_caller(self, key: Optional[str], call: cst.Call, helper: cst.FunctionDef) -> Optional[str]:
        """A helper's object key spelled in its caller's terms: each parameter the key names replaced by the object
        key of the argument the call binds it to; None where one is unbound or unkeyed."""
        if key is None:
            return None
        params = [p.name.value for p in (*helper.params.posonly_params, *helper.params.params,
                                         *helper.params.kwonly_params)]
        bound = _bound_arguments(call, params[1:] if self.tree.is_method(helper) else params)
        args = {p: (self._object_key(v) if v is not None else None) for p, v in bound.items()}
        try:
            rename = _Rename(set(params), args)
            spelled = _code(cst.parse_expression(key).visit(rename)).strip()
        except (cst.ParserSyntaxError, TypeError):
            return None
        return None if rename.missing else spelled

    def _given_key(self, value: cst.BaseExpression) -> Optional[str]:
        """What the holder is given, spelled as a key: an accessor of the module's (`self._graph_record(bs)`, it only
        asserts and returns a table's item) read as the item it returns."""
        if isinstance(value, cst.Call) and self._self_method(value) and self._accessor(value):
            helper = local_defs(self.tree, value.func)[0]
            returned = [r.value for r in self.find(cst.Return, None, helper) if r.value is not None]
            keys = {self._spelled_in_caller(self._object_key(r), value, helper) for r in returned}
            return keys.pop() if len(keys) == 1 else None
        return self._object_key(value)

    def _same_object(self, fdef: cst.FunctionDef, given: cst.BaseExpression, obj: cst.BaseExpression,
                     at: cst.CSTNode) -> bool:
        """Do `given` (what the holder is given) and `obj` (what is written at `at`) name one object: one local not
        bound again between the two, or the same text (a local bound once read as its value) over names fdef binds
        once (`bs` rebound to the padded size names another record)."""
        if isinstance(given, cst.Name) and isinstance(obj, cst.Name) and given.value == obj.value != "self":
            order = self.tree.order
            if id(given) not in order or id(at) not in order:
                return False
            low, high = sorted((order[id(given)], order[id(at)]))
            return not any(low < self.tree.binds_after_value(a) <= high
                           for a in self.tree.binding(given, given.value).assignments)
        key = self._object_key(given)
        if key is None or key != self._object_key(obj) or self._container_moved(fdef, given, at) \
                or self._container_moved(fdef, obj, given):
            return False
        if (self._keyed_by_state(given) or self._keyed_by_state(obj)) and self._other_statement_between(fdef, given, at, key):
            return False
        attrs = self._self_reads_through({a.attr.value for a in [given, *self.find(cst.Attribute, None, given)]
                                          if _is_attr_of_self(a)})
        return not (attrs and id(given) in self.tree.order and id(at) in self.tree.order
                    and (self._rebinds_between(fdef, given, at, attrs) or self._swapped(given, attrs)))

    def _swapped(self, given: cst.BaseExpression, attrs: Set[str]) -> bool:
        """Does the assignment `given` is read in bind `self.<attr>` for one of attrs too (`self.md, self._spare =
        self._spare, self.md`): its targets bind after the value is read, so the name then holds another object
        (round BB: a double buffer refreshing the retired record)?"""
        stmt = next((a for a in self.tree.ancestors(given) if isinstance(a, (cst.Assign, cst.AugAssign, cst.AnnAssign))), None)
        targets = [t.target for t in stmt.targets] if isinstance(stmt, cst.Assign) else [stmt.target] if stmt else []
        return any(_is_attr_of_self(a) and a.attr.value in attrs for t in targets
                   for a in [t, *self.find(cst.Attribute, None, t)])

    def _self_reads_through(self, attrs: Set[str], depth: int = 0) -> Set[str]:
        """attrs, and the attributes of self read by each method or property of the module among them (3 deep): a
        key `self.graph_metadata[self.graph_key, bs]` whose property reads `self._mode` names another record once
        `_mode` is bound again (round AM)."""
        defs = [f.node for a in sorted(attrs) for f in self.functions_named(a) if f.class_name] if depth < 3 else []
        more = {x.attr.value for d in defs for x in self.find(cst.Attribute, _is_attr_of_self, d)} - attrs
        return attrs | (self._self_reads_through(attrs | more, depth + 1) if more else set())

    def _rebinds_between(self, fdef: cst.FunctionDef, one: cst.CSTNode, other: cst.CSTNode, attrs: Set[str],
                         depth: int = 0) -> bool:
        """Between the two nodes of fdef, may `self.<attr>` for one of attrs be bound again: a store there, or a
        call of a method of self that stores it (3 deep; one the module does not define may) (round AL: a helper
        swapping the staging and live records, `_enter_mode()` moving the key's mode, between refresh and publish)?"""
        order = self.tree.order
        low, high = sorted((order[id(one)], order[id(other)]))
        if any(low < order.get(id(node), -1) <= high and _is_attr_of_self(t) and t.attr.value in attrs
               for node, t, _ in self._writes_in(fdef)):
            return True
        return any(low < order.get(id(c), -1) < high and self._stores_self(c, attrs, depth)
                   for c in self.find(cst.Call, self._self_method, fdef))

    def _stores_self(self, call: cst.Call, attrs: Set[str], depth: int) -> bool:
        defs = local_defs(self.tree, call.func)
        return not defs or depth >= 3 or any(
            any(_is_attr_of_self(t) and t.attr.value in attrs for _, t, _ in self._writes_in(d))
            or any(self._stores_self(c, attrs, depth + 1) for c in self.find(cst.Call, self._self_method, d))
            for d in defs)

    def _keyed_by_state(self, e: cst.BaseExpression) -> bool:
        """Round BE: is the record an item chosen by a key read off state (`self._records[self._slot]`,
        `self.graphs[(self._step, bs)]`, a module's `_SLOT[0]`; through a local bound to it), which anything between
        the refresh and the publish may move (`self._slot ^= 1`, `self._records.reverse()`, a setter, a helper handed
        self)? A key of parameters and constants alone (`self.decode_cuda_graph_metadata[bs]`) is not."""
        e = self._local_value(e)
        subscripts = [e] if isinstance(e, cst.Subscript) else []
        return any(isinstance(el.slice, cst.Index) and not self._plain_key(el.slice.value)
                   for sub in subscripts + self.find(cst.Subscript, None, e) for el in sub.slice)

    def _container_moved(self, fdef: cst.FunctionDef, e: cst.BaseExpression, other: cst.CSTNode) -> bool:
        """Round BE: between e and other in fdef, a method called on a container e takes an item of
        (`self._records.reverse()`, `.rotate(1)`, `.insert(0, md)`): the same key may then name another record."""
        order = self.tree.order
        if id(e) not in order or id(other) not in order:
            return True
        low, high = sorted((order[id(e)], order[id(other)]))
        containers = {_code(sub.value).strip() for sub in [e] + self.find(cst.Subscript, None, e)
                      if isinstance(sub, cst.Subscript)}
        return bool(containers) and any(
            low < order[id(c)] < high and isinstance(c.func, cst.Attribute) and _code(c.func.value).strip() in containers
            for c in self.find(cst.Call, None, fdef) if id(c) in order)

    def _other_statement_between(self, fdef: cst.FunctionDef, given: cst.BaseExpression, at: cst.CSTNode,
                                 key: str) -> bool:
        """Round BE: between the refresh and the publish (from where a local published was bound), a statement of
        fdef not naming the record by its key: it may move a key read off state (`self._slot ^= 1`, `advance()`)."""
        order = self.tree.order
        marks = [order[id(n)] for n in (given, at) if id(n) in order]
        if isinstance(given, cst.Name):
            marks += [self.tree.binds_after_value(a) for a in self.tree.binding(given, given.value).assignments]
        low, high = min(marks), max(marks)
        return any(low < order[id(st)] < high and key not in _code(st) and _own_statement(self.tree, st, fdef)
                   for st in self.find((cst.Expr, cst.Assign, cst.AugAssign, cst.AnnAssign), None, fdef) if id(st) in order)

    def _plain_key(self, key: cst.BaseExpression) -> bool:
        """A constant, a parameter, or a tuple of them."""
        if isinstance(key, cst.Tuple):
            return all(self._plain_key(el.value) for el in key.elements)
        return isinstance(key, (cst.BaseNumber, cst.BaseString)) or isinstance(key, cst.Name) and self._a_parameter(key)

    def _local_value(self, e: cst.BaseExpression) -> cst.BaseExpression:
        """A local (not self) bound once, to anything but another name, stands for its value; anything else for itself."""
        if isinstance(e, cst.Name) and e.value != "self":
            values = self.tree.assigned_values(e, e.value)
            if len(values) == 1 and values[0] is not None and not isinstance(values[0], cst.Name):
                return values[0]
        return e

    def _object_key(self, e: cst.BaseExpression) -> Optional[str]:
        """The text naming one object: a local bound once stands for its value; every name in it must be bound once
        (a parameter, one assignment) or be `self`, else None."""
        e = self._local_value(e)
        if id(e) not in self.tree.order:
            return None  # (a node _writes_in made: `self.T.update(...)`'s item)
        for name in self.find(cst.Name, None, e) if not isinstance(e, cst.Name) else [e]:
            if name.value != "self" and len(self.tree.binding(name, name.value).assignments) > 1:
                return None
        return _code(e).strip()

    def _unconditional(self, fdef: cst.FunctionDef, at: cst.CSTNode) -> bool:
        """Does every run of fdef reach `at`: no `if`, loop, `try` or nested def around it, no exit before it?"""
        for up in self.tree.ancestors(at):
            if up is fdef:
                break
            if isinstance(up, cst.With) and up.asynchronous is None and all(
                    keeps_exceptions(self.tree, i.item) for i in up.items):
                continue  # (`with torch.no_grad():` runs its block, and lets a failure in it out: round BH)
            if isinstance(up, _BRANCHING):  # (a `try` body: a failure before `at` that a handler swallows skips it,
                return False  # round Y; a `with` whose manager may suppress it, round AC)
        order = self.tree.order
        return not _deferred_body(fdef) and not any(
            order[id(x)] < order[id(at)] and _own_statement(self.tree, x, fdef)
            for x in self.find((cst.Return, cst.Raise), None, fdef))

    def _no_bare_exit(self, fdef: cst.FunctionDef, at: cst.CSTNode) -> bool:
        """No `return` before `at` in fdef but one whose block first gives the holder another object (sglang 0.5.16:
        `if bs not in self.decode_cuda_graph_metadata: self._build_forward_metadata_cuda_graph(...); return`)."""
        order, held = self.tree.order, self.held_attributes()
        for exit_ in self.find(cst.Return, None, fdef):
            if order[id(exit_)] >= order[id(at)]:
                continue
            block = next((b for b in self.tree.ancestors(exit_) if isinstance(b, cst.IndentedBlock)), fdef)
            rebinds = any(isinstance(t, cst.Attribute) and t.attr.value in held
                          for f in [fdef, *self._self_methods_called(block)] for _, t, _ in self._writes_in(f)
                          if f is not fdef or any(b is block for b in self.tree.ancestors(t)))
            if not rebinds:
                return False
        return True

    def _self_methods_called(self, block: cst.CSTNode) -> List[cst.FunctionDef]:
        """The module's methods of the names `self.m(...)` calls in block."""
        names = {c.func.attr.value for c in self.find(cst.Call, lambda c: isinstance(c.func, cst.Attribute)
                                                      and _is_name(c.func.value, "self"), block)}
        return [f.node for n in sorted(names) for f in self.functions_named(n) if f.class_name]

    def _made_for_batch(self, value: Optional[cst.BaseExpression], fdef: cst.FunctionDef, env: Optional[dict] = None,
                        seen: Optional[set] = None) -> bool:
        """Is `value`, read in fdef, an object made by this call: None, a parameter of the method giving the holder
        (its caller's), a class's construction (a capitalised callee), `dataclasses.replace` of one, a def of the
        module or a project file's function each of whose returns is such (its parameters read as the call's
        arguments: `env`; sglang-kt hands its metadata through kpool_plan's functions), or a local bound only to
        such (one met again while its bindings are read is decided by the others, `seen`)?"""
        seen = set() if seen is None else seen
        if value is None or len(seen) > 12:
            return False
        if isinstance(value, cst.Name):
            return value.value == "None" or self._made_local(value, fdef, env, seen)
        if isinstance(value, (cst.Attribute, cst.Subscript)) and _self_root_attr(value):
            # `self.T[bs] = Cls(...); self.forward_metadata = self.T[bs]` (a capture filing what it made)
            order, key = self.tree.order, self._object_key(value)
            if ("attribute", key) in seen:
                return False  # (a swap, `self.a, self.b = self.b, self.a`: met again while read, not made here)
            seen.add(("attribute", key))
            before = [(n, v) for n, t, v in self._writes_in(fdef) if key is not None and self._object_key(t) == key
                      and order[id(n)] < order[id(value)]]
            return len(before) == 1 and self._unconditional(fdef, before[0][0]) \
                and self._made_for_batch(before[0][1], fdef, env, seen)
        if isinstance(value, cst.Attribute):  # an attribute of an object is what was stored on it, not made by this
            return self._driver_read(value, fdef) and not self.project().attribute_stores(value.attr.value) \
                and self._made_for_batch(value.value, fdef, env, seen)  # call: off a new object (`Plan(self, fb).
            # metadata`, a builder's `PlanResult(metadata=cached)`: rounds Z, AQ), what its making was handed; off the
            # caller's batch in the backend's code (`forward_batch.spec_info.dsa_plan`), a record another step left
            # there (the draft's plan, by a keyword of a making: AL, AR); but a module-level driver's parameter's
            # (`inp.metadata`: the module's harness-like drivers hand the engine's records, stated)
        if not isinstance(value, cst.Call):
            return False
        name = (dotted(value.func) or "").rsplit(".", 1)[-1]
        if name[:1].isupper():  # (round Y: not a namespace of another object's `**vars(plan)`, a class serving its
            if isinstance(value.func, cst.Name) and not self._bound_at_module_level(value.func):
                return False  # (a local or a parameter spelled like a class may hold a pool's maker: round AV)
            return not any(a.star for a in value.args) and not self._serves_any(name) \
                and not self._recycled(dotted(value.func) or name)  # reads by __getattr__; a base's `__new__`
            # handing back a live one: AD)
        if name == "replace" and value.args:  # dataclasses.replace(md, ...): a new object beside this batch's own
            if expand(self.facts.imports, dotted(value.func) or "") != "dataclasses.replace" or value.args[0].keyword:
                return False  # (a record's own `replace` method keeps what it likes: round AD)
            return self._made_for_batch(value.args[0].value, fdef, env, seen)
        if isinstance(value.func, cst.Attribute) and not _is_name(value.func.value, "self"):
            return False  # (`self._records.get(bs)`, `self._free.pop()`, `copy.copy(md)`)
        defs = [f.node for f in self.functions_named(name)]
        if self.targets_named(name) or isinstance(value.func, cst.Name) and not all(
                isinstance(getattr(a, "node", None), (cst.FunctionDef, cst.ImportFrom))
                for a in self.tree.binding(value.func, name).assignments):
            return False  # a builder rebound (`self._build = reuse(self._build)`, `build = cached(build)`: round Y)
        if not defs and isinstance(value.func, cst.Name):
            return self._made_by_import(value, fdef, env, seen)
        out = False
        for d in defs:
            if not all(map(_keeps_the_call, d.decorators)):
                return False  # (`@functools.lru_cache` hands back what an earlier call with equal arguments made: round X)
            params = [p.name.value for p in (*d.params.posonly_params, *d.params.params, *d.params.kwonly_params)]
            method = isinstance(value.func, cst.Attribute) and self.tree.is_method(d)
            inner = {p: (a, fdef, env) for p, a in _bound_arguments(value, params[1:] if method else params).items()}
            returns = [r.value for r in self.find(cst.Return, None, d)]
            if not returns or not all(self._made_for_batch(r, d, inner, seen) for r in returns):
                return False
            out = True
        return out

    def _driver_read(self, value: cst.Attribute, fdef: cst.FunctionDef) -> bool:
        """Is `value` read straight off a parameter of a module-level function (a driver), not in a class's code?"""
        root = value.value
        if not isinstance(root, cst.Name) or any(isinstance(a, cst.ClassDef) for a in self.tree.ancestors(fdef)):
            return False
        found = self.tree.binding(root, root.value).assignments
        return bool(found) and all(isinstance(getattr(a, "node", None), cst.Param) for a in found)

    def _recycled(self, spelled: str) -> bool:
        """May making the class spelled so (the module's, one it imports from the project, one of a project module:
        round AL's pooled subclass of another file) hand back an object made before, or one holding tensors made
        before: it, or a base of the project (any file), defines `__new__` or takes a metaclass, or an `__init__` or
        `__post_init__` storing anything but its own parameters (round AG: a record base moving each tensor field into
        a per-shape static buffer); a base the reader cannot name may."""
        found = self._project_class_spelled(spelled)
        if found is not None:
            return self._class_recycles(found)
        *prefix, _ = spelled.split(".")  # (`self.Record(...)`; a capitalised name the project binds to an object or a
        if prefix:  # def: a callable interner handing back one record per shape, AN; read off a project module,
            return prefix[0] not in self._module_names() or self._project_module(prefix) is not None  # not a class: AV)
        return self._bound_not_a_class(spelled)

    def _project_module(self, prefix: List[str]):
        """The project file a dotted prefix (`graph_records`, `pkg.records`) names through this file's imports."""
        own = self.project().checked_file(self.source)
        if own is None or not all(p.isidentifier() for p in prefix):
            return None
        module = own.module_of(ast.parse(".".join(prefix), mode="eval").body)
        return callers._imported_file(self.project(), own, module) if module else None

    def _bound_at_module_level(self, name: cst.Name) -> bool:
        """Is every binding of the name where it is read its module's (an import, a class, a module-level alias)?"""
        found = self.tree.binding(name, name.value).assignments
        return bool(found) and all(isinstance(getattr(a, "scope", None), GlobalScope) for a in found)

    def _class_recycles(self, found: Tuple[object, ast.ClassDef]) -> bool:
        """_recycled, for a class of the project found as (file, class)."""
        todo, seen = [found], 0
        while todo and seen < 8:
            g, cls = todo.pop()
            seen += 1
            if cls.keywords or any(isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef)) and d.name == "__new__"
                                   for d in cls.body) or reach.body_binds(cls.body, "__new__") \
                    or self._new_installed(cls) or any(  # (`__new__ = recycled_new` in the body: round AF)
                        isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef)) and d.name in ("__init__", "__post_init__")
                        and not reach.stores_its_parameters(d) for d in cls.body):
                return True
            for base in cls.bases:
                found = callers._project_class(self.project(), g, base.id) if isinstance(base, ast.Name) else None
                if found is not None:
                    todo.append(found)
                elif isinstance(base, ast.Name) and base.id in g.froms and callers._import_home(
                        self.project(), g, base.id) is not None:
                    return True  # (a base of the project the reader did not find as one class)
        return False

    def _project_class_spelled(self, spelled: str) -> Optional[Tuple[object, ast.ClassDef]]:
        """(file, class) a class spelled `Cls` or `module.Cls` names in the project (through re-exports); None where
        it is not one class of the project (the engine's record: the field's rules read it)."""
        proj, own = self.project(), self.project().checked_file(self.source)
        if own is None:
            return None
        *prefix, name = spelled.split(".")
        g = self._project_module(prefix) if prefix else own
        home = callers._import_home(proj, g, name) if g is not None else None
        g, name = home or (g, name)
        classes = [c for c in (g.class_defs if g is not None else []) if c.name == name]
        return (g, classes[0]) if len(classes) == 1 else None

    def _bound_not_a_class(self, spelled: str) -> bool:
        """Does the file (or the project file it imports the name from) bind `Cls` at its top level to a call's
        result (an instance, `Interned = Interner()`) or by a def, not a class (an alias of one is read as one)?"""
        proj, own = self.project(), self.project().checked_file(self.source)
        if own is None or "." in spelled:
            return False
        home = callers._import_home(proj, own, spelled)
        g, name = home or (own, spelled)
        return any(isinstance(stmt, (ast.Assign, ast.AnnAssign)) and isinstance(stmt.value, ast.Call) and name in
                   reach._stored_names(stmt) or isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef))
                   and stmt.name == name for stmt in g.tree.body)

    def _module_names(self) -> Set[str]:
        """The names this module binds to modules or to names it imports (what `x.Cls` may read a class off)."""
        own = self.project().checked_file(self.source)
        return set(own.modules) | set(own.froms) if own is not None else set()

    def _new_installed(self, cls: ast.ClassDef) -> bool:
        """Is the class's `__new__` set from outside its body: by its `__init_subclass__` on each subclass (`cls.__new__
        = recycled_new`, `setattr(cls, "__new__", ...)`), or on its name by a file of the project (round AF)?"""
        hooks = [d for d in cls.body if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef))
                 and d.name == "__init_subclass__"]
        if any(_sets_new(n) for d in hooks for n in ast.walk(d)):
            return True
        own = self.project().checked_file(self.source)
        files = self.project().files_naming([cls.name]) + ([own] if own is not None else [])
        return any(_sets_new(n) and reach._unparse(getattr(n, "value", None) or n.args[0]) == cls.name
                   for g in files for n in ast.walk(g.tree) if isinstance(n, (ast.Attribute, ast.Call)))

    def _made_local(self, name: cst.Name, fdef: cst.FunctionDef, env: Optional[dict], seen: set) -> bool:
        b = self.tree.binding(name, name.value)
        if not b.assignments or not all(isinstance(a.scope, FunctionScope) for a in b.assignments):
            return False
        key = (id(fdef), name.value, id(env))
        if key in seen:
            return True
        seen.add(key)
        try:
            for a in b.assignments:
                if isinstance(getattr(a, "node", None), cst.Param):
                    if env is None:  # the method giving the holder: its caller's object, unless the module calls it
                        if not self._handed_made(fdef, name.value, seen):  # (a setter handed a kept record: round Z)
                            return False
                        continue
                    given, caller, outer = env.get(name.value, (None, None, None))
                    if given is None or not self._made_for_batch(given, caller, outer, seen):
                        return False
                elif not self._made_for_batch(getattr(self.tree.assignment_statement(a), "value", None), fdef, env, seen):
                    return False
            return True
        finally:
            seen.discard(key)

    def _handed_made(self, fdef: cst.FunctionDef, param: str, seen: set) -> bool:
        """Where the module calls the method `self.<fdef>(...)`, is what each call hands as `param` made for the
        batch (read in the caller)? A method no def of the module calls is the engine's hook: its caller's."""
        name = fdef.name.value
        if name.startswith("__") and name.endswith("__") and self.tree.is_method(fdef):
            return name in ("__init__", "__new__")  # (a constructor's parameter is what its construction hands: the
            # callers' rules read those; another dunder, `__call__(self, md)`, runs where no call spells it: AQ)
        if not self.tree.is_method(fdef):  # (a module's function: its caller's, as the engine's hooks are; a nested
            return not any(isinstance(u, cst.FunctionDef) for u in self.tree.ancestors(fdef))  # def kept as a
            # setter: what calls it with which record is not read, round AD)
        reads = self.find(cst.Attribute, lambda a: a.attr.value == name)
        attrs = {id(r.attr) for r in reads}
        if self.project().files_naming([name]) or any(not self._called(r) for r in reads) or self._spelled_as_string(
                name) or any(
                r is not fdef.name and id(r) not in attrs for r in self.find(cst.Name, lambda n: n.value == name)):
            return False  # (another file calls it, or it is read as a value: a listener list's, round AA; a class
            # body's alias, `set_forward_metadata = _adopt`, round AD)
        params = [p.name.value for p in (*fdef.params.posonly_params, *fdef.params.params, *fdef.params.kwonly_params)]
        for call in self.find(cst.Call, lambda c: isinstance(c.func, cst.Attribute) and c.func.attr.value == name):
            # (on any receiver: `super().m(...)`, another backend's `b.m(...)`, `Base.m(self, ...)`: round AB)
            caller = next((u for u in self.tree.ancestors(call) if isinstance(u, cst.FunctionDef)), None)
            receiver = call.func.value
            unbound = isinstance(receiver, cst.Name) and any(
                c.name.value == receiver.value for c in self.find(cst.ClassDef, None))
            if caller is not None and self.tree.is_method(caller) and not (
                    unbound or _code(receiver).strip() in ("self", "super()")):
                return False  # (a method's `self.target.set_plan(md)`: its record for its own batch, on another
                # object's holder, round AQ; a module function driving a backend hands it its batch's, as before)
            slots = params if unbound else params[1:]
            given = _bound_arguments(call, slots).get(param) if param in slots else None
            if caller is None or caller is fdef or not self._made_for_batch(given, caller, None, seen):
                return False
        return True

    def _spelled_as_string(self, name: str, read_by: Tuple[str, ...] = ()) -> bool:
        """Does a string of the module spell the name (`getattr(self, "_adopt")(md)`, `methodcaller("_adopt", md)`,
        `partial(setattr, self, "forward_metadata")`: round AF), but as the name a call of `read_by` is handed
        (the holder's `getattr`/`hasattr`, a read, or `setattr` where it stands, read as a store)? What it is called
        or set with is not read."""
        for s in self.find(cst.SimpleString, lambda s: s.evaluated_value == name):
            arg = self.tree.parent.get(s)
            call = self.tree.parent.get(arg) if isinstance(arg, cst.Arg) else None
            if not (isinstance(call, cst.Call) and dotted(call.func) in read_by and call.args.index(arg) == 1):
                return True
        return False

    def _made_by_import(self, call: cst.Call, fdef: cst.FunctionDef, env: Optional[dict], seen: set) -> bool:
        """A function imported from a file of the project: each of its returns None, a construction, or a parameter
        it never binds again (or `dataclasses.replace` of one) handed an object made for this batch."""
        found = self.imported_function(call)
        if found is None:
            return False
        g, imported, given = found
        returns = handed_back(g, imported)
        for r in returns:
            maker = reach._unparse(r.func).rsplit(".", 1)[-1] if isinstance(r, ast.Call) else ""
            if isinstance(r, ast.Constant) and r.value is None or maker[:1].isupper() and not (
                    isinstance(r.func, ast.Name) and self._recycled_in(g, maker)):
                continue
            if not (isinstance(r, ast.Name) and given.get(r.id) is not None and not rebinds(imported, r.id)
                    and self._made_for_batch(given[r.id], fdef, env, seen)):
                return False
        return bool(returns)

    def _recycled_in(self, g, name: str) -> bool:
        """May making the class `name` of project file g (its own, or one it imports from the project) hand back an
        object made before (_class_recycles), or is the name bound to something else there (a callable cache
        `Plan = _PlanCache()`: round AR)? A library's class (`types.SimpleNamespace`) makes a new object."""
        home = callers._import_home(self.project(), g, name)
        g, name = home or (g, name)
        classes = [c for c in g.class_defs if c.name == name]
        if len(classes) == 1:
            return self._class_recycles((g, classes[0]))
        return name not in g.froms and any(name in reach._stored_names(n) or isinstance(
            n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name for n in ast.walk(g.tree)
            if isinstance(n, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.FunctionDef, ast.AsyncFunctionDef)))

    def _refreshed(self, owner: cst.FunctionDef, a, field_name: str) -> Optional[str]:
        """The function reads the metadata off `self.<holder>`; a method of self (or `super()`) or a function of the
        module it calls after that read (or in a loop around it), or what they reach, that rebinds the holder or
        writes the field leaves the local another step's (a lazy refresh on a step's first layer, a staged update of
        the next step's lengths: rounds S and T); a callable of self the module defines no method for (a hook another
        file installed, a base's method elsewhere) may do either."""
        value = getattr(self.tree.assignment_statement(a), "value", None)
        if isinstance(getattr(a, "node", None), cst.Param):
            return self._replanned_while_handed(owner, field_name)
        if isinstance(value, cst.Attribute) and not _is_name(value.value, "self"):
            return self._replanned_on_any(owner, value, field_name)  # `forward_batch.dsa_metadata` (round U)
        if not isinstance(value, cst.Attribute):
            return None
        holder, order = value.attr.value, self.tree.order
        loops = [x for x in self.find((cst.For, cst.While), None, owner) if self.tree.inside(value, x)]

        def after(x: cst.CSTNode) -> bool:  # may run after the read of the holder: later, or in a loop around both
            return order[id(x)] > order[id(value)] or any(self.tree.inside(x, loop) for loop in loops)
        for read in self.find((cst.Attribute, cst.Call), lambda x: after(x) and _reached_name(x, holder), owner):
            name = _reached_name(read, holder)
            defs = self.methods_reached(name) if isinstance(read, cst.Attribute) else self.functions_reached(name)
            if not defs and isinstance(read, cst.Attribute) and self._called(read):
                return (f"{owner.name.value} reads the metadata into a local, then calls `{_code(read).strip()}` (line "
                        f"{self.tree.line(read)}), which no method of this module is: what it runs (a hook held in an "
                        "attribute, a base's method in another file) may refresh the metadata; pass topk_length by hand")
            for fdef in defs:
                at = self._gives_new_lengths(fdef, holder, field_name)
                if at is not None:
                    return self._refresh_why(owner, read, fdef, at)
        why = self._replanned_on_any(owner, value, field_name)
        if why:
            return why
        root = a.name if isinstance(getattr(a, "name", None), str) else ""
        for call in self.find(cst.Call, lambda x: after(x) and any(
                _is_name(arg.value, "self") or root and _is_name(arg.value, root) for arg in x.args), owner):
            if isinstance(call.func, cst.Name) and not self.functions_reached(call.func.value) \
                    and call.func.value not in _PLAIN_READS:
                return (f"{owner.name.value} reads the metadata into a local, then hands `self` or it to "
                        f"`{_brief(call, 60)}` (line {self.tree.line(call)}), code this module does not define "
                        "(a hook, a callback): it may refresh the metadata (round T); pass topk_length by hand")
        return None

    def _deferred(self, owner: cst.FunctionDef, node: cst.CSTNode, field_name: str) -> Optional[str]:
        """The metadata and the rows must be one step's: the body of a generator or a coroutine runs after its
        call handed it the rows, and gives way at each `yield`/`await` (another micro-batch's stage may plan in
        between: round V); a lambda or a nested def launching the kernel runs whenever it is called, and reads the
        field of the object bound before, which a plan written in place may have changed by then (round U's
        u_deferred_launch_after_inplace_replan; a new record each step leaves it as it was)."""
        inner = next((a for a in self.tree.ancestors(node) if isinstance(a, (cst.Lambda, cst.FunctionDef))), owner)
        if inner is not owner and self._escapes(owner, inner) and self._written_in_place(field_name):
            return (f"the call at line {self.tree.line(node)} is inside a {'lambda' if isinstance(inner, cst.Lambda) else 'nested def'}"
                    f" of {owner.name.value}, which runs whenever it is called: the metadata may be another step's "
                    "by then; call it where the metadata is bound, or pass topk_length by hand")
        if self.index(f"deferred:{id(owner)}", lambda: _deferred_body(owner)):
            return (f"{owner.name.value} is a {'coroutine' if owner.asynchronous else 'generator'}: its body runs "
                    "after its call hands it the rows, and other code runs at each await or yield, so the metadata "
                    "it reads may be another batch's; pass topk_length by hand")
        return None

    def _two_batches(self, owner: cst.FunctionDef, node: cst.CSTNode) -> Optional[str]:
        """One plan counts one batch's rows: every call in owner of what node calls (the kernel, or the helper
        reaching it) hands the same arguments. Two micro-batches' q and indices, or the target's and the draft's,
        launched under one bound plan give the second the first's lengths (round V)."""
        if not isinstance(node, cst.Call):
            return None
        callee = dotted(node.func)
        calls = self.index(f"two-batches:{id(owner)}:{callee}", lambda: [
            (c, [_code(a).strip().rstrip(",") for a in c.args])
            for c in self.find(cst.Call, lambda c: dotted(c.func) == callee, owner)])
        text = next((t for c, t in calls if c is node), None)
        for call, other in calls:
            if call is not node and other != text:
                return (f"{owner.name.value} calls `{callee}` at lines {self.tree.line(node)} and {self.tree.line(call)} "
                        "with other arguments under one bound metadata: its lengths count one batch's rows, which "
                        "two sets of q and indices (two micro-batches, a target and its draft) cannot both be; "
                        "bind each its own plan, or pass topk_length by hand")
        return None

    def _written_in_place(self, field_name: str) -> bool:
        """Does this module or another file of the project write the field's tensor in place (`copy_`, an in-place
        op, a slice assigned)?"""
        proj = self.project()  # (field_writes reads this module too, as checked)
        return any(isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr.endswith("_")
                   or isinstance(node, ast.Subscript)  # `x.field[:n] = v`: its rows written in place
                   or value is None and not isinstance(node, ast.Constant)
                   for _, node, value in reach.field_writes(proj, field_name, proj.checked_file(self.source)))

    def _escapes(self, owner: cst.FunctionDef, inner: cst.CSTNode) -> bool:
        """May the lambda or nested def run after owner returns (returned, stored, handed on), rather than only
        be called by name in owner (`run = lambda: ...; return run()`)?"""
        if isinstance(inner, cst.FunctionDef):
            name = inner.name.value
        else:
            up = self.tree.parent.get(inner)
            if not (isinstance(up, cst.Assign) and len(up.targets) == 1 and isinstance(up.targets[0].target, cst.Name)):
                return True
            name = up.targets[0].target.value
        for ref in self.find(cst.Name, lambda n: n.value == name, owner):
            up = self.tree.parent.get(ref)
            called = isinstance(up, cst.Call) and up.func is ref
            if not called and not (isinstance(up, (cst.FunctionDef, cst.AssignTarget))):
                return True
        return False

    def _staged_here(self, owner: cst.FunctionDef, root: str, field_name: str) -> Optional[str]:
        """The function that passes the metadata writes the field's tensor in place itself (round U: the next step's
        lengths staged through `self.forward_metadata.<field>` or a local alias of it): the call may get them."""
        def is_field(e: cst.BaseExpression, depth: int = 0) -> bool:
            while isinstance(e, cst.Subscript) or isinstance(e, cst.Call) and isinstance(e.func, cst.Attribute) \
                    and e.func.attr.value in ("view", "reshape", "narrow", "flatten", "squeeze", "unsqueeze"):
                e = e.value if isinstance(e, cst.Subscript) else e.func.value
            if isinstance(e, cst.Attribute):
                return e.attr.value == field_name
            if not isinstance(e, cst.Name) or depth > 3 or e.value == root:
                return False
            values = [getattr(self.tree.assignment_statement(a), "value", None) for a in self.tree.binding(e, e.value).assignments]
            return any(v is not None and is_field(v, depth + 1) for v in values)
        for target in self._in_place_targets(owner):
            if is_field(target):
                return (f"{owner.name.value} writes `{field_name}` in place at line {self.tree.line(target)} (through "
                        f"`{_brief(target, 40)}`): the call may get lengths staged for another step (round U); "
                        "pass topk_length by hand")
        return None

    def _called(self, read: cst.Attribute) -> bool:
        up = self.tree.parent.get(read)
        return isinstance(up, cst.Call) and up.func is read

    def _gives_new_lengths(self, fdef: cst.FunctionDef, holder: str, field_name: str) -> Optional[cst.CSTNode]:
        """Where fdef rebinds `self.<holder>` or writes the field (given a new tensor, or in place)."""
        for node, target, _ in self._writes_in(fdef):
            if isinstance(target, cst.Attribute) and (target.attr.value == field_name or _is_name(
                    target.value, "self") and target.attr.value == holder):
                return node
        for target in self._in_place_targets(fdef):
            while isinstance(target, (cst.Attribute, cst.Subscript)) and not (
                    isinstance(target, cst.Attribute) and target.attr.value == field_name):
                target = target.value
            if isinstance(target, cst.Attribute):
                return target
        return None

    def _replanned_on_any(self, owner: cst.FunctionDef, read: cst.Attribute, field_name: str) -> Optional[str]:
        """After the read of `<x>.<holder>` into a local, a call of a method, on any receiver (a batch keeping a
        back-reference to the backend, a planner held on self), that some class of this module defines to assign
        `<y>.<holder>` or to write the field, may leave the local another step's (round U)."""
        holder, order = read.attr.value, self.tree.order
        for call in self.find(cst.Call, lambda c: isinstance(c.func, cst.Attribute) and order[id(c)] > order[id(read)],
                              owner):
            name = call.func.attr.value
            todo, seen = [(f.node, 0) for f in self.functions_named(name) if f.class_name], set()
            if not todo:  # defined in another file (a batch class keeping a back-reference): what it calls by name
                called = self._called_elsewhere(name, holder, field_name)
                todo = [(f.node, 1) for n in called if n for f in self.functions_named(n)]
                if None in called:
                    return (f"{owner.name.value} reads the metadata into a local, then calls `{_code(call.func).strip()}` "
                            f"(line {self.tree.line(call)}), defined in another file to assign `{holder}` or "
                            f"`{field_name}`: the local may be another step's (round U); pass topk_length by hand")
            while todo:  # (what it calls in turn, by name, on any receiver: a planner calling the backend's planning)
                fdef, depth = todo.pop()
                if id(fdef) in seen or depth > 4:
                    continue
                seen.add(id(fdef))
                at = self._writes_holder_anywhere(fdef, holder, field_name)
                if at is not None:
                    return self._refresh_why(owner, call, fdef, at)
                todo += [(f.node, depth + 1) for c in self.find(cst.Call, None, fdef)
                         for name in [c.func.attr.value if isinstance(c.func, cst.Attribute) else
                                      c.func.value if isinstance(c.func, cst.Name) else ""] if name
                         for f in self.functions_named(name)]
        return None

    def _called_elsewhere(self, method: str, holder: str, field_name: str) -> List[Optional[str]]:
        """For the defs of `method` in other files: the names they call (None where one assigns `<x>.<holder>` or
        `<x>.<field>` itself). Read once per name."""
        return self.index(f"called-elsewhere:{method}:{holder}:{field_name}",
                          lambda: self.project().calls_in_defs(method, {holder, field_name}))

    def _replanned_while_handed(self, owner: cst.FunctionDef, field_name: str) -> Optional[str]:
        """The function is handed the metadata (its caller read it off the holder) and calls a method of self that
        plans it again (builds a record with the field, or writes the field): the object handed is the step before's
        (round U's u_param_metadata_callee_refreshes)."""
        for read in self.find(cst.Attribute, lambda x: _is_name(x.value, "self") and self._called(x), owner):
            for fdef in self.methods_reached(read.attr.value):
                built = self.find(cst.Arg, lambda x: x.keyword is not None and x.keyword.value == field_name, fdef)
                at = built[0] if built else self._writes_holder_anywhere(fdef, "", field_name)
                if at is not None:
                    return (f"{owner.name.value} is handed the metadata, and `{_code(read).strip()}` (line "
                            f"{self.tree.line(read)}) reaches {fdef.name.value}, which plans it again at line "
                            f"{self.tree.line(at)}: the object handed is the step before's (round U); pass topk_length "
                            "by hand")
        return None

    def _writes_holder_anywhere(self, fdef: cst.FunctionDef, holder: str, field_name: str) -> Optional[cst.CSTNode]:
        """Where fdef assigns `<any>.<holder>` or `<any>.<field>`, or writes the field in place."""
        for node in self.find((cst.AssignTarget, cst.AnnAssign, cst.AugAssign), None, fdef):
            target = node.target
            if isinstance(target, cst.Attribute) and target.attr.value in (holder, field_name):
                return node
        for target in self._in_place_targets(fdef):
            while isinstance(target, cst.Subscript):
                target = target.value
            if isinstance(target, cst.Attribute) and target.attr.value == field_name:
                return target
        return None

    def functions_reached(self, name: str) -> List[cst.FunctionDef]:
        """The module-level functions named `name`, and the methods and functions they reach."""
        found = [f.node for f in self.functions_named(name) if not f.class_name]
        return found + [m for f in found for x in self.find(cst.Attribute, lambda x: _is_name(x.value, "self"), f)
                        for m in self.methods_reached(x.attr.value)]

    def _refresh_why(self, owner: cst.FunctionDef, read: cst.CSTNode, fdef: cst.FunctionDef, at: cst.CSTNode) -> str:
        return (f"{owner.name.value} reads the metadata into a local, and `{_code(read).strip()}` (line "
                f"{self.tree.line(read)}) reaches {fdef.name.value}, which gives it new lengths at line "
                f"{self.tree.line(at)}: which step's lengths the local holds at the call is not proven; read the "
                "metadata after the refresh, or pass topk_length by hand")

    def methods_reached(self, name: str) -> List[cst.FunctionDef]:
        """The methods of the module's classes named `name`, and those they read off self (transitively)."""
        def build() -> List[cst.FunctionDef]:
            todo = [f.node for f in self.functions_named(name) if f.class_name]
            seen: Dict[int, cst.FunctionDef] = {}
            while todo:
                fdef = todo.pop()
                if id(fdef) not in seen:
                    seen[id(fdef)] = fdef
                    for x in self.find(cst.Attribute, lambda x: _is_name(x.value, "self"), fdef):
                        todo += [f.node for f in self.functions_named(x.attr.value) if f.class_name]
            return list(seen.values())
        return self.index(f"methods-reached:{name}", build)

    def _class_held(self, attr: str) -> Optional[cst.CSTNode]:
        """A write of `attr` in this module on anything but `self` or a local new instance (`type(self).attr = v`,
        `cls.attr = v`, a class decorator's parameter, a loop over classes, a literal `setattr(klass, "attr", v)`):
        it may be a class, whose every instance then shares it (round P, round Q)."""
        return self.index(f"class-held:{attr}", lambda: self._class_held_scan(attr))

    def _class_held_scan(self, attr: str) -> Optional[cst.CSTNode]:
        for node in self.find((cst.AssignTarget, cst.AnnAssign, cst.AugAssign, cst.For)):
            for t in bound_targets(node.target):
                if isinstance(t, cst.Attribute) and t.attr.value == attr and not self._instance_here(t.value):
                    return node
        for call in self.find(cst.Call, lambda c: (get_full_name_for_node(c.func) or "").rsplit(".", 1)[-1] in (
                "setattr", "__setattr__") and any(isinstance(a.value, cst.SimpleString) and a.value.evaluated_value == attr
                                                  for a in c.args)):
            # `x.__setattr__("attr", v)`: x; `setattr(x, ...)`, `object.__setattr__(x, ...)`, `builtins.setattr(x, ...)`: x
            method = isinstance(call.func, cst.Attribute) and get_full_name_for_node(call.func) not in (
                "object.__setattr__", "builtins.setattr")
            if not self._instance_here(call.func.value if method else call.args[0].value):
                return call
        return None

    def _instance_here(self, e: cst.BaseExpression) -> bool:
        """`self`, `super()`, or a local bound only to `self` or a constructor call (a new instance)."""
        if isinstance(e, cst.Call) and get_full_name_for_node(e.func) == "super":
            return True
        if not isinstance(e, cst.Name):
            return False
        if e.value == "self":
            return True
        values = self.tree.assigned_values(e, e.value)
        return bool(values) and all(isinstance(v, cst.Name) and v.value == "self" or constructor_call(v) for v in values)

    def _serves_any(self, name: str) -> bool:
        """A class of this module of that name serving any attribute by code (`__getattr__`/`__getattribute__`), or
        one whose construction may hand back an earlier object (graph_replay._interning)."""
        return self._interning(name) or any(n in ("__getattr__", "__getattribute__") for c in self.find(
            cst.ClassDef, lambda c: c.name.value == name) for n, _ in _class_bindings(c))

    def _served_names(self) -> Set[str]:
        """Names a class of this module binds at class level other than to a constant (a method, a property, a
        descriptor however made or reached: a call, a name, an item; in an `if` or `try` of the body too), and
        "*" where a class binds `__getattr__` or `__getattribute__` in any way."""
        def build() -> Set[str]:
            out: Set[str] = set()
            for cls in self.find(cst.ClassDef):
                for name, value in _class_bindings(cls):
                    if name in ("__getattr__", "__getattribute__"):
                        out.add("*")  # serves any name it is asked (round P)
                    if not isinstance(value, (cst.SimpleString, cst.Integer, cst.Float)) and not (
                            isinstance(value, cst.Name) and value.value in ("None", "True", "False")):
                        out.add(name)
            return out
        return self.index("served-names", build)


def _deferred_body(fdef: cst.FunctionDef) -> bool:
    """Does calling fdef run none of its body: a coroutine (`async def`, run only when awaited) or a generator (a
    `yield` of its own: run only when iterated), round AT?"""
    return fdef.asynchronous is not None or any(isinstance(r, cst.Yield) for r in _own_returns(fdef))


def _class_level_targets(stmt: cst.CSTNode) -> List[cst.BaseExpression]:
    """What a class body's statement binds by assignment."""
    small = stmt.body if isinstance(stmt, cst.SimpleStatementLine) else []
    return [t.target for s in small if isinstance(s, cst.Assign) for t in s.targets] + [
        s.target for s in small if isinstance(s, (cst.AnnAssign, cst.AugAssign))]


def _sets_new(n: ast.AST) -> bool:
    """`x.__new__ = ...` or `setattr(x, "__new__", ...)`."""
    if isinstance(n, ast.Attribute):
        return n.attr == "__new__" and not isinstance(n.ctx, ast.Load)
    return isinstance(n, ast.Call) and reach._unparse(n.func) == "setattr" and len(n.args) > 1 \
        and isinstance(n.args[1], ast.Constant) and n.args[1].value == "__new__"


def _one_of(nodes: Set[int]):
    """ReplayPaths' `updates`: a small statement that is one of the nodes (or whose expression is: a setattr)."""
    return lambda small: id(small) in nodes or isinstance(small, cst.Expr) and id(small.value) in nodes


def _none(value: Optional[cst.BaseExpression]) -> bool:
    """`None`, or nothing given (a declaration)."""
    return value is None or isinstance(value, cst.Name) and value.value == "None"


# calls making a new, empty container (a copy, `dict(pool)`, shares the other's items)
_NEW_CONTAINERS = {"dict", "list", "set", "defaultdict", "OrderedDict", "collections.defaultdict",
                   "collections.OrderedDict", "WeakValueDictionary", "weakref.WeakValueDictionary"}


def _made_item(v: cst.BaseExpression) -> bool:
    """An item of a new container made where it is stored: a call's result, a literal, a new container; not a name
    or an attribute, which may hold what another object holds too (a parameter: the runner's one record)."""
    if isinstance(v, cst.IfExp):  # (sglang-kt: `self._compute_flashmla_metadata(...) if ... else None`)
        return _made_item(v.body) and _made_item(v.orelse)
    return isinstance(v, (cst.Call, cst.BaseNumber, cst.BaseString)) or _is_none(v) or _fresh_container(v)


def _fresh_container(v: cst.BaseExpression) -> bool:
    """A new container: a display or comprehension, or a call of a container class with no positional argument but a
    `defaultdict`'s factory; a conditional of such on both branches."""
    if isinstance(v, cst.IfExp):
        return _fresh_container(v.body) and _fresh_container(v.orelse)
    if isinstance(v, (cst.Dict, cst.List, cst.Set, cst.Tuple)):  # (round AX: its items made here too, not a record
        return all(_made_item(e.value) for e in v.elements  # handed in: `{max_bs: static_record}`)
                   if isinstance(e, (cst.Element, cst.DictElement)))
    if isinstance(v, (cst.DictComp, cst.ListComp, cst.SetComp)):
        return _made_item(v.value if isinstance(v, cst.DictComp) else v.elt)
    if not isinstance(v, cst.Call) or (get_full_name_for_node(v.func) or "") not in _NEW_CONTAINERS:
        return False
    positional = [a for a in v.args if a.keyword is None and not a.star]
    return not any(a.star for a in v.args) and len(positional) <= ("defaultdict" in _code(v.func))
