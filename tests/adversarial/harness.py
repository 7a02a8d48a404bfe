"""Run one adversarial backend before and after `topk-migrate apply` and say what went wrong.

Each variant is a small module (plus optional sibling files) written to its own folder. It is
imported and its `entry(inputs)` called with the stub kernel of tests/stubs; then apply runs
over the folder in-process (api.run, write=True: pins, config and the safe writer included);
then the rewritten module is imported and run again. A problem is anything a user of apply
would suffer: a crash that was not there before, a different output, a topk_length that
disagrees with the indices, a kernel use that is not reported, a refusal without a reason,
or (for the row-preserving controls) a site that is no longer fixed.
"""
from __future__ import annotations

import ast
import contextlib
import difflib
import os
import sys
import traceback
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import torch

STUBS = Path(__file__).resolve().parent.parent / "stubs"
MARKER = "# SITE"  # a line that holds a kernel use the tool must report
ROWS, HEADS, DIM, TOPK, S_KV = 8, 2, 16, 16, 48
# Valid indices per row (seqlens clipped to TOPK): all different enough that any reordering
# of the rows gives some row a length that disagrees with its indices.
COUNTS = (5, 16, 0, 9, 16, 2, 12, 7)


class Meta:
    """Backend metadata: the clipped seqlens under both names engines use."""

    def __init__(self, lengths: Optional[torch.Tensor], page_table_1: Optional[torch.Tensor] = None):
        self.dsa_cache_seqlens_int32 = lengths
        self.nsa_cache_seqlens_int32 = lengths
        self.page_table_1 = page_table_1


class Inputs:
    """What entry(inputs) receives; built so the kernel contract holds for the full batch."""

    def __init__(self, seed: int = 0):
        g = torch.Generator().manual_seed(seed)
        self.q = torch.randn(ROWS, HEADS, DIM, generator=g)
        self.kv = torch.randn(S_KV, 1, DIM, generator=g)
        self.indices = torch.full((ROWS, 1, TOPK), -1, dtype=torch.int32)
        for row, n in enumerate(COUNTS):
            self.indices[row, 0, :n] = torch.randperm(S_KV, generator=g)[:n].to(torch.int32)
        self.lengths = torch.tensor(COUNTS, dtype=torch.int32)
        self.sm_scale = 0.25
        self.metadata = Meta(self.lengths, self.indices[:, 0, :])
        self.flags: Dict[str, bool] = {}
        self.Meta = Meta

    def metadata_for(self, rows: slice) -> Meta:
        """Metadata of a sub-batch (e.g. one micro-batch of two)."""
        return Meta(self.lengths[rows].clone(), self.indices[rows, 0, :])


@dataclass(frozen=True)
class Variant:
    name: str
    hazard: str  # the class: "1 placement" .. "8 discovery", or "control" (must stay fixable)
    source: str  # the module apply migrates; defines entry(inputs)
    files: Tuple[Tuple[str, str], ...] = (("requirements.txt", "sglang-kernel==0.4.6\n"),)
    legacy_kernel: bool = False  # the environment's kernel predates topk_length
    hide: Tuple[str, ...] = ()  # modules that fail to import in this environment
    env: Tuple[Tuple[str, str], ...] = ()
    expect: str = "sound"  # "sound" | "fixable" (control) | "reported" (manual at every SITE line)


@dataclass
class Outcome:
    variant: Variant
    sites: List[Tuple[int, str, str]] = field(default_factory=list)  # (line, status, reason) in the module
    problems: List[str] = field(default_factory=list)
    fixed: bool = False  # after apply, the kernel received a topk_length
    diff: str = ""  # what apply changed in the module

    @property
    def wrong(self) -> bool:
        return bool(self.problems)

    def describe(self) -> str:
        v = self.variant
        lines = [f"variant {v.name} [class {v.hazard}] went wrong:"]
        lines += [f"  - {p}" for p in self.problems]
        lines += [f"  site line {ln}: {st} \u2014 {why}" for ln, st, why in self.sites]
        if self.diff:
            diff = self.diff.splitlines()
            lines += ["  apply's diff:"] + [f"    {d}" for d in diff[:60]] + (["    ..."] if len(diff) > 60 else [])
        return "\n".join(lines)


MODULE = "backend.py"


def write_variant(v: Variant, root: Path) -> Path:
    folder = root / v.name
    folder.mkdir(parents=True)
    (folder / MODULE).write_text(v.source)
    for name, text in v.files:
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    return folder


def _kernel_module():
    return sys.modules["sgl_kernel.flash_mla"]


@contextlib.contextmanager
def environment(v: Variant, folder: Path):
    """The variant's world: its kernel generation, hidden modules, env vars, sibling modules."""
    kernel = _kernel_module()
    kernel.configure(legacy=v.legacy_kernel)
    saved_mods = {m: sys.modules.get(m) for m in v.hide}
    saved_env = {k: os.environ.get(k) for k, _ in v.env}
    for m in v.hide:
        sys.modules[m] = None  # `import m` raises ImportError
    os.environ.update(dict(v.env))
    sys.path.insert(0, str(folder))
    try:
        yield kernel
    finally:
        sys.path.remove(str(folder))
        for k, old in saved_env.items():
            if old is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = old
        for m, old in saved_mods.items():
            sys.modules[m] = old
        _forget_modules_under(folder)
        kernel.configure(legacy=False)


def _forget_modules_under(folder: Path) -> None:
    prefix = str(folder)
    for name, mod in list(sys.modules.items()):
        if str(getattr(mod, "__file__", None) or "").startswith(prefix):
            del sys.modules[name]


def _run(source: str, path: Path, name: str):
    """Import `source` as a fresh module and call entry(Inputs()); (outputs, None) or (None, error)."""
    module = types.ModuleType(name)
    module.__file__ = str(path)
    sys.modules[name] = module
    try:
        exec(compile(source, str(path), "exec", dont_inherit=True), module.__dict__)  # not our __future__ flags
        return module.entry(Inputs()), None
    except Exception as e:  # the variant's own crash is the measurement
        tb = traceback.extract_tb(e.__traceback__)
        where = next((f"line {f.lineno}: {f.line}" for f in reversed(tb) if f.filename == str(path)), "")
        return None, f"{type(e).__name__}: {e}" + (f" (at {where})" if where else "")
    finally:
        sys.modules.pop(name, None)


def _flatten(out) -> List[torch.Tensor]:
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in _flatten(o)]
    if isinstance(out, dict):
        return [t for k in sorted(out) for t in _flatten(out[k])]
    return []


def _same(a, b) -> bool:
    xs, ys = _flatten(a), _flatten(b)
    return len(xs) == len(ys) and all(
        x.shape == y.shape and x.dtype == y.dtype and torch.equal(x, y) for x, y in zip(xs, ys))


Engine = Callable[[Path], Tuple[list, List[str]]]


def apply_engine(folder: Path):
    """topk-migrate apply over the variant's folder, in-process: (sites, file errors)."""
    from topk_migrate import api

    report = api.run([str(folder)], write=True)
    return report.sites, [f"{f.path}: {f.error}" for f in report.errors]


def marker_lines(source: str) -> List[int]:
    return [i for i, line in enumerate(source.splitlines(), 1) if MARKER in line]


def run_variant(v: Variant, root: Path, engine: Engine = apply_engine) -> Outcome:
    folder = write_variant(v, root)
    path = folder / MODULE
    out = Outcome(v)
    tag = "adv_" + "".join(c if c.isalnum() else "_" for c in v.name)
    with environment(v, folder) as kernel:
        before, err = _run(v.source, path, tag + "_before")
        if err is not None:
            out.problems.append(f"variant is broken: the ORIGINAL module raised {err}")
            return out
        if any(c.violations for c in kernel.CALLS):
            out.problems.append("variant is broken: the ORIGINAL module already violates the contract")
            return out
    sites, errors = engine(folder)
    out.problems += [f"apply reported an error instead of a site status: {e}" for e in errors]
    mine = [s for s in sites if os.path.abspath(s.path) == str(path)]
    out.sites = [(s.line, str(s.status), s.reason) for s in mine]
    for s in sites:
        if str(s.status) == "manual" and not s.reason.strip():
            out.problems.append(f"line {s.line}: manual without a reason")
    _check_markers(v, mine, out)
    after_src = path.read_text()
    out.diff = "".join(difflib.unified_diff(v.source.splitlines(True), after_src.splitlines(True), "before", "after", n=1))
    try:
        ast.parse(after_src)
    except SyntaxError as e:
        out.problems.append(f"the rewritten module does not parse: {e}")
        return out
    with environment(v, folder) as kernel:
        after, err = _run(after_src, path, tag + "_after")
        calls = list(kernel.CALLS)
    if err is not None:
        out.problems.append(f"ran before apply, raises after: {err}")
    else:
        bad = [f"kernel call #{i + 1}: {msg}" for i, c in enumerate(calls) for msg in c.violations]
        out.problems += bad
        if not _same(before, after):
            out.problems.append("outputs differ before/after apply (not bitwise equal)")
    out.fixed = err is None and any(c.topk_length_given for c in calls)
    if v.expect == "fixable" and not out.fixed:
        out.problems.append("row-preserving control no longer fixed: the kernel got no topk_length after apply")
    return out


def _check_markers(v: Variant, sites, out: Outcome) -> None:
    by_line: Dict[int, list] = {}
    for s in sites:
        by_line.setdefault(s.line, []).append(s)
    for line in marker_lines(v.source):
        here = by_line.get(line, [])
        if not here:
            out.problems.append(f"kernel use on line {line} was not reported as a site")
        elif v.expect == "reported" and not all(str(s.status) == "manual" and s.reason.strip() for s in here):
            out.problems.append(f"line {line}: expected manual with a reason, got "
                                + ", ".join(f"{s.status} ({s.reason})" for s in here))
        elif v.expect == "fixable" and not all(str(s.status) == "fixable" for s in here):
            out.problems.append(f"line {line}: control must stay fixable, got "
                                + ", ".join(f"{s.status} ({s.reason})" for s in here))


@contextlib.contextmanager
def stub_kernels():
    """Put tests/stubs first on sys.path and import the stubs; undo both afterwards."""
    before = set(sys.modules)
    sys.path.insert(0, str(STUBS))
    try:
        import flash_mla  # noqa: F401  (imports sgl_kernel too)
        import sgl_kernel.flash_mla  # noqa: F401

        assert Path(sgl_kernel.__file__).resolve().is_relative_to(STUBS), "a real sgl_kernel shadowed the stub"
        yield sgl_kernel.flash_mla
    finally:
        sys.path.remove(str(STUBS))
        for name in set(sys.modules) - before:
            if name.split(".")[0] in ("sgl_kernel", "flash_mla") or name.startswith("adv_"):
                del sys.modules[name]


def run_all(variants: Sequence[Variant], root: Path, engine: Engine = apply_engine) -> List[Outcome]:
    with stub_kernels():
        return [run_variant(v, root, engine) for v in variants]
