"""What a scan looks for is handed down (issue 38 item 4): no module state decides it, so a scanner, a worker and
a --rev layout read with the prefilter of the run that made them, forked or not."""
import os
import subprocess

import pytest

from topk_migrate import audit as audit_mod
from topk_migrate.audit import audit

DECODE = "from flash_mla import flash_mla_with_kvcache\n\n\ndef f(q, k, i):\n    return flash_mla_with_kvcache(q, k, indices=i)\n"
ENABLE = "[project]\nname = 'p'\n\n[tool.topk-migrate]\nenable = ['decode-topk-length']\n"


def _tree(root, enable: bool):
    root.mkdir()
    if enable:
        (root / "pyproject.toml").write_text(ENABLE)
    (root / "big.py").write_text(DECODE + "x = 1\n" * 400)  # over the bound below: scanned, never parsed
    (root / "plain.py").write_text("x = 1\n")


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_file_over_the_bound_is_scanned_for_the_runs_names_in_every_process(tmp_path, monkeypatch, jobs):
    """audit looks for every site rule's names, each file kept for its own project's rules: a file over
    TOPK_MIGRATE_MAX_BYTES that names only decode-topk-length's kernel is the error line where its project
    enables that rule (the scanner and the worker that read it scan it with audit's prefilter, not check's),
    and nothing where it does not."""
    monkeypatch.setenv("TOPK_MIGRATE_MAX_BYTES", "1000")
    _tree(tmp_path / "on", enable=True)
    _tree(tmp_path / "off", enable=False)
    on = audit([str(tmp_path / "on")], jobs=jobs)
    assert [(p, e.split(";")[0]) for p, e in on.errors] == [("big.py", f"file too large ({os.path.getsize(tmp_path / 'on' / 'big.py')} bytes > 1000)")]
    off = audit([str(tmp_path / "off")], jobs=jobs)
    assert off.errors == [] and off.sites == [] and off.summary["parsed"] == 0


def test_the_worker_reads_with_the_prefilter_it_is_handed(tmp_path, monkeypatch):
    """analyse() with a prefilter reads the file itself (files.read_candidate with that prefilter) and hands the
    engine its bytes; without one, the engine reads it with check's (the rules on by default)."""
    from topk_migrate.discover import prefilter_for

    monkeypatch.setenv("TOPK_MIGRATE_MAX_BYTES", "1000")
    _tree(tmp_path / "on", enable=True)
    big = str(tmp_path / "on" / "big.py")
    path, sites, err = audit_mod.analyse(big, None, None, prefilter_for(everything=True))
    assert sites == [] and err.startswith("file too large")
    assert audit_mod.analyse(big, None) == (big, [], None)  # check's: no name of a rule on by default


def _git(cwd, *args):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                   env={**os.environ, "GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@b", "GIT_COMMITTER_NAME": "a",
                        "GIT_COMMITTER_EMAIL": "a@b"})


def test_rev_reads_with_the_same_prefilter(tmp_path, monkeypatch):
    monkeypatch.setenv("TOPK_MIGRATE_MAX_BYTES", "1000")
    _tree(tmp_path / "on", enable=True)
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-qm", "x")
    on = audit([str(tmp_path / "on")], rev="HEAD")
    assert [(p, e.split(";")[0]) for p, e in on.errors] == [("big.py", f"file too large ({os.path.getsize(tmp_path / 'on' / 'big.py')} bytes > 1000)")]
    # (a blob over the bound is scanned for every site rule's names, not yet its own project's: the error line
    # also where the project does not enable the rule, unlike on disk; kept as it was)


def test_no_module_state_decides_what_a_scan_looks_for():
    """discover has no override a caller sets (the old `scanning_for`): every scan builds its Prefilter and hands it on."""
    import inspect

    from topk_migrate import discover
    from topk_migrate.discover import bytescan

    assert not hasattr(discover, "scanning_for") and not hasattr(discover, "prefilter")
    assert "global " not in inspect.getsource(bytescan)
