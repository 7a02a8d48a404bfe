"""`audit --rev` on an attacker's commit: tree entries named `..`, `.`, `.git` or with a
backslash never put a file outside (or inside the control files of) the temporary layout."""
import os
import subprocess
import sys

import pytest

from helpers import ROOT
from topk_migrate.audit import AuditError, audit, unsafe_path

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


# -- what a commit's objects, sizes and repository config may cost -------------------------

CALL = (b"from sgl_kernel.flash_mla import flash_mla_sparse_fwd\n\n\ndef f(q, kv, i, s):\n"
        b"    return flash_mla_sparse_fwd(q, kv, i, s)\n")  # one site, a few hundred bytes


def commit_entries(repo, ref, *entries):
    """A commit of a root tree made of (name, blob sha) entries, without the fixture's a.py."""
    root = tree(repo, *(("100644", "blob", s, n) for n, s in entries))
    git(repo, "update-ref", f"refs/heads/{ref}", git(repo, "commit-tree", root, "-m", ref))


@pytest.fixture
def small_cap(monkeypatch):
    """TOPK_MIGRATE_MAX_BYTES=4096: an "oversized" blob is a few KB and the test stays tiny."""
    monkeypatch.setenv("TOPK_MIGRATE_MAX_BYTES", "4096")
    return 4096


@pytest.fixture
def layouts(monkeypatch):
    """Every _lay_out call's (path, bytes written or linked)."""
    from topk_migrate import audit as audit_mod

    calls = []
    real = audit_mod.rev._lay_out

    def spy(inside, path, data, *rest):
        calls.append((path, len(data)))
        return real(inside, path, data, *rest)

    monkeypatch.setattr(audit_mod.rev, "_lay_out", spy)
    return calls


def test_partial_clone_missing_blob_runs_no_repository_command(tmp_path):
    """Finding 3: a partial clone's missing blob made `cat-file --batch` fetch it from the promisor remote,
    running the repository's own core.sshCommand. Now nothing is fetched: that file is one error line,
    the blobs the clone has are still audited, and the command line run has no traceback."""
    src = tmp_path / "src"
    src.mkdir()
    git(src, "init", "-q")
    (src / "a.py").write_bytes(CALL)
    (src / "b.py").write_bytes(CALL.replace(b"def f", b"def g"))
    git(src, "add", "a.py", "b.py")
    git(src, "-c", "user.name=x", "-c", "user.email=x@x", "commit", "-qm", "x")
    git(src, "config", "uploadpack.allowFilter", "true")
    subprocess.run(["git", "clone", "-q", "--no-checkout", "--filter=blob:none", f"file://{src}", str(tmp_path / "fork")],
                   check=True, capture_output=True)
    fork = tmp_path / "fork"
    git(fork, "cat-file", "blob", "HEAD:a.py")  # fetched now, from the real origin: a.py is there, b.py is not
    marker = tmp_path / "PWNED"
    git(fork, "config", "remote.origin.url", "ssh://attacker.invalid/x.git")
    git(fork, "config", "core.sshCommand", f"sh -c 'id > {marker}'; false")
    cli = subprocess.run([sys.executable, "-m", "topk_migrate", "audit", ".", "--rev", "HEAD"], cwd=fork,
                         capture_output=True, text=True, timeout=120)
    assert not marker.exists(), "the repository's core.sshCommand ran"
    assert cli.returncode == 2 and "Traceback" not in cli.stderr, cli.stderr
    assert cli.stdout.count("error:") == 1 and "b.py: error: not in the repository" in cli.stdout
    r = audit([str(fork)], rev="HEAD", jobs=1)
    assert not marker.exists()
    assert [e for _, e in r.errors] == [
        "not in the repository (a partial clone's blob, never fetched: --rev fetches nothing); skipped"]
    assert [p for p, _ in r.errors] == ["b.py"] and [s.path for s in r.sites] == ["a.py"]
    assert r.exit_code() == 2


def test_oversized_blob_under_many_paths_is_never_laid_out(repo, small_cap, layouts):
    """Finding 6: one blob over TOPK_MIGRATE_MAX_BYTES holding a kernel name, listed under many paths, was
    read whole and written once per path before the worker refused it. Now its size is known first: it
    is scanned a window at a time, never written, and each path is the usual one error line. An
    oversized blob with no kernel name is no error (as on disk: it cannot hold a call)."""
    big = blob(repo, b"from sgl_kernel.flash_mla import flash_mla_sparse_fwd\n" + b"#" * 3 * small_cap + b"\n")
    plain = blob(repo, b"x = 1\n" * small_cap)
    ok = blob(repo, CALL)
    n = 40
    size = int(git(repo, "cat-file", "-s", big))
    commit_entries(repo, "bomb", ("ok.py", ok), ("plain.py", plain), *((f"f{i:02}.py", big) for i in range(n)))
    r = audit([str(repo)], rev="bomb", jobs=1)
    assert all(length <= small_cap for _, length in layouts), layouts
    assert [p for p, _ in layouts] == ["ok.py"]
    want = f"file too large ({size} bytes > {small_cap}); skipped (raise TOPK_MIGRATE_MAX_BYTES to process it)"
    assert r.errors == [(f"f{i:02}.py", want) for i in range(n)]
    assert [s.path for s in r.sites] == ["ok.py"] and r.summary["files"] == n + 2


def test_oversized_blob_scan_sees_a_name_across_windows(repo, small_cap, layouts, monkeypatch):
    """The over-cap scan reads windows: a kernel name cut by a window boundary is still seen."""
    from topk_migrate import audit as audit_mod

    monkeypatch.setattr(audit_mod.rev, "SCAN_WINDOW", 64)
    name = b"flash_mla_sparse_fwd"
    data = b"#" * (64 * 100 - 7) + name + b"\n" + b"#" * small_cap
    commit_entries(repo, "cut", ("cut.py", blob(repo, data)), ("none.py", blob(repo, data.replace(name, b"x" * len(name)))))
    r = audit([str(repo)], rev="cut", jobs=1)
    assert [(p, e.split(" (")[0]) for p, e in r.errors] == [("cut.py", "file too large")] and not layouts


def test_one_blob_under_many_paths_is_written_once(repo, tmp_path, monkeypatch):
    """Each path is analysed, but the blob's bytes are on disk once: the other paths are hard links."""

    from topk_migrate import audit as audit_mod

    inodes = []
    real = audit_mod.rev._lay_out

    def spy(*args):
        dest = real(*args)
        inodes.append(os.stat(dest).st_ino)
        return dest

    monkeypatch.setattr(audit_mod.rev, "_lay_out", spy)
    ok = blob(repo, CALL)
    commit_entries(repo, "many", *((f"p{i:02}.py", ok) for i in range(30)))
    r = audit([str(repo)], rev="many", jobs=1)
    assert len(r.sites) == 30 and not r.errors
    assert len(inodes) == 30 and len(set(inodes)) == 1


def test_bytes_read_and_laid_out_per_run_are_bounded(repo, monkeypatch):
    """Past the run's bounds a file is one error line, neither read nor written."""
    from topk_migrate import audit as audit_mod

    size = len(CALL)
    ok = blob(repo, CALL)
    commit_entries(repo, "linked", *((f"p{i:02}.py", ok) for i in range(10)))
    monkeypatch.setattr(audit_mod.rev, "_rev_limits", lambda: (10 ** 9, 3 * size), raising=False)
    r = audit([str(repo)], rev="linked", jobs=1)
    assert len(r.sites) == 3 and len(r.errors) == 7
    assert all(e.startswith("not laid out: this run has laid out") and "bound of" in e for _, e in r.errors)
    distinct = [blob(repo, CALL + f"# {i}\n".encode()) for i in range(5)]
    commit_entries(repo, "distinct", *((f"d{i}.py", s) for i, s in enumerate(distinct)))
    monkeypatch.setattr(audit_mod.rev, "_rev_limits", lambda: (2 * size + 20, 10 ** 9), raising=False)
    r = audit([str(repo)], rev="distinct", jobs=1)
    assert len(r.sites) == 2 and [p for p, _ in r.errors] == ["d2.py", "d3.py", "d4.py"]
    assert all(e.startswith("not read: this run has read") for _, e in r.errors)


def test_project_file_over_its_cap_is_not_read(repo, monkeypatch, layouts):
    """Finding 6: project files (requirements*.txt anywhere, pyproject.toml, dist-info METADATA/RECORD)
    were read whole and laid out with no size check. One over its cap (project.PROJECT_FILE_LIMIT; a
    RECORD, project.RECORD_LIMIT) is now one error line, and its bytes are neither read nor written;
    the others and the candidates are still laid out."""
    from topk_migrate import audit as audit_mod
    from topk_migrate import project

    monkeypatch.setattr(project, "PROJECT_FILE_LIMIT", 4096)
    monkeypatch.setattr(project, "RECORD_LIMIT", 8192, raising=False)
    read = []
    real = getattr(audit_mod.rev, "_read_exactly", None)
    monkeypatch.setattr(audit_mod.rev, "_read_exactly", lambda out, size, sha: read.append(size) or real(out, size, sha),
                        raising=False)
    huge = b"sglang-kernel==0.4.2\n" + b"# pad\n" * 2000
    req, small = blob(repo, huge), blob(repo, b"sglang-kernel==0.4.2\n")
    meta = blob(repo, b"Name: x\n" * 1000)
    record, big_record = blob(repo, b"x/a.py,,\n" * 600), blob(repo, b"x/a.py,,\n" * 1200)
    info = tree(repo, ("100644", "blob", meta, "METADATA"), ("100644", "blob", record, "RECORD"))
    info2 = tree(repo, ("100644", "blob", big_record, "RECORD"))
    root = tree(repo, ("100644", "blob", req, "requirements.txt"), ("100644", "blob", small, "requirements-dev.txt"),
                ("040000", "tree", info, "x.dist-info"), ("040000", "tree", info2, "y.dist-info"),
                ("100644", "blob", blob(repo, CALL), "a.py"))
    git(repo, "update-ref", "refs/heads/big-req", git(repo, "commit-tree", root, "-m", "x"))
    r = audit([str(repo)], rev="big-req", jobs=1)
    assert all(size <= 8192 for size in read) and all(length <= 8192 for _, length in layouts), (read, layouts)
    assert sorted(p for p, _ in layouts) == ["a.py", "requirements-dev.txt", "x.dist-info/RECORD"]
    why = "bytes > {}); skipped (a project file is read up to that size)"
    assert r.errors == [("requirements.txt", f"file too large ({len(huge)} {why.format(4096)}"),
                        ("x.dist-info/METADATA", f"file too large (8000 {why.format(4096)}"),
                        ("y.dist-info/RECORD", f"file too large (10800 {why.format(8192)}")]
    assert [s.path for s in r.sites] == ["a.py"]


def test_deep_tree_is_one_error_line_not_a_recursion(repo):
    """Git sets no depth limit on a tree: a candidate 1,200 directories down made os.makedirs (and the
    layout's removal) recurse past Python's limit, a traceback. Now it is one error line, and one at a
    depth a project may have is laid out and audited."""
    mark = b"blob\nmark :1\ndata %d\n%s\n" % (len(CALL), CALL)
    head = b"commit refs/heads/deep\ncommitter x <x@x> 0 +0000\ndata 1\nx\n"
    files = [("/".join(["a"] * k) + "/f.py").encode() for k in (1200, 40)]
    subprocess.run(["git", "fast-import", "--quiet"], cwd=repo, check=True,
                   input=mark + head + b"".join(b"M 100644 :1 " + f + b"\n" for f in files) + b"\n")
    r = audit([str(repo)], rev="deep", jobs=1)
    assert [s.path for s in r.sites] == [files[1].decode()]
    assert r.errors == [(files[0].decode(), "cannot lay out from the revision: 1200 directories deep (at most 256)")]


# -- git itself: bounded in time and output (security4 #7) ---------------------------------


def _fifo_included_by_config(repo):
    os.mkfifo(repo / ".git" / "stall")
    git(repo, "config", "include.path", "stall")


def _fifo_head(repo):
    (repo / ".git" / "HEAD").unlink()
    os.mkfifo(repo / ".git" / "HEAD")


def _fifo_loose_blob(repo):
    loose = repo / ".git" / "objects" / (lambda s: f"{s[:2]}/{s[2:]}")(git(repo, "rev-parse", "HEAD:a.py"))
    loose.unlink()
    os.mkfifo(loose)


@pytest.mark.parametrize("plant", [_fifo_included_by_config, _fifo_head, _fifo_loose_blob],
                         ids=["config-include", "HEAD", "loose-object"])
def test_a_repository_that_blocks_git_is_one_error_not_a_hang(repo, monkeypatch, plant):
    """A `.git` handed over with a FIFO that git opens (what its config includes, HEAD, an object) blocked
    `git rev-parse` (or cat-file) in open() forever, and `audit --rev` with it. Now git may go
    git_timeout() seconds without answering (1 here), then the run is one error."""
    import time

    from topk_migrate import subprocesses

    plant(repo)
    monkeypatch.setattr(subprocesses, "GIT_TIMEOUT", 1)
    t0 = time.monotonic()
    with pytest.raises(AuditError, match=r"git [a-z-]+: no answer for 1 s .*TOPK_MIGRATE_GIT_TIMEOUT"):
        audit([str(repo)], rev="HEAD", jobs=1)
    assert time.monotonic() - t0 < 30


def test_a_blocked_git_is_one_error_line_and_exit_2_on_the_command_line(repo):
    _fifo_included_by_config(repo)
    r = subprocess.run([sys.executable, "-m", "topk_migrate", "audit", "--rev", "HEAD", str(repo)], capture_output=True,
                       text=True, env={**os.environ, "TOPK_MIGRATE_GIT_TIMEOUT": "1"}, timeout=60)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.splitlines() == [f"error: {repo}: git rev-parse: no answer for 1 s (a FIFO or device the repository "
                                     "or its configuration names?); stopped (raise TOPK_MIGRATE_GIT_TIMEOUT, in "
                                     "seconds, to wait longer)"]


def test_a_stalled_cat_file_answer_is_one_error(repo, monkeypatch):
    """cat-file --batch lives for the whole layout: each read of its answers has the bound, not the command."""
    import time

    from topk_migrate import audit as audit_mod
    from topk_migrate import subprocesses

    sha = git(repo, "rev-parse", "HEAD:a.py")
    stall = f"import sys, time; sys.stdout.write('{sha} blob 5\\nab'); sys.stdout.flush(); time.sleep(60)"
    monkeypatch.setattr(subprocesses, "git_argv", lambda *args: [sys.executable, "-c", stall])
    monkeypatch.setattr(subprocesses, "GIT_TIMEOUT", 1)
    t0 = time.monotonic()
    with pytest.raises(AuditError, match="git cat-file: no answer for 1 s"):
        list(audit_mod.rev._cat_blobs(str(repo), [(sha, 5, None)]))
    assert time.monotonic() - t0 < 30


def test_git_output_is_bounded(repo, monkeypatch):
    from topk_migrate import subprocesses

    one = blob(repo, CALL)
    commit_entries(repo, "wide", *((f"f{i}.py", one) for i in range(100)))  # its listing: about 6 KB
    monkeypatch.setattr(subprocesses, "GIT_OUTPUT_LIMIT", 2000)
    with pytest.raises(AuditError, match="git ls-tree: more than 2000 bytes of output; stopped"):
        audit([str(repo)], rev="wide", jobs=1)


class _Counted(str):
    """A str that adds to `ops` the characters each string operation on it may touch (its methods,
    slicing, hashing, comparing, concatenating); the strings those return are counted too."""

    ops = [0]
    _METHODS = ("startswith", "endswith", "rsplit", "split", "rfind", "find", "partition", "rpartition",
                "count", "index", "rindex", "join", "replace", "strip", "lower")

    @staticmethod
    def _add(*strings):
        _Counted.ops[0] += sum(len(x) for x in strings if isinstance(x, str)) + 1

    @staticmethod
    def _wrap(v):
        if isinstance(v, str):
            return _Counted(v)
        if isinstance(v, (list, tuple)):
            return type(v)(_Counted(x) if isinstance(x, str) else x for x in v)
        return v

    def __getattribute__(self, name):
        attr = str.__getattribute__(self, name)
        if name not in _Counted._METHODS:
            return attr

        def counted(*a, **k):
            _Counted._add(self, *a)
            return _Counted._wrap(attr(*a, **k))
        return counted

    def __getitem__(self, key):
        v = str.__getitem__(self, key)
        _Counted._add(v)
        return _Counted(v)

    def __add__(self, other):
        _Counted._add(self, other)
        return _Counted(str.__add__(self, other))

    def __hash__(self):
        _Counted._add(self)
        return str.__hash__(self)

    def __eq__(self, other):
        _Counted._add(self)
        return str.__eq__(self, other)

    def __contains__(self, other):
        _Counted._add(self, other)
        return str.__contains__(self, other)


def _ops(function, rels, listing):
    _Counted.ops[0] = 0
    function([_Counted(r) for r in rels], [_Counted(p) for p in listing])
    return _Counted.ops[0]


def _cubic_directories(rels, paths):
    """The construction finding 9 measured (kept here to show the count sees it)."""
    dirs = {""} | {p.rsplit("/", 1)[0] for p in paths if "/" in p}
    dirs |= {d.rsplit("/", i)[0] for d in list(dirs) for i in range(1, d.count("/") + 1)}
    return {r for r in rels if r in dirs}


def _directories_among(rels, paths):
    """Which of rels are directories of the commit whose files are `paths`, as --rev decides it: the commit's
    tree the walker reads (discover.ListedTree), built from the listing, asked of each rel."""
    from topk_migrate.discover import ListedTree

    tree = ListedTree("/top", paths)
    return {r for r in rels if tree.isdir("/top/" + r if r else "/top")}


def test_directory_test_is_linear_in_the_listing():
    """Finding 9: the commit's tree (what the walk reads, and which command-line paths are directories of it)
    is built in string work linear in the listing's characters, whatever its depth: counted, at two sizes,
    for a chain of one file per depth (the reproducer's shape) and for one deep file."""
    def chain(n):
        return ["/".join(["a"] * k) + "/f.py" for k in range(1, n + 1)]

    def single(n):
        return ["/".join(["d"] * n) + "/f.py", "top.py"]

    for shape, rels in ((chain, ["", "a/a/a", "zz", "a/b"]), (single, ["d/d", "d/e", "top.py"])):
        for small, large in ((60, 120), (120, 240)):
            sizes = [sum(map(len, shape(n))) for n in (small, large)]
            per_char = [_ops(_directories_among, rels, shape(n)) / s for n, s in zip((small, large), sizes)]
            assert per_char[1] <= 1.25 * per_char[0], (shape.__name__, small, per_char)
    assert _directories_among(["", "a/a/a", "zz", "a/b", "a/a/f.py"], chain(5)) == {"", "a/a/a"}
    assert _directories_among(["d/d", "d/e", "top.py"], single(4)) == {"d/d"}
    # the same count, on the construction it replaced, grows with the listing's size to the 1.5th power
    cubic = [_ops(_cubic_directories, ["", "a/a/a"], chain(n)) / sum(map(len, chain(n))) for n in (60, 120)]
    assert cubic[1] >= 1.8 * cubic[0], cubic


# -- heavy tier: properties over path names ------------------------------------------------

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st

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
