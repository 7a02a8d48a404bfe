"""Issue 8: the rewrite is checked on the rewritten module before it is accepted.

Each case runs the rewritten code against a small stand-in kernel (shapes only) that
raises on a row mismatch and records the lengths it got; then the same case with
`validate_rewrite` disabled shows that the check is what keeps it sound.
"""
import sys
import textwrap
import types
from pathlib import Path

import pytest

from helpers import KERNEL
from topk_migrate.api import migrate_source
from topk_migrate.codemods.pass_topk_length import rule as rule
from topk_migrate.codemods.pass_topk_length.rows import Hooks, index_hazard, row_hazard
from topk_migrate.cst.scopecheck import Tree
from topk_migrate.model import Status

ROOT_EXAMPLE = Path(__file__).resolve().parents[1] / "fixtures" / "examples" / "dsa_backend.py"



class T:
    """A tensor stand-in: a shape, a dtype's name, a device and an id for its rows."""

    def __init__(self, rows, tag="t", shape=None, dtype="torch.bfloat16"):
        self.shape = shape or (rows, 4)
        self.tag, self.dtype, self.device = tag, dtype, "cpu"

    def dim(self):
        return len(self.shape)

    def view(self, *shape):
        return self

    def __getitem__(self, key):
        return self


@pytest.fixture
def kernel(monkeypatch):
    calls = []

    def flash_mla_sparse_fwd(q, kv, indices, sm_scale, d_v=512, attn_sink=None, topk_length=None):
        if topk_length is not None and topk_length.shape[0] != q.shape[0]:
            raise RuntimeError("topk_length rows differ from q's")
        calls.append((q.tag, getattr(topk_length, "tag", None)))
        return q, None, None

    pkg, mod = types.ModuleType("sgl_kernel"), types.ModuleType("sgl_kernel.flash_mla")
    mod.flash_mla_sparse_fwd = flash_mla_sparse_fwd
    pkg.flash_mla = mod
    monkeypatch.setitem(sys.modules, "sgl_kernel", pkg)
    monkeypatch.setitem(sys.modules, "sgl_kernel.flash_mla", mod)
    return calls


def migrate(src, tmp_path):
    return migrate_source(textwrap.dedent(src), str(tmp_path / "b.py"), kernel=KERNEL)


def run(source, *args):
    env = {}
    exec(compile(source, "<rewritten>", "exec"), env)
    return env["entry"](*args)


def md(rows):
    return types.SimpleNamespace(dsa_cache_seqlens_int32=T(rows, "lens", (rows,), "torch.int32"))


# Cases only the scope validation catches: each compiles either way, and without the
# validation each rewrite raises or hands the kernel the wrong lengths.
SEMICOLON = """\
from sgl_kernel.flash_mla import flash_mla_sparse_fwd

def entry(x, metadata):
    q = x.view(-1, 4); o = flash_mla_sparse_fwd(q, None, None, 1.0)[0]
    return o
# metadata.dsa_cache_seqlens_int32
"""
TWO_CALLS = """\
from sgl_kernel.flash_mla import flash_mla_sparse_fwd

def entry(q, metadata, draft):
    return flash_mla_sparse_fwd(draft, None, None, 1.0)[0], flash_mla_sparse_fwd(q, None, None, 1.0)[0]
# metadata.dsa_cache_seqlens_int32
"""
LATE_LAMBDA = """\
from sgl_kernel.flash_mla import flash_mla_sparse_fwd

def entry(q, metadata, draft):
    run = lambda: flash_mla_sparse_fwd(q, None, None, 1.0)[0]
    q = draft
    return run()
# metadata.dsa_cache_seqlens_int32
"""
LOCAL_WIDTH = """\
from sgl_kernel.flash_mla import flash_mla_sparse_fwd

def entry(q, metadata, draft):
    topk_length = 2
    return flash_mla_sparse_fwd(q, None, None, 1.0)[0], topk_length
# metadata.dsa_cache_seqlens_int32
"""
GLOBAL_WIDTH = """\
from sgl_kernel.flash_mla import flash_mla_sparse_fwd

topk_length = 2

class B:
    def forward(self, q, metadata):
        return self._sparse(q)

    def _sparse(self, q):
        return flash_mla_sparse_fwd(q, None, None, 1.0)[0], topk_length + 1

def entry(q, metadata, draft):
    return B().forward(q, metadata)
# metadata.dsa_cache_seqlens_int32
"""
READ_BEFORE = """\
from sgl_kernel.flash_mla import flash_mla_sparse_fwd

topk_length = 2

def entry(q, metadata, draft):
    width = topk_length
    return flash_mla_sparse_fwd(q, None, None, 1.0)[0], width
# metadata.dsa_cache_seqlens_int32
"""

def _args(case):
    if case is SEMICOLON:
        return T(6, "q"), md(6)
    return T(6, "q"), md(6), T(3, "draft")


def test_the_analysis_refuses_a_drafts_rows_under_one_plan(tmp_path):
    """Round V: a draft's rows launched under q's plan, once left to the inserted guard's row check."""
    m = migrate(TWO_CALLS, tmp_path)
    assert all(s.status is Status.MANUAL and "with other arguments under one bound metadata" in s.reason
               for s in m.sites), [s.reason for s in m.sites]
    assert not m.changed


@pytest.mark.parametrize("case", [SEMICOLON, LATE_LAMBDA, LOCAL_WIDTH, GLOBAL_WIDTH, READ_BEFORE],
                         ids=["semicolon", "late-lambda", "local-width", "global-width", "read-before"])
def test_validation_keeps_each_rewrite_sound(case, tmp_path, kernel, monkeypatch):
    before = run(case, *_args(case))
    kernel.clear()
    m = migrate(case, tmp_path)
    after = run(m.new_source, *_args(case))
    assert _same(after, before)
    assert all(lens in (None, "lens") for _, lens in kernel)
    assert all(lens is None or q == "q" for q, lens in kernel), kernel  # only q's rows get q's lengths

    monkeypatch.setattr(rule, "validate_rewrite", lambda *a, **k: None)
    monkeypatch.setattr(rule, "_inline_shared_functions", lambda *a: None)  # the planner's own avoidance too
    unchecked = migrate(case, tmp_path).new_source
    assert unchecked != m.new_source
    kernel.clear()
    try:
        result = run(unchecked, *_args(case))
    except (NameError, RuntimeError, TypeError, AttributeError):
        return
    assert not _same(result, before) or any(lens == "lens" and q != "q" for q, lens in kernel), unchecked


def _same(a, b):
    if isinstance(a, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return getattr(a, "tag", a) == getattr(b, "tag", b)


def test_two_calls_in_one_statement_are_each_guarded_inline(tmp_path):
    m = migrate(TWO_CALLS.replace("flash_mla_sparse_fwd(draft,", "flash_mla_sparse_fwd(q,"), tmp_path)
    assert [s.status for s in m.sites] == [Status.FIXABLE, Status.FIXABLE]
    assert all("guarded inline" in s.reason for s in m.sites)
    assert m.new_source.count("shape[0] == q.shape[0]") == 2
    assert "\n    topk_length =" not in m.new_source


def test_helper_reading_a_global_topk_length_is_manual_and_untouched(tmp_path):
    m = migrate(GLOBAL_WIDTH, tmp_path)
    (s,) = m.sites
    assert s.status is Status.MANUAL and "rewrite would change what `topk_length` means at line 10" in s.reason
    assert not m.changed


def test_read_before_the_inserted_assignment_goes_inline(tmp_path):
    m = migrate(READ_BEFORE, tmp_path)
    (s,) = m.sites
    assert s.status is Status.FIXABLE and "guarded inline" in s.reason
    assert "    width = topk_length\n" in m.new_source and "\n    topk_length =" not in m.new_source


def test_a_failed_helper_rewrite_leaves_its_callers_alone(tmp_path):
    m = migrate(GLOBAL_WIDTH, tmp_path)
    assert "return self._sparse(q)\n" in m.new_source


@pytest.mark.parametrize("src,why", [
    ("def entry(q, metadata):\n    return [flash_mla_sparse_fwd(qi, None, None, 1.0) for qi in q.split(2)]\n",
     "`qi` is a comprehension variable"),
    ("def entry(q, metadata):\n    def one(x):\n        return flash_mla_sparse_fwd(x, None, None, 1.0)\n"
     "    return [one(c) for c in q.chunk(2)]\n", "`x` comes from the callers of `one`"),
    ("def entry(q, metadata):\n    for part in q.split(2):\n        flash_mla_sparse_fwd(part, None, None, 1.0)\n",
     "`part` is a loop variable"),
    ("def entry(q, metadata, n):\n    q = q.narrow(0, 0, n)\n    return flash_mla_sparse_fwd(q, None, None, 1.0)\n",
     "`q.narrow(0, 0, n)` works on dim 0"),
    ("def entry(q, metadata, perm):\n    out = q.new_zeros(q.shape)\n    out[perm] = q\n"
     "    return flash_mla_sparse_fwd(out, None, None, 1.0)\n", "`out[perm] = ...` writes rows by index"),
    ("def entry(q, metadata):\n    q = q.transpose(0, 1)\n    return flash_mla_sparse_fwd(q, None, None, 1.0)\n",
     "moves dim 0"),
    ("def entry(q, metadata, idxs):\n    return [flash_mla_sparse_fwd(q, None, i, 1.0) for i in idxs]\n",
     "`i` is a loop variable"),
    ("def entry(q, metadata, idx):\n    return flash_mla_sparse_fwd(q, None, idx[..., :512], 1.0)\n",
     "`idx[..., :512]` narrows or selects top-k entries"),
    ("def entry(q, metadata, idx):\n    idx = idx.masked_fill(idx % 2 == 0, -1)\n    return flash_mla_sparse_fwd(q, None, idx, 1.0)\n",
     "changes which top-k entries are valid"),
    ("def entry(q, metadata, n):\n    metadata.dsa_cache_seqlens_int32 = metadata.dsa_cache_seqlens_int32[:n]\n"
     "    return flash_mla_sparse_fwd(q, None, None, 1.0)\n", "`metadata.dsa_cache_seqlens_int32` is assigned at line 3"),
])
def test_row_index_and_metadata_hazards_are_manual(src, why, tmp_path):
    m = migrate("from sgl_kernel.flash_mla import flash_mla_sparse_fwd\n" + src + "# metadata.dsa_cache_seqlens_int32\n",
                tmp_path)
    assert [s.status for s in m.sites] == [Status.MANUAL], m.sites
    assert why in m.sites[0].reason and not m.changed


@pytest.mark.parametrize("expr", [
    "q", "q.view(-1, 8, 64)", "q.reshape(q.shape[0], -1)", "q.unsqueeze(1)", "q.contiguous()", "q.to(torch.bfloat16)",
    "torch.cat([q, r], dim=-1)", "q.split([4, 4], dim=-1)[0]", "q.transpose(1, 2)", "q[:, :8]", "q[..., :64]",
    "q.flatten(1)", "concat_mla_absorb_q_general(q, r)", "q if r is None else r.view(-1, 4)",
    "torch.unsqueeze(q, 1)", "q.squeeze(-1)", "q.float()", "torch.flatten(q, 1)", "q.clone().detach()",
    "q[:r]", "q[0:r]",  # a prefix: row i stays row i; fewer rows than the metadata's meet the row-count guard
    "q.transpose(0, 1).transpose(0, 1)", "torch.bmm(q.transpose(0, 1), r).transpose(0, 1)",  # MLA absorption
])
def test_row_preserving_steps_pass(expr):
    # the engines import the absorbed-q concat from sglang; the allowlist matches that import, not the bare name
    head = "from sglang.srt.layers.attention.utils import concat_mla_absorb_q_general\n"
    tree = Tree(__import__("libcst").parse_module(f"{head}def f(q, r):\n    x = {expr}\n"))
    node = tree.module.body[1].body.body[0].body[0].value
    assert row_hazard(tree, node)[0] is None


# Default-deny: what is on no allowlist is refused, whatever it is and however it is spelled.
@pytest.mark.parametrize("expr", [
    "helper(q)", "self.permute_rows(q)", "np.ascontiguousarray(q)", "(lambda t: t)(q)", "mystery.op(q)",
    "concat_mla_absorb_q_general(q, r)",  # not imported from sglang: a fork's own function of that name
    "q.unsqueeze(0)", "torch.unsqueeze(q, 0)", "q.flatten()", "torch.flatten(q)", "q.squeeze()",
    "q.transpose(0, 1).transpose(0, 2)", "torch.matmul(q.transpose(0, 1), r).transpose(0, 1)",
    "torch.sort(q, dim=0)[0]", "torch.flip(q, [0])", "torch.roll(q, 1, 0)", "torch.index_select(q, 0, r)",
    "q.new_method()", "torch.clamp(q[r], 0)", "q.apply_(f)",
])
def test_what_no_allowlist_names_is_refused(expr):
    tree = Tree(__import__("libcst").parse_module(f"def f(q, r, helper, mystery, np, self):\n    x = {expr}\n"))
    node = tree.module.body[0].body.body[0].body[0].value
    assert row_hazard(tree, node)[0], expr


@pytest.mark.parametrize("method,function", [
    ("q.flip(0)", "torch.flip(q, 0)"), ("q.roll(1, 0)", "torch.roll(q, 1, 0)"),
    ("q.index_select(0, r)", "torch.index_select(q, 0, r)"), ("q.unsqueeze(1)", "torch.unsqueeze(q, 1)"),
    ("q.contiguous()", "torch.contiguous(q)"), ("q.narrow(0, 0, 2)", "torch.narrow(q, 0, 0, 2)"),
    ("q.transpose(1, 2)", "torch.transpose(q, 1, 2)"), ("q.sort(0)", "torch.sort(q, 0)"),
])
def test_one_operation_one_verdict_in_either_spelling(method, function):
    verdicts = []
    for expr in (method, function):
        tree = Tree(__import__("libcst").parse_module(f"def f(q, r):\n    x = {expr}\n"))
        verdicts.append(row_hazard(tree, tree.module.body[0].body.body[0].body[0].value)[0] is None)
    assert verdicts[0] == verdicts[1], (method, function)


def test_unmodeled_binding_forms_are_refused():
    import libcst

    src = ("def f(inp, r):\n    match inp:\n        case (q, _):\n            pass\n    x = q\n")
    tree = Tree(libcst.parse_module(src))
    node = tree.module.body[0].body.body[1].body[0].value
    why = row_hazard(tree, node)[0]  # LibCST's scopes record no binding for a `match` capture
    assert why and "`q`" in why and "match" in why


@pytest.mark.parametrize("expr", [
    "q[perm]", "q[mask]", "q[1:]", "q[1:n]", "q[::2]", "q.index_select(0, idx)", "torch.index_select(q, 0, idx)",
    "q.gather(0, idx)", "torch.cat([q, r])", "torch.cat([q, r], 0)", "q.split(4)[0]", "q.chunk(2)[1]",
    "q.flip(0)", "q.roll(1)", "q.T", "q.t()", "q.permute(1, 0, 2)", "q.masked_select(m)", "torch.stack([q, r])",
    "q.sort(dim=0)", "q.index_select(d, idx)",
])
def test_row_reordering_steps_are_named(expr):
    tree = Tree(__import__("libcst").parse_module(f"def f(q, r, perm, n, mask, idx, m, d):\n    x = {expr}\n"))
    node = tree.module.body[0].body.body[0].body[0].value
    assert row_hazard(tree, node)[0], expr


def test_kernel_reached_through_an_expression_is_reported(tmp_path):
    m = migrate("""\
        import importlib
        def entry(q, metadata):
            return importlib.import_module("sgl_kernel.flash_mla").flash_mla_sparse_fwd(q, None, None, 1.0)
        """, tmp_path)
    (s,) = m.sites
    assert s.status is Status.MANUAL and "reached through `importlib.import_module" in s.reason
    assert (s.line, s.column) == (3, 12)


def test_comparisons_with_the_kernel_are_not_uses(tmp_path):
    m = migrate("""\
        try:
            from sgl_kernel.flash_mla import flash_mla_sparse_fwd
        except ImportError:
            flash_mla_sparse_fwd = None
        HAVE_SPARSE = flash_mla_sparse_fwd is not None
        if flash_mla_sparse_fwd:
            pass
        """, tmp_path)
    assert m.sites == []


def test_metadata_attribute_set_to_none_is_handled(tmp_path):
    m = migrate("""\
        from sgl_kernel.flash_mla import flash_mla_sparse_fwd
        class B:
            def __init__(self):
                self.forward_metadata = None
            def forward(self, q):
                metadata = self.forward_metadata
                return flash_mla_sparse_fwd(q, None, None, 1.0)
        # metadata.dsa_cache_seqlens_int32
        """, tmp_path)
    assert 'topk_length = getattr(metadata, "dsa_cache_seqlens_int32", None)' in m.new_source


def test_rows_reordered_by_a_function_of_another_project_module(tmp_path):
    (tmp_path / "requirements.txt").write_text("sglang-kernel==0.4.6\n")
    (tmp_path / "sched.py").write_text("def decode_first(x):\n    return x.flip(0)\n\n\ndef same(x):\n    return x.view(-1, 4)\n")
    body = ("from sgl_kernel.flash_mla import flash_mla_sparse_fwd\nfrom sched import {f}\n\n"
            "def entry(q, metadata, idx):\n    q = {f}(q)\n    return flash_mla_sparse_fwd(q, None, idx, 1.0)\n"
            "# metadata.dsa_cache_seqlens_int32\n")
    reordered = migrate_source(body.format(f="decode_first"), str(tmp_path / "b.py")).sites
    assert [s.status for s in reordered] == [Status.MANUAL]
    assert "`x.flip(0)` works on dim 0 (the rows) (in `decode_first`)" in reordered[0].reason
    kept = migrate_source(body.format(f="same"), str(tmp_path / "b.py")).sites
    assert [s.status for s in kept] == [Status.FIXABLE]


# The indices: front-packing kept only by what an allowlist names; function and method form alike.
@pytest.mark.parametrize("expr", [
    "torch.sort(idx, dim=-1)[0]", "torch.clamp(idx, min=0)", "idx.clamp(min=0)", "idx.sort(dim=-1).values",
    "torch.flip(idx, [-1])", "helper(idx)", "self.reorder(idx)", "np.asarray(idx)", "(lambda t: t)(idx)",
    "torch.cat([idx, idx], dim=-1)", "torch.zeros_like(idx)", "idx.new_full((2, 4), 0)",
    "transform_index_page_table_decode(page_table=p, topk_indices=idx)",  # not imported from sglang
    "self._pad(idx.sort(dim=-1)[0], 2)",  # the argument a local helper's return comes from
    "torch.where(idx[p] >= 0, idx[p] + 7, -1)",  # where: what it tests and takes are traced too
    "torch.where(idx >= 0, torch.flip(idx, [-1]), -1)",
    "p.translate_loc_to_hisparse_device(idx.flip(-1))",  # an engine method on the allowlist: of what it is given
    "idx.sort(dim=-1).values.masked_fill(idx < 0, -1)",  # the receiver traced too (round R)
    "torch.gather(p, 1, idx.flip(-1).clamp(min=0)).masked_fill(idx < 0, -1)",  # a lookup of other indices
    "torch.full((2, 4), -1)",  # -1 alone: no row holds what the metadata counts (round AJ: an empty selection)
])
def test_index_steps_no_allowlist_names_are_refused(expr):
    src = (f"class B:\n    def _pad(self, t, n):\n        return torch.cat([t, t.new_full((n, 4), -1)])\n"
           f"    def f(self, idx, p, helper, np):\n        x = {expr}\n")
    tree = Tree(__import__("libcst").parse_module(src))
    node = tree.module.body[0].body.body[1].body.body[0].body[0].value
    assert index_hazard(tree, node)[0], expr


@pytest.mark.parametrize("expr", [
    "idx", "idx.to(torch.int32)", "idx.view(-1, 1, 64)", "idx.unsqueeze(1)", "idx.contiguous()",
    "torch.where(idx >= 0, idx + 7, idx)", "idx.masked_fill(idx < 0, -1)", "self._pad(idx, 2)",
    "torch.gather(p, 1, idx.clamp(min=0)).to(torch.int32).masked_fill(idx < 0, -1)",  # a page table's locations
    "torch.cat([idx, idx.new_full((2, 4), -1)])",
    "transform_index_page_table_prefill(page_table=p, topk_indices=idx)",
    "torch.where(idx != -1, idx + p, idx)",  # sglang 0.5.16's ragged transform (the mask bound first there)
    "p.translate_loc_to_hisparse_device(idx)",
])
def test_index_steps_the_engines_use_pass(expr):
    head = "from sglang.srt.layers.attention.nsa.transform_index import transform_index_page_table_prefill\n"
    src = (f"{head}class B:\n    def _pad(self, t, n):\n        return torch.cat([t, t.new_full((n, 4), -1)])\n"
           f"    def f(self, idx, p):\n        x = {expr}\n")
    tree = Tree(__import__("libcst").parse_module(src))
    node = tree.module.body[1].body.body[1].body.body[0].body[0].value
    assert index_hazard(tree, node)[0] is None, expr


@pytest.mark.parametrize("decorator,fixable", [
    ("@torch.inference_mode()", True), ("@torch.no_grad()", True),
    ("@torch.compile()", False), ("@torch.no_grad(some_arg)", False), ("@no_grad()", False),
])
def test_only_decorators_known_to_pass_arguments_on_keep_the_helper_fixable(tmp_path, decorator, fixable):
    (tmp_path / "requirements.txt").write_text("sglang-kernel==0.4.6\n")
    src = ("import torch\nfrom sgl_kernel.flash_mla import flash_mla_sparse_fwd\nfrom elsewhere import no_grad\n\n\n"
           f"class Backend:\n    {decorator}\n    def _forward(self, q, kv, idx, scale):\n"
           "        return flash_mla_sparse_fwd(q, kv, idx, scale)\n\n"
           "    def forward(self, q, kv, idx, scale, metadata):\n        return self._forward(q, kv, idx, scale)\n\n"
           "# uses metadata.nsa_cache_seqlens_int32\n")
    (site,) = migrate_source(src, str(tmp_path / "b.py")).sites
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("classes,annotation,form", [
    ("@dataclass\nclass DSAMetadata:\n    dsa_cache_seqlens_int32: torch.Tensor\n", "DSAMetadata", "plain"),
    ("@dataclass\nclass DSAMetadata:\n    dsa_cache_seqlens_int32: torch.Tensor\n", '"DSAMetadata"', "plain"),
    ("@dataclass\nclass DSAMetadata:\n    dsa_cache_seqlens_int32: torch.Tensor\n", "Optional[DSAMetadata]", "none_safe"),
    # a class whose name starts with the annotated one is not it
    ("@dataclass\nclass DSAMetadataV2:\n    dsa_cache_seqlens_int32: torch.Tensor\nclass DSAMetadata:\n    pass\n",
     "DSAMetadata", "getattr"),
    # every member of a Union must declare the field
    ("@dataclass\nclass A:\n    dsa_cache_seqlens_int32: torch.Tensor\nclass B:\n    pass\n", "Union[A, B]", "getattr"),
    ("@dataclass\nclass A:\n    dsa_cache_seqlens_int32: torch.Tensor\n@dataclass\nclass B:\n    dsa_cache_seqlens_int32: torch.Tensor\n",
     "Union[A, B]", "plain"),
    ("@dataclass\nclass A:\n    dsa_cache_seqlens_int32: torch.Tensor\n", "A | None", "none_safe"),
    # the declaration must give every instance the field (round R): a bare annotation of a plain class sets
    # nothing, nor does a `None` default; a NamedTuple's does (a class-level value is a write: refused)
    ("class DSAMetadata:\n    dsa_cache_seqlens_int32: torch.Tensor\n", "DSAMetadata", "getattr"),
    ("@dataclass\nclass DSAMetadata:\n    dsa_cache_seqlens_int32: torch.Tensor = None\n", "DSAMetadata", "getattr"),
    ("class DSAMetadata(NamedTuple):\n    dsa_cache_seqlens_int32: torch.Tensor\n", "DSAMetadata", "plain"),
])
def test_the_metadata_type_is_the_class_its_annotation_names_exactly(tmp_path, classes, annotation, form):
    (tmp_path / "requirements.txt").write_text("sglang-kernel==0.4.6\n")
    src = ("import torch\nfrom dataclasses import dataclass, field\nfrom typing import NamedTuple, Optional, Union\n"
           f"from sgl_kernel.flash_mla import flash_mla_sparse_fwd\n\n{classes}\n\nclass Backend:\n    def _forward(self, q, kv, idx, scale):\n"
           "        return flash_mla_sparse_fwd(q, kv, idx, scale)\n\n"
           f"    def forward(self, q, kv, idx, scale, metadata: {annotation}):\n"
           "        return self._forward(q, kv, idx, scale)\n")
    m = migrate_source(src, str(tmp_path / "b.py"))
    assert [s.status for s in m.sites] == [Status.FIXABLE], m.sites
    passed = m.new_source.split("self._forward(q, kv, idx, scale, ", 1)[1].split("\n")[0]
    want = {"plain": "topk_length=metadata.dsa_cache_seqlens_int32)",
            "none_safe": "topk_length=metadata.dsa_cache_seqlens_int32 if metadata is not None else None)",
            "getattr": 'topk_length=getattr(metadata, "dsa_cache_seqlens_int32", None))'}[form]
    assert passed == want, passed


@pytest.mark.parametrize("read,extra,fixable", [
    ("self.forward_metadata", "", True),
    # not a plain read of what the engine stored for this batch (round J1)
    ("self._metadata_for(len(q))", "\n    @functools.lru_cache(maxsize=8)\n    def _metadata_for(self, bs):\n"
                                   "        return self.forward_metadata\n", False),
    ("self.metadata_by_group['full']", "", False),
    ("self.current_metadata", "\n    @property\n    def current_metadata(self):\n        return self.forward_metadata\n",
     False),
    # round P: served by `__getattr__`, a descriptor at class level, or held on the class itself
    ("self.current_metadata", "\n    def __getattr__(self, name):\n        return self.forward_metadata\n", False),
    ("self.current_metadata", "\n    current_metadata = functools.cached_property(lambda self: self.forward_metadata)\n",
     False),
    ("self.forward_metadata", "\n    def share(self, md):\n        type(self).forward_metadata = md\n", False),
    # round Q: a descriptor bound by a name, `__getattribute__` bound by assignment, a class decorator's parameter
    ("self.current_metadata", "\n    current_metadata = functools.partialmethod\n", False),
    ("self.forward_metadata", "\n    __getattribute__ = object.__getattribute__\n", False),
    ("self.forward_metadata", "\n    @staticmethod\n    def install(klass):\n        klass.forward_metadata = None\n", False),
])
def test_the_metadata_is_what_the_engine_stored_for_this_batch(tmp_path, read, extra, fixable):
    (tmp_path / "requirements.txt").write_text("sglang-kernel==0.4.6\n")
    src = ROOT_EXAMPLE.read_text().replace("import torch\n", "import functools\n\nimport torch\n", 1)
    src = src.replace("metadata = self.forward_metadata  # its", f"metadata = {read}  # its")
    src = src.replace("    # -- metadata ---", extra + "\n    # -- metadata ---", 1)
    assert read in src
    (site,) = migrate_source(src, str(tmp_path / "b.py")).sites
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("value,fixable", [
    ("compute_dsa_seqlens(seqlens, self.index_topk)", True),
    ("other.dsa_cache_seqlens_int32", True),  # a read of the clipped field off this step's object
    ("self.prev_metadata.dsa_cache_seqlens_int32", False),  # an earlier step's (round J1)
])
def test_the_field_is_not_an_earlier_steps_lengths(tmp_path, value, fixable):
    (tmp_path / "requirements.txt").write_text("sglang-kernel==0.4.6\n")
    old = "dsa_cache_seqlens_int32=pad_rows(compute_dsa_seqlens(seqlens, self.index_topk), rows),"
    src = ROOT_EXAMPLE.read_text().replace(old, f"dsa_cache_seqlens_int32=pad_rows({value}, rows),").replace(
        "        reqs, lens = row_seqlens(batch)\n",
        "        reqs, lens = row_seqlens(batch)\n        prev = self.prev_metadata\n        other = batch.metadata\n")
    assert value in src and "prev = self.prev_metadata" in src
    (site,) = migrate_source(src, str(tmp_path / "b.py")).sites
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("clip,fixable", [
    ("return seqlens.clamp(max=index_topk)", True),
    ("return torch.clamp(seqlens, 0, index_topk)", True),
    ("return torch.minimum(seqlens, torch.full_like(seqlens, index_topk))", True),
    ("return seqlens + 0", False),  # the module builds the field without clipping it to the top-k width
    ("return seqlens.clamp(min=0)", False),
    ("return helper(seqlens)", False),
    # the bound must be the top-k width itself (topk_length past the indices' width reads past them)
    ("return seqlens.clamp(max=index_topk * 2)", False),
    ("return seqlens.clamp(max=4096)", False),
    ("return torch.clamp(seqlens, 0, self_width)", False),
    ("return torch.minimum(seqlens, torch.full_like(seqlens, 2 * index_topk))", False),
    # values, not bounds (round J1): a lower bound, arithmetic on the lengths, a bound by another name
    ("return seqlens.clamp(min=1, max=index_topk)", False),
    ("return (seqlens - 1).clamp(max=index_topk)", False),
    ("return seqlens.clamp(max=topk)", False),
    ("return seqlens.clamp(max=index_topk)[torch.argsort(seqlens)]", False),
    ("return seqlens.clamp(max=index_topk)[:]", True),
    ("return torch.zeros_like(seqlens)", False),
    # round S: `out=` makes the result a kept buffer, a bare clip() is a fork's function, a view by dtype
    # reinterprets the bytes; a view by size keeps them
    ("return torch.clamp(seqlens, max=index_topk, out=seqlens)", False),
    ("return clip(seqlens, max=index_topk)", False),
    ("return seqlens.clamp(max=index_topk).view(torch.int32)", False),
    ("return seqlens.clamp(max=index_topk).view(-1)", True),
])
def test_the_field_must_hold_the_seqlens_clipped_to_the_top_k_width(tmp_path, clip, fixable):
    (tmp_path / "requirements.txt").write_text("sglang-kernel==0.4.6\n")
    src = ROOT_EXAMPLE.read_text().replace("return seqlens.clamp(max=index_topk)", clip)
    assert clip in src
    (site,) = migrate_source(src, str(tmp_path / "b.py")).sites
    assert (site.status is Status.FIXABLE) is fixable, site.reason
    if not fixable:
        assert "not provably the seqlens clipped to the top-k width" in site.reason, site.reason


@pytest.mark.parametrize("replay,fixable", [
    ("self._graph_metadata.copy_(self._build_metadata(batch))\n        self.forward_metadata = self._graph_metadata", True),
    # a new metadata object on replay: the captured graph keeps reading the capture-time lengths
    ("self.forward_metadata = self._build_metadata(batch)", False),
    ("fresh = self._build_metadata(batch)\n        self.forward_metadata = fresh", False),
    ("self._graph_metadata.dsa_cache_seqlens_int32 = self._build_metadata(batch).dsa_cache_seqlens_int32", False),
    # round O: other spellings of a new holder object on replay
    ("self.forward_metadata: object = self._build_metadata(batch)", False),
    ("self.forward_metadata, self.n = self._build_metadata(batch), 1", False),
    ("setattr(self, 'forward_metadata', self._build_metadata(batch))", False),
    ("self.forward_metadata = self._plan(batch).metadata", False),  # an attribute of a new object
    # round P: a holder given by `__setattr__` or as a loop's target
    ("self.__setattr__('forward_metadata', self._build_metadata(batch))", False),
    ("super().__setattr__('forward_metadata', self._build_metadata(batch))", False),
    ("for self.forward_metadata in [self._build_metadata(batch)]:\n            pass", False),
    # round Q: the holder reached through an alias of self, or given by `builtins.setattr`
    ("be = self\n        be.forward_metadata = self._build_metadata(batch)", False),
    ("builtins.setattr(self, 'forward_metadata', self._build_metadata(batch))", False),
    # round R: a replay hook that never writes the field in place leaves the graph its capture-time lengths
    ("self._raw_lens = batch.seq_lens", False),
])
def test_on_cuda_graph_replay_the_lengths_are_updated_in_place(tmp_path, replay, fixable):
    (tmp_path / "requirements.txt").write_text("sglang-kernel==0.4.6\n")
    original = ("self._graph_metadata.copy_(self._build_metadata(batch))\n"
                "        self.forward_metadata = self._graph_metadata")
    src = ROOT_EXAMPLE.read_text()
    assert original in src
    (site,) = migrate_source(src.replace(original, replay), str(tmp_path / "b.py")).sites
    assert (site.status is Status.FIXABLE) is fixable, site.reason
    if not fixable:  # (a new tensor for the field is refused under any method name: replaced_field)
        # (the field read off a call's result is not proven the clipped lengths either: round R's `_kept`)
        assert "CUDA-graph replay" in site.reason or "a CUDA graph was captured with" in site.reason \
            or "self._build_metadata(batch).dsa_cache_seqlens_int32`, not provably" in site.reason \
            or "no method that runs between replays writes" in site.reason, site.reason


@pytest.mark.parametrize("extra,fixable", [
    ("", True),
    # round R: a shallow copy shares the field's tensor; an in-place update through it rewrites the original's
    ("        draft = copy.copy(self.forward_metadata)\n"
     "        draft.dsa_cache_seqlens_int32.copy_(self.forward_metadata.dsa_cache_seqlens_int32)\n", False),
])
def test_a_shallow_copy_beside_an_in_place_write_of_the_field(tmp_path, extra, fixable):
    (tmp_path / "requirements.txt").write_text("sglang-kernel==0.4.6\n")
    anchor = "        self.forward_metadata = self._build_metadata(batch)\n"
    src = ROOT_EXAMPLE.read_text().replace("import torch\n", "import copy\n\nimport torch\n", 1)
    assert anchor in src
    (site,) = migrate_source(src.replace(anchor, anchor + extra), str(tmp_path / "b.py")).sites
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("before, fixable", [
    ("d = {'i': idx}\n        n = d['i'].shape[0]", True),
    # round S: what a container, a namespace, a partial, a zip or a nested def's default holds is the tensor
    ("d = {'i': idx}\n        d['i'].masked_fill_(idx < 0, -1)", False),
    ("ns = SimpleNamespace(t=idx)\n        ns.t.masked_fill_(idx < 0, -1)", False),
    ("post = functools.partial(helper, idx)\n        post()", False),
    ("helper(zip(idx, idx))", False),
    ("def step(sel=idx):\n            sel.masked_fill_(sel < 0, -1)\n        step()", False),
])
def test_what_holds_the_indices_may_write_them(before, fixable):
    src = f"class B:\n    def f(self, idx, helper):\n        {before}\n        x = idx\n"
    tree = Tree(__import__("libcst").parse_module(src))
    node = tree.module.body[0].body.body[0].body.body[-1].body[0].value
    assert (index_hazard(tree, node)[0] is None) is fixable, index_hazard(tree, node)[0]


def test_the_soundness_page_lists_every_allowlist_entry():
    from topk_migrate.codemods.pass_topk_length import field_meaning, helper_identity, rows

    page = (Path(__file__).resolve().parents[1] / "docs" / "soundness.md").read_text()
    tables = [rows.ROW_KEEPING, rows.ROW_KEEPING_FUNCTIONS, rows.DIM_KEEPING, rows.INDEX_KEEPING,
              rows.INDEX_KEEPING_FUNCTIONS, rows.INDEX_KEEPING_ENGINE_METHODS, field_meaning.CLIPS,
              field_meaning.CLIP_KEEPING, field_meaning.CLIPPED_FIELDS, helper_identity.SIGNATURE_KEEPING_DECORATORS,
              helper_identity.IDENTITY_DECORATORS]
    missing = sorted(e for t in tables for e in t if f"`{e}`" not in page)
    missing += sorted(d for d in helper_identity.ARGUMENT_PASSING_DECORATORS if f"@{d}()" not in page)
    missing += [rows.INDEX_HEAD] if f"`idx{rows.INDEX_HEAD}`" not in page else []
    assert not missing, f"docs/soundness.md does not name: {missing}"


def _backend_with(tmp_path, method_body: str):
    """The one site of a fixable backend whose class also has `def peek(self): <method_body>`."""
    (tmp_path / "requirements.txt").write_text("sglang-kernel==0.4.6\n")
    src = ("import importlib\nimport sys\nfrom sgl_kernel.flash_mla import flash_mla_sparse_fwd\nNAME = '_forward'\n\n\n"
           "class Backend:\n    def _forward(self, q, kv, idx, scale):\n"
           "        return flash_mla_sparse_fwd(q, kv, idx, scale)\n\n"
           "    def forward(self, q, kv, idx, scale, metadata):\n        return self._forward(q, kv, idx, scale)\n\n"
           f"    def peek(self):\n        {method_body}\n# uses metadata.nsa_cache_seqlens_int32\n")
    (site,) = migrate_source(src, str(tmp_path / "b.py")).sites
    return site


@pytest.mark.parametrize("line", [
    "setattr(Backend, NAME, staticmethod(lambda *a, **k: None))", "delattr(Backend, NAME)",
    "getattr(sys.modules[__name__], NAME)(None, None, None, 1.0)", "exec('Backend._forward = None')",
    "globals()[NAME] = None", "vars(Backend)[NAME] = None", "Backend.__dict__.update(x=None)",
    "sys.modules[__name__] = None", "del sys.modules[NAME]", "eval(NAME)", "globals().update(x=None)",
])
def test_reflection_in_the_module_makes_its_sites_manual(tmp_path, line):
    site = _backend_with(tmp_path, line)
    assert site.status is Status.MANUAL and "at run time" in site.reason, site.reason


@pytest.mark.parametrize("line", ["x = Backend.__dict__[NAME]", "m = sys.modules[__name__]", "g = globals()",
                                  "importlib.import_module(NAME)", "k = self.__class__"])
def test_reads_of_reflective_tables_are_not_writes(tmp_path, line):
    site = _backend_with(tmp_path, line)
    assert site.status is Status.FIXABLE, site.reason


def test_attribute_reads_by_literal_or_computed_name_are_not_reflection(tmp_path):
    (tmp_path / "requirements.txt").write_text("sglang-kernel==0.4.6\n")
    src = ("from dataclasses import fields\nfrom sgl_kernel.flash_mla import flash_mla_sparse_fwd\n\n\n"
           "class Backend:\n    def copy_(self, other):\n        for f in fields(self):\n"
           "            getattr(self, f.name).copy_(getattr(other, f.name, None))\n\n"
           "    def _forward(self, q, kv, idx, scale):\n        return flash_mla_sparse_fwd(q, kv, idx, scale)\n\n"
           "    def forward(self, q, kv, idx, scale, metadata):\n        return self._forward(q, kv, idx, scale)\n"
           "# uses metadata.nsa_cache_seqlens_int32\n")
    (site,) = migrate_source(src, str(tmp_path / "b.py")).sites
    assert site.status is Status.FIXABLE, site.reason


# Defense in depth: where nothing declares what the metadata holds (the getattr form), the inserted
# guard hands the kernel topk_length only if it is a tensor, int32, 1-D, on q's device, with q's rows;
# anything else (a field of another meaning, a list, a wrong dtype or shape) gets the full width, and
# the guard itself never raises.
UNTYPED = """\
import torch
from sgl_kernel.flash_mla import flash_mla_sparse_fwd


def entry(q, metadata):
    return flash_mla_sparse_fwd(q, None, None, 1.0)[0]
# metadata.dsa_cache_seqlens_int32
"""


@pytest.mark.parametrize("untyped", [UNTYPED, UNTYPED.replace("import torch\n", "")], ids=["torch", "no-torch"])
@pytest.mark.parametrize("field,given", [
    (lambda torch: torch.full((6,), 3, dtype=torch.int32), True),
    (lambda torch: torch.full((6,), 3, dtype=torch.int64), False),
    (lambda torch: torch.full((6, 1), 3, dtype=torch.int32), False),
    (lambda torch: torch.full((5,), 3, dtype=torch.int32), False),
    (lambda torch: torch.full((6,), 3, dtype=torch.int32, device="meta"), False),
    (lambda torch: [3] * 6, False),
    (lambda torch: 3, False),
    (lambda torch: None, False),
], ids=["int32", "int64", "2-d", "rows", "device", "list", "int", "none"])
def test_checked_guard_passes_only_what_the_kernel_takes(untyped, field, given, tmp_path, monkeypatch):
    torch = pytest.importorskip("torch")
    got = []

    def flash_mla_sparse_fwd(q, kv, indices, sm_scale, d_v=512, attn_sink=None, topk_length=None):
        got.append(topk_length)
        return q, None, None

    pkg, mod = types.ModuleType("sgl_kernel"), types.ModuleType("sgl_kernel.flash_mla")
    mod.flash_mla_sparse_fwd = flash_mla_sparse_fwd
    monkeypatch.setitem(sys.modules, "sgl_kernel", pkg)
    monkeypatch.setitem(sys.modules, "sgl_kernel.flash_mla", mod)
    m = migrate(untyped, tmp_path)
    assert m.sites[0].status is Status.FIXABLE and "isinstance(topk_length" in m.new_source
    value = field(torch)
    run(m.new_source, torch.zeros(6, 4), types.SimpleNamespace(dsa_cache_seqlens_int32=value))
    assert (got[0] is value) if given else (got[0] is None)


# In-place writes through an alias are writes to the tensor (a points-to relation: views, the value
# itself, what an unknown call may hand back); a copy's in-place writes are not.
@pytest.mark.parametrize("body,hazard", [
    ("a = q\n    a.copy_(a[perm])", True),
    ("a = q[:, :8]\n    a.copy_(a.index_select(0, perm))", True),
    ("for buf in (q, r):\n        buf.copy_(buf[perm])", True),
    ("a = helper(q)\n    a.copy_(a[perm])", True),
    ("a = q if r is None else r\n    a[perm] = r", True),
    ("a = q.clone()\n    a.copy_(a[perm])", False),
    ("a = q.new_zeros(q.shape)\n    a.copy_(a[perm])", False),
    ("o = q if r is None else r\n    s = r\n    s[perm] = 0", False),  # q and r may each be o, not each other
    ("helper(q, perm)", True),  # a function that may permute q in place
])
def test_writes_through_aliases(body, hazard):
    src = f"def f(q, r, perm, helper):\n    {body}\n    x = q\n"
    tree = Tree(__import__("libcst").parse_module(src))
    node = tree.module.body[0].body.body[-1].body[0].value
    assert bool(row_hazard(tree, node)[0]) is hazard, row_hazard(tree, node)[0]


# A call handed q (or an alias) may change it in place: refused unless it provably does not.
@pytest.mark.parametrize("body,hazard", [
    ("_perm_(q)", True),  # a def of the module that permutes its argument in place
    ("torch.Tensor.copy_(q, q[perm])", True),
    ("obj.reorder(q)", True),
    ("q.t_()", True),
    ("_scale(q)", False),  # a def of the module that writes none of its parameters
    ("flashinfer_rope(q)", False),  # a library function (outside the project): results go to outputs
    ("q.mul_(2.0)", False),  # values change, rows stay
    ("logger.debug(q)", False),
    # a call a return evaluates: nothing after it runs in this call; assumed, not proven, that the next call's q
    # is another tensor (red team C's indices shared across layers and masked in a returned branch go unseen:
    # results/red-team.md; refusing them refused sglang 0.5.12.post1's NSA fix)
    ("return obj.reorder(q) if perm is None else None", False),
    # a call inside the returned expression runs before the rest of it (round R's u_return_inline_inplace_prep)
    ("return obj.attend(_perm_(q))", True),
    ("return obj.attend(q, _perm_(q)) if perm is None else None", True),
])
def test_calls_that_may_change_q_in_place(body, hazard):
    src = ("import torch\nfrom flashinfer import flashinfer_rope\n\n"
           "def _perm_(t):\n    t.copy_(t[t.argsort(0)])\n\n"
           "def _scale(t):\n    return t * 2\n\n"
           f"def f(q, perm, obj, logger):\n    {body}\n    x = q\n")
    tree = Tree(__import__("libcst").parse_module(src))
    node = tree.module.body[-1].body.body[-1].body[0].value
    why = row_hazard(tree, node, hooks=Hooks(outside=lambda qn: qn.startswith("flashinfer")))[0]
    assert bool(why) is hazard, why


def test_indices_bound_by_a_match_capture_are_refused():
    import libcst

    src = "def f(inp):\n    match inp:\n        case idx:\n            pass\n    x = idx\n"
    tree = Tree(libcst.parse_module(src))
    why = index_hazard(tree, tree.module.body[0].body.body[1].body[0].value)[0]
    assert why and "`idx`" in why and "match" in why  # found by the generator, seed 42


# -- what cannot run before the traced call is not on its path (issue 34 item 2) ---------------------------
# meituan-longcat/SGLang-FluentLLM dsa_backend.py:967: forward_extend returns the prefill helper's call in
# its `if`, and in the `elif` that follows hands the same indices to a decode method that writes another of
# its parameters and only calls `unsqueeze` on them; that elif was taken for a write before the call.
OFF_PATH = """\
import torch
from sgl_kernel.flash_mla import flash_mla_sparse_fwd


class DSAMetadata:
    dsa_cache_seqlens_int32: torch.Tensor


class Backend:
    forward_metadata: DSAMetadata

    def forward_extend(self, q, kv, topk_indices, impl, impls):
        metadata = self.forward_metadata
        page_table_1 = topk_indices
{body}

    def _forward_flashmla_prefill(self, q_all, kv_cache, page_table_1, sm_scale):
        indices = page_table_1.unsqueeze(1)
        return flash_mla_sparse_fwd(q_all, kv_cache, indices, sm_scale)[0]

    def _forward_flashmla_decode(self, q_all, kv_cache, page_table_1):
        kv_cache.mul_(2.0)  # writes one of its parameters: not a def that writes none
        return q_all + page_table_1.unsqueeze(1).sum()

    def _rewrite_indices(self, page_table_1):
        page_table_1.copy_(page_table_1.flip(-1))
"""
PREFILL = "self._forward_flashmla_prefill(q, kv, page_table_1, 1.0)"


@pytest.mark.parametrize("body", [
    # the real shape: the elif after the branch that returns the call
    f"if impl == 'prefill':\n    return {PREFILL}\nelif impl == 'decode':\n"
    "    o = self._forward_flashmla_decode(q, kv, page_table_1)\n    return o",
    # the decode method on the path: it writes kv_cache, not a parameter the indices are handed to
    f"if impl == 'decode':\n    o = self._forward_flashmla_decode(q, kv, page_table_1)\nreturn {PREFILL}",
    # after a `return` in its own branch: it never runs
    f"if impl == 'decode':\n    return q\n    page_table_1.copy_(page_table_1.flip(-1))\nreturn {PREFILL}",
    f"if impl == 'decode':\n    raise ValueError(impl); page_table_1.copy_(page_table_1.flip(-1))\nreturn {PREFILL}",
])
def test_a_write_that_cannot_run_before_the_call_is_off_its_path(tmp_path, body):
    src = OFF_PATH.format(body=textwrap.indent(body, " " * 8))
    (site,) = migrate_source(src, str(tmp_path / "backend.py"), kernel=KERNEL).sites
    assert site.status is Status.FIXABLE, site.reason


@pytest.mark.parametrize("body,why", [
    # a loop: the elif of one pass runs before the call of the next
    (f"for impl in impls:\n    if impl == 'prefill':\n        o = {PREFILL}\n    elif impl == 'decode':\n"
     "        page_table_1.copy_(page_table_1.flip(-1))\nreturn o", "page_table_1.copy_"),
    (f"while impls:\n    if impls.pop() == 'prefill':\n        return {PREFILL}\n"
     "    page_table_1.copy_(page_table_1.flip(-1))", "page_table_1.copy_"),
    # a branch that falls through to the call, or the call's own branch before it
    (f"if impl == 'decode':\n    page_table_1.copy_(page_table_1.flip(-1))\nreturn {PREFILL}", "page_table_1.copy_"),
    (f"if impl == 'prefill':\n    page_table_1.copy_(page_table_1.flip(-1))\n    return {PREFILL}", "page_table_1.copy_"),
    (f"if impl == 'decode':\n    self._rewrite_indices(page_table_1)\nreturn {PREFILL}", "self._rewrite_indices"),
    # in another branch than the call, or after it: the next call of forward_extend reads what it wrote
    # where the indices outlive the call (a parameter the layers share, a buffer kept between steps)
    (f"if impl == 'prefill':\n    return {PREFILL}\nelse:\n    page_table_1.copy_(page_table_1.flip(-1))\n    return q",
     "page_table_1.copy_"),
    (f"if impl == 'decode':\n    page_table_1.copy_(page_table_1.flip(-1))\nelif impl == 'prefill':\n    return {PREFILL}",
     "page_table_1.copy_"),
    (f"if impl == 'prefill':\n    return {PREFILL}\npage_table_1.copy_(page_table_1.flip(-1))\nreturn q", "page_table_1.copy_"),
    (f"o = {PREFILL}\npage_table_1.copy_(page_table_1.flip(-1))\nreturn o", "page_table_1.copy_"),
    (f"if impl == 'prefill':\n    return {PREFILL}\nelif impl == 'decode':\n    q.transpose_(0, 1)\n    return q", "q.transpose_"),
    # in the test of the `if` whose branch holds the call; in a nested def called first; before a return
    # that is not the branch's (inside an inner if)
    (f"if page_table_1.copy_(page_table_1.flip(-1)) is not None:\n    return {PREFILL}", "page_table_1.copy_"),
    (f"def undo():\n    page_table_1.copy_(page_table_1.flip(-1))\n\nundo()\nreturn {PREFILL}", "page_table_1.copy_"),
    (f"if impl == 'decode':\n    if impls:\n        return q\n    page_table_1.copy_(page_table_1.flip(-1))\n"
     f"return {PREFILL}", "page_table_1.copy_"),
    # the same for q's rows: an in-place transpose on the path
    (f"if impl == 'decode':\n    q.transpose_(0, 1)\nreturn {PREFILL}", "q.transpose_"),
])
def test_a_write_that_may_run_before_the_call_is_still_on_its_path(tmp_path, body, why):
    src = OFF_PATH.format(body=textwrap.indent(body, " " * 8))
    (site,) = migrate_source(src, str(tmp_path / "backend.py"), kernel=KERNEL).sites
    assert site.status is Status.MANUAL and why in site.reason, site.reason


# -- the lengths changed in place (red team B, issue 34): `metadata.dsa_cache_seqlens_int32.add_(1)` before or
# after the call left lengths past the valid entries (the next call's, or this one's); only `.copy_` of a value
# that is proven clipped, in this module or another, keeps the field what the metadata counted.
LENGTHS_WRITTEN = """\
import torch
from sgl_kernel.flash_mla import flash_mla_sparse_fwd
{imports}

class DSAMetadata:
    dsa_cache_seqlens_int32: torch.Tensor


class Backend:
    forward_metadata: DSAMetadata

    def forward(self, q, kv, indices):
        metadata = self.forward_metadata
        {write}
        return flash_mla_sparse_fwd(q, kv, indices, 1.0)[0]
"""
IN_PLACE = ["metadata.dsa_cache_seqlens_int32.add_(1)", "metadata.dsa_cache_seqlens_int32[1:].clamp_(max=4096)",
            "metadata.dsa_cache_seqlens_int32[0] = 2048", "metadata.dsa_cache_seqlens_int32[0] += 1",
            "torch.add(metadata.dsa_cache_seqlens_int32, 1, out=metadata.dsa_cache_seqlens_int32)",
            # round O: through a view, the storage swapped, deleted, `+=` on a local alias
            "metadata.dsa_cache_seqlens_int32.narrow(0, 0, 1).copy_(metadata.dsa_cache_seqlens_int32 + 9)",
            "metadata.dsa_cache_seqlens_int32.data = metadata.dsa_cache_seqlens_int32 + 9",
            "lens = metadata.dsa_cache_seqlens_int32; lens += 1",
            "self._lens = metadata.dsa_cache_seqlens_int32; self._lens.add_(1)",  # kept, and written there (u02)
            # round P: any in-place function handed it, through `.data`, an aliasing method, a loop, `:=`, unpacking
            "torch.Tensor.sub_(metadata.dsa_cache_seqlens_int32, 1)", "torch.clamp_(metadata.dsa_cache_seqlens_int32, max=8)",
            "operator.isub(metadata.dsa_cache_seqlens_int32, 1)", "torch.ops.aten.sub_.Scalar(metadata.dsa_cache_seqlens_int32, 1)",
            "metadata.dsa_cache_seqlens_int32.data.sub_(1)", "metadata.dsa_cache_seqlens_int32.data[:] = 0",
            "lens = metadata.dsa_cache_seqlens_int32.to(torch.int32); lens -= 1",
            "metadata.dsa_cache_seqlens_int32.contiguous().sub_(1)",
            "lens = metadata.dsa_cache_seqlens_int32.detach(); lens[:] = 0",
            "for t in (metadata.dsa_cache_seqlens_int32,): t.sub_(1)",
            "(lens := metadata.dsa_cache_seqlens_int32).sub_(1)",
            "lens, = (metadata.dsa_cache_seqlens_int32,); lens.sub_(1)",
            "for t in vars(metadata).values(): t.sub_(1)",
            "metadata.__init__(metadata.dsa_cache_seqlens_int32 + 1)"]  # every field given again (round P)


@pytest.mark.parametrize("write", IN_PLACE)
def test_lengths_changed_in_place_in_this_module_refuse(tmp_path, write):
    src = LENGTHS_WRITTEN.format(imports="import operator", write=write)
    (site,) = migrate_source(src, str(tmp_path / "backend.py"), kernel=KERNEL).sites
    assert site.status is Status.MANUAL and ("in place" in site.reason or "__init__" in site.reason), site.reason


@pytest.mark.parametrize("write", [w for w in IN_PLACE if "vars(" not in w] + ["del metadata.dsa_cache_seqlens_int32"])
def test_lengths_changed_in_place_in_another_module_refuse(tmp_path, write):
    (tmp_path / ".git").mkdir()
    (tmp_path / "steps.py").write_text(f"import operator\nimport torch\n\n\ndef advance(metadata):\n    {write}\n")
    src = LENGTHS_WRITTEN.format(imports="import steps", write="steps.advance(metadata)")
    (tmp_path / "backend.py").write_text(src)
    (site,) = migrate_source(src, str(tmp_path / "backend.py"), kernel=KERNEL).sites
    assert site.status is Status.MANUAL and "steps.py:6" in site.reason and "in place" in site.reason, site.reason


def test_the_field_kept_in_another_attribute_and_only_read_there_stays_fixable(tmp_path):
    """The tensor kept in `self._lens` is the field's: in-place writes through that attribute are the field's
    (above); reads of it are not writes (round O's u02 had refused every such store)."""
    src = LENGTHS_WRITTEN.format(imports="", write="self._lens = metadata.dsa_cache_seqlens_int32; n = self._lens.sum()")
    (site,) = migrate_source(src, str(tmp_path / "backend.py"), kernel=KERNEL).sites
    assert site.status is Status.FIXABLE, site.reason


def test_a_class_serving_the_field_by_code_refuses(tmp_path):
    """Round P: a subclass serving the field by a property (an earlier step's tensor): its value is not read."""
    src = LENGTHS_WRITTEN.format(imports="", write="pass").replace(
        "class Backend:", "class Stale(DSAMetadata):\n    @property\n    def dsa_cache_seqlens_int32(self):\n"
        "        return self.previous\n\n\nclass Backend:")
    (site,) = migrate_source(src, str(tmp_path / "backend.py"), kernel=KERNEL).sites
    assert site.status is Status.MANUAL, site.reason


def test_a_builders_cached_result_handed_as_the_metadata_refuses(tmp_path):
    """Round P: the metadata a parameter, the module's own caller handing it an `lru_cache`d builder's result (an
    earlier batch's object); a builder making a new object each time is this batch's."""
    src = LENGTHS_WRITTEN.format(imports="import functools", write="pass").replace(
        "    def forward(self, q, kv, indices):\n        metadata = self.forward_metadata\n",
        "    {deco}\n    def build(self, seq_lens):\n        md = DSAMetadata()\n        md.dsa_cache_seqlens_int32 = "
        "seq_lens.clamp(max=self.dsa_index_topk)\n        return md\n\n"
        "    def step(self, q, kv, indices, seq_lens):\n        return self.forward(q, kv, indices, self.build(seq_lens))\n\n"
        "    def forward(self, q, kv, indices, metadata: DSAMetadata):\n")
    for deco, fixable in (("@functools.lru_cache(maxsize=8)", False), ("@staticmethod\n    def _unused(): pass", True)):
        (site,) = migrate_source(src.replace("{deco}", deco), str(tmp_path / "backend.py"), kernel=KERNEL).sites
        assert (site.status is Status.FIXABLE) is fixable and (fixable or "cached result" in site.reason), (deco, site.reason)


# Round N's u_field_util_unclipped / u_graph_util_field_swap: a launcher hands the field's name in a mapping to a
# generic helper (`setattr(obj, key, value)`, naming neither class nor field); the field's name spelled as a
# string anywhere but a literal getattr/hasattr/setattr or a declared class's `**{...}` is a write not read.
@pytest.mark.parametrize("spelled,fixable", [
    ('apply_overrides(meta, {"dsa_cache_seqlens_int32": meta.seq_lens})', False),
    ('apply_overrides(meta, dict(dsa_cache_seqlens_int32=meta.seq_lens))', False),  # a keyword, not proven clipped
    ('FIELDS = ("dsa_cache_seqlens_int32",)', False),
    ('print(getattr(meta, "dsa_cache_seqlens_int32", None), hasattr(meta, "dsa_cache_seqlens_int32"))', True),
    ('FIELDS = "page_table_1 dsa_cache_seqlens_int32".split()', False),  # round O: a list of names
    ('Meta = collections.namedtuple("Meta", "page_table_1, dsa_cache_seqlens_int32")', False),
    ('print({"dsa_cache_seqlens_int32": meta.dsa_cache_seqlens_int32})', True),  # a logged read (round O's s12)
    ('"""Sets dsa_cache_seqlens_int32 in place."""', True),  # a docstring
])
def test_the_field_named_as_a_string_in_another_module_refuses(tmp_path, spelled, fixable):
    (tmp_path / ".git").mkdir()
    (tmp_path / "utils.py").write_text("def apply_overrides(obj, overrides):\n    for key, value in overrides.items():\n"
                                       "        setattr(obj, key, value)\n")
    (tmp_path / "launcher.py").write_text(f"from utils import apply_overrides\n\n\ndef main(meta):\n    {spelled}\n")
    src = LENGTHS_WRITTEN.format(imports="", write="pass")
    (tmp_path / "backend.py").write_text(src)
    (site,) = migrate_source(src, str(tmp_path / "backend.py"), kernel=KERNEL).sites
    assert (site.status is Status.FIXABLE) is fixable, site.reason
    assert fixable or "launcher.py:5" in site.reason, site.reason


def test_lengths_copied_in_place_in_the_function_passing_them_refuse(tmp_path):
    """Fixable until round U: a clip copied in place where the metadata is passed is indistinguishable, by its
    spelling, from the next step's lengths staged there (u_inline_stage_through_holder_path); the engines write
    the field where they build the metadata or on replay, never in the function that passes it."""
    write = "metadata.dsa_cache_seqlens_int32.copy_(torch.clamp(metadata.seq_lens, max=self.dsa_index_topk))"
    src = LENGTHS_WRITTEN.format(imports="", write=write)
    (site,) = migrate_source(src, str(tmp_path / "backend.py"), kernel=KERNEL).sites
    # (round Z: the operand read off `metadata`, a local bound to what self keeps, is refused first)
    assert site.status is Status.MANUAL and ("writes `dsa_cache_seqlens_int32` in place" in site.reason
                                             or "not provably the seqlens" in site.reason), site.reason


# -- indices held in an attribute (red team B, issue 34): `topk_indices = batch.topk_indices_buf` with
# `batch.topk_indices_buf.masked_fill_(...)` before the call, or after it (the next call reads it), or through a
# local read from it in another method: the trace looked at writes of local names only.
HELD = """\
import torch
from sgl_kernel.flash_mla import flash_mla_sparse_fwd


class DSAMetadata:
    dsa_cache_seqlens_int32: torch.Tensor


class Backend:
    forward_metadata: DSAMetadata

    def forward(self, q, kv, batch):
        metadata = self.forward_metadata
        topk_indices = batch.topk_indices_buf
        {before}
        return flash_mla_sparse_fwd(q, kv, topk_indices, 1.0)[0]

    def evict(self, limit, batch):
        {elsewhere}
"""


@pytest.mark.parametrize("before,elsewhere", [
    ("batch.topk_indices_buf.masked_fill_(batch.topk_indices_buf >= 24, -1)", "pass"),
    ("pass", "batch.topk_indices_buf[:, :, ::2] = -1"),
    ("pass", "buf = batch.topk_indices_buf\n        buf.fill_(-1)"),
    ("pass", "torch.where(batch.topk_indices_buf > limit, -1, batch.topk_indices_buf, out=batch.topk_indices_buf)"),
])
def test_indices_held_in_an_attribute_written_in_place_anywhere_refuse(tmp_path, before, elsewhere):
    src = HELD.format(before=before, elsewhere=elsewhere)
    (site,) = migrate_source(src, str(tmp_path / "backend.py"), kernel=KERNEL).sites
    assert site.status is Status.MANUAL and "held in an attribute" in site.reason, site.reason


def test_indices_held_in_an_attribute_only_read_stay_fixable(tmp_path):
    src = HELD.format(before="n = batch.topk_indices_buf.shape[0]", elsewhere="return batch.topk_indices_buf.clone()")
    (site,) = migrate_source(src, str(tmp_path / "backend.py"), kernel=KERNEL).sites
    assert site.status is Status.FIXABLE, site.reason


# Round N: indices held on the method's own object are rewritten by code the module trace cannot see (a literal
# setattr, an `out=` tuple, a property, a subclass or another file storing a reordered selection): refused
# however the module itself treats the attribute.
@pytest.mark.parametrize("read", ["self.topk_indices_buf", "type(self).topk_indices_buf", "Backend.topk_indices_buf"])
def test_indices_held_on_the_methods_own_object_refuse(tmp_path, read):
    src = HELD.replace("topk_indices = batch.topk_indices_buf", f"topk_indices = {read}").format(before="pass", elsewhere="pass")
    (site,) = migrate_source(src, str(tmp_path / "backend.py"), kernel=KERNEL).sites
    assert site.status is Status.MANUAL, site.reason


# -- the values the module assigns to the attribute the indices are read from (round J1's u_attr_topk_sorted,
# u_attr_topk_extra): each is traced as the indices are, whatever method and receiver assigns it.
@pytest.mark.parametrize("elsewhere,fixable", [
    ("batch.topk_indices_buf = limit", True),  # a parameter, taken as given like the call's own
    ("batch.topk_indices_buf = limit.contiguous()", True),
    ("batch.topk_indices_buf = limit.sort(dim=-1).values", False),  # -1 moves to the front
    ("batch.topk_indices_buf = torch.cat([limit[:, :, :1] * 0, limit[:, :, :-1]], dim=-1)", False),  # a sink first
    ("batch.topk_indices_buf, self.n = limit.flip(-1), 1", False),
    ("self.topk_indices_buf = limit.flip(-1)", False),  # any receiver: the object may be the same
    ("batch.topk_indices_buf += 1", False),
])
def test_every_value_the_module_gives_the_indices_attribute_is_traced(tmp_path, elsewhere, fixable):
    src = HELD.format(before="pass", elsewhere=elsewhere)
    (site,) = migrate_source(src, str(tmp_path / "backend.py"), kernel=KERNEL).sites
    assert (site.status is Status.FIXABLE) is fixable, site.reason


# -- indices bound outside a function (red team B, issue 34): a module global (or class attribute) tensor another
# function fills in place; the trace skipped every binding that was not a function's, value and writes alike.
@pytest.mark.parametrize("holder", ["module", "class"])
def test_indices_bound_outside_a_function_refuse(tmp_path, holder):
    where = "TOPK_BUF" if holder == "module" else "Backend.TOPK_BUF"
    src = (
        "import torch\nfrom sgl_kernel.flash_mla import flash_mla_sparse_fwd\n\n"
        + ("TOPK_BUF = torch.full((8, 1, 16), -1, dtype=torch.int32)\n\n" if holder == "module" else "")
        + "class DSAMetadata:\n    dsa_cache_seqlens_int32: torch.Tensor\n\n\n"
        "class Backend:\n    forward_metadata: DSAMetadata\n"
        + ("    TOPK_BUF = torch.full((8, 1, 16), -1, dtype=torch.int32)\n" if holder == "class" else "")
        + f"\n    def forward(self, q, kv):\n        metadata = self.forward_metadata\n"
        f"        return flash_mla_sparse_fwd(q, kv, {'TOPK_BUF' if holder == 'module' else 'self.TOPK_BUF'}, 1.0)[0]\n\n"
        f"\ndef evict():\n    {where}[:, :, ::2] = -1\n")
    (site,) = migrate_source(src, str(tmp_path / "backend.py"), kernel=KERNEL).sites
    assert site.status is Status.MANUAL, site.reason


# -- an in-place write through a view of the name (red team C, issue 34): `topk_indices[:, 0].masked_fill_(...)`,
# `topk_indices.data.fill_(-1)`, `topk_indices.view(-1)[m] = -1` write the indices' storage; only a write
# whose receiver was the bare name was seen.
def _handed(before: str) -> str:
    """HELD with the indices handed to forward as a parameter, `before` run ahead of the kernel call."""
    return HELD.replace("        topk_indices = batch.topk_indices_buf\n", "").replace(
        "def forward(self, q, kv, batch):", "def forward(self, q, kv, topk_indices):").format(before=before, elsewhere="pass")


@pytest.mark.parametrize("write", ["topk_indices[:, 0].masked_fill_(topk_indices[:, 0] >= 24, -1)",
                                   "topk_indices.data.fill_(-1)", "topk_indices.view(-1)[::2] = -1",
                                   "topk_indices.unsqueeze(0)[0].copy_(topk_indices.flip(-1))"])
def test_indices_written_through_a_view_refuse(tmp_path, write):
    (site,) = migrate_source(_handed(write), str(tmp_path / "backend.py"), kernel=KERNEL).sites
    assert site.status is Status.MANUAL and write.split("=")[0].strip()[:20] in site.reason, site.reason


def test_q_values_changed_in_place_through_a_view_keep_its_rows(tmp_path):
    """`q[..., 64:].mul_(s)` (a rotary or scale on part of each row) changes values, never which row is where."""
    (site,) = migrate_source(_handed("q[..., 64:].mul_(0.5)"), str(tmp_path / "backend.py"), kernel=KERNEL).sites
    assert site.status is Status.FIXABLE, site.reason


# -- round O: writes into the indices the traces did not see (each one fixable before the mechanism named) ----
@pytest.mark.parametrize("before", [
    "self.sinks.apply(topk_indices)",  # an object's method: `_may_mutate` took a non-name receiver as pure
    "self.ops.topk.add_sink(topk_indices)",
    "torch.ops.fork.add_sink(topk_indices)",  # a custom op may mutate its arguments
    "operator.setitem(topk_indices, 0, 0)",
    "torch.sort(topk_indices, dim=-1, out=(topk_indices, self.perm))",  # out= a tuple, or a view
    "torch.sort(topk_indices[:, 0], out=(topk_indices[:, 0], self.perm))",
    "topk_indices.data = topk_indices.sort(dim=-1).values",  # the storage swapped
    "sink = topk_indices[:, :, -1:]\n        sink += 1",  # an augmented assignment through a view
    "topk_indices.ravel().index_fill_(0, self.slots, 0)",
    "self._topk = topk_indices\n        self._add_sink()",  # stored on an object any code may write
])
def test_round_o_writes_into_the_indices_refuse(tmp_path, before):
    src = "import operator\n" + _handed(before)
    (site,) = migrate_source(src, str(tmp_path / "backend.py"), kernel=KERNEL).sites
    assert site.status is Status.MANUAL, site.reason


@pytest.mark.parametrize("value,fixable", [
    ("torch.where(topk_indices >= 0, topk_indices + 1, topk_indices)", True),  # an offset on the valid entries
    ("torch.where(topk_indices < 0, topk_indices + 1, topk_indices)", False),  # -1 turned into slot 0
    ("torch.where(topk_indices >= 0, topk_indices - 1, topk_indices)", False),  # valid entries may turn negative
    ("torch.cat([topk_indices, topk_indices.new_full((1,) + topk_indices.shape[1:], -1)])", True),  # rows appended
    ("torch.cat([topk_indices.new_full((1,) + topk_indices.shape[1:], -1), topk_indices])", False),  # prepended
    ("topk_indices[:, 0, :].unsqueeze(1)", True),  # INDEX_HEAD: the squeeze(1) of [s, 1, k]
    ("topk_indices[:, 1, :].unsqueeze(1)", False),
])
def test_round_o_index_steps(tmp_path, value, fixable):
    src = _handed(f"topk_indices = {value}")
    (site,) = migrate_source(src, str(tmp_path / "backend.py"), kernel=KERNEL).sites
    assert (site.status is Status.FIXABLE) is fixable, site.reason


def test_round_o_indices_from_another_modules_state_refuse(tmp_path):
    src = HELD.replace("topk_indices = batch.topk_indices_buf", "topk_indices = dsa_context.topk_indices").replace(
        "import torch\n", "import torch\nfrom engine import dsa_context\n").format(before="pass", elsewhere="pass")
    (site,) = migrate_source(src, str(tmp_path / "backend.py"), kernel=KERNEL).sites
    assert site.status is Status.MANUAL and "an import" in site.reason, site.reason


# -- round P: writes into the indices the traces did not see, and steps that change them --------------------
@pytest.mark.parametrize("before", [
    "self._sort_rows(topk_indices[:, 0, :])",  # a view handed to a method that may sort it in place
    "torch.nn.functional.relu(topk_indices, inplace=True)",  # an `inplace=` keyword
    "torch.nn.functional.threshold(topk_indices, 100, -1, True)",  # `inplace` by position
    "topk_indices.__setitem__((slice(None), 0, 0), -1)",  # a writing dunder
    "topk_indices.__iand__(self.mask)",
    "fill = topk_indices.masked_fill_\n        fill(self.mask, -1)",  # an in-place method taken as a value
    "getattr(topk_indices, 'masked_fill_')(self.mask, -1)",
    "functools.partial(torch.Tensor.masked_fill_, topk_indices)(self.mask, -1)",
    "numpy.putmask(topk_indices.numpy(), self.mask, -1)",  # numpy writes the arrays it is handed
    "topk_indices.numpy()[:, 0, 0] = -1",  # `.numpy()` shares the tensor's storage
])
def test_round_p_writes_into_the_indices_refuse(tmp_path, before):
    src = "import functools\nimport numpy\n" + _handed(before)
    (site,) = migrate_source(src, str(tmp_path / "backend.py"), kernel=KERNEL).sites
    assert site.status is Status.MANUAL, site.reason


@pytest.mark.parametrize("value,fixable", [
    ("topk_indices.to(torch.int32)", True),
    ("topk_indices.to(q.device)", True),
    ("topk_indices.to(torch.uint8).int()", False),  # -1 becomes 255, a valid slot
    ("topk_indices.view(torch.int16).int()", False),  # each entry split in two
    ("topk_indices.view(topk_indices.shape[0], -1).unsqueeze(1)", True),
    ("torch.cat([topk_indices, torch.full((1,) + topk_indices.shape[1:], -1, dtype=torch.int32)])", True),
    ("torch.cat([topk_indices, self.other_topk])", False),  # two selections: in q's order?
])
def test_round_p_index_steps(tmp_path, value, fixable):
    src = _handed(f"topk_indices = {value}")
    (site,) = migrate_source(src, str(tmp_path / "backend.py"), kernel=KERNEL).sites
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("before,fixable", [
    # round P: the same tensor under another name, written in place before the call
    ("self.topk_buffer[:] = self.topk_buffer.sort(dim=-1).values", False),  # held on self, handed as the indices
    ("budget = kv.new_zeros(4)\n        self.topk_buffer.masked_fill_(self.topk_buffer > 9, -1)", False),
    ("buf = REGISTRY['topk']\n        buf.copy_(buf.flip(-1))", False),  # a module global
    ("self._trim()", False),  # a method of the module writing an attribute of self in place
    ("pad = kv.new_zeros(4)\n        pad[:2] = 1", True),  # a fresh tensor
    ("q[..., 64:].mul_(0.5)", True),  # q's own values
])
def test_round_p_writes_under_another_name(tmp_path, before, fixable):
    src = "REGISTRY = {}\n" + _handed(before).replace(
        "    def forward(", "    def _trim(self):\n        self.topk_buffer.masked_fill_(self.topk_buffer > 9, -1)\n\n    def forward(")
    (site,) = migrate_source(src, str(tmp_path / "backend.py"), kernel=KERNEL).sites
    assert (site.status is Status.FIXABLE) is fixable and (fixable or "under another name" in site.reason), site.reason


@pytest.mark.parametrize("before", [
    "buf = torch.as_tensor(topk_indices)\n        buf[:, 0, 0] = -1",  # round Q: as_tensor hands the tensor back
    "topk_indices = {'k': topk_indices.flip(-1)}['k']",  # a dict display read by key: its values are traced
])
def test_round_q_indices_refuse(tmp_path, before):
    (site,) = migrate_source(_handed(before), str(tmp_path / "backend.py"), kernel=KERNEL).sites
    assert site.status is Status.MANUAL, site.reason


@pytest.mark.parametrize("operand, fixable", [("forward_batch.seq_lens", True), ("forward_batch.cache_seqlens_int32", True),
                                              ("forward_batch.positions", False), ("forward_batch.req_pool_indices", False),
                                              ("forward_batch.extend_seq_lens", False), ("lens", False)])
def test_the_clips_operand_must_say_it_holds_seqlens(tmp_path, operand, fixable):
    """Round Q's operand_positions: the clip's operand read by its name is seqlens only where the name says so (an
    allowlist, SEQLENS_NAME); any other attribute (`positions`, each row's position, not its cached length) refuses."""
    src = LENGTHS_WRITTEN.format(imports="", write="pass").replace(
        "    def forward(self, q, kv, indices):\n",
        "    def init_forward_metadata(self, forward_batch, lens):\n        md = DSAMetadata()\n"
        f"        md.dsa_cache_seqlens_int32 = torch.clamp({operand}, max=self.dsa_index_topk).to(torch.int32)\n"
        "        self.forward_metadata = md\n\n    def forward(self, q, kv, indices):\n")
    (site,) = migrate_source(src, str(tmp_path / "backend.py"), kernel=KERNEL).sites
    assert (site.status is Status.FIXABLE) is fixable, (operand, site.reason)
    assert fixable or "dsa_cache_seqlens_int32" in site.reason, site.reason


@pytest.mark.parametrize("width, fixable", [("get_dsa_index_topk(config)", True), ("dsa_index_topk", True),
                                            ("2 * dsa_index_topk", False), ("4096", False), ("config.max_seq_len", False)])
def test_the_width_attribute_is_what_the_module_assigns_it(tmp_path, width, fixable):
    """Round Q's width_attr_wrong: `self.dsa_index_topk` is read by what the module assigns it (the engine's getter,
    or a constructor's parameter judged by its name), not by its own name: `2 * width` is another width."""
    src = LENGTHS_WRITTEN.format(imports="", write="pass").replace(
        "class Backend:\n    forward_metadata: DSAMetadata\n",
        "def get_dsa_index_topk(config):\n    return config.index_topk\n\n\nclass Backend:\n    forward_metadata: DSAMetadata\n\n"
        f"    def __init__(self, config, dsa_index_topk=None):\n        self.dsa_index_topk = {width}\n").replace(
        "    def forward(self, q, kv, indices):\n",
        "    def init_forward_metadata(self, forward_batch):\n        md = DSAMetadata()\n"
        "        md.dsa_cache_seqlens_int32 = torch.clamp(forward_batch.seq_lens, max=self.dsa_index_topk).to(torch.int32)\n"
        "        self.forward_metadata = md\n\n    def forward(self, q, kv, indices):\n")
    (site,) = migrate_source(src, str(tmp_path / "backend.py"), kernel=KERNEL).sites
    assert (site.status is Status.FIXABLE) is fixable, (width, site.reason)


# Round R1: a def the indices trace reads must be what the call runs (rows.unproven_local).
PREP_SHAPE = """\
import functools
import torch
from sgl_kernel.flash_mla import flash_mla_sparse_fwd


class DSAMetadata:
    dsa_cache_seqlens_int32: torch.Tensor


def _keep(indices):
    return indices


def _coalesce(indices):
    return indices.sort(dim=-1).values


{module}


class Backend:
    forward_metadata: DSAMetadata

    def __init__(self, metadata):
        self.forward_metadata = metadata
{init}

    def _prepare_topk(self, indices):
        return indices

    def _coalesced(self, indices):
        return indices.sort(dim=-1).values
{methods}

    def forward(self, q, kv, indices, scale):
        metadata = self.forward_metadata
        indices = {prep}
        return self._forward_flashmla_sparse(q, kv, indices, scale)

    def _forward_flashmla_sparse(self, q_all, kv_cache, indices, sm_scale):
        return flash_mla_sparse_fwd(q=q_all, kv=kv_cache, indices=indices, sm_scale=sm_scale)[0]
{after}
"""
PREP_CASES = {  # name: (fixable, {part: text})
    "plain_method": (True, {"prep": "self._prepare_topk(indices)"}),
    "plain_function": (True, {"prep": "_keep(indices)"}),
    "function_rebound": (False, {"prep": "_keep(indices)", "module": "if torch.cuda.is_available():\n    _keep = _coalesce"}),
    "function_decorated": (False, {"prep": "_wrapped(indices)",
                                   "module": "@functools.lru_cache(None)\ndef _wrapped(indices):\n    return indices"}),
    "instance_attribute": (False, {"prep": "self._prepare_topk(indices)",
                                   "init": "        self._prepare_topk = self._coalesced"}),
    "class_body_alias": (False, {"prep": "self._prepare_topk(indices)",
                                 "after": "\n\nclass Coalesced(Backend):\n    _prepare_topk = Backend._coalesced"}),
    "patched_on_class": (False, {"prep": "self._prepare_topk(indices)", "after": "\n\nBackend._prepare_topk = _coalesce"}),
    "class_decorator": (False, {"prep": "self._prepare_topk(indices)",
                                "module": "def sorting(cls):\n    cls._prepare_topk = cls._coalesced\n    return cls"}),
    "recursive": (False, {"prep": "self._again(indices, 2)",
                          "methods": "\n    def _again(self, indices, n):\n        return indices if n == 0 else "
                                     "self._again(indices.sort(dim=-1).values, n - 1)"}),
    "classmethod_klass": (False, {"prep": "self._as_int32(indices.sort(dim=-1).values)",
                                  "methods": "\n    @classmethod\n    def _as_int32(klass, topk):\n        return topk.to(torch.int32)"}),
}


@pytest.mark.parametrize("case", sorted(PREP_CASES))
def test_a_def_the_indices_trace_reads_is_what_the_call_runs(tmp_path, case):
    fixable, parts = PREP_CASES[case]
    src = PREP_SHAPE.format(**{k: "" for k in ("module", "init", "methods", "after")} | parts)
    if case == "class_decorator":
        src = src.replace("class Backend:", "@sorting\nclass Backend:")
    (site,) = migrate_source(src, str(tmp_path / "backend.py"), kernel=KERNEL).sites
    assert (site.status is Status.FIXABLE) is fixable, (case, site.reason)


def test_a_method_the_trace_reads_overridden_in_another_file_refuses(tmp_path):
    """Round R1's u_subclass_other_file_prep_override: a subclass in another file overrides the method the trace
    read; `self` may be its instance (whole_project.method_rival)."""
    (tmp_path / ".git").mkdir()
    src = PREP_SHAPE.format(module="", init="", methods="", after="", prep="self._prepare_topk(indices)")
    (tmp_path / "backend.py").write_text(src)
    (site,) = migrate_source(src, str(tmp_path / "backend.py"), kernel=KERNEL).sites
    assert site.status is Status.FIXABLE, site.reason
    (tmp_path / "fork.py").write_text("from backend import Backend\n\n\nclass Sorted(Backend):\n"
                                      "    def _prepare_topk(self, indices):\n        return indices.sort(dim=-1).values\n")
    (site,) = migrate_source(src, str(tmp_path / "backend.py"), kernel=KERNEL).sites
    assert site.status is Status.MANUAL and "fork.py" in site.reason, site.reason


# Round R2: the field's clip read by its value, not a name.
@pytest.mark.parametrize("write, fixable", [
    ("md.dsa_cache_seqlens_int32 = compute_dsa_seqlens(forward_batch.seq_lens, self.dsa_index_topk)", True),
    ("md.dsa_cache_seqlens_int32 = torch.clamp(forward_batch.seq_lens, max=self.dsa_index_topk)", True),
    # a clamp in place returns its receiver: the field would be that buffer
    ("md.dsa_cache_seqlens_int32 = forward_batch.seq_lens.clamp_(max=self.dsa_index_topk)", False),
    # int16 wraps lengths past 32767 before the clamp
    ("md.dsa_cache_seqlens_int32 = torch.clamp(forward_batch.seq_lens.to(torch.int16), max=self.dsa_index_topk)", False),
    # the field read back off an earlier step's object: a call's result, a module cache
    ("md.dsa_cache_seqlens_int32 = self._previous().dsa_cache_seqlens_int32", False),
    ("md.dsa_cache_seqlens_int32 = _CACHE[0].dsa_cache_seqlens_int32", False),
])
def test_the_fields_clip_is_read_by_value(tmp_path, write, fixable):
    src = LENGTHS_WRITTEN.format(imports="from sglang.srt.layers.attention.dsa.utils import compute_dsa_seqlens\n_CACHE = {}",
                                 write="pass").replace(
        "    def forward(self, q, kv, indices):\n",
        f"    def init_forward_metadata(self, forward_batch):\n        md = DSAMetadata()\n        {write}\n"
        "        self.forward_metadata = md\n\n    def forward(self, q, kv, indices):\n")
    (site,) = migrate_source(src, str(tmp_path / "backend.py"), kernel=KERNEL).sites
    assert (site.status is Status.FIXABLE) is fixable, (write, site.reason)


def test_a_forks_own_clip_of_the_engines_name_is_not_the_engines(tmp_path):
    """Round R2's u_vendored_compute_dsa_seqlens: the clip counts by its name only as the engine's import."""
    src = LENGTHS_WRITTEN.format(imports="from forkops import compute_dsa_seqlens", write="pass").replace(
        "    def forward(self, q, kv, indices):\n",
        "    def init_forward_metadata(self, forward_batch):\n        md = DSAMetadata()\n"
        "        md.dsa_cache_seqlens_int32 = compute_dsa_seqlens(forward_batch.seq_lens, self.dsa_index_topk)\n"
        "        self.forward_metadata = md\n\n    def forward(self, q, kv, indices):\n")
    (site,) = migrate_source(src, str(tmp_path / "backend.py"), kernel=KERNEL).sites
    assert site.status is Status.MANUAL, site.reason


@pytest.mark.parametrize("params, fixable", [("self, idx, p", False), ("self, idx, **p", True)])
def test_a_lookup_by_key_is_no_narrowing_but_reads_no_parameters_getitem(params, fixable):
    """A string-key lookup is not a narrowing of the indices (issue 26); off a parameter, its class's `__getitem__`
    may hand back anything (round R's u_getitem_container_sorts): only `**kwargs`, a dict the call builds, passes."""
    src = f"class B:\n    def f({params}):\n        x = p['topk_indices']\n"
    tree = Tree(__import__("libcst").parse_module(src))
    node = tree.module.body[0].body.body[0].body.body[0].body[0].value
    assert (index_hazard(tree, node)[0] is None) is fixable, index_hazard(tree, node)[0]


@pytest.mark.parametrize("before, fixable", [
    ("n = p.topk_indices.shape[0]", True),  # a size read: no write
    ("helper(p)", False),  # the holder handed whole to a call that may write what it holds
    ("p.coalesce_topk()", False),  # a method of the holder may give the attribute another tensor (round R)
    ("helper(p.topk_indices)", False),  # the attribute handed to a call that may rewrite it (round R)
    ("helper({'idx': p.topk_indices})", False),
])
def test_indices_read_off_a_holder_parameter(before, fixable):
    src = f"class B:\n    def f(self, p, helper):\n        {before}\n        x = p.topk_indices\n"
    tree = Tree(__import__("libcst").parse_module(src))
    node = tree.module.body[0].body.body[0].body.body[1].body[0].value
    assert (index_hazard(tree, node)[0] is None) is fixable, index_hazard(tree, node)[0]


@pytest.mark.parametrize("attr, fixable", [("'other'", True), ("'topk_indices'", False), ("name", False)])
def test_the_attribute_set_by_name_in_another_method(attr, fixable):
    """Round S's u_frozen_holder_object_setattr: a frozen dataclass's `object.__setattr__` of the indices' attribute
    (or of a computed name) in another method is a write the trace does not read."""
    src = (f"class B:\n    def prep(self, fb, name):\n        object.__setattr__(fb, {attr}, fb.topk_indices.flip(-1))\n\n"
           "    def f(self, p):\n        x = p.topk_indices\n")
    tree = Tree(__import__("libcst").parse_module(src))
    node = tree.module.body[0].body.body[1].body.body[0].body[0].value
    assert (index_hazard(tree, node)[0] is None) is fixable, index_hazard(tree, node)[0]


@pytest.mark.parametrize("key, fixable", [("'idx'", True), ("'kv'", False)])
def test_a_lookup_by_literal_key_reads_the_value_under_that_key(key, fixable):
    """Round R's s_state_dict_local: a dict display of literal keys read by a literal key traces that value only."""
    src = f"class B:\n    def f(self, idx, kv):\n        state = {{'idx': idx, 'kv': kv.sort(dim=-1).values}}\n" \
          f"        x = state[{key}]\n"
    tree = Tree(__import__("libcst").parse_module(src))
    node = tree.module.body[0].body.body[0].body.body[1].body[0].value
    assert (index_hazard(tree, node)[0] is None) is fixable, index_hazard(tree, node)[0]


# Round T: an annotation of the holder (or of a parameter) is a claim; what the module and the project assign decide it.
ANNOTATED_HOLDER = """\
import torch
from dataclasses import dataclass
from sgl_kernel.flash_mla import flash_mla_sparse_fwd


@dataclass
class DSAMetadata:
    dsa_cache_seqlens_int32: torch.Tensor


@dataclass
class DSAExtendMetadata:
    extend_seq_lens: torch.Tensor


class Backend:
    forward_metadata: DSAMetadata

    def init_forward_metadata(self, forward_batch):
        if forward_batch.is_extend:
            self.forward_metadata = {extend}
        else:
            self.forward_metadata = DSAMetadata(dsa_cache_seqlens_int32=forward_batch.seq_lens.clamp(
                max=self.dsa_index_topk).to(torch.int32))

    def forward(self, q, kv, indices, sm_scale):
        metadata = self.forward_metadata
        return self._forward_flashmla_sparse(q, kv, indices, sm_scale)

    def _forward_flashmla_sparse(self, q, kv, indices, sm_scale):
        return flash_mla_sparse_fwd(q=q, kv=kv, indices=indices, sm_scale=sm_scale)[0]
"""


# The holder's only classes' construction, clipped: the reference shape the round-U tests edit.
CLIPPED_HOLDER = ANNOTATED_HOLDER.format(
    extend="DSAMetadata(dsa_cache_seqlens_int32=forward_batch.seq_lens.clamp(max=self.dsa_index_topk).to(torch.int32))")


@pytest.mark.parametrize("extend, form", [
    ("DSAExtendMetadata(extend_seq_lens=forward_batch.seq_lens)", "getattr"),  # another class: the annotation is wrong
    ("DSAMetadata(dsa_cache_seqlens_int32=forward_batch.seq_lens.clamp(max=self.dsa_index_topk).to(torch.int32))",
     "plain")])
def test_an_assignment_of_another_class_contradicts_the_holders_annotation(tmp_path, extend, form):
    src = ANNOTATED_HOLDER.format(extend=extend)
    (site,) = migrate_source(src, str(tmp_path / "backend.py"), kernel=KERNEL).sites
    assert site.status is Status.FIXABLE, site.reason
    read = {"getattr": 'topk_length=getattr(metadata, "dsa_cache_seqlens_int32", None)',
            "plain": "topk_length=metadata.dsa_cache_seqlens_int32)"}[form]
    assert read in migrate_source(src, str(tmp_path / "backend.py"), kernel=KERNEL).new_source


def test_a_call_handing_another_class_contradicts_a_parameters_annotation(tmp_path):
    src = ANNOTATED_HOLDER.format(extend="DSAMetadata(dsa_cache_seqlens_int32=forward_batch.seq_lens)").replace(
        "            self.forward_metadata = DSAMetadata(dsa_cache_seqlens_int32=forward_batch.seq_lens)\n",
        "            self.extend_metadata = DSAExtendMetadata(extend_seq_lens=forward_batch.seq_lens)\n").replace(
        "        else:\n", "        else:\n            self.extend_metadata = None\n").replace(  # (on every path: round AB)
        "    def forward(self, q, kv, indices, sm_scale):\n        metadata = self.forward_metadata\n",
        "    def forward_extend(self, q, kv, indices, sm_scale):\n"
        "        return self.forward(q, kv, indices, sm_scale, self.extend_metadata)\n\n"
        "    def forward(self, q, kv, indices, sm_scale, metadata: DSAMetadata):\n")
    assert "self.extend_metadata)" in src and "metadata: DSAMetadata" in src
    m = migrate_source(src, str(tmp_path / "backend.py"), kernel=KERNEL)
    assert m.sites[0].status is Status.FIXABLE, m.sites[0].reason
    assert 'topk_length=getattr(metadata, "dsa_cache_seqlens_int32", None)' in m.new_source


@pytest.mark.parametrize("runner, form", [
    ("def run_idle(backend, q, kv, indices, sm_scale):\n    backend.forward_metadata = None\n"
     "    return backend.forward(q, kv, indices, sm_scale)\n", "manual"),
    # a class decorator installing one descriptor for every instance (the draft's plan is the target's)
    ("def share_plan(cls):\n    cls.forward_metadata = SharedPlan()\n    return cls\n", "manual"),
    # another backend class's own holder is not this one's
    ("class OtherBackend:\n    def init(self):\n        self.forward_metadata = None\n", "plain")])
def test_another_file_assigning_the_holder_is_not_read_for_this_batch(tmp_path, runner, form):
    src = CLIPPED_HOLDER
    src += "\n\ndef entry(inp):\n    from model_runner import run_idle\n\n    return run_idle(Backend(), inp.q, inp.kv, inp.indices, 1.0)\n"
    if form == "plain":
        src = src.replace("    from model_runner import run_idle\n\n    return run_idle(Backend(), inp.q, inp.kv, inp.indices, 1.0)\n",
                          "    return Backend().forward(inp.q, inp.kv, inp.indices, 1.0)\n")
    (tmp_path / "model_runner.py").write_text(runner)
    (tmp_path / "backend.py").write_text(src)
    m = migrate_source(src, str(tmp_path / "backend.py"), kernel=KERNEL)
    if form == "manual":
        assert m.sites[0].status is Status.MANUAL and "another file of the project assigns" in m.sites[0].reason
        return
    assert m.sites[0].status is Status.FIXABLE, m.sites[0].reason
    assert "topk_length=metadata.dsa_cache_seqlens_int32)" in m.new_source


_SUBCLASS_INIT = "    def __init__(self, topk, hf_config):\n        super().__init__(topk)\n"


@pytest.mark.parametrize("subclass, fixable", [
    (_SUBCLASS_INIT + "        self.dsa_index_topk = hf_config['index_topk']\n", False),  # the width set again elsewhere
    # round AB: a subclass handing its own positional parameter to the width's, which its callers may give anything
    (_SUBCLASS_INIT + "        self.context_topk = hf_config['index_topk']\n", False),
    ("    def __init__(self, *args):\n        super().__init__(*args)\n        self.context_topk = 1\n", True)])
def test_a_subclass_in_another_file_setting_the_width_again_is_not_read(tmp_path, subclass, fixable):
    """Round T's u_other_file_subclass_resets_width: the width attribute is each value the project assigns it."""
    src = CLIPPED_HOLDER.replace("    forward_metadata: DSAMetadata\n", "    forward_metadata: DSAMetadata\n\n"
              "    def __init__(self, dsa_index_topk):\n        self.dsa_index_topk = dsa_index_topk\n")
    (tmp_path / "long_context.py").write_text(
        "from backend import Backend\n\n\nclass LongContextBackend(Backend):\n" + subclass)
    (tmp_path / "backend.py").write_text(src)
    (site,) = migrate_source(src, str(tmp_path / "backend.py"), kernel=KERNEL).sites
    assert (site.status is Status.FIXABLE) is fixable, site.reason


BATCH_ATTRIBUTE = """\
\"\"\"Fork backend; metadata.dsa_cache_seqlens_int32 holds seqlens clipped to topk.\"\"\"
from sgl_kernel.flash_mla import flash_mla_sparse_fwd


class Backend:
    def __init__(self, metadata):
        self.forward_metadata = metadata

    def forward(self, q, kv, forward_batch, scale):
        metadata = self.forward_metadata
        return self._forward_flashmla_sparse(q, kv, forward_batch.topk_indices, scale)

    def _forward_flashmla_sparse(self, q, kv, indices, sm_scale):
        return flash_mla_sparse_fwd(q=q, kv=kv, indices=indices, sm_scale=sm_scale)[0]
"""
# the indices handed to forward as a parameter (its callers in other files hand them)
HANDED_INDICES = BATCH_ATTRIBUTE.replace("def forward(self, q, kv, forward_batch, scale):",
                                         "def forward(self, q, kv, topk_indices, scale):").replace(
    "forward_batch.topk_indices", "topk_indices")


def _site(tmp_path, src, **kwargs):
    """The one site of backend.py (written beside the other files the test wrote) as migrate_source decides it."""
    (tmp_path / "backend.py").write_text(src)
    (site,) = migrate_source(src, str(tmp_path / "backend.py"), **kwargs).sites
    return site


@pytest.mark.parametrize("batch, fixable", [
    ("    def __init__(self, topk_indices):\n        self.topk_indices = topk_indices\n", True),
    ("    def __init__(self, topk_indices):\n        self.topk_indices = topk_indices.sort(dim=-1).values\n", False),
    ("    def __init__(self, raw):\n        self.raw = raw\n\n    @property\n    def topk_indices(self):\n"
     "        return self.raw.masked_fill(self.raw < 8, -1)\n", False)])
def test_the_indices_read_off_another_files_batch_class_are_what_it_makes_them(tmp_path, batch, fixable):
    """Round T's u_holder_property_other_file / u_holder_init_sorts_other_file: an attribute the indices are
    read off is what every file makes it; a value another file computes (or a property serves) is not read."""
    (tmp_path / "batch_info.py").write_text("class ForwardBatch:\n" + batch)
    (tmp_path / "backend.py").write_text(BATCH_ATTRIBUTE)
    (site,) = migrate_source(BATCH_ATTRIBUTE, str(tmp_path / "backend.py"), kernel=KERNEL).sites
    assert (site.status is Status.FIXABLE) is fixable, site.reason
    assert fixable or "may be made by another file" in site.reason


KWARGS_BACKEND = """\
\"\"\"Fork backend; metadata.dsa_cache_seqlens_int32 holds seqlens clipped to topk.\"\"\"
from sgl_kernel.flash_mla import flash_mla_sparse_fwd


class Backend:
    def __init__(self, metadata):
        self.forward_metadata = metadata

    def forward(self, q, kv, scale, **kwargs):
        metadata = self.forward_metadata
        return self._forward_flashmla_sparse(q, kv, kwargs["topk_indices"], scale)

    def _forward_flashmla_sparse(self, q, kv, indices, sm_scale):
        return flash_mla_sparse_fwd(q=q, kv=kv, indices=indices, sm_scale=sm_scale)[0]
"""


@pytest.mark.parametrize("key, fixable", [("topk_indices", False), ("layer_window", False)])
def test_a_caller_writing_the_entry_of_kwargs_the_function_reads_is_seen(tmp_path, key, fixable):
    """Round T's u_kwargs_same_name_layer_masks_entry: the entries the function reads off its `**kwargs` are traced
    at its callers in other files, as its parameters are; another entry written in place may be a view of the
    indices (round W's u_wrapper_kwargs_sibling_entry), and is refused too."""
    (tmp_path / "layer.py").write_text(
        "class SparseAttention:\n    def __init__(self, attn_backend):\n        self.attn_backend = attn_backend\n\n"
        "    def forward(self, q, kv, scale, **kwargs):\n"
        f"        sel = kwargs[{key!r}]\n        sel.masked_fill_(sel < 20, -1)\n"
        "        return self.attn_backend.forward(q, kv, scale, **kwargs)\n")
    (tmp_path / "backend.py").write_text(KWARGS_BACKEND)
    (site,) = migrate_source(KWARGS_BACKEND, str(tmp_path / "backend.py"), kernel=KERNEL).sites
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("keyword, fixable", [("indices", False), ("topk_indices", False),
                                              ("window", False)])  # (round AT: a keyword the traced function does
# not take, its indices not handed: another function of the name, whose parameters are not read)
def test_a_callers_keyword_named_as_an_override_names_the_place_is_traced(tmp_path, keyword, fixable):
    """Round T's u_override_renamed_param_keyword_caller: a subclass in another file renames the indices' parameter;
    a caller's keyword of that name lands there on its instances."""
    src = HANDED_INDICES
    (tmp_path / "mtp.py").write_text(
        "from backend import Backend\n\n\nclass MTPBackend(Backend):\n    def forward(self, q, kv, indices, scale):\n"
        "        return super().forward(q, kv, indices, scale)\n\n\n"
        "def run_verify(backend: MTPBackend, q, kv, topk, scale, window=None):\n"
        f"    return backend.forward(q, kv, scale=scale, {keyword}=topk.sort(dim=-1).values)\n")
    (tmp_path / "backend.py").write_text(src)
    (site,) = migrate_source(src, str(tmp_path / "backend.py"), kernel=KERNEL).sites
    assert (site.status is Status.FIXABLE) is fixable, site.reason


VENDORED_CALLER = """\
\"\"\"Fork backend; metadata.dsa_cache_seqlens_int32 holds seqlens clipped to topk.\"\"\"
import os
import sys

from sgl_kernel.flash_mla import flash_mla_sparse_fwd

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "third_party"))
from fast_topk_ops import sliding_window_mask  # noqa: E402


class Backend:
    def __init__(self, metadata):
        self.forward_metadata = metadata

    def forward(self, q, kv, topk_indices, scale):
        metadata = self.forward_metadata
        sliding_window_mask(topk_indices, 20)
        return self._forward_flashmla_sparse(q, kv, topk_indices, scale)

    def _forward_flashmla_sparse(self, q, kv, indices, sm_scale):
        return flash_mla_sparse_fwd(q=q, kv=kv, indices=indices, sm_scale=sm_scale)[0]
"""


@pytest.mark.parametrize("own_distribution, fixable", [(False, False), (True, True)])
def test_a_module_the_tree_ships_is_the_forks_code_not_a_library(tmp_path, own_distribution, fixable):
    """Round T's u_vendored_helper_masks_inplace: a module put on sys.path from the tree at run time is read as the
    project's (a call handed the indices may write them); one under a folder that is a distribution of its own (a
    monorepo's kernel package) stays a library."""
    pkg = tmp_path / "third_party" / "fast_topk_ops"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("def sliding_window_mask(topk_indices, start):\n"
                                     "    topk_indices.masked_fill_(topk_indices < start, -1)\n")
    if own_distribution:
        (tmp_path / "third_party" / "pyproject.toml").write_text("[project]\nname = 'fast-topk-ops'\n")
    (tmp_path / "backend.py").write_text(VENDORED_CALLER)
    (site,) = migrate_source(VENDORED_CALLER, str(tmp_path / "backend.py"), kernel=KERNEL).sites
    assert (site.status is Status.FIXABLE) is fixable, site.reason


GRAPH_PER_CAPTURE = """\
import torch
from dataclasses import dataclass
from sgl_kernel.flash_mla import flash_mla_sparse_fwd


@dataclass
class DSAMetadata:
    dsa_cache_seqlens_int32: torch.Tensor


class Backend:
    def __init__(self, dsa_index_topk):
        self.dsa_index_topk = dsa_index_topk
        self.forward_metadata = None
        self.graph_metadata = {}
        self.graph_lens = torch.zeros(64, dtype=torch.int32)

    def init_forward_metadata_capture_cuda_graph(self, bs, seq_lens):
{capture}

    def init_forward_metadata_replay_cuda_graph(self, bs, seq_lens):
{replay}

    def forward(self, q, kv, topk_indices, sm_scale):
        metadata = self.forward_metadata
        return self._forward_flashmla_sparse(q, kv, topk_indices, sm_scale)

    def _forward_flashmla_sparse(self, q, kv, indices, sm_scale):
        return flash_mla_sparse_fwd(q=q, kv=kv, indices=indices, sm_scale=sm_scale)[0]
"""
_CLIP = "seq_lens.clamp(max=self.dsa_index_topk).to(torch.int32)"


def _graph_site(tmp_path, capture: str, replay: str, methods: str = ""):
    """The one site of GRAPH_PER_CAPTURE with these capture and replay bodies (`methods` added before `forward`), in a
    project pinning a kernel that takes topk_length."""
    src = GRAPH_PER_CAPTURE.replace("{capture}", "        " + capture).replace("{replay}", "        " + replay)
    src = src.replace("\n    def forward(", methods + "\n    def forward(")
    (tmp_path / "requirements.txt").write_text("sglang-kernel==0.4.6\n")
    (site,) = migrate_source(src, str(tmp_path / "backend.py")).sites
    return site


@pytest.mark.parametrize("capture, replay, fixable", [
    # each capture a new object in the holder, the replay writes the holder's: only the last graph's is updated
    (f"self.forward_metadata = DSAMetadata(dsa_cache_seqlens_int32={_CLIP})",
     f"self.forward_metadata.dsa_cache_seqlens_int32[:bs].copy_({_CLIP})", False),
    (f"self.forward_metadata = DSAMetadata(dsa_cache_seqlens_int32={_CLIP})",
     f"md = self.forward_metadata\n        md.dsa_cache_seqlens_int32[:bs].copy_({_CLIP})", False),
    # sglang's shape: each capture's object kept by batch size, the replay writes the one for this size
    (f"md = DSAMetadata(dsa_cache_seqlens_int32={_CLIP})\n        self.graph_metadata[bs] = md\n"
     "        self.forward_metadata = md",
     f"md = self.graph_metadata[bs]\n        md.dsa_cache_seqlens_int32.copy_({_CLIP})\n        self.forward_metadata = md",
     True)])
def test_a_replay_through_the_holder_reaches_only_the_last_captures_object(tmp_path, capture, replay, fixable):
    """Round T's u_graph_replay_updates_last_captured_holder."""
    site = _graph_site(tmp_path, capture, replay)
    assert (site.status is Status.FIXABLE) is fixable, site.reason
    assert fixable or "stores a new metadata object in the holder at each capture" in site.reason


@pytest.mark.parametrize("declaration, form", [
    ("    dsa_cache_seqlens_int32: torch.Tensor\n", "plain"),
    ("    dsa_cache_seqlens_int32: InitVar[torch.Tensor]\n", "getattr"),  # never stored (round U)
    ("    dsa_cache_seqlens_int32: ClassVar[torch.Tensor]\n", "getattr")])
def test_a_dataclass_field_is_stored_only_where_dataclasses_store_it(tmp_path, declaration, form):
    src = ANNOTATED_HOLDER.format(extend="DSAMetadata(dsa_cache_seqlens_int32=forward_batch.seq_lens.clamp("
                                         "max=self.dsa_index_topk).to(torch.int32))").replace(
        "from dataclasses import dataclass\n", "from dataclasses import InitVar, dataclass\nfrom typing import ClassVar\n"
    ).replace("class DSAMetadata:\n    dsa_cache_seqlens_int32: torch.Tensor\n", "class DSAMetadata:\n" + declaration)
    m = migrate_source(src, str(tmp_path / "backend.py"), kernel=KERNEL)
    assert m.sites[0].status is Status.FIXABLE, m.sites[0].reason
    assert {"getattr": 'topk_length=getattr(metadata, "dsa_cache_seqlens_int32", None)',
            "plain": "topk_length=metadata.dsa_cache_seqlens_int32)"}[form] in m.new_source


def test_another_classs_annotation_of_the_holder_says_nothing_of_this_one(tmp_path):
    """Round U's u_sibling_class_annotation_types_holder: the holder's annotation is read in its own class and the
    bases this module defines."""
    src = ANNOTATED_HOLDER.format(extend="DSAExtendMetadata(extend_seq_lens=forward_batch.extend_seq_lens)").replace(
        "class Backend:\n    forward_metadata: DSAMetadata\n",
        "class DecodeBackend:\n    forward_metadata: DSAMetadata\n\n\nclass Backend:\n")
    m = migrate_source(src, str(tmp_path / "backend.py"), kernel=KERNEL)
    assert m.sites[0].status is Status.FIXABLE, m.sites[0].reason
    assert 'topk_length=getattr(metadata, "dsa_cache_seqlens_int32", None)' in m.new_source


@pytest.mark.parametrize("receiver", ["registry.get(name)", "registry[name]"])
def test_a_method_read_off_a_calls_result_may_be_unbound(tmp_path, receiver):
    """Round U's u_registry_lookup_unbound_call: `registry.get(name).forward(backend, ...)` may be the class's
    function called with the instance first; both readings of the arguments are checked."""
    src = HANDED_INDICES
    (tmp_path / "runner.py").write_text(
        f"def run(registry, name, backend, q, kv, topk, scale):\n    return {receiver}.forward(backend, q, kv, "
        "topk.sort(dim=-1).values, scale)\n")
    (tmp_path / "backend.py").write_text(src)
    (site,) = migrate_source(src, str(tmp_path / "backend.py"), kernel=KERNEL).sites
    assert site.status is Status.MANUAL and "runner.py" in site.reason, site.reason


@pytest.mark.parametrize("width, fixable", [
    ("DSA_INDEX_TOPK = get_dsa_index_topk(HF_CONFIG)", True),
    ("DSA_INDEX_TOPK = int(os.environ.get('DSA_INDEX_TOPK', '2048'))", False),  # round U: not the indices' width
    ("DSA_INDEX_TOPK = 2 * get_dsa_index_topk(HF_CONFIG)", False)])
@pytest.mark.parametrize("getter, proven", [
    ("def get_dsa_index_topk(config):\n    return config.index_topk\n", True),
    ("def get_dsa_index_topk(config):\n    return config['index_topk']\n", True),
    ("def get_dsa_index_topk(config):\n    return config.get('index_topk')\n", True),  # round W's safe twin
    # round U's u_fork_width_getter_rounds_up: a fork's getter named like the engine's is read by its returns
    ("def get_dsa_index_topk(config):\n    return (config.index_topk + 63) // 64 * 64\n", False)])
def test_a_module_width_is_what_the_module_assigns_it_and_its_getter_returns(tmp_path, width, fixable, getter, proven):
    src = LENGTHS_WRITTEN.format(imports="import json\nimport os\n", write="pass").replace(
        "class Backend:\n    forward_metadata: DSAMetadata\n",
        f"HF_CONFIG = json.load(open('config.json'))\n\n\n{getter}\n\n{width}\n\n\n"
        "class Backend:\n    forward_metadata: DSAMetadata\n\n").replace(
        "    def forward(self, q, kv, indices):\n",
        "    def init_forward_metadata(self, forward_batch):\n        md = DSAMetadata()\n"
        "        md.dsa_cache_seqlens_int32 = torch.clamp(forward_batch.seq_lens, max=DSA_INDEX_TOPK).to(torch.int32)\n"
        "        self.forward_metadata = md\n\n    def forward(self, q, kv, indices):\n")
    (site,) = migrate_source(src, str(tmp_path / "backend.py"), kernel=KERNEL).sites
    assert (site.status is Status.FIXABLE) is (fixable and proven), (width, getter, site.reason)


@pytest.mark.parametrize("meta, fixable", [
    # a registry: the namespace handed to type as it is
    ("    def __new__(mcs, name, bases, namespace):\n        cls = super().__new__(mcs, name, bases, namespace)\n"
     "        REGISTRY[name] = cls\n        return cls\n", True),
    # round U's u_base_metaclass_wraps_namespace: the helper wrapped in the namespace before the class exists
    ("    def __new__(mcs, name, bases, namespace):\n        for key, value in list(namespace.items()):\n"
     "            namespace[key] = value\n        return super().__new__(mcs, name, bases, namespace)\n", False),
    ("    @classmethod\n    def __prepare__(mcs, name, bases):\n        return {}\n", False),
    ("    def __new__(mcs, name, bases, namespace):\n        cls = super().__new__(mcs, name, bases, namespace)\n"
     "        cls.extra = 1\n        return cls\n", False)])
def test_a_metaclass_of_a_base_in_another_file_is_read(tmp_path, meta, fixable):
    (tmp_path / "base.py").write_text(f"REGISTRY = {{}}\n\n\nclass Meta(type):\n{meta}\n\nclass AttentionBackend(metaclass=Meta):\n"
                                      "    pass\n")
    src = KWARGS_BACKEND.replace("class Backend:", "from base import AttentionBackend\n\n\nclass Backend(AttentionBackend):")
    (tmp_path / "backend.py").write_text(src)
    (site,) = migrate_source(src, str(tmp_path / "backend.py"), kernel=KERNEL).sites
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("wrapper, fixable", [
    ("class Balanced:\n    def __init__(self, inner):\n        self.inner = inner\n\n"
     "    def __getattr__(self, name):\n        return getattr(self.inner, name)\n", False),
    # round U: the hook in a base of the project, bound in the class body, or a library base's
    ("class Proxy:\n    def __getattr__(self, name):\n        return getattr(self.inner, name)\n\n\n"
     "class Balanced(Proxy):\n    def __init__(self, inner):\n        self.inner = inner\n", False),
    ("def delegate(attr):\n    return lambda self, name: getattr(getattr(self, attr), name)\n\n\n"
     "class Balanced:\n    __getattr__ = delegate('inner')\n", False),
    ("import wrapt\n\n\nclass Balanced(wrapt.ObjectProxy):\n    pass\n", False),
    # its own forward: the lookup finds it first
    ("import wrapt\n\n\nclass Balanced(wrapt.ObjectProxy):\n    def forward(self, q, kv, topk_indices, scale):\n"
     "        return q\n", True)])
def test_a_self_call_in_a_class_whose_lookup_may_forward_is_a_caller(tmp_path, wrapper, fixable):
    src = HANDED_INDICES
    (tmp_path / "balanced.py").write_text(
        wrapper + "\n\nclass Runner(Balanced):\n    def step(self, q, kv, topk, scale):\n"
        "        order = topk[:, 0, 0].argsort()\n        return self.forward(q[order], kv, topk[order], scale)\n")
    (tmp_path / "backend.py").write_text(src)
    (site,) = migrate_source(src, str(tmp_path / "backend.py"), kernel=KERNEL).sites
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("pick, call", [
    ("def _pick(self, *candidates):\n        windowed, full = candidates\n        return windowed",
     "self._pick(topk_indices.masked_fill(topk_indices < 20, -1), topk_indices)"),
    ("def _pick(self, **candidates):\n        return candidates['windowed']",
     "self._pick(windowed=topk_indices.masked_fill(topk_indices < 20, -1), full=topk_indices)")])
def test_what_a_local_helper_takes_in_star_parameters_is_traced(tmp_path, pick, call):
    """Round U's u_star_args_picker_untraced / u_star_kwargs_picker_untraced."""
    src = BATCH_ATTRIBUTE.replace("def forward(self, q, kv, forward_batch, scale):", "def forward(self, q, kv, topk_indices, scale):") \
        .replace("forward_batch.topk_indices", f"{call}").replace(
            "    def _forward_flashmla_sparse", f"    {pick}\n\n    def _forward_flashmla_sparse")
    (site,) = migrate_source(src, str(tmp_path / "backend.py"), kernel=KERNEL).sites
    assert site.status is Status.MANUAL and "masked_fill" in site.reason, site.reason


@pytest.mark.parametrize("made", ["IndexerOutput(topk_indices=raw.masked_fill(raw < 20, -1))",
                                  "IndexerOutput(raw.masked_fill(raw < 20, -1))"])
def test_a_records_field_the_indices_are_read_off_is_what_its_construction_hands_it(tmp_path, made):
    """Round U's u_dataclass_holder_field_by_constructor."""
    src = BATCH_ATTRIBUTE.replace("class Backend:", "import dataclasses\n\n\n@dataclasses.dataclass\nclass IndexerOutput:\n"
                                  f"    topk_indices: object\n\n\ndef select(raw):\n    return {made}\n\n\nclass Backend:")
    (site,) = migrate_source(src, str(tmp_path / "backend.py"), kernel=KERNEL).sites
    assert site.status is Status.MANUAL and "masked_fill" in site.reason, site.reason


@pytest.mark.parametrize("stage, fixable", [
    ("lengths = metadata.dsa_cache_seqlens_int32\n        lengths.copy_(forward_batch.seq_lens.to(torch.int32))", False),
    ("self.forward_metadata.dsa_cache_seqlens_int32[:2].fill_(0)", False),
    ("lengths = metadata.dsa_cache_seqlens_int32\n        n = int(lengths.max())", True)])
def test_the_function_passing_the_metadata_does_not_stage_its_field_in_place(tmp_path, stage, fixable):
    """Round U's u_inline_stage_through_tensor_alias / u_inline_stage_through_holder_path."""
    src = CLIPPED_HOLDER.replace("    def forward(self, q, kv, indices, sm_scale):\n        metadata = self.forward_metadata\n",
              "    def forward(self, q, kv, indices, sm_scale, forward_batch):\n        metadata = self.forward_metadata\n"
              f"        {stage}\n")
    (site,) = migrate_source(src, str(tmp_path / "backend.py"), kernel=KERNEL).sites
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("second, fixable", [
    ("DSAMetadata(dsa_cache_seqlens_int32=first.dsa_cache_seqlens_int32)", False),  # round U: one tensor, two records
    ("DSAMetadata(dsa_cache_seqlens_int32=first.dsa_cache_seqlens_int32.clone())", True)])
def test_a_record_given_another_records_field_tensor_shares_it(tmp_path, second, fixable):
    src = CLIPPED_HOLDER.replace("    def forward(self, q, kv, indices, sm_scale):\n",
              "    def plan_two(self, a, b):\n        first = DSAMetadata(dsa_cache_seqlens_int32=a.seq_lens.clamp("
              "max=self.dsa_index_topk).to(torch.int32))\n"
              f"        second = {second}\n"
              "        second.dsa_cache_seqlens_int32.copy_(b.seq_lens.clamp(max=self.dsa_index_topk).to(torch.int32))\n"
              "        return first, second\n\n    def forward(self, q, kv, indices, sm_scale):\n")
    (site,) = migrate_source(src, str(tmp_path / "backend.py"), kernel=KERNEL).sites
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("runner, fixable", [
    ('MODES = {"decode": "forward"}\n\n\ndef run(backend, mode, q, kv, topk, scale):\n'
     "    return getattr(backend, MODES[mode])(q, kv, topk.sort(dim=-1).values, scale)\n", False),
    ('def run(backend, q, kv, topk, scale):\n    print("forward", q.shape)\n    return None\n', True)])
def test_a_method_name_kept_in_a_table_is_a_lookup(tmp_path, runner, fixable):
    """Round U's u_dispatch_table_method_name; a string handed to a call (a label) is not."""
    src = HANDED_INDICES
    (tmp_path / "runner.py").write_text(runner)
    (tmp_path / "backend.py").write_text(src)
    (site,) = migrate_source(src, str(tmp_path / "backend.py"), kernel=KERNEL).sites
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("op, fixable", [("flash_mla_sparse_fwd as _op", True), ("legacy_fwd as _op", False)])
def test_a_kwargs_wrapper_is_decided_by_the_op_it_hands_them_only_where_that_is_the_kernel(tmp_path, op, fixable):
    """Round U's u_wrapper_kwargs_to_renamed_op: pins decide the kernel a wrapper is named for, not another op of
    its module."""
    (tmp_path / "requirements.txt").write_text("sglang-kernel==0.4.6\n")
    (tmp_path / "fork_ops").mkdir()
    (tmp_path / "fork_ops" / "__init__.py").write_text("")
    (tmp_path / "fork_ops" / "sparse.py").write_text(
        f"from sgl_kernel.flash_mla import {op}\n\n\n"
        "def flash_mla_sparse_fwd(q, kv, indices, sm_scale, d_v=512, attn_sink=None, **kwargs):\n"
        "    return _op(q, kv, indices, sm_scale, d_v, attn_sink, **kwargs)\n")
    src = KWARGS_BACKEND.replace("from sgl_kernel.flash_mla import flash_mla_sparse_fwd",
                                 "from fork_ops.sparse import flash_mla_sparse_fwd")
    (tmp_path / "backend.py").write_text(src)
    (site,) = migrate_source(src, str(tmp_path / "backend.py")).sites
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("made, fixable", [
    ('Fp8 = type("Fp8", (Backend,), {"_forward_flashmla_sparse": lambda self, *a: None})', False),
    ('kind = type(Backend)', True)])  # type's one-argument form makes nothing
def test_a_class_made_at_run_time_in_the_module_may_override_the_helper(tmp_path, made, fixable):
    """Round U's u_type_made_subclass_same_module."""
    src = KWARGS_BACKEND + f"\n\n{made}\n"
    (site,) = migrate_source(src, str(tmp_path / "backend.py"), kernel=KERNEL).sites
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("write, fixable", [("topk_2d.masked_fill_(topk_2d < 20, -1)", False),
                                            ("n = int(topk_2d.max())", True)])
def test_a_caller_writing_a_sibling_of_the_indices_in_place_is_seen(tmp_path, write, fixable):
    """Round U's u_module_caller_masks_sibling_view (this module) and u_other_file_caller_masks_sibling_param."""
    src = HANDED_INDICES
    here = src + ("\n    def forward_decode(self, q, kv, topk_indices, topk_2d, scale):\n"
                  f"        {write}\n        return self.forward(q, kv, topk_indices, scale)\n")
    (site,) = migrate_source(here, str(tmp_path / "backend.py"), kernel=KERNEL).sites
    assert (site.status is Status.FIXABLE) is fixable, site.reason
    (tmp_path / "layer.py").write_text("def run(backend, q, kv, topk_indices, topk_2d, scale):\n"
                                       f"    {write}\n    return backend.forward(q, kv, topk_indices, scale)\n")
    (tmp_path / "backend.py").write_text(src)
    (site,) = migrate_source(src, str(tmp_path / "backend.py"), kernel=KERNEL).sites
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("capture, replay, fixable", [
    # round U's u_graph_replay_record_copy_reversed: the copy goes into a record made on replay, no graph's
    (f"md = DSAMetadata(dsa_cache_seqlens_int32={_CLIP})\n        self.graph_metadata[bs] = md\n"
     "        self.forward_metadata = md",
     f"step = DSAMetadata(dsa_cache_seqlens_int32={_CLIP})\n        step.dsa_cache_seqlens_int32.copy_("
     "self.graph_metadata[bs].dsa_cache_seqlens_int32)\n        self.forward_metadata = self.graph_metadata[bs]", False)])
def test_a_replay_writes_the_field_of_a_captured_object(tmp_path, capture, replay, fixable):
    site = _graph_site(tmp_path, capture, replay)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


def test_every_table_of_captured_metadata_is_updated_on_replay(tmp_path):
    """Round U's u_graph_replay_updates_one_mode_only: one mode's table is updated, the other's never."""
    capture = (f"md = DSAMetadata(dsa_cache_seqlens_int32={_CLIP})\n        if bs > 8:\n"
               "            self.verify_metadata[bs] = md\n        else:\n            self.graph_metadata[bs] = md\n"
               "        self.forward_metadata = md")
    replay = (f"if bs > 8:\n            md = self.verify_metadata[bs]\n            md.dsa_cache_seqlens_int32.copy_({_CLIP})\n"
              "        else:\n            md = self.graph_metadata[bs]\n        self.forward_metadata = md")
    src = GRAPH_PER_CAPTURE.replace("{capture}", "        " + capture).replace("{replay}", "        " + replay) \
        .replace("        self.graph_metadata = {}\n", "        self.graph_metadata = {}\n        self.verify_metadata = {}\n")
    (tmp_path / "requirements.txt").write_text("sglang-kernel==0.4.6\n")
    (site,) = migrate_source(src, str(tmp_path / "backend.py")).sites
    assert site.status is Status.MANUAL and "self.graph_metadata" in site.reason, site.reason
    both = src.replace("            md = self.graph_metadata[bs]\n",
                       f"            md = self.graph_metadata[bs]\n            md.dsa_cache_seqlens_int32.copy_({_CLIP})\n")
    (site,) = migrate_source(both, str(tmp_path / "backend.py")).sites
    assert site.status is Status.FIXABLE, site.reason


REPLANNED = CLIPPED_HOLDER.replace("    def forward(self, q, kv, indices, sm_scale):\n        metadata = self.forward_metadata\n",
          "    def forward(self, q, kv, indices, sm_scale, forward_batch):\n        metadata = self.forward_metadata\n"
          "        {call}\n")


@pytest.mark.parametrize("call, other, fixable", [
    # round U: a planner held on self plans the backend again, by name through another method
    ("self.planner.maybe_plan(forward_batch)", "", False),
    # round U: the batch, keeping a back-reference, plans it in another file
    ("forward_batch.ensure_attn_metadata()",
     "class ForwardBatch:\n    def ensure_attn_metadata(self):\n        self.backend.init_forward_metadata(self)\n", False),
    ("forward_batch.ensure_attn_metadata()",
     "class ForwardBatch:\n    def ensure_attn_metadata(self):\n        self.backend.forward_metadata = None\n", False),
    ("forward_batch.log_step()", "class ForwardBatch:\n    def log_step(self):\n        print(self.step)\n", True)])
def test_a_call_after_the_bind_that_plans_the_backend_again_refuses(tmp_path, call, other, fixable):
    src = REPLANNED.replace("{call}", call) + (
        "\n\nclass MetadataPlanner:\n    def __init__(self, backend):\n        self.backend = backend\n\n"
        "    def maybe_plan(self, forward_batch):\n        self.backend.init_forward_metadata(forward_batch)\n")
    if other:
        (tmp_path / "batch.py").write_text(other)
    (tmp_path / "backend.py").write_text(src)
    (site,) = migrate_source(src, str(tmp_path / "backend.py"), kernel=KERNEL).sites
    assert (site.status is Status.FIXABLE) is fixable, site.reason


def test_a_replay_write_after_the_modes_branches_updates_every_table(tmp_path):
    """Round U's s_graph_replay_updates_both_modes: the local bound to either mode's table in the branches of an
    `if`, then written after it, updates both."""
    capture = (f"md = DSAMetadata(dsa_cache_seqlens_int32={_CLIP})\n        if bs > 8:\n"
               "            self.verify_metadata[bs] = md\n        else:\n            self.graph_metadata[bs] = md\n"
               "        self.forward_metadata = md")
    replay = ("if bs > 8:\n            md = self.verify_metadata[bs]\n        else:\n            md = self.graph_metadata[bs]\n"
              f"        md.dsa_cache_seqlens_int32.copy_({_CLIP})\n        self.forward_metadata = md")
    src = GRAPH_PER_CAPTURE.replace("{capture}", "        " + capture).replace("{replay}", "        " + replay) \
        .replace("        self.graph_metadata = {}\n", "        self.graph_metadata = {}\n        self.verify_metadata = {}\n")
    (tmp_path / "requirements.txt").write_text("sglang-kernel==0.4.6\n")
    (site,) = migrate_source(src, str(tmp_path / "backend.py")).sites
    assert site.status is Status.FIXABLE, site.reason


@pytest.mark.parametrize("use, fixable", [
    ('logger.debug("view %s", tuple(forward_batch.topk_indices_2d.shape))', True),  # a size read: round U's safe twin
    ("forward_batch.topk_indices_2d.masked_fill_(forward_batch.topk_indices_2d < 20, -1)", False)])
def test_a_layer_reading_a_size_off_the_holder_it_passes_on_hands_it_on(tmp_path, use, fixable):
    (tmp_path / "layer.py").write_text(
        "import logging\n\nlogger = logging.getLogger(__name__)\n\n\n"
        f"def run(backend, q, kv, forward_batch, scale):\n    {use}\n    return backend.forward(q, kv, forward_batch, scale)\n")
    (tmp_path / "backend.py").write_text(BATCH_ATTRIBUTE)
    (site,) = migrate_source(BATCH_ATTRIBUTE, str(tmp_path / "backend.py"), kernel=KERNEL).sites
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("body, fixable", [
    ("        if forward_batch.step != 0:\n            self.init_forward_metadata(forward_batch)\n", False),
    ("        self.log_step(forward_batch)\n", True)])
def test_a_function_handed_the_metadata_that_plans_it_again_refuses(tmp_path, body, fixable):
    """Round U's u_param_metadata_callee_refreshes: the caller hands `self.forward_metadata`; the callee plans anew."""
    src = CLIPPED_HOLDER.replace(
        "    def forward(self, q, kv, indices, sm_scale):\n        metadata = self.forward_metadata\n",
        "    def log_step(self, forward_batch):\n        print(forward_batch)\n\n"
        "    def forward_layer(self, q, kv, indices, sm_scale, forward_batch):\n"
        "        return self.forward(q, kv, indices, sm_scale, self.forward_metadata, forward_batch)\n\n"
        "    def forward(self, q, kv, indices, sm_scale, metadata, forward_batch):\n" + body)
    (site,) = migrate_source(src, str(tmp_path / "backend.py"), kernel=KERNEL).sites
    assert (site.status is Status.FIXABLE) is fixable, site.reason


_FILED = (f"md = DSAMetadata(dsa_cache_seqlens_int32={_CLIP})\n        self.graph_metadata[bs] = md\n"
          "        self.forward_metadata = md")
_REPLAYED = f"md = self.graph_metadata[bs]\n        md.dsa_cache_seqlens_int32.copy_({_CLIP})\n        self.forward_metadata = md"
_EAGER = "\n    def init_forward_metadata(self, bs, seq_lens):\n        {eager}\n"


@pytest.mark.parametrize("capture, eager, fixable", [
    (_FILED, "", True),
    # round T's u_graph_capture_keeps_deepcopy: the table keeps a copy, the graph reads the holder's object
    ("self.init_forward_metadata(bs, seq_lens)\n        self.graph_metadata[bs] = copy.deepcopy(self.forward_metadata)",
     f"self.forward_metadata = DSAMetadata(dsa_cache_seqlens_int32={_CLIP})", False),
    # round U's u_graph_capture_files_separate_record: the holder keeps the eager object, the table another record
    (f"self.init_forward_metadata(bs, seq_lens)\n        self.graph_metadata[bs] = DSAMetadata("
     f"dsa_cache_seqlens_int32={_CLIP})", f"self.forward_metadata = DSAMetadata(dsa_cache_seqlens_int32={_CLIP})", False),
    # the same record read back from the table into the holder is the graph's object
    (f"self.graph_metadata[bs] = DSAMetadata(dsa_cache_seqlens_int32={_CLIP})\n"
     "        self.forward_metadata = self.graph_metadata[bs]", "", True),
    # the holder given another object after the filing, by a method of the module
    (_FILED + "\n        self.init_forward_metadata(bs, seq_lens)",
     f"self.forward_metadata = DSAMetadata(dsa_cache_seqlens_int32={_CLIP})", False),
    # round U's u_graph_eager_path_files_into_graph_table: the eager path files into the graph table
    (_FILED, f"md = DSAMetadata(dsa_cache_seqlens_int32={_CLIP})\n        if bs in self.graph_metadata:\n"
             "            self.graph_metadata[bs] = md\n        self.forward_metadata = md", False)])
def test_the_object_a_capture_leaves_in_the_holder_is_the_one_replay_updates(tmp_path, capture, eager, fixable):
    src = "import copy\n" + GRAPH_PER_CAPTURE.replace("{capture}", "        " + capture) \
        .replace("{replay}", "        " + _REPLAYED) + (_EAGER.replace("{eager}", eager) if eager else "")
    (tmp_path / "requirements.txt").write_text("sglang-kernel==0.4.6\n")
    (site,) = migrate_source(src, str(tmp_path / "backend.py")).sites
    assert (site.status is Status.FIXABLE) is fixable, site.reason
    assert fixable or "table CUDA-graph replay reads" in site.reason, site.reason


_POOL = "_POOL = {}\n\n\nclass Pooled:\n    def __new__(cls, *args, **kwargs):\n        return _POOL.setdefault(cls, super().__new__(cls))\n\n\n"


@pytest.mark.parametrize("declaration, fixable", [
    ("@dataclass\nclass DSAMetadata:\n", True),
    ("@dataclass\nclass DSAMetadata(Pooled):\n", False),  # round T: a pool in a base of this module
    ("@dataclass\nclass DSAMetadata:\n    def __new__(cls, *args, **kwargs):\n"  # round T: a pool of its own
     "        return _POOL.setdefault(cls, super().__new__(cls))\n\n", False)])
def test_a_metadata_class_that_hands_back_an_earlier_object_refuses(tmp_path, declaration, fixable):
    """Round T's u_tbo_pooled_builder_same_object and u_graph_pooled_metadata_eager_keyword: two batches' (or a
    graph's and the eager path's) metadata are one object."""
    src = CLIPPED_HOLDER.replace("@dataclass\nclass DSAMetadata:\n", _POOL + declaration)
    assert declaration in src
    site = _site(tmp_path, src, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


def test_metadata_an_attribute_passes_as_an_argument_is_held(tmp_path):
    """Round T's u_graph_metadata_argument_holder_rebuilt: `self.forward(..., self.decode_metadata)` makes
    `decode_metadata` the holder, which a replay may not give a new object."""
    src = GRAPH_PER_CAPTURE.replace("{capture}", f"        self.decode_metadata = DSAMetadata(dsa_cache_seqlens_int32={_CLIP})") \
        .replace("{replay}", f"        self.decode_metadata = DSAMetadata({_CLIP})") \
        .replace("    def forward(self, q, kv, topk_indices, sm_scale):\n        metadata = self.forward_metadata\n"
                 "        return self._forward_flashmla_sparse(q, kv, topk_indices, sm_scale)\n",
                 "    def forward_decode(self, q, kv, topk_indices, sm_scale):\n"
                 "        return self.forward(q, kv, topk_indices, sm_scale, self.decode_metadata)\n\n"
                 "    def forward(self, q, kv, topk_indices, sm_scale, metadata):\n"
                 "        return self._forward_flashmla_sparse(q, kv, topk_indices, sm_scale)\n")
    assert "self.decode_metadata)" in src
    (tmp_path / "requirements.txt").write_text("sglang-kernel==0.4.6\n")
    (site,) = migrate_source(src, str(tmp_path / "backend.py")).sites
    assert site.status is Status.MANUAL and "`self.decode_metadata` a new object" in site.reason, site.reason


@pytest.mark.parametrize("value, fixable", [
    ("seq_lens.to(torch.int32)", False),  # round U's u_batch_attr_named_like_clipped_field: the name alone
    ("seq_lens.clamp(max=self.dsa_index_topk).to(torch.int32)", True)])
def test_a_field_named_like_the_clipped_lengths_is_read_as_them_only_where_each_write_clips(tmp_path, value, fixable):
    src = ANNOTATED_HOLDER.format(extend="DSAMetadata(dsa_cache_seqlens_int32=forward_batch.dsa_cache_seqlens)")
    (tmp_path / "batch.py").write_text(f"import torch\n\n\nclass HybridForwardBatch:\n    def __init__(self, seq_lens, topk):\n"
                                       f"        self.dsa_cache_seqlens = {value}\n")
    site = _site(tmp_path, src, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason
    assert fixable or "batch.py:6 gives `dsa_cache_seqlens`" in site.reason


@pytest.mark.parametrize("forward, fixable", [
    ("    def forward(self, q, kv, indices, sm_scale):\n        metadata = self.forward_metadata\n"
     "        return self._forward_flashmla_sparse(q, kv, indices, sm_scale)\n", True),
    # round U's s_deferred_launch_fresh_record_per_step: the lambda reads the record bound before, a new one each step
    ("    def forward(self, q, kv, indices, sm_scale):\n        metadata = self.forward_metadata\n"
     "        return lambda: self._forward_flashmla_sparse(q, kv, indices, sm_scale)\n", True),
    # round U's u_deferred_launch_after_inplace_replan: the launch runs whenever the lambda is called, after a plan
    # written in place into the record it reads
    ("    def forward(self, q, kv, indices, sm_scale):\n        metadata = self.forward_metadata\n"
     "        return lambda: self._forward_flashmla_sparse(q, kv, indices, sm_scale)\n\n"
     "    def replan(self, seq_lens):\n        self.forward_metadata.dsa_cache_seqlens_int32.copy_("
     "seq_lens.clamp(max=self.dsa_index_topk).to(torch.int32))\n", False),
    # the same plan written into the field's rows by a slice assigned
    ("    def forward(self, q, kv, indices, sm_scale):\n        metadata = self.forward_metadata\n"
     "        return lambda: self._forward_flashmla_sparse(q, kv, indices, sm_scale)\n\n"
     "    def replan(self, seq_lens):\n        self.forward_metadata.dsa_cache_seqlens_int32[:4] = "
     "seq_lens.clamp(max=self.dsa_index_topk).to(torch.int32)\n", False),
    # round V: a coroutine's body runs after its call handed it the rows, and gives way at each await
    ("    async def forward(self, q, kv, indices, sm_scale):\n        metadata = self.forward_metadata\n"
     "        await self.kv_ready.wait()\n        return self._forward_flashmla_sparse(q, kv, indices, sm_scale)\n", False),
    # round V: a generator's stages, another micro-batch's plan at the yield
    ("    def forward(self, q, kv, indices, sm_scale):\n        metadata = self.forward_metadata\n"
     "        yield 'prepared'\n        yield self._forward_flashmla_sparse(q, kv, indices, sm_scale)\n", False)])
def test_a_launch_that_runs_later_than_the_metadata_is_bound_refuses(tmp_path, forward, fixable):
    plain = ("    def forward(self, q, kv, indices, sm_scale):\n        metadata = self.forward_metadata\n"
             "        return self._forward_flashmla_sparse(q, kv, indices, sm_scale)\n")
    src = CLIPPED_HOLDER.replace(plain, forward)
    assert forward in src
    site = _site(tmp_path, src, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("batch, fixable", [
    ("    def __init__(self, topk_indices):\n        self.topk_indices = topk_indices\n", True),
    ("    def __init__(self, topk_indices):\n        self.topk_indices = topk_indices.sort(dim=-1).values\n", False),
    ("    def __init__(self, raw):\n        self.raw = raw\n\n    @property\n    def topk_indices(self):\n"
     "        return self.raw.masked_fill(self.raw < 8, -1)\n", False)])
def test_an_attribute_another_files_caller_hands_is_what_every_file_makes_it(tmp_path, batch, fixable):
    """Round V's u_caller_attr_property_other_file / u_caller_attr_dataclass_post_init_sorts: a layer handing
    `forward_batch.topk_indices` hands what the batch class serves, read as the module's own reads are."""
    src = HANDED_INDICES
    (tmp_path / "batch_info.py").write_text("class ForwardBatch:\n" + batch)
    (tmp_path / "layer.py").write_text("def run(backend, q, kv, forward_batch, scale):\n"
                                       "    return backend.forward(q, kv, forward_batch.topk_indices, scale)\n")
    site = _site(tmp_path, src, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason
    assert fixable or "hands `forward_batch.topk_indices`" in site.reason, site.reason


@pytest.mark.parametrize("second, fixable", [
    ("        return self._forward_flashmla_sparse(q, kv, forward_batch.topk_indices, scale)\n", True),
    # round V's u_tbo_second_microbatch_params: the next micro-batch's rows launched under this plan
    ("        out = self._forward_flashmla_sparse(q, kv, forward_batch.topk_indices, scale)\n"
     "        return out, self._forward_flashmla_sparse(next_q, kv, forward_batch.next_topk_indices, scale)\n", False)])
def test_one_bound_plan_launches_one_batchs_rows(tmp_path, second, fixable):
    src = BATCH_ATTRIBUTE.replace("    def forward(self, q, kv, forward_batch, scale):\n        metadata = self.forward_metadata\n"
                                  "        return self._forward_flashmla_sparse(q, kv, forward_batch.topk_indices, scale)\n",
                                  "    def forward(self, q, kv, forward_batch, scale, next_q=None):\n"
                                  "        metadata = self.forward_metadata\n" + second)
    assert second in src
    (site, *_) = migrate_source(src, str(tmp_path / "backend.py"), kernel=KERNEL).sites
    assert (site.status is Status.FIXABLE) is fixable, site.reason


_WIDTH_PLAN = CLIPPED_HOLDER.replace("max=self.dsa_index_topk", "max={width}")
_INIT = "    def __init__(self, dsa_index_topk):\n        self.dsa_index_topk = dsa_index_topk\n\n"
_FACTORY = "\n\nDEFAULT_TOPK = 2048\n\n\ndef make_backend(dsa_index_topk=DEFAULT_TOPK):\n    return Backend(dsa_index_topk)\n"


@pytest.mark.parametrize("width, head, body, tail, other, fixable", [
    ("self.dsa_index_topk", "", "", "", "", True),  # nothing here or elsewhere assigns it: judged by its name
    ("self.dsa_index_topk", "", "    dsa_index_topk = 2048\n", "", "", False),  # round V: a class body's number
    # round V: a constant imported from a file of the project that makes it a number
    ("INDEX_TOPK", "from fork_constants import INDEX_TOPK\n", "", "", "INDEX_TOPK = 2048\n", False),
    ("INDEX_TOPK", "from fork_constants import INDEX_TOPK\n", "", "", "from sglang.srt.configs import INDEX_TOPK\n", True),
    # round V: a number this module's own construction hands the constructor's parameter
    ("self.dsa_index_topk", "", _INIT, _FACTORY, "", False),
    ("self.dsa_index_topk", "", _INIT, "", "", True)])
def test_a_width_fixed_as_a_number_anywhere_is_no_width(tmp_path, width, head, body, tail, other, fixable):
    src = head + _WIDTH_PLAN.replace("{width}", width).replace("class Backend:\n", "class Backend:\n" + body) + tail
    if other:
        (tmp_path / "fork_constants.py").write_text(other)
    site = _site(tmp_path, src, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


_TRANSLATED = BATCH_ATTRIBUTE.replace(
    "    def __init__(self, metadata):\n        self.forward_metadata = metadata\n",
    "    def __init__(self, metadata, token_to_kv_pool):\n        self.forward_metadata = metadata\n"
    "        self.token_to_kv_pool = token_to_kv_pool\n").replace(
    "    def forward(self, q, kv, forward_batch, scale):\n        metadata = self.forward_metadata\n"
    "        return self._forward_flashmla_sparse(q, kv, forward_batch.topk_indices, scale)\n",
    "    def forward(self, q, kv, topk_indices, scale):\n        metadata = self.forward_metadata\n"
    "        indices = self.token_to_kv_pool.translate_loc_to_hisparse_device(topk_indices)\n"
    "        return self._forward_flashmla_sparse(q, kv, indices, scale)\n")


@pytest.mark.parametrize("where, fixable", [
    ("", True),  # the engine's pool: each valid location mapped, -1 kept
    # round AB: an engine tree's def is the engine's only as a release has it (a release's own: the heavy tier's
    # installed releases); this one masks every third location
    ("sglang/srt/mem_cache/memory_pool.py", False),
    ("fork_kv_pool.py", False)])  # round V: a fork's own pool class of the engine's method name
def test_an_engine_method_name_is_the_engines_only_where_the_project_defines_none(tmp_path, where, fixable):
    if where:
        (tmp_path / where).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / where).write_text("class Pool:\n    def translate_loc_to_hisparse_device(self, compressed_indices):\n"
                                      "        return compressed_indices.masked_fill(compressed_indices % 3 == 0, -1)\n")
    (tmp_path / "backend.py").write_text(_TRANSLATED)
    (site,) = migrate_source(_TRANSLATED, str(tmp_path / "backend.py"), kernel=KERNEL).sites
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("replay, extra, fixable", [
    (_REPLAYED, "", True),
    # round V: a memo of the last replay skips the update when the next batch matches it
    ("md = self.graph_metadata[bs]\n        self.forward_metadata = md\n        if self.last_sum.get(bs) == int(seq_lens.sum()):\n"
     "            return\n        self.last_sum[bs] = int(seq_lens.sum())\n"
     f"        md.dsa_cache_seqlens_int32.copy_({_CLIP})", "", False),
    # round V: a handler swallowing the update's failure
    (f"md = self.graph_metadata[bs]\n        try:\n            md.dsa_cache_seqlens_int32.copy_({_CLIP})\n"
     "        except RuntimeError:\n            pass\n        self.forward_metadata = md", "", False),
    # round V: the update queued in a closure, run whenever it is called
    (f"md = self.graph_metadata[bs]\n        self.pending.append(lambda: md.dsa_cache_seqlens_int32.copy_({_CLIP}))\n"
     "        self.forward_metadata = md", "", False),
    # round V: the replay hook given another value on the instance
    (_REPLAYED, "        self.init_forward_metadata_replay_cuda_graph = self.forward\n", False),
    # round V: the table a class attribute every instance shares
    (_REPLAYED, "    graph_metadata = {}\n", False),
    # round V: records listed in capture order, read back by another index
    ("md = self.graph_metadata[sorted(self.sizes).index(bs)]\n        md.dsa_cache_seqlens_int32.copy_(" + _CLIP + ")\n"
     "        self.forward_metadata = md", "", False)])
def test_every_replay_updates_the_table_it_owns(tmp_path, replay, extra, fixable):
    capture = _FILED.replace("self.graph_metadata[bs] = md", "self.graph_metadata.append(md)") if "index(bs)" in replay \
        else _FILED
    src = GRAPH_PER_CAPTURE.replace("{capture}", "        " + capture).replace("{replay}", "        " + replay)
    if extra.startswith("        "):
        src = src.replace("        self.graph_metadata = {}\n", "        self.graph_metadata = {}\n" + extra)
    elif extra:
        src = src.replace("        self.graph_metadata = {}\n", "").replace("class Backend:\n", "class Backend:\n" + extra)
    (tmp_path / "requirements.txt").write_text("sglang-kernel==0.4.6\n")
    (site,) = migrate_source(src, str(tmp_path / "backend.py")).sites
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("decorator, fixable", [("@dataclass\n", True), ("@dataclass(frozen=False)\n", True),
                                                ("@pooled_per_size\n@dataclass\n", False)])  # round V
def test_a_class_decorator_may_hand_back_a_pool(tmp_path, decorator, fixable):
    src = CLIPPED_HOLDER.replace("@dataclass\nclass DSAMetadata:", decorator + "class DSAMetadata:") + \
        "\n\ndef pooled_per_size(cls):\n    return cls\n"
    site = _site(tmp_path, src, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("replay, forward, fixable", [
    # round V: the functional spelling of the in-place copy
    (f"md = self.graph_metadata[bs]\n        torch.Tensor.copy_(md.dsa_cache_seqlens_int32, {_CLIP})\n"
     "        self.forward_metadata = md", "", True),
    # round V's u_graph_capture_run_replans_lazily: the captured forward plans a new object itself
    (_REPLAYED, "        if self.forward_metadata is None:\n            self.plan(q)\n", False)])
def test_a_captured_forward_reads_the_object_replay_updates(tmp_path, replay, forward, fixable):
    src = GRAPH_PER_CAPTURE.replace("{capture}", "        " + _FILED).replace("{replay}", "        " + replay) \
        .replace("        metadata = self.forward_metadata\n", forward + "        metadata = self.forward_metadata\n") + (
            f"\n    def plan(self, seq_lens):\n        self.forward_metadata = DSAMetadata(dsa_cache_seqlens_int32={_CLIP})\n"
            if forward else "")  # (a method no planner runs giving the holder is refused alone: round AQ)
    (tmp_path / "requirements.txt").write_text("sglang-kernel==0.4.6\n")
    (site,) = migrate_source(src, str(tmp_path / "backend.py")).sites
    assert (site.status is Status.FIXABLE) is fixable, site.reason


_PLAN_LINE = "self.forward_metadata = DSAMetadata(dsa_cache_seqlens_int32=forward_batch.seq_lens.clamp("


@pytest.mark.parametrize("plan, fixable", [
    ("seq_lens = forward_batch.seq_lens\n            {plan}", True),
    # round V: a view by a dtype reinterprets the lengths' bytes
    ("seq_lens = forward_batch.seq_lens.view(torch.int32)\n            {plan}", False),
    # round V: the operand off self, an earlier step's lengths the object keeps
    ("{plan}", False)])
def test_the_clip_operand_is_these_rows_lengths(tmp_path, plan, fixable):
    src = CLIPPED_HOLDER
    line = "            " + _PLAN_LINE
    assert line in src
    operand = "self.seq_lens" if plan == "{plan}" else "seq_lens"
    new = plan.replace("{plan}", f"self.forward_metadata = DSAMetadata(dsa_cache_seqlens_int32={operand}.clamp(")
    src = src.replace(line, "            " + new)
    site = _site(tmp_path, src, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("merge, fixable", [
    ("torch.where(topk_indices >= 0, topk_indices + 1, topk_indices)", True),  # sglang's offsets, -1 kept
    ("torch.where(topk_indices >= 0, topk_indices, window_indices)", False)])  # round V: entries past the count
def test_a_merge_puts_nothing_where_the_indices_are_invalid(tmp_path, merge, fixable):
    src = _TRANSLATED.replace("self.token_to_kv_pool.translate_loc_to_hisparse_device(topk_indices)", merge) \
        .replace("def forward(self, q, kv, topk_indices, scale):", "def forward(self, q, kv, topk_indices, scale, window_indices=None):")
    src = "import torch\n" + src
    site = _site(tmp_path, src, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("layer, fixable", [
    ("def run(backend, q, kv, topk, scale):\n    return backend.forward(q, kv, topk, scale)\n", True),
    # round V: a loop over layers hands the shared top-k to another backend's `forward` first
    ("def run(backends, q, kv, topk, scale):\n    return [b.forward(q, kv, topk, scale) for b in backends]\n", False),
    # round V: the other branch hands it to another object's method, which may mask it in place
    ("def run(backend, window, q, kv, topk, scale):\n    if window is not None:\n        window.apply(topk)\n"
     "        return q\n    else:\n        return backend.forward(q, kv, topk, scale)\n", False)])
def test_another_files_caller_hands_the_indices_to_nothing_else_first(tmp_path, layer, fixable):
    src = HANDED_INDICES
    (tmp_path / "layer.py").write_text(layer)
    site = _site(tmp_path, src, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("body, fixable", [
    ("        super().init_forward_metadata_replay_cuda_graph(bs, seq_lens)\n", True),
    ("        self.forward_metadata = self.graph_metadata[bs]\n", False)])  # round V: the base's update never reached
def test_a_subclass_overriding_the_replay_reaches_its_update(tmp_path, body, fixable):
    # (the lengths through a local: a parameter another file's def also names is not read, whoever calls it)
    replay = _REPLAYED.replace(_CLIP, "cache_seqlens.clamp(max=self.dsa_index_topk)")
    src = GRAPH_PER_CAPTURE.replace("{capture}", "        " + _FILED).replace(
        "{replay}", "        cache_seqlens = seq_lens.to(torch.int32)\n        " + replay)
    (tmp_path / "requirements.txt").write_text("sglang-kernel==0.4.6\n")
    (tmp_path / "mtp.py").write_text("from backend import Backend\n\n\nclass MTPBackend(Backend):\n"
                                     "    def init_forward_metadata_replay_cuda_graph(self, bs, seq_lens):\n" + body)
    (tmp_path / "backend.py").write_text(src)
    (site,) = migrate_source(src, str(tmp_path / "backend.py")).sites
    assert (site.status is Status.FIXABLE) is fixable, site.reason


_OWN_WRAPPER = """# Fork backend; metadata.dsa_cache_seqlens_int32 holds seqlens clipped to topk.
from fork_ops import flash_mla_sparse_fwd


def attend(q, kv, indices, scale, metadata):
    return flash_mla_sparse_fwd(q, kv, indices, scale)
"""


@pytest.mark.parametrize("signature, handed, fixable", [
    ("d_v=512, attn_sink=None, topk_length=None", "d_v, attn_sink, topk_length", True),
    ("topk_length=None, d_v=512", "topk_length, d_v", False)])  # round V: the wrapper's own order lands it in d_v
def test_a_wrapper_hands_topk_length_where_the_op_takes_it(tmp_path, signature, handed, fixable):
    (tmp_path / "requirements.txt").write_text("sglang-kernel==0.4.6\n")
    (tmp_path / "fork_ops.py").write_text(
        "import sgl_kernel.flash_mla as fm\n\n\n"
        f"def flash_mla_sparse_fwd(q, kv, indices, sm_scale, {signature}):\n"
        f"    return fm.flash_mla_sparse_fwd(q, kv, indices, sm_scale, {handed})\n")
    (tmp_path / "backend.py").write_text(_OWN_WRAPPER)
    (site,) = migrate_source(_OWN_WRAPPER, str(tmp_path / "backend.py")).sites
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("build, fixable", [
    ("Meta(dsa_cache_seqlens_int32=forward_batch.seq_lens.clamp(max=self.dsa_index_topk).to(torch.int32))", True),
    ("Meta(forward_batch.seq_lens.to(torch.int32), None)", False)])  # round V: by position, outside the project
def test_a_record_from_outside_the_project_is_built_by_keyword(tmp_path, build, fixable):
    src = CLIPPED_HOLDER.replace("from dataclasses import dataclass\n", "from dataclasses import dataclass\n"
                                 "from engine_lib.records import Meta\n").replace(
        "            " + _PLAN_LINE + "\n                max=self.dsa_index_topk).to(torch.int32))",
        "            self.forward_metadata = " + build)
    assert build in src
    site = _site(tmp_path, src, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


_CONFIGURED = "    def __init__(self, hf_config):\n        self.dsa_index_topk = {getter}(hf_config)\n\n"
_CAP_GETTER = "def get_dsa_index_topk(config):\n    return getattr(config, 'decode_index_topk', None) or config.index_topk\n"
_FORK_CONFIG = ("from transformers import AutoConfig\n\nHF_CONFIG = AutoConfig.from_pretrained('model')\n"
                "DSA_INDEX_TOPK = HF_CONFIG.index_topk\n")  # (round AA: a literal `index_topk=2048` is the project's own)


@pytest.mark.parametrize("width, head, body, other, fixable", [
    # round W: a getter of the engine's name is the engine's only by its import, or by what its def returns
    ("self.dsa_index_topk", "from sglang.srt.configs.model_config import get_dsa_index_topk\n",
     _CONFIGURED.format(getter="get_dsa_index_topk"), "", True),
    ("self.dsa_index_topk", "from fork_utils import get_dsa_index_topk\n", _CONFIGURED.format(getter="get_dsa_index_topk"),
     "def get_dsa_index_topk(config):\n    return config.index_topk\n", True),
    ("self.dsa_index_topk", "from fork_utils import get_dsa_index_topk\n", _CONFIGURED.format(getter="get_dsa_index_topk"),
     _CAP_GETTER, False),
    ("self.dsa_index_topk", "", _CONFIGURED.format(getter="self.get_dsa_index_topk") + "    " + _CAP_GETTER.replace(
        "(config)", "(self, config)").replace("\n    ", "\n        ") + "\n", "", False),
    # a property is read by its returns
    ("self.dsa_index_topk", "", "    @property\n    def dsa_index_topk(self):\n        return self.decode_topk\n\n", "", False),
    ("self.dsa_index_topk", "", "    @property\n    def dsa_index_topk(self):\n        return self.hf_config.index_topk\n\n",
     "", True),
    # a tensor filled with the width, lowered in place afterwards (an attribute, a local)
    ("self.topk_cap", "", "    def __init__(self, hf_config):\n        self.topk_cap = torch.full((64,), hf_config.index_topk)\n\n",
     "", True),
    ("self.topk_cap", "", "    def __init__(self, hf_config):\n        self.topk_cap = torch.full((64,), hf_config.index_topk)\n\n"
     "    def set_decode_mode(self):\n        self.topk_cap.fill_(self.decode_topk)\n\n", "", False),
    # a module's name: every binding of it in its file (an `if` block, a function's `global`), its attribute read too
    ("DSA_INDEX_TOPK", "from fork_config import DSA_INDEX_TOPK\n", "", _FORK_CONFIG, True),
    ("DSA_INDEX_TOPK", "from fork_config import DSA_INDEX_TOPK\n", "", _FORK_CONFIG
     + "if HF_CONFIG.fast_decode:\n    DSA_INDEX_TOPK = HF_CONFIG.index_topk // 2\n", False),
    ("fork_config.DSA_INDEX_TOPK", "import fork_config\n", "", _FORK_CONFIG, True),
    ("fork_config.DSA_INDEX_TOPK", "import fork_config\n", "", _FORK_CONFIG
     + "\n\ndef configure(hf_config):\n    global DSA_INDEX_TOPK\n    DSA_INDEX_TOPK = hf_config.decode_index_topk\n", False)])
def test_a_width_is_read_by_its_value_wherever_it_is_bound(tmp_path, width, head, body, other, fixable):
    """Round W's width family: a fork's cap (a smaller decode top-k) reached the clip's bound under the width's
    name through a getter in another file or off self, a property, a tensor lowered in place, a module constant an
    `if` or a `global` rebinds, or a module's attribute."""
    src = head + _WIDTH_PLAN.replace("{width}", width).replace("class Backend:\n", "class Backend:\n" + body)
    for name in ("fork_utils.py", "fork_config.py"):
        if other and name[:-3] in head:
            (tmp_path / name).write_text(other)
    site = _site(tmp_path, src, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


def test_a_local_width_tensor_lowered_for_some_rows_is_no_width(tmp_path):
    """Round W's u_width_local_tensor_per_row: `w = torch.full_like(seq_lens, self.dsa_index_topk)`, then
    `w[1::2] = draft_topk` before the minimum."""
    plan = ("        w = torch.full_like(forward_batch.seq_lens, self.dsa_index_topk)\n{lower}"
            "        self.forward_metadata = DSAMetadata(dsa_cache_seqlens_int32=torch.minimum(forward_batch.seq_lens, w))\n")
    for lower, fixable in (("", True), ("        w[1::2] = self.draft_topk\n", False)):
        src = _WIDTH_PLAN.replace("{width}", "self.dsa_index_topk").replace(
            "        if forward_batch.is_extend:\n", plan.format(lower=lower) + "        if False:\n")
        assert "torch.minimum" in src
        site = _site(tmp_path, src, kernel=KERNEL)
        assert (site.status is Status.FIXABLE) is fixable, (lower, site.reason)


_HOLDER_PLAN = "import dataclasses\n" + GRAPH_PER_CAPTURE[:GRAPH_PER_CAPTURE.index("        self.graph_lens")] + """\
        self._records = {}
        self._free = []

    def _build(self, seq_lens):
        return DSAMetadata(dsa_cache_seqlens_int32=seq_lens.clamp(max=self.dsa_index_topk).to(torch.int32))

    def init_forward_metadata(self, bs, seq_lens, forward_batch=None):
{eager}

    def forward(self, q, kv, topk_indices, sm_scale):
        metadata = self.forward_metadata
        return flash_mla_sparse_fwd(q=q, kv=kv, indices=topk_indices, sm_scale=sm_scale)[0]
"""
_CLIP = "seq_lens.clamp(max=self.dsa_index_topk).to(torch.int32)"


@pytest.mark.parametrize("eager, fixable", [
    ("        self.forward_metadata = self._build(seq_lens)", True),
    ("        md = DSAMetadata(dsa_cache_seqlens_int32=" + _CLIP + ")\n        self.forward_metadata = md", True),
    ("        self.forward_metadata = dataclasses.replace(self._build(seq_lens))", True),
    # round AR: the caller's batch's attribute is what another step left there (the draft's plan a worker of
    # another file carries on `spec_info` by a making's keyword), no record made for this batch
    ("        self.forward_metadata = forward_batch.attn_metadata", False),
    # round W: an allocation cache, a free list, a lazy `or`: an earlier batch's object
    ("        md = self._records.get(bs)\n        if md is None:\n            md = self._build(seq_lens)\n"
     "            self._records[bs] = md\n        self.forward_metadata = md", False),
    ("        md = self._records.get(bs)\n        if md is None:\n            md = self._build(seq_lens)\n"
     "            self._records[bs] = md\n        md.dsa_cache_seqlens_int32.copy_(" + _CLIP + ")\n"
     "        self.forward_metadata = md", True),  # refilled in place on every path
    ("        md = self._records.get(bs)\n        if md is None:\n            md = self._build(seq_lens)\n"
     "            self._records[bs] = md\n        elif bs > 8:\n            md.dsa_cache_seqlens_int32.copy_(" + _CLIP + ")\n"
     "        self.forward_metadata = md", False),  # refilled on one path only
    ("        if self._free:\n            self.forward_metadata = self._free.pop()\n        else:\n"
     "            self.forward_metadata = self._build(seq_lens)", False),
    ("        self.forward_metadata = self.forward_metadata or self._build(seq_lens)", False)])
def test_what_the_holder_is_given_is_made_for_this_batch(tmp_path, eager, fixable):
    """Round W (w1): outside the replay hooks the holder gets an object made for this batch, or one whose lengths
    the method rewrites in place on every path."""
    site = _site(tmp_path, _HOLDER_PLAN.replace("{eager}", eager), kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


_CAPTURE = ("    def init_forward_metadata_capture_cuda_graph(self, bs, seq_lens):\n"
            "        self.graph_metadata[bs] = self._build(seq_lens)\n"
            "        self.forward_metadata = self.graph_metadata[bs]\n\n")


@pytest.mark.parametrize("replay, fixable", [
    ("        md = self.graph_metadata[bs]\n        md.dsa_cache_seqlens_int32.copy_(" + _CLIP + ")\n"
     "        self.forward_metadata = md", True),
    ("        md = self.graph_metadata.get(bs)\n        torch.Tensor.copy_(md.dsa_cache_seqlens_int32, " + _CLIP + ")\n"
     "        self.forward_metadata = md", True),  # round W's safe twin: the table read by `.get`
    # round W: the holder given another record than the one updated (another key, a batch size rebound since)
    ("        md = self.graph_metadata[bs]\n        md.dsa_cache_seqlens_int32.copy_(" + _CLIP + ")\n"
     "        self.forward_metadata = self.graph_metadata[bs + 1]", False),
    ("        md = self.graph_metadata[bs]\n        md.dsa_cache_seqlens_int32.copy_(" + _CLIP + ")\n"
     "        bs = bs + 1\n        self.forward_metadata = self.graph_metadata[bs]", False),
    # an exit before the update that leaves the holder as it is, and one that plans anew first (sglang 0.5.16)
    ("        md = self.graph_metadata[bs]\n        self.forward_metadata = md\n        if not self.paged:\n"
     "            return\n        md.dsa_cache_seqlens_int32.copy_(" + _CLIP + ")", False),
    ("        md = self.graph_metadata[bs]\n        self.forward_metadata = md\n        if bs not in self.graph_metadata:\n"
     "            self.init_forward_metadata_capture_cuda_graph(bs, seq_lens)\n            return\n"
     "        md.dsa_cache_seqlens_int32.copy_(" + _CLIP + ")", True)])
def test_a_replay_gives_the_holder_the_record_it_updates(tmp_path, replay, fixable):
    src = _HOLDER_PLAN.replace("{eager}", "        self.forward_metadata = self._build(seq_lens)").replace(
        "    def forward(self", _CAPTURE + "    def init_forward_metadata_replay_cuda_graph(self, bs, seq_lens):\n"
        + replay + "\n\n    def forward(self")
    site = _site(tmp_path, src, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


_LAYER_RUN = "import torch\n\n\ndef run(backend, q, kv, topk_indices, topk_2d, ctx, scale):\n{body}\n    return backend.forward(q, kv, topk_indices, scale)\n"


@pytest.mark.parametrize("body, fixable", [
    ("    n = int((topk_2d >= 0).sum())", True),
    ("    buf = torch.zeros(4)\n    buf[0] = 1\n    buf.add_(1)", True),  # a tensor the caller made itself
    ("    assert topk_indices.is_contiguous()", True),
    # round W (w2): whatever else the caller writes in place may share the indices' storage
    ("    ctx.topk_2d.masked_fill_(ctx.topk_2d < 20, -1)", False),
    ("    topk_2d.data[topk_2d < 20] = -1", False),
    ("    torch.Tensor.masked_fill_(topk_2d, topk_2d < 20, -1)", False),
    ("    torch.where(topk_2d < 20, -1, topk_2d, out=topk_2d)", False),
    ("    for view in (topk_2d,):\n        view.masked_fill_(view < 20, -1)", False),
    ("    WINDOW.masked_fill_(WINDOW < 20, -1)", False),
    ("    if ctx is None:\n        topk_2d.masked_fill_(topk_2d < 20, -1)\n        return None", False),
    ("    import torch.distributed as dist\n    dist.broadcast(topk_2d, 0)", False)])
def test_a_caller_writing_anything_but_its_own_new_tensor_in_place_is_refused(tmp_path, body, fixable):
    """Round W's w2: a caller in another file writing a tensor in place that may be a view of the indices (another
    parameter's attribute, `.data`, the functional spelling, `out=`, a loop's alias, a module's global, the other
    branch, a collective) is refused; a tensor it made itself, and reads, are not."""
    (tmp_path / "layer.py").write_text(_LAYER_RUN.format(body=body))
    site = _site(tmp_path, HANDED_INDICES, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("layer, fixable", [
    ("class Layer:\n    def __init__(self, backend):\n        self.backend = backend\n\n"
     "    def run(self, q, kv, topk, scale):\n        step = lambda: self.backend.forward(q, kv, topk, scale)\n"
     "        return step()\n", True),
    # round W: a step lambda kept on the object runs later with the first call's tensors
    ("class Layer:\n    def __init__(self, backend):\n        self.backend = backend\n        self.step = None\n\n"
     "    def run(self, q, kv, topk, scale):\n        if self.step is None:\n"
     "            self.step = lambda: self.backend.forward(q, kv, topk, scale)\n        return self.step()\n", False),
    # round W: an await before the call lets another task write the indices
    ("class Layer:\n    def __init__(self, backend, ready):\n        self.backend, self.ready = backend, ready\n\n"
     "    async def run(self, q, kv, topk, scale):\n        await self.ready.wait()\n"
     "        return self.backend.forward(q, kv, topk, scale)\n", False),
    # round W: a static method's first parameter is no object of its own
    ("class Layer:\n    @staticmethod\n    def run(backend, q, kv, topk, scale):\n"
     "        return backend.forward(q, kv, topk, scale)\n", True),
    # round W: a mixin's method borrowed through the class's namespace runs with the backend as self
    ("import torch\nfrom backend import Backend\n\n\nclass _Verify:\n    def verify(self, q, kv, topk, scale):\n"
     "        order = torch.arange(q.shape[0] - 1, -1, -1)\n        return self.forward(q[order], kv, topk[order], scale)\n\n\n"
     "class Spec(Backend):\n    verify = vars(_Verify)['verify']\n", False)])
def test_a_callers_kept_lambda_await_and_borrowed_method_are_read(tmp_path, layer, fixable):
    (tmp_path / "layer.py").write_text(layer)
    site = _site(tmp_path, HANDED_INDICES.replace("forward_batch", "fb"), kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


def test_a_collective_fills_the_indices_it_is_handed(tmp_path):
    """Round W's u_dist_gather_into_topk: `dist.all_gather_into_tensor(indices, shard)` writes the indices."""
    src = HANDED_INDICES.replace("        metadata = self.forward_metadata\n",
                                 "        metadata = self.forward_metadata\n"
                                 "        dist.all_gather_into_tensor(topk_indices, self.shard)\n").replace(
        "from sgl_kernel", "import torch.distributed as dist\nfrom sgl_kernel")
    assert "all_gather_into_tensor" in src
    site = _site(tmp_path, src, kernel=KERNEL)
    assert site.status is Status.MANUAL, site.reason


_TRIM = "\n\ndef _trim(t):\n    t[:, 4:] = -1\n\n\nclass ClipWindow(torch.autograd.Function):\n    @staticmethod\n" \
        "    def forward(ctx, t):\n        return t.masked_fill_(t > 4, -1)\n"


@pytest.mark.parametrize("body, fixable", [
    ("    valid = topk_2d >= 0\n    valid[:, 4:] = False", True),  # a comparison's new tensor, the caller's own
    ("    topk_2d[:, 4:], flag = -1, True", False),  # round X: an item assigned among a tuple's targets
    ("    _trim(topk_2d)", False),  # a def of the caller's file writing what it is handed
    ("    ClipWindow.apply(topk_2d)", False),  # an autograd Function
    ("    torch.ops.fork.clip_window(topk_2d)", False),  # a custom op (mutates_args)
    ("    getattr(topk_2d, ctx.op)(topk_2d < 4, -1)", False),  # a method picked by a computed name
    ("    fill = topk_2d.masked_fill_\n    fill(topk_2d < 4, -1)", False),  # an in-place method taken as a value
    ("    s = torch.empty(0)\n    s.set_(topk_2d)\n    s.fill_(-1)", False),  # a new tensor pointed at the view
    ("    buf = ctx.arena.empty(4)\n    buf.fill_(-1)", False),  # a project's allocator may hand back anything
    ("    yield None", False),  # a generator stage: another stage runs at its yield
    ("    match (q, topk_indices):\n        case (q, topk_indices):\n            pass", False)])  # a match capture
def test_round_x_caller_writes_are_seen(tmp_path, body, fixable):
    """Round X's x2: writes a caller makes that are not spelled `x.op_(...)`, and a generator stage's yield."""
    (tmp_path / "layer.py").write_text(_LAYER_RUN.format(body=body) + _TRIM)
    site = _site(tmp_path, HANDED_INDICES, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("combined, fixable", [
    ("class Balanced(Balance, Backend):\n    pass\n", False),
    ("def with_balance(base):\n    class _Balanced(Balance, base):\n        pass\n    return _Balanced\n", False),
    ("BACKENDS = {'dsa': Backend}\n\n\nclass Balanced(Balance, BACKENDS['dsa']):\n    pass\n", False),
    ("class Other:\n    pass\n\n\nclass Balanced(Balance, Other):\n    pass\n", True)])
def test_a_mixin_combined_with_a_base_that_names_no_class_is_the_backends(tmp_path, combined, fixable):
    """Round X's mixin combined with the backend at run time (a factory's parameter, a table's item)."""
    (tmp_path / "mixins.py").write_text(
        "import torch\nfrom backend import Backend\n\n\nclass Balance:\n    def forward(self, q, kv, topk_indices, scale):\n"
        "        order = torch.arange(q.shape[0] - 1, -1, -1)\n"
        "        return super().forward(q[order], kv, topk_indices[order], scale)\n\n\n" + combined)
    site = _site(tmp_path, HANDED_INDICES, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("width, head, body, other, fixable", [
    # round X: the width bound where the value reader did not look
    ("self.dsa_index_topk", "", "    def __init__(self, hf_config):\n        self.dsa_index_topk, self.mode = hf_config.decode_topk, 1\n\n",
     "", False),
    ("self.dsa_index_topk", "", "    def __init__(self, hf_config):\n        setattr(self, 'dsa_index_topk', hf_config.decode_topk)\n\n",
     "", False),
    ("DSA_INDEX_TOPK", "from fork_config import *\n", "", "DSA_INDEX_TOPK = 8\n", False),
    ("DSA_INDEX_TOPK", "from fork_config import DSA_INDEX_TOPK\n", "", "from fork_defaults import *\n", False),
    ("DSA_INDEX_TOPK", "from fork_config import DSA_INDEX_TOPK\n", "", _FORK_CONFIG, True)])
def test_a_width_bound_by_a_tuple_a_setattr_or_a_star_import_is_not_read(tmp_path, width, head, body, other, fixable):
    src = head + _WIDTH_PLAN.replace("{width}", width).replace("class Backend:\n", "class Backend:\n" + body)
    if other:
        (tmp_path / "fork_config.py").write_text(other)
    site = _site(tmp_path, src, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


def test_no_statement_mixin_shadows_anothers_method():
    """The statements' provers are mixins of one class: a method name two of them define makes one silently run
    the other's (this session's width reader shadowed identity's `_bound_otherwise`, and a holder reader graph
    capture's `_made_elsewhere`, until the tests caught their effects)."""
    from topk_migrate.codemods.pass_topk_length import analysis

    owners: dict = {}
    for base in analysis._Analysis.__mro__[1:]:
        for name, value in vars(base).items():
            if callable(value) and not name.startswith("__"):
                owners.setdefault(name, []).append(base.__name__)
    assert {n: o for n, o in owners.items() if len(o) > 1} == {}


_WINDOW = ("\n\ndef clip_window(t, w):\n    tail = t[:, w:]\n    tail.fill_(-1)\n\n\ndef check_window(t, w):\n"
           "    assert t.shape[-1] >= w\n\n\nclass WindowMask:\n    def __init__(self, t, w):\n        self.t, self.w = t, w\n\n"
           "    def __enter__(self):\n        self.t[:, self.w:] = -1\n\n    def __exit__(self, *exc):\n        return False\n\n\n"
           "class Layer:\n    @staticmethod\n    def clip(t, w):\n        t.narrow(1, w, 4).fill_(-1)\n")


@pytest.mark.parametrize("body, fixable", [
    ("    check_window(topk_2d, 4)", True),  # a def of the project that only reads what it is handed
    ("    n = int(topk_2d.sum())\n    print(len(topk_2d), n)", True),  # builtins that read
    ("    if topk_2d.dim() != 2:\n        raise ValueError(topk_2d.shape, ctx)", True),  # an exception's message
    ("    clip_window(topk_2d, 4)", False),  # the callee writes a local view of its parameter
    ("    clip_window(ctx.topk_2d, 4)", False),  # an attribute of another parameter handed on
    ("    clip_window(topk_2d.unsqueeze(1)[:, 0], 4)", False),  # a view made by a method handed on
    ("    with WindowMask(topk_2d, 4):\n        pass", False),  # a project class may keep what it is handed
    ("    evict = ctx.evict\n    evict(topk_2d)", False),  # a bound method kept in a local: not read
    ("    ctx.window(topk_2d)", False),  # a callable object
    ("    ctx.run_timed(clip_window, *(topk_2d, 4))", False),  # handed by `*args`
    ("    Layer.clip(topk_2d, 4)", False),  # a static method's first parameter is its own
    ("    ctx.pool.submit(clip_window, topk_2d, 4).result()", False),  # an executor runs the writer
    ("    ctx.window.forward(topk_2d)", False)])  # a method of the traced name handed something else
def test_round_y_a_callee_the_tool_cannot_read_may_write(tmp_path, body, fixable):
    """Round Y's y2: what a caller in another file hands a callee (an attribute, a view, a `*args` tuple) may be
    written unless the callee is read as leaving it alone: default-deny on callees."""
    (tmp_path / "layer.py").write_text(_LAYER_RUN.format(body=body) + _WINDOW)
    site = _site(tmp_path, HANDED_INDICES, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("layer, fixable", [
    ("    async def run(self, q, kv, topk, scale):\n        out = self.backend.forward(q, kv, topk, scale)\n"
     "        await self.ready.wait()\n        return out\n", True),
    # round Y: the test of a conditional expression runs first, and a lambda runs when it is called
    ("    async def run(self, q, kv, topk, scale):\n"
     "        return self.backend.forward(q, kv, topk, scale) if await self.ready.wait() else None\n", False),
    ("    async def run(self, q, kv, topk, scale):\n        launch = lambda: self.backend.forward(q, kv, topk, scale)\n"
     "        await self.ready.wait()\n        return launch()\n", False)])
def test_round_y_an_await_anywhere_before_the_call_runs_first(tmp_path, layer, fixable):
    head = "class Layer:\n    def __init__(self, backend, ready):\n        self.backend, self.ready = backend, ready\n\n"
    (tmp_path / "layer.py").write_text(head + layer)
    site = _site(tmp_path, HANDED_INDICES.replace("forward_batch", "fb"), kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


def test_round_y_a_batch_class_writing_the_indices_it_keeps_is_refused(tmp_path):
    (tmp_path / "layer.py").write_text(
        "class Batch:\n    def __init__(self, topk_indices, live):\n        self.topk_indices = topk_indices\n"
        "        self.topk_indices[:, live:] = -1\n\n\ndef run(backend, q, kv, batch, scale):\n"
        "    return backend.forward(q, kv, batch.topk_indices, scale)\n")
    site = _site(tmp_path, HANDED_INDICES, kernel=KERNEL)
    assert site.status is Status.MANUAL, site.reason


_COPY = "md.dsa_cache_seqlens_int32.copy_(" + _CLIP + ")"


@pytest.mark.parametrize("replay, fixable", [
    ("        md = self.graph_metadata[bs]\n        if self.mode == 'decode':\n            " + _COPY + "\n        else:\n"
     "            " + _COPY + "\n        self.forward_metadata = md", True),
    # a mode chain without `else` whose fall-through reads a local only its branches bind (sglang 0.5.16)
    ("        md = self.graph_metadata[bs]\n        if self.mode == 'decode':\n            n = 1\n            " + _COPY +
     "\n        elif self.mode == 'verify':\n            n = 2\n            " + _COPY + "\n        assert n\n"
     "        self.forward_metadata = md", True),
    # a flag a fused path sets where an engine kernel wrote the field (sglang 0.5.16's fused metadata)
    ("        md = self.graph_metadata[bs]\n        fused = False\n        if self.fast:\n"
     "            fused_dsa_decode_metadata(dsa_cache_seqlens=md.dsa_cache_seqlens_int32)\n            fused = True\n"
     "        if not fused:\n            " + _COPY + "\n        self.forward_metadata = md", True),
    ("        md = self.graph_metadata[bs]\n        new = " + _CLIP + "\n        if not torch.equal(md.dsa_cache_seqlens_int32, new):\n"
     "            md.dsa_cache_seqlens_int32.copy_(new)\n        self.forward_metadata = md", True),
    # round X: a loop that may run zero times, a `match` arm, a manager that swallows, a generator, a coroutine
    ("        md = self.graph_metadata[bs]\n        for _ in range(self.checks):\n            " + _COPY +
     "\n        self.forward_metadata = md", False),
    ("        md = self.graph_metadata[bs]\n        match self.mode:\n            case 'decode':\n                " + _COPY +
     "\n            case 'verify':\n                pass\n        self.forward_metadata = md", False),
    ("        md = self.graph_metadata[bs]\n        with contextlib.suppress(RuntimeError):\n            " + _COPY +
     "\n        self.forward_metadata = md", False),
    ("        md = self.graph_metadata[bs]\n        self.forward_metadata = md\n        yield md\n        " + _COPY, False),
    ("        md = self.graph_metadata[bs]\n        if self.mode == 'decode':\n            " + _COPY +
     "\n        self.forward_metadata = md", False)])
def test_round_x_every_run_of_the_replay_updates_the_lengths(tmp_path, replay, fixable):
    """graph-replay's every-path half (replay_paths): each run of the replay hook that returns passes an update."""
    src = _HOLDER_PLAN.replace("{eager}", "        self.forward_metadata = self._build(seq_lens)").replace(
        "    def forward(self", _CAPTURE + "    def init_forward_metadata_replay_cuda_graph(self, bs, seq_lens):\n"
        + replay + "\n\n    def forward(self").replace(
        "import dataclasses\n", "import contextlib\nimport dataclasses\n"
        "from sglang.kernels.ops.attention.dsa_metadata import fused_dsa_decode_metadata\n")
    site = _site(tmp_path, src, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


def test_round_x_an_async_replay_hook_updates_late(tmp_path):
    src = _HOLDER_PLAN.replace("{eager}", "        self.forward_metadata = self._build(seq_lens)").replace(
        "    def forward(self", _CAPTURE + "    async def init_forward_metadata_replay_cuda_graph(self, bs, seq_lens):\n"
        "        md = self.graph_metadata[bs]\n        " + _COPY + "\n        self.forward_metadata = md\n\n    def forward(self")
    assert _site(tmp_path, src, kernel=KERNEL).status is Status.MANUAL


_MODES = ("    def init_forward_metadata_replay_cuda_graph(self, bs, seq_lens):\n"
          "        if self.mode == 'decode':\n            self._replay_decode(bs, seq_lens)\n"
          "        else:\n            self._replay_verify(bs, seq_lens)\n\n"
          "    def _replay_decode(self, bs, seq_lens):\n        md = self.graph_metadata[bs]\n        " + _COPY + "\n"
          "        self.forward_metadata = md\n\n"
          "    def _replay_verify(self, bs, seq_lens):\n        md = self.graph_metadata[bs]\n{verify}\n"
          "        self.forward_metadata = md\n\n")


@pytest.mark.parametrize("verify, hook, fixable", [
    ("        " + _COPY, "", True),
    # round Y: one mode's helper updates, the other's does not: the replay starts at the hook, which must cover
    ("        pass", "", False),
    # round Y: a copy of every field from an object this step made, not from a plan staged for a later batch
    ("        md.copy_(self._build(seq_lens))", "", True),
    ("        md.copy_(self._staged)", "", False),
    # round Y: a decorator of the project on the hook may run it later
    ("        " + _COPY, "    @defer_to_stream\n", False)])
def test_round_y_each_replay_root_updates_on_every_path(tmp_path, verify, hook, fixable):
    src = _HOLDER_PLAN.replace("{eager}", "        self.forward_metadata = self._build(seq_lens)").replace(
        "    def forward(self", _CAPTURE + hook + _MODES.replace("{verify}", verify) + "    def forward(self").replace(
        "class DSAMetadata:\n", "class DSAMetadata:\n    def copy_(self, other):\n        for f in dataclasses.fields(self):\n"
        "            getattr(self, f.name).copy_(getattr(other, f.name))\n\n").replace(
        "import dataclasses\n", "import dataclasses\n\n\ndef defer_to_stream(fn):\n    return fn\n")
    site = _site(tmp_path, src, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("eager, read, fixable", [
    ("        self.forward_metadata = self._build(seq_lens)", "        metadata: DSAMetadata = self.forward_metadata", True),
    # round Y: an annotated read names the holder too; a lazy `or` there hands back an earlier batch's object
    ("        self.forward_metadata = self.forward_metadata or self._build(seq_lens)",
     "        metadata: DSAMetadata = self.forward_metadata", False),
    # round Y: a failure before the refill that a handler swallows skips it
    ("        md = self._records.get(bs)\n        if md is None:\n            md = self._build(seq_lens)\n"
     "            self._records[bs] = md\n        try:\n            md.dsa_cache_seqlens_int32.copy_(" + _CLIP + ")\n"
     "        except RuntimeError:\n            pass\n        self.forward_metadata = md", "        metadata = self.forward_metadata",
     False),
    # round Y: another object's holder: what its methods give it is not read
    ("        self.forward_metadata = self._build(seq_lens)", "        metadata = self.peer.forward_metadata", False),
    # round Y: the Borg idiom shares every attribute of every instance
    ("        self.__dict__ = SHARED\n        self.forward_metadata = self._build(seq_lens)",
     "        metadata = self.forward_metadata", False)])
def test_round_y_the_holder_read_and_refilled(tmp_path, eager, read, fixable):
    src = _HOLDER_PLAN.replace("{eager}", eager).replace("        metadata = self.forward_metadata", read).replace(
        "import dataclasses\n", "import dataclasses\n\nSHARED = {}\n")
    site = _site(tmp_path, src, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("operand, head, fixable", [
    ("forward_batch.seq_lens.to(LENS_DTYPE)", "LENS_DTYPE = torch.int32\n", True),
    # round Y: a dtype a name holds is what the module binds it to
    ("forward_batch.seq_lens.to(LENS_DTYPE)", "LENS_DTYPE = torch.int16\n", False),
    ("forward_batch.seq_lens.to(self.lens_dtype)", "", False),
    # round Y: a conversion handed to a builder's parameter is read through, not taken as a computed tensor
    ("forward_batch.seq_lens.to(torch.int32)", "", True),
    ("forward_batch.extend_prefix_lens.to(torch.int32)", "", False),
    # round Y: lengths kept on an object self holds are an earlier step's
    ("self.graph_inputs.seq_lens", "", False)])
def test_round_y_the_clip_operand_is_read_through_its_conversions(tmp_path, operand, head, fixable):
    src = ("import torch\nfrom dataclasses import dataclass\nfrom sgl_kernel.flash_mla import flash_mla_sparse_fwd\n"
           + head + "\n\n@dataclass\nclass DSAMetadata:\n    dsa_cache_seqlens_int32: torch.Tensor\n\n\n"
           "class Backend:\n    def __init__(self, dsa_index_topk):\n        self.dsa_index_topk = dsa_index_topk\n\n"
           "    def init_forward_metadata(self, bs, forward_batch):\n"
           f"        self.forward_metadata = self._build({operand})\n\n"
           "    def _build(self, cache_seqlens):\n        return DSAMetadata(\n"
           "            dsa_cache_seqlens_int32=torch.clamp(cache_seqlens, max=self.dsa_index_topk).to(torch.int32))\n\n"
           "    def forward(self, q, kv, topk_indices, sm_scale):\n        metadata = self.forward_metadata\n"
           "        return flash_mla_sparse_fwd(q=q, kv=kv, indices=topk_indices, sm_scale=sm_scale)[0]\n")
    site = _site(tmp_path, src, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("write", [
    "torch.narrow(md.dsa_cache_seqlens_int32, 0, 0, bs).copy_(seq_lens)",
    "md.dsa_cache_seqlens_int32.untyped_storage().copy_(seq_lens.untyped_storage())"])
def test_round_y_a_write_through_a_call_on_the_field_is_seen(tmp_path, write):
    """Round Y (y3): the field written through a view a call made (the functional `torch.narrow`, its storage)."""
    eager = "        md = self._build(seq_lens)\n        " + write + "\n        self.forward_metadata = md"
    site = _site(tmp_path, _HOLDER_PLAN.replace("{eager}", eager), kernel=KERNEL)
    assert site.status is Status.MANUAL, site.reason
    (tmp_path / "runner.py").write_text("import torch\n\n\ndef refresh(md, seq_lens, bs):\n    " + write + "\n")
    site = _site(tmp_path, _HOLDER_PLAN.replace("{eager}", "        self.forward_metadata = self._build(seq_lens)"),
                 kernel=KERNEL)
    assert site.status is Status.MANUAL, site.reason


_MADE = """\
import functools
import types
from dataclasses import dataclass

import torch
from sgl_kernel.flash_mla import flash_mla_sparse_fwd
{head}

@dataclass
class DSAMetadata:
    dsa_cache_seqlens_int32: torch.Tensor


def reuse_per_batch_size(build):
    records = {{}}

    def reused(forward_batch, *args):
        if forward_batch.batch_size not in records:
            records[forward_batch.batch_size] = build(forward_batch, *args)
        return records[forward_batch.batch_size]
    return reused


class Backend:
    def __init__(self, dsa_index_topk):
        self.dsa_index_topk = dsa_index_topk
        self.forward_metadata = None
        self.static_plans = {{}}
{init}
    def _build(self, forward_batch):
        return DSAMetadata(dsa_cache_seqlens_int32=forward_batch.seq_lens.clamp(max=self.dsa_index_topk).to(torch.int32))

    def init_forward_metadata(self, forward_batch):
        self.forward_metadata = {made}

    def forward(self, q, kv, topk_indices, sm_scale):
        metadata = self.forward_metadata
        return flash_mla_sparse_fwd(q=q, kv=kv, indices=topk_indices, sm_scale=sm_scale)[0]
"""
_PLAN_FILE = ("import torch\nfrom backend import DSAMetadata, reuse_per_batch_size\n\n\n"
              "def make_metadata(forward_batch, dsa_index_topk):\n    return DSAMetadata(\n"
              "        dsa_cache_seqlens_int32=forward_batch.seq_lens.clamp(max=dsa_index_topk).to(torch.int32))\n")


@pytest.mark.parametrize("made, head, init, plan, fixable", [
    ("self._build(forward_batch)", "", "", None, True),
    ("make_metadata(forward_batch, self.dsa_index_topk)", "from plan import make_metadata", "", "", True),
    # round Y: a builder rebound on the instance, or at its module's level, may hand back a record it kept
    ("self._build(forward_batch)", "", "        self._build = reuse_per_batch_size(self._build)\n", None, False),
    ("make_metadata(forward_batch, self.dsa_index_topk)", "from plan import make_metadata", "",
     "\n\nmake_metadata = reuse_per_batch_size(make_metadata)\n", False),
    # round Y: a namespace of another object's fields (`**vars(plan)`) is no new record's
    ("types.SimpleNamespace(**vars(self.static_plans[forward_batch.batch_size]))", "", "", None, False),
    # round X: a cached builder hands back what an earlier call with equal arguments made
    ("self._cached(forward_batch)", "", "    @functools.lru_cache(maxsize=64)\n    def _cached(self, forward_batch):\n"
     "        return self._build(forward_batch)\n\n", None, False)])
def test_round_y_what_is_made_for_this_batch_is_not_taken_by_its_spelling(tmp_path, made, head, init, plan, fixable):
    if plan is not None:
        (tmp_path / "plan.py").write_text(_PLAN_FILE + plan)
    src = _MADE.format(head=head, init=init, made=made)
    site = _site(tmp_path, src, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("other, fixable", [
    ("class Fast(Backend):\n    def reset(self):\n        self.forward_metadata = None\n", True),
    # round Y: a subclass in another file filing the holder's object in its own table
    ("class Fast(Backend):\n    def init_forward_metadata(self, forward_batch):\n        plans = self.static_plans\n"
     "        if forward_batch.batch_size not in plans:\n            super().init_forward_metadata(forward_batch)\n"
     "            plans[forward_batch.batch_size] = self.forward_metadata\n"
     "        self.forward_metadata = plans[forward_batch.batch_size]\n", False)])
def test_round_y_a_related_class_of_another_file_gives_the_holder_a_new_object(tmp_path, other, fixable):
    (tmp_path / "fast.py").write_text("from backend import Backend\n\n\n" + other)
    site = _site(tmp_path, _MADE.format(head="", init="", made="self._build(forward_batch)"), kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("replay, fixable", [
    ("md = self.graph_metadata[bs]\n        md.dsa_cache_seqlens_int32.copy_(" + _CLIP + ")\n        self.forward_metadata = md",
     True),
    ("self.graph_lens[:bs].copy_(seq_lens)\n        self.forward_metadata = self.graph_metadata[bs]", False)])
def test_round_y_a_positional_record_is_a_captured_field_too(tmp_path, replay, fixable):
    """Round Y: captures building records positionally (`DSAMetadata(lens)`) set the field; a replay that never
    updates it in place is refused as a keyword construction's is."""
    capture = f"md = DSAMetadata({_CLIP})\n        self.graph_metadata[bs] = md\n        self.forward_metadata = md"
    src = GRAPH_PER_CAPTURE.replace("{capture}", "        " + capture).replace("{replay}", "        " + replay)
    site = _site(tmp_path, src, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("factory, fixable", [
    ("def make_backend(balanced):\n    return Backend()\n", True),
    # round Y: the backend module's own factory combines a mixin of another file with the backend
    ("def make_backend(balanced):\n    from mixins import Balance\n\n    class _Balanced(Balance, Backend):\n"
     "        pass\n    return _Balanced() if balanced else Backend()\n", False)])
def test_round_y_a_class_a_function_of_the_module_defines_is_the_backends_too(tmp_path, factory, fixable):
    (tmp_path / "mixins.py").write_text(
        "import torch\n\n\nclass Balance:\n    def forward_balanced(self, q, kv, topk_indices, scale):\n"
        "        order = torch.arange(q.shape[0] - 1, -1, -1)\n"
        "        return self.forward(q[order], kv, topk_indices[order], scale)\n")
    site = _site(tmp_path, HANDED_INDICES + "\n\n" + factory, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("copy, fixable", [
    ("        for f in dataclasses.fields(self):\n            getattr(self, f.name).copy_(getattr(other, f.name))\n", True),
    # round X: a record's copy_ refreshing only some fields leaves the lengths as captured
    ("        for f in dataclasses.fields(self):\n            if f.name in GRAPH_INPUTS:\n"
     "                getattr(self, f.name).copy_(getattr(other, f.name))\n", False)])
def test_round_x_a_record_copy_refreshes_every_field(tmp_path, copy, fixable):
    src = _HOLDER_PLAN.replace("{eager}", "        self.forward_metadata = self._build(seq_lens)").replace(
        "    def forward(self", _CAPTURE + "    def init_forward_metadata_replay_cuda_graph(self, bs, seq_lens):\n"
        "        md = self.graph_metadata[bs]\n        md.copy_(self._build(seq_lens))\n        self.forward_metadata = md\n\n"
        "    def forward(self").replace("class DSAMetadata:\n", "class DSAMetadata:\n    def copy_(self, other):\n" + copy + "\n"
                                    ).replace("import dataclasses\n", "import dataclasses\n\nGRAPH_INPUTS = ('page_table_1',)\n")
    site = _site(tmp_path, src, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


_INDEXER = "class Indexer:\n    def __init__(self, hf_config):\n        self.index_topk = hf_config.decode_index_topk\n\n\n"


@pytest.mark.parametrize("width, head, body, files, fixable", [
    ("self.hf_config.index_topk", "", "    def __init__(self, hf_config):\n        self.hf_config = hf_config\n\n", {}, True),
    # round X: a config field the project lowers, in this module or in a getter of another file; None is no width
    ("self.dsa_index_topk", "", "    def __init__(self, hf_config):\n        hf_config.index_topk = hf_config.decode_index_topk\n"
     "        self.dsa_index_topk = hf_config.index_topk\n\n", {}, False),
    ("self.dsa_index_topk", "from fork_utils import get_dsa_index_topk\n", _CONFIGURED.format(getter="get_dsa_index_topk"),
     {"fork_utils.py": "def get_dsa_index_topk(config):\n    config.index_topk = min(config.index_topk, 512)\n"
                       "    return config.index_topk\n"}, False),
    ("self.dsa_index_topk", "", "    def __init__(self, hf_config, base_config):\n        base_config.index_topk = None\n"
     "        self.dsa_index_topk = hf_config.index_topk\n\n", {}, True),
    # round X: a module constant another file sets, served by `__getattr__`, or written through `globals()`
    ("fork_config.DSA_INDEX_TOPK", "import fork_config\n", "",
     {"fork_config.py": _FORK_CONFIG, "launch.py": "import fork_config\n\n\ndef apply(cfg):\n"
                                                   "    fork_config.DSA_INDEX_TOPK = cfg.decode_index_topk\n"}, False),
    ("DSA_INDEX_TOPK", "from fork_config import DSA_INDEX_TOPK\n", "",
     {"fork_config.py": "_D = {'DSA_INDEX_TOPK': 8}\n\n\ndef __getattr__(name):\n    return _D[name]\n"}, False),
    ("DSA_INDEX_TOPK", "from fork_config import DSA_INDEX_TOPK\n", "",
     {"fork_config.py": _FORK_CONFIG + "globals().update({'DSA_INDEX_TOPK': 8})\n"}, False),
    # round X: another file's `vars(backend).update(...)`, a property of a subclass in another file
    ("self.dsa_index_topk", "", "    def __init__(self, hf_config):\n        self.dsa_index_topk = hf_config.index_topk\n\n",
     {"tuning.py": "def apply(backend, cfg):\n    vars(backend).update(dsa_index_topk=cfg.decode_index_topk)\n"}, False),
    ("self.dsa_index_topk", "", "    def __init__(self, hf_config):\n        self.dsa_index_topk = hf_config.index_topk\n\n",
     {"decode.py": "from backend import Backend\n\n\nclass Decode(Backend):\n    @property\n    def dsa_index_topk(self):\n"
                   "        return 8\n\n    @dsa_index_topk.setter\n    def dsa_index_topk(self, v):\n        pass\n"}, False),
    # round X: a width off an object self made, off a class of another file, off `type(self)`
    ("self.indexer.index_topk", _INDEXER, "    def __init__(self, hf_config):\n        self.indexer = Indexer(hf_config)\n\n",
     {}, False),
    ("DSAConfig.index_topk", "from fork_config import DSAConfig\n", "",
     {"fork_config.py": "class DSAConfig:\n    index_topk = 8\n"}, False),
    ("type(self).index_topk", "", "    index_topk = 2048\n\n", {}, False)])
def test_round_x_a_width_any_code_may_set_is_not_read_by_its_name(tmp_path, width, head, body, files, fixable):
    src = head + _WIDTH_PLAN.replace("{width}", width).replace("class Backend:\n", "class Backend:\n" + body)
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    site = _site(tmp_path, src, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("lower, head, files, fixable", [
    ("", "", {}, True),
    # round X: a width tensor read but as a clip's bound may be lowered: a view bound to another name, a helper
    # of this module or another file handed it, a method's view written
    ("        draft = w[1::2]\n        draft.fill_(self.draft_topk)\n", "", {}, False),
    ("        _cap_draft_rows(w, self.draft_topk)\n", "\n\ndef _cap_draft_rows(cap, k):\n    cap[1::2] = k\n", {}, False),
    ("        w.view(-1)[1::2].fill_(self.draft_topk)\n", "", {}, False),
    ("        lower(w)\n", "from tuning import lower\n", {"tuning.py": "def lower(cap):\n    cap[1::2] = 8\n"}, False)])
def test_round_x_a_width_tensor_is_used_only_as_a_bound(tmp_path, lower, head, files, fixable):
    plan = ("        w = torch.full_like(forward_batch.seq_lens, self.dsa_index_topk)\n" + lower +
            "        self.forward_metadata = DSAMetadata(dsa_cache_seqlens_int32=torch.minimum(forward_batch.seq_lens, w))\n")
    src = head + _WIDTH_PLAN.replace("{width}", "self.dsa_index_topk").replace(
        "        if forward_batch.is_extend:\n", plan + "        if False:\n")
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    site = _site(tmp_path, src, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("lower, files, fixable", [
    ("", {}, True),
    ("        self.topk_cap.view(-1)[1::2].fill_(self.draft_topk)\n", {}, False),
    ("", {"runner.py": "def tune(backend):\n    backend.topk_cap[1::2] = 8\n"}, False)])
def test_round_x_a_width_tensor_attribute_is_used_only_as_a_bound(tmp_path, lower, files, fixable):
    plan = (lower + "        self.forward_metadata = DSAMetadata(\n"
            "            dsa_cache_seqlens_int32=torch.minimum(forward_batch.seq_lens, self.topk_cap))\n")
    src = _WIDTH_PLAN.replace("{width}", "self.dsa_index_topk").replace(
        "        if forward_batch.is_extend:\n", plan + "        if False:\n").replace(
        "class Backend:\n", "class Backend:\n    def __init__(self, hf_config):\n"
        "        self.topk_cap = torch.full((64,), hf_config.index_topk, dtype=torch.int32)\n\n")
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    site = _site(tmp_path, src, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


_INDEXER_LAYER = ("class Indexer:\n    def __init__(self, buf):\n        self.buf = buf\n\n    def window(self):\n"
                  "        self.buf[:, 4:] = -1\n\n    def count(self):\n        return int((self.buf >= 0).sum())\n\n\n"
                  "class Layer:\n    def __init__(self, backend, indexer):\n        self.backend, self.indexer = backend, indexer\n"
                  "        self.hooks = []\n\n    def run(self, q, kv, topk, scale):\n{body}\n"
                  "        return self.backend.forward(q, kv, topk, scale)\n")


@pytest.mark.parametrize("body, fixable", [
    ("        n = self.indexer.count()", True),
    # round X (x2): a call handing nothing writes state its object keeps, or a hook no reader sees
    ("        self.indexer.window()", False),
    ("        for hook in self.hooks:\n            hook()", False)])
def test_round_x_a_call_with_no_arguments_may_write_shared_state(tmp_path, body, fixable):
    (tmp_path / "layer.py").write_text(_INDEXER_LAYER.format(body=body))
    site = _site(tmp_path, HANDED_INDICES.replace("forward_batch", "fb"), kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


def test_round_x_a_batch_class_rewriting_attributes_by_code_is_read(tmp_path):
    """x2's u_batch_setattr_sanitises_topk: a class of a file naming the attribute serves or rewrites it by code."""
    (tmp_path / "layer.py").write_text(
        "import torch\n\n\nclass Batch:\n    def __setattr__(self, k, v):\n        if k.endswith('indices'):\n"
        "            v = torch.where(v < 8, v, -1)\n        self.__dict__[k] = v\n\n\n"
        "def run(backend, q, kv, batch, scale):\n    return backend.forward(q, kv, batch.topk_indices, scale)\n")
    assert _site(tmp_path, HANDED_INDICES, kernel=KERNEL).status is Status.MANUAL


_CALLEES_Z = ("\n\ndef rows_masked(t, w):\n    for row in t:\n        row[w:] = -1\n\n\n"
              "def split_masked(t, w):\n    kept, evicted = t.split([w, t.shape[-1] - w], dim=-1)\n    evicted.fill_(-1)\n\n\n"
              "class Keeper:\n    def keep(self, t):\n        self.t = t\n        self.t[:, 4:] = -1\n\n\n"
              "def sorted_out(t):\n    torch.sort(t, dim=-1, descending=True, out=(t, torch.empty_like(t)))\n\n\n"
              "def _traced(fn):\n    def inner(t):\n        t[:, 4:] = -1\n        return fn(t)\n    return inner\n\n\n"
              "@_traced\ndef looks_read_only(t):\n    return t.shape\n")


@pytest.mark.parametrize("body, fixable", [
    ("    n = topk_2d.shape", True),
    # round Z (z2): a callee's loop over the rows, an unpacking of its split, an attribute it keeps, a tuple `out=`
    ("    rows_masked(topk_2d, 4)", False),
    ("    split_masked(topk_2d, 4)", False),
    ("    Keeper().keep(topk_2d)", False),
    ("    sorted_out(topk_2d)", False),
    # a project decorator around the callee, `inplace=True`, a numpy view's own methods
    ("    looks_read_only(topk_2d)", False),
    ("    torch.nn.functional.threshold(topk_2d, 4, -1, inplace=True)", False),
    ("    topk_2d.numpy().sort(axis=1)", False)])
def test_round_z_what_a_callee_writes_through_its_own_names(tmp_path, body, fixable):
    (tmp_path / "layer.py").write_text(_LAYER_RUN.format(body=body) + _CALLEES_Z)
    site = _site(tmp_path, HANDED_INDICES, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


def test_round_z_a_method_name_in_a_conditional_expression_is_a_lookup(tmp_path):
    (tmp_path / "layer.py").write_text(
        "def run(backend, q, kv, topk, scale, sparse):\n"
        "    return getattr(backend, 'forward' if sparse else 'forward_dense')(q, kv, topk, scale)\n")
    assert _site(tmp_path, HANDED_INDICES, kernel=KERNEL).status is Status.MANUAL


@pytest.mark.parametrize("replay, fixable", [
    ("        md = self.graph_metadata[bs]\n        if (n := len(seq_lens)) > bs:\n            raise ValueError(n)\n        "
     + _COPY + "\n        self.forward_metadata = md", True),
    # round Z (z1): what `:=` binds in a test is bound, and clears a literal flag; a `return` in `finally`
    # swallows the failed update; a helper named like a builder that builds no record is no re-plan
    ("        fresh = False\n        if (fresh := self.same_batch(bs)):\n            pass\n        md = self.graph_metadata[bs]\n"
     "        if not fresh:\n            " + _COPY + "\n        self.forward_metadata = md", False),
    ("        md = self.graph_metadata[bs]\n        self.forward_metadata = md\n        try:\n            " + _COPY +
     "\n        finally:\n            return", False),
    ("        md = self.graph_metadata[bs]\n        self.forward_metadata = md\n        if bs > 4:\n"
     "            self._build_page_table(bs)\n            return\n        " + _COPY, False)])
def test_round_z_the_replay_paths_read_walrus_finally_and_builders(tmp_path, replay, fixable):
    src = _HOLDER_PLAN.replace("{eager}", "        self.forward_metadata = self._build(seq_lens)").replace(
        "    def forward(self", _CAPTURE + "    def init_forward_metadata_replay_cuda_graph(self, bs, seq_lens):\n"
        + replay + "\n\n    def same_batch(self, bs):\n        return False\n\n    def _build_page_table(self, bs):\n"
        "        self.page_table = bs\n\n    def forward(self")
    site = _site(tmp_path, src, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


def test_round_z_an_attribute_of_a_new_object_is_what_it_hands_out(tmp_path):
    """z1's u_holder_attribute_of_new_planner: `Plan(self, fb).metadata` may be a record the planner caches."""
    src = _MADE.format(head="\n\nclass Plan:\n    def __init__(self, backend, forward_batch):\n"
                            "        self.metadata = backend.static_plans[forward_batch.batch_size]\n",
                       init="", made="Plan(self, forward_batch).metadata")
    assert _site(tmp_path, src, kernel=KERNEL).status is Status.MANUAL


@pytest.mark.parametrize("width, head, body, files, fixable", [
    # round Z (z3): a width bound twice (an `except ImportError:` fallback), past three re-exports, rebound by a
    # star import after its assignment; a config copied with the field set, its namespace updated by a dict, its
    # own `__post_init__` lowering it
    ("DSA_INDEX_TOPK", "try:\n    from sglang.srt.configs import DSA_INDEX_TOPK\nexcept ImportError:\n"
     "    from fork_defaults import DSA_INDEX_TOPK\n", "", {"fork_defaults.py": "DSA_INDEX_TOPK = 8\n"}, False),
    ("DSA_INDEX_TOPK", "from c1 import DSA_INDEX_TOPK\n", "",
     {"c1.py": "from c2 import DSA_INDEX_TOPK\n", "c2.py": "from c3 import DSA_INDEX_TOPK\n",
      "c3.py": "from c4 import DSA_INDEX_TOPK\n", "c4.py": "DSA_INDEX_TOPK = 8\n"}, False),
    ("DSA_INDEX_TOPK", "from fork_config import DSA_INDEX_TOPK\n", "",
     {"fork_config.py": _FORK_CONFIG + "from site_overrides import *\n", "site_overrides.py": "DSA_INDEX_TOPK = 8\n"}, False),
    ("self.dsa_index_topk", "import dataclasses\n", "    def __init__(self, hf_config):\n"
     "        cfg = dataclasses.replace(hf_config, index_topk=8)\n        self.dsa_index_topk = cfg.index_topk\n\n", {}, False),
    ("self.dsa_index_topk", "", "    def __init__(self, hf_config):\n        vars(hf_config).update({'index_topk': 8})\n"
     "        self.dsa_index_topk = hf_config.index_topk\n\n", {}, False),
    ("self.dsa_index_topk", "", "    def __init__(self, hf_config):\n        self.dsa_index_topk = hf_config.index_topk\n\n",
     {"fork_config.py": "class Config:\n    def __post_init__(self):\n        self.index_topk = min(self.index_topk, 512)\n"},
     False)])
def test_round_z_a_width_bound_again_is_not_read_by_its_name(tmp_path, width, head, body, files, fixable):
    src = head + _WIDTH_PLAN.replace("{width}", width).replace("class Backend:\n", "class Backend:\n" + body)
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    site = _site(tmp_path, src, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("operand, fixable", [
    ("forward_batch.seq_lens.to(torch.int32)", True),
    ("forward_batch.seq_lens.to(*self.staging)", False),  # round Z: a starred dtype may be any
    ("self._inputs().seq_lens", False)])
def test_round_z_the_operand_through_a_starred_dtype_or_a_call(tmp_path, operand, fixable):
    src = _MADE.format(head="", init="", made="self._build(forward_batch)").replace(
        "forward_batch.seq_lens.clamp(", f"{operand}.clamp(")
    site = _site(tmp_path, src, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


def test_a_yield_in_a_branch_of_an_expression_makes_the_hook_a_generator(tmp_path):
    """Review of round X's path walk: a `yield` under a conditional expression still makes the hook a generator,
    whose body runs only when its caller steps it."""
    src = _HOLDER_PLAN.replace("{eager}", "        self.forward_metadata = self._build(seq_lens)").replace(
        "    def forward(self", _CAPTURE + "    def init_forward_metadata_replay_cuda_graph(self, bs, seq_lens):\n"
        "        md = self.graph_metadata[bs]\n        self.forward_metadata = md\n"
        "        _ = (yield md) if self.lazy else None\n        " + _COPY + "\n\n    def forward(self")
    assert _site(tmp_path, src, kernel=KERNEL).status is Status.MANUAL


_REPLAY = "    def init_forward_metadata_replay_cuda_graph(self, bs, seq_lens{param}):\n{body}\n\n"
_UPDATE = "        md = self.graph_metadata[bs]\n        " + _COPY + "\n        self.forward_metadata = md"


@pytest.mark.parametrize("hooks, fixable", [
    (_REPLAY.format(param="", body=_UPDATE), True),
    # every replay hook that reads what a graph keeps must update it: a second hook re-pointing the holder at a
    # captured record without its lengths passes no update (round Z's u_second_replay_hook_skips_update)
    (_REPLAY.format(param="", body=_UPDATE) + "    def init_forward_metadata_replay_cuda_graph_verify(self, bs, seq_lens):\n"
     "        self.forward_metadata = self.graph_metadata[bs]\n\n", False),
    # a hook that reads none of it (a fill value) leaves no graph stale
    (_REPLAY.format(param="", body=_UPDATE) + "    def get_cuda_graph_seq_len_fill_value(self):\n        return 1\n\n", True),
    # a mode chain with no `else` falls through in modes the hook never replays: those its raising chain declares
    # (sglang 0.5.12's precomputed copy) ...
    (_REPLAY.format(param=", mode", body="        md = self.graph_metadata[bs]\n        if mode.is_decode():\n"
                    "            pass\n        elif mode.is_verify():\n            pass\n        else:\n"
                    "            raise ValueError(mode)\n        if mode.is_decode():\n            " + _COPY + "\n"
                    "        elif mode.is_verify():\n            " + _COPY + "\n        self.forward_metadata = md"), True),
    # ... not a mode it declares and the chain skips, nor a chain nothing declares
    (_REPLAY.format(param=", mode", body="        md = self.graph_metadata[bs]\n        if mode.is_decode():\n"
                    "            pass\n        elif mode.is_verify():\n            pass\n        else:\n"
                    "            raise ValueError(mode)\n        if mode.is_decode():\n            " + _COPY + "\n"
                    "        self.forward_metadata = md"), False),
    (_REPLAY.format(param=", mode", body="        md = self.graph_metadata[bs]\n        if mode.is_decode():\n"
                    "            " + _COPY + "\n        self.forward_metadata = md"), False),
    # a nested def's raising chain declares nothing of the hook's
    (_REPLAY.format(param=", mode", body="        def check(mode):\n            if mode.is_decode():\n"
                    "                pass\n            else:\n                raise ValueError(mode)\n"
                    "        md = self.graph_metadata[bs]\n        if mode.is_decode():\n"
                    "            " + _COPY + "\n        self.forward_metadata = md"), False),
    # round AA (a1): a declaring chain reached only past an early return, or whose raise the hook catches, declares
    # nothing (a mode returning early, or caught, goes on stale) but over a parameter typed as the engine's own
    # ForwardMode (sglang 0.5.12's precomputed hook catches its own raise)
    (_REPLAY.format(param=", mode", body="        md = self.graph_metadata[bs]\n        if mode.is_decode():\n"
                    "            " + _COPY + "\n        self.forward_metadata = md\n        if mode.is_extend():\n"
                    "            return\n        if mode.is_decode():\n            pass\n        else:\n"
                    "            raise ValueError(mode)"), False),
    (_REPLAY.format(param=", mode", body="        md = self.graph_metadata[bs]\n        if mode.is_decode():\n"
                    "            " + _COPY + "\n        self.forward_metadata = md\n        try:\n"
                    "            if mode.is_decode():\n                pass\n            else:\n"
                    "                raise ValueError(mode)\n        except ValueError:\n            pass"), False),
    (_REPLAY.format(param=", mode: ForwardMode", body="        md = self.graph_metadata[bs]\n"
                    "        if mode.is_decode():\n            " + _COPY + "\n        self.forward_metadata = md\n"
                    "        try:\n            if mode.is_decode():\n                pass\n            else:\n"
                    "                raise ValueError(mode)\n        except ValueError:\n            pass"), True)])
def test_every_replay_hook_reading_the_captured_metadata_updates_it(tmp_path, hooks, fixable):
    src = _HOLDER_PLAN.replace("{eager}", "        self.forward_metadata = self._build(seq_lens)").replace(
        "    def forward(self", _CAPTURE + hooks + "    def forward(self")
    if "ForwardMode" in hooks:
        src = "from sglang.srt.model_executor.forward_batch_info import ForwardMode\n" + src
    site = _site(tmp_path, src, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("override, fixable", [
    (_UPDATE + "\n", True),
    # a subclass of the module overriding the hook replays through its own body (round Z)
    ("        self.forward_metadata = self.graph_metadata[bs]\n", False)])
def test_a_same_module_subclass_override_of_the_replay_hook_updates_too(tmp_path, override, fixable):
    src = _HOLDER_PLAN.replace("{eager}", "        self.forward_metadata = self._build(seq_lens)").replace(
        "    def forward(self", _CAPTURE + _REPLAY.format(param="", body=_UPDATE) + "    def forward(self")
    src += ("\n\nclass VerifyBackend(Backend):\n    def init_forward_metadata_replay_cuda_graph(self, bs, seq_lens):\n"
            + override)
    site = _site(tmp_path, src, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


_DRAFT = "from backend import Backend\n\n\nclass Draft(Backend):\n"


@pytest.mark.parametrize("draft, fixable", [
    ("    def __init__(self, *args):\n        super().__init__(*args)\n        self.num_draft_tokens = 2\n\n"
     "    def init_forward_metadata_replay_cuda_graph(self, bs, seq_lens):\n        \"\"\"The draft's.\"\"\"\n"
     "        logger.debug('replay %s', bs)\n        super().init_forward_metadata_replay_cuda_graph(bs, seq_lens)\n", True),
    # round Z (z1): a subclass of another file overriding what the proof read: a replay hook returning early, or
    # re-pointing the holder after `super()`; a builder caching its records per size; a setter of the holder
    ("    def init_forward_metadata_replay_cuda_graph(self, bs, seq_lens):\n        if bs > 4:\n"
     "            self.forward_metadata = self.graph_metadata[bs]\n            return\n"
     "        super().init_forward_metadata_replay_cuda_graph(bs, seq_lens)\n", False),
    ("    def init_forward_metadata_replay_cuda_graph(self, bs, seq_lens):\n"
     "        super().init_forward_metadata_replay_cuda_graph(bs, seq_lens)\n"
     "        self.forward_metadata = self.graph_metadata[bs * 2]\n", False),
    ("    def _build(self, seq_lens):\n        if len(seq_lens) not in self.plans:\n"
     "            self.plans[len(seq_lens)] = super()._build(seq_lens)\n        return self.plans[len(seq_lens)]\n", False),
    ("    def use(self, plan):\n        self.forward_metadata = plan\n", False),
    # round AB (b1): a statement beside the hand-on that is no logging call (an in-place clamp of what it is
    # handed), or a hand-on of anything but the override's own parameters
    ("    def init_forward_metadata_replay_cuda_graph(self, bs, seq_lens):\n        seq_lens.clamp_(min=1)\n"
     "        super().init_forward_metadata_replay_cuda_graph(bs, seq_lens)\n", False),
    ("    def init_forward_metadata_replay_cuda_graph(self, bs, seq_lens):\n"
     "        super().init_forward_metadata_replay_cuda_graph(bs, seq_lens + 1)\n", False)])
def test_a_subclass_of_another_file_only_hands_on_what_the_proof_read(tmp_path, draft, fixable):
    (tmp_path / "draft.py").write_text("import logging\n\nlogger = logging.getLogger(__name__)\n" + _DRAFT + draft)
    # (the lengths through a local: a parameter another file's def hands on is not read, whoever calls it)
    update = _UPDATE.replace("        md.dsa", "        cache_seqlens = seq_lens.to(torch.int32)\n        md.dsa").replace(
        _CLIP, "cache_seqlens.clamp(max=self.dsa_index_topk)")
    src = _HOLDER_PLAN.replace("{eager}", "        self.forward_metadata = self._build(seq_lens)").replace(
        "    def forward(self", _CAPTURE + _REPLAY.format(param="", body=update) + "    def forward(self")
    site = _site(tmp_path, src, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


_OWN_LAYER = """\
\"\"\"Fork DSA backend; metadata.dsa_cache_seqlens_int32 holds seqlens clipped to topk.\"\"\"
import torch
from sgl_kernel.flash_mla import flash_mla_sparse_fwd


class Backend:
    def __init__(self, metadata):
        self.forward_metadata = metadata

    def forward(self, q, kv, indices, scale):
        metadata = self.forward_metadata
        out, _, _ = flash_mla_sparse_fwd(q, kv, indices, scale)
        return out


def clip_window(topk, window):
    topk[:, window:] = -1


class Layer:
    def __init__(self, backend):
        self.backend = backend

    {run}
"""


@pytest.mark.parametrize("run, fixable", [
    ("def run(self, q, kv, indices, topk_2d, scale):\n        return self.backend.forward(q, kv, indices, scale)", True),
    # round Z (z2): the module's own caller is read as another file's: a callee handed a tensor that may share the
    # indices' storage may write it; an `await` first lets another task write it
    ("def run(self, q, kv, indices, topk_2d, scale):\n        clip_window(topk_2d, 4)\n"
     "        return self.backend.forward(q, kv, indices, scale)", False),
    ("async def run(self, q, kv, indices, topk_2d, scale):\n        await self.sync()\n"
     "        return self.backend.forward(q, kv, indices, scale)", False),
    # a method of self writing it, a library call writing in place (`inplace=True`), read as writes
    ("def _evict(self, topk):\n        topk[:, 4:] = -1\n\n    def run(self, q, kv, indices, topk_2d, scale):\n"
     "        self._evict(topk_2d)\n        return self.backend.forward(q, kv, indices, scale)", False),
    ("def run(self, q, kv, indices, topk_2d, scale):\n        torch.nn.functional.threshold(topk_2d, 4, -1, inplace=True)\n"
     "        return self.backend.forward(q, kv, indices, scale)", False),
    # a harness's making of the called object hands it what it keeps: its class's proof reads that
    ("def run(self, q, kv, indices, topk_2d, scale):\n        return Backend(kv).forward(q, kv, indices, scale)", True)])
def test_the_modules_own_callers_are_read_as_other_files_are(tmp_path, run, fixable):
    (tmp_path / "requirements.txt").write_text("sglang-kernel==0.4.6\n")
    site = _site(tmp_path, _OWN_LAYER.format(run=run))
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("eager, fixable", [
    ("        self._adopt(self._build(seq_lens))", True),
    # round Z (z1): a setter's parameter is what the module's calls of it hand: a record kept per size is not made
    # for this batch
    ("        if len(seq_lens) not in self._records:\n            self._records[len(seq_lens)] = self._build(seq_lens)\n"
     "        self._adopt(self._records[len(seq_lens)])", False)])
def test_a_setter_of_the_holder_is_judged_by_what_its_callers_hand(tmp_path, eager, fixable):
    src = _HOLDER_PLAN.replace("{eager}", eager).replace(
        "    def forward(self", "    def _adopt(self, md):\n        self.forward_metadata = md\n\n    def forward(self")
    site = _site(tmp_path, src, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("base", ["", "GraphBase"])
def test_a_replay_helper_is_the_one_the_class_finds(tmp_path, base):
    """round Z (z1): `self._refresh_graph(...)` runs what the class's bases define first: a base of another file's,
    not the sibling class's of this module that the name also finds."""
    (tmp_path / "graph_base.py").write_text("class GraphBase:\n    def _refresh_graph(self, bs, seq_lens):\n        pass\n")
    refresh = "    def _refresh_graph(self, bs, seq_lens):\n        md = self.graph_metadata[bs]\n        " + _COPY + "\n\n"
    src = _HOLDER_PLAN.replace("{eager}", "        self.forward_metadata = self._build(seq_lens)").replace(
        "    def forward(self", _CAPTURE + _REPLAY.format(param="", body="        md = self.graph_metadata[bs]\n"
                                                     "        self._refresh_graph(bs, seq_lens)\n        self.forward_metadata = md")
        + (refresh if not base else "") + "    def forward(self")
    if base:
        src = src.replace("class Backend:", f"from graph_base import {base}\n\n\nclass Backend({base}):") \
            + "\n\nclass Sibling:\n" + refresh.replace("seq_lens):", "forward_batch):").replace(
                "copy_(seq_lens", "copy_(forward_batch.seq_lens")
    site = _site(tmp_path, src, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is not base, site.reason
    assert not base or "no method that runs between replays writes" in site.reason


@pytest.mark.parametrize("run, fixable", [
    # round AA (a2): the making of the called object is read for what it writes; a library call writing in place
    # by its place, bare, through numpy or `operator`
    ("def run(self, q, kv, indices, topk_2d, scale):\n        return Evicting(kv, topk_2d).forward(q, kv, indices, scale)",
     False),
    ("def run(self, q, kv, indices, topk_2d, scale):\n        torch.nn.functional.threshold(topk_2d, 4, -1, True)\n"
     "        return self.backend.forward(q, kv, indices, scale)", False),
    ("def run(self, q, kv, indices, topk_2d, scale):\n        operator.setitem(topk_2d, (slice(None), slice(4, None)), -1)\n"
     "        return self.backend.forward(q, kv, indices, scale)", False),
    ("def run(self, q, kv, indices, topk_2d, scale):\n        threshold_(topk_2d, 4, -1)\n"
     "        return self.backend.forward(q, kv, indices, scale)", False)])
def test_round_aa_the_modules_own_callers_read_writes_by_what_runs(tmp_path, run, fixable):
    (tmp_path / "requirements.txt").write_text("sglang-kernel==0.4.6\n")
    src = _OWN_LAYER.format(run=run).replace("import torch\n", "import operator\n\nimport torch\nfrom torch.nn.functional import threshold_\n") + (
        "\n\nclass Evicting(Backend):\n    def __init__(self, metadata, topk_2d):\n        super().__init__(metadata)\n"
        "        topk_2d.masked_fill_(topk_2d < 4, -1)\n")
    site = _site(tmp_path, src)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("hooks, fixable", [
    # round AA (a1): a replay hook another hook calls is one a runner may call too; a loop over a spread display may
    # run zero times; a class-body alias binds the name to another def; a private holder is renamed per class
    (_REPLAY.format(param="", body="        self.replay_page_table(bs)\n" + _UPDATE) +
     "    def replay_page_table(self, bs):\n        self.forward_metadata = self.graph_metadata[bs]\n\n", False),
    (_REPLAY.format(param="", body="        self._update_graph(bs, seq_lens)\n        self.forward_metadata = "
                    "self.graph_metadata[bs]") + "    def _update_graph(self, bs, seq_lens):\n        md = "
     "self.graph_metadata[bs]\n        " + _COPY + "\n\n", True),
    (_REPLAY.format(param="", body="        self._update_graph(bs, seq_lens)\n        self.forward_metadata = "
                    "self.graph_metadata[bs]") + "    def _update_graph(self, bs, seq_lens):\n        md = "
     "self.graph_metadata[bs]\n        " + _COPY + "\n\n    def _page_table_graph(self, bs, seq_lens):\n        pass\n\n"
     "    _update_graph = _page_table_graph\n\n", False)])
def test_round_aa_replay_hooks_aliases_and_displays(tmp_path, hooks, fixable):
    src = _HOLDER_PLAN.replace("{eager}", "        self.forward_metadata = self._build(seq_lens)").replace(
        "    def forward(self", _CAPTURE + hooks + "    def forward(self")
    site = _site(tmp_path, src, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


def test_round_aa_a_holder_setter_read_as_a_value_is_not_judged_by_its_calls(tmp_path):
    src = _HOLDER_PLAN.replace("{eager}", "        self.forward_metadata = self._build(seq_lens)\n"
                               "        for listener in self.listeners:\n            listener(self._records[bs])").replace(
        "    def forward(self", "    def _adopt(self, md):\n        self.forward_metadata = md\n\n    def forward(self").replace(
        "        self._free = []\n", "        self._free = []\n        self.listeners = [self._adopt]\n")
    assert _site(tmp_path, src, kernel=KERNEL).status is Status.MANUAL


@pytest.mark.parametrize("loop, covers", [
    ("for md in [a]:\n        update(md)", True),
    # round AA (a1): a display with a starred element may be empty: the loop may run zero times
    ("for md in [*a]:\n        update(md)", False),
    ("for md in (*a, b):\n        update(md)", True)])
def test_round_aa_a_loop_over_a_display_runs_where_an_element_is_plain(loop, covers):
    import libcst as cst

    from topk_migrate.codemods.pass_topk_length.replay_paths import ReplayPaths
    tree = Tree(cst.parse_module(f"def hook(a, b):\n    {loop}\n"))
    fdef = tree.module.body[0]
    walker = ReplayPaths(tree, fdef, lambda small: "update(" in tree.module.code_for_node(small))
    assert walker.covers() is covers


_WINDOW_OPS = ("import torch\n\n\ndef narrowed(t):\n    torch.narrow(t, 1, 4, t.shape[1] - 4).fill_(-1)\n\n\n"
               "def as_tensor(t):\n    v = torch.as_tensor(t)\n    v[:, 4:] = -1\n\n\n"
               "def comprehension(t):\n    [row.fill_(-1) for row in t[4:]]\n\n\n"
               "def walrus(t):\n    if (tail := t[:, 4:]) is not None:\n        tail.fill_(-1)\n\n\n"
               "def zipped(t, starts):\n    for row, s in zip(t, starts):\n        row[s:] = -1\n\n\n"
               "def keyword_only(x, *, t, **unused):\n    t[:, 4:] = -1\n\n\n"
               "def reads(t):\n    return [int(row.max()) for row in t]\n")


@pytest.mark.parametrize("body, fixable", [
    ("    window_ops.reads(topk_2d)", True),
    # round AA (a2): a callee's views through a function of torch's, a comprehension's, a `:=`'s, a `zip` loop's
    # binding, and a keyword-only parameter beside `**kwargs`
    ("    window_ops.narrowed(topk_2d)", False),
    ("    window_ops.as_tensor(topk_2d)", False),
    ("    window_ops.comprehension(topk_2d)", False),
    ("    window_ops.walrus(topk_2d)", False),
    ("    window_ops.zipped(topk_2d, [4] * topk_2d.shape[0])", False),
    ("    window_ops.keyword_only(None, t=topk_2d)", False)])
def test_round_aa_a_callees_views_through_functions_and_bindings(tmp_path, body, fixable):
    (tmp_path / "window_ops.py").write_text(_WINDOW_OPS)
    (tmp_path / "layer.py").write_text("import window_ops\n" + _LAYER_RUN.format(body=body))
    site = _site(tmp_path, HANDED_INDICES, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


_READ_CONFIG = "    def __init__(self, hf_config):\n        self.dsa_index_topk = hf_config.index_topk\n\n"


@pytest.mark.parametrize("files, fixable", [
    # round AA (a3): every spelling of the width's field outside the engine's releases gives it the width handed
    # on, or the field is not read by its name: a config's `__init__` capping it, a dataclass default, a factory's
    # keyword, `_replace`, a dict's update, a dict's item, argparse's default, `object.__setattr__`, a property,
    # a positional argument
    ({"serving.py": "class ServingConfig:\n    def __init__(self, hf):\n"
                    "        self.index_topk = min(hf.index_topk, 8)\n"}, False),
    ({"serving.py": "import dataclasses\n\n@dataclasses.dataclass\nclass ServingConfig:\n    index_topk: int = 8\n"}, False),
    ({"serving.py": "import types\n\ndef serving(hf):\n    return types.SimpleNamespace(index_topk=hf.index_topk // 2)\n"},
     False),
    ({"serving.py": "def decode(cfg):\n    return cfg._replace(index_topk=8)\n"}, False),
    ({"serving.py": "PROFILE = {'index_topk': 8}\n\ndef load(cfg):\n    cfg.update(PROFILE)\n    return cfg\n"}, False),
    ({"serving.py": "MODEL = {}\n\ndef decode():\n    MODEL['index_topk'] = 8\n"}, False),
    ({"serving.py": "import argparse\n\ndef parse():\n    p = argparse.ArgumentParser()\n"
                    "    p.add_argument('--index-topk', type=int, default=8)\n    return p.parse_args([])\n"}, False),
    ({"serving.py": "class C:\n    def __post_init__(self):\n        object.__setattr__(self, 'index_topk', 8)\n"}, False),
    ({"serving.py": "class C:\n    @property\n    def index_topk(self):\n        return 8\n"}, False),
    ({"serving.py": "class C:\n    def __init__(self, index_topk):\n        self.index_topk = index_topk\n\n"
                    "def make():\n    return C(8)\n"}, False),
    ({"serving.py": "class C:\n    def __init__(self, hf):\n        self.index_topk = getattr(hf, 'index_topk', 8)\n"}, False),
    # round AB (b3): a record class built by position, a namedtuple's field string, a closure's nonlocal write,
    # an import overriding a local, an option's type converter, an override string, an f-string or template name
    # handed to setattr, a getattr default of 0, a parameter taken by position (cls(...), super().__init__(...))
    ({"serving.py": "import dataclasses\n\n@dataclasses.dataclass\nclass C:\n    index_topk: int\n\n"
                    "def make(hf):\n    return C(8)\n"}, False),
    ({"serving.py": "import collections\n\nProfile = collections.namedtuple('Profile', 'index_topk page_size')\n"}, False),
    ({"serving.py": "def make(hf):\n    width = hf.index_topk\n    def cap():\n        nonlocal width\n"
                    "        width = 8\n    cap()\n    return {'index_topk': width}\n"}, False),
    ({"serving.py": "def make(hf):\n    width = hf.index_topk\n    from site_settings import width\n"
                    "    return {'index_topk': width}\n"}, False),
    ({"serving.py": "import argparse\n\ndef parse():\n    p = argparse.ArgumentParser()\n"
                    "    p.add_argument('--index-topk', type=lambda s: min(int(s), 8))\n    return p\n"}, False),
    ({"serving.py": "OVERRIDES = '{\"index_topk\": 8}'\n"}, False),
    ({"serving.py": "def apply(cfg, prefix):\n    setattr(cfg, f'{prefix}index_topk', 8)\n"}, False),
    ({"serving.py": "def apply(cfg, prefix):\n    setattr(cfg, '{}index_topk'.format(prefix), 8)\n"}, False),
    ({"serving.py": "class C:\n    def __init__(self, hf):\n        self.index_topk = getattr(hf, 'index_topk', 0)\n"}, False),
    ({"serving.py": "class C:\n    def __init__(self, hf, index_topk):\n        self.index_topk = index_topk\n\n"
                    "    @classmethod\n    def decode(cls, hf):\n        return cls(hf, 8)\n"}, False),
    # what hands the width on: a plain copy, a getattr without a default, a keyword-only parameter of its name
    # handed a plain value, a dimension of a tensor handed in, a getter of the file returning the field, `int()`,
    # a name bound in two branches to plain values, a message naming the field
    ({"serving.py": "class C:\n    def __init__(self, hf, *, index_topk):\n        self.hf = hf\n"
                    "        self.index_topk = index_topk\n\ndef make(hf):\n    return C(hf, index_topk=hf.index_topk)\n"}, True),
    ({"serving.py": "class C:\n    def __init__(self, hf, vlm):\n        if vlm:\n            w = hf.text_config.index_topk\n"
                    "        else:\n            w = int(hf.index_topk)\n        self.index_topk = w\n"
                    "        if w is None:\n            raise ValueError(f'index_topk missing in {hf}')\n"}, True),
    ({"serving.py": "import types\n\ndef config(inp):\n    k = inp.indices.shape[-1]\n"
                    "    return types.SimpleNamespace(index_topk=k, other=getattr(inp, 'index_topk', None))\n"}, True),
    ({"serving.py": "def get_width(cfg):\n    return cfg['index_topk']\n\nclass C:\n    def __init__(self, cfg):\n"
                    "        self.index_topk = get_width(cfg)\n"}, True)])
def test_round_aa_the_width_field_is_given_no_value_of_the_project_own(tmp_path, files, fixable):
    src = _WIDTH_PLAN.replace("{width}", "self.dsa_index_topk").replace("class Backend:\n",
                                                                         "class Backend:\n" + _READ_CONFIG)
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    site = _site(tmp_path, src, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason
    if not fixable:
        assert "given a value of its own at serving.py" in site.reason


def test_round_aa_a_file_of_the_engines_releases_is_the_engines(tmp_path, monkeypatch):
    """A file giving the field a value of its own is the engine's only where its bytes are a release's
    (ENGINE_FILES, built by bench/engine_spellings.py from sglang's wheels); a fork's copy of it, changed or not
    listed, is the project's own (round AB: a vendored capturer whose module lowers its default)."""
    from topk_migrate.codemods.pass_topk_length import field_writes

    engine = "import dataclasses\n\n@dataclasses.dataclass(kw_only=True)\nclass DeepSeekV4Config:\n    index_topk: int = 512\n"
    src = _WIDTH_PLAN.replace("{width}", "self.dsa_index_topk").replace("class Backend:\n",
                                                                         "class Backend:\n" + _READ_CONFIG)
    (tmp_path / "deepseek_v4.py").write_text(engine)
    assert _site(tmp_path, src, kernel=KERNEL).status is Status.MANUAL
    monkeypatch.setitem(field_writes.ENGINE_FILES, field_writes.file_key(engine.encode()), "a release's file")
    assert _site(tmp_path, src, kernel=KERNEL).status is Status.FIXABLE
    (tmp_path / "deepseek_v4.py").write_text(engine.replace("512", "8"))
    assert _site(tmp_path, src, kernel=KERNEL).status is Status.MANUAL


_WINDOW_OPS_AB = ("import torch\n\n\ndef conditional(t):\n    v = t if t.dim() == 2 else t[:, 0]\n    v[:, 4:] = -1\n\n\n"
                  "def display(t, other):\n    for x in (t, other):\n        x[:, 4:] = -1\n\n\n"
                  "def unfolded(t):\n    t.unfold(1, 4, 4).fill_(-1)\n\n\n"
                  "def swapped(t):\n    t.swapdims(0, 1)[4:] = -1\n\n\n"
                  "def _evict(t):\n    t[:, 4:] = -1\n\n\n"
                  "def handed(t):\n    _evict(**dict(t=t))\n\n\n"
                  "def rebound(t):\n    return t.sum()\n\n\n"
                  "from fused_window import rebound  # noqa\n")


@pytest.mark.parametrize("body, fixable", [
    # round AB (b2): a callee's views through a conditional, a display looped over, a dict handed by `**`, torch's
    # `unfold` and `swapdims`; a def the module rebinds by an import runs the import's
    ("    window_ops.conditional(topk_2d)", False),
    ("    window_ops.display(topk_2d, topk_2d)", False),
    ("    window_ops.unfolded(topk_2d)", False),
    ("    window_ops.swapped(topk_2d)", False),
    ("    window_ops.handed(topk_2d)", False),
    ("    window_ops.rebound(topk_2d)", False)])
def test_round_ab_a_callees_views_and_rebound_defs(tmp_path, body, fixable):
    (tmp_path / "window_ops.py").write_text(_WINDOW_OPS_AB)
    (tmp_path / "fused_window.py").write_text("def rebound(t):\n    t[:, 4:] = -1\n")
    (tmp_path / "layer.py").write_text("import window_ops\n" + _LAYER_RUN.format(body=body))
    site = _site(tmp_path, HANDED_INDICES, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("run, fixable", [
    # round AB (b2): the module's own caller making a class by an inherited `__init__` or a dataclass's
    # `__post_init__`, a library handed a method to call
    ("def run(self, q, kv, indices, topk_2d, scale):\n        Trimmed(topk_2d)\n"
     "        return self.backend.forward(q, kv, indices, scale)", False),
    ("def run(self, q, kv, indices, topk_2d, scale):\n        Masked(topk_2d)\n"
     "        return self.backend.forward(q, kv, indices, scale)", False),
    ("def run(self, q, kv, indices, topk_2d, scale):\n        Kept(topk_2d)\n"
     "        return self.backend.forward(q, kv, indices, scale)", True),
    ("def run(self, q, kv, indices, topk_2d, scale):\n        torch.utils._pytree.tree_map(self.evict, [topk_2d])\n"
     "        return self.backend.forward(q, kv, indices, scale)", False)])
def test_round_ab_the_modules_own_callers_read_what_a_making_runs(tmp_path, run, fixable):
    (tmp_path / "requirements.txt").write_text("sglang-kernel==0.4.6\n")
    src = _OWN_LAYER.format(run=run).replace("import torch\n", "import dataclasses\n\nimport torch\n") + (
        "\n\nclass Window:\n    def __init__(self, topk_2d):\n        topk_2d.masked_fill_(topk_2d < 4, -1)\n"
        "\n\nclass Trimmed(Window):\n    pass\n"
        "\n\n@dataclasses.dataclass\nclass Masked:\n    topk: object\n\n    def __post_init__(self):\n"
        "        self.topk.masked_fill_(self.topk < 4, -1)\n"
        "\n\n@dataclasses.dataclass\nclass Kept:\n    topk: object\n"
        "\n\nclass Evictor:\n    def evict(self, t):\n        t[:, 4:] = -1\n")
    site = _site(tmp_path, src)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


_RECORD_COPY = """
    def copy_(self, other):
        for f in fields(self):
{guard}
            getattr(self, f.name).copy_(getattr(other, f.name))
"""
_KEPT = "md = self.graph_metadata[bs]\n        "
_CAPTURED = f"md = DSAMetadata(dsa_cache_seqlens_int32={_CLIP})\n        self.graph_metadata[bs] = md\n" \
            "        self.forward_metadata = md"


@pytest.mark.parametrize("guard, replay, fixable", [
    # round AB (b1): the record's copy skipped for some fields or some steps: a `continue` past the lengths, an
    # early `return`; a flag a nested def rewrites by `nonlocal`; a builder's new record while the holder gets what
    # was read before it (sglang 0.5.16's builder returns at once)
    ("            pass", f"{_KEPT}md.copy_(self._build_metadata(seq_lens))\n        self.forward_metadata = md", True),
    ("            if f.name != 'page_table_1':\n                continue",
     f"{_KEPT}md.copy_(self._build_metadata(seq_lens))\n        self.forward_metadata = md", False),
    ("            if other is self:\n                return",
     f"{_KEPT}md.copy_(self._build_metadata(seq_lens))\n        self.forward_metadata = md", False),
    ("            pass", f"{_KEPT}done = False\n\n        def fast():\n            nonlocal done\n"
                       "            done = bs > 4\n\n        fast()\n        if not done:\n"
                       f"            md.dsa_cache_seqlens_int32.copy_({_CLIP})\n        self.forward_metadata = md", False),
    ("            pass", f"{_KEPT}if bs > 4:\n            self._build_graph_metadata(bs, seq_lens)\n        else:\n"
                       f"            md.dsa_cache_seqlens_int32.copy_({_CLIP})\n        self.forward_metadata = md", False),
    ("            pass", "if bs not in self.graph_metadata:\n            self._build_graph_metadata(bs, seq_lens)\n"
                       f"            return\n        {_KEPT}md.dsa_cache_seqlens_int32.copy_({_CLIP})\n"
                       "        self.forward_metadata = md", True)])
def test_round_ab_a_replay_updates_on_every_path_of_what_it_runs(tmp_path, guard, replay, fixable):
    src = GRAPH_PER_CAPTURE.replace("{capture}", "        " + _CAPTURED).replace("{replay}", "        " + replay).replace(
        "from dataclasses import dataclass", "from dataclasses import dataclass, fields").replace(
        "    dsa_cache_seqlens_int32: torch.Tensor\n", "    dsa_cache_seqlens_int32: torch.Tensor\n" +
        _RECORD_COPY.format(guard=guard)).replace("    def forward(self", "    def _build_graph_metadata(self, bs, seq_lens):\n"
                                                  f"        {_CAPTURED}\n\n"
                                                  "    def _build_metadata(self, seq_lens):\n"
                                                  f"        return DSAMetadata(dsa_cache_seqlens_int32={_CLIP})\n\n"
                                                  "    def forward(self")
    (tmp_path / "requirements.txt").write_text("sglang-kernel==0.4.6\n")
    site = _site(tmp_path, src)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("other, fixable", [
    # round AB (b1): the refresh the replay calls replaced by another file: a plugin assigning it on the instance's
    # class, a subclass whose mixin of another file comes first in its bases
    ("def other_refresh(self, bs, forward_batch):\n    pass\n\n\ndef install(backend):\n"
     "    type(backend)._refresh = other_refresh\n", False),
    ("from backend import Backend\nfrom fused import Fused\n\n\nclass FusedBackend(Fused, Backend):\n    pass\n", False),
    ("def unrelated(backend):\n    return backend\n", True)])
def test_round_ab_a_refresh_another_file_may_replace_is_no_update(tmp_path, other, fixable):
    clip = "forward_batch.seq_lens.clamp(max=self.dsa_index_topk).to(torch.int32)"
    src = GRAPH_PER_CAPTURE.replace("seq_lens)", "forward_batch)").replace(
        "{capture}", "        " + _CAPTURED.replace(_CLIP, clip)).replace(
        "{replay}", "        self._refresh(bs, forward_batch)\n        self.forward_metadata = self.graph_metadata[bs]").replace(
        "    def forward(self", "    def _refresh(self, bs, forward_batch):\n"
                               f"        self.graph_metadata[bs].dsa_cache_seqlens_int32.copy_({clip})\n\n    def forward(self")
    (tmp_path / "requirements.txt").write_text("sglang-kernel==0.4.6\n")
    (tmp_path / "plugin.py").write_text(other)
    (tmp_path / "fused.py").write_text("class Fused:\n    def _refresh(self, bs, forward_batch):\n        pass\n")
    site = _site(tmp_path, src)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("decorator, fixable", [
    # round AB (b1): a clip of the module's own behind a cache keeps the first step's lengths
    ("", True), ("@functools.lru_cache(maxsize=64)\n", False)])
def test_round_ab_a_decorated_clip_is_not_its_body(tmp_path, decorator, fixable):
    src = ANNOTATED_HOLDER.format(extend="DSAMetadata(dsa_cache_seqlens_int32=clipped(forward_batch.seq_lens, "
                                         "self.dsa_index_topk))").replace(
        "import torch\n", "import functools\n\nimport torch\n\n\n" + decorator +
        "def clipped(seq_lens, width):\n    return seq_lens.clamp(max=width).to(torch.int32)\n", 1)
    site = _site(tmp_path, src, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


_WINDOW_SETTERS = ("class Window:\n    def __init__(self, topk):\n        self.topk = topk\n        self._start = 0\n\n"
                   "    @property\n    def start(self):\n        return self._start\n\n"
                   "    @start.setter\n    def start(self, value):\n        self._start = value\n{write}\n\n\n"
                   "def defaulted(topk, start):\n    def step(t=topk, s=start):\n{step}\n    step()\n")


@pytest.mark.parametrize("body, write, step, fixable", [
    # round AB (b2): a callee's nested def taking the tensor as a default argument; an attribute store running a
    # property setter of the project that re-masks the buffer its object keeps
    ("    window_ops.defaulted(topk_2d, 20)", "", "        t.masked_fill_(t < s, -1)", False),
    ("    window_ops.defaulted(topk_2d, 20)", "", "        return int((t < s).sum())", True),
    ("    ctx.window.start = 20", "        self.topk.masked_fill_(self.topk < value, -1)", "        pass", False),
    ("    ctx.window.start = 20", "", "        pass", True)])
def test_round_ab_a_default_argument_and_a_setter_are_what_a_caller_runs(tmp_path, body, write, step, fixable):
    (tmp_path / "window_ops.py").write_text(_WINDOW_SETTERS.format(write=write, step=step))
    (tmp_path / "layer.py").write_text("import window_ops\n" + _LAYER_RUN.format(body=body))
    site = _site(tmp_path, HANDED_INDICES, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("helper, fixable", [
    # round AB (b2): the kernel's function hands a table a caller may make share the indices' storage to a def of
    # the module that writes it in place (itself, or through another def it hands it on to)
    ("def _drop(table, start):\n    table.masked_fill_(table < start, -1)\n", False),
    ("def _drop(table, start):\n    _fill(table, start)\n\n\ndef _fill(t, start):\n    t[t < start] = -1\n", False),
    ("def _drop(table, start):\n    return int((table < start).sum())\n", True)])
def test_round_ab_a_table_handed_to_a_writing_def_may_be_the_indices(tmp_path, helper, fixable):
    src = HANDED_INDICES.replace("        metadata = self.forward_metadata\n",
                                 "        metadata = self.forward_metadata\n        _drop(metadata.page_table_1, 20)\n").replace(
        "\n\nclass Backend:", "\n\n" + helper + "\n\nclass Backend:")
    site = _site(tmp_path, src, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


_ENGINE_TREE = {
    "sglang/srt/layers/attention/dsa/utils.py": "def compute_dsa_seqlens(original_seq_lens, dsa_index_topk: int):\n"
                                                "    return original_seq_lens.clamp(min=1, max=dsa_index_topk)\n",
    "sglang/srt/layers/attention/dsa/transform_index.py":
        "import torch\n\n\ndef transform_index_page_table_decode(page_table, topk_indices, page_size=1):\n"
        "    locs = torch.where(topk_indices >= 0, page_table.gather(1, topk_indices.clamp(min=0).long()), -1)\n"
        "    return torch.sort(locs, dim=-1).values.to(torch.int32)\n"}


@pytest.mark.parametrize("where", [None, *_ENGINE_TREE])
def test_round_ab_a_forks_own_engine_tree_is_not_the_engine(tmp_path, where):
    """Round AB (b3): a fork's own copy of sglang's tree whose clip keeps empty rows at 1, or whose transform sorts
    the rows, is the fork's code, whatever its import path (engine_defs: a release's def, by fingerprint)."""
    src = ANNOTATED_HOLDER.format(extend="DSAMetadata(dsa_cache_seqlens_int32=compute_dsa_seqlens(forward_batch.seq_lens, "
                                         "self.dsa_index_topk).to(torch.int32))").replace(
        "import torch\n", "import torch\nfrom sglang.srt.layers.attention.dsa.utils import compute_dsa_seqlens\n"
        "from sglang.srt.layers.attention.dsa.transform_index import transform_index_page_table_decode\n", 1).replace(
        "return self._forward_flashmla_sparse(q, kv, indices, sm_scale)",
        "indices = transform_index_page_table_decode(page_table=self.req_to_token, topk_indices=indices)\n"
        "        return self._forward_flashmla_sparse(q, kv, indices, sm_scale)")
    if where:
        (tmp_path / where).parent.mkdir(parents=True)
        (tmp_path / where).write_text(_ENGINE_TREE[where])
    site = _site(tmp_path, src, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is (where is None), site.reason


_MADE_AB = "DSAMetadata(dsa_cache_seqlens_int32=forward_batch.seq_lens.clamp(max=self.dsa_index_topk).to(torch.int32))"


@pytest.mark.parametrize("plan, fixable", [
    # round AB (b1): an eager planner giving the holder this batch's metadata on some paths only: an early return
    # for a batch object seen before, a mode chain it falls through; on every path (an else, a raise) it is fine
    (f"if forward_batch is self._planned_for:\n            return\n        self.forward_metadata = {_MADE_AB}", False),
    (f"if forward_batch.forward_mode == 'decode':\n            self.forward_metadata = {_MADE_AB}\n"
     f"        elif forward_batch.forward_mode == 'extend':\n            self.forward_metadata = {_MADE_AB}", False),
    (f"if forward_batch.forward_mode == 'decode':\n            self.forward_metadata = {_MADE_AB}\n"
     f"        else:\n            self.forward_metadata = {_MADE_AB}", True),
    (f"if forward_batch is None:\n            raise ValueError('no batch')\n        self.forward_metadata = {_MADE_AB}", True)])
def test_round_ab_an_eager_planner_gives_the_holder_on_every_path(tmp_path, plan, fixable):
    src = ANNOTATED_HOLDER.format(extend=_MADE_AB).replace(
        "        if forward_batch.is_extend:\n            self.forward_metadata = " + _MADE_AB + "\n        else:\n"
        "            self.forward_metadata = DSAMetadata(dsa_cache_seqlens_int32=forward_batch.seq_lens.clamp(\n"
        "                max=self.dsa_index_topk).to(torch.int32))\n", "        " + plan + "\n")
    assert plan in src
    site = _site(tmp_path, src, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("given, fixable", [
    # round AB (b1): a base class of another file giving the holder what it is handed: each call here must hand an
    # object made for this batch (a cached record per batch size is an earlier batch's)
    (f"self.set_forward_metadata({_MADE_AB})", True),
    (f"if forward_batch.batch_size not in self._records:\n            self._records[forward_batch.batch_size] = {_MADE_AB}\n"
     "        self.set_forward_metadata(self._records[forward_batch.batch_size])", False)])
def test_round_ab_a_base_setter_of_another_file_is_handed_this_batchs_record(tmp_path, given, fixable):
    (tmp_path / "attn_base.py").write_text("class Base:\n    def set_forward_metadata(self, metadata):\n"
                                           "        self.forward_metadata = metadata\n")
    src = ANNOTATED_HOLDER.format(extend=_MADE_AB).replace(
        "class Backend:\n", "from attn_base import Base\n\n\nclass Backend(Base):\n").replace(
        "        if forward_batch.is_extend:\n            self.forward_metadata = " + _MADE_AB + "\n        else:\n"
        "            self.forward_metadata = DSAMetadata(dsa_cache_seqlens_int32=forward_batch.seq_lens.clamp(\n"
        "                max=self.dsa_index_topk).to(torch.int32))\n", "        " + given + "\n")
    assert given in src
    site = _site(tmp_path, src, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("pick, fixable", [
    # round AB (b2): a caller picking the backend by a method of its own that writes the buffer it keeps
    ("        self.buf.masked_fill_(self.buf < 20, -1)\n        return self.backend", False),
    ("        return self.backend", True)])
def test_round_ab_a_receiver_picked_by_a_writing_method(tmp_path, pick, fixable):
    (tmp_path / "layer.py").write_text(
        "class Layer:\n    def __init__(self, backend, buf):\n        self.backend = backend\n        self.buf = buf\n\n"
        "    def _pick(self):\n" + pick + "\n\n    def run(self, q, kv, topk_indices, scale):\n"
        "        return self._pick().forward(q, kv, topk_indices, scale)\n")
    site = _site(tmp_path, HANDED_INDICES, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


_TWO_CHAINS = f"""md = self.graph_metadata[bs]
        if forward_batch.is_decode():
            md.dsa_cache_seqlens_int32.copy_({_CLIP})
        elif forward_batch.is_target_verify():
            md.dsa_cache_seqlens_int32.copy_({_CLIP})
{{relabel}}        if forward_batch.is_decode():
            pass
        elif forward_batch.is_target_verify():
            pass
        else:
            raise ValueError("unsupported forward mode")
        self.forward_metadata = md"""


@pytest.mark.parametrize("relabel, fixable", [
    # round AB (b1): a mode relabelled between the chain that updates and the chain that declares the modes
    ("", True),
    ("        forward_batch.forward_mode = 'decode'\n", False),
    ("        self._relabel(forward_batch)\n", False)])
def test_round_ab_a_mode_the_hook_changes_declares_nothing(tmp_path, relabel, fixable):
    src = GRAPH_PER_CAPTURE.replace("seq_lens)", "forward_batch)").replace(
        "{capture}", "        " + _CAPTURED.replace("seq_lens.clamp", "forward_batch.seq_lens.clamp")).replace(
        "{replay}", "        " + _TWO_CHAINS.replace("{relabel}", relabel).replace(
            "seq_lens.clamp", "forward_batch.seq_lens.clamp")).replace(
        "    def forward(self", "    def _relabel(self, batch):\n        pass\n\n    def forward(self")
    (tmp_path / "requirements.txt").write_text("sglang-kernel==0.4.6\n")
    site = _site(tmp_path, src)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("replay, fixable", [
    # round AB (b1): a replay hook refreshing through a local def it calls (every run of it updates), or reading the
    # record through an accessor that only asserts and returns the table's item
    (f"md = self.graph_metadata[bs]\n\n        def refresh():\n            md.dsa_cache_seqlens_int32.copy_({_CLIP})\n\n"
     "        refresh()\n        self.forward_metadata = md", True),
    (f"md = self.graph_metadata[bs]\n\n        def refresh():\n            if bs > 4:\n                return\n"
     f"            md.dsa_cache_seqlens_int32.copy_({_CLIP})\n\n        refresh()\n        self.forward_metadata = md", False),
    (f"md = self._record(bs)\n        md.dsa_cache_seqlens_int32.copy_({_CLIP})\n        self.forward_metadata = md", True),
    (f"md = self._fresh(bs, seq_lens)\n        md.dsa_cache_seqlens_int32.copy_({_CLIP})\n        self.forward_metadata = md", False)])
def test_round_ab_a_replay_through_a_local_def_or_an_accessor(tmp_path, replay, fixable):
    src = GRAPH_PER_CAPTURE.replace("{capture}", "        " + _CAPTURED).replace("{replay}", "        " + replay).replace(
        "    def forward(self", "    def _record(self, bs):\n        assert bs in self.graph_metadata, bs\n"
                               "        return self.graph_metadata[bs]\n\n" + (
                                   "    def _fresh(self, bs, seq_lens):\n"
                                   f"        self.graph_metadata[bs] = DSAMetadata(dsa_cache_seqlens_int32={_CLIP})\n"
                                   "        return self.graph_metadata[bs]\n\n" if "_fresh" in replay else "")
        + "    def forward(self")
    (tmp_path / "requirements.txt").write_text("sglang-kernel==0.4.6\n")
    site = _site(tmp_path, src)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("body, fixable", [
    # round AB (b2): another file's caller reading the indices (a bounds check), or converting them to int32 under
    # their own name, keeps their rows and entries; any other rebinding may not
    ("    if int(topk_indices.max()) >= kv.shape[0]:\n        raise ValueError('past the pool')", True),
    ("    topk_indices = topk_indices.to(torch.int32)", True),
    ("    topk_indices = topk_indices.to(torch.int64)", True),
    # round AY: a narrower dtype wraps -1 (uint8: 255) or rounds large indices (half past 2048)
    ("    topk_indices = topk_indices.to(torch.uint8)", False),
    ("    topk_indices = topk_indices.to(torch.float16)", False),
    ("    topk_indices = topk_indices.flip(-1)", False),
    ("    topk_indices = topk_indices.to(torch.int32).sort(-1).values", False)])
def test_round_ab_a_caller_reading_or_converting_the_indices(tmp_path, body, fixable):
    (tmp_path / "layer.py").write_text(_LAYER_RUN.format(body=body))
    site = _site(tmp_path, HANDED_INDICES, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


_CONFIG_BACKEND = """\
\"\"\"Fork DSA backend; metadata.dsa_cache_seqlens_int32 holds seqlens clipped to topk.\"\"\"
from dataclasses import dataclass

import torch
from sgl_kernel.flash_mla import flash_mla_sparse_fwd


@dataclass
class DSAMetadata:
    dsa_cache_seqlens_int32: torch.Tensor


class Backend:
    def __init__(self, hf_config):
        self.dsa_index_topk = hf_config.index_topk
        self.forward_metadata = None

    def init_forward_metadata(self, forward_batch):
        self.forward_metadata = DSAMetadata(
            dsa_cache_seqlens_int32=torch.clamp(forward_batch.seq_lens, max=self.dsa_index_topk).to(torch.int32))

    def forward(self, q, kv, indices, scale):
        metadata = self.forward_metadata
        return flash_mla_sparse_fwd(q=q, kv=kv, indices=indices, sm_scale=scale)[0]
"""


@pytest.mark.parametrize("served, elsewhere, fixable", [
    # round AB (b3): a private field behind a property is the family's spelling: plain where every write of it is
    ("self._index_topk", "", True),
    ("self._index_topk // 2", "", False),
    ("self._index_topk", "def shrink(cfg):\n    cfg._index_topk = 8\n", False),
    ("self.__index_topk", "", True)])
def test_round_ab_a_private_width_field_behind_a_property(tmp_path, served, elsewhere, fixable):
    field = "__index_topk" if "__" in served else "_index_topk"
    (tmp_path / "serving_config.py").write_text(
        f"class ServingConfig:\n    def __init__(self, hf):\n        self.{field} = hf.index_topk\n\n"
        f"    @property\n    def index_topk(self):\n        return {served}\n")
    (tmp_path / "tuning.py").write_text(elsewhere or "X = 1\n")
    site = _site(tmp_path, _CONFIG_BACKEND, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


_WINDOW_OPS_AC = ("import torch\n\n\ndef held(batch):\n    batch.topk_2d.masked_fill_(batch.topk_2d < 4, -1)\n\n\n"
                  "def as_rows(t):\n    return t.view(t.shape[0], -1)\n\n\n"
                  "def through_helper(t):\n    rows = as_rows(t)\n    rows[:, 4:] = -1\n\n\n"
                  "def functional(t):\n    torch.Tensor.narrow(t, 1, 4, 4).fill_(-1)\n\n\n"
                  "def d1(t):\n    d2(t)\n\n\ndef d2(t):\n    d3(t)\n\n\ndef d3(t):\n    d4(t)\n\n\ndef d4(t):\n    d5(t)\n\n\n"
                  "def d5(t):\n    t[:, 4:] = -1\n\n\n"
                  "def reads(t):\n    rows = as_rows(t)\n    return int((rows >= 0).sum())\n")


@pytest.mark.parametrize("body, fixable", [
    # round AC (c2): a callee writing an attribute of the object it is handed, a view a project helper hands back,
    # torch's functional spelling of a view method, a chain of callees past the depth read (taken as writing)
    ("    window_ops.held(ctx)", False),
    ("    window_ops.through_helper(topk_2d)", False),
    ("    window_ops.functional(topk_2d)", False),
    ("    window_ops.d1(topk_2d)", False),
    ("    window_ops.reads(topk_2d)", True)])
def test_round_ac_a_callees_attribute_and_view_writes(tmp_path, body, fixable):
    (tmp_path / "window_ops.py").write_text(_WINDOW_OPS_AC)
    (tmp_path / "layer.py").write_text("import window_ops\n" + _LAYER_RUN.format(body=body))
    site = _site(tmp_path, HANDED_INDICES, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("replay, fixable", [
    # round AC (c1): a flag the hook declares `global` (any function may rebind it); a declaring chain under a
    # branch (`if self.debug_checks:`) declares nothing
    (f"global FAST\n        FAST = False\n        _fast_copy(bs)\n        md = self.graph_metadata[bs]\n"
     f"        if not FAST:\n            md.dsa_cache_seqlens_int32.copy_({_CLIP})\n        self.forward_metadata = md", False),
    (f"md = self.graph_metadata[bs]\n        if mode.is_decode():\n            md.dsa_cache_seqlens_int32.copy_({_CLIP})\n"
     "        if self.debug_checks:\n            if mode.is_decode():\n                pass\n            else:\n"
     "                raise ValueError(mode)\n        self.forward_metadata = md", False),
    (f"md = self.graph_metadata[bs]\n        if mode.is_decode():\n            md.dsa_cache_seqlens_int32.copy_({_CLIP})\n"
     "        if mode.is_decode():\n            pass\n        else:\n            raise ValueError(mode)\n"
     "        self.forward_metadata = md", True)])
def test_round_ac_a_global_flag_and_a_branch_declare_nothing(tmp_path, replay, fixable):
    src = GRAPH_PER_CAPTURE.replace("def init_forward_metadata_replay_cuda_graph(self, bs, seq_lens)",
                                    "def init_forward_metadata_replay_cuda_graph(self, bs, seq_lens, mode)").replace(
        "{capture}", "        " + _CAPTURED).replace("{replay}", "        " + replay) + (
        "\n\nFAST = False\n\n\ndef _fast_copy(bs):\n    global FAST\n    FAST = bs > 4\n")
    (tmp_path / "requirements.txt").write_text("sglang-kernel==0.4.6\n")
    site = _site(tmp_path, src)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("setter, fixable", [
    # round AC (c1): a base class's setter that skips the store on some calls (`while frozen`)
    ("    def set_forward_metadata(self, metadata):\n        self.forward_metadata = metadata\n", True),
    ("    def set_forward_metadata(self, metadata):\n        if getattr(self, 'frozen', False):\n            return\n"
     "        self.forward_metadata = metadata\n", False)])
def test_round_ac_a_base_setter_stores_on_every_call(tmp_path, setter, fixable):
    (tmp_path / "attn_base.py").write_text("class Base:\n" + setter)
    given = f"self.set_forward_metadata({_MADE_AB})"
    src = ANNOTATED_HOLDER.format(extend=_MADE_AB).replace(
        "class Backend:\n", "from attn_base import Base\n\n\nclass Backend(Base):\n").replace(
        "        if forward_batch.is_extend:\n            self.forward_metadata = " + _MADE_AB + "\n        else:\n"
        "            self.forward_metadata = DSAMetadata(dsa_cache_seqlens_int32=forward_batch.seq_lens.clamp(\n"
        "                max=self.dsa_index_topk).to(torch.int32))\n", "        " + given + "\n")
    site = _site(tmp_path, src, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("copy, declared, fixable", [
    # round AC (c1): a record copy whose source falls back to the record itself, or a loop over `fields(self)` of a
    # class that attaches the lengths after construction (no field)
    ("getattr(self, f.name).copy_(getattr(other, f.name))", True, True),
    ("getattr(self, f.name).copy_(getattr(other, f.name, getattr(self, f.name)))", True, False),
    ("getattr(self, f.name).copy_(getattr(other, f.name))", False, False)])
def test_round_ac_a_record_copy_copies_the_declared_field_from_the_other(tmp_path, copy, declared, fixable):
    record = ("    dsa_cache_seqlens_int32: torch.Tensor\n" if declared else "    page_table_1: torch.Tensor = None\n") + (
        "\n    def copy_(self, other):\n        for f in fields(self):\n            " + copy + "\n")
    src = GRAPH_PER_CAPTURE.replace("{capture}", "        " + _CAPTURED).replace(
        "{replay}", "        md = self.graph_metadata[bs]\n        md.copy_(self._build_metadata(seq_lens))\n"
                    "        self.forward_metadata = md").replace(
        "from dataclasses import dataclass", "from dataclasses import dataclass, fields").replace(
        "    dsa_cache_seqlens_int32: torch.Tensor\n", record).replace(
        "    def forward(self", "    def _build_metadata(self, seq_lens):\n"
                               f"        return DSAMetadata(dsa_cache_seqlens_int32={_CLIP})\n\n    def forward(self")
    (tmp_path / "requirements.txt").write_text("sglang-kernel==0.4.6\n")
    site = _site(tmp_path, src)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("elsewhere, fixable", [
    # round AC (c3): the width's family given a value by a function's `global` write, a `match` capture, read off the
    # environment; the engine's getter from a package named like the kernel's (`sgl_kernel_ext`)
    ("X = 1\n", True),
    ("INDEX_TOPK = None\n\n\ndef configure(cap):\n    global INDEX_TOPK\n    INDEX_TOPK = cap\n", False),
    ("def parse(msg):\n    match msg:\n        case {'cap': index_topk}:\n            return index_topk\n", False),
    ("import os\n\n\ndef width():\n    return os.environ.get('index_topk')\n\n\nclass C:\n"
     "    def __init__(self):\n        self.index_topk = width()\n", False)])
def test_round_ac_the_width_family_bound_by_global_match_or_environment(tmp_path, elsewhere, fixable):
    (tmp_path / "tuning.py").write_text(elsewhere)
    site = _site(tmp_path, _CONFIG_BACKEND, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("body, fixable", [
    # round AC (c3): a project clip of the engine's name is its body only as one return (a statement before it may
    # rebind the parameter)
    ("    return original_seq_lens.clamp(max=dsa_index_topk)\n", True),
    ("    original_seq_lens = original_seq_lens.clamp(min=1)\n    return original_seq_lens.clamp(max=dsa_index_topk)\n",
     False)])
def test_round_ac_a_vendored_clip_is_one_return(tmp_path, body, fixable):
    (tmp_path / "fork_utils.py").write_text("def compute_dsa_seqlens(original_seq_lens, dsa_index_topk):\n" + body)
    src = _CONFIG_BACKEND.replace("import torch\n", "import torch\nfrom fork_utils import compute_dsa_seqlens\n").replace(
        "torch.clamp(forward_batch.seq_lens, max=self.dsa_index_topk)",
        "compute_dsa_seqlens(forward_batch.seq_lens, self.dsa_index_topk)")
    site = _site(tmp_path, src, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("guard, fixable", [
    # round AC (c1): a builder named so is held to the every-path rule too (a memo by shape returning early)
    ("", True), ("        if forward_batch.batch_size == self._last_size:\n            return\n", False)])
def test_round_ac_an_eager_builder_gives_the_holder_on_every_path(tmp_path, guard, fixable):
    src = ANNOTATED_HOLDER.format(extend=_MADE_AB).replace(
        "        if forward_batch.is_extend:\n            self.forward_metadata = " + _MADE_AB + "\n        else:\n"
        "            self.forward_metadata = DSAMetadata(dsa_cache_seqlens_int32=forward_batch.seq_lens.clamp(\n"
        "                max=self.dsa_index_topk).to(torch.int32))\n",
        "        self._build_forward_metadata(forward_batch)\n\n    def _build_forward_metadata(self, forward_batch):\n"
        + guard + "        self._last_size = forward_batch.batch_size\n        self.forward_metadata = " + _MADE_AB + "\n")
    assert "_build_forward_metadata(self" in src
    site = _site(tmp_path, src, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("config, made, fixable", [
    # round AC (c3): a record class's field of the family taken by position whatever its default, a class made a
    # dataclass after its body, a class imported under another name
    ("@dataclasses.dataclass\nclass ServingConfig:\n    max_running: int\n    index_topk: Optional[int] = None\n",
     "ServingConfig(8, index_topk=hf.index_topk)", True),
    ("@dataclasses.dataclass\nclass ServingConfig:\n    max_running: int\n    index_topk: Optional[int] = None\n",
     "ServingConfig(8, min(hf.index_topk, 8))", False),
    ("class ServingConfig:\n    max_running: int\n    index_topk: int\n\n\n"
     "ServingConfig = dataclasses.dataclass(ServingConfig)\n", "ServingConfig(8, min(hf.index_topk, 8))", False),
    ("@dataclasses.dataclass\nclass ServingConfig:\n    max_running: int\n    index_topk: int\n",
     "Config(8, min(hf.index_topk, 8))", False)])
def test_round_ac_a_record_field_of_the_width_by_position(tmp_path, config, made, fixable):
    (tmp_path / "serving_config.py").write_text("import dataclasses\nfrom typing import Optional\n\n\n" + config)
    imported = "ServingConfig as Config" if made.startswith("Config(") else "ServingConfig"
    (tmp_path / "launcher.py").write_text(f"from serving_config import {imported}\n\n\ndef make(hf):\n    return {made}\n")
    site = _site(tmp_path, _CONFIG_BACKEND, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("config, launcher, fixable", [
    # round AC (c3): a parameter of the family is a spelling read or not (`**locals()`); a getter of the project
    # another file swaps on its module
    ("import types\n\n\ndef make(hf, index_topk):\n    return types.SimpleNamespace(**locals())\n",
     "import serving_config\n\n\ndef run(hf):\n    return serving_config.make(hf, index_topk=hf.index_topk)\n", True),
    ("import types\n\n\ndef make(hf, index_topk):\n    return types.SimpleNamespace(**locals())\n",
     "import serving_config\n\n\ndef run(hf):\n    return serving_config.make(hf, min(hf.index_topk, 8))\n", False),
    ("def width(hf):\n    return hf.index_topk\n\n\nclass Config:\n    def __init__(self, hf):\n"
     "        self.index_topk = width(hf)\n",
     "import serving_config\n\n\ndef narrow(hf):\n    return 8\n\n\nserving_config.width = narrow\n", False)])
def test_round_ac_a_width_parameter_or_getter_read_where_it_is_made(tmp_path, config, launcher, fixable):
    (tmp_path / "serving_config.py").write_text(config)
    (tmp_path / "launcher.py").write_text(launcher)
    site = _site(tmp_path, _CONFIG_BACKEND, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


# -- round AC's remnants (c2): the kernel's own function, and callees resolved as the callers' are -------------------

_FORWARD_AC2 = '''"""A fork's backend; metadata.dsa_cache_seqlens_int32 holds seqlens clipped to topk."""
import torch
from sgl_kernel.flash_mla import flash_mla_sparse_fwd
import window_ops
from window_ops import drop_before_window, occupancy


class Window:
    def __init__(self):
        self.seen = None

    def observe(self, table):
        self.seen = (table >= 0).sum(-1)

    def drop(self, table):
        window_ops.drop_before_window(table, 20)


class Backend:
    def __init__(self, metadata):
        self.forward_metadata = metadata
        self.window = Window()
        self.hooks = [_drop]
        self.seen = None

    def forward(self, q, kv, indices, scale):
        metadata = self.forward_metadata
{body}
        out, _, _ = flash_mla_sparse_fwd(q, kv, indices, scale)
        return out


def entry(inp):
    return Backend(inp.metadata).forward(inp.q, inp.kv, inp.indices, inp.sm_scale)


def _drop(md, start=20):
    md.page_table_1.masked_fill_(md.page_table_1 < start, -1)
'''
_WINDOW_OPS_AC2 = ("def drop_before_window(table, start):\n    table.masked_fill_(table < start, -1)\n\n\n"
                   "def occupancy(table, start):\n    return (table >= start).sum(-1)\n")


@pytest.mark.parametrize("body, fixable", [
    # round AC (c2): the function holding the kernel call hands the metadata (or its table, which may be the indices'
    # storage) to a def of the module, an imported function, a kept object's method delegating to one, or a hook kept
    # in a list (not read: taken as writing); one that reads is not refused
    ("        _drop(metadata)", False),
    ("        drop_before_window(metadata.page_table_1, 20)", False),
    ("        self.window.drop(metadata.page_table_1)", False),
    ("        for hook in self.hooks:\n            hook(metadata)", False),
    ("        self.seen = occupancy(metadata.page_table_1, 20)", True),
    ("        self.window.observe(metadata.page_table_1)", True),
    # a logger's method formats what it is handed, though a class of the project defines a `debug` of its own
    # (sglang 0.5.16's helper timing its launch: the release's safe edit "timing")
    ("        self.logger.debug('took %.3f ms', (self.seen - 1) * 1e3)", True)])
def test_round_ac_the_kernels_function_hands_nothing_to_a_writer(tmp_path, body, fixable):
    (tmp_path / "window_ops.py").write_text(_WINDOW_OPS_AC2)
    (tmp_path / "tracing.py").write_text("import functools\n\n\nclass Trace:\n    @functools.lru_cache\n"
                                         "    def debug(self, *args):\n        args[1].zero_()\n")
    (tmp_path / "requirements.txt").write_text("sglang-kernel==0.4.6\n")
    site = _site(tmp_path, _FORWARD_AC2.format(body=body))
    assert (site.status is Status.FIXABLE) is fixable, site.reason


_REGISTRY_AC2 = '''import window_ops


class Registry:
    def __init__(self):
        self.topk = None

    def register(self, topk):
        self.topk = topk

    def evict(self, start):
        if self.topk is not None:
            window_ops.drop_before_window(self.topk, start)

    @property
    def start(self):
        return 0

    @start.setter
    def start(self, value):
        self.evict(value)


REGISTRY = Registry()
'''


@pytest.mark.parametrize("body, fixable", [
    # round AC (c2): a module's registry writing the top-k it keeps, a method of what a callee is handed delegating
    # the write to an op, a property setter doing so; keeping it alone writes nothing (the write is read where it runs)
    ("    REGISTRY.register(topk_2d)\n    REGISTRY.evict(20)", False),
    ("    REGISTRY.evict(20)", False),
    ("    REGISTRY.register(topk_2d)", True),
    ("    window_ops.advance(ctx, 20)", False),
    ("    ctx.start = 20", False),
    ("    n = window_ops.occupancy(topk_2d, 20)", True)])
def test_round_ac_a_kept_tensor_written_later_through_an_object(tmp_path, body, fixable):
    (tmp_path / "window_ops.py").write_text(_WINDOW_OPS_AC2 + "\n\ndef advance(window, start):\n    window.evict(start)\n")
    (tmp_path / "layer.py").write_text(_REGISTRY_AC2.replace("import window_ops\n", "") + "\n\n" + "import window_ops\n"
                                       + _LAYER_RUN.format(body=body))
    site = _site(tmp_path, HANDED_INDICES, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


_OWN_CALLER_AC2 = '''

import functools
from fork_ops import evict


def applies_window(fn):
    @functools.wraps(fn)
    def wrapped(topk, start):
        topk.masked_fill_(topk < start, -1)
        return fn(topk, start)
    return wrapped


@applies_window
def dropped(topk, start):
    return (topk < 0).sum(-1)


def counted(topk, start):
    return (topk < 0).sum(-1)


class Layer:
    def __init__(self, backend):
        self.backend = backend

    def run(self, q, kv, indices, topk_2d, scale):
{run}
        return self.backend.forward(q, kv, indices, scale)
'''


@pytest.mark.parametrize("run, fixable", [
    # round AC (c2): the module's own caller handing the top-k to a decorated def (the wrapper runs, not the body),
    # to a function a package re-exports, or masking it after making the graph step that calls the kernel
    ("        dropped(topk_2d, 20)", False),
    ("        evict(topk_2d, 20)", False),
    ("        step = lambda: self.backend.forward(q, kv, indices, scale)\n        window_ops.drop_before_window(topk_2d, 20)"
     "\n        return step()", False),
    ("        counted(topk_2d, 20)", True)])
def test_round_ac_the_modules_own_callers_resolve_what_runs(tmp_path, run, fixable):
    (tmp_path / "window_ops.py").write_text(_WINDOW_OPS_AC2)
    (tmp_path / "fork_ops").mkdir()
    (tmp_path / "fork_ops" / "__init__.py").write_text("from .window import evict  # noqa: F401\n")
    (tmp_path / "fork_ops" / "window.py").write_text("def evict(topk, start):\n    topk.masked_fill_(topk < start, -1)\n")
    (tmp_path / "requirements.txt").write_text("sglang-kernel==0.4.6\n")
    site = _site(tmp_path, _FORWARD_AC2.format(body="") + _OWN_CALLER_AC2.format(run=run))
    assert (site.status is Status.FIXABLE) is fixable, site.reason


_BUILT_ELSEWHERE_AC2 = '''"""A fork's backend; metadata.dsa_cache_seqlens_int32 holds seqlens clipped to topk."""
import torch
from sgl_kernel.flash_mla import flash_mla_sparse_fwd
from dsa_metadata import build_metadata


class Backend:
    def __init__(self, hf_config):
        self.dsa_index_topk = hf_config.index_topk
        self.forward_metadata = None

    def init_forward_metadata(self, forward_batch):
        self.forward_metadata = build_metadata(forward_batch.seq_lens, self.dsa_index_topk)

    def forward(self, q, kv, indices, scale):
        metadata = self.forward_metadata
        out, _, _ = flash_mla_sparse_fwd(q=q, kv=kv, indices=indices, sm_scale=scale)
        return out
'''


@pytest.mark.parametrize("decorator, fixable", [
    # round AC (c3): a clip helper of another file under a decorator runs the wrapper (here one keeping a slot in
    # empty rows), not the body its returns are read from
    ("", True),
    ("@_keep_one_slot\n", False)])
def test_round_ac_a_decorated_clip_helper_of_another_file_is_not_its_body(tmp_path, decorator, fixable):
    (tmp_path / "dsa_metadata.py").write_text(
        "import functools\nfrom dataclasses import dataclass\n\nimport torch\n\n\n@dataclass\nclass DSAMetadata:\n"
        "    dsa_cache_seqlens_int32: torch.Tensor\n\n\ndef _keep_one_slot(fn):\n    @functools.wraps(fn)\n"
        "    def wrapper(*args, **kwargs):\n        return fn(*args, **kwargs).clamp(min=1)\n    return wrapper\n\n\n"
        f"{decorator}def clip_seqlens(seq_lens, dsa_index_topk):\n    return seq_lens.clamp(max=dsa_index_topk)\n\n\n"
        "def build_metadata(seq_lens, dsa_index_topk):\n"
        "    return DSAMetadata(dsa_cache_seqlens_int32=clip_seqlens(seq_lens, dsa_index_topk).to(torch.int32))\n")
    (tmp_path / "requirements.txt").write_text("sglang-kernel==0.4.6\n")
    site = _site(tmp_path, _BUILT_ELSEWHERE_AC2)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("refresh, fixable", [
    # a subclass's method handing what it is handed on to `super()`: the def calling itself by name is not its own
    # callee (a recursion writes only what its other statements write); round AB's b1
    ("        self.seen = batch.shape[0]", True),
    ("        batch.masked_fill_(batch < 4, -1)", False)])
def test_a_method_handing_on_to_its_own_name_is_read_through(tmp_path, refresh, fixable):
    (tmp_path / "layer.py").write_text(
        "class Base:\n    def refresh(self, batch):\n" + refresh + "\n\n\nclass Logged(Base):\n"
        "    def refresh(self, batch):\n        super().refresh(batch)\n\n\n"
        + "LOGGED = Logged()\n\n\n" + _LAYER_RUN.format(body="    LOGGED.refresh(topk_2d)"))
    site = _site(tmp_path, HANDED_INDICES, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


_WINDOW_KIT_AD2 = '''TABLES = []


class Window:
    def __init__(self, topk=None, start=20):
        self.topk, self.start = topk, start

    def evict(self, start):
        self.topk.masked_fill_(self.topk < start, -1)

    def __enter__(self):
        self.evict(self.start)
        return self

    def __exit__(self, *exc):
        return False

    @property
    def moved(self):
        self.evict(self.start)
        return True

    def __getitem__(self, start):
        self.evict(start)
        return self

    def advance(self, start):
        self.evict(start)
        return 0


class Timer:
    def __init__(self):
        self.t0, self.total = 0.0, 0.0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.total += 1.0
        return False


class Masking:
    def __init__(self, topk, start):
        self.topk = topk
        self.apply(start)

    def apply(self, start):
        self.topk.masked_fill_(self.topk < start, -1)


class Sink:
    def __init__(self, topk):
        self.topk, self._edge = topk, 0

    @property
    def edge(self):
        return self._edge

    @edge.setter
    def edge(self, value):
        self.topk.masked_fill_(self.topk < value, -1)


def apply_windows(start):
    for t in TABLES:
        t.masked_fill_(t < start, -1)


WINDOW = Window()
'''


@pytest.mark.parametrize("body, fixable", [
    # round AD (d2): which class's method runs on a parameter, a local, an imported object or a call's result is not
    # known: any def of the project of its name writing what its object keeps may be it; so may code run with no call
    # spelled (a scope's `__enter__`, a property's getter), a making's `__init__` calling a writing
    # method of self, a module function writing what its module keeps, a setter set by a literal `setattr`
    ("    ctx.evict(20)", False),
    ("    w = window_kit.Window(topk_2d)\n    w.evict(20)", False),
    ("    window_kit.WINDOW.evict(20)", False),
    ("    with window_kit.Window(topk_2d):\n        n = 1", False),
    ("    ok = ctx.moved", False),
    ("    window_kit.apply_windows(20)", False),
    ("    window_kit.Masking(topk_2d, 20)", False),
    ("    setattr(ctx, 'edge', 20)", False),
    # a scope counting in `__exit__` writes a number; a method no def of the project names is a library's
    ("    with window_kit.Timer():\n        n = 1", True),
    ("    n = ctx.count(3)", True),
    ("    n = ctx.start", True)])
def test_round_ad_what_a_caller_runs_on_objects_it_does_not_keep(tmp_path, body, fixable):
    (tmp_path / "window_kit.py").write_text(_WINDOW_KIT_AD2)
    (tmp_path / "layer.py").write_text("import window_kit\n" + _LAYER_RUN.format(body=body))
    site = _site(tmp_path, HANDED_INDICES, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("step, fixable", [
    # round AD (d2): a call in the traced call's own arguments runs before it
    ("ctx.advance(20)", False),
    ("len(ctx.topk)", True)])
def test_round_ad_a_call_in_the_traced_calls_arguments_runs_first(tmp_path, step, fixable):
    (tmp_path / "window_kit.py").write_text(_WINDOW_KIT_AD2)
    (tmp_path / "layer.py").write_text("import window_kit\n" + _LAYER_RUN.format(body="    n = 1").replace(
        "topk_indices, scale)\n", f"topk_indices, scale, step={step})\n"))
    src = HANDED_INDICES.replace("def forward(self, q, kv, topk_indices, scale):",
                                 "def forward(self, q, kv, topk_indices, scale, step=0):")
    site = _site(tmp_path, src, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("body, fixable", [
    # round AD (d2): kv read through a helper handed the batch: the batch is not kv's to write (it may hold the
    # indices' table too); kv's own view is
    ("        kv = kv_for_step(batch)\n        window_ops.drop_before_window(batch, 20)", False),
    ("        kv = batch.kv[0]\n        window_ops.drop_before_window(kv, 20)", True)])
def test_round_ad_kvs_root_is_its_view_not_what_a_helper_is_handed(tmp_path, body, fixable):
    (tmp_path / "window_ops.py").write_text(_WINDOW_OPS_AC2 + "\n\ndef kv_for_step(batch):\n    return batch.kv\n")
    (tmp_path / "requirements.txt").write_text("sglang-kernel==0.4.6\n")
    src = _FORWARD_AC2.replace("def forward(self, q, kv, indices, scale):", "def forward(self, q, batch, indices, scale):")
    src = src.replace("from window_ops import drop_before_window, occupancy", "from window_ops import kv_for_step")
    site = _site(tmp_path, src.format(body=body))
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("impl, fixable", [
    # round AD (d3): a wrapper handing on to a function of the project named like the kernel is the kernel by that
    # function's body, read the same way: one forwarding unchanged is; one sorting the rows is not
    ("    return _kernel(q, kv, indices, sm_scale, d_v, attn_sink, topk_length)\n", True),
    ("    order = indices[:, 0, 0].argsort()\n"
     "    return _kernel(q[order], kv, indices[order], sm_scale, d_v, attn_sink, topk_length)\n", False)])
def test_round_ad_a_wrapper_hands_on_to_the_project_function_by_its_body(tmp_path, impl, fixable):
    sig = "def flash_mla_sparse_fwd(q, kv, indices, sm_scale, d_v=512, attn_sink=None, topk_length=None):\n"
    (tmp_path / "fork_kernels" / "sm90").mkdir(parents=True)
    (tmp_path / "fork_kernels" / "__init__.py").write_text("")
    (tmp_path / "fork_kernels" / "sm90" / "__init__.py").write_text("")
    (tmp_path / "fork_kernels" / "sm90" / "sparse_mla.py").write_text(
        "from sgl_kernel.flash_mla import flash_mla_sparse_fwd as _kernel\n\n\n" + sig + impl)
    (tmp_path / "fork_kernels" / "api.py").write_text(
        "from fork_kernels.sm90.sparse_mla import flash_mla_sparse_fwd as _impl\n\n\n" + sig
        + "    return _impl(q, kv, indices, sm_scale, d_v, attn_sink, topk_length)\n")
    (tmp_path / "requirements.txt").write_text("sglang-kernel==0.4.6\n")
    src = HANDED_INDICES.replace("from sgl_kernel.flash_mla import flash_mla_sparse_fwd",
                                 "from fork_kernels.api import flash_mla_sparse_fwd")
    site = _site(tmp_path, src)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("eager, extra, fixable", [
    # round AD (d1): a setter of the holder is judged by what its callers hand: one a class body aliases, a nested
    # def kept as one, a listener lambda are called with what is not read
    ("        self._adopt(self._build(seq_lens))", "", True),
    ("        self.set_md(self._records.setdefault(bs, self._build(seq_lens)))", "    set_md = _adopt\n\n", False),
    ("        def adopt(md):\n            self.forward_metadata = md\n        adopt(self._records.setdefault(bs, self._build(seq_lens)))",
     "", False),
    ("        self.hooks = [lambda md: setattr(self, 'forward_metadata', md)]", "", False),
    # a record's own `replace` method is not `dataclasses.replace`; a base recycling its objects makes none
    ("        self.forward_metadata = self.forward_metadata.replace(bs)", "", False),
    ("        self.forward_metadata = dataclasses.replace(self._build(seq_lens))", "", True)])
def test_round_ad_what_gives_the_holder_is_read_where_it_runs(tmp_path, eager, extra, fixable):
    adopt = "    def _adopt(self, md):\n        self.forward_metadata = md\n\n" if "_adopt" in eager + extra else ""
    src = _HOLDER_PLAN.replace("{eager}", eager).replace("    def forward(self", adopt + extra + "    def forward(self")
    site = _site(tmp_path, src, kernel=KERNEL)  # (a setter nothing here calls is refused alone: round AQ)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("read, attend, refilled", [
    # round AD (d1): the holder read through a local handed on, or off a backend handed to a module function, is
    # held as `metadata = self.forward_metadata` is: an allocation cache giving it an earlier batch's record refuses
    ("        md = self.forward_metadata\n        return _attend(q, kv, topk_indices, sm_scale, metadata=md)",
     "def _attend(q, kv, topk_indices, sm_scale, metadata=None):\n", False),
    ("        return _attend(self, q, kv, topk_indices, sm_scale)",
     "def _attend(backend, q, kv, topk_indices, sm_scale):\n    metadata = backend.forward_metadata\n", False),
    ("        return _attend(self, q, kv, topk_indices, sm_scale)",
     "def _attend(backend, q, kv, topk_indices, sm_scale):\n    metadata = backend.forward_metadata\n", True)])
def test_round_ad_the_holder_read_elsewhere_is_held(tmp_path, read, attend, refilled):
    eager = ("        md = self._records.get(bs)\n        if md is None:\n            md = self._build(seq_lens)\n"
             "            self._records[bs] = md\n" + ("        md.dsa_cache_seqlens_int32.copy_(" + _CLIP + ")\n" if refilled
                                                    else "") + "        self.forward_metadata = md")
    src = _HOLDER_PLAN.replace("{eager}", eager).replace(
        "        metadata = self.forward_metadata\n        return flash_mla_sparse_fwd(q=q, kv=kv, indices=topk_indices, "
        "sm_scale=sm_scale)[0]\n", read + "\n\n\n" + attend
        + "    return flash_mla_sparse_fwd(q=q, kv=kv, indices=topk_indices, sm_scale=sm_scale)[0]\n")
    site = _site(tmp_path, src, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is refilled, site.reason


_PROTOCOL_KIT_AE = '''class Window:
    def __init__(self, topk=None, start=20):
        self.topk, self.start = topk, start

    def _evict(self):
        self.topk.masked_fill_(self.topk < self.start, -1)

    def __len__(self):
        self._evict()
        return 1

    def __iter__(self):
        self._evict()
        return iter(())

    def __bool__(self):
        self._evict()
        return True

    __enter__ = _evict

    def _get_edge(self):
        self._evict()
        return 0

    edge = property(_get_edge)


class Stopwatch:
    def __init__(self):
        self.t0 = 0.0

    def start(self):
        self.t0 = 1.0
'''


@pytest.mark.parametrize("body, fixable", [
    # round AE (e2): code a caller runs through an object's protocol (`len`, a loop, a truth test), a class body's
    # alias of `__enter__`, a property made by a call, `getattr`/`hasattr` with a literal name
    ("    n = len(ctx)", False),
    ("    for x in ctx:\n        pass", False),
    ("    xs = [x for x in ctx]", False),  # (a comprehension's loop: it has no place of its own)
    ("    xs = [i for i in range(3)]", True),
    ("    if ctx:\n        pass", False),
    ("    with ctx:\n        pass", False),
    ("    e = ctx.edge", False),
    ("    e = getattr(ctx, 'edge', 0)", False),
    # an object whose class the file says: a stopwatch made here, a library's scope; containers and literals
    ("    sw = window_kit.Stopwatch()\n    sw.start()", True),
    ("    with torch.no_grad():\n        n = len([1, 2])", True),
    ("    for i in range(3):\n        pass", True)])
def test_round_ae_protocol_code_a_caller_runs(tmp_path, body, fixable):
    (tmp_path / "window_kit.py").write_text(_PROTOCOL_KIT_AE)
    (tmp_path / "layer.py").write_text("import window_kit\n" + _LAYER_RUN.format(body=body))
    site = _site(tmp_path, HANDED_INDICES, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("api", [
    # round AE (e3): the wrapper's inner import in a `try` whose handler raises, or relative, is resolved and read:
    # an inner sorting the rows refuses, a plain one does not
    "try:\n    from fork_kernels.sm90.sparse_mla import flash_mla_sparse_fwd as _impl\nexcept ImportError as e:\n"
    "    raise ImportError('not built') from e\n",
    "from .sm90.sparse_mla import flash_mla_sparse_fwd as _impl\n"])
@pytest.mark.parametrize("sorts", [True, False])
def test_round_ae_a_wrappers_inner_import_is_resolved_wherever_it_stands(tmp_path, api, sorts):
    sig = "def flash_mla_sparse_fwd(q, kv, indices, sm_scale, d_v=512, attn_sink=None, topk_length=None):\n"
    (tmp_path / "fork_kernels" / "sm90").mkdir(parents=True)
    (tmp_path / "fork_kernels" / "__init__.py").write_text("")
    (tmp_path / "fork_kernels" / "sm90" / "__init__.py").write_text("")
    (tmp_path / "fork_kernels" / "sm90" / "sparse_mla.py").write_text(
        "from sgl_kernel.flash_mla import flash_mla_sparse_fwd as _kernel\n\n\n" + sig + (
            "    order = indices[:, 0, 0].argsort()\n"
            "    return _kernel(q[order], kv, indices[order], sm_scale, d_v, attn_sink, topk_length)\n" if sorts else
            "    return _kernel(q, kv, indices, sm_scale, d_v, attn_sink, topk_length)\n"))
    (tmp_path / "fork_kernels" / "api.py").write_text(
        api + "\n\n" + sig + "    return _impl(q, kv, indices, sm_scale, d_v, attn_sink, topk_length)\n")
    (tmp_path / "requirements.txt").write_text("sglang-kernel==0.4.6\n")
    src = HANDED_INDICES.replace("from sgl_kernel.flash_mla import flash_mla_sparse_fwd",
                                 "from fork_kernels.api import flash_mla_sparse_fwd")
    site = _site(tmp_path, src)
    assert (site.status is Status.FIXABLE) is not sorts, site.reason


_STATIC_RECORD_AD = '''"""A fork's backend; metadata.dsa_cache_seqlens_int32 holds seqlens clipped to topk."""
from dataclasses import dataclass

import torch
from sgl_kernel.flash_mla import flash_mla_sparse_fwd


@dataclass
class DSAMetadata:
    dsa_cache_seqlens_int32: torch.Tensor


class Backend:
    def __init__(self, dsa_index_topk, seq_lens):
        self.dsa_index_topk = dsa_index_topk
        self.forward_metadata = DSAMetadata(seq_lens.clamp(max=dsa_index_topk).to(torch.int32))

    def init_forward_metadata(self, forward_batch):
        md = self.forward_metadata
{refresh}

    def forward(self, q, kv, topk_indices, sm_scale):
        metadata = self.forward_metadata
        return flash_mla_sparse_fwd(q=q, kv=kv, indices=topk_indices, sm_scale=sm_scale)[0]
'''


@pytest.mark.parametrize("refresh, fixable", [
    # round AD (d1): a record made once in `__init__` keeps its lengths unless every planner run rewrites them
    ("        md.dsa_cache_seqlens_int32.copy_(forward_batch.seq_lens.clamp(max=self.dsa_index_topk).to(torch.int32))", True),
    ("        if forward_batch.forward_mode == 'decode':\n"
     "            md.dsa_cache_seqlens_int32.copy_(forward_batch.seq_lens.clamp(max=self.dsa_index_topk).to(torch.int32))",
     False)])
def test_round_ad_a_record_made_once_is_refreshed_on_every_step(tmp_path, refresh, fixable):
    site = _site(tmp_path, _STATIC_RECORD_AD.format(refresh=refresh), kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


_RECORD_COPY_AD = '''"""A fork's backend; metadata.dsa_cache_seqlens_int32 holds seqlens clipped to topk."""
from dataclasses import dataclass

import torch
from sgl_kernel.flash_mla import flash_mla_sparse_fwd


@dataclass
class DSAMetadata:
    dsa_cache_seqlens_int32: torch.Tensor

    def copy_(self, other):
{copy}


class Backend:
    def __init__(self, dsa_index_topk):
        self.dsa_index_topk = dsa_index_topk
        self.forward_metadata = None
        self._records = {{}}
        self._staged = None

    def stage_next(self, forward_batch):
        self._staged = DSAMetadata(forward_batch.seq_lens.clamp(max=self.dsa_index_topk).to(torch.int32))

    def init_forward_metadata(self, forward_batch):
        md = self._records.get(forward_batch.batch_size)
        if md is None:
            md = DSAMetadata(forward_batch.seq_lens.clamp(max=self.dsa_index_topk).to(torch.int32))
            self._records[forward_batch.batch_size] = md
        md.copy_({source})
        self.forward_metadata = md

    def forward(self, q, kv, topk_indices, sm_scale):
        metadata = self.forward_metadata
        return flash_mla_sparse_fwd(q=q, kv=kv, indices=topk_indices, sm_scale=sm_scale)[0]
'''
_FRESH_AD = "DSAMetadata(forward_batch.seq_lens.clamp(max=self.dsa_index_topk).to(torch.int32))"


@pytest.mark.parametrize("copy, source, fixable", [
    # round AD (d1): a record refreshed by its class's `copy_` from a record made for this batch is; from a plan
    # staged for another batch, or by a `copy_` that may copy the record's own lengths back, is not
    ("        self.dsa_cache_seqlens_int32.copy_(other.dsa_cache_seqlens_int32)", _FRESH_AD, True),
    ("        self.dsa_cache_seqlens_int32.copy_(other.dsa_cache_seqlens_int32)", "self._staged", False),
    ("        src = other if other.dsa_cache_seqlens_int32 is not None else self\n"
     "        self.dsa_cache_seqlens_int32.copy_(src.dsa_cache_seqlens_int32)", _FRESH_AD, False)])
def test_round_ad_a_record_copy_is_from_this_batch(tmp_path, copy, source, fixable):
    site = _site(tmp_path, _RECORD_COPY_AD.format(copy=copy, source=source), kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


_KIT_AF = '''import functools
from functools import cached_property as lazy_attr

import torch


def windowed(fn):
    @functools.wraps(fn)
    def run(self, *args, **kwargs):
        self.window.topk.masked_fill_(self.window.topk < 20, -1)
        return fn(self, *args, **kwargs)
    return run


def timed(fn):
    @functools.wraps(fn)
    def run(self, *args, **kwargs):
        out = fn(self, *args, **kwargs)
        self.elapsed = 1.0
        return out
    return run


def flipped(fn):
    def run(self, q, kv, topk_indices, scale):
        return fn(self, q.flip(0), kv, topk_indices.flip(0), scale)
    return run


class Plain:
    def __init__(self, topk=None):
        self.topk = topk


class EvictMixin:
    def evict(self):
        self.topk.masked_fill_(self.topk < 20, -1)


class Mixed(Plain, EvictMixin):
    pass


class Switched:
    def __init__(self, topk=None):
        self.topk = topk

    if torch.cuda.is_available():
        def trim(self):
            self.topk.masked_fill_(self.topk < 20, -1)


class Protocol:
    def __init__(self, topk=None):
        self.topk = topk

    def __iter__(self):
        self.topk.masked_fill_(self.topk < 20, -1)
        return iter((0, 1))

    def __contains__(self, x):
        self.topk.masked_fill_(self.topk < 20, -1)
        return False

    def size(self):
        self.topk.masked_fill_(self.topk < 20, -1)
        return 0

    @lazy_attr
    def edge(self):
        self.topk.masked_fill_(self.topk < 20, -1)
        return 0

    def __del__(self):
        self.topk.masked_fill_(self.topk < 20, -1)


class Recycled(Plain):
    def __new__(cls, *args):
        return Mixed(*args)

    def evict(self):
        pass


class Indexer:
    def __init__(self, topk=None):
        self.topk = topk

    def init_forward_metadata(self, batch):
        self.topk[:, 12:] = -1


Renamed = Mixed
'''

_LAYER_AF = '''import weakref

import torch
import window_kit
from window_kit import Mixed, Plain, Protocol, Recycled, Switched


class Layer(torch.nn.Module):
    def __init__(self, backend, topk):
        super().__init__()
        self.backend = backend
        self.window = {make}
        self.pending = []
        self.calls = 0
{init}
{decorated}    def forward(self, q, kv, topk_indices, scale, other=None):
{body}
        return self.backend.forward(q, kv, topk_indices, scale)
'''


@pytest.mark.parametrize("make, init, decorated, body, fixable", [
    # round AE (e2): a caller's decorator of the project runs its wrapper first; a pre-hook runs before a module's
    # forward; dropping an attribute's last reference runs `__del__`
    ("Plain(topk)", "", "    @window_kit.windowed\n", "        pass", False),
    ("Plain(topk)", "", "    @window_kit.flipped\n", "        pass", False),
    ("Plain(topk)", "", "    @window_kit.timed\n", "        pass", True),
    ("Plain(topk)", "        self.register_forward_pre_hook(Layer._mask)\n\n    @staticmethod\n    def _mask(module, args):\n"
     "        module.window.topk.masked_fill_(module.window.topk < 20, -1)\n", "", "        pass", False),
    ("Plain(topk)", "        self.register_forward_pre_hook(Layer._count)\n\n    @staticmethod\n    def _count(module, args):\n"
     "        module.calls += 1\n", "", "        pass", True),
    ("Protocol(topk)", "", "", "        self.window = None", False),
    # round AF (f2): what runs with no call spelled: an unpacking, a builtin iterating, `in`, a getter under an alias,
    # a size read on a window; a method under a class body's `if`, in a second base, of a class rebound by name, of
    # what `__new__` hands back, through a library's proxy; an indexer's hook of the metadata hook's name
    ("Protocol(topk)", "", "", "        lo, hi = self.window", False),
    ("Protocol(topk)", "", "", "        edges = sorted(self.window)", False),
    ("Protocol(topk)", "", "", "        seen = 0 in self.window", False),
    ("Protocol(topk)", "", "", "        e = self.window.edge", False),
    ("Plain(topk)", "", "", "        if other is not None:\n            n = other.size()", False),
    ("Switched(topk)", "", "", "        self.window.trim()", False),
    ("Mixed(topk)", "", "", "        self.window.evict()", False),
    ("window_kit.Renamed(topk)", "", "", "        self.window.evict()", False),
    ("Recycled(topk)", "", "", "        self.window.evict()", False),
    ("weakref.proxy(Mixed(topk))", "", "", "        self.window.evict()", False),
    ("window_kit.Indexer(topk)", "", "", "        self.window.init_forward_metadata(None)", False),
    # safe: a list the layer keeps tested for truth, a plain tuple unpacked, a size read off the tensor handed on
    ("Plain(topk)", "", "", "        if self.pending:\n            pass\n        a, b = 1, 2", True),
    ("Plain(topk)", "", "", "        n = topk_indices.size(0)", True)])
def test_round_af_code_a_caller_runs_without_a_call_spelled(tmp_path, make, init, decorated, body, fixable):
    (tmp_path / "window_kit.py").write_text(_KIT_AF)
    layer = _LAYER_AF.format(make=make, init=init, decorated=decorated, body=body)
    (tmp_path / "layer.py").write_text(layer)
    site = _site(tmp_path, HANDED_INDICES, kernel=KERNEL)
    if fixable:  # round AN: torch calls the module's `forward` as `layer(...)`, so its callers are not seen; the same
        # layer as a plain class (no pre-hook then) is read through
        assert site.status is Status.MANUAL and "without spelling its name" in site.reason, site.reason
        if "pre_hook" not in init:
            (tmp_path / "layer.py").write_text(layer.replace("(torch.nn.Module)", "").replace("super().__init__()", "pass"))
            site = _site(tmp_path, HANDED_INDICES, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is (fixable and "pre_hook" not in init), site.reason


_MIXIN_AE = ("class ServingConfig:\n    def __init__(self, hf, index_topk, max_running):\n        self.hf = hf\n"
             "        self.index_topk = index_topk\n        self.max_running = max_running\n\n\n"
             "class Mixin:\n    def __init__(self, hf, index_topk, max_running):\n{mixin}\n\n\n"
             "class DecodeConfig(Mixin, ServingConfig):\n    pass\n")


@pytest.mark.parametrize("config, launcher, fixable", [
    # round AE (e3): a base listed first hands the width's class another value through super(); a mapping whose
    # `__getitem__` computes the item; round AF (f3): a NamedTuple's fields are its body's
    (_MIXIN_AE.format(mixin="        super().__init__(hf, min(index_topk, 8), max_running)"),
     "from serving_config import DecodeConfig\n\n\ndef make(hf):\n    return DecodeConfig(hf, hf.index_topk, 8)\n", False),
    (_MIXIN_AE.format(mixin="        assert index_topk > 0\n        super().__init__(hf, index_topk, max_running)"),
     "from serving_config import DecodeConfig\n\n\ndef make(hf):\n    return DecodeConfig(hf, hf.index_topk, 8)\n", True),
    ("class RoleConfig:\n    def __init__(self, hf):\n        self.hf = hf\n\n    def __getitem__(self, key):\n"
     "        return min(getattr(self.hf, key), 8)\n\n\nclass ServingConfig:\n    def __init__(self, hf):\n"
     "        self.index_topk = RoleConfig(hf)['index_topk']\n", "X = 1\n", False),
    ("class RoleConfig:\n    def __init__(self, hf):\n        self.hf = hf\n\n    def __getitem__(self, key):\n"
     "        return getattr(self.hf, key)\n\n\nclass ServingConfig:\n    def __init__(self, hf):\n"
     "        self.index_topk = RoleConfig(hf)['index_topk']\n", "X = 1\n", True),
    ("from typing import NamedTuple\n\n\nclass IndexerSettings(NamedTuple):\n    max_running: int\n    index_topk: int\n",
     "from serving_config import IndexerSettings\n\n\ndef make(hf):\n"
     "    return IndexerSettings(max_running=8, index_topk=hf.index_topk)\n", True),
    ("from typing import NamedTuple\n\n\nclass IndexerSettings(NamedTuple):\n    max_running: int\n    index_topk: int\n",
     "from serving_config import IndexerSettings\n\n\ndef make(hf):\n    return IndexerSettings(8, min(hf.index_topk, 8))\n",
     False)])
def test_round_ae_the_widths_value_through_mixins_items_and_records(tmp_path, config, launcher, fixable):
    (tmp_path / "serving_config.py").write_text(config)
    (tmp_path / "launcher.py").write_text(launcher)
    site = _site(tmp_path, _CONFIG_BACKEND, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


def test_round_ae_a_package_changing_its_own_search_path_is_not_followed(tmp_path):
    """e3's u_identity_inner_package_path_overlay: `__path__.insert(0, build)` in the kernel package's `__init__`
    may serve another `sm90/sparse_mla.py` than the one the resolver reads."""
    sig = "def flash_mla_sparse_fwd(q, kv, indices, sm_scale, d_v=512, attn_sink=None, topk_length=None):\n"
    (tmp_path / "fork_kernels" / "sm90").mkdir(parents=True)
    (tmp_path / "fork_kernels" / "sm90" / "__init__.py").write_text("")
    (tmp_path / "fork_kernels" / "sm90" / "sparse_mla.py").write_text(
        "from sgl_kernel.flash_mla import flash_mla_sparse_fwd as _kernel\n\n\n" + sig
        + "    return _kernel(q, kv, indices, sm_scale, d_v, attn_sink, topk_length)\n")
    (tmp_path / "fork_kernels" / "api.py").write_text(
        "from .sm90.sparse_mla import flash_mla_sparse_fwd as _impl\n\n\n" + sig
        + "    return _impl(q, kv, indices, sm_scale, d_v, attn_sink, topk_length)\n")
    (tmp_path / "requirements.txt").write_text("sglang-kernel==0.4.6\n")
    src = HANDED_INDICES.replace("from sgl_kernel.flash_mla import flash_mla_sparse_fwd",
                                 "from fork_kernels.api import flash_mla_sparse_fwd")
    for init, fixable in (("", True), ("import os\n\n__path__.insert(0, os.path.join(os.path.dirname(__file__), 'b'))\n",
                                       False)):
        (tmp_path / "fork_kernels" / "__init__.py").write_text(init)
        site = _site(tmp_path, src)
        assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("eager, extra, fixable", [
    # round AF (f1): a setter or the holder named by a string (`getattr(self, "_adopt")`, `methodcaller`, a partial
    # of setattr) is called or set with what is not read; a record class binding `__new__` in its body
    ("        getattr(self, '_adopt')(self._records.setdefault(bs, self._build(seq_lens)))", "", False),
    ("        operator.methodcaller('_adopt', self._records.setdefault(bs, self._build(seq_lens)))(self)", "", False),
    ("        self.hooks = [functools.partial(setattr, self, 'forward_metadata')]", "", False),
    ("        self.forward_metadata = getattr(self, 'forward_metadata', None) or self._build(seq_lens)", "", False),
    ("        if getattr(self, 'forward_metadata', None) is not None:\n            pass\n"
     "        self._adopt(self._build(seq_lens))", "", True)])
def test_round_af_a_string_naming_the_setter_or_the_holder(tmp_path, eager, extra, fixable):
    src = "import functools\nimport operator\n" + _HOLDER_PLAN.replace("{eager}", eager).replace(
        "    def forward(self", "    def _adopt(self, md):\n        self.forward_metadata = md\n\n" + extra + "    def forward(self")
    site = _site(tmp_path, src, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("declaration, fixable", [
    # round AF (f1): `__new__` bound in the record's body, or installed on each subclass by a base's hook
    ("def _recycled(cls, *args, **kwargs):\n    return _POOL.setdefault(cls, object.__new__(cls))\n\n\n"
     "@dataclass\nclass DSAMetadata:\n    __new__ = _recycled\n", False),
    ("class Recycling:\n    def __init_subclass__(cls, **kwargs):\n        super().__init_subclass__(**kwargs)\n"
     "        cls.__new__ = lambda c, *a, **k: _POOL.setdefault(c, object.__new__(c))\n\n\n"
     "@dataclass\nclass DSAMetadata(Recycling):\n", False),
    ("REGISTRY = []\n\n\nclass Registered:\n    def __init_subclass__(cls, **kwargs):\n"
     "        super().__init_subclass__(**kwargs)\n        REGISTRY.append(cls)\n\n\n"
     "@dataclass\nclass DSAMetadata(Registered):\n", True)])
def test_round_af_a_record_class_whose_making_is_replaced(tmp_path, declaration, fixable):
    src = CLIPPED_HOLDER.replace("@dataclass\nclass DSAMetadata:\n", "_POOL = {}\n\n\n" + declaration)
    assert declaration in src
    site = _site(tmp_path, src, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


_PLANNERS_AF = '''"""A fork's backend; metadata.dsa_cache_seqlens_int32 holds seqlens clipped to topk."""
import collections
from dataclasses import dataclass

import torch
from sgl_kernel.flash_mla import flash_mla_sparse_fwd

StepContext = collections.namedtuple("StepContext", "metadata sm_scale")


@dataclass
class DSAMetadata:
    dsa_cache_seqlens_int32: torch.Tensor


class Backend:
    def __init__(self, dsa_index_topk):
        self.dsa_index_topk = dsa_index_topk
        self.decode_metadata = None
        self.extend_metadata = None

    def init_forward_metadata(self, forward_batch):
{plan}

    def _plan_decode(self, forward_batch):
        self.decode_metadata = DSAMetadata(forward_batch.seq_lens.clamp(max=self.dsa_index_topk).to(torch.int32))

    def _plan_extend(self, forward_batch):
        self.extend_metadata = DSAMetadata(forward_batch.seq_lens.clamp(max=self.dsa_index_topk).to(torch.int32))

    def forward_decode(self, q, kv, topk_indices, sm_scale):
{read}

    def forward_extend(self, q, kv, topk_indices, sm_scale):
        metadata = self.extend_metadata
        return self._forward_flashmla_sparse(q, kv, topk_indices, sm_scale)

    def _forward_flashmla_sparse(self, q, kv, indices, sm_scale):
{helper}        return flash_mla_sparse_fwd(q=q, kv=kv, indices=indices, sm_scale=sm_scale)[0]
'''
_PLAN_EXTEND_AF = ("    def _plan_extend(self, forward_batch):\n"
                   "        self.extend_metadata = DSAMetadata(forward_batch.seq_lens.clamp(max=self.dsa_index_topk).to(torch.int32))\n\n")
_READ_AF = "        metadata = self.decode_metadata\n        return self._forward_flashmla_sparse(q, kv, topk_indices, sm_scale)"


@pytest.mark.parametrize("plan, read, helper, fixable", [
    # round AF (f1): a holder given by a method the planner calls on some paths only (planners split per mode); the
    # holder packed into a record the helper reads it off
    ("        self._plan_decode(forward_batch)\n        self._plan_extend(forward_batch)", _READ_AF, "", True),
    ("        if forward_batch.forward_mode == 'decode':\n            self._plan_decode(forward_batch)\n        else:\n"
     "            self._plan_extend(forward_batch)", _READ_AF, "", False),
    ("        self._plan_decode(forward_batch)\n        self._plan_extend(forward_batch)",
     "        ctx = StepContext(self.decode_metadata, sm_scale)\n"
     "        return self._forward_flashmla_sparse(q, kv, topk_indices, ctx)", "        metadata = sm_scale.metadata\n",
     False)])
def test_round_af_what_gives_the_holder_through_calls_and_records(tmp_path, plan, read, helper, fixable):
    src = _PLANNERS_AF.format(plan=plan, read=read, helper=helper)
    if helper:
        src = src.replace("sm_scale=sm_scale)[0]\n", "sm_scale=sm_scale.sm_scale)[0]\n")
    site = _site(tmp_path, src, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


_KIT_AG = '''import weakref


class Window:
    def __init__(self, topk=None):
        self.topk = topk

    def __radd__(self, other):
        self.topk.masked_fill_(self.topk < 20, -1)
        return other

    def rank(self, x):
        self.topk.masked_fill_(self.topk < 20, -1)
        return x


class Lease:
    def __init__(self, topk=None):
        self.topk = topk

    def __del__(self):
        self.topk.masked_fill_(self.topk < 20, -1)


def synced(fn):
    def run(self, *args):
        self.window.topk.masked_fill_(self.window.topk < 20, -1)
        return fn(self, *args)
    return run


def guarded(cls):
    cls.run = synced(cls.run)
    return cls


def registered(cls):
    REGISTRY.append(cls)
    return cls


REGISTRY = []


class Synced:
    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls.run = synced(cls.run)
'''

_LAYER_AG = '''import torch
import window_kit
from window_kit import Lease, Synced, Window, guarded, registered


{decorator}class Layer({base}):
    def __init__(self, backend, topk):
        super().__init__()
        self.backend = backend
        self.window = Window(topk)
        self.leases = [Lease(topk)]
        self.by_req = {{0: Lease(topk)}}
{init}
    def {method}(self, q, kv, topk_indices, scale):
{body}
        return self.backend.forward(q, kv, topk_indices, scale)
'''


@pytest.mark.parametrize("decorator, base, init, body, fixable", [
    # round AG (g2): any use of an object whose class's special methods write what it keeps (`+=`'s `__radd__`, a
    # `%` format, a tuple key), a builtin calling the key it is handed, a container emptied or an item deleted (a
    # `__del__` may run), a class decorator or a base's `__init_subclass__` replacing the method, a pre-hook
    # returning new arguments
    ("", "object", "", "        n = 0\n        n += self.window", False),
    ("", "object", "", "        label = 'w=%s' % (self.window,)", False),
    ("", "object", "", "        xs = sorted([1, 2], key=self.window.rank)", False),
    ("", "object", "", "        self.leases.clear()", False),
    ("", "object", "", "        del self.by_req[0]", False),
    ("@guarded\n", "object", "", "        pass", False),
    ("", "Synced", "", "        pass", False),
    ("", "torch.nn.Module", "        self.register_forward_pre_hook(lambda m, args: tuple(a.flip(0) for a in args))\n",
     "        pass", False),
    # safe: a registering class decorator, a plain count; refused since round AM: `run` hands the rows on, so its
    # own callers are read, and the kit's `cls.run` (what `guarded` and `Synced` wrap) may be Layer's (an
    # over-refusal of a method name other classes' code reads: docs/soundness.md, still open after round AM)
    ("@registered\n", "object", "", "        n = len([1, 2])", False)])
def test_round_ag_code_a_caller_runs_through_objects_and_classes(tmp_path, decorator, base, init, body, fixable):
    (tmp_path / "window_kit.py").write_text(_KIT_AG)
    method = "forward" if "hook" in init else "run"
    (tmp_path / "layer.py").write_text(_LAYER_AG.format(decorator=decorator, base=base, init=init, body=body,
                                                        method=method))
    site = _site(tmp_path, HANDED_INDICES, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("plan, fixable", [
    # round AG (g1): a holder given two calls deep (`_plan` calling `_adopt`) is given only where the first call runs
    ("        self._plan(forward_batch)", True),
    ("        if forward_batch.forward_mode == 'decode':\n            return\n        self._plan(forward_batch)", False)])
def test_round_ag_a_holder_given_through_two_calls(tmp_path, plan, fixable):
    src = _PLANNERS_AF.format(plan=plan, read=_READ_AF.replace("decode_metadata", "extend_metadata"), helper="").replace(
        "    def _plan_decode(self, forward_batch):", "    def _plan(self, forward_batch):\n"
        "        self._adopt(DSAMetadata(forward_batch.seq_lens.clamp(max=self.dsa_index_topk).to(torch.int32)))\n\n"
        "    def _adopt(self, md):\n        self.extend_metadata = md\n\n    def _plan_decode(self, forward_batch):")
    src = src.replace(_PLAN_EXTEND_AF, "")  # (a method no planner calls makes a record read as made once: round AL)
    site = _site(tmp_path, src, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


_SERVED_AH = "class ServingConfig:\n    def __init__(self, hf):\n        self.index_topk = {read}\n"


@pytest.mark.parametrize("config, fixable", [
    # round AG (g3) and AH (h2): a read of the width off an object of a class that serves its reads or makes its
    # values otherwise than its names say is not the width: a `dict` subclass capping in `__init__`, a `get` capping, a
    # classmethod maker, an object kept on self, a metaclass, a base clamping every store
    ("class Budget(dict):\n    def __init__(self, raw):\n        super().__init__({k: min(v, 8) for k, v in raw.items()})\n\n\n"
     + _SERVED_AH.format(read='Budget(vars(hf))["index_topk"]'), False),
    ("class Budget(dict):\n    pass\n\n\n" + _SERVED_AH.format(read='Budget(vars(hf))["index_topk"]'), True),
    ("class Budget:\n    def __init__(self, raw):\n        self.raw = raw\n\n    def get(self, key):\n"
     "        return min(self.raw[key], 8)\n\n    @classmethod\n    def of(cls, hf):\n        return cls(vars(hf))\n\n\n"
     + _SERVED_AH.format(read='Budget.of(hf).get("index_topk")'), False),
    ("class Budget:\n    def __init__(self, raw):\n        self.raw = raw\n\n    def get(self, key):\n"
     "        return min(self.raw[key], 8)\n\n\nclass ServingConfig:\n    def __init__(self, hf):\n"
     "        self.budget = Budget(vars(hf))\n        self.index_topk = self.budget.get('index_topk')\n", False),
    ("class Capped(type):\n    def __call__(cls, **kw):\n        return super().__call__(**{k: min(v, 8) for k, v in kw.items()})\n\n\n"
     "class Profile(metaclass=Capped):\n    def __init__(self, index_topk):\n        self.index_topk = index_topk\n\n\n"
     "def make(hf):\n    return Profile(index_topk=hf.index_topk)\n", False),
    ("class Validated:\n    def __setattr__(self, name, value):\n        super().__setattr__(name, min(value, 8))\n\n\n"
     "class ServingConfig(Validated):\n    def __init__(self, hf):\n        self.index_topk = hf.index_topk\n", False),
    ("class Frozen:\n    _frozen = False\n\n    def __setattr__(self, name, value):\n        if self._frozen:\n"
     "            raise AttributeError(name)\n        super().__setattr__(name, value)\n\n\n"
     "class ServingConfig(Frozen):\n    def __init__(self, hf):\n        self.index_topk = hf.index_topk\n", True)])
def test_round_ah_the_widths_value_off_objects_whose_class_serves_it(tmp_path, config, fixable):
    (tmp_path / "serving_config.py").write_text(config)
    site = _site(tmp_path, _CONFIG_BACKEND, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


# the backend with its planner's batch annotated as the engine's `ForwardBatch` (its lengths are the engine's)
_ENGINE_BATCH_BACKEND = _CONFIG_BACKEND.replace(
    "from sgl_kernel.flash_mla import flash_mla_sparse_fwd\n", "from sgl_kernel.flash_mla import flash_mla_sparse_fwd\n"
    "from sglang.srt.model_executor.forward_batch_info import ForwardBatch\n").replace(
    "def init_forward_metadata(self, forward_batch):", "def init_forward_metadata(self, forward_batch: ForwardBatch):")


@pytest.mark.parametrize("batches, local, fixable", [
    # round AH (h2): the clip's operand read off a batch handed in (its class not known) is these rows' seqlens only
    # where no class of the project serves that attribute by code: a property, a method, a descriptor bound in the
    # body, in another file or in the module itself; a dataclass's declared field (or its `field(...)`) is no code
    ("class VerifyBatch:\n    @property\n    def seq_lens(self):\n        return self.committed + self.drafts\n",
     False, False),
    ("class VerifyBatch:\n    @property\n    def seq_lens(self):\n        return self.committed + self.drafts\n",
     True, False),
    ("def _lens(b):\n    return b.committed + 1\n\n\nclass VerifyBatch:\n    seq_lens = property(_lens)\n", False, False),
    ("import dataclasses\nfrom typing import Optional\n\nimport torch\n\n\n@dataclasses.dataclass\nclass Batch:\n"
     "    seq_lens: torch.Tensor\n    seq_lens_cpu: Optional[torch.Tensor] = None\n"
     "    positions: torch.Tensor = dataclasses.field(default=None)\n", True, True),
    # round AJ (j4): a converter, a descriptor as a field's default, a store of a computed value (`__post_init__`),
    # a validator tied by name, a base's `__setattr__`; a parameter annotated as the engine's batch is the engine's
    ("import attrs\n\n\n@attrs.define\nclass Batch:\n    seq_lens: object = attrs.field(converter=lambda x: x + 1)\n",
     False, False),
    ("from dataclasses import dataclass, field\n\n\n@dataclass\nclass Batch:\n"
     "    seq_lens: object = field(default=StaticLens())\n", False, False),
    ("class Batch:\n    def __init__(self, seq_lens, drafts):\n        self.seq_lens = seq_lens + drafts\n", False, False),
    ("class Batch:\n    def __init__(self, seq_lens):\n        self.seq_lens = seq_lens\n", False, True),
    ("class Batch:\n    @field_validator('seq_lens')\n    def _count(cls, v):\n        return v + 1\n", False, False),
    ("class Base:\n    def __setattr__(self, name, value):\n        object.__setattr__(self, name, value.clone() + 1)\n",
     False, False),
    ("class VerifyBatch:\n    @property\n    def seq_lens(self):\n        return self.committed + self.drafts\n",
     "annotated", True),
    # round AK (k4): a namespace base handed computed lengths, a namedtuple's `__new__`, a class decorator, a
    # metaclass, a hook bound by assignment; a `default_factory` field and a device move keep the values
    ("import types\n\n\nclass Batch(types.SimpleNamespace):\n    def __init__(self, seq_lens, d=0):\n"
     "        super().__init__(seq_lens=seq_lens + d)\n", False, False),
    ("from collections import namedtuple\n\n\nclass Batch(namedtuple('B', 'seq_lens d')):\n"
     "    def __new__(cls, seq_lens, d=0):\n        return super().__new__(cls, seq_lens + d, d)\n", False, False),
    ("@counts_drafts\nclass Batch:\n    def __init__(self, seq_lens):\n        self.seq_lens = seq_lens\n", False, False),
    ("class Batch(metaclass=StepMeta):\n    def __init__(self, seq_lens):\n        self.seq_lens = seq_lens\n",
     False, False),
    ("def overlay(self, name):\n    return self.__dict__['o'][name]\n\n\nclass View:\n    __getattr__ = overlay\n\n"
     "    def __init__(self, seq_lens):\n        self.o = {'seq_lens': seq_lens + 1}\n", False, False),
    ("from dataclasses import dataclass, field\n\n\n@dataclass\nclass Batch:\n"
     "    seq_lens: list = field(default_factory=list)\n", False, True),
    ("class Batch:\n    def __init__(self, seq_lens, like):\n        self.seq_lens = seq_lens.to(like.device)\n",
     False, True)])
def test_round_ah_the_clips_operand_served_by_a_class(tmp_path, batches, local, fixable):
    if local == "annotated":
        (tmp_path / "batches.py").write_text(batches)
        site = _site(tmp_path, _ENGINE_BATCH_BACKEND, kernel=KERNEL)
        assert site.status is Status.FIXABLE, site.reason
        return
    src = _CONFIG_BACKEND.replace("torch.clamp(forward_batch.seq_lens,", "torch.clamp(seq_lens,").replace(
        "        self.forward_metadata = DSAMetadata(\n", "        seq_lens = forward_batch.seq_lens\n"
        "        self.forward_metadata = DSAMetadata(\n", 1) if local else _CONFIG_BACKEND
    if local:
        src += "\n\n" + batches
    else:
        (tmp_path / "batches.py").write_text(batches)
    site = _site(tmp_path, src, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason
    assert fixable or "serves `seq_lens` by code" in site.reason or "may serve `seq_lens`" in site.reason


@pytest.mark.parametrize("value, fixable", [
    # round AI (i3): a `torch.where` whose test is not the indices' validity leaves -1 gaps or other entries mid-row
    # (a window's mask, a sink's `isin`, a pad bound to a name); a view by a dtype reinterprets the entries' bytes
    ("torch.where((topk_indices >= 0) & (topk_indices >= 8), topk_indices, torch.full_like(topk_indices, -1))", False),
    ("torch.where(keep, topk_indices, pad)", False),
    ("topk_indices.view(torch.int32)", False),
    ("torch.where(topk_indices != -1, topk_indices + 7, topk_indices)", True),
    ("torch.where(topk_indices <= -1, pad, topk_indices)", True),
    # columns of -1 appended to each row keep its valid entries first; prepended they do not
    ("torch.cat([topk_indices, pad], dim=-1)", True), ("torch.cat([pad, topk_indices], dim=-1)", False),
    ("torch.cat([topk_indices, topk_indices], dim=-1)", False),
    # round AK (k2, k3): a view regrouping each row (`[s, h, k / h]`), a pad written after it is bound, a mask written
    # through a view of it, a host round trip's sorted data
    ("topk_indices.view(q.shape[0], 2, -1)", False), ("topk_indices.view(q.shape[0], 1, -1)", True),
    ("torch.cat([topk_indices, pad2], dim=-1)", False),
    ("torch.where(ok, topk_indices, pad)", False),
    ("topk_indices.new_tensor(topk_indices.sort(dim=-1).values.tolist())", False)])
def test_round_ai_index_steps(tmp_path, value, fixable):
    src = _handed("keep = torch.isin(topk_indices, kv, invert=True)\n        pad = topk_indices.new_full(topk_indices.shape, -1)"
                  "\n        pad2 = topk_indices.new_full(topk_indices.shape, -1)\n        pad2[..., -1] = 0"
                  "\n        ok = topk_indices >= 0\n        ok.view(-1)[::2] = False"
                  f"\n        topk_indices = {value}")
    (site,) = migrate_source(src, str(tmp_path / "backend.py"), kernel=KERNEL).sites
    assert (site.status is Status.FIXABLE) is fixable, site.reason


_AI_CAPTURE = f"md = DSAMetadata(dsa_cache_seqlens_int32={_CLIP})\n        self.graph_metadata[bs] = md\n        self.forward_metadata = md"


@pytest.mark.parametrize("replay, fixable", [
    # a replay refreshing the live requests' rows (a prefix) updates the record: the rows past it are padding, whose
    # output is discarded (sglang 0.5.12's draft-extend replay: `field[: seqlens_expanded.shape[0]].copy_(...)`)
    ("n = int(seq_lens.numel())\n        md = self.graph_metadata[bs]\n        md.dsa_cache_seqlens_int32[:n].copy_("
     f"{_CLIP}[:n])\n        self.forward_metadata = md", True),
    (f"md = self.graph_metadata[bs]\n        md.dsa_cache_seqlens_int32[:bs].copy_({_CLIP})\n"
     "        self.forward_metadata = md", True),
    (f"md = self.graph_metadata[bs]\n        md.dsa_cache_seqlens_int32[:].copy_({_CLIP})\n"
     "        self.forward_metadata = md", True),
    # round AI (i1): the holder left on the record another capture gave it (one table per mode): the callers read
    # that one's capture-time lengths
    (f"md = self.graph_metadata[bs]\n        md.dsa_cache_seqlens_int32.copy_({_CLIP})", False)])
def test_round_ai_a_replay_gives_the_holder_the_record_it_refreshes(tmp_path, replay, fixable):
    site = _graph_site(tmp_path, _AI_CAPTURE, replay)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("init, plan, fixable", [
    # round AI (i1): a record `__init__` does not make (a parent backend's, a micro-batch sibling's) is shared with
    # that object: each one's in-place plan rewrites the other's lengths
    ("self.forward_metadata = parent.forward_metadata if parent is not None else DSAMetadata(warm.seq_lens.clamp(max=self.dsa_index_topk).to(torch.int32))",
     "self.forward_metadata.dsa_cache_seqlens_int32.copy_(forward_batch.seq_lens.clamp(max=self.dsa_index_topk).int())",
     False),
    # a refresh the planner hands to a method of the class, on every run, refreshes as its own does
    ("self.forward_metadata = DSAMetadata(warm.seq_lens.clamp(max=self.dsa_index_topk).to(torch.int32))", "self._refresh(forward_batch)", True),
    ("self.forward_metadata = DSAMetadata(warm.seq_lens.clamp(max=self.dsa_index_topk).to(torch.int32))",
     "if forward_batch.seq_lens.numel():\n            self._refresh(forward_batch)", False)])
def test_round_ai_a_static_record_is_the_instances_own_and_refreshed(tmp_path, init, plan, fixable):
    src = _STATIC_AI.format(init=init, plan=plan)
    site = _site(tmp_path, src, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


_STATIC_AI = '''"""A fork's backend; metadata.dsa_cache_seqlens_int32 holds seqlens clipped to topk."""
from dataclasses import dataclass

import torch
from sgl_kernel.flash_mla import flash_mla_sparse_fwd


@dataclass
class DSAMetadata:
    dsa_cache_seqlens_int32: torch.Tensor


class Backend:
    def __init__(self, dsa_index_topk, warm, parent=None):
        self.dsa_index_topk = dsa_index_topk
        {init}

    def _refresh(self, forward_batch):
        self.forward_metadata.dsa_cache_seqlens_int32.copy_(
            forward_batch.seq_lens.clamp(max=self.dsa_index_topk).to(torch.int32))

    def init_forward_metadata(self, forward_batch):
        {plan}

    def forward(self, q, kv, indices, scale):
        metadata = self.forward_metadata
        return flash_mla_sparse_fwd(q=q, kv=kv, indices=indices, sm_scale=scale)[0]
'''


@pytest.mark.parametrize("base, use, fixable", [
    # round AI (i2): `forward` of a class torch may run by another name (`module(...)` of an `nn.Module`,
    # `Fn.apply(...)`) whose instances the project's code makes or names: those callers are not seen; a class of the
    # project's own plain bases is called by name, and one no code of the project names is the framework's to call
    ("torch.nn.Module", "def build():\n    return Attn()\n", False),
    ("torch.autograd.Function", "def run(q, kv, idx, s, md):\n    return Attn.apply(q.flip(0), kv, idx.flip(0), s, md)\n",
     False),
    ("torch.nn.Module", "", True), ("Base", "def build():\n    return Attn()\n", True)])
def test_round_ai_forward_run_by_torch_is_refused(tmp_path, base, use, fixable):
    src = (f'"""Fork; metadata.dsa_cache_seqlens_int32."""\nimport torch\nfrom sgl_kernel.flash_mla import flash_mla_sparse_fwd\n\n\n'
           f"class Base:\n    pass\n\n\nclass Attn({base}):\n    def forward(self, q, kv, idx, scale, metadata):\n"
           f"        return flash_mla_sparse_fwd(q, kv, idx, scale)[0]\n\n\n{use}")
    site = _site(tmp_path, src, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason
    assert fixable or "torch runs `forward` without spelling its name" in site.reason


@pytest.mark.parametrize("layer, fixable", [
    # round AJ (j2): the rows method looked up by a literal the caller walk must read: `operator.attrgetter`, a dotted
    # path, `object.__getattribute__`, an item of the class's namespace; a plain call is traced as before
    ("import operator\n\n\ndef run(backend, q, kv, topk, scale):\n"
     "    return operator.attrgetter('forward')(backend)(q.flip(0), kv, topk.flip(0), scale)\n", False),
    ("import operator\n\n\ndef run(layer, q, kv, topk, scale):\n"
     "    return operator.attrgetter('backend.forward')(layer)(q.flip(0), kv, topk.flip(0), scale)\n", False),
    ("def run(backend, q, kv, topk, scale):\n"
     "    return object.__getattribute__(backend, 'forward')(q.flip(0), kv, topk.flip(0), scale)\n", False),
    ("def run(backend, q, kv, topk, scale):\n"
     "    return type(backend).__dict__['forward'](backend, q.flip(0), kv, topk.flip(0), scale)\n", False),
    ("def run(backend, q, kv, topk, scale):\n    return backend.forward(q, kv, topk, scale)\n", True),
    ("import logging\n\n\ndef run(backend, q, kv, topk, scale):\n    logging.info('forward')\n"
     "    return backend.forward(q, kv, topk, scale)\n", True)])
def test_round_aj_the_rows_method_looked_up_by_a_literal(tmp_path, layer, fixable):
    (tmp_path / "layer.py").write_text(layer)
    site = _site(tmp_path, HANDED_INDICES, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


def test_round_aj_a_private_rows_method_called_by_its_mangled_name(tmp_path):
    src = HANDED_INDICES.replace("def forward(self, q, kv, topk_indices, scale):",
                                 "def forward(self, q, kv, topk_indices, scale):\n        return self.__run(q, kv, "
                                 "topk_indices, scale)\n\n    def __run(self, q, kv, topk_indices, scale):")
    assert _site(tmp_path, src, kernel=KERNEL).status is Status.FIXABLE
    (tmp_path / "balanced.py").write_text("def run(backend, q, kv, topk, scale):\n"
                                          "    return backend._Backend__run(q.flip(0), kv, topk.flip(0), scale)\n")
    site = _site(tmp_path, src, kernel=KERNEL)
    assert site.status is Status.MANUAL and "_Backend__run" in site.reason, site.reason


_BUDGET_AJ = ("class Budget:\n    def __init__(self, raw):\n        self.raw = raw\n\n    def __enter__(self):\n"
              "        return self\n\n    def __exit__(self, *exc):\n        return False\n\n"
              "    def __getattr__(self, name):\n        return min(getattr(self.raw, name), 8)\n\n\n"
              "def budgeted(raw):\n    return Budget(raw)\n\n\n")


@pytest.mark.parametrize("config, fixable", [
    # round AJ (j4): the capping view reached through a factory, an unpacking or a `with` binding is still served;
    # a `__getattr__` forwarding to what `__init__` stored, and a mapping view's methods beside a plain attribute
    # (a read by name calls neither), are not
    (_BUDGET_AJ + _SERVED_AH.format(read="budgeted(hf).index_topk"), False),
    (_BUDGET_AJ + "class ServingConfig:\n    def __init__(self, hf):\n        view, raw = Budget(hf), hf\n"
     "        self.index_topk = view.index_topk\n", False),
    (_BUDGET_AJ + "class ServingConfig:\n    def __init__(self, hf):\n        with Budget(hf) as view:\n"
     "            self.index_topk = view.index_topk\n", False),
    ("class Wrap:\n    def __init__(self, hf):\n        self.hf = hf\n\n    def __getattr__(self, name):\n"
     "        return getattr(self.hf, name)\n\n\n" + _SERVED_AH.format(read="Wrap(hf).index_topk"), True),
    ("class Cfg:\n    def __init__(self, index_topk):\n        self.index_topk = index_topk\n\n    def keys(self):\n"
     "        return list(vars(self))\n\n    def __getitem__(self, key):\n        return getattr(self, key)\n\n\n"
     + _SERVED_AH.format(read="Cfg(hf.index_topk).index_topk"), True)])
def test_round_aj_the_widths_object_however_bound(tmp_path, config, fixable):
    (tmp_path / "serving_config.py").write_text(config)
    site = _site(tmp_path, _CONFIG_BACKEND, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("value, fixable", [
    # round AJ (j3): a where's mask bound to a name and then narrowed in place; `new_tensor` copies what it is handed
    ("valid = topk_indices >= 0\n        valid[topk_indices < 8] = False\n        topk_indices = torch.where(valid, "
     "topk_indices, pad)", False),
    ("valid = topk_indices >= 0\n        topk_indices = torch.where(valid, topk_indices, pad)", True),
    ("topk_indices = topk_indices.new_tensor(topk_indices.sort(dim=-1).values)", False),
    ("topk_indices = torch.where(topk_indices >= 0, pad, topk_indices)", False)])  # -1 where entries are valid
def test_round_aj_index_steps(tmp_path, value, fixable):
    src = _handed(f"pad = topk_indices.new_full(topk_indices.shape, -1)\n        {value}")
    (site,) = migrate_source(src, str(tmp_path / "backend.py"), kernel=KERNEL).sites
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("lookup", ["vars(fm)[self.kernel_name]", "fm.__dict__.get(self.kernel_name)",
                                    "getattr(fm, self.kernel_name)"])
def test_round_aj_the_kernels_module_read_by_a_computed_name_is_a_site(tmp_path, lookup):
    src = ("import sgl_kernel.flash_mla as fm\n\n\nclass B:\n    def __init__(self, name='flash_mla_sparse_fwd'):\n"
           f"        self.kernel_name = name\n\n    def f(self, q, kv, idx, metadata):\n        kernel = {lookup}\n"
           "        return kernel(q, kv, idx, 1.0)\n# metadata.dsa_cache_seqlens_int32\n")
    sites = migrate_source(src, str(tmp_path / "backend.py"), kernel=KERNEL).sites
    assert {s.line for s in sites} >= {9, 10} and all(s.status is Status.MANUAL for s in sites), sites


@pytest.mark.parametrize("sub, fixable", [
    # round AK (k3): a subclass binding the helper's name in its body; an override taking topk_length that hands it
    # on beside other indices than it was handed; one handing every argument on as handed
    ("class Sub(Backend):\n    _forward_flashmla_sparse = Backend.forward\n", False),
    ("class Sub(Backend):\n    def _forward_flashmla_sparse(self, q, kv, indices, sm_scale, topk_length=None):\n"
     "        return flash_mla_sparse_fwd(q, kv, indices.sort(dim=-1).values, sm_scale, topk_length=topk_length)[0]\n",
     False),
    ("class Sub(Backend):\n    def _forward_flashmla_sparse(self, q, kv, indices, sm_scale, topk_length=None):\n"
     "        return super()._forward_flashmla_sparse(q, kv, indices, sm_scale, topk_length=topk_length)\n", True)])
def test_round_ak_what_reaches_the_helpers_name(tmp_path, sub, fixable):
    src = HANDED_INDICES + "\n\n" + sub
    (tmp_path / "backend.py").write_text(src)
    site = migrate_source(src, str(tmp_path / "backend.py"), kernel=KERNEL).sites[0]  # (the base's helper's call)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("build, fixable", [
    # round AK (k4): the width's config parameter handed a view capping every knob by a call of the project
    ("Backend(BudgetView(cfg, 8))", False), ("Backend(cfg)", True)])
def test_round_ak_the_widths_object_as_its_callers_hand_it(tmp_path, build, fixable):
    (tmp_path / "budget.py").write_text("class BudgetView:\n    def __init__(self, cfg, cap):\n        self._cfg = cfg\n"
                                        "        self._cap = cap\n\n    def __getattr__(self, name):\n"
                                        "        return min(getattr(self._cfg, name), self._cap)\n")
    (tmp_path / "runner.py").write_text(f"from backend import Backend\nfrom budget import BudgetView\n\n\n"
                                        f"def build(cfg):\n    return {build}\n")
    site = _site(tmp_path, _ENGINE_BATCH_BACKEND, kernel=KERNEL)  # (a view capping any field may serve an unannotated
    # batch's `seq_lens` too: round AL; the engine's batch is the engine's)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


_POOLED_AG = '''"""A fork's backend; metadata.dsa_cache_seqlens_int32 holds seqlens clipped to topk."""
from dataclasses import dataclass

import torch
from sgl_kernel.flash_mla import flash_mla_sparse_fwd

_POOL = {{}}


@dataclass
class DSAMetadata:
    dsa_cache_seqlens_int32: torch.Tensor


class Backend:
    def __init__(self, dsa_index_topk):
        self.dsa_index_topk = dsa_index_topk
        self.forward_metadata = None
{init}
    def init_forward_metadata(self, forward_batch):
        lens = forward_batch.seq_lens.clamp(max=self.dsa_index_topk).to(torch.int32)
        md = {pool}.get(forward_batch.batch_size)
        if md is None:
            md = {pool}[forward_batch.batch_size] = DSAMetadata(lens.clone())
        md.dsa_cache_seqlens_int32.copy_(lens)
        self.forward_metadata = md

    def forward(self, q, kv, indices, sm_scale):
        metadata = self.forward_metadata
        return flash_mla_sparse_fwd(q=q, kv=kv, indices=indices, sm_scale=sm_scale)[0]
'''


@pytest.mark.parametrize("pool, init, fixable", [
    # round AG (g1): a record pool a module or a mutable default keeps is every backend's (a target's and a draft's)
    ("_POOL", "", False),
    ("self._pool", "        self._pool = {}\n", True),
    # round AJ (j1) and AK (k1): a container not made fresh on every store (a shared one on a branch, a copy sharing its
    # items, a function's result), or the pool a method of the class returns
    ("self._pool", "        self._pool = _POOL if _POOL else {}\n", False),
    ("self._pool", "        self._pool = dict(_POOL)\n", False),
    ("self._pool", "        self._pool = make_pool()\n", False),
    ("self._records()", "\n    def _records(self):\n        return _POOL\n", False),
    ("self._records()", "        self._pool = {}\n\n    def _records(self):\n        return self._pool\n", True)])
def test_round_ag_a_record_pool_shared_beyond_the_instance(tmp_path, pool, init, fixable):
    site = _site(tmp_path, _POOLED_AG.format(pool=pool, init=init), kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


_PLAIN_OPS = ("from sgl_kernel.flash_mla import flash_mla_sparse_fwd as _fwd\n\n\n"
              "def flash_mla_sparse_fwd(q, kv, indices, sm_scale, d_v=512, attn_sink=None, topk_length=None):\n"
              "    return _fwd(q, kv, indices, sm_scale, d_v, attn_sink, topk_length)\n")
_SORTING_OPS = _PLAIN_OPS.replace("    return _fwd(q, kv, indices, sm_scale, d_v, attn_sink, topk_length)\n",
                                  "    order = indices.sum(-1).argsort()\n"
                                  "    return _fwd(q[order], kv, indices[order], sm_scale, d_v, attn_sink, topk_length)\n")


@pytest.mark.parametrize("files, fixable", [
    # round AG (g3) and AH (h1): an absolute import is looked up where Python looks: a module in a package's own folder
    # and another at the root are two candidates; `from pkg import m` takes the package's own binding of `m` first
    ({"fork_kernels/__init__.py": "", "fork_kernels/api.py": "from sparse_ops import flash_mla_sparse_fwd  # noqa\n",
      "fork_kernels/sparse_ops.py": _PLAIN_OPS, "sparse_ops.py": _SORTING_OPS}, False),
    ({"fork_kernels/api.py": "from sparse_ops import flash_mla_sparse_fwd  # noqa\n",
      "fork_kernels/sparse_ops.py": _PLAIN_OPS, "sparse_ops.py": _SORTING_OPS}, False),
    ({"fork_kernels/__init__.py": "", "fork_kernels/api.py": "from fork_kernels.sparse_ops import flash_mla_sparse_fwd  # noqa\n",
      "fork_kernels/sparse_ops.py": _PLAIN_OPS}, True),
    ({"fork_kernels/__init__.py": "from .sm90 import balanced as sparse_ops  # noqa\n", "fork_kernels/sm90/__init__.py": "",
      "fork_kernels/sm90/balanced.py": _SORTING_OPS, "fork_kernels/sparse_ops.py": _PLAIN_OPS,
      "fork_kernels/api.py": "from . import sparse_ops\n\n\n"
      "def flash_mla_sparse_fwd(q, kv, indices, sm_scale, d_v=512, attn_sink=None, topk_length=None):\n"
      "    return sparse_ops.flash_mla_sparse_fwd(q, kv, indices, sm_scale, d_v, attn_sink, topk_length)\n"}, False),
    ({"fork_kernels/__init__.py": "from .utils import *  # noqa\n", "fork_kernels/utils.py": "X = 1\n",
      "fork_kernels/sparse_ops.py": _PLAIN_OPS,
      "fork_kernels/api.py": "from fork_kernels.sparse_ops import flash_mla_sparse_fwd  # noqa\n"}, True)])
def test_round_ah_a_kernel_module_is_the_one_python_loads(tmp_path, files, fixable):
    for rel, text in {"requirements.txt": "sglang-kernel==0.4.6\n", **files}.items():  # (the project's root)
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    src = _CONFIG_BACKEND.replace("from sgl_kernel.flash_mla import", "from fork_kernels.api import")
    site = _site(tmp_path, src, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("layer, fixable", [
    # round AL (l2): the rows method looked up by a name the program builds: an f-string, a concatenation handed to
    # `methodcaller`, a scan of the object's names, a delegating decorator's `__name__`; a built name that cannot
    # be the method's, and a scan of names copying values (no call), are not callers
    ("def run(backend, mode, q, kv, topk, scale):\n"
     "    return getattr(backend, f'for{mode}')(q.flip(0), kv, topk.flip(0), scale)\n", False),
    ("import operator\n\n\ndef run(backend, mode, q, kv, topk, scale):\n"
     "    return operator.methodcaller('for' + mode, q.flip(0), kv, topk.flip(0), scale)(backend)\n", False),
    ("def run(backend, q, kv, topk, scale):\n"
     "    fn = next(getattr(backend, n) for n in dir(backend) if n.startswith('for'))\n"
     "    return fn(q.flip(0), kv, topk.flip(0), scale)\n", False),
    ("def delegate(method):\n    def wrapper(self, q, kv, topk, scale):\n"
     "        return getattr(self.inner, method.__name__)(q.flip(0), kv, topk.flip(0), scale)\n    return wrapper\n", False),
    ("def run(backend, mode, q, kv, topk, scale):\n"
     "    return getattr(backend, f'back{mode}')(q.flip(0), kv, topk.flip(0), scale)\n", True),
    ("def snapshot(backend):\n    out = {}\n    for n in dir(backend):\n        v = getattr(backend, n)\n"
     "        if not callable(v):\n            out[n] = v\n    return out\n", True),
    # (sglang's `MultiPlatformOp`: an `nn.Module`'s own dispatch by a built name looks up its own methods)
    ("from torch import nn\n\n\nclass Op(nn.Module):\n    def dispatch(self, key):\n"
     "        return getattr(self, f'for{key}', None)\n", True)])
def test_round_al_the_rows_method_looked_up_by_a_built_name(tmp_path, layer, fixable):
    (tmp_path / "layer.py").write_text(layer)
    site = _site(tmp_path, HANDED_INDICES, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason
    assert fixable or "looks up a name it builds" in site.reason


@pytest.mark.parametrize("views, fixable", [
    # round AL (l4): a class serving any field (a `__getattr__` adding the drafts to every `*_lens`, a namespace base
    # handed a mapping of computed values) though its file never spells the name, or changing the field in place
    # as it is made; a `__getattr__` forwarding through a local, a base handed the keywords as they are, are plain
    ("class VerifyView:\n    def __init__(self, b, n):\n        self._b, self.n = b, n\n\n"
     "    def __getattr__(self, name):\n        v = getattr(self._b, name)\n"
     "        return v + self.n if name.endswith('_lens') else v\n", False),
    ("import types\n\n\nclass Rec(types.SimpleNamespace):\n    def __init__(self, n=0, **fields):\n"
     "        super().__init__(n=n, **{k: v + n for k, v in fields.items()})\n", False),
    ("from dataclasses import dataclass\n\n\n@dataclass\nclass VerifyBatch:\n    seq_lens: object\n    n: int = 0\n\n"
     "    def __post_init__(self):\n        self.seq_lens.add_(self.n)\n", False),
    ("class View:\n    def __init__(self, b):\n        self._b = b\n\n    def __getattr__(self, name):\n"
     "        value = getattr(self._b, name)\n        return value\n", True),
    ("import types\n\n\nclass Rec(types.SimpleNamespace):\n    def __init__(self, n=0, **fields):\n"
     "        super().__init__(n=n, **fields)\n", True)])
def test_round_al_the_clips_operand_served_by_any_class(tmp_path, views, fixable):
    (tmp_path / "fork_views.py").write_text(views)
    site = _site(tmp_path, _CONFIG_BACKEND, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("files", [
    # round AL (l4): Python loads a built extension before the source beside it, or one alone: its parameters are
    # not read, whatever the pin says
    {"sgl_kernel/__init__.py": "", "sgl_kernel/flash_mla.py": "def flash_mla_sparse_fwd(q, kv, indices, sm_scale, "
     "d_v=512, attn_sink=None, topk_length=None):\n    pass\n", "sgl_kernel/flash_mla.cpython-311-x86_64-linux-gnu.so": ""},
    {"sgl_kernel/__init__.py": "", "sgl_kernel/flash_mla.abi3.so": ""}])
def test_round_al_a_built_kernel_module_of_the_project(tmp_path, files):
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    site = _site(tmp_path, HANDED_INDICES, kernel=KERNEL)
    assert site.status is Status.MANUAL and "built or compiled" in site.reason, site.reason


_CLIP_PLAN = "forward_batch.seq_lens.clamp(max=self.dsa_index_topk).to(torch.int32)"


@pytest.mark.parametrize("plan, fixable", [
    # round AL (l1): an eager planner refreshing a prefix of a start-up record leaves the rows past it stale (a
    # chunked batch's extend rows, a verify step's token rows); rewriting the whole field refreshes it
    (f"self.forward_metadata.dsa_cache_seqlens_int32[:forward_batch.batch_size] = {_CLIP_PLAN}", False),
    (f"self.forward_metadata.dsa_cache_seqlens_int32[:forward_batch.batch_size].copy_({_CLIP_PLAN})", False),
    (f"self.forward_metadata.dsa_cache_seqlens_int32[:] = {_CLIP_PLAN}", True),
    (f"self.forward_metadata.dsa_cache_seqlens_int32.copy_({_CLIP_PLAN})", True)])
def test_round_al_an_eager_planner_refreshes_the_whole_static_record(tmp_path, plan, fixable):
    src = _STATIC_AI.format(init=f"self.forward_metadata = DSAMetadata({_CLIP_PLAN.replace('forward_batch', 'warm')})",
                            plan=plan)
    site = _site(tmp_path, src, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("replay, fixable", [
    # round AL (l1): the record refreshed and the one the holder gets are spelled alike, but a call between may bind
    # the key's attribute of self again (a mode switch, a swap of staging and live records)
    (f"self.graph_metadata[bs].dsa_cache_seqlens_int32.copy_({_CLIP})\n        self._enter_mode()\n"
     "        self.forward_metadata = self.graph_metadata[bs]", False),
    (f"self.graph_metadata[bs].dsa_cache_seqlens_int32.copy_({_CLIP})\n"
     "        self.forward_metadata = self.graph_metadata[bs]", True)])
def test_round_al_one_spelling_two_records(tmp_path, replay, fixable):
    site = _graph_site(tmp_path, _AI_CAPTURE, replay)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


def test_round_al_a_subclass_through_a_packages_reexport_adds_no_unknown_base(tmp_path):
    """sglang 0.5.16's `MultiPlatformOp` dispatch (`getattr(self, f"forward_{key}")`) with its subclasses importing it
    from the package that re-exports it: their base is that class, not an unknown one, so `self` is never the
    backend."""
    (tmp_path / "ops").mkdir()
    (tmp_path / "ops" / "__init__.py").write_text("from .mp import Op\n")
    (tmp_path / "ops" / "mp.py").write_text("from torch import nn\n\n\nclass Op(nn.Module):\n    def dispatch(self, key):\n"
                                             "        return getattr(self, f'for{key}', None)\n")
    (tmp_path / "norm.py").write_text("from ops import Op\n\n\nclass Norm(Op):\n    pass\n")
    assert _site(tmp_path, HANDED_INDICES, kernel=KERNEL).status is Status.FIXABLE
    (tmp_path / "norm.py").write_text("from ops import Op\nfrom plugin import Mixin\n\n\nclass Norm(Op, Mixin):\n    pass\n")
    assert _site(tmp_path, HANDED_INDICES, kernel=KERNEL).status is Status.MANUAL


@pytest.mark.parametrize("layer, fixable", [
    # round AM (m2): a caller of another name handing on its parameters (or their attributes) is as right as what
    # its own callers hand it: a launcher's record of rows its caller sorted, a default buffer no caller replaces
    ("class Step:\n    def __init__(self, q, kv, topk, scale):\n        self.q, self.kv = q, kv\n"
     "        self.topk, self.scale = topk, scale\n\n\n"
     "def _launch(backend, step):\n    return backend.forward(step.q, step.kv, step.topk, step.scale)\n\n\n"
     "def run(backend, q, kv, topk, scale):\n    order = topk.sum(-1).argsort()\n"
     "    return _launch(backend, Step(q[order], kv, topk[order], scale))\n", False),
    ("import torch\n\n_STATIC = torch.full((8, 16), -1)\n\n\n"
     "def _launch(backend, q, kv, scale, topk=_STATIC):\n    return backend.forward(q, kv, topk, scale)\n", False),
    ("def _launch(backend, q, kv, topk, scale):\n    return backend.forward(q, kv, topk, scale)\n\n\n"
     "def run(backend, q, kv, topk, scale):\n    return _launch(backend, q.flip(0), kv, topk.flip(0), scale)\n", False),
    # the record made in the call's arguments, storing what it is handed, and a launcher no file calls: plain
    ("class Step:\n    def __init__(self, q, kv, topk, scale):\n        self.q = q\n        self.kv = kv\n"
     "        self.topk = topk\n        self.scale = scale\n\n\n"
     "def _launch(backend, step):\n    return backend.forward(step.q, step.kv, step.topk, step.scale)\n\n\n"
     "def run(backend, q, kv, topk, scale):\n    return _launch(backend, Step(q, kv, topk, scale))\n", True),
    ("def _launch(backend, q, kv, topk, scale):\n    return backend.forward(q, kv, topk, scale)\n", True)])
def test_round_am_the_callers_own_callers_hand_the_rows_on(tmp_path, layer, fixable):
    (tmp_path / "layer.py").write_text(layer)
    site = _site(tmp_path, HANDED_INDICES, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("value, fixable", [
    # round AM (m3): -1 where one tensor is invalid, the entries of another where it is valid: that one's -1s fall
    # inside the count; the tested tensor's own entries, a functional masked_fill and a clamp at -1 keep the top-k
    ("torch.where(topk_indices >= 0, prev, -1)", False),
    ("prev.masked_fill(topk_indices < 0, -1)", False),
    ("torch.where(topk_indices >= 0, topk_indices, -1)", True),
    ("torch.masked_fill(topk_indices, topk_indices < 0, -1)", True),
    ("topk_indices.clamp(min=-1)", True),
    ("topk_indices.clamp(min=-1, max=7)", False)])
def test_round_am_sentinel_forms_of_the_indices(tmp_path, value, fixable):
    src = _handed(f"prev = topk_indices.roll(1, dims=-1)\n        topk_indices = {value}")
    (site,) = migrate_source(src, str(tmp_path / "backend.py"), kernel=KERNEL).sites
    assert (site.status is Status.FIXABLE) is fixable, site.reason


_WARM_AL = _STATIC_AI.replace(  # (a record made by a warm-up hook; `{plan}` is the planner's body, indented)
    "warm, parent=None):\n        self.dsa_index_topk = dsa_index_topk\n        {init}\n",
    "):\n        self.dsa_index_topk = dsa_index_topk\n        self.forward_metadata = None\n").replace(
    "    def _refresh(self, forward_batch):\n        self.forward_metadata.dsa_cache_seqlens_int32.copy_(\n"
    "            forward_batch.seq_lens.clamp(max=self.dsa_index_topk).to(torch.int32))\n",
    "    def warmup(self, warm):\n"
    "        self.forward_metadata = DSAMetadata(warm.seq_lens.clamp(max=self.dsa_index_topk).to(torch.int32))\n").replace(
    "        {plan}\n", "{plan}\n")
_REFRESH_AL = "self.forward_metadata.dsa_cache_seqlens_int32.copy_(forward_batch.seq_lens.clamp(max=self.dsa_index_topk).int())"


@pytest.mark.parametrize("plan, fixable", [
    # round AL (l1): a record a hook no planner calls makes (a warm-up) lives across steps: each planner refreshes it
    # on every path, as it refreshes `__init__`'s; round AQ: and a hook neither the start-up nor a planner runs may
    # run after the step's planner (a scheduler's `prepare_next`), so even refreshed it is refused
    (f"        if forward_batch.forward_mode == 'decode':\n            {_REFRESH_AL}", False),
    (f"        {_REFRESH_AL}", False)])
def test_round_al_a_record_a_warm_up_hook_makes(tmp_path, plan, fixable):
    site = _site(tmp_path, _WARM_AL.format(plan=plan), kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("pooled, fixable", [
    # round AL (l1): a record class of another file whose `__new__` hands back one object per batch size; a plain one
    ("    _pool = {}\n\n    def __new__(cls, *args, **kwargs):\n"
     "        return cls._pool.setdefault(len(kwargs), super().__new__(cls))\n", False),
    ("    pass\n", True)])
def test_round_al_a_record_class_of_another_file(tmp_path, pooled, fixable):
    (tmp_path / "records.py").write_text("from dataclasses import dataclass\n\n\n@dataclass\nclass Base:\n"
                                         "    dsa_cache_seqlens_int32: object\n\n\nclass Pooled(Base):\n" + pooled)
    src = _WARM_AL.replace("    def warmup(self, warm):\n        self.forward_metadata = DSAMetadata(warm.seq_lens.clamp("
                           "max=self.dsa_index_topk).to(torch.int32))\n\n", "").format(
        plan="        self.forward_metadata = Pooled(dsa_cache_seqlens_int32=forward_batch.seq_lens.clamp("
             "max=self.dsa_index_topk).int())").replace("import torch\n", "import torch\nfrom records import Pooled\n")
    site = _site(tmp_path, src, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


_HELPER_AL = "\n    def _refresh(self, key, seq_lens):\n        md = self.graph_metadata[key]\n" \
    f"        md.dsa_cache_seqlens_int32.copy_({_CLIP})\n\n    def _record(self, bs):\n" \
    "        assert bs in self.graph_metadata\n        return self.graph_metadata[bs]\n"


@pytest.mark.parametrize("replay, fixable", [
    # round AL (l1): a replay hook refreshing through a helper one record (keyed by another count) and giving the
    # holder another, directly or through an accessor; the same key, and a property a mode switch rebinds (AM)
    ("self._refresh(seq_lens.numel(), seq_lens)\n        self.forward_metadata = self.graph_metadata[bs]", False),
    ("self._refresh(seq_lens.numel(), seq_lens)\n        self.forward_metadata = self._record(bs)", False),
    ("self._refresh(bs, seq_lens)\n        self.forward_metadata = self._record(bs)", True),
    ("self._refresh(bs, seq_lens)\n        self.forward_metadata = self.graph_metadata[bs]", True)])
def test_round_al_a_replay_helper_refreshes_the_record_the_holder_gets(tmp_path, replay, fixable):
    site = _graph_site(tmp_path, _AI_CAPTURE, replay, _HELPER_AL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("replay, fixable", [
    # round AM (m1): a key read through a property of self whose attribute a call between refresh and publish binds
    # again names two records; bound before the refresh, one
    (f"self.graph_metadata[self.key].dsa_cache_seqlens_int32.copy_({_CLIP})\n        self._enter(bs)\n"
     "        self.forward_metadata = self.graph_metadata[self.key]", False),
    (f"self._enter(bs)\n        self.graph_metadata[self.key].dsa_cache_seqlens_int32.copy_({_CLIP})\n"
     "        self.forward_metadata = self.graph_metadata[self.key]", True)])
def test_round_am_a_key_read_through_a_property(tmp_path, replay, fixable):
    capture = f"self._enter(bs)\n        md = DSAMetadata(dsa_cache_seqlens_int32={_CLIP})\n" \
        "        self.graph_metadata[self.key] = md\n        self.forward_metadata = md"
    site = _graph_site(tmp_path, capture, replay, "\n    @property\n    def key(self):\n        return self._bs\n\n"
                       "    def _enter(self, bs):\n        self._bs = bs\n")
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("plan, fixable", [
    # round AM (m1): a base's planner called explicitly on one mode only leaves the other mode's holder stale; on
    # every path it plans
    ("        if forward_batch.forward_mode == 'decode':\n            Plan.init_forward_metadata(self, forward_batch)", False),
    ("        Plan.init_forward_metadata(self, forward_batch)", True)])
def test_round_am_a_bases_planner_called_explicitly(tmp_path, plan, fixable):
    src = _WARM_AL.replace("    def warmup(self, warm):\n        self.forward_metadata = DSAMetadata(warm.seq_lens.clamp("
                           "max=self.dsa_index_topk).to(torch.int32))\n\n", "").replace(
        "class Backend:", "class Plan:\n    def init_forward_metadata(self, forward_batch):\n"
        "        self.forward_metadata = DSAMetadata(forward_batch.seq_lens.clamp(max=self.dsa_index_topk).int())\n\n\n"
        "class Backend(Plan):").format(plan=plan)
    site = _site(tmp_path, src, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("plan, fixable", [
    # round AM (m1): a builder handed a batch kept on self from an earlier step (the verify step's, for a draft
    # extend) clips that batch's lengths; handed this step's, its own
    ("        if forward_batch.forward_mode == 'target_verify':\n            self._kept = forward_batch\n"
     "        self._build(self._kept if self._kept is not None else forward_batch)", False),
    ("        kept = self._kept\n        self._build(kept)", False),
    ("        self._build(forward_batch)", True)])
def test_round_am_a_builder_handed_a_kept_batch(tmp_path, plan, fixable):
    src = _WARM_AL.replace("    def warmup(self, warm):\n        self.forward_metadata = DSAMetadata(warm.seq_lens.clamp("
                           "max=self.dsa_index_topk).to(torch.int32))\n", "    def _build(self, fb):\n"
                           "        self.forward_metadata = DSAMetadata(fb.seq_lens.clamp(max=self.dsa_index_topk).int())\n"
                           ).replace("        self.forward_metadata = None\n",
                                     "        self.forward_metadata = None\n        self._kept = None\n").format(plan=plan)
    site = _site(tmp_path, src, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


_RECORD_AM = ("from dataclasses import dataclass\n\nimport torch\n\n\n@dataclass(frozen=True)\nclass VerifyBatch:\n"
              "    seq_lens: torch.Tensor\n    n: int = 0\n\n")


@pytest.mark.parametrize("views, fixable", [
    # round AM (m4): a batch class of the project giving `seq_lens` a value it makes by a store into the instance's
    # dict, an `out=` or a local alias written in place, a property set on the class after its body, a factory
    # making its own class with the drafts added, a function building a view of computed fields or a copy whose
    # field it sets
    (_RECORD_AM + "    def __post_init__(self):\n        self.__dict__['seq_lens'] = self.seq_lens + self.n\n", False),
    (_RECORD_AM + "    def __post_init__(self):\n        torch.add(self.seq_lens, self.n, out=self.seq_lens)\n", False),
    (_RECORD_AM + "    def __post_init__(self):\n        lens = self.seq_lens\n        lens += self.n\n", False),
    (_RECORD_AM + "\nVerifyBatch.seq_lens = property(lambda self: self.n)\n", False),
    (_RECORD_AM + "    @classmethod\n    def of(cls, b, n):\n        return cls(b.seq_lens + n, n)\n", False),
    ("import copy\n\n\ndef view(b, n):\n    v = copy.copy(b)\n    v.seq_lens = b.seq_lens + n\n    return v\n", False),
    # the field kept as it is (made contiguous, cast to int32, taken as a tensor), a factory handing it on as read
    (_RECORD_AM + "    def __post_init__(self):\n"
     "        object.__setattr__(self, 'seq_lens', self.seq_lens.contiguous())\n", True),
    (_RECORD_AM + "    def __post_init__(self):\n        object.__setattr__(self, 'seq_lens', torch.as_tensor(self.seq_lens))\n",
     True),
    (_RECORD_AM + "    @classmethod\n    def of(cls, b, n):\n        return cls(b.seq_lens, n)\n", True)])
def test_round_am_the_clips_operand_made_by_the_projects_code(tmp_path, views, fixable):
    (tmp_path / "fork_views.py").write_text(views)
    site = _site(tmp_path, _CONFIG_BACKEND, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("driver, fixable", [
    # round AM (m4): the batch (or the config) a project function makes of computed fields, read where the backend
    # is driven: its fields are that code's; one the driver makes of plain fields is read as it is
    ("from fork_views import view\n\n\ndef entry(seq_lens, cfg):\n    b = Backend(cfg)\n"
     "    b.init_forward_metadata(view(types.SimpleNamespace(seq_lens=seq_lens), 2))\n", False),
    ("from fork_views import capped\n\n\ndef entry(seq_lens, cfg):\n    b = Backend(capped(cfg))\n"
     "    b.init_forward_metadata(types.SimpleNamespace(seq_lens=seq_lens))\n", False),
    ("def entry(seq_lens, cfg):\n    b = Backend(cfg)\n"
     "    b.init_forward_metadata(types.SimpleNamespace(seq_lens=seq_lens))\n", True)])
def test_round_am_a_batch_or_config_a_function_builds(tmp_path, driver, fixable):
    (tmp_path / "fork_views.py").write_text(
        "import types\n\n\ndef view(b, n):\n    return types.SimpleNamespace(**{k: v + n for k, v in vars(b).items()})\n\n\n"
        "def capped(cfg):\n    return types.SimpleNamespace(**{k: min(v, 8) for k, v in vars(cfg).items()})\n")
    src = _CONFIG_BACKEND.replace("import torch\n", "import types\n\nimport torch\n") + "\n\n" + driver
    site = _site(tmp_path, src, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("packaging, fixable", [
    # round AM (m4): the project's packaging installs its own build of the kernel's package from a folder of its own
    ({"setup.py": "from setuptools import setup\n\nsetup(name='f', packages=['sgl_kernel'], "
                  "package_dir={'sgl_kernel': 'third_party/python/sgl_kernel'})\n"}, False),
    ({"pyproject.toml": "[project]\nname = 'f'\n\n[tool.setuptools.package-dir]\nsgl_kernel = 'vendor/sgl_kernel'\n"}, False),
    ({"setup.cfg": "[metadata]\nname = f\n\n[options.package_dir]\nsgl_kernel = vendor/sgl_kernel\n"}, False),
    ({"setup.py": "from setuptools import setup\n\nsetup(name='f', package_dir={'': 'src'})\n"}, True)])
def test_round_am_a_kernel_package_the_packaging_maps(tmp_path, packaging, fixable):
    for rel, text in {"requirements.txt": "sglang-kernel==0.4.6\n", **packaging}.items():
        (tmp_path / rel).write_text(text)
    site = _site(tmp_path, HANDED_INDICES)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("plan, fixable", [
    # round AM (m1): the lengths read back off an object kept on self (the last plan, a plan cache's hit) are another
    # step's; a record's own field copied back into itself (sglang's graph record) is its own
    ("        prev = self.forward_metadata\n        lens = prev.dsa_cache_seqlens_int32 if prev is not None else "
     "forward_batch.seq_lens.clamp(max=self.dsa_index_topk).int()\n"
     "        self.forward_metadata = DSAMetadata(lens)", False),
    ("        hit = self._plans.get(forward_batch.batch_size)\n        lens = hit.dsa_cache_seqlens_int32 if hit else "
     "forward_batch.seq_lens.clamp(max=self.dsa_index_topk).int()\n"
     "        self.forward_metadata = DSAMetadata(dsa_cache_seqlens_int32=lens)", False),
    ("        self.forward_metadata = DSAMetadata(dsa_cache_seqlens_int32=forward_batch.seq_lens.clamp("
     "max=self.dsa_index_topk).int())\n        md = self.forward_metadata\n"
     "        md.dsa_cache_seqlens_int32.copy_(md.dsa_cache_seqlens_int32)", True)])
def test_round_am_the_lengths_read_back_off_a_kept_object(tmp_path, plan, fixable):
    src = _WARM_AL.replace("    def warmup(self, warm):\n        self.forward_metadata = DSAMetadata(warm.seq_lens.clamp("
                           "max=self.dsa_index_topk).to(torch.int32))\n\n", "").replace(
        "        self.forward_metadata = None\n", "        self.forward_metadata = None\n        self._plans = dict()\n"
    ).format(plan=plan)
    site = _site(tmp_path, src, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("lens, fixable", [
    # round AN (AM's m1 left open): a draft planner handed the target's plan reads another step's lengths off it, as
    # off a local bound to it; its own clip is this step's
    ("target_plan.dsa_cache_seqlens_int32", False),
    ("(plan := target_plan).dsa_cache_seqlens_int32 if plan else None", False),
    ("forward_batch.seq_lens.clamp(max=self.dsa_index_topk).int()", True)])
def test_round_an_the_lengths_read_off_a_handed_plan(tmp_path, lens, fixable):
    plan = f"        self.forward_metadata = DSAMetadata(dsa_cache_seqlens_int32={lens})"
    src = _WARM_AL.replace("    def warmup(self, warm):\n        self.forward_metadata = DSAMetadata(warm.seq_lens.clamp("
                           "max=self.dsa_index_topk).to(torch.int32))\n\n", "").replace(
        "def init_forward_metadata(self, forward_batch):", "def init_forward_metadata(self, forward_batch, target_plan=None):"
    ).format(plan=plan)
    assert "target_plan=None" in src
    site = _site(tmp_path, src, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("base, fixable", [
    # round AM: a layer's `forward` handing the rows on is called by torch as `layer(...)`, a name no file spells:
    # its callers are not seen (a class of no base is called by its name only)
    ("(nn.Module)", False),
    ("", True)])
def test_round_am_a_layers_forward_handing_the_rows_on(tmp_path, base, fixable):
    (tmp_path / "layer.py").write_text(f"from torch import nn\n\n\nclass Layer{base}:\n    def __init__(self, backend):\n"
                                       "        super().__init__()\n        self.backend = backend\n\n"
                                       "    def forward(self, q, kv, topk, scale):\n"
                                       "        return self.backend.attend(q, kv, topk, scale)\n")
    site = _site(tmp_path, HANDED_INDICES.replace("def forward(self, q, kv, topk_indices", "def attend(self, q, kv, "
                                                  "topk_indices"), kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


# -- round AN ----------------------------------------------------------------------------------------------------

def _files_site(tmp_path, files: dict, src: str):
    """The site of backend.py beside the other files of the fork (relative path -> text)."""
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    return _site(tmp_path, src, kernel=KERNEL)


_WRAPPER_AN = ("class Wrapper:\n    def __init__(self, inner):\n        self.inner = inner\n\n"
               "    def forward(self, q, kv, topk, scale):\n        return self.inner.forward(q, kv, topk, scale)\n\n"
               "    def forward_cp(self, q, kv, topk, scale, order):\n        return self.forward({q}, kv, {topk}, scale)\n")


@pytest.mark.parametrize("base, fixable", [
    # round AN (n2), AO (o2): a caller of the traced method's name in a class torch may call as `module(...)` (an
    # `nn.Module`, or a class a module of the project inherits `forward` from) is refused: its callers are not seen; a
    # plain wrapper's is read as the engine's hybrid dispatch is (its other methods' calls: stated open)
    ("(torch.nn.Module)", False),
    ("", True)])
def test_round_an_a_wrappers_method_of_the_traced_name(tmp_path, base, fixable):
    wrapper = "import torch\n\n\n" + _WRAPPER_AN.format(q="q", topk="topk").replace("class Wrapper:", f"class Wrapper{base}:")
    site = _files_site(tmp_path, {"wrapper.py": wrapper}, HANDED_INDICES)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


def test_round_ao_a_module_inheriting_a_plain_forward(tmp_path):
    """Round AO (o2): `class Attn(Dispatch, nn.Module)` inherits a plain class's `forward` handing the rows on."""
    wrapper = "import torch\n\n\n" + _WRAPPER_AN.format(q="q", topk="topk") + \
        "\n\nclass Attn(Wrapper, torch.nn.Module):\n    pass\n"
    site = _files_site(tmp_path, {"wrapper.py": wrapper}, HANDED_INDICES)
    assert site.status is Status.MANUAL and "one inherited by a module of it" in site.reason, site.reason


_RUNNER_AN = ("\n\nclass Runner:\n    def __init__(self, backend):\n        self.backend = backend\n\n"
              "    def step(self, q, kv, topk, scale):\n        return self.backend.forward(q, kv, topk, scale)\n\n"
              "    def run_cp(self, q, kv, topk, scale, order):\n        return self.step({q}, kv, {topk}, scale)\n")


@pytest.mark.parametrize("q, topk, fixable", [
    # round AN (n2): a caller in the backend's own module handing on its parameters is as right as its own callers
    ("q[order]", "topk[order]", False),
    ("q", "topk", True)])
def test_round_an_the_modules_own_callers_callers(tmp_path, q, topk, fixable):
    site = _site(tmp_path, HANDED_INDICES + _RUNNER_AN.format(q=q, topk=topk), kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("order, fixable", [
    # round AN (n2): a module launcher of the backend's file called from another file with the rows sorted
    ("order = lens.argsort()\n    return launch(backend, q[order], kv, topk[order], scale)\n", False),
    ("return launch(backend, q, kv, topk, scale)\n", True)])
def test_round_an_a_module_launcher_called_from_another_file(tmp_path, order, fixable):
    src = HANDED_INDICES + "\n\ndef launch(backend, q, kv, topk, scale):\n    return backend.forward(q, kv, topk, scale)\n"
    tbo = f"from backend import launch\n\n\ndef run(backend, q, kv, topk, scale, lens):\n    {order}"
    site = _files_site(tmp_path, {"tbo.py": tbo}, src)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("vendored, fixable", [
    # round AN (n2): a decorator of a module the fork puts on sys.path (third_party/cp_utils.py) is not a library's
    ({"third_party/cp_utils.py": "def reorder(fn):\n    return fn\n"}, False),
    ({}, True)])
def test_round_an_a_decorator_of_a_folder_on_sys_path(tmp_path, vendored, fixable):
    runner = ("import functools\nimport sys\n\nsys.path.insert(0, 'third_party')\nfrom cp_utils import reorder\n\n\n"
              "class Runner:\n    def __init__(self, backend):\n        self.backend = backend\n\n"
              "    @reorder\n    def attend(self, q, kv, topk, scale):\n        return self.backend.forward(q, kv, topk, scale)\n")
    if not vendored:
        runner = runner.replace("from cp_utils import reorder", "from functools import cache as reorder")
    site = _files_site(tmp_path, {"runner.py": runner, **vendored}, HANDED_INDICES)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("lookup, extra", [
    # round AN (n3): the kernel looked up by a string naming it, or read off an import's result, is a site
    ('pkgutil.resolve_name("sgl_kernel.flash_mla:flash_mla_sparse_fwd")', 2),
    ('pydoc.locate("sgl_kernel.flash_mla.flash_mla_sparse_fwd")', 2),
    ('vars(fm).get("flash_mla_sparse_fwd")', 2),
    ('operator.attrgetter("flash_mla_sparse_fwd")(fm)', 3),  # (the getter's call too: round AR's landing)
    ('importlib.import_module("sgl_kernel.flash_mla").flash_mla_sparse_fwd', 2),
    # a probe, a store by name (identity reads those), a message: no site of their own
    ('hasattr(fm, "flash_mla_sparse_fwd")', 0),
    ('print("flash_mla_sparse_fwd")', 0)])
def test_round_an_the_kernel_reached_by_a_string_naming_it(tmp_path, lookup, extra):
    src = ("import importlib\nimport operator\nimport pkgutil\nimport pydoc\n\nimport sgl_kernel.flash_mla as fm\n\n"
           f"_sparse = {lookup}\n\n\ndef run(q, kv, idx, s):\n    return _sparse(q, kv, idx, s)\n")
    sites = migrate_source(src, str(tmp_path / "m.py"), kernel=KERNEL).sites
    assert len(sites) == extra and all(s.status is Status.MANUAL for s in sites), sites


_SPEC_AN = "import dataclasses\nimport functools\n\nfrom batch import StepBatch\n\n\ndef verify_view(b, n):\n    {make}\n"


@pytest.mark.parametrize("make, fixable", [
    # round AN (n4): a copy of the batch with other lengths made by `dataclasses.replace`, a namedtuple's `_replace`,
    # the class read off the object, a partial of the class, a literal setattr on a copy
    ("return dataclasses.replace(b, seq_lens=b.seq_lens + n)", False),
    ("return b._replace(seq_lens=b.seq_lens + n)", False),
    ("return type(b)(seq_lens=b.seq_lens + n)", False),
    ("make = functools.partial(StepBatch)\n    return make(seq_lens=b.seq_lens + n)", False),
    ("v = dataclasses.replace(b)\n    object.__setattr__(v, 'seq_lens', b.seq_lens + n)\n    return v", False),
    ("return dataclasses.replace(b, seq_lens=b.seq_lens)", True)])
def test_round_an_a_batch_copy_made_with_other_lengths(tmp_path, make, fixable):
    files = {"batch.py": "from dataclasses import dataclass\n\nimport torch\n\n\n@dataclass(frozen=True)\n"
                         "class StepBatch:\n    seq_lens: torch.Tensor\n",
             "spec.py": _SPEC_AN.format(make=make)}
    site = _files_site(tmp_path, files, ANNOTATED_HOLDER.format(
        extend="DSAMetadata(dsa_cache_seqlens_int32=forward_batch.seq_lens.clamp(max=self.dsa_index_topk).to(torch.int32))"))
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("vendored, fixable", [
    # round AN (n4): a tree holding a `sgl_kernel` of its own in a sub-folder (a Dockerfile's `pip install
    # ./third_party/flashmla`, hatch's sources, poetry's `from`, a find's `where` may install it over the pin)
    ({"third_party/flashmla/python/sgl_kernel/__init__.py": "", "third_party/flashmla/python/sgl_kernel/flash_mla.py":
      "def flash_mla_sparse_fwd(q, kv, indices, sm_scale, d_v=512):\n    pass\n"}, False),
    ({"third_party/flashmla/README.md": "vendored elsewhere\n"}, True)])
def test_round_an_a_tree_holding_its_own_kernel_package(tmp_path, vendored, fixable):
    site = _files_site(tmp_path, vendored, HANDED_INDICES)
    assert (site.status is Status.FIXABLE) is fixable, site.reason
    assert fixable or "holds a `sgl_kernel` of its own" in site.reason


_CLIP_AN = "forward_batch.seq_lens.clamp(max=self.dsa_index_topk).int()"


@pytest.mark.parametrize("maker, made, fixable", [
    # round AN (n1): a capitalised name bound to an instance whose `__call__` hands back one record per shape is not
    # a class making a record for this batch; a subclass of the record is
    ("class _Interner:\n    def __init__(self):\n        self.free = {}\n\n    def __call__(self, md):\n"
     "        return self.free.setdefault(1, md)\n\n\nInterned = _Interner()\n",
     f"Interned(DSAMetadata(dsa_cache_seqlens_int32={_CLIP_AN}))", False),
    ("class Interned(DSAMetadata):\n    pass\n", f"Interned(dsa_cache_seqlens_int32={_CLIP_AN})", True)])
def test_round_an_a_capitalised_callable_instance(tmp_path, maker, made, fixable):
    src = _WARM_AL.replace("    def warmup(self, warm):\n        self.forward_metadata = DSAMetadata(warm.seq_lens.clamp("
                           "max=self.dsa_index_topk).to(torch.int32))\n\n", "").replace(
        "\n\nclass Backend:", "\n\n" + maker + "\n\nclass Backend:").replace(
        "{plan}", f"        self.forward_metadata = {made}")
    site = _site(tmp_path, src, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


# -- round AO ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("folder, importer", [
    # round AO (o2): a gitignored folder named like a build's (`dist/`, `build/`) that the code imports from the root,
    # and one a computed import with a literal head reaches, are read (their callers sort the rows)
    ("dist", "import dist.runner\n"),
    ("build", "from build import runner\n"),
    ("overrides", "import importlib\n\nrunner = importlib.import_module(f'overrides.{KIND}')\nKIND = 'runner'\n")])
def test_round_ao_a_gitignored_package_the_code_imports(tmp_path, folder, importer):
    runner = ("def run(backend, q, kv, topk, scale, lens):\n    order = lens.argsort()\n"
              "    return backend.forward(q[order], kv, topk[order], scale)\n")
    files = {".gitignore": f"{folder}/\n", f"{folder}/__init__.py": "", f"{folder}/runner.py": runner,
             "launch.py": importer}
    site = _files_site(tmp_path, files, HANDED_INDICES)
    assert site.status is Status.MANUAL and f"{folder}/runner.py" in site.reason, site.reason


@pytest.mark.parametrize("where, fixable", [
    # round AO (o3): a -1 pad joined to the indices is a fill only where a function binds it (a module's pad a sink
    # installer writes is not)
    ("module", False),
    ("local", True)])
def test_round_ao_a_module_level_pad(tmp_path, where, fixable):
    pad = "torch.full((8, 16), -1, dtype=torch.int32)"
    local = f"        pad = {pad}\n" if where == "local" else ""
    name = "pad" if where == "local" else "_PAD"
    src = HANDED_INDICES.replace("from sgl_kernel", "import torch\nfrom sgl_kernel").replace(
        "        return self._forward_flashmla_sparse(q, kv, topk_indices, scale)",
        f"{local}        topk_indices = torch.cat([topk_indices, {name}], dim=-1)\n"
        "        return self._forward_flashmla_sparse(q, kv, topk_indices, scale)")
    if where == "module":
        src += f"\n\n_PAD = {pad}\n\n\ndef install_sink():\n    _PAD[:, 0] = 0\n"
    site = _site(tmp_path, src, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("make, fixable", [
    # round AO (o4): a batch copy with other lengths through a local, by position, by `_make`, by a project factory,
    # by a merged mapping, or stored on a copy through a local
    ("lens = b.seq_lens + n\n    return StepBatch(seq_lens=lens)", False),
    ("return StepBatch(b.seq_lens + n)", False),
    ("return StepBatch._make((b.seq_lens + n,))", False),
    ("return new_batch(seq_lens=b.seq_lens + n)", False),
    ("fields = dataclasses.asdict(b) | {'seq_lens': b.seq_lens + n}\n    return StepBatch(**fields)", False),
    ("grown = b.seq_lens + n\n    v = copy.copy(b)\n    v.seq_lens = grown\n    return v", False),
    ("lens = b.seq_lens\n    return StepBatch(seq_lens=lens)", True)])
def test_round_ao_a_batch_copy_made_with_other_lengths(tmp_path, make, fixable):
    spec = ("import copy\nimport dataclasses\n\nfrom batch import StepBatch\n\n\ndef new_batch(**fields):\n"
            "    return StepBatch(**fields)\n\n\ndef verify_view(b, n):\n    " + make + "\n")
    files = {"batch.py": "from dataclasses import dataclass\n\nimport torch\n\n\n@dataclass(frozen=True)\n"
                         "class StepBatch:\n    seq_lens: torch.Tensor\n", "spec.py": spec}
    site = _files_site(tmp_path, files, ANNOTATED_HOLDER.format(
        extend="DSAMetadata(dsa_cache_seqlens_int32=forward_batch.seq_lens.clamp(max=self.dsa_index_topk).to(torch.int32))"))
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("decorator, fixable", [
    # round AO (o4): a method decorated by a call the reader does not know (a model validator run as the batch is
    # made) may rewrite any field; a grad mode does not
    ("@model_validator(mode='before')\n    @classmethod", False),
    ("@torch.no_grad()", True)])
def test_round_ao_a_batch_class_with_a_decorated_hook(tmp_path, decorator, fixable):
    batch = ("import torch\nfrom pydantic import model_validator\n\n\nclass StepBatch:\n    seq_lens: torch.Tensor\n\n"
             f"    {decorator}\n    def check(cls, data):\n        return data\n")
    site = _files_site(tmp_path, {"batch.py": batch}, ANNOTATED_HOLDER.format(
        extend="DSAMetadata(dsa_cache_seqlens_int32=forward_batch.seq_lens.clamp(max=self.dsa_index_topk).to(torch.int32))"))
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("sub, fixable", [
    # round AO (o4): a sub-project's packaging (a Dockerfile's `pip install ./third_party/flashmla`) mapping the
    # kernel's package to a folder of its own
    ({"third_party/flashmla/setup.py": "from setuptools import setup\n\nsetup(name='sglang-kernel', "
                                       "package_dir={'sgl_kernel': 'python/fork_flashmla'})\n"}, False),
    ({"third_party/flashmla/setup.cfg": "[options.package_dir]\nsgl_kernel = python/fork_flashmla\n"}, False),
    ({"third_party/other/setup.py": "from setuptools import setup\n\nsetup(name='other', package_dir={'other': 'src'})\n"},
     True)])
def test_round_ao_a_sub_projects_packaging(tmp_path, sub, fixable):
    site = _files_site(tmp_path, sub, HANDED_INDICES)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


_BUDGET_AO = ("import types\n\nfrom backend import Backend\n\n\ndef budgeted(raw, budget):\n"
              "    return types.SimpleNamespace(**{k: min(v, budget) for k, v in vars(raw).items()})\n\n\n")


@pytest.mark.parametrize("maker, chain, fixable", [
    # round AO (o4): the width's object handed by a subclass's `super().__init__` or through `**`, capped by the
    # project's code (read off an attribute chain of what a making is handed, `model_runner.model_config.hf_config`:
    # stated open, as sglang's own runner is read)
    ("class LowMem(Backend):\n    def __init__(self, cfg):\n        super().__init__(budgeted(cfg, 8))\n", False, False),
    ("def make(cfg):\n    kw = {'hf_config': budgeted(cfg, 8)}\n    return Backend(**kw)\n", False, False),
    ("def make(cfg):\n    return Backend(cfg)\n", False, True)])
def test_round_ao_the_widths_object_capped_where_it_is_handed(tmp_path, maker, chain, fixable):
    param, read = ("model_runner", "model_runner.model_config.hf_config.index_topk") if chain else (
        "hf_config", "hf_config.index_topk")
    src = ANNOTATED_HOLDER.format(extend="None").replace(
        "    forward_metadata: DSAMetadata\n",
        f"    forward_metadata: DSAMetadata\n\n    def __init__(self, {param}):\n        self.dsa_index_topk = {read}\n")
    site = _files_site(tmp_path, {"serving.py": _BUDGET_AO + maker.replace("hf_config=budgeted", "hf_config=budgeted")}, src)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


_STATIC_AO = _STATIC_AI.format(
    init="self.forward_metadata = DSAMetadata(warm.seq_lens.clamp(max=self.dsa_index_topk).to(torch.int32))",
    plan="self._refresh(forward_batch)")


@pytest.mark.parametrize("extra, files, fixable", [
    # round AO (o1): the eager planner replaced per instance, or run from a mixin of another file ahead of the
    # module's in the order Python looks it up; a mixin behind it does not run its own
    ("\n    def pages_only(self, forward_batch):\n        pass\n\n    def use_pages_only(self):\n"
     "        self.init_forward_metadata = self.pages_only\n", {}, False),
    ("\n\nclass Draft(FastPlan, Backend):\n    pass\n", {"fastplan.py": "class FastPlan:\n"
                                                        "    def init_forward_metadata(self, forward_batch):\n        pass\n"}, False),
    ("\n\nclass Draft(Backend, FastPlan):\n    pass\n", {"fastplan.py": "class FastPlan:\n"
                                                        "    def init_forward_metadata(self, forward_batch):\n        pass\n"}, True)])
def test_round_ao_the_planner_that_runs(tmp_path, extra, files, fixable):
    src = _STATIC_AO + extra if extra.startswith("\n\n") else _STATIC_AO.replace(
        "    def forward(self, q, kv, indices, scale):", extra.lstrip("\n") + "\n    def forward(self, q, kv, indices, scale):")
    if files:
        src = src.replace("from sgl_kernel", "from fastplan import FastPlan\nfrom sgl_kernel")
    site = _files_site(tmp_path, files, src)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


_POOLED_AO = '''"""A fork's backend; metadata.dsa_cache_seqlens_int32 holds seqlens clipped to topk."""
from dataclasses import dataclass

import torch
from sgl_kernel.flash_mla import flash_mla_sparse_fwd

from dsa_common import RecordsMixin


@dataclass
class DSAMetadata:
    dsa_cache_seqlens_int32: torch.Tensor


class Backend(RecordsMixin):
    def __init__(self, dsa_index_topk):
        self.dsa_index_topk = dsa_index_topk
{init}
    def init_forward_metadata(self, forward_batch):
        md = self._records.get(forward_batch.batch_size)
        if md is None:
            md = DSAMetadata(forward_batch.seq_lens.clamp(max=self.dsa_index_topk).to(torch.int32))
            self._records[forward_batch.batch_size] = md
        md.dsa_cache_seqlens_int32.copy_(forward_batch.seq_lens.clamp(max=self.dsa_index_topk).to(torch.int32))
        self.forward_metadata = md

    def forward(self, q, kv, indices, scale):
        metadata = self.forward_metadata
        return flash_mla_sparse_fwd(q=q, kv=kv, indices=indices, sm_scale=scale)[0]
'''


@pytest.mark.parametrize("init, fixable", [
    # round AO (o1): a pool of records per size bound as a class attribute of a mixin of another file is every
    # instance's (target and draft share it); one the backend makes for itself is its own
    ("", False),
    ("        self._records = {}\n", True)])
def test_round_ao_a_pool_a_base_of_another_file_binds(tmp_path, init, fixable):
    site = _files_site(tmp_path, {"dsa_common.py": "class RecordsMixin:\n    _records = {}\n"}, _POOLED_AO.format(init=init))
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("own, fixable", [
    # round AO (o1): the CUDA-graph table bound only as a class attribute of a mixin of another file is every
    # instance's (a draft's replay refreshes the target's captured record); one the backend makes is its own
    (False, False),
    (True, True)])
def test_round_ao_a_graph_table_a_base_of_another_file_binds(tmp_path, own, fixable):
    (tmp_path / "dsa_common.py").write_text("class TablesMixin:\n    graph_metadata = {}\n")
    capture = (f"md = DSAMetadata(dsa_cache_seqlens_int32={_CLIP})\n        self.graph_metadata[bs] = md\n"
               "        self.forward_metadata = md")
    replay = f"md = self.graph_metadata[bs]\n        md.dsa_cache_seqlens_int32.copy_({_CLIP})\n        self.forward_metadata = md"
    src = GRAPH_PER_CAPTURE.replace("{capture}", "        " + capture).replace("{replay}", "        " + replay).replace(
        "class Backend:", "from dsa_common import TablesMixin\n\n\nclass Backend(TablesMixin):")
    if not own:
        src = src.replace("        self.graph_metadata = {}\n", "")
    site = _site(tmp_path, src, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


_TWO_FIELDS_AP = '''"""A fork's backend; metadata.dsa_cache_seqlens_int32 holds seqlens clipped to topk."""
from dataclasses import dataclass

import torch
from sgl_kernel.flash_mla import flash_mla_sparse_fwd


@dataclass
class DSAMetadata:
    cache_seqlens_int32: torch.Tensor
    dsa_cache_seqlens_int32: torch.Tensor


class Backend:
    def __init__(self, dsa_index_topk, warm):
        self.dsa_index_topk = dsa_index_topk
        lens = warm.seq_lens.clamp(max=self.dsa_index_topk).to(torch.int32)
{init}

    def init_forward_metadata(self, forward_batch):
        md = self.forward_metadata
        md.dsa_cache_seqlens_int32.copy_(forward_batch.seq_lens.clamp(max=self.dsa_index_topk).to(torch.int32))
        md.cache_seqlens_int32.copy_(forward_batch.seq_lens)

    def forward(self, q, kv, indices, scale):
        metadata = self.forward_metadata
        return flash_mla_sparse_fwd(q=q, kv=kv, indices=indices, sm_scale=scale)[0]
'''


@pytest.mark.parametrize("init, fixable", [
    # round AP (p1): the record made once with one tensor for both lengths fields, or the second field given the
    # first's tensor: the refresh's raw copy into the other field overwrites the clipped lengths; each its own is fine
    ("        self.forward_metadata = DSAMetadata(cache_seqlens_int32=lens, dsa_cache_seqlens_int32=lens)", False),
    ("        self.forward_metadata = DSAMetadata(cache_seqlens_int32=lens.clone(), dsa_cache_seqlens_int32=lens)\n"
     "        self.forward_metadata.cache_seqlens_int32 = self.forward_metadata.dsa_cache_seqlens_int32", False),
    ("        self.forward_metadata = DSAMetadata(cache_seqlens_int32=lens.clone(), dsa_cache_seqlens_int32=lens)", True)])
def test_round_ap_the_fields_tensor_shared_with_another_field(tmp_path, init, fixable):
    site = _site(tmp_path, _TWO_FIELDS_AP.format(init=init), kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("own_planner, fixable", [
    # round AP (p1): the module defines only the replay hook of a record made once; the eager planner that runs
    # between replays is a base's of another file (moving the page table only); the module's own is read
    (False, False), (True, True)])
def test_round_ap_an_eager_planner_inherited_from_another_file(tmp_path, own_planner, fixable):
    base = "class PagesOnly:\n    def init_forward_metadata(self, forward_batch):\n        pass\n"
    plan = "self._refresh(forward_batch)"
    src = _STATIC_AO.replace("class Backend:", "class Backend(PagesOnly):").replace(
        "from sgl_kernel", "from pages import PagesOnly\nfrom sgl_kernel")
    replay = ("    def init_forward_metadata_replay_cuda_graph(self, bs, forward_batch):\n"
              f"        {plan}\n\n    def forward(self, q, kv, indices, scale):")
    src = src.replace("    def forward(self, q, kv, indices, scale):", replay)
    if not own_planner:
        src = src.replace(f"    def init_forward_metadata(self, forward_batch):\n        {plan}\n\n", "")
    site = _files_site(tmp_path, {"pages.py": base}, src)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


_GROWN_AP = '''"""A fork's backend; metadata.dsa_cache_seqlens_int32 holds seqlens clipped to topk."""
from dataclasses import dataclass

import torch
from sgl_kernel.flash_mla import flash_mla_sparse_fwd

import fork_spec


@dataclass
class DSAMetadata:
    dsa_cache_seqlens_int32: torch.Tensor


class Backend:
    def __init__(self, dsa_index_topk):
        self.dsa_index_topk = dsa_index_topk

    def init_forward_metadata(self, forward_batch):
        self.forward_metadata = DSAMetadata(forward_batch.seq_lens.clamp(max=self.dsa_index_topk).to(torch.int32))

    def forward(self, q, kv, indices, scale):
        metadata = self.forward_metadata
        return flash_mla_sparse_fwd(q=q, kv=kv, indices=indices, sm_scale=scale)[0]


def step(backend, batch, q, kv, indices, scale):
    backend.init_forward_metadata(batch)
    fork_spec.prepare_verify(batch, 2)
    return backend.forward(q, kv, indices, scale)
'''


@pytest.mark.parametrize("helper, fixable", [
    # round AP (p4): the batch's lengths grown in place by a helper handed an attribute of the batch, or by a
    # tensor's `+=` on a helper's bare parameter; a helper only reading them is fine
    ("def _grow(lens, n):\n    lens.add_(n)\n", False),
    ("def _grow(lens, n):\n    lens += n\n", False),
    ("def _grow(lens, n):\n    return lens.max() + n\n", True)])
def test_round_ap_the_lengths_grown_through_a_helpers_parameter(tmp_path, helper, fixable):
    spec = helper + "\n\ndef prepare_verify(batch, n):\n    _grow(batch.seq_lens, n)\n    return batch\n"
    site = _files_site(tmp_path, {"fork_spec.py": spec}, _GROWN_AP)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("bind, call", [
    # round AP (p3): the kernel's value landing in a parameter's default, a class body's staticmethod, a module
    # name bound to a wrapper's result: each call through it is a site (manual), not only the value's line
    ("def attend(q, kv, indices, scale, fwd=flash_mla_sparse_fwd):\n    return fwd(q=q, kv=kv, indices=indices, sm_scale=scale)",
     "fwd(q=q"),
    ("class Attn:\n    _fwd = staticmethod(flash_mla_sparse_fwd)\n\n    def run(self, q, kv, indices, scale):\n"
     "        return self._fwd(q=q, kv=kv, indices=indices, sm_scale=scale)", "self._fwd(q=q"),
    ("_fwd = torch.compiler.disable(flash_mla_sparse_fwd)\n\n\ndef attend(q, kv, indices, scale):\n"
     "    return _fwd(q=q, kv=kv, indices=indices, sm_scale=scale)", "_fwd(q=q"),
    # round AQ (q3): a fallback tuple looped over, a registry record's field
    ("_IMPLS = (flash_mla_sparse_fwd,)\n\n\ndef attend(q, kv, indices, scale):\n    for impl in _IMPLS:\n"
     "        return impl(q=q, kv=kv, indices=indices, sm_scale=scale)", "impl(q=q"),
    ("class Impl:\n    def __init__(self, fn):\n        self.fn = fn\n\n\nSPARSE = Impl(flash_mla_sparse_fwd)\n\n\n"
     "def attend(q, kv, indices, scale):\n    return SPARSE.fn(q=q, kv=kv, indices=indices, sm_scale=scale)", "SPARSE.fn(q=q")])
def test_round_ap_calls_through_where_the_kernels_value_lands_are_sites(tmp_path, bind, call):
    src = ('"""A fork; metadata.dsa_cache_seqlens_int32."""\nimport torch\nfrom sgl_kernel.flash_mla import '
           f"flash_mla_sparse_fwd\n\n\n{bind}\n")
    line = next(i for i, text in enumerate(src.splitlines(), 1) if call in text)
    sites = migrate_source(src, str(tmp_path / "backend.py"), kernel=KERNEL).sites
    assert any(s.line == line and s.status is Status.MANUAL for s in sites), [(s.line, s.status) for s in sites]


_LAUNCHED_AP = ("import pkgutil\n\n\nclass Layer:\n    def __init__(self, backend, path):\n        self.backend = backend\n"
                "        self.launch = {lookup}\n\n    def run(self, q, kv, indices, scale):\n"
                "        return self.launch(self.backend, q, kv, indices, scale)\n")


@pytest.mark.parametrize("lookup, fixable", [
    # round AP (p2): a launcher handing the rows on, which no file calls by name, is no entry point where the
    # project fetches a callable by a name computed at run time (a config's `module:function`, an RPC's op name)
    ("pkgutil.resolve_name(path)", False),
    ("getattr(backend, path)", False),
    ("None", True)])
def test_round_ap_an_outer_caller_a_computed_lookup_may_fetch(tmp_path, lookup, fixable):
    launcher = "def launch_sparse(backend, q, kv, indices, scale):\n    return backend.forward(q, kv, indices, scale)\n"
    src = _STATIC_AO.replace("    def forward(self, q, kv, indices, scale):\n        metadata",
                             "    def forward(self, q, kv, indices, scale):\n        return self._attend(q, kv, indices, scale)\n\n"
                             "    def _attend(self, q, kv, indices, scale):\n        metadata")
    site = _files_site(tmp_path, {"launchers.py": launcher, "layer.py": _LAUNCHED_AP.format(lookup=lookup)}, src)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("value, fixable", [
    # round AP (p3): a validity mask named before `where` or `masked_fill` is the comparison it is bound to (the
    # filled -1s fall where the indices' own are); one narrowed in place after is not (round AJ, above)
    ("valid = topk_indices >= 0\n        topk_indices = torch.where(valid, topk_indices, -1)", True),
    ("invalid = topk_indices < 0\n        topk_indices = topk_indices.masked_fill(invalid, -1)", True),
    ("invalid = topk_indices < 0\n        invalid[:, :, 4:] = True\n        topk_indices = topk_indices.masked_fill(invalid, -1)",
     False)])
def test_round_ap_a_named_validity_mask(tmp_path, value, fixable):
    (site,) = migrate_source(_handed(value), str(tmp_path / "backend.py"), kernel=KERNEL).sites
    assert (site.status is Status.FIXABLE) is fixable, site.reason


_DATACLASS_STEP_AQ = ("from dataclasses import dataclass\n\nimport torch\n\n\n{decorator}\nclass Step:\n    q: torch.Tensor\n"
                      "    kv: torch.Tensor\n    topk: torch.Tensor\n    scale: float\n{extra}\n\n"
                      "def _launch(backend, step):\n    return backend.forward(step.q, step.kv, step.topk, step.scale)\n\n\n"
                      "def run(backend, q, kv, topk, scale):\n    return _launch(backend, Step({args}))\n")


@pytest.mark.parametrize("decorator, extra, args, fixable", [
    # round AQ (q2): a plain dataclass record made in the call's arguments stores each field as handed (its fields
    # are annotations, which bind nothing in the class body); its rows sorted there, or reordered in its
    # `__post_init__`, or a record whose `__init__` is not the dataclass's, are not
    ("@dataclass", "", "q, kv, topk, scale", True),
    ("@dataclass(frozen=True)", "", "q=q, kv=kv, topk=topk, scale=scale", True),
    ("@dataclass", "", "q.flip(0), kv, topk.flip(0), scale", False),
    ("@dataclass", "\n    def __post_init__(self):\n        self.topk = self.topk.flip(0)\n", "q, kv, topk, scale", False),
    ("@dataclass(init=False)", "\n    def __init__(self, q, kv, topk, scale):\n        self.q, self.kv = q, kv\n"
     "        self.topk, self.scale = topk.flip(0), scale\n", "q, kv, topk, scale", False)])
def test_round_aq_a_dataclass_record_made_in_the_calls_arguments(tmp_path, decorator, extra, args, fixable):
    (tmp_path / "layer.py").write_text(_DATACLASS_STEP_AQ.format(decorator=decorator, extra=extra, args=args))
    site = _site(tmp_path, HANDED_INDICES, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("make, fixable", [
    # round AQ (q4): the lengths grown on a view by a function grafted onto the batch's class, through an
    # instance's namespace, a bound `__setattr__`, a maker imported under a lower-case alias, an `nn.Module`'s
    # buffer table; the class's hooks set up outside a class statement; a store of the lengths as handed is fine
    ("v = copy.copy(b)\n    vars(v).update(seq_lens=b.seq_lens + n)\n    return v", False),
    ("v = copy.copy(b)\n    v.__setattr__('seq_lens', b.seq_lens + n)\n    return v", False),
    ("return step_view(seq_lens=b.seq_lens + n)", False),
    ("m = torch.nn.Module()\n    m.register_buffer('seq_lens', b.seq_lens + n)\n    return m", False),
    ("StepBatch.__getattribute__ = _grown\n    return b", False),
    ("Grown = type('Grown', (StepBatch,), {'__getattribute__': _grown})\n    return b", False),
    ("StepBatch.grow = _grow\n    return b", False),
    ("v = copy.copy(b)\n    vars(v).update(num_drafts=n)\n    return v", True)])
def test_round_aq_the_lengths_grown_by_machinery_outside_the_class(tmp_path, make, fixable):
    grow = "def _grow(self, n):\n    self.seq_lens = self.seq_lens + n\n\n\n" if "_grow" in make else ""
    spec = ("import copy\nfrom types import SimpleNamespace as step_view\n\nimport torch\n\nfrom batch import StepBatch"
            "\n\n\ndef _grown(self, name):\n    return object.__getattribute__(self, name)\n\n\n"
            + grow + "def verify_view(b, n):\n    " + make + "\n")
    files = {"batch.py": "from dataclasses import dataclass\n\nimport torch\n\n\n@dataclass\n"
                         "class StepBatch:\n    seq_lens: torch.Tensor\n", "spec.py": spec}
    site = _files_site(tmp_path, files, ANNOTATED_HOLDER.format(
        extend="DSAMetadata(dsa_cache_seqlens_int32=forward_batch.seq_lens.clamp(max=self.dsa_index_topk).to(torch.int32))"))
    assert (site.status is Status.FIXABLE) is fixable, site.reason


_PLANS_AQ = '''"""A fork's backend; metadata.dsa_cache_seqlens_int32 holds seqlens clipped to topk."""
from dataclasses import dataclass

import torch
from sgl_kernel.flash_mla import flash_mla_sparse_fwd
{imports}

@dataclass
class DSAMetadata:
    dsa_cache_seqlens_int32: torch.Tensor


class Backend{base}:
    def __init__(self, dsa_index_topk):
        self.dsa_index_topk = dsa_index_topk
        self.forward_metadata = None

    def _plan(self, forward_batch):
        self.forward_metadata = DSAMetadata(forward_batch.seq_lens.clamp(max=self.dsa_index_topk).to(torch.int32))

{planner}
    def forward(self, q, kv, indices, scale):
        metadata = self.forward_metadata
        return flash_mla_sparse_fwd(q=q, kv=kv, indices=indices, sm_scale=scale)[0]
{more}'''


@pytest.mark.parametrize("base, planner, more, fixable", [
    # round AQ (q1): the eager planner giving the holder through a helper a subclass of the module overrides, a base of another file reached by super(); a setter called on another object, a
    # `__call__` handed a record; the planner calling its own helper is fine
    ("", "    def init_forward_metadata(self, forward_batch):\n        self._plan(forward_batch)\n",
     "\n\nclass Draft(Backend):\n    def _plan(self, forward_batch):\n        pass\n", False),
    ("(PagesOnly)", "    def init_forward_metadata(self, forward_batch):\n        if forward_batch.mode == 'decode':\n"
     "            self._plan(forward_batch)\n        else:\n            super().init_forward_metadata(forward_batch)\n",
     "", False),
    ("", "    def init_forward_metadata(self, forward_batch):\n        self._plan(forward_batch)\n\n"
     "    def set_plan(self, md):\n        self.forward_metadata = md\n\n    def publish(self, target, forward_batch):\n"
     "        target.set_plan(DSAMetadata(forward_batch.seq_lens.clamp(max=self.dsa_index_topk).to(torch.int32)))\n",
     "", False),
    ("", "    def init_forward_metadata(self, forward_batch):\n        self._plan(forward_batch)\n\n"
     "    def __call__(self, md):\n        self.forward_metadata = md\n", "", False),
    ("", "    def init_forward_metadata(self, forward_batch):\n        self._plan(forward_batch)\n", "", True)])
def test_round_aq_the_planner_that_gives_the_holder(tmp_path, base, planner, more, fixable):
    src = _PLANS_AQ.format(imports="from pages import PagesOnly\n" if base else "", base=base, planner=planner,
                           more=more)
    pages = "class PagesOnly:\n    def init_forward_metadata(self, forward_batch):\n        self.pages = forward_batch.pages\n"
    site = _files_site(tmp_path, {"pages.py": pages}, src)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


_MADE_ONCE_AR = _STATIC_AI.format(init="self.forward_metadata = DSAMetadata(warm.seq_lens.clamp(max=self.dsa_index_topk)"
                                       ".to(torch.int32))", plan="self._refresh(forward_batch)")


@pytest.mark.parametrize("mode, fixable", [
    # round AR (r1): every per-step planner refreshes a record made once, a mode's own too (one moving the pages only
    # leaves an earlier step's lengths)
    ("    def init_forward_metadata_draft_extend(self, forward_batch):\n        self.pages = forward_batch.pages\n", False),
    ("    def init_forward_metadata_draft_extend(self, forward_batch):\n        self._refresh(forward_batch)\n", True)])
def test_round_ar_each_planner_refreshes_a_record_made_once(tmp_path, mode, fixable):
    src = _MADE_ONCE_AR.replace("    def forward(self", mode + "\n    def forward(self")
    site = _site(tmp_path, src, kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("files, fixable", [
    # round AR (r2): the walk up the callers and the backend's class family read every name the project binds it to:
    # a launcher re-exported under a third name, a subclass of a module's compatibility name, of a star re-export,
    # of a package's lazy (PEP 562) export, each sorting or swapping the rows
    ({"runner.py": "def step(backend, q, kv, topk, s):\n    return backend.forward(q, kv, topk, s)\n",
      "ops/__init__.py": "from runner import step as run_step\n", "api.py": "from ops import run_step as attend_step\n",
      "scheduler.py": "from api import attend_step\n\n\ndef serve(b, q, kv, topk, s):\n    order = topk[:, 0].argsort()\n"
                      "    return attend_step(b, q[order], kv, topk[order], s)\n"}, False),
    ({"runner.py": "def step(backend, q, kv, topk, s):\n    return backend.forward(q, kv, topk, s)\n",
      "ops/__init__.py": "from runner import step as run_step\n", "api.py": "from ops import run_step as attend_step\n",
      "scheduler.py": "from api import attend_step\n\n\ndef serve(b, q, kv, topk, s):\n"
                      "    return attend_step(b, q, kv, topk, s)\n"}, True),
    ({"tbo.py": "from backend import DSABackend\n\n\nclass TBO(DSABackend):\n    def forward_tbo(self, q, kv, topk, s):\n"
                "        return self.forward(q.flip(0), kv, topk.flip(0), s)\n"}, False),
    ({"attn/__init__.py": "from backend import *\n",
      "tbo.py": "from attn import Backend\n\n\nclass TBO(Backend):\n    def forward_tbo(self, q, kv, topk, s):\n"
                "        return self.forward(q.flip(0), kv, topk.flip(0), s)\n"}, False),
    ({"attn/__init__.py": "def __getattr__(name):\n    from backend import Backend\n    return Backend\n",
      "tbo.py": "from attn import DSABackend\n\n\nclass TBO(DSABackend):\n    def forward_tbo(self, q, kv, topk, s):\n"
                "        return self.forward(q.flip(0), kv, topk.flip(0), s)\n"}, False)])
def test_round_ar_every_name_the_project_binds_the_backend_to(tmp_path, files, fixable):
    site = _files_site(tmp_path, files, HANDED_INDICES + "\n\nDSABackend = Backend\n")
    assert (site.status is Status.FIXABLE) is fixable, site.reason


_HEAD_AR = "import contextlib\nimport enum\nimport functools\nfrom dataclasses import dataclass\n\n" \
           "from sgl_kernel.flash_mla import flash_mla_sparse_fwd\n\n\n"


@pytest.mark.parametrize("held, call", [
    # round AR (r3): each call where a kernel value lands is a site of its own, beside the value's: an unpacking, a
    # generator, a context manager, a lambda or cached getter, a property, an Enum member, a dataclass default, an
    # op class's `__call__`, `functools.wraps`' `__wrapped__`, the kernel's own `__call__`
    ("_SPARSE, *_REST = (flash_mla_sparse_fwd, None)\n", "_SPARSE(q, kv, i, s)"),
    ("def _impls():\n    yield flash_mla_sparse_fwd\n", "next(_impls())(q, kv, i, s)"),
    ("@contextlib.contextmanager\ndef _kernel():\n    yield flash_mla_sparse_fwd\n", None),
    ("_get = lambda: flash_mla_sparse_fwd\n", "_get()(q, kv, i, s)"),
    ("@functools.cache\ndef _get():\n    return flash_mla_sparse_fwd\n", "_get()(q, kv, i, s)"),
    ("class Impl(enum.Enum):\n    SPARSE = (flash_mla_sparse_fwd,)\n", "Impl.SPARSE.value[0](q, kv, i, s)"),
    ("@dataclass\nclass Ops:\n    sparse: object = flash_mla_sparse_fwd\n", "Ops().sparse(q, kv, i, s)"),
    ("class Op:\n    __call__ = staticmethod(flash_mla_sparse_fwd)\n", "Op()(q, kv, i, s)"),
    ("@functools.wraps(flash_mla_sparse_fwd)\ndef _timed(*a, **k):\n    return None\n", "_timed.__wrapped__(q, kv, i, s)"),
    ("_LAUNCH = flash_mla_sparse_fwd.__call__\n", "_LAUNCH(q, kv, i, s)"),
    ("", "flash_mla_sparse_fwd.__call__(q, kv, i, s)")])
def test_round_ar_each_call_where_the_kernel_lands_is_a_site(tmp_path, held, call):
    body = "    with _kernel() as fwd:\n        return fwd(q, kv, i, s)\n" if call is None else f"    return {call}\n"
    src = _HEAD_AR + held + "\n\ndef run(q, kv, i, s):\n" + body
    line = next(n for n, text in enumerate(src.splitlines(), 1) if "return" in text and "(q, kv, i, s)" in text)
    sites = migrate_source(src, str(tmp_path / "m.py"), kernel=KERNEL).sites
    assert any(s.line == line and s.status is Status.MANUAL for s in sites), sites
    assert all(s.status is Status.MANUAL for s in sites), sites


@pytest.mark.parametrize("sweep, fixable", [
    ("", True),
    ("        any(_ok(self.sparse_fwd) for self.sparse_fwd in (_ref, flash_mla_sparse_fwd))\n", False),
    ("        self.times = [_ok(self.sparse_fwd) for self.sparse_fwd in (flash_mla_sparse_fwd, _ref)]\n", False)])
def test_round_ar_a_holder_a_comprehension_binds_is_not_proven(tmp_path, sweep, fixable):
    """Round AR (r3): `any(ok(self.fwd) for self.fwd in impls)` leaves the last candidate in the holder."""
    src = HANDED_INDICES.replace("        self.forward_metadata = metadata\n", "        self.forward_metadata = metadata\n"
                                 "        self.sparse_fwd = flash_mla_sparse_fwd\n" + sweep).replace(
        "return flash_mla_sparse_fwd(", "return self.sparse_fwd(") + (
        "\n\ndef _ref(q, kv, indices, sm_scale):\n    return q\n\n\ndef _ok(fn):\n    return True\n")
    (tmp_path / "backend.py").write_text(src)
    sites = migrate_source(src, str(tmp_path / "backend.py"), kernel=KERNEL).sites
    assert sites and all((s.status is Status.FIXABLE) is fixable for s in sites), sites


_OPERAND_AR = _CONFIG_BACKEND.replace(
    "from dataclasses import dataclass\n", "import types\nfrom dataclasses import dataclass\nfrom typing import TYPE_CHECKING\n"
).replace("from sgl_kernel.flash_mla import flash_mla_sparse_fwd\n", "from sgl_kernel.flash_mla import flash_mla_sparse_fwd\n\n"
          "if TYPE_CHECKING:\n    from sglang.srt.model_executor.forward_batch_info import ForwardBatch\n").replace(
    "def init_forward_metadata(self, forward_batch):", 'def init_forward_metadata(self, forward_batch: "ForwardBatch"):').replace(
    "    def forward(self", "{more}\n    def forward(self")


@pytest.mark.parametrize("more, files, fixable", [
    # round AQ's q4, closed in round AR: the backend's own method planning a view it makes (its code, not a
    # driver's), another file handing the annotated planner a view it constructs
    ("    def init_forward_metadata_verify(self, forward_batch, n):\n"
     "        self.init_forward_metadata(self._with_drafts(forward_batch, n))\n\n    @staticmethod\n"
     "    def _with_drafts(forward_batch, n):\n        return types.SimpleNamespace(seq_lens=forward_batch.seq_lens + n)\n",
     {}, False),
    ("", {"fork_verify.py": "import types\n\n\ndef plan_verify(backend, batch, n):\n"
                            "    view = types.SimpleNamespace(seq_lens=batch.seq_lens + n)\n"
                            "    backend.init_forward_metadata(view)\n"}, False),
    ("    def init_forward_metadata_verify(self, forward_batch, n):\n        self.init_forward_metadata(forward_batch)\n",
     {"runner.py": "def run(backend, forward_batch):\n    backend.init_forward_metadata(forward_batch)\n"}, True)])
def test_round_ar_the_planners_batch_made_by_the_fork(tmp_path, more, files, fixable):
    site = _files_site(tmp_path, files, _OPERAND_AR.replace("{more}", more))
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("edit, fixable", [
    # round AT (t1): a planner a plain call does not run (a coroutine, a generator) refreshes nothing; a nested
    # helper's `return` is no exit of the planner
    (("    def init_forward_metadata(self", "    async def init_forward_metadata(self"), False),
    (("        self._refresh(forward_batch)\n", "        self._refresh(forward_batch)\n        yield\n"), False),
    (("        self._refresh(forward_batch)\n", "        def clip(x):\n            return x\n\n"
                                              "        self._refresh(forward_batch)\n"), True)])
def test_round_at_a_planner_runs_its_body_when_called(tmp_path, edit, fixable):
    site = _site(tmp_path, _MADE_ONCE_AR.replace(*edit), kernel=KERNEL)
    assert (site.status is Status.FIXABLE) is fixable, site.reason
