"""Walking a tree someone else wrote: stay inside the paths given, each file once, and no
input (links, depth, .gitignore patterns, FIFOs, devices) may crash, hang or exhaust the run.

Issue 13.1 and the walk/config parts of issue 14.3. Every run of the CLI here has a
timeout: a hang fails the test instead of stalling the suite.
"""
import os
import random
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import KERNEL, ROOT
from topk_migrate.audit import audit
from topk_migrate.discover import (
    PROJECT_FILE_LIMIT,
    WILD_PATTERNS,
    compile_patterns,
    ignore,
    iter_python_files,
    read_regular,
    walk,
)
from topk_migrate.discover.ignore import _Glob, _parse_line

BACKEND = ROOT / "fixtures" / "examples" / "dsa_backend.py"
CALL = "from sgl_kernel import flash_mla_sparse_fwd\n\ndef f(q, kv, i, m):\n    return flash_mla_sparse_fwd(q, kv, i, 1.0, topk_length=m.lens)\n"


def _limit_memory():
    limit = 4 << 30  # a run that reads /dev/zero dies here, not by the machine's OOM killer
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def cli(*args, cwd=None, timeout=120):
    return subprocess.run([sys.executable, "-m", "topk_migrate", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, timeout=timeout, preexec_fn=_limit_memory)


def found(*paths, **kw):
    return [(p, e) for p, e in iter_python_files([str(p) for p in paths], **kw)]


@pytest.fixture
def escape_tree(tmp_path):
    """Issue 13's reproducer: a tree with a file link and a directory link that lead outside it."""
    (tmp_path / "tree").mkdir()
    (tmp_path / "outside").mkdir()
    shutil.copy(BACKEND, tmp_path / "outside" / "victim.py")
    os.symlink("../outside/victim.py", tmp_path / "tree" / "link.py")
    os.symlink("../outside", tmp_path / "tree" / "linkdir")
    return tmp_path


def test_apply_on_a_directory_never_rewrites_files_outside_it(escape_tree):
    victim = escape_tree / "outside" / "victim.py"
    before = victim.read_bytes()
    r = cli("apply", "-v", "--kernel", KERNEL, escape_tree / "tree")
    assert r.returncode == 0, r.stderr
    assert victim.read_bytes() == before
    assert "rewrote 0 file(s)" in r.stderr
    skipped = [ln for ln in r.stderr.splitlines() if ": skipped: " in ln]
    assert len(skipped) == 2 and all("outside" in ln for ln in skipped), r.stderr
    assert "skipped" not in cli("apply", "--kernel", KERNEL, escape_tree / "tree").stderr  # said only with -v


def test_audit_skips_links_that_leave_the_tree(escape_tree):
    r = audit([str(escape_tree / "tree")], kernel=KERNEL)
    assert r.sites == [] and r.errors == [] and r.summary["files"] == 0
    (escape_tree / "tree" / "in").mkdir()
    shutil.copy(BACKEND, escape_tree / "tree" / "in" / "b.py")
    os.symlink("in", escape_tree / "tree" / "alias")
    r = cli("audit", "-v", "--kernel", KERNEL, escape_tree / "tree")
    assert r.returncode == 1 and r.stdout.count(" fixable ") == 1 and "in/b.py" in r.stdout
    assert sorted(ln.split(": skipped: ")[1].split(",")[0] for ln in r.stderr.splitlines() if ": skipped: " in ln) == [
        "symlink to " + str(escape_tree / "outside"), "symlink to " + str(escape_tree / "outside" / "victim.py"),
        "symlinked directory"]
    r = cli("audit", "--follow-links", "--kernel", KERNEL, escape_tree / "tree")
    assert r.returncode == 1 and r.stdout.count(" fixable ") == 1 and "alias/b.py" in r.stdout, r.stdout


def test_follow_links_still_never_leaves_the_tree(escape_tree):
    r = cli("apply", "--follow-links", "--kernel", KERNEL, escape_tree / "tree")
    assert r.returncode == 0 and "rewrote 0 file(s)" in r.stderr
    assert found(escape_tree / "tree", follow_links=True) == []


def test_a_file_reached_by_two_paths_is_processed_once(tmp_path):
    shutil.copy(BACKEND, tmp_path / "real.py")
    os.symlink("real.py", tmp_path / "alias.py")  # sorts first, but the file's own name is used
    os.mkdir(tmp_path / "pkg")
    os.symlink("..", tmp_path / "pkg" / "up")
    assert found(tmp_path, follow_links=True) == [(str(tmp_path / "real.py"), None)]
    assert found(tmp_path, tmp_path / "alias.py", tmp_path / "real.py") == [(str(tmp_path / "real.py"), None)]
    r = cli("check", "--kernel", KERNEL, tmp_path, tmp_path / "alias.py")
    assert r.returncode == 1 and len(r.stdout.splitlines()) == 1, r.stdout
    assert "1 file(s)" in r.stderr
    a = audit([str(tmp_path)], kernel=KERNEL)
    assert [s.path for s in a.sites] == ["real.py"], a.sites
    before = (tmp_path / "real.py").read_bytes()
    r = cli("apply", "--kernel", KERNEL, tmp_path)
    assert r.returncode == 1 and "rewrote 1 file(s)" in r.stderr
    assert (tmp_path / "real.py").read_bytes() != before and os.path.islink(tmp_path / "alias.py")


def test_a_link_whose_target_is_not_walked_is_looked_at_under_its_own_name(tmp_path):
    (tmp_path / "gen").mkdir()
    (tmp_path / "gen" / "impl.txt").write_text(CALL)
    os.symlink("gen/impl.txt", tmp_path / "api.py")
    assert found(tmp_path) == [(str(tmp_path / "api.py"), None)]


def test_symlinked_directories_are_followed_only_on_request_and_never_into_a_loop(tmp_path):
    (tmp_path / "src" / "core").mkdir(parents=True)
    (tmp_path / "src" / "core" / "k.py").write_text(CALL)
    os.symlink("core", tmp_path / "src" / "alias")
    os.symlink("..", tmp_path / "src" / "core" / "loop")  # loop: core/loop -> src -> core ...
    notes = []
    assert found(tmp_path, note=lambda p, why: notes.append(why)) == [(str(tmp_path / "src" / "core" / "k.py"), None)]
    assert len(notes) == 2 and all("not followed" in n for n in notes)
    got = found(tmp_path, follow_links=True)
    assert got == [(str(tmp_path / "src" / "alias" / "k.py"), None)]
    r = cli("check", "--follow-links", tmp_path, timeout=60)
    assert r.returncode == 0 and "1 file(s)" in r.stderr


def test_a_symlink_named_on_the_command_line_is_followed_and_said(tmp_path):
    (tmp_path / "outside").mkdir()
    shutil.copy(BACKEND, tmp_path / "outside" / "victim.py")
    os.symlink(tmp_path / "outside" / "victim.py", tmp_path / "link.py")
    r = cli("apply", "--kernel", KERNEL, tmp_path / "link.py")
    assert r.returncode == 1 and "rewrote 1 file(s)" in r.stderr
    note = [ln for ln in r.stderr.splitlines() if ln.startswith("note:")]
    assert len(note) == 1 and "link.py is a symlink to" in note[0] and "victim.py" in note[0] and "rewrites" in note[0]
    assert os.path.islink(tmp_path / "link.py")  # the target was rewritten, the link kept
    assert "topk_length=topk_length" in (tmp_path / "outside" / "victim.py").read_text()


def _deep(root: Path, depth: int) -> Path:
    d = str(root)
    os.makedirs(d, exist_ok=True)
    for _ in range(depth):  # one by one: os.makedirs and Path.mkdir recurse
        d = os.path.join(d, "d")
        os.mkdir(d)
    with open(os.path.join(d, "k.py"), "w") as f:
        f.write(CALL)
    return Path(d, "k.py")


def remove_deep(top: Path) -> None:
    """rmtree without recursion: pytest's own cleanup (shutil.rmtree) overflows on a 1500-level tree."""
    d = str(top)
    while os.path.isdir(os.path.join(d, "d")):
        d = os.path.join(d, "d")
    while True:
        for name in os.listdir(d):
            p = os.path.join(d, name)
            os.rmdir(p) if os.path.isdir(p) and not os.path.islink(p) else os.unlink(p)
        if d == str(top):
            return
        d = os.path.dirname(d)


def test_a_1500_level_tree_is_walked_without_recursion(tmp_path):
    try:
        leaf = _deep(tmp_path / "t", 1500)
        assert found(tmp_path / "t") == [(str(leaf), None)]
        (tmp_path / "t" / ".gitignore").write_text("*.pyc\n/build/\n")
        r = cli("check", tmp_path / "t", timeout=120)
        assert r.returncode == 0 and "Traceback" not in r.stderr and "1 file(s)" in r.stderr, r.stderr[-500:]
        a = audit([str(tmp_path / "t")])
        assert len(a.sites) == 1 and a.errors == []
    finally:
        remove_deep(tmp_path / "t")


BACKTRACKING = "*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b"


def test_gitignore_patterns_cost_linear_time_whatever_they_hold(tmp_path):
    (tmp_path / ".gitignore").write_text(BACKTRACKING + "\n")
    (tmp_path / ("a" * 40 + ".py")).write_text(CALL)
    (tmp_path / ("a" * 40 + "b")).mkdir()
    (tmp_path / ("a" * 40 + "b") / "ignored.py").write_text(CALL)
    (tmp_path / "pyproject.toml").write_text(f'[tool.topk-migrate]\nexclude = ["{BACKTRACKING}"]\n')
    r = cli("audit", "--exclude", BACKTRACKING, tmp_path, timeout=60)  # a backtracking matcher takes minutes
    assert r.returncode == 0, r.stdout + r.stderr
    assert "a" * 40 + ".py" in r.stdout and "ignored.py" not in r.stdout
    r = cli("check", tmp_path, timeout=60)
    assert r.returncode == 0 and "1 file(s)" in r.stderr


@pytest.mark.heavy
def test_a_1500_level_tree_with_a_gitignore_at_every_level(tmp_path):
    """Each entry is checked against every .gitignore above it: quadratic in the depth, never cubic
    (`**` patterns advance one component per directory instead of rescanning the path)."""
    top = tmp_path / "t"
    try:
        leaf = _deep(top, 1500)
        d = top
        while d != leaf.parent:
            (d / ".gitignore").write_text("*.pyc\nx/**/y\n**/a/**/b/**/c\n!**/d/**/e/**\n/build\n")
            d = d / "d"
        r = cli("check", "-v", top, timeout=300)  # the cubic walk took 11 minutes here
        assert r.returncode == 0 and "1 file(s)" in r.stderr, r.stderr[-500:]
    finally:
        remove_deep(top)


def test_matching_is_linear_in_the_length_of_names_and_paths():
    spec = compile_patterns([BACKTRACKING, "**/" + BACKTRACKING + "/**/x", "/[a-z]*a*[!a]*a?/**"])
    for n in (40, 4000):
        assert spec.check("a" * n, False) is None
        assert spec.check("a" * n + "b", False) is True
        assert spec.match_file("/".join(["a" * 40] * 200) + "/x") is False
        assert spec.match_file("/".join(["a" * n + "b"] * 3) + "/x") is True


def _reference(lines):
    """Every line's pattern, last first, none indexed or dropped: what the index must agree with."""
    return [p for p in map(_parse_line, reversed(lines)) if p is not None]


def test_indexed_patterns_decide_as_a_scan_of_every_line():
    """The index (names, anchored paths, literal heads and tails) and the dropping of repeated lines
    pick the same deciding pattern as a scan of all the lines, last first."""
    names = ["a", "b", "ab", "ba", "aab", "a.py", "b.py", "ab.py", "x", "[", "*"]
    r = random.Random(7)
    for _ in range(400):
        lines = [r.choice([_pattern(r), r.choice(names), r.choice(names) + "/", "!" + r.choice(names),
                           "/" + "/".join(r.sample(names, r.randint(1, 2))), r.choice(names) + "*",
                           "*" + r.choice(names), "a\\b", "a*b*", "[ab]*.py"]) for _ in range(r.randint(1, 12))]
        lines += r.sample(lines, r.randint(0, len(lines)))  # repeated lines
        spec, ref = compile_patterns(lines), _reference(lines)
        for _ in range(20):
            parts = [r.choice(names) for _ in range(r.randint(1, 4))]
            is_dir = r.random() < 0.4
            want = next((not p.negate for p in ref if p.matches(parts, 0, is_dir)), None)
            assert spec.check("/".join(parts), is_dir) == want, (lines, parts, is_dir)
            assert spec.check_walk(parts, 0, is_dir, walk._after(spec, parts[:-1])) == want, (lines, parts)
            rel = "/".join(parts) + ("/" if is_dir else "")
            want = next((not p.negate for p in ref if p.matches_within(rel.strip("/"), is_dir)), False)
            assert spec.match_file(rel) == want, (lines, rel)


@pytest.mark.parametrize("n", [10_000, pytest.param(100_000, marks=pytest.mark.heavy)])  # 100,000 costs 9 CPU-s
def test_a_check_matches_only_what_the_path_points_to(monkeypatch, n):
    """n names, heads and tails each: a check matches a handful of globs, not n (a .gitignore of names
    used to cost minutes on a tree of a few thousand files). Any n above 2 tells a scan from a lookup."""
    spec = compile_patterns([f"name{i}" for i in range(n)] + [f"pre{i}_*" for i in range(n)] + [f"*.x{i}" for i in range(n)])
    assert spec.wild == 0
    calls = []
    real = _Glob.match
    monkeypatch.setattr(_Glob, "match", lambda self, name: calls.append(name) or real(self, name))
    for path, want in (("src/name77", True), ("pre5_a", True), ("d/f.x9", True), ("src/other.py", None),
                       ("pre5", None), ("f.x", None)):
        calls.clear()
        assert spec.check(path, False) is want
        assert len(calls) <= 2, (path, len(calls))


def test_a_gitignore_of_too_many_wildcards_is_not_applied_and_said(tmp_path):
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "x1.py").write_text(CALL)
    (sub / "kept.py").write_text(CALL)
    (tmp_path / ".gitignore").write_text("".join(f"*x{i}*\n" for i in range(WILD_PATTERNS - 1)))  # x1.py too
    (sub / ".gitignore").write_text("![x]1.py\n")  # with those above: the limit itself, applied
    assert [os.path.basename(p) for p, _ in found(tmp_path)] == ["kept.py", "x1.py"]
    (sub / ".gitignore").write_text("![x]1.py\n[z]\n")
    told = []
    got = [os.path.basename(p) for p, _ in found(tmp_path, note=lambda path, why: told.append((path, why)))]
    assert got == ["kept.py"]  # one more wildcard: not applied, so x1.py stays left out by the file above
    assert told == [(str(sub / ".gitignore"),
                     f"{WILD_PATTERNS + 1} wildcard patterns to match each path against, with the ignore files "
                     f"above it (at most {WILD_PATTERNS}; patterns with a literal name, start or end are not counted)")]


def test_ignore_files_past_the_bound_on_patterns_held_are_not_applied_and_said(tmp_path, monkeypatch):
    monkeypatch.setattr(ignore, "PATTERNS", 5)  # 100,000 in use: about 72 MB
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "a.py").write_text(CALL)
    (sub / "b.py").write_text(CALL)
    (tmp_path / ".gitignore").write_text("x\ny\nz\n")
    (sub / ".gitignore").write_text("a.py\nq\n")  # with those above: the bound itself, applied
    assert [os.path.basename(p) for p, _ in found(tmp_path)] == ["b.py"]
    (sub / ".gitignore").write_text("a.py\nq\nr\n")
    told = []
    assert [os.path.basename(p) for p, _ in found(tmp_path, note=lambda p, w: told.append((p, w)))] == ["a.py", "b.py"]
    assert told == [(str(sub / ".gitignore"), "6 patterns with the ignore files above it (at most 5)")]


def test_configuration_of_too_many_wildcards_is_one_error_line(tmp_path):
    (tmp_path / "b.py").write_text(CALL)
    excl = ", ".join(f'"*x{i}*"' for i in range(WILD_PATTERNS + 1))
    (tmp_path / "pyproject.toml").write_text(f"[tool.topk-migrate]\nexclude = [{excl}]\n")
    r = cli("audit", tmp_path, timeout=60)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert f"[tool.topk-migrate] exclude: {WILD_PATTERNS + 1} wildcard patterns" in r.stderr


def test_exclude_in_configuration_read_from_a_revision_is_matched_safely(tmp_path):
    git = lambda *a: subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *a], cwd=tmp_path,
                                    check=True, capture_output=True)
    git("init", "-q")
    (tmp_path / "pyproject.toml").write_text(f'[tool.topk-migrate]\nexclude = ["{BACKTRACKING}.py"]\n')
    (tmp_path / ("a" * 40 + ".py")).write_text(CALL)
    (tmp_path / ("a" * 40 + "b.py")).write_text(CALL)
    git("add", "-A")
    git("commit", "-qm", "x")
    r = cli("audit", "--rev", "HEAD", "--exclude", BACKTRACKING, tmp_path, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "a" * 40 + ".py" in r.stdout and "b.py" not in r.stdout


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_fifo_project_files_never_hang(tmp_path):
    shutil.copy(BACKEND, tmp_path / "backend.py")
    os.mkfifo(tmp_path / ".gitignore")
    os.mkfifo(tmp_path / "pyproject.toml")
    for cmd in (("check", "-v"), ("audit",)):
        r = cli(*cmd, "--kernel", KERNEL, tmp_path, timeout=60)
        assert "Traceback" not in r.stderr
        assert "backend.py" in r.stdout, (cmd, r.stdout, r.stderr)  # the other files' results
    r = cli("check", "-v", "--kernel", KERNEL, tmp_path, timeout=60)
    assert ".gitignore: skipped: not a regular file" in r.stderr


def test_device_links_and_huge_project_files_are_not_read(tmp_path):
    shutil.copy(BACKEND, tmp_path / "backend.py")
    os.symlink("/dev/zero", tmp_path / ".gitignore")
    sub = tmp_path / "sub"
    sub.mkdir()
    shutil.copy(BACKEND, sub / "b.py")
    (sub / ".gitignore").write_bytes(b"b.py\n" + b"#" * PROJECT_FILE_LIMIT)
    r = cli("check", "-v", "--kernel", KERNEL, tmp_path, timeout=60)
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    assert r.stdout.count(" fixable ") == 2  # both backends: the oversized .gitignore was not applied
    assert "symlinked ignore file" in r.stderr and "file too large" in r.stderr


def test_read_regular_refuses_what_is_over_its_limit(tmp_path):
    p = tmp_path / "f"
    p.write_bytes(b"x" * 100)
    assert read_regular(str(p), 100)[0] == b"x" * 100
    with pytest.raises(OSError, match="too large"):
        read_regular(str(p), 99)
    with pytest.raises(OSError):
        read_regular("/dev/zero", 10)


# -- gitignore semantics: checked against git itself ---------------------------------

ATOMS = ["a", "b", "*", "?", "[ab]", "[!a]", "ab", "\\*", "[a-b]", "[[:alpha:]]"]


def _pattern(r: random.Random) -> str:
    while True:
        parts = ["**" if r.random() < 0.15 else "".join(r.choice(ATOMS) for _ in range(r.randint(1, 3)))
                 for _ in range(r.randint(1, 3))]
        # git reads a run of stars inside a component ("a**") in a version-dependent way: not drawn
        if all(c == "**" or "**" not in c.replace("\\*", "") for c in parts):
            break
    p = ("/" if r.random() < 0.3 else "") + "/".join(parts) + ("/" if r.random() < 0.3 else "")
    return ("!" if r.random() < 0.2 else "") + p


def agree_with_git(tmp_path: Path, seeds: range) -> None:
    """Random trees and .gitignore files: the walk keeps exactly what `git ls-files -o --exclude-standard` lists."""
    for seed in seeds:
        r = random.Random(seed)
        d = tmp_path / str(seed)
        subprocess.run(["git", "init", "-q", str(d)], check=True)
        for _ in range(12):
            parts = ["".join(r.choice("ab*?[") for _ in range(r.randint(1, 3))) for _ in range(r.randint(0, 3))]
            p = d.joinpath(*parts, "".join(r.choice("ab*?[") for _ in range(r.randint(1, 3))) + ".py")
            try:
                p.parent.mkdir(parents=True, exist_ok=True)
                p.touch()
            except OSError:  # a file where a directory is wanted
                pass
        lines = [_pattern(r) for _ in range(r.randint(1, 4))]
        (d / ".gitignore").write_text("\n".join(lines) + "\n")
        subdirs = sorted(str(x) for x in d.rglob("*") if x.is_dir() and ".git" not in x.parts)
        for sub in r.sample(subdirs, min(len(subdirs), 3)):  # nested .gitignore files
            more = [_pattern(r) for _ in range(r.randint(1, 3))]
            lines.append((sub, more))
            Path(sub, ".gitignore").write_text("\n".join(more) + "\n")
        out = subprocess.run(["git", "ls-files", "-o", "--exclude-standard", "-z"], cwd=d, capture_output=True,
                             check=True).stdout.decode()
        git = sorted(x for x in out.split("\0") if x.endswith(".py"))
        ours = sorted(os.path.relpath(p, d) for p, e in iter_python_files([str(d)]) if e is None)
        assert ours == git, (seed, lines)


needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


@needs_git
def test_gitignore_semantics_agree_with_git(tmp_path):
    agree_with_git(tmp_path, range(25))


@needs_git
@pytest.mark.heavy
def test_gitignore_semantics_agree_with_git_heavy(tmp_path):
    agree_with_git(tmp_path, range(25, 1025))
