"""Each rule's VALID/INVALID examples are its tests: already-migrated code first."""
import ast

import pytest

from topk_migrate.api import migrate_source
from topk_migrate.codemods import pass_topk_length as rule


def _run(ex, tmp_path):
    # a path in an empty folder: no project pins, so only ex.kernel decides the kernel
    return migrate_source(ex.code, str(tmp_path / "backend.py"), kernel=ex.kernel)


@pytest.mark.parametrize("ex", rule.VALID, ids=lambda e: e.reason or "no-site")
def test_valid_examples_are_left_alone(ex, tmp_path):
    m = _run(ex, tmp_path)
    assert m.new_source == ex.code
    if ex.status is None:
        assert m.sites == []
    else:
        assert [s.status for s in m.sites] == [ex.status]
        assert ex.reason in m.sites[0].reason


@pytest.mark.parametrize("ex", rule.INVALID, ids=lambda e: e.reason)
def test_invalid_examples_are_rewritten(ex, tmp_path):
    m = _run(ex, tmp_path)
    assert [s.status for s in m.sites] == [ex.status]
    assert ex.reason in m.sites[0].reason
    assert m.new_source == ex.after
    ast.parse(m.new_source)
    again = migrate_source(m.new_source, str(tmp_path / "backend.py"), kernel=ex.kernel)
    assert again.new_source == m.new_source  # idempotent
    assert all(s.status is rule.Status.COMPLIANT for s in again.sites)
