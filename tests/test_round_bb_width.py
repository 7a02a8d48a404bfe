"""Red-team round BB (bb4): the object the width is read off (`hf_config.index_topk`), made by a low-memory profile
capping every integer knob, reached through a library call of several arguments, an annotated assignment, a
module's or an object's attribute, a callable handed to a library, a closure, a parameter's default, or `**vars()`."""
import pytest

from test_round_aw import width_backend
from test_soundness import KERNEL
from topk_migrate.api import migrate_source
from topk_migrate.model import Status

# the fork's profiles, in the driver: a low-memory one capping every integer knob, and the full one
_VIEWS = ("import json\nimport types\nfrom typing import Any, cast\n\nfrom backend import Backend\n\n\n"
          "def low_view(cfg):\n    return types.SimpleNamespace(**{k: min(v, 8) for k, v in vars(cfg).items()})\n\n\n"
          "def full_view(cfg):\n    return types.SimpleNamespace(**vars(cfg))\n\n\n"
          "class Configs:\n    def __init__(self, cfg):\n        self.target = full_view(cfg)\n"
          "        self.draft = low_view(cfg)\n\n\n")
_STATE = ("import types\n\n# the process-wide config (the one whose index_topk the backend reads)\nhf = None\n\n\n"
          "def full_view(cfg):\n    return types.SimpleNamespace(**vars(cfg))\n\n\n"
          "def low_view(cfg):\n    return types.SimpleNamespace(**{k: min(v, 8) for k, v in vars(cfg).items()})\n\n\n"
          "def configure(cfg):\n    global hf\n    hf = VIEW(cfg)\n")
_HOOK = "lambda d: types.SimpleNamespace(**{k: min(v, 8) for k, v in d.items()})"

# (the launcher's body, handed `cfg`; VIEW: low_view in the unsafe case, full_view in its safe twin)
_BODIES = {
    "a library call of two arguments": "    return Backend(cast(Any, VIEW(cfg)))\n",
    "a generator's items handed to next()": "    return Backend(next((c for c in (VIEW(cfg), full_view(cfg)) if c), "
                                           "full_view(cfg)))\n",
    "an annotated local": "    v: Any = VIEW(cfg)\n    return Backend(v)\n",
    "a closure over the enclosing def's local": "    v = VIEW(cfg)\n\n    def run():\n        return Backend(v)\n"
                                                "    return run()\n",
    "a nested def's default": "    v = VIEW(cfg)\n\n    def run(c=v):\n        return Backend(c)\n    return run()\n",
    "a namespace copy of the profile": "    return Backend(types.SimpleNamespace(**vars(VIEW(cfg))))\n",
    "an attribute of a local project object": "    configs = Configs(cfg)\n    return Backend(configs.ATTR)\n",
    "a callable handed to a library": "    return Backend(json.loads(json.dumps(vars(cfg)), object_hook=HOOK))\n",
}


def _fixable(tmp_path, body: str, state: str = "full_view") -> bool:
    (tmp_path / "state.py").write_text(_STATE.replace("VIEW", state))
    (tmp_path / "driver.py").write_text(_VIEWS.replace("import json\n", "import json\n\nimport state\n") +
                                        "def launch(cfg):\n" + body)
    (site,) = migrate_source(width_backend("config.index_topk"), str(tmp_path / "backend.py"), kernel=KERNEL).sites
    return site.status is Status.FIXABLE


@pytest.mark.parametrize("shape", sorted(_BODIES))
def test_round_bb_the_capped_profile_reaching_the_width_is_read(tmp_path, shape):
    body = _BODIES[shape].replace("VIEW", "low_view").replace("ATTR", "draft").replace("HOOK", _HOOK)
    assert not _fixable(tmp_path, body)


def test_round_bb_a_project_module_s_global_set_through_the_profile_is_read(tmp_path):
    body = "    state.configure(cfg)\n    return Backend(state.hf)\n"
    assert not _fixable(tmp_path, body, state="low_view")


@pytest.mark.parametrize("shape", sorted(_BODIES))
def test_round_bb_the_full_profile_stays_fixable(tmp_path, shape):
    body = _BODIES[shape].replace("VIEW", "full_view").replace("ATTR", "target").replace(
        "HOOK", "lambda d: types.SimpleNamespace(**d)")
    assert _fixable(tmp_path, body)


def test_round_bb_a_project_module_s_global_of_the_full_profile_stays_fixable(tmp_path):
    body = "    state.configure(cfg)\n    return Backend(state.hf)\n"
    assert _fixable(tmp_path, body)
