"""Output that file names cannot subvert, and reports a failed run cannot destroy
(issue 13.4, and the output parts of 14.3 and 11).

File names in a fork may hold terminal escapes, carriage returns, bidi overrides,
GitHub workflow-command syntax or bytes that are not UTF-8. Human-readable output
shows them escaped; JSON and SARIF carry them; nothing crashes on them.
"""
import functools
import json
import os
import shutil
import tempfile
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import KERNEL, ROOT, run_cli
from topk_migrate import report
from topk_migrate.audit import audit
from topk_migrate.discover import iter_python_files
from topk_migrate.escape import UNSAFE, printable

BACKEND = ROOT / "fixtures" / "examples" / "dsa_backend.py"
MANUAL = "from sgl_kernel import flash_mla_sparse_fwd\n\ndef f(q, kv, i, **kw):\n    return flash_mla_sparse_fwd(q, kv, i, 1.0, **kw)\n"
HOSTILE = "\x1b]0;PWNED\x07\x1b[31mred\r\x9b2J\u202eyp.txt"  # title, colour, carriage return, C1 CSI, bidi
RAW_CONTROLS = ("\x1b", "\x07", "\r", "\x9b", "\u202e")


cli = functools.partial(run_cli, timeout=120, text=False)  # bytes: the tests decode it strictly themselves


@pytest.fixture
def hostile(tmp_path):
    shutil.copy(BACKEND, tmp_path / f"{HOSTILE}.py")
    (tmp_path / f"{HOSTILE}bad.py").write_text("def f(:\n    flash_mla_sparse_fwd\n")
    return tmp_path


def assert_clean(out: bytes):
    text = out.decode("utf-8")  # strict: every format is valid UTF-8
    for c in RAW_CONTROLS:
        assert c not in text, (c, text)
    return text


@pytest.mark.parametrize("cmd", [("check",), ("apply", "--diff"), ("apply",)])
def test_check_and_apply_lines_escape_control_characters(hostile, cmd):
    r = cli(*cmd, "--kernel", KERNEL, hostile)
    assert r.returncode == 2 and b"Traceback" not in r.stderr
    out, err = assert_clean(r.stdout), assert_clean(r.stderr)
    assert "\\x1b]0;PWNED\\x07\\x1b[31mred\\x0d\\x9b2J\\u202eyp.txt" in out + err
    assert len([ln for ln in err.splitlines() if ": error: " in ln]) == 1  # the broken file: one line
    assert ("fixed" if cmd == ("apply",) else "fixable") in out + err


@pytest.mark.parametrize("fmt", ["text", "github"])
def test_audit_human_formats_escape_control_characters(hostile, fmt):
    r = cli("audit", "--kernel", KERNEL, "--format", fmt, hostile)
    assert r.returncode == 2 and b"Traceback" not in r.stderr
    out = assert_clean(r.stdout)
    assert "\\x1b]0;PWNED\\x07" in out
    if fmt == "github":
        assert all(ln.startswith("::") for ln in out.splitlines()[:-1])  # no line smuggled in


def test_json_and_sarif_carry_the_names_exactly(hostile):
    doc = json.loads(cli("audit", "--kernel", KERNEL, "--format", "json", hostile).stdout)
    assert {s["path"] for s in doc["sites"]} == {f"{HOSTILE}.py"} and doc["errors"][0]["path"] == f"{HOSTILE}bad.py"
    sarif = json.loads(cli("audit", "--kernel", KERNEL, "--format", "sarif", hostile).stdout)
    uri = sarif["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert uri == quote(f"{HOSTILE}.py")


@pytest.fixture
def undecodable(tmp_path):
    """A candidate file and a broken symlink whose names are not UTF-8."""
    d = os.fsencode(str(tmp_path))
    shutil.copy(BACKEND, os.path.join(d, b"bad\xff\x1b[2J.py"))
    os.symlink(b"gone\xfe", os.path.join(d, b"brk\xfd.py"))
    return tmp_path


@pytest.mark.parametrize("fmt", ["text", "json", "sarif", "github"])
def test_names_that_are_not_utf8_render_in_every_format(undecodable, fmt):
    r = cli("audit", "--kernel", KERNEL, "--format", fmt, undecodable)
    assert r.returncode == 2 and b"Traceback" not in r.stderr, r.stderr
    out = r.stdout.decode("utf-8")
    if fmt in ("json", "sarif"):
        doc = json.loads(out)
        if fmt == "json":
            assert doc["sites"][0]["path"] == "bad\\xff\x1b[2J.py" and doc["errors"][0]["path"] == "brk\\xfd.py"
        else:
            loc = doc["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
            assert loc == "bad%FF%1B%5B2J.py"  # the name's very bytes
    else:
        assert "bad\\xff\\x1b[2J.py" in assert_clean(r.stdout) and "brk\\xfd.py" in out


def test_check_and_apply_on_undecodable_names(undecodable):
    for cmd in (("check",), ("apply", "--diff"), ("apply",)):
        r = cli(*cmd, "--kernel", KERNEL, undecodable)
        assert r.returncode == 2 and b"Traceback" not in r.stderr, r.stderr
        text = assert_clean(r.stdout) + assert_clean(r.stderr)
        assert "bad\\xff\\x1b[2J.py" in text and "brk\\xfd.py: error: broken symlink" in text


def test_report_file_is_replaced_only_by_a_finished_run(tmp_path):
    shutil.copy(BACKEND, tmp_path / "backend.py")
    out = tmp_path / "reports" / "report.json"
    out.parent.mkdir()
    r = cli("audit", "--kernel", KERNEL, "--format", "json", "-o", out, tmp_path / "backend.py")
    assert r.returncode == 1 and r.stdout == b""
    err = r.stderr.decode()
    assert "1 site(s)" in err and f"report written to {out}" in err  # the summary, and where the report went
    good = out.read_bytes()
    assert json.loads(good)["summary"]["sites"] == 1
    # a run that fails as a whole still finishes its report, holding the error: a code scan fed by a
    # fork's checkout must not come out blank (nor keep a stale one) because the fork made it fail
    r = cli("audit", "--rev", "no-such-rev", "--format", "json", "-o", out, tmp_path / "backend.py")
    assert r.returncode == 2 and b"error:" in r.stderr
    failed = json.loads(out.read_bytes())  # whole, never truncated (click.File("w") once left 0 bytes)
    assert failed["summary"]["sites"] == 0 and failed["errors"][0]["path"] == "backend.py"
    assert "git rev-parse" in failed["errors"][0]["error"]
    assert os.listdir(out.parent) == ["report.json"]  # no temporary file left behind
    r = cli("audit", "-o", tmp_path / "no-dir" / "r.json", tmp_path / "backend.py")
    assert r.returncode == 2 and r.stderr.decode().count("\n") == 1 and b"cannot write the report" in r.stderr


def test_a_report_is_never_written_through_a_symlink_nor_keeps_execute_bits(tmp_path):
    # A fork commits `report.txt -> ../home/bin/tool` where the docs put `-o`: the target must stay.
    shutil.copy(BACKEND, tmp_path / "backend.py")
    (tmp_path / "tool").write_text("#!/bin/sh\necho genuine\n")
    os.chmod(tmp_path / "tool", 0o755)
    os.symlink("tool", tmp_path / "link.txt")
    os.mkdir(tmp_path / "bin")
    os.symlink("bin", tmp_path / "out")
    for target, cwd in ((tmp_path / "link.txt", None), ("out/r.txt", tmp_path)):
        r = cli("audit", "--kernel", KERNEL, "-o", target, tmp_path / "backend.py", cwd=cwd)
        assert r.returncode == 2 and b"symbolic link" in r.stderr and r.stderr.count(b"\n") == 1, r.stderr
    assert (tmp_path / "tool").read_text() == "#!/bin/sh\necho genuine\n" and os.listdir(tmp_path / "bin") == []
    assert os.path.islink(tmp_path / "link.txt")
    # a regular report replaced: its execute bits are not kept
    assert cli("audit", "--kernel", KERNEL, "-o", tmp_path / "tool", tmp_path / "backend.py").returncode == 1
    assert "LOCATION" in (tmp_path / "tool").read_text() and os.stat(tmp_path / "tool").st_mode & 0o111 == 0


def test_a_report_to_a_fifo_is_written_into_it_not_put_in_its_place(tmp_path):
    # `-o /dev/null` once renamed a regular file over /dev/null (as root, for every process).
    # A FIFO stands in for any file that is not regular: a rename would replace it as well.
    import threading

    shutil.copy(BACKEND, tmp_path / "backend.py")
    os.mkfifo(tmp_path / "report.fifo")
    got = []
    reader = threading.Thread(target=lambda: got.append((tmp_path / "report.fifo").read_bytes()), daemon=True)
    reader.start()
    r = cli("audit", "--kernel", KERNEL, "--format", "json", "-o", tmp_path / "report.fifo", tmp_path / "backend.py")
    reader.join(60)
    assert r.returncode == 1, r.stderr
    assert os.path.exists(tmp_path / "report.fifo") and not os.path.isfile(tmp_path / "report.fifo")
    assert json.loads(got[0])["summary"]["sites"] == 1
    assert sorted(os.listdir(tmp_path)) == ["backend.py", "report.fifo"]  # no temporary file left behind
    # /dev/stdout, a pipe here: its /proc link resolves to no path a rename could use
    r = cli("audit", "--kernel", KERNEL, "--format", "json", "-o", "/dev/stdout", tmp_path / "backend.py")
    assert r.returncode == 1, r.stderr
    assert json.loads(r.stdout)["summary"]["sites"] == 1


@pytest.mark.parametrize("encoding", ["latin-1", "ascii"])
def test_streams_that_cannot_encode_an_em_dash(tmp_path, encoding):
    (tmp_path / "caf\u00e9_\u4e2d.py").write_text(MANUAL)
    for cmd in ("check", "audit"):
        r = cli(cmd, tmp_path, env={**os.environ, "PYTHONIOENCODING": encoding})
        assert r.returncode == 1 and b"Traceback" not in r.stderr, r.stderr
        text = r.stdout.decode(encoding) + r.stderr.decode(encoding)
        assert "manual" in text and "\\u4e2d" in text
        if cmd == "check":
            assert " manual sgl_kernel.flash_mla_sparse_fwd -- " in text


# -- property: any name, any depth ------------------------------------------------------

PIECES = ["a", "b", " ", ":", "::", "%", ",", "=", "\n", "\r", "\t", "\x1b", "\x1b]0;t\x07", "\x07", "\x7f", "\x9b",
          "\u202e", "\u2028", "\u00e9", "\u4e2d", "\\", "'", '"', "$(x)", "\udcff", "\udc80", "\udcc3\udca9"]
component = st.lists(st.sampled_from(PIECES), max_size=8).map("".join)


def _unprop(s: str) -> str:
    return s.replace("%2C", ",").replace("%3A", ":").replace("%25", "%")


def found_once_and_rendered_safely(dirs, name):
    with tempfile.TemporaryDirectory() as top:
        parts = [os.fsencode("d" + c) for c in dirs] + [os.fsencode("f" + name + ".py")]
        path = os.path.join(os.fsencode(top), *parts)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(MANUAL)
        rel = os.fsdecode(os.path.join(*parts))  # as the walk reads it back
        assert [(os.fsencode(p), e) for p, e in iter_python_files([top])] == [(path, None)]
        result = audit([top], jobs=1)
        assert [s.path for s in result.sites] == [rel] and result.errors == []
        for fmt in report.RENDERERS:
            out = report.render(fmt, result.sites, result.errors, result.summary)
            out.encode("utf-8")  # strict
            lines = out.split("\n")[:-1]
            if fmt in ("text", "github"):
                assert all(UNSAFE.search(ln) is None for ln in lines), lines
            if fmt == "text":
                assert len(lines) == 2 and lines[1].startswith(printable(rel) + ":4:")  # (the summary: stderr)
            elif fmt == "github":
                assert len(lines) == 1 and lines[0].startswith("::error file=")
                assert _unprop(lines[0][len("::error file="):].split(",line=4,")[0]) == printable(rel)
            elif fmt == "json":
                want = "".join(f"\\x{ord(c) - 0xDC00:02x}" if "\udc80" <= c <= "\udcff" else c for c in rel)
                assert json.loads(out)["sites"][0]["path"] == want
            else:
                uri = json.loads(out)["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
                assert uri == quote(os.fsencode(rel))


SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow])


@settings(max_examples=30, derandomize=True, **SETTINGS)
@given(dirs=st.lists(component, max_size=6), name=component)
def test_any_file_name_at_any_depth_is_found_once_and_rendered_safely(dirs, name):
    found_once_and_rendered_safely(dirs, name)


@pytest.mark.heavy
@settings(max_examples=500, **SETTINGS)
@given(dirs=st.lists(component, max_size=40), name=component)
def test_any_file_name_at_any_depth_is_found_once_and_rendered_safely_heavy(dirs, name):
    found_once_and_rendered_safely(dirs, name)
