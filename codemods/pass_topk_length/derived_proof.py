"""What the derived lengths (`--lengths derived`, docs/soundness.md "The derived lengths") must prove
besides the callee's identity: they read the object the kernel reads (the indices' stable name or the call's
own `:=`, a `**` mapping whose unpacking runs no code), the callee is the kernel's own interface, and nothing
sees the bound name or the added ops. The lengths' text: derived.py."""
from __future__ import annotations

import ast
import re
import textwrap
from dataclasses import replace
from typing import List, Optional

import libcst as cst
from libcst.helpers import get_full_name_for_node
from libcst.metadata import FunctionScope, GlobalScope, ImportAssignment

from topk_migrate import bounded
from topk_migrate.cst.resolve import CallInfo
from topk_migrate.model import Site, Status

from . import attributes, derived, reach
from .group import Group
from .identity import kernel_alias
from .quick import is_op_level
from .syntax import _code, _indices_arg, _is_name, _is_none, _root


def _class_ast(cls: cst.ClassDef) -> Optional[ast.ClassDef]:
    """The class as the standard library's parser reads it (reach judges class bodies on that tree)."""
    tree = bounded.python_facts(textwrap.dedent(cst.Module([]).code_for_node(cls)))
    node = tree.body[0] if tree is not None and tree.body else None
    return node if isinstance(node, ast.ClassDef) else None


_CONVERSION = re.compile(r"%(?:%|\([^()]*\)[#0 +-]*(?:\d+)?(?:\.\d+)?[diouxXeEfFgGcrsa])")


def _named_format(expr: cst.BaseExpression) -> bool:
    """A literal %-format whose every conversion names its key (`%(k)s`, `%%`): formatting it with a mapping
    looks up those keys only."""
    if not isinstance(expr, (cst.SimpleString, cst.ConcatenatedString)):
        return False
    text = expr.evaluated_value
    return isinstance(text, str) and "%" not in _CONVERSION.sub("", text) and derived.BOUND_NAME not in text


def _a_cell(binding, scope: cst.CSTNode) -> bool:
    """Is the name read in a scope nested in `scope` (a def, lambda or comprehension): a cell, which
    `f.__closure__[i].cell_contents = x` in a later argument rebinds with no statement (round L)? The call then
    binds its own name instead of reading this one again."""
    return any(getattr(r.scope, "node", None) is not scope for x in binding.assignments for r in x.references)


def _other_key(key) -> bool:
    """A literal key that is none of the names the rewrite binds (derived.BOUND_NAME, numbered or not)."""
    return isinstance(key, cst.SimpleString) and not str(key.evaluated_value).startswith(derived.BOUND_NAME)


def _is_dict(value: cst.BaseExpression) -> bool:
    """A dict display or comprehension: unpacking it with `**` runs no code (its values were made before)."""
    return isinstance(value, cst.DictComp) or isinstance(value, cst.Dict) and all(
        isinstance(e, cst.DictElement) for e in value.elements)


class DerivedLengths:
    """The derived lengths' own checks (docs/soundness.md, `--lengths derived`; a mixin of analysis._Analysis)."""

    def _impure_mapping(self, c: CallInfo, mapping: cst.Arg) -> Optional[str]:
        """Why the derived lengths cannot go under c's `**` mapping: they are evaluated where the mapping is, so it
        must be the call's last argument (no later one may change the indices after them), and unpacking it must
        run no code: its function's own `**` parameter never rebound (a fresh dict, round K), a local bound only to
        dict displays, or `self.<attr>` proven to hold only those (attributes.attribute_values)."""
        fn = c.function.node if c.function is not None else None
        star = fn.params.star_kwarg if isinstance(fn, cst.FunctionDef) else None
        if c.node.args[-1] is not mapping:
            return "nor can the derived lengths go under it: it is not the call's last argument"
        if isinstance(mapping.value, cst.Attribute) and _is_name(mapping.value.value, "self"):
            why = attributes.attribute_values(self, c, mapping.value.attr.value, _is_dict)
            return f"nor can the derived lengths go under it: {why}" if why else None
        name = mapping.value.value if isinstance(mapping.value, cst.Name) else None
        own = star is not None and name == star.name.value
        if name is None or not own and self._stable_name(c, mapping.value) is None:
            return ("nor can the derived lengths go under it: it is not its function's own `**` parameter, a local "
                    "or an attribute of self holding a dict")
        unlisted = self.unlisted_binding(name)
        if unlisted is not None:
            return f"nor can the derived lengths go under it: `{name}` is also bound at line {self.tree.line(unlisted)}"
        for a in self.tree.binding(mapping.value, name).assignments:
            stmt = self.tree.assignment_statement(a)
            if getattr(a, "node", None) is not star and not (own is False and isinstance(stmt, cst.Assign)
                                                             and len(stmt.targets) == 1 and _is_dict(stmt.value)):
                return f"nor can the derived lengths go under it: `{name}` is bound at line {self.tree.line(stmt or a.node)} to what may not be a dict"
        return None

    def derived_or(self, c: CallInfo, site: Site) -> Site:
        """A call whose kernel takes topk_length but whose reference fix is not proven: with --lengths derived,
        the lengths derived from its own indices; else `site`, its reason saying whether they would fix it."""
        blocker = self.underivable(c)
        if not self.lengths.startswith("derived"):
            return site if blocker else replace(site, reason=site.reason + derived.HINT)
        if blocker:
            return replace(site, reason=f"{site.reason}; nor do the lengths derived at the call fix it: {blocker}")
        g = self.derived_group(c, site.reason)
        self.groups.append(g)
        return self.site(c, Status.FIXABLE, g.reason)

    def derived_group(self, c: CallInfo, why: str) -> Group:
        """The group that passes c the lengths derived from its indices (underivable(c) said nothing)."""
        stable = self._stable_name(c, _indices_arg(c.node))
        taken = sum(g.kind == "derived" and g.bind_indices and g.calls[0].function is c.function for g in self.groups)
        name = stable or (derived.BOUND_NAME if not taken else f"{derived.BOUND_NAME}_{taken + 1}")
        g = Group("derived", [c], [], inline=True, indices=name, bind_indices=stable is None)
        under = " under its `**` mapping, whose own topk_length still wins" if any(a.star for a in c.node.args) else ""
        g.reason = f"passes topk_length derived from the call's indices (--lengths derived){under}: {why}"
        return g

    def underivable(self, c: CallInfo) -> Optional[str]:
        """Why the lengths derived at the call cannot be passed to c (its callee is the kernel and takes the
        parameter: classify asked that first), or None."""
        arg = _indices_arg(c.node)
        if arg is None:
            return "the call's indices are not found (neither `indices=` nor its third positional argument)"
        why = self._stable_name(c, arg) is None and (self._walrus_blocker(c.node) or self._locals_read(c))
        if why:
            return why
        for w in self.index("frame-writes", lambda: self.project().frame_writes()):
            return (f"{w.what} at {w.where()}: a later argument may rebind the indices' name through it, which the "
                    "analysis cannot follow; pass topk_length by hand")
        why = self._own_interceptor()
        if why:
            return f"{why}: the ops the derived lengths add would reach it; pass topk_length by hand"
        for w in self.index("tensor-interceptors", lambda: self.project().tensor_interceptors()):
            return (f"{w.what} ({w.where()}): the ops the derived lengths add would reach it; pass topk_length "
                    "by hand")
        return self.project_wrapper(c) or self.index(f"rebinds:{c.callee}", lambda: self.kernel_rebound(c))

    def project_wrapper(self, c: CallInfo) -> Optional[str]:
        """The callee is a function of this project (not the kernel's own interface): it may hand the op other
        indices, rows or arguments than it was given, so lengths derived from its arguments prove nothing."""
        root = _root(c.node.func)
        kernel = c.callee.rsplit(".", 1)[-1]
        if root is not None:
            for x in self.tree.binding(root, root.value).assignments:
                stmt = self.tree.assignment_statement(x)
                if isinstance(getattr(x, "node", None), cst.Param) and root.value in ("self", "cls"):
                    if self.functions_named(kernel):  # a method of that name here may be what it reaches
                        return (f"`{kernel}` is also a method defined in this module: what it hands the op is not "
                                "what the derived lengths read; pass topk_length by hand")
                    continue
                if id(c.node) in self.through_alias and kernel_alias(stmt, self.facts.imports):
                    continue  # (callee_identity proved what it aliases)
                if not isinstance(x, ImportAssignment) and not (stmt is not None and _is_none(stmt.value)):
                    line = self.tree.line(x.node) if getattr(x, "node", None) is not None else 0
                    return (f"`{root.value}` is defined in this module (line {line}), not imported from the kernel: "
                            "what it hands the op is not what the derived lengths read; pass topk_length by hand")
        if "." in c.callee and not is_op_level(c.callee):
            iface = self.vendored(c.callee)
            if iface is not None and not iface.installed:
                return (f"{c.callee} is defined in this project ({iface.path}:{iface.line}), not the kernel's own "
                        "interface: what it hands the op is not what the derived lengths read; pass topk_length by hand")
        return None

    def _stable_name(self, c: CallInfo, arg: Optional[cst.BaseExpression]) -> Optional[str]:
        """The indices' name, where reading it again after the call's other arguments reads the same object:
        a local of the call's function, read in its own body (not a closure's: a later argument may resume
        the frame that binds it), that nothing nested declares nonlocal, no `:=` among the arguments."""
        if not isinstance(arg, cst.Name) or c.function is None:
            return None
        b = self.tree.binding(c.node, arg.value)
        scope = next((x for x in self.tree.ancestors(c.node)
                      if isinstance(x, (cst.Lambda, cst.FunctionDef, cst.ClassDef, *_COMPREHENSIONS))), None)
        if isinstance(scope, _COMPREHENSIONS):  # a variable of the comprehension the call runs in: no `:=` rebinds it
            mine = b.assignments and all(getattr(x.scope, "node", None) is scope for x in b.assignments)
            plain = not _a_cell(b, scope)
            return arg.value if mine and plain and not self.tree.inside(c.node, _iterable_of(scope)) else None
        if scope is not c.function.node:
            return None
        if not b.assignments or not all(isinstance(x.scope, FunctionScope) and getattr(x.scope, "node", None)
                                        is c.function.node for x in b.assignments):
            return None
        # (a `:=` anywhere in the function, a generator expression's too: LibCST files that one under the
        # comprehension's scope, but it binds the function's local, and a later argument may run it)
        rebinders = self.tree.find((cst.Nonlocal, cst.Global, cst.NamedExpr), within=c.function.node)
        if any(isinstance(n, cst.NamedExpr) and _is_name(n.target, arg.value)
               or not isinstance(n, cst.NamedExpr) and any(x.name.value == arg.value for x in n.names)
               for n in rebinders):
            return None
        return None if _a_cell(b, c.function.node) else arg.value

    def _own_interceptor(self) -> Optional[str]:
        """A class of this module that sees tensor ops (reach.Project.tensor_interceptors, for the others): once
        per module (the class bodies are read only where a class may be one)."""
        def build() -> Optional[str]:
            for cls in self.find(cst.ClassDef):
                bases = {(get_full_name_for_node(b.value) or "").rsplit(".", 1)[-1] for b in cls.bases}
                methods = {d.name.value for d in cls.body.body if isinstance(d, cst.FunctionDef)}
                tensor = "Tensor" in bases
                if not reach.interceptor(cls.name.value, bases, methods, tensor):
                    continue
                why = reach.interceptor(cls.name.value, bases, methods, tensor, _class_ast(cls))
                if why and not (tensor and self.project().tensor_never_made(cls.name.value, self.source)):
                    return why
            return None
        return self.index("own-interceptor", build)

    def _locals_read(self, c: CallInfo) -> Optional[str]:
        """Who may see the local the rewrite binds (`:=`): the call's function reading its own namespace
        (`locals()`, `vars()`) other than by a literal name, or a frame's locals read whole in the project."""
        fn = c.function.node if c.function is not None else None
        for call in (self.find(cst.Call, within=fn) if fn is not None else []):
            name = get_full_name_for_node(call.func) or ""
            if name in ("locals", "vars", "dir") and not call.args and not self._read_by_literal(call):
                return f"`{name}()` in `{c.function.name}` would see the name the rewrite binds the indices to"
        for node in self.index("namespace-values", self._namespace_values):
            return (f"`{_code(node)}` at line {self.tree.line(node)} is taken as a value: what it reads may be "
                    "the namespace of the call's function")
        for w in self.index("frame-reads", lambda: self.project().frame_enumerations()):
            return f"{w.what} at {w.where()}: it would see the name the rewrite binds the indices to"
        return None

    def _namespace_values(self) -> List[cst.CSTNode]:
        """`locals`/`vars` anywhere in the module other than called by their plain name (`builtins.locals()`,
        `_scope = locals`): any function's namespace, read whole where it is called. Once per module."""
        out = []
        for node in self.find((cst.Name, cst.Attribute)):
            leaf = node.attr if isinstance(node, cst.Attribute) else node
            up = self.tree.parent.get(node)
            if leaf.value in ("locals", "vars") and not (isinstance(up, cst.Call) and up.func is node
                                                         and isinstance(node, cst.Name)) \
                    and not (isinstance(up, cst.Attribute) and up.attr is node):
                out.append(node)
        return out

    def _read_by_literal(self, node: cst.CSTNode) -> bool:
        """Is the namespace `node` returns read only by keys the source spells: `[...]` or `.get(...)` with a
        literal, the mapping of a %-format whose conversions are all named, `str.format_map`/`format(**...)` of a
        literal (both look keys up), or the one argument of a logging call's named %-format? A name the rewrite
        adds is never looked up by them."""
        up = self.tree.parent.get(node)
        if isinstance(up, cst.Subscript) and up.value is node:
            return len(up.slice) == 1 and _other_key(getattr(up.slice[0].slice, "value", None))
        if isinstance(up, cst.BinaryOperation) and up.right is node and isinstance(up.operator, cst.Modulo):
            return _named_format(up.left)
        call = self.tree.parent.get(up)
        if isinstance(up, cst.Attribute) and up.attr.value == "get" and isinstance(call, cst.Call):
            return call.func is up and bool(call.args) and _other_key(call.args[0].value)
        if not (isinstance(up, cst.Arg) and isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute)):
            return False
        method, receiver = call.func.attr.value, call.func.value
        if isinstance(receiver, (cst.SimpleString, cst.ConcatenatedString)) and len(call.args) == 1:
            text = receiver.evaluated_value
            return isinstance(text, str) and derived.BOUND_NAME not in text and (
                method == "format_map" and not up.star or method == "format" and up.star == "**")
        return self._logged_by_key(call, up)

    def _logged_by_key(self, call: cst.Call, arg: cst.Arg) -> bool:
        """`log.debug("... %(k)s ...", locals())`: log bound only to `logging.getLogger(...)` at module level,
        the mapping the one argument after a named %-format (a LogRecord formats `msg % mapping`)."""
        level = call.func.attr.value
        if any(a.keyword and a.keyword.value not in ("exc_info", "stack_info", "stacklevel", "extra") or a.star
               for a in call.args):  # (`extra` sets the record's own attributes, never its arguments)
            return False
        args = [a for a in call.args if not a.keyword][1 if level == "log" else 0:]
        if level not in ("debug", "info", "warning", "error", "critical", "exception", "log") or len(args) != 2 \
                or args[1] is not arg or not _named_format(args[0].value):
            return False
        logger = call.func.value
        if isinstance(logger, cst.Call):
            ok, name = self._stdlib_get_logger(logger), ""  # `logging.getLogger(__name__).debug(...)`
        elif isinstance(logger, cst.Name):
            bindings = self.tree.binding(logger, logger.value).assignments
            ok, name = self._stdlib_logging(logger) or bool(bindings) and all(
                isinstance(x.scope, GlobalScope) and self._gets_logger(x) for x in bindings), logger.value
        else:
            return False
        return ok and not self.index(f"logging-extended:{name}",
                                     lambda: self.project().logging_extended(name, self.source))

    def _gets_logger(self, binding) -> bool:
        stmt = self.tree.assignment_statement(binding)
        return isinstance(stmt, cst.Assign) and len(stmt.targets) == 1 and self._stdlib_get_logger(stmt.value)

    def _stdlib_get_logger(self, value: cst.BaseExpression) -> bool:
        """`logging.getLogger(...)`, `logging` the standard library's on every binding."""
        func = value.func if isinstance(value, cst.Call) else None
        return isinstance(func, cst.Attribute) and func.attr.value == "getLogger" and isinstance(func.value, cst.Name) \
            and self._stdlib_logging(func.value)

    def _stdlib_logging(self, name: cst.Name) -> bool:
        """Is every binding of `name` that reaches it an import of the standard library's `logging` (round L:
        `import logging` then `from fleet import logging` in a `try`)?"""
        bindings = self.tree.binding(name, name.value).assignments
        return bool(bindings) and all(isinstance(x, ImportAssignment) and {q.name for q in x.get_qualified_names_for(
            name.value)} == {"logging"} for x in bindings)

    def _walrus_blocker(self, node: cst.CSTNode) -> Optional[str]:
        """Why `(name := indices)` cannot stand at node: Python refuses it in a comprehension's iterable and in
        a class body's comprehensions (a lambda in between changes nothing), and in a class body or at module
        level it would leave an attribute or a global holding the indices. A def's defaults, annotations and
        decorators run where the def is (the class body, the module), not in its body; a lambda's body is its
        own scope."""
        prev, in_lambda = node, False
        for a in self.tree.ancestors(node):
            if isinstance(a, _COMPREHENSIONS):  # `:=` binds in the scope around it, but never in an iterable
                if any(self.tree.inside(node, f.iter) for f in _for_ins(a)):
                    return "the call sits in a comprehension's iterable, where its indices cannot be bound once (`:=`)"
            if isinstance(a, cst.FunctionDef) and prev is a.body:
                return None
            in_lambda = in_lambda or isinstance(a, cst.Lambda) and prev is a.body
            if isinstance(a, cst.ClassDef) and not in_lambda:
                return "the call runs in a class body, where binding its indices once (`:=`) would add an attribute"
            prev = a
        return None if in_lambda else "the call runs at module level, where binding its indices once (`:=`) would add a global"


_COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)


def _for_ins(comp) -> List[cst.CompFor]:
    """Every `for ... in ...` clause of a comprehension."""
    out, f = [], comp.for_in
    while f is not None:
        out.append(f)
        f = f.inner_for_in
    return out


def _iterable_of(comp) -> cst.BaseExpression:
    """The first `in ...` of a comprehension: evaluated outside it, in the enclosing scope."""
    return comp.for_in.iter
