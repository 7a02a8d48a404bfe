"""`type(self)(...)` in a method of a class that can hold no lengths builds no record (reach._builds_no_record):
libcst's `deep_clone` beside a planted site refused 8 of the collateral check's sites. Where the class, a subclass
or a base may be the record, its positional slots are still not read (round BD)."""
import pytest

from test_round_bd import _HANDED
from test_soundness import _files_site
from topk_migrate.model import Status

_NODE = '''

class Node:
    def __init__(self, value, children=()):
        self.value, self.children = value, children

    def deep_clone(self):
        return type(self)(self.value, tuple(c.deep_clone() for c in self.children))

    def renamed(self, value):
        return self.__class__(value, self.children)
'''
_RECORD_SUB = '''

class MetaNode(Node):
    dsa_cache_seqlens_int32: torch.Tensor
'''
_SETS_ANY = '''

class Node:
    def __init__(self, *pairs):
        for k, v in pairs:
            setattr(self, k, v)

    def again(self, *pairs):
        return type(self)(*pairs)
'''
_RECORD = '''

class Meta:
    def __init__(self, dsa_cache_seqlens_int32):
        self.dsa_cache_seqlens_int32 = dsa_cache_seqlens_int32

    def flipped(self):
        return type(self)(self.dsa_cache_seqlens_int32.flip(0))
'''


@pytest.mark.parametrize("top, fixable", [
    (_NODE, True),
    (_NODE + _RECORD_SUB, False),  # a subclass holds the lengths: deep_clone may build it from anything
    (_SETS_ANY, False),  # the class sets attributes by computed names
    (_RECORD, False),  # the record's own class
])
def test_a_clone_of_self_builds_a_record_only_where_the_class_may_hold_the_lengths(tmp_path, top, fixable):
    src = _HANDED.replace("{top}", top).replace("{record}", "batch.metadata")
    site = _files_site(tmp_path, {"requirements.txt": "sglang-kernel==0.4.6\n"}, src)
    assert (site.status is Status.FIXABLE) is fixable, site.reason
