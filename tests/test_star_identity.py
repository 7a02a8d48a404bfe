"""Callee identity through star imports, hidden rebindings and positional arguments (red team B): what the
reader cannot decide is unknown, never "does not bind". Each case is a small tree whose kernel call `apply`
would have rewritten although the name may be another function at run time, or the arguments in its places
are not the ones the rule reads; beside each, the control that stays fixable.
"""
import textwrap
from pathlib import Path

import pytest

from topk_migrate import api, kernels
from topk_migrate.model import Status

REQ = "sglang-kernel==0.4.6\n"
SHIM = """\
from sgl_kernel import flash_mla as _fm


def flash_mla_sparse_fwd(q, kv, indices, sm_scale, d_v=512, attn_sink=None, topk_length=None):
    return _fm.flash_mla_sparse_fwd(q, kv, indices, sm_scale, d_v, attn_sink, topk_length)
"""
BODY = """\

# metadata.dsa_cache_seqlens_int32: the seqlens clipped to the top-k width


class Backend:
    def __init__(self, meta):
        self.forward_metadata = meta

    def forward(self, q, kv, topk_indices, sm_scale):
        metadata = self.forward_metadata
        out, _, _ = flash_mla_sparse_fwd(CALL_ARGS)
        return out
"""
ARGS = "q, kv, topk_indices, sm_scale, d_v=16"


def backend(head: str, args: str = ARGS) -> str:
    return "import torch\n" + textwrap.dedent(head) + BODY.replace("CALL_ARGS", args)


FROM_SHIM = backend("from fmla import flash_mla_sparse_fwd\n")
ABSENT = "flash_mla_absent_build"  # a module neither in the project nor importable


def site(tmp_path: Path, files: dict):
    files = {"requirements.txt": REQ, **files}
    for name, text in files.items():
        p = tmp_path / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    (tmp_path / ".git").mkdir(exist_ok=True)
    s = max(api.run([str(tmp_path / "backend.py")]).sites, key=lambda s: s.line)  # the Backend's call
    return s.status, s.reason


def test_the_shim_control_is_fixable(tmp_path):
    status, reason = site(tmp_path, {"fmla.py": SHIM, "backend.py": FROM_SHIM})
    assert status is Status.FIXABLE, reason


# -- C: star imports in the interface module ---------------------------------------------------------------------
@pytest.mark.parametrize("tail,blocker", [
    # a module outside the project, not importable here: it may bind anything
    (f"\ntry:\n    from {ABSENT} import *  # noqa\nexcept ImportError:\n    pass\n", f"`from {ABSENT} import *` at fmla.py:8"),
    (f"\nfrom {ABSENT} import *  # noqa\n", f"`from {ABSENT} import *` at fmla.py:7"),
    ("\nfrom _compat import *  # noqa\n", "`from _compat import *` at fmla.py:7"),  # one level down
])
def test_a_star_import_of_a_module_the_reader_cannot_read_may_rebind_the_interface(tmp_path, tail, blocker):
    status, reason = site(tmp_path, {"fmla.py": SHIM + tail, "backend.py": FROM_SHIM,
                                     "_compat.py": f"try:\n    from {ABSENT} import *  # noqa\nexcept ImportError:\n    pass\n"})
    assert status is Status.MANUAL and blocker in reason, reason


def test_an_importable_module_that_does_not_export_the_name_binds_nothing(tmp_path, monkeypatch):
    ext = tmp_path / "site"
    ext.mkdir()
    (ext / "fmla_extras.py").write_text("def get_mla_metadata(*args):\n    return None\n")
    monkeypatch.syspath_prepend(str(ext))
    proj = tmp_path / "proj"
    status, reason = site(proj, {"fmla.py": SHIM + "\nfrom fmla_extras import *  # noqa\n", "backend.py": FROM_SHIM})
    assert status is Status.FIXABLE, reason
    (ext / "fmla_extras.py").write_text("from sgl_kernel.flash_mla import legacy_fwd as flash_mla_sparse_fwd\n")
    status, reason = site(proj, {})
    assert status is Status.MANUAL and "`from fmla_extras import *` at fmla.py:7" in reason, reason


LEGACY = """\
import os

from sgl_kernel.flash_mla import legacy_fwd as flash_mla_sparse_fwd


def legacy_prefill(*args):
    return None


__all__ = ["legacy_prefill"]
"""


@pytest.mark.parametrize("change,exported", [
    ("", False),  # the control: one literal __all__ that leaves the name out
    ("if os.environ.get('LEGACY'):\n    __all__ = ['legacy_prefill', 'flash_mla_sparse_fwd']\n", None),
    ("__all__ += ['flash_mla_sparse_fwd']\n", None),
    ("__all__.extend(['flash_mla_sparse_fwd'])\n", None),
    ("try:\n    pass\nfinally:\n    __all__ = __all__ + ['flash_mla_sparse_fwd']\n", None),
    ("def _publish():\n    global __all__\n    __all__ = ['flash_mla_sparse_fwd']\n", None),
])
def test_an_all_changed_anywhere_but_its_one_literal_assignment_is_not_decided(tmp_path, change, exported):
    files = {"fmla.py": SHIM + "\nfrom _legacy import *  # noqa\n", "backend.py": FROM_SHIM, "_legacy.py": LEGACY + change}
    status, reason = site(tmp_path, files)
    assert kernels.star_binds(str(tmp_path / "_legacy.py"), "flash_mla_sparse_fwd") is exported
    if exported is False:
        assert status is Status.FIXABLE, reason
    else:
        assert status is Status.MANUAL and "`from _legacy import *` at fmla.py:7" in reason, reason


OVERRIDE = "\nimport os\n\nfrom sgl_kernel.flash_mla import legacy_fwd as _old\n\nif os.environ.get('OLD'):\n"


@pytest.mark.parametrize("binding", [
    "    flash_mla_sparse_fwd: object = _old\n",
    "    flash_mla_sparse_fwd, BACKEND = _old, 'old'\n",
    "    [flash_mla_sparse_fwd] = [_old]\n",
    "    for flash_mla_sparse_fwd in (_old,):\n        pass\n",
    "    with open(os.devnull) as flash_mla_sparse_fwd:\n        pass\n",
    "    (flash_mla_sparse_fwd := _old)\n",
    "    del flash_mla_sparse_fwd\n",
    "    import json as flash_mla_sparse_fwd\n",
    "    class flash_mla_sparse_fwd:\n        pass\n",
    "    flash_mla_sparse_fwd = _old\n",
    "    pass\n\ndef _swap():\n    global flash_mla_sparse_fwd\n    flash_mla_sparse_fwd = _old\n",
    "    globals()['flash_mla_sparse_fwd'] = _old\n",
])
def test_every_binding_form_of_the_interface_name_counts(tmp_path, binding):
    status, reason = site(tmp_path, {"fmla.py": SHIM + OVERRIDE + binding, "backend.py": FROM_SHIM})
    assert status is Status.MANUAL and "fmla.py:" in reason and "flash_mla_sparse_fwd" in reason, reason


def test_a_binding_in_a_function_or_class_body_is_not_the_modules(tmp_path):
    tail = OVERRIDE + "    pass\n\n\ndef _local():\n    flash_mla_sparse_fwd = _old\n    return flash_mla_sparse_fwd\n\n\n" \
                      "class K:\n    flash_mla_sparse_fwd = _old\n"
    status, reason = site(tmp_path, {"fmla.py": SHIM + tail, "backend.py": FROM_SHIM})
    assert status is Status.FIXABLE, reason


# -- C: star imports of the calling module -----------------------------------------------------------------------
@pytest.mark.parametrize("head,line", [
    (f"from sgl_kernel.flash_mla import flash_mla_sparse_fwd\n\nif torch.cuda.is_available():\n"
     f"    from {ABSENT} import *  # noqa\n", 5),
    (f"from sgl_kernel.flash_mla import flash_mla_sparse_fwd\n\ntry:\n    from {ABSENT} import *  # noqa\n"
     "except ImportError:\n    pass\n", 5),
    # before the import, but the import is not a top-level statement that binds the name again after it
    (f"from {ABSENT} import *  # noqa\n\nif torch:\n    from sgl_kernel.flash_mla import flash_mla_sparse_fwd\n", 2),
])
def test_a_star_import_in_a_block_of_the_calling_module_may_rebind_the_kernel(tmp_path, head, line):
    status, reason = site(tmp_path, {"backend.py": backend(head)})
    assert status is Status.MANUAL and f"`from {ABSENT} import *` at line {line} may rebind" in reason, reason


@pytest.mark.parametrize("head", [
    f"from {ABSENT} import *  # noqa\nfrom sgl_kernel.flash_mla import flash_mla_sparse_fwd\n",  # bound again after it
    "from sgl_kernel.flash_mla import flash_mla_sparse_fwd\n\ntry:\n    from helpers_mod import *  # noqa\n"
    "except ImportError:\n    pass\n",  # a project module that does not export the name
])
def test_a_star_import_that_cannot_reach_the_call_is_no_blocker(tmp_path, head):
    status, reason = site(tmp_path, {"backend.py": backend(head), "helpers_mod.py": "def pad(x):\n    return x\n"})
    assert status is Status.FIXABLE, reason


@pytest.mark.parametrize("fmla,fixable", [
    (SHIM, True),
    (SHIM + f"\ntry:\n    from {ABSENT} import *  # noqa\nexcept ImportError:\n    pass\n", False),
    (SHIM.replace("    return _fm", "    q = q.flip(0)\n    return _fm"), False),  # not a plain wrapper
    (SHIM.replace("(q, kv, indices, sm_scale, d_v=512,", "(q, indices, kv, sm_scale, d_v=512,")
     .replace("(q, kv, indices, sm_scale, d_v, attn_sink", "(q=q, kv=kv, indices=indices, sm_scale=sm_scale, d_v=d_v, "
              "attn_sink=attn_sink"), False),  # reordered
])
def test_a_kernel_bound_only_by_a_star_import_is_read_through_it(tmp_path, fmla, fixable):
    status, reason = site(tmp_path, {"fmla.py": fmla, "backend.py": backend("from fmla import *  # noqa\n")})
    if fixable:
        assert status is Status.FIXABLE, reason
    else:
        assert status is Status.MANUAL and ("`from fmla import *` at line 2" in reason or "fmla.py:" in reason), reason


# -- B: positional arguments -------------------------------------------------------------------------------------
LOCAL = """\
from sgl_kernel import flash_mla as _fm


def flash_mla_sparse_fwd(SIG, sm_scale, d_v=512, attn_sink=None, topk_length=None):
    return _fm.flash_mla_sparse_fwd(q=q, kv=kv, indices=indices, sm_scale=sm_scale, d_v=d_v, attn_sink=attn_sink,
                                    topk_length=topk_length)
"""


@pytest.mark.parametrize("sig,args,fixable", [
    ("q, kv, indices", ARGS, True),
    ("q, indices, kv", "q, topk_indices, kv, sm_scale, d_v=16", False),
    ("q, indices, kv", "q=q, indices=topk_indices, kv=kv, sm_scale=sm_scale, d_v=16", True),  # by keyword
])
def test_a_module_local_kernel_def_maps_positional_arguments_by_its_signature(tmp_path, sig, args, fixable):
    status, reason = site(tmp_path, {"backend.py": backend(LOCAL.replace("SIG", sig), args)})
    if fixable:
        assert status is Status.FIXABLE, reason
    else:
        assert status is Status.MANUAL and "takes `indices` in place 2" not in reason \
            and "takes `kv` in place 3, where the rule reads `indices`" in reason, reason


TWO_DEFS = """\
from typing import TYPE_CHECKING

from sgl_kernel import flash_mla as _fm

if TYPE_CHECKING:
    def flash_mla_sparse_fwd(q, kv, indices, sm_scale, d_v=512, attn_sink=None, topk_length=None):
        ...
else:
    def flash_mla_sparse_fwd(SIG, sm_scale, d_v=512, attn_sink=None, topk_length=None):
        return _fm.flash_mla_sparse_fwd(q=q, kv=kv, indices=indices, sm_scale=sm_scale, d_v=d_v,
                                        attn_sink=attn_sink, topk_length=topk_length)
"""


@pytest.mark.parametrize("sig,fixable", [("q, kv, indices", True), ("q, indices, kv", False)])
def test_an_interface_bound_twice_with_different_signatures_is_not_decided(tmp_path, sig, fixable):
    """Only the `else` branch's def runs (round BI: `if TYPE_CHECKING:` never does): its signature decides."""
    status, reason = site(tmp_path, {"fmla.py": TWO_DEFS.replace("SIG", sig), "backend.py": FROM_SHIM})
    if fixable:
        assert status is Status.FIXABLE, reason
    else:
        assert status is Status.MANUAL and "fmla.py:9" in reason and "takes `kv` in place 3" in reason, reason


def test_each_def_of_an_interface_bound_twice_is_held_to_the_forwarding_rule(tmp_path):
    fmla = TWO_DEFS.replace("SIG", "q, kv, indices").replace("        return _fm", "        q = q.flip(0)\n        return _fm")
    status, reason = site(tmp_path, {"fmla.py": fmla, "backend.py": FROM_SHIM})
    assert status is Status.MANUAL and "fmla.py:9" in reason, reason
