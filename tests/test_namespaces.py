"""Identity across the project, red-team rounds F and G (results/red-team.md): what can replace the kernel at
run time through something other than an assignment spelling its name, and the real engines' reflective code
that must stay fixable. Each case is one file of a fork beside the backend of test_reach (the reference shape)."""
import pytest

from test_reach import BACKEND, verdict
from topk_migrate.api import migrate_source
from topk_migrate.model import Status

WRAP = "def wrap(fn):\n    def old(q, kv, indices, sm_scale, d_v=512):\n        return fn(q, kv, indices, sm_scale, d_v)\n    return old\n\n\n"
FM_BACKEND = BACKEND.replace("from sgl_kernel.flash_mla import flash_mla_sparse_fwd",
                             "from sgl_kernel import flash_mla as fm").replace(
    "return flash_mla_sparse_fwd(", "return fm.flash_mla_sparse_fwd(")


def _manual(site, where):
    return site.status is Status.MANUAL and where in site.reason


@pytest.mark.parametrize("tool", [
    # a namespace got at run time, written however it is spelled
    "import operator\nfrom sgl_kernel import flash_mla as fm\n\noperator.setitem(fm.__dict__, 'flash_mla_sparse_fwd', wrap(fm))\n",
    "from sgl_kernel.flash_mla import flash_mla_sparse_fwd as old\n\nold.__globals__['flash_mla_sparse_fwd'] = wrap(old)\n",
    "from unittest import mock\n\nmock.patch.multiple('sgl_kernel.flash_mla', flash_mla_sparse_fwd=wrap(None)).start()\n",
    "from unittest.mock import patch as p\n\np('sgl_kernel.flash_mla.flash_mla_sparse_fwd', wrap(None)).start()\n",
    "from unittest import mock\nfrom sgl_kernel import flash_mla as fm\n\nmock.patch.dict(fm.__dict__, {'x': 1}).start()\n",
    "import sys\n\n_ns = sys.modules['sgl_kernel.flash_mla'].__dict__\n_ns.update({k: wrap(v) for k, v in _ns.items()})\n",
    "import importlib\n\n_m = importlib.import_module('sgl_kernel.flash_mla')\n_set = getattr(type(_m), '__setattr__')\n"
    "_set(_m, 'flash_mla_sparse_fwd', wrap(None))\n",
    "from importlib import import_module as load\n\ndef override(path, attr):\n    setattr(load(path), attr, wrap(None))\n\n\n"
    "override('sgl_kernel.flash_mla', 'flash_mla_sparse_fwd')\n",
    "import pkgutil\n\ntarget = pkgutil.resolve_name('sgl_kernel.flash_mla')\nsetattr(target, NAME, None)\n",
    "import gc\nfrom sgl_kernel.flash_mla import flash_mla_sparse_fwd as old\n\n"
    "for d in gc.get_referrers(old):\n    d['flash_mla_sparse_fwd'] = wrap(old)\n",
    "import types\nfrom engine import backend\n\nf = backend.Backend.forward\n"
    "backend.Backend.forward = types.FunctionType(f.__code__, dict(f.__globals__), f.__name__)\n",
    "import builtins\n\n_real = builtins.__import__\n\ndef hook(name, *a, **k):\n    return _real(name, *a, **k)\n\n\n"
    "builtins.__import__ = hook\n",
    # the module named by an object handed over: every binding of the old function replaced
    "import pkgutil\nfrom sgl_kernel.flash_mla import flash_mla_sparse_fwd as old\n\ndef replace(f, new):\n"
    "    home = pkgutil.resolve_name(f.__module__)\n    for k, v in list(vars(home).items()):\n"
    "        if v is f:\n            setattr(home, k, new)\n\n\nreplace(old, wrap(old))\n",
    # the names the call reads the kernel through: its package's attribute, the module's class, the code
    "import sgl_kernel\nimport types\n\nsgl_kernel.flash_mla = types.SimpleNamespace(flash_mla_sparse_fwd=wrap(None))\n",
    "from sgl_kernel import flash_mla as fm\nimport types\n\nclass Timed(types.ModuleType):\n    pass\n\n\nfm.__class__ = Timed\n",
    "from sgl_kernel.flash_mla import flash_mla_sparse_fwd as old\n\nold.__code__ = wrap.__code__\n",
])
def test_a_replacement_of_the_kernel_through_any_route_refuses(tmp_path, tool):
    site = verdict(tmp_path, {"engine/tool.py": WRAP + tool, "engine/launch.py": "from engine import tool\n"})
    assert _manual(site, "engine/tool.py"), site.reason


@pytest.mark.parametrize("tool", [
    "from engine import backend\n\nbackend.fm = None\n",  # the module's own name for the kernel's module
    "from engine import backend\n\nvars(backend)['fm'] = None\n",
    "import types\nfrom engine import backend\n\nbackend.sgl_kernel = types.SimpleNamespace()\n",  # the package's name
    "from engine import backend\n\ndef instrument(m):\n    HELD.append(m)\n\n\ninstrument(backend)\n",  # handed on
])
def test_the_name_the_module_reads_the_kernel_through_is_the_kernels(tmp_path, tool):
    site = verdict(tmp_path, {"engine/tool.py": tool}, backend=FM_BACKEND)
    assert _manual(site, "engine/tool.py"), site.reason


@pytest.mark.parametrize("tool", [
    # sglang 0.5.14-0.5.16's own: a triton stub for another platform, a JIT cache dropped, plugin hooks whose
    # targets only a plugin's data names, a metadata copy with setattr, a source patcher driven by a YAML file
    "import sys\n\ndef find_spec(fullname, mod):\n    if fullname == 'triton' or fullname.startswith('triton.'):\n"
    "        sys.modules[fullname] = mod\n        parent_name, child = fullname.rsplit('.', 1)\n"
    "        parent = sys.modules.get(parent_name)\n        if parent is not None:\n            setattr(parent, child, mod)\n",
    "import sys\n\ndef reload_ext(name):\n    sys.modules.pop(name, None)\n",
    "import sys\n\nsys.modules.setdefault('triton', object())\n",
    "import sys\n\ndef propagate(original, wrapped):\n    for mod in list(sys.modules.values()):\n"
    "        for k, v in list(vars(mod).items()):\n            if v is original:\n                setattr(mod, k, wrapped)\n",
    "def patch_code(target, new):\n    exec(compile('x = 1', 'f', 'exec'), target.__globals__, {})\n    target.__code__ = new.__code__\n",
    "import inspect\nimport json\nfrom sgl_kernel import flash_mla as fm\n\nKERNELS = inspect.getmembers(fm, inspect.isfunction)\n\n"
    "def dump(args):\n    return json.dumps(vars(args))\n",
    "import importlib\n\ndef load_custom(path_from_model_config):\n"
    "    spec = importlib.util.spec_from_file_location('_custom', path_from_model_config)\n"
    "    spec.loader.exec_module(importlib.util.module_from_spec(spec))\n",
])
def test_reflective_code_that_provably_misses_the_kernel_stays_fixable(tmp_path, tool):
    site = verdict(tmp_path, {"engine/tool.py": tool, "engine/launch.py": "from engine import tool\n"})
    assert site.status is Status.FIXABLE, site.reason


@pytest.mark.parametrize("loader,fixable", [
    ("import importlib\n\nfor name in ('experiments.ab_test',):\n    importlib.import_module(name)\n", False),
    ("__import__('test_time_scaling')\n", False),
    ("import importlib\nimport pkgutil\nimport plugins\n\nfor m in pkgutil.iter_modules(plugins.__path__, 'plugins.'):\n"
     "    importlib.import_module(m.name)\n", False),
    ("import runpy\nimport os\n\nrunpy.run_path(os.path.join(os.path.dirname(__file__), 'deploy', 'overrides.conf'))\n", False),
    ("", True),  # nothing imports the test-named files: test code, not read
])
def test_a_test_named_module_the_project_may_import_is_read(tmp_path, loader, fixable):
    patch = "from engine import backend\n\nbackend.Backend._forward_flashmla_sparse = None\n"
    files = {"experiments/__init__.py": "", "experiments/ab_test.py": patch, "test_time_scaling.py": patch,
             "plugins/__init__.py": "", "plugins/perf_test.py": patch, "launch.py": loader}
    site = verdict(tmp_path, files)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


SELF_FM = BACKEND.replace("from sgl_kernel.flash_mla import flash_mla_sparse_fwd",
                          "from sgl_kernel import flash_mla as fm\n{extra}").replace(
    "class Backend:\n", "class Backend:\n    def __init__(self):\n        {init}\n\n").replace(
    "return flash_mla_sparse_fwd(", "return self.fm.flash_mla_sparse_fwd(")


@pytest.mark.parametrize("extra,init,fixable", [
    ("", "self.fm = fm", True),
    ("import flash_mla as vendored", "self.fm = vendored", False),  # another module: gated as a call of it would be
    ("", "self.fm, self.tag = fm, 1", False),  # writes the analysis does not read as a source
    ("", "self.fm: object = fm", False),
    ("", "self.fm = self.fm2 = fm", False),
    ("", "setattr(self, 'fm', fm)", False),
    ("\nif BALANCED:\n    fm = load_balanced()\n", "self.fm = fm", False),  # the module's name bound again
])
def test_what_self_fm_holds_is_every_write_of_it_each_gated(tmp_path, extra, init, fixable):
    """Round H: `self.fm.flash_mla_sparse_fwd(...)` is the kernel only where every write of `fm` in the module is
    a plain `self.fm = <import>` of a module the gate accepts, and that import is the name's only binding."""
    site = verdict(tmp_path, {}, backend=SELF_FM.format(extra=extra, init=init))
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("files", [
    {"engine/idx.py": "import torch\n\n\nclass IndexBase(torch.Tensor):\n    pass\n",
     "engine/idx2.py": "from engine.idx import IndexBase\n\n\nclass IndexTensor(IndexBase):\n"
                       "    def view(self, *shape):\n        return super().view(*shape)\n"},  # a grandchild elsewhere
    {"engine/idx.py": "from torch import Tensor as TensorBase\n\n\ndef _checked(self, *a):\n    return self\n\n\n"
                      "class IndexTensor(TensorBase):\n    view = _checked\n"},  # an aliased base, a method assigned
    {"engine/idx.py": "import torch\n\n\nclass NoReinterpret:\n    def view(self, *a):\n        return self\n\n\n"
                      "class IndexTensor(NoReinterpret, torch.Tensor):\n    pass\n"},  # a mixin's method
    {"engine/debug.py": "import torch\n\n\ndef strict(self, *a):\n    return self\n\n\ndef on():\n"
                        "    torch.Tensor.view = strict\n"},  # the method replaced for every tensor
])
def test_tensor_ops_changed_anywhere_refuse_the_derived_lengths(tmp_path, files):
    """(A tensor of the subclass is made: one nothing makes cannot be the indices, test_derived.py.)"""
    if "engine/idx.py" in files:
        maker = "engine.idx2" if "engine/idx2.py" in files else "engine.idx"
        files = {**files, "engine/wrap.py": f"from {maker} import IndexTensor\n\n\ndef wrap(t):\n"
                                            f"    return t.as_subclass(IndexTensor)\n"}
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    (tmp_path / ".git").mkdir()
    backend = ("import torch\nfrom sgl_kernel.flash_mla import flash_mla_sparse_fwd\n\n\n"
               "def attend(q, kv, idx):\n    return flash_mla_sparse_fwd(q, kv, idx, 1.0)\n")
    path = tmp_path / "engine" / "backend.py"
    path.parent.mkdir(exist_ok=True)
    path.write_text(backend)
    (site,) = migrate_source(backend, str(path), kernel="sglang-kernel==0.4.6", lengths="derived").sites
    assert site.status is Status.MANUAL and "the ops the derived lengths add would reach it" in site.reason, site.reason


def test_self_fm_set_from_a_module_of_the_project_is_not_the_kernel(tmp_path):
    kops = ("from sgl_kernel.flash_mla import flash_mla_sparse_fwd as _raw\n\n\n"
            "def flash_mla_sparse_fwd(q, kv, indices, sm_scale, d_v=512, attn_sink=None, topk_length=None):\n"
            "    return _raw(q, kv, indices, sm_scale, d_v, attn_sink, topk_length)\n")
    site = verdict(tmp_path, {"engine/kops.py": kops}, backend=SELF_FM.format(extra="from engine import kops",
                                                                              init="self.fm = kops"))
    assert site.status is Status.MANUAL and "a module of this project" in site.reason, site.reason


# Round H1 (results/red-team.md): a module reached by a name, then written through what is read off it.
LOOP = "    for attr in dir(mod):\n        if attr.endswith('_sparse_fwd'):\n            setattr(mod, attr, wrap(getattr(mod, attr)))\n"


@pytest.mark.parametrize("get", [
    "import sgl_kernel\n\nSUBS = ('flash_mla',)\n\ndef install():\n  for sub in SUBS:\n    mod = getattr(sgl_kernel, sub)\n",
    "import sgl_kernel\n\ndef install():\n    mod = getattr(sgl_kernel, 'flash_mla')\n",
    "import importlib\n\ndef install():\n    mod = importlib.import_module('sgl_kernel').flash_mla\n",
    "def install():\n    mod = __import__('sgl_kernel', fromlist=['flash_mla']).flash_mla\n",
    "import sys\n\ndef install():\n    mod = sys.modules['sgl_kernel'].flash_mla\n",
    "import importlib\n\ndef install():\n    mod = importlib.import_module('.flash_mla', package='sgl_kernel')\n",
    "import importlib\n\ndef install():\n    for sub in ('flash_mla',):\n        mod = importlib.import_module(f'.{sub}', 'sgl_kernel')\n",
    "import importlib\n\ndef install(name='flashmla_compat'):\n    if name.startswith('flashmla_compat'):\n"
    "        name = 'sgl_kernel.flash_mla'\n        mod = importlib.import_module(name)\n",
    "import sys\n\ndef install():\n  for name, mod in dict(sys.modules).items():\n    if name == 'sgl_kernel.flash_mla':\n",
    "import sys\n\ndef install():\n  for name, mod in [*sys.modules.items()]:\n    if name == 'sgl_kernel.flash_mla':\n",
    "import sys\n\ndef install():\n  loaded = list(sys.modules.values())\n  for mod in loaded:\n    if 'flash_mla' in str(mod):\n",
    "import inspect\nimport sgl_kernel\n\ndef install():\n  for _, mod in inspect.getmembers(sgl_kernel, inspect.ismodule):\n",
    "import operator\nimport sgl_kernel\n\ndef install():\n    mod = operator.attrgetter('flash_mla')(sgl_kernel)\n",
    "import importlib\n\ndef install():\n    load = importlib.import_module\n    mod = load('sgl_kernel.flash_mla')\n",
    "import importlib\n\ndef install():\n  for n in 'sgl_kernel.flash_mla other.module'.split():\n    mod = importlib.import_module(n)\n",
    "import sgl_kernel\n\ndef install():\n    mod = sgl_kernel.__dict__['flash_mla']\n",
    "import sys\n\ndef install():\n    mod = getattr(sys, 'modules')['sgl_kernel.flash_mla']\n",
    "import os\n\ndef install():\n    mod = os.sys.modules['sgl_kernel.flash_mla']\n",
    "import sys\n\ndef install():\n    mod = sys.__dict__['modules']['sgl_kernel.flash_mla']\n",
])
def test_a_module_reached_by_a_name_then_written_refuses(tmp_path, get):
    tool = WRAP + _indent_loop(get) + "\n\ninstall()\n"
    site = verdict(tmp_path, {"engine/tool.py": tool, "engine/launch.py": "from engine import tool\n"})
    assert _manual(site, "engine/tool.py"), (site.reason, tool)


def _indent_loop(get: str) -> str:
    """The loop of LOOP under the last line of get (deeper where that line opens a block)."""
    last = get.rstrip("\n").splitlines()[-1]
    pad = len(last) - len(last.lstrip()) + (2 if last.rstrip().endswith(":") else 0)
    return get + "".join(" " * (pad - 4) + line + "\n" for line in LOOP.splitlines())


@pytest.mark.parametrize("tool", [
    # sys.meta_path: a finder serving the kernel's module, or a package's search path shadowed
    "import importlib.abc\nimport sys\n\nclass F(importlib.abc.MetaPathFinder):\n    def find_spec(self, name, path, t=None):\n"
    "        return None if name != 'sgl_kernel.flash_mla' else None\n\n\nsys.meta_path.insert(0, F())\n",
    "import sgl_kernel\n\nsgl_kernel.__path__.insert(0, '/opt/compat')\n",
    "import sys\n\nsys.modules['sgl_kernel.flash_mla'].__class__ = type('M', (type(sys),), {})\n",
    # the code that replaces the kernel kept in a file that is not Python, run by exec
    "import os\n\n_HOOKS = os.path.join(os.path.dirname(__file__), 'kernel_hooks.pyhook')\n\nwith open(_HOOKS) as f:\n"
    "    exec(compile(f.read(), _HOOKS, 'exec'), {'__name__': 'kernel_hooks'})\n",
    "import pathlib\n\nexec(pathlib.Path('hooks/kernels.txt').read_text())\n",
])
def test_the_import_system_or_a_modules_class_changed_refuses(tmp_path, tool):
    site = verdict(tmp_path, {"engine/tool.py": tool, "engine/launch.py": "from engine import tool\n"})
    assert _manual(site, "engine/tool.py"), site.reason


@pytest.mark.parametrize("files", [
    # a registry hands on a class it reads by a configured name; a finder serving triton only; a census of
    # tensors; a stub installer of the test suite that only the tests call
    {"engine/registry.py": "import importlib\n\nBACKENDS = {'dsa': 'engine.backend:Backend'}\n\ndef get_cls(name):\n"
                           "    module, _, cls = BACKENDS[name].partition(':')\n    return getattr(importlib.import_module(module), cls)\n"},
    {"engine/stub.py": "import importlib.abc\nimport sys\n\nclass F(importlib.abc.MetaPathFinder):\n"
                       "    def find_spec(self, name, path, t=None):\n        return None if name != 'triton' else None\n\n\n"
                       "sys.meta_path.insert(0, F())\n"},
    {"engine/mem.py": "import gc\nimport torch\n\ndef live():\n    total = 0\n    for obj in gc.get_objects():\n"
                      "        if torch.is_tensor(obj):\n            total += obj.numel()\n    return total\n"},
    {"engine/test/utils.py": "import sys\n\ndef maybe_stub_sgl_kernel():\n    class F:\n        def find_spec(self, name, p, t=None):\n"
                             "            return None if not name.startswith('sgl_kernel') else None\n"
                             "    sys.meta_path.insert(0, F())\n",
     "engine/bench.py": "from engine.test import utils\n"},
])
def test_reflection_that_provably_leaves_the_kernel_stays_fixable(tmp_path, files):
    site = verdict(tmp_path, {**files, "engine/launch.py": "from engine import tool\n", "engine/tool.py": "X = 'sgl_kernel.flash_mla'\n"})
    assert site.status is Status.FIXABLE, site.reason


# The methods the rows are taken from (the helper's callers: Backend.forward here) are what the engine calls
# with the batch's rows; another file may not put other rows in (round H1 u42-u44).
@pytest.mark.parametrize("tool,fixable", [
    ("from engine.backend import Backend\n\n_orig = Backend.forward\n\ndef balanced(self, q, kv, idx):\n"
     "    order = idx.argsort()\n    return _orig(self, q[order], kv, idx[order])\n\n\nBackend.forward = balanced\n", False),
    ("from engine import backend\n\ndef install(cls, name, fn):\n    setattr(cls, name, fn)\n\n\n"
     "install(backend.Backend, 'forward', lambda self, q, kv, idx: None)\n", False),
    ("from engine.backend import Backend\n\nclass Balanced(Backend):\n    def forward(self, q, kv, idx):\n"
     "        order = idx.argsort()\n        return super().forward(q[order], kv, idx[order])\n", False),
    ("from engine.backend import Backend\n\nclass Logged(Backend):\n    def forward(self, q, kv, idx):\n"
     "        return super().forward(q, kv, idx)\n", True),
])
def test_the_rows_the_engine_hands_the_callers_are_not_reordered(tmp_path, tool, fixable):
    site = verdict(tmp_path, {"engine/tool.py": tool, "engine/launch.py": "from engine import tool\n"})
    assert (site.status is Status.FIXABLE) == fixable and (fixable or "engine/tool.py" in site.reason), site.reason


@pytest.mark.parametrize("decorator,fixable", [
    ("@balanced", False),  # the project's wrapper: what the engine calls, rows reordered or not
    ("@torch.no_grad()", True),  # hands every argument on
])
def test_a_decorator_on_the_method_the_rows_come_from_refuses_unless_it_hands_them_on(tmp_path, decorator, fixable):
    backend = BACKEND.replace("    def forward(self, q, kv, idx):", f"    {decorator}\n    def forward(self, q, kv, idx):").replace(
        "import torch\n", "import torch\nfrom engine.util import balanced\n")
    util = "def balanced(fn):\n    def w(self, q, kv, idx):\n        o = idx.argsort()\n        return fn(self, q[o], kv, idx[o])\n    return w\n"
    site = verdict(tmp_path, {"engine/util.py": util}, backend=backend)
    assert (site.status is Status.FIXABLE) == fixable, site.reason


@pytest.mark.parametrize("ignore,where", [
    ("local_overrides.py\n", "local_overrides.py"),  # a gitignored module the project imports by its name
    ("engine/site_patch.py\n", "engine/site_patch.py"),
])
def test_a_gitignored_module_the_code_imports_is_read(tmp_path, ignore, where):
    (tmp_path / ".gitignore").write_text(ignore)
    name = where[:-3].replace("/", ".")
    patch = "import sgl_kernel.flash_mla as fm\n\ndef old(q, kv, i, s, d_v=512):\n    return None\n\n\nfm.flash_mla_sparse_fwd = old\n"
    site = verdict(tmp_path, {"engine/__init__.py": "", "engine/launch.py": f"try:\n    import {name}  # noqa: F401\nexcept ImportError:\n"
                              "    pass\n", where: patch})
    assert _manual(site, where), site.reason


def test_a_build_folders_copies_are_not_the_projects_code(tmp_path):
    (tmp_path / ".gitignore").write_text("build/\n")
    stale = "import sgl_kernel.flash_mla as fm\n\nfm.flash_mla_sparse_fwd = None\n"
    site = verdict(tmp_path, {"engine/__init__.py": "", "engine/launch.py": "import engine.tool  # noqa: F401\n",
                              "engine/tool.py": "X = 1\n", "build/lib/engine/tool.py": stale})
    assert site.status is Status.FIXABLE, site.reason


# Round I (results/red-team.md): namespaces reached through frames and hand-offs, the import system spelled otherwise.
@pytest.mark.parametrize("files", [
    {"engine/tool.py": "import sys\n\ndef instrument_caller():\n    ns = sys._getframe(1).f_globals\n"
                       "    for name, value in list(ns.items()):\n        if name.endswith('_sparse_fwd'):\n            ns[name] = None\n",
     "engine/launch.py": "from engine import tool\n"},
    {"engine/tool.py": "def trace(*fns):\n    for fn in fns:\n        ns = fn.__globals__\n        for k in list(ns):\n"
                       "            if k.endswith('_fwd'):\n                ns[k] = None\n",
     "engine/launch.py": "from engine.backend import Backend\nfrom engine.tool import trace\n\ntrace(Backend.forward)\n"},
    {"engine/tool.py": "TIMED = ('flash_mla_sparse_fwd',)\n\ndef trace(fn):\n    ns = getattr(fn, '__globals__', None)\n"
                       "    for name in TIMED:\n        ns[name] = None\n",
     "engine/launch.py": "from engine.backend import Backend\nfrom engine.tool import trace\n\ntrace(Backend.forward)\n"},
    {"engine/tool.py": "import sys\nfrom sys import meta_path\n\nNAMES = ('sgl_kernel.flash_mla',)\n\nmeta_path.insert(0, object())\n",
     "engine/launch.py": "from engine import tool\n"},
    {"engine/tool.py": "import sys\n\nNAMES = ('sgl_kernel.flash_mla',)\n\ngetattr(sys, 'meta_path').insert(0, object())\n",
     "engine/launch.py": "from engine import tool\n"},
    {"engine/tool.py": "import importlib.util\n\nimportlib.util.find_spec('sgl_kernel').submodule_search_locations.insert(0, 'overlay')\n",
     "engine/launch.py": "from engine import tool\n", "engine/overlay/flash_mla.py": "def flash_mla_sparse_fwd(q, kv, i, s):\n    pass\n"},
    {"engine/tool.py": "import os\nimport sys\n\nsys.path.insert(0, os.path.join(os.path.dirname(__file__), 'compat'))\n",
     "engine/launch.py": "from engine import tool\n", "engine/compat/sgl_kernel/__init__.py": "",
     "engine/compat/sgl_kernel/flash_mla.py": "def flash_mla_sparse_fwd(q, kv, i, s):\n    pass\n"},
])
def test_a_namespace_or_the_import_system_reached_otherwise_refuses(tmp_path, files):
    site = verdict(tmp_path, files)
    # (a tree holding a `sgl_kernel` of its own is refused for that first: round AN)
    assert _manual(site, "engine/tool.py") or _manual(site, "holds a `sgl_kernel` of its own (engine/compat/"), site.reason


@pytest.mark.parametrize("files", [
    # a debug helper reading its caller's module name; a path put first where no file is named like the kernel's
    {"engine/tool.py": "import sys\n\ndef who():\n    return sys._getframe(1).f_globals.get('__name__')\n",
     "engine/launch.py": "from engine import tool\n"},
    {"engine/tool.py": "import os\nimport sys\n\nsys.path.insert(0, os.path.dirname(__file__))\n",
     "engine/launch.py": "from engine import tool\n"},
    {"engine/tool.py": "import importlib.util\n\nspec = importlib.util.find_spec('nvidia.mathdx')\n"
                       "roots = list(spec.submodule_search_locations or [])\n", "engine/launch.py": "from engine import tool\n"},
])
def test_reading_frames_and_the_import_system_stays_fixable(tmp_path, files):
    site = verdict(tmp_path, files)
    assert site.status is Status.FIXABLE, site.reason


# Round I, second part: the kernel's module under a name a project module gives it, the builtins' namespace,
# augmented assignments, module-level aliases, prefixes, code strings, a hot-patch helper, a wrapper's kernel.
RE_EXPORT = {"engine/ops/__init__.py": "from sgl_kernel import flash_mla as sparse_attn  # noqa: F401\n"}


@pytest.mark.parametrize("tool,extra", [
    ("from engine import ops\n\nfor a in dir(ops.sparse_attn):\n    setattr(ops.sparse_attn, a, None)\n", RE_EXPORT),
    ("import importlib\n\nfor pkg in ('engine.ops',):\n    mod = importlib.import_module(pkg).sparse_attn\n"
     "    setattr(mod, NAME, None)\n", RE_EXPORT),
    ("import builtins\n\nbuiltins.__dict__['__import__'] = lambda *a, **k: None\n", {}),
    ("import builtins\n\nvars(builtins).update(__import__=lambda *a, **k: None)\n", {}),
    ("import sys\n\nsys.modules |= {'sgl_kernel.flash_mla': object()}\n", {}),
    ("import sys\n\n_MODULES = sys.modules\n\ndef install():\n    _MODULES.update({'sgl_kernel.flash_mla': object()})\n\n\n"
     "install()\n", {}),
    ("import sys\n\ndef install():\n    for name, mod in list(sys.modules.items()):\n"
     "        if name.startswith('sgl_kernel.'):\n            setattr(mod, NAME, None)\n\n\ninstall()\n", {}),
    ("import sys\n\ndef install():\n    loader = sys.modules['importlib']\n    mod = loader.import_module('sgl_kernel.flash_mla')\n"
     "    setattr(mod, NAME, None)\n\n\ninstall()\n", {}),
    ("from unittest import mock\n\nmock.patch.dict('sys.modules', {'sgl_kernel.flash_mla': object()}).start()\n", {}),
    ("SRC = 'import importlib\\nsetattr(importlib.import_module(M), N, None)'\n\nexec(SRC, {'M': 'sgl_kernel.flash_mla', 'N': 'x'})\n", {}),
    ("from sgl_kernel import flash_mla as fm\nfrom engine.hotpatch import swap\n\nswap(fm.flash_mla_sparse_fwd, len)\n",
     {"engine/hotpatch.py": "def swap(target, new):\n    target.__code__ = new.__code__\n"}),
])
def test_the_kernels_module_reached_by_other_names_refuses(tmp_path, tool, extra):
    site = verdict(tmp_path, {**extra, "engine/__init__.py": "", "engine/tool.py": tool, "engine/launch.py": "from engine import tool\n"})
    assert site.status is Status.MANUAL, site.reason


def test_a_kernel_module_getter_whose_callers_only_read_stays_fixable(tmp_path):
    tool = ("import functools\nimport importlib\n\n@functools.lru_cache()\ndef _kernels():\n"
            "    return importlib.import_module('sgl_kernel.flash_mla')\n\n\nHAS = hasattr(_kernels(), 'flash_mla_sparse_fwd')\n")
    site = verdict(tmp_path, {"engine/tool.py": tool, "engine/launch.py": "from engine import tool\n"})
    assert site.status is Status.FIXABLE, site.reason
    written = tool.replace("HAS = hasattr(_kernels(), 'flash_mla_sparse_fwd')", "setattr(_kernels(), NAME, None)")
    (tmp_path / "w").mkdir()
    assert verdict(tmp_path / "w", {"engine/tool.py": written, "engine/launch.py": "from engine import tool\n"}).status \
        is Status.MANUAL


def test_the_kernel_a_projects_wrapper_hands_on_to_is_the_calls_kernel(tmp_path):
    wrapper = ("from sgl_kernel import flash_mla as _fm\n\n\ndef flash_mla_sparse_fwd(q, kv, indices, sm_scale, d_v=512, "
               "attn_sink=None, topk_length=None):\n    return _fm.flash_mla_sparse_fwd(q, kv, indices, sm_scale, d_v=d_v, "
               "attn_sink=attn_sink, topk_length=topk_length)\n")
    backend = BACKEND.replace("from sgl_kernel.flash_mla import flash_mla_sparse_fwd", "from engine.kernels import flash_mla_sparse_fwd")
    plugin = "from sgl_kernel import flash_mla as fm\n\nfm.flash_mla_sparse_fwd = lambda q, kv, i, s, d_v=512: None\n"
    (tmp_path / "pyproject.toml").parent.mkdir(exist_ok=True)
    site = verdict(tmp_path, {"engine/__init__.py": "", "engine/kernels.py": wrapper, "engine/plugin.py": plugin,
                              "engine/launch.py": "from engine import plugin\n"}, backend=backend)
    assert site.status is Status.MANUAL and "hands on to" in site.reason, site.reason


def test_a_version_dump_over_the_module_table_stays_fixable(tmp_path):
    """`for name, mod in sys.modules.items()`: the names are strings, handed on freely (round I s21)."""
    tool = ("import json\nimport sys\n\nVERSIONS = json.dumps({name: str(getattr(mod, '__version__', None)) for name, mod "
            "in list(sys.modules.items()) if name.startswith('sgl_kernel')})\n")
    site = verdict(tmp_path, {"engine/tool.py": tool, "engine/launch.py": "from engine import tool\n"})
    assert site.status is Status.FIXABLE, site.reason


@pytest.mark.parametrize("param", ["target", "cls"])  # (a function's first parameter is passed, whatever its name)
def test_the_backends_own_call_of_a_hot_patch_helper_is_what_it_is_handed(tmp_path, param):
    """A helper in another file writing `__code__` of what it is handed, called from the backend module itself
    (the project's other files were read for its calls, the module's own were not) with a method of its class."""
    helper = f"def patch({param}, new):\n    {param}.__code__ = new.__code__\n"
    backend = BACKEND + "\n\nfrom engine.tools import patch\n\n\ndef _old(q, kv, idx, scale):\n    return q\n\n\n" \
        "patch(Backend._forward_flashmla_sparse, _old)\n"
    site = verdict(tmp_path, {"engine/tools.py": helper}, backend=backend)
    assert site.status is Status.MANUAL, site.reason
