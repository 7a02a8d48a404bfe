"""What `apply --lengths derived` costs on the real kernel, and where it pays (issue 39).

The rewrite writes `topk_length=<FORMULATIONS[name]("indices")> if indices.shape[0] >= MIN_ROWS
else None` (codemods/pass_topk_length/derived.py). This script times exactly that expression text
(compiled from the module's own functions, evaluated in a lambda of `indices`) against passing nothing
(`none`) and precomputed lengths (`given`, the reference fix), on sgl_kernel's flash_mla_sparse_fwd, so
that FORMULATION and MIN_ROWS can be chosen from data against the issue's envelope:

  * never more than 3% slower than `none` (ratio none/derived >= 0.97) for s_q 16..16384, ramp and full
    rows, eager back to back (`stream`: 20 calls between two events, the host issuing ahead of the device
    as in a model's forward) and under a CUDA graph (`graph`: the call and its derivation captured, replays
    timed): BAR_MODES;
  * at least 80% of `given`'s gain (ratio - 1) at s_q 4096 and 8192, in the same modes;
  * bitwise identical (out, max_logits, lse) to `none` on front-packed, scattered and empty (all -1) rows.

`eager` (one synchronized call between two events, the device idle while the host issues the derivation)
is recorded beside them, not held to the bar: it measures the host's time to issue a few small ops, which
a forward hides wherever the device is busy (calls of thousands of rows). MIN_ROWS is the largest measured
size at or below the smallest gain size from which every bar cell holds: the fewest calls pay the
derivation while both rules hold.

Every timing is the median of paired, interleaved rounds (variant order reversed every other round);
`none_again` is `none` timed a second time, the noise floor.
Run from the repository root on the GPU machine (results/gpu/derived-envelope.md has the record):

    PYTHONPATH=$PWD/.carry:$PWD python3 bench/derived_envelope.py OUT.json
"""
import json
import statistics
import subprocess
import sys
import time
import types

import torch

from codemods.pass_topk_length import derived

TOPK, HEADS, DIM, DIM_V, SCALE = 2048, 128, 576, 512, 0.0625
SIZES = (16, 64, 256, 512, 1024, 2048, 4096, 8192, 16384)
TIMED_LAYOUTS = ("ramp", "full")
BITWISE_LAYOUTS = ("ramp", "full", "scatter", "empty")
MODES = ("eager", "stream", "graph")
BAR_MODES = ("stream", "graph")  # the "eager, back to back and under a CUDA graph"
STREAM_CALLS = 20
SECONDS = {"eager": 2.0, "stream": 6.0, "graph": 2.0}  # measuring time per (layout, s_q, mode)
MIN_ROUNDS, MAX_ROUNDS = 12, 400
FLOOR, GAIN_SHARE, GAIN_SIZES = 0.97, 0.80, (4096, 8192)
# Timed side by side; only one that reads no module name (derived.READS_NO_MODULE) may be picked. `arange`'s
# record is the run before this one (results/gpu/derived-envelope.md).
MEASURED = ("word", "own-word")

kernel = None  # sgl_kernel.flash_mla.flash_mla_sparse_fwd, loaded in main()


def as_function(text, label):
    """`lambda indices: <text>` with torch in scope, made from its code object (no eval: this checkout is a
    project topk-migrate reads, and eval there may rebind anything)."""
    return types.FunctionType(compile(f"lambda indices: {text}", label, "eval"),
                              {"torch": torch, "__builtins__": __builtins__})()


def compiled_formulations(formulations):
    """name -> (expression text the rewrite writes, a function of `indices` that evaluates that text)."""
    out = {}
    for name, formulation in formulations.items():
        text = formulation("indices")
        out[name] = (text, as_function(text, f"<derived:{name}>"))
    return out


def ramp_indices(s_q, dev):
    """Row i holds min(i+1, TOPK) valid entries, front-packed, -1 after (the causal ramp of a prefill)."""
    pos = torch.arange(TOPK, device=dev)
    row = torch.arange(s_q, device=dev)[:, None]
    idx = torch.where(pos[None, :] <= row, pos[None, :], -1).int()
    long_rows = row[:, 0] >= TOPK - 1
    if long_rows.any():  # a sorted random top-k of [0, s_kv) for rows past the ramp
        picks = torch.rand(int(long_rows.sum()), s_q, device=dev).argsort(-1)[:, :TOPK]
        idx[long_rows] = picks.sort(-1).values.int()
    return idx


def make_case(layout, s_q, dev="cuda"):
    """q, kv, indices [s_q, 1, TOPK] int32 and the precomputed lengths (valid entries per row) of a layout."""
    s_kv = max(s_q, 4096) if layout == "full" else s_q
    q = torch.randn(s_q, HEADS, DIM, device=dev, dtype=torch.bfloat16) / 4
    kv = torch.randn(s_kv, 1, DIM, device=dev, dtype=torch.bfloat16) / 4
    if layout == "full":
        idx = torch.rand(s_q, s_kv, device=dev).argsort(-1)[:, :TOPK].sort(-1).values.int()
    else:
        idx = ramp_indices(s_q, dev)
    if layout == "scatter":  # the same entries shuffled within each row: -1 holes before valid ones
        idx = idx.gather(1, torch.rand(s_q, TOPK, device=dev).argsort(-1))
    if layout == "empty":  # padded rows: every 4th row and the last eighth hold no valid entry at all
        row = torch.arange(s_q, device=dev)
        idx[(row % 4 == 3) | (row >= s_q - s_q // 8)] = -1
    given = (idx >= 0).sum(-1, dtype=torch.int32)
    return q, kv, idx.unsqueeze(1).contiguous(), given.contiguous()


def callers(case, formulations):
    """variant -> a no-argument function making the kernel call as that variant writes it."""
    q, kv, indices, given = case
    calls = {"none": lambda: kernel(q, kv, indices, SCALE, DIM_V),
             "none_again": lambda: kernel(q, kv, indices, SCALE, DIM_V),
             "given": lambda: kernel(q, kv, indices, SCALE, DIM_V, topk_length=given)}
    for name, (_, lengths) in formulations.items():
        calls[name] = lambda lengths=lengths: kernel(q, kv, indices, SCALE, DIM_V, topk_length=lengths(indices))
    return calls


def same_bits(a, b):
    """Bitwise equality of two result tuples (NaN and -inf compared as bits, not as values)."""
    return all(x.dtype == y.dtype and x.shape == y.shape and
               torch.equal(x.contiguous().view(torch.uint8), y.contiguous().view(torch.uint8)) for x, y in zip(a, b))


def bitwise(calls):
    """variant -> bitwise identical to `none` (none_again: is the kernel deterministic at all)."""
    reference = calls["none"]()
    return {v: same_bits(reference, call()) for v, call in calls.items() if v != "none"}


def event_ms(fn):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end)


def stream_of(call):
    return lambda: [call() for _ in range(STREAM_CALLS)]


def graph_of(call):
    """The call, its derivation included, captured once; returns (replay, the graph's static outputs)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        call(), call()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        outputs = call()
    return graph, outputs


def paired_rounds(timed, mode):
    """Interleaved rounds (order reversed every other one), as many as fit SECONDS[mode]; ms per call."""
    variants = list(timed)
    per_call = STREAM_CALLS if mode == "stream" else 1
    for v in variants:  # warm-up
        event_ms(timed[v])
    t0 = time.perf_counter()
    for v in variants:
        event_ms(timed[v])
    rounds = int(min(MAX_ROUNDS, max(MIN_ROUNDS, SECONDS[mode] / (time.perf_counter() - t0))))
    ms = {v: [] for v in variants}
    for r in range(rounds):
        for v in (variants if r % 2 == 0 else variants[::-1]):
            ms[v].append(event_ms(timed[v]) / per_call)
    return ms


def summarize(ms):
    """Medians, and medians of the per-round paired ratios to none and to given (> 1: faster)."""
    def ratio(base, v):
        return statistics.median(b / t for b, t in zip(ms[base], ms[v]))
    return {"rounds": len(ms["none"]), "ms": ms, "median_ms": {v: statistics.median(t) for v, t in ms.items()},
            "ratio_to_none": {v: ratio("none", v) for v in ms}, "ratio_to_given": {v: ratio("given", v) for v in ms}}


def time_modes(calls):
    """mode -> summary; also whether each graph's replayed outputs are bitwise those of eager `none`."""
    reference = calls["none"]()
    result = {"eager": summarize(paired_rounds(calls, "eager")),
              "stream": summarize(paired_rounds({v: stream_of(c) for v, c in calls.items()}, "stream"))}
    graphs = {v: graph_of(c) for v, c in calls.items()}
    result["graph"] = summarize(paired_rounds({v: g.replay for v, (g, _) in graphs.items()}, "graph"))
    result["graph"]["bitwise_replay"] = {v: same_bits(reference, out) for v, (_, out) in graphs.items()}
    del graphs
    return result


def environment():
    smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,"
                          "temperature.gpu,power.draw", "--format=csv,noheader"], capture_output=True, text=True)
    import sgl_kernel
    return {"gpu": torch.cuda.get_device_name(), "nvidia_smi": smi.stdout.strip(), "torch": torch.__version__,
            "cuda": torch.version.cuda, "sgl_kernel": sgl_kernel.__version__, "python": sys.version.split()[0]}


def guarded_ratio(timing, name, min_rows, mode, layout, s_q):
    """The guarded fix: the formulation at/above min_rows rows, None (ratio 1.0) below."""
    return timing[mode][layout][s_q]["ratio_to_none"][name] if s_q >= min_rows else 1.0


def choose(timing, names):
    """Per formulation: the bar cells under FLOOR, the smallest measured size from which every bar ratio to
    none is >= FLOOR, MIN_ROWS (the largest size at or below min(GAIN_SIZES) from there), the gain share
    at GAIN_SIZES (per mode, ramp rows; `eager` too, for the record), and whether both rules hold; the pick."""
    per = {}
    for name in names:
        under = [(m, lay, s, timing[m][lay][s]["ratio_to_none"][name]) for m in BAR_MODES for lay in TIMED_LAYOUTS
                 for s in SIZES if timing[m][lay][s]["ratio_to_none"][name] < FLOOR]
        worst = {s: min(timing[m][lay][s]["ratio_to_none"][name] for m in BAR_MODES for lay in TIMED_LAYOUTS)
                 for s in SIZES}
        floor_from = next((s for s in SIZES if all(worst[t] >= FLOOR for t in SIZES if t >= s)), None)
        min_rows = max((s for s in SIZES if floor_from is not None and floor_from <= s <= min(GAIN_SIZES)),
                       default=floor_from)
        share = {m: {s: (guarded_ratio(timing, name, min_rows or 1 << 30, m, "ramp", s) - 1)
                     / (timing[m]["ramp"][s]["ratio_to_none"]["given"] - 1) for s in GAIN_SIZES} for m in MODES}
        meets = min_rows is not None and all(v >= GAIN_SHARE for m in BAR_MODES for v in share[m].values())
        per[name] = {"under_floor": under, "worst_ratio_by_s_q": worst, "floor_from": floor_from,
                     "min_rows": min_rows, "gain_share": share, "meets_both": meets}
    ok = [n for n in names if per[n]["meets_both"] and n in derived.READS_NO_MODULE]
    pick = min(ok, key=lambda n: (per[n]["min_rows"], -min(per[n]["gain_share"][m][s] for m in BAR_MODES
                                                           for s in GAIN_SIZES)), default=None)
    return {"per_formulation": per, "formulation": pick, "min_rows": per[pick]["min_rows"] if pick else None}


def main(out_path):
    global kernel
    from sgl_kernel.flash_mla import flash_mla_sparse_fwd
    kernel = flash_mla_sparse_fwd
    torch.manual_seed(0)
    formulations = compiled_formulations({n: derived.FORMULATIONS[n] for n in MEASURED})
    result = {"environment": environment(), "expressions": {n: t for n, (t, _) in formulations.items()},
              "config": {"sizes": SIZES, "stream_calls": STREAM_CALLS, "seconds": SECONDS, "floor": FLOOR,
                         "min_rounds": MIN_ROUNDS, "max_rounds": MAX_ROUNDS},
              "bitwise": {lay: {} for lay in BITWISE_LAYOUTS}, "timing": {m: {lay: {} for lay in TIMED_LAYOUTS}
                                                                          for m in MODES}}
    started = time.perf_counter()
    for s_q in SIZES:
        for layout in BITWISE_LAYOUTS:
            calls = callers(make_case(layout, s_q), formulations)
            result["bitwise"][layout][s_q] = bitwise(calls)
            if layout in TIMED_LAYOUTS:
                for mode, summary in time_modes(calls).items():
                    result["timing"][mode][layout][s_q] = summary
                    r = summary["ratio_to_none"]
                    print(f"{time.perf_counter() - started:6.0f}s {mode:6} {layout:4} s_q {s_q:5} rounds "
                          f"{summary['rounds']:3} none {summary['median_ms']['none']:.3f} ms | "
                          + " ".join(f"{v} {x:.3f}" for v, x in r.items() if v != "none"), flush=True)
            del calls
            torch.cuda.empty_cache()
        json.dump(result, open(out_path, "w"), indent=1)
    result["environment_after"] = environment()["nvidia_smi"]
    result["choice"] = choose(result["timing"], list(MEASURED))
    json.dump(result, open(out_path, "w"), indent=1)
    print(json.dumps(result["bitwise"]))
    choice = result["choice"]
    print("choice", json.dumps({n: {k: v for k, v in c.items() if k != "under_floor"}
                                for n, c in choice["per_formulation"].items()}), choice["formulation"], choice["min_rows"])


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "derived-envelope.json")
