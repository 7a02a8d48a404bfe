"""`topk-migrate bump --from OLD --to NEW PATH...`: the click command and its report formats."""
from __future__ import annotations

import json
import re
import sys
from typing import Dict, List, Optional

import click

from topk_migrate.escape import lead, printable
from topk_migrate.options import follow_links_option, output_option, verbose_option

from .bind import FAILING, SEVERITY, notes
from .diff import GUARD_ADDED, GUARD_REMOVED
from .engine import BumpReport, run

FORMATS = ("text", "json", "sarif", "github", "markdown")  # audit's formats, and one for a PR description
RELEASE_HELP = ("NAME==VERSION (a pin: downloaded once, cached; a path of that form is ./NAME==VERSION), "
                "a wheel file, site-packages, a source tree, the wrapper .py or a signature .json")


def _escape(text: str) -> str:
    return printable(text)


def _release(r) -> str:
    """A release as a header names it: its label and, when that is not the same, where it was read
    (a path, or a wheel's name and sha256), so a pin served from elsewhere shows it."""
    return r.label if r.origin == r.label else f"{r.label} [{r.origin}]"


def text_report(r: BumpReport, verbose: bool = False) -> str:
    """Every field escaped (labels and entry points come from the releases, details quote their code); a line
    that starts with a label or a path starts `./` where a CI runner could read it as a command (escape.lead)."""
    out: List[str] = []
    shown = [c for c in r.changes if verbose or c.kind not in (GUARD_ADDED, GUARD_REMOVED)]
    hidden = len(r.changes) - len(shown)
    out.append(lead(_escape(f"{_release(r.old)} -> {_release(r.new)}: {len(r.changes)} signature change(s)"
                       + (f" ({hidden} guard change(s) shown with -v)" if hidden else ""))))
    for c in shown:
        out.append(_escape(f"  {c.kind} {c.entry_point}: {c.detail}"))
    for s in r.sites:
        out.append(lead(_escape(f"{s.path}:{s.line}:{s.column} {s.status} {s.callee} \u2014 {s.reason}")))
        if s.fix:
            out.append(_escape(f"    fix: {s.fix}"))
        if verbose:
            out += [_escape(f"    note: {n}") for n in notes(s)]
    return "\n".join(out) + "\n"


def json_report(r: BumpReport) -> str:
    data = {
        "version": 1,
        "from": {"release": r.old.label, "origin": r.old.origin, "sha256": r.old.sha256},
        "to": {"release": r.new.label, "origin": r.new.origin, "sha256": r.new.sha256},
        "changes": [c.to_dict() for c in r.changes],
        "sites": [_site_json(s) for s in r.sites],
        "errors": [{"path": p, "error": e} for p, e in r.errors],
        "summary": {"files": r.files, "sites": len(r.sites), **r.counts(), "errors": len(r.errors)},
    }
    return json.dumps(data, indent=2) + "\n"


def _site_json(s) -> dict:
    return {"path": s.path, "line": s.line, "column": s.column, "callee": s.callee, "entry_point": s.entry_point,
            "verdict": s.status.value, "rule": s.rule, "reason": s.reason, "fix": s.fix, "notes": notes(s),
            "findings": [dict(f.__dict__) for f in s.findings]}


_BACKTICKS = re.compile("`+")
# Outside code: what markdown (GitHub's) reads as markup inline, escaped. `<` and `&` as entities
# (no raw HTML, no entity), the rest with a backslash.
_MARKUP = re.compile(r"[\\`*_\[\]~|<>&]")
_ENTITIES = {"<": "&lt;", ">": "&gt;", "&": "&amp;"}


def _plain(text: str) -> str:
    return _MARKUP.sub(lambda m: _ENTITIES.get(m.group(), "\\" + m.group()), text)


def _code(text: str, cell: bool = True) -> str:
    """`text` as one inline code span that nothing in it can close: control characters escaped, a fence
    of more backticks than its longest run, padded when it starts or ends with a backtick or space
    (markdown strips one space each side); in a table `|` is escaped, which GFM splits cells on even in code."""
    text = _escape(text)
    if cell:
        text = text.replace("|", "\\|")
    if not text:
        return ""
    fence = "`" * (max((len(m.group()) for m in _BACKTICKS.finditer(text)), default=0) + 1)
    pad = " " if text[0] in "` " or text[-1] in "` " else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _md(text: str, cell: bool = True) -> str:
    """Free text that quotes code in backticks (a reason, a change's detail) as markdown that shows it and
    nothing else: each span markdown would read as code (a run of backticks closed by the next run of the
    same length) re-fenced by _code, everything between with its markup escaped (an unclosed backtick too)."""
    text = _escape(text)
    runs = list(_BACKTICKS.finditer(text))
    closer: List[Optional[int]] = [None] * len(runs)  # the next run of the same length, for each
    after: Dict[int, int] = {}
    for i in range(len(runs) - 1, -1, -1):
        n = len(runs[i].group())
        closer[i] = after.get(n)
        after[n] = i
    out, pos, i = [], 0, 0
    while i < len(runs):
        j = closer[i]
        if j is None:
            i += 1
            continue
        out.append(_plain(text[pos:runs[i].start()]))
        out.append(_code(text[runs[i].end():runs[j].start()], cell))
        pos, i = runs[j].end(), j + 1
    out.append(_plain(text[pos:]))
    return "".join(out)


def markdown_report(r: BumpReport) -> str:
    """For a pull-request description: the signature changes, then a verdict per call site. What comes
    from the releases or the fork (labels, names, paths, quoted code) is escaped so that it stays text."""
    out = [f"## FlashMLA bump: {_code(r.old.label, False)} \u2192 {_code(r.new.label, False)}", ""]
    if r.old.origin != r.old.label or r.new.origin != r.new.label:
        out += [f"Read from {_code(r.old.origin, False)} and {_code(r.new.origin, False)}.", ""]
    counts = r.counts()
    out.append(", ".join(f"**{counts[v]} {v}**" if v in FAILING and counts[v] else f"{counts[v]} {v}"
                         for v in SEVERITY) + f" across {len(r.sites)} call site(s) in {r.files} file(s)"
               + (f"; {len(r.errors)} error(s)" if r.errors else ""))
    out += ["", "### Signature changes", ""]
    main = [c for c in r.changes if c.kind not in (GUARD_ADDED, GUARD_REMOVED)]
    guards = [c for c in r.changes if c.kind in (GUARD_ADDED, GUARD_REMOVED)]
    if main:
        out += ["| entry point | change | parameter | detail |", "|---|---|---|---|"]
        out += [f"| {_code(c.entry_point)} | {_plain(c.kind)} | {_code(c.param or '')} | {_md(c.detail)} |"
                for c in main]
    else:
        out.append("No parameter or entry-point change.")
    if guards:
        out += ["", f"<details><summary>{len(guards)} assert/raise change(s)</summary>", "",
                "| entry point | change | parameters | guard |", "|---|---|---|---|"]
        out += [f"| {_code(c.entry_point)} | {_plain(c.kind)} | {_md(c.param or '')} | {_code(c.detail)} |"
                for c in guards]
        out += ["", "</details>"]
    out += ["", "### Call sites", ""]
    if r.sites:
        out += ["| verdict | site | entry point | reason | fix |", "|---|---|---|---|---|"]
        for s in sorted(r.sites, key=lambda s: (SEVERITY.index(s.status), s.path, s.line)):
            out.append(f"| {s.status} | {_code(f'{s.path}:{s.line}')} | {_code(s.entry_point or '')} | "
                       f"{_md(s.reason)} | {_code(s.fix or '')} |")
    else:
        out.append("No call site of the kernel's entry points.")
    for p, e in r.errors:
        out.append(f"- error: {_code(p, False)}: {_md(e, False)}")
    return "\n".join(out) + "\n"


def sarif_report(r: BumpReport) -> str:
    """audit's SARIF (topk_migrate/report.py), with the bump rules and the two releases."""
    from topk_migrate import report  # noqa: PLC0415 - light: not for --help

    doc = report.to_sarif(r.sites, r.errors, {"files": r.files, **r.counts()}, hook="bump")
    doc["runs"][0]["properties"].update({"from": r.old.label, "to": r.new.label})
    return report.dumps(doc)


def github_report(r: BumpReport) -> str:
    from topk_migrate import report  # noqa: PLC0415 - light: not for --help

    return "\n".join(report.annotations(r.sites, r.errors, "bump")) + "\n"


@click.command("bump")
@click.option("--from", "old", required=True, metavar="RELEASE", help="The kernel release pinned now: " + RELEASE_HELP)
@click.option("--to", "new", required=True, metavar="RELEASE", help="The release to move to (same forms).")
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True)
@output_option()
@click.option("--rev", metavar="REV", help="Read PATHs as they are in this git commit (as `audit --rev`), not on disk.")
@follow_links_option
@verbose_option
@click.option("--quiet", "-q", is_flag=True,
              help="No line on stderr before a release is downloaded, and no progress line while it is.")
def bump_command(  # noqa: PLR0913  (a click command: one parameter per option)
        old, new, paths, fmt, output, rev, follow_links, verbose, quiet):
    """What moving the kernel from one release to another does to every call site.

    Verdicts: breaks (TypeError), rebinds (a positional argument lands elsewhere), manual (cannot be
    read statically, or refused on every path), changes-default, changes-callee (the same arguments
    run other ops), opportunity (a new optional parameter not passed, that applies on the call's
    paths), not-applicable (one the release refuses there), unchanged.
    Exit codes: 0 nothing breaks or rebinds, 1 something does, 2 errors.
    """
    from .sources import SourceError, load  # noqa: PLC0415 - light: not for --help

    try:
        old_release, new_release = load(old, quiet), load(new, quiet)
    except SourceError as e:
        click.echo(f"error: {_escape(str(e))}", err=True)
        sys.exit(2)
    report = run(paths, old_release, new_release, follow_links=follow_links, rev=rev)
    text = {"text": lambda: text_report(report, verbose), "json": lambda: json_report(report),
            "markdown": lambda: markdown_report(report), "sarif": lambda: sarif_report(report),
            "github": lambda: github_report(report)}[fmt]()
    if output:
        from ..output import write_output  # noqa: PLC0415 - light: not for --help

        try:
            write_output(output, text)
        except OSError as e:
            click.echo(f"error: cannot write the report to {_escape(output)}: {(e.strerror or str(e)).lower()}", err=True)
            sys.exit(2)
    else:
        click.echo(text, nl=False)
    for p, e in report.errors:
        click.echo(f"{_escape(p)}: error: {_escape(e)}", err=True)
    c = report.counts()
    click.echo(f"{report.files} file(s), {len(report.sites)} site(s): "
               + ", ".join(f"{c[v]} {v}" for v in SEVERITY) + f"; {len(report.errors)} error(s)", err=True)
    sys.exit(report.exit_code())
