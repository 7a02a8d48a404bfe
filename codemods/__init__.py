"""Migration rules, one per module. Installed as `topk_migrate.codemods`."""
