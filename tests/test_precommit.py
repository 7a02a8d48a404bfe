"""The two pre-commit hooks of .pre-commit-hooks.yaml, end to end with the real pre-commit tool.

A snapshot of this work tree becomes a throwaway hook repository; a throwaway
project uses it from the .pre-commit-config.yaml snippet that docs/ci.md tells
users to paste (the README's must be the same text), taken as written with only
`repo:` and `rev:` filled in: a paste that fails, fails here. pre-commit builds the hook
environment with pip (PyPI needed, about half a minute once).
"""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import ROOT

PAIRS = ROOT / "fixtures" / "pairs"
ENV = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
       "GIT_COMMITTER_EMAIL": "t@t", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_SYSTEM": os.devnull}


def run(*cmd, cwd, env=ENV, check=True):
    r = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    if check and r.returncode != 0:
        raise AssertionError(f"{cmd} exited {r.returncode}:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    return r


def documented_snippet(doc: Path) -> str:
    """The yaml block of the doc's pre-commit section (its `## pre-commit`, else from its first
    mention of pre-commit), as a user would copy it."""
    text = doc.read_text()
    section = text.split("## pre-commit\n", 1)[1] if "## pre-commit\n" in text else re.split(r"\bpre-commit\b", text, maxsplit=1)[1]
    return re.search(r"```yaml\n(.*?)```", section, re.S).group(1)


def filled_in(snippet: str, url: str, sha: str) -> str:
    """The two values the doc tells the user to set; nothing else changes."""
    snippet, n_repo = re.subn(r"^(\s*- repo: )\S+", lambda m: m.group(1) + url, snippet, flags=re.M)
    snippet, n_rev = re.subn(r"^(\s*rev: )\S+", lambda m: m.group(1) + sha, snippet, flags=re.M)
    assert n_repo == n_rev == 1, snippet
    return snippet


def test_documented_snippets_are_complete():
    """Each doc's snippet is a whole config (a `repos:` list) that says what to put in rev;
    the README's is docs/ci.md's, which the hooks fixture runs."""
    docs = [ROOT / "docs" / "ci.md"] + [d for d in [ROOT / "README.md"] if "topk-migrate-check" in d.read_text()]
    for doc in docs:
        snippet = documented_snippet(doc)
        assert snippet.startswith("repos:\n"), (doc, snippet)
        assert re.search(r"^\s*rev: [0-9a-f]{40}\b.*sha", snippet, re.M), (doc, snippet)
        assert re.search(r"^\s*- id: topk-migrate-check\b", snippet, re.M) and "topk-migrate-fix" in snippet
        assert snippet == documented_snippet(docs[0]), doc


def test_docs_name_the_dependencies_pyproject_installs():
    """What the docs say the hooks install is what pyproject.toml's dependencies are."""
    try:
        import tomllib
    except ImportError:
        import tomli as tomllib
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    names = {re.match(r"[A-Za-z0-9_.-]+", d).group(0).lower() for d in deps}
    texts = {"docs/ci.md": (ROOT / "docs" / "ci.md").read_text().split("## pre-commit", 1)[1].split("\n## ", 1)[0],
             ".pre-commit-hooks.yaml": (ROOT / ".pre-commit-hooks.yaml").read_text()}
    for where, text in texts.items():
        for name in names:
            assert name in text.lower(), (where, name)
        for gone in ("pathspec", "torch>", "only libcst and click", "libcst and click only"):
            assert gone not in text.lower(), (where, gone)


@pytest.fixture(scope="module")
def hooks(tmp_path_factory):
    """(project dir, pre-commit runner): the hook repo at a commit of this work tree's current files."""
    if subprocess.run([sys.executable, "-m", "pre_commit", "--version"], capture_output=True).returncode != 0:
        if os.environ.get("CI"):
            pytest.fail("pre-commit is not installed (it is in the `test` extra)")
        pytest.skip("pre-commit is not installed (pip install -e .[test])")
    base = tmp_path_factory.mktemp("precommit")
    src = base / "hook-repo"
    listed = run("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", cwd=ROOT).stdout.split("\0")
    for rel in filter(None, listed):
        if (ROOT / rel).is_file() and not rel.startswith(("shared/", ".carry/")):
            (src / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, src / rel)
    run("git", "init", "-q", cwd=src)
    run("git", "add", "-A", cwd=src)
    run("git", "commit", "-qm", "snapshot", cwd=src)
    sha = run("git", "rev-parse", "HEAD", cwd=src).stdout.strip()

    project = base / "project"
    (project / "pkg").mkdir(parents=True)
    run("git", "init", "-q", cwd=project)
    shutil.copy(PAIRS / "requirements.txt", project / "requirements.txt")
    shutil.copy(PAIRS / "fork_inline" / "before.py", project / "pkg" / "attn.py")
    (project / "pkg" / "plain.py").write_text("def f(x):\n    return x\n")
    snippet = filled_in(documented_snippet(ROOT / "docs" / "ci.md"), src.as_uri(), sha)
    # the fix hook, uncommented as the snippet invites, runs only when asked for by name
    snippet = re.sub(r"^(\s*)# (- id: topk-migrate-fix)[^\n]*$", r"\1\2\n\1  stages: [manual]", snippet, flags=re.M)
    assert "stages: [manual]" in snippet
    (project / ".pre-commit-config.yaml").write_text(snippet)
    run("git", "add", "-A", cwd=project)
    env = {**ENV, "PRE_COMMIT_HOME": str(base / "cache"), "PRE_COMMIT_COLOR": "never"}

    def pre_commit(*args):
        return run(sys.executable, "-m", "pre_commit", *args, cwd=project, env=env, check=False)

    return project, pre_commit, base / "cache"


def test_check_hook_fails_and_writes_nothing(hooks):
    project, pre_commit, cache = hooks
    before = (project / "pkg" / "attn.py").read_bytes()
    r = pre_commit("run", "topk-migrate-check", "--all-files")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "pkg/attn.py:13:32 fixable" in r.stdout
    assert (project / "pkg" / "attn.py").read_bytes() == before
    envs = list(cache.glob("repo*/py_env-*"))
    assert envs and not list(cache.glob("repo*/py_env-*/lib/python*/site-packages/torch"))  # light: no torch
    assert list(cache.glob("repo*/py_env-*/lib/python*/site-packages/libcst"))


def test_fix_hook_rewrites_then_check_passes(hooks):
    project, pre_commit, _ = hooks
    r = pre_commit("run", "topk-migrate-fix", "--hook-stage", "manual", "--all-files")
    assert r.returncode == 1, r.stdout + r.stderr  # it rewrote a file: pre-commit fails the commit attempt
    fixed = (project / "pkg" / "attn.py").read_text()
    assert "topk_length=topk_length" in fixed and fixed == (PAIRS / "fork_inline" / "after.py").read_text()
    r = pre_commit("run", "topk-migrate-check", "--all-files")
    assert r.returncode == 0, r.stdout + r.stderr
    r = pre_commit("run", "topk-migrate-fix", "--hook-stage", "manual", "--all-files")
    assert r.returncode == 0, r.stdout + r.stderr  # nothing left to do
