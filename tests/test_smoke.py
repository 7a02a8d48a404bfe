"""The smoke pipeline end to end on the CPU, with the torch reference as the kernel.

These run the real codemod and the real pipeline on small shapes; the planted
cases prove the smoke fails when it must.
"""
import json
import math

import pytest

torch = pytest.importorskip("torch", reason="the smoke needs torch (pip install 'topk-migrate[smoke]')")

from click.testing import CliRunner  # noqa: E402

from topk_migrate.api import migrate_source  # noqa: E402
from topk_migrate.codemods.pass_topk_length.smoke import contract, emitters, reference  # noqa: E402
from topk_migrate.codemods.pass_topk_length.smoke.command import smoke_command  # noqa: E402
from topk_migrate.codemods.pass_topk_length.smoke.kernel import load_kernel  # noqa: E402
from topk_migrate.codemods.pass_topk_length.smoke.runner import default_example, run_smoke, smoke_sources  # noqa: E402

EXAMPLE = default_example()
PIN = "sglang-kernel==0.4.6"


def statuses(report):
    return {c.name: c.status for c in report.checks}


def failed(report):
    return {c.name: c.detail for c in report.checks if c.status == "fail"}


def smoke_text(original, patched, name="backend.py", only=None):
    """The pipeline on two versions of a file (`only`: a few batches, to keep CI fast)."""
    sites = migrate_source(original, path=name, kernel=PIN).sites
    return smoke_sources(original, patched, name, load_kernel("cpu"), "cpu", sites=sites, only=only)


def tool_patch(src, name="backend.py"):
    m = migrate_source(src, path=name, kernel=PIN)
    assert m.changed, [s.format() for s in m.sites]
    return m.new_source


# -- the whole command ---------------------------------------------------------


def test_cli_smokes_the_bundled_example_and_every_check_passes(tmp_path):
    out = tmp_path / "r.json"
    res = CliRunner().invoke(smoke_command, ["--device", "cpu", "--json", str(out)])
    assert res.exit_code == 0, res.output
    data = json.loads(out.read_text())
    assert data["ok"] and data["mode"].startswith("end-to-end")
    assert data["engine_topk_path"].startswith("fast_topk_transform_fused (dsa_backend.py:")
    assert data["engine_clip"].startswith("compute_dsa_seqlens at dsa_backend.py:")
    # which kernel decision the rewrite used, and the one the file's own pins give, with where each came from
    assert data["kernel_decision"].startswith("rewrite used sglang-kernel==0.4.6")
    assert "own decision (apply without --kernel): sglang-kernel>=0.4.3 from " in data["kernel_decision"]
    assert data["kernel_decision"].endswith("requirements.txt")
    got = {c["name"]: c["status"] for c in data["checks"]}
    # every length mix the issue names, from the emitter the backend's top-k path calls, then through the helper
    for name in ("prefill_ramp", "extend_on_prefix", "ragged_batch", "all_full", "decode_mixed", "decode_len_0_1",
                 "decode_padded_rows", "verify_rows", "ties_decode", "ties_extend", "heads_16_padded"):
        assert got[f"contract.fast_topk_transform_fused.{name}"] == "pass"
        assert got[f"bitwise.fast_topk_transform_fused.{name}"] == "pass"
    assert not any(".fast_topk_v2." in n or "ragged_fused" in n for n in got)  # not on this backend's path
    # and end to end, through the backend's own metadata and top-k call
    for name in ("e2e_extend_causal_ramp", "e2e_decode_graph_padded_rows", "e2e_verify_spec_rows", "e2e_decode_heads_padded"):
        assert got[f"bitwise.{name}"] == "pass"
        assert got[f"contract.fast_topk_transform_fused.{name}"] == "pass"
    for name in ("kernel.accepts_topk_length", "rewrite.applied", "guard.row_mismatch",
                 "contract.front_packed", "hot_path.no_allocation"):
        assert got[name] == "pass"
    assert {got["cuda_graph.replay"], got["hot_path.no_host_sync"], got["timing"]} == {"skip"}
    assert "OK:" in res.output and "FAIL" not in res.output and "synthesized" not in res.output


def test_engine_like_file_runs_without_importing_its_engine():
    """Module-level imports of an engine that does not exist here: the helper
    is isolated, patched by the tool, and fed by every emitter (the file's own
    top-k path names none). The bundled example's test runs every batch."""
    r = smoke_text(ENGINE, tool_patch(ENGINE), only=("prefill_ramp", "extend_on_prefix", "decode_len_0_1", "verify_rows", "ties_decode"))
    got = statuses(r)
    assert r.ok, failed(r)
    for emitter in ("fast_topk_v2", "fast_topk_transform_fused", "fast_topk_transform_ragged_fused"):
        assert got[f"contract.{emitter}.prefill_ramp"] == got[f"bitwise.{emitter}.prefill_ramp"] == "pass"
    assert "contract.fast_topk_transform_ragged_fused.verify_rows" not in got  # ragged serves extend only
    assert got["contract.fast_topk_v2.verify_rows"] == "pass"
    assert r.meta["engine_clip"].startswith("min(length, topk)")


def test_engine_top_k_path_and_clip_are_read_from_its_own_package(tmp_path):
    """An engine whose top-k lives in a sibling module of its package: the emitters
    it imports from sgl_kernel are found there, and its clip function is run."""
    pkg = tmp_path / "eng" / "attn"
    (pkg / "dsa").mkdir(parents=True)
    (pkg / "dsa" / "topk.py").write_text("def run(s, l):\n    from sgl_kernel import fast_topk_v2\n    return fast_topk_v2(s, l, 2048)\n")
    (pkg / "dsa" / "utils.py").write_text("from eng.runtime import cfg\n\n\ndef compute_dsa_seqlens(x, dsa_index_topk):\n    return x.clamp(max=dsa_index_topk)\n")
    src = ENGINE.replace("from fakeengine.srt.runtime import get_config, engine_check",
                         "from fakeengine.srt.runtime import get_config, engine_check\n"
                         "from eng.attn.dsa.topk import run\nfrom eng.attn.dsa.utils import compute_dsa_seqlens")
    p = pkg / "backend.py"
    p.write_text(src)
    assert emitters.engine_topk_path(str(p), src) == {"fast_topk_v2": "dsa/topk.py:2"}
    clip, where = emitters.engine_function(str(p), src, "compute_dsa_seqlens")
    assert where == "compute_dsa_seqlens at dsa/utils.py:4"
    assert clip(torch.tensor([1, 300]), 128).tolist() == [1, 128]
    r = smoke_text(src, tool_patch(src), name=str(p), only=("decode_mixed", "prefill_ramp"))
    got = statuses(r)
    assert got["contract.fast_topk_v2.decode_mixed"] == "pass" and not failed(r)
    assert not any("fast_topk_transform" in n for n in got)
    assert r.meta["engine_clip"] == "compute_dsa_seqlens at dsa/utils.py:4"


def test_already_compliant_file_is_a_pass_with_nothing_to_migrate(tmp_path):
    p = tmp_path / "dsa_backend.py"
    p.write_text(tool_patch(EXAMPLE.read_text()))
    out = tmp_path / "r.json"
    assert run_smoke(str(p), device="cpu", json_path=str(out)) == 0
    checks = {c["name"]: c for c in json.loads(out.read_text())["checks"]}
    assert checks["rewrite.applied"]["status"] == "pass"
    assert "already compliant, nothing to migrate" in checks["rewrite.applied"]["detail"]


def test_helper_needing_engine_code_is_reported_by_name(tmp_path):
    src = ENGINE.replace("        num_tokens, num_heads, head_dim = q_all.shape",
                         "        num_tokens, num_heads, head_dim = q_all.shape\n        engine_check(q_all)")
    r = smoke_text(src, tool_patch(src))
    assert "engine_check" in failed(r)["isolate.helper"]


# -- planted failures ----------------------------------------------------------

def test_negative_control_an_emitter_breaking_the_contract_fails_the_smoke():
    """The emitters' output gets a valid index right after each row's count:
    the smoke fails, on the contract checks (naming rows) and on the output."""
    src = EXAMPLE.read_text()
    broken = emitters.load_emitters("cpu", "0.4.6", "tail")
    r = smoke_sources(src, tool_patch(src, name="dsa_backend.py"), "dsa_backend.py", load_kernel("cpu"), "cpu",
                      emitters=broken, only=("decode_mixed", "ties_extend", "e2e_decode_short_ctx"))
    f = failed(r)
    for name in ("decode_mixed", "e2e_decode_short_ctx"):  # rows shorter than topk
        assert "index other than -1 after slot" in f[f"contract.fast_topk_transform_fused.{name}"]
    assert statuses(r)["contract.fast_topk_transform_fused.ties_extend"] == "pass"  # every row full: nothing to break
    # the patched kernel skips the stray index, the unpatched reads it: why the contract matters
    assert "differ" in f["bitwise.fast_topk_transform_fused.decode_mixed"]
    assert not r.ok


def test_cli_takes_the_negative_control():
    res = CliRunner().invoke(smoke_command, ["--help"])
    assert "--emitter-fault [hole|tail]" in res.output


@pytest.mark.parametrize("fault, why", [("hole", "invalid index inside the first"), ("tail", "index other than -1 after")])
def test_every_emitter_with_a_fault_fails_its_contract_checks(fault, why):
    from topk_migrate.codemods.pass_topk_length.smoke import feed
    from topk_migrate.codemods.pass_topk_length.smoke.report import Report
    from topk_migrate.codemods.pass_topk_length.smoke.runner import fed_cases

    report = Report("x", "cpu")
    broken = emitters.load_emitters("cpu", "0.4.6", fault)
    fed_cases(report, broken, list(emitters.NAMES), feed.default_engine(), "cpu", 128, 64, True,
              only=("decode_mixed", "ragged_batch", "verify_rows"))
    got = {c.name: c for c in report.checks}
    assert len(got) == 7  # ragged serves extend only
    assert all(c.status == "fail" and why in c.detail for c in got.values()), {n: c.detail for n, c in got.items()}
    clean = Report("x", "cpu")
    fed_cases(clean, emitters.load_emitters("cpu", "0.4.6"), list(emitters.NAMES), feed.default_engine(), "cpu", 128, 64, True,
              only=("decode_mixed", "ragged_batch", "verify_rows"))
    assert [c.status for c in clean.checks] == ["pass"] * 7


def test_planted_back_packed_top_k_in_the_backend_fails():
    """A backend whose own top-k path packs its -1 padding first (after the emitter)."""
    src = EXAMPLE.read_text()
    line = "            topk=self.index_topk,\n        )\n"
    assert src.count(line) == 1
    bad = src.replace(line, line.rstrip("\n") + ".flip(-1)\n")
    r = smoke_text(bad, tool_patch(bad, name="dsa_backend.py"), name="dsa_backend.py",
                   only=("e2e_extend_causal_ramp", "e2e_decode_short_ctx"))
    f = failed(r)
    assert "row 0" in f["contract.front_packed"]
    assert "bitwise.e2e_extend_causal_ramp" in f and "bitwise.e2e_decode_short_ctx" in f


def test_planted_unclipped_seqlens_fail():
    src = EXAMPLE.read_text()
    good = tool_patch(src)
    wrong = good.replace("topk_length=metadata.dsa_cache_seqlens_int32", "topk_length=metadata.dsa_seqlens_expanded")
    assert wrong != good
    f = failed(smoke_text(src, wrong, only=("e2e_extend_causal_ramp", "e2e_decode_short_ctx")))
    assert any(k.startswith("bitwise.e2e_") for k in f), f
    assert "outside [0, 128]" in " ".join(f.values())


def test_planted_off_by_one_length_fails():
    src = EXAMPLE.read_text()
    good = tool_patch(src)
    wrong = good.replace("topk_length=metadata.dsa_cache_seqlens_int32",
                         "topk_length=(metadata.dsa_cache_seqlens_int32 - 1).clamp(min=0)")
    assert wrong != good
    f = failed(smoke_text(src, wrong, only=("e2e_extend_causal_ramp",)))
    assert "bitwise.e2e_extend_causal_ramp" in f and "differ" in f["bitwise.e2e_extend_causal_ramp"]
    assert "hot_path.no_allocation" in f  # the arithmetic allocates in the hot path


def test_planted_missing_guard_fails():
    src = ENGINE
    good = tool_patch(src)
    lines = good.splitlines(keepends=True)
    i = next(i for i, l in enumerate(lines) if "topk_length is not None and not (" in l)
    wrong = "".join(lines[:i] + lines[i + 2:])  # drop the guard and its body
    assert "topk_length = None" not in wrong
    f = failed(smoke_text(src, wrong, only=("prefill_ramp",)))
    assert list(f) == ["guard.row_mismatch"], f


def test_no_op_rewrite_fails():
    src = EXAMPLE.read_text()
    assert "rewrite.applied" in failed(smoke_text(src, src))


# -- the reference kernel ------------------------------------------------------


def naive(q, kv, idx, scale, lengths):
    """Row by row, head by head, in float64: the documented semantics
    (max_logits and lse in base-2 units)."""
    s_q, h, _ = q.shape
    out = torch.zeros(s_q, h, 512, dtype=torch.float64)
    ml = torch.full((s_q, h), -math.inf, dtype=torch.float64)
    lse = torch.full((s_q, h), math.inf, dtype=torch.float64)
    for i in range(s_q):
        keep = [int(x) for j, x in enumerate(idx[i, 0]) if 0 <= x < kv.shape[0] and (lengths is None or j < lengths[i])]
        if not keep:
            continue
        k = kv[keep, 0].double()
        logits = q[i].double() @ k.T * scale  # [h, n]
        ml[i] = logits.max(-1).values * math.log2(math.e)
        lse[i] = torch.logsumexp(logits, -1) * math.log2(math.e)
        out[i] = torch.softmax(logits, -1) @ k[:, :512]
    return out, ml, lse


def test_reference_matches_a_naive_loop_with_and_without_topk_length():
    c = contract.make_case("t", [3, 0, 64, 65, 128, 7], [3, 0, 64, 200, 300, 7], 128, 300, 64, "cpu", seed=3)
    idx = c.indices.unsqueeze(1).clone()
    idx[5, 0, 100] = 4  # a valid index beyond topk_length: honoured only without it
    for lengths in (None, c.topk_length):
        got = reference.sparse_attention_reference(c.q, c.kv, idx, c.sm_scale, topk_length=lengths)
        want = naive(c.q, c.kv, idx, c.sm_scale, lengths)
        assert (got[0].double() - want[0]).abs().max() < 2e-2
        for g, w in zip(got[1:], want[1:]):
            fin = torch.isfinite(w)
            assert torch.equal(g[~fin], w[~fin].float())
            assert (g[fin].double() - w[fin]).abs().max() < 1e-4
    # row 1 sees nothing: out 0, max_logits -inf, lse +inf
    out, ml, lse = reference.sparse_attention_reference(c.q, c.kv, idx, c.sm_scale, topk_length=c.topk_length)
    assert not out[1].any() and (ml[1] == -math.inf).all() and (lse[1] == math.inf).all()


def test_reference_rejects_what_the_kernel_cannot_take():
    c = contract.make_case("t", [3, 5], [3, 5], 128, 16, 64, "cpu")
    idx = c.indices.unsqueeze(1)
    with pytest.raises(ValueError, match="multiple of 64"):
        reference.flash_mla_sparse_fwd(c.q[:, :16], c.kv, idx, c.sm_scale)
    with pytest.raises(ValueError, match="rows \\[1\\]"):
        reference.flash_mla_sparse_fwd(c.q, c.kv, idx, c.sm_scale, topk_length=torch.tensor([3, 129], dtype=torch.int32))
    with pytest.raises(ValueError, match="topk_length must be int32"):
        reference.flash_mla_sparse_fwd(c.q, c.kv, idx, c.sm_scale, topk_length=torch.tensor([3], dtype=torch.int32))
    with pytest.raises(NotImplementedError):
        reference.flash_mla_sparse_fwd(c.q, c.kv, idx, c.sm_scale, attn_sink=torch.zeros(64))


def test_contract_check_names_each_kind_of_violation():
    idx = torch.tensor([[5, 6, -1, -1], [-1, 2, -1, -1], [1, -1, 3, -1], [0, 1, 2, 3]], dtype=torch.int32)
    lengths = torch.tensor([2, 2, 1, 5], dtype=torch.int32)
    found = {(v.row, v.why.split()[0]) for v in contract.check_front_packed(idx, lengths, s_kv=10)}
    assert found == {(1, "invalid"), (2, "index"), (3, "topk_length=5")}
    assert contract.check_front_packed(idx[:1], lengths[:1], s_kv=10) == []


def test_ideal_ratio_counts_64_wide_blocks():
    lengths = torch.tensor([1, 64, 65, 0, 2048], dtype=torch.int32)
    assert contract.blocks(lengths) == 1 + 1 + 2 + 0 + 32
    assert contract.ideal_ratio(lengths, 2048) == pytest.approx(5 * 32 / 36)


ENGINE = '''from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch

from fakeengine.srt.layers.attention.base import AttentionBackend  # not installed anywhere
from fakeengine.srt.runtime import get_config, engine_check


@dataclass
class FakeMetadata:
    dsa_cache_seqlens_int32: torch.Tensor  # seqlens clipped to topk, padded rows 0


class FakeSparseBackend(AttentionBackend):
    def __init__(self, runner):
        self.cfg = get_config(runner)
        self.device_sm_major = 9
        self.forward_metadata: FakeMetadata = None

    def forward_decode(self, q, layer, forward_batch, topk_indices):
        metadata = self.forward_metadata
        return self._forward_flashmla_sparse(
            q_all=q,
            kv_cache=self.cfg.kv,
            v_head_dim=layer.v_head_dim,
            page_table_1=topk_indices,
            sm_scale=layer.scaling,
        )

    def _forward_flashmla_sparse(
        self,
        q_all: torch.Tensor,
        kv_cache: torch.Tensor,
        v_head_dim: int,
        page_table_1: torch.Tensor,
        sm_scale: float,
    ) -> torch.Tensor:
        from sgl_kernel.flash_mla import flash_mla_sparse_fwd

        num_tokens, num_heads, head_dim = q_all.shape
        pad = 128 if self.device_sm_major >= 10 else 64
        if num_heads % pad:
            q_in = q_all.new_zeros((num_tokens, pad, head_dim))
            q_in[:, :num_heads] = q_all
        else:
            q_in = q_all
        o, _, _ = flash_mla_sparse_fwd(
            q=q_in,
            kv=kv_cache,
            indices=page_table_1.unsqueeze(1),
            sm_scale=sm_scale,
            d_v=v_head_dim,
        )
        return o[:, :num_heads]
'''


def test_reference_emitters_follow_the_kernels_rules():
    """The CPU models of sgl_kernel's emitters: a row no longer than topk gets
    positions 0..len-1 then -1; a longer row gets its best-scoring positions
    inside [row_start, row_start + len) (never the garbage after it); the fused
    transforms map them through the request's page-table row or add the offset."""
    g = torch.Generator().manual_seed(0)
    score = torch.randn(4, 40, generator=g)
    score[:, 30:] = 100.0  # garbage past every row's length
    lengths = torch.tensor([0, 3, 20, 12], dtype=torch.int32)
    starts = torch.tensor([0, 0, 5, 10], dtype=torch.int32)
    pos = emitters.ref_fast_topk_v2(score, lengths, 8, row_starts=starts)
    assert pos[0].tolist() == [-1] * 8 and pos[1].tolist() == [0, 1, 2] + [-1] * 5
    for r in (2, 3):  # longer than topk: the 8 best inside the row's window, row-relative
        window = score[r, int(starts[r]): int(starts[r] + lengths[r])]
        assert set(pos[r].tolist()) == set(window.topk(8).indices.tolist())
    table = torch.arange(160, dtype=torch.int32).view(4, 40) + 1000
    # decode (one table row per q row) and prefill (rows mapped to requests by cu_seqlens_q)
    dec = emitters.ref_fast_topk_transform_fused(score, lengths, table, torch.arange(5, dtype=torch.int32), 8)
    assert dec[1].tolist() == [1040, 1041, 1042] + [-1] * 5
    cu = torch.tensor([0, 1, 4], dtype=torch.int32)  # request 0: row 0; request 1: rows 1-3
    pre = emitters.ref_fast_topk_transform_fused(score, lengths, table[:2], cu, 8, row_starts=starts)
    assert pre[1].tolist() == [1040, 1041, 1042] + [-1] * 5
    assert sorted(pre[3].tolist()) == sorted((1040 + pos[3]).tolist())
    rag = emitters.ref_fast_topk_transform_ragged_fused(score, lengths, torch.tensor([0, 7, 7, 7], dtype=torch.int32), 8, row_starts=starts)
    assert rag[1].tolist() == [7, 8, 9] + [-1] * 5 and rag[0].tolist() == [-1] * 8
