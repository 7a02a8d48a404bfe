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
    #                      | "derived" (derived_mode: every SITE line fixable, the module rewritten)


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
    checked = kernel._check_length
    if DERIVED:
        kernel._check_length = _derived_check_length(checked)
        _load_graph_sim(folder)
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
        kernel._check_length = checked
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
    if v.expect == "derived" and after_src == v.source:
        out.problems.append("expected fixed with --lengths derived, but apply left the module unchanged")
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
        elif v.expect == "derived" and not all(str(s.status) == "fixable" for s in here):
            out.problems.append(f"line {line}: expected fixable with --lengths derived, got "
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


# -- `apply --lengths derived` (issue 39) -----------------------------------------------------------
# The module the engine loads the rule's derived lengths from (rules.load imports the rules as
# topk_migrate.codemods.*), and the name the checkout's codemods/ folder has when imported directly.
DERIVED_MODULES = ("topk_migrate.codemods.pass_topk_length.derived", "codemods.pass_topk_length.derived")
DERIVED = False  # inside derived_mode(): the kernel's own contract is checked (_derived_check_length), and a
#                 program's simulated CUDA graph replays the step's tensor work (GRAPH_SIM_REPLAYED)


def derived_engine(folder: Path):
    """topk-migrate apply --lengths derived over the variant's folder, in-process: (sites, file errors)."""
    from topk_migrate import api

    report = api.run([str(folder)], write=True, lengths="derived")
    return report.sites, [f"{f.path}: {f.error}" for f in report.errors]


@contextlib.contextmanager
def derived_mode(min_rows: Optional[int] = 0):
    """Runs as `apply --lengths derived` needs them checked (engine: derived_engine).

    min_rows: the derived lengths' MIN_ROWS while inside (None: left as it is). The harness's calls have
    ROWS (8) rows, so at the default (thousands of rows) the rewrite passes None and nothing derived
    reaches the kernel; it is lowered in the module the engine reads it from (and in any other copy loaded).

    The kernel's contract is checked as the real kernel reads topk_length: it stops row i after its
    first topk_length[i] slots and skips the -1 slots before that. The derived lengths (last valid
    slot + 1) are right for indices with -1 gaps, which the stub's own check (front-packed counts,
    what metadata lengths are) calls wrong; see _derived_check_length."""
    import importlib

    global DERIVED
    importlib.import_module(DERIVED_MODULES[0])
    modules = [sys.modules[m] for m in DERIVED_MODULES if sys.modules.get(m) is not None]
    saved = [(m, m.MIN_ROWS) for m in modules]
    was = DERIVED
    DERIVED = True
    try:
        if min_rows is not None:
            for m in modules:
                m.MIN_ROWS = min_rows
        yield
    finally:
        DERIVED = was
        for m, rows in saved:
            m.MIN_ROWS = rows


def _derived_check_length(stub_check):
    """The stub's check of topk_length (type, dtype, rows, range), with its front-packed test replaced by
    the kernel's own: every valid (>= 0) index of row i lies in its first topk_length[i] slots."""
    def check(call, q, indices, topk_length):
        try:
            stub_check(call, q, indices, topk_length)
        finally:
            call.violations[:] = [x for x in call.violations if not x.startswith("wrong length")]
        valid = indices[:, 0, :] >= 0
        slots = torch.arange(valid.shape[1])[None, :]
        cut = (valid & (slots >= topk_length[:, None].long())).any(dim=-1).nonzero().flatten().tolist()
        if cut:
            last = torch.where(valid, slots + 1, torch.zeros_like(slots)).amax(dim=-1)
            call.violations.append(
                f"wrong length on rows {cut}: topk_length {topk_length[cut].tolist()} but the last valid index "
                f"is in slot {(last[cut] - 1).tolist()} (the kernel would skip valid indices past the length)")
    return check


# The generated programs' simulated CUDA graph (grammar.GRAPH_SIM) replays each launch with the topk_length
# object captured for it. Where that object was made by the captured step itself (the lengths derived at
# the call), a real graph replays the ops that made it too, into the same memory: each replay's launch
# reads what the replayed step computes. In derived_mode this Graph, loaded as the program's adv_graph_sim,
# does that; an object the step did not make (the metadata's tensors) is read as captured, as before.
GRAPH_SIM_REPLAYED = '''"""grammar.GRAPH_SIM, where tensors made during capture are made again by each replay."""
import sys

import torch
from torch.overrides import TorchFunctionMode


class _Made(TorchFunctionMode):
    """Every tensor a torch operation returns while the step is captured."""

    def __init__(self):
        super().__init__()
        self.made = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if isinstance(out, torch.Tensor):
            self.made.append(out)
        return out


class Graph:
    def __init__(self, step):
        self.step, self.captured = step, []  # per launch: (topk_length object, made by the step)

    def capture(self):
        stub = sys.modules["sgl_kernel.flash_mla"]
        real = stub._attend
        made = _Made()

        def record(q, kv, indices, sm_scale, d_v, topk_length):
            self.captured.append((topk_length, any(t is topk_length for t in made.made)))
            return real(q, kv, indices, sm_scale, d_v, topk_length)

        check = stub._check_length  # a warm-up: its output is discarded, as a real capture's is
        stub._attend, stub._check_length = record, (lambda *a: None)
        try:
            with made:
                return self.step()
        finally:
            stub._attend, stub._check_length = real, check
            made.made.clear()

    def replay(self):
        stub = sys.modules["sgl_kernel.flash_mla"]
        check, attend = stub._check_length, stub._attend
        launch = [0]

        def replay_attend(q, kv, indices, sm_scale, d_v, topk_length):
            tl, made = self.captured[launch[0]] if launch[0] < len(self.captured) else (None, False)
            launch[0] += 1
            if made:
                tl = topk_length  # the replayed ops write it where the launch reads it
            if tl is not None:
                check(stub.CALLS[-1], q, indices, tl)
            return attend(q, kv, indices, sm_scale, d_v, tl)

        stub._check_length, stub._attend = (lambda *a: None), replay_attend
        try:
            return self.step()
        finally:
            stub._check_length, stub._attend = check, attend
'''


def _load_graph_sim(folder: Path) -> None:
    """A program's adv_graph_sim, as GRAPH_SIM_REPLAYED (forgotten with the folder's other modules)."""
    path = folder / "adv_graph_sim.py"
    if not path.exists():
        return
    module = types.ModuleType("adv_graph_sim")
    module.__file__ = str(path)
    exec(compile(GRAPH_SIM_REPLAYED, str(path), "exec"), module.__dict__)
    sys.modules["adv_graph_sim"] = module
