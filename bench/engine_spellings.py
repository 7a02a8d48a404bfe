"""Rebuild codemods/pass_topk_length/engine_spellings.py: the files of sglang's releases that give the width's
field (`index_topk` and its family) a value of their own, which field_writes denies in a fork's code (a config
class's default, `getattr(cfg, "index_topk", C4_TOPK)`), keyed by their bytes; and the releases' defs of the
functions and methods the traces trust by name (engine_defs: a transform, a clip, a pool method), keyed by
engine_defs.fingerprint; and the releases' batch module with its bases' modules (field_meaning.ENGINE_BATCH), by
their bytes. Each release's wheel is fetched with pip (`pip download --no-deps --only-binary=:all:`) and its Python
files parsed from the zip, test folders aside: nothing is installed, built or run. Wheels are kept in CACHE.

    python3 bench/engine_spellings.py [CACHE]     # default CACHE: ~/.cache/topk-migrate-tests
"""
from __future__ import annotations

import ast
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Dict, List

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE))
from codemods.pass_topk_length import engine_defs, field_writes  # noqa: E402
from codemods.pass_topk_length.callers import ENGINE_DECORATORS  # noqa: E402
from codemods.pass_topk_length.field_meaning import CLIP_KEEPING, CLIPS  # noqa: E402
from codemods.pass_topk_length.graph_replay import ENGINE_FIELD_OUTPUTS  # noqa: E402
from codemods.pass_topk_length.rows import INDEX_KEEPING_ENGINE_METHODS, INDEX_KEEPING_FUNCTIONS  # noqa: E402
from topk_migrate.project import is_test_code  # noqa: E402

TABLE = HERE / "codemods" / "pass_topk_length" / "engine_spellings.py"
# the releases the tool is held to (README: sglang 0.5.9-0.5.17, sglang-kt 0.7.x)
RELEASES = [("sglang", v) for v in ("0.5.9", "0.5.10", "0.5.11", "0.5.12", "0.5.12.post1", "0.5.13", "0.5.14",
                                    "0.5.15", "0.5.16", "0.5.17")] + [("sglang-kt", v) for v in ("0.7.0", "0.7.1", "0.7.2")]


def wheel(cache: Path, dist: str, version: str):
    stem = dist.replace("-", "_")
    found = sorted(cache.glob(f"{stem}-{version}-*.whl"))
    if not found:
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:", "-d",
                        str(cache), f"{dist}=={version}"], capture_output=True, timeout=900)
        found = sorted(cache.glob(f"{stem}-{version}-*.whl"))
    return found[0] if found else None


# the names the traces trust as the engine's, the width's getters too (field_writes)
TRUSTED = sorted({*CLIPS, *CLIP_KEEPING, *INDEX_KEEPING_FUNCTIONS, *INDEX_KEEPING_ENGINE_METHODS,
                  *(f"get_{p}{field_writes.WIDTH_CORE}" for p in ("", "dsa_", "nsa_")),
                  *(name for _, name in ENGINE_FIELD_OUTPUTS), *ENGINE_DECORATORS})


def sources(path: Path):
    """(name in the wheel, bytes, tree) of each Python file of the wheel outside its tests that parses and may hold
    a spelling or a trusted def."""
    with zipfile.ZipFile(path) as z:
        for name in z.namelist():
            if not name.endswith(".py") or is_test_code(name):
                continue
            data = z.read(name)
            if b"topk" not in data.lower() and not any(f"def {t}".encode() in data for t in TRUSTED):
                continue
            try:
                yield name, data, ast.parse(data)
            except (SyntaxError, ValueError):
                continue


def spellings(files, label: str) -> Dict[str, str]:
    """file_key -> where, for each file of the wheel with a spelling field_writes denies."""
    files = [(name, data, tree) for name, data, tree in files if b"topk" in data.lower()]
    trees = [(tree, field_writes.engine_getter(tree), lambda _name: None) for _, _, tree in files]
    found = field_writes.own_values(trees, field_writes.WIDTH_CORE)
    return {field_writes.file_key(files[i][1]): f"{label} {files[i][0]}" for i, _, _ in found}


def trusted_defs(files, label: str) -> Dict[str, str]:
    """engine_defs.fingerprint -> where, for each def of a trusted name in the wheel."""
    out = {}
    for name, data, tree in files:
        for trusted in TRUSTED:
            if f"def {trusted}".encode() in data:
                for fdef in engine_defs.defs_named(tree, trusted):
                    out.setdefault(engine_defs.fingerprint(tree, fdef), f"{label} {name}:{trusted}")
    return out


BATCH_MODULE = "sglang/srt/model_executor/forward_batch_info.py"


def batch_files(path: Path, label: str) -> Dict[str, str]:
    """file_key -> where, for the engine's batch module and each module of the wheel its `ForwardBatch` derives
    from (field_meaning.ENGINE_BATCH: trusted as the engine's where a project holds these files as released)."""
    out: Dict[str, str] = {}
    with zipfile.ZipFile(path) as z:
        names, todo = set(z.namelist()), [(BATCH_MODULE, "ForwardBatch")]
        while todo:
            name, cls = todo.pop()
            if name not in names or any(w.endswith(name) for w in out.values()):
                continue
            data = z.read(name)
            out[field_writes.file_key(data)] = f"{label} {name}"
            tree = ast.parse(data)
            imported = {a.asname or a.name: n.module for n in tree.body if isinstance(n, ast.ImportFrom) and n.module
                        for a in n.names}
            for c in (n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls):
                for b in (b.id for b in c.bases if isinstance(b, ast.Name)):
                    todo.append((imported[b].replace(".", "/") + ".py", b) if b in imported else (name, b))
    return out


def main(argv: List[str]) -> int:
    cache = Path(argv[0]) if argv else Path.home() / ".cache" / "topk-migrate-tests"
    cache.mkdir(parents=True, exist_ok=True)
    table: Dict[str, str] = {}
    defs: Dict[str, str] = {}
    batches: Dict[str, str] = {}
    for dist, version in RELEASES:
        path = wheel(cache, dist, version)
        if path is None:
            print(f"{dist}=={version}: no wheel", file=sys.stderr)
            continue
        files = list(sources(path))
        for fp, where in spellings(files, f"{dist} {version}").items():
            table.setdefault(fp, where)
        for fp, where in trusted_defs(files, f"{dist} {version}").items():
            defs.setdefault(fp, where)
        for fp, where in batch_files(path, f"{dist} {version}").items():
            batches.setdefault(fp, where)
    doc = ast.get_docstring(ast.parse(TABLE.read_text()))
    lines = [f'"""{doc}"""', *_dict("ENGINE_FILES", table), *_dict("ENGINE_DEFS", defs),
             *_dict("ENGINE_BATCH_FILES", batches), ""]
    TABLE.write_text("\n".join(lines))
    print(f"{len(table)} files, {len(defs)} defs from {len(RELEASES)} releases -> {TABLE.relative_to(HERE)}")
    return 0


def _dict(name: str, table: Dict[str, str]) -> List[str]:
    return [f"{name} = {{"] + [f"    {k!r}: {v!r}," for k, v in sorted(table.items(), key=lambda kv: kv[1])] + ["}"]


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
