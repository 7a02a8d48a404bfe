"""A walk split across processes (discover.SplitWalk) against the walk done here whole.

Random trees hold what the walk's rules are about: hidden and ignored directories, .gitignore
negations, --exclude, symlinked files and directories inside and outside the tree, broken links,
a FIFO and a directory named *.py. The split walk must yield the same files (as a set, each once)
and tell the same notes in the same order, however its parts are cut and in whatever order they
come back.
"""
import os
import pickle
import random
from collections import Counter
from pathlib import Path

import pytest

from topk_migrate import audit as audit_mod
from topk_migrate.audit import audit
from topk_migrate.discover import SplitWalk, ignore, iter_python_files, walk

CALL = "from sgl_kernel import flash_mla_sparse_fwd\n\ndef f(q, kv, i):\n    return flash_mla_sparse_fwd(q, kv, i, 1.0)\n"
DONE = "from sgl_kernel import flash_mla_sparse_fwd\n\ndef f(q, kv, i, n):\n    return flash_mla_sparse_fwd(q, kv, i, 1.0, topk_length=n)\n"
NAMES = ["a", "b", "B", "-x", "z.py", "m", ".hid", "build", "keep"]


def _tree(root: Path, rng: random.Random) -> None:
    dirs = [root]
    for _ in range(rng.randint(3, 25)):
        parent = rng.choice(dirs)
        d = parent / rng.choice(NAMES)
        if not d.exists() and len(d.relative_to(root).parts) <= 5:
            d.mkdir()
            dirs.append(d)
    files = []
    for d in dirs:
        for _ in range(rng.randint(0, 4)):
            f = d / rng.choice(["m.py", "n.py", "-a.py", "b.txt", "zz.py", "x.py", "build.py"])
            if not f.exists():
                f.write_text(rng.choice([CALL, DONE, "x = 1\n"]))
                files.append(f)
        if rng.random() < 0.25:
            lines = rng.sample(["build/", "*.txt", "!keep", "m/", "/zz.py", "**/n.py", "!n.py", "a/**/x.py", "B"], 3)
            (d / ".gitignore").write_text("\n".join(lines) + "\n")
    for _ in range(rng.randint(0, 6)):
        d = rng.choice(dirs)
        name = d / rng.choice(["l.py", "-l.py", "ld", "zl.py", "lz"])
        if name.exists() or name.is_symlink():
            continue
        kind = rng.random()
        if kind < 0.4 and files:
            os.symlink(os.path.relpath(rng.choice(files), d), name)  # a file inside, maybe walked anyway
        elif kind < 0.6:
            os.symlink(os.path.relpath(rng.choice(dirs), d), name)  # a directory inside (not followed)
        elif kind < 0.75:
            os.symlink("/etc/hostname", name)  # outside
        elif kind < 0.85:
            os.symlink("missing.py", name)  # broken
        elif kind < 0.93:
            os.mkfifo(d / "fifo.py")
        else:
            (d / "dir.py").mkdir(exist_ok=True)


def _split(plan: SplitWalk, ways: int, share: int, rng: random.Random):
    """The split walk done here, with parts cut and taken back in a random order."""
    files = plan.start(ways)
    pending = list(plan.seeds)
    while pending:
        rng.shuffle(pending)
        k = rng.randint(1, 3)
        batch, pending = pending[:k], pending[k:]
        w = plan.part()
        files += list(plan.files(w, pickle.loads(pickle.dumps(batch)), share))  # as a message carries them
        pending += plan.absorb(pickle.loads(pickle.dumps(plan.result(w))))
    return files + list(plan.finish())


@pytest.mark.parametrize("seed", range(120))
def test_a_split_walk_yields_and_tells_what_the_whole_walk_does(tmp_path, seed, monkeypatch):
    rng = random.Random(seed)
    if seed % 2:  # no seed below an ignore file a part reads travels on (as below a big one)
        monkeypatch.setattr(ignore, "TRAVELLING_PATTERNS", 2)
    if seed % 3 == 0:  # ignore files past the bound on patterns held: not applied; the first levels stop early
        monkeypatch.setattr(ignore, "PATTERNS", rng.choice([2, 4, 7]))
    top = tmp_path / "t"
    top.mkdir()
    _tree(top, rng)
    exclude = rng.sample(["a/m", "*.txt", "build", "B/", "x.py"], rng.randint(0, 2))
    gitignore = rng.random() < 0.8
    whole, told = [], []
    whole = list(iter_python_files([str(top)], exclude, gitignore, note=lambda p, w: told.append((p, w))))
    plan_told = []
    plan = SplitWalk.plan([str(top)], exclude, gitignore, False, lambda p, w: plan_told.append((p, w)))
    assert plan is not None
    got = _split(plan, rng.choice([1, 2, 5]), rng.choice([1, 2, 4, 1000]), rng)
    assert Counter(got) == Counter(whole)
    assert len(set(p for p, _ in got)) == len(got)
    assert plan_told == told


def test_the_first_levels_stop_listing_at_the_bound_on_patterns_held(tmp_path, monkeypatch):
    """What this process lists before the fork, it holds the ignore files of: at most about PATTERNS
    patterns of them (a big .gitignore in each first-level directory would otherwise all be held here)."""
    for name in "abcd":
        (tmp_path / name / "sub").mkdir(parents=True)
        (tmp_path / name / ".gitignore").write_text("x1\nx2\nx3\n")
        (tmp_path / name / "sub" / "m.py").write_text(CALL)
        (tmp_path / name / "x1").mkdir()
        (tmp_path / name / "x1" / "n.py").write_text(CALL)
    monkeypatch.setattr(ignore, "PATTERNS", 4)
    whole = list(iter_python_files([str(tmp_path)]))
    plan = SplitWalk.plan([str(tmp_path)], (), True, False, None)
    got = _split(plan, 100, 1000, random.Random(0))
    # b's file took the patterns held past the bound: c and d were left unlisted, as seeds
    assert sorted(os.path.relpath(seed[0], tmp_path) for seed in plan.seeds) == ["a/sub", "b/sub", "c", "d"]
    assert Counter(got) == Counter(whole) and len(whole) == 4  # the x1/ directories stay ignored


def test_the_split_walk_is_planned_only_where_it_gives_the_same(tmp_path, monkeypatch):
    (tmp_path / "a").mkdir()
    (tmp_path / "f.py").write_text("x = 1\n")
    assert SplitWalk.plan([str(tmp_path)], (), True, False, None) is not None
    assert SplitWalk.plan([str(tmp_path)], (), True, True, None) is None  # --follow-links
    assert SplitWalk.plan([str(tmp_path), str(tmp_path / "a")], (), True, False, None) is None
    assert SplitWalk.plan([str(tmp_path / "f.py")], (), True, False, None) is None
    # a mount point inside (a bind mount could show a directory twice), or no mount table
    monkeypatch.setattr(walk, "_mount_points", lambda: ["/", str(tmp_path / "a")])
    assert SplitWalk.plan([str(tmp_path)], (), True, False, None) is None
    monkeypatch.setattr(walk, "_mount_points", lambda: [str(tmp_path), "/"])  # at the top: fine
    assert SplitWalk.plan([str(tmp_path)], (), True, False, None) is not None
    monkeypatch.setattr(walk, "_mount_points", lambda: None)
    assert SplitWalk.plan([str(tmp_path)], (), True, False, None) is None


def test_the_mount_table_is_read_with_its_escapes(tmp_path):
    table = tmp_path / "mountinfo"
    table.write_bytes(b"22 1 8:1 / / rw - ext4 /dev/sda1 rw\n"
                      b"40 22 0:5 / /srv/my\\040tree/caf\\303\\251 rw - tmpfs none rw\n")
    assert walk._mount_points(str(table)) == ["/", "/srv/my tree/caf\u00e9"]
    assert walk._mount_points(str(tmp_path / "none")) is None


def test_a_directory_that_comes_back_twice_is_walked_no_further(tmp_path):
    # Without a mount no directory can come back; one made during the walk must not loop it.
    (tmp_path / "a" / "b").mkdir(parents=True)
    told = []
    plan = SplitWalk.plan([str(tmp_path)], (), True, False, lambda p, w: told.append((p, w)))
    assert list(plan.start(1)) == [] and len(plan.seeds) == 1
    first = plan.part()
    list(plan.files(first, plan.seeds, 0))  # donates b at once
    again = plan.part()
    list(plan.files(again, plan.seeds, 0))  # the same directory, as a bind mount would show it
    assert len(plan.absorb(plan.result(first))) == 1
    assert plan.absorb(plan.result(again)) == []
    list(plan.finish())
    assert any("same directory as" in w for _, w in told)


def test_audit_with_scanners_walking_gives_what_one_process_gives(tmp_path, monkeypatch):
    monkeypatch.setattr(audit_mod.scan, "PART_SHARE", 2)  # the scanners, forked, donate after 2 files
    for seed in range(6):
        rng = random.Random(1000 + seed)
        top = tmp_path / str(seed)
        top.mkdir()
        _tree(top, rng)
        if seed % 2:  # the project's own include/exclude, which the scanners apply to what they walk
            (top / "pyproject.toml").write_text('[tool.topk-migrate]\nexclude = ["a/", "**/m.py"]\n')
        runs = []
        for jobs in (1, 3):
            told = []
            r = audit([str(top)], kernel="sglang-kernel==0.4.6", jobs=jobs, note=lambda p, w, told=told: told.append((p, w)))
            summary = dict(r.summary, seconds=None)
            runs.append((summary, [(s.path, s.line, s.status) for s in r.sites], r.errors, told))
        assert runs[0] == runs[1]


@pytest.mark.parametrize("dies_in", ["walking", "classifying"])
def test_a_scanner_that_dies_on_a_part_has_it_walked_here(tmp_path, monkeypatch, dies_in):
    """Its part is walked again here, without classify (which may be what killed it): the
    candidates go to the engine's workers, and every file and site is still found, once."""
    for d in range(8):
        (tmp_path / f"d{d}").mkdir()
        for i in range(6):
            (tmp_path / f"d{d}" / f"m{i}.py").write_text(DONE if i == 2 else "x = 1\n")
    main = os.getpid()
    walk_part, classify = audit_mod.scan._walk_part, audit_mod.scan.classify_without_engine

    def dying_walk(plan, seeds, buf, scan, share=float("inf")):
        if os.getpid() != main:
            os._exit(5)  # every scanner dies on its first part
        return walk_part(plan, seeds, buf, scan, share)

    def dying_classify(path, kernel, prefilter=None):
        if path.endswith(os.path.join("d5", "m2.py")):
            os._exit(6)  # in whichever process classifies it
        return classify(path, kernel, prefilter)

    if dies_in == "walking":
        monkeypatch.setattr(audit_mod.scan, "_walk_part", dying_walk)
    else:
        monkeypatch.setattr(audit_mod.scan, "classify_without_engine", dying_classify)
    r = audit([str(tmp_path)], jobs=2)
    assert [s.path for s in r.sites] == [f"d{d}/m2.py" for d in range(8)] and r.errors == []
    assert {s.status.value for s in r.sites} == {"compliant"}
    assert r.summary["files"] == 48 and r.summary["parsed"] == 8


def test_a_seed_travels_without_the_patterns_of_the_ignore_files_read_before_the_fork(tmp_path):
    # A 20,000-line .gitignore at the top was pickled with every seed: 2.6x the time and 3.4x the memory
    # of one process. Read before the scanners fork, it goes as its place in a table they all hold.
    (tmp_path / ".gitignore").write_text("".join(f"pat{i}_*/\n" for i in range(20000)))
    for d in range(6):
        (tmp_path / f"d{d}" / "e").mkdir(parents=True)
    plan = SplitWalk.plan([str(tmp_path)], (), True, False, None)
    plan.start(4)
    big = [spec for _, _, spec in plan.seeds[0][3].specs if len(spec.patterns) == 20000]
    assert big and big[0].shared is not None
    assert len(pickle.dumps(plan.seeds)) < 4000
    assert pickle.loads(pickle.dumps(plan.seeds[0]))[3].specs[-1][2] is big[0]


def test_no_seed_below_a_big_ignore_file_a_part_reads_is_donated(tmp_path):
    for name in ("big", "small"):
        (tmp_path / name / "a" / "b").mkdir(parents=True)
    (tmp_path / "big" / ".gitignore").write_text("".join(f"p{i}\n" for i in range(100)))
    (tmp_path / "small" / ".gitignore").write_text("p\n")
    plan = SplitWalk.plan([str(tmp_path)], (), True, False, None)
    plan.start(2)
    assert sorted(os.path.basename(s[0]) for s in plan.seeds) == ["big", "small"]

    def donated(seed):  # what a part of this one seed gives away, donating from its first file
        w = plan.part()
        list(plan.files(w, [seed], 0))
        return [os.path.relpath(s[0], tmp_path) for s in w.donated]

    big, small = sorted(plan.seeds, key=lambda s: s[0])
    assert donated(big) == []  # its own 100 patterns would go with every seed below it
    assert donated(small) == [os.path.join("small", "a")]
