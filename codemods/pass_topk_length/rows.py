"""Row alignment (issue 8, class 5): is a q tensor's dim 0 still the batch's rows, in order,
and are the kernel's indices still the top-k entries the metadata counted?

The rewrite's guard compares row counts only. A q built from the batch by a
row-selecting or row-reordering step (indexing dim 0 by a permutation, mask or slice,
index_select/gather/narrow on dim 0, cat/split/chunk along rows, a loop over
sub-batches) can have as many rows as the metadata while its rows are other rows.
This walks the data flow of q inside one function and names the first such step. Steps
that keep dim 0 pass only where they are on an allowlist kept below as data, each entry
with the engine code that needs it (view/reshape keeping dim 0, unsqueeze/squeeze/flatten
past dim 0, head padding by `new_zeros` + slice assignment of the trailing dims, cat along
the last dim, `.contiguous()`, `.to()`), or a function of the project whose returns the trace
reads. Everything else is refused by default: an unknown method or function, a lambda, a
binding form the trace does not model. The same operation gets the same verdict in method
and function form.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Dict, FrozenSet, List, NamedTuple, Optional, Sequence, Set, Tuple, Union

import libcst as cst
from libcst.helpers import get_full_name_for_node
from libcst.metadata import ClassScope, ComprehensionScope, FunctionScope, GlobalScope, ImportAssignment

from topk_migrate.cst.scopecheck import Tree

from .syntax import _brief, _is_name, _is_none, _q_arg, bound_targets

# qualified name -> (tree of a module holding just that def, the def) for a function of the project
External = Callable[[str], Optional[Tuple[Tree, cst.FunctionDef]]]
# qualified name -> is it defined outside the project (a library: torch, flashinfer, the kernel's package)?
Outside = Callable[[str], bool]

# Reading these gives no rows of the tensor (shapes, dtypes) or fresh rows (allocation).
NO_DATA_ATTRS = {"shape", "dtype", "device", "ndim", "is_cuda", "layout", "requires_grad"}
NO_DATA_METHODS = {"size", "numel", "dim", "stride", "element_size", "data_ptr", "is_contiguous", "item", "tolist",
                   "new_zeros", "new_empty", "new_ones", "new_full", "new_tensor", "get_device"}
_ENTRY_READS = {"item", "tolist"}  # (methods of NO_DATA_METHODS that hand a tensor's entries on, as numbers)
FRESH_FUNCTIONS = {"zeros", "empty", "ones", "full", "zeros_like", "empty_like", "ones_like", "full_like", "arange",
                   "rand", "randn", "randint", "tensor", "empty_strided"}  # (not `as_tensor`: a tensor handed
# to it comes back as itself, round Q)
# Library functions that write a tensor they are handed in place although their names say nothing of it: the
# collectives fill their first argument (`dist.all_gather_into_tensor(out, shard)`, `dist.broadcast(t, 0)`: round W)
IN_PLACE_LIBRARY = {"all_reduce", "all_gather", "all_gather_into_tensor", "reduce_scatter", "reduce_scatter_tensor",
                    "broadcast", "scatter", "gather", "reduce", "recv", "irecv", "all_to_all", "all_to_all_single",
                    "broadcast_object_list", "scatter_object_list"}
TRANSPOSING_ATTRS = {"T", "mT", "H", "mH"}
ALWAYS_REORDERS = {"masked_select", "take", "take_along_dim", "nonzero", "t", "unique", "argsort", "sort", "flipud",
                   "rot90", "einsum", "matmul", "mm", "bmm"}
RESHAPES = {"view", "reshape", "unflatten", "expand", "repeat", "tile"}
# op -> (position of `dim` among the arguments after the tensor, default dim or None if required)
DIM_OPS = {
    "index_select": (0, None), "gather": (0, None), "narrow": (0, None), "select": (0, None), "unbind": (0, 0),
    "split": (1, 0), "chunk": (1, 0), "tensor_split": (1, 0), "split_with_sizes": (1, 0),
    "repeat_interleave": (1, None), "flip": (0, None), "roll": (1, None), "cat": (1, 0), "concat": (1, 0),
    "concatenate": (1, 0), "stack": (1, 0), "unfold": (0, None), "scatter": (0, None), "index_copy": (0, None),
    "index_add": (0, None), "index_fill": (0, None),
}
ROWS_FUNCTIONS = {"vstack", "row_stack", "hstack", "dstack", "cartesian_prod", "block_diag"}
FUNCTION_DIM_OPS = {"cat", "concat", "concatenate", "stack"}  # torch.cat(tensors, dim): the tensors are args[0]
MOVE_OPS = {"transpose", "swapaxes", "swapdims", "movedim", "moveaxis"}
INPLACE_ROW_WRITES = {"index_copy_", "index_put_", "scatter_", "masked_scatter_", "index_add_", "put_"}

# The allowlist: operations known to keep each row of q where it is, in method form (q.op(...)) or as
# torch.op(q, ...). Anything not here, not in the tables above and not a function of the project
# the trace reads, makes the site manual.
ROW_KEEPING = {
    "contiguous": "sglang dsa_backend/nsa_backend: q_nope.contiguous() before the absorbed concat",
    "to": "a dtype or device change: .to(torch.bfloat16) in the engines' MLA paths",
    "float": "dtype", "half": "dtype", "bfloat16": "dtype", "type": "dtype",
    "clone": "a copy: the same rows", "detach": "the same tensor outside autograd",
    "cuda": "device", "cpu": "device",
}
# Engine functions on q's flow that the trace cannot read (a kernel, a module outside the tree given),
# known to keep rows: matched on the name they are imported as from sglang or sgl_kernel, never on a bare
# name (a project's own function of that name is read instead).
ROW_KEEPING_FUNCTIONS = {
    "concat_mla_absorb_q_general": "sglang (kernels/ops/)attention/utils.py: the absorbed q_nope and q_rope "
                                   "joined on the last dim (torch.cat(..., dim=-1), or its fused kernel)",
    "concat_mla_absorb_q": "sgl_kernel / sglang.jit_kernel.concat_mla: the fused cat of q_nope and q_rope on the last dim",
}
ENGINE_PACKAGES = ("sglang", "sgl_kernel")


def engine_module(name: str) -> bool:
    """Is the dotted name the engine's package or inside it (`sgl_kernel.flash_mla`; not a fork's `sgl_kernel_ext`:
    round AC)?"""
    return any(name == p or name.startswith(p + ".") for p in ENGINE_PACKAGES)
# dim-taking steps that keep rows when the dim is past 0 (unsqueeze(1), squeeze(-1), flatten(1))
DIM_KEEPING = {"unsqueeze": (0, None), "squeeze": (0, None), "flatten": (0, 0)}
TORCH_PREFIXES = ("torch.", "F.")


_NO_ROWS = (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString, cst.FormattedString,
            cst.Ellipsis, cst.Lambda, cst.Dict, cst.Set, cst.DictComp, cst.Comparison)


_BUILTIN_NAMES = {"None", "True", "False", "NotImplemented", "Ellipsis", "__debug__"}
_NOT_TENSORS = (cst.FunctionDef, cst.ClassDef, cst.Import, cst.ImportFrom, cst.ImportAlias)


def _int(e: Optional[cst.BaseExpression]) -> Optional[int]:
    if isinstance(e, cst.Integer):
        return int(e.value)
    if isinstance(e, cst.UnaryOperation) and isinstance(e.operator, cst.Minus) and isinstance(e.expression, cst.Integer):
        return -int(e.expression.value)
    return None


def _keeps_rows(dim: Optional[cst.BaseExpression]) -> bool:
    """A dim known not to be 0 for a tensor of 2 or more dims: a literal >= 1, or -1."""
    d = _int(dim)
    if d is not None:
        return d >= 1 or d == -1
    if isinstance(dim, (cst.Tuple, cst.List)):
        return all(_keeps_rows(el.value) for el in dim.elements)
    return False


def _dim_arg(args: List[cst.Arg], position: int) -> Tuple[bool, Optional[cst.BaseExpression]]:
    """(given, expression) of the `dim` argument."""
    for a in args:
        if a.keyword and a.keyword.value in ("dim", "dims", "axis", "dim0", "start_dim"):
            return True, a.value
    positional = [a for a in args if not a.keyword and not a.star]
    if len(positional) > position:
        return True, positional[position].value
    return False, None


def _code(node: cst.CSTNode) -> str:
    """node's whole code: the traces compare expressions by it (round AX: a cut text made two tensors whose code
    shares its first 57 characters one), and a reason quoting it cuts it itself."""
    return cst.Module([]).code_for_node(node).strip()


def _shown(node: cst.CSTNode) -> str:
    """node's code as a reason quotes it: cut at 60 characters."""
    text = _code(node)
    return text if len(text) <= 60 else text[:57] + "..."


def _first_index_keeps_rows(sub: cst.Subscript) -> bool:
    first = sub.slice[0].slice if sub.slice else None
    if isinstance(first, cst.Slice):
        return first.lower is None and first.upper is None and first.step is None
    return isinstance(first, cst.Index) and isinstance(first.value, cst.Ellipsis)


def _swap(dims: List[cst.BaseExpression]) -> Optional[Tuple[int, int]]:
    pair = tuple(sorted(_int(d) for d in dims)) if len(dims) == 2 and all(_int(d) is not None for d in dims) else None
    return pair if pair is not None and pair[0] == 0 and pair[1] > 0 else None  # type: ignore[return-value]


def _transpose_of(e: cst.BaseExpression) -> Optional[Tuple[cst.BaseExpression, Tuple[int, int]]]:
    """`z.transpose(0, d)` / `torch.transpose(z, 0, d)`: (z, (0, d)), else None."""
    if not isinstance(e, cst.Call):
        return None
    name = get_full_name_for_node(e.func) or ""
    if name.rsplit(".", 1)[-1] not in ("transpose", "swapaxes", "swapdims"):
        return None
    args = [a.value for a in e.args if not a.star and not a.keyword]
    if _torch_function(e.func, name):
        z, dims = (args[0], args[1:3]) if args else (None, [])
    elif isinstance(e.func, cst.Attribute):
        z, dims = e.func.value, args[:2]
    else:
        return None
    pair = _swap(dims)
    return (z, pair) if z is not None and pair is not None else None


def _transposed_back(tree: Tree, call: cst.Call, op: str, dims: List[cst.BaseExpression]) -> Optional[cst.BaseExpression]:
    """For `y.transpose(0, d)` where y is `z.transpose(0, d)` or `torch.bmm(z.transpose(0, d), w)` (MLA
    absorption: bmm keeps dims 0 and 1 of its first argument), written in one expression or bound once
    to a name: z, whose rows the result has in their order; else None."""
    pair = _swap(dims) if op in ("transpose", "swapaxes", "swapdims") else None
    if pair is None:
        return None
    inner = call.func.value if isinstance(call.func, cst.Attribute) and not _torch_function(
        call.func, get_full_name_for_node(call.func) or "") else None
    if inner is None:
        args = [a.value for a in call.args if not a.star and not a.keyword]
        inner = args[0] if args else None
    if isinstance(inner, cst.Name):
        b = tree.binding(inner, inner.value)
        stmt = tree.assignment_statement(b.assignments[0]) if len(b.assignments) == 1 else None
        inner = stmt.value if stmt is not None else None
    if isinstance(inner, cst.Call) and (get_full_name_for_node(inner.func) or "") == "torch.bmm" \
            and inner.args:
        inner = inner.args[0].value
    found = _transpose_of(inner) if inner is not None else None
    return found[0] if found is not None and found[1] == pair else None


def _prefix(sub: cst.Subscript) -> bool:
    """`q[:n]`: the first n rows, row i still row i; fewer rows than the metadata's, which the row-count
    guard turns into the full width (a fork's padded-batch trim)."""
    first = sub.slice[0].slice if sub.slice else None
    return isinstance(first, cst.Slice) and (first.lower is None or _int(first.lower) == 0) and first.step is None


SPLITS = {"split", "chunk", "tensor_split", "unbind", "split_with_sizes"}


def _is_split(e: cst.BaseExpression) -> bool:
    return isinstance(e, cst.Call) and (get_full_name_for_node(e.func) or "").rsplit(".", 1)[-1] in SPLITS


def _walrus_value(tree: Tree, target: object) -> Optional[cst.BaseExpression]:
    """The value of `(name := value)` for the Name it binds, else None."""
    parent = tree.parent.get(target) if isinstance(target, cst.CSTNode) else None
    return parent.value if isinstance(parent, cst.NamedExpr) and parent.target is target else None


def _torch_function(func: cst.BaseExpression, name: str) -> bool:
    """`torch.op` / `F.op` as written: a dotted name, not a method of what a call returned
    (`torch.remainder(x, n).to(...)` is `.to` on that result, though its full name reads torch.remainder.to)."""
    e = func
    while isinstance(e, cst.Attribute):
        e = e.value
    return isinstance(e, cst.Name) and name.startswith(TORCH_PREFIXES)


def imported_names(tree: Tree, func: cst.BaseExpression) -> List[str]:
    """The qualified names `func` (a name or a dotted attribute of one) is imported as."""
    root = func
    while isinstance(root, cst.Attribute):
        root = root.value
    if not isinstance(root, cst.Name):
        return []
    cache = tree.__dict__.setdefault("_imported_names", {})  # once per callee node: traces ask it again and again
    if id(func) not in cache:
        rest = (get_full_name_for_node(func) or "").partition(".")[2]
        cache[id(func)] = [qn.name + ("." + rest if rest else "") for a in tree.binding(root, root.value).assignments
                           if isinstance(a, ImportAssignment) for qn in a.get_qualified_names_for(root.value)]
    return cache[id(func)]


# (class or None, name) -> another file's definition or write a call of that method or function may reach, or None
Rival = Callable[[Optional[str], str], Optional[str]]
# an attribute's name -> where another file makes it other than a value handed to its function, or None
Served = Callable[[str], Optional[str]]
# Decorators a def the traces read may carry: each keeps the function, or hands every argument on unchanged.
TRANSPARENT_DECORATORS = {"staticmethod", "classmethod", "torch.no_grad", "torch.inference_mode", "torch.enable_grad"}


def unproven_local(tree: Tree, func: cst.BaseExpression, rival: Optional[Rival] = None) -> Optional[str]:
    """Why the defs local_defs finds may not be all that the call reaches (round R: a later `_prep = other`, a
    decorator, an instance attribute, a class-body alias, a patch, a base of another file), or None."""
    defs = local_defs(tree, func)
    if not defs:
        return None
    name = _code(func).strip()
    for d in defs:
        deco = next((x for x in d.decorators if not _transparent(x.decorator)), None)
        if deco is not None:
            return (f"`{name}` reaches `{d.name.value}`, decorated with `@{_shown(deco.decorator).strip()}`, which may "
                    "replace what the call runs: its body is not what the trace read")
    short = func.value if isinstance(func, cst.Name) else func.attr.value
    why = _rebound_here(tree, short)
    if why:
        return f"`{name}`: {why}; which function the call runs is not proven"
    if isinstance(func, cst.Name):
        if len(tree.binding(func, short).assignments) != 1:
            return f"`{name}` is bound more than once in this module: which function the call runs is not proven"
        why = rival(None, short) if rival else None
        return f"`{name}`: {why}; which function the call runs is not proven" if why else None
    cls = next((a for a in tree.ancestors(func) if isinstance(a, cst.ClassDef)), None)
    if cls is None:
        return f"`{name}` is called outside a class: which method it runs is not proven"
    own = any(d.name.value == short for d in _class_defs(cls))
    for c in [cls, *_module_bases(tree, cls)]:
        if c is None and not own:
            return (f"`{name}` is not defined in {cls.name.value}, and a base of another file may define it: which "
                    "method runs is not proven")
        if c is not None and (c.decorators or any(k.keyword is not None for k in c.keywords)):
            return f"{c.name.value} has a class decorator or keywords, which may replace `{short}`"
    why = rival(cls.name.value, short) if rival else None
    return f"`{name}`: {why}; which method the call runs is not proven" if why else None


def _transparent(decorator: cst.BaseExpression) -> bool:
    if isinstance(decorator, cst.Call):
        return not decorator.args and (get_full_name_for_node(decorator.func) or "") in TRANSPARENT_DECORATORS
    return (get_full_name_for_node(decorator) or "") in ("staticmethod", "classmethod")


def _class_defs(cls: cst.ClassDef) -> List[cst.FunctionDef]:
    body = cls.body.body if isinstance(cls.body, cst.IndentedBlock) else ()
    return [d for d in body if isinstance(d, cst.FunctionDef)]


def _module_bases(tree: Tree, cls: cst.ClassDef) -> List[Optional[cst.ClassDef]]:
    """The classes of this module `cls` derives from, transitively; None for a base that is not one (but `object`)."""
    classes = {c.name.value: c for c in tree.find(cst.ClassDef)}
    out: List[Optional[cst.ClassDef]] = []
    todo, seen = [cls], {cls.name.value}
    while todo:
        for b in todo.pop().bases:
            base = get_full_name_for_node(b.value) or ""
            if base == "object" or b.keyword is not None:
                continue
            found = classes.get(base)
            out.append(found)
            if found is not None and base not in seen:
                seen.add(base)
                todo.append(found)
    return out


def _rebound_here(tree: Tree, name: str) -> Optional[str]:
    """A binding of `name` in this module besides defs: an attribute assignment (`self.m = f`, `Backend.m = f`),
    a class-body binding that is not a def (`m = _other`), a literal setattr. Once per name and module: the traces
    ask it of every local call they meet, three times over."""
    cache = tree.__dict__.setdefault("_rebound_here", {})
    if name not in cache:
        cache[name] = _rebound_scan(tree, name)
    return cache[name]


def _rebound_scan(tree: Tree, name: str) -> Optional[str]:
    for t in tree.find((cst.AssignTarget, cst.AnnAssign, cst.AugAssign)):
        for x in bound_targets(t.target):
            if isinstance(x, cst.Attribute) and x.attr.value == name:
                return f"`{_shown(x).strip()}` is assigned at line {tree.line(x)}"
    for c in tree.find(cst.ClassDef):
        for stmt in c.body.body if isinstance(c.body, cst.IndentedBlock) else ():
            for small in getattr(stmt, "body", ()) if isinstance(stmt, cst.SimpleStatementLine) else ():
                targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else \
                    [small.target] if isinstance(small, (cst.AnnAssign, cst.AugAssign)) and getattr(small, "value", None) is not None else []
                if any(isinstance(x, cst.Name) and x.value == name for t in targets for x in bound_targets(t)):
                    return f"{c.name.value} binds `{name}` at line {tree.line(small)}"
    for call in tree.find(cst.Call, lambda c: (get_full_name_for_node(c.func) or "").rsplit(".", 1)[-1] in ("setattr", "__setattr__")):
        if any(isinstance(a.value, cst.SimpleString) and a.value.evaluated_value == name for a in call.args):
            return f"setattr at line {tree.line(call)} sets `{name}`"
    return None


def _served_by_code(tree: Tree, attr: str) -> Optional[cst.CSTNode]:
    """A class body binding `attr` to code: a def (a property), or any binding but a constant (a descriptor)."""
    for c in tree.find(cst.ClassDef):
        for stmt in c.body.body if isinstance(c.body, cst.IndentedBlock) else ():
            if isinstance(stmt, cst.FunctionDef) and stmt.name.value == attr:
                return stmt
            for small in getattr(stmt, "body", ()) if isinstance(stmt, cst.SimpleStatementLine) else ():
                value = getattr(small, "value", None)
                targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else \
                    [small.target] if isinstance(small, cst.AnnAssign) else []
                if value is not None and not isinstance(value, (cst.SimpleString, cst.Integer, cst.Float)) \
                        and not _is_none(value) and any(_is_name(t, attr) for t in targets):
                    return small
    return None


def _star_kwarg(tree: Tree, param: cst.Param) -> bool:
    """The `**kwargs` parameter: a dict the call builds, whose lookups run no code."""
    params = tree.parent.get(param)
    return isinstance(params, cst.Parameters) and params.star_kwarg is param


def _method_called_on(tree: Tree, scope, name: str, attr: str, exempt: Set[int]) -> Optional[cst.Call]:
    """A call `name.m(...)` in the scope's function, or one handed `name.attr` (the attribute the indices are read
    off): the holder's method, or the callee, may set or rewrite them (round R). (The holder handed whole is judged
    as any name handed to a call is: _writes.)"""
    return _holder_method_call(tree, getattr(scope, "node", None), name, attr, exempt, 0)


def _holder_method_call(tree: Tree, owner, name: str, attr: str, exempt: Set[int], depth: int) -> Optional[cst.Call]:
    """_method_called_on in `owner`; the holder handed whole to a def of this module counts where that def calls a
    method of the parameter it lands in (round S: `self._prepare(batch)` calling `batch.coalesce_topk()`)."""
    for call in tree.find(cst.Call, lambda c: id(c) not in exempt, owner):  # (not the call the indices are traced for)
        if isinstance(call.func, cst.Attribute) and _is_name(call.func.value, name):
            if call.func.attr.value not in NO_DATA_METHODS:
                return call
        elif not _reads_no_data(call) and any(_read_off(x, name, attr) for a in call.args for x in _held(a.value)):
            return call
        elif depth < 4 and any(_is_name(a.value, name) for a in call.args):
            for d in local_defs(tree, call.func):
                for param in _params_given(d, call, name):
                    if _holder_method_call(tree, d, param, attr, set(), depth + 1) is not None:
                        return call
    return None


def _params_given(d: cst.FunctionDef, call: cst.Call, name: str) -> List[str]:
    """The parameters of `d` a call hands `name` to (by keyword, or by place past a method's self); every one where
    the place is not read (a star argument before it)."""
    p = d.params
    positional = [x.name.value for x in (*p.posonly_params, *p.params)]
    if positional[:1] in (["self"], ["cls"]) and isinstance(call.func, cst.Attribute):
        positional = positional[1:]
    everyone = positional + [x.name.value for x in p.kwonly_params]
    out: List[str] = []
    for i, a in enumerate(call.args):
        if not _is_name(a.value, name):
            continue
        if a.keyword is not None:
            out.append(a.keyword.value)
        elif a.star or any(b.star for b in call.args[:i]):
            return everyone
        elif i < len(positional):
            out.append(positional[i])
        elif isinstance(p.star_arg, cst.Param):
            out.append(p.star_arg.name.value)
    return out


def _read_off(e: cst.BaseExpression, name: str, attr: str) -> bool:
    """`name.attr`, or a view or item of it (`batch.topk_indices[:, 0]`)."""
    while isinstance(e, cst.Subscript):
        e = e.value
    return isinstance(e, cst.Attribute) and e.attr.value == attr and _is_name(e.value, name)


def local_defs(tree: Tree, func: cst.BaseExpression) -> List[cst.FunctionDef]:
    """The defs of this module a call can reach: `f(...)` bound to a def, `self.m(...)`."""
    if isinstance(func, cst.Name):
        return [a.node for a in tree.binding(func, func.value).assignments
                if isinstance(getattr(a, "node", None), cst.FunctionDef)]
    if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value in ("self", "cls"):
        return [n for n in tree.defs() if n.name.value == func.attr.value and tree.is_method(n)]
    return []


# Attributes of a tensor that are the tensor itself, rows and all (`q.data`, `q.real` of a real tensor): the
# only attributes q's flow may read inside a helper; any other (`self.draft_q`) holds a tensor with rows of
# its own. (Where the metadata is bound, q is taken as the engine hands it: `forward_batch.q` is that batch's.)
ROW_KEEPING_ATTRS = {"data", "real"}


class RowTrace:
    """Follows q's rows back through the assignments of its function."""

    def __init__(self, tree: Tree, external: Optional[External] = None, outside: Optional[Outside] = None,
                 params_only: bool = False, rival: Optional[Rival] = None):
        self.tree, self.external, self.outside, self.rival = tree, external, outside, rival
        self.params_only = params_only  # a helper's q: it must come from its parameters (what the callers pass)
        self.seen: Set[int] = set()
        self.params: Set[Tuple[object, str]] = set()  # (scope, name) of the parameters q's rows come from
        self.inside = 0  # > 0 while reading the returns of a function defined in this module
        self.exempt: Set[int] = set()
        self.anchor: Optional[cst.Call] = None  # the call q is traced for: a write off its path changes nothing

    def hazard(self, expr: cst.BaseExpression) -> Optional[str]:
        up = self.tree.parent.get(expr)
        up = self.tree.parent.get(up) if isinstance(up, cst.Arg) else up
        if isinstance(up, cst.Call):
            self.exempt.add(id(up))  # the call q is traced for (the kernel's, or the helper's at a caller)
            self.anchor = self.anchor or up
        return self._data(expr)

    def _pure(self, call: cst.Call, name: str) -> bool:
        """The traced call itself, or a def of the project that writes none of the parameters `name` (or an
        alias of it) is handed to."""
        if id(call) in self.exempt:
            return True
        local = local_defs(self.tree, call.func)
        if local:
            return unproven_local(self.tree, call.func, self.rival) is None and all(
                self._writes_no_param(fdef, handed_params(call, fdef, name)) for fdef in local)
        found = [self.external(qn) for qn in imported_names(self.tree, call.func)] if self.external else []
        if found and all(f is not None for f in found) and self.inside <= 3:
            return all(RowTrace(f[0], None, self.outside)._writes_no_param(f[1], handed_params(call, f[1], name))
                       for f in found)
        return False

    def _writes_no_param(self, fdef: cst.FunctionDef, params: List[str]) -> bool:
        key = (id(fdef), tuple(params))
        if key in self.seen or self.inside > 3:
            return True  # being read: its other uses decide
        self.seen.add(key)
        scope = self.tree.scope_of.get(fdef.body)
        self.inside += 1
        try:
            return scope is None or all(self._row_writes(scope, p) is None for p in params)
        finally:
            self.inside -= 1

    # -- expressions -------------------------------------------------------------------
    def _data(self, e: cst.BaseExpression) -> Optional[str]:
        if isinstance(e, cst.Name):
            return self._name(e)
        if isinstance(e, cst.Attribute):
            if e.attr.value in NO_DATA_ATTRS:
                return None
            if e.attr.value in TRANSPOSING_ATTRS:
                return f"`{_shown(e)}` transposes rows"
            if self.params_only and e.attr.value not in ROW_KEEPING_ATTRS:
                # in a helper, q must be what its callers pass: a tensor held elsewhere has rows of its own
                return (f"`{_shown(e)}` is read from an attribute, not from the q the callers pass, so its rows "
                        "cannot be tied to the metadata's")
            return self._data(e.value)
        if isinstance(e, cst.Subscript):
            if _reads_no_data(e.value):
                return None  # `q.shape[0]`: a size, not rows
            if _is_split(e.value):  # one piece of a split: rows kept if the split keeps them
                return self._data(e.value)
            if not _first_index_keeps_rows(e) and not _prefix(e):
                return f"`{_shown(e)}` indexes dim 0"
            return self._data(e.value)
        if isinstance(e, cst.Call):
            return self._call(e)
        if isinstance(e, cst.IfExp):
            return self._data(e.body) or self._data(e.orelse)
        if isinstance(e, (cst.BinaryOperation, cst.BooleanOperation)):
            return self._data(e.left) or self._data(e.right)
        if isinstance(e, cst.UnaryOperation):
            return self._data(e.expression)
        if isinstance(e, (cst.Tuple, cst.List)):
            for el in e.elements:
                why = self._data(el.value)
                if why:
                    return why
            return None
        if isinstance(e, cst.NamedExpr):
            return self._data(e.value)
        if isinstance(e, cst.Await):
            return self._data(e.expression)
        if isinstance(e, (cst.ListComp, cst.GeneratorExp, cst.SetComp)):
            return f"`{_shown(e)}` builds q from a loop over pieces"
        if isinstance(e, _NO_ROWS):
            return None  # constants, strings, a lambda as a value: no rows of q
        return f"`{_shown(e)}` is a form the row trace does not model"

    def _call(self, call: cst.Call) -> Optional[str]:
        if _reads_no_data(call):
            return None
        func = call.func
        name = get_full_name_for_node(func) or ""
        op = name.rsplit(".", 1)[-1]
        method = isinstance(func, cst.Attribute) and not _torch_function(func, name)
        args = list(call.args)
        local = local_defs(self.tree, func)
        if local:  # a function or method of this module: what it returns, then its arguments
            why = unproven_local(self.tree, func, self.rival) or next((w for w in map(self._returns, local) if w), None)
            return why or self._args(args) or (self._data(func.value) if isinstance(func, cst.Attribute) else None)
        found, why = self._imported(func)
        if why or found:  # a function of the project's other modules, its returns read
            return why or self._args(args)
        if method:
            return self._step(call, args, op, func.value, 0)
        if op in FRESH_FUNCTIONS:
            return None
        if op in FUNCTION_DIM_OPS:
            return self._dim_op(call, args, op, 0) or self._args(args)
        if _torch_function(func, name) and args and not args[0].keyword:
            return self._step(call, args[1:], op, args[0].value, 1)  # torch.op(q, ...): as q.op(...)
        if op in ROWS_FUNCTIONS:
            return f"`{_shown(call)}` reorders or selects rows"
        if op in ROW_KEEPING_FUNCTIONS and _engine_import(self.tree, func):
            return self._args(args)
        return (f"`{_shown(call)}` calls `{name or _code(func)}`, neither on the allowlist of operations that keep "
                "q's rows (rows.ROW_KEEPING) nor a function of this project the trace can read")

    def _step(self, call: cst.Call, args: List[cst.Arg], op: str, receiver: cst.BaseExpression,
              shift: int) -> Optional[str]:
        """`receiver.op(*args)`, or `torch.op(receiver, *args)`: one verdict for both spellings."""
        if op in NO_DATA_METHODS:
            return None
        if op in ALWAYS_REORDERS or op in ROWS_FUNCTIONS:
            return f"`{_shown(call)}` reorders or selects rows"
        if op in MOVE_OPS or op == "permute":
            back = _transposed_back(self.tree, call, op, [a.value for a in args if not a.star][:2])
            if back is not None:  # `x.transpose(0, 1)` ... `.transpose(0, 1)`: the rows back in their order
                return self._data(back)
            return self._moved(call, args, op) or self._data(receiver)
        if op in DIM_OPS:
            return self._dim_op(call, args, op, 0) or self._data(receiver)
        if op in RESHAPES:
            return self._reshaped(call, args, op) or self._data(receiver)
        if op in DIM_KEEPING:
            position, default = DIM_KEEPING[op]
            given, dim = _dim_arg(args, position)
            if not _keeps_rows(dim if given else (cst.Integer(str(default)) if default is not None else None)):
                return f"`{_shown(call)}` may change dim 0 (the rows)"
            return self._data(receiver)
        if op in ROW_KEEPING:
            return self._data(receiver)
        return (f"`{_shown(call)}`: `{op}` is not on the allowlist of operations that keep q's rows "
                "(rows.ROW_KEEPING)")

    def _imported(self, func: cst.BaseExpression) -> Tuple[bool, Optional[str]]:
        """A function imported from another module of the project: (found, why its returns are not
        the rows of its arguments, or None)."""
        root = func
        while isinstance(root, cst.Attribute):
            root = root.value
        if self.external is None or not isinstance(root, cst.Name) or self.inside:
            return False, None
        rest = (get_full_name_for_node(func) or "").partition(".")[2]
        found_any = False
        for a in self.tree.binding(root, root.value).assignments:
            if not isinstance(a, ImportAssignment):
                continue
            for qn in a.get_qualified_names_for(root.value):
                found = self.external(qn.name + ("." + rest if rest else ""))
                if found is not None:
                    found_any = True
                    other = RowTrace(found[0])
                    other.inside = 1
                    why = other._returns(found[1])
                    if why:
                        return True, why
        return found_any, None

    def _returns(self, fdef: cst.FunctionDef) -> Optional[str]:
        if id(fdef) in self.seen or self.inside > 3:
            return None
        self.seen.add(id(fdef))
        self.inside += 1
        try:
            for ret in _own_returns(fdef):
                why = self._data(ret.value) if ret.value is not None else None
                if why:
                    return f"{why} (in `{fdef.name.value}`)" if "(in `" not in why else why
            return None
        finally:
            self.inside -= 1

    def _args(self, args: List[cst.Arg]) -> Optional[str]:
        for a in args:
            if a.keyword and a.keyword.value in ("dim", "dims", "out", "dtype", "device"):
                continue
            why = self._data(a.value)
            if why:
                return why
        return None

    def _dim_op(self, call: cst.Call, args: List[cst.Arg], op: str, shift: int) -> Optional[str]:
        position, default = DIM_OPS[op]
        given, dim = _dim_arg(args, position + shift)
        if not given:
            if default is None:
                return None if self.inside else f"`{_shown(call)}` may work on dim 0"
            return f"`{_shown(call)}` works on dim 0 (the rows)"
        if not _keeps_rows(dim):
            if _int(dim) == 0:
                return f"`{_shown(call)}` works on dim 0 (the rows)"
            return None if self.inside else f"`{_shown(call)}` may work on dim 0"
        return None

    def _reshaped(self, call: cst.Call, args: List[cst.Arg], op: str) -> Optional[str]:
        """view/reshape whose new dim 0 is a literal other than -1 (rows split or merged), unflatten
        of dim 0, repeat/tile along rows."""
        sizes = [a.value for a in args if not a.keyword and not a.star]
        if len(sizes) == 1 and isinstance(sizes[0], (cst.Tuple, cst.List)):
            sizes = [el.value for el in sizes[0].elements]
        first = sizes[0] if sizes else None
        if op == "unflatten":
            return None if _keeps_rows(first) else f"`{_shown(call)}` splits the rows"
        if op in ("repeat", "tile"):
            return None if _int(first) == 1 else f"`{_shown(call)}` repeats rows"
        if op == "expand":
            return None
        d = _int(first)
        return f"`{_shown(call)}` splits or merges the rows" if d is not None and d != -1 else None

    def _moved(self, call: cst.Call, args: List[cst.Arg], op: str) -> Optional[str]:
        dims = [a.value for a in args if not a.star][:2]
        if op == "permute":
            first = dims[0] if dims else None
            if isinstance(first, (cst.Tuple, cst.List)) and first.elements:
                first = first.elements[0].value
            return None if _int(first) == 0 else f"`{_shown(call)}` moves dim 0"
        if len(dims) == 2 and all(_keeps_rows(d) for d in dims):
            return None
        return f"`{_shown(call)}` moves dim 0"

    # -- names -------------------------------------------------------------------------
    def _name(self, node: cst.Name) -> Optional[str]:
        b = self.tree.binding(node, node.value)
        if not b.assignments and node.value not in _BUILTIN_NAMES:
            return f"`{node.value}` has no binding the row trace can see (a `match` capture, a star import, exec)"
        for a in b.assignments:
            if id(a) in self.seen:
                continue
            self.seen.add(id(a))
            why = self._assignment(a, node.value)
            if why:
                return why
        return None

    def _assignment(self, a: object, name: str) -> Optional[str]:
        scope = getattr(a, "scope", None)
        if isinstance(scope, (GlobalScope, ClassScope)) or scope is None:
            return None  # not built in this function: nothing to follow
        node = getattr(a, "node", None)
        if isinstance(node, cst.Param):
            if self.inside:
                return None  # the caller's argument is followed where the call is
            if isinstance(scope, FunctionScope) and isinstance(scope.node, cst.Lambda):
                return f"`{name}` is a lambda parameter: the rows it is called with cannot be traced to the batch"
            self.params.add((scope, name))
            return self._row_writes(scope, name)
        if isinstance(scope, ComprehensionScope):
            return f"`{name}` is a comprehension variable: each is a piece of some sequence, not the batch"
        if not isinstance(node, cst.Name):
            if node is None or isinstance(a, ImportAssignment) or isinstance(node, _NOT_TENSORS):  # (None: a builtin)
                return None  # import, def, class: not a tensor built here
            return f"`{name}` is bound by a `{type(node).__name__}`, a binding the row trace does not model"
        for anc in self.tree.ancestors(node):
            if isinstance(anc, (cst.For, cst.CompFor)):
                return f"`{name}` is a loop variable: each iteration holds a piece, not the batch"
            if isinstance(anc, (cst.Assign, cst.AnnAssign, cst.NamedExpr)):
                why = self._data(anc.value) if anc.value is not None else None
                if why:
                    return why
                break
            if isinstance(anc, cst.WithItem):
                return f"`{name}` is bound by `with ... as {name}`, whose rows cannot be traced"
            if isinstance(anc, cst.AugAssign):
                break  # `q *= scale`: elementwise, in place
            if isinstance(anc, (cst.BaseSmallStatement, cst.BaseStatement)):
                return f"`{name}` is bound by a `{type(anc).__name__}` statement, a binding the row trace does not model"
        return self._row_writes(scope, name)

    def _row_writes(self, scope, name: str) -> Optional[str]:
        """`name[idx] = value` and in-place row writes inside the function that owns name."""
        key = (id(scope), name)
        if key in self.seen:
            return None
        self.seen.add(key)
        owner = getattr(scope, "node", None)
        if owner is None:
            return None
        # a write through an alias is one to name (only names written at all can hold one: N kernel calls
        # in one function, each with its N aliases, cost N lookups, not N * N traces; `intersection`, as
        # `aliases & written` of a dict's keys walks all N aliases on every call)
        written = written_names(self.tree, owner)
        for n in [name, *sorted(aliases_in(self.tree, owner, name).intersection(written))]:
            why = self._writes_of(scope, owner, n)
            if why:
                return why
        host = host_write(self.tree, owner, name, lambda node: not off_path(self.tree, node, self.anchor, owner))
        if host is not None:  # (`q.numpy().sort(axis=0)` moves rows: round BC)
            return f"`{_brief(host, 80)}` may move `{name}`'s rows in place through a host array over its storage"
        return None

    def _writes_of(self, scope, owner: cst.CSTNode, name: str) -> Optional[str]:
        finder = writes_in(self.tree, owner, name)

        def on_path(node: cst.CSTNode) -> bool:
            return not off_path(self.tree, node, self.anchor, owner)

        for target, value in finder.subscripts:
            if self.tree.binding(target.value, name).scope_rank != self.tree.rank_of(scope) or not on_path(target):
                continue  # another function's `name`, or a write that cannot run before the traced call
            if not _first_index_keeps_rows(target):
                return f"`{_shown(target)} = ...` writes rows by index"
            why = self._data(value)
            if why:
                return why
        for call in filter(on_path, finder.inplace):
            return f"`{_shown(call)}` writes rows by index"
        for call in filter(on_path, finder.mutators):
            if not isinstance(call.func, cst.Attribute) or call.func.attr.value not in VALUE_INPLACE:
                return f"`{_shown(call)}` changes `{name}` in place, which may move its rows"
        for call in _mutating(self.tree, finder, self.outside):
            if on_path(call) and not self._pure(call, name):
                return (f"`{_brief(call, 80)}` hands `{name}` to `{get_full_name_for_node(call.func) or _code(call.func)}`, "
                        "which may change it in place; the row trace cannot follow it there")
        for call in filter(on_path, finder.outs):
            why = self._call(call)
            if why:
                return why
        for value in finder.copies:
            why = self._data(value) if on_path(value) else None
            if why:
                return why
        return None


def _own_returns(fdef: cst.FunctionDef) -> List[Union[cst.Return, cst.Yield]]:
    """`return` statements of fdef itself, not of defs, lambdas or classes inside it, and its `yield`s: what a
    generator yields is what its caller gets (round T; a `yield from`'s value is read as the `From` it is)."""
    out: List[Union[cst.Return, cst.Yield]] = []

    class _Finder(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return node is fdef

        def visit_Lambda(self, node: cst.Lambda) -> bool:
            return False

        def visit_ClassDef(self, node: cst.ClassDef) -> bool:
            return False

        def visit_Return(self, node: cst.Return) -> None:
            out.append(node)

        def visit_Yield(self, node: cst.Yield) -> None:
            out.append(node)

    fdef.visit(_Finder())
    return out


@dataclass
class _Writes:
    """What a function does to one name in place: `name[i] = v`, row-writing or value-changing
    methods, `out=name`, `name.copy_(v)`."""
    subscripts: List[Tuple[cst.Subscript, cst.BaseExpression]] = field(default_factory=list)
    inplace: List[cst.Call] = field(default_factory=list)
    changes: List[cst.CSTNode] = field(default_factory=list)  # in-place writes that change values (for the indices)
    outs: List[cst.Call] = field(default_factory=list)  # calls that write their result into name (`out=name`)
    copies: List[cst.BaseExpression] = field(default_factory=list)
    passed: List[cst.Call] = field(default_factory=list)  # calls that get the name itself as an argument
    mutators: List[cst.Call] = field(default_factory=list)  # `name.op_(...)`: in-place methods of the name
    escapes: List[cst.CSTNode] = field(default_factory=list)  # `self.x = name`: any code may write it there


class _RowWrites(cst.CSTVisitor):
    """The in-place writes of every name under one node, in one walk."""

    def __init__(self) -> None:
        self.by_name: Dict[str, _Writes] = {}
        self.called: Set[int] = set()  # the func nodes of the calls seen

    def _of(self, name: str) -> _Writes:
        return self.by_name.setdefault(name, _Writes())

    def _rewritten(self, name: str, node: cst.CSTNode) -> None:
        """A write of name's entries whose value is not read (`x.data = v`, `out=(v, x)`, `inplace=True`)."""
        self._of(name).changes.append(node)
        self._of(name).inplace.append(node)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        """An in-place method taken as a value (`fill = idx.masked_fill_`): whoever calls it writes (round P)."""
        if id(node) not in self.called and _viewed_name(node.value) and _in_place_name(node.attr.value):
            self._rewritten(_viewed_name(node.value), node)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        """`x += v` on a tensor writes it in place, as does `x[:, -1:] += v` or `sink += v` for a view `sink`."""
        name = _viewed_name(node.target)
        if name is not None:  # (values: q's rows stay where they are)
            self._of(name).changes.append(node)

    def visit_Assign(self, node: cst.Assign) -> None:
        for t in node.targets:
            tgt = t.target
            if isinstance(tgt, cst.Attribute) and tgt.attr.value != "data" and _viewed_name(node.value):
                self._of(_viewed_name(node.value)).escapes.append(tgt)  # `self._topk = idx`: written there (round O)
            if isinstance(tgt, cst.Attribute) and tgt.attr.value == "data" and _viewed_name(tgt.value):
                self._rewritten(_viewed_name(tgt.value), tgt)  # `x.data = v`: the storage swapped, round O
            if isinstance(tgt, cst.Subscript) and isinstance(tgt.value, cst.Name):
                self._of(tgt.value.value).subscripts.append((tgt, node.value))
            elif isinstance(tgt, cst.Subscript) and _viewed_name(tgt.value):  # `x[:, 0][m] = v`, `x.data[i] = v`:
                self._of(_viewed_name(tgt.value)).changes.append(tgt)  # x's entries (values: q's rows stay)

    def visit_Call(self, node: cst.Call) -> None:
        self.called.add(id(node.func))
        if get_full_name_for_node(node.func) == "getattr" and len(node.args) >= 2 and _viewed_name(node.args[0].value):
            key = node.args[1].value  # `getattr(idx, "masked_fill_")`, a computed name: a method that may write
            if not isinstance(key, cst.SimpleString) or _in_place_name(str(key.evaluated_value)):
                self._rewritten(_viewed_name(node.args[0].value), node)
        if _writes_arguments(node):  # `F.relu(idx, inplace=True)`, `partial(torch.Tensor.fill_, idx)`: round P
            for a in node.args:
                for n in filter(None, map(_viewed_name, _held(a.value))):
                    self._rewritten(n, node)
        for a in node.args:
            if a.keyword and a.keyword.value == "out" and isinstance(a.value, cst.Name):
                self._of(a.value.value).outs.append(node)
            elif a.keyword and a.keyword.value == "out":  # `out=(vals, idx)`, `out=idx[:, 0]`: round O
                held = [el.value for el in a.value.elements] if isinstance(a.value, (cst.Tuple, cst.List)) else [a.value]
                for n in filter(None, map(_viewed_name, held)):
                    self._rewritten(n, node)
            elif a.keyword is None or a.keyword.value != "out":
                for n in _passed_names(a.value):
                    self._of(n).passed.append(node)
        f = node.func
        if isinstance(f, cst.Name):  # `post()`: a name called may hold the tensor (a partial of a writer: round S)
            self._of(f.value).mutators.append(node)
        root = f.value if isinstance(f, cst.Attribute) else None
        while isinstance(root, cst.Attribute):
            root = root.value
        if isinstance(f, cst.Attribute) and isinstance(f.value, cst.Attribute) and isinstance(root, cst.Name) \
                and f.attr.value.endswith("_") and not f.attr.value.endswith("__") and root.value != "self":
            self._of(root.value).mutators.append(node)  # `ns.topk.masked_fill_(...)`: into what ns holds (round S)
        if isinstance(f, cst.Attribute) and _viewed_name(f.value) and _dunder_write(f.attr.value):
            self._of(_viewed_name(f.value)).mutators.append(node)  # `idx.__setitem__(k, v)`, `idx.__iand__(m)`
            self._of(_viewed_name(f.value)).changes.append(node)
        if isinstance(f, cst.Attribute) and not isinstance(f.value, cst.Name) and _viewed_name(f.value) \
                and f.attr.value.endswith("_") and not f.attr.value.endswith("__"):
            # `x[:, 0].masked_fill_(...)`, `x.data.fill_(-1)`, `x.view(...).copy_(...)`: into x's storage (its
            # entries; for q, a method off VALUE_INPLACE may move rows, as x's own would)
            self._of(_viewed_name(f.value)).mutators.append(node)
            self._of(_viewed_name(f.value)).changes.append(node)
        if isinstance(f, cst.Attribute) and isinstance(f.value, cst.Name):
            if f.attr.value.endswith("_") and not f.attr.value.endswith("__"):
                self._of(f.value.value).mutators.append(node)
            if f.attr.value in INPLACE_ROW_WRITES:
                self._of(f.value.value).inplace.append(node)
            elif f.attr.value == "copy_" and node.args:
                self._of(f.value.value).copies.append(node.args[0].value)
            if f.attr.value.endswith("_") and f.attr.value in INDEX_CHANGES:
                self._of(f.value.value).changes.append(node)


_NO_WRITES = _Writes()


def _viewed(e: cst.BaseExpression) -> cst.BaseExpression:
    """What `e` is the storage of, or views: through items and slices, `.data`/`.T`/..., and view methods
    (`x[:, 0]`, `x.data`, `self.buf.view(n, -1)[1:]` give `x`, `x`, `self.buf`)."""
    while True:
        if isinstance(e, cst.Subscript):
            e = e.value
        elif isinstance(e, cst.Attribute) and e.attr.value in TRANSPOSING_ATTRS | {"data", "real", "imag"}:
            e = e.value
        elif isinstance(e, cst.Call) and isinstance(e.func, cst.Attribute) and e.func.attr.value in TENSOR_VIEW_METHODS:
            e = e.func.value
        else:
            return e


def _viewed_name(e: cst.BaseExpression) -> Optional[str]:
    """The name whose storage `e` is, or views (_viewed); None for anything else."""
    base = _viewed(e)
    return base.value if isinstance(base, cst.Name) else None


def _passed_names(e: cst.BaseExpression) -> List[str]:
    """Names handed to a call as they are or as a view (an argument, an element of a tuple or list argument,
    `idx[:, 0, :]`, `idx.view(n, -1)`: the callee writes the same storage, round P)."""
    return [n for n in map(_viewed_name, _held(e)) if n is not None]


def _held(e: cst.BaseExpression) -> List[cst.BaseExpression]:
    """What an argument hands over: itself, or each element of a tuple, list or set, each value of a dict display
    (round R: `helper({"idx": idx})` hands idx on), starred too."""
    if isinstance(e, (cst.Tuple, cst.List, cst.Set)):
        return [x for el in e.elements for x in _held(el.value)]
    if isinstance(e, cst.Dict):
        return [x for el in e.elements for x in _held(el.value)]
    if isinstance(e, cst.StarredElement):
        return _held(e.value)
    callee = e.func.value if isinstance(e, cst.Call) and isinstance(e.func, cst.Name) else \
        e.func.attr.value if isinstance(e, cst.Call) and isinstance(e.func, cst.Attribute) else ""
    if callee in _WRAPPERS:  # `helper(zip(idx, starts))`, `helper(partial(f, idx))`: what the result holds (round S)
        return [e, *(x for a in e.args for x in _held(a.value))]
    return [e]


# Builtins and library callables whose result holds their arguments, or iterates over them.
_WRAPPERS = {"zip", "map", "filter", "enumerate", "reversed", "iter", "list", "tuple", "set", "frozenset", "dict",
             "sorted", "partial", "chain", "zip_longest", "starmap", "SimpleNamespace", "namedtuple", "MappingProxyType"}


# Dunder methods that only read (an operator's value, a comparison, an item): any other called on a tensor
# (`__setitem__`, `__iand__`, `__iadd__`, `__set__`) may write it.
_READING_DUNDERS = {"__getitem__", "__len__", "__contains__", "__iter__", "__bool__", "__index__", "__int__",
                    "__float__", "__repr__", "__str__", "__format__", "__hash__", "__array__", "__dlpack_device__",
                    *(f"__{op}__" for op in ("eq", "ne", "lt", "le", "gt", "ge", "add", "sub", "mul", "truediv",
                                             "floordiv", "mod", "and", "or", "xor", "neg", "pos", "abs", "invert",
                                             "radd", "rsub", "rmul", "rand", "ror", "rxor", "lshift", "rshift"))}


# The dtypes the indices may be converted to (`to`, `type`; a `view` by any dtype reinterprets the bytes): every
# index and -1 kept (`.to(torch.uint8)` makes -1 a valid 255, `.view(torch.int16)` splits each entry in two: round P).
INDEX_DTYPES = {"torch.int32", "torch.int", "torch.int64", "torch.long"}
# keywords of `to`/`type` that change no value
_PLACE_KEYWORDS = {"device", "non_blocking", "copy", "memory_format"}


def _other_dtype(call: cst.Call, first: int = 0) -> Optional[str]:
    """Why a conversion or view of the indices may change their values: a dtype other than INDEX_DTYPES, or an
    argument that may be one (a lone name handed to `view`/`to`/`type`); shapes, devices and `x.device` pass.
    `first`: the arguments before the conversion's own (the tensor of `torch.reshape(x, ...)`)."""
    op = (get_full_name_for_node(call.func) or "").rsplit(".", 1)[-1]
    if op not in ("to", "type", "view", "reshape"):
        return None
    args = [a for a in call.args if not a.star][first:]
    positional = [a.value for a in args if not a.keyword]
    for a in args:
        v = a.value
        name = get_full_name_for_node(v) or ""
        if a.keyword and a.keyword.value in _PLACE_KEYWORDS:
            continue
        if name.startswith("torch.") and name in INDEX_DTYPES and op != "view" or (
                op in ("view", "reshape") and _shape_part(v)):
            continue  # (`.view(torch.int32)` of int64 indices splits each entry in two: round AI)
        if op == "to" and (isinstance(v, cst.SimpleString) or isinstance(v, cst.Attribute) and v.attr.value == "device"):
            continue
        if op in ("view", "reshape") and len(positional) > 1 and isinstance(v, (cst.Name, cst.Attribute)) \
                and not name.startswith("torch."):
            continue  # a dimension among several (`view(n, -1)`)
        return f"`{_brief(call, 80)}` may convert the indices to a dtype that does not keep every index and -1"
    return None


def _regroups(call: cst.Call, first: int = 0) -> Optional[str]:
    """Why a view or reshape of the indices may regroup each row's entries (`[s, k]` to `[s, h, k / h]`: the kernel
    reads the first group, the metadata counts the whole row: round AK); only `[s, k]` and `[s, 1, k]` pass, the last
    size `-1` or the indices' own last (`x.shape[-1]`, `x.size(-1)`), or the rows `-1` (inferred); an unsqueeze or
    squeeze only at dim 1 or -2 (round AV)."""
    op = (get_full_name_for_node(call.func) or "").rsplit(".", 1)[-1]
    if op in ("unsqueeze", "squeeze"):  # (only an axis before the entries': `unsqueeze(-1)` makes each entry a
        dims = [a.value for a in call.args if not a.star][first:]  # row of one, the kernel's width 1: round AV)
        return None if len(dims) == 1 and _int(dims[0]) in (1, -2) else \
            f"`{_brief(call, 80)}` may move the entries off the last axis (only a dim of 1 or -2 keeps them)"
    if op not in ("view", "reshape"):
        return None
    parts = [a.value for a in call.args if not a.keyword and not a.star][first:]
    if len(parts) == 1 and isinstance(parts[0], (cst.Tuple, cst.List)):
        parts = [el.value for el in parts[0].elements]
    if any(isinstance(p, cst.Attribute) and p.attr.value.startswith(("int", "long", "float")) for p in parts):
        return None  # (a dtype: _other_dtype's matter)

    def whole(p: cst.BaseExpression) -> bool:
        return _int(p) == -1 or isinstance(p, cst.Subscript) and _code(p).replace(" ", "").endswith(".shape[-1]") \
            or isinstance(p, cst.Call) and _code(p).replace(" ", "").endswith(".size(-1)")
    if len(parts) in (2, 3) and (whole(parts[-1]) or _int(parts[0]) == -1) and (len(parts) == 2 or _int(parts[1]) == 1):
        return None  # (rows inferred, `view(-1, 1, 64)`: another width changes their count, which the kernel checks)
    return f"`{_brief(call, 80)}` may regroup each row's entries (only [s, k] and [s, 1, k] keep them)"


def _shape_part(v: cst.BaseExpression) -> bool:
    """An integer literal (`-1` too), `x.shape[i]`, `x.size(i)`, arithmetic of those, or a tuple of them."""
    if isinstance(v, cst.UnaryOperation):
        return _shape_part(v.expression)
    if isinstance(v, cst.Integer):
        return True
    if isinstance(v, (cst.Tuple, cst.List)):
        return all(_shape_part(el.value) or isinstance(el.value, cst.Name) for el in v.elements)
    if isinstance(v, cst.BinaryOperation):
        return all(_shape_part(x) or isinstance(x, cst.Name) for x in (v.left, v.right))
    if isinstance(v, cst.Subscript) and isinstance(v.value, cst.Attribute) and v.value.attr.value == "shape":
        return True
    return isinstance(v, cst.Call) and isinstance(v.func, cst.Attribute) and v.func.attr.value == "size"


def _engine_import(tree: Tree, func: cst.BaseExpression) -> bool:
    """Is every import binding that may reach the name the engine's (a fallback `from forkops import f` after a
    `try` of sglang's may run instead: round Q)?"""
    names = imported_names(tree, func)
    return bool(names) and all(engine_module(qn) for qn in names)


def _dunder_write(op: str) -> bool:
    return op.startswith("__") and op.endswith("__") and op not in _READING_DUNDERS


def _in_place_name(op: str) -> bool:
    """A method or function name that writes its receiver or first argument: `op_`, or a writing dunder."""
    return (op.endswith("_") and not op.endswith("__")) or _dunder_write(op)


# torch.nn.functional ops with an `inplace` parameter, by its position: `F.relu(x, True)` writes x.
_INPLACE_SLOT = {"relu": 1, "relu6": 1, "selu": 1, "silu": 1, "mish": 1, "hardswish": 1, "hardsigmoid": 1,
                 "elu": 2, "celu": 2, "leaky_relu": 2, "threshold": 3, "hardtanh": 3, "dropout": 3,
                 "alpha_dropout": 3, "feature_alpha_dropout": 3, "dropout1d": 3, "dropout2d": 3, "dropout3d": 3,
                 "rrelu": 4}
# torch functions named like no in-place op that change the tensors they are handed (round R: swap_tensors swaps two
# tensors' contents and metadata in place)
_WRITING_FUNCTIONS = {"swap_tensors", "set_", "_set_data"}
# numpy writes into the arrays it is handed (`np.putmask(a, m, v)`, `np.copyto(a, b)`): an array of a tensor's
# `.numpy()` shares its storage
_WRITING_ROOTS = {"numpy", "np"}


def _writes_arguments(call: cst.Call) -> bool:
    """Does the call write the tensors it is handed, whatever its name says: an `inplace` keyword not literally
    False, `inplace` given by position, an in-place method handed as a value (`partial(torch.Tensor.fill_, x)`,
    `map(torch.Tensor.zero_, xs)`), or numpy."""
    name = get_full_name_for_node(call.func) or ""
    positional = [a for a in call.args if not a.keyword and not a.star]
    if any(a.keyword and a.keyword.value == "inplace" and not (isinstance(a.value, cst.Name) and a.value.value == "False")
           for a in call.args):
        return True
    slot = _INPLACE_SLOT.get(name.rsplit(".", 1)[-1])
    if slot is not None and (len(positional) > slot or any(a.star for a in call.args)):
        return True
    if name.split(".")[0] in _WRITING_ROOTS or name.rsplit(".", 1)[-1] in _WRITING_FUNCTIONS:
        return True
    return any(isinstance(a.value, (cst.Attribute, cst.Name)) and _in_place_name(
        (get_full_name_for_node(a.value) or "").rsplit(".", 1)[-1]) for a in call.args)


# In-place methods that change values, never which row is where: `q.mul_(scale)` keeps q's rows.
# Any other `q.op_(...)` (`t_`, `transpose_`, `resize_`, `set_`, `index_copy_`, ...) may move them.
VALUE_INPLACE = {"mul_", "add_", "sub_", "div_", "clamp_", "clamp_min_", "clamp_max_", "clip_", "zero_", "fill_",
                 "neg_", "abs_", "exp_", "sqrt_", "rsqrt_", "pow_", "tanh_", "sigmoid_", "relu_", "masked_fill_",
                 "requires_grad_", "nan_to_num_", "round_", "copy_"}
# Calls that never change their arguments in place: Python's own builtins that read a value, and
# logging. (torch functions and methods whose names do not end in `_` change no argument but `out=`.)
NON_MUTATING_BUILTINS = {"len", "isinstance", "print", "id", "type", "str", "repr", "hash", "bool", "int", "float",
                         "format", "getattr", "hasattr", "callable", "max", "min", "tuple", "list", "iter", "next",
                         "zip", "enumerate", "range"}
LOGGING_ROOTS = {"logger", "logging", "log", "LOGGER", "_logger", "warnings"}


# What a write's place in its function says of whether it can run before the traced call, in one call of
# the function (the premise of _returned too). Only a function's own straight-line code is placed: inside a
# loop, a nested def, lambda, class or comprehension, code may run in any order, so it is on every path.
_LOOPS_AND_SCOPES = (cst.For, cst.While, cst.FunctionDef, cst.Lambda, cst.ClassDef, cst.ListComp, cst.SetComp,
                     cst.DictComp, cst.GeneratorExp)
_EXITS = (cst.Return, cst.Raise)


def _placement(tree: Tree, node: cst.CSTNode, owner: cst.CSTNode) -> Optional[List[cst.CSTNode]]:
    """The statements on the way up from node to owner (the innermost simple one first, or, for node in a
    compound statement's header (`if f(q):`), that whole statement) where node lies in owner's own
    straight-line code; None where a loop or a nested scope comes between (or node is not under owner).
    Once per node and owner."""
    cache = tree.__dict__.setdefault("_placement", {})
    key = (id(node), id(owner))
    if key in cache:
        return cache[key]
    chain, up = [], tree.parent.get(node)
    while up is not None and up is not owner:
        if isinstance(up, _LOOPS_AND_SCOPES):
            break
        if isinstance(up, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
            chain.append(up)
        up = tree.parent.get(up)
    cache[key] = chain if up is owner and chain else None
    return cache[key]


def _after_exit(tree: Tree, stmt: cst.CSTNode) -> bool:
    """Does a `return` or `raise` come before `stmt` in its own block (its line, or its suite)? Then it never
    runs: code after a return in the same branch is on no path."""
    cache = tree.__dict__.setdefault("_first_exit", {})

    def first_exit(block: cst.CSTNode, statements: bool) -> Optional[int]:
        """The order of block's first statement (or small statement, on one line) that leaves it, once per block."""
        if id(block) not in cache:
            body = getattr(block, "body", ())  # (an `elif`'s parent is an If, whose body is no statement list)
            body = body if isinstance(body, (list, tuple)) else ()
            found = (st for st in body if isinstance(st, _EXITS)) if not statements else (
                st for st in body if isinstance(st, cst.SimpleStatementLine) and any(isinstance(x, _EXITS) for x in st.body))
            cache[id(block)] = next((tree.order[id(st)] for st in found), None)
        return cache[id(block)]

    line = tree.parent.get(stmt)
    if isinstance(stmt, cst.BaseSmallStatement) and isinstance(line, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
        first = first_exit(line, False)
        if first is not None and tree.order[id(stmt)] > first:
            return True
        stmt = line
    first = first_exit(tree.parent.get(stmt), True)
    return first is not None and tree.order[id(stmt)] > first


def off_path(tree: Tree, write: cst.CSTNode, anchor: Optional[cst.CSTNode], owner: cst.CSTNode) -> bool:
    """Can `write` (an in-place write, or a call handed the tensor) never run before `anchor` (the call the
    trace is for), in any call of the function `owner` that holds both? Only where it never runs at all: it
    comes after a `return` or `raise` in its block (or in a block around it) of owner's own straight-line
    code. A write in another branch of an `if` than the call, or after the call, runs before the call the
    next time owner runs, and the tensor it writes may be the one that call reads (a parameter the layers
    share, an attribute, a buffer kept between steps): on the path."""
    if anchor is None:
        return False
    w = _placement(tree, write, owner)
    if w is None or _placement(tree, anchor, owner) is None:
        return False
    return any(_after_exit(tree, st) for st in w)


def _returned(tree: Tree, call: cst.Call) -> bool:
    """Is `call` what a `return` of its function hands back (`return f(...)`, `return await f(...)`, a branch of
    `return f(...) if c else g(...)`)? Then
    nothing after it runs in that call of the function (sglang 0.5.12's `if ...: return
    self._forward_aiter_extend(q_all=q_all, page_table_1=...)`). A call inside the returned expression runs
    before the rest of it: `return attend(q, kv, _coalesce_(idx))` writes before attend reads (round R).
    Assumed, not proven: what it is handed is this call's own (each layer computes its q and its top-k), so
    a write there reaches no later call; red team C's helper that masks indices shared across layers in a
    returned branch goes unseen (results/red-team.md)."""
    node, up = call, tree.parent.get(call)
    while isinstance(up, cst.Await) or isinstance(up, cst.IfExp) and node is not up.test:  # (a branch runs last)
        node, up = up, tree.parent.get(up)
    return isinstance(up, cst.Return)


def may_mutate(tree: Tree, call: cst.Call, pure: Callable[[cst.Call], bool], outside: Optional[Outside] = None) -> bool:
    """May `call` move the rows (or change the entries) of an argument it is handed, in place?
    Default-deny: only torch's functions and methods without a trailing `_`, the builtins that read,
    logging, the engine functions on the row allowlist, a function imported from outside the project
    (a library: libraries write results to outputs; an in-place rotary embedding changes values, not
    rows), and what `pure` says (the traced call itself, a def of the project that writes none of its
    parameters) change nothing. Past `pure`, the answer is the call's own: worked out once per call and
    `outside` (every kernel call's trace asks it of every call handed q)."""
    cache = tree.__dict__.setdefault("_may_mutate", {})
    key = (id(call), id(getattr(outside, "__self__", None)), id(getattr(outside, "__func__", outside)))
    if key not in cache:
        cache[key] = _may_mutate(tree, call, outside)
    return cache[key] and not pure(call)  # the call's own answer first: `pure` reads defs, once it must


def _mutating(tree: Tree, finder: "_Writes", outside: Optional[Outside]) -> List[cst.Call]:
    """The calls handed a name (finder.passed) whose own answer is that they may change it: worked out once
    per name and tree, so that each kernel call's trace reads only those (5,000 calls handed one q: the
    other calls' answers are not asked again for each of them)."""
    cache = tree.__dict__.setdefault("_mutating", {})
    key = (id(finder), id(getattr(outside, "__self__", None)), id(getattr(outside, "__func__", outside)))
    if key not in cache:
        cache[key] = [c for c in finder.passed if may_mutate(tree, c, lambda _: False, outside)]
    return cache[key]


def spreads_keywords(call: cst.Call) -> bool:
    """Does the call spread a `**mapping`, which may pass `out=` (a write no keyword spells: round BC)?"""
    return any(a.star == "**" for a in call.args)


def _spread_values(tree: Tree, e: cst.BaseExpression, depth: int = 0, outs: bool = False) -> List[cst.BaseExpression]:
    """The values a `**mapping` may hold, where the module spells them: a dict display's, `dict(...)`'s, a name's
    assigned ones (`io = {"out": buf} if reuse else {}`); none where it does not (round BC). `outs`: only those it
    may pass as `out=` (under the key "out" or a key not spelled)."""
    if depth > 4:
        return []
    if isinstance(e, cst.Dict):
        return [el.value for el in e.elements if not (outs and isinstance(el, cst.DictElement) and isinstance(
            el.key, cst.SimpleString) and el.key.evaluated_value != "out")]
    if isinstance(e, cst.IfExp):
        return _spread_values(tree, e.body, depth + 1, outs) + _spread_values(tree, e.orelse, depth + 1, outs)
    if isinstance(e, cst.Call) and get_full_name_for_node(e.func) == "dict":
        return [a.value for a in e.args if not (outs and a.keyword is not None and a.keyword.value != "out")]
    if isinstance(e, cst.Name):
        return [v for value in tree.assigned_values(e, e.value) if value is not None
                for v in _spread_values(tree, value, depth + 1, outs)]
    return []


def _may_mutate(tree: Tree, call: cst.Call, outside: Optional[Outside]) -> bool:
    func = call.func
    name = get_full_name_for_node(func) or ""
    op = name.rsplit(".", 1)[-1]
    root = name.split(".")[0]
    if _returned(tree, call):
        return False
    if op.endswith("_"):
        return True  # in place by name, wherever it comes from (`torch.Tensor.copy_(q, ...)`)
    names = imported_names(tree, func)
    if op in IN_PLACE_LIBRARY and any(qn.startswith("torch.distributed.") for qn in names):
        return True  # (a collective fills the tensor it is handed: round W)
    if spreads_keywords(call) and not (isinstance(func, cst.Name) and op in NON_MUTATING_BUILTINS) \
            and root not in LOGGING_ROOTS:
        return True  # (round BC: `torch.clamp(idx, min=0, **io)` with `io = {"out": idx}` writes idx)
    if names and outside is not None and all(outside(qn) and not qn.startswith("operator.") and ".ops." not in qn
                                             for qn in names):
        return False  # (a library writes results to outputs; `operator.setitem(idx, ...)` writes, round O)
    if isinstance(func, cst.Name) and op in NON_MUTATING_BUILTINS:
        return False
    if root in LOGGING_ROOTS:
        return False
    if _torch_function(func, name) and not op.endswith("_") and ".ops." not in name:
        return False  # (`torch.ops.fork.add_sink(idx)`: a custom op may mutate its arguments, round O)
    if isinstance(func, cst.Attribute) and not op.endswith("_") and isinstance(func.value, (cst.Call, cst.Subscript)) \
            and _viewed_name(func.value) is not None:
        return False  # a method of a view of a name (`q.view(...).copy_` is the receiver's, checked there); an
        # object's method (`self.balancer.balance(q, idx)`, `fork_ops.topk.add_sink(idx)`: round O) may write
    if op in ROW_KEEPING_FUNCTIONS and _engine_import(tree, func):
        return False
    return True


# Method calls whose result never shares storage with the receiver or the arguments (a copy, a new
# tensor, a reduction, a size): everything else may return a view, or the receiver itself
# (`.contiguous()`, `.to(dtype)` when nothing changes).
COPYING_METHODS = {"clone", "new_zeros", "new_empty", "new_ones", "new_full", "new_tensor", "index_select",
                   "masked_select", "masked_fill", "gather", "sum", "mean", "amax", "amin", "cumsum", "argsort",
                   "nonzero", "repeat", "repeat_interleave", "take", "take_along_dim"} | NO_DATA_METHODS
COPYING_FUNCTIONS = {"cat", "concat", "stack", "hstack", "vstack", "index_select", "gather", "masked_select",
                     "take", "take_along_dim", "repeat_interleave", "cumsum", "argsort", "where", "minimum",
                     "maximum", "clamp", "remainder"} | FRESH_FUNCTIONS
# tensor methods whose result is the receiver or a view of it, never one of their arguments
TENSOR_VIEW_METHODS = {"view", "view_as", "reshape", "reshape_as", "narrow", "select", "expand", "expand_as", "permute",
                       "transpose", "swapaxes", "movedim", "unsqueeze", "squeeze", "flatten", "unflatten", "split",
                       "chunk", "unbind", "tensor_split", "t", "diagonal", "as_strided", "contiguous", "to", "float", "ravel",
                       "half", "bfloat16", "int", "long", "type", "detach", "cuda", "cpu", "flip", "roll", "numpy",
                       # round AB: torch's other views (`unfold`, `swapdims`), and methods that may return self
                       "unfold", "swapdims", "moveaxis", "adjoint", "conj", "resolve_conj", "resolve_neg",
                       "positive", "hsplit", "vsplit", "dsplit", "split_with_sizes", "unsafe_split", "unsafe_chunk",
                       "rename", "refine_names", "align_as", "align_to", "as_subclass", "type_as", "coalesce",
                       "to_dense", "values", "indices", "real", "imag"}
NON_TENSOR_BUILTINS = {"len", "int", "float", "bool", "str", "isinstance", "range", "print", "id", "hash"}


def may_share(e: Optional[cst.CSTNode]) -> Set[str]:
    """The names whose storage the value of `e` may share (be, or be a view of). Default-deny: an
    expression this does not know (an unknown call: it may hand back an argument) shares with every
    name it mentions; only copies, fresh tensors, arithmetic and sizes share with none."""
    if e is None:
        return set()
    if isinstance(e, cst.Name):
        return {e.value}
    if isinstance(e, (cst.Dict, cst.Set, cst.DictComp, cst.SetComp, cst.ListComp, cst.GeneratorExp)):
        return {n.value for n in _names_in(e)}  # a container holds what it names (round S); (a lambda's own writes
        # are read where it is written, as any nested code's are)
    if isinstance(e, cst.BinaryOperation):
        return _joined(e)
    if isinstance(e, cst.UnaryOperation) and _passed_through(e):
        return may_share(e.expression)
    if isinstance(e, _NO_ROWS) or isinstance(e, (cst.BinaryOperation, cst.UnaryOperation)):
        return set()
    if isinstance(e, cst.Subscript):
        return may_share(e.value)
    if isinstance(e, cst.Attribute):
        if e.attr.value in NO_DATA_ATTRS:
            return set()
        return may_share(e.value) if e.attr.value in TRANSPOSING_ATTRS | {"real", "imag", "data"} else set()
    if isinstance(e, (cst.Tuple, cst.List)):
        return set().union(*(may_share(x.value) for x in e.elements)) if e.elements else set()
    if isinstance(e, cst.StarredElement):
        return may_share(e.value)
    if isinstance(e, cst.IfExp):
        return may_share(e.body) | may_share(e.orelse)
    if isinstance(e, cst.BooleanOperation):
        return may_share(e.left) | may_share(e.right)
    if isinstance(e, cst.NamedExpr):
        return may_share(e.value) | may_share(e.target)
    if isinstance(e, cst.Call):
        f = e.func
        args = set().union(*(may_share(a.value) for a in e.args)) if e.args else set()
        if isinstance(f, cst.Attribute):
            name = get_full_name_for_node(f) or ""
            if name.startswith(TORCH_PREFIXES) and name.count(".") == 1:  # torch.fn(...)
                return set() if f.attr.value in COPYING_FUNCTIONS else args
            if f.attr.value in COPYING_METHODS:
                return set()
            if f.attr.value in TENSOR_VIEW_METHODS:  # a view of the receiver: its arguments are sizes and dims
                return may_share(f.value)
            return may_share(f.value) | args
        if isinstance(f, cst.Name) and f.value in NON_TENSOR_BUILTINS:
            return set()
        return args
    return {n.value for n in _names_in(e)}


class _Aliases(cst.CSTVisitor):
    """Which names may share storage, under one node: a points-to relation over its bindings
    (assignment, walrus, `for`, `with`, a comprehension's `for`), each name its own object and also
    whatever its values may_share. Two names alias if they may point to one object."""

    def __init__(self) -> None:
        self.binds: List[Tuple[str, Set[str]]] = []

    def _bind(self, targets, value, element: bool = False) -> None:
        sources = may_share(value) if not element else _iterated(value)
        for t in targets:
            for n in _names_in(t) if isinstance(t, (cst.Tuple, cst.List, cst.StarredElement)) else [_filled(t)]:
                if isinstance(n, cst.Name):
                    self.binds.append((n.value, sources))

    def visit_Call(self, node: cst.Call) -> None:
        """`c.append(v)`, `c.update(...)`, `c.setdefault(k, v)`: c holds what each argument may share (round AZ)."""
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in CONTAINER_FILLS:
            self._bind([func.value], cst.Tuple([cst.Element(a.value) for a in node.args]))

    def visit_Assign(self, node: cst.Assign) -> None:
        self._bind([t.target for t in node.targets], node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._bind([node.target], node.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._bind([node.target], node.value)  # `c |= {"topk": idx}`, `c += [idx]`: c holds it too (round BA)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._bind([node.target], node.value)

    def visit_For(self, node: cst.For) -> None:
        self._bind([node.target], node.iter, element=True)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self._bind([node.target], node.iter, element=True)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self._bind([node.asname.name], node.item)

    def visit_Param(self, node: cst.Param) -> None:
        if node.default is not None and not (isinstance(node.default, cst.Name) and node.default.value in _BUILTIN_NAMES):
            self._bind([node.name], node.default)  # `def step(sel=idx)`: a nested def's default holds idx (round S)

    def points_to(self) -> Dict[str, Set[str]]:
        """Each name's objects; a source `*n` (a join's operand, _joined) gives what n points to but n itself."""
        pts: Dict[str, Set[str]] = {}
        for target, sources in self.binds:
            pts.setdefault(target, {target})
            for src in sources:
                pts.setdefault(src.lstrip("*"), {src.lstrip("*")})

        def held(x: str) -> Set[str]:
            return pts[x[1:]] - {x[1:]} if x.startswith("*") else pts[x]
        grew = True
        while grew:
            grew = False
            for target, sources in self.binds:
                new = set().union(*(held(x) for x in sources)) - pts[target] if sources else set()
                if new:
                    pts[target] |= new
                    grew = True
        return pts


# methods that put their arguments into the container they are called on (_Aliases.visit_Call)
CONTAINER_FILLS = {"append", "appendleft", "extend", "extendleft", "insert", "add", "update", "setdefault",
                   "__setitem__", "put", "put_nowait"}


def _filled(t: cst.BaseExpression) -> cst.BaseExpression:
    """What a store into t gives a value: t, or for an item (`c[k] = v`, `c[k][j] = v`) the container holding it,
    so an in-place write through `c[k]` is one to v (round AZ)."""
    return _viewed(t) if isinstance(t, cst.Subscript) else t


def _iterated(e: cst.BaseExpression) -> Set[str]:
    """What the elements of an iterated value may share: a literal's elements, else the value's."""
    return may_share(e)


def _names_in(node: cst.CSTNode) -> List[cst.Name]:
    out: List[cst.Name] = []

    class _V(cst.CSTVisitor):
        def visit_Name(self, n: cst.Name) -> None:
            out.append(n)

        def visit_Attribute(self, n: cst.Attribute) -> bool:
            n.value.visit(self)  # `x.attr`: x, not attr
            return False

    node.visit(_V())
    return out


def aliases_in(tree: Tree, owner: cst.CSTNode, name: str) -> Set[str]:
    """The names under owner that may point to an object `name` may point to (_Aliases), without name."""
    cache = tree.__dict__.setdefault("_aliases", {})
    pts = cache.get(id(owner))
    if pts is None:
        found = _Aliases()
        owner.visit(found)
        pts = cache[id(owner)] = found.points_to()
    answers = tree.__dict__.setdefault("_aliases_of", {})  # one answer per name: every trace of it shares it
    key = (id(owner), name)
    if key not in answers:
        mine = pts.get(name)
        answers[key] = frozenset(other for other, theirs in pts.items() if other != name and theirs & mine) if mine else frozenset()
    return answers[key]


def host_write(tree: Tree, owner: cst.CSTNode, name: str, on_path: Callable[[cst.CSTNode], bool]) -> Optional[cst.Call]:
    """The first method call on the path that may write `name` (or what shares its storage) through a host array
    over it (host_array_writes: round BC)."""
    writes, pts = host_array_writes(tree, owner)
    mine = pts.get(name, {name})
    names = {name} | {other for other, theirs in pts.items() if theirs & mine}
    return next((c for c, shared in writes if shared & names and on_path(c)), None)


# What makes a host array that may share a tensor's storage (round BC): `t.numpy()`, `t.__array__()`, numpy's
# functions (`np.asarray(t)`, `np.from_dlpack(t)`, `np.frombuffer(...)`), `memoryview(...)`.
_HOST_MAKING_METHODS = {"numpy", "__array__"}
# A host array's methods that write nothing; any other may write in place with no trailing `_` (`host.sort()`,
# `host[r].fill(-1)`, `host.put(...)`, `host.resize(...)`: default-deny, round BC).
HOST_ARRAY_READS = {"copy", "tolist", "tobytes", "item", "astype", "sum", "min", "max", "mean", "any", "all", "argmax",
                    "argmin", "argsort", "nonzero", "reshape", "view", "ravel", "flatten", "transpose", "squeeze", "cast"}


def _host_maker(call: cst.Call) -> bool:
    """Is the call itself one making a host array (`t.numpy()`, `np.asarray(t)`, `memoryview(b)`)?"""
    name = get_full_name_for_node(call.func) or ""
    return name.split(".")[0] in _WRITING_ROOTS or name == "memoryview" or (
        isinstance(call.func, cst.Attribute) and call.func.attr.value in _HOST_MAKING_METHODS)


def _makes_host_array(e: cst.CSTNode) -> bool:
    """Does e make, anywhere in it, a host array that may share a tensor's storage?"""
    stack = [e]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Call) and _host_maker(node):
            return True
        stack.extend(node.children)
    return False


class _HostBinds(_Aliases):
    """_Aliases, the value each bind of a plain name takes (None for an item or unpacking), and the names bound to a
    value that makes a host array anywhere in it (`host = idx.numpy()`, `views = {"h": idx.numpy()}`: round BC)."""

    def __init__(self) -> None:
        super().__init__()
        self.made: Set[str] = set()
        self.values: List[Optional[cst.BaseExpression]] = []  # (the value of each of self.binds, where plain)

    def _bind(self, targets, value, element: bool = False) -> None:
        for t in targets:
            before = len(self.binds)
            super()._bind([t], value, element)
            self.values += [value if isinstance(t, cst.Name) else None] * (len(self.binds) - before)
        if value is not None and _makes_host_array(value):
            self.made |= {n.value for t in targets for n in _names_in(t)}


def _host_array(e: cst.BaseExpression, arrays: Set[str]) -> bool:
    """Is e itself a host array (not a container holding one): a maker's result or a name in `arrays`, through items,
    views and copies (`idx.numpy()[0]`, `np.asarray(idx).reshape(-1)`, `host.copy()`)?"""
    while True:
        if isinstance(e, cst.Call) and _host_maker(e):
            return True
        if isinstance(e, cst.Subscript):
            e = e.value
        elif isinstance(e, cst.Call) and isinstance(e.func, cst.Attribute) and \
                e.func.attr.value in TENSOR_VIEW_METHODS | {"copy"}:
            e = e.func.value
        else:
            return isinstance(e, cst.Name) and e.value in arrays


def _host_shared(e: cst.BaseExpression, arrays: Set[str]) -> Set[str]:
    """What e may share (may_share), but nothing past a host array's `.copy()` (`idx.numpy().copy()`: a fresh
    array; a dict's or list's `.copy()` still holds what it held)."""
    node = e
    while True:
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "copy" \
                and not node.args and _host_array(node.func.value, arrays):
            return set()
        if isinstance(node, cst.Subscript):
            node = node.value
        elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) \
                and node.func.attr.value in TENSOR_VIEW_METHODS:
            node = node.func.value
        else:
            return may_share(e)


def host_array_writes(tree: Tree, owner: cst.CSTNode) -> Tuple[List[Tuple[cst.Call, Set[str]]], Dict[str, Set[str]]]:
    """(call, the names whose storage it may write) for each method but HOST_ARRAY_READS called under owner on a host
    array (a numpy view, a memoryview, or a name sharing one: `row = host[r]`): numpy's methods write in place
    without a trailing `_` (`host.sort(axis=-1)`, `host[r].fill(-1)`: round BC); and the points-to of owner's names
    with a host array's copy fresh (`plan = idx.numpy().copy()` shares nothing)."""
    cache = tree.__dict__.setdefault("_host_array_writes", {})
    if id(owner) not in cache and not _makes_host_array(owner):
        cache[id(owner)] = ([], {})  # (no host array made: the common case, read no further)
    if id(owner) not in cache:
        found = _HostBinds()
        owner.visit(found)
        hosts, arrays = set(found.made), set()
        for _ in range(len(found.binds) + 1):  # (what shares a host array's storage is one too; a fixpoint)
            hosts_new = {t for t, sources in found.binds if any(s.lstrip("*") in hosts for s in sources)}
            arrays_new = {t for (t, _), v in zip(found.binds, found.values) if v is not None and _host_array(v, arrays)}
            if hosts_new <= hosts and arrays_new <= arrays:
                break
            hosts, arrays = hosts | hosts_new, arrays | arrays_new
        fresh = _Aliases()
        fresh.binds = [(t, sources if v is None else _host_shared(v, arrays) & sources)
                       for (t, sources), v in zip(found.binds, found.values)]
        writes = [(c, _host_shared(c.func.value, arrays)) for c in tree.find(cst.Call, None, owner)
                  if isinstance(c.func, cst.Attribute) and c.func.attr.value not in HOST_ARRAY_READS
                  and (_makes_host_array(c.func.value) or may_share(c.func.value) & hosts)]
        writes += [(c, shared) for c in tree.find(cst.Call, None, owner) if local_defs(tree, c.func)
                   for shared in [_host_handed(c, arrays, hosts)] if shared]
        cache[id(owner)] = (writes, fresh.points_to() if writes else {})
    return cache[id(owner)]


def _host_handed(call: cst.Call, arrays: Set[str], hosts: Set[str]) -> Set[str]:
    """What the host arrays a call hands a def of the module may share: that def's numpy methods write its parameter
    with no trailing `_` (`slots.sort(axis=-1)` in a helper handed `idx.numpy()`: round BD), so handing one is a write."""
    return set().union(*(_host_shared(a.value, arrays) for a in call.args
                         if _makes_host_array(a.value) or _host_array(a.value, arrays) or may_share(a.value) & hosts))


def attribute_write(tree: Tree, attr: str) -> Optional[cst.CSTNode]:
    """The first in-place write in the module into a tensor held as `<anything>.attr`, or read from one into a
    local first (`buf = self.attr; buf.masked_fill_(...)`): an attribute outlives the call that reads it, so
    whatever writes it, wherever and whenever, may come before (receivers are not told apart: any object's
    `.attr`). In-place means a method ending in `_`, `out=`, or an item or slice assigned."""
    cache = tree.__dict__.setdefault("_attribute_writes", {})
    if attr not in cache:
        cache[attr] = _attribute_write(tree, attr)
    return cache[attr]


def _attribute_write(tree: Tree, attr: str) -> Optional[cst.CSTNode]:
    def holds(e: cst.BaseExpression, locals_: Set[str]) -> bool:
        base = _viewed(e)
        return isinstance(base, cst.Attribute) and base.attr.value == attr or (
            isinstance(base, cst.Name) and base.value in locals_)

    nodes = tree.find((cst.Call, cst.Assign, cst.AugAssign))  # the whole module, defs' skipped bodies too
    locals_ = {t.target.value for n in nodes if isinstance(n, cst.Assign) for t in n.targets
               if isinstance(t.target, cst.Name) and holds(n.value, set())}
    for n in nodes:
        if isinstance(n, cst.Call):
            func = n.func
            if isinstance(func, cst.Attribute) and func.attr.value.endswith("_") and holds(func.value, locals_):
                return n
            if any(a.keyword is not None and a.keyword.value == "out" and holds(a.value, locals_) for a in n.args):
                return n
            if any(holds(v, locals_) for a in n.args if a.star == "**" for v in _spread_values(tree, a.value)):
                return n  # (`**{"out": self.topk}`, a name bound to such a display: round BC)
        else:
            targets = [t.target for t in n.targets] if isinstance(n, cst.Assign) else [n.target]
            if any(isinstance(t, cst.Subscript) and holds(t, locals_) for t in targets):
                return n
    return None


def written_names(tree: Tree, owner: cst.CSTNode) -> Set[str]:
    """The names writes_in finds a write of under owner (every other name's writes are none)."""
    writes_in(tree, owner, "")
    return tree.__dict__["_row_writes"][id(owner)].by_name.keys()


def _pure_torch(call: Optional[cst.CSTNode]) -> bool:
    """`torch.<f>(...)` of a function that does not write what it is handed (no trailing `_`, no `out=`)."""
    if not isinstance(call, cst.Call) or not isinstance(call.func, cst.Attribute):
        return False
    return _code(call.func.value) == "torch" and not call.func.attr.value.endswith("_") \
        and not any(a.keyword is not None and a.keyword.value == "out" for a in call.args) \
        and not spreads_keywords(call)  # (a `**mapping` may pass `out=`: round BC)


def _passed_through(e: cst.BaseExpression) -> List[cst.BaseExpression]:
    """The operands an operation hands back as they are (round AV): `+t` is t itself; a list or tuple display
    repeated or joined (`[idx] * n`, `[idx] + rest`) holds the very objects it names. Arithmetic on tensors makes
    new ones: none. (may_share reads named operands too: _joined.)"""
    if isinstance(e, cst.UnaryOperation) and isinstance(e.operator, cst.Plus):
        return [e.expression]
    if isinstance(e, cst.BinaryOperation) and any(
            isinstance(x, (cst.List, cst.Tuple, cst.ListComp)) for x in (e.left, e.right)):
        return [e.left, e.right]
    return []


def _joined(e: cst.BinaryOperation) -> Set[str]:
    """What a join of containers (`{"topk": idx} | extras`, `pending + self.sink_buffers`: round AY) may hold: what
    a display operand names, and what a named operand holds (`*name`, its contents in _Aliases: not the operand
    itself, so `idx + offset` of a tensor, a new one, shares nothing with idx). Proven arithmetic holds nothing."""
    if _arithmetic(e):
        return set()
    return set().union(*(may_share(x) if isinstance(x, (cst.List, cst.Tuple, cst.Dict, cst.Set, cst.ListComp)) else
                         {n if n.startswith("*") else "*" + n for n in may_share(x)} for x in (e.left, e.right)))


# operators no container defines (`/`, `@`, `**`, shifts; `%` formats a string)
_NUMERIC_OPERATORS = (cst.Divide, cst.FloorDivide, cst.Power, cst.MatrixMultiply, cst.LeftShift, cst.RightShift,
                      cst.Modulo)


def _arithmetic(e: cst.BinaryOperation) -> bool:
    """Can `e` be no join of containers: an operator none defines, or an operand that is a number (a float by any
    operator; an int, a comparison, a negation or arithmetic but by `*`, which repeats a sequence: `2 * [idx]`)?"""
    if isinstance(e.operator, _NUMERIC_OPERATORS):
        return True
    repeats = isinstance(e.operator, cst.Multiply)
    return any(isinstance(x, (cst.Float, cst.Imaginary)) or not repeats and _number(x) for x in (e.left, e.right))


def _number(x: cst.BaseExpression) -> bool:
    """A number or a tensor of numbers, never a container: an int literal, a comparison, `-x`/`~x`/`not x`, or
    arithmetic proven so."""
    return isinstance(x, (cst.Integer, cst.Float, cst.Imaginary, cst.Comparison)) \
        or isinstance(x, cst.UnaryOperation) and not isinstance(x.operator, cst.Plus) \
        or isinstance(x, cst.BinaryOperation) and _arithmetic(x)


def writes_in(tree: Tree, owner: cst.CSTNode, name: str) -> _Writes:
    """The in-place writes of `name` under `owner`; each owner is walked once per tree, so
    every trace that reaches it (one per kernel call or caller) shares the walk."""
    cache = tree.__dict__.setdefault("_row_writes", {})
    found = cache.get(id(owner))
    if found is None:
        found = cache[id(owner)] = _RowWrites()
        owner.visit(found)
    return found.by_name.get(name, _NO_WRITES)


class Hooks(NamedTuple):
    """What the traces may ask of the project: another file's def, whether a name is outside it, a method's rivals,
    where another file makes an attribute."""
    external: Optional[External] = None
    outside: Optional[Outside] = None
    rival: Optional[Rival] = None
    served: Optional[Served] = None
    forked: Optional[Served] = None  # where the project defines its own def of an engine method's name


NO_HOOKS = Hooks()


def row_hazard(tree: Tree, expr: cst.BaseExpression, batch_scope=None, hooks: Hooks = NO_HOOKS,
               params_only: bool = False) -> Tuple[Optional[str], Set[str]]:
    """(why q's rows may not be the batch's rows in order, or None; the parameters they come from).

    batch_scope: the function scope the metadata is bound in. Rows that come in through
    the parameters of another function (a nested def called with pieces) are not known to
    be that batch's. params_only: q is a helper's, so it must come from its parameters.
    """
    t = RowTrace(tree, hooks.external, hooks.outside, params_only, hooks.rival)
    why = t.hazard(expr)
    if why is None and batch_scope is not None:
        for scope, name in t.params:
            if scope is not batch_scope:
                fn = getattr(scope.node, "name", None)
                where = f"`{fn.value}`" if isinstance(fn, cst.Name) else "another function"
                why = f"`{name}` comes from the callers of {where}, while the metadata is bound outside it"
                break
    return why, {name for _, name in t.params}


# -- the indices (the metadata counts the indexer's valid entries per row) -------------------------
# Steps that change which entries a row holds or how many are valid are named; what keeps them is on
# the allowlists below, each entry with the engine code that needs it; anything else is refused.
INDEX_KEEPING = {
    "to": "dtype/device", "int": "dtype", "long": "dtype", "contiguous": "layout", "clone": "a copy",
    "detach": "the same tensor", "cuda": "device", "type": "dtype",
    "view": "sglang: topk_indices.view(...) between [s, 1, k] and [s, k]", "reshape": "as view",
    "unsqueeze": "sglang dsa/nsa_backend: page_table_1.unsqueeze(1) for the kernel's [s, 1, k]",
    "squeeze": "the inverse of unsqueeze(1)",
}
# Engine transforms on the indices' flow, by the name they are imported as from sglang or sgl_kernel
# (functions) or called by on an engine object (methods): each maps valid entries and keeps -1 as -1.
INDEX_KEEPING_FUNCTIONS = {
    "transform_index_page_table_decode": "sglang (kernels/ops/)attention/(n|d)sa/transform_index.py: "
                                         "each valid index through the page table, -1 kept",
    "transform_index_page_table_prefill": "as transform_index_page_table_decode, for prefill",
}
INDEX_KEEPING_ENGINE_METHODS = {
    "translate_loc_to_hisparse_device": "sglang token_to_kv_pool (hisparse): each valid location to its device slot",
    "swap_in_selected_pages": "sglang hisparse_coordinator: the selected pages' device locations, -1 kept",
}
# Where each of those methods takes the indices (position after self, keyword): only that argument is traced.
INDEX_ARGUMENT = {"translate_loc_to_hisparse_device": (0, "compressed_indices"), "swap_in_selected_pages": (2, "top_k_result")}
# `idx[:, 0, :]` of the indexer's [s, 1, k] (one selection per token, shared by the heads): its squeeze(1), every
# slot of each row (sglang dsa_backend: `topk_indices[:, 0, :]` before the page-table lookup).
INDEX_HEAD = "[:, 0, :]"
INDEX_CHANGES = {"masked_fill", "masked_fill_", "fill_", "index_fill", "index_fill_", "scatter", "scatter_",
                 "clamp", "clamp_", "clip", "clip_", "sort", "flip", "roll", "narrow", "index_select", "gather",
                 "split", "chunk", "remainder", "fmod", "abs", "neg", "zero_", "masked_scatter_", "index_put_",
                 "copy_", "put_", "add_", "sub_", "mul_"}


# An attribute the indices are read from must say it holds them (`forward_batch.topk_indices`, `self.idx`,
# `inp.indices`); any other one (`metadata.page_table_1`: every KV slot of the row, past the top-k width)
# is not the indexer's output.
INDEX_NAME = re.compile(r"(?i)topk|indices|idx")


def _instance_param(tree: Tree, param: cst.Param) -> bool:
    """The first parameter of a def in a class body (`self`, `cls`), unless the def is a plain staticmethod."""
    fdef = next((x for x in tree.ancestors(param) if isinstance(x, (cst.FunctionDef, cst.Lambda))), None)
    if not isinstance(fdef, cst.FunctionDef) or not tree.is_method(fdef):
        return False
    first = [*fdef.params.posonly_params, *fdef.params.params][:1]
    static = any(get_full_name_for_node(d.decorator) == "staticmethod" for d in fdef.decorators)
    return bool(first) and first[0] is param and not static


_CAPTURES = (cst.MatchAs, cst.MatchStar, cst.MatchMapping, cst.NamedExpr)


def unlisted_binding(tree: Tree, node: cst.Name, listed: Sequence[object]) -> Optional[cst.CSTNode]:
    """A binding of node's name in its outermost function that `listed` (the scope analysis's bindings where node
    reads it) lacks: a `match` capture, which LibCST does not list, or a `:=` in a comprehension, which it files under
    the comprehension though Python binds the function's name (round AY). Default-deny: the trace reads only those."""
    owner = next((a for a in reversed(list(tree.ancestors(node))) if isinstance(a, cst.FunctionDef)), None)
    known = {id(getattr(a, "node", None)) for a in listed}
    for n in tree.find(_CAPTURES, None, owner) if owner is not None else ():
        bound = n.rest if isinstance(n, cst.MatchMapping) else n.target if isinstance(n, cst.NamedExpr) else n.name
        if _is_name(bound, node.value) and id(bound) not in known:
            return n
    return None


class IndexTrace:
    """Follows the kernel's `indices` back through its function: may an entry have been
    dropped, masked or narrowed after the indexer counted it?"""

    def __init__(self, tree: Tree, outside: Optional[Outside] = None, rival: Optional[Rival] = None,
                 served: Optional[Served] = None, forked: Optional[Served] = None):
        self.tree, self.outside, self.rival, self.served, self.forked = tree, outside, rival, served, forked
        self.params: Set[Tuple[object, str]] = set()
        self.exempt: Set[int] = set()
        self.inside = 0  # > 0 while reading the returns of a function defined in this module
        self.reached: Set[str] = set()  # parameters of the function being read that its returns come from
        self.regrouped = 0  # > 0 while tracing what a view or reshape regroups (round BB: rows joined before refused)
        # (def, parameter) reached under a view in that def: a call's argument for it is traced under one (round BC:
        # `_layout(torch.cat([idx, pad]), n)` returning `x.view(n, 1, -1)`)
        self.viewed: Set[Tuple[int, str]] = set()
        # what is read once, apart under a view (a helper's rows joined are fine alone, not under one): round BB
        self._memo: Dict[bool, Tuple[Set[object], Dict[object, Tuple[Optional[str], Set[str]]]]] = {
            False: (set(), {}), True: (set(), {})}
        self.anchor: Optional[cst.Call] = None  # the call the indices are traced for (off_path)
        self.receiving = 0  # > 0 while tracing the object an attribute is read off
        self.read_off: List[str] = []  # the attributes being read off the object traced (innermost last)
        self.keys: List[Optional[str]] = []  # the literal keys being looked up in the mapping traced (innermost last)

    @property
    def seen(self) -> Set[object]:
        """The bindings, defs and statements already traced, under a view or not (round BB)."""
        return self._memo[self.regrouped > 0][0]

    @property
    def read(self) -> Dict[object, Tuple[Optional[str], Set[str]]]:
        """(id(def), key looked up) -> (why, parameters reached), under a view or not (round BB)."""
        return self._memo[self.regrouped > 0][1]

    def _regrouped(self, e: cst.Call, receiver: cst.BaseExpression) -> Optional[str]:
        """The receiver of a view or reshape of the indices, traced with rows joined before it refused: a view whose
        width is inferred or given regroups each row only where the rows are q's, not after `cat([idx, pad])` on dim 0
        (`view(n, 1, -1)` then puts two rows' selections in one: round BB)."""
        if (get_full_name_for_node(e.func) or "").rsplit(".", 1)[-1] not in ("view", "reshape"):
            return self.hazard(receiver)
        return self._under_view(receiver)

    def _under_view(self, e: cst.BaseExpression) -> Optional[str]:
        """e traced as what a view or reshape regroups (rows joined before it refused: round BB)."""
        self.regrouped += 1
        try:
            return self.hazard(e)
        finally:
            self.regrouped -= 1

    def _bound_value(self, e: cst.BaseExpression) -> cst.BaseExpression:
        """A local bound once to a value: that value (`slots = table.gather(...)`); else e itself."""
        if isinstance(e, cst.Name):
            values = self.tree.assigned_values(e, e.value)
            if len(values) == 1 and values[0] is not None:
                return values[0]
        return e

    def _local(self, call: cst.Call) -> Optional[str]:
        """A function or method of this module: what it returns, and then the call's arguments for
        the parameters those returns come from (a page table passed beside the indices is not one)."""
        why = unproven_local(self.tree, call.func, self.rival)
        if why:
            return why
        for fdef in local_defs(self.tree, call.func):
            memo = (id(fdef), self.keys[-1] if self.keys else None)  # (round BC: its returns read per key looked up)
            if memo in self.read:  # read once; each call's own arguments are still followed
                why, reached = self.read[memo]
            elif memo in self.seen:
                return f"`{fdef.name.value}` calls itself, on the indices' path: the trace does not read recursion"
            elif self.inside > 3:
                return f"`{fdef.name.value}` is more than four calls deep on the indices' path: the trace stops there"
            else:
                self.seen.add(memo)
                self.inside += 1
                outer, self.reached = self.reached, set()
                try:
                    why = next((w for w in (self.hazard(r.value) for r in _own_returns(fdef) if r.value is not None)
                                if w), None)
                    if why and "(in `" not in why:
                        why = f"{why} (in `{fdef.name.value}`)"
                    reached = self.reached
                finally:
                    self.inside -= 1
                    self.reached = outer
                self.read[memo] = (why, reached)
            if why:
                return why
            viewed = {id(a) for a in _arguments_for(call, fdef, {p for p in reached if (id(fdef), p) in self.viewed})}
            for arg in _arguments_for(call, fdef, reached):
                why = self._under_view(arg) if id(arg) in viewed else self.hazard(arg)
                if why:
                    return why
            viewed |= {id(d) for d in _defaults_left(call, fdef, {p for p in reached if (id(fdef), p) in self.viewed})}
            for default in _defaults_left(call, fdef, reached):  # (round BC: a parameter left out runs with it)
                why = self._under_view(default) if id(default) in viewed else self.hazard(default)
                if why:
                    return f"{why} (the default of a parameter `{_brief(call, 50)}` leaves out: round BC)"
        return None

    def _attribute_values(self, e: cst.Attribute) -> Optional[str]:
        """Every value the module assigns to an attribute of that name (any receiver, any function: the one the
        call reads may be any of them) is traced as the indices are; the parameters of another function it comes
        from are taken as given, as the call's own are (red-team round J1's u_attr_topk_sorted, u_attr_topk_extra)."""
        attr = e.attr.value
        for node in self.tree.find((cst.Assign, cst.AnnAssign, cst.AugAssign)):
            targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
            for t in targets:
                hit = isinstance(t, cst.Attribute) and t.attr.value == attr
                unpacked = isinstance(t, (cst.Tuple, cst.List)) and any(
                    isinstance(x.value, cst.Attribute) and x.value.attr.value == attr for x in t.elements)
                if not (hit or unpacked) or id(node) in self.seen:
                    continue
                self.seen.add(id(node))
                if unpacked or isinstance(node, cst.AugAssign):
                    return (f"`{_shown(e)}` is assigned at line {self.tree.line(node)} in a form the indices trace "
                            "does not model")
                if node.value is None:
                    continue
                self.inside += 1
                try:
                    why = self.hazard(node.value)
                finally:
                    self.inside -= 1
                if why:
                    return f"{why} (`{_shown(t)}` assigned at line {self.tree.line(node)})"
        for value, made in self._constructed_with(attr):  # `IndexerOutput(topk_indices=v)`: a record's field (round U)
            if id(value) in self.seen:
                continue
            self.seen.add(id(value))
            self.inside += 1
            self.exempt.add(id(made))  # (the construction hands its own argument on: no method of the holder)
            try:
                why = self.hazard(value)
            finally:
                self.inside -= 1
                self.exempt.discard(id(made))
            if why:
                return f"{why} (`{attr}` given at line {self.tree.line(value)})"
        for call in self.tree.find(cst.Call, lambda c: get_full_name_for_node(c.func) in _SETATTRS):
            key = call.args[1].value if len(call.args) > 1 else None  # `object.__setattr__(fb, "topk_indices", v)`
            if not isinstance(key, cst.SimpleString) or key.evaluated_value == attr:  # (a computed name: any)
                return (f"`{_brief(call, 70)}` (line {self.tree.line(call)}) may set `{attr}` by name: the "
                        "value it gives is not traced (round S)")
        return None

    def _constructed_with(self, attr: str) -> List[Tuple[cst.BaseExpression, cst.Call]]:
        """(value, call) for the values calls of the module hand a parameter or field named `attr`: by keyword (any callee), or by
        position to a class of the module whose body declares `attr` (a dataclass's or NamedTuple's field)."""
        out = [(a.value, c) for c in self.tree.find(cst.Call) for a in c.args if a.keyword and a.keyword.value == attr]
        for cls in self.tree.find(cst.ClassDef):
            fields = [s.target.value for line in (cls.body.body if isinstance(cls.body, cst.IndentedBlock) else ())
                      if isinstance(line, cst.SimpleStatementLine) for s in line.body
                      if isinstance(s, cst.AnnAssign) and isinstance(s.target, cst.Name)]
            if attr not in fields:
                continue
            place, name = fields.index(attr), cls.name.value
            for c in self.tree.find(cst.Call, lambda c, n=name: (get_full_name_for_node(c.func) or "").rsplit(".", 1)[-1]
                                    == n):
                positional = [a for a in c.args if not a.keyword]
                if any(a.star for a in positional) or place < len(positional):
                    out += [(positional[min(place, len(positional) - 1)].value, c)]
        return out

    def hazard(self, e: cst.BaseExpression) -> Optional[str]:
        if isinstance(e, cst.Name):
            return self._name(e)
        if isinstance(e, cst.Attribute):
            if e.attr.value in NO_DATA_ATTRS:
                return None
            if not INDEX_NAME.search(e.attr.value):  # default-deny: an attribute that does not say it holds them
                return (f"`{_shown(e)}` is read from an attribute that does not say it holds the top-k indices "
                        "(a page table or other tensor may hold more valid entries than the metadata counts)")
            served = _served_by_code(self.tree, e.attr.value)
            if served is not None:
                return (f"`{_shown(e)}` may be served by code: {served} (line {self.tree.line(served)}) binds "
                        f"`{e.attr.value}` in a class body (a property, a descriptor), whose value the trace does not read")
            elsewhere = self.served(e.attr.value) if self.served is not None else None
            if elsewhere:
                return (f"`{_shown(e)}` may be made by another file: {elsewhere}, whose value the trace does not read "
                        "(round T)")
            written = attribute_write(self.tree, e.attr.value)
            if written is not None:
                return (f"`{_shown(e)}` is held in an attribute, and `{_brief(written, 80)}` (line "
                        f"{self.tree.line(written)}) writes into a tensor of that attribute in place, which may run "
                        "before the call (in this call or an earlier one)")
            why = self._attribute_values(e)
            self.receiving += 1
            self.read_off.append(e.attr.value)
            try:
                return why or self.hazard(e.value)
            finally:
                self.receiving -= 1
                self.read_off.pop()
        if isinstance(e, cst.Subscript):
            if _reads_no_data(e.value):
                return None  # `idx.shape[0]`: a size, not entries
            if len(e.slice) == 1 and isinstance(e.slice[0].slice, cst.Index) and isinstance(
                    e.slice[0].slice.value, (cst.SimpleString, cst.ConcatenatedString)):
                # `state["topk_indices"]`: a lookup in a mapping, not a narrowing; off a parameter (but `**kwargs`),
                # its class's `__getitem__` may hand back anything (round R)
                params = [a.node for a in self.tree.binding(e.value, e.value.value).assignments
                          if isinstance(getattr(a, "node", None), cst.Param)] if isinstance(e.value, cst.Name) else []
                if any(not _star_kwarg(self.tree, p) for p in params):
                    return (f"the indices are looked up by key in `{e.value.value}`, a parameter: its class's "
                            "`__getitem__` is not read (round R); hand them to the method as a parameter")
                key = e.slice[0].slice.value
                filled = _mapping_fill(self.tree, e.value, key.evaluated_value if isinstance(key, cst.SimpleString) else None)
                if filled is not None:
                    return (f"`{_brief(filled, 80)}` (line {self.tree.line(filled)}) may fill the key the indices are "
                            f"looked up by in `{_shown(e.value)}`, a fill the trace does not read; bind them to a "
                            "local instead (round BE)")
                self.keys.append(key.evaluated_value if isinstance(key, cst.SimpleString) else None)
                try:
                    return self.hazard(e.value)
                finally:
                    self.keys.pop()
            for i, el in enumerate(e.slice):
                s = el.slice
                full = (isinstance(s, cst.Slice) and s.lower is None and s.upper is None and s.step is None) or (
                    isinstance(s, cst.Index) and isinstance(s.value, (cst.Ellipsis, cst.Name))
                    and getattr(s.value, "value", None) in (None, "None"))
                head = len(e.slice) == 3 and i == 1 and isinstance(s, cst.Index) and _int(s.value) == 0  # INDEX_HEAD
                if not (full or head):
                    return f"`{_shown(e)}` narrows or selects top-k entries"
                if isinstance(s, cst.Index) and isinstance(s.value, cst.Name) and s.value.value == "None" and (
                        i != 1 or any(isinstance(x.slice, cst.Index) and isinstance(x.slice.value, cst.Ellipsis)
                                      for x in e.slice)):  # (`x[..., None]`: each entry a row of one, round AV)
                    return f"`{_shown(e)}` may add an axis after the entries' (only `x[:, None]` keeps them last)"
            return self.hazard(e.value)
        if isinstance(e, cst.Call):
            return self._call(e)
        if isinstance(e, cst.BinaryOperation):
            return f"`{_shown(e)}` changes index values (and -1 entries with them)"
        if isinstance(e, cst.IfExp):
            return self.hazard(e.body) or self.hazard(e.orelse)
        if isinstance(e, (cst.Tuple, cst.List)):  # `a, idx = x, y`: each part, conservatively
            return next((w for w in (self.hazard(el.value) for el in e.elements) if w), None)
        if isinstance(e, cst.NamedExpr):
            return self.hazard(e.value)
        if isinstance(e, cst.Dict):  # a mapping built here, read by key: the value under that key where every key
            # is a literal, else each value it holds (round Q; round R's s_state_dict_local had refused `kv` beside them)
            key = self.keys[-1] if self.keys else None
            literal = all(isinstance(el, cst.DictElement) and isinstance(el.key, cst.SimpleString) for el in e.elements)
            chosen = [el.value for el in e.elements if literal and key is not None and el.key.evaluated_value == key]
            self.keys.append(None)  # (a mapping inside is read whole)
            try:
                return next((w for w in map(self.hazard, chosen or [el.value for el in e.elements]) if w), None)
            finally:
                self.keys.pop()
        if isinstance(e, (cst.DictComp, cst.Set, cst.SetComp)):
            return f"`{_shown(e)[:60]}` builds the indices' holder by a comprehension the trace does not read"
        if isinstance(e, _NO_ROWS) or (isinstance(e, cst.Name) and e.value == "None"):
            return None
        return f"`{_shown(e)}` is a form the indices trace does not model"

    def _call(self, e: cst.Call) -> Optional[str]:
        if _reads_no_data(e):
            return None
        func = e.func
        if local_defs(self.tree, func):
            return self._local(e)
        name = get_full_name_for_node(func) or ""
        op = name.rsplit(".", 1)[-1]
        args = [a for a in e.args if not a.keyword and not a.star]
        if op == "where" and len(e.args) == 3:
            return self._where(e)
        if op in FILLS or op == "new_tensor" and isinstance(func, cst.Attribute):
            return self._made_anew(e, op, args)
        if op in ("cat", "concat", "concatenate") and _torch_function(func, name) and args:
            given, dim = _dim_arg(list(e.args), 1)
            parts = args[0].value.elements if isinstance(args[0].value, (cst.List, cst.Tuple)) else None
            if parts and any(isinstance(el, cst.StarredElement) for el in parts):
                parts = None  # (`[*selections, pad]`: how many selections it joins is not read, round AT)
            if (not given or _int(dim) in (0, -1)) and parts and not self._fill(parts[0].value) and all(
                    self._only_fill(el.value, parts[0].value) for el in parts[1:]):  # rows of -1 appended; not
                if self.regrouped and not (given and _int(dim) == -1):  # prepended (round O), nor viewed (round BB),
                    return f"`{_shown(e)[:80]}` joins rows that a view or reshape after it may regroup into one row"
                return self.hazard(parts[0].value)  # nor two selections in an order q's rows may not share (round P);
                # or columns of -1 appended to each row (`dim=-1`: its valid entries still first, round AI)
            return (f"`{_shown(e)}` joins top-k entries other than by rows, or pads them with a -1 in a dtype not "
                    "proven to keep it (round BB)")
        method = isinstance(func, cst.Attribute) and not _torch_function(func, name)
        if method:
            receiver = func.value
            sentinel = self._sentinel_kept(e, op, [receiver, *(a.value for a in e.args)], 0)
            if sentinel is not None:
                return sentinel or None
            if op in INDEX_CHANGES:
                return f"`{_shown(e)}` changes which top-k entries are valid"
            if op in NO_DATA_METHODS and op not in _ENTRY_READS:
                return None
            if op in INDEX_KEEPING:
                return _other_dtype(e) or _regroups(e) or self._regrouped(e, receiver)
            if op in INDEX_KEEPING_ENGINE_METHODS and self._forked(op):
                return f"`{_shown(e)}` may reach {self._forked(op)}, not the engine's method of that name (round V)"
            if op in INDEX_KEEPING_ENGINE_METHODS:  # each valid location mapped, -1 kept: of the locations it gets
                pos, keyword = INDEX_ARGUMENT[op]
                given = _keyword(e, keyword) or (args[pos].value if len(args) > pos else None)
                return self.hazard(given) if given is not None else f"`{_shown(e)}` is not handed the indices where expected"
        elif _torch_function(func, name) and args:  # torch.op(idx, ...): as idx.op(...)
            sentinel = self._sentinel_kept(e, op, [a.value for a in e.args], 1)
            if sentinel is not None:
                return sentinel or None
            if op in INDEX_CHANGES:
                return f"`{_shown(e)}` changes which top-k entries are valid"
            if op in INDEX_KEEPING:
                return _other_dtype(e, 1) or _regroups(e, 1) or self._regrouped(e, args[0].value)
        elif op in INDEX_KEEPING_FUNCTIONS and _engine_import(self.tree, func):
            if self._forked(op):  # a fork's own tree of the engine (round AB)
                return f"`{_shown(e)}` may reach {self._forked(op)}, not the engine's function of that name"
            # each valid index through the page table, -1 kept: of the top-k it is handed (topk_indices=, 2nd)
            given = _keyword(e, "topk_indices") or (args[1].value if len(args) > 1 else None)
            return self.hazard(given) if given is not None else None
        return (f"`{_shown(e)}` is neither on the allowlist of steps that keep the top-k entries "
                "(rows.INDEX_KEEPING) nor a function of this module the trace can read")

    def _where(self, e: cst.Call) -> Optional[str]:
        """`torch.where(idx >= 0, x, -1)`: -1 where the tested indices are invalid, and where they are valid their
        own entries, an offset of them or a page table's at them: what the trace finds in the tested ones."""
        bound = _where_arguments(e)
        if bound is None:
            return f"`{_shown(e)[:80]}` hands `where` its arguments in a way the trace does not bind"
        condition, chosen, other = bound
        test = self._named_test(condition, e)
        valid = _validity_test(test)
        for branch, invalid_side in ((chosen, valid is False), (other, valid is True)):
            if _constant_fill(branch) and not (invalid_side and _int(branch) == -1):
                return f"`{_shown(e)}` puts constants into the indices"
        # offsets added to the valid entries, -1 kept where entries are -1: what the test reads and
        # what the branches take must themselves be the counted top-k
        tested = test.left if isinstance(test, cst.Comparison) else None
        sources = [tested] if tested is not None else []
        valid = _validity_test(test)  # (of the comparison a name is bound to, too)
        if valid is None:  # (a window's or a sink's mask: -1 or another tensor's entries mid-row, round AI)
            return (f"`{_shown(e)[:80]}` selects entries by a test other than the indices' validity (`idx >= 0`, "
                    "`idx != -1`), which may leave -1 gaps or other entries before valid ones")
        for side, b in ((True, chosen), (False, other)):
            if _constant_fill(b) or valid is not side and self._only_fill(b, tested):
                continue  # (-1 where the indices are invalid; a pad of -1 where they are valid is traced: refused)
            if valid is not None and valid is not side and not self._only_fill(b, tested) and not (
                    tested is not None and _code(b) == _code(tested)):  # (idx itself there: its -1s, sglang)
                return (f"`{_shown(e)}` puts other entries where the indices are invalid: valid entries past the "
                        "count (round V)")
            if tested is not None and valid is side and isinstance(b, cst.BinaryOperation) and isinstance(
                    b.operator, cst.Add) and _code(b.left) == _code(tested):
                continue  # `idx + offset` where idx is valid (never where it is not: round O), a page offset
            if tested is not None and _looks_up(b, tested):
                continue  # `table.gather(1, idx.clamp(min=0))`: a page table's locations where idx is valid
            if valid is side and not (tested is not None and _code(_unconverted(b)) == _code(tested)):
                return (f"`{_shown(e)[:80]}` takes the entries where the indices are valid from another tensor "
                        "than the one it tests: its -1s need not fall where the tested ones do (round AM)")
            sources.append(b)
        return next((w for w in map(self.hazard, sources) if w), None)

    def _named_test(self, test: cst.BaseExpression, call: cst.Call, depth: int = 0) -> cst.BaseExpression:
        """The test as a comparison where it is one in another spelling: a tensor method (`idx.ge(0)`, `idx.lt(0)`),
        a negation (`~valid`, `~(idx < 0)`) of one, a mask bound once to one (_bound_test, 4 deep); else `test`."""
        if depth > 4:
            return test
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.BitInvert):
            inner = self._named_test(test.expression, call, depth + 1)
            flipped = _FLIPPED.get(type(inner.comparisons[0].operator)) if isinstance(inner, cst.Comparison) \
                and len(inner.comparisons) == 1 else None
            return inner.with_changes(comparisons=[inner.comparisons[0].with_changes(operator=flipped())]) \
                if flipped is not None else test
        if isinstance(test, cst.Call) and isinstance(test.func, cst.Attribute) and test.func.attr.value in _COMPARING \
                and len(test.args) == 1 and test.args[0].keyword is None and test.args[0].star == "":
            return cst.Comparison(left=test.func.value, comparisons=[cst.ComparisonTarget(
                operator=_COMPARING[test.func.attr.value](), comparator=test.args[0].value)])
        pair = _compared_pair(test)
        if pair is not None:  # `torch.lt(idx, 0)`, `0 <= idx`: the tensor first, as `idx < 0`, `idx >= 0` (round AY)
            return cst.Comparison(left=pair[1], comparisons=[cst.ComparisonTarget(operator=pair[0](), comparator=pair[2])])
        return self._bound_test(test, call, depth)

    def _bound_test(self, test: cst.BaseExpression, call: cst.Call, depth: int) -> cst.BaseExpression:
        """`mask = idx != -1` first: the comparison a mask is bound to once, never written in place after (`mask[idx <
        start] = False`: round AJ), and, where it tests a name, that name not bound again from the mask's statement to
        the call's (`valid = idx >= 0; idx = idx.flip(-1)` tests another tensor: round AP); else `test` itself."""
        if not isinstance(test, cst.Name):
            return test
        b = self.tree.binding(test, test.value)
        stmt = self.tree.assignment_statement(b.assignments[0]) if len(b.assignments) == 1 else None
        value = self._named_test(stmt.value, call, depth + 1) if stmt is not None and stmt.value is not None else None
        if not isinstance(value, cst.Comparison) or self._written(test) or self._escapes(test, call):
            return test
        left = value.left
        if isinstance(left, cst.Name):
            start, end = self.tree.line(stmt), self.tree.line(call)
            at_call = next((a for a in self.tree.ancestors(call) if isinstance(a, cst.BaseSmallStatement)), None)
            for a in self.tree.binding(call, left.value).assignments:
                node = getattr(a, "node", None)
                if node is not None and start < self.tree.line(node) <= end \
                        and self.tree.assignment_statement(a) is not at_call:
                    return test
        return value

    def _sentinel_kept(self, e: cst.Call, op: str, operands: List[cst.BaseExpression], first: int) -> Optional[str]:
        """`x.masked_fill(idx < 0, -1)` / `torch.masked_fill(x, idx < 0, -1)` (operands: x, then the call's
        arguments past it) and `x.clamp(min=-1)`: what the trace finds ("" where nothing is wrong); None where the
        call is neither (`first`: where the bounds start among a call's positionals)."""
        test = self._named_test(operands[1], e) if len(operands) >= 3 else None
        if op in ("masked_fill", "masked_fill_") and len(operands) >= 3 and not any(a.keyword for a in e.args) \
                and _validity_test(test) is False and _int(operands[2]) == -1:
            return self._invalid_filled(e, operands[0], test.left) or ""
        if _clamped_at_minus_one(e, first):
            return self.hazard(operands[0]) or ""  # (`idx.clamp(min=-1)`: every entry is -1 or more already)
        return None

    def _invalid_filled(self, e: cst.Call, receiver: cst.BaseExpression, tested: cst.BaseExpression) -> Optional[str]:
        """`x.masked_fill(idx < 0, -1)`: -1 exactly where idx is invalid, so the valid entries are idx's where x is idx
        itself or a page-table lookup at idx (`gather(table, 1, idx.clamp(min=0))`: its -1s restored); another
        tensor's entries (a previous layer's top-k: round AM) keep that one's -1s inside idx's count."""
        looked_up = _looks_up(self._bound_value(receiver), tested) and not (
            isinstance(receiver, cst.Name) and self._written(receiver))  # (an offload marking slots: AK)
        if not looked_up and _code(_unconverted(receiver)) != _code(tested):
            return _narrowing(_unconverted(receiver)) or (
                f"`{_shown(e)[:80]}` fills -1 where another tensor than the one it fills is invalid: the entries it "
                "keeps need not be valid where that one's are (round AM)")
        return self.hazard(tested)

    def _forked(self, op: str) -> Optional[str]:
        """Where the project defines its own def of the engine method `op` (a fork's pool class: round V)."""
        return self.forked(op) if self.forked is not None else None

    def _made_anew(self, e: cst.Call, op: str, args: List[cst.Arg]) -> Optional[str]:
        """A fill (FILLS) or `x.new_tensor(data)` as the indices: a fill of -1 holds no row's entries (padding rows
        appended pass, _only_fill; alone it is an empty selection while the metadata counts the rows: round AJ); a
        new tensor holds its data (a host round trip's `.tolist()` is that tensor's: round AK)."""
        if op in FILLS:
            return (f"`{_shown(e)}` makes the indices -1 everywhere, while the metadata counts each row's lengths (an "
                    "empty selection: round AJ)") if _fill_of(e) == -1 else \
                f"`{_shown(e)}` fills the indices with a value other than -1"
        data = args[0].value if args else None
        while isinstance(data, cst.Call) and isinstance(data.func, cst.Attribute) \
                and data.func.attr.value in ("tolist", "cpu", "numpy") and not data.args:
            data = data.func.value
        if data is None:
            return f"`{_shown(e)}` is a form the indices trace does not model"
        return self._receiver_dtype(e, data) or self.hazard(data)

    def _receiver_dtype(self, e: cst.Call, data: cst.BaseExpression) -> Optional[str]:
        """`x.new_tensor(data)` takes x's dtype (a uint8 arena's makes -1 a valid 255, kept by `.int()`): it keeps -1
        only under `dtype=` an index dtype (or the data's own) or where x is the tensor the data is read off (round BC)."""
        dtype = _keyword(e, "dtype")
        if dtype is not None and (get_full_name_for_node(dtype) in INDEX_DTYPES or isinstance(dtype, cst.Attribute)
                                  and dtype.attr.value == "dtype" and self._same_tensor(dtype.value, data)):
            return None
        if dtype is None and not any(a.star for a in e.args) and self._same_tensor(e.func.value, data):
            return None
        return (f"`{_brief(e, 80)}` takes its dtype from `{_brief(e.func.value, 40)}` (or a `dtype=` not proven an index "
                "dtype), which may not keep -1 (uint8 makes it a valid 255); pass `dtype=torch.int32` (round BC)")

    def _written(self, name: cst.Name) -> bool:
        """Is the local written in place in its function, itself or through a view of it (`mask[i] = False`,
        `mask.view(-1).logical_and_(...)`, `out=mask`: round AK)?"""
        fdef = next((a for a in self.tree.ancestors(name) if isinstance(a, cst.FunctionDef)), None)
        owner = fdef if fdef is not None else self.tree.module
        for n in {name.value} | set(aliases_in(self.tree, owner, name.value)):
            w = writes_in(self.tree, owner, n)
            if w.subscripts or w.inplace or w.mutators or w.outs or w.changes:
                return True
        return False

    def _escapes(self, name: cst.Name, call: cst.Call) -> bool:
        """Does the mask (a local or an alias of it) leave its function's sight before the select: handed to a call
        other than `call` and a torch function that does not write (a helper narrowing it, `valid &= window`), or
        stored on an object or in a container (a policy method writing the kept mask: round AU)?"""
        fdef = next((a for a in self.tree.ancestors(name) if isinstance(a, cst.FunctionDef)), None)
        owner = fdef if fdef is not None else self.tree.module
        names = {name.value} | set(aliases_in(self.tree, owner, name.value))
        for ref in (n for n in _names_in(owner) if n.value in names and not self._not_a_read(n)):
            up = self.tree.parent.get(ref)
            while isinstance(up, (cst.Element, cst.List, cst.Tuple, cst.Set, cst.DictElement, cst.Dict, cst.StarredElement)):
                up = self.tree.parent.get(up)
            if isinstance(up, cst.Arg):
                made = self.tree.parent.get(up)
                if made is not call and not _pure_torch(made):
                    return True
            elif isinstance(up, (cst.Assign, cst.AnnAssign)) and up.value is not None \
                    and _code(up.value) != ref.value or isinstance(up, cst.Assign) and any(
                    not isinstance(t.target, cst.Name) for t in up.targets):
                return True
        return False

    def _not_a_read(self, n: cst.Name) -> bool:
        """A name _names_in finds that reads nothing: a keyword's name, a target, a parameter, a def's own name."""
        up = self.tree.parent.get(n)
        return isinstance(up, cst.Arg) and up.keyword is n \
            or isinstance(up, (cst.AssignTarget, cst.Param, cst.FunctionDef, cst.ClassDef)) \
            or isinstance(up, (cst.AugAssign, cst.AnnAssign)) and up.target is n

    def _only_fill(self, e: cst.BaseExpression, selection: cst.BaseExpression) -> bool:
        """A constant fill of -1 in a dtype that keeps -1 (_fill_keeps_minus_one), or a name every binding of which is
        one (`pad = torch.full(..., -1)`); `selection`: the tensor it pads, whose dtype a `new_full` may take."""
        if isinstance(e, cst.Name):  # (never written after: `pad[..., -1] = 0`, a sink slot, round AK; nor bound
            # outside a function: a module's pad any function may write, a sink installer's slot, round AO)
            values = self.tree.assigned_values(e, e.value)
            return bool(values) and all(v is not None and self._only_fill(v, selection) for v in values) \
                and not self._written(e) and not any(isinstance(getattr(a, "scope", None), (GlobalScope, ClassScope))
                                                     for a in self.tree.binding(e, e.value).assignments)
        return isinstance(e, cst.Call) and _fill_of(e) == -1 and self._fill_keeps_minus_one(e, selection)

    def _fill_keeps_minus_one(self, fill: cst.Call, selection: cst.BaseExpression) -> bool:
        """Is the fill's dtype proven to hold -1 where it joins the selection (round BB: a uint8 pad's -1 is 255, a
        bool's True, 1, and cat promotes either to a valid slot)? `torch.full` of an int with no dtype (int64), a
        dtype of _FILL_DTYPES, or the selection's own (`dtype=idx.dtype`, `idx.new_full(...)`, `full_like(idx, -1)`)."""
        if any(a.star or a.keyword and a.keyword.value not in _FILL_KEYWORDS for a in fill.args):
            return False  # (`out=buf`: buf's dtype; `**kw`: any dtype)
        dtype = _keyword(fill, "dtype")
        if dtype is not None:
            return get_full_name_for_node(dtype) in _FILL_DTYPES or isinstance(dtype, cst.Attribute) \
                and dtype.attr.value == "dtype" and self._same_tensor(dtype.value, selection)
        op = (get_full_name_for_node(fill.func) or "").rsplit(".", 1)[-1]
        if op == "full":
            return _torch_function(fill.func, get_full_name_for_node(fill.func) or "")
        source = fill.func.value if op == "new_full" and isinstance(fill.func, cst.Attribute) else \
            _keyword(fill, "input") or next((a.value for a in fill.args if not a.keyword), None) \
            if op == "full_like" else None
        return source is not None and self._same_tensor(source, selection)

    def _same_tensor(self, x: cst.BaseExpression, selection: cst.BaseExpression) -> bool:
        """x, which a fill takes its dtype from, is the selection it pads: a name of the same code, not bound again
        from x's line to the selection's (but by the selection's own statement: `idx = torch.cat([idx, pad])`)."""
        while isinstance(selection, cst.Call) and isinstance(selection.func, cst.Attribute) and (
                _keeps_entries(selection) or selection.func.attr.value in _SHAPE_ONLY and _other_dtype(selection) is None):
            selection = selection.func.value  # (`idx.view(n, -1)`, `idx.long()`: a dtype that keeps -1 still)
        if not (isinstance(x, cst.Name) and isinstance(selection, cst.Name) and x.value == selection.value):
            return False
        start, end = self.tree.line(x), self.tree.line(selection)
        at = next((a for a in self.tree.ancestors(selection) if isinstance(a, cst.BaseSmallStatement)), None)
        return start <= end and not any(
            getattr(a, "node", None) is not None and start < self.tree.line(a.node) <= end
            and self.tree.assignment_statement(a) is not at for a in self.tree.binding(selection, x.value).assignments)

    def _fill(self, e: cst.BaseExpression) -> bool:
        """A constant fill, or a name bound to one (`pad = torch.full(...)`): may be one on some binding."""
        if isinstance(e, cst.Name):
            values = self.tree.assigned_values(e, e.value)
            return not values or any(v is not None and _constant_fill(v) for v in values)
        return _constant_fill(e)

    def _name(self, node: cst.Name) -> Optional[str]:
        b = self.tree.binding(node, node.value)
        if not b.assignments and node.value not in _BUILTIN_NAMES:
            return f"`{node.value}` has no binding the indices trace can see (a `match` capture, a star import, exec)"
        unlisted = unlisted_binding(self.tree, node, b.assignments)
        if unlisted is not None:
            shown = next((a.pattern for a in self.tree.ancestors(unlisted) if isinstance(a, cst.MatchCase)), unlisted)
            return (f"`{node.value}` is bound at line {self.tree.line(unlisted)} by `{_brief(shown, 50)}`, a binding "
                    "the indices trace does not read (a `match` capture, a `:=` in a comprehension: round AY)")
        for a in b.assignments:
            scope = getattr(a, "scope", None)
            target = getattr(a, "node", None)
            if isinstance(scope, ComprehensionScope) or (isinstance(target, cst.Name) and any(
                    isinstance(x, (cst.For, cst.CompFor)) and self.tree.inside(target, x.target)
                    for x in self.tree.ancestors(target))):
                return f"`{node.value}` is a loop variable: each iteration holds other top-k entries than the metadata counts"
            if self.receiving and isinstance(target, cst.Param) and _instance_param(self.tree, target):
                return (f"the indices are read off `{node.value}`, the object this method belongs to: any code holding "
                        "it may give the attribute another tensor or rewrite the one it holds (a setattr, a property, "
                        "an `out=` write, a subclass, another file), so they are not proven the top-k the metadata "
                        "counts; hand them to the method as a parameter")
            if self.receiving and isinstance(target, cst.Param):
                called = _method_called_on(self.tree, scope, node.value, self.read_off[-1], self.exempt)
                if called is not None:
                    return (f"the indices are read off `{node.value}`, and `{_brief(called, 60)}` (line "
                            f"{self.tree.line(called)}) calls a method of it, which may give them another tensor (round R)")
            memo = (id(a), self.keys[-1] if self.keys else None)  # (round BC: a mapping is traced per key looked up)
            if memo in self.seen:
                continue
            if isinstance(scope, (GlobalScope, ClassScope)):  # an import too: another module's state (round O)
                return (f"`{node.value}` is bound outside a function (a module global, an import or a class "
                        "attribute): any function may write the tensor it holds before the call")
            if isinstance(a, ImportAssignment):  # (in a function too: the module's state all the same, round AY)
                return (f"`{node.value}` is bound by an import in a function: another module's state, which any "
                        "code may write before the call")
            if not isinstance(scope, FunctionScope):
                continue
            self.seen.add(memo)
            target = getattr(a, "node", None)
            if isinstance(target, cst.Param):
                if self.inside:
                    self.reached.add(node.value)  # the caller's argument for it is followed at the call
                    if self.regrouped:  # (under a view in the def: so is the argument, round BC)
                        self.viewed.add((id(scope.node), node.value))
                    continue
                why = self._param_values(target, node.value)
                if why:
                    return why
                if _nested_owner(self.tree, target) is None:
                    self.params.add((scope, node.value))
            else:
                stmt = self.tree.assignment_statement(a)
                value = stmt.value if stmt is not None else _walrus_value(self.tree, target)
                if value is None and not isinstance(target, _NOT_TENSORS) and not isinstance(a, ImportAssignment):
                    return f"`{node.value}` is bound by a form the indices trace does not model"
                why = self.hazard(value) if value is not None else None
                if why:
                    return why
            why = self._writes(scope, node.value)
            if why:
                return why
        return None

    def _param_values(self, param: cst.Param, name: str) -> Optional[str]:
        """What a parameter of the function the indices are traced in may hold besides its callers' argument: its
        default, which a call leaving it out runs with (round BC: a capture warmup's `indices=_WARMUP_TOPK`); for a
        def or lambda nested in a function (the kernel launched in a closure), what each call of it there hands."""
        nested = _nested_owner(self.tree, param)
        if nested is not None:
            return self._nested_calls(nested, param, name)
        why = self.hazard(param.default) if param.default is not None else None
        return f"{why} (the default of `{name}`, which a call leaving it out runs with: round BC)" if why else None

    def _nested_calls(self, owner: Union[cst.FunctionDef, cst.Lambda], param: cst.Param, name: str) -> Optional[str]:
        """The arguments (or the default) each call of a nested def or lambda hands `param`, traced as the indices
        are, in the function it is nested in; the callable read as a value, bound again or called with `*args`
        refuses (round BC: `attend(indices.flip(-1))`, `attend = lambda sel: flash_mla_sparse_fwd(...)`)."""
        calls = _nested_callers(self.tree, owner)
        if isinstance(calls, str):
            return f"`{name}` is a parameter of a nested def or lambda, and {calls}: what it is handed is not traced (round BC)"
        for call in calls:
            if any(a.star for a in call.args):
                return (f"`{_brief(call, 60)}` (line {self.tree.line(call)}) hands a nested def `*args`/`**kwargs`: "
                        f"what lands in `{name}` is not traced (round BC)")
            handed = [(v, "handed to") for v in _arguments_for(call, owner, {name})]
            for value, how in handed + [(v, "the default of") for v in _defaults_left(call, owner, {name})]:
                why = self.hazard(value)
                if why:
                    return f"{why} ({how} `{name}` at the call on line {self.tree.line(call)})"
        return None

    def _writes(self, scope, name: str) -> Optional[str]:
        key = (id(scope), name, "writes")
        if key in self.seen:
            return None
        self.seen.add(key)
        written = written_names(self.tree, scope.node)  # only names written or handed on at all can carry a write
        def on_path(node: cst.CSTNode) -> bool:
            return not off_path(self.tree, node, self.anchor, scope.node)

        for n in [name, *sorted(aliases_in(self.tree, scope.node, name).intersection(written))]:  # a write through an alias is one to name
            finder = writes_in(self.tree, scope.node, n)
            for target, _ in finder.subscripts:
                if self.tree.binding(target.value, n).scope_rank == self.tree.rank_of(scope) and on_path(target):
                    return f"`{_shown(target)} = ...` overwrites top-k entries"
            for call in filter(on_path, finder.inplace + finder.changes + finder.outs + finder.mutators):
                return f"`{_shown(call)}` changes which top-k entries are valid"
            for at in filter(on_path, finder.escapes if n == name else ()):
                return (f"`{_shown(at)} = {n}` stores the indices on an object, where any code may write them before "
                        "the call (round O)")
            for call in _mutating(self.tree, finder, self.outside):
                if on_path(call) and not self._pure(call, n):
                    return unproven_local(self.tree, call.func, self.rival) or (
                        f"`{_brief(call, 80)}` hands `{n}` to `{get_full_name_for_node(call.func) or _code(call.func)}`, "
                        "which may change its entries in place; the indices trace cannot follow it there"
                        + (" (a `**mapping` may pass `out=`: round BC)" if spreads_keywords(call) else ""))
        host = host_write(self.tree, scope.node, name, on_path)
        if host is not None:
            return (f"`{_brief(host, 80)}` may write the indices in place: a host array over their storage (a numpy "
                    "view, a memoryview) is written by its methods with no trailing `_` (round BC), here or in the "
                    "def of this module it is handed to (round BD); hand it a `.copy()`")
        return None

    def _pure(self, call: cst.Call, name: str) -> bool:
        """The traced call itself, an engine function on the index allowlist (it reads the indices and
        returns new ones), or a def of this module that writes none of the parameters `name` (or an alias of
        it) is handed to."""
        if id(call) in self.exempt:
            return True
        op = (get_full_name_for_node(call.func) or "").rsplit(".", 1)[-1]
        if op in INDEX_KEEPING_FUNCTIONS and _engine_import(self.tree, call.func) and not self._forked(op):
            return True
        if op in INDEX_KEEPING_ENGINE_METHODS and isinstance(call.func, cst.Attribute) and not self._forked(op):
            return True
        local = local_defs(self.tree, call.func)
        if not local or self.inside > 3 or unproven_local(self.tree, call.func, self.rival):
            return False
        for fdef in local:
            params = handed_params(call, fdef, name)
            key = (id(fdef), tuple(params))
            if key in self.seen:
                continue
            self.seen.add(key)
            scope = self.tree.scope_of.get(fdef.body)
            self.inside += 1
            try:
                if scope is None or any(self._writes(scope, p) for p in params):
                    return False
            finally:
                self.inside -= 1
        return True


_SETATTRS = {"setattr", "builtins.setattr", "object.__setattr__"}
FILLS = {"full", "full_like", "new_full", "zeros_like", "ones_like", "zeros", "ones", "new_zeros", "new_ones",
         "empty_like", "tensor", "fill_"}
# The dtypes a pad of -1 may have (round BB): they hold -1 (and every index, 2048 too), and joined with the int32
# indices stay int32 (int16 promotes to int32); uint8 makes -1 255, bool True, a float rounds the indices it joins.
_FILL_DTYPES = INDEX_DTYPES | {"torch.int16", "torch.short"}
# a tensor's methods that keep its dtype (`view`/`reshape` by a shape: _other_dtype)
_SHAPE_ONLY = {"view", "reshape", "unsqueeze", "squeeze", "contiguous", "clone", "detach"}
# keywords of a fill that change no value (`out=` is the dtype of the tensor it names)
_FILL_KEYWORDS = {"dtype", "device", "layout", "requires_grad", "pin_memory", "memory_format", "fill_value", "size",
                  "input"}


# A tensor's methods that may change its dtype (_narrowing)
_DTYPE_METHODS = {"to", "type", "int", "long", "byte", "char", "short", "half", "bfloat16", "float", "double", "bool"}


def _unconverted(e: cst.BaseExpression) -> cst.BaseExpression:
    """`x.to(torch.int32)` / `x.long()` ... as x: only a conversion that keeps every index and -1 (_keeps_entries)."""
    while isinstance(e, cst.Call) and isinstance(e.func, cst.Attribute) and _keeps_entries(e):
        e = e.func.value
    return e


def _keeps_entries(call: cst.Call) -> bool:
    """`x.int()`, `x.long()`, `x.to(torch.int32)` (`dtype=` too, a device): a conversion to INDEX_DTYPES, which hold
    every index and -1 (round BA: `x.to(torch.uint8)` wraps -1 to 255, `x.to(other)` may be any dtype)."""
    op = call.func.attr.value if isinstance(call.func, cst.Attribute) else ""
    if op in ("int", "long"):
        return all(a.keyword is not None and a.keyword.value in _PLACE_KEYWORDS for a in call.args)
    return op == "to" and bool(call.args) and _other_dtype(call) is None


def _narrowing(e: cst.BaseExpression) -> Optional[str]:
    """Why e, a conversion _keeps_entries does not read as keeping the entries, may change them (round BA)."""
    op = e.func.attr.value if isinstance(e, cst.Call) and isinstance(e.func, cst.Attribute) else ""
    return f"`{_brief(e, 80)}` may convert the indices to a dtype that does not keep every index and -1 (round BA)" \
        if op in _DTYPE_METHODS else None


def _clamped_at_minus_one(e: cst.Call, first: int) -> bool:
    """`x.clamp(min=-1)` / `torch.clamp(x, -1)` / `x.clamp_min(-1)`, no upper bound: the top-k's entries (-1 or a
    location) unchanged (round AM's safe form); `first` is where the bounds start among the positionals."""
    op = (get_full_name_for_node(e.func) or "").rsplit(".", 1)[-1]
    if op not in ("clamp", "clip", "clamp_min") or any(a.star for a in e.args):
        return False
    args = [a.value for a in e.args if not a.keyword][first:]
    low = _keyword(e, "min") if _keyword(e, "min") is not None else args[0] if args else None
    high = _keyword(e, "max") if op != "clamp_min" else None
    high = high if high is not None else args[1] if len(args) > 1 and op != "clamp_min" else None
    named = {a.keyword.value for a in e.args if a.keyword}
    return _int(low) == -1 and high is None and named <= {"min", "max"} and len(args) <= (1 if op == "clamp_min" else 2)


def _looks_up(e: cst.BaseExpression, tested: cst.BaseExpression) -> bool:
    """`table.gather(1, idx)` / `table.gather(1, idx.clamp(min=0))` / `torch.gather(table, 1, idx...)`: the
    entries of a lookup table (a page table: locations) at the tested indices, read only where they are
    valid (the where's other branch is -1)."""
    e = _unconverted(e)
    if not isinstance(e, cst.Call) or (get_full_name_for_node(e.func) or "").rsplit(".", 1)[-1] != "gather":
        return False
    index = _keyword(e, "index") or (e.args[-1].value if e.args else None)
    index = _unconverted(index) if index is not None else None
    if isinstance(index, cst.Call) and isinstance(index.func, cst.Attribute) and index.func.attr.value in ("clamp", "clamp_min"):
        index = _unconverted(index.func.value)
    return index is not None and _code(index) == _code(tested)


# a tensor's comparison methods as the operators they are, and each operator's negation (`~(x >= 0)` is `x < 0`)
_COMPARING = {"ge": cst.GreaterThanEqual, "gt": cst.GreaterThan, "le": cst.LessThanEqual, "lt": cst.LessThan,
              "eq": cst.Equal, "ne": cst.NotEqual}
_FLIPPED = {cst.GreaterThanEqual: cst.LessThan, cst.LessThan: cst.GreaterThanEqual, cst.GreaterThan: cst.LessThanEqual,
            cst.LessThanEqual: cst.GreaterThan, cst.Equal: cst.NotEqual, cst.NotEqual: cst.Equal}


_MIRRORED = {cst.LessThanEqual: cst.GreaterThanEqual, cst.GreaterThanEqual: cst.LessThanEqual, cst.LessThan: cst.GreaterThan,
             cst.GreaterThan: cst.LessThan, cst.Equal: cst.Equal, cst.NotEqual: cst.NotEqual}


def _compared_pair(test: cst.BaseExpression) -> Optional[tuple]:
    """(operator, tensor, constant) of a comparison spelled constant-first (`0 <= idx`) or as torch's function
    (`torch.lt(idx, 0)`, positional): each the same test as `idx >= 0` / `idx < 0`; else None."""
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1 and _int(test.left) is not None \
            and _int(test.comparisons[0].comparator) is None and type(test.comparisons[0].operator) in _MIRRORED:
        return _MIRRORED[type(test.comparisons[0].operator)], test.comparisons[0].comparator, test.left
    name = get_full_name_for_node(test.func) or "" if isinstance(test, cst.Call) else ""
    if name.rsplit(".", 1)[-1] in _COMPARING and _torch_function(test.func, name) and len(test.args) == 2 \
            and all(a.keyword is None and not a.star for a in test.args):
        return _COMPARING[name.rsplit(".", 1)[-1]], test.args[0].value, test.args[1].value
    return None


def _validity_test(cond: cst.BaseExpression) -> Optional[bool]:
    """True for `x >= 0` / `x != -1` / `x > -1` (valid entries), False for `x < 0` / `x == -1`."""
    if not (isinstance(cond, cst.Comparison) and len(cond.comparisons) == 1):
        return None
    op, value = type(cond.comparisons[0].operator), _int(cond.comparisons[0].comparator)
    if (op, value) in ((cst.GreaterThanEqual, 0), (cst.NotEqual, -1), (cst.GreaterThan, -1)):
        return True
    if (op, value) in ((cst.LessThan, 0), (cst.Equal, -1), (cst.LessThanEqual, -1)):
        return False
    return None


def handed_params(call: cst.Call, fdef: cst.FunctionDef, name: str) -> List[str]:
    """The parameters of fdef (past `self`/`cls`) that `call` may hand `name`: those whose argument reads
    it (the traces ask again for each alias of it); every parameter where the call spreads *args or
    **kwargs, or fdef takes them (what lands there is not known)."""
    params = [p.name.value for p in (*fdef.params.posonly_params, *fdef.params.params, *fdef.params.kwonly_params)]
    params = params[1:] if _binds_first(call, fdef) else params
    spread = [p.name.value for p in (fdef.params.star_arg, fdef.params.star_kwarg) if isinstance(p, cst.Param)]
    if spread or any(a.star for a in call.args):
        return params + spread
    return [p for p in params if any(_reads_name(arg, name) for arg in _arguments_for(call, fdef, {p}))]


def _binds_first(call: cst.Call, fdef: cst.FunctionDef) -> bool:
    """A method called off an object (`self.m(...)`, `cls.m(...)`) gets that object first, whatever the parameter's
    name (`klass`: round R), unless it is a staticmethod."""
    return isinstance(call.func, cst.Attribute) and not any(
        (get_full_name_for_node(d.decorator) or "") == "staticmethod" for d in fdef.decorators)


def _reads_name(expr: cst.CSTNode, name: str) -> bool:
    stack = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Name) and node.value == name:
            return True
        stack.extend(node.children)
    return False


def _arguments_for(call: cst.Call, fdef: cst.FunctionDef, names: Set[str]) -> List[cst.BaseExpression]:
    """The call's arguments for the parameters `names` of fdef (`self` skipped for a method call);
    every argument when the call spreads *args or **kwargs."""
    if any(a.star for a in call.args):
        return [a.value for a in call.args]
    params = list(fdef.params.posonly_params) + list(fdef.params.params)
    params = params[1:] if _binds_first(call, fdef) else params
    out, positional = [], [a for a in call.args if not a.keyword]
    for p, a in zip(params, positional):
        if p.name.value in names:
            out.append(a.value)
    out += [a.value for a in call.args if a.keyword and a.keyword.value in names]
    star, star_star = fdef.params.star_arg, fdef.params.star_kwarg
    if isinstance(star, cst.Param) and star.name.value in names:  # `*candidates`: what lands there (round U)
        out += [a.value for a in positional[len(params):]]
    if star_star is not None and star_star.name.value in names:  # `**kwargs`: the keywords no parameter takes
        taken = {p.name.value for p in [*params, *fdef.params.kwonly_params]}
        out += [a.value for a in call.args if a.keyword and a.keyword.value not in taken]
    return out


def _defaults_left(call: cst.Call, fdef: Union[cst.FunctionDef, cst.Lambda], names: Set[str]) -> List[cst.BaseExpression]:
    """The defaults of the parameters `names` of fdef that the call leaves out, and so runs with (round BC: a layout
    helper's `topk_indices=_WARMUP_TOPK`); each of them where the call spreads `*args` or `**kwargs`."""
    params = list(fdef.params.posonly_params) + list(fdef.params.params)
    params = params[1:] if _binds_first(call, fdef) else params
    spread = any(a.star for a in call.args)
    given = {p.name.value for p, _ in zip(params, [a for a in call.args if not a.keyword])}
    given |= {a.keyword.value for a in call.args if a.keyword}
    return [p.default for p in [*params, *fdef.params.kwonly_params] if p.name.value in names
            and p.default is not None and (spread or p.name.value not in given)]


def _enclosing_binding(tree: Tree, node: cst.Name, assignments: Sequence[object]) -> Optional[cst.CSTNode]:
    """A binding of `node` in a def enclosing the def or lambda that reads it (a closure's free name), but the
    enclosing method's `self`: what the trace reads there is compared by text, not scope (round BE)."""
    reader = next((x for x in tree.ancestors(node) if isinstance(x, (cst.FunctionDef, cst.Lambda))), None)
    for a in assignments:
        scope, target = getattr(a, "scope", None), getattr(a, "node", None)
        if not isinstance(scope, FunctionScope) or reader is None or scope.node is reader:
            continue
        if isinstance(target, cst.Param) and _instance_param(tree, target):
            continue
        if tree.inside(reader, scope.node) and target is not None:
            return target
    return None


def _nested_class(tree: Tree, call: cst.CSTNode) -> Optional[cst.ClassDef]:
    """A class body holding `call` that is itself defined in a def: its methods' callers are not followed (round BE)."""
    for cls in (x for x in tree.ancestors(call) if isinstance(x, cst.ClassDef)):
        if any(isinstance(x, (cst.FunctionDef, cst.Lambda)) for x in tree.ancestors(cls)):
            return cls
    return None


# a dict's methods that put values in (round BC's width mappings and round BE's looked-up indices alike)
MAPPING_FILLS = frozenset({"update", "setdefault", "__setitem__", "__ior__"})


def _fill_keys(call: cst.Call, method: str) -> Optional[Set[str]]:
    """The literal keys a mapping fill writes (`d.setdefault("k", v)`, `d.update(k=v)`), or None where any may be."""
    args = [a for a in call.args if not a.star and not a.keyword]
    if any(a.star for a in call.args):
        return None
    if method in ("setdefault", "__setitem__"):
        return {args[0].value.evaluated_value} if args and isinstance(args[0].value, cst.SimpleString) else None
    keys = {a.keyword.value for a in call.args if a.keyword}
    for a in args:
        if not (isinstance(a.value, cst.Dict) and all(isinstance(el, cst.DictElement) and isinstance(
                el.key, cst.SimpleString) for el in a.value.elements)):
            return None
        keys |= {el.key.evaluated_value for el in a.value.elements}
    return keys


def _mapping_fill(tree: Tree, mapping: cst.BaseExpression, key: Optional[str]) -> Optional[cst.CSTNode]:
    """A fill of the local mapping the indices are looked up in (`kwargs.setdefault(...)`, `staged.update(...)`,
    `staged |= {...}`), by any key or by the one looked up, anywhere in its def: the lookup's trace reads only the
    mapping's bindings (round BE)."""
    if not isinstance(mapping, cst.Name):
        return None
    owner = next((x for x in tree.ancestors(mapping) if isinstance(x, (cst.FunctionDef, cst.Lambda))), None)
    if owner is None:
        return None
    names = {mapping.value} | aliases_in(tree, owner, mapping.value)
    for aug in tree.find(cst.AugAssign, lambda a: isinstance(a.target, cst.Name) and a.target.value in names, owner):
        if isinstance(aug.operator, cst.BitOrAssign):
            return aug
    for call in tree.find(cst.Call, lambda c: isinstance(c.func, cst.Attribute), owner):
        method, holder, args = call.func.attr.value, call.func.value, call.args
        if isinstance(holder, cst.Name) and holder.value in ("dict", "operator") and args:
            holder, args = args[0].value, args[1:]  # (`dict.update(d, ...)`, `operator.setitem(d, k, v)`)
            method = "__setitem__" if method == "setitem" else method
        if method not in MAPPING_FILLS or not (isinstance(holder, cst.Name) and holder.value in names):
            continue
        keys = _fill_keys(call.with_changes(args=args), method)
        if keys is None or key is None or key in keys:
            return call
    return None


def _nested_owner(tree: Tree, param: cst.Param) -> Optional[Union[cst.FunctionDef, cst.Lambda]]:
    """The def or lambda taking `param`, where it is nested in a function (a closure); None for a module's def or a
    class body's."""
    owner = next((x for x in tree.ancestors(param) if isinstance(x, (cst.FunctionDef, cst.Lambda))), None)
    outer = next((x for x in tree.ancestors(owner) if isinstance(x, (cst.FunctionDef, cst.Lambda, cst.ClassDef))),
                 None) if owner is not None else None
    return owner if isinstance(outer, (cst.FunctionDef, cst.Lambda)) else None


def _nested_callers(tree: Tree, owner: Union[cst.FunctionDef, cst.Lambda]) -> Union[str, List[cst.Call]]:
    """Every call of a nested def or lambda (`attend(sel)`, `(lambda s: ...)(idx)`), or why they are not all seen:
    a lambda bound to anything but one plain name, a decorator that may call it otherwise, a second binding of its
    name, the name read as a value (round BC)."""
    up = tree.parent.get(owner)
    if isinstance(owner, cst.Lambda):
        if isinstance(up, cst.Call) and up.func is owner:
            return [up]
        targets = [t.target for t in up.targets] if isinstance(up, cst.Assign) else [up.target] if isinstance(
            up, cst.AnnAssign) else []
        if not (len(targets) == 1 and isinstance(targets[0], cst.Name) and up.value is owner):
            return f"the lambda at line {tree.line(owner)} is not bound to one plain name"
        bound = targets[0]
    else:
        bound = owner.name
        odd = next((d for d in owner.decorators if not _transparent(d.decorator)), None)
        if odd is not None:
            return f"`@{_brief(odd.decorator, 40)}` decorates `{bound.value}`: what it calls it with is not read"
    mine = owner if isinstance(owner, cst.FunctionDef) else bound
    outer = next(x for x in tree.ancestors(owner) if isinstance(x, (cst.FunctionDef, cst.Lambda)))
    calls = []
    for n in tree.find(cst.Name, lambda n: n.value == bound.value and n is not bound, outer):
        up = tree.parent.get(n)
        if isinstance(up, cst.Attribute) and n is up.attr or isinstance(up, cst.Arg) and n is up.keyword \
                or isinstance(up, cst.Param) and n is up.name:
            continue  # (`x.attend`, a keyword `attend=`, a parameter of that name: not this binding)
        assigned = tree.binding(n, n.value).assignments
        if not any(getattr(a, "node", None) is mine for a in assigned):
            continue  # (another binding of the name, in another scope)
        if len(assigned) > 1:
            return f"`{bound.value}` is bound more than once (line {tree.line(n)})"
        if not (isinstance(up, cst.Call) and up.func is n):
            return f"`{bound.value}` is read as a value at line {tree.line(n)}: what calls it is not seen"
        calls.append(up)
    return calls


def _reads_no_data(e: cst.BaseExpression) -> bool:
    """`x.shape`, `x.size(...)`, `len(x)`: a size or dtype, none of x's rows or entries (not `x.item(...)` nor
    `x.tolist()`, which hand its entries on: round AT's `self.ring.item(0)`, `history.tolist()[-1]`)."""
    if isinstance(e, cst.Attribute):
        return e.attr.value in NO_DATA_ATTRS
    if isinstance(e, cst.Call):
        name = get_full_name_for_node(e.func) or ""
        method = e.func.attr.value if isinstance(e.func, cst.Attribute) else ""
        return name == "len" or (method in NO_DATA_METHODS and method not in _ENTRY_READS
                                 and not method.startswith("new_"))  # new_full(...): a tensor of values
    return False


def _keyword(call: cst.Call, name: str) -> Optional[cst.BaseExpression]:
    return next((a.value for a in call.args if a.keyword and a.keyword.value == name), None)


def _fill_of(e: cst.Call) -> Optional[int]:
    """The integer a constant fill (FILLS) holds: `full(shape, v)`, `x.new_full(shape, v)`, `full_like(x, v)`,
    `fill_value=v`; 0 and 1 for the zeros and ones; None otherwise."""
    op = (get_full_name_for_node(e.func) or "").rsplit(".", 1)[-1]
    if op not in FILLS:
        return None
    if op in ("zeros", "zeros_like", "new_zeros", "ones", "ones_like", "new_ones"):
        return 1 if "ones" in op else 0
    args = [a for a in e.args if not a.keyword and not a.star]
    fill = _keyword(e, "fill_value") or (args[1].value if len(args) > 1 else None)
    return _int(fill) if fill is not None else None


def _constant_fill(e: cst.BaseExpression) -> bool:
    if _int(e) is not None or isinstance(e, cst.Float):
        return True
    return isinstance(e, cst.Call) and (get_full_name_for_node(e.func) or "").rsplit(".", 1)[-1] in FILLS


def index_hazard(tree: Tree, expr: cst.BaseExpression, hooks: Hooks = NO_HOOKS) -> Tuple[Optional[str], Set[str]]:
    """(why the kernel's indices may no longer be what the metadata counted, or None; their parameters)."""
    t = IndexTrace(tree, hooks.outside, hooks.rival, hooks.served, hooks.forked)
    up = tree.parent.get(expr)
    up = tree.parent.get(up) if isinstance(up, cst.Arg) else up
    if isinstance(up, cst.Call):
        t.exempt.add(id(up))  # the call the indices are traced for
        t.anchor = up
    local_class = _nested_class(tree, expr)
    if local_class is not None:  # (round BE: `_Launch().run(indices.sort(...).values)` is never traced)
        return (f"the kernel is called in class `{local_class.name.value}`, defined inside a def: the calls of its "
                "methods there are not traced; define the class at module level or launch from the method"), set()
    free = _free_read(tree, expr)
    if free is not None:  # (round BE: a mask or pad the enclosing def binds, read where its writes are not looked for)
        return (f"the indices read `{free.value}`, a free name of the nested def or lambda launching the kernel, bound "
                "in the def enclosing it: its value and writes there are not traced; pass it as a parameter, or "
                "launch the kernel from the method (round BE)"), set()
    return t.hazard(expr), {name for _, name in t.params}


def _free_read(tree: Tree, expr: cst.BaseExpression) -> Optional[cst.Name]:
    """A name read in the kernel's indices argument bound in a def enclosing the def or lambda around the call
    (`torch.where(valid, ...)`, whose mask the trace reads as a test, by its text, not its binding: round BE)."""
    if isinstance(expr, cst.Name):
        return None  # (a bare name is traced through every binding, in its own def: round U's deferred launch)
    for n in tree.find(cst.Name, None, expr):
        up = tree.parent.get(n)
        if isinstance(up, cst.Attribute) and n is up.attr or isinstance(up, cst.Arg) and n is up.keyword:
            continue
        if _enclosing_binding(tree, n, tree.binding(n, n.value).assignments) is not None:
            return n
    return None


# -- writes into storage the indices may share under another name (round P) ---------------------------------
def foreign_write(tree: Tree, call: cst.Call, methods: Callable[[str], List[cst.FunctionDef]],
                  fields: Set[str] = frozenset(), cache: Optional[Dict[Tuple[str, int], list]] = None,
                  caller_values: Optional[List[cst.BaseExpression]] = None) -> Optional[str]:
    """An in-place write, before the kernel call and in its function, into storage that may be the indices' under
    another name: another parameter, an attribute (`self.topk_buffer`), a module global, or a local bound to a view
    of one (the caller may hand the same tensor as both: round P); or such a write of `self.<attr>` in a method of
    the module the function calls through `self` first. Writes into fresh tensors, into what q and kv are
    read from (their values: `q[..., 64:].mul_(s)`) and into the metadata's `fields` (field-meaning judges those)
    pass. `methods`: the module's defs of a name; `cache`: each function's writes and reads of self, found once
    (many calls in one function). `caller_values`: `call` is a caller's call of the helper (round S: a caller
    masking the indices' sibling view), and these are what it hands for q and kv; its own writes count, not those
    of the methods it calls through self (sglang's callers call other backends' methods, which write their own
    buffers)."""
    fdef = next((x for x in tree.ancestors(call) if isinstance(x, cst.FunctionDef)), None)
    if fdef is None:
        return None
    cache = {} if cache is None else cache

    def once(kind: str, d: cst.FunctionDef, make: Callable[[cst.FunctionDef], list]) -> list:
        key = (kind, id(d))
        if key not in cache:
            cache[key] = make(d)
        return cache[key]

    def writing_reads(d: cst.FunctionDef) -> list:  # `self.m` reads whose method writes an attribute of self
        return [(read, target) for read in _self_methods_called(d) for m in methods(read.attr.value)
                for _, target in once("writes", m, lambda d: _inplace_targets(tree, d))
                if any(o.startswith("self.") for o in _origins(tree, m, target))]

    targets = once("writes", fdef, lambda d: _inplace_targets(tree, d)) + once("handed", fdef, lambda d: _handed_writes(tree, d, call))
    writing = once("writing-reads", fdef, writing_reads) if caller_values is None else []
    if not targets and not writing:
        return None
    values = caller_values if caller_values is not None else [_q_arg(call), _kv_arg(call)]
    reads = {"self"}.union(*(_origins(tree, fdef, v) for v in values))
    for node, target in targets:
        if off_path(tree, node, call, fdef):
            continue
        foreign = {o for o in _origins(tree, fdef, target) - reads if o.rsplit(".", 1)[-1] not in fields}
        if foreign:
            return (f"`{_brief(node, 60)}` writes `{sorted(foreign)[0]}` in place, which may be the indices' "
                    "storage under another name (a caller may hand the same tensor twice, or keep it elsewhere)")
    for read, target in writing:
        if not off_path(tree, read, call, fdef):
            return (f"`{read.attr.value}` (called at line {tree.line(read)}) writes `{_brief(target, 40)}` "
                    "in place, which may be the indices' storage under another name")
    return None


def _handed_writes(tree: Tree, fdef: cst.FunctionDef, kernel: cst.Call) -> List[Tuple[cst.CSTNode, cst.BaseExpression]]:
    """(the call, the argument) for each argument fdef hands a def of the module (`f(...)`, `self.m(...)`) for a
    parameter that def writes in place, or hands on to one that does (round AB: `_drop_before_window(
    metadata.page_table_1, start)` masking a table that may be the indices' storage)."""
    memo: Dict[Tuple[int, int], Set[str]] = {}
    return [(c, arg) for c in tree.find(cst.Call, None, fdef) if c is not kernel
            for d in local_defs(tree, c.func) for arg in _arguments_for(c, d, _params_written(tree, d, 0, memo))]


def _params_written(tree: Tree, fdef: cst.FunctionDef, depth: int, memo: Dict[Tuple[int, int], Set[str]]) -> Set[str]:
    """The parameters of fdef whose storage it writes in place, itself or through the defs of the module it hands
    them to (three deep; past that, every parameter)."""
    key = (id(fdef), depth)
    if key in memo:
        return memo[key]
    params = {p.name.value for p in (*fdef.params.posonly_params, *fdef.params.params, *fdef.params.kwonly_params,
                                     *(x for x in (fdef.params.star_arg, fdef.params.star_kwarg) if isinstance(x, cst.Param)))}
    memo[key] = out = params if depth > 3 else {
        o for _, t in _inplace_targets(tree, fdef) for o in _origins(tree, fdef, t) if o in params}
    for c in tree.find(cst.Call, None, fdef) if depth <= 3 else ():
        for d in local_defs(tree, c.func):
            written = _params_written(tree, d, depth + 1, memo) if d is not fdef else set()
            out |= {o for a in _arguments_for(c, d, written) for o in _origins(tree, fdef, a) if o in params}
    return out


def _kv_arg(call: cst.Call) -> Optional[cst.BaseExpression]:
    kv = next((a.value for a in call.args if a.keyword and a.keyword.value == "kv"), None)
    positional = [a for a in call.args if not a.keyword]
    return kv if kv is not None else positional[1].value if len(positional) > 1 and not positional[0].star else None


def _self_methods_called(fdef: cst.FunctionDef) -> List[cst.Attribute]:
    """`self.m` read in fdef (called or handed on), and `self.x.m`: a method of an object self keeps, which may
    write what that object holds (round AA: `self.indexer.finalize()` masking the buffer the indices are)."""
    class V(cst.CSTVisitor):
        def __init__(self) -> None:
            self.out: List[cst.Attribute] = []

        def visit_Attribute(self, node: cst.Attribute) -> None:
            owner = node.value.value if isinstance(node.value, cst.Attribute) else node.value
            if isinstance(owner, cst.Name) and owner.value == "self":
                self.out.append(node)
    v = V()
    fdef.body.visit(v)
    return v.out


def _inplace_targets(tree: Tree, fdef: cst.FunctionDef) -> List[Tuple[cst.CSTNode, cst.BaseExpression]]:
    """(the write, what it writes) for each in-place write in fdef: an in-place method's receiver, an item or
    slice assigned, `x += v`, `out=x`, and the values a `**mapping` spells (it may pass them as `out=`: round BC;
    a mapping the module does not spell, made by a call, is not read)."""
    class V(cst.CSTVisitor):
        def __init__(self) -> None:
            self.out: List[Tuple[cst.CSTNode, cst.BaseExpression]] = []

        def visit_Call(self, node: cst.Call) -> None:
            f = node.func
            if isinstance(f, cst.Attribute) and _in_place_name(f.attr.value) and f.attr.value != "__init__":
                self.out.append((node, f.value))
            self.out += [(node, a.value) for a in node.args if a.keyword and a.keyword.value == "out"]
            self.out += [(node, v) for a in node.args if a.star == "**" for v in _spread_values(tree, a.value, outs=True)]

        def visit_Assign(self, node: cst.Assign) -> None:
            self.out += [(node, t.target) for t in node.targets if isinstance(t.target, cst.Subscript)]

        def visit_AugAssign(self, node: cst.AugAssign) -> None:
            self.out.append((node, node.target))
    v = V()
    fdef.body.visit(v)
    return v.out


def _augmented(tree: Tree, a: object) -> Optional[cst.AugAssign]:
    """`x += v` binding x (a counter a closure bumps through `nonlocal`): x keeps its storage or gets a new object,
    and may hold v's (a list extended), so its origins are x's other bindings' and v's (round AZ's safe counter)."""
    node = getattr(a, "node", None)
    up = tree.parent.get(node) if node is not None else None
    return up if isinstance(up, cst.AugAssign) and up.target is node else None


def _origins(tree: Tree, fdef: cst.FunctionDef, e: Optional[cst.BaseExpression], depth: int = 0,
             within: FrozenSet[str] = frozenset()) -> Set[str]:
    """What storage `e` may be, named by where it comes from: parameters, globals and attributes (`self.buf`),
    through views, items and locals bound in fdef; a fresh tensor (a copy, `new_zeros`, `torch.empty`, arithmetic)
    comes from nowhere. Default-deny: an unknown call may hand back any argument or its receiver. `within`: the locals
    being expanded (`x += x` adds nothing to what x's other bindings give: a fixed point, read once)."""
    if e is None or depth > 12:
        return set()
    e = _viewed(e)
    if isinstance(e, cst.Name) and e.value in ("None", "True", "False"):
        return set()  # (a constant: no storage)
    if isinstance(e, cst.Name) and e.value in within:
        return set()
    if isinstance(e, cst.Name):
        assigned = tree.binding(e, e.value).assignments
        if not assigned or any(getattr(a, "scope", None) is not tree.scope_of.get(fdef.body)
                               or isinstance(getattr(a, "node", None), cst.Param) for a in assigned):
            return {e.value}  # a parameter, a global or a closure's: storage from outside
        out: Set[str] = set()
        for a in assigned:
            stmt = tree.assignment_statement(a) or _augmented(tree, a)
            value = getattr(stmt, "value", None) if isinstance(stmt, (cst.Assign, cst.AnnAssign, cst.AugAssign)) \
                else None
            if value is None or isinstance(stmt, cst.Assign) and not (
                    len(stmt.targets) == 1 and isinstance(stmt.targets[0].target, cst.Name)):
                return {e.value}  # bound otherwise (a loop, an unpacking): from anywhere
            out |= _origins(tree, fdef, value, depth + 1, within | {e.value})
        return out
    if isinstance(e, cst.Attribute):
        return set() if e.attr.value in NO_DATA_ATTRS else {_shown(e).strip()}
    if isinstance(e, (cst.BinaryOperation, cst.UnaryOperation)) and _passed_through(e):
        return set().union(*(_origins(tree, fdef, x, depth + 1, within) for x in _passed_through(e)))
    if isinstance(e, (cst.BinaryOperation, cst.UnaryOperation, cst.Comparison)) or isinstance(e, _NO_ROWS):
        return set()
    if isinstance(e, cst.Call):
        name = get_full_name_for_node(e.func) or ""
        op = name.rsplit(".", 1)[-1]
        if op in COPYING_METHODS or (op in FRESH_FUNCTIONS | COPYING_FUNCTIONS and _torch_function(e.func, name)):
            return set()
        parts = [e.func.value] if isinstance(e.func, cst.Attribute) else []
        return set().union(*(_origins(tree, fdef, x, depth + 1, within) for x in [*parts, *(a.value for a in e.args)]))
    if isinstance(e, (cst.Tuple, cst.List)):
        return set().union(*(_origins(tree, fdef, x.value, depth + 1, within) for x in e.elements)) if e.elements else set()
    if isinstance(e, cst.IfExp):
        return _origins(tree, fdef, e.body, depth + 1, within) | _origins(tree, fdef, e.orelse, depth + 1, within)
    if isinstance(e, cst.Dict) and all(isinstance(el, cst.DictElement) for el in e.elements):
        # (a `**mapping`'s display holds its values: `out=` may write them, round BC)
        return set().union(*(_origins(tree, fdef, el.value, depth + 1, within) for el in e.elements)) \
            if e.elements else set()
    return {_brief(e, 40)}


_WHERE_PARAMETERS = ("condition", "input", "other")


def _where_arguments(call: cst.Call):
    """`torch.where(condition, input, other)`'s three arguments as Python binds them, by place or by keyword in any
    order (round AW: `other=` written before `input=` swaps what a reading by place takes for each side); None for a
    star, an unknown keyword or a parameter given twice."""
    bound = {}
    for i, a in enumerate(call.args):
        if a.star:
            return None
        key = a.keyword.value if a.keyword is not None else _WHERE_PARAMETERS[i] if i < 3 else None
        if key not in _WHERE_PARAMETERS or key in bound:
            return None
        bound[key] = a.value
    return tuple(bound[k] for k in _WHERE_PARAMETERS) if len(bound) == 3 else None
