"""`apply --lengths derived` (issue 39) over the differential suites: the adversarial variants and the generated programs.

Each variant or program runs before and after apply under the contract-enforcing stub kernel
(harness.run_variant), in harness.derived_mode(): MIN_ROWS lowered to 0 in the module the engine reads
it from (the harness's calls have 8 rows: at 2048 the rewrite would pass None), the kernel's own
contract checked (the derived lengths are last valid slot + 1, right for rows with -1 gaps as the real
kernel reads them), and the simulated CUDA graph replaying the step's own tensor work.

The issue's "done when", as checked here: every safe edit stays fixed; every hazard whose kernel takes
topk_length is rewritten and runs right (no crash, contract clean, outputs bitwise equal); the kernel
and identity hazards (the callee may not be the kernel, may be rebound, or the kernel is too old or
of unknown capability) stay manual, for a reason of that kind. A variant left manual for any other
reason is an over-refusal and fails its test.

Default tier: a covering sample of the adversarial variants (every hazard class, both expectations
where a class has both, the controls) and seed 25's short_programs (test_generator's default tier).
Heavy tier (`-m heavy`): every adversarial variant, generated.SAMPLE and every composed choice, and
all 1,000 programs of seed 25.
"""
import collections
import dataclasses
import re
import time
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="the stub kernel needs torch (pip install 'topk-migrate[smoke]')")

import test_generator  # noqa: E402  (seed 25's programs, as the generator's tiers draw them)
from adversarial import generated, genrun, grammar, harness  # noqa: E402  (imports torch)
from adversarial.variants import HAZARDS, VARIANTS  # noqa: E402

# -- what derived mode must do with each adversarial variant ---------------------------------------

# Class 4 variants whose callee may not be the kernel at run time (rebound, shadowed, a fallback module,
# a project wrapper without the parameter, a method or attribute named like it, reflection that may
# rebind it). The other class 4 variants rebind the *helper*: the kernel call inside it is still the kernel.
KERNEL_IDENTITY = frozenset({
    "rebound_at_module_level", "rebound_under_env_flag", "rebound_locally", "local_param_shadows_kernel",
    "param_shadows_module_alias", "try_except_fallback_module", "try_except_fallback_def", "star_import_shadows_kernel",
    "method_named_like_kernel", "module_alias_rebound_under_env_flag", "project_wrapper_fixed_signature",
    "attribute_module_is_legacy", "module_alias_rebound_locally", "local_try_except_fallback",
    "type_checking_import_else_compat", "kernel_module_attribute_monkeypatched",
    "helper_swapped_through_a_parameter_declared_as_its_base", "fallback_shim_that_refuses_the_lengths",
    "kwargs_wrapper_of_an_older_kernel",
})
# Fixed with the derived lengths, but the entry reaches another function at run time (the helper replaced
# or overridden), so the rewritten call never runs: the kernel gets no topk_length, rightly.
RUNS_ELSEWHERE = frozenset({
    "helper_defined_in_two_branches", "helper_method_replaced_on_class", "helper_shadowed_by_instance_attribute",
    "method_defined_in_two_branches", "subclass_in_other_module_overrides_helper",
})
DERIVED_REASON = "derived from the call's indices"


def stays_manual(v: harness.Variant) -> bool:
    """A kernel or identity hazard: too old or unknown a kernel (the pins), the kernel taken as a value
    (class 8: the call is not the kernel's, but through an alias, a fixable control), or a callee that may not be
    the kernel."""
    return v.legacy_kernel or v.hazard == "8 discovery" and v.expect != "fixable" or v.name in KERNEL_IDENTITY


def in_derived_mode(v: harness.Variant) -> harness.Variant:
    """The variant with what derived mode must do: controls stay fixed, kernel hazards stay manual, the rest is fixed."""
    if stays_manual(v):
        return dataclasses.replace(v, expect="reported")
    return v if v.expect == "fixable" else dataclasses.replace(v, expect="derived")


# -- why a site is manual ----------------------------------------------------------------------------

NOT_DERIVED = "; nor do the lengths derived at the call fix it: "
_CAPABILITY = re.compile(r"^(kernel too old|kernel capability unknown|op-level call)")
_IDENTITY = re.compile(
    r"may not be the kernel|may also be .*, a kernel (of|too old)|may rebind|, not the kernel|another function than the kernel"
    r"|may replace the kernel|^the kernel is |(may )?calls? the kernel through|is defined in this project .* the kernel gets"
    r"|what it does to the kernel")
_ARGUMENTS = re.compile(r"^\*{1,2}(kw)?args may already carry topk_length")
# what may keep a site manual in derived mode: the kernel, its arguments (`**kwargs` may already carry
# topk_length: passing it again would be a TypeError)
ACCEPTED = ("kernel identity", "kernel capability", "call arguments (*args/**kwargs)")


def reason_kind(reason: str) -> str:
    """kernel identity | kernel capability | call arguments (*args/**kwargs) | not derivable: ... | other: ..."""
    if NOT_DERIVED in reason:
        blocker = reason.split(NOT_DERIVED, 1)[1]
        if _CAPABILITY.search(blocker):
            return "kernel capability"
        return "kernel identity" if _IDENTITY.search(blocker) else f"not derivable: {blocker[:90]}"
    if _CAPABILITY.search(reason):
        return "kernel capability"
    if _ARGUMENTS.search(reason):
        return "call arguments (*args/**kwargs)"
    if _IDENTITY.search(reason):
        return "kernel identity"
    return f"other: {reason[:90]}"


def derived_problems(outcome: harness.Outcome) -> list:
    """What derived mode got wrong in one variant's outcome, beyond harness.run_variant's own checks."""
    v, out = outcome.variant, list(outcome.problems)
    marked = set(harness.marker_lines(v.source))
    for line, status, why in outcome.sites:
        if line in marked and status == "manual" and reason_kind(why) not in ACCEPTED:
            out.append(f"over-refusal: line {line} left manual for a reason not about the kernel ({reason_kind(why)})")
    derived_sites = any(DERIVED_REASON in why for _, _, why in outcome.sites)
    if derived_sites and not outcome.fixed and not outcome.wrong and v.name not in RUNS_ELSEWHERE:
        out.append("rewritten with the derived lengths, but the kernel got no topk_length (MIN_ROWS not lowered?)")
    return out


def run_derived(variants, root: Path):
    """Each variant in derived mode: [(variant as expected, outcome, problems)]."""
    with harness.stub_kernels(), harness.derived_mode():
        outs = []
        for v in variants:
            o = harness.run_variant(in_derived_mode(v), root, harness.derived_engine)
            outs.append((o.variant, o, derived_problems(o)))
    return outs


def tally(outs) -> str:
    """Counts for the report: fixed, manual by reason kind, wrong."""
    kinds = collections.Counter()
    fixed = wrong = 0
    for v, o, problems in outs:
        if problems:
            wrong += 1
        elif v.expect == "reported":
            for _, st, why in o.sites:
                kinds[reason_kind(why)] += st == "manual"
        else:
            fixed += 1
    lines = [f"{len(outs)} variants: {fixed} fixed and right, {sum(1 for v, _, _ in outs if v.expect == 'reported')} "
             f"expected manual, {wrong} with problems"]
    lines += [f"  manual sites, {k}: {n}" for k, n in kinds.most_common()]
    return "\n".join(lines)


def _fail_on(outs) -> None:
    bad = [(v, o, p) for v, o, p in outs if p]
    if bad:
        text = "\n\n".join(dataclasses.replace(o, problems=p).describe() for v, o, p in bad[:12])
        pytest.fail(f"{len(bad)} of {len(outs)} variants wrong or over-refused with --lengths derived:\n{text}",
                    pytrace=False)


# -- the default tier: a covering sample ---------------------------------------------------------------

def covering_sample():
    """Per hazard class, the first variant of each (derived expectation, original expectation) pair; the
    variants whose indices have -1 gaps (masked, reversed: right only as the kernel reads topk_length) and
    those where the derived lengths need more than the call (a comprehension, torch not imported at the
    module's top); the controls' first two shapes and an import spelling; two of generated.SAMPLE (a
    control and a hazard)."""
    picked, seen = [], set()
    for v in VARIANTS:
        key = (v.hazard, stays_manual(v), v.expect, v.legacy_kernel)
        if key not in seen or v.name in GAPPED + BEYOND_THE_CALL:
            seen.add(key)
            picked.append(v)
    picked += [v for v in VARIANTS if v.name in ("control_in_call_head_padding", "control_import_module_alias")]
    picked += [next(v for v in generated.SAMPLE if v.hazard == "control"),
               next(v for v in generated.SAMPLE if v.hazard != "control")]
    return picked


GAPPED = ("indices_masked_after_topk", "indices_reversed_in_the_calls_branch")
BEYOND_THE_CALL = ("comprehension_variable", "annotations_nested_helper_type_checking")
SAMPLE = covering_sample()


def test_sample_covers_every_class():
    per_class = collections.Counter(v.hazard for v in SAMPLE)
    assert {h for h in HAZARDS + ["control"] if per_class[h] == 0} == set()
    assert any(stays_manual(v) for v in SAMPLE) and any(not stays_manual(v) and v.hazard != "control" for v in SAMPLE)
    assert set(GAPPED + BEYOND_THE_CALL) <= {v.name for v in SAMPLE}
    assert KERNEL_IDENTITY | RUNS_ELSEWHERE <= {v.name for v in VARIANTS}, "a named variant was renamed or removed"
    assert len(SAMPLE) <= 40  # the default tier stays fast


@pytest.fixture(scope="module")
def sample_outcomes(tmp_path_factory):
    t = time.perf_counter()
    outs = run_derived(SAMPLE, tmp_path_factory.mktemp("derived-sample"))
    print(f"derived sample: {time.perf_counter() - t:.1f} s\n{tally(outs)}")
    return {v.name: (v, o, p) for v, o, p in outs}


@pytest.mark.parametrize("name", [v.name for v in SAMPLE])
def test_derived_sample(name, sample_outcomes):
    """A covering sample in derived mode: fixed and right, or (a kernel or identity hazard) manual for that reason."""
    v, o, problems = sample_outcomes[name]
    if problems:
        pytest.fail(dataclasses.replace(o, problems=problems).describe(), pytrace=False)
    if v.expect != "reported":
        assert all(st == "fixable" for ln, st, _ in o.sites if ln in harness.marker_lines(v.source)), o.describe()


def test_derived_lengths_reach_the_kernel(sample_outcomes):
    """With MIN_ROWS lowered, hazards the reference fix refuses do get lengths (derived from their indices)."""
    derived = [n for n, (v, o, p) in sample_outcomes.items() if any(DERIVED_REASON in w for _, _, w in o.sites)]
    reached = [n for n in derived if sample_outcomes[n][1].fixed]
    assert len(reached) >= 5 and set(GAPPED) <= set(reached), (derived, reached)


def test_nothing_derived_reaches_the_kernel_below_min_rows(tmp_path):
    """MIN_ROWS left as it is (thousands of rows): the same rewrites are made, but on the
    harness's 8 rows the guard passes None."""
    import importlib

    derived = importlib.import_module(harness.DERIVED_MODULES[0])
    assert derived.MIN_ROWS > harness.ROWS
    names = GAPPED + ("rows_flip_in_call",)
    with harness.stub_kernels(), harness.derived_mode(min_rows=None):
        outs = [harness.run_variant(dataclasses.replace(v, expect="derived"), tmp_path, harness.derived_engine)
                for v in VARIANTS if v.name in names]
    assert len(outs) == len(names)
    for o in outs:
        assert not o.wrong, o.describe()
        assert any(DERIVED_REASON in w for _, _, w in o.sites), o.describe()
        assert f".shape[0] >= {derived.MIN_ROWS} and " in o.diff, o.describe()
        assert not o.fixed, f"{o.variant.name}: a topk_length reached the kernel on {harness.ROWS} rows"


def test_derived_check_catches_lengths_that_cut_valid_indices(tmp_path, monkeypatch):
    """The kernel's contract as derived_mode checks it still fails a wrong formulation: the count of valid
    slots (what metadata lengths are) cuts rows whose indices have -1 gaps."""
    import importlib

    derived = importlib.import_module(harness.DERIVED_MODULES[0])
    monkeypatch.setitem(derived.FORMULATIONS, "count",
                        lambda idx: f"({idx} >= 0).flatten(1).sum(1).int()")
    monkeypatch.setattr(derived, "FORMULATION", "count")
    v = next(v for v in VARIANTS if v.name == GAPPED[0])
    with harness.stub_kernels(), harness.derived_mode():
        o = harness.run_variant(in_derived_mode(v), tmp_path, harness.derived_engine)
    assert any("wrong length on rows" in p for p in o.problems), o.describe()


def test_reason_kinds():
    """The classification that decides over-refusal, on the engine's own wordings."""
    assert reason_kind("kernel too old: sglang-kernel==0.4.2.post2 from requirements.txt") == "kernel capability"
    assert reason_kind("`flash_mla_sparse_fwd` may not be the kernel at run time: it is bound at line 13") == "kernel identity"
    assert reason_kind("the kernel is wrapped by functools.partial: calls through it cannot be checked") == "kernel identity"
    assert reason_kind("may call the kernel through `torch.compiler.disable` (the kernel taken as a value at line 6)"
                       ) == "kernel identity"
    assert reason_kind("**kwargs may already carry topk_length; pass it explicitly") == "call arguments (*args/**kwargs)"
    assert reason_kind("q's rows may not be the metadata's rows: x" + NOT_DERIVED
                       + "`setattr` with a computed name at a.py:10 may rebind the kernel, the helper") == "kernel identity"
    assert reason_kind("q's rows may not be the metadata's rows: x" + NOT_DERIVED
                       + "the call sits in a comprehension").startswith("not derivable")
    assert reason_kind("q's rows may not be the metadata's rows").startswith("other")


GRAPH_STEP = '''
import torch
from sgl_kernel.flash_mla import flash_mla_sparse_fwd


def run(inp, Graph, derive):
    static_q, static_idx = inp.q.roll(1, 0).clone(), inp.indices.roll(1, 0).clone()
    lens = [inp.lengths.roll(1, 0).clone()]

    def step():
        tl = ((static_idx >= 0) * torch.arange(1, static_idx.shape[-1] + 1, dtype=torch.int32)).flatten(1).amax(1) \\
            if derive else lens[0]
        return flash_mla_sparse_fwd(static_q, inp.kv, static_idx, inp.sm_scale, topk_length=tl)[0]

    graph = Graph(step)
    graph.capture()
    static_q.copy_(inp.q)
    static_idx.copy_(inp.indices)
    lens[0] = inp.lengths.clone()  # a new object: a captured graph keeps reading the old one
    return graph.replay()
'''


@pytest.mark.parametrize("derive", [True, False])
def test_replayed_graph_simulation(derive):
    """derived_mode's graph (harness.GRAPH_SIM_REPLAYED): lengths the step computes are computed again on
    replay, as a real graph does (grammar.GRAPH_SIM would hand each launch the capture's); a metadata object
    replaced after capture is still not seen."""
    import types

    found = {}
    with harness.stub_kernels() as kernel:
        ns: dict = {}
        exec(compile(GRAPH_STEP, "graph_step", "exec"), ns)
        stub_check = kernel._check_length
        for name, text in (("replayed", harness.GRAPH_SIM_REPLAYED), ("captured", grammar.GRAPH_SIM)):
            sim = types.ModuleType(name)
            exec(compile(text, name, "exec"), sim.__dict__)
            kernel.configure()
            kernel._check_length = harness._derived_check_length(stub_check)
            try:
                ns["run"](harness.Inputs(), sim.Graph, derive)
            finally:
                kernel._check_length = stub_check
            found[name] = [x for c in kernel.CALLS for x in c.violations]
        kernel.configure()
    if derive:
        assert found["replayed"] == [] and found["captured"], found
    else:
        assert found["replayed"] and found["captured"], found


# -- generated programs -----------------------------------------------------------------------------

def run_programs(progs, root: Path):
    """Seed 25's programs in derived mode: (summary, manual sites by reason kind, over-refusals)."""
    kinds, over = collections.Counter(), []

    def seen(r: genrun.Result) -> None:
        for line, st, why in r.sites:
            if st != "manual" or r.broken:
                continue
            k = reason_kind(why)
            kinds[k] += 1
            if k not in ACCEPTED and not any(o.startswith(f"{r.program.key} line {line}:") for o in over):
                over.append(f"{r.program.key} line {line}: {k} [{r.program.spec.label()} | {r.program.scenario.label()}]")

    with harness.derived_mode(), genrun.Runner(root, engine=harness.derived_engine) as runner:
        summary = genrun.run_many(progs, runner, on_result=seen)
    return summary, kinds, over


def _generated(progs, root: Path, label: str):
    t = time.perf_counter()
    summary, kinds, over = run_programs(progs, root)
    print(f"{label}: {summary.programs} programs in {time.perf_counter() - t:.1f} s; broken {len(summary.broken)}, "
          f"wrong {len(summary.wrong)}, fixed {summary.fixed}, safe {summary.safe} (refused {len(summary.safe_refused)})")
    for k, n in kinds.most_common():
        print(f"  manual sites, {k}: {n}")
    assert summary.programs == len(progs)
    assert len(summary.broken) <= test_generator.BROKEN_LIMIT * summary.programs
    if summary.wrong:
        raise test_generator.WrongRewrites(f"{label}: {len(summary.wrong)} programs wrong with --lengths derived:\n"
                                           + "\n".join(w.describe() for w in summary.wrong[:8]))
    assert summary.safe_refused == [], [r.describe() for r in summary.safe_refused[:5]]
    assert summary.fixed > summary.programs // 3
    return over


@pytest.fixture(scope="module")
def short_programs_derived(tmp_path_factory):
    """Seed 25's short_programs (test_generator's default tier) in derived mode, run once for both tests."""
    try:
        return None, _generated(test_generator.short_programs(), tmp_path_factory.mktemp("derived-gen"),
                                "derived, short_programs")
    except (AssertionError, test_generator.WrongRewrites) as e:
        return e, None


def test_generated_programs_derived(short_programs_derived):
    """Default tier: seed 25's short_programs in derived mode: none wrong, every safe program fixed."""
    error, _ = short_programs_derived
    if error is not None:
        pytest.fail(str(error), pytrace=False)


def test_generated_programs_derived_refuse_only_kernel_hazards(short_programs_derived):
    """Default tier: in the same programs, every manual site is a kernel or identity hazard (else an over-refusal)."""
    error, over = short_programs_derived
    assert error is None, "the programs went wrong (test_generated_programs_derived)"
    assert over == [], f"{len(over)} manual sites for a reason not about the kernel:\n" + "\n".join(over[:20])


# -- the heavy tier: everything ----------------------------------------------------------------------

@pytest.mark.heavy
def test_every_variant_derived(tmp_path):
    """Every adversarial variant and generated.SAMPLE in derived mode."""
    t = time.perf_counter()
    outs = run_derived(VARIANTS + generated.SAMPLE, tmp_path)
    print(f"all variants: {time.perf_counter() - t:.1f} s\n{tally(outs)}")
    _fail_on(outs)


@pytest.mark.heavy
@pytest.mark.parametrize("part", range(2))
def test_every_composed_variant_derived(part, tmp_path):
    """Every choice generated.py composes (test_adversarial's hypothesis test draws 12 of them): fixed and right."""
    choices = generated.every_choice()[part::2]
    outs = run_derived([generated.compose(c) for c in choices], tmp_path)
    print(tally(outs))
    _fail_on(outs)


@pytest.mark.heavy
@pytest.mark.parametrize("part", range(test_generator.PARTS))
def test_generated_programs_seed25_derived_heavy(part, tmp_path):
    """All 1,100 programs of seed 25 in derived mode (half each): none wrong, every safe program fixed, manual
    only for kernel and identity hazards."""
    progs = [p for p in grammar.programs(test_generator.SEED, test_generator.DEFAULT_PROGRAMS)
             if p.index % test_generator.PARTS == part]
    over = _generated(progs, tmp_path, f"derived, seed 25 part {part}")
    assert over == [], f"{len(over)} manual sites for a reason not about the kernel:\n" + "\n".join(over[:20])
