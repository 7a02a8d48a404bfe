"""Red-team round BA (ba2): a caller registered by a decorator under a name it does not bear (a torch custom op's
`torch.ops.fork.attn`, a singledispatch implementation, a registry's entry) is called where its name is not spelled;
the walk of callers, reading its name, finds none and must not take it for an entry point."""
import pytest

from test_callers import BACKEND, verdict
from topk_migrate.model import Status

# the launcher: sorts the rows longest-first, calls the registered name, un-sorts the output
_SORTED = ("    order = (indices[:, 0, :] >= 0).sum(dim=-1).argsort(descending=True)\n"
           "    out = {call}(q[order], kv, indices[order], scale)\n    return out[order.argsort()]\n")


def _op(decorators: str, name: str = "attn_op", head: str = "import torch\n") -> str:
    """A def under `decorators` handing its parameters to the backend's `forward`."""
    return (f"{head}\nACTIVE = {{}}\n\n\n{decorators}def {name}(q, kv, indices, scale):\n"
            "    return ACTIVE['backend'].forward(q, kv, indices, scale)\n")


_REGISTERING = [
    '@torch.library.custom_op("fork::attn", mutates_args=())\n',
    '@torch.library.custom_op(name="fork::attn", mutates_args=())\n',
    '@torch.library.impl("fork::attn", "CUDA")\n',
    '@torch.no_grad()\n@torch.library.register_kernel("fork::attn", "cuda")\n',
]
# project decorators registering the function they are handed (no string needed)
_REGISTRY = "import torch\n\nOPS = []\n\n\ndef as_op(fn):\n    return torch.library.custom_op('fork::attn', mutates_args=())(fn)\n\n\n" \
    "def listed(fn):\n    OPS.append(fn)\n    return fn\n"


@pytest.mark.parametrize("decorators", _REGISTERING)
def test_round_ba_a_library_registered_op_in_the_module_is_not_an_entry(tmp_path, decorators):
    src = BACKEND + "\n\n" + _op(decorators, head="") + "\n\ndef entry(q, kv, indices, scale, md):\n" \
        "    ACTIVE['backend'] = Backend()\n" + _SORTED.format(call="torch.ops.fork.attn")
    site = verdict(tmp_path, src)
    assert site.status is Status.MANUAL and "register" in site.reason, site.reason


@pytest.mark.parametrize("decorators", _REGISTERING + ["@as_op\n", "@listed\n"])
def test_round_ba_a_registered_op_in_another_file_is_not_an_entry(tmp_path, decorators):
    ops = _op(decorators, head="import torch\n\nfrom registry import as_op, listed  # noqa: F401\n")
    launcher = "import torch\n\nimport ops  # noqa: F401\nfrom registry import OPS\n\n\ndef run(q, kv, indices, scale):\n" \
        + _SORTED.format(call="torch.ops.fork.attn" if "torch" in decorators else "OPS[0]")
    site = verdict(tmp_path, others=[("registry.py", _REGISTRY), ("ops.py", ops), ("launcher.py", launcher)])
    assert site.status is Status.MANUAL and "register" in site.reason, site.reason


# safe twins: decorators that only wrap the function, bound under its own name (torch's, functools', a project's
# wrapper, a project factory taking a label string): its callers spell it, and hand the rows in order
_WRAPPING = [
    '@torch.compile(mode="max-autotune-no-cudagraphs")\n',
    "@torch.no_grad()\n@torch.inference_mode()\n",
    "@functools.lru_cache(maxsize=None)\n",
    "@timed\n",
    '@traced("dsa attention")\n',
]
_WRAPPERS = ("import functools\n\nimport torch\n\n\ndef timed(fn):\n    @functools.wraps(fn)\n"
             "    def wrapper(*args, **kwargs):\n        return fn(*args, **kwargs)\n    return wrapper\n\n\n"
             "def traced(label):\n    def deco(fn):\n        @functools.wraps(fn)\n        def wrapper(*args, **kwargs):\n"
             "            return fn(*args, **kwargs)\n        return wrapper\n    return deco\n")


@pytest.mark.parametrize("decorators", _WRAPPING)
def test_round_ba_a_wrapped_launcher_is_read_through_its_name(tmp_path, decorators):
    ops = _op(decorators, head="import functools  # noqa: F401\n\nimport torch  # noqa: F401\n\n"
              "from wrappers import timed, traced  # noqa: F401\n")
    launcher = "from ops import attn_op\n\n\ndef run(q, kv, indices, scale):\n    return attn_op(q, kv, indices, scale)\n"
    site = verdict(tmp_path, others=[("wrappers.py", _WRAPPERS), ("ops.py", ops), ("launcher.py", launcher)])
    assert site.status is Status.FIXABLE, site.reason


@pytest.mark.parametrize("decorators", _WRAPPING[:3])
def test_round_ba_a_wrapped_launcher_in_the_module_is_read_through_its_name(tmp_path, decorators):
    src = "import functools  # noqa: F401\n\n" + BACKEND + "\n\n" + _op(decorators, head="") + \
        "\n\ndef install():\n    ACTIVE['backend'] = Backend()\n\n\ndef entry(q, kv, indices, scale):\n" \
        "    return attn_op(q, kv, indices, scale)\n"
    site = verdict(tmp_path, src)
    assert site.status is Status.FIXABLE, site.reason
