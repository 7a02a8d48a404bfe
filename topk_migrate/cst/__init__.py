"""The cst wing: the LibCST helpers the engine and the rules import (no module of it imports a rule).

- `resolve`: what each called name of a module resolves to (imports in every scope), and where;
- `scopecheck`: the scope facts a rewrite must prove (`Tree`: one numbering, positions, scopes);
- `cstutil`: building and splicing the rewritten code;
- `cstwalk`: the read-only walk the others stand on (`fast_visits`);
- `scopefast`: scopecheck's faster scope and position providers, on LibCST's internals;
- `accel`: the one switch for what reads LibCST's internals (`fast_visits`, `scopefast`, cstutil's codegen):
  on only for the LibCST releases tested, off with TOPK_MIGRATE_NO_ACCEL=1 (LibCST's public API only).
"""
