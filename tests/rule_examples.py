"""Running a rule's EXAMPLES (rules.RuleExample, one shape for every rule): tests/test_rule_examples.py runs
every discovered rule's, tests/test_plugin_rules.py a plug-in's.

A site example runs through the engine with the rule enabled and `--kernel` the example's (a file in an
empty folder: no project pins): the rule's one site has the example's status and a reason holding its
text, and apply gives `after` (or leaves the file as it is), idempotently, compliant after. A bump
example is the call bumped from the old release fixture to the new: the rule's findings are the verdict.
"""
import ast
from pathlib import Path

from topk_migrate.api import migrate_source
from topk_migrate.bump import engine, sources

BUMP_DATA = Path(__file__).parent / "data" / "bump"


def _sites(rule_id, code, kernel, path, lengths="reference"):
    m = migrate_source(code, str(path), kernel=kernel, enable=[rule_id], lengths=lengths)
    return m, [s for s in m.sites if s.rule == rule_id]


def check_example(rule_id, i, ex, tmp_path) -> None:
    if ex.bump is not None:
        old, new = (sources.load(str(BUMP_DATA / f"{name}.json")) for name in ex.bump)
        f = tmp_path / f"ex{i}.py"
        f.write_text(ex.code)
        report = engine.run([str(f)], old, new)
        assert len(report.sites) == 1, [s.to_dict() for s in report.sites]
        site = report.sites[0]
        mine = [x for x in site.findings if x.rule == rule_id]
        if ex.status is None:
            assert not mine, ex.code
        else:
            assert mine and {x.verdict for x in mine} == {ex.status} and site.status == ex.status, ex.code
        return
    path = tmp_path / "backend.py"
    m, mine = _sites(rule_id, ex.code, ex.kernel, path, ex.lengths)
    if ex.status is None:
        assert mine == [], ex.code
    else:
        assert [s.status.value for s in mine] == [ex.status], [(s.status, s.reason) for s in mine]
        assert ex.reason in mine[0].reason, mine[0].reason
    if ex.after is None:
        assert m.new_source == ex.code
        return
    assert m.new_source == ex.after
    ast.parse(m.new_source)
    again, mine_again = _sites(rule_id, m.new_source, ex.kernel, path, ex.lengths)
    assert again.new_source == m.new_source  # idempotent
    assert all(s.status.value == "compliant" for s in mine_again)
