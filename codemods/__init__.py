"""Migration rules, one package each (its __init__ declares INFO; its `rule` module the hooks). Installed as `topk_migrate.codemods`."""
