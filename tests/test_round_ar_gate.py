"""Red-team round AR, the kernel gate's install routes: a range of sglang bounded above, the engine's image named in
a Python file's strings or under a mapping's name and tag keys, a pin handed to any call, conda's own `=`. Each
unsafe project must leave the site manual; each safe twin (a current release) fixable."""
import time

import pytest

from test_kernel_gate import assert_decided, site_in
from topk_migrate import kernels

OLD, NEW = "0.4.9.post2", "0.5.18"


@pytest.fixture
def repo(tmp_path):
    """A project: its root is marked by .git, so no search leaves it."""
    (tmp_path / ".git").mkdir()
    return tmp_path


def project(template, release):
    """The files of `template` (path -> text) with {R} the engine's release."""
    return {name: text.replace("{R}", release) for name, text in template.items()}


MODAL = ('import modal\n\nimage = modal.Image.from_registry("lmsysorg/sglang:v{R}-cu126", add_python=None)'
         '.pip_install_from_requirements("requirements.txt")\napp = modal.App("serve", image=image)\n')
DOCKER_SDK = ('import docker\n\nIMAGE = "lmsysorg/sglang:v{R}-cu126"\n\n\ndef main():\n'
              '    docker.from_env().containers.run(IMAGE, "python3 -m fork.launch_server", detach=True)\n')
PYINFRA_ENGINE = ('from pyinfra.operations import pip\n\nENGINE = ["sglang[srt]=={R}"]\n\n'
                  'pip.packages(name="engine", packages=ENGINE, pip="/opt/venv/bin/pip")\n')
KUSTOMIZE = ("images:\n  - name: fork-serve\n    newName: lmsysorg/sglang\n    newTag: v{R}-cu126\n"
             "  - name: sidecar\n    newTag: v0.1\n")
HELM = 'image:\n  repository: lmsysorg/sglang\n  pullPolicy: IfNotPresent\n  tag: "v{R}-cu126"\n'
CONDA = "name: serve\ndependencies:\n  - python=3.11\n  - sglang={R}\n  - pip\n  - pip:\n      - -r requirements.txt\n"


@pytest.mark.parametrize("files", [
    # a range of sglang bounded above brings the kernel of every release it admits: one old release decides
    {"requirements-engine.txt": "sglang[srt]==0.4.9.*\n"},
    {"requirements-engine.txt": "sglang[srt]>=0.4.6,<0.4.10\n"},
    {"requirements-engine.txt": "sglang[srt]~=0.5.0\n"},
    {"requirements-engine.txt": "sglang[srt]<=0.5.12\n"},
    {"pyproject.toml": '[tool.poetry.dependencies]\nsglang = {version = "^0.4.9", extras = ["srt"]}\n'},
    # the engine's tagged image in a Python file's strings (Modal, the docker SDK through a module constant)
    {"deploy/modal_app.py": MODAL},
    {"scripts/launch_node.py": DOCKER_SDK},
    # a pin handed to any call, directly, in a list, or through a module constant
    {"deploy/deploy.py": 'from pyinfra.operations import pip\n\npip.packages(packages=["sgl-kernel==0.2.5"])\n'},
    {"deploy/deploy.py": PYINFRA_ENGINE},
    {"deploy/deploy.py": 'from ops import pkg\n\npkg.ensure("sglang-kernel=={}".format("0.4.2"))\n'},
    # conda's own `=` (and a channel's `::`) names the engine's release, any extras
    {"environment.yml": CONDA},
    {"environment.yml": "dependencies:\n  - conda-forge::sglang=0.4.9.post2=py_0\n"},
    {"environment.yml": "dependencies:\n  - 'sglang=0.4.9|0.5.18'\n"},
    # the image under a name-like key, its tag under a sibling tag-like key (kustomize, helm, JSON); one whose tag is
    # not read decides nothing
    {"deploy/k8s/kustomization.yaml": KUSTOMIZE},
    {"deploy/k8s/kustomization.yaml": "images:\n  - name: lmsysorg/sglang\n    newTag: v0.4.9.post2\n"},
    {"chart/values.yaml": HELM},
    {"deploy/task.json": '{\n  "image": "lmsysorg/sglang",\n  "imageTag": "v0.4.9.post2"\n}\n'},
    {"chart/values.yaml": 'image:\n  repository: lmsysorg/sglang\n  tag: "{{ .Values.release }}"\n'},
])
def test_an_old_engine_by_these_routes_leaves_the_site_manual(repo, files):
    (repo / "requirements.txt").write_text("sglang-kernel==0.4.6\n")
    site = site_in(repo, files)
    assert site.status.name == "MANUAL", site.reason


@pytest.mark.parametrize("files", [
    {"requirements-engine.txt": "sglang[srt]>=0.5.16,<0.6\n"},
    {"requirements-engine.txt": "sglang[srt]>=0.5.13\n"},  # open above: the newest
    {"requirements-engine.txt": "sglang[srt]==0.5.18.*\n"},
    {"pyproject.toml": '[tool.poetry.dependencies]\nsglang = {version = "^0.5.16", extras = ["srt"]}\n'},
    project({"deploy/modal_app.py": MODAL}, NEW),
    project({"scripts/launch_node.py": DOCKER_SDK}, NEW),
    project({"deploy/deploy.py": PYINFRA_ENGINE}, NEW),
    {"deploy/deploy.py": 'from pyinfra.operations import pip\n\npip.packages(requirements="/opt/requirements.txt")\n'},
    # messages, a docstring and an exception's text install nothing
    {"deploy/check.py": '"""Needs lmsysorg/sglang:v0.4.9.post2 or later."""\nimport logging\n\n'
                        'logging.warning("sgl-kernel==0.2.5 is too old")\n'
                        'raise RuntimeError("uninstall sgl-kernel==0.2.5 first")\n'},
    project({"environment.yml": CONDA}, NEW),
    project({"deploy/k8s/kustomization.yaml": KUSTOMIZE}, NEW),
    project({"chart/values.yaml": HELM}, NEW),
    {"deploy/k8s/deployment.yaml": "containers:\n  - name: sglang\n    image: lmsysorg/sglang:v0.5.18-cu129\n"},
])
def test_a_current_engine_by_these_routes_stays_fixable(repo, files):
    (repo / "requirements.txt").write_text("sglang-kernel==0.4.6\n")
    assert_decided(site_in(repo, files), True)


@pytest.mark.parametrize("spec,brings", [
    ("==0.4.9.*", True), (">=0.4.6,<0.4.10", True), ("~=0.5.13", True), (">=0.5.13", False), ("", False),
    ("<0.9,>0.5.23", False),  # only releases past the table's newest: none brings an older kernel
])
def test_a_range_bounded_above_brings_each_admitted_release(spec, brings):
    pins = kernels.brought_pins(kernels.Pin("sglang", spec, "r", extras=("srt",)))
    assert bool(pins) is brings
    assert len({p.via for p in pins}) == len(pins)  # each release's kernel weighed alone


def test_a_range_admitting_no_known_release_decides_nothing():
    (pin,) = kernels.brought_pins(kernels.Pin("sglang", "==0.4.99.*", "r"))
    assert pin.dist == kernels.COMPUTED


@pytest.mark.parametrize("spec,range_", [
    ("^0.4.9", ">=0.4.9,<0.5"), ("^1.2", ">=1.2,<2"), ("^0.0.3", ">=0.0.3,<0.0.4"), ("~1.2.3", ">=1.2.3,<1.3"),
    ("~1", ">=1,<2"), ("^0.4.9.post2", ">=0.4.9.post2,<0.5"),
])
def test_poetrys_caret_and_tilde_have_their_ceiling(spec, range_):
    assert kernels._poetry_range(spec) == range_


@pytest.mark.parametrize("line", [
    "a" + " " * 20000 + "b c", "key: value" + " " * 20000 + "x", "- " * 20000, "a:" * 20000, "'" * 20000 + "x",
], ids=["blanks", "trailing-blanks", "dashes", "colons", "quotes"])
def test_the_key_line_reader_is_linear(line):
    start = time.process_time()
    kernels._engine_refs(f"image: lmsysorg/sglang\n{line}\n" * 4, "r")
    kernels._conda_engine(f"- sglang={line}\n" * 4, "r")
    assert time.process_time() - start < 1.0
