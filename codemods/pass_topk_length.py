"""Pass FlashMLA's per-row `topk_length` to `flash_mla_sparse_fwd`.

Without it the sparse kernel scans the whole -1-padded top-k width for every row
shorter than index_topk (the first 2048 tokens of each prefill, short decode and
verify rows). The fix mirrors SGLang's: the helper that calls the kernel gains
`topk_length: Optional[torch.Tensor] = None`, a shape-only guard falls back to the
full width if its rows differ from q's, and the callers pass the clipped-seqlen
metadata they already hold. The output is bitwise identical; no sync is added.

Soundness (issue 8): each planned rewrite is checked on the rewritten module by
`validate_rewrite` (LibCST scope analysis) before it is accepted; what it cannot prove
safe becomes `manual` with a reason that names the hazard.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Callable, Dict, List, Optional, Sequence, Set, Tuple

import libcst as cst
from libcst.helpers import get_full_name_for_node
from libcst.metadata import ClassScope, ComprehensionScope, FunctionScope, GlobalScope, ImportAssignment

from topk_migrate import suppress
from topk_migrate.bump.bind import OPPORTUNITY
from topk_migrate.bump.context import BumpExample, Context, new_param
from topk_migrate.cstutil import add_keyword, add_param
from topk_migrate.model import Capability, Finding, Site, Status
from topk_migrate.resolve import CallInfo, Function, ModuleFacts, collect, dotted
from topk_migrate.rows import index_hazard, row_hazard
from topk_migrate.rules import Rule
from topk_migrate.scopecheck import Tree, inserted_ids, resolution_table, root_binding

# Python entry points of the kernel, with the position of topk_length in their
# signature (sgl_kernel / flash_mla: q, kv, indices, sm_scale, d_v, attn_sink, topk_length).
ENTRY_POINTS: Dict[str, Optional[int]] = {"flash_mla_sparse_fwd": 6, "flash_mla_sparse_prefill": None}
OP_NAME = "sparse_prefill_fwd"  # torch.ops.<ns>.sparse_prefill_fwd[.default], or an extension module's
OP_TOPK_LENGTH_POSITION = 6

# First release of each distribution whose flash_mla_sparse_fwd takes topk_length
# (None: no release does; sgl-kernel stopped at 0.3.x before the parameter existed).
# vllm bundles FlashMLA: its own wrapper (vllm.v1.attention.ops.flashmla) passes
# topk_length from 0.15.0 on (0.14.x's flash_mla_sparse_prefill has no such parameter).
# tokenspeed-kernel re-exports flash_mla from tokenspeed-flashmla, whose every release
# (from 1.0.0.post20251110) has it; tokenspeed-kernel 0.1.3, its first, pins one of them.
MIN_KERNEL: Dict[str, Optional[str]] = {
    "sglang-kernel": "0.4.3",
    "sgl-kernel": None,
    "vllm": "0.15.0",
    "tokenspeed-flashmla": "1.0.0.post20251110",
    "tokenspeed-kernel": "0.1.3",
}
# Metadata known to satisfy the contract: per-row valid-index count (seqlens clipped
# to topk), int32, 1-D, row-aligned with q, updated in place under CUDA-graph replay.
KNOWN_METADATA = ("metadata.dsa_cache_seqlens_int32", "metadata.nsa_cache_seqlens_int32")

PARAM = "topk_length"
RULE_ID = "pass-topk-length"
GUARD_COMMENT = "# topk-migrate: use the full top-k width if the row counts ever differ from q's."
# Decorators that keep a method's signature as written (any other one may not pass topk_length on).
SIGNATURE_KEEPING_DECORATORS = {"staticmethod", "classmethod"}
CONSTANT_NAMES = {"None", "True", "False"}


# callee -> Capability: does the kernel behind it accept topk_length (see api.kernel_gate)
Gate = Callable[[str], Capability]


def is_op_level(callee: str) -> bool:
    parts = callee.split(".")
    return len(parts) > 1 and (parts[-1] == OP_NAME or parts[-2:] == [OP_NAME, "default"])


def is_kernel(callee: str) -> bool:
    return callee.rsplit(".", 1)[-1] in ENTRY_POINTS or is_op_level(callee)


def _at(calls: Sequence[CallInfo]) -> str:
    lines = ", ".join(str(k.range.start.line) for k in calls)
    return f"callers at line{'s' if len(calls) > 1 else ''} {lines}"


def _is_none(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "None"


def _root(expr: cst.BaseExpression) -> Optional[cst.Name]:
    while isinstance(expr, (cst.Attribute, cst.Subscript, cst.Call)):
        expr = expr.value if not isinstance(expr, cst.Call) else expr.func
    return expr if isinstance(expr, cst.Name) else None


def _q_arg(call: cst.Call) -> Optional[cst.BaseExpression]:
    for a in call.args:
        if a.keyword and a.keyword.value == "q":
            return a.value
    first = call.args[0] if call.args else None
    return first.value if first is not None and not first.keyword and not first.star else None


def _indices_arg(call: cst.Call) -> Optional[cst.BaseExpression]:
    for a in call.args:
        if a.keyword and a.keyword.value == "indices":
            return a.value
    positional = [a for a in call.args if not a.keyword]
    return positional[2].value if len(positional) > 2 and not any(a.star for a in positional[:3]) else None


def _is_name(node: cst.CSTNode, name: str) -> bool:
    return isinstance(node, cst.Name) and node.value == name


def _is_attr(node: cst.CSTNode, base: str, attr: str) -> bool:
    """`node` is `base.attr`."""
    return isinstance(node, cst.Attribute) and _is_name(node.value, base) and node.attr.value == attr


def _targets_attribute(node) -> bool:
    """An assignment (`x.y = ...`, `x.y: T = ...`, `x.y += ...`) whose target is an attribute."""
    return isinstance(node.target, cst.Attribute)


def _descendants(node: cst.CSTNode):
    todo = [node]
    while todo:
        n = todo.pop()
        yield n
        todo.extend(n.children)


def _code(node: cst.CSTNode) -> str:
    return cst.Module([]).code_for_node(node)


@dataclass(eq=False)
class Group:
    """Kernel calls rewritten together (one call, or every call in one helper plus its
    callers); validated together and refused together."""

    kind: str  # "direct": metadata at the call; "helper": the helper gains the parameter
    calls: List[CallInfo]
    sites: List[int]  # indices into the site list
    metadata: Optional[str] = None  # direct: the expression passed
    form: str = "plain"  # direct: how the metadata is read (see _metadata_value)
    helper: Optional[Function] = None
    callers: List[Tuple[CallInfo, str, str]] = field(default_factory=list)  # (call, expression, form)
    add_param: bool = False
    inline: bool = False  # guard inline in the call instead of a statement before it
    reason: str = ""

    def q(self, call: CallInfo) -> str:
        return dotted(_q_arg(call.node))


# How the metadata is read (class 2): "plain" where its root provably holds an object of a
# class here that declares the field, non-Optional (SGLang's `self.forward_metadata: DSAMetadata`);
# "none_safe" where that object may be None; "getattr" where nothing says what the root holds.

def _metadata_value(expr: str, form: str) -> str:
    root, (parent, field_name) = expr.split(".")[0], expr.rsplit(".", 1)
    if form == "getattr":
        return f'getattr({parent}, "{field_name}", None)'
    return f"{expr} if {root} is not None else None" if form == "none_safe" else expr


def _inline_value(expr: str, form: str, q: str) -> str:
    """The metadata, guarded by q's rows, as one expression (no statement of its own)."""
    value = _metadata_value(expr, "getattr" if form == "getattr" else "plain")
    test = f"{expr.split('.')[0]} is not None and " if form == "none_safe" else ""
    return f"{value} if {test}{value} is not None and {value}.shape[0] == {q}.shape[0] else None"


class _Analysis:
    def __init__(self, facts: ModuleFacts, tree: Tree, source: str, path: str, gate: Gate, metadata: Sequence[str]):
        self.facts, self.tree, self.path, self.gate = facts, tree, path, gate
        self.lines = source.splitlines()
        # Defaults count only where the module itself uses that field; user mappings always count.
        self.user_metadata = list(metadata)
        self.metadata = list(metadata) + [
            m for m in KNOWN_METADATA if re.search(rf"\b{m.rsplit('.', 1)[1]}\b", source)
        ]
        self.sites: List[Site] = []
        self.groups: List[Group] = []
        self._helper_groups: Dict[int, Group] = {}
        self._external: Dict[str, Optional[Tuple[Tree, cst.FunctionDef]]] = {}
        self._siblings: Optional[list] = None
        self._indexes: Dict[str, object] = {}

    # -- helpers ----------------------------------------------------------
    def site(self, c: CallInfo, status: Status, reason: str, metadata: Optional[str] = None) -> Site:
        s = c.range.start
        return Site(self.path, s.line, s.column + 1, c.callee, status, reason, metadata)

    def metadata_at(self, node: cst.CSTNode) -> Tuple[Optional[str], str, Optional[str]]:
        """(known metadata expression usable at node, how to read it: plain, none_safe or getattr, why none is).

        Class 2: its root must be bound once in the function, on every path to node."""
        why_not = None
        for expr in self.metadata:
            root = expr.split(".")[0]
            b = self.tree.binding(node, root)
            if not b.assignments or not isinstance(b.assignments[0].scope, FunctionScope):
                continue
            why, none = root_binding(self.tree, node, root)
            owner = getattr(b.assignments[0].scope, "node", None)
            target = self.attribute_writes_in(owner).get(expr) if why is None and owner is not None else None
            if target is not None:
                why = f"`{expr}` is assigned at line {self.tree.line(target.target)}, in the function that passes it"
            if why is None:
                if expr in self.user_metadata:  # the user vouches for the object; None is still handled
                    return expr, "none_safe" if none else "plain", None
                typed = self.typed(b.assignments[0], expr.rsplit(".", 1)[1])
                form = "getattr" if typed is None else "none_safe" if (none or not typed) else "plain"
                return expr, form, None
            why_not = why_not or why
        return None, "plain", why_not

    def typed(self, a, field_name: str) -> Optional[bool]:
        """Does the root provably hold an instance of a class of this module that declares
        `field_name`? True: yes; False: yes, or None (declared Optional); None: nothing says."""
        node = getattr(a, "node", None)
        annotation, optional = None, False
        if isinstance(node, cst.Param):
            annotation = node.annotation.annotation if node.annotation else None
        else:
            stmt = self.tree.assignment_statement(a)
            value = stmt.value if stmt is not None else None
            if isinstance(value, cst.Attribute) and isinstance(value.value, cst.Name) and value.value.value == "self":
                annotation = self.declared(value.attr.value)
                optional = value.attr.value in self.tree.none_attributes() or self.base_sets_none(value.attr.value)
            elif isinstance(value, cst.Call):
                annotation = value.func
        if annotation is None:
            return None
        inside = list(_descendants(annotation))
        names = {n.value for n in inside if isinstance(n, cst.Name)} | {
            s.evaluated_value for s in inside if isinstance(s, cst.SimpleString) and isinstance(s.evaluated_value, str)}
        declaring = [c for c in self.find(cst.ClassDef)
                     if c.name.value in names or any(c.name.value in n for n in names)]
        for cls in declaring:
            for stmt in self.find(cst.AnnAssign, lambda a: _is_name(a.target, field_name), cls.body):
                if not re.search(r"\bNone\b|Optional", _code(stmt.annotation.annotation)):
                    return not (optional or re.search(r"\bNone\b|Optional", _code(annotation)))
        return None

    def override_elsewhere(self, fn: Function) -> Optional[str]:
        """A subclass in another module of the same folder that overrides the helper without topk_length.

        Only files whose text names both a class and `def <method>(` of this module are parsed."""
        for name, text, classes in self.sibling_classes():
            if f"def {fn.name}(" not in text or fn.class_name not in text:
                continue
            for cls_name, bases, methods in classes:
                if not any(fn.class_name in b for b in bases):
                    continue
                for d in methods.get(fn.name, ()):
                    a = d.args
                    if PARAM not in {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs} and a.kwarg is None:
                        return (f"{cls_name}.{fn.name} in {name} overrides {fn.qualname} without topk_length; "
                                "add the parameter there too")
        return None

    def sibling_classes(self):
        """[(file name, text, [(class name, its bases as written, {method name: defs})])] of the other
        modules of this folder that name `def ` at all: read and parsed once per file checked."""
        if self._siblings is not None:
            return self._siblings
        import ast
        import os

        from topk_migrate import project

        self._siblings = []
        method_names = {fn.name for fn in self.facts.functions if fn.class_name}
        class_names = {fn.class_name for fn in self.facts.functions if fn.class_name}
        folder = os.path.dirname(os.path.abspath(self.path))
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            return self._siblings
        for name in names:
            other = os.path.join(folder, name)
            if not name.endswith(".py") or os.path.abspath(other) == os.path.abspath(self.path):
                continue
            text = project.read_project_file(other)
            if not text or not method_names & set(re.findall(r"def\s+(\w+)\s*\(", text)) \
                    or not any(c in text for c in class_names):
                continue
            try:
                tree = ast.parse(text)
            except (SyntaxError, ValueError, RecursionError):
                continue
            classes = []
            for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
                methods: Dict[str, list] = {}
                for d in cls.body:
                    if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        methods.setdefault(d.name, []).append(d)
                classes.append((cls.name, [ast.unparse(b) for b in cls.bases], methods))
            self._siblings.append((name, text, classes))
        return self._siblings

    def base_sets_none(self, attr: str) -> bool:
        """Does a base class imported from another module of the project set `self.<attr>` to None?"""
        from topk_migrate import kernels, project

        pattern = re.compile(rf"\b(self\.)?{re.escape(attr)}\s*(:[^=\n]*)?=\s*None\b")
        for cls in self.find(cst.ClassDef):
            for base in cls.bases:
                root = _root(base.value)
                for a in self.tree.binding(root, root.value).assignments if root is not None else ():
                    for qn in a.get_qualified_names_for(root.value) if isinstance(a, ImportAssignment) else ():
                        found = kernels.find_module(self.path, qn.name.rpartition(".")[0])
                        text = project.read_project_file(found) if found else None
                        if text and pattern.search(text):
                            return True
        return False

    def declared(self, attr: str) -> Optional[cst.BaseExpression]:
        """The annotation of `self.<attr>` in this module (`self.x: T` or a class-level `x: T`)."""
        for stmt in self.find(cst.AnnAssign, lambda a: _is_attr(a.target, "self", attr)):
            return stmt.annotation.annotation
        for cls in self.find(cst.ClassDef):
            for stmt in cls.body.body if isinstance(cls.body, cst.IndentedBlock) else ():
                for small in getattr(stmt, "body", ()) if isinstance(stmt, cst.SimpleStatementLine) else ():
                    if isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name) and small.target.value == attr:
                        return small.annotation.annotation
        return None

    def suppression(self, c: CallInfo) -> Optional[str]:
        return suppress.reason(self.lines, c.range.start.line, c.range.end.line, RULE_ID)

    # -- classification ---------------------------------------------------------
    def classify(self, c: CallInfo) -> Site:
        args = c.node.args
        for a in args:
            if a.keyword and a.keyword.value == PARAM:
                if _is_none(a.value):
                    return self.site(c, Status.OPT_OUT, "passes topk_length=None explicitly")
                return self.site(c, Status.COMPLIANT, "passes topk_length", dotted(a.value))
        op_level = is_op_level(c.callee)
        cap = self.gate(c.callee)
        pos = OP_TOPK_LENGTH_POSITION if op_level else ENTRY_POINTS.get(c.callee.rsplit(".", 1)[-1])
        if cap.position is not None:
            pos = cap.position
        positional = [a for a in args if not a.keyword and not a.star]
        if pos is not None and len(positional) > pos and not any(a.star for a in args[: args.index(positional[pos])]):
            if _is_none(positional[pos].value):
                return self.site(c, Status.OPT_OUT, "passes topk_length=None positionally")
            return self.site(c, Status.COMPLIANT, "passes topk_length positionally", dotted(positional[pos].value))
        reason = self.suppression(c)
        if reason is not None:
            return self.site(c, Status.OPT_OUT, f"suppressed by comment: {reason}")
        if any(a.star == "**" for a in args):
            return self.site(c, Status.MANUAL, "**kwargs may already carry topk_length; pass it explicitly")
        if any(a.star == "*" for a in args):
            return self.site(c, Status.MANUAL, "*args may already carry topk_length; pass it explicitly")
        if op_level:
            return self.site(c, Status.MANUAL, "op-level call: its schema is fixed by the kernel build; call the Python wrapper with topk_length")
        if cap.accepts is False:
            return self.site(c, Status.MANUAL, f"kernel too old: {cap.detail}")
        if cap.accepts is None:
            return self.site(c, Status.MANUAL, f"kernel capability unknown (pass --kernel): {cap.detail}")
        why = self.callee_identity(c)
        if why:
            return self.site(c, Status.MANUAL, why)
        return self.contract(c)

    def callee_identity(self, c: CallInfo) -> Optional[str]:
        """Class 4: every binding of the called name that can reach the call is a kernel that
        accepts topk_length (an import the gate accepts; `= None` fallbacks never run)."""
        root = _root(c.node.func)
        if root is None:
            return None
        name, rest = root.value, (dotted(c.node.func) or "").partition(".")[2]
        b = self.tree.binding(root, name)
        if not b.assignments or b.scope_rank == -2:
            return None
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
                continue
            stmt = self.tree.assignment_statement(a)
            if stmt is not None and _is_none(stmt.value):
                continue  # an unavailable-kernel fallback: calling it fails before and after
            if isinstance(node, cst.FunctionDef) and len(b.assignments) == 1:
                continue  # a kernel interface defined here: the gate read its signature
            if isinstance(node, cst.Param) and rest and name in ("self", "cls"):
                why = self.attribute_identity(c, name, rest)
                if why:
                    return why
                continue
            what = "a parameter" if isinstance(node, cst.Param) else "something else"
            return (f"`{name}` may not be the kernel at run time: it is bound at line {line} to {what}; "
                    "rewrite by hand if every binding accepts topk_length")
        for target in self.attribute_targets(c.callee):
            if self.expand(dotted(target.target)) == c.callee:
                return (f"`{dotted(target.target)}` is assigned at line {self.tree.line(target.target)}: the call may reach "
                        "another function than the kernel; rewrite by hand if it accepts topk_length")
        for call in self.setattr_calls():
            if len(call.args) > 1 and isinstance(call.args[1].value, cst.SimpleString) and \
                    self.expand(dotted(call.args[0].value)) + "." + str(call.args[1].value.evaluated_value) == c.callee:
                return (f"setattr at line {self.tree.line(call)} replaces `{name}{'.' + rest if rest else ''}`; "
                        "rewrite by hand if what it sets accepts topk_length")
        if "." in c.callee and not is_op_level(c.callee):
            from topk_migrate import kernels

            iface = kernels.vendored_interface(self.path, c.callee)
            if iface is not None and PARAM not in iface.params and not iface.has_var_kwargs:
                return (f"`{name}` is {c.callee}, defined in this project ({iface.path}:{iface.line}) "
                        "without a topk_length parameter; add it there first")
        if isinstance(b.assignments[0].scope, GlobalScope):
            first = min(self.tree.order[id(a.node)] for a in b.assignments if getattr(a, "node", None) is not None)
            for stmt in self.facts.module.body:
                for small in getattr(stmt, "body", ()) if isinstance(stmt, cst.SimpleStatementLine) else ():
                    if isinstance(small, cst.ImportFrom) and isinstance(small.names, cst.ImportStar) \
                            and self.tree.order[id(small)] > first:
                        module = get_full_name_for_node(small.module) if small.module else ""
                        if not c.callee.startswith(module + "."):
                            return (f"`from {module} import *` at line {self.tree.line(small)} may rebind `{name}`; "
                                    "import the kernel after it or rewrite by hand")
        return None

    def expand(self, name: Optional[str]) -> str:
        """A dotted name with its first part expanded through the imports (as callees are)."""
        if not name:
            return ""
        root, _, rest = name.partition(".")
        return self.facts.imports.get(root, root) + ("." + rest if rest else "")

    def attribute_identity(self, c: CallInfo, receiver: str, rest: str) -> Optional[str]:
        """`self.fm.flash_mla_sparse_fwd(...)`: what `self.fm` holds must be set in this module
        from an import of the kernel's module (or be the kernel itself); a method of that name,
        or an attribute set from anything else (a parameter, a namespace), may be another kernel."""
        first = rest.split(".")[0]
        cls = c.function.class_name if c.function is not None else None
        for fn in self.functions_named(first):
            if fn.name == first and fn.class_name:
                return (f"`{receiver}.{first}` is a method ({fn.qualname}), not the kernel; "
                        "give it a topk_length parameter and pass it by hand")
        sources = []
        for node in self.find(cst.Assign, lambda a: len(a.targets) == 1
                               and _is_attr(a.targets[0].target, receiver, first)):
            value = dotted(node.value)
            root = value.split(".")[0] if value else None
            qualified = (self.facts.imports.get(root, "") + value[len(root):]) if root in self.facts.imports else None
            expected = c.callee.split(".", 1)[1][len(first):] if c.callee.startswith(receiver + ".") else ""
            if qualified is None or not is_kernel(qualified + expected):
                return (f"`{receiver}.{first}` is set at line {self.tree.line(node)} from "
                        f"`{_code(node.value).strip()}`, which may not be the kernel's module; pass topk_length by hand")
            sources.append(qualified)
        if not sources:
            where = f" in {cls}" if cls else ""
            return (f"`{receiver}.{first}` is not set{where} in this module, so what it holds cannot be checked; "
                    "pass topk_length by hand")
        return None

    def contract(self, c: CallInfo) -> Site:
        q_expr = _q_arg(c.node)
        q = dotted(q_expr) if q_expr is not None else None
        if q is None:
            return self.site(c, Status.MANUAL, "q is not a plain name; its rows cannot be checked without re-evaluating it")
        here, form, why_not = self.metadata_at(c.node) if c.function is not None else (None, "plain", None)
        if here:
            hazard, _ = row_hazard(self.tree, q_expr, self.tree.binding(c.node, here.split(".")[0]).assignments[0].scope, self.external_def)
            if hazard:
                return self.site(c, Status.MANUAL, _rows_reason(hazard))
            hazard = self.indices_hazard(c)[0]
            if hazard:
                return self.site(c, Status.MANUAL, _indices_reason(hazard))
            g = Group("direct", [c], [], metadata=here, form=form, inline=c.statement is None)
            self.groups.append(g)
            return self.site(c, Status.FIXABLE, _direct_reason(g), here)
        return self.through_helper(c, q_expr, why_not)

    # -- the helper route -------------------------------------------------------------
    def subclasses(self, cls: str) -> Set[str]:
        """cls and the classes of this module that derive from it (by name), for each class once."""
        return self.index("subclasses:" + cls, lambda: self._subclasses(cls))

    def _subclasses(self, cls: str) -> Set[str]:
        bases: Dict[str, Set[str]] = self.index("bases", self._bases)
        out, grew = {cls}, True
        while grew:
            new = {n for n, bs in bases.items() if bs & out} - out
            out |= new
            grew = bool(new)
        return out

    def _bases(self) -> Dict[str, Set[str]]:
        bases: Dict[str, Set[str]] = {}
        for node in self.find(cst.ClassDef):
            bases.setdefault(node.name.value, set()).update(
                (get_full_name_for_node(b.value) or "").rsplit(".", 1)[-1] for b in node.bases)
        return bases

    def callers(self, fn: Function) -> List[CallInfo]:
        """Calls that reach this helper: `self.helper(...)` from a method of its class or a
        subclass (receiver = that method's first parameter), or `helper(...)` resolving to it."""
        out = []
        if fn.class_name:
            classes = self.subclasses(fn.class_name)
            for k in self.calls_named(fn.name):
                f = k.function
                if k.function is fn or f is None or f.class_name not in classes:
                    continue
                func = k.node.func
                if not (isinstance(func, cst.Attribute) and func.attr.value == fn.name and isinstance(func.value, cst.Name)):
                    continue
                first = (f.node.params.posonly_params or f.node.params.params or [None])[0]
                if first is not None and first.name.value == func.value.value:
                    b = self.tree.binding(func.value, func.value.value)
                    if len(b.assignments) == 1 and getattr(b.assignments[0], "node", None) is first:
                        out.append(k)
            return out
        own = self.tree.binding(fn.node, fn.name)
        for k in self.calls_named(fn.name):
            if k.function is fn or not isinstance(k.node.func, cst.Name) or k.node.func.value != fn.name:
                continue
            b = self.tree.binding(k.node.func, fn.name)
            if [getattr(a, "node", None) for a in b.assignments] == [fn.node] and own.scope_rank == b.scope_rank:
                out.append(k)
        return out

    def helper_identity(self, fn: Function) -> Optional[str]:
        """Class 4 for the helper: one definition, no decorator that may fix its signature,
        no same-named override without the parameter."""
        for d in fn.node.decorators:
            name = get_full_name_for_node(d.decorator) or _code(d.decorator).strip()
            if name not in SIGNATURE_KEEPING_DECORATORS:
                return (f"{fn.qualname} is decorated with `@{name}`, which may not pass topk_length on; "
                        "add the parameter by hand")
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
        if fn.class_name:
            why = self.override_elsewhere(fn)
            if why:
                return why
        if fn.class_name:  # `self.helper(..., topk_length=...)` also reaches same-named overrides
            for other in self.functions_named(fn.name):
                op = other.node.params
                if (other.name == fn.name and other is not fn and other.class_name
                        and not any(p.name.value == PARAM for p in (*op.params, *op.kwonly_params))
                        and not isinstance(op.star_kwarg, cst.Param)):
                    return f"{other.qualname} overrides {fn.qualname} without topk_length"
        return None

    def through_helper(self, c: CallInfo, q_expr: cst.BaseExpression, why_not: Optional[str]) -> Site:
        fn = c.function
        wanted = " or ".join(self.metadata) or "clipped-seqlen metadata (metadata.dsa_cache_seqlens_int32)"
        if fn is None:
            return self.site(c, Status.MANUAL, f"no {wanted} in scope at module level")
        if why_not:
            return self.site(c, Status.MANUAL, f"{why_not}; the {wanted} is not provably there at the call")
        existing = self.helper_groups_of(fn)
        if existing is not None:  # a second kernel call in the same helper joins its group
            hazard, _ = row_hazard(self.tree, q_expr, self.tree.scope_of.get(fn.node.body), self.external_def)
            if hazard:
                return self.site(c, Status.MANUAL, _rows_reason(hazard))
            hazard = self.indices_hazard(c)[0]
            if hazard:
                return self.site(c, Status.MANUAL, _indices_reason(hazard))
            existing.calls.append(c)
            return self.site(c, Status.FIXABLE, existing.reason, existing.callers[0][1] if existing.callers else None)
        params = fn.node.params
        all_params = [*params.posonly_params, *params.params, *params.kwonly_params]
        mine = next((p for p in all_params if p.name.value == PARAM), None)
        if mine is None and isinstance(params.star_kwarg, cst.Param):
            return self.site(c, Status.MANUAL, f"{fn.qualname} takes **kwargs; add topk_length to it by hand")
        why = self.helper_identity(fn)
        if why:
            return self.site(c, Status.MANUAL, why)
        hazard, sources = row_hazard(self.tree, q_expr, self.tree.scope_of.get(fn.node.body), self.external_def)
        if hazard:
            return self.site(c, Status.MANUAL, _rows_reason(hazard))
        hazard, index_sources = self.indices_hazard(c)
        if hazard:
            return self.site(c, Status.MANUAL, _indices_reason(hazard))
        if mine is not None:
            why = self.existing_param(fn, mine, all_params)
            if why:
                return self.site(c, Status.MANUAL, why)
        positions = {p.name.value: i for i, p in enumerate([*params.posonly_params, *params.params])}
        shift = 1 if fn.class_name and not any(
            get_full_name_for_node(d.decorator) == "staticmethod" for d in fn.node.decorators) else 0
        passing, lacking, found, already = [], [], None, 0
        for k in self.callers(fn):
            if any(a.keyword and a.keyword.value == PARAM for a in k.node.args):
                already += 1
                continue
            expr, form, _ = self.metadata_at(k.node)
            if expr is None or any(a.star for a in k.node.args):  # *args/**kwargs may fill it
                lacking.append(k)
                continue
            if mine is not None and mine.name.value in positions and \
                    len([a for a in k.node.args if not a.keyword]) > positions[PARAM] - shift:
                return self.site(c, Status.MANUAL, f"the caller at line {k.range.start.line} already passes "
                                 f"{fn.qualname}'s topk_length positionally; its meaning is unknown")
            batch = self.tree.binding(k.node, expr.split(".")[0]).assignments[0].scope
            for p in sources:
                arg = _argument_for(k.node, p, positions.get(p), shift)
                hazard = row_hazard(self.tree, arg, batch, self.external_def)[0] if arg is not None else None
                if hazard:
                    return self.site(c, Status.MANUAL, f"at the caller on line {k.range.start.line}: " + _rows_reason(hazard))
            for p in index_sources:
                arg = _argument_for(k.node, p, positions.get(p), shift)
                hazard = index_hazard(self.tree, arg)[0] if arg is not None else None
                if hazard:
                    return self.site(c, Status.MANUAL, f"at the caller on line {k.range.start.line}: " + _indices_reason(hazard))
            passing.append((k, expr, form))
            found = found or expr
        if mine is not None and already and not passing:  # half-migrated: callers pass it, the kernel call drops it
            g = Group("helper", [c], [], helper=fn, inline=c.statement is None)
            g.reason = f"{fn.qualname} takes topk_length from its callers but does not forward it"
            self._remember(fn, g)
            return self.site(c, Status.FIXABLE, g.reason)
        if not passing:
            why = f"no {wanted} in scope of {fn.qualname}"
            why += f", nor in its {_at(lacking)}" if lacking else ", and it has no callers in this module"
            return self.site(c, Status.MANUAL, why)
        g = Group("helper", [c], [], helper=fn, callers=passing, add_param=mine is None, inline=c.statement is None)
        g.reason = f"{fn.qualname} gains topk_length; {_at([k for k, _, _ in passing])} pass it"
        if lacking:
            g.reason += f"; {_at(lacking)} have no metadata and keep the full width"
        self._remember(fn, g)
        return self.site(c, Status.FIXABLE, g.reason, found)

    def find(self, kinds, matcher=None, within: Optional[cst.CSTNode] = None) -> List[cst.CSTNode]:
        return self.tree.find(kinds, matcher, within)

    # -- indexes of the module, built once so each site looks up instead of scanning ----------
    def index(self, key: str, build: Callable[[], object]):
        if key not in self._indexes:
            self._indexes[key] = build()
        return self._indexes[key]

    def _grouped(self, items, key) -> Dict[str, list]:
        out: Dict[str, list] = {}
        for item in items:
            k = key(item)
            if k is not None:
                out.setdefault(k, []).append(item)
        return out

    def calls_named(self, name: str) -> List[CallInfo]:
        """Calls whose callee ends in `name` (`name(...)` or `x.name(...)`), in source order."""
        return self.index("calls", lambda: self._grouped(self.facts.calls, lambda k: (
            k.node.func.attr.value if isinstance(k.node.func, cst.Attribute)
            else k.node.func.value if isinstance(k.node.func, cst.Name) else None))).get(name, [])

    def functions_named(self, name: str) -> List[Function]:
        return self.index("functions", lambda: self._grouped(self.facts.functions, lambda f: f.name)).get(name, [])

    def attribute_assigns(self, attr: str) -> List[cst.AssignTarget]:
        """`x.attr = ...` targets, in source order."""
        return self.index("attribute_assigns", lambda: self._grouped(
            self.find(cst.AssignTarget, _targets_attribute), lambda t: t.target.attr.value)).get(attr, [])

    def attribute_targets(self, name: str) -> List[cst.CSTNode]:
        """`x.y = ...`, `x.y: T = ...`, `x.y += ...` whose target, expanded through the imports, is `name`."""
        return self.index("attribute_targets", lambda: self._grouped(
            self.find((cst.AssignTarget, cst.AnnAssign, cst.AugAssign), _targets_attribute),
            lambda t: self.expand(dotted(t.target)))).get(name, [])

    def attribute_writes_in(self, owner: cst.CSTNode) -> Dict[str, cst.CSTNode]:
        """`x.y = ...` / `x.y += ...` under owner: dotted target -> its first one (one scan per function)."""
        def build() -> Dict[str, cst.CSTNode]:
            out: Dict[str, cst.CSTNode] = {}
            for t in self.find((cst.AssignTarget, cst.AugAssign), _targets_attribute, owner):
                out.setdefault(dotted(t.target), t)
            return out
        return self.index(f"writes_in:{id(owner)}", build)

    def setattr_calls(self) -> List[cst.Call]:
        return self.index("setattr", lambda: self.find(cst.Call, lambda c: _is_name(c.func, "setattr")))

    def external_def(self, qualname: str) -> Optional[Tuple[Tree, cst.FunctionDef]]:
        """A top-level def of another module of this project, parsed alone (for the row trace)."""
        if qualname in self._external:
            return self._external[qualname]
        self._external[qualname] = None
        module, _, name = qualname.rpartition(".")
        if not module or is_kernel(qualname):
            return None
        import ast

        from topk_migrate import kernels, project

        found = kernels.find_module(self.path, module)
        text = project.read_project_file(found) if found else None
        try:
            node = next((n for n in ast.parse(text or "").body if isinstance(n, ast.FunctionDef) and n.name == name), None)
            if node is not None:
                first = min([node.lineno] + [d.lineno for d in node.decorator_list])
                snippet = cst.parse_module("\n".join(text.split("\n")[first - 1:node.end_lineno]) + "\n")
                self._external[qualname] = (Tree(snippet, positions=False), snippet.body[0])
        except (SyntaxError, ValueError, cst.ParserSyntaxError, RecursionError):
            pass
        return self._external[qualname]

    def indices_hazard(self, c: CallInfo) -> Tuple[Optional[str], Set[str]]:
        arg = _indices_arg(c.node)
        return index_hazard(self.tree, arg) if arg is not None else (None, set())

    def helper_groups_of(self, fn: Function) -> Optional[Group]:
        return self._helper_groups.get(id(fn.node))

    def _remember(self, fn: Function, g: Group) -> None:
        self._helper_groups[id(fn.node)] = g
        self.groups.append(g)

    def existing_param(self, fn: Function, param: cst.Param, all_params: List[cst.Param]) -> Optional[str]:
        """Class 3: a `topk_length` parameter the helper already has is reused only if it is
        the unused, None-defaulted slot of a half-done migration."""
        if param.default is None or not _is_none(param.default):
            return (f"{fn.qualname} already has a parameter `topk_length` without a None default; "
                    "its meaning is unknown, rename it or migrate by hand")
        scope = self.tree.scope_of.get(fn.node.body)
        for a in scope[PARAM] if scope is not None else ():
            for access in getattr(a, "references", ()):
                return (f"{fn.qualname} already reads its parameter `topk_length` (line "
                        f"{self.tree.line(access.node)}); its meaning is unknown, migrate by hand")
        return None


def _argument_for(call: cst.Call, param: str, position: Optional[int], shift: int) -> Optional[cst.BaseExpression]:
    for a in call.args:
        if a.keyword and a.keyword.value == param:
            return a.value
    positional = [a for a in call.args if not a.keyword and not a.star]
    if position is not None and 0 <= position - shift < len(positional):
        return positional[position - shift].value
    return None


def _rows_reason(hazard: str) -> str:
    return (f"q's rows may not be the metadata's rows: {hazard}; the row-count guard cannot tell, "
            "so pass topk_length by hand if they align")


def _indices_reason(hazard: str) -> str:
    return (f"the indices may not be the top-k the metadata counts: {hazard}; topk_length would cut rows "
            "short or read past them, so pass a length computed from these indices by hand")


def _direct_reason(g: Group) -> str:
    how = "guarded inline by q's row count" if g.inline else "guarded by q's row count"
    return f"passes {g.metadata} ({how})"


# -- the edit -----------------------------------------------------------------------
@dataclass
class Record:
    """What the rewrite inserted, by identity in the rewritten tree, per group."""

    inserted: Dict[int, List[cst.CSTNode]] = field(default_factory=dict)  # id(group) -> inserted subtrees
    guards: Dict[int, List[cst.CSTNode]] = field(default_factory=dict)  # id(group) -> guard statements
    kernel_calls: Dict[int, cst.Call] = field(default_factory=dict)  # id(original call) -> rewritten call
    helper_defs: Dict[int, cst.FunctionDef] = field(default_factory=dict)  # id(group) -> rewritten helper


class _Rewrite(cst.CSTTransformer):
    def __init__(self, groups: Sequence[Group], annotation: Optional[str]):
        self.annotation = annotation
        self.record = Record()
        self.keywords: Dict[int, Tuple[str, Group]] = {}
        self.kernel: Set[int] = set()
        self.guards: Dict[int, List[Tuple[Group, str, Optional[str]]]] = {}
        self.params: Dict[int, Group] = {}
        self.helpers: Dict[int, Group] = {}
        for g in groups:
            for c in g.calls:
                q = g.q(c)
                self.kernel.add(id(c.node))
                if g.kind == "direct" and g.inline:
                    value = _inline_value(g.metadata, g.form, q)
                elif g.inline:
                    value = f"{PARAM} if {PARAM} is not None and {PARAM}.shape[0] == {q}.shape[0] else None"
                else:
                    value = PARAM
                    bind = _metadata_value(g.metadata, g.form) if g.kind == "direct" else None
                    self.guards.setdefault(id(c.statement), []).append((g, q, bind))
                self.keywords[id(c.node)] = (value, g)
            for k, expr, form in g.callers:
                self.keywords[id(k.node)] = (_metadata_value(expr, form), g)
            if g.helper is not None:
                self.helpers[id(g.helper.node)] = g
                if g.add_param:
                    self.params[id(g.helper.node)] = g

    def _add(self, g: Group, node: cst.CSTNode) -> None:
        self.record.inserted.setdefault(id(g), []).append(node)

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.Call:
        if id(original) not in self.keywords:
            return updated
        value, g = self.keywords[id(original)]
        new = add_keyword(updated, PARAM, value)
        self._add(g, next(a for a in reversed(new.args) if a.keyword and a.keyword.value == PARAM).value)
        if id(original) in self.kernel:
            self.record.kernel_calls[id(original)] = new
        return new

    def leave_FunctionDef(self, original: cst.FunctionDef, updated: cst.FunctionDef) -> cst.FunctionDef:
        g = self.params.get(id(original))
        if g is not None:
            spec = f"{PARAM}: {self.annotation} = None" if self.annotation else f"{PARAM}=None"
            updated = add_param(updated, spec)
            p = updated.params
            self._add(g, next(x for x in (*p.params, *p.kwonly_params) if x.name.value == PARAM))
        h = self.helpers.get(id(original))
        if h is not None:
            self.record.helper_defs[id(h)] = updated
        return updated

    def _guarded(self, original_body, updated_body):
        out = []
        for orig, upd in zip(original_body, updated_body):
            for g, q, bind in self.guards.get(id(orig), ()):
                lead = upd.leading_lines
                blank = [cst.EmptyLine(indent=False)] if lead and lead[0].comment is None else []
                first = [*blank, cst.EmptyLine(comment=cst.Comment(GUARD_COMMENT))]
                if bind:  # bind the metadata here, then the same guard as in a helper
                    stmt = cst.parse_statement(f"{PARAM} = {bind}\n").with_changes(leading_lines=first)
                    out.append(stmt)
                    self._add(g, stmt)
                    first = []
                test = f"{PARAM} is not None and {PARAM}.shape[0] != {q}.shape[0]"
                guard = cst.parse_statement(f"if {test}:\n    {PARAM} = None\n").with_changes(leading_lines=first)
                out.append(guard)
                self._add(g, guard)
                self.record.guards.setdefault(id(g), []).append(guard)
                if not blank:
                    upd = upd.with_changes(leading_lines=[cst.EmptyLine(indent=False), *lead])
            out.append(upd)
        return out

    def leave_IndentedBlock(self, original: cst.IndentedBlock, updated: cst.IndentedBlock) -> cst.IndentedBlock:
        if any(id(s) in self.guards for s in original.body):
            return updated.with_changes(body=self._guarded(original.body, updated.body))
        return updated


# -- validation ------------------------------------------------------------------------
# tests/test_adversarial.py disables this to prove it bites
def validate_rewrite(original: Tree, rewritten: cst.Module, record: Record, groups: Sequence[Group]) -> Dict[int, str]:
    """Check a planned rewrite on the rewritten module; {id(group): why it is unsafe}.

    With LibCST scope analysis: every name the inserted code reads (q's root, the
    metadata's root, topk_length) resolves to the binding intended (the one the kernel
    call's q uses; the metadata bound once on every path, None handled; only this
    group's topk_length); no name that resolved before resolves differently after; each
    guard runs before its call in the same scope with nothing rebinding q in between.
    """
    new = Tree(rewritten, positions=False)
    mine = {id(g): inserted_ids(record.inserted.get(id(g), ())) for g in groups}
    everything = set().union(*mine.values()) if mine else set()
    owner = {i: gid for gid, ids in mine.items() for i in ids}
    anywhere = inserted_ids([n for nodes in record.inserted.values() for n in nodes])
    failures: Dict[int, str] = {}

    def fail(gid: int, why: str) -> None:
        failures.setdefault(gid, why)

    # 1. Nothing that resolved before resolves differently after (class 3: the new
    # parameter or local would capture a global/closure `topk_length`, or make an earlier
    # read of it an UnboundLocalError).
    if not hasattr(original, "table"):
        original.table = resolution_table(original)
    before, after = original.table, resolution_table(new, skip=everything)
    for key, reads in before.items():
        now = after.get(key, [])
        for i, (was, node) in enumerate(reads):
            if i < len(now) and now[i][0] == was:
                continue
            culprits = {owner[id(a.node)] for s in new.scopes for a in s.assignments
                        if a.name == key[1] and id(getattr(a, "node", None)) in owner} or set(mine)
            for gid in culprits:
                fail(gid, f"rewrite would change what `{key[1]}` means at line {original.line(node)}: "
                          f"it would read the `{PARAM}` the rewrite adds; rename the existing one or migrate by hand")
            break

    # 2. What the inserted code reads.
    for rank, name, node, access in new.accesses():
        gid = owner.get(id(node))
        if gid is None or access.is_annotation or name in CONSTANT_NAMES:
            continue
        g = next(x for x in groups if id(x) == gid)
        why = _check_read(new, g, record, mine[gid], anywhere, access, name, node)
        if why:
            fail(gid, why)

    # 3. Each statement guard dominates its call, in the call's own scope, with q unchanged.
    for g in groups:
        if g.inline:
            continue
        for c in g.calls:
            call = record.kernel_calls.get(id(c.node))
            if call is None:
                fail(id(g), "the kernel call was not rewritten")
                continue
            why = _check_guard_placement(new, g, record, call, g.q(c))
            if why:
                fail(id(g), why)
    return failures


def _binding_ids(b) -> Set[int]:
    return {id(a) for a in b.assignments}


def _check_read(new: Tree, g: Group, record: Record, ids: Set[int], anywhere: Set[int], access, name: str,
                node: cst.CSTNode) -> Optional[str]:
    """Why a read of `name` in the code inserted for g (node ids: ids; of every group: anywhere) is unsafe."""
    b = new.binding_in(access.scope, name)
    if name == "getattr":  # the builtin, for metadata whose type nothing declares
        return None if b.scope_rank == -2 or not b.assignments else "rewrite would read `getattr`, which this module rebinds"
    if name == PARAM:
        allowed = set(ids)
        helper = record.helper_defs.get(id(g))
        if helper is not None:
            p = helper.params
            allowed |= {id(x) for x in (*p.params, *p.kwonly_params, *p.posonly_params) if x.name.value == PARAM}
        if not b.assignments:
            return f"rewrite would read `{PARAM}` where nothing binds it"
        for a in b.assignments:
            if id(getattr(a, "node", None)) not in allowed:
                other = getattr(a, "node", None)
                if id(other) in anywhere:
                    return f"another rewritten kernel call in the same function also binds `{PARAM}`"
                return (f"`{PARAM}` already names something where the rewrite would use it "
                        f"({_kind(a)}); rename it or migrate by hand")
        return None
    for c in g.calls:
        call = record.kernel_calls.get(id(c.node))
        q = g.q(c)
        if call is not None and q.split(".")[0] == name and new.inside(node, call):
            return None  # the call's own q, read inline at the call
    for c in g.calls:
        q = g.q(c)
        call = record.kernel_calls.get(id(c.node))
        if call is None or q.split(".")[0] != name:
            continue
        q_node = _root(_q_arg(call))
        if q_node is None:
            continue
        at_call = new.binding(q_node, name)
        if at_call.scope_rank == b.scope_rank and _binding_ids(at_call) == _binding_ids(b):
            return None
        return f"rewrite would read `{name}` outside its scope: the kernel call's `{name}` is {_describe(at_call)}"
    roots = {m.split(".")[0] for m in ([g.metadata] if g.metadata else []) + [e for _, e, _ in g.callers]}
    if name in roots:
        why, none = root_binding(new, node, name)
        if why:
            return why
        if none and not _tests_not_none(new, node, name):
            return f"`{name}` may be None where the rewrite reads `{name}.` from it"
        return None
    return f"rewrite would read `{name}`, which it did not plan to read"


def _kind(a) -> str:
    node = getattr(a, "node", None)
    if isinstance(node, cst.Param):
        return "a parameter"
    if isinstance(getattr(a, "scope", None), GlobalScope):
        return "a module-level name"
    if isinstance(node, (cst.Import, cst.ImportFrom)):
        return "an import"
    return "a local variable"


def _describe(b) -> str:
    if not b.assignments:
        return "unbound there"
    scope = b.assignments[0].scope
    node = getattr(scope, "node", None)
    if isinstance(node, cst.Lambda):
        return "a lambda parameter"
    if isinstance(scope, ComprehensionScope):
        return "a comprehension variable"
    if isinstance(scope, ClassScope):
        return "a class attribute"
    if isinstance(node, cst.FunctionDef):
        return f"bound in `{node.name.value}`"
    return "a module-level name"


def _tests_not_none(new: Tree, node: cst.CSTNode, name: str) -> bool:
    """Is the inserted expression holding node `... if name is not None ...` or `getattr(name, ...)`?"""
    for anc in new.ancestors(node):
        if isinstance(anc, cst.IfExp) and f"{name} is not None" in _code(anc.test):
            return True
        if isinstance(anc, cst.Call) and get_full_name_for_node(anc.func) == "getattr":
            return True
        if isinstance(anc, cst.BaseStatement):
            break
    return False


def _check_guard_placement(new: Tree, g: Group, record: Record, call: cst.Call, q: str) -> Optional[str]:
    guards = [s for s in record.guards.get(id(g), ()) if id(s) in new.order]
    holding = next((a for a in new.ancestors(call) if isinstance(new.parent.get(a), cst.IndentedBlock)), None)
    mine = [s for s in guards if holding is not None and new.parent.get(s) is new.parent.get(holding)
            and new.order[id(s)] < new.order[id(holding)]]
    if not mine:
        return "the guard has no statement of its own before the call"
    guard = mine[-1]
    if not new.dominates(guard, call):
        return "the guard would not run before the call on every path"
    conditional = _conditionally_evaluated(new, call, holding)
    if conditional:
        return (f"the kernel call runs only on some evaluations of its statement ({conditional}): a guard before "
                f"the statement would read `{q.split('.')[0]}` when the call does not run")
    if new.scope_of.get(guard) is not new.scope_of.get(call):
        kind = _scope_kind(new.scope_of.get(call))
        return (f"the kernel call runs inside a {kind} within its statement, not when the statement runs: "
                f"a guard before the statement would not check the `{q.split('.')[0]}` it receives")
    names = {q.split(".")[0]} | ({g.metadata.split(".")[0]} if g.metadata else set())
    for name in names:
        for a in new.binding(call, name).assignments:
            node = getattr(a, "node", None)
            if node is None or id(node) not in new.order or not new.inside(node, holding):
                continue
            if isinstance(holding, cst.While) or new.binds_after_value(a) < new.order[id(call)]:
                return (f"`{name}` is rebound in the statement that holds the call, before the call: "
                        f"a guard before that statement would check another `{name}`")
    return None


def _conditionally_evaluated(new: Tree, call: cst.CSTNode, holding: cst.CSTNode) -> Optional[str]:
    """Is `call` inside a part of its statement that may not run (`x if c else y`, `a and b`)?"""
    child = call
    for anc in new.ancestors(call):
        if anc is holding:
            return None
        if isinstance(anc, cst.IfExp) and child is not anc.test:
            return "a branch of `... if ... else ...`"
        if isinstance(anc, cst.BooleanOperation) and child is anc.right:
            return f"the right side of `{_code(anc.operator).strip()}`"
        child = anc
    return None


def _scope_kind(scope) -> str:
    node = getattr(scope, "node", None)
    if isinstance(node, cst.Lambda):
        return "lambda"
    if isinstance(scope, ComprehensionScope):
        return "comprehension"
    if isinstance(scope, ClassScope):
        return "class body"
    return "nested function"


# -- annotations (class 7) -----------------------------------------------------------
def _top_level_imports(module: cst.Module) -> Dict[str, str]:
    """Names bound by imports that run unconditionally at import time: local -> qualified."""
    out: Dict[str, str] = {}
    for stmt in module.body:
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            if isinstance(small, cst.Import):
                for alias in small.names:
                    full = get_full_name_for_node(alias.name)
                    local = alias.asname.name.value if alias.asname else full.split(".")[0]
                    out[local] = full if alias.asname else local
            elif isinstance(small, cst.ImportFrom) and not isinstance(small.names, cst.ImportStar) and not small.relative:
                base = get_full_name_for_node(small.module) if small.module else ""
                for alias in small.names:
                    local = alias.asname.name.value if alias.asname else alias.name.value
                    out[local] = f"{base}.{alias.name.value}"
    return out


def _optional_annotation(module: cst.Module, facts: ModuleFacts) -> Tuple[Optional[str], bool]:
    """The annotation to write (None: none) and whether `from typing import Optional` must be added.

    An annotation is evaluated when the def runs unless the module has
    `from __future__ import annotations`: every name it reads must then be imported
    unconditionally before (not only under TYPE_CHECKING), or it is written as a string.
    """
    lazy = facts.imports.get("annotations") == "__future__.annotations"
    known = dict(_top_level_imports(module))
    if lazy:  # names imported anywhere at module level (also under TYPE_CHECKING) are fine
        known.update({k: v for k, v in facts.imports.items() if k in facts.module_names})
    torch = next((k for k, v in sorted(known.items()) if v == "torch"), None)
    tensor = f"{torch}.Tensor" if torch else '"torch.Tensor"'
    optional = next((k for k, v in sorted(known.items()) if v == "typing.Optional"), None)
    if optional:
        return f"{optional}[{tensor}]", False
    typing = next((k for k, v in sorted(known.items()) if v == "typing"), None)
    if typing:
        return f"{typing}.Optional[{tensor}]", False
    if "Optional" not in facts.module_names:
        return f"Optional[{tensor}]", True
    return f'"Optional[{tensor.strip(chr(34))}]"', False  # `Optional` means something else here, or is conditional


# -- value uses (class 8) --------------------------------------------------------------
_TESTS = (cst.Comparison, cst.ComparisonTarget, cst.If, cst.While, cst.Assert, cst.UnaryOperation, cst.Del)


def _value_uses(tree: Tree, facts: ModuleFacts, path: str) -> List[Site]:
    """The kernel used other than by calling it: `partial(kernel, ...)`, `getattr(mod,
    "flash_mla_sparse_fwd")`, stored in an attribute or passed on. Calls through it cannot
    be checked, so each is reported as manual, never skipped."""
    sites = []
    seen: Set[int] = set()

    def add(node: cst.CSTNode, callee: str, how: str) -> None:
        pos = tree.position.get(node)
        if pos is None or id(node) in seen:
            return
        seen.add(id(node))
        sites.append(Site(path, pos.start.line, pos.start.column + 1, callee, Status.MANUAL,
                          f"the kernel is {how}: calls through it cannot be checked or rewritten; "
                          "pass topk_length where it is called, or call the kernel directly"))

    for _, name, node, _ in (tree.accesses() if _maybe_value_use(tree, facts) else ()):
        chain = node
        while isinstance(tree.parent.get(chain), cst.Attribute) and tree.parent[chain].value is chain:
            chain = tree.parent[chain]
        full = dotted(chain) if isinstance(chain, (cst.Name, cst.Attribute)) else None
        if not full:
            continue
        root, _, rest = full.partition(".")
        callee = facts.imports.get(root, root) + ("." + rest if rest else "")
        if not is_kernel(callee):
            continue
        parent = tree.parent.get(chain)
        if isinstance(parent, cst.Call) and parent.func is chain:
            continue
        if isinstance(parent, _TESTS) or (isinstance(parent, cst.IfExp) and parent.test is chain):
            continue
        if isinstance(parent, (cst.AssignTarget, cst.AnnAssign, cst.AugAssign)) and parent.target is chain:
            continue  # a rebinding: the calls through that name are refused by callee_identity
        add(chain, callee, _how(tree, chain))
    for call in tree.find(cst.Call, lambda c: isinstance(c.func, cst.Attribute)):
        attr = call.func.attr.value
        if dotted(call.func) is None and (attr in ENTRY_POINTS or attr == OP_NAME):
            add(call, attr, f"reached through `{_code(call.func.value).strip()[:40]}`")
    for k in facts.calls:
        if k.callee != "getattr" or len(k.node.args) < 2 or not isinstance(k.node.args[1].value, cst.SimpleString):
            continue
        attr = k.node.args[1].value.evaluated_value
        base = dotted(k.node.args[0].value)
        if isinstance(attr, str) and base and is_kernel(f"{base}.{attr}"):
            root, _, rest = base.partition(".")
            add(k.node, facts.imports.get(root, root) + ("." + rest if rest else "") + f".{attr}", "looked up by name with getattr")
    return sites


def _maybe_value_use(tree: Tree, facts: ModuleFacts) -> bool:
    """Whether a kernel name, or a name imported as one, occurs anywhere but in the callee of a call
    or in an import. If not, no name read can be a value use, and the scope analysis that finds them
    (the costliest step on a module whose calls all pass topk_length) is not needed."""
    names = set(ENTRY_POINTS) | {OP_NAME} | {local for local, q in facts.imports.items() if is_kernel(q)}
    for n in tree.find(cst.Name, lambda n: n.value in names):
        top, up = n, tree.parent.get(n)
        while isinstance(up, cst.Attribute) and (up.attr is top or up.value is top):
            top, up = up, tree.parent.get(up)
        if isinstance(up, cst.Call) and up.func is top:
            continue
        while up is not None and not isinstance(up, (cst.Import, cst.ImportFrom)):
            up = tree.parent.get(up)
        if up is None:
            return True
    return False


def _how(tree: Tree, node: cst.CSTNode) -> str:
    parent = tree.parent.get(node)
    if isinstance(parent, cst.Arg):
        call = tree.parent.get(parent)
        fname = get_full_name_for_node(call.func) if isinstance(call, cst.Call) else None
        if fname and fname.rsplit(".", 1)[-1] == "partial":
            return "wrapped by functools.partial"
        return f"passed to `{fname}` as a value" if fname else "passed as a value"
    if isinstance(parent, (cst.Assign, cst.AnnAssign)):
        targets = [t.target for t in parent.targets] if isinstance(parent, cst.Assign) else [parent.target]
        if any(isinstance(t, (cst.Attribute, cst.Subscript)) for t in targets):
            return f"stored in `{_code(targets[0]).strip()}`"
        return f"bound to `{_code(targets[0]).strip()}`"
    return "used as a value"


# -- the driver --------------------------------------------------------------------------
_STUB = cst.IndentedBlock(body=[cst.SimpleStatementLine([cst.Expr(cst.Ellipsis())])])


def _touched(tree: Tree, groups: Sequence[Group]) -> Set[int]:
    """ids of the defs that hold a call the rewrite edits (and of the defs around them)."""
    out: Set[int] = set()
    for g in groups:
        for node in [c.node for c in g.calls] + [k.node for k, _, _ in g.callers]:
            out.update(id(a) for a in tree.ancestors(node) if isinstance(a, cst.FunctionDef))
        if g.helper is not None:
            out.add(id(g.helper.node))
    return out


def _reduced(module: cst.Module, keep: Set[int]) -> cst.Module:
    """The module with the body of every def outside `keep` replaced by `...`.

    New bindings only appear inside kept defs, so every read they can change is still
    there; module- and class-level code is kept whole. Kept nodes stay the same objects.
    """
    def shrink(body):
        out = []
        for st in body:
            if isinstance(st, cst.FunctionDef) and id(st) not in keep:
                st = st.with_changes(body=_STUB)
            elif isinstance(st, cst.ClassDef) and isinstance(st.body, cst.IndentedBlock):
                inner = shrink(st.body.body)
                if any(a is not b for a, b in zip(inner, st.body.body)):
                    st = st.with_changes(body=st.body.with_changes(body=inner))
            out.append(st)
        return out

    return module.with_changes(body=shrink(module.body))


def migrate(source: str, path: str, gate: Gate, metadata: Sequence[str] = ()) -> Tuple[str, List[Site]]:
    """Classify every kernel call in `source` and return (rewritten source, sites)."""
    module = cst.parse_module(source)
    tree = Tree(module)
    facts = collect(module, tree.wrapper)
    analysis = _Analysis(facts, tree, source, path, gate, metadata)
    calls = [c for c in facts.calls if is_kernel(c.callee)]
    sites = []
    for c in calls:
        before = len(analysis.groups)
        sites.append(analysis.classify(c))
        for g in analysis.groups[before:]:
            g.sites.append(len(sites) - 1)
        for g in analysis.groups[:before]:  # a second kernel call joined a helper's group
            if any(x is c for x in g.calls) and len(sites) - 1 not in g.sites:
                g.sites.append(len(sites) - 1)
    groups = list(analysis.groups)
    annotation, need_import = _optional_annotation(module, facts)
    if groups:  # validate on the module cut down to the functions the rewrite touches (faster)
        small = _reduced(module, _touched(tree, groups))
        small_tree = Tree(small, positions=False)
        small_tree.position = tree.position  # kept nodes are the original objects: their lines hold
    while groups:
        rewrite = _Rewrite(groups, annotation)
        failures = validate_rewrite(small_tree, small.visit(rewrite), rewrite.record, groups) or {}
        if not failures:
            break
        for g in [g for g in groups if id(g) in failures]:
            if not g.inline:
                g.inline = True  # the guard goes into the call itself, where q is read
                for i in g.sites:
                    inline = _direct_reason(g) if g.kind == "direct" else sites[i].reason + " (guarded inline)"
                    sites[i] = replace(sites[i], reason=inline)
                continue
            groups.remove(g)
            for i in g.sites:
                sites[i] = replace(sites[i], status=Status.MANUAL, reason=failures[id(g)], metadata=None)
    sites += _value_uses(tree, facts, path)
    sites.sort(key=lambda s: (s.line, s.column))
    if not groups:
        return source, sites
    new = module.visit(_Rewrite(groups, annotation))
    if need_import and any(g.add_param for g in groups):
        from libcst.codemod import CodemodContext
        from libcst.codemod.visitors import AddImportsVisitor

        ctx = CodemodContext()
        AddImportsVisitor.add_needed_import(ctx, "typing", "Optional")
        new = AddImportsVisitor(ctx).transform_module(new)
    return new.code, sites


# -- examples: the rule's documentation and its tests (tests/test_rule_examples.py) -----------
@dataclass(frozen=True)
class Example:
    """`code` must classify as `status` (reason containing `reason`); if `after` is set, apply gives it."""

    code: str
    status: Optional[Status]  # None: no site at all
    reason: str = ""
    after: Optional[str] = None
    kernel: Optional[str] = "sglang-kernel==0.4.6"


_HELPER_BEFORE = '''\
from typing import Optional

import torch


class Backend:
    def __init__(self):
        self.forward_metadata: Metadata  # declared as SGLang does: the metadata is read plainly

    def forward_decode(self, q, kv, layer):
        metadata = self.forward_metadata
        return self._forward_flashmla_sparse(
            q_all=q,
            kv_cache=kv,
            page_table_1=metadata.page_table_1,
            sm_scale=layer.scaling,
        )

    def _forward_flashmla_sparse(
        self,
        q_all: torch.Tensor,
        kv_cache: torch.Tensor,
        page_table_1: torch.Tensor,
        sm_scale: float,
    ) -> torch.Tensor:
        from sgl_kernel.flash_mla import flash_mla_sparse_fwd

        indices = page_table_1.unsqueeze(1)

        o, _, _ = flash_mla_sparse_fwd(
            q=q_all,
            kv=kv_cache,
            indices=indices,
            sm_scale=sm_scale,
        )
        return o


class Metadata:
    dsa_cache_seqlens_int32: torch.Tensor  # seqlens clipped to topk
'''

_KERNEL_IMPORT = "from sgl_kernel.flash_mla import flash_mla_sparse_fwd\n"
_GETATTR = 'getattr(metadata, "dsa_cache_seqlens_int32", None)'  # nothing here declares what `metadata` holds
_INLINE = f"{_GETATTR} if {_GETATTR} is not None and {_GETATTR}.shape[0] == {{q}}.shape[0] else None"


def _fn(body: str, head: str = "", imports: str = _KERNEL_IMPORT) -> str:
    """A small module: the kernel import, `head`, then `body`; it uses the DSA metadata field."""
    return f"import torch\n{imports}{head}\n{body}# metadata.dsa_cache_seqlens_int32\n"


def _helper(kernel_call: str, head: str = "", params: str = "q", call: str = "q", decorator: str = "") -> str:
    """SGLang's shape in miniature: forward() holds the metadata, _sparse() calls the kernel."""
    return (f"from sgl_kernel.flash_mla import flash_mla_sparse_fwd\n{head}\n\nclass Backend:\n"
            f"    def forward(self, q):\n        metadata = self.forward_metadata\n        return self._sparse({call})\n\n"
            f"    {decorator}def _sparse(self, {params}):\n        {kernel_call}\n# metadata.dsa_cache_seqlens_int32\n")


def _helper_after(before: str, annotation: str) -> str:
    return before.replace("return self._sparse(q)", f"return self._sparse(q, topk_length={_GETATTR})").replace(
        "def _sparse(self, q):", f"def _sparse(self, q, topk_length: {annotation} = None):").replace(
        "        return flash_mla_sparse_fwd(q, self.kv, self.idx, 1.0)",
        f"        {GUARD_COMMENT}\n        if topk_length is not None and topk_length.shape[0] != q.shape[0]:\n"
        "            topk_length = None\n\n        return flash_mla_sparse_fwd(q, self.kv, self.idx, 1.0, topk_length=topk_length)")


_PADDED = _fn("""\
class Backend:
    def forward(self, q, q_rope, layer):
        metadata = self.forward_metadata
        q_nope = q.view(-1, layer.heads, 512)
        q_all = torch.cat([q_nope, q_rope], dim=-1)
        return self._sparse(q_all)

    def _sparse(self, q_all):
        num_tokens, num_heads, head_dim = q_all.shape
        q_input = q_all.new_zeros((num_tokens, 64, head_dim))
        q_input[:, :num_heads, :] = q_all
        o, _, _ = flash_mla_sparse_fwd(q_input, self.kv, self.idx, 1.0)
        return o[:, :num_heads]
""")
_TYPE_CHECKING = ("from typing import TYPE_CHECKING\n\nfrom sgl_kernel.flash_mla import flash_mla_sparse_fwd\n\n"
                  "if TYPE_CHECKING:\n    import torch\n    from typing import Optional\n\n\n"
                  + _helper("return flash_mla_sparse_fwd(q, self.kv, self.idx, 1.0)").split("\n\n", 1)[1])
_LAZY = "from __future__ import annotations\n\n" + _TYPE_CHECKING


VALID = [
    Example(_HELPER_BEFORE.replace("sm_scale=sm_scale,\n        )", "sm_scale=sm_scale,\n            topk_length=lens,\n        )"),
            Status.COMPLIANT, "passes topk_length"),
    Example("from sgl_kernel.flash_mla import flash_mla_sparse_fwd\nflash_mla_sparse_fwd(q, kv, idx, s, topk_length=None)\n",
            Status.OPT_OUT, "topk_length=None"),
    Example("import sgl_kernel\nsgl_kernel.flash_mla_sparse_fwd(q, kv, idx, s, 512, sink, lens)\n",
            Status.COMPLIANT, "positionally"),
    Example("from sgl_kernel.flash_mla import flash_mla_sparse_fwd\n"
            "o = flash_mla_sparse_fwd(q, kv, idx, s)  # topk-migrate: ignore -- indices have interior -1 gaps\n",
            Status.OPT_OUT, "interior -1 gaps"),
    Example("from sgl_kernel.flash_mla import flash_mla_with_kvcache, sparse_mla_q8kv8_prefill_fwd\n"
            "flash_mla_with_kvcache(q, kv)\nsparse_mla_q8kv8_prefill_fwd(q, kv, idx)\n"
            "triton_sparse_mla_fwd(q, kv, idx)\nsparse_mla_prefill(q, kv, idx)\n", None),
    Example("def flash_mla_sparse_fwd(q, kv, indices, sm_scale, d_v=512, attn_sink=None, topk_length=None):\n"
            "    return q\n", None),
    Example("from sgl_kernel.flash_mla import flash_mla_sparse_fwd\n"
            "def f(metadata, q, kv, idx, **kw):\n    return flash_mla_sparse_fwd(q, kv, idx, 1.0, **kw)\n"
            "class M:\n    dsa_cache_seqlens_int32 = None\n",
            Status.MANUAL, "**kwargs may already carry"),
    Example("from sgl_kernel.flash_mla import flash_mla_sparse_fwd\n"
            "def f(q, kv, idx, seq_lens):\n    return flash_mla_sparse_fwd(q, kv, idx, 1.0)\n",
            Status.MANUAL, "no clipped-seqlen metadata"),
    Example("import torch\ntorch.ops.sgl_kernel.sparse_prefill_fwd.default(q, kv, idx, s, 512)\n",
            Status.MANUAL, "op-level call"),
    Example(_HELPER_BEFORE, Status.MANUAL, "kernel too old", kernel="sglang-kernel==0.4.2.post2"),
    Example(_HELPER_BEFORE, Status.MANUAL, "kernel too old", kernel="sgl-kernel==0.3.21"),
    Example(_HELPER_BEFORE, Status.MANUAL, "kernel capability unknown (pass --kernel)", kernel=None),
    Example("from sgl_kernel.flash_mla import flash_mla_sparse_fwd\n"
            "def f(metadata, x, kv, idx):\n    return flash_mla_sparse_fwd(q=pad(x), kv=kv, indices=idx, sm_scale=1.0)\n"
            "# metadata.dsa_cache_seqlens_int32\n",
            Status.MANUAL, "q is not a plain name"),

    # -- issue 8, class 1 (placement): q is a lambda's parameter, the metadata the enclosing function's.
    Example(_fn("def attend(q, kv, idx, metadata):\n"
                "    fwd = lambda q: flash_mla_sparse_fwd(q, kv, idx, 1.0)\n"
                "    return fwd(q)\n"),
            Status.MANUAL, "`q` is a lambda parameter"),
    # class 2 (metadata availability): bound on one path only; rebound before the call.
    Example(_fn("def attend(self, q, kv, idx, eager):\n    if not eager:\n        metadata = self.forward_metadata\n"
                "    return flash_mla_sparse_fwd(q, kv, idx, 1.0)\n"),
            Status.MANUAL, "`metadata` is bound at line 6 only on some paths to the call"),
    Example(_fn("def attend(self, q, kv, idx):\n    metadata = self.forward_metadata\n"
                "    metadata = metadata.page_table_1\n    return flash_mla_sparse_fwd(q, kv, idx, 1.0)\n"),
            Status.MANUAL, "`metadata` is bound 2 times in its function (lines 5, 6)"),
    # class 3 (names): the helper reads a module-level `topk_length`; the new parameter would capture it.
    Example(_helper("assert self.idx.shape[-1] == topk_length\n        return flash_mla_sparse_fwd(q, self.kv, self.idx, 1.0)",
                    head="topk_length = 2048  # the indexer's width\n"),
            Status.MANUAL, "rewrite would change what `topk_length` means at line 11"),
    Example(_helper("assert self.idx.shape[-1] == topk_length\n        return flash_mla_sparse_fwd(q, self.kv, self.idx, 1.0)",
                    params="q, topk_length", call="q, 2048"),
            Status.MANUAL, "already has a parameter `topk_length` without a None default"),
    # class 4 (callee identity): rebound under a flag; a fallback to another kernel module; a star
    # import after the kernel; a decorator; two definitions; a method with the kernel's name.
    Example(_fn("def attend(q, kv, idx, metadata):\n    return flash_mla_sparse_fwd(q, kv, idx, 1.0)\n",
                head="from legacy_ops import sparse_fwd_v1\n\nif USE_LEGACY:\n    flash_mla_sparse_fwd = sparse_fwd_v1\n"),
            Status.MANUAL, "`flash_mla_sparse_fwd` may not be the kernel at run time: it is bound at line 6"),
    Example(_fn("def attend(q, kv, idx, metadata):\n    return flash_mla_sparse_fwd(q, kv, idx, 1.0)\n",
                imports="try:\n    from sgl_kernel.flash_mla import flash_mla_sparse_fwd\n"
                        "except ImportError:\n    from flash_mla import flash_mla_sparse_fwd\n"),
            Status.MANUAL, "`flash_mla_sparse_fwd` may also be flash_mla.flash_mla_sparse_fwd (imported at line 5)"),
    Example(_fn("def attend(q, kv, idx, metadata):\n    return flash_mla_sparse_fwd(q, kv, idx, 1.0)\n",
                head="from legacy_ops import *\n"),
            Status.MANUAL, "`from legacy_ops import *` at line 3 may rebind `flash_mla_sparse_fwd`"),
    Example(_helper("return flash_mla_sparse_fwd(q, self.kv, self.idx, 1.0)", decorator="@traced(\"sparse\")\n    "),
            Status.MANUAL, "is decorated with `@traced`"),
    Example(_fn("if FAST:\n    def sparse(q, kv, idx):\n        return flash_mla_sparse_fwd(q, kv, idx, 1.0)\n"
                "else:\n    def sparse(q, kv, idx):\n        return slow_sparse(q, kv, idx)\n\n"
                "def forward(metadata, q, kv, idx):\n    return sparse(q, kv, idx)\n"),
            Status.MANUAL, "sparse is bound 2 times (lines 5, 8)"),
    Example(_fn("class B:\n    def flash_mla_sparse_fwd(self, q, kv, idx, s):\n        return legacy(q, kv, idx, s)\n\n"
                "    def attend(self, q, kv, idx, metadata):\n        return self.flash_mla_sparse_fwd(q, kv, idx, 1.0)\n"),
            Status.MANUAL, "`self.flash_mla_sparse_fwd` is a method (B.flash_mla_sparse_fwd)"),
    # class 5 (rows): q reordered at the call, in a caller's argument, or concatenated along rows.
    Example(_fn("def attend(q, kv, idx, metadata, order):\n    q = q[order]  # sorted by length\n"
                "    return flash_mla_sparse_fwd(q, kv, idx, 1.0)\n"),
            Status.MANUAL, "`q[order]` indexes dim 0"),
    Example(_helper("return flash_mla_sparse_fwd(q, self.kv, self.idx, 1.0)", call="q.index_select(0, self.perm)"),
            Status.MANUAL, "at the caller on line 7: q's rows may not be the metadata's rows: `q.index_select(0, self.perm)`"),
    Example(_fn("def attend(q_nope, q_rope, kv, idx, metadata):\n    q = torch.cat([q_nope, q_rope])\n"
                "    return flash_mla_sparse_fwd(q, kv, idx, 1.0)\n"),
            Status.MANUAL, "`torch.cat([q_nope, q_rope])` works on dim 0 (the rows)"),
    # class 8 (discovery): the kernel used as a value is reported, never skipped.
    Example("import functools\nfrom sgl_kernel.flash_mla import flash_mla_sparse_fwd\n\n"
            "sparse = functools.partial(flash_mla_sparse_fwd, d_v=512)\n",
            Status.MANUAL, "the kernel is wrapped by functools.partial"),
    Example("from sgl_kernel import flash_mla\n\nfwd = getattr(flash_mla, \"flash_mla_sparse_fwd\")\n",
            Status.MANUAL, "the kernel is looked up by name with getattr"),
    Example("from sgl_kernel import flash_mla\n\n\nclass B:\n    def __init__(self):\n"
            "        self.kernel = flash_mla.flash_mla_sparse_fwd\n",
            Status.MANUAL, "the kernel is stored in `self.kernel`"),
]

INVALID = [
    # The reference shape: the kernel sits in a helper whose callers hold the metadata.
    Example(_HELPER_BEFORE, Status.FIXABLE, "gains topk_length", after=_HELPER_BEFORE.replace(
        "            sm_scale=layer.scaling,\n        )",
        "            sm_scale=layer.scaling,\n            topk_length=metadata.dsa_cache_seqlens_int32,\n        )",
    ).replace(
        "        sm_scale: float,\n    ) -> torch.Tensor:",
        "        sm_scale: float,\n        topk_length: Optional[torch.Tensor] = None,\n    ) -> torch.Tensor:",
    ).replace(
        "        indices = page_table_1.unsqueeze(1)\n\n",
        "        indices = page_table_1.unsqueeze(1)\n\n"
        f"        {GUARD_COMMENT}\n"
        "        if topk_length is not None and topk_length.shape[0] != q_all.shape[0]:\n"
        "            topk_length = None\n\n",
    ).replace(
        "            sm_scale=sm_scale,\n        )",
        "            sm_scale=sm_scale,\n            topk_length=topk_length,\n        )",
    )),
    # Metadata in scope at the call itself, kernel imported under an alias (older NSA names).
    Example(
        "from sgl_kernel.flash_mla import flash_mla_sparse_fwd as sparse_fwd\n\n"
        "def attend(q, kv, idx, metadata):\n    return sparse_fwd(q, kv, idx, 0.1)\n\n"
        "# metadata.nsa_cache_seqlens_int32: clipped to topk\n",
        Status.FIXABLE, "passes metadata.nsa_cache_seqlens_int32",
        after="from sgl_kernel.flash_mla import flash_mla_sparse_fwd as sparse_fwd\n\n"
        f"def attend(q, kv, idx, metadata):\n    {GUARD_COMMENT}\n"
        "    topk_length = getattr(metadata, \"nsa_cache_seqlens_int32\", None)\n"
        "    if topk_length is not None and topk_length.shape[0] != q.shape[0]:\n        topk_length = None\n\n"
        "    return sparse_fwd(q, kv, idx, 0.1, topk_length=topk_length)\n\n"
        "# metadata.nsa_cache_seqlens_int32: clipped to topk\n",
    ),
    # A one-line suite leaves no statement to guard before (it would run even when the branch
    # does not): the guard goes inline.
    Example(
        "from sgl_kernel.flash_mla import flash_mla_sparse_fwd\n\n"
        "def attend(q, kv, idx, metadata):\n    if metadata is not None: return flash_mla_sparse_fwd(q, kv, idx, 0.1)\n\n"
        "# metadata.dsa_cache_seqlens_int32\n",
        Status.FIXABLE, "guarded inline",
        after="from sgl_kernel.flash_mla import flash_mla_sparse_fwd\n\n"
        "def attend(q, kv, idx, metadata):\n    if metadata is not None: return flash_mla_sparse_fwd(q, kv, idx, 0.1, "
        "topk_length=getattr(metadata, \"dsa_cache_seqlens_int32\", None) if getattr(metadata, \"dsa_cache_seqlens_int32\", None) is not None "
        "and getattr(metadata, \"dsa_cache_seqlens_int32\", None).shape[0] == q.shape[0] else None)\n\n"
        "# metadata.dsa_cache_seqlens_int32\n",
    ),
    # Module import alias, try/except fallback to None, and Optional not yet imported.
    Example(
        "import torch\ntry:\n    import sgl_kernel.flash_mla as fm\nexcept ImportError:\n    fm = None\n\n\n"
        "def run(metadata, q, kv, idx):\n    return helper(q, kv, idx)\n\n\n"
        "def helper(q, kv, idx):\n    out = fm.flash_mla_sparse_fwd(q, kv, idx, 1.0)  # the kernel\n    return out\n"
        "# dsa_cache_seqlens_int32\n",
        Status.FIXABLE, "helper gains topk_length",
        after="import torch\nfrom typing import Optional\n\ntry:\n    import sgl_kernel.flash_mla as fm\nexcept ImportError:\n    fm = None\n\n\n"
        "def run(metadata, q, kv, idx):\n    return helper(q, kv, idx, topk_length=getattr(metadata, \"dsa_cache_seqlens_int32\", None))\n\n\n"
        "def helper(q, kv, idx, topk_length: Optional[torch.Tensor] = None):\n"
        f"    {GUARD_COMMENT}\n"
        "    if topk_length is not None and topk_length.shape[0] != q.shape[0]:\n        topk_length = None\n\n"
        "    out = fm.flash_mla_sparse_fwd(q, kv, idx, 1.0, topk_length=topk_length)  # the kernel\n    return out\n"
        "# dsa_cache_seqlens_int32\n",
    ),

    # -- issue 8, class 1 (placement): a guard before the statement would not see the `q` a lambda's
    # call reads later, nor a `q` rebound earlier on the same line; both guard inline, at the call.
    Example(_fn("def attend(q, kv, idx, metadata):\n    run = lambda: flash_mla_sparse_fwd(q, kv, idx, 1.0)\n    return run()\n"),
            Status.FIXABLE, "guarded inline",
            after=_fn("def attend(q, kv, idx, metadata):\n    run = lambda: flash_mla_sparse_fwd(q, kv, idx, 1.0, "
                      f"topk_length={_INLINE.format(q='q')})\n    return run()\n")),
    Example(_fn("def attend(x, kv, idx, metadata):\n    q = x.view(x.shape[0], -1, 576); o = flash_mla_sparse_fwd(q, kv, idx, 1.0)\n"
                "    return o\n"),
            Status.FIXABLE, "guarded inline",
            after=_fn("def attend(x, kv, idx, metadata):\n    q = x.view(x.shape[0], -1, 576); o = flash_mla_sparse_fwd(q, kv, idx, 1.0, "
                      f"topk_length={_INLINE.format(q='q')})\n    return o\n")),
    # class 2: a None default: the inserted binding handles None.
    Example(_fn("def attend(q, kv, idx, metadata=None):\n    return flash_mla_sparse_fwd(q, kv, idx, 1.0)\n"),
            Status.FIXABLE, "guarded by q's row count",
            after=_fn(f"def attend(q, kv, idx, metadata=None):\n    {GUARD_COMMENT}\n"
                      f"    topk_length = {_GETATTR}\n"
                      "    if topk_length is not None and topk_length.shape[0] != q.shape[0]:\n        topk_length = None\n\n"
                      "    return flash_mla_sparse_fwd(q, kv, idx, 1.0, topk_length=topk_length)\n")),
    # class 3: `topk_length` is already a local with another meaning: the guard goes inline.
    Example(_fn("def attend(q, kv, idx, metadata):\n    topk_length = idx.shape[-1]\n"
                "    o, _, _ = flash_mla_sparse_fwd(q, kv, idx, 1.0)\n    return o, topk_length\n"),
            Status.FIXABLE, "guarded inline",
            after=_fn("def attend(q, kv, idx, metadata):\n    topk_length = idx.shape[-1]\n"
                      "    o, _, _ = flash_mla_sparse_fwd(q, kv, idx, 1.0, "
                      f"topk_length={_INLINE.format(q='q')})\n    return o, topk_length\n")),
    # class 5 (rows): head padding by new_zeros + slice assignment, view and cat along the last dim
    # keep the rows: SGLang's own shape stays fixable. Class 7: torch imported unconditionally.
    Example(_PADDED, Status.FIXABLE, "gains topk_length", after=_PADDED.replace(
        "return self._sparse(q_all)", f"return self._sparse(q_all, topk_length={_GETATTR})").replace(
        "def _sparse(self, q_all):", "def _sparse(self, q_all, topk_length: Optional[torch.Tensor] = None):").replace(
        "        o, _, _ = flash_mla_sparse_fwd(q_input, self.kv, self.idx, 1.0)",
        f"        {GUARD_COMMENT}\n        if topk_length is not None and topk_length.shape[0] != q_input.shape[0]:\n"
        "            topk_length = None\n\n"
        "        o, _, _ = flash_mla_sparse_fwd(q_input, self.kv, self.idx, 1.0, topk_length=topk_length)").replace(
        _KERNEL_IMPORT, _KERNEL_IMPORT + "from typing import Optional\n", 1)),
    # class 7 (annotations): torch and Optional only under TYPE_CHECKING: a string annotation; with
    # `from __future__ import annotations` the file's own spelling.
    Example(_TYPE_CHECKING, Status.FIXABLE, "gains topk_length", after=_helper_after(
        _TYPE_CHECKING, '"Optional[torch.Tensor]"')),
    Example(_LAZY, Status.FIXABLE, "gains topk_length", after=_helper_after(_LAZY, "Optional[torch.Tensor]")),
]


class PassTopkLength(Rule):
    """Without topk_length the sparse prefill kernel scans the whole -1-padded top-k width of every
    row. `topk-migrate apply` passes the clipped-seqlen metadata the callers already hold, through
    the helper that calls the kernel, with a guard that falls back to the full width if the rows
    ever differ from q's; a site it cannot prove safe is `manual`, with the hazard named."""

    id = "pass-topk-length"
    summary = "Sparse FlashMLA prefill call without topk_length"
    entry_points = ("flash_mla_sparse_fwd", "flash_mla_sparse_prefill", "sparse_prefill_fwd")
    param = PARAM
    min_kernel = MIN_KERNEL
    VALID, INVALID = VALID, INVALID
    BUMP_EXAMPLES = [
        BumpExample(_KERNEL_IMPORT + "def f(q, kv, idx, metadata):\n    return flash_mla_sparse_fwd(q, kv, idx, 1.0, d_v=512)\n",
                    "sglang-kernel-0.4.2.post2", "sglang-kernel-0.4.6", OPPORTUNITY),
        BumpExample(_KERNEL_IMPORT + "def f(q, kv, idx, n):\n    return flash_mla_sparse_fwd(q, kv, idx, 1.0, topk_length=n)\n",
                    "sglang-kernel-0.4.2.post2", "sglang-kernel-0.4.6", None),
    ]

    def sites(self, source: str, path: str, gate: Gate, metadata: Sequence[str] = ()) -> Tuple[str, List[Site]]:
        return migrate(source, path, gate, metadata)

    def bump(self, ctx: Context) -> List[Finding]:
        """In a bump that adds topk_length: an opportunity, fixable where this rule's own verdict
        on the file under the new pin says so."""
        if ctx.entry_point not in ENTRY_POINTS or not new_param(ctx, PARAM):
            return []
        why = (f"`topk_length` is new in {ctx.new.label} and not passed: the sparse prefill kernel scans the "
               "whole -1-padded top-k width of every row")
        if ctx.new.pin is None:
            return [Finding(OPPORTUNITY, why + "; name the new release as NAME==VERSION to get the "
                                               "topk_length rule's verdict", PARAM, self.id)]
        verdicts = ctx.rule_sites(self.id)
        if "error" in verdicts:
            return [Finding(OPPORTUNITY, why + f"; the topk_length rule could not read the file ({verdicts['error']})",
                            PARAM, self.id)]
        site = verdicts.get((ctx.line, ctx.column))
        status = getattr(getattr(site, "status", None), "value", None)
        if status == "fixable":
            passes = f" (passes `{site.metadata}`)" if site.metadata else ""
            return [Finding(OPPORTUNITY, why + f"; fixable by the topk_length rule{passes}", PARAM, self.id,
                            fix=f"topk-migrate apply --kernel {ctx.new.pin} {ctx.path}")]
        detail = f": {status}, {site.reason}" if site is not None else ": the rule found no site here"
        return [Finding(OPPORTUNITY, why + f"; not fixable automatically (topk_length rule{detail})", PARAM, self.id)]
