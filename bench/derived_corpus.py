"""What `--lengths derived` changes on real sites (issue 39's acceptance): the real-site corpus and the fork trees.

The derived fix passes topk_length computed at the call from its own indices where the reference fix (clipped-seqlen
metadata) is not proven. Its acceptance asks, on the real corpora: how many sites it adds, that each rewrite
compiles, and that none is added where the kernel lacks the parameter. This script answers that by classifying
every site twice, `lengths="reference"` and `lengths="derived"`, with the kernel each site is judged under:

- tests/corpus (bench/corpus_build.py rebuilds it into a temporary directory from the fetched snapshots; the
  reference run must reproduce the manifest's judged status and class);
- the fork trees of tests/test_fork_sites.py: its tests run as they are (pytest, in this process) while every
  api.run they make is classified again, there and then, both ways.

For each site: reference and derived status and reason, the gate's kernel decision; for each file the derived
rewrite: compile(new_source), and the rewrite classified again (reference): every site derived called fixable
must be compliant there. Findings (exit 1): a site added whose reference reason was the kernel's capability or
the callee's identity, or whose gate decided nothing; a rewrite that does not compile, leaves a site unfixed, or
differs from the reference rewrite in a file where nothing is added; a site that got worse (fixable to manual,
any change to a compliant or opt-out site); a reference verdict that differs from the manifest's.

    python3 bench/derived_corpus.py            # writes results/derived-corpus.md and .json
    python3 bench/derived_corpus.py --no-forks
"""
from __future__ import annotations

import json
import re
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import List, Optional

import corpus_build
from topk_migrate import api

ROOT = corpus_build.HERE
RESULTS = ROOT / "results" / "derived-corpus"
# Manual for the kernel's capability (or a call the rewrite cannot reach) or the callee's identity: the derived
# lengths must never make these fixable.
BLOCKED = {"kernel-unknown", "kernel-too-old", "op-level", "value-use", "through-holder", "callee-identity",
           "reflection", "misplaced-argument", "star-args"}
# Reasons corpus_build's classes call "other" (the fork trees have them; the corpus does not).
MORE_CLASSES = (("reflection", r"may rebind the kernel, the helper or its class"),
                ("misplaced-argument", r"takes `\w+` in place \d+, where the rule reads"),
                ("star-args", r"^\*\*?(kwargs|args) may already carry topk_length"),
                ("decode-rule", r"^(sparse decode without topk_length|indices may be passed positionally)"),
                ("metadata-unproven", r"not provably the seqlens clipped"))
QUIET = ("compliant", "opt-out")


def site_class(status: str, reason: str) -> str:
    got = corpus_build.reason_class(status, reason)
    return next((name for name, pattern in MORE_CLASSES if re.search(pattern, reason)), got) if got == "other" else got


def outcome(path: Path, kernel: Optional[str], lengths: str, data: bytes) -> api.FileOutcome:
    o = api.process_file(str(path), kernel, data=data, lengths=lengths)
    assert not o.error, (path, lengths, o.error)
    return o


def compiles(source: Optional[bytes], path: Path) -> Optional[str]:
    """None if the rewrite compiles (or there is none), else the error."""
    try:
        compile(source or b"", str(path), "exec")
        return None
    except SyntaxError as e:
        return f"{e.msg} at line {e.lineno}"


def unfixed(after: api.FileOutcome, before: api.FileOutcome) -> int:
    """How many of before's fixable sites the rewrite `after` did not make compliant (by count: a helper that
    gains a parameter moves the lines below it)."""
    done = Counter(s.status.value for s in after.sites)
    want = Counter(s.status.value for s in before.sites)
    return done["fixable"] + max(0, want["fixable"] + want["compliant"] - done["compliant"])


def compare_file(path: Path, kernel: Optional[str], where: str, name: str) -> List[dict]:
    """One row per site of `path`: its reference and derived verdicts, and what the derived rewrite does."""
    raw = path.read_bytes()
    ref, der = (outcome(path, kernel, lengths, raw) for lengths in ("reference", "derived"))
    error = compiles(der.new_bytes, path)
    left = unfixed(outcome(path, kernel, "reference", der.new_bytes), der) if der.new_bytes and not error else 0
    derived = {(s.line, s.column): s for s in der.sites}
    rows = []
    for s in ref.sites:
        d = derived.pop((s.line, s.column), None)
        rows.append({"where": where, "path": name, "line": s.line, "kernel_arg": kernel,
                     "ref": s.status.value, "ref_class": site_class(s.status.value, s.reason),
                     "ref_reason": s.reason, "derived": d.status.value if d else None,
                     "derived_reason": d.reason if d else None, "gate": d.kernel if d else None,
                     "rewritten": der.new_bytes is not None, "compile_error": error, "unfixed_after": left})
    rows += [{"where": where, "path": name, "line": d.line, "ref": None, "derived": d.status.value,
              "derived_reason": d.reason} for d in derived.values()]
    # where the derived lengths add nothing, the rewrite must be the reference one, byte for byte
    added = any(r["ref"] != "fixable" and r["derived"] == "fixable" for r in rows)
    for r in rows:
        r["collateral"] = not added and der.new_bytes != ref.new_bytes
    return rows


def findings(r: dict) -> List[str]:
    """What is wrong with one row (nothing, as it should be)."""
    out = []
    added = r["ref"] != "fixable" and r["derived"] == "fixable"
    if r["ref"] is None or r["derived"] is None:
        out.append("a site only one run reports")
    elif r["ref"] == "fixable" and r["derived"] != "fixable":
        out.append("fixable under reference, not under derived")
    elif r["ref"] in QUIET and (r["derived"], r["derived_reason"]) != (r["ref"], r["ref_reason"]):
        out.append(f"{r['ref']} site changed under derived")
    if added and (r["ref_class"] in BLOCKED or not r["gate"]
                  or re.search(r"kernel too old|capability unknown", r["derived_reason"])):
        out.append(f"added although the reference reason is {r['ref_class']} (gate: {r['gate']})")
    if r.get("compile_error"):
        out.append(f"derived rewrite does not compile: {r['compile_error']}")
    if r.get("unfixed_after"):
        out.append(f"the rewrite, checked again, leaves {r['unfixed_after']} fixable site(s) not compliant")
    if r.get("collateral"):
        out.append("the derived rewrite differs from the reference one, though it adds no site in the file")
    if r.get("judged") and r["judged"] != (r["ref"], r["ref_class"]):
        out.append(f"reference verdict {r['ref']}/{r['ref_class']} differs from the manifest's {r['judged']}")
    return out


def corpus_rows() -> tuple:
    """Rows of every manifest site, the files that could not be rebuilt, and what was."""
    manifest = corpus_build.load()
    with tempfile.TemporaryDirectory(prefix="derived-corpus-") as tmp:
        out = Path(tmp)
        written, problems = corpus_build.rebuild(out, manifest)
        rows = []
        for f in manifest["files"]:
            target = out / f["dir"] / f["path"]
            if not target.exists():
                continue
            judged = {s["line"]: (s["status"], s["class"]) for s in f["sites"]}
            for r in compare_file(target, f.get("kernel"), f"{f['repo']}@{f['commit'][:10]}", f["path"]):
                r["judged"] = judged.get(r["line"], ("not in the manifest", ""))
                rows.append(r)
    repos = len({f["repo"] for f in manifest["files"]})
    ran = f"{len(written)} of {len(manifest['files'])} files rebuilt (sha256 checked), {repos} repositories"
    return rows, problems, ran


def fork_rows() -> tuple:
    """Rows of every site tests/test_fork_sites.py classifies, each classified where and as its test does; problems;
    what ran."""
    import os

    import pytest

    rows, seen, real_run = [], set(), api.run

    def recording(paths, kernel=None, *args, **kwargs):
        rep = real_run(paths, kernel, *args, **kwargs)
        test = os.environ.get("PYTEST_CURRENT_TEST", "?").split("::", 1)[-1].rsplit(" (", 1)[0]
        for o in rep.files:
            tree, name = re.match(r"^.*/derived-forks-[^/]+/([^/]+)/(.*)$", o.path).groups()
            key = (tree, name, tuple((s.line, s.reason) for s in o.sites))  # a test may change its tree, run again
            if o.sites and key not in seen:
                seen.add(key)
                rows.extend(compare_file(Path(o.path), kernel, test, name))
        return rep

    api.run = recording
    try:
        with tempfile.TemporaryDirectory(prefix="derived-forks-") as tmp:
            rc = pytest.main(["-q", "-p", "no:cacheprovider", "--basetemp", tmp,
                              str(ROOT / "tests" / "test_fork_sites.py")])
    finally:
        api.run = real_run
    return rows, [] if rc == 0 else [f"tests/test_fork_sites.py exited {int(rc)}"], f"pytest exit {int(rc)}"


def totals(rows: List[dict]) -> dict:
    added = [r for r in rows if r["ref"] != "fixable" and r["derived"] == "fixable"]
    return {"sites": len(rows), "fixable under reference": sum(r["ref"] == "fixable" for r in rows),
            "fixable under derived": sum(r["derived"] == "fixable" for r in rows), "added": len(added),
            "added by class": dict(Counter(r["judged"][1] if r.get("judged") else r["ref_class"] for r in added)),
            "manual left under derived": sum(r["derived"] == "manual" for r in rows),
            "manual left by class": dict(Counter(r["ref_class"] for r in rows if r["derived"] == "manual")),
            "rewritten files": len({(r["where"], r["path"]) for r in rows if r.get("rewritten")}),
            "rewrites that compile": len({(r["where"], r["path"]) for r in rows
                                          if r.get("rewritten") and not r["compile_error"]})}


def section(title: str, rows: List[dict], problems: List[str], ran: str) -> List[str]:
    t = totals(rows)
    lines = [f"## {title}", "", ran + ".", "", "| figure | count |", "| --- | --- |"]
    lines += [f"| {k} | {v} |" for k, v in t.items() if not k.endswith("by class")]
    for what, key in (("Added", "added by class"), ("Manual under derived", "manual left by class")):
        lines += ["", f"{what}, by the reference reason class: "
                  + (", ".join(f"{k} {v}" for k, v in sorted(t[key].items())) or "none") + "."]
    lines += [""]
    lines += [f"Not rebuilt: {p}" for p in problems] + ([""] if problems else [])
    lines += ["Every added site:", "", "| where | path:line | reference class | gate (kernel decision) | "
              "derived diff compiles | re-check: left unfixed |", "| --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        if r["ref"] != "fixable" and r["derived"] == "fixable":
            lines.append(f"| {r['where'].replace('|', '&#124;')} | {r['path']}:{r['line']} | {r['ref_class']} | "
                         f"{r['gate']} | {'yes' if not r['compile_error'] else 'NO: ' + r['compile_error']} | "
                         f"{r['unfixed_after'] or 'none'} |")
    bad = [(r, f) for r in rows for f in findings(r)]
    lines += ["", "Findings (a site that got worse, added against the gate, a rewrite that fails or differs from the "
              "reference one where nothing is added): " + ("none." if not bad else ""), ""]
    lines += [f"- {r['where']} {r['path']}:{r['line']}: {f}" for r, f in bad]
    return lines + [""]


def main(argv: List[str]) -> int:
    start = time.monotonic()
    parts = {"corpus": corpus_rows()}
    if "--no-forks" not in argv:
        parts["forks"] = fork_rows()
    took = time.monotonic() - start
    md = ["# `--lengths derived` on the real corpora (issue 39)", "",
          "```bash", "python3 bench/derived_corpus.py   # " + f"{took:.0f} s here", "```", "",
          "Each site classified with `lengths=\"reference\"` and `lengths=\"derived\"` under the kernel it is judged",
          "with (the manifest's `kernel`; the fork tests' own `--kernel`). An added site: not fixable under reference,",
          "fixable under derived. The derived rewrite of each file is compiled and classified again (reference): each",
          "site fixable under derived must be compliant there, none left fixable.",
          f"Never to be added: a site manual for {', '.join(sorted(BLOCKED))}.", ""]
    md += section("tests/corpus", *parts["corpus"])
    if "forks" in parts:
        md += section("tests/test_fork_sites.py's trees (every api.run its tests make)", *parts["forks"])
    RESULTS.with_suffix(".md").write_text("\n".join(md))
    data = {k: {"totals": totals(rows), "problems": problems, "sites": rows}
            for k, (rows, problems, _) in parts.items()}
    RESULTS.with_suffix(".json").write_text(json.dumps(data, indent=1, default=str) + "\n")
    bad = sum(len(findings(r)) for rows, *_ in parts.values() for r in rows)
    bad += sum(len(problems) for _, problems, _ in parts.values())
    print(f"derived-corpus: {took:.1f} s, {bad} finding(s); {RESULTS.with_suffix('.md')}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
