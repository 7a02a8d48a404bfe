"""--new-since REF (check, audit): only what a change brought. A site is old when REF had one with the same
rule, callee, status and code on the call's line: moved code is not new, an edited or added call is."""
import shutil
import subprocess

import pytest

from helpers import KERNEL, ROOT, run_cli
from topk_migrate.baseline import key, line_of, new_sites
from topk_migrate.model import Site, Status

CALL = "def {name}(q, kv, i, s):\n    return flash_mla_sparse_fwd(q, kv, i, {scale})\n"
EXAMPLE = ROOT / "fixtures" / "examples" / "dsa_backend.py"
HEAD = "from sgl_kernel.flash_mla import flash_mla_sparse_fwd\n\n\n"


def git(repo, *args):
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo, check=True,
                   capture_output=True)


@pytest.fixture
def repo(tmp_path):
    git(tmp_path, "init", "-q")
    (tmp_path / "requirements.txt").write_text(KERNEL + "\n")
    (tmp_path / "a.py").write_text(HEAD + CALL.format(name="f", scale="s") + "\n\n" + CALL.format(name="g", scale="s"))
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-qm", "base")
    return tmp_path


def reported(r):
    return [ln.split()[0] for ln in r.stdout.splitlines() if ".py:" in ln.split()[0]]


@pytest.mark.parametrize("command", [["check"], ["audit"]])
def test_moved_code_is_not_new_an_edited_or_added_call_is(repo, command):
    r = run_cli(*command, "--new-since", "HEAD", ".", cwd=repo)
    assert r.returncode == 0 and reported(r) == [], r.stdout + r.stderr  # nothing since HEAD
    # f moves below g and into another file's top; g is edited; h is new
    (repo / "a.py").write_text(HEAD + "\n\n" + CALL.format(name="g", scale="s * 2") + "\n\n"
                               + CALL.format(name="h", scale="s"))
    (repo / "b.py").write_text(HEAD + "\n" + CALL.format(name="f", scale="s"))
    r = run_cli(*command, "--new-since", "HEAD", ".", cwd=repo)
    assert r.returncode == 1, r.stdout + r.stderr
    assert [p.split(":")[1] for p in reported(r)] == ["7"], r.stdout  # g edited; f moved; h is a copy of old g
    assert "1 site(s)" in r.stderr


def test_a_changed_verdict_is_new(repo):
    shutil.copy(EXAMPLE, repo / "backend.py")  # one fixable call
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "backend")
    r = run_cli("check", "--new-since", "HEAD", "backend.py", cwd=repo)
    assert r.returncode == 0 and reported(r) == [], r.stdout + r.stderr
    (repo / "requirements.txt").write_text("sglang-kernel==0.4.2\n")  # a kernel without the parameter
    r = run_cli("check", "--new-since", "HEAD", "backend.py", cwd=repo)
    assert r.returncode == 1 and reported(r) == ["backend.py:232:21"] and " manual " in r.stdout, r.stdout


def test_a_ref_that_is_no_commit_is_one_error_line(repo):
    r = run_cli("check", "--new-since", "no-such-ref", ".", cwd=repo)
    assert r.returncode == 2 and r.stderr.count("\n") <= 2 and "no-such-ref" in r.stderr, r.stderr
    r = run_cli("audit", "--new-since", "HEAD", "--rev", "HEAD", ".", cwd=repo)
    assert r.returncode == 2 and "does not go with --rev" in r.stderr


def test_identical_sites_count_as_many_as_there_are():
    s = Site("x.py", 3, 5, "k", Status.MANUAL, "why", rule="r")
    k = key(s, "return flash_mla_sparse_fwd(q, kv, i, s)")
    assert len(new_sites([s, s, s], [k, k, k], [s], [k])) == 2 and new_sites([s], [k], [s, s], [k, k]) == []
    copy = Site("y.py", 3, 5, "k", Status.MANUAL, "why", rule="r")  # the same call in a new file beside x.py's
    assert new_sites([s, copy], [k, k], [s], [k]) == [copy] and new_sites([copy, s], [k, k], [s], [k]) == [copy]
    other = key(s, "return  flash_mla_sparse_fwd(q, kv, i, s)")  # blanks inside do not count
    assert other == k and key(s, "return flash_mla_sparse_fwd(q, kv, j, s)") != k
    assert line_of(b"a\n    b = 1\n", 2) == "b = 1" and line_of(b"a\n", 9) == ""
