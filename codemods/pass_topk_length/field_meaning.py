"""docs/soundness.md `field-meaning`: wherever the module (or another file of the project,
_clipped_elsewhere) writes the metadata field, the value is the seqlens clipped to the top-k width (CLIPS,
CLIP_KEEPING, CLIPPED_FIELDS; the bound WIDTH_NAME, the operand _plain_lengths)."""
from __future__ import annotations

import ast
import re
from typing import Callable, List, Optional, Tuple

import libcst as cst
from libcst.helpers import get_full_name_for_node
from libcst.metadata import FunctionScope

from topk_migrate import bounded, kernels, project
from topk_migrate.cst.resolve import dotted

from . import engine_defs, field_writes, reach
from .engine_spellings import ENGINE_BATCH_FILES
from .rows import (
    _engine_import,
    _own_returns,
    aliases_in,
    engine_module,
    imported_names,
    local_defs,
    unproven_local,
    writes_in,
    written_names,
)
from .syntax import _as_ast, _brief, _code

# Field meaning: what the engines write into the metadata field (sglang (n|d)sa/utils.py).
CLIPS = {
    "compute_dsa_seqlens": "sglang dsa/utils.py: original_seq_lens.clamp(max=dsa_index_topk)",
    "compute_nsa_seqlens": "sglang nsa/utils.py: original_seq_lens.clamp(max=nsa_index_topk)",
}
CLIP_HOW = ("the engine's compute_dsa_seqlens / compute_nsa_seqlens, a clamp with max= or a minimum, bounded by the "
            "top-k width read plainly: self.dsa_index_topk, self.nsa_index_topk, INDEX_TOPK")
# Clamps whose result is a new tensor: `x.clamp_(max=w)` returns x itself, and a field set to it is x's storage,
# which later writes into x change (round R's u_graph_clamp_inplace_aliases_buffer).
CLAMPS = ("clamp", "clip", "minimum", "min")
CLIP_KEEPING = {"pad_dsa_cache_seqlens", "pad_nsa_cache_seqlens"}  # (forward_batch, clipped seqlens): padded for graphs
CLIPPED_FIELDS = {
    "dsa_cache_seqlens_int32": "the field itself", "nsa_cache_seqlens_int32": "the field itself",
    "dsa_cache_seqlens": "sglang dsa/dsa_backend_mtp_precompute.py PrecomputedMetadata: compute_dsa_seqlens, "
                         "or its fused twin for speculative steps",
    "nsa_cache_seqlens": "sglang nsa/nsa_backend_mtp_precompute.py PrecomputedMetadata: compute_nsa_seqlens",
}
# the engine's module that keeps such a field (its writes there are the engine's, filled by fused kernels too)
ENGINE_HOMES = {"dsa_cache_seqlens": "dsa/dsa_backend_mtp_precompute.py",
                "nsa_cache_seqlens": "nsa/nsa_backend_mtp_precompute.py"}


def _is_field(e: cst.BaseExpression, field_name: str) -> bool:
    """`x.field` or `x.field[...]`."""
    while isinstance(e, cst.Subscript):
        e = e.value
    return isinstance(e, cst.Attribute) and e.attr.value == field_name


def _calls_on_field(call: cst.Call, field_name: str) -> bool:
    """A call on the field: its method (through calls: `x.field.view(-1).narrow(...)`), or one handed it first."""
    while isinstance(call, cst.Call):
        if call.args and _is_field(call.args[0].value, field_name):
            return True
        if not isinstance(call.func, cst.Attribute):
            return False
        if _is_field(call.func.value, field_name):
            return True
        call = call.func.value
    return False


def _changes_in_place(node: cst.CSTNode, field_name: str) -> bool:
    """A write into the tensor `x.field` holds, other than `.copy_` (checked for its value): an in-place
    method (`x.field.add_(1)`, `x.field[:n].clamp_(...)`), `out=x.field`, `x.field[i] = v` or `x.field[i] += v`."""
    if isinstance(node, cst.Call):
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value.endswith("_") and func.attr.value != "copy_" \
                and _is_field(func.value, field_name):
            return True
        if isinstance(func, cst.Attribute) and func.attr.value.endswith("_") and isinstance(func.value, cst.Call) \
                and _calls_on_field(func.value, field_name):
            return True  # into what a call made of it (`torch.narrow(x.field, ...)`, `x.field.untyped_storage()`:
            # it may be a view of it, and a copy into it is not read for its value: round Y)
        return any(a.keyword is not None and a.keyword.value == "out" and _is_field(a.value, field_name) for a in node.args)
    target = node.target
    if isinstance(node, cst.AssignTarget) and _sliced_field(target, field_name):
        return False  # `x.field[:n] = v`: a copy into its rows, its value judged as `.copy_(v)`'s is (round T)
    return isinstance(target, cst.Subscript) and _is_field(target, field_name)


def _sliced_field(e: cst.BaseExpression, field_name: str) -> bool:
    """`x.field[:n]` (slices only)."""
    return isinstance(e, cst.Subscript) and all(isinstance(s.slice, cst.Slice) for s in e.slice) \
        and isinstance(e.value, cst.Attribute) and e.value.attr.value == field_name


def _file_resolver(f, env: Optional[dict]) -> Resolve:
    """FieldMeaning._resolver for a file read by reach.py: `env`'s parameters, a function's locals."""
    def resolve(name):
        if isinstance(name, ast.Attribute):
            if isinstance(name.value, ast.Name) and name.value.id == "self":
                return _file_attribute_values(f, name.attr)
            return _module_attribute(f, name)
        if env is not None and name.id in env:
            given, outer = env[name.id]  # (read where the call is: the caller's scope)
            return "param", [(given, _file_resolver(f, outer or None))]
        if f.enclosing(name, (ast.FunctionDef, ast.AsyncFunctionDef)) is None:
            return _module_values(f, name.id)  # the module's own name: what it is assigned (round V)
        values = reach.local_value(f, name)
        if values is None and not _bound_in(f, name):  # (a module's name read in a function: its module's value)
            return _module_values(f, name.id)
        if values is None:
            handed = _file_handed(f, name)  # (a method's parameter: what the file's calls of it hand, round AM)
            return ("param", [(v, resolve) for v in handed]) if handed else ("", None)
        scope = f.enclosing(name, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        lowered = _written_into(scope, lambda e: isinstance(e, ast.Name) and e.id == name.id,
                                any(_a_fill(v) for v in values))
        return "local", [(v, resolve) for v in values] + [(None, None)] * lowered
    resolve.serving = f.serving  # type: ignore[attr-defined]
    resolve.engine_batch = lambda name: _file_engine_batch(f, name, env)  # type: ignore[attr-defined]
    return resolve


def _file_handed(f, name: ast.Name) -> List[ast.AST]:
    """For a parameter of a method, what the file's calls of it off self hand it by position or keyword (the
    arguments, read where each call is); [] where it is no method's, or a call hands it by `*`/`**` or not at all."""
    fn = f.enclosing(name, (ast.FunctionDef, ast.AsyncFunctionDef))
    if fn is None or not isinstance(f.parents.get(id(fn)), ast.ClassDef):
        return []
    params = [x.arg for x in fn.args.posonlyargs + fn.args.args][1:]
    if name.id not in params:
        return []
    out = []
    for call in ast.walk(f.tree):
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == fn.name \
                and isinstance(call.func.value, ast.Name) and call.func.value.id == "self":
            given = next((k.value for k in call.keywords if k.arg == name.id), None)
            place = params.index(name.id)
            if given is None and place < len(call.args) and not any(isinstance(a, ast.Starred) for a in call.args):
                given = call.args[place]
            if given is None:
                return []
            out.append(given)
    return out


def _file_engine_batch(f, name: ast.Name, env: Optional[dict]) -> bool:
    """Is `name` a parameter of its function (not one `env` binds) annotated as the engine's batch class?"""
    fn = f.enclosing(name, (ast.FunctionDef, ast.AsyncFunctionDef))
    if fn is None or env is not None and name.id in env or any(
            isinstance(n, ast.Name) and n.id == name.id and not isinstance(n.ctx, ast.Load) for n in ast.walk(fn)):
        return False  # (rebound in the function: another object)
    a = fn.args
    arg = next((x for x in [*a.posonlyargs, *a.args, *a.kwonlyargs] if x.arg == name.id), None)
    return arg is not None and _annotated_class(arg.annotation, f.module_of) in ENGINE_BATCH \
        and not batch_forked(getattr(f._find, "__self__", None))


def batch_forked(proj) -> bool:
    """Does the project hold the engine's batch module (a fork's tree of sglang, an engine checked in place) other
    than a release has it: the module, or one its `ForwardBatch` derives from, with bytes no release's
    (ENGINE_BATCH_FILES)? Then the class the annotation names is the fork's own, read as any batch (its
    `seq_lens` a property, a `__post_init__` adding the drafts: round AU). Without a project: no."""
    if proj is None:
        return False
    done = proj.__dict__.setdefault("_batch_forked", [])
    if not done:
        path = proj._find_module(proj.module, ENGINE_BATCH_MODULE)
        g = proj._file_at(path) if path is not None else None
        if path is None:
            done.append(False)
        elif g is None or "ForwardBatch" not in g.classes:
            done.append(True)  # (unread, or the name bound otherwise: not the engine's class)
        else:
            hierarchy = {g.path, *(h.path for h, _ in proj.bases_in_order(g, g.classes["ForwardBatch"]))}
            done.append(any(_file_key_at(proj, p) not in ENGINE_BATCH_FILES for p in hierarchy))
    return done[0]


def _file_key_at(proj, path: str) -> Optional[str]:
    """The bytes key (field_writes.file_key) of a project file, read bounded; None where unreadable."""
    data = next((d for p, d in proj.texts() if p == path), None)
    return field_writes.file_key(data) if data is not None else None


def _bound_in(f, name: ast.Name) -> bool:
    """Does the function reading `name` bind it (a parameter, an assignment, a loop's target)?"""
    scope = f.enclosing(name, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
    a = scope.args
    return name.id in {x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg] if x is not None} \
        or any(isinstance(n, ast.Name) and n.id == name.id and not isinstance(n.ctx, ast.Load) for n in ast.walk(scope))


def _module_values(f, name: str, depth: int = 0) -> Tuple[str, Optional[List["Scoped"]]]:
    """What the file's module level binds `name` to: ("local", each value assigned, in any block but a def's or a
    class's; None for any other binding, or a function's `global` write of it), ("getter", its returns) for a
    def, the values a project file it is imported from binds, ("engine", []) for an import from the engine's
    packages; else ("", None). Round V: `INDEX_TOPK = 2048` in a constants module is a number, not the indices'
    width; round W: an `if` rebinding it, a `configure()` writing it through `global`, a fork's getter of the
    engine's name in another file."""
    found: List[Scoped] = []
    getters: List[Scoped] = []
    for node in _module_level(f.tree.body):
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                single = not isinstance(node, ast.AugAssign) and len(targets) == 1 and node.value is not None
                found.append((node.value, _file_resolver(f, None)) if single else (None, None))
            elif any(name in {n.id for n in ast.walk(t) if isinstance(n, ast.Name)} for t in targets):
                found.append((None, None))  # an unpacking
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            returns = [r.value for r in ast.walk(node) if isinstance(r, ast.Return)]
            getters += [(r, None) for r in returns] + [(None, None)] * (not returns or bool(node.decorator_list) or any(
                _field_of(r) and (_stored_elsewhere(f, _field_of(r)) or _given_elsewhere(f, _field_of(r)))
                for r in returns))  # (round X: a getter
            # lowering the config's field it returns)
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.With, ast.AsyncWith, ast.ClassDef)) \
                and name in _bound_by(node):
            found.append((None, None))
    if found and (name in f.froms or name in f.ambiguous or f.star_imports):
        found.append((None, None))  # (an import rebinding it after its assignment: `from overrides import *`, an
        # `if` importing a profile's: round Z)
    if name in f.global_names or _namespace_written(f) or _stored_elsewhere(f, name):
        found.append((None, None))  # a function rebinding it (`configure()`), `__getattr__`, `globals()`, another
        # file's `mod.NAME = v` (round X): not read
    if getters and not found:
        return "getter", getters
    if found:
        return "local", found + [(None, None)] * bool(getters)
    if name not in f.froms and f.star_imports:
        return "local", [(None, None)]  # (a star import may bind it: round X)
    if name in f.froms and name not in f.ambiguous and depth < 3:
        module, imported = f.froms[name]
        path = f._find(f.path, module)
        tree = bounded.python_facts(project.read_project_file(path)) if path and path.endswith(".py") else None
        if tree is not None:
            return _module_values(reach._File(path, tree, f._find), imported, depth + 1)
        if not module.startswith(".") and engine_module(module) and name not in f.ambiguous:
            return "engine", []
    if name in f.froms or name in f.ambiguous:  # (an import not followed: bound twice, an `except ImportError:`
        return "local", [(None, None)]  # fallback, past three re-exports, outside the project: round Z)
    if name in f.modules:
        return "module", None  # (`import fork_ctx`: its objects are read as a batch handed in is, round AM)
    return "", None


def _module_attribute(f, e: ast.Attribute) -> Tuple[str, Optional[List["Scoped"]]]:
    """What `module.name` holds where the receiver is one of the file's imports of a module: that project file's
    binding of the name, ("engine", []) for the engine's own module; else ("", None) (an object: judged by the
    name of its field, as a model config's `index_topk` is). Round W: `fork_config.DSA_INDEX_TOPK`, which the
    fork's `configure()` lowers."""
    module = f.module_of(e.value)
    if module is None or module.startswith("."):
        if not _object_read(f, e.value):
            return "local", [(None, None)]  # (off an object self keeps, a class, a call: round X)
        if WIDTH_NAME.fullmatch(e.attr):  # (the width's family: field_writes' default-deny reads every spelling, a
            return _given_elsewhere(f, e.attr) or ("", None)  # property's returns too: round AB)
        return _stored_elsewhere(f, e.attr) or ("", None)  # (a config's field the project writes: round X)
    path = f._find(f.path, module)
    if path and kernels.package_attribute_doubt(f.path, module):
        return "local", [(None, None)]  # (a package binding the submodule's name otherwise: not that file's, AR)
    tree = bounded.python_facts(project.read_project_file(path)) if path and path.endswith(".py") else None
    if tree is not None:
        return _module_values(reach._File(path, tree, f._find), e.attr, 1)
    # (a class or an object imported from elsewhere, `DSAConfig.index_topk`; a module outside the project: round X)
    return ("engine", []) if engine_module(module) else ("local", [(None, None)])


def _object_read(f, receiver: ast.AST) -> bool:
    """A receiver judged by the name of its field, as a model config's `hf_config.index_topk` is: a name that is no
    class of the file nor one it imports (a parameter, a local), or an attribute of one; not `self.indexer` (an object
    self keeps, which another part of the fork sizes), `DSAConfig` or `type(self)` (a class's attribute, which any
    code may set), nor a call's result."""
    while isinstance(receiver, ast.Attribute):
        if isinstance(receiver.value, ast.Name) and receiver.value.id == "self":
            return _handed_in(f, receiver.attr)  # `self.hf_config`: a config the constructor was handed
        receiver = receiver.value
    return isinstance(receiver, ast.Name) and receiver.id != "self" and receiver.id not in f.classes \
        and receiver.id not in f.froms and receiver.id not in f.modules


def _handed_in(f, attr: str) -> bool:
    """Does the file give `self.<attr>` only a parameter of the method assigning it, or an attribute of one
    (`self.hf_config = hf_config`), if anything? An object made here (`self.indexer = Indexer(cfg)`) sizes itself
    (round X)."""
    values = [n.value for n in ast.walk(f.tree) if isinstance(n, (ast.Assign, ast.AnnAssign)) and any(
        isinstance(t, ast.Attribute) and t.attr == attr and isinstance(t.value, ast.Name) and t.value.id == "self"
        for t in reach._flatten(n.targets if isinstance(n, ast.Assign) else [n.target]))]
    for v in values:
        while isinstance(v, ast.Attribute):
            v = v.value
        fn = f.enclosing(v, (ast.FunctionDef, ast.AsyncFunctionDef)) if isinstance(v, ast.Name) else None
        if fn is None or v.id not in {a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs}:
            return False
    return True  # (none here: set elsewhere, judged by the field's name as a never-assigned `self.<width>` is)


def _stored_elsewhere(f, attr: str) -> Optional[Tuple[str, List["Scoped"]]]:
    """("local", [unknown]) where a file of the project writes `<x>.<attr>` on anything but `self`
    (reach.Project.attribute_stores: a config's field lowered, a module's constant set from another file, an
    object's attribute set through `vars(x).update(...)`), else None."""
    proj = getattr(f._find, "__self__", None)  # (the Project whose module finder the file was parsed with)
    return ("local", [(None, None)]) if proj is not None and (
        proj.attribute_stores(attr) or proj.class_binds(attr, code_only=True) or proj.self_computed(attr)) else None


def _given_elsewhere(f, attr: str) -> Optional[Tuple[str, List["Scoped"]]]:
    """("local", [unknown]) where `attr` names the width and the project gives a name of its family a value of its
    own (field_writes), else None."""
    proj = getattr(f._find, "__self__", None)
    return ("local", [(None, None)]) if proj is not None and WIDTH_NAME.fullmatch(attr) \
        and field_writes.project_values(proj, attr, f) else None


def _namespace_written(f) -> bool:
    """Does the module serve names by code (a module-level `__getattr__`) or write its own namespace
    (`globals().update(...)`, `globals()[k] = v`)? Then a name of it may hold anything (round X)."""
    for node in _module_level(f.tree.body):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == "__getattr__":
            return True
    return any(isinstance(n, ast.Call) and reach._unparse(n.func) == "globals" for n in ast.walk(f.tree))


def _module_level(body: List[ast.stmt]):
    """The statements of a module's level: in its blocks (`if`, `try`, `with`, loops), not in a def or class."""
    for node in body:
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            for field in reach._BODIES:
                inner = getattr(node, field, None)
                if isinstance(inner, list):
                    yield from _module_level([x for x in inner if isinstance(x, ast.AST)])


def _bound_by(node: ast.AST) -> set:
    """The names a loop's or a `with`'s target (or a class) binds."""
    if isinstance(node, ast.ClassDef):
        return {node.name}
    targets = [node.target] if isinstance(node, (ast.For, ast.AsyncFor)) else [i.optional_vars for i in node.items]
    return {n.id for t in targets if t is not None for n in ast.walk(t) if isinstance(n, ast.Name)}


def _a_number(e: Optional[ast.AST], resolve: Optional[Resolve], depth: int = 0) -> bool:
    """Is `e` a literal number, or a name each of whose values is one (a parameter's default, a module's
    constant)? A number fixed in the source is not the indices' width (round S)."""
    if isinstance(e, ast.Constant):
        return isinstance(e.value, int)
    if isinstance(e, ast.Name) and resolve is not None and depth < 6:
        kind, values = resolve(e)
        return bool(kind) and bool(values) and all(_a_number(v, r, depth + 1) for v, r in values)
    return False


def _written_into(scope: ast.AST, holds: Callable[[ast.AST], bool], tensor: bool = False) -> bool:
    """Is a tensor `holds` names written in place anywhere in `scope`: an in-place method off it or an item of it
    (`w.fill_(k)`, `w[1::2].sub_(8)`), an item assigned (`w[i] = k`, `w[i] += k`), `out=w`? Round W: a width
    read through a tensor filled with it, then lowered for some rows. Where the width is such a tensor (`tensor`),
    default-deny (round X): any read of it but as a clip's bound may lower it (a view bound to another name, a
    helper handed it, a method's view written)."""
    if tensor and _used_otherwise(scope, holds):
        return True

    def named(e: ast.AST) -> bool:
        while isinstance(e, ast.Subscript):
            e = e.value
        return holds(e)
    for node in ast.walk(scope):
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Attribute) and f.attr.endswith("_") and not f.attr.endswith("__") and named(f.value):
                return True
            if any(k.arg == "out" and named(k.value) for k in node.keywords):
                return True
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] \
            if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
        if any(isinstance(t, ast.Subscript) and named(t) for t in targets):
            return True
    return False


_BOUND_CALLS = {"minimum", "min", "clamp", "clip", "clamp_max"}
_KEEPS_VALUES = {"to", "int", "long", "cuda", "contiguous", "cpu"}
_FILLS = {"full", "full_like", "new_full", "tensor", "as_tensor"}


def _a_fill(v: Optional[ast.AST]) -> bool:
    """A tensor made to hold the width (`torch.full_like(seq_lens, k)`, `torch.tensor(k)`)."""
    return isinstance(v, ast.Call) and (reach._unparse(v.func).rsplit(".", 1)[-1] in _FILLS)


def _used_otherwise(scope: ast.AST, holds: Callable[[ast.AST], bool]) -> bool:
    """Is what `holds` names read in scope anywhere but as a clip's bound (`torch.minimum(seq_lens, cap)`,
    `clamp(max=cap)`), through conversions that keep its values (`cap.to(torch.int32)`)?"""
    parents = {id(c): p for p in ast.walk(scope) for c in ast.iter_child_nodes(p)}
    for node in ast.walk(scope):
        if not holds(node) or isinstance(getattr(node, "ctx", None), (ast.Store, ast.Del)):
            continue
        cur, up = node, parents.get(id(node))
        while isinstance(up, ast.Attribute) and up.attr in _KEEPS_VALUES and isinstance(parents.get(id(up)), ast.Call) \
                and parents[id(up)].func is up:
            cur = parents[id(up)]
            up = parents.get(id(cur))
        call = parents.get(id(up)) if isinstance(up, ast.keyword) and up.arg == "max" else up if isinstance(up, ast.Call) \
            and cur in up.args else None
        name = reach._unparse(call.func).rsplit(".", 1)[-1] if isinstance(call, ast.Call) else ""
        if name not in _BOUND_CALLS:
            return True
    return False


def _bound_otherwise(tree: ast.AST, attr: str) -> bool:
    """`x.attr` bound other than by a plain assignment: among a tuple's targets (`self.w, self.mode = cap, m`), or by
    a literal `setattr`/`object.__setattr__` (round X: the width set where the value reader did not look)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(
                isinstance(t, (ast.Tuple, ast.List)) and any(isinstance(e, ast.Attribute) and e.attr == attr for e in ast.walk(t))
                for t in node.targets):
            return True
        if isinstance(node, ast.Call) and reach._unparse(node.func) in ("setattr", "object.__setattr__", "builtins.setattr") \
                and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) and node.args[1].value == attr:
            return True
    return False


def _class_body_values(classes: List[ast.ClassDef], attr: str, resolve: Optional["Resolve"] = None) -> List["Scoped"]:
    """What class bodies bind `attr` to, read as `self.attr`: an assignment's value (`dsa_index_topk = 2048`:
    round V), a def's (a property's) returns, None for any other binding (round W: a property lowering it)."""
    out: List[Scoped] = []
    for node in (n for c in classes for n in c.body):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None and any(
                isinstance(t, ast.Name) and t.id == attr for t in (node.targets if isinstance(node, ast.Assign) else [node.target])):
            out.append((node.value, resolve))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == attr:
            returns = [r.value for r in ast.walk(node) if isinstance(r, ast.Return)]
            out += [(r, resolve) for r in returns] or [(None, None)]
    return out


def _file_attribute_values(f, attr: str) -> Tuple[str, Optional[List["Scoped"]]]:
    """FieldMeaning._attribute_values for a file read by reach.py."""
    found: List[Scoped] = _class_body_values(f.class_defs, attr, _file_resolver(f, None))
    tensor = any(_a_fill(getattr(n, "value", None)) for n in ast.walk(f.tree) if isinstance(n, (ast.Assign, ast.AnnAssign))
                 and any(isinstance(t, ast.Attribute) and t.attr == attr for t in reach._flatten(
                     n.targets if isinstance(n, ast.Assign) else [n.target])))
    if _written_into(f.tree, lambda e: isinstance(e, ast.Attribute) and e.attr == attr, tensor) \
            or _bound_otherwise(f.tree, attr):
        found.append((None, None))
    for node in ast.walk(f.tree):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] \
            if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else []
        for t in targets:
            if isinstance(t, ast.Attribute) and t.attr == attr:
                plain = isinstance(node, ast.AnnAssign) or isinstance(node, ast.Assign) and len(node.targets) == 1
                value = node.value if plain else None
                init = isinstance(value, ast.Name) and _init_param_of(f, value)
                found.append((value, None if init else _file_resolver(f, None)) if value is not None else (None, None))
                if init and _given_elsewhere(f, value.id):
                    found.append((None, None))  # (a constructor's parameter some call hands a width of its own)
    return ("local", found) if found else ("", None)


def _init_param_of(f, name: ast.Name) -> bool:
    fdef = f.enclosing(name, (ast.FunctionDef, ast.AsyncFunctionDef))
    return fdef is not None and fdef.name == "__init__" and reach.local_value(f, name) is None \
        and name.id in {a.arg for a in fdef.args.posonlyargs + fdef.args.args + fdef.args.kwonlyargs}


def _clamp_of(e: cst.BaseExpression, operand: str, bound: str) -> bool:
    """`operand.clamp(max=bound)` (or `clip`), exactly."""
    return isinstance(e, cst.Call) and isinstance(e.func, cst.Attribute) and e.func.attr.value in ("clamp", "clip") \
        and isinstance(e.func.value, cst.Name) and e.func.value.value == operand and len(e.args) == 1 \
        and e.args[0].keyword is not None and e.args[0].keyword.value == "max" \
        and isinstance(e.args[0].value, cst.Name) and e.args[0].value.value == bound


def _engine_copy_elsewhere(f, local: str) -> bool:
    """Is `local`, imported by the file read by reach.py from the engine's package, a def of a file of the project other
    than as a release has it (a fork's own tree of sglang: round AB)? An import that leaves the project is the
    engine's."""
    module, imported = f.froms.get(local, ("", ""))
    path = f._find(f.path, module) if module else None
    if path is None:
        return False
    tree = bounded.python_facts(project.read_project_file(path)) if path.endswith(".py") else None
    defs = engine_defs.defs_named(tree, imported) if tree is not None else []
    return not defs or not all(engine_defs.release_def(tree, d) for d in defs)


def _engines_body_elsewhere(f, local: str, name: str) -> bool:
    """FieldMeaning._engines_body for a file read by reach.py: `local` imported once from a file of the project whose
    top-level def `name` is the engine's body."""
    if local in f.ambiguous or local not in f.froms:
        return False
    module, imported = f.froms[local]
    path = f._find(f.path, module)
    tree = bounded.python_facts(project.read_project_file(path)) if path and path.endswith(".py") else None
    defs = [d for d in (tree.body if tree is not None else []) if isinstance(d, ast.FunctionDef) and d.name == imported]
    if len(defs) != 1 or defs[0].decorator_list:
        return False
    params = [a.arg for a in defs[0].args.args]
    returns = [r for r in ast.walk(defs[0]) if isinstance(r, ast.Return)]
    if len(params) < 2 or len(returns) != 1 or returns[0].value is None or len(defs[0].body) - (
            ast.get_docstring(defs[0]) is not None) != 1:
        return False  # (one statement, the return: round AC)
    value = returns[0].value
    if name in CLIP_KEEPING:
        return isinstance(value, ast.Name) and value.id == params[1]
    return isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in ("clamp", "clip") \
        and isinstance(value.func.value, ast.Name) and value.func.value.id == params[0] and not value.args \
        and [(k.arg, getattr(k.value, "id", None)) for k in value.keywords] == [("max", params[1])]


def _kept(e: ast.AST) -> bool:
    """May `e` be an object an earlier step left? Anything but a plain name (a local, a parameter): `self.prev`,
    `self._previous()`, a module cache `_CACHE[bs]`, a class's attribute (round R: default-deny on the receiver).
    (A local bound to one is not followed: sglang reads its graph metadata's own field, `metadata = self.graph[bs]`,
    and copies it back into that field; telling that from another step's object is open, issue 33.)"""
    return not isinstance(e, ast.Name) or e.id == "self"


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


class FieldMeaning:
    """docs/soundness.md `field-meaning` in this module (a mixin of analysis._Analysis)."""

    def unclipped_write(self, field_name: str) -> Optional[str]:
        """Field meaning: where this module writes `field_name` (a constructor's or replace()'s keyword,
        an attribute assignment, an in-place `.copy_`), the value must be the seqlens clipped to the
        top-k width (CLIPS); the first write not proven so, or None."""
        def build() -> Optional[str]:
            for arg in self.find(cst.Arg, lambda a: a.keyword is not None and a.keyword.value == field_name):
                if not self._clipped(arg.value, set(), None, "" if self._handed_to_a_making(arg) else "*"):
                    return self._unclipped(field_name, arg, arg.value)
            for target in self.attribute_assigns(field_name):
                stmt = next((a for a in self.tree.ancestors(target) if isinstance(a, cst.Assign)), None)
                if stmt is not None and not self._clipped(stmt.value, set()):
                    return self._unclipped(field_name, target, stmt.value)
            self._copy_write = True  # (round BF: which batch a copy into a record holds is metadata-in-scope's
            try:  # last write, which reads the drafts staged before the planner's own refresh: _another_object)
                for call in filter(lambda c: c.args, self._field_copies(field_name)):
                    field = call.func.value
                    while isinstance(field, cst.Subscript):  # (`x.field[:n].copy_(...)`: x's field)
                        field = field.value
                    owner = field.value if isinstance(field, cst.Attribute) else None
                    if not self._clipped(call.args[0].value, set(), None, _code(owner).strip() if owner is not None else ""):
                        return self._unclipped(field_name, call, call.args[0].value)
            finally:
                self._copy_write = False
            for target in self.find(cst.AssignTarget, lambda t: _sliced_field(t.target, field_name)):
                stmt = self.tree.parent.get(target)
                if isinstance(stmt, cst.Assign) and not self._clipped(stmt.value, set()):
                    return self._unclipped(field_name, target, stmt.value)
            for node in self.find((cst.Call, cst.AssignTarget, cst.AugAssign), lambda n: _changes_in_place(n, field_name)):
                return (f"this module changes `{field_name}` in place at line {self.tree.line(node)} "
                        f"(`{_brief(node, 80)}`): the lengths it leaves are not provably the seqlens clipped to "
                        f"the top-k width ({CLIP_HOW}); pass topk_length by hand")
            return self._shared_by_copy(field_name)
        return self.index(f"unclipped:{field_name}", build)

    def built_outside(self) -> Optional[str]:
        """The holder given a class's construction by position where the class is outside the project (the
        engine's record): which argument lands in the field is not read (round V)."""
        def build() -> Optional[str]:
            held = self.held_attributes()
            for n, t, v in (x for d in self.find(cst.FunctionDef) for x in self._writes_in(d)):
                values = [v] if not isinstance(v, cst.Name) else self.tree.assigned_values(v, v.value) or []
                for value in values:
                    if isinstance(t, cst.Attribute) and t.attr.value in held and isinstance(value, cst.Call) \
                            and any(not a.keyword and not a.star for a in value.args) and self._outside_class(value):
                        return (f"line {self.tree.line(n)} gives the holder `{_code(value.func).strip()}(...)` by position, "
                                "a class outside the project: which argument lands in the lengths field is not read; "
                                "build it by keyword, or pass topk_length by hand")
            return None
        return self.index("built-outside", build)

    def _outside_class(self, call: cst.Call) -> bool:
        """A capitalised callee the module imports from outside the project."""
        name = dotted(call.func) or ""
        return name.rsplit(".", 1)[-1][:1].isupper() and name.partition(".")[0] in self.facts.imports \
            and self.outside_project(self.expand(name))

    def clipped_fields_read(self, field_name: str) -> Optional[str]:
        """A read of another field the engine keeps clipped (CLIPPED_FIELDS: `batch.dsa_cache_seqlens`) is
        trusted as one only where each write of it is clipped too: a name is no evidence (round U's
        u_batch_attr_named_like_clipped_field: a batch's own `dsa_cache_seqlens`, unclipped)."""
        return next(filter(None, (self.unclipped_write(g) for g in sorted(CLIPPED_FIELDS)
                                  if g != field_name and self.names_spelled(g))), None)

    def _field_copies(self, field_name: str) -> List[cst.Call]:
        """`x.field.copy_(...)` (`x.field[:n].copy_(...)` too): the module's in-place writes of the field's values."""
        return self.index(f"field-copies:{field_name}", lambda: self.find(cst.Call, lambda c: isinstance(
            c.func, cst.Attribute) and c.func.attr.value == "copy_" and _is_field(c.func.value, field_name)))

    def _shared_by_copy(self, field_name: str) -> Optional[str]:
        """Where this module writes the field in place, it makes no shallow copy (`copy.copy`, `dataclasses.replace`
        without the field, `__copy__`): the copy shares the tensor, so an update of another batch's lengths through
        one rewrites the other's (round R's u_shallow_copy_shares_field: a draft's metadata copied from the target's)."""
        writes = self._field_copies(field_name)
        if not writes:
            return None
        for call in self.find(cst.Call, lambda c: (get_full_name_for_node(c.func) or "").rsplit(".", 1)[-1] in (
                "copy", "replace", "__copy__")):
            names = imported_names(self.tree, call.func)
            shallow = "copy.copy" in names or "dataclasses.replace" in names and not any(
                a.keyword is not None and a.keyword.value == field_name for a in call.args) or isinstance(
                call.func, cst.Attribute) and call.func.attr.value == "__copy__"
            if shallow:
                return (f"line {self.tree.line(call)} makes a shallow copy (`{_brief(call, 60)}`), which shares "
                        f"`{field_name}`'s tensor with the object copied, and line {self.tree.line(writes[0])} writes "
                        "that field in place: an update for one batch may rewrite another's lengths; copy the field "
                        "(`.clone()`) into the copy, or pass topk_length by hand")
        for value in self.field_values(field_name):  # `DSAMetadata(field=a.field)`: the same tensor (round U)
            while isinstance(value, cst.Subscript) and all(isinstance(e.slice, cst.Slice) for e in value.slice):
                value = value.value
            if isinstance(value, cst.Attribute) and value.attr.value == field_name:
                return (f"line {self.tree.line(value)} gives `{field_name}` another object's tensor "
                        f"(`{_brief(value, 60)}`), and line {self.tree.line(writes[0])} writes that field in "
                        "place: an update for one batch may rewrite another's lengths (round U); `.clone()` it, or "
                        "pass topk_length by hand")
        return None

    def _unclipped(self, field_name: str, at: cst.CSTNode, value: cst.BaseExpression) -> str:
        text = _code(value).strip()
        return (f"this module sets `{field_name}` at line {self.tree.line(at)} from `{text[:80]}`, "
                f"not provably the seqlens clipped to the top-k width ({CLIP_HOW}) and left so (no in-place write "
                f"of it, not stored on another object){self._own_width_note(text)}{self._served_note(text)}"
                f"{self._other_object_note(value)}; clip it, or pass topk_length by hand")

    def _other_object_note(self, value: cst.BaseExpression) -> str:
        """Where the clip reads the lengths off a name that may hold another object than the planner's batch
        (_another_object): the real blocker (round BF)."""
        for read in self.find(cst.Attribute, lambda a: isinstance(a.value, cst.Name) and _seqlens_name(a.attr.value), value):
            if _another_object(ast.Name(id=read.value.value, ctx=ast.Load()), self._resolver(None, read.value)):
                return (f"; the lengths are read off `{read.value.value}`, which may hold another object than the "
                        "planner's batch (a parameter rebound in its def, or a name the backend's code binds or hands "
                        "an attribute of it, a choice, a loop's target: another step's lengths); clip the planner's "
                        "batch parameter's own lengths")
        return ""

    def _served_note(self, text: str) -> str:
        """Where a lengths' name the clip reads is served by a class's code (reach.Project.serving): the real
        blocker."""
        found = next((f for n in dict.fromkeys(re.findall(r"\w+", text)) if _seqlens_name(n)
                      for f in [self.project().serving(n)] if f is not None), None)
        return (f"; {found.what} at {found.where()}, so a batch's lengths read by that name may be what its code "
                "computes, not these rows' seqlens (a batch parameter annotated as the engine's `ForwardBatch` is "
                "read as the engine's)") if found else ""

    def _own_width_note(self, text: str) -> str:
        """Where the bound names the width's field and the project gives that field a value of its own: the
        first such spelling, the real blocker."""
        name = next((m.group(0) for m in re.finditer(r"\w*index_topk\w*", text, re.I) if WIDTH_NAME.fullmatch(
            m.group(0))), "")
        found = field_writes.project_values(self.project(), name, self.project().checked_file(
            self.source)) if name else []
        return (f"; the width's field `{name}` is given a value of its own at {found[0].where()} ({found[0].what}), "
                f"and is read as the indices' width only where every value the project gives it is {field_writes.PLAIN_VALUES}"
                ) if found else ""

    def _clipped(self, e: cst.BaseExpression, seen: set, env: Optional[tuple] = None, into: str = "") -> bool:
        """Is `e` the seqlens clipped to the top-k width, on every binding it can come from? `env`: while
        reading the returns of a function of this module, (its parameters -> the call's arguments, the
        caller's env)."""
        if isinstance(e, cst.Call):
            func = e.func
            name = (get_full_name_for_node(func) or "").rsplit(".", 1)[-1]
            method = isinstance(func, cst.Attribute)
            positional = [a.value for a in e.args if not a.keyword and not a.star]
            local = local_defs(self.tree, func)
            if local and unproven_local(self.tree, func, self.method_rival):
                return False  # its body is not what runs (an `lru_cache` keeping the first step's lengths: round AB)
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
                return bool(returns) and all(r is not None and self._clipped(r, seen, (args, env), into) for r in returns)
            if local:
                return False
            if name in CLIPS and not self._engines_clip(func, name):
                return False  # a fork's own function of the engine's name, unless its body is the engine's (round R)
            if name in CLIPS or name in CLAMPS:
                return _clips_to_width(_ast_of(e), self._resolver(env, e))
            if name in CLIP_KEEPING:  # pad_dsa_cache_seqlens(forward_batch, seqlens): pads clipped seqlens
                return len(positional) >= 2 and self._engines_clip(func, name) \
                    and all(self._clipped(v, seen, env, into) for v in positional[1:])
            if name in ("cat", "concat") and positional and isinstance(positional[0], (cst.List, cst.Tuple)):
                parts = [el.value for el in positional[0].elements]  # the rows, then rows of length 0 (padding)
                return bool(parts) and self._every_row(parts[0]) and self._clipped(parts[0], seen, env, into) \
                    and all(map(_zero_rows, parts[1:]))  # (a prefix of the rows, then zeros: real rows get 0, round R)
            if method and name in _CONVERSIONS and _keeps_values(_ast_of(e)):
                return self._clipped(func.value, seen, env, into)
            return False
        if isinstance(e, cst.Subscript):  # the first rows, in order
            return _prefix_slice(_ast_of(e).slice) and self._clipped(e.value, seen, env, into)
        if isinstance(e, cst.Attribute):  # another read of the clipped field, off an object of this step
            receiver = e.value
            while isinstance(receiver, cst.Name) and env is not None and env[0].get(receiver.value) is not None:
                receiver, env = env[0][receiver.value], env[1]  # a parameter: the object its call hands it
            return e.attr.value in CLIPPED_FIELDS and not _kept(_ast_of(receiver)) and not (
                isinstance(receiver, cst.Name) and (_code(receiver).strip() != into or env is not None) and into != "*"
                and self._read_off_self(receiver, record=CLIPPED_FIELDS[e.attr.value] == "the field itself"))
            # (a local bound to an object kept on self, an earlier step's record or another backend's, is another
            # object's field unless it is the one written: sglang copies its graph record's own field back, AM)
        if isinstance(e, cst.IfExp):
            return self._clipped(e.body, seen, env, into) and self._clipped(e.orelse, seen, env, into)
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
                    if not self._clipped(env[0][e.value], seen, env[1], into):
                        return False
                    continue
                if id(a) in seen:
                    continue  # `x = pad(fb, x)`: the other bindings of x decide
                seen.add(id(a))
                stmt = self.tree.assignment_statement(a)
                if stmt is None or not self._clipped(stmt.value, seen, env, into) or self._written_after(a, e.value, seen, env):
                    return False
            return True
        return False

    def _handed_to_a_making(self, arg: cst.Arg) -> bool:
        """Is the keyword handed to a class's making (`DSAMetadata(field=...)`, `dataclasses.replace(md, field=...)`),
        not to a function writing into what it is handed (`fused_dsa_decode_metadata(dsa_cache_seqlens=md.field)`,
        sglang 0.5.16's output buffer: any object's field is read there as before round AM)?"""
        call = self.tree.parent.get(arg)
        return isinstance(call, cst.Call) and reach.makes_a_record((get_full_name_for_node(call.func) or "").rsplit(".", 1)[-1])

    def _read_off_self(self, name: cst.Name, depth: int = 0, scope=None, record: bool = False) -> bool:
        """Is the local bound, in any of its assignments, to an object read off self (`prev = self.forward_metadata`,
        `hit = self._cache.get(key)`, either branch of a conditional) or, for a record's own field (`record`), handed
        to a planner or graph hook beside its batch (a draft planner handed the target's plan: another step's, AN),
        directly or through a local? (A batch's field off a parameter is the step's: the engine's precomputed one.)"""
        scope = scope or self.tree.scope_of.get(name)
        for a in self.tree.binding_in(scope, name.value).assignments:
            if record and isinstance(getattr(a, "node", None), cst.Param) and isinstance(
                    getattr(a.scope, "node", None), cst.FunctionDef) and reach.per_step_hook(a.scope.node.name.value):
                return True  # (a hook the engine calls with its batch: what else it is handed is not read)
            value = getattr(self.tree.assignment_statement(a), "value", None)
            alternatives = _alternatives(_ast_of(value)) if value is not None else []
            if any(_rooted_at_self(v) for v in alternatives) or depth < 4 and any(
                    isinstance(v, ast.Name) and self._read_off_self(cst.Name(v.id), depth + 1, scope, record) for v in alternatives):
                return True
        return False

    def _every_row(self, e: cst.BaseExpression, depth: int = 0) -> bool:
        """Not a slice of the rows: neither `x[:n]` nor a local bound to one (round V's u_cat_prefix_through_local_name)."""
        if isinstance(e, cst.Subscript):
            return False
        if isinstance(e, cst.Name) and depth < 4:
            values = [getattr(self.tree.assignment_statement(a), "value", None) for a in self.tree.binding(e, e.value).assignments]
            return all(v is None or self._every_row(v, depth + 1) for v in values)
        return True

    def _written_after(self, a, name: str, seen: set, env: Optional[tuple]) -> bool:
        """May the tensor a local clipped value names be changed in its function, or left where other code may
        change it: an in-place write (`x.cumsum_(0)`, `x[i] = v`, `out=x`), through a view alias too, a copy_ of a
        value not clipped, or the tensor itself stored on an object (`self.lengths = x`, then written elsewhere:
        round R; an object holding it, as the metadata does, is the field's own holder)?"""
        scope = getattr(a, "scope", None)
        if not isinstance(scope, FunctionScope):
            return False
        written = written_names(self.tree, scope.node)
        for n in [name, *sorted(aliases_in(self.tree, scope.node, name).intersection(written))]:
            w = writes_in(self.tree, scope.node, n)
            if w.subscripts or w.inplace or w.changes or w.outs or n == name and w.escapes or any(
                    not isinstance(c.func, cst.Attribute) or c.func.attr.value != "copy_" for c in w.mutators):
                return True
            if not all(self._clipped(v, seen, env) for v in w.copies):
                return True
        return False

    def _engines_clip(self, func: cst.BaseExpression, name: str) -> bool:
        """The engine's clip (or pad) by its import, where no file of the project defines it other than as a release
        does (a fork's own tree of sglang clipping at 1: round AB), or a project function whose body is the engine's."""
        return _engine_import(self.tree, func) and not self.forked_engine_op(name) or self._engines_body(func, name)

    def _engines_body(self, func: cst.BaseExpression, name: str) -> bool:
        """A project function of the engine's clip (or pad) name whose body is the engine's (a fork's copy of
        sglang's utils): one return of its first parameter clamped to its second (`s.clamp(max=w)`), or, for the
        pad, of its second parameter; any other body is not the engine's (round R's u_vendored_compute_dsa_seqlens)."""
        found = [self.external_def(qn) for qn in imported_names(self.tree, func)]
        if not found or None in found:
            return False
        for _, fdef in found:
            params = [p.name.value for p in fdef.params.params]
            returns = _own_returns(fdef)
            if fdef.decorators or len(params) < 2 or len(returns) != 1 or returns[0].value is None or len(
                    fdef.body.body) - (fdef.get_docstring() is not None) != 1:
                return False  # (one statement, the return: one before it may rebind a parameter, round AC)
            value = returns[0].value
            if name in CLIPS and not _clamp_of(value, params[0], params[1]):
                return False
            if name in CLIP_KEEPING and not (isinstance(value, cst.Name) and value.value == params[1]):
                return False
        return True

    def _resolver(self, env: Optional[tuple], at: cst.CSTNode) -> Resolve:
        """Names as _clips_to_width reads them where `at` is: while reading a function's returns (`env`), its
        parameters are the call's arguments; a local of a function is each value it is assigned; an attribute
        of `self` each value the module assigns to that attribute."""
        def resolve(name):
            if isinstance(name, ast.Attribute):
                if isinstance(name.value, ast.Name) and name.value.id == "self":
                    return self._attribute_values(name.attr)
                own = self.project().checked_file(self.source)
                return _module_attribute(own, name) if own is not None else ("", None)
            if env is not None and name.id in env[0]:
                given = env[0][name.id]  # (read where the call is: the caller's scope)
                return "param", [(_ast_of(given), self._resolver(env[1], given)) if given is not None else (None, None)]
            b = self.tree.binding(at, name.id)
            values = [getattr(self.tree.assignment_statement(a), "value", None) for a in b.assignments]
            if values and all(isinstance(v, cst.Integer) for v in values):  # `DSA_INDEX_TOPK = 2048`: a number
                return "constant", [(_ast_of(v), None) for v in values]  # fixed here, not the indices' width (round S)
            defs = [a.node for a in b.assignments if isinstance(getattr(a, "node", None), cst.FunctionDef)]
            if defs:  # a getter of this module's own (round U: a fork's `get_dsa_index_topk` rounding up): its returns
                returns = [_ast_of(r.value) for d in defs for r in self.find(cst.Return, None, d) if r.value is not None]
                lowered = any(_field_of(r) and (self.project().attribute_stores(_field_of(r)) or self._given(
                    _field_of(r))) for r in returns)
                return "getter", [(r, None) for r in returns] + [(None, None)] * (
                    len(defs) != len(b.assignments) or lowered)  # (round X: a getter lowering the config's field)
            if b.assignments and not any(isinstance(a.scope, FunctionScope) for a in b.assignments) and all(
                    isinstance(self.tree.assignment_statement(a), cst.Assign) for a in b.assignments):
                statements = [self.tree.assignment_statement(a) for a in b.assignments]  # a module's name: what it is
                return "local", [(_ast_of(x.value), self._resolver(None, x.value)) if len(x.targets) == 1  # assigned
                                 else (None, None) for x in statements]  # (round U: `int(os.environ[...])` is not)
            if not b.assignments or not all(isinstance(a.scope, FunctionScope) for a in b.assignments):
                own = self.project().checked_file(self.source)  # an import: what the project's file assigns it
                if own is not None and not b.assignments and own.star_imports:
                    return "local", [(None, None)]  # (a name a star import may bind: round X)
                return _module_values(own, name.id) if own is not None and b.assignments else ("", None)
            params = [a.node for a in b.assignments if isinstance(getattr(a, "node", None), cst.Param)]
            if params:  # what each of the module's calls of its function hands it (round P: not its name)
                return "param", self._handed_param(params[0])
            statements = [self.tree.assignment_statement(a) for a in b.assignments]
            values = [(_ast_of(x.value), self._resolver(env, x.value)) if isinstance(x, cst.Assign)
                      and len(x.targets) == 1 else (None, None) for x in statements]
            return "local", values + [(None, None)] * self._local_written_into(
                at, name.id, any(_a_fill(v) for v, _ in values))
        resolve.serving = self.project().serving  # type: ignore[attr-defined]
        resolve.backend_code = self._in_method(at)  # type: ignore[attr-defined]
        resolve.engine_batch = lambda name: env is None and self._engine_batch(at, name)  # type: ignore[attr-defined]
        resolve.rebound = lambda name: self._rebound_param(at, name.id)  # type: ignore[attr-defined]
        resolve.own_batch = not getattr(self, "_copy_write", False)  # type: ignore[attr-defined]
        return resolve

    def _rebound_param(self, at: cst.CSTNode, name: str) -> List[Optional[ast.AST]]:
        """What the def taking `name` as a parameter (read where `at` is) rebinds it to anywhere in its body (round BF:
        `forward_batch = forward_batch._replace(...)`, `fb = self._staged or fb`): each plain `name = v`'s value, None
        for any other binding (augmented, a loop's or `with`'s target, `:=`, an unpacking, `del`); for any name, None
        for each `match` pattern of the reading def capturing it (LibCST's scopes do not record those)."""
        reader = next((x for x in self.tree.ancestors(at) if isinstance(x, cst.FunctionDef)), None)
        captures = [None] * len(self.find((cst.MatchAs, cst.MatchStar, cst.MatchMapping), lambda m: _captures(
            m, name), reader)) if reader else []
        b = self.tree.binding(at, name)
        params = [a.node for a in b.assignments if isinstance(getattr(a, "node", None), cst.Param)]
        if not params:
            return captures
        out: List[Optional[ast.AST]] = captures
        for a in b.assignments:
            if isinstance(getattr(a, "node", None), cst.Param):
                continue
            stmt = self.tree.assignment_statement(a)
            plain = isinstance(stmt, cst.Assign) and len(stmt.targets) == 1 and isinstance(
                stmt.targets[0].target, cst.Name) or isinstance(stmt, cst.AnnAssign) and isinstance(stmt.target, cst.Name)
            out.append(_ast_of(stmt.value) if plain else None)
        fdef = next((x for x in self.tree.ancestors(params[0]) if isinstance(x, cst.FunctionDef)), None)
        dels = [d.target for d in self.find(cst.Del, None, fdef)] if fdef is not None else []
        deleted = any(isinstance(t, cst.Name) and t.value == name for d in dels
                      for t in [d, *(e.value for e in getattr(d, "elements", ()))])
        return out + [None] * deleted

    def _in_method(self, at: cst.CSTNode) -> bool:
        """Is `at` in the body of a class's method (the backend's code, not a module-level driver's)?"""
        fdef = next((x for x in self.tree.ancestors(at) if isinstance(x, cst.FunctionDef)), None)
        return fdef is not None and self.tree.is_method(fdef)

    def _engine_batch(self, at: cst.CSTNode, name: ast.Name) -> bool:
        """Is `name`, read where `at` is, a parameter bound once and annotated as the engine's batch class?"""
        b = self.tree.binding(at, name.id)
        params = [a.node for a in b.assignments if isinstance(getattr(a, "node", None), cst.Param)]
        if len(b.assignments) != 1 or len(params) != 1 or params[0].annotation is None:
            return False
        handed = [x for x, _ in self._handed_param(params[0]) if isinstance(x, ast.Call)]
        fdef = next(x for x in self.tree.ancestors(params[0]) if isinstance(x, cst.FunctionDef))
        return _annotated_class(_ast_of(params[0].annotation.annotation), self._module_of) in ENGINE_BATCH \
            and not batch_forked(self.project()) and not any(
            self._module_of(x.func) not in ENGINE_BATCH for x in handed) and not self.index(  # (a view the module hands
            f"view-elsewhere:{fdef.name.value}", lambda: _view_handed(self.project(), fdef.name.value))  # instead: AK)

    def _module_of(self, e: ast.AST) -> Optional[str]:
        """The dotted name an annotation's name or attribute has through this module's imports."""
        name = reach._unparse(e)
        return self.expand(name) if name else None

    def _local_written_into(self, at: cst.CSTNode, name: str, tensor: bool) -> bool:
        """Is the tensor the local `name` holds written in place in the function reading it where `at` is (`w[1::2]
        = k`, `w.fill_(k)`), or, a width tensor, read there but as a clip's bound: _written_into on the def's ast."""
        fdef = next((x for x in self.tree.ancestors(at) if isinstance(x, cst.FunctionDef)), None)
        tree = _as_ast(fdef) if fdef is not None else None
        return fdef is not None and (tree is None or _written_into(
            tree, lambda e: isinstance(e, ast.Name) and e.id == name, tensor))

    def _attribute_values(self, attr: str) -> Tuple[str, Optional[List["Scoped"]]]:
        """("local", each value the module assigns to `x.attr`, None for `+=` or an unpacking), or ("", None)
        where the module assigns none (a base class or another file sets it: judged by its name)."""
        targets = self.targets_named(attr)
        body = self._class_bodies_assign(attr)
        if not targets and not body:
            return "", None
        out: List[Scoped] = body
        for t in targets:
            stmt = t if isinstance(t, cst.AnnAssign) else self.tree.parent.get(t)
            value = getattr(stmt, "value", None)
            single = isinstance(stmt, cst.AnnAssign) or isinstance(stmt, cst.Assign) and len(stmt.targets) == 1
            if value is None or not single:
                out.append((None, None))
            else:  # a constructor's parameter: its callers build the object elsewhere, judged by its name, but a
                # number this module's own constructions hand it is no width (round V)
                init = self._init_param(value)
                out.append((_ast_of(value), None if init else self._resolver(None, value)))
                if init and self._given(value.value):
                    out.append((None, None))  # (a constructor's parameter some call hands a width of its own: round AA)
                out += [(ast.Constant(None), None) for v, r in (self._constructed_with(value) if init else [])
                        if _a_number(v, r)]  # (a number: no width)
        if self.assigned_elsewhere(attr) or self.project().attribute_stores(attr) or self.project().class_binds(attr):
            out.append((None, None))  # a subclass in another file setting it again (round T), another file's
            # `vars(backend).update(...)` or a property of that name (round X): not read
        tensor = any(_a_fill(v) for v, _ in out)
        if self.index(f"width-bound-otherwise:{attr}:{tensor}", lambda: self._width_bound_otherwise(attr, tensor)):
            out.append((None, None))  # a tensor of it lowered in place (round W: `self.topk_cap.fill_(k)`), a tuple
            # target or a literal setattr (round X)
        return "local", out

    def _given(self, attr: str) -> bool:
        """Does the project give a name of the width `attr`'s family a value of its own (field_writes)?"""
        return bool(WIDTH_NAME.fullmatch(attr)) and bool(field_writes.project_values(
            self.project(), attr, self.project().checked_file(self.source)))

    def _width_bound_otherwise(self, attr: str, tensor: bool = False) -> bool:
        """Is `x.attr` written in place, bound among a tuple's targets or by a literal setattr in this module (read
        whole once per attribute)?"""
        own = self.project().checked_file(self.source)
        holds = lambda e: isinstance(e, ast.Attribute) and e.attr == attr  # noqa: E731
        if tensor and any(_used_otherwise(f.tree, holds) for f in self.project().files_naming([attr])):
            return True  # (a width tensor another file reads: it may lower it, round X)
        return own is None or _written_into(own.tree, holds, tensor) \
            or _bound_otherwise(own.tree, attr)

    def _class_bodies_assign(self, attr: str) -> List["Scoped"]:
        """What this module's class bodies assign `attr` (read as `self.attr`: round V), as another file's are read."""
        own = self.project().checked_file(self.source)
        return self.index(f"class-body:{attr}", lambda: _class_body_values(own.class_defs, attr, _file_resolver(own, None)) if own else [])

    def _constructed_with(self, value: cst.Name) -> List["Scoped"]:
        """What this module's constructions of the class hand the `__init__` parameter `value` (its default where
        one does not hand it)."""
        param = next(a.node for a in self.tree.binding(value, value.value).assignments)
        fdef = next(x for x in self.tree.ancestors(param) if isinstance(x, cst.FunctionDef))
        cls = next((x for x in self.tree.ancestors(fdef) if isinstance(x, cst.ClassDef)), None)
        if cls is None:
            return []
        positional = [x.name.value for x in (*fdef.params.posonly_params, *fdef.params.params)][1:]
        default = [(_ast_of(param.default), self._resolver(None, param.default))] if param.default is not None else []
        out: List[Scoped] = []
        for call in (c for c in self.every_call_named(cls.name.value) if get_full_name_for_node(c.func) == cls.name.value):
            given = next((a.value for a in call.args if a.keyword and a.keyword.value == value.value), None)
            plain = [a.value for a in call.args if not a.keyword and not a.star]
            place = positional.index(value.value) if value.value in positional else None
            if given is None and place is not None and place < len(plain):
                given = plain[place]
            out += [(_ast_of(given), self._resolver(None, given))] if given is not None else default
        return out

    def _init_param(self, value: cst.BaseExpression) -> bool:
        """`value` is a name bound only as a parameter of an `__init__`."""
        if not isinstance(value, cst.Name):
            return False
        nodes = [getattr(a, "node", None) for a in self.tree.binding(value, value.value).assignments]
        fdefs = [next((x for x in self.tree.ancestors(n) if isinstance(x, cst.FunctionDef)), None) for n in nodes]
        return bool(nodes) and all(isinstance(n, cst.Param) for n in nodes) \
            and all(f is not None and f.name.value == "__init__" for f in fdefs)

    def _handed_param(self, param: cst.Param) -> List["Scoped"]:
        """What each call of param's function in this module hands it (its default where a call does not), each
        read where its call is; with no call here, its default, or (None, None): the caller's own, not read."""
        fdef = next((x for x in self.tree.ancestors(param) if isinstance(x, cst.FunctionDef)), None)
        if fdef is None:
            return [(None, None)]
        p = fdef.params
        positional = [x.name.value for x in (*p.posonly_params, *p.params)]
        method = self.tree.is_method(fdef)
        name = param.name.value
        default = (_ast_of(param.default), self._resolver(None, param.default)) if param.default is not None else (None, None)
        out: List[Scoped] = []
        kinds = {get_full_name_for_node(d.decorator) or "" for d in fdef.decorators}
        static, classmethod_ = "staticmethod" in kinds, "classmethod" in kinds
        for ref in self.find(cst.Name, lambda n: n.value == fdef.name.value):
            up = self.tree.parent.get(ref)
            call = self.tree.parent.get(up) if isinstance(up, cst.Attribute) and up.attr is ref else up
            if not (isinstance(call, cst.Call) and call.func in (ref, up)) and not isinstance(up, cst.FunctionDef):
                return [UNKNOWN]  # taken as a value (a dispatch table, getattr): its calls are not read (round R)
        if self.project().files_naming([fdef.name.value]):
            return [UNKNOWN]  # another file calls it too (a runner): what it hands is not read here (round R)
        for call in self.find(cst.Call, lambda c: (get_full_name_for_node(c.func) or "").rsplit(".", 1)[-1] == fdef.name.value):
            if any(a.star for a in call.args):
                return [UNKNOWN]  # (round R: what a `*args` call hands it is not read)
            given = next((a.value for a in call.args if a.keyword and a.keyword.value == name), None)
            bound = method and not static and isinstance(call.func, cst.Attribute) and (classmethod_ or not (
                get_full_name_for_node(call.func.value) or "").rsplit(".", 1)[-1][:1].isupper())  # (`Backend._build(self, x)`)
            place = positional.index(name) - (1 if bound else 0) if name in positional else None
            plain = [a.value for a in call.args if not a.keyword]
            if given is None and place is not None and 0 <= place < len(plain):
                given = plain[place]
            out.append((_ast_of(given), self._resolver(None, given)) if given is not None else default)
        return out or [default]


# The names the top-k width goes by (sglang: self.dsa_index_topk / self.nsa_index_topk, the indexer's index_topk):
# a clip's bound must be one, read plainly, so that topk_length never exceeds the indices' width (a bound of
# `2 * self.dsa_index_topk`, a literal, a bare `topk` (speculative decoding's draft top-k) or any other
# expression is not proven); a parameter is judged by what each call hands it.
WIDTH_NAME = re.compile(r"(?i)(dsa_|nsa_)?index_topk")
# The engine's function that reads the width from the model's config (sglang: get_dsa_index_topk(hf_config)); an
# attribute of self is each value the module assigns it (`self.dsa_index_topk = 2 * topk` is another width).
WIDTH_GETTER = re.compile(r"get_(dsa_|nsa_)?index_topk")
# The clip's operand, where it is read by its name (a local, an attribute, a parameter no call hands): it must
# say it holds seqlens (sglang: seqlens_expanded, cache_seqlens_int32, seq_lens) and not a batch's other lengths
# (the new tokens, the cached prefix): `positions`, `req_pool_indices` or `lens` are not read as seqlens (round Q).
SEQLENS_NAME = re.compile(r"(?i)(cache_)?seq_?lens?(_expanded|_int32|_cpu)?")  # (the whole name: `kv_seq_lens`,
# `seq_lens_with_lookahead` count other slots: round AT)
OTHER_LENGTHS = re.compile(r"(?i)extend|prefix|draft|accept|spec")


def _seqlens_name(name: str) -> bool:
    return bool(SEQLENS_NAME.fullmatch(name)) and not OTHER_LENGTHS.search(name)

# A name -> what it holds where it is read: ("param", [the argument a call hands it, or None where none is
# handed]) for a parameter of a function read with its call's arguments; ("local", [each value it is assigned,
# None for a binding that is no plain assignment]) for a local of a function; ("", None) otherwise (a module's
# constant, a parameter whose callers are not read: judged by its name).
# Each value comes with the resolver of the scope it is read in (a call's argument: the caller's).
Scoped = Tuple[Optional[ast.AST], Optional["Resolve"]]
Resolve = Callable[[ast.Name], Tuple[str, Optional[List[Scoped]]]]


def _unknown(_name) -> Tuple[str, None]:
    return "", None


UNKNOWN: Scoped = (None, _unknown)  # a value handed that is not read (a `*args` call, a function taken as a value)


def _values(e: ast.Name, resolve: Optional[Resolve]) -> Tuple[str, Optional[List[Scoped]]]:
    return resolve(e) if resolve else ("", None)


def _is_width(e: ast.AST, resolve: Optional[Resolve] = None, depth: int = 0) -> bool:
    """A plain read of the top-k width (`self.dsa_index_topk`, `INDEX_TOPK`), or a tensor filled with it; a
    parameter is what its call hands it, a local what it is assigned, a module's name or attribute what the module
    binds it to, the engine's own name the engine's width."""
    if isinstance(e, (ast.Name, ast.Attribute)):
        kind, values = _values(e, resolve)
        if kind == "engine":
            return True
        if kind:  # round Q: `self.dsa_index_topk = 2 * topk` is another width
            return depth < 8 and bool(values) and all(v is not None and _is_width(v, r, depth + 1) for v, r in values)
        return bool(WIDTH_NAME.fullmatch(e.id if isinstance(e, ast.Name) else e.attr))
    if isinstance(e, ast.IfExp):  # sglang-kt: `text_config.index_topk if is_glm5_next else get_nsa_index_topk(cfg)`
        return _is_width(e.body, resolve, depth + 1) and _is_width(e.orelse, resolve, depth + 1)
    if isinstance(e, ast.Call):
        name = e.func.attr if isinstance(e.func, ast.Attribute) else e.func.id if isinstance(e.func, ast.Name) else ""
        if isinstance(e.func, ast.Name) and name == "int" and len(e.args) == 1 and not e.keywords:
            return _is_width(e.args[0], resolve, depth + 1)  # (round AW: `int(hf.index_topk)` is the same width)
        if isinstance(e.func, ast.Name) and name == "getattr" and len(e.args) == 2 and not e.keywords and isinstance(
                e.args[1], ast.Constant) and isinstance(e.args[1].value, str) and e.args[1].value.isidentifier():
            read = ast.copy_location(ast.Attribute(value=e.args[0], attr=e.args[1].value, ctx=ast.Load()), e)
            return _is_width(read, resolve, depth + 1)  # (`getattr(hf, "index_topk")`, no default: the read)
        if WIDTH_GETTER.fullmatch(name):  # sglang: get_dsa_index_topk(hf_config), the engine's or one read here
            kind, values = _values(e.func, resolve)
            return kind == "engine" or kind == "getter" and bool(values) and all(
                v is not None and _config_width(v) for v, _ in values)
        fill = e.args[1] if name in ("full_like", "full", "new_full") and len(e.args) > 1 \
            else e.args[0] if name == "tensor" and e.args else None
        fill = next((k.value for k in e.keywords if k.arg == "fill_value"), fill)
        if any(k.arg == "out" for k in e.keywords):
            return False  # (`torch.full(..., out=scratch)`: the scratch buffer, which other code fills: round AA)
        return fill is not None and _is_width(fill, resolve, depth + 1)
    return False


def _field_of(e: Optional[ast.AST]) -> str:
    """The field a getter's return reads by name: `cfg.f`, `cfg["f"]`, `cfg.get("f")`; else ""."""
    if isinstance(e, ast.Attribute):
        return e.attr
    key = e.slice if isinstance(e, ast.Subscript) else e.args[0] if isinstance(e, ast.Call) and isinstance(
        e.func, ast.Attribute) and e.func.attr == "get" and e.args else None
    return key.value if isinstance(key, ast.Constant) and isinstance(key.value, str) else ""


def _config_width(e: ast.AST) -> bool:
    """What a getter of the width returns: the model config's field read plainly (`config.index_topk`,
    `config["index_topk"]`), or the engine's getter's result."""
    if isinstance(e, ast.Attribute):
        return bool(WIDTH_NAME.fullmatch(e.attr))
    if isinstance(e, ast.Subscript):
        return isinstance(e.slice, ast.Constant) and isinstance(e.slice.value, str) and bool(WIDTH_NAME.fullmatch(e.slice.value))
    if isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and e.func.attr == "get" and len(e.args) == 1 \
            and not e.keywords:  # `config.get("index_topk")` (no default: a missing width is None, which no clip takes)
        key = e.args[0]
        return isinstance(key, ast.Constant) and isinstance(key.value, str) and bool(WIDTH_NAME.fullmatch(key.value))
    return False


def _plain_lengths(e: Optional[ast.AST], resolve: Optional[Resolve] = None, depth: int = 0) -> bool:
    """The clip's operand read as it is: a name, an attribute, a prefix slice or a conversion of one, never
    arithmetic (`seq_lens - 1`) nor a batch's other lengths (OTHER_LENGTHS: `extend_seq_lens`); a parameter
    is what its call hands it, a local what it is assigned."""
    while isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and e.func.attr in _CONVERSIONS \
            and _wide_enough(e, resolve):
        e = e.func.value
    while isinstance(e, ast.Subscript) and _prefix_slice(e.slice):
        e = e.value
    if isinstance(e, ast.Name):
        kind, values = _values(e, resolve)
        if kind == "param":  # what each call hands it: read as a local's value is (a computed tensor is not read);
            # one no call hands: the caller's own parameter, judged by its name (round R: every call, not the first)
            return depth < 8 and bool(values) and all(
                _seqlens_name(e.id) if v is None and r is None else
                v is not None and (_plain_lengths(v, r, depth + 1) or _computed(v)) for v, r in values)
        # a local: the engine computes its lengths (sglang: `(seq_lens + draft_token_num)`, a `cat` of aranges
        # over the new and cached lengths, a row selection for context parallelism), so what it holds is not
        # read: which lengths these are would need the top-k emitter's own (open, issue 33); but a value that
        # reinterprets their bytes (`.view(torch.int32)` of int64 lengths: round V) is no lengths
        return _seqlens_name(e.id) and not (kind == "local" and any(
            _reinterprets(v, r) or _served_read(v, r or resolve) for v, r in values or []))
    if isinstance(e, ast.Attribute):  # (off self or an object self keeps: an earlier step's, rounds V and Y: a graph
        root = e.value  # runner's persistent buffers, `self.graph_inputs.seq_lens`)
        if not (isinstance(root, ast.Name) and root.id != "self"):
            return False  # (off an object the batch holds, `forward_batch.spec_info.seq_lens`, `fb.target_batch.
            # seq_lens`: another step's or another batch's lengths, round AT)
        # (`inputs = self.graph_inputs; inputs.seq_lens`: round Z; a builder handed a batch kept on self,
        # `self._build(self._verify_batch)`, through locals and parameters: round AM)
        return _seqlens_name(e.attr) and not _kept_object(root, resolve) and not _served_read(e, resolve) \
            and not _made_by_backend(root, resolve) and not _another_object(root, resolve)
    return False


def _kept_object(name: ast.Name, resolve: Optional[Resolve], depth: int = 0) -> bool:
    """May the name hold an object read off self (an earlier step's batch or inputs kept on the backend): a local
    any of whose values is read off self or not known, or a parameter some call of the module hands such a value
    (a parameter no call here hands is its caller's own: the engine's batch), through names 6 deep."""
    kind, values = _values(name, resolve)
    if kind not in ("local", "param") or depth > 6:
        return False
    for v, r in values or []:
        if v is None and kind == "param":
            continue
        for part in _alternatives(v):
            if _off_self(part) or isinstance(part, ast.Name) and _kept_object(part, r or resolve, depth + 1):
                return True
    return False


def _view_handed(proj, fname: str) -> bool:
    """Does a file of the project call `fname` handing it, first, an object it constructs (a class other than the
    engine's `ForwardBatch` by the file's imports, a `SimpleNamespace`; directly or through a local bound to one): another batch than the
    engine's, whatever the parameter's annotation says (round AQ's verify view of another file)? (A function's
    result is read as the engine's batch: sglang's test kits make theirs so.)"""
    for f in proj.files_naming([fname]):
        for call in (n for n in ast.walk(f.tree) if isinstance(n, ast.Call) and _unparse_name(n.func).rsplit(".", 1)[
                -1] == fname and n.args):
            first = call.args[0]
            scope = f.enclosing(call, (ast.FunctionDef, ast.AsyncFunctionDef)) or f.tree
            made = [first] if isinstance(first, ast.Call) else [n.value for n in ast.walk(scope) if isinstance(
                first, ast.Name) and isinstance(n, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == first.id for t in n.targets)]
            if any(_unparse_name(m.func).rsplit(".", 1)[-1][:1].isupper() and f.module_of(m.func) not in ENGINE_BATCH
                   for m in made if isinstance(m, ast.Call)):
                return True  # (a class of the name that is not the engine's, `draft_batch.ForwardBatch`: round AU)
    return False


def _captures(pattern: cst.CSTNode, name: str) -> bool:
    """Does a `match` pattern bind `name` (`case X(spec_info=name)`, `[*name]`, `{**name}`)?"""
    bound = pattern.rest if isinstance(pattern, cst.MatchMapping) else getattr(pattern, "name", None)
    return isinstance(bound, cst.Name) and bound.value == name


def _another_object(name: ast.Name, resolve: Optional[Resolve], depth: int = 0) -> bool:
    """May the clip operand's root hold another object than the planner's batch (round BF)? A parameter its def
    rebinds to anything but itself (`forward_batch = forward_batch._replace(...)`, `fb = self._staged or fb`); a
    parameter a method's call hands, or a local a method binds, anything but a name that is the batch itself (`x.spec_info
    or x`, a conditional choosing another object, an attribute of it, a loop's or a `match` pattern's target); a name
    handed on is read where it is handed, 8 deep. A module-level driver's value is its batch, as before; a call not
    read is judged by its name. Not asked of a copy into a record (`own_batch` off: metadata-in-scope's last write)."""
    if not getattr(resolve, "own_batch", False):
        return False
    if depth > 8:
        return True
    rebound = getattr(resolve, "rebound", None)
    if rebound is not None and any(not (isinstance(v, ast.Name) and v.id == name.id) for v in rebound(name)):
        return True
    kind, values = _values(name, resolve)
    if kind not in ("local", "param"):
        return False
    for v, r in values or []:
        if v is None and kind == "param":
            continue  # (the caller's own parameter, or calls not read: judged by its name)
        for part in _alternatives(v):
            if isinstance(part, ast.Name):
                if _another_object(part, r or resolve, depth + 1):
                    return True
            elif not (isinstance(part, ast.Constant) and part.value is None) and getattr(r or resolve, "backend_code", False):
                return True  # (the backend's own choice of object: `self._fill(fb.spec_info or fb)`)
    return False


def _made_by_backend(name: ast.Name, resolve: Optional[Resolve]) -> bool:
    """Is the object `name` holds (a local, or what a call hands the parameter) made by a call in a class's method
    (`self.init_forward_metadata(self._with_drafts(fb, n))`): the backend's own view of a batch, whose lengths are
    what its code gives them (round AQ's verify view), not a driver's batch?"""
    kind, values = _values(name, resolve)
    return kind in ("local", "param") and any(
        isinstance(part, ast.Call) and getattr(r, "backend_code", False)
        for v, r in values or [] for part in _alternatives(v))


def _rooted_at_self(v: Optional[ast.AST]) -> bool:
    """Is `v` read off self through attributes, items and calls (`self._plans.get(key)`, `self.target.metadata`)?"""
    while isinstance(v, (ast.Attribute, ast.Subscript, ast.Call)):
        v = v.func if isinstance(v, ast.Call) else v.value
    return isinstance(v, ast.Name) and v.id == "self"


def _alternatives(v: Optional[ast.AST]) -> List[Optional[ast.AST]]:
    """The values an expression may take as it is: each branch of a conditional, each operand of `or`/`and`."""
    if isinstance(v, ast.IfExp):
        return _alternatives(v.body) + _alternatives(v.orelse)
    if isinstance(v, ast.BoolOp):
        return [x for o in v.values for x in _alternatives(o)]
    return [v]


def _made_with_computed(v: Optional[ast.AST], resolve: Optional[Resolve]) -> bool:
    """Is `v` a call handed `**` a mapping of computed values, or of a project function one of whose returns is (its
    fields are what that code computes: round AM's function-built views)?"""
    if not isinstance(v, ast.Call):
        return False
    if reach.hands_computed_mapping(v):
        return True
    if not isinstance(v.func, ast.Name) or resolve is None:
        return False
    kind, returns = resolve(v.func)
    return kind == "getter" and any(isinstance(r, ast.Call) and reach.hands_computed_mapping(r) for r, _ in returns or [])


def _served(attr: str, resolve: Optional[Resolve]) -> bool:
    """Does a class of the project serve `attr` by code (reach.Project.serving), so that a batch's `.seq_lens`
    may be what a property computes? Without a resolver (nothing of the project read): yes."""
    serving = getattr(resolve, "serving", None)
    return bool(attr) and (serving is None or serving(attr) is not None)


def _served_read(v: Optional[ast.AST], resolve: Optional[Resolve]) -> bool:
    """Is `v` (under conversions and row slices: `fb.seq_lens.to(torch.int32)[:n]`) a read, off a parameter (a batch
    handed in), a local or a module's object (a step context: round AM) not annotated as the engine's batch class (ENGINE_BATCH: its lengths are the engine's, an engine-data
    assumption; round AJ), of an attribute a class of the project may serve (_served)?"""
    while isinstance(v, ast.Subscript) or isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute) \
            and v.func.attr in _CONVERSIONS:
        v = v.value if isinstance(v, ast.Subscript) else v.func.value
    if not isinstance(v, ast.Attribute):
        return False
    root = v.value
    while isinstance(root, ast.Attribute):  # (`forward_batch.spec_info.seq_lens`: round AK)
        root = root.value
    if not isinstance(root, ast.Name) or root.id == "self":
        return False
    kind, values = _values(root, resolve)
    if kind == "local" and values and all(_off_self(x) for x, _ in values):
        return False  # (a record of the backend's own, `metadata.dsa_seqlens_expanded[:n]`: its writes are read)
    if kind not in ("param", "local", "module"):
        return False
    if any(_made_with_computed(x, r or resolve) for x, r in values or []):
        return True  # (a project function's view: `verify_view(batch, n)` returning `SimpleNamespace(**{...})`, AM)
    engine_batch = getattr(resolve, "engine_batch", None)
    return not (kind == "param" and root is v.value and engine_batch is not None and engine_batch(root)) \
        and _served(v.attr, resolve)


# The engine's batch class: a parameter annotated with it holds the engine's rows' lengths (sglang's
# `init_forward_metadata(self, forward_batch: ForwardBatch)`); any other object's are read as the project may serve them.
ENGINE_BATCH = {"sglang.srt.model_executor.forward_batch_info.ForwardBatch"}
ENGINE_BATCH_MODULE = "sglang.srt.model_executor.forward_batch_info"


def _annotated_class(ann: Optional[ast.AST], module_of: Callable[[ast.AST], Optional[str]]) -> str:
    """The dotted class an annotation names (`ForwardBatch`, `"ForwardBatch"`, `Optional[ForwardBatch]`), through the
    file's imports (`module_of`), or ""."""
    if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
        try:
            ann = ast.parse(ann.value, mode="eval").body
        except SyntaxError:
            return ""
    if isinstance(ann, ast.Subscript) and _unparse_name(ann.value) == "Optional":
        ann = ann.slice
    return module_of(ann) or "" if isinstance(ann, (ast.Name, ast.Attribute)) else ""


def _off_self(v: Optional[ast.AST]) -> bool:
    """A value read off self (`self.graph_inputs`, `self.bufs[i]`), or not known."""
    while isinstance(v, (ast.Attribute, ast.Subscript)):
        v = v.value
    return v is None or isinstance(v, ast.Name) and v.id == "self"


def _reinterprets(e: Optional[ast.AST], resolve: Optional[Resolve] = None) -> bool:
    """Does the value's chain of conversions and row slices hold one that changes the lengths' values (a view or
    reshape by a dtype, a narrowing cast)?"""
    while e is not None:
        if isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and e.func.attr in _CONVERSIONS:
            if not _keeps_values(e, resolve):
                return True
            e = e.func.value
        elif isinstance(e, ast.Subscript):
            e = e.value
        else:
            return False
    return False


def _wide_enough(call: ast.Call, resolve: Optional[Resolve] = None) -> bool:
    """A conversion that keeps every length: `torch.<dtype>` handed to it only int32 or int64 (`.to(torch.int16)` wraps
    lengths past 32767: round R's u_int16_operand_wraps); a device, `non_blocking=` or `copy=` change no value. A
    dtype held by a name is what the module binds it to, and by any other attribute may be any (round Y)."""
    for a in [*call.args, *(k.value for k in call.keywords if k.arg in (None, "dtype", "device"))]:
        if isinstance(a, ast.Starred):
            return False  # (`.to(*self.staging)`: any dtype, round Z)
        if isinstance(a, ast.Name):
            kind, values = _values(a, resolve)
            if not (kind == "local" and values and all(v is not None and _wide_dtype(v) for v, _ in values)):
                return False
            continue
        if isinstance(a, ast.Attribute) and not reach._is_name(a.value, "torch") and a.attr != "device":
            return False
        for n in ast.walk(a):
            if isinstance(n, ast.Attribute) and reach._is_name(n.value, "torch") \
                    and n.attr not in ("int32", "int64", "long", "int", "device"):
                return False
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and not n.value.startswith(("cuda", "cpu")):
                return False
    return True


def _wide_dtype(e: ast.AST) -> bool:
    return isinstance(e, ast.Attribute) and reach._is_name(e.value, "torch") and e.attr in ("int32", "int64", "long", "int")


def _keeps_values(call: ast.AST, resolve: Optional[Resolve] = None) -> bool:
    """A conversion of the clipped lengths that keeps each value: `.to`/`.int()`.. as _wide_enough; `.view`/
    `.reshape` by sizes only (`.view(torch.int32)` on int64 lengths reinterprets their bytes: round S)."""
    if not isinstance(call, ast.Call) or not _wide_enough(call, resolve):
        return False
    if isinstance(call.func, ast.Attribute) and call.func.attr in ("view", "reshape"):
        return not any(isinstance(n, ast.Attribute) and n.attr in ("dtype", "int32", "int64", "long", "int")
                       or isinstance(n, ast.Constant) and isinstance(n.value, str) for a in call.args for n in ast.walk(a)) \
            and not (len(call.args) == 1 and isinstance(call.args[0], ast.Name))  # (a lone name may be a dtype)
    return True


def _computed(e: ast.AST) -> bool:
    """A value a call computes (`torch.where(...)`), not arithmetic on the lengths nor a clip of them: read no
    further, as a local's value is not (which lengths the engine computes needs the emitter's own: issue 33)."""
    if not isinstance(e, ast.Call):
        return False
    name = e.func.attr if isinstance(e.func, ast.Attribute) else e.func.id if isinstance(e.func, ast.Name) else ""
    # (a conversion computes nothing: `fb.extend_prefix_lens.to(torch.int32)` is read through, as _plain_lengths
    # reads it: round Y)
    return name not in CLIPS and name not in ("clamp", "clamp_", "clip", "clip_", "minimum", "min", "sub", "add") \
        and name not in _CONVERSIONS


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
    if any(k.arg is None for k in e.keywords) or any(isinstance(a, ast.Starred) for a in e.args) or "out" in kw:
        return False  # (`out=buf`: the result is buf, which later writes into it change: round S)
    if not method and name not in CLIPS and not (isinstance(func, ast.Attribute) or name == "min"):
        return False  # a bare `clip(...)`/`minimum(...)` is a fork's own function, not torch's (round S)
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


def _clipped_elsewhere(f, e, depth: int, env: Optional[dict] = None, seen: Optional[set] = None,
                       into: str = "") -> bool:
    """`FieldMeaning._clipped` for a value another file of the project gives the field (CPython's ast, read
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
        if len(local) == 1 and len(positional) == len(e.args) and not local[0].decorator_list:  # (a decorated def runs
            params = [p.arg for p in local[0].args.posonlyargs + local[0].args.args]  # its wrapper: round AC's c3)
            args = dict.fromkeys(params)  # (a parameter not handed: its default, not known)
            args.update(zip(params, positional))
            args.update({k.arg: k.value for k in e.keywords if k.arg})
            caller = (env or {}).copy()
            bound = {p: (v, caller) for p, v in args.items()}
            returns = [r.value for r in ast.walk(local[0]) if isinstance(r, ast.Return)]
            return bool(returns) and all(r is not None and _clipped_elsewhere(f, r, depth + 1, bound, seen, into) for r in returns)
        if local:
            return False
        if (name in CLIPS or name in CLIP_KEEPING) and not (isinstance(func, ast.Name) and (
                field_writes.engine_name(f.tree, func.id) and not _engine_copy_elsewhere(f, func.id)
                or _engines_body_elsewhere(f, func.id, name))):
            return False  # a fork's own function of the engine's name, unless its body is the engine's (round R)
        if name in CLIPS or name in CLAMPS:
            return _clips_to_width(e, _file_resolver(f, env))
        if name in CLIP_KEEPING:
            return len(positional) >= 2 and all(_clipped_elsewhere(f, v, depth + 1, env, seen, into) for v in positional[1:])
        if name in ("cat", "concat") and positional and isinstance(positional[0], (ast.List, ast.Tuple)):
            parts = positional[0].elts  # the rows, then rows of length 0 (padding); not a prefix of them (round R)
            return bool(parts) and not isinstance(parts[0], ast.Subscript) \
                and _clipped_elsewhere(f, parts[0], depth + 1, env, seen, into) and all(
                isinstance(p, ast.Call) and _unparse_name(p.func) in ("zeros", "new_zeros", "zeros_like")
                for p in parts[1:])
        if method and name in _CONVERSIONS and _keeps_values(e):
            return _clipped_elsewhere(f, func.value, depth + 1, env, seen, into)
        return False
    if isinstance(e, ast.Subscript):  # the first rows, in order
        return _prefix_slice(e.slice) and _clipped_elsewhere(f, e.value, depth + 1, env, seen, into)
    if isinstance(e, ast.Attribute):  # another read of the clipped field, off an object of this step
        receiver = e.value
        while isinstance(receiver, ast.Name) and env is not None and env.get(receiver.id) is not None \
                and env[receiver.id][0] is not None:
            receiver, env = env[receiver.id][0], env[receiver.id][1] or None  # a parameter: what its call hands it
        return e.attr in CLIPPED_FIELDS and not _kept(receiver) and not (
            isinstance(receiver, ast.Name) and (receiver.id != into or env is not None) and into != "*" and any(
                _rooted_at_self(a) for v in reach.local_value(f, receiver) or () for a in _alternatives(v)))
        # (a local bound to an object kept on self: an earlier step's record, round AM)
    if isinstance(e, ast.IfExp):
        return _clipped_elsewhere(f, e.body, depth + 1, env, seen, into) and _clipped_elsewhere(f, e.orelse, depth + 1, env, seen, into)
    if isinstance(e, ast.Name):
        if env is not None and e.id in env:  # a parameter of the function being read: the call's argument
            value, outer = env[e.id]
            return value is not None and _clipped_elsewhere(f, value, depth + 1, outer or None, seen, into)
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
            return all(_clipped_elsewhere(f, v, depth + 1, env, seen, into) for v in values)
        finally:
            seen.discard(key)
    return False
