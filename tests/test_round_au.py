"""Red-team round AU: the engine's batch class as a fork's own tree holds it, a class of the engine's name that is
another, buffers registered by computed names, a step fetched from a namespace by a computed name, and a validity
mask that leaves its function before the select."""
import pytest

from test_soundness import _CONFIG_BACKEND, _ENGINE_BATCH_BACKEND, _OPERAND_AR, HANDED_INDICES, _files_site
from topk_migrate.model import Status

_BATCH_MODULE = "sglang/srt/model_executor/forward_batch_info.py"
_OWN_BATCH = ("import torch\n\n\nclass ForwardBatch:\n    def __init__(self, committed, drafts=0):\n"
              "        self.committed = committed\n        self.drafts = drafts\n\n    @property\n"
              "    def seq_lens(self):\n        return self.committed + self.drafts\n")


@pytest.mark.parametrize("files, fixable", [
    # the fork's own tree of sglang holds the batch module, changed (a property adding the drafts): not the engine's
    ({_BATCH_MODULE: _OWN_BATCH, "sglang/__init__.py": "", "sglang/srt/__init__.py": "",
      "sglang/srt/model_executor/__init__.py": ""}, False),
    # read as any batch then: fixable where no class of the project serves the field by code
    ({_BATCH_MODULE: _OWN_BATCH.replace("    @property\n    def seq_lens(self):\n", "    def total(self):\n")}, True),
    # the engine installed elsewhere: its class, by the annotation
    ({}, True)])
def test_round_au_the_batch_class_a_fork_holds(tmp_path, files, fixable):
    site = _files_site(tmp_path, files, _ENGINE_BATCH_BACKEND)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


_DRAFT_BATCH = ("class ForwardBatch:\n    def __init__(self, committed, drafts):\n        self.committed = committed\n"
                "        self.drafts = drafts\n\n    @property\n    def seq_lens(self):\n"
                "        return self.committed + self.drafts\n")


@pytest.mark.parametrize("maker, fixable", [
    # another file hands the annotated planner a class of the engine's name that is its own (a draft worker's)
    ("from draft_batch import ForwardBatch", False),
    ("from sglang.srt.model_executor.forward_batch_info import ForwardBatch", True)])
def test_round_au_a_class_of_the_engines_name(tmp_path, maker, fixable):
    runner = f"{maker}\n\n\ndef plan(backend, lens):\n    backend.init_forward_metadata(ForwardBatch(lens, 2))\n"
    site = _files_site(tmp_path, {"draft_batch.py": _DRAFT_BATCH, "runner.py": runner}, _OPERAND_AR.replace("{more}", ""))
    assert (site.status is Status.FIXABLE) is fixable, site.reason


_INPUTS = ("import torch\n\n\nclass StepInputs(torch.nn.Module):\n    def __init__(self, tensors, drafts=0):\n"
           "        super().__init__()\n        for name, t in tensors.items():\n{store}")


@pytest.mark.parametrize("store, fixable", [
    # an `nn.Module`'s buffers by the names a dict hands: torch's `__getattr__` serves `.seq_lens` computed
    ("            self.register_buffer(name, t + drafts)\n", False),
    ("            self._buffers[name] = t + drafts\n", False),
    ("            self.register_buffer(name, t)\n", True)])
def test_round_au_buffers_by_computed_names(tmp_path, store, fixable):
    site = _files_site(tmp_path, {"fork_inputs.py": _INPUTS.replace("{store}", store)}, _CONFIG_BACKEND)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


_STEPS = ("def _ring_step(backend, q, kv, topk, scale):\n    return backend.forward(q, kv, topk, scale)\n\n\n"
          "class Runner:\n    def __init__(self, backend, mode):\n        self.backend, self.mode = backend, mode\n\n"
          "    def run(self, q, kv, topk, scale):\n        order = topk[:, 0].argsort()\n"
          "        step = {lookup}\n        return step(self.backend, q[order], kv, topk[order], scale)\n")


@pytest.mark.parametrize("lookup, fixable", [
    # a step fetched from a namespace by a name computed at run time may be the traced caller's caller
    ('globals()[f"_{self.mode}_step"]', False),
    ('globals().get("_" + self.mode + "_step")', False),
    ('vars(type(self))[self.mode]', False),
    # an f-string whose text cannot spell the step's name (`forward_...` never is `_ring_step`)
    ('globals()[f"forward_{self.mode}"]', True)])
def test_round_au_a_step_fetched_by_a_computed_name(tmp_path, lookup, fixable):
    site = _files_site(tmp_path, {"runner.py": _STEPS.replace("{lookup}", lookup)}, HANDED_INDICES)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


_SELECTED = HANDED_INDICES.replace(
    "        return self._forward_flashmla_sparse(q, kv, topk_indices, scale)\n",
    "{select}        return self._forward_flashmla_sparse(q, kv, kept, scale)\n").replace(
    "from sgl_kernel", "import torch\nfrom sgl_kernel")


_MASKED = _SELECTED.replace("{select}", "        valid = topk_indices >= 0\n{use}        kept = torch.where(valid, topk_indices, -1)\n"
                             ) + "\n\ndef narrow(mask, start):\n    mask &= start > 0\n"


@pytest.mark.parametrize("use, fixable", [
    # the mask handed to a helper that narrows it in place, or kept on the backend: not the validity test it was bound to
    ("        narrow(valid, 4)\n", False),
    ("        self.valid = valid\n", False),
    ("        self.masks = [valid]\n", False),
    # read by torch only (a count) before the select
    ("        n = torch.count_nonzero(valid)\n", True),
    ("", True)])
def test_round_au_a_validity_mask_leaving_its_function(tmp_path, use, fixable):
    site = _files_site(tmp_path, {}, _MASKED.replace("{use}", use))
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("select, fixable", [
    # the validity test in other spellings (u3's safe variants): a tensor's comparison method, a negated mask
    ("        kept = torch.where(topk_indices.ge(0), topk_indices, -1)\n", True),
    ("        kept = topk_indices.masked_fill(topk_indices.lt(0), -1)\n", True),
    ("        valid = topk_indices.ne(-1)\n        kept = topk_indices.masked_fill(~valid, -1)\n", True),
    ("        kept = topk_indices.masked_fill(~(topk_indices >= 0), -1)\n", True),
    # a test of anything but validity, however spelled, keeps -1 mid-row or drops valid entries
    ("        kept = torch.where(topk_indices.ge(8), topk_indices, -1)\n", False),
    ("        valid = topk_indices >= 0\n        kept = topk_indices.masked_fill(valid, -1)\n", False),
    ("        window = topk_indices < 8\n        kept = topk_indices.masked_fill(~window, -1)\n", False)])
def test_round_au_the_validity_test_spelled_otherwise(tmp_path, select, fixable):
    site = _files_site(tmp_path, {}, _SELECTED.replace("{select}", select))
    assert (site.status is Status.FIXABLE) is fixable, site.reason
