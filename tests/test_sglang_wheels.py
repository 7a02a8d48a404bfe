"""tests/sglang_wheels.py: without the package index the real-release tests skip on a laptop and
fail under CI (a green CI always carries the real-release checks, as conftest's bench_tree does)."""
import pytest

import sglang_wheels


@pytest.fixture
def no_index(tmp_path, monkeypatch):
    """An empty cache and a pip that can reach no index (and finds nothing on disk)."""
    monkeypatch.setattr(sglang_wheels, "CACHE", tmp_path / "cache")
    (tmp_path / "links").mkdir()
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path / "links"))
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")


@pytest.mark.parametrize("ci, outcome", [("true", pytest.fail.Exception),
                                         (None, pytest.skip.Exception)])
def test_an_unreachable_index_fails_under_ci_and_skips_elsewhere(no_index, monkeypatch, ci, outcome):
    if ci is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", ci)
    with pytest.raises(outcome, match="cannot fetch sglang==0.5.16"):
        sglang_wheels.wheel("0.5.16")
