"""What the pass-topk-length rule reads of a module (codemods/pass_topk_length/rule.py): the metadata that
satisfies the kernel's contract, and the analysis that classifies each call and plans its rewrite (the
helper that calls the kernel, its callers, where q's rows come from), including the kernel's uses as a
value. The kernel's names, and the verdicts that need no LibCST: pass_topk_length/quick.py. The rewrite and
its validation: pass_topk_length/rewrite.py."""
from __future__ import annotations

import ast
import os
import re
import textwrap
from dataclasses import replace
from typing import Callable, Dict, List, Optional, Sequence, Set, Tuple

import libcst as cst
from libcst.helpers import get_full_name_for_node
from libcst.metadata import FunctionScope, GlobalScope, ImportAssignment

from topk_migrate import bounded, guard, kernels, project, spelling, suppress
from topk_migrate.cst.resolve import CallInfo, Function, ModuleFacts, dotted
from topk_migrate.cst.scopecheck import Tree, root_binding
from topk_migrate.model import Capability, InputError, Site, Status
from topk_migrate.project import project_scope
from topk_migrate.rules import RuleOptions

from . import attributes, derived, reach
from .group import Group, _direct_reason
from .quick import ENTRY_POINTS, OP_NAME, OP_TOPK_LENGTH_POSITION, PARAM, expand, is_kernel, is_op_level  # noqa: F401
from .rows import _own_returns, index_hazard, local_defs, row_hazard
from .syntax import (
    _as_ast,
    _code,
    _indices_arg,
    _is_attr,
    _is_name,
    _is_none,
    _q_arg,
    _root,
    _targets_attribute,
    _top_level_imports,
)
from .values import TESTS

# Metadata known to satisfy the contract: per-row valid-index count (seqlens clipped
# to topk), int32, 1-D, row-aligned with q, updated in place under CUDA-graph replay.
KNOWN_METADATA = ("metadata.dsa_cache_seqlens_int32", "metadata.nsa_cache_seqlens_int32")

RULE_ID = "pass-topk-length"
# Decorators that keep a method's signature as written (any other one may not pass topk_length on).
SIGNATURE_KEEPING_DECORATORS = {"staticmethod", "classmethod"}
# Decorators called with no arguments that wrap the helper in a context and pass every argument on:
# `@torch.inference_mode()` / `@torch.no_grad()` on engines' forward helpers. Matched on what `torch`
# is imported as, never on the spelling alone.
ARGUMENT_PASSING_DECORATORS = {"torch.inference_mode", "torch.no_grad", "torch.enable_grad"}


# callee -> Capability: does the kernel behind it accept topk_length (see api.kernel_gate)
Gate = Callable[[str], Capability]


def _at(calls: Sequence[CallInfo]) -> str:
    lines = ", ".join(str(k.range.start.line) for k in calls)
    return f"callers at line{'s' if len(calls) > 1 else ''} {lines}"


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


# Field meaning: what the engines write into the metadata field (sglang (n|d)sa/utils.py).
CLIPS = {
    "compute_dsa_seqlens": "sglang dsa/utils.py: original_seq_lens.clamp(max=dsa_index_topk)",
    "compute_nsa_seqlens": "sglang nsa/utils.py: original_seq_lens.clamp(max=nsa_index_topk)",
}
CLIP_HOW = ("the engine's compute_dsa_seqlens / compute_nsa_seqlens, a clamp with max= or a minimum, bounded by the "
            "top-k width read plainly: self.dsa_index_topk, self.nsa_index_topk, INDEX_TOPK")
CLIP_KEEPING = {"pad_dsa_cache_seqlens", "pad_nsa_cache_seqlens"}  # (forward_batch, clipped seqlens): padded for graphs
CLIPPED_FIELDS = {
    "dsa_cache_seqlens_int32": "the field itself", "nsa_cache_seqlens_int32": "the field itself",
    "dsa_cache_seqlens": "sglang dsa/dsa_backend_mtp_precompute.py PrecomputedMetadata: compute_dsa_seqlens, "
                         "or its fused twin for speculative steps",
    "nsa_cache_seqlens": "sglang nsa/nsa_backend_mtp_precompute.py PrecomputedMetadata: compute_nsa_seqlens",
}


def _is_attr_of_self(e: cst.BaseExpression) -> bool:
    return isinstance(e, cst.Attribute) and isinstance(e.value, cst.Name) and e.value.value == "self"


def _is_field(e: cst.BaseExpression, field_name: str) -> bool:
    """`x.field` or `x.field[...]`."""
    while isinstance(e, cst.Subscript):
        e = e.value
    return isinstance(e, cst.Attribute) and e.attr.value == field_name


def _changes_in_place(node: cst.CSTNode, field_name: str) -> bool:
    """A write into the tensor `x.field` holds, other than `.copy_` (checked for its value): an in-place
    method (`x.field.add_(1)`, `x.field[:n].clamp_(...)`), `out=x.field`, `x.field[i] = v` or `x.field[i] += v`."""
    if isinstance(node, cst.Call):
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value.endswith("_") and func.attr.value != "copy_" \
                and _is_field(func.value, field_name):
            return True
        return any(a.keyword is not None and a.keyword.value == "out" and _is_field(a.value, field_name) for a in node.args)
    target = node.target
    return isinstance(target, cst.Subscript) and _is_field(target, field_name)


# Names an annotation may hold besides the classes it is about.
TYPING_NAMES = {"Optional", "Union", "None", "typing", "t", "Any"}


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


def _packages(module: str) -> List[str]:
    """`a.b.c` -> [`a`, `a.b`]: the packages a module is an attribute of."""
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def _file_resolver(f, env: Optional[dict]) -> Resolve:
    """_Analysis._resolver for a file read by reach.py: `env`'s parameters, a function's locals."""
    def resolve(name: ast.Name):
        if env is not None and name.id in env:
            given, outer = env[name.id]  # (read where the call is: the caller's scope)
            return "param", [(given, _file_resolver(f, outer or None))]
        if f.enclosing(name, (ast.FunctionDef, ast.AsyncFunctionDef)) is None:
            return "", None  # the module's own name
        values = reach.local_value(f, name)
        return ("local", [(v, resolve) for v in values]) if values is not None else ("", None)
    return resolve


def _kept(e: ast.AST) -> bool:
    """Is `e` an object read off `self` (`self.prev_metadata`, `self.cache[i]`): one an earlier step left? (A local
    bound to one is not followed: sglang reads its graph metadata's own field, `metadata = self.graph[bs]`,
    and copies it back into that field; telling that from another step's object is open, issue 33.)"""
    while isinstance(e, (ast.Attribute, ast.Subscript)):
        e = e.value
    return isinstance(e, ast.Name) and e.id == "self"


def _unparse_name(func: ast.AST) -> str:
    """A callee's last name (`torch.zeros` -> zeros), or ""."""
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _ast_of(e: cst.BaseExpression) -> ast.AST:
    """An expression as the standard library's parser reads it (the clip's proof reads that tree)."""
    return ast.parse(_code(e).strip(), mode="eval").body


def _zero_rows(e: cst.BaseExpression) -> bool:
    """`x.new_zeros(n)`, `torch.zeros(n)`, `zeros_like(x)`: rows of length 0 (padding after the batch's rows)."""
    return isinstance(e, cst.Call) and (get_full_name_for_node(e.func) or "").rsplit(".", 1)[-1] in (
        "zeros", "new_zeros", "zeros_like")


def _class_ast(cls: cst.ClassDef) -> Optional[ast.ClassDef]:
    """The class as the standard library's parser reads it (reach judges class bodies on that tree)."""
    tree = bounded.python_facts(textwrap.dedent(cst.Module([]).code_for_node(cls)))
    node = tree.body[0] if tree is not None and tree.body else None
    return node if isinstance(node, ast.ClassDef) else None


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


def _mapped(a: cst.Arg) -> Optional[cst.DictElement]:
    """`**{"topk_length": value, ...}`'s element (the derived lengths under a `**` mapping: rewrite.merged_mapping)."""
    if a.star != "**" or not isinstance(a.value, cst.Dict):
        return None
    return next((e for e in a.value.elements if isinstance(e, cst.DictElement) and isinstance(e.key, cst.SimpleString)
                 and e.key.evaluated_value == PARAM), None)


_CONVERSION = re.compile(r"%(?:%|\([^()]*\)[#0 +-]*(?:\d+)?(?:\.\d+)?[diouxXeEfFgGcrsa])")


def _named_format(expr: cst.BaseExpression) -> bool:
    """A literal %-format whose every conversion names its key (`%(k)s`, `%%`): formatting it with a mapping
    looks up those keys only."""
    if not isinstance(expr, (cst.SimpleString, cst.ConcatenatedString)):
        return False
    text = expr.evaluated_value
    return isinstance(text, str) and "%" not in _CONVERSION.sub("", text)


def _assigns_self_attribute(stmt: cst.Assign) -> bool:
    """`self.attr = value`."""
    return len(stmt.targets) == 1 and isinstance(stmt.targets[0].target, cst.Attribute) \
        and _is_name(stmt.targets[0].target.value, "self")


def _is_dict(value: cst.BaseExpression) -> bool:
    """A dict display or comprehension: unpacking it with `**` runs no code (its values were made before)."""
    return isinstance(value, cst.DictComp) or isinstance(value, cst.Dict) and all(
        isinstance(e, cst.DictElement) for e in value.elements)


def _self_root_attr(e: cst.BaseExpression) -> Optional[str]:
    """`self.A`, `self.A[k]`, `self.A.b`: A; else None."""
    while isinstance(e, (cst.Subscript, cst.Attribute)) and not _is_attr_of_self(e):
        e = e.value
    return e.attr.value if _is_attr_of_self(e) else None


class _Analysis:
    def __init__(self, facts: ModuleFacts, tree: Tree, source: str, path: str, gate: Gate, options: RuleOptions):
        self.facts, self.tree, self.path, self.gate = facts, tree, path, gate
        self.lengths = options.lengths
        metadata = options.metadata
        # what the module binds torch to at import time (the derived lengths and the checked guards read it)
        self.torch = next((k for k, v in sorted(_top_level_imports(tree.module).items()) if v == "torch"), None)
        self.source = source  # (the module as checked: the project reads it instead of the file on disk)
        self.lines = source.splitlines()
        # Defaults count only where the module itself uses that field; user mappings always count.
        self.user_metadata = list(metadata)
        self.metadata = list(metadata) + [
            m for m in KNOWN_METADATA if re.search(rf"\b{m.rsplit('.', 1)[1]}\b", source)
        ]
        self.sites: List[Site] = []
        self.groups: List[Group] = []
        self.joined: Dict[int, Group] = {}  # id of a kernel call -> the helper group it joined after the first
        self.through_alias: Set[int] = set()  # ids of the kernel calls made through an alias (kernel_calls)
        self.sealed: Set[str] = set()  # attributes holding the kernel that only this module reads (held_callee)
        self._helper_groups: Dict[int, Group] = {}
        self._external: Dict[str, Optional[Tuple[Tree, cst.FunctionDef]]] = {}
        self._project = None
        self._indexes: Dict[str, object] = {}

    # -- helpers ----------------------------------------------------------
    def site(self, c: CallInfo, status: Status, reason: str, metadata: Optional[str] = None) -> Site:
        s = c.range.start
        return Site(self.path, s.line, s.column + 1, c.callee, status, reason, metadata)

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
        while isinstance(value, cst.Attribute):
            if value.attr.value in self._served_names():
                return (f"`{root}` is read from `{_code(value).strip()}` (line {self.tree.line(stmt)}), which a "
                        "property or method of this module serves: which batch's metadata it returns is not proven")
            value = value.value
        if isinstance(value, cst.Name):
            return None
        return (f"`{root}` is bound at line {self.tree.line(stmt)} to `{_code(stmt.value).strip()[:60]}`, not a plain "
                "read of the metadata the engine stored for this batch (a call's result, an item of a table); "
                "pass topk_length by hand")

    def _served_names(self) -> Set[str]:
        """Names a class of this module serves through code: properties, methods, and class-level bindings of
        a property (`forward_metadata = property(...)`)."""
        def build() -> Set[str]:
            out: Set[str] = set()
            for cls in self.find(cst.ClassDef):
                for d in cls.body.body:
                    if isinstance(d, cst.FunctionDef):
                        out.add(d.name.value)
                    for small in (d.body if isinstance(d, cst.SimpleStatementLine) else []):
                        value = getattr(small, "value", None)
                        if isinstance(small, (cst.Assign, cst.AnnAssign)) and isinstance(value, cst.Call) \
                                and "property" in (get_full_name_for_node(value.func) or ""):
                            targets = small.targets if isinstance(small, cst.Assign) else [small]
                            out |= {t.target.value for t in targets if isinstance(t.target, cst.Name)}
            return out
        return self.index("served-names", build)

    def unclipped_write(self, field_name: str) -> Optional[str]:
        """Field meaning: where this module writes `field_name` (a constructor's or replace()'s keyword,
        an attribute assignment, an in-place `.copy_`), the value must be the seqlens clipped to the
        top-k width (CLIPS); the first write not proven so, or None."""
        def build() -> Optional[str]:
            for arg in self.find(cst.Arg, lambda a: a.keyword is not None and a.keyword.value == field_name):
                if not self._clipped(arg.value, set()):
                    return self._unclipped(field_name, arg, arg.value)
            for target in self.attribute_assigns(field_name):
                stmt = next((a for a in self.tree.ancestors(target) if isinstance(a, cst.Assign)), None)
                if stmt is not None and not self._clipped(stmt.value, set()):
                    return self._unclipped(field_name, target, stmt.value)
            for call in self.find(cst.Call, lambda c: isinstance(c.func, cst.Attribute) and c.func.attr.value == "copy_"
                                  and _is_field(c.func.value, field_name) and bool(c.args)):
                if not self._clipped(call.args[0].value, set()):
                    return self._unclipped(field_name, call, call.args[0].value)
            for node in self.find((cst.Call, cst.AssignTarget, cst.AugAssign), lambda n: _changes_in_place(n, field_name)):
                return (f"this module changes `{field_name}` in place at line {self.tree.line(node)} "
                        f"(`{_code(node).strip()[:80]}`): the lengths it leaves are not provably the seqlens clipped to "
                        f"the top-k width ({CLIP_HOW}); pass topk_length by hand")
            return None
        return self.index(f"unclipped:{field_name}", build)

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
            stmt = self.tree.assignment_statement(a)
            value = getattr(stmt, "value", None)
            callee = (dotted(value.func) or "") if isinstance(value, cst.Call) else ""
            if not callee or not callee.rsplit(".", 1)[-1][:1].isupper():
                return False
        return True

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
                for target in self.find(cst.AssignTarget, lambda t: isinstance(t.target, (cst.Attribute, cst.Subscript)),
                                        fdef):
                    stmt = next((a for a in self.tree.ancestors(target) if isinstance(a, cst.Assign)), None)
                    new = stmt is not None and not self._stored(stmt.value, set())
                    if isinstance(target.target, cst.Subscript):  # `self.graph_metadata[bs] = make(...)`
                        if new and _self_root_attr(target.target) in sources:
                            return self._replaced(fdef, target, f"`{_code(target.target).strip()}` a new object")
                        continue
                    attr = target.target.attr.value
                    if attr == field_name:
                        return self._replaced(fdef, target, f"`{field_name}` a new tensor")
                    # `self.forward_metadata = ...` (where the kernel's callers read the metadata from), or what it
                    # is given back from (`self._pending = make(...)`)
                    if _is_attr_of_self(target.target) and (attr in held or attr in sources) and new:
                        return self._replaced(fdef, target, f"`{_code(target.target).strip()}` a new object")
            return None
        return self.index(f"replay:{field_name}", build)

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
            seen: Dict[int, cst.FunctionDef] = {}
            while todo:
                fdef = todo.pop()
                if id(fdef) in seen:
                    continue
                seen[id(fdef)] = fdef
                for call in self.find(cst.Call, lambda c: isinstance(c.func, cst.Attribute)
                                      and isinstance(c.func.value, cst.Name) and c.func.value.value == "self", fdef):
                    name = call.func.attr.value
                    if not reach.graph_builder(name):
                        todo += [f.node for f in self.functions_named(name) if f.class_name]
            return list(seen.values())
        return self.index("graph_update_defs", build)

    def held_attributes(self) -> Set[str]:
        """The attributes of self the kernel's callers read the metadata from (`metadata = self.forward_metadata`)."""
        def build() -> Set[str]:
            roots = {expr.split(".")[0] for expr in self.metadata}
            return {a.value.attr.value for a in self.find(cst.Assign, lambda a: len(a.targets) == 1 and isinstance(
                a.targets[0].target, cst.Name) and a.targets[0].target.value in roots and _is_attr_of_self(a.value))}
        return self.index("held", build)

    def _replaced(self, fdef: cst.FunctionDef, at: cst.CSTNode, what: str) -> str:
        return (f"`{fdef.name.value}` gives {what} at line {self.tree.line(at)} on CUDA-graph replay, while a captured "
                "graph keeps reading the tensors it was captured with; update them in place (copy_) first")

    def _stored(self, e: cst.BaseExpression, seen: set) -> bool:
        """An object read from where the captured metadata is kept (`self.graph_metadata[bs]`), not made."""
        if isinstance(e, (cst.Subscript, cst.Attribute)):
            return True
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

    def _unclipped(self, field_name: str, at: cst.CSTNode, value: cst.BaseExpression) -> str:
        return (f"this module sets `{field_name}` at line {self.tree.line(at)} from `{_code(value).strip()[:80]}`, "
                f"not provably the seqlens clipped to the top-k width ({CLIP_HOW}); clip it, or pass topk_length by hand")

    def _clipped(self, e: cst.BaseExpression, seen: set, env: Optional[tuple] = None) -> bool:
        """Is `e` the seqlens clipped to the top-k width, on every binding it can come from? `env`: while
        reading the returns of a function of this module, (its parameters -> the call's arguments, the
        caller's env)."""
        if isinstance(e, cst.Call):

            func = e.func
            name = (get_full_name_for_node(func) or "").rsplit(".", 1)[-1]
            method = isinstance(func, cst.Attribute)
            positional = [a.value for a in e.args if not a.keyword and not a.star]
            local = local_defs(self.tree, func)
            depth, outer = 0, env
            while outer is not None:
                depth, outer = depth + 1, outer[1]
            if len(local) == 1 and depth < 4 and not any(a.star for a in e.args):
                # a function of this module: each of its returns, the call's arguments for its parameters
                params = [p.name.value for p in (*local[0].params.posonly_params, *local[0].params.params)]
                if method and params[:1] in (["self"], ["cls"]):
                    params = params[1:]
                args = dict.fromkeys(params)  # (a parameter not handed: its default, not known)
                args.update(zip(params, positional))
                args.update({a.keyword.value: a.value for a in e.args if a.keyword})
                returns = [r.value for r in _own_returns(local[0])]
                return bool(returns) and all(r is not None and self._clipped(r, seen, (args, env)) for r in returns)
            if local:
                return False
            if name in CLIPS or name in ("clamp", "clamp_", "clip", "clip_", "minimum", "min"):
                return _clips_to_width(_ast_of(e), self._resolver(env, e))
            if name in CLIP_KEEPING:  # pad_dsa_cache_seqlens(forward_batch, seqlens): pads clipped seqlens
                return len(positional) >= 2 and all(self._clipped(v, seen, env) for v in positional[1:])
            if name in ("cat", "concat") and positional and isinstance(positional[0], (cst.List, cst.Tuple)):
                parts = [el.value for el in positional[0].elements]  # the rows, then rows of length 0 (padding)
                return bool(parts) and self._clipped(parts[0], seen, env) and all(map(_zero_rows, parts[1:]))
            if method and name in _CONVERSIONS:
                return self._clipped(func.value, seen, env)
            return False
        if isinstance(e, cst.Subscript):  # the first rows, in order
            return _prefix_slice(_ast_of(e).slice) and self._clipped(e.value, seen, env)
        if isinstance(e, cst.Attribute):  # another read of the clipped field, off an object of this step
            return e.attr.value in CLIPPED_FIELDS and not _kept(_ast_of(e.value))
        if isinstance(e, cst.IfExp):
            return self._clipped(e.body, seen, env) and self._clipped(e.orelse, seen, env)
        if isinstance(e, cst.Name):
            if e.value == "None":
                return True  # no lengths: the kernel scans the full width
            assignments = self.tree.binding(e, e.value).assignments
            if not assignments:
                return False
            for a in assignments:
                if isinstance(getattr(a, "node", None), cst.Param):
                    if env is None or env[0].get(e.value) is None:
                        return False  # the caller's value: not known here
                    if not self._clipped(env[0][e.value], seen, env[1]):
                        return False
                    continue
                if id(a) in seen:
                    continue  # `x = pad(fb, x)`: the other bindings of x decide
                seen.add(id(a))
                stmt = self.tree.assignment_statement(a)
                if stmt is None or not self._clipped(stmt.value, seen, env):
                    return False
            return True
        return False

    def _resolver(self, env: Optional[tuple], at: cst.CSTNode) -> Resolve:
        """Names as _clips_to_width reads them where `at` is: while reading a function's returns (`env`), its
        parameters are the call's arguments; a local of a function is each value it is assigned."""
        def resolve(name: ast.Name):
            if env is not None and name.id in env[0]:
                given = env[0][name.id]  # (read where the call is: the caller's scope)
                return "param", [(_ast_of(given), self._resolver(env[1], given)) if given is not None else (None, None)]
            b = self.tree.binding(at, name.id)
            if not b.assignments or not all(isinstance(a.scope, FunctionScope) for a in b.assignments):
                return "", None
            if any(isinstance(getattr(a, "node", None), cst.Param) for a in b.assignments):
                return "", None  # a parameter whose callers are not read here
            statements = [self.tree.assignment_statement(a) for a in b.assignments]
            return "local", [(_ast_of(x.value), self._resolver(env, x.value)) if isinstance(x, cst.Assign)
                             and len(x.targets) == 1 else (None, None) for x in statements]
        return resolve

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
            declaring = [c for c in self.find(cst.ClassDef) if c.name.value == name]
            if len(declaring) != 1 or not any(
                    not re.search(r"\bNone\b|Optional", _code(stmt.annotation.annotation))
                    for stmt in self.find(cst.AnnAssign, lambda a: _is_name(a.target, field_name), declaring[0].body)):
                return None
        return not optional

    def project(self):
        """The project's other files (reach.py), read once per module checked."""
        if self._project is None:

            self._project = reach.Project(self.path, project_scope(self.path))
        return self._project

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
                    continue
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
        for w in proj.attribute_writes({fn.name}, seeds, set()) if fn is not None else ():
            return (f"{w.what} at {w.where()}: callers may reach another function than {fn.qualname}; "
                    "add topk_length by hand once every replacement takes it")
        if seeds:
            held = self.held_attributes()
            related = proj.subclasses(seeds) + proj.ancestors(seeds)
            for field_name in sorted({m.rsplit(".", 1)[-1] for m in self.metadata}):
                w = reach.replay_writes(proj, related, field_name, held)
                if w is not None:
                    return (f"{w.what} at {w.where()} on CUDA-graph replay, while a captured graph keeps reading "
                            "the tensors it was captured with; update them in place (copy_) first")
        for field_name in sorted({m.rsplit(".", 1)[-1] for m in self.metadata}):
            for f, node, value in reach.field_writes(proj, field_name, proj.checked_file(self.source)):
                receiver = reach.new_tensor_receiver(node, field_name)  # `x.field = v`, not `field=x.y`
                if receiver is not None and not reach.constructed(f, receiver) or isinstance(value, ast.AugAssign):
                    obj = reach._unparse(receiver if receiver is not None else node)
                    return (f"{proj.rel(f.path)}:{getattr(node, 'lineno', 0)} gives `{obj}.{field_name}` a new tensor, "
                            f"and `{obj}` may be metadata a CUDA graph was captured with, which keeps reading the tensor "
                            f"it held; update it in place (`.copy_(...)`), or pass topk_length by hand")
                if value is None:
                    return (f"{proj.rel(f.path)}:{getattr(node, 'lineno', 0)} changes `{field_name}` in place "
                            f"(`{reach._unparse(node)[:80]}`): the lengths it leaves are not provably the seqlens "
                            f"clipped to the top-k width ({CLIP_HOW}); pass topk_length by hand")
                if not _clipped_elsewhere(f, value, 0):
                    return (f"{proj.rel(f.path)}:{getattr(node, 'lineno', 0)} sets `{field_name}` from "
                            f"`{reach._unparse(value)[:80]}`, not provably the seqlens clipped to the top-k width "
                            f"({CLIP_HOW}); clip it, or pass topk_length by hand")
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
            why = self._rows_decorator(m)
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

    def _wrapping_decorator(self, fn: Function) -> Optional[str]:
        """The first decorator of fn that may replace it with a wrapper of its own: any but one that hands every
        argument on (`@torch.no_grad()`) or keeps the function (`staticmethod`)."""
        for d in fn.node.decorators:
            name = get_full_name_for_node(d.decorator) or _code(d.decorator).strip()
            if isinstance(d.decorator, cst.Call) and not d.decorator.args \
                    and self.expand(dotted(d.decorator.func)) in ARGUMENT_PASSING_DECORATORS:
                continue
            if name not in SIGNATURE_KEEPING_DECORATORS:
                return name
        return None

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
        for w in proj.reflection({kernel, *seeds, *helper}, seeds, objects, kernel, chain):  # (and the importers)
            return (f"{w.what} at {w.where()} may rebind the kernel, the helper or its class at run time, which "
                    "the analysis cannot follow; pass topk_length by hand if it cannot")
        for w in proj.unreadable:
            return (f"{w.path} {w.what}, so what it does to the kernel or the helper is not known; "
                    "pass topk_length by hand")
        return None

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
        return None  # what it takes, the gate decided (its signature, or a declaration of its module)

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
            if a.keyword and a.keyword.value == PARAM or _mapped(a) is not None:
                a = _mapped(a) or a
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
        mapping = [a for a in args if a.star == "**"]
        if len(mapping) > 1:
            return self.site(c, Status.MANUAL, "**kwargs may already carry topk_length; pass it explicitly")
        if any(a.star == "*" for a in args):
            return self.site(c, Status.MANUAL, "*args may already carry topk_length; pass it explicitly")
        if op_level:
            return self.site(c, Status.MANUAL, "op-level call: its schema is fixed by the kernel build; call the Python wrapper with topk_length")
        if cap.accepts is False:
            return self.site(c, Status.MANUAL, f"kernel too old: {cap.detail}")
        why = self.callee_identity(c) or self.reflection()
        if why:  # the real blocker first: a name that may not be the kernel, whatever the kernel takes
            return self.site(c, Status.MANUAL, why)
        if cap.accepts is None:
            return self.site(c, Status.MANUAL, f"kernel capability unknown (pass --kernel): {cap.detail}")
        why = _misplaced(positional, cap)
        if why:
            return self.site(c, Status.MANUAL, why)
        if mapping:  # the derived lengths go under the mapping's own (rewrite.merged_mapping): it still wins
            site = self.site(c, Status.MANUAL, "**kwargs may already carry topk_length, so the reference fix cannot add it")
            why = self._impure_mapping(c, mapping[0])
            return replace(site, reason=f"{site.reason}; {why}") if why else self.derived_or(c, site)
        if self.lengths == "derived-everywhere":
            return self.derived_or(c, self.site(c, Status.MANUAL, "the derived lengths asked for everywhere"))
        site = self.contract(c)
        return self.derived_or(c, site) if site.status is Status.MANUAL else site

    def _impure_mapping(self, c: CallInfo, mapping: cst.Arg) -> Optional[str]:
        """Why the derived lengths cannot go under c's `**` mapping: they are evaluated where the mapping is, so it
        must be the call's last argument (no later one may change the indices after them) and its function's own
        `**` parameter, never rebound (a fresh dict: unpacking it runs no code, round K)."""
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
        for a in self.tree.binding(mapping.value, name).assignments:
            stmt = self.tree.assignment_statement(a)
            if getattr(a, "node", None) is not star and not (own is False and isinstance(stmt, cst.Assign)
                                                             and len(stmt.targets) == 1 and _is_dict(stmt.value)):
                return f"nor can the derived lengths go under it: `{name}` is bound at line {self.tree.line(stmt or a.node)} to what may not be a dict"
        return None

    # -- the derived lengths (--lengths derived) ----------------------------------------
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
            return arg.value if mine and not self.tree.inside(c.node, _iterable_of(scope)) else None
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
        return arg.value

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
        for w in self.index("frame-reads", lambda: self.project().frame_enumerations()):
            return f"{w.what} at {w.where()}: it would see the name the rewrite binds the indices to"
        return None

    def _read_by_literal(self, node: cst.CSTNode) -> bool:
        """Is the namespace `node` returns read only by keys the source spells: `[...]` or `.get(...)` with a
        literal, the mapping of a %-format whose conversions are all named, `str.format_map`/`format(**...)` of a
        literal (both look keys up), or the one argument of a logging call's named %-format? A name the rewrite
        adds is never looked up by them."""
        up = self.tree.parent.get(node)
        if isinstance(up, cst.Subscript) and up.value is node:
            return len(up.slice) == 1 and isinstance(getattr(up.slice[0].slice, "value", None), cst.SimpleString)
        if isinstance(up, cst.BinaryOperation) and up.right is node and isinstance(up.operator, cst.Modulo):
            return _named_format(up.left)
        call = self.tree.parent.get(up)
        if isinstance(up, cst.Attribute) and up.attr.value == "get" and isinstance(call, cst.Call):
            return call.func is up and bool(call.args) and isinstance(call.args[0].value, cst.SimpleString)
        if not (isinstance(up, cst.Arg) and isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute)):
            return False
        method, receiver = call.func.attr.value, call.func.value
        if isinstance(receiver, (cst.SimpleString, cst.ConcatenatedString)) and len(call.args) == 1:
            return method == "format_map" and not up.star or method == "format" and up.star == "**"
        return self._logged_by_key(call, up)

    def _logged_by_key(self, call: cst.Call, arg: cst.Arg) -> bool:
        """`log.debug("... %(k)s ...", locals())`: log bound only to `logging.getLogger(...)` at module level,
        the mapping the one argument after a named %-format (a LogRecord formats `msg % mapping`)."""
        level = call.func.attr.value
        if any(a.keyword and a.keyword.value not in ("exc_info", "stack_info", "stacklevel") or a.star
               for a in call.args):
            return False
        args = [a for a in call.args if not a.keyword][1 if level == "log" else 0:]
        if level not in ("debug", "info", "warning", "error", "critical", "exception", "log") or len(args) != 2 \
                or args[1] is not arg or not _named_format(args[0].value):
            return False
        logger = call.func.value
        if not isinstance(logger, cst.Name):
            return False
        bindings = self.tree.binding(logger, logger.value).assignments
        if bindings and all(isinstance(x, ImportAssignment) for x in bindings):
            return self.expand(logger.value) == "logging"  # the module's own functions: its root logger
        return bool(bindings) and all(isinstance(x.scope, GlobalScope) and self._gets_logger(x) for x in bindings)

    def _gets_logger(self, binding) -> bool:
        stmt = self.tree.assignment_statement(binding)
        return isinstance(stmt, cst.Assign) and isinstance(stmt.value, cst.Call) and len(stmt.targets) == 1 \
            and self.expand(dotted(stmt.value.func) or "") == "logging.getLogger"

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

    def reflection(self) -> Optional[str]:
        """Reflection in the module: a name computed at run time can rebind or call the kernel, the helper or
        its class, which no reading of the source can follow. setattr/delattr with a name that is not a literal,
        a call of what getattr with a computed name returns, exec/eval/compile, writes through
        globals()/vars()/locals(), `__dict__` or `sys.modules`: the first one, or None. (The real engines' backends use
        none of them; `getattr(x, "literal", default)` is an attribute read.)"""
        def build() -> Optional[str]:
            for call in self.find(cst.Call):
                name = get_full_name_for_node(call.func) or ""
                literal = len(call.args) > 1 and isinstance(call.args[1].value, cst.SimpleString)
                if name in ("setattr", "delattr") and not literal:
                    return self._reflective(call, f"`{name}` with a computed name")
                up = self.tree.parent.get(call)
                if name == "getattr" and not literal and isinstance(up, cst.Call) and up.func is call:
                    return self._reflective(call, "a call of `getattr` with a computed name")  # getattr(m, n)(...)
                if name in ("exec", "eval", "compile"):
                    return self._reflective(call, f"`{name}()`")
                if name in ("globals", "vars", "locals") and self._written_through(call):
                    return self._reflective(call, f"a write through `{name}()`")
            for attr in self.find(cst.Attribute, lambda a: a.attr.value in ("__dict__", "__globals__")
                                  or (a.attr.value == "modules" and isinstance(a.value, cst.Name)
                                      and a.value.value == "sys")):
                if self._written_through(attr):
                    return self._reflective(attr, f"a write through `{_code(attr).strip()}`")
            return None
        return self.index("reflection", build)

    def _written_through(self, node: cst.CSTNode) -> bool:
        """`node[k] = v`, `del node[k]`, `node.update(...)` / `.setdefault` / `.pop` / `.__setitem__`."""
        up = self.tree.parent.get(node)
        if isinstance(up, cst.Subscript) and up.value is node:
            above = self.tree.parent.get(up)
            return isinstance(above, (cst.AssignTarget, cst.AugAssign, cst.Del)) or isinstance(
                self.tree.parent.get(above), cst.Del)
        if isinstance(up, cst.Attribute) and up.value is node and up.attr.value in (
                "update", "setdefault", "pop", "popitem", "clear", "__setitem__", "__delitem__"):
            return isinstance(self.tree.parent.get(up), cst.Call)
        return False

    def _reflective(self, node: cst.CSTNode, what: str) -> str:
        return (f"{what} at line {self.tree.line(node)} may rebind or call the kernel, the helper or its class at "
                "run time, which the analysis cannot follow; pass topk_length by hand if it cannot")

    def kernel_calls(self) -> List[CallInfo]:
        """The module's kernel calls: by the kernel's name, and through a name every binding of which that reaches
        the call is an alias of one kernel (kernel_alias), with that kernel as the callee."""
        aliases = {s.targets[0].target.value for s in self.find(cst.Assign) if kernel_alias(s, self.facts.imports)}
        held = {s.targets[0].target.attr.value for s in self.find(cst.Assign, _assigns_self_attribute)
                if alias_value(s.value, self.facts.imports)}
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
            alias = alias_value(value, self.facts.imports)
            if alias is not None:
                found.add(self.expand(dotted(alias[0])))
            return alias is not None

        attr = c.node.func.attr.value
        if attributes.attribute_values(self, c, attr, accept, class_level=False) or len(found) != 1:
            return None
        if attributes.sealed(self, attr):
            self.sealed.add(attr)
        return found.pop()

    def match_captured(self, name: str) -> Optional[cst.CSTNode]:
        """A `match` pattern of the module that binds `name` (`case x:`, `case {...: x}`, `case [*x]`, `as x`): a
        binding the scope analysis does not list (round K)."""
        for node in self.find((cst.MatchAs, cst.MatchStar, cst.MatchMapping)):
            bound = node.rest if isinstance(node, cst.MatchMapping) else node.name
            if isinstance(bound, cst.Name) and bound.value == name:
                return node
        return None

    def alias_callee(self, c: CallInfo) -> Optional[str]:
        """The one kernel every binding of c's name that reaches it aliases, else None."""
        if self.match_captured(c.node.func.value) is not None:
            return None
        found = set()
        for a in self.tree.binding(c.node.func, c.node.func.value).assignments or (None,):
            alias = kernel_alias(self.tree.assignment_statement(a), self.facts.imports) if a is not None else None
            if alias is None:
                return None
            found.add(self.expand(dotted(alias[0])))
        return found.pop() if len(found) == 1 else None

    def alias_identity(self, c: CallInfo, target: cst.BaseExpression, partial: Optional[cst.Call], line: int) -> Optional[str]:
        """An alias (`attend = K`, `attend = functools.partial(K, d_v=...)`) is the kernel when `functools` is the
        module's import and every binding of K's root that reaches the alias is an import the gate accepts."""
        checked = [(partial.func, "functools.partial")] if partial is not None else []
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
        if "." in c.callee and not is_op_level(c.callee):

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
                why = self._vendored_wrapper(c, iface) or _misplaced_params(
                    _positional(c.node), iface.params, f"{rel}:{iface.line}")
                if why:
                    return why
        if isinstance(b.assignments[0].scope, GlobalScope):
            return self._star_rebinds(c, name, b)
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
        return self.forwards_unchanged(c, d, f"line {line}", self.tree.line(node) - d.lineno)

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
            why = self.forwards_unchanged(c, d, where if d.lineno == iface.line else f"{where.rsplit(':', 1)[0]}:{d.lineno}")
            if why:
                return why
        for d in defs:  # the kernel it hands on to is read as the call's own kernel: replaced, it is what runs
            inner = _forwarded_callee(tree, d)
            if inner and inner != c.callee:
                why = self._kernel_rebound(replace(c, callee=inner), set())
                if why:
                    return f"the kernel {c.callee} hands on to: {why}"
        return None

    def expand(self, name: Optional[str]) -> str:
        """A dotted name with its first part expanded through the imports (as callees are)."""
        return expand(self.facts.imports, name) if name else ""

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
            return (f"`{first}` is also set at line {self.tree.line(other)} (`{_code(other).strip()[:60]}`), "
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
        tuple or chained target, an annotated or augmented one, another receiver (`b.fm = ...`), a literal
        `setattr` (also `object.__setattr__`), or a deletion."""
        plain = {id(n.targets[0].target) for n, _ in sources}
        for node in self.find(cst.Attribute, lambda a: a.attr.value == first):
            inner, up = node, self.tree.parent.get(node)
            while isinstance(up, (cst.Element, cst.StarredElement, cst.Tuple, cst.List)):
                inner, up = up, self.tree.parent.get(up)  # (a tuple's or a list's element: unpacked into)
            target = isinstance(up, (cst.AssignTarget, cst.AnnAssign, cst.AugAssign, cst.Del, cst.For)) \
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
        for node in self.find(cst.Assign, lambda a: len(a.targets) == 1
                               and _is_attr(a.targets[0].target, receiver, first)):
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

    def contract(self, c: CallInfo) -> Site:
        q_expr = _q_arg(c.node)
        q = dotted(q_expr) if q_expr is not None else None
        if q is None and c.function is not None and _is_test(c.function) and not self.callers(c.function) \
                and not self.metadata_at(c.node)[0]:
            return self.through_helper(c, q_expr, None)  # a pytest test without metadata: that is the blocker
        if q is None:
            return self.site(c, Status.MANUAL, "q is not a plain name; its rows cannot be checked without re-evaluating it")
        here, form, why_not = self.metadata_at(c.node) if c.function is not None else (None, "plain", None)
        if here:
            hazard, _ = row_hazard(self.tree, q_expr, self.tree.binding(c.node, here.split(".")[0]).assignments[0].scope, self.external_def, self.outside_project)
            if hazard:
                return self.site(c, Status.MANUAL, _rows_reason(hazard))
            hazard = self.indices_hazard(c)[0]
            if hazard:
                return self.site(c, Status.MANUAL, _indices_reason(hazard))
            why = self.whole_project(c, None)
            if why:
                return self.site(c, Status.MANUAL, why)
            g = Group("direct", [c], [], metadata=here, form=form, inline=c.statement is None)
            self.groups.append(g)
            return self.site(c, Status.FIXABLE, _direct_reason(g), here)
        return self.through_helper(c, q_expr, why_not)

    # -- the helper route -------------------------------------------------------------
    def subclasses(self, cls: str) -> Set[str]:
        """cls and the classes of this module that derive from it (by name), for each class once."""
        return self.index("subclasses:" + cls, lambda: self._subclasses(cls))

    def _subclasses(self, cls: str) -> Set[str]:
        """The closure from cls through the classes naming one of `out` as a base: each class looked at once
        through an index of the module's classes by base name (a scan of every class per class, as it was,
        made N classes cost N x N)."""
        derived: Dict[str, Set[str]] = self.index("derived", self._derived)
        out, todo = {cls}, [cls]
        while todo:
            for n in derived.get(todo.pop(), ()):
                if n not in out:
                    out.add(n)
                    todo.append(n)
        return out

    def _derived(self) -> Dict[str, Set[str]]:
        """base name -> the names of the classes of this module that name it as a base."""
        derived: Dict[str, Set[str]] = {}
        for name, bs in self.index("bases", self._bases).items():
            for b in bs:
                derived.setdefault(b, set()).add(name)
        return derived

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
                if other.name != fn.name or other is fn or not self._in_class_body(other.node) \
                        or any(p.name.value == PARAM for p in (*op.posonly_params, *op.params, *op.kwonly_params)):
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

    def through_helper(self, c: CallInfo, q_expr: cst.BaseExpression, why_not: Optional[str]) -> Site:
        fn = c.function
        wanted = " or ".join(self.metadata) or "clipped-seqlen metadata (metadata.dsa_cache_seqlens_int32)"
        if fn is None:
            return self.site(c, Status.MANUAL, f"no {wanted} in scope at module level")
        if why_not:
            return self.site(c, Status.MANUAL, f"{why_not}; the {wanted} is not provably there at the call")
        existing = self.helper_groups_of(fn)
        if existing is not None:  # a second kernel call in the same helper joins its group
            hazard, rows_from = row_hazard(self.tree, q_expr, self.tree.scope_of.get(fn.node.body), self.external_def,
                                           self.outside_project, params_only=True)
            if hazard:
                return self.site(c, Status.MANUAL, _rows_reason(hazard))
            hazard, indices_from = self.indices_hazard(c)
            if hazard:
                return self.site(c, Status.MANUAL, _indices_reason(hazard))
            untraced = sorted((rows_from - existing.row_sources) | (indices_from - existing.index_sources))
            if untraced:  # the callers' arguments were traced for the first call's parameters only
                return self.site(c, Status.MANUAL, f"this call's q or indices come from `{untraced[0]}`, a parameter of "
                                 f"{fn.qualname} the first kernel call's do not come from, so what its callers pass "
                                 "for it is not checked; pass topk_length by hand")
            existing.calls.append(c)
            self.joined[id(c.node)] = existing
            return self.site(c, Status.FIXABLE, existing.reason, existing.callers[0][1] if existing.callers else None)
        params = fn.node.params
        all_params = [*params.posonly_params, *params.params, *params.kwonly_params]
        mine = next((p for p in all_params if p.name.value == PARAM), None)
        # the real blocker first (issue 26): no metadata, then rows or indices that cannot align, are what a
        # maintainer must solve; a decorator, an override or **kwargs only decide how the value is passed
        identity = f"{fn.qualname} takes **kwargs; add topk_length to it by hand" \
            if mine is None and isinstance(params.star_kwarg, cst.Param) else self.helper_identity(fn)
        hazard, sources = row_hazard(self.tree, q_expr, self.tree.scope_of.get(fn.node.body), self.external_def,
                                     self.outside_project, params_only=True)
        rows_why = _rows_reason(hazard) if hazard else None
        hazard, index_sources = self.indices_hazard(c)
        indices_why = _indices_reason(hazard) if hazard else None
        if mine is not None:
            why = self.existing_param(fn, mine, all_params)
            if why:
                return self.site(c, Status.MANUAL, why)
        positions = {p.name.value: i for i, p in enumerate([*params.posonly_params, *params.params])}
        shift = 1 if fn.class_name and not any(
            get_full_name_for_node(d.decorator) == "staticmethod" for d in fn.node.decorators) else 0
        passing, lacking, found, already, blocker = [], [], None, 0, None
        for k in self.callers(fn):
            if any(a.keyword and a.keyword.value == PARAM for a in k.node.args):
                already += 1
                continue
            expr, form, why_not_here = self.metadata_at(k.node)
            blocker = blocker or why_not_here
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
                hazard = row_hazard(self.tree, arg, batch, self.external_def, self.outside_project)[0] if arg is not None else None
                if hazard:
                    return self.site(c, Status.MANUAL, f"at the caller on line {k.range.start.line}: " + _rows_reason(hazard))
            for p in index_sources:
                arg = _argument_for(k.node, p, positions.get(p), shift)
                hazard = index_hazard(self.tree, arg, self.outside_project)[0] if arg is not None else None
                if hazard:
                    return self.site(c, Status.MANUAL, f"at the caller on line {k.range.start.line}: " + _indices_reason(hazard))
            passing.append((k, expr, form))
            found = found or expr
        if not passing and not (mine is not None and already):
            if blocker:  # the real blocker first: the metadata is there, but not provably what topk_length needs
                return self.site(c, Status.MANUAL, f"at the {_at(lacking)}: {blocker}")
            if identity and not lacking and not _is_test(fn) and fn.class_name is None and any(
                    isinstance(k.node.func, cst.Name) and k.function is not fn for k in self.calls_named(fn.name)):
                return self.site(c, Status.MANUAL, identity)  # calls of its name that are not callers: its identity is why
            why = f"no {wanted} in scope of {fn.qualname}"
            why += f", nor in its {_at(lacking)}" if lacking else ", and it has no callers in this module"
            if _is_test(fn):  # pytest fills a test's parameters with fixtures: never tell it to gain one
                why += ("; it is a pytest test, so pass topk_length to the kernel call itself: the count of valid "
                        "(front-packed) indices of each row of the indices it builds")
            return self.site(c, Status.MANUAL, why)
        if rows_why or indices_why:
            return self.site(c, Status.MANUAL, rows_why or indices_why)
        if identity:
            return self.site(c, Status.MANUAL, identity + _by_hand(found, passing))
        why = self.whole_project(c, fn)
        if why:
            return self.site(c, Status.MANUAL, why)
        if mine is not None and already and not passing:  # half-migrated: callers pass it, the kernel call drops it
            g = Group("helper", [c], [], helper=fn, inline=c.statement is None, row_sources=sources,
                      index_sources=index_sources)
            g.reason = f"{fn.qualname} takes topk_length from its callers but does not forward it"
            self._remember(fn, g)
            return self.site(c, Status.FIXABLE, g.reason)
        g = Group("helper", [c], [], helper=fn, callers=passing, add_param=mine is None, inline=c.statement is None,
                  row_sources=sources, index_sources=index_sources)
        g.reason = f"{fn.qualname} gains topk_length; {_at([k for k, _, _ in passing])} pass it"
        if lacking:
            g.reason += f"; {_at(lacking)} have no metadata and keep the full width"
        self._remember(fn, g)
        return self.site(c, Status.FIXABLE, g.reason, found)

    def find(self, kinds, matcher=None, within: Optional[cst.CSTNode] = None) -> List[cst.CSTNode]:
        return self.tree.find(kinds, matcher, within)

    # -- indexes of the module, built once so each site looks up instead of scanning ----------
    def vendored(self, callee: str):
        """kernels.vendored_interface of a dotted callee (the project's own definition of it, or the interface
        installed beside it), read once per analysis: callee_identity and project_wrapper both ask."""

        return self.index(f"vendored:{callee}", lambda: kernels.vendored_interface(self.path, callee, PARAM))

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
        return [t for t in self.targets_named(attr) if isinstance(t, cst.AssignTarget)]

    def targets_named(self, attr: str) -> List[cst.CSTNode]:
        """`x.attr = ...`, `x.attr: T = ...`, `x.attr += ...`, whatever x, in source order (one scan of the module)."""
        return self.index("targets_named", lambda: self._grouped(
            self.find((cst.AssignTarget, cst.AnnAssign, cst.AugAssign), _targets_attribute),
            lambda t: t.target.attr.value)).get(attr, [])

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

    def star_imports(self) -> List[cst.ImportFrom]:
        """`from m import *` statements of the module, at any depth of its blocks (`if`, `try`...), in source
        order (one scan, not one per kernel call: a module of N functions each calling the kernel would cost
        N x N)."""
        return self.index("star_imports", lambda: self.find(
            cst.ImportFrom, lambda small: isinstance(small.names, cst.ImportStar)))

    def setattr_calls(self) -> List[cst.Call]:
        return self.index("setattr", lambda: self.find(cst.Call, lambda c: _is_name(c.func, "setattr")))

    def outside_project(self, qualname: str) -> bool:
        """Is `qualname` defined outside this project (a library), not by one of its modules?
        Once per name and file (the row trace asks it of every call handed q, for every kernel call)."""
        def build() -> bool:

            module = qualname
            while module:
                if kernels.find_module(self.path, module) is not None:
                    return False
                module = module.rpartition(".")[0]
            return not qualname.startswith(".")
        return self.index(f"outside:{qualname}", build)

    def external_def(self, qualname: str) -> Optional[Tuple[Tree, cst.FunctionDef]]:
        """A top-level def of another module of this project, parsed alone (for the row trace)."""
        if qualname in self._external:
            return self._external[qualname]
        self._external[qualname] = None
        module, _, name = qualname.rpartition(".")
        if not module or is_kernel(qualname):
            return None

        found = kernels.find_module(self.path, module)
        text = project.read_project_file(found) if found else None
        tree = bounded.python_facts(text)
        try:
            node = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name), None) \
                if tree is not None else None
            if node is not None:
                first = min([node.lineno] + [d.lineno for d in node.decorator_list])
                split = spelling.normal_form(text).text.split("\n")  # its names as Python reads them
                # the module's own imports come along: what the def calls is known by where it comes from
                imports = [ast.unparse(n) for top in tree.body
                           for n in ([top] if isinstance(top, (ast.Import, ast.ImportFrom)) else
                                     ast.walk(top) if isinstance(top, (ast.Try, ast.If)) else ())
                           if isinstance(n, (ast.Import, ast.ImportFrom)) and not getattr(n, "level", 0)]
                lines = "".join(f"{i}\n" for i in imports) + "\n".join(split[first - 1:node.end_lineno]) + "\n"
                guard.parse_checked(lines, found)  # LibCST sees only what its nesting bound admits
                snippet = cst.parse_module(lines)
                self._external[qualname] = (Tree(snippet, positions=False), snippet.body[-1])
        except (SyntaxError, ValueError, cst.ParserSyntaxError, RecursionError, InputError):
            pass
        return self._external[qualname]

    def indices_hazard(self, c: CallInfo) -> Tuple[Optional[str], Set[str]]:
        arg = _indices_arg(c.node)
        return index_hazard(self.tree, arg, self.outside_project) if arg is not None else (None, set())

    def helper_groups_of(self, fn: Function) -> Optional[Group]:
        return self._helper_groups.get(id(fn.node))

    def _remember(self, fn: Function, g: Group) -> None:
        self._helper_groups[id(fn.node)] = g
        self.groups.append(g)

    def existing_param(self, fn: Function, param: cst.Param, all_params: List[cst.Param]) -> Optional[str]:
        """The new parameter's name: a `topk_length` parameter the helper already has is reused only if it is
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


def _argument_for(call: cst.Call, param: str, position: Optional[int], shift: int) -> Optional[cst.BaseExpression]:
    for a in call.args:
        if a.keyword and a.keyword.value == param:
            return a.value
    positional = [a for a in call.args if not a.keyword and not a.star]
    if position is not None and 0 <= position - shift < len(positional):
        return positional[position - shift].value
    return None


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


def _is_test(fn: Function) -> bool:
    """A function pytest collects (test_* at module level or in a Test* class): its parameters are fixtures."""
    return fn.name.startswith("test") and (fn.class_name is None or fn.class_name.startswith("Test"))


def _by_hand(found: Optional[str], passing) -> str:
    """For a decorator or override reason: the value a hand migration must pass, and from where."""
    if not found:
        return ""
    many = len(passing) > 1
    lines = ", ".join(str(k.range.start.line) for k, _, _ in passing)
    return (f" (the value to pass is {found}, which the caller{'s' if many else ''} at line{'s' if many else ''} "
            f"{lines} hold{'' if many else 's'})")


# The names the top-k width goes by (sglang: self.dsa_index_topk / self.nsa_index_topk, the indexer's index_topk):
# a clip's bound must be one, read plainly, so that topk_length never exceeds the indices' width (a bound of
# `2 * self.dsa_index_topk`, a literal, a bare `topk` (speculative decoding's draft top-k) or any other
# expression is not proven); a parameter is judged by what each call hands it.
WIDTH_NAME = re.compile(r"(?i)(dsa_|nsa_)?index_topk")
# Lengths a batch has that are not the cache's seqlens (the new tokens, the cached prefix): never the clip's operand.
OTHER_LENGTHS = re.compile(r"(?i)extend|prefix|draft|accept|spec")

# A name -> what it holds where it is read: ("param", [the argument a call hands it, or None where none is
# handed]) for a parameter of a function read with its call's arguments; ("local", [each value it is assigned,
# None for a binding that is no plain assignment]) for a local of a function; ("", None) otherwise (a module's
# constant, a parameter whose callers are not read: judged by its name).
# Each value comes with the resolver of the scope it is read in (a call's argument: the caller's).
Scoped = Tuple[Optional[ast.AST], Optional["Resolve"]]
Resolve = Callable[[ast.Name], Tuple[str, Optional[List[Scoped]]]]


def _values(e: ast.Name, resolve: Optional[Resolve]) -> Tuple[str, Optional[List[Scoped]]]:
    return resolve(e) if resolve else ("", None)


def _is_width(e: ast.AST, resolve: Optional[Resolve] = None, depth: int = 0) -> bool:
    """A plain read of the top-k width (`self.dsa_index_topk`, `INDEX_TOPK`), or a tensor filled with it; a
    parameter is what its call hands it, a local what it is assigned."""
    if isinstance(e, ast.Name):
        kind, values = _values(e, resolve)
        if kind:
            return depth < 8 and bool(values) and all(v is not None and _is_width(v, r, depth + 1) for v, r in values)
        return bool(WIDTH_NAME.fullmatch(e.id))
    if isinstance(e, ast.Attribute):
        return bool(WIDTH_NAME.fullmatch(e.attr))
    if isinstance(e, ast.Call):
        name = e.func.attr if isinstance(e.func, ast.Attribute) else e.func.id if isinstance(e.func, ast.Name) else ""
        fill = e.args[1] if name in ("full_like", "full", "new_full") and len(e.args) > 1 \
            else e.args[0] if name == "tensor" and e.args else None
        fill = next((k.value for k in e.keywords if k.arg == "fill_value"), fill)
        return fill is not None and _is_width(fill, resolve, depth + 1)
    return False


def _plain_lengths(e: Optional[ast.AST], resolve: Optional[Resolve] = None, depth: int = 0) -> bool:
    """The clip's operand read as it is: a name, an attribute, a prefix slice or a conversion of one, never
    arithmetic (`seq_lens - 1`) nor a batch's other lengths (OTHER_LENGTHS: `extend_seq_lens`); a parameter
    is what its call hands it, a local what it is assigned."""
    while isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and e.func.attr in _CONVERSIONS:
        e = e.func.value
    while isinstance(e, ast.Subscript) and _prefix_slice(e.slice):
        e = e.value
    if isinstance(e, ast.Name):
        kind, values = _values(e, resolve)
        if kind == "param" and values and values[0][0] is None:
            return True  # not handed: the caller's own parameter, the engine's seqlens
        if kind == "param":
            return depth < 8 and all(v is not None and _plain_lengths(v, r, depth + 1) for v, r in values)
        # a local: the engine computes its lengths (sglang: `(seq_lens + draft_token_num)`, a `cat` of aranges
        # over the new and cached lengths, a row selection for context parallelism), so what it holds is not
        # read: which lengths these are would need the top-k emitter's own (open, issue 33)
        return not OTHER_LENGTHS.search(e.id)
    if isinstance(e, ast.Attribute):
        return not OTHER_LENGTHS.search(e.attr)
    return False


_CONVERSIONS = ("to", "int", "contiguous", "clone", "view", "reshape", "detach", "cuda")


def _prefix_slice(s: ast.AST) -> bool:
    """`[:n]`, `[0:n]` or `[:]`: the first rows, in order."""
    return isinstance(s, ast.Slice) and s.step is None and (
        s.lower is None or isinstance(s.lower, ast.Constant) and s.lower.value == 0)


def _clips_to_width(e: ast.Call, resolve: Optional[Resolve] = None) -> bool:
    """Is the call (the engine's clip, a clamp, a minimum) the plain lengths bounded above by the top-k width
    itself, with no lower bound but 0?"""
    func = e.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    method = isinstance(func, ast.Attribute) and not (isinstance(func.value, ast.Name) and func.value.id == "torch")
    kw = {k.arg: k.value for k in e.keywords if k.arg}
    if any(k.arg is None for k in e.keywords) or any(isinstance(a, ast.Starred) for a in e.args):
        return False
    args = ([func.value] if method else []) + list(e.args)
    if name in CLIPS:  # compute_dsa_seqlens(seqlens, dsa_index_topk)
        operand = kw.get("original_seq_lens", args[0] if args else None)
        bound = kw.get(f"{name.split('_')[1]}_index_topk", args[1] if len(args) > 1 else None)
    elif name in ("clamp", "clamp_", "clip", "clip_"):  # x.clamp(min, max) / torch.clamp(x, min, max)
        operand = kw.get("input", args[0] if args else None)
        low = kw.get("min", args[1] if len(args) > 1 else None)
        bound = kw.get("max", args[2] if len(args) > 2 else None)
        if low is not None and not (isinstance(low, ast.Constant) and low.value in (0, None)):
            return False
    else:  # x.minimum(w) / torch.minimum(x, w) / min(x, w): one side the width, the other the lengths
        sides = args + list(kw.values())
        return len(sides) == 2 and any(_is_width(a, resolve) and _plain_lengths(b, resolve)
                                       for a, b in (sides, sides[::-1]))
    return bound is not None and _is_width(bound, resolve) and _plain_lengths(operand, resolve)


def _clipped_elsewhere(f, e, depth: int, env: Optional[dict] = None, seen: Optional[set] = None) -> bool:
    """`_Analysis._clipped` for a value another file of the project gives the field (CPython's ast, read
    by reach.py): the engine's clip, a clamp with an upper bound, a minimum, zeros, a read of
    the clipped field, a top-level function of that file whose every return is such (its parameters are
    the call's arguments: `env`), or a local bound only to such (`x = pad(fb, x)` after `x = compute(...)`: a
    local met again while its own bindings are read, `seen`, is decided by its other bindings, as _clipped
    does); anything else is not proven."""

    if depth > 8:
        return False
    if isinstance(e, ast.Constant):
        return e.value is None
    if isinstance(e, ast.Call):
        func = e.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        method = isinstance(func, ast.Attribute) and not (isinstance(func.value, ast.Name) and func.value.id == "torch")
        positional = [a for a in e.args if not isinstance(a, ast.Starred)]
        local = [d for d in f.tree.body if isinstance(d, ast.FunctionDef) and d.name == name] \
            if isinstance(func, ast.Name) else []
        if len(local) == 1 and len(positional) == len(e.args):
            params = [p.arg for p in local[0].args.posonlyargs + local[0].args.args]
            args = dict.fromkeys(params)  # (a parameter not handed: its default, not known)
            args.update(zip(params, positional))
            args.update({k.arg: k.value for k in e.keywords if k.arg})
            caller = (env or {}).copy()
            bound = {p: (v, caller) for p, v in args.items()}
            returns = [r.value for r in ast.walk(local[0]) if isinstance(r, ast.Return)]
            return bool(returns) and all(r is not None and _clipped_elsewhere(f, r, depth + 1, bound, seen) for r in returns)
        if local:
            return False
        if name in CLIPS or name in ("clamp", "clamp_", "clip", "clip_", "minimum", "min"):
            return _clips_to_width(e, _file_resolver(f, env))
        if name in CLIP_KEEPING:
            return len(positional) >= 2 and all(_clipped_elsewhere(f, v, depth + 1, env, seen) for v in positional[1:])
        if name in ("cat", "concat") and positional and isinstance(positional[0], (ast.List, ast.Tuple)):
            parts = positional[0].elts  # the rows, then rows of length 0 (padding)
            return bool(parts) and _clipped_elsewhere(f, parts[0], depth + 1, env, seen) and all(
                isinstance(p, ast.Call) and _unparse_name(p.func) in ("zeros", "new_zeros", "zeros_like")
                for p in parts[1:])
        if method and name in _CONVERSIONS:
            return _clipped_elsewhere(f, func.value, depth + 1, env, seen)
        return False
    if isinstance(e, ast.Subscript):  # the first rows, in order
        return _prefix_slice(e.slice) and _clipped_elsewhere(f, e.value, depth + 1, env, seen)
    if isinstance(e, ast.Attribute):  # another read of the clipped field, off an object of this step
        return e.attr in CLIPPED_FIELDS and not _kept(e.value)
    if isinstance(e, ast.IfExp):
        return _clipped_elsewhere(f, e.body, depth + 1, env, seen) and _clipped_elsewhere(f, e.orelse, depth + 1, env, seen)
    if isinstance(e, ast.Name):
        if env is not None and e.id in env:  # a parameter of the function being read: the call's argument
            value, outer = env[e.id]
            return value is not None and _clipped_elsewhere(f, value, depth + 1, outer or None, seen)
        values = reach.local_value(f, e)
        if values is None:
            return False
        seen = set() if seen is None else seen
        # the local as read on this path: its function, its name, and the call whose arguments `env` holds
        # (alive while on the path, so its id is no other's)
        key = (id(f.enclosing(e, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) or f.tree), e.id, id(env))
        if key in seen:
            return True  # met again while its own bindings are read: the others decide (each step a conjunction)
        seen.add(key)
        try:
            return all(_clipped_elsewhere(f, v, depth + 1, env, seen) for v in values)
        finally:
            seen.discard(key)
    return False


def _rows_reason(hazard: str) -> str:
    return (f"q's rows may not be the metadata's rows: {hazard}; the row-count guard cannot tell, "
            "so pass topk_length by hand if they align")


def _indices_reason(hazard: str) -> str:
    return (f"the indices may not be the top-k the metadata counts: {hazard}; topk_length would cut rows "
            "short or read past them, so pass a length computed from these indices by hand")


# -- value uses (`value-use`) --------------------------------------------------------------


def _value_uses(tree: Tree, facts: ModuleFacts, path: str, through_alias: Set[int] = frozenset()) -> List[Site]:
    """The kernel used other than by calling it: `partial(kernel, ...)`, `getattr(mod,
    "flash_mla_sparse_fwd")`, stored in an attribute or passed on. Calls through it cannot
    be checked, so each is reported as manual, never skipped."""
    sites = []
    seen: Set[int] = set()

    def add(node: cst.CSTNode, callee: str, how: str, reason: Optional[str] = None) -> None:
        pos = tree.position.get(node)
        if pos is None or id(node) in seen:
            return
        seen.add(id(node))
        sites.append(Site(path, pos.start.line, pos.start.column + 1, callee, Status.MANUAL,
                          reason or f"the kernel is {how}: calls through it cannot be checked or rewritten; "
                                    "pass topk_length where it is called, or call the kernel directly"))

    for _, _name, node, _ in (tree.accesses() if _maybe_value_use(tree, facts) else ()):
        chain = node
        while isinstance(tree.parent.get(chain), cst.Attribute) and tree.parent[chain].value is chain:
            chain = tree.parent[chain]
        full = dotted(chain) if isinstance(chain, (cst.Name, cst.Attribute)) else None
        if not full:
            continue
        callee = expand(facts.imports, full)
        if not is_kernel(callee):
            continue
        parent = tree.parent.get(chain)
        if isinstance(parent, cst.Call) and parent.func is chain:
            continue
        if isinstance(parent, TESTS) or (isinstance(parent, cst.IfExp) and parent.test is chain):
            continue
        if isinstance(parent, (cst.AssignTarget, cst.AnnAssign, cst.AugAssign)) and parent.target is chain:
            continue  # a rebinding: the calls through that name are refused by callee_identity
        add(chain, callee, _how(tree, chain), _alias_reason(tree, chain, facts, through_alias))
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
            add(k.node, expand(facts.imports, base) + f".{attr}", "looked up by name with getattr")
    return sites


def _maybe_value_use(tree: Tree, facts: ModuleFacts) -> bool:
    """Whether a kernel name, or a name imported as one, occurs anywhere but in the callee of a call,
    in an import, or where it is bound (a def's, class's or parameter's name, an assignment's target:
    places _value_uses passes over too). If not, no name read can be a value use, and the scope
    analysis that finds them (the costliest step on a module whose calls all pass topk_length) is not
    needed."""
    names = set(ENTRY_POINTS) | {OP_NAME} | {local for local, q in facts.imports.items() if is_kernel(q)}
    for n in tree.find(cst.Name, lambda n: n.value in names):
        top, up = n, tree.parent.get(n)
        while isinstance(up, cst.Attribute) and (up.attr is top or up.value is top):
            top, up = up, tree.parent.get(up)
        if isinstance(up, cst.Call) and up.func is top:
            continue
        if isinstance(up, (cst.AssignTarget, cst.AnnAssign, cst.AugAssign)) and up.target is top \
                or isinstance(up, (cst.FunctionDef, cst.ClassDef, cst.Param)) and up.name is n:
            continue
        while up is not None and not isinstance(up, (cst.Import, cst.ImportFrom)):
            up = tree.parent.get(up)
        if up is None:
            return True
    return False


def _only_called(tree: Tree, name: str, calls: Set[int]) -> bool:
    """Is every read of `name` in the module the callee of one of `calls`?"""
    for n in tree.find(cst.Name, lambda n: n.value == name):
        p = tree.parent.get(n)
        if isinstance(p, (cst.AssignTarget, cst.AnnAssign)) and p.target is n:
            continue
        if not (isinstance(p, cst.Call) and p.func is n and id(p) in calls):
            return False
    return True


def _alias_reason(tree: Tree, node: cst.CSTNode, facts: ModuleFacts, through_alias: Set[int]) -> Optional[str]:
    """The reason for the kernel at `node` bound by an alias whose every read here is a call checked as the
    kernel's (kernel_calls), else None."""
    parent = tree.parent.get(node)
    up = tree.parent.get(tree.parent.get(parent)) if isinstance(parent, cst.Arg) else parent
    if not (kernel_alias(up, facts.imports) and _only_called(tree, up.targets[0].target.value, through_alias)):
        return None
    return (f"the kernel is bound to `{up.targets[0].target.value}`, a name other code may call it through: calls "
            "through it elsewhere cannot be checked or rewritten (this module's are checked as the kernel's); call "
            "the kernel directly there")


def _how(tree: Tree, node: cst.CSTNode) -> str:
    parent = tree.parent.get(node)
    if isinstance(parent, cst.Arg):
        call = tree.parent.get(parent)
        fname = get_full_name_for_node(call.func) if isinstance(call, cst.Call) else None
        if fname and fname.rsplit(".", 1)[-1] == "partial":
            return "wrapped by functools.partial"
        shown = _code(call.func).strip() if fname else ""  # as written: `super().__init__`, not super.__init__
        return f"passed to `{shown if len(shown) <= 40 else fname}` as a value" if fname else "passed as a value"
    if isinstance(parent, (cst.Assign, cst.AnnAssign)):
        targets = [t.target for t in parent.targets] if isinstance(parent, cst.Assign) else [parent.target]
        if any(isinstance(t, (cst.Attribute, cst.Subscript)) for t in targets):
            return f"stored in `{_code(targets[0]).strip()}`"
        return f"bound to `{_code(targets[0]).strip()}`"
    return "used as a value"
