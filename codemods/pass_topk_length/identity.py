"""docs/soundness.md `callee-identity`: the name called is the kernel at run time (callee_identity): every
binding that reaches the call is an import the gate accepts or an alias of one kernel (kernel_alias), no
attribute assignment, setattr or star import rebinds it, a kernel the project defines is a plain forwarding
wrapper; also which calls of the module are the kernel's (kernel_calls: through an alias, or a `self.<attr>`
holding one)."""
from __future__ import annotations

import ast
import os
from dataclasses import replace
from typing import Dict, List, Optional, Sequence, Set, Tuple

import libcst as cst
from libcst.helpers import get_full_name_for_node
from libcst.metadata import GlobalScope, ImportAssignment

from topk_migrate import bounded, kernels, project
from topk_migrate.cst.resolve import CallInfo, dotted
from topk_migrate.model import Capability

from . import attributes, reach
from .quick import ENTRY_POINTS, OP_TOPK_LENGTH_POSITION, PARAM, expand, is_kernel, is_op_level
from .syntax import _as_ast, _brief, _code, _is_attr, _is_name, _is_none, _root, assigned_target, name_reads


def _forwarded_callee(tree: ast.Module, d: ast.AST) -> str:
    """The dotted name a plain forwarding wrapper's one call reaches through its module's top-level imports
    (`_fm.flash_mla_sparse_fwd` with `from sgl_kernel import flash_mla as _fm`), or ""."""
    call, _ = reach.forwarded_call(d)
    func = call.func if call is not None else None
    chain = []
    while isinstance(func, ast.Attribute):
        chain.append(func.attr)
        func = func.value
    if not isinstance(func, ast.Name):
        return ""
    bound = {}
    for node in tree.body:
        for a in node.names if isinstance(node, (ast.Import, ast.ImportFrom)) else ():
            if isinstance(node, ast.Import):
                bound[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
            elif node.module and not node.level:
                bound[a.asname or a.name] = f"{node.module}.{a.name}"
    head = bound.get(func.id)
    return ".".join([head, *reversed(chain)]) if head else ""


def _binds(node: ast.AST, name: str) -> bool:
    """Does the node bind `name` (an assignment or deletion, a def or class, an import)?"""
    if isinstance(node, ast.Name):
        return node.id == name and isinstance(node.ctx, (ast.Store, ast.Del))
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return node.name == name
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return any((a.asname or a.name.split(".")[0]) == name for a in node.names)
    return False


def _sibling_module(path: str, node: ast.ImportFrom, name: str) -> bool:
    """Does a relative import name a Python file of the package (`from .impl import f`, `from . import impl`)?"""
    base = os.path.dirname(path)
    for _ in range(node.level - 1):
        base = os.path.dirname(base)
    parts = (node.module or "").split(".") if node.module else []
    alias = next(a for a in node.names if (a.asname or a.name.split(".")[0]) == name)
    candidates = [os.path.join(base, *parts) + ".py", os.path.join(base, *parts, "__init__.py")] if parts else []
    candidates += [os.path.join(base, *parts, alias.name) + ".py"]
    return any(os.path.isfile(c) for c in candidates)


PARTIAL_KEPT = {PARAM, "q", "indices"}  # keywords a partial of the kernel may not bind: which argument is which


def kernel_alias(stmt: Optional[cst.CSTNode], imports: Dict[str, str]) -> Optional[Tuple[cst.BaseExpression, Optional[cst.Call]]]:
    """`name = K` or `name = functools.partial(K, kw=...)`, K the kernel as the module imports it (`K`, `fm.K`):
    (K's expression, the partial or None). Calls through `name` are the kernel's (callee_identity checks every
    binding that reaches them); a partial may preset keywords only, and none that decides which argument is which."""
    if not isinstance(stmt, cst.Assign) or len(stmt.targets) != 1 or not isinstance(stmt.targets[0].target, cst.Name):
        return None
    return alias_value(stmt.value, imports)


def alias_value(value: cst.BaseExpression, imports: Dict[str, str]) -> Optional[Tuple[cst.BaseExpression, Optional[cst.Call]]]:
    """kernel_alias of the value an alias is bound to (a name's, or `self.attr`'s: attributes.attribute_values)."""
    wrapper = None
    if isinstance(value, cst.Call):
        if expand(imports, dotted(value.func) or "") != "functools.partial":
            return None
        if not value.args or value.args[0].keyword or value.args[0].star or any(
                a.star or not a.keyword or a.keyword.value in PARTIAL_KEPT for a in value.args[1:]):
            return None
        wrapper, value = value, value.args[0].value
    name = dotted(value) if isinstance(value, (cst.Name, cst.Attribute)) else None
    if not name or name.partition(".")[0] not in imports or not is_kernel(expand(imports, name)):
        return None
    return value, wrapper


def _assigns_self_attribute(stmt: cst.CSTNode) -> bool:
    """`self.attr = value` (or `self.attr: T = value`)."""
    target = assigned_target(stmt)
    return isinstance(target, cst.Attribute) and _is_name(target.value, "self")


def _misplaced_length(call: ast.Call, name: str, where: str) -> Optional[str]:
    """A wrapper handing its `topk_length` on by position lands it where the op it calls takes it (an entry point's
    place, else the op's seventh: q, kv, indices, sm_scale, d_v, attn_sink, topk_length), or hands it by keyword
    (round V: a wrapper in its own order, `(q, kv, indices, sm_scale, topk_length, d_v)`, lands it in `d_v`)."""
    inner = reach._unparse(call.func).rsplit(".", 1)[-1]
    place = ENTRY_POINTS.get(inner, OP_TOPK_LENGTH_POSITION)  # (an op, or a name for it: the op's order)
    for i, arg in enumerate(call.args):
        if isinstance(arg, ast.Name) and arg.id == PARAM and i != place:
            return (f"`{name}` is defined in this project ({where}) and hands `{PARAM}` to `{inner}` as its argument "
                    f"{i + 1} by position, where that op may take another parameter; hand it on by keyword "
                    f"(`{PARAM}={PARAM}`), or pass topk_length by hand")
    return None


class CalleeIdentity:
    """docs/soundness.md `callee-identity` (a mixin of analysis._Analysis)."""

    def forwards_unchanged(self, c: CallInfo, d, where: str, offset: int = 0) -> Optional[str]:
        """A kernel defined in this project is a plain forwarding wrapper (reach.forwarded_call):
        whatever it takes (the gate read its signature, or its module's declaration), it hands on with the
        rows and indices it was given. Else why not."""
        name = c.callee.rsplit(".", 1)[-1]
        call, what = reach.forwarded_call(d, None, offset)
        if call is None and not what:
            return None  # a stub: nothing runs before or after
        if call is None:
            return (f"`{name}` is defined in this project ({where}) and {what}: the rows or indices the kernel gets "
                    "may not be the ones topk_length is computed for; pass topk_length by hand, or make it a plain "
                    "wrapper that hands its arguments on unchanged")
        return _misplaced_length(call, name, where)  # (what it takes, the gate decided: its signature, its module)

    def kernel_calls(self) -> List[CallInfo]:
        """The module's kernel calls: by the kernel's name, and through a name every binding of which that reaches
        the call is an alias of one kernel (kernel_alias), with that kernel as the callee."""
        aliases = {s.targets[0].target.value for s in self.find(cst.Assign) if kernel_alias(s, self.facts.imports)}
        held = {assigned_target(s).attr.value for s in self.find((cst.Assign, cst.AnnAssign), _assigns_self_attribute)
                if alias_value(s.value, self.facts.imports) or isinstance(s.value, cst.Name) and s.value.value in aliases}
        out = []
        for c in self.facts.calls:
            callee = None
            if is_kernel(c.callee):
                out.append(c)
            elif isinstance(c.node.func, cst.Name) and c.node.func.value in aliases:
                callee = self.alias_callee(c)
            elif isinstance(c.node.func, cst.Attribute) and _is_name(c.node.func.value, "self") \
                    and c.node.func.attr.value in held:
                callee = self.held_callee(c)
            if callee:
                self.through_alias.add(id(c.node))
                out.append(replace(c, callee=callee))
        return out

    def held_callee(self, c: CallInfo) -> Optional[str]:
        """The one kernel every value `self.<attr>` can hold aliases (attributes.attribute_values), else None; the
        attribute is then sealed where no other file names it (its value uses are not sites)."""
        found = set()

        def accept(value: cst.BaseExpression) -> bool:
            alias = alias_value(value, self.facts.imports) or self._module_alias(value)
            if alias is not None:
                found.add(self.expand(dotted(alias[0])))
            return alias is not None

        attr = c.node.func.attr.value
        if self._changed_through(lambda n: isinstance(n, cst.Attribute) and n.attr.value == attr):
            return None
        if attributes.attribute_values(self, c, attr, accept, class_level=False) or len(found) != 1:
            return None
        self.sealed.add(attr)  # (attribute_values asked that no other file names it)
        return found.pop()

    def _module_alias(self, value: cst.BaseExpression) -> Optional[Tuple[cst.BaseExpression, Optional[cst.Call]]]:
        """kernel_alias of `_attend` in `self.fwd = _attend`: bound once, at module level, to K or a partial of K,
        named by no other file, never read through, and read here only by its calls and by such assignments
        (round N's s_held_via_module_alias); else None."""
        if not isinstance(value, cst.Name) or self.unlisted_binding(value.value) is not None:
            return None
        name, bindings = value.value, self.tree.binding(value, value.value).assignments
        if len(bindings) != 1 or not isinstance(bindings[0].scope, GlobalScope) or not attributes.sealed(self, name) \
                or self._changed_through(lambda n: _is_name(n, name)):
            return None
        for n, up in name_reads(self.tree, name):
            held = isinstance(up, (cst.Assign, cst.AnnAssign)) and up.value is n and _assigns_self_attribute(up)
            if not (held or isinstance(up, cst.Call) and up.func is n):
                return None
        return kernel_alias(self.tree.assignment_statement(bindings[0]), self.facts.imports)

    def match_captured(self, name: str) -> Optional[cst.CSTNode]:
        """A `match` pattern of the module that binds `name` (`case x:`, `case {...: x}`, `case [*x]`, `as x`): a
        binding the scope analysis does not list (round K)."""
        for node in self.find((cst.MatchAs, cst.MatchStar, cst.MatchMapping)):
            bound = node.rest if isinstance(node, cst.MatchMapping) else node.name
            if isinstance(bound, cst.Name) and bound.value == name:
                return node
        return None

    def unlisted_binding(self, name: str) -> Optional[cst.CSTNode]:
        """A binding of `name` the scope analysis may not list where it reaches: a `match` capture
        (match_captured), or a `:=` anywhere in the module (in a generator expression LibCST files it under the
        comprehension, but it binds the function's name: round M)."""
        found = self.match_captured(name)
        if found is None:
            found = next((n for n in self.find(cst.NamedExpr) if _is_name(n.target, name)), None)
        return found

    def _changed_through(self, holds) -> bool:
        """Is an attribute of what a holder (`holds(node)`) holds read anywhere in the module (`attend.__setstate__`,
        `self.fwd.func`): the partial or function the alias holds may be changed through it (round M)?"""
        return any(holds(n.value) for n in self.find(cst.Attribute))

    def alias_callee(self, c: CallInfo) -> Optional[str]:
        """The one kernel every binding of c's name that reaches it aliases, else None."""
        name = c.node.func.value
        if self.unlisted_binding(name) is not None or not self._only_called(name):
            return None
        found, partial, local = set(), False, True
        for a in self.tree.binding(c.node.func, c.node.func.value).assignments or (None,):
            alias = kernel_alias(self.tree.assignment_statement(a), self.facts.imports) if a is not None else None
            if alias is None:
                return None
            found.add(self.expand(dotted(alias[0])))
            partial, local = partial or alias[1] is not None, local and not isinstance(a.scope, GlobalScope)
        if partial and not local and not attributes.sealed(self, name):
            return None  # (another file may change the partial it holds: `backend._attend.__setstate__(...)`, round N)
        return found.pop() if len(found) == 1 else None

    def _only_called(self, name: str) -> bool:
        """Is every read of `name` in the module a call of it (rounds M and N: a partial handed on,
        `profiler.track(_attend)`, or read through, `attend.__setstate__(...)`, may have its function swapped)?"""
        return all(isinstance(up, cst.Call) and up.func is n for n, up in name_reads(self.tree, name))

    def alias_identity(self, c: CallInfo, target: cst.BaseExpression, partial: Optional[cst.Call], line: int) -> Optional[str]:
        """An alias (`attend = K`, `attend = functools.partial(K, d_v=...)`) is the kernel when `functools` is the
        module's import and every binding of K's root that reaches the alias is an import the gate accepts."""
        checked = [(partial.func, "functools.partial")] if partial is not None else []
        for w in self.project().attribute_hooks({"partial"}) if partial is not None else ():
            return (f"{w.what} at {w.where()}: `functools.partial` may not be the standard library's at run time; "
                    "pass topk_length by hand")
        for expr, what in [*checked, (target, "the kernel")]:
            root = _root(expr)
            if root is None:
                continue
            b = self.tree.binding(root, root.value)
            for a in b.assignments or (None,):
                if not isinstance(a, ImportAssignment):
                    return (f"`{_code(c.node.func).strip()}` is bound at line {line} from `{root.value}`, which may "
                            f"not be {what} at run time (not only imported); pass topk_length by hand")
                if expr is target:
                    rest = (dotted(target) or "").partition(".")[2]
                    for qn in a.get_qualified_names_for(root.value):
                        alt = qn.name + ("." + rest if rest else "")
                        cap = self.gate(alt) if alt != c.callee else None
                        if cap is not None and cap.accepts is not True:
                            return (f"`{_code(c.node.func).strip()}` (line {line}) may also be {alt}, a kernel "
                                    f"{'too old' if cap.accepts is False else 'of unknown capability'}: {cap.detail}")
        return None

    def bindings_identity(self, c: CallInfo, name: str, rest: str, b) -> Optional[str]:
        """Why a binding of the called name that reaches the call (b) may not be a kernel that accepts topk_length."""
        for a in b.assignments:
            node = getattr(a, "node", None)
            line = self.tree.line(node) if node is not None else 0
            if isinstance(a, ImportAssignment):
                for qn in a.get_qualified_names_for(name):
                    alt = qn.name + ("." + rest if rest else "")
                    if alt != c.callee:
                        cap = self.gate(alt)
                        if cap.accepts is not True:
                            state = "too old" if cap.accepts is False else "of unknown capability"
                            return (f"`{name}` may also be {alt} (imported at line {line}), a kernel {state}: "
                                    f"{cap.detail}; pass topk_length by hand once every alternative accepts it")
                        why = self.project_kernel(replace(c, callee=alt), name)  # (a fallback shim runs its body)
                        if why:
                            return f"`{name}` may also be {alt} (imported at line {line}): {why}"
                continue
            stmt = self.tree.assignment_statement(a)
            if stmt is not None and _is_none(stmt.value):
                continue  # an unavailable-kernel fallback: calling it fails before and after
            alias = kernel_alias(stmt, self.facts.imports) if id(c.node) in self.through_alias else None
            if alias is not None:
                why = self.alias_identity(c, alias[0], alias[1], line)
                if why:
                    return why
                continue
            if isinstance(node, cst.FunctionDef) and len(b.assignments) == 1:
                # a kernel interface defined here: its body must forward, and the call's arguments go to the
                # parameters of its signature (the gate may have decided by a pin, without reading it)
                p = node.params
                why = self._local_wrapper(c, node, line) or _misplaced_params(
                    _positional(c.node), [x.name.value for x in (*p.posonly_params, *p.params, *p.kwonly_params)],
                    f"`{name}` defined at line {line}")
                if why:
                    return why
                continue
            if isinstance(node, cst.Param) and rest and name in ("self", "cls"):
                why = self.attribute_identity(c, name, rest)
                if why:
                    return why
                continue
            what = "a parameter" if isinstance(node, cst.Param) else "something else"
            if rest:  # `fm.flash_mla_sparse_fwd`: the name rebound is the module (or object) the kernel is read from
                kind = "the kernel's module" if name in self.facts.imports else "what the kernel is read from"
                return (f"`{name}` may not be {kind} at run time: it is bound at line {line} to {what}, so "
                        f"`{name}.{rest}` may be another function; rewrite by hand if every binding's {rest} accepts topk_length")
            return (f"`{name}` may not be the kernel at run time: it is bound at line {line} to {what}; "
                    "rewrite by hand if every binding accepts topk_length")
        return None

    def callee_identity(self, c: CallInfo) -> Optional[str]:
        """`callee-identity`: every binding of the called name that can reach the call is a kernel that
        accepts topk_length (an import the gate accepts; `= None` fallbacks never run)."""
        root = _root(c.node.func)
        if root is None:
            return None
        name, rest = root.value, (dotted(c.node.func) or "").partition(".")[2]
        captured = self.match_captured(name)
        if captured is not None:
            return (f"`{name}` is also bound by a `match` pattern at line {self.tree.line(captured)}, so it may not be "
                    "the kernel at run time; pass topk_length by hand")
        b = self.tree.binding(root, name)
        if not b.assignments and b.scope_rank is None and not rest:
            return self._star_bound(c, name)  # bound by none of the module's own statements: a star import's, if any
        if not b.assignments or b.scope_rank == -2:
            return None
        why = self.bindings_identity(c, name, rest, b)
        if why:
            return why
        for target in self.attribute_targets(c.callee):
            if self.expand(dotted(target.target)) == c.callee:
                return (f"`{dotted(target.target)}` is assigned at line {self.tree.line(target.target)}: the call may reach "
                        "another function than the kernel; rewrite by hand if it accepts topk_length")
        kernel = c.callee.rsplit(".", 1)[-1]
        for target in self.targets_named(kernel):
            # `fm.flash_mla_sparse_fwd = ...` while the call reads the module through `self.flash_mla`: any
            # attribute of the kernel's name assigned here may be the one the call reaches
            if target.target.attr.value == kernel:
                return (f"`{_code(target.target).strip()}` is assigned at line {self.tree.line(target.target)}: the call "
                        "may reach another function than the kernel; rewrite by hand if it accepts topk_length")
        for call in self.setattr_calls():
            if len(call.args) > 1 and isinstance(call.args[1].value, cst.SimpleString) and (
                    self.expand(dotted(call.args[0].value)) + "." + str(call.args[1].value.evaluated_value) == c.callee
                    or call.args[1].value.evaluated_value == kernel):  # (as an attribute of the kernel's name above)
                return (f"setattr at line {self.tree.line(call)} replaces `{name}{'.' + rest if rest else ''}`; "
                        "rewrite by hand if what it sets accepts topk_length")
        why = self.project_kernel(c, name)
        if why:
            return why
        if isinstance(b.assignments[0].scope, GlobalScope):
            return self._star_rebinds(c, name, b)
        return None

    def project_kernel(self, c: CallInfo, name: str) -> Optional[str]:
        """Where the project defines the kernel it calls (a vendored interface, a compat shim), that def is read: it
        takes topk_length and is a plain forwarding wrapper of a kernel held to the same checks."""
        if "." not in c.callee or is_op_level(c.callee):
            return None
        built = self.project()._find_module(self.path, c.callee.rpartition(".")[0])
        if built and kernels.is_built(built):  # (an in-place build beside its binding's source: round AL)
            rel = os.path.relpath(built, project.project_root(self.path)).replace(os.sep, "/")
            return (f"`{name}` is {c.callee}, which Python loads from {rel}, a module of this project built or compiled "
                    "(loaded before a source beside it), whose parameters are not read; remove the build from the tree "
                    "or pass topk_length by hand")
        mapped = kernels.packaged_elsewhere(project.project_root(self.path), c.callee.split(".")[0])
        if mapped:  # (a vendored build the packaging installs over the pinned wheel's: round AM)
            return (f"`{name}` is {c.callee}, and the project's packaging installs its own `{c.callee.split('.')[0]}` "
                    f"from a folder of its own ({mapped}), whose interface is not read as the kernel; pass "
                    "topk_length by hand where that build takes it")
        top = c.callee.split(".")[0]
        held = self.project().nested_module(top) if not self.project()._find_module(self.path, top) else None
        if held:  # (the project's own top-level package or module is read as vendored below)  # (a vendored build a Dockerfile, hatch's sources, poetry's `from`, a find's `where` installs: AN)
            return (f"`{name}` is {c.callee}, and the project holds a `{top}` of its own ({held}) that its build or "
                    "install may put over the pinned wheel's, whose interface is not read as the kernel; remove it from "
                    "the tree, or pass topk_length by hand where that build takes it")
        iface = self.vendored(c.callee)
        served = self._served_by_module_getattr(c.callee) if iface is None else None
        if served:
            return served
        if iface is not None and PARAM not in iface.params and not iface.has_var_kwargs:
            rel = os.path.relpath(iface.path, project.project_root(self.path)).replace(os.sep, "/")
            if iface.installed:
                return (f"`{name}` is {c.callee}, whose interface installed beside this distribution "
                        f"({rel}:{iface.line}) has no topk_length parameter; install a kernel release that takes it")
            return (f"`{name}` is {c.callee}, defined in this project ({rel}:{iface.line}) "
                    "without a topk_length parameter; add it there first")
        if iface is not None and not iface.installed:  # another distribution's: the kernel, not a wrapper of ours
            rel = os.path.relpath(iface.path, project.project_root(self.path)).replace(os.sep, "/")
            return self._vendored_wrapper(c, iface) or _misplaced_params(
                _positional(c.node), iface.params, f"{rel}:{iface.line}")
        return None

    def _star_module(self, small: cst.ImportFrom) -> Tuple[str, ast.ImportFrom]:
        """`from m import *` as written (with its dots), and as the kernel reader takes it."""
        module = get_full_name_for_node(small.module) if small.module else ""
        level = len(small.relative)
        return "." * level + module, ast.ImportFrom(module=module or None, names=[ast.alias(name="*")], level=level)

    def _star_rebinds(self, c: CallInfo, name: str, b) -> Optional[str]:
        """A star import anywhere in the module (in an `if` or `try` too) may rebind the module's `name`, unless
        a top-level statement after it binds the name again, it is of the kernel's own module, or the module it
        reads is one the reader can read (the project's, or importable here) and does not export the name."""

        tops = [self.tree.order[id(a.node)] for a in b.assignments
                if getattr(a, "node", None) is not None and self._top_level(a.node)]
        for small in self.star_imports():
            at = self.tree.order[id(small)]
            if any(t > at for t in tops):
                continue  # bound again, unconditionally, after it
            written, node = self._star_module(small)
            if not small.relative and c.callee.startswith(written + "."):
                continue
            if kernels.star_import_binds(self.path, node, name) is False:
                continue
            return (f"`from {written} import *` at line {self.tree.line(small)} may rebind `{name}`; "
                    "import the kernel after it or rewrite by hand")
        return None

    def _top_level(self, node: cst.CSTNode) -> bool:
        """Is node a statement of the module's body (or the one small statement of a line there)?"""
        up = self.tree.parent.get(node)
        if isinstance(up, cst.SimpleStatementLine):
            up = self.tree.parent.get(up)
        return isinstance(up, cst.Module)

    def _star_bound(self, c: CallInfo, name: str) -> Optional[str]:
        """`name` called where no statement of the module binds it: each star import that may bind it must
        give it a kernel that takes topk_length (a kernel module the gate accepts, or an interface the reader
        decides: read, and held to the plain-forwarding rule where the project defines it)."""

        for small in self.star_imports():
            written, node = self._star_module(small)
            at = f"`from {written} import *` at line {self.tree.line(small)}"
            in_project = kernels.find_module(self.path, written) is not None
            if not in_project and not small.relative and is_kernel(f"{written}.{name}"):  # the kernel's module
                cap = self.gate(f"{written}.{name}")
                if cap.accepts is not True:
                    state = "too old" if cap.accepts is False else "of unknown capability"
                    return f"`{name}` may come from {at}, a kernel {state}: {cap.detail}; pass topk_length by hand"
                continue
            binds = kernels.star_import_binds(self.path, node, name)
            if binds is False:
                continue
            target = kernels.star_target(self.path, node)[0] if binds else None
            memo: dict = {}
            iface = kernels.read_interface(target, name, param=PARAM, _memo=memo) if target else None
            if iface is None:
                why = kernels.interface_why(memo)
                return (f"`{name}` is bound by {at}, to what the analysis cannot decide"
                        + (f" ({why})" if why else "") + "; import the kernel by name or rewrite by hand")
            rel = os.path.relpath(iface.path, project.project_root(self.path)).replace(os.sep, "/")
            if PARAM not in iface.params and not iface.has_var_kwargs:
                return f"`{name}` is bound by {at} to {rel}:{iface.line}, which has no topk_length parameter"
            why = (self._vendored_wrapper(c, iface) if in_project else None) or _misplaced_params(
                _positional(c.node), iface.params, f"{rel}:{iface.line}")
            if why:
                return why
        return None

    def _served_by_module_getattr(self, callee: str) -> Optional[str]:
        """A project module that binds no such name but defines a module-level `__getattr__` (PEP 562) serves
        the kernel's name with whatever that function returns: no forwarding wrapper the analysis can read."""
        module, _, name = callee.rpartition(".")
        path = self.project()._find_module(self.path, module) if module else None
        tree = bounded.python_facts(project.read_project_file(path)) if path and path.endswith(".py") else None
        if tree is None or not any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == "__getattr__"
                                   for n in tree.body):
            return None
        rel = os.path.relpath(path, project.project_root(self.path)).replace(os.sep, "/")
        return (f"`{name}` is served by the module-level `__getattr__` of {rel} (PEP 562), whose result the analysis "
                "cannot read as a forwarding wrapper; import the kernel by name, or pass topk_length by hand")

    def _local_wrapper(self, c: CallInfo, node: cst.FunctionDef, line: int) -> Optional[str]:
        d = _as_ast(node)
        if d is None:
            return f"`{node.name.value}` (line {line}) could not be read; pass topk_length by hand"
        tree = bounded.python_facts(self.source)
        return self.forwards_unchanged(c, d, f"line {line}", self.tree.line(node) - d.lineno) \
            or (self._inner_callee(tree, d, f"line {line}", self.path, c) if tree is not None else "this module could not be read")

    def _inner_callee(self, tree: ast.Module, d: ast.AST, where: str, path: str, c: Optional[CallInfo] = None,
                      depth: int = 0) -> Optional[str]:
        """What a forwarding wrapper hands on to must be what its name says at run time (round R): a name its module
        binds once, by an import that resolves outside the project (the compiled op, the kernel's library) or to the
        kernel; a def of the module or a name bound again is not read. A function of the project is the kernel by
        its body, not its name (round AD: `fork_kernels.sm90.sparse_mla.flash_mla_sparse_fwd` sorting the rows):
        one plain def of its module, itself a forwarding wrapper, read the same way (`c`: the call, to read it)."""
        call, _ = reach.forwarded_call(d)
        if call is None:
            return None  # a stub: nothing runs
        root = call.func
        while isinstance(root, ast.Attribute):
            root = root.value
        name = root.id if isinstance(root, ast.Name) else ""
        bindings = [n for n in ast.walk(tree) if _binds(n, name)] if name else []
        if len(bindings) != 1 or not isinstance(bindings[0], (ast.Import, ast.ImportFrom)):
            return (f"the wrapper at {where} hands on to `{ast.unparse(call.func)[:60]}`, which its module binds "
                    f"{'by something other than one import' if bindings else 'nowhere'}: what runs is not read; pass "
                    "topk_length by hand")
        inner = _forwarded_callee(tree, d) or self._import_target(bindings[0], name, path, call.func)
        if not inner:
            return (f"the wrapper at {where} hands on to `{ast.unparse(call.func)[:60]}`, whose import is not resolved: "
                    "what runs is not read; pass topk_length by hand")
        local = isinstance(bindings[0], ast.ImportFrom) and bindings[0].level and _sibling_module(path, bindings[0], name)
        if is_kernel(inner) and not self.outside_project(inner) and c is not None and depth < 4:
            attribute = isinstance(bindings[0], ast.ImportFrom) and isinstance(call.func, ast.Attribute)
            return self._project_kernel_def(c, inner, depth + 1, attribute)
        if local or inner and not self.outside_project(inner):
            return (f"the wrapper at {where} hands on to `{inner or name}`, a function of this project, whose body is "
                    "not read; pass topk_length by hand")
        return None

    def _import_target(self, node: ast.AST, name: str, path: str, func: ast.AST) -> str:
        """The dotted name a call's callee reaches through the one import binding its root, wherever it stands (in a
        `try` whose handler raises, round AE) and relative or not (`from .sm90.sparse_mla import f as _impl`); ""
        where that is not read."""
        chain = []
        while isinstance(func, ast.Attribute):
            chain.append(func.attr)
            func = func.value
        if isinstance(node, ast.Import):
            a = next(a for a in node.names if (a.asname or a.name.split(".")[0]) == name)
            head = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom):
            a = next(a for a in node.names if (a.asname or a.name) == name)
            module = node.module or ""
            if node.level:
                rel = os.path.relpath(path, project.project_root(self.path)).replace(os.sep, "/").split("/")[:-1]
                if node.level - 1 > len(rel) or rel[:1] == [".."]:
                    return ""
                module = ".".join([*rel[:len(rel) - (node.level - 1)], *([module] if module else [])])
            head = f"{module}.{a.name}" if module else ""
        else:
            return ""
        return ".".join([head, *reversed(chain)]) if head else ""

    def _project_kernel_def(self, c: CallInfo, inner: str, depth: int, attribute: bool) -> Optional[str]:
        """A function of the project a wrapper hands on to under the kernel's name: one plain def of its module that
        forwards unchanged to the kernel (read as the wrapper was), or why not (`attribute`: the module is taken as
        its package's attribute, `from . import m; m.f(...)`)."""
        module, _, name = inner.rpartition(".")
        path = self.project()._find_module(self.path, module)
        doubt = kernels.import_doubt(self.path, module, attribute) if path else None
        if doubt:
            return f"the wrapper hands on to `{inner}`, but {doubt}: what runs is not read; pass topk_length by hand"
        tree = bounded.python_facts(project.read_project_file(path)) if path and path.endswith(".py") else None
        defs = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name] \
            if tree is not None else []
        if len(defs) != 1 or sum(_binds(n, name) for n in ast.walk(tree)) != 1:
            return (f"the wrapper hands on to `{inner}`, a function of this project bound by something other than one "
                    "plain def: what runs is not read; pass topk_length by hand")
        at = f"{os.path.relpath(path, project.project_root(self.path))}:{defs[0].lineno}".replace(os.sep, "/")
        return self.forwards_unchanged(c, defs[0], at) or self._inner_callee(tree, defs[0], at, path, c, depth)

    def _vendored_wrapper(self, c: CallInfo, iface) -> Optional[str]:
        """The project's own definition of the kernel (kernels.vendored_interface found it), read for its body."""

        name = c.callee.rsplit(".", 1)[-1]
        where = f"{os.path.relpath(iface.path, project.project_root(self.path))}:{iface.line}".replace(os.sep, "/")

        tree = bounded.python_facts(project.read_project_file(iface.path))
        defs = [n for n in kernels.scope_nodes(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                and n.name == name] if tree is not None else []
        if iface.line not in [d.lineno for d in defs]:  # a re-export, an assignment: not a def whose body can be read
            return (f"`{name}` is {c.callee}, bound in this project ({where}) by something other than one plain def; "
                    "pass topk_length by hand")
        for d in defs:  # each def of the name (the reader found them alike): each body runs where it is bound
            at = where if d.lineno == iface.line else f"{where.rsplit(':', 1)[0]}:{d.lineno}"
            why = self.forwards_unchanged(c, d, at) or self._inner_callee(tree, d, at, iface.path, c)
            if why:
                return why
        for d in defs:  # the kernel it hands on to is read as the call's own kernel: replaced, it is what runs
            inner = _forwarded_callee(tree, d)
            if inner and inner != c.callee:
                why = self._kernel_rebound(replace(c, callee=inner), set())
                if why:
                    return f"the kernel {c.callee} hands on to: {why}"
        return None

    def attribute_identity(self, c: CallInfo, receiver: str, rest: str) -> Optional[str]:
        """`self.fm.flash_mla_sparse_fwd(...)`: what `self.fm` holds must be set in this module
        from an import of the kernel's module (or be the kernel itself); a method of that name,
        or an attribute set from anything else (a parameter, a namespace), may be another kernel."""
        first = rest.split(".")[0]
        cls = c.function.class_name if c.function is not None else None
        if id(c.node) in self.through_alias:  # `self.sparse_fwd = K` (held_callee proved every value an alias)
            for node, _ in self.attribute_sources(receiver, first):
                alias = alias_value(node.value, self.facts.imports)
                why = alias and self.alias_identity(c, alias[0], alias[1], self.tree.line(node))
                if why:
                    return why
            return None
        for fn in self.functions_named(first):
            if fn.name == first and fn.class_name:
                return (f"`{receiver}.{first}` is a method ({fn.qualname}), not the kernel; "
                        "give it a topk_length parameter and pass it by hand")
        sources = self.attribute_sources(receiver, first)
        expected = c.callee.split(".", 1)[1][len(first):] if c.callee.startswith(receiver + ".") else ""
        other = self._other_attribute_writes(first, sources)
        if other is not None:
            return (f"`{first}` is also set at line {self.tree.line(other)} (`{_brief(other, 60)}`), "
                    f"a write the analysis does not follow; set `{receiver}.{first}` once from an import, or pass "
                    "topk_length by hand")
        for node, qualified in sources:
            if qualified is None or not is_kernel(qualified + expected):
                return (f"`{receiver}.{first}` is set at line {self.tree.line(node)} from "
                        f"`{_code(node.value).strip()}`, which may not be the kernel's module; pass topk_length by hand")
            root = dotted(node.value).split(".")[0]
            if self._bound_otherwise(root):
                return (f"`{receiver}.{first}` is set at line {self.tree.line(node)} from `{root}`, which the module "
                        "binds again after its import; pass topk_length by hand")
            home = qualified + expected
            if self.project()._find_module(self.path, home.rpartition(".")[0] or home) is not None:
                return (f"`{receiver}.{first}` is set at line {self.tree.line(node)} from `{qualified}`, a module of "
                        "this project, whose function may hand the kernel other rows or indices; pass topk_length by hand")
            cap = self.gate(home)  # each module it may hold is gated as a direct call of it
            if cap.accepts is not True:
                verdict = "kernel too old" if cap.accepts is False else "kernel capability unknown (pass --kernel)"
                return f"{verdict}: `{receiver}.{first}` is set at line {self.tree.line(node)} from `{qualified}`: {cap.detail}"
        if not sources:
            where = f" in {cls}" if cls else ""
            return (f"`{receiver}.{first}` is not set{where} in this module, so what it holds cannot be checked; "
                    "pass topk_length by hand")
        return None

    def _other_attribute_writes(self, first: str, sources) -> Optional[cst.CSTNode]:
        """A write of `<anything>.first` in this module other than the plain `self.first = value` sources: a
        tuple or chained target, an annotated or augmented one, another receiver (`b.fm = ...`), a loop's or a
        comprehension's target (`any(ok(self.fm) for self.fm in impls)`: round AR), a literal `setattr` (also
        `object.__setattr__`), or a deletion."""
        plain = {id(assigned_target(n)) for n, _ in sources}
        for node in self.find(cst.Attribute, lambda a: a.attr.value == first):
            inner, up = node, self.tree.parent.get(node)
            while isinstance(up, (cst.Element, cst.StarredElement, cst.Tuple, cst.List)):
                inner, up = up, self.tree.parent.get(up)  # (a tuple's or a list's element: unpacked into)
            target = isinstance(up, (cst.AssignTarget, cst.AnnAssign, cst.AugAssign, cst.Del, cst.For, cst.CompFor)) \
                and getattr(up, "target", None) is inner or isinstance(up, cst.AsName) and up.name is inner
            if target and id(node) not in plain:
                return up
        for call in self.find(cst.Call):
            name = (get_full_name_for_node(call.func) or "").rsplit(".", 1)[-1]
            if name in ("setattr", "__setattr__", "delattr", "__delattr__") and any(
                    isinstance(a.value, cst.SimpleString) and a.value.evaluated_value == first for a in call.args):
                return call
        return None

    def _bound_otherwise(self, name: str) -> bool:
        """Is `name` bound anywhere in the module by anything but an import (`fm = _load_balanced()`, a loop,
        a `global` then an assignment)? Any such binding may be the one the source reads."""
        for node in self.find(cst.Name, lambda n: n.value == name):
            up = self.tree.parent.get(node)
            if isinstance(up, (cst.AssignTarget, cst.AnnAssign, cst.AugAssign, cst.NameItem)) \
                    or isinstance(up, (cst.For, cst.CompFor)) and up.target is node:
                return True
        return False

    def attribute_sources(self, receiver: str, first: str) -> List[Tuple[cst.Assign, Optional[str]]]:
        """The assignments `receiver.first = value` in this module, each with the qualified name of what
        it assigns when that is read from an import (else None)."""
        out = []
        for node in self.find((cst.Assign, cst.AnnAssign), lambda a: _is_attr(assigned_target(a), receiver, first)):
            value = dotted(node.value)
            root = value.split(".")[0] if value else None
            out.append((node, (self.facts.imports.get(root, "") + value[len(root):]) if root in self.facts.imports else None))
        return out

    def kernel_modules(self, callee: str) -> Set[str]:
        """The modules the kernel is read from: the callee's own prefix, and for `self.fm.kernel` the
        modules this module assigns to `self.fm` (a patch of those reaches the call too)."""
        home = callee.rpartition(".")[0]
        if not home:
            return set()
        receiver, _, rest = home.partition(".")
        if receiver in ("self", "cls") and rest:
            first, _, tail = rest.partition(".")
            return {home} | {q + ("." + tail if tail else "") for _, q in self.attribute_sources(receiver, first) if q}
        return {home}


def _misplaced(positional: Sequence[cst.Arg], cap: Capability) -> Optional[str]:
    """The rows and indices traces read q as the first positional argument and the indices as the third;
    where the gate read the interface the call runs (cap.params) and it puts another parameter there, why
    the call's arguments are not what the traces would read (else None)."""
    return _misplaced_params(positional, cap.params, cap.decision or cap.detail)


def _misplaced_params(positional: Sequence[cst.Arg], params: Sequence[str], where: str) -> Optional[str]:
    """_misplaced for the signature `params` of the def the call runs (read at `where`)."""
    for name, at in (("q", 0), ("indices", 2)):
        if params and len(positional) > at and (len(params) <= at or params[at] != name):
            there = f"`{params[at]}`" if len(params) > at else "no parameter"
            return (f"the interface the call runs ({where}) takes {there} in place {at + 1}, where "
                    f"the rule reads `{name}`; pass q= and indices= by keyword")
    return None


def _positional(call: cst.Call) -> List[cst.Arg]:
    return [a for a in call.args if not a.keyword and not a.star]
