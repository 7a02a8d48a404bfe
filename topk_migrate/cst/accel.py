"""The one switch for the analysis' LibCST accelerators: on only where they were tested.

Two accelerators read or copy LibCST's private internals for speed:

- `cstwalk.fast_visits`: a read-only walk that replaces `CSTNode.visit` for its thread while open, with
  each node type's fields read from the bytecode of its `_visit_and_replace_children` (`dis`);
- `scopefast`: LibCST's ScopeProvider and ExpressionContextProvider visitors with their `on_leave` and
  `visit_FunctionDef` copied (less the walk of a body left out, `Tree.skip_bodies`), their results written
  into the providers' private fields, and positions recorded by a subclass of LibCST's private codegen
  state (`StatementPositions`); `cstutil` generates a replaced statement's code alone with that state.

`on()` is True only where all of these hold, and then for the whole process:

- `TOPK_MIGRATE_NO_ACCEL` is unset, empty or `0`;
- the installed LibCST's version lies in TESTED (pyproject.toml's `libcst` range; tests/test_accel.py
  runs the check and apply of the fixtures both ways on its lowest and newest releases);
- the LibCST functions the copies were made from still name what they did (SELF_CHECKS), and its
  private names the accelerators use are there.

Off, the analysis uses LibCST's public API only: a plain `visit`, `MetadataWrapper.resolve` of
ScopeProvider and PositionProvider, and `Module.code`; no private LibCST module is imported. The
answers are the same, byte for byte; only slower (tests/test_accel.py).
"""
from __future__ import annotations

import importlib
import os
import re
from typing import Optional, Tuple

import libcst

ENV = "TOPK_MIGRATE_NO_ACCEL"
# pyproject.toml's range: the lowest LibCST release tested, and the first one not tested
TESTED = ((1, 1), (1, 10))

# (module, function) -> the names its code uses (`co_names`), as LibCST 1.1-1.9 write them: the functions
# scopefast copies (ScopeVisitor.on_leave, both visit_FunctionDef) or overrides
SELF_CHECKS = {
    ("libcst.metadata.scope_provider", "ScopeVisitor.on_leave"): (
        "provider", "set_metadata", "scope", "isinstance", "_ASSIGNMENT_LIKE_NODES", "_assignment_count", "super",
        "on_leave"),
    ("libcst.metadata.scope_provider", "ScopeVisitor.visit_FunctionDef"): (
        "scope", "record_assignment", "name", "value", "provider", "set_metadata", "ExitStack", "type_parameters",
        "enter_context", "_new_scope", "AnnotationScope", "visit", "FunctionScope", "get_full_name_for_node",
        "params", "body", "decorators", "returns"),
    ("libcst.metadata.expression_context_provider", "ExpressionContextVisitor.visit_FunctionDef"): (
        "name", "visit", "ExpressionContextVisitor", "provider", "ExpressionContext", "STORE", "params", "body",
        "decorators", "returns"),
}
# private names the accelerators import or call: (module, attribute path)
PRIVATE = (
    ("libcst.metadata.position_provider", "PositionProvidingCodegenState"),
    ("libcst.metadata.position_provider", "NEWLINE_RE"),
    ("libcst.metadata.scope_provider", "_ASSIGNMENT_LIKE_NODES"),
    ("libcst.metadata.scope_provider", "AnnotationScope"),
    ("libcst.metadata.scope_provider", "ScopeVisitor._new_scope"),
    ("libcst._nodes.internal", "CodegenState"),
    ("libcst", "CSTNode._visit_and_replace_children"),
    ("libcst", "CSTNode._codegen"),
)


def libcst_version() -> str:
    got = getattr(libcst, "LIBCST_VERSION", None)
    if isinstance(got, str):
        return got
    from importlib.metadata import version  # noqa: PLC0415 - on demand: a LibCST without LIBCST_VERSION

    return version("libcst")


def release(version: str) -> Tuple[int, ...]:
    """(major, minor, ...) of a version string: its leading dotted numbers ("1.10.0rc1" -> (1, 10, 0))."""
    m = re.match(r"\d+(?:\.\d+)*", version)
    return tuple(int(p) for p in m.group(0).split(".")) if m else ()


def _attribute(module: str, path: str):
    got = importlib.import_module(module)
    for part in path.split("."):
        got = getattr(got, part)
    return got


def self_check() -> str:
    """The first SELF_CHECKS or PRIVATE entry the installed LibCST fails, as a phrase; '' where none does."""
    for module, path in PRIVATE:
        try:
            _attribute(module, path)
        except Exception:  # gone, or failing to import: a release the accelerators do not know
            return f"{module}.{path} is missing"
    for (module, path), names in SELF_CHECKS.items():
        try:
            got = _attribute(module, path).__code__.co_names
        except Exception:
            return f"{module}.{path} is missing"
        if got != names:
            return f"{module}.{path} is not the code copied"
    return ""


_STATE: Optional[Tuple[bool, str]] = None


def state() -> Tuple[bool, str]:
    """(on, why): worked out once per process (when the first walk or scope analysis asks), then kept."""
    global _STATE
    if _STATE is None:
        _STATE = _decide()
    return _STATE


def reset() -> None:
    """Work the switch out again at the next state() (tests). Modules already imported keep what they chose."""
    global _STATE
    _STATE = None


def _decide() -> Tuple[bool, str]:
    forced = os.environ.get(ENV, "")
    if forced not in ("", "0"):
        return False, f"{ENV}={forced}"
    version = libcst_version()
    lowest, above = TESTED
    if not lowest <= release(version)[:2] < above:
        return False, (f"LibCST {version} is outside the tested {'.'.join(map(str, lowest))} to "
                       f"{'.'.join(map(str, above))} (exclusive)")
    failed = self_check()
    if failed:
        return False, f"LibCST {version}: {failed}"
    return True, f"LibCST {version}"


def on() -> bool:
    return state()[0]
