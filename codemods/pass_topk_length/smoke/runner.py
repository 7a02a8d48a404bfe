"""The smoke pipeline: patch with the real codemod, run both versions against
the kernel, and report every check with its numbers."""
from __future__ import annotations

import ast
import importlib.util
import inspect
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional, Tuple

import torch

from topk_migrate.api import migrate_source
from topk_migrate.config import config_for
from topk_migrate.escape import printable

from . import contract, e2e, feed, isolate
from . import emitters as em
from . import lengths as dl
from .emitters import Emitters, injected_emitters, load_emitters
from .kernel import Kernel, injected, load_kernel
from .measure import hot_path_costs, paired_timing
from .reference import sparse_attention_reference
from .report import Report

D_V = 512


# -- small helpers -------------------------------------------------------


def default_example() -> Path:
    """The bundled example backend (installed or in a source checkout)."""
    places = []
    try:
        spec = importlib.util.find_spec("topk_migrate.fixtures")
        places = list(spec.submodule_search_locations or []) if spec else []
    except (ImportError, ValueError):
        pass
    places.append(str(Path(__file__).resolve().parents[3] / "fixtures"))  # <root>/codemods/<rule>/smoke/: <root>/fixtures
    for place in places:
        p = Path(place) / "examples" / "dsa_backend.py"
        if p.is_file():
            return p
    raise FileNotFoundError("the bundled example backend (fixtures/examples/dsa_backend.py) is missing")


def rewrite(source: str, filename: str, pin: str, lengths: str = "reference"):
    """The codemod's own rewrite (never a hand patch). lengths="derived": the derived lengths at every
    site whose kernel takes them ("derived-everywhere"), the reference fix's sites included: on a real
    engine the reference fix is provable, and it is the derived shape that is on trial."""
    m = migrate_source(source, path=filename, kernel=pin, lengths="derived-everywhere" if lengths == "derived" else lengths)
    return m.new_source, list(m.sites)


def _int_view(t: torch.Tensor) -> torch.Tensor:
    kind = {2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()]
    return t.contiguous().view(kind)


def bit_diff(a: torch.Tensor, b: torch.Tensor) -> Tuple[int, float]:
    """(elements whose bits differ, max |a-b| over finite pairs); -1 on shape/dtype mismatch."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return -1, math.inf
    diff = _int_view(a) != _int_view(b)
    n = int(diff.sum())
    if not n:
        return 0, 0.0
    fa, fb = a.float()[diff], b.float()[diff]
    fin = torch.isfinite(fa) & torch.isfinite(fb)
    return n, float((fa[fin] - fb[fin]).abs().max()) if fin.any() else math.inf


def compare_results(old, new) -> Tuple[bool, dict]:
    """Bitwise comparison of kernel results (out, max_logits, lse) or outputs."""
    names = ("out", "max_logits", "lse")
    old = old if isinstance(old, tuple) else (old,)
    new = new if isinstance(new, tuple) else (new,)
    stats = {}
    for name, a, b in zip(names, old, new):
        n, m = bit_diff(a, b)
        stats[name] = {"differing": n, "max_abs": m}
    return all(s["differing"] == 0 for s in stats.values()), stats


def _fmt_diff(stats: dict) -> str:
    bad = [f"{k}: {v['differing']} differ (max {v['max_abs']:.3g})" for k, v in stats.items() if v["differing"]]
    return "; ".join(bad) if bad else "identical: " + ", ".join(stats)


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


# -- checks ----------------------------------------------------------------


def check_kernel(report: Report, kernel: Kernel, device: str) -> bool:
    """The importable kernel must take topk_length, live."""
    if not kernel.accepts_topk_length():
        report.add("kernel.accepts_topk_length", False, f"{kernel.name}: flash_mla_sparse_fwd has no topk_length parameter; stopping")
        return False
    c = contract.make_case("probe", [1, 64, 65, 0], [1, 64, 200, 0], 128, 256, 64, device)
    idx = c.indices.unsqueeze(1)
    try:
        full = kernel.fn(c.q, c.kv, idx, c.sm_scale, D_V, None, None)
        short = kernel.fn(c.q, c.kv, idx, c.sm_scale, D_V, None, c.topk_length)
        _sync(device)
    except Exception as e:  # the kernel's own rejection, reported verbatim
        report.add("kernel.accepts_topk_length", False, f"{kernel.name} rejected topk_length: {e}; stopping")
        return False
    same, stats = compare_results(tuple(full), tuple(short))
    report.add(
        "kernel.accepts_topk_length",
        same,
        f"{kernel.name}: call with topk_length runs" + ("" if same else f" but changes the result ({_fmt_diff(stats)})"),
        **stats,
    )
    return same


def check_numerics(report: Report, kernel: Kernel, device: str, sm_major: int) -> None:
    """The real kernel against the torch reference, within bf16 tolerance."""
    if device != "cuda":
        report.skip("kernel.numerics_vs_reference", "cpu: the reference is the kernel")
        return
    worst = {"out_rel_l2": 0.0, "lse_abs": 0.0, "max_logits_abs": 0.0, "inf_mismatch": 0, "lse_abs_if_natural": 0.0}
    for heads in (64, 128):
        lens = [min(i + 1, 512) for i in range(600)] + [0] * 8
        c = contract.make_case("numerics", lens, [min(i + 1, 600) for i in range(600)] + [0] * 8, 512, 640, heads, device, seed=heads)
        idx = c.indices.unsqueeze(1)
        got = kernel.fn(c.q, c.kv, idx, c.sm_scale, D_V, None, c.topk_length)
        ref = sparse_attention_reference(c.q, c.kv, idx, c.sm_scale, D_V, None, c.topk_length, head_multiple=0)
        o, r = got[0].float(), ref[0].float()
        worst["out_rel_l2"] = max(worst["out_rel_l2"], float((o - r).norm() / r.norm().clamp(min=1e-30)))
        for k, g, w in (("lse_abs", got[2], ref[2]), ("max_logits_abs", got[1], ref[1])):
            fin = torch.isfinite(w)
            worst["inf_mismatch"] += int((torch.isfinite(g) != fin).sum()) + int((g[~fin] != w[~fin]).sum())
            if fin.any():
                worst[k] = max(worst[k], float((g[fin] - w[fin]).abs().max()))
                if k == "lse_abs":  # diagnosis only: would a natural-log convention fit better?
                    nat = float((g[fin] - w[fin] * math.log(2)).abs().max())
                    worst["lse_abs_if_natural"] = max(worst["lse_abs_if_natural"], nat)
    ok = worst["out_rel_l2"] < 1e-2 and worst["lse_abs"] < 1e-3 and worst["max_logits_abs"] < 1e-3 and not worst["inf_mismatch"]
    detail = (
        f"out rel-L2 {worst['out_rel_l2']:.2e} (<1e-2), |dlse| {worst['lse_abs']:.2e}, "
        f"|dmax_logits| {worst['max_logits_abs']:.2e} (<1e-3), empty-row inf mismatches {worst['inf_mismatch']}"
    )
    if worst["lse_abs"] >= 1e-3 and worst["lse_abs_if_natural"] < 1e-3:
        detail += "; this kernel's lse is natural-log, the reference's base 2"
    report.add("kernel.numerics_vs_reference", ok, detail, **worst)


def already_compliant(original: str, patched: str, sites) -> bool:
    """Nothing to migrate: every kernel call already passes topk_length."""
    return original == patched and bool(sites) and all(str(s.status) == "compliant" for s in sites)


def check_rewrite(report: Report, original: str, patched: str, qualname: str, sites, patched_helper) -> bool:
    """The tool changed the helper and every caller passes topk_length."""
    params = inspect.signature(patched_helper).parameters
    callers = isolate.caller_arguments(patched, qualname)
    statuses = sorted({str(s.status) for s in sites})
    has_param = "topk_length" in params
    missing = [k for k, v in callers.items() if v is None]
    ok = has_param and original != patched and callers and not missing
    detail = (
        f"{qualname}: topk_length param {'added' if has_param else 'MISSING'}; callers "
        + ", ".join(f"{k} -> {v}" for k, v in callers.items())
        + f"; sites {statuses}"
    )
    report.add("rewrite.applied", bool(ok), detail, callers=callers, sites=[s.to_dict() for s in sites])
    return bool(ok)


def check_rewrite_derived(report: Report, original: str, patched: str, qualname: str, sites, min_rows: int) -> bool:
    """Derived mode: the tool changed the kernel call itself, passing the lengths derived from its own
    indices from min_rows rows (the helper's signature and its callers stay as they were)."""
    derived = [s for s in sites if str(s.status) == "fixable" and "derived" in s.reason]
    lines = [line.strip() for line in patched.splitlines() if line.strip().startswith("topk_length=")]
    threshold = any(f".shape[0] >= {min_rows} and " in line for line in lines)
    ok = original != patched and bool(derived) and threshold
    detail = (f"{qualname}: {len(derived)} of {len(sites)} kernel call(s) pass topk_length derived from their indices"
              + (f" from {min_rows} rows" if threshold else f"; no derived topk_length from {min_rows} rows in the rewrite")
              + f"; sites {sorted({str(s.status) for s in sites})}")
    report.add("rewrite.applied", ok, detail, expressions=lines, sites=[s.to_dict() for s in sites])
    return ok


def _paired_calls(report, kernel, name, run_old, run_new):
    """Run the unpatched then the patched version, each with the kernel call it made;
    None, with `name` failed, if either raises."""
    kernel.take_calls()
    try:
        out_old = run_old()
        call_old = kernel.take_calls()[-1]
        out_new = run_new()
        call_new = kernel.take_calls()[-1]
    except Exception as e:
        report.add(name, False, f"raised {type(e).__name__}: {e}")
        return None
    return out_old, call_old, out_new, call_new


def _helper_call(helper, c, topk_length="absent"):
    kwargs = dict(q_all=c.q, kv_cache=c.kv, v_head_dim=D_V, page_table_1=c.indices, sm_scale=c.sm_scale)
    if topk_length != "absent":
        kwargs["topk_length"] = topk_length
    return helper(**kwargs)


def check_emitter_contract(report, name: str, indices, topk_length, visible, s_kv: int, topk: int, where: str) -> bool:
    """Real emitter output against the contract: the engine's clipped seqlens are
    min(length, topk) (0 on pad rows), and each row holds exactly that many
    distinct valid indices, front-packed, -1 after."""
    want = visible.long().clamp(min=0, max=topk).cpu()
    clip_ok = torch.equal(topk_length.long().cpu(), want)
    bad = contract.check_front_packed(indices, topk_length, s_kv) + contract.check_distinct(indices)
    rows = indices.shape[0]
    lens = want.tolist()
    shape = (f"{rows} rows, counts {min(lens, default=0)}..{max(lens, default=0)} "
             f"({sum(n == 0 for n in lens)} empty, {sum(v > topk for v in visible.tolist())} longer than topk)")
    detail = f"{where}: {shape}"
    if not clip_ok:
        diff = (topk_length.long().cpu() != want).nonzero().flatten().tolist()
        detail += f"; engine clipped seqlens != min(length, topk) on rows {diff[:6]}"
    if bad:
        detail += f"; {len(bad)} row(s) break the contract: " + "; ".join(f"row {v.row}: {v.why}" for v in bad[:4])
    else:
        detail += "; front-packed, distinct, count == clipped seqlens"
    report.add(name, clip_ok and not bad, detail, violations=len(bad), rows=[v.row for v in bad[:50]], clip_ok=clip_ok)
    return clip_ok and not bad


def fed_cases(report, emitters: Emitters, drive, engine, device, topk, heads, small, only=None, checked=True, extra=()) -> list:
    """Every batch (feed.batches, then `extra`) through every emitter the engine's top-k path uses; each
    output's contract is checked where it is made (unless `checked` is False: derived mode, which does
    not rely on it)."""
    cases = []
    emitters.record = False  # each output is checked here, from the case itself
    for i, b in enumerate(feed.batches(topk, heads, small) + list(extra)):
        if only is not None and b.name not in only:
            continue
        for name in drive:
            if not feed.applies(name, b):
                continue
            try:
                c = feed.feed(emitters, name, b, topk, engine, device, seed=1000 + i)
            except Exception as e:
                report.add(f"contract.{name}.{b.name}", False, f"emitter run raised {type(e).__name__}: {e}")
                continue
            if checked:
                where = f"{b.mode}, {emitters.source}"
                check_emitter_contract(report, f"contract.{c.name}", c.indices, c.topk_length, c.visible, c.kv.shape[0], topk, where)
            cases.append(c)
    emitters.record = True
    return cases


def check_helper_matrix(report, kernel, old, new, cases, device) -> list:
    """Each emitter-fed case: unpatched vs patched helper, bitwise, and the
    patched helper really hands topk_length to the kernel. Returns the kernel calls."""
    calls = []
    for c in cases:
        pair = _paired_calls(report, kernel, f"bitwise.{c.name}",
                             lambda c=c: _helper_call(old, c), lambda c=c: _helper_call(new, c, c.topk_length))
        if pair is None:
            continue
        out_old, call_old, out_new, call_new = pair
        calls.append(call_new)
        same_k, stats = compare_results(call_old.result, call_new.result)
        same_o, ostats = compare_results(out_old, out_new)
        forwarded = call_new.topk_length is not None and torch.equal(call_new.topk_length, c.topk_length)
        ok = same_k and same_o and forwarded
        rows, h = c.q.shape[:2]
        detail = f"s_q={rows} h={h} ideal {contract.ideal_ratio(c.topk_length, c.indices.shape[1]):.2f}x: " + _fmt_diff(stats)
        if not forwarded:
            detail += "; topk_length NOT passed to the kernel"
        report.add(f"bitwise.{c.name}", ok, detail, kernel=stats, helper_out=ostats["out"], forwarded=forwarded)
    return calls


def _check_derived_pair(report, name: str, pair, min_rows: int, where: str) -> int:
    """One derived-mode pair: unpatched vs patched bitwise (the kernel's results and the helper's out),
    and the kernel read exactly the blocks holding a valid slot (None below min_rows rows). Returns the call's row
    count (not the call: its results are large on the GPU, and only the count is kept)."""
    out_old, call_old, out_new, call_new = pair
    same_k, stats = compare_results(call_old.result, call_new.result)
    same_o, ostats = compare_results(out_old, out_new)
    lengths_ok, got = dl.verdict(call_new, min_rows)
    report.add(name, same_k and same_o and lengths_ok, f"{where}: {_fmt_diff(stats)}; {got}",
               kernel=stats, helper_out=ostats["out"], lengths_ok=lengths_ok)
    return call_new.indices.shape[0]


def check_derived_matrix(report, kernel, old, new, cases, min_rows: int) -> list:
    """Derived mode: each emitter-fed case through the unpatched and the patched helper, both called as
    before (the patched one derives the lengths at its kernel call). Returns the kernel calls' row counts."""
    rows = []
    for c in cases:
        name = f"bitwise.{c.name}"
        pair = _paired_calls(report, kernel, name, lambda c=c: _helper_call(old, c), lambda c=c: _helper_call(new, c))
        if pair is not None:
            rows.append(_check_derived_pair(report, name, pair, min_rows, f"s_q={c.q.shape[0]} h={c.q.shape[1]}"))
    return rows


def check_derived_reach(report, rows: list, min_rows: int) -> None:
    """The kernel calls (their row counts) reach MIN_ROWS: without one at or above it the derived lengths never ran."""
    above = sum(n >= min_rows for n in rows)
    report.add("derived.min_rows_reached", above > 0,
               f"{above} kernel call(s) at >= MIN_ROWS {min_rows} rows (derived lengths), {len(rows) - above} below (None)",
               above=above, below=len(rows) - above)


def check_guard(report, kernel, old, new, case: contract.Case) -> None:
    """A topk_length whose row count disagrees with q must give the full-width result."""
    kernel.take_calls()
    want = _helper_call(old, case)
    want_k = kernel.take_calls()[-1].result
    rows = case.q.shape[0]
    details, ok = [], True
    for n in (rows - 1, rows + 1):
        bogus = torch.zeros(n, dtype=torch.int32, device=case.q.device)  # would empty every row if used
        try:
            got = _helper_call(new, case, bogus)
            call = kernel.take_calls()[-1]
        except Exception as e:
            ok = False
            details.append(f"{n} rows: raised {type(e).__name__}: {e}")
            continue
        same, stats = compare_results(want_k, call.result)
        same_o, _ = compare_results(want, got)
        dropped = call.topk_length is None
        ok &= same and same_o and dropped
        details.append(f"{n} rows vs {rows}: " + ("full width, identical" if same and same_o and dropped else f"kernel got {'None' if dropped else 'the bogus lengths'}; {_fmt_diff(stats)}"))
    report.add("guard.row_mismatch", ok, "; ".join(details))


def check_contract(report, calls, source: str) -> None:
    """Kernel-boundary indices are front-packed per row for its topk_length."""
    bad = []
    for i, call in enumerate(calls):
        for v in contract.check_front_packed(call.indices, call.topk_length, call.s_kv):
            bad.append((i, v.row, v.why))
    if bad:
        shown = "; ".join(f"call {i} row {r}: {why}" for i, r, why in bad[:6])
        report.add("contract.front_packed", False, f"{len(bad)} row(s) break the contract ({source}): {shown}", violations=len(bad), rows=[(i, r) for i, r, _ in bad[:50]])
    else:
        rows = sum(c.indices.shape[0] for c in calls)
        report.add("contract.front_packed", True, f"{rows} rows in {len(calls)} kernel calls front-packed ({source})")


def check_costs(report, kernel, device, old_fn: Callable, new_fn: Callable, where: str, derived: bool = False) -> None:
    """The patched hot path adds no host sync and no allocating op (derived mode: it allocates by design,
    a few small kernels per call that bench/derived_envelope.py prices; reported, not judged)."""
    a = hot_path_costs(old_fn, kernel, device)
    b = hot_path_costs(new_fn, kernel, device)
    added = b.ops - a.ops
    allocating = {k: v for k, v in added.items() if k not in b.views}
    ok = not allocating and (b.allocations is None or b.allocations <= a.allocations)
    detail = (
        f"{where}: ops {sum(a.ops.values())} -> {sum(b.ops.values())}"
        + (f", added {dict(allocating)}" if allocating else ", no allocating op added")
        + ("" if b.allocations is None else f"; allocator requests {a.allocations} -> {b.allocations}")
    )
    data = dict(added_ops=dict(added), allocations=[a.allocations, b.allocations])
    if derived:
        report.info("hot_path.no_allocation", detail + "; derived mode: the lengths are computed at the call, by design", **data)
    else:
        report.add("hot_path.no_allocation", ok, detail, **data)
    if device != "cuda":
        report.skip("hot_path.no_host_sync", "cpu: host syncs only exist on cuda")
    else:
        report.add(
            "hot_path.no_host_sync",
            b.syncs <= a.syncs,
            f"{where}: syncs {a.syncs} -> {b.syncs} (set_sync_debug_mode, after a discarded first use)",
            syncs=[a.syncs, b.syncs],
            messages=[a.sync_messages, b.sync_messages],
        )


def _capture(fn: Callable):
    """Capture fn() in a CUDA graph (after a side-stream warm-up); returns (graph, static out)."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(2):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = fn()
    return g, out


def check_graph_helper(report, kernel, emitters: Emitters, emitter, new, engine, device, topk, heads) -> None:
    """Decode step = real emitter + patched helper, captured once; scores,
    lengths, page table and clipped seqlens updated in place; replay == eager."""
    if device != "cuda":
        report.skip("cuda_graph.replay", "cpu: needs CUDA graphs")
        return
    bs, ctx = 8, topk * 3
    fill = feed.Batch("capture", "decode", [0] * bs, [1] * bs, heads)  # lengths 1, like a graph's fill value
    replays = [
        feed.Batch("replay_short", "decode", [2, 63, 64, 199, topk - 1, topk + 6, 0, -1], [1] * bs, heads),
        feed.Batch("replay_long", "decode", [3 * topk - 1, topk, 899, 4, 2 * topk, 76, 127, 128], [1] * bs, heads),
    ]
    gen = torch.Generator(device=device).manual_seed(21)
    kv = (torch.randn((bs * ctx + 8, 1, 576), generator=gen, device=device) / 4).to(torch.bfloat16)
    _table = torch.randperm(bs * ctx, generator=gen, device=device).to(torch.int32).view(bs, ctx)  # drawn: keeps gen's sequence
    cu = torch.arange(bs + 1, dtype=torch.int32, device=device)
    fn = emitters.wrapped(emitter)

    def inputs(b):
        vis = torch.tensor(b.visible, dtype=torch.int32, device=device)
        score = torch.randn((bs, ctx), generator=gen, device=device)
        return dict(score=score, lengths=vis, table=torch.randperm(bs * ctx, generator=gen, device=device).to(torch.int32).view(bs, ctx),
                    q=(torch.randn((bs, heads, 576), generator=gen, device=device) / 4).to(torch.bfloat16),
                    clipped=engine.clip(vis, topk).to(torch.int32))

    def step(x):
        if emitter == "fast_topk_v2":
            pos = fn(x["score"], x["lengths"], topk)
            idx = x["table"].gather(1, pos.clamp(min=0).long()).masked_fill(pos < 0, -1)
        elif emitter == "fast_topk_transform_fused":
            idx = fn(x["score"], x["lengths"], x["table"], cu, topk)
        else:  # ragged: the pool itself is the ragged kv of requests laid end to end
            off = torch.arange(bs, dtype=torch.int32, device=device) * ctx
            idx = fn(x["score"], x["lengths"], off, topk)
        return _helper_call(new, feed.Fed("", emitter, fill, x["q"], kv, idx, x["clipped"], x["lengths"], 576 ** -0.5), x["clipped"])

    static = inputs(fill)
    kernel.record = emitters.record = False
    try:
        g, out = _capture(lambda: step(static))
        graph_topk = emitters.last_out  # the emitter's output buffer inside the graph
        results, notes = [], []
        for b in replays:
            fresh = inputs(b)
            for k, v in fresh.items():
                static[k].copy_(v)
            g.replay()
            emitters.pin([em.EmitterCall(emitter, graph_topk.clone(), fresh["lengths"], fresh["score"])])
            try:
                results.append(compare_results(out.clone(), step(fresh)))
            finally:
                notes.append(emitters.unpin())
        torch.cuda.synchronize()
    finally:
        kernel.record = emitters.record = True
    ok = all(r[0] for r in results)
    note = "; ".join(n for n in notes if n)
    report.add("cuda_graph.replay", ok, f"{emitter} + patched helper captured once (lengths 1), replayed twice after in-place updates: "
               + "; ".join(_fmt_diff(r[1]) for r in results) + (f" ({note})" if note else ""))


def _decode_topk(fn, emitter, score, lengths, table, cu, topk):
    """The emitter in decode layout (one page-table row per q row, page size 1): kv-pool slots, -1 after;
    the ragged transform with offset 0 (each row's ragged kv is the whole pool)."""
    if emitter == "fast_topk_v2":
        pos = fn(score, lengths, topk)
        return table.gather(1, pos.clamp(min=0).long()).masked_fill(pos < 0, -1)
    if emitter == "fast_topk_transform_fused":
        return fn(score, lengths, table, cu, topk)
    return fn(score, lengths, torch.zeros_like(lengths), topk)


def _replay_vs_eager(kernel, emitters: Emitters, emitter, step, static: dict, replays: list, min_rows: int) -> list:
    """Capture step(static) once; per replay: its inputs copied in place, replay, then step eagerly on them
    with the emitter pinned to the graph's output. [(same, diff, the eager kernel call's lengths verdict, note)]"""
    kernel.record = emitters.record = False
    try:
        g, out = _capture(lambda: step(static))
        graph_topk = emitters.last_out  # the emitter's output buffer inside the graph
        results = []
        for fresh in replays:
            for k, v in fresh.items():
                static[k].copy_(v)
            g.replay()
            emitters.pin([em.EmitterCall(emitter, graph_topk.clone(), fresh["lengths"], fresh["score"])])
            kernel.take_calls()
            kernel.record = True
            try:
                eager = step(fresh)
            finally:
                kernel.record = False
                note = emitters.unpin()
            same, stats = compare_results(out.clone(), eager)
            results.append((same, stats, dl.verdict(kernel.take_calls()[-1], min_rows), note))
        torch.cuda.synchronize()
    finally:
        kernel.record = emitters.record = True
    return results


def check_graph_derived(report, kernel, emitters: Emitters, emitter, new, device, topk, heads, min_rows: int) -> None:
    """Derived mode: the real emitter + patched helper captured once at MIN_ROWS q rows (the graph holds the
    derived branch), every row of length 1 like a graph's fill value; replayed on random lengths (0 to
    3 * topk) written in place: replay == eager, bitwise, the eager call's lengths right. Then the same with
    the emitter's output scattered inside the graph: the lengths derived in the graph follow its buffer."""
    if device != "cuda":
        report.skip("cuda_graph.derived", "cpu: needs CUDA graphs")
        return
    graph_derived(report, kernel, emitters, emitter, new, device, topk, heads, min_rows)


def graph_derived(report, kernel, emitters: Emitters, emitter, new, device, topk, heads, min_rows: int) -> None:
    """check_graph_derived's body, on any device whose _capture works (a test runs it on cpu with a stand-in)."""
    rows, ctx = min_rows, 3 * topk
    gen = torch.Generator(device=device).manual_seed(23)
    kv = (torch.randn((ctx + 8, 1, 576), generator=gen, device=device) / 4).to(torch.bfloat16)
    table = torch.rand((rows, ctx), generator=gen, device=device).argsort(dim=1).to(torch.int32)  # each row: the pool, its own order
    cu = torch.arange(rows + 1, dtype=torch.int32, device=device)
    fn = emitters.wrapped(emitter)

    def inputs(lengths):
        return dict(score=torch.randn((rows, ctx), generator=gen, device=device), lengths=lengths.to(torch.int32),
                    q=(torch.randn((rows, heads, 576), generator=gen, device=device) / 4).to(torch.bfloat16))

    details, ok = [], True
    for scatter in (False, True):
        def step(x, scatter=scatter):
            idx = _decode_topk(fn, emitter, x["score"], x["lengths"], table, cu, topk)
            idx = em.scatter_rows(idx) if scatter else idx
            return _helper_call(new, feed.Fed("", emitter, None, x["q"], kv, idx, x["lengths"], x["lengths"], 576 ** -0.5))

        replays = [inputs(torch.randint(0, ctx + 1, (rows,), generator=gen, device=device)) for _ in range(2)]
        results = _replay_vs_eager(kernel, emitters, emitter, step, inputs(torch.ones(rows, device=device)), replays, min_rows)
        ok &= all(same and verdict[0] for same, _, verdict, _ in results)
        details.append(("scattered: " if scatter else "front-packed: ") + "; ".join(
            _fmt_diff(stats) + f", eager {verdict[1]}" + (f" ({note})" if note else "") for _, stats, verdict, note in results))
    report.add("cuda_graph.derived", ok, f"{emitter} + patched helper at {rows} rows captured once (lengths 1), "
               "replayed twice after in-place updates, " + " | ".join(details))


# -- the runnable example: end to end ------------------------------------


def _e2e_pair(report, kernel, emitters: Emitters, old: e2e.Driver, new: e2e.Driver, sc: e2e.Scenario, inp: e2e.Inputs, name: str):
    """The unpatched then the patched backend on one scenario, the patched run's emitter calls pinned to
    the unpatched run's outputs (same inputs): (_paired_calls' result, the pinning's note)."""
    emitters.take_calls()
    notes = []

    def run_new():
        emitters.pin(emitters.take_calls())
        try:
            return new.run(sc, inp)[1]
        finally:
            notes.append(emitters.unpin())

    pair = _paired_calls(report, kernel, name, lambda: old.run(sc, inp)[1], run_new)
    return pair, (notes[0] if notes else "")


def check_e2e(report, kernel, emitters: Emitters, old_mod, new_mod, device, sm_major, topk, heads, small, only=None) -> list:
    """Each scenario through the backend's own metadata, top-k emitter and forward
    path; the emitter's output is held to the contract with the metadata the
    patched backend handed the kernel."""
    old, new = e2e.Driver(old_mod, topk, device, sm_major), e2e.Driver(new_mod, topk, device, sm_major)
    calls = []
    for i, sc in enumerate(e2e.scenarios(topk, heads, small)):
        if only is not None and sc.name not in only:
            continue
        inp = e2e.make_inputs(sc, device, seed=100 + i)
        pair, note = _e2e_pair(report, kernel, emitters, old, new, sc, inp, f"bitwise.{sc.name}")
        if pair is None:
            continue
        out_old, call_old, out_new, call_new = pair
        calls.append(call_new)
        emitted = emitters.take_calls()
        if emitted and call_new.topk_length is not None:
            e = emitted[-1]
            rows = e.out.shape[0]
            check_emitter_contract(report, f"contract.{e.name}.{sc.name}", e.out, call_new.topk_length[:rows],
                                   e.lengths, call_new.s_kv, topk, f"{sc.mode.lower()}, the backend's own top-k call, {emitters.source}")
        elif not emitted:
            report.add(f"contract.{sc.name}", False, "the backend's top-k path called no sgl_kernel emitter")
        same_k, stats = compare_results(call_old.result, call_new.result)
        same_o, ostats = compare_results(out_old, out_new)
        forwarded = call_new.topk_length is not None
        detail = f"{sc.mode.lower()} rows={call_new.indices.shape[0]} h={sc.heads}: " + _fmt_diff(stats)
        if note:
            detail += f" ({note})"
        if forwarded:
            detail += f"; ideal {contract.ideal_ratio(call_new.topk_length, topk):.2f}x"
        else:
            detail += "; topk_length NOT passed to the kernel"
        report.add(f"bitwise.{sc.name}", same_k and same_o and forwarded, detail, kernel=stats, helper_out=ostats["out"], forwarded=forwarded)
    return calls


def check_e2e_derived(report, kernel, emitters: Emitters, mods, device, sm_major, topk, heads, small, only, min_rows: int) -> list:
    """Derived mode: each scenario through the backend's own metadata, top-k emitter and forward path,
    unpatched vs patched; then again with the emitters' output scattered (bitwise.scattered.*), the
    layout the derived lengths must stand. Returns the kernel calls' row counts."""
    old, new = (e2e.Driver(m, topk, device, sm_major) for m in mods)
    rows, saved = [], emitters.fault
    try:
        for tag, fault in (("", saved), ("scattered.", em.SCATTER)):
            emitters.fault = fault
            for i, sc in enumerate(e2e.scenarios(topk, heads, small) + dl.threshold_scenarios(min_rows, topk, heads)):
                if only is not None and sc.name not in only:
                    continue
                name = f"bitwise.{tag}{sc.name}"
                pair, note = _e2e_pair(report, kernel, emitters, old, new, sc, e2e.make_inputs(sc, device, seed=100 + i), name)
                if pair is not None:
                    where = f"{sc.mode.lower()} h={sc.heads}" + (f" ({note})" if note else "")
                    rows.append(_check_derived_pair(report, name, pair, min_rows, where))
    finally:
        emitters.fault = saved
    return rows


def check_graph_e2e(report, kernel, emitters: Emitters, new_mod, device, sm_major, topk, heads) -> None:
    """Patched decode step captured once; metadata updated in place; replay == eager."""
    if device != "cuda":
        report.skip("cuda_graph.replay", "cpu: needs CUDA graphs")
        return
    drv = e2e.Driver(new_mod, topk, device, sm_major)
    bs = 8
    capture = e2e.Scenario("capture", "DECODE", [1] * bs, [1] * bs, heads)  # like a graph fill value
    replays = [
        e2e.Scenario("replay_short", "DECODE", [3, 64, 65, 200, topk, topk + 7, 1, 0], [1] * bs, heads),
        e2e.Scenario("replay_long", "DECODE", [3 * topk, topk + 1, 900, 5, 2 * topk, 77, 128, 129], [1] * bs, heads),
    ]
    max_ctx = 3 * topk
    inp0 = e2e.make_inputs(e2e.Scenario("pool", "DECODE", [max_ctx] * bs, [1] * bs, heads), device, seed=300)
    static = e2e.Inputs(inp0.q.clone(), inp0.scores.clone(), inp0.kv_pool, inp0.req_to_token.clone())
    backend = drv.backend(heads, inp0.kv_pool)
    kernel.record = emitters.record = False
    try:
        backend.init_forward_metadata_capture_cuda_graph(drv.batch(capture, static))
        g, out = _capture(lambda: drv.step(backend, capture, static))
        graph_topk = emitters.last_out  # the emitter's output buffer inside the graph
        results, notes = [], []
        for k, sc in enumerate(replays):
            fresh = e2e.make_inputs(e2e.Scenario("pool", "DECODE", [max_ctx] * bs, [1] * bs, heads), device, seed=301 + k)
            static.q.copy_(fresh.q)
            static.scores.copy_(fresh.scores)
            static.req_to_token.copy_(fresh.req_to_token)
            backend.init_forward_metadata_replay_cuda_graph(drv.batch(sc, static))
            g.replay()
            eager_backend = drv.backend(heads, inp0.kv_pool)
            eager_inp = e2e.Inputs(fresh.q, fresh.scores, inp0.kv_pool, fresh.req_to_token)
            eager_backend.init_forward_metadata(drv.batch(sc, eager_inp))
            lengths = eager_backend.forward_metadata.dsa_seqlens_expanded[: fresh.scores.shape[0]]
            emitters.pin([em.EmitterCall("", graph_topk.clone(), lengths.clone(), fresh.scores)])
            try:
                eager = drv.step(eager_backend, sc, eager_inp)
            finally:
                notes.append(emitters.unpin())
            results.append(compare_results(out.clone(), eager))
        torch.cuda.synchronize()
    finally:
        kernel.record = emitters.record = True
    ok = all(r[0] for r in results)
    note = "; ".join(n for n in notes if n)
    report.add("cuda_graph.replay", ok, f"decode step (bs={bs}, h={heads}) captured at lengths 1, replayed twice after in-place metadata updates: "
               + "; ".join(_fmt_diff(r[1]) for r in results) + (f" ({note})" if note else ""))


# -- timing ---------------------------------------------------------------


def _judge(report: Report, name: str, verdict: Optional[bool], detail: str, **data) -> None:
    if verdict is None:
        report.info(name, detail, **data)
    else:
        report.add(name, verdict, detail, **data)


def check_timing(report, kernel, emitters: Emitters, emitter, old, new, engine, device, topk=2048, pairs=60, min_rows=None) -> None:
    """Paired A/B of the helper on causal ramps and the all-full case, on indices
    from the real emitter (and the engine's clipped seqlens). Derived mode (min_rows): the patched
    helper is called as before, and judged by lengths.timing_bar."""
    if device != "cuda":
        report.skip("timing", "cpu: timing needs the real kernel")
        return
    kernel.record = emitters.record = False
    try:
        for i, b in enumerate(feed.timing_batches(topk) + (dl.timing_batches(min_rows, topk) if min_rows else [])):
            name = f"timing.{b.name}"
            c = feed.feed(emitters, emitter, b, topk, engine, device, seed=500 + i)
            ideal = contract.ideal_ratio(c.topk_length, topk)
            if min_rows and c.q.shape[0] < min_rows:
                ideal = 1.0  # derived mode passes None below MIN_ROWS: nothing to gain
            patched = (lambda c=c: _helper_call(new, c)) if min_rows else (lambda c=c: _helper_call(new, c, c.topk_length))
            t = paired_timing(lambda c=c: _helper_call(old, c), patched, pairs=pairs)
            frac = t.speedup / ideal
            rows = c.q.shape[0]
            data = dict(s_q=rows, emitter=emitter, unpatched_ms=t.unpatched_ms, patched_ms=t.patched_ms, speedup=t.speedup, ideal=ideal, of_ideal=frac, pairs=t.pairs)
            detail = f"{emitter}: {t.unpatched_ms:.3f} -> {t.patched_ms:.3f} ms, speedup {t.speedup:.3f}x vs ideal {ideal:.3f}x ({100 * frac:.1f}%)"
            if min_rows:
                verdict, bar = dl.timing_bar(rows, min_rows, ideal, t.speedup, "all_full" in name)
                _judge(report, name, verdict, detail + bar, **data)
            elif "all_full" in name:
                report.add(name, abs(t.speedup - 1) <= 0.02, detail + " (parity: within 2%)", **data)
            elif rows >= 4096:
                report.add(name, frac >= 0.95, detail + " (bar: >= 95% of ideal)", **data)
            else:
                report.info(name, detail + " (no bar below s_q 4096)", **data)
            del c
            torch.cuda.empty_cache()
    finally:
        kernel.record = emitters.record = True


# -- the pipeline -----------------------------------------------------------


def _guarded(report: Report, name: str, fn: Callable, *args):
    """Run one check; an exception is that check's failure, not the run's end."""
    try:
        return fn(report, *args)
    except Exception as e:
        report.add(name, False, f"raised {type(e).__name__}: {e}")
        return None


def engine_pieces(filename: str, source: str):
    """The engine's own clip and row padding where they can be isolated, else stand-ins that say so."""
    engine = feed.default_engine()
    found = em.engine_function(filename, source, "compute_dsa_seqlens")
    if found:
        engine.clip, engine.clip_from = found
    found = em.engine_function(filename, source, "_pad_topk_indices")
    if found:
        engine.pad, engine.pad_from = found
    return engine


def kernel_decision(sites, kernel: Kernel, original: str, filename: str) -> str:
    """The kernel decision the rewrite used (the installed kernel, passed as
    --kernel) and the one the gate makes for this file on its own (what
    `apply` would use), each with where it came from, as the sites say."""
    used = next((s.kernel for s in sites if getattr(s, "kernel", None)), None) or f"{kernel.pin} (--kernel)"
    try:
        own_sites = migrate_source(original, path=filename).sites
        own = next((s.kernel for s in own_sites if getattr(s, "kernel", None)), None)
        own = own or next((s.reason for s in own_sites if str(s.status) == "manual"), "none")
    except Exception as e:  # the file's own pins are only reported here, never a reason to stop
        own = f"not decided ({type(e).__name__}: {e})"
    installed = ", the installed kernel" if str(kernel.pin) in used else ""  # not a --kernel or configured one
    return f"rewrite used {used}{installed}; the file's own decision (apply without --kernel): {own}"


def smoke_sources(
    original: str,
    patched: str,
    filename: str,
    kernel: Kernel,
    device: str,
    function: Optional[str] = None,
    sites=(),
    timing: bool = True,
    emitters: Optional[Emitters] = None,
    only=None,
    min_rows: Optional[int] = None,
) -> Report:
    """Every check, for one file before and after the rewrite (`only`: the
    names of the batches and end-to-end scenarios to run; default all).

    min_rows: `patched` is the derived rewrite (rewrite(..., lengths="derived")) with this MIN_ROWS,
    and smoke_derived runs the derived fix's checks after the common ones."""
    report = Report(filename, device)
    small = device == "cpu"
    topk = 128 if small else 2048
    heads = 64 if small else 128
    sm_major = torch.cuda.get_device_capability()[0] if device == "cuda" else 9
    runnable = e2e.is_runnable(original)
    emitters = emitters or load_emitters(device, kernel.name.split("==")[-1])
    uses = em.engine_topk_path(filename, original)
    drive = [n for n in (uses or em.NAMES) if n in emitters.fns]
    engine = engine_pieces(filename, original)
    report.meta.update(
        kernel=kernel.name,
        kernel_decision=kernel_decision(sites, kernel, original, filename),
        torch=torch.__version__,
        gpu=torch.cuda.get_device_name() if device == "cuda" else "none",
        mode="end-to-end (runnable backend)" if runnable else "isolated helper (engine not imported)",
        topk=topk,
        emitters=f"{', '.join(drive)} from {emitters.source}" + (f"; fault injected: {emitters.fault}" if emitters.fault else ""),
        engine_topk_path=", ".join(f"{n} ({w})" for n, w in uses.items()) or "no sgl_kernel emitter found in the file or its package: driving every one",
        engine_clip=engine.clip_from,
        engine_pad=engine.pad_from,
    )
    torch.manual_seed(0)
    with injected(kernel), injected_emitters(emitters):
        if not check_kernel(report, kernel, device):
            return report
        check_numerics(report, kernel, device, sm_major)
        if already_compliant(original, patched, sites):
            report.add("rewrite.applied", True, "already compliant, nothing to migrate: "
                       + "; ".join(f"line {s.line}: {s.reason}" for s in sites), sites=[s.to_dict() for s in sites])
            return report
        try:
            qualname = isolate.pick_helper(ast.parse(original), function)
            old_iso = isolate.isolate(original, filename, qualname)
            new_iso = isolate.isolate(patched, filename, qualname)
            attrs = {"device_sm_major": sm_major}
            old, new = old_iso.bind(attrs), new_iso.bind(attrs)
        except (isolate.IsolationError, SyntaxError) as e:
            report.add("isolate.helper", False, str(e))
            return report
        report.meta["helper"] = qualname
        if min_rows is not None:
            report.meta["lengths"] = dl.describe(min_rows)
            if not check_rewrite_derived(report, original, patched, qualname, sites, min_rows):
                return report
        elif not check_rewrite(report, original, patched, qualname, sites, new):
            return report
        missing = [n for n in uses if n not in emitters.fns]
        if missing:
            report.info("emitters.missing", f"the engine's top-k path uses {', '.join(missing)}, which {emitters.source} lacks")
        if not drive:
            report.add("emitters.available", False, f"{emitters.source} has none of {', '.join(em.NAMES)}: nothing real to feed the helper")
            return report
        if min_rows is not None:
            setup = Setup(kernel, emitters, old, new, original, patched, filename, device, sm_major, topk, heads,
                          only, drive, engine, uses, runnable, timing)
            return smoke_derived(report, setup, qualname, sites, min_rows)

        cases = fed_cases(report, emitters, drive, engine, device, topk, heads, small, only)
        check_helper_matrix(report, kernel, old, new, cases, device)
        if cases:
            _guarded(report, "guard.row_mismatch", check_guard, kernel, old, new, cases[0])
        chosen = feed.pick(uses, emitters)

        mods = []
        try:
            if runnable:
                try:  # the whole module runs here (its TOPK_MIGRATE_SMOKE marker asked for it)
                    mods = [e2e.load_module(original, filename, "unpatched")]
                    mods.append(e2e.load_module(patched, filename, "patched"))
                except Exception as e:  # its imports or top-level code failed: a failed check, not a traceback
                    report.add("e2e.import", False, f"running the module failed: {type(e).__name__}: {e}")
                    return report
                e2e_calls = check_e2e(report, kernel, emitters, mods[0], mods[1], device, sm_major, topk, heads, small, only)
                _guarded(report, "contract.front_packed", check_contract, e2e_calls, "kernel boundary, through the backend's own top-k path")
                _guarded(report, "cuda_graph.replay", check_graph_e2e, kernel, emitters, mods[1], device, sm_major, topk, heads)
                sc = e2e.scenarios(topk, heads, small)[3]  # short-context decode
                inp = e2e.make_inputs(sc, device, seed=7)
                drivers = [e2e.Driver(m, topk, device, sm_major) for m in mods]
                backends = [d.backend(sc.heads, inp.kv_pool) for d in drivers]
                for d, b in zip(drivers, backends):
                    b.init_forward_metadata(d.batch(sc, inp))
                hot = [lambda i=i: drivers[i].step(backends[i], sc, inp) for i in (0, 1)]
                where = "decode step (top-k + forward)"
            elif cases:
                _guarded(report, "cuda_graph.replay", check_graph_helper, kernel, emitters, chosen, new, engine, device, topk, heads)
                c = cases[0]
                hot = [lambda: _helper_call(old, c), lambda: _helper_call(new, c, c.topk_length)]
                where = "helper call"
            else:
                return report
            emitters.record = False
            _guarded(report, "hot_path.no_allocation", check_costs, kernel, device, hot[0], hot[1], where)
            emitters.record = True
            if timing:
                _guarded(report, "timing", check_timing, kernel, emitters, chosen, old, new, engine, device, topk)
        finally:
            for m in mods:
                e2e.unload(m)
    return report


@dataclass
class Setup:
    """What the checks of one smoke run share, as smoke_sources set it up."""

    kernel: Kernel
    emitters: Emitters
    old: Callable  # the helper, unpatched and patched
    new: Callable
    original: str
    patched: str
    filename: str
    device: str
    sm_major: int
    topk: int
    heads: int
    only: object
    drive: list  # the emitters fed
    engine: feed.Engine
    uses: dict  # the engine's top-k path
    runnable: bool
    timing: bool

    @property
    def small(self) -> bool:
        return self.device == "cpu"


def smoke_derived(report: Report, s: Setup, qualname: str, sites, min_rows: int) -> Report:
    """The derived fix on trial, after the common checks: every fed case and end-to-end scenario (and each
    on both sides of MIN_ROWS) bitwise, with the kernel reading exactly the blocks holding a valid slot, then all
    again on the emitters' output scattered; CUDA graphs, hot path, timing. The reference fix's contract
    checks are skipped, each saying why (lengths.NOT_APPLICABLE)."""
    for name, why in dl.NOT_APPLICABLE.items():
        report.skip(name, f"derived mode: {why}")
    extra = dl.threshold_batches(min_rows, s.topk, s.heads)
    cases = fed_cases(report, s.emitters, s.drive, s.engine, s.device, s.topk, s.heads, s.small, s.only, checked=False, extra=extra)
    rows = check_derived_matrix(report, s.kernel, s.old, s.new, cases + [dl.scattered(c) for c in cases], min_rows)
    if s.runnable:
        rows += _derived_e2e(report, s, min_rows)
    check_derived_reach(report, rows, min_rows)
    if not cases:
        return report
    chosen = feed.pick(s.uses, s.emitters)
    _guarded(report, "cuda_graph.derived", check_graph_derived, s.kernel, s.emitters, chosen, s.new, s.device, s.topk, s.heads, min_rows)
    c = next((c for c in cases if c.q.shape[0] >= min_rows), cases[0])
    s.emitters.record = False
    _guarded(report, "hot_path.no_allocation", check_costs, s.kernel, s.device, lambda: _helper_call(s.old, c),
             lambda: _helper_call(s.new, c), f"helper call ({c.name}, {c.q.shape[0]} rows)", True)
    s.emitters.record = True
    if s.timing:
        _guarded(report, "timing", check_timing, s.kernel, s.emitters, chosen, s.old, s.new, s.engine, s.device, s.topk, 60, min_rows)
    return report


def _derived_e2e(report: Report, s: Setup, min_rows: int) -> list:
    """Derived mode, a runnable backend: both versions run whole (check_e2e_derived), and the patched
    decode step's CUDA graph as in the reference mode. Returns the kernel calls' row counts."""
    mods = []
    try:
        try:  # the whole module runs here (its TOPK_MIGRATE_SMOKE marker asked for it)
            mods = [e2e.load_module(s.original, s.filename, "unpatched")]
            mods.append(e2e.load_module(s.patched, s.filename, "patched"))
        except Exception as e:  # its imports or top-level code failed: a failed check, not a traceback
            report.add("e2e.import", False, f"running the module failed: {type(e).__name__}: {e}")
            return []
        rows = check_e2e_derived(report, s.kernel, s.emitters, mods, s.device, s.sm_major, s.topk, s.heads, s.small, s.only, min_rows)
        _guarded(report, "cuda_graph.replay", check_graph_e2e, s.kernel, s.emitters, mods[1], s.device, s.sm_major, s.topk, s.heads)
        return rows
    finally:
        for m in mods:
            e2e.unload(m)


def _configured(target: Path) -> Optional[str]:
    """The kernel [tool.topk-migrate] declares for `target`, which apply uses without --kernel."""
    try:
        return config_for(str(target.resolve().parent)).kernel
    except Exception:  # a broken configuration is apply's error to report, not the smoke's
        return None


def _rewrite_for(source: str, filename: str, pin: str, lengths: str, device: str):
    """rewrite(), and the MIN_ROWS the derived rewrite wrote (None for the reference fix)."""
    if lengths != "derived":
        return (*rewrite(source, filename, pin), None)
    with dl.rewrite_min_rows(device) as min_rows:
        return (*rewrite(source, filename, pin, lengths), min_rows)


def run_smoke(
    path: Optional[str] = None,
    function: Optional[str] = None,
    device: str = "cuda",
    json_path: Optional[str] = None,
    echo: Callable[[str], None] = print,
    emitter_fault: Optional[str] = None,
    kernel_decl: Optional[str] = None,
    lengths: str = "reference",
) -> int:
    """Patch `path` (default: the bundled example) with the codemod, smoke it, print, save; 0 iff all passed.

    kernel_decl: the kernel the rewrite assumes (--kernel), the decision `apply --kernel` makes; without it
    the file's [tool.topk-migrate] kernel, as apply, else the installed kernel's version.
    lengths: "reference" (the metadata through the helper) or "derived" (the lengths derived at every kernel
    call from its own indices; on cpu from lengths.CPU_MIN_ROWS rows, the real MIN_ROWS on cuda)."""
    target = Path(path) if path else default_example()
    original = target.read_text(encoding="utf-8")
    report = Report(str(target), device)
    if device == "cuda" and not torch.cuda.is_available():
        report.add("device", False, "--device cuda but torch sees no CUDA device (use --device cpu for the reference)")
    else:
        try:
            kernel = load_kernel(device)
        except ImportError as e:
            report.add("kernel.accepts_topk_length", False, f"cannot import sgl_kernel.flash_mla: {e}")
        else:
            pin = kernel_decl or _configured(target) or kernel.pin
            patched, sites, min_rows = _rewrite_for(original, str(target), pin, lengths, device)
            emitters = load_emitters(device, kernel.name.split("==")[-1], emitter_fault)
            report = smoke_sources(original, patched, str(target), kernel, device, function, sites,
                                   timing=not emitter_fault, emitters=emitters, min_rows=min_rows)
    echo(report.table())
    if json_path:
        try:
            report.write_json(json_path)
        except OSError as e:
            echo(f"error: cannot write the report to {printable(os.fspath(json_path))}: "
                 f"{(e.strerror or str(e)).lower()}")
            return 2
        echo(f"report written to {printable(os.fspath(json_path))}")
    return 0 if report.ok else 1
