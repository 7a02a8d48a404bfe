"""Red-team round AW, and round AV's stated routes closed before it: a class handed off as a value (a registry, a
list kept past its function, `__subclasses__()` of its base) to a file that rebinds its methods by a computed
`setattr`; a wrapper or a functional step of the traced name taking the rows at other places."""
import pytest

from test_soundness import BATCH_ATTRIBUTE, HANDED_INDICES, _files_site
from topk_migrate.model import Status

_REBINDER = ("import functools\n\n\ndef balance_rows(cls):\n    for name, step in list(vars(cls).items()):\n"
             "        if not name.startswith('_') and callable(step):\n            setattr(cls, name, _balanced(step))\n"
             "    return cls\n\n\ndef _balanced(step):\n    @functools.wraps(step)\n"
             "    def run(self, q, kv, topk_indices, scale):\n        order = topk_indices[:, 0, 0].argsort()\n"
             "        return step(self, q[order], kv, topk_indices[order], scale)[order.argsort()]\n    return run\n")
_LAUNCH = ("from balance import balance_rows\nfrom registry import BACKENDS\n\n"
           "for _name in list(BACKENDS):\n    BACKENDS[_name] = balance_rows(BACKENDS[_name])\n")
_WALKER = ("from balance import balance_rows\nfrom base import AttentionBackend\n\n\ndef install():\n"
           "    for cls in {receiver}.__subclasses__():\n        balance_rows(cls)\n")


@pytest.mark.parametrize("tail, fixable", [
    # kept in a module's registry, which a launcher naming neither the class nor the module hands to a rebinder
    ("\n\nBACKENDS['dsa'] = Backend\n", False),
    ("\n\nKNOWN = [Backend]\n", False),
    # read, called or only tested against: the class stays where its name shows it
    ("\n\ndef is_sparse(b):\n    kinds = [int]\n    kinds.append(Backend)\n    return isinstance(b, tuple(kinds))\n", True),
    ("\n\nDEFAULT = Backend(None)\n", True)])
def test_round_aw_a_class_handed_off_to_an_unread_rebinder(tmp_path, tail, fixable):
    """Round AV's v3: the launcher's file names neither the class, its module nor the kernel; the class reaches it
    through a registry (class_escape): every file spelling a setter is read."""
    src = "from registry import BACKENDS\n" + HANDED_INDICES + tail
    files = {"registry.py": "BACKENDS = {}\n", "balance.py": _REBINDER, "launch.py": _LAUNCH}
    site = _files_site(tmp_path, files, src)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("receiver, fixable", [
    ("AttentionBackend", False),  # the class's base: its subclasses include the class
    ("Unrelated", True)])
def test_round_aw_a_base_s_subclasses_walked(tmp_path, receiver, fixable):
    src = "from base import AttentionBackend\n" + HANDED_INDICES.replace("class Backend:", "class Backend(AttentionBackend):")
    walker = _WALKER.format(receiver=receiver) + "\n\nclass Unrelated:\n    pass\n"
    files = {"base.py": "class AttentionBackend:\n    pass\n", "balance.py": _REBINDER, "launch.py": walker}
    site = _files_site(tmp_path, files, src)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


_HYBRID = ("class Hybrid:\n    def __init__(self, sparse):\n        self.sparse = sparse\n\n"
           "    def forward(self, kv, scale, k_scale, q, topk_indices):\n"
           "        return self.sparse.forward(q, kv, topk_indices, scale)\n")
_RUNNER = ("class Runner:\n    def __init__(self, hybrid):\n        self.hybrid = hybrid\n\n"
           "    def run(self, q, kv, topk_indices, scale, order, k_scale=1.0):\n"
           "        return self.hybrid.forward(kv, scale, k_scale, {q}, {topk})\n")
_FUNCTIONAL = ("from backend import Backend\n\n\ndef forward(kv, scale, metadata, q, topk_indices):\n"
               "    return Backend(metadata).forward(q, kv, topk_indices, scale)\n")
_CALLER = ("from ops import forward\n\n\ndef run(kv, scale, metadata, q, topk_indices, order):\n"
           "    return forward(kv, scale, metadata, {q}, {topk})\n")


@pytest.mark.parametrize("files, caller", [({"hybrid.py": _HYBRID}, ("runner.py", _RUNNER)),
                                            ({"ops.py": _FUNCTIONAL}, ("driver.py", _CALLER))])
@pytest.mark.parametrize("q, topk, fixable", [("q[order]", "topk_indices[order]", False),
                                              ("q", "topk_indices", True)])
def test_round_aw_a_function_of_the_traced_name_taking_the_rows_elsewhere(tmp_path, files, caller, q, topk, fixable):
    """Round AV's v2: a wrapper's `forward` (or a module's functional `forward`) of the traced name taking q and the
    indices at other places is walked up as a function of another name: its calls are read at its own places."""
    rel, text = caller
    site = _files_site(tmp_path, {**files, rel: text.format(q=q, topk=topk)}, HANDED_INDICES)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


_ENGINE_BASE = ("class AttentionBackend:\n    def forward(self, q, k, v, layer, forward_batch, **kwargs):\n"
                "        return self.forward_extend(q, k, v, layer, forward_batch, **kwargs)\n")
_ENGINE_HYBRID = ("from base_attn_backend import AttentionBackend\n\n\nclass HybridLinearAttnBackend(AttentionBackend):\n"
                  "    def __init__(self, full):\n        self.full = full\n\n"
                  "    def forward(self, q=None, k=None, v=None, layer=None, forward_batch=None, **kwargs):\n"
                  "        return self.forward_extend(layer, forward_batch, q, k, v, **kwargs)\n\n"
                  "    def forward_extend(self, layer, forward_batch, q=None, k=None, v=None, **kwargs):\n"
                  "        return self.full.forward_extend(q, k, v, layer, forward_batch, **kwargs)\n")


def test_round_aw_the_engine_s_hybrid_dispatch_stays_an_entry(tmp_path):
    """sglang's HybridLinearAttnBackend takes q after the layer in its own forward_extend: walked up, its `forward`
    overrides the engine's dispatch (a class deriving from it), which the framework calls as it calls the base's."""
    src = ("from base_attn_backend import AttentionBackend\n" + BATCH_ATTRIBUTE).replace(
        "class Backend:", "class Backend(AttentionBackend):").replace(
        "def forward(self, q, kv, forward_batch, scale):\n        metadata = self.forward_metadata\n"
        "        return self._forward_flashmla_sparse(q, kv, forward_batch.topk_indices, scale)",
        "def forward_extend(self, q, k, v, layer, forward_batch, topk_indices=None):\n"
        "        metadata = self.forward_metadata\n"
        "        return self._forward_flashmla_sparse(q, k, topk_indices, layer.scaling)")
    assert "forward_extend" in src
    files = {"base_attn_backend.py": _ENGINE_BASE, "hybrid_linear_attn_backend.py": _ENGINE_HYBRID}
    site = _files_site(tmp_path, files, src)
    assert site.status is Status.FIXABLE, site.reason


_WRAPPER = ("class Hybrid:\n    def __init__(self, sparse):\n        self.sparse = sparse\n\n"
            "    def forward(self, q, kv, topk_indices, scale):\n        return self.sparse.forward(q, kv, topk_indices, scale)\n")
_SUBCLASS = ("from hybrid import Hybrid\n\n\nclass CPHybrid(Hybrid):\n"
             "    def forward(self, q, kv, topk_indices, scale, order=None):\n"
             "        return super().forward({q}, kv, {topk}, scale)\n")


@pytest.mark.parametrize("q, topk, fixable", [("q[order]", "topk_indices[order]", False),
                                              ("q", "topk_indices", True)])
def test_round_aw_a_trusted_wrapper_s_subclass_calling_super(tmp_path, q, topk, fixable):
    """Round AT's t2: the wrapper's `forward` hands the rows on from the traced places (trusted as a dispatch), so
    its own family's `super().forward(...)` calls are its callers too (callers._family_callers)."""
    files = {"hybrid.py": _WRAPPER, "cp_hybrid.py": _SUBCLASS.format(q=q, topk=topk)}
    site = _files_site(tmp_path, files, HANDED_INDICES)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


_STEP = ("import logging\n\nfrom backend import Backend\n\n\ndef level_of(b, name):\n    return {lookup}\n\n\n"
         "def step(b, q, kv, topk_indices, scale):\n    return b.forward(q, kv, topk_indices, scale)\n")


@pytest.mark.parametrize("lookup, fixable", [
    ("getattr(logging, name.upper())", True),  # the library's own member: no function of the project
    ("getattr(b, name)", False)])  # may fetch `step` itself, whose callers are then not seen
def test_round_aw_a_lookup_off_a_library_module(tmp_path, lookup, fixable):
    site = _files_site(tmp_path, {"driver.py": _STEP.format(lookup=lookup)}, HANDED_INDICES)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


_CLIP = "forward_batch.seq_lens.clamp(max=self.dsa_index_topk).to(torch.int32)"
_OTHER_FILE_RECORD = "import paged_records\n"


@pytest.mark.parametrize("extend, extra, form", [
    # w1: another class reaches the annotated holder through a local, a per-mode builder, another file's class
    ("md", "            md = DSAExtendMetadata(extend_seq_lens=forward_batch.seq_lens)\n", "getattr"),
    ("self._build(forward_batch)", "", "getattr"),
    ("paged_records.PagedMetadata(page_table=forward_batch.seq_lens)", "", "getattr"),
    # the annotation's own class, through a local and a builder of the module
    ("md", f"            md = DSAMetadata(dsa_cache_seqlens_int32={_CLIP})\n", "plain"),
    ("self._plain(forward_batch)", "", "plain")])
def test_round_aw_every_value_the_annotated_holder_gets(tmp_path, extend, extra, form):
    """Round AW's w1 (metadata-type): the holder's annotation holds only where every value the module stores in it
    is proven of a class it names (`MetadataType._holds_named`); else the field is read by `getattr`."""
    from test_soundness import ANNOTATED_HOLDER, KERNEL
    from topk_migrate.api import migrate_source
    src = _OTHER_FILE_RECORD + ANNOTATED_HOLDER.format(extend=extend).replace(
        "        if forward_batch.is_extend:\n", "        if forward_batch.is_extend:\n" + extra).replace(
        "    def forward(self, q, kv, indices, sm_scale):\n",
        "    def _build(self, forward_batch):\n        if forward_batch.is_verify:\n"
        "            return DSAExtendMetadata(extend_seq_lens=forward_batch.seq_lens)\n"
        f"        return DSAMetadata(dsa_cache_seqlens_int32={_CLIP})\n\n"
        f"    def _plain(self, forward_batch):\n        return DSAMetadata(dsa_cache_seqlens_int32={_CLIP})\n\n"
        "    def forward(self, q, kv, indices, sm_scale):\n")
    (tmp_path / "paged_records.py").write_text("class PagedMetadata:\n    def __init__(self, page_table):\n"
                                               "        self.page_table = page_table\n")
    m = migrate_source(src, str(tmp_path / "backend.py"), kernel=KERNEL)
    assert m.sites[0].status is Status.FIXABLE, m.sites[0].reason
    read = {"getattr": 'topk_length=getattr(metadata, "dsa_cache_seqlens_int32", None)',
            "plain": "topk_length=metadata.dsa_cache_seqlens_int32)"}[form]
    assert read in m.new_source


@pytest.mark.parametrize("where, fixable", [
    # w3: `other=` before `input=` binds by keyword, not by place: the offset lands on the invalid side
    ("torch.where(topk_indices >= 0, other=topk_indices + 1, input=topk_indices)", False),
    ("torch.where(topk_indices >= 0, other=topk_indices, input=topk_indices + 1)", True),
    ("torch.where(topk_indices >= 0, topk_indices + 1, topk_indices)", True)])
def test_round_aw_where_binds_its_keywords(tmp_path, where, fixable):
    """Round AW's w3 (indices-front-packed): `torch.where`'s arguments bound as Python binds them
    (`rows._where_arguments`)."""
    from test_round_au import _SELECTED
    site = _files_site(tmp_path, {}, _SELECTED.replace("{select}", f"        kept = {where}\n"))
    assert (site.status is Status.FIXABLE) is fixable, site.reason


def width_backend(width: str) -> str:
    """A backend clipping its lengths by `self.dsa_index_topk`, which its `__init__` sets to `width` (of `config`)."""
    from test_soundness import LENGTHS_WRITTEN
    return LENGTHS_WRITTEN.format(imports="", write="pass").replace(
        "class Backend:\n    forward_metadata: DSAMetadata\n",
        "class Backend:\n    forward_metadata: DSAMetadata\n\n"
        f"    def __init__(self, config):\n        self.dsa_index_topk = {width}\n").replace(
        "    def forward(self, q, kv, indices):\n",
        "    def init_forward_metadata(self, forward_batch):\n        md = DSAMetadata()\n"
        "        md.dsa_cache_seqlens_int32 = torch.clamp(forward_batch.seq_lens, max=self.dsa_index_topk).to(torch.int32)\n"
        "        self.forward_metadata = md\n\n    def forward(self, q, kv, indices):\n")


@pytest.mark.parametrize("width, fixable", [
    # w4's safe variants: the width read through `int()` or `getattr` with a literal name and no default
    ("int(config.index_topk)", True),
    ('getattr(config, "index_topk")', True),
    ('getattr(config, "index_topk", 2048)', False),  # a default of its own: another width where the field lacks
    ("int(config.index_topk * 2)", False)])
def test_round_aw_the_width_through_int_and_getattr(tmp_path, width, fixable):
    from test_soundness import KERNEL
    from topk_migrate.api import migrate_source
    (site,) = migrate_source(width_backend(width), str(tmp_path / "backend.py"), kernel=KERNEL).sites
    assert (site.status is Status.FIXABLE) is fixable, site.reason


_BATCH = ("class ForwardBatch:\n    def __init__(self, topk_indices, order):\n{rebind}"
          "        self.topk_indices = topk_indices\n")


@pytest.mark.parametrize("rebind, fixable", [
    ("        topk_indices = topk_indices[order]\n", False),  # w2's lead: the parameter bound again before the store
    ("        topk_indices.sort_(dim=-1)\n", False),
    ("", True)])
def test_round_aw_a_record_storing_its_parameter_rebound(tmp_path, rebind, fixable):
    from test_soundness import BATCH_ATTRIBUTE
    site = _files_site(tmp_path, {"batch_info.py": _BATCH.format(rebind=rebind)}, BATCH_ATTRIBUTE)
    assert (site.status is Status.FIXABLE) is fixable, site.reason
