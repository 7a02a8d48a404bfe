"""Differential soundness suite (issue 8): adversarial backends run before and after `apply`.

Each variant runs against a stub kernel that enforces FlashMLA's contract (tests/stubs);
after apply it must still import and run, give bitwise the same output, and hand the kernel
only lengths that agree with the indices. Row-preserving controls must stay fixed.
`python3 -m adversarial.report` (from tests/) prints the tally recorded in results/adversarial.md.
"""
import collections
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

pytest.importorskip("torch", reason="the stub kernel needs torch (pip install 'topk-migrate[smoke]')")

from adversarial import generated, harness  # noqa: E402  (imports torch)
from adversarial.variants import HAZARDS, VARIANTS  # noqa: E402


@pytest.fixture(scope="module")
def stubs():
    with harness.stub_kernels() as kernel:
        yield kernel


@pytest.mark.parametrize("variant", VARIANTS + generated.SAMPLE, ids=lambda v: v.name)
def test_apply_is_sound(variant, stubs, tmp_path):
    outcome = harness.run_variant(variant, tmp_path)
    if outcome.wrong:
        pytest.fail(outcome.describe(), pytrace=False)


@settings(max_examples=12, deadline=None, derandomize=True, phases=[Phase.generate],
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(st.builds(generated.Choice, st.sampled_from(list(generated.SPELLINGS)), st.sampled_from(generated.SHAPES),
                 st.sampled_from(list(generated.STEPS)), st.sampled_from(generated.BINDINGS), st.booleans()))
def test_composed_variants_are_sound(stubs, choice):
    """Hypothesis combines the choices of generated.py beyond the fixed sample (no shrinking: each run is slow)."""
    with tempfile.TemporaryDirectory(prefix="topk-adv-") as tmp:
        outcome = harness.run_variant(generated.compose(choice), Path(tmp))
    if outcome.wrong:
        pytest.fail(outcome.describe() + "\n" + outcome.variant.source, pytrace=False)


def test_every_hazard_class_is_covered():
    per_class = collections.Counter(v.hazard for v in VARIANTS)
    assert len(VARIANTS) >= 60
    assert {h: per_class[h] for h in HAZARDS if per_class[h] < 2} == {}
    assert per_class["control"] >= 10


def test_stub_enforces_the_contract(stubs):
    """The stub must catch what the suite relies on it to catch."""
    import torch

    inp = harness.Inputs()
    stubs.configure()
    ok = stubs.flash_mla_sparse_fwd(inp.q, inp.kv, inp.indices, 0.25, topk_length=inp.lengths)
    plain = stubs.flash_mla_sparse_fwd(inp.q, inp.kv, inp.indices, 0.25)
    assert all(torch.equal(a, b) for a, b in zip(ok, plain))
    assert not any(c.violations for c in stubs.CALLS)
    stubs.flash_mla_sparse_fwd(inp.q, inp.kv, inp.indices, 0.25, topk_length=inp.lengths.flip(0))
    assert "wrong length" in stubs.CALLS[-1].violations[0]
    with pytest.raises(RuntimeError, match="shape"):
        stubs.flash_mla_sparse_fwd(inp.q[:4], inp.kv, inp.indices[:4], 0.25, topk_length=inp.lengths)
    stubs.configure(legacy=True)
    with pytest.raises(TypeError):
        stubs.flash_mla_sparse_fwd(inp.q, inp.kv, inp.indices, 0.25, topk_length=inp.lengths)
    stubs.configure()


def test_harness_catches_a_blind_rewrite(stubs, tmp_path):
    """An engine that always passes the metadata, unguarded, must be caught on the row variants."""
    def blind(folder):
        path = folder / harness.MODULE
        src = path.read_text().replace("inp.sm_scale)  # SITE", "inp.sm_scale, topk_length=metadata.dsa_cache_seqlens_int32)  # SITE")
        path.write_text(src)
        return [], []

    v = next(v for v in VARIANTS if v.name == "rows_flip_in_call")
    outcome = harness.run_variant(v, tmp_path, engine=blind)
    assert any("wrong length on rows" in p for p in outcome.problems), outcome.describe()


def _validate_rewrite_owner():
    import importlib

    for name in ("topk_migrate.codemods.pass_topk_length.rule", "topk_migrate.cst.resolve", "topk_migrate.api"):
        module = importlib.import_module(name)
        if hasattr(module, "validate_rewrite"):
            return module
    return None


def test_suite_fails_without_scope_validation(stubs, tmp_path, monkeypatch):
    """Removing the scope-validation step must let a wrong rewrite through that it otherwise stops."""
    owner = _validate_rewrite_owner()
    if owner is None:
        pytest.fail("no module-level validate_rewrite in topk_migrate.codemods.pass_topk_length "
                    "(or resolve/api): the scope-validation step issue 8 asks for is missing")
    order = {"3 names": 0, "1 placement": 1, "2 metadata": 2}  # where validation matters most first
    hazards = sorted((v for v in VARIANTS if v.hazard in order), key=lambda v: order[v.hazard])
    for v in hazards:
        with monkeypatch.context() as m:
            m.setattr(owner, "validate_rewrite", lambda *args, **kwargs: None)
            if not harness.run_variant(v, tmp_path / "without").wrong:
                continue
        if not harness.run_variant(v, tmp_path / "with").wrong:
            return  # wrong without the step, right with it
    pytest.fail("with validate_rewrite a no-op, no placement/name/metadata variant that is right with it went wrong")
