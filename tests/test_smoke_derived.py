"""`topk-migrate smoke --lengths derived` on the CPU, with the torch references as the kernel and emitters.

The smoke rewrites with lengths="derived-everywhere" (the derived shape at every site, where the
reference fix is provable too) and, on the CPU's small shapes, MIN_ROWS lowered to lengths.CPU_MIN_ROWS
for that rewrite only. The planted formulation below proves the scattered (not front-packed) cases
are what catch a derived expression that is only right on front-packed rows.
"""
import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="the smoke needs torch (pip install 'topk-migrate[smoke]')")

from click.testing import CliRunner  # noqa: E402

from topk_migrate.codemods.pass_topk_length import derived as rule  # noqa: E402
from topk_migrate.codemods.pass_topk_length.smoke import contract, emitters, lengths, runner  # noqa: E402
from topk_migrate.codemods.pass_topk_length.smoke.command import smoke_command  # noqa: E402
from topk_migrate.codemods.pass_topk_length.smoke.kernel import KernelCall, injected, load_kernel  # noqa: E402
from topk_migrate.codemods.pass_topk_length.smoke.report import Report  # noqa: E402

EXAMPLE = runner.default_example()
PIN = "sglang-kernel==0.4.6"
ENGINE = Path(__file__).resolve().parents[1] / ".carry/engines/sglang-0.5.16/sglang/srt/layers/attention/dsa_backend.py"
FEW = ("prefill_ramp", "decode_mixed", "min_rows_minus_1", "min_rows", "e2e_extend_causal_ramp", "e2e_decode_short_ctx",
       "e2e_extend_min_rows")


def derived_smoke(path: Path, only=FEW):
    """The pipeline in derived mode on `path` (a few batches and scenarios, to keep the default tier fast)."""
    original = path.read_text()
    with lengths.rewrite_min_rows("cpu") as min_rows:
        patched, sites = runner.rewrite(original, str(path), PIN, "derived")
    return runner.smoke_sources(original, patched, str(path), load_kernel("cpu"), "cpu", sites=sites, only=only,
                                min_rows=min_rows)


def failed(report):
    return {c.name: c.detail for c in report.checks if c.status == "fail"}


def test_cli_smokes_the_bundled_example_with_derived_lengths(tmp_path):
    out = tmp_path / "r.json"
    res = CliRunner().invoke(smoke_command, ["--device", "cpu", "--lengths", "derived", "--json", str(out)])
    assert res.exit_code == 0, res.output
    data = json.loads(out.read_text())
    checks = {c["name"]: c for c in data["checks"]}
    assert data["ok"] and data["mode"].startswith("end-to-end")
    assert f"from MIN_ROWS {lengths.CPU_MIN_ROWS} rows" in data["lengths"]
    assert f"lowered from {rule.MIN_ROWS} for this rewrite" in data["lengths"]  # and restored after it
    assert checks["rewrite.applied"]["status"] == "pass"
    assert any(f".shape[0] >= {lengths.CPU_MIN_ROWS} and " in e for e in checks["rewrite.applied"]["data"]["expressions"])
    bitwise = {n: c for n, c in checks.items() if n.startswith("bitwise.")}
    for name in ("fast_topk_transform_fused.prefill_ramp", "fast_topk_transform_fused.min_rows", "e2e_extend_causal_ramp",
                 "e2e_extend_min_rows"):  # at or above MIN_ROWS: the kernel gets the derived lengths, front-packed or not
        for tag in ("", "scattered."):
            assert "reads exactly the blocks holding a valid slot on all" in bitwise[f"bitwise.{tag}{name}"]["detail"]
    for name in ("fast_topk_transform_fused.min_rows_minus_1", "fast_topk_transform_fused.decode_mixed", "e2e_decode_short_ctx"):
        assert "None (full width)" in bitwise[f"bitwise.{name}"]["detail"]  # below it: None
    plain = [n for n in bitwise if not n.startswith("bitwise.scattered.")]
    assert all(c["status"] == "pass" for c in bitwise.values()) and len(bitwise) == 2 * len(plain) >= 2 * (13 + 9)
    assert checks["derived.min_rows_reached"]["status"] == "pass"
    # the reference fix's contract checks do not run, and say why; none of the emitter contract checks ran
    for name in lengths.NOT_APPLICABLE:
        assert checks[name]["status"] == "skip" and checks[name]["detail"].startswith("derived mode: ")
    assert not any(n.startswith("contract.fast_topk") for n in checks)
    assert checks["hot_path.no_allocation"]["status"] == "info"  # the lengths are computed at the call, by design
    assert {checks[n]["status"] for n in ("cuda_graph.replay", "cuda_graph.derived", "timing")} == {"skip"}
    assert "--lengths [reference|derived]" in CliRunner().invoke(smoke_command, ["--help"]).output


def test_scattered_rows_are_not_front_packed_and_keep_their_entries():
    c = contract.make_case("t", [0, 1, 5, 40, 64, 128, 128], [0, 9, 5, 300, 64, 128, 900], 128, 1000, 64, "cpu", seed=4)
    got = emitters.scatter_rows(c.indices)
    for before, after, n in zip(c.indices.tolist(), got.tolist(), c.topk_length.tolist()):
        assert sorted(before) == sorted(after)  # the same entries, each once
        assert all(x == -1 for x in after[2 * n:])  # within the first 2 * count slots
    broken = {v.row for v in contract.check_front_packed(got, c.topk_length, 1000)}
    assert {2, 3, 4} <= broken  # interior -1: what the reference fix cannot stand
    assert torch.equal(emitters.scatter_rows(c.indices), got)  # the same every time (pinned calls, CUDA graphs)


def test_derived_lengths_stay_bitwise_identical_on_scattered_rows(tmp_path):
    """The bundled example (copied out of the checkout) fed by its emitter, front-packed and scattered."""
    path = tmp_path / "dsa_backend.py"
    path.write_text(EXAMPLE.read_text())
    r = derived_smoke(path)
    assert r.ok, failed(r)
    scattered = [c for c in r.checks if c.name.startswith("bitwise.scattered.")]
    assert len(scattered) == 7 and all(c.status == "pass" for c in scattered)
    assert sum("reads exactly the blocks holding a valid slot" in c.detail for c in scattered) == 4


def test_a_derived_expression_right_only_on_front_packed_rows_fails_the_smoke(tmp_path, monkeypatch):
    """Planted: count the valid entries instead of the last valid slot + 1. The two agree on front-packed
    rows (those checks pass) and differ on scattered ones: there the kernel skips valid entries."""
    monkeypatch.setitem(rule.FORMULATIONS, "count", lambda idx: f"(({idx} >= 0).flatten(1).sum(1)).int()")
    monkeypatch.setattr(rule, "FORMULATION", "count")
    path = tmp_path / "dsa_backend.py"
    path.write_text(EXAMPLE.read_text())
    r = derived_smoke(path)
    f = failed(r)
    assert not r.ok and f
    assert all(n.startswith("bitwise.scattered.") for n in f), f
    for name in ("fast_topk_transform_fused.prefill_ramp", "fast_topk_transform_fused.min_rows", "e2e_extend_causal_ramp"):
        assert "topk_length outside [last valid slot + 1" in f[f"bitwise.scattered.{name}"]
        assert "differ" in f[f"bitwise.scattered.{name}"]


def test_lengths_verdict_against_the_kernel_call():
    idx = torch.tensor([[4, -1, 7, -1], [-1, -1, -1, -1], [1, 2, 3, 5]], dtype=torch.int32).unsqueeze(1)
    assert lengths.expected(idx, 3).tolist() == [3, 0, 4] and lengths.expected(idx, 4) is None

    def call(topk_length):
        return KernelCall(idx, topk_length, (), 10)

    assert lengths.verdict(call(torch.tensor([3, 0, 4], dtype=torch.int32)), 3)[0]
    ok, why = lengths.verdict(call(torch.tensor([2, 0, 4], dtype=torch.int32)), 3)
    assert not ok and "row 0: 2, want 3" in why
    assert not lengths.verdict(call(None), 3)[0] and lengths.verdict(call(None), 4)[0]
    assert not lengths.verdict(call(torch.tensor([3, 0, 4], dtype=torch.int32)), 4)[0]  # lengths below MIN_ROWS


def test_timing_bars():
    assert lengths.timing_bar(1024, 2048, 1.9, 1.01, False)[0]  # below MIN_ROWS: parity
    assert not lengths.timing_bar(1024, 2048, 1.9, 1.05, False)[0]
    assert lengths.timing_bar(8192, 2048, 1.0, 0.975, True)[0] and not lengths.timing_bar(8192, 2048, 1.0, 0.96, True)[0]
    assert lengths.timing_bar(4096, 2048, 1.3, 1.2, False)[0] and not lengths.timing_bar(4096, 2048, 1.3, 0.99, False)[0]
    assert lengths.timing_bar(16384, 2048, 1.06, 0.99, False)[0] is None  # ideal gain under 10%: no bar


@pytest.mark.parametrize("emitter", emitters.NAMES)
def test_graph_check_runs_on_cpu_with_a_stand_in_graph(tmp_path, monkeypatch, emitter):
    """cuda_graph.derived's body with a stand-in for CUDA graphs (replay runs the step again into the captured
    buffers): its inputs, emitter calls, scattering and comparisons work before a GPU sees them."""
    em = emitters.load_emitters("cpu", "0.4.6")

    class Graph:
        def __init__(self, fn, out, topk):
            self.fn, self.out, self.topk = fn, out, topk

        def replay(self):
            out = self.fn()
            self.topk.copy_(em.last_out)
            self.out.copy_(out)

    def capture(fn):
        out = fn()
        return Graph(fn, out, em.last_out), out

    monkeypatch.setattr(runner, "_capture", capture)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    path = tmp_path / "dsa_backend.py"
    with lengths.rewrite_min_rows("cpu") as min_rows:
        patched, _ = runner.rewrite(EXAMPLE.read_text(), str(path), PIN, "derived")
    new = runner.isolate.isolate(patched, str(path), "ExampleDSABackend._forward_flashmla_sparse").bind({"device_sm_major": 9})
    kernel, report = load_kernel("cpu"), Report(str(path), "cpu")
    with injected(kernel), emitters.injected_emitters(em):
        runner.graph_derived(report, kernel, em, emitter, new, "cpu", 128, 64, min_rows)
    (check,) = report.checks
    assert check.status == "pass", check.detail
    assert check.detail.count(f"reads exactly the blocks holding a valid slot on all {min_rows} rows") == 4


@pytest.mark.skipif(not ENGINE.is_file(), reason="sglang 0.5.16's dsa_backend.py is not in .carry/ (bench/gpu_prepare.sh)")
def test_sglang_engine_with_derived_lengths():
    """sglang 0.5.16's helper, isolated, fed by the three emitters its top-k path uses, front-packed and scattered."""
    r = derived_smoke(ENGINE, only=("prefill_ramp", "decode_mixed", "min_rows_minus_1", "min_rows"))
    assert r.ok, failed(r)
    got = {c.name: c for c in r.checks}
    assert "derived from their indices" in got["rewrite.applied"].detail
    for emitter in emitters.NAMES:
        for tag in ("", "scattered."):
            assert "reads exactly the blocks holding a valid slot on all 64 rows" in got[f"bitwise.{tag}{emitter}.min_rows"].detail
            assert "None (full width)" in got[f"bitwise.{tag}{emitter}.min_rows_minus_1"].detail


def test_a_run_that_never_reaches_min_rows_fails(tmp_path):
    """Only calls below MIN_ROWS: every one passes None and is identical, but the derived lengths never ran."""
    path = tmp_path / "dsa_backend.py"
    path.write_text(EXAMPLE.read_text())
    r = derived_smoke(path, only=("decode_mixed", "e2e_decode_short_ctx"))
    assert list(failed(r)) == ["derived.min_rows_reached"], failed(r)
