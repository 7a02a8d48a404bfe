"""files.py: every protection here has a test that fails when it is removed."""
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import textwrap
import threading
from pathlib import Path

import pytest

from helpers import ROOT
from topk_migrate import files
from topk_migrate.files import read_source, syntax_error_message, write_source
from topk_migrate.model import InputError

CALL = "out = flash_mla_sparse_fwd(q, kv, indices, scale)"
FIXED = "out = flash_mla_sparse_fwd(q, kv, indices, scale, topk_length=lens)"


def rewrite(path, old=CALL, new=FIXED):
    src = read_source(str(path))
    assert old in src.text
    return write_source(src, src.text.replace(old, new))


def temps(d):
    return sorted(p.name for p in Path(d).iterdir() if p.name.startswith(files.TEMP_PREFIX))


# ---- faithful bytes ---------------------------------------------------------

def test_bom_kept(tmp_path):
    p = tmp_path / "bom.py"
    p.write_bytes(b"\xef\xbb\xbf# \xc3\xa9\n" + CALL.encode() + b"\n")
    src = read_source(str(p))
    assert src.bom and not src.text.startswith("\ufeff")
    assert rewrite(p)
    assert p.read_bytes() == b"\xef\xbb\xbf# \xc3\xa9\n" + FIXED.encode() + b"\n"


def test_no_bom_added(tmp_path):
    p = tmp_path / "plain.py"
    p.write_bytes(CALL.encode() + b"\n")
    rewrite(p)
    assert p.read_bytes() == FIXED.encode() + b"\n"


def test_pep263_latin1_kept(tmp_path):
    p = tmp_path / "latin.py"
    head = b"#!/usr/bin/env python\n# -*- coding: latin-1 -*-\n# caf\xe9\n"
    p.write_bytes(head + CALL.encode() + b"\n")
    src = read_source(str(p))
    assert src.encoding == "iso-8859-1" and "caf\u00e9" in src.text
    rewrite(p)
    assert p.read_bytes() == head + FIXED.encode() + b"\n"


@pytest.mark.parametrize("nl", [b"\r", b"\n", b"\r\n"])
def test_coding_cookie_only_on_the_first_two_lines(tmp_path, nl):
    # Found on the real tree (transformers' modular_swin.py with CR line ends):
    # a comment far down mentioning "coding: bool" is not a PEP 263 cookie.
    p = tmp_path / "cr.py"
    body = nl.join([b"# Copyright", b"#", b"x = 1", b"# use_sliding_window_encoding: bool", b"# caf\xc3\xa9", b""])
    p.write_bytes(body)
    src = read_source(str(p))
    assert src.encoding == "utf-8" and "caf\u00e9" in src.text


def test_coding_cookie_on_line_two_after_cr(tmp_path):
    p = tmp_path / "cr2.py"
    p.write_bytes(b"#!/usr/bin/env python\r# -*- coding: latin-1 -*-\rx = 1  # caf\xe9\r")
    assert read_source(str(p)).encoding == "iso-8859-1"


def test_lossy_codec_refused(tmp_path):
    p = tmp_path / "utf7.py"
    p.write_bytes(b'# coding: utf-7\nx = "+AGE-"\n')  # decodes to "a", would encode back as "a"
    with pytest.raises(InputError, match="round-trip"):
        read_source(str(p))


@pytest.mark.parametrize("nl", [b"\r\n", b"\n", b"\r"])
def test_line_endings_kept(tmp_path, nl):
    p = tmp_path / "nl.py"
    body = nl.join([b"import x", CALL.encode(), b"y = 1", b""])
    p.write_bytes(body)
    assert read_source(str(p)).newline == nl.decode()
    rewrite(p)
    assert p.read_bytes() == body.replace(CALL.encode(), FIXED.encode())


def test_mixed_line_endings_left_as_is(tmp_path):
    p = tmp_path / "mixed.py"
    body = b"import x\r\n" + CALL.encode() + b"\ny = 1\r\nz = 2\n"
    p.write_bytes(body)
    assert read_source(str(p)).newline == "mixed"
    rewrite(p)
    assert p.read_bytes() == body.replace(CALL.encode(), FIXED.encode())


def test_missing_trailing_newline_not_added(tmp_path):
    p = tmp_path / "tail.py"
    p.write_bytes(CALL.encode())
    src = read_source(str(p))
    write_source(src, FIXED + "\n")  # a codemod that appended a newline
    assert p.read_bytes() == FIXED.encode()


def test_trailing_newline_not_dropped(tmp_path):
    # LibCST drops a final lone "\r"; the file must keep it.
    p = tmp_path / "tail.py"
    p.write_bytes(CALL.encode() + b"\r")
    src = read_source(str(p))
    write_source(src, FIXED)
    assert p.read_bytes() == FIXED.encode() + b"\r"


def test_unchanged_text_is_not_written(tmp_path):
    p = tmp_path / "same.py"
    p.write_text(CALL + "\n")
    os.utime(p, ns=(1, 1))
    assert write_source(read_source(str(p)), CALL + "\n") is False
    assert p.stat().st_mtime_ns == 1


# ---- metadata ---------------------------------------------------------------

@pytest.mark.parametrize("mode", [0o755, 0o640, 0o600, 0o4755])
def test_mode_kept(tmp_path, mode):
    p = tmp_path / "m.py"
    p.write_text(CALL + "\n")
    os.chmod(p, mode)
    rewrite(p)
    assert stat.S_IMODE(p.stat().st_mode) == mode


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to chown")
def test_owner_kept(tmp_path):
    p = tmp_path / "o.py"
    p.write_text(CALL + "\n")
    os.chown(p, 65534, 65534)
    rewrite(p)
    assert (p.stat().st_uid, p.stat().st_gid) == (65534, 65534)


def test_symlink_kept_and_target_rewritten(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    target = real / "t.py"
    target.write_text(CALL + "\n")
    link = tmp_path / "link.py"
    link.symlink_to(target)
    rewrite(link)
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text() == FIXED + "\n"
    assert temps(real) == [] and temps(tmp_path) == []


# ---- refusing to write ------------------------------------------------------

@pytest.mark.parametrize("bad", [
    "out = flash_mla_sparse_fwd(q, kv, indices, scale, topk_length=lens, topk_length=lens)",
    "out = flash_mla_sparse_fwd(q, kv, indices, scale, topk_length=lens",
    "out = flash_mla_sparse_fwd(q, kv, indices, topk_length=lens, scale)",
])
def test_rewrite_that_does_not_compile_is_not_written(tmp_path, bad):
    p = tmp_path / "r.py"
    p.write_text(CALL + "\n")
    before = p.read_bytes()
    with pytest.raises(InputError, match="rewrite rejected"):
        rewrite(p, new=bad)
    assert p.read_bytes() == before and temps(tmp_path) == []


def test_rewrite_of_source_newer_than_this_python_checked_with_libcst(tmp_path):
    # The original does not compile here (say: syntax of a newer Python); the
    # rewrite is then accepted if LibCST parses it, and rejected if it does not.
    old = "x = yield 1\n" + CALL + "\n"  # 'yield' outside function: compile() fails, LibCST parses
    p = tmp_path / "n.py"
    p.write_text(old)
    assert rewrite(p)
    p.write_text(old)
    with pytest.raises(InputError):
        rewrite(p, new="out = flash_mla_sparse_fwd(q, kv,,)")


def test_changed_on_disk_after_read_is_not_overwritten(tmp_path):
    p = tmp_path / "race.py"
    p.write_text(CALL + "\n")
    src = read_source(str(p))
    p.write_text(CALL + "\n# edited by someone else\n")
    with pytest.raises(InputError, match="changed on disk"):
        write_source(src, src.text.replace(CALL, FIXED))
    assert p.read_text() == CALL + "\n# edited by someone else\n"
    assert temps(tmp_path) == []


def test_change_during_write_is_caught_right_before_rename(tmp_path, monkeypatch):
    # The racing editor writes while we are writing the temp file (after any
    # early check): the check right before the rename must see it.
    p = tmp_path / "race.py"
    p.write_text(CALL + "\n")
    src = read_source(str(p))
    real_fsync = os.fsync

    def racing_fsync(fd):
        p.write_text("# formatter was here\n" + CALL + "\n")
        return real_fsync(fd)

    monkeypatch.setattr(files.os, "fsync", racing_fsync)
    with pytest.raises(InputError, match="changed on disk"):
        write_source(src, src.text.replace(CALL, FIXED))
    assert p.read_text() == "# formatter was here\n" + CALL + "\n"
    assert temps(tmp_path) == []


def test_write_failure_leaves_original_and_no_temp(tmp_path, monkeypatch):
    p = tmp_path / "full.py"
    p.write_text(CALL + "\n")
    src = read_source(str(p))

    def disk_full(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(files.os, "fsync", disk_full)
    with pytest.raises(InputError, match="no space left"):
        write_source(src, src.text.replace(CALL, FIXED))
    assert p.read_text() == CALL + "\n" and temps(tmp_path) == []


def test_read_only_file_not_overwritten(tmp_path):
    p = tmp_path / "ro.py"
    p.write_text(CALL + "\n")
    os.chmod(p, 0o444)
    with pytest.raises(InputError, match="read-only"):
        rewrite(p)
    assert p.read_text() == CALL + "\n"


# ---- bad input: one line each -----------------------------------------------

def one_line_error(path, **kw):
    with pytest.raises(InputError) as ei:
        read_source(str(path), **kw)
    msg = str(ei.value)
    assert msg and "\n" not in msg and "Traceback" not in msg
    return msg


def test_binary_file(tmp_path):
    p = tmp_path / "b.py"
    p.write_bytes(b"\x7fELF\x02\x01\x01\x00\x00flash_mla_sparse_fwd")
    assert "binary file" in one_line_error(p)


def test_utf16_file_is_binary(tmp_path):
    p = tmp_path / "u16.py"
    p.write_bytes(("x = 1\n" + CALL).encode("utf-16"))
    assert "binary file" in one_line_error(p)


def test_non_utf8_bytes_line_reported(tmp_path):
    p = tmp_path / "l1.py"
    p.write_bytes(b"x = 1\ny = 2\n# caf\xe9\n")
    assert one_line_error(p) == "not valid utf-8 at line 3 (byte 17)"


def test_non_utf8_line_counts_cr_line_ends(tmp_path):
    p = tmp_path / "cr.py"
    p.write_bytes(b"x = 1\ry = 2\r\n# caf\xe9\r")
    assert one_line_error(p) == "not valid utf-8 at line 3 (byte 18)"


def test_bad_coding_cookie(tmp_path):
    p = tmp_path / "c.py"
    p.write_bytes(b"# -*- coding: klingon -*-\nx = 1\n")
    assert "encoding" in one_line_error(p)


def test_bom_with_conflicting_cookie(tmp_path):
    p = tmp_path / "c.py"
    p.write_bytes(b"\xef\xbb\xbf# coding: latin-1\nx = 1\n")
    assert "encoding" in one_line_error(p)


def test_empty_file_reads_fine(tmp_path):
    p = tmp_path / "e.py"
    p.write_bytes(b"")
    src = read_source(str(p))
    assert src.text == "" and src.newline is None


def test_missing(tmp_path):
    assert "no such file" in one_line_error(tmp_path / "nope.py")


def test_directory_named_py(tmp_path):
    (tmp_path / "pkg.py").mkdir()
    assert one_line_error(tmp_path / "pkg.py") == "is a directory"


def test_broken_symlink(tmp_path):
    (tmp_path / "dangling.py").symlink_to(tmp_path / "gone.py")
    assert "broken symlink" in one_line_error(tmp_path / "dangling.py")


def test_symlink_loop(tmp_path):
    (tmp_path / "a.py").symlink_to(tmp_path / "b.py")
    (tmp_path / "b.py").symlink_to(tmp_path / "a.py")
    assert one_line_error(tmp_path / "a.py") == "symlink loop"


def test_fifo_does_not_hang(tmp_path):
    p = tmp_path / "fifo.py"
    os.mkfifo(p)
    assert one_line_error(p) == "not a regular file"


def test_size_limit(tmp_path, monkeypatch):
    p = tmp_path / "big.py"
    p.write_text("x = 1\n" * 100 + CALL + "\n")
    assert "file too large" in one_line_error(p, limit=100)
    monkeypatch.setenv(files.MAX_BYTES_ENV, "100")
    assert files.MAX_BYTES_ENV in one_line_error(p)
    monkeypatch.setenv(files.MAX_BYTES_ENV, "100000")
    assert read_source(str(p)).size == p.stat().st_size


def test_size_limit_ignores_files_that_cannot_hold_a_site(tmp_path):
    p = tmp_path / "big_but_irrelevant.py"
    p.write_text("x = 1\n" * 100)
    assert read_source(str(p), limit=100).text == "x = 1\n" * 100


NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


@pytest.mark.skipif(not hasattr(os, "geteuid"), reason="POSIX only")
def test_unreadable_file():
    # Root reads anything, so read as nobody, from a world-readable copy of the
    # three stdlib-only modules involved (the checkout may sit where nobody cannot go).
    d = Path(tempfile.mkdtemp(prefix="topk-unreadable-"))
    try:
        (d / "topk_migrate").mkdir()
        for m in ("files.py", "model.py"):
            shutil.copy(ROOT / "topk_migrate" / m, d / "topk_migrate" / m)
        shutil.copytree(ROOT / "topk_migrate" / "discover", d / "topk_migrate" / "discover",
                        ignore=shutil.ignore_patterns("__pycache__"))
        p = d / "secret.py"
        p.write_text(CALL + "\n")
        os.chmod(p, 0)
        for x in (d, d / "topk_migrate"):
            os.chmod(x, 0o755)
        code = (
            "import sys; sys.path.insert(0, sys.argv[2])\n"
            "from topk_migrate.files import read_source\n"
            "from topk_migrate.model import InputError\n"
            "try:\n    read_source(sys.argv[1])\nexcept InputError as e:\n    print(e)\n"
        )
        prefix = []
        if os.geteuid() == 0:
            if not shutil.which("setpriv"):
                pytest.skip("root without setpriv")
            prefix = NOBODY
            if subprocess.run(prefix + [sys.executable, "-c", "pass"], capture_output=True, cwd="/").returncode:
                pytest.skip("nobody cannot run this interpreter")
        out = subprocess.run(prefix + [sys.executable, "-c", code, str(p), str(d)],
                             capture_output=True, text=True, timeout=60, cwd="/")
        assert out.stdout.strip() == "cannot read: permission denied", out.stderr
    finally:
        shutil.rmtree(d)


# ---- Python 2 and syntax errors -----------------------------------------------

@pytest.mark.parametrize("src,hint", [
    ("import os\nprint 'hello'\n", "print statement"),
    ("try:\n    pass\nexcept ValueError, e:\n    pass\n", "except X, e"),
    ("x = 0777\n", "old octal literal"),
    ("exec 'x = 1'\n", "exec statement"),
])
def test_python2_hint(src, hint):
    msg = syntax_error_message(src)
    assert msg.startswith("syntax error at line ") and f"looks like Python 2: {hint}" in msg


def test_syntax_error_line():
    assert syntax_error_message("x = 1\ny = (\n") .startswith("syntax error at line 2")
    assert syntax_error_message("x = 1\n") is None


# ---- signals -----------------------------------------------------------------

@pytest.fixture
def sigint_raises():
    """Python's own SIGINT handler, even where the test run was started with SIGINT ignored."""
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, old)


def test_deferred_signals_delivers_after_block(sigint_raises):
    seen = []
    with pytest.raises(KeyboardInterrupt):
        with files.deferred_signals():
            # At this thread: a process-directed kill may be taken by another thread whose mask is
            # open (torch's pool threads, once an earlier test imported torch) and run the handler at once.
            signal.pthread_kill(threading.get_ident(), signal.SIGINT)
            seen.append("still running")
    assert seen == ["still running"]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_inside_write_window_finishes_the_write(tmp_path, sig):
    # A signal that arrives between temp file and rename must neither leave the
    # temp file behind nor abandon the rewrite: the write completes, then the
    # process dies (SIGTERM) or raises KeyboardInterrupt (SIGINT).
    p = tmp_path / "s.py"
    p.write_text(CALL + "\n")
    code = textwrap.dedent(f"""
        import os, signal, sys
        sys.path.insert(0, {str(ROOT)!r})
        from topk_migrate import files
        real = os.fsync
        def fsync(fd):
            os.kill(os.getpid(), {int(sig)})
            return real(fd)
        files.os.fsync = fsync
        src = files.read_source(sys.argv[1])
        files.write_source(src, src.text.replace({CALL!r}, {FIXED!r}))
        print("survived")
    """)
    out = subprocess.run([sys.executable, "-c", code, str(p)], capture_output=True, text=True, timeout=60,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert out.returncode != 0 and "survived" not in out.stdout
    assert p.read_text() == FIXED + "\n"
    assert temps(tmp_path) == []


@pytest.mark.parametrize("raw", [b"x = 1\n", "\ufeffx = 'é'\r\n".encode("utf-8"),
                                 b"# -*- coding: latin-1 -*-\nx = '\xe9'\r", b"x = 1"])
def test_the_digest_is_of_the_bytes_read(tmp_path, raw):
    """SourceFile.digest, made from the text when a write asks it, is the sha256 of the file's bytes."""
    import hashlib

    p = tmp_path / "m.py"
    p.write_bytes(raw)
    assert read_source(str(p)).digest == hashlib.sha256(raw).hexdigest()
