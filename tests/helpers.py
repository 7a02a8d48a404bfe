"""What many test files need, defined once: the repository root, the kernel release most tests pin, a run
of the command line in a child process (the CLI's contract is its output and exit code, so the tests run
it as a user does) and a copy of the checkout. A plain module, not a test module (and not conftest.py,
which pytest loads itself): tests/ is on sys.path through pyproject.toml's pytest `pythonpath`."""
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]  # the repository root: fixtures/, docs/, bench/, pyproject.toml

KERNEL = "sglang-kernel==0.4.6"  # the release most tests pin: its flash_mla_sparse_fwd takes topk_length


def run_cli(*args, cwd=None, env=None, timeout=300, text=True, **kw):
    """`python -m topk_migrate ARGS` in a child process, its output captured (text, or bytes with text=False).

    env is the child's whole environment (None: this process's); a caller adding variables passes
    {**os.environ, **extra}. timeout=None waits as long as it takes."""
    return subprocess.run([sys.executable, "-m", "topk_migrate", *map(str, args)], capture_output=True, cwd=cwd,
                          env=env, timeout=timeout, text=text, **kw)


def copy_checkout(dest: Path) -> Path:
    """The repository's own files (tracked and not ignored), copied to `dest`: a fresh clone without git."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, text=True, check=True).stdout.split("\0")
    for rel in filter(None, listed):
        if (ROOT / rel).is_file() and not rel.startswith(("shared/", ".carry/")):
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, dest / rel)
    return dest
