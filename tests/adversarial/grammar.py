"""A program generator for the differential soundness suite (issue 25, item 7), Csmith-style.

A program is a small DSA backend project: `backend.py` (harness.MODULE, with `entry(inp)`) plus the
sibling files its choices need (mixins, shims, a subclass in another package, pins). It is drawn
from a grammar of independent productions (`Spec`, one field per production, each with a
reference value: the SGLang shape `apply` must keep fixing):

    layout       where the kernel call and the metadata live (helper method, in the call, module
                 function, nested def, lambda, mixin in this file or in another file)
    spelling     how the kernel is imported (module, alias, package, attribute, local, self
                 attribute, try/except fallback, the project's own shim: padding, reordering,
                 plain, fixed signature; padding or reordering with a topk_length parameter of its own)
    rebind       the kernel name rebound at run time (globals(), computed names, setattr on the
                 module, a sibling file monkeypatching the kernel module, an attribute assignment)
    kernel_call  how the kernel is called (keywords, positional, reordered, mixed, d_v, attn_sink,
                 **kw, *args, result indexed, the kernel as a value: partial, local alias)
    helper_call  how the caller calls the helper (keywords, positional, reordered, **kw)
    binding      how the caller gets the metadata (self attribute, parameter, Optional parameter,
                 dict .get(), .get() tested for truthiness, getattr(..., None))
    decl         what the module declares the metadata to be (nothing, the class, a string, Optional,
                 a Union with a class lacking the field, a class whose name starts with the declared
                 one, a class imported from another module)
    meta_class   the class of the metadata object at run time (the harness's, the module's, imported)
    field        dsa_cache_seqlens_int32 or nsa_cache_seqlens_int32
    field_source how the module builds the field (the harness's clipped counts, clamp to the top-k
                 width three ways, unclipped sequence lengths, or clamped to twice the width)
    rows         0-2 row steps on q and/or the indices: an op from ROW_OPS (permutations in method
                 and function form, row-preserving ops, row-count changes, duplications), a form of
                 application (direct, lambda, nested def, module function, method, mixin method in
                 another file, function in another file, match capture, walrus, conditional, tuple,
                 in place through an alias, in place in a loop) and a location (helper or caller)
    index_step   0-1 value step on the indices (sorts, clamps, flips, masked fills, offsets,
                 narrowing; and safe ones: dtype, view, contiguous, -1 kept, page remap), same forms
    micro_batch  the caller runs two micro-batches through one helper (slices, chunk, split, narrow,
                 padded to equal size) with one micro-batch's metadata, or each with its own
    decorator    on the helper (@torch.no_grad(), @torch.inference_mode(), an unknown fixed-signature
                 wrapper, a functools.wraps *args/**kwargs wrapper here or imported, one reordering rows)
    reflection   the helper replaced (setattr with a computed or literal name, attribute assignment,
                 a sibling file's monkeypatch or computed setattr, globals()) or reached by getattr with a computed name
    subclass     the entry uses a subclass overriding the helper: fixed signature, **kwargs forwarded
                 to super() with reordered rows or unchanged, a topk_length parameter; in this file,
                 a sibling file or another package of the project
    pins         requirements/pyproject/setup.cfg/config pins (0.4.6, 0.4.2.post2, ranges, markers,
                 -r includes, the kernel only in an extra, none); recipes known by their text (a
                 `*.Dockerfile`, an `.env`, a Python installer; a Python message that installs nothing)
    graph        eager, or a simulated CUDA graph (capture records each launch's topk_length object,
                 replay re-runs the step on the static buffers with the captured objects) whose replay
                 path updates the metadata in place, replaces the object, or replaces the field; or
                 updates in place a record the metadata class hands back on every construction (pooled),
                 or the table entry the eager path filed over the captured one
    edits        safe edits: renamed locals, logging, asserts, early return, string annotations,
                 `from __future__ import annotations`

Runtime choices that do not change any file (`Scenario`: which metadata object the entry builds,
the kernel generation the pins allow, environment flags, a hidden kernel module) are read from the
environment, so one rewrite serves several runs: a rewrite must be right for every run its pins and
declarations allow. The oracle is execution only (harness.run_variant): a program that ran before
apply and raises after, hands the kernel a length that disagrees with its indices, changes its
output or hides a kernel use is a wrong rewrite. `safe_spec` draws the safe subset (the reference
shape plus edits the tool must keep fixing), where a refusal is counted as over-refusal.
"""
from __future__ import annotations

import functools
import hashlib
import itertools
import random
from dataclasses import asdict, dataclass, fields
from typing import Dict, List, Optional, Sequence, Tuple

from .harness import MODULE, Variant

# --------------------------------------------------------------------------------------------
# Pools. Each pool's first entry is the reference (what minimization reduces towards).

LAYOUTS = ("method_helper", "in_call", "function_helper", "nested_helper", "lambda_helper", "mixin_same", "mixin_file")
METHOD_LAYOUTS = ("method_helper", "mixin_same", "mixin_file")  # the helper is a method
DEF_LAYOUTS = METHOD_LAYOUTS + ("function_helper", "nested_helper")  # the helper is a def

SPELLINGS = ("from_module", "module_alias", "package_alias", "package_attr", "submodule", "local_import", "self_attr",
             "try_fallback", "shim_pad", "shim_reorder", "shim_plain", "shim_fixed", "shim_pad_param", "shim_reorder_param")
# spelling -> (module-level import lines, callee as written, root name a rebinding replaces)
_SPELL = {
    "from_module": ("from sgl_kernel.flash_mla import flash_mla_sparse_fwd", "flash_mla_sparse_fwd", "flash_mla_sparse_fwd"),
    "module_alias": ("import sgl_kernel.flash_mla as fm", "fm.flash_mla_sparse_fwd", "fm"),
    "package_alias": ("from sgl_kernel import flash_mla_sparse_fwd as sparse_fwd", "sparse_fwd", "sparse_fwd"),
    "package_attr": ("import sgl_kernel", "sgl_kernel.flash_mla_sparse_fwd", "sgl_kernel"),
    "submodule": ("from sgl_kernel import flash_mla", "flash_mla.flash_mla_sparse_fwd", "flash_mla"),
    "local_import": ("", "flash_mla_sparse_fwd", "flash_mla_sparse_fwd"),
    "self_attr": ("import sgl_kernel.flash_mla as fm", "self.flash_mla.flash_mla_sparse_fwd", "fm"),
    "try_fallback": ("try:\n    from sgl_kernel.flash_mla import flash_mla_sparse_fwd\nexcept ImportError:\n"
                     "    from flash_mla import flash_mla_sparse_fwd", "flash_mla_sparse_fwd", "flash_mla_sparse_fwd"),
    "shim_pad": ("from adv_ops import flash_mla_sparse_fwd", "flash_mla_sparse_fwd", "flash_mla_sparse_fwd"),
    "shim_reorder": ("from adv_ops import flash_mla_sparse_fwd", "flash_mla_sparse_fwd", "flash_mla_sparse_fwd"),
    "shim_plain": ("from adv_ops import flash_mla_sparse_fwd", "flash_mla_sparse_fwd", "flash_mla_sparse_fwd"),
    "shim_fixed": ("from adv_ops import flash_mla_sparse_fwd", "flash_mla_sparse_fwd", "flash_mla_sparse_fwd"),
    "shim_pad_param": ("from adv_ops import flash_mla_sparse_fwd", "flash_mla_sparse_fwd", "flash_mla_sparse_fwd"),
    "shim_reorder_param": ("from adv_ops import flash_mla_sparse_fwd", "flash_mla_sparse_fwd", "flash_mla_sparse_fwd"),
}
REBINDS = ("none", "globals_literal", "globals_computed", "globals_update", "setattr_module", "sibling_monkeypatch",
           "module_attr_assign", "instance_attr")
KERNEL_CALLS = ("keywords", "positional", "keywords_reordered", "mixed", "with_dv", "attn_sink_none", "kwargs_dict",
                "star_args", "indexed_result", "tuple_result", "partial", "local_alias")
HELPER_CALLS = ("keywords", "positional", "keywords_reordered", "kwargs_dict")
BINDINGS = ("self_attr", "param", "optional_param", "dict_get", "dict_get_truthy", "getattr_default",
            "only_in_if", "rebound_to_none", "deleted", "rebound_other")
# a base class setting self.forward_metadata = None (in this module, or imported from another one)
BASES = ("none", "same_sets_none", "file_sets_none")
DECLS = ("none", "class", "string", "optional", "union", "prefix_name", "imported", "imported_optional")
META_CLASSES = ("harness", "module", "imported")
META_RUNS = ("full", "declared")
FIELDS = ("dsa", "nsa")
# clamp_wide: clipped, but to twice the top-k width (topk_length past the indices' width)
FIELD_SOURCES = ("harness", "clamp_f", "clamp_m", "minimum", "unclipped", "clamp_wide")
MICRO_BATCHES = ("none", "one_meta_slices", "one_meta_chunk", "one_meta_split", "one_meta_narrow", "one_meta_padded",
                 "per_mb_slices", "per_mb_chunk", "per_mb_padded")
DECORATORS = ("none", "no_grad", "inference_mode", "unknown_fixed", "wraps_varargs", "wraps_reorder", "imported_varargs",
              "factory_fixed", "factory_varargs")
REFLECTIONS = ("none", "setattr_computed", "setattr_literal", "attr_assign", "sibling_patch", "getattr_call", "globals_helper",
               "sibling_setattr")
SUBCLASSES = ("none", "same_fixed", "same_kwargs_reorder", "same_kwargs_plain", "same_topk_param",
              "sibling_fixed", "sibling_kwargs_reorder", "sibling_kwargs_plain",
              "package_fixed", "package_kwargs_reorder", "package_kwargs_plain", "package_topk_param")
# graph_apply_*: the replay hook updates the metadata through a method named like no hook (sglang 0.5.16's
# `_apply_cuda_graph_metadata`), in place or by giving the field a new tensor. graph_pooled: the replay updates
# in place, but the metadata class hands back one record it keeps (a fork's allocation cache, round V), and a
# construction between the capture and the replay gives that record's field a new tensor the graph never read
# graph_eager_files: the eager path files its record into the graph table too (round V), so the replay's in-place
# update reaches that record, not the one captured
GRAPHS = ("eager", "graph_inplace", "graph_replace", "graph_replace_field", "graph_apply_inplace", "graph_apply_field",
          "graph_pooled", "graph_eager_files")
EDITS = ("rename", "log", "assert", "early_return", "str_annotations", "future_annotations")

# pins -> (files, kernel generations at run time that those pins allow: "current" and/or "legacy")
PINS = {
    "req_new": ((("requirements.txt", "sglang-kernel==0.4.6\n"),), ("current",)),
    "req_old": ((("requirements.txt", "sglang-kernel==0.4.2.post2\n"),), ("legacy",)),
    "req_min_new": ((("requirements.txt", "sglang-kernel>=0.4.3\n"),), ("current",)),
    "req_range": ((("requirements.txt", "sglang-kernel>=0.4.0\n"),), ("current", "legacy")),
    "req_markers": ((("requirements.txt", 'sglang-kernel==0.4.6; platform_machine == "x86_64"\n'
                                          'sglang-kernel==0.4.2.post2; platform_machine != "x86_64"\n'),),
                    ("current", "legacy")),
    "req_include_old": ((("requirements.txt", "-r reqs/kernel.txt\n"), ("reqs/kernel.txt", "sglang-kernel==0.4.2.post2\n")),
                        ("legacy",)),
    "pyproject_new": ((("pyproject.toml", '[project]\nname = "fork"\nversion = "0"\ndependencies = ["sglang-kernel==0.4.6"]\n'),),
                      ("current",)),
    "pyproject_extra_only": ((("pyproject.toml", '[project]\nname = "fork"\nversion = "0"\ndependencies = ["torch"]\n\n'
                                                 '[project.optional-dependencies]\ngpu = ["sglang-kernel==0.4.6"]\n'),),
                             ("current", "legacy")),
    "config_kernel": ((("pyproject.toml", '[project]\nname = "fork"\nversion = "0"\n\n'
                                          '[tool.topk-migrate]\nkernel = "sglang-kernel==0.4.6"\n'),), ("current",)),
    "setup_cfg_new": ((("setup.cfg", "[options]\ninstall_requires =\n    sglang-kernel==0.4.6\n"),), ("current",)),
    "no_pins": ((("pyproject.toml", '[project]\nname = "fork"\nversion = "0"\n'),), ("current", "legacy")),
    # round S: a recipe is known by its text, whatever its name, folder or language
    "recipe_by_suffix_old": ((("requirements.txt", "sglang-kernel==0.4.6\n"),
                              ("docker/cu118.Dockerfile", "FROM base\nRUN pip install sglang-kernel==0.4.2.post2\n")),
                             ("current", "legacy")),
    "recipe_env_file_old": ((("requirements.txt", "sglang-kernel==0.4.6\n"),
                             ("deploy/cu118.env", "KERNEL_SPEC=sglang-kernel==0.4.2.post2\n")), ("current", "legacy")),
    "recipe_python_installer_old": ((("requirements.txt", "sglang-kernel==0.4.6\n"), (
        "tools/bootstrap.py", 'import subprocess, sys\nOLD = {"cu118": "sglang-kernel==0.4.2.post2"}\n'
        'subprocess.check_call([sys.executable, "-m", "pip", "install", OLD["cu118"]])\n')), ("current", "legacy")),
    "recipe_python_message_new": ((("requirements.txt", "sglang-kernel==0.4.6\n"), (
        "tools/check_env.py", 'HINT = "pip install sglang-kernel --force-reinstall"\n'
        'TABLE = {"0.5.0": "sglang-kernel==0.4.2.post2"}\n')), ("current",)),
}
PIN_NAMES = tuple(PINS)


@dataclass(frozen=True)
class Op:
    name: str
    template: str  # {x}: the tensor; {a}: the auxiliary tensor (an order or a per-row key); {h}: half the rows
    kind: str  # "perm" (same rows, other order) | "keep" (same rows, same order) | "count" (other row count) | "dup"
    aux: Optional[str] = None  # "order" | "key"
    applies: str = "any"  # "any" | "q" | "idx"


ROW_OPS = {o.name: o for o in [
    # permutations, method form and function form
    Op("index_order", "{x}[{a}]", "perm", "order"),
    Op("index_order_list", "{x}[{a}.tolist()]", "perm", "order"),
    Op("index_select_m", "{x}.index_select(0, {a})", "perm", "order"),
    Op("index_select_f", "torch.index_select({x}, 0, {a})", "perm", "order"),
    Op("index_select_kw", "torch.index_select({x}, dim=0, index={a})", "perm", "order"),
    Op("gather_rows", "{x}.gather(0, {a}.view(-1, 1, 1).expand_as({x}))", "perm", "order"),
    Op("take_along", "torch.take_along_dim({x}, {a}.view(-1, 1, 1), dim=0)", "perm", "order"),
    Op("index_copy_fresh", "torch.empty_like({x}).index_copy_(0, {a}, {x})", "perm", "order"),
    Op("flip_m", "{x}.flip(0)", "perm"),
    Op("flip_f", "torch.flip({x}, [0])", "perm"),
    Op("flip_dims_kw", "{x}.flip(dims=(0,))", "perm"),
    Op("flipud", "torch.flipud({x})", "perm"),
    Op("roll_m", "{x}.roll(1, 0)", "perm"),
    Op("roll_f", "torch.roll({x}, 1, 0)", "perm"),
    Op("roll_kw", "torch.roll({x}, shifts=1, dims=0)", "perm"),
    Op("roll_m_kw", "{x}.roll(shifts=3, dims=0)", "perm"),
    Op("cat_swap", "torch.cat([{x}[{h}:], {x}[:{h}]])", "perm"),
    Op("cat_swap_dim0", "torch.cat([{x}[{h}:], {x}[:{h}]], dim=0)", "perm"),
    Op("cat_swap_tuple", "torch.cat(({x}[{h}:], {x}[:{h}]), 0)", "perm"),
    Op("stack_unbind", "torch.stack({x}.unbind(0)[::-1])", "perm"),
    Op("chunk_swap", "torch.cat({x}.chunk(2)[::-1])", "perm"),
    Op("argsort_key", "{x}[torch.argsort({a})]", "perm", "key"),
    Op("argsort_m", "{x}[{a}.argsort()]", "perm", "key"),
    Op("sort_key", "{x}[torch.sort({a}).indices]", "perm", "key"),
    Op("sort_stable", "{x}.index_select(0, {a}.sort(stable=True)[1])", "perm", "key"),
    Op("transposed_flip", "{x}.flatten(1).T.flip(1).T.reshape({x}.shape)", "perm"),
    Op("transpose_flip", "{x}.transpose(0, 1).flip(1).transpose(0, 1)", "perm"),
    Op("movedim_flip", "{x}.movedim(0, 1).flip(1).movedim(1, 0)", "perm"),
    Op("permute_flip", "{x}.permute(1, 0, 2).flip(1).permute(1, 0, 2)", "perm"),
    Op("unflatten_flip", "{x}.unflatten(0, (1, -1)).flip(1).flatten(0, 1)", "perm"),
    Op("view_flip", "{x}.view(1, *{x}.shape).flip(1).view({x}.shape)", "perm"),
    Op("vstack_swap", "torch.vstack([{x}[{h}:], {x}[:{h}]])", "perm"),
    Op("rot90", "torch.rot90({x}, 2, [0, 1])", "perm"),
    Op("index_copy_into", "", "perm", "order"),  # statement form: empty_like + index_copy_
    # row-preserving
    Op("view_keep", "{x}.view({x}.shape[0], -1, {x}.shape[-1])", "keep"),
    Op("reshape_keep", "{x}.reshape({x}.shape[0], {x}.shape[1], -1)", "keep"),
    Op("reshape_neg", "{x}.reshape(-1, {x}.shape[1], {x}.shape[2])", "keep"),
    Op("unsqueeze_roundtrip", "{x}.flatten(1).unsqueeze(1).view({x}.shape)", "keep"),
    Op("unsqueeze_squeeze", "{x}.unsqueeze(1).squeeze(1)", "keep"),
    Op("contiguous", "{x}.contiguous()", "keep"),
    Op("to_dtype", "{x}.to({x}.dtype)", "keep"),
    Op("clone", "{x}.clone()", "keep"),
    Op("detach", "{x}.detach()", "keep"),
    Op("transpose_twice", "{x}.transpose(0, 1).transpose(0, 1)", "keep"),
    Op("transpose_contiguous", "{x}.transpose(0, 1).contiguous().transpose(0, 1)", "keep"),
    Op("permute_twice", "{x}.permute(1, 0, 2).permute(1, 0, 2)", "keep"),
    Op("transpose_last", "{x}.transpose(1, 2).transpose(1, 2)", "keep"),
    Op("prefix_full", "{x}[: {x}.shape[0]]", "keep"),
    Op("full_slice", "{x}[:]", "keep"),
    Op("ellipsis", "{x}[...]", "keep"),
    Op("narrow_full", "{x}.narrow(0, 0, {x}.shape[0])", "keep"),
    Op("identity_index", "{x}[torch.arange({x}.shape[0])]", "keep"),
    Op("flip_flip", "{x}.flip(0).flip(0)", "keep"),
    Op("roll_full", "torch.roll({x}, {x}.shape[0], 0)", "keep"),
    Op("cat_halves", "torch.cat([{x}[:{h}], {x}[{h}:]])", "keep"),
    Op("view_star", "{x}.view(-1, *{x}.shape[1:])", "keep"),
    Op("movedim_twice", "{x}.movedim(0, 1).movedim(1, 0)", "keep"),
    Op("float", "{x}.float()", "keep", applies="q"),
    Op("mul_one", "{x} * 1.0", "keep", applies="q"),
    Op("to_float32", "{x}.to(torch.float32)", "keep", applies="q"),
    Op("cat_last", "torch.cat([{x}[..., :12], {x}[..., 12:]], dim=-1)", "keep", applies="q"),
    Op("cat_last_split", "torch.cat({x}.split([12, 4], dim=-1), dim=-1)", "keep", applies="q"),
    Op("head_pad", "", "keep", applies="q"),  # statement form: new_zeros + slice assignment, sliced after
    Op("int", "{x}.int()", "keep", applies="idx"),
    Op("to_int32", "{x}.to(torch.int32)", "keep", applies="idx"),
    # other row counts (the guard's business) and duplicated rows
    Op("prefix", "{x}[: {x}.shape[0] - 2]", "count"),
    Op("suffix", "{x}[2:]", "count"),
    Op("narrow_inner", "{x}.narrow(0, 1, {x}.shape[0] - 2)", "count"),
    Op("stride2", "{x}[::2]", "count"),
    Op("first_chunk", "{x}.chunk(2)[0]", "count"),
    Op("second_split", "torch.split({x}, {h})[1]", "count"),
    Op("dup_half", "torch.cat([{x}[:{h}], {x}[:{h}]])", "dup"),
    Op("repeat_interleave", "{x}[::2].repeat_interleave(2, dim=0)", "dup"),
]}
INDEX_OPS = {o.name: o for o in [
    Op("sort_f", "torch.sort({x}, dim=-1).values", "bad"),
    Op("sort_m", "{x}.sort(dim=-1)[0]", "bad"),
    Op("sort_pos", "torch.sort({x}, -1)[0]", "bad"),
    Op("clamp_f", "torch.clamp({x}, min=0)", "bad"),
    Op("clamp_m", "{x}.clamp(min=0)", "bad"),
    Op("clamp_range", "torch.clamp({x}, 0, 47)", "bad"),
    Op("clamp_min_m", "{x}.clamp_min(0)", "bad"),
    Op("clamp_min_f", "torch.clamp_min({x}, 0)", "bad"),
    Op("clip_m", "{x}.clip(0, 47)", "bad"),
    Op("flip_last", "{x}.flip(-1)", "bad"),
    Op("flip_last_f", "torch.flip({x}, [-1])", "bad"),
    Op("roll_last", "torch.roll({x}, 1, -1)", "bad"),
    Op("mask_hole", "{x}.masked_fill({x} % 3 == 0, -1)", "bad"),
    Op("where_hole", "torch.where({x} % 3 == 0, torch.full_like({x}, -1), {x})", "bad"),
    Op("where_fill0", "torch.where({x} >= 0, {x}, 0)", "bad"),
    Op("fill_invalid0", "{x}.masked_fill({x} < 0, 0)", "bad"),
    Op("offset", "(({x} + 1) % 48).to(torch.int32)", "bad"),
    Op("remainder", "torch.remainder({x}, 48).to(torch.int32)", "bad"),
    Op("abs", "{x}.abs()", "bad"),
    Op("narrow_width", "{x}[..., :8]", "bad"),
    Op("to_int32", "{x}.to(torch.int32)", "ok"),
    Op("int", "{x}.int()", "ok"),
    Op("view", "{x}.view({x}.shape[0], 1, -1)", "ok"),
    Op("contiguous", "{x}.contiguous()", "ok"),
    Op("clone", "{x}.clone()", "ok"),
    Op("keep_invalid", "{x}.masked_fill({x} < 0, -1)", "ok"),
    Op("where_keep", "torch.where({x} >= 0, {x}, -1).to(torch.int32)", "ok"),
    Op("page_remap", "torch.where({x} >= 0, ({x} + 7) % 48, -1).to(torch.int32)", "ok"),
    Op("sort_desc", "torch.sort({x}, dim=-1, descending=True).values", "ok"),
    Op("full_width", "{x}[..., :16]", "ok"),
]}
ROW_OP_NAMES, INDEX_OP_NAMES = tuple(ROW_OPS), tuple(INDEX_OPS)
ROW_FORMS = ("direct", "lambda", "nested_def", "module_func", "method", "mixin_file_method", "sibling_func",
             "match_capture", "walrus", "conditional", "tuple_unpack", "inplace_direct", "inplace_alias", "inplace_loop")
INDEX_FORMS = ("direct", "lambda", "nested_def", "module_func", "method", "mixin_file_method", "sibling_func",
               "inplace_direct")
STATEMENT_OPS = ("head_pad", "index_copy_into")
# a name `topk_length` the module already uses (class 3): a module global, a parameter of the function that
# calls the kernel (int default, None default read, None default unused), or one its callers pass
WIDTHS = ("none", "global", "param_default", "param_none", "param_unused", "param_passed", "self_attr")
TARGETS = ("q", "both", "idx")
LOCS = ("helper", "caller")

# (op, target, form, loc) and (op, form, loc)
Step = Tuple[str, str, str, str]
IStep = Tuple[str, str, str]


@dataclass(frozen=True)
class Spec:
    layout: str = "method_helper"
    spelling: str = "from_module"
    rebind: str = "none"
    kernel_call: str = "keywords"
    helper_call: str = "keywords"
    binding: str = "self_attr"
    decl: str = "none"
    meta_class: str = "harness"
    meta_runs: str = "full"  # the entry builds the full metadata only, or every object the declarations allow
    field: str = "dsa"
    field_source: str = "harness"
    rows: Tuple[Step, ...] = ()
    index_step: Optional[IStep] = None
    micro_batch: str = "none"
    decorator: str = "none"
    reflection: str = "none"
    subclass: str = "none"
    pins: str = "req_new"
    graph: str = "eager"
    width: str = "none"
    base: str = "none"
    edits: Tuple[str, ...] = ()

    def changes(self) -> Dict[str, object]:
        """The productions that differ from the reference shape."""
        ref = Spec()
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) != getattr(ref, f.name)}

    def label(self) -> str:
        parts = []
        for k, v in self.changes().items():
            if k == "rows":
                v = "+".join("/".join(s) for s in v)
            elif k == "index_step":
                v = "/".join(v)
            elif k == "edits":
                v = "+".join(v)
            parts.append(f"{k}={v}")
        return ", ".join(parts) or "reference"


@dataclass(frozen=True)
class Scenario:
    """What differs between runs of one program: nothing in its files changes."""

    meta: str = "full"  # the metadata object the entry builds: full | none | no_field | lite | int64 | padded
    kernel: str = "current"  # current | legacy (sglang-kernel <= 0.4.2.post2)
    legacy_flag: bool = False  # ADV_LEGACY=1: the rebinding productions take effect
    patch_flag: bool = False  # ADV_PATCH=1: the reflection productions take effect
    hidden: bool = False  # sgl_kernel cannot be imported (the try/except fallback runs)

    def label(self) -> str:
        bits = [f"meta={self.meta}", f"kernel={self.kernel}"]
        bits += ["ADV_LEGACY=1"] * self.legacy_flag + ["ADV_PATCH=1"] * self.patch_flag + ["sgl_kernel hidden"] * self.hidden
        return ", ".join(bits)


# --------------------------------------------------------------------------------------------
# Constraints: every spec is normalized so that its original program runs (the generator's
# promise; a broken original is counted, and must stay rare).

def meta_kinds(s: Spec) -> Tuple[str, ...]:
    """The metadata objects the module's own declarations allow at run time."""
    kinds = {"none": ("full", "none", "no_field", "lite", "int64", "padded"), "class": ("full",), "string": ("full",),
             "optional": ("full", "none"), "union": ("full", "no_field"), "prefix_name": ("lite",),
             "imported": ("full",), "imported_optional": ("full", "none")}[s.decl]
    if (s.binding in ("dict_get", "dict_get_truthy", "optional_param") or s.base != "none") and "none" not in kinds:
        kinds = kinds + ("none",)  # .get() of a layer with no metadata; a parameter declared Optional
    if s.micro_batch != "none" or s.graph != "eager" or (s.meta_runs == "full" and "full" in kinds):
        kinds = tuple(k for k in kinds if k == "full")
    return kinds


def scenarios(s: Spec) -> List[Scenario]:
    """Every run a program's files allow."""
    out = []
    for meta, kernel, lf, pf, hidden in itertools.product(
            meta_kinds(s), PINS[s.pins][1], (False, True) if s.rebind != "none" else (False,),
            (False, True) if s.reflection in _PATCHING else (False,),
            (False, True) if s.spelling == "try_fallback" else (False,)):
        out.append(Scenario(meta, kernel, lf, pf, hidden))
    return out


_PATCHING = ("setattr_computed", "setattr_literal", "attr_assign", "sibling_patch", "globals_helper", "sibling_setattr")


def normalize(s: Spec) -> Spec:
    """The nearest spec whose program is well formed (same choices where they combine)."""
    c = asdict(s)
    c["rows"] = tuple(tuple(x) for x in s.rows)
    c["index_step"] = tuple(s.index_step) if s.index_step else None
    if c["reflection"] == "globals_helper":
        c["layout"] = "function_helper"  # globals() holds module functions only
    if c["rebind"] == "instance_attr":  # self.flash_mla set from something else than the kernel's module
        c["spelling"] = "self_attr"
        if c["layout"] in ("function_helper", "mixin_file"):
            c["layout"] = "method_helper"
    lay = c["layout"]
    if c["spelling"] == "self_attr" and lay in ("function_helper", "mixin_file"):
        c["spelling"] = "module_alias"
    if c["spelling"].startswith("shim_") or c["spelling"] == "try_fallback":
        c["rebind"] = "none"
    if c["rebind"] == "module_attr_assign" and c["spelling"] not in ("module_alias", "package_attr", "submodule", "self_attr"):
        c["spelling"] = "module_alias"  # an assignment to the kernel module's attribute needs the module
    if c["spelling"] == "try_fallback":
        c["graph"] = "eager"
        if c["reflection"] in _PATCHING:
            c["reflection"] = "none"
    if lay == "lambda_helper":
        if c["kernel_call"] in ("indexed_result", "tuple_result", "partial", "local_alias"):
            c["kernel_call"] = "positional"
        c["helper_call"] = "positional"
    if lay not in DEF_LAYOUTS:
        c["decorator"] = "none"
    if lay not in METHOD_LAYOUTS:
        c["subclass"] = "none"
    if lay in ("in_call", "nested_helper", "lambda_helper"):
        c["reflection"] = "none"
    if lay == "lambda_helper":
        c["micro_batch"] = "none"
        c["width"] = "none"
    if c["width"] == "param_passed":
        if lay not in DEF_LAYOUTS:
            c["width"] = "param_default"
        else:  # every path to the helper takes the keyword
            c["subclass"] = "none"
            if c["reflection"] != "getattr_call":
                c["reflection"] = "none"
            if c["decorator"] in ("unknown_fixed", "factory_fixed"):
                c["decorator"] = "none"
    if c["micro_batch"] != "none" or c["graph"] != "eager":
        if c["binding"] not in ("self_attr", "param") or (c["graph"] != "eager" and c["binding"] != "self_attr"):
            c["binding"] = "self_attr"
        if c["decl"] == "prefix_name":
            c["decl"] = "class"
        if c["graph"] != "eager" and c["meta_class"] == "harness":
            c["meta_class"] = "module"
        if c["graph"] != "eager" and c["field_source"] == "harness":
            c["field_source"] = "clamp_f"  # the capture and replay paths write the field from the batch's seqlens
    if c["decl"] in ("class", "string", "optional", "union", "prefix_name"):
        c["meta_class"] = "module"
    elif c["decl"] in ("imported", "imported_optional"):
        c["meta_class"] = "imported"
    if (c["micro_batch"] != "none" or c["field_source"] != "harness") and c["meta_class"] == "harness":
        c["meta_class"] = "module"  # the module builds the field itself, by name
    rows = []
    for op, target, form, loc in c["rows"][:2]:
        o = ROW_OPS[op]
        if o.applies != "any":
            target = o.applies
        if o.kind in ("count", "dup"):
            target = "both"  # q and its indices must keep one row count
        if op in STATEMENT_OPS:
            form = "direct"
        if o.kind in ("count", "dup") and form in ("inplace_direct", "inplace_alias", "inplace_loop"):
            form = "direct"
        if lay in ("lambda_helper",):
            loc = "caller"
        if loc == "helper" and lay == "function_helper" and form in ("method", "mixin_file_method"):
            form = "module_func"
        if form == "tuple_unpack" and target != "both":
            form = "direct"
        rows.append((op, target, form, loc))
    c["rows"] = tuple(rows)
    if c["index_step"]:
        op, form, loc = c["index_step"]
        if lay == "lambda_helper":
            loc = "caller"
        if loc == "helper" and lay == "function_helper" and form in ("method", "mixin_file_method"):
            form = "module_func"
        if op == "narrow_width" and form == "inplace_direct":
            form = "direct"
        c["index_step"] = (op, form, loc)
    c["edits"] = tuple(sorted(set(c["edits"])))
    return Spec(**c)


# --------------------------------------------------------------------------------------------
# Sampling.

SAFE = dict(
    layout=("method_helper", "mixin_same"),
    spelling=("from_module", "module_alias", "package_alias"),
    kernel_call=("keywords", "keywords_reordered", "positional"),
    helper_call=("keywords", "keywords_reordered"),
    decl=("none", "class", "string", "imported"),
    field=FIELDS,
    field_source=("harness", "clamp_f"),
    decorator=("none", "no_grad", "inference_mode"),
    pins=("req_new", "pyproject_new", "recipe_python_message_new"),
    graph=("eager", "graph_inplace", "graph_apply_inplace"),
)
# the row-preserving steps README says stay accepted, on q in the helper, written directly
SAFE_ROW_OPS = ("head_pad", "view_keep", "reshape_keep", "reshape_neg", "unsqueeze_roundtrip", "cat_last",
                "cat_last_split", "contiguous")
SAFE_INDEX_OPS = ("to_int32", "view", "contiguous")


def is_safe(s: Spec) -> bool:
    """In the safe subset: the reference shape with safe edits only (must stay fixable)."""
    for name, pool in SAFE.items():
        if getattr(s, name) not in pool:
            return False
    if (s.rebind, s.binding, s.micro_batch, s.reflection, s.subclass, s.width, s.base) != \
            ("none", "self_attr", "none", "none", "none", "none", "none"):
        return False
    if any(op not in SAFE_ROW_OPS or target != "q" or form != "direct" or loc != "helper" for op, target, form, loc in s.rows):
        return False
    if s.index_step and (s.index_step[0] not in SAFE_INDEX_OPS or s.index_step[1:] != ("direct", "helper")):
        return False
    if s.field_source == "harness" and s.meta_class != "harness":  # the field copied off another object: unproven
        return False
    return not {"int64", "padded"} & set(meta_kinds(s))  # a draft's object writing the field unclipped


def safe_spec(rng: random.Random) -> Spec:
    c = {name: rng.choice(pool) for name, pool in SAFE.items()}
    c["rows"] = tuple(("head_pad" if rng.random() < 0.3 else rng.choice(SAFE_ROW_OPS), "q", "direct", "helper")
                      for _ in range(rng.choice((0, 1, 1, 2))))
    c["index_step"] = (rng.choice(SAFE_INDEX_OPS), "direct", "helper") if rng.random() < 0.3 else None
    c["edits"] = tuple(e for e in EDITS if rng.random() < 0.35)
    if c["graph"] != "eager":
        c["field_source"] = "clamp_f"  # a replay path writes the field from the batch's seqlens: clipped
    return normalize(Spec(**c))


_POOLS = dict(layout=LAYOUTS, spelling=SPELLINGS, rebind=REBINDS, kernel_call=KERNEL_CALLS, helper_call=HELPER_CALLS,
              binding=BINDINGS, decl=DECLS, meta_class=META_CLASSES, meta_runs=META_RUNS, field=FIELDS, field_source=FIELD_SOURCES,
              micro_batch=MICRO_BATCHES, decorator=DECORATORS, reflection=REFLECTIONS, subclass=SUBCLASSES,
              pins=PIN_NAMES, graph=GRAPHS, width=WIDTHS, base=BASES)
# how often each production leaves the reference (the rest of the time it keeps it)
_RATE = dict(layout=0.45, spelling=0.3, rebind=0.12, kernel_call=0.3, helper_call=0.3, binding=0.3, decl=0.35,
             meta_class=0.3, meta_runs=1.0, field=0.3, field_source=0.25, micro_batch=0.15, decorator=0.2, reflection=0.12,
             subclass=0.18, pins=0.2, graph=0.12, width=0.1, base=0.1)


def random_spec(rng: random.Random, focus: Optional[Tuple[str, str]] = None) -> Spec:
    """A spec with each production left at the reference or drawn at its rate; `focus` (a production
    and one of its alternatives) is forced, so that a run visits every alternative in turn."""
    c = {name: (rng.choice(pool) if rng.random() < _RATE[name] else pool[0]) for name, pool in _POOLS.items()}
    rows = [[rng.choice(ROW_OP_NAMES), rng.choice(TARGETS), rng.choice(ROW_FORMS), rng.choice(LOCS)]
            for _ in range(rng.choice((0, 1, 1, 1, 2, 2)))]
    istep = [rng.choice(INDEX_OP_NAMES), rng.choice(INDEX_FORMS), rng.choice(LOCS)] if rng.random() < 0.35 else None
    c["edits"] = tuple(e for e in EDITS if rng.random() < 0.15)
    if focus is not None:
        rows, istep = _choose(c, rows, istep, focus, rng)
    c["rows"] = tuple(tuple(r) for r in rows)
    c["index_step"] = tuple(istep) if istep else None
    return normalize(Spec(**c))


def _choose(c: dict, rows: list, istep, choice: Tuple[str, str], rng: random.Random):
    """Set one production's alternative in a spec being drawn (c, its row steps, its index step)."""
    prod, alt = choice
    if prod.startswith("rows."):
        if not rows:
            rows.append([rng.choice(ROW_OP_NAMES), rng.choice(TARGETS), "direct", "helper"])
        rows[0][("op", "target", "form", "loc").index(prod[5:])] = alt
    elif prod.startswith("index_step."):
        istep = istep or [rng.choice(INDEX_OP_NAMES), "direct", "helper"]
        istep[("op", "form").index(prod[11:])] = alt
    elif prod == "edits":
        c["edits"] = tuple(sorted(set(c["edits"]) | {alt}))
    else:
        c[prod] = alt
    return rows, istep


def focused_spec(rng: random.Random, focus: Tuple[str, str], pool: Sequence[Tuple[str, str]]) -> Spec:
    """The reference shape (or a safe-subset program) with the focus alternative and at most one other
    choice: one hazard among what apply must keep fixing, where nothing else makes it refuse."""
    base = safe_spec(rng) if rng.random() < 0.5 else Spec()
    c = asdict(base)
    c["meta_runs"] = rng.choice(META_RUNS)
    rows = [list(r) for r in base.rows]
    istep = list(base.index_step) if base.index_step else None
    rows, istep = _choose(c, rows, istep, focus, rng)
    if rng.random() < 0.4:
        rows, istep = _choose(c, rows, istep, rng.choice(pool), rng)
    c["rows"] = tuple(tuple(r) for r in rows)
    c["index_step"] = tuple(istep) if istep else None
    return normalize(Spec(**c))


@dataclass(frozen=True)
class Program:
    seed: int
    index: int
    spec: Spec
    scenario: Scenario

    @property
    def safe(self) -> bool:
        """In the safe subset, run where the module's metadata is there: apply must fix it."""
        return is_safe(self.spec) and self.scenario.meta == "full"

    @property
    def key(self) -> str:
        return f"{self.seed}:{self.index}"

    def variant(self, tag: str = "") -> Variant:
        source, files = render(self.spec)
        sc = self.scenario
        env = [("ADV_META", sc.meta), ("ADV_LEGACY", "1" if sc.legacy_flag else "0"),
               ("ADV_PATCH", "1" if sc.patch_flag else "0")]
        name = f"g{self.seed}_{self.index}{tag}_{_digest(self.spec, sc)}"
        return Variant(name, "control" if is_safe(self.spec) else "generated", source, files,
                       legacy_kernel=sc.kernel == "legacy", hide=("sgl_kernel", "sgl_kernel.flash_mla") if sc.hidden else (),
                       env=tuple(env))


def _digest(*parts) -> str:
    return hashlib.sha1(repr(parts).encode()).hexdigest()[:10]


def programs(seed: int, n: int, runs_per_spec: int = 3, safe_share: float = 0.25,
             focused_share: float = 0.35) -> List[Program]:
    """n programs from `seed`: specs drawn one by one, each run under up to `runs_per_spec` of its
    scenarios (drawn from the ones its files allow). A spec is a safe-subset program, a focused one
    (one alternative, every other production at the reference or safe) or a random one; the focused
    and random ones visit every alternative of every production in turn. Deterministic in its arguments."""
    out: List[Program] = []
    i = drawn = 0
    focus = [(k, a) for k, alts in every_production().items() for a in alts]
    random.Random(f"topk-gen:{seed}:focus").shuffle(focus)
    while len(out) < n:
        rng = random.Random(f"topk-gen:{seed}:{i}")
        kind = rng.random()
        if kind < safe_share:
            spec = safe_spec(rng)
        elif kind < safe_share + focused_share:
            spec = focused_spec(rng, focus[drawn % len(focus)], focus)
            drawn += 1
        else:
            spec = random_spec(rng, focus[drawn % len(focus)])
            drawn += 1
        runs = scenarios(spec)
        rng.shuffle(runs)
        for sc in runs[:runs_per_spec]:
            if len(out) < n:
                out.append(Program(seed, i, spec, sc))
        i += 1
    return out


# --------------------------------------------------------------------------------------------
# Rendering.

# Where the module clips seqlens, it reads the width as sglang does: from the model's config, by the getter.
WIDTH_FROM_CONFIG = """HF_CONFIG = types.SimpleNamespace(index_topk=TOPK)  # the model's config


def get_dsa_index_topk(config):
    return config.index_topk


DSA_INDEX_TOPK = get_dsa_index_topk(HF_CONFIG)
"""
HEAD = '"""Generated DSA backend; metadata.{field} holds seqlens clipped to topk."""'
FIELD_NAMES = {"dsa": "dsa_cache_seqlens_int32", "nsa": "nsa_cache_seqlens_int32"}
NAMES = dict(q="q", kv="kv", idx="indices", scale="scale", hq="q_all", hkv="kv_cache", hidx="indices",
             hscale="sm_scale", qi="q_input", ii="idx_input")
RENAMED = dict(q="hidden_states", kv="kv_pool", idx="topk_idx", scale="softmax_scale", hq="query", hkv="kv_buffer",
               hidx="topk_indices", hscale="scaling", qi="q_in", ii="idx_in")

# The metadata of another step of the engine, built in a module of its own: the field holds the
# clipped lengths, but as int64, or padded by two empty rows (a CUDA-graph batch size). Where
# nothing declares the metadata's type, the checked guard must hand the kernel the full width.
DRAFT_META = '''"""The draft step's metadata: its own lengths."""
from dataclasses import dataclass
from typing import Optional

import torch


@dataclass
class DraftMetadata:
    {field}: Optional[torch.Tensor] = None
    page_table_1: Optional[torch.Tensor] = None


def draft_metadata(inp, kind):
    lens = inp.metadata.{field}
    if kind == "int64":  # the clipped lengths, as int64
        return DraftMetadata({field}=lens.to(torch.int64), page_table_1=inp.metadata.page_table_1)
    # the clipped lengths padded with two empty rows
    return DraftMetadata({field}=torch.cat([lens, lens.new_zeros(2)]), page_table_1=inp.metadata.page_table_1)
'''

GRAPH_SIM = '''"""CPU stand-in for torch.cuda.CUDAGraph around the sparse kernel.

capture(): runs the step once and records, for each kernel launch, the topk_length *object* it got
(a graph records device pointers). replay(): the step's tensor work runs again on the static
buffers, but each launch reads the object captured for it (None stays None): a replay path that
swaps in a new metadata object, instead of updating its tensors in place, is invisible to the graph.
"""
import sys


class Graph:
    def __init__(self, step):
        self.step, self.captured = step, []

    def capture(self):
        stub = sys.modules["sgl_kernel.flash_mla"]
        real = stub._attend

        def record(q, kv, indices, sm_scale, d_v, topk_length):
            self.captured.append(topk_length)
            return real(q, kv, indices, sm_scale, d_v, topk_length)

        check = stub._check_length  # a warm-up: its output is discarded, as a real capture's is
        stub._attend, stub._check_length = record, (lambda *a: None)
        try:
            return self.step()
        finally:
            stub._attend, stub._check_length = real, check

    def replay(self):
        stub = sys.modules["sgl_kernel.flash_mla"]
        shapes, check, attend = stub._check_shapes, stub._check_length, stub._attend
        launch = [0]

        def captured():
            return self.captured[launch[0]] if launch[0] < len(self.captured) else None

        def replay_shapes(q, kv, indices):
            shapes(q, kv, indices)
            if captured() is not None:
                check(stub.CALLS[-1], q, indices, captured())

        def replay_attend(q, kv, indices, sm_scale, d_v, topk_length):
            tl = captured()
            launch[0] += 1
            return attend(q, kv, indices, sm_scale, d_v, tl)

        stub._check_shapes, stub._check_length, stub._attend = replay_shapes, (lambda *a: None), replay_attend
        try:
            return self.step()
        finally:
            stub._check_shapes, stub._check_length, stub._attend = shapes, check, attend
'''

COMPAT = '''"""Compatibility patches this fork installs on some machines (the old kernel's path)."""
import sgl_kernel
import sgl_kernel.flash_mla as _fm
from sgl_kernel.flash_mla import legacy_fwd


def install():
    _fm.flash_mla_sparse_fwd = legacy_fwd
    sgl_kernel.flash_mla_sparse_fwd = legacy_fwd
'''

LEGACY_DEF = '''def _legacy_sparse_fwd(q, kv, indices, sm_scale, d_v=512, attn_sink=None):
    """The pre-topk_length wrapper this fork keeps for its old path."""
    from sgl_kernel.flash_mla import legacy_fwd

    return legacy_fwd(q, kv, indices, sm_scale, d_v)'''


def _shim(kind: str) -> str:
    head = ('"""This project\'s wrapper around the sparse kernel."""\nimport torch\n'
            "from sgl_kernel.flash_mla import flash_mla_sparse_fwd as _kernel\n\n\n")
    if kind == "shim_fixed":
        return head + ("def flash_mla_sparse_fwd(q, kv, indices, sm_scale, d_v=512, attn_sink=None):\n"
                       "    return _kernel(q, kv, indices, sm_scale, d_v, attn_sink)\n")
    body = "def flash_mla_sparse_fwd(q, kv, indices, sm_scale, d_v=512, **kwargs):\n"
    if kind.endswith("_param"):  # takes topk_length itself (the gate accepts it), hands it on with other rows
        body = ("def flash_mla_sparse_fwd(q, kv, indices, sm_scale, d_v=512, attn_sink=None, topk_length=None):\n"
                "    kwargs = {} if topk_length is None else {\"topk_length\": topk_length}\n")
        kind = kind[: -len("_param")]
    if kind == "shim_pad":
        body += ('    """Pads the rows to the kernel\'s tile of 16."""\n'
                 "    pad = (-q.shape[0]) % 16\n"
                 "    q = torch.cat([q, q.new_zeros((pad, *q.shape[1:]))])\n"
                 "    indices = torch.cat([indices, indices.new_full((pad, *indices.shape[1:]), -1)])\n"
                 "    out, max_logits, lse = _kernel(q, kv, indices, sm_scale, d_v, **kwargs)\n"
                 "    n = out.shape[0] - pad\n"
                 "    return out[:n], max_logits[:n], lse[:n]\n")
    elif kind == "shim_reorder":
        body += ('    """Longest rows first (this fork\'s scheduler), then back to the caller\'s order."""\n'
                 "    order = torch.argsort((indices[:, 0, :] >= 0).sum(-1), descending=True, stable=True)\n"
                 "    out, max_logits, lse = _kernel(q[order], kv, indices[order], sm_scale, d_v, **kwargs)\n"
                 "    back = torch.argsort(order)\n"
                 "    return out[back], max_logits[back], lse[back]\n")
    else:
        body += "    return _kernel(q, kv, indices, sm_scale, d_v, **kwargs)\n"
    return head + body


class _File:
    """One generated Python file: import lines, module-level definitions, its body."""

    def __init__(self, name: str):
        self.name = name
        self.std: set = set()
        self.imports: List[str] = []
        self.prelude: List[str] = []
        self.classes: Dict[str, List[str]] = {}  # class name -> extra methods (each a block)

    def imp(self, line: str) -> None:
        if line and line not in self.imports:
            self.imports.append(line)

    def add(self, block: str) -> None:
        self.prelude.append(block)


def _ind(lines: Sequence[str], n: int = 4) -> List[str]:
    pad = " " * n
    return [pad + l if l else "" for l in lines]


def _block(text: str) -> List[str]:
    return text.split("\n")


class _Render:
    def __init__(self, s: Spec):
        self.s = s
        self.n = RENAMED if "rename" in s.edits else NAMES
        self.field = FIELD_NAMES[s.field]
        self.files: Dict[str, _File] = {}
        self.extra: List[Tuple[str, str]] = list(PINS[s.pins][0])
        self.counter = itertools.count()
        self.lay = s.layout
        self.helper_is_method = self.lay in METHOD_LAYOUTS
        # which file holds the kernel call and the helper
        self.kfile = "adv_sparse_mixin.py" if self.lay == "mixin_file" else MODULE
        self.helper_class = "SparseMixin" if self.lay in ("mixin_same", "mixin_file") else "Backend"

    def file(self, name: str) -> _File:
        if name not in self.files:
            self.files[name] = _File(name)
        return self.files[name]

    # -- names and small pieces ----------------------------------------------------------
    @property
    def helper_name(self) -> str:
        return {"function_helper": "sparse_attend", "nested_helper": "attend", "lambda_helper": "attend"}.get(
            self.lay, "_forward_flashmla_sparse")

    def callee(self) -> str:
        return _SPELL[self.s.spelling][1]

    def ann(self, kind: str) -> str:
        """An annotation for a helper parameter (edits str_annotations / future_annotations)."""
        e = self.s.edits
        if "str_annotations" in e:
            return ': "torch.Tensor"' if kind == "t" else ': "float"'
        if "future_annotations" in e:
            return ": torch.Tensor" if kind == "t" else ": float"
        return ""

    def helper_params(self) -> List[str]:
        n = self.n
        ps = [n["hq"] + self.ann("t"), n["hkv"] + self.ann("t"), n["hidx"] + self.ann("t"), n["hscale"] + self.ann("f")]
        return (["self"] if self.helper_is_method else []) + ps + self.width_param()

    def width_param(self) -> List[str]:
        w = self.s.width
        if w in ("param_default", "param_passed"):
            return ["topk_length: int = TOPK"]
        if w in ("param_none", "param_unused"):
            return ["topk_length=None"]
        return []

    def width_read(self, i: str, has_self: bool) -> List[str]:
        w = self.s.width
        if w in ("global", "param_default", "param_passed"):
            return [f'assert {i}.shape[-1] <= topk_length, "indices wider than the indexer\'s top-k"']
        if w == "param_none":
            return ["width = topk_length or TOPK", f"assert {i}.shape[-1] <= width"]
        if w == "self_attr" and has_self:
            return [f"assert {i}.shape[-1] <= self.topk_length"]
        return []

    def ret_ann(self) -> str:
        e = self.s.edits
        return ' -> "torch.Tensor"' if "str_annotations" in e else " -> torch.Tensor" if "future_annotations" in e else ""

    # -- the kernel import, its rebinding, the compat patch --------------------------------
    def kernel_prelude(self, f: _File) -> None:
        s = self.s
        f.std.add("os")
        if s.rebind == "sibling_monkeypatch":
            f.imp("import adv_compat")
            f.imp('if os.environ.get("ADV_LEGACY") == "1":\n    adv_compat.install()')
            self.extra.append(("adv_compat.py", COMPAT))
        f.imp(_SPELL[s.spelling][0])
        if s.spelling.startswith("shim_"):
            self.extra.append(("adv_ops.py", _shim(s.spelling)))
        if s.rebind in ("none", "sibling_monkeypatch"):
            return
        f.add(LEGACY_DEF)
        if s.rebind == "instance_attr":
            f.std.add("types")
            return  # Backend.__init__ picks the module or a namespace holding the old kernel
        root = _SPELL[s.spelling][2]
        value = "_legacy_sparse_fwd" if root == _SPELL[s.spelling][1].split(".")[-1] or s.spelling == "local_import" \
            else "types.SimpleNamespace(flash_mla_sparse_fwd=_legacy_sparse_fwd)"
        if s.spelling in ("module_alias", "package_attr", "submodule", "self_attr"):
            f.std.add("types")
        cut = len(root) // 2
        line = {
            "globals_literal": f'globals()["{root}"] = {value}',
            "globals_computed": f'globals()["{root[:cut]}" + "{root[cut:]}"] = {value}',
            "globals_update": f'globals().update({{"{root}": {value}}})',
            "setattr_module": f'setattr(sys.modules[__name__], "{root[:cut]}" + "{root[cut:]}", {value})',
            "module_attr_assign": f"{_SPELL[s.spelling][1].replace('self.flash_mla', 'fm')} = _legacy_sparse_fwd",
        }[s.rebind]
        if s.rebind == "setattr_module":
            f.std.add("sys")
        f.add(f'if os.environ.get("ADV_LEGACY") == "1":\n    {line}')

    # -- row and index steps -----------------------------------------------------------------
    def steps_at(self, loc: str) -> List[Step]:
        if self.lay in ("in_call",):
            return list(self.s.rows) if loc == "caller" else []
        return [st for st in self.s.rows if st[3] == loc]

    def index_at(self, loc: str) -> Optional[IStep]:
        st = self.s.index_step
        if st is None:
            return None
        if self.lay == "in_call":
            return st if loc == "caller" else None
        return st if st[2] == loc else None

    def _function(self, f: _File, form: str, body_expr: str, aux: bool, where: str, has_self: bool) -> Tuple[List[str], str]:
        """Define a function `t[, a] -> body_expr` in the given form; (lines to emit here, callee)."""
        k = next(self.counter)
        params = "t, a" if aux else "t"
        if form == "lambda":
            return [f"_step{k} = lambda {params}: {body_expr}"], f"_step{k}"
        if form == "nested_def":
            return [f"def _step{k}({params}):", f"    return {body_expr}"], f"_step{k}"
        if form == "module_func":
            f.add(f"def _{where}_step{k}({params}):\n    return {body_expr}")
            return [], f"_{where}_step{k}"
        if form == "sibling_func":
            mod = self.file("adv_rows_ops.py")
            mod.std.add("torch")
            mod.add(f"def rows_step{k}({params}):\n    return {body_expr}")
            f.imp(f"from adv_rows_ops import rows_step{k}")
            return [], f"rows_step{k}"
        if form in ("method", "mixin_file_method") and has_self:
            block = f"def _rows_step{k}(self, {params}):\n    return {body_expr}"
            if form == "method":
                self.file(MODULE).classes.setdefault("Backend", []).append(block)
            else:
                mix = self.file("adv_rows_mixin.py")
                mix.std.add("torch")
                mix.classes.setdefault("RowsMixin", []).append(block)
            return [], f"self._rows_step{k}"
        # a method where there is no self: a module function instead
        f.add(f"def _{where}_step{k}({params}):\n    return {body_expr}")
        return [], f"_{where}_step{k}"

    def row_step(self, f: _File, st: Step, q: str, i: str, where: str, has_self: bool):
        """(lines, q, i, posts) of one row step applied to q and/or the indices."""
        op, target, form, _ = st
        o = ROW_OPS[op]
        k = next(self.counter)
        lines: List[str] = []
        if op == "head_pad":
            lines += [f"n_tok{k}, n_heads{k}, head_dim{k} = {q}.shape",
                      f"q_pad{k} = {q}.new_zeros((n_tok{k}, 4, head_dim{k}))",
                      f"q_pad{k}[:, :n_heads{k}] = {q}"]
            return lines, f"q_pad{k}", i, [f"out = out[:, :n_heads{k}]"]
        aux = None
        if o.aux == "order":
            aux = f"order{k}"
            lines.append(f"{aux} = torch.arange({q}.shape[0] - 1, -1, -1)")
        elif o.aux == "key":
            aux = f"row_key{k}"
            lines.append(f"{aux} = {q}[:, 0, 0]")
        ins = {"q": [q], "idx": [i], "both": [q, i]}[target]
        outs = [f"{'q' if x == q else 'idx'}_s{k}" for x in ins]
        if op == "index_copy_into":
            for x, y in zip(ins, outs):
                lines += [f"{y} = torch.empty_like({x})", f"{y}.index_copy_(0, {aux}, {x})"]
        if q == i:  # never: names differ
            raise AssertionError
        expr = lambda x: o.template.format(x=x, a=aux, h=f"{x}.shape[0] // 2")  # noqa: E731
        if form in ("lambda", "nested_def", "module_func", "sibling_func", "method", "mixin_file_method"):
            defs, fn = self._function(f, form, o.template.format(x="t", a="a", h="t.shape[0] // 2"), aux is not None,
                                      where, has_self)
            lines += defs
            for x, y in zip(ins, outs):
                lines.append(f"{y} = {fn}({x}{', ' + aux if aux else ''})")
        elif form == "match_capture":
            if len(ins) == 2:
                lines += [f"match ({expr(ins[0])}, {expr(ins[1])}):", f"    case ({outs[0]}, {outs[1]}):", "        pass"]
            else:
                lines += [f"match {expr(ins[0])}:", f"    case {outs[0]}:", "        pass"]
        elif form == "walrus":
            for x, y in zip(ins, outs):
                lines += [f"if ({y} := {expr(x)}) is None:", '    raise RuntimeError("no rows")']
        elif form == "conditional":
            for x, y in zip(ins, outs):
                lines.append(f"{y} = {expr(x)} if {x}.shape[0] > 0 else {x}")
        elif form == "tuple_unpack":
            lines.append(f"{', '.join(outs)} = {', '.join(expr(x) for x in ins)}")
        elif op == "index_copy_into":
            pass
        elif form == "inplace_direct":
            for x, y in zip(ins, outs):
                lines += [f"{y} = {x}.clone()", f"{y}.copy_({expr(y)})"]
        elif form == "inplace_alias":
            for x, y in zip(ins, outs):
                lines += [f"{y} = {x}.clone()", f"alias{k} = {y}", f"alias{k}.copy_({expr(f'alias{k}')})"]
        elif form == "inplace_loop":
            lines.append(f"{', '.join(outs)}{',' if len(outs) == 1 else ''} = {', '.join(x + '.clone()' for x in ins)}"
                         + ("," if len(ins) == 1 else ""))
            lines += [f"for buf{k} in ({', '.join(outs)},):", f"    buf{k}.copy_({expr(f'buf{k}')})"]
        else:  # direct
            for x, y in zip(ins, outs):
                lines.append(f"{y} = {expr(x)}")
        for x, y in zip(ins, outs):
            if x == q:
                q = y
            else:
                i = y
        return lines, q, i, []

    def index_step_lines(self, f: _File, st: IStep, i: str, where: str, has_self: bool):
        op, form, _ = st
        o = INDEX_OPS[op]
        if form == "direct":
            return [f"idx_v = {o.template.format(x=i)}"], "idx_v"
        if form == "inplace_direct":
            return [f"idx_v = {i}.clone()", f"idx_v.copy_({o.template.format(x='idx_v')})"], "idx_v"
        defs, fn = self._function(f, form, o.template.format(x="t"), False, where, has_self)
        return defs + [f"idx_v = {fn}({i})"], "idx_v"

    def steps(self, f: _File, loc: str, q: str, i: str, where: str, has_self: bool):
        lines, posts = [], []
        for st in self.steps_at(loc):
            l, q, i, p = self.row_step(f, st, q, i, where, has_self)
            lines += l
            posts += p
        ist = self.index_at(loc)
        if ist is not None:
            l, i = self.index_step_lines(f, ist, i, where, has_self)
            lines += l
        return lines, q, i, posts

    # -- the kernel call ---------------------------------------------------------------------
    def kernel_call(self, q: str, kv: str, i: str, scale: str, lam: bool = False) -> List[str]:
        k, form = self.callee(), self.s.kernel_call
        args = {
            "keywords": f"q={q}, kv={kv}, indices={i}, sm_scale={scale}",
            "positional": f"{q}, {kv}, {i}, {scale}",
            "keywords_reordered": f"sm_scale={scale}, indices={i}, q={q}, kv={kv}",
            "mixed": f"{q}, {kv}, indices={i}, sm_scale={scale}",
            "with_dv": f"{q}, {kv}, {i}, {scale}, d_v={kv}.shape[-1]",
            "attn_sink_none": f"q={q}, kv={kv}, indices={i}, sm_scale={scale}, attn_sink=None",
            "kwargs_dict": f"{q}, {kv}, {i}, **kernel_kwargs",
            "star_args": "*kernel_args",
        }.get(form, f"q={q}, kv={kv}, indices={i}, sm_scale={scale}")
        if lam:
            if form == "kwargs_dict":
                args = f'{q}, {kv}, {i}, **{{"sm_scale": {scale}}}'
            elif form == "star_args":
                args = f"*({q}, {kv}, {i}, {scale})"
            return [f"{k}({args})[0]"]
        pre = []
        if form == "kwargs_dict":
            pre = [f'kernel_kwargs = {{"sm_scale": {scale}}}']
        if form == "star_args":
            pre = [f"kernel_args = ({q}, {kv}, {i}, {scale})"]
        if form == "indexed_result":
            return pre + [f"out = {k}({args})[0]  # SITE"]
        if form == "tuple_result":
            return pre + [f"result = {k}({args})  # SITE", "out = result[0]"]
        if form == "partial":
            # a call through a local partial of the kernel is the kernel's call, and the site
            return [f"attend_kernel = functools.partial({k}, sm_scale={scale})",
                    f"out, _, _ = attend_kernel({q}, {kv}, {i})  # SITE"]
        if form == "local_alias":
            # the call through the alias is the site (an alias whose calls are all checked is not one)
            return [f"kernel = {k}", f"out, _, _ = kernel({q}, {kv}, {i}, {scale})  # SITE"]
        return pre + [f"out, _, _ = {k}({args})  # SITE"]

    def kernel_block(self, f: _File, q: str, kv: str, i: str, scale: str, where: str, has_self: bool,
                     helper_loc: bool) -> List[str]:
        """The statements from the helper's entry to its return (or the call site's part of forward)."""
        s, n = self.s, self.n
        lines: List[str] = []
        if s.kernel_call == "partial":
            f.std.add("functools")
        posts: List[str] = []
        if helper_loc:
            if "early_return" in s.edits:
                lines += [f"if {q}.shape[0] == 0:", f"    return {q}.new_zeros({q}.shape)"]
            lines += [f"{n['qi']} = {q}", f"{n['ii']} = {i}"]
            q, i = n["qi"], n["ii"]
            more, q, i, posts = self.steps(f, "helper", q, i, where, has_self)
            lines += more
        lines += self.width_read(i, has_self)
        if "log" in s.edits:
            f.std.add("logging")
            lines.append(f'logger.debug("sparse prefill over %d rows", {q}.shape[0])')
        if "assert" in s.edits:
            lines.append(f'assert {q}.shape[0] == {i}.shape[0], "q and indices rows differ"')
        lines += self.kernel_call(q, kv, i, scale)
        lines += list(reversed(posts))
        if "assert" in s.edits:
            lines.append(f"assert out.shape[0] == {i}.shape[0]")
        if "log" in s.edits:
            lines.append('logger.debug("sparse prefill done")')
        return lines

    def local_import(self) -> List[str]:
        return ["from sgl_kernel.flash_mla import flash_mla_sparse_fwd", ""] if self.s.spelling == "local_import" else []

    # -- the helper --------------------------------------------------------------------------
    def decorator_lines(self, f: _File) -> List[str]:
        d, n = self.s.decorator, self.n
        if d == "none":
            return []
        if d == "no_grad":
            return ["@torch.no_grad()"]
        if d == "inference_mode":
            return ["@torch.inference_mode()"]
        me = "self, " if self.helper_is_method else ""
        args = f"{n['hq']}, {n['hkv']}, {n['hidx']}, {n['hscale']}"
        if d == "unknown_fixed":
            f.add(f'def fixed_signature(fn):\n    """This fork\'s profiler hook."""\n\n'
                  f"    def wrapper({me}{args}):\n        return fn({me}{args})\n\n    return wrapper")
            return ["@fixed_signature"]
        if d == "factory_fixed":
            f.add(f'def profiled(tag="sparse"):\n    """This fork\'s profiler hook, per call site."""\n\n    def deco(fn):\n'
                  f"        def wrapper({me}{args}):\n            return fn({me}{args})\n\n        return wrapper\n\n"
                  "    return deco")
            return ["@profiled()"]  # called with no arguments, as @torch.no_grad() is
        if d == "factory_varargs":
            f.std.add("functools")
            f.add("def profiled(tag):\n    def deco(fn):\n        @functools.wraps(fn)\n        def wrapper(*args, **kwargs):\n"
                  "            return fn(*args, **kwargs)\n\n        return wrapper\n\n    return deco")
            return ['@profiled("sparse_prefill")']
        if d == "wraps_varargs":
            f.std.add("functools")
            f.add("def traced(fn):\n    @functools.wraps(fn)\n    def wrapper(*args, **kwargs):\n"
                  "        return fn(*args, **kwargs)\n\n    return wrapper")
            return ["@traced"]
        if d == "imported_varargs":
            self.extra.append(("adv_deco.py", "import functools\n\n\ndef traced(fn):\n    @functools.wraps(fn)\n"
                               "    def wrapper(*args, **kwargs):\n        return fn(*args, **kwargs)\n\n    return wrapper\n"))
            f.imp("from adv_deco import traced")
            return ["@traced"]
        # wraps_reorder
        f.std.add("functools")
        f.add(f"def decode_rows_first(fn):\n    @functools.wraps(fn)\n"
              f"    def wrapper({me}{args}, **kwargs):\n"
              f"        order = torch.arange({n['hq']}.shape[0] - 1, -1, -1)\n"
              f"        out = fn({me}{n['hq']}[order], {n['hkv']}, {n['hidx']}[order], {n['hscale']}, **kwargs)\n"
              f"        return out[order] if out.shape[0] == order.shape[0] else out\n\n    return wrapper")
        return ["@decode_rows_first"]

    def helper_def(self, f: _File, name: str) -> List[str]:
        n = self.n
        has_self = self.helper_is_method or self.lay == "nested_helper"
        lines = self.decorator_lines(f)
        lines.append(f"def {name}({', '.join(self.helper_params())}){self.ret_ann()}:")
        body = self.local_import() + self.kernel_block(f, n["hq"], n["hkv"], n["hidx"], n["hscale"],
                                                        "helper", has_self, True)
        return lines + _ind(body + ["return out"])

    # -- the caller --------------------------------------------------------------------------
    def helper_callee(self) -> str:
        r, name = self.s.reflection, self.helper_name
        if self.helper_is_method:
            return 'getattr(self, "_forward_" + "flashmla_sparse")' if r == "getattr_call" else f"self.{name}"
        if self.lay == "function_helper" and r == "getattr_call":
            return 'globals()["sparse_" + "attend"]'
        return name

    def helper_call(self, q: str, i: str) -> str:
        n, h = self.n, self.helper_callee()
        kv, sc = n["kv"], n["scale"]
        if self.lay == "lambda_helper":
            return f"{h}({q}, {i})"
        hq, hkv, hidx, hs = n["hq"], n["hkv"], n["hidx"], n["hscale"]
        w = ", topk_length=TOPK" if self.s.width == "param_passed" else ""
        return h + "(" + {
            "keywords": f"{hq}={q}, {hkv}={kv}, {hidx}={i}, {hs}={sc}{w}",
            "positional": f"{q}, {kv}, {i}, {sc}{w}",
            "keywords_reordered": f"{hs}={sc}, {hidx}={i}, {hkv}={kv}, {hq}={q}{w}",
            "kwargs_dict": f"**dict({hq}={q}, {hkv}={kv}, {hidx}={i}, {hs}={sc}{w})",
        }[self.s.helper_call] + ")"

    def binding_lines(self, name: str = "metadata") -> List[str]:
        b = self.s.binding
        if b in ("param", "optional_param"):
            return []
        if b == "self_attr":
            return [f"{name} = self.forward_metadata"]
        if b == "only_in_if":
            return ["if self.layer_id < 0:  # the draft layers only", f"    {name} = self.forward_metadata"]
        if b == "rebound_to_none":
            return [f"{name} = self.forward_metadata", f"self.steps = {name} is not None",
                    f"{name} = None  # released: the rest of the step does not need it"]
        if b == "deleted":
            return [f"{name} = self.forward_metadata", f"self.steps = {name} is not None", f"del {name}"]
        if b == "rebound_other":
            return [f"{name} = self.forward_metadata", f"{name} = self.metadata_by_layer  # the name now holds the table"]
        if b == "getattr_default":
            return [f'{name} = getattr(self, "forward_metadata", None)']
        return [f"{name} = self.metadata_by_layer.get(self.layer_id)"]

    def decl_text(self) -> Optional[str]:
        return {"none": None, "class": "DSAMetadata", "string": '"DSAMetadata"', "optional": "Optional[DSAMetadata]",
                "union": "Union[DSAMetadata, MLAMetadata]", "prefix_name": "DSAMetadataLite", "imported": "DSAMetadata",
                "imported_optional": "Optional[DSAMetadata]"}[self.s.decl]

    def forward_def(self, f: _File) -> List[str]:
        s, n = self.s, self.n
        q, kv, i, sc = n["q"], n["kv"], n["idx"], n["scale"]
        params = ["self", q, kv, i, sc]
        mb = s.micro_batch != "none"
        meta_name = "batch_metadata" if mb else "metadata"
        decl = self.decl_text()
        if s.binding == "param":
            params.append(meta_name + (f": {decl}" if decl else ""))
        elif s.binding == "optional_param":
            if decl and not decl.startswith("Optional"):
                decl = f"Optional[{decl}]"
            params.append(meta_name + (f": {decl} = None" if decl else "=None"))
        if self.lay == "in_call":
            params += self.width_param()
        pre: List[str] = []
        if self.lay in ("in_call", "lambda_helper"):
            pre += self.local_import()
        pre += self.binding_lines(meta_name)
        body: List[str] = []
        more, q, i, posts = self.steps(f, "caller", q, i, "caller", True)
        body += more
        if self.lay == "nested_helper":
            body += [""] + self.helper_def(f, "attend") + [""]
        if self.lay == "lambda_helper":
            n2 = self.n
            body.append(f"attend = lambda {n2['hq']}, {n2['hidx']}: "
                        + self.kernel_call(n2["hq"], kv, n2["hidx"], sc, lam=True)[0] + "  # SITE")
        if mb:
            body += self.micro_batches(f, q, kv, i, sc, meta_name)
        elif self.lay == "in_call":
            body += self.kernel_block(f, q, kv, i, sc, "caller", True, False)
        else:
            body.append(f"out = {self.helper_call(q, i)}")
        tail = list(reversed(posts)) + ["return out"]
        if s.binding == "dict_get_truthy" and not mb:
            # the path without metadata is written out twice: the same call, the same output
            body = ["if not metadata:"] + _ind(body + tail) + body
        return [f"def forward({', '.join(params)}):"] + _ind(pre + body + tail)

    def micro_batches(self, f: _File, q: str, kv: str, i: str, sc: str, full: str) -> List[str]:
        s = self.s
        kind = s.micro_batch
        split = kind.split("_", 2)[-1]
        lines = [f"lens = {full}.{self.field}", f"h = {q}.shape[0] // 2"]
        if split == "slices":
            lines += [f"q_parts = [{q}[:h], {q}[h:]]", f"idx_parts = [{i}[:h], {i}[h:]]", "lens_parts = [lens[:h], lens[h:]]"]
        elif split == "chunk":
            lines += [f"q_parts, idx_parts = {q}.chunk(2), {i}.chunk(2)", "lens_parts = lens.chunk(2)"]
        elif split == "split":
            lines += [f"q_parts, idx_parts = torch.split({q}, h), torch.split({i}, h)", "lens_parts = torch.split(lens, h)"]
        elif split == "narrow":
            lines += [f"q_parts = [{q}.narrow(0, 0, h), {q}.narrow(0, h, {q}.shape[0] - h)]",
                      f"idx_parts = [{i}.narrow(0, 0, h), {i}.narrow(0, h, {i}.shape[0] - h)]",
                      "lens_parts = [lens.narrow(0, 0, h), lens.narrow(0, h, lens.shape[0] - h)]"]
        else:  # padded: the second micro-batch padded to the first one's size (8 rows: 5 and 3 + 2)
            lines += [f"h = ({q}.shape[0] + 1) // 2 + 1", f"pad = 2 * h - {q}.shape[0]",
                      f"q_parts = [{q}[:h], torch.cat([{q}[h:], {q}.new_zeros((pad, *{q}.shape[1:]))])]",
                      f"idx_parts = [{i}[:h], torch.cat([{i}[h:], {i}.new_full((pad, *{i}.shape[1:]), -1)])]",
                      "lens_parts = [lens[:h], torch.cat([lens[h:], lens.new_zeros(pad)])]"]
        lines.append("keep = [part.shape[0] for part in q_parts]" if split != "padded" else
                     f"keep = [h, {q}.shape[0] - h]")
        one = kind.startswith("one_meta")
        if one:
            lines.append(f"metadata = DSAMetadata({self.field}=lens_parts[0])")
        lines += ["outs = []", "for part in range(len(q_parts)):"]
        inner = [] if one else [f"metadata = DSAMetadata({self.field}=lens_parts[min(part, len(lens_parts) - 1)])"]
        inner.append("q_mb, idx_mb = q_parts[part], idx_parts[part]")
        if self.lay == "in_call":
            inner += self.kernel_block(f, "q_mb", kv, "idx_mb", sc, "caller", True, False)
        else:
            inner.append(f"out = {self.helper_call('q_mb', 'idx_mb')}")
        inner.append("outs.append(out[: keep[part]])")
        lines += _ind(inner)
        lines.append("out = torch.cat(outs)")
        return lines

    # -- classes -------------------------------------------------------------------------------
    def backend_class(self, f: _File) -> List[str]:
        s = self.s
        body = ['"""The DSA attention backend."""', ""]
        decl = self.decl_text()
        if decl and s.binding in ("self_attr", "getattr_default", "only_in_if", "rebound_to_none", "deleted", "rebound_other"):
            body += [f"forward_metadata: {decl}", ""]
        elif decl and s.binding in ("dict_get", "dict_get_truthy"):
            body += [f"metadata_by_layer: Dict[int, {decl}]", ""]
        # SGLang's shape: the metadata arrives per batch through init_forward_metadata
        init = ["def __init__(self):"] + (["    super().__init__()"] if s.base != "none" else []) + \
            ["    self.metadata_by_layer = {}", "    self.layer_id = 0"]
        if s.spelling == "self_attr" and s.rebind == "instance_attr":
            init.append('    self.flash_mla = fm if os.environ.get("ADV_LEGACY") != "1" else '
                        "types.SimpleNamespace(flash_mla_sparse_fwd=_legacy_sparse_fwd)")
        elif s.spelling == "self_attr":
            init.append("    self.flash_mla = fm")
        if s.width == "self_attr":
            init.append("    self.topk_length = TOPK")
        if s.graph != "eager":  # sglang's shape: each capture's metadata kept by batch size
            init.append("    self.graph_metadata = {}")
        body += init + ["", "def init_forward_metadata(self, metadata):", "    self.forward_metadata = metadata",
                        "    self.metadata_by_layer = {} if metadata is None else {0: metadata}"]
        if s.graph == "graph_eager_files":  # kept by batch size for a later replay to refresh
            body += [f"    self.graph_metadata[metadata.{self.field}.shape[0]] = metadata"]
        body += [""]
        if s.graph != "eager":
            body += self.graph_methods() + [""]
        body += self.forward_def(f)
        if self.lay == "method_helper":
            body += [""] + self.helper_def(f, self.helper_name)
        for extra in f.classes.get("Backend", []):
            body += [""] + _block(extra)
        bases = []
        if self.lay in ("mixin_same", "mixin_file"):
            bases.append("SparseMixin")
        if "adv_rows_mixin.py" in self.files:
            bases.append("RowsMixin")
            f.imp("from adv_rows_mixin import RowsMixin")
        if s.base != "none":
            bases.append("AttentionBackend")
        head = f"class Backend({', '.join(bases)}):" if bases else "class Backend:"
        return [head] + _ind(body)

    def graph_methods(self) -> List[str]:
        fld, g = self.field, self.s.graph
        make = self.fs("seq_lens")
        capture = ["def init_forward_metadata_capture_cuda_graph(self, seq_lens):",
                   f"    self.graph_metadata[seq_lens.shape[0]] = DSAMetadata({fld}={make})",
                   "    self.forward_metadata = self.graph_metadata[seq_lens.shape[0]]", ""]
        if g.startswith("graph_apply_"):
            update = f"metadata.{fld}.copy_({make})" if g == "graph_apply_inplace" else f"metadata.{fld} = {make}.clone()"
            return capture + ["def init_forward_metadata_replay_cuda_graph(self, seq_lens):",
                              "    self._apply_graph_metadata(seq_lens)", "",
                              "def _apply_graph_metadata(self, seq_lens):",
                              "    metadata = self.graph_metadata[seq_lens.shape[0]]", f"    {update}",
                              "    self.forward_metadata = metadata"]
        replay = {"graph_inplace": f"self.graph_metadata[seq_lens.shape[0]].{fld}.copy_({make})",
                  "graph_pooled": f"self.graph_metadata[seq_lens.shape[0]].{fld}.copy_({make})",
                  "graph_eager_files": f"self.graph_metadata[seq_lens.shape[0]].{fld}.copy_({make})",
                  "graph_replace": f"self.forward_metadata = DSAMetadata({fld}={make}.clone())",
                  "graph_replace_field": f"self.forward_metadata.{fld} = {make}.clone()"}[g]
        return capture + ["def init_forward_metadata_replay_cuda_graph(self, seq_lens):", f"    {replay}"]

    def fs(self, e: str) -> str:
        w = "DSA_INDEX_TOPK"  # the engine's form: the width read from the model's config by its getter
        return {"harness": f"{e}", "clamp_f": f"torch.clamp({e}, max={w}).to(torch.int32)",
                "clamp_m": f"{e}.clamp(max={w}).to(torch.int32)",
                "minimum": f"torch.minimum({e}, torch.full_like({e}, {w})).to(torch.int32)",
                "unclipped": f"{e}.to(torch.int32)",
                "clamp_wide": f"torch.clamp({e}, max=2 * {w}).to(torch.int32)"}[self.s.field_source]

    def subclass_block(self) -> List[str]:
        s, n = self.s, self.n
        kind = s.subclass.split("_", 1)[1]
        args = f"{n['hq']}, {n['hkv']}, {n['hidx']}, {n['hscale']}"
        name = "_forward_flashmla_sparse"
        if kind == "fixed":
            sig, body = args, [f"return super().{name}({args})"]
        elif kind == "kwargs_plain":
            sig, body = args + ", **kwargs", [f"return super().{name}({args}, **kwargs)"]
        elif kind == "topk_param":
            sig, body = args + ", topk_length=None", [f"return super().{name}({args})"]
        else:  # kwargs_reorder
            sig = args + ", **kwargs"
            body = [f"order = torch.arange({n['hq']}.shape[0] - 1, -1, -1)",
                    f"out = super().{name}({n['hq']}[order], {n['hkv']}, {n['hidx']}[order], {n['hscale']}, **kwargs)",
                    "return out[order] if out.shape[0] == order.shape[0] else out"]
        return ["class FastBackend(Backend):", '    """This deployment\'s variant of the backend."""', "",
                f"    def {name}(self, {sig}):"] + _ind(body, 8)

    def meta_classes(self, f: _File) -> List[str]:
        """The metadata dataclasses the module declares (SGLang's DSAMetadata is one)."""
        s, fld = self.s, self.field
        need_dsa = s.meta_class == "module" or s.decl in ("class", "string", "optional", "union", "prefix_name") \
            or (s.micro_batch != "none" and s.meta_class != "imported") or (s.graph != "eager" and s.meta_class != "imported")
        kinds = meta_kinds(s)
        out = []
        dsa = ["@dataclass", "class DSAMetadata:", '    """Per-batch metadata of the DSA backend."""', "",
               f"    {fld}: torch.Tensor", "    page_table_1: Optional[torch.Tensor] = None"]
        if s.graph == "graph_pooled":
            dsa += ["    _kept: ClassVar[Optional[\"DSAMetadata\"]] = None", "",
                    "    def __new__(cls, *args, **kwargs):  # one record reused: no allocation per batch",
                    "        if cls._kept is None:", "            cls._kept = super().__new__(cls)",
                    "        return cls._kept"]
        if need_dsa and s.meta_class != "imported":
            f.imp("from dataclasses import dataclass")
            out += dsa + ["", ""]
        if s.meta_class == "imported":
            self.extra.append(("adv_meta.py", "from dataclasses import dataclass\nfrom typing import ClassVar, Optional\n\nimport torch\n\n\n"
                               + "\n".join(dsa) + "\n"))
            f.imp("from adv_meta import DSAMetadata")
        for name, doc, needed in (("MLAMetadata", "Metadata of the plain MLA layers (no top-k).",
                                   s.decl == "union" or "no_field" in kinds),
                                  ("DSAMetadataLite", "The draft model's metadata (no clipped seqlens).",
                                   s.decl == "prefix_name" or "lite" in kinds)):
            if needed:
                f.imp("from dataclasses import dataclass")
                out += ["@dataclass", f"class {name}:", f'    """{doc}"""', "",
                        "    page_table_1: Optional[torch.Tensor] = None", "", ""]
        if "int64" in kinds or "padded" in kinds:  # the field there, from another module, not what the kernel takes
            self.extra.append(("adv_draft.py", DRAFT_META.format(field=fld)))
            f.imp("from adv_draft import draft_metadata")
        return out

    def full_metadata(self, lens: str) -> str:
        """The metadata object built from `lens` (per field_source), in the module's class."""
        return f"DSAMetadata({self.field}={self.fs(lens)})"

    def build_metadata(self) -> List[str]:
        s, fld = self.s, self.field
        kinds = meta_kinds(s)
        if s.meta_class == "harness":
            full = "inp.metadata"  # the harness's object: its field holds the clipped counts
        elif s.field_source == "harness":
            full = f"DSAMetadata({fld}=inp.metadata.{fld})"  # the field read off the engine's own metadata
        else:
            full = self.full_metadata("seq_lens")
        lines = ["def _build_metadata(inp):", '    kind = os.environ.get("ADV_META", "full")']
        if "seq_lens" in full:
            lines.append("    seq_lens = _seq_lens(inp)")
        if "none" in kinds:
            lines += ['    if kind == "none":', "        return None"]
        if "no_field" in kinds:
            lines += ['    if kind == "no_field":', "        return MLAMetadata(page_table_1=inp.metadata.page_table_1)"]
        if "lite" in kinds:
            lines += ['    if kind == "lite":', "        return DSAMetadataLite(page_table_1=inp.metadata.page_table_1)"]
        if "int64" in kinds or "padded" in kinds:  # a checked guard must fall back to the full width
            lines += ['    if kind in ("int64", "padded"):', "        return draft_metadata(inp, kind)"]
        if "full" in kinds:
            lines.append(f"    return {full}")
        else:
            lines.append('    raise AssertionError("no run builds this metadata")')
        return lines

    def entry(self) -> List[str]:
        s = self.s
        body = []
        cls = "Backend"
        if s.subclass != "none":
            cls = "FastBackend"
            where = s.subclass.split("_", 1)[0]
            if where == "sibling":
                body.append("from adv_fast_backend import FastBackend")
            elif where == "package":
                body.append("from adv_ext.fast.backend_ext import FastBackend")
        if s.graph != "eager":
            body += ["from adv_graph_sim import Graph", "",
                     f"backend = {cls}()",
                     "# captured while the metadata holds another batch's lengths (each row's, rolled)",
                     "backend.init_forward_metadata_capture_cuda_graph(_seq_lens(inp).roll(1, 0))",
                     "graph = Graph(lambda: backend.forward(inp.q, inp.kv, inp.indices, inp.sm_scale))",
                     "graph.capture()"]
            if s.graph in ("graph_pooled", "graph_eager_files"):  # an eager step's metadata, between capture and replay
                body += ["seq_lens = _seq_lens(inp)", f"backend.init_forward_metadata({self.full_metadata('seq_lens')})"]
            body += ["backend.init_forward_metadata_replay_cuda_graph(_seq_lens(inp))",
                     "return graph.replay()"]
        elif s.binding in ("param", "optional_param"):
            body += ["batch_meta = _build_metadata(inp)",
                     f"return {cls}().forward(inp.q, inp.kv, inp.indices, inp.sm_scale, batch_meta)"]
        else:
            body += [f"backend = {cls}()"]
            if s.base != "none" and "none" in meta_kinds(s):  # no metadata yet: what the base class set stays
                body += ["batch_meta = _build_metadata(inp)", "if batch_meta is not None:",
                         "    backend.init_forward_metadata(batch_meta)"]
            else:
                body.append("backend.init_forward_metadata(_build_metadata(inp))")
            body.append("return backend.forward(inp.q, inp.kv, inp.indices, inp.sm_scale)")
        return ["def entry(inp):"] + _ind(body)

    def reflection(self, f: _File) -> List[str]:
        s, n = self.s, self.n
        r = s.reflection
        if r in ("none", "getattr_call"):
            return []
        me = "self, " if self.helper_is_method else ""
        args = f"{n['hq']}, {n['hkv']}, {n['hidx']}, {n['hscale']}"
        fixed = (f"def _fixed_sparse({me}{args}):\n    \"\"\"This deployment's own sparse path (fixed signature, the old kernel).\"\"\"\n"
                 f"    from sgl_kernel.flash_mla import legacy_fwd\n\n    return legacy_fwd({args})[0]")
        target = "Backend" if self.helper_is_method else "sys.modules[__name__]"
        hname = self.helper_name
        cut = len(hname) // 2
        if r in ("sibling_patch", "sibling_setattr"):  # in another file: an attribute write, or setattr with a computed name
            what = "cls" if self.helper_is_method else "module"
            write = f"{what}.{hname} = _fixed_sparse" if r == "sibling_patch" else \
                f'name = "{hname}"\n    setattr({what}, name, _fixed_sparse)'
            self.extra.append(("adv_patches.py", '"""Patches this fork installs at start-up on some deployments."""\n\n\n'
                               + fixed + f"\n\n\ndef install({what}):\n    {write}\n"))
            f.imp("import adv_patches")
            if not self.helper_is_method:
                f.std.add("sys")
            return ['if os.environ.get("ADV_PATCH") == "1":', f"    adv_patches.install({target})"]
        f.add(fixed)
        if not self.helper_is_method:
            f.std.add("sys")
        line = {"setattr_computed": f'setattr({target}, "{hname[:cut]}" + "{hname[cut:]}", _fixed_sparse)',
                "setattr_literal": f'setattr({target}, "{hname}", _fixed_sparse)',
                "attr_assign": f"{target}.{hname} = _fixed_sparse",
                "globals_helper": f'globals()["{hname}"] = _fixed_sparse'}[r]
        return ['if os.environ.get("ADV_PATCH") == "1":', f"    {line}"]

    # -- assembling files ----------------------------------------------------------------------
    def assemble(self, f: _File, body: List[str], head: Optional[str]) -> str:
        out = []
        if head:
            out.append(head)
        if "future_annotations" in self.s.edits and f.name in (MODULE, self.kfile):
            out.append("from __future__ import annotations\n")
        std = sorted(f.std - {"torch"})
        out += [f"import {m}" for m in std]
        out.append("import torch")
        typing = [t for t in ("ClassVar", "Dict", "Optional", "Union") if any(t + "[" in line for line in body)]
        if typing:
            out.append(f"from typing import {', '.join(typing)}")
        out += f.imports
        text = "\n".join(out) + "\n\n\n"
        if f.name == MODULE:
            text += "TOPK = 16\n"
            if self.s.field_source != "harness":
                text += WIDTH_FROM_CONFIG
            if self.s.width == "global":
                text += "topk_length = TOPK  # the indexer's width\n"
        if "logging" in f.std:
            text += "logger = logging.getLogger(__name__)\n"
        if f.name == MODULE or "logging" in f.std:
            text += "\n\n"
        text = text.replace("\n\n\n\n\n", "\n\n\n")
        if f.prelude:
            text += "\n\n\n".join(f.prelude) + "\n\n\n"
        text += "\n".join(body).rstrip() + "\n"
        return text

    def render(self) -> Tuple[str, Tuple[Tuple[str, str], ...]]:
        s = self.s
        head = HEAD.format(field=self.field)
        main = self.file(MODULE)
        main.std.add("os")
        if s.field_source != "harness":
            main.std.add("types")
        kf = self.file(self.kfile)
        kf.std.add("os")
        self.kernel_prelude(kf)
        if self.kfile != MODULE:
            kf.add("TOPK = 16" + ("\ntopk_length = TOPK  # the indexer's width" if s.width == "global" else ""))
        if self.kfile != MODULE:
            main.imp("from adv_sparse_mixin import SparseMixin")
        meta = self.meta_classes(main)
        base = ["class AttentionBackend:", '    """The engine\'s base backend."""', "", "    def __init__(self):",
                "        self.forward_metadata = None  # set by init_forward_metadata"]
        if s.base == "same_sets_none":
            meta = meta + base + ["", ""]
        elif s.base == "file_sets_none":
            self.extra.append(("adv_base.py", "\n".join(base) + "\n"))
            main.imp("from adv_base import AttentionBackend")
        # the helper (bodies first: they register preludes and imports)
        helper_blocks: List[str] = []
        if self.lay == "function_helper":
            helper_blocks = self.helper_def(main, self.helper_name)
        mixin: List[str] = []
        if self.lay in ("mixin_same", "mixin_file"):
            mixin = ["class SparseMixin:", '    """The sparse prefill path, shared by the DSA backends."""', ""] + \
                _ind(self.helper_def(kf, self.helper_name))
        backend = self.backend_class(main)
        refl = self.reflection(main)
        sub: List[str] = []
        if s.subclass != "none":
            where = s.subclass.split("_", 1)[0]
            block = self.subclass_block()
            if where == "same":
                sub = block
            else:
                text = "import torch\n\nfrom backend import Backend\n\n\n" + "\n".join(block) + "\n"
                if where == "sibling":
                    self.extra.append(("adv_fast_backend.py", text))
                else:
                    self.extra += [("adv_ext/__init__.py", ""), ("adv_ext/fast/__init__.py", ""),
                                   ("adv_ext/fast/backend_ext.py", text)]
        if s.graph != "eager":
            self.extra.append(("adv_graph_sim.py", GRAPH_SIM))
        seq = ["def _seq_lens(inp):", '    """Each row\'s sequence length (the indexer keeps at most TOPK of them)."""']
        seq.append("    return inp.lengths" if s.field_source == "harness" else
                   "    return torch.where(inp.lengths >= TOPK, inp.lengths + 11, inp.lengths)")
        body: List[str] = []
        body += meta
        if helper_blocks:
            body += helper_blocks + ["", ""]
        if mixin and self.kfile == MODULE:
            body += mixin + ["", ""]
        body += backend + ["", ""]
        if sub:
            body += sub + ["", ""]
        if refl:
            body += refl + ["", ""]
        body += seq + ["", ""] + self.build_metadata() + ["", ""] + self.entry()
        sources: Dict[str, str] = {}
        if self.kfile != MODULE:
            sources[self.kfile] = self.assemble(kf, mixin, None)
        source = self.assemble(main, body, head)
        for name, f in self.files.items():
            if name in (MODULE, self.kfile):
                continue
            cls_lines: List[str] = []
            for cname, methods in f.classes.items():
                cls_lines.append(f"class {cname}:")
                for j, m in enumerate(methods):
                    cls_lines += ([""] if j else []) + _ind(_block(m))
            sources[name] = self.assemble(f, cls_lines, None)
        files = tuple(self.extra) + tuple(sorted(sources.items()))
        return source, files


@functools.lru_cache(maxsize=512)
def render(s: Spec) -> Tuple[str, Tuple[Tuple[str, str], ...]]:
    """(backend.py's source, its sibling files) of one spec; deterministic."""
    return _Render(s).render()


def every_production() -> Dict[str, Tuple[str, ...]]:
    """Each production and its alternatives (for the coverage test and the report)."""
    out = {k: tuple(v) for k, v in _POOLS.items()}
    out["rows.op"], out["rows.form"], out["rows.target"], out["rows.loc"] = ROW_OP_NAMES, ROW_FORMS, TARGETS, LOCS
    out["index_step.op"], out["index_step.form"] = INDEX_OP_NAMES, INDEX_FORMS
    out["edits"] = EDITS
    return out


def productions_of(s: Spec) -> List[Tuple[str, str]]:
    """(production, alternative) pairs one spec uses."""
    out = [(k, getattr(s, k)) for k in _POOLS]
    for op, target, form, loc in s.rows:
        out += [("rows.op", op), ("rows.form", form), ("rows.target", target), ("rows.loc", loc)]
    if s.index_step:
        out += [("index_step.op", s.index_step[0]), ("index_step.form", s.index_step[1])]
    out += [("edits", e) for e in s.edits]
    return out
