"""docs/soundness.md `graph-replay`: on CUDA-graph replay the captured tensors are updated in place: the
field is never given a new tensor on an object that may be a captured one (replaced_field), and the methods
that may run between replays give neither the field nor the object holding it a new value (replay_replaces)."""
from __future__ import annotations

from typing import Dict, List, Optional, Set

import libcst as cst
from libcst.helpers import get_full_name_for_node
from libcst.metadata import FunctionScope

from topk_migrate.cst.resolve import dotted

from . import reach
from .replay_paths import ReplayPaths
from .rows import _module_bases, local_defs, unproven_local
from .syntax import _code, _is_name, _targets_attribute, bound_targets

# engine kernels that write a metadata field in place through a keyword (their output), by (module, name)
# (a keyword, or a place among the positional arguments: sglang 0.5.12's fused copy of precomputed metadata)
ENGINE_FIELD_OUTPUTS = {
    **{("sglang.kernels.ops.attention.dsa_metadata", name): "dsa_cache_seqlens"
       for name in ("fused_dsa_decode_metadata", "fused_dsa_target_verify_metadata", "fused_dsa_draft_extend_metadata")},
    ("sglang.jit_kernel.fused_metadata_copy", "fused_metadata_copy_cuda"): 12,
}


def _basic(sub: cst.Subscript) -> bool:
    """An index that views its tensor (slices, integers, `...`): a method's in-place write through it reaches the
    tensor (some of it); one by a tensor or a name (advanced indexing, round T) copies."""
    return all(isinstance(e.slice, cst.Slice) or isinstance(e.slice, cst.Index) and isinstance(
        e.slice.value, (cst.Integer, cst.Ellipsis)) for e in sub.slice)


def _prefix(sub: cst.Subscript) -> bool:
    """An index viewing a prefix of the rows, every element of each row (`[:bs]`, `[0:n]`, `[:n, :]`, `[:]`,
    `[...]`): a method's in-place write through it reaches the tensor's first rows, the graph's real ones. One by a
    tensor or a name (advanced indexing, round T) copies; a slice from another row or by a step (`[1:]`, `[::2]`),
    an integer (one row) or a narrowed later dimension leaves rows of the prefix stale (round BH)."""
    first, *rest = sub.slice
    return _from_row_zero(first.slice) and all(_whole_dim(e.slice) for e in rest) \
        or all(_whole_dim(e.slice) for e in sub.slice)


def _from_row_zero(s) -> bool:
    """A slice from row 0 (no lower bound or a literal 0) by step 1 (none or a literal 1), to any row."""
    return isinstance(s, cst.Slice) and (s.lower is None or isinstance(s.lower, cst.Integer) and s.lower.evaluated_value == 0) \
        and (s.step is None or isinstance(s.step, cst.Integer) and s.step.evaluated_value == 1)


def _whole_dim(s) -> bool:
    """`:` or `...`: every element of the dimensions it stands for."""
    return isinstance(s, cst.Slice) and s.lower is None and s.upper is None and s.step is None \
        or isinstance(s, cst.Index) and isinstance(s.value, cst.Ellipsis)


def _whole(sub: cst.Subscript) -> bool:
    """An index viewing every element (`[:]`, `[...]`, `[:, :]`): a write through it rewrites the whole tensor."""
    return all(_whole_dim(e.slice) for e in sub.slice)


# How much of a tensor a write through an index must reach to count (GraphReplay._viewed_targets): any of it (a
# write of the tensor), a prefix of its rows (an update of a captured record: the real rows of a padded graph), or
# every element (an eager planner's refresh: round AL).
_REACHES = {"any": _basic, "prefix": _prefix, "whole": _whole}


def _is_attr_of_self(e: cst.BaseExpression) -> bool:
    return isinstance(e, cst.Attribute) and isinstance(e.value, cst.Name) and e.value.value == "self"


# where a class decorator of reach.PLAIN_CLASS_DECORATORS is imported from (GraphReplay._library_plain: round BA)
_PLAIN_DECORATOR_MODULES = {"dataclasses", "functools", "typing", "typing_extensions"}
# methods that give a mapping's items new values
_ITEM_WRITES = {"update", "setdefault", "__setitem__"}
# What may keep a statement from running on some path through its def (graph_replay._always_runs)
_BRANCHING = (cst.If, cst.Try, cst.TryStar, cst.With, cst.Match, cst.While, cst.For, cst.IfExp, cst.BooleanOperation,
              cst.CompFor, cst.Lambda, cst.FunctionDef)


def _any_item(mapping: cst.BaseExpression) -> cst.Subscript:
    """`mapping[...]`: an item written whose key is not read."""
    return cst.Subscript(value=mapping, slice=[cst.SubscriptElement(cst.Index(cst.Ellipsis()))])


def _self_root_attr(e: cst.BaseExpression) -> Optional[str]:
    """`self.A`, `self.A[k]`, `self.A.b`: A; else None."""
    while isinstance(e, (cst.Subscript, cst.Attribute)) and not _is_attr_of_self(e):
        e = e.value
    return e.attr.value if _is_attr_of_self(e) else None


def _super_method(call: cst.Call) -> bool:
    """`super().name(...)` (a bare `super()`)."""
    func = call.func
    return isinstance(func, cst.Attribute) and isinstance(func.value, cst.Call) and not func.value.args \
        and get_full_name_for_node(func.value.func) == "super"


def _handed_self(call: cst.Call) -> bool:
    """`Base.name(self, ...)`: a method read off a class (or anything but self) run on self (round AM: a subclass's
    hook calling its base's explicitly, on one mode only)."""
    func = call.func
    return isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value != "self" \
        and bool(call.args) and not call.args[0].keyword and not call.args[0].star \
        and isinstance(call.args[0].value, cst.Name) and call.args[0].value.value == "self"


def _read_off(name: str):
    """A test of a node: `name.x`, or `getattr(name, ...)`."""
    return lambda x: isinstance(x, cst.Attribute) and _is_name(x.value, name) or isinstance(x, cst.Call) and \
        get_full_name_for_node(x.func) == "getattr" and bool(x.args) and _is_name(x.args[0].value, name)


def _a_record(e: cst.BaseExpression) -> bool:
    """May `e` be a record itself, not a field of one: a name, an item, an attribute of self (`md.page_table_1.copy_(x)`
    is a tensor's copy, though the record's class defines a `copy_`: round AD)?"""
    return not isinstance(e, cst.Attribute) or _is_name(e.value, "self")


def _view_of_self(e: cst.BaseExpression) -> Optional[str]:
    """`self.buf`, `self.buf[:bs]`, `self.buf[k][:bs]`: a plain view of an attribute of self (A); else None."""
    while isinstance(e, cst.Subscript):
        e = e.value
    return e.attr.value if _is_attr_of_self(e) else None


class GraphReplay:
    """docs/soundness.md `graph-replay` in this module (a mixin of analysis._Analysis)."""

    def replaced_field(self, field_name: str) -> Optional[str]:
        """CUDA graphs, whatever path updates the metadata (sglang 0.5.16 does it in
        `_apply_cuda_graph_metadata`, a name like no replay hook): a captured graph keeps reading the tensor
        the field held when it was captured, so the field is never given a new tensor on an object that may
        be a captured one. `x.field = v` (`+=`, `: T =`, a literal setattr) only where x is bound in the same
        function, on every path, to a class's constructor call (`DSAMetadata(...)`): the first other one, or None."""
        def build() -> Optional[str]:
            writes = [t for t in self.find((cst.AssignTarget, cst.AnnAssign, cst.AugAssign), _targets_attribute)
                      if t.target.attr.value == field_name]
            writes += [c for c in self.find(cst.Call, lambda c: get_full_name_for_node(c.func) == "setattr"
                                            and len(c.args) > 1 and isinstance(c.args[1].value, cst.SimpleString)
                                            and c.args[1].value.evaluated_value == field_name)]
            for w in writes:
                receiver = w.args[0].value if isinstance(w, cst.Call) else w.target.value
                if isinstance(w, cst.AugAssign) or not self._constructed(receiver):
                    obj = _code(receiver).strip()
                    return (f"line {self.tree.line(w)} gives `{obj}.{field_name}` a new tensor, and `{obj}` may be "
                            "metadata a CUDA graph was captured with, which keeps reading the tensor it held; "
                            f"update it in place (`{obj}.{field_name}.copy_(...)`), or pass topk_length by hand")
            return None
        return self.index(f"replaced:{field_name}", build)

    def _constructed(self, e: cst.BaseExpression) -> bool:
        """Is `e` a local name bound, at each of its bindings, to a class's constructor call (a capitalized
        callee: `DSAMetadata(...)`), so a new object no captured graph holds?"""
        if not isinstance(e, cst.Name):
            return False
        b = self.tree.binding(e, e.value)
        if not b.assignments or not isinstance(b.assignments[0].scope, FunctionScope):
            return False
        for a in b.assignments:
            value = getattr(self.tree.assignment_statement(a), "value", None)
            if not (isinstance(value, cst.Call) and self._constructed_call(value)):
                return False
        return True

    def _constructed_call(self, call: cst.Call) -> bool:
        """A class's constructor call (a capitalized callee) that makes a new object (no interning class)."""
        callee = (dotted(call.func) or "").rsplit(".", 1)[-1]
        return callee[:1].isupper() and not self._interning(callee)

    def _new_object(self, value: cst.BaseExpression) -> bool:
        """A constructor's call, or a local bound only to them."""
        return isinstance(value, cst.Call) and self._constructed_call(value) or self._constructed(value)

    def _interning(self, name: str, seen: Optional[Set[str]] = None) -> bool:
        """A class of this module of that name, or a base of it in this module, defines `__new__` or takes a
        metaclass: its call may hand back an object it made before (a flyweight per batch size, a captured one:
        round P; a pool in a base: round T)."""
        seen = seen if seen is not None else set()
        seen.add(name)
        classes = {k.name.value for k in self.find(cst.ClassDef)}
        for c in self.find(cst.ClassDef, lambda c: c.name.value == name):
            if any(isinstance(d, cst.FunctionDef) and d.name.value == "__new__" for d in c.body.body) or \
                    any(k.keyword for k in c.keywords) or any(
                        (dotted(d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator) or "").rsplit(
                            ".", 1)[-1] not in reach.PLAIN_CLASS_DECORATORS for d in c.decorators):
                return True  # (a class decorator may hand back a pool in the class's place: round V)
            bases = {(dotted(b.value) or "").rsplit(".", 1)[-1] for b in c.bases} & classes - seen
            if any(self._interning(b, seen) for b in bases):
                return True
        return bool(self.functions_named(name))  # a capitalised function

    def replay_replaces(self, field_name: str) -> Optional[str]:
        """CUDA graphs: a graph captured once reads the tensors it was captured with, so between replays
        (reach.graph_update's methods, as the engines' init_forward_metadata_replay_cuda_graph, and the methods
        they call through self, but a capture or its builder) the lengths must be updated in place: no new
        value for the field, no new metadata object (`self.forward_metadata` may only be given back an object
        read from where the captured ones are kept)."""
        def build() -> Optional[str]:
            held = self.held_attributes()
            sources = self._holder_sources(held)
            for fdef in self.graph_update_defs():
                for arg in self.find(cst.Arg, lambda a: a.keyword is not None and a.keyword.value == field_name, fdef):
                    return self._replaced(fdef, arg, f"a new `{field_name}`")
                for at, target, value in self._writes_in(fdef):
                    new = value is None or not self._stored(value, set())
                    if isinstance(target, cst.Subscript):  # `self.graph_metadata[bs] = make(...)`
                        if new and _self_root_attr(target) in sources:
                            return self._replaced(fdef, at, f"`{_code(target).strip()}` a new object")
                        continue
                    attr = target.attr.value
                    if attr == field_name:
                        return self._replaced(fdef, at, f"`{field_name}` a new tensor")
                    # `self.forward_metadata = ...` (where the kernel's callers read the metadata from), or what it
                    # is given back from (`self._pending = make(...)`)
                    # on any receiver: `be = self`, a loop over `(self, *self.drafts)` reach the holder too (round Q)
                    if (attr in held or attr in sources) and new:
                        return self._replaced(fdef, at, f"`{_code(target).strip()}` a new object")
            return None
        return self.index(f"replay:{field_name}", build)

    def replay_updates(self, field_name: str) -> Optional[str]:
        """CUDA graphs, the other half: where this module captures graphs (a def named for capture) and sets the
        field, some method that runs between replays (graph_update_defs) writes the field's tensor in place
        (`md.field.copy_(...)`, `md.field[:n] = ...`), or a buffer of self the capture made it a plain view of
        (`field=self.buf[:bs]`, then `self.buf[:bs].copy_(...)`). A replay hook that updates only the raw lengths
        leaves the captured graph its capture-time ones (round R's u_graph_replay_never_updates_field)."""
        def build() -> Optional[str]:
            captures = self.find(cst.FunctionDef, lambda f: "capture" in f.name.value)
            if not captures or not self._field_set(field_name):
                return None
            buffers = {r for f in captures for v in self.field_values(field_name, f) for r in [_view_of_self(v)] if r}
            # each capture stores a new object (its own tensor) in the holder: a write through the holder reaches the
            # last one's only, and the graphs captured before keep their lengths (round T)
            last_only, via_holder = not buffers and any(self._stores_new_in_holder(f) for f in captures), None
            tables = set() if buffers else {t for f in captures for t in self._tables_filled(f)}
            for table in sorted(tables - self.updated_tables(field_name)):  # (round U: a table of one mode's captures no replay updates)
                return (f"the captures keep metadata in `self.{table}`, but no method that runs between replays writes "
                        f"`{field_name}` in place on an object read from it: those graphs replay with their capture-time "
                        "lengths; update the field in place there on replay, or pass topk_length by hand")
            plan = (buffers, last_only)
            for fdef in self.graph_update_defs():
                via_holder = via_holder or next(iter(self._holder_writes(fdef, field_name, last_only)), None)
            roots = self._replay_roots()
            covering = [f for f in roots if self._replay_covered(f, field_name, plan)]
            kept = self._graph_state(captures, buffers | tables)
            mangled = sorted(a for a in kept if a.startswith("__") and not a.endswith("__"))
            if mangled:  # (`self.__metadata` is another attribute in each class that spells it: round AA)
                return (f"`self.{mangled[0]}` holds what a graph reads under a private name, which Python renames "
                        "per class: a subclass's write of it is another attribute than the base's read; pass "
                        "topk_length by hand")
            hooks = [f for f in self.graph_update_defs() if reach.graph_update(f.name.value)]  # (a runner may call a
            skipping = [f for f in hooks if self._touches(f, kept)  # hook another hook calls: round AA)
                        and not self._replay_covered(f, field_name, plan) and not self._only_reads(f)]
            if covering and not skipping:
                left = next((f for f in covering if tables and not self._repoints(f, set())), None)
                if left is not None:  # (round AI: a table per mode, the holder left on the last capture's record)
                    return (f"`{left.name.value}` (line {self.tree.line(left)}) updates a record the captures keep "
                            f"in `self.{sorted(tables)[0]}`, but some run of it returns without giving the holder "
                            f"`self.{sorted(self.held_attributes())[0] if self.held_attributes() else '?'}` that "
                            "record: the kernel's callers may read another mode's or size's record, with its "
                            "capture-time lengths; give the holder the record on every path, or pass topk_length by "
                            "hand")
                return None
            if covering:
                return (f"`{skipping[0].name.value}` (line {self.tree.line(skipping[0])}) runs between replays and reads "
                        f"the captured metadata, but some run of it returns without writing `{field_name}` in place "
                        "(another replay hook does): a graph replayed after it keeps its capture-time lengths; update "
                        "the field on every path of each replay hook, or pass topk_length by hand")
            names = ", ".join(f"`{f.name.value}`" for f in captures[:2])
            if via_holder is not None:
                return (f"{names} stores a new metadata object in the holder at each capture, and the replay writes "
                        f"`{field_name}` only through the holder (line {self.tree.line(via_holder)}): the graphs captured "
                        "before the last keep their capture-time lengths (round T); keep each capture's object where "
                        "replay finds it (a table by batch size), or views of one buffer")
            return (f"{names} captures CUDA graphs, but no method that runs between replays writes "
                    f"`{field_name}` in place (`metadata.{field_name}.copy_(...)`): a captured graph would replay "
                    "with the lengths it was captured with; update the field in place on replay, or pass topk_length "
                    "by hand")
        return self.index(f"replay-updates:{field_name}", build)

    def _replay_roots(self) -> List[cst.FunctionDef]:
        """The hooks named for replay (reach.graph_update) that no other such def of the module calls off self: where
        a replay starts (a helper one of them calls in one mode's branch is no root: round Y)."""
        defs = [f for f in self.graph_update_defs() if reach.graph_update(f.name.value)]
        called = {c.func.attr.value for f in defs for c in self.find(cst.Call, self._self_method, f)}
        return [f for f in defs if f.name.value not in called]

    def graph_state(self) -> Set[str]:
        """The attributes of self that hold the metadata or what a graph reads (_graph_state, for every capture)."""
        def build() -> Set[str]:
            captures = self.find(cst.FunctionDef, lambda f: "capture" in f.name.value)
            tables = {t for f in captures for t in self._tables_filled(f)}
            return self._graph_state(captures, tables)
        return self.index("graph-state", build)

    def relied_methods(self, classes: Set[str], field_name: str, kept: Set[str]) -> Set[str]:
        """The methods of these classes the metadata's proof reads: those touching an attribute in `kept`, and
        those making a record with the field (a builder)."""
        return {f.name for f in self.facts.functions if f.class_name in classes and (
            self._touches(f.node, kept) or self._makes_record(f.name, field_name))}

    def _graph_state(self, captures: List[cst.FunctionDef], kept: Set[str]) -> Set[str]:
        """The attributes of self that hold what a graph reads: the holder, the tables and buffers the captures
        fill, and any attribute of self a capture sets."""
        set_there = {_self_root_attr(t) for f in captures for t in self._assigned_targets(f)}
        return (set_there - {None}) | kept | self.held_attributes()

    def _assigned_targets(self, fdef: cst.FunctionDef) -> List[cst.BaseExpression]:
        return [t.target for a in self.find(cst.Assign, None, fdef) for t in a.targets] + [
            a.target for a in self.find((cst.AnnAssign, cst.AugAssign), None, fdef)]

    def _touches(self, fdef: cst.FunctionDef, kept: Set[str], depth: int = 0) -> bool:
        """Does fdef (or a method it reads off self, three deep) read an attribute of self that holds what a graph
        reads? A replay hook that touches none (a fill value's getter) cannot leave a graph stale; one that
        selects a captured record, or re-points the holder, must update it (round Z: a second replay hook)."""
        reads = self.find(cst.Attribute, _is_attr_of_self, fdef) + [
            c.func for c in self.find(cst.Call, _handed_self, fdef)]  # (`Base.hook(self, ...)`: round AM)
        if any(r.attr.value in kept for r in reads):
            return True
        return depth < 3 and any(self._touches(f.node, kept, depth + 1) for r in reads
                                 for f in self.functions_named(r.attr.value) if f.class_name and f.node is not fdef)

    def _holder_writes(self, fdef: cst.FunctionDef, field_name: str, last_only: bool) -> List[cst.Attribute]:
        """`holder.field` written in place where each capture stored a new object in the holder (last_only): that
        reaches the last capture's object only, so it is no update of the others (round T)."""
        return [t for t in self._viewed_targets(fdef, "prefix") if last_only and isinstance(t, cst.Attribute)
                and t.attr.value == field_name and self._through_holder(t.value)]

    def _update_nodes(self, fdef: cst.FunctionDef, field_name: str, plan) -> Set[int]:
        """What in fdef updates the captured lengths in place: the field written (through a view) on an object
        read from where the captured ones are kept (a record made here is no graph's: round U), a buffer of self
        the capture made the field a view of, the class's own refresh (`self._graph_metadata.copy_(new)`), or an
        engine kernel handed the field as its output (ENGINE_FIELD_OUTPUTS: sglang 0.5.16's fused metadata)."""
        buffers, last_only = plan
        held = {id(t) for t in self._holder_writes(fdef, field_name, last_only)}
        out = {id(t) for t in self._viewed_targets(fdef, "prefix") if id(t) not in held and (
            isinstance(t, cst.Attribute) and t.attr.value == field_name and self._stored(t.value, set())
            or _is_attr_of_self(t) and t.attr.value in buffers)}
        for call in self.find(cst.Call, None, fdef):
            func = call.func
            if isinstance(func, cst.Attribute) and self._copies_fields(func.attr.value, field_name) \
                    and _a_record(func.value) and self._stored(func.value, set()) \
                    and self._own_record_method(func.value, func.attr.value) and all(
                        i < len(call.args) and self._made_for_batch(call.args[i].value, fdef)
                        for i in self._copied_from(func.attr.value)):
                out.add(id(call))  # (from an object made here: `md.copy_(self._planned)` may be a staged plan, round Y)
            elif isinstance(func, cst.Name) and self._engine_output(call, func, field_name):
                out.add(id(call))
        return out

    def _engine_output(self, call: cst.Call, func: cst.Name, field_name: str) -> bool:
        origin = self._imported_from(func)
        out = ENGINE_FIELD_OUTPUTS.get(origin) if origin else None
        if out is None or self.forked_engine_op(origin[1]):
            return False  # (a fork's own tree of the engine writing the page table only: round AC)
        handed = [a.value for a in call.args if a.keyword is not None and a.keyword.value == out] if isinstance(out, str) \
            else [call.args[out].value] if len(call.args) > out and all(a.keyword is None and not a.star
                                                                         for a in call.args[:out + 1]) else []
        return any(isinstance(v, cst.Attribute) and v.attr.value == field_name and self._stored(v.value, set())
                   for v in handed)

    def _replay_covered(self, fdef: cst.FunctionDef, field_name: str, plan, busy: Optional[Set[int]] = None) -> bool:
        """Does every run of fdef that returns update the captured lengths (replay_paths: every path, round X)?
        A statement updates where it holds an update (_update_nodes) run whenever it is, or calls off self a
        builder (sglang 0.5.16 builds a batch size's record on its first replay, read as a capture) or a method
        of the module whose every run updates them."""
        busy = busy if busy is not None else set()
        key = (id(fdef), field_name)
        memo = self.index("replay-covered", dict)
        if key in memo or id(fdef) in busy:
            return memo.get(key, False)
        busy.add(id(fdef))
        nodes = self._update_nodes(fdef, field_name, plan)

        def updates(small: cst.CSTNode) -> bool:
            for node in self.find((cst.Call, cst.Attribute, cst.Subscript), None, small):
                if id(node) in nodes and (node is small or walker._direct(node, small)):
                    return True
                if isinstance(node, cst.Call) and walker._direct(node, small) and (_super_method(node) or _handed_self(node)) \
                        and self._covering_method(node.func.attr.value, field_name, plan, busy, fdef, via_super=True):
                    return True  # (an override handing on to the base's hook: every other def of the name covers)
                nested = self._nested_def(node, fdef) if isinstance(node, cst.Call) and walker._direct(node, small) else None
                if nested is not None and self._replay_covered(nested, field_name, plan, busy):
                    return True  # (a local def the hook calls: every run of it updates, round AB)
                if not (isinstance(node, cst.Call) and walker._direct(node, small) and self._self_method(node)):
                    continue
                if reach.graph_builder(node.func.attr.value) and isinstance(small, cst.Expr) and small.value is node \
                        and self._then_returns(small) and self._makes_record(node.func.attr.value, field_name) \
                        or self._covering_method(node.func.attr.value, field_name, plan, busy, fdef):
                    return True  # (a builder called as a statement of its own: one handed on is a value, round X)
            return False
        walker = ReplayPaths(self.tree, fdef, updates)
        memo[key] = walker.covers()
        return memo[key]

    def _repoints(self, fdef: cst.FunctionDef, busy: Set[int]) -> bool:
        """Does every run of fdef that returns give the holder (held_attributes) a record: a store of it, a method of
        the module called off self whose every run does, or a builder (reach.graph_builder) called as a statement
        of its own before a bare `return` (sglang 0.5.16's first replay of a size)?"""
        held, memo = self.held_attributes(), self.index("repoints", dict)
        if id(fdef) in memo or id(fdef) in busy:
            return memo.get(id(fdef), False)
        busy.add(id(fdef))
        stores = {id(t) for _, t, _ in self._writes_in(fdef) if _is_attr_of_self(t) and t.attr.value in held}

        def gives(small: cst.CSTNode) -> bool:
            for node in self.find((cst.Call, cst.Attribute), None, small):
                if id(node) in stores:
                    return True
                if not (isinstance(node, cst.Call) and walker._direct(node, small) and self._self_method(node)):
                    continue
                name = node.func.attr.value
                defs = local_defs(self.tree, node.func)
                if reach.graph_builder(name) and isinstance(small, cst.Expr) and small.value is node \
                        and self._then_returns(small) or defs and all(self._repoints(d, busy) for d in defs):
                    return True
            return False
        walker = ReplayPaths(self.tree, fdef, gives)
        memo[id(fdef)] = walker.covers()
        return memo[id(fdef)]

    def _accessor(self, call: cst.Call) -> bool:
        """Is `self.m(...)` a method of the module, nothing may replace, whose body only asserts and returns items read
        off self's tables (`assert bs in self.graph_metadata; return self.graph_metadata[bs]`)?"""
        defs = local_defs(self.tree, call.func)
        return len(defs) == 1 and not unproven_local(self.tree, call.func, self.method_rival) and self._only_reads(defs[0])

    def _only_reads(self, fdef: cst.FunctionDef) -> bool:
        """Does fdef only assert and return items read off self's tables (a record's accessor)?"""
        body = list(fdef.body.body)
        smalls = [x for line in body if isinstance(line, cst.SimpleStatementLine) for x in line.body]
        if len(smalls) != len(body) or not all(isinstance(x, (cst.Assert, cst.Return)) for x in smalls) or self.find(
                cst.Call, None, fdef.body):
            return False  # (a call in an assert runs too)
        returns = [x.value for x in smalls if isinstance(x, cst.Return)]
        return bool(returns) and all(isinstance(r, cst.Subscript) and self._stored(r, set()) for r in returns)

    def _nested_def(self, call: cst.Call, fdef: cst.FunctionDef) -> Optional[cst.FunctionDef]:
        """The def nested in fdef that `name(...)` runs, bound once, undecorated; else None."""
        defs = local_defs(self.tree, call.func) if isinstance(call.func, cst.Name) else []
        if len(defs) != 1 or unproven_local(self.tree, call.func):
            return None
        up = next((a for a in self.tree.ancestors(defs[0]) if isinstance(a, cst.FunctionDef)), None)
        return defs[0] if up is fdef else None

    def _then_returns(self, small: cst.CSTNode) -> bool:
        """Is the statement followed at once by a bare `return` (sglang 0.5.16: `self._build_...(bs, ...)` then
        `return`)? A hook that goes on after a builder may hand the holder what it read before (round AB)."""
        line = next((a for a in self.tree.ancestors(small) if isinstance(a, cst.SimpleStatementLine)), None)
        block = next(iter(self.tree.ancestors(line)), None) if line is not None else None
        body = list(getattr(block, "body", ()))
        after = body[body.index(line) + 1] if line in body and body.index(line) + 1 < len(body) else None
        rest = line.body[line.body.index(small) + 1:] if small in line.body else []
        first = rest[0] if rest else after.body[0] if isinstance(after, cst.SimpleStatementLine) else None
        return isinstance(first, cst.Return) and first.value is None

    def _makes_record(self, name: str, field_name: str) -> bool:
        """Does every method of the module of that name build a record with the field (a keyword of it, a
        construction of a class declaring it)? A helper named like a builder that refreshes only a page table or
        stats is no re-plan (round Z)."""
        defs = [f.node for f in self.functions_named(name) if f.class_name]
        declaring = self._declaring(field_name)

        def makes(d: cst.FunctionDef, depth: int) -> bool:  # (itself, or a method it calls off self: `self._build(...)`)
            return bool(self.find(cst.Arg, lambda a: a.keyword is not None and a.keyword.value == field_name, d)
                        or self.find(cst.Call, lambda c: (dotted(c.func) or "").rsplit(".", 1)[-1] in declaring, d)) \
                or depth < 3 and any(makes(f.node, depth + 1) for c in self.find(cst.Call, self._self_method, d)
                                     for f in self.functions_named(c.func.attr.value) if f.class_name and f.node is not d)
        return bool(defs) and all(makes(d, 0) for d in defs)

    def _declaring(self, field_name: str) -> Set[str]:
        """The classes of the module declaring the field (`dsa_cache_seqlens_int32: torch.Tensor`)."""
        return {c.name.value for c in self.find(cst.ClassDef) if self.find(
            cst.AnnAssign, lambda a: isinstance(a.target, cst.Name) and a.target.value == field_name, c)}

    def _covering_method(self, name: str, field_name: str, plan, busy: Set[int],
                         caller: Optional[cst.FunctionDef] = None, via_super: bool = False) -> bool:
        """Does every def of the module `self.name(...)` (or `super().name(...)`) in caller may run cover, and is
        the one it finds in this module?"""
        defs = [f.node for f in self.functions_named(name) if f.class_name and f.node is not caller]
        owner = next((f.class_name for f in self.facts.functions if f.node is caller), None) if caller else None
        if owner is not None and not self._found_in_module(owner, name, set(), skip_own=via_super):
            return False  # (a base of another file, or none known, comes first: what `self.name` runs is not here)
        if self.method_rival(owner, name):
            return False  # (another file's subclass, mixin or plugin may run another refresh: round AB)
        return bool(defs) and all(self._replay_covered(d, field_name, plan, busy) for d in defs)

    def _class_body_of(self, node: cst.CSTNode) -> Optional[cst.ClassDef]:
        """The class whose body node sits in directly (no def between), or None."""
        for up in self.tree.ancestors(node):
            if isinstance(up, (cst.FunctionDef, cst.Lambda)):
                return None
            if isinstance(up, cst.ClassDef):
                return up
        return None

    def _found_in_module(self, cls_name: str, name: str, seen: Set[str], skip_own: bool = False) -> bool:
        """Does `self.name`, in a method of cls_name, find a def of this module: cls's own, or a module base's
        before any base of another file (round Z: a helper a sibling class defines, the base of another file's
        runs)?"""
        classes = {c.name.value: c for c in self.find(cst.ClassDef)}
        cls = classes.get(cls_name)
        if cls is None or cls_name in seen:
            return False
        seen.add(cls_name)
        bound = [d for d in cls.body.body if isinstance(d, cst.FunctionDef) and d.name.value == name]
        if self.find((cst.AssignTarget, cst.AnnAssign), lambda t: isinstance(getattr(t, "target", None), cst.Name)
                     and t.target.value == name and self._class_body_of(t) is cls, cls):
            return False  # (`_update = _update_page_table` in the class body: the name is that def, round AA)
        if not skip_own and bound:
            return True
        for base in cls.bases:
            here = isinstance(base.value, cst.Name) and base.value.value in classes
            if not here and not (isinstance(base.value, cst.Name) and base.value.value == "object"):
                return False
            if here and self._found_in_module(base.value.value, name, seen):
                return True
        return False

    @staticmethod
    def _self_method(call: cst.Call) -> bool:
        return isinstance(call.func, cst.Attribute) and _is_name(call.func.value, "self")

    def updated_tables(self, field_name: str) -> Set[str]:
        """The attributes of self whose items a method that runs between replays writes the field of in place
        (`md = self.T[bs]; md.field.copy_(...)`, or the class's refresh that copies every field)."""
        def build() -> Set[str]:
            defs = self.graph_update_defs()
            return {t for fdef in defs for x in self._field_targets(fdef, field_name, "prefix")
                    for t in self._tables_of(x.value)} \
                | {t for fdef in defs for c in self.find(cst.Call, lambda c: isinstance(c.func, cst.Attribute), fdef)
                   if self._copies_fields(c.func.attr.value, field_name) and self._own_record_method(c.func.value, c.func.attr.value)
                   for t in self._tables_of(c.func.value)}
        return self.index(f"updated-tables:{field_name}", build)

    def _viewed_targets(self, fdef: cst.FunctionDef, reach: str = "any") -> List[cst.BaseExpression]:
        """What fdef writes into in place, each through the views of it written that reach as much of it as `reach`
        asks (_REACHES); an index by a tensor copies: `field[rows].copy_(v)` writes a temporary, and stays as it is.
        A prefix of the rows is an update of a captured record (sglang 0.5.12's draft-extend replay:
        `field[:seqlens_expanded.shape[0]].copy_(...)`): the rows past it are padding, whose output is discarded
        (stated); `field[1:]`, `field[::2]` are not (round BH). An eager planner's refresh must reach every element
        (its rows past a prefix are real rows, a chunked batch's extend rows or a verify step's tokens: round AL)."""
        out = []
        for target in self._in_place_targets(fdef, reach):
            while isinstance(target, cst.Subscript) and _REACHES[reach](target):
                target = target.value
            out.append(target)
        return out

    def _field_targets(self, fdef: cst.FunctionDef, field_name: str, reach: str = "any") -> List[cst.Attribute]:
        """The `X.field` fdef writes in place (through a view of it reaching as much as `reach` asks)."""
        return [t for t in self._viewed_targets(fdef, reach) if isinstance(t, cst.Attribute)
                and t.attr.value == field_name]

    def _tables_filled(self, capture: cst.FunctionDef) -> Set[str]:
        """The attributes of self a capture keeps new metadata objects in: `self.T[bs] = md` (md made there)."""
        return {_self_root_attr(t.target) for node in self.find(cst.Assign, None, capture) for t in node.targets
                if isinstance(t.target, cst.Subscript) and _self_root_attr(t.target) and self._new_object(node.value)}

    def _tables_of(self, e: cst.BaseExpression) -> Set[str]:
        """{T} where e is `self.T[...]`; for a local, the T of each binding that may reach this read (before it, in no
        branch of an `if` the read is in the other branch of: `md = self.A[bs]` in one mode's branch reaches a write
        there, both modes' bindings reach a write after the `if`)."""
        if isinstance(e, cst.Call) and isinstance(e.func, cst.Attribute) and e.func.attr.value == "get" \
                and len(e.args) == 1 and _is_attr_of_self(e.func.value):
            return {e.func.value.attr.value}  # `self.T.get(bs)`, as `self.T[bs]`
        if isinstance(e, cst.Call) and self._self_method(e) and self._accessor(e):  # (what its returns read)
            return {t for d in local_defs(self.tree, e.func) for r in self.find(cst.Return, None, d)
                    for t in self._tables_of(r.value)}
        if isinstance(e, cst.Subscript):
            return {_self_root_attr(e)} if _self_root_attr(e) and not _is_attr_of_self(e) else set()
        if not isinstance(e, cst.Name):
            return set()
        order, out = self.tree.order, set()
        for a in self.tree.binding(e, e.value).assignments:
            stmt = self.tree.assignment_statement(a)  # (`md: DSAMetadata = self.T[bs]` too: sglang 0.5.16)
            if isinstance(stmt, (cst.Assign, cst.AnnAssign)) and stmt.value is not None and \
                    order[id(stmt)] < order[id(e)] and not self._other_branch(stmt, e):
                out |= self._tables_of(stmt.value) if not isinstance(stmt.value, cst.Name) else set()
        return out

    def _other_branch(self, a: cst.CSTNode, b: cst.CSTNode) -> bool:
        """Do a and b sit in different branches of one `if` (its body, its `else`/`elif`)?"""
        mine = [a, *self.tree.ancestors(a)]
        theirs = {id(x) for x in self.tree.ancestors(b)}
        for i, x in enumerate(mine):
            if id(x) in theirs:
                if not isinstance(x, cst.If) or i == 0:
                    return False
                other = next((y for y in [b, *self.tree.ancestors(b)] if self.tree.parent.get(y) is x), None)
                return other is not None and other is not mine[i - 1] and other is not x.test and mine[i - 1] is not x.test
        return False

    def _stores_new_in_holder(self, capture: cst.FunctionDef) -> bool:
        """Does the capture give the holder (`self.forward_metadata`) a new object: a constructor's call, or a
        local bound to one?"""
        held = self.held_attributes()
        return any(_is_attr_of_self(t.target) and t.target.attr.value in held and self._new_object(node.value)
                   for node in self.find(cst.Assign, None, capture) for t in node.targets)

    def _through_holder(self, e: cst.BaseExpression) -> bool:
        """`self.forward_metadata` (the holder), or a local bound to it on every binding."""
        held = self.held_attributes()
        if _is_attr_of_self(e):
            return e.attr.value in held
        if not isinstance(e, cst.Name):
            return False
        values = [getattr(self.tree.assignment_statement(a), "value", None) for a in self.tree.binding(e, e.value).assignments]
        return bool(values) and all(_is_attr_of_self(v) and v.attr.value in held for v in values)

    def _copies_fields(self, method: str, field_name: str) -> bool:
        """Does every class of this module that defines `method` (and one does) write the field in place there:
        `self.field.copy_(other.field)`, or `getattr(self, f.name).copy_(...)` in a loop over `fields(self)` (the
        bundled example's `DSAMetadata.copy_`)?"""
        defs = self._method_defs(method)
        return bool(defs) and all(self._writes_each_field(d, field_name) for d in defs)

    def _method_defs(self, method: str) -> Optional[List[cst.FunctionDef]]:
        """Every def `record.method(...)` may run: the classes' defs of that name, and each module def stored on a
        class as that name (round BA: `DSAMetadata.copy_ = _copy_pages_fused` at import, under a build flag); None
        where some store of the name, anywhere in the module, is not such a def (an instance's, a decorator's `cls`)."""
        def build() -> Optional[List[cst.FunctionDef]]:
            installed = [self._installed_def(node, target, value) for node, target, value in self._writes_in(None)
                         if isinstance(target, cst.Attribute) and target.attr.value == method]
            if None in installed or self._name_unknown_store(method):
                return None
            return [f.node for f in self.functions_named(method) if f.class_name] + installed
        return self.index(f"method-defs:{method}", build)

    def _installed_def(self, node: cst.CSTNode, target: cst.Attribute,
                       value: Optional[cst.BaseExpression]) -> Optional[cst.FunctionDef]:
        """`Cls.m = d` (Cls a class of the module, d a module def bound once, undecorated): d; else None."""
        cls = self.tree.binding(target.value, target.value.value).assignments if isinstance(target.value, cst.Name) else ()
        if not (len(cls) == 1 and isinstance(getattr(cls[0], "node", None), cst.ClassDef)
                and self.tree.parent.get(cls[0].node) is self.tree.module and isinstance(node, (cst.Assign, cst.AnnAssign))
                and isinstance(value, cst.Name)):
            return None
        defs = local_defs(self.tree, value)
        ok = len(defs) == 1 and not self.tree.is_method(defs[0]) and not unproven_local(self.tree, value, self.method_rival)
        return defs[0] if ok else None

    def _name_unknown_store(self, method: str) -> bool:
        """A store that may bind the name that _installed_def does not read: `del X.m`, `X.m += f`, a setattr of the
        name or of a name that is not a literal (round BA)."""
        def named(t: cst.BaseExpression) -> bool:
            return isinstance(t, cst.Attribute) and t.attr.value == method

        def setattr_of(c: cst.Call) -> bool:
            names = [a.value.evaluated_value for a in c.args[:3] if isinstance(a.value, cst.SimpleString)]
            return (get_full_name_for_node(c.func) in ("setattr", "builtins.setattr") or isinstance(
                c.func, cst.Attribute) and c.func.attr.value == "__setattr__") and (not names or method in names)
        return bool(self.find(cst.Del, lambda d: any(map(named, bound_targets(d.target))))) or bool(self.find(
            cst.AugAssign, lambda a: named(a.target))) or bool(self.find(cst.Call, setattr_of))

    def _own_record_method(self, record: cst.BaseExpression, method: str) -> bool:
        """Is `record.method` a def of this module: is record made only by classes of this module that find it here
        (_copies_fields reads the module's defs by name; a record of another file's class runs that file's: round AZ)?"""
        classes = self._record_classes(record, set())
        return classes is not None and all(self._found_in_module(c, method, set()) and self._sealed(c, method)
                                           for c in classes)

    def _sealed(self, cls_name: str, method: str) -> bool:
        """Does no class decorator or keyword of cls_name (or of a module base) and no other file (a subclass's
        override, a store of the name) give cls_name's records another `method` than the module's defs (round BA)?"""
        tree_cls = next((c for c in self.find(cst.ClassDef) if c.name.value == cls_name), None)
        for c in [tree_cls, *(_module_bases(self.tree, tree_cls) if tree_cls is not None else [])]:
            if c is not None and (any(k.keyword is not None for k in c.keywords) or not all(
                    self._library_plain(d.decorator) for d in c.decorators)):
                return False
        return not self.method_rival(cls_name, method)

    def _library_plain(self, decorator: cst.BaseExpression) -> bool:
        """`@dataclass(...)`, `@functools.total_ordering`: a plain class decorator imported from the standard library
        (a def of the module spelled `dataclass` may install a method: round BA)."""
        e = decorator.func if isinstance(decorator, cst.Call) else decorator
        root = e
        while isinstance(root, cst.Attribute):
            root = root.value
        if not isinstance(root, cst.Name):
            return False
        found = self.tree.binding(root, root.value).assignments
        node = getattr(found[0], "node", None) if len(found) == 1 else None
        origin = self._imported_from(e) if isinstance(e, cst.Name) else (
            (dotted(e.value) or "", e.attr.value) if isinstance(node, cst.Import) else None)
        return origin is not None and origin[0] in _PLAIN_DECORATOR_MODULES and origin[1] in reach.PLAIN_CLASS_DECORATORS

    def _record_classes(self, e: cst.BaseExpression, seen: Set[int]) -> Optional[Set[str]]:
        """The classes of this module whose constructors may make e (None stands for no object); None where e may be
        anything else (another file's class, a parameter, a value not followed)."""
        if id(e) in seen:
            return set()
        seen.add(id(e))
        if _is_name(e, "None") or isinstance(e, (cst.Dict, cst.List)) and not e.elements:
            return set()  # (no record, or a table made empty)
        if isinstance(e, cst.Call) and isinstance(e.func, cst.Attribute) and e.func.attr.value == "get" \
                and len(e.args) == 1:
            e = e.func.value  # (`self.T.get(bs)`: an item of the table)
        root = _self_root_attr(e) if isinstance(e, (cst.Attribute, cst.Subscript)) else None
        if root is not None and (_is_attr_of_self(e) or isinstance(e, cst.Subscript)):
            return self._stored_classes(root, seen)
        if isinstance(e, cst.DictComp):
            return self._record_classes(e.value, seen)
        if isinstance(e, cst.Call):
            return self._made_classes(e, seen)
        if isinstance(e, cst.Name):
            stmts = [self.tree.assignment_statement(a) for a in self.tree.binding(e, e.value).assignments]
            return self._union([getattr(x, "value", None) for x in stmts], seen) if stmts else None
        return None

    def _made_classes(self, call: cst.Call, seen: Set[int]) -> Optional[Set[str]]:
        """A constructor's call of a class this module defines (its name bound to that class only), or a def of the
        module returning records: what it makes."""
        if isinstance(call.func, cst.Name) and call.func.value[:1].isupper():
            found = self.tree.binding(call.func, call.func.value).assignments
            own = len(found) == 1 and isinstance(getattr(found[0], "node", None), cst.ClassDef) \
                and self.tree.parent.get(found[0].node) is self.tree.module
            return {call.func.value} if own else None
        defs = local_defs(self.tree, call.func)
        if not defs or unproven_local(self.tree, call.func, self.method_rival):
            return None
        return self._union([r.value for d in defs for r in self.find(cst.Return, None, d)], seen)

    def _stored_classes(self, attr: str, seen: Set[int]) -> Optional[Set[str]]:
        """What the module stores in `self.attr` (or its items): each value assigned; None where it is filled another
        way (`self.attr.update(...)`, a `setattr`, an augmented assignment)."""
        values: List[Optional[cst.BaseExpression]] = []
        for t in self.find((cst.AssignTarget, cst.AnnAssign, cst.AugAssign),
                           lambda t: _self_root_attr(t.target) == attr and isinstance(t.target, (cst.Attribute, cst.Subscript))):
            if isinstance(t, cst.AssignTarget):
                values.append(self.tree.parent.get(t).value)
            elif isinstance(t, cst.AnnAssign):
                values.append(t.value if t.value is not None else cst.Name("None"))
            else:
                return None
        if self.find(cst.Call, lambda c: isinstance(c.func, cst.Attribute) and c.func.attr.value in _ITEM_WRITES
                     and _self_root_attr(c.func.value) == attr) or \
                self.find(cst.Call, lambda c: get_full_name_for_node(c.func) == "setattr" and len(c.args) > 1 and _is_name(
                    c.args[0].value, "self") and getattr(c.args[1].value, "evaluated_value", attr) == attr):
            return None
        return self._union(values, seen)

    def _union(self, values: List[Optional[cst.BaseExpression]], seen: Set[int]) -> Optional[Set[str]]:
        out: Set[str] = set()
        for v in values:
            got = self._record_classes(v, seen) if v is not None else None
            if got is None:
                return None
            out |= got
        return out

    def _copied_from(self, method: str) -> Set[int]:
        """The places (after self) of the parameters whose fields the class's `method` copies in (`other` in
        `getattr(self, f.name).copy_(getattr(other, f.name))`): what is handed there must be made for this batch."""
        out = set()
        named = [f.node for f in self.functions_named(method)]
        for d in named + [d for d in self._method_defs(method) or () if all(d is not n for n in named)]:  # (round BA)
            params = [p.name.value for p in d.params.params][1:]
            for call in self.find(cst.Call, lambda c: isinstance(c.func, cst.Attribute) and c.func.attr.value == "copy_",
                                  d):
                out |= {i for i, p in enumerate(params) if any(map(_read_off(p), self.find((cst.Attribute, cst.Call), None, call)))}
        return out

    def _writes_each_field(self, fdef: cst.FunctionDef, field_name: str) -> bool:
        for target in self._in_place_targets(fdef):
            if isinstance(target, cst.Attribute) and target.attr.value == field_name and _is_attr_of_self(target):
                if self._always_runs(target, fdef, None) and self._copied_from_handed(fdef, target):
                    return True
            if isinstance(target, cst.Call) and get_full_name_for_node(target.func) == "getattr" and target.args and \
                    _is_name(target.args[0].value, "self"):
                loop = next((a for a in self.tree.ancestors(target) if isinstance(a, cst.For)), None)
                over = loop.iter if loop is not None else None
                if isinstance(over, cst.Call) and get_full_name_for_node(over.func) in ("fields", "dataclasses.fields") \
                        and over.args and _is_name(over.args[0].value, "self") and self._always_runs(target, fdef, loop) \
                        and self._declares(fdef, field_name) and self._copies_other(fdef, target):
                    return True
        return False

    def _copied_from_handed(self, fdef: cst.FunctionDef, target: cst.Attribute) -> bool:
        """`self.field.copy_(v)`: is v read off a parameter fdef never binds again (round AD: `src = other if ... else
        self` copies the record's own lengths back)? Another in-place write is read as before."""
        call = self.tree.parent.get(self.tree.parent.get(target))
        if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and call.func.value is target
                and call.func.attr.value == "copy_" and call.args):
            return True
        value = call.args[0].value
        return isinstance(value, cst.Attribute) and self._handed(fdef, value.value)

    def _handed(self, fdef: cst.FunctionDef, e: cst.BaseExpression) -> bool:
        """Is e a parameter of fdef (after self) that fdef never binds again: the object as handed, on every path?"""
        params = [p.name.value for p in fdef.params.params][1:]
        return isinstance(e, cst.Name) and e.value in params and len(self.tree.binding(e, e.value).assignments) == 1

    def _declares(self, fdef: cst.FunctionDef, field_name: str) -> bool:
        """Does fdef's class declare the field (`dsa_cache_seqlens_int32: torch.Tensor`), so `fields(self)` yields it
        (one attached after construction is no field: round AC)?"""
        cls = next((a for a in self.tree.ancestors(fdef) if isinstance(a, cst.ClassDef)), None)
        return cls is not None and cls.name.value in self._declaring(field_name)

    def _copies_other(self, fdef: cst.FunctionDef, target: cst.Call) -> bool:
        """Is `getattr(self, f.name).copy_(v)`'s v `getattr(other, f.name)` itself, with no default (one of self's own
        copies a record onto itself where the other lacks the field: round AC), other the parameter as handed (`src =
        other if ... else self` may be the record itself: round AZ)?"""
        up = next(iter(self.tree.ancestors(target)), None)
        call = next(iter(self.tree.ancestors(up)), None) if isinstance(up, cst.Attribute) else None
        given = call.args[0].value if isinstance(call, cst.Call) and len(call.args) == 1 else None
        return isinstance(given, cst.Call) and get_full_name_for_node(given.func) == "getattr" and len(given.args) == 2 \
            and self._handed(fdef, given.args[0].value) and len(target.args) == 2 \
            and _code(given.args[1].value) == _code(target.args[1].value)

    def _always_runs(self, write: cst.CSTNode, fdef: cst.FunctionDef, loop: Optional[cst.For]) -> bool:
        """Does the write run on every path through fdef (for every field, in `loop`): under no branch but that loop
        (`if f.name in GRAPH_INPUTS:`, round X), after no statement that leaves early, and in the loop beside none
        that leaves it (a `continue` past some fields, a `return` on a wider table: round AB)?"""
        if any(isinstance(a, _BRANCHING) and a is not loop for a in self._between(write, fdef)):
            return False
        order = self.tree.order
        for leave in self.find((cst.Return, cst.Raise, cst.Continue, cst.Break), None, fdef):
            if loop is not None and self.tree.inside(leave, loop) or order[id(leave)] < order[id(write)] and \
                    not self.tree.inside(write, leave):
                return False
        return True

    def _between(self, node: cst.CSTNode, top: cst.CSTNode) -> List[cst.CSTNode]:
        """The ancestors of node below top."""
        out = []
        for up in self.tree.ancestors(node):
            if up is top:
                break
            out.append(up)
        return out

    def _field_set(self, field_name: str) -> bool:
        """Does this module give the field a value at all (a keyword, an attribute assignment, a positional
        construction of a class of the module declaring it: round Y)?"""
        declaring = self._declaring(field_name)
        return bool(self.find(cst.Arg, lambda a: a.keyword is not None and a.keyword.value == field_name)) or any(
            not isinstance(t, cst.AugAssign) for t in self.targets_named(field_name)) or bool(self.find(
                cst.Call, lambda c: (dotted(c.func) or "").rsplit(".", 1)[-1] in declaring and any(
                    a.keyword is None for a in c.args)))

    def _in_place_targets(self, fdef: cst.FunctionDef, reach: str = "any") -> List[cst.BaseExpression]:
        """What fdef writes into in place: the receiver of a trailing-underscore method (`x.copy_(v)`) and the
        value of a subscript assigned (`x[rows] = v`; past "any", only of an index reaching as much as `reach` asks:
        `x[:n] = v` a prefix, `x[:] = v` every element)."""
        out: List[cst.BaseExpression] = [c.func.value for c in self.find(cst.Call, lambda c: isinstance(
            c.func, cst.Attribute) and c.func.attr.value.endswith("_") and not c.func.attr.value.startswith("_"), fdef)
            if get_full_name_for_node(c.func) != "torch.Tensor.copy_"]
        out += [c.args[0].value for c in self.find(cst.Call, lambda c: get_full_name_for_node(c.func) == "torch.Tensor.copy_"
                                                   and len(c.args) == 2, fdef)]  # the functional spelling (round V)
        for node in self.find((cst.Assign, cst.AugAssign), None, fdef):
            targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
            out += [t.value if reach == "any" or _REACHES[reach](t) else t for t in targets if isinstance(t, cst.Subscript)]
        return out

    def _writes_in(self, fdef: cst.FunctionDef):
        """(node, target, value or None where it is not known) for each attribute or item fdef assigns: `x.a = v`,
        `x.a: T = v`, each part of `x.a, y = v, w` (round O), and a literal `setattr(self, "a", v)`."""
        for node in self.find((cst.Assign, cst.AnnAssign), None, fdef):
            targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
            for t in targets:
                if isinstance(t, (cst.Attribute, cst.Subscript)):
                    yield node, t, node.value
                elif isinstance(t, (cst.Tuple, cst.List)):
                    values = node.value.elements if isinstance(node.value, (cst.Tuple, cst.List)) else None
                    for i, el in enumerate(t.elements):
                        if isinstance(el.value, (cst.Attribute, cst.Subscript)):
                            paired = values is not None and len(values) == len(t.elements)
                            yield node, el.value, values[i].value if paired else None
        for call in self.find(cst.Call, None, fdef):
            args = [a.value for a in call.args]
            func = call.func
            if isinstance(func, cst.Attribute) and func.attr.value == "__setattr__" and len(args) == 2:
                receiver = cst.Name("self") if isinstance(func.value, cst.Call) and get_full_name_for_node(
                    func.value.func) == "super" else func.value
                args = [receiver, *args]  # `self.__setattr__("a", v)`, `super().__setattr__("a", v)`: round P
            elif get_full_name_for_node(func) not in ("setattr", "object.__setattr__", "builtins.setattr"):
                if isinstance(func, cst.Attribute) and func.attr.value in _ITEM_WRITES and _self_root_attr(func.value):
                    yield call, _any_item(func.value), None  # `self.graph_metadata.update({bs: md})`: round P
                elif get_full_name_for_node(func) == "operator.setitem" and args and _self_root_attr(args[0]):
                    yield call, _any_item(args[0]), None
                continue
            if len(args) == 3 and isinstance(args[1], cst.SimpleString):
                yield call, cst.Attribute(value=args[0], attr=cst.Name(args[1].evaluated_value)), args[2]
        for node in self.find((cst.For, cst.WithItem, cst.NamedExpr), None, fdef):
            target = node.target if isinstance(node, (cst.For, cst.NamedExpr)) else (node.asname.name if node.asname else None)
            for t in bound_targets(target):  # `for self.forward_metadata in ...`: round P
                if isinstance(t, (cst.Attribute, cst.Subscript)):
                    yield node, t, None

    def _holder_sources(self, held: Set[str]) -> Set[str]:
        """The attributes of self the holder is given back from (`self.forward_metadata = self.graph_metadata[bs]`,
        `= self._pending`): replacing what they hold replaces the metadata too."""
        out = set()
        for target in self.find(cst.AssignTarget, _targets_attribute):
            stmt = self.tree.parent.get(target)
            if _is_attr_of_self(target.target) and target.target.attr.value in held and isinstance(stmt, cst.Assign):
                root = _self_root_attr(stmt.value)
                if root:
                    out.add(root)
        return out

    def graph_update_defs(self) -> List[cst.FunctionDef]:
        """The defs that may run between a graph's replays: reach.graph_update's, and what they call as
        `self.name(...)` (transitively), less a capture or a builder (which make the objects a graph keeps)."""
        def build() -> List[cst.FunctionDef]:
            todo = list(self.find(cst.FunctionDef, lambda f: reach.graph_update(f.name.value)))
            classes = {c.name.value for c in self.find(cst.ClassDef)}
            seen: Dict[int, cst.FunctionDef] = {}
            while todo:
                fdef = todo.pop()
                if id(fdef) in seen:
                    continue
                seen[id(fdef)] = fdef
                # every method read off self or a class of the module, called or not (`step = self._refresh`,
                # `Backend._refresh(self, ...)`: round P)
                for read in self.find(cst.Attribute, lambda a: isinstance(a.value, cst.Name) and (
                        a.value.value == "self" or a.value.value in classes) or isinstance(a.value, cst.Call) and
                        get_full_name_for_node(a.value.func) == "super", fdef):  # `super().m(...)` too (round Q)
                    name = read.attr.value  # (a builder it calls is read as a capture: sglang 0.5.16 builds on a
                    if not reach.graph_builder(name):  # batch size's first use; round S's u_graph_replay_calls_builder)
                        todo += [f.node for f in self.functions_named(name) if f.class_name]
            return list(seen.values())
        return self.index("graph_update_defs", build)

    def held_attributes(self) -> Set[str]:
        """The attributes of self the kernel's callers read the metadata from (`metadata = self.forward_metadata`)."""
        def build() -> Set[str]:
            roots = {expr.split(".")[0] for expr in self.metadata}
            def read_into_root(a) -> bool:  # `metadata = self.X`, `metadata: T = self.X` (round Y); off a backend
                target = a.targets[0].target if isinstance(a, cst.Assign) and len(a.targets) == 1 else \
                    getattr(a, "target", None)  # handed to a module function (`backend.X`: the holder's name, AD)
                return isinstance(target, cst.Name) and target.value in roots and a.value is not None \
                    and isinstance(a.value, cst.Attribute) and isinstance(a.value.value, cst.Name)
            return {a.value.attr.value for a in self.find((cst.Assign, cst.AnnAssign), read_into_root)} \
                | self._passed_as(roots)
        return self.index("held", build)

    def _passed_as(self, roots: Set[str]) -> Set[str]:
        """The attributes of self passed to a def of the module as a parameter named like the metadata's root
        (`self.forward(q, ..., self.decode_metadata)` into `def forward(..., metadata)`: round T)."""
        out = set()
        for call in self.find(cst.Call, lambda c: any(_is_attr_of_self(a.value) or isinstance(a.value, cst.Name)
                                                      for a in c.args)):
            name = (dotted(call.func) or "").rsplit(".", 1)[-1]
            for f in self.functions_named(name) if name else ():
                params = [p.name.value for p in f.node.params.params]
                params = params[1:] if f.class_name and params[:1] == ["self"] and isinstance(call.func, cst.Attribute) \
                    else params
                for i, arg in enumerate(call.args):
                    param = arg.keyword.value if arg.keyword is not None else params[i] if i < len(params) else None
                    read = self._held_read(arg.value) if param in roots else None  # (a local's binding is read
                    if read is not None:  # only where it lands in the metadata's parameter: the bodies stay unwalked)
                        out.add(read)
        return out

    def _held_read(self, e: cst.BaseExpression) -> Optional[str]:
        """The attribute of self `e` reads: `self.X`, or a local bound only to it (`md = self.forward_metadata`,
        handed on as `metadata=md`: round AD)."""
        if isinstance(e, cst.Name) and e.value != "self":
            values = self.tree.assigned_values(e, e.value)
            e = values[0] if len(values) == 1 and values[0] is not None else e
        return e.attr.value if _is_attr_of_self(e) else None

    def _replaced(self, fdef: cst.FunctionDef, at: cst.CSTNode, what: str) -> str:
        return (f"`{fdef.name.value}` gives {what} at line {self.tree.line(at)} on CUDA-graph replay, while a captured "
                "graph keeps reading the tensors it was captured with; update them in place (copy_) first")

    def _stored(self, e: cst.BaseExpression, seen: set) -> bool:
        """An object read from where the captured metadata is kept (`self.graph_metadata[bs]`), not made (nor read
        off a call's result: `self._plan(seq_lens).metadata` is a new object's, round O)."""
        if isinstance(e, cst.Call) and isinstance(e.func, cst.Attribute) and e.func.attr.value == "get" \
                and len(e.args) == 1 and isinstance(e.func.value, (cst.Attribute, cst.Subscript)):
            e = e.func.value  # `self.graph_metadata.get(bs)`: an item of the table, as `[bs]` reads it (round W)
        if isinstance(e, (cst.Subscript, cst.Attribute)):
            while isinstance(e, (cst.Subscript, cst.Attribute)):
                e = e.value
            if not isinstance(e, cst.Name):
                return False  # (a call's result, or any other computed object)
            return e.value == "self" or self._stored(e, seen)
        if isinstance(e, cst.Call) and self._self_method(e) and not e.args[1:] and self._accessor(e):
            return True  # (`self._graph_record(bs)` returning `self.graph_metadata[bs]`: round AB)
        if isinstance(e, cst.Name):
            if e.value == "None":
                return True
            for a in self.tree.binding(e, e.value).assignments:
                if id(a) in seen:
                    continue
                seen.add(id(a))
                stmt = self.tree.assignment_statement(a)
                if stmt is None or not self._stored(stmt.value, seen):
                    return False
            return True
        return False
