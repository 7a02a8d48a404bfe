"""check and apply speak the formats audit does (report.py's renderers): json, sarif, github, text, with the
summary line on stderr in every one, and --statistics; as a ruff or semgrep user expects in CI."""
import json
import shutil

import jsonschema
import pytest

from helpers import KERNEL, ROOT, run_cli

AUDIT_SCHEMA = json.loads((ROOT / "topk_migrate" / "schemas" / "audit-v1.schema.json").read_text())
SARIF_SCHEMA = json.loads((ROOT / "tests" / "data" / "sarif-schema-2.1.0.json").read_text())
EXAMPLE = ROOT / "fixtures" / "examples" / "dsa_backend.py"
BARE = ("from sgl_kernel.flash_mla import flash_mla_sparse_fwd\n\n"
        "def f(q, kv, i, s):\n    return flash_mla_sparse_fwd(q, kv, i, s)\n")


@pytest.fixture
def tree(tmp_path):
    (tmp_path / "pkg").mkdir()
    shutil.copy(EXAMPLE, tmp_path / "pkg" / "dsa_backend.py")
    (tmp_path / "pkg" / "bare.py").write_text(BARE)
    (tmp_path / "pkg" / "broken.py").write_text("def f(:\n    flash_mla_sparse_fwd(q)\n")
    (tmp_path / "pkg" / "plain.py").write_text("x = 1\n")
    return tmp_path


def test_check_json_is_audits_document_with_paths_from_the_working_directory(tree):
    r = run_cli("check", "--kernel", KERNEL, "--format", "json", "pkg", cwd=tree)
    doc = json.loads(r.stdout)
    jsonschema.Draft202012Validator(AUDIT_SCHEMA).validate(doc)
    assert r.returncode == 2  # the broken file
    assert [(s["path"], s["status"]) for s in doc["sites"]] == [("pkg/bare.py", "manual"),
                                                                ("pkg/dsa_backend.py", "fixable")]
    assert doc["errors"][0]["path"] == "pkg/broken.py"
    assert doc["summary"]["files"] == 4 and doc["summary"]["parsed"] == 3 and doc["summary"]["sites"] == 2
    assert r.stderr.startswith("4 file(s), 2 site(s)")  # the summary, on stderr


def test_check_sarif_validates_and_github_annotates(tree):
    r = run_cli("check", "--kernel", KERNEL, "--format", "sarif", "pkg", cwd=tree)
    doc = json.loads(r.stdout)
    jsonschema.Draft4Validator(SARIF_SCHEMA).validate(doc)
    uris = [x["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for x in doc["runs"][0]["results"]]
    assert uris == ["pkg/bare.py", "pkg/dsa_backend.py"]
    r = run_cli("check", "--kernel", KERNEL, "--format", "github", "pkg", cwd=tree)
    lines = r.stdout.splitlines()
    assert [ln.split(",")[0] for ln in lines] == ["::error file=pkg/bare.py", "::warning file=pkg/dsa_backend.py",
                                                  "::error file=pkg/broken.py"]
    assert r.returncode == 2 and "site(s)" in r.stderr


def test_apply_json_reports_what_the_run_left(tree):
    r = run_cli("apply", "--kernel", KERNEL, "--format", "json", "pkg", cwd=tree)
    doc = json.loads(r.stdout)
    jsonschema.Draft202012Validator(AUDIT_SCHEMA).validate(doc)
    by_path = {s["path"]: (s["status"], s["reason"]) for s in doc["sites"]}
    assert by_path["pkg/dsa_backend.py"] == ("compliant", "fixed: rewritten by this run")
    assert by_path["pkg/bare.py"][0] == "manual"
    assert "topk_length=" in (tree / "pkg" / "dsa_backend.py").read_text()
    assert "rewrote 1 file(s)" in r.stderr


@pytest.mark.parametrize("args", [["--diff", "pkg"], ["-"]])
def test_apply_format_is_not_for_code_on_stdout(tree, args):
    r = run_cli("apply", "--format", "json", *args, cwd=tree, input="")
    assert r.returncode == 2 and "--format json is for the report" in r.stderr


def test_statistics_count_sites_by_rule_status_and_reason(tree):
    (tree / "pkg" / "broken.py").unlink()
    r = run_cli("check", "--statistics", "pkg", cwd=tree)
    assert r.stdout == "2  pass-topk-length  manual  kernel capability unknown\n", r.stdout + r.stderr
    assert r.returncode == 1
    r = run_cli("audit", "--statistics", "--kernel", KERNEL, "pkg", cwd=tree)
    assert r.stdout.splitlines() == ["1  pass-topk-length  fixable  ExampleDSABackend._forward_flashmla_sparse "
                                     "gains topk_length", "1  pass-topk-length  manual   no clipped-seqlen metadata"]
    assert r.returncode == 1 and "site(s)" in r.stderr


def test_audit_text_puts_its_summary_on_stderr_as_check_does(tree):
    r = run_cli("audit", "--kernel", KERNEL, "pkg", cwd=tree)
    assert "file(s) scanned" in r.stderr and "file(s) scanned" not in r.stdout


def test_check_over_a_tree_shows_progress_on_a_terminal_only(tree, monkeypatch, capsys):
    """The status line (progress.Progress, audit's) once the run takes a while: here at once."""
    from topk_migrate import api
    from topk_migrate.progress import Progress

    monkeypatch.setattr(Progress, "DELAY", 0.0)
    monkeypatch.setattr(Progress, "EVERY", 0.0)
    api.run([str(tree / "pkg")], kernel=KERNEL, progress=True)
    err = capsys.readouterr().err
    assert "\r\x1b[K3 file(s), 2 site(s): " in err and err.endswith("\r\x1b[K")  # shown, then wiped
    api.run([str(tree / "pkg")], kernel=KERNEL)
    assert capsys.readouterr().err == ""
    r = run_cli("check", "--no-progress", "--kernel", KERNEL, "pkg", cwd=tree)
    assert "\r" not in r.stderr
