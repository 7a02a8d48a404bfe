"""Where a value of the kernel goes (class 8): which value uses are sites, and the calls made through a holder.

A value use is a site only where the kernel can reach a call the tool has not checked. Its flow is followed
through the module: stored in a name or an attribute (a holder), returned from a getter, tested for None.
Every call it reaches must be one the rule reports: a call by a kernel name (`flash_mla_sparse_fwd(...)`,
`self.flash_mla_sparse_fwd(...)`, collected by name in every module), or a call through a holder of this
module, which holder_calls() reports as a site of its own. Anything else (passed to a function, put in a
container, returned from a public getter, stored under a public name another module may read) is an
escape, and the value use stays a site.

A holder or getter is followed only where no other module can reach it unseen: its name is a kernel entry
point (calls by that name are collected wherever they are), a local of a function, or starts with `_`
(PEP 8's internal-use mark: a module's `_name` is read by that module). A pytest marker that carries the
kernel's name (`@pytest.mark.flash_mla_sparse_fwd`) is not the kernel at all.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Set, Tuple

import libcst as cst

from topk_migrate.cst.resolve import ModuleFacts, dotted
from topk_migrate.model import Site, Status

from .landing import landing_calls
from .quick import ENTRY_POINTS, PARAM, expand, is_kernel

# where a kernel value is only tested (`if K is None`, `assert K`), never called
TESTS = (cst.Comparison, cst.ComparisonTarget, cst.If, cst.While, cst.Assert, cst.UnaryOperation, cst.Del)
_MARKERS = ("pytest.mark.", "_pytest.mark.")
_DEPTH = 8


def is_marker(callee: str) -> bool:
    """`pytest.mark.flash_mla_sparse_fwd`: a test marker named after the kernel, not the kernel."""
    return callee.startswith(_MARKERS)


def _resolved(facts: ModuleFacts, node: cst.BaseExpression) -> Optional[str]:
    full = dotted(node)
    return expand(facts.imports, full) if full else None


def _private(name: str) -> bool:
    return name in ENTRY_POINTS or name.startswith("_")


class _Flows:
    """The flows of every kernel value in one module, worked out once."""

    def __init__(self, tree, facts: ModuleFacts, sealed: Set[str] = frozenset()) -> None:
        self.tree, self.facts, self.sealed = tree, facts, sealed  # sealed: attributes only this module reads
        self.escaped: Dict[Tuple[str, str], bool] = {}  # holder -> does its value escape
        self.calls: Dict[int, Tuple[cst.Call, str, cst.CSTNode]] = {}  # calls through a holder
        self.contained: Set[int] = set()  # value uses whose every call is reported

    # -- reads of a holder ------------------------------------------------------------
    def _name_reads(self, name: str) -> List[cst.CSTNode]:
        parent = self.tree.parent
        out = []
        for n in self.tree.find(cst.Name, lambda n: n.value == name):
            p = parent.get(n)
            if isinstance(p, cst.Attribute) and p.attr is n:
                continue
            if isinstance(p, (cst.AssignTarget, cst.AnnAssign)) and p.target is n:
                continue
            if isinstance(p, (cst.FunctionDef, cst.ClassDef, cst.Param, cst.NameItem, cst.AsName, cst.ImportAlias)):
                continue
            if isinstance(p, cst.Arg) and p.keyword is n:
                continue
            out.append(n)
        return out

    def _attr_reads(self, attr: str) -> List[cst.CSTNode]:
        parent = self.tree.parent
        return [a for a in self.tree.find(cst.Attribute, lambda a: a.attr.value == attr)
                if not (isinstance(parent.get(a), (cst.AssignTarget, cst.AnnAssign)) and parent[a].target is a)]

    def _local(self, assign: cst.CSTNode, name: str) -> bool:
        """Is `name`, assigned at `assign`, a local of the function holding it (no global/nonlocal)?"""
        fn = next((a for a in self.tree.ancestors(assign) if isinstance(a, cst.FunctionDef)), None)
        if fn is None:
            return False
        for g in self.tree.find((cst.Global, cst.Nonlocal), within=fn):
            if any(item.name.value == name for item in g.names):
                return False
        return True

    # -- following a value ------------------------------------------------------------
    def holder_escapes(self, key: Tuple[str, str], callee: str, origin: cst.CSTNode, depth: int) -> bool:
        if key in self.escaped:
            return self.escaped[key]
        self.escaped[key] = False  # a cycle through this holder adds nothing
        kind, name = key
        reads = self._name_reads(name) if kind == "name" else self._attr_reads(name)
        result = any(self.escapes(r, callee, origin, depth + 1) for r in reads)
        self.escaped[key] = result
        return result

    def escapes(self, node: cst.CSTNode, callee: str, origin: cst.CSTNode, depth: int = 0) -> bool:
        """Can the kernel value at `node` reach a call the rule does not report?"""
        if depth > _DEPTH:
            return True
        tree = self.tree
        p = tree.parent.get(node)
        if isinstance(p, cst.Call) and p.func is node:
            name = _resolved(self.facts, node)
            if not (name and is_kernel(name)):  # not collected by name: reported by holder_calls
                self.calls.setdefault(id(p), (p, callee, origin))
            return False
        if isinstance(p, TESTS) or (isinstance(p, cst.IfExp) and p.test is node):
            return False
        wrapper = tree.parent.get(p)
        if isinstance(p, cst.Arg) and isinstance(wrapper, cst.Call) and wrapper.args[0] is p and not p.keyword \
                and not p.star and _resolved(self.facts, wrapper.func) == "functools.partial":
            return self.escapes(wrapper, callee, origin, depth + 1)  # a call of the partial calls the kernel
        if isinstance(p, cst.Return) and p.value is node:
            return self._getter_escapes(p, callee, origin, depth)
        if isinstance(p, (cst.Assign, cst.AnnAssign)) and p.value is node:
            targets = [t.target for t in p.targets] if isinstance(p, cst.Assign) else [p.target]
            if len(targets) != 1:
                return True
            t = targets[0]
            if isinstance(t, cst.Name):
                if not (_private(t.value) or self._local(p, t.value)):
                    return True
                return self.holder_escapes(("name", t.value), callee, origin, depth)
            if isinstance(t, cst.Attribute) and (_private(t.attr.value) or t.attr.value in self.sealed):
                return self.holder_escapes(("attr", t.attr.value), callee, origin, depth)
        return True

    def _getter_escapes(self, ret: cst.Return, callee: str, origin: cst.CSTNode, depth: int) -> bool:
        fn = next((a for a in self.tree.ancestors(ret) if isinstance(a, (cst.FunctionDef, cst.Lambda))), None)
        if not isinstance(fn, cst.FunctionDef) or not _private(fn.name.value):
            return True
        decorators = {dotted(d.decorator) for d in fn.decorators}
        if decorators & {"property", "cached_property", "functools.cached_property"}:
            return self.holder_escapes(("attr", fn.name.value), callee, origin, depth)
        if decorators - {"staticmethod", "classmethod", None} or None in decorators:
            return True
        name = fn.name.value
        reads = self._attr_reads(name) if self.tree.is_method(fn) else self._name_reads(name)
        for r in reads:
            call = self.tree.parent.get(r)
            if not (isinstance(call, cst.Call) and call.func is r):
                return True  # the getter itself passed on: what calls it is not seen
            if self.escapes(call, callee, origin, depth + 1):
                return True
        return False


def _flows(tree, facts: ModuleFacts, sealed: Set[str] = frozenset()) -> _Flows:
    got = getattr(tree, "_kernel_flows", None)
    if got is None or got.facts is not facts or got.sealed != sealed:
        got = _Flows(tree, facts, sealed)
        tree._kernel_flows = got
    return got


def contained(tree, facts: ModuleFacts, node: cst.CSTNode, callee: str, sealed: Set[str] = frozenset()) -> bool:
    """True where the kernel value at `node` is not a site: a pytest marker, or a value whose every call
    the rule reports (_value_uses asks this of each value use it finds)."""
    if is_marker(callee):
        return True
    flows = _flows(tree, facts, sealed)
    if flows.escapes(node, callee, node):
        return False
    flows.contained.add(id(node))
    return True


def _passes(call: cst.Call) -> Optional[Tuple[Status, str]]:
    for a in call.args:
        if a.keyword and a.keyword.value == PARAM:
            none = isinstance(a.value, cst.Name) and a.value.value == "None"
            return (Status.OPT_OUT, "passes topk_length=None explicitly") if none else (Status.COMPLIANT, "passes topk_length")
    positional = [a for a in call.args if not a.keyword and not a.star]
    pos = ENTRY_POINTS["flash_mla_sparse_fwd"]
    if len(positional) > pos and not any(a.star for a in call.args[: call.args.index(positional[pos])]):
        v = positional[pos].value
        none = isinstance(v, cst.Name) and v.value == "None"
        return (Status.OPT_OUT, "passes topk_length=None positionally") if none else (Status.COMPLIANT, "passes topk_length positionally")
    return None


def holder_calls(tree, facts: ModuleFacts, path: str, classified: Set[int] = frozenset()) -> List[Site]:
    """The calls a contained kernel value reaches through a holder (`self._fwd(...)`, `_get()(...)`): each
    a site, compliant where it passes topk_length, else manual (the rule rewrites only direct calls).
    Asked after every value use went through contained()."""
    flows = getattr(tree, "_kernel_flows", None)
    if flows is None or flows.facts is not facts:
        return []
    sites = []
    seen: Set[int] = set()
    for call, callee, origin in flows.calls.values():
        pos = tree.position.get(call)
        if pos is None or id(call) in seen or id(origin) not in flows.contained or id(call) in classified:
            continue
        seen.add(id(call))
        got = _passes(call)
        if got is None:
            code = tree.module.code_for_node(call.func).strip()
            if len(code) > 40:
                code = code[:37] + "..."
            got = (Status.MANUAL, f"calls the kernel through `{code}` (the kernel taken as a value at line "
                                  f"{tree.line(origin)}); calls through a stored kernel are not rewritten: "
                                  "pass topk_length here by hand, or call the kernel directly")
        sites.append(Site(path, pos.start.line, pos.start.column + 1, callee, got[0], got[1]))
    return sites


def value_sites(tree, facts: ModuleFacts, found: List[Tuple[Site, cst.CSTNode]], path: str,
                classified: Set[int] = frozenset(), sealed: Set[str] = frozenset()) -> List[Site]:
    """The value uses _value_uses found that are sites (each whose kernel value can reach a call the rule
    does not report) with each call where such a value lands (landing.landing_calls: round AR), then the calls
    through a holder that a contained value reaches (but those the rule classified itself: `classified`, ids of
    calls through an alias). `sealed`: attributes holding the kernel that no other file reads
    (identity.held_callee), followed as private ones are."""
    kept: List[Site] = []
    landed: Dict[int, Tuple[cst.Call, Site]] = {}
    for s, node in found:
        if is_marker(s.callee) or (_resolved(facts, node) == s.callee and contained(tree, facts, node, s.callee, sealed)):
            continue
        kept.append(s)
        for call in landing_calls(tree, node, set(facts.imports)):
            if id(call) not in classified and call is not node and tree.position.get(call) is not None:
                landed.setdefault(id(call), (call, s))
    holders = holder_calls(tree, facts, path, classified)
    taken = {(x.line, x.column) for x in kept + holders}
    return kept + holders + [site for site in (_landed_site(tree, path, call, s) for call, s in landed.values())
                             if (site.line, site.column) not in taken]


def _landed_site(tree, path: str, call: cst.Call, origin: Site) -> Site:
    pos = tree.position.get(call)
    code = tree.module.code_for_node(call.func).strip()
    code = code[:37] + "..." if len(code) > 40 else code
    return Site(path, pos.start.line, pos.start.column + 1, origin.callee, Status.MANUAL,
                f"may call the kernel through `{code}` (the kernel taken as a value at line {origin.line}: "
                f"{origin.reason.split(':')[0]}); calls through it are not rewritten: pass topk_length here by "
                "hand, or call the kernel directly")
