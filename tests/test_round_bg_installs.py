"""Red-team round BG (kernel-accepts): a hidden folder's, a guide's or a test suite's file is read by its text as
every other folder's is, never by a name on an allowlist (a Modal deployment under `docs/`, an extensionless
Singularity recipe, a suffixed Jenkinsfile, a CI pipeline in JSON, Terraform's user data, a test suite's bootstrap
script): each is a way to install (kernels._tree_files); documentation pages, caches and environments are still
left out by kind (a notebook is read since round BH: tests/test_round_bh_installs.py)."""
import pytest

from test_kernel_gate import assert_decided, site_in


@pytest.fixture
def repo(tmp_path):
    """A project: its root is marked by .git, so no search leaves it."""
    (tmp_path / ".git").mkdir()
    return tmp_path


MODAL = ('import modal\n\nimage = modal.Image.debian_slim().pip_install("sglang-kernel==0.4.6")'
         '.pip_install("sgl-kernel==0.2.5")\napp = modal.App("serve", image=image)\n')
BOOTSTRAP = ('import subprocess, sys\n\n\ndef main():\n    subprocess.check_call([sys.executable, "-m", "pip", "install", '
             '"sgl-kernel==0.2.5"])\n')
SINGULARITY = "Bootstrap: docker\nFrom: lmsysorg/sglang:v0.5.16\n\n%post\n    pip install sgl-kernel==0.2.5\n"
JENKINS = "pipeline {\n  stages {\n    stage('gpu') { steps { sh 'pip install sgl-kernel==0.2.5' } }\n  }\n}\n"
PIPELINE = '{"steps": [{"label": "gpu", "command": "pip install --force-reinstall sgl-kernel==0.2.5"}]}\n'
TERRAFORM = ('resource "aws_instance" "serve" {\n  user_data = <<-EOT\n    #!/bin/bash\n'
             '    pip install sgl-kernel==0.2.5\n  EOT\n}\n')
NEW = "sglang-kernel==0.4.6"


@pytest.mark.parametrize("files, ok", [
    ({"docs/serving/modal_app.py": MODAL}, False),  # (a guide's Python, by its installer calls)
    ({"doc/deploy/launch.py": MODAL}, False),
    # a test suite and its data install into a test environment, never the serving one: not read (stated)
    ({"tests/e2e/bootstrap.py": BOOTSTRAP}, True),
    ({"test/integration/env_setup.py": BOOTSTRAP}, True),
    ({"docs/hpc/Singularity": SINGULARITY}, False),  # (no suffix, no name on a list)
    ({"tests/hpc/apptainer.recipe": SINGULARITY}, True),
    ({"docs/hpc/apptainer.recipe": SINGULARITY}, False),
    ({".ci/Jenkinsfile.gpu": JENKINS}, False),
    ({".buildkite/pipeline.json": PIPELINE}, False),
    ({".circleci/gpu/steps.cfg": "run = pip install sgl-kernel==0.2.5\n"}, False),
    ({"docs/deploy/main.tf": TERRAFORM}, False),
    # safe twins: the new kernel there; a guide's page and notebook, a cache, an environment left out by kind
    ({"docs/serving/modal_app.py": MODAL.replace('.pip_install("sgl-kernel==0.2.5")', "")}, True),
    ({"tests/e2e/bootstrap.py": BOOTSTRAP.replace("sgl-kernel==0.2.5", NEW)}, True),
    ({"docs/hpc/Singularity": SINGULARITY.replace("sgl-kernel==0.2.5", NEW)}, True),
    ({".ci/Jenkinsfile.gpu": JENKINS.replace("sgl-kernel==0.2.5", NEW)}, True),
    ({".buildkite/pipeline.json": PIPELINE.replace("sgl-kernel==0.2.5", NEW)}, True),
    ({"docs/deploy/main.tf": TERRAFORM.replace("sgl-kernel==0.2.5", NEW)}, True),
    ({"docs/install.rst": "   pip install sgl-kernel==0.2.5\n"}, True),
    ({".pytest_cache/v/run": "pip install sgl-kernel==0.2.5\n"}, True),
    ({"tests/.env/pyvenv.cfg": "home = /usr\n", "tests/.env/setup.sh": "pip install sgl-kernel==0.2.5\n"}, True),
])
def test_round_bg_a_hidden_doc_or_test_folders_file_is_read_by_its_text(repo, files, ok):
    (repo / "requirements.txt").write_text("sglang-kernel==0.4.6\n")
    assert_decided(site_in(repo, files), ok, too_old=next(iter(files)) if ok is False else "")
