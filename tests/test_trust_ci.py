"""What a CI log makes of the tool's text: a line that starts (after blanks) with `::` is a GitHub workflow
command and one with `##` an Azure one, so no line may start with a name a fork chose (escape.lead); and
after `--` every word is a file, `-` included, so a committed file named `-` is checked by the hooks."""
import os
import re
from pathlib import Path

import pytest

from helpers import KERNEL, ROOT, run_cli
from topk_migrate.escape import lead

CALL = ("from sgl_kernel.flash_mla import flash_mla_sparse_fwd\n\n"
        "def f(q, kv, i, s):\n    return flash_mla_sparse_fwd(q, kv, i, s)\n")
TEN_POSITIONAL = ("from sgl_kernel.flash_mla import flash_mla_with_kvcache\n"
                  "def f(q, k, b, c, d, e, g, h):\n"
                  "    return flash_mla_with_kvcache(q, k, b, c, d, e, g, h, None, False)\n")
NAMES = ["::error title=Approved by security::all calls migrated.py", " ::stop-commands::hidden.py",
         "##vso[task.complete result=Succeeded]z.py", "\u3000::warning::w.py", "-x.py"]
DATA = ROOT / "tests" / "data" / "bump"
EXAMPLE = ROOT / "fixtures" / "examples" / "dsa_backend.py"


def commands_in(output: str):
    """The lines a runner would take as a command: `::` (GitHub, after blanks of any kind) or `##` (Azure)."""
    return [line for line in output.splitlines() if re.match(r"(::|##)", line.lstrip())]


@pytest.fixture
def hostile(tmp_path):
    for name in NAMES:
        (tmp_path / name).write_text(CALL)
    (tmp_path / "requirements.txt").write_text(KERNEL + "\n")
    return tmp_path


@pytest.mark.parametrize("command", [["check"], ["apply", "--diff"], ["apply"], ["audit", "."],
                                     ["audit", "--format", "json", "."]])
def test_no_line_of_any_command_starts_with_a_forks_name(hostile, command):
    paths = [] if command[0] == "audit" else ["--", *NAMES, "::missing.py"]
    r = run_cli(*command, *paths, cwd=hostile)
    assert r.returncode in (1, 2), r.stdout + r.stderr
    assert commands_in(r.stdout) == [] and commands_in(r.stderr) == [], r.stdout + r.stderr
    if command[0] == "check":  # the site is there, its path shown as a path
        assert "./::error title=Approved by security::all calls migrated.py:4:12 manual " in r.stdout
        assert "./::missing.py: error: " in r.stderr


def test_bump_lines_start_with_no_forks_name(tmp_path):
    for name in NAMES:
        (tmp_path / name).write_text(TEN_POSITIONAL)
    r = run_cli("bump", "--from", DATA / "sgl-kernel-0.3.17.json", "--to", DATA / "sgl-kernel-0.3.19.json",
                "--", *NAMES, cwd=tmp_path)
    assert r.returncode == 1 and "./::error title=Approved" in r.stdout, r.stdout + r.stderr
    assert commands_in(r.stdout) == [] and commands_in(r.stderr) == []


@pytest.mark.parametrize("text, shown", [
    ("a.py:1:2 x", "a.py:1:2 x"), ("_a.py", "_a.py"), (".hidden/a.py", ".hidden/a.py"), ("/abs/a.py", "/abs/a.py"),
    ("é.py", "é.py"), ("::error::x", "./::error::x"), (" ::x", "./ ::x"), ("##[error]x", "./##[error]x"),
    ("-", "-"), ("-x.py:1:1", "-x.py:1:1"), ("\u3000::x", "./\u3000::x"), ("\\x1b]0;t", "./\\x1b]0;t"), ("", ""),
])
def test_lead_puts_dot_slash_before_any_name_that_does_not_start_as_a_plain_path(text, shown):
    assert lead(text) == shown


def test_after_double_dash_a_file_named_dash_is_that_file(tmp_path):
    """The hooks run `check -- FILES`: a committed `-` is checked (it was read as empty stdin: exit 0)."""
    (tmp_path / "-").write_bytes(EXAMPLE.read_bytes())
    (tmp_path / "requirements.txt").write_text(KERNEL + "\n")
    r = run_cli("check", "--", "-", cwd=tmp_path, input="")
    assert r.returncode == 1 and re.match(r"\./-:\d+:\d+ fixable ", r.stdout), r.stdout + r.stderr
    r = run_cli("apply", "--", "-", cwd=tmp_path, input="")
    assert r.returncode == 1 and "topk_length=" in (tmp_path / "-").read_text(), r.stdout + r.stderr
    assert r.stdout.startswith("./-:232:21 fixed ")  # the file rewritten in place, not the source to stdout


def test_dash_before_double_dash_is_still_standard_input(tmp_path):
    (tmp_path / "-").write_text("x = 1\n")  # not read
    r = run_cli("check", "--kernel", KERNEL, "-", cwd=tmp_path, input=CALL)
    assert r.returncode == 1 and r.stdout.startswith("-:4:12 manual "), r.stdout + r.stderr
    assert os.path.getsize(Path(tmp_path) / "-") == 6
