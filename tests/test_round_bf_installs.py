"""Red-team round BF (kernel-accepts): an install recipe in a folder the tree walk left out by its name (a dev
container's Dockerfile, a release workflow, a deployment Dockerfile kept under `doc/`) is a way to install; such
folders are read (round BG: by their files' text, as every folder is, kernels._tree_files), and a recipe linked
out of the tree decides nothing (kernels._linked_out)."""
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
    ({"tests/e2e/Containerfile": OLD}, True),  # (a test suite's: a test environment, not read, stated)
    ({".devcontainer/post-create.sh": "pip install sgl-kernel==0.2.5\n"}, False),
    ({".devcontainer/post-create": "pip install sgl-kernel==0.2.5\n"}, False),  # (a folder named for a recipe)
    ({".gitlab/ci/deploy.yml": "deploy:\n  script:\n    - pip install sgl-kernel==0.2.5\n"}, False),
    ({".github/scripts/setup_env.py": BOOTSTRAP}, False),  # (a hidden folder's Python: a CI helper)
    ({".ci/wheels/sgl_kernel-0.2.5-cp310-cp310-linux_x86_64.whl": ""}, False),
    ({".ci/run": "#!/bin/sh\npip install sgl-kernel==0.2.5\n"}, False),  # (a script by its first line)
    # round BG: a test suite's or a guide's other files are read by their text as the project's own are (a pin
    # handed to a call, a command string handed to one, a `.txt` of pins, a file whose text is a pin): each a way
    ({"tests/test_versions.py": 'def test_old():\n    assert not ok("sgl-kernel==0.2.5")\n'}, True),
    ({"docs/conf.py": 'extensions = ["sphinx.ext.autodoc"]\nsetup("pip install sgl-kernel==0.2.5")\n'}, False),
    ({"docs/notes.txt": "sgl-kernel==0.2.5\n"}, False),
    ({"tests/data/golden": "sgl-kernel==0.2.5\n"}, True),
    # safe twins: the new kernel there; a guide's page, an environment, a tool's cache
    ({".devcontainer/Dockerfile": NEW}, True),
    ({"docs/install.md": "pip install sgl-kernel==0.2.5\n"}, True),
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


def test_round_bf_a_cache_is_not_read_file_by_file(repo, monkeypatch):
    """The walk's cost: a tool's cache and .git are never listed; a hidden folder's files are listed by kind as any
    folder's are (round BG: its blobs, not a FIFO's bytes ever waited for)."""
    for folder in (".cache/blobs", ".mypy_cache/3.11", ".git/objects"):
        (repo / folder).mkdir(parents=True)
        for i in range(400):
            (repo / folder / f"f{i}.json").write_text('{"sgl-kernel": "0.2.5"}\n')
    os.mkfifo(repo / ".cache" / "blobs" / "pipe")  # (its first bytes are never waited for)
    (repo / ".devcontainer").mkdir()
    (repo / ".devcontainer" / "Dockerfile").write_text(NEW)
    files, unwalked = kernels._tree_files(str(repo), frozenset())
    listed = [os.path.relpath(f, repo) for f in files]
    assert unwalked is None and len(listed) == 402 and listed[-1] == ".devcontainer/Dockerfile", listed[-3:]
    assert not any(f.startswith((".mypy_cache", ".git" + os.sep)) for f in listed)
    assert all(p for p in kernels.tree_ways(str(repo), frozenset()))  # (the FIFO read as no file)


def test_round_bf_a_hidden_folder_named_with_controls_is_shown_escaped(repo):
    (repo / "requirements.txt").write_text("sglang-kernel==0.4.6\n")
    (repo / ".dev\x1b[31mbox").mkdir()
    (repo / ".dev\x1b[31mbox" / "Dockerfile").write_text(OLD)
    (repo / "backend.py").write_text("from sgl_kernel.flash_mla import flash_mla_sparse_fwd\n\n\n"
                                     "def attend(metadata, q, kv, idx):\n    return flash_mla_sparse_fwd(q, kv, idx, 1.0)\n\n"
                                     "# metadata.dsa_cache_seqlens_int32 is clipped to topk\n")
    r = run_cli("check", repo / "backend.py", timeout=120)
    assert "kernel too old" in r.stdout and "\x1b" not in r.stdout + r.stderr and "\\x1b" in r.stdout, r.stdout
