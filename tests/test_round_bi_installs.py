"""Red-team round BI (bi4, kernel-accepts and the kernel's identity): what runs is what decides. An import under
`if TYPE_CHECKING:` never runs, so a name a package binds only there is served by its module `__getattr__`
(kernels.scope_nodes, _unbound_why); an installer handed a folder, a glob or a requirements file that is not in the
tree (`COPY --from=<image> /wheels`, `uv pip sync /opt/base/serving.lock`) installs what is not read
(kernels._installed_from_paths); a TOML file pins a kernel by its structure, a table of its own at any depth
(kernels.toml_kernel_ways)."""
import pytest

from test_kernel_gate import CALL, assert_decided, site_in, status_of
from topk_migrate.model import Status

OLD, NEW = "sgl-kernel==0.2.5", "sglang-kernel==0.4.6"


@pytest.fixture
def repo(tmp_path):
    (tmp_path / ".git").mkdir()
    return tmp_path


@pytest.mark.parametrize("files, ok", [
    # an installer handed a folder or glob of wheels another image holds, a find-links folder, an unnamed wheel
    ({"docker/Dockerfile.a100": "FROM ghcr.io/acme/kernels AS k\nFROM python:3.11\nCOPY --from=k /wheels /wheels\n"
      "RUN pip install --force-reinstall --no-deps /wheels/*.whl\n"}, None),
    ({"deploy/setup.sh": "#!/bin/sh\npip install --no-index --find-links /opt/wheels torch\n"}, None),
    ({"Dockerfile": "RUN pip install /tmp/kernel.whl && pip install -e $SRC/kernels\n"}, None),
    # a requirements file taken by position (or by option) from outside the tree
    ({"Dockerfile": "FROM ghcr.io/acme/serving-base:2024.10\nRUN uv pip sync --system /opt/base/serving.lock\n"}, None),
    ({"deploy/env.sh": "pip-sync /opt/base/requirements.lock\n"}, None),
    ({"deploy/env.sh": "micromamba install -y -n base -f /opt/base/env.yaml\n"}, None),
    ({"Dockerfile": "RUN pip install -c /opt/base/constraints.txt .\n"}, None),
    # one inside the tree is read as an include
    ({"Dockerfile": "RUN uv pip sync --system deploy/serving.lock\n", "deploy/serving.lock": OLD + "\n"}, False),
    # a TOML table of its own at any depth; one not parsed read by its headers
    ({"pixi.toml": '[project]\nname = "f"\n\n[feature.a100.pypi-dependencies.sgl-kernel]\nversion = "==0.2.5"\n'},
     False),
    ({"envs/a100.toml": '[tool.x.deps]\nsgl-kernel = { version = "0.2.5", extras = ["cu118"] }\n'}, False),
    ({"pixi.toml": '[feature.a100.pypi-dependencies.sgl-kernel]\npath = "/opt/kernels/sgl_kernel"\n'}, None),
    ({"pixi.toml": 'broken = = 1\n[feature.a100.pypi-dependencies.sgl-kernel]\nversion = "==0.2.5"\n'}, False),
    # safe twins: our own lock synced, the tree's wheels, a folder the recipe builds into, the new kernel's table
    ({"Dockerfile": "RUN uv pip sync --system requirements.txt\n"}, True),
    ({"Dockerfile": "COPY wheels /wheels\nRUN pip install /wheels/*.whl\n",
      "wheels/sglang_kernel-0.4.6-cp310-abi3-manylinux2014_x86_64.whl": ""}, True),
    ({"Dockerfile": "RUN cd router && maturin build --release --out dist && pip install --force-reinstall dist/*.whl\n"},
     True),
    ({"Dockerfile": "RUN pip install . && pip install --upgrade pip setuptools\n"}, True),
    ({"pixi.toml": '[feature.h100.pypi-dependencies.sglang-kernel]\nversion = "==0.4.6"\n'}, True),
    ({"pixi.toml": '[pypi-dependencies]\ntorch = ">=2.4"\n[pypi-options]\nindex-url = "https://pypi.org/simple"\n'}, True),
])
def test_round_bi_what_an_installer_takes_decides(repo, files, ok):
    (repo / "requirements.txt").write_text(NEW + "\n")
    assert_decided(site_in(repo, files), ok)


GOOD = '''"""(fork) sparse MLA op."""
from sgl_kernel.flash_mla import flash_mla_sparse_fwd as _sparse


def flash_mla_sparse_fwd(q, kv, indices, sm_scale, topk_length=None):
    return _sparse(q=q, kv=kv, indices=indices, sm_scale=sm_scale, topk_length=topk_length)
'''
OLD_WRAPPER = GOOD.replace(", topk_length=None", "").replace(", topk_length=topk_length", "")
LAZY = '''"""(fork) ops, loaded lazily."""
{imports}

if {test}:
    from .mla import flash_mla_sparse_fwd


def __getattr__(name):
    if name == "flash_mla_sparse_fwd":
        from .mla_sm90 import flash_mla_sparse_fwd
        return flash_mla_sparse_fwd
    raise AttributeError(name)
'''


@pytest.mark.parametrize("imports, test", [
    ("from typing import TYPE_CHECKING", "TYPE_CHECKING"),
    ("import typing", "typing.TYPE_CHECKING"),
    ("from typing import TYPE_CHECKING as TC", "TC"),
    ("", "False"),
])
def test_round_bi_a_typing_only_import_is_no_binding(repo, imports, test):
    (repo / "requirements.txt").write_text(NEW + "\n")
    (repo / "fork_ops").mkdir()
    (repo / "fork_ops" / "__init__.py").write_text(LAZY.format(imports=imports, test=test))
    (repo / "fork_ops" / "mla.py").write_text(GOOD)
    (repo / "fork_ops" / "mla_sm90.py").write_text(OLD_WRAPPER)
    site = status_of(repo / "backend.py", CALL.replace("sgl_kernel.flash_mla", "fork_ops"))
    assert site.status is Status.MANUAL and "__getattr__" in site.reason, site.reason


def test_round_bi_a_plain_reexport_beside_a_typing_block_stays_fixable(repo):
    (repo / "requirements.txt").write_text(NEW + "\n")
    (repo / "fork_ops").mkdir()
    (repo / "fork_ops" / "__init__.py").write_text(
        "from typing import TYPE_CHECKING\n\nfrom .mla import flash_mla_sparse_fwd\n\nif TYPE_CHECKING:\n"
        "    import torch\n")
    (repo / "fork_ops" / "mla.py").write_text(GOOD)
    site = status_of(repo / "backend.py", CALL.replace("sgl_kernel.flash_mla", "fork_ops"))
    assert site.status is Status.FIXABLE, site.reason
