"""Red-team round AY (y4): poetry's legacy `dev-dependencies` and multiple-constraints lists are ways to install the
kernel; a record whose making a library's machinery may rewrite the lengths (pydantic's BaseModel, an `Annotated`
validator, attrs' `field_transformer`, pydantic's own `dataclass`) serves them by code."""
import pytest

from test_kernel_gate import assert_decided, site_in
from topk_migrate.codemods.pass_topk_length import reach

POETRY = '[tool.poetry]\nname = "f"\n\n[tool.poetry.dependencies]\npython = ">=3.9"\nsglang-kernel = "0.4.6"\n'


@pytest.fixture
def repo(tmp_path):
    (tmp_path / ".git").mkdir()
    return tmp_path


@pytest.mark.parametrize("tail, ok", [
    ('\n[tool.poetry.dev-dependencies]\nsgl-kernel = "0.2.5"\n', False),
    ('\n[tool.poetry.group.cu118.dependencies]\nsglang-kernel = [\n  {version = "0.4.2", python = "<3.11"},\n'
     '  {version = "0.4.6", python = ">=3.11"},\n]\n', False),
    ('\n[tool.poetry.group.cu118.dependencies]\nsglang-kernel = [{git = "https://x.invalid/k.git"}, "latest"]\n', None),
    ('\n[tool.poetry.nightly]\nsglang-kernel = "0.4.2"\n', False),  # a poetry table not read as poetry's: a recipe
    ('\n[tool.poetry.dev-dependencies]\nsglang-kernel = "0.4.6"\npytest = "^7.4"\n', True),
    ('\n[tool.poetry.group.cu118.dependencies]\nsglang-kernel = [\n  {version = "0.4.6", python = "<3.11"},\n'
     '  {version = "0.4.7", python = ">=3.11"},\n]\ntorch = [{version = "2.3"}, {url = "https://x.invalid/t.whl"}]\n',
     True),
])
def test_poetrys_every_dependency_table_and_constraint_decides(repo, tail, ok):
    assert_decided(site_in(repo, {"pyproject.toml": POETRY + tail}), ok)


RECORD = "from typing import Annotated, Any\n\n{imports}\n\n\n{deco}\nclass VerifyStep{bases}:\n    num_draft: int\n" \
         "    seq_lens: {annotation}\n"


@pytest.mark.parametrize("imports, deco, bases, annotation, served", [
    ("from pydantic import BaseModel", "", "(BaseModel)", "Any", True),
    ("from pydantic import BaseModel\n\n\nclass Step(BaseModel):\n    pass", "", "(Step)", "Any", True),
    ("from dataclasses import dataclass\nfrom pydantic import AfterValidator", "@dataclass", "",
     "Annotated[Any, AfterValidator(print)]", True),
    ("from pydantic.dataclasses import dataclass", "@dataclass", "", "Any", True),
    ("import attrs", "@attrs.define(field_transformer=print)", "", "Any", True),
    ("import attrs", "@attrs.define(frozen=True, slots=True)", "", "Any", False),
    ("from dataclasses import dataclass", "@dataclass(frozen=True, kw_only=True)", "", "Annotated[Any, 'doc']", False),
    ("from typing import NamedTuple", "", "(NamedTuple)", "Any", False),
])
def test_a_record_a_librarys_machinery_makes_serves_its_fields(tmp_path, imports, deco, bases, annotation, served):
    (tmp_path / "spec_verify.py").write_text(
        RECORD.format(imports=imports, deco=deco, bases=bases, annotation=annotation))
    (tmp_path / "backend.py").write_text("def plan(batch):\n    return batch.seq_lens\n")
    project = reach.Project(str(tmp_path / "backend.py"), str(tmp_path))
    assert (project.serving("seq_lens") is not None) is served


def test_an_annotated_alias_of_another_module_on_a_pydantic_model_serves(tmp_path):
    (tmp_path / "lens_types.py").write_text("from typing import Annotated, Any\n\nfrom pydantic import BeforeValidator\n\n"
                                            "InFlightLens = Annotated[Any, BeforeValidator(lambda v: v + 3)]\n")
    (tmp_path / "spec_verify.py").write_text("from pydantic import BaseModel\n\nfrom lens_types import InFlightLens\n\n\n"
                                             "class VerifyStep(BaseModel):\n    seq_lens: InFlightLens\n")
    (tmp_path / "backend.py").write_text("def plan(batch):\n    return batch.seq_lens\n")
    assert reach.Project(str(tmp_path / "backend.py"), str(tmp_path)).serving("seq_lens") is not None
