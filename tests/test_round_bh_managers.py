"""Round BG's over-refusal (s_refresh_in_no_grad), closed in round BH: a planner's refresh inside a `with` whose
manager is a library one that never swallows its block's exception (replay_paths.NON_SUPPRESSING, resolved through
the module's imports: replay_paths.keeps_exceptions) runs on every run, as the bare refresh does. A manager that may
suppress (contextlib.suppress, a class of the module, a name the module binds otherwise) still refuses (round AC)."""
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
