"""Issue 26: the real-site corpus (tests/corpus/manifest.json, results/corpus.md). Kernel call sites from public
repositories, each judged by reading the code, its status and reason class recorded beside the judgement.

Two tiers, and what each can run:
- the light test (every run, CI included) holds the manifest itself to its form: every file pinned by commit
  and sha256, every site with a status, a known reason class and a written judgement, at least 60 sites, and
  the figures of results/corpus.md equal to the manifest's;
- the heavy test rebuilds the sources from the fetched snapshots (bench/corpus_build.py) and runs the tool on
  them. The snapshots are not committed and CI has no way to fetch them, so where they are missing it skips,
  saying so, in CI too: CI cannot vouch for the verdicts, only for the manifest; a machine with the snapshots
  (TOPK_MIGRATE_MIRROR, default /work/.mirror) runs it with `python3 -m pytest -m heavy tests/test_corpus.py`.
"""
import collections
import re

import pytest

import corpus_build  # bench/corpus_build.py (bench/ is on sys.path: pyproject.toml's pytest pythonpath)
from helpers import ROOT

MANIFEST = corpus_build.load()
STATUSES = {"compliant", "opt-out", "fixable", "manual"}
CLASSES = {name for name, _ in corpus_build.REASON_CLASSES}


def all_sites():
    return [(f, s) for f in MANIFEST["files"] for s in f["sites"]]


def figures() -> dict:
    sites = [s for _, s in all_sites()]
    refusals = collections.Counter(s["class"] for s in sites if s["status"] == "manual")
    return {
        "sites": len(sites),
        "files": len(MANIFEST["files"]),
        "repositories": len({f["repo"] for f in MANIFEST["files"]}),
        "fixable": sum(s["status"] == "fixable" for s in sites),
        "compliant": sum(s["status"] == "compliant" for s in sites),
        "manual": sum(s["status"] == "manual" for s in sites),
        "refusals": dict(refusals),
    }


def test_the_manifest_pins_every_file_and_judges_every_site():
    assert len(all_sites()) >= 60
    for f in MANIFEST["files"]:
        assert re.fullmatch(r"[0-9a-f]{40}", f["commit"]) and re.fullmatch(r"[0-9a-f]{64}", f["sha256"]), f
        assert f["dir"].split("@")[0] == f["repo"].replace("/", "+") and not f["path"].startswith("/")
        assert f["sites"] or f.get("note"), f"{f['dir']}/{f['path']}: no site and no note saying why"
        for s in f["sites"]:
            assert s["status"] in STATUSES and s["class"] in CLASSES, s
            assert len(s["judgement"]) > 40, s
            fixable_class = s["class"] == "fixable"
            assert fixable_class == (s["status"] == "fixable"), s


def test_the_note_gives_the_manifests_figures():
    note = (ROOT / "results" / "corpus.md").read_text()
    got = figures()
    for key in ("sites", "files", "repositories", "fixable", "compliant", "manual"):
        assert f"| {key} | {got[key]} |" in note, (key, got[key])
    for cls, n in got["refusals"].items():
        assert f"| {cls} | {n} |" in note, (cls, n)


@pytest.fixture(scope="module")
def rebuilt(tmp_path_factory):
    missing = sorted({f["repo"] for f in MANIFEST["files"] if not corpus_build.git_dir(f["repo"]).is_dir()})
    if missing:
        pytest.skip(f"corpus snapshots not on this machine ({len(missing)} of them, e.g. {missing[0]} under "
                    f"{corpus_build.mirror_root()}); CI cannot fetch them: only the manifest's form is checked there")
    out = tmp_path_factory.mktemp("corpus")
    written, problems = corpus_build.rebuild(out, MANIFEST)
    assert not problems, problems
    return out, corpus_build.sites(out, MANIFEST)


@pytest.mark.heavy
def test_every_site_gets_the_judged_status_and_reason_class(rebuilt):
    _, got = rebuilt
    wrong = []
    for f in MANIFEST["files"]:
        key = f"{f['dir']}/{f['path']}"
        assert not got.get(key + "#errors"), (key, got[key + "#errors"])
        want = {(s["line"], s["status"], s["class"]) for s in f["sites"]}
        have = {(s.line, s.status.value, corpus_build.reason_class(s.status.value, s.reason)) for s in got.get(key, [])}
        if want != have:
            wrong.append((key, sorted(want - have), sorted(have - want),
                          [s.reason for s in got.get(key, []) if (s.line, s.status.value,
                           corpus_build.reason_class(s.status.value, s.reason)) not in want]))
    assert not wrong, "\n".join(map(str, wrong))


@pytest.mark.heavy
def test_check_exits_0_on_every_corpus_file_with_nothing_to_do(rebuilt):
    from topk_migrate import api

    out, _ = rebuilt
    quiet = [f for f in MANIFEST["files"] if all(s["status"] in ("compliant", "opt-out") for s in f["sites"])]
    assert len(quiet) >= 30
    for f in quiet:
        rep = api.run([str(out / f["dir"] / f["path"])], kernel=f.get("kernel"))
        assert rep.exit_code() == 0, (f["dir"], f["path"], [s.format() for s in rep.sites])


@pytest.mark.heavy
def test_no_false_site_and_no_missed_call(rebuilt):
    """Every call of a kernel name in the corpus is a site, and every site is a call or an unchecked value use."""
    out, got = rebuilt
    kernel = r"(?:flash_mla_sparse_fwd|flash_mla_sparse_prefill|sparse_prefill_fwd)"
    for f in MANIFEST["files"]:
        key = f"{f['dir']}/{f['path']}"
        text = (out / key).read_text(encoding="utf-8", errors="replace")
        lines = text.splitlines()
        aliases = set(re.findall(kernel + r"\s+as\s+(\w+)", text))  # `import ... as vllm_flash_mla_sparse_fwd`
        names = "|".join([kernel, *map(re.escape, sorted(aliases))])
        call = re.compile(r"(?<![\w])(?:" + names + r")(?:\.default)?\s*\(")
        calls = set()
        for i, t in enumerate(lines):
            m = call.search(t)
            if m and not t.lstrip().startswith(("def ", "#")) and t[:m.start()].count('"') % 2 == 0 \
                    and t[:m.start()].count("'") % 2 == 0:  # not inside a string on that line
                calls.add(i + 1)
        reported = {s.line for s in got.get(key, [])}
        value_uses = {s["line"] for s in f["sites"] if s["class"] == "value-use"}
        assert calls <= reported, (key, calls - reported)
        assert reported - calls <= value_uses, (key, reported - calls)
