#!/usr/bin/env python3
"""Switch off one soundness check at a time; the program generator must then find a wrong rewrite.

    python3 bench/generator_mutations.py [NAME ...] [--seed 9] [--budget 20000] [--jobs 2] [--list]

Each mutation monkeypatches one allowlist or identity check of the analysis in-process (the
engine runs in-process, as in tests/test_generator.py): an identity check returns "nothing
wrong", an allowlist accepts everything, a check's table is emptied. The generator's programs of
--seed then run in order, under the mutant, until one goes wrong that is right with the check on
(the heavy tier's budget, 20,000 programs, at most). Each catch is minimized under that condition.
The table goes into results/generator.md between the mutation markers (the rest of the file is
bench/generator_run.py's). A check no program catches is a gap of the generator (or a check that
the default-deny design makes redundant), reported as such.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
import time
from typing import Dict, List, Tuple

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tests"))

A = "topk_migrate.codemods._topk_length_analysis"
R = "topk_migrate.rows"


class Everything(frozenset):
    """An allowlist switched off: it holds every name."""

    def __contains__(self, item) -> bool:
        return True

    def __bool__(self) -> bool:
        return True


class EverythingDict(dict):
    def __contains__(self, item) -> bool:
        return True

    def __getitem__(self, item):
        return "mutant: accepted"

    def get(self, item, default=None):
        return "mutant: accepted"


def _value(v):
    return lambda *a, **k: v


# name -> (the statement of docs/soundness.md it guards, "module:attr.path" (several, joined by " + ", for
# a check made in more than one place: each is switched off), how it is switched off)
# how: ("returns", value) | ("accept_all",) | ("empty",) | ("call", factory(original) -> replacement)
MUTATIONS: Dict[str, Tuple[str, str, tuple]] = {
    # identity checks
    "callee_identity": ("callee-identity", f"{A}:_Analysis.callee_identity", ("returns", None)),
    "attribute_identity": ("callee-identity", f"{A}:_Analysis.attribute_identity", ("returns", None)),
    "attribute_targets": ("callee-identity", f"{A}:_Analysis.attribute_targets", ("returns", [])),
    "setattr_calls": ("callee-identity / helper-identity", f"{A}:_Analysis.setattr_calls", ("returns", [])),
    "reflection": ("callee-identity / helper-identity", f"{A}:_Analysis.reflection", ("returns", None)),
    "vendored_interface": ("callee-identity", "topk_migrate.kernels:vendored_interface", ("returns", None)),
    "helper_identity": ("helper-identity", f"{A}:_Analysis.helper_identity", ("returns", None)),
    "override_elsewhere": ("helper-identity", f"{A}:_Analysis.override_elsewhere", ("returns", None)),
    "attribute_assigns": ("helper-identity", f"{A}:_Analysis.attribute_assigns", ("returns", [])),
    "ARGUMENT_PASSING_DECORATORS": ("helper-identity", f"{A}:ARGUMENT_PASSING_DECORATORS", ("accept_all",)),
    "SIGNATURE_KEEPING_DECORATORS": ("helper-identity", f"{A}:SIGNATURE_KEEPING_DECORATORS", ("accept_all",)),
    "kernel_gate": ("kernel-accepts", "topk_migrate.api:KernelGate.__call__", ("call", lambda orig: _gate_yes)),
    "value_uses": ("discovery", "topk_migrate.codemods.pass_topk_length:_value_uses", ("returns", [])),
    "existing_param": ("names", f"{A}:_Analysis.existing_param", ("returns", None)),
    "validate_rewrite": ("names / placement", "topk_migrate.codemods.pass_topk_length:validate_rewrite", ("returns", {})),
    # metadata
    "root_binding": ("metadata-in-scope", f"{A}:root_binding", ("returns", (None, False))),
    "root_binding (analysis and validation)": (
        "metadata-in-scope", f"{A}:root_binding + topk_migrate.codemods._topk_length_rewrite:root_binding",
        ("returns", (None, False))),
    "typed": ("metadata-type", f"{A}:_Analysis.typed", ("returns", True)),
    "base_sets_none": ("metadata-type", f"{A}:_Analysis.base_sets_none", ("returns", False)),
    "none_attributes": ("metadata-type", "topk_migrate.scopecheck:Tree.none_attributes", ("returns", frozenset())),
    "may_be_none": ("metadata-type", "topk_migrate.scopecheck:may_be_none", ("returns", False)),
    "every None fact": ("metadata-type", f"topk_migrate.scopecheck:may_be_none + topk_migrate.scopecheck:Tree.none_attributes"
                        f" + {A}:_Analysis.base_sets_none", ("returns", None)),
    "unclipped_write": ("field-meaning", f"{A}:_Analysis.unclipped_write", ("returns", None)),
    "_clipped": ("field-meaning", f"{A}:_Analysis._clipped", ("returns", True)),
    "replay_replaces": ("graph-replay", f"{A}:_Analysis.replay_replaces", ("returns", None)),
    # rows
    "RowTrace.hazard": ("rows-aligned", f"{R}:RowTrace.hazard", ("returns", None)),
    "row_hazard batch scope": ("rows-aligned", f"{A}:row_hazard", ("call", lambda orig: (
        lambda tree, expr, batch_scope=None, external=None: orig(tree, expr, None, external)))),
    "ROW_KEEPING": ("rows-aligned", f"{R}:ROW_KEEPING", ("accept_all",)),
    "NO_DATA_METHODS": ("rows-aligned", f"{R}:NO_DATA_METHODS", ("accept_all",)),
    "FRESH_FUNCTIONS": ("rows-aligned", f"{R}:FRESH_FUNCTIONS", ("accept_all",)),
    "RowTrace._dim_op": ("rows-aligned", f"{R}:RowTrace._dim_op", ("returns", None)),
    "RowTrace._moved": ("rows-aligned", f"{R}:RowTrace._moved", ("returns", None)),
    "RowTrace._reshaped": ("rows-aligned", f"{R}:RowTrace._reshaped", ("returns", None)),
    "_keeps_rows": ("rows-aligned", f"{R}:_keeps_rows", ("returns", True)),
    "_first_index_keeps_rows": ("rows-aligned", f"{R}:_first_index_keeps_rows", ("returns", True)),
    "ALWAYS_REORDERS": ("rows-aligned", f"{R}:ALWAYS_REORDERS", ("empty",)),
    "TRANSPOSING_ATTRS": ("rows-aligned", f"{R}:TRANSPOSING_ATTRS", ("empty",)),
    "ROWS_FUNCTIONS": ("rows-aligned", f"{R}:ROWS_FUNCTIONS", ("empty",)),
    "RowTrace._returns": ("rows-aligned", f"{R}:RowTrace._returns", ("returns", None)),
    "RowTrace._imported": ("rows-aligned", f"{R}:RowTrace._imported", ("returns", (True, None))),
    "RowTrace._row_writes": ("rows-aligned", f"{R}:RowTrace._row_writes", ("returns", None)),
    # indices
    "IndexTrace.hazard": ("indices-front-packed", f"{R}:IndexTrace.hazard", ("returns", None)),
    "INDEX_KEEPING": ("indices-front-packed", f"{R}:INDEX_KEEPING", ("accept_all",)),
    "INDEX_CHANGES": ("indices-front-packed", f"{R}:INDEX_CHANGES", ("empty",)),
    "IndexTrace._local": ("indices-front-packed", f"{R}:IndexTrace._local", ("returns", None)),
    "IndexTrace._writes": ("indices-front-packed", f"{R}:IndexTrace._writes", ("returns", None)),
}


def _gate_yes(self, callee):
    from topk_migrate.model import Capability

    return Capability(True, "mutant: every kernel accepts topk_length", decision="mutant")


def _resolve(target: str):
    module, _, path = target.partition(":")
    owner = importlib.import_module(module)
    parts = path.split(".")
    for p in parts[:-1]:
        owner = getattr(owner, p)
    return owner, parts[-1]


_NONE_FACT = {"may_be_none": False, "none_attributes": frozenset(), "base_sets_none": False}


@contextlib.contextmanager
def switched_off(name: str):
    """The analysis with one check switched off (restored on exit)."""
    _, targets, how = MUTATIONS[name]
    saved = []
    for target in targets.split(" + "):
        owner, attr = _resolve(target)
        orig = getattr(owner, attr)
        if name == "every None fact":
            new = _value(_NONE_FACT[attr])
        elif how[0] == "returns":
            new = _value(how[1])
        elif how[0] == "accept_all":
            new = EverythingDict(orig) if isinstance(orig, dict) else Everything(orig)
        elif how[0] == "empty":
            new = type(orig)()
        else:
            new = how[1](orig)
        saved.append((owner, attr, orig))
        setattr(owner, attr, new)
    try:
        yield
    finally:
        for owner, attr, orig in reversed(saved):
            setattr(owner, attr, orig)


def present(name: str) -> bool:
    try:
        for target in MUTATIONS[name][1].split(" + "):
            owner, attr = _resolve(target)
            if not hasattr(owner, attr):
                return False
        return True
    except (ImportError, AttributeError):
        return False


def hunt(name: str, seed: int, budget: int, minimize_budget: int = 80) -> dict:
    """Run programs of `seed` under the mutant until one is wrong there and right with the check on."""
    from adversarial import genrun, grammar

    out = {"name": name, "statement": MUTATIONS[name][0], "target": MUTATIONS[name][1], "how": MUTATIONS[name][2][0],
           "seed": seed, "budget": budget}
    if not present(name):
        out["state"] = "stale"
        return out
    t = time.perf_counter()
    progs = grammar.programs(seed, budget)
    mutant_engine = genrun.CachingEngine()
    intact_engine = genrun.CachingEngine()
    with genrun.Runner() as runner:
        def run_with(engine, p, off: bool):
            runner.engine = engine
            if off:
                with switched_off(name):
                    return runner.run(p)
            return runner.run(p)

        def caught(p):
            r = run_with(mutant_engine, p, True)
            if not r.wrong:
                return None
            return r if not run_with(intact_engine, p, False).wrong else None

        found, tried = None, 0
        for p in progs:
            tried += 1
            r = caught(p)
            if r is not None:
                found = r
                break
        out["tried"] = tried
        out["seconds_to_find"] = round(time.perf_counter() - t, 1)
        if found is None:
            out["state"] = "not caught"
            return out
        m = genrun.minimize(runner, found, minimize_budget, check=caught)
        out.update(state="caught", program=found.program.key, index=found.program.index,
                   construct=found.program.spec.label(), run=found.program.scenario.label(),
                   minimal=m.program.spec.label(), minimal_run=m.program.scenario.label(),
                   kind=genrun.problem_kind(m.problems), problems=m.problems, source=genrun.source_of(m.program))
    out["seconds"] = round(time.perf_counter() - t, 1)
    return out


def _table(results: List[dict], seed: int, budget: int, command: str) -> str:
    from adversarial.genrun import _fence

    caught = [r for r in results if r["state"] == "caught"]
    lines = ["## Mutation check", "",
             "Each row switches off one check of the analysis (monkeypatched in-process: an identity check returns "
             "\"nothing wrong\", an allowlist accepts everything, a table is emptied) and runs the generator's programs "
             f"of seed {seed} in order until one goes wrong under the mutant that is right with the check on "
             f"(budget: {budget} programs, the heavy tier's). `first` is that program (seed:index, replay with "
             "`python3 bench/generator_run.py --seed S --index I`, then switch the check off); `minimal` is what the "
             "minimizer kept of it.", "", _fence(command), "",
             f"**{len(caught)} of {len(results)} checks caught.**", "",
             "| check switched off | statement | how | first | programs tried | minimal construct | what went wrong |",
             "|---|---|---|---|---|---|---|"]
    for r in results:
        if r["state"] == "caught":
            lines.append(f"| `{r['name']}` | {r['statement']} | {r['how']} | {r['program']} | {r['tried']} | "
                         f"`{r['minimal']}` | {r['kind']} |")
        elif r["state"] == "stale":
            lines.append(f"| `{r['name']}` | {r['statement']} | {r['how']} | (not in the engine now) | | | |")
        else:
            lines.append(f"| `{r['name']}` | {r['statement']} | {r['how']} | **not caught** | {r['tried']} | | |")
    gaps = [r for r in results if r["state"] == "not caught"]
    if gaps:
        lines += ["", "Not caught within the budget (a generator gap, or a check the default-deny trace makes "
                  "redundant: with it off, what it named is still refused further on):", ""]
        lines += [f"- `{r['name']}` ({r['target']})" for r in gaps]
    lines += ["", "<details><summary>Minimal programs per caught check</summary>", ""]
    for r in caught:
        lines += [f"#### `{r['name']}`: `{r['minimal']}` [{r['minimal_run']}]", ""]
        lines += [f"- {p}" for p in r["problems"]] + ["", _fence(r["source"], "python"), ""]
    lines += ["</details>"]
    return "\n".join(lines)


def write_section(path: str, section: str) -> None:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from generator_run import MUTATIONS_BEGIN, MUTATIONS_END

    old = open(path).read() if os.path.exists(path) else "# Program generator (issue 25, item 7)\n"
    block = f"{MUTATIONS_BEGIN}\n{section.rstrip()}\n{MUTATIONS_END}"
    if MUTATIONS_BEGIN in old and MUTATIONS_END in old:
        new = old[:old.index(MUTATIONS_BEGIN)] + block + old[old.index(MUTATIONS_END) + len(MUTATIONS_END):]
    else:
        new = old.rstrip() + "\n\n" + block + "\n"
    with open(path, "w") as f:
        f.write(new)


def _worker(args):
    name, seed, budget = args
    r = hunt(name, seed, budget)
    print(f"{name:32s} {r['state']:10s} " + (f"{r.get('program')} after {r.get('tried')} programs "
          f"({r.get('seconds_to_find')} s): {r.get('minimal')} -- {r.get('kind')}" if r["state"] == "caught"
          else f"{r.get('tried', '')} programs"), flush=True)
    return r


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("names", nargs="*", help="mutations to run (default: all)")
    ap.add_argument("--seed", type=int, default=9)
    ap.add_argument("--budget", type=int, default=20000)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--list", action="store_true")
    ap.add_argument("-o", "--output", default=os.path.join(REPO, "results", "generator.md"))
    ap.add_argument("--no-write", action="store_true")
    a = ap.parse_args(argv)
    if a.list:
        for n, (stmt, target, how) in MUTATIONS.items():
            print(f"{n:32s} {stmt:28s} {how[0]:10s} {target}{'' if present(n) else '  (STALE)'}")
        return 0
    names = a.names or list(MUTATIONS)
    unknown = [n for n in names if n not in MUTATIONS]
    if unknown:
        ap.error(f"unknown mutations: {unknown}")
    jobs = [(n, a.seed, a.budget) for n in names]
    if a.jobs > 1:
        import multiprocessing

        with multiprocessing.get_context("spawn").Pool(a.jobs) as pool:
            results = pool.map(_worker, jobs, chunksize=1)
    else:
        results = [_worker(j) for j in jobs]
    order = {n: i for i, n in enumerate(MUTATIONS)}
    results.sort(key=lambda r: order[r["name"]])
    cmd = "python3 bench/generator_mutations.py" + (" " + " ".join(f"'{n}'" for n in a.names) if a.names else "") + \
        f" --seed {a.seed} --budget {a.budget}"
    section = _table(results, a.seed, a.budget, cmd)
    if not a.no_write:
        write_section(a.output, section)
        print(f"wrote the mutation section of {a.output}")
    caught = sum(r["state"] == "caught" for r in results)
    print(f"{caught} of {len(results)} checks caught")
    return 0 if caught == len([r for r in results if r["state"] != "stale"]) else 1


if __name__ == "__main__":
    sys.exit(main())
