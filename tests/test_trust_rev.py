"""`audit --rev` on an attacker's commit: tree entries named `..`, `.`, `.git` or with a
backslash never put a file outside (or inside the control files of) the temporary layout."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from topk_migrate.audit import AuditError, audit, unsafe_path

ROOT = Path(__file__).resolve().parents[1]
BACKEND = (ROOT / "fixtures" / "examples" / "dsa_backend.py").read_bytes()
ATTACK = b"import os  # ATTACKER flash_mla_sparse_fwd\n"


def git(repo, *args, stdin=None):
    return subprocess.run(["git", *args], cwd=repo, input=stdin, capture_output=True, check=True).stdout.decode().strip()


def blob(repo, data):
    return git(repo, "hash-object", "-w", "--stdin", stdin=data)


def tree(repo, *entries):
    """A tree object from (mode, kind, sha, name) entries, names taken as given (git mktree does not check them)."""
    return git(repo, "mktree", stdin="".join(f"{m} {k} {s}\t{n}\n" for m, k, s, n in entries).encode())


def nest(repo, names, leaf_name, leaf_sha):
    """A chain of trees names[0]/names[1]/.../leaf_name."""
    sha = tree(repo, ("100644", "blob", leaf_sha, leaf_name))
    for name in reversed(names):
        sha = tree(repo, ("040000", "tree", sha, name))
    return sha


@pytest.fixture
def repo(tmp_path):
    r = tmp_path / "repo"
    r.mkdir()
    git(r, "init", "-q")
    (r / "a.py").write_bytes(BACKEND)
    git(r, "add", "a.py")
    git(r, "-c", "user.name=x", "-c", "user.email=x@x", "commit", "-qm", "init")
    return r


def commit_tree(repo, root_entries, ref):
    good = git(repo, "rev-parse", "HEAD:a.py")
    root = tree(repo, ("100644", "blob", good, "a.py"), *root_entries)
    git(repo, "update-ref", f"refs/heads/{ref}", git(repo, "commit-tree", root, "-m", ref))


@pytest.mark.parametrize("names", [
    ["..", "victim"],                 # the issue's reproducer
    ["sub", "..", "..", "victim"],    # nested: climbs from a subdirectory
    ["..", "..", "victim"],           # two levels up
])
def test_dot_dot_entries_write_nothing_outside(repo, tmp_path, monkeypatch, names):
    tmpdir = tmp_path / "tmpdir"
    base = tmpdir / "a" / "b"  # deep enough for `..`s to land inside tmp_path, where we look
    base.mkdir(parents=True)
    monkeypatch.setenv("TMPDIR", str(base))
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", None)
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file() and ".git" not in p.parts}
    for d in (base, base.parent, tmpdir):
        (d / "victim").mkdir(exist_ok=True)
        (d / "victim" / "setup.py").write_text("print(1)\n")
    victims = {p: p.read_bytes() for p in tmp_path.rglob("victim/setup.py")}
    evil = blob(repo, ATTACK)
    t = nest(repo, names[1:], "setup.py", evil)
    t2 = nest(repo, names[1:], "x.py", evil)
    commit_tree(repo, [("040000", "tree", git(repo, "mktree", stdin=(
        git(repo, "ls-tree", t).encode() + b"\n" + git(repo, "ls-tree", t2).encode() + b"\n")), names[0])], "evil")
    r = audit([str(repo)], rev="evil")
    for p, data in victims.items():
        assert p.read_bytes() == data, f"{p} was overwritten"
    after = {p for p in tmp_path.rglob("*") if p.is_file() and ".git" not in p.parts}
    assert after == set(before) | set(victims), sorted(map(str, after - set(before) - set(victims)))
    assert not list(base.iterdir()) or all(p.name == "victim" for p in base.iterdir())  # the layout is gone too
    # the good file is still audited, each unsafe path is one error line, and the run says so (exit 2)
    assert any(s.path == "a.py" for s in r.sites)
    assert r.errors and all("unsafe path" in e and "\n" not in e for _, e in r.errors)
    assert r.exit_code() == 2


@pytest.mark.parametrize("name", [".", ".git", ".GIT", "a\\..\\b", ""])
def test_other_unsafe_components_are_refused(repo, name):
    evil = blob(repo, ATTACK)
    commit_tree(repo, [("040000", "tree", nest(repo, [], "hooks.py", evil), name)], "evil")
    if name == "":  # git itself refuses to list such a tree: the run stops with one line, nothing laid out
        with pytest.raises(AuditError, match="empty filename"):
            audit([str(repo)], rev="evil")
        return
    r = audit([str(repo)], rev="evil")
    assert [e for _, e in r.errors if "unsafe path" in e], r.errors
    assert any(s.path == "a.py" for s in r.sites)


def test_unsafe_path_check_itself():
    from topk_migrate.audit import unsafe_path

    for bad in ("../x.py", "a/../x.py", "./x.py", "a//x.py", "/etc/x.py", "a\\x.py", ".git/x.py",
                "a/.Git/config", "x.py/", ""):
        assert unsafe_path(bad), bad
    for ok in ("x.py", "a/b/x.py", ".github/x.py", "..a/x.py", "a../x.py", "pkg/.gitignore"):
        assert unsafe_path(ok) is None, ok


def test_cli_reproducer_from_the_issue(repo, tmp_path):
    evil = blob(repo, b"import os  # ATTACKER\n")
    commit_tree(repo, [("040000", "tree", nest(repo, ["victim"], "setup.py", evil), "..")], "evil")
    td = tmp_path / "td"
    (td / "victim").mkdir(parents=True)
    (td / "victim" / "setup.py").write_text("print(1)\n")
    r = subprocess.run([sys.executable, "-m", "topk_migrate", "audit", ".", "--rev", "evil"], cwd=repo,
                       capture_output=True, text=True, env={**os.environ, "TMPDIR": str(td)}, timeout=120)
    assert (td / "victim" / "setup.py").read_text() == "print(1)\n"
    assert r.returncode == 2 and "unsafe path" in r.stdout + r.stderr


# -- heavy tier: properties over path names ------------------------------------------------

from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

_PART = st.one_of(st.sampled_from(["..", ".", "", ".git", ".GIT", ".Git", "a", "b.py", "..a", "a..", "a\\..", "\\", " ", "git"]),
                  st.text(alphabet="ab./\\_-~ ", min_size=1, max_size=4))


@pytest.mark.heavy
@settings(max_examples=3000, deadline=None)
@given(st.lists(_PART, min_size=1, max_size=6))
def test_any_path_accepted_stays_inside_and_outside_git(parts):
    path = "/".join(parts)
    if unsafe_path(path) is None:
        base = os.path.join(os.sep, "sandbox")
        full = os.path.normpath(os.path.join(base, *path.split("/")))
        assert full.startswith(base + os.sep) and full != base
        assert ".git" not in [c.lower() for c in full.split(os.sep)] and "\\" not in path


@pytest.mark.heavy
@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.lists(st.sampled_from(["..", ".", ".git", "a", "sub", "x\\y"]), min_size=1, max_size=4), min_size=1, max_size=3))
def test_random_attacker_trees_write_nothing_outside(tmp_path_factory, chains):
    base = tmp_path_factory.mktemp("prop")
    repo = base / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "a.py").write_bytes(BACKEND)
    git(repo, "add", "a.py")
    git(repo, "-c", "user.name=x", "-c", "user.email=x@x", "commit", "-qm", "init")
    deep = base / "t1" / "t2" / "t3" / "t4" / "t5"
    deep.mkdir(parents=True)
    evil = blob(repo, ATTACK)
    entries = []
    for k, chain in enumerate(chains):
        entries.append(("040000", "tree", nest(repo, chain[1:], f"p{k}.py", evil), chain[0] + ("" if chain[0] in ("..", ".", ".git") else str(k))))
    if len({e[3] for e in entries}) != len(entries):
        return  # git mktree would merge or reject duplicate names
    before = sorted(p for p in base.rglob("*") if ".git" not in p.parts)
    commit_tree(repo, entries, "evil")
    old = os.environ.get("TMPDIR")
    os.environ["TMPDIR"] = str(deep)
    import tempfile
    tempfile.tempdir = None
    try:
        audit([str(repo)], rev="evil")
    finally:
        if old is None:
            del os.environ["TMPDIR"]
        else:
            os.environ["TMPDIR"] = old
        tempfile.tempdir = None
    assert sorted(p for p in base.rglob("*") if ".git" not in p.parts) == before
