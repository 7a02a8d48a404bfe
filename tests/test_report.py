"""The four audit report formats, checked against the committed schemas."""
import json
from pathlib import Path

import jsonschema
import pytest

from helpers import ROOT
from topk_migrate import report
from topk_migrate.model import Site, Status

AUDIT_SCHEMA = json.loads((ROOT / "topk_migrate" / "schemas" / "audit-v1.schema.json").read_text())
SARIF_SCHEMA = json.loads((Path(__file__).parent / "data" / "sarif-schema-2.1.0.json").read_text())

SITES = [
    Site("pkg/a.py", 3, 5, "sgl_kernel.flash_mla_sparse_fwd", Status.COMPLIANT, "passes topk_length", "lens"),
    Site("pkg/a.py", 9, 12, "sgl_kernel.flash_mla_sparse_fwd", Status.OPT_OUT, "suppressed by comment: rows differ"),
    Site("pkg/b c.py", 20, 1, "flash_mla.flash_mla_sparse_fwd", Status.FIXABLE,
         "passes metadata.dsa_cache_seqlens_int32 (guarded: int32, one per row of q)", "metadata.dsa_cache_seqlens_int32"),
    Site("pkg/d,e:f.py", 7, 9, "torch.ops.sgl_kernel.sparse_prefill_fwd", Status.MANUAL,
         "op-level call: 100% needs\na human, really"),
]
ERRORS = [("pkg/bad.py", "syntax error at line 2: unexpected token")]
SUMMARY = {"files": 40, "parsed": 4, "sites": 4, "by_status": {"compliant": 1, "opt-out": 1, "fixable": 1, "manual": 1},
           "errors": 1, "seconds": 0.25, "rev": None, "commit": None}


def test_json_has_exactly_the_documented_shape():
    doc = json.loads(report.render("json", SITES, ERRORS, SUMMARY))
    jsonschema.Draft202012Validator(AUDIT_SCHEMA).validate(doc)
    assert list(doc) == ["version", "sites", "errors", "summary"] and doc["version"] == 1
    assert doc["sites"][0] == {"path": "pkg/a.py", "line": 3, "column": 5, "callee": "sgl_kernel.flash_mla_sparse_fwd",
                               "status": "compliant", "reason": "passes topk_length", "metadata": "lens"}
    assert doc["sites"][1]["metadata"] is None and doc["sites"][1]["status"] == "opt-out"
    assert doc["errors"] == [{"path": "pkg/bad.py", "error": "syntax error at line 2: unexpected token"}]


def test_schema_rejects_what_it_should():
    v = jsonschema.Draft202012Validator(AUDIT_SCHEMA)
    good = report.to_json(SITES, ERRORS, SUMMARY)
    for bad in (
        {**good, "extra": 1},
        {**good, "version": 2},
        {**good, "sites": [{**good["sites"][0], "status": "ok"}]},
        {**good, "sites": [{k: x for k, x in good["sites"][0].items() if k != "metadata"}]},
        {**good, "summary": {**SUMMARY, "by_status": {"compliant": 1}}},
    ):
        assert not v.is_valid(json.loads(json.dumps(bad)))


def test_sarif_validates_against_2_1_0_and_meets_code_scanning_needs():
    doc = json.loads(report.render("sarif", SITES, ERRORS, SUMMARY))
    jsonschema.Draft4Validator(SARIF_SCHEMA, format_checker=jsonschema.FormatChecker()).validate(doc)
    assert doc["version"] == "2.1.0" and len(doc["runs"]) == 1
    run = doc["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert run["tool"]["driver"]["name"] == "topk-migrate"
    results = run["results"]
    assert len(results) == 3  # compliant sites are not results
    for r in results:
        assert rules[r["ruleIndex"]]["id"] == r["ruleId"]
        assert r["message"]["text"]
        loc = r["locations"][0]["physicalLocation"]
        assert loc["region"]["startLine"] >= 1 and loc["region"]["startColumn"] >= 1
        assert not loc["artifactLocation"]["uri"].startswith("/")
    by_rule = {r["properties"]["status"]: r for r in results}
    assert by_rule["fixable"]["level"] == "warning" and by_rule["manual"]["level"] == "error"
    assert by_rule["opt-out"]["suppressions"] == [{"kind": "inSource", "justification": "suppressed by comment: rows differ"}]
    assert by_rule["fixable"]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "pkg/b%20c.py"
    assert run["invocations"][0]["executionSuccessful"] is False
    assert run["invocations"][0]["toolExecutionNotifications"][0]["message"]["text"].startswith("syntax error")


def test_sarif_schema_catches_mistakes():
    v = jsonschema.Draft4Validator(SARIF_SCHEMA)
    doc = report.to_sarif(SITES, [], SUMMARY)
    doc["runs"][0]["results"][0]["level"] = "warn"
    assert not v.is_valid(json.loads(json.dumps(doc)))
    doc = report.to_sarif(SITES, [], SUMMARY)
    doc["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]["startLine"] = 0
    assert not v.is_valid(json.loads(json.dumps(doc)))


def test_sarif_of_a_clean_run():
    doc = report.to_sarif([], [], {**SUMMARY, "errors": 0})
    jsonschema.Draft4Validator(SARIF_SCHEMA).validate(json.loads(json.dumps(doc)))
    assert doc["runs"][0]["results"] == [] and doc["runs"][0]["invocations"][0]["executionSuccessful"] is True


def test_github_annotations_escape_properties_and_data():
    lines = report.render("github", SITES, ERRORS, SUMMARY).splitlines()
    assert lines[0].startswith("::notice file=pkg/a.py,line=9,col=12,title=topk-migrate%3A opt-out::")
    assert lines[1].startswith("::warning file=pkg/b c.py,line=20,col=1,")
    assert lines[2] == ("::error file=pkg/d%2Ce%3Af.py,line=7,col=9,title=topk-migrate%3A manual::"
                        "torch.ops.sgl_kernel.sparse_prefill_fwd: op-level call: 100%25 needs%0Aa human, really")
    assert lines[3] == "::error file=pkg/bad.py,title=topk-migrate%3A error::syntax error at line 2: unexpected token"
    assert len(lines) == 4  # the summary line goes to stderr


def test_text_is_a_table_and_the_summary_a_line_of_its_own():
    out = report.render("text", SITES[:2], [], {**SUMMARY, "errors": 0, "rev": "v0.5.16"}).splitlines()
    assert out[0].split() == ["LOCATION", "STATUS", "CALLEE", "REASON"]
    assert out[1].split()[:3] == ["pkg/a.py:3:5", "compliant", "sgl_kernel.flash_mla_sparse_fwd"]
    assert out[1].index("compliant") == out[2].index("opt-out")  # columns line up
    assert len(out) == 3  # the summary line goes to stderr:
    assert report.summary_line({**SUMMARY, "errors": 0, "rev": "v0.5.16"}) == (
        "40 file(s) scanned at v0.5.16, 4 parsed; 4 site(s): 1 compliant, 1 opt-out, 1 fixable, "
        "1 manual; 0 error(s) in 0.25s")


def test_statistics_count_by_rule_status_and_kind_of_reason():
    sites = [Site(f"pkg/{i}.py", i + 1, 1, "k", Status.MANUAL, f"kernel capability unknown (pass --kernel): pin {i}",
                  rule="pass-topk-length") for i in range(3)]
    sites += [Site("pkg/x.py", 1, 1, "k", Status.FIXABLE, "B._f gains topk_length; callers at lines 3", rule="r2"),
              Site("pkg/y.py", 1, 1, "k", Status.COMPLIANT, "passes topk_length", rule="r2")]
    assert report.statistics(sites).splitlines() == [
        "3  pass-topk-length  manual   kernel capability unknown",
        "1  r2                fixable  B._f gains topk_length"]
    assert report.statistics([]) == ""


@pytest.mark.parametrize("fmt", report.RENDERERS)
def test_every_format_renders_an_empty_run(fmt):
    text = report.render(fmt, [], [], {**SUMMARY, "sites": 0, "errors": 0})
    assert text == "" if fmt in ("text", "github") else text.endswith("}\n")  # lines, or one document
