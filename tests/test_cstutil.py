"""cstutil: keyword values built without the parser are the parser's nodes."""
import libcst as cst
import pytest

from topk_migrate import cstutil


@pytest.mark.parametrize("code", ["topk_length", "metadata.dsa_cache_seqlens_int32", "a.b.c", "None", "True",
                                  "x[0]", 'getattr(m, "f", None)', "é.x", "a.if_", "m.lambda_.x"])
def test_an_expression_built_is_the_one_parsed(code):
    assert cstutil._expression(code).deep_equals(cst.parse_expression(code))


def test_a_keyword_is_never_a_name():
    with pytest.raises(cst.ParserSyntaxError):
        cstutil._expression("a.if")  # parsed, and refused, as the parser would
