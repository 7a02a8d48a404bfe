#!/usr/bin/env python3
"""Draw results/gpu/speedup.svg from the GPU smoke's JSON records (standard library only).

    python3 bench/gpu_speedup_plot.py                      # reads results/gpu/*.json, writes results/gpu/speedup.svg
    python3 bench/gpu_speedup_plot.py --check              # exit 1 if the committed SVG is not what the JSON gives
    python3 bench/gpu_speedup_plot.py --ideal 4096 8192    # the ideal of a causal ramp, and the share of work padding costs

Each record with `timing.*` checks (topk-migrate smoke --json) is one series: the measured
speedup of the patched helper against s_q on causal ramps, and the full-rows case (every row at
the top-k width, where the ideal is 1.0: parity). The ideal curve is the kernel's work ratio in
64-wide top-k blocks (codemods/pass_topk_length/smoke/contract.py, ideal_ratio) for a causal ramp, drawn for
every s_q between the measured ones; the script checks that it gives each record's own `ideal`.
tests/test_gpu_plot.py re-renders the SVG from the JSON and compares it with the committed file.
"""
from __future__ import annotations

import argparse
import glob
import json
import math
import os
import sys
from typing import List
from xml.sax.saxutils import escape

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GPU = os.path.join(ROOT, "results", "gpu")
OUT = os.path.join(GPU, "speedup.svg")
B_TOPK = 64  # the kernel's top-k block width
HEADS = 128  # the timing batches' heads (codemods/pass_topk_length/smoke/feed.py, timing_batches); not in the record

W, H = 720, 440
LEFT, RIGHT, TOP, BOTTOM = 64, 24, 56, 74
X_LO, X_HI = 2 ** 9.6, 2 ** 14.5  # s_q, log2 axis
Y_LO, Y_HI = 0.8, 4.0  # speedup, linear axis
STYLES = [("#1f5fa8", "filled"), ("#c05a1c", "hollow"), ("#2a8a3e", "hollow")]


def ramp_ideal(s_q: int, topk: int) -> float:
    """Unpatched / patched top-k blocks for rows of length 1..s_q (causal ramp), clipped to topk."""
    full_blocks = math.ceil(topk / B_TOPK)
    blocks = sum(math.ceil(min(i, topk) / B_TOPK) for i in range(1, s_q + 1))
    return s_q * full_blocks / blocks


def load(paths: List[str]) -> List[dict]:
    """One series per record that has timing checks: label, topk, ramp points, full-rows points."""
    series = []
    for path in sorted(paths):
        with open(path) as f:
            record = json.load(f)
        if not isinstance(record, dict) or "checks" not in record:
            continue
        timing = [c for c in record["checks"] if c.get("name", "").startswith("timing.") and c.get("data")]
        if not timing:
            continue
        ramp = sorted((c["data"]["s_q"], c["data"]["speedup"], c["data"]["ideal"]) for c in timing
                      if c["name"].startswith("timing.ramp_"))
        full = sorted((c["data"]["s_q"], c["data"]["speedup"], c["data"]["ideal"]) for c in timing
                      if c["name"].startswith("timing.all_full_"))
        topk = int(record.get("topk", 2048))
        for s_q, _, ideal in ramp:
            if abs(ramp_ideal(s_q, topk) - ideal) > 1e-9:
                raise SystemExit(f"{path}: the recorded ideal at s_q {s_q} ({ideal}) is not the causal ramp's "
                                 f"({ramp_ideal(s_q, topk)}): not a ramp this plot knows how to draw")
        name = os.path.basename(path)[: -len(".json")]
        label = (f"sglang {name[len('sglang-'):]} dsa_backend.py, patched" if name.startswith("sglang-")
                 else f"the bundled {name} backend, patched")
        pairs = sorted({c["data"].get("pairs") for c in timing})
        series.append(dict(name=name, label=label, topk=topk, ramp=ramp, full=full, gpu=record.get("gpu", "?"),
                           kernel=record.get("kernel", "?"), pairs="/".join(map(str, pairs))))
    if not series:
        raise SystemExit("no record with timing checks")
    # the engine's own file first: it is the README's table
    series.sort(key=lambda s: (not s["name"].startswith("sglang-"), s["name"]))
    return series


def x_of(s_q: float) -> float:
    span = math.log2(X_HI) - math.log2(X_LO)
    return LEFT + (math.log2(s_q) - math.log2(X_LO)) / span * (W - LEFT - RIGHT)


def y_of(speedup: float) -> float:
    return TOP + (Y_HI - speedup) / (Y_HI - Y_LO) * (H - TOP - BOTTOM)


def f(v: float) -> str:
    return f"{v:.1f}"


def render(series: List[dict]) -> str:
    main = series[0]
    topk = main["topk"]
    xs = sorted({p[0] for s in series for p in s["ramp"] + s["full"]})
    out: List[str] = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" '
        'font-family="DejaVu Sans, Helvetica, Arial, sans-serif" font-size="12">',
        f'<rect width="{W}" height="{H}" fill="#ffffff"/>',
        f'<text x="{W / 2:.1f}" y="20" text-anchor="middle" font-size="14" font-weight="bold">'
        f'Sparse prefill with topk_length: speedup against s_q</text>',
        f'<text x="{W / 2:.1f}" y="38" text-anchor="middle" fill="#444444">'
        f'{escape(main["gpu"])}, {escape(main["kernel"])}, causal ramp, topk {topk}, {HEADS} heads, '
        f'median of {main["pairs"]} paired runs</text>',
    ]
    # grid and axes
    for k in range(int(Y_LO * 2) + 1, int(Y_HI * 2) + 1):
        v = k / 2
        y = y_of(v)
        out.append(f'<line x1="{LEFT}" y1="{f(y)}" x2="{W - RIGHT}" y2="{f(y)}" stroke="#e4e4e4"/>')
        out.append(f'<text x="{LEFT - 6}" y="{f(y + 4)}" text-anchor="end">{v:.1f}x</text>')
    for s_q in xs:
        x = x_of(s_q)
        out.append(f'<line x1="{f(x)}" y1="{TOP}" x2="{f(x)}" y2="{H - BOTTOM}" stroke="#e4e4e4"/>')
        out.append(f'<text x="{f(x)}" y="{H - BOTTOM + 16}" text-anchor="middle">{s_q}</text>')
    out.append(f'<line x1="{LEFT}" y1="{f(y_of(1.0))}" x2="{W - RIGHT}" y2="{f(y_of(1.0))}" stroke="#888888" '
               'stroke-dasharray="4 3"/>')
    out.append(f'<rect x="{LEFT}" y="{TOP}" width="{W - LEFT - RIGHT}" height="{H - TOP - BOTTOM}" fill="none" '
               'stroke="#333333"/>')
    out.append(f'<text x="{(LEFT + W - RIGHT) / 2:.1f}" y="{H - 12}" text-anchor="middle">'
               's_q (query rows, log scale); under it, the measured speedup (its share of the ideal)</text>')
    out.append(f'<text x="16" y="{(TOP + H - BOTTOM) / 2:.1f}" text-anchor="middle" '
               f'transform="rotate(-90 16 {(TOP + H - BOTTOM) / 2:.1f})">speedup (unpatched / patched time)</text>')
    # the ideal curve: every s_q from the first measured to the last, 24 points an octave
    lo, hi = min(p[0] for p in main["ramp"]), max(p[0] for p in main["ramp"])
    octaves = int(round(math.log2(hi / lo)))
    points = sorted({int(round(lo * 2 ** (k / 24))) for k in range(24 * octaves + 1)} | {p[0] for p in main["ramp"]})
    line = " ".join(f"{f(x_of(s))},{f(y_of(ramp_ideal(s, topk)))}" for s in points)
    out.append(f'<polyline points="{line}" fill="none" stroke="#555555" stroke-width="1.5" stroke-dasharray="6 3"/>')
    # measured series, the first (the engine's file) drawn last, on top: ramps (circles), full rows (diamonds)
    for i, s in reversed(list(enumerate(series))):
        colour, fill = STYLES[i % len(STYLES)]
        paint = f'fill="{colour}"' if fill == "filled" else f'fill="none" stroke="{colour}" stroke-width="1.5"'
        r = 4.5 if i == 0 else 7.0
        if i == 0:
            out.append(f'<polyline points="{" ".join(f"{f(x_of(q))},{f(y_of(v))}" for q, v, _ in s["ramp"])}" '
                       f'fill="none" stroke="{colour}" stroke-width="1.5"/>')
        for q, v, _ in s["ramp"]:
            out.append(f'<circle cx="{f(x_of(q))}" cy="{f(y_of(v))}" r="{r}" {paint}/>')
        for q, v, _ in s["full"]:
            x, y, d = x_of(q), y_of(v), r + 1.5
            out.append(f'<polygon points="{f(x)},{f(y - d)} {f(x + d)},{f(y)} {f(x)},{f(y + d)} {f(x - d)},{f(y)}" '
                       f'{paint}/>')
    # the first series' values under their s_q, with their share of the ideal
    for q, v, ideal in main["ramp"]:
        out.append(f'<text x="{f(x_of(q))}" y="{H - BOTTOM + 32}" text-anchor="middle" fill="#1f5fa8">'
                   f'{v:.3f}x ({100 * v / ideal:.1f}%)</text>')
    # legend
    lx, ly = W - RIGHT - 330, TOP + 18
    out.append(f'<line x1="{lx}" y1="{ly - 4}" x2="{lx + 24}" y2="{ly - 4}" stroke="#555555" stroke-width="1.5" '
               'stroke-dasharray="6 3"/>')
    out.append(f'<text x="{lx + 30}" y="{ly}">ideal (work in 64-wide top-k blocks)</text>')
    for i, s in enumerate(series):
        colour, fill = STYLES[i % len(STYLES)]
        paint = f'fill="{colour}"' if fill == "filled" else f'fill="none" stroke="{colour}" stroke-width="1.5"'
        y = ly + 18 * (i + 1)
        out.append(f'<circle cx="{lx + 12}" cy="{y - 4}" r="{4.5 if i == 0 else 6.0}" {paint}/>')
        out.append(f'<text x="{lx + 30}" y="{y}">{escape(s["label"])}</text>')
    y = ly + 18 * (len(series) + 1)
    out.append(f'<polygon points="{lx + 12},{y - 10} {lx + 18},{y - 4} {lx + 12},{y + 2} {lx + 6},{y - 4}" '
               f'fill="#1f5fa8"/>')
    full = "; ".join(f"s_q {q}: {v:.3f}x, ideal {ideal:.1f}x" for q, v, ideal in main["full"])
    out.append(f'<text x="{lx + 30}" y="{y}">every row full ({full})</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def reference_records():
    """results/gpu/*.json but the derived fix's (derived-*: below MIN_ROWS it passes None, so its ramp is not
    the reference fix's curve this plot draws)."""
    return [p for p in glob.glob(os.path.join(GPU, "*.json")) if not os.path.basename(p).startswith("derived-")]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("records", nargs="*", help="smoke --json records (default: results/gpu/*.json but derived-*)")
    ap.add_argument("-o", "--out", default=OUT, help="the SVG to write (default: results/gpu/speedup.svg)")
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 if --out differs from the render")
    ap.add_argument("--ideal", type=int, nargs="+", metavar="S_Q", help="print the causal ramp's ideal speedup at "
                    "each s_q (topk 2048) and the share of the unpatched kernel's work that is padding; draw nothing")
    args = ap.parse_args(argv)
    if args.ideal:
        for s_q in args.ideal:
            ideal = ramp_ideal(s_q, 2048)
            print(f"s_q {s_q}: ideal {ideal:.3f}x; padding is {100 * (1 - 1 / ideal):.1f}% of the unpatched work")
        return 0
    svg = render(load(args.records or reference_records()))
    if args.check:
        try:
            with open(args.out, encoding="utf-8") as fh:
                same = fh.read() == svg
        except FileNotFoundError:
            same = False
        if not same:
            print(f"{args.out} is not what the records give: run python3 bench/gpu_speedup_plot.py", file=sys.stderr)
        return 0 if same else 1
    with open(args.out, "w", encoding="utf-8", newline="\n") as fh:
        fh.write(svg)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
