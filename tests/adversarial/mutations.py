#!/usr/bin/env python3
"""Switch off one soundness check at a time; the program generator must then find a wrong rewrite.

    python3 bench/generator_mutations.py [NAME ...] [--seed 25] [--budget 20000] [--skip-caught] [--list]

Each mutation monkeypatches one allowlist or identity check of the analysis in-process (the
engine runs in-process, as in tests/test_generator.py): an identity check returns "nothing
wrong", an allowlist accepts everything, a check's table is emptied. The generator's programs of
--seed then run in order, under the mutant, until one goes wrong that is right with the check on
(the heavy tier's budget, 20,000 programs, at most). Each catch is minimized under that condition.
Each result is appended to results/generator-mutations.jsonl; results/generator-mutations.md is the
table of the latest result per check. --skip-subsumed leaves out the parts of the q-row trace
(SUBSUMED): with RowTrace.hazard switched off the trace admits all they would. A check no program catches is a gap of the generator (or a check that
the default-deny design makes redundant), reported as such.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
import time
from typing import Dict, List, Optional, Tuple

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "tests"))

A = "topk_migrate.codemods.pass_topk_length.analysis"
R = "topk_migrate.codemods.pass_topk_length.rows"
RE = "topk_migrate.codemods.pass_topk_length.reach"


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
#      | ("admits", phrases): the method's refusals that contain one of the phrases become None (admitted)
PK = "topk_migrate.codemods.pass_topk_length.rule"
RW = "topk_migrate.codemods.pass_topk_length.rewrite"
G = "topk_migrate.codemods.pass_topk_length.group"
HI = "topk_migrate.codemods.pass_topk_length.helper_identity"
MS = "topk_migrate.codemods.pass_topk_length.metadata_in_scope"
ROW_BINDINGS = {
    "no binding (match capture, star import)": ("has no binding the row trace can see",),
    "loop variable": ("is a loop variable",),
    "lambda parameter": ("is a lambda parameter",),
    "comprehension variable": ("is a comprehension variable",),
    "with / other statements": ("is bound by `with", "a binding the row trace does not model"),
}
MUTATIONS: Dict[str, Tuple[str, str, tuple]] = {
    # callee identity: the name called is the kernel at run time
    "callee_identity": ("callee-identity", f"{A}:_Analysis.callee_identity", ("returns", None)),
    "attribute_identity": ("callee-identity", f"{A}:_Analysis.attribute_identity", ("returns", None)),
    "attribute_targets": ("callee-identity", f"{A}:_Analysis.attribute_targets", ("returns", [])),
    "setattr_calls": ("callee-identity / helper-identity", f"{A}:_Analysis.setattr_calls", ("returns", [])),
    "reflection": ("callee-identity / helper-identity", f"{A}:_Analysis.reflection", ("returns", None)),
    "vendored_interface": ("callee-identity", "topk_migrate.kernels:vendored_interface", ("returns", None)),
    "forwards_unchanged": ("callee-identity", f"{A}:_Analysis.forwards_unchanged", ("returns", None)),
    # helper identity: every caller reaches the helper that gains the parameter
    "helper_identity": ("helper-identity", f"{A}:_Analysis.helper_identity", ("returns", None)),
    "attribute_assigns": ("helper-identity", f"{A}:_Analysis.attribute_assigns", ("returns", [])),
    "ARGUMENT_PASSING_DECORATORS": ("helper-identity", f"{HI}:ARGUMENT_PASSING_DECORATORS", ("accept_all",)),
    "SIGNATURE_KEEPING_DECORATORS": ("helper-identity", f"{HI}:SIGNATURE_KEEPING_DECORATORS", ("accept_all",)),
    "whole_project": ("whole-project", f"{A}:_Analysis.whole_project", ("returns", None)),
    "whole_project: overrides in other files": ("whole-project", f"{RE}:Project.overrides",
                                                ("returns", [])),
    "whole_project: attribute writes elsewhere": ("whole-project", f"{RE}:Project.attribute_writes",
                                                  ("returns", [])),
    "whole_project: reflection elsewhere": ("whole-project", f"{RE}:Project.reflection", ("returns", [])),
    # the kernel takes topk_length in every install
    "kernel_gate": ("kernel-accepts", "topk_migrate.api:KernelGate.__call__", ("call", lambda orig: _gate_yes)),
    "pins: extras-only": ("every-install", "topk_migrate.kernels:decide_pins", ("call", lambda orig: _extras_count(orig))),
    # names and placement of the inserted code
    "value_uses": ("discovery", f"{PK}:_value_uses", ("returns", [])),
    "existing_param": ("names", f"{A}:_Analysis.existing_param", ("returns", None)),
    "validate_rewrite": ("names / placement", f"{PK}:validate_rewrite", ("returns", {})),
    "fits (checked guard)": ("defense-in-depth", f"{G}:fits + {RW}:fits + {PK}:fits",
                             ("call", lambda orig: lambda value, q, proven, torch=None:
                              orig(value, q, proven, torch) if proven else "True")),
    "fits (every guard)": ("defense-in-depth", f"{G}:fits + {RW}:fits + {PK}:fits",
                           ("call", lambda orig: lambda value, q, proven, torch=None: "True")),
    # metadata
    "root_binding": ("metadata-in-scope", f"{MS}:root_binding", ("returns", (None, False))),
    "root_binding (analysis and validation)": (
        "metadata-in-scope", f"{MS}:root_binding + {RW}:root_binding", ("returns", (None, False))),
    "typed": ("metadata-type", f"{A}:_Analysis.typed", ("returns", True)),
    "base_sets_none": ("metadata-type", f"{A}:_Analysis.base_sets_none", ("returns", False)),
    "none_attributes": ("metadata-type", "topk_migrate.cst.scopecheck:Tree.none_attributes", ("returns", frozenset())),
    "may_be_none": ("metadata-type", "topk_migrate.cst.scopecheck:may_be_none", ("returns", False)),
    "every None fact": ("metadata-type", f"topk_migrate.cst.scopecheck:may_be_none + topk_migrate.cst.scopecheck:Tree.none_attributes"
                        f" + {A}:_Analysis.base_sets_none", ("returns", None)),
    "unclipped_write": ("field-meaning", f"{A}:_Analysis.unclipped_write", ("returns", None)),
    "_clipped": ("field-meaning", f"{A}:_Analysis._clipped", ("returns", True)),
    "replay_replaces": ("graph-replay", f"{A}:_Analysis.replay_replaces", ("returns", None)),
    # rows
    "RowTrace.hazard": ("rows-aligned", f"{R}:RowTrace.hazard", ("returns", None)),
    "row_hazard batch scope": ("rows-aligned", f"{A}:row_hazard", ("call", lambda orig: (
        lambda tree, expr, batch_scope=None, external=None: orig(tree, expr, None, external)))),
    "callers' row check": ("rows-aligned", f"{A}:row_hazard", ("call", lambda orig: _not_at_callers(orig))),
    "ROW_KEEPING": ("rows-aligned", f"{R}:ROW_KEEPING", ("accept_all",)),
    "DIM_KEEPING": ("rows-aligned", f"{R}:DIM_KEEPING", ("call", lambda orig: {k: (99, 1) for k in orig})),
    "ROW_KEEPING_FUNCTIONS": ("rows-aligned", f"{R}:ROW_KEEPING_FUNCTIONS + {R}:imported_names",
                              ("call", lambda orig: _engine_named(orig))),
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
    "RowTrace._writes_of": ("rows-aligned", f"{R}:RowTrace._writes_of", ("returns", None)),
    "aliases_in": ("rows-aligned / indices-front-packed", f"{R}:aliases_in", ("returns", set())),
    **{f"row binding form: {k}": ("rows-aligned", f"{R}:RowTrace._name + {R}:RowTrace._assignment", ("admits", v))
       for k, v in ROW_BINDINGS.items()},
    # indices
    "IndexTrace.hazard": ("indices-front-packed", f"{R}:IndexTrace.hazard", ("returns", None)),
    "callers' index check": ("indices-front-packed", f"{A}:index_hazard", ("call", lambda orig: _not_at_callers(orig))),
    "INDEX_KEEPING": ("indices-front-packed", f"{R}:INDEX_KEEPING", ("accept_all",)),
    "INDEX_KEEPING_FUNCTIONS": ("indices-front-packed", f"{R}:INDEX_KEEPING_FUNCTIONS + {R}:imported_names",
                                ("call", lambda orig: _engine_named(orig))),
    "INDEX_KEEPING_ENGINE_METHODS": ("indices-front-packed", f"{R}:INDEX_KEEPING_ENGINE_METHODS", ("accept_all",)),
    "INDEX_CHANGES": ("indices-front-packed", f"{R}:INDEX_CHANGES", ("empty",)),
    "IndexTrace._local": ("indices-front-packed", f"{R}:IndexTrace._local", ("returns", None)),
    "IndexTrace._writes": ("indices-front-packed", f"{R}:IndexTrace._writes", ("returns", None)),
    "index binding forms": ("indices-front-packed", f"{R}:IndexTrace._name",
                            ("admits", ("is a loop variable", "is bound by a form the indices trace does not model",
                                        "has no binding the indices trace can see"))),
}


def _engine_named(orig):
    """For X_KEEPING_FUNCTIONS: every name is on the list; for rows.imported_names: every function
    counts as imported from the engine (so the list, admitting every name, admits every function)."""
    if isinstance(orig, (dict, set, frozenset)):
        return EverythingDict(orig) if isinstance(orig, dict) else Everything(orig)
    return lambda tree, func: orig(tree, func) or ["sglang.mutant"]


def _not_at_callers(orig):
    """row_hazard / index_hazard as the analysis calls them, except for the arguments of the helper's
    callers (through_helper's loop over them): nothing found there."""
    def checked(*args, **kwargs):
        frame = sys._getframe(1)
        if frame.f_code.co_name == "through_helper" and "p" in frame.f_locals:
            return None, set()
        return orig(*args, **kwargs)
    return checked


def _extras_count(orig):
    """kernels.decide_pins with a pin under an `extra == ...` marker taken as a pin of the base install."""
    import dataclasses

    def decide(sources, dists, min_versions):
        plain = [[dataclasses.replace(p, marker="") if "extra" in p.marker else p for p in pins] for pins in sources]
        return orig(plain, dists, min_versions)
    return decide


def _admitting(orig, phrases):
    """A trace method whose own refusals of the name it reads (those naming it first and holding one
    of the phrases) admit the name instead; what it finds further down is kept."""
    import libcst as cst

    def method(self, *args, **kwargs):
        why = orig(self, *args, **kwargs)
        name = args[0].value if isinstance(args[0], cst.Name) else args[1]
        if why and why.startswith(f"`{name}` ") and any(ph in why for ph in phrases):
            return None
        return why
    return method


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
        elif how[0] == "admits":
            new = _admitting(orig, how[1])
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


def _engine() -> str:
    """The commit the engine ran at (and whether its sources differed from it)."""
    import subprocess

    try:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", "topk_migrate", "codemods"],
                               cwd=REPO, capture_output=True, text=True).stdout.strip()
        return rev + (" + work tree" if dirty else "")
    except OSError:
        return "?"


def hunt(name: str, seed: int, budget: int, minimize_budget: int = 40, max_seconds: Optional[float] = None) -> dict:
    """Run programs of `seed` under the mutant until one is wrong there and right with the check on
    (at most `budget` programs, and at most `max_seconds` if given: then the hunt was cut short)."""
    from adversarial import genrun, grammar

    out = {"name": name, "statement": MUTATIONS[name][0], "target": MUTATIONS[name][1], "how": MUTATIONS[name][2][0],
           "seed": seed, "budget": budget, "engine": _engine()}
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
            if max_seconds is not None and time.perf_counter() - t > max_seconds:
                out["cut_short"] = f"stopped after {max_seconds:.0f} s"
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


# What switching a check off means, where the generic wording (from `how`) says too little.
MEANING = {
    "kernel_gate": "every kernel counts as accepting topk_length",
    "pins: extras-only": "a pin under an `extra == ...` marker decides for the base install too",
    "fits (checked guard)": "the inserted guard where the types prove nothing (getattr form) is `True`",
    "fits (every guard)": "every inserted guard is `True` (not even q's row count is compared)",
    "row_hazard batch scope": "rows that come in through another function's parameters count as the batch's",
    "callers' row check": "the helper's callers' q arguments are not traced (the helper's own trace still is)",
    "callers' index check": "the helper's callers' indices arguments are not traced",
    "DIM_KEEPING": "unsqueeze/squeeze/flatten keep the rows whatever their dim",
    "ROW_KEEPING_FUNCTIONS": "every function not of the project keeps q's rows (its arguments still traced)",
    "INDEX_KEEPING_FUNCTIONS": "every function not of the project keeps the top-k entries",
    "root_binding (analysis and validation)": "the metadata root counts as bound once on every path, in the "
                                               "analysis and in the validation of the rewrite",
    "every None fact": "nothing may be None (may_be_none, none_attributes, base_sets_none all answer no)",
    "index binding forms": "a loop variable, a `match` capture or another unmodelled binding of the indices is admitted",
}


def meaning(name: str) -> str:
    if name in MEANING:
        return MEANING[name]
    stmt, target, how = MUTATIONS[name]
    attr = target.split(" + ")[0].split(":")[1]
    if how[0] == "returns":
        return f"`{attr}` answers `{how[1]!r}`"
    if how[0] == "accept_all":
        return f"`{attr}` holds every name"
    if how[0] == "empty":
        return f"`{attr}` is empty"
    if how[0] == "admits":
        return "the trace admits a name it refused as: " + " / ".join(f"\"{p}\"" for p in how[1])
    return how[0]


# Checks whose mutant admits a subset of what another mutant admits (the q-row trace's parts: with
# RowTrace.hazard answering None, the row trace admits everything, the callers' trace included).
# Under the kernel's contract q's row order alone cannot make topk_length wrong (the lengths must agree
# with the indices; q's row count is pinned to theirs by the kernel's shape check), so these are defense
# in depth the oracle cannot see, except where a refusal of the q trace also covers the indices (the
# lambda parameter: a lambda helper's indices come from callers the index trace does not follow).
SUBSUMED = {n: "RowTrace.hazard" for n in (
    "row_hazard batch scope", "callers' row check", "ROW_KEEPING", "DIM_KEEPING", "ROW_KEEPING_FUNCTIONS",
    "FRESH_FUNCTIONS", "RowTrace._dim_op", "RowTrace._moved", "RowTrace._reshaped", "_keeps_rows",
    "_first_index_keeps_rows", "ALWAYS_REORDERS", "ROWS_FUNCTIONS", "RowTrace._returns", "RowTrace._imported",
    "RowTrace._row_writes", "RowTrace._writes_of",
    *(f"row binding form: {k}" for k in ROW_BINDINGS if k != "lambda parameter"))}


# Why a check the generator does not catch is not a gap of the generator (filled in from the analysis).
NOTES: Dict[str, str] = {
    "vendored_interface": "not a gap: switched off, the engine refuses more, not less. The kernel gate reads the same "
                          "interface, so a kernel the project defines becomes \"capability unknown\" (manual); no "
                          "rewrite can go wrong through it",
    "root_binding": "checked twice by design: the validation of the rewritten module asks scopecheck.root_binding "
                    "again and refuses the group, so the analysis' copy alone switched off changes no rewrite; "
                    "both switched off (`root_binding (analysis and validation)`) is caught",
    "base_sets_none": "one of three None facts that each give the None-safe read; on every generated program another "
                      "one (may_be_none, none_attributes) also holds, so each alone changes no rewrite; all three "
                      "switched off (`every None fact`) is caught",
    "none_attributes": "as base_sets_none: redundant with the other None facts; `every None fact` is caught",
    "may_be_none": "as base_sets_none: redundant with the other None facts; `every None fact` is caught",
    "TRANSPOSING_ATTRS": "half of it is the q trace's (`q.T` transposes rows: not observable, see RowTrace.hazard); the "
                         "other half is may_share's (`y = x.T` is a view of x, so an in-place write of y writes x), "
                         "which no generated program exercises on the indices: a generator gap (an in-place write "
                         "through a `.T` / `.mT` view of the indices)",
    "ARGUMENT_PASSING_DECORATORS": "caught when the hunt runs long enough: the decorator factory called with no "
                                   "arguments (`decorator=factory_fixed`) is the production that catches it (271 of "
                                   "seed 25's first 20,000 programs have it, most with another production that is "
                                   "refused on its own)",
    "INDEX_CHANGES": "not a gap: a denylist inside a default-deny trace. Every operation it names is off INDEX_KEEPING, "
                     "so with it emptied the trace's final refusal (\"neither on the allowlist ...\") names the same "
                     "step, and an in-place method is refused by IndexTrace._writes (caught above) as a mutator whatever its name",
    "RowTrace.hazard": "not a generator gap: under the kernel's contract q's row order cannot make topk_length wrong. "
                       "The kernel reads `indices[i, :, :topk_length[i]]`; the lengths must agree with the indices' "
                       "rows, and q's row count is pinned to the indices' by the kernel's own shape check (an "
                       "original whose q and indices differ in rows raises). A step that reorders q alone leaves the "
                       "original and the rewrite computing the same thing (bitwise, the stub shows it); one that "
                       "reorders q and the indices together is refused by the indices trace (indices-front-packed) "
                       "on its own. The row trace's refusals are a subset of the index trace's as far as execution "
                       "can tell, so no generated program can tell it is off; every part of it (SUBSUMED) likewise",
}


def _table(results: List[dict], command: str) -> str:
    from adversarial.genrun import _fence

    caught = [r for r in results if r["state"] == "caught"]
    lines = ["# Mutation check of the program generator (issue 25, item 7)", "",
             "Each row switches off one allowlist or identity check of the analysis (monkeypatched inside "
             "bench/generator_mutations.py's process, never by editing the sources: an identity check answers "
             "\"nothing wrong\", an allowlist holds everything, a table of hazards is emptied) and runs the "
             "generator's programs (tests/adversarial/grammar.py) of one seed in order until one goes wrong under "
             "the mutant that is right with the check on. The budget is the heavy tier's, 20,000 programs. "
             "`first` is that program: `python3 bench/generator_run.py --seed S --index I` replays it with the "
             "check on (right), `python3 bench/generator_mutations.py 'NAME' --seed S` finds it again under the "
             "mutant; `minimal` is what the minimizer kept of it (every other production back at the reference).", "",
             "Reproduce (single process; each mutation stops at its first catch; results are appended to "
             "results/generator-mutations.jsonl and this table is made from the latest result per check):", "",
             _fence(command), "",
             "Engine: " + ", ".join(sorted({r.get("engine", "?") for r in results if r.get("state") != "subsumed"}))
             + " (`+ work tree`: with the analysis' uncommitted changes of then; each row's run is in the log).", "",
             f"**{len(caught)} of {len(results)} checks caught.**", "",
             "| check switched off | statement | what switching it off means | first (seed:index) | programs to first catch "
             "| minimal construct | what went wrong |",
             "|---|---|---|---|---|---|---|"]
    for r in results:
        head = f"| `{r['name']}` | {MUTATIONS[r['name']][0]} | {meaning(r['name'])} |"
        if r["state"] == "caught":
            lines.append(f"{head} {r['program']} | {r['tried']} | `{r['minimal']}` | {r['kind']} |")
        elif r["state"] == "stale":
            lines.append(f"{head} (not in the engine now) | | | |")
        elif r["state"] == "subsumed":
            lines.append(f"{head} not run alone (a part of `{r['by']}`: see the note below the table) | | | |")
        else:
            cut = f" ({r['cut_short']})" if r.get("cut_short") else ""
            lines.append(f"{head} **not caught** (seed {r['seed']}) | > {r['tried']}{cut} | | |")
    gaps = [r for r in results if r["state"] == "not caught"]
    if gaps:
        lines += ["", "Not caught within the budget:", ""]
        lines += [f"- `{r['name']}` ({r['target']}): {NOTES.get(r['name'], 'a generator gap')}" for r in gaps]
    if any(r["state"] == "subsumed" for r in results):
        lines += ["", "Parts of the q-row trace not run alone (`--skip-subsumed`): under the kernel's contract q's row "
                  "order alone cannot make topk_length wrong (the lengths must agree with the indices' rows; q's row "
                  "count is pinned to theirs by the kernel's shape check), and a step that reorders q and the "
                  "indices together is refused by the indices trace on its own. The whole q trace switched off "
                  "(`RowTrace.hazard`) is caught only through its lambda-parameter refusal, which also covers the "
                  "indices of a lambda helper (run alone above)."]
    lines += ["", "<details><summary>Minimal programs per caught check</summary>", ""]
    for r in caught:
        lines += [f"#### `{r['name']}`: `{r['minimal']}` [{r['minimal_run']}]", ""]
        lines += [f"- {p}" for p in r["problems"]] + ["", _fence(r["source"], "python"), ""]
    lines += ["</details>", ""]
    return "\n".join(lines)


def _worker(args):
    name, seed, budget, minimize_budget, max_seconds = args
    r = hunt(name, seed, budget, minimize_budget, max_seconds)
    print(f"{name:40s} {r['state']:10s} " + (f"{r.get('program')} after {r.get('tried')} programs "
          f"({r.get('seconds_to_find')} s): {r.get('minimal')} -- {r.get('kind')}" if r["state"] == "caught"
          else f"{r.get('tried', '')} programs"), flush=True)
    return r


def _load_log(path: str) -> Dict[str, dict]:
    import json

    got: Dict[str, dict] = {}
    if os.path.exists(path):
        for line in open(path):
            if line.strip():
                r = json.loads(line)
                if r["name"] in MUTATIONS:
                    got[r["name"]] = r  # the latest run of each check (a new grammar, another seed, a larger budget)
    return got


def main(argv=None) -> int:
    import json

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("names", nargs="*", help="mutations to run (default: all)")
    ap.add_argument("--seed", type=int, default=25)
    ap.add_argument("--budget", type=int, default=20000)
    ap.add_argument("--minimize-budget", type=int, default=40)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--skip-caught", action="store_true", help="leave out mutations the log has a catch for")
    ap.add_argument("--skip-subsumed", action="store_true",
                    help="leave out the checks of SUBSUMED (their verdicts are a subset of another mutant's)")
    ap.add_argument("--max-seconds", type=float, help="cut each hunt short after this long (recorded as such)")
    ap.add_argument("--log", default=os.path.join(REPO, "results", "generator-mutations.jsonl"),
                    help="every result is appended here; the table is made from its latest result per check")
    ap.add_argument("-o", "--output", default=os.path.join(REPO, "results", "generator-mutations.md"))
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--table-only", action="store_true", help="run nothing: write the table from the log")
    a = ap.parse_args(argv)
    if a.list:
        for n, (stmt, target, how) in MUTATIONS.items():
            print(f"{n:40s} {stmt:28s} {how[0]:10s} {target}{'' if present(n) else '  (STALE)'}")
        return 0
    names = [] if a.table_only else a.names or list(MUTATIONS)
    unknown = [n for n in names if n not in MUTATIONS]
    if unknown:
        ap.error(f"unknown mutations: {unknown}")
    if a.skip_caught:
        logged = _load_log(a.log)
        names = [n for n in names if logged.get(n, {}).get("state") != "caught"]
    results = []

    def keep(r: dict) -> None:
        results.append(r)
        if not a.no_write:
            with open(a.log, "a") as f:
                f.write(json.dumps(r) + "\n")

    if a.skip_subsumed:
        names = [n for n in names if n not in SUBSUMED]
    jobs = [(n, a.seed, a.budget, a.minimize_budget, a.max_seconds) for n in names]
    if a.jobs > 1:
        import multiprocessing

        with multiprocessing.get_context("spawn").Pool(a.jobs) as pool:
            for r in pool.imap(_worker, jobs, chunksize=1):
                keep(r)
    else:
        for j in jobs:
            keep(_worker(j))
    caught = sum(r["state"] == "caught" for r in results)
    print(f"{caught} of {len(results)} checks caught in this run")
    if not a.no_write:
        logged = _load_log(a.log)
        table = [logged[n] if n in logged else dict(name=n, state="subsumed", by=SUBSUMED[n], target=MUTATIONS[n][1])
                 for n in MUTATIONS if n in logged or (a.skip_subsumed and n in SUBSUMED)]
        cmd = (f"python3 bench/generator_mutations.py --seed {a.seed} --budget {a.budget} --skip-subsumed"
               + (f" --max-seconds {a.max_seconds:.0f}" if a.max_seconds else "")
               + "\n# one check: python3 bench/generator_mutations.py 'NAME' --seed 25")
        with open(a.output, "w") as f:
            f.write(_table(table, cmd))
        print(f"wrote {a.output} ({sum(r['state'] == 'caught' for r in table)} of {len(table)} caught)")
    return 0 if caught == len([r for r in results if r["state"] != "stale"]) else 1


if __name__ == "__main__":
    sys.exit(main())
