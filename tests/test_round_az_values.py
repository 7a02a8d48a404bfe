"""Red-team round AZ (z4): the width's `__init__` made through every name its class goes by (a public alias, a
subclass inheriting `__init__`), and a plain mixin's fields collected by a library base of a class deriving from it."""
import pytest

from test_round_aw import width_backend
from test_soundness import KERNEL
from topk_migrate.api import migrate_source
from topk_migrate.codemods.pass_topk_length import reach
from topk_migrate.model import Status

# a low-memory copy of the config with every integer knob capped (what it holds is computed)
_BUDGET = ("import types\n\n\ndef BudgetView(cfg):\n"
           "    return types.SimpleNamespace(**{k: min(v, 8) for k, v in vars(cfg).items()})\n")


@pytest.mark.parametrize("alias, made, fixable", [
    ("from backend import Backend\n\nDSABackend = Backend\n", "DSABackend(BudgetView(cfg))", False),
    ("from backend import Backend as DSABackend\n", "DSABackend(BudgetView(cfg))", False),
    ("from backend import Backend\n\n\nclass DraftBackend(Backend):\n    pass\n", "DraftBackend(BudgetView(cfg))",
     False),
    ("from backend import Backend\n\n\nclass DraftBackend(Backend):\n    pass\n\n\nclass Tiny(DraftBackend):\n"
     "    pass\n", "Tiny(BudgetView(cfg))", False),
    ("from backend import Backend\n\n\ndef pick():\n    make = Backend\n    return make\n", "pick()(BudgetView(cfg))",
     False),  # a name binding the class that is not read
    ("from backend import Backend\n\nDSABackend = Backend\n", "DSABackend(cfg)", True),
    ("\n\nclass DraftBackend(Backend):\n    pass\n", "DraftBackend(BudgetView(cfg))", False),
    ("\n\nclass DraftBackend(Backend):\n    pass\n", "DraftBackend(cfg)", True)])  # (in backend.py itself)
def test_round_az_the_width_s_init_made_by_every_name_of_its_class(tmp_path, alias, made, fixable):
    budget = "BudgetView" in made
    (tmp_path / "budget.py").write_text(_BUDGET)
    apart = alias.startswith("from")  # (else: appended to backend.py)
    (tmp_path / "names.py").write_text(alias if apart else "")
    (tmp_path / "driver.py").write_text("from budget import BudgetView\n" * budget + f"from {'names' if apart else 'backend'}"
                                        f" import {made.split('(')[0]}\n\n\ndef launch(cfg):\n    return {made}\n")
    src = width_backend("config.index_topk") + ("" if apart else alias)
    (site,) = migrate_source(src, str(tmp_path / "backend.py"), kernel=KERNEL).sites
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("model, served", [
    ("from pydantic import BaseModel\n\nfrom mixin import StepLengths\n\n\n"
     "class VerifyStep(StepLengths, BaseModel):\n    pass\n", True),
    ("from pydantic import BaseModel\n\nfrom mixin import StepLengths\n\n\nclass Mid(StepLengths):\n    pass\n\n\n"
     "class VerifyStep(Mid, BaseModel):\n    pass\n", True),
    ("from pydantic.dataclasses import dataclass\n\nfrom mixin import StepLengths\n\n\n@dataclass\n"
     "class VerifyStep(StepLengths):\n    pass\n", True),
    ("from dataclasses import dataclass\n\nfrom mixin import StepLengths\n\n\n@dataclass\n"
     "class VerifyStep(StepLengths):\n    pass\n", False)])
def test_round_az_a_plain_mixin_s_fields_collected_by_a_deriving_library_record(tmp_path, model, served):
    (tmp_path / "mixin.py").write_text("from typing import Any\n\n\nclass StepLengths:\n    seq_lens: Any\n")
    (tmp_path / "spec_verify.py").write_text(model)
    (tmp_path / "backend.py").write_text("def plan(batch):\n    return batch.seq_lens\n")
    project = reach.Project(str(tmp_path / "backend.py"), str(tmp_path))
    assert (project.serving("seq_lens") is not None) is served
