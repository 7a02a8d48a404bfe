"""Red-team round BC (bc2): a launcher no file calls by name, fetched by a name computed at run time through a lookup
builtin read as a value (`functools.reduce(getattr, path.split("."), mod)`, `functools.partial(getattr, mod)`,
`fetch = inspect.getattr_static`) or through a module's namespace kept in a name or handed on (`_TABLE = vars(mod)`,
`mod.__dict__` read later by `.get`), or by `getattr_static`/`__getattribute__` of a name read from data: its callers
are not all seen, so it is no entry point (reach.Project.computed_lookup, _lookup_as_value, _namespace_kept)."""
import pytest

from test_soundness import _STATIC_AO, _files_site
from topk_migrate.model import Status

_LAUNCHERS = "def launch_sparse(backend, q, kv, indices, scale):\n    return backend.forward(q, kv, indices, scale)\n"
_LAYER = ("import functools\nimport inspect\n\nimport launchers\n\n_TABLE = {table}\n\n\nclass Layer:\n"
          "    def __init__(self, backend, path):\n        self.backend = backend\n        self.launch = {lookup}\n\n"
          "    def run(self, q, kv, indices, scale):\n        return self.launch(self.backend, q, kv, indices, scale)\n")
_SRC = _STATIC_AO.replace("    def forward(self, q, kv, indices, scale):\n        metadata",
                          "    def forward(self, q, kv, indices, scale):\n        return self._attend(q, kv, indices, scale)\n\n"
                          "    def _attend(self, q, kv, indices, scale):\n        metadata")


@pytest.mark.parametrize("table, lookup", [
    # a lookup builtin handed as a value: what calls it later gives the name
    ("None", "functools.reduce(getattr, path.split('.'), launchers)"),
    ("None", "functools.partial(getattr, launchers)(path)"),
    ("inspect.getattr_static", "_TABLE(launchers, path)"),
    # the module's namespace kept in a name, or handed on, and read later
    ("vars(launchers)", "_TABLE[path]"),
    ("launchers.__dict__", "_TABLE.get(path)"),
    ("dict(vars(launchers))", "_TABLE[path]"),
    # lookups of a name read from data
    ("None", "inspect.getattr_static(launchers, path)"),
    ("None", "launchers.__getattribute__(path)"),
    ("launchers.__getattribute__", "_TABLE(path)"),
])
def test_round_bc_a_launcher_fetched_by_a_kept_lookup_is_no_entry_point(tmp_path, table, lookup):
    layer = _LAYER.format(table=table, lookup=lookup)
    site = _files_site(tmp_path, {"launchers.py": _LAUNCHERS, "layer.py": layer}, _SRC)
    assert site.status is Status.MANUAL and "computed at run time" in site.reason, site.reason


@pytest.mark.parametrize("table", [
    # safe twins: the namespace only measured, tested or printed, a literal item of it; no lookup at all
    "None",
    "len(vars(launchers))",
    "'launch_sparse' in vars(launchers)",
    "f'{launchers.__dict__}'",
    "vars(launchers)['__name__']",
    "'%(__name__)s' % vars(launchers)",
])
def test_round_bc_a_namespace_only_measured_fetches_nothing(tmp_path, table):
    layer = _LAYER.format(table=table, lookup="None")
    site = _files_site(tmp_path, {"launchers.py": _LAUNCHERS, "layer.py": layer}, _SRC)
    assert site.status is Status.FIXABLE, site.reason
