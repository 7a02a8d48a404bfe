"""docs/soundness.md `field-meaning`, the width's field: a field read by its name (`hf_config.index_topk`) means the
indices' width only where no code of the project gives that field a value of its own. Default-deny over every
spelling that binds a name of the field's family: an attribute store, a keyword, a class body's binding, a
parameter's default or positional argument, a dictionary's key, a string handed to `setattr` or argparse, a def.
Each is allowed only where its value is the width handed on (PLAIN_VALUES); anything else, and a string of the
family used any way not listed, is the project's own width (round AA's a3: a config's `__init__` capping it, a
dataclass default, `_replace`, a dict's `update`, argparse, `object.__setattr__`)."""
from __future__ import annotations

import ast
import hashlib
import re
from typing import Callable, Dict, List, Optional, Tuple

from . import reach
from .engine_spellings import SPELLINGS
from .rows import ENGINE_PACKAGES

PLAIN_VALUES = ("None; a field of the family read off another object (`hf.index_topk`, `getattr(hf, \"index_topk\")`, "
                "`cfg[\"index_topk\"]`, `cfg.get(\"index_topk\")`, with a default of None or 0 at most); the engine's "
                "getter; a parameter of the family's name; a dimension of a tensor handed in (`inp.indices.shape[-1]`); a "
                "name bound once to one of these; a conditional of two")
WIDTH_GETTER = re.compile(r"get_(dsa_|nsa_)?index_topk")
WIDTH_CORE = WIDTH_GETTER.pattern.rsplit("?", 1)[-1]  # the field's name (held so: a string of it is a spelling)
# calls reading a field by its string name: the slot of the string, and of a default
_READERS = {"getattr": (1, 2), "hasattr": (1, None), "get": (0, 1), "__getattribute__": (0, None),
            "__getitem__": (0, None), "__contains__": (0, None)}
# calls writing a field by its string name: the slot of the string, and of the value
_WRITERS = {"setattr": (1, 2), "__setattr__": (0, 1), "setdefault": (0, 1), "__setitem__": (0, 1)}
_NO_VALUE = ...  # a spelling that gives the name no value (a read, an annotation alone, a parameter without default)
Plain = Callable[[ast.Call], bool]  # is this call the engine's getter, as the file imports it?


def family(attr: str) -> re.Pattern:
    """The spellings of the field's name: `index_topk`, its `dsa_`/`nsa_` forms, an option's `--index-topk`."""
    core = re.sub(r"(?i)^(dsa_|nsa_)", "", attr)
    return re.compile(r"(?i)(--)?((dsa|nsa)[_-])?%s" % re.escape(core).replace("_", "[_-]"))


class _Tree:
    """A parsed file with its parent links."""

    def __init__(self, tree: ast.AST, engine_getter: Plain, getters: Dict[str, list]):
        self.tree, self.engine_getter, self.getters = tree, engine_getter, getters
        self.parents: Dict[int, ast.AST] = {id(c): p for p in ast.walk(tree) for c in ast.iter_child_nodes(p)}

    def up(self, node: ast.AST) -> Optional[ast.AST]:
        return self.parents.get(id(node))

    def scope(self, node: ast.AST) -> ast.AST:
        p = self.up(node)
        while p is not None and not isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            p = self.up(p)
        return p if p is not None else self.tree


def own_values(trees: List[Tuple[ast.AST, Plain]], attr: str) -> List[Tuple[int, int, str, str]]:
    """(index of the tree, line, what, fingerprint) for each spelling binding a name of `attr`'s family to a value
    not plain."""
    names, out = family(attr), []
    getters: Dict[str, list] = {}
    parsed = [_Tree(t, g, getters) for t, g in trees]
    for t in parsed:
        for node in t.tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                getters.setdefault(node.name, []).append((node, t))
    positional: Dict[str, List[int]] = {}
    for i, t in enumerate(parsed):
        for node in ast.walk(t.tree):
            _positional_slots(node, names, positional, t)
            found = _spelling(node, names, t)
            if found is not None and (found[0] is None or found[0] is not _NO_VALUE
                                      and not _plain(found[0], names, t, 0)):
                out.append((i, _line(node, t), found[1], fingerprint(node, t)))
    for i, t in enumerate(parsed):
        for node in ast.walk(t.tree):
            if isinstance(node, ast.Call):
                bad = _positional_handing(node, positional, names, t)
                if bad:
                    out.append((i, node.lineno, bad, fingerprint(node, t)))
    return out


def fingerprint(node: ast.AST, t: _Tree) -> str:
    """The spelling's statement as Python writes it back (a def's signature, for a parameter), under the names of
    the defs and classes holding it: what ENGINE_SPELLINGS is keyed by."""
    stmt, chain = node, []
    while stmt is not None and not isinstance(stmt, ast.stmt):
        stmt = t.up(stmt)
    if isinstance(node, ast.arg) and isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
        text = f"def {stmt.name}({ast.unparse(stmt.args)})"
    else:
        text = ast.unparse(stmt) if stmt is not None else ""
    up = t.up(stmt) if stmt is not None else None
    while up is not None:
        if isinstance(up, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            chain.append(up.name)
        up = t.up(up)
    return hashlib.sha256(("/".join(reversed(chain)) + "\n" + text).encode("utf-8", "surrogatepass")).hexdigest()[:24]


def _line(node: ast.AST, t: _Tree) -> int:
    while node is not None and not hasattr(node, "lineno"):
        node = t.up(node)
    return getattr(node, "lineno", 0)


def _named(s: object, names: re.Pattern) -> bool:
    return isinstance(s, str) and names.fullmatch(s) is not None


def _spelling(node: ast.AST, names: re.Pattern, t: _Tree) -> Optional[Tuple[object, str]]:
    """(the value given, what) where node binds a name of the family; the value `_NO_VALUE` where it gives none,
    None where it gives one not read (`+=`, an unpacking, a loop's target, a def of the name)."""
    if isinstance(node, ast.Attribute) and _named(node.attr, names) and not isinstance(node.ctx, ast.Load):
        return _stored_value(node, t), f"`.{node.attr}` is assigned"
    if isinstance(node, ast.keyword) and _named(node.arg, names):
        return node.value, f"`{node.arg}=` is handed"
    if isinstance(node, ast.arg) and _named(node.arg, names):
        return _default_of(node, t), f"parameter `{node.arg}` has a default"
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _named(node.name, names) \
            and _returns_plain(node, names, t, 0):
        return _NO_VALUE, ""  # (a property returning the config's field)
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and _named(node.name, names):
        return None, f"`{node.name}` is defined"
    if isinstance(node, ast.Name) and _named(node.id, names) and not isinstance(node.ctx, ast.Load) \
            and isinstance(t.scope(node), ast.ClassDef):
        return _stored_value(node, t), f"a class body binds `{node.id}`"
    if isinstance(node, ast.Constant) and _named(node.value, names):
        return _string_use(node, t)
    return None


def _stored_value(target: ast.AST, t: _Tree) -> object:
    """What a store of `target` assigns: the value of a plain `=` (chained too) or an annotated one (none: an
    annotation alone); None for `+=`, `del`, an unpacking, a loop's or a `with`'s target."""
    stmt = t.up(target)
    if isinstance(stmt, ast.Assign) and target in stmt.targets:
        return stmt.value
    if isinstance(stmt, ast.AnnAssign) and stmt.target is target:
        return stmt.value if stmt.value is not None else _NO_VALUE
    return None


def _default_of(arg: ast.arg, t: _Tree) -> object:
    a = t.up(arg)
    if not isinstance(a, ast.arguments):
        return _NO_VALUE
    if arg in a.kwonlyargs:
        return a.kw_defaults[a.kwonlyargs.index(arg)] or _NO_VALUE
    positional = a.posonlyargs + a.args
    if arg in positional:
        k = positional.index(arg) - (len(positional) - len(a.defaults))
        return a.defaults[k] if k >= 0 else _NO_VALUE
    return _NO_VALUE  # (`*index_topk`, `**index_topk`: a tuple or a dict, never the width read)


def _string_use(const: ast.Constant, t: _Tree) -> Optional[Tuple[object, str]]:
    """A string of the family: a dict's key, a subscript's, or what a reader or writer by name is handed."""
    p = t.up(const)
    if isinstance(p, ast.Dict) and const in p.keys:
        return p.values[p.keys.index(const)], f"a dict's key `{const.value}` is given a value"
    if isinstance(p, ast.Subscript) and p.slice is const:
        return (_NO_VALUE if isinstance(p.ctx, ast.Load) else _stored_value(p, t)), f"`[{const.value!r}]` is set"
    if isinstance(p, (ast.Compare, ast.Expr, ast.JoinedStr, ast.FormattedValue)):
        return _NO_VALUE, ""  # a comparison, a docstring, part of an f-string
    if not isinstance(p, ast.Call) or const not in p.args:
        return None, f"the string `{const.value}` is used by code not read"
    name = p.func.attr if isinstance(p.func, ast.Attribute) else p.func.id if isinstance(p.func, ast.Name) else ""
    slot = p.args.index(const)
    if name in _READERS and _READERS[name][0] == slot:
        default = _READERS[name][1]
        given = p.args[default] if default is not None and len(p.args) > default else None
        if given is None or isinstance(given, ast.Constant) and given.value in (None, 0):
            return _NO_VALUE, ""
        return given, f"`{name}({const.value!r}, ...)` has a default"
    if name in _WRITERS and _WRITERS[name][0] == slot:
        value_slot = _WRITERS[name][1]
        return (p.args[value_slot] if len(p.args) > value_slot else None), f"`{name}({const.value!r}, ...)` sets it"
    if name == "add_argument":
        if any(k.arg in ("const", "action") for k in p.keywords):
            return None, f"option `{const.value}` is declared"
        default = next((k.value for k in p.keywords if k.arg == "default"), _NO_VALUE)
        return default, f"option `{const.value}` has a default"
    return None, f"the string `{const.value}` is handed to `{name or 'a call'}`"


def _plain(v: object, names: re.Pattern, t: _Tree, depth: int) -> bool:
    """Is `v` the width handed on (PLAIN_VALUES)?"""
    if isinstance(v, ast.Constant):
        return v.value is None
    if isinstance(v, ast.Attribute):
        return _named(v.attr, names)
    if _measured(v, t):
        return True
    if isinstance(v, ast.Subscript):
        return isinstance(v.slice, ast.Constant) and _named(v.slice.value, names)
    if isinstance(v, ast.IfExp):
        return depth < 4 and _plain(v.body, names, t, depth + 1) and _plain(v.orelse, names, t, depth + 1)
    if isinstance(v, ast.Call):
        return _reads_field(v, names) or t.engine_getter(v) or _own_getter(v, names, t, depth)
    if isinstance(v, ast.Name):
        return _plain_name(v, names, t, depth)
    return False


def _own_getter(call: ast.Call, names: re.Pattern, t: _Tree, depth: int) -> bool:
    """A call of a name the file binds only by a def or an import, where every module-level def of that name in
    the files read returns only plain values (a fork's `get_dsa_index_topk(config)` returning
    `config["index_topk"]`, here or in another file)."""
    if not isinstance(call.func, ast.Name) or depth >= 4:
        return False
    name = call.func.id
    if any(isinstance(n, ast.Name) and n.id == name and not isinstance(n.ctx, ast.Load) or isinstance(
            n, (ast.Import, ast.ClassDef)) and name in _names_bound(n) for n in ast.walk(t.tree)):
        return False
    defs = t.getters.get(name, [])
    return bool(defs) and all(_returns_plain(d, names, where, depth) for d, where in defs)


def _returns_plain(fn: ast.AST, names: re.Pattern, t: "_Tree", depth: int) -> bool:
    """Does the def return, on each `return`, a plain value (and decorate itself at most as a property)?"""
    if any(not (isinstance(d, ast.Name) and d.id == "property") for d in fn.decorator_list):
        return False
    returns = [r.value for r in ast.walk(fn) if isinstance(r, ast.Return)]
    return bool(returns) and all(r is not None and _plain(r, names, t, depth + 1) for r in returns)


def _names_bound(node: ast.AST) -> set:
    if isinstance(node, ast.ClassDef):
        return {node.name}
    return {(a.asname or a.name).split(".")[0] for a in node.names}


def _measured(v: ast.AST, t: _Tree) -> bool:
    """A dimension of a tensor handed in (`inp.indices.shape[-1]`, `x.size(1)`): a chain of attributes and
    constant subscripts off a parameter of the function, never `self`. Stated: such a width is the tensor's own,
    taken as the indices' (a test driver's config); the project computes nothing in it."""
    if isinstance(v, ast.Subscript) and isinstance(v.value, ast.Attribute) and v.value.attr == "shape" \
            and isinstance(v.slice, (ast.Constant, ast.UnaryOp)):
        tensor = v.value.value
    elif isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute) and v.func.attr == "size" and not v.keywords \
            and len(v.args) == 1 and isinstance(v.args[0], (ast.Constant, ast.UnaryOp)):
        tensor = v.func.value
    else:
        return False
    while isinstance(tensor, ast.Attribute) or isinstance(tensor, ast.Subscript) and isinstance(
            tensor.slice, ast.Constant):
        tensor = tensor.value
    scope = t.scope(v)
    return isinstance(tensor, ast.Name) and tensor.id not in ("self", "cls") and isinstance(
        scope, (ast.FunctionDef, ast.AsyncFunctionDef)) and tensor.id in {
        a.arg for a in scope.args.posonlyargs + scope.args.args + scope.args.kwonlyargs} and not any(
        isinstance(n, ast.Name) and n.id == tensor.id and not isinstance(n.ctx, ast.Load) for n in ast.walk(scope))


def _reads_field(call: ast.Call, names: re.Pattern) -> bool:
    """`getattr(x, "index_topk")`, `x.get("index_topk")`, with a default of None or 0 at most."""
    name = call.func.attr if isinstance(call.func, ast.Attribute) else call.func.id if isinstance(call.func, ast.Name) \
        else ""
    if name not in ("getattr", "get") or call.keywords:
        return False
    slot, default = _READERS[name]
    return len(call.args) in (slot + 1, default + 1) and isinstance(call.args[slot], ast.Constant) \
        and _named(call.args[slot].value, names) and (len(call.args) == slot + 1 or isinstance(
            call.args[default], ast.Constant) and call.args[default].value in (None, 0))


def _plain_name(v: ast.Name, names: re.Pattern, t: _Tree, depth: int) -> bool:
    """A parameter of the family's name (its default and positional arguments are read where they are given), or a
    name its scope binds once, to a plain value."""
    scope = t.scope(v)
    if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        a = scope.args
        if v.id in {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs}:
            return _named(v.id, names)
    bindings = [n for n in ast.walk(scope) if isinstance(n, ast.Name) and n.id == v.id
                and not isinstance(n.ctx, ast.Load) and t.scope(n) is scope]
    if len(bindings) != 1 or depth >= 4:
        return False
    value = _stored_value(bindings[0], t)
    return value is not None and value is not _NO_VALUE and _plain(value, names, t, depth + 1)


def _positional_slots(node: ast.AST, names: re.Pattern, slots: Dict[str, List[int]], t: _Tree) -> None:
    """Where a def takes a parameter of the family by position: the name its calls spell (the class's, for an
    `__init__`) -> the slot a call fills (a method's `self` is not handed)."""
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return
    owner = t.up(node)
    method = isinstance(owner, ast.ClassDef) and not any(
        isinstance(d, ast.Name) and d.id == "staticmethod" for d in node.decorator_list)
    key = owner.name if method and node.name == "__init__" else node.name
    for i, a in enumerate(node.args.posonlyargs + node.args.args):
        if _named(a.arg, names):
            slots.setdefault(key, []).append(i - method)


def _positional_handing(call: ast.Call, slots: Dict[str, List[int]], names: re.Pattern, t: _Tree) -> str:
    """What is wrong where a call spelling the name of a def that takes the width by position hands it a value
    not plain there, or hands `*args`."""
    name = call.func.attr if isinstance(call.func, ast.Attribute) else call.func.id if isinstance(call.func, ast.Name) \
        else ""
    wanted = slots.get(name)
    if not wanted:
        return ""
    if any(isinstance(a, ast.Starred) for a in call.args):
        return f"`{name}(*...)` may hand the width by position"
    if any(0 <= k < len(call.args) and not _plain(call.args[k], names, t, 0) for k in wanted):
        return f"`{name}(...)` hands the width by position"
    return ""


def engine_getter(tree: ast.AST) -> Plain:
    """Is a call the engine's getter of the width: a name of WIDTH_GETTER's that the file binds only by imports
    from the engine's packages?"""
    def test(call: ast.Call) -> bool:
        return isinstance(call.func, ast.Name) and WIDTH_GETTER.fullmatch(call.func.id) is not None \
            and engine_name(tree, call.func.id)
    return test


def engine_name(tree: ast.AST, name: str) -> bool:
    """Is every binding of `name` in the file an import from the engine's packages (rows.ENGINE_PACKAGES)?"""
    found = False
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            for a in node.names:
                if (a.asname or a.name) == name:
                    found = True
                    if not (node.module or "").startswith(ENGINE_PACKAGES) or node.level:
                        return False
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
            return False
        elif isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, (ast.Store, ast.Del)):
            return False
        elif isinstance(node, ast.Import) and any((a.asname or a.name.split(".")[0]) == name for a in node.names):
            return False
    return found


def project_values(proj, attr: str, own) -> List[reach.Finding]:
    """The spellings in the project and in `own` (the file reading the field, as it is checked) giving a name of
    `attr`'s family a value of its own, those the engine's releases write (ENGINE_SPELLINGS) aside. Read once per
    family and file."""
    core = re.sub(r"(?i)^(dsa_|nsa_)", "", attr).lower()
    done = proj.__dict__.setdefault("_own_width_values", {})
    key = (core, id(own))
    if key not in done:
        words = [p + c for p in ("", "dsa_", "nsa_") for c in (core, core.upper())] + [core.replace("_", "-")]
        parsed = [f for f in proj.files_naming(words) if own is None or f.path != own.path] + [own] * (own is not None)
        found = own_values([(f.tree, engine_getter(f.tree)) for f in parsed], core)
        done[key] = [reach.Finding(proj.rel(parsed[i].path), line, what) for i, line, what, fp in found
                     if fp not in SPELLINGS]
    return done[key]
