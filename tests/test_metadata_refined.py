"""metadata-type through a project function the backend imports and a local refined from itself (sglang-kt 0.7.2:
`metadata = init_kpool_extend_metadata(metadata, ...)`, kpool_plan returning `metadata` or
`dataclasses.replace(metadata, ...)`): the holder's annotation holds where every such function hands back the object
it was given, and only there."""
import pytest

from test_soundness import ANNOTATED_HOLDER, KERNEL
from topk_migrate.api import migrate_source
from topk_migrate.model import Status

_CLIP = "forward_batch.seq_lens.clamp(max=self.dsa_index_topk).to(torch.int32)"
_MADE = f"            md = DSAMetadata(dsa_cache_seqlens_int32={_CLIP})\n"
_PLAN_HEAD = "import dataclasses\n\n\ndef refine(md, pool_size, *, plan=None):\n    if pool_size == 1:\n        return md\n"
_PLAN_TAILS = {
    "replace": "    return dataclasses.replace(md, plan=plan)\n",
    "same": "    md.plan = plan\n    return md\n",
    "other": "    return type('Other', (), {'plan': plan})()\n",  # another object: no longer the annotated class
    "rebound": "    md = plan\n    return md\n",  # the name bound again before it is returned
    "falls off": "    md.plan = plan\n",  # a path ending without a return hands back None
    "generator": "    yield md\n    return md\n",
    "another parameter": "    return plan\n"}


def _migrated(tmp_path, tail, extend="refine(md, 4, plan=None)", extra=_MADE, imports="from plan import refine\n"):
    (tmp_path / "plan.py").write_text(_PLAN_HEAD + tail)
    src = imports + ANNOTATED_HOLDER.format(extend=extend).replace(
        "        if forward_batch.is_extend:\n", "        if forward_batch.is_extend:\n" + extra)
    return migrate_source(src, str(tmp_path / "backend.py"), kernel=KERNEL)


def _read_plain(m) -> bool:
    """Is the field read plainly (the annotation proven), or else by getattr or not at all (another statement, as
    metadata-in-scope for an object not made for this batch, refuses the site)?"""
    plain = "topk_length=metadata.dsa_cache_seqlens_int32)" in (m.new_source or "")
    assert plain or m.sites[0].status is Status.MANUAL or \
        'topk_length=getattr(metadata, "dsa_cache_seqlens_int32", None)' in m.new_source, m.new_source
    assert not plain or m.sites[0].status is Status.FIXABLE, m.sites[0].reason
    return plain


@pytest.mark.parametrize("tail, plain", [(t, k in ("replace", "same")) for k, t in _PLAN_TAILS.items()],
                         ids=list(_PLAN_TAILS))
def test_an_imported_function_handing_back_its_argument(tmp_path, tail, plain):
    assert _read_plain(_migrated(tmp_path, tail)) is plain


@pytest.mark.parametrize("extra, plain", [
    # refined from itself, first made as the annotated class: by induction every value is
    (_MADE + "            md = refine(md, 4)\n", True),
    # first made as another class, then refined: refining keeps the class it was given
    ("            md = DSAExtendMetadata(extend_seq_lens=forward_batch.seq_lens)\n            md = refine(md, 4)\n",
     False),
    # refined in a loop
    (_MADE + "            for pool in (2, 4):\n                md = refine(md, pool)\n", True),
    # refining another local, of another class
    ("            other = DSAExtendMetadata(extend_seq_lens=forward_batch.seq_lens)\n            md = refine(other, 4)\n",
     False)])
def test_a_local_refined_from_itself(tmp_path, extra, plain):
    assert _read_plain(_migrated(tmp_path, _PLAN_TAILS["replace"], extend="md", extra=extra)) is plain


@pytest.mark.parametrize("imports", [
    "import plan\nrefine = plan.refine\n",  # not a `from m import name`: which function it is is not read
    "from plan import refine\nrefine = staticmethod(refine)\n",  # bound twice
    "from os.path import join as refine\n"])  # not a file of the project
def test_a_function_not_read_is_not_taken(tmp_path, imports):
    assert not _read_plain(_migrated(tmp_path, _PLAN_TAILS["replace"], imports=imports))


_COMPAT = "from dataclasses import dataclass\n\n\n@dataclass\nclass DSAMetadata:\n    nsa_cache_seqlens_int32: object\n"
_PLAIN_STORE = f"DSAMetadata(dsa_cache_seqlens_int32={_CLIP})"


@pytest.mark.parametrize("edit, plain", [
    # round AY: a same-named class of another module is not the module's own
    ({"extend": f"compat.DSAMetadata(nsa_cache_seqlens_int32={_CLIP})", "imports": "import compat\n"}, False),
    # the module's class name rebound by a fallback import
    ({"tail": "\n\nif compat.LEGACY:\n    from compat import DSAMetadata\n", "imports": "import compat\n"}, False),
    # a dataclass whose constructor does not set the field
    ({"decorator": "@dataclass(init=False)"}, False),
    ({"decorator": "@dataclass(frozen=True)"}, True),
    ({"init": "    def __init__(self):\n        pass\n"}, False),
    ({}, True)])
def test_the_record_class_is_the_module_s_own(tmp_path, edit, plain):
    (tmp_path / "compat.py").write_text(_COMPAT + "LEGACY = False\n")
    src = edit.get("imports", "") + ANNOTATED_HOLDER.format(extend=edit.get("extend", _PLAIN_STORE)).replace(
        "@dataclass\nclass DSAMetadata:\n    dsa_cache_seqlens_int32: torch.Tensor\n",
        edit.get("decorator", "@dataclass") + "\nclass DSAMetadata:\n    dsa_cache_seqlens_int32: torch.Tensor\n"
        + edit.get("init", "")) + edit.get("tail", "")
    m = migrate_source(src, str(tmp_path / "backend.py"), kernel=KERNEL)
    assert _read_plain(m) is plain


@pytest.mark.parametrize("handed, plain", [
    # round AY: a setter's parameter annotated with the class, handed another record by one of its calls
    ("DSAExtendMetadata(extend_seq_lens=forward_batch.seq_lens)", False),
    (_PLAIN_STORE, True)])
def test_a_setter_s_parameter_holds_what_its_calls_hand(tmp_path, handed, plain):
    src = ANNOTATED_HOLDER.format(extend=f"self._publish({handed})").replace(
        "            self.forward_metadata = self._publish(", "            self._publish(").replace(
        "            self.forward_metadata = DSAMetadata(", "            self._publish(DSAMetadata(").replace(
        ".to(torch.int32))\n\n    def forward", ".to(torch.int32)))\n\n    def _publish(self, md: DSAMetadata):\n"
        "        self.forward_metadata = md\n\n    def forward")
    m = migrate_source(src, str(tmp_path / "backend.py"), kernel=KERNEL)
    assert _read_plain(m) is plain


@pytest.mark.parametrize("own, plain", [
    # round AY: the builder the class runs is inherited from another file's base, not the module's same-named def
    (False, False),
    (True, True)])
def test_a_builder_of_the_class_that_runs(tmp_path, own, plain):
    (tmp_path / "base.py").write_text("import types\n\n\nclass Base:\n    def _build(self, forward_batch):\n"
                                      "        return types.SimpleNamespace(nsa_cache_seqlens_int32=None)\n")
    builder = f"    def _build(self, forward_batch):\n        return {_PLAIN_STORE}\n\n"
    classes = "class Backend(Base):\n" + builder if own else \
        "class Decode(Base):\n" + builder + "\nclass Backend(Base):\n"
    src = "from base import Base\n" + ANNOTATED_HOLDER.format(extend="self._build(forward_batch)").replace(
        "class Backend:\n", classes)
    m = migrate_source(src, str(tmp_path / "backend.py"), kernel=KERNEL)
    assert _read_plain(m) is plain


@pytest.mark.parametrize("plan_tail, loader", [
    # round AY: the refiner's module binds its name again (a fallback import, a def under a flag), or another file
    # assigns it on the module
    ("\n\ntry:\n    from plan_ext import refine\nexcept ImportError:\n    pass\n", ""),
    ("\n\nif FAST:\n    def refine(md, pool_size, *, plan=None):\n        return plan\n", ""),
    ("", "import plan\n\n\ndef _fused(md, pool_size, *, plan=None):\n    return plan\n\n\nplan.refine = _fused\n")])
def test_an_imported_refiner_bound_again(tmp_path, plan_tail, loader):
    (tmp_path / "loader.py").write_text(loader)
    m = _migrated(tmp_path, _PLAN_TAILS["replace"] + "FAST = False\n" + plan_tail)
    assert not _read_plain(m)


@pytest.mark.parametrize("rebind, plain", [
    # round AZ: the class body binds the builder's name again (under a flag, by an import): which one runs is not read
    ("    if LEGACY:\n        _build = _legacy\n", False),
    ("    try:\n        from compat import build as _build\n    except ImportError:\n        pass\n", False),
    ("", True)])
def test_a_builder_the_class_body_binds_again(tmp_path, rebind, plain):
    (tmp_path / "compat.py").write_text("import types\n\n\ndef build(self, forward_batch):\n"
                                        "    return types.SimpleNamespace(nsa_cache_seqlens_int32=None)\n")
    builders = (f"    def _build(self, forward_batch):\n        return {_PLAIN_STORE}\n\n"
                "    def _legacy(self, forward_batch):\n        return None\n\n" + rebind + "\n")
    src = "LEGACY = False\n" + ANNOTATED_HOLDER.format(extend="self._build(forward_batch)").replace(
        "    forward_metadata: DSAMetadata\n", "    forward_metadata: DSAMetadata\n\n" + builders)
    m = migrate_source(src, str(tmp_path / "backend.py"), kernel=KERNEL)
    assert _read_plain(m) is plain


@pytest.mark.parametrize("tail, plain", [
    # sglang 0.5.16 ends its backend with `DSAMetadata = DSAMetadata`: the name bound to what it holds
    ("\nDSAMetadata = DSAMetadata\n", True),
    ("\nDSAMetadata = DSAExtendMetadata\n", False)])
def test_a_class_name_bound_to_itself_stays_the_class(tmp_path, tail, plain):
    src = ANNOTATED_HOLDER.format(extend=_PLAIN_STORE) + tail
    assert _read_plain(migrate_source(src, str(tmp_path / "backend.py"), kernel=KERNEL)) is plain
