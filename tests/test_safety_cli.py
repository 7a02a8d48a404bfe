"""Issue 5 through the real CLI: bad input gets one line, the run goes on, and
apply never loses or mangles a user's bytes."""
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from helpers import ROOT
from safety_samples import COMPLIANT, FIXABLE, KERNEL, cli, snapshot, temp_files

NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


def fixed_text(tmp_path_factory, text=FIXABLE):
    """What apply makes of `text` (LF, UTF-8), the reference for the byte-level checks."""
    d = tmp_path_factory.mktemp("ref")
    (d / "ref.py").write_text(text)
    r = cli("apply", "--kernel", KERNEL, d)
    assert r.returncode == 1, r.stderr
    out = (d / "ref.py").read_text()
    assert out != text and out.count("topk_length=") == 3
    return out


@pytest.fixture(scope="module")
def fixed(tmp_path_factory):
    """fixed_text, made once per text for the module's tests (one apply run each, not one per test)."""
    made = {}

    def get(text=FIXABLE):
        if text not in made:
            made[text] = fixed_text(tmp_path_factory, text)
        return made[text]
    return get


# ---- bad input: one line each, the run goes on, exit 2 ---------------------------

def make_bad(kind, d: Path):
    """Create the bad input `kind` in d; return (path to report, expected message part)."""
    p = d / f"bad_{kind}.py"
    if kind == "syntax":
        p.write_text("from sgl_kernel import flash_mla_sparse_fwd\ndef f(:\n    pass\n")
        return p, "syntax error at line"
    if kind == "python2":
        p.write_text("from sgl_kernel import flash_mla_sparse_fwd\nimport os\nprint 'hi'\n")
        return p, "syntax error at line 3"
    if kind == "non_utf8":
        p.write_bytes(b"from sgl_kernel import flash_mla_sparse_fwd\n# caf\xe9\n")
        return p, "not valid utf-8 at line 2"
    if kind == "binary":
        p.write_bytes(b"\x7fELF\x02\x01\x01\x00flash_mla_sparse_fwd\x00\x00")
        return p, "binary file"
    if kind == "too_large":
        p.write_text(FIXABLE + "x = 1\n" * 20_000)  # 120 kB, over the run's TOPK_MIGRATE_MAX_BYTES=100000
        return p, "file too large"
    if kind == "read_only":
        p.write_text(FIXABLE)
        p.chmod(0o444)
        return p, "read-only file"
    if kind == "broken_symlink":
        p.symlink_to(d / "gone.py")
        return p, "broken symlink"
    if kind == "symlink_loop":
        p.symlink_to(d / "bad_loop_b.py")
        (d / "bad_loop_b.py").symlink_to(p)
        return p, "symlink loop"
    if kind == "fifo":
        os.mkfifo(p)
        return p, "not a regular file"
    if kind == "missing":
        return p, "no such file or directory"  # passed on the command line, never created
    raise AssertionError(kind)


BAD = ["syntax", "python2", "non_utf8", "binary", "too_large", "read_only",
       "broken_symlink", "symlink_loop", "fifo", "missing"]


@pytest.mark.parametrize("kind", BAD)
def test_bad_input_one_line_and_run_goes_on(tmp_path, kind):
    (tmp_path / "aa_good.py").write_text(FIXABLE)
    (tmp_path / "zz_good.py").write_text(FIXABLE)
    bad, expected = make_bad(kind, tmp_path)
    before = snapshot(tmp_path)
    extra = [bad] if kind == "missing" else []
    r = cli("apply", "--kernel", KERNEL, tmp_path, *extra, env={**os.environ, "TOPK_MIGRATE_MAX_BYTES": "100000"},
            timeout=120)
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stdout + r.stderr
    errors = [l for l in r.stderr.splitlines() if l.startswith(f"{bad}: error: ")]
    assert len(errors) == 1, r.stderr
    assert expected in errors[0]
    after = snapshot(tmp_path)
    changed = {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}
    if kind == "too_large":
        # the other files were still processed; the big one names their helper and was not read, so what it does
        # to it is not known: they stay as they were, each site's reason naming the file and the limit to raise
        assert changed == set()
        assert r.stdout.count(f"{bad.name} is over the 100000-byte read limit (raise TOPK_MIGRATE_MAX_BYTES to read it)") == 4, r.stdout
    else:  # the other files were still processed and rewritten
        for good in ("aa_good.py", "zz_good.py"):
            assert (tmp_path / good).read_text().count("topk_length=") == 3
        assert changed == {"aa_good.py", "zz_good.py"}
    assert temp_files(tmp_path) == []


def nobody_can_run_the_cli():
    if not IS_ROOT or not shutil.which("setpriv"):
        return False
    r = subprocess.run(NOBODY + [sys.executable, "-c", "import click, libcst, topk_migrate.cli"],
                       capture_output=True, cwd="/", timeout=60)
    return r.returncode == 0


@pytest.mark.skipif(not nobody_can_run_the_cli(), reason="needs root, setpriv and an interpreter another user can run")
def test_unreadable_file_as_unprivileged_user():
    # Root reads anything, so act as nobody. (tests/test_files.py checks the same
    # message from read_source as nobody, which needs no third-party packages.)
    d = Path(tempfile.mkdtemp(prefix="topk-unreadable-"))
    try:
        (d / "aa_good.py").write_text(FIXABLE)
        secret = d / "secret.py"
        secret.write_text(FIXABLE)
        os.chmod(secret, 0)  # owned by root, so nobody cannot read it
        os.chown(d, 65534, 65534)
        os.chown(d / "aa_good.py", 65534, 65534)
        os.chmod(d, 0o755)
        r = subprocess.run(NOBODY + [sys.executable, "-m", "topk_migrate", "apply", "--kernel", KERNEL, str(d)],
                           capture_output=True, text=True, timeout=120, cwd="/")
        assert r.returncode == 2, r.stderr
        assert f"{secret}: error: cannot read: permission denied" in r.stderr.splitlines()
        assert "Traceback" not in r.stderr
        assert (d / "aa_good.py").read_text().count("topk_length=") == 3
    finally:
        shutil.rmtree(d)


def test_unreadable_file_reported_and_run_goes_on(tmp_path, monkeypatch):
    # The OS refuses the read (as it does for a user without permission; root
    # cannot be refused, so the refusal is injected at os.open).
    from topk_migrate import files

    (tmp_path / "aa_good.py").write_text(FIXABLE)
    secret = tmp_path / "secret.py"
    secret.write_text(FIXABLE)
    real_open = os.open

    def refusing_open(path, *a, **k):
        if os.fspath(path) == str(secret):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *a, **k)

    monkeypatch.setattr(files.os, "open", refusing_open)
    res = run_inproc(["apply", "--kernel", KERNEL, tmp_path])
    assert res.exit_code == 2
    assert f"{secret}: error: cannot read: permission denied" in res.output.splitlines()
    assert "Traceback" not in res.output
    assert (tmp_path / "aa_good.py").read_text().count("topk_length=") == 3
    assert secret.read_text() == FIXABLE


@pytest.mark.parametrize("kind", ["empty", "dir_named_py"])
def test_harmless_oddities_are_not_errors(tmp_path, kind):
    (tmp_path / "good.py").write_text(FIXABLE)
    if kind == "empty":
        (tmp_path / "empty.py").write_bytes(b"")
    else:
        (tmp_path / "pkg.py").mkdir()
        (tmp_path / "pkg.py" / "inner.py").write_text(FIXABLE)
    r = cli("apply", "--kernel", KERNEL, tmp_path)
    assert r.returncode == 1 and "error:" not in r.stderr, r.stderr
    assert (tmp_path / "good.py").read_text().count("topk_length=") == 3
    if kind == "empty":
        assert (tmp_path / "empty.py").read_bytes() == b""
    else:
        assert (tmp_path / "pkg.py" / "inner.py").read_text().count("topk_length=") == 3


def test_syntax_error_names_the_right_line(tmp_path):
    p, _ = make_bad("syntax", tmp_path)  # `def f(:` on line 2
    r = cli("check", p)
    assert r.returncode == 2
    [line] = [l for l in r.stderr.splitlines() if "error:" in l]
    assert "syntax error at line 2" in line, line


def test_python2_file_is_named_as_such(tmp_path):
    p, _ = make_bad("python2", tmp_path)
    r = cli("check", p)
    assert r.returncode == 2
    [line] = [l for l in r.stderr.splitlines() if "error:" in l]
    assert "Python 2" in line, line


def test_failed_write_is_not_reported_as_fixed(tmp_path):
    p, _ = make_bad("read_only", tmp_path)
    r = cli("apply", "--kernel", KERNEL, p)
    assert r.returncode == 2
    assert " fixed " not in r.stdout + r.stderr, r.stdout + r.stderr
    assert p.read_text() == FIXABLE


# ---- unexpected errors: one line, traceback only with --verbose --------------------

def run_inproc(args):
    from topk_migrate.cli import main

    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.mark.parametrize("verbose", [False, True])
def test_traceback_only_with_verbose_for_unexpected_errors(tmp_path, monkeypatch, verbose):
    from topk_migrate import api

    def boom(*a, **k):
        raise RuntimeError("boom")

    monkeypatch.setattr(api, "_migrate", boom)
    (tmp_path / "a.py").write_text(FIXABLE)
    (tmp_path / "b.py").write_bytes(b"\0flash_mla_sparse_fwd")  # an expected error
    res = run_inproc(["apply", "--kernel", KERNEL] + (["--verbose"] if verbose else []) + [tmp_path])
    assert res.exit_code == 2
    out = res.output
    assert f"{tmp_path / 'a.py'}: error: internal error: RuntimeError: boom" in out
    assert f"{tmp_path / 'b.py'}: error: binary file" in out
    assert out.count("Traceback") == (1 if verbose else 0), out
    assert (tmp_path / "a.py").read_text() == FIXABLE


# ---- never overwrite what changed, never write what does not parse ----------------

def test_file_changed_after_read_is_not_overwritten(tmp_path, monkeypatch):
    from topk_migrate import files

    p = tmp_path / "race.py"
    p.write_text(FIXABLE)
    real_decode = files.decode_source

    def read_then_someone_edits(path, *a, **k):
        src = real_decode(path, *a, **k)
        with open(path, "a") as f:
            f.write("# saved by the editor\n")
        return src

    monkeypatch.setattr(files, "decode_source", read_then_someone_edits)
    res = run_inproc(["apply", "--kernel", KERNEL, p])
    assert res.exit_code == 2
    assert f"{p}: error: changed on disk since it was read; not overwritten" in res.output
    assert p.read_text() == FIXABLE + "# saved by the editor\n"
    assert temp_files(tmp_path) == []


def test_rewrite_that_does_not_parse_is_never_written(tmp_path, monkeypatch):
    from topk_migrate import api

    real = api._migrate

    def broken(source, *a, **k):
        m = real(source, *a, **k)
        return api.Migration(m.source, m.new_source.replace("topk_length=", "topk_length=(", 1), m.sites)

    monkeypatch.setattr(api, "_migrate", broken)
    p = tmp_path / "a.py"
    p.write_text(FIXABLE)
    res = run_inproc(["apply", "--kernel", KERNEL, p])
    assert res.exit_code == 2
    assert f"{p}: error: rewrite rejected, file left unchanged: syntax error at line" in res.output
    assert p.read_text() == FIXABLE and temp_files(tmp_path) == []


# ---- faithful bytes through the CLI ------------------------------------------

LATIN1_HEAD = "# -*- coding: latin-1 -*-\n# caf\u00e9\n"


@pytest.mark.parametrize("variant", ["crlf", "bom", "latin1", "no_final_newline", "mode_755", "cr"])
def test_apply_keeps_encoding_newlines_and_mode(tmp_path, fixed, variant):
    ref_in, ref_out = FIXABLE, fixed()
    if variant == "latin1":
        ref_in, ref_out = LATIN1_HEAD + FIXABLE, fixed(LATIN1_HEAD + FIXABLE)
    encode = {"latin1": lambda t: t.encode("latin-1"),
              "bom": lambda t: b"\xef\xbb\xbf" + t.encode(),
              "crlf": lambda t: t.replace("\n", "\r\n").encode(),
              "cr": lambda t: t.replace("\n", "\r").encode(),
              "no_final_newline": lambda t: t.rstrip("\n").encode()}.get(variant, lambda t: t.encode())
    p = tmp_path / "v.py"
    p.write_bytes(encode(ref_in))
    if variant == "mode_755":
        p.chmod(0o755)
    r = cli("apply", "--kernel", KERNEL, p)
    assert r.returncode == 1, r.stderr
    assert p.read_bytes() == encode(ref_out)
    if variant == "mode_755":
        assert stat.S_IMODE(p.stat().st_mode) == 0o755


def test_compliant_file_is_not_touched(tmp_path):
    p = tmp_path / "ok.py"
    p.write_text(COMPLIANT)
    os.utime(p, ns=(10**9, 10**9))
    r = cli("apply", "--kernel", KERNEL, p)
    assert r.returncode == 0, r.stderr
    assert p.read_text() == COMPLIANT and p.stat().st_mtime_ns == 10**9


# ---- idempotence: apply twice == apply once -------------------------------------

def fixture_trees():
    fx = ROOT / "fixtures"
    return sorted(str(p.relative_to(fx)) for p in fx.rglob("*.py")) if fx.is_dir() else []


def test_apply_twice_equals_apply_once(tmp_path):
    work = tmp_path / "work"
    if (ROOT / "fixtures").is_dir():
        shutil.copytree(ROOT / "fixtures", work / "fixtures", symlinks=True)
    work.mkdir(exist_ok=True)
    (work / "sample_fixable.py").write_text(FIXABLE)
    (work / "sample_compliant.py").write_text(COMPLIANT)
    first = cli("apply", "--kernel", KERNEL, work)
    assert "Traceback" not in first.stderr and first.returncode in (0, 1, 2), first.stderr
    once = snapshot(work)
    second = cli("apply", "--kernel", KERNEL, work)
    assert snapshot(work) == once
    assert "rewrote 0 file(s)" in second.stderr, second.stderr
    assert (work / "sample_fixable.py").read_text().count("topk_length=") == 3
