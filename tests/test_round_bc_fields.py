"""Red-team round BB's open routes (closed in round BC): the lengths written in place where the field is never
spelled at the write: a method called on self or on the record's class, a list, tuple or `*args` of records, the
record's `__getattribute__`, an `operator.attrgetter` of computed names, and a property, function or attribute that
hands the field's tensor out in a container (reach._called_defs, _carried_writes)."""
import pytest

from test_round_ba_fields import _SRC, _step
from test_soundness import _files_site
from topk_migrate.model import Status

_LIST = ("def layout_all(records, order):\n    for rec in records:\n        for f in fields(rec):\n"
         "            t = getattr(rec, f.name)\n            t.copy_(t[order])\n")
_ARGS = _LIST.replace("(records, order)", "(*records, order)")
_TUPLE = ("def per_request(md):\n    return (md.dsa_cache_seqlens_int32, md.page_table_1)\n\n\n"
          "def shapes(md):\n    return [md.page_table_1.shape, md.page_table_1.dtype]\n")
_PROPERTY = ("\n    @property\n    def per_request(self):\n        return (self.dsa_cache_seqlens_int32, self.page_table_1)\n")
_CLASSMETHOD = ("\n    @classmethod\n    def reorder_(cls, md, order):\n        for f in fields(md):\n"
                "            t = getattr(md, f.name)\n            t.copy_(t[order])\n")
_GETATTRIBUTE = ("\n    def reorder_(self, order):\n        read = self.__getattribute__\n        for f in fields(self):\n"
                 "            t = read(f.name)\n            t.copy_(t[order])\n")
_ATTRGETTER = ("\n    def reorder_(self, order):\n        import operator\n"
               "        rows = operator.attrgetter(*(f.name for f in fields(self)))\n"
               "        for t in rows(self):\n            t.copy_(t[order])\n")


@pytest.mark.parametrize("top, method, step, fixable", [
    # a list, a tuple or *args of records: a loop over the parameter reads each record
    (_LIST, "", _step("layout_all([md], forward_batch.order)"), False),
    (_LIST, "", _step("layout_all((md, md), forward_batch.order)"), False),
    (_ARGS, "", _step("layout_all(md, order=forward_batch.order)"), False),
    # the record's class's method called on the class, the record handed second to a classmethod
    ("", _CLASSMETHOD, _step("DSAMetadata.reorder_(md, forward_batch.order)"), False),
    # the record's own __getattribute__ or an attrgetter of its fields' names, called on it
    ("", _GETATTRIBUTE, _step("md.reorder_(forward_batch.order)"), False),
    ("", _ATTRGETTER, _step("md.reorder_(forward_batch.order)"), False),
    # a function or property handing the field's tensor out in a tuple, its items written in place
    (_TUPLE, "", _step("for t in per_request(md):", "    t.copy_(t[forward_batch.order])"), False),
    ("", _PROPERTY, _step("for t in md.per_request:", "    t.copy_(t[forward_batch.order])"), False),
    (_TUPLE, "", _step("self._rows = (md.dsa_cache_seqlens_int32, md.page_table_1)",
                       "for t in self._rows:", "    t.copy_(t[forward_batch.order])"), False),
    # safe twins: a getter of a literal other field, the handed-out tensors only read
    ("", _ATTRGETTER.replace("*(f.name for f in fields(self))", '"page_table_1"'),
     _step("md.reorder_(forward_batch.order)"), True),
    (_TUPLE, "", _step("rows = [t.shape[0] for t in per_request(md)]"), True),
    (_TUPLE, "", _step("described = shapes(md)"), True),
    ("", _PROPERTY, _step("rows = max(t.shape[0] for t in md.per_request)"), True),
])
def test_round_bc_unspelled_field_write_is_a_write_of_the_lengths(tmp_path, top, method, step, fixable):
    src = _SRC.replace("{imports}", top).replace("{method}", method).replace("{step}", step)
    site = _files_site(tmp_path, {"requirements.txt": "sglang-kernel==0.4.6\n"}, src)
    assert (site.status is Status.FIXABLE) is fixable, site.reason
