"""Only metadata known to satisfy the contract is passed, and only where it is bound."""
import textwrap

from helpers import KERNEL
from topk_migrate.api import migrate_source
from topk_migrate.model import Status


def sites(src, tmp_path, **kw):
    m = migrate_source(textwrap.dedent(src), str(tmp_path / "b.py"), kernel=KERNEL, **kw)
    return m, m.sites


def test_similar_looking_names_are_not_guessed(tmp_path):
    # cache_seqlens_int32 is the unclipped length: passing it would be wrong for rows longer than topk
    m, (s,) = sites("""\
        from sgl_kernel.flash_mla import flash_mla_sparse_fwd
        def f(metadata, q, kv, idx):
            lens = metadata.cache_seqlens_int32
            return flash_mla_sparse_fwd(q, kv, idx, 1.0)
        """, tmp_path)
    assert s.status is Status.MANUAL and "no " in s.reason and not m.changed


def test_metadata_bound_after_the_call_is_not_available(tmp_path):
    m, (s,) = sites("""\
        from sgl_kernel.flash_mla import flash_mla_sparse_fwd
        def f(self, q, kv, idx):
            o = flash_mla_sparse_fwd(q, kv, idx, 1.0)
            metadata = self.forward_metadata
            return o, metadata.dsa_cache_seqlens_int32
        """, tmp_path)
    assert s.status is Status.MANUAL and not m.changed


def test_user_mapping_from_config(tmp_path):
    m, (s,) = sites("""\
        from sgl_kernel.flash_mla import flash_mla_sparse_fwd
        def f(fb, q, kv, idx):
            return flash_mla_sparse_fwd(q, kv, idx, 1.0)
        """, tmp_path, metadata=("fb.attn.clipped_lens",))
    assert s.status is Status.FIXABLE and s.metadata == "fb.attn.clipped_lens"
    assert "    topk_length = fb.attn.clipped_lens\n    if topk_length is not None and not (isinstance(topk_length, type(q))" in m.new_source


def test_callers_without_metadata_keep_the_full_width(tmp_path):
    m, (s,) = sites("""\
        import torch
        from typing import Optional
        class B:
            def extend(self, q, idx):
                metadata = self.forward_metadata
                return self._sparse(q, idx)
            def warmup(self, q, idx):
                return self._sparse(q, idx)
            def _sparse(self, q, idx):
                from sgl_kernel.flash_mla import flash_mla_sparse_fwd
                return flash_mla_sparse_fwd(q, self.kv, idx, 1.0)
        # dsa_cache_seqlens_int32
        """, tmp_path)
    assert s.status is Status.FIXABLE and "keep the full width" in s.reason
    assert 'return self._sparse(q, idx, topk_length=getattr(metadata, "dsa_cache_seqlens_int32", None))' in m.new_source
    assert "return self._sparse(q, idx)\n" in m.new_source  # warmup untouched


def test_helper_with_kwargs_or_a_local_named_topk_length_is_manual(tmp_path):
    for head, extra in (("def _sparse(self, q, idx, **kw):", ""), ("def _sparse(self, q, idx):", "        topk_length = 3\n")):
        src = ("class B:\n    def extend(self, q, idx):\n        metadata = self.forward_metadata\n"
               "        return self._sparse(q, idx)\n"
               f"    {head}\n{extra}"
               "        from sgl_kernel.flash_mla import flash_mla_sparse_fwd\n"
               "        return flash_mla_sparse_fwd(q, self.kv, idx, 1.0)\n# dsa_cache_seqlens_int32\n")
        m, (s,) = sites(src, tmp_path)
        assert s.status is Status.MANUAL and not m.changed, s.reason


def test_helper_without_callers_is_manual(tmp_path):
    m, (s,) = sites("""\
        def helper(q, kv, idx):
            from sgl_kernel.flash_mla import flash_mla_sparse_fwd
            return flash_mla_sparse_fwd(q, kv, idx, 1.0)
        # dsa_cache_seqlens_int32
        """, tmp_path)
    assert s.status is Status.MANUAL and "no callers" in s.reason


def test_nsa_name_in_older_trees(tmp_path):
    m, (s,) = sites("""\
        from sgl_kernel.flash_mla import flash_mla_sparse_fwd
        def f(metadata, q, kv, idx):
            return flash_mla_sparse_fwd(q, kv, idx, 1.0)
        # NSAMetadata.nsa_cache_seqlens_int32
        """, tmp_path)
    assert s.status is Status.FIXABLE and s.metadata == "metadata.nsa_cache_seqlens_int32"


def test_same_named_override_without_the_parameter_blocks_the_helper_route(tmp_path):
    src = ("class B:\n    def extend(self, q, idx):\n        metadata = self.forward_metadata\n"
           "        return self._sparse(q, idx)\n"
           "    def _sparse(self, q, idx):\n        from sgl_kernel.flash_mla import flash_mla_sparse_fwd\n"
           "        return flash_mla_sparse_fwd(q, self.kv, idx, 1.0)\n"
           "class Sub(B):\n    def _sparse(self, q, idx):\n        return q\n# dsa_cache_seqlens_int32\n")
    m, (s,) = sites(src, tmp_path)
    assert s.status is Status.MANUAL and "Sub._sparse overrides B._sparse" in s.reason and not m.changed


def test_half_migrated_helper_forwards_what_its_callers_already_pass(tmp_path):
    src = ("class B:\n    def extend(self, q, idx):\n        metadata = self.forward_metadata\n"
           "        return self._sparse(q, idx, topk_length=metadata.dsa_cache_seqlens_int32)\n"
           "    def _sparse(self, q, idx, topk_length=None):\n        from sgl_kernel.flash_mla import flash_mla_sparse_fwd\n"
           "        return flash_mla_sparse_fwd(q, self.kv, idx, 1.0)\n# dsa_cache_seqlens_int32\n")
    m, (s,) = sites(src, tmp_path)
    assert s.status is Status.FIXABLE and "does not forward it" in s.reason
    assert "flash_mla_sparse_fwd(q, self.kv, idx, 1.0, topk_length=topk_length)" in m.new_source
    assert "if topk_length is not None and not (" in m.new_source
    assert m.new_source.count("def _sparse(self, q, idx, topk_length=None):") == 1


def test_metadata_is_read_plainly_only_where_its_type_is_declared(tmp_path):
    """Class 2 of issue 8: `metadata.field` is read as is only where the module says the root holds a
    (non-Optional) instance of a class declaring the field, as SGLang does; an Optional declaration or a
    None assignment gets a None check; where nothing says, getattr with a None default."""
    head = ("from dataclasses import dataclass\nfrom sgl_kernel.flash_mla import flash_mla_sparse_fwd\n"
            "@dataclass\nclass DSAMetadata:\n    dsa_cache_seqlens_int32: torch.Tensor\n"
            "def make_metadata():\n    return DSAMetadata(dsa_cache_seqlens_int32=None)\n"
            "class B:\n    def __init__(self):\n        self.forward_metadata{decl}\n"
            "    def f(self, q, idx):\n        metadata = self.forward_metadata\n"
            "        return flash_mla_sparse_fwd(q, self.kv, idx, 1.0)\n")
    for decl, bound in ((": DSAMetadata", "topk_length = metadata.dsa_cache_seqlens_int32\n"),
                        (": Optional[DSAMetadata] = None",
                         "topk_length = metadata.dsa_cache_seqlens_int32 if metadata is not None else None\n"),
                        (": DSAMetadata = None",
                         "topk_length = metadata.dsa_cache_seqlens_int32 if metadata is not None else None\n"),
                        (" = make_metadata()", 'topk_length = getattr(metadata, "dsa_cache_seqlens_int32", None)\n')):
        src = head.format(decl=decl)
        if "make_metadata()" in decl:  # (a record made in __init__ lives across steps: a planner makes each step's)
            src = src.replace("    def f(self,", "    def init_forward_metadata(self, fb):\n        self.forward_metadata = "
                              "make_metadata()\n    def f(self,")
        m, (s,) = sites(src, tmp_path)
        assert s.status is Status.FIXABLE and bound in m.new_source, (decl, m.new_source)


def test_metadata_a_base_class_elsewhere_starts_at_none_is_checked_for_none(tmp_path):
    (tmp_path / "requirements.txt").write_text("sglang-kernel==0.4.6\n")
    (tmp_path / "base.py").write_text("class Backend:\n    def __init__(self):\n        self.forward_metadata = None\n")
    src = ("from dataclasses import dataclass\nfrom sgl_kernel.flash_mla import flash_mla_sparse_fwd\nfrom base import Backend\n"
           "@dataclass\nclass DSAMetadata:\n    dsa_cache_seqlens_int32: torch.Tensor\n"
           "class DSA(Backend):\n    forward_metadata: DSAMetadata\n"
           "    def f(self, q, idx):\n        metadata = self.forward_metadata\n"
           "        return flash_mla_sparse_fwd(q, self.kv, idx, 1.0)\n")
    m = migrate_source(src, str(tmp_path / "b.py"))
    assert "topk_length = metadata.dsa_cache_seqlens_int32 if metadata is not None else None\n" in m.new_source
    (tmp_path / "base.py").write_text("class Backend:\n    pass\n")
    m = migrate_source(src, str(tmp_path / "b.py"))
    assert "topk_length = metadata.dsa_cache_seqlens_int32\n" in m.new_source


def test_override_in_another_file_of_the_folder_blocks_the_helper_route(tmp_path):
    (tmp_path / "requirements.txt").write_text("sglang-kernel==0.4.6\n")
    (tmp_path / "fork.py").write_text("from b import B\n\n\nclass Fork(B):\n    def _sparse(self, q, idx):\n        return q\n")
    src = ("class B:\n    def extend(self, q, idx):\n        metadata = self.forward_metadata\n"
           "        return self._sparse(q, idx)\n"
           "    def _sparse(self, q, idx):\n        from sgl_kernel.flash_mla import flash_mla_sparse_fwd\n"
           "        return flash_mla_sparse_fwd(q, self.kv, idx, 1.0)\n# dsa_cache_seqlens_int32\n")
    m = migrate_source(src, str(tmp_path / "b.py"))
    (s,) = m.sites
    assert s.status is Status.MANUAL and "Fork._sparse at fork.py:5 overrides B._sparse without topk_length" in s.reason
    (tmp_path / "fork.py").write_text("from b import B\n\n\nclass Fork(B):\n    def _sparse(self, q, idx, topk_length=None):\n"
                                      "        return q\n")
    assert migrate_source(src, str(tmp_path / "b.py")).sites[0].status is Status.FIXABLE
