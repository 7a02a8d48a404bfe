"""action.yml, the composite GitHub Action: its shell steps run here as the runner runs them
(`bash --noprofile --norc -eo pipefail`, inputs through the step's own `env:`), and what they run is
what docs/ci.md says, with the flags the pre-commit hooks and the docs name."""
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from helpers import KERNEL, ROOT, copy_checkout

ACTION = yaml.safe_load((ROOT / "action.yml").read_text())
STEPS = {s["name"]: s for s in ACTION["runs"]["steps"]}
CI_DOC = (ROOT / "docs" / "ci.md").read_text()
EXAMPLE = ROOT / "fixtures" / "examples" / "dsa_backend.py"


def doc_commands():
    """The bash block of docs/ci.md's action section: the commands the action runs, as documented."""
    section = CI_DOC.split("## GitHub Actions", 1)[1]
    block = re.search(r"```bash\n(.*?)```", section, re.S).group(1)
    return [line.split("  #")[0].strip() for line in block.splitlines() if line.strip()]


def resolve(value, inputs, outputs):
    """The runner's expressions the steps use: ${{ inputs.X }}, ${{ github.action_path }},
    ${{ steps.audit.outputs.X }}."""
    def one(m):
        expr = m.group(1).strip()
        if expr.startswith("inputs."):
            return inputs[expr[len("inputs."):]]
        if expr == "github.action_path":
            return str(ROOT)
        if expr.startswith("steps.audit.outputs."):
            return outputs.get(expr[len("steps.audit.outputs."):], "")
        raise AssertionError(f"an expression the test does not know: {expr}")
    return re.sub(r"\$\{\{(.*?)\}\}", one, str(value))


def run_step(name, cwd, with_=None, outputs=None, env=None):
    """Run step `name`'s script: (completed process, the outputs it wrote to $GITHUB_OUTPUT)."""
    step = STEPS[name]
    assert step["shell"] == "bash"
    inputs = {k: str(v.get("default", "")) for k, v in ACTION["inputs"].items()}
    inputs.update(with_ or {})
    out_file = Path(cwd) / ".github_output"
    out_file.write_text("")
    step_env = {k: resolve(v, inputs, outputs or {}) for k, v in step.get("env", {}).items()}
    full = {**os.environ, **(env or {}), **step_env, "GITHUB_OUTPUT": str(out_file)}
    r = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]], cwd=cwd, env=full,
                       capture_output=True, text=True, timeout=300)
    written = dict(line.split("=", 1) for line in out_file.read_text().splitlines() if "=" in line)
    return r, written


@pytest.fixture
def workspace(tmp_path):
    """A checkout with one fork directory below its top: path/to/fork/dsa_backend.py (one fixable call)."""
    fork = tmp_path / "path" / "to" / "fork"
    fork.mkdir(parents=True)
    shutil.copy(EXAMPLE, fork / "dsa_backend.py")
    return tmp_path


def test_no_input_is_spliced_into_a_script():
    for step in ACTION["runs"]["steps"]:
        assert "${{" not in step.get("run", ""), step["name"]  # inputs reach scripts through env only
    assert ACTION["runs"]["using"] == "composite"
    assert set(ACTION["inputs"]) == {"paths", "kernel", "mode", "fail-on", "sarif-file", "python-version"}


def test_sarif_mode_writes_the_report_with_paths_from_the_workspace_top(workspace):
    r, out = run_step("Audit", workspace, {"paths": "path/to/fork", "kernel": KERNEL})
    assert r.returncode == 0, r.stdout + r.stderr  # the step itself passes: fail-on decides later
    assert r.stdout.splitlines()[0] == "+ " + doc_commands()[0]
    assert out == {"exit-code": "1", "sarif-file": "topk-migrate.sarif"}
    sarif = json.loads((workspace / "topk-migrate.sarif").read_text())
    assert sarif["version"] == "2.1.0"
    results = sarif["runs"][0]["results"]
    assert [(x["ruleId"], x["level"]) for x in results] == [("pass-topk-length", "warning")]
    assert results[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "path/to/fork/dsa_backend.py"


def test_sarif_mode_at_the_top_keeps_the_paths(workspace):
    r, out = run_step("Audit", workspace, {"kernel": KERNEL})  # paths: . (the default)
    assert r.returncode == 0 and out["exit-code"] == "1", r.stdout + r.stderr
    uri = json.loads((workspace / "topk-migrate.sarif").read_text())["runs"][0]["results"][0]["locations"][0]
    assert uri["physicalLocation"]["artifactLocation"]["uri"] == "path/to/fork/dsa_backend.py"


def test_annotations_mode_annotates_the_file_from_the_workspace_top(workspace):
    r, out = run_step("Audit", workspace, {"paths": "path/to/fork", "kernel": KERNEL, "mode": "annotations"})
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "+ " + doc_commands()[1]
    assert lines[1].startswith("::warning file=path/to/fork/dsa_backend.py,line=232,col=21,"
                               "title=topk-migrate pass-topk-length%3A fixable::"), lines
    assert out == {"exit-code": "1"}
    assert not (workspace / "topk-migrate.sarif").exists()


def test_a_migrated_fork_passes(workspace):
    subprocess.run(["topk-migrate", "apply", "--kernel", KERNEL, "path/to/fork"], cwd=workspace, capture_output=True)
    r, out = run_step("Audit", workspace, {"paths": "path/to/fork", "kernel": KERNEL, "mode": "annotations"})
    assert r.returncode == 0 and out == {"exit-code": "0"} and "::warning" not in r.stdout, r.stdout


def test_paths_are_words_never_globs(workspace):
    r, out = run_step("Audit", workspace, {"paths": "path/to/*", "kernel": KERNEL, "mode": "annotations"})
    assert out == {"exit-code": "2"}, r.stdout + r.stderr  # the literal name, which does not exist
    assert "path/to/\\*" in r.stdout.splitlines()[0]


def test_a_bad_mode_fails_the_step(workspace):
    r, _ = run_step("Audit", workspace, {"mode": "text"})
    assert r.returncode == 2 and "::error::topk-migrate: mode must be sarif or annotations" in r.stdout


@pytest.mark.parametrize("fail_on, code, fails", [
    ("sites", "0", False), ("sites", "1", True), ("sites", "2", True),
    ("errors", "0", False), ("errors", "1", False), ("errors", "2", True),
    ("never", "1", False), ("never", "2", False),
])
def test_fail_on(workspace, fail_on, code, fails):
    r, _ = run_step("Fail on findings", workspace, {"fail-on": fail_on}, outputs={"exit-code": code})
    assert (r.returncode != 0) == fails, r.stdout + r.stderr
    assert ("::error::" in r.stdout) == fails


def test_a_bad_fail_on_fails(workspace):
    r, _ = run_step("Fail on findings", workspace, {"fail-on": "warnings"}, outputs={"exit-code": "0"})
    assert r.returncode == 2 and "fail-on must be sites, errors or never" in r.stdout


def test_the_upload_and_setup_steps():
    upload = STEPS["Upload for code scanning"]
    assert upload["uses"].startswith("github/codeql-action/upload-sarif@")
    assert upload["with"]["sarif_file"] == "${{ steps.audit.outputs.sarif-file }}"
    assert "inputs.mode == 'sarif'" in upload["if"]
    names = [s["name"] for s in ACTION["runs"]["steps"]]
    assert names.index("Upload for code scanning") < names.index("Fail on findings")  # a failing run still uploads
    assert STEPS["Set up Python"]["uses"].startswith("actions/setup-python@")


def test_the_docs_the_hooks_and_the_action_name_the_same_commands_and_flags():
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    for hook in hooks:
        assert hook["entry"].endswith(" --") and f"`{hook['entry']}`" in CI_DOC, hook["entry"]
    for command in doc_commands():
        assert command.startswith("topk-migrate audit --kernel ") and " -- path/to/fork" in command
    for name in ACTION["inputs"]:
        assert f"| `{name}` |" in CI_DOC, name  # every input documented
    # the kernel is declared the same way for the hooks, the action and the commands
    assert 'kernel = "sglang-kernel==0.4.6"' in CI_DOC and "--kernel" in STEPS["Audit"]["run"]
    readme = (ROOT / "README.md").read_text()
    assert "action.yml" in readme and "docs/ci.md" in readme


@pytest.mark.heavy
def test_the_install_step_installs_this_checkout(tmp_path):
    """pip install of the action's own checkout into a fresh environment (PyPI for the build backend)."""
    checkout = tmp_path / "action"
    copy_checkout(checkout)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    env = {"PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    step = STEPS["Install topk-migrate"]
    full = {**os.environ, **env, "ACTION_PATH": str(checkout)}
    assert step["env"] == {"ACTION_PATH": "${{ github.action_path }}"}
    r = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]], cwd=tmp_path,
                       env=full, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert r.stdout.strip().splitlines()[-1].startswith("topk-migrate, version ")
    assert (venv / "bin" / "topk-migrate").exists()
