"""Red-team round BA: what an augmented assignment binds (`x += v`: x's storage and v's, a closure's counter
included), read to a fixed point."""
import time

import pytest

from test_callers import verdict

_CALLER = '''"""Fork backend; metadata.dsa_cache_seqlens_int32 holds seqlens clipped to topk."""
from sgl_kernel.flash_mla import flash_mla_sparse_fwd


class Backend:
    def forward(self, q, kv, indices, scale):
        metadata = self.forward_metadata
{pre}        return self._forward_flashmla_sparse(q, kv, indices, scale)

    def _forward_flashmla_sparse(self, q_all, kv_cache, indices, sm_scale):
        return flash_mla_sparse_fwd(q_all, kv_cache, indices, sm_scale)[0]
'''


def _lines(*lines: str) -> str:
    return "".join(f"        {line}\n" for line in lines)


@pytest.mark.parametrize("pre, fixable", [
    # round AZ's safe counter: a closure bumps a number through `nonlocal`; it holds no tensor
    (_lines("calls = 0", "def _tick():", "    nonlocal calls", "    calls += 1", "_tick()", "self.calls = calls"), True),
    (_lines("staged = []", "staged += [indices]", "staged[0].masked_fill_(staged[0] >= 8, -1)"), False),
    (_lines('inputs = {"q": q}', 'inputs |= {"topk": indices}', 'inputs["topk"].masked_fill_(inputs["topk"] >= 8, -1)'),
     False),
    (_lines("view = indices[:0]", "view += view", "view.add_(1)"), False),
    (_lines("scratch = indices[:0].clone()", "scratch += scratch", "scratch.add_(1)"), True),
])
def test_an_augmented_binding_holds_its_own_storage_and_its_operands(tmp_path, pre, fixable):
    site = verdict(tmp_path, _CALLER.format(pre=pre))
    assert (site.status.value == "fixable") is fixable, site.reason


_KERNEL_FN = _CALLER.replace("{pre}        return self._forward_flashmla_sparse(q, kv, indices, scale)",
                              "        return self._forward_flashmla_sparse(q, kv, indices, scale)").replace(
    "        return flash_mla_sparse_fwd(q_all", "{pre}        return flash_mla_sparse_fwd(q_all")


@pytest.mark.parametrize("pre, fixable", [
    # round BA (ba2): a dict merged in place by `|=` holds the indices; a write through its item writes them
    (_lines('inputs = {"q": q_all}', 'inputs |= {"topk": indices}',
            'inputs["topk"].masked_fill_(inputs["topk"] >= 8, -1)'), False),
    (_lines('inputs = {"q": q_all}', 'inputs |= {"scale": sm_scale}', "n = len(inputs)"), True),
])
def test_a_container_augmented_in_place_holds_what_it_is_given(tmp_path, pre, fixable):
    site = verdict(tmp_path, _KERNEL_FN.format(pre=pre))
    assert (site.status.value == "fixable") is fixable, site.reason


def test_self_augmenting_locals_are_read_once(tmp_path):
    """`x += x` many times: each binding's operand is x itself, read once (no walk exponential in the bindings)."""
    pre = _lines("x = indices[:0]", *["x += x"] * 12, "x.add_(1)")
    started = time.monotonic()
    site = verdict(tmp_path, _CALLER.format(pre=pre))
    assert site.status.value == "manual" and time.monotonic() - started < 20, site.reason
