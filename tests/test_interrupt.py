"""Killing apply mid-run (SIGINT / SIGTERM) leaves every file either original or
fully rewritten, never truncated, and no temporary files behind."""
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from safety_samples import FIXABLE, KERNEL, cli, temp_files

N_FILES = 120  # ~50 ms each: the run lasts seconds, so the signal lands mid-run
WINDOW_FILES = 20  # the kill inside the 5th write needs no long run: it lands there by itself


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """(original, rewritten) text of file 0; file i differs only in its first line."""
    d = tmp_path_factory.mktemp("ref")
    text = "# file 0\n" + FIXABLE
    (d / "f0000.py").write_text(text)
    r = cli("apply", "--kernel", KERNEL, d)
    assert r.returncode == 1, r.stderr
    return text, (d / "f0000.py").read_text()


def make_tree(d: Path, n: int = N_FILES):
    for i in range(n):
        (d / f"f{i:04d}.py").write_text(f"# file {i}\n" + FIXABLE)


def classify(d: Path, reference, n: int = N_FILES):
    """Count the n files that are original / fully rewritten; fail on anything else."""
    original, rewritten = reference
    counts = {"original": 0, "rewritten": 0}
    for i in range(n):
        data = (d / f"f{i:04d}.py").read_text()
        if data == original.replace("# file 0", f"# file {i}", 1):
            counts["original"] += 1
        elif data == rewritten.replace("# file 0", f"# file {i}", 1):
            counts["rewritten"] += 1
        else:
            pytest.fail(f"f{i:04d}.py is neither original nor fully rewritten:\n{data[:400]!r}")
    return counts


def start_apply(d: Path, env=None):
    e = dict(os.environ, **(env or {}))
    # A shell without job control starts background jobs with SIGINT ignored, and
    # the child would inherit that: give it the default disposition back.
    return subprocess.Popen([sys.executable, "-m", "topk_migrate", "apply", "--kernel", KERNEL, str(d)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=e,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
@pytest.mark.parametrize("round_", [0, pytest.param(1, marks=pytest.mark.heavy)])  # a second moment: heavy tier
def test_kill_at_a_random_moment(tmp_path, reference, sig, round_):
    make_tree(tmp_path)
    original0 = reference[0]
    proc = start_apply(tmp_path)
    deadline = time.monotonic() + 120
    while (tmp_path / "f0000.py").read_text() == original0:  # wait for the first rewrite
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.005)
    time.sleep(random.Random(round_ * 31 + sig).uniform(0, 1.5))
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode != 0
    counts = classify(tmp_path, reference)
    assert counts["rewritten"] >= 1 and counts["original"] >= 1, counts  # the kill landed mid-run
    assert temp_files(tmp_path) == []


# The signal delivered exactly inside the write window (temp file written, not
# yet renamed) of the 5th file, through the real CLI: sitecustomize wraps
# os.fsync in the child so the kill lands there deterministically.
SITECUSTOMIZE = textwrap.dedent("""
    import os, signal, stat
    _n = [0]
    _real = os.fsync
    def fsync(fd):
        _n[0] += stat.S_ISREG(os.fstat(fd).st_mode)  # the temp file, not the directory
        if _n[0] == int(os.environ["KILL_AT_FSYNC"]) and stat.S_ISREG(os.fstat(fd).st_mode):
            os.kill(os.getpid(), int(os.environ["KILL_SIGNAL"]))
        return _real(fd)
    os.fsync = fsync
""")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_kill_inside_the_write_window(tmp_path, reference, sig):
    tree = tmp_path / "tree"
    tree.mkdir()
    make_tree(tree, WINDOW_FILES)
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(SITECUSTOMIZE)
    env = {"PYTHONPATH": os.pathsep.join([str(hook), os.environ.get("PYTHONPATH", "")]),
           "KILL_AT_FSYNC": "5", "KILL_SIGNAL": str(int(sig))}
    proc = start_apply(tree, env)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode != 0, err
    counts = classify(tree, reference, WINDOW_FILES)
    # the 5th write completes (the signal waits for the rename), then the run stops
    assert counts == {"rewritten": 5, "original": WINDOW_FILES - 5}, (counts, err[-2000:])
    assert temp_files(tree) == []


@pytest.mark.heavy  # applies a whole tree twice around a SIGKILL (about 15 s)
def test_sigkill_inside_the_write_window_leaves_the_original(tmp_path, reference):
    # SIGKILL cannot be deferred: the atomic rename alone must keep the file whole.
    tree = tmp_path / "tree"
    tree.mkdir()
    make_tree(tree)
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(SITECUSTOMIZE)
    env = {"PYTHONPATH": os.pathsep.join([str(hook), os.environ.get("PYTHONPATH", "")]),
           "KILL_AT_FSYNC": "5", "KILL_SIGNAL": str(int(signal.SIGKILL))}
    proc = start_apply(tree, env)
    proc.communicate(timeout=300)
    assert proc.returncode == -signal.SIGKILL
    assert classify(tree, reference) == {"rewritten": 4, "original": N_FILES - 4}
    assert len(temp_files(tree)) <= 1  # the unrenamed temp; never a .py, so never picked up
    cli("apply", "--kernel", KERNEL, tree)  # the next run on the same tree removes it (its writer is dead)
    assert temp_files(tree) == []


def test_interrupted_apply_says_so_and_exits_130(tmp_path, reference):
    make_tree(tmp_path)
    proc = start_apply(tmp_path)
    deadline = time.monotonic() + 120
    while (tmp_path / "f0000.py").read_text() == reference[0]:
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.005)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert "Traceback" not in err
    assert proc.returncode == 130 and "interrupted" in err.lower(), (proc.returncode, err[-500:])
