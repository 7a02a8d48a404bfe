"""docs/soundness.md `helper-identity`: the helper that gains the parameter is the one its callers reach:
defined once, not reassigned or setattr, decorated only by what passes every argument on
(SIGNATURE_KEEPING_DECORATORS, ARGUMENT_PASSING_DECORATORS), every override of it taking topk_length, no
metaclass that may replace it. Its other files: whole_project.py."""
from __future__ import annotations

import ast
from typing import Dict, Optional, Tuple

import libcst as cst
from libcst.helpers import get_full_name_for_node

from topk_migrate.cst.resolve import Function, dotted

from . import reach
from .quick import PARAM
from .syntax import _as_ast, _brief, _code, only_handed_on

# Decorators that keep a method's signature as written (any other one may not pass topk_length on).
SIGNATURE_KEEPING_DECORATORS = {"staticmethod", "classmethod"}
# Decorators called with no arguments that wrap the helper in a context and pass every argument on:
# `@torch.inference_mode()` / `@torch.no_grad()` on engines' forward helpers. Matched on what `torch`
# is imported as, never on the spelling alone.
ARGUMENT_PASSING_DECORATORS = {"torch.inference_mode", "torch.no_grad", "torch.enable_grad"}
# Decorators that hand the function itself back (PEP 698's `@override` sets `__override__` and returns it), matched
# on what they are imported as.
IDENTITY_DECORATORS = {"typing.override", "typing_extensions.override"}


_TYPE_CALLS = {"super().__new__", "super().__init__", "type.__new__", "type.__init__"}
# Metaclasses that make the class from its namespace as it is.
PLAIN_METACLASSES = ("ABCMeta", "type")


def _keeps_namespace(meta: Optional[ast.ClassDef]) -> bool:
    """A metaclass of the project that makes the class from the namespace it is handed as it is (a registry's:
    `cls = super().__new__(mcs, name, bases, namespace); BACKENDS[name] = cls`): only `__new__`/`__init__`, the
    namespace handed on to type's and read nowhere else, no attribute set on anything (round U's safe twin)."""
    if meta is None:
        return False
    for stmt in meta.body:
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) or isinstance(stmt, ast.Pass):
            continue
        if not isinstance(stmt, ast.FunctionDef) or stmt.name not in ("__new__", "__init__") or stmt.decorator_list:
            return False
        params = [a.arg for a in stmt.args.posonlyargs + stmt.args.args]
        if len(params) < 4 or stmt.args.vararg or stmt.args.kwarg:
            return False
        namespace, handed = params[3], set()
        for node in ast.walk(stmt):
            if isinstance(node, ast.Call) and reach._unparse(node.func) in _TYPE_CALLS:
                handed |= {id(a) for a in node.args if isinstance(a, ast.Name) and a.id == namespace}
            if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)) and any(
                    isinstance(t, ast.Attribute) for t in ast.walk(node) if isinstance(getattr(t, "ctx", None), (ast.Store, ast.Del))):
                return False
            if isinstance(node, ast.Call) and reach._unparse(node.func).rsplit(".", 1)[-1] in ("setattr", "delattr",
                                                                                              "__setattr__", "__delattr__"):
                return False
        if any(isinstance(n, ast.Name) and n.id == namespace and id(n) not in handed for n in ast.walk(stmt)):
            return False  # (read, or bound again, anywhere but where type's method is handed it)
    return True


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
        block = self._conditional_block(fn.node) if fn.class_name else None
        if block is not None:
            return (f"{fn.qualname} is defined under {block} in its class's body (line {self.tree.line(fn.node)}): where "
                    "it is not bound, callers reach a base's method of the name (round AV); define it unconditionally, "
                    "or add topk_length by hand")
        for cls in self.find(cst.ClassDef) if fn.class_name else ():  # (a subclass's `_forward = _forward_coalesced`:
            for line in cls.body.body:  # its instances reach that function by the helper's name, round AK)
                small = line.body if isinstance(line, cst.SimpleStatementLine) else []
                if any(isinstance(x, (cst.Assign, cst.AnnAssign, cst.AugAssign)) and any(
                        isinstance(t, cst.Name) and t.value == fn.name for t in (
                            [a.target for a in x.targets] if isinstance(x, cst.Assign) else [x.target])) for x in small):
                    return (f"{cls.name.value}'s body binds `{fn.name}` at line {self.tree.line(line)}: callers may "
                            f"reach another function than {fn.qualname}; add topk_length by hand")
        for node in self.attribute_assigns(fn.name):
            return (f"`{_code(node.target).strip()}` is assigned at line {self.tree.line(node.target)}: callers may "
                    f"reach another function than {fn.qualname}; add topk_length by hand")
        for call in self.setattr_calls():
            if len(call.args) > 1 and isinstance(call.args[1].value, cst.SimpleString) \
                    and call.args[1].value.evaluated_value == fn.name:
                return (f"setattr at line {self.tree.line(call)} replaces `{fn.name}`: callers may reach another "
                        f"function than {fn.qualname}; add topk_length by hand")
        why = self.metaclass_anywhere(fn.class_name) if fn.class_name else None
        if why:
            return why
        for call in self.find(cst.Call, lambda c: self.expand(dotted(c.func)) in ("type", "types.new_class")
                              and len(c.args) >= (3 if dotted(c.func) == "type" else 2)) if fn.class_name else ():
            return (f"`{_brief(call, 60)}` (line {self.tree.line(call)}) makes a class at run time, whose "
                    f"namespace may hold another `{fn.name}` for a subclass of {fn.class_name} (round U); add "
                    "topk_length by hand")
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

    def metaclass_anywhere(self, cls: str) -> Optional[str]:
        """_metaclass_of, and a metaclass (not `ABCMeta` or `type`) on a base of the class in another file, which
        the class inherits: its `__new__` or `__prepare__` may replace the method in the namespace (round U)."""
        why = self._metaclass_of(cls)
        if why:
            return why
        proj = self.project()
        for f, base in proj.ancestors(set(self.subclasses(cls))):
            for k in base.keywords:
                name = reach._unparse(k.value).rsplit(".", 1)[-1]
                if k.arg == "metaclass" and name not in PLAIN_METACLASSES \
                        and not _keeps_namespace(f.classes.get(name) if isinstance(k.value, ast.Name) else None):
                    return (f"{cls} derives from {base.name} ({proj.rel(f.path)}:{base.lineno}), made by the metaclass "
                            f"`{name}`, which may replace its methods; add topk_length by hand")
        return None

    def _metaclassed(self) -> Dict[str, Tuple[cst.ClassDef, str]]:
        """The classes of this module made by a metaclass other than `ABCMeta` or `type`, with its name."""
        out = {}
        for node in self.find(cst.ClassDef):
            for k in node.keywords:
                name = (get_full_name_for_node(k.value) or "").rsplit(".", 1)[-1]
                if k.keyword is not None and k.keyword.value == "metaclass" and name not in PLAIN_METACLASSES:
                    out.setdefault(node.name.value, (node, _code(k.value).strip()))
        return out

    def _conditional_block(self, node: cst.FunctionDef) -> Optional[str]:
        """The block of its class's body a method is defined under (`if FUSED:`, `try:`/`else:`, a `match` case, a
        loop, a `with`), by its keyword; None where the body binds it directly."""
        for up in self.tree.ancestors(node):
            if isinstance(up, (cst.ClassDef, cst.FunctionDef)):
                return None
            if isinstance(up, (cst.If, cst.Try, cst.TryStar, cst.With, cst.For, cst.While, cst.Match)):
                return f"`{type(up).__name__.lower().replace('trystar', 'try')}`"
        return None

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
