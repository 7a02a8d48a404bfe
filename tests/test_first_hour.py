"""The first hour of a new user (issue 11): diffs that `git apply` and `patch -p1` take
whatever form of path was given, summaries that count what the run did, one-line errors,
warnings for paths that hold nothing, paths named explicitly, standard input, and help
that names every command whole."""
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from helpers import ROOT
from topk_migrate.cli import main

EXAMPLE = ROOT / "fixtures" / "examples" / "dsa_backend.py"
KERNEL = ("--kernel", "sglang-kernel==0.4.6")
GIT_ENV = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_SYSTEM": os.devnull}


def cli(*args, input=None):
    """The command in this process (the engine is imported once): exit code, stdout, stderr."""
    return CliRunner().invoke(main, [str(a) for a in args], input=input, catch_exceptions=False)


def git(*args, cwd):
    return subprocess.run(["git", *args], cwd=cwd, env=GIT_ENV, capture_output=True, text=True, check=True)


@pytest.fixture
def repo(tmp_path):
    """A git repository holding pkg/x.py, the example backend (one fixable call with --kernel)."""
    top = tmp_path / "repo"
    (top / "pkg").mkdir(parents=True)
    shutil.copy(EXAMPLE, top / "pkg" / "x.py")
    git("init", "-q", cwd=top)
    git("add", "-A", cwd=top)
    git("commit", "-qm", "start", cwd=top)
    return top


def assert_applies(diff: str, where: Path, name: str):
    """The diff names `name` with a/ b/ and both git apply and patch -p1 take it from `where`."""
    assert diff.startswith(f"--- a/{name}\n+++ b/{name}\n"), diff[:200]
    r = subprocess.run(["git", "apply", "--check", "-"], input=diff, text=True, cwd=where, env=GIT_ENV,
                       capture_output=True)
    assert r.returncode == 0, r.stderr
    if shutil.which("patch"):
        r = subprocess.run(["patch", "-p1", "--dry-run", "-s"], input=diff, text=True, cwd=where, capture_output=True)
        assert r.returncode == 0, r.stdout + r.stderr


# -- 1. diffs apply, whatever the form of the path ------------------------------------------


@pytest.mark.parametrize("cwd, path", [
    (".", "./pkg/x.py"), (".", "pkg/../pkg/x.py"), (".", "{abs}/pkg/x.py"), ("pkg", "x.py"), ("pkg", "../pkg/x.py"),
    ("pkg", "./x.py"), ("pkg", "{abs}/pkg/x.py"),
])
def test_diff_applies_from_the_repository_root(repo, monkeypatch, cwd, path):
    monkeypatch.chdir(repo / cwd)
    r = cli("apply", "--diff", *KERNEL, path.format(abs=repo))
    assert r.exit_code == 1 and r.stdout
    assert_applies(r.stdout, repo, "pkg/x.py")


def test_diff_through_a_symlinked_directory(repo, tmp_path, monkeypatch):
    (tmp_path / "link").symlink_to(repo / "pkg", target_is_directory=True)
    monkeypatch.chdir(tmp_path)
    r = cli("apply", "--diff", *KERNEL, "link/x.py")
    assert_applies(r.stdout, repo, "pkg/x.py")
    r = cli("apply", "--diff", *KERNEL, "link")  # the directory walked
    assert_applies(r.stdout, repo, "pkg/x.py")


def test_diff_outside_a_repository_applies_from_the_current_directory(tmp_path, monkeypatch):
    work = tmp_path / "plain"
    (work / "sub").mkdir(parents=True)
    shutil.copy(EXAMPLE, work / "sub" / "x.py")
    monkeypatch.chdir(work)
    for given in ("./sub/x.py", str(work / "sub" / "x.py"), "sub"):
        assert_applies(cli("apply", "--diff", *KERNEL, given).stdout, work, "sub/x.py")


def test_applying_the_diff_gives_what_apply_writes(repo, tmp_path, monkeypatch):
    monkeypatch.chdir(repo / "pkg")
    diff = cli("apply", "--diff", *KERNEL, "./x.py").stdout
    subprocess.run(["git", "apply"], input=diff, text=True, cwd=repo, env=GIT_ENV, check=True)
    patched = (repo / "pkg" / "x.py").read_bytes()
    shutil.copy(EXAMPLE, tmp_path / "x.py")
    assert cli("apply", *KERNEL, tmp_path / "x.py").exit_code == 1
    assert (tmp_path / "x.py").read_bytes() == patched != EXAMPLE.read_bytes()


# -- 2. the summary counts what the run did ---------------------------------------------------


def test_apply_summary_counts_fixed_not_fixable(repo):
    r = cli("apply", "--diff", *KERNEL, repo)
    assert "1 fixable" in r.stderr and "fixed" not in r.stderr
    r = cli("apply", *KERNEL, repo)
    assert r.exit_code == 1 and "1 fixed, 0 fixable" in r.stderr and "rewrote 1 file(s)" in r.stderr
    r = cli("apply", *KERNEL, repo)
    assert r.exit_code == 0 and "0 fixable" in r.stderr and "fixed" not in r.stderr


# -- 3. smoke: check's one-line error, exit 2 ---------------------------------------------------


@pytest.mark.parametrize("content", [b"def f(:\n    flash_mla_sparse_fwd(q)\n", b"\x7fELF\x02\x01\x00\x00flash_mla_sparse_fwd"])
def test_smoke_on_bad_input_says_what_check_says(tmp_path, content):
    bad = tmp_path / "bad.py"
    bad.write_bytes(content)
    r = cli("smoke", "--device", "cpu", bad)
    assert r.exit_code == 2 and "Traceback" not in r.output
    line = f"{bad}: error: "
    assert r.stderr.startswith(line) and r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.splitlines()[0] in cli("check", bad).stderr.splitlines()


# -- 4. a directory that holds nothing is warned about ------------------------------------------


@pytest.mark.parametrize("command", [("check",), ("apply",), ("apply", "--diff"), ("audit",)])
def test_directory_without_python_files_is_warned_about(tmp_path, command):
    (tmp_path / "empty").mkdir()
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "notes.txt").write_text("flash_mla_sparse_fwd\n")
    (tmp_path / "code").mkdir()
    (tmp_path / "code" / "a.py").write_text("x = 1\n")
    for name in ("empty", "docs"):
        r = cli(*command, tmp_path / name)
        assert r.exit_code == 0
        assert f"warning: {tmp_path / name}: no Python files" in r.stderr, r.stderr
    assert "warning" not in cli(*command, tmp_path / "code").stderr
    assert "warning" not in cli(*command, tmp_path / "code", tmp_path / "code").stderr  # given twice: read once


# -- 5. paths named explicitly are processed, whatever a parent's .gitignore says ---------------


@pytest.mark.parametrize("command", [("check",), ("apply", "--diff"), ("audit",)])
def test_ignored_directory_named_explicitly_is_processed(repo, monkeypatch, command):
    (repo / ".gitignore").write_text("pkg/\n*_gen.py\n")
    shutil.copy(EXAMPLE, repo / "pkg" / "x_gen.py")
    shutil.copy(EXAMPLE, repo / "pkg" / "y.py")  # untracked, unlike x.py
    monkeypatch.chdir(repo)
    r = cli(*command, *KERNEL, "pkg")
    assert r.exit_code == 1, r.output
    assert "y.py" in r.stdout and "x_gen.py" not in r.stdout  # rules still apply to what the walk finds
    above = cli(*command, *KERNEL, ".").stdout
    assert "y.py" not in above  # walked from above, pkg/ stays ignored
    assert "x.py" in above  # but a file git tracks is in, as git has it (issue 34)


# -- 6. paths as given, suggestions for every command, whole help ------------------------------


def test_missing_path_is_named_as_given(tmp_path):
    missing = tmp_path / "nonexistent"
    for command in ("audit", "check"):
        r = cli(command, missing)
        assert r.exit_code == 2 and f"{missing}: error: no such file or directory" in r.output, r.output


@pytest.mark.parametrize("typo, meant", [("audti", "audit"), ("chek", "check"), ("smok", "smoke"),
                                         ("bmup", "bump"), ("aply", "apply")])
def test_every_command_gets_a_suggestion(typo, meant):
    r = cli(typo)
    assert r.exit_code == 2 and f"Did you mean '{meant}'?" in r.output, r.output


def test_help_names_every_command_whole():
    listing = " ".join(cli("--help").stdout.split("Commands:")[1].split())
    assert "..." not in listing
    for name in ("apply", "audit", "bump", "check", "smoke"):
        assert re.search(rf"\b{name} [A-Z]", listing), name
    assert "against the kernel." in listing and "to every call site." in listing


# -- 7. standard input --------------------------------------------------------------------------


@pytest.fixture
def project(tmp_path):
    """A project whose pyproject pins the kernel: only a --stdin-filename inside it finds the pin."""
    top = tmp_path / "proj"
    (top / "pkg").mkdir(parents=True)
    (top / "pyproject.toml").write_text('[tool.topk-migrate]\nkernel = "sglang-kernel==0.4.6"\n')
    git("init", "-q", cwd=top)
    return top


def test_check_stdin_uses_the_name_for_config_and_reporting(project, monkeypatch):
    monkeypatch.chdir(project)
    src = EXAMPLE.read_bytes()
    r = cli("check", "--stdin-filename", "pkg/x.py", "-", input=src)
    assert r.exit_code == 1 and re.match(r"pkg/x\.py:\d+:\d+ fixable ", r.stdout), r.output
    monkeypatch.chdir(project.parent)  # no pin reachable from here: the kernel is unknown
    r = cli("check", "-", input=src)
    assert r.exit_code == 1 and re.match(r"-:\d+:\d+ manual .*kernel capability unknown", r.stdout), r.output
    assert not (project / "pkg" / "x.py").exists()  # the name is only a name


def test_apply_diff_stdin_applies(project, monkeypatch):
    shutil.copy(EXAMPLE, project / "pkg" / "x.py")
    monkeypatch.chdir(project / "pkg")
    r = cli("apply", "--diff", "--stdin-filename", "x.py", "-", input=EXAMPLE.read_bytes())
    assert r.exit_code == 1
    assert_applies(r.stdout, project, "pkg/x.py")
    assert (project / "pkg" / "x.py").read_bytes() == EXAMPLE.read_bytes()


def test_apply_stdin_writes_the_rewrite_to_stdout(project, monkeypatch):
    target = project / "pkg" / "x.py"
    shutil.copy(EXAMPLE, target)
    monkeypatch.chdir(project)
    r = cli("apply", "--stdin-filename", "pkg/x.py", "-", input=EXAMPLE.read_bytes())
    assert r.exit_code == 1 and "1 fixed" in r.stderr and " fixed " in r.stderr
    assert target.read_bytes() == EXAMPLE.read_bytes()  # nothing written to disk
    assert cli("apply", "pkg/x.py").exit_code == 1
    assert r.stdout_bytes == target.read_bytes() != EXAMPLE.read_bytes()
    again = cli("apply", "--stdin-filename", "pkg/x.py", "-", input=r.stdout_bytes)
    assert again.exit_code == 0 and again.stdout_bytes == r.stdout_bytes


def test_apply_stdin_keeps_the_source_encoding(project, monkeypatch):
    text = "# -*- coding: latin-1 -*-\n# caf\u00e9\n" + EXAMPLE.read_text()
    monkeypatch.chdir(project)
    r = cli("apply", "--stdin-filename", "pkg/x.py", "-", input=text.encode("latin-1"))
    assert r.exit_code == 1
    out = r.stdout_bytes.decode("latin-1")
    assert out.startswith("# -*- coding: latin-1 -*-\n# caf\u00e9\n") and "topk_length=topk_length" in out


def test_apply_stdin_nothing_to_fix_gives_back_the_same_bytes(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    src = b"import torch\r\nx = 1  # no kernel here\r\n"
    r = cli("apply", "-", input=src)
    assert r.exit_code == 0 and r.stdout_bytes == src


def test_stdin_bad_input_is_one_line_and_exit_2(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for command in (("check",), ("apply",), ("apply", "--diff")):
        r = cli(*command, "--stdin-filename", "m.py", "-", input=b"def f(:\n    flash_mla_sparse_fwd(q)\n")
        assert r.exit_code == 2 and r.stdout_bytes == b""
        assert re.search(r"^m\.py: error: syntax error at line 1", r.stderr, re.M), r.stderr


def test_stdin_is_the_only_path(tmp_path):
    r = cli("check", "-", tmp_path, input=b"")
    assert r.exit_code == 2 and "only path" in r.output
    r = cli("check", "--stdin-filename", "x.py", tmp_path)
    assert r.exit_code == 2 and "--stdin-filename" in r.output


# -- installs: the gpu extra installs a kernel that takes topk_length, with its torch ----------


def test_gpu_extra_pins_a_kernel_with_topk_length_and_its_torch():
    try:
        import tomllib
    except ImportError:
        import tomli as tomllib
    from packaging.requirements import Requirement
    from packaging.version import Version

    from topk_migrate.codemods.pass_topk_length import MIN_KERNEL

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    pins = {r.name: r for r in map(Requirement, extras["gpu"])}
    kernel = next(iter(pins["sglang-kernel"].specifier))
    assert kernel.operator == "==" and Version(kernel.version) >= Version(MIN_KERNEL["sglang-kernel"])
    torch = next(iter(pins["torch"].specifier))
    assert torch.operator == "==", "the kernel is built against one torch: pin it"
