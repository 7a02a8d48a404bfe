"""`topk-migrate rules --explain ID`: a rule's documentation from its own docstrings and examples."""
from pathlib import Path

import pytest
from click.testing import CliRunner

from topk_migrate import discover, rules
from topk_migrate.cli import main


def explain(rule_id):
    return CliRunner().invoke(main, ["rules", "--explain", rule_id], catch_exceptions=False)


@pytest.mark.parametrize("rule_id", rules.ids())
def test_every_rule_explains_itself_from_its_own_text(rule_id):
    s = rules.spec(rule_id)
    r = explain(rule_id)
    assert r.exit_code == 0, r.output
    module_doc, examples = rules.documentation(rule_id)
    assert r.stdout.startswith(f"# {rule_id}\n\n{s.summary}\n")
    for heading in ("## What it finds, and why", "## In detail", "## What it rewrites"):
        assert heading in r.stdout
    assert s.help in r.stdout and module_doc in r.stdout
    assert examples and all(e.code.rstrip("\n") in r.stdout for e in examples if e.bump is not None)
    assert ("On by default" if s.default_enabled else "Off by default") in r.stdout


def test_the_prefill_rule_shows_its_rewrite_and_its_refusals():
    out = explain("pass-topk-length").stdout
    diff = out.split("```diff\n", 1)[1].split("```", 1)[0]
    assert diff.startswith("--- before\n+++ after\n")
    assert "+            topk_length=metadata.dsa_cache_seqlens_int32,\n" in diff
    assert "+        topk_length: Optional[torch.Tensor] = None,\n" in diff
    refusals = out.split("## When it refuses", 1)[1].split("## ", 1)[0]
    # the reasons are what check prints for the rule's manual examples, whole
    for fragment in ("kernel too old: sglang-kernel==0.4.2.post2 from --kernel", "kernel capability unknown (pass --kernel)",
                     "the kernel is wrapped by functools.partial: calls through it cannot be checked",
                     "`q[order]` indexes dim 0"):
        assert fragment in refusals, fragment
    assert "- `opt-out`: passes topk_length=None explicitly\n" in out
    assert "On by default; runs in check/apply/audit, bump; codemods/pass_topk_length/\n" in out


def test_a_rule_that_never_rewrites_says_so():
    out = explain("decode-topk-length").stdout
    assert "Nothing: `apply` never rewrites this rule's sites." in out and "never rewritten" in out
    assert "Nothing: it runs only in `bump`" in explain("new-default-semantics").stdout


def test_a_plug_in_rule_explains_itself(monkeypatch):
    """A rule added as one package on the package's path (tests/test_plugin_rules.py's toy) gets its page too."""
    import topk_migrate.codemods as codemods

    toy = Path(__file__).parent / "data" / "toy_rules"
    monkeypatch.setattr(codemods, "__path__", [*codemods.__path__, str(toy)])
    rules.specs.cache_clear(), rules.load.cache_clear(), discover.prefilter_for.cache_clear()
    try:
        out = explain("explicit-d-v").stdout
    finally:
        monkeypatch.undo()
        rules.specs.cache_clear(), rules.load.cache_clear(), discover.prefilter_for.cache_clear()
    assert out.startswith("# explicit-d-v\n") and str(toy / "explicit_d_v") in out
    assert "+    return flash_mla_sparse_fwd(q, kv, idx, 1.0, d_v=512)" in out  # what apply makes of its example
    assert "- `opt-out`: suppressed by comment: unit test" in out


def test_an_unknown_id_is_a_usage_error_with_a_suggestion():
    r = CliRunner().invoke(main, ["rules", "--explain", "pass-topk"])
    assert r.exit_code == 2 and "did you mean 'pass-topk-length'?" in r.output and "decode-topk-length" in r.output


def test_the_listing_is_unchanged():
    r = CliRunner().invoke(main, ["rules"])
    assert r.exit_code == 0 and [line.split()[0] for line in r.stdout.splitlines()] == rules.ids()


def test_the_rules_list_is_in_columns_and_explain_speaks_to_the_rules_users():
    lines = CliRunner().invoke(main, ["rules"]).output.splitlines()
    assert len(lines) == len(rules.specs()) >= 3
    starts = {ln.index(s.summary) for ln, s in zip(lines, rules.specs())}
    assert len({ln.index("[") for ln in lines}) == 1 and len(starts) == 1
    for rid in rules.ids():
        text = CliRunner().invoke(main, ["rules", "--explain", rid]).output
        assert "This package is the rule" not in text and "`rule` holds its driver" not in text
