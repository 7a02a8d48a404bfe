"""Red-team round BF (kernel-accepts): an install recipe in a folder the tree walk left out by its name (a dev
container's Dockerfile, a release workflow, a deployment Dockerfile kept under `doc/`) is a way to install; such
folders are read for their install recipes only (kernels._aside_reads, _install_recipe), and a recipe linked out
of the tree decides nothing (kernels._linked_out)."""
import os

import pytest

from helpers import run_cli
from test_kernel_gate import assert_decided, site_in
from topk_migrate import kernels


@pytest.fixture
def repo(tmp_path):
    """A project: its root is marked by .git, so no search leaves it."""
    (tmp_path / ".git").mkdir()
    return tmp_path


OLD = "FROM lmsysorg/sglang:v0.5.16\nCOPY . /srv/fork\nRUN pip install --force-reinstall sgl-kernel==0.2.5\n"
NEW = OLD.replace("sgl-kernel==0.2.5", "sglang-kernel==0.4.6")
WORKFLOW = ("jobs:\n  image:\n    runs-on: ubuntu-latest\n    steps:\n"
            "      - run: pip install -r requirements.txt && pip install --force-reinstall sgl-kernel==0.2.5\n")
BOOTSTRAP = 'import subprocess\nsubprocess.check_call(["pip", "install", "sgl-kernel==0.2.5"])\n'


@pytest.mark.parametrize("files, ok", [
    ({".devcontainer/Dockerfile": OLD}, False),
    ({".github/workflows/release.yml": WORKFLOW}, False),
    ({"doc/serving/Dockerfile": OLD}, False),
    ({"docs/deploy/requirements-serving.txt": "sgl-kernel==0.2.5\n"}, False),
    ({"tests/e2e/Containerfile": OLD}, False),
    ({".devcontainer/post-create.sh": "pip install sgl-kernel==0.2.5\n"}, False),
    ({".devcontainer/post-create": "pip install sgl-kernel==0.2.5\n"}, False),  # (a folder named for a recipe)
    ({".gitlab/ci/deploy.yml": "deploy:\n  script:\n    - pip install sgl-kernel==0.2.5\n"}, False),
    ({".github/scripts/setup_env.py": BOOTSTRAP}, False),  # (a hidden folder's Python: a CI helper)
    ({".ci/wheels/sgl_kernel-0.2.5-cp310-cp310-linux_x86_64.whl": ""}, False),
    ({".ci/run": "#!/bin/sh\npip install sgl-kernel==0.2.5\n"}, False),  # (a script by its first line)
    # safe twins: the new kernel there; a test suite's or a guide's other files, an environment, a tool's cache
    ({".devcontainer/Dockerfile": NEW}, True),
    ({"tests/test_versions.py": 'def test_old():\n    assert not ok("sgl-kernel==0.2.5")\n'}, True),
    ({"docs/conf.py": 'extensions = ["sphinx.ext.autodoc"]\nsetup("pip install sgl-kernel==0.2.5")\n'}, True),
    ({"docs/notes.txt": "sgl-kernel==0.2.5\n"}, True),
    ({"tests/data/golden": "sgl-kernel==0.2.5\n"}, True),
    ({".venv/pyvenv.cfg": "home = /usr\n", ".venv/requirements.txt": "sgl-kernel==0.2.5\n"}, True),
    ({".mypy_cache/Dockerfile": OLD}, True),
])
def test_round_bf_a_recipe_in_a_hidden_doc_or_test_folder_decides(repo, files, ok):
    (repo / "requirements.txt").write_text("sglang-kernel==0.4.6\n")
    assert_decided(site_in(repo, files), ok, too_old=next(iter(files)) if ok is False else "")


def test_round_bf_a_recipe_linked_out_of_the_tree_decides_nothing(tmp_path):
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "Dockerfile").write_text(NEW)
    repo = tmp_path / "proj"
    (repo / ".git").mkdir(parents=True)
    (repo / "requirements.txt").write_text("sglang-kernel==0.4.6\n")
    (repo / ".devcontainer").mkdir()
    (repo / ".devcontainer" / "Dockerfile").symlink_to(tmp_path / "outside" / "Dockerfile")
    assert_decided(site_in(repo, {}), None, unknown="a link out of the project")


def test_round_bf_a_hidden_folder_is_not_read_file_by_file(repo, monkeypatch):
    """The walk's cost: a hidden folder's other files are listed, never read (nor a cache's, nor .git's)."""
    for folder in (".cache/blobs", ".mypy_cache/3.11", ".git/objects"):
        (repo / folder).mkdir(parents=True)
        for i in range(400):
            (repo / folder / f"f{i}.json").write_text('{"sgl-kernel": "0.2.5"}\n')
    os.mkfifo(repo / ".cache" / "blobs" / "pipe")  # (its first bytes are never waited for)
    (repo / ".devcontainer").mkdir()
    (repo / ".devcontainer" / "Dockerfile").write_text(NEW)
    files, unwalked = kernels._tree_files(str(repo), frozenset())
    assert unwalked is None and [os.path.relpath(f, repo) for f in files] == [".devcontainer/Dockerfile"], files


def test_round_bf_a_hidden_folder_named_with_controls_is_shown_escaped(repo):
    (repo / "requirements.txt").write_text("sglang-kernel==0.4.6\n")
    (repo / ".dev\x1b[31mbox").mkdir()
    (repo / ".dev\x1b[31mbox" / "Dockerfile").write_text(OLD)
    (repo / "backend.py").write_text("from sgl_kernel.flash_mla import flash_mla_sparse_fwd\n\n\n"
                                     "def attend(metadata, q, kv, idx):\n    return flash_mla_sparse_fwd(q, kv, idx, 1.0)\n\n"
                                     "# metadata.dsa_cache_seqlens_int32 is clipped to topk\n")
    r = run_cli("check", repo / "backend.py", timeout=120)
    assert "kernel too old" in r.stdout and "\x1b" not in r.stdout + r.stderr and "\\x1b" in r.stdout, r.stdout
