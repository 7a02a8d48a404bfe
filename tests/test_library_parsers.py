"""Where packaging and the standard library read a format, the tool asks them (issue 38 item 6): a
distribution name (canonicalize_name), a wheel's file name (parse_wheel_filename), a `NAME==VERSION` pin
(Requirement) and a METADATA header (email.parser). The differential tests hold the replaced regexes as the
reference: the new readers decide as they did, but for the differences named here."""
import itertools
import os
import random
import re
import time

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


def _old_metadata_fields(text):
    name = version = None
    requires = []
    for line in text.split("\n\n", 1)[0].splitlines():
        key, _, value = line.partition(":")
        key, value = key.strip().lower(), value.strip()
        if key == "name":
            name = value
        elif key == "version":
            version = value
        elif key == "requires-dist":
            requires.append(value)
    return name, version, requires


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


# -- METADATA --------------------------------------------------------------------------------------------

SCIPY_LIKE = """Metadata-Version: 2.1
Name: scipy
Version: 1.17.1
License: Copyright (c) 2001-2002 Enthought, Inc. 2003, SciPy Developers.
        ----
        Name: libquadmath
        Version: 12.0
        Requires-Dist: sglang-kernel==0.4.6
Requires-Dist: numpy<2.7,>=1.26.4
Requires-Dist: sglang-kernel
  >=0.4.3 ; extra == "gpu"

Name: the description
Requires-Dist: nothing
"""


def test_folded_header_lines_continue_their_field():
    """scipy's METADATA folds its bundled licenses into License: `Name: libquadmath` on a folded line was read
    as the distribution's name, and a folded Requires-Dist lost its version."""
    assert kernels.metadata_fields(SCIPY_LIKE) == (
        "scipy", "1.17.1", ["numpy<2.7,>=1.26.4", 'sglang-kernel  >=0.4.3 ; extra == "gpu"'])
    assert _old_metadata_fields(SCIPY_LIKE)[0] == "libquadmath"


def test_metadata_fields_read_as_before_where_nothing_is_folded():
    r = random.Random(11)
    lines = ["Name: sglang-kernel", "Version: 0.4.6", "Requires-Dist: torch==2.9.1", "requires-dist:  a ; extra == 'x'",
             "Summary: x: y", "Name:", "Version:0.1", "Metadata-Version: 2.4", "Requires-Dist: b\r"]
    for _ in range(3000):
        text = "\n".join(r.choice(lines) for _ in range(r.randint(0, 8))) + r.choice(["", "\n", "\n\nName: body\n"])
        assert kernels.metadata_fields(text) == _old_metadata_fields(text), repr(text)


def test_hostile_metadata_never_raises():
    r = random.Random(13)
    alphabet = ["Name:", "Version:", "Requires-Dist:", " ", "\t", "\n", "\r", "\r\n", ":", "-", "=", "x", "\x00", "\x0b",
                "\x85", "\u2028", "\udcff", "é", "From ", ">From ", "\n\n", "=?utf-8?q?a?="]
    for _ in range(3000):
        text = "".join(r.choice(alphabet) for _ in range(r.randint(0, 60)))
        name, version, requires = kernels.metadata_fields(text)
        assert all(isinstance(v, str) for v in [*requires, *filter(None, (name, version))])


@pytest.mark.parametrize("shape", [
    lambda n: "Name: " + "a" * n, lambda n: "Requires-Dist: x\n" * (n // 17), lambda n: "Requires-Dist: x\n" + " y\n" * (n // 3),
    lambda n: "x" * n + "\n", lambda n: "\r" * n, lambda n: ":" * n, lambda n: "N" * n + ":",
], ids=["long line", "many headers", "many folds", "no colon", "carriage returns", "colons", "a long key"])
def test_metadata_of_a_size_costs_in_proportion(shape):
    """16x the text (up to 2 MB, past what a METADATA holds) costs well under 64x (the least of three runs)."""
    def cost(n):
        text, best = shape(n), float("inf")
        for _ in range(3):
            start = time.process_time()
            kernels.metadata_fields(text)
            best = min(best, time.process_time() - start)
        return best

    small, large = cost(1 << 17), cost(1 << 21)
    assert large < 48 * max(small, 1e-3), (small, large)
