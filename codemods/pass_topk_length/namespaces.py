"""Writes through a namespace the code got at run time: default-deny (docs/soundness.md `whole-project`).

A module's bindings (the kernel's, the backend's) change only through a handle on its namespace: the module
object or its dict. The rest of the analysis follows static imports; every other way to a handle (a computed
import, `sys.modules`, a function's `__globals__`, `inspect.getmodule`, `vars()`/`__dict__`, `globals()`)
makes a *handle* here, however its callee is spelled (resolved through the file's imports and aliases), and
every use of a handle that is not a proven read counts as a write to whatever it may be: handed to a call,
stored, returned, written through (`setattr`, `h[k] = v`, `.update`), looped over for its modules. A handle
is harmless only where what it may be is proven another object: a module whose name's literal head no
related module has (`sys.modules.get(p)` with `p` tested to start with "triton."), a receiver the caller
proves unrelated, or a write whose literal name is none of the names that matter.

The file protocol (reach._File): `modules`, `froms`, `parents`, `tree`, `module_of(expr)`.
"""
from __future__ import annotations

import ast
import re
from typing import Callable, Dict, FrozenSet, Iterable, List, NamedTuple, Optional, Set, Tuple

DICT, MODULES_DICT, MODULE = "a namespace", "a module's namespace", "a module"
OBJECTS, ALL_MODULES = "objects (modules' dicts among them)", "the table of every module"
MODULES = "modules (or pairs naming them)"  # a module table's values or items, copied or not
# A member of a module that may be related, read by a name computed at run time: it may be a submodule, and
# any write through it in its file counts; handed on, it is taken to be what a registry hands on (a class or
# a function read by a configured name), as docs/soundness.md `whole-project` states.
MEMBER = "a member of a module read by a computed name"
_DICTS = (DICT, MODULES_DICT, ALL_MODULES)
_IMPORTERS = {"importlib.import_module", "importlib.__import__", "builtins.__import__"}
_GETMODULE = {"inspect.getmodule"}
_FUNCTION_MAKERS = {"types.FunctionType", "types.LambdaType"}
# What runs a file or module the analysis does not read as the project's code (by path, or as a script).
# (the position of the path or module name it is given)
_CODE_RUNNERS = {"runpy.run_path": 0, "runpy.run_module": 0, "importlib.util.spec_from_file_location": 1,
                 "importlib.machinery.SourceFileLoader": 1, "imp.load_source": 1}
# What resolves a dotted (or `module:attr`) name to its object at run time.
_RESOLVERS = {"pkgutil.resolve_name", "pydoc.locate"}
# What hands out every object that refers to another (a module's dict among them).
_REFERRERS = {"gc.get_referrers", "gc.get_objects", "gc.get_referents"}
# Reads that take a namespace and hand nothing on (resolved names).
NAMESPACE_READERS = {"json.dumps", "json.dump", "pprint.pprint", "pprint.pformat", "copy.copy", "copy.deepcopy",
                      "inspect.getmembers", "inspect.signature", "inspect.getsource", "inspect.getfile",
                      "inspect.ismodule", "inspect.isfunction", "inspect.getdoc", "torch.is_tensor", "sys.getsizeof"}
# Calls that only read what they are handed (a handle given to one is not handed on).
_READS = {"getattr", "hasattr", "isinstance", "id", "repr", "str", "len", "dir", "callable", "type", "print",
          "dict", "list", "sorted", "set", "tuple", "iter", "any", "all", "bool", "issubclass", "format"}
_DICT_READS = {"get", "items", "keys", "values", "copy", "__contains__", "__getitem__", "__len__", "__iter__"}
_BUILTIN_WRITES = {"setattr", "delattr"}
# What a write on a module must not spell, whatever the names that matter: its class (module-level
# `__getattr__` and properties), its `__getattr__`, its search path and its import records.
_MODULE_DUNDERS = {"__class__", "__getattr__", "__dict__", "__path__", "__spec__", "__loader__"}
# The import system: who serves a module name (a finder can make any name any object).
_IMPORT_SYSTEM = {"sys.meta_path", "sys.path_hooks", "sys.path_importer_cache", "sys.path"}
_CACHES = {"functools.lru_cache", "functools.cache", "functools.cached_property"}
_TEXT_RUNNERS = {"builtins.exec", "builtins.eval", "builtins.compile"}
_IMPORTER_NAMES = {"import_module", "__import__", "resolve_name", "locate", "getmodule", "getattr"}
_IMPORT_SYSTEM_NAMES = {"meta_path", "path_hooks", "path_importer_cache", "path", "__path__",
                        "submodule_search_locations", "getattr", "__dict__", "vars"}
_COPIES = {"builtins.dict", "copy.copy", "copy.deepcopy", "collections.ChainMap", "types.MappingProxyType"}
_SEQUENCES = {"builtins.list", "builtins.tuple", "builtins.sorted", "builtins.set", "builtins.frozenset",
              "builtins.iter", "builtins.reversed", "builtins.enumerate"}
_WORDS = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_DEPTH = 6
_HEAD_DEPTH = 24  # (each name, call, f-string part is a step: a recursive construction is cut by `pending`)
_HEAD_STEPS = 20000


class Facts(NamedTuple):
    """What one file's handles are checked against: the related modules' dotted names, the attribute names
    a literal write must spell to matter, whether the file is the module itself, and whether a name computed
    from nothing known may be a related one (Project.named_by_code)."""
    modules: Set[str]
    names: Set[str]
    own: bool
    named_by_code: bool
    module_name: str  # the file's dotted name from the project's root (what `__name__` is there)
    instances: bool  # the file names the helper, its classes or the kernel, or imports the module: an instance
    # of a related class reaches it (a file that does not gets one only from a hand-off, which makes `self`
    # anything where it lands: docs/soundness.md `whole-project`)
    test_code: bool = False  # the file is of a test suite (reach.is_test_code), read because code imports it
    shadows: bool = False  # a file of the project is named like a kernel module (`compat/sgl_kernel/flash_mla.py`)
    aliases: FrozenSet[str] = frozenset()  # other dotted names of a related module (reach.module_aliases)


class Handles:
    """The handles of one file and the writes through them. `related(receiver)`: may an object this file
    reads (the receiver of `__dict__`/`vars`) be a related class, the module or the kernel's module;
    `modules`: the related modules' dotted names (the kernel's modules, this module, and their packages);
    `names`: the attribute names a literal write must spell to matter; `own`: this file is the module."""

    def __init__(self, f, related: Callable[..., bool], facts: "Facts", elsewhere: Callable[[str], bool]):
        self.f, self.related, self.own = f, related, facts.own
        self.modules, self.names, self._project_names_code = facts.modules, facts.names, facts.named_by_code
        self.instances, self.test_code, self.shadows = facts.instances, facts.test_code, facts.shadows
        self.alias_modules = facts.aliases
        self.returned: Set[int] = set()  # handles returned by a function whose every call is followed instead
        self.heads = Heads(f, elsewhere, facts.module_name)
        self.aliases: Dict[Tuple[int, str], str] = {}  # (scope, local name) -> the kind of handle it holds
        self.parts = {p for m in self.modules for p in m.split(".")}  # an attribute that may be a related module
        self._file_names_code: Optional[bool] = None
        self._spells: Optional[bool] = None  # _spells_related, worked out when first asked
        self._augmented: List[ast.AugAssign] = []

    def writes(self) -> List[Tuple[int, str]]:
        """(line, what) of every write through a related handle, and of every other way this file changes what
        the kernel's name means (_direct_writes). One walk finds both; the locals bound to handles (and loop
        variables over their values) and what is read off them are then followed to a fixed point."""
        out, found = self._walk()
        for node, kind in self._follow(found):
            why = self.misuse(node, kind)
            if why:
                out.append((node, f"{why} (`{_text(node)[:60]}` is {kind} got at run time)"))
        out += self._augmented_writes()
        return [(getattr(node, "lineno", 0), why) for node, why in out if self._may_run(node)]

    def _walk(self) -> Tuple[List[Tuple[ast.AST, str]], List[Tuple[ast.AST, str]]]:
        """(the direct writes, the handles the file makes), from one walk of the file."""
        out, found = [], []
        for node in ast.walk(self.f.tree):
            why = self._direct_write(node)
            if why:
                out.append((node, why))
            elif not isinstance(node, ast.Name):
                if isinstance(node, ast.AugAssign):
                    self._augmented.append(node)
                kind = self.kind(node)
                if kind is not None:
                    found.append((node, kind))
        return out, found

    def _direct_write(self, node: ast.AST) -> Optional[str]:
        """What node does that may change the kernel without a handle: a function made from a code object, a
        builtin replaced, a code runner, code held in a string or read from a file, the module table patched by
        mock, an importer taken as a value, the import system changed."""
        if isinstance(node, ast.Call):
            q = self.qualified(node.func)  # (resolved whatever it is spelled: `from types import FunctionType as F`)
            if q in _FUNCTION_MAKERS and self._reuses_code(node):
                return f"`{_text(node.func)}(...)` makes a function that runs existing code with other globals"
            if q in _CODE_RUNNERS and self._runs_project_code(node, _CODE_RUNNERS[q]):
                return f"`{_text(node.func)}(...)` runs code the analysis does not read"
            if q in ("unittest.mock.patch.dict", "mock.patch.dict") and self._patches_module_table(node):
                return f"`{_text(node)[:60]}` puts other objects in the table of every module"
            if q in _TEXT_RUNNERS and self._runs_kernel_string(node):
                return (f"`{_text(node.func)}(...)` runs code held in a string that names the kernel or its module: "
                        "code the analysis does not read")
            if q in _TEXT_RUNNERS and self._runs_file_text(node):
                return f"`{_text(node.func)}(...)` runs the text of a file the code names: code the analysis does not read"
        if isinstance(node, (ast.Attribute, ast.Call)) and self._writes_builtins(node) \
                or isinstance(node, (ast.Subscript, ast.Call)) and self._builtins_namespace_written(node):
            return f"`{_text(node)[:60]}` replaces a builtin (`__import__` serves every import)"
        imported = isinstance(node, ast.Name) and node.id in self.f.froms  # (`from sys import meta_path as mp`)
        if isinstance(node, (ast.Attribute, ast.Name, ast.Call)) and (_last_name(node) in _IMPORTER_NAMES or imported) \
                and self._importer_taken(node):
            return f"`{_text(node)[:60]}` takes an importer as a value: the modules it is called for are not followed"
        if isinstance(node, (ast.Name, ast.Attribute, ast.Call, ast.Subscript)) \
                and (_last_name(node) in _IMPORT_SYSTEM_NAMES or imported) and self._import_system_written(node):
            return f"`{_text(node)[:60]}` is changed: the import system may serve a module the code names as another object"
        return None

    def _follow(self, found: List[Tuple[ast.AST, str]]) -> List[Tuple[ast.AST, str]]:
        """Every handle the file's handles lead to: what is read off them, the calls a returned one reaches, and
        the locals (and loop variables) bound to them, each local's reads being handles in turn."""
        seen = {id(n) for n, _ in found}
        todo = list(found)
        while todo:
            node, kind = todo.pop()
            more = [self._derived(node, kind)] + [(c, kind) for c in self._returned_to(node)]
            for key, bound in self._bound_from(node, kind):
                if key not in self.aliases:
                    self.aliases[key] = bound
                    more += [(read, bound) for read in self._reads(key)]
            for d in more:
                if d is not None and id(d[0]) not in seen:
                    seen.add(id(d[0]))
                    found.append(d)
                    todo.append(d)
        return found

    def _returned_to(self, node: ast.AST) -> List[ast.AST]:
        """The calls a returned handle reaches: `return h` in a module-level function of this file that no other
        file spells, undecorated but for a cache (`@lru_cache`), whose every use here is a direct call: those
        calls are the handle (the getter of a kernel module whose callers only read it); else none."""
        up = self.f.parents.get(id(node))
        if not (isinstance(up, ast.Return) and up.value is node):
            return []
        fn = self.f.parents.get(id(up))
        while fn is not None and not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            fn = self.f.parents.get(id(fn))
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or fn not in self.f.tree.body \
                or self.heads.elsewhere(fn.name) or any(self.qualified(d.func if isinstance(d, ast.Call) else d)
                                                        not in _CACHES for d in fn.decorator_list):
            return []
        calls = []
        for n in ast.walk(self.f.tree):
            if isinstance(n, ast.Name) and n.id == fn.name and not isinstance(n.ctx, ast.Store):
                call = self.f.parents.get(id(n))
                if not (isinstance(call, ast.Call) and call.func is n):
                    return []
                calls.append(call)
            elif isinstance(n, ast.Constant) and isinstance(n.value, str) and fn.name in n.value:
                return []  # (named in a string: it may be called by a name computed from it)
        self.returned.add(id(node))
        return calls

    def _augmented_writes(self) -> List[Tuple[ast.AST, str]]:
        """`h |= {...}` (an in-place update: `sys.modules |= ...`, `ns |= ...` of a namespace alias) writes
        through whatever its target holds; its target is in store position, where no handle is read."""
        out = []
        for node in self._augmented:
            target = node.target
            if isinstance(target, ast.Name):
                kind = self.aliases.get((id(_scope(self.f, target)), target.id)) or self._global_alias(target)
            elif isinstance(target, (ast.Attribute, ast.Subscript)):
                load = target.__class__(**{**{k: getattr(target, k) for k in target._fields}, "ctx": ast.Load()})
                self.f.parents[id(load)] = node
                try:
                    kind = self.kind(load)
                finally:
                    del self.f.parents[id(load)]
            else:
                kind = None
            if kind is not None and kind != MEMBER:
                out.append((node, f"an augmented assignment writes through it (`{_text(target)[:60]}` is {kind} "
                                  "got at run time)"))
        return out

    def _global_alias(self, name: ast.Name) -> Optional[str]:
        """The kind a module-level alias holds, for a name a function reads without binding it."""
        return self.aliases.get((id(self.f.tree), name.id)) if _reads_global(self.f, name) else None

    def _may_run(self, node: ast.AST) -> bool:
        """May the code at node run when serving: in a test suite's helper module, not inside a function (or
        method) that nothing of the project outside the tests names (in code or in a string) but its own
        `def`, undecorated and not a dunder (sglang's stub of sgl_kernel for CPU-only test machines)."""
        if not self.test_code:
            return True
        outer = None
        up = self.f.parents.get(id(node))
        while up is not None:
            if isinstance(up, (ast.FunctionDef, ast.AsyncFunctionDef)):
                outer = up
            up = self.f.parents.get(id(up))
        if outer is None or outer.decorator_list or outer.name.startswith("__"):
            return True
        spelled = sum(1 for n in ast.walk(self.f.tree) if isinstance(n, ast.Name) and n.id == outer.name
                      or isinstance(n, ast.Attribute) and n.attr == outer.name
                      or isinstance(n, ast.Constant) and isinstance(n.value, str) and outer.name in n.value
                      or isinstance(n, ast.alias) and outer.name in (n.name, n.asname))
        return spelled > 0 or self.heads.elsewhere(outer.name)

    def _bound_from(self, node: ast.AST, kind: str) -> List[Tuple[Tuple[int, str], str]]:
        """The locals a handle is bound to, with what they hold: `x = h` (the same), a loop variable over
        `h.values()` / `h.items()` (a module), over objects (a namespace: each may be a module's dict)."""
        up = self.f.parents.get(id(node))
        if isinstance(up, (ast.Assign, ast.AnnAssign)) and up.value is node:
            return [((id(_scope(self.f, t)), t.id), kind) for t in _targets(up) if isinstance(t, ast.Name)]
        if isinstance(up, (ast.For, ast.comprehension)) and up.iter is node and kind in (OBJECTS, MODULES):
            bound = MODULES_DICT if kind == OBJECTS else MODULES  # (each name of the target: a module, or a pair)
            target = up.target
            if kind == MODULES and isinstance(target, ast.Tuple) and len(target.elts) == 2:
                target = target.elts[1]  # `for name, mod in ...items()`: a module cannot be unpacked, so pairs
            return [((id(_scope(self.f, n)), n.id), bound) for n in ast.walk(target) if isinstance(n, ast.Name)]
        if kind == ALL_MODULES and not self.named_by_code:
            return []  # every module: the kernel's only by a name, and no name of the code can be its
        if kind not in (MODULES_DICT, ALL_MODULES) or not (isinstance(up, ast.Attribute) and up.attr in ("values", "items")):
            return []  # (a loop over a namespace itself binds its keys: strings; an object's holds no module)
        call, inner = self.f.parents.get(id(up)), up
        loop = self.f.parents.get(id(call)) if isinstance(call, ast.Call) and call.func is up else None
        while isinstance(loop, ast.Call) and isinstance(loop.func, ast.Name) and loop.func.id in ("list", "tuple", "sorted"):
            loop = self.f.parents.get(id(loop))
        if not isinstance(loop, (ast.For, ast.comprehension)):
            return []
        target = loop.target
        if inner.attr == "items":  # `for name, value in h.items()`: the values
            target = target.elts[1] if isinstance(target, ast.Tuple) and len(target.elts) == 2 else target
        return [((id(_scope(self.f, n)), n.id), MODULE) for n in ast.walk(target) if isinstance(n, ast.Name)]

    def _derived(self, node: ast.AST, kind: str) -> Optional[Tuple[ast.AST, str]]:
        """(the expression, its kind) where node's parent reads a handle out of it: an attribute or `getattr`
        of a module that may be a related submodule (`h.flash_mla`, `getattr(h, name)`), a copy of a
        namespace (`h.copy()`, `dict(h)`, `{**h}`), a module table's values or items, a sequence of those
        (`list(...)`, `[*...]`), an element of one."""
        up = self.f.parents.get(id(node))
        if isinstance(up, ast.Attribute) and up.value is node and isinstance(up.ctx, ast.Load):
            return self._read_off(up, kind)
        if isinstance(up, ast.Subscript) and up.value is node and isinstance(up.ctx, ast.Load):
            return self._element(up, kind)
        if isinstance(up, ast.Call) and up.args and up.args[0] is node:
            return self._handed_to_reader(up, kind)
        if isinstance(up, ast.Starred) and kind == MODULES and isinstance(self.f.parents.get(id(up)), (ast.List, ast.Tuple, ast.Set)):
            return self.f.parents[id(up)], MODULES
        if isinstance(up, ast.Dict) and kind in _DICTS and any(k is None and v is node for k, v in zip(up.keys, up.values)):
            return up, kind
        return None

    def _read_off(self, up: ast.Attribute, kind: str) -> Optional[Tuple[ast.AST, str]]:
        """`h.<attr>` or `h.<method>(...)` of a handle: a submodule, a namespace, a copy, values or items."""
        call = self.f.parents.get(id(up))
        if not (isinstance(call, ast.Call) and call.func is up):
            if kind in (MODULE, MEMBER) and up.attr in self.parts:
                return up, kind
            return (up, MODULES_DICT) if kind in (MODULE, MEMBER) and up.attr == "__dict__" else None
        method = up.attr
        if kind in _DICTS and method == "copy" or kind == MODULES and method in ("copy", "pop", "__getitem__"):
            return call, kind
        if method in ("values", "items") and (kind == MODULES_DICT or kind == ALL_MODULES and self.named_by_code):
            return call, MODULES
        if method == "get" and call.args and self._names_member(kind, call.args[0]):
            return call, MODULE
        return None

    def _element(self, up: ast.Subscript, kind: str) -> Optional[Tuple[ast.AST, str]]:
        """`h[k]`: a module out of a namespace or the module table by a key that may name one; any element of
        a sequence of modules."""
        if kind == MODULES:
            return up, MODULES
        return (up, MODULE) if self._names_member(kind, up.slice) else None

    def _names_member(self, kind: str, key: ast.AST) -> bool:
        return kind == MODULES_DICT and self._may_be_submodule(key) or kind == ALL_MODULES and self.name_related(key)

    def _handed_to_reader(self, up: ast.Call, kind: str) -> Optional[Tuple[ast.AST, str]]:
        """A handle as the first argument of a call that hands part of it back: `vars(h)`, `getattr(h, n)`,
        `inspect.getmembers(h)`, an attrgetter, a copy, a sequence of modules."""
        q = self.qualified(up.func)
        if kind in (MODULE, MEMBER):
            if q == "builtins.vars":
                return up, MODULES_DICT
            if q == "builtins.getattr" and len(up.args) > 1:
                member = self._member_kind(up.args[1])
                return (up, MEMBER if kind == MEMBER else member) if member else None
        if kind == MODULE and q == "inspect.getmembers":
            return up, MODULES
        if kind == MODULE and self._attrgetter_of_parts(up.func):
            return up, MODULE
        if q in _COPIES and kind in _DICTS or q in _SEQUENCES and kind == MODULES:
            return up, kind
        return None

    def _may_be_submodule(self, name: ast.AST) -> bool:
        """May `getattr(module, name)` be a related module: a name not literal, or one a related module spells."""
        head, exact = self.heads.of(name)
        return not exact or head in self.parts

    def _member_kind(self, name: ast.AST) -> Optional[str]:
        """What `getattr(module, name)` of a module that may be related is: the submodule a literal part names
        (MODULE), a member by a name computed at run time (MEMBER), nothing for any other literal."""
        head, exact = self.heads.of(name)
        return (MODULE if head in self.parts else None) if exact else MEMBER

    def _runs_file_text(self, call: ast.Call) -> bool:
        """`exec`/`eval`/`compile` of a file's text read at run time (`open(p).read()`, `Path(p).read_text()`,
        a local bound to one), whose path the code names (a literal head, or built from `__file__`): a code
        runner, as `runpy.run_path` is, of code not among the project's Python files."""
        q = self.qualified(call.func)
        if q not in ("builtins.exec", "builtins.eval", "builtins.compile") or not call.args:
            return False
        source = call.args[0]
        values = [source] + (_bound_values(self.f, source) if isinstance(source, ast.Name) else [])
        for v in values:
            if isinstance(v, ast.Call) and self._runs_file_text(v):
                return True
            read = v.func if isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute) else None
            if read is None or read.attr not in ("read", "read_text", "read_bytes"):
                continue
            for path in self._paths_read(read.value):
                if any(isinstance(n, ast.Name) and n.id == "__file__" for n in ast.walk(path)) \
                        or any(isinstance(n, ast.Name) and n.id == "__file__" for b in (
                            _bound_values(self.f, path) if isinstance(path, ast.Name) else []) if isinstance(b, ast.AST)
                               for n in ast.walk(b)) or self.heads.of(path)[0]:
                    return True
        return False

    def _patches_module_table(self, call: ast.Call) -> bool:
        """`mock.patch.dict("sys.modules", {...})` (however mock is imported) with a key that may be a related
        module's name, or values not spelled out."""
        q = self.qualified(call.func)
        if q not in ("unittest.mock.patch.dict", "mock.patch.dict") or not call.args:
            return False
        target = call.args[0]
        if not (isinstance(target, ast.Constant) and target.value == "sys.modules" or self.qualified(target) == "sys.modules"):
            return False
        given = call.args[1] if len(call.args) > 1 else None
        if given is not None and not isinstance(given, ast.Dict) or any(k is None for k in getattr(given, "keys", [])):
            return True
        return any(self.name_related(k) for k in getattr(given, "keys", [])) or any(
            k.arg is None or self.name_related(ast.Constant(k.arg)) for k in call.keywords if k.arg != "clear")

    def _runs_kernel_string(self, call: ast.Call) -> bool:
        """`exec`/`eval`/`compile` of a string (a literal, a local or global bound to one) whose code spells
        the kernel's names or its module's: code a fork keeps in a string is code of the project."""
        if self.qualified(call.func) not in ("builtins.exec", "builtins.eval", "builtins.compile") or not call.args:
            return False
        source = call.args[0]
        values = [source] + ([v for v in _bound_values(self.f, source) if isinstance(v, ast.AST)]
                             if isinstance(source, ast.Name) else [])
        values += _module_assignments(self.f).get(source.id) or [] if isinstance(source, ast.Name) else []
        values += call.args[1:] + [k.value for k in call.keywords]  # (the globals it runs under name things too)
        return any(isinstance(n, ast.Constant) and isinstance(n.value, str) and not self.names.isdisjoint(_WORDS.findall(n.value))
                   for v in values for n in ast.walk(v))

    def _paths_read(self, reader: ast.AST) -> List[ast.AST]:
        """The path a file object or `Path` was made from: `open(p)`, `Path(p)`, a `with open(p) as f` name."""
        if isinstance(reader, ast.Call) and reader.args:
            return [reader.args[0]]
        if not isinstance(reader, ast.Name):
            return []
        out = []
        for n in ast.walk(_scope(self.f, reader)):
            if isinstance(n, ast.withitem) and isinstance(n.optional_vars, ast.Name) and n.optional_vars.id == reader.id \
                    and isinstance(n.context_expr, ast.Call) and n.context_expr.args:
                out.append(n.context_expr.args[0])
        for v in _bound_values(self.f, reader):
            if isinstance(v, ast.Call) and v.args:
                out.append(v.args[0])
        return out

    def _importer_taken(self, node: ast.AST) -> bool:
        """An importer (`import_module`, `__import__`, a resolver) taken as a value where a name from nothing
        known may be related: an alias in a function, a dict of loaders, `functools.partial(import_module)`,
        `getattr(importlib, "import_module")`: the calls made through it are not followed."""
        if not self.named_by_code:
            return False
        up = self.f.parents.get(id(node))
        if isinstance(node, ast.Call):
            q = self.qualified(node.func)
            if q != "builtins.getattr" or len(node.args) < 2 or self.qualified(node.args[0]) not in (
                    "importlib", "builtins", "pkgutil", "pydoc", "inspect"):
                return False
            head, exact = self.heads.of(node.args[1])
            return not exact or head in ("import_module", "__import__", "resolve_name", "locate", "getmodule")
        if isinstance(up, ast.Attribute) and up.value is node or isinstance(up, ast.Call) and up.func is node:
            return False
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load) or _annotation_or_type_test(self.f, node):
            return False
        if isinstance(up, ast.Assign) and self.f.parents.get(id(up)) is self.f.tree and all(
                isinstance(t, ast.Name) for t in up.targets):
            return False  # (a module-level alias: qualified() resolves its calls)
        q = self.qualified(node)
        return q in _IMPORTERS or q.endswith(".import_module") or q in _RESOLVERS or q in _GETMODULE

    def _import_system_written(self, node: ast.AST) -> bool:
        """Is the import system changed here: `sys.meta_path` / `sys.path_hooks` added to, replaced or handed
        on in a file that names a related module (a finder serves the names its file spells: a triton stub's
        finder serves "triton."), `sys.path` where the project holds a file named like a kernel module (a
        `compat/sgl_kernel/` put first), or a related package's search path (`__path__`, a spec's
        `submodule_search_locations`) changed? However it is spelled (`from sys import meta_path`,
        `getattr(sys, "meta_path")`, `sys.__dict__["meta_path"]`); only a proven read leaves it alone."""
        what = self._import_system_of(node)
        if what is None:
            return False
        if what in ("sys.meta_path", "sys.path_hooks", "sys.path_importer_cache") and not (
                self._spells_related() or self.shadows) or what == "sys.path" and not self.shadows:
            return False
        if not isinstance(getattr(node, "ctx", ast.Load()), ast.Load):
            return True
        up = self.f.parents.get(id(node))
        if isinstance(up, ast.Attribute) and up.value is node:
            return up.attr not in ("index", "count", "copy", "__contains__", "__len__", "__iter__")
        if isinstance(up, ast.Call) and node in up.args:
            return self.qualified(up.func) not in {f"builtins.{r}" for r in _READS}
        if isinstance(up, (ast.Assign, ast.AnnAssign)) and up.value is node and all(isinstance(t, ast.Name) for t in _targets(up)):
            return any(self._alias_written(t) for t in _targets(up))
        if isinstance(up, ast.BoolOp):  # `spec.submodule_search_locations or []`: what the `or` is used for
            outer = self.f.parents.get(id(up))
            return not (isinstance(outer, ast.Call) and up in outer.args
                        and self.qualified(outer.func) in {f"builtins.{r}" for r in _READS})
        return not isinstance(up, (ast.Compare, ast.Expr, ast.For, ast.comprehension, ast.Subscript))

    def _alias_written(self, name: ast.Name) -> bool:
        """Is a local bound to an import-system object used as anything but a read?"""
        for read in self._reads((id(_scope(self.f, name)), name.id)):
            up = self.f.parents.get(id(read))
            if isinstance(up, ast.Attribute) and up.value is read and up.attr in ("index", "count", "copy"):
                continue
            if isinstance(up, (ast.Compare, ast.For, ast.comprehension)) or isinstance(up, ast.Call) and read in up.args \
                    and self.qualified(up.func) in {f"builtins.{r}" for r in _READS}:
                continue
            return True
        return False

    def _import_system_of(self, node: ast.AST) -> Optional[str]:
        """Which part of the import system node is: "sys.meta_path" and the like, "search path" (a related
        package's `__path__`, a spec's `submodule_search_locations`), or None."""
        if isinstance(node, (ast.Name, ast.Attribute, ast.Call)):
            q = self.qualified(node)
            if q in _IMPORT_SYSTEM:
                return q
        if isinstance(node, ast.Subscript) and self._sys_namespace(node.value):
            head, exact = self.heads.of(node.slice)
            return f"sys.{head}" if exact and f"sys.{head}" in _IMPORT_SYSTEM else None
        if isinstance(node, ast.Attribute) and node.attr == "__path__" and (
                self.f.module_of(node.value) in self.modules or self.kind(node.value) in (MODULE, MEMBER)):
            return "search path"
        if isinstance(node, ast.Name) and node.id == "__path__" and self._related_package():
            return "search path"  # (a package's own `__path__.insert(0, build_dir)`: round AE's e3)
        if isinstance(node, ast.Attribute) and node.attr == "submodule_search_locations" and self._spec_related(node.value):
            return "search path"
        return None

    def _related_package(self) -> bool:
        """Is this file a package's `__init__` holding a related module (its `__path__` finds them)?"""
        name = self.heads.module_name
        return self.f.path.endswith("__init__.py") and bool(name) and any(
            m == name or m.startswith(name + ".") for m in self.modules)

    def _spec_related(self, owner: ast.AST) -> bool:
        """May a module spec be a related package's: `find_spec(name)` by its name, `m.__spec__` by its module,
        a local bound to one; any other spec where a name from nothing known may be related."""
        values = [owner] + ([v for v in _bound_values(self.f, owner) if isinstance(v, ast.AST)]
                            if isinstance(owner, ast.Name) else [])
        for v in values:
            if isinstance(v, ast.Call) and self.qualified(v.func).endswith("find_spec"):
                if self.name_related(v.args[0] if v.args else None):
                    return True
            elif isinstance(v, ast.Attribute) and v.attr == "__spec__":
                if self.f.module_of(v.value) in self.modules or self.kind(v.value) in (MODULE, MEMBER):
                    return True
            elif v is not owner or not isinstance(v, ast.Name):
                return self.named_by_code
        return False

    @property
    def named_by_code(self) -> bool:
        """May a name computed from nothing known be a related one: the project's strings name the kernel
        (Project.named_by_code), or this file's own strings spell the kernel's names (`name.startswith(
        "sgl_kernel.")`, a pattern, a default list), whatever the rest of the project spells."""
        if self._project_names_code:
            return True
        if self._file_names_code is None:
            self._file_names_code = self._strings_name(self.names)
        return self._file_names_code

    def _strings_name(self, words: Set[str]) -> bool:
        """Does a string of this file (not a docstring) hold one of words as an identifier?"""
        return any(isinstance(n, ast.Constant) and isinstance(n.value, str) and not isinstance(self.f.parents.get(id(n)), ast.Expr)
                   and not words.isdisjoint(_WORDS.findall(n.value)) for n in ast.walk(self.f.tree))

    def _spells_related(self) -> bool:
        """Does a string of this file (not a docstring) spell a related module's part as a dotted word, or
        does the file import a related module?"""
        if self._spells is None:  # (on the handles, not the file: another kernel's facts make other parts)
            self._spells = self._strings_name(self.parts) or any(
                m in self.modules for m in [*self.f.modules.values(), *(m for m, _ in self.f.froms.values())])
        return self._spells

    def _reads(self, key: Tuple[int, str]) -> List[ast.Name]:
        """The loads of a local in its scope (one index per file, built when first asked)."""
        index = self.f.__dict__.get("_name_loads")
        if index is None:
            index = {}
            for node in ast.walk(self.f.tree):
                if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                    index.setdefault((id(_scope(self.f, node)), node.id), []).append(node)
                    index.setdefault(("any", node.id), []).append(node)
            self.f.__dict__["_name_loads"] = index
        if key[0] != id(self.f.tree):
            return index.get(key, [])
        # (a module-level alias is read too in the functions that read it as a global, without binding it)
        return index.get(key, []) + [n for n in index.get(("any", key[1]), [])
                                     if _scope(self.f, n) is not self.f.tree and _reads_global(self.f, n)]

    # -- what a node is -------------------------------------------------------------------------
    def qualified(self, expr: ast.AST) -> str:
        return qualified(self.f, expr)

    def kind(self, node: ast.AST) -> Optional[str]:
        """The kind of related namespace node evaluates to (got at run time), else None."""
        if isinstance(node, ast.Name):
            return self.aliases.get((id(_scope(self.f, node)), node.id)) if isinstance(node.ctx, ast.Load) else None
        if isinstance(node, ast.Call):
            q = self.qualified(node.func)
            return self._import_kind(node, q) or self._reader_kind(node, q) or self._table_kind(node, q)
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
            if self.alias_modules and self.f.module_of(node) in self.alias_modules:
                return MODULE  # `ops.sparse_attn`: the kernel's module by a name a project module gave it
            return self._attribute_kind(node.value, node.attr, node)
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and self.qualified(node.value) == "sys.modules":
            return MODULE if self.name_related(node.slice) else None
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and self._sys_namespace(node.value):
            head, exact = self.heads.of(node.slice)  # `sys.__dict__["modules"]`, `vars(sys)["modules"]`
            return ALL_MODULES if not exact or head == "modules" else None
        return None

    def _import_kind(self, node: ast.Call, q: str) -> Optional[str]:
        """A module got by a name: a computed import, `sys.modules.get`, a resolver, an entry point's `.load()`,
        `inspect.getmodule(x)`."""
        if q in _IMPORTERS or q.endswith(".import_module") or isinstance(node.func, ast.Attribute) \
                and node.func.attr in ("import_module", "__import__"):  # (`loader.import_module`, whatever loader is)
            return MODULE if self._import_related(node, q) else None
        first = node.args[0] if node.args else None
        if q in _GETMODULE:
            return MODULE if first is None or self.related(first, self.named_by_code) else None
        if q == "sys.modules.get":
            return MODULE if self.name_related(first) else None
        if q in _RESOLVERS:
            return MODULE if self.object_related(first) else None
        if isinstance(node.func, ast.Attribute) and node.func.attr == "load" and not node.args \
                and self.f.modules.get(_root(node.func.value) or "") is None and self._reads_entry_points():
            return MODULE if self._entry_point_related(node.func.value) else None
        return None

    def _reader_kind(self, node: ast.Call, q: str) -> Optional[str]:
        """What a reader hands back of a related module this file imports: `getattr(sgl_kernel, sub)`,
        `inspect.getmembers(...)`, an attrgetter; `getattr(f, "__globals__")` as `f.__globals__`."""
        static = bool(node.args) and self.f.module_of(node.args[0]) in self.modules
        if q == "builtins.getattr" and len(node.args) > 1 and static:
            return self._member_kind(node.args[1])
        if q == "inspect.getmembers" and static:
            return MODULES
        if static and isinstance(node.func, (ast.Call, ast.Name)) and self._attrgetter_of_parts(node.func):
            return MODULE
        if q == "builtins.getattr" and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) \
                and node.args[1].value in ("__globals__", "f_globals", "f_locals", "__dict__"):
            return self._attribute_kind(node.args[0], node.args[1].value)
        return None

    def _table_kind(self, node: ast.Call, q: str) -> Optional[str]:
        """A namespace by a builtin (`vars(x)`, `vars()`/`globals()` in the module itself), every object
        (`gc.get_objects()`)."""
        if q == "builtins.vars":
            if not node.args:
                return MODULES_DICT if self.own else None
            return self._namespace_of(node.args[0])
        if q == "builtins.globals":
            return MODULES_DICT if self.own else None
        return OBJECTS if q in _REFERRERS else None

    def _attribute_kind(self, owner: ast.AST, attr: str, node: Optional[ast.AST] = None) -> Optional[str]:
        """The kind of `owner.<attr>` (or `getattr(owner, "<attr>")`): a function's or a frame's globals, a
        namespace, the module table. A caller's frame (`sys._getframe(1)`, `inspect.currentframe().f_back`)
        may be any module's, the backend's among them: its globals (and a module-level frame's locals) are."""
        if attr in ("__globals__", "f_globals", "f_locals"):
            if _frame_of_caller(self.f, owner):
                return MODULES_DICT
            if attr == "f_locals":
                return None
            # (a function's module: a related one only by a hand-off of it, or by a name)
            return MODULES_DICT if self.related(owner, self.named_by_code) or self.kind(owner) else None
        if attr == "__dict__":
            return self._namespace_of(owner)
        if attr == "modules" and node is not None and self.qualified(node) == "sys.modules":
            return ALL_MODULES
        return None

    def _sys_namespace(self, expr: ast.AST) -> bool:
        if isinstance(expr, ast.Attribute) and expr.attr == "__dict__":
            return self.qualified(expr.value) == "sys"
        return isinstance(expr, ast.Call) and self.qualified(expr.func) == "builtins.vars" and len(expr.args) == 1 \
            and self.qualified(expr.args[0]) == "sys"

    def _attrgetter_of_parts(self, call: ast.AST) -> bool:
        """`operator.attrgetter(names)`, where a name may be (or begin with) a related module's part (also
        through a module-level name bound only to one: `_get = attrgetter("x")`)."""
        if isinstance(call, ast.Name):
            bound = _module_assignments(self.f).get(call.id) or []
            return len(bound) == 1 and isinstance(bound[0], ast.Call) and self._attrgetter_of_parts(bound[0])
        return isinstance(call, ast.Call) and self.qualified(call.func) == "operator.attrgetter" and any(
            self._may_be_submodule(a) or self.heads.of(a)[0].split(".")[0] in self.parts for a in call.args)

    def _namespace_of(self, owner: ast.AST) -> Optional[str]:
        """The kind of `vars(owner)` / `owner.__dict__`: a module's namespace where owner is a module (a
        handle, or one this file imports), an object's where it may be a related one, else None."""
        if self.kind(owner) in (MODULE, MEMBER) or self.f.module_of(owner) is not None and (
                self.related(owner) or self.f.module_of(owner) in self.modules):
            return MODULES_DICT
        return DICT if self.instances and self.related(owner) else None

    def _import_related(self, call: ast.Call, q: str) -> bool:
        """May the module a computed import returns be related: `import_module(name, package)` by the name, or
        where the name is relative (its head begins with ".") by the package it is relative to; `__import__`
        with a level other than 0 relative to a package not known here."""
        name = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "name"), None)
        if q in ("importlib.__import__", "builtins.__import__"):
            level = call.args[4] if len(call.args) > 4 else next((k.value for k in call.keywords if k.arg == "level"), None)
            relative = level is not None and not (isinstance(level, ast.Constant) and level.value == 0)
            return self.named_by_code if relative else self.name_related(name)
        head, exact = self.heads.of(name)
        if head and not head.startswith("."):
            return self.name_related(name)
        package = call.args[1] if len(call.args) > 1 else next((k.value for k in call.keywords if k.arg == "package"), None)
        base, base_exact = self.heads.of(package)
        dots = len(head) - len(head.lstrip("."))
        if not head or not base or dots > 1 and not base_exact:
            return self.named_by_code if not (head and base) else True
        if dots > 1:
            base = ".".join(base.split(".")[:max(0, base.count(".") + 1 - (dots - 1))])
        full = f"{base}.{head[dots:]}" if base_exact else base
        if exact and base_exact:
            return full in self.modules
        return any(m.startswith(full) for m in self.modules)

    def name_related(self, expr: Optional[ast.AST]) -> bool:
        """May the module named by expr be a related one? Only a literal head that no related module's
        name begins with proves it is not; a name read off an object (`f.__module__`) is related where the
        object may be (objects reach code by hand-offs, not by data)."""
        owner = self._module_attribute_of(expr)
        if owner is not None:
            return self.related(owner)
        head, exact = self.heads.of(expr)
        if exact:
            return head in self.modules
        return any(m.startswith(head) for m in self.modules) if head else self.named_by_code

    def object_related(self, expr: Optional[ast.AST]) -> bool:
        """May `module`, `module.attr` or `module:attr`, named by expr, be or be in a related module?"""
        owner = self._module_attribute_of(expr)
        if owner is not None:
            return self.related(owner)
        head, exact = self.heads.of(expr)
        if not head:
            return self.named_by_code
        if not exact:
            return any(m.startswith(head.split(":")[0]) for m in self.modules)
        module = head.split(":")[0]
        return module in self.modules or module.rpartition(".")[0] in self.modules

    def _writes_builtins(self, node: ast.AST) -> bool:
        """`builtins.__import__ = hook`, `setattr(builtins, "__import__", hook)` (what every module's import, a
        lazy `from sgl_kernel.flash_mla import ...` among them, calls), or a builtin of a name that matters."""
        matter = self.names | {"__import__"}
        if isinstance(node, ast.Attribute):
            return isinstance(node.ctx, (ast.Store, ast.Del)) and node.attr in matter \
                and self.qualified(node.value) in ("builtins", "__builtins__")
        return self.qualified(node.func) in ("builtins.setattr", "builtins.delattr") and bool(node.args) \
            and self.qualified(node.args[0]) in ("builtins", "__builtins__") and (
                len(node.args) < 2 or not self._literal_not_named(node.args[1], MODULE) or node.args[1].value == "__import__")

    def _builtins_namespace(self, expr: ast.AST) -> bool:
        """Is expr the builtins' namespace: `builtins.__dict__`, `vars(builtins)`, `__builtins__` (a dict where
        the module is not `__main__`), a frame's `f_builtins`?"""
        if isinstance(expr, ast.Attribute) and expr.attr == "f_builtins":
            return True
        if isinstance(expr, ast.Attribute) and expr.attr == "__dict__":
            return self.qualified(expr.value) in ("builtins", "__builtins__")
        if isinstance(expr, ast.Call) and self.qualified(expr.func) == "builtins.vars" and len(expr.args) == 1:
            return self.qualified(expr.args[0]) in ("builtins", "__builtins__")
        return isinstance(expr, ast.Name) and expr.id == "__builtins__"

    def _builtins_namespace_written(self, node: ast.AST) -> bool:
        """`builtins.__dict__["__import__"] = hook`, `vars(builtins).update(__import__=hook)`, a frame's
        `f_builtins[...] = ...`: a builtin that matters (or one a computed key may be) written in place."""
        matter = self.names | {"__import__"}
        if isinstance(node, ast.Subscript) and not isinstance(node.ctx, ast.Load) and self._builtins_namespace(node.value):
            head, exact = self.heads.of(node.slice)
            return head in matter if exact else not head or any(n.startswith(head) for n in matter)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and self._builtins_namespace(node.func.value) \
                and node.func.attr in ("update", "setdefault", "__setitem__", "pop", "__delitem__"):
            keys = [k.arg for k in node.keywords] + [a for a in node.args[:1]]
            return any(k is None or not isinstance(k, str) and not (isinstance(k, ast.Constant) and k.value not in matter)
                       or isinstance(k, str) and k in matter for k in keys) or not keys
        return False

    def _reuses_code(self, call: ast.Call) -> bool:
        """Does a function made from a code object run an existing function's code (`f.__code__`, directly or
        through a local) under the globals it is given? Code just compiled is no function of the project's."""
        code = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "code"), None)
        values = [code] + (_bound_values(self.f, code) if isinstance(code, ast.Name) else [])
        return code is None or any(isinstance(n, ast.Attribute) and n.attr == "__code__"
                                   for v in values if isinstance(v, ast.AST) for n in ast.walk(v))

    def _runs_project_code(self, call: ast.Call, position: int) -> bool:
        """Is what the runner runs named by the project's code: a literal (or a literal head) path or module
        name, or a path built from `__file__`? One named only by data (a model's directory, a config) is code
        from outside the project, as a model's remote code is: assumed not to touch the kernel."""
        arg = call.args[position] if position < len(call.args) else next(
            (k.value for k in call.keywords if k.arg in ("path_name", "mod_name", "location", "path", "pathname")), None)
        if arg is None:
            return True
        values = [arg] + [v for v in (_bound_values(self.f, arg) if isinstance(arg, ast.Name) else [])
                          if not isinstance(v, _Part)]
        if any(isinstance(n, ast.Name) and n.id == "__file__" for v in values for n in ast.walk(v)):
            return True
        return bool(self.heads.of(arg)[0])

    def _module_attribute_of(self, expr: Optional[ast.AST]) -> Optional[ast.AST]:
        """x where expr is `x.__module__` (or a local bound only to it)."""
        values = [expr] + ([v for v in _bound_values(self.f, expr) if not isinstance(v, _Part)]
                           if isinstance(expr, ast.Name) else [])
        for v in values:
            if isinstance(v, ast.Attribute) and v.attr == "__module__":
                return v.value
        return None

    def _entry_point_related(self, point: ast.AST) -> bool:
        """May the object an entry point loads be related: one made here (`EntryPoint(name, value, group)`)
        by the value it names; one a distribution's metadata lists, where a name built from nothing known may be."""
        made = [point] if isinstance(point, ast.Call) else [
            v for v in _bound_values(self.f, point) if isinstance(v, ast.Call)] if isinstance(point, ast.Name) else []
        made = [c for c in made if self.qualified(c.func).endswith("EntryPoint")]
        if made:
            return any(self.object_related(c.args[1] if len(c.args) > 1 else next(
                (k.value for k in c.keywords if k.arg == "value"), None)) for c in made)
        return self.named_by_code

    def _reads_entry_points(self) -> bool:
        return any(q.startswith(("importlib.metadata", "importlib_metadata", "pkg_resources"))
                   for q in [*self.f.modules.values(), *(m for m, _ in self.f.froms.values())])

    # -- how a handle is used -------------------------------------------------------------------
    def misuse(self, node: ast.AST, kind: str) -> Optional[str]:
        """Why this use of a handle may write through it, or None for a proven read."""
        if self._derived(node, kind) is not None or id(node) in self.returned:
            return None  # (a read that makes a handle, or a return to calls that are handles: their uses are checked)
        if isinstance(node, ast.Name) and kind in (OBJECTS, MODULES_DICT) and _type_tested(self.f, node):
            return None  # (inside `if torch.is_tensor(obj):` an object is no namespace)
        up = self.f.parents.get(id(node))
        if kind == MEMBER:
            return self._member_use(node, up)
        if isinstance(up, ast.Attribute) and up.value is node:
            return self._attribute_use(up, kind)
        if isinstance(up, ast.Subscript) and up.value is node:
            if isinstance(up.ctx, ast.Load):
                return None
            return None if self._key_not_named(up.slice, kind) else "a write through it"
        if isinstance(up, ast.Call) and up.func is node:
            return None  # (an entry point's function called: it runs, it is not handed on)
        if isinstance(up, ast.Call) and node in up.args:
            return self._argument_use(up, node, kind)
        if isinstance(up, ast.keyword) and up.arg is None and kind in _DICTS:
            return None  # `f(**vars(args))`: the items copied into the call's keywords
        if isinstance(up, (ast.Compare, ast.Expr)) or isinstance(up, ast.UnaryOp) and isinstance(up.op, ast.Not):
            return None
        if isinstance(up, (ast.If, ast.While, ast.IfExp, ast.Assert)) and up.test is node:
            return None
        if isinstance(up, ast.BoolOp):
            return self.misuse(up, kind)
        if isinstance(up, (ast.Assign, ast.AnnAssign)) and up.value is node and all(
                isinstance(t, ast.Name) for t in _targets(up)):
            if isinstance(self.f.parents.get(id(up)), ast.ClassDef):
                return "it is stored on a class"  # (read back as `cls.<name>` / `self.<name>`: not followed)
            return None  # a local alias: its own uses are checked where it is read
        if isinstance(up, (ast.For, ast.comprehension)) and up.iter is node:
            return None  # iterating a namespace yields its keys; a loop over objects binds handles (_bound_from)
        return "it is handed on"

    def _member_use(self, node: ast.AST, up: Optional[ast.AST]) -> Optional[str]:
        """A member read by a computed name: only a write through it in this file counts (see MEMBER)."""
        if isinstance(up, ast.Attribute) and up.value is node:
            return self._attribute_use(up, MODULE)
        if isinstance(up, ast.Subscript) and up.value is node and not isinstance(up.ctx, ast.Load):
            return None if self._key_not_named(up.slice, MODULE) else "a write through it"
        if isinstance(up, ast.Call) and up.args and up.args[0] is node \
                and self.qualified(up.func) in ("builtins.setattr", "builtins.delattr"):
            return self._argument_use(up, node, MODULE)
        return None

    def _attribute_use(self, up: ast.Attribute, kind: str) -> Optional[str]:
        if isinstance(up.ctx, (ast.Store, ast.Del)):
            return None if kind == MODULE and up.attr not in self.names | _MODULE_DUNDERS else "a write through it"
        if up.attr in ("__setattr__", "__delattr__"):
            return f"its `{up.attr}` is taken"
        call = self.f.parents.get(id(up))
        method_call = isinstance(call, ast.Call) and call.func is up
        if kind in _DICTS:
            if up.attr in _DICT_READS and method_call:
                return None
            if method_call and self._keys_not_named(call, up.attr, kind):
                return None
            return f"`.{up.attr}` on it"
        if kind == OBJECTS:
            return None if method_call and up.attr in ("__len__", "index", "count") else f"`.{up.attr}` on it"
        return None  # an attribute read off a module (`.__dict__` is a handle of its own)

    def _keys_not_named(self, call: ast.Call, method: str, kind: str) -> bool:
        """A write of a namespace whose every key is proven none of the names that matter: `.setdefault(k, v)`,
        `.__setitem__(k, v)`, `.pop(k)`, `.update({k: v}, k2=v2)`; `sys.modules.pop(k)` (a module dropped is
        imported again from its file: the same objects)."""
        if method in ("pop", "__delitem__") and isinstance(call.func, ast.Attribute) \
                and self.qualified(call.func.value) == "sys.modules":
            return True
        if method in ("setdefault", "__setitem__", "pop", "__delitem__"):
            return bool(call.args) and self._key_not_named(call.args[0], kind)
        if method == "update":
            keys = [k.arg for k in call.keywords]
            for a in call.args:
                if not isinstance(a, ast.Dict):
                    return False
                keys += a.keys
            return all(k is not None and self._key_not_named(ast.Constant(k) if isinstance(k, str) else k, kind)
                       for k in keys)
        return False

    def _argument_use(self, call: ast.Call, node: ast.AST, kind: str) -> Optional[str]:
        q = self.qualified(call.func)
        base = q[len("builtins."):] if q.startswith("builtins.") else ""
        if base in _BUILTIN_WRITES and call.args[0] is node:
            name = call.args[1] if len(call.args) > 1 else None
            return None if kind == MODULE and self._literal_not_named(name, kind) else f"`{base}` on it"
        if base in _READS or q in NAMESPACE_READERS:
            return None
        if q in ("sys.modules.get",):
            return None
        return f"handed to `{_text(call.func)[:40]}`"

    def _key_not_named(self, key: Optional[ast.AST], kind: str) -> bool:
        """A key of a namespace that names nothing that matters: for the table of every module, a module
        name that may not be a related one (name_related); else an attribute name (_literal_not_named)."""
        return not self.name_related(key) if kind == ALL_MODULES else self._literal_not_named(key, kind)

    def _literal_not_named(self, key: Optional[ast.AST], kind: str) -> bool:
        """A key (an attribute's or a module's name) proven to spell none of the names that matter: a literal
        that is none of them, or a literal head none of them begins with (Heads)."""
        head, exact = self.heads.of(key)
        matter = self.names | self.modules | _MODULE_DUNDERS
        if exact:
            return head not in matter
        return bool(head) and not any(n.startswith(head) for n in matter)


def qualified(f, expr: ast.AST, depth: int = 0) -> str:
    """The dotted name expr refers to through the file's imports and module-level aliases
    (`from importlib import import_module as load` -> importlib.import_module); a name the file never binds
    as builtins.<name>; "" where it is not known."""
    if isinstance(expr, ast.Attribute):
        head = qualified(f, expr.value, depth)
        return _rerooted(f"{head}.{expr.attr}") if head else ""
    if isinstance(expr, ast.Call) and len(expr.args) == 2 and isinstance(expr.args[1], ast.Constant) \
            and isinstance(expr.args[1].value, str) and depth < _DEPTH and qualified(f, expr.func, depth + 1) == "builtins.getattr":
        head = qualified(f, expr.args[0], depth + 1)  # getattr(importlib, "import_module"): importlib.import_module
        return _rerooted(f"{head}.{expr.args[1].value}") if head else ""
    if isinstance(expr, ast.Subscript) and depth < _DEPTH:
        key = expr.slice.value if isinstance(expr.slice, ast.Constant) and isinstance(expr.slice.value, str) else None
        owner = qualified(f, expr.value, depth + 1)
        if key is not None and owner == "sys.modules":
            return key  # sys.modules["importlib"] is importlib
        if key is not None and owner.endswith(".__dict__"):
            return _rerooted(f"{owner[:-len('.__dict__')]}.{key}")  # importlib.__dict__["import_module"]
        return ""
    if isinstance(expr, ast.Call) and depth < _DEPTH and len(expr.args) == 1 and not expr.keywords \
            and isinstance(expr.args[0], ast.Constant) and isinstance(expr.args[0].value, str):
        callee = qualified(f, expr.func, depth + 1)
        if callee in ("builtins.__import__", "importlib.__import__"):
            return expr.args[0].value.split(".")[0]  # __import__("sys") is sys
        if callee == "importlib.import_module":
            return expr.args[0].value
        if callee == "builtins.vars":
            return ""
    if not isinstance(expr, ast.Name):
        return ""
    if expr.id in f.modules:
        return f.modules[expr.id]
    if expr.id in f.froms:
        mod, name = f.froms[expr.id]
        return f"{mod}.{name}" if mod and not mod.endswith(".") else f"{mod}{name}"
    values = _module_assignments(f).get(expr.id, []) if depth < _DEPTH else None
    if values:
        found = {qualified(f, v, depth + 1) for v in values}
        return found.pop() if len(found) == 1 else ""
    return f"builtins.{expr.id}" if values is not None else ""


def _rerooted(dotted: str) -> str:
    """`os.sys.modules` is `sys.modules`: a module's attribute `sys` is the sys module."""
    head, sep, tail = dotted.partition(".sys.")
    return f"sys.{tail}" if sep and not head.startswith("builtins") else dotted


# -- literal heads of module names ---------------------------------------------------------------------
class Heads:
    """(the literal text every value of an expression starts with, whether that is the whole value), in one
    file. `elsewhere(name)`: does another file of the project spell `name` (then a function or class of that
    name may be called from there, with anything)."""

    def __init__(self, f, elsewhere: Callable[[str], bool], module_name: str = ""):
        self.f, self.elsewhere = f, elsewhere
        self.module_name = module_name  # the file's dotted name from the project's root
        self.pending: Set[Tuple[str, str]] = set()  # heads being worked out (a recursive construction)
        self.memo: Dict[int, Tuple[str, bool]] = {}  # answers worked out with nothing pending
        self.steps = 0  # the file's budget: past _HEAD_STEPS every head is unknown (related)

    def of(self, expr: Optional[ast.AST], depth: int = 0) -> Tuple[str, bool]:
        """The head of expr (see _of), remembered where nothing was pending."""
        if expr is None:
            return "", False
        if isinstance(expr, ast.Constant):  # (a node made for one check must not hit another's memo by its id)
            return (expr.value, True) if isinstance(expr.value, str) else ("", False)
        key = id(expr)
        if key in self.memo:
            return self.memo[key]
        self.steps += 1
        if self.steps > _HEAD_STEPS:
            return "", False
        free = not self.pending
        found = self._of(expr, depth)
        if free:
            self.memo[key] = found
        return found

    def _of(self, expr: ast.AST, depth: int) -> Tuple[str, bool]:
        """A literal; an f-string or `+` whose first part is one; a local assigned only such values; the part
        of `x.rsplit(sep, 1)` / `x.split(sep)` / `x.partition(sep)` before its first separator; a name an
        enclosing `if` tests with `.startswith(lit)` or `== lit` (each alternative of an `or`); a parameter of
        a function only this file calls, by name, from the arguments of every call; `self.__name__` in a
        module class only this file constructs, from every construction's name. ("", False): not known."""
        if expr is None or depth > _HEAD_DEPTH:
            return "", False
        if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
            return expr.value, True
        if isinstance(expr, ast.JoinedStr) and expr.values:
            return self.of(expr.values[0], depth + 1)[0], False
        if isinstance(expr, ast.FormattedValue):
            return self.of(expr.value, depth + 1)[0], False
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
            return self.of(expr.left, depth + 1)[0], False
        if isinstance(expr, ast.Attribute) and expr.attr == "__name__" and isinstance(expr.value, ast.Name) \
                and expr.value.id == "self":
            return self._module_class_name(expr, depth)
        if not isinstance(expr, ast.Name):
            return "", False
        if expr.id == "__name__" and not _bound_values(self.f, expr):  # this file's own module
            return self.module_name, True
        tested = _tested_head(self.f, expr)
        if tested is not None:
            return tested
        param = _parameter_of(self.f, expr)
        if param is not None:
            return self._from_calls(param, depth)
        values = _bound_values(self.f, expr)
        return self._join([v.head(self, depth) if isinstance(v, _Part) else self._loop_head(v, depth)
                           if isinstance(v, ast.Name) and isinstance(v.ctx, ast.Store) else self.of(v, depth + 1)
                           for v in values])

    def _loop_head(self, target: ast.Name, depth: int) -> Tuple[str, bool]:
        """A loop variable over a literal tuple, list or set of strings, or over a module-level name bound
        only to one (`for pkg in OP_PACKAGES`): the joined heads of its elements."""
        loop = self.f.parents.get(id(target))
        if not isinstance(loop, (ast.For, ast.comprehension)) or loop.target is not target:
            return "", False
        seq = loop.iter
        if isinstance(seq, ast.Name):  # (a module-level constant no other file spells, never changed in place)
            bound = _module_assignments(self.f).get(seq.id)
            if not bound or len(bound) != 1 or self.elsewhere(seq.id) or not isinstance(bound[0], ast.Tuple) and any(
                    isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == seq.id
                    for n in ast.walk(self.f.tree)):
                return "", False
            seq = bound[0]
        if not isinstance(seq, (ast.Tuple, ast.List, ast.Set)) or not seq.elts:
            return "", False
        return self._join([self.of(e, depth + 1) for e in seq.elts])

    def _join(self, heads: List[Tuple[str, bool]]) -> Tuple[str, bool]:
        if not heads or any(not h for h, _ in heads):
            return "", False
        if all(e for _, e in heads) and len({h for h, _ in heads}) == 1:
            return heads[0]
        return _common([h for h, _ in heads]), False

    def _from_calls(self, param: Tuple[ast.AST, int, str], depth: int) -> Tuple[str, bool]:
        """A parameter's head: the common head of what every call of its module-level function passes there,
        where no other file spells the function's name and this file only calls it."""
        fn, index, name = param
        key = ("def", fn.name)
        if key in self.pending:
            return "\0", False  # (the same call path again: adds no head of its own)
        if fn not in self.f.tree.body or self.elsewhere(fn.name):
            return "", False
        self.pending.add(key)
        try:
            return self._join(self._arguments(fn.name, index, name, depth))
        finally:
            self.pending.discard(key)

    def _arguments(self, callee: str, index: int, name: str, depth: int) -> List[Tuple[str, bool]]:
        out = []
        for node in ast.walk(self.f.tree):
            if isinstance(node, ast.Name) and node.id == callee and isinstance(node.ctx, ast.Load) \
                    and not _annotation_or_type_test(self.f, node):
                call = self.f.parents.get(id(node))
                if not (isinstance(call, ast.Call) and call.func is node) or any(
                        isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
                    return [("", False)]  # taken as a value, or called with what cannot be matched up
                given = call.args[index] if index < len(call.args) else next(
                    (k.value for k in call.keywords if k.arg == name), None)
                out.append(self.of(given, depth + 1) if given is not None else ("", False))
        return [h for h in out if h[0] != "\0"] or [("", False)]

    def _module_class_name(self, expr: ast.Attribute, depth: int) -> Tuple[str, bool]:
        """`self.__name__` in a method of a class deriving from `types.ModuleType`: the name every
        construction of the class in this file passes (no other file spells the class, none assigns the
        attribute)."""
        cls = _enclosing_class(self.f, expr)
        if cls is None or not any(qualified(self.f, b) == "types.ModuleType" for b in cls.bases) \
                or self.elsewhere(cls.name) or any(isinstance(n, ast.Attribute) and n.attr == "__name__"
                                                   and isinstance(n.ctx, (ast.Store, ast.Del)) for n in ast.walk(self.f.tree)):
            return "", False
        key = ("class", cls.name)
        if key in self.pending:
            return "\0", False
        self.pending.add(key)
        try:
            return self._join(self._arguments(cls.name, 0, "name", depth))
        finally:
            self.pending.discard(key)


def _annotation_or_type_test(f, node: ast.AST) -> bool:
    """Is node inside an annotation, or the class of an isinstance/issubclass test (a read, no call)?"""
    up = f.parents.get(id(node))
    if isinstance(up, ast.Call) and isinstance(up.func, ast.Name) and up.func.id in ("isinstance", "issubclass") \
            and len(up.args) == 2 and up.args[1] is node:
        return True
    while up is not None and not isinstance(up, ast.stmt):
        if isinstance(up, ast.arg) and up.annotation is node:
            return True
        node, up = up, f.parents.get(id(up))
    return isinstance(up, (ast.FunctionDef, ast.AsyncFunctionDef)) and up.returns is node \
        or isinstance(up, ast.AnnAssign) and up.annotation is node


def _parameter_of(f, name: ast.Name) -> Optional[Tuple[ast.AST, int, str]]:
    """(the function, its position, its name) where name is a positional parameter of the function that
    reads it and is never rebound there."""
    return parameter_in(_scope(f, name), name.id)


def parameter_in(scope: Optional[ast.AST], name: str) -> Optional[Tuple[ast.AST, int, str]]:
    """(the function, its position, the name) where name is a positional parameter of the function scope,
    never rebound in it."""
    if not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    params = [a.arg for a in scope.args.posonlyargs + scope.args.args]
    if name not in params or any(isinstance(n, ast.Name) and n.id == name and not isinstance(n.ctx, ast.Load)
                                 for n in ast.walk(scope)):
        return None
    return scope, params.index(name), name


def _enclosing_class(f, node: ast.AST) -> Optional[ast.ClassDef]:
    while node is not None and not isinstance(node, ast.ClassDef):
        node = f.parents.get(id(node))
    return node


def _tested_head(f, name: ast.Name) -> Optional[Tuple[str, bool]]:
    """The head an enclosing `if` proves of name where it is read in the if's body, and nothing in the if
    binds the name again (an assignment, a loop, a comprehension's own variable) nor may a function called
    there (a module-level name some function declares `global`)."""
    node: ast.AST = name
    if isinstance(_scope(f, name), ast.Module) and any(
            isinstance(n, (ast.Global, ast.Nonlocal)) and name.id in n.names for n in ast.walk(f.tree)):
        return None
    while True:
        up = f.parents.get(id(node))
        if up is None or isinstance(up, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            return None
        if isinstance(up, ast.If) and node in up.body and not _binds(up, name.id):
            alternatives = _alternatives(up.test, name.id)
            if alternatives:
                exact = all(e for _, e in alternatives)
                heads = [h for h, _ in alternatives]
                return (heads[0], True) if exact and len(set(heads)) == 1 else (_common(heads), False)
        node = up


_NOT_NAMESPACES = {"torch.is_tensor", "torch.is_storage", "inspect.isfunction", "inspect.isclass", "inspect.ismethod",
                   "builtins.callable"}


def _type_tested(f, name: ast.Name) -> bool:
    """Is name read inside an `if` (each part of an `and`) that proves it a tensor, a function, a class, or an
    instance of a class other than a mapping or a module, with nothing in the if binding it again?"""
    node: ast.AST = name
    while True:
        up = f.parents.get(id(node))
        if up is None or isinstance(up, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            return False
        if isinstance(up, ast.If) and node in up.body and not _binds(up, name.id):
            parts = up.test.values if isinstance(up.test, ast.BoolOp) and isinstance(up.test.op, ast.And) else [up.test]
            if any(_proves_not_namespace(f, p, name.id) for p in parts):
                return True
        node = up


def _proves_not_namespace(f, test: ast.AST, name: str) -> bool:
    if not (isinstance(test, ast.Call) and test.args and isinstance(test.args[0], ast.Name) and test.args[0].id == name):
        return False
    q = qualified(f, test.func)
    if q in _NOT_NAMESPACES:
        return True
    if q != "builtins.isinstance" or len(test.args) != 2:
        return False
    kinds = test.args[1].elts if isinstance(test.args[1], ast.Tuple) else [test.args[1]]
    return all(qualified(f, k).rsplit(".", 1)[-1] in ("Tensor", "Parameter", "int", "float", "str", "bytes", "list",
                                                        "tuple", "FunctionType", "MethodType", "type") for k in kinds)


_FRAMES = {"sys._getframe", "inspect.currentframe", "inspect.stack", "inspect.getouterframes", "inspect.trace"}


def _frame_of_caller(f, expr: ast.AST) -> bool:
    """Is expr a frame of the code that called this one: `sys._getframe(n)` with n not 0, `.f_back` of a frame,
    an element of `inspect.stack()`, or a local bound to one?"""
    values = [expr] + ([v for v in _bound_values(f, expr) if isinstance(v, ast.AST)] if isinstance(expr, ast.Name) else [])
    for v in values:
        for n in ast.walk(v):
            if isinstance(n, ast.Attribute) and n.attr == "f_back":
                return True
            if isinstance(n, ast.Call) and qualified(f, n.func) in _FRAMES and not (
                    qualified(f, n.func) == "sys._getframe" and n.args and isinstance(n.args[0], ast.Constant)
                    and n.args[0].value == 0):
                return qualified(f, n.func) != "inspect.currentframe" or any(
                    isinstance(m, ast.Attribute) and m.attr == "f_back" for m in ast.walk(v))
    return False


def _binds(tree: ast.AST, name: str) -> bool:
    """Does anything under tree bind name (a store, a `del`, a def, an import, an except's name)?"""
    for n in ast.walk(tree):
        if isinstance(n, ast.Name) and n.id == name and not isinstance(n.ctx, ast.Load) \
                or isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n.name == name \
                or isinstance(n, ast.alias) and (n.asname or n.name.split(".")[0]) == name \
                or isinstance(n, ast.ExceptHandler) and n.name == name:
            return True
    return False


def _alternatives(test: ast.AST, name: str) -> Optional[List[Tuple[str, bool]]]:
    """`name.startswith("a")` / `name == "a"`, or an `or` of them: each alternative's (head, exact)."""
    parts = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or) else [test]
    out = []
    for p in parts:
        if isinstance(p, ast.Call) and isinstance(p.func, ast.Attribute) and p.func.attr == "startswith" \
                and isinstance(p.func.value, ast.Name) and p.func.value.id == name and len(p.args) == 1 \
                and isinstance(p.args[0], ast.Constant) and isinstance(p.args[0].value, str):
            out.append((p.args[0].value, False))
        elif isinstance(p, ast.Compare) and len(p.ops) == 1 and isinstance(p.ops[0], ast.Eq) \
                and isinstance(p.left, ast.Name) and p.left.id == name and isinstance(p.comparators[0], ast.Constant) \
                and isinstance(p.comparators[0].value, str):
            out.append((p.comparators[0].value, True))
        else:
            return None
    return out


class _Part:
    """The first part of a split of a string (`a, b = x.rsplit(".", 1)`): it begins as x does, up to the
    first separator x's head holds."""

    def __init__(self, source: ast.AST, sep: str):
        self.source, self.sep = source, sep

    def head(self, heads: Heads, depth: int) -> Tuple[str, bool]:
        head, _ = heads.of(self.source, depth + 1)
        cut = head.find(self.sep) if self.sep else -1
        return (head[:cut] if cut >= 0 else head), False


def _bound_values(f, name: ast.Name) -> List[ast.AST]:
    """What a local name may hold where it is read: its assignments' values, the first part of a split it
    is unpacked from (_Part), and anything else binding it (a loop, `with`, an unpacking) as itself: unknown."""
    values: List[ast.AST] = []
    for node in ast.walk(_scope(f, name)):
        if not (isinstance(node, ast.Name) and node.id == name.id and isinstance(node.ctx, ast.Store)):
            continue
        up = f.parents.get(id(node))
        if isinstance(up, (ast.Assign, ast.AnnAssign)) and up.value is not None and node in _targets(up):
            values.append(up.value)
        elif isinstance(up, ast.Tuple) and isinstance(f.parents.get(id(up)), ast.Assign) \
                and _split_of(f, f.parents[id(up)].value) is not None and up.elts and up.elts[0] is node:
            values.append(_Part(*_split_of(f, f.parents[id(up)].value)))
        else:
            values.append(node)  # (a Name in a store: no literal head)
    return values


def _split_of(f, value: ast.AST) -> Optional[Tuple[ast.AST, str]]:
    """(the string, the separator) of `x.split(sep)` / `rsplit` / `partition` / `rpartition`, or of a local
    bound only to one (`parts = x.rsplit(".", 1)` ... `a, b = parts`)."""
    if isinstance(value, ast.Name):
        bound = [v for v in _bound_values(f, value) if not isinstance(v, _Part)]
        return _split_of(f, bound[0]) if len(bound) == 1 and not isinstance(bound[0], ast.Name) else None
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) \
            and value.func.attr in ("split", "rsplit", "partition", "rpartition") and value.args \
            and isinstance(value.args[0], ast.Constant) and isinstance(value.args[0].value, str):
        return value.func.value, value.args[0].value
    return None


def _module_assignments(f) -> Dict[str, Optional[List[ast.AST]]]:
    """name -> its values where the file binds it only by module-level assignments (an alias of a callable),
    None where it binds it otherwise; a name absent is one the file never binds (a builtin). Built once."""
    table = f.__dict__.get("_module_assignments")
    if table is not None:
        return table
    table = {}
    for node in ast.walk(f.tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            up = f.parents.get(id(node))
            if isinstance(up, ast.Assign) and f.parents.get(id(up)) is f.tree and node in up.targets \
                    and table.get(node.id, []) is not None:
                table.setdefault(node.id, []).append(up.value)
            else:
                table[node.id] = None
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            table[node.name] = None
        elif isinstance(node, ast.arg):
            table[node.arg] = None
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for a in node.names:
                table[(a.asname or a.name).split(".")[0]] = None
    f.__dict__["_module_assignments"] = table
    return table


def _reads_global(f, name: ast.Name) -> bool:
    """Is name, read inside a function, the module's global: no enclosing function binds it (or each that
    does declares it `global`)?"""
    scope = _scope(f, name)
    while isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        args = scope.args
        params = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
        params |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
        declared = any(isinstance(n, ast.Global) and name.id in n.names for n in ast.walk(scope))
        if not declared and (name.id in params or _binds_locally(scope, name.id)):
            return False
        scope = _scope(f, scope)
    return scope is f.tree and _scope(f, name) is not f.tree


def _binds_locally(fn: ast.AST, name: str) -> bool:
    """Does the function's own body (not a nested def's) bind name?"""
    todo = list(ast.iter_child_nodes(fn))
    while todo:
        n = todo.pop()
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            if getattr(n, "name", None) == name:
                return True
            continue
        if isinstance(n, ast.Name) and n.id == name and not isinstance(n.ctx, ast.Load) \
                or isinstance(n, ast.alias) and (n.asname or n.name.split(".")[0]) == name:
            return True
        todo.extend(ast.iter_child_nodes(n))
    return False


def _last_name(node: ast.AST) -> Optional[str]:
    """The last name an expression spells: `x.a.b` -> b, `f(...)` -> f's, `x[...]` -> x's, a name itself (a
    cheap test before resolving what it refers to)."""
    while isinstance(node, (ast.Call, ast.Subscript)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else None


def _root(expr: ast.AST) -> Optional[str]:
    while isinstance(expr, (ast.Attribute, ast.Call)):
        expr = expr.value if isinstance(expr, ast.Attribute) else expr.func
    return expr.id if isinstance(expr, ast.Name) else None


def _scope(f, node: ast.AST) -> ast.AST:
    while True:
        node = f.parents.get(id(node))
        if node is None or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            return node if node is not None else f.tree


def _targets(stmt: ast.AST) -> Iterable[ast.AST]:
    return stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]


def _common(heads: List[str]) -> str:
    out = heads[0] if heads else ""
    for h in heads[1:]:
        while not h.startswith(out):
            out = out[:-1]
    return out


def _text(node: ast.AST) -> str:
    try:
        return ast.unparse(node)
    except Exception:  # noqa: BLE001 (a node made here for a check, or one unparse cannot write)
        return type(node).__name__
