"""A kernel whose version cannot say what it takes: the interface the environment has, read without
importing it, and a capability declaration (`--kernel flash_mla:topk_length`) that can be true where it is
not installed.

FlashMLA built from source calls itself `1.0.0+<rev>` before and after its sparse kernel gained
topk_length, so no version pin decides it. What decides it is the interface:

- installed_interface(): where `flash_mla` (or another kernel module) is importable by the Python running
  the tool, its file is found the way `import` would find it (importlib.util.find_spec on the top-level
  name: the finders run, the package's own code does not), and `def flash_mla_sparse_fwd(...)` is read
  from it statically, re-exports followed, each file read within the read bound (project.read_project_file);
- Declared: where it is not installed (a pre-commit hook's own environment, CI), the user declares the
  capability of the interface their engine runs: `MODULE:PARAM` in --kernel or `kernel = "..."` in
  [tool.topk-migrate]. It decides only calls into that module; an installed interface that contradicts it
  wins (the call would raise there).
"""
from __future__ import annotations

import os
from typing import Optional

# Declared and parse_declaration live in kernels (parse_pin reads a declaration): named here too.
from .kernels import Declared, Interface, parse_declaration, read_interface  # noqa: F401


def declaration_hint(module: str, param: str) -> str:
    return f'--kernel {module}:{param} or kernel = "{module}:{param}" in [tool.topk-migrate]'


def installed_interface(callee: str, param: str = "") -> Optional[Interface]:
    """`def FUNC(...)` of the module `callee` (`flash_mla.flash_mla_sparse_fwd`) as the running Python would
    import it, read statically; None where it is not importable, not Python source, or unreadable."""
    module, _, func = callee.rpartition(".")
    top = module.split(".")[0]
    if not module or not top.isidentifier():
        return None
    import importlib.util

    try:
        spec = importlib.util.find_spec(top)  # a top-level name: no parent package is imported
    except (ImportError, ValueError, AttributeError):
        return None
    if spec is None:
        return None
    rest = module.split(".")[1:]
    if not rest:
        origin = spec.origin
    else:
        origin = None
        for base in spec.submodule_search_locations or ():
            for cand in (os.path.join(base, *rest) + ".py", os.path.join(base, *rest, "__init__.py")):
                if os.path.isfile(cand):
                    origin = cand
                    break
            if origin:
                break
    if not origin or not origin.endswith(".py") or not os.path.isfile(origin):
        return None
    try:
        return read_interface(origin, func, param=param)
    except (OSError, ValueError, SyntaxError):
        return None
