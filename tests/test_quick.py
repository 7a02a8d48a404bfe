"""The rule's quick classifier (codemods/pass_topk_length/quick.py) gives exactly the rule's own sites, or declines.

audit takes its answer without ever running the rule, so each test here runs both: the rule on the
whole file (what check reports), and the quick classifier on the narrowed file (what audit reports
when it answers). Where it answers they must be equal, site for site and field for field; the
answered cases are counted, so that no test passes by the classifier declining everything."""
import ast
import subprocess
import sys
import textwrap

import pytest
from hypothesis import given

from call_variants import PATH, SHORT, is_kernel_call, modules
from helpers import KERNEL, ROOT
from narrow_cases import CASES, FIXTURES, verdicts
from topk_migrate import api, guard, narrow, rules
from topk_migrate.api import migrate_source

HEAD = "import torch\nfrom sgl_kernel import flash_mla_sparse_fwd\n"


def quick(source, path, kernel=KERNEL):
    """audit's answer without the engine (api.process_file's quick step), or None where it needs the engine."""
    small = narrow.narrow(source)
    if small is None or small == narrow.NOTHING:
        return None
    tree = guard.parse_checked(small, path)
    if guard.needs_isolation(tree):
        return None
    sites = api.quick_sites(small, tree, path, kernel)
    return None if sites is None else [s.to_dict() for s in sites]


def same_or_declined(source, path, kernel=KERNEL):
    """The quick answer (None: declined), after checking it against the rule's."""
    got = quick(source, path, kernel)
    if got is not None:
        assert got == verdicts(source, path, kernel), source
    return got


# Each must be answered, and the same as the rule's sites.
ANSWERED = {
    "keyword, in a method and at module level": HEAD + '''
class B:
    def f(self, q, kv, i, m):
        out, _, _ = flash_mla_sparse_fwd(q, kv, i, 1.0, topk_length=m.dsa_cache_seqlens_int32)
        return out

o = flash_mla_sparse_fwd(q, kv, i, 1.0, topk_length=(lens))
''',
    "topk_length=None is an opt-out": HEAD + "def f(q, kv, i):\n    return flash_mla_sparse_fwd(q, kv, i, 1.0, topk_length=None)\n",
    "positionally, in the seventh place": HEAD + "def f(q, kv, i, s, l):\n    return flash_mla_sparse_fwd(q, kv, i, s, 512, None, l)\n",
    "None positionally": HEAD + "def f(q, kv, i, s):\n    return flash_mla_sparse_fwd(q, kv, i, s, 512, None, None)\n",
    "op level, positionally": "import torch\n\ndef f(q, kv, i, s, l):\n"
                              "    return torch.ops.sgl_kernel.sparse_prefill_fwd.default(q, kv, i, s, 512, None, l)\n",
    "aliases, in any scope": '''
import sgl_kernel.flash_mla as fmla
from flash_mla import flash_mla_sparse_fwd as fwd

def a(q, kv, i, m):
    from vllm.attention import flash_mla_sparse_prefill as prefill
    x = prefill(q, kv, i, topk_length=m.lens)
    return fwd(q, kv, i, 1.0, topk_length=m.lens), fmla.flash_mla_sparse_fwd(q, kv, i, 1.0, topk_length=None)
''',
    "non-ASCII text before the call on its line": HEAD + 's = "é→" + str(flash_mla_sparse_fwd(q, kv, i, 1.0, topk_length=l))\n',
    "tabs": HEAD + "def f(q, kv, i, l):\n\tif q:\n\t\treturn\tflash_mla_sparse_fwd(q, kv, i, 1.0, topk_length=l)\n",
    "parentheses around the call and its callee": HEAD + '''
def f(q, kv, i, l):
    out = (
        flash_mla_sparse_fwd(q, kv, i, 1.0, topk_length=l)
    )
    return ((flash_mla_sparse_fwd))(q, kv, i, 1.0, topk_length=l), out
''',
    "a fallback that rebinds the name": '''
try:
    from sgl_kernel import flash_mla_sparse_fwd
except ImportError:
    flash_mla_sparse_fwd = None

def f(q, kv, i, l):
    return flash_mla_sparse_fwd(q, kv, i, 1.0, topk_length=l)
''',
    "an interface that defines the entry point and calls the op": '''
import torch

def flash_mla_sparse_fwd(q, kv, indices, sm_scale, d_v=512, attn_sink=None, topk_length=None):
    """Runs the op."""
    if topk_length is not None:
        assert topk_length.dtype == torch.int32, f"{topk_length.dtype}"
    return torch.ops.sgl_kernel.sparse_prefill_fwd.default(q, kv, indices, sm_scale, d_v, attn_sink, topk_length)
''',
    "f-strings beside the call, one of them nested and formatted": HEAD + '''
def f(q, kv, i, l, w):
    out = flash_mla_sparse_fwd(q, kv, i, 1.0, topk_length=l) if l is not None else fail(f"no {q.shape[0]:>{w}} rows")
    return out, f'{f"{w!r}"}'
''',
    "a call nested in another's arguments": HEAD + '''
def f(q, kv, i, l):
    return flash_mla_sparse_fwd(flash_mla_sparse_fwd(q, kv, i, 1.0, topk_length=l)[0], kv, i, 1.0, topk_length=l)
''',
}

# Each must be declined: the rule reads these itself.
DECLINED = {
    "a call without topk_length": HEAD + "def f(q, kv, i):\n    return flash_mla_sparse_fwd(q, kv, i, 1.0)\n",
    "too few positional arguments": HEAD + "def f(q, kv, i, s):\n    return flash_mla_sparse_fwd(q, kv, i, s, 512, None)\n",
    "a star before the seventh place": HEAD + "def f(q, a, l):\n    return flash_mla_sparse_fwd(q, *a, 512, None, l)\n",
    "looked up by name": HEAD + 'import sgl_kernel\nk = getattr(sgl_kernel, "flash_mla_sparse_fwd")\n'
                                "o = flash_mla_sparse_fwd(q, kv, i, 1.0, topk_length=l)\n",
    "wrapped by partial": HEAD + "import functools\nk = functools.partial(flash_mla_sparse_fwd, d_v=512)\n"
                                 "o = flash_mla_sparse_fwd(q, kv, i, 1.0, topk_length=l)\n",
    "reached through an expression": HEAD + "o = get()[0].flash_mla_sparse_fwd(q, kv, i, 1.0, topk_length=l)\n",
    "the op reached through an expression": "o = get().sparse_prefill_fwd.default(q, kv, i, 1.0, 512, None, l)\n"
                                             "p = get().sparse_prefill_fwd(q, kv, i, 1.0, 512, None, l)\n",
    "a keyword named like the kernel": HEAD + "o = flash_mla_sparse_fwd(q, kv, i, 1.0, topk_length=l)\n"
                                              "p = register(flash_mla_sparse_fwd=o)\n",
    "global": HEAD + "def f(q, kv, i, l):\n    global flash_mla_sparse_fwd\n"
                     "    return flash_mla_sparse_fwd(q, kv, i, 1.0, topk_length=l)\n",
    "match": HEAD + "def f(q, kv, i, l, x):\n    match x:\n        case 1:\n"
                    "            return flash_mla_sparse_fwd(q, kv, i, 1.0, topk_length=l)\n",
}


@pytest.mark.parametrize("name", ANSWERED)
def test_answered_the_rules_way(name, tmp_path):
    source = textwrap.dedent(ANSWERED[name])
    got = same_or_declined(source, str(tmp_path / "m.py"))
    assert got, f"declined: {name}"


@pytest.mark.parametrize("name", DECLINED)
def test_declined_where_only_the_rule_can_tell(name, tmp_path):
    """The classifier itself, on the whole file (narrowing may leave such a statement out, and the
    rule's answer with it: test_narrowings_edge_cases and the rest hold those to the rule's)."""
    source, path = textwrap.dedent(DECLINED[name]), str(tmp_path / "m.py")
    assert api.quick_sites(source, ast.parse(source), path, KERNEL) is None
    same_or_declined(source, path)


@pytest.mark.skipif(sys.version_info < (3, 12), reason="PEP 701 f-strings parse from Python 3.12 on (run on the GPU "
                    "machine's 3.12: results/quick-py312.md)")
def test_a_pep_701_f_string_is_declined(tmp_path):
    """Quotes reused inside a replacement field: CPython 3.12 reads it, the grammar before it does not."""
    source = HEAD + 'def f(q, kv, i, m):\n    return flash_mla_sparse_fwd(q, kv, i, 1.0, topk_length=m["lens"]), f"{m["n"]}"\n'
    path = str(tmp_path / "m.py")
    assert api.quick_sites(source, ast.parse(source), path, KERNEL) is None
    plain = source.replace('f"{m["n"]}"', "f\"{m['n']}\"")
    assert same_or_declined(plain, path) is not None  # the same f-string in the old grammar is answered


# The cases of narrow_cases.CASES the classifier must answer, with their site count: every
# kernel call in them passes topk_length and nothing uses the kernel as a value. Every other case
# holds a call without topk_length, a value use, no kernel call or no parse, and must be declined
# (a case added there lands on one side or the other here, never passing by being declined).
NARROWINGS_ANSWERED = {
    "compliant calls at several depths, with odd neighbours": 6,
    "compliant calls whose blocks collide": 2,
}


@pytest.mark.parametrize("name", CASES)
def test_narrowings_edge_cases(name, tmp_path):
    got = same_or_declined(textwrap.dedent(CASES[name]), str(tmp_path / "m.py"))
    if name in NARROWINGS_ANSWERED:
        assert got is not None, f"declined: {name}"
        assert len(got) == NARROWINGS_ANSWERED[name], got
        assert {s["status"] for s in got} <= {"compliant", "opt-out"}, got
    else:
        assert got is None, f"answered, but it holds what only the rule reads (or add it to NARROWINGS_ANSWERED): {name}"


def test_narrowings_answered_are_cases():
    assert NARROWINGS_ANSWERED.keys() <= CASES.keys()


def test_fixtures():
    """Real backends with their real pins: every answer is the rule's, and the migrated ones are answered."""
    answered = {p.relative_to(ROOT / "fixtures").as_posix() for p in FIXTURES
                if same_or_declined(p.read_text(), str(p), kernel=None) is not None}
    assert answered == {"pairs/fork_inline/after.py", "pairs/nsa_backend/after.py"}


@SHORT
@given(modules())
def test_call_site_variants_before_and_after_apply(source):
    """The fuzzer's modules, and what apply makes of them (whose calls then pass topk_length):
    a short run here, the fuzz profile's full count in the heavy tier (same body)."""
    call_site_variants_before_and_after_apply(source)


@pytest.mark.heavy
@given(modules())
def test_call_site_variants_before_and_after_apply_heavy(source):
    call_site_variants_before_and_after_apply(source)


def call_site_variants_before_and_after_apply(source):
    same_or_declined(source, PATH)
    after = migrate_source(source, PATH, kernel=KERNEL).new_source
    got = same_or_declined(after, PATH)
    calls = [n for n in ast.walk(ast.parse(after)) if isinstance(n, ast.Call) and is_kernel_call(n)]
    if all(any(k.arg == "topk_length" for k in c.keywords) for c in calls):
        assert got is not None, after  # every call passes it by keyword: nothing to decline


def test_the_quick_classifier_imports_no_libcst():
    code = ("import sys, topk_migrate.rules as r, topk_migrate.api; from topk_migrate.codemods.pass_topk_length import quick;"
            "print('libcst' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "False"


@pytest.mark.heavy
def test_the_real_tree(bench_tree):
    """Every candidate of the 13k-file benchmark tree, with its real pins: audit needs no engine for any."""
    from topk_migrate.discover import may_hold_site

    candidates = sorted(p for p in bench_tree.rglob("*.py") if may_hold_site(p.read_bytes()))
    narrowed = [p for p in candidates if narrow.narrow(p.read_text()) != narrow.NOTHING]
    answered = [p for p in narrowed if same_or_declined(p.read_text(), str(p), kernel=None) is not None]
    assert len(candidates) == 12 and answered == narrowed and len(answered) == 8


@pytest.mark.heavy
@pytest.mark.parametrize("version", ["0.5.16", "0.5.17"])
def test_a_release_before_and_after_its_fix(tmp_path, version):
    """sglang's dsa_backend.py with the wheel's own pins: declined before the fix (fixable), answered after."""
    from sglang_wheels import install_like_site_packages

    backend = install_like_site_packages(version, tmp_path / "v")
    got = same_or_declined(backend.read_text(), str(backend), kernel=None)
    assert (got is None) == (version == "0.5.16")


@pytest.mark.heavy
def test_real_code_with_a_common_call_taken_for_the_kernel(bench_tree, monkeypatch):
    """Real code's shapes, thousands of them: `zeros` taken for one more entry point and `dtype` for its
    parameter, on the tree's files that pass it; wherever the quick classifier answers (from the
    narrowed text, as audit asks it), the rule must give the same sites, and it must answer often."""
    import dataclasses
    import os

    from topk_migrate import api, discover
    from topk_migrate.codemods.pass_topk_length import analysis as analysis
    from topk_migrate.codemods.pass_topk_length import helper_identity, identity, indexes, whole_project
    from topk_migrate.codemods.pass_topk_length import quick as quick_rule

    spec = rules.spec("pass-topk-length")
    mine = dataclasses.replace(spec, entry_points=spec.entry_points + ("zeros",), param="dtype")
    patched = tuple(mine if s is spec else s for s in rules.specs())
    monkeypatch.setattr(rules, "specs", lambda: patched)
    monkeypatch.setattr(rules.load("pass-topk-length"), "info", mine)  # the loaded rule's INFO (its gate asks it)
    monkeypatch.setitem(quick_rule.ENTRY_POINTS, "zeros", None)  # no place of its own: the keyword only
    monkeypatch.setattr(quick_rule, "PARAM", "dtype")
    for module in (analysis, identity, helper_identity, indexes, whole_project):  # the analysis' modules reading PARAM
        monkeypatch.setattr(module, "PARAM", "dtype")
    discover.prefilter_for.cache_clear()
    try:
        files = sorted(p for top in ("torch", "transformers", "vllm", "sglang") for p in (bench_tree / top).rglob("*.py")
                       if "zeros(" in (t := p.read_text(errors="replace")) and "dtype=" in t)
        answered = 0
        for p in files:
            got = api.process_file(str(p), narrowed=True, engine=False)  # what audit's scanners answer
            if got.needs_engine or not got.sites:
                continue
            monkeypatch.setenv("TOPK_MIGRATE_NO_QUICK", "1")
            want = api.process_file(str(p), narrowed=True)
            monkeypatch.delenv("TOPK_MIGRATE_NO_QUICK")
            assert (got.sites, got.error) == (want.sites, want.error), os.fspath(p)
            answered += 1
        print(f"{len(files)} files, {answered} answered without the engine")
        assert len(files) >= 1500 and answered >= 800, (len(files), answered)  # 2,115 and 1,298 at this writing
    finally:
        discover.prefilter_for.cache_clear()
