"""The click command `topk-migrate smoke`; torch is imported only when it runs."""
from __future__ import annotations

import sys

import click


@click.command("smoke")
@click.argument("path", required=False, type=click.Path(exists=True, dir_okay=False))
@click.option("--function", "function", metavar="QUALNAME", help="Helper that calls the kernel, e.g. Backend._forward_flashmla_sparse (default: the only caller).")
@click.option("--device", type=click.Choice(["cuda", "cpu"]), default="cuda", show_default=True, help="cuda: the real sgl_kernel; cpu: the torch reference on small shapes.")
@click.option("--json", "json_path", type=click.Path(dir_okay=False, writable=True), help="Also write the report as JSON.")
@click.option("--emitter-fault", type=click.Choice(["hole", "tail"]), help="Negative control: break the top-k emitters' output "
              "(hole: an interior -1; tail: a valid index after the count); the smoke must then fail.")
def smoke_command(path, function, device, json_path, emitter_fault):
    """Patch PATH (default: the bundled example backend) with the codemod and
    run both versions end to end against the kernel. Exit 0 only if every
    check passed."""
    try:
        import torch  # noqa: F401
    except ImportError:
        click.echo("topk-migrate smoke needs torch: pip install 'topk-migrate[smoke]'", err=True)
        sys.exit(2)
    from .runner import run_smoke

    sys.exit(run_smoke(path=path, function=function, device=device, json_path=json_path, echo=click.echo,
                       emitter_fault=emitter_fault))
