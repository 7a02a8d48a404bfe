"""The kernel gate reads pins and vendored interfaces statically, in the documented order,
from inside the project only, and says what to do when it cannot decide."""
import functools
import json
import os
import subprocess
import sys
import textwrap

import pytest

from helpers import run_cli
from topk_migrate import kernels
from topk_migrate.api import migrate_source, process_file
from topk_migrate.model import Status
from topk_migrate.project import project_root, read_project_file

CALL = textwrap.dedent("""\
    from sgl_kernel.flash_mla import flash_mla_sparse_fwd

    def attend(metadata, q, kv, idx):
        return flash_mla_sparse_fwd(q, kv, idx, 1.0)

    # metadata.dsa_cache_seqlens_int32 is clipped to topk
""")


def status_of(path, src=CALL, kernel=None):
    (site,) = migrate_source(src, str(path), kernel=kernel).sites
    return site


cli = functools.partial(run_cli, timeout=120)


@pytest.fixture
def repo(tmp_path):
    """A project: its root is marked by .git, so no search leaves it."""
    (tmp_path / ".git").mkdir()
    return tmp_path


# -- pins in project files --------------------------------------------------------------


@pytest.mark.parametrize("name,text,ok", [
    ("pyproject.toml", '[project]\ndependencies = ["sglang-kernel==0.4.5", "torch"]\n', True),
    ("pyproject.toml", '[project]\ndependencies = ["sglang-kernel==0.4.2.post2"]\n', False),
    ("requirements.txt", "torch\nsgl-kernel==0.3.21\n", False),
    ("requirements-gpu.txt", "sglang_kernel>=0.4.3\n", True),
    ("setup.cfg", "[options]\ninstall_requires =\n    sglang-kernel<0.4.3\n", False),
    ("setup.py", "setup(install_requires=['sglang-kernel == 0.4.6'])\n", True),
    # comments, hashes and options after the requirement
    ("requirements.txt", "# sglang-kernel==0.4.2\ntorch  # sglang-kernel==0.4.1\n"
                         "sglang-kernel==0.4.6 --hash=sha256:00  # GPU build\n", True),
    ("requirements.txt", "sglang-kernel ~= 0.4.3\n", True),
    ("requirements.txt", "sglang-kernel >=0.4, <0.4.3\n", False),
    ("requirements.txt", "sglang-kernel ==0.4.*, !=0.4.0, !=0.4.1, !=0.4.2\n", None),  # 0.4.2.post2 still allowed
    ("requirements.txt", "sglang-kernel >0.4.2.post2, <0.5\n", None),  # 0.4.2.post3 or 0.4.3rc1 would be allowed
    ("requirements.txt", "sglang-kernel\n", None),
    ("requirements.txt", "sglang-kernel==0.5.*\n", True),
    # several lines for one distribution narrow each other, as pip's resolver does
    ("requirements.txt", "sglang-kernel>=0.4\nsglang-kernel>=0.4.3\n", True),
    # extras: every group that installs the kernel must have the parameter
    ("pyproject.toml", '[project]\ndependencies = []\n[project.optional-dependencies]\n'
                       'gpu = ["sglang-kernel==0.4.6"]\nlegacy = ["sgl-kernel==0.3.21"]\n', False),
    # only extras pin the kernel: `pip install .` (no extra) installs an unpinned one, so nothing is decided
    ("pyproject.toml", '[project.optional-dependencies]\nh100 = ["sglang-kernel==0.4.6"]\nb200 = ["sglang-kernel>=0.4.4"]\n', None),
    ("setup.cfg", "[options.extras_require]\ngpu =\n    sglang-kernel==0.4.6\n", None),
    ("pyproject.toml", '[project]\ndependencies = ["sglang-kernel>=0.4.4"]\n[project.optional-dependencies]\n'
                       'h100 = ["sglang-kernel==0.4.6"]\n', True),
    ("setup.py", "REQS = ['torch', 'sglang-kernel==0.4.1']\nsetup(install_requires=REQS)\n", False),
    ("setup.py", "setup(extras_require={'gpu': ['sglang-kernel>=0.4.3'], 'old': ['sgl-kernel<0.4']})\n", False),
])
def test_project_pins(repo, name, text, ok):
    assert_decided(site_in(repo, {name: text}), ok, too_old=name)


def site_in(repo, files):
    """The site of pkg/backend.py in a project holding `files` (path -> text)."""
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    (repo / "pkg").mkdir(exist_ok=True)
    return status_of(repo / "pkg" / "backend.py")


def assert_decided(site, ok, too_old="", unknown=""):
    """ok: True fixable; False manual, the kernel too old (the reason naming `too_old`); None manual, its
    capability unknown (the reason naming `unknown`)."""
    want = {True: Status.FIXABLE, False: Status.MANUAL, None: Status.MANUAL}[ok]
    assert site.status is want, site.reason
    if ok is False:
        assert site.reason.startswith("kernel too old") and too_old in site.reason, site.reason
    if ok is None:
        assert site.reason.startswith("kernel capability unknown") and unknown in site.reason, site.reason


@pytest.mark.parametrize("name,text", [
    # other ways the project installs the environment: each is one more way to install (red-team round G)
    ("Dockerfile", "FROM python:3.11\nRUN pip install --no-cache-dir sglang-kernel==0.4.2.post2 torch\n"),
    ("environment.yml", "name: fork\ndependencies:\n  - python=3.11\n  - pip:\n    - sglang-kernel==0.4.2.post2\n"),
    ("environment.yml", "name: fork\ndependencies:\n  - sglang-kernel=0.4.2\n"),  # conda's single `=`
    ("constraints.txt", "sglang-kernel==0.4.2.post2\n"),
    ("pyproject.toml", '[project]\ndependencies = ["sglang-kernel>=0.4.6"]\n[tool.uv]\n'
                       'override-dependencies = ["sglang-kernel==0.4.2.post2"]\n'),
    # round U: another tool's table of the pyproject (pixi's, hatch's environments)
    ("pyproject.toml", '[project]\ndependencies = ["sglang-kernel>=0.4.6"]\n[tool.pixi.pypi-dependencies]\n'
                       'sglang-kernel = "==0.4.2.post2"\n'),
    ("pyproject.toml", '[project]\nname = "fork"\n[tool.hatch.envs.default]\ndependencies = ["sglang-kernel==0.4.2.post2"]\n'),
    # round U: a bootstrap script's command computed from a table, shlex.split, or %-formatting; a shell script
    # with a Python heredoc (read as a recipe, not as Python that does not parse)
    ("bootstrap.py", 'import subprocess\nSTEPS = [["pip", "install", "sglang-kernel==0.4.2.post2"]]\n'
                     'for step in STEPS:\n    subprocess.check_call(step)\n'),
    ("bootstrap.py", 'import shlex, subprocess\nsubprocess.check_call(shlex.split("pip install sglang-kernel==0.4.2.post2"))\n'),
    ("setup_env.sh", '#!/bin/sh\npip install sglang-kernel==0.4.2.post2\npython - <<EOF\nimport sgl_kernel\nprint(1)\nEOF\n'),
])
def test_an_install_recipe_pinning_an_old_kernel_decides_too(repo, name, text):
    (repo / "requirements.txt").write_text("sglang-kernel>=0.4.6\n")
    (repo / name).write_text(text)
    (repo / "pkg").mkdir()
    site = status_of(repo / "pkg" / "backend.py")
    assert site.status is Status.MANUAL and site.reason.startswith("kernel too old") and name in site.reason, site.reason


@pytest.mark.parametrize("text", [
    'import subprocess\nsubprocess.check_call("pip install %s==%s" % ("sglang-kernel", "0.4.2"), shell=True)\n',
    'import subprocess\nKERNEL = "sglang-kernel"\nsubprocess.run(["pip", "install", KERNEL + "==" + VERSION])\n'])
def test_a_command_computed_from_a_kernels_name_decides_nothing(repo, text):
    (repo / "requirements.txt").write_text("sglang-kernel>=0.4.6\n")
    (repo / "bootstrap.py").write_text(text)
    (repo / "pkg").mkdir()
    assert_decided(status_of(repo / "pkg" / "backend.py"), None, unknown="bootstrap.py")


def test_a_script_naming_a_kernel_only_where_no_command_reads_it_installs_nothing(repo):
    (repo / "requirements.txt").write_text("sglang-kernel>=0.4.6\n")
    (repo / "check_env.py").write_text('import subprocess\nHINT = "pip install sglang-kernel==0.4.2 for old GPUs"\n'
                                       'subprocess.run(["nvidia-smi"])\nprint(HINT)\n')
    (repo / "pkg").mkdir()
    assert status_of(repo / "pkg" / "backend.py").status is Status.FIXABLE


def test_a_python_here_document_of_a_shell_recipe_is_read_as_python(repo):
    """Round U: a smoke test's `print("sgl_kernel", ...)` fed to Python installs nothing."""
    (repo / "install.sh").write_text("#!/bin/sh\npip install sglang-kernel==0.4.6\npython - <<'EOF'\nimport sgl_kernel\n"
                                     'print("sgl_kernel", sgl_kernel.__version__)\nEOF\n')
    (repo / "pkg").mkdir()
    assert status_of(repo / "pkg" / "backend.py").status is Status.FIXABLE


def test_an_install_recipe_pinning_a_new_kernel_keeps_the_site_fixable(repo):
    (repo / "Dockerfile").write_text("RUN pip install sglang-kernel==0.4.6 'torch>=2.4'\n")
    (repo / "pkg").mkdir()
    assert status_of(repo / "pkg" / "backend.py").status is Status.FIXABLE


@pytest.mark.parametrize("files,ok", [
    # setup.py reading its dependencies from a side file (red-team round G2): the file decides
    ({"setup.py": 'setup(install_requires=open("deps/runtime.txt").read().splitlines())\n',
      "deps/runtime.txt": "sglang-kernel==0.4.2.post2\n"}, False),
    ({"setup.py": 'import os\nsetup(install_requires=read(os.path.join("deps", "runtime.txt")))\n',
      "deps/runtime.txt": "sglang-kernel==0.4.2.post2\n"}, False),
    ({"setup.py": 'setup(install_requires=open("deps/runtime.txt").read().splitlines())\n',
      "deps/runtime.txt": "sglang-kernel==0.4.6\n"}, True),
    # a pin the code spells beside a computed list is one more way
    ({"setup.py": 'setup(install_requires=base() + ["sglang-kernel==0.4.1"])\n',
      "requirements.txt": "sglang-kernel>=0.4.6\n"}, False),
    # computed from nothing the project holds: no pin anywhere else decides for it
    ({"setup.py": 'setup(install_requires=fetch_from_index())\n', "requirements.txt": "sglang-kernel>=0.4.6\n"}, None),
    ({"setup.cfg": "[options]\ninstall_requires = file: deps/base.txt, deps/kernel.txt\n",
      "deps/base.txt": "torch\n", "deps/kernel.txt": "sglang-kernel==0.4.1\n"}, False),
    ({"pyproject.toml": '[project]\nname = "f"\ndynamic = ["dependencies"]\n'
                        '[tool.setuptools.dynamic]\ndependencies = {file = ["deps/runtime.txt"]}\n',
      "deps/runtime.txt": "sglang-kernel==0.4.2.post2\n", "requirements.txt": "sglang-kernel>=0.4.6\n"}, False),
    ({"pyproject.toml": '[project]\nname = "f"\ndynamic = ["dependencies"]\n[build-system]\nrequires = ["x"]\n',
      "requirements.txt": "sglang-kernel>=0.4.6\n"}, None),
    # a literal list, or a computed one whose file pins no kernel, decides as before
    ({"setup.py": 'setup(install_requires=read("deps/runtime.txt"), long_description=open("README.md").read())\n',
      "deps/runtime.txt": "torch\n", "README.md": "sglang-kernel==0.4.1\n", "requirements.txt": "sglang-kernel>=0.4.6\n"},
     True),
])
def test_dependencies_computed_by_a_project_file_decide_by_what_they_read(repo, files, ok):
    assert_decided(site_in(repo, files), ok, unknown="computed")


@pytest.mark.parametrize("params,status", [
    ("q, kv, indices, sm_scale, d_v=512, attn_sink=None", Status.MANUAL),
    ("q, kv, indices, sm_scale, d_v=512, attn_sink=None, topk_length=None", Status.FIXABLE),
])
def test_pins_that_accept_yield_to_the_module_this_python_imports(repo, tmp_path_factory, monkeypatch, params, status):
    """Two distributions provide `tokenspeed_kernel` (red-team round G2, as `flash_mla`): the pin of one that
    takes the parameter decides nothing where the module this Python would import has no such parameter."""
    site_dir = tmp_path_factory.mktemp("site")
    (site_dir / "tokenspeed_kernel").mkdir()
    (site_dir / "tokenspeed_kernel" / "__init__.py").write_text(f"def flash_mla_sparse_fwd({params}):\n    pass\n")
    monkeypatch.syspath_prepend(str(site_dir))
    monkeypatch.delitem(sys.modules, "tokenspeed_kernel", raising=False)
    (repo / "requirements.txt").write_text("tokenspeed-kernel==0.1.3\n")
    (repo / "pkg").mkdir()
    site = status_of(repo / "pkg" / "backend.py", CALL.replace("sgl_kernel.flash_mla", "tokenspeed_kernel"))
    assert site.status is status, site.reason
    if status is Status.MANUAL:
        assert "this Python imports (tokenspeed_kernel/__init__.py:1) has no topk_length" in site.reason, site.reason


@pytest.mark.parametrize("spec,want", [
    ("==0.4.3", True), ("==0.4.2.post2", False), ("==0.4.3+cu128", True), ("===0.4.6", True),
    (">=0.4.3", True), (">0.4.3", True), (">=0.4.2", None), (">0.4.2.post2", None), (">=0.4.3rc1", None),
    ("<0.4.3", False), ("<=0.4.2.post2", False), ("<=0.4.3", None), ("<0.5", None),
    ("~=0.4.3", True), ("~=0.4.2", None), ("~=0.3.0", False), ("~=0.4", None),
    ("==0.4.*", None), ("==0.5.*", True), ("==0.3.*", False), ("!=0.4.2", None),
    (">=0.4.3,!=0.4.4", True), (">=0.4.2,<0.4.3", False), (">=0.4.2,<0.4.2", None), ("", None),
])
def test_a_range_decides_only_when_every_allowed_version_agrees(spec, want):
    assert kernels.decide(spec, "0.4.3") is want


def test_a_distribution_without_any_release_with_the_parameter_is_too_old():
    assert kernels.decide(">=0.3", None) is False
    assert kernels.decide(">=0.3,<0.3", None) is None  # allows nothing: says nothing


# -- kernels an exact sglang pin brings (issue 39) ------------------------------------------------------------

OLD_ENGINE = "sglang[srt]==0.4.9.post2 from requirements.txt brings sgl-kernel==0.2.5"


@pytest.mark.parametrize("files,ok,named", [
    # the red-team case: 0.4.9.post2's srt extra requires sgl-kernel==0.2.5, another distribution of the same
    # sgl_kernel module, without topk_length; whichever installs last wins
    ({"requirements.txt": "sglang[srt]==0.4.9.post2\nsglang-kernel==0.4.6\n"}, False,
     OLD_ENGINE + ", which installs the same module as sglang-kernel==0.4.6: whichever installs last wins; "
                  "pin sglang[srt]==0.5.13 or later"),
    ({"requirements.txt": "sglang[srt]==0.5.13\nsglang-kernel==0.4.6\n"}, True, ""),  # the remedy it names
    ({"requirements.txt": "sglang==0.5.14\nsglang-kernel==0.4.6\n"}, True, ""),  # its sglang-kernel==0.4.4 has it
    ({"requirements.txt": "sglang==0.5.16\n"}, True, ""),  # alone, its kernel decides
    ({"requirements.txt": "sglang==0.5.12\n"}, False, "sglang-kernel==0.4.2.post2 (which sglang==0.5.12 requires)"),
    # the same distribution at two releases: a later `pip install` may put either in place
    ({"requirements.txt": "sglang==0.5.12\nsglang-kernel==0.4.6\n"}, False, "sglang==0.5.12 from requirements.txt"),
    ({"requirements.txt": "sglang===0.5.12\n"}, False, "sglang===0.5.12"),
    ({"requirements.txt": "sglang==0.4.9.post2\nsglang-kernel==0.4.6\n"}, True, ""),  # without srt: no kernel
    ({"requirements.txt": "sglang[all]==0.4.9.post2\nsglang-kernel==0.4.6\n"}, False, "sgl-kernel==0.2.5"),
    ({"requirements.txt": "sglang[blackwell]==0.4.9.post2\nsglang-kernel==0.4.6\n"}, False, "brings sgl-kernel,"),
    ({"requirements.txt": 'sglang[srt]==0.4.9.post2; python_version >= "3"\nsglang-kernel==0.4.6\n'}, False,
     OLD_ENGINE),
    ({"pyproject.toml": '[project]\ndependencies = ["sglang[srt]==0.4.9.post2", "sglang-kernel==0.4.6"]\n'}, False,
     "sglang[srt]==0.4.9.post2 from pyproject.toml"),
    ({"requirements.txt": "sglang-kernel==0.4.6\n", "Dockerfile": 'RUN pip install "sglang[srt]==0.4.9.post2"\n'},
     False, "sglang[srt]==0.4.9.post2 from Dockerfile"),
    # only an extra of the project pins sglang: `pip install .` without it decides nothing
    ({"pyproject.toml": '[project.optional-dependencies]\nserve = ["sglang==0.5.16"]\n'}, None, "sglang==0.5.16"),
    ({"requirements.txt": "sglang==0.5.14+cu128\n"}, True, ""),  # a local build of a release: that release
    # a range of sglang bounded above brings every release it admits (round AR); one open above, the newest's
    ({"requirements.txt": "sglang[srt]>=0.4,<0.5.13\nsglang-kernel==0.4.6\n"}, False, "sglang[srt]<0.5.13,>=0.4 admits"),
    ({"requirements.txt": "sglang[srt]>=0.4\nsglang-kernel==0.4.6\n"}, True, ""),
    # newer than the table's newest: assumed to bring no older kernel, so the project's own kernel pin decides
    ({"requirements.txt": "sglang==9.0\nsglang-kernel==0.4.6\n"}, True, ""),
    ({"requirements.txt": "sglang==9.0\n"}, None, "no pin of sglang-kernel or sgl-kernel"),
    # below the newest but not in the table (never on PyPI): it decides nothing
    ({"requirements.txt": "sglang==0.1.8\nsglang-kernel==0.4.6\n"}, None, "sglang==0.1.8: a release not in"),
    # a fork of the engine builds its own release: its dependencies say which kernel, not PyPI's 0.5.12
    ({"python/pyproject.toml": '[project]\nname = "sglang"\nversion = "0.5.12"\n'
                               'dependencies = ["sglang-kernel==0.4.6"]\n'}, True, ""),
])
def test_an_exact_sglang_pin_brings_its_kernel(repo, files, ok, named):
    site = site_in(repo, files)
    assert_decided(site, ok, too_old=named, unknown=named)


# -- environment markers ---------------------------------------------------------------------


@pytest.mark.parametrize("text,ok", [
    # every pin conditional, none holding where this runs: this environment installs an unpinned kernel (round
    # J2), so nothing is decided; where one holds, the environments they select decide
    ('sglang-kernel==0.4.6; python_version >= "4.0"\n', None),
    ('sglang-kernel==0.4.6; python_version >= "3.0"\n', True),
    ('sglang-kernel==0.4.6; platform_machine == "x86_64"\nsglang-kernel==0.4.5; platform_machine != "x86_64"\n', True),
    ('sglang-kernel==0.4.6; platform_machine == "x86_64"\nsglang-kernel>=0.4.4\n', True),
    ('sglang-kernel==0.4.6; platform_machine == "x86_64"\nsglang-kernel==0.4.2; platform_machine == "aarch64"\n', False),
    ('sglang-kernel==0.4.6; python_version >= "3.10"\nsgl-kernel==0.3.21; python_version < "3.10"\n', False),
    ('sglang-kernel>=0.4.4; sys_platform == "linux"\nsglang-kernel>=0.4.2\n', None),  # elsewhere only >=0.4.2
    ('sglang-kernel<0.5; sys_platform == "linux"\nsglang-kernel>=0.4.3\n', True),
])
def test_every_marker_environment_must_accept(repo, text, ok):
    (repo / "requirements.txt").write_text(text)
    site = status_of(repo / "backend.py")
    if ok:
        assert site.status is Status.FIXABLE, site.reason
    else:
        assert site.status is Status.MANUAL
        assert site.reason.startswith("kernel too old" if ok is False else "kernel capability unknown"), site.reason
    if ok is False:
        assert ("aarch64" in site.reason) or ("3.10" in site.reason), "names the environment that breaks"


def test_each_requirements_file_is_an_environment_of_its_own(repo):
    (repo / "requirements.txt").write_text("sglang-kernel==0.4.6\n")
    (repo / "requirements-legacy.txt").write_text("sgl-kernel==0.3.21\n")
    site = status_of(repo / "backend.py")
    assert site.status is Status.MANUAL and "requirements-legacy.txt" in site.reason and "too old" in site.reason


# -- includes -----------------------------------------------------------------------------------


def test_includes_and_constraints_are_followed(repo):
    (repo / "reqs").mkdir()
    (repo / "requirements.txt").write_text("-r reqs/base.txt\n--constraint=reqs/pins.txt\n")
    (repo / "reqs" / "base.txt").write_text("torch\nsglang-kernel\n")
    (repo / "reqs" / "pins.txt").write_text("sglang-kernel==0.4.2.post2  # the old kernel\n")
    site = status_of(repo / "backend.py")
    assert site.status is Status.MANUAL and "reqs/pins.txt" in site.reason and "too old" in site.reason


def test_include_cycles_end(repo):
    (repo / "requirements.txt").write_text("-r requirements-b.txt\nsglang-kernel>=0.4.3\n")
    (repo / "requirements-b.txt").write_text("-rrequirements.txt\n")
    assert status_of(repo / "backend.py").status is Status.FIXABLE


def test_includes_stay_inside_the_project(tmp_path):
    (tmp_path / "outside.txt").write_text("sglang-kernel==0.4.6\n")
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / ".git").mkdir()
    (proj / "requirements.txt").write_text("-r ../outside.txt\n")
    (proj / "link.txt").symlink_to(tmp_path / "outside.txt")
    (proj / "requirements-dev.txt").write_text("-r link.txt\n")
    site = status_of(proj / "backend.py")
    assert site.status is Status.MANUAL and site.reason.startswith("kernel capability unknown"), site.reason


# -- --kernel and [tool.topk-migrate] kernel -----------------------------------------------------------


def test_explicit_pin_beats_project_pins(repo):
    (repo / "requirements.txt").write_text("sglang-kernel==0.4.6\n")
    site = status_of(repo / "backend.py", kernel="sglang-kernel==0.4.2.post2")
    assert site.status is Status.MANUAL and "--kernel" in site.reason
    assert site.reason == ("kernel too old: sglang-kernel==0.4.2.post2 from --kernel "
                           "(topk_length needs sglang-kernel>=0.4.3, and no sgl-kernel release has it)")


@pytest.mark.parametrize("text,dist,ok", [
    ("sgl_kernel==0.4.5", "sglang-kernel", True),  # the module name users import
    ("sgl_kernel==0.3.21", "sglang-kernel", False),
    ("sglang_kernel==0.4.6", "sglang-kernel", True),
    ("SGLang-Kernel>=0.4.3", "sglang-kernel", True),
    ("sgl-kernel==0.3.21", "sgl-kernel", False),
    ("vllm==0.16.0", "vllm", True),
    ("tokenspeed_kernel==0.1.4", "tokenspeed-kernel", True),
])
def test_kernel_names(tmp_path, text, dist, ok):
    pin = kernels.parse_pin(text, "--kernel")
    assert pin.dist == dist
    if dist in ("sglang-kernel", "sgl-kernel"):
        assert status_of(tmp_path / "backend.py", kernel=text).status is (Status.FIXABLE if ok else Status.MANUAL)


@pytest.mark.parametrize("text", ["sglang-kernel", "sglang-kernel 0.4.6", "flash-attn==2.0", "==0.4.6",
                                  "sglang-kernel==0.4.6; python_version<'3'", "sglang-kernel @ https://x/y.whl", ""])
def test_a_bad_kernel_says_what_it_expects(text):
    with pytest.raises(ValueError) as e:
        kernels.parse_pin(text, "--kernel")
    msg = str(e.value)
    assert "\n" not in msg and "sglang-kernel==0.4.6" in msg and "sgl_kernel" in msg


def test_bad_kernel_on_the_command_line_is_one_line(tmp_path):
    (tmp_path / "backend.py").write_text(CALL)
    r = cli("check", "--kernel", "flash-attn==2.0", tmp_path / "backend.py")
    assert r.returncode == 2 and "unknown kernel 'flash-attn'" in r.stderr and "Traceback" not in r.stderr


def test_config_pin(repo):
    (repo / "pyproject.toml").write_text('[tool.topk-migrate]\nkernel = "sgl_kernel==0.4.2"\n')
    (repo / "backend.py").write_text(CALL)
    (site,) = process_file(str(repo / "backend.py")).sites
    assert site.status is Status.MANUAL and "kernel too old" in site.reason
    assert "pyproject.toml [tool.topk-migrate] kernel" in site.reason, site.reason


@pytest.mark.parametrize("value", ['"sglang-kernel"', '"turbo==1.0"', "3"])
def test_bad_config_kernel_is_one_line_naming_the_file(repo, value):
    (repo / "pyproject.toml").write_text(f"[tool.topk-migrate]\nkernel = {value}\n")
    (repo / "backend.py").write_text(CALL)
    out = process_file(str(repo / "backend.py"))
    assert out.error and "pyproject.toml" in out.error and "\n" not in out.error, out.error
    assert not out.error.startswith("internal error")


# -- reasons a user can act on -----------------------------------------------------------------------


def test_unknown_kernel_says_what_to_do(repo):
    site = status_of(repo / "backend.py")
    assert site.status is Status.MANUAL
    assert site.reason == (
        "kernel capability unknown (pass --kernel): no pin of sglang-kernel or sgl-kernel (the distributions of "
        "sgl_kernel) found; topk_length needs sglang-kernel>=0.4.3, and no sgl-kernel release has it; declare the "
        'kernel with --kernel sglang-kernel==VERSION or kernel = "sglang-kernel==VERSION" in [tool.topk-migrate]')


def test_undecided_pin_is_named_with_the_minimum(repo):
    (repo / "requirements.txt").write_text("sglang-kernel>=0.4\n")
    reason = status_of(repo / "backend.py").reason
    assert "sglang-kernel>=0.4 from requirements.txt allows versions both with and without topk_length" in reason
    assert "topk_length needs sglang-kernel>=0.4.3" in reason
    assert "--kernel" in reason and "[tool.topk-migrate]" in reason


def test_vllm_call_names_vllm(repo):
    src = "from vllm.v1.attention.ops.flashmla import flash_mla_sparse_fwd\nflash_mla_sparse_fwd(q, kv, i, s)\n"
    (site,) = migrate_source(src, str(repo / "m.py")).sites
    assert "no pin of vllm found; topk_length needs vllm>=0.15.0;" in site.reason and "--kernel vllm==VERSION" in site.reason


# -- installed distributions -----------------------------------------------------------------------------


def site_packages(tmp_path, owner, version, files, requires=()):
    """A site-packages dir holding `files` (path -> source), listed in owner's RECORD."""
    sp = tmp_path / "site-packages"
    info = sp / f"{owner}-{version}.dist-info"
    info.mkdir(parents=True)
    for rel, src in files.items():
        (sp / rel).parent.mkdir(parents=True, exist_ok=True)
        (sp / rel).write_text(src)
    (info / "RECORD").write_text("".join(f"{rel},sha256=x,1\n" for rel in files))
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {owner}\nVersion: {version}\n"
                                   + "".join(f"Requires-Dist: {r}\n" for r in requires) + "\nlong description\n")
    return sp


def test_installed_distribution_pins_come_from_the_owning_dist_info(tmp_path):
    sp = site_packages(tmp_path, "engine", "1.0", {"engine/layers/backend.py": CALL}, ["sglang-kernel==0.4.2.post1"])
    other = sp / "other-1.0.dist-info"
    other.mkdir()
    (other / "RECORD").write_text("other/x.py,,\n")
    (other / "METADATA").write_text("Name: other\nVersion: 1\nRequires-Dist: sglang-kernel==0.4.6\n")
    site = status_of(sp / "engine" / "layers" / "backend.py")
    assert site.status is Status.MANUAL and "engine-1.0.dist-info/METADATA" in site.reason


def test_a_project_file_shipped_inside_an_installed_package_does_not_hide_its_dist_info(tmp_path):
    """Real wheels ship nested pyproject.toml/setup.py (sglang/jit_kernel/.../cute/pyproject.toml)."""
    sp = site_packages(tmp_path, "sglang", "0.5.16", {"sglang/jit/cute/backend.py": CALL}, ["sglang-kernel==0.4.5"])
    (sp / "sglang" / "jit" / "cute" / "pyproject.toml").write_text('[project]\nname = "cute"\n')
    site = status_of(sp / "sglang" / "jit" / "cute" / "backend.py")
    assert site.status is Status.FIXABLE and site.kernel == "sglang-kernel==0.4.5 from sglang-0.5.16.dist-info/METADATA"


def test_installed_pins_with_extras_markers(tmp_path):
    # pinned only by extras: whether they were installed is not known, so the kernel installed beside decides
    sp = site_packages(tmp_path, "engine", "1.0", {"engine/backend.py": CALL},
                       ['sglang-kernel==0.4.6; extra == "gpu"', 'sglang-kernel==0.4.5; extra == "all"'])
    site = status_of(sp / "engine" / "backend.py")
    assert site.status is Status.MANUAL and 'extra == "gpu"' in site.reason, site.reason
    sp = site_packages(tmp_path / "with-kernel", "engine", "1.0", {"engine/backend.py": CALL},
                       ['sglang-kernel==0.4.6; extra == "gpu"', 'sglang-kernel==0.4.5; extra == "all"'])
    info = sp / "sglang_kernel-0.4.2.post2.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Name: sglang-kernel\nVersion: 0.4.2.post2\n")
    site = status_of(sp / "engine" / "backend.py")
    assert site.status is Status.MANUAL and site.reason.startswith("kernel too old"), site.reason


def test_a_kernel_installed_beside_decides_when_the_owner_does_not_pin_it(tmp_path):
    sp = site_packages(tmp_path, "sglang-kt", "0.7.2", {"sglang/backend.py": CALL}, ["kt-kernel==0.7.2"])
    info = sp / "sglang_kernel-0.4.6.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Name: sglang-kernel\nVersion: 0.4.6\n")
    site = status_of(sp / "sglang" / "backend.py")
    assert site.status is Status.FIXABLE
    assert site.kernel == "sglang-kernel==0.4.6 from sglang_kernel-0.4.6.dist-info/METADATA (installed beside it)"


def _owner_by_table(path, site_dir):
    """The owner as a table of every RECORD entry would give it (the first dist-info listing the path)."""
    rel = os.path.relpath(os.path.abspath(path), site_dir).replace(os.sep, "/")
    owners = {}
    for name in sorted(os.listdir(site_dir)):
        if name.endswith(".dist-info"):
            for line in (read_project_file(os.path.join(site_dir, name, "RECORD")) or "").splitlines():
                owners.setdefault(line.rsplit(",", 2)[0], os.path.join(site_dir, name))
    return owners.get(rel)


def test_the_owner_is_found_by_searching_the_records(tmp_path):
    """kernels.owner searches RECORD texts instead of building a table of their entries: the same answer
    for prefixes of other entries, CRLF, entries without a hash, a path two dist-infos list, quoted paths."""
    sp = tmp_path / "sp"
    for name, record in {
        "a-1.dist-info": "pkg/mod.pyc,sha256=x,1\r\npkg/mod.py.bak,,\r\npkg/one.py\r\npkg/two.py,\n",
        "b-1.dist-info": "pkg/mod.py,sha256=y,2\npkg/both.py,,\n\"pkg/c,d.py\",,\n",
        "c-1.dist-info": "pkg/both.py,,\npkg/mod.py,x\n",
        "d-1.dist-info": "",
    }.items():
        (sp / name).mkdir(parents=True)
        (sp / name / "RECORD").write_text(record, newline="")
    (sp / "e-1.dist-info").mkdir()  # no RECORD at all
    names = ["pkg/mod.py", "pkg/mod.pyc", "pkg/mod", "pkg/one.py", "pkg/two.py", "pkg/both.py", "pkg/c,d.py",
             "pkg/none.py", "pkg/mod.py.bak", "pkg/mod.py,sha256=y"]
    found = {n: kernels.owner(str(sp / n), str(sp)) for n in names}
    assert found == {n: _owner_by_table(str(sp / n), str(sp)) for n in names}
    assert found["pkg/mod.py"].endswith("b-1.dist-info") and found["pkg/both.py"].endswith("b-1.dist-info")
    assert found["pkg/one.py"].endswith("a-1.dist-info") and found["pkg/none.py"] is None


def test_distribution_names_compare_as_packaging_compares_them():
    from packaging.utils import canonicalize_name

    for name in ["Sglang_Kernel", "sglang-kernel", "FLASH.MLA", "a..-_b", "x__", "tokenspeed_flashmla", "vLLM", "_a_"]:
        assert kernels.normalize(name) == canonicalize_name(name)


@pytest.mark.parametrize("requirement", [
    "sglang-kernel==0.4.6", "SGLang_Kernel >= 0.4.3 ; extra == 'gpu'", "  vllm[cuda]==0.15.0", "torch==2.9.1",
    "vllm-==1.0", "vllm.==1.0", "flash_mla @ https://x/y.whl", "(bad", "", "tokenspeed.flashmla (>=1.0)",
])
def test_a_requirement_is_parsed_only_if_it_may_name_a_kernel_distribution(requirement):
    dists = ("sglang-kernel", "vllm", "flash-mla", "tokenspeed-flashmla")
    pin = kernels._requirement(requirement, "METADATA")
    if pin is not None and pin.dist in dists:
        assert kernels._may_name(requirement, dists)
    if not kernels._may_name(requirement, dists):
        assert pin is None or pin.dist not in dists


VLLM_BACKEND = textwrap.dedent("""\
    from vllm.v1.attention.ops.flashmla import flash_mla_sparse_fwd

    def forward(q, kv, indices, scale, attn_metadata):
        return flash_mla_sparse_fwd(q, kv, indices, scale)
""")


@pytest.mark.parametrize("version,ok", [("0.16.0", True), ("0.15.0", True), ("0.14.1", False)])
def test_a_call_inside_vllm_is_gated_by_the_vllm_version(tmp_path, version, ok):
    rel = "vllm/v1/attention/backends/mla/flashmla_sparse.py"
    sp = site_packages(tmp_path, "vllm", version, {rel: VLLM_BACKEND}, ["torch==2.9.0"])
    site = status_of(sp / rel, VLLM_BACKEND)
    assert site.status is Status.MANUAL
    if ok:  # the kernel accepts it: what is missing is the contract, not a --kernel
        assert "no " in site.reason and "clipped-seqlen metadata" in site.reason and "--kernel" not in site.reason, site.reason
        assert site.kernel == f"vllm=={version} from vllm-{version}.dist-info/METADATA"
    else:
        assert site.reason.startswith(f"kernel too old: vllm=={version} from vllm-{version}.dist-info/METADATA")
        assert "vllm>=0.15.0" in site.reason


def test_tokenspeed_kernel_reexports_tokenspeed_flashmla(repo):
    src = ("from tokenspeed_kernel.ops.attention.mla.cuda import flash_mla_sparse_fwd\n"
           "def f(metadata, q, kv, idx):\n    return flash_mla_sparse_fwd(q, kv, idx, 1.0)\n# metadata.dsa_cache_seqlens_int32\n")
    (repo / "requirements.txt").write_text("tokenspeed-kernel==0.1.4\n")
    (site,) = migrate_source(src, str(repo / "m.py")).sites
    assert site.status is Status.FIXABLE and site.kernel == "tokenspeed-kernel==0.1.4 from requirements.txt"
    other = repo / "other"  # a project of its own (pins are read once per run)
    (other / ".git").mkdir(parents=True)
    (other / "requirements.txt").write_text("tokenspeed-flashmla==1.0.0.post20260924\n")
    (site,) = migrate_source(src, str(other / "m.py")).sites
    assert site.status is Status.FIXABLE and site.kernel.startswith("tokenspeed-flashmla=="), site.reason


# -- vendored interfaces --------------------------------------------------------------------------------


@pytest.mark.parametrize("sig,ok", [
    ("q, kv, indices, sm_scale, d_v=512, attn_sink=None, topk_length=None", True),
    ("q, kv, indices, sm_scale, d_v=512", False),
])
def test_vendored_interface_is_read_statically(repo, sig, ok):
    vendored = repo / "vllm" / "attention" / "ops"
    vendored.mkdir(parents=True)
    (vendored / "flashmla.py").write_text(f"import torch_that_is_not_installed\ndef flash_mla_sparse_prefill({sig}):\n    pass\n")
    src = CALL.replace("sgl_kernel.flash_mla import flash_mla_sparse_fwd", "vllm.attention.ops.flashmla import flash_mla_sparse_prefill")
    src = src.replace("return flash_mla_sparse_fwd", "return flash_mla_sparse_prefill")
    site = status_of(repo / "vllm" / "backend.py", src)
    assert site.status is (Status.FIXABLE if ok else Status.MANUAL), site.reason
    assert site.kernel == "interface at vllm/attention/ops/flashmla.py:2"
    assert ok or "flashmla.py" in site.reason


def test_vendored_wrapper_position_makes_positional_calls_compliant(repo):
    (repo / "ops.py").write_text("def flash_mla_sparse_prefill(q, kv, indices, topk_length=None, sm_scale=1.0):\n    pass\n")
    src = "from .ops import flash_mla_sparse_prefill\nflash_mla_sparse_prefill(q, kv, i, lens)\n"
    (site,) = migrate_source(src, str(repo / "m.py")).sites
    assert site.status is Status.COMPLIANT


REEXPORT = textwrap.dedent("""\
    try:
        from vllm.third_party.flashmla.flash_mla_interface import flash_mla_sparse_fwd
    except ImportError:
        def _unavailable(*args, **kwargs):
            raise RuntimeError("no FlashMLA")
        flash_mla_sparse_fwd = _unavailable
""")


@pytest.mark.parametrize("interface,ok", [
    ("def flash_mla_sparse_fwd(q, kv, indices, sm_scale, d_v=512, attn_sink=None, topk_length=None):\n    pass\n", True),
    ("def flash_mla_sparse_fwd(q, kv, indices, sm_scale, d_v=512):\n    pass\n", False),
])
def test_reexports_are_followed_inside_the_project(repo, interface, ok):
    """A vLLM source tree: the wrapper module re-exports the vendored FlashMLA interface."""
    (repo / "vllm" / "v1" / "attention" / "ops").mkdir(parents=True)
    (repo / "vllm" / "third_party" / "flashmla").mkdir(parents=True)
    (repo / "vllm" / "v1" / "attention" / "ops" / "flashmla.py").write_text(REEXPORT)
    (repo / "vllm" / "third_party" / "flashmla" / "flash_mla_interface.py").write_text(interface)
    src = VLLM_BACKEND.replace("attn_metadata", "metadata") + "# metadata.dsa_cache_seqlens_int32\n"
    site = status_of(repo / "vllm" / "v1" / "backend.py", src)
    assert site.status is (Status.FIXABLE if ok else Status.MANUAL), site.reason
    assert site.kernel == "interface at vllm/third_party/flashmla/flash_mla_interface.py:1"


# -- the project root: decisions come from the project, not its surroundings ---------------------------------


def test_project_root(tmp_path):
    (tmp_path / "a" / "b" / "c").mkdir(parents=True)
    assert project_root(str(tmp_path / "a" / "b" / "c" / "x.py")) == str(tmp_path / "a" / "b" / "c")  # nothing marks one
    (tmp_path / "a" / ".git").mkdir()
    assert project_root(str(tmp_path / "a" / "b" / "c" / "x.py")) == str(tmp_path / "a")
    (tmp_path / "a" / "b" / "setup.cfg").write_text("")
    assert project_root(str(tmp_path / "a" / "b" / "c")) == str(tmp_path / "a" / "b")
    (tmp_path / "a" / "x-1.0.dist-info").mkdir()  # installed: the site directory is the root
    assert project_root(str(tmp_path / "a" / "b" / "c")) == str(tmp_path / "a")


def test_a_vendored_interface_above_the_project_is_not_read(tmp_path):
    (tmp_path / "sgl_kernel").mkdir()
    (tmp_path / "sgl_kernel" / "flash_mla.py").write_text(
        "def flash_mla_sparse_fwd(q, kv, indices, sm_scale, d_v=512, attn_sink=None, topk_length=None):\n    pass\n")
    proj = tmp_path / "fork"
    proj.mkdir()
    (proj / "pyproject.toml").write_text("[project]\nname = 'fork'\n")
    site = status_of(proj / "backend.py")
    assert site.status is Status.MANUAL and site.reason.startswith("kernel capability unknown"), site.reason


def test_pins_above_the_project_are_not_read(tmp_path):
    (tmp_path / "requirements.txt").write_text("sglang-kernel==0.4.6\n")
    (tmp_path / "fork").mkdir()
    (tmp_path / "fork" / "setup.py").write_text("from setuptools import setup\nsetup()\n")
    assert status_of(tmp_path / "fork" / "backend.py").status is Status.MANUAL


def test_config_above_a_project_with_its_own_pyproject_is_not_used(tmp_path):
    """issue 14.2: an outer pyproject.toml must not configure an inner project."""
    (tmp_path / "pyproject.toml").write_text('[tool.topk-migrate]\nkernel = "sglang-kernel==0.4.6"\n'
                                             'metadata = ["batch.lens"]\n')
    inner = tmp_path / "fork"
    inner.mkdir()
    (inner / "pyproject.toml").write_text("[project]\nname = 'fork'\n")
    (inner / "backend.py").write_text(CALL)
    (site,) = process_file(str(inner / "backend.py")).sites
    assert site.status is Status.MANUAL and site.reason.startswith("kernel capability unknown"), site.reason
    (tmp_path / "own.py").write_text(CALL)
    (site,) = process_file(str(tmp_path / "own.py")).sites  # the outer project itself still has it
    assert site.status is Status.FIXABLE


def git(repo, *args):
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo, check=True, capture_output=True)


def test_rev_does_not_read_a_kernel_planted_above_its_temporary_tree(tmp_path):
    """issue 14.2: `audit --rev` lays the revision out under $TMPDIR; a kernel interface
    planted in $TMPDIR must not turn a manual site fixable."""
    r = tmp_path / "repo"
    r.mkdir()
    git(r, "init", "-q")
    (r / "backend.py").write_text(CALL)
    git(r, "add", "-A")
    git(r, "commit", "-qm", "x")
    planted = tmp_path / "tmp"
    (planted / "sgl_kernel").mkdir(parents=True)
    (planted / "sgl_kernel" / "flash_mla.py").write_text(
        "def flash_mla_sparse_fwd(q, kv, indices, sm_scale, d_v=512, attn_sink=None, topk_length=None):\n    pass\n")
    (planted / "requirements.txt").write_text("sglang-kernel==0.4.6\n")
    (planted / "pyproject.toml").write_text('[tool.topk-migrate]\nkernel = "sglang-kernel==0.4.6"\n')
    env = {**os.environ, "TMPDIR": str(planted)}
    res = cli("audit", ".", "--rev", "HEAD", "--format", "json", cwd=r, env=env)
    doc = json.loads(res.stdout)
    assert [s["status"] for s in doc["sites"]] == ["manual"], res.stdout + res.stderr
    assert doc["sites"][0]["reason"].startswith("kernel capability unknown")
    res = cli("audit", ".", "--format", "json", cwd=r, env=env)  # and the work tree agrees
    assert [s["status"] for s in json.loads(res.stdout)["sites"]] == ["manual"]


# -- project files are read only if they are small regular files -------------------------------------------


@pytest.mark.parametrize("name", ["requirements.txt", "pyproject.toml", "setup.py", "setup.cfg", "requirements-dev.txt"])
def test_a_fifo_project_file_does_not_hang(repo, name):
    (repo / "requirements-gpu.txt").write_text("sglang-kernel==0.4.6\n")
    (repo / "backend.py").write_text(CALL)
    os.mkfifo(repo / name)
    r = cli("check", repo / "backend.py", timeout=60)  # a hang fails here, with TimeoutExpired
    assert r.returncode == 1 and " fixable " in r.stdout, r.stdout + r.stderr


def test_project_files_linked_to_dev_zero_are_not_read(repo):
    (repo / "requirements-dev.txt").symlink_to("/dev/zero")
    (repo / "setup.cfg").symlink_to("/dev/zero")
    (repo / "requirements.txt").write_text("-r requirements-dev.txt\nsglang-kernel==0.4.6\n")
    (repo / "backend.py").write_text(CALL)
    limit = "import resource; resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30)); "
    r = subprocess.run([sys.executable, "-c", limit + "from topk_migrate.cli import main; main()", "check", str(repo / "backend.py")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and " fixable " in r.stdout, r.stdout + r.stderr


def test_installed_metadata_that_is_not_a_regular_file_is_skipped(tmp_path):
    sp = site_packages(tmp_path, "engine", "1.0", {"engine/backend.py": CALL})
    (sp / "engine-1.0.dist-info" / "METADATA").unlink()
    os.mkfifo(sp / "engine-1.0.dist-info" / "METADATA")
    r = cli("check", sp / "engine" / "backend.py", timeout=60)
    assert r.returncode == 1 and "kernel capability unknown" in r.stdout


def test_read_project_file_refuses_what_is_big_or_irregular(tmp_path):
    (tmp_path / "big.txt").write_bytes(b"x" * 101)
    assert read_project_file(str(tmp_path / "big.txt"), limit=100) is None
    assert read_project_file(str(tmp_path / "big.txt"), limit=101) == "x" * 101
    assert read_project_file("/dev/zero") is None and read_project_file(str(tmp_path)) is None


# -- where the decision is shown ----------------------------------------------------------------------------


def test_check_verbose_and_json_say_which_kernel_decided(tmp_path):
    sp = site_packages(tmp_path, "sglang", "0.5.16", {"sglang/backend.py": CALL}, ["sglang-kernel==0.4.5", "torch"])
    r = cli("check", "-v", sp / "sglang" / "backend.py")
    assert "    kernel: sglang-kernel==0.4.5 from sglang-0.5.16.dist-info/METADATA" in r.stdout, r.stdout
    r = cli("audit", sp / "sglang", "--format", "json")
    (site,) = json.loads(r.stdout)["sites"]
    assert site["kernel"] == "sglang-kernel==0.4.5 from sglang-0.5.16.dist-info/METADATA"
    import jsonschema

    schema_file = os.path.join(os.path.dirname(__file__), "..", "topk_migrate", "schemas", "audit-v1.schema.json")
    with open(schema_file) as f:
        jsonschema.Draft202012Validator(json.load(f)).validate(json.loads(r.stdout))


def test_an_unknown_kernel_has_no_decision_in_json(repo):
    (repo / "backend.py").write_text(CALL)
    r = cli("audit", repo, "--format", "json")
    (site,) = json.loads(r.stdout)["sites"]
    assert "kernel" not in site and site["status"] == "manual"


# -- the range decision is sound: checked against packaging itself on a dense set of versions ---------------

VERSIONS = ["0.3.21", "0.4", "0.4.0", "0.4.1.post1", "0.4.2", "0.4.2.post1", "0.4.2.post2", "0.4.3.dev0", "0.4.3a1",
            "0.4.3rc1", "0.4.3", "0.4.3+cu128", "0.4.3.post1", "0.4.4", "0.4.10", "0.5.0a1", "0.5", "1.0", "1!0.1"]


def _valid(spec):
    from packaging.specifiers import InvalidSpecifier, Specifier

    try:
        return bool(Specifier(spec))
    except InvalidSpecifier:  # e.g. a local version with an ordered comparison
        return False


SPECS = [s for s in (f"{op}{v}" for op in ("==", "!=", ">=", ">", "<=", "<", "~=") for v in VERSIONS) if _valid(s)]
SPECS += ["==0.4.*", "!=0.4.*", "==0.4.3.*", "!=0.4.2.*", "==0.*", "===0.4.3"]


def test_decide_never_contradicts_the_versions_a_spec_allows():
    decide_never_contradicts_the_versions_a_spec_allows(300)


@pytest.mark.heavy
def test_decide_never_contradicts_the_versions_a_spec_allows_heavy():
    decide_never_contradicts_the_versions_a_spec_allows(3000)


def decide_never_contradicts_the_versions_a_spec_allows(examples):
    """A short run in the default tier, 3,000 examples in the heavy tier (same body)."""
    from hypothesis import given, settings
    from hypothesis import strategies as st
    from packaging.specifiers import SpecifierSet
    from packaging.version import Version

    @settings(max_examples=examples, deadline=None)
    @given(st.lists(st.sampled_from(SPECS), min_size=1, max_size=3), st.sampled_from(["0.4.3", "0.4.2.post2", "0.5", "1.0"]))
    def check(parts, floor):
        spec = ",".join(parts)
        allowed = [v for v in VERSIONS if SpecifierSet(spec).contains(v, prereleases=True)]
        verdict = kernels.decide(spec, floor)
        if verdict is True:
            assert all(Version(v) >= Version(floor) for v in allowed), (spec, floor, allowed)
        if verdict is False:
            assert all(Version(v) < Version(floor) for v in allowed), (spec, floor, allowed)

    check()


def test_a_pin_is_named_from_the_working_directory_where_the_project_lies_under_it(tmp_path, monkeypatch):
    """`check -v python` from a repository's top names python/pyproject.toml, as it names the sites' paths;
    from inside the project, or where the project lies elsewhere, the name is from the project's root."""
    (tmp_path / ".git").mkdir()
    project = tmp_path / "python"
    project.mkdir()
    (project / "pyproject.toml").write_text('[project]\nname = "x"\ndependencies = ["sglang-kernel==0.4.6"]\n')
    (project / "m.py").write_text(CALL)
    monkeypatch.chdir(tmp_path)
    assert status_of("python/m.py").kernel == "sglang-kernel==0.4.6 from python/pyproject.toml"
    monkeypatch.chdir(project)
    assert status_of("m.py").kernel == "sglang-kernel==0.4.6 from pyproject.toml"
    monkeypatch.chdir(tmp_path.parent)
    assert status_of(str(project / "m.py")).kernel.endswith(f"from {tmp_path.name}/python/pyproject.toml")


@pytest.mark.parametrize("files,ok", [
    # every file of the project that may install the kernel is a way to install it (round J2), wherever it lies
    ({"docker/Dockerfile": "RUN pip install sglang-kernel==0.4.2.post2\n"}, False),
    ({"Containerfile": "RUN pip install sglang-kernel==0.4.2.post2\n"}, False),
    ({"requirements/prod.txt": "sglang-kernel==0.4.2.post2\n"}, False),
    ({"runtime-requirements.txt": "sglang-kernel==0.4.2.post2\n"}, False),
    ({"Dockerfile": "RUN pip install ./wheels/sglang_kernel-0.4.2.post2-cp39-abi3-linux_x86_64.whl\n"}, False),
    ({"wheels/sglang-kernel-0.4.2.post2.tar.gz": "", "Dockerfile": "RUN pip install --no-deps /wheels/*\n"}, False),
    # round Y: folders the walk does not reach decide nothing (not a silent pass)
    ({"/".join("d" * 18) + "/Dockerfile": "RUN pip install sglang-kernel==0.4.2.post2\n"}, None),
    ({"kernels/pyproject.toml": '[project]\nname = "k"\ndependencies = ["sglang-kernel==0.4.2.post2"]\n'}, False),
    ({"pyproject.toml": '[tool.poetry.dependencies]\nsglang-kernel = "0.4.2.post2"\n'}, False),
    ({"Pipfile": '[packages]\nsglang-kernel = "==0.4.2.post2"\n'}, False),
    ({"tox.ini": "[testenv:serve]\ndeps =\n    sglang-kernel==0.4.2.post2\n"}, False),
    ({"sgl-kernel/pyproject.toml": '[project]\nname = "sglang-kernel"\nversion = "0.4.2"\n'}, False),
    # a kernel named in a way no pin is read from: nothing is decided
    ({"Dockerfile": "ARG V=0.4.2.post2\nRUN pip install sglang-kernel==${V}\n"}, None),
    ({"requirements-deploy.txt": "sglang-kernel==${SGL_KERNEL_VERSION}\n"}, None),
    ({"requirements.txt": "sglang-kernel>=0.4.6\n-r ../common/requirements-gpu.txt\n"}, None),
    ({"requirements-lock.txt": "# " + "x" * (1 << 20) + "\nsglang-kernel==0.4.2.post2\n"}, None),
    # read as pip reads them
    ({"requirements.txt": "\ufeffsglang-kernel==0.4.2.post2\n"}, False),
    # a file's text, not its name or its folder's, says it installs (round S)
    ({"docker/cu118.Dockerfile": "RUN pip install sglang-kernel==0.4.2.post2\n"}, False),
    ({"bin/setup": '#!/bin/sh\npython -m pip install "sglang-kernel==0.4.2.post2"\n'}, False),
    ({"deploy/serving.def": "%post\n    pip install sglang-kernel==0.4.2.post2\n"}, False),
    ({"deploy/cu118.env": "KERNEL_SPEC=sglang-kernel==0.4.2.post2\n"}, False),
    ({"build/docker/Dockerfile": "RUN pip install sglang-kernel==0.4.2.post2\n"}, False),
    ({"deploy/.git": "gitdir: ../.git/modules/deploy\n", "deploy/Dockerfile": "RUN pip install sglang-kernel==0.4.2.post2\n"},
     False),
    ({"tools/bootstrap.py": 'check_call([sys.executable, "-m", "pip", "install", "sglang-kernel==0.4.2.post2"])\n'},
     False),
    ({"modal_app.py": 'image = Image.debian_slim().pip_install("sglang", "sglang-kernel>=0.4.0")\n'}, None),
    ({"tools/bootstrap.py": 'KERNEL = {"11.8": "sglang-kernel==0.4.2.post2"}\ncheck_call(["pip", "install", KERNEL[cuda]])\n'},
     None),
    ({"tools/bootstrap.py": 'run(f"pip install sglang-kernel=={KERNEL}", shell=True)\n'}, None),
    # round AG (g3) and AH (h1): a script's inline metadata (PEP 723), its tools' tables too; a Python file's strings
    # rendering a recipe, printed into a file, or a pin filled in later; a version table only compared is a message
    ({"scripts/serve.py": '# /// script\n# dependencies = ["sglang-kernel==0.4.2"]\n# ///\nimport sys\n'}, False),
    ({"scripts/serve.py": '# /// script\n# dependencies = ["sglang"]\n# [tool.uv]\n'
      '# override-dependencies = ["sglang-kernel==0.4.2"]\n# ///\nimport sys\n'}, False),
    ({"deploy/images.py": 'T = {"rocm": dict(extra="pip install sglang-kernel==0.4.2")}\n'
      'Path("Dockerfile.gen").write_text(TEMPLATE.format(**T["rocm"]))\n'}, False),
    ({"deploy/pins.py": 'with open("pins.txt", "w") as out:\n    print("sglang-kernel==0.4.2", file=out)\n'}, False),
    ({"deploy/render.py": 'V = "0.4.2"\nPath("Dockerfile.gen").write_text(f"RUN pip install sglang-kernel=={V}")\n'},
     None),
    ({"check.py": 'BAD = {"sglang-kernel==0.4.2"}\n\n\ndef ok(spec):\n    return spec not in BAD\n'}, True),
    ({"docker/Dockerfile": "ARG V=0.4.2.post2\nRUN pip install \\\n    sglang-kernel==${V} \\\n    torch\n"}, None),
    ({"deploy/playbook.yml": "- pip:\n    name: sglang-kernel\n    version: 0.4.2.post2\n"}, False),  # (read: AT)
    ({"environment-cu118.yml": "dependencies:\n  - pip:\n      - sglang-kernel\n"}, None),
    # documentation, a Python message or value without a version, and a module's import install nothing
    ({"docs/install.md": "pip install sglang-kernel==0.4.2.post2\n"}, True),
    ({"README.md": "pip install sglang-kernel==0.4.2.post2\n"}, True),
    ({"pkg/check.py": 'raise ImportError("pip install sglang-kernel --force-reinstall")\nSGL = "sglang-kernel"\n'},
     True),
    ({"bench/table.py": '"""Which kernel each release brings: `pip install sglang==0.5.0` gives sglang-kernel==0.4.2."""\n'
                        'OLD = {"0.5.0": "sglang-kernel==0.4.2.post2"}\nrun(["pip", "download", "sglang"])\n'}, True),
    ({"tools/setup_env.py": 'check_call(["pip", "install", f"torch=={TORCH}", "-e", "."])\n'}, True),
    ({"scripts/check.sh": "python -c 'import sgl_kernel; print(sgl_kernel.__version__)'\n"}, True),
    # round Z: uv's dev-dependencies; a recipe's `-r` of a file in a hidden folder (through the image's path) or of a
    # URL; a requirements file's remote include; the engine or a kernel by a URL naming (or not) its release
    ({"pyproject.toml": '[tool.uv]\ndev-dependencies = ["sglang-kernel==0.4.2.post2"]\n'}, False),
    ({"Dockerfile": "COPY . /srv/fork\nRUN pip install -r /srv/fork/.devcontainer/requirements-gpu.txt\n",
      ".devcontainer/requirements-gpu.txt": "sglang-kernel==0.4.2.post2\n"}, False),
    ({"Dockerfile": "RUN pip install -r https://example.invalid/requirements-platform.txt\n"}, None),
    ({"requirements-deploy.txt": "-r https://example.invalid/requirements-platform.txt\n"}, None),
    ({"requirements-deploy.txt": "sglang[srt] @ https://example.invalid/wheels/sglang-0.4.9.post2-py3-none-any.whl\n"},
     False),
    ({"requirements-deploy.txt": "sglang[srt] @ git+https://github.com/sgl-project/sglang.git@v0.4.9.post2#subdirectory=python\n"},
     False),
    ({"requirements-deploy.txt": "sglang-kernel @ https://example.invalid/kernels/latest\n"}, None),
    ({"requirements-deploy.txt": "torch @ https://example.invalid/torch/latest\n"}, True),
    # round AA: a conda package's file name is a pin
    ({"conda/linux-64/sglang-kernel-0.4.2.post2-py310_0.conda": ""}, False),
    # round AP: the engine's release filled in from a variable the recipe binds, a keyed table (Pipfile, pdm's
    # overrides, uv's sources), a wheel's file name, a clone of a tag; one not read decides nothing
    *[({name: text.replace("{R}", release)}, release == "0.5.16") for release in ("0.4.9.post2", "0.5.16")
      for name, text in (
          ("Dockerfile", 'ARG SGLANG_VERSION={R}\nRUN pip install "sglang[srt]==${SGLANG_VERSION}"\n'),
          ("scripts/bootstrap.sh", "SGLANG={R}\npip install sglang[srt]==$SGLANG\n"),
          ("provision.py", 'V = "{R}"\nsubprocess.check_call(["pip", "install", f"sglang[srt]=={V}"])\n'),
          ("Pipfile", '[packages]\nsglang = {version = "=={R}", extras = ["srt"]}\n'),
          ("pyproject.toml", '[project]\nname = "f"\ndependencies = ["sglang[srt]"]\n'
                             '[tool.uv.sources]\nsglang = { git = "https://github.com/sgl-project/sglang", tag = "v{R}" }\n'),
          ("pyproject.toml", '[project]\nname = "f"\ndependencies = ["sglang[srt]>=0.4"]\n'
                             '[tool.pdm.resolution.overrides]\nsglang = "=={R}"\n'),
          ("Dockerfile", "RUN pip install https://example.invalid/v{R}/sglang-{R}-py3-none-any.whl[srt]\n"),
          ("Dockerfile", "RUN git clone -b v{R} https://github.com/sgl-project/sglang.git && pip install -e sglang/python\n"),
      )],
    ({"Dockerfile": 'RUN pip install "sglang[srt]==${SGLANG_VERSION}"\n'}, None),
    ({"provision.py": 'subprocess.check_call(["pip", "install", f"sglang[srt]=={pick()}"])\n'}, None),
    ({"pyproject.toml": '[project]\nname = "f"\ndependencies = ["sglang[srt]"]\n'
                        '[tool.uv.sources]\nsglang = { git = "https://github.com/sgl-project/sglang", branch = "main" }\n'}, None),
])
def test_every_file_that_may_install_the_kernel_decides(repo, files, ok):
    (repo / "requirements.txt").write_text("sglang-kernel>=0.4.6\n")
    assert_decided(site_in(repo, files), ok)


def test_a_sub_package_pin_does_not_hide_the_root_pin(repo):
    """Round J2: the nearest directory's pin used to decide alone; every directory up to the root is a way."""
    (repo / "pyproject.toml").write_text('[project]\nname = "fork"\ndependencies = ["sglang-kernel==0.4.2.post2"]\n')
    (repo / "engine").mkdir()
    (repo / "engine" / "requirements.txt").write_text("sglang-kernel==0.4.6\n")
    site = status_of(repo / "engine" / "attn.py")
    assert site.status is Status.MANUAL and site.reason.startswith("kernel too old"), site.reason


def test_an_egg_info_kernel_beside_an_installed_engine_decides(tmp_path):
    sp = site_packages(tmp_path, "engine", "1.0", {"engine/backend.py": CALL}, requires=["sglang-kernel==0.4.6"])
    (sp / "sglang_kernel-0.4.2.post2-py3.11.egg-info").write_text(
        "Metadata-Version: 1.1\nName: sglang-kernel\nVersion: 0.4.2.post2\n")
    site = status_of(sp / "engine" / "backend.py")
    assert site.status is Status.MANUAL and "egg-info" in site.reason, site.reason


def test_a_big_file_that_names_no_install_is_no_way_to_install(repo):
    """A tokenizer's vocabulary (`merges.txt`, too big to read) installs nothing; a lock file that big decides nothing."""
    (repo / "requirements.txt").write_text("sglang-kernel>=0.4.6\n")
    (repo / "assets").mkdir()
    (repo / "assets" / "merges.txt").write_text("x y\n" * (1 << 19))
    (repo / "pkg").mkdir()
    (repo / "pkg" / "vocab.txt").write_text("x y\n" * (1 << 19))  # beside the module too
    assert status_of(repo / "pkg" / "backend.py").status is Status.FIXABLE
    (repo / "assets" / "requirements.lock").write_text("# " + "x" * (1 << 20) + "\n")
    assert status_of(repo / "pkg" / "other.py").status is Status.MANUAL
