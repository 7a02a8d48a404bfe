"""Issue 39: a call through an alias of the kernel (`attend = K`, `attend = functools.partial(K, d_v=...)`) is
the kernel's call, checked and fixed as one, where every binding of the name that reaches it is such an alias
and K is an import the gate accepts; anything else leaves it `manual`, the alias reported (red-team round J2's
s_partial_dv). Each refusal below is a way the name may not be the kernel at run time."""
import textwrap

import pytest

from topk_migrate import api
from topk_migrate.model import Status

K = "sglang-kernel==0.4.6"
IMPORT = "from sgl_kernel.flash_mla import flash_mla_sparse_fwd\n"
CALL = "def forward(q, kv, idx, s):\n    return attend(q, kv, idx, s)\n"


def sites(tmp_path, src: str, others=(), lengths="derived"):
    for name, text in others:
        (tmp_path / name).write_text(textwrap.dedent(text))
    path = tmp_path / "backend.py"
    path.write_text(src)
    m = api.migrate_source(src, str(path), K, lengths=lengths)
    return m, {s.line: s for s in m.sites}


@pytest.mark.parametrize("alias", ["attend = flash_mla_sparse_fwd",
                                   "import functools\nattend = functools.partial(flash_mla_sparse_fwd, d_v=512)",
                                   "from functools import partial\nattend = partial(flash_mla_sparse_fwd, d_v=512)"])
def test_a_call_through_an_alias_is_the_kernels_and_fixed(tmp_path, alias):
    src = IMPORT + alias + "\n" + CALL
    m, got = sites(tmp_path, src)
    call = src.count("\n")
    assert got[call].status is Status.FIXABLE, got[call].reason
    assert "attend(q, kv, idx, s, topk_length=" in m.new_source
    alias_line = IMPORT.count("\n") + alias.count("\n") + 1
    assert got[alias_line].status is Status.MANUAL and "other code may call it through" in got[alias_line].reason  # other modules'


def test_a_private_alias_whose_only_reads_are_calls_is_no_site(tmp_path):
    m, got = sites(tmp_path, IMPORT + "_attend = flash_mla_sparse_fwd\n" + CALL.replace("attend(", "_attend("))
    assert [s.status for s in got.values()] == [Status.FIXABLE]


@pytest.mark.parametrize("edit,others", [
    (("    return attend(", "    attend.__setstate__(STATE)\n    return attend("), ()),  # the partial changed in place
    (("    return attend(", "    track(attend)\n    return attend("), ()),  # handed on: its holder may change it
    (None, [("shim.py", "import functools\n\n\nclass Tagged(functools.partial):\n    pass\n\n\n"
                        "functools.partial = Tagged\n")]),
])
def test_a_partial_that_may_be_changed_is_not_the_kernel(tmp_path, edit, others):
    """Round M: a partial's function swapped through `__setstate__`, or `functools.partial` replaced."""
    src = "import functools\n" + IMPORT + "def forward(q, kv, idx, s):\n" \
        "    attend = functools.partial(flash_mla_sparse_fwd, d_v=512)\n    return attend(q, kv, idx, s)\n"
    src = src.replace(*edit) if edit else src
    m, got = sites(tmp_path, src, others)
    assert m.new_source == src and all(s.status is Status.MANUAL for s in got.values()), got


def test_an_alias_rebound_by_a_walrus_in_a_generator_is_manual(tmp_path):
    """LibCST files a generator's `:=` under the comprehension, but it binds the function's name (round M)."""
    src = ("import functools\n" + IMPORT + "def forward(q, kv, idx, s, hooks):\n"
           "    attend = functools.partial(flash_mla_sparse_fwd, d_v=512)\n"
           "    if any((attend := h) is not None for h in hooks):\n        pass\n    return attend(q, kv, idx, s)\n")
    m, got = sites(tmp_path, src)
    assert m.new_source == src and all(s.status is Status.MANUAL for s in got.values()), got


@pytest.mark.parametrize("src,blocker", [
    (IMPORT + "attend = flash_mla_sparse_fwd\ndef other(*a):\n    return a\nattend = other\n" + CALL, None),
    (IMPORT + "attend = flash_mla_sparse_fwd\ndef swap(f):\n    global attend\n    attend = f\n" + CALL, None),
    (IMPORT + "try:\n    from legacy_mla import flash_mla_sparse_fwd\nexcept ImportError:\n    pass\n"
     "attend = flash_mla_sparse_fwd\n" + CALL, "may also be legacy_mla.flash_mla_sparse_fwd"),
    ("import functools\n" + IMPORT + "attend = functools.partial(flash_mla_sparse_fwd, d_v=1)\nfunctools = None\n" + CALL,
     "may not be functools.partial"),
    ("from functools import partial\n" + IMPORT + "attend = partial(flash_mla_sparse_fwd, indices=None)\n" + CALL, None),
    ("from functools import partial\n" + IMPORT + "attend = partial(flash_mla_sparse_fwd, None)\n" + CALL, None),
    (IMPORT + "attend = flash_mla_sparse_fwd\ndef forward(q, kv, idx, s):\n    globals()['attend'] = print\n"
     "    return attend(q, kv, idx, s)\n", "globals()"),
    (IMPORT + "def forward(q, kv, idx, s):\n    attend = flash_mla_sparse_fwd\n    if s:\n        attend = print\n"
     "    return attend(q, kv, idx, s)\n", None),
])
def test_an_alias_that_may_be_something_else_is_manual(tmp_path, src, blocker):
    m, got = sites(tmp_path, src)
    assert m.new_source == src and got and all(s.status is Status.MANUAL for s in got.values()), got
    if blocker:
        assert any(blocker in s.reason for s in got.values()), [s.reason for s in got.values()]


def test_another_module_writing_the_alias_makes_it_manual(tmp_path):
    src = IMPORT + "attend = flash_mla_sparse_fwd\n" + CALL
    m, got = sites(tmp_path, src, [("launcher.py", "import backend\nbackend.attend = lambda *a: a\n")])
    assert m.new_source == src and "`backend.attend` is assigned at launcher.py:2" in got[4].reason


def test_the_reference_fix_reaches_a_call_through_an_alias(tmp_path):
    src = (IMPORT + "attend = flash_mla_sparse_fwd\ndef forward(q, kv, idx, s, metadata):\n    return attend(q, kv, idx, s)\n"
           "class M:\n    dsa_cache_seqlens_int32 = None\n")
    m, got = sites(tmp_path, src, lengths="reference")
    assert got[4].status is Status.FIXABLE and "topk_length=topk_length" in m.new_source, got[4].reason


@pytest.mark.parametrize("pattern", ["case attend:", "case {'attend': attend}:", "case [*_, attend]:",
                                     "case object() as attend:"])
def test_a_match_pattern_binding_the_name_makes_it_manual(tmp_path, pattern):
    """Round K: a capture pattern binds the name, and the scope analysis does not list it."""
    src = (IMPORT + "attend = flash_mla_sparse_fwd\nOVERRIDES = {}\nmatch OVERRIDES:\n    " + pattern + "\n        pass\n"
           + CALL)
    m, got = sites(tmp_path, src)
    assert m.new_source == src and all(s.status is Status.MANUAL for s in got.values()), got


def test_a_match_pattern_rebinding_the_kernels_own_name_makes_it_manual(tmp_path):
    src = IMPORT + "match {}:\n    case {'k': flash_mla_sparse_fwd}:\n        pass\n" + CALL.replace("attend(", "flash_mla_sparse_fwd(")
    m, got = sites(tmp_path, src)
    assert m.new_source == src and "bound by a `match` pattern" in got[6].reason, got


@pytest.mark.parametrize("call,fixed", [
    ("f(q, kv, idx, s, **kw)", True),
    ("f(q, kv, **kw, indices=idx, sm_scale=s)", False),   # the indices after the mapping (round K)
    ("f(q, kv, idx, s, **kw, d_v=512)", False),           # a later argument may change the indices
    ("f(q, kv, idx, s, **self_opts())", False),           # unpacking runs code
    ("f(q, kv, idx, s, **opts)", False),                  # not the function's own ** parameter
])
def test_the_derived_lengths_go_under_only_the_functions_own_mapping_last(tmp_path, call, fixed):
    src = (IMPORT.replace("import flash_mla_sparse_fwd", "import flash_mla_sparse_fwd as f")
           + "def self_opts():\n    return {}\nopts = {}\ndef forward(q, kv, idx, s, **kw):\n    return " + call + "\n")
    m, got = sites(tmp_path, src)
    assert (got[6].status is Status.FIXABLE) is fixed, got[6].reason
    if fixed:
        assert '**{"topk_length": ' in m.new_source and ", **kw})" in m.new_source


def test_a_module_partial_another_file_names_is_not_the_kernel(tmp_path):
    """Round N: another file may swap the function a module-level partial holds (`__setstate__`)."""
    src = "import functools\n" + IMPORT + "_attend = functools.partial(flash_mla_sparse_fwd, d_v=512)\n" \
        + CALL.replace("attend(", "_attend(")
    m, got = sites(tmp_path, src, [("profiler.py", "import backend\n\n\ndef track():\n"
                                                   "    backend._attend.__setstate__(STATE)\n")])
    assert m.new_source == src and all(s.status is Status.MANUAL for s in got.values()), got
    m, got = sites(tmp_path, src, [("profiler.py", "def track():\n    pass\n")])
    assert [s.status for s in got.values()] == [Status.FIXABLE], got
