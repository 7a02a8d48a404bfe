"""The tables of results/gpu/derived-envelope.md, from the JSON that bench/derived_envelope.py and
bench/derived_cost.py wrote (no figure in that file is typed by hand):

    python3 bench/derived_report.py results/gpu/derived-envelope.json results/gpu/derived-cost.json
"""
import json
import sys

MODES = (("stream", "eager, back to back"), ("graph", "CUDA graph"), ("eager", "one isolated call (not the bar)"))
FLOOR = 0.97


def cell(x: float, derived: bool) -> str:
    return f"**{x:.3f}**" if derived and x < FLOOR else f"{x:.3f}"


def guarded(env: dict, name: str, min_rows: int) -> list:
    """The guarded fix: the formulation from min_rows rows, None (1.0) below."""
    sizes = list(env["timing"]["stream"]["ramp"])
    out = [f"`{name}`, MIN_ROWS = {min_rows}", "", "| mode | rows | " + " | ".join(sizes) + " |",
           "|---|---|" + "---:|" * len(sizes)]
    for mode, label in MODES:
        for layout in ("ramp", "full"):
            row = env["timing"][mode][layout]
            cells = [cell(row[s]["ratio_to_none"][name], True) if int(s) >= min_rows else "1.000" for s in sizes]
            out.append(f"| {label} | {layout} | " + " | ".join(cells) + " |")
    return out


def ratios(env: dict) -> list:
    """Every variant's ratio to none, per mode and layout."""
    out = []
    for mode, label in MODES:
        for layout in ("ramp", "full"):
            row = env["timing"][mode][layout]
            names = [n for n in next(iter(row.values()))["ratio_to_none"] if n != "none"]
            out += [f"**{label} (`{mode}`), {layout} rows**", "",
                    "| s_q | rounds | none ms | " + " | ".join(names) + " |", "|---:|---:|---:|" + "---:|" * len(names)]
            for s, r in row.items():
                out.append(f"| {s} | {r['rounds']} | {r['median_ms']['none']:.3f} | " + " | ".join(
                    cell(r["ratio_to_none"][n], n not in ("given", "none_again")) for n in names) + " |")
            out.append("")
    return out


def bitwise(env: dict) -> list:
    layouts = env["bitwise"]
    names = list(next(iter(next(iter(layouts.values())).values())))
    out = ["| rows | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    for layout, by_size in layouts.items():
        verdicts = [{by_size[s][n] for s in by_size} for n in names]
        out.append(f"| {layout} | " + " | ".join(
            f"all {v.pop()}" if len(v) == 1 else "mixed" for v in verdicts) + " |")
    return out


def costs(cost: dict) -> list:
    names = list(next(iter(cost["sizes"].values())))
    cols = ("cpu", "eager", "stream", "graph")
    out = ["| s_q | " + " | ".join(f"{n} {c}" for n in names for c in ("host", "sync", "b2b", "graph")) + " |",
           "|---:|" + "---:|" * (4 * len(names))]
    for s, row in cost["sizes"].items():
        out.append(f"| {s} | " + " | ".join(f"{row[n][c]:.0f}" for n in names for c in cols) + " |")
    return out


def shares(env: dict) -> list:
    out = ["| formulation | floor from | MIN_ROWS | mode | gain share at 4096 | at 8192 |", "|---|---:|---:|---|---:|---:|"]
    for name, c in env["choice"]["per_formulation"].items():
        for mode, label in MODES:
            g = c["gain_share"][mode]
            out.append(f"| {name} | {c['floor_from']} | {c['min_rows']} | {label} | {g['4096']:.2f} | {g['8192']:.2f} |")
    return out


def main(env_path: str, cost_path: str) -> None:
    env, cost = json.load(open(env_path)), json.load(open(cost_path))
    pick = env["choice"]
    sections = [["## The guarded fix", ""] + guarded(env, pick["formulation"], pick["min_rows"]),
                ["## The choice (`choice` in the JSON)", ""] + shares(env),
                ["## Bitwise identity with `none` (out, max_logits, lse), every s_q", ""] + bitwise(env),
                ["## Each formulation alone, µs per derivation (`derived-cost.json`, full rows, medians)", ""] + costs(cost),
                ["## Ratios to none, every mode and layout (bold: a derived variant under 0.97)", ""] + ratios(env)]
    print("\n\n".join("\n".join(s) for s in sections))


if __name__ == "__main__":
    main(*sys.argv[1:3])
