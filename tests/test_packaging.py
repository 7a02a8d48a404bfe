"""The wheel ships the rules and fixtures under topk_migrate.* and adds no top-level package."""
import subprocess
import sys
import zipfile

from helpers import ROOT


def test_wheel_layout(tmp_path):
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                        "-w", str(tmp_path), str(ROOT)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    (whl,) = tmp_path.glob("topk_migrate-*.whl")
    names = zipfile.ZipFile(whl).namelist()
    tops = {n.split("/")[0] for n in names}
    assert tops == {"topk_migrate", next(t for t in tops if t.endswith(".dist-info"))}
    def shipped(folder, under):  # every module of the source tree, subpackages included (a new one must be listed)
        return {f"{under}/{p.relative_to(folder).as_posix()}" for p in folder.rglob("*.py") if "__pycache__" not in p.parts}

    assert shipped(ROOT / "topk_migrate", "topk_migrate") - set(names) == set()
    assert shipped(ROOT / "codemods", "topk_migrate/codemods") - set(names) == set()  # a rule's helpers too
    assert "topk_migrate/fixtures/examples/dsa_backend.py" in names
    assert "topk_migrate/data/sglang_kernels.json" in names  # the kernels each sglang release brings (the gate's)
    assert "topk_migrate/codemods/pass_topk_length/smoke/command.py" in names
    meta = zipfile.ZipFile(whl).read(next(n for n in names if n.endswith("METADATA"))).decode()
    core = [l for l in meta.splitlines() if l.startswith("Requires-Dist:") and "extra ==" not in l]
    assert not any("torch" in l for l in core), core  # light install: torch only in the smoke extra


def test_importing_the_cli_imports_neither_torch_nor_libcst():
    code = "import sys, topk_migrate.cli; print('torch' in sys.modules, 'libcst' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]
