"""The click command `topk-migrate smoke`; torch is imported only when it runs."""
from __future__ import annotations

import sys

import click

from topk_migrate.discover import read_regular
from topk_migrate.escape import fit, lead, printable
from topk_migrate.model import InputError


@click.command("smoke", short_help="Patch PATH (default: the bundled example backend) and run both versions against the kernel.")
@click.argument("path", required=False, type=click.Path(exists=True, dir_okay=False))
@click.option("--function", "function", metavar="QUALNAME", help="Helper that calls the kernel, e.g. Backend._forward_flashmla_sparse (default: the only caller).")
@click.option("--device", type=click.Choice(["cuda", "cpu"]), default="cuda", show_default=True, help="cuda: the real sgl_kernel; cpu: the torch reference on small shapes.")
@click.option("--kernel", "kernel_decl", metavar="NAME==VERSION", help="The kernel the rewrite assumes, as for check and apply "
              "(e.g. flash_mla:topk_length); default: [tool.topk-migrate] kernel, else the installed sgl_kernel's version.")
@click.option("--json", "json_path", type=click.Path(dir_okay=False, writable=True), help="Also write the report as JSON.")
@click.option("--emitter-fault", type=click.Choice(["hole", "tail"]), help="Negative control: break the top-k emitters' output "
              "(hole: an interior -1; tail: a valid index after the count); the smoke must then fail.")
@click.option("--lengths", type=click.Choice(["reference", "derived"]), default="reference", show_default=True,
              help="The fix on trial. reference: the clipped seqlens through the helper; derived: each row's length derived "
              "at every kernel call from its own indices (apply --lengths derived's shape), also on indices that are not "
              "front-packed; the reference fix's contract checks are then skipped, each saying why.")
def smoke_command(path, function, device, kernel_decl, json_path, emitter_fault, lengths):
    """Patch PATH (default: the bundled example backend) with the codemod and
    run both versions end to end against the kernel. Exit 0 only if every
    check passed.

    This RUNS CODE FROM PATH: the helper that calls the kernel and the
    module-level statements it needs (right-hand sides of assignments
    included), and, when PATH sets TOPK_MIGRATE_SMOKE, the whole module with
    its imports, twice. Smoke only your own files, or a fork's inside a
    sandbox; check, apply, audit and bump never run a file's code."""
    if path is not None:
        error = _unreadable(path)
        if error:
            click.echo(error, err=True)
            sys.exit(2)
    if kernel_decl is not None:
        from topk_migrate.kernels import parse_pin  # noqa: PLC0415 - `topk-migrate --help` imports this module: kernels (packaging) only once the smoke runs

        try:
            parse_pin(kernel_decl, "--kernel")
        except ValueError as e:
            click.echo(f"--kernel: {e}", err=True)
            sys.exit(2)
    try:
        import torch  # noqa: F401, PLC0415 - probes the optional [smoke] extra: the CLI and `smoke --help` never import torch
    except ImportError:
        click.echo("topk-migrate smoke needs torch: pip install 'topk-migrate[smoke]'", err=True)
        sys.exit(2)
    from .runner import run_smoke  # noqa: PLC0415 - the runner imports torch: only once the smoke runs

    sys.exit(run_smoke(path=path, function=function, device=device, json_path=json_path, echo=click.echo,
                       emitter_fault=emitter_fault, kernel_decl=kernel_decl, lengths=lengths))


def _unreadable(path: str):
    """`path: error: cause`, the line `check` gives for a file it cannot read as Python, or None.

    Checked before torch is imported, so bad input never ends in a traceback."""
    from topk_migrate.files import decode_source, input_error, max_bytes, syntax_error_message  # noqa: PLC0415 - `topk-migrate --help` imports this module: files (hashlib) only once the smoke runs
    from topk_migrate.guard import parse_checked  # noqa: PLC0415 - `topk-migrate --help` imports this module: guard (pickle) only once the smoke runs

    try:
        try:
            raw, st = read_regular(path, max_bytes())
        except OSError as e:
            raise input_error(e, path) from None
        text = decode_source(path, raw, st).text
        parse_checked(text, path)
        cause = syntax_error_message(text, path)
    except InputError as e:
        cause = str(e)
    if cause is None:
        return None
    return fit(lead(f"{printable(path)}: error: {printable(cause)}"), getattr(sys.stderr, "encoding", None))
