"""Which files a run looks at: walking, .gitignore, --exclude, odd entries, the byte prefilter."""
import os
import subprocess
import sys
import threading

import pytest

from topk_migrate.discover import (
    SCAN_WINDOW,
    Prefilter,
    file_may_hold_site,
    iter_python_files,
    may_hold_site,
    prefilter_for,
)
from topk_migrate.discover.bytescan import _cover
from topk_migrate.discover.reads import read_bytes


def walk(*paths, rel=None, **kw):
    return [(os.path.relpath(p, rel or os.getcwd()), e) for p, e in iter_python_files(paths, **kw)]


def files(root, **kw):
    return sorted(os.path.relpath(p, root).replace(os.sep, "/") for p, e in iter_python_files([str(root)], **kw) if e is None)


def make(root, *names):
    for n in names:
        p = root / n
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("x = 1\n")


def test_walk_sorted_skips_hidden_dirs_and_non_python(tmp_path):
    make(tmp_path, "b.py", "a.py", "pkg/z.py", "pkg/readme.txt", ".venv/lib/x.py", "pkg/.cache/y.py", ".hidden.py")
    assert files(tmp_path) == [".hidden.py", "a.py", "b.py", "pkg/z.py"]


def test_gitignore_nested_negation_and_directories(tmp_path):
    make(tmp_path, "keep.py", "gen_pb2.py", "build/out.py", "src/a.py", "src/b_pb2.py", "src/vendor/v.py", "src/vendor/keep_me.py")
    (tmp_path / ".gitignore").write_text("# generated\n*_pb2.py\nbuild/\n")
    (tmp_path / "src" / ".gitignore").write_text("!b_pb2.py\nvendor/*\n!vendor/keep_me.py\n")
    assert files(tmp_path) == ["keep.py", "src/a.py", "src/b_pb2.py", "src/vendor/keep_me.py"]
    assert len(files(tmp_path, gitignore=False)) == 7


def test_gitignore_above_the_walked_dir_counts_only_inside_a_git_work_tree(tmp_path):
    make(tmp_path, "proj/sub/a.py", "proj/sub/skip_me.py")
    (tmp_path / "proj" / ".gitignore").write_text("skip_me.py\n")
    assert files(tmp_path / "proj" / "sub") == ["a.py", "skip_me.py"]  # not a git repo: only its own
    (tmp_path / "proj" / ".git").mkdir()
    (tmp_path / "proj" / ".git" / "info").mkdir()
    (tmp_path / "proj" / ".git" / "info" / "exclude").write_text("a.py\n")
    assert files(tmp_path / "proj" / "sub") == []


def test_exclude_patterns_are_relative_to_the_path_and_beat_gitignore_negation(tmp_path):
    make(tmp_path, "a.py", "tests/t.py", "pkg/tests/u.py", "pkg/m.py", "pkg/m_pb2.py")
    (tmp_path / ".gitignore").write_text("!pkg/m.py\n")
    assert files(tmp_path, exclude=["/tests/", "*_pb2.py", "pkg/m.py"]) == ["a.py", "pkg/tests/u.py"]
    assert files(tmp_path, exclude=["tests/"]) == ["a.py", "pkg/m.py", "pkg/m_pb2.py"]


def test_named_files_are_always_looked_at(tmp_path):
    make(tmp_path, "gen_pb2.py", "notes.txt")
    (tmp_path / ".gitignore").write_text("*_pb2.py\n")
    got = list(iter_python_files([str(tmp_path / "gen_pb2.py"), str(tmp_path / "notes.txt")], exclude=["*"]))
    assert got == [(str(tmp_path / "gen_pb2.py"), None), (str(tmp_path / "notes.txt"), None)]


def test_missing_path_broken_symlink_and_symlink_loops_are_one_line_errors(tmp_path):
    make(tmp_path, "ok.py")
    os.symlink(tmp_path / "gone.py", tmp_path / "dangling.py")
    os.symlink(tmp_path / "self.py", tmp_path / "self.py")
    got = dict(walk(str(tmp_path), str(tmp_path / "nope.py"), rel=str(tmp_path)))
    assert got["ok.py"] is None
    assert got["dangling.py"].startswith("broken symlink")
    assert got["self.py"] == "symlink loop"
    assert got["nope.py"] == "no such file or directory"
    assert dict(walk(str(tmp_path / "dangling.py"), rel=str(tmp_path)))["dangling.py"].startswith("broken symlink")


def test_a_directory_link_back_to_an_ancestor_is_never_entered(tmp_path):
    make(tmp_path, "d/a.py")
    os.symlink(tmp_path, tmp_path / "d" / "up")
    for follow in (False, True):
        notes = []
        got = list(iter_python_files([str(tmp_path)], follow_links=follow, note=lambda p, why, notes=notes: notes.append((p, why))))
        assert got == [(str(tmp_path / "d" / "a.py"), None)]
        assert [p for p, _ in notes] == [str(tmp_path / "d" / "up")], notes
    assert "walked once" in notes[0][1]


def test_symlinked_directory_is_followed_only_on_request_and_walked_once(tmp_path):
    make(tmp_path, "real/a.py")
    os.symlink(tmp_path / "real", tmp_path / "alias")
    assert files(tmp_path) == ["real/a.py"]
    assert files(tmp_path, follow_links=True) == ["alias/a.py"]  # sorted: the link comes first, the target is not walked again


def test_directory_named_py_is_walked_not_read(tmp_path):
    make(tmp_path, "weird.py/inner.py")
    assert files(tmp_path) == ["weird.py/inner.py"]
    assert walk(str(tmp_path / "weird.py"), rel=str(tmp_path)) == [(os.path.join("weird.py", "inner.py"), None)]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_fifo_named_py_is_reported_and_never_blocks(tmp_path):
    os.mkfifo(tmp_path / "pipe.py")
    result = {}
    t = threading.Thread(target=lambda: result.update(got=walk(str(tmp_path), rel=str(tmp_path))), daemon=True)
    t.start()
    t.join(10)
    assert result.get("got") == [("pipe.py", "not a regular file")]
    with pytest.raises(OSError):
        read_bytes(str(tmp_path / "pipe.py"))
    with pytest.raises(OSError):
        file_may_hold_site(str(tmp_path / "pipe.py"))


def test_prefilter_knows_every_spelling_the_engine_resolves():
    from topk_migrate.codemods.pass_topk_length.quick import ENTRY_POINTS, OP_NAME

    for name in [*ENTRY_POINTS, OP_NAME]:
        assert name.encode() in prefilter_for().needles, name
        assert may_hold_site(b"x = torch.ops.sgl_kernel." + name.encode() + b"(q)\n")
    assert not may_hold_site(b"flash_mla_with_kvcache(q, k)\nsparse_attention(x)\n")  # that rule is off by default
    assert not may_hold_site(b"flash_mla_sparse")  # a prefix is not a name


def test_prefilter_follows_the_rules_a_project_enables(tmp_path):
    decode = b"flash_mla_with_kvcache(q, k, indices=i)\n"
    assert not prefilter_for(()).matches(decode)
    assert prefilter_for(("decode-topk-length",)).matches(decode)
    assert prefilter_for(everything=True).matches(decode)
    assert not may_hold_site(decode)  # check's default: the rules on by default
    # a scan hands its prefilter down, no module state decides it (audit: own_rules_hold, the project's rules)
    p = tmp_path / "m.py"
    p.write_bytes(decode)
    assert prefilter_for(("decode-topk-length",)).matches_file(str(p)) and not file_may_hold_site(str(p))


def test_needles_are_covered_by_shared_fragments():
    needles = (b"flash_mla_sparse_fwd", b"flash_mla_sparse_prefill", b"sparse_prefill_fwd")
    assert _cover(needles) == [(b"sparse_", needles)]
    groups = _cover(needles + (b"flash_mla_with_kvcache",))
    assert sorted(n for _, g in groups for n in g) == sorted(needles + (b"flash_mla_with_kvcache",))
    assert all(frag in n for frag, g in groups for n in g)
    pf = Prefilter(needles + (b"other_kernel",))
    assert pf.matches(b"x = other_kernel(q)") and not pf.matches(b"other_kerne")


def test_read_bytes_reads_whole_files(tmp_path):
    p = tmp_path / "big.py"
    data = os.urandom(3 << 20)
    p.write_bytes(data)
    assert read_bytes(str(p)) == data
    (tmp_path / "empty.py").write_bytes(b"")
    assert read_bytes(str(tmp_path / "empty.py")) == b""


def test_discover_imports_only_the_standard_library(tmp_path):
    """Nothing heavy, with or without patterns to match."""
    make(tmp_path, "a.py")
    (tmp_path / ".gitignore").write_text("b.py\n")
    code = ("import sys, topk_migrate.discover as d; list(d.iter_python_files([sys.argv[1]], exclude=['c/'])); "
            "print(sorted(m for m in ('pathspec', 'libcst', 'click', 'torch') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_windowed_scan_sees_a_name_wherever_the_window_cuts_it(tmp_path):
    """The scan reads a file a window at a time: a name across two windows must still be seen."""
    p = tmp_path / "m.py"
    buf = bytearray(64)  # a small window, so the names fall across its edges
    for name in prefilter_for().needles:
        for offset in range(0, 200, 7):
            data = b"#" * offset + name + b"(q)\n" + b"y = 2\n" * 20
            p.write_bytes(data)
            assert file_may_hold_site(str(p), buf) is may_hold_site(data) is True, (name, offset)
            p.write_bytes(data.replace(name, name[:-1] + b"X"))
            assert file_may_hold_site(str(p), buf) is False, (name, offset)
    p.write_bytes(b"")
    assert file_may_hold_site(str(p), buf) is False


def test_windowed_scan_of_a_big_file_agrees_with_the_whole_bytes(tmp_path):
    p = tmp_path / "big.py"
    filler = b"sparse_attention(x)  # sparse_ everywhere, no name\n" * (3 * SCAN_WINDOW // 50)
    p.write_bytes(filler)
    assert file_may_hold_site(str(p)) is may_hold_site(filler) is False
    p.write_bytes(filler + b"flash_mla_sparse_fwd(q)\n")
    assert file_may_hold_site(str(p)) is True
