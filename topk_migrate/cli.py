"""`topk-migrate`: a thin click layer over topk_migrate.api."""
from __future__ import annotations

import atexit
import importlib
import os
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, replace

import click

from . import api, rules
from .escape import fit, lead, listing, printable
from .model import CHECK_STATUSES, Status
from .options import (
    FORMAT_HELP,
    follow_links_option,
    format_option,
    kernel_option,
    lengths_option,
    new_since_option,
    progress_option,
    skipped_note,
    statistics_option,
    validate_kernel,
    verbose_option,
)
from .options import echo as _echo


def _paths(f):
    return click.argument("paths", nargs=-1, required=True, type=click.Path())(f)


class _PathsCommand(click.Command):
    """A command over PATHs where, after `--`, every word is a file: `-` there is the file named `-`
    (given on as `./-`), never standard input. The pre-commit hooks end with `--`, so a committed file
    named `-` is checked like any other; `-` before `--` reads standard input, as ruff and black do."""

    def parse_args(self, ctx, args):
        if "--" in args:
            at = args.index("--") + 1
            args = args[:at] + ["./-" if a == "-" else a for a in args[at:]]
        return super().parse_args(ctx, args)


def _stdin_filename(f):
    return click.option("--stdin-filename", metavar="PATH",
                        help="With `-` (source on standard input): the file it stands for, whose pins and "
                             "[tool.topk-migrate] apply and whose name is reported.")(f)


def _run(paths, stdin_filename, **kw) -> api.Report:
    """api.run over paths, or over standard input when the only path is `-` (as ruff and black read it)."""
    for p in paths:  # only after `--` can one start with "-": an option put there (a hook's args:) is no file
        if p.startswith("-") and p != "-" and not os.path.lexists(p):
            raise click.UsageError(f"{printable(p)}: no such file (after `--` every word is a path: options go "
                                   "before it, or in [tool.topk-migrate] for the pre-commit hooks)")
    if "-" not in paths:
        if stdin_filename is not None:
            raise click.UsageError("--stdin-filename is for `-` (source on standard input)")
        return api.run(paths, **kw)
    if len(paths) > 1:
        raise click.UsageError("`-` reads the source from standard input: give it as the only path")
    kw.pop("follow_links"), kw.pop("note"), kw.pop("progress")
    data = sys.stdin.buffer.read()
    f = api.process_file(stdin_filename or "-", data=data, **kw)
    if f.new_bytes is None and not f.error:
        f.new_bytes = data  # nothing to fix: `apply -` gives back the bytes it read
    return api.Report([f])


def _progress(asked):
    """--progress/--no-progress, else a status line only where stderr is a terminal."""
    return sys.stderr.isatty() if asked is None else asked


def _keep_new(report: api.Report, paths, ref: str, kernel) -> None:
    """--new-since: each file keeps the sites commit `ref` had no match for (baseline.py); the sites of
    `ref` are audit's of that commit, with paths from the working directory as check's own."""
    from .audit import AuditError, audit  # noqa: PLC0415 - on demand: audit and baseline only for --new-since
    from .baseline import only_new  # noqa: PLC0415 - on demand: audit and baseline only for --new-since

    if "-" in paths:
        raise click.UsageError("--new-since compares files with a commit; standard input is none")
    try:
        then = audit(paths, rev=ref, kernel=kernel, relative_to=".")
    except AuditError as e:
        _echo(f"error: --new-since {printable(ref)}: {printable(str(e))}", err=True)
        sys.exit(2)
    now = [s for f in report.files for s in f.sites]
    shown = {id(s): replace(s, path=_shown_path(s.path)) for s in now}  # paths as then's: from here
    kept = {id(s) for s in only_new(list(shown.values()), os.getcwd(), then.sites, then.summary["commit"])}
    new = {i for i, s in shown.items() if id(s) in kept}
    for f in report.files:
        f.sites = [s for s in f.sites if id(s) in new]


def _note_links(paths, what: str) -> None:
    """A symlink named on the command line is the user's choice, but say what it leads to."""
    for p in paths:
        if os.path.islink(p) and os.path.exists(p):
            _echo(f"note: {printable(p)} is a symlink to {printable(os.path.realpath(p))}; {what} the target", err=True)


def _stdout_source(f: api.FileOutcome) -> None:
    """`apply -`: the rewrite (or the bytes read, unchanged) on stdout, as editors expect; nothing on error."""
    if f.error:
        return
    f.written = bool(f.diff)  # what the run rewrote: counted as fixed, exit 1
    out = sys.stdout.buffer
    out.write(f.new_bytes)
    out.flush()


def _diff_text(f: api.FileOutcome, terminal: bool) -> str:
    """The diff, its file names escaped; its body is the file's own code, byte-exact for `git apply`
    into a pipe or file, and on a terminal with every control but line feeds and tabs escaped (a
    comment holding ESC ] 0; ... BEL would retitle the window or erase lines)."""
    a, b = api.diff_labels(f.path)
    head = f"--- {a}\n+++ {b}\n"
    body = f.diff[len(head):] if f.diff.startswith(head) else f.diff
    if terminal:
        body = listing(body)
    return (f"--- {printable(a)}\n+++ {printable(b)}\n" if f.diff.startswith(head) else "") + body


def _shown_path(path: str) -> str:
    """A path as the machine formats give it: relative to the working directory when it lies below it."""
    rel = os.path.relpath(path) if path != "-" else path
    return rel if not rel.startswith(os.pardir) else path


def _after_run(f: api.FileOutcome) -> list:
    """f's sites as the run left them: a fixable site of a file this run rewrote now passes topk_length."""
    done = "fixed: rewritten by this run"
    return [replace(s, path=_shown_path(s.path), **({"status": Status.COMPLIANT, "reason": done}
                                                     if f.written and s.status is Status.FIXABLE else {}))
            for s in f.sites]


def _machine_report(report: api.Report, fmt: str, seconds: float) -> dict:
    """The run in json, sarif or github on stdout (report.py's renderers, as audit's); its summary dict."""
    from . import report as render  # noqa: PLC0415 - on demand: report, for --format or --statistics

    sites = [s for f in report.files for s in _after_run(f)]
    errors = [(_shown_path(f.path), f.error) for f in report.errors]
    summary = {"files": len(report.files), "parsed": sum(f.parsed for f in report.files), "sites": len(sites),
               "by_status": {st.value: sum(s.status is st for s in sites) for st in CHECK_STATUSES},
               "errors": len(errors), "seconds": round(seconds, 3), "rev": None, "commit": None}
    sites.sort(key=lambda s: (s.path, s.line, s.column))
    text = render.render(fmt, sites, errors, summary)
    sys.stdout.write(fit(text, sys.stdout.encoding))
    sys.stdout.flush()
    return summary


@dataclass(frozen=True)
class _Shown:
    """check's and apply's output options: sites on stderr (err), -v, --format, --statistics."""

    err: bool
    verbose: bool = False
    fmt: str = "text"
    statistics: bool = False


def _report(report: api.Report, applied: bool, shown: _Shown, seconds: float = 0.0) -> None:
    err, verbose, fmt, statistics = shown.err, shown.verbose, shown.fmt, shown.statistics
    if fmt != "text":
        _machine_report(report, fmt, seconds)
        _tail(report, applied, verbose)
        return
    if statistics:
        from . import report as render  # noqa: PLC0415 - on demand: report, for --format or --statistics

        table = render.statistics([s for f in report.files for s in _after_run(f)])
        if table:
            _echo(table.rstrip("\n"), err=err)
        for f in report.errors:
            _echo(lead(f"{printable(f.path)}: error: {printable(f.error, keep_newlines=verbose)}"), err=True)
        _tail(report, applied, verbose)
        return
    for f in report.files:
        for s in f.sites:
            if s.status is Status.COMPLIANT:
                continue
            line = s.format()
            if f.written and s.status is Status.FIXABLE:
                line = line.replace(" fixable ", " fixed ", 1)
            _echo(lead(printable(line)), err=err)
            if verbose and s.kernel:
                _echo(printable(f"    kernel: {s.kernel}"), err=err)
    for f in report.errors:
        _echo(lead(f"{printable(f.path)}: error: {printable(f.error, keep_newlines=verbose)}"), err=True)
    _tail(report, applied, verbose)


def _tail(report: api.Report, applied: bool, verbose: bool) -> None:
    """What every format ends with, on stderr: the configuration read (-v) and the summary line."""
    if verbose:
        for source in sorted({f.config for f in report.files if f.config}):
            _echo(f"note: [tool.topk-migrate] read from {printable(source)}", err=True)
    counts = _counts(report)
    written = sum(f.written for f in report.files)
    tail = f"; rewrote {written} file(s)" if applied else ""
    click.echo(f"{len(report.files)} file(s), {len(report.sites)} site(s): {counts}; {len(report.errors)} error(s){tail}", err=True)


def _counts(report: api.Report) -> str:
    """What the run did: sites of the files it rewrote are `fixed`, not still `fixable`."""
    fixed = sum(s.status is Status.FIXABLE for f in report.files if f.written for s in f.sites)
    parts = []
    for st in CHECK_STATUSES:
        n = report.count(st)
        if st is Status.FIXABLE and any(f.written for f in report.files):
            parts.append(f"{fixed} fixed")
            n -= fixed
        parts.append(f"{n} {st.value}")
    return ", ".join(parts)


class _Group(click.Group):
    """Commands owned by other modules are imported only when used, so `check` starts fast; `smoke` is the
    proof a rule declares (RuleInfo.proof), found in the registry, never named here.
    Ctrl-C exits 130 (files are each original or fully rewritten: writes are atomic)."""

    LAZY = {"audit": "topk_migrate.audit:audit_command", "bump": "topk_migrate.bump.command:bump_command"}
    PROOF = "smoke"  # the command that runs the proof of the rule that declares one

    def list_commands(self, ctx):
        proof = [self.PROOF] if rules.proof_rule() is not None else []
        return sorted({*super().list_commands(ctx), *self.LAZY, *proof})

    def get_command(self, ctx, name):
        if name in self.LAZY and name not in self.commands:
            module, attr = self.LAZY[name].split(":")
            self.add_command(getattr(importlib.import_module(module), attr), name)
        elif name == self.PROOF and name not in self.commands and rules.proof_rule() is not None:
            self.add_command(_proof_command(rules.proof_rule()), name)
        return super().get_command(ctx, name)

    def resolve_command(self, ctx, args):
        """Suggest among every command, the lazy ones too (click only knows those already loaded)."""
        try:
            return super().resolve_command(ctx, args)
        except click.exceptions.NoSuchCommand as e:
            raise click.exceptions.NoSuchCommand(e.command_name, possibilities=self.list_commands(ctx),
                                                 ctx=ctx) from None

    def format_commands(self, ctx, formatter):
        """Each command's whole first sentence: click's default cuts it to the terminal's width."""
        rows = []
        for name in self.list_commands(ctx):
            cmd = self.get_command(ctx, name)
            if cmd is not None and not cmd.hidden:
                rows.append((name, cmd.get_short_help_str(limit=200)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            click.echo("interrupted: every file is either original or fully rewritten", err=True)
            ctx.exit(130)


def _proof_command(owner: rules.RuleInfo) -> click.Command:
    """The click command of the rule's proof (imports its module)."""
    command = rules.load_proof(owner.id)
    if not isinstance(command, click.Command):
        raise rules.RuleError(f"{owner.path}: INFO.proof names {owner.proof!r}, which is not a click command")
    return command


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="topk-migrate")
def main() -> None:
    """Pass FlashMLA's per-row topk_length to flash_mla_sparse_fwd where it is missing.

    Exit codes: 0 nothing left to do, 1 rewrote something or sites remain, 2 errors.
    """


def run() -> None:
    """The console script and `python -m topk_migrate`: main(), then an end without the interpreter's
    teardown, which frees every object of the run one at a time (tens of milliseconds after an audit,
    as much as a small run itself; mypy ends the same way). atexit handlers still run; with a thread
    left, the process ends as usual."""
    try:
        main()
        code = 0
    except SystemExit as e:
        code = e.code
    if threading.active_count() > 1:
        sys.exit(code)
    if code is None:
        code = 0
    elif not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except OSError:  # a closed pipe: as the interpreter ends then
        code = 120
    os._exit(code)


@main.command(cls=_PathsCommand)
@_paths
@kernel_option
@lengths_option
@_stdin_filename
@follow_links_option
@format_option()
@statistics_option
@new_since_option
@progress_option
@verbose_option(command="check")
def check(  # noqa: PLR0913  (a click command: one parameter per option)
        paths, kernel, lengths, stdin_filename, follow_links, fmt, statistics, new_since, progress, verbose):
    """List every site that does not pass topk_length; write nothing.

    PATH `-` reads the source from standard input (see --stdin-filename); after `--`
    it is the file named `-`."""
    validate_kernel(kernel)
    _note_links(paths, "check reads")
    t0 = time.perf_counter()
    report = _run(paths, stdin_filename, kernel=kernel, lengths=lengths, verbose=verbose, follow_links=follow_links,
                  note=skipped_note(verbose), progress=_progress(progress))
    if new_since:
        _keep_new(report, paths, new_since, kernel)
    _report(report, applied=False, shown=_Shown(err=False, verbose=verbose, fmt=fmt, statistics=statistics),
            seconds=time.perf_counter() - t0)
    sys.exit(report.exit_code())


@main.command(cls=_PathsCommand)
@_paths
@kernel_option
@lengths_option
@click.option("--diff", is_flag=True, help="Print a unified diff instead of writing.")
@_stdin_filename
@follow_links_option
@format_option("The report of what is left once the run is done (rewritten sites are compliant): " + FORMAT_HELP
               + " Not with --diff or `-`, whose output is code.")
@statistics_option
@progress_option
@verbose_option(command="check")
def apply(  # noqa: PLR0913  (a click command: one parameter per option)
        paths, kernel, lengths, diff, stdin_filename, follow_links, fmt, statistics, progress, verbose):
    """Rewrite fixable sites in place (or show the diff); report the rest.

    PATH `-` (before any `--`) reads the source from standard input and writes the rewritten source
    (the same bytes if nothing is fixed) to standard output; sites and summary go
    to stderr. On an error nothing is written to standard output (exit 2)."""
    validate_kernel(kernel)
    if fmt != "text" and (diff or "-" in paths):
        raise click.UsageError(f"--format {fmt} is for the report; --diff and `-` write code to standard output")
    _note_links(paths, "apply --diff shows" if diff else "apply rewrites")
    report = _run(paths, stdin_filename, kernel=kernel, lengths=lengths, write=not diff, verbose=verbose,
                  follow_links=follow_links, note=skipped_note(verbose), progress=_progress(progress))
    if "-" in paths and not diff:
        _stdout_source(report.files[0])
        _report(report, applied=True, shown=_Shown(err=True, verbose=verbose))
        sys.exit(report.exit_code(wrote=True))
    if diff:
        for f in report.files:
            if f.diff:
                # not click.echo: it strips what it takes for colour codes from a pipe, and git apply needs every byte
                sys.stdout.write(fit(_diff_text(f, sys.stdout.isatty()), sys.stdout.encoding))
        sys.stdout.flush()
    _report(report, applied=not diff, shown=_Shown(err=diff, verbose=verbose, fmt=fmt, statistics=statistics))
    sys.exit(report.exit_code(wrote=not diff))


@main.command("rules")
@click.option("--explain", "explain", metavar="ID",
              help="Print the rule's documentation (what it finds, why, what it rewrites, when it refuses, an "
                   "example before/after), from its own docstrings and examples.")
def rules_command(explain):
    """List the migration rules: id, on or off by default, where they run, what they find."""
    if explain is not None:
        if explain not in rules.ids():
            import difflib  # noqa: PLC0415 - on demand: difflib only for an unknown --explain id

            near = difflib.get_close_matches(explain, rules.ids(), n=1)
            raise click.BadParameter(f"no rule {printable(explain)!r}" + (f" (did you mean {near[0]!r}?)" if near else "")
                                     + f"; the rules: {', '.join(rules.ids())}", param_hint="--explain")
        _echo(_explain(rules, rules.spec(explain)), nl=False)
        return
    rows = [(s.id, f"[{'on' if s.default_enabled else 'off'} by default; "
                   + ", ".join(w for w, on in (("check/apply/audit", s.has_sites), ("bump", s.has_bump)) if on) + "]",
             s.summary) for s in rules.specs()]
    widths = [max(len(r[i]) for r in rows) for i in range(2)]
    for rid, where, summary in rows:
        _echo(f"{rid:<{widths[0]}}  {where:<{widths[1]}}  {summary}")


def _explain_derived(examples, block) -> list:
    """`rules --explain`'s section on --lengths derived: its first fix as a diff, and its refusals."""
    import difflib  # noqa: PLC0415 - on demand: difflib only for `rules --explain`

    fixes = [e for e in examples if e.after is not None]
    if not fixes:
        return []
    diff = difflib.unified_diff(fixes[0].code.splitlines(True), fixes[0].after.splitlines(True), "before", "after")
    out = ["## With --lengths derived", "",
           "Where the fix above is not proven (`manual`), `--lengths derived` (or `lengths = \"derived\"` in "
           "[tool.topk-migrate]) passes lengths computed at the call from its own arguments instead:", ""]
    out += block("".join(diff), "diff")
    refused = [e for e in examples if e.status == "manual"]
    if refused:
        out += ["It still refuses what no lengths make right (the callee may not be the kernel, or no kernel "
                "takes the parameter); one example:", ""] + block(refused[0].code)
    return out


def _explain(rules, s) -> str:
    """`rules --explain`: the rule's docstrings, then its own examples by what it does with them; the
    reasons are what the rule says of each example (run here, where no project pins it)."""
    import difflib  # noqa: PLC0415 - on demand: difflib only for `rules --explain`

    module_doc, examples = rules.documentation(s.id)
    where = ", ".join(w for w, on in (("check/apply/audit", s.has_sites), ("bump", s.has_bump)) if on)
    off = "" if s.default_enabled else f' (enable = ["{s.id}"] in [tool.topk-migrate]; a bump runs it anyway)'
    from . import codemods  # noqa: PLC0415, TID251 - light: not for importing the CLI; the rules' package, for its folder, no rule

    package = os.path.dirname(os.path.abspath(s.path))
    own = os.path.dirname(os.path.abspath(codemods.__file__)) == os.path.dirname(package)
    out = [f"# {s.id}", "", s.summary, "",
           f"{'On' if s.default_enabled else 'Off'} by default{off}; runs in {where}; "
           + (f"codemods/{os.path.basename(package)}/" if own else printable(package)),
           "", "## What it finds, and why", "", s.help, "", "## In detail", "", module_doc, ""]

    def block(code: str, lang: str = "python") -> list:
        return [f"```{lang}", code.rstrip("\n"), "```", ""]

    with tempfile.TemporaryDirectory() as d:
        def reason(e) -> str:
            m = api.migrate_source(e.code, os.path.join(d, "backend.py"), kernel=e.kernel, enable=[s.id],
                                   lengths=e.lengths)
            return next((x.reason for x in m.sites if x.rule == s.id), e.reason)

        mine = [e for e in examples if e.bump is None and e.lengths == "reference"]
        derived = [e for e in examples if e.bump is None and e.lengths != "reference"]
        refusals = list(dict.fromkeys(reason(e) for e in mine if e.status == "manual"))
        left = list(dict.fromkeys(f"`{e.status}`: {reason(e)}" for e in mine if e.status in ("compliant", "opt-out")))
    fixes = [e for e in mine if e.after is not None]
    out += ["## What it rewrites", ""]
    if fixes:
        out += [f"`apply` rewrites the sites `check` reports `fixable` ({len(fixes)} of the rule's examples); "
                f"the first, with --kernel {fixes[0].kernel}:", ""]
        diff = difflib.unified_diff(fixes[0].code.splitlines(True), fixes[0].after.splitlines(True), "before", "after")
        out += block("".join(diff), "diff")
    else:
        out += ["Nothing: `apply` never rewrites this rule's sites." if s.has_sites else
                "Nothing: it runs only in `bump`, which reports and writes nothing.", ""]
    if refusals:
        out += ["## When it refuses", "", "`manual`, left as it is, with the reason (one example each):", ""]
        out += [f"- {r}" for r in refusals] + [""]
        if not fixes:
            out += ["Example:", ""] + block(next(e.code for e in mine if e.status == "manual"))
    if left:
        out += ["## Left alone", ""] + [f"- {r}" for r in left] + [""]
    out += _explain_derived(derived, block)
    bumps = [e for e in examples if e.bump is not None]
    if bumps:
        out += ["## In a bump", ""]
        for e in bumps:
            out += [f"From {e.bump[0]} to {e.bump[1]}: {f'`{e.status}`' if e.status else 'nothing reported'}", ""]
            out += block(e.code)
    return "\n".join(out).rstrip("\n") + "\n"
