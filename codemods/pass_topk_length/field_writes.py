"""docs/soundness.md `field-meaning`, the width's field: a field read by its name (`hf_config.index_topk`) means the
indices' width only where no code of the project gives that field a value of its own. Default-deny over every
spelling of a name of the field's family: an attribute store, a keyword, a class body's or a module's binding, a
record class's field, a dictionary's key, a string holding the name
(handed to `setattr`, argparse, a template, a list of fields), a def. Each is allowed only where its value is the
width handed on (PLAIN_VALUES); anything else is the project's own width (round AA's a3: a config's `__init__`
capping it, a dataclass default, `_replace`, a dict's `update`, argparse, `object.__setattr__`; round AB's b3:
positional records, templates, overrides, closures). The files of the engine's releases are the engine's
(ENGINE_FILES, by their bytes)."""
from __future__ import annotations

import ast
import functools
import hashlib
import re
from typing import Callable, Iterator, List, Optional, Set, Tuple

from . import engine_defs, reach, syntax
from .engine_spellings import ENGINE_FILES
from .rows import LOGGING_ROOTS, MAPPING_FILLS, engine_module

PLAIN_VALUES = ("None; a field of the family read off another object (`hf.index_topk`, `getattr(hf, \"index_topk\")`, "
                "`cfg[\"index_topk\"]`, `cfg.get(\"index_topk\")`, a default of None at most); the engine's getter; a "
                "def of the file, or one it imports from the project, returning only these; a keyword-only parameter "
                "of the family's name; a dimension of a tensor handed in (`inp.indices.shape[-1]`); a name bound only "
                "to one of these; `int()` or a conditional of these")
WIDTH_GETTER = re.compile(r"get_(dsa_|nsa_)?index_topk")
WIDTH_CORE = WIDTH_GETTER.pattern.rsplit("?", 1)[-1]  # the field's name (held so: a string of it is a spelling)
# calls reading a field by its string name: the slot of the string, and of a default
_READERS = {"getattr": (1, 2), "hasattr": (1, None), "get": (0, 1), "__getattribute__": (0, None),
            "__getitem__": (0, None), "__contains__": (0, None)}
# calls writing a field by its string name: the slot of the string, and of the value
_WRITERS = {"setattr": (1, 2), "__setattr__": (0, 1), "setdefault": (0, 1), "__setitem__": (0, 1)}
_OPTION_KEYWORDS = {"help", "metavar", "required"}  # argparse keywords that give an option no value
_NO_VALUE = ...  # a spelling that gives the name no value (a read, an annotation alone, a keyword-only parameter)
Plain = Callable[[ast.Call], bool]  # is this call the engine's getter, as the file imports it?
Imported = Callable[[str], Optional[int]]  # the index of the tree a name the file imports from the project comes from


def family(attr: str) -> re.Pattern:
    """The spellings of the field's name: `index_topk`, its `dsa_`/`nsa_` forms, an option's `--index-topk`, a
    private field's `_index_topk` and its class-mangled `_Config__index_topk` (round AB: a property serving it)."""
    core = re.sub(r"(?i)^_*(dsa_|nsa_)", "", attr.lstrip("_"))
    return re.compile(r"(?i)(--|_[A-Za-z]\w*?__|_+)?((dsa|nsa)[_-])?%s" % re.escape(core).replace("_", "[_-]"))


def _inside(names: re.Pattern) -> re.Pattern:
    """The family's name inside a longer string (`'{"index_topk": 8}'`, `"index_topk=8"`, `"a index_topk"`)."""
    return re.compile(r"(?<![A-Za-z0-9])(?:%s)(?![A-Za-z0-9_])" % names.pattern.replace("(?i)", ""), re.I)


class _Tree:
    """A parsed file with its parent links, the engine's getter test, and where its imported names come from."""

    def __init__(self, tree: ast.AST, engine_getter: Plain, imported: Imported, others: List["_Tree"]):
        self.tree, self.engine_getter, self.imported, self.others = tree, engine_getter, imported, others
        self.referencing: Callable[[str], List["_Tree"]] = lambda name: [self]
        self.swapped: Callable[[str], bool] = lambda name: False
        self.spellings: Callable[[str], Set[str]] = lambda name: {name}  # (every name the project binds `name` to)
        self._spelled: Optional[dict] = None
        self._items: Optional[bool] = None
        self._assigns: Optional[dict] = None
        self.memo: dict = {}  # (what, key) -> a class question's answer for this file (_classes_named, _serves_reads)

    def assigns(self, key: object) -> List[ast.Assign]:
        """The file's plain `=` statements (annotated ones with a value too: round BB) assigning a name (key: the
        name) or an attribute of self (key: ("self", attr)), indexed once."""
        if self._assigns is None:
            self._assigns = {}
            for n in ast.walk(self.tree):
                for x in n.targets if isinstance(n, ast.Assign) else [n.target] if isinstance(
                        n, ast.AnnAssign) and n.value is not None else ():
                    k = x.id if isinstance(x, ast.Name) else ("self", x.attr) if isinstance(x, ast.Attribute) \
                        and isinstance(x.value, ast.Name) and x.value.id == "self" else None
                    if k is not None:
                        self._assigns.setdefault(k, []).append(n)
        return self._assigns.get(key, [])

    def remember(self, key: object, compute: Callable[[], object]):
        """compute()'s answer, asked once per file and key (self.memo)."""
        if key not in self.memo:
            self.memo[key] = compute()
        return self.memo[key]

    def classes(self, name: str) -> List[ast.ClassDef]:
        """The file's classes named `name`, at any depth (indexed once)."""
        def index() -> dict:
            found: dict = {}
            for n in ast.walk(self.tree):
                if isinstance(n, ast.ClassDef):
                    found.setdefault(n.name, []).append(n)
            return found
        return self.remember("classes", index).get(name, [])

    @functools.cached_property
    def parents(self) -> dict:
        """Each node's parent, by id (built when first asked: a file found by a name is mostly asked of its classes)."""
        return {id(c): p for p in ast.walk(self.tree) for c in ast.iter_child_nodes(p)}

    def spelled(self, name: str) -> List[ast.AST]:
        """The file's names, attributes and import aliases spelling `name` (indexed once: a walk of the file per
        def taking the width was N x N over N defs)."""
        if self._spelled is None:
            self._spelled = {}
            for n in ast.walk(self.tree):
                key = n.id if isinstance(n, ast.Name) else n.attr if isinstance(n, ast.Attribute) else \
                    n.name.rsplit(".", 1)[-1] if isinstance(n, ast.alias) else None
                if key is not None:
                    self._spelled.setdefault(key, []).append(n)
        return self._spelled.get(name, [])

    def up(self, node: ast.AST) -> Optional[ast.AST]:
        return self.parents.get(id(node))

    def items_computed(self) -> bool:
        """Does a class of the project define a `__getitem__` that computes the item rather than reading it off
        what it holds (round AE's e3: a role's config capping `cfg["index_topk"]`): then a keyed read may be
        its value, not the field's."""
        if self._items is None:
            self._items = any(isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef)) and d.name == "__getitem__"
                              and isinstance(other.up(d), ast.ClassDef) and not _reads_item(d)
                              for other in self.referencing("__getitem__") for d in ast.walk(other.tree))
        return self._items

    def scope(self, node: ast.AST) -> ast.AST:
        """The def, lambda or class whose body holds the node (a parameter's default, a decorator, a base: the one
        around it, where Python evaluates them: round BB), else the module."""
        child, p = node, self.up(node)
        while p is not None and not (isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and any(
                child is b for b in p.body) or isinstance(p, ast.Lambda) and child is p.body):
            child, p = p, self.up(p)
        return p if p is not None else self.tree


def own_values(trees: List[Tuple[ast.AST, Plain, Imported]], attr: str,
               naming: Optional[Callable[[str], List[Tuple[ast.AST, Plain, Imported]]]] = None,
               spellings: Optional[Callable[[str], Set[str]]] = None) -> List[Tuple[int, int, str]]:
    """(index of the tree, line, what) for each spelling binding a name of `attr`'s family to a value not plain.
    `naming(name)`: the files of the project spelling a name (the callers of a def taking the width by position);
    by default, the trees given. `spellings(name)`: every name the project binds `name` to (reach.Project.spellings);
    by default, the name alone."""
    names = family(attr)
    inside = _inside(names)
    parsed: List[_Tree] = []
    for t, g, imported in trees:
        parsed.append(_Tree(t, g, imported, parsed))
    cache: dict = {}
    made: dict = {}  # id(tree) -> its _Tree, one per file whatever name found it

    def referencing(name: str) -> List[_Tree]:
        if name not in cache:
            found = naming(name) if naming is not None else trees
            for t, g, imported in found:
                if id(t) not in made:
                    made[id(t)] = _Tree(t, g, imported, parsed)
                    made[id(t)].referencing, made[id(t)].swapped = referencing, swapped
                    made[id(t)].spellings = spellings or made[id(t)].spellings
            cache[name] = [made[id(t)] for t, _, _ in found]
        return cache[name]

    def swapped(name: str) -> bool:  # (another file's `module.name = other` rebinding a getter: round AC)
        if ("swapped", name) not in cache:
            cache[("swapped", name)] = any(isinstance(n, ast.Attribute) and n.attr == name and not isinstance(
                n.ctx, ast.Load) for other in referencing(name) for n in ast.walk(other.tree))
        return cache[("swapped", name)]
    for t in parsed:
        t.referencing, t.swapped = referencing, swapped
        t.spellings = spellings or t.spellings
    out = []
    for i, t in enumerate(parsed):
        for node in ast.walk(t.tree):
            found = _spelling(node, names, inside, t)
            if found is not None and (found[0] is None or found[0] is not _NO_VALUE
                                      and not _plain(found[0], names, t, 0)):
                out.append((i, _line(node, t), found[1]))
    return out


def _line(node: ast.AST, t: _Tree) -> int:
    while node is not None and not hasattr(node, "lineno"):
        node = t.up(node)
    return getattr(node, "lineno", 0)


def _named(s: object, names: re.Pattern) -> bool:
    return isinstance(s, str) and names.fullmatch(s) is not None


def _spelling(node: ast.AST, names: re.Pattern, inside: re.Pattern, t: _Tree) -> Optional[Tuple[object, str]]:
    """(the value given, what) where node spells a name of the family; the value `_NO_VALUE` where it gives none,
    None where it gives one not read (`+=`, an unpacking, a loop's target, a def of the name)."""
    if isinstance(node, ast.Attribute) and _named(node.attr, names) and not isinstance(node.ctx, ast.Load):
        cls = _own_class(node, t)
        if cls is not None and (_stores_served(cls, t, 0) or _serves_reads(cls, t, 0, ATTRIBUTE)):  # (a keyed read of
            # it is judged where it is read, round AJ)
            return None, f"`.{node.attr}` is assigned in {cls.name}, whose class machinery may change it"
        return _stored_value(node, t), f"`.{node.attr}` is assigned"
    if isinstance(node, ast.keyword) and _named(node.arg, names):
        if _served(t.up(node), t, 0, RECORD):  # (a record made through a metaclass, fitted by its `__setstate__`: AH)
            return None, f"`{node.arg}=` is handed to a class whose machinery may change it"
        return node.value, f"`{node.arg}=` is handed"
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _named(node.name, names) \
            and _returns_plain(node, names, t, 0):
        return _NO_VALUE, ""  # (a property returning the config's field)
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and _named(node.name, names):
        return None, f"`{node.name}` is defined"
    if isinstance(node, ast.Name) and _named(node.id, names) and not isinstance(node.ctx, ast.Load) \
            and (isinstance(t.scope(node), (ast.ClassDef, ast.Module)) or _declared_global(t.scope(node), node.id)):
        return _field_value(node, names, t), f"`{node.id}` is bound in a class body or a module"
    if isinstance(node, ast.arg) and _named(node.arg, names) and isinstance(t.up(t.up(node)), (
            ast.FunctionDef, ast.AsyncFunctionDef)):
        fn = t.up(t.up(node))  # (a parameter of the family is a spelling, read or not: `**locals()`, round AC)
        plain = _keyword_only(node.arg, fn.args, names, t, 0) or _handed_by_position(node.arg, fn, names, t, 0)
        return (_NO_VALUE, "") if plain else (None, f"`{node.arg}` is a parameter its callers may hand anything")
    if isinstance(node, (ast.MatchAs, ast.MatchStar)) and _named(node.name, names) or isinstance(
            node, ast.MatchMapping) and _named(node.rest, names):
        return None, "a `match` capture binds it"  # (round AC)
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and inside.search(node.value):
        return _string_use(node, names, t)
    return None


def _own_class(target: ast.Attribute, t: _Tree) -> Optional[ast.ClassDef]:
    """The class whose method stores `self.x` (its first parameter's attribute), or None."""
    fn = t.scope(target)
    cls = t.scope(fn) if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) else None
    first = (fn.args.posonlyargs + fn.args.args)[:1] if cls is not None else []
    return cls if isinstance(cls, ast.ClassDef) and isinstance(target.value, ast.Name) and first \
        and target.value.id == first[0].arg else None


def _stores_served(cls: ast.ClassDef, t: _Tree, depth: int) -> bool:
    """Does the class, or a base of the project, define or bind a `__setattr__` that is not a forwarding one (round
    AG's g3: a base clamping every integer on assignment, validation by hand)? Then a store of the class's own methods
    is not its value."""
    setattr_defs = [d for d in cls.body if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef))
                    and d.name == "__setattr__"]
    if depth > 8 or any(not reach.forwards_setattr(d) for d in setattr_defs) or reach.body_binds(cls.body, "__setattr__"):
        return True
    return any(_stores_served(c, there, depth + 1) for b in cls.bases for c, there in _base_classes(b, t))


def _base_classes(base: ast.AST, t: _Tree) -> List[Tuple[ast.ClassDef, "_Tree"]]:
    """The project classes a base names (_classes_named; a dotted base by its last name, over the files naming it)."""
    if isinstance(base, ast.Name):
        return _classes_named(base.id, t)
    return t.remember(("base", reach._unparse(base)), lambda: _dotted_classes(base, t))


def _dotted_classes(base: ast.AST, t: _Tree) -> List[Tuple[ast.ClassDef, "_Tree"]]:
    name = reach._unparse(base).rsplit(".", 1)[-1]
    module = base.value.id if isinstance(base, ast.Attribute) and isinstance(base.value, ast.Name) else None
    index = t.imported(module) if module and any(isinstance(b, ast.Import) for b in _module_bindings(t.tree, module)) \
        else None
    if index is not None:  # (`model_config.ModelConfig`: the class of the module imported)
        there = t.others[index]
        return [(c, there) for c in there.tree.body if isinstance(c, ast.ClassDef) and c.name == name]
    if module and not _of_the_project(module, t):
        return []  # (`nn.Module`: a library's class)
    return [(c, other) for other in t.referencing(name) for c in other.classes(name)]


def _of_the_project(name: str, t: _Tree) -> bool:
    """Does the name the file imports come from a module of the project (not a library's)?"""
    return getattr(t.imported, "in_project", lambda _: True)(name)


def _classes_named(name: str, t: _Tree) -> List[Tuple[ast.ClassDef, "_Tree"]]:
    """The project classes `name` names in the file: the file's own classes of that name, or those the project file an
    import binds it from defines under its name there (`from fork_budget import BudgetedConfig as Budget`)."""
    return t.remember(("classes", name), lambda: _find_classes(name, t))


def _find_classes(name: str, t: _Tree) -> List[Tuple[ast.ClassDef, "_Tree"]]:
    bindings = _module_bindings(t.tree, name)
    own = [(b, t) for b in bindings if isinstance(b, ast.ClassDef)]
    imports = [b for b in bindings if isinstance(b, ast.ImportFrom)]
    index = t.imported(name) if imports else None
    if own or not imports or index is None and not _of_the_project(name, t):
        return own  # (none of the project's: a library's class, `from abc import ABC`)
    original = next((a.name for b in imports for a in b.names if (a.asname or a.name) == name), name)
    there = [t.others[index]] if index is not None else t.referencing(original)  # (a file not among those spelling
    return [(c, other) for other in there for c in other.tree.body  # the field: the files naming the class)
            if isinstance(c, ast.ClassDef) and c.name == original]


def _declared_global(scope: ast.AST, name: str) -> bool:
    """Does the function declare the name `global` (`global INDEX_TOPK` in a `configure()`: round AC)?"""
    return isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
        isinstance(n, ast.Global) and name in n.names for n in ast.walk(scope))


def _stored_value(target: ast.AST, t: _Tree) -> object:
    """What a store of `target` assigns: the value of a plain `=` (chained too) or an annotated one (none: an
    annotation alone); None for `+=`, `del`, an unpacking, a loop's or a `with`'s target."""
    stmt = t.up(target)
    if isinstance(stmt, ast.Assign) and target in stmt.targets:
        return stmt.value
    if isinstance(stmt, ast.AnnAssign) and stmt.target is target:
        return stmt.value if stmt.value is not None else _NO_VALUE
    return None


def _field_value(target: ast.Name, names: re.Pattern, t: _Tree) -> object:
    """A class body's binding. An annotated field of a class without an `__init__` of its own (not `kw_only=True`)
    is one a record class (a dataclass, a NamedTuple, a class a decorator or a later `dataclass(C)` makes one)
    may take by position: its value is every call's argument in its place, plain where each call hands a plain
    value or leaves it (_calls_hand_plain; round AB: built positionally; round AC: a default of None, a functional
    dataclass)."""
    value = _stored_value(target, t)
    cls, stmt = t.scope(target), t.up(target)
    if not isinstance(cls, ast.ClassDef) or not isinstance(stmt, ast.AnnAssign) or any(
            isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == "__init__" for n in cls.body) \
            or any(isinstance(d, ast.Call) and any(k.arg == "kw_only" and isinstance(k.value, ast.Constant)
                                                   and k.value.value is True for k in d.keywords)
                   for d in cls.decorator_list):
        return value
    if _no_slot(stmt):
        return value  # (a class constant, a field the constructor does not take: the value it is given here)
    fields = [n for n in cls.body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name) and not _no_slot(n)]
    if any(reach._unparse(b) not in _FIELDLESS_BASES for b in cls.bases):
        return None  # (after a base's fields: its slot is not counted)
    slot = next(i for i, n in enumerate(fields) if n is stmt)
    return value if t.up(cls) is t.tree and _calls_hand_plain(cls.name, slot, names, t, 0, set()) else None


def _reads_item(d: ast.AST) -> bool:
    """A `__getitem__` whose one statement (past a docstring) returns the key read off what it holds:
    `return self._data[key]`, `return getattr(self._cfg, key)`."""
    params = [a.arg for a in d.args.args]
    body = [b for b in d.body if not (isinstance(b, ast.Expr) and isinstance(b.value, ast.Constant))]
    if len(params) != 2 or len(body) != 1 or not isinstance(body[0], ast.Return):
        return False
    v, key = body[0].value, params[1]
    if isinstance(v, ast.Subscript):
        return isinstance(v.slice, ast.Name) and v.slice.id == key
    return isinstance(v, ast.Call) and reach._unparse(v.func) == "getattr" and len(v.args) == 2 \
        and isinstance(v.args[1], ast.Name) and v.args[1].id == key


# bases that give a record no fields of their own (a NamedTuple's fields are its class body's)
_FIELDLESS_BASES = {"object", "NamedTuple", "typing.NamedTuple"}


def _no_slot(n: ast.AnnAssign) -> bool:
    """A class body's annotation no positional slot of a record's constructor takes: a `ClassVar`, a
    `field(init=False)`, a `KW_ONLY` marker (round AE: counted, they shift the width's slot)."""
    note = reach._unparse(n.annotation)
    return note.split("[")[0].rsplit(".", 1)[-1] in ("ClassVar", "KW_ONLY") or isinstance(n.value, ast.Call) \
        and reach._unparse(n.value.func).rsplit(".", 1)[-1] == "field" and any(
            k.arg == "init" and isinstance(k.value, ast.Constant) and k.value.value is False for k in n.value.keywords)


def _context(node: ast.AST, t: _Tree) -> ast.AST:
    """The node a string stands in: an f-string's parts stand in the f-string."""
    up = t.up(node)
    while isinstance(up, (ast.JoinedStr, ast.FormattedValue)):
        node, up = up, t.up(up)
    return node


def _message(node: ast.AST, t: _Tree) -> bool:
    """Is the string a message: a docstring, an operand of a comparison, text handed to logging, `print`, an
    exception raised or an `assert`?"""
    up = t.up(node)
    if isinstance(up, (ast.Expr, ast.Compare)):
        return True
    while up is not None and not isinstance(up, ast.stmt):
        if isinstance(up, ast.Call):
            root = up.func
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(root, ast.Name) and (root.id in LOGGING_ROOTS or root.id in ("print", "logger", "log")):
                return True
        up = t.up(up)
    return isinstance(up, (ast.Raise, ast.Assert))


def _string_use(const: ast.Constant, names: re.Pattern, t: _Tree) -> Optional[Tuple[object, str]]:
    """A string holding a name of the family: a dict's key, a subscript's, what a reader or writer by name is
    handed, an option; a message; else code not read (a template, a list of fields, an override)."""
    node = _context(const, t)
    if _message(node, t):
        return _NO_VALUE, ""
    whole = node is const and _named(const.value, names)
    p = t.up(node)
    if whole and isinstance(p, ast.Dict) and const in p.keys:
        return p.values[p.keys.index(const)], f"a dict's key `{const.value}` is given a value"
    if whole and isinstance(p, ast.Subscript) and p.slice is const:
        return (_NO_VALUE if isinstance(p.ctx, ast.Load) else _stored_value(p, t)), f"`[{const.value!r}]` is set"
    if not whole or not isinstance(p, ast.Call) or const not in p.args:
        return None, f"the string `{const.value[:40]}` is used by code not read"
    name = p.func.attr if isinstance(p.func, ast.Attribute) else p.func.id if isinstance(p.func, ast.Name) else ""
    slot = p.args.index(const)
    if name in _READERS and _READERS[name][0] == slot:
        default = _READERS[name][1]
        given = p.args[default] if default is not None and len(p.args) > default else None
        if given is None or isinstance(given, ast.Constant) and given.value is None:
            return _NO_VALUE, ""
        return given, f"`{name}({const.value!r}, ...)` has a default"
    if name in _WRITERS and _WRITERS[name][0] == slot:
        value_slot = _WRITERS[name][1]
        return (p.args[value_slot] if len(p.args) > value_slot else None), f"`{name}({const.value!r}, ...)` sets it"
    if name == "add_argument":
        odd = [k.arg for k in p.keywords if k.arg not in _OPTION_KEYWORDS | {"default", "type"} or k.arg == "type"
               and not (isinstance(k.value, ast.Name) and k.value.id in ("int", "str"))]
        if odd or len(p.args) != 1:
            return None, f"option `{const.value}` is declared with `{(odd or ['a second name'])[0]}`"
        default = next((k.value for k in p.keywords if k.arg == "default"), _NO_VALUE)
        return default, f"option `{const.value}` has a default"
    return None, f"the string `{const.value}` is handed to `{name or 'a call'}`"


def _plain(v: object, names: re.Pattern, t: _Tree, depth: int) -> bool:
    """Is `v` the width handed on (PLAIN_VALUES)?"""
    if isinstance(v, ast.Constant):
        return v.value is None
    if isinstance(v, ast.Attribute):
        return _named(v.attr, names) and not _served(v.value, t, 0, ATTRIBUTE)
    if _measured(v, t):
        return True
    if isinstance(v, ast.Subscript):
        return isinstance(v.slice, ast.Constant) and _named(v.slice.value, names) and not t.items_computed() \
            and not _served(v.value, t, 0)
    if isinstance(v, ast.IfExp):
        return depth < 4 and _plain(v.body, names, t, depth + 1) and _plain(v.orelse, names, t, depth + 1)
    if isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and v.func.id == "int" and len(v.args) == 1 \
            and not v.keywords and not _module_bindings(t.tree, "int"):
        return _plain(v.args[0], names, t, depth + 1)  # (`int(hf.index_topk)`: the same width)
    if isinstance(v, ast.Call) and any(_served(a, t, 0) for a in [*v.args, *(k.value for k in v.keywords)]
                                       + ([v.func.value] if isinstance(v.func, ast.Attribute) else [])):
        return False  # (a getter or a read handed an object whose class serves its reads: round AG's g3)
    if isinstance(v, ast.Call):
        return _reads_field(v, names) or t.engine_getter(v) or _own_getter(v, names, t, depth)
    if isinstance(v, ast.Name):
        return _plain_name(v, names, t, depth)
    return False


# what a class defines to serve a read of itself, or fill itself (a keyed or a named read, a mapping's view and
# store, the copy and pickle protocols; an `__iter__` alone serves no read of a field: stated, `dict(cfg)` of an
# iterator capping its pairs is not read)
_READ_SERVERS = {"get", "__getitem__", "__missing__", "__getattr__", "__getattribute__", "__get__", "keys", "items",
                 "values", "__setitem__", "update", "setdefault", "__setstate__", "__reduce__",
                 "__reduce_ex__", "__copy__", "__deepcopy__"}


# reads a field by its name does not make (`cfg.index_topk`): a keyed read's, a mapping view's
_ITEM_READS = {"get", "__getitem__", "__missing__", "keys", "items", "values"}
ATTRIBUTE = "attribute"  # the kind of read `_served` is asked for: a field read by its name (else any)
RECORD = "record"  # asked of a call handed the field's keyword: a library function's result holds no keyword it takes


# library bases whose instances are the values they hold (a mapping, a sequence, a number, a namespace): a subclass
# making itself by more than storing its parameters may hold other values than it was handed (a `torch.nn.Module`
# base is no such: its `__init__` makes a layer, not the config's values)
_VALUE_BASES = {"dict", "list", "tuple", "set", "frozenset", "str", "int", "float", "UserDict", "UserList", "OrderedDict",
                "defaultdict", "Counter", "ChainMap", "Mapping", "MutableMapping", "SimpleNamespace", "Namespace"}


# How many bindings _served follows from a read to the object it is read off (sglang-kt's config: four)
_SERVED_DEPTH = 8


def _served(e: ast.AST, t: _Tree, depth: int, kind: str = "") -> bool:
    """Is `e` (a receiver of a read, or an object handed to a getter) an object of a project class that serves its
    reads (_serves_reads): made by a call of the class or of one of its methods (`Budget.for_build(raw)`), or a name
    (a local, a module's global) or an attribute of self bound to one anywhere in the file?"""
    if depth >= _SERVED_DEPTH:
        return True  # (past that many bindings the object is not read: it may be one that serves, round AM)
    if isinstance(e, ast.Name) and _project_module_object(e.id, t):
        return True  # (round AX: a project module handed as the object, which PEP 562's `__getattr__` may serve)
    if isinstance(e, ast.Name) and _fills_computed(e, t, depth, 0, escapes=False):
        return True  # (round BC: `cfg.update(caps)`, `cfg[k] = min(v, 8)`: a mapping's in-place fills are bindings)
    if isinstance(e, ast.Name) and _bound_otherwise(e, t):
        return _handed_served(e, t, depth, kind)  # (a parameter: what the calls hand it, round AK; `view, raw =
        # Budget(raw), raw`, `with Budget(raw) as view`: what it holds is not read, round AJ)
    if isinstance(e, ast.Name) or isinstance(e, ast.Attribute) and isinstance(e.value, ast.Name) and e.value.id == "self":
        return any(_served(v, t, depth + 1, kind) for v in _bound_values(e, t))
    owned = _owner_stores_served(e, t, depth, kind) if isinstance(e, ast.Attribute) else None
    if owned is not None:
        return owned  # (round BB: `runtime_state.hf_config`, `configs.draft`: what the project stores there)
    if isinstance(e, (ast.Dict, ast.DictComp)) or isinstance(e, ast.BinOp) and isinstance(e.op, ast.BitOr):
        return _mapping_computed(e, t, depth)  # (round BB: a mapping built of computed values serves them; round BC:
        # one merged from such, `{**raw, **caps}`, PEP 584's `raw | caps`)
    if isinstance(e, ast.Subscript):
        return not _measured(e, t)  # (round AX: `phase_cfgs["decode"]`, an item of a table: what the table holds is
        # not read; round BF: a tensor's dimension handed in, `inp.indices.shape[-1]`, is an int serving no read)
    if isinstance(e, (ast.IfExp, ast.BoolOp, ast.NamedExpr, ast.Await)):
        return any(_served(v, t, depth + 1, kind) for v in _outcomes(e))  # (round AY: `view if small else raw`)
    if not isinstance(e, ast.Call):
        return False
    if reach.hands_computed_mapping(e) or any(k.arg is None and _mapping_computed(k.value, t, depth)
                                              for k in e.keywords):
        return True  # (`SimpleNamespace(**{k: min(v, cap) ...})`: any field it holds may be computed, round AM)
    func = e.func
    if not _dotted(func):
        return True  # (round BA: `getattr(profiles, name)(raw)`, `PROFILES["low"](raw)`: a callee computed, no def read
        # nor a library's function)
    if _held_callable(func, t):
        return True  # (round AX: a method of an instance, `PROFILES.resolve(name, cfg)`; a callable a name holds,
        # `view = functools.partial(BudgetView, cap=8)`: what it makes is not read)
    maker = _classes_named(func.value.id, t) if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) \
        else []  # (`Budget.of(raw)`: a method of the class making it)
    method = _class_method(func.attr, maker) if maker else None
    if method is False:
        return True  # (round BA: `Profiles.low_mem = staticmethod(f)`, a decorated def: what it makes is not read)
    classes = maker or (_classes_named(func.id, t) if isinstance(func, ast.Name) else _base_classes(func, t))
    if isinstance(func, ast.Name) and not classes and _project_def(func.id, t) is None and _unread_import(func.id, t):
        return True  # (a function of a project file not read here: what it makes may serve, round AM's `budgeted`)
    module_def = _module_def(func, t) if not classes else None
    if module_def is False:
        return True  # (round AY: `profiles.low_mem_view(raw)`, a function of a project module not read: what it makes
        # may serve)
    returns = _returns_of(method) if method else _factory_returns(e, t) if module_def is None \
        else _returns_of(module_def)  # (round BA: `ServingProfiles.low_mem(raw)`, a staticmethod: what it returns)
    if not classes and not returns and module_def is None and _unread_own_callee(func, t):
        return True  # (round BA: `self.low_mem_view(raw)`, a nested def's, a local's: a callee of the project whose
        # def is not read may make an object that serves)
    library = not classes and not returns and module_def is None  # (a library's callee: `copy.deepcopy(view)`,
    # `pickle.loads(...)` may hand back what it is handed or a copy of it, round AY; `cast(T, view)`, `next(gen,
    # full)` too, round BB)
    return any(_serves_reads(c, there, 0, kind) for c, there in classes) or any(
        _served(r, there, depth + 1, kind) for r, there in returns) or any(_forwards_reads(c) for c, _ in classes) \
        and any(_served(a, t, depth + 1, kind) for a in [*e.args, *(k.value for k in e.keywords)]) or library \
        and kind != RECORD and _library_hands_served(e, t, depth, kind)
    # (`budgeted(raw)`: a factory's, round AJ; a class forwarding its reads to a serving object it is handed)


def _library_hands_served(e: ast.Call, t: _Tree, depth: int, kind: str) -> bool:
    """May a library call hand back a served object: one of its arguments or keywords, their items, a generator's
    elements, what a callable handed it returns (round BB: `cast(Any, view)`, `next((c for c in (low, full)), full)`,
    `json.loads(s, object_hook=lambda d: ...)`)? A library class (capitalised: `types.SimpleNamespace(k=v)`) makes
    its own object: only the `**` mappings it copies (`SimpleNamespace(**vars(view))`) and callables it keeps count."""
    own = reach._unparse(e.func).rsplit(".", 1)[-1][:1].isupper()
    handed = [k.value for k in e.keywords if not own or k.arg is None or isinstance(k.value, ast.Lambda)] + [
        a for a in e.args if not own or isinstance(a, ast.Lambda)]
    return any(_served(v, there, depth + 1, kind) for h in handed for v, there in _handed_values(h, t, 0))


def _handed_values(h: ast.AST, t: _Tree, depth: int) -> List[Tuple[ast.AST, "_Tree"]]:
    """(each object, its file) an argument hands a library call: itself, a container's items, a comprehension's
    elements (the items it iterates, for a name its loop binds), a lambda's result, a project def's returns."""
    if depth > 4:
        return [(h, t)]
    if isinstance(h, ast.Starred):
        return _handed_values(h.value, t, depth + 1)
    if isinstance(h, (ast.Tuple, ast.List, ast.Set)):
        return [v for x in h.elts for v in _handed_values(x, t, depth + 1)]
    if isinstance(h, ast.Dict):
        return [(h, t)] + [v for x in h.values for v in _handed_values(x, t, depth + 1)]
    if isinstance(h, (ast.GeneratorExp, ast.ListComp, ast.SetComp)):
        looped = {n.id for g in h.generators for n in ast.walk(g.target) if isinstance(n, ast.Name)}
        return [v for g in h.generators for v in _handed_values(g.iter, t, depth + 1)] if isinstance(
            h.elt, ast.Name) and h.elt.id in looped else _handed_values(h.elt, t, depth + 1)
    if isinstance(h, ast.DictComp):
        return [(h, t)] + _handed_values(h.value, t, depth + 1)
    if isinstance(h, ast.Lambda):
        return _handed_values(h.body, t, depth + 1)
    named = _project_def(h.id, t) if isinstance(h, ast.Name) else _module_def(h, t) or None
    return [(h, t)] + _returns_of(named)


def _owner_stores_served(e: ast.Attribute, t: _Tree, depth: int, kind: str) -> Optional[bool]:
    """For an attribute read off a project module (`runtime_state.hf_config`) or off a name bound to a project
    class's object (`configs = ServingConfigs(raw)`, then `configs.draft`): is a value the project stores under
    that attribute served (round BB)? True where a store is not a plain `=`, or none is found (a property, an
    import); a local made otherwise is read by _record_served (round BF); None for any other object (a parameter's
    attribute: read through its callers, as before)."""
    if not isinstance(e.value, ast.Name) or e.value.id == "self":
        return None
    if _project_module_object(e.value.id, t):
        index = t.imported(e.value.id)
        if index is None:
            return True
        own = _module_stores(e.attr, t.others[index])
    else:
        if _bound_otherwise(e.value, t):
            return None
        made = _bound_values(e.value, t)
        classes = [c for v in made for c in _made_classes(v, t)]
        rest = [v for v in made if not _made_classes(v, t)]  # (round BF: what no project class makes)
        if not classes:
            return _record_served(e, rest, t, depth, kind)
        if rest and _record_served(e, rest, t, depth, kind):
            return True
        if any(_serves_reads(c, there, 0, kind) for c, there in classes):
            return True
        own = [s for c, there in classes for s in _class_stores(e.attr, c, there)] + [
            x for v in made if _made_classes(v, t) for x in _record_arguments(e.attr, v, t)]
    stores = own + [(_stored_value(n, o), o) for o in t.referencing(e.attr) for n in o.spelled(e.attr)
                    if isinstance(n, ast.Attribute) and not isinstance(n.ctx, ast.Load)
                    and reach._unparse(n.value) != "self"]  # (`runtime_state.hf_config = view` elsewhere)
    return not own or any(v is None or v is not _NO_VALUE and _served(v, there, depth + 1, kind) for v, there in stores)


def _made_classes(v: ast.AST, t: _Tree) -> List[Tuple[ast.ClassDef, "_Tree"]]:
    """The project classes a call makes an object of (`ServingConfigs(raw)`); none for anything else."""
    if not (isinstance(v, ast.Call) and _dotted(v.func)):
        return []
    return _classes_named(v.func.id, t) if isinstance(v.func, ast.Name) else _base_classes(v.func, t)


def _record_arguments(attr: str, call: ast.Call, t: _Tree) -> List[Tuple[object, "_Tree"]]:
    """(each value, the file) the making of a project record class gives its annotated field `attr` (a dataclass, a
    NamedTuple: `Worker(hf_config=low_mem_view(raw))`, round BF): the keyword; None (not read) for a positional
    argument or `**`; none where no class made declares such a field (its `__init__`'s stores are read instead)."""
    if not any(_declares_field(c, attr, there) for c, there in _made_classes(call, t)):
        return []
    unread = call.args or any(k.arg is None for k in call.keywords)
    return [(k.value, t) for k in call.keywords if k.arg == attr] + [(None, t)] * bool(unread)


def _declares_field(cls: ast.ClassDef, attr: str, there: _Tree) -> bool:
    """Does the class or a project base of it annotate `attr` in its body (a record's field)?"""
    return any(isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name) and n.target.id == attr
               for c, _ in _class_and_bases(cls, there) for n in c.body)


def _class_and_bases(cls: ast.ClassDef, there: _Tree) -> Iterator[Tuple[ast.ClassDef, _Tree]]:
    """The class and its project bases through theirs (16 at most), each with its file, once each."""
    todo, seen = [(cls, there)], set()
    while todo and len(seen) < 16:
        c, where = todo.pop()
        if id(c) in seen:
            continue
        seen.add(id(c))
        yield c, where
        todo += [x for b in c.bases for x in _base_classes(b, where)]


# library classes whose object holds each keyword it is made with as the attribute of that name
_RECORD_MAKERS = {"SimpleNamespace", "Namespace"}


def _record_served(e: ast.Attribute, made: List[ast.AST], t: _Tree, depth: int, kind: str) -> Optional[bool]:
    """For an attribute read off a local bound by `=` to no project class's object: is what reaches it served, or
    not followed (round BF: `worker = types.SimpleNamespace(hf_config=low_mem_view(raw))`, then
    `Backend(worker.hf_config)`)? A library record (_RECORD_MAKERS) holds its making's keyword and any store
    (`worker.hf_config = v`), followed only where the local is read for attributes alone (_read_for_attributes); a
    name or attribute bound there is read as that object's attribute (`mc = runner.model_config`, `mc.hf_config`);
    anything else (a project function's result, `**` handed, a computed object) is not followed. None where
    nothing binds it here (as before)."""
    if not made:
        return None
    stores = [(_stored_value(n, o), o) for o in t.referencing(e.attr) for n in o.spelled(e.attr)
              if isinstance(n, ast.Attribute) and not isinstance(n.ctx, ast.Load) and reach._unparse(n.value) != "self"]
    values: List[Tuple[object, _Tree]] = []
    for v in (o for m in made for o in _alternatives(m)):
        if isinstance(v, ast.Constant) and v.value is None:
            continue  # (`None.hf_config` raises: no width read)
        if isinstance(v, (ast.Name, ast.Attribute)):
            if _served(ast.Attribute(value=v, attr=e.attr, ctx=ast.Load()), t, depth + 1, kind):
                return True
            continue
        if not (isinstance(v, ast.Call) and _record_maker(v.func, t)) or any(k.arg is None for k in v.keywords) \
                or v.args or not _read_for_attributes(e.value, t):
            return True  # (round BF: an object not made as a record of its keywords, or handed on: not followed)
        keyword = [(k.value, t) for k in v.keywords if k.arg == e.attr]
        if not keyword and not stores:
            return True  # (the record holds no such keyword: the attribute is set by code not read)
        values += keyword
    return any(x is None or x is not _NO_VALUE and _served(x, there, depth + 1, kind) for x, there in values + stores)


def _alternatives(v: ast.AST) -> List[ast.AST]:
    """The values an expression may be (each outcome of a conditional, `and`/`or`, `:=`), nested ones too."""
    if isinstance(v, (ast.IfExp, ast.BoolOp, ast.NamedExpr)):
        return [x for o in _outcomes(v) for x in _alternatives(o)]
    return [v]


def _record_maker(func: ast.AST, t: _Tree) -> bool:
    """Is the callee a library record class (_RECORD_MAKERS: `types.SimpleNamespace`, `argparse.Namespace`), read
    through the file's imports (no def or class of the project by that name)?"""
    root = func.id if isinstance(func, ast.Name) else reach._unparse(func).split(".", 1)[0]
    last = reach._unparse(func).rsplit(".", 1)[-1]
    bindings = _bindings_of(root, t)
    return last in _RECORD_MAKERS and bool(bindings) and all(
        isinstance(b, (ast.Import, ast.ImportFrom)) for b in bindings) and not _of_the_project(root, t)


def _read_for_attributes(name: ast.Name, t: _Tree) -> bool:
    """Is the local read, in the scope whose binding `name` sees, only for its attributes (`worker.hf_config`, a
    store of one), never handed on, called for a method or read through a dunder (`setattr(worker, ...)`,
    `worker.__dict__`: writes not followed, round BF)?"""
    scope = _home_scope(name, t)
    for n in t.spelled(name.id):
        if not isinstance(n, ast.Name) or not isinstance(n.ctx, ast.Load) or _home_scope(n, t) is not scope:
            continue
        up = t.up(n)
        if not (isinstance(up, ast.Attribute) and up.value is n) or up.attr.startswith("__") or (
                isinstance(t.up(up), ast.Call) and t.up(up).func is up):
            return False
    return True


def _module_stores(attr: str, there: _Tree) -> List[Tuple[object, "_Tree"]]:
    """(each value, the file) a module binds a global to: its `=` at module level or under `global` (None: another
    binding, an import, a def)."""
    out: List[Tuple[object, "_Tree"]] = [(None, there) for b in _module_bindings(there.tree, attr) if isinstance(
        b, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        and there.scope(b) is there.tree]
    for n in there.spelled(attr):
        if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load) and (
                there.scope(n) is there.tree or _declared_global(there.scope(n), attr)):
            out.append((_stored_value(n, there), there))
    return out


def _class_stores(attr: str, cls: ast.ClassDef, there: _Tree) -> List[Tuple[object, "_Tree"]]:
    """(each value, the file) a project class and its project bases store under `attr`: `self.attr = v` in a method,
    a class body's `attr = v` (None: another store, a def of the name)."""
    out: List[Tuple[object, "_Tree"]] = []
    for c, where in _class_and_bases(cls, there):
        out += [(None, where) for d in c.body if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                                ast.ClassDef)) and d.name == attr]
        for n in ast.walk(c):
            if isinstance(n, ast.Attribute) and n.attr == attr and not isinstance(n.ctx, ast.Load) \
                    and _own_class(n, where) is c or isinstance(n, ast.Name) and n.id == attr \
                    and not isinstance(n.ctx, ast.Load) and where.scope(n) is c:
                out.append((_stored_value(n, where), where))
    return out


def _unread_own_callee(func: ast.AST, t: _Tree) -> bool:
    """Is the callee the project's own code whose def is not read here: a method of self (`self.low_mem_view(raw)`),
    or a name a function binds (a nested def, a local)? What it makes may serve (round BA). (A method of another
    local object, a tensor's `clamp` among them, stays read as before.)"""
    if isinstance(func, ast.Attribute):
        return isinstance(func.value, ast.Name) and func.value.id == "self"
    if not isinstance(func, ast.Name):
        return False
    scope = t.scope(func)
    while scope is not t.tree:
        if any(isinstance(n, ast.Name) and n.id == func.id and not isinstance(n.ctx, ast.Load)
               or isinstance(n, ast.arg) and n.arg == func.id or syntax.binds(n, func.id, scope)
               and not (isinstance(n, (ast.Import, ast.ImportFrom)) and not getattr(n, "level", 0))
               for n in ast.walk(scope)):
            return True  # (an absolute import in the function, a kernel's op: read as the module's imports are)
        scope = t.scope(scope)
    return False


# How many merges and bindings _mapping_computed follows from a `**` mapping (round BC)
_MAPPING_HOPS = 8
# a dict's methods that only read it or take keys out (no value of its own put in; those filling it: rows.MAPPING_FILLS)
_MAPPING_READS = {"get", "keys", "items", "values", "copy", "pop", "popitem", "clear", "__contains__", "__getitem__",
                  "__len__", "__iter__", "__delitem__"}
# callees handed a mapping that only read or copy it (any other call, a project function, may fill it: round BC)
_MAPPING_READERS = {"dict", "len", "print", "repr", "str", "sorted", "list", "tuple", "set", "frozenset", "bool",
                    "isinstance", "iter", "any", "all", "json.dumps", "json.dump", "copy.copy", "copy.deepcopy",
                    "types.SimpleNamespace", "SimpleNamespace", "types.MappingProxyType", "MappingProxyType"}


def _mapping_computed(v: ast.AST, t: _Tree, depth: int, hops: int = 0) -> bool:
    """May the mapping `v` hold a computed value: one built so (reach._builds_computed), one merged from a mapping
    that may (`{**raw, **caps}`, `raw | caps`, `dict(raw, **caps)`, a conditional's outcome), a name bound otherwise
    (what its callers hand), by `=` to one, or filled in place with one (round BC: the `**` entries, `|`'s operands
    and a name's `update` are followed like any value)?"""
    if hops > _MAPPING_HOPS or reach._builds_computed(v):
        return True
    if isinstance(v, ast.Name):
        return _bound_otherwise(v, t) and _handed_served(v, t, depth + 1, "") or any(
            _mapping_computed(b, t, depth, hops + 1) for b in _bound_values(v, t)) or _fills_computed(
            v, t, depth, hops + 1, escapes=True)
    return any(_mapping_computed(p, t, depth, hops + 1) for p in _merged_parts(v))


def _merged_parts(v: ast.AST) -> List[ast.AST]:
    """The mappings an expression merges into the one it makes: a display's `**` entries, `|`'s operands,
    `dict(raw, **caps)`'s mappings, a conditional's outcomes (round BC)."""
    if isinstance(v, ast.Dict):
        return [x for k, x in zip(v.keys, v.values) if k is None]
    if isinstance(v, ast.BinOp) and isinstance(v.op, ast.BitOr):
        return [v.left, v.right]
    if isinstance(v, (ast.IfExp, ast.BoolOp, ast.NamedExpr)):
        return _outcomes(v)
    if isinstance(v, ast.Call) and reach._unparse(v.func) == "dict":
        return [*v.args, *(k.value for k in v.keywords if k.arg is None)]
    return []


def _fills_computed(e: ast.Name, t: _Tree, depth: int, hops: int, escapes: bool) -> bool:
    """Does the scope whose binding `e` reads (_home_scope) fill the mapping it names in place with a value that may
    be computed (`merged.update(caps)`, `merged[k] = min(v, 8)`, `merged.setdefault(k, v + 1)`), or, with
    `escapes`, let it out where it may be filled (an alias, a container, a call not known to only read it)?
    (round BC: a mapping's in-place changes are its bindings too)"""
    reads = [n for n in t.spelled(e.id) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and (
        escapes or _fill_shaped(n, t))]  # (a cheap shape test first: a name read often, `config`, scopes slowly)
    scope = _home_scope(e, t) if reads else None
    return any(_home_scope(n, t) is scope and _fill_computed(n, t, depth, hops, escapes) for n in reads)


def _fill_shaped(n: ast.Name, t: _Tree) -> bool:
    """Is this read of a name the receiver of a dict's fill (`n.update(...)`) or an item store (`n[k] = v`)?"""
    up = t.up(n)
    return isinstance(up, ast.Attribute) and up.attr in MAPPING_FILLS or isinstance(up, ast.Subscript) \
        and up.value is n and isinstance(up.ctx, ast.Store)


def _fill_computed(n: ast.Name, t: _Tree, depth: int, hops: int, escapes: bool) -> bool:
    """Does this read of a mapping's name fill it with a value that may be computed, or let it escape
    (_fills_computed)?"""
    def computed(x: Optional[ast.AST]) -> bool:
        return x is None or _item_computed(x, t)

    up = t.up(n)
    if isinstance(up, ast.Attribute):
        call = t.up(up)
        if up.attr in _MAPPING_READS:
            return False
        if up.attr not in MAPPING_FILLS or not (isinstance(call, ast.Call) and call.func is up):
            return escapes  # (a method no dict has, or a fill taken as a value: not read)
        if up.attr in ("setdefault", "__setitem__"):
            return any(computed(a) for a in call.args[1:]) or bool(call.keywords)
        return any(_mapping_computed(m, t, depth, hops) for m in call.args[:1] + [
            k.value for k in call.keywords if k.arg is None]) or any(
            k.arg is not None and computed(k.value) for k in call.keywords)
    if isinstance(up, ast.Subscript) and up.value is n:
        if not isinstance(up.ctx, ast.Store):
            return False
        stmt = t.up(up)
        return not (isinstance(stmt, (ast.Assign, ast.AnnAssign)) and up in _targets(stmt)) or computed(stmt.value)
    if not escapes:
        return False
    if isinstance(up, ast.keyword) or isinstance(up, ast.Call) and n in up.args:
        call = t.up(up) if isinstance(up, ast.keyword) else up
        return not (isinstance(up, ast.keyword) and up.arg is None or _reads_only(call) or call.args[:1] == [n]
                    and isinstance(call.func, ast.Attribute) and call.func.attr in ("update", "__ior__"))
        # (`**merged`, `other.update(merged)`: copied)
    if isinstance(up, ast.Dict):
        return any(k is not None and x is n for k, x in zip(up.keys, up.values))  # (`{**merged}`: copied)
    return isinstance(up, (ast.Assign, ast.AnnAssign, ast.NamedExpr, ast.List, ast.Tuple, ast.Set))  # (an alias or
    # a container's item: filled there, not read)


def _item_computed(x: ast.AST, t: _Tree) -> bool:
    """May a value a fill puts in a mapping be computed: anything but a literal or a name, or a name its scope binds
    otherwise than by `=` (a loop's `for k, v in caps.items()`) or by `=` to such (a parameter: as a display's
    values are read)? (round BC)"""
    if isinstance(x, ast.Constant):
        return False
    if not isinstance(x, ast.Name):
        return True
    scope = _home_scope(x, t)
    if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) and x.id in _params(scope):
        return False
    return _bound_otherwise(x, t) or any(not isinstance(b, (ast.Name, ast.Constant)) for b in _bound_values(x, t))


def _targets(stmt: ast.AST) -> List[ast.AST]:
    return list(stmt.targets) if isinstance(stmt, ast.Assign) else [stmt.target]


def _reads_only(call: ast.Call) -> bool:
    """Is the call one that only reads or copies a mapping handed it: a builtin, `json.dumps`, `copy`, a namespace
    made of it, a logging call (round BC)?"""
    name = reach._unparse(call.func)
    return name in _MAPPING_READERS or name.rsplit(".", 1)[-1] in (
        "debug", "info", "warning", "error", "exception", "critical") and "log" in name.split(".", 1)[0].lower()


def _dotted(func: ast.AST) -> bool:
    """Is the callee a name or a chain of attributes off one (`f`, `profiles.low_mem_view`, `self.view`), not a
    value computed (a call's, an item's: round BA)?"""
    while isinstance(func, ast.Attribute):
        func = func.value
    return isinstance(func, ast.Name)


def _class_method(attr: str, classes: List[Tuple[ast.ClassDef, "_Tree"]]):
    """(the def, its file) a call through a project class's name runs (`ServingProfiles.low_mem(cfg)`: round BA),
    found in the class or a base of the project; None where a library's base may define it (an inherited
    constructor: the class's own object); False where no staticmethod/classmethod is read (bound by `=`, decorated
    otherwise, a plain def, or bound nowhere read)."""
    seen, todo, library = set(), list(classes), False
    while todo and len(seen) < 32:
        c, there = todo.pop(0)
        if id(c) in seen:
            continue
        seen.add(id(c))
        d = next((d for d in c.body if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef)) and d.name == attr), None)
        if reach.body_binds(c.body, attr) or d is not None and [reach._unparse(x) for x in d.decorator_list] not in (
                ["staticmethod"], ["classmethod"]):
            return False  # (a plain def through the class, `Profiles.pick(obj, cfg)`: its slots are not read so)
        if d is not None:
            return d, there
        for b in c.bases:
            found = _base_classes(b, there)
            library = library or not found and reach._unparse(b) != "object"
            todo += found
    return None if library else False


def _outcomes(e: ast.AST) -> List[ast.AST]:
    """The values a conditional, `and`/`or`, `:=` or `await` expression may evaluate to."""
    if isinstance(e, ast.IfExp):
        return [e.body, e.orelse]
    return list(e.values) if isinstance(e, ast.BoolOp) else [e.value]


def _module_def(func: ast.AST, t: _Tree):
    """For a name read off a module of the project the file imports (`profiles.low_mem_view`): (its def, its file)
    where the module's file is read and binds the name once, to a def; False where it is not so; None for any other
    callee."""
    if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)):
        return None
    if not _project_module_object(func.value.id, t):
        return None
    index = t.imported(func.value.id)
    there = t.others[index] if index is not None else None
    found = _module_bindings(there.tree, func.attr) if there is not None else []
    return (found[0], there) if len(found) == 1 and isinstance(found[0], (ast.FunctionDef, ast.AsyncFunctionDef)) \
        else False


def _project_module_object(name: str, t: _Tree) -> bool:
    """Is `name` bound only by `import m` of a module of the project (a module object, not a name read off one)?"""
    bindings = _bindings_of(name, t)
    return bool(bindings) and all(isinstance(b, ast.Import) for b in bindings) and _of_the_project(name, t)


def _bindings_of(name: str, t: _Tree) -> List[ast.AST]:
    """_module_bindings, once per name and file (every read of the width asks: test_scale)."""
    return t.remember(("bindings", name), lambda: _module_bindings(t.tree, name))


def _held_callable(func: ast.AST, t: _Tree) -> bool:
    """Is the callee a callable held by an object or a variable (a method of an instance, a name assigned a value),
    not a class, a def or a module's function the file imports?"""
    if isinstance(func, ast.Attribute):
        root = func.value
        if isinstance(root, ast.Attribute) and isinstance(root.value, ast.Name):
            module = root.value.id  # (`profiles.PROFILES.resolve(...)`: a project module's object, not a class)
            return _of_the_project(module, t) and any(isinstance(b, ast.Import) for b in _bindings_of(module, t)) \
                and not _dotted_classes(root, t)
        if not isinstance(root, ast.Name) or root.id == "self" or _classes_named(root.id, t):
            return False
        bindings = _bindings_of(root.id, t)
        return bool(bindings) and not any(isinstance(b, (ast.Import, ast.ImportFrom, ast.ClassDef)) for b in bindings)
    if isinstance(func, ast.Name):
        bindings = _bindings_of(func.id, t)
        return bool(bindings) and all(isinstance(b, ast.Name) for b in bindings)
    return False


def _forwards_reads(cls: ast.ClassDef) -> bool:
    """Does the class forward reads to what it holds (a `__getattr__`/`__getitem__` returning the key read off it)?"""
    return any(isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef)) and d.name in ("__getattr__", "__getitem__")
               and _reads_item(d) for d in cls.body)


def _handed_served(e: ast.Name, t: _Tree, depth: int, kind: str) -> bool:
    """For a parameter of a module-level def or class's `__init__` (and no other binding of it there): does a call
    of it in the project hand that slot (by position or keyword) an object whose class serves reads (a low-memory
    view capping every knob, `Backend(BudgetView(cfg, 8))`)? Anything else bound otherwise: served (not read)."""
    fn = _home_scope(e, t)
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return True
    if any(_served(d, t, depth + 1, kind) for d in _defaults_of(fn, e.id)):
        return True  # (round BB: `def run_draft(..., hf_config=draft_cfg)`, a call leaving the slot gets the default)
    params = [x.arg for x in fn.args.posonlyargs + fn.args.args]
    bound = isinstance(t.up(fn), ast.ClassDef) and "staticmethod" not in map(reach._unparse, fn.decorator_list)
    if bound and params[:1] == [e.id]:
        return False  # (a method's own object: its class's stores are read where they are spelled; a staticmethod
        # has none, its first slot is handed: round BA)
    if e.id not in params + [x.arg for x in fn.args.kwonlyargs] or any(
            isinstance(n, ast.Name) and n.id == e.id and not isinstance(n.ctx, ast.Load) for n in ast.walk(fn)):
        return True
    owner, slot = t.up(fn), params.index(e.id) if e.id in params else None
    init = isinstance(owner, ast.ClassDef) and fn.name == "__init__"
    makers = _init_makers(owner.name, t) if init else t.spellings(fn.name)
    if _rebound_elsewhere(makers, t):
        return True  # (`make = Backend` in a def, a registry's entry: the calls through that name are not read)
    slot = slot - 1 if slot is not None and bound else slot
    for other, node in ((o, n) for m in sorted(makers) for o in t.referencing(m) for n in o.spelled(m)):
        call = other.up(node)
        if isinstance(call, ast.Call) and call.func is node:
            if any(k.arg is None for k in call.keywords) or any(isinstance(a, ast.Starred) for a in call.args):
                return True  # (`Backend(**backend_kwargs)`: which value lands in the slot is not read, round AO)
            handed = [k.value for k in call.keywords if k.arg == e.id] + (
                [call.args[slot]] if slot is not None and 0 <= slot < len(call.args) else [])
            if any(_served(h, other, depth + 1, kind) for h in handed):  # (`*args` handed on: not read, as any
                return True  # parameter's callers are not, PLAIN_VALUES)
    return init and _base_init_served(makers, e, slot, t, depth, kind)


def _defaults_of(fn: ast.AST, name: str) -> List[ast.AST]:
    """The default a def gives its parameter `name` (none, or one)."""
    a = fn.args
    positional = a.posonlyargs + a.args
    pairs = list(zip(positional[len(positional) - len(a.defaults):], a.defaults)) + list(zip(a.kwonlyargs, a.kw_defaults))
    return [d for x, d in pairs if x.arg == name and d is not None]


def _init_makers(name: str, t: _Tree) -> Set[str]:
    """The names whose call runs class `name`'s `__init__`: every name the project binds it to (`DSABackend =
    Backend`, an import's alias: reach.Project.spellings), and those of each subclass, in any file and at any depth,
    defining no `__init__` of its own (`class DraftBackend(Backend): pass` made with a capped profile: round AZ)."""
    makers: Set[str] = set()
    todo = [name]
    while todo and len(makers) < 64:
        new = t.spellings(todo.pop()) - makers
        makers |= new
        todo += sorted({c.name for m in sorted(new) for other in t.referencing(m) for c in ast.walk(other.tree)
                        if isinstance(c, ast.ClassDef) and _derives_from(c, {m}) and not _defines(c, "__init__")})
    return makers


def _derives_from(cls: ast.ClassDef, names: Set[str]) -> bool:
    return any(reach._unparse(b).rsplit(".", 1)[-1] in names for b in cls.bases)


def _defines(cls: ast.ClassDef, name: str) -> bool:
    return any(isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef)) and d.name == name for d in cls.body)


def _rebound_elsewhere(makers: Set[str], t: _Tree) -> bool:
    """Is one of the names bound by assignment to a name that is not among them (`make = Backend` in a def, a
    class body's `backend_cls = Backend`, a module's name bound twice): a name of the class not read (round AZ)?
    (One stored on an object, `self.model_cls = Model`, is the open route of a class kept in a table: sglang's model
    runners store every model class so, and following them refused real engines: docs/soundness.md.)"""
    for m in sorted(makers):
        for other in t.referencing(m):
            for node in other.spelled(m):
                up = other.up(node)
                targets = reach._flatten(reach._written_targets(up)) if isinstance(up, (ast.Assign, ast.AnnAssign)) \
                    else [up.target] if isinstance(up, ast.NamedExpr) else []
                if isinstance(node, (ast.Name, ast.Attribute)) and getattr(up, "value", None) is node and any(
                        isinstance(x, ast.Name) and x.id not in makers for x in targets):
                    return True
    return False


def _base_init_served(makers: Set[str], e: ast.Name, slot: Optional[int], t: _Tree, depth: int, kind: str) -> bool:
    """Does a subclass of the project hand the class's `__init__` a served object for the parameter through
    `super().__init__(...)` or `Name.__init__(self, ...)` (a low-memory subclass capping the config: round AO), the
    class spelled by any of `makers` (_init_makers)?"""
    for other in {id(o): o for m in sorted(makers) for o in t.referencing(m)}.values():
        for cls in (n for n in ast.walk(other.tree) if isinstance(n, ast.ClassDef)):
            if not _derives_from(cls, makers):
                continue
            if _mixin_init_served([x for b in cls.bases for x in _base_classes(b, other)], makers, e, slot, depth, kind):
                return True
            for call in (n for n in ast.walk(cls) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                         and n.func.attr == "__init__"):
                shift = 1 if reach._unparse(call.func.value).rsplit(".", 1)[-1] in makers else 0  # (`*args` whole: the
                # subclass's makers', not read, as any parameter's callers are not)
                at = slot + shift if slot is not None else None
                handed = [k.value for k in call.keywords if k.arg == e.id] + (
                    [call.args[at]] if at is not None and 0 <= at < len(call.args) else [])
                if any(_served(h, other, depth + 1, kind) for h in handed):
                    return True
    return False


def _mixin_init_served(todo: List[Tuple[ast.ClassDef, "_Tree"]], makers: Set[str], e: ast.Name, slot: Optional[int],
                       depth: int, kind: str) -> bool:
    """Does a project class among the bases (`todo`) of a class deriving from one of `makers`, other than those, or
    a project base of one, which the MRO may run before the makers' `__init__`, hand it a served object through
    `super().__init__(...)` (`class DraftBackend(LowMemMixin, Backend)`, the mixin's `super().__init__(low_mem_view(
    cfg))`: round BA)? Past a `*args`, any later one."""
    seen: Set[int] = set()
    while todo and len(seen) < 32:
        c, there = todo.pop()
        if id(c) in seen or c.name in makers:
            continue
        seen.add(id(c))
        todo += [x for b in c.bases for x in _base_classes(b, there)]
        for call in (n for n in ast.walk(c) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                     and n.func.attr == "__init__" and reach._unparse(n.func.value).startswith("super(")):
            star = next((i for i, a in enumerate(call.args) if isinstance(a, ast.Starred)), len(call.args))
            at = slot if slot is not None else len(call.args)
            handed = [k.value for k in call.keywords if k.arg == e.id] + (
                [call.args[at]] if at < star else [a for a in call.args[star:] if not isinstance(a, ast.Starred)])
            if any(_served(h, there, depth + 1, kind) for h in handed):
                return True
    return False


def _params(fn: ast.AST) -> Set[str]:
    """The names a def or lambda binds as its parameters (`*args`, `**kwargs` too)."""
    a = fn.args
    return {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs + [a.vararg, a.kwarg] if x is not None}


def _home_scope(e: ast.Name, t: _Tree) -> ast.AST:
    """The scope whose binding a read of the name sees: the reading def's, else the nearest enclosing def binding
    it (a nested def's closure over the enclosing def's local: round BB), else the module's. A lambda's free name
    is read in the lambda alone, as before (open: following it reaches sglang's model classes' `__init__`, made
    through the `EntryClass` registry, and refuses the real engines)."""
    scope = t.scope(e)
    while isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)) and not (e.id in _params(scope) or any(
            isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load) and t.scope(n) is scope
            for n in t.spelled(e.id) + _binders(e.id, t)) and not _declared_global(scope, e.id)
            and not _declares(scope, e.id, ast.Nonlocal)):
        scope = t.scope(scope)
        while isinstance(scope, ast.ClassDef):  # (a class body is no enclosing scope of its methods)
            scope = t.scope(scope)
    return scope


def _declares(scope: ast.AST, name: str, kind: type) -> bool:
    return any(isinstance(n, kind) and name in n.names for n in ast.walk(scope))


def _writes_to(n: ast.AST, scope: ast.AST, name: str, t: _Tree) -> bool:
    """Does a binding `n` of the name write the home scope's (its own scope's, or a nested def's declaring it
    `nonlocal`: round BB)?"""
    inner = t.scope(n)
    while inner is not scope and isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef)) \
            and _declares(inner, name, ast.Nonlocal):
        inner = t.scope(inner)
    return inner is scope or scope is t.tree and _declared_global(inner, name)


def _bound_otherwise(e: ast.Name, t: _Tree) -> bool:
    """Does the scope whose binding `e` reads (_home_scope) bind its name otherwise than by a plain `=` of one target
    (a parameter, an unpacking but a pair's displays (_paired), `with ... as`, a loop's target, `:=`, an `except ...
    as`, a `match` capture: _binders)?"""
    scope = _home_scope(e, t)
    if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)) and e.id in _params(scope):
        return True
    if any(_writes_to(n, scope, e.id, t) for n in _binders(e.id, t)):
        return True  # (round BF: `case {'draft': cfg}:`, a capture of a `match` pattern binds the object)
    for n in t.spelled(e.id):
        if not isinstance(n, ast.Name) or isinstance(n.ctx, ast.Load) or not _writes_to(n, scope, e.id, t):
            continue
        up = t.up(n)
        if not (isinstance(up, ast.Assign) and n in up.targets or isinstance(up, ast.AnnAssign)) \
                and _paired(n, t) is None:
            return True
    return False


def _paired(n: ast.Name, t: _Tree) -> Optional[ast.AST]:
    """The item a pair's `=` binds a name of its target to (`target_cfg, draft_cfg = full, low`: round BF), where
    both sides are displays of one length with no star; None otherwise."""
    up = t.up(n)
    stmt = t.up(up) if isinstance(up, (ast.Tuple, ast.List)) else None
    if not (isinstance(stmt, ast.Assign) and up in stmt.targets and isinstance(stmt.value, (ast.Tuple, ast.List))):
        return None
    if len(stmt.value.elts) != len(up.elts) or any(isinstance(x, ast.Starred) for x in stmt.value.elts + up.elts):
        return None
    return stmt.value.elts[up.elts.index(n)]


def _binders(name: str, t: _Tree) -> List[ast.AST]:
    """The file's bindings of `name` by no `ast.Name` node, in a def (round BF): a `match` capture (`case {'draft':
    cfg}`, `case [*rest]`, `case {**rest}`, `case Cfg(x=cfg)`, `case _ as cfg`), an `except ... as`, and, in a def, a
    nested def's, class's or import's name (a module's are read as before: its imports by their files)."""
    def index() -> dict:
        found: dict = {}
        for n in ast.walk(t.tree):
            bound = n.name if isinstance(n, (ast.MatchAs, ast.MatchStar, ast.ExceptHandler)) else \
                n.rest if isinstance(n, ast.MatchMapping) else None
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)) \
                    and isinstance(t.scope(n), (ast.FunctionDef, ast.AsyncFunctionDef)):
                for bound in [n.name] if hasattr(n, "name") else [(a.asname or a.name).split(".")[0] for a in n.names]:
                    found.setdefault(bound, []).append(n)
            elif bound is not None:
                found.setdefault(bound, []).append(n)
        return found
    return t.remember("binders", index).get(name, [])


def _factory_returns(call: ast.Call, t: _Tree) -> List[Tuple[ast.AST, "_Tree"]]:
    """(each returned value, its file) of the module-level def a call names (_project_def); none where the name is no
    such def."""
    return _returns_of(_project_def(call.func.id, t) if isinstance(call.func, ast.Name) else None)


def _returns_of(found: Optional[Tuple[ast.AST, "_Tree"]]) -> List[Tuple[ast.AST, "_Tree"]]:
    """(each returned value, its file) of a (def, file) pair; none for None."""
    if found is None:
        return []
    d, there = found
    return [(r.value, there) for r in ast.walk(d) if isinstance(r, ast.Return) and r.value is not None]


def _bound_values(e: ast.AST, t: _Tree) -> List[ast.AST]:
    """What the file assigns a name (in the scope whose binding the read sees, _home_scope, with its `global` and
    `nonlocal` writes) or an attribute of self (in any method) with a plain `=`."""
    assigns = t.assigns(e.id if isinstance(e, ast.Name) else ("self", e.attr))
    if isinstance(e, ast.Name):
        scope = _home_scope(e, t)  # (round BB: an enclosing def's local, a nested def's `nonlocal` write)
        assigns = [n for n in assigns if _writes_to(n, scope, e.id, t)]
        pairs = [_paired(n, t) for n in t.spelled(e.id) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)
                 and _writes_to(n, scope, e.id, t)]
        return [n.value for n in assigns] + [v for v in pairs if v is not None]
    return [n.value for n in assigns]


def _serves_reads(cls: ast.ClassDef, t: _Tree, depth: int, kind: str = "") -> bool:
    key = ("serves", id(cls), kind)
    if key not in t.memo:
        t.memo[key] = True  # (a class met again while it is read: a cycle of bases serves, as depth > 8 does)
        t.memo[key] = _class_serves(cls, t, depth, kind)
    return t.memo[key]


def _class_serves(cls: ast.ClassDef, t: _Tree, depth: int, kind: str = "") -> bool:
    """Does the class (or a base of the project) serve a read of it or fill itself otherwise than its names say: it
    defines _READ_SERVERS (those of a keyed read and a mapping's views aside for a read by name, `kind` ATTRIBUTE; a
    `__getitem__`/`__getattr__` reading the key off what its `__init__` stores as handed is none), takes a
    metaclass, stores reflectively on itself (`self.__dict__.update`, `setattr(self, ...)`), or derives from a value
    class of the library (_VALUE_BASES) while making itself by more than storing its parameters (a `dict` subclass
    filling itself capped, round AG's g3)?"""
    defs = {d.name: d for d in cls.body if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef))}
    servers = _READ_SERVERS - _ITEM_READS if kind == ATTRIBUTE else _READ_SERVERS  # (`cfg.index_topk` calls none of those)
    forwarding = {n for n in ("__getitem__", "__getattr__") if n in defs and _reads_item(defs[n]) and all(
        reach.stores_its_parameters(d) for d in defs.values() if d.name in ("__init__", "__new__", "__post_init__"))}
    based = any(reach._unparse(b).rsplit(".", 1)[-1] in _VALUE_BASES and not _base_classes(b, t) for b in cls.bases)
    makes = [d for n, d in defs.items() if n in ("__init__", "__new__", "__post_init__")]
    if depth > 8 or cls.keywords or reach.decorated_hook(cls) is not None or servers.intersection(defs) - forwarding or any(
            reach.body_binds(cls.body, n) for n in servers) or _stores_reflectively(cls, family(WIDTH_CORE)) \
            or based and any(d.name == "__new__" or not reach.stores_its_parameters(d) for d in makes):
        return True  # (a forwarding `__getitem__`/`__getattr__` over what `__init__` was handed: that object's read)
    return any(_serves_reads(c, there, depth + 1, kind) for b in cls.bases for c, there in _base_classes(b, t))


def _stores_reflectively(cls: ast.ClassDef, names: re.Pattern) -> bool:
    """Does a method of the class store on its own object by no spelling of a field's name: `setattr(self, ...)`,
    `object.__setattr__(self, ...)` or `super().__setattr__(...)` outside a forwarding `__setattr__`, a write into
    `self.__dict__` or `vars(self)` (`.update`, an item store)? (Another object's, `object.__setattr__(metadata,
    ...)`, is that object's class's matter.)"""
    forwarding = {id(n) for d in cls.body if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef))
                  and d.name == "__setattr__" and reach.forwards_setattr(d) for n in ast.walk(d)}
    own = lambda e: isinstance(e, ast.Name) and e.id in ("self", "cls")  # noqa: E731
    namespace = lambda e: isinstance(e, ast.Attribute) and e.attr == "__dict__" and own(e.value) or isinstance(  # noqa: E731
        e, ast.Call) and isinstance(e.func, ast.Name) and e.func.id == "vars" and bool(e.args) and own(e.args[0])
    for n in ast.walk(cls):
        named = _set_name(n) if isinstance(n, ast.Call) else None
        other = isinstance(named, ast.Constant) and isinstance(named.value, str) and not names.fullmatch(named.value)
        if isinstance(n, ast.Call) and id(n) not in forwarding and not other and (  # (`setattr(self, "forward_
                isinstance(n.func, ast.Name) and n.func.id == "setattr" and n.args and own(n.args[0])  # metadata", md)`
                or isinstance(n.func, ast.Attribute) and n.func.attr == "__setattr__" and (  # stores another field)
                    reach._unparse(n.func.value) == "super()" or n.args and own(n.args[0]))):
            return True
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and namespace(n.func.value) \
                and n.func.attr in ("update", "setdefault", "__setitem__", "pop", "clear"):
            return True
        if isinstance(n, ast.Subscript) and not isinstance(n.ctx, ast.Load) and namespace(n.value):
            return True
    return False


def _set_name(call: ast.Call) -> Optional[ast.AST]:
    """The name argument of a store by name: `super().__setattr__(name, v)`'s first, `setattr(obj, name, v)`'s and
    `object.__setattr__(obj, name, v)`'s second."""
    if isinstance(call.func, ast.Attribute) and reach._unparse(call.func.value) == "super()":
        return call.args[0] if call.args else None
    return call.args[1] if len(call.args) > 1 else None


def _own_getter(call: ast.Call, names: re.Pattern, t: _Tree, depth: int) -> bool:
    """A call of the file's module-level def, or of one it imports from a file of the project (its binding
    there), bound so only, whose every return is plain (a fork's `get_dsa_index_topk(config)` returning
    `config["index_topk"]`)."""
    if not isinstance(call.func, ast.Name) or depth >= 4:
        return False
    found = _project_def(call.func.id, t)
    if found is None or t.swapped(call.func.id):  # (another file's `serving_config.indexer_width = _decode_width`: AC)
        return False
    d, there = found
    return _returns_plain(d, names, there, depth + (there is not t))


def _unread_import(name: str, t: _Tree) -> bool:
    """Is `name` bound only by an import from a file of the project that is not among those read (`t.others`)?"""
    bindings = _module_bindings(t.tree, name)
    in_project = getattr(t.imported, "in_project", None)
    return len(bindings) == 1 and isinstance(bindings[0], ast.ImportFrom) and t.imported(name) is None \
        and in_project is not None and in_project(name)


def _project_def(name: str, t: _Tree) -> Optional[Tuple[ast.AST, "_Tree"]]:
    """(the def, its file) a name of the file calls: the file's only binding of it, a def, or an import from a file of
    the project whose only binding of it there is one; None otherwise."""
    bindings = _module_bindings(t.tree, name)
    if len(bindings) != 1:
        return None
    (node,) = bindings
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return node, t
    index = t.imported(name) if isinstance(node, ast.ImportFrom) else None
    if index is None:
        return None
    there = t.others[index]
    alias = next(a for a in node.names if (a.asname or a.name) == name)
    found = _module_bindings(there.tree, alias.name)
    return (found[0], there) if len(found) == 1 and isinstance(found[0], (ast.FunctionDef, ast.AsyncFunctionDef)) \
        else None


def _module_bindings(tree: ast.AST, name: str) -> List[ast.AST]:
    """Every statement of the file binding `name` at any depth: defs, classes, imports, assignments."""
    out: List[ast.AST] = []
    for n in ast.walk(tree):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n.name == name \
                or isinstance(n, (ast.Import, ast.ImportFrom)) and any(
                    (a.asname or a.name).split(".")[0] == name for a in n.names) \
                or isinstance(n, ast.Name) and n.id == name and not isinstance(n.ctx, ast.Load) \
                or isinstance(n, (ast.Global, ast.Nonlocal)) and name in n.names:
            out.append(n)
    return out


def _returns_plain(fn: ast.AST, names: re.Pattern, t: _Tree, depth: int) -> bool:
    """Does the def return, on each `return`, a plain value (and decorate itself at most as a property, a cached
    one too)?"""
    if any(ast.unparse(d) not in ("property", "cached_property", "functools.cached_property")
           for d in fn.decorator_list):
        return False
    returns = [r.value for r in ast.walk(fn) if isinstance(r, ast.Return)]
    return bool(returns) and all(r is not None and _plain(r, names, t, depth + 1) for r in returns)


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
    """`getattr(x, "index_topk")`, `x.get("index_topk")`, with a default of None at most."""
    name = call.func.attr if isinstance(call.func, ast.Attribute) else call.func.id if isinstance(call.func, ast.Name) \
        else ""
    if name not in ("getattr", "get") or call.keywords or isinstance(call.func, ast.Attribute) and ast.unparse(
            call.func.value).rsplit(".", 1)[-1] == "environ":
        return False  # (`os.environ.get("DSA_INDEX_TOPK")`: the environment's, round AC)
    slot, default = _READERS[name]
    return len(call.args) in (slot + 1, default + 1) and isinstance(call.args[slot], ast.Constant) \
        and _named(call.args[slot].value, names) and (len(call.args) == slot + 1 or isinstance(
            call.args[default], ast.Constant) and call.args[default].value is None)


def _keyword_only(name: str, a: ast.arguments, names: re.Pattern, t: _Tree, depth: int) -> bool:
    """A parameter of the family's name every call must name (a keyword spelling, read where it is), its default
    none or plain; one taken by position may be handed anything (round AB: `cls(hf, cap)`, `super().__init__`, a
    lambda)."""
    only = [x.arg for x in a.kwonlyargs]
    if name not in only or not _named(name, names):
        return False
    default = a.kw_defaults[only.index(name)]
    return default is None or _plain(default, names, t, depth + 1)


def _handed_by_position(name: str, fn: ast.AST, names: re.Pattern, t: _Tree, depth: int) -> bool:
    """A parameter of the family's name taken by position, of a module-level def or of a module-level class's
    `__init__`, its default none or plain: every spelling of the def's (the class's) name in the project is a
    call handing the slot a plain value or leaving it (a keyword spelling is read where it is), no call unpacks
    `*`/`**`, no class derives from the class and its methods make no `cls(...)`/`type(self)(...)` (round AB:
    `cls(hf, cap)`, `super().__init__(hf, cap)`, a lambda or an alias handing it)."""
    if not _named(name, names) or depth >= 3 or not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    a = fn.args
    positional = a.posonlyargs + a.args
    slot = [x.arg for x in positional].index(name)
    default_at = slot - (len(positional) - len(a.defaults))
    if default_at >= 0 and not _plain(a.defaults[default_at], names, t, depth + 1):
        return False
    owner = t.up(fn)
    if isinstance(owner, ast.ClassDef) and fn.name == "__init__" and t.up(owner) is t.tree:
        called, slot = owner.name, slot - 1
        if _makes_its_own(owner):
            return False
    elif owner is t.tree:
        called = fn.name
    else:
        return False
    return _calls_hand_plain(called, slot, names, t, depth, set())


def _calls_hand_plain(called: str, slot: int, names: re.Pattern, t: _Tree, depth: int, seen: set) -> bool:
    """Is every spelling of `called` in the project a call leaving the slot or handing it a plain value, or a
    base of a subclass (of no `cls(...)`) whose `__init__` is none or hands `*args` straight to `super().__init__`,
    itself so called?"""
    if called in seen or len(seen) > 8:
        return called in seen
    seen.add(called)
    for other in t.referencing(called):
        for node in other.spelled(called):
            if isinstance(node, ast.alias) and node.asname not in (None, called):
                return False  # (`import ServingConfig as Config`: spelled otherwise, round AC)
            call = other.up(node) if not isinstance(node, ast.alias) else None
            if call is None or isinstance(call, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            if isinstance(call, ast.ClassDef) and node in call.bases:
                if _makes_its_own(call) or not _hands_args_on(call) or _mixes_init(call, node, other, 0) \
                        or not _calls_hand_plain(
                        call.name, slot, names, other, depth, seen):
                    return False
                continue
            if not isinstance(call, ast.Call) or call.func is not node or any(
                    isinstance(x, ast.Starred) for x in call.args) or any(k.arg is None for k in call.keywords):
                return False  # (an alias, a value handed on, a call unpacking)
            if len(call.args) > slot and not _plain(call.args[slot], names, other, depth + 1):
                return False
    return True


def _hands_args_on(cls: ast.ClassDef) -> bool:
    """The subclass's `__init__`: none, or `(self, *args, **kwargs)` calling `super().__init__(*args, **kwargs)`
    once with exactly those."""
    init = next((n for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                 and n.name == "__init__"), None)
    if init is None:
        return True
    a = init.args
    if len(a.posonlyargs + a.args) != 1 or a.kwonlyargs or a.vararg is None:
        return False
    supers = [n for n in ast.walk(init) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
              and n.func.attr == "__init__"]
    packed = {x.arg for x in (a.vararg, a.kwarg) if x is not None}
    if len(supers) != 1 or any(isinstance(n, ast.Name) and n.id in packed and not isinstance(n.ctx, ast.Load)
                               for n in ast.walk(init)):
        return False  # (`args = (args[0], min(args[1], CAP)) + args[2:]` first: not what it was handed, round AE)
    call = supers[0]
    return [ast.dump(x) for x in call.args] == [ast.dump(ast.Starred(ast.Name(a.vararg.arg, ast.Load()), ast.Load()))] \
        and [k.arg for k in call.keywords] == ([None] if a.kwarg else []) and all(
            isinstance(k.value, ast.Name) and k.value.id == a.kwarg.arg for k in call.keywords)


def _mixes_init(cls: ast.ClassDef, base: ast.AST, t: _Tree, depth: int) -> bool:
    """Does a base listed before `base` (or a base of one), a class of the project, define `__new__` or an `__init__`
    not handing its parameters on unchanged (_forwards_init): the MRO runs it first, handing the width's class other
    values through `super()` (round AE's e3: a mixin capping the width)?"""
    before = cls.bases[:next((i for i, b in enumerate(cls.bases) if b is base), len(cls.bases))]
    for b in before:  # (the MRO runs the bases listed before it first; those after only through super())
        name = reach._unparse(b).rsplit(".", 1)[-1]
        for other in t.referencing(name):
            for c in other.classes(name):
                if depth > 3 or any(isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef)) and (
                        d.name == "__new__" or d.name == "__init__" and not _forwards_init(d)) for d in c.body) \
                        or _mixes_init(c, None, other, depth + 1):
                    return True
    return False


def _forwards_init(init: ast.AST) -> bool:
    """A mixin's `__init__` handing its own parameters, unchanged and in order, to `super().__init__` once (a check
    before it: round AE's safe twin), binding none of them again."""
    a = init.args
    params = [x.arg for x in a.posonlyargs + a.args][1:]
    supers = [n for n in ast.walk(init) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
              and n.func.attr == "__init__"]
    rebound = {n.id for n in ast.walk(init) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    return len(supers) == 1 and not a.vararg and not a.kwonlyargs and not rebound & set(params) \
        and reach._unparse(supers[0].func.value) == "super()" and not supers[0].keywords \
        and [reach._unparse(x) for x in supers[0].args] == params


def _makes_its_own(cls: ast.ClassDef) -> bool:
    """Does a method of the class make an instance of it by `cls(...)`, `type(self)(...)` or `self.__class__(...)`?"""
    for n in ast.walk(cls):
        if isinstance(n, ast.Call) and (isinstance(n.func, ast.Name) and n.func.id == "cls" or isinstance(
                n.func, ast.Call) and isinstance(n.func.func, ast.Name) and n.func.func.id == "type" or isinstance(
                n.func, ast.Attribute) and n.func.attr == "__class__"):
            return True
    return False


def _plain_name(v: ast.Name, names: re.Pattern, t: _Tree, depth: int) -> bool:
    """A keyword-only parameter of the family's name (its default and every keyword handing it are spellings
    read where they are), or a name its scope binds only to plain values, which no `global`, `nonlocal` or
    import anywhere in the file binds too (round AB: a closure's `nonlocal` write, an import overriding it)."""
    scope = t.scope(v)
    if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        a = scope.args
        if v.id in {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs}:
            return _keyword_only(v.id, a, names, t, depth) or _handed_by_position(v.id, scope, names, t, depth)
    bindings = [n for n in ast.walk(scope) if isinstance(n, ast.Name) and n.id == v.id
                and not isinstance(n.ctx, ast.Load) and t.scope(n) is scope]
    elsewhere = [n for n in ast.walk(t.tree) if isinstance(n, (ast.Global, ast.Nonlocal)) and v.id in n.names
                 or isinstance(n, (ast.Import, ast.ImportFrom)) and any(
                     (a.asname or a.name).split(".")[0] == v.id for a in n.names)]
    if not bindings or elsewhere or depth >= 4 or any(t.scope(n) is scope for n in _binders(v.id, t)):
        return False  # (round BF: a `match` capture, `except ... as`, a nested def binding it too: not read)
    values = [_stored_value(b, t) for b in bindings]
    return all(v is not None and v is not _NO_VALUE and _plain(v, names, t, depth + 1) for v in values)


def engine_getter(tree: ast.AST) -> Plain:
    """Is a call the engine's getter of the width: a name of WIDTH_GETTER's that the file binds only by imports
    from the engine's packages?"""
    def test(call: ast.Call) -> bool:
        return isinstance(call.func, ast.Name) and WIDTH_GETTER.fullmatch(call.func.id) is not None \
            and engine_name(tree, call.func.id)
    return test


def engine_name(tree: ast.AST, name: str) -> bool:
    """Is every binding of `name` in the file an import from the engine's packages (rows.engine_module)?"""
    found = False
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            for a in node.names:
                if (a.asname or a.name) == name:
                    found = True
                    if not engine_module(node.module or "") or node.level:
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
    `attr`'s family a value of its own, those of a file of the engine's releases (ENGINE_FILES) aside. Read once
    per family and file."""
    core = re.sub(r"(?i)^(dsa_|nsa_)", "", attr).lower()
    done = proj.__dict__.setdefault("_own_width_values", {})
    key = (core, id(own))
    if key not in done:
        words = [p + c for p in ("", "dsa_", "nsa_") for c in (core, core.upper())] + [core.replace("_", "-")]
        inside = re.compile(re.escape(core.encode()).replace(b"_", b"[_-]"), re.I)  # (`_index_topk`: round AB)
        spelling = {f.path: f for f in proj.files_naming(words) + proj.files_matching(inside)}
        parsed = [f for f in spelling.values() if own is None or f.path != own.path] + [own] * (own is not None)
        at = {f.path: i for i, f in enumerate(parsed)}
        texts = dict(proj.texts())
        if own is not None and own is proj.__dict__.get("_checked"):  # (the module as it is checked)
            texts[own.path] = proj.__dict__.get("_checked_text", "").encode("utf-8", "surrogateescape")

        def imported(f) -> Imported:
            def found(name: str) -> Optional[str]:  # (a module `import`ed: that module's own file)
                module = f.froms.get(name, (f.modules.get(name),))[0] if name not in f.ambiguous else None
                return f._find(f.path, module) if module else None

            def where(name: str) -> Optional[int]:
                path = found(name)
                return at.get(path) if path else None
            where.in_project = lambda name: found(name) is not None  # type: ignore[attr-defined]
            return where
        def getter(f) -> Plain:  # (the engine's getter where its import leaves the project or finds a release's def)
            test, where = engine_getter(f.tree), imported(f)

            def released(call: ast.Call) -> bool:
                i = where(call.func.id) if test(call) else None
                there = parsed[i].tree if i is not None else None
                defs = engine_defs.defs_named(there, f.froms[call.func.id][1]) if there is not None else []
                return test(call) and (i is None or bool(defs) and all(engine_defs.release_def(there, d) for d in defs))
            return released

        def naming(name: str):
            files = [f for f in proj.files_naming([name]) if own is None or f.path != own.path]
            return [(f.tree, getter(f), imported(f)) for f in files + [own] * (own is not None)]
        found = own_values([(f.tree, getter(f), imported(f)) for f in parsed], core, naming,
                           lambda name: proj.spellings([name]))
        done[key] = [reach.Finding(proj.rel(parsed[i].path), line, what) for i, line, what in found
                     if file_key(texts.get(parsed[i].path, b"")) not in ENGINE_FILES]
    return done[key]


def file_key(data: bytes) -> str:
    """What ENGINE_FILES is keyed by: the file's bytes, hashed."""
    return hashlib.sha256(data).hexdigest()[:24]
