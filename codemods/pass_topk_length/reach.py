"""What the project's other files can do to the names one module's rewrite relies on.

A rewrite that gives a method a new parameter and passes it from the callers is wrong wherever a
caller reaches another definition: an override in a subclass (in any package of the project), a
monkeypatch of the method or of the kernel's module attribute, a reflective write. Reading one
folder misses a subclass two packages away, so every Python file of the project (project.Scope: an
installed distribution's own files, not the rest of site-packages; docs/project.md) is looked at:
read bounded, never imported; only those whose text names one of the names are parsed (CPython's
`ast`). Test code (files under `tests/` or `test/`, `test_*.py`, `*_test.py`, `conftest.py`) is
not read: it does not run in the serving process (one the project's other code imports is its code).

Default-deny: a receiver the file does not bind to something provably unrelated (another class,
another module of the project, an instance of an unrelated class: `self` of its methods, a name its
type declares as one, Project.declared_classes) counts as one that can reach the module's names.
"""
from __future__ import annotations

import ast
import builtins
import errno
import functools
import importlib.util
import os
import re
import sys
import unicodedata
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Set, Tuple, Union

import topk_migrate
from topk_migrate import bounded, files, guard, memory
from topk_migrate.discover import Prefilter, iter_python_files, read_regular
from topk_migrate.kernels import find_module
from topk_migrate.model import InputError
from topk_migrate.project import TEST_DIRS, Scope, is_test_code
from topk_migrate.run_context import per_run

from . import derived, namespaces
from .rows import LOGGING_ROOTS

# a file bigger than this (or than the run's TOPK_MIGRATE_MAX_BYTES, if smaller) cannot be checked; the
# project's biggest real Python files (generated protobuf stubs, vendored tables) are under 1 MiB.
READ_LIMIT = 8 << 20
# the most files one project scan reads; past it nothing is proven (the largest real engine tree
# the tests hold, sglang 0.5.16's wheel, has 2,859)
MAX_FILES = 50_000


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
    aside: List[Tuple[str, str]] = []  # test code, read only where other code imports it
    rels: Dict[str, str] = {}

    def read(path: str, rel: str) -> bool:
        nonlocal held
        try:
            data, _ = read_regular(path, limit)
        except OSError as e:
            if e.errno == errno.EFBIG:
                big.append((os.path.realpath(path), rel))
            return True
        held += len(data)
        if held > budget:
            unreadable.append(Finding(".", 0, f"holds more than {budget >> 20} MiB of Python files "
                                              f"(the memory bound, {memory.BUDGET_ENV})"))
            return False
        out.append((os.path.realpath(path), data))
        rels[os.path.realpath(path)] = rel
        return True

    walked = set()
    for n, (path, err) in enumerate(iter_python_files(scope.walked())):
        if n >= MAX_FILES:
            unreadable.append(Finding(".", 0, f"has more than {MAX_FILES} Python files"))
            break
        walked.add(os.path.realpath(path))
        rel = os.path.relpath(path, scope.root).replace(os.sep, "/")
        if err is not None or not scope.holds_rel(rel) or _own_source(path):
            continue
        if is_test_code(rel):
            aside.append((path, rel))
        elif not read(path, rel):
            return out, big, unreadable
    ignored = [] if scope.installed else _ignored_files(scope, walked)
    named_only = {path: {rel[:-3].replace("/", ".").removesuffix(".__init__")} if _BUILT.intersection(
        rel.split("/")[:-1]) else _import_root_names(scope.root, rel) for path, rel in ignored}
    aside += ignored
    done = 0
    while aside and done < len(out):  # a file named like a test that the project's code imports is its code
        imported = set()
        for path, data in out[done:]:
            if ignored or b"test" in data or b"import_module" in data or b"__import__" in data or b"run_module" in data:
                # (every file set aside spells `test` in its path: so does an import of it, but for a computed one)
                imported |= _imports(rels[path], data)
        done = len(out)
        still = []
        for path, rel in aside:
            names = named_only[path] if path in named_only else _module_names(rel)
            heads = [h[:-1] for h in imported if h.endswith("*") and (path not in named_only or len(h) > 2)]
            if names & imported or any(n.startswith(h) for h in heads for n in names) and not _under_test_dir(rel):
                # (a computed import's literal head reads an ignored file too, `import_module(f"overrides.{kind}")`,
                # round AO; one with no literal head, `*`, only a test-named file, as before)
                if not read(path, rel):
                    return out, big, unreadable
            else:
                still.append((path, rel))
        aside = still
    return out, big, unreadable


_IMPORT = re.compile(rb"^[ \t]*(?:from[ \t]+([\w.]+)[ \t]+import[ \t]*(\([^)]*\)|[^\n]*)|import[ \t]+([^\n]*))"
                     rb"|(?:import_module|__import__|run_module)\(\s*(?:name\s*=\s*)?(?:[\"']([\w.]+)[\"']\s*(\+)?"
                     rb"|f[\"']([\w.]+)\{|([^\"'\s)]))"
                     rb"|[\"']([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)(?::[\w.]*)?[\"']", re.M)


def _imports(rel: str, data: bytes) -> Set[str]:
    """The modules a file's text may import, as paths from the project's root without `.py` (`a/b`), and as
    the dotted names it spells (`a.b`), each also with every name a `from` imports from it; every dotted
    string (`"experiments.ab_test"`, `"m:attr"`: a name a computed import, `runpy` or a resolver may be
    given); for a computed import with a literal head (`import_module(f"plugins.{name}")`, `"." + name`) that
    head and `*` (every module it begins); for one named by nothing literal (`import_module(m.name)`), `*`
    alone: an over-approximation (a line that only looks like an import counts)."""
    out: Set[str] = set()
    here = rel.split("/")[:-1]
    for m in _IMPORT.finditer(data):
        frm, names, plain, literal, joined, head, computed, dotted = (
            g.decode("latin-1") if g is not None else None for g in m.groups())
        if computed is not None:
            out.add("*")
            continue
        if head or joined:
            head = head or literal
            if head.startswith("."):  # relative to the importing file's package
                level = len(head) - len(head.lstrip("."))
                head = ".".join(here[:len(here) - (level - 1)] + [head.lstrip(".")]).rstrip(".") + "."
            out.add(head + "*")
            continue
        mods: List[str] = []
        if frm is not None:
            mods += [frm] + [frm + ("" if frm.endswith(".") else ".") + w
                             for w in re.findall(r"[A-Za-z_]\w*", names or "") if w != "as"]
        elif plain is not None:
            mods += [w for w in re.findall(r"[A-Za-z_][\w.]*", plain) if w != "as"]
        elif literal is not None or dotted is not None:
            mods.append(literal or dotted)
        for mod in mods:
            level = len(mod) - len(mod.lstrip("."))
            parts = [p for p in mod.lstrip(".").split(".") if p]
            if level:
                base = here[:len(here) - (level - 1)] if level - 1 <= len(here) else []
                out.add("/".join(base + parts))
            else:
                out.add(".".join(parts))
    return out


def _module_names(rel: str) -> Set[str]:
    """How an import may name the file at `rel`: its path from the root (`a/b`, a package by its folder), and
    each dotted tail of it (`b`, `a.b`: the root of its imports may lie anywhere above it) that holds its test
    folder (`tests.helpers`: a stub under tests/, `tests/stubs/sgl_kernel/flash_mla.py`, is not what
    `import sgl_kernel.flash_mla` reads, unless tests/stubs is put on the path, which test code does)."""
    parts = rel[:-3].split("/") if rel.endswith(".py") else rel.split("/")
    if parts and parts[-1] == "__init__":
        parts = parts[:-1]
    top = next((i for i, p in enumerate(parts[:-1]) if p in TEST_DIRS), len(parts))
    return {"/".join(parts)} | {".".join(parts[i:]) for i in range(min(top + 1, len(parts)))}


def read_limit() -> int:
    """The most bytes of one file the scan holds: the run's bound for every file it reads, if smaller."""
    return min(READ_LIMIT, files.max_bytes())


_TOKEN = re.compile(rb"[A-Za-z0-9_]+")  # a word, as `\b` in a bytes pattern bounds one


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
        return Prefilter(needles).matches_file(path)
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
        spec = importlib.util.find_spec("topk_migrate.codemods")
        rules = list(spec.submodule_search_locations or ()) if spec is not None else []
        engine = os.path.dirname(os.path.abspath(topk_migrate.__file__))
        _OWN.extend(os.path.realpath(d) for d in (engine, *rules))
    return _OWN


def _ignored_files(scope: Scope, walked: Set[str]) -> List[Tuple[str, str]]:
    """(path, relative path) of the Python files the repository's ignore rules keep out of the walk (a
    gitignored `local_overrides.py`): set aside, they are read where the project's code imports them by a
    name, as test code is (docs/project.md). At most MAX_FILES are listed (a virtualenv in the tree)."""
    out = []
    for n, (path, err) in enumerate(iter_python_files(scope.walked(), gitignore=False)):
        if n >= MAX_FILES:
            break
        rel = os.path.relpath(path, scope.root).replace(os.sep, "/")
        if err is None and os.path.realpath(path) not in walked and not _own_source(path) \
                and not _NEVER_IMPORTED.intersection(rel.split("/")[:-1]) and not any(
                    p.endswith((".egg-info", ".egg")) for p in rel.split("/")[:-1]):
            out.append((path, rel))
    return out


# Folders of what an environment made, never what the project's code imports by those names; and those a build
# may have made (copies of the project's modules, build/lib/<pkg>), read only where an import names them from the
# root (`import dist.runner`: a fork's own package of that name, round AO), never by the copy's own module name.
_NEVER_IMPORTED = {"site-packages", "node_modules", "__pycache__", ".eggs"}
_BUILT = {"build", "dist", "venv", "env"}


def _import_root_names(root: str, rel: str) -> Set[str]:
    """The name an import gives the file at rel: its path from the nearest folder above it that is not a
    package (python/sglang/x.py is sglang.x), and from the root."""
    parts = rel[:-3].split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    start = len(parts) - 1
    while start > 0 and os.path.isfile(os.path.join(root, *parts[:start], "__init__.py")):
        start -= 1
    return {".".join(parts), ".".join(parts[start:])}


_CODE_DUNDERS = {"__code__", "__defaults__", "__kwdefaults__"}  # what a function runs with, changed in place


def _binds_module(f: "_File", known: Set[str]) -> bool:
    """Does the file bind one of the modules `known` (or a prefix of one) as a module object by an import?"""
    if any(m in known for m in f.modules.values()):
        return True
    return any((f"{mod}.{name}" if mod and not mod.endswith(".") else f"{mod}{name}") in known
               for mod, name in f.froms.values())


def _import_bindings(node: ast.AST, rel: str) -> List[Tuple[str, str]]:
    """(the local name, the module it is bound to) for each module a top-level import binds (a `from`
    import's name counted as a submodule; a relative import resolved against the file's package)."""
    if isinstance(node, ast.Import):
        return [(a.asname, a.name) if a.asname else (a.name.split(".")[0], a.name.split(".")[0]) for a in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    base = node.module or ""
    if node.level:
        parts = rel[:-3].split("/")[:-1]
        parts = parts[:len(parts) - (node.level - 1)] if node.level > 1 else parts
        base = ".".join(parts + ([base] if base else []))
    return [(a.asname or a.name, f"{base}.{a.name}" if base else a.name) for a in node.names if a.name != "*"]


def _parameter_or_element(f: "_File", node: ast.AST) -> Optional[Tuple[ast.AST, int, str, bool]]:
    """(the function, the position, the name, a `*args`) of the parameter node is, or that the loop binding
    node iterates (`for fn in fns` where `*fns`); None for anything else."""
    if not isinstance(node, ast.Name):
        return None
    param = namespaces._parameter_of(f, node)
    if param is not None:
        fn, index, name = param
        return fn, index - _bound_first(f, fn), name, False
    scope = namespaces._scope(f, node)
    if not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    loops = [n for n in ast.walk(scope) if isinstance(n, (ast.For, ast.comprehension)) and isinstance(n.target, ast.Name)
             and n.target.id == node.id and isinstance(n.iter, ast.Name)]
    stores = [n for n in ast.walk(scope) if isinstance(n, ast.Name) and n.id == node.id and not isinstance(n.ctx, ast.Load)]
    if len(loops) != 1 or len(stores) != 1:
        return None
    over = loops[0].iter.id
    a = scope.args
    if a.vararg is not None and a.vararg.arg == over:
        return scope, len(a.posonlyargs + a.args) - _bound_first(f, scope), over, True
    param = namespaces.parameter_in(scope, over)
    return (param[0], param[1] - _bound_first(f, param[0]), param[2], True) if param is not None else None


def _bound_first(f: "_File", fn: ast.AST) -> int:
    """1 for the first parameter of a method of a class (not passed at a call through the instance or, for a
    classmethod, the class), else 0: a module-level function's first parameter is passed, whatever its name."""
    args = fn.args.posonlyargs + fn.args.args
    static = any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in fn.decorator_list)
    return 1 if args and isinstance(f.parents.get(id(fn)), ast.ClassDef) and not static else 0


def _under_test_dir(rel: str) -> bool:
    """A file of a test suite's folder (`tests/`, `test/`): only an import naming it reaches it, never a
    computed import's head (a plugin folder may hold `perf_test.py`; a test suite is not imported as plugins)."""
    return any(p in TEST_DIRS for p in rel.replace(os.sep, "/").split("/")[:-1])


_BODIES = ("body", "orelse", "finalbody", "handlers", "cases")


def _statements(tree: ast.Module) -> Iterator[ast.AST]:
    """Every statement of the module, nested ones included (an import is a statement: no expression holds one)."""
    stack: List[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        yield node
        for field in _BODIES:
            stack.extend(reversed(getattr(node, field, ())))


# what a module's own `__getattr__` (PEP 562) may hand out for a name read off it: any class
LAZY = "<a module's __getattr__>"
_KNOWN_MODULES = ("abc", "typing", "typing_extensions", "builtins")
_KNOWN_BASES = ("ABC", "ABCMeta", "Generic", "object", "type")


def _bound_twice(tree: ast.Module) -> Set[str]:
    """Names the module's own scope binds more than once (a def or class, an import, an assignment, a loop's,
    a `with`'s or an `except`'s target, at any depth of its blocks, or a `global` in a function): which of
    the bindings a use reads is not decided (`class C` as the fallback of `try: from m import C`)."""
    count: Dict[str, int] = {}

    def bind(name: Optional[str]) -> None:
        if name:
            count[name] = count.get(name, 0) + 1

    stack: List[ast.AST] = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bind(node.name)
            if not isinstance(node, ast.ClassDef):
                for sub in ast.walk(node):
                    if isinstance(sub, ast.Global):
                        for n in sub.names:
                            bind(n)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for a in node.names:
                bind(a.asname or a.name.split(".")[0])
            continue
        for sub in ast.iter_child_nodes(node):
            if isinstance(sub, ast.stmt) or isinstance(sub, ast.ExceptHandler):
                stack.append(sub)
            elif isinstance(sub, ast.expr):
                for n in ast.walk(sub):
                    if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
                        bind(n.id)
            elif isinstance(sub, ast.withitem) and sub.optional_vars is not None:
                for n in ast.walk(sub.optional_vars):
                    if isinstance(n, ast.Name):
                        bind(n.id)
        if isinstance(node, ast.ExceptHandler):
            bind(node.name)
    return {n for n, c in count.items() if c > 1}


class _File:
    """One parsed file: its imports and top-level classes, and how it resolves a receiver."""

    def __init__(self, path: str, tree: ast.Module, find_module, serving=None):
        self.path, self.tree, self._find = path, tree, find_module
        # the project's class serving a batch's attribute by code (Project.serving), for a read in this file
        self.serving: Callable[[str], Optional[Finding]] = serving or (lambda attr: None)
        self.modules: Dict[str, str] = {}  # local name -> dotted module (`import a.b` binds a -> a)
        self.froms: Dict[str, Tuple[str, str]] = {}  # local name -> (module, imported name)
        self.star_imports = False  # `from m import *` binds names no reader of the file sees
        self.stars: List[str] = []  # the modules star-imported, in order
        self.global_names: Set[str] = set()  # names a function rebinds through `global`
        for node in _statements(tree):
            if isinstance(node, ast.Global):
                self.global_names.update(node.names)
            elif isinstance(node, ast.Import):
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
                    else:
                        self.star_imports = True
                        self.stars.append(mod)
        self.classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}

    @functools.cached_property
    def aliases(self) -> Dict[str, str]:
        """Module-level names bound once to another name (`DSABackend = Backend`, a compatibility name)."""
        return {t.id: n.value.id for n in self.tree.body if isinstance(n, ast.Assign) and isinstance(n.value, ast.Name)
                for t in n.targets if isinstance(t, ast.Name) and t.id not in self.ambiguous}

    @functools.cached_property
    def lazy(self) -> bool:
        """Does the module define its own `__getattr__` (PEP 562): any name read off it may be what that returns?"""
        return any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == "__getattr__"
                   for n in self.tree.body) or "__getattr__" in self.froms

    def spellings_of(self, name: str) -> Set[str]:
        """The other names this file binds `name` to: imported under another name, or aliased at module level."""
        return {a for a, (_, original) in self.froms.items() if original == name and a != name} | {
            x for x, y in self.aliases.items() if y == name}

    @functools.cached_property
    def class_defs(self) -> List[ast.ClassDef]:
        """Every class of the file, at any depth (a class a function defines too)."""
        return [n for n in ast.walk(self.tree) if isinstance(n, ast.ClassDef)]

    @functools.cached_property
    def ambiguous(self) -> Set[str]:
        """Module-level names bound more than once (a class and its fallback import): built when first asked."""
        return _bound_twice(self.tree)

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
        not known (then only the name is known): a name the module binds more than once (a class and an
        import of another, a fallback) is not known."""
        if isinstance(expr, ast.Subscript):  # Generic[T], Base[int]
            expr = expr.value
        if isinstance(expr, ast.Name):
            if expr.id in self.ambiguous:
                return None, expr.id
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

    def unknown_base(self, expr: ast.AST) -> bool:
        """A base that names no class: not a class of this file, an import, or an attribute of an imported module
        (a call's result, a local alias, a parameter)."""
        path, name = self.resolve_class(expr)
        if path is not None or isinstance(expr, ast.Attribute) and name and self.module_of(expr.value):
            return False
        return not name or name in self.ambiguous or name not in self.froms and name not in self.classes \
            and name not in _BUILTIN_BASES

    def known_base(self, expr: ast.AST) -> bool:
        """A base that adds no unknown class to a hierarchy: `object`, `type`, `abc.ABC`, `abc.ABCMeta`,
        `typing.Generic[...]` (what `ABC` allows, `register`, is looked at on its own)."""
        if isinstance(expr, ast.Subscript):
            expr = expr.value
        if isinstance(expr, ast.Name) and expr.id in ("object", "type") and not self.binds(expr.id):
            return True
        if isinstance(expr, ast.Name) and expr.id in self.froms and expr.id not in self.ambiguous:
            mod, name = self.froms[expr.id]
            return mod in _KNOWN_MODULES and name in _KNOWN_BASES
        if isinstance(expr, ast.Attribute):
            return self.module_of(expr.value) in _KNOWN_MODULES and expr.attr in _KNOWN_BASES
        return False

    def torch_module_base(self, expr: ast.AST) -> bool:
        """`nn.Module`, `torch.nn.Module`, `Module` from torch.nn: a base whose `__getattr__` serves only the
        parameters, buffers and submodules its instance registers, never another object's attribute."""
        if isinstance(expr, ast.Name) and expr.id in self.froms and expr.id not in self.ambiguous:
            return self.froms[expr.id] == ("torch.nn", "Module")
        return isinstance(expr, ast.Attribute) and expr.attr == "Module" and self.module_of(expr.value) == "torch.nn"

    def binds(self, name: str) -> bool:
        return name in self.classes or name in self.modules or name in self.froms or name in self.ambiguous

    def enclosing(self, node: ast.AST, kinds) -> Optional[ast.AST]:
        up = self.parents.get(id(node))
        while up is not None and not isinstance(up, kinds):
            up = self.parents.get(id(up))
        return up

    def instance_of(self, expr: ast.AST) -> Optional[ast.ClassDef]:
        """The class whose method binds `expr` (a Name) as its first parameter (self), or None; `super()`
        there stands for the same instance."""
        zero_super = _builtin_call(expr, ("super",)) and not expr.args and not expr.keywords
        if not isinstance(expr, ast.Name) and not zero_super:
            return None
        fn = self.enclosing(expr, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return None
        cls = self.parents.get(id(fn))
        params = fn.args.posonlyargs + fn.args.args
        if not isinstance(cls, ast.ClassDef) or not params or not zero_super and params[0].arg != expr.id:
            return None
        if zero_super:
            expr = ast.Name(id=params[0].arg)
        if any(isinstance(d, ast.Name) and d.id in ("staticmethod", "classmethod") for d in fn.decorator_list):
            return None
        for node in ast.walk(fn):  # `self` rebound in the method: not provably the instance
            if isinstance(node, ast.Name) and node.id == expr.id and isinstance(node.ctx, (ast.Store, ast.Del)):
                return None
        return cls


class Project:
    """The Python files of one project, read once, for the questions one module's rewrite asks."""

    def __init__(self, module_path: str, scope: Union[Scope, str]):
        scope = Scope(scope) if isinstance(scope, str) else scope  # a root: every file under it
        self.module = os.path.realpath(module_path)
        self.scope, self.root = scope, scope.root
        self._texts: Optional[List[Tuple[str, bytes]]] = None
        self._big: List[Tuple[str, str]] = []  # (real path, relative path) of files over the read limit
        self._parsed: Dict[str, Optional[_File]] = {}
        self._subclasses: Dict[frozenset, List[Tuple[_File, ast.ClassDef]]] = {}
        self._by_path: Optional[Dict[str, bytes]] = None
        self._read: Dict[str, bytes] = {}  # _as_read's answers
        self._words: Optional[Dict[bytes, List[str]]] = None  # each word of texts() -> the paths holding it
        self.unreadable: List[Finding] = []  # files that name a name but cannot be checked
        self.memo: Dict[tuple, Any] = {}  # answers of module-level functions that read the project, once each

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

    def nested_module(self, name: str) -> Optional[str]:
        """The first file of the project (relative path) in a folder, or a file, bearing this module name below a
        folder of another name (`third_party/cp_utils.py`, `third_party/flashmla/python/sgl_kernel/flash_mla.py`):
        a path a fork puts on `sys.path`, or a build it installs, makes it importable though no import resolves it
        from the file. None where none does, or where it is the project's own top-level package (a module of it
        missing from a partial tree is what Python would not find)."""
        held = self._module_names.get(name)
        return held if held and held.removeprefix("src/").split("/")[0] not in (name, name + ".py") else None

    @functools.cached_property
    def _module_names(self) -> Dict[str, str]:
        """Every folder and file stem of the project's tree -> the first file (relative path) bearing it."""
        found: Dict[str, str] = {}
        self.texts()
        for path, _ in sorted([*self._texts, *self._big, (self.module, b"")]):
            rel = self.rel(path)
            parts = rel.split("/")
            for part in [*parts[:-1], parts[-1].removesuffix(".py")]:
                found.setdefault(part, rel)
        return found

    def computed_lookup(self, name: str) -> Optional[Finding]:
        """The first place of the project (the module's too) that fetches a callable by a name computed at run time
        and may fetch `name`: a lookup call (`getattr(worker, req.op)`, `pkgutil.resolve_name(config["launcher"])`,
        `pydoc.locate(path)`, `operator.methodcaller(op)`: round AP) or an item of a namespace (`globals()[key]`,
        `vars(type(self))[key]`, `Cls.__dict__.get(key)`: round AU), or a lookup builtin or a namespace kept as a value
        (`functools.reduce(getattr, path.split("."), mod)`, `_TABLE = vars(mod)`: round BC, any name); a name built
        by an f-string may be only what its text's parts allow (`f"forward_{mode}"` fetches no `_ring_step`). A
        function no file calls by name is no entry point where one may fetch it; None where none may."""
        own = self.__dict__.get("_checked")
        done = self.__dict__.setdefault("_lookups", {})  # (every lookup's key, read once per module checked)
        if id(own) not in done:
            files = [*self.files_naming(sorted(_LOOKUP_VALUES | _NAMESPACES)), *([own] if own is not None else [])]
            done[id(own)] = [(f, node, key) for f in files for node, key in _computed_lookups(f)
                             if not self._library_lookup(f, node)]
        return next((Finding(self.rel(f.path), node.lineno, _unparse(node)[:60])
                     for f, node, key in done[id(own)] if _may_spell(key, name)), None)

    def _library_lookup(self, f: _File, node: ast.AST) -> bool:
        """`getattr(logging, level)`: a lookup off a module the file imports from outside the project (by `import m`,
        never rebound: `global_names`) fetches that library's member, no function of the project."""
        if not (isinstance(node, ast.Call) and _unparse(node.func) == "getattr" and node.args):
            return False
        held = node.args[0]
        return isinstance(held, ast.Name) and held.id in f.modules and held.id not in f.global_names \
            and held.id not in f.ambiguous and self._find_module(f.path, f.modules[held.id].split(".")[0]) is None

    def files_naming(self, names: Iterable[str], also: Iterable[str] = ()) -> List[_File]:
        """The parsed files whose text names one of `names` as a word (and, given `also`, one of those too)."""
        names = [n for n in names if n]
        if not names or not (self.texts() or self._big):  # (no other file: nothing to encode or compile)
            return []
        needles = [n.encode("utf-8", "surrogateescape") for n in names]
        also = [n for n in also if n]
        first, second = self._naming_paths(names), self._naming_paths(also) if also else None
        out = []
        for path, data in self.texts():
            if path not in first or second is not None and path not in second:
                continue
            f = self._parsed_file(path, data)
            if f is not None:
                out.append(f)
        for path, rel in self._big:  # scanned in windows, never held: one that names a name is not known
            if path not in self._parsed and _names_any(path, needles):
                self._parsed[path] = None
                self.unreadable.append(Finding(rel, 0, f"is over the {read_limit()}-byte read limit "
                                                       f"(raise {files.MAX_BYTES_ENV} to read it)"))
        return out

    def _naming_paths(self, names: List[str]) -> Set[str]:
        """The paths of texts() naming one of `names` as a word (in its bytes or its identifiers as Python reads them):
        an index of every file's words, made once (a whole engine's 2,000 files were scanned again for each name
        asked: round AL's CI time); a name not of ASCII word characters is searched for in each."""
        if self._words is None:
            index: Dict[bytes, List[str]] = {}
            for path, data in self.texts():
                for word in set(_TOKEN.findall(data)).union(_TOKEN.findall(self._as_read(path, data))):
                    index.setdefault(word, []).append(path)
            self._words = index
        out: Set[str] = set()
        for name in names:
            key = name.encode("utf-8", "surrogateescape")
            if _TOKEN.fullmatch(key):
                out.update(self._words.get(key, ()))
                continue
            pattern = _Words([name])
            out.update(path for path, data in self.texts() if _names(data, [key], pattern)
                       or _names(self._as_read(path, data), [key], pattern))
        return out

    def files_matching(self, pattern: "re.Pattern[bytes]") -> List[_File]:
        """The parsed files whose text (or its identifiers as Python reads them) the byte pattern matches."""
        out = []
        for path, data in self.texts():
            f = self._parsed_file(path, data) if pattern.search(data) or pattern.search(self._as_read(path, data)) else None
            if f is not None:
                out.append(f)
        return out

    def _parsed_file(self, path: str, data: bytes) -> Optional[_File]:
        """The file's parse, made once per project (None: it does not parse)."""
        if path not in self._parsed:
            self._parsed[path] = self._parse(path, files.python_text(data))
        return self._parsed[path]

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
            return _File(path, guard.tree_of(text), self._find_module, self.serving)
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

    def family_of(self, f: _File, cls: ast.ClassDef) -> Set[Tuple[str, str]]:
        """(file, class) of every class whose methods may run with `self` an instance of cls, a class of any file
        of the project (the module's too): cls, its subclasses anywhere, and their bases through theirs (as
        instance_classes for the module's). Read once per class."""
        return {(g.path, c.name) for g, c in self.instance_family(f, cls)}

    def instance_family(self, f: _File, cls: ast.ClassDef) -> List[Tuple[_File, ast.ClassDef]]:
        """family_of's classes themselves, each with its file (cls first)."""
        done = self.__dict__.setdefault("_families", {})
        key = (f.path, cls.name)
        if key not in done:
            own = self.own()
            start = [(f, cls)] + self._derive({cls.name}, {key}, [own] if own is not None and own is not f else [])
            done[key] = start + self._ancestors_of(start, own)
        return done[key]

    def bases_in_order(self, f: _File, cls: ast.ClassDef, depth: int = 0) -> List[Tuple[_File, ast.ClassDef]]:
        """The project classes cls derives from, its bases left to right, each followed by its own (depth first,
        eight deep): where Python looks a method up first, nearly (C3's order differs only for a shared base)."""
        out: List[Tuple[_File, ast.ClassDef]] = []
        for b in cls.bases if depth < 8 else ():
            path, name = self._defining(*f.resolve_class(b))
            g = f if path == f.path else self._file_at(path) if path is not None else None
            if g is not None and name in g.classes:
                out.append((g, g.classes[name]))
                out.extend(self.bases_in_order(g, g.classes[name], depth + 1))
        return out

    def base_binds(self, own: Optional[_File], attr: str) -> Optional[str]:
        """Where a base of another file of one of the module's classes binds `attr` in its class body (a mixin's
        `_graph_records = {}`, every instance's: round AO), as `Class at file:line`; None where none does."""
        for cls in own.class_defs if own is not None else ():
            for g, c in self.bases_in_order(own, cls):
                hit = next((stmt for stmt in c.body if g.path != own.path and isinstance(stmt, (ast.Assign, ast.AnnAssign))
                            and attr in _stored_names(stmt)), None)
                if hit is not None:
                    return f"{c.name} at {self.rel(g.path)}:{hit.lineno}"
        return None

    def foreign_in_family(self, f: _File, cls: ast.ClassDef) -> Optional[str]:
        """A base of cls, of a subclass of it anywhere or of their bases, that names no class of the project nor
        `object` (`class Attn(Dispatch, nn.Module)` inheriting Dispatch's `forward`: torch calls it as `attn(...)`,
        round AO): its code; else None."""
        for g, c in self.instance_family(f, cls):
            for b in c.bases:
                path, _ = self._defining(*g.resolve_class(b))
                if path is None and _unparse(b) != "object":
                    return _unparse(b)
        return None

    def _derive(self, seeds: Set[str], keys: Optional[Set[Tuple[str, str]]] = None,
                more: List[_File] = ()) -> List[Tuple[_File, ast.ClassDef]]:
        keys = {(self.module, s) for s in seeds} if keys is None else set(keys)
        names = set(self.spellings(seeds))
        found: Dict[Tuple[str, str], Tuple[_File, ast.ClassDef]] = {}
        grew = True
        while grew:
            grew = False
            for f in [*self.files_naming(names), *self._lazy_readers(names), *more]:
                for cls in (n for n in ast.walk(f.tree) if isinstance(n, ast.ClassDef)):
                    key = (f.path, cls.name)
                    if key in found:
                        continue
                    for b in cls.bases:
                        path, name = self._defining(*f.resolve_class(b))
                        if (path, name) in keys or (path is None and name in names | {LAZY}) or f.unknown_base(b):
                            found[key] = (f, cls)
                            keys.add(key)
                            names |= self.spellings({cls.name})
                            grew = True
                            break
        return list(found.values())

    def _defining(self, path: Optional[str], name: str, depth: int = 0) -> Tuple[Optional[str], str]:
        """(file, name) of the class a resolved base names, through a package's re-exports (`from .backend import
        Backend` in `ops/__init__.py`: round T; `from backend import *`, round AR) and module-level aliases
        (`DSABackend = Backend`: AR), 6 deep; (None, LAZY) where a module's `__getattr__` (PEP 562) or a star import
        not followed to a class of the name may bind it."""
        f = self._facts_at(path) if depth < 6 else None
        if f is None or name in f.classes:
            return path, name
        if name in f.aliases:
            return self._defining(path, f.aliases[name], depth + 1)
        if name in f.froms:
            mod, original = f.froms[name]
            return self._defining(f._find(f.path, mod), original, depth + 1)
        for mod in f.stars:  # (the first star-imported module that leads to a class of the name)
            found = self._defining(f._find(f.path, mod), name, depth + 1)
            g = self._facts_at(found[0])
            if found[1] == LAZY or g is not None and found[1] in g.classes:
                return found
        return (None, LAZY) if f.lazy or f.stars else (path, name)  # (a star import not followed may bind it)

    def _lazy_readers(self, names: Set[str]) -> List[_File]:
        """The files naming a module that names one of `names` and serves names by its own `__getattr__` (PEP 562:
        `from attn import DSABackend` may be the backend, whatever it is called: round AR)."""
        lazy = [f for f in self.files_naming(sorted(names)) if f.lazy]
        words = {os.path.basename(os.path.dirname(f.path)) if os.path.basename(f.path) == "__init__.py"
                 else os.path.splitext(os.path.basename(f.path))[0] for f in lazy}
        return self.files_naming(sorted(words)) if words else []

    def _facts_at(self, path: Optional[str]) -> Optional[_File]:
        """The parsed file at `path` (the module's own facts for the module), or None."""
        return None if path is None else self.own() if path == self.module else self._file_at(path)

    def spellings(self, names: Iterable[str]) -> Set[str]:
        """`names` and every name the project binds one of them to in turn (`from runner import step as run_step`,
        then `from ops import run_step as attend_step`; `DSABackend = Backend`: round AR), 64 at most."""
        done = self.__dict__.setdefault("_spellings", {})
        key = frozenset(names)
        if key not in done:
            out, todo, own = set(key), list(key), self.own()
            while todo and len(out) < 64:
                n = todo.pop()
                for f in [*self.files_naming([n]), *([own] if own is not None else [])]:
                    new = f.spellings_of(n) - out
                    out |= new
                    todo += sorted(new)
            done[key] = out
        return done[key]

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

    def rivals(self, seeds: Set[str], method: str, own: Optional[Tuple[_File, str]] = None) \
            -> List[Tuple[_File, ast.ClassDef, ast.AST]]:
        """Definitions of `method` that an instance of a subclass of `seeds` may reach before the module's
        own: in another base of such a subclass (`class X(Other, Backend)`, in another file or, given the
        module's facts and the class defining `method` there, `own`, in the module itself: round J1), or one
        of that base's ancestors."""
        out = []
        mine = [(own[0], c) for c in own[0].class_defs if c.name in seeds and c.name != own[1]] \
            if own is not None and own[0] is not None else []
        subs = self.subclasses(seeds) + mine
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
                        if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef)) and d.name == method or isinstance(
                                d, (ast.Assign, ast.AnnAssign)) and method in _stored_names(d):  # (round T: `m = f`)
                            out.append((g, c, d))
                    out += [(h, c, node) for h, node in self._set_on_class(c.name, method)]
        return out

    def _set_on_class(self, cls: str, method: str) -> List[Tuple[_File, ast.AST]]:
        """`Cls.method = f` or a literal `setattr(Cls, "method", f)` anywhere in the project (round T: a mixin given the
        helper's name after its class body)."""
        out = []
        for f in self.files_naming([method], [cls]):
            for node in ast.walk(f.tree):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target] \
                    if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else []
                if any(isinstance(t, ast.Attribute) and t.attr == method and isinstance(t.value, ast.Name)
                       and t.value.id == cls for t in targets) or isinstance(node, ast.Call) and _unparse(node.func) \
                        in _SETATTRS and len(node.args) > 1 and isinstance(node.args[0], ast.Name) \
                        and node.args[0].id == cls and isinstance(node.args[1], ast.Constant) \
                        and node.args[1].value == method:
                    out.append((f, node))
        return out

    def instance_classes(self, seeds: Set[str]) -> Set[Tuple[str, str]]:
        """(file, class) of every class of another file whose methods may run with `self` an instance of the
        module's classes `seeds` or of a subclass of theirs anywhere in the project (each such class's bases,
        through theirs). Read once per set of seeds."""
        done = self.__dict__.setdefault("_instance_classes", {})
        if frozenset(seeds) not in done:
            own = self.own()
            start = [(own, c) for c in own.class_defs if c.name in seeds] + self.subclasses(seeds) if own else []
            # (a class a function of the module defines too: a factory combining a mixin with the backend, round Y)
            done[frozenset(seeds)] = {(f.path, c.name) for f, c in start + self._ancestors_of(start, own)}
        return done[frozenset(seeds)]

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

    def foreign_base(self, seeds: Set[str]) -> Optional[str]:
        """A base, of the module's classes `seeds`, of a subclass of theirs anywhere in the project or of an ancestor
        of those, that is no class of the project nor one of Python's that runs no method by another name (torch's
        `nn.Module` runs `forward` on `module(...)`, an autograd Function on `Fn.apply(...)`): its code, or None."""
        own = self.__dict__.get("_checked") or self.own()  # (the module as checked: its text may not be on disk)
        if own is None:
            return "?"
        start = [(own, c) for c in own.class_defs if c.name in seeds] + self.subclasses(seeds)
        for g, c in start + self._ancestors_of(start, own):
            for b in c.bases:
                path, name = g.resolve_class(b)
                h = own if path == self.module else self._file_at(path) if path is not None else None
                if not (h is not None and name in h.classes or g.known_base(b)):
                    return _unparse(b)
        return None

    def _file_at(self, path: str) -> Optional[_File]:
        if path not in self._parsed:
            if self._by_path is None:
                self._by_path = dict(self.texts())
            data = self._by_path.get(path)
            self._parsed[path] = self._parse(path, files.python_text(data)) if data is not None else None
        return self._parsed[path]

    def overrides(self, seeds: Set[str], method: str) -> List[Tuple[_File, ast.ClassDef, ast.AST]]:
        """Definitions of `method` in the classes `subclasses(seeds)` finds, and in any class of another file with a
        base that names no class the reader knows (a call, `backend_class("dsa")`; an alias, `DSABase =
        backend.Backend`; a class decorator's parameter, `class OnThisPlatform(cls)`): it may be one of them
        (round T; default-deny)."""
        classes = [*self.subclasses(seeds), *((f, c) for f in self.files_naming([method]) for c in f.class_defs
                                              if any(f.unknown_base(b) for b in c.bases))]
        out = []
        for f, cls in {(id(f), id(c)): (f, c) for f, c in classes}.values():
            for d in cls.body:
                if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef)) and d.name == method:
                    out.append((f, cls, d))
                elif isinstance(d, (ast.Assign, ast.AnnAssign)) and method in _stored_names(d):
                    out.append((f, cls, d))
        return out

    def value_reads(self, name: str, seeds: Set[str]) -> List[Tuple[_File, ast.Attribute]]:
        """`x.name` read in another file other than as the function of a call (`call_impl(b.name, ctx)`), on a
        receiver that may be one of the module's classes `seeds` or an instance of theirs (as attribute_writes
        reads receivers): what calls it, with which keywords, is not seen (round T)."""
        related = {(self.module, s) for s in seeds} | {(f.path, c.name) for f, c in self.subclasses(seeds)}
        return [(f, n) for f in self.files_naming([name]) for n in ast.walk(f.tree)
                if isinstance(n, ast.Attribute) and n.attr == name and isinstance(n.ctx, ast.Load)
                and not (isinstance(f.parents.get(id(n)), ast.Call) and f.parents[id(n)].func is n)
                and self._may_reach(f, n.value, related, set(), True)]

    # -- writes that rebind a name at run time --------------------------------------------------
    def attribute_writes(self, attrs: Set[str], seeds: Set[str], modules: Set[str]) -> List[Finding]:
        """Assignments, deletions and literal setattr/delattr of an attribute named in `attrs` (also through
        `object.__setattr__`, `type.__setattr__`, `x.__setattr__`, `builtins.setattr`), in other files, whose
        receiver may be one of the module's classes `seeds` (or their subclasses), the module itself, or a
        module named in `modules` (the kernel's): every receiver but an instance of an unrelated class,
        another class, or another module of the project."""
        related = {(self.module, s) for s in seeds} | {(f.path, c.name) for f, c in self.subclasses(seeds)}
        out = []
        packages = {m.split(".")[0] for m in modules}  # (a write on a package names its module, or its class)
        words = {a for a in attrs if not a.startswith("__")}
        dunders = {a for a in attrs if a.startswith("__")}
        own = os.path.splitext(os.path.basename(self.module))[0]  # (`backend.sgl_kernel = shim` names the module)
        files = {id(f): f for f in [*self.files_naming(words - packages),
                                    *self.files_naming(packages & words, dunders | {own})]}
        # a file that names none of them may still change a function it is handed (`target.__code__ = ...` in a
        # generic hot-patch helper): there a receiver is related by what the project hands it (_passed_related)
        handed = {id(f): f for f in self.files_naming(dunders & _CODE_DUNDERS) if id(f) not in files}
        for f in [*files.values(), *handed.values()]:
            unknown = id(f) not in handed
            for node in ast.walk(f.tree):
                targets = _written_targets(node)
                if isinstance(node, ast.Call):
                    hit = _setattr_call(f, node)
                    for verb, receiver, name in [hit] if hit is not None else _patch_calls(f, node):
                        if isinstance(name, ast.Constant) and name.value in attrs \
                                and (receiver is None or self._may_reach(f, receiver, related, modules, unknown)):
                            out.append(Finding(self.rel(f.path), node.lineno, f"`{verb}(..., {name.value!r}, ...)`"))
                    continue
                for t in _flatten(targets):
                    if isinstance(t, ast.Attribute) and t.attr in attrs and self._may_reach(f, t.value, related, modules,
                                                                                          unknown) \
                            and not _forwarding_decoration(f, node, t):
                        out.append(Finding(self.rel(f.path), t.lineno, f"`{_unparse(t)}` is assigned"))
        return out

    def holder_writes(self, attr: str, seeds: Set[str], own: bool = True) -> List[Finding]:
        """Assignments of `<x>.<attr>` in other files where x is self in one of the module's classes `seeds` or a
        subclass, a parameter (whatever its callers hand it: a model runner clearing the holder for an idle batch),
        or a local that may be one: the writes that may contradict what this module declares the holder holds.
        (Another class's own `self.<attr>`, or an item of its own table, is that class's holder.) own=False: not
        the subclasses' own `self.<attr>` (graph-replay reads those: reach.replay_writes)."""
        related = {(self.module, s) for s in seeds} | {(f.path, c.name) for f, c in self.subclasses(seeds)}
        keys, names = self._hierarchy(frozenset(related))
        out = []
        for f in self.files_naming([attr]):
            for node in ast.walk(f.tree):
                for t in _flatten(_written_targets(node)):
                    if not (isinstance(t, ast.Attribute) and t.attr == attr):
                        continue
                    cls = f.instance_of(t.value)
                    if own and ((f.path, cls.name) in keys or cls.name in names) if cls is not None else \
                            _parameter_or_element(f, t.value) is not None \
                            or self._may_reach(f, t.value, related, set(), False):
                        out.append(Finding(self.rel(f.path), t.lineno, f"`{_unparse(t)}` is assigned"))
        return out

    def _find_module(self, path: str, mod: str) -> Optional[str]:
        """Where `mod`, imported from path, lies in the project (a bound method: a file parsed with it reaches its
        project through `_find.__self__`)."""
        return _real(find_module(path, mod, self.scope))

    def attribute_stores(self, attr: str) -> List[Finding]:
        """Round X/Y: every write of `<x>.<attr>` in the project where x is not `self` (a config's field lowered, a
        module's constant set from another file, an object's attribute set by another file's function), by any
        spelling: an assignment, `+=`, `del`, a literal `setattr`, `vars(x).update(attr=...)`,
        `x.__dict__[...] = v`. Read once per name."""
        done = self.__dict__.setdefault("_attribute_stores", {})
        own = self.__dict__.get("_checked")  # (the module as checked: files_naming reads the others)
        key = (attr, id(own))
        if key not in done:
            done[key] = [Finding(self.rel(f.path), getattr(n, "lineno", 0), f"`{_unparse(n)[:60]}` writes `{attr}`")
                         for f in [*self.files_naming([attr]), *([own] if own is not None else [])]
                         for n in ast.walk(f.tree) if _stores_attribute(n, attr)]
        return done[key]

    def class_binds(self, attr: str, code_only: bool = False) -> Optional[Finding]:
        """A class body of another file binding `attr` (a def, a property, a descriptor, a value): read as
        `self.<attr>` on an instance of it, that is what any code gets (round X: a base's or a subclass's property
        serving the width)."""
        for f in self.files_naming([attr]):
            for cls in f.class_defs:
                stmt = _class_body_binding(cls, attr, code_only)
                if stmt is not None:
                    return Finding(self.rel(f.path), stmt.lineno, f"{cls.name} binds `{attr}` in its body")
        return None

    def serving(self, attr: str) -> Optional[Finding]:
        """A class of the project (this module's too) serving `attr` by code (_class_body_code: a property, a
        descriptor, a converter, a store of a computed value, a validator, an attribute hook). Read off an object
        whose class is not known (a batch handed in), `x.<attr>` may be what that code computes (round AH: a verify
        batch's `seq_lens` property counting the draft tokens; round AJ: `__post_init__`, attrs converters). Read once
        per name."""
        done = self.__dict__.setdefault("_serving", {})
        own = self.__dict__.get("_checked")
        key = (attr, id(own))
        if key not in done:
            naming = [*self.files_naming([attr]), *([own] if own is not None else [])]
            hook = self._attribute_hook()  # (a base's hook: any field)
            done[key] = next((Finding(self.rel(f.path), stmt.lineno, f"{cls.name} serves `{attr}` by code")
                              for f in naming for cls in f.class_defs
                              for stmt in [_class_body_code(cls, attr, f) or self._machinery(f, cls, attr)]
                              if stmt is not None), None) or next(
                (Finding(self.rel(f.path), n.lineno, f"`{_unparse(n)[:60]}` gives objects' `{attr}` a value it makes")
                 for f in naming for n in _outside_stores(f, attr, f is not own)), None) or (
                Finding(hook.path, hook.line, f"{hook.what} may serve `{attr}`") if hook is not None else None)
        return done[key]

    def _machinery(self, f: _File, cls: ast.ClassDef, attr: str) -> Optional[ast.AST]:
        """What of a library may rewrite `attr` as a record of cls declaring it is made (round AY): a base, its own
        or a project base's, outside the project and not known plain (pydantic's BaseModel runs each field's
        validators, an alias's of another module too), or an `Annotated[...]` field whose metadata is a call; or, on a
        class deriving from cls anywhere in the project (or a base of one), such a base or a class decorator not a
        plain record's: a library collects the fields a plain mixin declares (`VerifyStep(StepLengths, BaseModel)`,
        round AZ)."""
        if not any(isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name) and s.target.id == attr
                   for s in cls.body):
            return None
        chain = [(f, cls), *self.bases_in_order(f, cls)]
        derived = [(g, c) for g, c in self.instance_family(f, cls) if c is not cls]
        return next((b for g, c in chain + derived for b in c.bases if self._library_base(g, b)), None) or next(
            (s for s in cls.body if isinstance(s, ast.AnnAssign) and _annotated_call(s.annotation)), None) or next(
            (d for g, c in derived for d in c.decorator_list if not _plain_class_decorator(d, g)), None)

    def _library_base(self, f: _File, base: ast.AST) -> bool:
        """A base naming no class of the project, nor one whose making reads no field (`object`, `ABC`, `Generic`,
        typing's records, a builtin, torch's `nn.Module`): its machinery is not read."""
        path, name = self._defining(*f.resolve_class(base))
        g = self._file_at(path) if path is not None else None
        if g is not None and name in g.classes or f.known_base(base) or f.torch_module_base(base):
            return False
        expr = base.value if isinstance(base, ast.Subscript) else base
        return not (isinstance(expr, ast.Name) and not f.binds(expr.id) and expr.id in _BUILTIN_BASES
                    or f.module_of(expr) in _PLAIN_LIBRARY_BASES)

    def _attribute_hook(self) -> Optional[Finding]:
        """The project's first hook that may serve any field of its instances (the class and the hook: `what`): a
        `__getattribute__`, a `__setattr__` not handing its arguments on as they are, a `__getattr__` not returning
        the name read off what it holds (a view adding the drafts to every `*_lens` field, round AL), or a method
        storing on self by a name it is handed a value it computes (`super().__init__(**{k: v + n ...})`,
        `setattr(self, k, v + n)`: round AL). Read once."""
        if "_hook" not in self.__dict__:
            self._hook = next((Finding(self.rel(f.path), d.lineno, f"{cls.name}'s `{getattr(d, 'name', None) or _unparse(d)[:40]}`")
                               for f in self.files_naming(["__setattr__", "__getattribute__", "__getattr__", "setattr",
                                                           "__dict__", "super", "register_buffer", "__init_subclass__",
                                                           "register_parameter", "_buffers", "_parameters"])
                               for cls in f.class_defs for d in cls.body
                               if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef))
                               and (d.name in ("__setattr__", "__getattribute__", "__getattr__") and _hook_serves(d)
                                    or _stores_any_computed(d) or d.name == "__init_subclass__" and _sets_up(d))
                               or _binds_hook(d)), None) or self._class_machinery()
        return self._hook

    def _class_machinery(self) -> Optional[Finding]:
        """Class machinery set up outside a `class` statement (round AQ), whose hooks no class body shows: an
        attribute hook grafted onto a class (`Cfg.__getattribute__ = cap`, `setattr(Cfg, "__getattr__", f)`), or a
        class made at run time (`type(name, bases, namespace)`, `types.new_class`, `dataclasses.make_dataclass`)."""
        for f in self.files_naming(sorted(_HOOKS | _CLASS_MAKERS)):
            for n in ast.walk(f.tree):
                grafted = [t for t in _flatten(_written_targets(n)) if isinstance(t, ast.Attribute) and t.attr in _HOOKS] \
                    if isinstance(n, (ast.Assign, ast.AnnAssign, ast.AugAssign)) else []
                named = isinstance(n, ast.Call) and _unparse(n.func) in ("setattr", "type.__setattr__") \
                    and len(n.args) == 3 and isinstance(n.args[1], ast.Constant) and n.args[1].value in _HOOKS
                made = isinstance(n, ast.Call) and (_unparse(n.func) == "type" and len(n.args) == 3
                                                    or _unparse(n.func).rsplit(".", 1)[-1] in _CLASS_MAKERS - {"type"})
                if grafted or named or made:
                    return Finding(self.rel(f.path), n.lineno, f"`{_unparse(n)[:50]}` (a class's hooks set up outside "
                                   "a class statement)")
        return None

    def self_computed(self, attr: str) -> Optional[Finding]:
        """A class of another file changing `self.<attr>` after it is made: `+=`, a value reading the field itself
        (a config's `__post_init__` lowering its own `index_topk`: round Z), or any value but a parameter (or an
        attribute of one) outside `__init__`."""
        for f in self.files_naming([attr]):
            for fn in (n for n in ast.walk(f.tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
                params = {a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs}
                for node in ast.walk(fn):
                    if not isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                        continue
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    if not any(isinstance(t, ast.Attribute) and t.attr == attr and isinstance(t.value, ast.Name)
                               and t.value.id == "self" for t in _flatten(targets)):
                        continue
                    v = node.value
                    reads_itself = v is not None and any(isinstance(n, ast.Attribute) and n.attr == attr and isinstance(
                        n.value, ast.Name) and n.value.id == "self" for n in ast.walk(v))
                    while isinstance(v, ast.Attribute):
                        v = v.value
                    handed = isinstance(v, ast.Name) and v.id in params - {"self"}
                    if isinstance(node, ast.AugAssign) or reads_itself or fn.name != "__init__" and not handed:
                        return Finding(self.rel(f.path), node.lineno, f"`{_unparse(node)[:60]}`")
        return None

    def related_holder_writes(self, attr: str, seeds: Set[str]) -> List[Finding]:
        """Round Y: in other files, a base or a subclass of the module's classes `seeds` giving `self.<attr>` (the
        holder the kernel's callers read) anything but an object made where it is given: a construction (a
        capitalised callee of no `**` of another object), None, or a parameter of its method. (A base in another
        file keeping one record per batch size, a subclass filing the holder's object in its own table, hand back
        an earlier batch's.)"""
        related = {(self.module, s) for s in seeds} | {(f.path, c.name) for f, c in self.subclasses(seeds)}
        keys, _ = self._hierarchy(frozenset(related))
        out = []
        for f in self.files_naming([attr]):
            if f.path == self.module:
                continue
            for cls in (c for c in f.class_defs if (f.path, c.name) in keys):
                for fn in (d for d in cls.body if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef))
                           and not graph_update(d.name)):  # (a replay's: graph-replay reads them, replay_writes)
                    params = {a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs} - {
                        n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)} \
                        if _plainly_decorated(f, fn) else set()  # (a decorator may hand it another record: AF)
                    # (a parameter bound again first is not what the call hands: `metadata = self._pinned or
                    # metadata`, round AD)
                    for node in ast.walk(fn):
                        value = getattr(node, "value", None)
                        for t in _flatten(_written_targets(node)):
                            if isinstance(t, ast.Attribute) and t.attr == attr and isinstance(t.value, ast.Name) \
                                    and t.value.id == "self" and not _made_here(value, params):
                                out.append(Finding(self.rel(f.path), t.lineno, f"`{_unparse(t)}` is given "
                                                   f"`{_unparse(value)[:50] if value is not None else '?'}`"))
        return out

    def calls_in_defs(self, name: str, attrs: Set[str]) -> List[Optional[str]]:
        """For the defs of `name` in other files (a module's functions, its classes' methods): the names they call,
        and None for each assignment of an attribute named in `attrs`."""
        out: List[Optional[str]] = []
        for f in self.files_naming([name]):
            for d in [x for top in f.tree.body for x in ([top, *top.body] if isinstance(top, ast.ClassDef) else [top])]:
                if not (isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef)) and d.name == name):
                    continue
                for n in ast.walk(d):
                    if any(isinstance(t, ast.Attribute) and t.attr in attrs for t in _written_targets(n)
                           if not isinstance(n, ast.Delete)):
                        out.append(None)
                    elif isinstance(n, ast.Call):
                        out.append(n.func.attr if isinstance(n.func, ast.Attribute) else getattr(n.func, "id", None)
                                   or "")
        return out

    def vendored(self, module: str) -> bool:
        """Does the project ship `module` itself (`third_party/fast_topk_ops/__init__.py`, put on sys.path at run
        time, which the module finder cannot place): a file of it, under no folder below the root that is a
        distribution of its own (a pyproject.toml, setup.py or setup.cfg: a monorepo's kernel package is a
        library)? Its code is the fork's, not a library's (round T). Once per module name (the row trace asks of
        every prefix of every callee)."""
        key = ("vendored", module)
        if key not in self.memo:
            self.memo[key] = self._ships(module)
        return self.memo[key]

    def _ships(self, module: str) -> bool:
        tails = ("/" + module.replace(".", "/") + ".py", "/" + module.replace(".", "/") + "/__init__.py")
        root = os.path.realpath(self.root)
        for path in [p for p, _ in self.texts()] + [p for p, _ in self._big]:
            if not path.replace(os.sep, "/").endswith(tails):
                continue
            folder = os.path.dirname(path)
            while folder.startswith(root + os.sep):
                if any(os.path.isfile(os.path.join(folder, n)) for n in ("pyproject.toml", "setup.py", "setup.cfg")):
                    break
                folder = os.path.dirname(folder)
            else:
                return True
        return False

    def attribute_served(self, attr: str) -> Optional[Finding]:
        """Where another file makes `<x>.<attr>` something other than a value its function was handed (round T: a
        batch class serving the indices by a property, or masking or sorting them in its `__init__`): a class
        body binding the name (a def, a property, a descriptor), an assignment of the attribute from anything but
        a bare parameter, or a setattr of it (or by a computed name)."""
        for f in self.files_naming([attr]):
            for node in ast.walk(f.tree):
                if isinstance(node, ast.ClassDef):
                    hook = next((d for d in node.body if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef))
                                 and d.name in ("__setattr__", "__getattr__", "__getattribute__")), None)
                    if hook is not None:  # (a class of a file naming it serves or rewrites attributes by code: x2)
                        return Finding(self.rel(f.path), hook.lineno, f"{node.name} defines `{hook.name}`")
                    stmt = _class_body_binding(node, attr)
                    if stmt is not None:
                        return Finding(self.rel(f.path), stmt.lineno, f"{node.name} binds `{attr}` in its body")
                hit = _setattr_call(f, node) if isinstance(node, ast.Call) else None
                literal = hit is not None and isinstance(hit[2], ast.Constant)
                if hit is not None and (hit[2].value == attr if literal else self.declared_classes(f, hit[1]) is None):
                    return Finding(self.rel(f.path), node.lineno, f"`{hit[0]}(...)` may set `{attr}`")  # (by a
                    # computed name: on a receiver no declaration types, as a config object's is)
                for t in _flatten(_written_targets(node)):
                    if isinstance(t, ast.Attribute) and t.attr == attr and not self._bare_parameter(f, node):
                        return Finding(self.rel(f.path), t.lineno, f"`{_unparse(t)}` is assigned a computed value")
                if isinstance(node, ast.Attribute) and node.attr == attr and isinstance(node.ctx, ast.Load) \
                        and _written_in_place(f, node):  # (`self.topk_indices[:, live:] = -1` after storing it: round Y)
                    return Finding(self.rel(f.path), node.lineno, f"`{_unparse(node)}` is written in place")
        return None

    @staticmethod
    def _bare_parameter(f: _File, node: ast.AST) -> bool:
        """`self.x = x`: a plain assignment of a parameter of its function, as the trace takes its own, the name
        never bound again in the function nor written in place by a method of it (round AW: `q, idx = q[order],
        idx[order]` before `self.indices = idx`)."""
        value = getattr(node, "value", None)
        fn = f.enclosing(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        if not (isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(value, ast.Name) and fn is not None
                and value.id in {a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs}):
            return False
        for n in ast.walk(fn):
            if isinstance(n, ast.Name) and n.id == value.id and not isinstance(n.ctx, ast.Load) \
                    or isinstance(n, (ast.Global, ast.Nonlocal)) and value.id in n.names:
                return False
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Name) \
                    and n.func.value.id == value.id and n.func.attr.endswith("_") and not n.func.attr.startswith("__"):
                return False
        return True

    def reflection(self, names: Set[str], seeds: Set[str], modules: Set[str], kernel: str,
                   chain: Set[str] = frozenset(), handed: Optional[Finding] = None) -> List[Finding]:
        """Reflective writes in other files: setattr/delattr with a computed name (or through
        `object.__setattr__`, `x.__setattr__`, an alias of setattr) on a receiver that may be related,
        exec/eval, writes through vars()/`__dict__` of such a receiver (`[k] = v`, `.update(...)`, an alias
        of it), writes to sys.modules, and a class made by `type(name, bases, ns)` / `types.new_class` from
        a base that may be related (an override no file spells). Read: every file that names one of `names`,
        imports the module or is imported by it (docs/soundness.md `whole-project` says what that leaves); and
        writes through namespaces got at run time (namespace_writes), where `chain` adds the names the call
        reads the kernel through. `handed`, where a class of seeds is handed off as a value (class_escape): every
        file spelling a setter is read too."""
        related = {(self.module, s) for s in seeds} | {(f.path, c.name) for f, c in self.subclasses(seeds)}
        out = []
        files = {id(f): f for f in self.files_naming(names) + self.importers() + self.imported()}
        wide = {id(f) for f in self.files_naming(_SETTERS)} - set(files) if handed is not None else set()
        files.update({id(f): f for f in self.files_naming(_SETTERS) if id(f) in wide})
        out += self.namespace_writes(set(names) | set(chain), related, modules, kernel)
        # (the modules the kernel is read through, not the kernel: a function handed on is replaced only through
        # a namespace, which namespace_writes reads; benchmarks hand the kernel to their timers)
        out += self.module_escapes({m for m in modules if not m.endswith("." + kernel)})
        for f in files.values():
            for node in ast.walk(f.tree):
                what = None
                hit = _setattr_call(f, node) if isinstance(node, ast.Call) else None
                patched = [p for p in _patch_calls(f, node) if not isinstance(p[2], ast.Constant) and (
                    p[1] is None or self._may_reach(f, p[1], related, modules))] if isinstance(node, ast.Call) else []
                if hit is not None:
                    verb, receiver, name = hit
                    if not isinstance(name, ast.Constant) and self._may_reach(f, receiver, related, modules):
                        what = f"`{verb}` with a computed name"
                elif patched:
                    what = f"`{patched[0][0]}` with a computed target"
                elif _builtin_call(node, ("exec", "eval")) and not _inert_code(f, node):  # compile() alone runs nothing
                    what = f"`{node.func.id}()`"
                elif isinstance(node, ast.Name) and node.id in ("setattr", "delattr") and isinstance(node.ctx, ast.Load) \
                        and not (isinstance(f.parents.get(id(node)), ast.Call) and f.parents[id(node)].func is node):
                    what = f"`{node.id}` taken as a value"  # `s = setattr`, `map(setattr, ...)`: on anything
                elif isinstance(node, ast.Call) and (_builtin_call(node, ("type",)) and len(node.args) == 3
                                                     or _typing_name(f, node.func) == "new_class"):
                    bases = node.args[1] if len(node.args) > 1 else next(
                        (k.value for k in node.keywords if k.arg == "bases"), None)
                    if bases is not None and (not isinstance(bases, (ast.Tuple, ast.List)) or any(
                            isinstance(b, ast.Starred) or self._may_reach(f, b, related, modules) for b in bases.elts)):
                        what = f"a class made by `{_unparse(node.func)}(...)` from `{_unparse(bases)}`"
                if what:
                    if id(f) in wide:
                        what += f" (the class is handed on by {handed.what} at {handed.where()})"
                    out.append(Finding(self.rel(f.path), getattr(node, "lineno", 0), what))
        return out

    def namespace_writes(self, names: Set[str], related: Set[Tuple[str, str]], modules: Set[str],
                         kernel: str) -> List[Finding]:
        """Writes through a namespace got at run time (namespaces.Handles: default-deny), in every file that may
        get one (a computed import, sys.modules, `__globals__`, `inspect.getmodule`, a function made from code)
        or that names the kernel, the helper, the kernel's module, or imports this module or is imported by it."""
        key = (frozenset(names), frozenset(related), frozenset(modules), kernel)
        done = self.__dict__.setdefault("_namespace_writes_done", {})
        if key not in done:
            done[key] = self._namespace_writes(names, related, modules, kernel)
        return done[key]

    def _namespace_writes(self, names: Set[str], related: Set[Tuple[str, str]], modules: Set[str],
                          kernel: str) -> List[Finding]:
        stems = {m.rsplit(".", 1)[-1] for m in modules if f"{m}.{kernel}" in modules or m.endswith("." + kernel)}
        packages = {m.rsplit(".", 1)[-1] for m in modules if f"{m}.{kernel}" not in modules
                    and any(o.startswith(m + ".") for o in modules)}
        words = {n for n in names | stems if n and not n.startswith("__")} - packages  # (a package's: every file)
        scoped = {id(f): f for f in [*filter(None, [self.own()]), *self.files_naming(words), *self.importers(),
                                     *self.imported()]}
        shadows = self.shadows(modules)
        files = {**scoped, **{id(f): f for f in self.files_naming(_HANDLE_WORDS + (["sys.path"] if shadows else []))},
                 **{id(f): f for f in self.files_matching(_RUNS_CODE)}}
        spelled = (set(names) | stems | {p for m in modules for p in m.split(".")}) - {""}
        known = self.related_module_names(modules)
        aliases = self.module_aliases(known, stems | packages)
        known |= {".".join(a.split(".")[:k]) for a in aliases for k in range(1, a.count(".") + 2)}
        holders = {a.split(".")[0] for a in aliases}
        # a file that binds a related module object by an import (not a function of it) may read a member off
        # it by a computed name or write through it (`getattr(sgl_kernel, sub)`, `setattr(ops.sparse_attn, ...)`)
        files.update({id(f): f for f in self.files_naming(packages | holders, also=_MEMBER_WORDS + ["partial"])
                      if _binds_module(f, known)})
        gate = self.named_by_code(self.lookup_words(modules, kernel))
        out = []
        if self._by_path is None:
            self._by_path = dict(self.texts())
        for f in files.values():
            data = self._by_path.get(f.path)
            if data is not None and not _HANDLE_TOKENS.search(data) and not _HANDLE_TOKENS.search(self._as_read(f.path, data)):
                continue  # (no way to a namespace is spelled in it)
            rel = self.rel(f.path)[:-3].split("/")
            name = ".".join(rel[:-1] if rel[-1] == "__init__" else rel)
            facts = namespaces.Facts(known, spelled, f.path == self.module, gate, name, id(f) in scoped,
                                     is_test_code(self.rel(f.path)), shadows, aliases)
            handles = namespaces.Handles(f, lambda r, unknown=True, f=f: self._may_reach(f, r, related, modules, unknown),
                                         facts,
                                         lambda name, f=f: self._spelled_elsewhere(f, name))
            out += [Finding(self.rel(f.path), line, what) for line, what in handles.writes()]
        return out

    def module_aliases(self, known: Set[str], words: Set[str]) -> Set[str]:
        """Other dotted names of a related module: a module-level import in a file of the project that binds
        one (`from sgl_kernel import flash_mla as sparse_attn` in ops/__init__.py makes `ops.sparse_attn`;
        `import backend as dsa_backend` in engines.py makes `engines.dsa_backend`), under each name the file
        is imported by. What is read off those names is the kernel's module (or the backend)."""
        stem = os.path.splitext(os.path.basename(self.module))[0]
        out = set()
        for f in self.files_naming(words | {stem}):
            rel = self.rel(f.path)
            for node in f.tree.body:
                for local, target in _import_bindings(node, rel):
                    if target in known:
                        out |= {f"{n}.{local}" for n in _module_names(rel) if "/" not in n}
        return out

    def shadows(self, modules: Set[str]) -> bool:
        """Does a file of the project (aside or not) bear a kernel module's name, as a path's tail
        (`compat/sgl_kernel/flash_mla.py`, `overlay/flash_mla.py`): put on the import path, it is imported in
        the kernel module's place."""
        tails = {"/" + m.replace(".", "/") + ext for m in modules for ext in (".py", "/__init__.py")}
        tails |= {"/" + m.rsplit(".", 1)[-1] + ".py" for m in modules if "." in m}
        paths = [p for p, _ in self.texts()] + [p for p, _ in self._big]
        return any(("/" + os.path.relpath(p, self.root).replace(os.sep, "/")).endswith(t) for p in paths for t in tails)

    def _spelled_elsewhere(self, f: _File, name: str) -> bool:
        """May a file of the project other than f use f's `name`: does one spell it and f's module name (its
        stem, or a package above it that may re-export the name: it must import one, or name it to a computed
        import, to reach the name)?"""
        done = self.__dict__.setdefault("_spelled_elsewhere_done", {})
        if (f.path, name) not in done:
            done[(f.path, name)] = self._spells(f, name)
        return done[(f.path, name)]

    def _spells(self, f: _File, name: str) -> bool:
        stem = os.path.splitext(os.path.basename(f.path))[0]
        if stem == "__init__":
            stem = os.path.basename(os.path.dirname(f.path))
        own = self.own()
        if own is not None and own is not f and {name, stem} <= {
                n.id if isinstance(n, ast.Name) else n.attr if isinstance(n, ast.Attribute) else
                n.value if isinstance(n, ast.Constant) and isinstance(n.value, str) else None for n in ast.walk(own.tree)
        } | {part for n in ast.walk(own.tree) if isinstance(n, ast.alias) for part in (n.name.split(".") + [n.asname])}:
            return True
        packages = self.rel(f.path).split("/")[:-1]  # (a package's `__init__` may re-export the name: `import *`)
        return any(g is not f for g in self.files_naming([name], also=[stem, *packages])) \
            or any(f.path != p for p, _ in self._big)

    def tensor_interceptors(self) -> List[Finding]:
        """What in the project sees or changes the tensor ops the derived lengths add: a `TorchFunctionMode` or
        `TorchDispatchMode`, `__torch_function__` / `__torch_dispatch__`, a tensor subclass (through any
        chain of the project's classes, however `Tensor` is imported) overriding, or taking from a mixin of
        the project, a method those lengths call (`derived.TENSOR_METHODS`, by `def` or by assignment), and
        `torch.Tensor.<method>` replaced (an op counter, an allocation guard, a subclass refusing a view)."""
        out = []
        tensors, classes = self._tensor_classes
        for name, (f, c) in sorted(classes.items()):
            bases = {_unparse(b).rsplit(".", 1)[-1] for b in c.bases}
            mixins = set().union(*[_class_body_names(classes[b][1]) for b in bases if b in classes and b not in tensors])
            why = interceptor(name, bases, _class_body_names(c) | mixins, name in tensors, c)
            if why and not (name in tensors and self.never_made(_family(name, tensors, classes))):
                out.append(Finding(self.rel(f.path), c.lineno, why))
        for f in [*filter(None, [self.own()]), *self.files_naming(["Tensor"])]:
            for node in ast.walk(f.tree):
                targets = [t for t in _written_targets(node) if isinstance(t, ast.Attribute)]
                if isinstance(node, ast.Call) and namespaces.qualified(f, node.func) == "builtins.setattr" and len(
                        node.args) > 1 and isinstance(node.args[1], ast.Constant):
                    targets.append(ast.Attribute(value=node.args[0], attr=str(node.args[1].value), ctx=ast.Store()))
                for t in targets:
                    if t.attr in derived.TENSOR_METHODS and namespaces.qualified(f, t.value) == "torch.Tensor":
                        out.append(Finding(self.rel(f.path), node.lineno, f"`torch.Tensor.{t.attr}` is replaced"))
        return out

    @functools.cached_property
    def _tensor_classes(self) -> Tuple[Set[str], Dict[str, Tuple["_File", ast.ClassDef]]]:
        """The names of the project's tensor subclasses (through any chain of its classes), and every class of
        the files naming an interceptor, `Tensor` or one of those subclasses."""
        classes = self._project_classes(INTERCEPTORS + ["Tensor"])
        tensors = {name for name, (f, c) in classes.items()
                   if any(namespaces.qualified(f, b).rsplit(".", 1)[-1] == "Tensor" for b in c.bases)}
        for _ in range(8):  # subclasses of subclasses, in any file of the project
            more = {name for name, (f, c) in self._project_classes(sorted(tensors)).items()
                    if any(_unparse(b).rsplit(".", 1)[-1] in tensors for b in c.bases)} - tensors
            if not more:
                break
            tensors |= more
            classes.update(self._project_classes(sorted(more)))
        return tensors, classes

    def tensor_never_made(self, name: str, text: str) -> bool:
        """never_made for the tensor subclass `name` of the module itself (whose text is `text`, as checked)
        and the project's subclasses of it."""
        tensors, classes = self._tensor_classes
        family = _family(name, tensors | {name}, classes)
        checked = self.checked_file(text)
        return checked is not None and not _makes_or_looks_up(checked, family) and self.never_made(family)

    def checked_file(self, text: str) -> Optional[_File]:
        """The module as it is checked (its text may not be the file's on disk), parsed once."""
        if self.__dict__.get("_checked_text") != text:
            tree = bounded.python_facts(text)
            self._checked_text, self._checked = text, _File(self.module, tree, self._find_module, self.serving) if tree else None
        return self._checked

    def never_made(self, family: Set[str]) -> bool:
        """No tensor of these classes (a tensor subclass and its subclasses) can exist in the serving process:
        every file of the project that may reach them (this module, every file spelling one of their names or
        a way to a namespace) reads their names only as a subclass's base, the class an `isinstance` or
        `issubclass` tests, or an annotation, and reads no member by a computed name (`getattr(m, name)`,
        `vars(m)`, `m.__dict__`, `globals()`, `getmembers`); every file of the project is read."""
        if self._big or self.unreadable:
            return False
        files = [*filter(None, [self.own()]), *self.files_naming(sorted(family)), *self.files_matching(_MEMBER_TOKENS)]
        return not any(_makes_or_looks_up(f, family) for f in files)

    def _project_classes(self, names: List[str]) -> Dict[str, Tuple["_File", ast.ClassDef]]:
        """name -> (file, class) of every class of the project (this module too) in a file naming one of `names`."""
        out = {}
        for f in [*filter(None, [self.own()]), *self.files_naming(names)]:
            for node in ast.walk(f.tree):
                if isinstance(node, ast.ClassDef):
                    out.setdefault(node.name, (f, node))
        return out

    def frame_enumerations(self) -> List[Finding]:
        """Reads of a frame's locals other than by a literal name (`f.f_locals["frame"]`, `.get("self")`), and every
        way they may be written: they see a local the rewrite binds (`len(f_locals)`, a snapshot of them all)."""
        return [Finding(p, line, f"{what} reads a frame's locals") for p, line, what, _ in self._frame_access()]

    def frame_writes(self) -> List[Finding]:
        """Ways a frame's locals may be written, in this module or the project's others (_frame_access: anything
        but a read by a literal key or a copy by a builtin); any of them may rebind the indices' name between the
        call's arguments, so the derived lengths read it again only where none is seen."""
        return [Finding(p, line, f"{what} may write a frame's locals") for p, line, what, write in self._frame_access()
                if write]

    def _frame_access(self) -> List[Tuple[str, int, str, bool]]:
        """(file, line, what, may write) for each spelled way to a frame's locals: `f_locals` as an attribute or a
        string (`getattr(frame, "f_locals")`, `attrgetter("f_locals")`, a constant holding it), `getargvalues`,
        `capture_locals`, `LocalsToFast` however bound or spelled. Default-deny: only `f_locals[<literal>]`,
        `.get(<literal>)` and a builtin's copy (`dict(...)`, `len(...)`) are reads, and only the first two are
        narrow. A name built at run time (`"f_" + "locals"`) is not seen (docs/soundness.md, assumed)."""
        if "_frame_found" not in self.__dict__:
            out = []
            for f in [*filter(None, [self.own()]), *self.files_matching(_FRAME_BYTES)]:
                for node in ast.walk(f.tree):
                    found = _frame_word(f, node)
                    if found is not None:
                        out.append((self.rel(f.path), getattr(node, "lineno", 0), f"`{_unparse(node)[:80]}`", found))
            self._frame_found = out
        return self._frame_found

    def lookup_words(self, modules: Set[str], kernel: str) -> Set[str]:
        """The words a name computed at run time must be built from to name the kernel or its module: the
        kernel's name and each kernel module's own name (not its packages': `sgl_kernel.` alone names every
        module of the distribution). This module is named by its name and its package's together
        (named_by_code: `attention.dsa_backend`, not a word like `tool` alone)."""
        return {kernel} | {m.rsplit(".", 1)[-1] for m in modules if f"{m}.{kernel}" in modules}

    def named_by_code(self, words: Set[str]) -> bool:
        """Does a string of the project's code that may name a module (no blank, not a docstring; a part of an
        f-string or of a `+` counts; a dotted name, a path, a comma list, a glob or a pattern alike; each word
        of a string split on blanks, `"a.b c.d".split()`) hold one of
        `words` as a word, or this module's name with its package's? If none does, a
        name computed at run time can name them only from data (a config file, the environment): assumed not
        to (docs/soundness.md `whole-project`)."""
        key = frozenset(w for w in words if w)
        parts = self.rel(self.module)[:-3].split("/")  # this module: named by its name and its package's together
        own = set(parts[-2:]) if len(parts) > 1 and parts[-1] != "__init__" else {parts[-1]}
        done = self.__dict__.setdefault("_named_by_code_done", {})
        if key not in done:
            done[key] = bool(key) and any(
                isinstance(node, ast.Constant) and isinstance(node.value, str)
                and not isinstance(f.parents.get(id(node)), ast.Expr) and any(
                    _NAME_LIKE.fullmatch(token) and (key & set(_WORD_SPLIT.split(token)) or own <= set(_WORD_SPLIT.split(token)))
                    for token in _tokens(f, node))
                for f in [*filter(None, [self.own()]), *self.files_naming(key | own)] for node in ast.walk(f.tree))
        return done[key]

    def related_module_names(self, modules: Set[str]) -> Set[str]:
        """The dotted names a write through a namespace must not reach: the kernel's modules, this module (as
        its path from the root and each dotted tail, also under the root's own name), and their packages."""
        rel = self.rel(self.module)
        parts = (rel[:-3] if rel.endswith(".py") else rel).split("/")
        if parts[-1] == "__init__":
            parts = parts[:-1]
        full = [os.path.basename(self.root)] + parts
        names = set(modules) | {".".join(parts[i:]) for i in range(len(parts))} | {".".join(full)}
        return {".".join(n.split(".")[:k]) for n in names for k in range(1, len(n.split(".")) + 1)}

    def importers(self) -> List[_File]:
        """The files that import this module by its name (its stem among an import's dotted parts)."""
        stem = os.path.splitext(os.path.basename(self.module))[0]
        return [f for f in self.files_naming([stem]) if any(
            isinstance(n, ast.Import) and any(stem in a.name.split(".") for a in n.names)
            or isinstance(n, ast.ImportFrom) and (stem in (n.module or "").split(".") or any(a.name == stem for a in n.names))
            for n in ast.walk(f.tree))]

    def module_escapes(self, modules: Set[str]) -> List[Finding]:
        """The kernel's module object handed on (an argument, a stored or returned value, an element): what the
        code it reaches does to it is not followed (`instrument(fm)` may rebind every `*_fwd` of it)."""
        out = []
        stem = os.path.splitext(os.path.basename(self.module))[0]
        for f in [*filter(None, [self.own()]), *self.files_naming({m.rsplit(".", 1)[-1] for m in modules} | {stem})]:
            for node in ast.walk(f.tree):
                if not (isinstance(node, (ast.Name, ast.Attribute)) and isinstance(node.ctx, ast.Load)):
                    continue
                mod = f.module_of(node)
                if mod is None or not (mod in modules or mod.rsplit(".", 1)[-1] == stem and f is not self.own()
                                       and self._find_module(f.path, mod) == self.module):
                    continue
                if _escapes(f, node):
                    out.append(Finding(self.rel(f.path), node.lineno, f"the module `{_unparse(node)}`, which the "
                                                                      "kernel is read through, is handed on"))
        return out

    def _may_reach(self, f: _File, receiver: ast.AST, related: Set[Tuple[str, str]], modules: Set[str],
                   unknown: bool = True) -> bool:
        """May `receiver`, in file f, be one of the related classes (or an instance of one), the module,
        or a module in `modules`? Only a receiver the file binds to something proven else is not."""
        cls = f.instance_of(receiver)
        if cls is not None:  # `self.x = ...` shadows a method only on an instance of a related class, or of one
            keys, names = self._hierarchy(frozenset(related))  # they derive from (its methods run on theirs)
            if (f.path, cls.name) in keys or cls.name in names or self.open_class(f.path, cls.name):
                return True
            fn = f.enclosing(receiver, (ast.FunctionDef, ast.AsyncFunctionDef))
            return self.self_is_anything(f, cls, fn)  # `Tuner.install(b)`: self is b
        if isinstance(receiver, ast.Name) and receiver.id in f.classes:
            return receiver.id in f.ambiguous or (f.path, receiver.id) in related
        if isinstance(receiver, ast.Attribute) and isinstance(receiver.value, ast.Name) and receiver.value.id in f.classes \
                and self._may_reach(f, receiver.value, related, modules, unknown):
            return True  # `Backend.forward`: a method of a related class (another class's attribute: anything)
        bound = isinstance(receiver, ast.Name) and (receiver.id in f.modules or receiver.id in f.froms)
        if not bound and not (isinstance(receiver, ast.Attribute) and f.module_of(receiver.value) is not None):
            owner = self._classmethod_of(f, receiver)
            if owner is not None:  # a classmethod's `cls`: its class or one deriving from it (a class object)
                keys, names = self._hierarchy(frozenset(related))
                return (f.path, owner.name) in keys or owner.name in names or owner.name in f.ambiguous
            declared = self.declared_classes(f, receiver)
            if declared is not None:  # an instance of the classes its type names: related only through them
                return any(self._declared_reaches(k, related) for k in declared)
            # a parameter, a local, a call's result: anything (where it may be); a parameter is at least what
            # a call of its function passes there
            return unknown or self._passed_related(f, receiver, related, modules)
        mod = f.module_of(receiver)
        return self._dotted_reaches(f, mod, related, modules) if mod else True

    def _passed_related(self, f: _File, receiver: ast.AST, related: Set[Tuple[str, str]], modules: Set[str],
                        depth: int = 0) -> bool:
        """Is receiver a parameter (or a loop variable over one: `def trace(*fns): for fn in fns`) of a function
        that a call anywhere in the project hands a related object (`trace(Backend.forward)`), or that the
        project takes as a value (its calls not known)?"""
        param = _parameter_or_element(f, receiver)
        if param is None or depth > 2:
            return False
        fn, index, name, star = param
        if index < 0:
            return True  # a method's own instance (or class): whatever it is called on
        for g in {id(x): x for x in [f, *filter(None, [self.own()]), *self.files_naming([fn.name])]}.values():
            for node in ast.walk(g.tree):
                spelled = isinstance(node, ast.Name) and node.id == fn.name and isinstance(node.ctx, ast.Load) \
                    or isinstance(node, ast.Attribute) and node.attr == fn.name and isinstance(node.ctx, ast.Load)
                if not spelled:
                    continue
                call = g.parents.get(id(node))
                if not (isinstance(call, ast.Call) and call.func is node):
                    return True  # taken as a value: what it is called with is not known
                given = call.args[index:] if star else call.args[index:index + 1] + [
                    k.value for k in call.keywords if k.arg == name or k.arg is None]
                if any(isinstance(a, ast.Starred) for a in call.args[:index + 1]):
                    return True
                for arg in given:
                    arg = arg.value if isinstance(arg, ast.Starred) else arg
                    if self._may_reach(g, arg, related, modules, False) \
                            or self._passed_related(g, arg, related, modules, depth + 1):
                        return True
        return False

    def _declared_reaches(self, k: Tuple[Optional[str], str], related: Set[Tuple[str, str]]) -> bool:
        """May an instance declared as the class k be one of the related classes, or the module? Related
        are the helper's hierarchy both ways; where that hierarchy holds a class from outside the project
        (whose bases are not known), every class from outside it too; and an open class of the project
        (open_class: a Protocol, a proxy, an outside base, an ABC something registers with) always."""
        keys, names = self._hierarchy(frozenset(related))
        path, name = k
        if k in keys or name in names:
            return True
        if path is None:  # a class from outside the project
            return bool(names) or name in self.registered()
        return self.open_class(path, name) or self.forwarding(path, name)

    def forwarding(self, path: str, name: str) -> bool:
        """Does the project's class (path, name) define `__setattr__`, `__delattr__`, `__getattr__` or
        `__getattribute__` in its hierarchy? An instance of it may hand a write on to an object it wraps
        (`Handle(backend)._forward = f`), in a file reflection may not read (one that names nothing: its
        `setattr(self._target, name, value)`). (Not asked of `self` in its own methods: there a write is the
        hook's own, read where it is.)"""
        h = self.own() if path == self.module else self._file_at(path)
        if h is None or name not in h.classes:
            return True
        _, _, walked = self._walk_up([(h, h.classes[name])], {(path, name)})
        return any(isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef)) and d.name in _HOOKS
                   or isinstance(d, ast.Assign) and _HOOKS & _stored_names(d) for _, c in walked for d in c.body)

    def _dotted_reaches(self, g: _File, dotted: str, related: Set[Tuple[str, str]], modules: Set[str],
                        depth: int = 0) -> bool:
        """May what `dotted` (a module, or a module's names, as file g imports them) names be related? Through
        the project's modules: a class there is related or not; a module of the project is the module or
        not; a name bound to an import is followed (`from kernels import fm` where kernels.py does `import
        sgl_kernel.flash_mla as fm` is the kernel's module); any other global (an instance, a function's
        result, a name bound twice or not found) may be anything. A module outside the project that is not
        the kernel's is not (its attributes are no class of the project)."""
        if dotted in modules or depth > 16:
            return True
        lead = dotted[:len(dotted) - len(dotted.lstrip("."))]
        parts = dotted[len(lead):].split(".") if dotted[len(lead):] else []
        for n in range(len(parts), -1, -1):
            if not n and not lead:
                break
            target = self._find_module(g.path, lead + ".".join(parts[:n]))
            if target is None:
                continue
            rest = parts[n:]
            if not rest:
                return target == self.module
            h = self.own() if target == self.module else self._file_at(target)
            name = rest[0]
            if h is None or name in h.ambiguous:
                return True
            if name in h.classes:
                return len(rest) > 1 or (h.path, name) in related  # (an attribute of a class: anything)
            if name in h.modules:
                return self._dotted_reaches(h, ".".join([h.modules[name], *rest[1:]]), related, modules, depth + 1)
            if name in h.froms:
                mod, imported = h.froms[name]
                base = (mod if mod.endswith(".") else mod + ".") + imported
                return self._dotted_reaches(h, ".".join([base, *rest[1:]]), related, modules, depth + 1)
            return True  # a global holding anything, a function, a name a star import may bind
        return bool(lead)  # a relative import that does not resolve: unknown; a module outside the project: no

    def _classmethod_of(self, f: _File, receiver: ast.AST) -> Optional[ast.ClassDef]:
        if not isinstance(receiver, ast.Name):
            return None
        fn = f.enclosing(receiver, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return None
        owner = f.parents.get(id(fn))
        a = fn.args
        if not isinstance(owner, ast.ClassDef) or [x.arg for x in (a.posonlyargs + a.args)[:1]] != [receiver.id] \
                or not any(isinstance(d, ast.Name) and d.id == "classmethod" for d in fn.decorator_list):
            return None
        assigned, other = _bindings(f, fn)
        return None if receiver.id in assigned or receiver.id in other else owner

    def attribute_hooks(self, names: Set[str]) -> List[Finding]:
        """Writes, in any file of the project, of an attribute named in `names` (`__setattr__`, `__class__`...) on
        any receiver: an assignment, a deletion, a literal setattr. A class whose hooks are set from outside its
        body, or an object whose class is swapped, stores and reads its attributes another way. Once per set."""
        done = self.__dict__.setdefault("_hooks_found", {})
        if frozenset(names) not in done:
            done[frozenset(names)] = self._attribute_hooks(names)
        return done[frozenset(names)]

    def _attribute_hooks(self, names: Set[str]) -> List[Finding]:
        out = []
        for f in [*filter(None, [self.own()]), *self.files_naming(names)]:
            for node in ast.walk(f.tree):
                hit = _setattr_call(f, node) if isinstance(node, ast.Call) else None
                if hit is not None and isinstance(hit[2], ast.Constant) and hit[2].value in names:
                    out.append(Finding(self.rel(f.path), node.lineno, f"`{hit[0]}(..., {hit[2].value!r}, ...)`"))
                for t in _flatten(_written_targets(node)):
                    if isinstance(t, ast.Attribute) and t.attr in names:
                        out.append(Finding(self.rel(f.path), t.lineno, f"`{_unparse(t)}` is assigned"))
        return out

    def logging_extended(self, logger: str, source: str) -> List[Finding]:
        """Where the project may hand a log record's arguments to code of its own, or replace what logs them: an
        extension point of the standard library's logging spelled anywhere (a handler, filter, formatter, record
        factory, logger class, adapter, a configuration), or an assignment to an attribute of a name `logging`,
        of a logger method's name, or of the module's logger `logger` (the record's mapping then reaches more
        than its format)."""
        out = []
        words = [w for w in [*_LOGGING_HOOKS, *_LOGGING_KINDS, "logging", logger] if w]
        own = self._parse(self.module, source)  # (the module as the analysis reads it, written or not)
        for f in [*filter(None, [own]), *self._files_matching(re.compile(rb"|".join(w.encode() for w in words)), b"")]:
            for node in ast.walk(f.tree):
                name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
                if name in _LOGGING_HOOKS or name and name.endswith(_LOGGING_KINDS):
                    out.append(Finding(self.rel(f.path), node.lineno, f"`{_unparse(node)[:60]}` extends logging"))
                for t in _flatten(_written_targets(node)):
                    root = t
                    while isinstance(root, (ast.Attribute, ast.Subscript)):
                        root = root.value
                    if isinstance(t, ast.Attribute) and (t.attr in _LOG_METHODS | {logger} or
                                                         isinstance(root, ast.Name) and root.id == "logging"):
                        out.append(Finding(self.rel(f.path), t.lineno, f"`{_unparse(t)}` is assigned"))
        return out

    def opaque_classes(self) -> List[Finding]:
        """Classes of the project whose bases the reader cannot name (`class P(BACKENDS["dsa"])`, `class F(base)`
        in a factory handed the base): they may derive from any class, so what they define is not read as a
        subclass's."""
        if "_opaque" not in self.__dict__:
            self._opaque = []
            for f in [*filter(None, [self.own()]), *self._files_matching(_OPAQUE_BASES, b"class")]:
                for node in ast.walk(f.tree):
                    if isinstance(node, ast.ClassDef) and any(_opaque_base(f, node, b) for b in node.bases):
                        self._opaque.append(Finding(self.rel(f.path), node.lineno, f"`class {node.name}`"))
        return self._opaque

    def self_is_anything(self, f: _File, cls: ast.ClassDef, fn: ast.AST) -> bool:
        """May `self` in the method `fn` of the class `cls` be something else than an instance of it? Where the
        method may be taken from the class as a function and called with another first argument: through the
        class or one deriving from it (`Tuner.install(b)`, `cls.install(b)`, `type(x).install(b)`,
        `x.__class__.install`; `Base.install(self)` from a method of a class deriving from it, whose own `self`
        is an instance, is not), read from its namespace where the class is named (`vars(Tuner)`,
        `Tuner.__dict__`, `getattr(Tuner, name)`, `inspect.getmembers(Tuner)`), or handed to a decorator the
        project defines (of the method, or of the class: it may graft the methods anywhere). A class handed to
        other code as a value whose functions that code takes out of it by reflection is that code's
        reflective read: its write with them (`setattr(target, name, fn)`) is read on its own (reflection)."""
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return True
        cache = self.__dict__.setdefault("_escapes", {})
        key = (f.path, cls.name, fn.name)
        if key not in cache:
            cache[key] = False  # (while it is decided: a method calling itself through the class adds no caller)
            cache[key] = any(self._project_defined(f, d) for d in fn.decorator_list + cls.decorator_list) \
                or self._taken_unbound(f, cls, fn.name)
        return cache[key]

    def _project_defined(self, f: _File, expr: ast.AST) -> bool:
        """Is the decorator `expr` a function the project defines (it may call what it decorates with anything)?"""
        while isinstance(expr, ast.Call):
            expr = expr.func
        root = expr
        while isinstance(root, ast.Attribute):
            root = root.value
        if not isinstance(root, ast.Name):
            return True
        if root.id in f.modules or root.id in f.froms:
            mod = f.module_of(expr)
            if mod is None or mod.startswith("."):
                return True
            parts = mod.split(".")
            return any(self._find_module(f.path, ".".join(parts[:n])) is not None for n in range(len(parts), 0, -1))
        return any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Assign)) and (
            n.name == root.id if not isinstance(n, ast.Assign) else root.id in _stored_names(n)) for n in f.tree.body)

    def _family(self, cls: ast.ClassDef) -> Tuple[Set[str], List[_File]]:
        """The names of the class and of the classes deriving from it (by name: a same-named class counts too),
        and the files naming one of them; once per class name."""
        cache = self.__dict__.setdefault("_families", {})
        if cls.name not in cache:
            family = {cls.name}
            grew = True
            while grew and len(family) < 256:
                grew = False
                naming = self.files_naming(sorted(family))
                for g in naming:
                    for c in ast.walk(g.tree):
                        if isinstance(c, ast.ClassDef) and c.name not in family and any(
                                _typing_name(None, b.value if isinstance(b, ast.Subscript) else b) in family
                                for b in c.bases):
                            family.add(c.name)
                            grew = True
            cache[cls.name] = (family, naming)
        return cache[cls.name]

    def _taken_unbound(self, f: _File, cls: ast.ClassDef, method: str) -> bool:
        family, naming = self._family(cls)
        own = self.own()
        cache = self.__dict__.setdefault("_uses_of", {})
        if cls.name not in cache:  # what the files naming the class do with it: walked once per class
            files = {id(g): g for g in naming + ([own] if own is not None else [])}
            cache[cls.name] = self._class_uses(files.values(), family)
        handed, methods, walked = cache[cls.name]
        if handed or "*" in methods or any(self._unbound(g, node, family) for g, node in methods.get(method, ())):
            return True
        if f.path not in walked:
            _, more, _ = self._class_uses([f], family)
            if "*" in more or any(self._unbound(g, node, family) for g, node in more.get(method, ())):
                return True
        for g in self._files_matching(_Through(method), method.encode("utf-8", "surrogateescape")):
            for node in ast.walk(g.tree):
                if isinstance(node, ast.Attribute) and node.attr == method and _class_object(node.value, family) \
                        and self._unbound(g, node, family):
                    return True
        return False

    def _class_uses(self, files: Iterable[_File], family: Set[str]
                    ) -> Tuple[bool, Dict[str, List[Tuple[_File, ast.Attribute]]], Set[str]]:
        """In `files`: is a class of `family` handed to a function the project defines (`graft(target, Tuner)`:
        it may take any method out of it); the methods read through one of them as a class object, each with
        where (a namespace read, `vars(Tuner)`, `Tuner.__dict__`, `getattr(Tuner, name)`, is "*": any); and
        the files walked."""
        handed = False
        methods: Dict[str, List[Tuple[_File, ast.Attribute]]] = {}
        walked: Set[str] = set()
        for g in files:
            walked.add(g.path)
            for node in ast.walk(g.tree):
                if isinstance(node, ast.Attribute) and _class_object(node.value, family):
                    methods.setdefault(node.attr, []).append((g, node))
                    if node.attr == "__dict__" and _class_object(node.value, family, by_name=True):
                        methods["*"] = []
                elif isinstance(node, ast.Call) and (_builtin_call(node, ("vars", "getattr", "dir"))
                                                     or _typing_name(None, node.func) == "getmembers"):
                    if node.args and _class_object(node.args[0], family, by_name=True):
                        name = node.args[1] if _builtin_call(node, ("getattr",)) and len(node.args) > 1 else None
                        key = name.value if isinstance(name, ast.Constant) and isinstance(name.value, str) else "*"
                        methods.setdefault(key, []).append((g, node))
                if not handed and isinstance(node, ast.Call) and any(
                        _class_object(a, family, by_name=True) for a in (*node.args, *(k.value for k in node.keywords))) \
                        and self._project_defined(g, node.func):
                    handed = True  # handed to the project's code (`graft(target, Tuner)`): it may take any method
        return handed, methods, walked

    def _unbound(self, g: _File, node: ast.AST, family: Set[str]) -> bool:
        """Is the method read at `node` (`Tuner.install`) called other than with the `self` of a method of the
        family, itself an instance (`Base.__init__(self)`), as its first argument?"""
        if not isinstance(node, ast.Attribute):
            return True  # getattr(Tuner, "install")
        up = g.parents.get(id(node))
        return not (isinstance(up, ast.Call) and up.func is node and up.args and self._own_self(g, up.args[0], family))

    def _files_matching(self, pattern, needle: bytes) -> List[_File]:
        """The parsed files whose text matches `pattern` (as its bytes, or as Python reads it), which holds
        `needle`."""
        out = []
        for path, data in self.texts():
            if not _names(data, [needle], pattern) and not _names(self._as_read(path, data), [needle], pattern):
                continue
            if path not in self._parsed:
                self._parsed[path] = self._parse(path, files.python_text(data))
            if self._parsed[path] is not None:
                out.append(self._parsed[path])
        return out

    def _own_self(self, g: _File, arg: ast.AST, family: Set[str]) -> bool:
        """Is `arg` the `self` of a method of a class of `family`, itself an instance (`Base.__init__(self)`)?"""
        cls = g.instance_of(arg)
        if cls is None or cls.name not in family:
            return False
        fn = g.enclosing(arg, (ast.FunctionDef, ast.AsyncFunctionDef))
        return not self.self_is_anything(g, cls, fn)

    # -- receivers of a declared type ------------------------------------------------------------------
    def declared_classes(self, f: _File, receiver: ast.AST) -> Optional[List[Tuple[Optional[str], str]]]:
        """The classes a name's type is declared as, each (file, class name) for a class of the project, or
        (None, name) for one imported from outside it: a parameter annotated with them (`config:
        PretrainedConfig`, `Optional[...]`, a union), never rebound in its function; or a local, or a global
        the function only reads, bound only to constructor calls of them (every binding of the name in the
        file, functions included). None where nothing declares it, or the declaration names anything
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
        if receiver.id not in assigned and receiver.id not in other:
            # a global (or a closure's name) the function only reads: every binding of that name anywhere in
            # the file (click's `_local = threading.local()`, then `_local.__dict__.setdefault(...)`)
            assigned, other = _bindings(f, f.tree)
        values = assigned.get(receiver.id)
        if not values or receiver.id in other:
            return None  # bound otherwise too (a loop, `with ... as`, an import, a `global`, ...)
        out: List[Tuple[Optional[str], str]] = []
        for v in values:
            cls = self._class_named(f, v.func) or self._outside_made(f, v) if isinstance(v, ast.Call) else None
            if cls is None:
                return None
            out.append(cls)
        return out

    def _outside_made(self, f: _File, call: ast.Call) -> Optional[Tuple[None, str]]:
        """(None, name) for a call of a name of the standard library with constants only (`threading.local()`,
        `logging.getLogger("x")`): no object of the project reaches it, so what it makes is no class or
        instance of the project. None otherwise (a module the project holds, or shadows, or any other)."""
        mod = f.module_of(call.func)
        if mod is None or mod.startswith(".") or mod.split(".")[0] not in getattr(sys, "stdlib_module_names", ()) \
                or self._find_module(f.path, mod.split(".")[0]) is not None:
            return None
        if not all(isinstance(a, ast.Constant) for a in [*call.args, *(k.value for k in call.keywords)]) \
                or any(k.arg is None for k in call.keywords):
            return None
        return None, _unparse(call.func).rsplit(".", 1)[-1]

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
        """The related classes and every class they derive from, and their metaclasses (whose instances they
        are: `cls` in a metaclass's methods is one of them) with theirs: (file, name) of those of the project,
        and the names of those it cannot resolve (a class from outside the project, one not found, a name its
        module binds twice; `object`, `ABC`, `Generic` and `type` add none): an instance declared as one of them
        may be an instance of a related class."""
        cache = self.__dict__.setdefault("_hierarchies", {})
        if related in cache:
            return cache[related]
        own = self.own()
        todo = [(own, own.classes[n]) for p, n in related if p == self.module and own is not None and n in own.classes]
        todo += [(g, c) for g, c in self.subclasses({n for p, n in related if p == self.module})
                 if (g.path, c.name) in related]
        keys, names, _ = self._walk_up(todo, set(related))
        cache[related] = (keys, names)
        return keys, names

    def _walk_up(self, todo: List[Tuple[_File, ast.ClassDef]], keys: Set[Tuple[str, str]]
                 ) -> Tuple[Set[Tuple[str, str]], Set[str], List[Tuple[_File, ast.ClassDef]]]:
        """From the classes `todo`, through their bases and metaclasses: (file, name) of every class of the
        project reached (`keys` given included), the names of those not resolved, and the classes walked."""
        own = self.own()
        names: Set[str] = set()
        walked: List[Tuple[_File, ast.ClassDef]] = []
        while todo and len(keys) < 4096:
            g, c = todo.pop()
            walked.append((g, c))
            for b in list(c.bases) + [k.value for k in c.keywords if k.arg == "metaclass"]:
                if g.known_base(b):
                    continue
                path, name = g.resolve_class(b)
                h = own if path == self.module else self._file_at(path) if path is not None else None
                if h is None or name not in h.classes or name in h.ambiguous:
                    names.add(name or _unparse(b))
                elif (h.path, name) not in keys:
                    keys.add((h.path, name))
                    todo.append((h, h.classes[name]))
        return keys, names, walked

    def open_class(self, path: str, name: str) -> bool:
        """May an instance of the project's class (path, name) be anything, whatever its name says? A
        structural type (a `Protocol`, directly or through its bases: any object with its members satisfies
        it, a module too), a class deriving from a class outside the project (whose behaviour is not read: a
        proxy such as `wrapt.ObjectProxy` hands every write on to the object it wraps), or one some
        `X.register(...)` may make the virtual base of any class (`ABCMeta.register`). A project class's own
        `__setattr__` that hands writes on is read like any code: its `setattr(self._target, name, value)` is a
        computed write on a receiver that may be anything (reflection reads every file that spells one)."""
        cache = self.__dict__.setdefault("_open", {})
        if (path, name) not in cache:
            h = self.own() if path == self.module else self._file_at(path)
            if h is None or name not in h.classes or name in h.ambiguous:
                cache[(path, name)] = True
                return True
            _, unresolved, walked = self._walk_up([(h, h.classes[name])], {(path, name)})
            registered = self.registered()
            cache[(path, name)] = bool(unresolved) or any(
                c.name in registered or any(_is_protocol(b) for b in c.bases) for g, c in walked)
        return cache[(path, name)]

    def registered(self) -> Set[str]:
        """Names of classes some file of the project (the module too) calls `register` on, or decorates with
        it (`X.register(C)`, `@X.register`): under `ABCMeta` that makes C a virtual subclass of X
        (`isinstance(c, X)` holds), so an instance declared as X, or as a class deriving from it, may be
        anything. A class of the project that defines `register` itself (a registry's classmethod) is not
        ABCMeta's."""
        if "_registered" not in self.__dict__:
            out: Set[str] = set()
            own = self.own()
            spelled = _Through("register", re.compile(rb"\b[A-Z]\w*\s*$"))
            for f in self._files_matching(spelled, b"register") + ([own] if own is not None else []):
                for node in ast.walk(f.tree):
                    if not (isinstance(node, ast.Attribute) and node.attr == "register"):
                        continue
                    v = node.value
                    name = v.id if isinstance(v, ast.Name) else v.attr if isinstance(v, ast.Attribute) else None
                    if name is None or not name[:1].isupper():
                        continue
                    path, cname = f.resolve_class(v)
                    h = (own if path == self.module else self._file_at(path)) if path is not None else None
                    if h is not None and cname in h.classes and cname not in h.ambiguous:
                        _, _, walked = self._walk_up([(h, h.classes[cname])], {(h.path, cname)})
                        if any(isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef)) and d.name == "register"
                               for _, c in walked for d in c.body):
                            continue  # its own register
                    out.add(name)
            self._registered = out
        return self._registered


def _setattr_call(f: _File, node: ast.Call) -> Optional[Tuple[str, ast.AST, Optional[ast.AST]]]:
    """(how it is spelled, the receiver, the name) of a call that sets or deletes an attribute: `setattr(x, n,
    v)` (also `builtins.setattr`, an import of it), `object.__setattr__(x, n, v)`, `type.__setattr__(...)`,
    `super().__setattr__(n, v)` / `x.__setattr__(n, v)`; None for any other call."""
    func = node.func
    verb = None
    if isinstance(func, ast.Name):
        verb = func.id if func.id in ("setattr", "delattr") and func.id not in f.froms else (
            f.froms[func.id][1] if func.id in f.froms and f.froms[func.id][0] == "builtins"
            and f.froms[func.id][1] in ("setattr", "delattr") else None)
        if verb is None or not node.args:
            return None
        return verb, node.args[0], node.args[1] if len(node.args) > 1 else None
    if not isinstance(func, ast.Attribute):
        return None
    if func.attr in ("setattr", "delattr") and f.module_of(func.value) == "builtins":
        return (func.attr, node.args[0], node.args[1] if len(node.args) > 1 else None) if node.args else None
    if func.attr in ("__setattr__", "__delattr__"):
        verb = _unparse(func)
        explicit = 3 if func.attr == "__setattr__" else 2  # `object.__setattr__(x, n, v)`: x given
        if len(node.args) >= explicit:
            return verb, node.args[0], node.args[1]
        return verb, func.value, node.args[0] if node.args else None
    return None




def _patch_calls(f: _File, node: ast.Call) -> List[Tuple[str, Optional[ast.AST], ast.AST]]:
    """(how it is spelled, the receiver, the name) of each attribute a test double's call writes: pytest's
    `monkeypatch.setattr(x, "n", v)` / `.setattr("m.n", v)`; and `unittest.mock.patch` however the file
    imports or aliases it (namespaces.qualified): `patch("m.n")` (receiver None: the target's module),
    `patch.object(x, "n")`, `patch.multiple(m, n=...)` (one per keyword; `**kw`: a computed name), and
    `patch.dict` of a target named by a string (`"sys.modules"`: any module, a computed name)."""
    func = node.func
    if not node.args:
        return []
    first = node.args[0]
    q = namespaces.qualified(f, func)
    tail = next((q[len(r):] for r in _MOCK_PATCH if q == r or q.startswith(r + ".")), None)
    verb = _unparse(func)
    if tail is None:
        if isinstance(func, ast.Attribute) and func.attr in ("setattr", "delattr"):  # a monkeypatch fixture
            if isinstance(first, ast.Constant) and isinstance(first.value, str) and "." in first.value:
                return [(verb, None, ast.Constant(first.value.rsplit(".", 1)[1]))]
            if len(node.args) > 1 and isinstance(node.args[1], ast.Constant):
                return [(verb, first, node.args[1])]
        return []
    if tail == "":
        return [(verb, None, _patched_name(first))]
    if tail == ".object":
        return [(verb, first, node.args[1])] if len(node.args) > 1 else [(verb, first, first)]
    if tail == ".multiple":
        return [(verb, first, ast.Constant(k.arg) if k.arg else k.value) for k in node.keywords] or [(verb, first, first)]
    if tail == ".dict":  # a dict handed to it is a namespace's (namespaces.Handles); one named by a string:
        named = isinstance(first, ast.Constant) and isinstance(first.value, str)
        return [(verb, None, first if not named or first.value == "sys.modules" else _patched_name(first))] if named else []
    return [(verb, None, first)]


# What `unittest.mock.patch` resolves to (mock is the backport).
_MOCK_PATCH = ("unittest.mock.patch", "mock.patch")


def _patched_name(target: ast.AST) -> ast.AST:
    """The attribute a dotted patch target names, as a constant where its text after the last dot is literal
    (`"m.n"`, `f"{mod}.perf_counter"`, `mod + ".n"`); else the target itself (computed)."""
    tail = target
    if isinstance(target, ast.JoinedStr) and target.values:
        tail = target.values[-1]
    elif isinstance(target, ast.BinOp) and isinstance(target.op, ast.Add):
        tail = target.right
    if isinstance(tail, ast.Constant) and isinstance(tail.value, str) and "." in tail.value:
        return ast.Constant(tail.value.rsplit(".", 1)[1])
    return target


# Words of a file that may get a namespace at run time (namespaces.Handles reads every such file).
_WORD_SPLIT = re.compile(r"[^\w]+")
# A string that may name a module (no blank: not prose): a dotted name, `m:attr`, a path, a comma list, a glob, a pattern.
def _tokens(f: "_File", node: ast.Constant) -> List[str]:
    """The names a string may give: itself, or each word where the code splits it on blanks (`.split()`)."""
    up = f.parents.get(id(node))
    call = f.parents.get(id(up)) if isinstance(up, ast.Attribute) and up.attr == "split" else None
    if isinstance(call, ast.Call) and call.func is up and not call.args:
        return node.value.split()
    return [node.value]


_NAME_LIKE = re.compile(r"[\w.:/\\*?^$,|+\-\[\]()]+")
# What a file must spell to get a namespace, or to write through one (namespaces.Handles): a file that spells
# none of them has no handle to check.
_HANDLE_TOKENS = re.compile(rb"__dict__|__globals__|f_globals|\bvars\b|\bglobals\b|\bmodules\b|import_module|__import__"
                            rb"|getmodule|resolve_name|\blocate\b|\.load\(|get_referr|get_objects|runpy|spec_from_file"
                            rb"|SourceFileLoader|load_source|FunctionType|LambdaType|builtins|\bmock\b|\bpatch\b"
                            rb"|getattr|attrgetter|getmembers|meta_path|path_hooks|__path__|partial|\bexec\b|\beval\b"
                            rb"|sys\.path|submodule_search_locations|setattr|delattr")
INTERCEPTORS = ["TorchFunctionMode", "TorchDispatchMode", "__torch_function__", "__torch_dispatch__"]


def interceptor(name: str, bases: Set[str], defined: Set[str], tensor: bool, body: Optional[ast.ClassDef] = None) \
        -> Optional[str]:
    """Why the class `name` (its bases' last names, the names its body and mixins define, whether it is a
    tensor subclass; its own class body, where read) sees or changes the ops the derived lengths add, or None."""
    if bases & set(INTERCEPTORS) or defined & set(INTERCEPTORS):
        if body is not None and not tensor and not defined - _class_body_names(body) and hands_every_op_on(body):
            return None
        return f"`{name}` sees every tensor op"
    hit = defined & derived.TENSOR_METHODS if tensor else set()
    return f"the tensor subclass `{name}` overrides `{sorted(hit)[0]}`" if hit else None


_MODE_HOOKS = ("__torch_function__", "__torch_dispatch__")
_MEMBER_TOKENS = re.compile(rb"getattr|__dict__|\bvars\b|\bglobals\b|getmembers|import_module|__import__|\bmodules\b"
                            rb"|attrgetter|\blocate\b|resolve_name|\.load\(")


def _family(name: str, tensors: Set[str], classes: Dict[str, Tuple["_File", ast.ClassDef]]) -> Set[str]:
    """The tensor class `name` and every project class deriving from it (by the last name of its bases)."""
    out = {name}
    for _ in range(8):
        more = {t for t in tensors if t in classes
                and {_unparse(b).rsplit(".", 1)[-1] for b in classes[t][1].bases} & out} - out
        if not more:
            break
        out |= more
    return out


def _makes_or_looks_up(f: "_File", family: Set[str]) -> bool:
    """Does the file read a name of `family` other than as a base, an isinstance/issubclass class or an
    annotation, or read a member by a computed name or a namespace whole (a way to the class unnamed)?"""
    family = family | {a.asname for node in ast.walk(f.tree) if isinstance(node, ast.ImportFrom)
                       for a in node.names if a.name in family and a.asname}
    for node in ast.walk(f.tree):
        named = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
        if named in family and isinstance(node.ctx, ast.Load) and not _only_names_a_type(f, node):
            return True
        if isinstance(node, ast.Call):
            callee = _unparse(node.func).rsplit(".", 1)[-1]
            if callee in ("getattr", "attrgetter") and not (len(node.args) > 1 and isinstance(node.args[1], ast.Constant)) \
                    and not (callee == "getattr" and node.args and _unparse(node.args[0]) in ("self", "cls")):
                return True
            if callee in ("vars", "globals", "getmembers", "import_module", "__import__", "locate", "resolve_name"):
                return True
        if isinstance(node, ast.Attribute) and node.attr in ("__dict__", "modules") and isinstance(node.ctx, ast.Load):
            return True
    return False


def _only_names_a_type(f: "_File", node: ast.AST) -> bool:
    """Is the name read as a class's base, the class an isinstance/issubclass tests, or in an annotation?"""
    up = f.parents.get(id(node))
    while isinstance(up, ast.Tuple):  # isinstance(x, (A, B))
        node, up = up, f.parents.get(id(up))
    if isinstance(up, ast.ClassDef) and node in up.bases:
        return True
    if isinstance(up, ast.Call) and _unparse(up.func) in ("isinstance", "issubclass") and len(up.args) == 2 \
            and up.args[1] is node:
        return True
    while up is not None and not isinstance(up, (ast.stmt, ast.arg)):
        node, up = up, f.parents.get(id(up))
    return isinstance(up, ast.arg) and up.annotation is node or \
        isinstance(up, (ast.AnnAssign, ast.FunctionDef, ast.AsyncFunctionDef)) and node in (
            getattr(up, "annotation", None), getattr(up, "returns", None))


def hands_every_op_on(cls: ast.ClassDef) -> bool:
    """A mode that sees every op but changes none (a FLOP counter, an op log): its body holds only a docstring,
    an `__init__` of `super().__init__()` and `self.<name> = ...`, and undecorated mode hooks whose every
    statement reads none of the op's arguments nor calls the op, but the last: `return func(*args, **kwargs)`
    (or `**(kwargs or {})`) of the hook's own parameters; the class undecorated."""
    if cls.decorator_list or not any(isinstance(d, ast.FunctionDef) and d.name in _MODE_HOOKS for d in cls.body):
        return False  # (TorchFunctionMode's own hook raises NotImplementedError)
    for stmt in cls.body:
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            continue
        if not isinstance(stmt, ast.FunctionDef) or stmt.decorator_list:
            return False
        if not (stmt.name == "__init__" and _plain_init(stmt) or stmt.name in _MODE_HOOKS and _hands_on(stmt)):
            return False
    return True


def _plain_init(fn: ast.FunctionDef) -> bool:
    """`super().__init__(...)` and `self.<name> = <value>` only."""
    for stmt in fn.body:
        call = stmt.value if isinstance(stmt, ast.Expr) else None
        if isinstance(call, ast.Call) and _unparse(call.func) == "super().__init__":
            continue
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            continue
        if isinstance(stmt, ast.Assign) and all(isinstance(t, ast.Attribute) and _is_name(t.value, "self")
                                                for t in stmt.targets):
            continue
        return False
    return True


def _hands_on(fn: ast.FunctionDef) -> bool:
    """Every statement of a mode hook but its last reads none of the op's arguments nor calls the op; the last
    returns the op called on them unchanged."""
    params = [a.arg for a in fn.args.args]
    if len(params) != 5 or fn.args.vararg or fn.args.kwarg or fn.args.kwonlyargs or not fn.body:
        return False
    func, args, kwargs = params[1], params[3], params[4]
    *rest, last = fn.body
    if not (isinstance(last, ast.Return) and _hands_call(last.value, func, args, kwargs)):
        return False
    for stmt in rest:
        for node in ast.walk(stmt):
            if isinstance(node, (ast.Return, ast.Yield, ast.YieldFrom, ast.Await, ast.Global, ast.Nonlocal,
                                 ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                return False
            if isinstance(node, ast.Name) and node.id in (args, kwargs) or \
                    isinstance(node, ast.Call) and _is_name(node.func, func):
                return False
            if isinstance(node, ast.Name) and node.id == func and not isinstance(node.ctx, ast.Load):
                return False
    return True


def _hands_call(node: Optional[ast.AST], func: str, args: str, kwargs: str) -> bool:
    """`func(*args, **kwargs)` or `func(*args, **(kwargs or {}))`."""
    if not (isinstance(node, ast.Call) and _is_name(node.func, func) and len(node.args) == 1
            and isinstance(node.args[0], ast.Starred) and _is_name(node.args[0].value, args)
            and len(node.keywords) == 1 and node.keywords[0].arg is None):
        return False
    given = node.keywords[0].value
    return _is_name(given, kwargs) or (
        isinstance(given, ast.BoolOp) and isinstance(given.op, ast.Or) and len(given.values) == 2
        and _is_name(given.values[0], kwargs) and isinstance(given.values[1], ast.Dict) and not given.values[1].keys)


def _is_name(node: Optional[ast.AST], name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def _class_body_names(cls: ast.ClassDef) -> Set[str]:
    """What a class body defines: its methods, and the names it assigns (`view = _checked_view`)."""
    out = set()
    for d in cls.body:
        if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out.add(d.name)
        for t in _flatten(_written_targets(d)):
            if isinstance(t, ast.Name):
                out.add(t.id)
    return out


# the standard library logging's extension points: code that may read a record's arguments other than by its format
_LOGGING_HOOKS = {"setLoggerClass", "loggerClass", "setLogRecordFactory", "LogRecord", "makeRecord", "addFilter",
                  "filters", "addHandler", "handlers", "dictConfig", "fileConfig", "callHandlers", "manager", "root"}
_LOGGING_KINDS = ("Handler", "Filter", "Formatter", "Adapter")  # (StreamHandler, a project's JsonFormatter...)
_LOG_METHODS = {"debug", "info", "warning", "warn", "error", "critical", "exception", "log", "getLogger", "_log"}
# a class statement whose bases hold more than dotted names (a subscript, a call), or that is indented (in a function,
# where a base may be its parameter): the files opaque_classes parses
_OPAQUE_BASES = re.compile(rb"class\s+\w+\s*\([^)]*[\[(]|^[ \t]+class\s+\w+\s*\(", re.M)
_GENERIC_BASES = {"Generic", "Protocol", "NamedTuple", "TypedDict"}


def _opaque_base(f: "_File", cls: ast.ClassDef, base: ast.expr) -> bool:
    """May `base` be any class: not a dotted name (but `Generic[T]` and its kin), or a name that the function
    around the class binds (a parameter, a local)?"""
    if isinstance(base, ast.Subscript):  # `Generic[T]` names a class; `BACKENDS["dsa"]` is whatever the table holds
        return _unparse(base.value).rsplit(".", 1)[-1] not in _GENERIC_BASES
    if not isinstance(base, (ast.Name, ast.Attribute)):
        return True
    root = base
    while isinstance(root, ast.Attribute):
        root = root.value
    fn = f.enclosing(cls, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
    if not isinstance(root, ast.Name) or fn is None:
        return not isinstance(root, ast.Name)
    bound = {a.arg for a in ast.walk(fn.args) if isinstance(a, ast.arg)} | {
        n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    return root.id in bound


_FRAME_WORDS = ("f_locals", "getargvalues", "capture_locals", "LocalsToFast")
_FRAME_NAME = re.compile(r"\w*(?:%s)\w*" % "|".join(_FRAME_WORDS))  # a string naming one: a name to look up
_FRAME_BYTES = re.compile("|".join(_FRAME_WORDS).encode())  # the files to read: any spelling holding one (PyFrame_LocalsToFast)
_FRAME_COPIES = ("dict", "len", "list", "sorted", "repr", "str", "set", "tuple")  # builtins: copy, never write


def _frame_word(f: "_File", node: ast.AST) -> Optional[bool]:
    """None where node is no way to a frame's locals; else whether it may write them (True) or only reads them
    whole (False). `f_locals` read by a literal key is neither."""
    if isinstance(node, ast.Attribute) and node.attr == "f_locals":
        if _read_by_literal(f, node):
            return None
        up = f.parents.get(id(node))
        copied = _builtin_call(up, _FRAME_COPIES) and node in up.args and not _shadowed(f, up.func.id)
        return not copied
    if isinstance(node, ast.keyword) and node.arg == "capture_locals":
        return None if isinstance(node.value, ast.Constant) and not node.value.value else False
    if isinstance(node, ast.Constant) and isinstance(node.value, str):  # a name to look up (not a docstring)
        return True if _FRAME_NAME.fullmatch(node.value) else None
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else \
        node.name if isinstance(node, ast.alias) else None
    return True if name and any(w in name for w in _FRAME_WORDS[1:]) else None


def _shadowed(f: "_File", name: str) -> bool:
    """Does the file bind `name` itself (a def, a class, an import, an assignment), so it is not the builtin?"""
    return any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n.name == name
               or isinstance(n, ast.alias) and (n.asname or n.name).split(".")[0] == name
               or isinstance(n, ast.Name) and n.id == name and not isinstance(n.ctx, ast.Load) for n in ast.walk(f.tree))


def _read_by_literal(f: "_File", node: ast.AST) -> bool:
    """Is a mapping read only by a literal key: `node["k"]`, `node.get("k")`?"""
    up = f.parents.get(id(node))
    if isinstance(up, ast.Subscript) and up.value is node and isinstance(up.ctx, ast.Load):
        return isinstance(up.slice, ast.Constant)
    call = f.parents.get(id(up))
    return isinstance(up, ast.Attribute) and up.attr == "get" and isinstance(call, ast.Call) and call.func is up \
        and bool(call.args) and isinstance(call.args[0], ast.Constant)
# (`sys.modules`, or `modules` imported from sys; mock's `patch` needs an import of `mock`)
# What reads a member of a module by a computed name or writes the import system: a file that spells one of
# them and a related package may get the kernel's module from the package (namespaces.Handles._derived).
_MEMBER_WORDS = ["getattr", "attrgetter", "getmembers", "__path__", "__dict__", "vars", "meta_path", "path_hooks",
                 "setattr", "delattr"]
_HANDLE_WORDS = ["import_module", "__import__", "sys.modules", "import modules", "__globals__", "f_globals",
                 "getmodule", "FunctionType", "LambdaType", "mock", "resolve_name", "locate", "entry_points",
                 "EntryPoint", "get_referrers", "get_objects", "get_referents", "runpy", "spec_from_file_location",
                 "exec_module", "SourceFileLoader", "load_source", "builtins", "meta_path",
                 "path_hooks", "submodule_search_locations", "__path__"]
# `exec(...)` / `eval(...)` called as the builtins (not `model.eval()`): code the file runs from a string or a file
_RUNS_CODE = re.compile(rb"(?<![.\w])(?:exec|eval)\s*\(")


def _plainly_decorated(f, fn) -> bool:
    """Does each decorator of the def hand it what its callers hand: staticmethod, classmethod, or a function of its
    file calling what it wraps with its wrapper's own parameters unchanged (hands_on_unchanged)?"""
    for d in fn.decorator_list:
        name = _unparse(d)
        defs = [x for x in f.tree.body if isinstance(x, (ast.FunctionDef, ast.AsyncFunctionDef)) and x.name == name]
        if name not in ("staticmethod", "classmethod") and not (len(defs) == 1 and hands_on_unchanged(defs[0])):
            return False
    return True


def hands_on_unchanged(d) -> bool:
    """Does every call of a parameter of d or of its nested defs (the function a decorator wraps) hand exactly the
    parameters of the def it stands in, in order, none bound again there: `fn(self, *args, **kwargs)`?"""
    defs = [n for n in ast.walk(d) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))]
    wrapped = {a.arg for n in defs for a in ast.walk(n.args) if isinstance(a, ast.arg)}
    for inner in defs:
        own = [n for n in ast.walk(inner) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
               and n.func.id in wrapped and min((x for x in defs if any(c is n for c in ast.walk(x))),
                                                key=lambda x: len(list(ast.walk(x)))) is inner]
        if any(not forwards_params(inner, c) for c in own):
            return False
    return True


def forwards_params(inner, call: ast.Call) -> bool:
    a = inner.args
    rebound = {n.id for n in ast.walk(inner) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    names = [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs] + [x.arg for x in (a.vararg, a.kwarg) if x]
    positional = [x.arg for x in a.posonlyargs + a.args] + (["*" + a.vararg.arg] if a.vararg else [])
    keywords = [(x.arg, x.arg) for x in a.kwonlyargs] + ([(None, a.kwarg.arg)] if a.kwarg else [])
    return not rebound & set(names) and [_unparse(x) for x in call.args] == positional \
        and [(k.arg, getattr(k.value, "id", None)) for k in call.keywords] == keywords


def stores_its_parameters(d: ast.AST) -> bool:
    """A record's `__init__`/`__post_init__` that only stores its own parameters on self (`self.x = x`), hands them to
    `super().__init__` as they are, or asserts: nothing it makes or looks up takes a field's place."""
    a = d.args
    params = {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs}
    plain = lambda e: isinstance(e, ast.Name) and e.id in params and e.id != "self"  # noqa: E731
    for stmt in d.body:
        if isinstance(stmt, (ast.Pass, ast.Assert)) or isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            continue
        if isinstance(stmt, ast.Assign) and plain(stmt.value) and all(
                isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self" for t in stmt.targets):
            continue
        call = stmt.value if isinstance(stmt, ast.Expr) else None
        if isinstance(call, ast.Call) and _unparse(call.func) == "super().__init__" \
                and all(plain(x) for x in call.args) and all(plain(k.value) for k in call.keywords):
            continue
        return False
    return not any(isinstance(n, ast.Name) and n.id in params and not isinstance(n.ctx, ast.Load) for n in ast.walk(d))


def body_binds(stmts: List[ast.stmt], name: str) -> bool:
    """Does one of the statements (a class body's) bind `name` by an assignment (`__new__ = recycled_new`, `evict =
    staticmethod(fused.evict)`)?"""
    return any(isinstance(t, ast.Name) and t.id == name for stmt in stmts for t in _flatten(_written_targets(stmt)))


def _written_targets(node: ast.AST) -> List[ast.AST]:
    """What a statement assigns, augments or deletes (its targets, unflattened); [] for anything else."""
    if isinstance(node, (ast.Assign, ast.Delete)):
        return list(node.targets)
    return [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []


# Uses of a module object that hand nothing on: an attribute read off it, and these builtins of it.
_MODULE_READS = ("getattr", "hasattr", "isinstance", "id", "repr", "str", "print", "type", "dir", "callable")


def _root_name(e: ast.AST) -> Optional[str]:
    """The name an attribute chain starts from, through calls (`logging.getLogger(n).info` -> logging)."""
    while isinstance(e, (ast.Attribute, ast.Call)):
        e = e.value if isinstance(e, ast.Attribute) else e.func
    return e.id if isinstance(e, ast.Name) else None


def _escapes(f: _File, node: ast.AST, depth: int = 0) -> bool:
    """Is the module object `node` handed on: anything but an attribute read off it (or a read through
    _MODULE_READS), the callee of a call, a `del`, a plain statement, or an argument of a function of the
    file that only reads its parameter so?"""
    up = f.parents.get(id(node))
    if isinstance(up, ast.Attribute) and up.value is node:
        return False
    if isinstance(up, ast.Call):
        if up.func is node:
            return False
        param = _reading_parameter(f, up, node) if depth < 3 else None
        if param is not None:
            fn, name = param
            return any(_escapes(f, n, depth + 1) for n in ast.walk(fn) if isinstance(n, ast.Name) and n.id == name)
        if isinstance(up.func, ast.Attribute) and _root_name(up.func) in LOGGING_ROOTS:
            return False  # `logger.info("kernel from %s", fm)`: formatted, not kept
        if namespaces.qualified(f, up.func) in namespaces.NAMESPACE_READERS:
            return False  # `inspect.getmembers(fm)`: read, not kept
        return not (isinstance(up.func, ast.Name) and up.func.id in _MODULE_READS and up.args and up.args[0] is node)
    if isinstance(up, (ast.Expr, ast.Compare)) or isinstance(up, ast.UnaryOp) and isinstance(up.op, ast.Not):
        return False  # a truth value or a comparison of it
    if isinstance(up, (ast.If, ast.While, ast.IfExp, ast.Assert)) and up.test is node:
        return False
    if isinstance(up, ast.BoolOp):
        return _escapes(f, up)  # `fm and x` is one of its operands: handed on where it is
    if isinstance(up, ast.Assign) and up.value is node and all(
            isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self" for t in up.targets):
        return False  # `self.fm = fm`: the analysis reads calls through it as the module's (kernel_modules)
    return True


def _forwarding_decoration(f: _File, node: ast.AST, target: ast.Attribute) -> bool:
    """`m.f = traced(m.f)`: the attribute given a wrapper of itself made by a decorator of the file that hands
    every argument on unchanged (a pass-through profiler), so what is called there is still what was."""
    if not (isinstance(node, ast.Assign) and node.targets == [target] and isinstance(node.value, ast.Call)):
        return False
    call = node.value
    if not (isinstance(call.func, ast.Name) and call.func.id not in f.ambiguous and len(call.args) == 1
            and not call.keywords and _unparse(call.args[0]) == _unparse(target)
            and isinstance(target.value, ast.Name)):
        return False
    deco = next((d for d in f.tree.body if isinstance(d, ast.FunctionDef) and d.name == call.func.id), None)
    return deco is not None and _wraps_unchanged(deco)


def _wraps_unchanged(deco: ast.FunctionDef) -> bool:
    """def deco(fn): [docstring] def wrapper(*args, **kwargs): ... return fn(*args, **kwargs) ... return wrapper,
    the wrapper decorated by `functools.wraps(fn)` at most, its other statements reading neither `args`,
    `kwargs` nor calling `fn` (a timer: the call may sit in a `try` whose `finally` returns nothing)."""
    a = deco.args
    if deco.decorator_list or len(a.args) != 1 or a.posonlyargs or a.vararg or a.kwarg or a.kwonlyargs:
        return False
    fn = a.args[0].arg
    body = [b for b in deco.body if not (isinstance(b, ast.Expr) and isinstance(b.value, ast.Constant))]
    if len(body) != 2 or not isinstance(body[0], ast.FunctionDef) or not isinstance(body[1], ast.Return) \
            or not _is_name(body[1].value, body[0].name):
        return False
    w = body[0]
    wa = w.args
    if wa.args or wa.posonlyargs or wa.kwonlyargs or wa.defaults or not wa.vararg or not wa.kwarg:
        return False
    if any(not (isinstance(d, ast.Call) and _unparse(d.func) in ("functools.wraps", "wraps") and len(d.args) == 1
                and _is_name(d.args[0], fn)) for d in w.decorator_list):
        return False
    args, kwargs = wa.vararg.arg, wa.kwarg.arg
    handed = [n for n in ast.walk(w) if isinstance(n, ast.Call) and _is_name(n.func, fn)]
    if len(handed) != 1 or not _hands_call(handed[0], fn, args, kwargs):
        return False
    *before, last = w.body
    returned = isinstance(last, ast.Return) and last.value is handed[0]
    timed = isinstance(last, ast.Try) and not last.handlers and not last.orelse and len(last.body) == 1 \
        and isinstance(last.body[0], ast.Return) and last.body[0].value is handed[0] \
        and _reads_none(last.finalbody, {args, kwargs, fn})
    return (returned or timed) and _reads_none(before, {args, kwargs, fn})


def _reads_none(body: List[ast.stmt], names: Set[str]) -> bool:
    """No statement reads one of `names`, returns, yields, awaits or defines a scope."""
    return not any(isinstance(n, (ast.Return, ast.Yield, ast.YieldFrom, ast.Await, ast.Global, ast.Nonlocal,
                                  ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef))
                   or isinstance(n, ast.Name) and n.id in names for stmt in body for n in ast.walk(stmt))


def _reading_parameter(f: _File, call: ast.Call, arg: ast.AST) -> Optional[Tuple[ast.FunctionDef, str]]:
    """(def, parameter) where `call` is of a top-level, undecorated def of the file bound once and `arg`, one of
    its positional arguments, goes to a named parameter that the def never binds again (its reads are then
    checked)."""
    if not isinstance(call.func, ast.Name) or call.func.id in f.ambiguous:
        return None
    fn = next((d for d in f.tree.body if isinstance(d, ast.FunctionDef) and d.name == call.func.id), None)
    if fn is None or fn.decorator_list or any(isinstance(a, ast.Starred) for a in call.args):
        return None
    params = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)]
    at = next((i for i, a in enumerate(call.args) if a is arg), len(params))
    name = params[at] if at < len(params) else None
    if name is None or any(isinstance(n, ast.Name) and n.id == name and not isinstance(n.ctx, ast.Load)
                           or isinstance(n, (ast.Global, ast.Nonlocal)) and name in n.names
                           or isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) and n is not fn
                           and name in {a.arg for a in ast.walk(n.args) if isinstance(a, ast.arg)}
                           for n in ast.walk(fn)):
        return None
    return fn, name


class _Through:
    """`.search(text)`: does the text read `method` off `cls` (or the like), `x.__class__` or a call's result
    other than `super()`'s (`type(x).method`), or (`before` given) off what `before` matches at its end? A
    literal search for the name, then a look behind its dot."""

    _BEFORE = re.compile(rb"(?:\b(?:cls|klass|mcs|metacls)|__class__|\))\s*$")

    def __init__(self, method: str, before: Optional["re.Pattern[bytes]"] = None):
        self._name = method.encode("utf-8", "surrogateescape")
        self._BEFORE = before or self._BEFORE

    def search(self, data: bytes) -> Optional[bool]:  # (None where it does not, as re's search)
        at = data.find(self._name)
        while at != -1:
            end = at + len(self._name)
            before = data[max(0, at - 48):at].rstrip()
            if before.endswith(b".") and not (end < len(data) and (data[end:end + 1].isalnum() or data[end:end + 1] == b"_")):
                before = before[:-1].rstrip()
                if self._BEFORE.search(before) and not before.endswith(b"super()"):
                    return True
            at = data.find(self._name, end)
        return None


def _class_object(v: ast.AST, family: Set[str], by_name: bool = False) -> bool:
    """May `v` be a class of `family` as an object: by its name, or (not `by_name`) `cls` (or the like),
    `type(x)`, `x.__class__`?"""
    if by_name:
        return isinstance(v, ast.Name) and v.id in family or isinstance(v, ast.Attribute) and v.attr in family
    return isinstance(v, ast.Name) and (v.id in family or v.id in ("cls", "klass", "mcs", "metacls")) \
        or isinstance(v, ast.Attribute) and v.attr in family | {"__class__"} or _builtin_call(v, ("type",))


_HOOKS = {"__setattr__", "__delattr__", "__getattr__", "__getattribute__"}
_SETTERS = ["setattr", "delattr", "__setattr__", "__delattr__"]  # (a file that may rebind by a computed name)
_CLASS_MAKERS = {"type", "new_class", "make_dataclass"}  # (a class made at run time: Project._class_machinery)


def _is_protocol(expr: ast.AST) -> bool:
    """`Protocol`, `typing.Protocol`, `Protocol[T]` (by its name, wherever it is imported from)."""
    if isinstance(expr, ast.Subscript):
        expr = expr.value
    return _typing_name(None, expr) == "Protocol"


# Annotations that say nothing of the class (`Any`, `object`), or name a class object or a module, which
# may be the kernel's module or the helper's class itself.
_ANY_TYPES = {"Any", "object", "type", "Type", "ModuleType", "TypeVar", "Callable"}


def _typing_name(f: Optional[_File], expr: ast.AST) -> str:
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


def _inert_code(f: "_File", call: ast.Call) -> bool:
    """`eval`/`exec` of a literal value's text (`eval("4096")`), or of the environment's text with such a default
    (`eval(os.environ.get("CHUNK", "4096"))`: what data says is assumed not to name the kernel, as for names
    computed from data), with no namespace handed to it."""
    if len(call.args) != 1 or call.keywords:
        return False
    code = call.args[0]
    default = None
    if isinstance(code, ast.Call) and namespaces.qualified(f, code.func) in ("os.environ.get", "os.getenv") \
            and not code.keywords and 1 <= len(code.args) <= 2 and isinstance(code.args[0], ast.Constant):
        default = code.args[1] if len(code.args) == 2 else None
    elif isinstance(code, ast.Subscript) and namespaces.qualified(f, code.value) == "os.environ" \
            and isinstance(code.slice, ast.Constant):
        pass
    else:
        default = code
    if default is None:
        return True
    if not (isinstance(default, ast.Constant) and isinstance(default.value, str)) or len(default.value) > 1000:
        return False
    try:
        ast.literal_eval(default.value.strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False
    return True


def _builtin_call(node: ast.AST, names: Tuple[str, ...]) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in names


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


def field_writes(project: "Project", field: str, own: Optional[_File] = None) \
        -> List[Tuple[_File, ast.AST, Optional[ast.AST]]]:
    """Where the project (its other files, and `own`: the module as checked) gives `field` a value: (file, the
    node, the value) for a call's keyword `field=v` (also `**{"field": v}`), a positional argument of a class
    that declares the field (`Meta(lens, ...)`, `Meta._make([...])`), an assignment `x.field = v`, a literal
    `setattr`/`object.__setattr__`, and `.copy_(v)` into the field (also through a local alias of it, or
    `torch.Tensor.copy_(x.field, v)`); (file, the node, None) for any other write into the tensor it holds and
    for a `**` mapping or `*` arguments handed to such a class or to `replace` (what they set is not read)."""
    held = project.memo.get(("field_writes", field))
    if held is None or held[0] is not own:  # (once per field and module text, not once per site)
        held = project.memo[("field_writes", field)] = (own, _field_writes(project, field, own))
    return held[1]


def _field_writes(project: "Project", field: str, own: Optional[_File]) -> List[Tuple[_File, ast.AST, Optional[ast.AST]]]:
    naming = [*project.files_naming([field]), *([own] if own is not None else [])]
    slots = _field_slots([g.tree for g in naming], field)  # (a class declaring it names it)
    files = list({id(g): g for g in [*naming, *project.files_naming(sorted(slots))]}.values())
    for _ in range(4):  # subclasses and other names of those classes, in the files that name them (round Q)
        more = _related_slots([g.tree for g in files], slots)
        if not more:
            break
        slots.update(more)
        files = list({id(g): g for g in [*files, *project.files_naming(sorted(more))]}.values())
    out: List[Tuple[_File, ast.AST, Optional[ast.AST]]] = []
    kept: Set[str] = set()
    for f in files:
        for node in ast.walk(f.tree):
            if not _builds_no_record(project, f, node, field, slots):
                out += _field_write(f, node, field, slots, project)
            kept |= _kept_in(node, field)
    for attr in sorted(kept):  # the field's tensor kept in another attribute: written in place there (round O's u02)
        for f in {id(g): g for g in [*project.files_naming([attr]), *([own] if own is not None else [])]}.values():
            out += [(f, node, None) for node in ast.walk(f.tree)
                    if _changes_field_in_place(node, attr) or _alias_written(f, node, attr)]
    return out + _computed_field_writes(project, files, slots, field)  # (round BA: by a computed name)


def _kept_in(node: ast.AST, field: str) -> Set[str]:
    """The attributes an assignment keeps the field's tensor in (`self._lens = md.field`, or a view of it)."""
    if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.value is None:
        return set()
    source = _unviewed(node.value)
    if not (isinstance(source, ast.Attribute) and source.attr == field):
        return set()
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    return {t.attr for t in _flatten(targets) if isinstance(t, ast.Attribute) and t.attr != field}


# Round BA: a computed attribute read (`getattr(x, name)` by a name not a literal, `vars(x)`, `x.__dict__`,
# `dataclasses.astuple(x)`/`asdict(x)`) off what may be the record writes every field, the lengths included, where its
# result is written in place or handed on: the field is never spelled there, so no write rule above sees it.
_NAMESPACE_CALLS = ("vars", "astuple", "asdict", "dataclasses.astuple", "dataclasses.asdict", "inspect.getmembers",
                    "getmembers")
_TENSOR_FACTS = frozenset({"shape", "dtype", "device", "ndim", "is_cuda"})
_STORING_METHODS = frozenset({"update", "setdefault", "pop", "popitem", "clear"})  # (a namespace's: fields rebound)
_PURE_READERS = frozenset({"isinstance", "len", "type", "id", "repr", "str", "print", "hash", "callable", "hasattr"})
_DISCARDS = (ast.BinOp, ast.UnaryOp, ast.Compare, ast.FormattedValue, ast.Assert, ast.If, ast.While, ast.Expr)


def _computed_field_writes(project: "Project", files: List[_File], slots: Dict[str, Optional[int]], field: str) \
        -> List[Tuple[_File, ast.AST, Optional[ast.AST]]]:
    """Round BA: the computed writes in the methods of the record's classes (and their bases: `self` is the record)
    and in the defs the files naming the record hand an argument to (followed four deep). Round BC: and the writes
    through what hands the field's tensor out unspelled (_carried_writes)."""
    out: List[Tuple[_File, ast.AST, Optional[ast.AST]]] = []
    known, anything = _RecordWalk(project, field, set(), files, True), _RecordWalk(project, field, set(), files, False)
    for f in files:
        for cls in (c for c in f.class_defs if c.name in slots):
            for g, k in [(f, cls), *project.bases_in_order(f, cls)]:
                for fn in (d for d in k.body if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef)) and d.args.args):
                    out += _record_param_writes(known, g, fn, fn.args.args[0].arg, 0)
        for call in (n for n in ast.walk(f.tree) if isinstance(n, ast.Call)):
            out += _handed_param_writes(anything, f, call, None, 0)
    return out + _carried_writes(files, field)


@dataclass
class _RecordWalk:
    """Round BA: the project, the field, and the (def, parameter) pairs already read; round BC: the files naming the
    record (where its methods' callers are), and whether the walk follows the record itself (`self` of its class's
    methods) or any argument of any call (which may be the record)."""
    project: "Project"
    field: str
    seen: Set[Tuple[int, str, tuple]]
    files: List[_File]
    known: bool


def _handed_param_writes(walk: _RecordWalk, f: _File, call: ast.Call, only: Optional[str], depth: int) \
        -> List[Tuple[_File, ast.AST, Optional[ast.AST]]]:
    """The computed writes of each def a call may run (a def of the file, one imported from the project, a method:
    _called_defs), on each parameter it hands an argument (where `only`, the name `only` alone, or a list, tuple or
    set of it: round BC). Positional arguments past the def's parameters land in its `*args`."""
    if depth > 3:
        return []
    out: List[Tuple[_File, ast.AST, Optional[ast.AST]]] = []
    for g, fn, skip in _called_defs(walk, f, call, walk.known and only is not None):
        params = [a.arg for a in fn.args.posonlyargs + fn.args.args][skip:]
        spare = [(fn.args.vararg.arg, v) for v in call.args[len(params):]] if fn.args.vararg else []
        handed = [*zip(params, call.args), *spare, *((k.arg, k.value) for k in call.keywords if k.arg in params)]
        keys = tuple((p, v.value) for p, v in handed if isinstance(v, ast.Constant) and isinstance(v.value, str)
                     and v.value != walk.field)  # (`_hf_attr(config, "index_topk")`: a getter by a literal name)
        out += [w for p, v in handed if not isinstance(v, (ast.Constant, ast.Starred)) and not _library_made(f, v)
                and (only is None or _holds_name(v, only)) for w in _record_param_writes(walk, g, fn, p, depth + 1, keys)]
    return out


def _holds_name(v: ast.AST, name: str) -> bool:
    """Is v the name, or a list, tuple or set literal holding it?"""
    return any(isinstance(e, ast.Name) and e.id == name for e in _literal_items(v))


def _literal_items(v: ast.AST) -> List[ast.AST]:
    """A list, tuple or set literal's items; anything else is its own one item."""
    return list(v.elts) if isinstance(v, (ast.List, ast.Tuple, ast.Set)) else [v]


def _carried_writes(files: List[_File], field: str) -> List[Tuple[_File, ast.AST, Optional[ast.AST]]]:
    """Round BC: the field's tensor handed out unspelled, then written in place: the reads of a def returning it
    (alone or in a list, tuple or set: a property's `md.per_request`, a function's `per_request(md)`, any method so
    named) and of an attribute a container of it is kept in (`self._rows = (md.field, ...)`), each result written as
    _result_written reads it (default-deny)."""
    properties, functions = _carriers(files, field)
    out: List[Tuple[_File, ast.AST, Optional[ast.AST]]] = []
    for f in files if properties or functions else ():
        for node in ast.walk(f.tree):
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load) and node.attr in properties or \
                    isinstance(node, ast.Call) and _called_name(node) in functions:
                fn = f.enclosing(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) or f.tree
                if _result_written(f, fn, node, 0):
                    out.append((f, _statement_of(f, node), None))
    return out


def _carriers(files: List[_File], field: str) -> Tuple[Set[str], Set[str]]:
    """(the properties and attributes, the functions and methods) whose value holds the field's tensor unspelled."""
    properties: Set[str] = set()
    functions: Set[str] = set()
    for f in files:
        for node in ast.walk(f.tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
                    isinstance(r, (ast.Return, ast.Yield)) and r.value is not None and _carries_tensor(r.value, field)
                    for r in ast.walk(node)):
                plain = not any(_unparse(d).rsplit(".", 1)[-1] in ("property", "cached_property")
                                for d in node.decorator_list)
                (functions if plain else properties).add(node.name)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None and isinstance(
                    node.value, (ast.List, ast.Tuple, ast.Set)) and _carries_tensor(node.value, field):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                properties |= {t.attr for t in targets if isinstance(t, ast.Attribute)}
    return properties, functions


def _carries_tensor(v: ast.AST, field: str) -> bool:
    """Is v the field's tensor (or a view of it), or a list, tuple or set literal holding one?"""
    return any(isinstance(u, ast.Attribute) and u.attr == field for u in map(_unviewed, _literal_items(v)))


def _called_name(call: ast.Call) -> Optional[str]:
    return call.func.id if isinstance(call.func, ast.Name) else call.func.attr if isinstance(
        call.func, ast.Attribute) else None


def _library_made(f: _File, v: ast.AST) -> bool:
    """Is the argument an object a library's callee makes from nothing (`Namespace()`): never the record."""
    module = f.module_of(v.func) if isinstance(v, ast.Call) and not v.args and not v.keywords else None
    return module is not None and not module.startswith(".") and f._find(f.path, module.rsplit(".", 1)[0]) is None


def _called_def(project: "Project", f: _File, call: ast.Call) -> Optional[Tuple[_File, ast.AST]]:
    """The top-level def `f(...)` or `mod.f(...)` runs: one of this file, or of the project file it imports it from."""
    g: Optional[_File] = f
    if isinstance(call.func, ast.Name) and call.func.id in f.froms:
        mod, name = f.froms[call.func.id]
        path = f._find(f.path, mod)
        g = project._file_at(path) if path is not None else None
    elif isinstance(call.func, ast.Attribute) and f.module_of(call.func.value):
        path, name = f._find(f.path, f.module_of(call.func.value)), call.func.attr
        g = project._file_at(path) if path is not None else None
    elif isinstance(call.func, ast.Name):
        name = call.func.id
    else:
        return None
    defs = [d for d in (g.tree.body if g is not None else ()) if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef))
            and d.name == name]
    return (g, defs[-1]) if g is not None and defs else None


def _called_defs(walk: _RecordWalk, f: _File, call: ast.Call, handed: bool) -> List[Tuple[_File, ast.AST, int]]:
    """Round BC: every def a call may run, with how many leading parameters the call does not fill: the def
    `_called_def` finds (0), else for `x.m(...)` every method `m` of a class in the files naming the record, where x
    is self, a class, or the call is `handed` the record itself (then in the files naming `m` too: any argument of any
    call followed so wide would reach every `copy_` of the project). 1: bound to x, or a
    classmethod; 0: a staticmethod, or a plain method of the class x names; both where x is an imported name that
    may be a class."""
    found = _called_def(walk.project, f, call)
    if found is not None:
        return [(found[0], found[1], 0)]
    if not isinstance(call.func, ast.Attribute):
        return []
    receiver = call.func.value.id if isinstance(call.func.value, ast.Name) else None
    unbound = {0} if receiver in {c.name for c in f.class_defs} else {0, 1} if receiver in f.froms else {1}
    if not (handed or unbound != {1} or receiver is not None and receiver == _self_name(f, call)):
        return []  # (`t.copy_(x)`: a call handed anything, on anything, is not read as every method so named)
    name, out = call.func.attr, []
    for g in {id(h): h for h in [*walk.files, *(walk.project.files_naming([name]) if handed else [])]}.values():
        for cls in g.class_defs:
            for fn in (d for d in cls.body if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef)) and d.name == name):
                kinds = {_unparse(d) for d in fn.decorator_list}
                skips = {0} if "staticmethod" in kinds else {1} if "classmethod" in kinds else unbound
                out += [(g, fn, skip) for skip in sorted(skips)]
    return out


def _self_name(f: _File, node: ast.AST) -> Optional[str]:
    """The first parameter of the method node is in (self), if it is in one."""
    fn = f.enclosing(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    method = fn is not None and isinstance(f.parents.get(id(fn)), ast.ClassDef) and fn.args.args
    return fn.args.args[0].arg if method else None


def _record_param_writes(walk: _RecordWalk, f: _File, fn: ast.AST, param: str, depth: int,
                         keys: Tuple[Tuple[str, str], ...] = ()) -> List[Tuple[_File, ast.AST, Optional[ast.AST]]]:
    """In fn, the computed reads off `param` (which may be the record, or hold records: round BC's names a loop over
    it binds) whose result is written in place or handed on, and those of the defs fn hands `param` on to: (file, the
    statement or the refresh's `copy_`, its value or None). `keys`: fn's parameters the call handed a literal name,
    not the field's (read as that name)."""
    if (id(fn), param, keys) in walk.seen:
        return []
    walk.seen.add((id(fn), param, keys))
    named = {k for k, _ in keys} - {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    out: List[Tuple[_File, ast.AST, Optional[ast.AST]]] = []
    for node in ast.walk(fn):
        if _computed_store(node, param, named):  # (`setattr(md, f.name, v)`: any field given v)
            out.append((f, _statement_of(f, node), None))
        elif _computed_read(fn, node, param, named):
            refresh = _full_refresh(f, fn, node, walk.field)
            if refresh is not None:
                out.append(refresh)
            elif _result_written(f, fn, node, 0):
                out.append((f, _statement_of(f, node), None))
        elif isinstance(node, ast.Call) and any(_holds_name(a, param) for a in [
                *node.args, *(k.value for k in node.keywords)]):
            out += _handed_param_writes(walk, f, node, param, depth)
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)) and isinstance(node.iter, ast.Name) \
                and node.iter.id == param and isinstance(node.target, ast.Name):
            out += _record_param_writes(walk, f, fn, node.target.id, depth, keys)  # (round BC: `for rec in records`)
    return out


def _statement_of(f: _File, node: ast.AST) -> ast.AST:
    """The simple statement holding node, or node itself where that is a compound one (a loop's header)."""
    stmt = next(a for a in _ancestors(f, node) if isinstance(a, ast.stmt))
    return node if isinstance(stmt, (ast.For, ast.AsyncFor, ast.While, ast.If, ast.With, ast.AsyncWith, ast.Try)) else stmt


def _ancestors(f: _File, node: ast.AST) -> Iterator[ast.AST]:
    up = f.parents.get(id(node))
    while up is not None:
        yield up
        up = f.parents.get(id(up))


def _literal_key(e: ast.AST, named: Set[str]) -> bool:
    """A literal string, or a parameter handed one (not the field's name) and never bound again."""
    return isinstance(e, ast.Constant) and isinstance(e.value, str) or isinstance(e, ast.Name) and e.id in named


def _computed_store(node: ast.AST, name: str, named: Set[str]) -> bool:
    """`setattr(name, k, v)` (`object.__setattr__`) by a name not a literal string."""
    return isinstance(node, ast.Call) and _unparse(node.func) in _SETATTRS and len(node.args) > 1 and isinstance(
        node.args[0], ast.Name) and node.args[0].id == name and not _literal_key(node.args[1], named)


def _computed_read(fn: ast.AST, node: ast.AST, name: str, named: Set[str]) -> bool:
    """`getattr(name, k)` by a name not a literal string, `vars(name)`, `name.__dict__`, `astuple(name)`; round BC:
    `name.__getattribute__` (`__getattr__`), and an `operator.attrgetter` made of names not literal called on name."""
    if isinstance(node, ast.Attribute) and node.attr in ("__dict__", "__getattribute__", "__getattr__"):
        return isinstance(node.value, ast.Name) and node.value.id == name
    if not (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Name) and node.args[0].id == name):
        return False
    callee = _unparse(node.func)
    return callee in _NAMESPACE_CALLS or callee == "getattr" and not (len(node.args) > 1 and _literal_key(
        node.args[1], named)) or _computed_getter(fn, node.func)


def _computed_getter(fn: ast.AST, func: ast.AST) -> bool:
    """Round BC: `attrgetter(...)` (`operator.`) of anything but literal strings, called as is or through a name fn
    binds to it."""
    if isinstance(func, ast.Name):
        made = [n.value for n in ast.walk(fn) if isinstance(n, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == func.id for t in n.targets)]
        return any(_computed_getter(fn, m) for m in made if not isinstance(m, ast.Name))
    return isinstance(func, ast.Call) and _unparse(func.func) in ("attrgetter", "operator.attrgetter") and not all(
        isinstance(a, ast.Constant) and isinstance(a.value, str) for a in func.args)


def _full_refresh(f: _File, fn: ast.AST, node: ast.AST, field: str) -> Optional[Tuple[_File, ast.AST, ast.AST]]:
    """`getattr(a, k).copy_(getattr(b, k))`, b a parameter fn never binds again: every field copied from b's own (the
    graph record's replay refresh), read as `b.field` is; else None."""
    up = f.parents.get(id(node))
    call = f.parents.get(id(up))
    if not (isinstance(up, ast.Attribute) and up.attr == "copy_" and isinstance(call, ast.Call) and call.func is up
            and len(call.args) == 1 and not call.keywords and isinstance(node, ast.Call) and len(node.args) == 2):
        return None
    given = call.args[0]
    if not (isinstance(given, ast.Call) and _unparse(given.func) == "getattr" and len(given.args) == 2
            and isinstance(given.args[0], ast.Name) and _unparse(given.args[1]) == _unparse(node.args[1])):
        return None
    source = given.args[0].id
    params = {a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs}
    if source not in params or any(isinstance(n, ast.Name) and n.id == source and not isinstance(n.ctx, ast.Load)
                                   for n in ast.walk(fn)):
        return None
    value = ast.copy_location(ast.Attribute(value=given.args[0], attr=field, ctx=ast.Load()), given)
    return f, call, value


def _result_written(f: _File, fn: ast.AST, node: ast.AST, depth: int) -> bool:
    """Is the value at node (or a view, item or method result of it) written in place, stored, returned or handed to a
    call (but as `copy_`'s source or to a pure reader), here or through a local bound to it? Default-deny."""
    while True:
        up = f.parents.get(id(node))
        if isinstance(up, ast.Attribute):
            if up.attr.endswith("_") or up.attr in _STORING_METHODS or not isinstance(up.ctx, ast.Load):
                return True  # an in-place method (`copy_`, `__setitem__`), a namespace's `update`, `.data = v`
            if up.attr in _TENSOR_FACTS:
                return False  # (`.shape`, `.dtype`: no tensor)
        elif isinstance(up, ast.Subscript) and up.value is node:
            if not isinstance(up.ctx, ast.Load):
                return True
        elif isinstance(up, ast.Call) and up.func is node or isinstance(up, (
                ast.List, ast.Tuple, ast.Set, ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.BoolOp, ast.Starred)) \
                or isinstance(up, ast.IfExp) and up.test is not node or isinstance(up, ast.Subscript):
            pass  # (its result, an item, a container holding it: what is done to that decides)
        elif isinstance(up, ast.Call):  # handed to a call
            callee = _unparse(up.func)
            reads = callee in _PURE_READERS or callee.endswith(".copy_") and node in up.args
            return not reads
        elif isinstance(up, ast.keyword):
            call = f.parents.get(id(up))
            return up.arg == "out" or not (isinstance(call, ast.Call) and _unparse(call.func) in _PURE_READERS)
        elif isinstance(up, (ast.Assign, ast.AnnAssign, ast.NamedExpr, ast.For, ast.AsyncFor, ast.comprehension)):
            return _bound_written(f, fn, up, node, depth)
        else:
            return not isinstance(up, _DISCARDS) and not (isinstance(up, ast.IfExp) and up.test is node)
        node = up


def _bound_written(f: _File, fn: ast.AST, binding: ast.AST, node: ast.AST, depth: int) -> bool:
    """A local bound to the value (an assignment, `:=`, a loop over it): is any read of it written (_result_written)?
    An attribute or item target stores it: handed on."""
    if isinstance(binding, (ast.For, ast.AsyncFor, ast.comprehension)) and binding.iter is not node:
        return False  # (a loop's body or condition holding it: read where it is)
    targets = binding.targets if isinstance(binding, ast.Assign) else [binding.target]
    if any(not isinstance(n, (ast.Name, ast.Tuple, ast.List, ast.Starred)) for t in targets for n in ast.walk(t)
           if not isinstance(n, (ast.Load, ast.Store))):
        return True  # (`self.buf = getattr(md, k)`: kept where other code may write it)
    names = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return depth > 3 or any(isinstance(n, ast.Name) and n.id in names and isinstance(n.ctx, ast.Load)
                            and _result_written(f, fn, n, depth + 1) for n in ast.walk(fn))


def _field_write(f: _File, node: ast.AST, field: str, slots: Dict[str, int], project: Optional["Project"] = None) \
        -> List[Tuple[_File, ast.AST, Optional[ast.AST]]]:
    """The field writes one node makes (field_writes)."""
    if _changes_field_in_place(node, field) or _alias_written(f, node, field) or _init_again(node):
        return [(f, node, None)]  # no value: nothing proves what the write leaves clipped
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == field and \
            isinstance(f.parents.get(id(node)), ast.ClassDef):
        return [(f, node, None)]  # a class serves the field by code (a property, round P): its value is not read
    if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(f.parents.get(id(node)), ast.ClassDef) \
            and not isinstance(node.value, (ast.Constant, type(None))) \
            and field in {t.id for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
                          if isinstance(t, ast.Name)}:
        return [(f, node, None)]  # `field = property(...)`, a descriptor in the class body (round R): not read
    if isinstance(node, ast.keyword) and node.arg == field:
        return [(f, node.value, node.value)]
    if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return [(f, t, node.value) for t in _flatten(targets) if isinstance(t, ast.Attribute) and t.attr == field
                or sliced_field(t, field)]
    if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Attribute) and node.target.attr == field:
        return [(f, node.target, node)]
    if _class_escapes(f, node, slots):
        return [(f, node, None)]
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and _NAMES_ONLY.fullmatch(node.value) \
            and field in _WORDS.findall(node.value) \
            and not (node.value == field and _name_read_or_set(f, node, field, slots)) and not _declared_or_logged(f, node):
        return [(f, node, None)]  # `{"field": v}` handed to a generic setattr loop: a write the reader cannot see
    if not isinstance(node, ast.Call):
        return []
    copied = _copy_into(f, node, field)
    if copied is not None:
        return [(f, node, copied)]
    literal = _literal_setattr(node, field)
    if literal is not None:
        return [(f, node, literal)]
    made = _made_by_its_class(f, node, slots)
    if made is not None:
        return [(f, node, v) for v in made]
    if _class_of_object(f, node, node.func) and (node.args or any(k.arg is None for k in node.keywords)):
        return [(f, node, None)]  # `type(md)(lens)`: an object's class, its positional slots not read (round BD)
    if project is not None and isinstance(node.func, ast.Name) and (node.args or any(k.arg is None for k in node.keywords)) \
            and _handed_class(project, f, node, node.func.id, slots):
        return [(f, node, None)]  # `record_cls(lens)`: a class a caller hands in, its slots not read (round BF)
    made = _class_handed_to_def(project, f, node, slots) if project is not None else None
    if made is not None:
        return [(*made, None)]  # (round BF: `plan(inp.Meta, lens)`, the def in a file naming no record)
    return [(f, node, v) for v in _constructed_values(node, field, slots)]


def _class_of_object(f: _File, at: ast.AST, func: ast.AST, depth: int = 0) -> bool:
    """`type(x)` or `x.__class__` called: whichever class x has, the record's among them; round BE: also a class
    read off an object by a capitalised attribute (`inp.Meta`), a `functools.partial` of one, or a local the
    enclosing def binds to one (`Record = type(md)`, `make = partial(type(md))`); a module's class (`types.X`) is none."""
    if isinstance(func, ast.Call) and _unparse(func.func) == "type" and len(func.args) == 1 \
            or isinstance(func, ast.Attribute) and (func.attr == "__class__" or func.attr[:1].isupper()
                                                    and f.module_of(func.value) is None):
        return True
    if depth > 3:
        return False
    if isinstance(func, ast.Call) and _unparse(func.func) in ("partial", "functools.partial") and func.args:
        return _class_of_object(f, at, func.args[0], depth + 1)
    if not isinstance(func, ast.Name):
        return False
    scope = f.enclosing(at, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) or f.tree
    return any(_class_of_object(f, n, n.value, depth + 1) for n in _assigns_by_name(f, scope).get(func.id, ()))


def _builds_no_record(project: "Project", f: _File, call: ast.AST, field: str, slots: Dict[str, Optional[int]]) \
        -> bool:
    """`type(self)(...)` or `self.__class__(...)` in a method of a class none of whose family (it, its subclasses
    anywhere, their bases) is or derives by name from a class declaring the field, makes an object by another class
    (`__new__`, a metaclass) or may hold the field: what it builds is no record, whatever its arguments (libcst's
    `deep_clone`). A class outside the project is trusted here as everywhere field_writes reads constructions."""
    func = call.func if isinstance(call, ast.Call) else None
    if isinstance(func, ast.Call) and _unparse(func.func) == "type" and len(func.args) == 1 and not func.keywords:
        obj = func.args[0]
    elif isinstance(func, ast.Attribute) and func.attr == "__class__":
        obj = func.value
    else:
        return False
    cls = f.instance_of(obj)
    return cls is not None and not any(
        c.name in slots or c.keywords or _class_body_binding(c, "__new__") or _may_hold(c, field)
        or any(_base_name(b) in slots for b in c.bases)
        for _, c in project.instance_family(f, cls))


# Round BF: a record class handed in as an argument (`plan(inp.Meta, lens)` calling `record_cls(lens)`): the call of
# the parameter is a construction whose positional slots no write reads, where a caller may hand it such a class.
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


def _handed_class(project: "Project", f: _File, at: ast.AST, name: str, slots: Dict[str, Optional[int]],
                  depth: int = 0) -> bool:
    """May the name read at `at` hold a class a caller hands a parameter it is bound from, one that may be the
    record's (_hands_class)?"""
    if depth > 3:
        return True  # (handed on past that many calls: not read)
    return any(_hands_class(project, g, fn, param, slots, depth) for g, fn, param in _parameters_held(f, at, name))


def _parameters_held(f: _File, at: ast.AST, name: str, depth: int = 0) -> List[Tuple[_File, ast.AST, str]]:
    """(file, def or lambda, parameter) whose value the name read at `at` may be: a parameter of an enclosing def,
    or one a local of it is bound from (`make = record_cls`, `make = functools.partial(record_cls, 64)`)."""
    out: List[Tuple[_File, ast.AST, str]] = []
    scope = f.enclosing(at, _SCOPES)
    while scope is not None and depth <= 3:
        params = scope.args
        if name in {a.arg for a in (*params.posonlyargs, *params.args, *params.kwonlyargs)}:
            return out + [(f, scope, name)]
        for assign in _assigns_by_name(f, scope).get(name, ()):
            out += [held for n in _value_names(assign.value) if n.id != name
                    for held in _parameters_held(f, assign, n.id, depth + 1)]
        scope = f.enclosing(scope, _SCOPES)
    return out


def _value_names(value: ast.AST) -> List[ast.Name]:
    """The names whose object a local bound to `value` may be: the name itself, a `partial` of one, either side of a
    conditional or `or`/`and` (a lambda, a call's result or an attribute read off a name is another object)."""
    if isinstance(value, ast.Name):
        return [value]
    if isinstance(value, ast.Call) and _unparse(value.func) in ("partial", "functools.partial") and value.args:
        return _value_names(value.args[0])
    if isinstance(value, ast.IfExp):
        return _value_names(value.body) + _value_names(value.orelse)
    if isinstance(value, ast.BoolOp):
        return [n for v in value.values for n in _value_names(v)]
    return []


def _hands_class(project: "Project", g: _File, fn: ast.AST, param: str, slots: Dict[str, Optional[int]],
                 depth: int) -> bool:
    """Does some call of fn hand `param` (or its default give) a class that may be the record's (_may_be_class), or
    may fn run by a call no reader sees (read as a value, wrapped by a decorator, imported under another name)? Used as
    a decorator, fn is handed the def it decorates (a function), or a class (the record's where of its family)."""
    key = ("handed_class", id(fn), param)
    if key in project.memo and project.memo[key][0] is fn:
        return project.memo[key][1]
    project.memo[key] = (fn, False)  # (a call handing the parameter back to its own def adds nothing)
    args = fn.args
    positional = [a.arg for a in (*args.posonlyargs, *args.args)]
    defaults = dict(zip(positional[len(positional) - len(args.defaults):], args.defaults))
    defaults.update((a.arg, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None)
    found = param in defaults and _may_be_class(project, g, fn, defaults[param], slots, depth)
    for h, node in ([] if found else _uses_of_def(project, g, fn)):
        call = h.parents.get(id(node))
        if isinstance(call, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node in call.decorator_list:
            found = isinstance(call, ast.ClassDef) and call.name in slots and positional[:1] == [param]
        elif isinstance(call, ast.Return) and _factory_decorates_defs(project, g, call):
            found = False  # (`def checked(label): def deco(fn): ...; return deco` used as `@checked("rows")` on defs)
        elif not (isinstance(call, ast.Call) and call.func is node) or any(
                isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
            found = _classes_loose(project, g, slots)  # (read as a value, under another name, or `*args`/`**kw`:
            # its callers' arguments are not all seen; a record class reaches them only where one is handed loose)
        else:
            handed = [k.value for k in call.keywords if k.arg == param] + [
                call.args[at - skip] for skip in _unfilled(g, fn, node) if param in positional
                for at in [positional.index(param)] if 0 <= at - skip < len(call.args)]
            found = any(_may_be_class(project, h, call, v, slots, depth) for v in handed)
        if found:
            break
    project.memo[key] = (fn, found)
    return found


def _factory_decorates_defs(project: "Project", g: _File, ret: ast.Return) -> bool:
    """Is the def returning a nested def only called as a decorator of defs (`@checked("rows")` on a function)? Then
    what the nested def is handed is a function, never a class (round BF: a decorator factory)."""
    factory = g.enclosing(ret, _SCOPES)
    if not isinstance(factory, (ast.FunctionDef, ast.AsyncFunctionDef)) or not _plainly_decorated(g, factory):
        return False
    uses = _uses_of_def(project, g, factory)
    return bool(uses) and all(
        isinstance(call, ast.Call) and call.func is node
        and isinstance(h.parents.get(id(call)), (ast.FunctionDef, ast.AsyncFunctionDef))
        and call in h.parents[id(call)].decorator_list
        for h, node in uses for call in [h.parents.get(id(node))])


def _classes_loose(project: "Project", g: _File, slots: Dict[str, Optional[int]]) -> bool:
    """Is a class that may be the record's read as a value anywhere a caller no reader sees may get it: an object's
    class (_class_of_object) or a class declaring the field handed to a call, stored, returned (not called, not read
    off, not type-tested), in the def's file, the module checked or a file naming such a class? (Round BF: without
    one, a def read as a value is handed none, and its parameter is an ordinary callback.)"""
    key = ("classes_loose", id(g), tuple(sorted(slots)))
    if key not in project.memo:
        checked = project.__dict__.get("_checked") or project.own()
        files = {id(h): h for h in [g, *([checked] if checked is not None else []), *project.files_naming(sorted(slots))]}
        project.memo[key] = any(_loose_class(h, n, slots) for h in files.values() for n in ast.walk(h.tree))
    return project.memo[key]


def _loose_class(f: _File, node: ast.AST, slots: Dict[str, Optional[int]]) -> bool:
    if not (isinstance(node, (ast.Call, ast.Attribute)) and _class_of_object(f, node, node)
            or isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in slots):
        return False
    up = f.parents.get(id(node))
    if isinstance(up, ast.Call) and (up.func is node or _unparse(up.func) in ("isinstance", "issubclass")) \
            or isinstance(up, (ast.Attribute, ast.Compare)) or isinstance(up, ast.Tuple) and isinstance(
                f.parents.get(id(up)), ast.Call) and _unparse(f.parents[id(up)].func) in ("isinstance", "issubclass"):
        return False
    return not (isinstance(up, ast.ClassDef) and node in up.bases)


def _may_be_class(project: "Project", f: _File, at: ast.AST, v: ast.AST, slots: Dict[str, Optional[int]],
                  depth: int) -> bool:
    """May the argument be a class of the record: an object's class (_class_of_object), a class declaring the field
    or related to one (by name), or a parameter of the caller's own def that may be one (followed up)?"""
    return _record_class_value(f, at, v, slots) or isinstance(v, ast.Name) and _handed_class(
        project, f, at, v.id, slots, depth + 1)


def _record_class_value(f: _File, at: ast.AST, v: ast.AST, slots: Dict[str, Optional[int]]) -> bool:
    """Is v, read as a value, a class that may be the record's: an object's class (_class_of_object), or a class
    declaring the field or related to one, by its name or an attribute of that name?"""
    return _class_of_object(f, at, v) or isinstance(v, ast.Name) and v.id in slots \
        or isinstance(v, ast.Attribute) and v.attr in slots


def _uses_of_def(project: "Project", g: _File, fn: ast.AST) -> List[Tuple[_File, ast.AST]]:
    """Where a def (or a lambda bound to a name) is read: its name in its own scope (a nested def's), in its file and
    the files naming it (a top-level def, `mod.name` too), `.name` in any (a method). A lambda not bound to a plain
    name, or a def wrapped by a decorator that may change what it is handed, is read at its own node."""
    owner = g.parents.get(id(fn))
    if isinstance(fn, ast.Lambda):
        if not (isinstance(owner, ast.Assign) and len(owner.targets) == 1 and isinstance(owner.targets[0], ast.Name)):
            return [(g, fn)]
        name, owner = owner.targets[0].id, g.enclosing(owner, (*_SCOPES, ast.ClassDef)) or g.tree
    elif not _plainly_decorated(g, fn):
        return [(g, fn)]
    else:
        name = fn.name
    if not isinstance(owner, (ast.Module, ast.ClassDef)):  # (a nested def: read only where its def is)
        return [(g, n) for n in ast.walk(owner) if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)]
    checked = project.__dict__.get("_checked") or project.own()
    files = {id(h): h for h in [g, *([checked] if checked is not None else []), *project.files_naming([name])]}
    out: List[Tuple[_File, ast.AST]] = []
    for h in files.values():
        for n in ast.walk(h.tree):
            if isinstance(n, ast.alias) and n.name == name and n.asname not in (None, name):
                out.append((h, n))  # (imported under another name: its calls are not seen)
            elif isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load) \
                    and (isinstance(owner, ast.Module) or h is g and g.enclosing(n, (*_SCOPES, ast.ClassDef)) is owner) \
                    or isinstance(n, ast.Attribute) and n.attr == name and isinstance(n.ctx, ast.Load) \
                    and (isinstance(owner, ast.ClassDef) or h.module_of(n.value) is not None):
                out.append((h, n))
    return out


def _class_handed_to_def(project: "Project", f: _File, call: ast.Call, slots: Dict[str, Optional[int]]) \
        -> Optional[Tuple[_File, ast.AST]]:
    """(file, call) where `call` hands a class that may be the record's (an object's class, a class of the family) to
    a def of the project (_called_def) that calls that parameter with positional arguments, or hands it on to one
    that does: the def's file may name neither the field nor the record, so field_writes reads no node of it."""
    handed = [(i, k, v) for i, k, v in [*((i, None, v) for i, v in enumerate(call.args)),
                                        *((None, k.arg, k.value) for k in call.keywords if k.arg)]
              if _record_class_value(f, call, v, slots)]
    found = _called_def(project, f, call) if handed else None
    if found is None or any(isinstance(a, ast.Starred) for a in call.args):
        return None
    g, fn = found
    positional = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)]
    params = [positional[i] if i is not None and i < len(positional) else k for i, k, _ in handed]
    return next((made for p in params if p for made in [_calls_parameter(project, g, fn, p, 0)] if made), None)


def _calls_parameter(project: "Project", g: _File, fn: ast.AST, param: str, depth: int) -> Optional[Tuple[_File, ast.AST]]:
    """(file, call) of the first call in fn of `param` (or a local bound from it) with positional or `*`/`**`
    arguments, followed through the defs of the project fn hands it on to (three deep)."""
    for n in (n for n in ast.walk(fn) if isinstance(n, ast.Call)):
        if isinstance(n.func, ast.Name) and (n.args or any(k.arg is None for k in n.keywords)) \
                and any(s is fn and p == param for _, s, p in _parameters_held(g, n, n.func.id)):
            return g, n
        names = [(i, v) for i, v in enumerate(n.args) if isinstance(v, ast.Name)
                 and any(s is fn and p == param for _, s, p in _parameters_held(g, n, v.id))]
        inner = _called_def(project, g, n) if names and depth < 3 else None
        if inner is not None and inner[1] is not fn:
            positional = [a.arg for a in (*inner[1].args.posonlyargs, *inner[1].args.args)]
            made = next((m for i, _ in names if i < len(positional)
                         for m in [_calls_parameter(project, *inner, positional[i], depth + 1)] if m), None)
            if made is not None:
                return made
    return None


def _unfilled(g: _File, fn: ast.AST, node: ast.AST) -> Tuple[int, ...]:
    """How many leading parameters a call through node may leave unfilled: 1 for a method called off an instance
    (or a classmethod), 0 for a function or a staticmethod; both for a plain method off what may be its class."""
    if not isinstance(g.parents.get(id(fn)), ast.ClassDef):
        return (0,)
    kinds = {_unparse(d) for d in fn.decorator_list}
    if "staticmethod" in kinds or "classmethod" in kinds:
        return (0,) if "staticmethod" in kinds else (1,)
    receiver = node.value if isinstance(node, ast.Attribute) else None
    return (1,) if isinstance(receiver, ast.Name) and receiver.id[:1].islower() else (0, 1)


def _base_name(base: ast.AST) -> str:
    """The class name a base spells (`Generic[T]` -> Generic, `pkg.mod.Base` -> Base)."""
    base = base.value if isinstance(base, ast.Subscript) else base
    return base.attr if isinstance(base, ast.Attribute) else base.id if isinstance(base, ast.Name) else ""


def _may_hold(cls: ast.ClassDef, field: str) -> bool:
    """May the class's code give its instances `field`: it spells the field (a name, an attribute, a keyword, a
    parameter, a word of a string), or sets an attribute by a computed name (`setattr(self, k, v)`, `__dict__`)?"""
    for n in ast.walk(cls):
        if isinstance(n, ast.Name) and n.id == field or isinstance(n, ast.Attribute) and n.attr == field \
                or isinstance(n, (ast.keyword, ast.arg)) and n.arg == field \
                or isinstance(n, ast.Constant) and isinstance(n.value, str) and field in _WORDS.findall(n.value) \
                or isinstance(n, ast.Call) and _unparse(n.func) in _SETATTRS and not (
                    len(n.args) > 1 and isinstance(n.args[1], ast.Constant)) \
                or _namespace_stored(n):
            return True
    return False


def _namespace_stored(node: ast.AST) -> bool:
    """`x.__dict__[k] = v`, `x.__dict__.update(...)`: an attribute set by a name the code does not spell."""
    target = node.value if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store) else \
        node.func.value if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
        and node.func.attr in _STORING_METHODS | {"__setitem__"} else None
    return isinstance(target, ast.Attribute) and target.attr == "__dict__"


def _assigns_by_name(f: _File, scope: ast.AST) -> Dict[str, List[ast.Assign]]:
    """The assignments under scope by each plain name they bind, read once per scope (every call of the file asks)."""
    memo = f.__dict__.setdefault("_assigns_by_scope", {})
    if id(scope) not in memo:
        found: Dict[str, List[ast.Assign]] = {}
        for n in ast.walk(scope):
            for t in n.targets if isinstance(n, ast.Assign) else ():
                if isinstance(t, ast.Name):
                    found.setdefault(t.id, []).append(n)
        memo[id(scope)] = found
    return memo[id(scope)]


def unread_construction(f: _File, node: ast.AST, field: str) -> bool:
    """Is a write field_writes gives no value a construction whose arguments are not read (the class read as a
    value, `cls(*args)`, `C(**opts)`), not a change of the tensor in place?"""
    if isinstance(node, (ast.Name, ast.Attribute)):
        return True
    in_place = isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and (
        node.func.attr.endswith("_") and not node.func.attr.startswith("__") or any(k.arg == "out" for k in node.keywords))
    return isinstance(node, ast.Call) and not (in_place or _changes_field_in_place(node, field)
                                               or _alias_written(f, node, field) or _init_again(node)
                                               or _literal_setattr(node, field) is not None)


def _class_escapes(f: _File, node: ast.AST, slots: Dict[str, Optional[int]]) -> bool:
    """A class declaring the field, read as a value that may be called where the reader does not look
    (`functools.partial(C, 64)`, `Factory: ClassVar = C`, a registry, `return C`): its positional arguments
    land in slots no write shows (round S). Its call, an attribute read off it, an annotation, a base, a type
    test and a plain alias (`A = C`: _related_slots) are not."""
    if not (isinstance(node, (ast.Name, ast.Attribute)) and isinstance(node.ctx, ast.Load)):
        return False
    if (node.id if isinstance(node, ast.Name) else node.attr) not in slots:
        return False
    up = f.parents.get(id(node))
    if isinstance(up, ast.Call) and up.func is node or isinstance(up, ast.Attribute) or isinstance(up, ast.Compare):
        return False
    if isinstance(up, ast.ClassDef) and node in up.bases or isinstance(up, ast.Assign) and all(
            isinstance(t, ast.Name) for t in up.targets):
        return False
    if isinstance(up, ast.Tuple):
        up = f.parents.get(id(up))
    if isinstance(up, ast.Call) and _unparse(up.func) in ("isinstance", "issubclass") and up.args[1:2] and (
            up.args[1] is node or isinstance(up.args[1], ast.Tuple) and node in up.args[1].elts):
        return False
    return not _in_annotation(f, node)


def _in_annotation(f: _File, node: ast.AST) -> bool:
    child, up = node, f.parents.get(id(node))
    while isinstance(up, (ast.Subscript, ast.Tuple, ast.List, ast.BinOp, ast.Attribute)):
        child, up = up, f.parents.get(id(up))
    return isinstance(up, ast.arg) and up.annotation is child or isinstance(up, ast.AnnAssign) and \
        up.annotation is child or isinstance(up, (ast.FunctionDef, ast.AsyncFunctionDef)) and up.returns is child


def _made_by_its_class(f: _File, call: ast.AST, slots: Dict[str, Optional[int]]) -> Optional[List[Optional[ast.AST]]]:
    """A construction that names no class, in a method of a class declaring the field (round S): `cls(...)`,
    `type(self)(...)`, `self.__class__(...)`, and `super().__init__(...)` / `Base.__init__(self, ...)` of a subclass:
    the positional argument at the field's place (any, where the place is not read), or None if it is none of them."""
    if not isinstance(call, ast.Call):
        return None
    cls = f.enclosing(call, ast.ClassDef)
    if cls is None:
        return None
    func, args = call.func, list(call.args)
    if isinstance(func, ast.Name) and func.id == "cls" or isinstance(func, ast.Call) and _unparse(func.func) == "type" \
            or isinstance(func, ast.Attribute) and func.attr == "__class__":
        place = slots.get(cls.name, -1)
    elif isinstance(func, ast.Attribute) and func.attr == "__init__":
        bases = [_unparse(b).rsplit(".", 1)[-1] for b in cls.bases]
        owner = _unparse(func.value).rsplit(".", 1)[-1]
        if _unparse(func.value) == "super()":
            owner = next((b for b in bases if b in slots), "")
        elif owner in slots:
            args = args[1:]  # (`Base.__init__(self, ...)`: self first)
        place = slots.get(owner, -1)
    else:
        return None
    if place == -1 or not args:
        return None if place == -1 else []
    if place is None or any(isinstance(a, ast.Starred) for a in args):
        return [None]
    return [args[place]] if len(args) > place else []


_WORDS = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")  # the names a string of names holds (round O)
_BUILTIN_BASES = frozenset(n for n in dir(builtins) if isinstance(getattr(builtins, n), type))
_NAMES_ONLY = re.compile(r"[\w,\s]+")  # a list of names (`"a b".split()`, a namedtuple's fields): not code, not a path
_LOGS = {"debug", "info", "warning", "warn", "error", "exception", "critical", "log", "print"}


def beside_string(f: _File, node: ast.Constant, values: Set[str]) -> bool:
    """Is the string an argument of a call also handed a string in `values` (a patcher's module and name)?"""
    up = f.parents.get(id(node))
    return isinstance(up, ast.Call) and any(isinstance(a, ast.Constant) and a.value in values
                                            for a in [*up.args, *(k.value for k in up.keywords)])


def spelled_as_string(project: "Project", name: str, reads: Tuple[str, ...] = ("hasattr",)) \
        -> List[Tuple[_File, ast.Constant]]:
    """Strings of other files that are exactly `name`, but a docstring, a message, a `__slots__` entry, a key handed to
    logging, a key of the namespace `type(...)` makes a class from, or the literal name of a hasattr: a way to reach it
    by name that no write spells (a `getattr` takes it as a value, whose callers are not seen: round T)."""
    out = []
    for f in project.files_naming([name]):
        for node in ast.walk(f.tree):
            if isinstance(node, ast.Constant) and node.value == name and not _declared_or_logged(f, node):
                up = f.parents.get(id(node))
                ns = f.parents.get(id(up)) if isinstance(up, ast.Dict) and node in up.keys else None
                if isinstance(ns, ast.Call) and _unparse(ns.func) == "type" and ns.args[2:3] == [up]:
                    continue  # a class `type(name, bases, ns)` makes: judged by its bases as an override
                if not (isinstance(up, ast.Call) and _unparse(up.func).removeprefix("builtins.") in reads
                        and up.args[1:2] == [node]):
                    out.append((f, node))
    return out


def _declared_or_logged(f: _File, name: ast.Constant) -> bool:
    """The string is a docstring or an f-string's text, an element of a class's `__slots__` (a declaration), or a
    key of a dict handed straight to a logging call or print (a read): round O's s11, s12."""
    up = f.parents.get(id(name))
    if isinstance(up, (ast.Expr, ast.JoinedStr)):
        return True  # a docstring, a message's text (a name built at run time is a stated assumption)
    if isinstance(up, (ast.Tuple, ast.List)):
        up = f.parents.get(id(up))
    if isinstance(up, ast.Assign) and [_unparse(t) for t in up.targets] in (["__slots__"], ["__all__"]):
        return True  # (a declaration; `__all__`: what a star import binds, read as such)
    if isinstance(up, ast.Dict) and name in up.keys:
        call = f.parents.get(id(up))
        callee = call.func.attr if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) else \
            call.func.id if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) else ""
        return callee in _LOGS and up in call.args
    return False


def _name_read_or_set(f: _File, name: ast.Constant, field: str, slots: Dict[str, int]) -> bool:
    """Is the string `field` the name of a literal getattr/hasattr (a read), of a literal setattr, or a key of a
    `**{...}` handed to a class declaring the field or to replace() (writes _field_write reads with their value)?"""
    parent = f.parents.get(id(name))
    if isinstance(parent, ast.Call) and len(parent.args) > 1 and parent.args[1] is name:
        if _unparse(parent.func) in ("getattr", "hasattr", "builtins.getattr", "builtins.hasattr"):
            return True
        return _literal_setattr(parent, field) is not None
    if isinstance(parent, ast.Call) and parent.args[:1] == [name] and isinstance(parent.func, ast.Attribute) \
            and parent.func.attr == "__setattr__":
        return _literal_setattr(parent, field) is not None
    keyword = f.parents.get(id(parent)) if isinstance(parent, ast.Dict) and name in parent.keys else None
    call = f.parents.get(id(keyword)) if isinstance(keyword, ast.keyword) and keyword.arg is None else None
    return isinstance(call, ast.Call) and bool(_constructed_values(call, field, slots))


def _field_slots(trees: List[ast.Module], field: str) -> Dict[str, Optional[int]]:
    """Classes that declare `field` (an annotated name of their body) -> its place among their annotated
    names: where a positional argument of their constructor lands (a dataclass, a NamedTuple); None where that
    place is not read off the names (a base class, a `field(...)` that may be `init=False` or `kw_only`, a
    `ClassVar`/`InitVar`/`KW_ONLY` annotation, class keywords or a decorator with arguments: round Q)."""
    out: Dict[str, Optional[int]] = {}
    for tree in trees:
        for c in ast.walk(tree):
            if isinstance(c, ast.ClassDef):
                declared = [d for d in _body_statements(c.body)
                            if isinstance(d, ast.AnnAssign) and isinstance(d.target, ast.Name)]
                names = [d.target.id for d in declared]
                if field in names:
                    out[c.name] = None if _slots_unread(c, declared, _special_names(tree)) else names.index(field)
    return out


def _body_statements(body: List[ast.stmt]) -> Iterable[ast.stmt]:
    """A class body's statements, those in its blocks (`if FP8_KV:`) too, not those of its defs and classes."""
    for stmt in body:
        yield stmt
        if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for name in ("body", "orelse", "finalbody"):
                yield from _body_statements(getattr(stmt, name, None) or [])
            for handler in getattr(stmt, "handlers", None) or []:
                yield from _body_statements(handler.body)
            for case in getattr(stmt, "cases", None) or []:
                yield from _body_statements(case.body)


_SPECIAL = ("ClassVar", "InitVar", "KW_ONLY")  # annotations that make no positional parameter, or end them


def _special_names(tree: ast.Module) -> Set[str]:
    """The names a module may spell _SPECIAL by: themselves, an import's alias (`ClassVar as Const`), a plain
    alias (`Const = typing.ClassVar`)."""
    out = set(_SPECIAL)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            out |= {a.asname for a in node.names if a.asname and a.name in _SPECIAL}
        elif isinstance(node, ast.Assign) and any(w in _SPECIAL for w in _WORDS.findall(_unparse(node.value))):
            out |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return out


def _slots_unread(c: ast.ClassDef, declared: List[ast.AnnAssign], special_names: Set[str]) -> bool:
    """Whether a positional argument's place among the class's annotated names may not be where it lands."""
    special = any(special_names & set(_WORDS.findall(_unparse(d.annotation))) for d in declared) or any(
        d not in c.body for d in declared)  # a field declared in a block of the body (round S): which run is not read
    called = any(isinstance(d.value, ast.Call) for d in declared)
    return bool(c.bases and not all(_unparse(b) in ("object", "NamedTuple", "typing.NamedTuple") for b in c.bases)) \
        or bool(c.keywords) or special or called or any(_reorders(d) for d in c.decorator_list)


def _reorders(decorator: ast.AST) -> bool:
    """A class decorator with arguments, but `dataclass(...)` without `kw_only` (sglang: `frozen=True`)."""
    if not isinstance(decorator, ast.Call):
        return False
    return _unparse(decorator.func) not in ("dataclass", "dataclasses.dataclass") or decorator.args \
        or any(k.arg in (None, "kw_only") for k in decorator.keywords)


def _related_slots(trees: List[ast.Module], slots: Dict[str, Optional[int]]) -> Dict[str, Optional[int]]:
    """Names not yet in `slots` that may construct one of its classes: a subclass (its own fields may come first
    or after: not read), an import alias or a plain `A = C` (the same class: its place)."""
    out: Dict[str, Optional[int]] = {}
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and node.name not in slots and any(
                    _unparse(b).rsplit(".", 1)[-1] in slots for b in node.bases):
                out[node.name] = None
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                for a in node.names:
                    base = a.name.rsplit(".", 1)[-1]
                    if a.asname and base in slots and a.asname not in slots:
                        out[a.asname] = slots[base]
            elif isinstance(node, ast.Assign) and isinstance(node.value, (ast.Name, ast.Attribute)) \
                    and _unparse(node.value).rsplit(".", 1)[-1] in slots:
                for t in node.targets:
                    if isinstance(t, ast.Name) and t.id not in slots:
                        out[t.id] = slots[_unparse(node.value).rsplit(".", 1)[-1]]
    return out


def _constructed_values(call: ast.Call, field: str, slots: Dict[str, int]) -> List[Optional[ast.AST]]:
    """What a call of a class declaring the field (or `replace`, `_make`) gives it besides a plain keyword:
    the positional argument at its place, a `**{...}` literal's value for it, or None for a mapping or
    arguments whose contents are not read."""
    name = _unparse(call.func).rsplit(".", 1)[-1]
    owner = _unparse(call.func.value).rsplit(".", 1)[-1] if isinstance(call.func, ast.Attribute) else ""
    if name == "_make" and owner in slots:
        given = call.args[0] if call.args else None
        place = slots[owner]
        if not isinstance(given, (ast.List, ast.Tuple)) or any(isinstance(x, ast.Starred) for x in given.elts) \
                or place is None:
            return [None]
        return [given.elts[place]] if len(given.elts) > place else []
    if name not in slots and not (slots and name in ("replace", "_replace", "evolve")):
        return []  # (`replace(x, **changes)` sets a declared field only: none is where no class declares it)
    out: List[Optional[ast.AST]] = []
    for k in call.keywords:
        if k.arg is None:  # `**mapping`
            keys = [x.value if isinstance(x, ast.Constant) else None for x in getattr(k.value, "keys", [None])]
            if not isinstance(k.value, ast.Dict) or None in keys:
                out.append(None)
            elif field in keys:
                out.append(k.value.values[keys.index(field)])
    if name in slots:
        place = slots[name]
        if any(isinstance(a, ast.Starred) for a in call.args) or place is None and call.args:
            out.append(None)  # (a place not read: any positional argument may be the field's)
        elif place is not None and len(call.args) > place:
            out.append(call.args[place])
    return out


def new_tensor_receiver(node: ast.AST, field: str) -> Optional[ast.AST]:
    """The object a field write gives a new tensor (`x.field = v`, a literal `setattr(x, "field", v)`), or None."""
    if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
        return node.value
    if isinstance(node, ast.Call) and _literal_setattr(node, field) is not None:
        return node.args[0] if _unparse(node.func) in _SETATTRS else node.func.value
    return None


_SETATTRS = ("setattr", "builtins.setattr", "object.__setattr__", "type.__setattr__")


def _literal_setattr(call: ast.Call, field: str) -> Optional[ast.AST]:
    """The value of `setattr(x, "field", v)`, `object.__setattr__(x, "field", v)` or `x.__setattr__("field", v)`."""
    callee = _unparse(call.func)
    args = call.args if callee in _SETATTRS else \
        [call.func.value, *call.args] if isinstance(call.func, ast.Attribute) and call.func.attr == "__setattr__" else []
    if len(args) == 3 and isinstance(args[1], ast.Constant) and args[1].value == field:
        return args[2]
    return None


# Methods and attributes whose result may be the field's tensor itself or a view of its storage (`.to(torch.int32)`
# and `.contiguous()` return the receiver when nothing changes; `.data`, `.detach()`, `.numpy()` share it): round P.
_FIELD_ALIASING = {"narrow", "view", "view_as", "reshape", "reshape_as", "flatten", "unflatten", "unsqueeze", "squeeze",
                   "select", "expand", "expand_as", "as_strided", "to", "type", "int", "contiguous", "detach", "cuda",
                   "cpu", "numpy", "t", "transpose", "permute", "ravel", "swapaxes", "movedim", "diagonal", "unbind",
                   "split", "chunk", "tensor_split", "unfold", "untyped_storage", "storage", "view_as_real",
                   "view_as_complex", "as_strided_", "hsplit", "vsplit"}
_SHARING_ATTRS = {"data", "T", "mT", "H", "mH", "real", "imag"}


def _aliased(call: ast.Call) -> ast.AST:
    """The tensor an aliasing call views: the receiver (`x.narrow(...)`), or the first argument of the functional
    spelling (`torch.narrow(x, ...)`, `torch.Tensor.narrow(x, ...)`: round Y)."""
    if _unparse(call.func.value) in ("torch", "torch.Tensor", "Tensor") and call.args:
        return call.args[0]
    return call.func.value


def _unviewed(e: ast.AST) -> ast.AST:
    """What `e` may share storage with: through items and slices, `.data`-like attributes and aliasing methods."""
    while True:
        if isinstance(e, ast.Subscript) or isinstance(e, ast.Attribute) and e.attr in _SHARING_ATTRS:
            e = e.value
        elif isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and e.func.attr in _FIELD_ALIASING:
            e = _aliased(e)
        elif isinstance(e, ast.NamedExpr):
            e = e.value
        else:
            return e


def _field_read(f: _File, e: ast.AST, field: str, seen: Optional[Set[int]] = None) -> bool:
    """`x.field` (through items, views and aliasing methods: `x.field.data`, `x.field.to(...)`), `getattr(x,
    "field")`, or a local any binding of which may be one (an assignment, a loop over a tuple holding one,
    `:=`, an unpacking, a loop over a namespace's values: round P)."""
    e = _unviewed(e)
    if isinstance(e, ast.Attribute):
        return e.attr == field
    if isinstance(e, ast.Call) and _unparse(e.func) == "getattr" and len(e.args) >= 2:
        return isinstance(e.args[1], ast.Constant) and e.args[1].value == field
    if isinstance(e, ast.Name):
        seen = set() if seen is None else seen
        if id(e) in seen:
            return False
        seen.add(id(e))
        values = local_value(f, e)
        if values is None:
            return _bound_from_field(f, e, field)
        return any(_field_read(f, v, field, seen) for v in values)  # (`x = x.view(-1)`: each name read once)
    return False


def _holds_field(e: ast.AST, field: str) -> bool:
    """Does `e` spell the field, or a namespace that holds it (`vars(x)`, `x.__dict__`)?"""
    return any(isinstance(n, ast.Attribute) and n.attr in (field, "__dict__") or isinstance(n, ast.Call)
               and _unparse(n.func) in ("vars", "getattr") or isinstance(n, ast.Constant) and n.value == field
               for n in ast.walk(e))


def _bound_from_field(f: _File, name: ast.Name, field: str) -> bool:
    """Is `name` bound, other than by a plain assignment, from an expression that spells the field (a loop's
    iterable, `:=`, an unpacking, a `with`), or is it a parameter? (A parameter: what a call hands it, read
    where the call is.)"""
    scope = f.enclosing(name, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) or f.tree
    for node in ast.walk(scope):
        bound = None
        if isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            bound, value = node.target, node.iter
        elif isinstance(node, ast.NamedExpr):
            bound, value = node.target, node.value
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            bound, value = (node.targets if isinstance(node, ast.Assign) else [node.target]), node.value
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            bound, value = node.optional_vars, node.context_expr
        if bound is not None and any(isinstance(n, ast.Name) and n.id == name.id for b in (
                bound if isinstance(bound, list) else [bound]) for n in ast.walk(b)) and _holds_field(value, field):
            return True
    return False


def _copy_into(f: _File, call: ast.Call, field: str) -> Optional[ast.AST]:
    """The value of `.copy_(v)` into the field: `x.field.copy_(v)`, `alias.copy_(v)`, `getattr(x, "field")
    .copy_(v)`, `torch.Tensor.copy_(x.field, v)`."""
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr == "copy_" and call.args:
        if _unparse(func.value) == "torch.Tensor":
            return call.args[1] if len(call.args) > 1 and _field_read(f, call.args[0], field) else None
        return call.args[0] if _field_read(f, func.value, field) else None
    return None


# `operator` functions that write their first argument (`operator.isub(x, 1)`, `operator.setitem(x, k, v)`)
_OPERATOR_WRITES = {"setitem", "delitem", *(f"i{op}" for op in ("add", "sub", "mul", "truediv", "floordiv", "mod",
                                                                "pow", "and", "or", "xor", "lshift", "rshift", "concat",
                                                                "matmul"))}


def _writes_handed(call: ast.Call) -> bool:
    """Does the call write the tensors it is handed, whatever its receiver: an in-place function (`torch.clamp_`,
    `torch.Tensor.sub_`; not copy_, whose value is read), `operator.isub`/`setitem`, a custom or aten op
    (`torch.ops.aten.sub_.Scalar`), an `inplace=` keyword not literally False, or an in-place function handed as
    a value (`partial(torch.Tensor.sub_, x)`): round P."""
    callee = _unparse(call.func)
    parts = callee.split(".")
    last = parts[-1]
    if last.endswith("_") and not last.endswith("__") and last != "copy_" and not isinstance(call.func, ast.Attribute):
        return True
    if isinstance(call.func, ast.Attribute) and parts[0] in ("torch", "Tensor") and last.endswith("_") \
            and last != "copy_" and not last.endswith("__"):
        return True
    if parts[0] == "operator" and last in _OPERATOR_WRITES or ".ops." in f".{callee}" or "ops" in parts[:2]:
        return True
    if any(k.arg == "inplace" and not (isinstance(k.value, ast.Constant) and k.value.value is False) for k in call.keywords):
        return True
    return any(isinstance(a, (ast.Attribute, ast.Name)) and _unparse(a).rsplit(".", 1)[-1].endswith("_")
               and not _unparse(a).endswith("__") for a in call.args)


def _alias_written(f: _File, node: ast.AST, field: str) -> bool:
    """An in-place write into the field's tensor that _changes_field_in_place does not spell: through a local
    alias of it, a view, `.data` or `getattr`, by any in-place method or function handed it (copy_ is read for
    its value), `out=`, a writing dunder, `+=`, or an item assigned."""
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Attribute) and (func.attr.endswith("_") and not func.attr.endswith("__")
                                                and func.attr != "copy_" or func.attr in _WRITING_DUNDERS):
            if _field_read(f, func.value, field):
                return True
        if _writes_handed(node) and any(_field_read(f, a, field) for a in [*node.args, *(k.value for k in node.keywords)]):
            return True
        if isinstance(func, ast.Attribute) and func.attr == "copy_" and not isinstance(_unviewed(func.value), ast.Attribute) \
                and isinstance(func.value, (ast.Subscript, ast.Call)) and _field_read(f, func.value, field):
            return True  # into a view of an alias: its value not read there
        return any(k.arg == "out" and _field_read(f, k.value, field) for k in node.keywords)
    if isinstance(node, ast.AugAssign) and _field_read(f, node.target, field):  # `lens = md.field; lens += 1`
        return True
    targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
    return any(isinstance(t, ast.Subscript) and _field_read(f, t, field) and not sliced_field(t, field)
               for t in _flatten(targets))


_WRITING_DUNDERS = {"__setitem__", "__delitem__", "__set__", "__init__", "__setstate__",
                    *(f"__i{op}__" for op in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "and", "or",
                                               "xor", "lshift", "rshift", "matmul"))}


def _init_again(node: ast.AST) -> bool:
    """`x.__init__(...)` on an object that is not the caller's own being made (`super().__init__()`,
    `Base.__init__(self, ...)` in a subclass): every field given new values again (round P)."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _MAKING):
        return False
    receiver = node.func.value
    if isinstance(receiver, ast.Call) and _unparse(receiver.func) == "super":
        return False
    return not (node.args and isinstance(node.args[0], ast.Name) and node.args[0].id == "self")


def _changes_field_in_place(node: ast.AST, field: str) -> bool:
    """A write into the tensor `x.field` holds, other than `.copy_`: an in-place method (`x.field.add_(1)`,
    `x.field[:n].clamp_(...)`), `out=x.field`, `x.field[i] = v`, `x.field[i] += v`."""
    def is_field(e: ast.AST) -> bool:
        while isinstance(e, ast.Subscript):
            e = e.value
        return isinstance(e, ast.Attribute) and e.attr == field

    def viewed(e: ast.AST) -> bool:  # `x.field.narrow(0, 0, n)`, `x.field.view(-1)`: a view of it (round O)
        while isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and e.func.attr in _FIELD_ALIASING:
            e = _aliased(e)
        return is_field(e)

    if isinstance(node, ast.Delete):  # `del md.field`: the plain read then raises (round O)
        return any(is_field(t) for t in node.targets)
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr.endswith("_") and func.attr != "copy_" and is_field(func.value):
            return True
        if isinstance(func, ast.Attribute) and func.attr.endswith("_") and isinstance(func.value, ast.Call) \
                and viewed(func.value):
            return True  # into a view of it, copy_ too: its value is not read there
        return any(k.arg == "out" and is_field(k.value) for k in node.keywords)
    targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AugAssign) else []
    return any(isinstance(t, ast.Subscript) and is_field(t) and not (isinstance(node, ast.Assign) and sliced_field(
        t, field)) or isinstance(t, ast.Attribute) and t.attr == "data" and is_field(t.value)
               for t in targets)  # `md.field.data = v`: the storage swapped (round O)


def sliced_field(t: ast.AST, field: str) -> bool:
    """`x.field[:n]` (slices only): assigned, a copy into its rows whose value is read as `.copy_(v)`'s (round T)."""
    return isinstance(t, ast.Subscript) and isinstance(t.value, ast.Attribute) and t.value.attr == field and all(
        isinstance(s, ast.Slice) for s in (t.slice.elts if isinstance(t.slice, ast.Tuple) else [t.slice]))


_MAKING = ("__init__", "__post_init__")  # the methods that make an object: called again, they remake a held one
# class decorators that hand the class back (a dataclass's methods added); any other may replace it by a pool
PLAIN_CLASS_DECORATORS = {"dataclass", "total_ordering", "final", "runtime_checkable"}


def constructed(f: _File, e: ast.AST) -> bool:
    """Is `e` a local name bound, at each of its bindings, to a class's constructor call (a capitalized
    callee: `DSAMetadata(...)`), or `self` in the `__init__`/`__post_init__` of a class that makes its instances
    anew (no `__new__`, no metaclass): a new object, which no captured CUDA graph holds?"""
    fdef = f.enclosing(e, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
    cls = f.parents.get(id(fdef)) if fdef is not None else None
    if isinstance(e, ast.Name) and e.id == "self" and isinstance(fdef, ast.FunctionDef) and fdef.name in _MAKING \
            and isinstance(cls, ast.ClassDef) and not interning(f, cls.name) and fdef.args.args[:1] \
            and fdef.args.args[0].arg == "self" and _self_rebound(fdef) is False:
        return True
    values = local_value(f, e) if isinstance(e, ast.Name) else None
    return bool(values) and all(isinstance(v, ast.Call) and _unparse(v.func).rsplit(".", 1)[-1][:1].isupper()
                                and not interning(f, _unparse(v.func).rsplit(".", 1)[-1]) for v in values)


def _self_rebound(fdef: ast.FunctionDef) -> bool:
    """Does the method bind `self` again (an assignment, a loop, a `with`)?"""
    return any(isinstance(n, ast.Name) and n.id == "self" and isinstance(n.ctx, ast.Store) for n in ast.walk(fdef))


def interning(f: _File, name: str, seen: Optional[Set[str]] = None) -> bool:
    """Does a class of that name in the file, or a base of it there, define `__new__` or take a metaclass (a
    flyweight or a pool may hand back an object it made before, a captured one: round P; a pool in a base:
    round T)?"""
    seen = (seen or set()) | {name}
    for c in (c for c in f.class_defs if c.name == name):
        if any(isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef)) and d.name == "__new__" for d in c.body) \
                or any(k.arg == "metaclass" for k in c.keywords) or any(
                    _unparse(d.func if isinstance(d, ast.Call) else d).rsplit(".", 1)[-1] not in PLAIN_CLASS_DECORATORS
                    for d in c.decorator_list):
            return True
        if any(interning(f, b, seen) for b in {_unparse(b).rsplit(".", 1)[-1] for b in c.bases} - seen):
            return True
    return any(isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef)) and d.name == name
               for d in f.tree.body)  # a capitalised function (a cache): round Q


def pooled_holders(project: "Project", field: str, own: Optional[_File]) -> List[Tuple[_File, ast.ClassDef]]:
    """The project's classes that hold `field` (declare it in their body, or set it on self) and whose
    construction may hand back an object made before: two batches' metadata (or a graph's and the eager
    path's) one object, each construction giving the other's lengths (rounds R and T)."""
    held = project.memo.get(("pooled_holders", field))
    if held is None or held[0] is not own:  # (once per field and module text, not once per site)
        held = project.memo[("pooled_holders", field)] = (own, _pooled_holders(project, field, own))
    return held[1]


def _pooled_holders(project: "Project", field: str, own: Optional[_File]) -> List[Tuple[_File, ast.ClassDef]]:
    out = []
    for f in {id(g): g for g in [*project.files_naming([field]), *([own] if own is not None else [])]}.values():
        for c in f.class_defs:
            holds = any(isinstance(d, ast.AnnAssign) and isinstance(d.target, ast.Name) and d.target.id == field
                        for d in _body_statements(c.body)) or any(
                isinstance(n, ast.Attribute) and n.attr == field and isinstance(n.ctx, ast.Store) and isinstance(
                    n.value, ast.Name) and n.value.id == "self" for n in ast.walk(c))
            if holds and interning(f, c.name):
                out.append((f, c))
    return out


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


def per_step_hook(name: str) -> bool:
    """A planner the engine calls each step (`init_forward_metadata*`), or a graph's capture or replay hook."""
    return name.startswith("init_forward_metadata") or graph_update(name) or graph_builder(name)


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
    """CUDA graphs, in the related classes of other files: a method that may run between replays (named for
    it: graph_update, and every method of the class it reads off `self`, called or not: round P) that gives
    `field` a new value (a keyword `field=`, an assignment `x.field = ...`) or gives `self.<held>` (where the
    kernel's callers read the metadata), by any assignment, a literal `setattr`/`__setattr__` or a loop's target,
    anything but an object read off `self` with no call on the way (`self.graph_metadata[bs]`) or None."""
    for f, cls in classes:
        methods = {d.name: d for d in cls.body if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef))}
        todo = [d for name, d in methods.items() if graph_update(name)]
        seen: Set[str] = set()
        while todo:
            d = todo.pop()
            if d.name in seen:
                continue
            seen.add(d.name)
            for node in ast.walk(d):
                if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in (
                        "self", cls.name) and node.attr in methods and not graph_builder(node.attr):
                    todo.append(methods[node.attr])
                why = _replay_write(node, field, held)
                if why is not None:
                    return Finding(project.rel(f.path), getattr(node, "lineno", d.lineno), f"`{d.name}` {why}")
    return None


def metadata_overrides(project: "Project", subclasses: List[Tuple[_File, ast.ClassDef]], relied: Set[str],
                       kept: Set[str]) -> Optional[Finding]:
    """The metadata's proof, in subclasses of other files: a method overriding one the proof reads (`relied`: the
    module's methods that touch the holder or what a graph keeps, or make a record) hands on to the base and
    adds nothing that decides the metadata (_only_hands_on); no method of theirs gives self an attribute in `kept`.
    A draft keeping plans per size, a replay hook that returns early or re-points the holder after `super()`, a
    builder caching records: each decides what the base's proof was about (round Z)."""
    for f, cls in subclasses:
        for d in cls.body:
            if not isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            if d.name in relied and not _only_hands_on(d, kept):
                return Finding(project.rel(f.path), d.lineno, f"`{cls.name}.{d.name}` overrides `{d.name}`, which the "
                               "metadata's proof reads, with more than a hand-on to `super()`")
            used = sorted({n.attr for n in ast.walk(d) if isinstance(n, ast.Attribute) and _is_self(n.value)
                           and n.attr in relied} - {d.name})
            if used and d.name not in relied:  # (a new hook running the base's selector: round AA)
                return Finding(project.rel(f.path), d.lineno, f"`{cls.name}.{d.name}`, a method of its own, runs "
                               f"`{used[0]}`, which the metadata's proof reads only where this module calls it")
            for node in ast.walk(d):
                if isinstance(getattr(node, "value", None), ast.Constant) and node.value.value is None:
                    continue  # (None is no record: a forward reading it fails, round Y's `reset`)
                for attr in {_self_attr_root(t) for t in _flatten(_written_targets(node))} & kept:
                    return Finding(project.rel(f.path), node.lineno, f"`{cls.name}.{d.name}` writes `self.{attr}`, "
                                   "which holds the metadata or what a graph keeps")
    return None


def _is_self(e: ast.AST) -> bool:
    return isinstance(e, ast.Name) and e.id == "self"


def _self_attr_root(e: ast.AST) -> Optional[str]:
    """`self.A`, `self.A[k]`, `self.A.b`: A; else None."""
    while isinstance(e, (ast.Subscript, ast.Attribute)) and not (isinstance(e, ast.Attribute) and _is_self(e.value)):
        e = e.value
    return e.attr if isinstance(e, ast.Attribute) and _is_self(e.value) else None


def _only_hands_on(d: ast.FunctionDef, kept: Set[str]) -> bool:
    """Is d's body, but a docstring, a call of the base's method of its name (`super().m(...)`, as a statement or
    returned) run on every call, beside statements that only log (a call on no attribute of self) or set an
    attribute of self outside `kept` to a value with no call?"""
    body = d.body[1:] if d.body and isinstance(d.body[0], ast.Expr) and isinstance(d.body[0].value, ast.Constant) \
        else d.body
    handed = 0
    for stmt in body:
        value = stmt.value if isinstance(stmt, (ast.Expr, ast.Return)) else None
        if isinstance(value, ast.Call) and _base_call(value, d.name) and _hands_own_params(value, d):
            handed += 1
        elif isinstance(stmt, ast.Expr) and isinstance(value, ast.Call) and _logs(value) and not any(
                isinstance(n, ast.Attribute) and _is_self(n.value) for n in ast.walk(value)):
            continue  # (`logger.debug(...)`; not `forward_batch.seq_lens.clamp_(min=1)`: round AB)
        elif not (isinstance(stmt, ast.Assign) and all(isinstance(t, ast.Attribute) and _is_self(t.value)
                                                       and t.attr not in kept for t in _flatten(stmt.targets))
                  and not any(isinstance(n, (ast.Call, ast.Lambda, ast.NamedExpr)) for n in ast.walk(stmt.value))):
            return False
    return handed == 1


def _logs(call: ast.Call) -> bool:
    """A call of logging or `print` (its root a logging name: rows.LOGGING_ROOTS, `logger`, `log`), handed
    nothing but names, constants and f-strings to read."""
    root = call.func
    while isinstance(root, ast.Attribute):
        root = root.value
    return isinstance(root, ast.Name) and (root.id in LOGGING_ROOTS or root.id in ("print", "logger", "log")) \
        and not any(isinstance(n, (ast.Call, ast.NamedExpr, ast.Lambda)) for a in [*call.args, *call.keywords]
                    for n in ast.walk(a))


def _hands_own_params(call: ast.Call, d: ast.FunctionDef) -> bool:
    """Does the base call hand the override's own parameters as they came, in their order (round AB: a
    `super()` hand-on of `seq_lens + 1`)? (The body's other statements rebind none: _only_hands_on.)"""
    a = d.args
    params = [x.arg for x in a.posonlyargs + a.args][1:]
    args = call.args if isinstance(call.func.value, ast.Call) else call.args[1:]  # (`Base.m(self, ...)`)
    expected = params + (["*" + a.vararg.arg] if a.vararg else [])
    given = [x.id if isinstance(x, ast.Name) else "*" + x.value.id if isinstance(x, ast.Starred) and isinstance(
        x.value, ast.Name) else "" for x in args]
    if given != expected[:len(given)]:
        return False
    named = set(params) | {x.arg for x in a.kwonlyargs}
    return all(isinstance(k.value, ast.Name) and (k.value.id == k.arg and k.arg in named if k.arg is not None
                                                  else a.kwarg is not None and k.value.id == a.kwarg.arg)
               for k in call.keywords)


def _base_call(call: ast.Call, name: str) -> bool:
    """`super().name(...)`, or `Base.name(self, ...)`."""
    func = call.func
    if not (isinstance(func, ast.Attribute) and func.attr == name):
        return False
    base = func.value
    return isinstance(base, ast.Call) and isinstance(base.func, ast.Name) and base.func.id == "super" and not base.args \
        or isinstance(base, ast.Name) and bool(call.args) and _is_self(call.args[0])


def _class_body_binding(cls: ast.ClassDef, attr: str, code_only: bool = False) -> Optional[ast.stmt]:
    """The statement of cls's body binding `attr`: a def (a property, a method), or (but with code_only) an
    assignment of it; None."""
    for stmt in cls.body:
        bound = [stmt.name] if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) else \
            [] if code_only or isinstance(stmt, ast.AnnAssign) and stmt.value is None else [  # (`indices: Tensor`
                t.id for t in _flatten(_written_targets(stmt)) if isinstance(t, ast.Name)]  # binds nothing: AQ)
        if attr in bound:
            return stmt
    return None


def _class_body_code(cls: ast.ClassDef, attr: str, f: Optional[_File] = None) -> Optional[ast.AST]:
    """What in cls serves `attr` by code (Project.serving): a def of that name; a binding of it in the body to anything
    but a literal or a declared field (`field()`, `field(default=<literal>)`: not a converter, a factory, a descriptor
    as default); a method storing on self a value of it other than a parameter as handed (`__post_init__` adding the
    drafts), by `=`, `+=`, a literal `setattr` or a base's `__init__` keyword; a method a decorator ties to it by name (a
    validator); a non-forwarding `__getattr__`, `__getattribute__` or `__setattr__` (round AJ); a class decorator but a
    record's, a metaclass but `ABCMeta`, a `__new__` spelling it, a making hook bound by assignment (round AK)."""
    made = next((d for d in cls.decorator_list if not _plain_class_decorator(d, f)), None) or next(
        (k for k in cls.keywords if k.arg == "metaclass" and _unparse(k.value) not in ("ABCMeta", "abc.ABCMeta")), None)
    if made is not None:  # (a decorator installing an `__init__`, a metaclass's `__call__`: round AK)
        return made
    hook = decorated_hook(cls)
    if hook is not None:
        return hook
    for stmt in cls.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if stmt.name == attr or stmt.name == "__new__" and _spells_name(stmt, attr) or _hook_serves(stmt) \
                    or _stores_computed(stmt, attr) or _writes_in_place(stmt, attr) \
                    or _constructor_hands_on(stmt, attr) \
                    or _makes_own_computed(stmt, cls.name, attr) or any(
                    isinstance(a, ast.Constant) and a.value == attr for d in stmt.decorator_list
                    if isinstance(d, ast.Call) for a in d.args):
                return stmt
            continue
        value = getattr(stmt, "value", None) if isinstance(stmt, (ast.Assign, ast.AnnAssign)) else None
        if value is None or isinstance(value, ast.Constant) or _declared_field(value):
            continue
        if any(isinstance(t, ast.Name) and t.id in (attr, *_MAKING_HOOKS) for t in _flatten(_written_targets(stmt))):
            return stmt  # (`__getattr__ = overlay_getattr`: a hook bound by assignment, round AK)
    return None


# Method decorators made by a call that run no code on the object's fields (a grad mode, a cache, a compile)
_PLAIN_METHOD_DECORATOR_CALLS = {"torch.no_grad", "no_grad", "torch.inference_mode", "inference_mode", "torch.compile",
                                 "functools.lru_cache", "lru_cache", "functools.cache", "functools.wraps", "wraps",
                                 "torch.jit.ignore", "torch.jit.unused", "torch.compiler.disable", "nvtx.annotate"}


def decorated_hook(cls: ast.ClassDef) -> Optional[ast.AST]:
    """A method of cls decorated by a call the reader does not know (`model_validator(mode="before")`, a library's
    hook that may rewrite any field as the object is made: round AO), or None."""
    return next((d for d in cls.body if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef)) for x in d.decorator_list
                 if isinstance(x, ast.Call) and _unparse(x.func) not in _PLAIN_METHOD_DECORATOR_CALLS), None)


def _outside_stores(f, attr: str, makings: bool = True) -> Iterable[ast.AST]:
    """The file's stores of `.attr` but a class's own methods' stores on self (which _class_body_code reads): on
    anything but self, of a value other than a plain read (`view = copy.copy(b); view.seq_lens = b.seq_lens + n`),
    or on a class object (`VerifyBatch.seq_lens = property(...)`); and, `makings`, a construction handing `attr=` a
    computed value, or `**` a mapping of computed values (a function's `SimpleNamespace(**{k: v + n ...})`): round
    AM. (The checked module's own makings are its drivers': the batches a harness hands its planner, stated.)"""
    partials, factories = _partial_makers(f.tree), _project_functions_named(f)
    for n in ast.walk(f.tree):
        if isinstance(n, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            for t in _flatten(_written_targets(n)):
                if isinstance(t, ast.Attribute) and t.attr == attr and not _own_self(f, n, t.value) and (
                        isinstance(n, ast.AugAssign) or n.value is None or not _plain_at(f, n, n.value, attr=attr)
                        or isinstance(t.value, ast.Name) and t.value.id in f.classes):
                    yield n
                elif isinstance(t, ast.Subscript) and _namespace_of(t.value) and isinstance(t.slice, ast.Constant) \
                        and t.slice.value == attr and (isinstance(n, ast.AugAssign) or n.value is None
                                                       or not _plain_at(f, n, n.value, attr=attr)):
                    yield n  # (`vars(view)["seq_lens"] = lens + n`: round AQ)
        elif isinstance(n, ast.Call) and _sets_by_name(n, attr) and not _own_self(f, n, _set_on(n)) \
                and not _plain_at(f, n, n.args[-1], attr=attr):
            yield n  # (`object.__setattr__(view, "seq_lens", lens + n)` on a copy of a frozen record: round AN)
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "update" \
                and _namespace_of(n.func.value) and any(k.arg in (attr, None) and not _plain_at(f, n, k.value, attr=attr)
                                                         for k in n.keywords):
            yield n  # (`vars(view).update(seq_lens=lens + n)`: an instance's namespace written, round AQ)
        elif makings and isinstance(n, ast.Call) and _gives_computed(f, n, attr, partials, factories):
            yield n
        elif _module_table_entry(n, attr):
            yield n  # (an `nn.Module`'s buffer or parameter by its name: torch's `__getattr__` serves it, round AQ)


def _module_table_entry(n: ast.AST, attr: str) -> bool:
    """`x.register_buffer("attr", v)` (or a parameter's) of a value other than a plain read, or the entry reached
    by its name (`x._buffers["attr"]`, `x.get_buffer("attr")`), which may be written in place or replaced."""
    if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.args \
            and isinstance(n.args[0], ast.Constant) and n.args[0].value == attr:
        if n.func.attr in ("register_buffer", "register_parameter"):
            return len(n.args) < 2 or not _plain_read(n.args[1])
        return n.func.attr in ("get_buffer", "get_parameter")
    return isinstance(n, ast.Subscript) and isinstance(n.value, ast.Attribute) \
        and n.value.attr in ("_buffers", "_parameters") and isinstance(n.slice, ast.Constant) and n.slice.value == attr


def _gives_computed(f, call: ast.Call, attr: str, partials: Set[str], factories: Set[str]) -> bool:
    """Does the call make an object (a record's class, a partial of one, a project function: `new_batch(seq_lens=
    ...)`, round AO) handing `attr=` a computed value (through a local too), `**` a mapping it computes, or, a
    class of the project, a computed value by position (a record's field order is not read)?"""
    callee = _unparse(call.func)
    imported = f.froms.get(callee, ("", ""))[1] if isinstance(call.func, ast.Name) else ""
    maker = _makes_record(call.func) or makes_a_record(imported) or callee in partials  # (`SimpleNamespace as
    # step_view`: the name it is bound to, not its spelling, round AQ)
    if not (maker or callee in factories):
        return False
    if any(k.arg == attr and not _plain_at(f, call, k.value, attr=attr) for k in call.keywords) \
            or hands_computed_mapping(call) \
            or any(k.arg is None and isinstance(k.value, ast.Name) and not _plain_mapping_at(f, call, k.value)
                   for k in call.keywords):
        return True
    return maker and (f.resolve_class(call.func)[0] is not None or callee.endswith("._make")
                      or _functional_record(f, call.func)) and any(not _plain_at(f, call, a) for a in call.args)


_RECORD_MAKERS = {"namedtuple", "NamedTuple", "make_dataclass"}


def _functional_record(f, func: ast.AST) -> bool:
    """Is `func` a record class the file makes by a call (`VerifyRec = collections.namedtuple("VerifyRec", [...])`:
    round AX), whose fields a call fills by position?"""
    return isinstance(func, ast.Name) and any(
        isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == func.id for t in n.targets)
        and isinstance(n.value, ast.Call) and _unparse(n.value.func).rsplit(".", 1)[-1] in _RECORD_MAKERS
        for n in f.tree.body)


_NAME_LOOKUPS = {"getattr", "resolve_name", "locate", "attrgetter", "methodcaller", "import_string", "getattr_static",
                 "__getattribute__"}
_NAMESPACES = {"globals", "vars", "__dict__", "locals", "getmembers"}
# (round BC) what fetches by a name its caller gives later where it is read as a value (handed, bound, returned)
_LOOKUP_VALUES = _NAME_LOOKUPS | {"globals", "vars", "locals", "getmembers"}


def _computed_lookups(f) -> Iterator[Tuple[ast.AST, ast.AST]]:
    """Each place of the file that may fetch a callable by a computed name, with its key (the place itself where the
    name is any): a lookup (`_looked_up_name`), a lookup builtin read as a value or a namespace kept (round BC)."""
    for node in ast.walk(f.tree):
        key = _looked_up_name(node)
        if key is not None:
            yield node, key
        elif _lookup_as_value(f, node) or _namespace_kept(f, node):
            up = f.parents.get(id(node))  # (shown as the expression or statement it is handed or bound in)
            yield (up if isinstance(up, (ast.expr, ast.stmt)) else node), node


def _lookup_as_value(f, node: ast.AST) -> bool:
    """A lookup builtin read but not called (`functools.reduce(getattr, parts, mod)`, `partial(getattr, mod)`,
    `fetch = inspect.getattr_static`, `m.__getattribute__`): what later calls it hands the name (round BC). An
    attribute counts off an imported module only (`self.locate` is the project's own)."""
    named = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) and (
        node.attr == "__getattribute__" or isinstance(node.value, ast.Name) and node.value.id in f.modules) else None
    if named not in _LOOKUP_VALUES or not isinstance(node.ctx, ast.Load):
        return False
    up = f.parents.get(id(node))
    return not (isinstance(up, ast.Call) and up.func is node)


def _namespace_kept(f, node: ast.AST) -> bool:
    """A namespace (`vars(m)`, `globals()`, `m.__dict__`) not read at once by an item, `.get`/`.pop`/`.items()`/
    `.values()` (`_looked_up_name` reads those), a comparison, a write (`reflection`'s) or text: bound to a
    name, handed on or looped over, any later code may fetch any of its names from it (round BC)."""
    if not _namespace_read(node) or isinstance(node, ast.Attribute) and not isinstance(node.ctx, ast.Load):
        return False
    up = f.parents.get(id(node))
    if isinstance(up, ast.Subscript) and up.value is node or isinstance(up, (ast.FormattedValue, ast.Compare)):
        return False
    if isinstance(up, ast.BinOp) and isinstance(up.op, ast.Mod) and up.right is node:  # (`"%(step)s" % vars(x)`)
        return False
    if isinstance(up, ast.Call) and node in up.args and _unparse(up.func) in ("len", "print", "repr", "str", "id"):
        return False
    if isinstance(up, ast.Attribute):
        called = isinstance(f.parents.get(id(up)), ast.Call) and f.parents[id(up)].func is up
        return not (called and up.attr in _NAMESPACE_METHODS)
    return True


# Methods of a namespace that fetch nothing by a name it keeps, or that `_looked_up_name` reads (round BC)
_NAMESPACE_METHODS = {"get", "pop", "items", "values", "keys", "update", "clear", "__contains__"}


def _looked_up_name(node: ast.AST) -> Optional[ast.AST]:
    """The key a node fetches a callable by, where it is not a literal: a lookup call's name argument, or an item
    read off a namespace (`globals()[k]`, `vars(x)[k]`, `x.__dict__[k]`, `.get(k)` of one); else None."""
    key = None
    if isinstance(node, ast.Call) and _unparse(node.func).rsplit(".", 1)[-1] in _NAME_LOOKUPS:
        at = _name_place(node)
        key = node.args[at] if len(node.args) > at else None
    elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and _namespace_read(node.value):
        key = node.slice
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("get", "pop") \
            and _namespace_read(node.func.value) and node.args:
        key = node.args[0]
    elif isinstance(node, ast.Call) and (_unparse(node.func).rsplit(".", 1)[-1] == "getmembers" or isinstance(
            node.func, ast.Attribute) and node.func.attr in ("items", "values") and _namespace_read(node.func.value)):
        key = node  # (round AX: `inspect.getmembers(self)`, `type(self).__dict__.items()` hand out every member)
    return None if key is None or isinstance(key, ast.Constant) else key


def _name_place(call: ast.Call) -> int:
    """Where a lookup call takes the name: `getattr(x, n)`, `getattr_static(x, n)`, `object.__getattribute__(x, n)`
    at 1; `x.__getattribute__(n)`, `methodcaller(n)`, `resolve_name(n)` at 0 (round BC: the first two added)."""
    last = _unparse(call.func).rsplit(".", 1)[-1]
    if last == "__getattribute__":
        return 1 if isinstance(call.func, ast.Attribute) and _unparse(call.func.value) in ("object", "type") else 0
    return 1 if last in ("getattr", "getattr_static") else 0


def _namespace_read(e: ast.AST) -> bool:
    """`globals()`, `locals()`, `vars(...)` or `<x>.__dict__`: a mapping of a scope's or an object's names."""
    return isinstance(e, ast.Call) and _unparse(e.func) in ("globals", "locals", "vars") \
        or isinstance(e, ast.Attribute) and e.attr == "__dict__"


def _may_spell(key: ast.AST, name: str) -> bool:
    """May a computed key be `name`? An f-string only where its literal parts allow it (each formatted part any
    text); anything else may be any name."""
    if not isinstance(key, ast.JoinedStr):
        return True
    pattern = "".join(re.escape(v.value) if isinstance(v, ast.Constant) else ".*" for v in key.values)
    return re.fullmatch(pattern, name, re.DOTALL) is not None


def _local_values(f, node: ast.AST, name: str) -> Optional[List[Optional[ast.AST]]]:
    """The values the function holding `node` binds `name` to (None for a binding that is no assignment: a loop's
    target, a `with`'s); None where the name is not bound there (a parameter, a global: the caller's, as before)."""
    fn = f.enclosing(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
    if fn is None:
        return None
    index = f.__dict__.setdefault("_local_bindings", {})
    if fn not in index:
        index[fn] = _bindings_in(fn)
    return index[fn].get(name)


def _bindings_in(fn: ast.AST) -> Dict[str, List[Optional[ast.AST]]]:
    """Each name a function binds -> the values it binds it to, in one walk (_local_values, asked per name)."""
    values: Dict[str, List[Optional[ast.AST]]] = {}
    for m in ast.walk(fn):
        if isinstance(m, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.NamedExpr)):
            targets = m.targets if isinstance(m, ast.Assign) else [m.target]
            direct = {t.id for t in targets if isinstance(t, ast.Name)}
            for t in direct:
                values.setdefault(t, []).append(m.value if not isinstance(m, ast.AugAssign) else None)
            for t in {t.id for t in _flatten(targets) if isinstance(t, ast.Name)} - direct:
                values.setdefault(t, []).append(None)  # (unpacked: which part is not read)
        elif isinstance(m, (ast.For, ast.AsyncFor, ast.comprehension, ast.withitem)):
            bound = getattr(m, "target", None) or getattr(m, "optional_vars", None) or m
            for t in {t.id for t in ast.walk(bound) if isinstance(t, ast.Name)}:
                values.setdefault(t, []).append(None)
    return values


def _plain_at(f, node: ast.AST, v: Optional[ast.AST], depth: int = 0, attr: str = "") -> bool:
    """A plain read (_plain_read), where a name the function binds is one on every binding (`lens = b.seq_lens
    + n; StepBatch(seq_lens=lens)` is not: round AO). Stored as `attr` (given), the read must be of that very field
    off an object (`b.seq_lens`), through the function's own bindings: another field (`b.kv_lens`), a parameter or
    a global (what its caller or another function gives it) is not these lengths (round AS)."""
    if not _plain_read(v):
        return False
    if attr and isinstance(v, ast.Attribute):
        return v.attr == attr
    if not isinstance(v, ast.Name) or depth > 4:
        return not (attr and isinstance(v, ast.Name))
    values = _local_values(f, node, v.id)
    if values is None:
        return not attr
    return all(x is not None and _plain_at(f, node, x, depth + 1, attr) for x in values)


def _plain_mapping_at(f, node: ast.AST, v: ast.Name) -> bool:
    """`**fields` where the function binds fields only to a mapping of plain values, never written by item after
    (`asdict(b) | {"seq_lens": lens + n}` is not: round AO); a parameter's (`**kwargs` handed on) is the caller's."""
    values = _local_values(f, node, v.id)
    if values is None:
        return True
    fn = f.enclosing(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
    stored = any(isinstance(m, (ast.Subscript, ast.Attribute)) and isinstance(m.ctx, ast.Store) and isinstance(
        m.value, ast.Name) and m.value.id == v.id for m in ast.walk(fn)) or any(
        isinstance(m, ast.Call) and isinstance(m.func, ast.Attribute) and isinstance(m.func.value, ast.Name)
        and m.func.value.id == v.id for m in ast.walk(fn))
    return not stored and all(isinstance(x, ast.Dict) and all(
        k is not None and _plain_at(f, node, val) for k, val in zip(x.keys, x.values)) for x in values)


def _project_functions_named(f) -> Set[str]:
    """Names the file calls functions of the project by: its own top-level defs, and names it imports from a
    module of the project."""
    own = {d.name for d in f.tree.body if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef))}
    return own | {name for name, (mod, _) in f.froms.items() if not name[:1].isupper() and f._find(f.path, mod)}


def makes_a_record(callee: str) -> bool:
    """Does a call of this last name make an object of the fields it is handed (a class by its capitalised name,
    `dataclasses.replace`, a namedtuple's `_replace`/`_make`, `b.__class__(...)`: round AN), rather than hand them to
    a function that may write into them (an output buffer)?"""
    return callee[:1].isupper() or callee in ("replace", "_replace", "__replace__", "__class__", "_make")


def _makes_record(func: ast.AST) -> bool:
    """makes_a_record of the callee's last name, or the class read off an object (`type(b)(...)`)."""
    return makes_a_record(_unparse(func).rsplit(".", 1)[-1]) \
        or isinstance(func, ast.Call) and _unparse(func.func) == "type"


def _partial_makers(tree: ast.AST) -> Set[str]:
    """Names the file binds to `functools.partial` of a record-making callee (`make = partial(StepBatch, ...)`)."""
    return {t.id for n in ast.walk(tree) if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call)
            and _unparse(n.value.func).rsplit(".", 1)[-1] == "partial" and n.value.args
            and _makes_record(n.value.args[0]) for t in n.targets if isinstance(t, ast.Name)}


def _sets_by_name(call: ast.Call, attr: str) -> bool:
    """`setattr(o, "attr", v)`, `object.__setattr__(o, "attr", v)` or `o.__setattr__("attr", v)` (round AQ); what
    value it stores is _plain_at's to read."""
    bound = isinstance(call.func, ast.Attribute) and call.func.attr == "__setattr__" \
        and _unparse(call.func.value) not in ("object", "type", "super()") and len(call.args) == 2
    named = call.args[-2] if bound or len(call.args) == 3 else None
    return (bound or _unparse(call.func) in ("setattr", "object.__setattr__") and len(call.args) == 3) \
        and isinstance(named, ast.Constant) and named.value == attr


def _set_on(call: ast.Call) -> ast.AST:
    """The object a `setattr`-like call (_sets_by_name) sets the attribute on."""
    return call.func.value if len(call.args) == 2 else call.args[0]


def _own_self(f, node: ast.AST, receiver: ast.AST) -> bool:
    """Is the receiver `self` in a method a class body defines (whose stores _class_body_code reads), not in a
    function grafted onto a class after its body (`Batch.add = _add`: round AQ)?"""
    fn = f.enclosing(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
    return _unparse(receiver) == "self" and fn is not None and isinstance(f.parents.get(id(fn)), ast.ClassDef)



def _makes_own_computed(d: ast.AST, cls_name: str, attr: str) -> bool:
    """Does the method make an object of its own class (`cls(...)`, `type(self)(...)`, `self.__class__(...)`, the
    class by name) handing `attr` (by keyword, or any positional: a record's field order is not read) a value other
    than a name, a literal or a plain read (round AM: a classmethod factory adding the drafts)?"""
    for n in ast.walk(d):
        if isinstance(n, ast.Call) and _unparse(n.func) in ("cls", "type(self)", "self.__class__", cls_name):
            given = [k.value for k in n.keywords if k.arg == attr or k.arg is None] + list(n.args)
            if any(not _plain_read(v) for v in given):
                return True
    return False


def _plain_read(v: ast.AST) -> bool:
    """A name, a literal, or an attribute read off a name (`batch.seq_lens`)."""
    while isinstance(v, ast.Attribute):
        v = v.value
    return isinstance(v, (ast.Name, ast.Constant))


# class decorators that make a record of its declared fields (a field's converter is read apart), as spelled and as
# the file's imports resolve them
_PLAIN_CLASS_DECORATORS = {"dataclass", "dataclasses.dataclass", "attrs.define", "attrs.frozen", "attr.s", "attr.attrs",
                           "define", "frozen", "functools.total_ordering", "total_ordering", "typing.final", "final",
                           "attrs.mutable", "attr.define", "attr.frozen", "attr.mutable", "typing_extensions.final"}
# their keywords that only say which methods are made and how they compare (not `field_transformer`, `these`,
# `on_setattr`: code or fields of the caller's)
_PLAIN_RECORD_KEYWORDS = {"init", "repr", "eq", "order", "unsafe_hash", "hash", "cmp", "frozen", "match_args",
                          "kw_only", "slots", "weakref_slot", "auto_attribs", "auto_exc", "auto_detect", "cache_hash",
                          "str", "collect_by_mro", "getstate_setstate"}
# library bases whose making reads no field (typing's records: their fields are read by position elsewhere)
_PLAIN_LIBRARY_BASES = {"typing.NamedTuple", "typing.TypedDict", "typing.Protocol", "typing_extensions.NamedTuple",
                        "typing_extensions.TypedDict", "typing_extensions.Protocol", "abc.ABC"}


def _plain_class_decorator(d: ast.AST, f: Optional[_File]) -> bool:
    """A record's decorator, by what the file imports under its name (pydantic's `dataclass` is not dataclasses'), called
    with none but _PLAIN_RECORD_KEYWORDS' literals (`field_transformer=` may give any field a converter: round AY)."""
    callee = d.func if isinstance(d, ast.Call) else d
    name = (f.module_of(callee) if f is not None else None) or _unparse(callee)
    return name in _PLAIN_CLASS_DECORATORS and (not isinstance(d, ast.Call) or not d.args and all(
        k.arg in _PLAIN_RECORD_KEYWORDS and isinstance(k.value, ast.Constant) for k in d.keywords))


def _annotated_call(annotation: ast.AST) -> bool:
    """Does an annotation spell `Annotated[T, <a call>, ...]` (pydantic's `AfterValidator(f)`: code a library may run
    on the field)?"""
    return any(isinstance(n, ast.Subscript) and _unparse(n.value).rsplit(".", 1)[-1] == "Annotated"
               and isinstance(n.slice, ast.Tuple) and any(isinstance(m, ast.Call) for e in n.slice.elts[1:]
                                                           for m in ast.walk(e)) for n in ast.walk(annotation))
_MAKING_HOOKS = ("__getattr__", "__getattribute__", "__setattr__", "__new__", "__init__", "__call__", "__post_init__")


def _spells_name(d: ast.AST, name: str) -> bool:
    """Does the def read or hand a name, a keyword or a parameter spelled `name` (a namedtuple's `__new__` building
    its `seq_lens` slot: round AK)?"""
    return any(isinstance(n, ast.Name) and n.id == name or isinstance(n, ast.keyword) and n.arg == name
               or isinstance(n, ast.arg) and n.arg == name for n in ast.walk(d))


_FIELD_KEYWORDS = {"default", "default_factory", "init", "repr", "compare", "hash", "kw_only", "metadata"}


def _declared_field(value: ast.AST) -> bool:
    """`field()`, `dataclasses.field(default=None, repr=False)`: a declared field holding what it is handed."""
    return isinstance(value, ast.Call) and _unparse(value.func).rsplit(".", 1)[-1] == "field" and not value.args \
        and all(k.arg in _FIELD_KEYWORDS and (k.arg != "default" or isinstance(k.value, ast.Constant))
                for k in value.keywords)


def _hook_serves(d: ast.AST) -> bool:
    """A `__getattribute__`, a `__setattr__` that does not hand its arguments on as they are, or a `__getattr__` that
    does not return the name read off what the object holds (`return getattr(self._inner, name)`)."""
    if d.name == "__getattribute__" or d.name == "__setattr__" and not forwards_setattr(d):
        return True
    if d.name != "__getattr__":
        return False
    params = [a.arg for a in d.args.args]
    body = [b for b in d.body if not (isinstance(b, ast.Expr) and isinstance(b.value, ast.Constant))]
    if len(body) == 2 and isinstance(body[0], ast.Assign) and len(body[0].targets) == 1 \
            and isinstance(body[0].targets[0], ast.Name) and isinstance(body[1], ast.Return) \
            and isinstance(body[1].value, ast.Name) and body[1].value.id == body[0].targets[0].id:
        body = [ast.Return(value=body[0].value)]  # (`value = getattr(self._inner, name); return value`)
    v = body[0].value if len(body) == 1 and isinstance(body[0], ast.Return) else None
    return not (len(params) == 2 and isinstance(v, ast.Call) and _unparse(v.func) == "getattr" and len(v.args) == 2
                and isinstance(v.args[1], ast.Name) and v.args[1].id == params[1])


def _stores_computed(d: ast.AST, attr: str) -> bool:
    """Does the method store `self.<attr>` (by `=`, `+=`, a literal `setattr`/`object.__setattr__`) a value other than
    one of its parameters as handed, or None?"""
    params = {a.arg for a in [*d.args.posonlyargs, *d.args.args, *d.args.kwonlyargs]}
    for n in ast.walk(d):
        if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Attribute) and n.target.attr == attr:
            return True
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in ("__init__", "__new__") \
                and any(k.arg == attr and not _as_handed(k.value, params) for k in n.keywords):
            return True  # (`super().__init__(seq_lens=seq_lens + drafts)`: a namespace base storing it, round AK)
        if isinstance(n, (ast.Assign, ast.AnnAssign)) and any(
                isinstance(t, ast.Attribute) and t.attr == attr and _unparse(t.value) == "self"
                for t in _flatten(_written_targets(n))):
            value = n.value
        elif isinstance(n, ast.Call) and _unparse(n.func) in ("setattr", "object.__setattr__") and len(n.args) == 3 \
                and isinstance(n.args[1], ast.Constant) and n.args[1].value == attr:
            value = n.args[2]
        elif isinstance(n, ast.Assign) and any(_instance_dict_item(t) == attr for t in n.targets):
            value = n.value  # (`self.__dict__["seq_lens"] = ...`: a frozen record's own store, round AM)
        else:
            continue
        if not (_as_handed(value, params) or isinstance(value, ast.Constant) or _itself_kept(value, attr)):
            return True
    return False


def _itself_kept(value: ast.AST, attr: str) -> bool:
    """`self.<attr>` itself, made contiguous, cloned, cast to an integer dtype or taken as a tensor (`self.seq_lens =
    self.seq_lens.to(torch.int32)`, `torch.as_tensor(self.seq_lens)`): the same lengths (round AM's safe twins)."""
    while isinstance(value, ast.Call):
        func = value.func
        if isinstance(func, ast.Attribute) and func.attr in ("contiguous", "clone", "int", "long") and not value.args \
                and not value.keywords:
            value = func.value
        elif isinstance(func, ast.Attribute) and func.attr == "to" and len(value.args) == 1 and not value.keywords \
                and _unparse(value.args[0]) in ("torch.int32", "torch.int64", "torch.long", "torch.int"):
            value = func.value
        elif _unparse(func) in ("torch.as_tensor", "torch.asarray") and len(value.args) == 1 and all(
                k.arg == "dtype" and _unparse(k.value) in ("torch.int32", "torch.int64") for k in value.keywords):
            value = value.args[0]
        else:
            return False
    return isinstance(value, ast.Attribute) and value.attr == attr and _unparse(value.value) == "self"


def _stores_any_computed(d: ast.AST) -> bool:
    """Does the method store on self, by a name it does not spell, a value other than one it is handed: a base's
    `__init__`/`__new__` handed `**` of a mapping it builds of computed values, a `setattr(self, name, ...)` of one,
    a `self.__dict__.update`/`vars(self).update` with one, a `self.__dict__[k] = v` of one, a module's buffer or
    parameter registered or stored by a computed name (torch's `__getattr__` serves it)?"""
    def computed(v: ast.AST) -> bool:  # (a value other than a name or a literal: `v + n`, `v.clamp(max=n)`)
        return not isinstance(v, (ast.Name, ast.Constant))

    for n in ast.walk(d):
        if not isinstance(n, ast.Call):
            continue
        name = _unparse(n.func)
        if isinstance(n.func, ast.Attribute) and n.func.attr in ("__init__", "__new__") and hands_computed_mapping(n):
            return True
        if name in ("setattr", "object.__setattr__") and len(n.args) == 3 and _unparse(n.args[0]) == "self" \
                and not isinstance(n.args[1], ast.Constant) and computed(n.args[2]):
            return True
        if name in ("self.__dict__.update", "vars(self).update") and any(
                _builds_computed(a) for a in [*n.args, *(k.value for k in n.keywords)]):
            return True
        if isinstance(n.func, ast.Attribute) and n.func.attr in ("register_buffer", "register_parameter") \
                and len(n.args) >= 2 and not isinstance(n.args[0], ast.Constant) and computed(n.args[1]):
            return True  # (an `nn.Module`'s buffers by the names a dict hands, torch's `__getattr__` serving them: AU)
    return any(isinstance(n, ast.Assign) and any(_instance_dict_item(t) is True or _table_item(t) for t in n.targets)
               and computed(n.value) for n in ast.walk(d))  # (`self.__dict__[k] = v + n`: round AM)


def _table_item(t: ast.AST) -> bool:
    """A store into an `nn.Module`'s buffer or parameter table by a key it computes (`self._buffers[k] = v`)."""
    return isinstance(t, ast.Subscript) and isinstance(t.value, ast.Attribute) \
        and t.value.attr in ("_buffers", "_parameters") and not isinstance(t.slice, ast.Constant)


def _instance_dict_item(t: ast.AST):
    """For a store `self.__dict__[key] = ...` / `vars(self)[key] = ...`: the key's literal text, True for a key it
    computes; None for any other target."""
    if not (isinstance(t, ast.Subscript) and _unparse(t.value) in ("self.__dict__", "vars(self)")):
        return None
    key = t.slice
    return key.value if isinstance(key, ast.Constant) and isinstance(key.value, str) else True


def hands_computed_mapping(call: ast.Call) -> bool:
    """Is the call handed `**` a mapping the code builds of computed values (`SimpleNamespace(**{k: v + n ...})`)?"""
    return any(k.arg is None and _builds_computed(k.value) for k in call.keywords)


def _builds_computed(v: ast.AST) -> bool:
    """A mapping the code builds holding a computed value: `{k: v + n for ...}`, `{"a": x * 2}`, `dict(..., a=f(x))`,
    or one any other call hands back (`low_mem_knobs(cfg)`: not read, round BA), or merged from one by `|` or a
    conditional (round BC); `vars(obj)` copies its fields."""
    if isinstance(v, ast.DictComp):
        return not isinstance(v.value, (ast.Name, ast.Constant))
    if isinstance(v, ast.Dict):
        return any(x is not None and not isinstance(x, (ast.Name, ast.Constant)) for x in v.values)
    if isinstance(v, ast.BinOp) and isinstance(v.op, ast.BitOr):
        return _builds_computed(v.left) or _builds_computed(v.right)  # (round BC: PEP 584's `raw | caps(raw)`)
    if isinstance(v, (ast.IfExp, ast.BoolOp)):
        return any(_builds_computed(x) for x in ([v.body, v.orelse] if isinstance(v, ast.IfExp) else v.values))
    if isinstance(v, ast.Call) and _unparse(v.func) in ("vars", "locals") and len(v.args) <= 1 and not v.keywords:
        return False  # (`**vars(cfg)`: the object's own fields, copied; `**locals()`: its names, each a spelling read)
    return isinstance(v, ast.Call) and (_unparse(v.func) != "dict" or any(
        not isinstance(x, (ast.Name, ast.Constant)) for x in [*v.args, *(k.value for k in v.keywords)]))
    # (round BA: `**low_mem_knobs(cfg)`, any other call's mapping, is not read: it may hold computed values)


def _writes_in_place(d: ast.AST, attr: str) -> bool:
    """Does the method change `self.<attr>`'s tensor in place (`self.seq_lens.add_(drafts)`, `self.seq_lens[:] = ...`,
    `self.seq_lens[i] += 1`: round AL; `out=self.seq_lens`, a local bound to it written so: round AM)? A method named
    like torch's in-place ones (a trailing `_`) counts."""
    def own(e: ast.AST) -> bool:
        return isinstance(e, ast.Attribute) and e.attr == attr and _unparse(e.value) == "self"

    aliases = {t.id for n in ast.walk(d) if isinstance(n, (ast.Assign, ast.NamedExpr)) and own(n.value)
               for t in (n.targets if isinstance(n, ast.Assign) else [n.target]) if isinstance(t, ast.Name)}

    def held(e: ast.AST) -> bool:  # (the field, or a local bound to it: `lens = self.seq_lens; lens += n`, AM)
        return own(e) or isinstance(e, ast.Name) and e.id in aliases

    for n in ast.walk(d):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and held(n.func.value) \
                and n.func.attr.endswith("_") and not n.func.attr.endswith("__"):
            return True
        if isinstance(n, ast.Call) and any(k.arg == "out" and held(k.value) for k in n.keywords):
            return True  # (`torch.add(self.seq_lens, n, out=self.seq_lens)`: round AM)
        targets = n.targets if isinstance(n, ast.Assign) else [n.target] if isinstance(n, ast.AugAssign) else []
        if any(isinstance(t, ast.Subscript) and held(t.value) or isinstance(n, ast.AugAssign) and held(t)
               for t in _flatten(targets)):
            return True
    return False


_CONSTRUCTORS = ("__init__", "__post_init__", "__new__")
_INERT_ATTRS = {"shape", "dtype", "device", "ndim", "is_cuda", "layout", "requires_grad"}
_INERT_METHODS = {"size", "dim", "numel", "nelement", "clone", "is_contiguous", "sum", "max", "min", "tolist",
                  "item"}
_INERT_CALLS = {"len", "isinstance", "type"}


def _constructor_hands_on(d: ast.AST, attr: str) -> bool:
    """Default-deny on a constructor (`__init__`, `__post_init__`, `__new__`) holding the object it stores under
    `attr`: `self.<attr>` and each parameter stored there as handed (`self.seq_lens = seq_lens`). Used by anything
    but that store and inert reads (`.shape`, `.dtype`, `len()`, `is None`, `.size()`, `.clone()`), the object may
    be grown or aliased before anyone reads it (`seq_lens += n` first, `self.kv_lens = seq_lens; self.kv_lens += n`,
    `self.seq_lens.view(-1).add_(n)`, a helper handed it): the class serves `attr` by code (round AR)."""
    if d.name not in _CONSTRUCTORS:
        return False
    params = {a.arg for a in [*d.args.posonlyargs, *d.args.args, *d.args.kwonlyargs]}
    roots = [r for r in map(_stored_root, _own_stored_values(d, attr))
             if isinstance(r, ast.Name) and r.id in params or _is_own_attr(r, attr)]
    kept = {id(r) for r in roots}
    tracked = {r.id for r in roots if isinstance(r, ast.Name)}
    parents = {id(c): p for p in ast.walk(d) for c in ast.iter_child_nodes(p)}
    for n in ast.walk(d):
        held = _is_own_attr(n, attr) or isinstance(n, ast.Name) and n.id in tracked
        if held and id(n) not in kept and not _inert_use(n, parents):
            return True
    return False


def _is_own_attr(e: ast.AST, attr: str) -> bool:
    """`self.<attr>`."""
    return isinstance(e, ast.Attribute) and e.attr == attr and _unparse(e.value) == "self"


def _own_stored_values(d: ast.AST, attr: str) -> List[ast.AST]:
    """The values the method stores as `self.<attr>`: a plain `=` (not an unpacking), a literal `setattr`/
    `object.__setattr__` on self, or a base's `__init__`/`__new__` keyword."""
    out: List[ast.AST] = []
    for n in ast.walk(d):
        if isinstance(n, (ast.Assign, ast.AnnAssign)) and n.value is not None and any(
                _is_own_attr(t, attr) for t in (n.targets if isinstance(n, ast.Assign) else [n.target])):
            out.append(n.value)
        elif isinstance(n, ast.Call) and _unparse(n.func) in ("setattr", "object.__setattr__") and len(n.args) == 3 \
                and _unparse(n.args[0]) == "self" and isinstance(n.args[1], ast.Constant) and n.args[1].value == attr:
            out.append(n.args[2])
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in ("__init__", "__new__"):
            out.extend(k.value for k in n.keywords if k.arg == attr)
    return out


def _stored_root(value: ast.AST) -> ast.AST:
    """What a stored value keeps the values of: under moves and casts that keep them (_as_handed's, _itself_kept's),
    the object they start from."""
    while isinstance(value, ast.Call):
        func = value.func
        if isinstance(func, ast.Attribute) and func.attr in ("contiguous", "clone", "detach", "cuda", "int", "long") \
                and not value.args and not value.keywords or isinstance(func, ast.Attribute) and func.attr == "to":
            value = func.value
        elif _unparse(func) in ("torch.as_tensor", "torch.asarray") and len(value.args) == 1:
            value = value.args[0]
        else:
            break
    return value


def _inert_use(n: ast.AST, parents: Dict[int, ast.AST]) -> bool:
    """A use of the held object that neither writes it nor hands it on: a plain store to it, a read of an inert
    attribute (`.shape`), a call of an inert method (`.size()`), `len()`/`isinstance()`/`type()` of it, `is None`."""
    p = parents.get(id(n))
    if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store):
        return isinstance(p, (ast.Assign, ast.AnnAssign)) and n in (p.targets if isinstance(p, ast.Assign)
                                                                    else [p.target])
    if isinstance(p, ast.Attribute) and p.attr in _INERT_ATTRS:
        return True
    if isinstance(p, ast.Attribute) and p.attr in _INERT_METHODS:
        return isinstance(parents.get(id(p)), ast.Call) and parents[id(p)].func is p
    if isinstance(p, ast.Call) and n in p.args and _unparse(p.func) in _INERT_CALLS:
        return True
    return isinstance(p, ast.Compare) and all(isinstance(o, (ast.Is, ast.IsNot)) for o in p.ops)


def _as_handed(value: ast.AST, params: Set[str]) -> bool:
    """A parameter as handed, or moved without a change of its values (`.contiguous()`, `.clone()`, `.detach()`,
    `.cuda()`, `.to(device=...)`, `.to(x.device)`, `.to("cuda")`)."""
    while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and (
            value.func.attr in ("contiguous", "clone", "detach", "cuda") and not value.args and not value.keywords
            or value.func.attr == "to" and all(k.arg in ("device", "non_blocking", "copy") for k in value.keywords)
            and all(isinstance(a, ast.Constant) and isinstance(a.value, str) or isinstance(a, ast.Attribute)
                    and a.attr == "device" for a in value.args)):
        value = value.func.value
    return isinstance(value, ast.Name) and value.id in params


def forwards_setattr(d: ast.AST) -> bool:
    """A `__setattr__(self, name, value)` binding none of its parameters again and handing them, as they are, to each
    `__setattr__` it calls (`super().__setattr__(name, value)`, `object.__setattr__(self, name, value)`): one that
    records the change, or raises once frozen."""
    params = [x.arg for x in d.args.posonlyargs + d.args.args]
    if len(params) != 3 or any(isinstance(n, ast.Name) and n.id in params and not isinstance(n.ctx, ast.Load)
                               for n in ast.walk(d)):
        return False
    calls = [n for n in ast.walk(d) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
             and n.func.attr == "__setattr__"]
    handed = lambda c: [_unparse(x) for x in c.args][-2:] == params[1:] and not c.keywords  # noqa: E731
    return bool(calls) and all(handed(c) for c in calls)




def _stores_attribute(node: ast.AST, attr: str) -> bool:
    """Does node write `<x>.<attr>` on an x other than `self` (attribute_stores)?"""
    def not_self(x: ast.AST) -> bool:
        return not (isinstance(x, ast.Name) and x.id == "self")
    if isinstance(node, (ast.Assign, ast.AnnAssign, ast.For, ast.AsyncFor, ast.withitem)):
        value = getattr(node, "value", ...)
        if isinstance(value, ast.Constant) and value.value is None:
            return False  # (None is no width: `clamp(max=None)` raises; sglang-kt clears a base config's so)
        targets = node.targets if isinstance(node, ast.Assign) else [
            node.optional_vars if isinstance(node, ast.withitem) else node.target]
        return any(isinstance(t, ast.Attribute) and t.attr == attr and not_self(t.value)
                   for t in _flatten([t for t in targets if t is not None]))
    if isinstance(node, ast.Attribute) and node.attr == attr and isinstance(node.ctx, ast.Del):
        return not_self(node.value)
    if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Attribute) and node.target.attr == attr:
        return not_self(node.target.value)
    if not isinstance(node, ast.Call):
        if isinstance(node, ast.Subscript) and not isinstance(node.ctx, ast.Load) and _namespace_of(node.value) \
                and isinstance(node.slice, ast.Constant) and node.slice.value == attr:
            return True  # `vars(x)["attr"] = v`, `x.__dict__["attr"] = v`
        return False
    name = _unparse(node.func)
    if name in _SETATTRS and len(node.args) > 1 and isinstance(node.args[1], ast.Constant) and node.args[1].value == attr:
        return not_self(node.args[0])
    if name.rsplit(".", 1)[-1] == "replace" and any(k.arg == attr for k in node.keywords):
        return True  # (`dataclasses.replace(cfg, index_topk=cap)`: a copy with the field set, round Z)
    keys = [a.value for a in node.args if isinstance(a, ast.Constant)] + [
        k.value for a in node.args if isinstance(a, ast.Dict) for k in a.keys if isinstance(k, ast.Constant)]
    return isinstance(node.func, ast.Attribute) and node.func.attr in ("update", "setdefault", "__setitem__") \
        and _namespace_of(node.func.value) and (any(k.arg == attr for k in node.keywords) or attr in keys)


def _namespace_of(e: ast.AST) -> bool:
    """`vars(x)`, `x.__dict__`."""
    return isinstance(e, ast.Call) and _unparse(e.func) == "vars" and bool(e.args) or \
        isinstance(e, ast.Attribute) and e.attr == "__dict__"


def _made_here(value: Optional[ast.AST], params: Set[str]) -> bool:
    """None, a parameter, or a construction (a capitalised callee, no `**` of another object's namespace)."""
    if isinstance(value, ast.Constant) and value.value is None:
        return True
    if isinstance(value, ast.Name):
        return value.id in params
    if not isinstance(value, ast.Call):
        return False
    name = _unparse(value.func).rsplit(".", 1)[-1]
    return name[:1].isupper() and name != "SimpleNamespace" and not any(k.arg is None for k in value.keywords)


def _written_in_place(f: _File, node: ast.Attribute) -> bool:
    """`x.field.copy_(...)`, `x.field[...].op_(...)`, `x.field[...] = v`."""
    up = f.parents.get(id(node))
    while isinstance(up, ast.Subscript):
        if not isinstance(up.ctx, ast.Load):
            return True
        up = f.parents.get(id(up))
    return isinstance(up, ast.Attribute) and up.attr.endswith("_") and not up.attr.endswith("__")


def _replay_write(node: ast.AST, field: str, held: Set[str]) -> Optional[str]:
    """What one node of a method between replays gives the field or the holder, where it is new (replay_writes)."""
    if isinstance(node, ast.keyword) and node.arg == field:
        return f"gives a new `{field}`"
    pairs: List[Tuple[ast.AST, Optional[ast.AST]]] = []
    if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
        pairs = [(t, node.value) for t in _flatten(node.targets if isinstance(node, ast.Assign) else [node.target])]
    elif isinstance(node, (ast.For, ast.AsyncFor, ast.withitem, ast.AugAssign)):
        target = node.optional_vars if isinstance(node, ast.withitem) else node.target
        pairs = [(t, None) for t in _flatten([target])] if target is not None else []
    elif isinstance(node, ast.Call):
        args = list(node.args)
        if isinstance(node.func, ast.Attribute) and node.func.attr == "__setattr__":
            args = [node.func.value, *args]
        elif _unparse(node.func) not in _SETATTRS:
            args = []
        if len(args) == 3 and isinstance(args[1], ast.Constant) and isinstance(args[1].value, str):
            pairs = [(ast.Attribute(value=args[0], attr=args[1].value), args[2])]
    for t, value in pairs:
        if isinstance(t, ast.Attribute) and t.attr == field:
            return f"gives `{field}` a new tensor"
        owner = t.value if isinstance(t, ast.Attribute) else None
        mine = isinstance(owner, ast.Name) and owner.id == "self" or isinstance(owner, ast.Call) and \
            _unparse(owner.func) == "super"
        if isinstance(t, ast.Attribute) and t.attr in held and mine and not _stored_off_self(value):
            return f"gives `self.{t.attr}` a new object"
    return None


def _stored_off_self(e: Optional[ast.AST]) -> bool:
    """None, or an object read off `self` through attributes and items with no call on the way."""
    if isinstance(e, ast.Constant) and e.value is None:
        return True
    return isinstance(e, (ast.Attribute, ast.Subscript)) and _is_self(chain_root(e))


def chain_root(e: ast.AST) -> ast.AST:
    """What an attribute and item chain is read off (`self.a[k].b` -> `self`)."""
    while isinstance(e, (ast.Attribute, ast.Subscript)):
        e = e.value
    return e


def served_holder(project: "Project", classes: List[Tuple[_File, ast.ClassDef]], held: Set[str]) -> Optional[Finding]:
    """The attribute the callers read the metadata from, served by code in a related class of another file (its
    name bound in the class body to anything but a constant, in an `if` or `try` of it too: a property, a
    method, a descriptor however reached; `__getattr__`/`__getattribute__` bound in any way) or set on a class
    (`cls.forward_metadata = md`, a literal `setattr(cls, ...)` in `__init_subclass__`: every instance shares
    it): round P, round Q."""
    name = sorted(held)[0] if held else ""
    for f, cls in classes:
        for stmt in _class_body(cls):
            for bound, value in _binds(stmt):
                if bound in ("__getattr__", "__getattribute__") or bound in held and not (
                        isinstance(value, ast.Constant) and value is not None):
                    return Finding(project.rel(f.path), stmt.lineno, f"`{cls.name}` binds `{bound}` at class level: "
                                   f"`{name}` may be served by code")
        for node in ast.walk(cls):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
            for t in _flatten(targets):
                if isinstance(t, ast.Attribute) and t.attr in held and _on_class(t.value, cls.name):
                    return Finding(project.rel(f.path), t.lineno, f"`{_unparse(t)}` sets the holder on a class")
            if isinstance(node, ast.Call) and any(isinstance(x, ast.Constant) and x.value in held for x in node.args) \
                    and _unparse(node.func).rsplit(".", 1)[-1] in ("setattr", "__setattr__") and not (
                    node.args and isinstance(node.args[0], ast.Name) and node.args[0].id == "self"):
                return Finding(project.rel(f.path), node.lineno, f"`{_unparse(node)[:60]}` sets the holder by name")
    return None


def _class_body(cls: ast.ClassDef) -> List[ast.stmt]:
    """The statements of a class body, in its `if`/`try`/`with`/loop blocks too, not inside its functions."""
    out: List[ast.stmt] = []
    todo = list(cls.body)
    while todo:
        stmt = todo.pop()
        out.append(stmt)
        if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for block in ("body", "orelse", "finalbody"):
                todo += [x for x in getattr(stmt, block, []) if isinstance(x, ast.stmt)]
            for h in getattr(stmt, "handlers", []):
                todo += h.body
    return out


def _binds(stmt: ast.stmt) -> List[Tuple[str, Optional[ast.AST]]]:
    """(name, value or None) for each name a class-body statement binds: a def, an assignment's targets, an import."""
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [(stmt.name, None)]
    if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        return [(t.id, stmt.value) for t in _flatten(targets) if isinstance(t, ast.Name)]
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return [((a.asname or a.name).split(".")[0], None) for a in stmt.names]
    return []


def _on_class(e: ast.AST, own: str) -> bool:
    """`cls`, `type(x)`, `x.__class__` or the class's own name: a class, not an instance."""
    if isinstance(e, ast.Call):
        return _unparse(e.func) == "type"
    if isinstance(e, ast.Attribute):
        return e.attr == "__class__"
    return isinstance(e, ast.Name) and e.id in ("cls", own)


def _binds_hook(stmt: ast.stmt) -> bool:
    """A class body binding an attribute hook by assignment (`__getattr__ = _with_drafts`: round AX), whose code no
    def of the body shows."""
    return isinstance(stmt, (ast.Assign, ast.AnnAssign)) and any(
        isinstance(t, ast.Name) and t.id in _HOOKS for t in _flatten(_written_targets(stmt)))


def _sets_up(d: ast.AST) -> bool:
    """Does an `__init_subclass__` store on the subclass by a computed name (round AX: a base putting a descriptor on
    each subclass's fields by `setattr(cls, name, ...)`; sglang's literal `cls.hf_to_sglang_mapper = ...` is read
    where the field is spelled)?"""
    return any(isinstance(n, ast.Call) and _unparse(n.func).rsplit(".", 1)[-1] in ("setattr", "__setattr__")
               and not (len(n.args) > 1 and isinstance(n.args[-2], ast.Constant)) for n in ast.walk(d))
