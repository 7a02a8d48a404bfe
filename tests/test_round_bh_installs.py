"""Red-team round BH (bh4, kernel-accepts): a Jupyter notebook is no documentation page: a Colab or Kaggle recipe
runs its code cells' `!pip install ...` on the serving machine. Its code cells are read as a recipe's text
(kernels._notebook_code); its markdown cells, like a guide's page, are not."""
import json

import pytest

from test_kernel_gate import assert_decided, site_in


@pytest.fixture
def repo(tmp_path):
    (tmp_path / ".git").mkdir()
    return tmp_path


def _notebook(*cells):
    return json.dumps({"cells": [{"cell_type": kind, "source": source} for kind, source in cells], "nbformat": 4})


OLD, NEW = "sgl-kernel==0.2.5", "sglang-kernel==0.4.6"


@pytest.mark.parametrize("files, ok", [
    ({"deploy/serve_colab.ipynb": _notebook(("code", ["!pip install -r requirements.txt\n", f"!pip install {OLD}"]))},
     False),
    ({"notebooks/bench.ipynb": _notebook(("code", f"%pip install --force-reinstall {OLD}"))}, False),  # one string
    ({"docs/quickstart.ipynb": _notebook(("markdown", "# Serve"), ("code", ["import subprocess\n",
      f'subprocess.check_call(["pip", "install", "{OLD}"])']))}, False),  # (docs/ read too; Python's installs)
    ({"deploy/broken.ipynb": '{"cells": [{"source": ["!pip install ' + OLD + '"'}, False),  # no JSON: its text
    # safe twins: the new kernel, a markdown cell's prose, a notebook naming no install
    ({"deploy/serve_colab.ipynb": _notebook(("code", [f"!pip install {NEW}"]))}, True),
    ({"deploy/serve_colab.ipynb": _notebook(("markdown", f"Older forks ran `pip install {OLD}`."),
                                            ("code", "print('serve')"))}, True),
    ({"notebooks/plots.ipynb": _notebook(("code", "import matplotlib\n"))}, True),
])
def test_round_bh_a_notebook_is_read_by_its_code_cells(repo, files, ok):
    (repo / "requirements.txt").write_text(NEW + "\n")
    assert_decided(site_in(repo, files), ok, too_old=next(iter(files)) if ok is False else "")
