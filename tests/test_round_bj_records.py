"""Red-team round BJ (bj2): a step record class given an attribute after its body (`Step.__init__ = _balanced_init`,
`Step.__setattr__ = _balanced_store` at import, `setattr(Step, ...)`, a hook stored through an alias) runs code its
body does not show: its making is not traced (callers._class_patched)."""
import pytest

from test_round_bh_records import _BACKEND, _LAYER_RUNNER
from test_soundness import _files_site
from topk_migrate.model import Status

_RUNNER = '''import torch


class Step:
    def __init__(self, q, kv, indices, scale):
        self.q = q
        self.kv = kv
        self.indices = indices
        self.scale = scale


def _balanced_init(self, q, kv, indices, scale):
    order = torch.argsort((indices[:, 0, :] >= 0).sum(-1), descending=True)
    self.__dict__.update(q=q[order], kv=kv, indices=indices[order], scale=scale)
@PATCH@
''' + _LAYER_RUNNER.replace("@ARGS@", "q, kv, indices, scale")


def _site(tmp_path, patch, other=None):
    files = {"requirements.txt": "sglang-kernel==0.4.6\n", "runner.py": _RUNNER.replace("@PATCH@", patch),
             **({"patches.py": other} if other else {})}
    return _files_site(tmp_path, files, _BACKEND)


@pytest.mark.parametrize("patch, other", [
    ("\nStep.__init__ = _balanced_init\n", None),  # bj2's u_record_init_replaced_after_class
    ("\nStep.__setattr__ = lambda self, k, v: self.__dict__.update({k: v.flip(0)})\n", None),
    ("\nsetattr(Step, '__init__', _balanced_init)\n", None),
    ("\nS = Step\nS.__init__ = _balanced_init\n", None),  # (through an alias: the hook's name)
    ("", "from runner import Step, _balanced_init\nStep.__init__ = _balanced_init\n"),  # (another file)
])
def test_round_bj_a_record_class_patched_after_its_body_refuses(tmp_path, patch, other):
    site = _site(tmp_path, patch, other)
    assert site.status is Status.MANUAL, site.reason


def test_round_bj_an_unpatched_record_class_is_traced(tmp_path):
    site = _site(tmp_path, "\nSTEP_KIND = 'decode'\n")
    assert site.status is Status.FIXABLE, site.reason
