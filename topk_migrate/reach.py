"""What the project's other files can do to the names one module's rewrite relies on.

A rewrite that gives a method a new parameter and passes it from the callers is wrong wherever a
caller reaches another definition: an override in a subclass (in any package of the project), a
monkeypatch of the method or of the kernel's module attribute, a reflective write. Reading one
folder misses a subclass two packages away, so every Python file of the project (project.Scope: an
installed distribution's own files, not the rest of site-packages; docs/project.md) is looked at:
read bounded, never imported; only those whose text names one of the names are parsed (CPython's
`ast`). Test code (files under `tests/` or `test/`, `test_*.py`, `*_test.py`, `conftest.py`) is
not read: it does not run in the serving process.

Default-deny: a receiver the file does not bind to something provably unrelated (another class,
another module of the project, an instance of an unrelated class: `self` of its methods, a name its
type declares as one, Project.declared_classes) counts as one that can reach the module's names.
"""
from __future__ import annotations

import ast
import errno
import functools
import os
import re
import unicodedata
from dataclasses import dataclass
from typing import Dict, Iterable, Iterator, List, Optional, Set, Tuple, Union

from . import bounded, files, guard, memory
from .discover import Prefilter, file_may_hold_site, iter_python_files, read_regular, scanning_for
from .model import InputError
from .project import Scope
from .run_context import per_run

# a file bigger than this (or than the run's TOPK_MIGRATE_MAX_BYTES, if smaller) cannot be checked; the
# project's biggest real Python files (generated protobuf stubs, vendored tables) are under 1 MiB.
READ_LIMIT = 8 << 20
# the most files one project scan reads; past it nothing is proven (the largest real engine tree
# the tests hold, sglang 0.5.16's wheel, has 2,859)
MAX_FILES = 50_000
_TEST_DIRS = {"tests", "test"}


@dataclass(frozen=True)
class Finding:
    path: str  # relative to the project root, '/'-separated
    line: int
    what: str

    def where(self) -> str:
        return f"{self.path}:{self.line}"


@per_run
def project_sources(scope: Scope) -> Tuple[List[Tuple[str, bytes]], List[Tuple[str, str]], List[Finding]]:
    """(real path, contents) of every non-test Python file of the project (under its root, or an installed
    distribution's own: project.Scope); (real path, relative path) of those over the read limit, which are only
    scanned for names (files_naming); and what stopped the scan. Read once per run (every module checked in a
    run asks of the same project)."""
    out: List[Tuple[str, bytes]] = []
    big: List[Tuple[str, str]] = []
    unreadable: List[Finding] = []
    limit = read_limit()
    held, budget = 0, memory.budget()  # the texts are held for the run: together, within its memory bound
    for n, (path, err) in enumerate(iter_python_files(scope.walked())):
        if n >= MAX_FILES:
            unreadable.append(Finding(".", 0, f"has more than {MAX_FILES} Python files"))
            break
        rel = os.path.relpath(path, scope.root).replace(os.sep, "/")
        if err is not None or is_test_code(rel) or not scope.holds_rel(rel) or _own_source(path):
            continue
        try:
            data, _ = read_regular(path, limit)
        except OSError as e:
            if e.errno == errno.EFBIG:
                big.append((os.path.realpath(path), rel))
            continue
        held += len(data)
        if held > budget:
            unreadable.append(Finding(".", 0, f"holds more than {budget >> 20} MiB of Python files "
                                              f"(the memory bound, {memory.BUDGET_ENV})"))
            break
        out.append((os.path.realpath(path), data))
    return out, big, unreadable


def read_limit() -> int:
    """The most bytes of one file the scan holds: the run's bound for every file it reads, if smaller."""
    return min(READ_LIMIT, files.max_bytes())


def _names(data: bytes, needles: List[bytes], pattern) -> bool:
    return any(n in data for n in needles) and pattern.search(data) is not None  # substring first: C speed


class _Words:
    """`\\b(?:name|...)\\b` over the names, compiled at the first search (a file holding one as a substring):
    a module of N classes asks of a set of classes per class, N x N names compiled where no file was read."""

    def __init__(self, names: List[str]):
        self._names, self._pattern = names, None

    def search(self, data: bytes):
        if self._pattern is None:
            self._pattern = re.compile(rb"\b(?:%s)\b" % b"|".join(
                re.escape(n.encode("utf-8", "surrogateescape")) for n in sorted(set(self._names))))
        return self._pattern.search(data)


def _names_any(path: str, needles: List[bytes]) -> bool:
    """Does the file hold one of the needles (read a window at a time)? One that cannot be read might."""
    try:
        with scanning_for(Prefilter(needles)):
            return file_may_hold_site(path)
    except OSError:
        return True


def _own_source(path: str) -> bool:
    """A file of topk-migrate itself (a checkout of it holds the example engine): the tool is not the
    fork, and its smoke injects the kernel it tests with."""
    real = os.path.realpath(path)
    return any(real.startswith(os.path.join(d, "")) for d in _own_dirs())


_OWN: List[str] = []


def _own_dirs() -> List[str]:
    """Where this package and its rules are installed (code locations, found once; not tree contents)."""
    if not _OWN:
        import importlib.util

        spec = importlib.util.find_spec("topk_migrate.codemods")
        rules = list(spec.submodule_search_locations or ()) if spec is not None else []
        _OWN.extend(os.path.realpath(d) for d in (os.path.dirname(os.path.abspath(__file__)), *rules))
    return _OWN


def is_test_code(rel: str) -> bool:
    parts = rel.replace(os.sep, "/").split("/")
    name = parts[-1]
    return (any(p in _TEST_DIRS for p in parts[:-1]) or name.startswith("test_")
            or name.endswith("_test.py") or name == "conftest.py")


_BODIES = ("body", "orelse", "finalbody", "handlers", "cases")


def _statements(tree: ast.Module) -> Iterator[ast.AST]:
    """Every statement of the module, nested ones included (an import is a statement: no expression holds one)."""
    stack: List[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        yield node
        for field in _BODIES:
            stack.extend(reversed(getattr(node, field, ())))


class _File:
    """One parsed file: its imports and top-level classes, and how it resolves a receiver."""

    def __init__(self, path: str, tree: ast.Module, find_module):
        self.path, self.tree, self._find = path, tree, find_module
        self.modules: Dict[str, str] = {}  # local name -> dotted module (`import a.b` binds a -> a)
        self.froms: Dict[str, Tuple[str, str]] = {}  # local name -> (module, imported name)
        for node in _statements(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.asname:
                        self.modules[a.asname] = a.name
                    else:
                        self.modules[a.name.split(".")[0]] = a.name.split(".")[0]
            elif isinstance(node, ast.ImportFrom):
                mod = "." * node.level + (node.module or "")
                for a in node.names:
                    if a.name != "*":
                        self.froms[a.asname or a.name] = (mod, a.name)
        self.classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}

    @functools.cached_property
    def parents(self) -> Dict[int, ast.AST]:
        """Each node's parent, by id (built when first asked: most files are asked only of their imports)."""
        parents: Dict[int, ast.AST] = {}
        for node in ast.walk(self.tree):
            for child in ast.iter_child_nodes(node):
                parents[id(child)] = node
        return parents

    def module_of(self, expr: ast.AST) -> Optional[str]:
        """The dotted module an expression names through this file's imports, or None."""
        chain: List[str] = []
        while isinstance(expr, ast.Attribute):
            chain.append(expr.attr)
            expr = expr.value
        if not isinstance(expr, ast.Name):
            return None
        if expr.id in self.modules:
            base = self.modules[expr.id]
        elif expr.id in self.froms:
            mod, name = self.froms[expr.id]
            base = (mod if mod.endswith(".") else mod + ".") + name
        else:
            return None
        return ".".join([base, *reversed(chain)])

    def resolve_class(self, expr: ast.AST) -> Tuple[Optional[str], str]:
        """(file, class name) a base expression names; file None where it is outside the project or
        not known (then only the name is known)."""
        if isinstance(expr, ast.Subscript):  # Generic[T], Base[int]
            expr = expr.value
        if isinstance(expr, ast.Name):
            if expr.id in self.classes:
                return self.path, expr.id
            if expr.id in self.froms:
                mod, name = self.froms[expr.id]
                return self._find(self.path, mod), name
            return None, expr.id
        if isinstance(expr, ast.Attribute):
            mod = self.module_of(expr.value)
            return (self._find(self.path, mod) if mod else None), expr.attr
        return None, ""

    def enclosing(self, node: ast.AST, kinds) -> Optional[ast.AST]:
        up = self.parents.get(id(node))
        while up is not None and not isinstance(up, kinds):
            up = self.parents.get(id(up))
        return up

    def instance_of(self, expr: ast.AST) -> Optional[ast.ClassDef]:
        """The class whose method binds `expr` (a Name) as its first parameter (self), or None."""
        if not isinstance(expr, ast.Name):
            return None
        fn = self.enclosing(expr, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return None
        cls = self.parents.get(id(fn))
        params = fn.args.posonlyargs + fn.args.args
        if not isinstance(cls, ast.ClassDef) or not params or params[0].arg != expr.id:
            return None
        if any(isinstance(d, ast.Name) and d.id in ("staticmethod", "classmethod") for d in fn.decorator_list):
            return None
        for node in ast.walk(fn):  # `self` rebound in the method: not provably the instance
            if isinstance(node, ast.Name) and node.id == expr.id and isinstance(node.ctx, (ast.Store, ast.Del)):
                return None
        return cls


class Project:
    """The Python files of one project, read once, for the questions one module's rewrite asks."""

    def __init__(self, module_path: str, scope: Union[Scope, str]):
        from .kernels import find_module

        scope = Scope(scope) if isinstance(scope, str) else scope  # a root: every file under it
        self.module = os.path.realpath(module_path)
        self.scope, self.root = scope, scope.root
        self._find_module = lambda path, mod: _real(find_module(path, mod, scope))
        self._texts: Optional[List[Tuple[str, bytes]]] = None
        self._big: List[Tuple[str, str]] = []  # (real path, relative path) of files over the read limit
        self._parsed: Dict[str, Optional[_File]] = {}
        self._subclasses: Dict[frozenset, List[Tuple[_File, ast.ClassDef]]] = {}
        self._by_path: Optional[Dict[str, bytes]] = None
        self._read: Dict[str, bytes] = {}  # _as_read's answers
        self.unreadable: List[Finding] = []  # files that name a name but cannot be checked

    def rel(self, path: str) -> str:
        return os.path.relpath(path, self.root).replace(os.sep, "/")

    def texts(self) -> List[Tuple[str, bytes]]:
        """(real path, contents) of every non-test Python file of the project but the module itself."""
        if self._texts is None:
            found, big, unreadable = project_sources(self.scope)
            self.unreadable.extend(unreadable)
            self._texts = [(path, data) for path, data in found if path != self.module]
            self._big = [(path, rel) for path, rel in big if path != self.module]
        return self._texts

    def files_naming(self, names: Iterable[str]) -> List[_File]:
        """The parsed files whose text names one of `names` as a word."""
        names = [n for n in names if n]
        if not names or not (self.texts() or self._big):  # (no other file: nothing to encode or compile)
            return []
        pattern = _Words(names)
        needles = [n.encode("utf-8", "surrogateescape") for n in names]
        out = []
        for path, data in self.texts():
            if not _names(data, needles, pattern) and not _names(self._as_read(path, data), needles, pattern):
                continue
            if path not in self._parsed:
                self._parsed[path] = self._parse(path, files.python_text(data))
            f = self._parsed[path]
            if f is not None:
                out.append(f)
        for path, rel in self._big:  # scanned in windows, never held: one that names a name is not known
            if path not in self._parsed and _names_any(path, needles):
                self._parsed[path] = None
                self.unreadable.append(Finding(rel, 0, f"is over the {read_limit()}-byte read limit "
                                                       f"(raise {files.MAX_BYTES_ENV} to read it)"))
        return out

    def _as_read(self, path: str, data: bytes) -> bytes:
        """The file's text with its identifiers as Python reads them (NFKC, PEP 3131), as UTF-8: where its
        bytes are not all ASCII, a name the byte search missed may be spelled otherwise (a fullwidth `f` is f).
        Empty when that is its bytes; made once per file."""
        if data.isascii():
            return b""
        if path not in self._read:
            read = unicodedata.normalize("NFKC", files.python_text(data)).encode("utf-8", "surrogateescape")
            self._read[path] = b"" if read == data else read
        return self._read[path]

    def _parse(self, path: str, text: str) -> Optional[_File]:
        """The file's facts; None for one that is not Python (Python cannot import it either: it changes
        nothing at run time). One too big or too deep to parse is unreadable: it might."""
        try:
            if len(text) > bounded.FACTS_SOURCE_LIMIT:
                raise MemoryError
            memory.check(text, memory.PARSE_BYTES_PER_TOKEN, "parse")
            return _File(path, guard.tree_of(text), self._find_module)
        except (SyntaxError, ValueError):
            return None
        except (InputError, RecursionError, MemoryError):
            self.unreadable.append(Finding(self.rel(path), 0, "is too big or too deeply nested to read"))
            return None

    # -- the class hierarchy -------------------------------------------------------------------
    def subclasses(self, seeds: Set[str]) -> List[Tuple[_File, ast.ClassDef]]:
        """Classes of other files that derive, directly or through each other, from one of the module's
        classes `seeds`: a base resolving to one of them, or a base whose module is not known that
        carries one of their names."""
        if frozenset(seeds) not in self._subclasses:
            self._subclasses[frozenset(seeds)] = self._derive(seeds)
        return self._subclasses[frozenset(seeds)]

    def _derive(self, seeds: Set[str]) -> List[Tuple[_File, ast.ClassDef]]:
        keys = {(self.module, s) for s in seeds}
        names = set(seeds)
        found: Dict[Tuple[str, str], Tuple[_File, ast.ClassDef]] = {}
        grew = True
        while grew:
            grew = False
            for f in self.files_naming(names):
                for cls in (n for n in ast.walk(f.tree) if isinstance(n, ast.ClassDef)):
                    key = (f.path, cls.name)
                    if key in found:
                        continue
                    for b in cls.bases:
                        path, name = f.resolve_class(b)
                        if (path, name) in keys or (path is None and name in names):
                            found[key] = (f, cls)
                            keys.add(key)
                            names.add(cls.name)
                            grew = True
                            break
        return list(found.values())

    def own(self) -> Optional[_File]:
        """The module's own facts: read and parsed once, not once per kernel call."""
        if "_own" not in self.__dict__:
            try:
                text = files.python_text(read_regular(self.module, read_limit())[0])
            except OSError:
                text = None
            self._own = self._parse(self.module, text) if text is not None else None
        return self._own

    def imported(self) -> List[_File]:
        """The project's files the module imports (it may hand them its classes: `patches.install(Backend)`)."""
        own = self.own()
        if own is None:
            return []
        mods = {m for m in own.modules.values()} | {m for m, _ in own.froms.values()} | {
            (m if m.endswith(".") else m + ".") + n for m, n in own.froms.values()}
        paths = {p for p in (self._find_module(self.module, m) for m in mods) if p is not None and p != self.module}
        return [f for f in (self._file_at(p) for p in sorted(paths)) if f is not None]

    def ancestors(self, seeds: Set[str]) -> List[Tuple[_File, ast.ClassDef]]:
        """Classes of other files that the module's classes `seeds` derive from, directly or through
        each other (a mixin, a base backend), resolved through the imports."""
        own = self.own()
        if own is None:
            return []
        return self._ancestors_of([(own, own.classes[n]) for n in seeds if n in own.classes], own)

    def rivals(self, seeds: Set[str], method: str) -> List[Tuple[_File, ast.ClassDef, ast.AST]]:
        """Definitions of `method` that an instance of a subclass of `seeds` may reach before the module's
        own: in another base of such a subclass (`class X(Other, Backend)`), or one of that base's ancestors."""
        out = []
        subs = self.subclasses(seeds)
        keys = {(self.module, s) for s in seeds} | {(f.path, c.name) for f, c in subs}
        for f, cls in subs:
            for b in cls.bases:
                path, name = f.resolve_class(b)
                if path is None or (path, name) in keys:
                    continue
                other = self._file_at(path) if path != self.module else None  # the module's own: the rule reads them
                if other is None or name not in other.classes:
                    continue
                start = [(other, other.classes[name])]
                for g, c in start + self._ancestors_of(start):
                    for d in c.body:
                        if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef)) and d.name == method:
                            out.append((g, c, d))
        return out

    def _ancestors_of(self, start: List[Tuple[_File, ast.ClassDef]],
                      own: Optional[_File] = None) -> List[Tuple[_File, ast.ClassDef]]:
        """The classes of other files the classes `start` derive from, through their bases' bases. The
        module's own classes are passed through where its facts `own` are given, else not followed."""
        out: List[Tuple[_File, ast.ClassDef]] = []
        todo, seen = list(start), set()
        while todo and len(seen) < 64:
            g, c = todo.pop()
            for b in c.bases:
                path, name = g.resolve_class(b)
                if path is None or (path, name) in seen or (path == self.module and own is None):
                    continue
                seen.add((path, name))
                h = own if path == self.module else self._file_at(path)
                if h is not None and name in h.classes:
                    if path != self.module:
                        out.append((h, h.classes[name]))
                    todo.append((h, h.classes[name]))
        return out

    def _file_at(self, path: str) -> Optional[_File]:
        if path not in self._parsed:
            if self._by_path is None:
                self._by_path = dict(self.texts())
            data = self._by_path.get(path)
            self._parsed[path] = self._parse(path, files.python_text(data)) if data is not None else None
        return self._parsed[path]

    def overrides(self, seeds: Set[str], method: str) -> List[Tuple[_File, ast.ClassDef, ast.AST]]:
        """Definitions of `method` in the classes `subclasses(seeds)` finds."""
        out = []
        for f, cls in self.subclasses(seeds):
            for d in cls.body:
                if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef)) and d.name == method:
                    out.append((f, cls, d))
                elif isinstance(d, (ast.Assign, ast.AnnAssign)) and method in _stored_names(d):
                    out.append((f, cls, d))
        return out

    # -- writes that rebind a name at run time --------------------------------------------------
    def attribute_writes(self, attrs: Set[str], seeds: Set[str], modules: Set[str]) -> List[Finding]:
        """Assignments, deletions and literal setattr/delattr of an attribute named in `attrs`, in other
        files, whose receiver may be one of the module's classes `seeds` (or their subclasses), the module
        itself, or a module named in `modules` (the kernel's): every receiver but an instance of an
        unrelated class, another class, or another module of the project."""
        related = {(self.module, s) for s in seeds} | {(f.path, c.name) for f, c in self.subclasses(seeds)}
        out = []
        for f in self.files_naming(attrs):
            for node in ast.walk(f.tree):
                targets: List[ast.AST] = []
                if isinstance(node, (ast.Assign, ast.Delete)):
                    targets = list(node.targets)
                elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
                    targets = [node.target]
                elif _builtin_call(node, ("setattr", "delattr")) and len(node.args) > 1 \
                        and isinstance(node.args[1], ast.Constant) and node.args[1].value in attrs:
                    if self._may_reach(f, node.args[0], related, modules):
                        out.append(Finding(self.rel(f.path), node.lineno,
                                           f"`{node.func.id}(..., {node.args[1].value!r}, ...)`"))
                    continue
                for t in _flatten(targets):
                    if isinstance(t, ast.Attribute) and t.attr in attrs and self._may_reach(f, t.value, related, modules):
                        out.append(Finding(self.rel(f.path), t.lineno, f"`{_unparse(t)}` is assigned"))
        return out

    def reflection(self, names: Set[str], seeds: Set[str], modules: Set[str]) -> List[Finding]:
        """Reflective writes in other files that name one of `names`, import the module or are imported by it:
        setattr/delattr with a computed name
        on a receiver that may be related, exec/eval, writes through vars()/`__dict__` of such a
        receiver, and writes to sys.modules."""
        related = {(self.module, s) for s in seeds} | {(f.path, c.name) for f, c in self.subclasses(seeds)}
        out = []
        stem = os.path.splitext(os.path.basename(self.module))[0]
        importers = [f for f in self.files_naming([stem]) if any(  # files that import the module by its name
            isinstance(n, ast.Import) and any(stem in a.name.split(".") for a in n.names)
            or isinstance(n, ast.ImportFrom) and (stem in (n.module or "").split(".") or any(a.name == stem for a in n.names))
            for n in ast.walk(f.tree))]
        files = {id(f): f for f in self.files_naming(names) + importers + self.imported()}
        for f in files.values():
            for node in ast.walk(f.tree):
                what = None
                if _builtin_call(node, ("setattr", "delattr")) and node.args and not (
                        len(node.args) > 1 and isinstance(node.args[1], ast.Constant)):
                    if self._may_reach(f, node.args[0], related, modules):
                        what = f"`{node.func.id}` with a computed name"
                elif _builtin_call(node, ("exec", "eval")):  # compile() alone runs nothing
                    what = f"`{node.func.id}()`"
                elif isinstance(node, ast.Subscript) and _written(f, node):
                    v = node.value
                    if isinstance(v, ast.Attribute) and v.attr == "modules" and isinstance(v.value, ast.Name) \
                            and f.modules.get(v.value.id) == "sys":
                        what = "a write to `sys.modules`"
                    elif isinstance(v, ast.Attribute) and v.attr == "__dict__" \
                            and self._may_reach(f, v.value, related, modules):
                        what = f"a write through `{_unparse(v)}`"
                    elif _builtin_call(v, ("vars",)) and v.args and self._may_reach(f, v.args[0], related, modules):
                        what = f"a write through `{_unparse(v)}`"
                if what:
                    out.append(Finding(self.rel(f.path), getattr(node, "lineno", 0), what))
        return out

    def _may_reach(self, f: _File, receiver: ast.AST, related: Set[Tuple[str, str]], modules: Set[str]) -> bool:
        """May `receiver`, in file f, be one of the related classes (or an instance of one), the module,
        or a module in `modules`? Only a receiver the file binds to something else is not."""
        cls = f.instance_of(receiver)
        if cls is not None:  # `self.x = ...` shadows a method only on an instance of a related class, or of one
            keys, names = self._hierarchy(frozenset(related))  # they derive from (its methods run on theirs)
            return (f.path, cls.name) in keys or cls.name in names
        if isinstance(receiver, ast.Name) and receiver.id in f.classes:
            return (f.path, receiver.id) in related
        bound = isinstance(receiver, ast.Name) and (receiver.id in f.modules or receiver.id in f.froms)
        if not bound and not (isinstance(receiver, ast.Attribute) and f.module_of(receiver.value) is not None):
            declared = self.declared_classes(f, receiver)
            if declared is not None:  # an instance of the classes its type names: related only through them
                keys, names = self._hierarchy(frozenset(related))
                return any(k in keys or k[1] in names for k in declared)
            return True  # a parameter, a local, a call's result: anything
        mod = f.module_of(receiver)
        if mod in modules:
            return True
        target = self._find_module(f.path, mod) if mod else None
        if target is not None:  # a module of this project: the module itself, or none of its names
            return target == self.module
        path, name = f.resolve_class(receiver)  # `from m import C` / `m.C`: a class of m
        if path is not None:
            return (path, name) in related
        return mod is None or mod.startswith(".")  # an import that does not resolve in the project: unknown


    # -- receivers of a declared type ------------------------------------------------------------------
    def declared_classes(self, f: _File, receiver: ast.AST) -> Optional[List[Tuple[Optional[str], str]]]:
        """The classes a name's type is declared as, each (file, class name) for a class of the project, or
        (None, name) for one imported from outside it: a parameter annotated with them (`config:
        PretrainedConfig`, `Optional[...]`, a union), never rebound in its function; or a local bound only
        to constructor calls of them. None where nothing declares it, or the declaration names anything
        else (`Any`, `object`, a builtin, a type variable, a generic, a class re-exported or not found):
        then the name may hold anything."""
        if not isinstance(receiver, ast.Name):
            return None
        fn = f.enclosing(receiver, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return None  # a lambda's parameter, or a module-level name anything may assign
        a = fn.args
        param = next((x for x in a.posonlyargs + a.args + a.kwonlyargs if x.arg == receiver.id), None)
        assigned, other = _bindings(f, fn)
        if param is not None:
            if receiver.id in assigned or receiver.id in other:
                return None  # rebound in its function: no longer what the annotation says
            owner = f.parents.get(id(fn))
            if isinstance(owner, ast.ClassDef) and (a.posonlyargs + a.args)[:1] == [param] and any(
                    isinstance(d, ast.Name) and d.id == "classmethod" for d in fn.decorator_list):
                return [(f.path, owner.name)]  # a classmethod's `cls`: its class, or a class deriving from it
            return self._annotated(f, param.annotation) if param.annotation is not None else None
        if receiver.id in {x.arg for x in (a.vararg, a.kwarg) if x is not None}:
            return None
        values = assigned.get(receiver.id)
        if not values or receiver.id in other:
            return None  # bound otherwise too (a loop, `with ... as`, an import, a `global`, ...)
        out: List[Tuple[Optional[str], str]] = []
        for v in values:
            cls = self._class_named(f, v.func) if isinstance(v, ast.Call) else None
            if cls is None:
                return None
            out.append(cls)
        return out

    def _annotated(self, f: _File, annotation: ast.AST, depth: int = 0) -> Optional[List[Tuple[Optional[str], str]]]:
        """The classes an annotation names: one class, `Optional[C]`, `Union[C, D]`, `C | None`, a string of
        those; None for anything else."""
        if depth > 8:
            return None
        if isinstance(annotation, ast.Constant) and annotation.value is None:
            return []
        if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str) and len(annotation.value) < 500:
            try:
                return self._annotated(f, ast.parse(annotation.value, mode="eval").body, depth + 1)
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                return None
        if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
            left, right = self._annotated(f, annotation.left, depth + 1), self._annotated(f, annotation.right, depth + 1)
            return None if left is None or right is None else left + right
        if isinstance(annotation, ast.Subscript) and _typing_name(f, annotation.value) in ("Optional", "Union"):
            parts = annotation.slice.elts if isinstance(annotation.slice, ast.Tuple) else [annotation.slice]
            out: List[Tuple[Optional[str], str]] = []
            for part in parts:
                got = self._annotated(f, part, depth + 1)
                if got is None:
                    return None
                out += got
            return out
        cls = self._class_named(f, annotation)
        return [cls] if cls is not None else None

    def _class_named(self, f: _File, expr: ast.AST) -> Optional[Tuple[Optional[str], str]]:
        """(file, name) of the project class `expr` names, (None, name) of a class imported from outside the
        project (a capitalized name from a module the project does not hold: `transformers.PretrainedConfig`),
        or None: a builtin, a name of no import, a module, something the file cannot say is a class."""
        if not isinstance(expr, (ast.Name, ast.Attribute)) or _typing_name(f, expr) in _ANY_TYPES:
            return None
        if isinstance(expr, ast.Name) and expr.id in f.classes:
            return f.path, expr.id
        mod = f.module_of(expr)
        if mod is None or mod.startswith("."):
            return None  # a builtin, a local name, or a relative import that does not resolve
        if self._find_module(f.path, mod) is not None:
            return None  # a module of the project, not a class
        path, name = f.resolve_class(expr)
        if path is not None:  # imported from a module of the project: a class only where one is defined there
            other = self._file_at(os.path.realpath(path))
            return (other.path, name) if other is not None and name in other.classes else None
        top = mod.split(".")[0]
        if self._find_module(f.path, top) is not None or not name[:1].isupper():
            return None  # a package of the project that does not resolve further, or not named as a class
        return None, name

    def _hierarchy(self, related: frozenset) -> Tuple[Set[Tuple[str, str]], Set[str]]:
        """The related classes and every class they derive from: (file, name) of those of the project, and the
        names of those it cannot resolve (a class from outside the project, or one not found): an instance
        declared as one of them may be an instance of a related class."""
        cache = self.__dict__.setdefault("_hierarchies", {})
        if related in cache:
            return cache[related]
        own = self.own()
        todo = [(own, own.classes[n]) for p, n in related if p == self.module and own is not None and n in own.classes]
        todo += [(g, c) for g, c in self.subclasses({n for p, n in related if p == self.module})
                 if (g.path, c.name) in related]
        keys, names = set(related), set()
        while todo and len(keys) < 4096:
            g, c = todo.pop()
            for b in c.bases:
                path, name = g.resolve_class(b)
                h = own if path == self.module else self._file_at(path) if path is not None else None
                if h is None or name not in h.classes:
                    names.add(name)
                elif (h.path, name) not in keys:
                    keys.add((h.path, name))
                    todo.append((h, h.classes[name]))
        cache[related] = (keys, names)
        return keys, names


# Annotations that say nothing of the class (`Any`, `object`), or name a class object or a module, which
# may be the kernel's module or the helper's class itself.
_ANY_TYPES = {"Any", "object", "type", "Type", "ModuleType", "TypeVar", "Callable"}


def _typing_name(f: _File, expr: ast.AST) -> str:
    """The last part of a (dotted) name as written: `Optional`, `typing.Optional`, `t.Union`."""
    return expr.attr if isinstance(expr, ast.Attribute) else expr.id if isinstance(expr, ast.Name) else ""


def _bindings(f: _File, fn: ast.AST) -> Tuple[Dict[str, List[ast.AST]], Set[str]]:
    """How `fn` (and the functions inside it) binds names, in one walk (kept per file: each receiver of the
    function looks it up): name -> the values of its plain assignments (`x = v`, `x: T = v`), and the names
    bound any other way (a `del`, a loop, a tuple target, `with ... as`, `except ... as`, `:=`, `+=`, a
    `global`/`nonlocal`, an import, a nested def or class, a match capture)."""
    cache = f.__dict__.setdefault("_bindings", {})
    if id(fn) in cache:
        return cache[id(fn)]
    assigned: Dict[str, List[ast.AST]] = {}
    other: Set[str] = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            up = f.parents.get(id(node))
            if isinstance(up, ast.Assign) and len(up.targets) == 1 and up.targets[0] is node \
                    or isinstance(up, ast.AnnAssign) and up.target is node and up.value is not None:
                assigned.setdefault(node.id, []).append(up.value)
            elif not (isinstance(up, ast.AnnAssign) and up.target is node):  # (`x: T` alone binds nothing)
                other.add(node.id)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            other.update(node.names)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node is not fn:
            other.add(node.name)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            other.add(node.name)
        elif isinstance(node, ast.alias):
            other.add(node.asname or node.name.split(".")[0])
        elif type(node).__name__.startswith("Match"):  # `case C(x)`, `case [*rest]`, `case {**rest}`
            other.update(n for n in (getattr(node, "name", None), getattr(node, "rest", None)) if isinstance(n, str))
    cache[id(fn)] = (assigned, other)
    return assigned, other


def _real(path: Optional[str]) -> Optional[str]:
    return os.path.realpath(path) if path else None


def _builtin_call(node: ast.AST, names: Tuple[str, ...]) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in names


def _written(f: _File, node: ast.Subscript) -> bool:
    return isinstance(node.ctx, (ast.Store, ast.Del))


def _flatten(targets: Iterable[ast.AST]) -> Iterable[ast.AST]:
    for t in targets:
        if isinstance(t, (ast.Tuple, ast.List)):
            yield from _flatten(t.elts)
        elif isinstance(t, ast.Starred):
            yield from _flatten([t.value])
        else:
            yield t


def _stored_names(node: ast.AST) -> Set[str]:
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    return {t.id for t in _flatten(targets) if isinstance(t, ast.Name)}


def _unparse(node: ast.AST) -> str:
    try:
        return ast.unparse(node)
    except (RecursionError, ValueError):
        return "<expression>"


def forwarded_call(fn: ast.AST, super_method: Optional[str] = None, offset: int = 0) -> Tuple[Optional[ast.Call], str]:
    """(the call, "") if `fn`'s body does nothing but pass each of its parameters, unchanged and in its
    place, to one call whose result it returns (`super().<super_method>(...)` where given); else
    (None, what it does besides, its lines shifted by `offset`). A stub (a body of `pass` or `...`)
    hands nothing on: (None, ""). A wrapper or an override of this shape keeps the rows and indices it
    is given and hands its `**kwargs` on, so what the callee accepts, it accepts."""
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None, "it is not a plain def"
    if fn.decorator_list:
        return None, f"it is decorated (`@{_unparse(fn.decorator_list[0])}`)"
    body = list(fn.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        body = body[1:]
    if all(isinstance(b, ast.Pass) or (isinstance(b, ast.Expr) and isinstance(b.value, ast.Constant)
                                       and b.value.value is Ellipsis) for b in body):
        return None, ""  # a stub: it does nothing with any row
    call: Optional[ast.AST] = None
    if len(body) == 1 and isinstance(body[0], ast.Return):
        call = body[0].value
    elif len(body) == 2 and isinstance(body[0], ast.Assign) and len(body[0].targets) == 1 \
            and isinstance(body[0].targets[0], ast.Name) and isinstance(body[1], ast.Return) \
            and isinstance(body[1].value, ast.Name) and body[1].value.id == body[0].targets[0].id:
        call = body[0].value
    if not isinstance(call, ast.Call):
        stmt = body[0] if body else fn
        return None, f"its body does more than return one call (line {getattr(stmt, 'lineno', fn.lineno) + offset})"
    if super_method is not None:
        f = call.func
        if not (isinstance(f, ast.Attribute) and f.attr == super_method and isinstance(f.value, ast.Call)
                and isinstance(f.value.func, ast.Name) and f.value.func.id == "super"):
            return None, f"it does not return `super().{super_method}(...)`"
    a = fn.args
    params = [p.arg for p in a.posonlyargs + a.args]
    if super_method is not None:
        params = params[1:]  # self
    positional = [x for x in call.args if not isinstance(x, ast.Starred)]
    if [x.id if isinstance(x, ast.Name) else None for x in positional] != params[:len(positional)]:
        return None, f"it does not pass its parameters on unchanged and in order (line {call.lineno + offset})"
    passed = set(params[:len(positional)])
    for x in call.args:
        if isinstance(x, ast.Starred):
            if not (a.vararg and isinstance(x.value, ast.Name) and x.value.id == a.vararg.arg):
                return None, f"it passes `*{_unparse(x.value)}` (line {call.lineno + offset})"
            passed.add("*")
    for k in call.keywords:
        if k.arg is None:
            if not (a.kwarg and isinstance(k.value, ast.Name) and k.value.id == a.kwarg.arg):
                return None, f"it passes `**{_unparse(k.value)}` (line {call.lineno + offset})"
            passed.add("**")
        elif not (isinstance(k.value, ast.Name) and k.value.id == k.arg
                  and k.arg in params + [p.arg for p in a.kwonlyargs]):
            return None, f"it passes `{k.arg}={_unparse(k.value)}` (line {call.lineno + offset})"
        else:
            passed.add(k.arg)
    wanted = set(params) | {p.arg for p in a.kwonlyargs} | ({"*"} if a.vararg else set()) | ({"**"} if a.kwarg else set())
    if wanted - passed:
        missing = sorted(wanted - passed)[0].replace("**", "**kwargs").replace("*", "*args")
        return None, f"it does not pass `{missing}` on (line {call.lineno + offset})"
    return call, ""


def field_writes(project: "Project", field: str) -> List[Tuple[_File, ast.AST, Optional[ast.AST]]]:
    """Where other files of the project give `field` a value: (file, the node, the value) for a call's
    keyword `field=v`, an assignment `x.field = v` and an in-place `x.field.copy_(v)`; (file, the node,
    None) for any other write into the tensor it holds."""
    out: List[Tuple[_File, ast.AST, Optional[ast.AST]]] = []
    for f in project.files_naming([field]):
        for node in ast.walk(f.tree):
            if _changes_field_in_place(node, field):
                out.append((f, node, None))  # no value: nothing proves what the write leaves clipped
            elif isinstance(node, ast.keyword) and node.arg == field:
                out.append((f, node.value, node.value))
            elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for t in _flatten(targets):
                    if isinstance(t, ast.Attribute) and t.attr == field:
                        out.append((f, t, node.value))
            elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Attribute) and node.target.attr == field:
                out.append((f, node.target, node))
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "copy_" \
                    and isinstance(node.func.value, ast.Attribute) and node.func.value.attr == field and node.args:
                out.append((f, node, node.args[0]))
    return out


def _changes_field_in_place(node: ast.AST, field: str) -> bool:
    """A write into the tensor `x.field` holds, other than `.copy_`: an in-place method (`x.field.add_(1)`,
    `x.field[:n].clamp_(...)`), `out=x.field`, `x.field[i] = v`, `x.field[i] += v`."""
    def is_field(e: ast.AST) -> bool:
        while isinstance(e, ast.Subscript):
            e = e.value
        return isinstance(e, ast.Attribute) and e.attr == field

    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr.endswith("_") and func.attr != "copy_" and is_field(func.value):
            return True
        return any(k.arg == "out" and is_field(k.value) for k in node.keywords)
    targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AugAssign) else []
    return any(isinstance(t, ast.Subscript) and is_field(t) for t in targets)


def constructed(f: _File, e: ast.AST) -> bool:
    """Is `e` a local name bound, at each of its bindings, to a class's constructor call (a capitalized
    callee: `DSAMetadata(...)`): a new object, which no captured CUDA graph holds?"""
    values = local_value(f, e) if isinstance(e, ast.Name) else None
    return bool(values) and all(isinstance(v, ast.Call) and _unparse(v.func).rsplit(".", 1)[-1][:1].isupper()
                                for v in values)


def local_value(f: _File, name: ast.Name) -> Optional[List[ast.AST]]:
    """The values a local name is assigned in the function (or module) that reads it, or None where it
    is also bound otherwise (a parameter, a loop, an augmented assignment, a `with`, ...)."""
    scope = f.enclosing(name, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) or f.tree
    values: List[ast.AST] = []
    if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        a = scope.args
        if name.id in {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs} | {
                x.arg for x in (a.vararg, a.kwarg) if x is not None}:
            return None
    for node in ast.walk(scope):
        if isinstance(node, ast.Name) and node.id == name.id and isinstance(node.ctx, (ast.Store, ast.Del)):
            up = f.parents.get(id(node))
            if isinstance(up, ast.Assign) and len(up.targets) == 1 and up.targets[0] is node:
                values.append(up.value)
            elif isinstance(up, ast.AnnAssign) and up.target is node and up.value is not None:
                values.append(up.value)
            else:
                return None
    return values or None


def graph_update(name: str) -> bool:
    """A method that may run between a CUDA graph's replays to update what it reads: a `*replay*` hook, or one
    named for the graph that neither captures nor builds (sglang 0.5.16: init_forward_metadata_out_graph,
    _apply_cuda_graph_metadata; a capture or its builder makes the objects a graph keeps)."""
    return "replay" in name or ("graph" in name and not graph_builder(name))


def graph_builder(name: str) -> bool:
    """A method that makes what a CUDA graph keeps (a capture, its builder, the graph state's set-up)."""
    return any(w in name for w in ("capture", "build", "init_cuda_graph"))


def replay_writes(project: "Project", classes: List[Tuple[_File, ast.ClassDef]], field: str,
                  held: Set[str]) -> Optional[Finding]:
    """CUDA graphs, in the related classes of other files: a method named `*replay*` that gives `field` a
    new value (a keyword `field=`, an assignment `x.field = ...`) or gives `self.<held>` (where the kernel's
    callers read the metadata) anything but an object read from somewhere (`self.graph_metadata[bs]`)."""
    for f, cls in classes:
        for d in cls.body:
            if not isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef)) or not graph_update(d.name):
                continue
            for node in ast.walk(d):
                if isinstance(node, ast.keyword) and node.arg == field:
                    return Finding(project.rel(f.path), node.value.lineno, f"`{d.name}` gives a new `{field}`")
                if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    for t in _flatten(targets):
                        if isinstance(t, ast.Attribute) and t.attr == field:
                            return Finding(project.rel(f.path), t.lineno, f"`{d.name}` gives `{field}` a new tensor")
                        if isinstance(t, ast.Attribute) and t.attr in held and isinstance(t.value, ast.Name) \
                                and t.value.id == "self" and not isinstance(node.value, (ast.Subscript, ast.Attribute)) \
                                and not (isinstance(node.value, ast.Constant) and node.value.value is None):
                            return Finding(project.rel(f.path), t.lineno, f"`{d.name}` gives `self.{t.attr}` a new object")
    return None
