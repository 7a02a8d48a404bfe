"""bench/gpu_smoke.sh, the GPU record, runs as documented: from a fresh clone, after bench/gpu_prepare.sh, it
imports the package it assembles (never the source topk_migrate/, which has no codemods/), and the engine
gpu_prepare.sh puts in the ignored .carry/ is judged as its own files, not as a file of this repository whose
kernel, fetched beside it into .carry/, would be an interface the repository vendors. Its CPU dry run
(DEVICE=cpu) is what CI sees of the GPU run before the kernel (heavy tier: it fetches sglang 0.5.16's wheel)."""
import json
import os
import re
import subprocess
import textwrap

import pytest

from helpers import KERNEL, copy_checkout
from topk_migrate.api import migrate_source
from topk_migrate.model import Status
from topk_migrate.project import ignored_dir, project_root

CALL = textwrap.dedent("""\
    from sgl_kernel.flash_mla import flash_mla_sparse_fwd

    def attend(metadata, q, kv, idx):
        return flash_mla_sparse_fwd(q, kv, idx, 1.0)

    # metadata.dsa_cache_seqlens_int32 is clipped to topk
""")
# The shape of sglang-kernel's own flash_mla.py: the parameter, and a body that does more than return one call,
# which makes a copy of it inside a project a wrapper the rewrite must not trust.
KERNEL_MODULE = textwrap.dedent("""\
    def flash_mla_sparse_fwd(q, kv, indices, sm_scale, d_v=512, attn_sink=None, topk_length=None):
        out = _ops.sparse_prefill_fwd(q, kv, indices, sm_scale, d_v, attn_sink, topk_length)
        out = tuple(out)
        return out
""")


def carry_tree(root, ignore=".carry/\n"):
    """A checkout with gpu_prepare.sh's layout: the kernel and an engine under .carry/, ignored by `ignore`."""
    (root / ".git").mkdir(parents=True)
    (root / "pyproject.toml").write_text("[project]\nname = 'tool'\n")
    if ignore is not None:
        (root / ".gitignore").write_text(ignore)
    (root / ".carry" / "sgl_kernel").mkdir(parents=True)
    (root / ".carry" / "sgl_kernel" / "__init__.py").write_text("")
    (root / ".carry" / "sgl_kernel" / "flash_mla.py").write_text(KERNEL_MODULE)
    engine = root / ".carry" / "engines" / "e-1.0" / "e" / "attention"
    engine.mkdir(parents=True)
    return engine / "backend.py"


def test_the_engine_in_the_ignored_carry_is_not_read_with_the_kernel_beside_it_as_vendored(tmp_path):
    engine = carry_tree(tmp_path)
    assert project_root(str(engine)) == str(engine.parent)  # its own files: the climb ends in the ignored folder
    site = status_of(engine)
    assert site.status is Status.FIXABLE, site.reason  # the declared kernel decides
    assert "defined in this project" not in site.reason


def test_the_same_tree_not_ignored_is_one_project_and_its_kernel_is_vendored(tmp_path):
    engine = carry_tree(tmp_path, ignore=None)  # the control: what the GPU run met before the fix
    assert project_root(str(engine)) == str(tmp_path)
    site = status_of(engine)
    assert site.status is Status.MANUAL and "defined in this project (.carry/sgl_kernel/flash_mla.py:1)" in site.reason


@pytest.mark.parametrize("rules, where, ignored", [
    ({".gitignore": ".carry/\n"}, ".carry", ".carry"),
    ({".gitignore": "/.carry\n"}, ".carry/engines", ".carry"),
    ({".git/info/exclude": ".carry/\n"}, ".carry/engines", ".carry"),
    ({".gitignore": "engines/\n"}, ".carry/engines/e-1.0", ".carry/engines"),
    ({".carry/.gitignore": "engines\n"}, ".carry/engines/e-1.0", ".carry/engines"),
    ({".gitignore": ".carry/\n!.carry/\n"}, ".carry/engines", None),  # re-included: the last rule decides
    ({".git/info/exclude": ".carry/\n", ".gitignore": "!.carry/\n"}, ".carry", None),  # .gitignore over exclude
    ({".gitignore": "*.py\nengines\n"}, ".carry/sgl_kernel", None),  # file patterns never exclude a folder
    ({".gitignore": ".carry/*\n!.carry/engines/\n"}, ".carry/engines/e-1.0", None),
    ({".gitignore": ".carry/*\n!.carry/engines/\n"}, ".carry/sgl_kernel", ".carry/sgl_kernel"),
])
def test_ignored_dir_reads_the_ignore_rules_as_git_does(tmp_path, rules, where, ignored):
    carry_tree(tmp_path, ignore=None)
    for rel, text in rules.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    found = ignored_dir(str(tmp_path), str(tmp_path / where))
    assert found == (str(tmp_path / ignored) if ignored else None)


def test_a_symlinked_gitignore_is_not_read(tmp_path):
    carry_tree(tmp_path, ignore=None)
    (tmp_path / "rules").write_text(".carry/\n")
    (tmp_path / ".gitignore").symlink_to(tmp_path / "rules")
    assert ignored_dir(str(tmp_path), str(tmp_path / ".carry")) is None


def status_of(path, src=CALL):
    (site,) = migrate_source(src, str(path), kernel=KERNEL).sites
    return site


@pytest.mark.heavy  # sglang 0.5.16's wheel (14 MB, cached) and three CPU smokes: 2.5 min alone, 11 beside other tests
def test_the_gpu_record_dry_run_passes_from_a_fresh_clone(tmp_path):
    import sglang_wheels

    pytest.importorskip("torch", reason="the dry run needs torch (pip install 'topk-migrate[smoke]')")
    wheel = sglang_wheels.wheel("0.5.16")  # PyPI unreachable: skipped, or failed under CI
    clone = copy_checkout(tmp_path / "clone")
    (clone / ".git").mkdir()  # a work tree: its .gitignore ignores .carry/, as in the clone on the GPU machine
    cache = tmp_path / "cache" / "topk-migrate-gpu"  # gpu_prepare.sh's download cache, holding the tests' wheel
    cache.mkdir(parents=True)
    (cache / wheel.name).symlink_to(wheel)
    out = tmp_path / "out"
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "DEVICE": "cpu", "OUT": str(out),
           "TMPDIR": str(tmp_path)}
    env.pop("PYTHONPATH", None)
    prep = subprocess.run(["bash", str(clone / "bench" / "gpu_prepare.sh")], env=env, capture_output=True,
                          text=True, timeout=600)
    assert prep.returncode == 0, prep.stderr[-2000:]
    engine = clone / ".carry" / "engines" / "sglang-0.5.16" / "sglang" / "srt" / "layers" / "attention"
    assert (engine / "dsa_backend.py").is_file() and not (clone / ".carry" / "sgl_kernel").exists()
    # where the GPU machine has the trimmed kernel (the dry run does not load it): one of its shape
    (clone / ".carry" / "sgl_kernel").mkdir()
    (clone / ".carry" / "sgl_kernel" / "flash_mla.py").write_text(KERNEL_MODULE)

    r = subprocess.run(["bash", str(clone / "bench" / "gpu_smoke.sh")], env=env, capture_output=True, text=True,
                       timeout=1500)
    assert r.returncode == 0 and r.stdout.rstrip().endswith("gpu_smoke: exit 0"), (r.stdout[-4000:], r.stderr[-2000:])
    assert sorted(p.name for p in out.iterdir()) == [
        "environment.txt", "example.json", "example.txt", "negative-control.txt", "sglang-0.5.16.json",
        "sglang-0.5.16.txt"]  # the decode facts are the GPU run's alone
    environment = (out / "environment.txt").read_text()
    assert "DEVICE=cpu" in environment and "assembled (codemods/ and fixtures/ under topk_migrate/)" in environment
    assert not (tmp_path / "topk-gpu-smoke").exists() and not list(tmp_path.glob("topk-gpu-smoke.*"))  # cleaned
    for name in ("example", "sglang-0.5.16"):
        report = json.loads((out / f"{name}.json").read_text())
        checks = {c["name"]: c["status"] for c in report["checks"]}
        assert report["ok"] and checks["rewrite.applied"] == "pass", (name, report["kernel_decision"])
        assert not [n for n, s in checks.items() if s == "fail"]
    report = json.loads((out / "sglang-0.5.16.json").read_text())
    assert report["target"] == ".carry/engines/sglang-0.5.16/sglang/srt/layers/attention/dsa_backend.py"
    assert "interface at .carry/sgl_kernel" not in report["kernel_decision"]
    checks = {c["name"]: c["status"] for c in report["checks"]}
    assert sum(n.startswith("contract.") for n in checks) >= 28 and sum(n.startswith("bitwise.") for n in checks) >= 28
    negative = (out / "negative-control.txt").read_text()
    assert negative.rstrip().endswith("negative control: failed as it must (exit 1)")
    assert re.search(r"^contract\.fast_topk_v2\.prefill_ramp +FAIL ", negative, re.M), negative[-2000:]
