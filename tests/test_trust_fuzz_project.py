"""Random project files a fork could commit: reading them never raises past the one-line InputError.

pyproject.toml, requirements*.txt (with includes), setup.py, setup.cfg and a dist-info METADATA
are drawn from fragments of real syntax and hostile shapes (deep nesting, huge clause lists,
arbitrary-equality strings, control characters, broken encodings), written into a project, and
read the way every command reads them: its configuration (`config.config_for`) and its kernel
decision (`kernels.project_decision`). The oracle is the contract itself: a Decision or None,
or InputError for the configuration, and nothing else. The default tier runs a few dozen
projects; the heavy tier a few thousand with a random seed (printed by hypothesis on failure).
"""
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from topk_migrate import config, kernels
from topk_migrate.model import InputError

DISTS = ("sglang-kernel", "sgl-kernel")
MINS = {"sglang-kernel": "0.4.3"}

_versions = st.sampled_from(["0.4.6", "0.4.2.post2", "0.4.*", "1!0.1", "0.4.6+local", ".py", "x", "0" * 40])
_ops = st.sampled_from(["==", "!=", ">=", "<", "~=", "===", ">", "<="])
_clause = st.builds(lambda o, v: f"{o}{v}", _ops, _versions)
_spec = st.lists(_clause, min_size=0, max_size=80).map(",".join)
_name = st.sampled_from(["sglang-kernel", "sgl_kernel", "SGL-Kernel", "torch", "sgl-kernel", "-e", "--index-url"])
_marker = st.sampled_from(["", "; python_version > '3'", "; extra == 'gpu'", "; os_name ==", ";;"])
_junk = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40)
_requirement = st.one_of(st.builds(lambda n, s, m: f"{n}{s}{m}", _name, _spec, _marker), _junk,
                         st.sampled_from(["-r r1.txt", "-r ../../etc/passwd", "-c r0.txt", "-r /dev/zero", "-r r0.txt"]))
_lines = st.lists(_requirement, max_size=30).map("\n".join)


def _nested(depth: int, kind: str) -> str:
    return {"array": "[" * depth + "]" * depth, "table": "{a=" * depth + "1" + "}" * depth}[kind]


_toml = st.one_of(
    st.builds(lambda s: f'[project]\ndependencies = ["sglang-kernel{s}"]\n', _spec),
    st.builds(lambda d, k: f"a = {_nested(d, k)}\n", st.integers(1, 4000), st.sampled_from(["array", "table"])),
    st.builds(lambda v: f"[tool.topk-migrate]\nkernel = {v!r}\n", st.one_of(_junk, st.builds(lambda s: f"sglang-kernel{s}", _spec))),
    st.builds(lambda v: f'[tool.topk-migrate]\ndisable = ["{v}"]\nmetadata = ["{v}"]\n', _junk),
    _junk,
)
_setup_py = st.one_of(
    st.builds(lambda s: f"from setuptools import setup\nsetup(install_requires=['sglang-kernel{s}'])\n", _spec),
    st.builds(lambda d: "R = " + "[" * d + "'sglang-kernel==0.4.6'" + "]" * d + "\nsetup(install_requires=R)\n",
              st.integers(1, 400)),
    st.builds(lambda n: "X = 1" + " + 1" * n + "\nsetup(install_requires=X)\n", st.integers(0, 3000)),
    _junk,
)
_setup_cfg = st.builds(lambda r: f"[options]\ninstall_requires =\n    {r}\n[options.extras_require]\ngpu = {r}\n", _lines)
_metadata = st.builds(lambda n, s: f"Name: {n}\nVersion: 0.4.6\nRequires-Dist: sglang-kernel{s}\n\nbody", _name, _spec)


def _project(tmp, files) -> str:
    root = tmp / f"p{len(os.listdir(tmp))}"
    (root / "pkg").mkdir(parents=True)
    (root / ".git").mkdir()
    for name, text in files.items():
        data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
        (root / name).write_bytes(data)
    backend = root / "pkg" / "backend.py"
    backend.write_text("from sgl_kernel import flash_mla_sparse_fwd\n")
    return str(backend)


def _read(backend: str) -> None:
    try:
        config.config_for(os.path.dirname(backend))
    except InputError as e:
        assert "\n" not in str(e)
    decision = kernels.project_decision(backend, DISTS, MINS)
    assert decision is None or decision.accepts in (True, False, None)
    if decision is not None:
        assert len(decision.describe()) < 2000


_files = st.fixed_dictionaries({}, optional={
    "pyproject.toml": _toml, "requirements.txt": _lines, "r0.txt": _lines, "r1.txt": _lines,
    "setup.py": _setup_py, "setup.cfg": _setup_cfg,
    "pkg/requirements-dev.txt": _lines,
})


def _check(tmp_path_factory, files):
    tmp = tmp_path_factory.mktemp("fuzz", numbered=True)
    _read(_project(tmp, files))


@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(files=_files)
def test_random_project_files_read_cleanly(tmp_path_factory, files):
    _check(tmp_path_factory, files)


@pytest.mark.heavy
@settings(max_examples=3000, deadline=None, suppress_health_check=list(HealthCheck))
@given(files=_files)
def test_random_project_files_read_cleanly_heavy(tmp_path_factory, files):
    _check(tmp_path_factory, files)


@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(meta=_metadata, record=st.sampled_from(["", "pkg/backend.py,,\n", "\0\0\n", "x" * 5000]))
def test_random_installed_metadata_reads_cleanly(tmp_path_factory, meta, record):
    site = tmp_path_factory.mktemp("site", numbered=True)
    info = site / "dist-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(meta)
    (info / "RECORD").write_text(record)
    (site / "pkg").mkdir()
    backend = site / "pkg" / "backend.py"
    backend.write_text("from sgl_kernel import flash_mla_sparse_fwd\n")
    _read(str(backend))
