"""`topk-migrate audit`: the click command over audit()."""
from __future__ import annotations

import os
import sys
import time

import click

from .. import project as project_mod
from ..escape import fit, printable
from ..options import (
    follow_links_option,
    kernel_option,
    new_since_option,
    output_option,
    skipped_note,
    statistics_option,
    validate_kernel,
    verbose_option,
)
from .results import AuditError, Tally, display_root
from .run import SinceOptions, audit, only_new_since, result_of

FORMATS = ("text", "json", "sarif", "github")


# -- the command ------------------------------------------------------------


@click.command("audit")
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--rev", metavar="REF", help="Audit this git commit (tag, branch, sha) without checking it out.")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True,
              help="text table, json (schemas/audit-v1.schema.json), sarif 2.1.0, or github annotations.")
@click.option("--exclude", multiple=True, metavar="PATTERN",
              help="Skip paths matching this gitignore-style pattern, relative to each PATH (repeatable).")
@click.option("--no-gitignore", is_flag=True, help="Walk paths that .gitignore files exclude.")
@kernel_option
@click.option("-j", "--jobs", type=click.IntRange(1), help="Worker processes for parsing [default: CPU count].")
@click.option("--progress/--no-progress", default=None, help="Progress line on stderr [default: when stderr is a terminal].")
@follow_links_option
@statistics_option
@new_since_option
@verbose_option(command="audit")
@output_option(default="-", allow_dash=True)
@click.option("--relative-to", metavar="DIR", type=click.Path(file_okay=False),
              help="Report paths relative to DIR (the GitHub Action gives the workspace's top, as SARIF and "
                   "annotations want them) [default: the working directory where the audited directory lies "
                   "under it, as check names paths; else the directory audited; with --rev, the directory audited].")
def audit_command(  # noqa: PLR0913  (a click command: one parameter per option)
        paths, rev, fmt, exclude, no_gitignore, kernel, jobs, progress, follow_links, statistics, new_since,
        verbose, output, relative_to):
    """Classify every kernel call site under PATHs (default: .), fast.

    Files that cannot hold a call are never parsed. Hidden directories,
    .gitignore'd paths, symlinked directories and links that lead outside a
    PATH are skipped when walking; files named explicitly are always read.
    Reported paths are relative to the working directory where what is audited lies under it (as check
    names them), else to the directory given (or the common parent of several PATHs; with --rev, always),
    or to --relative-to DIR. With -o the report file is replaced only once the run
    is done, and the summary goes to stderr.

    Exit codes: 0 nothing left to do, 1 fixable or manual sites remain, 2 errors.
    """
    from .. import report  # noqa: PLC0415 - light: not for --help
    from ..output import write_output  # noqa: PLC0415 - light: not for --help

    validate_kernel(kernel)
    if new_since and rev:
        raise click.UsageError("--new-since compares the work tree with REF; it does not go with --rev")
    paths = paths or (".",)
    if progress is None:
        progress = sys.stderr.isatty()
    if relative_to is None and not rev and project_mod.inside(display_root(paths), os.getcwd()):
        relative_to = os.curdir  # as check and ruff name them: `audit python` lists python/sglang/...
    try:
        result = audit(paths, rev=rev, exclude=exclude, kernel=kernel, jobs=jobs, gitignore=not no_gitignore,
                       progress=progress, follow_links=follow_links, note=skipped_note(verbose),
                       relative_to=relative_to)
        if new_since:
            result = only_new_since(result, paths, new_since, SinceOptions(exclude, kernel, jobs, not no_gitignore,
                                                                           relative_to))
    except AuditError as e:
        click.echo(fit(f"error: {printable(str(e))}", sys.stderr.encoding), err=True)
        if output == "-":
            sys.exit(2)
        # a report that says the run failed, not none: a fork must not blank its own code scan
        top = os.path.abspath(relative_to or paths[0])
        result = result_of([], Tally(errors=[(paths[0], str(e))]), top if os.path.isdir(top) else os.path.dirname(top),
                         rev, None, time.perf_counter())
    if statistics and fmt == "text":
        text = report.statistics(result.sites) + report.render_text([], result.errors, result.summary)
    else:
        text = report.render(fmt, result.sites, result.errors, result.summary)
    if output == "-":
        sys.stdout.write(fit(text, sys.stdout.encoding))
        sys.stdout.flush()
        click.echo(fit(report.summary_line(result.summary), sys.stderr.encoding), err=True)
    else:
        try:
            write_output(output, text)
        except OSError as e:
            click.echo(fit(f"error: cannot write the report to {printable(output)}: "
                           f"{(e.strerror or str(e)).lower()}", sys.stderr.encoding), err=True)
            sys.exit(2)
        where = f"{report.summary_line(result.summary)}; report written to {printable(output)}"
        click.echo(fit(where, sys.stderr.encoding), err=True)
    sys.exit(result.exit_code())
