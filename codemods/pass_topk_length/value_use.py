"""docs/soundness.md `value-use`: the kernel used other than by calling it (stored, passed, wrapped by
functools.partial, looked up with getattr) is found here as a site; values.py then drops those whose every
call is checked."""
from __future__ import annotations

from typing import List, Optional, Set, Tuple

import libcst as cst
from libcst.helpers import get_full_name_for_node

from topk_migrate.cst.resolve import ModuleFacts, dotted
from topk_migrate.cst.scopecheck import Tree
from topk_migrate.model import Site, Status

from .identity import kernel_alias
from .quick import ENTRY_POINTS, INFO, OP_NAME, expand, is_kernel, names_kernel
from .syntax import _brief, _code, name_reads
from .values import TESTS

# an attribute of the kernel that describes it, read without running it (`K.__name__` in a log line)
_DESCRIBING = {"__name__", "__qualname__", "__module__", "__doc__"}


def _value_uses(tree: Tree, facts: ModuleFacts, path: str,
                through_alias: Set[int] = frozenset()) -> List[Tuple[Site, cst.CSTNode]]:
    """The kernel used other than by calling it: `partial(kernel, ...)`, `getattr(mod,
    "flash_mla_sparse_fwd")`, stored in an attribute or passed on, each with its node (where the value is taken:
    values.value_sites adds the calls where it lands). Calls through it cannot be checked, so each is reported
    as manual, never skipped."""
    sites: List[Tuple[Site, cst.CSTNode]] = []
    seen: Set[int] = set()

    def add(node: cst.CSTNode, callee: str, how: str, reason: Optional[str] = None) -> None:
        pos = tree.position.get(node)
        if pos is None or id(node) in seen:
            return
        seen.add(id(node))
        sites.append((Site(path, pos.start.line, pos.start.column + 1, callee, Status.MANUAL,
                           reason or f"the kernel is {how}: calls through it cannot be checked or rewritten; "
                                     "pass topk_length where it is called, or call the kernel directly"), node))

    for _, _name, node, _ in (tree.accesses() if _maybe_value_use(tree, facts) else ()):
        chain = node  # (up to the kernel's own name where a dunder is read off it: `K.__call__`, `K.__wrapped__`,
        while isinstance(tree.parent.get(chain), cst.Attribute) and tree.parent[chain].value is chain and not (
                _dunder(tree.parent[chain]) and is_kernel(expand(facts.imports, dotted(chain) or ""))):  # round AR)
            chain = tree.parent[chain]
        full = dotted(chain) if isinstance(chain, (cst.Name, cst.Attribute)) else None
        if not full:
            continue
        callee = expand(facts.imports, full)
        if not is_kernel(callee):
            continue
        parent = tree.parent.get(chain)
        if isinstance(parent, cst.Attribute) and parent.value is chain:  # (a dunder of it: the climb stopped there)
            add(parent, callee, f"read as `{_brief(parent, 60)}`")
            continue
        if isinstance(parent, cst.Call) and parent.func is chain:
            continue
        if isinstance(parent, TESTS) or (isinstance(parent, cst.IfExp) and parent.test is chain):
            continue
        if isinstance(parent, (cst.AssignTarget, cst.AnnAssign, cst.AugAssign)) and parent.target is chain:
            continue  # a rebinding: the calls through that name are refused by callee_identity
        add(chain, callee, _how(tree, chain), _alias_reason(tree, chain, facts, through_alias))
    for call in tree.find(cst.Call, lambda c: isinstance(c.func, cst.Attribute)):
        attr = call.func.attr.value
        if dotted(call.func) is None and (attr in ENTRY_POINTS or attr == OP_NAME):
            add(call, attr, f"reached through `{_brief(call.func.value, 40)}`")
    for read in tree.find(cst.Attribute, lambda a: a.attr.value in ENTRY_POINTS or a.attr.value == OP_NAME):
        up = tree.parent.get(read)
        if dotted(read) is None and not (isinstance(up, cst.Call) and up.func is read):  # (`import_module(m).fwd`,
            add(read, read.attr.value, f"read off `{_brief(read.value, 40)}`")  # round AN)
    for text, path_named in _named_by_string(tree):  # (`pkgutil.resolve_name("sgl_kernel.flash_mla:...")`, `vars(m)
        add(text, path_named, "looked up by a string naming it")  # .get("...")`: round AN)
    for k in facts.calls:
        if k.callee != "getattr" or len(k.node.args) < 2 or not isinstance(k.node.args[1].value, cst.SimpleString):
            continue
        attr = k.node.args[1].value.evaluated_value
        base = dotted(k.node.args[0].value)
        if isinstance(attr, str) and base and is_kernel(f"{base}.{attr}"):
            add(k.node, expand(facts.imports, base) + f".{attr}", "looked up by name with getattr")
    for node, module in _computed_reads(tree, facts):  # (`vars(fm)[self.kernel_name]`: round AJ)
        add(node, module, f"read out of `{module}` by a name computed at run time (a kernel of that package's module)")
    return sites


def _named_by_string(tree: Tree):
    """(string, the kernel it names) for each string literal that is the kernel's name or a dotted (or
    `module:attr`) path ending in it, where a lookup by name may fetch it (getattr's own are reported as such): not
    a docstring, a message, `hasattr`'s probe, a store's name (identity reads those), an `__all__` entry or a
    comparison's operand."""
    for node in tree.find(cst.SimpleString):
        text = node.evaluated_value
        if not isinstance(text, str) or not names_kernel(text):
            continue
        up = tree.parent.get(node)
        while isinstance(up, (cst.Element, cst.List, cst.Tuple)):
            up = tree.parent.get(up)
        call = tree.parent.get(up) if isinstance(up, cst.Arg) else None
        callee = dotted(call.func) if isinstance(call, cst.Call) else None
        if isinstance(up, (cst.Expr, cst.Comparison, cst.ComparisonTarget)) or callee in ("hasattr", "print", "setattr", "delattr", "object.__setattr__") \
                or callee == "getattr" and dotted(call.args[0].value) or isinstance(up, cst.Assign) \
                and any(dotted(t.target) == "__all__" for t in up.targets):
            continue
        yield node, text.replace(":", ".")


def _computed_reads(tree: Tree, facts: ModuleFacts):
    """(node, module) for each read of a kernel package's module (INFO.providers: `sgl_kernel.flash_mla`) the file
    imports, by a name not written as a literal: `getattr(m, name)`, `vars(m)[name]`, `vars(m).get(name)`,
    `m.__dict__[name]`, `m.__dict__.get(name)`, `m.__getattribute__(name)`."""
    imported = {v for v in facts.imports.values() if v.split(".")[0] in INFO.providers}
    if not imported:
        return

    def module(e: cst.BaseExpression) -> Optional[str]:
        full = expand(facts.imports, dotted(e) or "")
        return full if full in imported else None

    def namespace_of(e: cst.BaseExpression) -> Optional[str]:  # `vars(m)`, `m.__dict__`
        if isinstance(e, cst.Call) and dotted(e.func) == "vars" and len(e.args) == 1:
            return module(e.args[0].value)
        return module(e.value) if isinstance(e, cst.Attribute) and e.attr.value == "__dict__" else None

    for node in tree.find((cst.Call, cst.Subscript)):
        if isinstance(node, cst.Subscript):
            key, found = node.slice[0].slice, namespace_of(node.value)
            literal = isinstance(key, cst.Index) and isinstance(key.value, cst.SimpleString)
        elif dotted(node.func) == "getattr" and len(node.args) >= 2:
            found, literal = module(node.args[0].value), isinstance(node.args[1].value, cst.SimpleString)
        elif isinstance(node.func, cst.Attribute) and node.func.attr.value in ("get", "__getattribute__") and node.args:
            found = namespace_of(node.func.value) if node.func.attr.value == "get" else module(node.func.value)
            literal = isinstance(node.args[0].value, cst.SimpleString)
        else:
            continue
        if found and not literal:
            yield node, found


def _maybe_value_use(tree: Tree, facts: ModuleFacts) -> bool:
    """Whether a kernel name, or a name imported as one, occurs anywhere but in the callee of a call,
    in an import, or where it is bound (a def's, class's or parameter's name, an assignment's target:
    places _value_uses passes over too). If not, no name read can be a value use, and the scope
    analysis that finds them (the costliest step on a module whose calls all pass topk_length) is not
    needed."""
    names = set(ENTRY_POINTS) | {OP_NAME} | {local for local, q in facts.imports.items() if is_kernel(q)}
    for n in tree.find(cst.Name, lambda n: n.value in names):
        top, up = n, tree.parent.get(n)
        while isinstance(up, cst.Attribute) and up.attr is top:  # (`mod.flash_mla_sparse_fwd`)
            top, up = up, tree.parent.get(up)
        if isinstance(up, cst.Attribute) and up.value is top and _dunder(up):
            return True  # (a dunder of the kernel read: `K.__call__`, `K.__wrapped__`: round AR)
        if isinstance(up, cst.Call) and up.func is top:
            continue
        if isinstance(up, (cst.AssignTarget, cst.AnnAssign, cst.AugAssign)) and up.target is top \
                or isinstance(up, (cst.FunctionDef, cst.ClassDef, cst.Param)) and up.name is n:
            continue
        while up is not None and not isinstance(up, (cst.Import, cst.ImportFrom)):
            up = tree.parent.get(up)
        if up is None:
            return True
    return False


def _dunder(read: cst.Attribute) -> bool:
    """A dunder read off a function that may run it (`__call__`, `__wrapped__`), not one describing it (`__name__`);
    a plain attribute (`zeros.to(...)`) says the name holds no function."""
    name = read.attr.value
    return name.startswith("__") and name.endswith("__") and name not in _DESCRIBING


def _only_called(tree: Tree, name: str, calls: Set[int]) -> bool:
    """Is every read of `name` in the module the callee of one of `calls`?"""
    return all(isinstance(up, cst.Call) and up.func is n and id(up) in calls for n, up in name_reads(tree, name))


def _alias_reason(tree: Tree, node: cst.CSTNode, facts: ModuleFacts, through_alias: Set[int]) -> Optional[str]:
    """The reason for the kernel at `node` bound by an alias whose every read here is a call checked as the
    kernel's (kernel_calls), else None."""
    parent = tree.parent.get(node)
    up = tree.parent.get(tree.parent.get(parent)) if isinstance(parent, cst.Arg) else parent
    if not (kernel_alias(up, facts.imports) and _only_called(tree, up.targets[0].target.value, through_alias)):
        return None
    return (f"the kernel is bound to `{up.targets[0].target.value}`, a name other code may call it through: calls "
            "through it elsewhere cannot be checked or rewritten (this module's are checked as the kernel's); call "
            "the kernel directly there")


def _how(tree: Tree, node: cst.CSTNode) -> str:
    parent = tree.parent.get(node)
    if isinstance(parent, cst.Arg):
        call = tree.parent.get(parent)
        fname = get_full_name_for_node(call.func) if isinstance(call, cst.Call) else None
        if fname and fname.rsplit(".", 1)[-1] == "partial":
            return "wrapped by functools.partial"
        shown = _code(call.func).strip() if fname else ""  # as written: `super().__init__`, not super.__init__
        return f"passed to `{shown if len(shown) <= 40 else fname}` as a value" if fname else "passed as a value"
    if isinstance(parent, (cst.Assign, cst.AnnAssign)):
        targets = [t.target for t in parent.targets] if isinstance(parent, cst.Assign) else [parent.target]
        if any(isinstance(t, (cst.Attribute, cst.Subscript)) for t in targets):
            return f"stored in `{_code(targets[0]).strip()}`"
        return f"bound to `{_code(targets[0]).strip()}`"
    return "used as a value"
