"""What the pass-topk-length rule reads of a module (codemods/pass_topk_length/rule.py): the metadata that
satisfies the kernel's contract, and the analysis that classifies each call and plans its rewrite (the
helper that calls the kernel, its callers, where q's rows come from), including the kernel's uses as a
value. The kernel's names, and the verdicts that need no LibCST: pass_topk_length/quick.py. The rewrite and
its validation: pass_topk_length/rewrite.py."""
from __future__ import annotations

import ast
import re
import textwrap
from dataclasses import replace
from typing import Callable, Dict, List, Optional, Sequence, Set, Tuple

import libcst as cst
from libcst.helpers import get_full_name_for_node
from libcst.metadata import FunctionScope, GlobalScope, ImportAssignment

from topk_migrate import bounded, kernels, project, suppress
from topk_migrate.cst.resolve import CallInfo, Function, ModuleFacts, dotted
from topk_migrate.cst.scopecheck import Tree, root_binding
from topk_migrate.model import Capability, Site, Status
from topk_migrate.rules import RuleOptions

from . import attributes, derived, reach
from .group import Group, _direct_reason
from .helper_identity import HelperIdentity
from .identity import (
    CalleeIdentity,
    _misplaced,
    kernel_alias,
)
from .indexes import ModuleIndexes
from .quick import ENTRY_POINTS, OP_NAME, OP_TOPK_LENGTH_POSITION, PARAM, expand, is_kernel, is_op_level  # noqa: F401
from .reflection import NoReflection
from .rows import _own_returns, index_hazard, local_defs, row_hazard
from .syntax import (
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

# Metadata known to satisfy the contract: per-row valid-index count (seqlens clipped
# to topk), int32, 1-D, row-aligned with q, updated in place under CUDA-graph replay.
KNOWN_METADATA = ("metadata.dsa_cache_seqlens_int32", "metadata.nsa_cache_seqlens_int32")

RULE_ID = "pass-topk-length"


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


def _is_dict(value: cst.BaseExpression) -> bool:
    """A dict display or comprehension: unpacking it with `**` runs no code (its values were made before)."""
    return isinstance(value, cst.DictComp) or isinstance(value, cst.Dict) and all(
        isinstance(e, cst.DictElement) for e in value.elements)


def _self_root_attr(e: cst.BaseExpression) -> Optional[str]:
    """`self.A`, `self.A[k]`, `self.A.b`: A; else None."""
    while isinstance(e, (cst.Subscript, cst.Attribute)) and not _is_attr_of_self(e):
        e = e.value
    return e.attr.value if _is_attr_of_self(e) else None


class _Analysis(CalleeIdentity, NoReflection, HelperIdentity, ModuleIndexes):
    """One module's analysis: each kernel call classified (classify), the reference fix planned where its
    statements hold (contract, through_helper), else the derived lengths (derived_or). Each
    statement of docs/soundness.md it proves is a mixin from a module of its own; the indexes of the module
    they read through: indexes.ModuleIndexes."""

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
