"""Classification grows linearly with the file (issues 12 and 14): N copies of the example
backend, N direct kernel calls in one function, a helper with N callers; and in the shape of the
code a fork writes: N functions, N methods of a class, N classes, N calls in a block (each calling
the kernel once, with and without the metadata read).

Work is counted, not timed: the number of Python function calls (cProfile's count, the same
on an idle or a loaded machine) for N and 2N (or 4N) sites. A scan of the module per site, or of a
function per read, makes it grow about 3-4x per doubling at these sizes; linear work about 2x.
Two costs are not calls and are counted on their own: the characters of the source that splicing
the rewrite searches (str.find, C speed: a search of the whole source per replaced statement was
N x N), and the module's classes the class-hierarchy closure looks at (a scan of every class per
class was N x N).
"""
import cProfile
import pstats
import time
from dataclasses import dataclass

import pytest

import scale_bench  # bench/scale_bench.py's shapes (bench/ is on the tests' sys.path)
from helpers import KERNEL, ROOT
from topk_migrate.api import migrate_source
from topk_migrate.codemods.pass_topk_length import analysis
from topk_migrate.codemods.pass_topk_length import rule as pass_topk_length
from topk_migrate.cst import cstutil
from topk_migrate.model import Status


def calls_made(source: str, folder) -> tuple:
    """(Python function calls made by classifying source, the sites' statuses)."""
    folder.mkdir()
    profiler = cProfile.Profile()
    profiler.enable()
    try:
        result = migrate_source(source, str(folder / "backend.py"), kernel=KERNEL)
    finally:
        profiler.disable()
    return pstats.Stats(profiler).total_calls, [s.status for s in result.sites]


@pytest.mark.parametrize("shape, n, status", [
    ("direct", 40, Status.FIXABLE),  # the shape that was quadratic (3.6x per doubling at 6c9bf0a)
    # these two were already near-linear at these sizes: regression guards, in the heavy tier
    pytest.param("helper", 40, Status.FIXABLE, marks=pytest.mark.heavy),
    pytest.param("copies", 6, Status.MANUAL, marks=pytest.mark.heavy),  # each copy re-defines the helper
])
def test_work_grows_linearly(tmp_path, shape, n, status):
    make = scale_bench.SHAPES[shape]
    small, small_sites = calls_made(make(n), tmp_path / "small")
    big, big_sites = calls_made(make(2 * n), tmp_path / "big")
    sites = {"helper": (1, 1)}.get(shape, (n, 2 * n))  # the helper's one kernel call, or one per copy/call
    assert small_sites == [status] * sites[0] and big_sites == [status] * sites[1]
    assert big / small <= 2.4, f"{shape}: {small} calls for {n} sites, {big} for {2 * n}"


# -- the shape of the code: N functions, N methods, N classes, N calls in a block -----------------
@dataclass
class Work:
    calls: int  # Python function calls (cProfile)
    searched: int  # characters of the source the splice's searches may read
    classes: int  # the module's classes the class-hierarchy closure looked at
    cpu: float  # process time (a secondary check only)
    statuses: list
    new_source: str


def work_done(source: str, folder, monkeypatch, profile: bool = True) -> Work:
    folder.mkdir()
    searched, classes = [0], [0]

    class Source(str):
        def find(self, sub, *bounds):
            searched[0] += len(self) - (bounds[0] if bounds and bounds[0] is not None else 0)
            return str.find(self, sub, *bounds)

    class Bases(dict):
        def items(self):
            for item in dict.items(self):
                classes[0] += 1
                yield item

    real_splice, real_bases = cstutil.spliced_code, analysis._Analysis._bases
    splice = lambda module, new, text, *a, **k: real_splice(module, new, Source(text), *a, **k)  # noqa: E731
    with monkeypatch.context() as m:
        m.setattr(cstutil, "spliced_code", splice)
        m.setattr(pass_topk_length, "spliced_code", splice)
        m.setattr(analysis._Analysis, "_bases", lambda self: Bases(real_bases(self)))
        profiler = cProfile.Profile()
        start = time.process_time()
        if profile:
            profiler.enable()
        try:
            result = migrate_source(source, str(folder / "backend.py"), kernel=KERNEL)
        finally:
            profiler.disable()
        cpu = time.process_time() - start
    return Work(pstats.Stats(profiler).total_calls if profile else 0, searched[0], classes[0], cpu,
                [s.status for s in result.sites], result.new_source)


def _assert_linear(shape, small: Work, big: Work, factor: int, slack: float):
    bound = factor * slack
    assert big.calls <= bound * small.calls, f"{shape}: {small.calls} calls, then {big.calls}"
    assert big.searched <= bound * small.searched, f"{shape}: {small.searched} characters searched, then {big.searched}"
    assert big.classes <= bound * small.classes, f"{shape}: {small.classes} classes looked at, then {big.classes}"


SHAPED = [  # (shape, n, each site's status): 4n sites cost at most 4.2x the work of n
    ("functions", 50, Status.MANUAL),  # the module's body scanned for `import *` per site: 4.4x the calls before
    ("functions_meta", 10, Status.FIXABLE),  # each rewritten def searched in the whole source: 15.4x the characters
    ("methods_meta", 10, Status.FIXABLE),
    ("classes_meta", 10, Status.FIXABLE),  # searched (twins: the class around each), and 16x the classes looked at
    ("nested", 10, Status.FIXABLE),  # statements of a block, not of a body: searched too
]


@pytest.mark.parametrize("shape, n, status", SHAPED, ids=[s[0] for s in SHAPED])
def test_work_grows_linearly_in_the_shape_of_the_code(tmp_path, monkeypatch, shape, n, status):
    make = scale_bench.SHAPES[shape]
    work_done(make(1), tmp_path / "warm", monkeypatch)  # imports and the run's caches: not the sites' work
    small = work_done(make(n), tmp_path / "small", monkeypatch)
    big = work_done(make(4 * n), tmp_path / "big", monkeypatch)
    assert small.statuses == [status] * n and big.statuses == [status] * (4 * n)
    _assert_linear(shape, small, big, 4, 1.05)


def test_statements_their_positions_cannot_place_are_searched_a_bounded_number_of_times(tmp_path, monkeypatch):
    """Where no statement replaced is placed by its positions (text_of, place), each is searched in the whole
    source, cstutil.SEARCHES of them at most; past them the whole module is generated: the same code."""
    from topk_migrate.cst import scopecheck

    make = scale_bench.SHAPES["functions_meta"]
    n = cstutil.SEARCHES + 4  # past the bound at both sizes
    placed = migrate_source(make(4 * n), str(tmp_path / "backend.py"), kernel=KERNEL).new_source
    monkeypatch.setattr(scopecheck.StatementPositions, "text_of", lambda self, node: None)
    monkeypatch.setattr(scopecheck.StatementPositions, "place", lambda self, node, text: None)
    small = work_done(make(n), tmp_path / "small", monkeypatch, profile=False)
    big = work_done(make(4 * n), tmp_path / "big", monkeypatch, profile=False)
    assert small.statuses == [Status.FIXABLE] * n and big.statuses == [Status.FIXABLE] * (4 * n)
    assert 0 < big.searched <= 4.2 * small.searched, (small.searched, big.searched)
    assert big.new_source == placed


@pytest.mark.parametrize("shape", ["functions_meta", "methods_meta", "classes_meta", "nested", "direct"])
def test_the_statements_placed_by_their_positions_are_spliced_where_a_search_put_them(tmp_path, monkeypatch, shape):
    """The rewrite placed by each statement's positions (StatementPositions.place) is byte for byte the one
    the search of the source gave, and the whole module generated (twin methods, a block's statements)."""
    from topk_migrate.cst import scopecheck

    source = scale_bench.SHAPES[shape](3)
    placed = migrate_source(source, str(tmp_path / "backend.py"), kernel=KERNEL)
    assert placed.changed
    with monkeypatch.context() as m:
        m.setattr(scopecheck.StatementPositions, "place", lambda self, node, text: None)
        searched = migrate_source(source, str(tmp_path / "backend.py"), kernel=KERNEL)
    with monkeypatch.context() as m:
        m.setattr(pass_topk_length, "spliced_code", lambda *a, **k: None)
        m.setattr(cstutil, "spliced_code", lambda *a, **k: None)
        whole = migrate_source(source, str(tmp_path / "backend.py"), kernel=KERNEL)
    assert placed.new_source == searched.new_source == whole.new_source
    assert placed.sites == searched.sites == whole.sites


@pytest.mark.heavy
@pytest.mark.parametrize("shape, status", [  # the shape, and a rewrite per method and per class (the
    # default tier's test_work_grows_linearly_in_the_shape_of_the_code counts the others at n and 4n)
    ("functions", Status.MANUAL), ("methods_meta", Status.FIXABLE), ("classes_meta", Status.FIXABLE)])
def test_work_grows_linearly_to_5000_sites(tmp_path, monkeypatch, shape, status):
    """500 and 5,000 sites of each shape (functions at 5,000 cost 12.5-14.5x 500 before, in CPU): the counts
    within 10.5x; the process time, a secondary check, within 15x."""
    make = scale_bench.SHAPES[shape]
    work_done(make(1), tmp_path / "warm", monkeypatch)
    small = work_done(make(500), tmp_path / "small", monkeypatch)
    big = work_done(make(5000), tmp_path / "big", monkeypatch)
    assert small.statuses == [status] * 500 and big.statuses == [status] * 5000
    _assert_linear(shape, small, big, 10, 1.05)
    assert big.cpu <= 15 * small.cpu, (shape, small.cpu, big.cpu)


# -- check of one file through the command's path (api.process_file) -------------------------------
def test_check_never_makes_the_diff_and_reading_it_makes_it(tmp_path, monkeypatch):
    """difflib's matching is N x N in a file of N alike rewritten functions (2,000: 11 s of check's 62 s): the
    diff is made when first read, which check and apply never do; read, it is difflib's."""
    import difflib

    from topk_migrate import api

    path = tmp_path / "backend.py"
    source = scale_bench.SHAPES["functions_meta"](3)
    path.write_text(source)
    made = []
    real = difflib.unified_diff
    monkeypatch.setattr(difflib, "unified_diff", lambda *a, **k: (made.append(1), real(*a, **k))[1])
    out = api.process_file(str(path), KERNEL)
    assert [s.status for s in out.sites] == [Status.FIXABLE] * 3 and made == []
    new = migrate_source(source, str(path), kernel=KERNEL).new_source
    assert out.diff == "".join(real(source.splitlines(True), new.splitlines(True), *api.diff_labels(str(path))))
    assert made == [1] and out.diff and made == [1]  # made once


def test_a_narrowed_run_that_cut_nothing_is_not_run_again(tmp_path, monkeypatch):
    """Over NARROW_BYTES a file is classified on its narrowed text, then rewritten whole; where the narrowed
    text is the whole text (every function calls the kernel) the first run is the second: made once, the
    same outcome as two."""
    from topk_migrate import api, narrow

    path = tmp_path / "backend.py"
    path.write_text(scale_bench.SHAPES["functions_meta"](4))
    monkeypatch.setattr(api, "NARROW_BYTES", 100)
    runs = []
    real = api._migrate_checked
    monkeypatch.setattr(api, "_migrate_checked", lambda *a, **k: (runs.append(1), real(*a, **k))[1])
    once = api.process_file(str(path), KERNEL)
    assert len(runs) == 1 and [s.status for s in once.sites] == [Status.FIXABLE] * 4
    with monkeypatch.context() as m:  # a cut that changed something: run again, whole
        m.setattr(narrow, "narrow", lambda text, *a, **k: text + "\n")
        twice = api.process_file(str(path), KERNEL)
    assert len(runs) == 3 and twice.sites == once.sites and twice.diff == once.diff


def test_narrowing_compares_no_def_with_every_other(monkeypatch):
    """A file over NARROW_BYTES (and every file audit reads) is narrowed first: the defs kept were looked up
    in a list per def (N x N comparisons for N defs that call the kernel; not calls: cProfile misses them)."""
    import ast

    from topk_migrate import narrow

    compared = [0]

    def counted(a, b):
        compared[0] += 1
        return a is b
    monkeypatch.setattr(ast.FunctionDef, "__eq__", counted)
    counts = []
    for n in (50, 200):
        compared[0] = 0
        assert narrow.narrow(scale_bench.SHAPES["functions_meta"](n)) not in (None, narrow.NOTHING)
        counts.append(compared[0])
    assert counts[1] <= 4.2 * counts[0], counts


def _statements(module, body, indents):
    """(statement, the indentation of the blocks around it) of every statement in bodies and blocks."""
    import libcst as cst

    for st in body:
        yield st, indents
        blocks = [getattr(st, "body", None), getattr(getattr(st, "orelse", None), "body", None),
                  getattr(getattr(st, "finalbody", None), "body", None), *(h.body for h in getattr(st, "handlers", ()))]
        for b in blocks:
            if isinstance(b, cst.IndentedBlock):
                yield from _statements(module, b.body, indents + [module.default_indent if b.indent is None else b.indent])


PLACED = {
    "decorated, in blocks": "import x\n\nif x:\n    # c\n\n    @x.d\n    @x.e(\n        1,\n    )\n    def f():\n        return 1\n"
                            "else:\n    with x:\n        for i in x:\n            y = 1  # t\n\n\n            y = 1\n",
    "tabs, twins": "class A:\n\tdef f(self):\n\t\tif 1:\n\t\t\treturn 1\n\n\nclass B:\n\tdef f(self):\n\t\tif 1:\n\t\t\treturn 1\n",
    "try": "try:\n    a = 1\nexcept E:\n    # c\n    a = 2\nfinally:\n    a = 3\n",
}


@pytest.mark.parametrize("name", [*PLACED, "fixtures"])
def test_every_statement_is_placed_where_its_code_stands(name):
    """StatementPositions.place: each statement (a unit, or one inside a block, decorated, after comments and
    blank lines, a twin) is placed at the offset of its own code; where that code occurs once it is the
    offset a search gives."""
    import libcst as cst

    from topk_migrate.cst import scopecheck
    from topk_migrate.cst.cstutil import _code_at

    sources = [PLACED[name]] if name != "fixtures" else [p.read_text() for p in sorted((ROOT / "fixtures").rglob("*.py"))]
    placed = 0
    for source in sources:
        module = cst.parse_module(source)
        positions = scopecheck.Tree(module, source=source).position
        for st, indents in _statements(module, module.body, []):
            text = _code_at(st, module, indents)
            at = positions.place(st, text)
            assert at is not None and source[at:at + len(text)] == text, (name, text)
            assert source.count(text) > 1 or at == source.find(text)
            placed += 1
    assert placed >= 4
