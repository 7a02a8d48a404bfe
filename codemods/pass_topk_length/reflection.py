"""docs/soundness.md `no-reflection`: nothing in the module can rebind or call the kernel, the helper or
its class by a name computed at run time (the project's other files: reach.Project.reflection)."""
from __future__ import annotations

from typing import Optional

import libcst as cst
from libcst.helpers import get_full_name_for_node

from .syntax import _code


class NoReflection:
    """docs/soundness.md `no-reflection` (a mixin of analysis._Analysis)."""

    def reflection(self) -> Optional[str]:
        """Reflection in the module: a name computed at run time can rebind or call the kernel, the helper or
        its class, which no reading of the source can follow. setattr/delattr with a name that is not a literal,
        a call of what getattr with a computed name returns, exec/eval/compile, writes through
        globals()/vars()/locals(), `__dict__` or `sys.modules`: the first one, or None. (The real engines' backends use
        none of them; `getattr(x, "literal", default)` is an attribute read.)"""
        def build() -> Optional[str]:
            for call in self.find(cst.Call):
                name = get_full_name_for_node(call.func) or ""
                literal = len(call.args) > 1 and isinstance(call.args[1].value, cst.SimpleString)
                if name in ("setattr", "delattr") and not literal:
                    return self._reflective(call, f"`{name}` with a computed name")
                up = self.tree.parent.get(call)
                if name == "getattr" and not literal and isinstance(up, cst.Call) and up.func is call:
                    return self._reflective(call, "a call of `getattr` with a computed name")  # getattr(m, n)(...)
                if name in ("exec", "eval", "compile"):
                    return self._reflective(call, f"`{name}()`")
                if name in ("globals", "vars", "locals") and self._written_through(call):
                    return self._reflective(call, f"a write through `{name}()`")
            for attr in self.find(cst.Attribute, lambda a: a.attr.value in ("__dict__", "__globals__")
                                  or (a.attr.value == "modules" and isinstance(a.value, cst.Name)
                                      and a.value.value == "sys")):
                if self._written_through(attr):
                    return self._reflective(attr, f"a write through `{_code(attr).strip()}`")
            return None
        return self.index("reflection", build)

    def _written_through(self, node: cst.CSTNode) -> bool:
        """`node[k] = v`, `del node[k]`, `node.update(...)` / `.setdefault` / `.pop` / `.__setitem__`, or `node = v`
        (`self.__dict__ = shared`: the Borg idiom makes every instance's attributes one namespace, round Y)."""
        up = self.tree.parent.get(node)
        if isinstance(up, (cst.AssignTarget, cst.AnnAssign, cst.AugAssign)) and up.target is node:
            return True
        if isinstance(up, cst.Subscript) and up.value is node:
            above = self.tree.parent.get(up)
            return isinstance(above, (cst.AssignTarget, cst.AugAssign, cst.Del)) or isinstance(
                self.tree.parent.get(above), cst.Del)
        if isinstance(up, cst.Attribute) and up.value is node and up.attr.value in (
                "update", "setdefault", "pop", "popitem", "clear", "__setitem__", "__delitem__"):
            return isinstance(self.tree.parent.get(up), cst.Call)
        return False

    def _reflective(self, node: cst.CSTNode, what: str) -> str:
        return (f"{what} at line {self.tree.line(node)} may rebind or call the kernel, the helper or its class at "
                "run time, which the analysis cannot follow; pass topk_length by hand if it cannot")
