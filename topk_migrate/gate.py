"""The kernel gate: does the kernel behind a callee take a rule's parameter, decided per call from the
project's pins, interfaces and declarations. Out of api.py so that what decides a
capability is read apart from the pipeline that asks."""
from __future__ import annotations

import os
from dataclasses import dataclass, replace
from typing import Any, List, Optional, Tuple

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
    from . import kernels  # noqa: PLC0415 - on demand: kernels (packaging) only for a declared kernel

    try:
        if not isinstance(kernel.value, str):
            raise ValueError(f"expected a string such as {kernels.EXAMPLE_KERNEL!r}, got {kernel.value!r}")
        return kernels.parse_pin(kernel.value, kernel.source)
    except ValueError as e:
        raise InputError(f"{kernel.source}: {e}") from None


@dataclass(frozen=True)
class _Callee:
    """A callee as the gate reads it: its first name, whether it is imported, and the distributions whose
    pins decide it."""

    name: str
    module: str
    imported: bool
    dists: tuple


class KernelGate:
    """callee -> Capability (does the kernel behind it take the rule's parameter) for the calls in
    one file; remembers each decision for the report. The parameter and the first version of each
    distribution that has it are the rule's data."""

    def __init__(self, path: str, kernel: Optional[KernelOption] = None, param: str = "", min_versions=None):
        from .project import project_root  # noqa: PLC0415 - light: not for importing the CLI

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
        from . import kernels  # noqa: PLC0415 - analysis only: after the byte prefilter
        from .installed import Declared  # noqa: PLC0415 - analysis only: after the byte prefilter

        resolved = kernels.reexport_target(self.path, callee) if "." in callee else None
        if resolved and resolved != callee:  # a project module's plain re-export: the kernel it resolves to decides
            cap = self._decide(resolved)
            return replace(cap, detail=f"{callee} is {resolved}: {cap.detail}")
        c = self._callee(callee)
        declared = self.explicit if isinstance(self.explicit, Declared) else None
        cap, undecided = self._by_pins(c, declared)
        if cap is None:
            cap = self._by_project_interface(c)
        if cap is None:
            cap = self._by_installed_interface(c)
        if cap is None:
            cap = self._by_declaration(c, declared)
        return cap if cap is not None else self._undecided(c, declared, undecided)

    def _callee(self, callee: str) -> _Callee:
        module = callee.split(".")[0]
        # (a relative import's name, `.legacy.f`, is imported too: from a module of this package, not a kernel's)
        imported = "." in callee and module not in ("self", "cls")
        if module in self.dists:
            dists = self.dists[module]
        elif imported:
            dists = ()  # a module no kernel distribution provides: no pin of one decides it
        else:  # a bare name or an attribute of self: whatever kernel the project pins
            dists = tuple(dict.fromkeys(d for ds in self.dists.values() for d in ds))
        return _Callee(callee, module, imported, dists)

    def _by_pins(self, c: _Callee, declared) -> Tuple[Optional[Capability], List[str]]:
        """--kernel NAME==VERSION, then the project's pins; with the pins that allow versions both with and
        without the parameter, named where nothing else decides."""
        from . import kernels  # noqa: PLC0415 - analysis only: after the byte prefilter

        undecided: List[str] = []
        if self.explicit and not declared and self.explicit.dist in c.dists:
            ok = kernels.accepts(self.explicit, self.min)
            if ok is not None:
                return self._pinned(ok, (self.explicit,), c.dists), undecided
            undecided.append(f"{self.explicit} from {self.explicit.source}")
        found = kernels.project_decision(self.path, c.dists, self.min) if c.dists else None
        if found is not None:
            if found.accepts is not None:
                return self._installed_disagrees(c, found) or self._pinned(found.accepts, found.pins, c.dists), \
                    undecided
            undecided.append(found.describe())
        return None, undecided

    def _installed_disagrees(self, c: _Callee, found) -> Optional[Capability]:
        """Pins that accept, where the module this Python imports (read, not imported) has no parameter: the
        environment runs another build than the pins install (another distribution providing the module, a
        source build, an older install), so the pins do not decide it."""
        from .installed import installed_interface  # noqa: PLC0415 - analysis only: after the byte prefilter

        if not found.accepts or not c.imported or c.module == "torch":
            return None
        installed = installed_interface(c.name, self.param)
        if installed is None or self.param in installed.params or installed.has_var_kwargs:
            return None
        said = "; ".join(f"{p} from {p.source}" for p in found.pins)
        return Capability(False, f"{said}, but the {c.module} this Python imports ({_shown_path(installed.path)}:"
                                 f"{installed.line}) has no {self.param} parameter: another build or distribution "
                                 f"provides it here; install the pinned kernel, or declare the one your engine runs "
                                 f"with --kernel", decision=said)

    def _by_project_interface(self, c: _Callee) -> Optional[Capability]:
        """An interface vendored in the project, or for a bare name the def the file's imports bind."""
        from . import kernels  # noqa: PLC0415 - analysis only: after the byte prefilter

        memo: dict = {}
        iface = kernels.vendored_interface(self.path, c.name, self.param, memo)
        if iface is None and "." not in c.name:
            iface = kernels.read_interface(self.path, c.name, param=self.param, _memo=memo)
        why = kernels.interface_why(memo) if iface is None else None
        if why:  # the project's (or an installed) module binds the name in a way the reader cannot decide
            return Capability(None, f"{c.name}: {why}; rewrite by hand once it is one function that takes "
                                    f"{self.param}")
        if iface is None:
            return None
        where = f"interface at {kernels.project_label(iface.path, self.root)}:{iface.line}"
        wraps = iface.has_var_kwargs and self.param not in iface.params and not iface.installed
        inner = kernels.kwargs_target(iface.path, c.name.rsplit(".", 1)[-1]) if wraps else None
        same = inner is not None and inner.rsplit(".", 1)[-1] == c.name.rsplit(".", 1)[-1]
        cap = self._decide(inner) if same else None  # a wrapper handing `**kwargs` to the kernel it imports: that
        if cap is not None and cap.accepts is not None:  # kernel decides, where it can (round T); else a declaration
            return replace(cap, detail=f"{where} hands **kwargs to {inner}: {cap.detail}")
        if inner is not None and not same:  # (round U: to another op, `legacy_fwd as _sparse_mla_op`, of any build)
            return Capability(None, f"{where} hands **kwargs to {inner}, which is not the kernel it is named for: "
                                    f"whether that takes {self.param} is not known; rewrite by hand")
        return self._by_interface(iface, where)

    def _by_installed_interface(self, c: _Callee) -> Optional[Capability]:
        """The installed interface decides where no release number can (a FlashMLA source build, a module no
        kernel distribution provides); where a version pin can, the project's pins stay what decides."""
        from .installed import installed_interface  # noqa: PLC0415 - analysis only: after the byte prefilter

        versionless = not c.dists or c.dists[0] not in self.min
        installed = installed_interface(c.name, self.param) if c.imported and c.module != "torch" and versionless \
            else None
        if installed is None:
            return None
        return self._by_interface(installed, f"the installed interface {c.module} "
                                             f"({_shown_path(installed.path)}:{installed.line})")

    def _by_interface(self, iface, where: str) -> Optional[Capability]:
        """What one interface says: it takes the parameter, it has none, or (**kwargs) it cannot say."""
        param = self.param
        if param in iface.params:
            return Capability(True, f"{where} takes {param}", iface.params.index(param), where, iface.params)
        if not iface.has_var_kwargs:
            return Capability(False, f"{where} has no {param} parameter", decision=where, params=iface.params)
        return None

    def _by_declaration(self, c: _Callee, declared) -> Optional[Capability]:
        """A capability declaration (`--kernel MODULE:PARAM`) about this callee's module and this parameter."""
        if declared is not None and declared.module == c.module and declared.param == self.param:
            said = f"{declared} from {declared.source}"
            return Capability(True, said, decision=said)
        return None

    def _undecided(self, c: _Callee, declared, undecided: List[str]) -> Capability:
        """Nothing decides: say why, and how to declare the kernel."""
        from .installed import declaration_hint  # noqa: PLC0415 - analysis only: after the byte prefilter

        param, callee, module, dists = self.param, c.name, c.module, c.dists
        hint = declaration_hint(module, param)
        if not module:  # a relative import's: what reads the project found no def of it
            return Capability(None, f"`{callee.rsplit('.', 1)[0]}` (imported relatively) has no interface in this "
                                    f"project topk-migrate can read; rewrite by hand once its "
                                    f"{callee.rsplit('.', 1)[-1]} takes {param}")
        if c.imported and not dists:
            told = f" ({declared} from {declared.source} is about {declared.module})" if declared else ""
            return Capability(None, f"`{module}` is not a kernel module topk-migrate knows, and no interface of it is "
                                    f"in this project or importable here{told}; if its "
                                    f"{callee.rsplit('.', 1)[-1]} takes {param}, declare {hint}")
        what = self._what(c, undecided)
        decidable = [d for d in dists if self.min.get(d)]
        if c.imported and dists and dists[0] not in self.min:
            # no release of the first distribution says what it takes (a source build calls itself
            # 1.0.0+<rev> before and after the parameter): only the interface can decide
            alt = f", or pin {decidable[0]}==VERSION if that is what you install" if decidable else ""
            return Capability(None, f"{what}, and {module} is not importable here; a {dists[0]} build's version "
                                    f"does not say whether it takes {param}: if the {callee.rsplit('.', 1)[-1]} your "
                                    f"engine runs takes {param}, declare {hint}{alt}")
        example = f"{(decidable or dists)[0]}==VERSION"
        return Capability(None, f"{what}; {param} needs {self._needs(dists)}; declare the kernel with "
                                f'--kernel {example} or kernel = "{example}" in [tool.topk-migrate]')

    def _what(self, c: _Callee, undecided: List[str]) -> str:
        """What the pins said: versions both with and without the parameter, or no pin found."""
        if undecided:
            return f"{' and '.join(undecided)} allow{'s' if len(undecided) == 1 else ''} versions both with and " \
                   f"without {self.param}"
        what = f"no pin of {self._names(c.dists)}"
        if c.module in self.dists and (c.module,) != c.dists:
            what += f" (the distribution{'s' if len(c.dists) > 1 else ''} of {c.module})"
        return what + " found"

    def _pinned(self, ok: bool, pins, dists) -> Capability:
        said = "; ".join(f"{p} from {p.source}" for p in pins)
        if ok:
            return Capability(True, said, decision=said)
        return Capability(False, f"{said} ({self.param} needs {self._needs(dists)}{self._brought(pins, dists)})",
                          decision=said)

    def _brought(self, pins, dists) -> str:
        """Where an exact engine pin brings a kernel without the parameter (`sglang[srt]==0.4.9.post2`: sgl-kernel
        0.2.5): what it installs over, and the engine release to pin instead."""
        from . import kernels  # noqa: PLC0415 - analysis only: after the byte prefilter

        old = [p for p in pins if p.via and kernels.accepts(p, self.min) is False]
        if not old:
            return ""
        b = old[0]
        own = [str(p) for p in pins if not p.via and p.dist in dists and kernels.accepts(p, self.min)]
        over = f", which installs the same module as {' and '.join(own)}: whichever installs last wins" if own else ""
        first = kernels.first_engine_release(b.via, dists, self.min)
        engine = b.via.split("==")[0]
        remedy = f"pin {engine}=={first} or later, whose kernel takes {self.param}, or " if first else ""
        return f"; {b.via} from {b.source} brings {b.dist}{b.spec}{over}; {remedy}declare the kernel your engine " \
               f"runs with --kernel"

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
    from .project import project_root  # noqa: PLC0415 - light: not for importing the CLI

    root = project_root(path)
    return os.path.join(os.path.basename(root), os.path.relpath(path, root)).replace(os.sep, "/")
