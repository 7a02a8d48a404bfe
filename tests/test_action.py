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


def doc_commands(runner_temp="$RUNNER_TEMP"):
    """The bash block of docs/ci.md's action section: the commands the action runs, as documented."""
    section = CI_DOC.split("## GitHub Actions", 1)[1]
    block = re.search(r"```bash\n(.*?)```", section, re.S).group(1)
    return [line.split("  #")[0].strip().replace("$RUNNER_TEMP", str(runner_temp))
            for line in block.splitlines() if line.strip()]


def resolve(value, inputs, outputs):
    """The runner's expressions the steps use: ${{ inputs.X }}, ${{ github.action_path }},
    ${{ steps.audit.outputs.X }}."""
    def one(m):
        expr = m.group(1).strip()
        if expr.startswith("inputs."):
            return inputs[expr[len("inputs."):]]
        if expr == "github.action_path":
            return str(ROOT)
        if expr == "github.event_name":
            return inputs.get("_event", "push")
        if expr.startswith("steps.audit.outputs."):
            return outputs.get(expr[len("steps.audit.outputs."):], "")
        raise AssertionError(f"an expression the test does not know: {expr}")
    return re.sub(r"\$\{\{(.*?)\}\}", one, str(value))


def run_step(name, cwd, with_=None, outputs=None, env=None):
    """Run step `name`'s script: (completed process, the outputs it wrote to $GITHUB_OUTPUT). $RUNNER_TEMP
    is the workspace's sibling `runner-temp` (the runner's own directory, outside the checkout)."""
    step = STEPS[name]
    assert step["shell"] == "bash"
    inputs = {k: str(v.get("default", "")) for k, v in ACTION["inputs"].items()}
    inputs.update(with_ or {})
    runner_temp = Path(cwd).parent / "runner-temp"
    runner_temp.mkdir(exist_ok=True)
    out_file = runner_temp / "github_output"
    out_file.write_text("")
    (runner_temp / "github_path").write_text("")
    step_env = {k: resolve(v, inputs, outputs or {}) for k, v in step.get("env", {}).items()}
    full = {**os.environ, "RUNNER_TEMP": str(runner_temp), **(env or {}), **step_env, "GITHUB_OUTPUT": str(out_file),
            "GITHUB_PATH": str(runner_temp / "github_path")}
    r = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]], cwd=cwd, env=full,
                       capture_output=True, text=True, timeout=300)
    written = dict(line.split("=", 1) for line in out_file.read_text().splitlines() if "=" in line)
    return r, written


@pytest.fixture
def workspace(tmp_path):
    """A checkout with one fork directory below its top: path/to/fork/dsa_backend.py (one fixable call)."""
    fork = tmp_path / "workspace" / "path" / "to" / "fork"
    fork.mkdir(parents=True)
    shutil.copy(EXAMPLE, fork / "dsa_backend.py")
    return tmp_path / "workspace"


def test_no_input_is_spliced_into_a_script():
    for step in ACTION["runs"]["steps"]:
        assert "${{" not in step.get("run", ""), step["name"]  # inputs reach scripts through env only
    assert ACTION["runs"]["using"] == "composite"
    assert set(ACTION["inputs"]) == {"paths", "kernel", "mode", "fail-on", "sarif-file", "args", "new-since",
                                     "python-version"}


def test_sarif_mode_writes_the_report_with_paths_from_the_workspace_top(workspace):
    r, out = run_step("Audit", workspace, {"paths": "path/to/fork", "kernel": KERNEL})
    assert r.returncode == 0, r.stdout + r.stderr  # the step itself passes: fail-on decides later
    report = workspace.parent / "runner-temp" / "topk-migrate.sarif"  # outside the checkout
    assert r.stdout.splitlines()[0] == "+ " + doc_commands(report.parent)[0]
    assert out == {"exit-code": "1", "sarif-file": str(report)}
    sarif = json.loads(report.read_text())
    assert sarif["version"] == "2.1.0"
    results = sarif["runs"][0]["results"]
    assert [(x["ruleId"], x["level"]) for x in results] == [("pass-topk-length", "warning")]
    assert results[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "path/to/fork/dsa_backend.py"


def test_sarif_mode_at_the_top_keeps_the_paths(workspace):
    r, out = run_step("Audit", workspace, {"kernel": KERNEL})  # paths: . (the default)
    assert r.returncode == 0 and out["exit-code"] == "1", r.stdout + r.stderr
    uri = json.loads(Path(out["sarif-file"]).read_text())["runs"][0]["results"][0]["locations"][0]
    assert uri["physicalLocation"]["artifactLocation"]["uri"] == "path/to/fork/dsa_backend.py"


def test_annotations_mode_annotates_the_file_from_the_workspace_top(workspace):
    r, out = run_step("Audit", workspace, {"paths": "path/to/fork", "kernel": KERNEL, "mode": "annotations"})
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "+ " + doc_commands()[1]
    assert lines[1].startswith("::warning file=path/to/fork/dsa_backend.py,line=232,col=21,"
                               "title=topk-migrate pass-topk-length%3A fixable::"), lines
    assert out == {"exit-code": "1"}
    assert not (workspace.parent / "runner-temp" / "topk-migrate.sarif").exists()


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
        assert command.startswith("topk-migrate audit --relative-to . --kernel ") and " -- path/to/fork" in command
    for name in ACTION["inputs"]:
        assert f"| `{name}` |" in CI_DOC, name  # every input documented
    # the kernel is declared the same way for the hooks, the action and the commands
    assert 'kernel = "sglang-kernel==0.4.6"' in CI_DOC and "--kernel" in STEPS["Audit"]["run"]
    readme = (ROOT / "README.md").read_text()
    assert "action.yml" in readme and "docs/ci.md" in readme


# -- a hostile workspace: what a pull request from a fork can commit at its top ----------------------------

MARKER = "import os\nopen(os.path.join({where!r}, {name!r}), 'w').write('ran')\n"


def plant(workspace, ran, names=("pip", "json", "re", "os", "sitecustomize", "topk_migrate", "click", "libcst")):
    """Modules a fork commits at its top; each one, if imported, leaves a file named for it in `ran`."""
    for name in names:
        code = MARKER.format(where=str(ran), name=name)
        if name in ("topk_migrate", "click"):  # a package, as the fork's own topk_migrate/ would be
            (workspace / name).mkdir(exist_ok=True)
            (workspace / name / "__init__.py").write_text(code)
        else:
            (workspace / f"{name}.py").write_text(code)
    (workspace / "pip").mkdir(exist_ok=True)
    (workspace / "pip" / "__main__.py").write_text(MARKER.format(where=str(ran), name="pip-main"))


@pytest.fixture
def ran(tmp_path):
    d = tmp_path / "ran"
    d.mkdir()
    return d


SHIM = """#!/bin/sh
# a python3 that says where and how it was started; `-m venv DIR` makes DIR/bin/python this script
printf '%s\\t%s\\n' "$PWD" "$*" >> {log}
if [ "$2" = -m ] && [ "$3" = venv ]; then mkdir -p "$4/bin" && ln -s {shim} "$4/bin/python"; fi
"""


def test_the_install_step_starts_python_only_isolated_outside_the_workspace(workspace, tmp_path):
    """Every Python the step starts runs with -I (no working directory, no user site on sys.path) in a
    directory of the runner's temp: a fork's pip.py, pip/ or json.py at its top is never on the path.
    (The heavy tier's test_the_install_step_installs_this_checkout runs the real install beside them.)"""
    shims, log = tmp_path / "shims", tmp_path / "python.log"
    shims.mkdir()
    (shims / "python3").write_text(SHIM.format(log=log, shim=shims / "python3"))
    (shims / "python3").chmod(0o755)
    env = {"PATH": f"{shims}{os.pathsep}{os.environ['PATH']}", "ACTION_PATH": str(ROOT)}
    r, _ = run_step("Install topk-migrate", workspace, env=env)
    starts = [line.split("\t") for line in log.read_text().splitlines()]
    assert [args.split()[:3] for _, args in starts] == [["-I", "-m", "venv"], ["-I", "-m", "pip"]], r.stderr
    for cwd, _ in starts:
        assert Path(cwd).is_relative_to(workspace.parent / "runner-temp"), cwd


@pytest.mark.parametrize("mode", ["sarif", "annotations"])
def test_the_audit_step_runs_only_the_tool(workspace, ran, mode):
    """No `python -c` or `python -` in the workspace: the fork's json.py, re.py or topk_migrate/ never run."""
    plant(workspace, ran)
    r, out = run_step("Audit", workspace, {"paths": "path/to/fork", "kernel": KERNEL, "mode": mode})
    assert sorted(os.listdir(ran)) == [] and out["exit-code"] == "1", r.stdout + r.stderr
    assert "python" not in STEPS["Audit"]["run"]


def test_a_link_at_the_report_path_is_never_followed(workspace):
    """A fork's `topk-migrate.sarif` link to a JSON file outside: the file is untouched, and the report
    handed on is the one the run wrote."""
    outside = workspace.parent / "outside.sarif"
    outside.write_text('{"runs": []}')
    (workspace / "topk-migrate.sarif").symlink_to(outside)
    r, out = run_step("Audit", workspace, {"paths": "path/to/fork", "kernel": KERNEL,
                                            "sarif-file": "topk-migrate.sarif"})
    assert outside.read_text() == '{"runs": []}', r.stdout + r.stderr
    report = workspace / "topk-migrate.sarif"
    assert out == {"exit-code": "1", "sarif-file": "topk-migrate.sarif"} and not report.is_symlink()
    assert json.loads(report.read_text())["runs"][0]["results"]


def test_a_directory_at_the_report_path_is_never_handed_to_the_upload(workspace):
    forged = workspace / "topk-migrate.sarif"
    forged.mkdir()
    (forged / "forged.sarif").write_text('{"version": "2.1.0", "runs": []}')
    r, out = run_step("Audit", workspace, {"paths": "path/to/fork", "kernel": KERNEL,
                                            "sarif-file": "topk-migrate.sarif"})
    assert out == {"exit-code": "2"}, r.stdout + r.stderr  # audit could not write: nothing to upload


def test_args_are_passed_through_as_words(workspace):
    shutil.copy(EXAMPLE, workspace / "path" / "to" / "fork" / "other.py")
    r, out = run_step("Audit", workspace, {"paths": "path/to/fork", "kernel": KERNEL, "mode": "annotations",
                                            "args": "--exclude other.py  -j 1"})
    assert r.stdout.splitlines()[0].endswith("--exclude other.py -j 1 -- path/to/fork"), r.stdout
    assert sum(ln.startswith("::warning") for ln in r.stdout.splitlines()) == 1 and out["exit-code"] == "1"


def git_in(repo, *args):
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo, check=True,
                   capture_output=True)


def test_on_a_pull_request_only_what_it_brings_is_reported(workspace):
    """new-since: auto, on pull_request: against the merge commit's first parent (the base)."""
    git_in(workspace, "init", "-q")
    git_in(workspace, "add", "-A")
    git_in(workspace, "commit", "-qm", "base")
    pr = {"paths": "path/to/fork", "kernel": KERNEL, "mode": "annotations", "_event": "pull_request"}
    git_in(workspace, "commit", "-qm", "merge", "--allow-empty")  # the pull request changes nothing
    r, out = run_step("Audit", workspace, pr)
    assert "--new-since " in r.stdout.splitlines()[0] and out["exit-code"] == "0", r.stdout + r.stderr
    shutil.copy(EXAMPLE, workspace / "path" / "to" / "fork" / "new.py")  # it brings a call
    r, out = run_step("Audit", workspace, pr)
    assert out["exit-code"] == "1" and [ln.split(",")[0] for ln in r.stdout.splitlines()[1:]] == [
        "::warning file=path/to/fork/new.py"], r.stdout
    r, out = run_step("Audit", workspace, {**pr, "_event": "push"})  # elsewhere: every site
    assert "--new-since" not in r.stdout and out["exit-code"] == "1"


def test_a_shallow_pull_request_checkout_reports_everything_and_says_why(workspace):
    git_in(workspace, "init", "-q")
    git_in(workspace, "add", "-A")
    git_in(workspace, "commit", "-qm", "only")  # depth 1: no parent
    r, out = run_step("Audit", workspace, {"paths": "path/to/fork", "kernel": KERNEL, "mode": "annotations",
                                            "_event": "pull_request"})
    assert "::notice::topk-migrate: the pull request's base is not in the checkout" in r.stdout
    assert out["exit-code"] == "1"


def test_no_upload_from_a_fork_s_pull_request_and_a_notice_says_so():
    """A fork's pull request gets a read-only token: upload-sarif would fail the job."""
    assert "!github.event.pull_request.head.repo.fork" in STEPS["Upload for code scanning"]["if"]
    notice = STEPS["Say why there is no upload"]
    assert "github.event.pull_request.head.repo.fork" in notice["if"] and "::notice::" in notice["run"]


@pytest.mark.heavy
def test_the_install_step_installs_this_checkout(tmp_path):
    """pip install of the action's own checkout into the tool's own environment (PyPI for the build backend
    and the dependencies), from a hostile workspace; only the console script reaches the job's PATH and
    the job's Python is left as it was."""
    checkout = tmp_path / "action"
    copy_checkout(checkout)
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    ran = tmp_path / "ran"
    ran.mkdir()
    plant(workspace, ran)
    venv = tmp_path / "venv"  # the job's Python
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    before = sorted(os.listdir(next((venv / "lib").glob("python*")) / "site-packages"))
    env = {"PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}", "ACTION_PATH": str(checkout)}
    assert STEPS["Install topk-migrate"]["env"] == {"ACTION_PATH": "${{ github.action_path }}"}
    r, _ = run_step("Install topk-migrate", workspace, env=env)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert r.stdout.strip().splitlines()[-1].startswith("topk-migrate, version ")
    assert sorted(os.listdir(ran)) == []
    added = (tmp_path / "runner-temp" / "github_path").read_text().split()
    assert len(added) == 1 and os.listdir(added[0]) == ["topk-migrate"]  # the console script alone on PATH
    assert Path(added[0]).is_relative_to(tmp_path / "runner-temp")
    tool = subprocess.run([os.path.join(added[0], "topk-migrate"), "--version"], capture_output=True, text=True)
    assert tool.returncode == 0 and tool.stdout.startswith("topk-migrate, version ")
    after = sorted(os.listdir(next((venv / "lib").glob("python*")) / "site-packages"))
    assert after == before  # the job's Python: nothing installed into it


@pytest.mark.heavy
def test_random_hostile_workspaces_never_run_code_write_outside_or_forge_the_report(tmp_path):
    """Random workspaces a fork could commit (modules at its top, a link, a directory or a forged file at
    the report's path, names a runner reads as commands) through the audit step, in both modes."""
    import random

    rng = random.Random(35)
    names = ["::error title=ok::x.py", " ::stop-commands::y.py", "##vso[task.complete]z.py", "-.py", "plain.py"]
    for i in range(12):
        root = tmp_path / str(i)
        ws, ran = root / "workspace", root / "ran"
        fork = ws / "fork"
        fork.mkdir(parents=True)
        ran.mkdir()
        plant(ws, ran, rng.sample(["pip", "json", "re", "os", "sitecustomize", "topk_migrate", "click"], 4))
        for name in rng.sample(names, 3):
            shutil.copy(EXAMPLE, fork / name)
        outside = root / "outside.sarif"
        outside.write_text('{"runs": []}')
        report = rng.choice(["", "topk-migrate.sarif"])
        obstacle = rng.choice(["link", "dir", "file", None]) if report else None
        at = ws / "topk-migrate.sarif"
        if obstacle == "link":
            at.symlink_to(outside)
        elif obstacle == "dir":
            at.mkdir()
            (at / "forged.sarif").write_text('{"version": "2.1.0", "runs": []}')
        elif obstacle == "file":
            at.write_text('{"version": "2.1.0", "runs": []}')
        mode = rng.choice(["sarif", "annotations"])
        r, out = run_step("Audit", ws, {"paths": "fork", "kernel": KERNEL, "mode": mode, "sarif-file": report})
        what = f"case {i}: {mode} {report!r} {obstacle}: " + r.stdout[-1500:] + r.stderr[-1500:]
        assert os.listdir(ran) == [] and outside.read_text() == '{"runs": []}', what
        for line in r.stdout.splitlines() + r.stderr.splitlines():
            bare = line.lstrip()
            assert not bare.startswith("##"), what
            assert not bare.startswith("::") or re.match(r"::(warning|error|notice) file=fork/", bare), what
        if "sarif-file" in out:
            handed = Path(out["sarif-file"]) if os.path.isabs(out["sarif-file"]) else ws / out["sarif-file"]
            assert handed.is_file() and not handed.is_symlink(), what
            assert json.loads(handed.read_text())["runs"][0]["results"], what  # the run's own findings
        else:
            assert mode == "annotations" or obstacle == "dir", what
