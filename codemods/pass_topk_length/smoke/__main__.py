"""`python -m topk_migrate.codemods.pass_topk_length.smoke` == `topk-migrate smoke` (handy before the CLI is
installed; bench/gpu_smoke.sh runs it so)."""
from .command import smoke_command

smoke_command(prog_name="topk-migrate smoke")
