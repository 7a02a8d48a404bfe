"""Red-team round BB (bb3): a pad of -1 whose dtype does not keep -1 (a uint8 pad's -1 is 255, a bool's True, each
promoted by `cat` to a valid slot), and rows joined on dim 0 then viewed back to q's row count with an inferred width
(each row then holds two rows' selections)."""
import pytest

from test_soundness import HANDED_INDICES, _files_site
from topk_migrate.model import Status

_INDICES = "import torch\n" + HANDED_INDICES.replace(
    "        return flash_mla_sparse_fwd(", "{steps}        return flash_mla_sparse_fwd(")


def _steps(*lines: str) -> str:
    return _INDICES.replace("{steps}", "".join(f"        {line}\n" for line in lines))


_CAT = "indices = torch.cat([indices, pad], dim=-1)"


@pytest.mark.parametrize("steps, fixable", [
    # a pad whose dtype turns -1 into a valid slot, or is not read
    (("pad = torch.full((indices.shape[0], 4), -1, dtype=torch.uint8)", _CAT), False),
    (("pad = indices.new_full((indices.shape[0], 4), -1, dtype=torch.bool)", _CAT), False),
    (("pad = torch.full_like(indices, -1, dtype=torch.uint8)", _CAT), False),
    (("pad = torch.full((indices.shape[0], 4), -1, dtype=torch.float16)", _CAT), False),
    (("pad = torch.full((indices.shape[0], 4), -1, dtype=kv.dtype)", _CAT), False),  # (another tensor's dtype)
    (("pad = kv.new_full((indices.shape[0], 4), -1)", _CAT), False),  # (inherits kv's dtype)
    (("pad = torch.full_like(indices < 0, -1)", _CAT), False),  # (a bool mask's dtype)
    (("buf = torch.empty((indices.shape[0], 4), dtype=torch.uint8)",
      "pad = torch.full((indices.shape[0], 4), -1, out=buf)", _CAT), False),  # (buf's dtype)
    (("mask = indices < 0", "pad = mask.new_full((indices.shape[0], 4), -1)", _CAT), False),
    (("pad = torch.full_like(indices, -1, dtype=torch.uint8)", "indices = torch.where(indices >= 0, indices, pad)"),
     False),
    # pads whose dtype keeps -1: int64 by default, an index dtype, int16, the selection's own
    (("pad = torch.full((indices.shape[0], 4), -1)", _CAT), True),
    (("pad = torch.full((indices.shape[0], 4), -1, dtype=torch.int32)", _CAT), True),
    (("pad = torch.full((indices.shape[0], 4), -1, dtype=torch.int16)", _CAT), True),
    (("pad = torch.full((indices.shape[0], 4), -1, dtype=indices.dtype, device=indices.device)", _CAT), True),
    (("pad = indices.new_full((indices.shape[0], 4), fill_value=-1)", _CAT), True),
    (("pad = torch.full_like(indices, -1)", _CAT), True),
    (("indices = torch.cat([indices, indices.new_full((indices.shape[0], 4), -1)], dim=-1)",), True),
    (("pad = torch.full_like(indices, -1)", "indices = torch.where(indices >= 0, indices, pad)"), True)])
def test_round_bb_a_pad_of_minus_one_keeps_it_only_in_a_dtype_that_holds_it(tmp_path, steps, fixable):
    site = _files_site(tmp_path, {}, _steps(*steps))
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("steps, fixable", [
    # rows appended on dim 0, then regrouped by a view: q's row count with the width inferred holds two rows in one
    (("n = indices.shape[0]", "pad = torch.full_like(indices, -1)", "indices = torch.cat([indices, pad]).view(n, -1)"),
     False),
    (("n = indices.shape[0]", "pad = torch.full_like(indices, -1)", "padded = torch.cat([indices, pad], dim=0)",
      "indices = padded.int().reshape(n, 1, -1)"), False),
    (("pad = torch.full_like(indices, -1)", "indices = torch.reshape(torch.cat([indices, pad]), (-1, 1, 128))"), False),
    (("indices = self._pad(indices).view(indices.shape[0], -1)",), False),
    # columns joined then viewed, the rows joined alone, a view alone: each row kept (a view before rows are joined is
    # refused where the name it views is also bound to the join: the trace reads a name's bindings in any order)
    (("n = indices.shape[0]", "pad = torch.full_like(indices, -1)",
      "indices = torch.cat([indices, pad], dim=-1).view(n, -1)"), True),
    (("indices = self._pad(indices).unsqueeze(1)",), True),
    (("n = indices.shape[0]", "indices = indices.view(n, -1)"), True)])
def test_round_bb_rows_joined_then_viewed_may_put_two_rows_in_one(tmp_path, steps, fixable):
    helper = "\n    def _pad(self, indices):\n        return torch.cat([indices, torch.full_like(indices, -1)])\n"
    site = _files_site(tmp_path, {}, _steps(*steps) + helper)
    assert (site.status is Status.FIXABLE) is fixable, site.reason
