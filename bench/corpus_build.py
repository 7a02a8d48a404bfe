"""Rebuild the real-site corpus (tests/corpus/manifest.json) from fetched repository snapshots.

The corpus is kernel call sites from public repositories (SGLang and vLLM forks, other engines, kernel test
suites), each file named by repository, commit and path, with its sha256 and, per site, the status and reason
class judged by reading the code. The sources are not committed: this script takes each file out of a bare
git snapshot (the search tool's `fetch` puts them at /work/.mirror/OWNER+NAME/repo; TOPK_MIGRATE_MIRROR
points elsewhere) with `git show COMMIT:PATH`, checks the sha256, and writes it under OUT/OWNER+NAME/PATH,
together with the project files that decide the kernel there (pyproject.toml, setup.py, setup.cfg,
requirements*.txt in the directories from the repository's top down to the file, at the same commit).
Nothing is imported or run.

    python3 bench/corpus_build.py OUT            # rebuild; exit 1 if a file is missing or differs
    python3 bench/corpus_build.py OUT --sites    # rebuild, then print every site the tool reports (JSON lines)
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional, Tuple

HERE = Path(__file__).resolve().parents[1]
MANIFEST = HERE / "tests" / "corpus" / "manifest.json"
PROJECT_FILES = ("pyproject.toml", "setup.py", "setup.cfg")


def mirror_root() -> Path:
    return Path(os.environ.get("TOPK_MIGRATE_MIRROR", "/work/.mirror"))


def git_dir(repo: str) -> Path:
    return mirror_root() / repo.replace("/", "+") / "repo"


def _git(repo: str, *args: str) -> Optional[bytes]:
    r = subprocess.run(["git", "--git-dir", str(git_dir(repo)), *args], capture_output=True, timeout=120)
    return r.stdout if r.returncode == 0 else None


def show(repo: str, commit: str, path: str) -> Optional[bytes]:
    return _git(repo, "show", f"{commit}:{path}")


def project_files(repo: str, commit: str, path: str) -> List[str]:
    """The pin and root files of the directories from the top of the repository down to `path`'s."""
    parts = path.split("/")[:-1]
    out = []
    for i in range(len(parts) + 1):
        d = "/".join(parts[:i])
        listing = _git(repo, "ls-tree", "--name-only", f"{commit}:{d}" if d else f"{commit}:")
        for name in (listing or b"").decode("utf-8", "replace").splitlines():
            if name in PROJECT_FILES or (name.startswith("requirements") and name.endswith(".txt")):
                out.append(f"{d}/{name}" if d else name)
    return out


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def load() -> dict:
    return json.loads(MANIFEST.read_text())


def rebuild(out: Path, manifest: Optional[dict] = None) -> Tuple[List[Path], List[str]]:
    """Write every manifest file under `out`; (files written, problems)."""
    manifest = manifest or load()
    written, problems = [], []
    for f in manifest["files"]:
        repo, commit, path = f["repo"], f["commit"], f["path"]
        if not git_dir(repo).is_dir():
            problems.append(f"{repo}: no snapshot at {git_dir(repo)}")
            continue
        data = show(repo, commit, path)
        if data is None:
            problems.append(f"{repo}@{commit[:10]}:{path}: not in the snapshot")
            continue
        if sha256(data) != f["sha256"]:
            problems.append(f"{repo}@{commit[:10]}:{path}: sha256 differs")
            continue
        top = out / f["dir"]
        target = top / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        written.append(target)
        for extra in project_files(repo, commit, path):
            dest = top / extra
            if not dest.exists():
                blob = show(repo, commit, extra)
                if blob is not None:
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    dest.write_bytes(blob)
        if not (top / ".git").exists():
            (top / ".git").mkdir(parents=True)  # the repository's top is its project root, as in a checkout
    return written, problems


# The class of a site's reason, for the corpus's figures: the first pattern that matches.
REASON_CLASSES = (
    ("compliant", r"^passes topk_length"),
    ("opt-out", r"^(passes topk_length=None|suppressed)"),
    ("fixable", r"(gains topk_length|^passes \S+ \(guarded|takes topk_length from its callers)"),
    ("kernel-unknown", r"^kernel capability unknown"),
    ("kernel-too-old", r"^kernel too old"),
    ("op-level", r"^op-level call"),
    ("value-use", r"^the kernel is .*: calls through it cannot be checked"),
    ("through-holder", r"^calls the kernel through"),
    ("no-metadata", r"^(no .* in scope|at the callers? .*: )"),
    ("rows", r"(^|: )q's rows may not be|^q is not a plain name"),
    ("indices", r"(^|: )the indices may not be"),
    ("callee-identity", r"(may not be the kernel at run time|may also be|import \*|is assigned at line|setattr at line)"),
    ("helper-identity", r"(is decorated with|is bound \d+ times|takes \*\*kwargs|overrides .* without topk_length)"),
    ("project-wrapper", r"defined in this project"),
)


def reason_class(status: str, reason: str) -> str:
    import re

    for name, pattern in REASON_CLASSES:
        if re.search(pattern, reason):
            return name
    return "other"


def sites(out: Path, manifest: Optional[dict] = None) -> Dict[str, list]:
    """Every site the tool reports on the rebuilt corpus, per file (each file with its own --kernel, if any)."""
    from topk_migrate import api

    manifest = manifest or load()
    got: Dict[str, list] = {}
    for f in manifest["files"]:
        target = out / f["dir"] / f["path"]
        if not target.exists():
            continue
        rep = api.run([str(target)], kernel=f.get("kernel"))
        key = f"{f['dir']}/{f['path']}"
        got[key] = [s for o in rep.files for s in o.sites]
        got[key + "#errors"] = [o.error for o in rep.files if o.error]
    return got


def main(argv: List[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv else 2
    out = Path(argv[0])
    written, problems = rebuild(out)
    for p in problems:
        print(f"corpus: {p}", file=sys.stderr)
    print(f"corpus: {len(written)} files under {out}", file=sys.stderr)
    if "--sites" in argv:
        for key, found in sorted(sites(out).items()):
            if key.endswith("#errors"):
                for e in found:
                    print(json.dumps({"file": key[:-7], "error": e}))
                continue
            for s in found:
                print(json.dumps({"file": key, "line": s.line, "status": s.status.value, "callee": s.callee,
                                  "class": reason_class(s.status.value, s.reason), "reason": s.reason}))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
