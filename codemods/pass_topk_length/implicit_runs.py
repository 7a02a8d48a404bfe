"""docs/soundness.md `metadata-in-scope`, round BF: statements that run code with no call spelled are calls. An
attribute store or `del` on an object whose class family defines `__setattr__`, a property setter or a descriptor,
and a `with` whose manager is a class or def of the module, may write the field again after its refresh (a mixin
of analysis._Analysis, beside MetadataInScope, whose refresh points it reads)."""
from __future__ import annotations

import ast
from typing import List, NamedTuple, Optional, Tuple

import libcst as cst
from libcst.metadata import GlobalScope, ImportAssignment

from . import reach
from .rows import local_defs
from .syntax import _brief, _class_bindings, _is_name, _own_statement, bound_targets


class _Hidden(NamedTuple):
    """Round BF: a statement running code with no call spelled (_hidden_runs): the hook it runs, that hook's defs of
    the module (None: another file's), what it hands them, whether their `self` is the statement's, whether they run
    at the statement's end (a manager's exit)."""
    node: cst.CSTNode
    hook: str
    defs: Optional[List[cst.FunctionDef]]
    handed: List[cst.CSTNode]
    on_self: bool
    at_end: bool = False


class ImplicitRuns:
    """Round BF's hooks run with no call spelled (docs/soundness.md "Round BF")."""

    def _hidden_runs(self, fdef: cst.FunctionDef) -> List["_Hidden"]:
        """Round BF: fdef's own statements that run code with no call spelled, each read as a call of the defs it
        runs: an attribute store, augmented store or `del` on an object whose class family defines `__setattr__`/
        `__delattr__` or binds the attribute to a property with a setter or to a descriptor (`__set__`), and a `with`
        whose manager may be a class of the module defining `__enter__`/`__exit__` (or a def of the module it calls)."""
        def build() -> List[_Hidden]:
            out: List[_Hidden] = []
            for node in self.find((cst.Assign, cst.AnnAssign, cst.AugAssign, cst.Del), None, fdef):
                if not _own_statement(self.tree, node, fdef) or isinstance(node, cst.AnnAssign) and node.value is None:
                    continue  # (a declaration stores nothing)
                kind = "del" if isinstance(node, cst.Del) else "set"
                handed = [] if kind == "del" else [node] if isinstance(node, cst.AugAssign) else [node.value]
                targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
                for t in [x for target in targets for x in bound_targets(target) if isinstance(x, cst.Attribute)]:
                    on_self = _is_name(t.value, "self")
                    out += [_Hidden(node, hook, defs, handed, on_self) for hook, defs in self._store_hooks(
                        self._class_of(fdef) if on_self else None, t.attr.value, kind)]
            for node in self.find(cst.With, None, fdef):
                if _own_statement(self.tree, node, fdef):
                    out += [h for item in node.items for h in self._manager_hooks(node, item.item)]
            return out
        return self.index(f"hidden-runs:{id(fdef)}", build)

    def _class_of(self, fdef: cst.FunctionDef) -> Optional[str]:
        """The name of the class fdef is a method of, or None."""
        return next((a.name.value for a in self.tree.ancestors(fdef) if isinstance(a, cst.ClassDef)), None)

    def _store_hooks(self, cls_name: Optional[str], attr: str, kind: str) -> List[Tuple[str, Optional[List[cst.FunctionDef]]]]:
        """(hook, its defs here, or None for another file's) a store (`kind` "set") or `del` of `<x>.<attr>` runs:
        on self, in its class family (it, its bases, its subclasses anywhere); on another object, in any class of
        the module (its class is not read)."""
        def build():
            proj = self.project()
            own = proj.checked_file(self.source)
            node = own.classes.get(cls_name) if own is not None and cls_name else None
            family = proj.instance_family(own, node) if node is not None else [(own, None)]
            mine = {c.name.value: c for c in self.find(cst.ClassDef)}
            out = []
            for g, c in family:
                if own is None or g.path == own.path:
                    for cls in [mine[c.name]] if c is not None and c.name in mine else mine.values() if c is None else []:
                        out += self._class_store_hooks(cls, attr, kind)
                elif _foreign_store_hook(c, attr, kind):
                    out.append((f"`{c.name}` at {proj.rel(g.path)}:{c.lineno}", None))
            return out
        return self.index(f"store-hooks:{cls_name}:{attr}:{kind}", build)

    def _class_store_hooks(self, cls: cst.ClassDef, attr: str, kind: str) -> List[Tuple[str, List[cst.FunctionDef]]]:
        """What storing (or deleting) `<instance of cls>.<attr>` runs of cls's body: `__setattr__`/`__delattr__`, the
        setter/deleter of a property named attr (decorated, or `attr = property(get, set)`), a descriptor's
        `__set__`/`__delete__` (a class of the module bound to attr in the body)."""
        dunder, accessor, slot, descr = ("__setattr__", "setter", 1, "__set__") if kind == "set" else \
            ("__delattr__", "deleter", 2, "__delete__")
        body = [d for d in cls.body.body if isinstance(d, cst.FunctionDef)]
        out = [(f"`{cls.name.value}.{dunder}`", [d]) for d in body if d.name.value == dunder]
        out += [(f"the {accessor} of `{cls.name.value}.{attr}`", [d]) for d in body if d.name.value == attr and any(
            isinstance(x.decorator, cst.Attribute) and x.decorator.attr.value == accessor for x in d.decorators)]
        for name, value in _class_bindings(cls):
            if name != attr or not isinstance(value, cst.Call):
                continue
            if _is_name(value.func, "property"):
                given = [a.value for i, a in enumerate(value.args) if (a.keyword.value == "f" + accessor[:3] if a.keyword
                                                                       else i == slot)]
                out += [(f"the {accessor} of `{cls.name.value}.{attr}`", [d]) for g in given for d in body
                        if _is_name(g, d.name.value)]
            elif isinstance(value.func, cst.Name):
                out += [(f"`{c.name.value}.{descr}` (the descriptor `{cls.name.value}.{attr}`)", [d])
                        for c in self.find(cst.ClassDef) if c.name.value == value.func.value
                        for d in c.body.body if isinstance(d, cst.FunctionDef) and d.name.value == descr]
        return out

    def _manager_hooks(self, node: cst.With, manager: cst.BaseExpression) -> List["_Hidden"]:
        """What `with manager:` may run: a def of the module the manager's call reaches (a `contextmanager`'s rest
        runs at the exit), else, unless the manager is read off an import or a builtin (`torch.no_grad()`), the
        `__enter__`/`__exit__` of each class of the module defining one (which class the manager is, is not read)."""
        if isinstance(manager, cst.Call) and local_defs(self.tree, manager.func):
            return [_Hidden(node, f"`{_brief(manager.func, 40)}` (a manager's body, run at the exit)",
                            local_defs(self.tree, manager.func), [], False, True)]
        root = manager
        while isinstance(root, (cst.Attribute, cst.Call, cst.Subscript)):
            root = root.value if not isinstance(root, cst.Call) else root.func
        if isinstance(root, cst.Name) and all(isinstance(a, ImportAssignment) or isinstance(a.scope, GlobalScope)
                                               and getattr(a, "node", None) is None
                                               for a in self.tree.binding(root, root.value).assignments):
            return []  # (an import or a builtin: the library's manager)
        return [_Hidden(node, f"`{c.name.value}.{d.name.value}`", [d], [], False, d.name.value == "__exit__")
                for c in self.find(cst.ClassDef) for d in c.body.body
                if isinstance(d, cst.FunctionDef) and d.name.value in ("__enter__", "__exit__")]

    def _runs_after(self, h: "_Hidden", at: cst.CSTNode) -> bool:
        """Does the hook run after `at`: its statement comes later, or it is a manager's exit around `at`?"""
        return self.tree.order[id(h.node)] > self.tree.order[id(at)] or h.at_end and any(
            a is h.node for a in self.tree.ancestors(at))

    def _hidden_write(self, fdef: cst.FunctionDef, at: Optional[cst.CSTNode], attr: str, field_name: str,
                      depth: int) -> Optional["_Hidden"]:
        """Round BF: the first hook of fdef (_hidden_runs) running after `at` (any, where `at` is None) that may write
        the field or the holder, followed as a self-call is (_other_batch_write): where it runs on fdef's self handed
        fdef's own parameters, it is the hook's writes that are judged; one run on another object (a manager, a
        descriptor) or of another file, or handed anything else, is returned as is."""
        for h in self._hidden_runs(fdef):
            if at is not None and not self._runs_after(h, at) or h.defs is not None and not self._defs_may_write(
                    h.defs, attr, field_name, depth):
                continue
            if h.defs is None or not h.on_self or depth >= 3 or not all(self._own_value(fdef, v) for v in h.handed):
                return h
            if any(self._writes_from_local(d, field_name) or self._hidden_write(d, None, attr, field_name, depth + 1)
                   or self._other_batch_write(d, self._self_calls_in(d), attr, field_name, depth + 1) for d in h.defs):
                return h
        return None

    def _defs_may_write(self, defs: List[cst.FunctionDef], attr: str, field_name: str, depth: int) -> bool:
        """May one of the defs write `<x>.<field>` or bind `<x>.<attr>`: itself, by a call on self or by a hook
        (4 deep; deeper may)?"""
        return depth >= 4 or any(
            self._writes_holder_anywhere(d, attr, field_name) is not None or self._field_targets(d, field_name)
            or any(self._may_write_field(x, attr, field_name, depth + 1) for x in self._self_calls_in(d))
            or any(self._defs_may_write(m, attr, field_name, depth + 1) for m in self._methods_called_off(d))
            or self._hidden_may_write(d, attr, field_name, depth + 1) for d in defs)

    def _methods_called_off(self, fdef: cst.FunctionDef) -> List[List[cst.FunctionDef]]:
        """For each call of fdef on another object (`self.backend._stage_draft(d)`, `obj._stage(d)`: a hook's object
        is not the backend), the module's methods of that name (which class the object is, is not read)."""
        out = []
        for c in self.find(cst.Call, lambda c: isinstance(c.func, cst.Attribute) and not self._runs_on_self(c), fdef):
            found = [n for n in self.tree.defs() if n.name.value == c.func.attr.value and self.tree.is_method(n)]
            out += [found] if found else []
        return out

    def _hidden_may_write(self, fdef: cst.FunctionDef, attr: str, field_name: str, depth: int) -> bool:
        """Round BF: may a hook fdef's statements run (_hidden_runs) write the field or the holder?"""
        return any(h.defs is None or self._defs_may_write(h.defs, attr, field_name, depth) for h in self._hidden_runs(fdef))

    def _self_calls_in(self, fdef: cst.FunctionDef) -> List[cst.Call]:
        """fdef's calls that may run code on self, but the plain store a hook hands on (`super().__setattr__(name,
        value)`, `object.__setattr__(self, ...)`: a base of the family defining one is a hook of its own)."""
        return [c for c in self.find(cst.Call, self._runs_on_self, fdef) if not (
            isinstance(c.func, cst.Attribute) and c.func.attr.value in ("__setattr__", "__delattr__") and (
                _is_name(c.func.value, "object") or isinstance(c.func.value, cst.Call) and _is_name(c.func.value.func, "super")))]

    def _own_value(self, fdef: cst.FunctionDef, value: cst.CSTNode) -> bool:
        """Is value `self` or a parameter of fdef never bound again (what a store hands its hook)?"""
        return isinstance(value, cst.Name) and (value.value == "self" or self._a_parameter(value)) and self._in(value, fdef)

    def _hidden_why(self, fdef: cst.FunctionDef, attr: str, field_name: str, eager: bool) -> Optional[str]:
        """Round BF: why a hook run with no call spelled after fdef's refresh of `self.<attr>.<field>` (or inside its
        refreshing helper, after the refresh there) may write the field again; else None."""
        for where, at in self._refresh_points(fdef, attr, field_name, eager):
            h = self._hidden_write(where, at, attr, field_name, 0)
            if h is not None:
                shown = _brief(h.node, 60) if not isinstance(h.node, cst.With) else "with " + ", ".join(
                    _brief(i.item, 40) for i in h.node.items)
                return (f"{where.name.value} refreshes `self.{attr}.{field_name}` in place, then `{shown}` (line "
                        f"{self.tree.line(h.node)}) runs {h.hook} with no call spelled, which may write it again for "
                        "another batch (a draft's input staged into the record): the kernel may read another batch's "
                        "lengths; make the refresh the last write of the field (store before it, or keep the hook "
                        "from writing the record), or pass topk_length by hand")
        return None


def _foreign_store_hook(cls: ast.ClassDef, attr: str, kind: str) -> bool:
    """Round BF: does a class of another file run code on a store (`kind` "set") or `del` of `attr`: it defines
    `__setattr__`/`__delattr__`, a property setter/deleter named attr, or binds attr to `property(...)`?"""
    dunder, accessor = ("__setattr__", "setter") if kind == "set" else ("__delattr__", "deleter")
    for stmt in cls.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and (stmt.name == dunder or stmt.name == attr and any(
                isinstance(x, ast.Attribute) and x.attr == accessor for x in stmt.decorator_list)):
            return True
        if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call) and reach._unparse(stmt.value.func) == "property" \
                and any(isinstance(t, ast.Name) and t.id == attr for t in stmt.targets):
            return True
    return False
