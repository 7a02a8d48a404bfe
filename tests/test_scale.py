"""Classification grows linearly with the file (issues 12 and 14): N copies of the example
backend, N direct kernel calls in one function, a helper with N callers.

Work is counted, not timed: the number of Python function calls (cProfile's count, the same
on an idle or a loaded machine) for N and 2N sites. A scan of the module per site, or of a
function per read, makes it grow about 3-4x per doubling at these sizes; linear work about 2x.
"""
import cProfile
import pstats

import pytest

import scale_bench  # bench/scale_bench.py's shapes (bench/ is on the tests' sys.path)
from helpers import KERNEL
from topk_migrate.api import migrate_source
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
