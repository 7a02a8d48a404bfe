"""The analysis' indexes of the module, built once so each site looks up instead of scanning (calls and
functions by name, attribute writes, star imports, setattr calls, the module's classes and their bases), and
what it reads of the project (its other files: reach.Project; another module's def for the row trace; a
callee's vendored interface). The base of analysis._Analysis, which every statement's mixin reads through."""
from __future__ import annotations

import ast
from typing import Callable, Dict, List, Optional, Set, Tuple

import libcst as cst
from libcst.helpers import get_full_name_for_node

from topk_migrate import bounded, guard, kernels, project, spelling
from topk_migrate.cst.resolve import CallInfo, Function, dotted
from topk_migrate.cst.scopecheck import Tree
from topk_migrate.model import InputError
from topk_migrate.project import project_scope

from . import reach
from .quick import PARAM, expand, is_kernel
from .syntax import _bound_arguments, _is_name, _targets_attribute, binds


class ModuleIndexes:
    """The module's indexes and the project's reads (the base of analysis._Analysis)."""

    def project(self):
        """The project's other files (reach.py), read once per module checked."""
        if self._project is None:

            self._project = reach.Project(self.path, project_scope(self.path))
        return self._project

    def expand(self, name: Optional[str]) -> str:
        """A dotted name with its first part expanded through the imports (as callees are)."""
        return expand(self.facts.imports, name) if name else ""

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

    def find(self, kinds, matcher=None, within: Optional[cst.CSTNode] = None) -> List[cst.CSTNode]:
        return self.tree.find(kinds, matcher, within)

    def field_values(self, field_name: str, within: Optional[cst.CSTNode] = None) -> List[cst.BaseExpression]:
        """The values the module (or `within`) gives the field: `field=v` keywords and `x.field = v` assignments."""
        out = [a.value for a in self.find(cst.Arg, lambda a: a.keyword is not None and a.keyword.value == field_name,
                                          within)]
        return out + [n.value for n in self.find(cst.Assign, None, within) if any(
            isinstance(t.target, cst.Attribute) and t.target.attr.value == field_name for t in n.targets)]

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
        return self.index("calls", lambda: self._grouped(self.facts.calls, lambda k: _callee_name(k.node))).get(name, [])

    def every_call_named(self, name: str) -> List[cst.Call]:
        """As calls_named, over every call of the module (`super().name(...)`, a call a lambda makes: those the
        module's facts leave out), in source order."""
        return self.index("every_call", lambda: self._grouped(self.find(cst.Call), _callee_name)).get(name, [])

    def names_spelled(self, name: str) -> List[cst.Name]:
        """Every Name node spelling `name` (a read, a binding, an attribute's name), in source order."""
        return self.index("names", lambda: self._grouped(self.find(cst.Name), lambda n: n.value)).get(name, [])

    def strings_spelled(self, text: str) -> List[cst.SimpleString]:
        """Every plain string literal whose value is `text`, in source order."""
        return self.index("strings", lambda: self._grouped(self.find(cst.SimpleString), _text)).get(text, [])

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

    def _imported_from(self, name: cst.Name) -> Optional[Tuple[str, str]]:
        """(module, name) where `name`'s one binding where it is read is `from module import name` (a function's own
        import too: sglang-kt imports kpool_plan's functions inside init_forward_metadata)."""
        found = self.tree.binding(name, name.value).assignments
        node = getattr(found[0], "node", None) if len(found) == 1 else None
        if not isinstance(node, cst.ImportFrom) or isinstance(node.names, cst.ImportStar):
            return None
        module = "." * len(node.relative) + (dotted(node.module) or "" if node.module is not None else "")
        for alias in node.names:
            bound = alias.asname.name.value if alias.asname is not None else dotted(alias.name)
            if bound == name.value:
                return module, dotted(alias.name) or ""
        return None

    def imported_function(self, call: cst.Call) -> Optional[Tuple[reach._File, ast.FunctionDef, dict]]:
        """(its file, its def, the call's arguments by parameter) where the call names a function by a
        `from module import name` of a file of the project that binds the name once, to a plain def; else None."""
        own = self.project().checked_file(self.source)
        found = self._imported_from(call.func) if isinstance(call.func, cst.Name) else None
        if own is None or found is None:
            return None
        module, imported = found
        path = own._find(own.path, module)
        g = self.project()._file_at(path) if path and path.endswith(".py") else None  # (parsed once per project)
        defs = [d for d in (g.tree.body if g is not None else []) if isinstance(d, ast.FunctionDef) and d.name == imported]
        if len(defs) != 1 or defs[0].decorator_list or rebinds(g.tree, imported, defs[0]) or self._rebound_from_outside(
                g, imported):
            return None  # (its module binds the name again: `build = reuse(build)` after the def, round Y; a fallback
            # import or a def under a flag, round AY)
        a = defs[0].args
        return g, defs[0], _bound_arguments(call, [p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)])

    def _rebound_from_outside(self, g: reach._File, name: str) -> bool:
        """Does another file of the project assign or delete `name` on g's module (`plan_utils.finalize_plan = fused`,
        a literal setattr: round AY), so the call runs another function than g's def? (A computed setattr on it is
        not read: docs/soundness.md, metadata-type.)"""
        proj = self.project()
        modules = {m for m in reach._module_names(proj.rel(g.path)) if "/" not in m}
        return bool(proj.attribute_writes({name}, set(), modules))

    def outside_project(self, qualname: str) -> bool:
        """Is `qualname` defined outside this project (a library), not by one of its modules?
        Once per name and file (the row trace asks it of every call handed q, for every kernel call)."""
        def build() -> bool:

            module = qualname
            while module:  # (a module shipped in the tree, put on sys.path at run time, is the fork's code: round T)
                if kernels.find_module(self.path, module) is not None \
                        or not qualname.startswith(".") and self.project().vendored(module):
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


def _callee_name(call: cst.Call) -> Optional[str]:
    """`name` of `name(...)` and `x.name(...)`, any receiver (`super().name(...)` too)."""
    func = call.func
    return func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else None


def _text(node: cst.SimpleString) -> Optional[str]:
    value = node.evaluated_value
    return value if isinstance(value, str) else None


def handed_back(g: reach._File, fdef: ast.FunctionDef) -> List[ast.AST]:
    """What each `return` of fdef (of project file g) hands back, `dataclasses.replace(x, ...)` read as x (a copy of
    x's class; a record's own `replace` method is not: round AD)."""
    out = []
    for r in (n.value for n in ast.walk(fdef) if isinstance(n, ast.Return)):
        if isinstance(r, ast.Call) and r.args and (reach._unparse(r.func) == "dataclasses.replace" and "dataclasses"
                                                   in g.modules or g.froms.get(reach._unparse(r.func)) == (
                                                       "dataclasses", "replace")):
            r = r.args[0]
        out.append(r)
    return out


def rebinds(node: ast.AST, name: str, own: Optional[ast.AST] = None) -> bool:
    """Does anything in node (a def, a module) bind `name` (a store, or any binding `syntax.binds` lists)? Then a
    return of a parameter is not the argument, or a module's def not what its name holds."""
    return any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store)
               or binds(n, name, node, own) for n in ast.walk(node))
