"""docs/soundness.md `helper-identity`: the helper that gains the parameter is the one its callers reach:
defined once, not reassigned or setattr, decorated only by what passes every argument on
(SIGNATURE_KEEPING_DECORATORS, ARGUMENT_PASSING_DECORATORS), every override of it taking topk_length, no
metaclass that may replace it. Its other files: whole_project.py."""
from __future__ import annotations

from typing import Dict, Optional, Tuple

import libcst as cst
from libcst.helpers import get_full_name_for_node

from topk_migrate.cst.resolve import Function, dotted

from . import reach
from .quick import PARAM
from .syntax import _as_ast, _code, only_handed_on

# Decorators that keep a method's signature as written (any other one may not pass topk_length on).
SIGNATURE_KEEPING_DECORATORS = {"staticmethod", "classmethod"}
# Decorators called with no arguments that wrap the helper in a context and pass every argument on:
# `@torch.inference_mode()` / `@torch.no_grad()` on engines' forward helpers. Matched on what `torch`
# is imported as, never on the spelling alone.
ARGUMENT_PASSING_DECORATORS = {"torch.inference_mode", "torch.no_grad", "torch.enable_grad"}
# Decorators that hand the function itself back (PEP 698's `@override` sets `__override__` and returns it), matched
# on what they are imported as.
IDENTITY_DECORATORS = {"typing.override", "typing_extensions.override"}


class HelperIdentity:
    """docs/soundness.md `helper-identity` in this module (a mixin of analysis._Analysis)."""

    def _wrapping_decorator(self, fn: Function) -> Optional[str]:
        """The first decorator of fn that may replace it with a wrapper of its own: any but one that hands every
        argument on (`@torch.no_grad()`) or keeps the function (`staticmethod`)."""
        for d in fn.node.decorators:
            name = get_full_name_for_node(d.decorator) or _code(d.decorator).strip()
            if isinstance(d.decorator, cst.Call) and not d.decorator.args \
                    and self.expand(dotted(d.decorator.func)) in ARGUMENT_PASSING_DECORATORS:
                continue
            if name not in SIGNATURE_KEEPING_DECORATORS and self.expand(dotted(d.decorator)) not in IDENTITY_DECORATORS:
                return name
        return None

    def helper_identity(self, fn: Function) -> Optional[str]:
        """`helper-identity`: one definition, no decorator that may fix its signature,
        no same-named override without the parameter."""
        name = self._wrapping_decorator(fn)
        if name:
            return f"{fn.qualname} is decorated with `@{name}`, which may not pass topk_length on; add the parameter by hand"
        scope = self.tree.scope_of.get(fn.node)
        defs = scope[fn.name] if scope is not None else ()
        if len(defs) > 1:
            lines = sorted(self.tree.line(getattr(a, "node", None)) for a in defs if getattr(a, "node", None) is not None)
            return (f"{fn.qualname} is bound {len(defs)} times (lines {', '.join(map(str, lines))}); "
                    "a caller may reach a definition without topk_length")
        for node in self.attribute_assigns(fn.name):
            return (f"`{_code(node.target).strip()}` is assigned at line {self.tree.line(node.target)}: callers may "
                    f"reach another function than {fn.qualname}; add topk_length by hand")
        for call in self.setattr_calls():
            if len(call.args) > 1 and isinstance(call.args[1].value, cst.SimpleString) \
                    and call.args[1].value.evaluated_value == fn.name:
                return (f"setattr at line {self.tree.line(call)} replaces `{fn.name}`: callers may reach another "
                        f"function than {fn.qualname}; add topk_length by hand")
        why = self._metaclass_of(fn.class_name) if fn.class_name else None
        if why:
            return why
        if fn.class_name:  # `self.helper(..., topk_length=...)` also reaches same-named overrides
            for other in self.functions_named(fn.name):  # (a class's method, a class in a function's too)
                op = other.node.params
                if other.name != fn.name or other is fn or not self._in_class_body(other.node):
                    continue
                if any(p.name.value == PARAM for p in (*op.posonly_params, *op.params, *op.kwonly_params)):
                    if not only_handed_on(_as_ast(other.node), PARAM):
                        return (f"{other.qualname} overrides {fn.qualname} and already takes `{PARAM}`, which it reads "
                                "other than by handing it on as `topk_length=topk_length`: its meaning there is unknown "
                                "(round S); pass topk_length by hand")
                    continue
                if not isinstance(op.star_kwarg, cst.Param):
                    return f"{other.qualname} overrides {fn.qualname} without topk_length"
                what = self._forwarding(other)
                if what:
                    return (f"{other.qualname} overrides {fn.qualname} and takes **kwargs, but {what}: the "
                            "topk_length it hands on may not fit the rows it passes; give it an explicit "
                            "topk_length parameter and pass what fits")
        return None

    def _metaclass_of(self, cls: str) -> Optional[str]:
        """A metaclass on the helper's class, a class of this module it derives from or one deriving from it
        (`class Backend(metaclass=Traced)`): its `__new__` may replace the helper in the class's namespace
        before the class exists (round J1). `ABCMeta` and `type` do not."""
        made = self.index("metaclassed", self._metaclassed)
        if not made:
            return None
        bases = self.index("bases", self._bases)
        related, todo = set(self.subclasses(cls)), [cls]
        while todo:
            for b in bases.get(todo.pop(), ()):
                if b not in related:
                    related.add(b)
                    todo.append(b)
        for name in sorted(related & set(made)):
            node, meta = made[name]
            return (f"{name} is made by the metaclass `{meta}` (line {self.tree.line(node)}), which may replace its "
                    "methods; add topk_length by hand")
        return None

    def _metaclassed(self) -> Dict[str, Tuple[cst.ClassDef, str]]:
        """The classes of this module made by a metaclass other than `ABCMeta` or `type`, with its name."""
        out = {}
        for node in self.find(cst.ClassDef):
            for k in node.keywords:
                name = (get_full_name_for_node(k.value) or "").rsplit(".", 1)[-1]
                if k.keyword is not None and k.keyword.value == "metaclass" and name not in ("ABCMeta", "type"):
                    out.setdefault(node.name.value, (node, _code(k.value).strip()))
        return out

    def _in_class_body(self, node: cst.FunctionDef) -> bool:
        """Is the def a method: directly in a class's body, wherever that class is (in a function too)?"""
        block = self.tree.parent.get(node)
        return isinstance(self.tree.parent.get(block), cst.ClassDef)

    def _forwarding(self, other: Function) -> str:
        """"" if the method only hands its arguments, unchanged, to super() (reach.forwarded_call)."""
        d = _as_ast(other.node)
        if d is None:
            return "it could not be read"
        return reach.forwarded_call(d, other.name, self.tree.line(other.node) - d.lineno)[1]
