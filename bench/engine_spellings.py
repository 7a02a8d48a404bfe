"""Rebuild codemods/pass_topk_length/engine_spellings.py: the files of sglang's releases that give the width's
field (`index_topk` and its family) a value of their own, which field_writes denies in a fork's code (a config
class's default, `getattr(cfg, "index_topk", C4_TOPK)`), keyed by their bytes. Each release's wheel is fetched with pip
(`pip download --no-deps --only-binary=:all:`) and its Python files parsed from the zip, test folders aside:
nothing is installed, built or run. Wheels are kept in CACHE.

    python3 bench/engine_spellings.py [CACHE]     # default CACHE: ~/.cache/topk-migrate-tests
"""
from __future__ import annotations

import ast
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Dict, List, Tuple

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE))
from codemods.pass_topk_length import field_writes  # noqa: E402
from codemods.pass_topk_length.reach import is_test_code  # noqa: E402

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


def spellings(path: Path, label: str) -> Dict[str, str]:
    """file_key -> where, for each file of the wheel with a spelling field_writes denies."""
    trees: List[Tuple[ast.AST, object, object]] = []
    names: List[str] = []
    keys: List[str] = []
    with zipfile.ZipFile(path) as z:
        for name in z.namelist():
            if not name.endswith(".py") or is_test_code(name):
                continue
            data = z.read(name)
            if b"topk" not in data.lower():
                continue
            try:
                tree = ast.parse(data)
            except (SyntaxError, ValueError):
                continue
            trees.append((tree, field_writes.engine_getter(tree), lambda _name: None))
            names.append(name)
            keys.append(field_writes.file_key(data))
    found = field_writes.own_values(trees, field_writes.WIDTH_CORE)
    return {keys[i]: f"{label} {names[i]}" for i, _, _ in found}


def main(argv: List[str]) -> int:
    cache = Path(argv[0]) if argv else Path.home() / ".cache" / "topk-migrate-tests"
    cache.mkdir(parents=True, exist_ok=True)
    table: Dict[str, str] = {}
    for dist, version in RELEASES:
        path = wheel(cache, dist, version)
        if path is None:
            print(f"{dist}=={version}: no wheel", file=sys.stderr)
            continue
        for fp, where in spellings(path, f"{dist} {version}").items():
            table.setdefault(fp, where)
    doc = ast.get_docstring(ast.parse(TABLE.read_text()))
    lines = [f'"""{doc}"""', "ENGINE_FILES = {"] + [f"    {fp!r}: {where!r}," for fp, where in sorted(
        table.items(), key=lambda kv: kv[1])] + ["}", ""]
    TABLE.write_text("\n".join(lines))
    print(f"{len(table)} files from {len(RELEASES)} releases -> {TABLE.relative_to(HERE)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
