"""Red-team round BC (bc3, helper G3a): the indices written through a host array over their storage (numpy's methods
write in place with no trailing `_`: `host.sort()`, `host[r].fill(-1)`), through `out=` a `**mapping` passes, made
anew by `x.new_tensor(...)` in x's dtype (a uint8 arena's makes -1 a valid 255), and rows joined then viewed inside a
helper the trace reads after the join's own check."""
import pytest

from test_soundness import HANDED_INDICES, _files_site
from topk_migrate.model import Status

_INDICES = "import torch\n" + HANDED_INDICES.replace(
    "        return flash_mla_sparse_fwd(", "{steps}        return flash_mla_sparse_fwd(")
_HELPERS = ("\n    def _layout(self, idx, rows):\n        return idx.view(rows, 1, -1)\n"
            "\n    def _staged(self, idx, rows):\n        return self._layout(idx.contiguous(), rows)\n"
            "\n    def _plain(self, idx):\n        return idx.contiguous()\n")


def _site(tmp_path, *lines: str):
    src = _INDICES.replace("{steps}", "".join(f"        {line}\n" for line in lines)) + _HELPERS
    return _files_site(tmp_path, {}, src)


@pytest.mark.parametrize("steps, word", [
    # a numpy view of the indices' storage, written by a method with no trailing `_`
    (("host = indices.numpy()", "host.sort(axis=-1)"), "host array"),
    (("host = indices.numpy()", "host[0].fill(-1)"), "host array"),
    (("indices.numpy().sort(axis=-1)",), "host array"),
    (("indices.numpy().put([0], [-1])",), "host array"),
    (("host = indices.numpy()", "for row in host:", "    row.sort()"), "host array"),
    (("host = indices.numpy()", "flat = host.reshape(-1)", "flat.fill(-1)"), "host array"),
    (("host = q.numpy()", "host.sort(axis=0)"), "host array"),  # (q's rows moved in place)
    (("views = {'host': indices.numpy()}", "kept = views.copy()", "kept['host'].sort(axis=-1)"), "host array"),
    # `out=` passed by a `**mapping`
    (("io = {'out': indices}", "torch.clamp(indices, min=0, **io)"), "out="),
    (("order = torch.empty_like(indices, dtype=torch.int64)", "io = {'out': (indices, order)} if scale else {}",
      "torch.sort(indices, dim=-1, **io)"), "out="),
    (("torch.clamp(indices, min=0, **self.io)",), "out="),
    # a new tensor in its receiver's dtype
    (("indices = kv.new_tensor(indices.tolist()).int()",), "dtype"),
    (("indices = self.arena.new_tensor(indices.cpu().tolist()).int()",), "dtype"),
    (("indices = indices.new_tensor(indices.tolist(), dtype=torch.uint8).int()",), "dtype"),
    # rows joined on dim 0, then viewed to q's row count inside a helper (one or two defs deep)
    (("n = indices.shape[0]", "padded = torch.cat([indices, torch.full_like(indices, -1)])",
      "indices = self._layout(padded, n)"), "regroup"),
    (("n = indices.shape[0]", "indices = self._staged(torch.cat([indices, torch.full_like(indices, -1)]), n)"),
     "regroup"),
])
def test_round_bc_g3a_unseen_writes_and_regroups_refuse(tmp_path, steps, word):
    site = _site(tmp_path, *steps)
    assert site.status is Status.MANUAL and word in site.reason, site.reason


@pytest.mark.parametrize("steps", [
    ("host = indices.numpy()", "valid = int((host >= 0).sum())"),  # (a read of the host view)
    ("plan = indices.numpy().copy()", "plan.sort(axis=-1)"),  # (a fresh host copy sorted)
    ("host = indices.numpy()", "plan = host.copy()", "plan[0].fill(-1)"),
    ("opts = {'dtype': torch.int32}", "counts = torch.sum(indices >= 0, dim=-1, **opts)"),
    ("indices = indices.new_tensor(indices.tolist())",),
    ("indices = kv.new_tensor(indices.tolist(), dtype=torch.int32)",),
    ("indices = q.new_tensor(indices.tolist(), dtype=indices.dtype)",),
    ("n = indices.shape[0]", "pad = torch.full_like(indices, -1)",
     "indices = self._layout(torch.cat([indices, pad], dim=-1), n)"),  # (columns joined: each row kept)
    ("n = indices.shape[0]", "indices = self._staged(indices, n)"),
    ("indices = self._plain(torch.cat([indices, torch.full_like(indices, -1)]))",),  # (rows joined, no view)
])
def test_round_bc_g3a_safe_twins_stay_fixable(tmp_path, steps):
    site = _site(tmp_path, *steps)
    assert site.status is Status.FIXABLE, site.reason
