"""docs/soundness.md `metadata-in-scope`: the clipped-seqlen field's object is bound once, on every path to
the call, in the function that passes it, and is a parameter or a plain read of an attribute no class of the
module serves through code (metadata_at, which asks the other statements about the field it finds)."""
from __future__ import annotations

from typing import Optional, Set, Tuple

import libcst as cst
from libcst.helpers import get_full_name_for_node
from libcst.metadata import FunctionScope

from topk_migrate.cst.scopecheck import root_binding

from .syntax import _code


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
            if why is None and expr not in self.user_metadata:
                field_name = expr.rsplit(".", 1)[1]
                why = self.unclipped_write(field_name) or self.replaced_field(field_name) \
                    or self.replay_replaces(field_name)
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
        while isinstance(value, cst.Attribute):
            if value.attr.value in self._served_names() or "*" in self._served_names():
                return (f"`{root}` is read from `{_code(value).strip()}` (line {self.tree.line(stmt)}), which a "
                        "property or method of this module serves: which batch's metadata it returns is not proven")
            value = value.value
        if isinstance(value, cst.Name):
            return None
        return (f"`{root}` is bound at line {self.tree.line(stmt)} to `{_code(stmt.value).strip()[:60]}`, not a plain "
                "read of the metadata the engine stored for this batch (a call's result, an item of a table); "
                "pass topk_length by hand")

    def _class_held(self, attr: str) -> Optional[cst.CSTNode]:
        """An assignment of `attr` on a class rather than an instance: `type(self).attr = v`,
        `self.__class__.attr = v`, `cls.attr = v`, `Backend.attr = v` (a class of this module)."""
        classes = {c.name.value for c in self.find(cst.ClassDef)}

        def on_class(e: cst.BaseExpression) -> bool:
            if isinstance(e, cst.Call):
                return get_full_name_for_node(e.func) == "type"
            if isinstance(e, cst.Attribute):
                return e.attr.value == "__class__"
            return isinstance(e, cst.Name) and (e.value == "cls" or e.value in classes)

        for a in self.find(cst.Assign):
            for t in a.targets:
                if isinstance(t.target, cst.Attribute) and t.target.attr.value == attr and on_class(t.target.value):
                    return a
        return None

    def _served_names(self) -> Set[str]:
        """Names a class of this module serves through code: properties, methods, class-level bindings of an
        object made by a call (`property(...)`, a descriptor), and "*" where a class defines `__getattr__` or
        `__getattribute__`."""
        def build() -> Set[str]:
            out: Set[str] = set()
            for cls in self.find(cst.ClassDef):
                for d in cls.body.body:
                    if isinstance(d, cst.FunctionDef):
                        out.add(d.name.value)
                    if isinstance(d, cst.FunctionDef) and d.name.value in ("__getattr__", "__getattribute__"):
                        out.add("*")  # serves any name it is asked (round P)
                    for small in (d.body if isinstance(d, cst.SimpleStatementLine) else []):
                        value = getattr(small, "value", None)
                        if isinstance(small, (cst.Assign, cst.AnnAssign)) and isinstance(value, cst.Call):
                            # `property(...)`, or any object made at class level: a descriptor (round P)
                            targets = small.targets if isinstance(small, cst.Assign) else [small]
                            out |= {t.target.value for t in targets if isinstance(t.target, cst.Name)}
            return out
        return self.index("served-names", build)
