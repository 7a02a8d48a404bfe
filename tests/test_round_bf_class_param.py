"""Red-team round BF: a record class handed in as an argument (`plan(inp.Meta, lens)` calling `record_cls(lens)`):
the call of a parameter some caller hands a class that may be the record's is a construction whose positional slots
are not read (reach._handed_class); a parameter handed functions and lambdas stays an ordinary callback."""
import pytest

from test_round_bd import _HANDED
from test_soundness import _files_site
from topk_migrate.model import Status

_PLAN = "\n\ndef plan(record_cls, lens):\n    return record_cls(lens)\n"
_FLIP = "batch.lengths.flip(0)"
_FACTORY = ("\n\ndef checked(label):\n    def deco(fn):\n        def wrapped(lens):\n            return fn(lens)\n"
            "        return wrapped\n    return deco\n")
_APPLY = "\n\ndef apply(fn, lens):\n    return fn(lens)\n\n\ndef order(batch):\n    return apply({fn}, batch.lengths)\n"


@pytest.mark.parametrize("top, record, fixable", [
    (_PLAN, f"plan(batch.Meta, {_FLIP})", False),
    (_PLAN, f"plan(type(batch.metadata), {_FLIP})", False),
    (_PLAN, f"plan(batch.metadata.__class__, lens={_FLIP})", False),
    # a local bound to the parameter, a keyword-only parameter, a def handing its own parameter on
    ("\n\ndef plan(record_cls, lens):\n    make = record_cls\n    return make(lens)\n",
     f"plan(batch.Meta, {_FLIP})", False),
    ("\n\ndef plan(lens, *, record_cls):\n    return record_cls(lens)\n", f"plan({_FLIP}, record_cls=batch.Meta)", False),
    (_PLAN + "\n\ndef outer(cls, lens):\n    return plan(cls, lens)\n", f"outer(type(batch.metadata), {_FLIP})", False),
    # a nested def, a lambda bound to a name, a method of a helper class
    ("\n\ndef build(batch):\n    def make(cls):\n        return cls(batch.lengths.flip(0))\n"
     "    return make(type(batch.metadata))\n", "build(batch)", False),
    ("\n\nmake = lambda cls, lens: cls(lens)\n", f"make(type(batch.metadata), {_FLIP})", False),
    ("\n\nclass Planner:\n    def build(self, record_cls, lens):\n        return record_cls(lens)\n",
     f"Planner().build(batch.Meta, {_FLIP})", False),
    # the def read as a value (a registry): its callers are not all seen
    (_PLAN + '\n\nPLANNERS = {"sched": plan}\n', f'PLANNERS["sched"](batch.Meta, {_FLIP})', False),
    # safe twins: the record handed on as is; a parameter handed functions, lambdas or a library's class
    (_PLAN, "batch.metadata", True),
    (_APPLY.replace("{fn}", "lambda t: t.argsort()"), "batch.metadata", True),
    (_APPLY.replace("{fn}", "torch.argsort"), "batch.metadata", True),
    (_APPLY.replace("{fn}", "torch.IntTensor"), "batch.metadata", True),
    ("\n\ndef deco(fn):\n    def wrapped(lens):\n        return fn(lens)\n    return wrapped\n\n\n@deco\n"
     "def order(lens):\n    return lens.argsort()\n", "batch.metadata", True),
    # a decorator factory used only on defs (its nested decorator is handed a function); its result handed a class
    (_FACTORY + "\n\n@checked('rows')\ndef order(lens):\n    return lens.argsort()\n", "batch.metadata", True),
    (_FACTORY, f"checked('rows')(batch.Meta)({_FLIP})", False),
    # a lambda bound to a local is a function, not the parameter it closes over; a def read as a value is handed
    # no record class where none is loose in the project
    ("\n\ndef labels(items, root):\n    rel = lambda p: (root, p)\n    return [rel(p) for p in items]\n\n\n"
     "TOOLS = {'labels': labels}\n", "batch.metadata", True),
])
def test_round_bf_a_record_class_handed_as_an_argument_is_not_read(tmp_path, top, record, fixable):
    src = _HANDED.replace("{top}", top).replace("{record}", record)
    site = _files_site(tmp_path, {"requirements.txt": "sglang-kernel==0.4.6\n"}, src)
    assert (site.status is Status.FIXABLE) is fixable, site.reason
    assert fixable or "not read" in site.reason, site.reason


_PLANNER = "def plan(record_cls, lens):\n    return record_cls(lens)\n"


@pytest.mark.parametrize("top, record, fixable", [
    ("from planner import plan", f"plan(batch.Meta, {_FLIP})", False),
    ("import planner", f"planner.plan(type(batch.metadata), {_FLIP})", False),
    # safe twin: the other file's def handed a library's function
    ("from planner import plan", "batch.metadata if plan(torch.argsort, batch.lengths) is not None else None", True),
])
def test_round_bf_a_record_class_handed_to_a_def_of_a_file_naming_no_record(tmp_path, top, record, fixable):
    src = _HANDED.replace("{top}", top).replace("{record}", record)
    site = _files_site(tmp_path, {"requirements.txt": "sglang-kernel==0.4.6\n", "planner.py": _PLANNER}, src)
    assert (site.status is Status.FIXABLE) is fixable, site.reason
    assert fixable or "not read" in site.reason, site.reason
