"""The one switch for the analysis' LibCST accelerators (topk_migrate/cst/accel.py; issue 38 item 5).

The accelerators (cstwalk.fast_visits, scopefast, cstutil's statement codegen) read LibCST's private internals.
They are on only for the LibCST releases pyproject.toml allows (the range tested here) and whose copied
functions are still the ones copied; TOPK_MIGRATE_NO_ACCEL=1 turns them off. Off, the analysis uses LibCST's
public API only and its answers are the same, byte for byte:

- default tier: the switch's rules, and check and apply of the fixtures, of scale_bench's shapes and of every
  rule's examples with the switch on and off (tests/accel_compare.py, each in a child process), compared;
- heavy tier: the same comparison in fresh virtual environments (no system site-packages) holding the lowest
  LibCST pyproject.toml allows and the newest PyPI has within its range, with sglang's real backends added.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import scale_bench  # bench/scale_bench.py's shapes (bench/ is on the tests' sys.path)
from helpers import ROOT
from topk_migrate.cst import accel

DRIVER = Path(__file__).with_name("accel_compare.py")


@pytest.fixture
def fresh_switch():
    """accel.state() worked out again inside the test, and again after it (it is read once per process)."""
    accel.reset()
    yield
    accel.reset()


def test_the_environment_variable_turns_the_accelerators_off(monkeypatch, fresh_switch):
    monkeypatch.setattr(accel, "libcst_version", lambda: "1.9.0")
    for value, on in (("1", False), ("yes", False), ("0", True), ("", True)):
        monkeypatch.setenv(accel.ENV, value)
        accel.reset()
        assert accel.on() is on, value
    monkeypatch.delenv(accel.ENV)
    accel.reset()
    assert accel.state() == (True, "LibCST 1.9.0")


@pytest.mark.parametrize("version,on", [("1.1.0", True), ("1.9.0", True), ("1.9.1rc1", True), ("1.0.1", False),
                                        ("1.10.0", False), ("1.10.0.dev3", False), ("2.0.0", False), ("", False)])
def test_only_a_tested_libcst_is_accelerated(monkeypatch, fresh_switch, version, on):
    monkeypatch.delenv(accel.ENV, raising=False)
    monkeypatch.setattr(accel, "libcst_version", lambda: version)
    assert accel.on() is on
    if not on:
        assert "outside the tested 1.1 to 1.10" in accel.state()[1]


def test_a_libcst_whose_copied_code_changed_is_not_accelerated(monkeypatch, fresh_switch):
    monkeypatch.delenv(accel.ENV, raising=False)
    assert accel.self_check() == ""  # the installed LibCST: every function copied is the one copied
    key = ("libcst.metadata.scope_provider", "ScopeVisitor.on_leave")
    monkeypatch.setitem(accel.SELF_CHECKS, key, accel.SELF_CHECKS[key] + ("something_new",))
    assert not accel.on() and accel.state()[1].endswith("ScopeVisitor.on_leave is not the code copied")
    monkeypatch.setitem(accel.SELF_CHECKS, key, accel.SELF_CHECKS[key][:-1])
    monkeypatch.setattr(accel, "PRIVATE", accel.PRIVATE + (("libcst", "CSTNode._gone"),))
    accel.reset()
    assert not accel.on() and accel.state()[1].endswith("libcst.CSTNode._gone is missing")


def test_the_tested_range_is_the_one_pyproject_allows():
    deps = re.search(r"^dependencies = \[(.*)\]$", (ROOT / "pyproject.toml").read_text(), re.M).group(1)
    (spec,) = re.findall(r'"libcst([^"]*)"', deps)
    lowest, above = accel.TESTED
    assert spec == f">={'.'.join(map(str, lowest))},<{'.'.join(map(str, above))}"


# -- on and off, compared ------------------------------------------------------------------------------------


SHAPE_SITES = 4


def build_tree(dest: Path, real=()) -> Path:
    """The inputs: the fixtures (bundled example and pairs, with their pins and config), each scale_bench shape
    with a few sites, and the `real` files; each shape and real file a project of its own (a pyproject.toml
    beside it: no file is another's project, whose reads would cost each a look at all the others)."""
    shutil.copytree(ROOT / "fixtures", dest, ignore=shutil.ignore_patterns("__pycache__"))
    alone = [(f"shapes/{name}", "backend.py", make(SHAPE_SITES)) for name, make in scale_bench.SHAPES.items()]
    alone += [(f"real/{i}", Path(path).name, Path(path).read_text(encoding="utf-8")) for i, path in enumerate(real)]
    for folder, name, code in alone:
        (dest / folder).mkdir(parents=True)
        (dest / folder / "pyproject.toml").write_text("")
        (dest / folder / name).write_text(code, encoding="utf-8")
    return dest


def compare(python: str, tree: Path) -> dict:
    """The driver's documents with the switch on and off (run side by side), checked equal; the one of on."""
    env = {k: v for k, v in os.environ.items() if k != accel.ENV}
    procs = {on: subprocess.Popen([python, str(DRIVER), str(tree)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True, env=env if on else {**env, accel.ENV: "1"})
             for on in (True, False)}
    docs = {}
    for on, p in procs.items():
        out, err = p.communicate(timeout=900)
        assert p.returncode == 0, err[-3000:]
        docs[on] = json.loads(out)
    on, off = docs[True], docs[False]
    assert on["accel"]["on"], on["accel"]  # pyproject's range: the LibCST installed is one tested
    assert not off["accel"]["on"] and not off["accel"]["scopefast imported"], off["accel"]
    assert on["cli"].keys() == off["cli"].keys()
    for name in on["cli"]:
        assert on["cli"][name] == off["cli"][name], name
    assert len(on["examples"]) == len(off["examples"]) >= 10
    for a, b in zip(on["examples"], off["examples"]):
        assert a == b, a["example"]
    return on


def _sites(doc: dict, run: str) -> int:
    return len(doc["cli"][run]["report"]["sites"])


def test_check_and_apply_are_the_same_with_the_accelerators_on_and_off(tmp_path):
    tree = build_tree(tmp_path / "tree")
    doc = compare(sys.executable, tree)
    assert _sites(doc, "check reference") >= 17 + len(scale_bench.SHAPES)  # every input was analysed
    assert doc["cli"]["apply reference"]["files"] != {p.relative_to(tree).as_posix(): p.read_text()
                                                      for p in tree.rglob("*") if p.is_file()}  # apply rewrote


# -- heavy: fresh virtual environments, the lowest and newest LibCST allowed ---------------------------------


def _libcst_spec() -> str:
    deps = re.search(r"^dependencies = \[(.*)\]$", (ROOT / "pyproject.toml").read_text(), re.M).group(1)
    return "libcst" + re.findall(r'"libcst([^"]*)"', deps)[0]


@pytest.fixture(scope="module")
def project_wheel(tmp_path_factory) -> Path:
    """The project's wheel, built from a copy of what it ships (no build/ written into the checkout)."""
    src = tmp_path_factory.mktemp("src")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    for name in ("topk_migrate", "codemods", "fixtures"):
        shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(out),
                    str(src)], check=True, capture_output=True)
    (whl,) = out.glob("topk_migrate-*.whl")
    return whl


def _venv(dest: Path, libcst: str, wheel: Path) -> str:
    """A plain virtual environment (LibCST from PyPI, never the system's) holding the project without its
    dependencies, then `libcst`, click and packaging. Its python's path."""
    subprocess.run([sys.executable, "-m", "venv", str(dest)], check=True, capture_output=True)
    python = str(dest / "bin" / "python")
    pip = [python, "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    r = subprocess.run(pip + [libcst, "click", "packaging"], capture_output=True, text=True, timeout=600)
    if r.returncode:
        msg = f"cannot install {libcst} from PyPI: {r.stderr.strip()[-300:]}"
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)
    subprocess.run(pip + ["--no-deps", str(wheel)], check=True, capture_output=True)
    return python


def _real_backends() -> list:
    import zipfile

    import sglang_wheels

    out = []
    for version, dist, member in (("0.5.16", "sglang", sglang_wheels.DSA), ("0.5.12.post1", "sglang", sglang_wheels.NSA),
                                  ("0.7.2", "sglang-kt", sglang_wheels.NSA)):
        dest = Path(sglang_wheels.CACHE) / "accel-real" / f"{dist}-{version}" / Path(member).name
        if not dest.exists():
            dest.parent.mkdir(parents=True, exist_ok=True)
            with zipfile.ZipFile(sglang_wheels.wheel(version, dist)) as z:
                dest.write_bytes(z.read(member))
        out.append(dest)
    return out


@pytest.mark.heavy
@pytest.mark.parametrize("which", ["lowest", "newest"])
def test_the_same_on_the_lowest_and_newest_libcst_allowed(tmp_path, project_wheel, which):
    spec = _libcst_spec()
    lowest = re.search(r">=([\d.]+)", spec).group(1)
    libcst = f"libcst=={lowest}" if which == "lowest" else spec
    python = _venv(tmp_path / "venv", libcst, project_wheel)
    tree = build_tree(tmp_path / "tree", real=_real_backends())
    doc = compare(python, tree)
    version = doc["libcst"]
    print(f"{which}: LibCST {version} ({libcst}), accelerators {doc['accel']['why']}")
    if which == "lowest":
        assert accel.release(version)[:2] == accel.release(lowest)[:2]
    assert _sites(doc, "check reference") >= 17 + 3
