"""Every discovered rule's EXAMPLES are its tests (tests/rule_examples.py says what each one must do)."""
import pytest

from rule_examples import check_example
from topk_migrate import rules

EXAMPLES = [(s.id, i, ex) for s in rules.specs() for i, ex in enumerate(rules.load(s.id).EXAMPLES)]


def test_every_rule_has_examples_of_what_it_does():
    """A site rule shows a site and a call it leaves alone; a bump rule a verdict and a silence."""
    for s in rules.specs():
        mine = [ex for rid, _, ex in EXAMPLES if rid == s.id]
        sites = [ex for ex in mine if ex.bump is None]
        bumps = [ex for ex in mine if ex.bump is not None]
        if s.has_sites:
            assert any(ex.status is not None for ex in sites) and any(ex.status in (None, "compliant") for ex in sites), s.id
        if s.has_bump:
            assert any(ex.status for ex in bumps) and any(ex.status is None for ex in bumps), s.id


@pytest.mark.parametrize("rule_id,i,ex", EXAMPLES, ids=[f"{rid}-{i}" for rid, i, _ in EXAMPLES])
def test_rule_example(rule_id, i, ex, tmp_path):
    check_example(rule_id, i, ex, tmp_path)
