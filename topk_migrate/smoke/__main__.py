"""`python -m topk_migrate.smoke` == `topk-migrate smoke` (handy before the CLI is installed)."""
from .command import smoke_command

smoke_command(prog_name="topk-migrate smoke")
