"""Red-team round AX: two tensors whose code shares its first 57 characters compared as one, members fetched without
a key, a new container seeded with a handed record, hooks set up by assignment or `__init_subclass__`, functional
namedtuples, and the width's object made by an instance's method, a held callable, a table's item or a module."""
import libcst as cst
import pytest

from test_round_au import _SELECTED
from test_round_aw import width_backend
from test_soundness import CLIPPED_HOLDER, HANDED_INDICES, KERNEL, _files_site
from topk_migrate.api import migrate_source
from topk_migrate.codemods.pass_topk_length import metadata_in_scope
from topk_migrate.model import Status

_LONG = "selected_topk_indices_for_the_current_decoder_layer_of_the_"  # (59 characters: past the 57 a reason shows)


@pytest.mark.parametrize("valid_side, fixable", [(f"{_LONG}window + 1", False), (f"{_LONG}full + 1", True)])
def test_round_ax_expressions_compared_whole(tmp_path, valid_side, fixable):
    """x3: `torch.where(full >= 0, window + 1, -1)` offsets another tensor than the one it tests."""
    select = (f"        {_LONG}full = topk_indices\n        {_LONG}window = topk_indices.flip(-1)\n"
              f"        kept = torch.where({_LONG}full >= 0, {valid_side}, -1)\n")
    site = _files_site(tmp_path, {}, _SELECTED.replace("{select}", select))
    assert (site.status is Status.FIXABLE) is fixable, site.reason


_PIPELINE = ("import inspect\n\nimport torch\n\n\nclass Pipeline:\n    def __init__(self, backend):\n"
             "        self.backend = backend\n\n    def stage_attend(self, q, kv, topk_indices, scale):\n"
             "        return self.backend.forward(q, kv, topk_indices, scale)\n\n"
             "    def run(self, q, kv, topk_indices, scale):\n{run}")


@pytest.mark.parametrize("run, fixable", [
    # x2: every `stage_*` method fetched by `inspect.getmembers` and handed the rows sorted: no caller spells it
    ("        order = torch.argsort(q[:, 0])\n        for name, fn in inspect.getmembers(self, inspect.ismethod):\n"
     "            if name.startswith('stage_'):\n                return fn(q[order], kv, topk_indices[order], scale)\n",
     False),
    ("        order = torch.argsort(q[:, 0])\n        for name, fn in type(self).__dict__.items():\n"
     "            if name.startswith('stage_'):\n                return fn(self, q[order], kv, topk_indices[order], scale)\n",
     False),
    ("        return self.stage_attend(q, kv, topk_indices, scale)\n", True)])
def test_round_ax_members_fetched_without_a_key(tmp_path, run, fixable):
    site = _files_site(tmp_path, {"pipeline.py": _PIPELINE.format(run=run)}, HANDED_INDICES)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("value, fresh", [
    ("{max_bs: static_record}", False),  # x1: the runner's one record, handed to every backend
    ("[record]", False),
    ("{bs: Record() for bs in sizes}", True),
    ('{"page_table": torch.zeros(8), "md": (make() if fused else None)}', True)])
def test_round_ax_a_new_container_s_items_are_made_there(value, fresh):
    assert metadata_in_scope._fresh_container(cst.parse_expression(value)) is fresh


@pytest.mark.parametrize("other, fixable", [
    # x4: an attribute hook bound by assignment in a class body, in a file that never spells the field
    ("def _with_drafts(self, name):\n    return 0\n\n\nclass VerifyView:\n    __getattr__ = _with_drafts\n", False),
    # a base's `__init_subclass__` putting descriptors on its subclasses by computed names
    ("class Record:\n    def __init_subclass__(cls, **kw):\n        for name in cls.__annotations__:\n"
     "            setattr(cls, name, property(lambda self: 0))\n", False),
    # sglang's own: a literal store on the subclass
    ("class Model:\n    def __init_subclass__(cls, **kw):\n        super().__init_subclass__(**kw)\n"
     "        cls.mapper = {}\n", True),
    # a functional namedtuple handed a computed value by position
    ("import collections\n\nVerifyRec = collections.namedtuple('VerifyRec', ['seq_lens'])\n\n\n"
     "def verify(batch):\n    return VerifyRec(batch.seq_lens + 2)\n", False),
    ("import collections\n\nVerifyRec = collections.namedtuple('VerifyRec', ['seq_lens'])\n\n\n"
     "def verify(batch):\n    return VerifyRec(batch.seq_lens)\n", True)])
def test_round_ax_fields_served_by_machinery_no_class_body_shows(tmp_path, other, fixable):
    site = _files_site(tmp_path, {"spec.py": other}, CLIPPED_HOLDER)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


_PROFILES = ("class Registry:\n    def resolve(self, name, cfg):\n        return cfg\n\n\nPROFILES = Registry()\n")
# (no class of the project serves reads by code here: the site is refused only where what makes the object is not
# read; x4's BudgetView capping every knob behind `__getattr__` is one it may make)


@pytest.mark.parametrize("made, fixable", [
    ('profiles.PROFILES.resolve("low_mem", cfg)', False),  # an instance's method: what it makes is not read
    ("tables[0]", False),  # a table's item
    ("profiles", False),  # a project module handed as the config (PEP 562's `__getattr__` may serve it)
    ("cfg", True)])
def test_round_ax_the_width_s_object_made_out_of_sight(tmp_path, made, fixable):
    src = width_backend("config.index_topk")
    driver = (f"import profiles\nfrom backend import Backend\n\n\ndef launch(cfg, tables):\n    return Backend({made})\n")
    (tmp_path / "profiles.py").write_text(_PROFILES)
    (tmp_path / "driver.py").write_text(driver)
    (site,) = migrate_source(src, str(tmp_path / "backend.py"), kernel=KERNEL).sites
    assert (site.status is Status.FIXABLE) is fixable, site.reason
