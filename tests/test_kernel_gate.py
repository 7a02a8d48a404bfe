"""The kernel gate reads pins and vendored interfaces statically, in the documented order."""
import textwrap

import pytest

from topk_migrate.api import migrate_source
from topk_migrate.model import Status

CALL = textwrap.dedent("""\
    from sgl_kernel.flash_mla import flash_mla_sparse_fwd

    def attend(metadata, q, kv, idx):
        return flash_mla_sparse_fwd(q, kv, idx, 1.0)

    # metadata.dsa_cache_seqlens_int32 is clipped to topk
""")


def status_of(path, src=CALL, kernel=None):
    (site,) = migrate_source(src, str(path), kernel=kernel).sites
    return site


@pytest.mark.parametrize("name,text,ok", [
    ("pyproject.toml", '[project]\ndependencies = ["sglang-kernel==0.4.5", "torch"]\n', True),
    ("pyproject.toml", '[project]\ndependencies = ["sglang-kernel==0.4.2.post2"]\n', False),
    ("requirements.txt", "torch\nsgl-kernel==0.3.21\n", False),
    ("requirements-gpu.txt", "sglang_kernel>=0.4.3\n", True),
    ("setup.cfg", "[options]\ninstall_requires =\n    sglang-kernel<0.4.3\n", False),
    ("setup.py", "setup(install_requires=['sglang-kernel == 0.4.6'])\n", True),
])
def test_project_pins(tmp_path, name, text, ok):
    (tmp_path / name).write_text(text)
    (tmp_path / "pkg").mkdir()
    site = status_of(tmp_path / "pkg" / "backend.py")
    assert site.status is (Status.FIXABLE if ok else Status.MANUAL), site.reason
    if not ok:
        assert "kernel too old" in site.reason and name in site.reason


def test_explicit_pin_beats_project_pins(tmp_path):
    (tmp_path / "requirements.txt").write_text("sglang-kernel==0.4.6\n")
    site = status_of(tmp_path / "backend.py", kernel="sglang-kernel==0.4.2.post2")
    assert site.status is Status.MANUAL and "--kernel" in site.reason


def test_config_pin(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.topk-migrate]\nkernel = "sglang-kernel==0.4.2"\n')
    from topk_migrate.api import process_file

    (tmp_path / "backend.py").write_text(CALL)
    (site,) = process_file(str(tmp_path / "backend.py")).sites
    assert site.status is Status.MANUAL and "kernel too old" in site.reason


def test_installed_distribution_pins_come_from_the_owning_dist_info(tmp_path):
    pkg = tmp_path / "engine" / "layers"
    pkg.mkdir(parents=True)
    info = tmp_path / "engine-1.0.dist-info"
    info.mkdir()
    (info / "RECORD").write_text("engine/layers/backend.py,sha256=x,1\n")
    (info / "METADATA").write_text("Name: engine\nRequires-Dist: sglang-kernel==0.4.2.post1\n")
    other = tmp_path / "other-1.0.dist-info"
    other.mkdir()
    (other / "RECORD").write_text("other/x.py,,\n")
    (other / "METADATA").write_text("Requires-Dist: sglang-kernel==0.4.6\n")
    site = status_of(pkg / "backend.py")
    assert site.status is Status.MANUAL and "engine-1.0.dist-info/METADATA" in site.reason


def test_unknown_kernel_is_manual(tmp_path):
    site = status_of(tmp_path / "backend.py")
    assert site.status is Status.MANUAL
    assert site.reason.startswith("kernel capability unknown (pass --kernel)")


@pytest.mark.parametrize("sig,ok", [
    ("q, kv, indices, sm_scale, d_v=512, attn_sink=None, topk_length=None", True),
    ("q, kv, indices, sm_scale, d_v=512", False),
])
def test_vendored_interface_is_read_statically(tmp_path, sig, ok):
    vendored = tmp_path / "vllm" / "attention" / "ops"
    vendored.mkdir(parents=True)
    (vendored / "flashmla.py").write_text(f"import torch_that_is_not_installed\ndef flash_mla_sparse_prefill({sig}):\n    pass\n")
    src = CALL.replace("sgl_kernel.flash_mla import flash_mla_sparse_fwd", "vllm.attention.ops.flashmla import flash_mla_sparse_prefill")
    src = src.replace("return flash_mla_sparse_fwd", "return flash_mla_sparse_prefill")
    site = status_of(tmp_path / "vllm" / "backend.py", src)
    assert site.status is (Status.FIXABLE if ok else Status.MANUAL), site.reason
    assert "flashmla.py" in site.reason or ok


def test_vendored_wrapper_position_makes_positional_calls_compliant(tmp_path):
    (tmp_path / "ops.py").write_text("def flash_mla_sparse_prefill(q, kv, indices, topk_length=None, sm_scale=1.0):\n    pass\n")
    src = "from .ops import flash_mla_sparse_prefill\nflash_mla_sparse_prefill(q, kv, i, lens)\n"
    (site,) = migrate_source(src, str(tmp_path / "m.py")).sites
    assert site.status is Status.COMPLIANT
