"""Variants composed from independent choices, for hypothesis to combine.

A backend is (kernel spelling) x (where the metadata is held) x (how q reaches the kernel)
x (how the metadata is bound) x (whether `topk_length` already names an int width). Only the
combination of all-safe choices must stay fixable; every other one must merely stay sound.
"""
from __future__ import annotations

import itertools
import textwrap
from dataclasses import dataclass

from .harness import Variant
from .variants import HEAD, REORDERINGS, ROW_PRESERVING

SPELLINGS = {  # name -> (module-level import, local import, the callee as written)
    "from_module": ("from sgl_kernel.flash_mla import flash_mla_sparse_fwd\n", "", "flash_mla_sparse_fwd"),
    "module_alias": ("import sgl_kernel.flash_mla as fm\n", "", "fm.flash_mla_sparse_fwd"),
    "package_alias": ("from sgl_kernel import flash_mla_sparse_fwd as sparse_fwd\n", "", "sparse_fwd"),
    "local_import": ("", "from sgl_kernel.flash_mla import flash_mla_sparse_fwd\n", "flash_mla_sparse_fwd"),
}
SHAPES = ("helper", "in_call")  # metadata held by the helper's caller / by the kernel's own function
STEPS = {**{f"keep_{n}": (True, p, post) for n, p, post in ROW_PRESERVING},
         **{f"reorder_{n}": (False, m, "") for n, m in REORDERINGS if "metadata" not in m}}
BINDINGS = ("always", "only_in_if", "none_default", "rebound_to_none")


@dataclass(frozen=True)
class Choice:
    spelling: str
    shape: str
    step: str
    binding: str
    width_global: bool  # a module-level `topk_length = 16` is read next to the kernel call

    @property
    def safe(self) -> bool:
        return STEPS[self.step][0] and self.binding == "always" and not self.width_global

    @property
    def name(self) -> str:
        return f"gen_{self.spelling}_{self.shape}_{self.step}_{self.binding}" + ("_width_global" if self.width_global else "")


def _binding(kind: str, src: str) -> str:
    return {
        "always": f"metadata = {src}\n",
        "only_in_if": f"if getattr({src}, 'decode_only', False):\n    metadata = {src}\n",
        "none_default": "",
        "rebound_to_none": f"metadata = {src}\nassert metadata is not None\nmetadata = None\n",
    }[kind]


def compose(c: Choice) -> Variant:
    top, local, callee = SPELLINGS[c.spelling]
    keeps, make, post = STEPS[c.step]
    step = make + "\nidx_input = idx_all\n" if keeps else "q, idx = q_all, idx_all\n" + make + "\nq_input, idx_input = q_sel, idx_sel\n"
    width = "idx_input = idx_input[..., :topk_length]\n" if c.width_global else ""
    call = f"out, _, _ = {callee}(q_input, kv, idx_input, scale)  # SITE\n"
    none_param = ", metadata=None" if c.binding == "none_default" else ""
    if c.shape == "helper":
        kernel_fn = "def attend(q_all, kv, idx_all, scale):\n" + textwrap.indent(local + step + width + call + post + "\nreturn out\n", "    ")
        caller = (f"def forward(inp{none_param}):\n"
                  + textwrap.indent(_binding(c.binding, "inp.metadata") + "return attend(inp.q, inp.kv, inp.indices, inp.sm_scale)\n", "    "))
        entry = "def entry(inp):\n    return forward(inp)\n"
        body = kernel_fn + "\n\n" + caller
    else:
        body = (f"def attend(q_all, kv, idx_all, scale, source{none_param}):\n"
                + textwrap.indent(local + _binding(c.binding, "source") + step + width + call + post + "\nreturn out\n", "    "))
        entry = "def entry(inp):\n    return attend(inp.q, inp.kv, inp.indices, inp.sm_scale, inp.metadata)\n"
    glob = "topk_length = 16  # the indexer's width\n\n\n" if c.width_global else ""
    source = HEAD + "import torch\n" + top + "\n\n" + glob + body + "\n\n" + entry
    hazard = "control" if c.safe else "generated"
    return Variant(c.name, hazard, source, expect="fixable" if c.safe else "sound")


def every_choice():
    return [Choice(*t) for t in itertools.product(SPELLINGS, SHAPES, STEPS, BINDINGS, (False, True))]


def sample(n_safe: int = 8, n_unsafe: int = 16, seed: int = 8):
    """A fixed, seeded sample of the combinations, run as named test cases."""
    import random

    rng = random.Random(seed)
    choices = every_choice()
    safe = [c for c in choices if c.safe]
    unsafe = [c for c in choices if not c.safe]
    return [compose(c) for c in rng.sample(safe, n_safe) + rng.sample(unsafe, n_unsafe)]


SAMPLE = sample()
