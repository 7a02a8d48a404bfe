"""docs/soundness.md `metadata-in-scope`, round BG: the defs of the project that write the field, and whether one
may run after a planner's refresh (named by a later statement of the planner: a helper object's method, a bound
method handed to an executor, an item store running a `__setitem__`), so the refresh is not the last write (a mixin
of analysis._Analysis, beside MetadataInScope, whose refresh points it reads)."""
from __future__ import annotations

import ast
from typing import Optional, Set, Tuple

import libcst as cst

from . import reach
from .rows import local_defs
from .syntax import _brief


class WritersAfter:
    """Round BG's writers after the refresh (docs/soundness.md "Round BG")."""

    def _field_writers(self, field_name: str) -> Set[str]:
        """Round BG: the names of the project's defs that write the field (reach.field_writes' enclosing defs), closed
        over the defs naming one (a call or a value read, by plain or attribute name; 3 rounds): any may run the
        write. Tensor methods' names (`copy_`, `fill_`) are left out (a record class's `copy_` would take in every
        tensor copy)."""
        def build() -> Set[str]:
            proj = self.project()
            own = proj.checked_file(self.source)
            names = {d.name for f, node, _ in reach.field_writes(proj, field_name, own)
                     for d in [f.enclosing(node, (ast.FunctionDef, ast.AsyncFunctionDef))] if d is not None}
            names = {n for n in names if not _tensor_method_name(n)}
            for _ in range(3):
                files = [*proj.files_naming(sorted(names)), *([own] if own is not None else [])]
                more = {d.name for f in files for d in ast.walk(f.tree)
                        if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef)) and d.name not in names
                        and not _tensor_method_name(d.name) and _names_one(d, names)}
                if not more:
                    break
                names |= more
            return names
        return self.index(f"field-writers:{field_name}", build)

    def _writer_after_why(self, fdef: cst.FunctionDef, attr: str, field_name: str, eager: bool) -> Optional[str]:
        """Round BG: why a def that may write the field (_field_writers) may run after fdef's refresh of
        `self.<attr>.<field>` (or after its refreshing helper's, inside it): the refresh must be the last write."""
        writers = self._field_writers(field_name)
        for where, at in self._refresh_points(fdef, attr, field_name, eager):
            found = self._writer_named_after(where, at, writers)
            if found is not None:
                node, name = found
                return (f"{where.name.value} refreshes `self.{attr}.{field_name}` in place, then `{_brief(node, 60)}` "
                        f"(line {self.tree.line(node)}) may run `{name}`, a def of the project that writes the field "
                        "(or runs one that does): it may write it again for another batch (a draft's lengths staged "
                        "into the record); make the refresh the last write of the field, or pass topk_length by hand")
        return None

    def _writer_named_after(self, fdef: cst.FunctionDef, at: cst.CSTNode,
                            writers: Set[str]) -> Optional[Tuple[cst.CSTNode, str]]:
        """Round BG: the first statement of fdef after `at` (_calls_after's order, outside `at`'s own statement) that
        names a def of `writers` (`self._drafts.stage(fb)`, `submit(self._stage, d)`), but as the callee of a self-call
        handed fdef's own batch (_other_batch_write follows those), or stores or deletes an item of anything but a
        literal where `__setitem__`/`__delitem__` is one; with that name. Else None."""
        order, stmt = self.tree.order, self._statement_around(at)
        accepted = {id(c.func) for c in self._calls_after(fdef, at)
                    if self._handed_own(fdef, c) and local_defs(self.tree, c.func)}
        for n in self.find((cst.Name, cst.Attribute, cst.Subscript), None, fdef):
            if order[id(n)] <= order[id(at)] or id(n) in accepted or any(a is stmt for a in self.tree.ancestors(n)):
                continue
            name = self._read_name(n) if not isinstance(n, cst.Subscript) else self._item_hook(n)
            if name in writers:
                return self._statement_around(n), name
        return None

    def _read_name(self, n: cst.CSTNode) -> Optional[str]:
        """The def name a Name or an Attribute reads (a plain name, not an attribute's or keyword's own name, nor a
        store's target); None otherwise."""
        up = self.tree.parent.get(n)
        if isinstance(up, (cst.AssignTarget, cst.AugAssign, cst.AnnAssign)) and getattr(up, "target", None) is n:
            return None
        if isinstance(n, cst.Attribute):
            return n.attr.value
        if isinstance(up, cst.Attribute) and up.attr is n or isinstance(up, cst.Arg) and up.keyword is n \
                or isinstance(up, (cst.Param, cst.FunctionDef, cst.ClassDef)):
            return None
        return n.value

    def _item_hook(self, n: cst.Subscript) -> Optional[str]:
        """The item hook `x[k] = v`, `x[k] += v` (an unpacking's or a loop's target too) or `del x[k]` runs on anything
        but a literal display: `__setitem__` or `__delitem__`; None for a read."""
        if isinstance(n.value, (cst.Dict, cst.List, cst.Tuple, cst.Set)):
            return None
        top, up = n, self.tree.parent.get(n)
        while isinstance(up, (cst.Element, cst.Tuple, cst.List, cst.StarredElement)):
            top, up = up, self.tree.parent.get(up)
        if isinstance(up, cst.Del) and up.target is top:
            return "__delitem__"
        stored = isinstance(up, (cst.AssignTarget, cst.AugAssign, cst.AnnAssign, cst.For)) and up.target is top
        return "__setitem__" if stored else None


def _tensor_method_name(name: str) -> bool:
    """Round BG: a name spelled as a tensor's in-place method (`copy_`, `fill_`): not read as a def's name."""
    return name.endswith("_") and not name.startswith("_")


def _names_one(fdef: ast.AST, names: Set[str]) -> bool:
    """Round BG: does fdef's body read one of `names`, by plain name or attribute name (a call or a value)?"""
    return any(isinstance(n, ast.Name) and n.id in names or isinstance(n, ast.Attribute) and n.attr in names
               and isinstance(n.ctx, ast.Load) for n in ast.walk(fdef))
