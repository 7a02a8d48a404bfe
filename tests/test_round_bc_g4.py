"""Red-team round BC (bc4): the object the width is read off (`hf_config.index_topk`), a namespace made of a mapping
merged before it is wrapped: a display's `**` entries, PEP 584's `|`, `dict(raw, **caps)`, or a copy filled in place
(`update`, an item store, a helper handed it) with a low-memory profile's caps or a deployment's overrides."""
import pytest

from test_round_aw import width_backend
from test_soundness import KERNEL
from topk_migrate.api import migrate_source
from topk_migrate.model import Status

# the fork's driver: CAPS is the low-memory profile's caps in the unsafe case, a literal extra in its safe twin
_DRIVER = ("import json\nimport os\nimport types\n\nfrom backend import Backend\n\n\n"
           "def low_caps(cfg):\n    return {k: min(v, 8) for k, v in cfg.items() if isinstance(v, int)}\n\n\n"
           "def extras(cfg):\n    return {\"torch_dtype\": \"bfloat16\"}\n\n\n"
           "def apply(cfg):\n    cfg.update(CAPS)\n\n\n"
           "def load_hf_config(cfg):\n")
_UNSAFE, _SAFE = "low_caps(cfg)", '{"torch_dtype": "bfloat16"}'

# (the loader's body, handed the checkpoint's `cfg` dict; it ends returning `merged`)
_BODIES = {
    "a display merging a bound name": "    caps = CAPS\n    merged = {**cfg, **caps}\n",
    "a display merging a name bound twice": "    caps = {}\n    if cfg:\n        caps = CAPS\n    merged = {**cfg, **caps}\n",
    "a merge by |": "    merged = cfg | CAPS if cfg else cfg\n",
    "a merge by | of a bound name": "    caps = CAPS\n    merged = cfg | caps\n",
    "dict() of a bound name": "    caps = CAPS\n    merged = dict(cfg, **caps)\n",
    "a copy updated in place": "    merged = dict(cfg)\n    if cfg:\n        merged.update(CAPS)\n",
    "a copy updated with a bound name": "    caps = CAPS\n    merged = dict(cfg)\n    merged.update(caps)\n",
    "a copy filled item by item": "    merged = dict(cfg)\n    for k, v in (CAPS).items():\n        merged[k] = v\n",
    "a copy handed to a helper filling it": "    merged = dict(cfg)\n    apply(merged)\n",
    "a copy filled through an alias": "    merged = dict(cfg)\n    alias = merged\n    alias.update(CAPS)\n",
}
# (overrides read from data: not the checkpoint's config, refused with no safe twin)
_DATA = {
    "a display merging a file's overrides": "    with open('overrides.json') as f:\n        overrides = json.load(f)\n"
                                            "    merged = {**cfg, **overrides}\n",
    "a merge by | of the environment's overrides": "    overrides = json.loads(os.environ.get('OVERRIDES', '{}'))\n"
                                                   "    merged = cfg | overrides\n",
    "a copy updated with a file's overrides": "    with open('overrides.json') as f:\n        overrides = json.load(f)\n"
                                              "    merged = dict(cfg)\n    merged.update(overrides)\n",
}


def _site(tmp_path, body: str, caps: str, returned: str = "types.SimpleNamespace(**merged)",
          width: str = "config.index_topk"):
    (tmp_path / "driver.py").write_text(_DRIVER.replace("CAPS", caps) + body.replace("CAPS", caps) +
                                        f"    return {returned}\n\n\ndef launch(cfg):\n"
                                        "    return Backend(load_hf_config(cfg))\n")
    (site,) = migrate_source(width_backend(width), str(tmp_path / "backend.py"), kernel=KERNEL).sites
    return site


@pytest.mark.parametrize("shape", sorted(_BODIES))
def test_round_bc_a_merged_mapping_of_the_profile_s_caps_is_read(tmp_path, shape):
    site = _site(tmp_path, _BODIES[shape], _UNSAFE)
    assert site.status is Status.MANUAL and "index_topk" in site.reason, site.reason


@pytest.mark.parametrize("shape", sorted(_DATA))
def test_round_bc_a_mapping_merged_with_overrides_read_from_data_is_refused(tmp_path, shape):
    site = _site(tmp_path, _DATA[shape], _UNSAFE)
    assert site.status is Status.MANUAL and "index_topk" in site.reason, site.reason


# (the shapes whose safe twin is refused too: a mapping let out where it may be filled, a loop's values, is not read)
_UNREAD = ("a copy handed to a helper filling it", "a copy filled through an alias", "a copy filled item by item")


@pytest.mark.parametrize("shape", sorted(set(_BODIES) - set(_UNREAD)))
def test_round_bc_a_mapping_merged_with_plain_extras_stays_fixable(tmp_path, shape):
    site = _site(tmp_path, _BODIES[shape], _SAFE)
    assert site.status is Status.FIXABLE, site.reason


@pytest.mark.parametrize("body, fixable", [
    ("    merged = dict(cfg)\n    merged['torch_dtype'] = 'bfloat16'\n    merged.setdefault('dtype', None)\n", True),
    ("    merged = dict(cfg)\n    for k in cfg:\n        merged[k] = min(cfg[k], 8)\n", False),
    ("    merged = dict(cfg)\n    for k in cfg:\n        merged.setdefault(k, 8)\n        merged[k] = cfg[k] // 2\n", False),
    ("    merged = dict(cfg)\n    merged.update(torch_dtype='bfloat16')\n", True),
    ("    merged = dict(cfg)\n    merged.update(**low_caps(cfg))\n", False)])
def test_round_bc_a_mapping_filled_item_by_item_is_read(tmp_path, body, fixable):
    site = _site(tmp_path, body, _SAFE)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("caps, fixable", [(_UNSAFE, False), (_SAFE, True)])
def test_round_bc_an_object_updated_in_place_is_read(tmp_path, caps, fixable):
    """A library config updated from a mapping (transformers' `PretrainedConfig.update`, --json-model-override-args)
    handed as the width's object: the mapping it is filled with is read."""
    body = "    from transformers import PretrainedConfig\n    config = PretrainedConfig(**cfg)\n    config.update(CAPS)\n"
    site = _site(tmp_path, body, caps, returned="config")
    assert (site.status is Status.FIXABLE) is fixable, site.reason
