"""Signals and races: workers never outlive a killed audit (not even blocked on a full pipe),
an edit saved during apply's write window is never lost, and temp files a killed run left
behind are removed by the next run."""
import os
import signal
import subprocess
import sys
import time

import pytest

from safety_samples import FIXABLE, KERNEL, cli, temp_files
from topk_migrate import files


def _exchange_works(tmp_path):
    a, b = tmp_path / "xa", tmp_path / "xb"
    a.write_text("a")
    b.write_text("b")
    ok = files._exchange(str(a), str(b))
    a.unlink()
    b.unlink()
    return ok


def test_an_edit_saved_just_before_the_rename_is_kept_and_reported(tmp_path, monkeypatch):
    """The editor saves after every check and before the rename: the old code renamed over it."""
    if not _exchange_works(tmp_path):
        pytest.skip("no renameat2(RENAME_EXCHANGE) here: the documented remaining window")
    target = tmp_path / "a.py"
    target.write_text(FIXABLE)
    edited = FIXABLE + "# the user's edit\n"

    def editor_saves_first(real):
        def wrapped(a, b, *rest):
            if os.path.realpath(b) == str(target.resolve()):
                target.write_text(edited)  # in place, as many editors save
            return real(a, b, *rest)
        return wrapped

    monkeypatch.setattr(files, "_exchange", editor_saves_first(files._exchange))
    monkeypatch.setattr(os, "replace", editor_saves_first(os.replace))
    from topk_migrate import api

    report = api.run([str(target)], kernel=KERNEL, write=True)
    assert target.read_text() == edited
    (outcome,) = report.files
    assert not outcome.written and "changed on disk while being rewritten" in outcome.error
    assert temp_files(tmp_path) == []


def test_stale_temp_files_of_dead_runs_are_removed_others_kept(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f".topk-migrate-{dead.pid}-k2j3h4.tmp"
    live = tmp_path / f".topk-migrate-{os.getpid()}-abc123.tmp"  # a run still going: never touched
    other = tmp_path / ".topk-migrate-notes.tmp"  # not of our form
    # what a fork can commit: a dead pid in a checkout's mode, a pid of 20 digits (an OverflowError
    # in os.kill once made every apply in the directory an internal error)
    committed = tmp_path / f".topk-migrate-{dead.pid}-zz9.tmp"
    huge = tmp_path / ".topk-migrate-99999999999999999999-x.tmp"
    for p in (stale, live, other, committed, huge):
        p.write_text("half a file")
    os.chmod(stale, 0o600)  # mkstemp's mode: what a killed write leaves
    os.chmod(committed, 0o644)
    (tmp_path / "a.py").write_text(FIXABLE)
    r = cli("apply", "--kernel", KERNEL, tmp_path)
    assert r.returncode == 1 and "internal error" not in r.stderr, r.stderr
    assert "topk_length" in (tmp_path / "a.py").read_text()
    assert not stale.exists() and live.exists() and other.exists() and committed.exists() and huge.exists()


DRIVER = """
import os, sys, time
from topk_migrate import audit as A
def big(path, *a):
    return path, [], "x" * 1_000_000  # far more than a pipe holds: the writer blocks
A.analyse = big
A.Runner._put = lambda self, i, args: self.pool[0].put((i, args))  # never read back
def never_reads(self):
    print(self.pool[2].pid, flush=True)
    time.sleep(600)
    yield from ()
A.Runner._collect = never_reads
A.audit([sys.argv[1]], jobs=2)
"""


def _group(pgid):
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                fields = open(f"/proc/{d}/stat").read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[0] != "Z" and int(fields[2]) == pgid:
                out.append(int(d))
    return out


def _wchan(pid):
    try:
        return open(f"/proc/{pid}/wchan").read()
    except OSError:
        return ""


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc")
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_workers_blocked_on_a_full_pipe_exit_when_audit_is_killed(tmp_path, sig):
    for i in range(6):
        (tmp_path / f"m{i}.py").write_text(FIXABLE)
    p = subprocess.Popen([sys.executable, "-c", DRIVER, str(tmp_path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    zygote = int(p.stdout.readline())
    try:
        deadline = time.monotonic() + 60
        while not any("pipe_write" in _wchan(w) for w in _group(zygote)):  # a worker is stuck writing
            assert time.monotonic() < deadline and p.poll() is None, "no worker blocked on the pipe"
            time.sleep(0.1)
        p.send_signal(sig)
        p.wait(timeout=60)
        deadline = time.monotonic() + 60
        while _group(zygote):
            assert time.monotonic() < deadline, [(w, _wchan(w)) for w in _group(zygote)]
            time.sleep(0.1)
    finally:
        p.kill()
        for w in _group(zygote):
            os.kill(w, signal.SIGKILL)
