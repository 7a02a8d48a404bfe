"""The CLI contract: output lines, exit codes, diff-before-write, directories."""
import functools
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from helpers import run_cli

EXAMPLE = Path(__file__).resolve().parents[1] / "fixtures" / "examples"
LINE = re.compile(r"^(?P<path>.+):(?P<line>\d+):(?P<col>\d+) (?P<status>compliant|opt-out|fixable|fixed|manual) (?P<callee>\S+) \u2014 .+$")


cli = functools.partial(run_cli, timeout=None)


@pytest.fixture
def tree(tmp_path):
    shutil.copytree(EXAMPLE, tmp_path / "proj")
    (tmp_path / "proj" / "no_kernel.py").write_text("x = 1\n")
    return tmp_path / "proj"


def test_check_lists_sites_and_writes_nothing(tree):
    before = {p: p.read_bytes() for p in tree.rglob("*.py")}
    r = cli("check", tree)
    assert r.returncode == 1
    lines = r.stdout.splitlines()
    assert lines and all(LINE.match(l) for l in lines), r.stdout
    assert {LINE.match(l)["status"] for l in lines} == {"fixable"}
    assert {p: p.read_bytes() for p in tree.rglob("*.py")} == before


def test_diff_then_apply_then_nothing_left(tree):
    target = tree / "dsa_backend.py"
    before = target.read_bytes()
    r = cli("apply", "--diff", tree)
    header = f"--- a/{str(target.resolve()).lstrip('/')}\n+++ b/"  # outside any repo and the cwd: named from /
    assert r.returncode == 1 and r.stdout.startswith(header) and "+            topk_length=topk_length," in r.stdout
    assert target.read_bytes() == before
    r = cli("apply", tree)
    assert r.returncode == 1 and " fixed " in r.stdout and "rewrote 1 file(s)" in r.stderr
    assert "1 fixed, 0 fixable" in r.stderr  # the summary counts what the run did
    assert target.read_bytes() != before
    assert cli("check", tree).returncode == 0
    r = cli("apply", tree)
    assert r.returncode == 0 and "rewrote 0 file(s)" in r.stderr


def test_diff_applies_with_patch(tree, tmp_path):
    if not shutil.which("patch"):
        pytest.skip("patch(1) not installed")
    r = cli("apply", "--diff", "dsa_backend.py", cwd=tree)
    subprocess.run(["patch", "-p1", "-s"], input=r.stdout, text=True, cwd=tree, check=True)
    assert cli("check", "dsa_backend.py", cwd=tree).returncode == 0


def test_manual_sites_keep_exit_1_and_errors_exit_2(tree):
    (tree / "old.py").write_text(
        "from sgl_kernel.flash_mla import flash_mla_sparse_fwd\nflash_mla_sparse_fwd(q, kv, i, 1.0, **kw)\n")
    (tree / "broken.py").write_text("def f(:\n    flash_mla_sparse_fwd\n")
    r = cli("apply", tree)
    assert r.returncode == 2
    assert re.search(r"broken\.py: error: syntax error at line \d+", r.stderr)
    assert "Traceback" not in r.stderr
    assert " manual " in r.stdout and " fixed " in r.stdout  # the other files were still processed


def test_missing_path_and_bad_kernel_flag(tmp_path):
    r = cli("check", tmp_path / "nope.py")
    assert r.returncode == 2 and "nope.py: error:" in r.stderr
    r = cli("check", "--kernel", "sglang-kernel", tmp_path)
    assert r.returncode == 2 and "NAME==VERSION" in r.stderr


def test_clean_tree_exits_0(tmp_path):
    (tmp_path / "a.py").write_text("import torch\n")
    r = cli("check", tmp_path)
    assert r.returncode == 0 and r.stdout == ""


def test_config_exclude_applies_to_walked_directories(tree):
    (tree / "pyproject.toml").write_text('[tool.topk-migrate]\nexclude = ["dsa_backend.py"]\n')
    r = cli("check", tree)
    assert r.returncode == 0 and r.stdout == "", r.stdout
    assert cli("check", tree / "dsa_backend.py").returncode == 1  # a file named explicitly is still checked


def test_an_internal_error_is_one_short_line(tmp_path, monkeypatch):
    """A bug of ours met on a file is reported in a line of bounded length, whatever the exception holds."""
    from topk_migrate import api
    from topk_migrate.model import INTERNAL_ERROR_CHARS

    f = tmp_path / "m.py"
    f.write_text("from sgl_kernel.flash_mla import flash_mla_sparse_fwd\nflash_mla_sparse_fwd(q, kv, i, 1.0)\n")

    def boom(*a, **k):
        raise KeyError("x" * 10_000)

    monkeypatch.setattr(api, "_migrate", boom)
    out = api.process_file(str(f), kernel="sglang-kernel==0.4.6")
    assert out.error.startswith("internal error: KeyError: ") and len(out.error) <= len("internal error: ") + INTERNAL_ERROR_CHARS
    assert "\n" not in out.error
