"""Rebuild topk_migrate/data/sglang_kernels.json: for every sglang release on PyPI, the kernel requirements of
its Requires-Dist, per extra (what `pip install sglang[srt]==V` brings beside the engine: `sgl-kernel==0.2.5`,
which installs the same `sgl_kernel` module as sglang-kernel). The kernel gate reads it where a project pins
sglang exactly (docs/soundness.md, `kernel-accepts`).

Each release is fetched with pip (`pip download --no-deps --only-binary=:all:`, PyPI's wheel), and its
`*.dist-info/METADATA` read with zipfile: nothing is installed, built or run. A release without a wheel is
listed as unread (the gate then decides nothing from a pin of it). Wheels are kept in CACHE.

    python3 bench/sglang_kernel_table.py [CACHE]     # default CACHE: ~/.cache/topk-migrate-tests/sglang-table
"""
from __future__ import annotations

import datetime
import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Set, Tuple

from packaging.requirements import Requirement
from packaging.version import Version

from topk_migrate import kernels, rules

HERE = Path(__file__).resolve().parents[1]
TABLE = HERE / "topk_migrate" / "data" / "sglang_kernels.json"
ENGINE = "sglang"
Groups = Dict[str, List[str]]  # extra ("" the base install) -> kernel requirements it brings


def kernel_dists() -> Tuple[str, ...]:
    """Every distribution that provides a kernel module a rule knows (sgl-kernel, sglang-kernel, flash-mla, vllm ...)."""
    return tuple(sorted({d for ds in rules.providers().values() for d in ds}))


def release_versions() -> List[str]:
    """Every release pip lists for sglang, pre-releases too, oldest first."""
    out = subprocess.run([sys.executable, "-m", "pip", "index", "versions", "--pre", ENGINE],
                         capture_output=True, text=True, timeout=600, check=True).stdout
    listed = re.search(r"(?m)^Available versions:\s*(.+)$", out)
    if listed is None:
        raise SystemExit(f"pip index versions listed nothing:\n{out}")
    return sorted((v.strip() for v in listed.group(1).split(",")), key=Version)


def fetch(version: str, cache: Path) -> Optional[Path]:
    """The release's wheel in `cache`, downloaded once; None where PyPI has no wheel of it."""
    found = sorted(cache.glob(f"{ENGINE}-{version}-*.whl"))
    if not found:
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                        "-d", str(cache), f"{ENGINE}=={version}"], capture_output=True, timeout=600)
        found = sorted(cache.glob(f"{ENGINE}-{version}-*.whl"))
    return found[0] if found else None


def wheel_metadata(wheel: Path) -> Tuple[str, List[str]]:
    """The Version and Requires-Dist of a wheel's METADATA, read from the zip (never installed)."""
    with zipfile.ZipFile(wheel) as z:
        (meta,) = [n for n in z.namelist() if n.count("/") == 1 and n.endswith(".dist-info/METADATA")]
        _, version, requires = kernels.metadata_fields(z.read(meta).decode("utf-8", "replace"))
    if version is None:
        raise ValueError(f"{wheel.name}: METADATA has no Version")
    return version, requires


_EXTRA = re.compile(r'^extra == "([^"]+)"$')


def _group(req: Requirement) -> str:
    """The extra a requirement belongs to ("" the base install); any other marker is not read (raise, so that a
    rebuild meeting one is fixed by hand rather than written wrong)."""
    if req.marker is None:
        return ""
    m = _EXTRA.match(str(req.marker))
    if m is None:
        raise ValueError(f"marker not read: {req}")
    return kernels.normalize(m.group(1))


def kernel_groups(requires: Iterable[str], dists: Iterable[str]) -> Groups:
    """Each extra's kernel requirements, with the extras it pulls in by naming sglang itself
    (`sglang[srt]; extra == "all"`) folded in; the base install's under "" (every extra brings it too)."""
    wanted = set(dists)
    own: Dict[str, List[str]] = {}
    pulls: Dict[str, Set[str]] = {}
    for text in requires:
        req = Requirement(text)
        name = kernels.normalize(req.name)
        if name == ENGINE:
            pulls.setdefault(_group(req), set()).update(kernels.normalize(e) for e in req.extras)
        elif name in wanted:
            spec = f" @ {req.url}" if req.url else str(req.specifier)
            own.setdefault(_group(req), []).append(f"{name}{spec}")
    base = _closure("", own, pulls)
    out = {g: [r for r in _closure(g, own, pulls) if r not in base] for g in set(own) | set(pulls) if g}
    return {g: reqs for g, reqs in sorted({"": base, **out}.items()) if reqs}


def _closure(group: str, own: Dict[str, List[str]], pulls: Dict[str, Set[str]]) -> List[str]:
    """The kernel requirements of `group` and of every extra it pulls in, transitively, in order, once each."""
    seen, todo, reqs = {group}, [group], []
    while todo:
        g = todo.pop(0)
        reqs += own.get(g, [])
        for e in sorted(pulls.get(g, ())):
            if e not in seen:
                seen.add(e)
                todo.append(e)
    return list(dict.fromkeys(reqs))


def build(versions: Iterable[str], cache: Path) -> Tuple[Dict[str, Groups], List[str]]:
    """The table's releases (each listed version whose wheel was read) and the versions no wheel was found for."""
    releases: Dict[str, Groups] = {}
    unread: List[str] = []
    dists = kernel_dists()
    for version in versions:
        wheel = fetch(version, cache)
        if wheel is None:
            unread.append(version)
            continue
        stated, requires = wheel_metadata(wheel)
        releases[str(Version(stated))] = kernel_groups(requires, dists)
    return releases, unread


def render(releases: Dict[str, Groups], unread: List[str], built: str) -> str:
    """The table as JSON, one release a line (oldest first), where it came from at its top."""
    head = {
        "about": "Kernel requirements (Requires-Dist) of every sglang release on PyPI, per extra; \"\" is the base "
                 "install, which every extra brings too. Read by topk_migrate.kernels (brought_pins).",
        "source": "pip index versions --pre sglang; pip download --no-deps --only-binary=:all: sglang==V; "
                  "each wheel's *.dist-info/METADATA read with zipfile (bench/sglang_kernel_table.py); the wheel pip picks on "
                  "the machine that built it (a platform wheel's Requires-Dist: 0.5.16's and 0.5.23's aarch64 wheels "
                  "state the same)",
        "built": built,
        "kernels": list(kernel_dists()),
        "unread": unread,
    }
    lines = [f"  {json.dumps(k)}: {json.dumps(v)}," for k, v in head.items()]
    rows = [f"    {json.dumps(v)}: {json.dumps(g, sort_keys=True)}"
            for v, g in sorted(releases.items(), key=lambda kv: Version(kv[0]))]
    return "{\n" + "\n".join(lines) + '\n  "releases": {\n' + ",\n".join(rows) + "\n  }\n}\n"


def main(argv: List[str]) -> int:
    cache = Path(argv[0]) if argv else Path.home() / ".cache" / "topk-migrate-tests" / "sglang-table"
    cache.mkdir(parents=True, exist_ok=True)
    releases, unread = build(release_versions(), cache)
    TABLE.parent.mkdir(parents=True, exist_ok=True)
    TABLE.write_text(render(releases, unread, datetime.date.today().isoformat()))
    print(f"{TABLE.relative_to(HERE)}: {len(releases)} releases, {len(unread)} without a wheel {unread}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
