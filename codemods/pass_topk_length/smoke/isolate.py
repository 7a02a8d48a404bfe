"""Run one method of an engine file without importing the engine.

A real backend (sglang's `dsa_backend.py`) imports the whole serving stack at
module level. The helper that calls the kernel needs almost none of it, so we
compile just that function, the sibling methods it calls through `self`, and
the module-level names it uses, into a fresh namespace. Imports are allowed
only from the standard library, torch and numpy; anything else is reported by
name instead of being imported. `self` is a bare instance of a stand-in class
whose attributes the caller supplies (e.g. `device_sm_major`).
"""
from __future__ import annotations
import __future__

import ast
import builtins
import sys
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Set

KERNEL_NAME = "flash_mla_sparse_fwd"
ALLOWED_ROOTS = {"torch", "numpy", "typing_extensions", "sgl_kernel"}
_STDLIB = set(getattr(sys, "stdlib_module_names", ())) or {
    "abc", "collections", "contextlib", "dataclasses", "enum", "functools", "itertools",
    "logging", "math", "os", "re", "sys", "typing", "warnings", "__future__",
}


class IsolationError(Exception):
    """The helper needs something the smoke will not import or invent."""


@dataclass
class Isolated:
    qualname: str
    cls: Optional[type]
    func_name: str
    self_attrs: Set[str]  # attributes of `self` the code reads
    module_names: List[str]  # module-level names compiled in
    namespace: dict = field(repr=False, default_factory=dict)

    def bind(self, attrs: Dict[str, object]):
        """The helper as a callable; methods get a stand-in `self` with `attrs`."""
        if self.cls is None:
            return self.namespace[self.func_name]
        missing = sorted(self.self_attrs - set(attrs))
        if missing:
            raise IsolationError(
                f"{self.qualname} reads self.{', self.'.join(missing)}; the smoke only supplies {sorted(attrs)}"
            )
        obj = self.cls.__new__(self.cls)
        for k in self.self_attrs:
            setattr(obj, k, attrs[k])
        return getattr(obj, self.func_name)


def _calls_kernel(node: ast.AST) -> bool:
    for n in ast.walk(node):
        if isinstance(n, ast.Call):
            f = n.func
            if (isinstance(f, ast.Name) and f.id == KERNEL_NAME) or (
                isinstance(f, ast.Attribute) and f.attr == KERNEL_NAME
            ):
                return True
    return False


def kernel_callers(tree: ast.Module) -> List[str]:
    """Qualified names of top-level functions and methods that call the kernel."""
    found = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _calls_kernel(node):
            found.append(node.name)
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and _calls_kernel(item):
                    found.append(f"{node.name}.{item.name}")
    return found


def find_function(tree: ast.Module, qualname: str):
    """(class node or None, function node) for `Class.method` or `function`."""
    parts = qualname.split(".")
    if len(parts) == 1:
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == parts[0]:
                return None, node
    elif len(parts) == 2:
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and node.name == parts[0]:
                for item in node.body:
                    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == parts[1]:
                        return node, item
    raise IsolationError(f"no top-level function or method {qualname!r} in the file")


def pick_helper(tree: ast.Module, qualname: Optional[str]) -> str:
    if qualname:
        find_function(tree, qualname)
        return qualname
    callers = kernel_callers(tree)
    if not callers:
        raise IsolationError(f"no function in the file calls {KERNEL_NAME}")
    if len(callers) > 1:
        raise IsolationError(f"several functions call {KERNEL_NAME} ({', '.join(callers)}): pass --function")
    return callers[0]


def _annotation_nodes(fn: ast.AST) -> Set[int]:
    """ids of annotation subtrees (not evaluated under `from __future__ import annotations`)."""
    skip = set()
    for n in ast.walk(fn):
        anns = []
        if isinstance(n, ast.arg) and n.annotation is not None:
            anns.append(n.annotation)
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.returns is not None:
            anns.append(n.returns)
        if isinstance(n, ast.AnnAssign):
            anns.append(n.annotation)
        for a in anns:
            skip.update(id(x) for x in ast.walk(a))
    return skip


def _free_names(fn: ast.AST, lazy_annotations: bool) -> Set[str]:
    skip = _annotation_nodes(fn) if lazy_annotations else set()
    loaded, bound = set(), set()
    for n in ast.walk(fn):
        if id(n) in skip:
            continue
        if isinstance(n, ast.Name):
            (loaded if isinstance(n.ctx, ast.Load) else bound).add(n.id)
        elif isinstance(n, ast.arg):
            bound.add(n.arg)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in n.names)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n is not fn:
            bound.add(n.name)
        elif isinstance(n, ast.ExceptHandler) and n.name:
            bound.add(n.name)
    return loaded - bound - set(dir(builtins))


def _self_attrs(fn: ast.AST) -> Set[str]:
    first = fn.args.args[0].arg if fn.args.args else None
    return {
        n.attr
        for n in ast.walk(fn)
        if first and isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == first
    }


def _module_bindings(tree: ast.Module) -> Dict[str, ast.stmt]:
    table = {}
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for a in node.names:
                table[(a.asname or a.name).split(".")[0]] = node
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            table[node.name] = node
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                for n in ast.walk(t):
                    if isinstance(n, ast.Name):
                        table[n.id] = node
    return table


def _check_import(node: ast.stmt, name: str) -> None:
    if isinstance(node, ast.ImportFrom):
        if node.level:
            raise IsolationError(f"needs {name!r} from a relative import of the engine package")
        mod = node.module or ""
    else:
        mod = next(a.name for a in node.names if (a.asname or a.name).split(".")[0] == name)
    root = mod.split(".")[0]
    if root not in _STDLIB and root not in ALLOWED_ROOTS:
        raise IsolationError(f"needs {name!r} from {mod!r}, which the smoke will not import (engine code)")


def isolate(source: str, filename: str, qualname: Optional[str] = None) -> Isolated:
    """Compile the helper (and only what it needs) into a fresh namespace."""
    tree = ast.parse(source, filename)
    qualname = pick_helper(tree, qualname)
    lazy = any(
        isinstance(n, ast.ImportFrom) and n.module == "__future__" and any(a.name == "annotations" for a in n.names)
        for n in tree.body
    )
    cls_node, fn_node = find_function(tree, qualname)
    bindings = _module_bindings(tree)

    # Methods reached through self, transitively.
    methods, self_attrs, todo = {}, set(), [fn_node]
    siblings = {}
    if cls_node is not None:
        siblings = {
            n.name: n for n in cls_node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
        }
    while todo:
        fn = todo.pop()
        if fn.name in methods:
            continue
        methods[fn.name] = fn
        if cls_node is None:
            break
        for attr in _self_attrs(fn):
            if attr in siblings:
                todo.append(siblings[attr])
            else:
                self_attrs.add(attr)

    # Module-level statements the compiled code needs, transitively.
    needed, todo = {}, set()
    for fn in methods.values():
        todo |= _free_names(fn, lazy)
    while todo:
        name = todo.pop()
        if name in needed or name == "__class__":
            continue
        node = bindings.get(name)
        if node is None:
            raise IsolationError(f"{qualname} uses {name!r}, which the file does not define at module level")
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            _check_import(node, name)
        else:
            todo |= _free_names(node, lazy) - set(needed)
        needed[name] = node

    body = [n for n in tree.body if any(n is v for v in needed.values())]
    if cls_node is not None:
        body.append(
            ast.ClassDef(
                name=cls_node.name,
                bases=[],
                keywords=[],
                body=[m for m in cls_node.body if any(m is v for v in methods.values())],
                decorator_list=[],
                **({"type_params": []} if sys.version_info >= (3, 12) else {}),
            )
        )
    else:
        body.append(fn_node)
    module = ast.fix_missing_locations(ast.Module(body=body, type_ignores=[]))
    flags = __future__.annotations.compiler_flag if lazy else 0
    code = compile(module, filename, "exec", flags=flags, dont_inherit=True)
    ns = {"__name__": f"topk_smoke_isolated_{abs(hash(source)) % 10**8}", "__builtins__": builtins}
    exec(code, ns)
    cls = ns[cls_node.name] if cls_node is not None else None
    return Isolated(qualname, cls, fn_node.name, self_attrs, sorted(needed), ns)


def caller_arguments(source: str, qualname: str, keyword: str = "topk_length") -> Dict[str, Optional[str]]:
    """For each method of the helper's class that calls it via self: the
    `keyword=` expression it passes (None when it passes none)."""
    tree = ast.parse(source)
    cls_node, fn_node = find_function(tree, qualname)
    out = {}
    scope = cls_node.body if cls_node is not None else tree.body
    for item in scope:
        if not isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) or item is fn_node:
            continue
        for n in ast.walk(item):
            if not isinstance(n, ast.Call):
                continue
            f = n.func
            hit = (isinstance(f, ast.Attribute) and f.attr == fn_node.name) or (
                cls_node is None and isinstance(f, ast.Name) and f.id == fn_node.name
            )
            if hit:
                kw = next((k for k in n.keywords if k.arg == keyword), None)
                key = f"{item.name}:{n.lineno}"
                out[key] = ast.unparse(kw.value) if kw is not None else None
    return out
