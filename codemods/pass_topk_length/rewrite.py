"""The pass-topk-length rule's edit, and its proof: the rewritten module is checked with LibCST's
scope analysis (validate_rewrite) before the edit is accepted; what cannot be proved safe becomes
`manual`. Also the `Optional` annotation the new parameter gets (class 7)."""
from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Set, Tuple

import libcst as cst
from libcst.helpers import get_full_name_for_node
from libcst.metadata import ClassScope, ComprehensionScope, GlobalScope

from topk_migrate.cst.cstutil import add_keyword, add_param
from topk_migrate.cst.resolve import ModuleFacts
from topk_migrate.cst.scopecheck import Tree, inserted_ids, resolution_table, root_binding

from .derived import derived_value
from .group import GUARD_COMMENT, Group, _inline_value, _metadata_value, fits
from .quick import PARAM
from .syntax import CONSTANT_NAMES, _code, _indices_arg, _q_arg, _root, _top_level_imports, import_binding


# -- the edit -----------------------------------------------------------------------
@dataclass
class Record:
    """What the rewrite inserted, by identity in the rewritten tree, per group."""

    inserted: Dict[int, List[cst.CSTNode]] = field(default_factory=dict)  # id(group) -> inserted subtrees
    guards: Dict[int, List[cst.CSTNode]] = field(default_factory=dict)  # id(group) -> guard statements
    kernel_calls: Dict[int, cst.Call] = field(default_factory=dict)  # id(original call) -> rewritten call
    helper_defs: Dict[int, cst.FunctionDef] = field(default_factory=dict)  # id(group) -> rewritten helper
    torch_names: Set[str] = field(default_factory=set)  # what the guards read torch as
    bound: Dict[int, List[cst.CSTNode]] = field(default_factory=dict)  # id(group) -> its `:=` and the name it binds


class _Rewrite(cst.CSTTransformer):
    """tree: the numbered Tree of the module this will visit: only the nodes on the paths to the edited
    ones are then visited (the rest stay as they are, the same objects); the output is the same."""

    def __init__(self, groups: Sequence[Group], annotation: Optional[str], tree: Optional[Tree] = None,
                 torch: Optional[str] = None):
        self.annotation, self.torch = annotation, torch
        self.record = Record()
        if torch:
            self.record.torch_names.add(torch)
        self.keywords: Dict[int, Tuple[str, Group]] = {}
        self.kernel: Set[int] = set()
        self.guards: Dict[int, List[Tuple[Group, str, Optional[str]]]] = {}
        self.params: Dict[int, Group] = {}
        self.helpers: Dict[int, Group] = {}
        for g in groups:
            for c in g.calls:
                q = g.q(c)
                self.kernel.add(id(c.node))
                if g.kind == "derived":
                    value = derived_value(g.indices)
                elif g.kind == "direct" and g.inline:
                    value = _inline_value(g.metadata, g.form, q, torch)
                elif g.inline:
                    value = f"{PARAM} if {PARAM} is not None and {fits(PARAM, q, torch)} else None"
                else:
                    value = PARAM
                    bind = _metadata_value(g.metadata, g.form) if g.kind == "direct" else None
                    self.guards.setdefault(id(c.statement), []).append((g, q, bind))
                self.keywords[id(c.node)] = (value, g)
            for k, expr, form in g.callers:
                self.keywords[id(k.node)] = (_metadata_value(expr, form), g)
            if g.helper is not None:
                self.helpers[id(g.helper.node)] = g
                if g.add_param:
                    self.params[id(g.helper.node)] = g
        self._spans = None
        if tree is not None:
            targets = {*self.keywords, *self.params, *self.helpers, *self.guards}
            order = tree.order
            found = sorted(order[i] for i in targets if i in order)
            if len(found) == len(targets):  # else: every node, as without a tree
                self._spans = (found, order, tree.end)

    def on_visit(self, node: cst.CSTNode) -> bool:
        if self._spans is not None:
            found, order, end = self._spans
            i = order.get(id(node))
            if i is not None:
                k = bisect_left(found, i)
                if k == len(found) or found[k] > end[id(node)]:
                    return False  # no edited node below: leave it whole
        return super().on_visit(node)

    def _add(self, g: Group, node: cst.CSTNode) -> None:
        self.record.inserted.setdefault(id(g), []).append(node)

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.Call:
        if id(original) not in self.keywords:
            return updated
        value, g = self.keywords[id(original)]
        if g.bind_indices:
            updated = self._bind_indices(g, updated)
        if any(a.star == "**" for a in updated.args):
            new, inserted = merged_mapping(updated, value)
        else:
            new = add_keyword(updated, PARAM, value)
            inserted = next(a for a in reversed(new.args) if a.keyword and a.keyword.value == PARAM).value
        self._add(g, inserted)
        if id(original) in self.kernel:
            self.record.kernel_calls[id(original)] = new
        return new

    def _bind_indices(self, g: Group, call: cst.Call) -> cst.Call:
        """The call with its indices argument bound to g.indices where it is evaluated: `(name := ...)`."""
        arg = _indices_arg(call)
        bound = cst.NamedExpr(target=cst.Name(g.indices), value=arg, lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        self.record.bound.setdefault(id(g), []).extend((bound, bound.target))
        return call.with_changes(args=[a.with_changes(value=bound) if a.value is arg else a for a in call.args])

    def leave_FunctionDef(self, original: cst.FunctionDef, updated: cst.FunctionDef) -> cst.FunctionDef:
        g = self.params.get(id(original))
        if g is not None:
            spec = f"{PARAM}: {self.annotation} = None" if self.annotation else f"{PARAM}=None"
            updated = add_param(updated, spec)
            p = updated.params
            self._add(g, next(x for x in (*p.params, *p.kwonly_params) if x.name.value == PARAM))
        h = self.helpers.get(id(original))
        if h is not None:
            self.record.helper_defs[id(h)] = updated
        return updated

    def _guarded(self, original_body, updated_body):
        out = []
        for orig, upd in zip(original_body, updated_body):
            for g, q, bind in self.guards.get(id(orig), ()):
                lead = upd.leading_lines
                blank = [cst.EmptyLine(indent=False)] if lead and lead[0].comment is None else []
                first = [*blank, cst.EmptyLine(comment=cst.Comment(GUARD_COMMENT))]
                if bind:  # bind the metadata here, then the same guard as in a helper
                    stmt = cst.parse_statement(f"{PARAM} = {bind}\n").with_changes(leading_lines=first)
                    out.append(stmt)
                    self._add(g, stmt)
                    first = []
                test = f"{PARAM} is not None and not {fits(PARAM, q, self.torch)}"
                guard = cst.parse_statement(f"if {test}:\n    {PARAM} = None\n").with_changes(leading_lines=first)
                out.append(guard)
                self._add(g, guard)
                self.record.guards.setdefault(id(g), []).append(guard)
                if not blank:
                    upd = upd.with_changes(leading_lines=[cst.EmptyLine(indent=False), *lead])
            out.append(upd)
        return out

    def leave_IndentedBlock(self, original: cst.IndentedBlock, updated: cst.IndentedBlock) -> cst.IndentedBlock:
        if any(id(s) in self.guards for s in original.body):
            return updated.with_changes(body=self._guarded(original.body, updated.body))
        return updated


def merged_mapping(call: cst.Call, value: str) -> Tuple[cst.Call, cst.BaseExpression]:
    """`f(..., **kw)` as `f(..., **{"topk_length": value, **kw})` (and the value inserted): a topk_length the
    mapping carries still wins, as it did, and none is passed twice (the call's only `**`: classify)."""
    star = next(a for a in call.args if a.star == "**")
    inserted = cst.parse_expression(value)
    merged = cst.Dict([cst.DictElement(cst.SimpleString(f'"{PARAM}"'), inserted), cst.StarredDictElement(star.value)])
    return call.with_changes(args=[a.with_changes(value=merged) if a is star else a for a in call.args]), inserted


# -- validation ------------------------------------------------------------------------
GUARD_BUILTINS = {"isinstance", "type", "str"}
# inserted nodes after which the validation compares every read (a declaration, a deletion, an import, a scope)
_BINDS_OTHERWISE = {cst.Global, cst.Nonlocal, cst.Del, cst.Import, cst.ImportFrom, cst.FunctionDef, cst.ClassDef,
                    cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp,
                    *(getattr(cst, k) for k in ("TypeAlias", "TypeParameters") if hasattr(cst, k))}
# tests/test_adversarial.py disables this to prove it bites
def validate_rewrite(original: Tree, rewritten: cst.Module, record: Record, groups: Sequence[Group],
                     source: Optional[str] = None) -> Dict[int, str]:
    """Check a planned rewrite on the rewritten module; {id(group): why it is unsafe}.

    With LibCST scope analysis: every name the inserted code reads (q's root, the
    metadata's root, topk_length) resolves to the binding intended (the one the kernel
    call's q uses; the metadata bound once on every path, None handled; only this
    group's topk_length); no name that resolved before resolves differently after; each
    guard runs before its call in the same scope with nothing rebinding q in between.
    `source`: the text `original` was cut down from, when it is known.
    """
    new = Tree(rewritten, positions=False)
    kinds: Set[type] = set()
    mine = {id(g): inserted_ids(record.inserted.get(id(g), ()), kinds) | {id(n) for n in record.bound.get(id(g), ())}
            for g in groups}
    everything = set().union(*mine.values()) if mine else set()
    owner = {i: gid for gid, ids in mine.items() for i in ids}
    anywhere = set().union(everything, *(inserted_ids(nodes) for gid, nodes in record.inserted.items() if gid not in mine))
    failures: Dict[int, str] = {}

    def fail(gid: int, why: str) -> None:
        failures.setdefault(gid, why)

    # 1. Nothing that resolved before resolves differently after (class 3: the new
    # parameter or local would capture a global/closure `topk_length`, or make an earlier
    # read of it an UnboundLocalError).
    # Only a binding changes what a read of its name resolves to: of the names the inserted code binds, the
    # reads are compared; every read, where it holds a statement that binds otherwise or opens a scope.
    if kinds & _BINDS_OTHERWISE:
        names = None
    else:
        names = frozenset(a.name for s in new.scopes for a in s.assignments if id(getattr(a, "node", None)) in everything)
    tables = original.__dict__.setdefault("_tables", {})
    if names is not None and source is not None and source.isascii() and not any(n in source for n in names):
        before = after = {}  # no read of them before: nothing to compare (nor the original's analysis to make)
    else:
        if names not in tables:
            tables[names] = resolution_table(original, names=names)
        before, after = tables[names], resolution_table(new, skip=everything, names=names)
    for key, reads in before.items():
        now = after.get(key, [])
        for i, (was, node) in enumerate(reads):
            if i < len(now) and now[i][0] == was:
                continue
            culprits = {owner[id(a.node)] for s in new.scopes for a in s.assignments
                        if a.name == key[1] and id(getattr(a, "node", None)) in owner} or set(mine)
            for gid in culprits:
                fail(gid, f"rewrite would change what `{key[1]}` means at line {original.line(node)}: "
                          f"it would read the `{PARAM}` the rewrite adds; rename the existing one or migrate by hand")
            break

    # 2. What the inserted code reads.
    by_id = {id(x): x for x in groups}
    inserted = _Inserted(new, record, anywhere)
    for _rank, name, node, access in new.accesses():
        gid = owner.get(id(node))
        if gid is None or access.is_annotation or name in CONSTANT_NAMES:
            continue
        g = by_id[gid]
        check = _check_derived_read if g.kind == "derived" else _check_read
        why = check(inserted, g, mine[gid], access, name, node)
        if why:
            fail(gid, why)

    # 3. Each statement guard dominates its call, in the call's own scope, with q unchanged.
    for g in groups:
        if g.inline:
            continue
        for c in g.calls:
            call = record.kernel_calls.get(id(c.node))
            if call is None:
                fail(id(g), "the kernel call was not rewritten")
                continue
            why = _check_guard_placement(new, g, record, call, g.q(c))
            if why:
                fail(id(g), why)
    return failures


def _binding_ids(b) -> Set[int]:
    return {id(a) for a in b.assignments}


@dataclass(frozen=True)
class _Inserted:
    """What each read of the inserted code is checked against (_check_read), the same for every read: the
    rewritten tree, the rewrite's record, and the ids of the nodes inserted for every group."""

    new: Tree
    record: Record
    anywhere: Set[int]


def _check_read(inserted: _Inserted, g: Group, ids: Set[int], access, name: str, node: cst.CSTNode) -> Optional[str]:
    """Why a read of `name` in the code inserted for g (node ids: ids; of every group: inserted.anywhere) is unsafe."""
    new, record, anywhere = inserted.new, inserted.record, inserted.anywhere
    b = new.binding_in(access.scope, name)
    if name == "getattr":  # the builtin, for metadata whose type nothing declares
        return None if b.scope_rank == -2 or not b.assignments else "rewrite would read `getattr`, which this module rebinds"
    if name in GUARD_BUILTINS:  # the defensive guard's builtins: never rebound in the module
        return None if b.scope_rank == -2 or not b.assignments else f"rewrite would read `{name}`, which this module rebinds"
    if name == "torch" or (name in record.torch_names):
        if b.assignments and all(isinstance(getattr(a, "scope", None), GlobalScope) and _imports_torch(a.node, name)
                                 for a in b.assignments):
            return None
        return f"rewrite would read `{name}`, which is not the module's own `import torch` there"
    if name == PARAM:
        allowed = set(ids)
        helper = record.helper_defs.get(id(g))
        if helper is not None:
            p = helper.params
            allowed |= {id(x) for x in (*p.params, *p.kwonly_params, *p.posonly_params) if x.name.value == PARAM}
        if not b.assignments:
            return f"rewrite would read `{PARAM}` where nothing binds it"
        for a in b.assignments:
            if id(getattr(a, "node", None)) not in allowed:
                other = getattr(a, "node", None)
                if id(other) in anywhere:
                    return f"another rewritten kernel call in the same function also binds `{PARAM}`"
                return (f"`{PARAM}` already names something where the rewrite would use it "
                        f"({_kind(a)}); rename it or migrate by hand")
        return None
    for c in g.calls:
        call = record.kernel_calls.get(id(c.node))
        q = g.q(c)
        if call is not None and q.split(".")[0] == name and new.inside(node, call):
            return None  # the call's own q, read inline at the call
    for c in g.calls:
        q = g.q(c)
        call = record.kernel_calls.get(id(c.node))
        if call is None or q.split(".")[0] != name:
            continue
        q_node = _root(_q_arg(call))
        if q_node is None:
            continue
        at_call = new.binding(q_node, name)
        if at_call.scope_rank == b.scope_rank and _binding_ids(at_call) == _binding_ids(b):
            return None
        return f"rewrite would read `{name}` outside its scope: the kernel call's `{name}` is {_describe(at_call)}"
    roots = {m.split(".")[0] for m in ([g.metadata] if g.metadata else []) + [e for _, e, _ in g.callers]}
    if name in roots:
        why, none = root_binding(new, node, name)
        if why:
            return why
        if none and not _tests_not_none(new, node, name):
            return f"`{name}` may be None where the rewrite reads `{name}.` from it"
        return None
    return f"rewrite would read `{name}`, which it did not plan to read"


def _check_derived_read(inserted: _Inserted, g: Group, ids: Set[int], access, name: str, node: cst.CSTNode) -> Optional[str]:
    """Why a read of `name` in the derived lengths of g is unsafe: torch must be the module's own import, the
    indices the object the call hands the kernel (the `:=` g inserted, or the name the call reads there)."""
    new = inserted.new
    b = new.binding_in(access.scope, name)
    if name in inserted.record.torch_names:
        return _check_read(inserted, g, ids, access, name, node)
    if name != g.indices:
        return f"rewrite would read `{name}`, which it did not plan to read"
    if g.bind_indices:
        if b.assignments and all(id(getattr(a, "node", None)) in ids for a in b.assignments):
            return None
        return f"`{name}` would also name something else where the rewrite reads it; migrate by hand"
    call = inserted.record.kernel_calls.get(id(g.calls[0].node))
    arg = _indices_arg(call) if call is not None else None
    if isinstance(arg, cst.Name) and _binding_ids(new.binding(arg, name)) == _binding_ids(b) and b.assignments:
        return None
    return f"rewrite would read `{name}` where it may not be the call's indices"


def _imports_torch(node, name: str) -> bool:
    """Does `node` bind `name` to the torch package: `import torch`, `import torch.nn` (which binds `torch`),
    or `import torch as name`?"""
    return isinstance(node, cst.Import) and (name, "torch") in map(import_binding, node.names)


def _kind(a) -> str:
    node = getattr(a, "node", None)
    if isinstance(node, cst.Param):
        return "a parameter"
    if isinstance(getattr(a, "scope", None), GlobalScope):
        return "a module-level name"
    if isinstance(node, (cst.Import, cst.ImportFrom)):
        return "an import"
    return "a local variable"


_BOUND_AS = {"lambda": "a lambda parameter", "comprehension": "a comprehension variable", "class body": "a class attribute"}


def _describe(b) -> str:
    if not b.assignments:
        return "unbound there"
    scope = b.assignments[0].scope
    kind = _scope_kind(scope)
    if kind in _BOUND_AS:
        return _BOUND_AS[kind]
    node = getattr(scope, "node", None)
    return f"bound in `{node.name.value}`" if isinstance(node, cst.FunctionDef) else "a module-level name"


def _tests_not_none(new: Tree, node: cst.CSTNode, name: str) -> bool:
    """Is the inserted expression holding node `... if name is not None ...` or `getattr(name, ...)`?"""
    for anc in new.ancestors(node):
        if isinstance(anc, cst.IfExp) and f"{name} is not None" in _code(anc.test):
            return True
        if isinstance(anc, cst.Call) and get_full_name_for_node(anc.func) == "getattr":
            return True
        if isinstance(anc, cst.BaseStatement):
            break
    return False


def _check_guard_placement(new: Tree, g: Group, record: Record, call: cst.Call, q: str) -> Optional[str]:
    guards = [s for s in record.guards.get(id(g), ()) if id(s) in new.order]
    holding = next((a for a in new.ancestors(call) if isinstance(new.parent.get(a), cst.IndentedBlock)), None)
    mine = [s for s in guards if holding is not None and new.parent.get(s) is new.parent.get(holding)
            and new.order[id(s)] < new.order[id(holding)]]
    if not mine:
        return "the guard has no statement of its own before the call"
    guard = mine[-1]
    if not new.dominates(guard, call):
        return "the guard would not run before the call on every path"
    conditional = _conditionally_evaluated(new, call, holding)
    if conditional:
        return (f"the kernel call runs only on some evaluations of its statement ({conditional}): a guard before "
                f"the statement would read `{q.split('.')[0]}` when the call does not run")
    if new.scope_of.get(guard) is not new.scope_of.get(call):
        kind = _scope_kind(new.scope_of.get(call))
        return (f"the kernel call runs inside a {kind} within its statement, not when the statement runs: "
                f"a guard before the statement would not check the `{q.split('.')[0]}` it receives")
    names = {q.split(".")[0]} | ({g.metadata.split(".")[0]} if g.metadata else set())
    for name in names:
        for a in new.binding(call, name).assignments:
            node = getattr(a, "node", None)
            if node is None or id(node) not in new.order or not new.inside(node, holding):
                continue
            if isinstance(holding, cst.While) or new.binds_after_value(a) < new.order[id(call)]:
                return (f"`{name}` is rebound in the statement that holds the call, before the call: "
                        f"a guard before that statement would check another `{name}`")
    return None


def _conditionally_evaluated(new: Tree, call: cst.CSTNode, holding: cst.CSTNode) -> Optional[str]:
    """Is `call` inside a part of its statement that may not run (`x if c else y`, `a and b`)?"""
    child = call
    for anc in new.ancestors(call):
        if anc is holding:
            return None
        if isinstance(anc, cst.IfExp) and child is not anc.test:
            return "a branch of `... if ... else ...`"
        if isinstance(anc, cst.BooleanOperation) and child is anc.right:
            return f"the right side of `{_code(anc.operator).strip()}`"
        child = anc
    return None


def _scope_kind(scope) -> str:
    node = getattr(scope, "node", None)
    if isinstance(node, cst.Lambda):
        return "lambda"
    if isinstance(scope, ComprehensionScope):
        return "comprehension"
    if isinstance(scope, ClassScope):
        return "class body"
    return "nested function"


# -- annotations (class 7) -----------------------------------------------------------
def _optional_annotation(module: cst.Module, facts: ModuleFacts) -> Tuple[Optional[str], bool]:
    """The annotation to write (None: none) and whether `from typing import Optional` must be added.

    An annotation is evaluated when the def runs unless the module has
    `from __future__ import annotations`: every name it reads must then be imported
    unconditionally before (not only under TYPE_CHECKING), or it is written as a string.
    """
    lazy = facts.imports.get("annotations") == "__future__.annotations"
    known = dict(_top_level_imports(module))
    if lazy:  # names imported anywhere at module level (also under TYPE_CHECKING) are fine
        known.update({k: v for k, v in facts.imports.items() if k in facts.module_names})
    torch = next((k for k, v in sorted(known.items()) if v == "torch"), None)
    tensor = f"{torch}.Tensor" if torch else '"torch.Tensor"'
    optional = next((k for k, v in sorted(known.items()) if v == "typing.Optional"), None)
    if optional:
        return f"{optional}[{tensor}]", False
    typing = next((k for k, v in sorted(known.items()) if v == "typing"), None)
    if typing:
        return f"{typing}.Optional[{tensor}]", False
    if "Optional" not in facts.module_names:
        return f"Optional[{tensor}]", True
    return f'"Optional[{tensor.strip(chr(34))}]"', False  # `Optional` means something else here, or is conditional
