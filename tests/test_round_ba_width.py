"""Red-team round BA (ba4): the object the width is read off, made by a registry class's staticmethod, by a callee
computed (`getattr(profiles, name)(cfg)`), by `**` of a project function's mapping, or handed on by a cooperative
mixin's `super().__init__` that the MRO runs before the backend's."""
import pytest

from test_round_aw import width_backend
from test_soundness import KERNEL
from topk_migrate.api import migrate_source
from topk_migrate.model import Status

# a low-memory copy of the config with every integer knob capped (what it holds is computed), and the plain one
_PROFILES = ("import types\n\n\ndef BudgetView(cfg):\n"
             "    return types.SimpleNamespace(**{k: min(v, 8) for k, v in vars(cfg).items()})\n\n\n"
             "def low_mem_knobs(cfg, cap=8):\n    return {k: min(v, cap) for k, v in vars(cfg).items()}\n\n\n"
             "def raw_view(cfg):\n    return cfg\n")
_HEAD = ("import types\n\nimport profiles\nfrom backend import Backend, DraftBackend\n"
         "from profiles import BudgetView, low_mem_knobs\n")


def _registry(body: str) -> str:
    return f"\n\nclass ServingProfiles:\n    {body}\n"


_STATIC = "@staticmethod\n    def low_mem(cfg):\n        return {}"
_PICK = "@staticmethod\n    def pick(cfg, view):\n        return view"
_MIXIN = ("\n\nclass LowMemMixin:\n    def __init__(self, config, *args, **kwargs):\n"
          "        super().__init__({}, *args, **kwargs)\n")
_DRAFT = "\n\nclass DraftBackend(LowMemMixin, Backend):\n    pass\n"


@pytest.mark.parametrize("defs, made, fixable", [
    # a staticmethod of a plain project class: its returns are read like a project function's
    (_registry(_STATIC.format("BudgetView(cfg)")), "Backend(ServingProfiles.low_mem(cfg))", False),
    (_registry(_STATIC.format("cfg")), "Backend(ServingProfiles.low_mem(cfg))", True),
    (_registry(_PICK), "Backend(ServingProfiles.pick(cfg, BudgetView(cfg)))", False),  # (no own object: slot 1)
    (_registry(_PICK), "Backend(ServingProfiles.pick(BudgetView(cfg), cfg))", True),
    (_registry("low_mem = staticmethod(BudgetView)"), "Backend(ServingProfiles.low_mem(cfg))", False),
    # a callee computed: no def read, no library function
    ("", "Backend(getattr(profiles, 'BudgetView')(cfg))", False),
    ("", "Backend({'low': BudgetView}['low'](cfg))", False),
    # a method of the launcher or a nested def making the view: a project callee, its def not read (`self.m(cfg)`
    # was read as a library's function of one object)
    ("\n\nclass Launcher:\n    def low_mem(self, cfg):\n        return BudgetView(cfg)\n\n"
     "    def build(self, cfg):\n        return Backend(self.low_mem(cfg))\n", "Launcher().build(cfg)", False),
    ("", "def view(c):\n        return BudgetView(c)\n    return Backend(view(cfg))", False),
    ("\n\nimport copy\n", "Backend(copy.deepcopy(cfg))", True),
    ("\n\nimport copy\n", "Backend(copy.deepcopy(BudgetView(cfg)))", False),
    # `**` of a project function's mapping (not read: computed); `**vars(cfg)` copies the config's fields
    ("", "Backend(types.SimpleNamespace(**low_mem_knobs(cfg)))", False),
    ("", "Backend(types.SimpleNamespace(**vars(cfg)))", True),
    ("", "kn = low_mem_knobs(cfg)\n    return Backend(types.SimpleNamespace(**kn))", False),
    ("", "kn = vars(cfg)\n    return Backend(types.SimpleNamespace(**kn))", True),
    # a cooperative mixin before the backend in the MRO, handing its super().__init__ a capped view (in backend.py)
    (_MIXIN.format("BudgetView(config)") + _DRAFT, "DraftBackend(cfg)", False),
    (_MIXIN.format("BudgetView(config)") + "\n\nclass Outer(LowMemMixin):\n    pass\n"
     + _DRAFT.replace("LowMemMixin", "Outer"), "DraftBackend(cfg)", False),  # (the mixin a base of a base)
    (_MIXIN.format("config") + _DRAFT, "DraftBackend(cfg)", True),
])
def test_round_ba_the_width_s_object_made_by_an_unread_callee_is_served(tmp_path, defs, made, fixable):
    (tmp_path / "profiles.py").write_text(_PROFILES)
    inside = made.startswith("DraftBackend")  # (the mixin and the draft class in backend.py itself)
    (tmp_path / "driver.py").write_text(_HEAD + ("" if inside else defs) + f"\n\ndef launch(cfg):\n    {'' if 'return' in made else 'return '}{made}\n")
    src = width_backend("config.index_topk")
    src = "from profiles import BudgetView\n" + src + defs if inside else src
    (site,) = migrate_source(src, str(tmp_path / "backend.py"), kernel=KERNEL).sites
    assert (site.status is Status.FIXABLE) is fixable, site.reason
