"""`--lengths derived` (issue 39): where the reference fix is not proven, each row's topk_length derived at the
call from the very indices the kernel reads. What it fixes, what stays manual, how the indices are read once,
and that the lengths it writes are each row's last valid slot + 1 (run on CPU here; the real kernel: smoke)."""
import subprocess
import sys
import types

import pytest
import torch

from topk_migrate.api import migrate_source
from topk_migrate.codemods.pass_topk_length import derived

PIN = "sglang-kernel==0.4.6"
HEAD = "import torch\nfrom sgl_kernel.flash_mla import flash_mla_sparse_fwd\n\n\n"


@pytest.fixture(autouse=True)
def _alone(tmp_path, monkeypatch):
    """Each module is checked as a file of an empty project (not of this checkout, whose bench scripts differ)."""
    monkeypatch.chdir(tmp_path)


def run(body: str, lengths: str = "derived", head: str = HEAD):
    m = migrate_source(head + body, "backend.py", kernel=PIN, lengths=lengths)
    return m, [s for s in m.sites if s.rule == "pass-topk-length"]


def statuses(sites):
    return [s.status.value for s in sites]


def test_without_the_option_a_site_the_derived_lengths_fix_says_so_and_nothing_changes():
    m, sites = run("def f(q, kv, idx):\n    return flash_mla_sparse_fwd(q, kv, idx, 1.0)\n", lengths="reference")
    assert statuses(sites) == ["manual"] and "`--lengths derived` would fix it" in sites[0].reason
    assert not m.changed


def test_a_site_without_metadata_passes_lengths_derived_from_its_own_indices():
    m, sites = run("def f(q, kv, idx):\n    return flash_mla_sparse_fwd(q, kv, idx, 1.0)\n")
    assert statuses(sites) == ["fixable"] and "derived from the call's indices" in sites[0].reason
    assert f"flash_mla_sparse_fwd(q, kv, idx, 1.0, topk_length={derived.derived_value('idx')})" in m.new_source


def test_a_proven_reference_fix_is_kept():
    m, sites = run("def f(q, kv, idx, metadata):\n    return flash_mla_sparse_fwd(q, kv, idx, 1.0)\n"
                   "# metadata.dsa_cache_seqlens_int32\n")
    assert statuses(sites) == ["fixable"] and "metadata.dsa_cache_seqlens_int32" in sites[0].reason
    assert "arange" not in m.new_source


@pytest.mark.parametrize("call,bound", [
    ("flash_mla_sparse_fwd(q, kv, idx.unsqueeze(1), 1.0)", "idx.unsqueeze(1)"),  # an expression
    ("flash_mla_sparse_fwd(q=q, kv=kv, indices=self.idx, sm_scale=1.0)", "self.idx"),  # an attribute: read once
    ("flash_mla_sparse_fwd(q, kv, idx, 1.0, (idx := other))", "idx"),  # a name a later argument rebinds
])
def test_indices_that_reading_again_may_not_reread_are_bound_once_where_the_call_evaluates_them(call, bound):
    m, sites = run(f"class B:\n    def f(self, q, kv, idx, other):\n        return {call}\n")
    assert statuses(sites) == ["fixable"], sites
    assert f"({derived.BOUND_NAME} := {bound})" in m.new_source
    assert derived.derived_value(derived.BOUND_NAME) in m.new_source
    compile(m.new_source, "backend.py", "exec")


def test_a_name_a_nested_function_may_rebind_is_bound_once():
    m, sites = run("def f(q, kv, idx):\n    def g():\n        nonlocal idx\n        idx = None\n        return 1.0\n"
                   "    return flash_mla_sparse_fwd(q, kv, idx, g())\n")
    assert statuses(sites) == ["fixable"]
    assert f"({derived.BOUND_NAME} := idx)" in m.new_source


def test_a_call_in_a_comprehensions_element_binds_its_indices_in_the_function():
    """`:=` in a comprehension's element binds in the function around it (PEP 572), once per call (round H2's
    chunked prefill); in any of its iterables Python refuses it."""
    m, sites = run("def f(qs, kv, idx):\n    return [flash_mla_sparse_fwd(q, kv, idx[i], 1.0) for i, q in enumerate(qs)]\n")
    assert statuses(sites) == ["fixable"] and f"({derived.BOUND_NAME} := idx[i])" in m.new_source
    compile(m.new_source, "backend.py", "exec")
    _, sites = run("def f(q, kv, idx):\n    return [o for r in range(2) for o in flash_mla_sparse_fwd(q, kv, idx[r], 1.0)]\n")
    assert statuses(sites) == ["manual"] and "comprehension's iterable" in sites[0].reason


def test_the_bound_name_taken_in_the_function_is_refused_by_validation():
    _, sites = run(f"def f(q, kv, idx):\n    {derived.BOUND_NAME} = 3\n"
                   f"    return flash_mla_sparse_fwd(q, kv, idx.view(-1), 1.0), {derived.BOUND_NAME}\n")
    assert statuses(sites) == ["manual"], sites


def test_a_module_without_import_torch_gets_the_derived_lengths_and_imports_nothing():
    """The derived lengths read no module name, so a module that never imports torch needs no import."""
    m, sites = run("def f(q, kv, idx):\n    return flash_mla_sparse_fwd(q, kv, idx, 1.0)\n",
                   head="from sgl_kernel.flash_mla import flash_mla_sparse_fwd\n\n\n")
    assert statuses(sites) == ["fixable"] and "import torch" not in m.new_source


@pytest.mark.parametrize("head", [
    HEAD + "if FLAG:\n    from .legacy import flash_mla_sparse_fwd\n\n\n",  # may be another function
    HEAD + "from legacy_ops import *\n\n\n",  # a star import after the kernel may rebind it
    HEAD.replace("sgl_kernel.flash_mla", "legacy_ops"),  # not a kernel module anything says takes topk_length
])
def test_kernel_and_identity_hazards_stay_manual(head):
    m, sites = run("def f(q, kv, idx):\n    return flash_mla_sparse_fwd(q, kv, idx, 1.0)\n", head=head)
    assert statuses(sites) == ["manual"] and not m.changed


def test_a_kernel_too_old_stays_manual():
    m = migrate_source(HEAD + "def f(q, kv, idx):\n    return flash_mla_sparse_fwd(q, kv, idx, 1.0)\n", "backend.py",
                       kernel="sglang-kernel==0.4.2", lengths="derived")
    assert [s.status.value for s in m.sites] == ["manual"] and "too old" in m.sites[0].reason


def test_rows_that_cannot_be_proven_get_the_derived_lengths():
    """q's rows reordered at the call: the reference lengths would be another row's; the derived are the row's own."""
    m, sites = run("def f(q, kv, idx, metadata, order):\n    q = q[order]\n"
                   "    return flash_mla_sparse_fwd(q, kv, idx[order], 1.0)\n# metadata.dsa_cache_seqlens_int32\n")
    assert statuses(sites) == ["fixable"] and "rows" in sites[0].reason


def test_a_rewrite_validation_refuses_falls_back_to_the_derived_lengths():
    """`topk_length` is read from a global in the helper: the reference rewrite's parameter would capture it."""
    body = ("topk_length = 7\n\n\ndef forward(q, kv, idx, metadata):\n    return helper(q, kv, idx)\n\n\n"
            "def helper(q, kv, idx):\n    print(topk_length)\n    return flash_mla_sparse_fwd(q, kv, idx, 1.0)\n"
            "# metadata.dsa_cache_seqlens_int32\n")
    ref, ref_sites = run(body, lengths="reference")
    assert statuses(ref_sites) == ["manual"], ref_sites
    m, sites = run(body)
    assert statuses(sites) == ["fixable"] and "derived" in sites[0].reason
    assert derived.lengths_of("idx") in m.new_source and "def helper(q, kv, idx):" in m.new_source


def test_the_config_key_and_the_command_line_choose_it(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.topk-migrate]\nkernel = "sglang-kernel==0.4.6"\nlengths = "derived"\n')
    f = tmp_path / "backend.py"
    f.write_text(HEAD + "def f(q, kv, idx):\n    return flash_mla_sparse_fwd(q, kv, idx, 1.0)\n")
    cli = [sys.executable, "-m", "topk_migrate", "check"]
    by_config = subprocess.run([*cli, str(f)], capture_output=True, text=True)
    assert " fixable " in by_config.stdout, by_config.stdout + by_config.stderr
    by_flag = subprocess.run([*cli, "--lengths", "reference", str(f)], capture_output=True, text=True)
    assert " manual " in by_flag.stdout, by_flag.stdout + by_flag.stderr
    (tmp_path / "pyproject.toml").write_text('[tool.topk-migrate]\nlengths = "counted"\n')
    bad = subprocess.run([*cli, str(f)], capture_output=True, text=True)
    assert bad.returncode == 2 and "lengths: expected one of 'reference', 'derived'" in bad.stderr


def as_function(text: str, names=None):
    """`lambda indices: <text>` with `names` as its globals (torch alone by default), from its code object (no
    eval: this checkout is a project the tool reads, where an eval may rebind anything)."""
    scope = {"torch": torch} if names is None else names
    return types.FunctionType(compile(f"lambda indices: {text}", "<derived>", "eval"), scope)()


def _last_valid(indices: torch.Tensor) -> torch.Tensor:
    """Each row's last valid slot + 1, by a plain loop: what the kernel needs not to drop an entry."""
    flat = indices.flatten(1)
    return torch.tensor([max((i + 1 for i, v in enumerate(row.tolist()) if v >= 0), default=0) for row in flat],
                        dtype=torch.int32)


def _reads_exactly_the_valid_blocks(got: torch.Tensor, indices: torch.Tensor) -> bool:
    """From each row's last valid slot + 1 up to the end of its 64-slot block (the kernel's step): the kernel
    reads the same blocks as with the least length, so the same bits."""
    least = _last_valid(indices)
    most = ((least + 63) // 64 * 64).clamp(max=indices.shape[-1])
    return got.dtype == torch.int32 and got.shape == least.shape and bool(((least <= got) & (got <= most)).all())


@pytest.mark.parametrize("name", sorted(derived.FORMULATIONS))
def test_every_formulation_reads_exactly_the_blocks_holding_a_valid_slot_whatever_the_layout(name):
    g = torch.Generator().manual_seed(0)
    rows, width = 64, 256
    counts = torch.randint(0, width + 1, (rows,), generator=g)
    front = torch.full((rows, 1, width), -1, dtype=torch.int32)
    for r, n in enumerate(counts.tolist()):
        front[r, 0, :n] = torch.randperm(4 * width, generator=g)[:n].to(torch.int32)
    scattered = torch.stack([row[:, torch.randperm(width, generator=g)] for row in front])
    fn = as_function(derived.FORMULATIONS[name]("indices"))
    wider = torch.full((rows, 1, width + 128), -1, dtype=torch.int32)
    wider[:, :, 64:64 + width] = scattered
    strided = wider[:, :, 64:64 + width]  # a slice of a wider buffer: not contiguous
    permuted = scattered.permute(1, 0, 2).contiguous().permute(1, 0, 2)  # dense, rows not outermost
    for indices in (front, scattered, strided, permuted):
        assert _reads_exactly_the_valid_blocks(fn(indices), indices), name


def test_the_chosen_formulation_reads_no_name_but_the_indices():
    """What the rewrite writes runs with nothing in scope but the indices: no module's `torch` can reach it."""
    assert derived.FORMULATION in derived.READS_NO_MODULE
    value = as_function(derived.derived_value("indices"), names={"__builtins__": {}})
    big = torch.full((derived.MIN_ROWS, 1, 64), -1, dtype=torch.int32)
    big[::3, 0, 17] = 5
    assert _reads_exactly_the_valid_blocks(value(big), big)
    code = compile(derived.derived_value("indices"), "<derived>", "eval")
    assert set(code.co_names) - {"indices"} <= {"shape", "contiguous", "view", "dtype", "new_full", "element_size",
                                                "cumsum", "flatten", "amax"}


def test_the_row_guard_passes_none_below_min_rows_and_the_lengths_from_it():
    value = as_function(derived.derived_value("indices"))
    small = torch.zeros(derived.MIN_ROWS - 1, 1, 64, dtype=torch.int32)
    assert value(small) is None
    big = torch.full((derived.MIN_ROWS, 1, 64), -1, dtype=torch.int32)
    big[:, 0, :3] = 1
    assert _reads_exactly_the_valid_blocks(value(big), big)


def test_a_width_of_partial_words_gets_none_where_the_words_would_not_fit():
    """The derivation reads the valid mask WORD slots at a time: any other width passes the full width."""
    value = as_function(derived.derived_value("indices"))
    odd = torch.zeros(max(derived.MIN_ROWS, 1), 1, 60, dtype=torch.int32)
    assert 60 % derived.WORD and value(odd) is None
    empty = torch.zeros(max(derived.MIN_ROWS, 1), 1, 0, dtype=torch.int32)  # no slot: amax would have nothing
    assert value(empty) is None


def test_a_kernel_name_rebound_by_a_relative_import_is_not_decided_by_the_pin():
    """`from .legacy import flash_mla_sparse_fwd` under a flag: a module of the package, whatever the pin says
    (the gate took a relative name for a bare one, which any pin decides)."""
    body = "def f(q, kv, idx, metadata):\n    return flash_mla_sparse_fwd(q, kv, idx, 1.0)\n# metadata.dsa_cache_seqlens_int32\n"
    head = HEAD + "if FLAG:\n    from .legacy import flash_mla_sparse_fwd\n\n\n"
    _, sites = run(body, lengths="reference", head=head)
    assert statuses(sites) == ["manual"] and "`.legacy` (imported relatively)" in sites[0].reason


@pytest.mark.parametrize("body,head,why", [
    # a wrapper of this module: what it hands the op (rows sorted, chunked) is not what the lengths read
    ("def flash_mla_sparse_fwd(q, kv, indices, sm_scale, d_v=512, attn_sink=None, topk_length=None):\n"
     "    return _op(q, kv, indices, sm_scale, d_v, attn_sink, topk_length)\n\n\n"
     "def f(q, kv, idx):\n    return flash_mla_sparse_fwd(q, kv, idx, 1.0)\n", "import torch\nfrom ext import _op\n\n\n",
     "defined in this module"),
    # `:=` where Python refuses it (a lambda in a comprehension's iterable), or where it would leave a global
    ("def f(q, kv, idx, parts):\n    return [o for o in map(lambda p: flash_mla_sparse_fwd(q[p], kv, idx[p], 1.0), parts)]\n",
     HEAD, "comprehension"),
    ("OUT = flash_mla_sparse_fwd(Q, KV, IDX.view(-1), 1.0)\n", HEAD, "module level"),
])
def test_red_team_d_shapes_stay_manual(body, head, why):
    m, sites = run(body, head=head)
    assert statuses(sites) == ["manual"] and why in sites[0].reason, sites
    assert not m.changed


def test_a_test_double_of_the_kernel_in_another_module_of_the_project_is_a_rebinding(tmp_path):
    """monkeypatch.setattr / mock.patch(.object) of the kernel's name in another (non-test) module: the double
    may take the old signature, so passing topk_length there would raise. (Test files are not read:
    docs/soundness.md.)"""
    (tmp_path / "backend.py").write_text(HEAD + "def f(q, kv, idx):\n    return flash_mla_sparse_fwd(q, kv, idx, 1.0)\n")
    for i, line in enumerate(['monkeypatch.setattr(backend, "flash_mla_sparse_fwd", fake)',
                              'mock.patch.object(backend, "flash_mla_sparse_fwd", fake)',
                              'mock.patch("backend.flash_mla_sparse_fwd", fake)']):
        (tmp_path / "doubles.py").write_text(f"import backend\nfrom unittest import mock\n\n\ndef install(monkeypatch):\n    {line}\n")
        m = migrate_source((tmp_path / "backend.py").read_text(), str(tmp_path / "backend.py"), kernel=PIN, lengths="derived")
        assert [s.status.value for s in m.sites] == ["manual"], (i, m.sites)


_PACKED = ("import torch\n\n\nclass PackedWeight(torch.Tensor):\n    \"\"\"Packed int4 weights.\"\"\"\n\n"
           "    def view(self, *shape):\n        raise NotImplementedError('packed weights cannot be viewed')\n\n\n"
           "def is_packed(w: 'PackedWeight') -> bool:\n    return isinstance(w, (PackedWeight, tuple))\n")


@pytest.mark.parametrize("where,line,ok", [
    ("weights.py", None, True),  # a tensor subclass nothing makes (round H2's over-refusal)
    ("weights.py", "class Int8Weight(PackedWeight):\n    pass\n", True),
    ("weights.py", "def pack(t):\n    return t.as_subclass(PackedWeight)\n", False),
    ("weights.py", "class Int8Weight(PackedWeight):\n    pass\n\n\ndef pack(t):\n    return Int8Weight(t)\n", False),
    ("loader.py", "from weights import PackedWeight as PW\n\n\ndef load(t):\n    return PW(t)\n", False),
    ("loader.py", "import weights\n\n\ndef load(t, kind):\n    return getattr(weights, kind)(t)\n", False),
    ("loader.py", "import importlib\n\n\ndef load(t, m, c):\n    return vars(importlib.import_module(m))[c](t)\n", False),
    ("backend.py", "def f2(q, kv, idx):\n    return flash_mla_sparse_fwd(q, kv, idx.as_subclass(PackedWeight), 1.0)\n", False),
])
def test_a_tensor_subclass_nothing_makes_does_not_refuse_the_derived_lengths(tmp_path, where, line, ok):
    """A subclass overriding a method the derived lengths call changes them only for its own tensors: where no
    file can make one (its name read only as a base, an isinstance class or an annotation; no member read by a
    computed name), the indices are not one."""
    backend = HEAD + "from weights import PackedWeight\n\n\ndef f(q, kv, idx):\n    return flash_mla_sparse_fwd(q, kv, idx, 1.0)\n"
    files = {"backend.py": backend, "weights.py": _PACKED}
    if line:
        files[where] = files.get(where, "") + "\n\n" + line
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    m = migrate_source(files["backend.py"], str(tmp_path / "backend.py"), kernel=PIN, lengths="derived")
    assert {s.status.value for s in m.sites} == ({"fixable"} if ok else {"manual"}), m.sites


def test_a_closure_read_of_the_indices_is_bound_once_and_two_calls_get_two_names():
    m, sites = run("def steps(q, kv, batches):\n    for idx in batches:\n        yield lambda s: flash_mla_sparse_fwd(q, kv, idx, s())\n\n\n"
                   "def g(q, kv, idx):\n    return flash_mla_sparse_fwd(q, kv, idx.view(-1), 1.0), flash_mla_sparse_fwd(q, kv, idx.view(-2), 1.0)\n",
                   head=HEAD.replace("import torch\n", "import torch\nimport torch.distributed\n"))
    assert statuses(sites) == ["fixable"] * 3
    assert f"({derived.BOUND_NAME} := idx)" in m.new_source and f"({derived.BOUND_NAME}_2 := idx.view(-2))" in m.new_source


@pytest.mark.parametrize("body,why", [
    # a def's default and a decorator's argument run where the def is: the `:=` would bind there
    ("class Backend:\n    def warm(self, out=flash_mla_sparse_fwd(Q, KV, IDX.view(-1), 1.0)):\n        return out\n",
     "class body"),
    ("def warm(out=flash_mla_sparse_fwd(Q, KV, IDX.view(-1), 1.0)):\n    return out\n", "module level"),
    # the function reads its own namespace whole: it would see the bound name
    ("def f(q, kv, idx):\n    out = flash_mla_sparse_fwd(q, kv, idx.view(-1), 1.0)\n    return pack(**locals())\n",
     "`locals()`"),
])
def test_where_the_bound_name_would_show_the_call_stays_manual(body, why):
    _, sites = run(body)
    assert statuses(sites) == ["manual"] and why in sites[0].reason, sites


_LOGGED = ("import logging\n\nlog = logging.getLogger(__name__)\n\n\n"
           "def f(q, kv, idx):\n    out = flash_mla_sparse_fwd(q, kv, idx.view(-1), 1.0)\n    {read}\n    return out\n")


@pytest.mark.parametrize("read,ok", [
    ('log.debug("attn %(q)s", locals())', True),  # a LogRecord formats `msg % mapping`: named keys only
    ('log.log(10, "attn %(q)s %%", locals())', True),
    ('logging.info("attn %(q)s", locals())', True),
    ('print("%(q)s" % locals())', True),
    ('print("{q}".format(**locals()))', True),
    ('print("{q}".format_map(locals()))', True),
    ('log.debug("attn %s", locals())', False),  # the whole mapping printed
    ('log.debug("attn %(q)s", locals(), stack_info=True)', True),
    ('log.debug("attn %(q)s", locals(), extra={"layer": 3})', True),  # the record's own attributes (round L's S20)
    ('logging.getLogger(__name__).debug("attn %(q)s", locals())', True),  # round L's S21
    ('make_logger().debug("attn %(q)s", locals())', False),
    ('log.debug("attn %(q)s", locals(), 1)', False),
    ('log.debug(FMT, locals())', False),
    ('print(f"{q}".format(**locals()))', False),
    ('emit("attn %(q)s", locals())', False),
])
def test_a_namespace_read_only_by_the_keys_the_source_spells_keeps_the_derived_lengths(read, ok):
    """A name the rewrite binds shows in `locals()`, but a read of the keys the source spells never sees it."""
    _, sites = run(_LOGGED.format(read=read))
    assert statuses(sites) == (["fixable"] if ok else ["manual"]), sites


@pytest.mark.parametrize("edit", [
    # round L: a logger that may not be the standard library's, or a project that extends logging
    ("import logging\n", "import logging\ntry:\n    from fleet import logging\nexcept ImportError:\n    pass\n"),
    ("log = logging.getLogger(__name__)\n", "log = logging.getLogger(__name__)\nlogging.setLoggerClass(Sink)\n"),
    ("log = logging.getLogger(__name__)\n", "log = logging.getLogger(__name__)\nlog.addHandler(JsonHandler())\n"),
    ("log = logging.getLogger(__name__)\n", "log = logging.getLogger(__name__)\nlogging.Logger.debug = trace\n"),
    ('log.debug("attn %(q)s"', 'log.debug("attn %(topk_length_indices)s"'),  # the bound name itself
])
def test_a_logger_that_may_hand_the_mapping_to_other_code_is_not_read_by_key(edit):
    _, sites = run(_LOGGED.format(read='log.debug("attn %(q)s", locals())').replace(*edit))
    assert statuses(sites) == ["manual"], sites


@pytest.mark.parametrize("read", ["print(builtins.locals())", "scope = locals\n    print(scope())",
                                  'print(locals().get("topk_length_indices"))'])
def test_a_namespace_taken_another_way_refuses_the_binding(read):
    _, sites = run(_LOGGED.format(read=read).replace("import logging\n", "import builtins\nimport logging\n"))
    assert statuses(sites) == ["manual"], sites


def test_an_indices_name_a_closure_reads_is_bound_by_the_call():
    """A cell: `fn.__closure__[i].cell_contents = x` in a later argument rebinds it with no statement (round L)."""
    m, sites = run("def f(q, kv, idx, hook):\n    def seen():\n        return idx\n"
                   "    return flash_mla_sparse_fwd(q, kv, idx, 1.0, d_v=hook(seen))\n")
    assert statuses(sites) == ["fixable"] and f"({derived.BOUND_NAME} := idx)" in m.new_source, m.new_source


def test_a_comprehension_variable_a_lambda_reads_is_bound_by_the_call():
    m, sites = run("def f(q, kv, batches, hook):\n"
                   "    return [flash_mla_sparse_fwd(q, kv, idx, 1.0, d_v=hook(lambda: idx)) for idx in batches]\n")
    assert statuses(sites) == ["fixable"] and f"({derived.BOUND_NAME} := idx)" in m.new_source, m.new_source


def test_a_rebound_logger_is_not_read_by_key():
    _, sites = run(_LOGGED.format(read='log.debug("attn %(q)s", locals())') + "\n\nlog = Recorder()\n")
    assert statuses(sites) == ["manual"], sites


@pytest.mark.parametrize("writer,ok", [
    ("    return frame.f_locals['idx']\n", True),  # a read by a literal key
    ("    return dict(frame.f_locals)\n", True),
    ("    frame.f_locals[name] = value\n", False),  # write-through since Python 3.13
    ("    frame.f_locals.update({name: value})\n", False),
    ("    loc = frame.f_locals\n    loc[name] = value\n", False),
    ("    frame.f_locals['idx'] = value\n    ctypes.pythonapi.PyFrame_LocalsToFast(ctypes.py_object(frame), 0)\n", False),
    ("    inspect.getargvalues(frame).locals[name] = value\n", False),
    # round L: the same mapping got other ways (a constant name, `or {}`, a copy by the project's own function)
    ("    getattr(frame, 'f_locals')[name] = value\n", False),
    ("    ns = frame.f_locals or {}\n    ns[name] = value\n", False),
    ("    ns = frame.f_locals if frame else {}\n    ns[name] = value\n", False),
    ("    import operator\n    operator.attrgetter('f_locals')(frame)[name] = value\n", False),
    ("    from inspect import getargvalues as argv\n    argv(frame).locals[name] = value\n", False),
    ("    pprint(frame.f_locals)\n\n\ndef pprint(ns):\n    ns['idx'] = None\n", False),
    ("    getattr(ctypes.pythonapi, 'PyFrame_' 'LocalsToFast')(ctypes.py_object(frame), 0)\n", False),
    ("    ctypes.pythonapi.PyFrame_LocalsToFast(ctypes.py_object(frame), 0)\n", False),  # no word of it alone
    ("    return len(frame.f_locals)\n", True),  # a copy by a builtin: no write (the stable name is read again)
    ("    return traceback.StackSummary.extract(traceback.walk_stack(frame), **{'capture_locals': True})\n", False),
])
def test_a_frame_whose_locals_may_be_written_gets_no_derived_lengths(tmp_path, writer, ok):
    """A later argument may rebind the indices' own name through a frame (round J2's PyFrame_LocalsToFast): the
    stable name read again after the arguments would not be what the kernel got."""
    (tmp_path / "debug.py").write_text("import ctypes\nimport inspect\n\n\ndef swap(frame, name, value):\n" + writer)
    backend = HEAD + "def f(q, kv, idx):\n    return flash_mla_sparse_fwd(q, kv, idx, 1.0)\n"
    (tmp_path / "backend.py").write_text(backend)
    m = migrate_source(backend, str(tmp_path / "backend.py"), kernel=PIN, lengths="derived")
    assert {s.status.value for s in m.sites} == ({"fixable"} if ok else {"manual"}), m.sites


def test_the_same_call_in_a_lambda_body_binds_in_the_lambda():
    m, sites = run("attend = lambda q, kv, idx: flash_mla_sparse_fwd(q, kv, idx.view(-1), 1.0)\n")
    assert statuses(sites) == ["fixable"], sites
    compile(m.new_source, "backend.py", "exec")


_COUNTER = ("class FlopCounter(torch.overrides.TorchFunctionMode):\n    \"\"\"Counts ops.\"\"\"\n\n"
            "    def __init__(self):\n        super().__init__()\n        self.n = 0\n\n"
            "    def __torch_function__(self, func, types, args=(), kwargs=None):\n"
            "        self.n += 1\n        LOG.append(func.__name__)\n        return func(*args, **(kwargs or {}))\n\n\n")


@pytest.mark.parametrize("edit,ok", [
    (None, True),  # a FLOP counter: sees every op, changes none (round H2's over-refusal)
    (("return func(*args, **(kwargs or {}))", "return func(*args, **kwargs)"), True),
    (("__torch_function__", "__torch_dispatch__"), True),
    (("        self.n += 1\n", "        args[0].zero_()\n"), False),  # writes what the op reads
    (("        self.n += 1\n", "        args = (args[0].flip(-1),) + tuple(args[1:])\n"), False),
    (("        self.n += 1\n", "        func(*args)\n"), False),  # runs the op twice
    (("return func(*args, **(kwargs or {}))", "return func(*args, **(kwargs or {})) + 0"), False),
    (("return func(*args, **(kwargs or {}))", "return other(*args, **(kwargs or {}))"), False),
    (("class FlopCounter", "@register\nclass FlopCounter"), False),
    (("    def __init__(self):", "    def __enter__(self):\n        return self\n\n    def __init__(self):"), False),
    (("        self.n = 0\n", "        self.n = 0\n        torch.set_default_dtype(torch.float16)\n"), False),
    (("        self.n += 1\n", "        if self.n:\n            return None\n"), False),
])
def test_a_mode_that_hands_every_op_on_unchanged_keeps_the_derived_lengths(edit, ok):
    head = _COUNTER if edit is None else _COUNTER.replace(*edit)
    _, sites = run("def f(q, kv, idx):\n    return flash_mla_sparse_fwd(q, kv, idx, 1.0)\n", head=HEAD + head)
    assert statuses(sites) == (["fixable"] if ok else ["manual"]), sites


@pytest.mark.parametrize("head", [
    "class Counting(torch.overrides.TorchFunctionMode):\n    pass\n\n\n",
    "class IndexTensor(torch.Tensor):\n    def view(self, *shape):\n        return super().view(*shape)\n\n\n"
    "def wrap(t):\n    return t.as_subclass(IndexTensor)\n\n\n",
])
def test_a_project_intercepting_tensor_ops_gets_no_derived_lengths(head):
    _, sites = run("def f(q, kv, idx):\n    return flash_mla_sparse_fwd(q, kv, idx, 1.0)\n", head=HEAD + head)
    assert statuses(sites) == ["manual"] and "tensor" in sites[0].reason, sites


def test_derived_everywhere_passes_the_derived_lengths_where_the_reference_fix_is_proven_too(tmp_path):
    """A fork whose graph runner or callers the analysis cannot read (docs/soundness.md, known gaps) asks for
    the derived lengths at every site: the reference fix's site gets them instead of the metadata's."""
    body = ("def forward(q, kv, idx, metadata):\n    return helper(q, kv, idx)\n\n\n"
            "def helper(q, kv, idx):\n    return flash_mla_sparse_fwd(q, kv, idx, 1.0)\n"
            "# metadata.dsa_cache_seqlens_int32\n")
    ref, ref_sites = run(body, lengths="derived")
    assert statuses(ref_sites) == ["fixable"] and "dsa_cache_seqlens_int32" in ref.new_source.split("def helper")[0]
    m, sites = run(body, lengths="derived-everywhere")
    assert statuses(sites) == ["fixable"] and "derived" in sites[0].reason, sites
    assert derived.lengths_of("idx") in m.new_source and "metadata.dsa_cache_seqlens_int32," not in m.new_source
    (tmp_path / "pyproject.toml").write_text('[tool.topk-migrate]\nlengths = "derived-everywhere"\n')
    f = tmp_path / "backend.py"
    f.write_text(HEAD + body)
    r = subprocess.run([sys.executable, "-m", "topk_migrate", "check", "--kernel", PIN, str(f)],
                       capture_output=True, text=True)
    assert " fixable " in r.stdout and "derived from the call's indices" in r.stdout, r.stdout + r.stderr
