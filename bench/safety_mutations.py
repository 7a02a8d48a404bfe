#!/usr/bin/env python3
"""Remove each protection of issue 5 in turn and show that a test catches it.

    python bench/safety_mutations.py [NAME ...]

Works on a scratch copy of the repository (the working tree is never touched):
each mutation edits the copy, runs the tests named for it with the copy first on
PYTHONPATH, and must make at least one of them fail. Exits 1 if a mutation
survives. Not part of the package.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
F, C = "topk_migrate/files.py", "topk_migrate/codemods/pass_topk_length/analysis.py"
UNIT, CLI, INT, FUZZ = "tests/test_files.py", "tests/test_safety_cli.py", "tests/test_interrupt.py", "tests/test_fuzz.py"

# name: (file, text to replace, replacement, tests that must catch it)
MUTATIONS = {
    "no temp file + rename (write in place)": (
        F, "            fd, tmp = tempfile.mkstemp(dir=d, prefix=TEMP_PREFIX, suffix=TEMP_SUFFIX)",
        "            fd, tmp = os.open(real, os.O_WRONLY | os.O_TRUNC), real", [UNIT, INT]),
    "no signal deferral around the write window": (
        F, "signal.pthread_sigmask(signal.SIG_BLOCK, _DEFERRED_SIGNALS)", "signal.pthread_sigmask(signal.SIG_BLOCK, [])", [UNIT, INT]),
    "no hash check before the rename": (F, "if _digest(real) != src.digest:", "if False:", [UNIT, CLI]),
    "no reparse check in write_source": (F, "    check_rewrite(src.text, new_text, src.path)\n", "", [UNIT, CLI]),
    "no read-only refusal": (F, "    if _read_only(real, st):", "    if False:", [UNIT, CLI]),
    "no mode kept": (F, "            os.chmod(tmp, stat.S_IMODE(st.st_mode))", "            pass", [UNIT, CLI]),
    "no owner kept": (F, "os.fchown(f.fileno(), st.st_uid, st.st_gid)", "pass", [UNIT]),
    "BOM dropped": (F, "        text = raw.decode(encoding)",
                    "        encoding = 'utf-8' if encoding == 'utf-8-sig' else encoding\n"
                    "        text = raw.decode(encoding).lstrip('\\ufeff')", [UNIT, CLI]),
    "trailing-newline state not kept": (F, "    new_text = keep_tail(src.text, new_text)\n", "", [UNIT, CLI]),
    "cookie searched in the whole file": (F, "io.BytesIO(first_two.replace(b\"\\r\\n\", b\"\\n\").replace(b\"\\r\", b\"\\n\")).readline",
                                          "io.BytesIO(raw).readline", [UNIT]),
    "lossy codec accepted": (F, "    if text.encode(encoding) != raw:", "    if False:", [UNIT]),
    "no binary (NUL) detection": (F, "    if nul >= 0:", "    if False:", [UNIT, CLI]),
    "write replaces the symlink": (F, "    real = os.path.realpath(src.path)", "    real = src.path", [UNIT]),
    "FIFO opened as a file": (F, "        if not stat.S_ISREG(st.st_mode):", "        if False:", [UNIT]),
    "no size limit": (F, "    if len(raw) > limit and may_hold_site(raw):", "    if False:", [UNIT, CLI]),
    "temp file not cleaned up on failure": (F, "                os.unlink(tmp)", "                pass", [UNIT]),
    # a core mutation the fuzzer must catch: positional topk_length not seen, so it gets passed twice
    "core: positional topk_length ignored": (C, "if pos is not None and len(positional) > pos", "if False", [FUZZ]),
}


def run(name, copy) -> bool:
    path, old, new, tests = MUTATIONS[name]
    target = os.path.join(copy, path)
    with open(target) as f:
        orig = f.read()
    if old not in orig:
        print(f"{name:45s} STALE (text not found in {path})")
        return False
    with open(target, "w") as f:
        f.write(orig.replace(old, new, 1))
    try:
        env = dict(os.environ, PYTHONPATH=copy, TOPK_FUZZ_PROFILE="ci")
        r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *tests],
                           cwd=copy, env=env, capture_output=True, text=True, timeout=1200)
        failed = [l.split(" - ")[0][len("FAILED "):] for l in r.stdout.splitlines() if l.startswith(("FAILED", "ERROR"))]
        caught = r.returncode != 0
        print(f"{name:45s} {'caught by ' + ', '.join(failed) if caught else 'SURVIVED'}")
        return caught
    finally:
        with open(target, "w") as f:
            f.write(orig)


def main(names) -> int:
    copy = tempfile.mkdtemp(prefix="topk-mutants-")
    try:
        for item in ("topk_migrate", "tests", "fixtures", "pyproject.toml"):
            src = os.path.join(REPO, item)
            (shutil.copytree if os.path.isdir(src) else shutil.copy)(src, os.path.join(copy, item))
        # codemods/ installs as topk_migrate.codemods: put the copy's where the copy's package finds it
        shutil.copytree(os.path.join(REPO, "codemods"), os.path.join(copy, "topk_migrate", "codemods"))
        # the unmutated copy must pass, or a "caught" below would mean nothing
        env = dict(os.environ, PYTHONPATH=copy, TOPK_FUZZ_PROFILE="ci")
        tests = sorted({t for *_, ts in MUTATIONS.values() for t in ts})
        base = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *tests],
                              cwd=copy, env=env, capture_output=True, text=True, timeout=1800)
        print(f"{'baseline (no mutation)':45s} {(base.stdout.strip().splitlines() or ['?'])[-1]}")
        if base.returncode != 0:
            print(base.stdout[-3000:])
            return 1
        results = [run(n, copy) for n in (names or MUTATIONS)]
        return 0 if all(results) else 1
    finally:
        shutil.rmtree(copy, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
