#!/usr/bin/env python3
"""No collateral change: apply on a large real tree writes only files that hold
fixable sites, and within them only the lines of those sites' fixes.

    python bench/collateral_check.py [--tree /tmp/topk-bench-tree] [--record results/collateral.md]

1. Copies the audit benchmark tree (bench/build_tree.sh: ~13k .py files of
   four PyPI wheels) to a scratch directory.
2. Seeds it, since that release is already migrated: the topk_length argument
   of the real kernel calls is taken out again ("un-migrated"), and a fixable
   snippet is planted between the top-level statements of N real files, the
   files varied for encoding (BOM, latin-1 cookie), line endings (CRLF, CR,
   mixed), tabs, no final newline and mode.
3. Hashes every file, runs `topk-migrate apply` on the whole copy, hashes again.
4. Checks: 0 crashes (traceback / internal error / exit code), the changed
   files are exactly the files with fixable sites, no file created, deleted or
   re-moded, no temp file left, every changed file compiles, and every changed
   line lies in a fix's footprint (the kernel call, the statement it sits in
   for the inserted row guard, the helper's signature, its callers' calls, a
   typing import); BOM, newline style and final-newline state kept.
5. Runs apply a second time: not one byte may change (idempotence).

Exits 1 if any check fails. Not part of the package.
"""
from __future__ import annotations

import argparse
import ast
import difflib
import hashlib
import os
import random
import re
import shutil
import subprocess
import sys
import time
from typing import Dict, List, Set, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)

from topk_migrate.files import read_source  # noqa: E402

KERNEL_NAMES = ("flash_mla_sparse_fwd", "flash_mla_sparse_prefill", "sparse_prefill_fwd")
SITE = re.compile(r"^(?P<path>.+?):(?P<line>\d+):(?P<col>\d+) (?P<status>compliant|opt-out|fixable|fixed|manual) ")
TYPING_IMPORT = re.compile(r"^\s*(from typing import .*|import typing)\s*$")

SNIPPET = '''
# --- planted by bench/collateral_check.py (site {i}){extra} ---
def _topk_bench_forward_{i}(q, kv, indices, metadata, scale):
    from sgl_kernel import flash_mla_sparse_fwd
    o, _, _ = flash_mla_sparse_fwd(q, kv, indices, scale)
    return o


class _TopkBenchBackend{i}:
    def _topk_bench_fwd_{i}(self, q, kv, indices, scale):
        from sgl_kernel import flash_mla_sparse_fwd
        o, _, _ = flash_mla_sparse_fwd(
            q=q,
            kv=kv,
            indices=indices,
            sm_scale=scale,  # the default d_v
        )
        return o

    def forward_extend(self, q, kv, indices, metadata, scale):
        return self._topk_bench_fwd_{i}(q, kv, indices, scale)


# _TOPK_BENCH_SEQLENS_{i}: metadata.dsa_cache_seqlens_int32
'''
VARIANTS = ["plain", "crlf", "bom", "latin1", "tabs", "no_final_newline", "mode755", "mixed", "cr", "plain"]


# ---- seeding ------------------------------------------------------------------

def unmigrate(path: str) -> int:
    """Drop the topk_length keyword lines of the kernel calls in path; how many were dropped."""
    with open(path, "rb") as f:
        raw = f.read()
    text = raw.decode("utf-8")
    lines = text.splitlines(True)
    drop: Set[int] = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Call) and _callee(node) in KERNEL_NAMES:
            for kw in node.keywords:
                if kw.arg == "topk_length" and kw.lineno == kw.end_lineno:
                    ln = lines[kw.lineno - 1]
                    if re.fullmatch(r"\s*topk_length=[^,()]*,?\s*", ln):
                        drop.add(kw.lineno - 1)
    if drop:
        with open(path, "w", encoding="utf-8", newline="") as f:
            f.write("".join(l for i, l in enumerate(lines) if i not in drop))
    return len(drop)


def _callee(call: ast.Call):
    f = call.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None


def plant(path: str, i: int, variant: str, rng: random.Random) -> bool:
    with open(path, "rb") as f:
        raw = f.read()
    try:
        text = raw.decode("ascii" if variant == "latin1" else "utf-8")
        tree = ast.parse(text)
    except (UnicodeDecodeError, SyntaxError, ValueError):
        return False
    first_two = b"\n".join(raw.split(b"\n", 2)[:2])
    if raw.startswith(b"\xef\xbb\xbf") or "\r" in text or re.search(rb"(?m)^[ \t\f]*#.*?coding[:=]", first_two):
        return False
    body = tree.body
    first = 0
    while first < len(body) and (isinstance(body[first], ast.ImportFrom) and body[first].module == "__future__"
                                 or (first == 0 and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant))):
        first += 1
    if first >= len(body):
        after = len(text.splitlines())
    else:
        after = body[rng.randrange(first, len(body))].end_lineno
    lines = text.splitlines(True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    snippet = SNIPPET.format(i=i, extra=" caf\u00e9" if variant == "latin1" else "")
    if variant == "tabs":
        snippet = re.sub(r"(?m)^((?:    )+)", lambda m: "\t" * (len(m.group(1)) // 4), snippet)
    new = "".join(lines[:after]) + snippet + "".join(lines[after:])
    if variant == "crlf":
        data = new.replace("\n", "\r\n").encode()
    elif variant == "cr":
        data = new.replace("\n", "\r").encode()
    elif variant == "mixed":
        ls = new.splitlines(True)
        data = "".join(l.replace("\n", "\r\n") if k % 3 == 0 else l for k, l in enumerate(ls)).encode()
    elif variant == "bom":
        data = b"\xef\xbb\xbf" + new.encode()
    elif variant == "latin1":
        shebang = lines[0] if lines and lines[0].startswith("#!") else ""
        data = (shebang + "# -*- coding: latin-1 -*-\n" + new[len(shebang):]).encode("latin-1")
    elif variant == "no_final_newline":
        data = new.rstrip("\n").encode()
    else:
        data = new.encode()
    with open(path, "wb") as f:
        f.write(data)
    if variant == "mode755":
        os.chmod(path, 0o755)
    return True


def seed(tree: str, n: int, seed_value: int) -> Tuple[int, Dict[str, str]]:
    pys = sorted(os.path.join(d, f) for d, _, fs in os.walk(tree) for f in fs if f.endswith(".py"))
    unmigrated = 0
    for p in pys:
        with open(p, "rb") as f:
            data = f.read()
        if b"topk_length" in data and any(k.encode() in data for k in KERNEL_NAMES):
            try:
                unmigrated += unmigrate(p)
            except (SyntaxError, UnicodeDecodeError):
                pass
    rng = random.Random(seed_value)
    planted: Dict[str, str] = {}
    candidates = [p for p in pys if 200 < os.path.getsize(p) < 200_000]
    rng.shuffle(candidates)
    for p in candidates:
        if len(planted) >= n:
            break
        variant = VARIANTS[len(planted) % len(VARIANTS)]
        if plant(p, len(planted), variant, rng):
            planted[p] = variant
    return unmigrated, planted


# ---- measuring -------------------------------------------------------------------

def snapshot(root: str) -> Dict[str, Tuple[str, int]]:
    out = {}
    for d, _dirs, files in os.walk(root):
        for name in files:
            p = os.path.join(d, name)
            st = os.lstat(p)
            if os.path.islink(p):
                out[p] = ("link:" + os.readlink(p), 0)
                continue
            with open(p, "rb") as f:
                out[p] = (hashlib.sha256(f.read()).hexdigest(), st.st_mode & 0o7777)
    return out


def cli(*args: str) -> Tuple[subprocess.CompletedProcess, float]:
    t = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "topk_migrate", *args], capture_output=True, text=True)
    return r, time.perf_counter() - t


def sites_by_file(output: str) -> Dict[str, List[Tuple[int, str]]]:
    out: Dict[str, List[Tuple[int, str]]] = {}
    for line in output.splitlines():
        m = SITE.match(line)
        if m:
            out.setdefault(m["path"], []).append((int(m["line"]), m["status"]))
    return out


def footprint(text: str, site_lines: List[int]) -> Tuple[Set[int], Set[int]]:
    """(lines a fix may modify, positions before which a fix may insert lines), 1-based."""
    tree = ast.parse(text)
    lines = text.splitlines()
    modify: Set[int] = set()
    insert: Set[int] = set()
    parents = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[child] = node
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]
    for line in site_lines:
        here = [c for c in calls if c.lineno == line and _callee(c) in KERNEL_NAMES] or [c for c in calls if c.lineno == line]
        for call in here:
            modify.update(range(call.lineno, call.end_lineno + 1))
            node, stmt, fn = call, None, None
            while node in parents:
                node = parents[node]
                if stmt is None and isinstance(node, ast.stmt):
                    stmt = node
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    fn = node
                    break
            if stmt is not None:  # the row guard goes right before the statement (and its comments)
                top = stmt.lineno
                while top > 1 and (not lines[top - 2].strip() or lines[top - 2].lstrip().startswith("#")):
                    top -= 1
                insert.update(range(top, stmt.lineno + 1))
            if fn is not None:  # the helper's signature, and its callers' calls
                modify.update(range(fn.lineno, fn.body[0].lineno))
                for c in calls:
                    f = c.func
                    if (isinstance(f, ast.Name) and f.id == fn.name) or (isinstance(f, ast.Attribute) and f.attr == fn.name):
                        modify.update(range(c.lineno, c.end_lineno + 1))
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module == "typing":
            modify.update(range(node.lineno, node.end_lineno + 1))
    return modify, insert


def newline_style(data: bytes) -> str:
    crlf = data.count(b"\r\n")
    lf, cr = data.count(b"\n") - crlf, data.count(b"\r") - crlf
    kinds = [k for k, n in (("LF", lf), ("CRLF", crlf), ("CR", cr)) if n]
    return "+".join(kinds) or "none"


def check_file(path: str, old_raw: bytes, old_text: str, new_raw: bytes, site_lines: List[int]):
    """(problems, bytes changed outside) for one rewritten file; ([], 0) if every change lies in the fixes' footprint."""
    problems = []
    src = read_source(path)  # the new file, decoded as the tool decodes it
    new_text = src.text
    try:
        compile(new_text, path, "exec", dont_inherit=True)
    except SyntaxError as e:
        problems.append(f"does not compile: {e.msg} at line {e.lineno}")
    if old_raw.startswith(b"\xef\xbb\xbf") != new_raw.startswith(b"\xef\xbb\xbf"):
        problems.append("BOM added or lost")
    if old_raw.endswith((b"\n", b"\r")) != new_raw.endswith((b"\n", b"\r")):
        problems.append("final-newline state changed")
    style = newline_style(old_raw)
    if "+" not in style and newline_style(new_raw) != style:
        problems.append(f"line endings {style} became {newline_style(new_raw)}")
    modify, insert = footprint(old_text, site_lines)
    a, b = old_text.splitlines(True), new_text.splitlines(True)
    outside = 0
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            continue
        new_lines = b[j1:j2]
        imports = [l for l in new_lines if l.strip()]
        if imports and all(TYPING_IMPORT.match(l) for l in imports) and (
                op == "insert" or all(k + 1 in modify for k in range(i1, i2))):
            continue  # the typing import an added annotation needs (with LibCST's blank line after it)
        if op == "insert":
            ok = (i1 + 1) in insert or (i1 in modify and i1 + 1 in modify)
        else:
            ok = all(k + 1 in modify for k in range(i1, i2))
        if not ok:
            outside += sum(len(l.encode()) for l in a[i1:i2] + new_lines)
            problems.append(f"change outside a fix at line {i1 + 1}: {''.join(a[i1:i2])[:80]!r} -> {''.join(new_lines)[:80]!r}")
    return problems, outside


def _commit() -> str:
    r = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return r.stdout.strip() or "unknown"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tree", default="/tmp/topk-bench-tree", help="the tree bench/build_tree.sh builds")
    ap.add_argument("--work", default="/tmp/topk-collateral", help="scratch directory (replaced)")
    ap.add_argument("--plant", type=int, default=300, help="files to plant a fixable snippet in")
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--kernel", default="sglang-kernel==0.4.5")
    ap.add_argument("--record", help="write the results as markdown here")
    args = ap.parse_args(argv)

    if not os.path.isdir(args.tree):
        subprocess.run(["bash", os.path.join(HERE, "build_tree.sh"), args.tree], check=True)
    work = os.path.join(args.work, "tree")
    shutil.rmtree(args.work, ignore_errors=True)
    shutil.copytree(args.tree, work, symlinks=True)
    unmigrated, planted = seed(work, args.plant, args.seed)
    n_py = sum(f.endswith(".py") for _, _, fs in os.walk(work) for f in fs)

    before = snapshot(work)
    raw_before = {}
    for p in before:
        if p.endswith(".py") and not before[p][0].startswith("link:"):
            with open(p, "rb") as f:
                data = f.read()
            if any(k.encode() in data for k in KERNEL_NAMES):
                raw_before[p] = data
    texts_before = {}
    for p in raw_before:
        try:
            texts_before[p] = read_source(p).text
        except Exception:
            pass

    chk, t_check = cli("check", "--kernel", args.kernel, work)
    fixable = {p: [l for l, s in v if s == "fixable"] for p, v in sites_by_file(chk.stdout).items()}
    fixable = {p: v for p, v in fixable.items() if v}
    counts = {s: sum(1 for v in sites_by_file(chk.stdout).values() for _, st in v if st == s) for s in ("fixable", "manual", "opt-out")}

    run1, t_apply = cli("apply", "--kernel", args.kernel, work)
    after = snapshot(work)
    run2, t_apply2 = cli("apply", "--kernel", args.kernel, work)
    again = snapshot(work)

    out = run1.stdout + run1.stderr
    crashes = out.count("Traceback") + out.count("internal error") + (run1.returncode not in (0, 1, 2))
    errors = [l for l in run1.stderr.splitlines() if ": error: " in l]
    changed = {p for p in before.keys() | after.keys() if before.get(p) != after.get(p)}
    created = sorted(after.keys() - before.keys())
    deleted = sorted(before.keys() - after.keys())
    remoded = sorted(p for p in before.keys() & after.keys() if before[p][1] != after[p][1])
    temps = [p for p in after if os.path.basename(p).startswith(".topk-migrate-")]
    unexpected = sorted(changed - set(fixable))
    missed = sorted(set(fixable) - changed)
    problems: Dict[str, List[str]] = {}
    bytes_outside = 0
    for p in sorted(changed & set(fixable)):
        with open(p, "rb") as f:
            new_raw = f.read()
        probs, outside = check_file(p, raw_before[p], texts_before[p], new_raw, fixable[p])
        bytes_outside += outside
        if probs:
            problems[p] = probs
    for _p in unexpected:
        bytes_outside += 1  # at least
    idem_changed = sorted(p for p in after.keys() | again.keys() if after.get(p) != again.get(p))
    partial = len(temps) + sum(1 for p in problems if any(x.startswith("does not compile") for x in problems[p]))
    unchanged_files = len(before) - len(changed)

    ok = not (crashes or unexpected or missed or created or deleted or remoded or temps or problems or idem_changed or errors)
    rel = lambda p: os.path.relpath(p, work)
    variants = {}
    for v in planted.values():
        variants[v] = variants.get(v, 0) + 1
    lines = [
        "# Collateral check: apply on the large real tree",
        "",
        "Issue 5, item 5. Produced by:",
        "",
        "```",
        f"bash bench/build_tree.sh {args.tree}   # once: {n_py} .py files of four PyPI wheels",
        f"python bench/collateral_check.py --tree {args.tree} --plant {args.plant} --seed {args.seed} --kernel {args.kernel}" + (f" --record {args.record}" if args.record else ""),
        "```",
        "",
        f"At commit {_commit()}, Python {sys.version.split()[0]}.",
        "",
        "The release in the tree already passes topk_length everywhere, so the copy is seeded first:",
        f"{unmigrated} topk_length keyword line(s) taken out of real kernel calls, and a fixable snippet "
        f"(a direct call and a helper with a caller) planted between the top-level statements of {len(planted)} real files "
        f"({', '.join(f'{v} {k}' for k, v in sorted(variants.items()))}).",
        "",
        "| measure | value |",
        "| --- | --- |",
        f"| files in the tree (all kinds) | {len(before)} |",
        f"| .py files | {n_py} |",
        f"| sites before apply (check) | {counts['fixable']} fixable, {counts['manual']} manual, {counts['opt-out']} opt-out |",
        f"| files with fixable sites | {len(fixable)} |",
        f"| apply exit code | {run1.returncode} |",
        f"| apply wall time | {t_apply:.1f} s (check: {t_check:.1f} s) |",
        f"| crashes (traceback / internal error / bad exit code) | {crashes} |",
        f"| error lines | {len(errors)} |",
        f"| files changed | {len(changed)} |",
        f"| files changed without a fixable site | {len(unexpected)} |",
        f"| files with fixable sites left unchanged | {len(missed)} |",
        f"| files byte-identical (sha256) | {unchanged_files} |",
        f"| files created / deleted / mode changed | {len(created)} / {len(deleted)} / {len(remoded)} |",
        f"| bytes changed outside the fixes' footprint | {bytes_outside} |",
        f"| changed files with a problem (footprint, encoding, newlines, compile) | {len(problems)} |",
        f"| files left in a partial state (temp files, not compiling) | {partial} |",
        f"| second apply: files changed (idempotence) | {len(idem_changed)} (exit {run2.returncode}, {t_apply2:.1f} s) |",
        "",
        f"**Result: {'PASS' if ok else 'FAIL'}**",
        "",
        "Footprint of a fix: the kernel call's lines; insertions just before the statement that holds it",
        "(the row guard); the enclosing helper's signature and its callers' calls; a `typing` import.",
    ]
    detail = []
    for p in unexpected[:20]:
        detail.append(f"- changed without a fixable site: {rel(p)}")
    for p in missed[:20]:
        detail.append(f"- fixable but unchanged: {rel(p)}")
    for p, probs in list(problems.items())[:20]:
        for x in probs[:5]:
            detail.append(f"- {rel(p)} ({planted.get(p, 'real')}): {x}")
    for l in errors[:20]:
        detail.append(f"- error: {l}")
    for p in idem_changed[:20]:
        detail.append(f"- changed by the second apply: {rel(p)}")
    if detail:
        lines += ["", "## Findings", ""] + detail
    report = "\n".join(lines) + "\n"
    print(report)
    if crashes:
        print(out[-5000:], file=sys.stderr)
    if args.record:
        os.makedirs(os.path.dirname(os.path.abspath(args.record)), exist_ok=True)
        with open(args.record, "w") as f:
            f.write(report)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
