"""Red-team round AY (y3): bindings of the indices' name the trace did not read (a `match` capture, a `:=` in a
comprehension, an import in a function) and containers joined by `|`/`+` of named operands written through."""
import pytest

from test_soundness import HANDED_INDICES, _files_site
from topk_migrate.model import Status

_WINDOWED = "indices.masked_fill(indices >= 24, -1)"
_STEP = "import torch\n" + HANDED_INDICES.replace(
    "        return flash_mla_sparse_fwd(", "{pre}        return flash_mla_sparse_fwd(").replace(
    "    def _forward_flashmla_sparse", "    def _select(self, indices):\n"
    f"        return Selection({_WINDOWED})\n\n{{helper}}    def _forward_flashmla_sparse") + (
    "\n\nclass Selection:\n    __match_args__ = ('topk',)\n\n    def __init__(self, topk):\n        self.topk = topk\n")
_BUFFERS = "TOPK_BUFFER = None\n\n\ndef stage(indices):\n    global TOPK_BUFFER\n    TOPK_BUFFER = indices\n"


def _steps(*lines: str) -> str:
    return "".join(f"        {line}\n" for line in lines)


@pytest.mark.parametrize("pre, fixable", [
    # a `match` capture rebinding the indices (mapping and class patterns): LibCST lists no binding for it
    (_steps(f'match {{"topk_indices": {_WINDOWED}}}:', '    case {"topk_indices": indices}:', "        pass"), False),
    (_steps("match self._select(indices):", "    case Selection(topk=indices):", "        pass"), False),
    (_steps(f"match [{_WINDOWED}]:", "    case [*indices]:", "        pass"), False),
    (_steps(f"match {_WINDOWED}:", "    case Selection() as indices:", "        pass"), False),
    (_steps(f'match {{"topk_indices": {_WINDOWED}}}:', '    case {"topk_indices": other}:', "        pass"), True),
    (_steps("match self.__class__.__name__:", '    case "Backend":', "        sm_scale = sm_scale * 1.0"), True),
    # a `:=` in a generator or a comprehension binds the function's name (LibCST files it under the comprehension)
    (_steps(f"all((indices := {_WINDOWED.replace('24', 'w')}) is not None for w in (24,))"), False),
    (_steps(f"widths = [(indices := {_WINDOWED.replace('24', 'w')}).shape[-1] for w in (24,)]"), False),
    (_steps("n = 0", "all((n := n + 1) > 0 for w in (24,))"), True),
    # an import in the function rebinding the indices: another module's state
    (_steps("if sm_scale:", "    from graph_buffers import TOPK_BUFFER as indices"), False),
    (_steps("from graph_buffers import stage as _stage", "valid = int((indices >= 0).sum())"), True),
])
def test_round_ay_bindings_the_trace_does_not_read_refuse(tmp_path, pre, fixable):
    site = _files_site(tmp_path, {"graph_buffers.py": _BUFFERS}, _STEP.replace("{pre}", pre).replace("{helper}", ""))
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("pre, fixable", [
    # a container joined by `|`/`+` with a named operand holds the indices: a write through it writes them
    (_steps('staged = {"topk_indices": indices} | dict(extra=None)',
            'staged["topk_indices"].masked_fill_(staged["topk_indices"] >= 24, -1)'), False),
    (_steps("pending = [indices]", "staged = pending + list(())", "staged[0].masked_fill_(staged[0] >= 24, -1)"), False),
    (_steps("pending = (indices,)", "queued = pending + tuple(())", "head = queued[0]",
            "head.masked_fill_(head >= 24, -1)"), False),
    (_steps('staged = {"topk_indices": indices} | dict(extra=None)',
            "shapes = {k: tuple(v.shape) for k, v in staged.items()}"), True),
    # tensor arithmetic makes a new tensor: writing it leaves the indices alone
    (_steps("shifted = indices + sm_scale", "shifted.clamp_(min=0)"), True),
    (_steps("shifted = indices * 2", "shifted.clamp_(min=0)"), True),
])
def test_round_ay_containers_joined_by_an_operator_hold_what_they_join(tmp_path, pre, fixable):
    site = _files_site(tmp_path, {}, _STEP.replace("{pre}", pre).replace("{helper}", ""))
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("select", [
    "indices = torch.where(0 <= indices, indices, -1)",
    "indices = indices.masked_fill(torch.lt(indices, 0), -1)",
])
def test_round_ay_validity_tests_in_other_spellings_stay_fixable(tmp_path, select):
    """The bonus pair: the test constant-first or as torch's function is the same validity test."""
    site = _files_site(tmp_path, {}, _STEP.replace("{pre}", _steps(select)).replace("{helper}", ""))
    assert site.status is Status.FIXABLE, site.reason
