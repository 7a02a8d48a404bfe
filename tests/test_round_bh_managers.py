"""Round BH, planners. Round BG's over-refusal s_refresh_in_no_grad: a planner's refresh inside a `with` whose
manager is a library one that never swallows its block's exception (replay_paths.NON_SUPPRESSING, resolved through
the module's imports: replay_paths.keeps_exceptions) runs on every run, as the bare refresh does; a manager that may
suppress (contextlib.suppress, a class of the module, a name the module binds otherwise) still refuses (round AC).
Round BH's u_class_body_planner_alias: a planner whose name the class body binds otherwise than by its def is not
the one read (metadata_in_scope._class_bound_otherwise). Round BH's s_planner_no_grad_decorator: a planner in
torch's grad mode is read as written (callers._plain_def)."""
import pytest

from test_soundness import _files_site
from topk_migrate.model import Status

_SRC = '''"""Fork DSA backend; metadata.dsa_cache_seqlens_int32 holds seqlens clipped to topk."""
import contextlib
from dataclasses import dataclass

import torch
from sgl_kernel.flash_mla import flash_mla_sparse_fwd
@TOP@

@dataclass
class DSAMetadata:
    dsa_cache_seqlens_int32: torch.Tensor


class Backend:
    def __init__(self, dsa_index_topk, warmup_batch):
        self.dsa_index_topk = dsa_index_topk
        self.forward_metadata = DSAMetadata(warmup_batch.seq_lens.clamp(max=self.dsa_index_topk).to(torch.int32))

    def init_forward_metadata(self, forward_batch):
        with @MANAGER@:
            self.forward_metadata.dsa_cache_seqlens_int32.copy_(
                forward_batch.seq_lens.clamp(max=self.dsa_index_topk).to(torch.int32))

    def forward(self, q, kv, topk_indices, sm_scale):
        metadata = self.forward_metadata
        return flash_mla_sparse_fwd(q=q, kv=kv, indices=topk_indices, sm_scale=sm_scale)[0]
'''
_OWN_MANAGER = '''

class Span:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return True
'''


def _site(tmp_path, manager, top=""):
    src = _SRC.replace("@MANAGER@", manager).replace("@TOP@", top)
    return _files_site(tmp_path, {"requirements.txt": "sglang-kernel==0.4.6\n"}, src)


@pytest.mark.parametrize("manager, top", [("torch.no_grad()", ""), ("torch.inference_mode()", ""),
                                          ("nullcontext()", "from contextlib import nullcontext"),
                                          ("torch.no_grad(), torch.cuda.nvtx.range('plan')", "")])
def test_round_bh_refresh_in_a_library_manager_is_fixable(tmp_path, manager, top):
    site = _site(tmp_path, manager, top)
    assert site.status is Status.FIXABLE, site.reason


@pytest.mark.parametrize("manager, top", [
    ("contextlib.suppress(RuntimeError)", ""),  # swallows a failed refresh: the record keeps the last step's lengths
    ("Span()", _OWN_MANAGER),  # a module's manager whose `__exit__` returns True
    ("no_grad()", "no_grad = contextlib.suppress"),  # a name of the list bound to another manager
    ("torch.no_grad()", "torch = contextlib"),  # the import's name rebound in the module
])
def test_round_bh_refresh_in_a_manager_that_may_suppress_is_refused(tmp_path, manager, top):
    site = _site(tmp_path, manager, top)
    assert site.status is Status.MANUAL, site.reason


_PAGES_ONLY = '''
    def _plan_pages_only(self, forward_batch):
        self.forward_metadata.page_table_1 = forward_batch.page_table

@ALIAS@
'''


@pytest.mark.parametrize("alias", [
    "    if _FAST:\n        init_forward_metadata = _plan_pages_only",  # (round BH's u_class_body_planner_alias)
    "    init_forward_metadata = _plan_pages_only",
    "    for init_forward_metadata in (_plan_pages_only,):\n        pass",
    "    try:\n        from fast_plans import init_forward_metadata\n    except ImportError:\n        pass",
])
def test_round_bh_a_planner_bound_in_the_class_body_otherwise_refuses(tmp_path, alias):
    """Round BH (bh1): the class body binds the planner's name otherwise than by its def (behind a flag): Python
    runs the last binding, a plan moving the page table only, and the record keeps the start-up lengths."""
    src = (_SRC.replace("@MANAGER@", "torch.no_grad()").replace("@TOP@", "_FAST = True")
           + _PAGES_ONLY.replace("@ALIAS@", alias))
    site = _files_site(tmp_path, {"requirements.txt": "sglang-kernel==0.4.6\n"}, src)
    assert site.status is Status.MANUAL, site.reason
    assert ("otherwise than by" in site.reason) is ("import" in alias or "for " in alias), site.reason


_PLAN_V2 = '''
    def _plan_v2(self, forward_batch):
        self.forward_metadata.dsa_cache_seqlens_int32.copy_(forward_batch.seq_lens.clamp(max=self.dsa_index_topk).int())

@ALIAS@
'''


@pytest.mark.parametrize("methods, alias", [
    (_PAGES_ONLY, "    plan_pages = _plan_pages_only"),  # (another name: not the planner)
    # round BH's s_class_body_alias_to_refreshing_plan: the name bound to a def of the class that refreshes too
    (_PLAN_V2, "    if _FAST:\n        init_forward_metadata = _plan_v2"),
])
def test_round_bh_a_planner_bound_to_a_refreshing_def_stays_fixable(tmp_path, methods, alias):
    """A class body binding the planner's name to another def of the class has both defs read as planners
    (metadata_in_scope._alias_of_def): each must refresh the record."""
    src = (_SRC.replace("@MANAGER@", "torch.no_grad()").replace("@TOP@", "_FAST = True")
           + methods.replace("@ALIAS@", alias))
    site = _files_site(tmp_path, {"requirements.txt": "sglang-kernel==0.4.6\n"}, src)
    assert site.status is Status.FIXABLE, site.reason


_STEP = '''

def step(cfg, batch, q, kv, topk_indices, scale):
    b = Backend(cfg.index_topk, batch)
    b.init_forward_metadata(batch)
    return b.forward(q, kv, topk_indices, scale)
'''


@pytest.mark.parametrize("decorator, top, body, fixable", [
    ("@torch.no_grad()", "", "", True),  # (round BH's s_planner_no_grad_decorator: torch's grad mode runs it as is)
    ("@torch.inference_mode()", "", "", True),
    ("@torch.no_grad()", "", "        forward_batch.seq_lens.clamp_(max=2048)\n", False),  # it writes the batch
    ("@no_grad()", "def no_grad():\n    return lambda fn: fn", "", False),  # a module's decorator: not read
    ("@torch.no_grad()", "torch = contextlib", "", False),  # not torch's
])
def test_round_bh_a_planner_in_torchs_grad_mode_is_read_as_written(tmp_path, decorator, top, body, fixable):
    """The batch an entry hands a planner decorated with torch's grad mode (called with nothing, resolved through
    the imports) is read in the planner's body, as an undecorated one's is (callers._plain_def)."""
    src = _SRC.replace("@MANAGER@", "torch.no_grad()").replace("@TOP@", top).replace(
        "    def init_forward_metadata(self, forward_batch):\n",
        f"    {decorator}\n    def init_forward_metadata(self, forward_batch):\n{body}") + _STEP
    site = _files_site(tmp_path, {"requirements.txt": "sglang-kernel==0.4.6\n"}, src)
    assert (site.status is Status.FIXABLE) is fixable, site.reason
