"""Generated programs (issue 25, item 7): backends composed from a grammar run before and after apply.

tests/adversarial/grammar.py composes small DSA backend projects (binding forms, call forms, class
layouts across files and packages, decorators, reflection, pins, a simulated CUDA graph, row and
index operations from a pool larger than the analysis' allowlists); tests/adversarial/genrun.py runs
each one before and after `apply` under the contract-enforcing stub kernel (harness.run_variant). The
oracle is execution only: a program that ran before and raises after, hands the kernel a length that
disagrees with its indices, changes its output or hides a kernel use is a wrong rewrite.

Default tier: of seed 25's first 1,000 programs, the first 150 and the fewest more that draw every
alternative of every production (short_programs), split in two tests (one per xdist worker). Heavy tier
(`-m heavy`): all 1,000 of seed 25 (the same body), and 8,000 programs of genrun.HEAVY_SEED, or of the
seed in TOPK_GEN_SEED (`random`: one drawn now), named in every failure message. CI's run is deterministic, so a submission's verdict does not
depend on a draw; hunting with fresh seeds is `TOPK_GEN_SEED=random` (or bench/generator_run.py),
and a seed that finds a wrong rewrite becomes a regression test once fixed. `python3 bench/generator_run.py` writes the summary (results/generator.md) with
each wrong rewrite minimized; `--seed S --index I` replays one program.

Any wrong rewrite fails the test, with its seed and index to replay; so does a broken generator
(originals that fail).
"""
import os
import random
import time

import pytest

pytest.importorskip("torch", reason="the stub kernel needs torch (pip install 'topk-migrate[smoke]')")

from adversarial import genrun, grammar, harness  # noqa: E402  (imports torch)

SEED = 25
DEFAULT_PROGRAMS = 1100  # seed 25's programs drawing every alternative (1074 do): a covering part runs in the default tier
SHORT_PROGRAMS = 150  # the default tier's first programs (short_programs adds those that cover the rest)
HEAVY_PROGRAMS = 8000  # about 4.5 min at 30 programs/s: CI's heavy tier stays well inside its time (hunting: bench/generator_run.py)
PARTS = 2
BROKEN_LIMIT = 0.01  # originals that fail are generator bugs: they must stay rare


class WrongRewrites(AssertionError):
    """Generated programs that apply turned wrong."""


def short_programs(seed: int = SEED, n: int = DEFAULT_PROGRAMS, first: int = SHORT_PROGRAMS):
    """The default tier's part of programs(seed, n): the first `first`, then, greedily, the program that draws the
    most alternatives not drawn yet, until every alternative that programs(seed, n) draws is drawn; each with
    every scenario of its project (one apply serves them all)."""
    progs = grammar.programs(seed, n)
    drawn = [{(k, str(v)) for k, v in grammar.productions_of(p.spec)} for p in progs]
    chosen = {p.index for p in progs[:first]}
    left = set().union(*drawn) - set().union(*(d for p, d in zip(progs, drawn) if p.index in chosen))
    while left:
        best = max(range(len(progs)), key=lambda i: (len(drawn[i] & left), -i))
        chosen.add(progs[best].index)
        left -= drawn[best]
    return [p for p in progs if p.index in chosen]


def _run_part(seed: int, n: int, part: int, parts: int, tmp_path, short: bool = False):
    progs = [p for p in (short_programs(seed, n) if short else grammar.programs(seed, n)) if p.index % parts == part]
    with genrun.Runner(tmp_path) as runner:
        summary = genrun.run_many(progs, runner)
    return progs, summary


def _verdict(summary, seed: int, n: int, part: int, parts: int) -> None:
    where = f"seed {seed} (TOPK_GEN_SEED={seed}), {n} programs, part {part} of {parts}"
    ran = summary.programs
    assert len(summary.broken) <= BROKEN_LIMIT * ran, (
        f"{where}: {len(summary.broken)} of {ran} ORIGINAL programs failed (generator bugs):\n"
        + "\n".join(b.describe() for b in summary.broken[:5]))
    if summary.wrong:
        lines = [f"{where}: {len(summary.wrong)} of {ran} programs went wrong after apply "
                 f"(replay: python3 bench/generator_run.py --seed {seed} --index I):"]
        seen = set()
        for w in summary.wrong:
            if w.program.index in seen:
                continue
            seen.add(w.program.index)
            lines.append(w.describe())
            if len(seen) >= 8:
                lines.append("...")
                break
        raise WrongRewrites("\n".join(lines))


def _default_part(part: int, tmp_path, short: bool = True) -> None:
    """Seed 25's programs, part `part` of PARTS: the default tier's short_programs, or (short=False) all 1,000."""
    t = time.perf_counter()
    progs, summary = _run_part(SEED, DEFAULT_PROGRAMS, part, PARTS, tmp_path, short)
    elapsed = time.perf_counter() - t
    print(f"part {part}: {summary.programs} programs ({summary.specs} projects) in {elapsed:.1f} s, "
          f"{summary.rate:.1f}/s; broken {len(summary.broken)}, wrong {len(summary.wrong)}, "
          f"safe {summary.safe} (refused {len(summary.safe_refused)})")
    least = (SHORT_PROGRAMS if short else DEFAULT_PROGRAMS) // PARTS - 50
    assert summary.programs == len(progs) and sum(1 for _ in progs) > least
    _verdict(summary, SEED, DEFAULT_PROGRAMS, part, PARTS)


def test_generated_programs_part0(tmp_path):
    """Default tier: seed 25's short_programs (of its first 1,000); this part runs the even-numbered generated
    projects (the odd ones are the last test of this file, so that xdist's two workers take one part each)."""
    _default_part(0, tmp_path)


@pytest.mark.heavy
@pytest.mark.parametrize("part", range(PARTS))
def test_generated_programs_seed25_heavy(part, tmp_path):
    """Heavy tier: all 1,000 programs of seed 25, of which the default tier runs short_programs (same body)."""
    _default_part(part, tmp_path, short=False)


@pytest.mark.heavy
@pytest.mark.parametrize("part", range(PARTS))
def test_generated_programs_heavy(part, tmp_path):
    """Heavy tier: 8,000 programs of genrun.HEAVY_SEED, or of TOPK_GEN_SEED (`random`: drawn now; in every message)."""
    wanted = os.environ.get("TOPK_GEN_SEED") or str(genrun.HEAVY_SEED)
    seed = random.SystemRandom().randrange(1, 2**31) if wanted == "random" else int(wanted)
    os.environ["TOPK_GEN_SEED"] = str(seed)  # the other part (same process) draws the same programs
    print(f"TOPK_GEN_SEED={seed}")
    progs, summary = _run_part(seed, HEAVY_PROGRAMS, part, PARTS, tmp_path)
    assert summary.programs == len(progs), f"seed {seed}"
    _verdict(summary, seed, HEAVY_PROGRAMS, part, PARTS)


def test_programs_are_deterministic():
    """A seed names its programs: the same specs, runs and files every time."""
    a, b = grammar.programs(SEED, 200), grammar.programs(SEED, 200)
    assert [(p.index, p.spec, p.scenario) for p in a] == [(p.index, p.spec, p.scenario) for p in b]
    assert [p.variant().source for p in a[:40]] == [p.variant().source for p in b[:40]]
    assert grammar.programs(SEED + 1, 50) != a[:50]


def test_every_production_is_drawn():
    """The default tier's programs use every alternative of every production (nothing is dead grammar)."""
    used = set()
    for p in grammar.programs(SEED, DEFAULT_PROGRAMS):
        used.update((k, str(v)) for k, v in grammar.productions_of(p.spec))
    missing = [(k, a) for k, alts in grammar.every_production().items() for a in alts if (k, str(a)) not in used]
    assert missing == []
    # and so do those the default tier runs (test_generated_programs_part0/1)
    short = short_programs()
    assert {(k, str(v)) for p in short for k, v in grammar.productions_of(p.spec)} == used
    assert short[:SHORT_PROGRAMS] == grammar.programs(SEED, DEFAULT_PROGRAMS)[:SHORT_PROGRAMS]


def test_programs_parse_and_name_their_sites():
    """Every file of every program parses, and backend.py marks each kernel call it holds."""
    import ast

    for p in grammar.programs(SEED, DEFAULT_PROGRAMS)[::3]:
        v = p.variant()
        for name, text in ((harness.MODULE, v.source),) + tuple(f for f in v.files if f[0].endswith(".py")):
            ast.parse(text, filename=f"{p.key}:{name}")
        if p.spec.layout != "mixin_file":
            assert harness.marker_lines(v.source), p.key


def test_safe_subset_is_drawn_and_measured():
    """About a third of the programs are in the safe subset (over-refusal is counted there, not failed)."""
    progs = grammar.programs(SEED, DEFAULT_PROGRAMS)
    safe = [p for p in progs if p.safe]
    assert len(safe) > DEFAULT_PROGRAMS // 8
    assert all(grammar.is_safe(p.spec) for p in safe)
    assert not grammar.is_safe(grammar.normalize(grammar.Spec(rows=(("flip_m", "both", "direct", "helper"),))))


GRAPH_PROGRAM = '''
import sys
import torch
from sgl_kernel.flash_mla import flash_mla_sparse_fwd


class M:
    def __init__(self, lens):
        self.lens = lens


def entry(inp, replace_object):
    from adv_graph_sim import Graph

    static_q, static_idx = inp.q.roll(1, 0).clone(), inp.indices.roll(1, 0).clone()
    box = [M(inp.lengths.roll(1, 0).clone())]
    graph = Graph(lambda: flash_mla_sparse_fwd(static_q, inp.kv, static_idx, inp.sm_scale, topk_length=box[0].lens)[0])
    first = graph.capture()
    static_q.copy_(inp.q)
    static_idx.copy_(inp.indices)
    if replace_object:
        box[0] = M(inp.lengths.clone())
    else:
        box[0].lens.copy_(inp.lengths)
    return first, graph.replay()
'''


@pytest.mark.parametrize("replace_object", [False, True])
def test_graph_simulation_reads_the_captured_tensor(replace_object, tmp_path):
    """The simulated CUDA graph replays each launch with the topk_length object captured: an
    in-place metadata update is seen, a replaced metadata object is not (the stub then records it)."""
    (tmp_path / "adv_graph_sim.py").write_text(grammar.GRAPH_SIM)
    with harness.stub_kernels() as kernel:
        kernel.configure()
        import sys

        sys.path.insert(0, str(tmp_path))
        try:
            ns: dict = {}
            exec(compile(GRAPH_PROGRAM, "graph_program", "exec"), ns)
            first, second = ns["entry"](harness.Inputs(), replace_object)
        finally:
            sys.path.remove(str(tmp_path))
            sys.modules.pop("adv_graph_sim", None)
        bad = [v for c in kernel.CALLS for v in c.violations]
        assert len(kernel.CALLS) == 2
        if replace_object:
            assert bad and "wrong length" in bad[0]
        else:
            assert bad == []
            plain = kernel.flash_mla_sparse_fwd(harness.Inputs().q, harness.Inputs().kv, harness.Inputs().indices, 0.25)[0]
            assert second.shape == plain.shape


def test_generator_catches_a_disabled_index_check(tmp_path, monkeypatch):
    """With the indices trace switched off, the default seed's programs include a wrong rewrite the analysis
    otherwise refuses (the mutation check of bench/generator_mutations.py, for one check, in the default tier).
    Rows reordered in the indices (alone or with q) are what topk_length can get wrong: q's rows reordered
    alone pair each q row with its own indices and lengths, before and after apply alike."""
    from topk_migrate.codemods.pass_topk_length import rows

    progs = grammar.programs(SEED, DEFAULT_PROGRAMS)
    with genrun.Runner(tmp_path / "mutant") as runner:
        caught = None
        for p in progs:
            if not any(st[0] in grammar.ROW_OPS and grammar.ROW_OPS[st[0]].kind == "perm" and st[1] != "q"
                       for st in p.spec.rows):
                continue
            with monkeypatch.context() as m:
                m.setattr(rows.IndexTrace, "hazard", lambda self, e: None)
                r = runner.run(p)
            if r.wrong:
                caught = p
                break
    assert caught is not None, "no program of seed 25 went wrong with IndexTrace.hazard disabled"
    with genrun.Runner(tmp_path / "intact") as runner:
        assert not runner.run(caught).wrong, f"{caught.key} is wrong even with the indices trace on"


def test_generated_programs_part1(tmp_path):
    """Default tier, the odd-numbered generated projects of seed 25's short_programs (see part 0)."""
    _default_part(1, tmp_path)
