"""Before/after fixture pairs modelled on real sparse backends (fixtures/pairs/*)."""
import ast
from pathlib import Path

import pytest

from topk_migrate.api import migrate_source
from topk_migrate.model import Status

PAIRS = sorted(p for p in (Path(__file__).resolve().parents[1] / "fixtures" / "pairs").iterdir() if p.is_dir())


@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: p.name)
def test_after_is_already_migrated(pair):
    after = (pair / "after.py").read_text()
    m = migrate_source(after, str(pair / "after.py"))
    assert m.new_source == after
    assert not any(s.status is Status.FIXABLE for s in m.sites)


@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: p.name)
def test_before_becomes_after(pair):
    m = migrate_source((pair / "before.py").read_text(), str(pair / "before.py"))
    assert m.new_source == (pair / "after.py").read_text()
    ast.parse(m.new_source)


def test_mixed_sites_verdicts():
    pair = next(p for p in PAIRS if p.name == "mixed_sites")
    sites = migrate_source((pair / "before.py").read_text(), str(pair / "before.py")).sites
    assert [s.status.value for s in sites] == ["compliant", "opt-out", "opt-out", "manual", "manual", "fixable"]
    assert "chunk rows are not row-aligned" in sites[2].reason
