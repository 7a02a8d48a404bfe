"""Smoke pieces that need no torch: the light import, and helper isolation."""
import subprocess
import sys

import pytest

from topk_migrate.codemods.pass_topk_length.smoke import isolate

SRC = '''from __future__ import annotations
import math
from typing import Optional
from bigengine.layers import Backend, engine_helper  # never importable here

SCALE = 2.0


def _double(x):
    return x * SCALE


class B(Backend):
    def helper(self, q_all: Optional[Engine] = None):
        if q_all is None:
            from sgl_kernel.flash_mla import flash_mla_sparse_fwd
            return flash_mla_sparse_fwd()
        return self._prep(_double(q_all)) + math.floor(self.bias)

    def _prep(self, x):
        return x + self.offset

    def caller_a(self):
        metadata = self.forward_metadata
        return self.helper(q_all=1, topk_length=metadata.lens)

    def caller_b(self):
        return self.helper(q_all=2)

    def unrelated(self):
        return engine_helper()
'''


def test_importing_the_smoke_command_does_not_import_torch():
    """The CLI finds `smoke` in the registry (the rule's INFO.proof) and imports its command: no torch."""
    code = ("import sys, click; from topk_migrate.cli import main; "
            "print(main.get_command(click.Context(main), 'smoke').name, 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["smoke", "False"], out.stdout + out.stderr


def test_isolates_the_helper_with_what_it_needs_and_nothing_else():
    iso = isolate.isolate(SRC, "b.py", "B.helper")
    assert iso.module_names == ["SCALE", "_double", "math"]  # not bigengine, not the annotation's Engine
    assert iso.self_attrs == {"bias", "offset"}
    fn = iso.bind({"bias": 1.5, "offset": 10})
    assert fn(q_all=3) == 3 * 2.0 + 10 + 1


def test_missing_self_attribute_is_named():
    iso = isolate.isolate(SRC, "b.py", "B.helper")
    with pytest.raises(isolate.IsolationError, match=r"self\.offset"):
        iso.bind({"bias": 1})


def test_engine_imports_are_refused_by_name():
    with pytest.raises(isolate.IsolationError, match="engine_helper.*bigengine"):
        isolate.isolate(SRC, "b.py", "B.unrelated")


def test_helper_is_found_by_its_kernel_call_and_callers_are_read():
    import ast

    assert isolate.pick_helper(ast.parse(SRC), None) == "B.helper"
    args = isolate.caller_arguments(SRC, "B.helper")
    assert args == {"caller_a:25": "metadata.lens", "caller_b:28": None}
    with pytest.raises(isolate.IsolationError, match="no top-level function or method"):
        isolate.pick_helper(ast.parse(SRC), "B.nope")
