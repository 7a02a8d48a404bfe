"""One process, several runs: each run reads the tree afresh (runcontext.RunContext), none keeps what
an earlier one read (the library, an editor integration or a long-lived service run many times)."""
import shutil
from pathlib import Path

from topk_migrate import api
from topk_migrate.audit import audit
from topk_migrate.model import Status

EXAMPLE = Path(__file__).resolve().parents[1] / "fixtures" / "examples" / "dsa_backend.py"


def _project(tmp_path, pin: str) -> Path:
    shutil.copy(EXAMPLE, tmp_path / "dsa_backend.py")
    (tmp_path / "requirements.txt").write_text(pin + "\n")
    return tmp_path


def test_a_second_audit_sees_a_changed_pin(tmp_path):
    proj = _project(tmp_path, "sglang-kernel==0.4.6")
    assert [s.status for s in audit([str(proj)], jobs=1).sites] == [Status.FIXABLE]
    (proj / "requirements.txt").write_text("sglang-kernel==0.4.2\n")  # before topk_length
    sites = audit([str(proj)], jobs=1).sites
    assert [s.status for s in sites] == [Status.MANUAL] and "0.4.2" in sites[0].reason


def test_a_second_check_sees_a_changed_pin_and_config(tmp_path):
    proj = _project(tmp_path, "sglang-kernel==0.4.2")
    assert [s.status for s in api.run([str(proj)]).sites] == [Status.MANUAL]
    (proj / "requirements.txt").write_text("sglang-kernel==0.4.6\n")
    assert [s.status for s in api.run([str(proj)]).sites] == [Status.FIXABLE]
    (proj / "pyproject.toml").write_text('[tool.topk-migrate]\nkernel = "sglang-kernel==0.4.2"\n')
    assert [s.status for s in api.run([str(proj)]).sites] == [Status.MANUAL]  # a new project root and config


def test_a_second_audit_sees_a_new_project_root(tmp_path):
    (tmp_path / "sub").mkdir()
    proj = _project(tmp_path / "sub", "sglang-kernel==0.4.6")
    (tmp_path / "requirements.txt").write_text("sglang-kernel==0.4.2\n")
    assert [s.status for s in audit([str(proj)], jobs=1).sites] == [Status.FIXABLE]
    (proj / "requirements.txt").unlink()  # the folder above, with its own pin, is the project now
    assert [s.status for s in audit([str(proj)], jobs=1).sites] == [Status.MANUAL]


def test_no_module_level_cache_of_tree_contents():
    """functools caches live as long as the process: only code and constants may be kept in them (the rule
    registry and what it derives, compiled patterns); what a tree holds goes in run_context."""
    import re

    allowed = {("discover/bytescan.py", "prefilter_for"), ("narrow.py", "_alias"), ("rules.py", "specs"), ("rules.py", "load"),
               # the packaged table of sglang releases' kernel requirements (topk_migrate/data), a constant
               ("kernels.py", "engine_releases"), ("kernels.py", "newest_engine_release")}
    found = set()
    package = Path(__file__).resolve().parents[1] / "topk_migrate"
    for path in package.rglob("*.py"):
        text = path.read_text()
        for m in re.finditer(r"@(?:functools\.)?(?:lru_cache|cache)\b[^\n]*\n(?:@[^\n]*\n)*def (\w+)", text):
            found.add((str(path.relative_to(package)), m.group(1)))
    assert found <= allowed, found - allowed
