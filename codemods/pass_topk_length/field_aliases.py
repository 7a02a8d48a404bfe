"""docs/soundness.md `metadata-in-scope`, round BI: the clipped-lengths field's tensor held under another attribute
name (a view kept as another keyword of a making, `md.a = md.field.view(-1, 1)`, a tuple store, a literal `setattr`,
`md.a.data = md.field.data`, `md.a.set_(md.field)`, a positional slot, a helper of another file, a second record or a
child object handed the tensor) and written in place under that name overwrites the field after its refresh.
`aliased_write` gathers the attribute names the tensor may be held under, over every file of the project naming
one of them, then finds an in-place write under one of them; a call the tensor is handed to that is not read (a
callable held by a name, a def past three calls) refuses. Plain functions over reach.Project's files (CPython ast)."""
from __future__ import annotations

import ast
import builtins
from typing import Dict, List, Optional, Set, Tuple

from . import callers, reach
from .graph_replay import ENGINE_FIELD_OUTPUTS
from .rows import TENSOR_VIEW_METHODS

# attributes handing on the tensor they are read off (`x.data`, `x.T`)
_PASSING_ATTRS = {"data", "T", "mT", "H", "mH", "real", "imag"}
_VIEWS = TENSOR_VIEW_METHODS | {"detach", "detach_", "set_", "as_strided_", "view_as_real", "view_as_complex"}
_TORCH_VIEWS = _VIEWS | {"as_tensor", "asarray", "from_numpy", "select", "index_select_view"}
_GROWS = {"append", "extend", "insert", "add", "appendleft", "setdefault", "update", "__setitem__", "put"}
_CONTAINERS = {"list", "tuple", "set", "frozenset", "dict", "zip", "iter", "enumerate", "reversed", "sorted",
               "map", "filter", "next"}
_NAMESPACES = {("types", "SimpleNamespace"), ("argparse", "Namespace")}  # library classes keeping keywords as attrs
_ENGINE_KEEPS_NOTHING = {name for _, name in ENGINE_FIELD_OUTPUTS} | {"get_mla_metadata"}
# the engine's kernel packages (their wrappers hand the lengths to a kernel and keep nothing: stated, as for torch)
_ENGINE_KERNEL_PACKAGES = ("sglang.jit_kernel", "sgl_kernel", "sglang.kernels")
_DEPTH = 3
Roots = Tuple[Set[str], Set[str]]  # (locals, attribute names) a value may share storage with


class _NotRead(Exception):
    """A call handed the tensor whose callee is not read: why."""


def aliased_write(proj: "reach.Project", own: "reach._File", field: str) -> Optional[str]:
    """Why the field's tensor is written in place under another attribute name (the alias's making and the
    write), else None. Read once per field and project."""
    memo = proj.__dict__.setdefault("_field_aliases", {})
    if field not in memo:
        memo[field] = _aliased_write(proj, own, field)
    return memo[field]


def _aliased_write(proj, own, field: str) -> Optional[str]:
    walk = _Aliases(proj, own, field)
    try:
        walk.gather()
    except _NotRead as e:
        return f"{e}: what it keeps of the `{field}` tensor is not read; pass topk_length by hand"
    for g in walk.files():
        for node in ast.walk(g.tree):
            name = _written_name(g, node)
            if name in walk.origin:
                rel, line = walk.origin[name]
                return (f"{rel}:{line} holds the `{field}` tensor as `{name}`, and {proj.rel(g.path)}:{node.lineno} "
                        f"writes `{name}` in place: the field is written under that name; give `{field}` its own "
                        "tensor, or pass topk_length by hand")
    return None


def _written_name(g, node: ast.AST) -> Optional[str]:
    """The attribute name node writes into in place (`x.a.copy_(v)`, `x.a[i] = v`, `x.a += v`, `x.a.data = v`,
    `x.a.set_(v)`, through views), else None."""
    target = callers._written_target(g, node)
    if target is None and isinstance(node, ast.Assign):
        target = next((t.value for t in node.targets if isinstance(t, ast.Attribute) and t.attr == "data"), None)
    while True:
        if isinstance(target, ast.Subscript) or isinstance(target, ast.Attribute) and target.attr in _PASSING_ATTRS:
            target = target.value
        elif isinstance(target, ast.Call) and isinstance(target.func, ast.Attribute) and target.func.attr in _VIEWS:
            target = target.func.value
        else:
            break
    return target.attr if isinstance(target, ast.Attribute) else None


class _Aliases:
    """The attribute names the field's tensor may be held under (origin: name -> where first), to a fixpoint."""

    def __init__(self, proj, own, field: str):
        self.proj, self.own, self.field = proj, own, field
        self.origin: Dict[str, Tuple[str, int]] = {}
        self.read: Dict[str, "reach._File"] = {own.path: own}  # the files read (defs followed included)
        self.done: Dict[tuple, bool] = {}  # (scope, seed, names known) -> whether it returns the tensor
        self.once: Optional[Set[str]] = None  # the locals the scope being scanned binds once
        self.callees: Dict[int, object] = {}

    def names(self) -> Set[str]:
        return {self.field} | set(self.origin)

    def files(self) -> List["reach._File"]:
        for g in self.proj.files_naming(sorted(self.names())):
            self.read.setdefault(g.path, g)
        return list(self.read.values())

    def gather(self) -> None:
        for _ in range(8):
            before = len(self.origin)
            for g in self.files():
                for scope in _scopes(g.tree):
                    self.scan(g, scope, set(), 0)
            if len(self.origin) == before:
                return

    def scan(self, g, scope: ast.AST, seed: Set[str], depth: int) -> bool:
        """Hold scope's locals sharing the tensor (seed: its parameters handed it) and the attribute names it
        stores them under; whether it returns (a view of) it."""
        key = (id(scope), frozenset(seed), len(self.origin))
        if key in self.done:
            return self.done[key]
        self.done[key] = False  # (a recursive call: returns nothing more)
        held, nodes = set(seed), list(_own_nodes(scope))
        saved, self.once, size = self.once, _bound_once(nodes), -1
        while size != len(held) + len(self.origin):
            size = len(held) + len(self.origin)
            for node in nodes:
                self._relate_node(g, scope, node, held, depth)
        self.once = saved
        self.done[key] = any(isinstance(n, ast.Return) and self._hits(self.roots(g, n.value, held, depth), held) for n in nodes) \
            or isinstance(scope, ast.Lambda) and self._hits(self.roots(g, scope.body, held, depth), held)
        return self.done[key]

    def _relate_node(self, g, scope, node: ast.AST, held: Set[str], depth: int) -> None:
        if isinstance(node, ast.Assign):
            for t in node.targets:
                self.relate(g, t, node.value, held, depth)
            for a in node.targets[1:]:  # chained targets (`a = b = v`) hold one object
                self.relate(g, a, node.targets[0], held, depth)
        elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
            self.relate(g, node.target, node.value, held, depth)
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            self.relate(g, node.target, node.iter, held, depth)
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            self.relate(g, node.optional_vars, node.context_expr, held, depth)
        elif isinstance(node, ast.Call):
            self._call(g, scope, node, held, depth)

    def relate(self, g, target: ast.AST, value: ast.AST, held: Set[str], depth: int, where: int = 0) -> None:
        """target holds what value is (a store, a binding): where either side shares the tensor, so does the other
        (a display on the value's side is a container: it holds the tensor, its items do not become it)."""
        if isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)) \
                and len(target.elts) == len(value.elts) and not any(isinstance(e, ast.Starred) for e in target.elts):
            for t, v in zip(target.elts, value.elts):
                self.relate(g, t, v, held, depth)
            return
        if isinstance(target, (ast.Tuple, ast.List, ast.Starred)):
            for t in (target.elts if not isinstance(target, ast.Starred) else [target.value]):
                self.relate(g, t, value, held, depth)
            return
        self._join(self._target_roots(target), self.roots(g, value, held, depth), self.roots(g, value, held, depth, True),
                   held, where or getattr(target, "lineno", 0) or getattr(value, "lineno", 0), g)

    def _join(self, target: Roots, value: Roots, direct: Roots, held: Set[str], line: int, g) -> None:
        if self._hits(value, held):
            self._hold(target, held, line, g)
        if self._hits(target, held) and not (target[0] and self.once is not None and not target[0] <= self.once):
            self._hold(direct, held, line, g)  # (a local bound twice holds one of its values: no way back)

    def _hold(self, roots: Roots, held: Set[str], line: int, g) -> None:
        held |= roots[0]
        for a in roots[1] - self.names():
            self.origin[a] = (self.proj.rel(g.path), line)

    def _hits(self, roots: Roots, held: Set[str]) -> bool:
        return bool(roots[0] & held or roots[1] & self.names())

    @staticmethod
    def _target_roots(t: ast.AST) -> Roots:
        while isinstance(t, ast.Subscript) or isinstance(t, ast.Attribute) and t.attr in _PASSING_ATTRS:
            t = t.value  # (an item store puts it in the container; `x.a.data = v` points `a` at v's storage)
        if isinstance(t, ast.Name):
            return {t.id}, set()
        return (set(), {t.attr}) if isinstance(t, ast.Attribute) else (set(), set())

    def roots(self, g, e: Optional[ast.AST], held: Set[str], depth: int, direct: bool = False) -> Roots:
        """The locals and attribute names e's value may share storage with (direct: not through a display)."""
        if e is None:
            return set(), set()
        if isinstance(e, ast.Name):
            return {e.id}, set()
        if isinstance(e, ast.Attribute):
            return self.roots(g, e.value, held, depth, direct) if e.attr in _PASSING_ATTRS else (set(), {e.attr})
        if isinstance(e, (ast.Subscript, ast.Starred, ast.NamedExpr, ast.Await)):
            return self.roots(g, e.value, held, depth, direct)
        if isinstance(e, ast.IfExp):
            return _union(self.roots(g, x, held, depth, direct) for x in (e.body, e.orelse))
        if isinstance(e, ast.BoolOp):
            return _union(self.roots(g, x, held, depth, direct) for x in e.values)
        if direct:
            return self._call_roots(g, e, held, depth, True) if isinstance(e, ast.Call) else (set(), set())
        if isinstance(e, (ast.Tuple, ast.List, ast.Set)):
            return _union(self.roots(g, x, held, depth) for x in e.elts)
        if isinstance(e, ast.Dict):
            return _union(self.roots(g, x, held, depth) for x in e.values)
        if isinstance(e, ast.BinOp) and isinstance(e.op, (ast.Mult, ast.Add)) and any(
                isinstance(x, (ast.Tuple, ast.List)) for x in (e.left, e.right)):
            return _union(self.roots(g, x, held, depth) for x in (e.left, e.right))  # `[t] * 2`, `[a] + rest`
        if isinstance(e, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            return _union(self.roots(g, c.iter, held, depth) for c in e.generators)
        return self._call_roots(g, e, held, depth, False) if isinstance(e, ast.Call) else (set(), set())

    def _call_roots(self, g, call: ast.Call, held: Set[str], depth: int, direct: bool) -> Roots:
        """What a call's result may share: a view method's receiver (an in-place method hands back self), a torch view
        function's first argument, a container builtin's arguments, a project def's parameters it returns."""
        func = call.func
        if isinstance(func, ast.Attribute) and (func.attr in _VIEWS or func.attr.endswith("_") and not func.attr.endswith("__")):
            mod = g.module_of(func.value)
            if mod is None:
                return self.roots(g, func.value, held, depth, direct)
            return self.roots(g, call.args[0], held, depth, direct) if call.args and func.attr in _TORCH_VIEWS else (set(), set())
        if isinstance(func, ast.Name) and func.id in _CONTAINERS and not _binds(g, func.id):
            return (set(), set()) if direct else _union(self.roots(g, a, held, depth) for a in call.args)
        if not any(self._hits(self.roots(g, a, held, depth), held) for a in call.args + [k.value for k in call.keywords]):
            return set(), set()
        callee = self._project_def(g, call, depth)
        if callee is None or isinstance(callee[1], ast.ClassDef):
            return set(), set()
        out: Roots = (set(), set())
        for param, arg in _bound(callee[1], call, callee[2]):
            if self._hits(self.roots(g, arg, held, depth), held) and self.scan(callee[0], callee[1], {param}, depth + 1):
                out = _union([out, self.roots(g, arg, held, depth, direct)])
        return out

    def _project_def(self, g, call: ast.Call, depth: int):
        """(file, def, skip-first) the call runs where it is a def of the project resolved simply; None else."""
        try:
            return self._callee(g, call, depth, quiet=True)
        except _NotRead:
            return None

    def _call(self, g, scope, call: ast.Call, held: Set[str], depth: int) -> None:
        """A call handed the tensor (an argument, positional or keyword, sharing it): what the callee keeps."""
        args = [(i, None, a) for i, a in enumerate(call.args)] + [(None, k.arg, k.value) for k in call.keywords]
        hot = [(i, k, a) for i, k, a in args if self._hits(self.roots(g, a, held, depth), held)]
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr == "set_" and call.args:  # `x.a.set_(v)`: one storage
            self.relate(g, func.value, call.args[0], held, depth)
        if isinstance(func, ast.Name) and func.id == "setattr" and not _binds(g, "setattr") and len(call.args) == 3:
            self._setattr(g, call, held, depth)
            return
        if hot:
            self._keep(g, call, hot, held, depth)
        elif any(k.arg in self.names() for k in call.keywords) or _class_like(func) and call.args:
            callee = self._project_def(g, call, depth)  # (a making giving the field's slot a local: it holds it)
            if callee is not None and isinstance(callee[1], ast.ClassDef):
                self._making(g, callee[0], callee[1], call, held, depth)
            elif self._namespace(g, func) or _is_replace(g, func):
                self._keep(g, call, [], held, depth)

    def _setattr(self, g, call: ast.Call, held: Set[str], depth: int) -> None:
        name = call.args[1]
        if isinstance(name, ast.Constant) and isinstance(name.value, str):
            self.relate(g, ast.Attribute(value=call.args[0], attr=name.value, ctx=ast.Store()), call.args[2], held, depth,
                        call.lineno)
        elif self._hits(self.roots(g, call.args[2], held, depth), held):
            raise _NotRead(f"{self.proj.rel(g.path)}:{call.lineno} stores the tensor by a computed name")

    def _keep(self, g, call: ast.Call, hot, held: Set[str], depth: int) -> None:
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr in _GROWS:  # a container grown with it holds it
            self._hold(self._target_roots(func.value), held, call.lineno, g)
            return
        if self._namespace(g, func) or _is_replace(g, func):
            for k, a in [(k.arg, k.value) for k in call.keywords]:
                if k is not None:
                    self._join((set(), {k}), self.roots(g, a, held, depth), (set(), set()), held, call.lineno, g)
            return
        if isinstance(func, ast.Attribute) and self._hits(self.roots(g, func.value, held, depth, True), held):
            return  # a method of the tensor itself (`md.field.copy_(v)`): a tensor's, it keeps nothing
        callee = self._callee(g, call, depth)
        if callee is None:
            return  # a library's: keeps nothing
        cg, fdef, skip = callee
        if isinstance(fdef, ast.ClassDef):
            self._making(g, cg, fdef, call, held, depth)
            return
        for param, arg in _bound(fdef, call, skip):
            if self._hits(self.roots(g, arg, held, depth), held):
                self.scan(cg, fdef, {param}, depth + 1)

    def _making(self, g, cg, cls: ast.ClassDef, call: ast.Call, held: Set[str], depth: int) -> None:
        """A project class made with the tensor: its `__init__` read as a def, else its annotated fields by place
        and by keyword (a dataclass's, a NamedTuple's); both ways the field's own slot joins its argument."""
        init = self._method(cg, cls, "__init__")
        if init is not None:
            for param, arg in _bound(init[1], call, True):
                if self._hits(self.roots(g, arg, held, depth), held):
                    self.scan(init[0], init[1], {param}, depth + 1)
            return
        slots = [n for _, c in reversed([(cg, cls)] + self.proj.bases_in_order(cg, cls)) for n in _fields(c)]
        for i, arg in enumerate(call.args):
            if isinstance(arg, ast.Starred):
                return
            if i < len(slots):
                self._join((set(), {slots[i]}), self.roots(g, arg, held, depth), self.roots(g, arg, held, depth, True),
                           held, call.lineno, g)
        for k in call.keywords:
            if k.arg is not None:
                self._join((set(), {k.arg}), self.roots(g, k.value, held, depth),
                           self.roots(g, k.value, held, depth, True), held, call.lineno, g)

    def _method(self, g, cls: ast.ClassDef, name: str):
        for cg, c in [(g, cls)] + self.proj.bases_in_order(g, cls):
            found = next((d for d in c.body if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef)) and d.name == name), None)
            if found is not None:
                self.read.setdefault(cg.path, cg)
                return cg, found
        return None

    def _callee(self, g, call: ast.Call, depth: int, quiet: bool = False):
        """(file, def or class, whether its first parameter is bound) the call runs; None for a library's; raises
        _NotRead where it is not read (a callable a name holds, an object's method of no known class, 3 deep)."""
        if id(call) not in self.callees:
            try:
                self.callees[id(call)] = self._resolve(g, call)
            except _NotRead as e:
                self.callees[id(call)] = e
        found = self.callees[id(call)]
        if isinstance(found, _NotRead):
            raise found
        if found is not None and depth >= _DEPTH:
            raise _NotRead(f"{self.proj.rel(g.path)}:{call.lineno} hands the tensor to `{reach._unparse(call.func)}` "
                           f"past {_DEPTH} calls")
        return found

    def _resolve(self, g, call: ast.Call):
        where = f"{self.proj.rel(g.path)}:{call.lineno} hands the tensor to `{reach._unparse(call.func)}`"
        func = call.func
        if isinstance(func, ast.Name):
            return self._named(g, call, func.id, where)
        if not isinstance(func, ast.Attribute):
            raise _NotRead(where)
        mod = g.module_of(func.value)
        if mod is not None:
            return self._module_def(g, mod, func.attr, where)
        cls = g.instance_of(func.value) if isinstance(func.value, (ast.Name, ast.Call)) else None
        if cls is not None:
            found = self._method(g, cls, func.attr)
            return (found[0], found[1], True) if found is not None else None  # (a library base's: keeps nothing)
        defs = self._methods_named(func.attr)
        if len(defs) == 1:
            return defs[0][0], defs[0][1], True
        if defs:
            raise _NotRead(where + f" (one of {len(defs)} methods of that name)")
        return None  # no class of the project defines it: a tensor's or a library object's method

    def _named(self, g, call: ast.Call, name: str, where: str):
        fn = g.enclosing(call, (ast.FunctionDef, ast.AsyncFunctionDef))
        while fn is not None:
            nested = next((d for d in ast.walk(fn) if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                           and d.name == name and d is not fn), None)
            if nested is not None:
                return g, nested, False
            if any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store) for n in ast.walk(fn)) \
                    or name in {a.arg for a in fn.args.args + fn.args.posonlyargs + fn.args.kwonlyargs}:
                raise _NotRead(where + " (a callable a name holds)")
            fn = g.enclosing(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
        top = next((d for d in g.tree.body if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                    and d.name == name), None)
        if top is not None and name not in g.ambiguous:
            return g, top, False
        if name in g.froms and name not in g.ambiguous:
            mod, original = g.froms[name]
            return self._module_def(g, mod, original, where, imported=True)
        if name in g.modules or hasattr(builtins, name) and not g.binds(name) and top is None:
            return None
        if top is None and self._library_or_constant(g, name, where):
            return None  # (`try: from sgl_kernel... import f as k` / `except ImportError: k = None`)
        raise _NotRead(where + " (a name the file binds otherwise)")

    def _library_or_constant(self, g, name: str, where: str) -> bool:
        """Is every module-level binding of `name` an import of a library's (or the engine kernels') function, or a
        literal (`None`): a call through it keeps nothing of the project's (round BJ: a fallback import)."""
        found = []
        for node in ast.walk(g.tree):  # (a binding in any scope of the file counts: stricter than Python)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
                return False
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                found += [self._module_def(g, node.module, a.name, where, imported=True) is None
                          for a in node.names if (a.asname or a.name) == name]
            elif isinstance(node, ast.Import):
                found += [False for a in node.names if (a.asname or a.name.split(".")[0]) == name]
            elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.NamedExpr, ast.For, ast.With)):
                targets = [x for x in ast.walk(node) if isinstance(x, ast.Name) and x.id == name
                           and not isinstance(x.ctx, ast.Load)]
                if targets:
                    found.append(isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant))
            elif isinstance(node, (ast.Global, ast.Nonlocal)) and name in node.names:
                return False
        return bool(found) and all(found)

    def _module_def(self, g, mod: str, name: str, where: str, imported: bool = False, hops: int = 0):
        """The def or class `name` of project module `mod`; None where the module is a library's."""
        if name in _ENGINE_KEEPS_NOTHING:
            return None
        path = g._find(g.path, mod)
        if path is None and not imported:
            return None
        if path is not None and _engine_kernel(self.proj.rel(path)):
            return None
        target = self.own if path == self.own.path else self.proj._file_at(path) if path is not None else None
        if target is None:
            if imported and path is None:  # `from pkg import mod`: the name may be a module of the project
                return None
            raise _NotRead(where)
        self.read.setdefault(target.path, target)
        found = next((d for d in target.tree.body if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                      and d.name == name), None)
        if found is not None and name not in target.ambiguous:
            return target, found, False
        if name in target.froms and hops < 4:
            m, original = target.froms[name]
            return self._module_def(target, m, original, where, True, hops + 1)
        if name in target.modules or target._find(target.path, (mod + "." + name).lstrip(".")) is not None:
            return None  # a submodule
        raise _NotRead(where + f" (not a def of {self.proj.rel(target.path)})")

    def _methods_named(self, name: str) -> List[tuple]:
        memo = self.proj.__dict__.setdefault("_field_alias_methods", {})
        if name not in memo:
            memo[name] = [(f, d) for f in [self.own, *self.proj.files_naming([name])] for c in f.class_defs
                          for d in c.body if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef)) and d.name == name]
        return memo[name]

    def _namespace(self, g, func: ast.AST) -> bool:
        mod = g.module_of(func)
        return mod is not None and tuple(mod.rsplit(".", 1)) in _NAMESPACES


def _is_replace(g, func: ast.AST) -> bool:
    return (g.module_of(func) or "") in ("dataclasses.replace", "copy.replace")


def _engine_kernel(rel: str) -> bool:
    """Is the project file at rel a module of the engine's kernel packages (`sglang/jit_kernel/...`, under any
    folder: `python/sglang/...`)?"""
    dotted = "." + rel[:-3].replace("/", ".") + "."
    return any(f".{p}." in dotted for p in _ENGINE_KERNEL_PACKAGES)


def _class_like(func: ast.AST) -> bool:
    """A callee spelled as a class (`DSAMetadata`, `records.Plan`): its positional slots may be the field's."""
    name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
    return name[:1].isupper()


def _bound_once(nodes) -> Set[str]:
    """The local names the scope's nodes bind exactly once (a store, a loop or `with` target, `:=`)."""
    counts: Dict[str, int] = {}
    for n in nodes:
        if isinstance(n, ast.arg):
            counts[n.arg] = counts.get(n.arg, 0) + 1
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            counts[n.id] = counts.get(n.id, 0) + 1
    return {k for k, v in counts.items() if v == 1}


def _binds(g, name: str) -> bool:
    return g.binds(name) or any(isinstance(d, (ast.FunctionDef, ast.ClassDef)) and d.name == name for d in g.tree.body)


def _union(parts) -> Roots:
    out: Roots = (set(), set())
    for locs, attrs in parts:
        out[0].update(locs)
        out[1].update(attrs)
    return out


def _fields(cls: ast.ClassDef) -> List[str]:
    """A record class's annotated field names in order (no `ClassVar`)."""
    return [n.target.id for n in cls.body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)
            and "ClassVar" not in reach._unparse(n.annotation)]


def _bound(fdef: ast.AST, call: ast.Call, skip: bool) -> List[Tuple[str, ast.AST]]:
    """(parameter, argument) pairs as Python binds the call (a `*`/`**` argument binds every parameter left)."""
    if isinstance(fdef, ast.ClassDef):
        return []
    a = fdef.args
    places = [p.arg for p in a.posonlyargs + a.args][1 if skip else 0:]
    out: List[Tuple[str, ast.AST]] = []
    for i, arg in enumerate(call.args):
        if isinstance(arg, ast.Starred):
            out += [(p, arg.value) for p in places[i:] + ([a.vararg.arg] if a.vararg else [])]
            break
        out.append((places[i], arg) if i < len(places) else (a.vararg.arg if a.vararg else "", arg))
    names = set(places) | {p.arg for p in a.kwonlyargs}
    for k in call.keywords:
        if k.arg is None:
            out += [(p, k.value) for p in sorted(names)]
        else:
            out.append((k.arg if k.arg in names else (a.kwarg.arg if a.kwarg else ""), k.value))
    return [(p, v) for p, v in out if p]


def _scopes(tree: ast.Module):
    yield tree
    for n in ast.walk(tree):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            yield n


def _own_nodes(scope: ast.AST):
    """scope's nodes, not those of a def, lambda or class inside it (their own scopes)."""
    todo = list(ast.iter_child_nodes(scope)) if not isinstance(scope, ast.Lambda) else [scope.body]
    while todo:
        n = todo.pop()
        yield n
        if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            todo.extend(ast.iter_child_nodes(n))
