"""Issue 26: a remedy that works. External FlashMLA (`from flash_mla import flash_mla_sparse_fwd`, built from
source: `1.0.0+<rev>` before and after it gained topk_length) is decided from the interface the environment
has, read without importing it, or from a capability declaration (`flash_mla:topk_length`) that can be true
where it is not installed; a pin decides only the modules its distribution provides; every declaration the
tool recommends passes."""
import re
import sys
from pathlib import Path

import pytest

from topk_migrate import api
from topk_migrate.model import Status

EXAMPLE = (Path(__file__).resolve().parents[1] / "fixtures" / "examples" / "dsa_backend.py").read_text()
EXTERNAL = EXAMPLE.replace("from sgl_kernel.flash_mla import flash_mla_sparse_fwd", "from flash_mla import flash_mla_sparse_fwd")
assert EXTERNAL != EXAMPLE

SIGNATURE_NEW = "q, kv, indices, sm_scale, d_v=512, attn_sink=None, topk_length=None"
SIGNATURE_OLD = "q, kv, indices, sm_scale, d_v=512"


def project(tmp_path, src=EXTERNAL, pyproject="[project]\nname = 'fork'\nversion = '0'\n"):
    tmp_path.mkdir(exist_ok=True)
    (tmp_path / "pyproject.toml").write_text(pyproject)
    f = tmp_path / "dsa_backend.py"
    f.write_text(src)
    return f


def installed_flash_mla(root: Path, signature: str) -> Path:
    """A source build of flash_mla on sys.path: its __init__ re-exports the interface and leaves a mark if
    it ever runs."""
    pkg = root / "site" / "flash_mla"
    pkg.mkdir(parents=True)
    (root / "site" / "setup.py").write_text("")
    (pkg / "__init__.py").write_text(
        f"open({str(root / 'IMPORTED')!r}, 'w').close()\n"
        "__version__ = '1.0.0+9f8e7d6'\nfrom flash_mla.flash_mla_interface import flash_mla_sparse_fwd\n")
    (pkg / "flash_mla_interface.py").write_text(f"def flash_mla_sparse_fwd({signature}):\n    return q\n")
    return root / "site"


def statuses(path, kernel=None):
    return [(s.status, s.reason) for s in api.run([str(path)], kernel=kernel).sites]


def test_the_installed_interface_decides_read_never_imported(tmp_path, monkeypatch):
    site = installed_flash_mla(tmp_path, SIGNATURE_NEW)
    monkeypatch.syspath_prepend(str(site))
    got = api.run([str(project(tmp_path / "fork"))]).sites
    assert {s.status for s in got} == {Status.FIXABLE}, [s.reason for s in got]
    assert not (tmp_path / "IMPORTED").exists() and "flash_mla" not in sys.modules


def test_an_installed_interface_without_the_parameter_refuses(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(installed_flash_mla(tmp_path, SIGNATURE_OLD)))
    (got,) = statuses(project(tmp_path / "fork"), kernel="flash_mla:topk_length")
    assert got[0] is Status.MANUAL and "installed interface flash_mla" in got[1] and "has no topk_length" in got[1]
    assert str(tmp_path) not in got[1]


@pytest.mark.parametrize("where", ["--kernel", "pyproject"])
def test_a_capability_declaration_decides_where_flash_mla_is_not_installed(tmp_path, where):
    pyproject = "[project]\nname = 'fork'\nversion = '0'\n"
    if where == "pyproject":
        pyproject += '\n[tool.topk-migrate]\nkernel = "flash_mla:topk_length"\n'
    f = project(tmp_path, pyproject=pyproject)
    got = api.run([str(f)], kernel="flash_mla:topk_length" if where == "--kernel" else None).sites
    assert {s.status for s in got} == {Status.FIXABLE}, [s.reason for s in got]


def test_a_declaration_decides_only_its_own_module(tmp_path):
    (got,) = statuses(project(tmp_path, src=EXAMPLE), kernel="flash_mla:topk_length")
    assert got[0] is Status.MANUAL and "capability unknown" in got[1]


def test_a_pin_of_an_unrelated_distribution_does_not_decide_an_unknown_module(tmp_path):
    src = EXAMPLE.replace("from sgl_kernel.flash_mla import flash_mla_sparse_fwd", "from flag_gems import flash_mla_sparse_fwd")
    (got,) = statuses(project(tmp_path, src=src), kernel="sglang-kernel==0.4.6")
    assert got[0] is Status.MANUAL and "`flag_gems` is not a kernel module topk-migrate knows" in got[1]
    assert "sglang-kernel" not in got[1] and "vllm" not in got[1], got[1]


def test_an_in_tree_kernel_under_src_is_read_not_judged_by_an_extra_pin(tmp_path):
    """FlagGems' shape: src/flag_gems holds a Triton op taking topk_length; an extra pins flash-mla."""
    pkg = tmp_path / "src" / "flag_gems"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("from .fused import flash_mla_sparse_fwd\n")
    (pkg / "fused.py").write_text(f"def flash_mla_sparse_fwd({SIGNATURE_NEW}):\n    ...\n")
    src = EXAMPLE.replace("from sgl_kernel.flash_mla import flash_mla_sparse_fwd", "from flag_gems import flash_mla_sparse_fwd")
    pyproject = "[project]\nname = 'flag_gems'\nversion = '0'\n[project.optional-dependencies]\nbench = ['flash-mla==1.0.0']\n"
    (tmp_path / "tests").mkdir()
    f = project(tmp_path, src=src, pyproject=pyproject)
    f.rename(tmp_path / "tests" / "dsa_backend.py")
    got = api.run([str(tmp_path / "tests" / "dsa_backend.py")]).sites
    assert {s.status for s in got} == {Status.FIXABLE}, [s.reason for s in got]
    assert "src/flag_gems/fused.py" in got[0].kernel


RECOMMENDED = re.compile(r"--kernel (\S+)")


@pytest.mark.parametrize("module", ["flash_mla", "sgl_kernel.flash_mla", "flag_gems", "vllm.v1.attention.ops.flashmla"])
def test_every_recommended_declaration_passes(tmp_path, module):
    """Follow what the reason says (VERSION: the first release with the parameter): the site is decided."""
    from topk_migrate.codemods.pass_topk_length.quick import MIN_KERNEL

    src = EXAMPLE.replace("from sgl_kernel.flash_mla import", f"from {module} import")
    f = project(tmp_path, src=src)
    (before,) = statuses(f)
    assert "capability unknown" in before[1]
    declared = RECOMMENDED.search(before[1]).group(1)
    if declared.endswith("==VERSION"):
        dist = declared.split("==")[0]
        declared = f"{dist}=={MIN_KERNEL[dist]}"
    (after,) = statuses(f, kernel=declared)
    assert after[0] is Status.FIXABLE, (declared, after[1])


def test_smoke_takes_kernel_and_decides_as_apply_does(tmp_path):
    """External FlashMLA: without --kernel the installed sgl_kernel's version does not decide flash_mla, the
    rewrite is refused; with the declaration apply takes, smoke rewrites and every check passes."""
    pytest.importorskip("torch")
    import json

    from click.testing import CliRunner

    from topk_migrate.codemods.pass_topk_length.smoke.command import smoke_command

    f = project(tmp_path)
    runs = {}
    for args in ([], ["--kernel", "flash_mla:topk_length"]):
        out = tmp_path / f"r{len(args)}.json"
        res = CliRunner().invoke(smoke_command, [str(f), "--device", "cpu", "--json", str(out), *args])
        got = {c["name"]: c for c in json.loads(out.read_text())["checks"]}
        runs[len(args)] = (res.exit_code, got["rewrite.applied"])
    assert runs[0][0] == 1 and runs[0][1]["status"] == "fail" and "manual" in runs[0][1]["detail"]
    assert runs[2][0] == 0 and runs[2][1]["status"] == "pass", runs[2]
    bad = CliRunner().invoke(smoke_command, [str(f), "--device", "cpu", "--kernel", "nonsense==="])
    assert bad.exit_code == 2 and "--kernel" in bad.output


def test_an_installed_sgl_kernel_does_not_replace_the_pins_a_version_decides(tmp_path, monkeypatch):
    """Where versions decide (sgl_kernel), what happens to be installed where the tool runs decides nothing:
    a pre-commit hook and a developer's shell must agree."""
    site = tmp_path / "site" / "sgl_kernel"
    site.mkdir(parents=True)
    (site / "__init__.py").write_text("")
    (site / "flash_mla.py").write_text(f"def flash_mla_sparse_fwd({SIGNATURE_NEW}):\n    return q\n")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    (got,) = statuses(project(tmp_path / "fork", src=EXAMPLE))
    assert got[0] is Status.MANUAL and "capability unknown" in got[1], got[1]
