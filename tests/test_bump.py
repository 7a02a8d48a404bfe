"""`topk-migrate bump`: signature reading, the typed diff, call-site verdicts and the CLI.

Releases come from tests/data/bump/*.json: the wrapper signatures topk_migrate.bump itself read
from the real wheels (tests/data/bump/regenerate.py; tests/test_bump_release.py checks the wheels
still give them). The sglang backends come from the real 0.5.12.post1 wheel (cached download).
"""
import json
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from topk_migrate import rules as registry
from topk_migrate.bump import bind, engine, sources
from topk_migrate.bump import diff as bump_diff
from topk_migrate.bump.signatures import KEYWORD_ONLY, POSITIONAL_ONLY, read_module
from topk_migrate.cli import main

DATA = Path(__file__).parent / "data" / "bump"


def release(name):
    return sources.load(str(DATA / f"{name}.json"))


def bump(tmp_path, source, old, new, name="fork.py"):
    f = tmp_path / name
    f.write_text(source)
    return engine.run([str(f)], release(old), release(new))


def only_site(report):
    assert len(report.sites) == 1, [s.to_dict() for s in report.sites]
    return report.sites[0]


# -- reading a wrapper -------------------------------------------------------------------

WRAPPER = '''
import torch
_err = None

def entry(q, /, kv, n=4, *rest, scale: float = 1.0, topk_length=None, meta, **kw):
    if _err is not None:
        raise _err
    if isinstance(meta, Sched):
        return _helper(q=q, topk_length=topk_length)
    assert topk_length is None, "no dynamic topk"
    if n > 8:
        raise ValueError("n too big")
    return q

def _helper(q, topk_length):
    if q.dim() == 2:
        assert topk_length.shape[0] == q.shape[0]
    return q

def _private(x):
    return x
'''


def test_reads_parameters_kinds_and_defaults_as_source_text():
    eps = read_module(WRAPPER, "sgl_kernel/flash_mla.py")
    assert sorted(eps) == ["entry"]  # private helpers are not entry points
    params = {p.name: p for p in eps["entry"].params}
    assert params["q"].kind == POSITIONAL_ONLY and params["q"].required
    assert params["n"].default == "4" and not params["n"].required
    assert params["scale"].kind == KEYWORD_ONLY and params["scale"].default == "1.0"
    assert params["meta"].required and params["meta"].kind == KEYWORD_ONLY
    assert [p.name for p in eps["entry"].positional()] == ["q", "kv", "n"]


def test_guards_carry_their_path_condition():
    guards = {g.test: g for g in read_module(WRAPPER, "m.py")["entry"].guards}
    refusal = guards["topk_length is None"]
    # the early return under `isinstance(meta, Sched)` puts the assert on the other path;
    # the test on a module global (`_err`) says nothing about the arguments and is left out
    assert refusal.condition == "not isinstance(meta, Sched)" and refusal.message == "no dynamic topk"
    helper = guards["topk_length.shape[0] == q.shape[0]"]
    assert helper.via == "_helper" and helper.condition == "isinstance(meta, Sched) and q.dim() == 2"
    raised = next(g for g in guards.values() if g.kind == "raise")
    assert raised.params == ["n"] and "n > 8" in raised.condition


# -- the typed diff on real releases ------------------------------------------------------

def test_0_3_19_inserts_descale_before_is_fp8_kvcache():
    changes = bump_diff.diff(release("sgl-kernel-0.3.17"), release("sgl-kernel-0.3.19"))
    kv = {(c.kind, c.param): c.detail for c in changes if c.entry_point == "flash_mla_with_kvcache"}
    # positions 1-based, as the call's own arguments are counted (positional argument 10 binds descale_q)
    assert kv[("param-added-optional", "descale_q")] == "`descale_q=None`, positional argument 10"
    assert kv[("param-added-optional", "descale_k")] == "`descale_k=None`, positional argument 11"
    assert "from positional argument 10 to 12" in kv[("position-changed", "is_fp8_kvcache")]
    assert "from positional argument 11 to 13" in kv[("position-changed", "indices")]


def test_0_4_3_adds_topk_length_and_the_decode_refusal():
    changes = bump_diff.diff(release("sglang-kernel-0.4.2.post2"), release("sglang-kernel-0.4.3"))
    added = {(c.entry_point, c.param) for c in changes if c.kind == "param-added-optional"}
    assert {("flash_mla_sparse_fwd", "attn_sink"), ("flash_mla_sparse_fwd", "topk_length")} <= added
    assert {("flash_mla_with_kvcache", p) for p in ("attn_sink", "extra_k_cache", "extra_indices_in_kvcache",
                                                     "topk_length", "extra_topk_length")} <= added
    refusals = [c.detail for c in changes if c.kind == "guard-added" and c.param == "topk_length"]
    assert "assert topk_length is None when not isinstance(tile_scheduler_metadata, FlashMLASchedMeta)" in refusals


def test_0_4_3_to_0_4_6_wrapper_is_unchanged():
    assert bump_diff.diff(release("sglang-kernel-0.4.3"), release("sglang-kernel-0.4.6")) == []


def test_rename_is_a_heuristic_and_says_so():
    old = read_module("def f(a, num_heads_per_head_k, c=1):\n    pass\n", "m.py")["f"]
    new = read_module("def f(a, num_q_tokens_per_head_k, c=1):\n    pass\n", "m.py")["f"]
    changes = bump_diff.diff_entry(old, new)
    assert [c.kind for c in changes] == ["param-renamed"] and "heuristic" in changes[0].detail


# -- call-site verdicts --------------------------------------------------------------------

TEN_POSITIONAL = ("from sgl_kernel.flash_mla import flash_mla_with_kvcache\n"
                  "def decode(q, k, bt, sl, meta, ns, scale, idx):\n"
                  "    return flash_mla_with_kvcache(q, k, bt, sl, 512, meta, ns, scale, False, True)\n")


def test_ten_positional_arguments_rebind_across_0_3_17_to_0_3_19(tmp_path):
    site = only_site(bump(tmp_path, TEN_POSITIONAL, "sgl-kernel-0.3.17", "sgl-kernel-0.3.19"))
    assert site.status == bind.REBINDS
    assert "positional argument 10 (`True`) binds `descale_q`, was `is_fp8_kvcache`" in site.reason


def test_nine_positional_arguments_bind_the_same(tmp_path):
    """Nine positional arguments bind the same parameters; what changes is the op an fp8 `q` runs (0.3.19's
    wrapper sends it to fwd_kvcache_mla_fp8), said on the path it takes, and the new descale pair."""
    nine = TEN_POSITIONAL.replace(", False, True)", ", False)")
    site = only_site(bump(tmp_path, nine, "sgl-kernel-0.3.17", "sgl-kernel-0.3.19"))
    assert site.status == bind.CHANGES_CALLEE and not any(f.verdict == bind.REBINDS for f in site.findings)
    assert ("when q.element_size() == 1, sgl-kernel==0.3.19 runs `torch.ops.sgl_kernel.fwd_kvcache_mla_fp8` where "
            "sgl-kernel==0.3.17 ran `torch.ops.sgl_kernel.fwd_kvcache_mla`") in site.reason
    assert "also new in the release, not passed: `descale_q`, `descale_k`" in site.reason


def test_downgrade_breaks_on_unknown_keyword_and_too_many_positionals(tmp_path):
    src = ("import sgl_kernel.flash_mla as fm\n"
           "def f(q, kv, idx, n, sink):\n"
           "    a = fm.flash_mla_sparse_fwd(q, kv, idx, 1.0, topk_length=n)\n"
           "    b = fm.flash_mla_sparse_fwd(q, kv, idx, 1.0, 512, sink)\n"
           "    c = fm.flash_mla_sparse_fwd(q, kv, idx)\n")
    a, b, c = bump(tmp_path, src, "sglang-kernel-0.4.6", "sglang-kernel-0.4.2.post2").sites
    assert a.status == b.status == c.status == bind.BREAKS
    assert "unexpected keyword argument `topk_length`" in a.reason
    assert "takes 5 positional arguments but 6 are given" in b.reason
    assert "missing required argument(s) `sm_scale`" in c.reason and "already fails" in c.reason


def test_star_args_across_a_positional_change_is_manual(tmp_path):
    src = ("from sgl_kernel.flash_mla import flash_mla_with_kvcache\n"
           "def f(*a):\n    return flash_mla_with_kvcache(*a)\n")
    site = only_site(bump(tmp_path, src, "sgl-kernel-0.3.17", "sgl-kernel-0.3.19"))
    assert site.status == bind.MANUAL and "*args" in site.reason


def test_passing_a_refused_parameter_on_every_path_is_manual():
    ep = read_module("def f(q, x=None):\n    assert x is None\n", "m.py")["f"]
    old = read_module("def f(q, x=None):\n    pass\n", "m.py")["f"]
    rel = sources.Release("d", "1", "o", {})
    findings = bind.compare(old, ep, bind.CallArgs(["q"], {"x": "t"}), rel, rel)
    assert [f.verdict for f in findings] == [bind.MANUAL]
    assert bind.compare(old, ep, bind.CallArgs(["q"], {"x": "None"}), rel, rel) == []


@pytest.fixture(scope="module")
def sglang_0_5_12(tmp_path_factory):
    from sglang_wheels import NSA, install_like_site_packages

    root = tmp_path_factory.mktemp("sglang-0.5.12.post1")
    install_like_site_packages("0.5.12.post1", root, backend=NSA)
    return root / "sglang" / "srt" / "layers" / "attention"


def test_sglang_0_5_12_backends_from_0_4_2_post2_to_0_4_6(sglang_0_5_12):
    r = engine.run([str(sglang_0_5_12)], release("sglang-kernel-0.4.2.post2"), release("sglang-kernel-0.4.6"))
    by = {(Path(s.path).name, s.entry_point): [] for s in r.sites}
    for s in r.sites:
        by[(Path(s.path).name, s.entry_point)].append(s)
    [prefill] = by[("nsa_backend.py", "flash_mla_sparse_fwd")]
    assert prefill.status == bind.OPPORTUNITY
    assert any(f.rule == "pass-topk-length" for f in prefill.findings)
    assert "fixable by the topk_length rule" in prefill.reason
    assert prefill.fix == f"topk-migrate apply --kernel sglang-kernel==0.4.6 {prefill.path}"
    [decode] = by[("nsa_backend.py", "flash_mla_with_kvcache")]
    assert decode.status == bind.OPPORTUNITY and decode.fix is None
    assert any(f.rule == "decode-topk-length" for f in decode.findings)
    for hazard in ("never rewritten", "assert topk_length is None when not isinstance(tile_scheduler_metadata",
                   "V3.2 does not support dynamic topk length", "FlashMLASchedMeta"):
        assert hazard in decode.reason
    # no `indices`: the decode rule stays out, and every new parameter is one the release asserts is None on
    # both paths a dense call can take (tensor metadata, and a FlashMLASchedMeta's dense branch)
    dense = by[("flashmla_backend.py", "flash_mla_with_kvcache")]
    assert dense and all(s.status == bind.NOT_APPLICABLE and s.fix is None for s in dense)
    assert not any(f.rule for s in dense for f in s.findings)
    assert all("this call passes no `indices`" in s.reason and "`extra_topk_length`" in s.reason for s in dense)
    assert all(s.status == bind.UNCHANGED for (_, e), ss in by.items() if e == "get_mla_metadata" for s in ss)
    # deepseek_v4_backend calls `flash_mla`, another distribution: not this bump's sites
    assert not any(n == "deepseek_v4_backend.py" for n, _ in by)
    assert r.exit_code() == 0 and not r.errors


def test_sparse_prefill_not_fixable_when_the_rule_says_manual(tmp_path):
    src = ("from sgl_kernel.flash_mla import flash_mla_sparse_fwd\n"
           "def f(q, kv, idx):\n    return flash_mla_sparse_fwd(q, kv, idx, 1.0)\n")  # no metadata in scope
    site = only_site(bump(tmp_path, src, "sglang-kernel-0.4.2.post2", "sglang-kernel-0.4.6"))
    assert site.status == bind.OPPORTUNITY and site.fix is None
    assert "not fixable automatically (topk_length rule: manual" in site.reason


def test_the_nesting_guard_measures_what_libcst_parses(tmp_path):
    """Deep nesting away from the calls is cut by narrowing and costs nothing (the whole file's depth
    was measured once, a 50 ms walk of a 200 KB backend); deep nesting in a call is refused, one line."""
    call = "from sgl_kernel.flash_mla import flash_mla_sparse_fwd\ndef f(q, kv, idx):\n    return flash_mla_sparse_fwd(q, kv, idx, {})\n"
    deep = "def g(x):\n" + "".join("    " * (i + 1) + "if x:\n" for i in range(90)) + "    " * 91 + "pass\n"
    site = only_site(bump(tmp_path, call.format("1.0") + deep, "sglang-kernel-0.4.2.post2", "sglang-kernel-0.4.6"))
    assert site.status == bind.OPPORTUNITY
    r = bump(tmp_path, call.format("- " * 250 + "1.0"), "sglang-kernel-0.4.2.post2", "sglang-kernel-0.4.6", "deep.py")
    assert r.sites == [] and len(r.errors) == 1 and "nesting too deep" in r.errors[0][1]


def test_direct_flash_mla_caller_moving_to_sgl_flash_mla_changes_defaults(tmp_path):
    src = ("import flash_mla\n"
           "def prefill(q, kv, idx, scale):\n    return flash_mla.flash_mla_sparse_fwd(q, kv, idx, scale)\n")
    site = only_site(bump(tmp_path, src, "flashmla-upstream-9241ae3", "sgl-flash-mla-1.0.0"))
    assert site.status == bind.CHANGES_DEFAULT
    about = {f.param: f for f in site.findings if f.verdict == bind.CHANGES_DEFAULT}
    assert set(about) == {"use_legacy", "return_log2_lse"}
    assert "current kernels" in about["use_legacy"].reason and "natural-log" in about["return_log2_lse"].reason




def test_the_three_rules_are_discovered_with_their_hooks():
    assert {r.id: (r.has_sites, r.has_bump, r.default_enabled) for r in registry.specs()} == {
        "pass-topk-length": (True, True, True), "decode-topk-length": (True, True, False),
        "new-default-semantics": (False, True, True)}


# -- sources and the cache ----------------------------------------------------------------

def _wheel(path: Path, body: str) -> Path:
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("sgl_kernel/flash_mla.py", body)
        z.writestr("sgl_kernel/__init__.py", "")
    return path


def test_wheel_read_once_then_served_from_cache_by_sha256(tmp_path, monkeypatch):
    monkeypatch.setenv("TOPK_MIGRATE_CACHE", str(tmp_path / "cache"))
    wheels = tmp_path / "cache" / "wheels"
    wheels.mkdir(parents=True)
    whl = _wheel(wheels / "sgl_kernel-9.9.9-cp310-abi3-manylinux2014_x86_64.whl", "def flash_mla_sparse_fwd(q, kv):\n    pass\n")
    first = sources.load("sgl-kernel==9.9.9")
    assert first.pin == "sgl-kernel==9.9.9" and list(first.entry_points) == ["flash_mla_sparse_fwd"]
    assert (tmp_path / "cache" / "signatures" / f"{first.sha256}.json").is_file()
    monkeypatch.setattr(zipfile, "ZipFile", None)  # a second read of the zip would fail
    assert sources.load(str(whl)).to_json() == first.to_json()
    whl.unlink()  # by NAME==VER, neither the wheel nor the index is needed any more
    assert sources.load("sgl-kernel==9.9.9").to_json() == first.to_json()


def test_unreachable_index_is_one_line_that_says_what_to_pass(tmp_path, monkeypatch):
    monkeypatch.setenv("TOPK_MIGRATE_CACHE", str(tmp_path / "cache"))
    for k, v in {"PIP_CONFIG_FILE": "/dev/null", "PIP_INDEX_URL": "http://127.0.0.1:9/simple",
                 "PIP_EXTRA_INDEX_URL": "", "PIP_FIND_LINKS": "", "PIP_RETRIES": "0", "PIP_TIMEOUT": "2"}.items():
        monkeypatch.setenv(k, v)
    r = CliRunner().invoke(main, ["bump", "--from", "sglang-kernel==0.4.2.post2", "--to", "sglang-kernel==0.4.6",
                                  str(tmp_path)])
    assert r.exit_code == 2
    err = r.output.strip()
    assert "\n" not in err and err.startswith("error: cannot download sglang-kernel==0.4.2.post2")
    assert "pass a wheel file or a path" in err


def test_site_packages_directory_names_its_distribution(tmp_path):
    (tmp_path / "sgl_kernel").mkdir()
    (tmp_path / "sgl_kernel" / "flash_mla.py").write_text("def flash_mla_sparse_fwd(q, kv, indices, sm_scale):\n    pass\n")
    info = tmp_path / "sgl_kernel-0.3.17.dist-info"
    info.mkdir()
    (info / "RECORD").write_text("sgl_kernel/flash_mla.py,sha256=x,1\n")
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: sgl-kernel\nVersion: 0.3.17\n")
    r = sources.load(str(tmp_path))
    assert r.pin == "sgl-kernel==0.3.17" and "flash_mla_sparse_fwd" in r.entry_points


@pytest.mark.parametrize("metadata, pin", [
    # a field's value runs to the end of its line: the line regex took `0.3.17` and named the release by it
    ("Metadata-Version: 2.1\nName: sgl-kernel\nVersion: 0.3.17 patched\n", None),
    # a folded line continues its field: the line regex found no Name
    ("Metadata-Version: 2.1\nName:\n sgl-kernel\nVersion: 0.3.17\n", "sgl-kernel==0.3.17"),
    # field names are case-insensitive: the line regex found neither
    ("metadata-version: 2.1\nname: sgl-kernel\nversion: 0.3.17\n", "sgl-kernel==0.3.17"),
    # the header ends at its first blank line: the line regex read the description's `Version: 9.9`
    ("Metadata-Version: 2.1\nName: sgl-kernel\n\nVersion: 9.9\n", None),
])
def test_site_packages_metadata_is_read_as_an_email_header(tmp_path, metadata, pin):
    """bump.sources read a dist-info's Name and Version with a line regex, beside kernels.metadata_fields (email's
    HeaderParser), which it now uses too (issue 38 item 6)."""
    (tmp_path / "sgl_kernel").mkdir()
    (tmp_path / "sgl_kernel" / "flash_mla.py").write_text("def flash_mla_sparse_fwd(q, kv, indices, sm_scale):\n    pass\n")
    info = tmp_path / "sgl_kernel-0.3.17.dist-info"
    info.mkdir()
    (info / "RECORD").write_text("sgl_kernel/flash_mla.py,sha256=x,1\n")
    (info / "METADATA").write_text(metadata)
    r = sources.load(str(tmp_path))
    assert r.pin == pin and "flash_mla_sparse_fwd" in r.entry_points


# -- the command ---------------------------------------------------------------------------

def cli(*args):
    return CliRunner().invoke(main, ["bump", *map(str, args)])


def test_cli_exit_1_on_rebinds_and_every_format(tmp_path):
    f = tmp_path / "fork.py"
    f.write_text(TEN_POSITIONAL)
    old, new = DATA / "sgl-kernel-0.3.17.json", DATA / "sgl-kernel-0.3.19.json"
    text = cli("--from", old, "--to", new, f)
    assert text.exit_code == 1 and f"{f}:3:12 rebinds sgl_kernel.flash_mla.flash_mla_with_kvcache" in text.output
    js = cli("--from", old, "--to", new, f, "--format", "json")
    data = json.loads(js.output[:js.output.rindex("}") + 1])
    assert js.exit_code == 1 and data["summary"]["rebinds"] == 1 and data["sites"][0]["verdict"] == "rebinds"
    assert {"kind": "position-changed", "entry_point": "flash_mla_with_kvcache", "param": "indices",
            "detail": "`indices` moved from positional argument 11 to 13"} in data["changes"]
    md = cli("--from", old, "--to", new, f, "--format", "markdown")
    assert md.exit_code == 1 and "| entry point | change | parameter | detail |" in md.output
    assert f"| rebinds | `{f}:3` | `flash_mla_with_kvcache` |" in md.output


def test_cli_exit_0_when_nothing_breaks_and_2_on_a_bad_release(tmp_path):
    f = tmp_path / "fork.py"
    f.write_text(TEN_POSITIONAL)
    same = DATA / "sgl-kernel-0.3.19.json"
    assert cli("--from", same, "--to", same, f).exit_code == 0
    bad = cli("--from", "not a release", "--to", same, f)
    assert bad.exit_code == 2 and bad.output.strip().count("\n") == 0 and "NAME==VERSION" in bad.output
    broken = tmp_path / "broken.py"
    broken.write_text("from sgl_kernel.flash_mla import flash_mla_with_kvcache\ndef f(:\n")
    assert cli("--from", same, "--to", same, broken).exit_code == 2


def test_upstream_rename_of_get_mla_metadata_breaks_keyword_callers(tmp_path):
    old, new = "flashmla-upstream-c28eca9-parent", "flashmla-upstream-c28eca9"
    renamed = [c for c in bump_diff.diff(release(old), release(new)) if c.kind == "param-renamed"]
    assert [(c.entry_point, c.param) for c in renamed] == [("get_mla_metadata", "num_heads_per_head_k")]
    assert "heuristic" in renamed[0].detail and "num_q_tokens_per_head_k" in renamed[0].detail
    src = ("from flash_mla import get_mla_metadata\n"
           "def meta(seqlens, h):\n"
           "    a = get_mla_metadata(seqlens, num_heads_per_head_k=h, num_heads_k=1)\n"
           "    b = get_mla_metadata(seqlens, h, 1)\n")
    a, b = bump(tmp_path, src, old, new).sites
    assert a.status == bind.BREAKS and "unexpected keyword argument `num_heads_per_head_k`" in a.reason
    # a positional caller binds the renamed slot: reported as a rebind that is probably the rename
    assert b.status == bind.REBINDS and "probably `num_heads_per_head_k` renamed (heuristic" in b.reason


def test_changed_default_left_out_is_changes_default(tmp_path):
    changes = bump_diff.diff(release("flashmla-upstream-9241ae3"), release("sgl-flash-mla-1.0.0"))
    assert ("default-changed", "is_fp8_kvcache") in {(c.kind, c.param) for c in changes}
    src = ("import flash_mla\n"
           "def dense(q, k, bt, sl, meta):\n    return flash_mla.flash_mla_with_kvcache(q, k, bt, sl, 512, meta)\n"
           "def fp8(q, k, bt, sl, meta):\n"
           "    return flash_mla.flash_mla_with_kvcache(q, k, bt, sl, 512, meta, is_fp8_kvcache=False, use_legacy=True)\n")
    dense, fp8 = bump(tmp_path, src, "flashmla-upstream-9241ae3", "sgl-flash-mla-1.0.0").sites
    assert any(f.verdict == bind.CHANGES_DEFAULT and "`is_fp8_kvcache` is left to its default, which changed from "
               "False to None" in f.reason for f in dense.findings)
    # more serious: sgl-flash-mla 1.0.0 removed dense decoding from the current kernels, and asserts so
    assert dense.status == bind.MANUAL and "`assert use_legacy`" in dense.reason
    assert "this call passes no `indices` or `use_legacy`" in dense.reason
    # both passed: nothing left to a changed default, but the legacy ops come through another module
    assert not any(f.verdict == bind.CHANGES_DEFAULT for f in fp8.findings)
    assert fp8.status == bind.CHANGES_CALLEE and "`flash_mla._loader.get_ops().dense_decode_fwd`" in fp8.reason


def test_required_parameter_made_optional_is_its_own_kind():
    changes = bump_diff.diff(release("sglang-kernel-0.4.2.post2"), release("sglang-kernel-0.4.3"))
    assert ("param-now-optional", "flash_mla_with_kvcache", "num_splits") in {
        (c.kind, c.entry_point, c.param) for c in changes}


@pytest.mark.heavy  # the whole nsa_backend.py bound twice
def test_narrowing_changes_no_site(sglang_0_5_12, monkeypatch):
    """Files are parsed narrowed to their call statements and the imports of their callees: same
    sites, same lines, columns and verdicts as the whole file."""
    nsa = sglang_0_5_12 / "nsa_backend.py"
    old, new = release("sglang-kernel-0.4.2.post2"), release("sglang-kernel-0.4.6")
    narrowed = [s.to_dict() for s in engine.run([str(nsa)], old, new).sites]
    monkeypatch.setenv("TOPK_MIGRATE_NO_NARROW", "1")  # the workers are forked after this
    whole = [s.to_dict() for s in engine.run([str(nsa)], old, new).sites]
    assert narrowed == whole and len(whole) == 3


def test_call_written_for_the_new_release_says_so(tmp_path):
    src = ("from sgl_kernel.flash_mla import flash_mla_sparse_fwd\n"
           "def f(q, kv, idx, n):\n    return flash_mla_sparse_fwd(q, kv, idx, 1.0, topk_length=n)\n")
    site = only_site(bump(tmp_path, src, "sglang-kernel-0.4.2.post2", "sglang-kernel-0.4.6"))
    assert any(f.verdict == bind.UNCHANGED and "written for the new release" in f.reason for f in site.findings)
    assert site.status == bind.OPPORTUNITY and "`attn_sink`" in site.reason  # still not passed


def test_rev_reads_the_commit_not_the_work_tree(tmp_path, monkeypatch):
    import subprocess

    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    subprocess.run(git + ["init", "-q", str(repo)], check=True)
    ten = ("from sgl_kernel.flash_mla import flash_mla_with_kvcache\n"
           "def f(q, k, bt, sl, meta, ns, s, c, f8, idx):\n"
           "    return flash_mla_with_kvcache(q, k, bt, sl, 512, meta, ns, s, c, f8)\n")
    (repo / "pkg" / "fork.py").write_text(ten)
    subprocess.run(git + ["-C", str(repo), "add", "-A"], check=True)
    subprocess.run(git + ["-C", str(repo), "commit", "-qm", "x"], check=True)
    (repo / "pkg" / "fork.py").write_text("x = 1\n")  # the work tree no longer calls the kernel
    monkeypatch.chdir(repo)
    args = ["bump", "--from", str(DATA / "sgl-kernel-0.3.17.json"), "--to", str(DATA / "sgl-kernel-0.3.19.json"),
            "--format", "json", "pkg"]
    on_disk = json.loads(CliRunner().invoke(main, args).stdout)
    assert on_disk["sites"] == []
    r = CliRunner().invoke(main, args + ["--rev", "HEAD"])
    doc = json.loads(r.stdout)
    assert r.exit_code == 1 and [(s["path"], s["verdict"]) for s in doc["sites"]] == [("pkg/fork.py", bind.REBINDS)]
    assert not any("topk-migrate-bump-rev" in json.dumps(s) for s in doc["sites"])
    bad = CliRunner().invoke(main, args + ["--rev", "no-such-rev"])
    assert bad.exit_code == 2 and "no such commit" in bad.output


def test_narrowing_changes_no_site_on_the_fixtures(monkeypatch):
    """Every fixture backend, narrowed (its call statements and their imports) and whole: the same sites."""
    old, new = release("sglang-kernel-0.4.2.post2"), release("sglang-kernel-0.4.6")
    files = sorted(str(p) for p in (Path(__file__).resolve().parents[1] / "fixtures").rglob("*.py"))
    narrowed = [s.to_dict() for f in files for s in engine.analyse_file(f, f, old, new)[1]]
    monkeypatch.setenv("TOPK_MIGRATE_NO_NARROW", "1")
    whole = [s.to_dict() for f in files for s in engine.analyse_file(f, f, old, new)[1]]
    assert narrowed == whole and len(whole) >= 10


def test_sarif_and_github_are_audits_renderers_with_the_bump_rules(tmp_path):
    """One result type, one report layer: bump's SARIF lists the bump rules and the signature diff's ids
    of the results it has (an unchanged site is not a result), and names both releases."""
    f = tmp_path / "fork.py"
    f.write_text("from sgl_kernel.flash_mla import flash_mla_sparse_fwd, get_mla_metadata\n"
                 "def f(q, kv, idx, s):\n    get_mla_metadata(s, 1)\n    return flash_mla_sparse_fwd(q, kv, idx, 1.0)\n")
    old, new = DATA / "sglang-kernel-0.4.2.post2.json", DATA / "sglang-kernel-0.4.6.json"
    sarif = json.loads(cli("--from", old, "--to", new, f, "--format", "sarif").stdout)["runs"][0]
    ids = [r["id"] for r in sarif["tool"]["driver"]["rules"]]
    assert set(ids) == {s.id for s in registry.specs() if s.has_bump}  # no `signature-unchanged`
    (res,) = sarif["results"]
    assert res["ruleId"] == "pass-topk-length" and res["level"] == "note" and res["properties"]["status"] == "opportunity"
    assert sarif["properties"]["from"] == "sglang-kernel==0.4.2.post2" and sarif["properties"]["summary"]["unchanged"] == 1
    gh = cli("--from", old, "--to", new, f, "--format", "github").stdout.splitlines()
    assert gh == [line for line in gh if line.startswith("::")] and len(gh) == 1
    assert gh[0].startswith(f"::notice file={f},line=4,col=12,title=topk-migrate bump pass-topk-length%3A opportunity::")


def test_a_file_over_max_bytes_is_not_read_whole(tmp_path, monkeypatch):
    """bump reads a file under TOPK_MIGRATE_MAX_BYTES whole; a bigger one is scanned in windows for the releases'
    entry points: one that names none is no site, one that names one is a one-line error, never held whole."""
    from topk_migrate import discover, files

    reads = []
    for mod in (discover, files):
        real = mod.read_regular
        monkeypatch.setattr(mod, "read_regular", lambda p, limit=None, real=real: (reads.append(limit), real(p, limit))[1])
    monkeypatch.setenv("TOPK_MIGRATE_MAX_BYTES", "5000")
    pad = "x = 1\n" * 2000
    f = tmp_path / "fork.py"

    def run(source):
        f.write_text(source)
        return engine.run([str(f)], release("sgl-kernel-0.3.17"), release("sgl-kernel-0.3.19"), jobs=1)

    report = run(TEN_POSITIONAL + pad)
    assert report.sites == [] and len(report.errors) == 1, report.errors
    assert "file too large" in report.errors[0][1] and "TOPK_MIGRATE_MAX_BYTES" in report.errors[0][1]
    report = run("import sgl_kernel.flash_mla\n" + pad)
    assert report.sites == [] and report.errors == []
    assert reads and None not in reads  # every read of the fork's file was bounded
    monkeypatch.setenv("TOPK_MIGRATE_MAX_BYTES", "50000")
    assert only_site(run(TEN_POSITIONAL + pad)).status == bind.REBINDS
