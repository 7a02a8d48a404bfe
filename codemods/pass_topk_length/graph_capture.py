"""docs/soundness.md `graph-replay`, the capture's half: a captured graph reads the field's tensor on the object
the holder had at capture, and replay updates the objects kept in its tables, so the two must be one object.
Each object filed into a table replay reads is filed by a capture (the eager path filing one swaps a graph's
object for one no graph read), and is the object the capture leaves in the holder (a deep copy or a second
record leaves the graph reading another). (A metadata class that hands back an object it made before, a
pool, is refused for the whole project: reach.pooled_holders.)"""
from __future__ import annotations

from typing import Dict, List, Optional, Set, Tuple

import libcst as cst
from libcst.helpers import get_full_name_for_node

from . import reach
from .graph_replay import _is_attr_of_self, _self_root_attr
from .syntax import _brief, _code, _is_name

# methods that file into a container by place, not by key
_BY_PLACE = {"append", "insert", "extend", "appendleft"}
# calls that make a new, empty container
_FRESH_CONTAINERS = {"dict", "list", "defaultdict", "OrderedDict"}


def _graph_named(name: str) -> bool:
    return reach.graph_builder(name) or reach.graph_update(name)


def _string_key(target: cst.Subscript) -> bool:
    """`self.T["page_table"] = buf`: a named buffer of the graph state, not a batch's object."""
    return any(isinstance(e.slice, cst.Index) and isinstance(e.slice.value, cst.SimpleString) for e in target.slice)


class CaptureFiling:
    """docs/soundness.md `graph-replay` (the capture's half) in this module (a mixin of analysis._Analysis)."""

    def capture_files(self, field_name: str) -> Optional[str]:
        """The first object filed into a table replay reads that breaks the capture's half, or None."""
        def build() -> Optional[str]:
            tables = self._graph_tables(field_name)
            why = self._hook_rebound() or next(filter(None, map(self._shared_table, sorted(tables))), None)
            if why:
                return why
            for fdef in self.find(cst.FunctionDef) if tables else ():
                for at, target, value in self._writes_in(fdef):
                    if isinstance(target, cst.Subscript) and not _string_key(target) and \
                            _self_root_attr(target) in tables:
                        why = self._filed_off_capture(fdef, at) or self._filed_not_held(fdef, at, value, tables)
                        if why:
                            return why
            return None
        return self.index(f"capture-files:{field_name}", build)

    def planned_in_graph(self, owner: cst.FunctionDef, field_name: str) -> Optional[str]:
        """In a module that captures CUDA graphs, the function reading the metadata for the kernel gives the holder
        no new object itself (a lazy plan on a step's first layer): run while a graph is captured, it would leave
        the graph reading that object, which no replay updates (round V's u_graph_capture_run_replans_lazily)."""
        tables = self._graph_tables(field_name)
        if not tables:
            return None
        writers = self._holder_writers(tables)
        for call in self.find(cst.Call, lambda c: isinstance(c.func, cst.Attribute) and writers.get(c.func.attr.value), owner):
            return (f"{owner.name.value} calls `{_code(call.func).strip()}` (line {self.tree.line(call)}), which gives the "
                    "holder a new metadata object: run while a CUDA graph is captured, the graph reads that object, "
                    "which no replay updates; plan outside the captured forward, or pass topk_length by hand")
        return None

    def _shared_table(self, table: str) -> Optional[str]:
        """A table replay reads is a container the backend makes for itself (`self.T = {}` in a method), filed by
        key: one bound in the class body is every instance's, one made elsewhere is filled by other code, one
        filed by place is read back by another key (round V)."""
        if not self.find(cst.Subscript, lambda x: _is_attr_of_self(x.value) and x.value.attr.value == table):
            return self._class_level(table)  # (one object kept, not a table: the bundled example's `_graph_metadata`)
        return self._class_level(table) or self._filed_by_place(table) or self._made_elsewhere(table)

    def _class_level(self, table: str) -> Optional[str]:
        for line in (x for c in self.find(cst.ClassDef) for x in c.body.body if isinstance(x, cst.SimpleStatementLine)):
            for n in line.body:
                if isinstance(n, (cst.Assign, cst.AnnAssign)) and any(_is_name(t, table) for t in (
                        [x.target for x in n.targets] if isinstance(n, cst.Assign) else [n.target])):
                    return (f"`{table}` is bound in a class body (line {self.tree.line(n)}): every instance (a draft "
                            "backend's too) shares the CUDA-graph table replay reads; make it per instance "
                            f"(`self.{table} = {{}}`), or pass topk_length by hand")
        stored = any(_is_attr_of_self(t.target) for t in self.targets_named(table) if isinstance(t.target, cst.Attribute))
        base = None if stored else self.project().base_binds(self.project().checked_file(self.source), table)
        if base is not None:  # (a mixin of another file's class attribute, no instance's own made here: round AO)
            return (f"`{table}` is bound in the class body of {base}: every instance (a draft backend's too) shares "
                    f"the CUDA-graph table replay reads; make it per instance (`self.{table} = {{}}`), or pass "
                    "topk_length by hand")
        return None

    def _filed_by_place(self, table: str) -> Optional[str]:
        for call in self.find(cst.Call, lambda c: isinstance(c.func, cst.Attribute) and c.func.attr.value in _BY_PLACE
                              and _is_attr_of_self(c.func.value) and c.func.value.attr.value == table):
            return (f"line {self.tree.line(call)} files into `self.{table}` by place (`{call.func.attr.value}`): the key "
                    "replay reads a record back by is not the one it was filed under (a list in capture order read by "
                    f"a sorted index); key it by batch size (`self.{table}[bs] = md`), or pass topk_length by hand")
        return None

    def _made_elsewhere(self, table: str) -> Optional[str]:
        for t in (t for t in self.targets_named(table) if isinstance(t.target, cst.Attribute) and _is_attr_of_self(t.target)):
            value = getattr(t if isinstance(t, cst.AnnAssign) else self.tree.parent.get(t), "value", None)
            if not (isinstance(value, (cst.Dict, cst.List)) or _is_name(value, "None") or isinstance(value, cst.Call) and (
                    get_full_name_for_node(value.func) or "").rsplit(".", 1)[-1] in _FRESH_CONTAINERS):
                return (f"`self.{table}` is bound to `{_brief(value, 40) if value is not None else '?'}` "
                        f"(line {self.tree.line(t)}), a container made elsewhere: other code (a record's constructor "
                        "filing itself) may fill the CUDA-graph table replay reads; make it here "
                        f"(`self.{table} = {{}}`), or pass topk_length by hand")
        return None

    def _hook_rebound(self) -> Optional[str]:
        """A method that runs between replays, given another value on an instance or the class (`self.<hook> =
        self._draft_replay`): which one runs is not the one read (round V)."""
        names = {f.name.value for f in self.graph_update_defs()}
        for name in sorted(names):
            for t in self.targets_named(name):
                if isinstance(t.target, cst.Attribute):
                    return (f"line {self.tree.line(t)} gives `{_code(t.target).strip()}` another value: the method "
                            "run between CUDA-graph replays may not be the one read; pass topk_length by hand")
        return None

    def _graph_tables(self, field_name: str) -> Set[str]:
        """The attributes of self replay reads captured metadata from: the holder is given back an item of them,
        or a replay writes the field in place on one."""
        return self.index(f"graph-tables:{field_name}", lambda: set(self._holder_sources(self.held_attributes()))
                          | self.updated_tables(field_name))

    def _filed_off_capture(self, fdef: cst.FunctionDef, at: cst.CSTNode) -> Optional[str]:
        """A table is filled by a capture or its builder, reached only through graph methods."""
        bad = next((d for d in self._reaching(fdef) if not _graph_named(d)), None)
        if reach.graph_builder(fdef.name.value) and bad is None:
            return None
        where = f"`{fdef.name.value}`" + (f", reached from `{bad}`," if bad and bad != fdef.name.value else "")
        return (f"{where} files a metadata object into a table CUDA-graph replay reads (line {self.tree.line(at)}) "
                "off the capture path: the eager path swaps a captured graph's object for one no graph read, and "
                "replay updates that one; file objects at capture only, or pass topk_length by hand")

    def _callers(self, fdef: cst.FunctionDef) -> List[Tuple[Optional[cst.FunctionDef], cst.Attribute]]:
        """(the def, or None outside one; the read) for each read of a method of fdef's name, where fdef is not a
        hook the engine's graph runner calls (a public method named for the graph: its callers are the runner)."""
        name = fdef.name.value
        if _graph_named(name) and not name.startswith("_"):
            return []
        return [(next((a for a in self.tree.ancestors(r) if isinstance(a, cst.FunctionDef)), None), r)
                for r in self.find(cst.Attribute, lambda a: a.attr.value == name)]

    def _reaching(self, fdef: cst.FunctionDef) -> List[str]:
        """fdef's name and each def's on the way to it from a graph hook ('<module>' for a read outside a def)."""
        out, todo = [], [fdef]
        while todo:
            d = todo.pop()
            if d.name.value in out:
                continue
            out.append(d.name.value)
            for caller, _ in self._callers(d):
                if caller is None:
                    out.append("<module>")
                else:
                    todo.append(caller)
        return out

    def _filed_not_held(self, fdef: cst.FunctionDef, at: cst.CSTNode, value, tables: Set[str]) -> Optional[str]:
        """The object filed must be what the capture leaves in the holder: the holder's writes after the filing,
        here and in the callers after their call, give it that object (the same local) or one read back from a
        table, and at least one does."""
        kept = self._holder_after(fdef, at, value if isinstance(value, cst.Name) else None, tables, frozenset())
        if kept is True:
            return None
        what = f"`{_code(value).strip()}`" if value is not None else "an object"
        return (f"`{fdef.name.value}` files {what} into a table CUDA-graph replay reads (line {self.tree.line(at)}), "
                + (f"but the capture leaves another object in the holder ({kept})" if kept else
                   "but the capture never gives the holder that object") +
                ": the captured graph reads one object's lengths and replay updates another's; give the holder the "
                "object filed (`self.T[bs] = md; self.forward_metadata = md`), or pass topk_length by hand")

    def _holder_after(self, fdef: cst.FunctionDef, after: cst.CSTNode, filed: Optional[cst.Name], tables: Set[str],
                      path: frozenset):
        """True where the holder ends the capture holding the filed object (fdef gives it, or every caller does
        after its call); a string naming a write that gives it another; False where nothing gives it one."""
        if filed is None:  # (a caller's answer is the same on every path that reaches it: once, not once per path)
            key = f"holder-after:{id(fdef)}:{id(after)}:{sorted(tables)}"
            return self.index(key, lambda: self._holder_after_here(fdef, after, None, tables, path))
        return self._holder_after_here(fdef, after, filed, tables, path)

    def _holder_after_here(self, fdef: cst.FunctionDef, after: cst.CSTNode, filed: Optional[cst.Name],
                           tables: Set[str], path: frozenset):
        kept = False
        for node, ok in self._holder_events(fdef, after, filed, tables):
            if not ok:
                return f"line {self.tree.line(node)}"
            kept = True
        path = path | {id(fdef)}
        ups = [self._holder_after(caller, read, None, tables, path) for caller, read in self._callers(fdef)
               if caller is not None and id(caller) not in path]
        bad = next((u for u in ups if isinstance(u, str)), None)
        return bad or kept or bool(ups) and all(u is True for u in ups)

    def _filed_value(self, value, filed: Optional[cst.Name], tables: Set[str]) -> bool:
        """The filed object itself (the same local), or one read back from a table (a local bound only to such
        reads too)."""
        if filed is not None and isinstance(value, cst.Name) and value.value == filed.value:
            return True
        if isinstance(value, cst.Subscript):
            roots = set() if _is_attr_of_self(value) else {_self_root_attr(value)}
        else:
            roots = self._tables_of(value) if isinstance(value, cst.Name) else set()
        return bool(roots) and roots <= tables and self._stored(value, set())

    def _holder_events(self, fdef: cst.FunctionDef, after: cst.CSTNode, filed: Optional[cst.Name],
                       tables: Set[str]) -> List[Tuple[cst.CSTNode, bool]]:
        """What may give the holder an object in fdef after `after`, in source order, each with whether it is the
        filed object or one read back from a table: a write of the holder, or a call of a method of the module
        that writes it (read back where each of its writes is)."""
        held, order, start = self.held_attributes(), self.tree.order, self.tree.order[id(after)]
        events = [(n, self._filed_value(v, filed, tables)) for n, t, v in self._writes_in(fdef)
                  if isinstance(t, cst.Attribute) and t.attr.value in held and order[id(n)] > start]
        writers = self._holder_writers(tables)
        events += [(c, not writers[c.func.attr.value]) for c in self.find(
            cst.Call, lambda c: isinstance(c.func, cst.Attribute) and c.func.attr.value in writers, fdef)
            if order[id(c)] > start]
        return sorted(events, key=lambda e: order[id(e[0])])

    def _holder_writers(self, tables: Set[str]) -> Dict[str, bool]:
        """The names of the module's methods that give the holder an object, themselves or through a method of
        the module they call: True where one may give it other than an object read back from a table."""
        def build() -> Dict[str, bool]:
            held = self.held_attributes()
            defs = [d for d in self.find(cst.FunctionDef) if self.tree.is_method(d)]
            reads = {id(d): {a.attr.value for a in self.find(cst.Attribute, None, d)} for d in defs}
            out: Dict[str, bool] = {}
            for d in defs:
                values = [v for _, t, v in self._writes_in(d) if isinstance(t, cst.Attribute) and t.attr.value in held]
                if values:
                    out[d.name.value] = out.get(d.name.value, False) or not all(
                        self._filed_value(v, None, tables) for v in values)
            grew = True
            while grew:  # (through the methods each reads: a fixed point over the module's methods)
                grew = False
                for d in defs:
                    other = [out[name] for name in reads[id(d)] if name in out]
                    if other and (d.name.value not in out or any(other) and not out[d.name.value]):
                        out[d.name.value] = out.get(d.name.value, False) or any(other)
                        grew = True
            return out
        return self.index(f"holder-writers:{sorted(tables)}", build)
