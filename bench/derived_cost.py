"""Where the derived lengths' cost goes: each formulation alone, without the kernel (issue 39).

bench/derived_envelope.py times the kernel call with the derivation; this script times only the derivation
text (what the rewrite writes, compiled as `lambda indices: <text>`), to tell the host's launch cost from
the device's work: `cpu` (host time to issue one derivation, the device idle), `eager` (one synchronized
derivation between two events), `stream` (20 back to back, per call), `graph` (captured once, replayed),
and the device kernels one derivation runs (torch.profiler: name and µs). Medians of ROUNDS each,
candidates interleaved. Indices [s_q, 1, 2048] int32, every row full (random valid slots).

    PYTHONPATH=$PWD/.carry:$PWD python3 bench/derived_cost.py OUT.json
"""
import functools
import json
import statistics
import sys
import time

import torch

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import derived_envelope as envelope  # noqa: E402  (the texts and how they are compiled)

SIZES = (1024, 2048, 4096, 8192, 16384)
# Beside derived.FORMULATIONS: the end of the last 64-slot block holding a valid slot, from the largest index
# of each block (one reduction over the indices instead of a compare: torch's reduction of 64 values per
# output runs at about a quarter of the compare's bandwidth on the H200).
EXTRA = {"block": lambda i: (f"(({i}.unflatten(-1, (-1, 64)).amax(-1) >= 0) * torch.arange(64, {i}.shape[-1] + 1, 64, "
                            f"device={i}.device, dtype=torch.int32)).flatten(1).amax(1)")}
ROUNDS, STREAM_CALLS = 200, 20


def timings(fn):
    """cpu, eager, stream and graph µs of one derivation (medians of ROUNDS)."""
    cpu, eager, stream = [], [], []
    for _ in range(ROUNDS):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        cpu.append((time.perf_counter() - t0) * 1e6)
        torch.cuda.synchronize()
        eager.append(envelope.event_ms(fn) * 1e3)
        stream.append(envelope.event_ms(lambda: [fn() for _ in range(STREAM_CALLS)]) * 1e3 / STREAM_CALLS)
    graph, _ = envelope.graph_of(fn)
    replays = [envelope.event_ms(graph.replay) * 1e3 for _ in range(ROUNDS)]
    return {"cpu": statistics.median(cpu), "eager": statistics.median(eager),
            "stream": statistics.median(stream), "graph": statistics.median(replays)}


def kernels(fn):
    """The device kernels of one derivation: [(name, µs)]."""
    fn()
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    return [(e.name[:90], round(e.device_time, 1)) for e in prof.events() if e.device_time > 0]


def main(out_path):
    torch.manual_seed(0)
    texts = envelope.compiled_formulations({**envelope.derived.FORMULATIONS, **EXTRA})
    result = {"environment": envelope.environment(), "expressions": {n: t for n, (t, _) in texts.items()},
              "sizes": {}}
    for s_q in SIZES:
        _, _, indices, given = envelope.make_case("full", s_q)
        row = {}
        for name, (_, fn) in texts.items():
            assert torch.equal(fn(indices), given), name  # full rows: every length is the width
            call = functools.partial(fn, indices)
            row[name] = {**timings(call), "kernels": kernels(call)}
            print(s_q, name, {k: (round(v, 1) if k != "kernels" else v) for k, v in row[name].items()}, flush=True)
        result["sizes"][s_q] = row
        torch.cuda.empty_cache()
    json.dump(result, open(out_path, "w"), indent=1)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "derived-cost.json")
