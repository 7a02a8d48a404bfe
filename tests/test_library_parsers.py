"""Where packaging and the standard library read a format, the tool asks them (issue 38 item 6): a
distribution name (canonicalize_name), a wheel's file name (parse_wheel_filename), a `NAME==VERSION` pin
(Requirement). The differential tests hold the replaced regexes as the reference: the new readers decide as
they did, but for the differences named here."""
import itertools
import os
import random
import re

import pytest

from topk_migrate import kernels
from topk_migrate.bump import sources
from topk_migrate.bump.signatures import valid_dist, valid_version

# -- the constructions replaced, kept as the reference ---------------------------------------------------

_OLD_PIN = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*==\s*([A-Za-z0-9][A-Za-z0-9.+!_-]*)\s*$")
_OLD_WHEEL = re.compile(r"(?P<name>[^-]+)-(?P<version>[^-]+)(?:-(?P<build>[0-9][^-]*))?-[^-]+-[^-]+-[^-]+\.whl\Z")


def _old_norm(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def _old_pin_of(spec):
    m = _OLD_PIN.match(spec)
    if m is None or "/" in spec or os.sep in spec or (os.altsep and os.altsep in spec):
        return None
    return m.group(1), m.group(2)


def _old_wheel_name(filename):
    m = _OLD_WHEEL.match(filename)
    if m is None:
        return None, None
    name, version = m.group("name"), m.group("version")
    return (_old_norm(name) if valid_dist(name) else None, version if valid_version(version) else None)


# -- distribution names ----------------------------------------------------------------------------------

def test_names_normalize_as_the_separator_regex_did():
    r = random.Random(5)
    names = ["".join(r.choice("aZ9-_.é ") for _ in range(r.randint(0, 10))) for _ in range(20000)]
    for name in names + ["Sglang_Kernel", "FLASH.MLA", "a..-_b", "---", ""]:
        assert kernels.normalize(name) == _old_norm(name), name


# -- pins ------------------------------------------------------------------------------------------------

_NAMES = ["a", "sgl-kernel", "Sgl_Kernel", "sglang-kernel", "a.", "a-", "a_", "-a", "_a", "a_b.c", "A1", "1", "é",
          "a b", "", "a[x]", "a (", "flash_mla", "a..b", "a__b"]
_OPERATORS = ["==", "===", "= =", "!=", ">=", "~=", " == ", "\t==\t", "==  ", "\n==", "== \n"]
_VERSIONS = ["0.4.6", "1.0.x", "v1", "V1.0", "1!2.0", "1.0+local", "1.0+loc_al", "1.0+loc-al", "1.0.*", "1.0-1", "1_0",
             "latest", "", "1.0 ", " 1.0", "1.0;", "1.0,<2", "1.0,==1.0", "1.0 ; python_version>'3'", "=1", "1..0",
             "1.0.post2", "0.4.2.post2", "0.4.2post2", "1.0a1", "1.0rc1", "1.0.dev0", "1e5", "1.0+", "+1", ".1",
             "1.0)", "1.0 x", "1!", "01.00", "1.0-", "1.0.", "!1", "1.0_post1", "1.0-post.1", "x"]
_AROUND = [("", ""), (" ", " "), ("./", ""), ("\n", "\n"), ("", "\t"), ("\xa0", "")]


def _pin_specs():
    specs = {b + n + o + v + a for n, o, v, (b, a) in itertools.product(_NAMES, _OPERATORS, _VERSIONS, _AROUND)}
    r = random.Random(7)
    specs |= {"".join(r.choice("aA1._-=! +;,*[]()@<>~/\t\nxé") for _ in range(r.randint(0, 12))) for _ in range(20000)}
    specs |= {r.choice(_NAMES) + "==" + "".join(r.choice("0123456789.+!_-abrcdevpostx*") for _ in range(r.randint(0, 8)))
              for _ in range(20000)}
    return sorted(specs)


def test_pins_are_what_the_pin_regex_read_but_for_two_spellings():
    """The differences: `NAME (==VERSION)` (PEP 508's parenthesised form of the same pin) is now one, and a
    NAME ending in `-`, `_` or `.` (no distribution name: pip refuses it) is not, so bump reads it as a path."""
    parenthesised = ending_in_a_separator = 0
    for spec in _pin_specs():
        old, new = _old_pin_of(spec), sources.pin_of(spec)
        if old == new:
            continue
        if old is None:
            assert "(" in spec and new[0] == spec.split("(")[0].strip(" \t\n\xa0"), spec
            parenthesised += 1
        else:
            assert new is None and old[0][-1] in "-_.", (spec, old)
            ending_in_a_separator += 1
    assert parenthesised and ending_in_a_separator


@pytest.mark.parametrize("spec, pin", [
    ("sglang-kernel==0.4.6", ("sglang-kernel", "0.4.6")), ("  sgl_kernel == 0.4.2.post2 ", ("sgl_kernel", "0.4.2.post2")),
    ("sgl-kernel==1.0.x", ("sgl-kernel", "1.0.x")),  # not a version: load says so, it is not read as a path
    ("a==1!2.0+local", ("a", "1!2.0+local")), ("a==v1", ("a", "v1")),
    ("a==1.*", None), ("a>=1", None), ("a===1", None), ("a[x]==1", None), ("a==1; python_version>'3'", None),
    ("a==1,<2", None), ("./a==1", None), ("a==", None), ("==1", None), ("a", None), ("a-==1", None),
])
def test_a_pin(spec, pin):
    assert sources.pin_of(spec) == pin


# -- wheel file names ------------------------------------------------------------------------------------

def _wheel_names():
    names = ["sgl_kernel", "sglang_kernel", "Sgl.Kernel", "a", "a__b", "_a", "a_", "é", "a b", "", "a.b", "1", "x" * 201]
    versions = ["0.4.6", "0.4.2.post2", "0.4.2post2", "1.0.x", "", "v1", "1!2", "1+local", "latest", "1_0", "01.0", "1.0+"]
    builds = [None, "1", "1a", "a1", "", "\u0661"]
    tags = ["py3-none-any", "cp310-cp310-manylinux_2_17_x86_64.manylinux2014_x86_64", "py2.py3-none-any", "-none-any",
            "py3--any", "py3-none-", "3py-none-any", "py3-none-any.x", "py+3-none-any", "py3-none-any.", "py3-none..any"]
    found = {n + "-" + v + ("" if b is None else "-" + b) + "-" + t + e
             for n, v, b, t, e in itertools.product(names, versions, builds, tags, [".whl", ".WHL", ".whl ", ""])}
    r = random.Random(3)
    found |= {"".join(r.choice("a1._-+!é ") for _ in range(r.randint(0, 16))) + r.choice([".whl", ""])
              for _ in range(20000)}
    return sorted(found)


def test_wheel_names_are_what_the_wheel_regex_read_but_where_packaging_refuses_the_name():
    """The differences, all (None, None) now: a name packaging refuses as a wheel's (a tag that is not one, as
    packaging 26.3 reads tags; `__` in the name, which PEP 427's escaping never writes), and a name only half
    valid (the regex kept the valid half). Either way the release is named by its path, as for (None, None)."""
    for filename in _wheel_names():
        old, new = _old_wheel_name(filename), sources.wheel_name(filename)
        if old != new:
            assert new == (None, None), filename
            if None not in old:
                from packaging.utils import parse_wheel_filename

                with pytest.raises(ValueError):
                    parse_wheel_filename(filename)
                assert "__" in filename or "invalid tag" in _refusal(filename), filename


def _refusal(filename):
    from packaging.utils import parse_wheel_filename

    try:
        parse_wheel_filename(filename)
    except ValueError as e:
        return str(e)
    return ""


def test_a_wheel_name():
    assert sources.wheel_name("sglang_kernel-0.4.2.post2-cp310-abi3-manylinux2014_x86_64.whl") == \
        ("sglang-kernel", "0.4.2.post2")
    assert sources.wheel_name("Sgl.Kernel-0.4.6-1-py3-none-any.whl") == ("sgl-kernel", "0.4.6")
    assert sources.wheel_name("sgl_kernel-0.4.6-py3-none-any.zip") == (None, None)
    assert sources.names_release("sgl_kernel-0.4.6.0-py3-none-any.whl", "Sgl-Kernel", "0.4.6")
