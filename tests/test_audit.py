"""`topk-migrate audit`: the same verdicts as `check`, over whole trees, fast, and at git revisions."""
import functools
import json
import os
import shutil
import subprocess
import sys

import jsonschema
import pytest

from helpers import ROOT, run_cli
from topk_migrate import api
from topk_migrate import audit as audit_mod
from topk_migrate.audit import audit

PAIRS = ROOT / "fixtures" / "pairs"
SCHEMA = json.loads((ROOT / "topk_migrate" / "schemas" / "audit-v1.schema.json").read_text())
CALL = "from sgl_kernel import flash_mla_sparse_fwd\n\ndef f(q, kv, i, m):\n    return flash_mla_sparse_fwd(q, kv, i, 1.0{})\n"


cli = functools.partial(run_cli, timeout=None)


def key(s):
    return (s.path, s.line, s.column, s.callee, s.status, s.reason, s.metadata)


@pytest.fixture
def pairs(tmp_path):
    dest = tmp_path / "pairs"
    shutil.copytree(PAIRS, dest)
    return dest


def test_same_verdicts_as_check(pairs):
    got = audit([str(pairs)], jobs=2)
    expected = [(os.path.relpath(s.path, pairs), *key(s)[1:]) for s in api.run([str(pairs)]).sites]
    assert sorted(map(key, got.sites)) == sorted(expected)
    assert {s.status.value for s in got.sites} == {"compliant", "opt-out", "fixable", "manual"}
    assert got.summary["files"] == 6 and got.summary["parsed"] == 6 and got.errors == []
    assert got.exit_code() == 1


def test_one_worker_or_many_give_the_same_report(pairs):
    assert list(map(key, audit([str(pairs)], jobs=1).sites)) == list(map(key, audit([str(pairs)], jobs=2).sites))


def test_files_without_a_kernel_name_are_never_parsed(tmp_path):
    (tmp_path / "broken.py").write_text("def (:\n")  # would be a syntax error if parsed
    (tmp_path / "ok.py").write_text(CALL.format(", topk_length=m.lens"))
    r = audit([str(tmp_path)])
    assert r.errors == [] and r.summary["files"] == 2 and r.summary["parsed"] == 1
    assert [(s.path, s.status.value) for s in r.sites] == [("ok.py", "compliant")]
    (tmp_path / "broken.py").write_text("def (:\n    flash_mla_sparse_fwd(q)\n")
    r = audit([str(tmp_path)])
    assert [p for p, _ in r.errors] == ["broken.py"] and "syntax error" in r.errors[0][1] and r.exit_code() == 2


def test_main_process_never_imports_libcst(tmp_path):
    for i in range(3):
        (tmp_path / f"m{i}.py").write_text(CALL.format(""))
    code = ("import sys; from topk_migrate.audit import audit; r = audit([sys.argv[1]], jobs=2); "
            "print(len(r.sites), 'libcst' in sys.modules, 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["3", "False", "False"]


def test_a_tree_whose_calls_pass_topk_length_is_audited_without_libcst(tmp_path):
    """No process of the run imports LibCST when the rules' quick classifiers answer for every
    candidate; a `libcst` that leaves a mark when imported shows it (and shows it does, for a
    call the engine must read)."""
    fake = tmp_path / "fake"
    (fake / "libcst").mkdir(parents=True)
    (fake / "libcst" / "__init__.py").write_text(
        "import os\nopen(os.environ['LIBCST_MARK'], 'a').write('imported')\nraise ImportError('marked')\n")
    tree = tmp_path / "tree"
    tree.mkdir()
    for i in range(6):
        (tree / f"m{i}.py").write_text(CALL.format(", topk_length=m.lens") if i % 2 else "x = 1\n")
    mark = tmp_path / "mark"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(fake), os.environ.get("PYTHONPATH", "")]),
           "LIBCST_MARK": str(mark)}
    for jobs in ("1", "2", "4"):
        r = subprocess.run([sys.executable, "-m", "topk_migrate", "audit", "-j", jobs, str(tree)],
                           capture_output=True, text=True, env=env)
        assert r.returncode == 0 and "3 compliant" in r.stderr, r.stdout + r.stderr
        assert not mark.exists(), jobs
    (tree / "m0.py").write_text(CALL.format(""))  # no topk_length: only the engine can say what to do
    r = subprocess.run([sys.executable, "-m", "topk_migrate", "audit", "-j", "2", str(tree)],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 2 and mark.exists()


def test_a_worker_that_dies_costs_one_file_not_the_run(tmp_path, monkeypatch):
    for name in ("a.py", "crash.py", "z.py"):  # calls without topk_length: the engine's workers read them
        (tmp_path / name).write_text(CALL.format(""))
    real = audit_mod.analyse

    def dying(path, *a):
        if path.endswith("crash.py"):
            os._exit(3)
        return real(path, *a)

    monkeypatch.setattr(audit_mod.pool, "analyse", dying)  # the forked workers inherit it
    r = audit([str(tmp_path)], jobs=2)
    assert [s.path for s in r.sites] == ["a.py", "z.py"]
    assert r.errors == [("crash.py", "the worker process analysing it died (exit status 3); skipped")]


def test_paths_are_relative_to_the_given_root(pairs, tmp_path):
    r = audit([str(pairs / "mixed_sites")])
    assert {s.path for s in r.sites} == {"after.py", "before.py"}
    r = audit([str(pairs / "mixed_sites" / "before.py"), str(pairs / "nsa_backend")])
    assert {s.path for s in r.sites} == {"mixed_sites/before.py", "nsa_backend/after.py", "nsa_backend/before.py"}
    r = audit([str(pairs), str(tmp_path / "missing")])
    # named as given (issue 11): relative to a root it would name a path that was never given
    assert r.errors == [(str(tmp_path / "missing"), "no such file or directory")] and r.exit_code() == 2


def test_exclude_gitignore_and_project_config(pairs):
    assert {s.path.split("/")[0] for s in audit([str(pairs)], exclude=["mixed_sites/", "*/after.py"]).sites} == {"fork_inline", "nsa_backend"}
    (pairs / ".gitignore").write_text("nsa_backend/\n")
    assert {s.path.split("/")[0] for s in audit([str(pairs)]).sites} == {"fork_inline", "mixed_sites"}
    assert {s.path.split("/")[0] for s in audit([str(pairs)], gitignore=False).sites} == {"fork_inline", "mixed_sites", "nsa_backend"}
    (pairs / "pyproject.toml").write_text('[tool.topk-migrate]\ninclude = ["*/before.py"]\nexclude = ["fork_inline/"]\n')
    assert {s.path for s in audit([str(pairs)], gitignore=False).sites} == {"mixed_sites/before.py", "nsa_backend/before.py"}


def test_cli_json_validates_and_exit_codes(pairs, tmp_path):
    r = cli("audit", pairs, "--format", "json")
    assert r.returncode == 1, r.stderr
    doc = json.loads(r.stdout)
    jsonschema.Draft202012Validator(SCHEMA).validate(doc)
    assert doc["summary"]["by_status"] == {"compliant": 5, "opt-out": 4, "fixable": 3, "manual": 4}
    clean = tmp_path / "clean"
    clean.mkdir()
    (clean / "a.py").write_text(CALL.format(", topk_length=None"))
    assert cli("audit", clean).returncode == 0
    (clean / "b.py").write_bytes(b"flash_mla_sparse_fwd\0")
    r = cli("audit", clean, "--format", "json")
    assert r.returncode == 2 and json.loads(r.stdout)["errors"][0]["path"] == "b.py"
    assert "\x1b[" not in r.stderr  # piped: no progress line
    r = cli("audit", clean, "--rev", "HEAD")
    assert r.returncode == 2 and r.stderr.startswith("error: git rev-parse") and "not a git repository" in r.stderr


def test_progress_line_only_after_a_while_and_cleared(capsys):
    p = audit_mod.Progress(True)
    p.show("early")
    assert capsys.readouterr().err == ""
    p.start -= 1
    p.bar(5, 10, ", 1 to analyse")
    p.close()
    err = capsys.readouterr().err
    assert "[###############...............] 5/10 files, 1 to analyse" in err and err.endswith("\r\x1b[K")
    silent = audit_mod.Progress(False)
    silent.start -= 1
    silent.bar(1, 2, "")
    silent.close()
    assert capsys.readouterr().err == ""


# -- --rev ---------------------------------------------------------------------------


def git(repo, *args):
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_SYSTEM": os.devnull}
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def repo(tmp_path):
    """A fork with two commits: the kernel call before the fix, and after it."""
    r = tmp_path / "fork"
    (r / "fork" / "layers").mkdir(parents=True)
    git(r, "init", "-q", "-b", "main")
    shutil.copy(PAIRS / "requirements.txt", r / "requirements.txt")
    shutil.copy(PAIRS / "fork_inline" / "before.py", r / "fork" / "layers" / "attn.py")
    (r / "fork" / "other.py").write_text("x = 1\n")
    git(r, "add", "-A")
    git(r, "commit", "-qm", "before")
    git(r, "tag", "v0.5.16")
    shutil.copy(PAIRS / "fork_inline" / "after.py", r / "fork" / "layers" / "attn.py")
    git(r, "commit", "-qam", "pass topk_length")
    return r


def test_rev_reads_commits_without_checking_them_out(repo):
    before = audit([str(repo)], rev="v0.5.16")
    after = audit([str(repo)], rev="main")
    assert [(s.path, s.line, s.status.value) for s in before.sites] == [("fork/layers/attn.py", 13, "fixable")]
    assert [(s.path, s.line, s.status.value) for s in after.sites] == [("fork/layers/attn.py", 18, "compliant")]
    assert before.summary["commit"] == git(repo, "rev-parse", "v0.5.16") and before.summary["files"] == 2
    assert before.exit_code() == 1 and after.exit_code() == 0
    # the work tree is neither read nor touched
    (repo / "fork" / "layers" / "attn.py").write_text("garbage flash_mla_sparse_fwd(\n")
    assert [s.status.value for s in audit([str(repo)], rev="v0.5.16").sites] == ["fixable"]
    assert git(repo, "status", "--porcelain") == "M fork/layers/attn.py"


def test_rev_uses_the_pins_of_that_commit(repo):
    (repo / "requirements.txt").write_text("sgl-kernel==0.3.0\n")  # uncommitted: a kernel without topk_length
    work = audit([str(repo / "fork")])
    assert [s.status.value for s in work.sites] == ["compliant"]  # the work tree has the fixed file
    at_tag = audit([str(repo / "fork")], rev="v0.5.16")
    assert [s.status.value for s in at_tag.sites] == ["fixable"], at_tag.sites
    git(repo, "commit", "-qam", "downgrade")
    git(repo, "checkout", "-q", "v0.5.16", "--", "fork/layers/attn.py")
    git(repo, "commit", "-qam", "revert the fix")
    now = audit([str(repo / "fork")], rev="HEAD")
    assert [s.status.value for s in now.sites] == ["manual"] and "too old" in now.sites[0].reason


def test_rev_paths_subdirs_and_errors(repo, monkeypatch):
    monkeypatch.chdir(repo / "fork")
    r = audit(["layers"], rev="v0.5.16")
    assert [s.path for s in r.sites] == ["attn.py"]
    r = audit(["layers/attn.py", "gone.py"], rev="v0.5.16")
    assert [s.path for s in r.sites] == ["layers/attn.py"] and r.errors == [("gone.py", "not in v0.5.16")]
    with pytest.raises(audit_mod.AuditError, match="no-such-ref"):
        audit(["."], rev="no-such-ref")


def test_cli_rev_side_by_side(repo):
    old = json.loads(cli("audit", ".", "--rev", "v0.5.16", "--format", "json", cwd=repo).stdout)
    new = json.loads(cli("audit", ".", "--rev", "main", "--format", "json", cwd=repo).stdout)
    for doc in (old, new):
        jsonschema.Draft202012Validator(SCHEMA).validate(doc)
    assert [s["status"] for s in old["sites"]] == ["fixable"] and [s["status"] for s in new["sites"]] == ["compliant"]
    assert old["summary"]["rev"] == "v0.5.16"


def test_broken_project_config_stops_the_run_with_one_line(tmp_path):
    (tmp_path / "a.py").write_text(CALL.format(""))
    (tmp_path / "pyproject.toml").write_text("[tool.topk-migrate]\nexclude = [\n")
    r = cli("audit", tmp_path)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.startswith("error: ") and "pyproject.toml" in r.stderr and len(r.stderr.splitlines()) == 1


def test_a_file_given_twice_is_audited_once(pairs):
    r = audit([str(pairs / "fork_inline"), str(pairs / "fork_inline" / "before.py")])
    assert [s.path for s in r.sites] == ["after.py", "before.py"] and r.summary["files"] == 2


def test_rev_gate_reads_a_vendored_interface_from_the_same_commit(tmp_path):
    """The kernel gate reads another candidate (the vendored kernel interface): it must be laid out first."""
    r = tmp_path / "vend"
    r.mkdir()
    git(r, "init", "-q")
    (r / "vendor_pkg.py").write_text(
        "import _ops\n\n\ndef flash_mla_sparse_fwd(q, kv, indices, sm_scale, d_v=512, attn_sink=None, topk_length=None):\n"
        "    return _ops.sparse_prefill_fwd(q, kv, indices, sm_scale, d_v, attn_sink, topk_length)\n")
    (r / "a_user.py").write_text("from vendor_pkg import flash_mla_sparse_fwd\n\n\ndef run(q, kv, idx, metadata):\n"
                                 "    return flash_mla_sparse_fwd(q, kv, idx, metadata.dsa_cache_seqlens_int32 and 1.0)\n")
    git(r, "add", "-A")
    git(r, "commit", "-qm", "x")
    disk = [(s.status.value, s.reason) for s in audit([str(r)]).sites]
    assert disk and disk[0][0] == "fixable", disk
    for _ in range(3):
        assert [(s.status.value, s.reason) for s in audit([str(r)], rev="HEAD", jobs=2).sites] == disk


def test_cli_sarif_and_github_formats(pairs):
    sarif_schema = json.loads((ROOT / "tests" / "data" / "sarif-schema-2.1.0.json").read_text())
    r = cli("audit", pairs, "--format", "sarif")
    doc = json.loads(r.stdout)
    jsonschema.Draft4Validator(sarif_schema).validate(doc)
    assert r.returncode == 1 and len(doc["runs"][0]["results"]) == 11  # 16 sites less 5 compliant
    r = cli("audit", pairs, "--format", "github")
    lines = r.stdout.splitlines()
    assert r.returncode == 1 and sum(ln.startswith("::warning file=") for ln in lines) == 3
    assert sum(ln.startswith("::error file=") for ln in lines) == 4 and all(ln.startswith("::") for ln in lines)
    assert r.stderr.startswith("6 file(s) scanned")  # the summary, on stderr in every format


def test_many_candidates_all_come_back(tmp_path):
    for i in range(400):
        (tmp_path / f"m{i:03}.py").write_text(CALL.format(", topk_length=m.lens" if i % 2 else ""))
    r = audit([str(tmp_path)], jobs=2)
    assert len(r.sites) == 400 and r.errors == [] and [s.path for s in r.sites] == sorted(s.path for s in r.sites)
    assert sum(s.status.value == "compliant" for s in r.sites) == 200


DRIVER = """
import os, sys, time
from topk_migrate import audit as A
main = os.getpid()
real = A.analyse
def slow(*a):
    if os.getpid() != main:
        time.sleep(60)
    return real(*a)
A.pool.analyse = slow
start = A.Runner._start
def started(self):
    start(self)
    print(self.pool[2].pid, flush=True)
A.Runner._start = started
A.audit([sys.argv[1]], jobs=2)
"""


def _group(pgid):
    members = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                stat = open(f"/proc/{d}/stat").read()
            except OSError:
                continue
            fields = stat.rsplit(")", 1)[1].split()
            if fields[0] != "Z" and int(fields[2]) == pgid:
                members.append(int(d))
    return members


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc")
def test_ctrl_c_ends_every_worker_and_does_not_hang(tmp_path):
    import signal
    import time

    for i in range(4):
        (tmp_path / f"m{i}.py").write_text(CALL.format(""))
    # SIGINT as a terminal delivers it, whatever this process inherited (a background job ignores it)
    p = subprocess.Popen([sys.executable, "-c", DRIVER, str(tmp_path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    zygote = int(p.stdout.readline())
    try:
        deadline = time.time() + 20
        while len(_group(zygote)) < 3 and time.time() < deadline:  # the zygote and 2 workers, busy
            time.sleep(0.1)
        assert len(_group(zygote)) == 3
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=15)  # reads as it waits: a full stderr pipe cannot stall the exit
        assert p.returncode != 0 and "KeyboardInterrupt" in err
        time.sleep(0.5)
        assert _group(zygote) == []
    finally:  # whatever happened, leave nothing running
        p.kill()
        for pid in _group(zygote):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc")
def test_workers_do_not_outlive_a_killed_main_process(tmp_path):
    import signal
    import time

    for i in range(4):
        (tmp_path / f"m{i}.py").write_text(CALL.format(""))
    p = subprocess.Popen([sys.executable, "-c", DRIVER.replace("time.sleep(60)", "time.sleep(1)"), str(tmp_path)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    zygote = int(p.stdout.readline())
    try:
        p.kill()  # SIGKILL: no finally, no cleanup in the main process
        p.wait(timeout=10)
        deadline = time.time() + 20
        while _group(zygote) and time.time() < deadline:
            time.sleep(0.2)
        assert _group(zygote) == []
    finally:
        for pid in _group(zygote):
            os.kill(pid, signal.SIGKILL)


def test_a_scanner_that_dies_has_its_files_scanned_by_the_main_process(tmp_path, monkeypatch):
    for i in range(100):
        (tmp_path / f"m{i:03}.py").write_text(CALL.format(", topk_length=m.lens") if i % 10 == 0 else "x = 1\n")
    main, real = os.getpid(), audit_mod.scan._scan_chunk

    def dying(paths, buf, scan, classify=None):
        if os.getpid() != main:
            os._exit(5)  # every scanner dies on its first chunk
        return real(paths, buf, scan, classify)

    monkeypatch.setattr(audit_mod.scan, "_scan_chunk", dying)  # the forked scanners inherit it
    monkeypatch.setattr(audit_mod.scan, "SCAN_CHUNK", 8)  # many chunks, both scanners die
    r = audit([str(tmp_path)], jobs=2)
    assert [s.path for s in r.sites] == [f"m{i:03}.py" for i in range(0, 100, 10)] and r.errors == []
    assert r.summary["files"] == 100 and r.summary["parsed"] == 10


def test_a_scanner_that_dies_classifying_leaves_its_chunk_to_the_engine(tmp_path, monkeypatch):
    """The main process never classifies a chunk a scanner died on (it may be what killed it): the
    candidates go to the engine's workers, and every site is still found."""
    for i in range(40):
        (tmp_path / f"m{i:03}.py").write_text(CALL.format(", topk_length=m.lens") if i % 4 == 0 else "x = 1\n")
    real = audit_mod.classify_without_engine

    def dying(path, kernel, prefilter=None):
        if path.endswith("m020.py"):
            os._exit(6)  # in whichever process classifies it
        return real(path, kernel, prefilter)

    monkeypatch.setattr(audit_mod.scan, "classify_without_engine", dying)
    monkeypatch.setattr(audit_mod.scan, "SCAN_CHUNK", 8)  # the other chunks are classified by the live scanner
    r = audit([str(tmp_path)], jobs=2)
    assert [s.path for s in r.sites] == [f"m{i:03}.py" for i in range(0, 40, 4)] and r.errors == []
    assert {s.status.value for s in r.sites} == {"compliant"}


def test_no_scanner_or_worker_outlives_the_run(tmp_path):
    import multiprocessing

    for i in range(80):
        (tmp_path / f"m{i:03}.py").write_text(CALL.format("") if i % 20 == 0 else "x = 1\n")
    r = audit([str(tmp_path)], jobs=3)
    assert len(r.sites) == 4
    assert multiprocessing.active_children() == []


def test_workers_started_with_the_run_serve_a_tree_with_or_without_candidates(tmp_path):
    """An eager runner (bump's, from EAGER_FROM jobs) starts the zygote before the scan: the same
    results, and no wait for its import when nothing was sent to it."""
    (tmp_path / "plain.py").write_text("x = 1\n")
    runner = audit_mod.Runner(audit_mod.EAGER_FROM, eager=True)
    assert runner.pool is not None and list(runner.results(audit_mod.Progress(False))) == []
    for i in range(3):
        (tmp_path / f"m{i}.py").write_text(CALL.format(""))
    runner = audit_mod.Runner(audit_mod.EAGER_FROM, eager=True)
    for i in range(3):
        runner.submit(str(tmp_path / f"m{i}.py"), None)
    eager = sorted(r for r in runner.results(audit_mod.Progress(False)))
    assert [(p, [key(s) for s in got], e) for p, got, e in eager] == \
        [(p, [key(s) for s in got], e) for p, got, e in sorted(audit_mod.analyse(str(tmp_path / f"m{i}.py"), None)
                                                                for i in range(3))]


def test_a_second_run_in_the_same_process_reads_the_configuration_afresh(tmp_path):
    """The scanners and workers are forked from this process: they must see the configuration as it
    is now, not as an earlier run cached it."""
    (tmp_path / "m.py").write_text(CALL.format(""))
    (tmp_path / "n.py").write_text(CALL.format(", topk_length=m.lens"))
    first = audit([str(tmp_path)], jobs=4)
    assert [s.rule for s in first.sites] == ["pass-topk-length"] * 2
    (tmp_path / "pyproject.toml").write_text('[tool.topk-migrate]\ndisable = ["pass-topk-length"]\n')
    second = audit([str(tmp_path)], jobs=4)
    assert second.sites == [] and second.errors == []


def test_paths_are_named_from_the_working_directory_where_the_audit_lies_under_it(tmp_path):
    """`audit python` from a repository's top lists python/..., as `check python` does (issue 37); from
    elsewhere, or with --relative-to, as before."""
    (tmp_path / ".git").mkdir()
    pkg = tmp_path / "python" / "pkg"
    pkg.mkdir(parents=True)
    shutil.copy(ROOT / "fixtures" / "examples" / "dsa_backend.py", pkg / "dsa_backend.py")
    (tmp_path / "python" / "requirements.txt").write_text("sglang-kernel==0.4.6\n")
    from_top = run_cli("audit", "python", cwd=tmp_path)
    checked = run_cli("check", "python", cwd=tmp_path)
    assert "python/pkg/dsa_backend.py:232:21" in from_top.stdout, from_top.stdout
    assert "python/pkg/dsa_backend.py:232:21" in checked.stdout, checked.stdout
    elsewhere = run_cli("audit", str(tmp_path / "python"), cwd=ROOT)
    assert "\npkg/dsa_backend.py:232:21" in elsewhere.stdout, elsewhere.stdout
    given = run_cli("audit", "--relative-to", "python", "python", cwd=tmp_path)
    assert "\npkg/dsa_backend.py:232:21" in given.stdout, given.stdout
