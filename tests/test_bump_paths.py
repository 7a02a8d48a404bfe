"""`bump` tells the truth about a release (issue 36), on small kernel wrappers laid out as source trees.

OLD and NEW mirror sglang-kernel 0.4.6 -> 0.4.10 in miniature: NEW adds `fmt=None` (refused on every
dense path: `assert fmt is None, "fmt only applies to sparse attention"`) and `sink=None` (refused with
tensor metadata, taken by the scheduler path), sends a sparse call with tensor metadata to another op,
adds an assert on that path, ships a new module beside the wrapper, and stops re-exporting `decode` from
the package. Each verdict is read from what the call itself passes.
"""
import json
import sys
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from topk_migrate.bump import bind, engine, paths, sources
from topk_migrate.bump import diff as bump_diff
from topk_migrate.cli import main

OLD = '''import torch


class Sched:
    pass


def get_meta(seqlens=None):
    if seqlens is None:
        return Sched(), None
    return torch.ops.k.meta.default(seqlens)


def decode(q, cache, meta, splits=None, indices=None, is_fp8=False):
    if isinstance(meta, Sched):
        return _sched(q=q, cache=cache, meta=meta, splits=splits, indices=indices, is_fp8=is_fp8)
    assert splits is not None
    if indices is None and q.element_size() == 1:
        return torch.ops.k.dense_fp8.default(q, cache, meta, splits)
    return torch.ops.k.dense.default(q, cache, meta, splits, indices)


def _sched(q, cache, meta, splits, indices, is_fp8):
    assert splits is None, "splits must be None with Sched"
    topk = indices.shape[-1] if indices is not None else None
    if topk is not None:
        assert is_fp8
        return torch.ops.k.sparse.default(q, cache, indices)
    return torch.ops.k.dense_sched.default(q, cache)
'''

NEW = '''import torch


class Sched:
    pass


def get_meta(seqlens=None):
    if seqlens is None:
        return Sched(), None
    return torch.ops.k.meta.default(seqlens)


def decode(q, cache, meta, splits=None, indices=None, is_fp8=False, sink=None, fmt=None):
    if isinstance(meta, Sched):
        return _sched(q=q, cache=cache, meta=meta, splits=splits, indices=indices, is_fp8=is_fp8, sink=sink, fmt=fmt)
    assert splits is not None
    assert sink is None
    if indices is not None:
        assert is_fp8, "is_fp8 must be True for sparse attention"
        return torch.ops.k.sparse.default(q, cache, indices, fmt)
    assert fmt is None, "fmt only applies to sparse attention"
    if q.element_size() == 1:
        return torch.ops.k.dense_fp8.default(q, cache, meta, splits)
    return torch.ops.k.dense.default(q, cache, meta, splits, None)


def _sched(q, cache, meta, splits, indices, is_fp8, sink, fmt):
    assert splits is None, "splits must be None with Sched"
    topk = indices.shape[-1] if indices is not None else None
    if topk is not None:
        assert is_fp8
        return torch.ops.k.sparse.default(q, cache, indices, fmt, sink)
    assert fmt is None, "fmt only applies to sparse attention"
    return torch.ops.k.dense_sched.default(q, cache, sink)
'''

MEGA = '''import torch


def mega_prefill(q, kv, indices, *, attn_sink=None, topk_length=None):
    return torch.ops.k.mega_prefill.default(q, kv, indices, attn_sink, topk_length)


def mega_permute(weight):
    return torch.ops.k.mega_permute.default(weight)
'''

FORK = '''from sgl_kernel.flash_mla import decode, get_meta


def dense(q, cache, meta, s):
    return decode(q, cache, meta, splits=s)


def sparse(q, cache, meta, s, idx):
    return decode(q, cache, meta, splits=s, indices=idx, is_fp8=True)


def sched_sparse(q, cache, idx):
    return decode(q, cache, get_meta()[0], indices=idx, is_fp8=True)


def maybe(q, cache, meta, s, c):
    return decode(q, cache, meta, splits=s if c else None)


def sparse_not_fp8(q, cache, meta, s, idx):
    return decode(q, cache, meta, splits=s, indices=idx)


def forward(**kw):
    return decode(**kw)


def forward_meta(*a):
    return get_meta(*a)
'''

EXPORTS = '''from sgl_kernel import decode as top_decode, get_meta as top_meta


def via_package(q, cache, meta, s):
    top_meta()
    return top_decode(q, cache, meta, splits=s)
'''


def tree(root: Path, wrapper: str, init: str, mega: str = None) -> str:
    (root / "sgl_kernel").mkdir(parents=True)
    (root / "sgl_kernel" / "flash_mla.py").write_text(wrapper)
    (root / "sgl_kernel" / "__init__.py").write_text(init)
    if mega is not None:
        (root / "sgl_kernel" / "flash_mla_mega.py").write_text(mega)
    return str(root)


@pytest.fixture(scope="module")
def trees(tmp_path_factory):
    root = tmp_path_factory.mktemp("releases")
    return (tree(root / "old", OLD, "from sgl_kernel.flash_mla import decode\n"),
            tree(root / "new", NEW, "from sgl_kernel.version import __version__\n", MEGA))


@pytest.fixture(scope="module")
def releases(trees):
    return sources.load(trees[0]), sources.load(trees[1])


@pytest.fixture(scope="module")
def sites(tmp_path_factory, releases):
    fork = tmp_path_factory.mktemp("fork") / "fork.py"
    fork.write_text(FORK)
    report = engine.run([str(fork)], *releases)
    assert not report.errors, report.errors
    lines = FORK.splitlines()
    out = {}
    for s in report.sites:  # by the function the call sits in (and the entry point, but for decode)
        fn = next(ln for ln in reversed(lines[:s.line]) if ln.startswith("def ")).split("(")[0][4:]
        out[fn if s.entry_point == "decode" else f"{fn}:{s.entry_point}"] = s
    return out


# -- verdicts on the call's path -------------------------------------------------------------------------

def test_a_new_parameter_refused_on_every_path_of_the_call_is_not_applicable(sites, releases):
    """A dense call (no `indices`) with tensor metadata: `fmt` is refused on both paths a dense call can
    take, `sink` on the only one this call takes (it passes `splits`, which the scheduler path refuses)."""
    s = sites["dense"]
    assert s.status == bind.NOT_APPLICABLE
    assert (f'`fmt=None` is new in {releases[1].label} but not applicable here: the release refuses it on every '
            'path this call takes: `assert fmt is None` ("fmt only applies to sparse attention") when '
            'isinstance(meta, Sched) and indices is None (in _sched), or when not isinstance(meta, Sched) and '
            'indices is None; this call passes no `indices`') in s.reason
    by = {f.param: f for f in s.findings}
    assert by["fmt"].verdict == by["sink"].verdict == bind.NOT_APPLICABLE
    assert "`splits=s` (read as not None)" in by["sink"].reason  # what rules the scheduler path out


def test_a_new_parameter_that_applies_on_the_calls_path_is_an_opportunity(sites):
    s = sites["sched_sparse"]  # no `splits`: tensor metadata is refused; the scheduler path takes both
    assert s.status == bind.OPPORTUNITY
    assert s.reason == "new in the release, not passed: `sink`, `fmt`", s.reason


def test_a_new_parameter_the_call_may_or_may_not_be_refused_says_it_cannot_tell(sites):
    s = sites["maybe"]  # `splits=s if c else None`: either path
    assert s.status == bind.OPPORTUNITY
    sink = next(f for f in s.findings if f.param == "sink")
    assert sink.verdict == bind.OPPORTUNITY
    assert "cannot tell whether it applies here: the release refuses it `assert sink is None` when not " \
           "isinstance(meta, Sched)" in sink.reason
    assert next(f for f in s.findings if f.param == "fmt").verdict == bind.NOT_APPLICABLE
    assert "not applicable here: `fmt`" in s.reason


def test_a_new_assert_that_refuses_the_call_on_its_only_path_is_manual(sites):
    s = sites["sparse_not_fp8"]
    assert s.status == bind.MANUAL
    assert "refuses this call on every path it takes: `assert is_fp8` (\"is_fp8 must be True for sparse " \
           "attention\") when not isinstance(meta, Sched) and indices is not None" in s.reason
    assert "no `is_fp8`" in s.reason and "`indices=idx`" in s.reason


def test_a_call_that_now_runs_another_op_is_changes_callee(sites, releases):
    s = sites["sparse"]
    old, new = releases
    assert s.status == bind.CHANGES_CALLEE
    assert (f"with this call's arguments, {new.label} runs `torch.ops.k.sparse` where {old.label} ran "
            "`torch.ops.k.dense`") in s.reason
    assert "`splits=s` (read as not None)" in s.reason and "also new in the release, not passed: `fmt`" in s.reason


def test_forwarded_kwargs_cannot_be_told_and_name_what_changed(sites):
    s = sites["forward"]
    assert s.status == bind.MANUAL and s.status != bind.UNCHANGED
    assert s.reason.startswith("cannot tell: the call forwards **kwargs")
    for changed in ("param-added-optional `sink=None`, positional argument 7",
                    "param-added-optional `fmt=None`, positional argument 8",
                    "callee-changed when indices is not None and not isinstance(meta, Sched): calls `torch.ops.k.sparse` "
                    "(was `torch.ops.k.dense`)", "assert/raise(s) added"):
        assert changed in s.reason, changed


def test_forwarded_args_to_an_unchanged_entry_point_say_so(sites):
    s = sites["forward_meta:get_meta"]
    assert s.status == bind.UNCHANGED
    assert s.reason == "the call forwards *args; `get_meta` is the same in both releases"


def test_star_args_to_a_changed_entry_point_is_manual(tmp_path, releases):
    f = tmp_path / "star.py"
    f.write_text("from sgl_kernel.flash_mla import decode\n\ndef f(*a):\n    return decode(*a)\n")
    (s,) = engine.run([str(f)], *releases).sites
    assert s.status == bind.MANUAL and "cannot tell: the call forwards *args" in s.reason


# -- the release as a whole -------------------------------------------------------------------------

def test_new_module_entry_points_are_listed_with_the_rules_parameters(releases):
    changes = {(c.kind, c.entry_point): c.detail for c in bump_diff.diff(*releases)}
    assert changes[("entry-point-added", "mega_prefill")] == (
        "mega_prefill(q, kv, indices, *, attn_sink=None, topk_length=None) in sgl_kernel/flash_mla_mega.py, a module "
        "new in this release; takes `topk_length`, the parameter of decode-topk-length, pass-topk-length (no rule "
        "reads this entry point)")
    assert changes[("entry-point-added", "mega_permute")].endswith("a module new in this release; takes no rule's "
                                                                   "parameter")


def test_a_wrapper_that_calls_another_op_under_the_same_arguments_is_a_change(releases):
    changes = [c for c in bump_diff.diff(*releases) if c.kind == "callee-changed"]
    assert [(c.entry_point, c.detail) for c in changes] == [
        ("decode", "when indices is not None and not isinstance(meta, Sched): calls `torch.ops.k.sparse` "
                   "(was `torch.ops.k.dense`)")]


def test_reading_the_wrapper_follows_its_helper_and_locals(releases):
    """The scheduler helper's guards and ops are in the entry point's names, and its local `topk` (set once
    as `indices.shape[-1] if indices is not None else None`) is read as the test on `indices` it is."""
    _, new = releases
    ep = new.entry_points["decode"]
    calls = {c.name: c for c in ep.calls}
    assert calls["torch.ops.k.dense_sched"].condition == "isinstance(meta, Sched) and indices is None"
    assert calls["torch.ops.k.dense_sched"].via == "_sched"
    fmt = [g.describe() for g in ep.guards if g.params == ["fmt"]]
    assert fmt == ["assert fmt is None when isinstance(meta, Sched) and indices is None (in _sched)",
                   "assert fmt is None when not isinstance(meta, Sched) and indices is None"]


def test_a_name_the_package_no_longer_re_exports_breaks_one_it_never_did_is_no_call_of_it(tmp_path, releases):
    f = tmp_path / "pkg.py"
    f.write_text(EXPORTS)
    by = {s.entry_point: s for s in engine.run([str(f)], *releases).sites}
    assert by["decode"].status == bind.BREAKS
    assert "`sgl_kernel/__init__.py` does not re-export `decode` (ImportError)" in by["decode"].reason
    assert by["get_meta"].status == bind.UNCHANGED
    assert by["get_meta"].reason.startswith("neither release provides `sgl_kernel.get_meta`")


def test_a_names_other_import_is_tried_when_its_first_reaches_nothing(tmp_path, releases):
    """sglang imports `from sgl_kernel import f` on XPU and `from sgl_kernel.flash_mla import f` otherwise;
    the resolver keeps the first, which reaches nothing in these releases: the second is the call's."""
    f = tmp_path / "xpu.py"
    f.write_text("def f(q, cache, meta, s, xpu):\n    if xpu:\n        from sgl_kernel import get_meta\n"
                 "    else:\n        from sgl_kernel.flash_mla import get_meta\n    return get_meta(s)\n")
    (s,) = engine.run([str(f)], *releases).sites
    assert s.callee == "sgl_kernel.flash_mla.get_meta" and s.status == bind.UNCHANGED


# -- reports and exit codes ---------------------------------------------------------------------------

def test_every_format_carries_the_new_verdicts_and_the_exit_code_is_unchanged(tmp_path, trees):
    fork = tmp_path / "fork.py"
    fork.write_text(FORK)
    old, new = trees

    def run(*extra):
        return CliRunner().invoke(main, ["bump", "--from", str(old), "--to", str(new), str(fork), *extra])

    text = run()
    assert text.exit_code == 0, text.output  # manual, changes-callee, not-applicable: nothing breaks or rebinds
    assert "not-applicable sgl_kernel.flash_mla.decode" in text.output
    assert "changes-callee sgl_kernel.flash_mla.decode" in text.output
    js = run("--format", "json")
    data = json.loads(js.stdout)
    assert data["summary"]["not-applicable"] == 1 and data["summary"]["changes-callee"] == 1
    assert {s["verdict"] for s in data["sites"]} >= {"not-applicable", "changes-callee", "opportunity", "manual"}
    sarif = json.loads(run("--format", "sarif").stdout)["runs"][0]
    levels = {r["properties"]["status"]: r["level"] for r in sarif["results"]}
    assert levels["changes-callee"] == "warning" and "not-applicable" not in levels  # asks nothing, as unchanged
    assert sarif["properties"]["summary"]["not-applicable"] == 1
    gh = run("--format", "github").stdout.splitlines()
    assert any(ln.startswith("::warning ") and "changes-callee" in ln for ln in gh)
    md = run("--format", "markdown").stdout
    assert "| not-applicable | `" in md and "| changes-callee | `" in md and "1 not-applicable" in md


def test_positions_are_one_based_everywhere(releases):
    details = [c.detail for c in bump_diff.diff(*releases)]
    assert "`sink=None`, positional argument 7" in details and "`fmt=None`, positional argument 8" in details
    assert not any(" position " in d for d in details)


# -- the values a call gives its parameters -------------------------------------------------------------

@pytest.mark.parametrize("text, kind, assumed", [
    ("None", "none", False), ("True", "const", False), ("-1", "const", False), ("'V32'", "const", False),
    ("page_table", "notnone", True), ("x.view(1)", "notnone", True), ("[1]", "const", False), ("[x]", "notnone", False),
    ("x if c else None", "unknown", False), ("a or None", "unknown", False), ("(", "unknown", False)])
def test_what_a_call_passes_is_read_as_a_value(text, kind, assumed):
    v = paths.value_of(text)
    assert (v.kind, v.assumed) == (kind, assumed)


def test_undecided_conditions_past_the_bound_are_not_decided():
    atoms = " and ".join(f"x{i}.ok()" for i in range(paths.MAX_ATOMS + 1))
    assert paths.paths([paths.Reader({}).read(atoms)]) is None
    assert len(paths.paths([paths.Reader({}).read("a.ok() and not b.ok()")])) == 4


# -- downloads say what they do ---------------------------------------------------------------------------

def _fake_pip(wrapper: str):
    """pip as _run_pip runs it: says what it downloads, writes the wheel bit by bit into its TMPDIR, then into -d."""
    import zipfile

    def run(argv, on_line, timeout, env):
        dest = Path(argv[argv.index("-d") + 1])
        name = "sgl_kernel-9.9.1-py3-none-any.whl"
        on_line("Collecting sgl-kernel==9.9.1\n")
        on_line(f"  Downloading {name} (3.0 MB)\n")
        part = Path(env["TMPDIR"]) / "pip-unpack-x" / name
        part.parent.mkdir()
        for _ in range(4):
            with open(part, "ab") as f:
                f.write(b"\0" * 750_000)
            time.sleep(0.3)
        with zipfile.ZipFile(dest / name, "w") as z:
            z.writestr("sgl_kernel/flash_mla.py", wrapper)
        return 0, ""
    return run


def test_a_download_says_what_how_big_and_where_before_it_starts(tmp_path, monkeypatch):
    monkeypatch.setenv("TOPK_MIGRATE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(sources, "_run_pip", _fake_pip(OLD))
    f = tmp_path / "fork.py"
    f.write_text("x = 1\n")
    r = CliRunner().invoke(main, ["bump", "--from", "sgl-kernel==9.9.1", "--to", "sgl-kernel==9.9.1", str(f)])
    assert r.exit_code == 0, r.output
    said = [ln for ln in r.stderr.splitlines() if ln.startswith("downloading ")]
    assert said == [f"downloading sgl-kernel==9.9.1: sgl_kernel-9.9.1-py3-none-any.whl (3.0 MB) into "
                    f"{tmp_path / 'cache' / 'wheels'}"]  # once: the second load is served from the cache
    quiet = tmp_path / "quiet"
    monkeypatch.setenv("TOPK_MIGRATE_CACHE", str(quiet))
    r = CliRunner().invoke(main, ["bump", "-q", "--from", "sgl-kernel==9.9.1", "--to", "sgl-kernel==9.9.1", str(f)])
    assert r.exit_code == 0 and "downloading" not in r.stderr


def test_on_a_terminal_a_progress_line_follows_the_download(tmp_path, monkeypatch, capsys):
    """The progress line is audit's (a carriage return, the line cleared), shown on a terminal only."""
    from topk_migrate.progress import Progress

    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    monkeypatch.setattr(Progress, "DELAY", 0.0)  # shown from the first poll (a loaded machine polls late)
    scratch = tmp_path / "scratch"
    (scratch / "pip-unpack-x").mkdir(parents=True)
    a = sources._Announce("sgl-kernel==9.9.1", "/cache/wheels", False, str(scratch))
    assert a.progress.enabled
    watcher = threading.Thread(target=a.watch)
    watcher.start()
    a.line("  Downloading sgl_kernel-9.9.1-py3-none-any.whl (2.0 MB)\n")
    part = scratch / "pip-unpack-x" / "sgl_kernel-9.9.1-py3-none-any.whl"
    part.write_bytes(b"\0" * 400_000)
    deadline = time.monotonic() + 10
    while not a.progress.shown and time.monotonic() < deadline:
        time.sleep(0.05)
    a.close()
    watcher.join()
    err = capsys.readouterr().err
    assert err.startswith("downloading sgl-kernel==9.9.1: sgl_kernel-9.9.1-py3-none-any.whl (2.0 MB) into "
                          "/cache/wheels\n")
    assert "\r\x1b[Kdownloading sgl_kernel-9.9.1-py3-none-any.whl: " in err and " of 2.0 MB" in err
    assert err.endswith("\r\x1b[K")  # cleared when done
    q = sources._Announce("sgl-kernel==9.9.1", "/cache/wheels", True, str(scratch))
    assert not q.progress.enabled
    # what pip prints comes from the index: a name with a terminal escape is printed escaped
    hostile = sources._Announce("sgl-kernel==9.9.1", "/cache/wheels", False, str(scratch))
    hostile.line("  Downloading sgl_kernel-9.9.1-py3-none-any.whl\x1b]0;x\x07\x1b[2J (2.0 MB)\n")
    hostile.close()
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "\x1b" not in err and "\x07" not in err and "downloading sgl-kernel==9.9.1" in err
