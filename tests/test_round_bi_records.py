"""Red-team round BI (bi2): a step record's dataclass is read as storing each argument in its place only where its
decorator is the standard library's (resolved through the file's imports: pydantic's and attrs' `dataclass` run
validators and hooks; callers._stdlib_dataclass) and where each annotation's kind is known as dataclasses reads it
(callers._annotation_kind): a `ClassVar` takes no place; an alias the project binds (`Setting = ClassVar[str]`, here
or in another module) or a string naming `ClassVar`/`InitVar` refuses, since the places would be guessed."""
import pytest

from test_round_bh_records import _BACKEND, _LAYER_RUNNER
from test_soundness import _files_site
from topk_migrate.model import Status

_RUNNER = '''import torch
@IMPORTS@


@DECORATOR@
class Step:
@FIRST@
    q: torch.Tensor
    kv: torch.Tensor
    indices: torch.Tensor
    scale: float

''' + _LAYER_RUNNER.replace("@ARGS@", "q, kv, indices, scale")
_STD = "from dataclasses import dataclass\nfrom typing import ClassVar"


def _site(tmp_path, imports=_STD, decorator="@dataclass", first="", files=None):
    runner = _RUNNER.replace("@IMPORTS@", imports).replace("@DECORATOR@", decorator).replace("@FIRST@", first)
    files = {"requirements.txt": "sglang-kernel==0.4.6\n", "runner.py": runner, **(files or {})}
    return _files_site(tmp_path, files, _BACKEND)


@pytest.mark.parametrize("imports, decorator, first", [
    (_STD, "@dataclass", '    kind: ClassVar[str] = "decode"'),  # (bi2's s_dataclass_plan_with_classvar)
    ("import dataclasses\nimport typing", "@dataclasses.dataclass", '    kind: typing.ClassVar[str] = "decode"'),
    ("from dataclasses import dataclass\nfrom typing import ClassVar as Static", "@dataclass", '    kind: Static[str] = "d"'),
    (_STD, "@dataclass(frozen=True)", ""),
])
def test_round_bi_a_standard_dataclass_with_class_settings_is_traced(tmp_path, imports, decorator, first):
    site = _site(tmp_path, imports, decorator, first)
    assert site.status is Status.FIXABLE, site.reason


@pytest.mark.parametrize("imports, decorator, first, files", [
    # bi2's u_dataclass_classvar_alias_shift: the alias is a ClassVar to dataclasses, a field to a textual check
    (_STD + "\nSetting = ClassVar[str]", "@dataclass", '    kind: Setting = "decode"', None),
    (_STD + "\nfrom settings import Setting", "@dataclass", '    kind: Setting = "decode"',
     {"settings.py": "from typing import ClassVar\nSetting = ClassVar[str]\n"}),
    (_STD, "@dataclass", '    kind: "ClassVar[str]" = "decode"', None),  # (a string: not resolved)
    # bi2's u_pydantic_dataclass_field_validator, u_attrs_dataclass_post_init: another library's `dataclass`
    ("from pydantic.dataclasses import dataclass", "@dataclass", "", None),
    ("from attr import dataclass", "@dataclass", "", None),
    ("dataclass = lambda cls: cls", "@dataclass", "", None),
])
def test_round_bi_a_dataclass_whose_places_are_not_known_refuses(tmp_path, imports, decorator, first, files):
    site = _site(tmp_path, imports, decorator, first, files)
    assert site.status is Status.MANUAL, site.reason
