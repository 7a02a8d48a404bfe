"""Renderers for audit results: a text table, stable JSON, SARIF 2.1.0, GitHub annotations.

Each takes the sites, the (path, error) pairs and the summary dict of one run
and returns the whole report as a string. Only the standard library is used.
The JSON shape is documented by schemas/audit-v1.schema.json; change it only
together with its "version".

File names come from the tree audited, which may be a stranger's fork: in the
human-readable formats (text, github) every control character, bidi override and
undecodable byte is shown as a backslash escape (`printable`), so a name can
neither drive the terminal or CI log nor hide a line. JSON and SARIF encode
control characters themselves; a byte that is not UTF-8 (a name decoded with
surrogateescape) is written as the text `\\xNN` there too.
"""
from __future__ import annotations

import hashlib
import json
import os
from typing import Callable, Dict, List, Sequence, Tuple
from urllib.parse import quote

from . import rules
from .escape import SURROGATE, escape, lead, printable
from .model import CHECK_STATUSES, Site, Status

Errors = Sequence[Tuple[str, str]]
JSON_VERSION = 1
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"



def summary_line(summary: dict) -> str:
    by = summary["by_status"]
    counts = ", ".join(f"{by.get(st.value, 0)} {st.value}" for st in CHECK_STATUSES)
    at = f" at {printable(summary['rev'])}" if summary.get("rev") else ""
    return (f"{summary['files']} file(s) scanned{at}, {summary['parsed']} parsed; "
            f"{summary['sites']} site(s): {counts}; {summary['errors']} error(s) in {summary['seconds']:.2f}s")


def render_text(sites: Sequence[Site], errors: Errors, summary: dict) -> str:
    rows = [("LOCATION", "STATUS", "CALLEE", "REASON")]
    rows += [(lead(printable(f"{s.path}:{s.line}:{s.column}")), s.status.value, printable(s.callee),
              printable(s.reason + (f" [{s.rule}]" if s.rule else ""))) for s in sites]
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    out = []
    if sites:
        out += [f"{a:<{widths[0]}}  {b:<{widths[1]}}  {c:<{widths[2]}}  {d}".rstrip() for a, b, c, d in rows]
    out += [lead(f"{printable(p)}: error: {printable(e)}") for p, e in errors]
    return "".join(line + "\n" for line in out)  # the summary line goes to stderr (summary_line)


def to_json(sites: Sequence[Site], errors: Errors, summary: dict) -> dict:
    keys = ("path", "line", "column", "callee", "status", "reason", "metadata")

    def site(s: Site) -> dict:
        d = s.to_dict()
        out = {k: d[k] for k in keys}
        if s.rule:
            out["rule"] = s.rule
        if s.kernel:  # optional: the kernel decision the gate used, and where it came from
            out["kernel"] = s.kernel
        return out

    return {
        "version": JSON_VERSION,
        "sites": [site(s) for s in sites],
        "errors": [{"path": p, "error": e} for p, e in errors],
        "summary": summary,
    }


def dumps(doc: dict) -> str:
    # A surrogate can only sit inside a JSON string: it becomes the text \xNN there.
    text = json.dumps(doc, indent=2, ensure_ascii=False)
    return SURROGATE.sub(lambda m: "\\" + escape(m), text) + "\n"


def render_json(sites: Sequence[Site], errors: Errors, summary: dict) -> str:
    return dumps(to_json(sites, errors, summary))


# -- SARIF --------------------------------------------------------------------

# The SARIF level of each status that asks something of a person; compliant and unchanged sites are
# not results. check/apply/audit and bump share them (MANUAL is both's).
LEVELS: Dict[Status, str] = {
    Status.FIXABLE: "warning", Status.MANUAL: "error", Status.OPT_OUT: "note",
    Status.BREAKS: "error", Status.REBINDS: "error", Status.CHANGES_DEFAULT: "warning", Status.CHANGES_CALLEE: "warning",
    Status.OPPORTUNITY: "note",
}  # not-applicable, like unchanged, asks nothing: not a result
WHAT: Dict[Status, str] = {
    Status.FIXABLE: "`topk-migrate apply` can fix it",
    Status.MANUAL: "needs a manual fix; the message says why",
    Status.OPT_OUT: "opted out (the message says how)",
    Status.BREAKS: "a TypeError under the new release",
    Status.REBINDS: "an argument binds another parameter under the new release",
    Status.CHANGES_DEFAULT: "a default it relies on changes in the new release",
    Status.CHANGES_CALLEE: "the new release runs other ops or functions for the same arguments",
    Status.OPPORTUNITY: "the new release has a parameter it does not pass",
}
GITHUB = {"error": "error", "warning": "warning", "note": "notice"}  # SARIF level -> workflow command


def _tool_version() -> str:
    try:
        from importlib.metadata import version  # noqa: PLC0415 - on demand: importlib.metadata (~6 ms), for SARIF's version

        return version("topk-migrate")
    except Exception:
        return "0+unknown"


def _location(path: str, line: int = 0, column: int = 0) -> dict:
    raw = path.replace(os.sep, "/").encode("utf-8", "surrogateescape")  # a URI carries the name's very bytes
    loc: dict = {"artifactLocation": {"uri": quote(raw), "uriBaseId": "%SRCROOT%"}}
    if line:
        loc["region"] = {"startLine": line, "startColumn": max(column, 1)}
    return {"physicalLocation": loc}


def _sarif_rules(sites: Sequence[Site], hook: str = "sites") -> List[dict]:
    """One SARIF rule per migration rule (topk_migrate/rules.py) with that `hook` (sites: check, apply and
    audit; bump), its id the rule's id; bump's `signature-<status>` ids are the signature diff's own."""
    known = {r.id: r for r in rules.specs() if getattr(r, f"has_{hook}")}
    out = []
    for rid in sorted(set(known) | {s.rule for s in sites if s.rule and s.status in LEVELS}):  # those of results
        r = known.get(rid)
        if r:
            summary, help_text = r.summary, " ".join(r.help.split())
        elif rid.startswith("signature-"):
            summary = help_text = f"The signature diff says `{rid[len('signature-'):]}` for this call."
        else:
            summary = help_text = rid
        out.append({
            "id": rid, "name": "".join(w.capitalize() for w in rid.split("-")),
            "shortDescription": {"text": summary},
            "fullDescription": {"text": help_text},
            "help": {"text": help_text + (" Suppress one call with `# topk-migrate: ignore[" + rid + "] <why>`."
                                          if r else "")},
            "defaultConfiguration": {"level": "warning", "enabled": bool(r.default_enabled) if r else True},
            "properties": {"tags": list(r.tags if r else ()) + (["bump"] if hook == "bump" else [])},
        })
    return out


def to_sarif(sites: Sequence[Site], errors: Errors, summary: dict, hook: str = "sites") -> dict:
    rules = _sarif_rules(sites, hook)
    order = [r["id"] for r in rules]
    results = []
    for s in sites:
        if s.status not in LEVELS:
            continue
        rid = s.rule or order[0]
        res = {
            "ruleId": rid, "ruleIndex": order.index(rid), "level": LEVELS[s.status],
            "message": {"text": f"{s.callee}: {s.status.value}, {WHAT[s.status]}: {s.reason}"
                                + (f" (fix: {s.fix})" if s.fix else "")},
            "locations": [_location(s.path, s.line, s.column)],
            "partialFingerprints": {
                "topkMigrateSite/v1": hashlib.sha256(f"{s.path}\0{s.callee}\0{s.line}".encode("utf-8", "surrogateescape")).hexdigest()},
            "properties": {"status": s.status.value, "callee": s.callee, "metadata": s.metadata,
                           **({"entry_point": s.entry_point, "fix": s.fix} if s.entry_point else {})},
        }
        if s.status is Status.OPT_OUT:
            res["suppressions"] = [{"kind": "inSource", "justification": s.reason}]
        results.append(res)
    notes = [{"level": "error", "message": {"text": e}, "locations": [_location(p)]} for p, e in errors]
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "topk-migrate", "version": _tool_version(), "rules": rules}},
            "columnKind": "unicodeCodePoints",
            "results": results,
            "invocations": [{"executionSuccessful": not errors, "toolExecutionNotifications": notes}],
            "properties": {"summary": summary},
        }],
    }


def render_sarif(sites: Sequence[Site], errors: Errors, summary: dict) -> str:
    return dumps(to_sarif(sites, errors, summary))


# -- GitHub workflow commands -------------------------------------------------------


def _data(s: str) -> str:
    """A message: line breaks kept as GitHub's %0A, every other control escaped."""
    return printable(s, keep_newlines=True).replace("%", "%25").replace("\n", "%0A")


def _prop(s: str) -> str:
    return printable(s).replace("%", "%25").replace(":", "%3A").replace(",", "%2C")


def annotations(sites: Sequence[Site], errors: Errors, command: str = "") -> List[str]:
    """`::warning file=...` lines GitHub Actions turns into annotations on the diff."""
    out: List[str] = []
    for s in sites:
        if s.status in LEVELS:
            title = f"topk-migrate{command and ' ' + command} {s.rule}: {s.status.value}" if s.rule \
                else f"topk-migrate: {s.status.value}"
            props = f"file={_prop(s.path)},line={s.line},col={s.column},title={_prop(title)}"
            out.append(f"::{GITHUB[LEVELS[s.status]]} {props}::{_data(f'{s.callee}: {s.reason}')}")
    out += [f"::error file={_prop(p)},title=topk-migrate%3A error::{_data(e)}" for p, e in errors]
    return out


def render_github(sites: Sequence[Site], errors: Errors, summary: dict) -> str:
    return "".join(line + "\n" for line in annotations(sites, errors))


RENDERERS: Dict[str, Callable[[Sequence[Site], Errors, dict], str]] = {
    "text": render_text, "json": render_json, "sarif": render_sarif, "github": render_github,
}


def render(fmt: str, sites: Sequence[Site], errors: Errors, summary: dict) -> str:
    return RENDERERS[fmt](sites, errors, summary)


def reason_kind(reason: str) -> str:
    """What a reason says, without the names and lines of its site: its words up to the first `(`, `:` or `;`
    (`kernel capability unknown (pass --kernel): no pin ...` is `kernel capability unknown`)."""
    cut = min((i for i in (reason.find(c) for c in "(:;") if i > 0), default=len(reason))
    return " ".join(reason[:cut].split()) or reason


def statistics(sites: Sequence[Site]) -> str:
    """`--statistics`: one row per rule, status and kind of reason, the most frequent first (as ruff's)."""
    counts: Dict[Tuple[str, str, str], int] = {}
    for s in sites:
        if s.status in LEVELS:
            key = (s.rule or "", s.status.value, reason_kind(s.reason))
            counts[key] = counts.get(key, 0) + 1
    rows = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    width = max((len(str(n)) for _, n in rows), default=1)
    rule_w = max((len(k[0]) for k, _ in rows), default=0)
    status_w = max((len(k[1]) for k, _ in rows), default=0)
    return "".join(f"{n:>{width}}  {rule:<{rule_w}}  {status:<{status_w}}  {printable(kind)}\n"
                   for (rule, status, kind), n in rows)
