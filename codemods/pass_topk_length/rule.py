"""The pass-topk-length rule's hooks: its driver, its examples and its class (the package's docstring says what it does)."""
from __future__ import annotations

from dataclasses import replace
from typing import Dict, List, Optional, Sequence, Set, Tuple

import libcst as cst

from topk_migrate.bump.bind import OPPORTUNITY
from topk_migrate.bump.context import Context, new_param
from topk_migrate.cst.cstutil import rewritten_code, spliced_code
from topk_migrate.cst.resolve import collect
from topk_migrate.cst.scopecheck import Tree
from topk_migrate.model import Finding, Site, Status
from topk_migrate.rule_context import RuleContext
from topk_migrate.rules import Rule, RuleExample

from . import INFO
from .analysis import _Analysis
from .derived import BOUND_NAME, derived_value
from .group import GUARD_COMMENT, Group, _direct_reason, _inline_value, fits
from .quick import ENTRY_POINTS, PARAM
from .rewrite import _optional_annotation, _Rewrite, validate_rewrite
from .value_use import _value_uses
from .values import is_marker, value_sites

# -- the driver --------------------------------------------------------------------------
_STUB = cst.IndentedBlock(body=[cst.SimpleStatementLine([cst.Expr(cst.Ellipsis())])])


def _touched(tree: Tree, groups: Sequence[Group]) -> Set[int]:
    """ids of the defs that hold a call the rewrite edits (and of the defs around them)."""
    out: Set[int] = set()
    for g in groups:
        for node in [c.node for c in g.calls] + [k.node for k, _, _ in g.callers]:
            out.update(id(a) for a in tree.ancestors(node) if isinstance(a, cst.FunctionDef))
        if g.helper is not None:
            out.add(id(g.helper.node))
    return out


def _reduced(module: cst.Module, keep: Set[int], tree: Optional[Tree] = None) -> cst.Module:
    """The module with the body of every def outside `keep` replaced by `...`.

    New bindings only appear inside kept defs, so every read they can change is still
    there; module- and class-level code is kept whole. Kept nodes stay the same objects.
    With `tree` (the module's), such a def whose decorators, parameters and annotations
    bind nothing (no `:=`) and test nothing for None (what the validation reads of the whole
    module) loses them too: `def name(): ...`.
    """
    def stub(st: cst.FunctionDef) -> cst.FunctionDef:
        if tree is not None and not tree.find((cst.NamedExpr, cst.Comparison, cst.UnaryOperation),
                                              lambda n: not tree.inside(n, st.body), within=st):
            return cst.FunctionDef(name=st.name, params=cst.Parameters(), body=_STUB, asynchronous=st.asynchronous)
        return st.with_changes(body=_STUB)

    def shrink(body):
        out = []
        for st in body:
            if isinstance(st, cst.FunctionDef) and id(st) not in keep:
                st = stub(st)
            elif isinstance(st, cst.ClassDef) and isinstance(st.body, cst.IndentedBlock):
                inner = shrink(st.body.body)
                if any(a is not b for a, b in zip(inner, st.body.body)):
                    st = st.with_changes(body=st.body.with_changes(body=inner))
            out.append(st)
        return out

    return module.with_changes(body=shrink(module.body))


def _inline_shared_functions(groups: List[Group], sites: List[Site]) -> None:
    """Two guard statements in one function would both bind topk_length there, and validation refuses
    each (every read sees the other binding), after which the loop below guards them inline. Plan them
    inline from the start: the same outcome, one validation of the module fewer (validation still
    checks the plan)."""
    by_function: Dict[int, List[Group]] = {}
    for g in groups:
        if g.kind == "direct" and not g.inline:
            by_function.setdefault(id(g.calls[0].function), []).append(g)
    for shared in by_function.values():
        if len(shared) > 1:
            for g in shared:
                _guard_inline(g, sites)


def _guard_inline(g: Group, sites: List[Site]) -> None:
    """Put g's guard into the call itself, where q is read, and say so in its sites' reasons."""
    g.inline = True
    for i in g.sites:
        reason = _direct_reason(g) if g.kind == "direct" else sites[i].reason + " (guarded inline)"
        sites[i] = replace(sites[i], reason=reason)


def _derived_instead(analysis: _Analysis, g: Group, sites: List[Site]) -> List[Group]:
    """Each of g's kernel calls, whose rewrite validation refused, as analysis.derived_or classifies it now."""
    out = []
    for c, i in zip(g.calls, g.sites):
        before = len(analysis.groups)
        sites[i] = analysis.derived_or(c, sites[i])
        for d in analysis.groups[before:]:
            d.sites.append(i)
            out.append(d)
    return out


def _scopes_unasked(tree: Tree) -> bool:
    """No scope fact of the tree was asked yet: the tree is the file's, shared by every rule handed its text
    (rule_context), and bodies can be left out of the scope analysis only before it runs."""
    return "scope_of" not in vars(tree)


def _migrate(ctx: RuleContext, partial: bool) -> Tuple[str, List[Site]]:
    """Classify every kernel call of ctx's module and return (rewritten source, sites)."""
    module, source, path, tree = ctx.module, ctx.source, ctx.path, ctx.tree
    facts = collect(module, tree.position, tree.numberer())
    analysis = _Analysis(facts, tree, source, path, ctx.gate, ctx.options)
    if partial and _scopes_unasked(tree):  # every body the analysis does not ask of is never walked: most of them
        tree.skip_bodies([f.node for f in facts.functions])
    calls = [c for c in analysis.kernel_calls() if not is_marker(c.callee)]
    sites = []
    for c in calls:
        before = len(analysis.groups)
        sites.append(analysis.classify(c))
        for g in analysis.groups[before:]:
            g.sites.append(len(sites) - 1)
        joined = analysis.joined.get(id(c.node))  # a second kernel call joined a helper's group
        if joined is not None and len(sites) - 1 not in joined.sites:
            joined.sites.append(len(sites) - 1)
    groups = list(analysis.groups)
    _inline_shared_functions(groups, sites)
    annotation, need_import = _optional_annotation(module, facts)
    torch = analysis.torch
    if groups:  # validate on the module cut down to the functions the rewrite touches (faster)
        small = _reduced(module, _touched(tree, groups), tree)
        small_tree = Tree(small, positions=False)
        small_tree.position = tree.position  # kept nodes are the original objects: their lines hold
    while groups:
        rewrite = _Rewrite(groups, annotation, small_tree, torch)
        validated = small.visit(rewrite)
        failures = validate_rewrite(small_tree, validated, rewrite.record, groups, source) or {}
        if not failures:
            break
        for g in [g for g in groups if id(g) in failures]:
            if not g.inline:
                _guard_inline(g, sites)
                continue
            groups.remove(g)
            for i in g.sites:
                sites[i] = replace(sites[i], status=Status.MANUAL, reason=failures[id(g)], metadata=None)
            if g.kind != "derived":  # the reference fix is not proven after all: the derived lengths, if asked for
                groups += _derived_instead(analysis, g, sites)
    taken = {(s.line, s.column) for s in sites}  # (a call where a value lands may be one the rule reports)
    sites += [s for s in value_sites(tree, facts, _value_uses(tree, facts, path, analysis.through_alias), path,
                                     analysis.through_alias, frozenset(analysis.sealed)) if (s.line, s.column) not in taken]
    sites.sort(key=lambda s: (s.line, s.column))
    if not groups:
        return source, sites
    if not (need_import and any(g.add_param for g in groups)):
        # the statements validated are the module's own, rewritten: spliced into the source, they are the code
        code = spliced_code(small, validated, source, original=lambda node: node in tree.parent,
                            known=getattr(tree.position, "text_of", lambda node: None),
                            place=getattr(tree.position, "place", lambda node, text: None))
        if code is not None:
            return code, sites
    new = module.visit(_Rewrite(groups, annotation, tree, torch))
    if need_import and any(g.add_param for g in groups):
        from libcst.codemod import CodemodContext  # noqa: PLC0415 - on demand: libcst.codemod (~160 ms), only to add an import
        from libcst.codemod.visitors import AddImportsVisitor  # noqa: PLC0415 - on demand: libcst.codemod (~160 ms), only to add an import

        ctx = CodemodContext()
        AddImportsVisitor.add_needed_import(ctx, "typing", "Optional")
        new = AddImportsVisitor(ctx).transform_module(new)
    return rewritten_code(module, new, source, getattr(tree.position, "text_of", lambda node: None),
                          getattr(tree.position, "place", lambda node, text: None)), sites


# -- examples: the rule's documentation and its tests (tests/test_rule_examples.py) -----------
def _example(code: str, status: Optional[Status], reason: str = "", after: Optional[str] = None,
             kernel: Optional[str] = "sglang-kernel==0.4.6", lengths: str = "reference") -> RuleExample:
    """`code` must classify as `status` (reason containing `reason`); if `after` is set, apply gives it."""
    return RuleExample(code, status.value if status is not None else None, reason, after, kernel, lengths=lengths)


_HELPER_BEFORE = '''\
from dataclasses import dataclass
from typing import Optional

import torch


class Backend:
    def __init__(self):
        self.forward_metadata: Metadata  # declared as SGLang does: the metadata is read plainly

    def forward_decode(self, q, kv, layer, topk_indices):
        metadata = self.forward_metadata
        return self._forward_flashmla_sparse(
            q_all=q,
            kv_cache=kv,
            page_table_1=topk_indices,
            sm_scale=layer.scaling,
        )

    def _forward_flashmla_sparse(
        self,
        q_all: torch.Tensor,
        kv_cache: torch.Tensor,
        page_table_1: torch.Tensor,
        sm_scale: float,
    ) -> torch.Tensor:
        from sgl_kernel.flash_mla import flash_mla_sparse_fwd

        indices = page_table_1.unsqueeze(1)

        o, _, _ = flash_mla_sparse_fwd(
            q=q_all,
            kv=kv_cache,
            indices=indices,
            sm_scale=sm_scale,
        )
        return o


@dataclass
class Metadata:
    dsa_cache_seqlens_int32: torch.Tensor  # seqlens clipped to topk: a required field of every instance
'''

_KERNEL_IMPORT = "from sgl_kernel.flash_mla import flash_mla_sparse_fwd\n"
_GETATTR = 'getattr(metadata, "dsa_cache_seqlens_int32", None)'  # nothing here declares what `metadata` holds
# where nothing declares what `metadata` holds, the guard checks all the kernel needs (fits)
_INLINE = _inline_value("metadata.dsa_cache_seqlens_int32", "getattr", "{q}", "torch")


def _checked(q: str = "q", torch: str = "torch") -> str:
    """The statement guard's test for metadata read with getattr."""
    return f"topk_length is not None and not {fits('topk_length', q, torch)}"


def _fn(body: str, head: str = "", imports: str = _KERNEL_IMPORT) -> str:
    """A small module: the kernel import, `head`, then `body`; it uses the DSA metadata field."""
    return f"import torch\n{imports}{head}\n{body}# metadata.dsa_cache_seqlens_int32\n"


def _helper(kernel_call: str, head: str = "", params: str = "q", call: str = "q", decorator: str = "") -> str:
    """SGLang's shape in miniature: forward() holds the metadata, _sparse() calls the kernel."""
    return (f"from sgl_kernel.flash_mla import flash_mla_sparse_fwd\n{head}\n\nclass Backend:\n"
            f"    def forward(self, q, idx):\n        metadata = self.forward_metadata\n        return self._sparse({call}, idx)\n\n"
            f"    {decorator}def _sparse(self, {params}, idx):\n        {kernel_call}\n# metadata.dsa_cache_seqlens_int32\n")


def _helper_after(before: str, annotation: str, torch: Optional[str] = None) -> str:
    return before.replace("return self._sparse(q, idx)", f"return self._sparse(q, idx, topk_length={_GETATTR})").replace(
        "def _sparse(self, q, idx):", f"def _sparse(self, q, idx, topk_length: {annotation} = None):").replace(
        "        return flash_mla_sparse_fwd(q, self.kv, idx, 1.0)",
        f"        {GUARD_COMMENT}\n        if {_checked('q', torch)}:\n"
        "            topk_length = None\n\n        return flash_mla_sparse_fwd(q, self.kv, idx, 1.0, topk_length=topk_length)")


_PADDED = _fn("""\
class Backend:
    def forward(self, q, q_rope, layer, idx):
        metadata = self.forward_metadata
        q_nope = q.view(-1, layer.heads, 512)
        q_all = torch.cat([q_nope, q_rope], dim=-1)
        return self._sparse(q_all, idx)

    def _sparse(self, q_all, idx):
        num_tokens, num_heads, head_dim = q_all.shape
        q_input = q_all.new_zeros((num_tokens, 64, head_dim))
        q_input[:, :num_heads, :] = q_all
        o, _, _ = flash_mla_sparse_fwd(q_input, self.kv, idx, 1.0)
        return o[:, :num_heads]
""")
_TYPE_CHECKING = ("from typing import TYPE_CHECKING\n\nfrom sgl_kernel.flash_mla import flash_mla_sparse_fwd\n\n"
                  "if TYPE_CHECKING:\n    import torch\n    from typing import Optional\n\n\n"
                  + _helper("return flash_mla_sparse_fwd(q, self.kv, idx, 1.0)").split("\n\n", 1)[1])
_LAZY = "from __future__ import annotations\n\n" + _TYPE_CHECKING


VALID = [
    _example(_HELPER_BEFORE.replace("sm_scale=sm_scale,\n        )", "sm_scale=sm_scale,\n            topk_length=lens,\n        )"),
            Status.COMPLIANT, "passes topk_length"),
    _example("from sgl_kernel.flash_mla import flash_mla_sparse_fwd\nflash_mla_sparse_fwd(q, kv, idx, s, topk_length=None)\n",
            Status.OPT_OUT, "topk_length=None"),
    _example("import sgl_kernel\nsgl_kernel.flash_mla_sparse_fwd(q, kv, idx, s, 512, sink, lens)\n",
            Status.COMPLIANT, "positionally"),
    _example("from sgl_kernel.flash_mla import flash_mla_sparse_fwd\n"
            "o = flash_mla_sparse_fwd(q, kv, idx, s)  # topk-migrate: ignore -- indices have interior -1 gaps\n",
            Status.OPT_OUT, "interior -1 gaps"),
    _example("from sgl_kernel.flash_mla import flash_mla_with_kvcache, sparse_mla_q8kv8_prefill_fwd\n"
            "flash_mla_with_kvcache(q, kv)\nsparse_mla_q8kv8_prefill_fwd(q, kv, idx)\n"
            "triton_sparse_mla_fwd(q, kv, idx)\nsparse_mla_prefill(q, kv, idx)\n", None),
    _example("def flash_mla_sparse_fwd(q, kv, indices, sm_scale, d_v=512, attn_sink=None, topk_length=None):\n"
            "    return q\n", None),
    _example("from sgl_kernel.flash_mla import flash_mla_sparse_fwd\n"
            "def f(metadata, q, kv, idx, **kw):\n    return flash_mla_sparse_fwd(q, kv, idx, 1.0, **kw)\n"
            "class M:\n    dsa_cache_seqlens_int32 = None\n",
            Status.MANUAL, "**kwargs may already carry"),
    _example("from sgl_kernel.flash_mla import flash_mla_sparse_fwd\n"
            "def f(q, kv, idx, seq_lens):\n    return flash_mla_sparse_fwd(q, kv, idx, 1.0)\n",
            Status.MANUAL, "no clipped-seqlen metadata"),
    _example("import torch\ntorch.ops.sgl_kernel.sparse_prefill_fwd.default(q, kv, idx, s, 512)\n",
            Status.MANUAL, "op-level call"),
    _example(_HELPER_BEFORE, Status.MANUAL, "kernel too old", kernel="sglang-kernel==0.4.2.post2"),
    _example(_HELPER_BEFORE, Status.MANUAL, "kernel too old", kernel="sgl-kernel==0.3.21"),
    _example(_HELPER_BEFORE, Status.MANUAL, "kernel capability unknown (pass --kernel)", kernel=None),
    _example("from sgl_kernel.flash_mla import flash_mla_sparse_fwd\n"
            "def f(metadata, x, kv, idx):\n    return flash_mla_sparse_fwd(q=pad(x), kv=kv, indices=idx, sm_scale=1.0)\n"
            "# metadata.dsa_cache_seqlens_int32\n",
            Status.MANUAL, "q is not a plain name"),

    # -- issue 8, class 1 (placement): q is a lambda's parameter, the metadata the enclosing function's.
    _example(_fn("def attend(q, kv, idx, metadata):\n"
                "    fwd = lambda q: flash_mla_sparse_fwd(q, kv, idx, 1.0)\n"
                "    return fwd(q)\n"),
            Status.MANUAL, "`q` is a lambda parameter"),
    # class 2 (metadata availability): bound on one path only; rebound before the call.
    _example(_fn("def attend(self, q, kv, idx, eager):\n    if not eager:\n        metadata = self.forward_metadata\n"
                "    return flash_mla_sparse_fwd(q, kv, idx, 1.0)\n"),
            Status.MANUAL, "`metadata` is bound at line 6 only on some paths to the call"),
    _example(_fn("def attend(self, q, kv, idx):\n    metadata = self.forward_metadata\n"
                "    metadata = metadata.page_table_1\n    return flash_mla_sparse_fwd(q, kv, idx, 1.0)\n"),
            Status.MANUAL, "`metadata` is bound 2 times in its function (lines 5, 6)"),
    # class 3 (names): the helper reads a module-level `topk_length`; the new parameter would capture it.
    _example(_helper("assert idx.shape[-1] == topk_length\n        return flash_mla_sparse_fwd(q, self.kv, idx, 1.0)",
                    head="topk_length = 2048  # the indexer's width\n"),
            Status.MANUAL, "rewrite would change what `topk_length` means at line 11"),
    _example(_helper("assert idx.shape[-1] == topk_length\n        return flash_mla_sparse_fwd(q, self.kv, idx, 1.0)",
                    params="q, topk_length", call="q, 2048"),
            Status.MANUAL, "already has a parameter `topk_length` without a None default"),
    # class 4 (callee identity): rebound under a flag; a fallback to another kernel module; a star
    # import after the kernel; a decorator; two definitions; a method with the kernel's name.
    _example(_fn("def attend(q, kv, idx, metadata):\n    return flash_mla_sparse_fwd(q, kv, idx, 1.0)\n",
                head="from legacy_ops import sparse_fwd_v1\n\nif USE_LEGACY:\n    flash_mla_sparse_fwd = sparse_fwd_v1\n"),
            Status.MANUAL, "`flash_mla_sparse_fwd` may not be the kernel at run time: it is bound at line 6"),
    _example(_fn("def attend(q, kv, idx, metadata):\n    return flash_mla_sparse_fwd(q, kv, idx, 1.0)\n",
                imports="try:\n    from sgl_kernel.flash_mla import flash_mla_sparse_fwd\n"
                        "except ImportError:\n    from flash_mla import flash_mla_sparse_fwd\n"),
            Status.MANUAL, "`flash_mla_sparse_fwd` may also be flash_mla.flash_mla_sparse_fwd (imported at line 5)"),
    _example(_fn("def attend(q, kv, idx, metadata):\n    return flash_mla_sparse_fwd(q, kv, idx, 1.0)\n",
                head="from legacy_ops import *\n"),
            Status.MANUAL, "`from legacy_ops import *` at line 3 may rebind `flash_mla_sparse_fwd`"),
    _example(_helper("return flash_mla_sparse_fwd(q, self.kv, idx, 1.0)", decorator="@traced(\"sparse\")\n    "),
            Status.MANUAL, "is decorated with `@traced`"),
    _example(_fn("if FAST:\n    def sparse(q, kv, idx):\n        return flash_mla_sparse_fwd(q, kv, idx, 1.0)\n"
                "else:\n    def sparse(q, kv, idx):\n        return slow_sparse(q, kv, idx)\n\n"
                "def forward(metadata, q, kv, idx):\n    return sparse(q, kv, idx)\n"),
            Status.MANUAL, "sparse is bound 2 times (lines 5, 8)"),
    _example(_fn("class B:\n    def flash_mla_sparse_fwd(self, q, kv, idx, s):\n        return legacy(q, kv, idx, s)\n\n"
                "    def attend(self, q, kv, idx, metadata):\n        return self.flash_mla_sparse_fwd(q, kv, idx, 1.0)\n"),
            Status.MANUAL, "`self.flash_mla_sparse_fwd` is a method (B.flash_mla_sparse_fwd)"),
    # class 5 (rows): q reordered at the call, in a caller's argument, or concatenated along rows.
    _example(_fn("def attend(q, kv, idx, metadata, order):\n    q = q[order]  # sorted by length\n"
                "    return flash_mla_sparse_fwd(q, kv, idx, 1.0)\n"),
            Status.MANUAL, "`q[order]` indexes dim 0"),
    _example(_helper("return flash_mla_sparse_fwd(q, self.kv, idx, 1.0)", call="q.index_select(0, self.perm)"),
            Status.MANUAL, "at the caller on line 7: q's rows may not be the metadata's rows: `q.index_select(0, self.perm)`"),
    _example(_fn("def attend(q_nope, q_rope, kv, idx, metadata):\n    q = torch.cat([q_nope, q_rope])\n"
                "    return flash_mla_sparse_fwd(q, kv, idx, 1.0)\n"),
            Status.MANUAL, "`torch.cat([q_nope, q_rope])` works on dim 0 (the rows)"),
    # class 8 (discovery): the kernel used as a value is reported, never skipped.
    _example("import functools\nfrom sgl_kernel.flash_mla import flash_mla_sparse_fwd\n\n"
            "register(\"sparse\", functools.partial(flash_mla_sparse_fwd, d_v=512))\n",
            Status.MANUAL, "the kernel is wrapped by functools.partial"),
    # an alias (a partial presetting keywords) is the kernel: calls through it here are checked, other modules' not
    _example("import functools\nfrom sgl_kernel.flash_mla import flash_mla_sparse_fwd\n\n"
            "sparse = functools.partial(flash_mla_sparse_fwd, d_v=512)\n",
            Status.MANUAL, "a name other code may call it through: calls through it elsewhere cannot be checked"),
    _example("from sgl_kernel import flash_mla\n\nfwd = getattr(flash_mla, \"flash_mla_sparse_fwd\")\n",
            Status.MANUAL, "the kernel is looked up by name with getattr"),
    _example("from sgl_kernel import flash_mla\n\n\nclass B:\n    def __init__(self):\n"
            "        self.kernel = flash_mla.flash_mla_sparse_fwd\n",
            Status.MANUAL, "the kernel is stored in `self.kernel`"),
]

INVALID = [
    # The reference shape: the kernel sits in a helper whose callers hold the metadata.
    _example(_HELPER_BEFORE, Status.FIXABLE, "gains topk_length", after=_HELPER_BEFORE.replace(
        "            sm_scale=layer.scaling,\n        )",
        "            sm_scale=layer.scaling,\n            topk_length=metadata.dsa_cache_seqlens_int32,\n        )",
    ).replace(
        "        sm_scale: float,\n    ) -> torch.Tensor:",
        "        sm_scale: float,\n        topk_length: Optional[torch.Tensor] = None,\n    ) -> torch.Tensor:",
    ).replace(
        "        indices = page_table_1.unsqueeze(1)\n\n",
        "        indices = page_table_1.unsqueeze(1)\n\n"
        f"        {GUARD_COMMENT}\n"
        f"        if {_checked('q_all')}:\n"
        "            topk_length = None\n\n",
    ).replace(
        "            sm_scale=sm_scale,\n        )",
        "            sm_scale=sm_scale,\n            topk_length=topk_length,\n        )",
    )),
    # Metadata in scope at the call itself, kernel imported under an alias (older NSA names).
    _example(
        "from sgl_kernel.flash_mla import flash_mla_sparse_fwd as sparse_fwd\n\n"
        "def attend(q, kv, idx, metadata):\n    return sparse_fwd(q, kv, idx, 0.1)\n\n"
        "# metadata.nsa_cache_seqlens_int32: clipped to topk\n",
        Status.FIXABLE, "passes metadata.nsa_cache_seqlens_int32",
        after="from sgl_kernel.flash_mla import flash_mla_sparse_fwd as sparse_fwd\n\n"
        f"def attend(q, kv, idx, metadata):\n    {GUARD_COMMENT}\n"
        "    topk_length = getattr(metadata, \"nsa_cache_seqlens_int32\", None)\n"
        "    if topk_length is not None and not (isinstance(topk_length, type(q)) and str(topk_length.dtype) == "
        "\"torch.int32\" and topk_length.dim() == 1 and topk_length.shape[0] == q.shape[0] and "
        "topk_length.device == q.device):\n        topk_length = None\n\n"
        "    return sparse_fwd(q, kv, idx, 0.1, topk_length=topk_length)\n\n"
        "# metadata.nsa_cache_seqlens_int32: clipped to topk\n",
    ),
    # A one-line suite leaves no statement to guard before (it would run even when the branch
    # does not): the guard goes inline.
    _example(
        "from sgl_kernel.flash_mla import flash_mla_sparse_fwd\n\n"
        "def attend(q, kv, idx, metadata):\n    if metadata is not None: return flash_mla_sparse_fwd(q, kv, idx, 0.1)\n\n"
        "# metadata.dsa_cache_seqlens_int32\n",
        Status.FIXABLE, "guarded inline",
        after="from sgl_kernel.flash_mla import flash_mla_sparse_fwd\n\n"
        "def attend(q, kv, idx, metadata):\n    if metadata is not None: return flash_mla_sparse_fwd(q, kv, idx, 0.1, "
        f"topk_length={_inline_value('metadata.dsa_cache_seqlens_int32', 'getattr', 'q')})\n\n"
        "# metadata.dsa_cache_seqlens_int32\n",
    ),
    # Module import alias, try/except fallback to None, and Optional not yet imported.
    _example(
        "import torch\ntry:\n    import sgl_kernel.flash_mla as fm\nexcept ImportError:\n    fm = None\n\n\n"
        "def run(metadata, q, kv, idx):\n    return helper(q, kv, idx)\n\n\n"
        "def helper(q, kv, idx):\n    out = fm.flash_mla_sparse_fwd(q, kv, idx, 1.0)  # the kernel\n    return out\n"
        "# dsa_cache_seqlens_int32\n",
        Status.FIXABLE, "helper gains topk_length",
        after="import torch\nfrom typing import Optional\n\ntry:\n    import sgl_kernel.flash_mla as fm\nexcept ImportError:\n    fm = None\n\n\n"
        "def run(metadata, q, kv, idx):\n    return helper(q, kv, idx, topk_length=getattr(metadata, \"dsa_cache_seqlens_int32\", None))\n\n\n"
        "def helper(q, kv, idx, topk_length: Optional[torch.Tensor] = None):\n"
        f"    {GUARD_COMMENT}\n"
        f"    if {_checked()}:\n        topk_length = None\n\n"
        "    out = fm.flash_mla_sparse_fwd(q, kv, idx, 1.0, topk_length=topk_length)  # the kernel\n    return out\n"
        "# dsa_cache_seqlens_int32\n",
    ),

    # -- issue 8, class 1 (placement): a guard before the statement would not see the `q` a lambda's
    # call reads later, nor a `q` rebound earlier on the same line; both guard inline, at the call.
    _example(_fn("def attend(q, kv, idx, metadata):\n    run = lambda: flash_mla_sparse_fwd(q, kv, idx, 1.0)\n    return run()\n"),
            Status.FIXABLE, "guarded inline",
            after=_fn("def attend(q, kv, idx, metadata):\n    run = lambda: flash_mla_sparse_fwd(q, kv, idx, 1.0, "
                      f"topk_length={_INLINE.format(q='q')})\n    return run()\n")),
    _example(_fn("def attend(x, kv, idx, metadata):\n    q = x.view(x.shape[0], -1, 576); o = flash_mla_sparse_fwd(q, kv, idx, 1.0)\n"
                "    return o\n"),
            Status.FIXABLE, "guarded inline",
            after=_fn("def attend(x, kv, idx, metadata):\n    q = x.view(x.shape[0], -1, 576); o = flash_mla_sparse_fwd(q, kv, idx, 1.0, "
                      f"topk_length={_INLINE.format(q='q')})\n    return o\n")),
    # class 2: a None default: the inserted binding handles None.
    _example(_fn("def attend(q, kv, idx, metadata=None):\n    return flash_mla_sparse_fwd(q, kv, idx, 1.0)\n"),
            Status.FIXABLE, "guarded: int32, one per row of q",
            after=_fn(f"def attend(q, kv, idx, metadata=None):\n    {GUARD_COMMENT}\n"
                      f"    topk_length = {_GETATTR}\n"
                      f"    if {_checked()}:\n        topk_length = None\n\n"
                      "    return flash_mla_sparse_fwd(q, kv, idx, 1.0, topk_length=topk_length)\n")),
    # class 3: `topk_length` is already a local with another meaning: the guard goes inline.
    _example(_fn("def attend(q, kv, idx, metadata):\n    topk_length = idx.shape[-1]\n"
                "    o, _, _ = flash_mla_sparse_fwd(q, kv, idx, 1.0)\n    return o, topk_length\n"),
            Status.FIXABLE, "guarded inline",
            after=_fn("def attend(q, kv, idx, metadata):\n    topk_length = idx.shape[-1]\n"
                      "    o, _, _ = flash_mla_sparse_fwd(q, kv, idx, 1.0, "
                      f"topk_length={_INLINE.format(q='q')})\n    return o, topk_length\n")),
    # class 5 (rows): head padding by new_zeros + slice assignment, view and cat along the last dim
    # keep the rows: SGLang's own shape stays fixable. Class 7: torch imported unconditionally.
    _example(_PADDED, Status.FIXABLE, "gains topk_length", after=_PADDED.replace(
        "return self._sparse(q_all, idx)", f"return self._sparse(q_all, idx, topk_length={_GETATTR})").replace(
        "def _sparse(self, q_all, idx):", "def _sparse(self, q_all, idx, topk_length: Optional[torch.Tensor] = None):").replace(
        "        o, _, _ = flash_mla_sparse_fwd(q_input, self.kv, idx, 1.0)",
        f"        {GUARD_COMMENT}\n        if {_checked('q_input')}:\n"
        "            topk_length = None\n\n"
        "        o, _, _ = flash_mla_sparse_fwd(q_input, self.kv, idx, 1.0, topk_length=topk_length)").replace(
        _KERNEL_IMPORT, _KERNEL_IMPORT + "from typing import Optional\n", 1)),
    # class 7 (annotations): torch and Optional only under TYPE_CHECKING: a string annotation; with
    # `from __future__ import annotations` the file's own spelling.
    _example(_TYPE_CHECKING, Status.FIXABLE, "gains topk_length", after=_helper_after(
        _TYPE_CHECKING, '"Optional[torch.Tensor]"')),
    _example(_LAZY, Status.FIXABLE, "gains topk_length", after=_helper_after(_LAZY, "Optional[torch.Tensor]")),
]


# --lengths derived: where the reference fix is not proven, the lengths derived from the call's own indices.
_NO_METADATA = _fn("def attend(q, kv, idx):\n    return flash_mla_sparse_fwd(q, kv, idx, 1.0)\n")
_ROWS_REORDERED = _fn("def attend(q, kv, idx, metadata, order):\n    q = q[order]\n"
                      "    return flash_mla_sparse_fwd(q, kv, idx.unsqueeze(1)[order], 1.0)\n")
_KWARGS = _fn("def attend(q, kv, idx, **kw):\n    return flash_mla_sparse_fwd(q, kv, idx, 1.0, **kw)\n")
DERIVED = [
    _example(_NO_METADATA, Status.MANUAL, "`--lengths derived` would fix it"),
    _example(_NO_METADATA, Status.FIXABLE, "derived from the call's indices", lengths="derived", after=_NO_METADATA.replace(
        "flash_mla_sparse_fwd(q, kv, idx, 1.0)", f"flash_mla_sparse_fwd(q, kv, idx, 1.0, topk_length={derived_value('idx')})")),
    # the indices are an expression: bound once, where the call evaluates them
    _example(_ROWS_REORDERED, Status.FIXABLE, "derived from the call's indices", lengths="derived", after=_ROWS_REORDERED.replace(
        "idx.unsqueeze(1)[order], 1.0)", f"({BOUND_NAME} := idx.unsqueeze(1)[order]), 1.0, "
        f"topk_length={derived_value(BOUND_NAME)})")),
    # the callee may not be the kernel: no lengths make that right
    _example(_fn("def attend(q, kv, idx):\n    return flash_mla_sparse_fwd(q, kv, idx, 1.0)\n",
                 head="if FLAG:\n    from .legacy import flash_mla_sparse_fwd\n"), Status.MANUAL, "", lengths="derived"),
    # a `**` mapping: the derived lengths go under it, so a topk_length it carries still wins (never passed twice)
    _example(_KWARGS, Status.MANUAL, "`--lengths derived` would fix it"),
    _example(_KWARGS, Status.FIXABLE, "under its `**` mapping", lengths="derived", after=_KWARGS.replace(
        "1.0, **kw)", f'1.0, **{{"topk_length": {derived_value("idx")}, **kw}})')),
    # the derived lengths read no module name: a module without `import torch` is fixed the same way
    _example(_NO_METADATA.replace("import torch\n", ""), Status.FIXABLE, "derived from the call's indices",
             lengths="derived", after=_NO_METADATA.replace("import torch\n", "").replace(
                 "flash_mla_sparse_fwd(q, kv, idx, 1.0)", f"flash_mla_sparse_fwd(q, kv, idx, 1.0, topk_length={derived_value('idx')})")),
]


BUMP_EXAMPLES = [
    RuleExample(_KERNEL_IMPORT + "def f(q, kv, idx, metadata):\n    return flash_mla_sparse_fwd(q, kv, idx, 1.0, d_v=512)\n",
                OPPORTUNITY, bump=("sglang-kernel-0.4.2.post2", "sglang-kernel-0.4.6")),
    RuleExample(_KERNEL_IMPORT + "def f(q, kv, idx, n):\n    return flash_mla_sparse_fwd(q, kv, idx, 1.0, topk_length=n)\n",
                None, bump=("sglang-kernel-0.4.2.post2", "sglang-kernel-0.4.6")),
]


class PassTopkLength(Rule):
    """The hooks of pass-topk-length (INFO.help says what it does)."""

    info = INFO
    EXAMPLES = INVALID + VALID + DERIVED + BUMP_EXAMPLES

    def sites(self, ctx: RuleContext) -> Tuple[str, List[Site]]:
        return _migrate(ctx, partial=True)

    def bump(self, ctx: Context) -> List[Finding]:
        """In a bump that adds topk_length: an opportunity, fixable where this rule's own verdict
        on the file under the new pin says so."""
        if ctx.entry_point not in ENTRY_POINTS or not new_param(ctx, PARAM):
            return []
        why = (f"`topk_length` is new in {ctx.new.label} and not passed: the sparse prefill kernel scans the "
               "whole -1-padded top-k width of every row")
        if ctx.new.pin is None:
            return [Finding(OPPORTUNITY, why + "; name the new release as NAME==VERSION to get the "
                                               "topk_length rule's verdict", PARAM, self.id)]
        verdicts = ctx.rule_sites(self.id)
        if "error" in verdicts:
            return [Finding(OPPORTUNITY, why + f"; the topk_length rule could not read the file ({verdicts['error']})",
                            PARAM, self.id)]
        site = verdicts.get((ctx.line, ctx.column))
        status = getattr(getattr(site, "status", None), "value", None)
        if status == "fixable":
            passes = f" (passes `{site.metadata}`)" if site.metadata else ""
            return [Finding(OPPORTUNITY, why + f"; fixable by the topk_length rule{passes}", PARAM, self.id,
                            fix=f"topk-migrate apply --kernel {ctx.new.pin} {ctx.path}")]
        detail = f": {status}, {site.reason}" if site is not None else ": the rule found no site here"
        return [Finding(OPPORTUNITY, why + f"; not fixable automatically (topk_length rule{detail})", PARAM, self.id)]
