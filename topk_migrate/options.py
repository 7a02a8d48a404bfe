"""The options several commands share (`--kernel`, `-v`, `--follow-links`, `-o`), declared once with one
help text, and what the commands do with them the same way (validate --kernel, say what a walk skipped)."""
from __future__ import annotations

import sys

import click

from .discover import NO_PYTHON_FILES
from .escape import fit, lead, printable
from .rules import LENGTHS

KERNEL_HELP = "Kernel the calls resolve to, as NAME==VERSION (e.g. sglang-kernel==0.4.6); overrides pins."
VERBOSE_HELP = ("Say more. check/apply: the kernel decision each site rests on (and where it came from), what a "
                "directory walk skipped and why, tracebacks for unexpected errors; audit: what a walk skipped and "
                "why (on stderr); bump: assert/raise changes and per-site notes.")
FOLLOW_LINKS_HELP = "Walk into symlinked directories (only those inside the PATH given; each once)."
OUTPUT_HELP = "Write the report to this file (replaced whole once the run is done) instead of stdout."


def kernel_option(f):
    return click.option("--kernel", metavar="NAME==VERSION", help=KERNEL_HELP)(f)


LENGTHS_HELP = ("Where the lengths passed come from. reference: the clipped seqlens the program already holds, "
                "only where they are proven right (else manual). derived: where they are not, each row's length "
                "derived at the call from the call's own arguments (right for any index layout, at a cost per call: "
                "`topk-migrate rules --explain RULE` says what each rule derives). derived-everywhere: the derived "
                "lengths at every site, the reference fix's too (for a fork whose graph runner or callers the "
                "analysis cannot read: docs/soundness.md, known gaps). Default: [tool.topk-migrate] lengths, else "
                "reference.")


def lengths_option(f):
    return click.option("--lengths", type=click.Choice(list(LENGTHS)), default=None, help=LENGTHS_HELP)(f)


VERBOSE_FOR = {
    "check": "Say more: the kernel decision each site rests on and where it came from, the [tool.topk-migrate] "
             "read, what a directory walk skipped and why, tracebacks for unexpected errors.",
    "audit": "Say more, on stderr: what a walk skipped and why.",
}


def verbose_option(f=None, *, command: str = ""):
    """-v, its help the command's own (VERBOSE_FOR), else the text that names every command's."""
    def decorate(g):
        return click.option("--verbose", "-v", is_flag=True, help=VERBOSE_FOR.get(command, VERBOSE_HELP))(g)
    return decorate(f) if f is not None else decorate


def follow_links_option(f):
    return click.option("--follow-links", is_flag=True, help=FOLLOW_LINKS_HELP)(f)


def output_option(default=None, allow_dash: bool = False):
    """-o/--output; `default="-", allow_dash=True`: `-` (the default) is stdout (audit)."""
    def decorate(f):
        return click.option("-o", "--output", type=click.Path(dir_okay=False, allow_dash=allow_dash),
                            default=default, help=OUTPUT_HELP)(f)
    return decorate


SITE_FORMATS = ("text", "json", "sarif", "github")  # check, apply and audit: one set of renderers (report.py)
FORMAT_HELP = ("text lines, json (schemas/audit-v1.schema.json), sarif 2.1.0, or github annotations; the summary "
               "goes to stderr.")
STATISTICS_HELP = "Instead of each site, count them by rule, status and kind of reason, the most frequent first."


NEW_SINCE_HELP = ("Report only the sites new or changed since git commit REF (same rule, callee, status and code on "
                  "the call's line; line numbers and file names play no part, so moved code is not new).")


def new_since_option(f):
    return click.option("--new-since", metavar="REF", help=NEW_SINCE_HELP)(f)


def progress_option(f):
    return click.option("--progress/--no-progress", default=None,
                        help="A status line on stderr while the run goes on [default: when stderr is a terminal].")(f)


def format_option(help_text: str = FORMAT_HELP):
    return click.option("--format", "fmt", type=click.Choice(SITE_FORMATS), default="text", show_default=True,
                        help=help_text)


def statistics_option(f):
    return click.option("--statistics", is_flag=True, help=STATISTICS_HELP)(f)


def echo(text: str, err: bool = False, nl: bool = True) -> None:
    """click.echo, never failing on a stream that cannot encode the text (PYTHONIOENCODING=latin-1)."""
    click.echo(fit(text, getattr(sys.stderr if err else sys.stdout, "encoding", None)), err=err, nl=nl)


def skipped_note(verbose: bool):
    """What a walk leaves out (links outside the tree, symlinked directories...): shown with -v.
    A directory given with no Python file is always warned about (a wrong path in CI)."""
    def note(path, why):
        if why == NO_PYTHON_FILES:
            echo(f"warning: {printable(path)}: {why}", err=True)
        elif verbose:
            echo(lead(f"{printable(path)}: skipped: {printable(why)}"), err=True)
    return note


def validate_kernel(kernel) -> None:
    """--kernel must parse as NAME==VERSION (a usage error, exit 2, otherwise)."""
    if kernel:
        from .kernels import parse_pin  # noqa: PLC0415 - on demand: kernels (packaging) only for --kernel

        try:
            parse_pin(kernel, "--kernel")
        except ValueError as e:
            raise click.BadParameter(str(e), param_hint="--kernel") from None
