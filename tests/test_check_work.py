"""What `check` of one file costs, counted (issue 23): speed is measured by bench/check_bench.py,
never by a timed test; these count the work that bench found to be the cost.

* the scope analyses: one per tree (the original, the validation's cut-down module, the rewritten
  one), each in two walks of its module (scopecheck.scope_map), and no batched walk of LibCST's
  metadata resolver at all;
* the original's analysis leaves out every body at first and walks those it asks facts of, with the
  verdicts and the rewrite of the whole analysis (pass_topk_length._migrate with partial=False);
* the row trace looks at each alias of q once per name, not once per kernel call.
"""
import os

import pytest
from libcst.metadata import wrapper as libcst_wrapper

import scale_bench  # bench/scale_bench.py's shapes (bench/ is on the tests' sys.path)
from helpers import KERNEL, ROOT
from topk_migrate import api
from topk_migrate.codemods.pass_topk_length import rows
from topk_migrate.codemods.pass_topk_length import rule as pass_topk_length
from topk_migrate.cst import scopecheck

EXAMPLE = ROOT / "fixtures" / "examples" / "dsa_backend.py"
PAIRS = sorted((ROOT / "fixtures" / "pairs").glob("*/before.py"))


def _counting(monkeypatch, module, name):
    calls = []
    real = getattr(module, name)

    def counted(*a, **k):
        calls.append(a)
        return real(*a, **k)
    monkeypatch.setattr(module, name, counted)
    return calls


def test_three_scope_analyses_and_no_batched_walk(monkeypatch, tmp_path):
    maps = _counting(monkeypatch, scopecheck, "scope_map")
    batched = _counting(monkeypatch, libcst_wrapper, "_gen_batchable")
    m = api.migrate_source(EXAMPLE.read_text(), str(tmp_path / "backend.py"), kernel=KERNEL)
    assert [s.status.value for s in m.sites] == ["fixable"] and m.changed
    assert len(maps) == 3, "original, cut-down module, rewritten module"
    assert batched == [], "a metadata resolve walked the module through LibCST's batched visitor"


def test_the_original_analysis_walks_only_the_bodies_asked(monkeypatch, tmp_path):
    """Every def outside the others is left out at first; the analysis walks the few it asks facts of."""
    walked = _counting(monkeypatch, scopecheck._LazyScopes, "_walk_body")
    skipped = []
    real_skip = scopecheck.Tree.skip_bodies
    monkeypatch.setattr(scopecheck.Tree, "skip_bodies", lambda self, defs: (skipped.extend(defs), real_skip(self, defs)))
    m = api.migrate_source(EXAMPLE.read_text(), str(tmp_path / "backend.py"), kernel=KERNEL)
    assert [s.status.value for s in m.sites] == ["fixable"]
    assert len(skipped) >= 4 and 0 < len(walked) < len(skipped), (len(walked), len(skipped))


@pytest.mark.parametrize("path", [EXAMPLE, *PAIRS], ids=lambda p: os.path.relpath(p, ROOT))
def test_partial_analysis_gives_the_whole_ones_answer(monkeypatch, tmp_path, path):
    source = path.read_text()
    partial = api.migrate_source(source, str(tmp_path / "backend.py"), kernel=KERNEL)
    real = pass_topk_length._migrate
    monkeypatch.setattr(pass_topk_length, "_migrate", lambda *a, partial: real(*a, partial=False))
    whole = api.migrate_source(source, str(tmp_path / "backend.py"), kernel=KERNEL)
    assert partial.sites == whole.sites and partial.new_source == whole.new_source


def test_a_left_out_body_is_walked_when_asked():
    import libcst as cst

    module = cst.parse_module("x = 0\n\ndef kept(a):\n    return a\n\ndef out(b):\n    c = b + x\n    return c\n")
    tree = scopecheck.Tree(module)
    _, kept, out = module.body
    tree.skip_bodies([kept, out])
    read_c = out.body.body[1].body[0].value
    assert tree.left_out_def(read_c) is out and tree.left_out_def(kept) is None
    assert [getattr(a, "node", None) for a in tree.binding(read_c, "c").assignments] == [
        out.body.body[0].body[0].targets[0].target]  # `c` in out: its assignment, walked now
    assert id(kept) in tree.scope_of._pending  # kept's body: never asked, never walked
    x = module.body[0].body[0].targets[0].target
    reads = {id(n) for _, name, n, _ in tree.accesses() if name == "x"}  # every read: every body walked first
    assert not tree.scope_of._pending and len(reads) == 1
    assert [id(r.node) for a in tree.binding(read_c, "x").assignments for r in a.references] == list(reads)
    assert tree.binding(read_c, "x").assignments[0].node is x


def test_row_trace_reads_each_alias_once(monkeypatch, tmp_path):
    """N kernel calls in one function, each result an alias of q: the row trace looks up the writes of
    q's aliases for the names written at all, not of every alias once per call (issue 23: 251,000
    lookups for 500 calls, 13 ms per site at 5,000)."""
    counts = []
    real = rows.RowTrace._writes_of
    for n in (20, 40):
        looked = []
        monkeypatch.setattr(rows.RowTrace, "_writes_of", lambda self, *a, looked=looked: (looked.append(a), real(self, *a))[1])
        api.migrate_source(scale_bench.direct(n), str(tmp_path / f"b{n}.py"), kernel=KERNEL)
        counts.append(len(looked))
    assert counts[1] <= 2.2 * counts[0], counts


def test_a_libcst_whose_visitors_are_not_the_ones_copied_leaves_no_body_out(monkeypatch, tmp_path):
    source = EXAMPLE.read_text()
    lazy = api.migrate_source(source, str(tmp_path / "backend.py"), kernel=KERNEL)
    monkeypatch.setattr(scopecheck, "_PARTIAL", False)
    walked = _counting(monkeypatch, scopecheck._LazyScopes, "_walk_body")
    whole = api.migrate_source(source, str(tmp_path / "backend.py"), kernel=KERNEL)
    assert walked == [] and whole.sites == lazy.sites and whole.new_source == lazy.new_source


@pytest.mark.parametrize("path", [EXAMPLE, *PAIRS], ids=lambda p: os.path.relpath(p, ROOT))
def test_the_validated_statements_spliced_are_the_whole_modules_rewrite(monkeypatch, tmp_path, path):
    """apply's code is the validation module's rewritten statements spliced into the source: the same bytes as
    the whole module rewritten again (what apply did before)."""
    source = path.read_text()
    spliced = _counting(monkeypatch, pass_topk_length, "spliced_code")
    got = api.migrate_source(source, str(tmp_path / "backend.py"), kernel=KERNEL)
    monkeypatch.setattr(pass_topk_length, "spliced_code", lambda *a, **k: None)
    whole = api.migrate_source(source, str(tmp_path / "backend.py"), kernel=KERNEL)
    assert got.new_source == whole.new_source and got.sites == whole.sites
    if path == EXAMPLE:  # (a rewrite that adds `from typing import Optional` is made on the whole module)
        assert spliced


def test_no_read_of_the_names_the_rewrite_binds_needs_no_analysis_of_the_cut_down_module(monkeypatch, tmp_path):
    """A source that never spells `topk_length`: no read of it can change, so the validation compares none and
    the cut-down module is not analysed (two scope analyses); the verdicts and code are those of the comparison."""
    from topk_migrate.codemods.pass_topk_length import rewrite

    source = scale_bench.direct(20)
    assert "topk_length" not in source
    maps = _counting(monkeypatch, scopecheck, "scope_map")
    short = api.migrate_source(source, str(tmp_path / "backend.py"), kernel=KERNEL)
    assert len(maps) == 2 and short.changed
    real = rewrite.validate_rewrite
    monkeypatch.setattr(pass_topk_length, "validate_rewrite", lambda *a: real(*a[:4], None))
    del maps[:]
    full = api.migrate_source(source, str(tmp_path / "backend.py"), kernel=KERNEL)
    assert len(maps) == 3 and (full.sites, full.new_source) == (short.sites, short.new_source)
