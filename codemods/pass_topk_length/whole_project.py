"""docs/soundness.md `whole-project`: no other file of the project (read by reach.py) defeats the rewrite:
no override or rival of the helper, no replacement of the kernel, of what it is read through or of the
methods the rows are taken from, no write of the field that is not clipped or that replaces a captured tensor."""
from __future__ import annotations

import ast
import os
from typing import List, Optional, Set, Tuple

import libcst as cst
from libcst.helpers import get_full_name_for_node

from topk_migrate.cst.resolve import CallInfo, Function

from . import callers, class_escape, engine_defs, reach
from .field_meaning import CLIP_HOW, CLIPPED_FIELDS, ENGINE_HOMES, _clipped_elsewhere
from .indexes import _text
from .quick import PARAM
from .rows import Hooks, _instance_param, index_hazard, row_hazard
from .syntax import _argument_for, _brief, _code, _is_name, constructor_call, only_handed_on

# Attributes whose write changes what a read of a module or function gives without naming it: a module's
# class (its `__getattribute__`), a function's code and defaults.
_OBJECT_DUNDERS = {"__class__", "__code__", "__defaults__", "__kwdefaults__", "__call__"}


def _read_chain(c: CallInfo) -> Set[str]:
    """Every name the call reads the kernel through: each part of its resolved dotted name (`sgl_kernel`,
    `flash_mla`, the kernel's) and the name the module binds it to (`fm`, an alias, `self.fm`'s `fm`). A write
    of any of them (or of _OBJECT_DUNDERS) on an object the call reads through may replace the kernel."""
    spelled = []
    expr = c.node.func
    while isinstance(expr, cst.Attribute):
        spelled.append(expr.attr.value)
        expr = expr.value
    if isinstance(expr, cst.Name):
        spelled.append(expr.value)
    return (set(c.callee.split(".")) | set(spelled)) - {"self", "cls", ""}


def _packages(module: str) -> List[str]:
    """`a.b.c` -> [`a`, `a.b`]: the packages a module is an attribute of."""
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def _handed(batch: cst.FunctionDef, call: cst.Call, p: str, positional: List[str], shift: int) -> List[cst.BaseExpression]:
    """What a call of batch hands its parameter p: the keyword or positional argument; for its `*args`, every
    positional argument past the named ones; for its `**kwargs`, every keyword naming no parameter (round S)."""
    params = batch.params
    if isinstance(params.star_arg, cst.Param) and params.star_arg.name.value == p:
        return [a.value for a in call.args if not a.keyword][max(0, len(positional) - shift):]
    if isinstance(params.star_kwarg, cst.Param) and params.star_kwarg.name.value == p:
        named = set(positional) | {k.name.value for k in params.kwonly_params}
        return [a.value for a in call.args if a.keyword and a.keyword.value not in named]
    arg = _argument_for(call, p, positional.index(p) if p in positional else None, shift)
    return [] if arg is None else [arg]


def _takes(fn: cst.Lambda) -> bool:
    p = fn.params
    return bool(p.params or p.posonly_params or p.kwonly_params or isinstance(p.star_arg, cst.Param) or p.star_kwarg)


def _recast_while_made(f, value: ast.AST, field_name: str) -> bool:
    """`self.field.to(torch.int32)` in the `__post_init__` (or `__init__`) of the object being made (a frozen record
    normalising its dtype, round S): the value every construction gave it, which field_writes judges, recast."""
    while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and (
            value.func.attr in ("int", "contiguous", "clone") and not value.args and not value.keywords
            or value.func.attr == "to" and [reach._unparse(a) for a in [*value.args, *(k.value for k in value.keywords)]]
            == ["torch.int32"]):
        value = value.func.value
    return isinstance(value, ast.Attribute) and value.attr == field_name and reach.constructed(f, value.value)


class WholeProject:
    """docs/soundness.md `whole-project` (a mixin of analysis._Analysis)."""

    def whole_project(self, c: CallInfo, fn: Optional[Function]) -> Optional[str]:
        """What another file of the project does that makes the rewrite wrong, or None: an override of the
        helper in a subclass (any package) that does not take topk_length (or hands `**kwargs` to
        super() changed), an assignment or setattr of the helper or of the kernel's name on a receiver that
        may be its class or module, a reflective write that may reach them. Asked only of a site that is
        otherwise fixable."""
        owner = fn or c.function
        key = f"whole:{c.callee}:{id(fn)}:{owner.class_name if owner is not None else ''}"
        return self.index(key, lambda: self._whole_project(c, fn))  # the same for every call of one callee and helper

    def _whole_project(self, c: CallInfo, fn: Optional[Function]) -> Optional[str]:
        proj = self.project()
        owner = fn or c.function  # the helper, or (direct) the function that calls the kernel
        seeds = set(self.subclasses(owner.class_name)) if owner is not None and owner.class_name else set()
        if fn is not None and fn.class_name:
            for f, cls, d in proj.overrides(seeds, fn.name):
                where = f"{proj.rel(f.path)}:{d.lineno}"
                if not isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    return (f"{cls.name}.{fn.name} is assigned in the class body at {where}: callers may reach "
                            f"another function than {fn.qualname}; add topk_length by hand")
                a = d.args
                if PARAM in {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs}:
                    if only_handed_on(d, PARAM):
                        continue
                    return (f"{cls.name}.{fn.name} at {where} overrides {fn.qualname} and already takes `{PARAM}`, which "
                            "it reads other than by handing it on as `topk_length=topk_length`: its meaning there is "
                            "unknown (round S); pass topk_length by hand")
                if a.kwarg is None:
                    return (f"{cls.name}.{fn.name} at {where} overrides {fn.qualname} without topk_length; "
                            "add the parameter there too (passing it on to super())")
                _, what = reach.forwarded_call(d, fn.name)
                if what:
                    return (f"{cls.name}.{fn.name} at {where} overrides {fn.qualname} and takes **kwargs, but {what}: "
                            "the topk_length it hands on may not fit the rows it passes; give it an explicit "
                            "topk_length parameter and pass what fits")
        if fn is not None and fn.class_name:
            for f, cls, d in proj.rivals(seeds, fn.name, (proj.checked_file(self.source), fn.class_name)):
                return (f"{cls.name}.{fn.name} at {proj.rel(f.path)}:{d.lineno} is defined by another base of a "
                        f"subclass of {fn.class_name}, so calls on its instances may reach it instead of {fn.qualname}; "
                        "add topk_length there too")
        why = self._kernel_rebound(c, seeds, {fn.name} if fn is not None else set()) \
            or self._rows_source_replaced(proj, [k.function for k in self.callers(fn)] if fn is not None else [c.function])
        if why:
            return why
        for w in proj.attribute_writes({fn.name, "__bases__"}, seeds, set()) if fn is not None else ():  # (round T)
            return (f"{w.what} at {w.where()}: callers may reach another function than {fn.qualname}; "
                    "add topk_length by hand once every replacement takes it")
        for f, node in proj.value_reads(fn.name, seeds) if fn is not None and fn.class_name else ():
            return (f"{proj.rel(f.path)}:{node.lineno} takes `{reach._unparse(node)[:60]}` as a value: what calls it, with "
                    "which keywords (a dispatcher filtering a shared context by the signature), is not seen, and the "
                    "new parameter changes what it takes (round T); pass topk_length by hand")
        for f, node in reach.spelled_as_string(proj, fn.name) if fn is not None and fn.class_name else ():
            return (f"{proj.rel(f.path)}:{node.lineno} spells `{fn.name}` as a string, which a setattr by that name (in a "
                    f"utility it is handed to) may replace on an instance: callers may reach another function than "
                    f"{fn.qualname}; add topk_length by hand once every replacement takes it (round T)")
        if seeds:
            held = self.held_attributes()
            related = proj.subclasses(seeds) + proj.ancestors(seeds)
            w = reach.served_holder(proj, related, held)
            if w is not None:
                return (f"{w.what} at {w.where()}: which batch's metadata the callers read from it is not proven; "
                        "pass topk_length by hand")
            why = self._base_setters(proj, proj.ancestors(seeds), held)
            if why:
                return why
            for field_name in sorted({m.rsplit(".", 1)[-1] for m in self.metadata}):
                w = reach.replay_writes(proj, related, field_name, held)
                if w is not None:
                    return (f"{w.what} at {w.where()} on CUDA-graph replay, while a captured graph keeps reading "
                            "the tensors it was captured with; update them in place (copy_) first")
                subclasses = proj.subclasses(seeds)  # (the proof's methods read only where another file derives)
                kept = self.graph_state() if subclasses else set()
                w = reach.metadata_overrides(proj, subclasses, self.relied_methods(seeds, field_name, kept),
                                             kept) if subclasses else None
                if w is not None:
                    return (f"{w.what} at {w.where()}: its instances' metadata (which record the holder gets, whether "
                            "a replay updates it) is not what this module's proof read (round Z); make it a hand-on to "
                            "`super()`, or pass topk_length by hand")
        why = self._clipped_fields_written(proj)
        if why:
            return why
        for field_name in sorted({m.rsplit(".", 1)[-1] for m in self.metadata}):
            for f, cls in reach.pooled_holders(proj, field_name, proj.checked_file(self.source)):
                return (f"{proj.rel(f.path)}:{cls.lineno}: `{cls.name}` holds `{field_name}`, and its construction may "
                        "hand back an object it made before (`__new__`, a metaclass or a base): two batches', or a "
                        "captured graph's and the eager path's, metadata may be one object, each construction giving "
                        "the other's lengths; make a new object each time, or pass topk_length by hand")
            for f, node, value in reach.field_writes(proj, field_name, proj.checked_file(self.source)):
                receiver = reach.new_tensor_receiver(node, field_name)  # `x.field = v`, not `field=x.y`
                if receiver is not None and not reach.constructed(f, receiver) or isinstance(value, ast.AugAssign):
                    obj = reach._unparse(receiver if receiver is not None else node)
                    return (f"{proj.rel(f.path)}:{getattr(node, 'lineno', 0)} gives `{obj}.{field_name}` a new tensor, "
                            f"and `{obj}` may be metadata a CUDA graph was captured with, which keeps reading the tensor "
                            f"it held; update it in place (`.copy_(...)`), or pass topk_length by hand")
                if value is None and isinstance(node, ast.Constant):
                    return (f"{proj.rel(f.path)}:{getattr(node, 'lineno', 0)} spells `{field_name}` as a string, which "
                            "code may set it by (a setattr loop over a mapping of overrides): the value it gets is not "
                            f"provably the seqlens clipped to the top-k width ({CLIP_HOW}) nor updated in place; write "
                            "the field plainly, or pass topk_length by hand")
                if value is None and reach.unread_construction(f, node, field_name):
                    return (f"{proj.rel(f.path)}:{getattr(node, 'lineno', 0)} builds a class that declares "
                            f"`{field_name}` in a way whose arguments are not read (`{reach._unparse(node)[:80]}`): "
                            "where a positional argument lands is not known; build it by keyword, or pass "
                            "topk_length by hand")
                if value is None:
                    return (f"{proj.rel(f.path)}:{getattr(node, 'lineno', 0)} changes `{field_name}` in place "
                            f"(`{reach._unparse(node)[:80]}`): the lengths it leaves are not provably the seqlens "
                            f"clipped to the top-k width ({CLIP_HOW}); pass topk_length by hand")
                if not _clipped_elsewhere(f, value, 0, into=_copied_into(f, node)) \
                        and not _recast_while_made(f, value, field_name):
                    return (f"{proj.rel(f.path)}:{getattr(node, 'lineno', 0)} sets `{field_name}` from "
                            f"`{reach._unparse(value)[:80]}`, not provably the seqlens clipped to the top-k width "
                            f"({CLIP_HOW}); clip it, or pass topk_length by hand")
        return self._kernel_function_writes(proj, c)  # (last: a field's own write names the field)

    def _kernel_function_writes(self, proj, c: CallInfo) -> Optional[str]:
        """callers.kernel_function_writes in the function holding the kernel call (the ast's twin of the call, found
        by its line and callee), q's and kv's roots exempt."""
        f = proj.checked_file(self.source)
        pos = self.tree.position.get(c.node)
        if f is None or pos is None:
            return None
        def calls_by_line() -> dict:  # (one walk of the module for every site: a walk per site was N x N)
            out: dict = {}
            for n in ast.walk(f.tree):
                if isinstance(n, ast.Call):
                    out.setdefault(n.lineno, []).append(n)
            return out
        callee = _code(c.node.func).strip()
        for call in (n for n in self.index(f"calls-by-line:{id(f)}", calls_by_line).get(pos.start.line, ())
                     if reach._unparse(n.func) == callee):
            fn = f.enclosing(call, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef))
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            given = [a for a in call.args[:2] if not isinstance(a, ast.Starred)] + [
                k.value for k in call.keywords if k.arg in ("q", "kv")]
            why = callers.kernel_function_writes(proj, f, fn, call, given)
            if why:
                return f"at line {call.lineno}, in `{fn.name}`, which calls the kernel: it {why}"
        return None

    def _clipped_fields_written(self, proj) -> Optional[str]:
        """Another field whose read this module takes as the clipped lengths (CLIPPED_FIELDS: `batch.dsa_cache_seqlens`)
        is given only clipped values by the project's other files, but in the engine's own module that keeps it
        (its fused kernels fill it): a name is no evidence (round U's u_batch_attr_named_like_clipped_field)."""
        fields = {m.rsplit(".", 1)[-1] for m in self.metadata}
        for field_name in sorted(g for g in CLIPPED_FIELDS if g not in fields and self.names_spelled(g)):
            home = ENGINE_HOMES.get(field_name)
            for f, node, value in reach.field_writes(proj, field_name, proj.checked_file(self.source)):
                if home and proj.rel(f.path).endswith(home) or value is None and isinstance(node, ast.Constant):
                    continue
                if value is None or not _clipped_elsewhere(f, value, 0, into=_copied_into(f, node)):
                    return (f"{proj.rel(f.path)}:{getattr(node, 'lineno', 0)} gives `{field_name}` "
                            f"`{reach._unparse(value if value is not None else node)[:80]}`, not provably the seqlens "
                            f"clipped to the top-k width ({CLIP_HOW}), and this module reads `{field_name}` as the "
                            "clipped lengths; clip it, or pass topk_length by hand")
        return None

    def callers_hand_on(self, batch: cst.FunctionDef, rows: Set[str], indices: Set[str],
                        meta: Set[str] = frozenset(), depth: int = 0) -> Optional[str]:
        """docs/soundness.md `callers`: every call of the function the rows (`rows`, its parameters), indices
        (`indices`) and metadata (`meta`, where it is a parameter) come from, in this module (traced as the call's
        own arguments are; the metadata an object the caller holds or a new one) or another file of the project
        (callers.py; the rows and indices), hands them on as it was handed them."""
        if not rows | indices | meta:
            return None
        if batch.name.value.startswith("__") and batch.name.value.endswith("__"):
            return (f"the rows and indices come from `{batch.name.value}`, which Python calls implicitly (`obj(...)`, "
                    "`obj[...]`): its callers are not seen, so what they hand is not traced; pass topk_length by hand "
                    "where the rows are known, or use --lengths derived (round S)")
        mangled = self._mangled_spelling(batch)
        if mangled:
            return (f"the rows and indices come from `{batch.name.value}`, and {mangled}: a call through the name "
                    "Python mangles a private method to is not traced (round AJ); pass topk_length by hand where the "
                    "rows are known, or use --lengths derived")
        registered = self._registered(batch) if batch.decorators else None
        if registered:  # (round BA: a custom op's `torch.ops.fork.attn(...)`, a dispatcher's `attend(...)`)
            return (f"the rows and indices come from `{batch.name.value}`, and {registered}; pass topk_length by hand "
                    "where the rows are known, or use --lengths derived")
        foreign, named = self._torch_may_call(batch) if batch.name.value == "forward" else (None, None)
        if foreign and named:
            return (f"the rows and indices come from `forward`, its class derives from `{foreign[:60]}`, and {named}: "
                    "where that base is an `nn.Module` (`module(...)`, `checkpoint(module, ...)`) or an autograd "
                    "Function (`Fn.apply(...)`), torch runs `forward` without spelling its name, so those callers are "
                    "not seen and what they hand is not traced (round AI); pass topk_length by hand where the rows are "
                    "known, or use --lengths derived")
        static = any(get_full_name_for_node(d.decorator) == "staticmethod" for d in batch.decorators)
        method = self.tree.is_method(batch) and not static
        positional = [p.name.value for p in [*batch.params.posonly_params, *batch.params.params]][1 if method else 0:]
        star, star_star = (p.name.value if isinstance(p, cst.Param) else "" for p in (
            batch.params.star_arg, batch.params.star_kwarg))
        named = frozenset(positional + [p.name.value for p in batch.params.kwonly_params])
        # (the entries read off a traced `**kwargs` are traced too: a caller's read of one is a read of the rows)
        keys = self._keys_read(batch, star_star) if star_star and star_star in rows | indices else set()
        wanted = callers.wanted_of(positional, rows | indices | keys, star, star_star)  # (the metadata: this module's calls only)
        here = f"callers here:{batch.name.value}:{wanted}:{sorted(rows)}:{sorted(meta)}"  # (this module's: the same for every def of the name)

        def build() -> Optional[str]:
            proj = self.project()
            cls = self.tree.parent.get(self.tree.parent.get(batch))
            mine = proj.instance_classes(set(self.subclasses(cls.name.value))) if isinstance(cls, cst.ClassDef) else None
            why = self.index(here, lambda: self._module_callers(batch, positional, rows, indices, meta, depth))
            renamed = self._renamed_in_overrides(proj, batch, cls, positional, rows | indices)
            w = callers.unchanged_callers(proj, batch.name.value, tuple(sorted(set(wanted) | renamed)), mine, named) \
                if why is None else None
            why = why or (f"at {w.where()}, a call of `{batch.name.value}`: {w.what}" if w is not None else None)
            return (f"{why}; q and the indices it hands may not be the rows the metadata was built for, in order; pass "
                    "topk_length by hand where they are known, or use --lengths derived") if why else None
        return self.index(f"callers:{id(batch)}:{wanted}:{sorted(rows)}:{sorted(meta)}", build)  # (per def: its class decides its receivers)

    def _registered(self, batch: cst.FunctionDef) -> Optional[str]:
        """callers.registered_by on the def's ast twin (by its name's line): a decorator that may register it under
        another name, whose callers the walk does not see (round BA); unread where the twin is not found."""
        proj, pos = self.project(), self.tree.position.get(batch.name)
        f = proj.checked_file(self.source)
        twin = next((n for n in ast.walk(f.tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                     and n.name == batch.name.value and n.lineno == pos.start.line), None) if f and pos else None
        if twin is None:
            return f"`{batch.name.value}` is decorated, and its decorators are not read"
        return callers.registered_by(proj, f, twin)

    def _torch_may_call(self, batch: cst.FunctionDef) -> Tuple[Optional[str], Optional[str]]:
        """(a base through which batch's class, or a subclass of it, may be an `nn.Module` or an autograd Function,
        whose `forward` torch runs by another name (reach.Project.foreign_base); where the project's code names
        the class, that place): a class no code of the project names is made by the engine's framework, which
        hands its rows as it hands a backend's."""
        cls = self.tree.parent.get(self.tree.parent.get(batch))
        if not isinstance(cls, cst.ClassDef):
            return None, None
        name = cls.name.value
        here = next((n for n in self.names_spelled(name) if n is not cls.name), None)
        here = here or next((s for s in self.find(cst.SimpleString) if callers._names_path(_text(s) or "", name)), None)
        elsewhere = next((f for f in self.project().files_naming([name]) if any(
            isinstance(n, ast.Name) and n.id == name or isinstance(n, ast.Attribute) and n.attr == name
            or isinstance(n, ast.alias) and name in (n.name.rsplit(".", 1)[-1], n.asname)
            or isinstance(n, ast.Constant) and isinstance(n.value, str) and callers._names_path(n.value, name)
            for n in ast.walk(f.tree))), None) if here is None else None  # (another file's class of that name: not it;
        # a string naming it, `pydoc.locate("backend.Attn")`, `"backend:Attn"`, is a way to make it: round AJ)
        named = f"line {self.tree.line(here)} names `{name}`" if here is not None else \
            f"{self.project().rel(elsewhere.path)} names `{name}`" if elsewhere is not None else None
        return (self.project().foreign_base({name}) if named else None), named

    def _mangled_spelling(self, batch: cst.FunctionDef) -> Optional[str]:
        """Where a private method (`__run`) of a class is spelled by the name Python mangles it to (`_Backend__run`),
        in the module or another file: that place; else None."""
        name, cls = batch.name.value, self.tree.parent.get(self.tree.parent.get(batch))
        if not (name.startswith("__") and not name.endswith("__") and isinstance(cls, cst.ClassDef)):
            return None
        mangled = f"_{cls.name.value.lstrip('_')}{name}"
        here = next(iter(self.names_spelled(mangled)), None)
        if here is not None:
            return f"line {self.tree.line(here)} spells `{mangled}`"
        there = next(iter(self.project().files_naming([mangled])), None)
        return f"{self.project().rel(there.path)} spells `{mangled}`" if there is not None else None

    def _module_callers(self, batch, positional, rows, indices, meta=frozenset(), depth: int = 0) -> Optional[str]:
        """The first call of batch's name in this module (on any receiver) whose arguments for `rows` / `indices`
        the row and index traces refuse, as they refuse the call's own."""
        name = batch.name.value
        bound = self.tree.is_method(batch) and not any(
            get_full_name_for_node(d.decorator) == "staticmethod" for d in batch.decorators)
        for ref in self.names_spelled(name):
            up = self.tree.parent.get(ref)
            if isinstance(up, cst.Attribute) and up.attr is ref:  # `self.forward`: what is done with it
                ref, up = up, self.tree.parent.get(up)
            if not (isinstance(up, cst.Call) and up.func is ref or isinstance(up, (cst.FunctionDef, cst.Param))):
                return f"line {self.tree.line(ref)} reads `{name}` as a value: what calls it with which rows is not seen"
        for ref in self.strings_spelled(name):
            return f"line {self.tree.line(ref)} spells `{name}` as a string: what looks it up and calls it is not seen"
        for call in self.every_call_named(name):
            line = self.tree.line(call)
            owner = next((a for a in self.tree.ancestors(call) if isinstance(a, cst.FunctionDef) or isinstance(
                a, cst.Lambda) and _takes(a)), None)  # (a lambda taking nothing reads its function's names: a graph step)
            if not isinstance(owner, cst.FunctionDef) or any(a.star for a in call.args):
                return f"at line {line}, a call of `{name}` hands it rows no function was handed"
            if any(isinstance(a, cst.Lambda) and self._kept_lambda(a) for a in self.tree.ancestors(call)):
                return (f"at line {line}, a call of `{name}` is in a lambda kept on an object or in a table: a later "
                        "call runs it with the tensors of the step that made it (round W)")
            scope = self.tree.scope_of.get(owner.body)
            handed: Tuple[Set[str], Set[str]] = (set(), set())  # (the owner's parameters the rows and indices come from)
            # `Backend.forward(backend, q, ...)`: called off the class, the instance comes first (round R); off any
            # receiver but self or super() (`DEFAULT_BACKEND.forward(...)`, `impl_cls.forward(obj, ...)`) both readings
            # are checked (round S)
            func = call.func
            plain = not bound or not isinstance(func, cst.Attribute) or self._instance(func.value)
            for shift in ((0,) if plain else (0, -1)):
                for p in sorted(meta):
                    arg = _argument_for(call, p, positional.index(p) if p in positional else None, shift)
                    if arg is not None and not self._held_object(arg):
                        return (f"at line {line}, a call of `{name}` hands `{p}` `{_brief(arg, 60)}`, not an object "
                                "its caller holds: which batch's metadata it is is not proven (a builder's cached result, "
                                "round P)")
                for p in sorted(rows | indices):
                    for arg in _handed(batch, call, p, positional, shift):
                        if isinstance(arg, cst.Name) and any(isinstance(getattr(a, "node", None), cst.Param) and _instance_param(
                                self.tree, a.node) for a in self.tree.binding(arg, arg.value).assignments):
                            return (f"at line {line}, a call of `{name}` hands it `{arg.value}`, the caller's own object, whose "
                                    "attributes any holder may rewrite (round O)")
                        hazard, came = row_hazard(self.tree, arg, scope, self.hooks) \
                            if p in rows else index_hazard(self.tree, arg, self.hooks)
                        if hazard:
                            return f"at line {line}, a call of `{name}`: {hazard}"
                        handed[p not in rows].update(came)
            hazard = self._caller_writes_elsewhere(batch, call, positional, indices) \
                or self._outer_of(owner, batch, handed, depth)
            if hazard:
                return f"at line {line}, a call of `{name}`: {hazard}"
        return None

    def _outer_of(self, owner: cst.FunctionDef, batch: cst.FunctionDef, handed: Tuple[Set[str], Set[str]],
                  depth: int) -> Optional[str]:
        """A caller in this module handing on its own parameters is only as right as what its callers hand it: they
        are read as batch's are, up to callers.OUTER_DEPTH calls (round AN: a runner's `step` called with the rows
        permuted by `run_cp` beside it, a module launcher called with them sorted from another file)."""
        walking = self.__dict__.setdefault("_walking_up", set())
        if owner is batch or not any(handed) or id(owner) in walking:
            return None  # (a cycle of calls reads as handing on)
        if depth + 1 >= callers.OUTER_DEPTH:
            return (f"`{owner.name.value}` hands `{batch.name.value}` what it is handed, {depth + 2} calls from the "
                    "kernel's rows: the callers past that are not read")
        walking.add(id(owner))
        try:
            return self.callers_hand_on(owner, *handed, depth=depth + 1)
        finally:
            walking.discard(id(owner))

    def _kept_lambda(self, lam: cst.Lambda) -> bool:
        """Is the lambda stored where a later call finds it (an attribute, an item, a container, a return), rather
        than called or handed on at once (a CUDA graph's step handed to its capture)? As callers._kept."""
        up = self.tree.parent.get(lam)
        while isinstance(up, (cst.BooleanOperation, cst.IfExp)):
            up = self.tree.parent.get(up)
        if isinstance(up, (cst.Assign, cst.AnnAssign, cst.AugAssign)):
            targets = [t.target for t in up.targets] if isinstance(up, cst.Assign) else [up.target]
            return any(not isinstance(t, cst.Name) for t in targets)
        return isinstance(up, (cst.Element, cst.DictElement, cst.Return))

    def _caller_writes_elsewhere(self, batch, call: cst.Call, positional, indices: Set[str]) -> Optional[str]:
        """rows.foreign_write in a caller of the function the indices come from (round U: `forward_decode` masking
        a sibling view of the top-k, `topk_2d`, before it calls `forward`): every argument it hands but the indices
        is exempt."""
        if not indices:
            return None
        handed = {id(a) for p in indices for shift in (0, -1) for a in _handed(batch, call, p, positional, shift)}
        return self.foreign_write_at(call, [a.value for a in call.args if id(a.value) not in handed])

    def _instance(self, e: Optional[cst.BaseExpression], depth: int = 0) -> bool:
        """Surely an instance, never a class: self, super(), a constructor's call (`Backend(md)`), a call of a
        function of this module every return of which is one (`prepare(inp)`), or a local bound only to those."""
        if _is_name(e, "self"):
            return True
        if depth > 4:
            return False
        if isinstance(e, cst.Call):
            callee = (get_full_name_for_node(e.func) or "").rsplit(".", 1)[-1]
            if callee == "super" or callee[:1].isupper() and callee not in ("type",):
                return True
            defs = [f.node for f in self.functions_named(callee) if not f.class_name] if isinstance(e.func, cst.Name) else []
            returns = [r.value for d in defs for r in self.find(cst.Return, None, d)]
            return bool(returns) and all(self._instance(r, depth + 1) for r in returns)
        if isinstance(e, cst.Name):
            assigned = self.tree.binding(e, e.value).assignments
            values = [_unpacked(self.tree.assignment_statement(a), e.value) for a in assigned]
            return bool(values) and all(isinstance(v, cst.Call) and self._instance(v, depth + 1) for v in values)
        return False

    def _base_setters(self, proj, bases, held: Set[str]) -> Optional[str]:
        """Round AB: a base class of another file whose method gives the holder what it is handed
        (`set_forward_metadata(self, md)`) is this module's setter: each call of it here must hand an object made
        for this batch (metadata-in-scope), and no other file may call it; any other value it stores is not read."""
        for f, cls in bases:
            for d in (n for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
                if reach.graph_update(d.name) or reach.graph_builder(d.name):
                    continue  # (a capture's or replay's holder: graph-replay reads those, reach.replay_writes)
                params = [a.arg for a in d.args.posonlyargs + d.args.args][1:]
                for node in ast.walk(d):
                    stored = _holder_store(node, held)
                    if stored is False or isinstance(stored, ast.Constant) and stored.value is None:
                        continue
                    place = params.index(stored.id) if isinstance(stored, ast.Name) and stored.id in params else None
                    if place is None or not _first_run(d, node) or not self._hands_made(proj, f, d.name, place):
                        return (f"{cls.name}.{d.name} at {proj.rel(f.path)}:{d.lineno} gives the holder "
                                f"`{reach._unparse(stored) if stored is not None else '?'}`: which batch's metadata it "
                                "holds is not proven where it is called; give it an object made for this batch here, or "
                                "pass topk_length by hand")
        return None

    def _hands_made(self, proj, base_file, name: str, place: int) -> bool:
        """Does every call of the base's method `name` hand, at `place`, an object made for this batch: only this
        module calls it (`self.name(...)`), each with such an object?"""
        if any(f.path != base_file.path for f in proj.files_naming([name])):
            return False
        for call in self.find(cst.Call, lambda c: isinstance(c.func, cst.Attribute) and c.func.attr.value == name):
            caller = next((u for u in self.tree.ancestors(call) if isinstance(u, cst.FunctionDef)), None)
            args = [a for a in call.args if a.keyword is None and not a.star]
            if caller is None or any(a.star for a in call.args) or place >= len(args) or \
                    not self._made_for_batch(args[place].value, caller, None, set()):
                return False
        return True

    def _held_object(self, arg: cst.BaseExpression, depth: int = 0) -> bool:
        """A parameter, an attribute chain read off a name with no call on the way, a local bound only to those,
        or a call of a builder that makes a new object each time (_builds_anew): an object the caller holds or
        this batch's new one, not one a cache hands back (round P's `lru_cache`d builder)."""
        if isinstance(arg, cst.Call):
            return self._builds_anew(arg)
        while isinstance(arg, cst.Attribute):
            arg = arg.value
        if not isinstance(arg, cst.Name) or depth > 4:
            return False
        assigned = self.tree.binding(arg, arg.value).assignments
        if not assigned:
            return False
        for a in assigned:
            if isinstance(getattr(a, "node", None), cst.Param):
                continue
            stmt = self.tree.assignment_statement(a)
            if not isinstance(stmt, cst.Assign) or len(stmt.targets) != 1 or not self._held_object(stmt.value, depth + 1):
                return False
        return True

    def _builds_anew(self, call: cst.Call) -> bool:
        """A call of a constructor (a capitalized name), or of an undecorated function of this module every def of
        which returns only constructions, or locals bound only to one in it."""
        name = (get_full_name_for_node(call.func) or "").rsplit(".", 1)[-1]
        defs = self.functions_named(name)
        if not defs:
            return name[:1].isupper()
        for fn in defs:
            if fn.node.decorators:
                return False
            for ret in self.find(cst.Return, None, fn.node):
                value = ret.value
                values = self.tree.assigned_values(value, value.value) if isinstance(value, cst.Name) else [value]
                if not values or not all(map(constructor_call, values)):
                    return False
        return True

    @property
    def hooks(self) -> Hooks:
        """What the row and index traces may ask of the project (rows.Hooks)."""
        return Hooks(self.external_def, self.outside_project, self.method_rival, self.served_elsewhere, self.forked_engine_op)

    def forked_engine_op(self, name: str) -> Optional[str]:
        """rows.Hooks.forked: where this module, or a file of the project other than as a release of the engine has
        it, defines a def named as an engine function or method the traces trust (a fork's pool class's
        `translate_loc_to_hisparse_device`, round V; a fork's own tree of sglang sorting the rows in its
        `transform_index_page_table_decode`, round AB): a call by that name may reach it, of which the allowlists say
        nothing."""
        def find() -> Optional[str]:
            for fdef in self.functions_named(name):
                return f"`{name}` defined at line {self.tree.line(fdef.node)}"
            proj = self.project()
            return engine_defs.own_copies(proj.files_naming([name]), name, lambda p: proj.rel(p).replace(os.sep, "/"))
        return self.index(f"forked:{name}", find)

    def method_rival(self, class_name: Optional[str], name: str) -> Optional[str]:
        """rows.Rival: where another file of the project may make `self.<name>(...)` (or the module function
        `<name>`) run something else than the def the traces read (round R): an override in a subclass, a
        rival in another base of one, an assignment or setattr of the name on the class, an instance or the
        module."""
        return self.index(f"rival:{class_name}:{name}", lambda: self._method_rival(class_name, name))

    def _renamed_in_overrides(self, proj, batch: cst.FunctionDef, cls, positional: List[str], traced: Set[str]) -> set:
        """callers.Wanted entries for the names an override of batch (another file's subclass) gives the traced
        parameters' places (round T: `def forward(self, q, kv, indices, scale)` over `topk_indices`): a caller's
        keyword of that name lands in the same place on an instance of that subclass."""
        if not isinstance(cls, cst.ClassDef):
            return set()
        out = set()
        for _, _, d in proj.overrides(set(self.subclasses(cls.name.value)), batch.name.value):
            params = [a.arg for a in d.args.posonlyargs + d.args.args][1:] if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef)) else []
            for name in traced & set(positional):
                place = positional.index(name)
                if place < len(params) and params[place] != name:
                    out.add((params[place], None, ""))
        return out

    def _keys_read(self, fdef: cst.FunctionDef, mapping: str) -> Set[str]:
        """The literal keys fdef reads off its parameter `mapping` (`kwargs["topk_indices"]`, `kwargs.get("x")`)."""
        out = set()
        for node in self.find((cst.Subscript, cst.Call), None, fdef):
            if isinstance(node, cst.Subscript) and _is_name(node.value, mapping) and len(node.slice) == 1 \
                    and isinstance(node.slice[0].slice, cst.Index):
                key = node.slice[0].slice.value
            elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and _is_name(node.func.value, mapping) \
                    and node.func.attr.value == "get" and node.args:
                key = node.args[0].value
            else:
                continue
            if isinstance(key, cst.SimpleString) and isinstance(key.evaluated_value, str):
                out.add(key.evaluated_value)
        return out

    def served_elsewhere(self, attr: str) -> Optional[str]:
        """rows.Served: where another file makes `<x>.<attr>` other than a value handed to its function."""
        def find() -> Optional[str]:
            w = self.project().attribute_served(attr)
            return f"{w.what} at {w.where()}" if w is not None else None
        return self.index(f"served:{attr}", find)

    def _method_rival(self, class_name: Optional[str], name: str) -> Optional[str]:
        proj = self.project()
        seeds = set(self.subclasses(class_name)) if class_name else set()
        for f, cls, d in proj.overrides(seeds, name) if seeds else ():
            return f"{cls.name}.{name} at {proj.rel(f.path)}:{d.lineno} overrides it, and the trace read only this module's"
        for f, cls, d in proj.rivals(seeds, name, (proj.checked_file(self.source), class_name)) if seeds else ():
            return f"{cls.name}.{name} at {proj.rel(f.path)}:{d.lineno} may be reached first by a subclass's instances"
        for w in proj.attribute_writes({name}, seeds, set()):
            return f"{w.what} at {w.where()} may replace it"
        return None

    def _rows_source_replaced(self, proj, sources: List[Optional[Function]]) -> Optional[str]:
        """The methods whose parameters the rows are taken from (the one calling the kernel, or the helper's
        callers) are what the engine calls with the batch's rows: a subclass override that does not hand its
        parameters on unchanged to `super()`, or an assignment of the method on its class (a plugin's
        `Backend.forward = balanced`), or a decorator of theirs, may call them with rows in another order than
        the metadata's."""
        for m in sources:
            if m is None:
                continue
            why = self._rows_decorator(m) or (self.metaclass_anywhere(m.class_name) if m.class_name else None)
            if why or not m.class_name:
                return why
            seeds = set(self.subclasses(m.class_name))
            for f, cls, d in proj.overrides(seeds, m.name):
                call, what = reach.forwarded_call(d, m.name)
                if call is None:
                    return (f"{cls.name}.{m.name} at {proj.rel(f.path)}:{d.lineno} overrides {m.qualname} and "
                            f"{what or 'hands nothing on'}: the rows it passes may not be those the metadata was built "
                            "for; pass topk_length by hand where the rows are known")
            for w in proj.attribute_writes({m.name}, seeds, set()):
                return (f"{w.what} at {w.where()}: the function the engine calls instead of {m.qualname} may pass "
                        "rows in another order than the metadata's; pass topk_length by hand where the rows are known")
        return None

    def _rows_decorator(self, m: Function) -> Optional[str]:
        """A decorator on a method the rows are taken from (see _wrapping_decorator): the wrapper it makes is
        what the engine calls."""
        name = self._wrapping_decorator(m)
        return (f"{m.qualname} is decorated with `@{name}`, whose wrapper the engine calls: it may hand "
                f"{m.qualname} rows in another order than the metadata's; pass topk_length by hand") if name else None

    def kernel_rebound(self, c: CallInfo) -> Optional[str]:
        """What another file of the project may do to make c's callee another function than the kernel."""
        owner = c.function
        return self._kernel_rebound(c, set(self.subclasses(owner.class_name)) if owner and owner.class_name else set())

    def _kernel_rebound(self, c: CallInfo, seeds: Set[str], helper: Set[str] = frozenset()) -> Optional[str]:
        """An assignment or setattr of the kernel's name on a receiver that may be its class or module, a
        reflective write that may reach the kernel, `helper` or the classes `seeds`, an unreadable file."""
        proj, kernel, modules = self.project(), c.callee.rsplit(".", 1)[-1], self.kernel_modules(c.callee)
        chain = _read_chain(c)
        packages = {p for m in modules for p in _packages(m)}
        objects = modules | packages | {f"{m}.{kernel}" for m in modules}
        for w in proj.attribute_writes(chain | _OBJECT_DUNDERS, seeds, objects):
            return (f"{w.what} at {w.where()}: it may replace the kernel `{kernel}` at run time with a function that "
                    "does not take topk_length; pass topk_length by hand once every replacement does")
        handed = class_escape.handed_off(proj, seeds) if seeds else None
        for w in proj.reflection({kernel, *seeds, *helper}, seeds, objects, kernel, chain, handed):  # (and the importers)
            return (f"{w.what} at {w.where()} may rebind the kernel, the helper or its class at run time, which "
                    "the analysis cannot follow; pass topk_length by hand if it cannot")
        named = [(f, n) for f, n in reach.spelled_as_string(proj, kernel, reads=("getattr", "hasattr"))
                 if reach.beside_string(f, n, modules)]  # (`("sgl_kernel.flash_mla", "flash_mla_sparse_fwd")`)
        dotted = [(f, n) for m in sorted(modules) for f, n in reach.spelled_as_string(proj, f"{m}.{kernel}")
                  if isinstance(f.parents.get(id(n)), ast.Call)]  # (handed to a patcher: `patch_function_wrapper`)
        for f, node in named + dotted:
            return (f"{proj.rel(f.path)}:{node.lineno} spells `{node.value}` as a string handed on (a patcher given "
                    "dotted targets, `wrapt.wrap_function_wrapper(\"module\", \"name\", ...)`): it may replace the kernel by "
                    "name at run time (round T); pass topk_length by hand once every replacement takes it")
        for w in proj.unreadable:
            return (f"{w.path} {w.what}, so what it does to the kernel or the helper is not known; "
                    "pass topk_length by hand")
        return None


def _holder_store(node: ast.AST, held: Set[str]):
    """What node gives a holder of self (`self.forward_metadata = v`): v; None where that is not one expression (an
    unpacking, a setattr by name); False where node gives none."""
    if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
        for t in node.targets if isinstance(node, ast.Assign) else [node.target]:
            if isinstance(t, ast.Attribute) and t.attr in held and reach._is_self(t.value):
                return node.value
            if any(isinstance(x, ast.Attribute) and x.attr in held for x in reach._flatten([t])):
                return None
    if isinstance(node, ast.Call) and reach._unparse(node.func).rsplit(".", 1)[-1] in ("setattr", "__setattr__") \
            and any(isinstance(a, ast.Constant) and a.value in held for a in node.args):
        return None
    return False


def _first_run(fn: ast.AST, stmt: ast.AST) -> bool:
    """Does every call of fn run stmt: a statement of its body itself, after only expressions and assignments (no
    `if self.frozen: return` before it: round AC)?"""
    body = list(fn.body)
    return stmt in body and all(isinstance(x, (ast.Expr, ast.Assign, ast.AnnAssign)) for x in body[:body.index(stmt)])


def _unpacked(stmt: Optional[cst.CSTNode], name: str) -> Optional[cst.BaseExpression]:
    """The value an assignment gives `name`: its value, or the element a tuple display hands it by position (`a, b =
    Backend(x), Backend(y)`); None otherwise."""
    value = getattr(stmt, "value", None)
    targets = [t.target for t in stmt.targets] if isinstance(stmt, cst.Assign) else []
    if len(targets) == 1 and isinstance(targets[0], (cst.Tuple, cst.List)) and isinstance(value, (cst.Tuple, cst.List)):
        names = [el.value.value if isinstance(el.value, cst.Name) else None for el in targets[0].elements]
        return value.elements[names.index(name)].value if name in names and len(names) == len(value.elements) \
            and not any(isinstance(el, cst.StarredElement) for el in value.elements) else None
    return value


def _copied_into(f, node: ast.AST) -> str:
    """The object whose field a `x.field.copy_(...)` (`x.field[:n].copy_(...)`) writes, spelled (`x`); "*" for a
    keyword handed to a function (an output buffer: reach.makes_a_record); else ""."""
    keyword = f.parents.get(id(node))
    call = f.parents.get(id(keyword)) if isinstance(keyword, ast.keyword) else None
    if isinstance(call, ast.Call) and not reach.makes_a_record(reach._unparse(call.func).rsplit(".", 1)[-1]):
        return "*"
    field = node.func.value if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
        and node.func.attr == "copy_" else None
    while isinstance(field, ast.Subscript):
        field = field.value
    return reach._unparse(field.value) if isinstance(field, ast.Attribute) else ""
