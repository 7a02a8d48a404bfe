"""docs/soundness.md `metadata-type`: how the metadata is read (plain, None-safe or by getattr), from what
the module's types prove the object holds: the class its annotation or constructor names, declaring the
field, Optional or not (typed), with a base class of another module that sets the attribute to None."""
from __future__ import annotations

import ast
import re
from typing import Optional

import libcst as cst
from libcst.metadata import ImportAssignment

from topk_migrate import kernels, project

from .indexes import handed_back, rebinds
from .syntax import _argument_for, _code, _is_attr, _is_name, _root

_ASSIGNED_NONE = re.compile(r"=\s*None\b")
_EQUALS_OR_LINE_FEED = re.compile(r"[=\n]")
_WORD_START = re.compile(r"\b")
_SELF_DOT = re.compile(r"\bself\.")


def assigns_none(text: str, attr: str) -> bool:
    r"""Whether `text` (a module's source) assigns None to `attr`: `self.attr = None`, `attr: T = None`, as the
    search `\b(self\.)?ATTR\s*(:[^=\n]*)?=\s*None\b` decided, in time linear in the text. That regex read
    the rest of the line again from each `ATTR:` on it (quadratic: `x:x:x:...`); here every `=` that
    `\s*None\b` follows is found in one pass; each `ATTR`, blanks, `:` or `=` in another (ATTR a literal
    prefix, which the re module looks for with an overlap table, as KMP does); and the first `=` or line
    feed after a `:` once for all the colons before it."""
    good = {m.start() for m in _ASSIGNED_NONE.finditer(text)}
    if not good:
        return False
    stop = -1  # the first `=` or line feed after the last `:` looked up, valid for every colon before it
    for m in re.finditer(re.escape(attr) + r"\s*[:=]", text):  # (these never overlap: ATTR holds no blank)
        start, at = m.start(), m.end() - 1
        if not (_WORD_START.match(text, start) or start >= 5 and _SELF_DOT.match(text, start - 5)):
            continue
        if text[at] == ":":  # an annotation: `[^=\n]*` runs to the first `=` or line feed, which must be `=`
            if stop <= at:
                found = _EQUALS_OR_LINE_FEED.search(text, at + 1)
                stop = found.start() if found else len(text)
            at = stop
        if at in good:
            return True
    return False


# Names an annotation may hold besides the classes it is about.
TYPING_NAMES = {"Optional", "Union", "None", "typing", "t", "Any"}
# How many steps (a local, a builder, a table, an import) a value is followed back before it counts as unproven
# (sglang-kt 0.7.2: a graph table of locals a method refines through kpool_plan, five steps).
_DEPTH = 8


def _annotation_names(annotation: cst.BaseExpression) -> Optional[set]:
    """The names an annotation is made of (string annotations parsed), or None if it holds anything
    but names, dotted names, subscripts, `|` unions and strings of those."""
    out: set = set()
    todo = [annotation]
    while todo:
        e = todo.pop()
        if isinstance(e, cst.Name):
            out.add(e.value)
        elif isinstance(e, cst.Attribute):  # typing.Optional, mod.Cls: the last part names it
            out.add(e.attr.value)
        elif isinstance(e, cst.Subscript):
            todo.append(e.value)
            todo += [el.slice.value for el in e.slice if isinstance(el.slice, cst.Index)]
        elif isinstance(e, cst.BinaryOperation) and isinstance(e.operator, cst.BitOr):
            todo += [e.left, e.right]
        elif isinstance(e, cst.SimpleString) and isinstance(e.evaluated_value, str) and len(e.evaluated_value) < 500:
            try:
                todo.append(cst.parse_expression(e.evaluated_value))
            except (cst.ParserSyntaxError, RecursionError, ValueError):
                return None
        else:
            return None
    return out


def _sets(cls: cst.ClassDef, stmt: cst.AnnAssign) -> bool:
    """Does the declaration give every instance the attribute: a class-level value (not None, not `field(...)`,
    whose init and default vary), or a bare annotation of a dataclass or NamedTuple (a required field of its
    constructor)? A bare annotation of any other class sets nothing (round R: a plain read raised where only the
    decode path set it); nor does an `InitVar` (a dataclass never stores it: round U) or a bare `ClassVar`."""
    kinds = _annotation_names(stmt.annotation.annotation) or set()
    if "InitVar" in kinds or "ClassVar" in kinds and stmt.value is None:
        return False
    if stmt.value is not None:
        value = stmt.value
        called = _code(value.func).strip().rsplit(".", 1)[-1] if isinstance(value, cst.Call) else ""
        return not (isinstance(value, cst.Name) and value.value == "None") and called != "field"
    decorators = {_code(d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator).strip()
                  for d in cls.decorators if not _no_init(d.decorator)}
    bases = {_code(b.value).strip() for b in cls.bases}
    own_init = any(isinstance(x, cst.FunctionDef) and x.name.value in ("__init__", "__new__")
                   for x in (cls.body.body if isinstance(cls.body, cst.IndentedBlock) else ()))
    return not own_init and (bool(decorators & {"dataclass", "dataclasses.dataclass"})
                             or bool(bases & {"NamedTuple", "typing.NamedTuple"}))


def _no_init(decorator: cst.BaseExpression) -> bool:
    """`@dataclass(init=...)` other than `init=True`: the class's constructor may not set its fields (round AY)."""
    return isinstance(decorator, cst.Call) and any(
        a.keyword is not None and a.keyword.value == "init" and not _is_name(a.value, "True") for a in decorator.args)


class MetadataType:
    """docs/soundness.md `metadata-type` (a mixin of analysis._Analysis)."""

    def typed(self, a, field_name: str) -> Optional[bool]:
        """Does the root provably hold an instance of a class of this module that declares
        `field_name`? True: yes; False: yes, or None (declared Optional); None: nothing says."""
        node = getattr(a, "node", None)
        annotation, optional = None, False
        if isinstance(node, cst.Param):
            annotation = node.annotation.annotation if node.annotation else None
            if annotation is not None and self._argument_contradicts(a, node, annotation):
                return None
        else:
            stmt = self.tree.assignment_statement(a)
            value = stmt.value if stmt is not None else None
            if isinstance(value, cst.Attribute) and isinstance(value.value, cst.Name) and value.value.value == "self":
                owner = next((x for x in self.tree.ancestors(stmt) if isinstance(x, cst.ClassDef)), None)
                annotation = self.declared(value.attr.value, owner)
                optional = value.attr.value in self.tree.none_attributes() or self.base_sets_none(value.attr.value)
                if annotation is not None and self._annotation_contradicted(value.attr.value, annotation):
                    return None
            elif isinstance(value, cst.Call):
                annotation = value.func
        if annotation is None:
            return None
        names = _annotation_names(annotation)
        if names is None:
            return None  # an annotation the check does not read
        optional = optional or bool(names & {"None", "Optional"})
        classes = names - TYPING_NAMES
        if not classes:
            return None
        # every class the annotation names (each member of a Union) must be one of this module's, by its
        # exact name, declaring the field as not Optional: otherwise nothing is proven
        for name in classes:
            declaring = self.module_class(name)
            if declaring is None or not any(
                    not re.search(r"\bNone\b|Optional", _code(stmt.annotation.annotation)) and _sets(declaring, stmt)
                    for stmt in self.find(cst.AnnAssign, lambda a: _is_name(a.target, field_name), declaring.body)):
                return None
        return not optional

    def _bound_by_def(self, cls: cst.ClassDef, name: str) -> bool:
        """Does the class body bind `name` by one def at most (an assignment under a flag, an import in the body, a
        second def rebind the builder: round AZ)?"""
        body = cls.body.body if isinstance(cls.body, cst.IndentedBlock) else ()
        scope = self.tree.scope_of.get(body[0]) if body else None
        found = list(scope.assignments[name]) if scope is not None else []
        return len(found) <= 1 and all(isinstance(getattr(a, "node", None), cst.FunctionDef) for a in found)

    def module_class(self, name: str) -> Optional[cst.ClassDef]:
        """The class of this module `name` holds: its only def, and the only binding of the name where it stands (a
        fallback `from compat import DSAMetadata` under a flag, an assignment or a second def leave it unproven:
        round AY)."""
        declaring = [c for c in self.find(cst.ClassDef) if c.name.value == name]
        found = self.tree.binding(declaring[0], name).assignments if len(declaring) == 1 else ()
        others = [a for a in found if getattr(a, "node", None) is not declaring[0]]
        return declaring[0] if len(others) < len(found) and all(self._self_alias(a, name) for a in others) else None

    def _self_alias(self, a, name: str) -> bool:
        """`DSAMetadata = DSAMetadata` (sglang 0.5.16's compatibility line): the name bound to what it holds."""
        stmt = self.tree.assignment_statement(a)
        return isinstance(stmt, cst.Assign) and len(stmt.targets) == 1 and _is_name(stmt.targets[0].target, name) \
            and _is_name(stmt.value, name)

    def _annotation_contradicted(self, attr: str, annotation: cst.BaseExpression) -> bool:
        """An annotation is a claim, not a fact (round T): it holds only where every value this module stores in
        `<x>.<attr>` is proven an instance of a class it names (round AW: default-deny, `_holds_named`; the extend
        path's other metadata class, a builder's, another file's class contradict it), and no other file of the
        project assigns the attribute (a model runner clearing it for an idle batch: what it stores there is not
        read)."""
        names = (_annotation_names(annotation) or set()) - {"typing", "t", "Any"}
        return not self._holds_named(attr, names, 0) or self.assigned_elsewhere(attr)

    def _holds_named(self, attr: str, names: set, depth: int) -> bool:
        """Is every value the module stores in `<x>.<attr>` (an assignment, an annotated one; an unpacking, an
        augmented one or `setattr` refuse) of a class `names` names?"""
        if depth > _DEPTH or not names - TYPING_NAMES:
            return False
        if self._assumed_named:  # (what holds only while a local is assumed is not kept)
            return self._stores_named(attr, names, depth)
        key = f"holds-named:{attr}:{','.join(sorted(names))}"  # (once per attribute: every site asks, test_scale)
        return self.index(key, lambda: self._stores_named(attr, names, depth))

    def _stores_named(self, attr: str, names: set, depth: int) -> bool:
        for node in self.find((cst.Assign, cst.AnnAssign, cst.AugAssign)):
            targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
            for t in targets:
                direct_none = node.value is not None and _is_name(node.value, "None")  # (read as Optional: typed)
                if _is_attr_named(t, attr) and (isinstance(node, cst.AugAssign) or node.value is not None
                                                and not direct_none and not self._value_named(node.value, names, depth)):
                    return False
                if isinstance(t, (cst.Tuple, cst.List)) and any(
                        _is_attr_named(getattr(e, "value", None), attr) for e in t.elements):
                    return False
        return not self.find(cst.Call, lambda c: _code(c.func).strip().rsplit(".", 1)[-1] in (
            "setattr", "__setattr__") and any(isinstance(a.value, cst.SimpleString) and a.value.evaluated_value == attr
                                              for a in c.args))

    def _value_named(self, value: cst.BaseExpression, names: set, depth: int) -> bool:
        """Is `value` proven an instance of a class `names` names: a construction of one, None where the names say
        Optional, a local bound only to such values, a parameter annotated with them, a method of the module whose
        every path returns one, `dataclasses.replace` of one, an attribute or a container item the module fills
        only with them?"""
        if depth > _DEPTH:
            return False
        if isinstance(value, cst.Name):
            return bool(names & {"None", "Optional"}) if value.value == "None" else self._local_named(value, names, depth)
        if isinstance(value, cst.IfExp):
            return self._value_named(value.body, names, depth) and self._value_named(value.orelse, names, depth)
        if isinstance(value, cst.Call):
            callee = _code(value.func).strip()
            if isinstance(value.func, cst.Name) and callee in names - TYPING_NAMES and self.module_class(callee):
                return True  # (the module's own class, by the name's only binding: `compat.DSAMetadata(...)`, a
                # same-named class of another module, is not it: round AY)
            if callee in ("dataclasses.replace", "replace") and value.args:
                return self._value_named(value.args[0].value, names, depth + 1)
            if isinstance(value.func, cst.Attribute) and _is_name(value.func.value, "self"):
                return self._own_method(value) and self._returns_named(value.func.attr.value, names, depth + 1)
            return self._imported_named(value, names, depth + 1)
        if isinstance(value, cst.Attribute):
            return self._holds_named(value.attr.value, names, depth + 1) and not self.assigned_elsewhere(value.attr.value)
        if isinstance(value, cst.Subscript) and isinstance(value.value, cst.Attribute) and not _literal_key(value):
            return self._items_named(value.value.attr.value, names, depth + 1)
        return False

    def _local_named(self, name: cst.Name, names: set, depth: int) -> bool:
        """Is every value bound to the local (a parameter annotated with `names` only) of `names`? A value made from
        the local itself (`md = refine(md)`) is read assuming the local is (by induction on the bindings in the order
        they run: the first is made from something else)."""
        binding = self.tree.binding(name, name.value)
        assignments = list(binding.assignments) if binding is not None else []
        if not assignments:
            return False
        if id(binding) in self._assumed_named:
            return True
        self._assumed_named.add(id(binding))
        try:
            return all(self._bound_named(b, names, depth) for b in assignments)
        finally:
            self._assumed_named.discard(id(binding))

    def _bound_named(self, b, names: set, depth: int) -> bool:
        node = getattr(b, "node", None)
        if isinstance(node, cst.Param):
            return self._handed_named(node, names, depth + 1)
        value = getattr(self.tree.assignment_statement(b), "value", None)
        return value is not None and self._value_named(value, names, depth + 1)

    def _handed_named(self, param: cst.Param, names: set, depth: int) -> bool:
        """A parameter holds what its calls hand it (its annotation is a claim, round AY's setter handed another
        record): its function is called only here, by its name, and every call hands a value of `names`."""
        fdef = next((x for x in self.tree.ancestors(param) if isinstance(x, cst.FunctionDef)), None)
        if fdef is None or param.star or param not in (*fdef.params.params, *fdef.params.kwonly_params):
            return False
        name, params = fdef.name.value, [p.name.value for p in fdef.params.params]
        calls = self.every_call_named(name)
        spelled = [n for n in self.names_spelled(name) if n is not fdef.name]
        proj = self.project()
        if len(spelled) != len(calls) or any(f.path != proj.module for f in proj.files_naming([name])):
            return False  # (handed on as a value, or named by another file: callers not read)
        position = params.index(param.name.value) if param in fdef.params.params else None
        for call in calls:
            shift = 1 if isinstance(call.func, cst.Attribute) and self.tree.is_method(fdef) else 0
            arg = _argument_for(call, param.name.value, position, shift)
            if arg is None or any(a.star for a in call.args) or not self._value_named(arg, names, depth):
                return False
        return bool(calls)

    def _own_method(self, call: cst.Call) -> bool:
        """Does `self.m(...)` run a def of this module: its class or a base of it here defines m, and no base of
        theirs lies outside the module (round AY: an inherited builder of another file's base)?"""
        owner = next((x for x in self.tree.ancestors(call) if isinstance(x, cst.ClassDef)), None)
        lineage = self._lineage(owner) if owner is not None else []
        if not all(self._bound_by_def(c, call.func.attr.value) for c in lineage):
            return False
        local = {c.name.value for c in lineage}
        outside = any(_code(b.value).strip() not in local | {"object"} for c in lineage for b in c.bases)
        defines = any(self.find(cst.FunctionDef, lambda d: d.name.value == call.func.attr.value, c) for c in lineage)
        return defines and (not outside or bool(owner and self.find(
            cst.FunctionDef, lambda d: d.name.value == call.func.attr.value, owner)))

    def _returns_named(self, method: str, names: set, depth: int) -> bool:
        """Does every def of the module named `method` end in a return, and every return of it hand a value of
        `names` (a per-mode builder)?"""
        defs = self.find(cst.FunctionDef, lambda d: d.name.value == method)
        if not defs:
            return False
        for d in defs:
            body = d.body.body if isinstance(d.body, cst.IndentedBlock) else ()
            last = body[-1] if body else None
            ends = isinstance(last, cst.SimpleStatementLine) and isinstance(last.body[-1], cst.Return)
            returns = self.find(cst.Return, None, d)
            if not ends or any(r.value is None or not self._value_named(r.value, names, depth) for r in returns):
                return False
        return True

    def _imported_named(self, call: cst.Call, names: set, depth: int) -> bool:
        """A function imported from a file of the project (sglang-kt's kpool_plan: `md = init_kpool_extend_metadata(md,
        ...)`) whose body ends in a return and yields nothing, each return handing back a parameter it never binds
        again, or `dataclasses.replace` of one, that this call hands a value of `names`."""
        found = self.imported_function(call)
        if found is None:
            return False
        g, fdef, given = found
        if not isinstance(fdef.body[-1], ast.Return) or any(isinstance(n, (ast.Yield, ast.YieldFrom, ast.Await))
                                                            for n in ast.walk(fdef)):
            return False
        return all(isinstance(r, ast.Name) and given.get(r.id) is not None and not rebinds(fdef, r.id)
                   and self._value_named(given[r.id], names, depth) for r in handed_back(g, fdef))

    def _items_named(self, container: str, names: set, depth: int) -> bool:
        """Is every item the module stores under a computed key in `<x>.<container>` (a dict of records by batch
        size; items under literal keys are what literal keys read) of `names`, the container made by a display
        and filled by item stores only?"""
        for node in self.find((cst.Assign, cst.AnnAssign)):
            targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
            for t in targets:
                if isinstance(t, cst.Subscript) and _is_attr_named(t.value, container) and not _literal_key(t) \
                        and not self._value_named(node.value, names, depth):
                    return False
                if _is_attr_named(t, container) and node.value is not None and not _display_named(
                        node.value, lambda v: self._value_named(v, names, depth)):
                    return False
        return not self.find(cst.Attribute, lambda a: a.attr.value in (
            "update", "setdefault", "__setitem__", "append", "insert", "extend") and _is_attr_named(a.value, container)) \
            and not self.assigned_elsewhere(container)

    def _constructs_other(self, value: cst.BaseExpression, names: set) -> bool:
        """Is `value` a construction of a class of this module that `names` (an annotation's) does not name?"""
        callee = _code(value.func).strip().rsplit(".", 1)[-1] if isinstance(value, cst.Call) else ""
        return callee not in names and any(c.name.value == callee for c in self.find(cst.ClassDef))

    def _argument_contradicts(self, a, param: cst.Param, annotation: cst.BaseExpression) -> bool:
        """A parameter's annotation is a claim the module's calls may contradict (round T): a call of its function
        here hands it a construction of another class of the module, an attribute whose assignments do, or a
        local bound to either."""
        fdef = getattr(a.scope, "node", None)
        if not isinstance(fdef, cst.FunctionDef):
            return False
        names = _annotation_names(annotation) or set()
        params = [p.name.value for p in fdef.params.params]
        position = params.index(param.name.value) if param in fdef.params.params else None
        for call in self.find(cst.Call, lambda c: _code(c.func).strip().rsplit(".", 1)[-1] == fdef.name.value):
            shift = 1 if isinstance(call.func, cst.Attribute) and params[:1] == ["self"] else 0
            arg = _argument_for(call, param.name.value, position, shift)
            values = [arg]
            if isinstance(arg, cst.Name):
                values = [getattr(self.tree.assignment_statement(b), "value", None)
                          for b in self.tree.binding(arg, arg.value).assignments]
            for v in values:
                if v is not None and (self._constructs_other(v, names) or isinstance(v, cst.Attribute)
                                      and self._annotation_contradicted(v.attr.value, annotation)):
                    return True
        return False

    def assigned_elsewhere(self, attr: str, own: bool = True) -> bool:
        """Does another file of the project assign `<x>.<attr>` where x is, or is handed, an instance of a class of
        this module that sets `self.<attr>`? (An annotation is taken unless something contradicts it: a receiver
        nothing relates to these classes, as sglang's other backends' tables of backends, does not.)"""
        def build() -> bool:
            seeds = {c.name.value for c in self.find(cst.ClassDef)
                     if self.find(cst.Attribute, lambda a: _is_attr(a, "self", attr), c)}
            return bool(seeds) and bool(self.project().holder_writes(attr, seeds, own))
        return self.index(f"assigned-elsewhere:{attr}:{own}", build)

    def _lineage(self, cls: cst.ClassDef) -> list:
        """cls and the bases of it this module defines, by name (each once)."""
        out, todo = [], [cls]
        while todo:
            c = todo.pop()
            if any(c is o for o in out):
                continue
            out.append(c)
            names = {_code(b.value).strip() for b in c.bases}
            todo += [d for d in self.find(cst.ClassDef) if d.name.value in names]
        return out

    def base_sets_none(self, attr: str) -> bool:
        """Does a base class imported from another module of the project set `self.<attr>` to None?"""

        for cls in self.find(cst.ClassDef):
            for base in cls.bases:
                root = _root(base.value)
                for a in self.tree.binding(root, root.value).assignments if root is not None else ():
                    for qn in a.get_qualified_names_for(root.value) if isinstance(a, ImportAssignment) else ():
                        found = kernels.find_module(self.path, qn.name.rpartition(".")[0])
                        text = project.read_project_file(found) if found else None
                        if text and assigns_none(text, attr):
                            return True
        return False

    def declared(self, attr: str, owner: Optional[cst.ClassDef] = None) -> Optional[cst.BaseExpression]:
        """The annotation of `self.<attr>` (`self.x: T` or a class-level `x: T`) in `owner` or a base of it this
        module defines (round U: another class's annotation of the name says nothing of this one's); with no owner,
        anywhere in the module."""
        classes = self._lineage(owner) if owner is not None else self.find(cst.ClassDef)
        for cls in classes:
            for stmt in self.find(cst.AnnAssign, lambda a: _is_attr(a.target, "self", attr), cls):
                return stmt.annotation.annotation
        for cls in classes:
            for stmt in cls.body.body if isinstance(cls.body, cst.IndentedBlock) else ():
                for small in getattr(stmt, "body", ()) if isinstance(stmt, cst.SimpleStatementLine) else ():
                    if isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name) and small.target.value == attr:
                        return small.annotation.annotation
        return None


def _is_attr_named(node, attr: str) -> bool:
    """`<x>.<attr>` on any receiver."""
    return isinstance(node, cst.Attribute) and node.attr.value == attr


def _literal_key(sub: cst.Subscript) -> bool:
    """An item read or stored under a literal key (`table["page_table"]`)."""
    return len(sub.slice) == 1 and isinstance(sub.slice[0].slice, cst.Index) and isinstance(
        sub.slice[0].slice.value, (cst.SimpleString, cst.ConcatenatedString, cst.Integer))


def _display_named(value: cst.BaseExpression, named) -> bool:
    """A container display (or `dict()`) whose values under computed keys are each `named`; its literal-keyed
    values (tensors kept beside the records) are what literal keys read."""
    if isinstance(value, cst.Call) and _code(value.func).strip() in ("dict", "list") and not value.args:
        return True
    if isinstance(value, cst.Dict):
        return all(isinstance(e, cst.DictElement) and (isinstance(e.key, (cst.SimpleString, cst.ConcatenatedString))
                                                       or named(e.value)) for e in value.elements)
    if isinstance(value, (cst.List, cst.Tuple)):
        return all(isinstance(e, cst.Element) and named(e.value) for e in value.elements)
    return False
