"""docs/soundness.md `callers`: every call of the function the rows and indices come from (the one that binds the
metadata), in any file of the project and on any receiver that may be an instance of its class, hands it what
that caller was handed itself, unchanged: its own parameters (or an attribute of one), neither bound again nor
written nor handed to another call first. A model layer that sorts its tokens, a subclass's new method calling
`super().forward(q[order], ...)` or an async step between (round J1) are refused; the callers' own callers are
read where a caller of another name hands on what it was handed (round AM), and what wraps a caller is (its
decorators, its class's, a module's pre-hooks: rounds AE, AG). The engine's own dispatch (`AttentionBackend.forward`) is read as
any caller is: a fork's copy of it may sort the rows (round P)."""
from __future__ import annotations

import ast
import builtins
import re
from typing import List, NamedTuple, Optional, Set, Tuple

from topk_migrate import kernels

from . import built_names, class_escape, engine_defs, namespaces, reach
from .helper_identity import ARGUMENT_PASSING_DECORATORS
from .rows import (
    _INPLACE_SLOT,
    _WRITING_FUNCTIONS,
    _WRITING_ROOTS,
    COPYING_FUNCTIONS,
    COPYING_METHODS,
    FRESH_FUNCTIONS,
    IN_PLACE_LIBRARY,
    LOGGING_ROOTS,
    NO_DATA_METHODS,
    TENSOR_VIEW_METHODS,
)
from .syntax import binds

# The engine's dispatch, by the module its class is defined in: the framework calls it with the batch's rows and
# fills its `**kwargs` (the indices among them), which it may hand on whole.
ENTRY_BASES = {
    ("base_attn_backend", "AttentionBackend"): "sglang layers/attention/base_attn_backend.py: RadixAttention calls "
    "forward_batch.attn_backend.forward(q, k, v, layer, forward_batch, ...) with the batch's rows; forward "
    "dispatches to forward_extend / forward_decode",
}
ENTRY_METHOD = "forward"
# The engine's metadata hooks (sglang's AttentionBackend interface), called by the model runner before each step's
# forward, before the indexer emits the step's indices: what they write in place is the metadata, which
# metadata-in-scope and graph-replay prove; a backend's object made and driven through them (a harness's driver) is
# not read as writing the indices (a stated assumption of the engine's order).
PLANNER_HOOKS = {"init_forward_metadata", "init_forward_metadata_capture_cuda_graph",
                 "init_forward_metadata_replay_cuda_graph", "init_cuda_graph_state"}
# Reads of a handed tensor that neither write it nor hand it on: its metadata, a new tensor shaped like it.
_READS = {"shape", "dtype", "device", "ndim", "is_cuda", "size", "dim", "numel", "new_empty", "new_zeros", "new_full",
          "new_ones", "new_tensor", "element_size", "is_contiguous", "stride", "data_ptr", "get_device"}
# A tensor's own copies (a method of the tensor): a new tensor, unless the project defines a method of the name
_OWN_COPIES = {"clone", "new_zeros", "new_empty", "new_full", "new_ones", "new_tensor"}
# What runs its body more than once in one call of a function (a comprehension holds no statement: no `if` in one)
_LOOPS = (ast.For, ast.AsyncFor, ast.While, ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)
# (parameter, its place among the positional ones after self, "" or "*" / "**" for the `*args` / `**kwargs` it is)
Wanted = Tuple[Tuple[str, Optional[int], str], ...]


class Outer(NamedTuple):
    """Where the walk of callers' callers stands (round AM): how many calls up, the attributes read off each traced
    parameter below (a record's fields), whether the traced function is a method."""
    depth: int = 0
    fields: frozenset = frozenset()
    method: bool = False
    mine: Optional[frozenset] = None  # (the traced method's classes, where its own callers are read: unchanged_callers)
    seen: Optional[frozenset] = None  # (a trusted wrapper's walk: the classes whose own calls the walk read already)


_TOP = Outer()  # (the traced function's own callers)


def unchanged_callers(proj, name: str, wanted: Wanted, mine: Optional[Set[Tuple[str, str]]] = None,
                      named: frozenset = frozenset(), outer: Outer = _TOP) -> Optional[reach.Finding]:
    """The first call of `name` in another file (a function whose parameters `wanted` the rows or indices come
    from) that may hand them something other than what its own caller was handed, or None. `mine`: for a method, the classes whose
    `self` may be an instance of its class (reach.Project.instance_classes); `self.name(...)` in any other class
    calls another class's method of that name. A caller of another name handing on what it was handed is read up
    the project through its own callers (`outer`: _outer_callers, round AM)."""
    spelled = proj.spellings({name}) | _mangled(proj, name)  # (a package re-exports it: `from backend import attend
    # as sparse_attention` in ops/__init__.py, round T; under a third name, aliased at module level: round AR; a
    # private method called by its mangled name, `self._Runner__attend(...)`: round AT)
    files = proj.files_naming(sorted(spelled))  # (the module's own calls: WholeProject._module_callers, but up the walk)
    own = proj.own() if outer.depth else None
    if own is not None and any(isinstance(n, (ast.Name, ast.Attribute)) for key in spelled for n in _spelling(proj, own).get(key, ())):
        files = [*files, own]  # (a caller's caller in the module itself: round AN)
    if mine is not None:
        outer = outer._replace(mine=frozenset(mine))
    for f in files:
        for node in ast.walk(f.tree):
            if outer.method and isinstance(node, ast.Name) and not isinstance(f.enclosing(node, _SCOPES), ast.ClassDef):
                continue  # (a method is reached by a bare name only where some binding spells it: that one is read)
            if not any(_spells(node, n) for n in spelled) or outer.seen is not None \
                    and not _elsewhere(proj, f, node, outer.seen):
                continue  # (another name; or read by the walk that trusted the wrapper)
            if not _elsewhere(proj, f, node, mine):
                found = _caller(proj, f, node, name, wanted, (named, outer))
                if found is not None:
                    return found
    return _own_callers(proj, name, mine) or built_names.lookup(
        proj, name, lambda f, obj: _elsewhere(proj, f, ast.Attribute(value=obj, attr=name), mine))


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def _mangled(proj, name: str) -> Set[str]:
    """A private name's mangled spellings (`__attend` of class Runner: `_Runner__attend`), for each class of the
    project defining a method of the name."""
    if not name.startswith("__") or name.endswith("__"):
        return set()
    return {f"_{c.name.lstrip('_')}{name}" for g in proj.files_naming([name]) for c in g.class_defs
            if any(isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef)) and d.name == name for d in c.body)}


def _own_callers(proj, name: str, mine: Optional[Set[Tuple[str, str]]]) -> Optional[reach.Finding]:
    """The module's own calls of `name`, beside the in-module trace of what they hand (WholeProject._module_callers):
    what the caller does around the call is read as another file's caller's is (a callee that may write what it
    hands, a call writing state it keeps, an `await` first: round Z's z2)."""
    f = proj.own()
    for node in _spelling(proj, f).get(name, ()) if f is not None else ():
        call = f.parents.get(id(node))
        if not (_spells(node, name) and isinstance(call, ast.Call) and call.func is node) \
                or _elsewhere(proj, f, node, mine):
            continue
        fn = f.enclosing(call, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef))
        while isinstance(fn, ast.Lambda) and not _takes_any(fn):  # (a graph step: its function's names, round AC)
            fn = f.enclosing(fn, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef))
        why = _sibling_written(proj, f, fn, call, known=True) or _awaits_before(f, fn, call) \
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) else None
        if why:
            return reach.Finding(proj.rel(f.path), call.lineno, f"`{reach._unparse(call)[:60]}` in `{fn.name}` {why}")
    return None


def _spelling(proj, f) -> dict:
    """The module's names and attributes, by what they spell (one walk of it for every site: round AA's scale)."""
    cache = proj.__dict__.setdefault("_own_spelling", {})
    if id(f) not in cache:
        found: dict = {}
        for node in ast.walk(f.tree):
            key = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
            if key is not None:
                found.setdefault(key, []).append(node)
        cache.clear()
        cache[id(f)] = found
    return cache[id(f)]


def _elsewhere(proj, f, node: ast.AST, mine: Optional[Set[Tuple[str, str]]]) -> bool:
    """`self.name(...)` / `super().name(...)` in a method of a class whose `self` is never an instance of the
    method's class (not in `mine`), proven (round T): no base of it names no class, it forwards no attribute
    lookup (`__getattr__`, `__getattribute__`: a proxy's `self.forward` is the backend's), and no method of it is
    read off the class (`Mixin.method(backend, ...)` runs it with the backend as `self`)."""
    cls = f.instance_of(node.value) if mine is not None and isinstance(node, ast.Attribute) else None
    if cls is None or (f.path, cls.name) in mine:
        return False
    methods = {d.name for d in cls.body if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef))}
    if _forwards_lookup(proj, f, cls, node.attr) or _mixed_with_unknown(proj, cls):
        return False
    return not any(isinstance(n, ast.Name) and n.id == cls.name and isinstance(n.ctx, ast.Load)
                   and _may_lend(g, n, methods) for g in proj.files_naming([cls.name]) for n in ast.walk(g.tree))


def _mixed_with_unknown(proj, cls: ast.ClassDef) -> bool:
    """Does a class of the project derive from cls beside a base that names no class (a factory's parameter,
    `BACKENDS["dsa"]`: round W's mixin combined with the backend at run time)? Then cls's `self` may be anything."""
    for g in proj.files_naming([cls.name]):
        for c in g.class_defs:
            names = [reach._unparse(b).rsplit(".", 1)[-1] for b in c.bases]
            if cls.name in names and any(_names_no_class(proj, g, b) for b in c.bases):
                return True
    return False


def _names_no_class(proj, g, base: ast.AST) -> bool:
    """A base expression that names no class the reader knows: a call's result, a parameter, an item of a table
    (`BACKENDS["dsa"]`, whose name resolves to no class of its file)."""
    path, name = proj._defining(*g.resolve_class(base))  # (through a package's re-export: `from ..utils import Op`)
    if path is None:
        return not g.known_base(base)
    h = proj._file_at(path)
    return h is not None and name not in {c.name for c in h.class_defs}


def _may_lend(f, name: ast.Name, methods: Set[str]) -> bool:
    """May this read of a class hand one of its methods to another object: `Mixin.verify` or `Mixin.__dict__` read
    off it, or the class handed to a call (`vars(Mixin)["verify"]`, `getattr(Mixin, "verify")`, `graft(Mixin)`:
    round W)? A base, a construction, an alias, an annotation or a type test lend nothing."""
    up = f.parents.get(id(name))
    if isinstance(up, ast.Attribute):
        return up.attr in methods or up.attr in ("__dict__", "__getattribute__")
    while isinstance(up, ast.Tuple):
        up = f.parents.get(id(up))
    return isinstance(up, ast.Call) and up.func is not name and reach._unparse(up.func) not in (
        "isinstance", "issubclass") and not class_escape.kept_locally(f, name)  # (a local list tested against)


def _forwards_lookup(proj, f, cls: ast.ClassDef, name: str) -> bool:
    """May `self.<name>` on cls's instances reach another object (round U: a base of the project defining
    `__getattr__`, one bound in a class body, `__getattr__ = delegate_to(...)`, a library base such as a proxy)?
    A `__getattribute__` anywhere in its hierarchy; else, where no class of the project in it binds the name,
    a `__getattr__` or a base that is neither a project class nor `object` (a library's may forward; torch's
    `nn.Module` serves only what its instance registers: round AL's sglang `MultiPlatformOp`)."""
    hierarchy = [(f, cls), *proj._ancestors_of([(f, cls)])]
    bound = set()
    for _, c in hierarchy:
        bound |= {d.name for d in c.body if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef))} | {
            n for d in c.body if isinstance(d, (ast.Assign, ast.AnnAssign)) for n in reach._stored_names(d)}
    if "__getattribute__" in bound:
        return True
    if name in bound:
        return False
    return "__getattr__" in bound or any(g.resolve_class(b)[0] is None and not g.known_base(b)
                                         and not g.torch_module_base(b) for g, c in hierarchy for b in c.bases)


def _spells(node: ast.AST, name: str) -> bool:
    """A read of `name`: `x.name`, `name`, or a string naming it, alone or as a dotted path's last part (round O:
    `getattr(b, "forward_decode")`; round AJ: `attrgetter("backend.forward")`, `"backend:forward"`)."""
    return isinstance(node, ast.Attribute) and node.attr == name and isinstance(node.ctx, ast.Load) \
        or isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load) \
        or isinstance(node, ast.Constant) and isinstance(node.value, str) and _names_path(node.value, name)


_PATH = re.compile(r"[A-Za-z_][\w.:]*")


def _names_path(text: str, name: str) -> bool:
    """Is `text` the name, or a dotted (or `module:attr`) path whose last part is it?"""
    return text == name or bool(_PATH.fullmatch(text)) and re.split(r"[.:]", text)[-1] == name


def _caller(proj, f, node: ast.AST, fname: str, want: Wanted,
            how: Tuple[frozenset, Outer] = (frozenset(), _TOP)) -> Optional[reach.Finding]:
    """Why this read of `fname` may hand it other rows than its caller was handed, or None (`how`: the names of the
    traced function's parameters, and where the walk of callers' callers stands)."""
    named, outer = how
    at = lambda why: reach.Finding(proj.rel(f.path), getattr(node, "lineno", 0), why)  # noqa: E731
    call = f.parents.get(id(node))
    if isinstance(node, ast.Constant):  # a string: a way to look it up by name, unless a label (`prefix="..."`), a
        child = node  # message or a comparison
        while isinstance(call, (ast.IfExp, ast.BoolOp)):  # (`"forward" if sparse else "forward_dense"`: round Z)
            child, call = call, f.parents.get(id(call))
        # (handed to any call but a message's by position, or an item's key: `attrgetter`, `getattr_static`,
        # `object.__getattribute__(b, ...)`, `type(b).__dict__[...]`, `dict(getmembers(b))[...]`: round AJ)
        named = isinstance(call, ast.Call) and child in call.args and not _message_call(call) \
            or isinstance(call, ast.Subscript) and call.slice is child
        if named:
            return at(f"`{reach._unparse(call)[:60]}` looks `{fname}` up by name: what calls it is not seen")
        # kept for later (a dispatch table's value, a name bound to it, an element of a list): round U
        kept = isinstance(call, (ast.Dict, ast.List, ast.Tuple, ast.Set, ast.Assign, ast.AnnAssign, ast.Return))
        return at(f"`{fname}` is spelled as a string kept for a lookup by name (a dispatch table's entry): what calls "
                  "it is not seen") if kept else None
    if not (isinstance(call, ast.Call) and call.func is node):
        return at(f"`{reach._unparse(node)[:60]}` is read as a value: what calls it with which rows is not seen")
    fn = f.enclosing(call, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef))
    while isinstance(fn, ast.Lambda) and not _takes_any(fn):
        if _kept(f, fn):
            return at(f"`{reach._unparse(call)[:60]}` is in a lambda kept on an object or in a table: a later call runs "
                      "it with the tensors of the step that made it")
        fn = f.enclosing(fn, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef))  # a graph step
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return at(f"`{reach._unparse(call)[:60]}` is called outside a function: the rows it hands are not traced")
    sources = _sources(proj, f, call, want, named, dict(outer.fields))
    unread = sorted(k.arg for k in call.keywords if k.arg and named and k.arg not in named)
    if unread and len(sources) < len(want):  # (`forward(q_nope_rope=q[order], topk_indices=...)`: round AT)
        return at(f"`{reach._unparse(call)[:60]}` in `{fn.name}` hands `{unread[0]}`, a name `{fname}` here does not "
                  "take: it may call another function of that name, whose parameters are not read")
    for source in sources:
        why = _handed_root(At(proj, f, fn, call), source, fname, {p for p, _, _ in want}) or _served(proj, source)
        if why:
            return at(f"`{reach._unparse(call)[:60]}` in `{fn.name}` {why}")
    why = _sibling_written(proj, f, fn, call, known=f is proj.own()) or _awaits_before(f, fn, call)
    if why:
        return at(f"`{reach._unparse(call)[:60]}` in `{fn.name}` {why}")
    return _outer_callers(At(proj, f, fn, call), (fname, want, named), sources, outer.depth, outer.mine)


def _sources(proj, f, call: ast.Call, want: Wanted, named: frozenset, fields: dict) -> List[ast.AST]:
    """What the call hands the traced parameters (both readings of a method read off a class); where only some
    attributes of a parameter are read below (`fields`) and the call makes it a project record that stores its
    parameters (`_Step(q, kv, indices)`), the arguments that become those attributes instead (round AM)."""
    out = []
    for shift in ((0, 1) if _unbound(f, call.func) else (0,)):  # bound, or `Class.method(obj, ...)`
        for param, place, kind in want:
            for source in _arguments(call, param, None if place is None else place + shift, kind, named):
                made = _record_fields(proj, f, source, fields[param]) if isinstance(source, ast.Call) \
                    and fields.get(param) else None
                out.extend(made if made is not None else [source])
    return out


def _record_fields(proj, f, call: ast.Call, attrs: frozenset) -> Optional[List[ast.AST]]:
    """The arguments of `Cls(...)` that become the attributes `attrs` of the object it makes, where Cls is a class
    of the project whose only initializer is its own `__init__` storing each as a bare parameter (`self.q = q`: no
    base of the project, no `__new__`, metaclass, `__post_init__` or decorator but `dataclass`); else None."""
    made = _class_made(proj, f, call)
    if made is not None and (_record_doubt(f, call, made[1]) or _class_patched(proj, made[0], made[1])):
        return None
    inits = _initializers(proj, f, call) if made is not None and not [
        b for b in made[1].bases if reach._unparse(b) != "object"] else None
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return None
    declared = _dataclass_fields(proj, made[0], made[1]) if made is not None and inits == [] else \
        _named_tuple_fields(made[0], made[1]) if made is not None else None
    if declared is not None:  # (a dataclass's own `__init__` stores each field as handed: round AQ)
        stored, params = {n: n for n in declared}, declared
    elif not inits or len(inits) != 1 or not reach.stores_its_parameters(inits[0][1]):
        return None
    else:
        d = inits[0][1]
        stored = {t.attr: stmt.value.id for stmt in d.body if isinstance(stmt, ast.Assign) for t in stmt.targets
                  if isinstance(t, ast.Attribute) and isinstance(stmt.value, ast.Name)}
        params = [x.arg for x in d.args.posonlyargs + d.args.args][1:]
    out = []
    for attr in sorted(attrs):
        arg = _argument(call, stored[attr], params.index(stored[attr]) if stored.get(attr) in params else None) \
            if attr in stored else None
        if arg is None or isinstance(arg, (ast.Starred, ast.keyword)):
            return None
        out.append(arg)
    return out


# what a class body may bind that changes how a making stores what it is handed
_MAKING_NAMES = ("__init__", "__new__", "__post_init__", "__setattr__", "__getattr__", "__getattribute__",
                 "__init_subclass__", "__class_getitem__")


def _record_doubt(f, call: ast.Call, cls: ast.ClassDef) -> bool:
    """May `Cls(...)` in file f run another class or another initializer than the one read (round AS): the name (or
    its module's) bound more than once in f or rebound through `global`; its module one Python may load from
    elsewhere or read as a package's attribute the package rebinds (kernels.import_doubt); an initializer or store
    hook bound in the class body otherwise than by one plain top-level def (an assignment, a def under an `if`, a
    decorated `__init__`)?"""
    root = call.func
    while isinstance(root, ast.Attribute):
        root = root.value
    if not isinstance(root, ast.Name) or root.id in f.ambiguous or root.id in f.global_names:
        return True
    module = f.module_of(call.func.value) if isinstance(call.func, ast.Attribute) else \
        f.froms[root.id][0] if root.id in f.froms else None
    if module and kernels.import_doubt(f.path, module, isinstance(call.func, ast.Attribute) or None):
        return True
    top = {d.name: d for d in cls.body if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef))}
    other = [n for stmt in cls.body if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef))
             for n in _class_statements(stmt)]  # (a def under an `if`, an assignment anywhere in the body)
    bound = {t.id for n in other for t in reach._flatten(reach._written_targets(n)) if isinstance(t, ast.Name)} | {
        n.name for n in other if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    return bool(bound & set(_MAKING_NAMES)) or bool("__init__" in top and top["__init__"].decorator_list)


def _class_patched(proj, g, cls: ast.ClassDef) -> bool:
    """Round BJ: is the record class (of file g) given an attribute after its body, in a file of the project naming it
    (g and the module included): a store `Cls.x = ...` (`Step.__init__ = _balanced_init` at import), a making or store
    hook stored on any object (`S.__setattr__ = f` through an alias), or a `setattr`/`delattr` on it, or of a hook's
    or a computed name? Then the making or the reads run code its body does not show."""
    for h in {id(x): x for x in [g, *_files_and_module(proj, [cls.name])]}.values():
        for node in ast.walk(h.tree):
            if isinstance(node, ast.Attribute) and not isinstance(node.ctx, ast.Load) and (
                    isinstance(node.value, ast.Name) and node.value.id == cls.name or node.attr in _MAKING_NAMES):
                return True
            if isinstance(node, ast.Call) and reach._unparse(node.func) in ("setattr", "delattr", "builtins.setattr") \
                    and len(node.args) >= 2 and (reach._unparse(node.args[0]) == cls.name or not isinstance(
                        node.args[1], ast.Constant) or node.args[1].value in _MAKING_NAMES):
                return True
    return False


def _class_statements(stmt: ast.stmt):
    """The statement and those nested in it (an `if`'s, a `try`'s branches), not a def's or a class's body."""
    yield stmt
    if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        for field in ("body", "orelse", "finalbody", "handlers"):
            for child in getattr(stmt, field, ()):
                yield from _class_statements(child)


def _dataclass_fields(proj, g, cls: ast.ClassDef) -> Optional[List[str]]:
    """The `__init__` parameters, in order, of a class of file g whose only decorator is the standard library's
    `@dataclass` (resolved through g's imports: pydantic's or attrs' run validators and hooks; no `init=False`), with
    no `__post_init__`, `__new__`, `__init__` or `__setattr__` of its own and no metaclass, whose fields are
    annotations (a `ClassVar` is none: _annotation_kind) with no value, a literal default or a `dataclasses.field(...)`
    of literal settings (`default=None, repr=False`; not `init=False` or `kw_only`): it stores each as handed. None
    for any other class."""
    decorator = cls.decorator_list[0] if len(cls.decorator_list) == 1 else None
    plain = decorator is not None and _stdlib_dataclass(g, decorator) and not (isinstance(decorator, ast.Call) and any(
        k.arg in ("init", "slots", "kw_only") for k in decorator.keywords))
    if not plain or cls.keywords or any(isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef)) and d.name in (
            "__post_init__", "__new__", "__init__", "__setattr__") for d in cls.body):
        return None
    fields = []
    for stmt in cls.body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            kind = _annotation_kind(proj, g, stmt.annotation)
            if kind is None or kind == "field" and stmt.value is not None and not isinstance(stmt.value, ast.Constant) \
                    and not _plain_field(g, stmt.value):
                return None
            fields += [stmt.target.id] if kind == "field" else []
    return fields


def _stdlib_dataclass(g, decorator: ast.AST) -> bool:
    """`@dataclass` or `@dataclass(...)` of the standard library's dataclasses, as g's imports resolve it."""
    return namespaces.qualified(g, decorator.func if isinstance(decorator, ast.Call) else decorator) == \
        "dataclasses.dataclass"


_CLASS_VARS = {"typing.ClassVar", "typing_extensions.ClassVar"}


def _annotation_kind(proj, g, annotation: ast.AST) -> Optional[str]:
    """"classvar" for a `ClassVar[...]` annotation (no `__init__` parameter), "field" for one naming a class (a
    builtin, a library's, a project class), as g's imports resolve its head; None where that is not known: an alias
    the project binds (`Setting = ClassVar[str]`, round BI: dataclasses reads it as a ClassVar), an `InitVar`, a
    string naming either."""
    if isinstance(annotation, ast.Constant):
        return None if "ClassVar" in str(annotation.value) or "InitVar" in str(annotation.value) else "field"
    head = annotation.value if isinstance(annotation, ast.Subscript) else annotation
    name = namespaces.qualified(g, head)
    if name in _CLASS_VARS:
        return "classvar"
    module, _, attr = name.rpartition(".")
    if not module or name.startswith("dataclasses."):
        return None
    if module == "builtins" or g._find(g.path, module) is None:
        return "field"  # (a builtin or a class of this file, as qualified names both; a library's class)
    found = _imported_file(proj, g, module)
    return "field" if found is not None and any(c.name == attr for c in found.class_defs) else None


# `dataclasses.field(...)` settings that keep a field an `__init__` parameter stored as handed, in its place
_PLAIN_FIELD_SETTINGS = ("default", "repr", "compare", "hash")


def _plain_field(g, value: ast.AST) -> bool:
    """`field(default=<literal>, repr=False, ...)` of dataclasses (resolved through g's imports): a default and
    display settings only (round BH: a draft slot `field(default=None, repr=False)` beside the step's tensors)."""
    return isinstance(value, ast.Call) and not value.args and namespaces.qualified(g, value.func) == \
        "dataclasses.field" and all(k.arg in _PLAIN_FIELD_SETTINGS and isinstance(k.value, ast.Constant)
                                    for k in value.keywords)


def _named_tuple_fields(g, cls: ast.ClassDef) -> Optional[List[str]]:
    """The fields, in order, of a class of file g whose one base is `typing.NamedTuple` (resolved through g's
    imports), with no keyword or decorator, whose body holds only a docstring, annotated fields (a literal default at
    most) and defs named neither as a field nor as what makes or reads an instance (_MAKING_NAMES): `Step(q, kv, ...)`
    stores each as handed, and typing refuses a `__new__`/`__init__` of its own (round BH). None for any other."""
    if len(cls.bases) != 1 or cls.keywords or cls.decorator_list \
            or namespaces.qualified(g, cls.bases[0]) != "typing.NamedTuple":
        return None
    fields = [s.target.id for s in cls.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
              and (s.value is None or isinstance(s.value, ast.Constant))]
    for stmt in cls.body:
        plain = isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.target.id in fields \
            or isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) or isinstance(stmt, ast.Pass) \
            or isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name not in fields \
            and stmt.name not in _MAKING_NAMES
        if not plain:
            return None
    return fields


# How many calls up the walk reads the callers of a caller that hands on what it was handed (round AM)
OUTER_DEPTH = 4


def _outer_callers(at_call: "At", traced: Tuple[str, Wanted, frozenset], sources: List[ast.AST], depth: int,
                   mine: Optional[frozenset] = None) -> Optional[reach.Finding]:
    """A caller that hands on its own parameters (or attributes of them) is only as right as what its callers hand
    it: they are read by the same rules, up the project to a function no file calls (an entry point), the engine's
    dispatch, or a function of the traced name taking them at the traced places (whose callers are this walk's: an
    override, a wrapper's dispatch to its child); a parameter no call hands runs with its default (round AM: a
    launcher's `step.indices` sorted by its own caller)."""
    proj, f, fn, call = at_call
    fname = traced[0]
    cls = f.parents.get(id(fn))
    read = _roots_read(sources)
    defaulted = _default_runs(fn, fname, set(read))  # (an override or the dispatch too: round BC)
    if defaulted is not None:
        return reach.Finding(proj.rel(f.path), getattr(call, "lineno", 0), defaulted)
    if _entry(proj, f, fn) or not read:
        return None
    a = fn.args
    method = _method(f, fn)
    positional = [x.arg for x in a.posonlyargs + a.args][1 if method else 0:]
    named = frozenset(positional + [x.arg for x in a.kwonlyargs])
    wanted, same = _wanted_up(at_call, traced, set(read), positional)
    if same and (mine is None or isinstance(cls, ast.ClassDef) and (f.path, cls.name) in mine):
        return None  # (an override of the traced method taking the rows where it does: its callers are this walk's)
    at = lambda why: reach.Finding(proj.rel(f.path), getattr(call, "lineno", 0), why)  # noqa: E731
    unspelled = _called_unspelled(proj, f, fn, fname)
    if unspelled is not None:
        return at(unspelled)
    if same:  # (another class's method of the name taking the rows where the traced one does, a hybrid's or a
        # wrapper's dispatch to its child: its callers spell the name, read as this walk's, but for its own class's
        # `self.forward(...)`/`super().forward(...)`, which this walk took for another class's: round AT's t2; a torch
        # module's is refused above, round AN/AO. One taking them at other places is walked as a function of another
        # name: round AV's v2)
        return _family_callers(at_call, (fname, wanted, named), depth, mine)
    unread = _callers_unread(proj, fn, fname, set(read), depth)
    if unread is not None:
        return at(unread)
    fields = frozenset((p, attrs) for p, attrs in read.items() if attrs)
    w = _callers_up(proj, f, fn, (wanted, named, fields), depth, method)
    return at(f"`{fn.name}` hands `{fname}` what it is handed, and at {w.where()}, a call of `{fn.name}`: "
              f"{w.what}") if w is not None else None


def _wanted_up(at_call: "At", traced: Tuple[str, Wanted, frozenset], roots: Set[str],
               positional: List[str]) -> Tuple[Wanted, bool]:
    """What the caller's callers must hand (its parameters the rows come from), and whether it is the traced
    name's function taking them at the traced places (`same`). A function of the traced name has its own call read
    as a bound method's, and, taking them elsewhere, every call of the name read at every place one of them takes
    the rows at (a fixpoint: the places only grow)."""
    proj, f, fn, call = at_call
    fname, want, named = traced
    a = fn.args
    star, kw = a.vararg.arg if a.vararg else "", a.kwarg.arg if a.kwarg else ""
    if fn.name != fname:
        return wanted_of(positional, roots, star, kw), False
    bound = set(_roots_read(_handed_as_bound(call, want, named)))
    wanted = wanted_of(positional, bound & roots, star, kw)
    same = _covered(_places(wanted), want, call) or _engine_interface(proj, f, f.parents.get(id(fn)))
    return (wanted, True) if same else (tuple(sorted(set(wanted) | set(want), key=str)), False)


def _called_unspelled(proj: reach.Project, f, fn: ast.AST, fname: str) -> Optional[str]:
    """Why fn, which hands `fname` what it is handed, may be called where its name is not spelled: a dunder, or a
    torch module's `forward` (one of another name than the traced, or with a base outside the project)."""
    cls = f.parents.get(id(fn))
    if fn.name.startswith("__") and fn.name.endswith("__") or fn.name == "forward" and isinstance(cls, ast.ClassDef) \
            and (fn.name != fname and any(reach._unparse(b) != "object" for b in cls.bases)
                 or proj.foreign_in_family(f, cls)):
        return (f"`{fn.name}` hands `{fname}` what it is handed, and Python or torch may call `{fn.name}` without "
                "spelling its name (`obj(...)`, an `nn.Module`'s `module(...)`, one inherited by a module of it): its "
                "callers are not seen, so what they hand is not traced")
    registered = registered_by(proj, f, fn)
    return f"`{fn.name}` hands `{fname}` what it is handed, and {registered}" if registered else None


# Library decorators that return the function, or a wrapper of it bound under the def's own name, and register it
# nowhere else (round BA): its callers spell its name. Any other library's decorator may register it.
WRAPPING_DECORATORS = {
    "torch.compile", "torch.no_grad", "torch.enable_grad", "torch.inference_mode", "torch.set_grad_enabled",
    "torch.compiler.disable", "torch._dynamo.disable", "torch.jit.ignore", "torch.jit.unused",
    "torch.profiler.record_function", "torch.cuda.nvtx.range", "functools.lru_cache", "functools.cache",
    "functools.wraps", "functools.cached_property", "contextlib.contextmanager", "contextlib.asynccontextmanager",
    "abc.abstractmethod", "typing.overload", "typing.final", "typing_extensions.override", "typing.override",
}
_WRAPS = {"wraps", "functools.wraps", "update_wrapper", "functools.update_wrapper"}


def registered_by(proj, f, fn) -> Optional[str]:
    """Why fn may be called under a name it does not bear (round BA): a decorator not proven to only wrap it may
    register it elsewhere (`@torch.library.custom_op("fork::attn")`: `torch.ops.fork.attn(...)`; `@attend.register`:
    `attend(...)`; a registry's `register("name")`), whose callers the walk, reading its name, does not see."""
    for dec in fn.decorator_list:
        if not _only_wraps(proj, f, dec.func if isinstance(dec, ast.Call) else dec, isinstance(dec, ast.Call)):
            return (f"`{fn.name}` is decorated by `{reach._unparse(dec)[:60]}`, which may register it under another "
                    "name (a custom op's `torch.ops.<ns>.<op>`, a registry's or a dispatcher's entry): what calls it "
                    "there is not seen, so what it is handed is not traced")
    return None


def _only_wraps(proj, f, func: ast.AST, called: bool) -> bool:
    """Is the decorator proven to return the function or a wrapper of it, registering it nowhere: a plain one, a
    library's WRAPPING_DECORATORS, the engine's own (ENGINE_DECORATORS), or a project def letting it escape nowhere."""
    spelled = reach._unparse(func)
    if spelled in _PLAIN_DECORATORS or spelled.endswith((".setter", ".getter", ".deleter")):
        return True
    if _library_value(f, func, proj):
        return f.module_of(func) in WRAPPING_DECORATORS
    defs = _project_functions(proj, f, func.id) if isinstance(func, ast.Name) else [
        (g, d) for g, d, _ in _callee_defs(proj, f, ast.Call(func=func, args=[], keywords=[])) or ()]
    if defs and all(d.name in ENGINE_DECORATORS and engine_defs.release_def(g.tree, d) for g, d in defs):
        return True
    return bool(defs) and not any(_lets_escape(d, called, _method(g, d)) for g, d in defs)


def _lets_escape(d, called: bool, method: bool = False) -> bool:
    """Does the project decorator let the function it is handed (its first parameter, a method's the one after its
    object; a factory's: its returned def's), a parameter it calls, or a wrapper it defines go anywhere but a plain
    call, a return, `functools.wraps(...)` or a read of its name (`REG[name] = fn`, `register_op(name, fn)`,
    `ops.append(wrapper)`, `_OPS.setdefault(name, fn)`, `fn.__call__(...)`)? A factory returning anything but a def
    of its own by name (a lambda, a call's result, a partial) is not read (round BB)."""
    inner = [n for n in ast.walk(d) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n is not d]
    returned = _own_returns(d, inner)
    if called and not (returned and all(isinstance(r, ast.Name) and r.id in {n.name for n in inner} for r in returned)):
        return True  # (round BB: a factory returning a lambda, a call's result, a partial is not read)
    takers = [n for n in inner if n.name in {getattr(r, "id", None) for r in returned}] if called else [d]
    held = {_handed_param(n, method and n is d) for n in takers} - {None} | {n.name for n in inner} | {
        c.func.id for c in ast.walk(d) if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)
        and any(c.func.id == a.arg for a in ast.walk(d.args) if isinstance(a, ast.arg))}
    if any(reach._unparse(x.func if isinstance(x, ast.Call) else x) not in _WRAPS for n in inner for x in n.decorator_list):
        return True
    parents = {id(c): p for p in ast.walk(d) for c in ast.iter_child_nodes(p)}
    for node in ast.walk(d):
        if not (isinstance(node, ast.Name) and node.id in held and isinstance(node.ctx, ast.Load)):
            continue
        up = parents.get(id(node))
        if not (isinstance(up, ast.Call) and (up.func is node or reach._unparse(up.func) in _WRAPS)
                or isinstance(up, ast.Return) or isinstance(up, ast.Attribute) and up.attr in _NAMING_DUNDERS):
            return True
    return False


# What a decorator may read of the function it is handed without handing it on (round BB: not `__call__`,
# `__wrapped__`, `__get__`, `__globals__`, which reach the function or what it sees)
_NAMING_DUNDERS = {"__name__", "__qualname__", "__module__", "__doc__", "__annotations__"}


def _handed_param(d, method: bool) -> Optional[str]:
    """The parameter a decorator def is handed the function in (round BB): its first, a method's the one after its
    object (or its first where it has no other)."""
    params = [a.arg for a in d.args.posonlyargs + d.args.args]
    return params[1] if method and len(params) > 1 else (params or [None])[0]


def _own_returns(d, inner: List[ast.AST]) -> List[ast.AST]:
    """What the def's own returns give (not those of its nested defs: a factory's decorator, round BB)."""
    nested = {id(r) for n in inner for r in ast.walk(n)}
    return [r.value for r in ast.walk(d) if isinstance(r, ast.Return) and id(r) not in nested]


def _callers_unread(proj: reach.Project, fn: ast.AST, fname: str, roots: Set[str], depth: int) -> Optional[str]:
    """Why the callers of fn, which hands `fname` what it is handed, cannot all be read: a name computed at run time
    may fetch it, or it is too far up (a parameter's default: _default_runs)."""
    lookup = proj.computed_lookup(fn.name) if fn.name != fname else None  # (the traced name's: as its own calls)
    if lookup is not None:
        return (f"`{fn.name}` hands `{fname}` what it is handed, and `{lookup.what}` at {lookup.where()} fetches a "
                f"callable by a name computed at run time, which may be `{fn.name}`: its callers are not all seen")
    if depth >= OUTER_DEPTH:
        return (f"`{fn.name}` hands `{fname}` what it is handed, {depth + 1} calls from the kernel's rows: the "
                "callers past that are not read")
    return None


def _default_runs(fn, fname: str, roots: Set[str]) -> Optional[str]:
    """Why a parameter fn hands `fname` may hold its default, a tensor the walk does not trace: a call leaving it
    out runs with it (round AM; round BC: an override of the traced name or the dispatch too, whose callers the walk
    reads as the traced function's, `forward(self, q, kv, indices=_WARMUP_TOPK)` called without indices)."""
    defaults = _tensor_defaults(fn)
    given = next((n for n in sorted(roots) if n in defaults), None)
    if given is not None:
        return (f"`{fn.name}` hands `{fname}` its parameter `{given}`, whose default "
                f"`{reach._unparse(defaults[given])[:40]}` runs where a call does not hand it")
    return None


def _callers_up(proj: reach.Project, f, fn: ast.AST, wanted_named_fields: tuple, depth: int,
                method: bool) -> Optional[reach.Finding]:
    """The first call of fn (by its name, in its family where a method) handing what it must not, read once per
    function, places and depth (a cycle of calls reads as handing on)."""
    wanted, named, fields = wanted_named_fields
    memo = proj.__dict__.setdefault("_outer_callers", {})
    key = (id(fn), wanted, depth, fields)
    if key not in memo:
        memo[key] = None
        cls = f.parents.get(id(fn))
        family = proj.family_of(f, cls) if method and isinstance(cls, ast.ClassDef) else None
        memo[key] = unchanged_callers(proj, fn.name, wanted, family, named, Outer(depth + 1, fields, method))
    return memo[key]


def _family_callers(at_call: "At", traced: Tuple[str, Wanted, frozenset], depth: int,
                    mine: Optional[frozenset]) -> Optional[reach.Finding]:
    """The calls of the traced name through `self` or `super()` in the classes of a trusted wrapper's method (its
    subclasses', its mixins'), which the walk read as another class's (`_elsewhere`), each read at the places the
    wrapper takes the rows at (`traced`: its name, its wanted, its parameters); None for a module function."""
    proj, f, fn, call = at_call
    fname, want, named = traced
    cls = f.parents.get(id(fn))
    if not isinstance(cls, ast.ClassDef) or mine is None:
        return None  # (no class of the walk was set aside: every call of the name was read)
    memo = proj.__dict__.setdefault("_family_callers", {})
    key = (f.path, cls.name, want, depth, mine)
    if key not in memo:
        memo[key] = None  # (a cycle of calls reads as handing on)
        memo[key] = unchanged_callers(proj, fname, want, proj.family_of(f, cls), named,
                                      Outer(depth + 1, frozenset(), True, seen=mine))
    w = memo[key]
    return reach.Finding(proj.rel(f.path), getattr(call, "lineno", 0),
                         f"`{fn.name}` of `{cls.name}` hands `{fname}` what it is handed, and at {w.where()}, a call of "
                         f"`{fname}`: {w.what}") if w is not None else None


def _roots_read(sources: List[ast.AST]) -> dict:
    """Each parameter the sources are read off -> the attributes read off it (None where it is handed whole)."""
    read: dict = {}
    for source in sources:
        root, first = source.value if isinstance(source, (ast.Starred, ast.keyword)) else source, None
        while isinstance(root, ast.Attribute):
            root, first = root.value, root.attr
        if isinstance(root, ast.Name):
            had = read.get(root.id, frozenset())
            read[root.id] = None if first is None or had is None else had | {first}
    return read


def _tensor_defaults(fn) -> dict:
    """fn's parameters whose default may hold a tensor (not a literal, a size, None) -> that default."""
    a = fn.args
    defaults = dict(zip([x.arg for x in a.posonlyargs + a.args][::-1], a.defaults[::-1]))
    defaults.update({x.arg: d for x, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None})
    return {n: d for n, d in defaults.items() if not _no_data(d)}


def _message_call(call: ast.Call) -> bool:
    """A call that only shows its arguments: print, logging, warnings (rows.LOGGING_ROOTS), `str.format`."""
    root = call.func
    while isinstance(root, ast.Attribute):
        root = root.value
    return reach._unparse(call.func) in ("print", "repr", "str") or isinstance(root, ast.Name) \
        and root.id in LOGGING_ROOTS or isinstance(call.func, ast.Attribute) and call.func.attr == "format"


def _takes_any(lam: ast.Lambda) -> bool:
    a = lam.args
    return bool(a.args or a.posonlyargs or a.kwonlyargs or a.vararg or a.kwarg)


def _kept(f, lam: ast.Lambda) -> bool:
    """Is the lambda stored where a later call of its function finds it (an attribute, an item, a global), rather
    than called or handed on at once (a CUDA graph's step handed to its capture)?"""
    up = f.parents.get(id(lam))
    while isinstance(up, (ast.BoolOp, ast.IfExp)):
        up = f.parents.get(id(up))
    if isinstance(up, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = up.targets if isinstance(up, ast.Assign) else [up.target]
        return any(not isinstance(t, ast.Name) for t in targets)
    return isinstance(up, (ast.Dict, ast.List, ast.Tuple, ast.Set, ast.Return))


def _awaits_before(f, fn, call: ast.Call) -> Optional[str]:
    """A coroutine awaiting, or a generator yielding, before the call (or in a loop around it) lets another task or
    stage run meanwhile (two-batch overlap's stages), which may write the rows or the indices in place (round W).
    Before means anywhere but a later statement: in the call's own statement (a conditional expression's test
    runs first), or anywhere at all where the call sits in a lambda, which runs when it is called (round Y)."""
    waits = [n for n in ast.walk(fn) if isinstance(n, (ast.Await, ast.AsyncFor, ast.AsyncWith, ast.Yield, ast.YieldFrom))]
    stmt = call
    while not isinstance(stmt, ast.stmt):
        stmt = f.parents.get(id(stmt))
    deferred = f.enclosing(call, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) is not fn
    end = (stmt.end_lineno, stmt.end_col_offset)
    if waits and (deferred or _in_loop(f, call) or any((n.lineno, n.col_offset) <= end for n in waits)):
        return "awaits or yields before it: another task or stage may write what it hands in place meanwhile"
    return None


def _sibling_written(proj, f, fn, call: ast.Call, known: bool = False) -> Optional[str]:
    """A tensor fn writes in place other than a local it made itself: any other may share the indices' storage (a
    view of the batch's top-k its caller handed beside them, an attribute of another parameter, a closure's or a
    module's view, an entry of `**kwargs`: round U, round W). Default-deny on the target, in any branch (a layer's
    other branch writes the shared tensor for the next layer's call: rounds S, T, W)."""
    target = _foreign_write(proj, f, fn)
    if target is not None:
        return f"writes `{reach._unparse(target)[:40]}` in place, which may share the indices' storage"
    return _handed_on_written(proj, f, fn, call, known) or _setter_written(proj, f, fn, call) \
        or _implicit_writes(proj, f, fn, call) or _decorated(proj, f, fn) or _pre_hooked(proj, f, fn) \
        or _class_rewritten(proj, f, fn)


def _class_rewritten(proj, f, fn) -> Optional[str]:
    """May the caller's class have its methods replaced after its body: a class decorator of the project, or a
    project base's `__init_subclass__`, setting an attribute on the class it is handed (round AG: `cls.run =
    synced(cls.run)`)? A decorator of a library or one registering the class only sets nothing."""
    cls = f.parents.get(id(fn))
    if not isinstance(cls, ast.ClassDef):
        return None
    for dec in cls.decorator_list:
        func = dec.func if isinstance(dec, ast.Call) else dec
        name = reach._unparse(func)
        if name.rsplit(".", 1)[-1] in reach.PLAIN_CLASS_DECORATORS or _library_value(f, func, proj):
            continue
        defs = _project_functions(proj, f, func.id) if isinstance(func, ast.Name) else []
        if not defs or any(_sets_on_param(d) for _, d in defs):
            return f"is a method of a class decorated by `{name[:40]}`, which may replace its methods (or is not read)"
    todo, seen = [(f, cls)], 0
    while todo and seen < 8:
        (g, c), seen = todo.pop(0), seen + 1
        if c is not cls and any(d.name == "__init_subclass__" and _sets_on_param(d) for d in _body_defs(c)):
            return f"is a method of a subclass of `{c.name}`, whose `__init_subclass__` may replace its methods"
        todo += [b for b in (_project_class(proj, g, b.id) if isinstance(b, ast.Name) else None for b in c.bases) if b]
    return None


def _sets_on_param(d) -> bool:
    """Does the def set an attribute on its first parameter (`cls.run = ...`, `setattr(cls, ...)`)?"""
    first = _first_param(d)
    return any(isinstance(n, ast.Attribute) and not isinstance(n.ctx, ast.Load) and isinstance(n.value, ast.Name)
               and n.value.id == first or isinstance(n, ast.Call) and reach._unparse(n.func) == "setattr" and n.args
               and reach._unparse(n.args[0]) == first for n in ast.walk(d))


_PRE_HOOKS = ("register_forward_pre_hook", "register_module_forward_pre_hook")


def _pre_hooked(proj, f, fn) -> Optional[str]:
    """A module's `forward` runs after the forward pre-hooks its `__call__` runs (round AE's e2: a hook registered at
    construction masking the window its module keeps): each hook the project registers is read as a callee writing
    what it did not make (its module's counters aside); a hook not read refuses."""
    cls = f.parents.get(id(fn))
    if fn.name != "forward" or not _method(f, fn) or not isinstance(cls, ast.ClassDef) or not _may_be_module(proj, f, cls):
        return None
    for g in _files_and_module(proj, _PRE_HOOKS):
        for call in (n for n in ast.walk(g.tree) if isinstance(n, ast.Call)
                     and reach._unparse(n.func).rsplit(".", 1)[-1] in _PRE_HOOKS):
            hook = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "hook"), None)
            defs = _hook_defs(proj, g, hook)
            if not defs or any(_foreign_write(proj, h, d, 2, _first_param(d)) is not None or _returns_value(d)
                               for h, d in defs):  # (a hook returning the arguments anew, sorted: round AG)
                return (f"is a module's forward, run after the pre-hook `{reach._unparse(hook)[:40]}` registered at "
                        f"{proj.rel(g.path)}:{call.lineno}, which may write in place what its module keeps (or is not read)")
    return None


_NO_MODULE_BASES = {"object", "ABC", "abc.ABC", "Generic", "typing.Generic", "Protocol", "typing.Protocol"}


def _may_be_module(proj, f, cls: ast.ClassDef, depth: int = 0) -> bool:
    """May the class be a torch module (its `__call__` running hooks): a base outside the project but those known
    to be none (`ABC`: sglang's `AttentionBackend`), or a project base that may be?"""
    for base in cls.bases:
        name = reach._unparse(base.value if isinstance(base, ast.Subscript) else base)
        found = _project_class(proj, f, base.id) if isinstance(base, ast.Name) else None
        if found is not None and depth < 5:
            if _may_be_module(proj, found[0], found[1], depth + 1):
                return True
        elif name not in _NO_MODULE_BASES:
            return True
    return False


def _hook_defs(proj, g, hook: Optional[ast.AST]) -> List[Tuple[object, ast.AST]]:
    """The defs a registered hook may be: a lambda, a def of the file by its name, a method of the project by its
    name; [] where not read."""
    if isinstance(hook, ast.Lambda):
        return [(g, hook)]
    if isinstance(hook, ast.Name):
        return [(g, d) for d in ast.walk(g.tree) if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef))
                and d.name == hook.id and not _bound_otherwise(g, hook.id)]
    return _project_methods(proj, hook.attr) if isinstance(hook, ast.Attribute) else []


def _returns_value(d) -> bool:
    """Does the def (a lambda: its body) return anything but None?"""
    if isinstance(d, ast.Lambda):
        return not (isinstance(d.body, ast.Constant) and d.body.value is None)
    return any(r.value is not None and not (isinstance(r.value, ast.Constant) and r.value.value is None)
               for r in ast.walk(d) if isinstance(r, ast.Return))


def _first_param(d) -> str:
    params = d.args.posonlyargs + d.args.args
    return params[0].arg if params else "self"


_PLAIN_DECORATORS = {"staticmethod", "classmethod", "property", "builtins.staticmethod", "builtins.classmethod"}
# The engine's decorators on its dispatch, trusted only as a release defines them (engine_defs, by fingerprint):
# sglang 0.5.16's `AttentionBackend.forward` is `@debug_kernel_api` (it logs or dumps what it is handed, then calls
# the function with it unchanged).
ENGINE_DECORATORS = {"debug_kernel_api"}


def _decorated(proj, f, fn) -> Optional[str]:
    """A decorator of the caller runs its wrapper around each call (round AE's e2: a fork's `@windowed` masking the
    table its object keeps first). A library's runs no code of the project; a function of the project is read whole
    (its wrapper too): it writes nothing its object or module keeps and calls the function it wraps only with its
    wrapper's own parameters, in order, unchanged (`fn(self, *args, **kwargs)`); anything else is not read."""
    for dec in fn.decorator_list:
        func = dec.func if isinstance(dec, ast.Call) else dec
        spelled = reach._unparse(func)
        if spelled in _PLAIN_DECORATORS or spelled.endswith((".setter", ".getter", ".deleter")) \
                or _library_value(f, func, proj):
            continue
        defs = _project_functions(proj, f, func.id) if isinstance(func, ast.Name) else [
            (g, d) for g, d, _ in _callee_defs(proj, f, ast.Call(func=func, args=[], keywords=[])) or ()]
        if defs and all(d.name in ENGINE_DECORATORS and engine_defs.release_def(g.tree, d) for g, d in defs):
            continue
        if not defs or any(_writes_kept(proj, g, d) or not reach.hands_on_unchanged(d) for g, d in defs):
            return (f"is decorated by `{spelled[:40]}`, whose wrapper may write what its object keeps, or hand the "
                    "function it wraps other rows (or is not read)")
        if any(_lets_escape(d, isinstance(dec, ast.Call), _method(g, d)) for g, d in defs):  # (round BB)
            return (f"is decorated by `{spelled[:40]}`, which may register the function it wraps elsewhere or call it "
                    "otherwise than plainly (`fn.__call__(...)`), with other rows")
    return None


def kernel_function_writes(proj, f, fn, call: ast.Call, given: List[ast.AST]) -> Optional[str]:
    """The kernel's own function (`given`: the q and kv it hands the kernel), read as a caller of the kernel is
    (round AC's c2: `forward` handing the metadata to a project function, an imported one, a kept window's method,
    a hook, which masks the table the indices are): a call handing on what may share the indices' storage to a
    callee that may write it, or a call writing state it keeps; an attribute store running a setter. What q and kv
    are read from (their root names, exempt) is the row trace's: a write there changes values, not the indices. A
    callee not read is taken to write (a hook kept in a list)."""
    exempt: Set[str] = set()
    todo = [(e, 0) for e in given]
    while todo:
        e, depth = todo.pop()
        roots = _view_roots(e, helpers=False) - exempt  # (not what a helper is handed: `kv_for_step(batch)` may
        # read one field of an object holding the indices' table too, round AD)
        exempt |= roots
        for n in ast.walk(e) if depth < 4 else ():  # (`q_input = q_all` in a branch: q_all is q's too)
            if isinstance(n, ast.Name) and n.id in roots:
                todo += [(v, depth + 1) for v in reach.local_value(f, n) or ()]
    return _handed_on_written(proj, f, fn, call, False, exempt) or _setter_written(proj, f, fn, call) \
        or _implicit_writes(proj, f, fn, call)


def _handed_on_written(proj, f, fn, call: ast.Call, known: bool, exempt: Set[str] = frozenset()) -> Optional[str]:
    """A call of fn but `call` handed what may share the indices' storage (its roots not all `exempt`) that may
    write it, or writing state it keeps, before `call`."""
    sibling = getattr(call.func, "attr", None)
    for other in (n for n in ast.walk(fn) if isinstance(n, ast.Call) and n is not call):
        if isinstance(other.func, ast.Attribute) and other.func.attr == sibling and _hands_only_its(other, call):
            continue  # (the engine's dispatch to a sibling backend's method of the traced name: read as a caller;
            # one handed anything else, `self.window.forward(topk_2d)`, is read as any callee: round Y)
        if _receiver_made(f, fn, other, call):  # (`Backend(md).forward(...)`: what the object keeps is its class's
            if any(_may_share(proj, f, fn, arg) and _may_write(proj, f, other, key, known=True)  # to prove; what its
                   for key, arg in _handed(other, starred=True)) or any(  # making writes is read: round AA; its
                    _foreign_write(proj, g, d, 2) is not None for g, d, _ in _initializers(proj, f, other) or ()):
                return f"hands what may share the indices' storage to `{reach._unparse(other.func)[:40]}`, which writes it"
            continue  # `__init__` calling a method of self that writes what it keeps: round AD)
        if _runs_step(f, other, call):
            continue  # (`step()`, the lambda holding the call: what it runs is the call, read as such)
        if f.parents.get(id(other)) is call and _record_fields(proj, f, other, frozenset()) is not None:
            continue  # (a record the call's own argument makes, storing what it is handed: round AM)
        if isinstance(other.func, ast.Attribute) and other.func.attr in _READS and (
                exempt and _view_roots(other.func.value, helpers=False) <= exempt or isinstance(other.func.value, ast.Name)
                and other.func.value.id in {reach._unparse(a) for _, a in _handed(call)}):
            continue  # (`q_all.dim()`, `topk_indices.size(0)`: a size read off a tensor the kernel reads, or the name
            # handed to the traced call: sglang 0.5.16's safe edit "assert"; a window's `size()` of the name is read
            # where it is not one of these, round AF)
        if exempt and (reach._unparse(other.func) == reach._unparse(call.func) or isinstance(call.func, ast.Name)
                       and any(v is other for v in reach.local_value(f, call.func) or ())):
            continue  # (another call of the kernel, or the making of what the kernel call calls: `attn = partial(
            # flash_mla_sparse_fwd, ...)`: the kernel writes only its outputs)
        if _exclusive(f, fn, other, call):
            continue  # (the other mode's branch: sglang's dispatch hands k to a pool's set_kv_buffer there; a callee
            # writing a shared tensor for the next call from that branch is not read: stated in docs/soundness.md)
        for key, arg in _handed(other, starred=True):
            roots = _view_roots(arg)
            if exempt and (roots and roots <= exempt or _library_value(f, arg)):
                continue  # (`partial(flash_mla_sparse_fwd, ...)`: a library's function holds no storage of the batch)
            if _may_share(proj, f, fn, arg) and _may_write(proj, f, other, key, known=known):
                return (f"hands `{reach._unparse(arg)[:40]}` to `{reach._unparse(other.func)[:40]}`, which may write it "
                        "in place (round W), or is not read (round Y: a callee the tool cannot read is taken to write)")
        if _before(f, other, call) and _writes_shared_state(proj, f, other, known, sibling or ""):
            return (f"calls `{reach._unparse(other.func)[:40]}`, which writes state it keeps (or may: it is not read) in "
                    "place, where the indices may be under another name (round X: an indexer's method, a hook)")
    return None


def _setter_written(proj, f, fn, call: ast.Call) -> Optional[str]:
    """An attribute store before the call that may run code: a property setter of the project of that name, a
    `__setattr__` or a descriptor's `__set__`, writing in place what its object keeps (round AB: `self.window.start
    = start` re-masking the buffer the indices view)."""
    hooks = None  # (the project's `__setattr__`/`__set__` defs, looked up once, at the first attribute store)
    drop = next((n for n in ast.walk(fn) if _drops_reference(n) and _before(f, n, call)), None)
    if drop is not None and _writing_finalizer(proj):
        return (f"drops a reference (`{reach._unparse(drop)[:40]}`), which may run a finalizer of the project (a "
                "`__del__`, a `weakref.finalize` callback) writing in place what its object keeps")
    for t, attr in _attribute_stores(fn):
        if not _before(f, t, call):
            continue
        if _finalizes(proj, f, t):
            return (f"sets `{reach._unparse(t)[:40]}`, which may drop the last reference to an object whose `__del__` "
                    "writes in place what it keeps (the indices may be under another name there)")
        if hooks is None:
            hooks = _project_methods(proj, "__setattr__") + _project_methods(proj, "__set__")
        bound = _body_bound_defs(proj, attr)
        if bound is None:
            return (f"sets `{reach._unparse(t)[:40]}`, which a class of the project binds to code not read (a property "
                    "made by a call): it may write in place what its object keeps")
        for g, d in _project_methods(proj, attr) + hooks + bound:
            if (d.name != attr or _a_setter(d) or (g, d) in bound) and _foreign_write(proj, g, d, 2) is not None:
                return (f"sets `{reach._unparse(t)[:40]}`, which may run {d.name} at {proj.rel(g.path)}:{d.lineno}, "
                        "writing in place what its object keeps (the indices may be under another name there)")
    return None


def _special_writer(proj, f, node: ast.AST) -> bool:
    """Is the object one of a class of the project the file says (_receiver_kind), a special method of which (any
    `__x__` but its making's) writes what its object keeps: then any use of it may run one (round AG: `%` formatting,
    a tuple key's `__eq__`, `max`, `range`, a dict's `__hash__`, a starred display, `+=`'s `__radd__`)?"""
    names = _special_names(proj)
    kind = _receiver_kind(proj, f, node) if names else None
    return kind is not None and kind != "library" and any(_class_method_writes(proj, kind, n) for n in names)


def _special_names(proj) -> List[str]:
    """The special methods the project's classes define and some def of writes what its object keeps (once)."""
    cache = proj.__dict__.setdefault("_special_names", {})
    if "names" not in cache:
        cache["names"] = [n for n in _SPECIALS if _writing_method(proj, n, False)]
    return cache["names"]


_DROPPING = {"clear", "pop", "popitem", "remove", "discard", "popleft"}


def _drops_reference(n: ast.AST) -> bool:
    """An item deleted, or a container emptied (`del self.by_req[rid]`, `self.leases.clear()`): the last reference
    to what it held may go (round AG)."""
    if isinstance(n, ast.Delete):
        return any(isinstance(t, ast.Subscript) for t in n.targets)
    return isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in _DROPPING


def _writing_finalizer(proj) -> bool:
    """Does the project define a `__del__` writing what its object keeps, or register a finalizer callback
    (`weakref.finalize(obj, cb)`, `weakref.ref(obj, cb)`: round AG)? Once per project."""
    cache = proj.__dict__.setdefault("_writing_finalizer", {})
    if "found" not in cache:
        registers = any(isinstance(n, ast.Call) and reach._unparse(n.func).rsplit(".", 1)[-1] in ("finalize", "ref")
                        and "weakref" in reach._unparse(n.func) and len(n.args) > 1 and _writing_callback(proj, g, n.args[1])
                        for g in _files_and_module(proj, ["weakref"]) for n in ast.walk(g.tree))
        cache["found"] = registers or _writing_method(proj, "__del__", False)
    return cache["found"]


def _writing_callback(proj, g, cb: ast.AST) -> bool:
    """May a callback handed to a library write in place what it did not make: a library's function (`os.close`)
    does not; a def of the project is read; anything else is not read."""
    if _library_value(g, cb) or isinstance(cb, ast.Attribute) and _library_value(g, reach.chain_root(cb)):
        return False
    defs = _hook_defs(proj, g, cb)
    return not defs or any(_foreign_write(proj, h, d, 2) is not None for h, d in defs)


def _finalizes(proj, f, target: ast.AST) -> bool:
    """May rebinding or deleting the attribute run a `__del__` of the project writing what its object keeps (round
    AE's e2: dropping a draft's lease scrubs the slots it held in the shared table)? Its class's where the file says
    which (_receiver_kind), any class's of the project otherwise; a `setattr` call is read as its store."""
    if not isinstance(target, ast.Attribute) or not _writing_finalizer(proj):
        return False
    kind = _receiver_kind(proj, f, target)
    return kind is None or kind != "library" and _class_method_writes(proj, kind, "__del__")


def _attribute_stores(fn) -> List[Tuple[ast.AST, str]]:
    """(node, attribute) for each attribute fn stores or deletes: an assignment's target, `del obj.name`, or
    `setattr(obj, "name", v)` with a literal name (round AD)."""
    out = []
    for node in ast.walk(fn):
        targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target] if isinstance(
            node, (ast.AnnAssign, ast.AugAssign)) else []
        out += [(t, t.attr) for t in reach._flatten(targets) if isinstance(t, ast.Attribute)]
        if isinstance(node, ast.Call) and reach._unparse(node.func) in ("setattr", "builtins.setattr") \
                and len(node.args) > 1 and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str):
            out.append((node, node.args[1].value))
    return out


def _a_setter(d) -> bool:
    """A property's setter or deleter (`@start.setter`)."""
    return any(isinstance(x, ast.Attribute) and x.attr in ("setter", "deleter") for x in d.decorator_list)


def _receiver_made(f, fn, other: ast.Call, call: ast.Call) -> bool:
    """Is `other` the making of the traced call's own object: `Backend(md).forward(...)`, or `b = Backend(md)` (b
    bound once in fn) before `b.forward(...)`? A class is made by its name; a method handing back an object
    (`self._backend_for_step().forward(...)`) runs code that may write (round AB)."""
    receiver = call.func.value if isinstance(call.func, ast.Attribute) else None
    if not (isinstance(other.func, ast.Name) and other.func.id[:1].isupper()):
        return False
    if receiver is other:
        return True
    up = f.parents.get(id(other))
    if not (isinstance(receiver, ast.Name) and isinstance(up, ast.Assign) and up.value is other
            and [reach._unparse(t) for t in up.targets] == [receiver.id]):
        return False
    return sum(receiver.id in reach._stored_names(n) for n in ast.walk(fn) if isinstance(n, (ast.Assign, ast.AnnAssign))) == 1 \
        and not any(isinstance(n, (ast.For, ast.AsyncFor, ast.With, ast.AsyncWith, ast.NamedExpr, ast.AugAssign))
                    and receiver.id in {t.id for t in ast.walk(getattr(n, "target", None) or n) if isinstance(t, ast.Name)
                                        and isinstance(t.ctx, ast.Store)} for n in ast.walk(fn))


def _before(f, other: ast.Call, call: ast.Call) -> bool:
    """May `other` run before `call`: earlier in the text, in the call's receiver (`self._pick().forward(...)`:
    round AB) or its arguments (round AD), in a loop around the call, or anywhere where the call sits in a lambda,
    which runs when it is called (round AC: a graph step made, the window masked, the step run)."""
    fn = f.enclosing(call, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
    return (other.lineno, other.col_offset) < (call.lineno, call.col_offset) or _in_loop(f, call) \
        or any(n is other for n in ast.walk(call) if n is not call) or isinstance(fn, ast.Lambda)


def _writes_shared_state(proj, f, call: ast.Call, known: bool = False, traced: str = "") -> bool:
    """May the call write in place a tensor it did not make: a def of the project writing any but a local it made
    (an attribute of its object, a closure's or a module's tensor), or a callee read neither as one nor as one that
    reads (a hook kept in a list, a bound method held elsewhere)? Default-deny (round X's x2) on what the caller
    calls through its own object (`self.indexer.apply_window()`) or by a bare name. A method of anything else (a
    parameter, a local, an imported object, a call's result: round AD's d2) may be any def of the project of its
    name: it writes where one of them writes what its object or module keeps; a method no def of the project
    names is a library's (`kwargs.get(...)`). Making a class of the project runs its `__init__`."""
    if _logs(call):
        return False
    root = reach.chain_root(call.func)
    kind = _receiver_kind(proj, f, call.func.value) if isinstance(call.func, ast.Attribute) else None
    if kind is not None:  # (its class is known: a library's object, `self.prof.step()` on torch's profiler; or a
        hook = call.func.attr in PLANNER_HOOKS and bool(traced) and _class_defines(proj, kind, traced)  # class of
        return kind != "library" and not hook and _class_method_writes(proj, kind, call.func.attr)  # the project's:
        # a metadata hook of a backend, the class defining the traced method, not an indexer's hook of the name, AF)
    if isinstance(call.func, ast.Attribute) and not _through_self(f, root) and not _module_object(f, call, root):
        if _packed_parameter(f, call, root) or call.func.attr in _READS and not _writing_method(
                proj, call.func.attr, False):
            return False  # (`kwargs.get(...)`: a dict's method, though a class of the project defines a `get`; a
            # tensor's size read, `q_all.dim()`, as the handed rule reads it: sglang 0.5.16's safe edit "assert")
        defs = _callee_defs(proj, f, call)
        return defs is _UNREAD or any(_writes_kept(proj, g, d) for g, d, _ in defs or ())
    defs = _callee_defs(proj, f, call)
    if defs is None and _class_made(proj, f, call) is not None:
        defs = _initializers(proj, f, call)  # (a making whose `__init__` calls a method of self writing what the
        # object is handed: round AD)
    if defs is None and known:
        return False
    if defs is None:  # (a function imported from outside the project reads what it is handed: `is_npu()`)
        imported = isinstance(call.func, ast.Name) and (call.func.id in f.froms or call.func.id in f.modules)
        return not imported and not _reads_only(f, call) and not _no_effect(f, call)
    return any(_foreign_write(proj, g, d, 2) is not None for g, d, _ in defs)


def _implicit_writes(proj, f, fn, call: ast.Call) -> Optional[str]:
    """Code fn runs before `call` with no call spelled (round AD's d2): a `with` block's `__enter__` (or a closed
    block's `__exit__`), a property's getter (also `getattr`/`hasattr` with a literal name, a project descriptor used
    as a decorator), an object's protocol (`len(x)`, a loop over it, a truth test, `__getattr__` of an object of known
    class: round AE), where a def of the project of that name (its class's where the file says which; else any class's)
    writes what its object or module keeps; any use of an object of known class whose special methods write (round
    AG). An item read's `__getitem__` on an object of unknown class is not read (a stated gap: by its name, sglang's
    JIT cache filling itself would refuse every subscript); a finalizer is read where a reference drops
    (_setter_written)."""
    for node in (n for stmt in fn.body for n in ast.walk(stmt) if not _annotation(f, n)):
        if isinstance(node, (ast.Name, ast.Attribute)) and isinstance(node.ctx, ast.Load) and _before(f, node, call) \
                and _special_writer(proj, f, node):
            return (f"uses `{reach._unparse(node)[:40]}`, an object of a class of the project whose special methods (run "
                    "by operators, formatting, hashing, iteration, conversions) write in place what it keeps")
        for used in _protocol_uses(f, node):
            if _before(f, used[0], call) and _runs_writer(proj, f, *used):  # (the object's place: a comprehension
                # has none of its own)
                return (f"uses `{reach._unparse(used[0])[:40]}` through `{'/'.join(used[1][:3])}`, which a class of the "
                        "project defines writing in place what its object keeps, where the indices may be under another name")
        if isinstance(node, (ast.With, ast.AsyncWith)):  # (a block around the call exits after it)
            inside = any(n is call for s in node.body for n in ast.walk(s))
            names = ("__enter__",) if inside else ("__enter__", "__exit__")
            if _before(f, node, call) and any(_scope_writes(proj, f, item.context_expr, names) for item in node.items):
                return ("enters a `with` block whose `__enter__` (or `__exit__`) may write in place what its object "
                        "keeps, where the indices may be under another name")
            continue
        if isinstance(node, ast.Call) and reach._unparse(node.func) in ("getattr", "hasattr") and len(node.args) > 1 \
                and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str):
            node = ast.copy_location(ast.Attribute(value=node.args[0], attr=node.args[1].value, ctx=ast.Load()), node)
        up = f.parents.get(id(node))
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load) and _before(f, node, call) \
                and not (isinstance(up, ast.Call) and up.func is node) and _writing_property(proj, f, node):
            return (f"reads `{reach._unparse(node)[:40]}`, which may run a property of the project writing in place "
                    "what its object keeps, where the indices may be under another name")
    return None


_TRUTH = ("__bool__", "__len__")
_ITERATION = ("__iter__", "__next__", "__aiter__", "__anext__", "__len__", "__length_hint__", "__reversed__")
# builtins that use what they are handed through its protocol (iterate it, convert it, hash it)
_BUILTIN_PROTOCOLS = {**{b: _ITERATION for b in ("list", "tuple", "set", "frozenset", "sorted", "sum", "any", "all",
                                                  "min", "max", "enumerate", "zip", "iter", "next", "dict", "map",
                                                  "filter", "reversed")},
                      "len": ("__len__",), "bool": _TRUTH, "str": ("__str__", "__repr__", "__format__"),
                      "repr": ("__repr__",), "format": ("__format__", "__str__", "__repr__"), "hash": ("__hash__",),
                      "int": ("__int__", "__index__", "__trunc__"), "float": ("__float__", "__index__"),
                      "abs": ("__abs__",), "round": ("__round__",)}
_COMPARING = ("__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__")
_CONTAINING = ("__contains__", "__iter__", "__next__")
_ARITHMETIC = tuple(f"__{p}{op}__" for op in ("add", "sub", "mul", "matmul", "truediv", "floordiv", "mod", "pow",
                                               "lshift", "rshift", "and", "or", "xor") for p in ("", "r"))
# protocols read only on an object of known class (the first method each names)
_BY_CLASS = {"__eq__", "__contains__", "__add__", "__format__", "__str__", "__repr__", "__hash__", "__int__",
             "__float__", "__abs__", "__round__"}


# the special methods an object's use may run with no call spelled (its making's aside)
_SPECIALS = sorted({*_ITERATION, *_TRUTH, *_COMPARING, *_CONTAINING, *_ARITHMETIC, *(f"__i{n[2:]}" for n in _ARITHMETIC
                    if not n.startswith("__r")), "__format__", "__str__", "__repr__", "__hash__", "__int__", "__float__",
                    "__index__", "__abs__", "__round__", "__neg__", "__pos__", "__invert__", "__getattr__",
                    "__getattribute__", "__getitem__", "__enter__", "__exit__", "__del__", "__call__", "__bytes__",
                    "__complex__", "__trunc__", "__floor__", "__ceil__"})


def _protocol_uses(f, node: ast.AST) -> List[Tuple[ast.AST, Tuple[str, ...]]]:
    """(the object, the methods it runs) for each object node uses through its protocol with no call of the
    project spelled: a builtin handed it (`len(x)`, `sorted(x)`, `str(x)`), an unpacking, a comparison, `in`, an
    operator, an f-string's field (round AF), or _protocol_use's."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _BUILTIN_PROTOCOLS \
            and not f.binds(node.func.id):
        return [(a.value if isinstance(a, ast.Starred) else a, _BUILTIN_PROTOCOLS[node.func.id]) for a in node.args]
    if isinstance(node, ast.Assign) and any(isinstance(t, (ast.Tuple, ast.List)) for t in node.targets):
        return [(node.value, _ITERATION)]  # (`lo, hi = self.window`)
    if isinstance(node, ast.Compare):
        sides, out = [node.left, *node.comparators], []
        for i, op in enumerate(node.ops):
            if isinstance(op, (ast.In, ast.NotIn)):
                out.append((sides[i + 1], _CONTAINING))
            elif not isinstance(op, (ast.Is, ast.IsNot)):
                out += [(sides[i], _COMPARING), (sides[i + 1], _COMPARING)]
        return out
    if isinstance(node, ast.BinOp):
        return [(node.left, _ARITHMETIC), (node.right, _ARITHMETIC)]
    if isinstance(node, ast.FormattedValue):
        return [(node.value, ("__format__", "__str__", "__repr__"))]
    used = _protocol_use(f, node)
    return [used] if used is not None else []


def _protocol_use(f, node: ast.AST) -> Optional[Tuple[ast.AST, Tuple[str, ...]]]:
    """(the object, the methods it runs) where node uses an object through its protocol: a loop over x, x tested
    for truth, an attribute read (`__getattr__`, a descriptor's `__get__`)."""
    if isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
        return node.iter, ("__iter__", "__next__", "__aiter__", "__anext__")
    test = node.test if isinstance(node, (ast.If, ast.While, ast.IfExp, ast.Assert)) else \
        node.operand if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not) else None
    if test is not None:
        return test, _TRUTH
    if isinstance(node, ast.BoolOp):
        return node.values[0], _TRUTH  # (the others are tested where they are the node's own)
    if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
        return node.value, ("__getattr__", "__getattribute__")
    return None


def _runs_writer(proj, f, obj: ast.AST, names: Tuple[str, ...]) -> bool:
    """May using obj through those protocol methods run a def of the project writing what its object keeps? A
    library's object or a literal runs none; a class of the project made by its name runs its own."""
    if isinstance(obj, (ast.Constant, ast.Compare, ast.JoinedStr, ast.List, ast.Tuple, ast.Dict, ast.Set)) or not any(
            _writing_method(proj, n, False) for n in names):
        return False
    kind = _receiver_kind(proj, f, obj)
    if kind == "library" or isinstance(obj, ast.Call) and isinstance(obj.func, ast.Name) \
            and hasattr(builtins, obj.func.id) and not f.binds(obj.func.id):
        return False  # (`for i in range(n)`: a builtin's result)
    if names[0] == "__getattr__":  # (of an object whose class the file says; by the name alone every attribute read
        return kind is not None and any(_class_method_writes(proj, kind, n) for n in names[:2])  # would refuse: sglang
        # 0.5.16 defines proxies whose `__getattr__` fills a cache; a stated gap)
    if names[0] in _BY_CLASS:  # (an operator, `in`, a conversion: of an object whose class the file says; by the
        return kind is not None and any(_class_method_writes(proj, kind, n) for n in names)  # name alone an
        # f-string of a size in sglang 0.5.16 was refused by a `__repr__` writing what it keeps: a stated gap)
    return kind is None or any(_class_method_writes(proj, kind, n) for n in names)


def _body_bound_defs(proj, name: str) -> Optional[List[Tuple[object, ast.AST]]]:
    """The defs a class body of the project binds `name` to by an assignment: an alias of a def of that body
    (`__enter__ = apply`), or the defs handed to a call there (`start = property(_get_start, _set_start)`); None
    where one is bound to anything else (what runs is not read). A literal (`start = 0`) runs nothing. Once per name."""
    cache = proj.__dict__.setdefault("_body_bound", {})
    if name not in cache:
        cache[name] = _read_body_bindings(proj, name)
    return cache[name]


def _read_body_bindings(proj, name: str) -> Optional[List[Tuple[object, ast.AST]]]:
    out: List[Tuple[object, ast.AST]] = []
    for g in _files_and_module(proj, [name]):
        for c in g.class_defs:
            defs = {d.name: d for d in c.body if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef))}
            for stmt in c.body:
                if not reach.body_binds([stmt], name):
                    continue
                value = getattr(stmt, "value", None)
                parts = [value] if isinstance(value, ast.Name) else [*value.args, *(k.value for k in value.keywords)] \
                    if isinstance(value, ast.Call) else []
                if value is None or isinstance(value, ast.Constant) or isinstance(value, (ast.Tuple, ast.List, ast.Dict)) \
                        and not any(isinstance(n, (ast.Name, ast.Lambda)) for n in ast.walk(value)):
                    continue
                if not parts or not all(isinstance(p, ast.Name) and p.id in defs for p in parts):
                    return None
                out += [(g, defs[p.id]) for p in parts]
    return out


def _writing_property(proj, f, node: ast.Attribute) -> bool:
    """May reading this attribute run a property's getter writing what its object keeps: its class's where the file
    says which (_receiver_kind), any class's of the project of that name otherwise?"""
    if not _writing_method(proj, node.attr, True):
        return False
    if isinstance(node.value, ast.Name) and (_project_class(proj, f, node.value.id) is not None
                                             or _library_value(f, node.value)):
        return False  # (`ForwardMode.EXTEND`: read off a class, a property hands back itself)
    kind = _receiver_kind(proj, f, node.value)
    return kind is None or kind != "library" and _class_method_writes(proj, kind, node.attr)


def _annotation(f, node: ast.AST) -> bool:
    """Is the node part of a local's annotation (`x: Optional[torch.Tensor] = None` in a function's body): never
    evaluated (PEP 526), whatever it spells?"""
    up, child = f.parents.get(id(node)), node
    while up is not None and not isinstance(up, ast.stmt):
        up, child = f.parents.get(id(up)), up
    return isinstance(up, ast.AnnAssign) and up.annotation is child


def _scope_writes(proj, f, expr: ast.AST, names: Tuple[str, ...]) -> bool:
    """May a `with` item's `__enter__`/`__exit__` (names) write what its object keeps: its class's own, where the item
    makes a class of the project defining them (`with LaunchTimer():`); else any def of the project of the name."""
    kind = _receiver_kind(proj, f, expr)
    if kind is not None:  # (`with torch.profiler.record_function(...)`: a library's scope; `with LaunchTimer():`)
        return kind != "library" and any(_class_method_writes(proj, kind, n) for n in names)
    return any(_writing_method(proj, n, False) for n in names)


_GETTERS = ("property", "functools.cached_property", "cached_property")


# decorators that leave a method a method (called, not read as an attribute)
_NOT_GETTERS = {"staticmethod", "classmethod", "abstractmethod", "abc.abstractmethod", "override", "typing.override",
                "typing_extensions.override", "functools.wraps", "functools.lru_cache", "lru_cache", "functools.cache",
                "torch.no_grad", "torch.inference_mode", "torch.enable_grad", "torch.compile"}


def _served_by_decorator(d, descriptors: Set[str]) -> bool:
    """May the method be read as an attribute through its decorator: a property, a `cached_property`, a class of
    the project defining `__get__` (a fork's own `reify`: round AE), any decorator not known to leave a method
    (`cached_property as lazy_attr`: round AF); not a setter or deleter?"""
    for x in d.decorator_list:
        name = reach._unparse(x.func if isinstance(x, ast.Call) else x)
        if name in _GETTERS or name.rsplit(".", 1)[-1] in descriptors or name.endswith(".getter"):
            return True
        if name not in _NOT_GETTERS and not name.endswith((".setter", ".deleter")):
            return True
    return False


def _writes_kept(proj, g, d, depth: int = 0) -> bool:
    """Does the def write in place what its object or module keeps, itself or through a method of self (what it is
    handed is read where it is handed: _may_write)? Once per def."""
    cache = proj.__dict__.setdefault("_writes_kept", {})
    key = (g.path, d.lineno, d.col_offset)  # (not id(d): a file's tree may be read again, and ids reused)
    if key not in cache:
        cache[key] = False  # (a recursion writes what its other statements write)
        cache[key] = _kept_write(proj, g, d, depth)
    return cache[key]


def _kept_write(proj, g, d, depth: int) -> bool:
    params = [a.arg for a in d.args.posonlyargs + d.args.args + d.args.kwonlyargs]
    params = params[1:] if _method(g, d) else params
    params += [a.arg for a in (d.args.vararg, d.args.kwarg) if a is not None]
    handed = set().union(*(_views_of(d, p) for p in params)) if params else set()
    for node in ast.walk(d):
        target = _written_target(g, node) if not _fetched_only(g, node) else None
        if target is not None and not _fresh_local(proj, g, d, target) and not _number_attribute(g, target) \
                and not any(_with_roots(_view_roots(t)) & handed for t in reach._flatten([target])) \
                and not reach._is_self(target) and not (isinstance(node, ast.Assign) and (
                    _container_attribute(g, target) or _library_mapping(g, target))):
            return True  # (`self[key] = fn`: an item of the object itself, a mapping of the project's, sglang's JIT
            # cache filling itself in `__getitem__`; `self.records[bs] = md` into a dict self keeps)
        if not isinstance(node, ast.Call):
            continue
        if isinstance(node.func, ast.Attribute) and depth < 3 and _through_self(g, reach.chain_root(node.func)) and any(
                _writes_kept(proj, h, e, depth + 1) for h, e, _ in _callee_defs(proj, g, node) or ()):
            return True
        if any(_view_roots(a) and not _with_roots(_view_roots(a)) & handed and _may_share(proj, g, d, a)
               and _may_write(proj, g, node, key, 2, known=True) for key, a in _handed(node, starred=True)):
            return True  # (what it keeps, handed to a writer: `window_ops.mask_before(self.topk, start)`, round AC)
    return False


def _writing_method(proj, name: str, getters: bool) -> bool:
    """Does a method of the project of that name (with getters: a property's getter only) write in place what its
    object or module keeps? Looked up once per name and project."""
    cache = proj.__dict__.setdefault("_writing_methods", {})
    if (name, getters) not in cache:
        descriptors = {g.parents[id(d)].name for g, d in _project_methods(proj, "__get__")
                       if isinstance(g.parents.get(id(d)), ast.ClassDef)} if getters else set()
        defs = [(g, d) for g, d in _project_methods(proj, name) if not getters or _served_by_decorator(d, descriptors)]
        bound = _body_bound_defs(proj, name)  # (`start = property(_get, _set)`, `__enter__ = apply`: round AE)
        cache[(name, getters)] = bound is None or any(_writes_kept(proj, g, d) for g, d in defs + bound)
    return cache[(name, getters)]


def _receiver_kind(proj, f, e: ast.AST, depth: int = 0):
    """What class an object is where the file says it: "library" for what a library makes (`torch.profiler.profile(
    ...)`, `time.perf_counter()`), (file, class) for a class of the project made by its name; through a local bound
    only to such, or an attribute of self the class assigns only such (`self.prof = torch.profiler.profile(...)`);
    None where not known (a parameter, an item, a call of the project's function)."""
    if depth > 3:
        return None
    if isinstance(e, (ast.List, ast.Tuple, ast.Dict, ast.Set, ast.Constant, ast.ListComp, ast.DictComp, ast.SetComp)) \
            or _no_data(e):
        return "library"  # (a list self keeps, tested for truth: round AF's safe twin; a size, `q.shape[1]`)
    if isinstance(e, ast.Call):
        made = _class_made(proj, f, e)
        if made is not None:
            return made if _makes_its_class(proj, made) else None  # (`__new__` handing back a subclass: AF)
        module = f.module_of(e.func) if isinstance(e.func, (ast.Name, ast.Attribute)) else None
        library = module is not None and f._find(f.path, module.split(".")[0]) is None
        return "library" if library and all(_holds_nothing_of_ours(f, a) for a in [
            *e.args, *(k.value for k in e.keywords)]) else None  # (`weakref.proxy(window)` runs the window's
        # methods: a library's making handed an object of the project is not the library's object, round AF)
    values = None  # (self itself is not resolved: a subclass may override what its class defines)
    if isinstance(e, ast.Name) and not reach._is_self(e):
        values = reach.local_value(f, e)
    elif isinstance(e, ast.Attribute) and reach._is_self(e.value):
        cls = f.instance_of(e.value)
        values = _self_values(cls, e.attr) \
            if cls is not None and not _class_bound(proj, e.attr) and not _stored_elsewhere(proj, f, cls, e.attr) else None
    kinds = [_receiver_kind(proj, f, v, depth + 1) for v in values or ()]
    return kinds[0] if kinds and kinds[0] is not None and all(k == kinds[0] for k in kinds) else None


def _self_values(cls: ast.ClassDef, attr: str) -> Optional[List[ast.AST]]:
    """What the class's assignments store in `self.<attr>`: each value, an unpacking's item where both sides have one
    length; None where an item is not known (`self.a, self.b = pair()`)."""
    out: List[ast.AST] = []
    for n in (n for n in ast.walk(cls) if isinstance(n, (ast.Assign, ast.AnnAssign)) and n.value is not None):
        for t in n.targets if isinstance(n, ast.Assign) else [n.target]:
            if not any(isinstance(x, ast.Attribute) and reach._is_self(x.value) and x.attr == attr
                       for x in reach._flatten([t])):
                continue
            if isinstance(t, (ast.Tuple, ast.List)) and not (isinstance(n.value, (ast.Tuple, ast.List)) and len(
                    n.value.elts) == len(t.elts) and not any(isinstance(x, ast.Starred) for x in t.elts)):
                return None
            out += _stored_values(t, n.value, attr)
    return out


def _class_defines(proj, made, name: str) -> bool:
    """Does the class of the project, or a project base of it, define a method `name`?"""
    todo, seen = [made], 0
    while todo and seen < 8:
        (g, cls), seen = todo.pop(0), seen + 1
        if any(d.name == name for d in _body_defs(cls)):
            return True
        todo += [b for b in (_project_class(proj, g, b.id) if isinstance(b, ast.Name) else None for b in cls.bases) if b]
    return False


def _makes_its_class(proj, made, depth: int = 0) -> bool:
    """Does calling the class make an instance of it: no `__new__` nor metaclass of its own or of a project base?"""
    g, cls = made
    if depth > 4 or cls.keywords or any(d.name == "__new__" for d in _body_defs(cls)):
        return False
    bases = [_project_class(proj, g, b.id) if isinstance(b, ast.Name) else None for b in cls.bases]
    return all(_makes_its_class(proj, b, depth + 1) for b in bases if b is not None)


def _holds_nothing_of_ours(f, e: ast.AST) -> bool:
    """An argument a library's making cannot hand back as an object of the project: a literal, a library's name,
    a size, a list of those."""
    if isinstance(e, (ast.List, ast.Tuple, ast.Set)):
        return all(_holds_nothing_of_ours(f, x) for x in e.elts)
    return isinstance(e, (ast.Constant, ast.JoinedStr)) or _no_data(e) or _library_value(f, e) or isinstance(
        e, ast.Attribute) and _library_value(f, reach.chain_root(e))


def _stored_elsewhere(proj, f, cls: ast.ClassDef, attr: str) -> bool:
    """Is `.attr` stored anywhere but in cls's own body (another class, a subclass, a function, another file): then
    what self's attribute holds is not only what cls gives it. Once per class and attribute."""
    cache = proj.__dict__.setdefault("_stored_elsewhere", {})
    key = (f.path, cls.lineno, attr)
    if key not in cache:
        cache[key] = _stores_outside(proj, f, cls, attr)
    return cache[key]


def _stores_outside(proj, f, cls: ast.ClassDef, attr: str) -> bool:
    own = {id(n) for n in ast.walk(cls)}
    module = proj.own()  # (the checked module too: its driver storing `lay.lease = Lease(...)`, round AE)
    files = [*proj.files_naming([attr]), f] + ([module] if module is not None else [])
    return any(isinstance(n, ast.Attribute) and n.attr == attr and not isinstance(n.ctx, ast.Load)
               and (g is not f or id(n) not in own) for g in {id(g): g for g in files}.values()
               for n in ast.walk(g.tree))


def _class_method_writes(proj, made, name: str) -> bool:
    """Does the method `name` of a class of the project (its own, or a project base's, in order) write in place what
    its object or module keeps? None found where a base is not the project's: a library's method (reads)."""
    todo, seen = [made], 0
    while todo:  # (every project base, not the first only: a mixin's method may be the one the MRO finds, AF)
        g, cls = todo.pop(0)
        seen += 1
        own = [d for d in _body_defs(cls) if d.name == name]
        if seen > 8 or any(_writes_kept(proj, g, d) for d in own):
            return True
        if own:
            continue
        if reach.body_binds(cls.body, name):
            return True  # (a class body binding it to another callable: not read)
        todo += [b for b in (_project_class(proj, g, b.id) if isinstance(b, ast.Name) else None for b in cls.bases) if b]
    return False


def _packed_parameter(f, call: ast.Call, root: ast.AST) -> bool:
    """Is the receiver the calling function's own `*args` tuple or `**kwargs` dict, never bound again there?"""
    fn = f.enclosing(call, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
    packed = {a.arg for a in (fn.args.vararg, fn.args.kwarg) if a is not None} if fn is not None else set()
    return call.func.value is root and isinstance(root, ast.Name) and root.id in packed and not any(
        isinstance(n, ast.Name) and n.id == root.id and not isinstance(n.ctx, ast.Load) for n in ast.walk(fn))


def _runs_step(f, other: ast.Call, call: ast.Call) -> bool:
    """Is `other` a call of the local bound to the lambda holding `call` (a graph step run at once)?"""
    lam = f.enclosing(call, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
    return isinstance(lam, ast.Lambda) and isinstance(other.func, ast.Name) and any(
        v is lam for v in reach.local_value(f, other.func) or ())


def _library_value(f, arg: ast.AST, proj=None) -> bool:
    """A name or attribute the file imports from outside the project (a library's function or module); given the
    project, not a module whose name a file or folder of it bears (put on `sys.path` by the fork: round AN's
    vendored decorator)."""
    module = f.module_of(arg) if isinstance(arg, (ast.Name, ast.Attribute)) else None
    top = module.split(".")[0] if module is not None else ""
    return module is not None and f._find(f.path, top) is None and not (proj is not None and proj.nested_module(top))


def _module_object(f, call: ast.Call, root: ast.AST) -> bool:
    """Is the receiver's root an object the file binds at its top level by an assignment, which the calling
    function does not bind (round AC: `SINK_WINDOW = SinkWindow()`, a registry every layer's caller shares)?"""
    if not isinstance(root, ast.Name):
        return False
    fn = f.enclosing(call, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
    if fn is not None and (root.id in {a.arg for a in ast.walk(fn.args) if isinstance(a, ast.arg)} or any(
            isinstance(n, ast.Name) and n.id == root.id and not isinstance(n.ctx, ast.Load) for n in ast.walk(fn))):
        return False
    return any(root.id in reach._stored_names(stmt) for stmt in f.tree.body if isinstance(stmt, (ast.Assign, ast.AnnAssign)))


def _through_self(f, root: ast.AST, depth: int = 0) -> bool:
    """Is a call's receiver chain rooted at the caller's own object: `self`, `super()`, or a local bound only to
    an attribute of self (`indexer = self.indexer`: round AA)?"""
    if isinstance(root, ast.Call) and isinstance(root.func, ast.Name) and root.func.id == "super":
        return True
    if not isinstance(root, ast.Name):
        return False
    if reach._is_self(root):
        return True
    values = reach.local_value(f, root) if depth < 4 else None
    return bool(values) and any(_through_self(f, reach.chain_root(v), depth + 1) for v in values)


def _foreign_write(proj, f, fn, handed: int = 0, owner: str = "self") -> Optional[ast.AST]:
    """The first tensor fn writes in place that is not a local it made itself, nor a counter of self's (`owner`'s);
    with `handed` (levels), or hands to a def of the project writing it, or calls through self a method that does
    (round AC: a window's `evict()` handing `self.topk` to `window_ops.mask_before`, a property setter calling it)."""
    for node in ast.walk(fn):
        target = _written_target(f, node)
        if target is not None and not _fresh_local(proj, f, fn, target) and not _number_attribute(f, target, owner):
            return target
        if not handed or not isinstance(node, ast.Call):
            continue
        for key, arg in _handed(node, starred=True):
            if _may_share(proj, f, fn, arg) and _view_roots(arg) and _may_write(proj, f, node, key, 2, known=True):
                return arg
        if isinstance(node.func, ast.Attribute) and _through_self(f, reach.chain_root(node.func)) and any(
                _foreign_write(proj, g, d, handed - 1) is not None for g, d, _ in _callee_defs(proj, f, node) or ()):
            return node.func
    return None


def _no_effect(f, call: ast.Call) -> bool:
    """A call of a library's function or method that may not be read but writes nothing reachable from here: a
    method of a module the file imports that is not the project's (`os.environ.get`, `time.perf_counter`)."""
    func = call.func
    module = f.module_of(func.value) if isinstance(func, ast.Attribute) else None
    return module is not None and f._find(f.path, module.split(".")[0]) is None and not module.startswith("torch")


def _no_data(e: ast.AST) -> bool:
    """An argument that holds no tensor's storage: a literal, a size or dtype read off one (`q.shape[0]`,
    `x.size(1)`, `len(x)`), arithmetic of those, a comparison's new tensor."""
    if isinstance(e, (ast.Constant, ast.Compare)):
        return True
    if isinstance(e, ast.BinOp):
        return _no_data(e.left) and _no_data(e.right)
    if isinstance(e, ast.UnaryOp):
        return _no_data(e.operand)
    if isinstance(e, ast.Subscript):
        return _no_data(e.value)
    if isinstance(e, ast.Attribute):
        return e.attr in _READS
    if isinstance(e, ast.Call):
        return reach._unparse(e.func) == "len" or isinstance(e.func, ast.Attribute) and e.func.attr in ("size", "numel", "dim")
    return False


def _handed(call: ast.Call, starred: bool = False) -> List[Tuple[object, ast.AST]]:
    """(place or keyword, argument) for each argument of the call but `*`/`**` ones (with starred, those too, at
    place or keyword None: where they land is not known)."""
    out = [(i, a) for i, a in enumerate(call.args) if not isinstance(a, ast.Starred)] + [
        (k.arg, k.value) for k in call.keywords if k.arg is not None]
    if starred:
        out += [(None, a.value) for a in call.args if isinstance(a, ast.Starred)]
        out += [(None, k.value) for k in call.keywords if k.arg is None]
    return out


def _hands_only_its(other: ast.Call, call: ast.Call) -> bool:
    """Does `other` hand on nothing but what `call` hands (the same expressions, by their text)?"""
    mine = {reach._unparse(a) for _, a in _handed(call, starred=True)}
    return all(reach._unparse(a) in mine or _no_data(a) for _, a in _handed(other, starred=True))


def _may_share(proj, f, fn, arg: ast.AST) -> bool:
    """May the argument hold (a view of) storage fn did not make: anything but a literal, a size, a comparison, a
    local fn bound to a new tensor, or a lambda reading none of those (round Y: an attribute of a parameter, a
    view made by a method, a `*args` tuple, a lambda closing over a view are all handed on)."""
    if _no_data(arg) or isinstance(arg, ast.Constant) or isinstance(arg, ast.JoinedStr):
        return False
    if isinstance(arg, ast.Lambda):
        return any(isinstance(n, ast.Name) and _may_share(proj, f, fn, n) for n in ast.walk(arg.body))
    if isinstance(arg, ast.Name):
        return arg.id not in ("None", "True", "False") and not _fresh_local(proj, f, fn, arg)
    if isinstance(arg, (ast.Tuple, ast.List, ast.Set)):
        return any(_may_share(proj, f, fn, e) for e in arg.elts)
    if isinstance(arg, ast.Call) and _new_tensor(proj, f, arg):
        return False
    return True


def _may_write(proj, f, call: ast.Call, key, depth: int = 0, known: bool = False) -> bool:
    """May the call write the argument at `key` (a place, a keyword, or None for a `*`/`**` one) in place, or keep
    it for a later write? Default-deny (round Y): only a callee read as leaving it alone does not: a tensor's own
    method that neither writes nor stores (`q.view(bs, ...)`), torch's functions but the in-place ones, `out=` and
    the collectives, a builtin that reads (`len`, `isinstance`, `print`), a logger's method, or a def of the
    project (a method of its name, a function of this file, or of the project module it imports it or its module
    from) that neither writes that parameter (nor a local view of it) nor hands it to such a call. A custom op
    (`torch.ops.*`), an autograd Function's `apply`, a project class (its `__init__` may keep it), a bound method
    kept in a local, a callable object, an executor's `submit`: all may."""
    name = reach._unparse(call.func)
    if ".ops." in name or isinstance(call.func, ast.Attribute) and call.func.attr == "apply":  # (`torch.ops.fork.f`)
        return True
    if depth > 3:
        return True  # (a name handed on four defs deep is not followed further: taken as written, round AC)
    if _logs(call):
        return False  # (sglang 0.5.16's helper timing its launch with `logger.debug(..., elapsed)`: a project's
        # `debug` method elsewhere is not the logger's)
    defs = _callee_defs(proj, f, call)
    if known:  # (only a write the tool reads: the module's own callers, _own_callers)
        if defs is _UNREAD:
            return True  # (a def rebound, a class body's alias: what runs is not read)
        if defs is None and _class_made(proj, f, call) is not None:
            defs = _initializers(proj, f, call)
            if defs is None:
                return True  # (a project class whose making runs code not read: round AB)
        if defs is None:
            return _writes_in_place(f, call) or _hands_callable(proj, f, call)
        return key is not None and any(_param_written(proj, c, key, depth, known) or not _plain_def(c[0], c[1]) for c in defs)
    if defs is not None:  # (none found where one was looked for, a decorated def, an attribute of self shadowing the
        return key is None or not defs or _shadowed(f, call) or any(  # method: not what runs, round Z)
            _param_written(proj, (g, d, method), key, depth) or not _plain_def(g, d) for g, d, method in defs)
    return not _reads_only(f, call) or _hands_callable(proj, f, call)


_CALLING_BUILTINS = {"sorted", "min", "max", "map", "filter", "iter"}


def _hands_callable(proj, f, call: ast.Call) -> bool:
    """Is a library call handed something it may call with what it is handed: a lambda, a def of the file, a
    method of the project by its name (round AB: `pytree.tree_map(self.window.evict, ...)`, `torch.jit.fork`)? A
    builtin (`setattr(cfg, name, fn)` stores it) calls none, but those calling a key or a function they are handed
    (`sorted(xs, key=self._rank)`: round AG)."""
    if isinstance(call.func, ast.Name) and hasattr(builtins, call.func.id) and not f.binds(call.func.id) \
            and call.func.id not in _CALLING_BUILTINS:
        return False
    for a in [*call.args, *(k.value for k in call.keywords)]:
        if isinstance(a, ast.Lambda) or isinstance(a, ast.Name) and any(
                isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef)) and d.name == a.id for d in ast.walk(f.tree)) \
                or isinstance(a, ast.Attribute) and _project_methods(proj, a.attr):
            return True
    return False


def _class_made(proj, f, call: ast.Call) -> Optional[Tuple[object, ast.ClassDef]]:
    """(file, class) for `Cls(...)` of a class this file defines or imports from the project, or `mod.Cls(...)` of a
    project module's (round AD); else None."""
    if isinstance(call.func, ast.Name):
        return _project_class(proj, f, call.func.id)
    g = _module_file(proj, f, call.func.value) if isinstance(call.func, ast.Attribute) else None
    found = [c for c in g.class_defs if c.name == call.func.attr] if g is not None else []
    return (g, found[0]) if len(found) == 1 else None


def _module_file(proj, f, value: ast.AST):
    """The project file of the module `value` names (`window_ops` in `window_ops.evict(...)`), or None."""
    module = f.module_of(value)
    if module is None or module.startswith("torch"):
        return None
    path = f._find(f.path, module)
    return proj._file_at(path) if path else None


def _project_class(proj, f, name: str) -> Optional[Tuple[object, ast.ClassDef]]:
    g = f
    if not any(c.name == name for c in f.class_defs) and name in f.froms:  # (imported from a project file)
        module, name = f.froms[name]
        g = _imported_file(proj, f, module)
    found = [c for c in (g.class_defs if g is not None else ()) if c.name == name]
    return (g, found[0]) if len(found) == 1 and not _bound_otherwise(g, name) else None  # (`Window = Fused if
    # HAS_FUSED else Window`: round AF)


def _initializers(proj, f, call: ast.Call) -> Optional[List[Tuple[object, ast.AST, bool]]]:
    """For `Cls(...)` of a project class (_class_made): the `__init__` that runs, its own or the first of its
    project bases' (its object first), [] where none runs but object's; None where code of the project's not read
    runs (a decorator but `dataclass`, a metaclass, `__new__`, a `__post_init__`, a base outside the project: round
    AB)."""
    made = _class_made(proj, f, call)
    return _init_of(proj, made, 0) if made is not None else None


def _init_of(proj, made: Tuple[object, ast.ClassDef], depth: int) -> Optional[List[Tuple[object, ast.AST, bool]]]:
    g, cls = made
    own = {d.name: d for d in cls.body if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef))}
    if cls.keywords or own.keys() & {"__new__", "__post_init__"} or depth > 4 or not all(
            _stdlib_dataclass(g, d) for d in cls.decorator_list):
        return None
    if "__init__" in own:
        return [(g, own["__init__"], True)]
    for base in cls.bases:
        found = _project_class(proj, g, base.id) if isinstance(base, ast.Name) else None
        if found is None:
            return None if reach._unparse(base) != "object" else []
        inits = _init_of(proj, found, depth + 1)
        if inits != []:
            return inits
    return []


def _writes_in_place(f, call: ast.Call) -> bool:
    """A library call read as writing what it is handed: an in-place function or method (a trailing `_`, bare or
    not), `out=`, `inplace` by keyword or by its place (rows._INPLACE_SLOT), a collective, a custom op, numpy's
    functions (`np.putmask` on an array sharing a tensor's storage), `operator`'s item writes."""
    name = reach._unparse(call.func)
    last = name.rsplit(".", 1)[-1]
    slot = _INPLACE_SLOT.get(last)
    return last.endswith("_") and not last.startswith("_") or last in IN_PLACE_LIBRARY | _WRITING_FUNCTIONS \
        or any(k.arg in ("out", "inplace") for k in call.keywords) or ".ops." in name \
        or slot is not None and len(call.args) > slot or name.split(".")[0] in _WRITING_ROOTS \
        or name in ("operator.setitem", "operator.delitem", "setitem", "delitem")


def _plain_def(g, d) -> bool:
    """A def of file g that runs as written, handed every argument: no decorator but staticmethod/classmethod or
    torch's grad mode called with nothing (helper_identity.ARGUMENT_PASSING_DECORATORS, resolved through g's
    imports: round BH, `@torch.no_grad()` on a planner). A project decorator may write what the call hands,
    `singledispatch` runs another def."""
    return all(reach._unparse(x) in ("staticmethod", "classmethod") or isinstance(x, ast.Call) and not x.args
               and not x.keywords and namespaces.qualified(g, x.func) in ARGUMENT_PASSING_DECORATORS
               for x in d.decorator_list)


def _shadowed(f, call: ast.Call) -> bool:
    """`self.evict(...)` where the file assigns `<x>.evict = ...`: an instance attribute, not the method of the name."""
    func = call.func
    return isinstance(func, ast.Attribute) and any(
        isinstance(t, ast.Attribute) and t.attr == func.attr for n in ast.walk(f.tree)
        for t in reach._flatten(reach._written_targets(n)))


def _callee_defs(proj, f, call: ast.Call) -> Optional[List[Tuple[object, ast.AST, bool]]]:
    """The project's defs the call may run, each with whether its first parameter is its object; None where the
    project defines none of that name (then the callee is a library's or not known)."""
    func = call.func
    if isinstance(func, ast.Attribute):
        g = _module_file(proj, f, func.value)
        if g is not None:  # `window_ops.clip_window(...)`: a function of a project module (round Y), before a tensor
            if any(c.name == func.attr for c in g.class_defs):  # method of its name (`fused_ops.masked_fill`, Z);
                return None  # none where the module rebinds it (round AB); its class's making: _class_made (AD)
            return _UNREAD if _bound_otherwise(g, func.attr) else [
                (g, d, False) for d in g.tree.body if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef)) and d.name == func.attr]
        if _class_bound(proj, func.attr):
            return _UNREAD  # (a class body binding the name to another callable: `evict = staticmethod(fused.evict)`)
        if func.attr in TENSOR_VIEW_METHODS | COPYING_METHODS | NO_DATA_METHODS and not _project_methods(proj, func.attr):
            return None  # a tensor's own method (`q.view(bs, ...)`), where no project class has one of the name
        defs = [(g, d, _method(g, d)) for g, d in _project_methods(proj, func.attr)]
        own = f.enclosing(call, (ast.FunctionDef, ast.AsyncFunctionDef))  # (not the def calling it: an override
        defs = [c for c in defs if c[1] is not own]  # handing on to `super()`, a wrapper to each backend it holds; a
        return defs or None  # recursion writes only what the def's other statements write)
    if isinstance(func, ast.Name):
        defs = [(g, d, False) for g, d in _project_functions(proj, f, func.id)]
        if any(_bound_otherwise(g, d.name) for g, d, _ in defs) or not defs and _imported_unread(proj, f, func.id):
            return _UNREAD  # (a def its file rebinds by an import or an assignment: round AB, `from fused import evict`)
        return defs or None
    return None


_UNREAD: List[Tuple[object, ast.AST, bool]] = []  # _callee_defs: the name runs something not read


def _class_bound(proj, name: str) -> bool:
    """Does a class body of the project (the module too) bind `name` by an assignment (round AB: a strategy's
    `evict = staticmethod(fused.evict_before)`, `evict = window_impl.evict_in_place`)?"""
    return any(reach.body_binds(c.body, name) for g in _files_and_module(proj, [name]) for c in g.class_defs)


def _bound_otherwise(f, name: str) -> bool:
    """Does the file defining `name` bind it by anything but its defs too: an import, an assignment, a loop, a
    `with`?"""
    for n in ast.walk(f.tree):
        if isinstance(n, (ast.Import, ast.ImportFrom)) and any(
                (a.asname or a.name).split(".")[0] == name for a in n.names):
            return True
        if isinstance(n, ast.Name) and n.id == name and not isinstance(n.ctx, ast.Load):
            return True
    return False


# builtins that read their arguments (none keeps or writes one)
_READING_BUILTINS = {"len", "isinstance", "issubclass", "print", "repr", "str", "int", "float", "bool", "hash", "id",
                     "type", "hasattr", "callable", "format", "min", "max", "abs", "round", "sum", "any", "all", "super",
                     "tuple", "list", "dict", "set", "frozenset", "sorted", "reversed", "enumerate", "zip", "range",
                     "getattr"}
_LOGGER_METHODS = {"debug", "info", "warning", "warn", "error", "exception", "critical", "log"}


def _reads_only(f, call: ast.Call) -> bool:
    """A callee outside the project that reads what it is handed: see _may_write."""
    func = call.func
    if isinstance(func, ast.Name):  # (an exception's message: `raise ValueError(mode)`)
        error = getattr(builtins, func.id, None)
        builtin = func.id in _READING_BUILTINS or isinstance(error, type) and issubclass(error, BaseException)
        return builtin and not f.binds(func.id)
    if not isinstance(func, ast.Attribute):
        return False
    if func.attr in TENSOR_VIEW_METHODS | COPYING_METHODS | NO_DATA_METHODS or func.attr in _READS:
        return True
    module = f.module_of(func)
    if module is not None and module.split(".")[0] == "torch":
        return not (func.attr.endswith("_") or func.attr in IN_PLACE_LIBRARY or module.startswith("torch.ops")
                    or any(k.arg in ("out", "inplace") for k in call.keywords)  # (`F.threshold(.., inplace=True)`)
                    or _writes_in_place(f, call))  # (`inplace` by its place: round AA)
    return _logs(call)


def _logs(call: ast.Call) -> bool:
    """A logger's method (`logger.debug(...)`, `self.logger.info(...)`): it formats what it is handed (the logging
    allowlist, rows.LOGGING_ROOTS; a project's method of the name is not read for it)."""
    func = call.func
    base = reach._unparse(func.value) if isinstance(func, ast.Attribute) else ""
    return isinstance(func, ast.Attribute) and func.attr in _LOGGER_METHODS and (
        base in ("logger", "logging", "log", "_logger", "LOGGER") or base.endswith(".logger"))


def _project_functions(proj, f, name: str) -> List[Tuple[object, ast.AST]]:
    """(file, def) for the top-level function `name` of this file, or of the project file it imports it from,
    through a package's re-export (round AC: `from .window import evict_before` in `fork_ops/__init__.py`)."""
    own = [d for d in f.tree.body if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef)) and d.name == name]
    home = _import_home(proj, f, name) if not own else None
    g, name = home if home is not None else (f, name)
    return [(g, d) for d in g.tree.body if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef)) and d.name == name]


def _imported_unread(proj, f, name: str) -> bool:
    """Is `name` imported from a project file (through its re-exports) that binds it by no def nor class: an
    assignment, a wrapper's result, what the tool does not read?"""
    home = _import_home(proj, f, name)
    return home is not None and not _defines(*home)


def _import_home(proj, f, name: str) -> Optional[Tuple[object, str]]:
    """(file, name) where a name this file imports from the project ends, following re-exports (five files deep):
    the file binding it by a def or a class, or the last one reached; None where the file does not import it, or
    the chain leaves the project (a library's name a package re-exports)."""
    depth = 0
    while name in f.froms and depth < 5 and not _defines(f, name):
        module, name = f.froms[name]
        g = _imported_file(proj, f, module)
        if g is None:
            return None
        f, depth = g, depth + 1
    return (f, name) if depth else None


def _defines(f, name: str) -> bool:
    return any(isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and d.name == name for d in f.tree.body)


def _imported_file(proj, f, module: str):
    """The project file f imports `module` from, the checked module itself too (`from backend import Backend`)."""
    path = f._find(f.path, module)
    return proj.own() if path is not None and path == proj.module else proj._file_at(path) if path else None


def _param_written(proj, callee, key, depth: int, known: bool = False) -> bool:
    """Is the callee's (file, def, whether its first parameter is its object) parameter at `key` (a place among the
    positional ones after self, or a keyword) written in place in the def, or handed to a call that may write it?"""
    g, d, method = callee
    params = [a.arg for a in d.args.posonlyargs + d.args.args][1 if method else 0:]
    if isinstance(key, int):  # (past the positional ones: the `*args` it lands in, read as the tensor is)
        param = params[key] if key < len(params) else d.args.vararg.arg if d.args.vararg is not None else None
    else:  # (a keyword-only parameter is its own, not the `**kwargs` beside it: round AA)
        named = params + [a.arg for a in d.args.kwonlyargs]
        param = key if key in named or d.args.kwarg is None else d.args.kwarg.arg
    if param is None:
        return False
    names = _views_of(d, param)
    for node in ast.walk(d):
        target = _written_target(g, node)  # (a tensor's `lens += n` on its bare name is in place, round AP)
        if target is not None and any(_with_roots(_view_roots(t)) & names for t in reach._flatten([target])):
            return True  # (an attribute of what it is handed is part of it: `batch.topk_2d.masked_fill_`, round AC)
        if isinstance(node, ast.Call) and any(_handed_part(proj, g, node, a, names)
                                              and _may_write(proj, g, node, k, depth + 1, known)
                                              for k, a in _handed(node, starred=True)):
            return True
        if isinstance(node, ast.Call) and _receiver_written(proj, g, node, names):
            return True
    return False


def _handed_part(proj, g, call: ast.Call, arg: ast.AST, names: Set[str]) -> bool:
    """Does the call hand one of names, a view of one, or (to a def of the project, which is read) an attribute of
    one (`_grow(batch.seq_lens, n)` writing `lens`: round AP)? A library call's attribute argument is its source."""
    roots = _view_roots(arg)
    return bool(roots & names) or bool(_with_roots(roots) & names) and _callee_defs(proj, g, call) not in (None, _UNREAD)


def _receiver_written(proj, g, call: ast.Call, names: Set[str]) -> bool:
    """Is the call a method of one of names (`window.move_to(start)` on a parameter) whose project def writes in
    place what its object keeps (round AC: a window moved through a module function it is handed)? A class body
    binding the name to another callable is not read here (a dataclass's field of the name is one such binding)."""
    if not isinstance(call.func, ast.Attribute) or not _with_roots(_view_roots(call.func.value)) & names \
            or _reads_only(g, call):
        return False
    return any(_foreign_write(proj, h, d, 2) is not None for h, d in _project_methods(proj, call.func.attr))


def _with_roots(views: Set[str]) -> Set[str]:
    """The views and the names their attribute chains start from (`batch.topk_2d` is part of `batch`)."""
    return views | {v.split(".")[0] for v in views}


_VIEW_ATTRIBUTES = {"data", "T", "mT", "H", "mH", "real", "imag"}


# functions handing back their first argument's storage, or the argument itself (`torch.narrow(x, ...)`,
# `torch.as_tensor(x)`, `np.asarray(x)`): a view, as the method of the name is (round AA)
_VIEWING_FUNCTIONS = TENSOR_VIEW_METHODS | {"as_tensor", "asarray", "from_numpy", "view_as_real", "view_as_complex",
                                            "atleast_1d", "atleast_2d", "atleast_3d", "broadcast_to", "array"}
# builtins handing on the items of their arguments (a loop over `zip(topk, starts)` takes topk's rows)
_PASSING_BUILTINS = {"zip", "enumerate", "iter", "reversed", "list", "tuple", "sorted", "filter", "map"}


def _view_roots(e: ast.AST, helpers: bool = True) -> Set[str]:
    """The names e may be a view of (_view_root), through the builtins handing on their arguments' items, either
    branch of a conditional, the items of a display, the values of a dict (round AB: `t if t.dim() == 2 else
    t[:, 0]`, a loop over `(topk, draft_topk)`, `dict(topk=topk)`); with helpers, what a function not a builtin is
    handed (it may hand back a view of it)."""
    if isinstance(e, ast.Call) and isinstance(e.func, ast.Name) and e.func.id in _PASSING_BUILTINS | {"dict"}:
        return {r for a in [*e.args, *(k.value for k in e.keywords)] for r in _view_roots(a, helpers)}
    if isinstance(e, ast.IfExp):
        return _view_roots(e.body, helpers) | _view_roots(e.orelse, helpers)
    if isinstance(e, (ast.Tuple, ast.List, ast.Set)):
        return {r for x in e.elts for r in _view_roots(x, helpers)}
    if isinstance(e, ast.Dict):
        return {r for x in e.values for r in _view_roots(x, helpers)}
    if isinstance(e, ast.Call) and isinstance(e.func, ast.Name) and not hasattr(builtins, e.func.id):
        return {r for a in [*e.args, *(k.value for k in e.keywords)] for r in _view_roots(a)} if helpers else set()
        # (a helper of the project may hand back a view of what it is handed: `rows = as_rows(topk)`, round AC)
    root = _view_root(e)
    return {root} if root else set()


def _view_root(e: ast.AST) -> Optional[str]:
    """The name whose storage e is a view of: through items, slices, `.data`/`.T`, and a tensor's view methods
    and functions (`x[:, w:]`, `x.narrow(1, w, n)`, `torch.narrow(x, ...)`, `x.unsqueeze(1)`); None for anything
    else."""
    while True:
        if isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and isinstance(e.func.value, ast.Name) \
                and e.func.value.id in ("torch", "np", "numpy") and e.func.attr in _VIEWING_FUNCTIONS and e.args:
            e = e.args[0]
        elif isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and reach._unparse(e.func.value) in (
                "torch.Tensor", "Tensor") and e.args:
            e = e.args[0]  # (`torch.Tensor.narrow(topk, ...)`: the method's functional spelling, round AC)
        elif isinstance(e, ast.Subscript) or isinstance(e, ast.Attribute) and e.attr in _VIEW_ATTRIBUTES:
            e = e.value
        elif isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and e.func.attr in TENSOR_VIEW_METHODS:
            e = e.func.value
        elif isinstance(e, ast.Starred):
            e = e.value
        elif isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and e.func.attr in (
                "split", "chunk", "unbind", "tensor_split", "numpy"):
            e = e.func.value  # (its parts share its storage)
        elif isinstance(e, ast.Attribute):
            return reach._unparse(e)  # (`self.topk`, matched by its text)
        else:
            return e.id if isinstance(e, ast.Name) else None


def _views_of(d, param: str) -> Set[str]:
    """param and what d binds to a view of it, transitively (round Y: `tail = topk[:, w:]`; round Z: a loop over
    its rows, an unpacking of its split, an attribute it is stored in, `self.topk = topk`, by its text)."""
    names, grew = {param}, True
    while grew:
        grew = False
        for node in ast.walk(d):
            for name, default in _defaults(node) if node is not d else ():
                if name not in names and _view_roots(default) & names:  # (round AB: a nested `def step(t=topk)`)
                    names.add(name)
                    grew = True
            value = node.iter if isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)) else \
                node.context_expr if isinstance(node, ast.withitem) else getattr(node, "value", None) \
                if isinstance(node, (ast.Assign, ast.AnnAssign, ast.NamedExpr)) else None
            if value is None or not _view_roots(value) & names:
                continue  # (a loop, a comprehension, a `:=`, a `with ... as` binding a view too: round AA)
            targets = [node.optional_vars] if isinstance(node, ast.withitem) else node.targets \
                if isinstance(node, ast.Assign) else [node.target]
            for t in reach._flatten(targets):
                key = t.id if isinstance(t, ast.Name) else reach._unparse(t) if isinstance(t, ast.Attribute) else None
                if key and key not in names:
                    names.add(key)
                    grew = True
    return names


def _defaults(node: ast.AST) -> List[Tuple[str, ast.AST]]:
    """(parameter, default) for each parameter of a def or lambda given a default."""
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        return []
    a = node.args
    positional = [p.arg for p in a.posonlyargs + a.args]
    out = list(zip(positional[len(positional) - len(a.defaults):], a.defaults))
    return out + [(p.arg, v) for p, v in zip(a.kwonlyargs, a.kw_defaults) if v is not None]


def _written_target(f, node: ast.AST) -> Optional[ast.AST]:
    """What node writes into in place: an in-place method's receiver (`x.masked_fill_(...)`, `x.data[m].zero_()`,
    also taken as a value: `fill = x.masked_fill_`, `getattr(x, "masked_fill_")`), the first argument of its
    functional spelling (`torch.Tensor.masked_fill_(x, ...)`), an `out=` keyword, an item or slice assigned
    (`x[m] = v`, `x[m] += v`, in a tuple's targets too), the target of `x += v`, or a collective's tensor
    (IN_PLACE_LIBRARY, of torch.distributed: `dist.all_gather_into_tensor(x, ...)`)."""
    if isinstance(node, ast.Attribute) and node.attr.endswith("_") and not node.attr.endswith("__"):
        up = f.parents.get(id(node))
        functional = reach._unparse(node.value) in ("torch.Tensor", "Tensor")
        if functional:
            return up.args[0] if isinstance(up, ast.Call) and up.func is node and up.args else node
        return node.value
    if isinstance(node, ast.Call):
        out = next((k.value for k in node.keywords if k.arg == "out"), None)
        if out is not None:
            return out
        if isinstance(node.func, ast.Attribute) and node.func.attr == "numpy":
            return node.func.value  # (a numpy array sharing its storage: its methods write without a `_`, round Z)
        name = reach._unparse(node.func)
        if name == "getattr" and len(node.args) > 1 and (not isinstance(node.args[1], ast.Constant) or (
                str(node.args[1].value).endswith("_") and not str(node.args[1].value).endswith("__"))):
            return node.args[0]  # (a method picked by a computed name may be the in-place one: round X)
        if name.rsplit(".", 1)[-1] in IN_PLACE_LIBRARY and node.args and isinstance(node.func, ast.Attribute) \
                and (f.module_of(node.func.value) or "").startswith("torch.distributed"):
            return node.args[0]
        return None
    if isinstance(node, ast.AugAssign):
        return node.target
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        flat = [x for t in targets for x in ast.walk(t) if isinstance(x, ast.Subscript) and isinstance(x.ctx, ast.Store)]
        return flat[0].value if flat else None
    return None


def _fresh_local(proj, f, fn, target: ast.AST) -> bool:
    """Is the written tensor a local of fn bound only to a new tensor made there (`out = torch.empty(...)`,
    `buf = x.new_zeros(...)`, `y = x.clone()`, `valid = x >= 0`), or a plain number (`i += 1`), and never pointed at
    another's storage (`y.set_(v)`, `y.data = v`: round W)?"""
    while isinstance(target, ast.Subscript):
        target = target.value
    if not isinstance(target, ast.Name):
        return False
    values = reach.local_value(f, target)
    if values is None or f.enclosing(target, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) is not fn:
        return False
    if any(isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == target.id
           and (n.attr == "set_" or n.attr == "data" and isinstance(n.ctx, ast.Store)) for n in ast.walk(fn)):
        return False
    return all(isinstance(v, ast.Constant) and isinstance(v.value, (int, float, str, bytes)) or isinstance(
        v, (ast.Compare, ast.JoinedStr)) or _new_tensor(proj, f, v) for v in values)  # (a string holds no storage)


def _new_tensor(proj, f, v: ast.AST) -> bool:
    """torch's allocation or copy (`torch.empty(...)`, `torch.cat(...)`), or a tensor's own copy (`x.clone()`,
    `x.new_zeros(...)`): a project method of such a name (`self.arena.empty(...)`) may hand back anything."""
    if not isinstance(v, ast.Call) or not isinstance(v.func, ast.Attribute):
        return False
    name = v.func.attr
    if (f.module_of(v.func.value) or "").split(".")[0] == "torch":
        return name in FRESH_FUNCTIONS | COPYING_FUNCTIONS
    return name in _OWN_COPIES and not _project_methods(proj, name)


def _number_attribute(f, target: ast.AST, owner: str = "self") -> bool:
    """`self.calls += 1`: an attribute of self (of `owner`: a module hook's module) the file only ever assigns
    numbers (a counter, not a tensor)."""
    if not (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == owner):
        return False
    values = _values_stored(f.tree, target.attr)
    return bool(values) and all(isinstance(v, ast.Constant) and type(v.value) in (int, float) for v in values)


_CONTAINERS = {"dict", "list", "set", "OrderedDict", "collections.OrderedDict", "defaultdict",
               "collections.defaultdict", "deque", "collections.deque"}


def _fetched_only(f, node: ast.AST) -> bool:
    """`getattr(obj, name)` handed back, not called (a forwarding `__getattr__`): fetching a method writes nothing."""
    up = f.parents.get(id(node))
    return isinstance(node, ast.Call) and reach._unparse(node.func) == "getattr" and not (
        isinstance(up, ast.Call) and up.func is node)


def _library_mapping(f, target: ast.AST) -> bool:
    """An item stored into a library module's mapping (`sys.modules[name] = m`, `os.environ[k] = v`): no tensor."""
    module = f.module_of(target.value) if isinstance(target, ast.Attribute) else None
    return module is not None and module.split(".")[0] in ("sys", "os", "builtins", "importlib")


def _container_attribute(f, target: ast.AST) -> bool:
    """`self.records`: an attribute of self the file only ever assigns a dict, list or set (a display or a call of
    its type): an item stored there writes no tensor."""
    if not (isinstance(target, ast.Attribute) and reach._is_self(target.value)):
        return False
    values = _values_stored(f.tree, target.attr)
    return bool(values) and all(isinstance(v, (ast.Dict, ast.List, ast.Set, ast.DictComp, ast.ListComp, ast.SetComp))
                                or isinstance(v, ast.Call) and reach._unparse(v.func) in _CONTAINERS for v in values)


def _values_stored(tree: ast.AST, attr: str) -> List[ast.AST]:
    """What the assignments under tree store in an attribute named attr (an unpacking's item where it is known)."""
    return [v for n in ast.walk(tree) if isinstance(n, (ast.Assign, ast.AnnAssign)) and n.value is not None
            for t in (n.targets if isinstance(n, ast.Assign) else [n.target]) for v in _stored_values(t, n.value, attr)]


def _stored_values(target: ast.AST, value: ast.AST, attr: str) -> List[ast.AST]:
    """What an assignment stores in an attribute named attr: the value, or its item where both sides are tuples of
    one length (`self.t0, self.total = 0.0, 0.0`); the whole value where an unpacking's item is not known."""
    if isinstance(target, ast.Attribute):
        return [value] if target.attr == attr else []
    if isinstance(target, (ast.Tuple, ast.List)):
        if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts) \
                and not any(isinstance(e, ast.Starred) for e in target.elts):
            return [v for t, e in zip(target.elts, value.elts) for v in _stored_values(t, e, attr)]
        return [value for t in reach._flatten([target]) if isinstance(t, ast.Attribute) and t.attr == attr]
    return []


def _arguments(call: ast.Call, param: str, place: Optional[int], kind: str, named: frozenset) -> List[ast.AST]:
    """What the call hands `param`: as _argument; for `*args`, every positional argument from its place on; for
    `**kwargs`, every keyword that names no parameter of the function, and any `**mapping` (round S: sglang's
    indices come in `**kwargs`)."""
    if kind == "*":
        return list(call.args[place:]) if place is not None else []
    if kind == "**":
        return [k.value if k.arg is not None else k for k in call.keywords if k.arg not in named]
    source = _argument(call, param, place)
    return [] if source is None else [source]


def _unbound(f, func: ast.AST) -> bool:
    """May the method be read off a class, so that its first argument is the instance (`Backend.forward(obj,
    ...)`, `mod.Backend.forward(obj, ...)`, `_Impl.forward(obj, ...)` for an imported class)? Anything but
    `self` or `super()` may be (round P): both readings are checked."""
    value = func.value if isinstance(func, ast.Attribute) else None
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "super":
        return False
    if isinstance(value, ast.Name):  # (a lowercase parameter may hold a class too: `impl_cls.forward(obj, ...)`, round S)
        return value.id != "self" and not _constructed(f, value)
    return isinstance(value, (ast.Attribute, ast.Call, ast.Subscript))  # (`registry.get(name).forward(obj, ...)`: U)


def _constructed(f, name: ast.Name) -> bool:
    """Is the local bound, in the function reading it, only to constructions of a class (`be = Backend(cfg)`, `a, b =
    Backend(x), Backend(y)`), never otherwise (a parameter, a loop, `global`)? Then it holds an instance."""
    scope = f.enclosing(name, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
    if not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)) or name.id in {
            a.arg for a in ast.walk(scope.args) if isinstance(a, ast.arg)}:
        return False
    values = []
    for n in ast.walk(scope):
        if isinstance(n, (ast.Global, ast.Nonlocal)) and name.id in n.names:
            return False
        if not (isinstance(n, ast.Name) and n.id == name.id and not isinstance(n.ctx, ast.Load)):
            continue
        up = f.parents.get(id(n))
        if isinstance(up, ast.Assign) and n in up.targets:
            values.append(up.value)
        elif isinstance(up, ast.Tuple) and isinstance(f.parents.get(id(up)), ast.Assign) and up in f.parents[id(up)].targets \
                and isinstance(f.parents[id(up)].value, ast.Tuple) and len(f.parents[id(up)].value.elts) == len(up.elts):
            values.append(f.parents[id(up)].value.elts[up.elts.index(n)])
        else:
            return False
    return bool(values) and all(isinstance(v, ast.Call) and reach._unparse(v.func).rsplit(".", 1)[-1][:1].isupper()
                                and not isinstance(v.func, ast.Call) for v in values)


def _method(f, fn) -> bool:
    """A def of a class body (under an `if` there too: _body_defs) whose first parameter is its own object (or
    class): not a staticmethod's (round W)."""
    up = f.parents.get(id(fn))
    while isinstance(up, _BLOCKS + (ast.ExceptHandler, ast.match_case)):  # (a `case` of a `match` too: round AV)
        up = f.parents.get(id(up))
    return isinstance(up, ast.ClassDef) and not any(
        reach._unparse(d) in ("staticmethod", "builtins.staticmethod") for d in fn.decorator_list)


def _argument(call: ast.Call, param: str, place: Optional[int]) -> Optional[ast.AST]:
    """What the call hands `param`: its keyword, its positional argument, or the `*args` / `**kwargs` that may
    hold it (as the Starred or the keyword node); None where it is not handed."""
    for k in call.keywords:
        if k.arg == param:
            return k.value
    if place is not None:
        for i, a in enumerate(call.args):
            if isinstance(a, ast.Starred):
                return a
            if i == place:
                return a
    return next((k for k in call.keywords if k.arg is None), None)


class At(NamedTuple):
    """A call of the traced function in a file of the project: the project, the file, the function making it."""
    proj: object
    f: object
    fn: ast.AST
    call: ast.Call


def _handed_root(at: At, source: ast.AST, fname: str, keys: Set[str]) -> Optional[str]:
    """Why what the call hands may be other rows than fn was handed, or None: a parameter as it was handed (`q`),
    an attribute of one (`inputs.q`, never of the method's own object), or fn's own `*args`/`**kwargs` handed on
    whole by a function of the same name (an override or a wrapper, whose callers are this walk's)."""
    f, fn = at.f, at.fn
    star = isinstance(source, (ast.Starred, ast.keyword))
    expr = source.value if star else source
    if star:
        own = fn.args.vararg if isinstance(source, ast.Starred) else fn.args.kwarg
        if own is None or not (isinstance(expr, ast.Name) and expr.id == own.arg) or fn.name != fname and not _entry(at.proj, f, fn):
            return f"hands `{reach._unparse(source)[:40]}` on: which rows it holds is not traced"
        return _untouched(at, own.arg, None, keys)
    chain = expr
    while isinstance(chain, ast.Attribute):
        chain = chain.value
    names = {a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs}
    if not isinstance(chain, ast.Name) or chain.id not in names:
        return f"hands `{reach._unparse(expr)[:40]}`, not a parameter it was handed: its rows are not traced"
    if _method(f, fn) and chain.id == (fn.args.posonlyargs + fn.args.args)[0].arg:
        return f"hands `{reach._unparse(expr)[:40]}`, held on its own object, which any holder may rewrite"
    return _untouched(at, chain.id, expr if chain is not expr else None, keys)


def _served(proj, source: ast.AST) -> Optional[str]:
    """An attribute of a parameter handed on (`forward_batch.topk_indices`) holds what its holder was handed only
    where no file of the project makes it otherwise: a property, a `__post_init__` sorting it, another holder of
    the object assigning it (round V)."""
    expr = source.value if isinstance(source, (ast.Starred, ast.keyword)) else source
    while isinstance(expr, ast.Attribute):
        w = proj.attribute_served(expr.attr)
        if w is not None:
            return f"hands `{reach._unparse(expr)[:40]}`, and {w.what} at {w.where()}"
        expr = expr.value
    return None


def _untouched(at: At, name: str, attribute: Optional[ast.AST], keys: Set[str]) -> Optional[str]:
    """Why fn may bind `name` again, or write or hand on what it holds (or, `attribute` given, what that attribute
    of it holds) other than to `call`, or None."""
    proj, f, fn, call = at
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and node.id == name:
            if not isinstance(node.ctx, ast.Load) and not _converted_in_place_of(f, node):
                return f"binds `{name}` again"
            if not isinstance(node.ctx, ast.Load) or _converting(f, node):
                continue
            if _exclusive(f, fn, node, call) and not _in_place(f, node) and not _handed_to_writer(proj, f, node, call):
                continue  # (a write in place in the other branch, or by a call it is handed to, stays for the next
                # call: rounds S and T)
            why = _use(f, node, call, reach._unparse(attribute) if attribute is not None else name, keys, proj)
            if why:
                return why
        elif binds(node, name, fn):
            return f"binds `{name}` again ({binds(node, name, fn)})"
    return None


# A tensor's conversions that keep its rows and entries (a dtype, a layout, a device), with no other argument
_CONVERSIONS = {"to", "int", "long", "contiguous", "cuda"}
# The dtypes an index converts to unchanged, -1 included (round AY: `.to(torch.uint8)` wraps -1 to 255; a half
# rounds past 2048)
_WIDE_DTYPES = {"torch.int32", "torch.int", "torch.int64", "torch.long", "torch.float64", "torch.double"}
# A tensor's reductions and tests: a new tensor or a number, the tensor left as it is
_REDUCTIONS = {"max", "min", "amax", "amin", "sum", "any", "all", "count_nonzero", "isfinite", "isnan"}


def _converted_in_place_of(f, target: ast.Name) -> bool:
    """`indices = indices.to(torch.int32)` (one target, itself converted, to a dtype holding every index): the same
    rows and entries under the name (round AB's safe twin: an indexer of older checkpoints emits int64)."""
    stmt = f.parents.get(id(target))
    value = stmt.value if isinstance(stmt, ast.Assign) and stmt.targets == [target] else None
    if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in _CONVERSIONS
            and isinstance(value.func.value, ast.Name) and value.func.value.id == target.id and not value.keywords):
        return False
    return all(isinstance(a, ast.Attribute) and (reach._unparse(a) in _WIDE_DTYPES or reach._unparse(a).startswith(
        "torch.") and a.attr.endswith("_format")) for a in value.args)


def _converting(f, read: ast.Name) -> bool:
    """Is this read the receiver of `name = name.to(torch.int32)` (_converted_in_place_of)?"""
    method = f.parents.get(id(read))
    call = f.parents.get(id(method))
    stmt = f.parents.get(id(call))
    return isinstance(stmt, ast.Assign) and stmt.value is call and len(stmt.targets) == 1 and isinstance(
        stmt.targets[0], ast.Name) and stmt.targets[0].id == read.id and _converted_in_place_of(f, stmt.targets[0])


def _handed_to_writer(proj, f, node: ast.Name, call: Optional[ast.Call] = None, depth: int = 0) -> bool:
    """Is this read of a name an argument of a call that may write it in place: a function this file does not
    define (an import), or one whose parameter it lands in is written in place or handed on so (round T: a layer's
    other branch masking the shared top-k through `apply_window(topk, start)`); a method of another object not
    named as the traced call (the engine's hybrid dispatch hands the batch to a sibling backend's `forward_extend`),
    unless every def of that name in the project leaves the parameter alone (round V: `self.window.apply(topk)`)?"""
    up = f.parents.get(id(node))
    while isinstance(up, (ast.Subscript, ast.Starred)):
        node, up = up, f.parents.get(id(up))
    sibling = isinstance(getattr(call, "func", None), ast.Attribute) and call.func.attr == getattr(
        getattr(up, "func", None), "attr", None)
    if isinstance(up, ast.Call) and node in up.args and isinstance(up.func, ast.Attribute) and not sibling and not (
            isinstance(up.func.value, ast.Name) and up.func.value.id == "self"):
        defs = _project_methods(proj, up.func.attr)  # (none: a library object's method, not read)
        return not defs or any(isinstance(a, ast.Starred) for a in up.args) or any(
            _param_changed(g, d, up.args.index(node) + 1) for g, d in defs)
    if not (isinstance(up, ast.Call) and node in up.args and isinstance(up.func, ast.Name)):
        return False
    defs = [d for d in f.tree.body if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef)) and d.name == up.func.id]
    if len(defs) != 1 or depth > 3 or any(isinstance(a, ast.Starred) for a in up.args):
        return True
    params = [a.arg for a in defs[0].args.posonlyargs + defs[0].args.args]
    place = up.args.index(node)
    if place >= len(params):
        return True
    return any(isinstance(n, ast.Name) and n.id == params[place] and (
        _in_place(f, n) or _handed_to_writer(proj, f, n, None, depth + 1)) for n in ast.walk(defs[0]))


def _project_methods(proj, name: str) -> List[Tuple[object, ast.AST]]:
    """(file, def) for each method of that name a class of the project (the module too) defines."""
    return [(g, d) for g in _files_and_module(proj, [name]) for c in g.class_defs for d in _body_defs(c) if d.name == name]


def _files_and_module(proj, names) -> list:
    """The project's files naming one of `names`, and the module itself (which files_naming never holds)."""
    own = proj.own()
    return proj.files_naming(list(names)) + ([own] if own is not None else [])


def _body_defs(cls: ast.ClassDef) -> List[ast.AST]:
    """The defs a class body binds, also under an `if`, a `try`, a `with` or a `match` there (round AF: `if FUSED:
    def evict(...)`), not those nested in a def or a class."""
    out, todo = [], list(cls.body)
    while todo:
        stmt = todo.pop(0)
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out.append(stmt)
        elif isinstance(stmt, _BLOCKS):
            todo += [*getattr(stmt, "body", []), *getattr(stmt, "orelse", []), *getattr(stmt, "finalbody", []),
                     *(s for h in getattr(stmt, "handlers", []) for s in h.body),
                     *(s for c in getattr(stmt, "cases", []) for s in c.body)]
    return out


# the compound statements a class body may bind a def under (`if FUSED: def evict(...)`, a `match` per platform)
_BLOCKS = (ast.If, ast.Try, ast.With, ast.AsyncWith, ast.For, ast.AsyncFor, ast.While, ast.Match) + (
    (ast.TryStar,) if hasattr(ast, "TryStar") else ())


def _param_changed(f, fdef, place: int) -> bool:
    """Is fdef's positional parameter at `place` written in place there (or taken by its `*args`)?"""
    params = [a.arg for a in fdef.args.posonlyargs + fdef.args.args]
    if place >= len(params):
        return fdef.args.vararg is not None
    return any(isinstance(n, ast.Name) and n.id == params[place] and _in_place(f, n) for n in ast.walk(fdef))


def _in_place(f, node: ast.Name) -> bool:
    """Is this read of a name (through subscripts) a write into its tensor: `x.op_(...)`, `x[i] = v`, `x += v`?"""
    up = f.parents.get(id(node))
    while isinstance(up, ast.Subscript):
        if not isinstance(up.ctx, ast.Load):
            return True
        node, up = up, f.parents.get(id(up))
    if isinstance(up, ast.AugAssign):
        return True
    return isinstance(up, ast.Attribute) and up.attr.endswith("_") and not up.attr.endswith("__") and isinstance(
        f.parents.get(id(up)), ast.Call)


def _exclusive(f, fn, node: ast.AST, call: ast.Call) -> bool:
    """Do node and call sit in the two branches of one `if` of fn that no loop of fn encloses (the branch
    holding node never runs in a call of fn that reaches the call: sglang's flashmla_backend.forward_extend
    reshapes q only where it does not hand it to super())?"""
    def chain(x):
        out = []
        while x is not None and x is not fn:
            out.append(x)
            x = f.parents.get(id(x))
        return out
    mine, theirs = chain(node), chain(call)
    ids = {id(x) for x in theirs}
    if _returns_before(fn, mine, theirs) or _returns_before(fn, theirs, mine):
        return True
    for i, up in enumerate(mine):
        if id(up) not in ids:
            continue
        if not isinstance(up, ast.If) or i == 0 or any(isinstance(x, _LOOPS) for x in chain(up)):
            return False
        child, other = mine[i - 1], theirs[[id(x) for x in theirs].index(id(up)) - 1]
        return child in up.body and other in up.orelse or child in up.orelse and other in up.body
    return False


def _returns_before(fn, first, then) -> bool:
    """Does the code at `first` (its ancestors up to fn's body) sit in an `if` of fn's body, with no `else`, that
    always returns, ahead of the statement holding `then` (`if full: return a.forward_extend(q, ...)` then `return
    b.forward_extend(q=q, ...)`: sglang's hybrid backends)?"""
    top_first = first[-1] if first else None
    top_then = then[-1] if then else None
    body = list(fn.body)
    if not (isinstance(top_first, ast.If) and top_first in body and top_then in body) or top_first.orelse:
        return False
    if body.index(top_first) >= body.index(top_then) or len(first) < 2 or first[-2] not in top_first.body:
        return False
    return isinstance(top_first.body[-1], (ast.Return, ast.Raise))


def _use(f, node: ast.Name, call: ast.Call, handed: str, keys: Set[str], proj=None) -> Optional[str]:
    """Why this read of a handed parameter may change or hand on the rows `handed` (`q`, `inputs.q`) holds."""
    expr, up = node, f.parents.get(id(node))
    while reach._unparse(expr) != handed:  # climb `inputs` -> `inputs.q`: another attribute is not the rows
        if not isinstance(up, ast.Attribute):
            return f"reads `{reach._unparse(expr)[:40]}` whole: it may hand the rows' holder on"
        if not (handed == reach._unparse(up) or handed.startswith(reach._unparse(up) + ".")):
            called = f.parents.get(id(up))  # `batch.coalesce_topk()`: the holder's method may rewrite the rows' attribute
            if isinstance(called, ast.Call) and called.func is up:
                return f"calls `{reach._unparse(up)[:40]}`, a method of the rows' holder, which may give them another tensor"
            return None
        expr, up = up, f.parents.get(id(up))
    if _keyed_read(f, up, expr, keys):  # `kwargs.get("layer_id")`, `kwargs["layer_id"]`: another entry of a mapping
        return None
    if isinstance(up, (ast.Starred, ast.keyword)):  # `*args`, `**kwargs` handed on
        expr, up = up, f.parents.get(id(up))
    if isinstance(up, ast.Call) and (expr in up.args or expr in up.keywords or expr in [k.value for k in up.keywords]):
        callee = up.func
        if up is call and _in_loop(f, call):  # (round V: a loop over layers, another backend's `forward` first)
            return (f"hands `{reach._unparse(expr)[:40]}` to `{reach._unparse(callee)[:40]}` in a loop: what an earlier "
                    "turn calls (another object's method of that name) may change it in place")
        if up is call or isinstance(callee, ast.Name) and callee.id in ("len", "isinstance") or (
                f.parents.get(id(up)) is call and up in call.args + [k.value for k in call.keywords]
                and proj is not None and _record_fields(proj, f, up, frozenset()) is not None):
            return None  # (a record made in the call's arguments storing what it is handed: round AM; a dispatch sibling handed the rows first may change them: round P; one in the other
            # branch of an `if` is _exclusive)
        return f"hands `{reach._unparse(expr)[:40]}` to `{reach._unparse(callee)[:40]}`, which may change it in place"
    if isinstance(up, ast.Attribute) and up.attr in _READS:
        return None
    if isinstance(up, ast.Attribute) and up.attr in _REDUCTIONS and isinstance(f.parents.get(id(up)), ast.Call) \
            and f.parents[id(up)].func is up:
        return None  # (`int(indices.max())`: a bounds check reads, round AB's safe twin)
    chain = up  # `forward_batch.topk_indices_2d.shape`: a size read off an attribute of the holder (round U's safe twin)
    while isinstance(chain, ast.Attribute) and isinstance(f.parents.get(id(chain)), ast.Attribute):
        chain = f.parents[id(chain)]
    if isinstance(chain, ast.Attribute) and chain is not up and chain.attr in _READS:
        return None
    if isinstance(up, ast.Compare) and all(isinstance(c, ast.Constant) and (c.value is None or type(c.value) in (
            int, float)) for c in up.comparators):
        return None  # (`indices is None`, `(indices >= 0).sum(-1)`: a new tensor, round W's safe twin)
    if isinstance(up, ast.Return):
        return None
    return f"uses `{reach._unparse(up if up is not None else expr)[:40]}`: the rows may change before the call"


def _in_loop(f, node: ast.AST) -> bool:
    """Is node inside a loop (or a comprehension) of its function?"""
    up = f.parents.get(id(node))
    while up is not None and not isinstance(up, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        if isinstance(up, _LOOPS):
            return True
        up = f.parents.get(id(up))
    return False


def _keyed_read(f, up: ast.AST, expr: ast.AST, keys: Set[str]) -> bool:
    """A read of one entry of a handed `**kwargs` by a literal key that names no parameter traced (`keys`; sglang's
    hybrid backends read `kwargs.get("layer_id")` before handing the rest on)."""
    if isinstance(up, ast.Subscript) and up.value is expr and isinstance(up.ctx, ast.Load):
        key = up.slice
    elif isinstance(up, ast.Attribute) and up.attr == "get" and isinstance(f.parents.get(id(up)), ast.Call):
        call = f.parents[id(up)]
        key = call.args[0] if call.func is up and call.args else None
    else:
        return False
    return isinstance(key, ast.Constant) and isinstance(key.value, str) and key.value not in keys


def _entry(proj, f, fn) -> bool:
    """The engine's own dispatch (ENTRY_BASES: `forward` of that class in that module, or of a class deriving from
    it, which the framework calls as it calls the base's: `forward_batch.attn_backend.forward(q, k, v, ...)`), whose
    `**kwargs` the framework fills: it may hand them on whole. Its body is read as any caller's (a fork's copy may
    sort the rows)."""
    cls = f.parents.get(id(fn))
    if fn.name != ENTRY_METHOD or not isinstance(cls, ast.ClassDef):
        return False
    return any((_stem(g.path), c.name) in ENTRY_BASES for g, c in [(f, cls), *proj.bases_in_order(f, cls)])


def _engine_interface(proj, f, cls) -> bool:
    """Is cls a class deriving from the engine's dispatch base (ENTRY_BASES), whose methods of the traced name the
    engine calls through its interface? Taken as called with the interface's places wherever it takes them
    (assumed, as the framework's own calls are: sglang's `HybridLinearAttnBackend.forward_extend`, `q` after
    `layer`, called by its own `forward`, which is the engine's dispatch)."""
    return isinstance(cls, ast.ClassDef) and any((_stem(g.path), c.name) in ENTRY_BASES
                                                 for g, c in proj.bases_in_order(f, cls))


def _stem(path: str) -> str:
    return path.replace("\\", "/").rsplit("/", 1)[-1].removesuffix(".py")


def _handed_as_bound(call: ast.Call, want: Wanted, named: frozenset) -> List[ast.AST]:
    """What the call hands the traced parameters read as a bound method's call (`x.forward(q, ...)`): a function of
    the traced name handing on its own parameters from the places it takes them at is the traced function to its
    callers (the reading of `x` as a class, `Cls.forward(obj, q, ...)`, is the callers' own: _sources)."""
    return [s for param, place, kind in want for s in _arguments(call, param, place, kind, named)]


def _covered(taken: Set[Tuple[Optional[int], str]], want: Wanted, call: ast.Call) -> bool:
    """Are the places a function of the traced name takes the rows at read already, in each call of the name, by the
    traced places? Its `**kwargs` handed on whole are (the traced parameters are read by their keywords), and its
    `*args` where they are handed from the place they start at."""
    starred = {i for i, a in enumerate(call.args) if isinstance(a, ast.Starred)}
    return all(kind == "**" or kind == "*" and place in starred or (place, kind) in _places(want)
               for place, kind in taken)


def _places(wanted: Wanted) -> Set[Tuple[Optional[int], str]]:
    """Where a function takes the traced rows (its places and kinds, whatever its parameters are named)."""
    return {(place, kind) for _, place, kind in wanted}


def wanted_of(positions: List[str], names: Set[str], star: str = "", star_star: str = "") -> Wanted:
    """The traced parameters with their places (None: keyword-only); `star`, `star_star`: the names of the
    function's `*args` and `**kwargs` (the first takes the positional arguments past `positions`)."""
    def one(n: str):
        if n == star:
            return n, len(positions), "*"
        return n, positions.index(n) if n in positions else None, "**" if n == star_star else ""
    return tuple(sorted(map(one, names), key=lambda x: x[0]))
