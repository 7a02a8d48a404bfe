"""The kernel gate: does the kernel behind a callee take a rule's parameter, decided per call from the
project's pins, interfaces and declarations. Out of api.py so that what decides a
capability is read apart from the pipeline that asks."""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Optional

from . import rules
from .model import Capability, InputError

FROM_OPTION = "--kernel"


@dataclass(frozen=True)
class KernelOption:
    """The kernel a run was told (--kernel, or its project's `kernel`) and where it was told. The caller,
    which read the configuration already, names the source; the gate never reads the configuration.
    source None: not known yet (api.kernel_gate names it when a gate is first needed)."""

    value: Any = None  # a string once checked: a configuration may hold any TOML value
    source: Optional[str] = FROM_OPTION


def _parsed(kernel: KernelOption):
    """The declared kernel as a pin, or InputError naming where it was declared."""
    from . import kernels  # with the gate: what a file without the kernel never needs

    try:
        if not isinstance(kernel.value, str):
            raise ValueError(f"expected a string such as {kernels.EXAMPLE_KERNEL!r}, got {kernel.value!r}")
        return kernels.parse_pin(kernel.value, kernel.source)
    except ValueError as e:
        raise InputError(f"{kernel.source}: {e}") from None


class KernelGate:
    """callee -> Capability (does the kernel behind it take the rule's parameter) for the calls in
    one file; remembers each decision for the report. The parameter and the first version of each
    distribution that has it are the rule's data."""

    def __init__(self, path: str, kernel: Optional[KernelOption] = None, param: str = "", min_versions=None):
        # not at the top: with config ~2.5 ms, which check of a file without the kernel never needs
        from .project import project_root

        self.param, self.min = param, dict(min_versions or {})
        self.path = path
        self.root = project_root(path)
        self.decisions: dict = {}  # callee -> "what decided, from where"
        self.explicit = None
        if kernel is not None and kernel.value:
            self.explicit = _parsed(kernel)

    def __call__(self, callee: str) -> Capability:
        cap = self._decide(callee)
        if cap.decision:
            self.decisions[callee] = cap.decision
        return cap

    @property
    def dists(self):
        """Top-level module -> the distributions that can provide it (the rules' INFO.providers)."""
        return rules.providers()

    def _decide(self, callee: str) -> Capability:
        """In order: --kernel NAME==VERSION, the project's pins, an interface vendored in the project, the
        interface the running Python would import (read, never imported), a capability declaration
        (`--kernel flash_mla:topk_length`). A distribution's pin decides only the modules it provides."""
        from . import kernels
        from .installed import Declared, declaration_hint, installed_interface

        param = self.param

        module = callee.split(".")[0]
        # (a relative import's name, `.legacy.f`, is imported too: from a module of this package, not a kernel's)
        imported = "." in callee and module not in ("self", "cls")
        if module in self.dists:
            dists = self.dists[module]
        elif imported:
            dists = ()  # a module no kernel distribution provides: no pin of one decides it
        else:  # a bare name or an attribute of self: whatever kernel the project pins
            dists = tuple(dict.fromkeys(d for ds in self.dists.values() for d in ds))
        declared = self.explicit if isinstance(self.explicit, Declared) else None
        undecided = []
        if self.explicit and not declared and self.explicit.dist in dists:
            ok = kernels.accepts(self.explicit, self.min)
            if ok is not None:
                return self._pinned(ok, (self.explicit,), dists)
            undecided.append(f"{self.explicit} from {self.explicit.source}")
        found = kernels.project_decision(self.path, dists, self.min) if dists else None
        if found is not None:
            if found.accepts is not None:
                return self._pinned(found.accepts, found.pins, dists)
            undecided.append(found.describe())
        memo: dict = {}
        iface = kernels.vendored_interface(self.path, callee, param, memo)
        if iface is None and "." not in callee:
            iface = kernels.read_interface(self.path, callee, param=param, _memo=memo)
        why = kernels.interface_why(memo) if iface is None else None
        if why:  # the project's (or an installed) module binds the name in a way the reader cannot decide
            return Capability(None, f"{callee}: {why}; rewrite by hand once it is one function that takes {param}")
        if iface is not None:
            where = f"interface at {kernels.project_label(iface.path, self.root)}:{iface.line}"
            if param in iface.params:
                return Capability(True, f"{where} takes {param}", iface.params.index(param), where, iface.params)
            if not iface.has_var_kwargs:
                return Capability(False, f"{where} has no {param} parameter", decision=where, params=iface.params)
        # the installed interface decides where no release number can (a FlashMLA source build, a module no
        # kernel distribution provides); where a version pin can, the project's pins stay what decides
        versionless = not dists or dists[0] not in self.min
        installed = installed_interface(callee, param) if imported and module != "torch" and versionless else None
        if installed is not None:
            where = f"the installed interface {module} ({_shown_path(installed.path)}:{installed.line})"
            if param in installed.params:
                return Capability(True, f"{where} takes {param}", installed.params.index(param), where,
                                  installed.params)
            if not installed.has_var_kwargs:
                return Capability(False, f"{where} has no {param} parameter", decision=where, params=installed.params)
        if declared is not None and declared.module == module and declared.param == param:
            said = f"{declared} from {declared.source}"
            return Capability(True, said, decision=said)
        hint = declaration_hint(module, param)
        if not module:  # a relative import's: what reads the project found no def of it
            return Capability(None, f"`{callee.rsplit('.', 1)[0]}` (imported relatively) has no interface in this "
                                    f"project topk-migrate can read; rewrite by hand once its "
                                    f"{callee.rsplit('.', 1)[-1]} takes {param}")
        if imported and not dists:
            told = f" ({declared} from {declared.source} is about {declared.module})" if declared else ""
            return Capability(None, f"`{module}` is not a kernel module topk-migrate knows, and no interface of it is "
                                    f"in this project or importable here{told}; if its "
                                    f"{callee.rsplit('.', 1)[-1]} takes {param}, declare {hint}")
        if undecided:
            what = f"{' and '.join(undecided)} allow{'s' if len(undecided) == 1 else ''} versions both with and without {param}"
        else:
            what = f"no pin of {self._names(dists)}"
            if module in self.dists and (module,) != dists:
                what += f" (the distribution{'s' if len(dists) > 1 else ''} of {module})"
            what += " found"
        decidable = [d for d in dists if self.min.get(d)]
        if imported and dists and dists[0] not in self.min:
            # no release of the first distribution says what it takes (a source build calls itself
            # 1.0.0+<rev> before and after the parameter): only the interface can decide
            alt = f", or pin {decidable[0]}==VERSION if that is what you install" if decidable else ""
            return Capability(None, f"{what}, and {module} is not importable here; a {dists[0]} build's version "
                                    f"does not say whether it takes {param}: if the {callee.rsplit('.', 1)[-1]} your "
                                    f"engine runs takes {param}, declare {hint}{alt}")
        example = f"{(decidable or dists)[0]}==VERSION"
        return Capability(None, f"{what}; {param} needs {self._needs(dists)}; declare the kernel with "
                                f'--kernel {example} or kernel = "{example}" in [tool.topk-migrate]')

    def _pinned(self, ok: bool, pins, dists) -> Capability:
        said = "; ".join(f"{p} from {p.source}" for p in pins)
        if ok:
            return Capability(True, said, decision=said)
        return Capability(False, f"{said} ({self.param} needs {self._needs(dists)})", decision=said)

    def _needs(self, dists) -> str:
        """The first version of each providing distribution that accepts topk_length."""
        known = [f"{d}>={self.min[d]}" for d in dists if self.min.get(d)]
        never = [d for d in dists if d in self.min and self.min[d] is None]
        text = " or ".join(known) or f"a kernel with {self.param}"
        return text + (f", and no {self._names(never)} release has it" if never else "")

    @staticmethod
    def _names(dists) -> str:
        return " or ".join(dists)


def _shown_path(path: str) -> str:
    """An installed file as a reader recognizes it: from its site-packages (or checkout) directory."""
    from .project import project_root

    root = project_root(path)
    return os.path.join(os.path.basename(root), os.path.relpath(path, root)).replace(os.sep, "/")
