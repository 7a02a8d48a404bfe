"""check, apply, audit and bump read the same files (config.project_files): each file once however
it is named, a bad path once, and a project's include/exclude for all of them; and they share
model.exit_code."""
import os
from pathlib import Path

from topk_migrate import api
from topk_migrate.audit import audit
from topk_migrate.bump import engine, sources
from topk_migrate.model import Site, Status, exit_code

DATA = Path(__file__).parent / "data" / "bump"
CALL = ("from sgl_kernel.flash_mla import flash_mla_sparse_fwd\n\n"
        "def f(q, kv, i, m):\n    return flash_mla_sparse_fwd(q, kv, i, 1.0)\n")


def _all_three(paths):
    old, new = (sources.load(str(DATA / f"sglang-kernel-{v}.json")) for v in ("0.4.2.post2", "0.4.6"))
    checked = api.run(paths)
    audited = audit(paths, jobs=2)
    bumped = engine.run(paths, old, new, jobs=2)
    return ([(os.path.basename(s.path), s.line) for s in checked.sites], [e.path for e in checked.errors],
            [(os.path.basename(s.path), s.line) for s in audited.sites], [p for p, _ in audited.errors],
            [(os.path.basename(s.path), s.line) for s in bumped.sites], [p for p, _ in bumped.errors])


def test_a_file_named_three_ways_and_a_bad_path_named_twice_are_each_read_once(tmp_path):
    (tmp_path / "pkg").mkdir()
    f = tmp_path / "pkg" / "fork.py"
    f.write_text(CALL)
    (tmp_path / "link.py").symlink_to(f)
    missing = str(tmp_path / "gone.py")
    paths = [str(tmp_path / "pkg"), str(f), str(tmp_path / "link.py"), missing, missing]
    c_sites, c_err, a_sites, a_err, b_sites, b_err = _all_three(paths)
    assert c_sites == a_sites == b_sites == [("fork.py", 4)]
    assert len(c_err) == len(a_err) == len(b_err) == 1


def test_a_projects_exclude_holds_for_every_command(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.topk-migrate]\nexclude = ["vendored/"]\n')
    for d in ("vendored", "own"):
        (tmp_path / d).mkdir()
        (tmp_path / d / "fork.py").write_text(CALL)
    c_sites, _, a_sites, _, b_sites, _ = _all_three([str(tmp_path)])
    assert c_sites == a_sites == b_sites == [("fork.py", 4)]
    assert {Path(s.path).parent.name for s in api.run([str(tmp_path)]).sites} == {"own"}


def test_one_exit_code_rule():
    site = Site("m.py", 1, 1, "k", Status.MANUAL, "why")
    assert exit_code([site], True, (Status.MANUAL,)) == 2
    assert exit_code([site], False, (Status.MANUAL,)) == 1
    assert exit_code([site], False, (Status.BREAKS, Status.REBINDS)) == 0
    assert exit_code([], False, (), rewrote=True) == 1


def test_a_directory_whose_configuration_is_bad_is_named(tmp_path):
    good, bad = tmp_path / "good", tmp_path / "bad"
    for d in (good, bad):
        d.mkdir()
        (d / "m.py").write_text("x = 1\n")
    (bad / "pyproject.toml").write_text("[tool.topk-migrate]\ninclude = 5\n")
    (err,) = api.run([str(good), str(bad)]).errors
    assert err.path == str(bad) and "include" in err.error
