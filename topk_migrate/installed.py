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

from typing import Optional

# Declared and parse_declaration live in kernels (parse_pin reads a declaration): named here too.
from .kernels import Declared, Interface, importable_file, parse_declaration, read_interface  # noqa: F401


def declaration_hint(module: str, param: str) -> str:
    return f'--kernel {module}:{param} or kernel = "{module}:{param}" in [tool.topk-migrate]'


def installed_interface(callee: str, param: str = "") -> Optional[Interface]:
    """`def FUNC(...)` of the module `callee` (`flash_mla.flash_mla_sparse_fwd`) as the running Python would
    import it, read statically; None where it is not importable, not Python source, or unreadable."""
    module, _, func = callee.rpartition(".")
    origin = importable_file(module) if module else None
    if origin is None:
        return None
    try:
        return read_interface(origin, func, param=param)
    except (OSError, ValueError, SyntaxError):
        return None
