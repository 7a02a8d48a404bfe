"""Red-team round BB (bb2): a project decorator files the launcher in a table through a registry object's method
(the function is the parameter after `self`), through a factory returning a lambda (not a def of its own), or its
wrapper calls it otherwise than plainly (`fn.__call__(...)`) with the rows sorted: none is proven to only wrap the
function and hand it what its callers hand, so the launcher's rows are not traced."""
import pytest

from test_callers import BACKEND, verdict
from topk_migrate.model import Status

_HEAD = "import functools  # noqa: F401\nimport operator  # noqa: F401\n\n" + BACKEND + "\n\nACTIVE = {}\n_OPS = {}\n\n\n"
# the launcher under the decorators, handing its parameters to the backend's `forward`
_LAUNCHER = "{decorators}def attn_op(q, kv, indices, scale):\n    return ACTIVE['backend'].forward(q, kv, indices, scale)\n"
# the dispatcher: sorts the rows longest-first, calls the launcher (by `call`), un-sorts the output
_SORTED = ("\n\ndef install():\n    ACTIVE['backend'] = Backend()\n\n\ndef entry(q, kv, indices, scale):\n"
           "    order = (indices[:, 0, :] >= 0).sum(dim=-1).argsort(descending=True)\n"
           "    out = {call}(q[order], kv, indices[order], scale)\n    return out[order.argsort()]\n")
_IN_ORDER = ("\n\ndef install():\n    ACTIVE['backend'] = Backend()\n\n\ndef entry(q, kv, indices, scale):\n"
             "    return attn_op(q, kv, indices, scale)\n")


def _source(decorator_src: str, decorators: str, dispatch: str) -> str:
    return _HEAD + decorator_src + "\n\n" + _LAUNCHER.format(decorators=decorators) + dispatch


_REGISTRY = "class Registry:\n    def register(self, fn):\n        {files}\n        return fn\n\n\nops = Registry()\n"
_FACTORY = "def register_op(name):\n    return {returned}\n"
_BALANCED = ("def balanced(fn):\n    @functools.wraps(fn)\n    def sorted_call(q, kv, indices, scale):\n"
             "        order = (indices[:, 0, :] >= 0).sum(dim=-1).argsort(descending=True)\n"
             "        out = {call}(q[order], kv, indices[order], scale)\n        return out[order.argsort()]\n"
             "    return sorted_call\n")
_BALANCED_BY = ("def balanced(label):\n    def deco(fn):\n        @functools.wraps(fn)\n"
                "        def sorted_call(*args):\n            q, kv, indices, scale = args\n"
                "            order = (indices[:, 0, :] >= 0).sum(dim=-1).argsort(descending=True)\n"
                "            out = fn.__call__(q[order], kv, indices[order], scale)\n"
                "            return out[order.argsort()]\n        return sorted_call\n    return deco\n")


@pytest.mark.parametrize("files", [
    "_OPS.setdefault('dsa', fn)",
    "_OPS.update({fn.__name__.removeprefix('attn_'): fn})",
    "_OPS['dsa'] = fn",
])
def test_round_bb_a_registry_method_filing_the_launcher_is_not_only_wrapping(tmp_path, files):
    src = _source(_REGISTRY.format(files=files), "@ops.register\n", _SORTED.format(call='_OPS["dsa"]'))
    site = verdict(tmp_path, src)
    assert site.status is Status.MANUAL and "register" in site.reason, site.reason


@pytest.mark.parametrize("returned", [
    "lambda fn: _OPS.setdefault(name, fn)",
    "functools.partial(_OPS.setdefault, name)",
    "_filer(name)",
])
def test_round_bb_a_factory_returning_no_def_of_its_own_is_not_only_wrapping(tmp_path, returned):
    filer = "def _filer(name):\n    def file(fn):\n        _OPS[name] = fn\n        return fn\n    return file\n\n\n"
    src = _source(filer + _FACTORY.format(returned=returned), '@register_op("dsa")\n', _SORTED.format(call='_OPS["dsa"]'))
    site = verdict(tmp_path, src)
    assert site.status is Status.MANUAL and "register" in site.reason, site.reason


@pytest.mark.parametrize("decorator_src, decorators", [
    (_BALANCED.format(call="fn.__call__"), "@balanced\n"),
    (_BALANCED_BY, '@balanced("dsa")\n'),
])
def test_round_bb_a_wrapper_calling_the_launcher_otherwise_than_plainly_is_not_read(tmp_path, decorator_src, decorators):
    site = verdict(tmp_path, _source(decorator_src, decorators, _IN_ORDER))
    assert site.status is Status.MANUAL, site.reason


# safe twins: a registry method handing the function back (self unused, its name logged), a factory returning a def
# of its own, wrappers reading only the function's name and calling it plainly with their own parameters
_TIMED = ("def timed(fn):\n    @functools.wraps(fn)\n    def wrapper(*args, **kwargs):\n        out = fn(*args, **kwargs)\n"
          "        print(fn.__qualname__, fn.__module__)\n        return out\n    return wrapper\n")
_CHECKED_BY = ("def checked(label):\n    def deco(fn):\n        @functools.wraps(fn)\n"
               "        def wrapper(q, kv, indices, scale):\n            assert q.shape[0] == indices.shape[0], label\n"
               "            return fn(q, kv, indices, scale)\n        return wrapper\n    return deco\n")


@pytest.mark.parametrize("decorator_src, decorators", [
    (_REGISTRY.format(files="print(fn.__name__)"), "@ops.register\n"),
    (_TIMED, "@timed\n"),
    (_CHECKED_BY, '@checked("rows")\n'),
])
def test_round_bb_a_plain_wrapper_forwarding_in_order_stays_fixable(tmp_path, decorator_src, decorators):
    site = verdict(tmp_path, _source(decorator_src, decorators, _IN_ORDER))
    assert site.status is Status.FIXABLE, site.reason
