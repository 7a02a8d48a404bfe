"""`audit --rev` on a real history: sglang 0.5.16 (before the topk_length fix) and 0.5.17 (after), as two commits.

The attention package and dist-info of each release come from the real wheels
(tests/sglang_wheels.py downloads and caches them; skips without PyPI).
"""
import os
import shutil
import subprocess

import pytest

from sglang_wheels import install_like_site_packages
from topk_migrate.audit import audit

pytestmark = pytest.mark.heavy  # two releases laid out as a git history, audited on disk and with --rev

ENV = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
       "GIT_COMMITTER_EMAIL": "t@t", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_SYSTEM": os.devnull}


def git(repo, *args):
    return subprocess.run(["git", *args], cwd=repo, env=ENV, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    base = tmp_path_factory.mktemp("release")
    repo = base / "fork"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    for version in ("0.5.16", "0.5.17"):
        staged = base / version
        install_like_site_packages(version, staged)
        for old in [p for p in repo.iterdir() if p.name != ".git"]:
            shutil.rmtree(old)
        shutil.copytree(staged, repo, dirs_exist_ok=True)
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", f"sglang {version}")
        git(repo, "tag", f"v{version}")
    return repo


def verdicts(result):
    return [(s.path.rsplit("/", 1)[-1], s.status.value) for s in result.sites]


def test_the_fix_shows_between_the_two_releases(history):
    before = audit([str(history)], rev="v0.5.16")
    after = audit([str(history)], rev="v0.5.17")
    assert verdicts(before) == [("deepseek_v4_backend.py", "compliant"), ("dsa_backend.py", "fixable")]
    assert verdicts(after) == [("deepseek_v4_backend.py", "compliant"), ("dsa_backend.py", "compliant")]
    assert "gains topk_length" in before.sites[1].reason and before.exit_code() == 1 and after.exit_code() == 0
    assert before.errors == after.errors == []


def test_rev_agrees_with_the_checked_out_tree(history):
    """What --rev reports for a commit is what a checkout of it gives."""
    git(history, "checkout", "-q", "v0.5.16")
    try:
        on_disk = audit([str(history)])
        at_rev = audit([str(history)], rev="v0.5.16")
    finally:
        git(history, "checkout", "-q", "main")
    assert [(s.path, s.line, s.column, s.status, s.reason, s.metadata) for s in at_rev.sites] == \
           [(s.path, s.line, s.column, s.status, s.reason, s.metadata) for s in on_disk.sites]
    assert at_rev.summary["files"] == on_disk.summary["files"]
