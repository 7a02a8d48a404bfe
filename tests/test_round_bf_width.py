"""Red-team round BF (bf4, be4): the object the width is read off (`hf_config.index_topk`), reached through an
attribute of a local record the driver built (`worker = types.SimpleNamespace(hf_config=low_mem_view(raw))`, then
`Backend(worker.hf_config)`: field_writes._record_served, _record_arguments), or bound by a capture of a `match`
pattern (`case {'draft': cfg}:`: field_writes._binders); a pair's `=` binds each name its item (_paired)."""
import pytest

from test_round_aw import width_backend
from test_soundness import KERNEL
from topk_migrate.api import migrate_source
from topk_migrate.model import Status

# the fork's profiles, in the driver: a low-memory one capping every integer knob, and the full one
_DRIVER = ("import types\nfrom dataclasses import dataclass\n\nfrom backend import Backend\n\n\n"
           "def low_view(cfg):\n    return types.SimpleNamespace(**{k: min(v, 8) for k, v in vars(cfg).items()})\n\n\n"
           "def full_view(cfg):\n    return types.SimpleNamespace(**vars(cfg))\n\n\n"
           "@dataclass\nclass Worker:\n    hf_config: object\n    role: str = 'target'\n\n\n")

# (the launcher's body, handed `cfg`; VIEW: low_view in the unsafe case, full_view in its safe twin)
_RECORDS = {
    "a library record's keyword": "    worker = types.SimpleNamespace(hf_config=VIEW(cfg), role='draft')\n"
                                  "    return Backend(worker.hf_config)\n",
    "a library record's attribute store": "    worker = types.SimpleNamespace(hf_config=full_view(cfg))\n"
                                          "    worker.hf_config = VIEW(cfg)\n    return Backend(worker.hf_config)\n",
    "a project dataclass's keyword": "    worker = Worker(hf_config=VIEW(cfg))\n    return Backend(worker.hf_config)\n",
    "a record picked by a conditional": "    worker = types.SimpleNamespace(hf_config=VIEW(cfg)) if cfg else None\n"
                                        "    return Backend(worker.hf_config)\n",
    "a pair's item": "    target, draft = VIEW(cfg), low_view(cfg)\n    return Backend(target)\n",
}

# not followed, whatever the profile (refused)
_UNREAD = {
    "a literal setattr on the record": "    worker = types.SimpleNamespace(hf_config=full_view(cfg))\n"
                                       "    setattr(worker, 'hf_config', low_view(cfg))\n"
                                       "    return Backend(worker.hf_config)\n",
    "the record handed to a helper": "    worker = types.SimpleNamespace(hf_config=full_view(cfg))\n"
                                     "    configure(worker)\n    return Backend(worker.hf_config)\n",
    "a record made without the keyword": "    worker = types.SimpleNamespace(role='draft')\n"
                                         "    return Backend(worker.hf_config)\n",
    "a project dataclass made by position": "    worker = Worker(low_view(cfg))\n"
                                            "    return Backend(worker.hf_config)\n",
    "a project function's result": "    worker = make_worker(cfg)\n    return Backend(worker.hf_config)\n",
    "a mapping pattern's capture": "    match {'target': full_view(cfg), 'draft': low_view(cfg)}:\n"
                                   "        case {'draft': c}:\n            pass\n        case _:\n"
                                   "            c = full_view(cfg)\n    return Backend(c)\n",
    "a sequence pattern's capture": "    c = full_view(cfg)\n    match (full_view(cfg), low_view(cfg)):\n"
                                    "        case [_, c]:\n            pass\n    return Backend(c)\n",
    "a class pattern's capture": "    c = full_view(cfg)\n    match types.SimpleNamespace(draft=low_view(cfg)):\n"
                                 "        case types.SimpleNamespace(draft=c):\n            pass\n"
                                 "    return Backend(c)\n",
    "an `as` pattern's capture": "    c = full_view(cfg)\n    match low_view(cfg):\n        case _ as c:\n"
                                 "            pass\n    return Backend(c)\n",
}
_HELPERS = ("def configure(worker):\n    worker.role = 'draft'\n\n\n"
            "def make_worker(cfg):\n    return types.SimpleNamespace(hf_config=low_view(cfg))\n\n\n")


def _fixable(tmp_path, body: str) -> bool:
    (tmp_path / "driver.py").write_text(_DRIVER + _HELPERS + "def launch(cfg):\n" + body)
    (site,) = migrate_source(width_backend("config.index_topk"), str(tmp_path / "backend.py"), kernel=KERNEL).sites
    return site.status is Status.FIXABLE


@pytest.mark.parametrize("shape", sorted(_RECORDS))
def test_round_bf_the_capped_profile_through_a_local_record_is_read(tmp_path, shape):
    assert not _fixable(tmp_path, _RECORDS[shape].replace("VIEW", "low_view"))


@pytest.mark.parametrize("shape", sorted(_UNREAD))
def test_round_bf_an_object_bound_otherwise_is_not_read(tmp_path, shape):
    assert not _fixable(tmp_path, _UNREAD[shape])


@pytest.mark.parametrize("shape", sorted(_RECORDS))
def test_round_bf_the_full_profile_through_a_local_record_stays_fixable(tmp_path, shape):
    assert _fixable(tmp_path, _RECORDS[shape].replace("VIEW", "full_view"))


def test_round_bf_a_mapping_of_a_tensor_s_dimension_stays_fixable(tmp_path):
    """A tensor's dimension handed in (`inp.indices.shape[-1]`) is an int: a `**` mapping holding it serves no read."""
    body = "    k = cfg.indices.shape[-1]\n    return Backend(types.SimpleNamespace(**{'index_topk': k}))\n"
    assert _fixable(tmp_path, body)
