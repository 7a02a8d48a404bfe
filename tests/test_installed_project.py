"""An installed file's project is its distribution's own files (docs/project.md; issue 34): torch, the kernel or
any other distribution installed beside the engine is other people's code, never read as code that can rebind
the engine's names. An installed kernel's wrapper is read as an interface only."""
import json
import os
import re

import pytest

from helpers import KERNEL, ROOT, copy_checkout, run_cli
from installed_site import dist, pip_target, torch_beside
from topk_migrate import kernels
from topk_migrate.api import migrate_source
from topk_migrate.model import Status
from topk_migrate.project import project_scope

EXAMPLE = (ROOT / "fixtures" / "examples" / "dsa_backend.py").read_text()
BACKEND = "engine/layers/attention/dsa_backend.py"
# torch/__init__.py:2863 (torch 2.13.0), the line every real environment tripped on: a computed setattr on a
# module the file reaches, in a file the engine imports (`import torch`)
TORCH = '''import sys

def _register_device_module(device_type, module):
    m = sys.modules[__name__]
    setattr(m, device_type, module)
    sys.modules[".".join([__name__, device_type])] = module
'''
# sgl_kernel 0.4.6's wrapper: more than one forwarding call (an import-error check, a named result)
WRAPPER = '''import torch

def flash_mla_sparse_fwd(q, kv, indices, sm_scale, d_v=512, attn_sink=None, topk_length=None):
    if _flashmla_import_error is not None:
        raise _IMPORT_ERROR from _flashmla_import_error
    results = torch.ops.sgl_kernel.sparse_prefill_fwd.default(q, kv, indices, sm_scale, d_v, attn_sink, topk_length)
    return results
'''
OLD_WRAPPER = "def flash_mla_sparse_fwd(q, kv, indices, sm_scale, d_v=512):\n    pass\n"
ENGINE = {"engine/__init__.py": "", "engine/layers/__init__.py": "", "engine/layers/attention/__init__.py": "",
          BACKEND: EXAMPLE}


def environment(tmp_path, engine=None, wrapper=WRAPPER, kernel_version="0.4.6"):
    """A site-packages as `pip install engine torch sglang-kernel` leaves it; the engine pins the kernel."""
    site = tmp_path / "site-packages"
    dist(site, "engine", "1.0", {**ENGINE, **(engine or {})}, ["sglang-kernel==0.4.6", "torch"])
    dist(site, "torch", "2.13.0", {"torch/__init__.py": TORCH})
    if wrapper is not None:
        dist(site, "sglang-kernel", kernel_version, {"sgl_kernel/__init__.py": "", "sgl_kernel/flash_mla.py": wrapper})
    return site


def site_of(path, kernel=None):
    (site,) = migrate_source(path.read_text(), str(path), kernel=kernel).sites
    return site


def test_torch_beside_an_installed_engine_rebinds_nothing_of_it(tmp_path):
    site = environment(tmp_path, wrapper=None)
    got = site_of(site / BACKEND)
    assert got.status is Status.FIXABLE, got.reason  # was: manual, `setattr` with a computed name at torch/__init__.py:5


def test_an_installed_engine_is_not_judged_by_the_other_distributions_beside_it(tmp_path):
    site = environment(tmp_path)
    got = site_of(site / BACKEND)
    assert got.status is Status.FIXABLE, got.reason  # was: manual, the kernel's wrapper held to a wrapper's rules
    assert got.kernel == "sglang-kernel==0.4.6 from engine-1.0.dist-info/METADATA"
    r = run_cli("check", site / "engine")
    assert r.returncode == 1 and " fixable sgl_kernel.flash_mla.flash_mla_sparse_fwd " in r.stdout, r.stdout + r.stderr
    r = run_cli("audit", site / "engine")  # the tree audit judges each file by the same project
    assert r.returncode == 1 and re.search(r"dsa_backend\.py:\d+:\d+ +fixable ", r.stdout), r.stdout + r.stderr


def test_the_engines_own_files_are_still_read(tmp_path):
    """Control: the same write in a file of the engine's own distribution keeps the site manual."""
    patch = "import sys\nfrom engine.layers.attention import dsa_backend\n\n" \
            "def install(name, value):\n    setattr(dsa_backend, name, value)\n"
    site = environment(tmp_path, {"engine/patches.py": patch})
    got = site_of(site / BACKEND)
    assert got.status is Status.MANUAL and "engine/patches.py:5" in got.reason, got.reason


def test_a_file_no_record_lists_is_judged_with_its_own_top_level_package(tmp_path):
    site = environment(tmp_path)
    (site / "fork").mkdir()
    (site / "fork" / "dsa_backend.py").write_text(EXAMPLE)
    assert site_of(site / "fork" / "dsa_backend.py", KERNEL).status is Status.FIXABLE
    (site / "fork" / "patches.py").write_text("from fork import dsa_backend\n\n"
                                              "def install(name, value):\n    setattr(dsa_backend, name, value)\n")
    got = site_of(site / "fork" / "dsa_backend.py", KERNEL)
    assert got.status is Status.MANUAL and "fork/patches.py:4" in got.reason, got.reason


def test_an_installed_kernel_is_read_as_an_interface(tmp_path):
    """Beside the engine, the kernel's wrapper is the kernel: its signature counts, its body is not held to the
    plain-forwarding rule of a wrapper the project defines (fixable above); one without topk_length keeps the
    site manual, whatever the engine's pin says."""
    site = environment(tmp_path, wrapper=OLD_WRAPPER, kernel_version="0.4.2.post2")
    got = site_of(site / BACKEND)
    assert got.status is Status.MANUAL, got.reason
    assert "installed beside this distribution (sgl_kernel/flash_mla.py:1) has no topk_length" in got.reason \
        or "sglang_kernel-0.4.2.post2.dist-info/METADATA (installed beside it)" in got.reason, got.reason


@pytest.mark.parametrize("text", ['[tool.topk-migrate]\nkernel = "sglang-kernel==0.4.2.post2"\n', "[[[\n"])
def test_a_pyproject_at_the_top_of_site_packages_configures_no_distribution(tmp_path, text):
    """Some wheels leave a pyproject.toml at the top of site-packages: it is none of the engine's settings."""
    site = environment(tmp_path)
    (site / "pyproject.toml").write_text(text)
    r = run_cli("check", site / BACKEND)
    assert r.returncode == 1 and " fixable " in r.stdout, r.stdout + r.stderr


def test_the_scope_of_an_installed_file_is_what_its_record_lists(tmp_path):
    site = environment(tmp_path)
    # two distributions sharing a namespace package: each holds only the files its RECORD lists
    dist(site, "nv-a", "1", {"nv/a/x.py": "", "top_a.py": ""})
    dist(site, "nv-b", "1", {"nv/b/y.py": ""})
    scope = project_scope(str(site / BACKEND))
    assert scope.installed and scope.root == str(site) and scope.tops == ("engine",)
    assert scope.holds(str(site / BACKEND)) and not scope.holds(str(site / "torch" / "__init__.py"))
    assert not any(f.startswith(("..", "/")) for f in scope.files)  # `../../../bin/engine`: not in the site
    a = project_scope(str(site / "nv" / "a" / "x.py"))
    assert a.tops == ("nv", "top_a.py") and a.holds(str(site / "top_a.py")) and not a.holds(str(site / "nv/b/y.py"))
    assert kernels.find_module(str(site / BACKEND), "torch") is None
    assert kernels.find_module(str(site / BACKEND), "engine.layers") == str(site / "engine/layers/__init__.py")
    assert kernels.installed_module(str(site / BACKEND), "torch") == str(site / "torch" / "__init__.py")
    # outside site-packages the project is everything under its root, as before
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    (tmp_path / "repo" / "b.py").write_text("")
    scope = project_scope(str(tmp_path / "repo" / "b.py"))
    assert not scope.installed and scope.walked() == (str(tmp_path / "repo"),)


# -- real releases, pip-installed beside the running Python's torch (heavy) -------------------------------------

HEAVY = pytest.mark.heavy
# (0.5.14 and 0.5.15 are the dsa_ layout 0.5.16 is: their reference shape on the whole wheel is test_sglang_release's;
# the installed layout beside torch is held here for each layout and pin source, a release each: about 15 minutes less)
RELEASES = [  # version, backend, --kernel (None: the wheel's own METADATA pin decides), the verdict
    pytest.param("0.5.16", "dsa_backend.py", None, "fixable", marks=HEAVY),
    pytest.param("0.5.12.post1", "nsa_backend.py", KERNEL, "fixable", marks=HEAVY),
    pytest.param("0.5.17", "dsa_backend.py", None, "compliant", marks=HEAVY),
]


def _hunks(diff: str) -> str:
    return "\n".join(ln for ln in diff.splitlines() if not ln.startswith(("--- ", "+++ ")))


@pytest.mark.parametrize("version,backend,kernel,verdict", RELEASES, ids=[p.values[0] for p in RELEASES])
def test_a_release_pip_installed_beside_torch(tmp_path, version, backend, kernel, verdict):
    from sglang_wheels import ATTENTION, install_like_site_packages, wheel

    site = tmp_path / "site-packages"
    pip_target(site, str(wheel(version)))
    if not torch_beside(site):
        pytest.skip("torch is not installed")
    path = site / ATTENTION / backend
    flag = ("--kernel", kernel) if kernel else ()
    r = run_cli("check", "-v", *flag, path, timeout=None)
    if verdict == "compliant":  # (a compliant site is counted, not listed)
        assert r.returncode == 0 and "1 site(s): 1 compliant" in r.stderr, r.stdout + r.stderr
        return
    assert f" {verdict} sgl_kernel.flash_mla.flash_mla_sparse_fwd " in r.stdout, r.stdout + r.stderr
    # the diff is the reference one: the engine's own files read, as the held-out copy is read (the real-release
    # tests hold that one to the fix sglang 0.5.17 merged)
    held_out = install_like_site_packages(version, tmp_path / "held-out", backend=ATTENTION + backend, whole=True)
    ours, reference = (run_cli("apply", "--diff", *flag, p, timeout=None) for p in (path, held_out))
    assert ours.returncode == reference.returncode == 1, ours.stderr + reference.stderr
    assert _hunks(ours.stdout) == _hunks(reference.stdout) and "+                topk_length=" in ours.stdout
    if version == "0.5.16":  # and the whole installed engine
        r = run_cli("check", site / "sglang", timeout=None)
        assert r.returncode == 1 and "2 site(s): 1 compliant, 0 opt-out, 1 fixable, 0 manual" in r.stderr, r.stderr


@HEAVY
def test_smoke_runs_from_an_installed_wheel_beside_torch(tmp_path):
    """`pip install .` (not -e): the bundled example then lives in site-packages, beside torch and an installed
    engine; smoke passes on both (it failed `rewrite.applied`: the example was manual for torch's setattr)."""
    from sglang_wheels import DSA, wheel

    site = tmp_path / "site-packages"
    pip_target(site, str(copy_checkout(tmp_path / "src")), str(wheel("0.5.16")))
    if not torch_beside(site):
        pytest.skip("torch is not installed")
    env = {**os.environ, "PYTHONPATH": str(site)}
    for target in ((), (site / DSA,)):
        out = tmp_path / "r.json"
        r = run_cli("smoke", "--device", "cpu", "--json", out, *target, cwd=tmp_path, env=env, timeout=None)
        assert r.returncode == 0 and "FAIL" not in r.stdout, r.stdout + r.stderr
        data = json.loads(out.read_text())
        assert data["ok"] and data["target"].startswith(str(site)), data["target"]  # the installed tool's example
        assert {c["name"]: c["status"] for c in data["checks"]}["rewrite.applied"] == "pass"
