"""Signals and races: workers never outlive a killed audit (not even blocked on a full pipe),
an edit saved during apply's write window is never lost, and temp files a killed run left
behind are removed by the next run."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

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


def test_stale_temp_files_of_dead_runs_are_removed_others_kept(tmp_path, monkeypatch):
    """Only a temp file whose name carries the tag this user's key gives it and its inode is ours (a run
    killed in the write window leaves one). The mode proves nothing: under umask 077, or from a tar
    extracted as root, a checkout's files are 0600 as mkstemp's are (security4 #9: a committed
    `.topk-migrate-<dead pid>-x.tmp` of mode 0600 was deleted)."""
    cache = tmp_path / "cache"  # the key's home, outside the tree applied to
    monkeypatch.setenv("TOPK_MIGRATE_CACHE", str(cache))
    key = files.temp_key()
    assert key is not None and (cache / files.TEMP_KEY).stat().st_mode & 0o777 == 0o600
    work = tmp_path / "work"
    work.mkdir()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()

    def left_by(pid):  # what write_source's first steps leave, for a writer of that pid
        fd, tmp = files.tempfile.mkstemp(dir=work, prefix=f"{files.TEMP_PREFIX}{pid}-", suffix=files.TEMP_SUFFIX)
        tmp = files._claim(fd, tmp, key)
        os.write(fd, b"half a file")
        os.close(fd)
        return Path(tmp)

    stale = left_by(dead.pid)
    live = left_by(os.getpid())  # a run still going: never touched
    replaced = left_by(dead.pid)  # its name, another file (what write_source's swap puts there): not ours now
    original = work / "original"
    original.write_text("the original, swapped out")
    os.replace(original, replaced)
    other = work / ".topk-migrate-notes.tmp"  # not of our form
    # what a fork can commit: a dead pid, a tag of the right shape (it cannot know the key), or the old form
    # without one; a pid of 20 digits (an OverflowError in os.kill once made every apply here an internal error)
    forged = work / f".topk-migrate-{dead.pid}-zz9-{'0' * 32}.tmp"
    untagged = work / f".topk-migrate-{dead.pid}-k2j3h4.tmp"
    huge = work / ".topk-migrate-99999999999999999999-x.tmp"
    for p in (other, forged, untagged, huge):
        p.write_text("the fork's own tracked file")
    for p in (stale, live, replaced, other, forged, untagged, huge):
        os.chmod(p, 0o600)  # what a checkout under umask 077 has: mkstemp's mode
    (work / "a.py").write_text(FIXABLE)
    r = cli("apply", "--kernel", KERNEL, work, env={**os.environ, "TOPK_MIGRATE_CACHE": str(cache)})
    assert r.returncode == 1 and "internal error" not in r.stderr, r.stderr
    assert "topk_length" in (work / "a.py").read_text()
    kept = (live, replaced, other, forged, untagged, huge)
    assert not stale.exists() and all(p.exists() for p in kept), [p.name for p in kept if not p.exists()]
    assert temp_files(work) == sorted(map(str, kept))  # the run's own temp file is gone too


def test_without_a_key_no_temp_file_is_removed(tmp_path, monkeypatch):
    monkeypatch.setenv("TOPK_MIGRATE_CACHE", "relative/cache")  # refused: it would be the tree it runs in
    assert files.temp_key() is None
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    fd, tmp = files.tempfile.mkstemp(dir=tmp_path, prefix=f"{files.TEMP_PREFIX}{dead.pid}-", suffix=files.TEMP_SUFFIX)
    os.close(fd)
    assert files._claim(fd, tmp, None) == tmp and files.remove_stale_temps(str(tmp_path)) == []
    assert os.path.exists(tmp)


DRIVER = """
import os, sys, time
from topk_migrate import audit as A
def big(path, *a):
    return path, [], "x" * 1_000_000  # far more than a pipe holds: the writer blocks
A.pool.analyse = big
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
