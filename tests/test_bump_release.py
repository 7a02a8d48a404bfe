"""`bump` on the real releases from PyPI (downloaded once into ~/.cache/topk-migrate, or
$TOPK_MIGRATE_CACHE). Without the index they skip, except under CI (`CI` set), where they fail.

The committed fixtures (tests/data/bump) must be exactly what the wheels give; the sglang-kernel
and sgl-kernel wheels are 320-540 MB each, so those checks are in the heavy tier.
"""
import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from topk_migrate.bump import sources
from topk_migrate.cli import main

DATA = Path(__file__).parent / "data" / "bump"
BIG = ["sgl-kernel==0.3.17", "sgl-kernel==0.3.19", "sglang-kernel==0.4.2.post2", "sglang-kernel==0.4.3",
       "sglang-kernel==0.4.6", "sglang-kernel==0.4.10"]


def real(pin):
    try:
        return sources.load(pin)
    except sources.SourceError as e:
        if "cannot download" in str(e):
            if os.environ.get("CI"):  # a green CI always carries the real-release checks (tests/sglang_wheels.py)
                pytest.fail(f"index unreachable: {e}")
            pytest.skip(f"index unreachable: {e}")
        raise


def read_again(pin):
    """The wheel read again (not the signature cache): the extraction itself is what is checked."""
    real(pin)
    name, version = pin.split("==")
    wheel = sources.wheel_path(name, version)
    if wheel is None:  # served from the signature cache, the wheel since removed: fetch it again
        sources._download(name, version, sources.cache_dir() / "wheels")
        wheel = sources.wheel_path(name, version)
    return sources.from_wheel(wheel, cached=False)


def fixture(pin):
    return json.loads((DATA / (pin.replace("==", "-") + ".json")).read_text())


def test_sgl_flash_mla_wheel_gives_the_fixture():
    assert read_again("sgl-flash-mla==1.0.0").to_json() == fixture("sgl-flash-mla==1.0.0")


@pytest.mark.heavy
@pytest.mark.parametrize("pin", BIG)
def test_big_wheel_gives_the_fixture(pin):
    assert read_again(pin).to_json() == fixture(pin)


@pytest.mark.heavy
def test_bump_end_to_end_on_real_pins(tmp_path):
    from sglang_wheels import NSA, install_like_site_packages

    for pin in ("sglang-kernel==0.4.2.post2", "sglang-kernel==0.4.6"):
        real(pin)  # downloaded (or skipped) before the command runs
    nsa = install_like_site_packages("0.5.12.post1", tmp_path, backend=NSA)
    r = CliRunner().invoke(main, ["bump", "--from", "sglang-kernel==0.4.2.post2", "--to", "sglang-kernel==0.4.6",
                                  str(nsa.parent), "--format", "json"])
    data = json.loads(r.output[:r.output.rindex("}") + 1])
    assert r.exit_code == 0, r.output
    verdicts = {(Path(s["path"]).name, s["line"]): s["verdict"] for s in data["sites"]}
    assert verdicts[("nsa_backend.py", 1768)] == "opportunity"  # flash_mla_sparse_fwd
    assert verdicts[("nsa_backend.py", 1822)] == "opportunity"  # flash_mla_with_kvcache(indices=...)
    assert data["summary"]["breaks"] == data["summary"]["rebinds"] == 0


# Issue 36: `topk-migrate bump --from sglang-kernel==0.4.6 --to sglang-kernel==0.4.10 sglang`, every site's
# verdict written down from reading both wheels' sgl_kernel/flash_mla.py (and sgl_kernel/__init__.py,
# sgl_kernel/flash_mla_mega.py), not from the tool. Paths are under sglang/srt/layers/attention/.
#   get_mla_metadata: the same in both (signature, asserts, ops)                          -> unchanged
#   flash_mla_sparse_fwd: the same in both                                                   -> unchanged
#   dense flash_mla_with_kvcache (no indices): kv_format is new; 0.4.10 asserts `kv_format is None,
#     "kv_format only applies to sparse attention"` on both dense paths (tensor metadata, and the
#     FlashMLASchedMeta helper's dense branch); the ops are the same                          -> not-applicable
#   dsa_backend's sparse decode: tensor metadata (it passes num_splits, which the FlashMLASchedMeta path
#     asserts is None) with indices: 0.4.6 ran fwd_kvcache_mla(..., indices, ...), 0.4.10 runs
#     sparse_decode_fwd; it passes is_fp8_kvcache=True, so the new `assert is_fp8_kvcache` holds;
#     kv_format applies (sparse)                                                              -> changes-callee
#   deepseek_v4_backend's sparse decode: block_table=None and cache_seqlens=None, so tensor metadata
#     fails `assert block_table is not None` under both: the FlashMLASchedMeta path, sparse_decode_fwd
#     under both, where kv_format applies                                                     -> opportunity
#   hip_flash_mla's flash_mla_with_kvcache(**kwargs): cannot be bound statically, and the entry point
#     changed (kv_format, 3 asserts, another op)                                              -> manual
#   0.5.23's `from sgl_kernel import flash_mla_with_kvcache / flash_mla_sparse_fwd` (its XPU branch; the
#     CUDA one calls sglang's own wrapper): sgl_kernel/__init__.py re-exports neither in either release
#     (an ImportError under both), so the call never reaches this kernel's wrapper             -> unchanged
EXPECTED_0_4_10 = {
    "0.5.16": {
        ("deepseek_v4_backend.py", 141): ("get_mla_metadata", "unchanged"),
        ("deepseek_v4_backend.py", 1735): ("flash_mla_with_kvcache", "opportunity"),
        ("deepseek_v4_backend.py", 1853): ("flash_mla_sparse_fwd", "unchanged"),
        ("deepseek_v4_backend_hip_radix.py", 78): ("get_mla_metadata", "unchanged"),
        ("dsa_backend.py", 2354): ("flash_mla_sparse_fwd", "unchanged"),
        ("dsa_backend.py", 2533): ("flash_mla_with_kvcache", "changes-callee"),
        ("dsa_backend.py", 3083): ("get_mla_metadata", "unchanged"),
        **{("flashmla_backend.py", n): ("get_mla_metadata", "unchanged") for n in (177, 204, 236, 349)},
        **{("flashmla_backend.py", n): ("flash_mla_with_kvcache", "not-applicable") for n in (443, 460, 534, 548)},
        ("hip_flash_mla.py", 48): ("flash_mla_with_kvcache", "manual"),
    },
    "0.5.23": {
        ("deepseek_v4_backend.py", 4384): ("flash_mla_with_kvcache", "unchanged"),
        ("deepseek_v4_backend.py", 4496): ("flash_mla_sparse_fwd", "unchanged"),
    },
}


@pytest.fixture(scope="module")
def sglang_packages(tmp_path_factory):
    """sglang 0.5.16 and 0.5.23, every Python file laid out as pip installs it."""
    from sglang_wheels import install_like_site_packages

    out = {}
    for version in EXPECTED_0_4_10:
        root = tmp_path_factory.mktemp(f"sglang-{version}")
        install_like_site_packages(version, root, whole=True)
        out[version] = root / "sglang"
    return out


@pytest.mark.heavy  # first run: sglang-kernel 0.4.6 and 0.4.10 (377 + 373 MB), sglang 0.5.16 and 0.5.23 (15 + 39 MB)
@pytest.mark.parametrize("version", sorted(EXPECTED_0_4_10))
def test_0_4_6_to_0_4_10_on_sglang_every_site_as_read_from_the_wheels(sglang_packages, version, monkeypatch):
    for pin in ("sglang-kernel==0.4.6", "sglang-kernel==0.4.10"):
        real(pin)  # downloaded (or skipped) before the command runs
    monkeypatch.chdir(sglang_packages[version].parent)
    r = CliRunner().invoke(main, ["bump", "--from", "sglang-kernel==0.4.6", "--to", "sglang-kernel==0.4.10", "sglang",
                                  "--format", "json"])
    assert r.exit_code == 0, r.output[-2000:]  # nothing breaks or rebinds
    data = json.loads(r.stdout)
    assert not data["errors"]
    got = {(Path(s["path"]).name, s["line"]): (s["entry_point"], s["verdict"]) for s in data["sites"]}
    assert all(s["path"].startswith("sglang/srt/layers/attention/") for s in data["sites"])
    assert got == EXPECTED_0_4_10[version]
    reason = {(Path(s["path"]).name, s["line"]): s["reason"] for s in data["sites"]}
    if version == "0.5.16":
        for n in (443, 460, 534, 548):
            assert ('`kv_format=None` is new in sglang-kernel==0.4.10 but not applicable here' in reason[("flashmla_backend.py", n)]
                    and '"kv_format only applies to sparse attention"' in reason[("flashmla_backend.py", n)])
        assert reason[("dsa_backend.py", 2533)].startswith(
            "with this call's arguments, sglang-kernel==0.4.10 runs `torch.ops.sgl_kernel.sparse_decode_fwd` where "
            "sglang-kernel==0.4.6 ran `torch.ops.sgl_kernel.fwd_kvcache_mla`")
        assert "also new in the release, not passed: `kv_format`" in reason[("dsa_backend.py", 2533)]
        assert reason[("deepseek_v4_backend.py", 1735)] == "new in the release, not passed: `kv_format`"
        assert reason[("hip_flash_mla.py", 48)].startswith("cannot tell: the call forwards **kwargs")
        assert "`kv_format=None`, positional argument 19" in reason[("hip_flash_mla.py", 48)]
    else:
        for key in EXPECTED_0_4_10[version]:
            assert "`sgl_kernel/__init__.py` does not re-export" in reason[key]
    changes = {(c["kind"], c["entry_point"]): c["detail"] for c in data["changes"]}
    assert changes[("param-added-optional", "flash_mla_with_kvcache")] == "`kv_format=None`, positional argument 19"
    assert changes[("callee-changed", "flash_mla_with_kvcache")] == (
        "when indices is not None and not isinstance(tile_scheduler_metadata, FlashMLASchedMeta): calls "
        "`torch.ops.sgl_kernel.sparse_decode_fwd` (was `torch.ops.sgl_kernel.fwd_kvcache_mla`)")
    assert sum(c["kind"] == "guard-added" for c in data["changes"]) == 3
    added = {e: d for (k, e), d in changes.items() if k == "entry-point-added"}
    assert sorted(added) == ["flash_mla_mega_decode", "flash_mla_mega_prefill", "is_flash_mla_mega_available",
                             "permute_mega_q_weight", "permute_mega_wo_weight"]
    assert all("sgl_kernel/flash_mla_mega.py, a module new in this release" in d for d in added.values())
    for e in ("flash_mla_mega_prefill", "flash_mla_mega_decode"):
        assert "takes `topk_length`, the parameter of decode-topk-length, pass-topk-length" in added[e]
    assert not any(k[0] not in ("param-added-optional", "callee-changed", "guard-added", "entry-point-added")
                   for k in changes)
