"""Whole project (docs/soundness.md `whole-project`, `callee-identity`): what the project's other files do
to the helper, the kernel and the field decides whether the module's rewrite is sound."""
import ast
import textwrap

import pytest

from helpers import KERNEL
from topk_migrate.api import migrate_source
from topk_migrate.model import Status

BACKEND = """\
import torch
from sgl_kernel.flash_mla import flash_mla_sparse_fwd


class DSAMetadata:
    dsa_cache_seqlens_int32: torch.Tensor


class Backend:
    forward_metadata: DSAMetadata

    def forward(self, q, kv, idx):
        metadata = self.forward_metadata
        return self._forward_flashmla_sparse(q, kv, idx, 1.0)

    def _forward_flashmla_sparse(self, q, kv, idx, scale):
        return flash_mla_sparse_fwd(q, kv, idx, scale)[0]
"""


def verdict(tmp_path, files, backend=BACKEND):
    (tmp_path / ".git").mkdir()
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'fork'\n")
    for name, text in files.items():
        p = tmp_path / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text))
    path = tmp_path / "engine" / "backend.py"
    path.parent.mkdir(exist_ok=True)
    path.write_text(backend)
    (site,) = migrate_source(backend, str(path), kernel=KERNEL).sites
    return site


OVERRIDE = """\
from engine.backend import Backend


class Fast(Backend):
    def _forward_flashmla_sparse(self, q, kv, idx, scale{extra}):
        {body}
"""


@pytest.mark.parametrize("extra,body,fixable", [
    ("", "return super()._forward_flashmla_sparse(q, kv, idx, scale)", False),
    (", **kwargs", "return super()._forward_flashmla_sparse(q[::-1], kv, idx[::-1], scale, **kwargs)", False),
    (", **kwargs", "out = super()._forward_flashmla_sparse(q, kv, idx, scale, **kwargs)\n        return out", True),
    (", **kwargs", "return super()._forward_flashmla_sparse(q, kv, idx, scale, **kwargs)", True),
    (", topk_length=None", "return super()._forward_flashmla_sparse(q, kv, idx, scale)", True),
    # round S: an override with a topk_length of its own meaning (a cap on slots) is not the inserted one's
    (", topk_length=None", "return super()._forward_flashmla_sparse(q, kv, idx[..., :topk_length], scale)", False),
    (", topk_length=None", "return super()._forward_flashmla_sparse(q, kv, idx, scale, topk_length=topk_length)", True),
])
def test_an_override_in_another_package(tmp_path, extra, body, fixable):
    site = verdict(tmp_path, {"plugins/fast/impl.py": OVERRIDE.format(extra=extra, body=body),
                              "plugins/__init__.py": "", "plugins/fast/__init__.py": ""})
    assert (site.status is Status.FIXABLE) is fixable, site.reason
    assert fixable or "plugins/fast/impl.py:5" in site.reason


def test_a_subclass_of_a_subclass_and_an_import_alias(tmp_path):
    site = verdict(tmp_path, {"a.py": "from engine.backend import Backend as B\n\nclass Mid(B):\n    pass\n",
                              "b.py": "from a import Mid\n\nclass Leaf(Mid):\n"
                                      "    def _forward_flashmla_sparse(self, q, kv, idx, scale):\n        return q\n"})
    assert site.status is Status.MANUAL and "Leaf._forward_flashmla_sparse at b.py:4" in site.reason


def test_a_same_named_class_in_a_sibling_copy_is_another_class(tmp_path):
    copy = BACKEND.replace("return flash_mla_sparse_fwd(q, kv, idx, scale)[0]", "return q")
    site = verdict(tmp_path, {"engine/backend_old.py": copy + "\n\nclass Fast(Backend):\n"
                              "    def _forward_flashmla_sparse(self, q, kv, idx, scale):\n        return q\n"})
    assert site.status is Status.FIXABLE, site.reason


@pytest.mark.parametrize("patch,fixable", [
    ("import engine.backend as b\nb.Backend._forward_flashmla_sparse = lambda *a: None\n", False),
    ("def install(cls):\n    cls._forward_flashmla_sparse = lambda *a: None\n", False),
    ("from engine.backend import Backend\nsetattr(Backend, '_forward_flashmla_sparse', None)\n", False),
    ("import sgl_kernel.flash_mla as fm\nfm.flash_mla_sparse_fwd = lambda *a: None\n", False),
    ("import sys\nsys.modules['sgl_kernel.flash_mla'] = None  # _forward_flashmla_sparse\n", False),
    ("def go(obj, name, v):\n    setattr(obj, name, v)  # flash_mla_sparse_fwd\n", False),
    # an instance attribute of an unrelated class, a class of another module: not the backend's
    ("class Cache:\n    def __init__(self):\n        self._forward_flashmla_sparse = None\n", True),
    ("from other import Thing\nThing.flash_mla_sparse_fwd = None\n", True),
])
def test_monkeypatches_elsewhere(tmp_path, patch, fixable):
    site = verdict(tmp_path, {"patches.py": patch, "other.py": "class Thing:\n    pass\n"})
    assert (site.status is Status.FIXABLE) is fixable, site.reason


def test_test_code_does_not_count(tmp_path):
    site = verdict(tmp_path, {"tests/test_backend.py": "import sgl_kernel.flash_mla as fm\n"
                                                       "fm.flash_mla_sparse_fwd = lambda *a: None\n"})
    assert site.status is Status.FIXABLE, site.reason


def test_a_file_that_is_not_python_changes_nothing(tmp_path):
    site = verdict(tmp_path, {"broken.py": "def f(:\n    Backend._forward_flashmla_sparse = None\n"})
    assert site.status is Status.FIXABLE, site.reason


@pytest.mark.parametrize("value,fixable", [
    ("batch.seq_lens.to(torch.int32)", False),
    ("batch.seq_lens.clamp(max=INDEX_TOPK).to(torch.int32)", True),
    ("torch.minimum(batch.seq_lens, batch.index_topk)", True),
    # values, not bounds (round J1): the speculative top-k, a lower bound, arithmetic, other lengths, a helper
    # whose bound is a literal, a permutation, stale or placeholder lengths
    ("torch.minimum(batch.seq_lens, batch.topk)", False),
    ("batch.seq_lens.clamp(min=1, max=INDEX_TOPK)", False),
    ("(batch.seq_lens - 1).clamp(max=INDEX_TOPK)", False),
    ("torch.minimum(batch.extend_seq_lens, INDEX_TOPK)", False),
    ("torch.minimum(batch.seq_lens, INDEX_TOPK, out=None)", False),
    ("clip(batch.seq_lens, 2048)", False),
    ("clip(batch.seq_lens, INDEX_TOPK)", True),
    ("batch.seq_lens.clamp(max=INDEX_TOPK)[batch.order]", False),
    ("batch.seq_lens.clamp(max=INDEX_TOPK)[:batch.bs]", True),
    ("torch.cat([batch.a.dsa_cache_seqlens_int32, batch.b.dsa_cache_seqlens_int32])", False),
    ("torch.cat([batch.seq_lens.clamp(max=INDEX_TOPK), batch.seq_lens.new_zeros(4)])", True),
    ("torch.zeros(batch.bs, dtype=torch.int32)", False),
    # the clipped field read back off anything but a plain name may be an earlier step's (round R's `_kept`)
    ("self_.prev.dsa_cache_seqlens_int32", False),
])
def test_the_field_built_in_another_file(tmp_path, value, fixable):
    site = verdict(tmp_path, {"builder.py": f"from engine.backend import DSAMetadata\n\n\n"
                                            f"def clip(lens, index_topk):\n    return lens.clamp(max=index_topk)\n\n\n"
                                            f"def build(batch):\n"
                                            f"    m = DSAMetadata()\n    lens = {value}\n"
                                            "    m.dsa_cache_seqlens_int32 = lens\n    return m\n"})
    assert (site.status is Status.FIXABLE) is fixable, site.reason


WRAPPED = BACKEND.replace("from sgl_kernel.flash_mla import flash_mla_sparse_fwd", "from ops import flash_mla_sparse_fwd")


@pytest.mark.parametrize("wrapper,fixable", [
    ("def flash_mla_sparse_fwd(q, kv, indices, sm_scale, d_v=512, attn_sink=None, topk_length=None):\n"
     "    return _k(q, kv, indices, sm_scale, d_v, attn_sink, topk_length)\n", True),
    ("def flash_mla_sparse_fwd(q, kv, indices, sm_scale, **kwargs):\n    return _k(q, kv, indices, sm_scale, **kwargs)\n", True),
    ("def flash_mla_sparse_fwd(q, kv, indices, sm_scale, d_v=512, topk_length=None):\n    \"\"\"Docs.\"\"\"\n    ...\n", True),
    ("def flash_mla_sparse_fwd(q, kv, indices, sm_scale, **kwargs):\n"
     "    return _k(q[::-1], kv, indices[::-1], sm_scale, **kwargs)\n", False),
    ("def flash_mla_sparse_fwd(q, kv, indices, sm_scale, **kwargs):\n    q = pad(q)\n"
     "    return _k(q, kv, indices, sm_scale, **kwargs)\n", False),
    ("def flash_mla_sparse_fwd(q, kv, indices, sm_scale, **kwargs):\n    return _k(kv, q, indices, sm_scale, **kwargs)\n",
     False),
])
def test_the_projects_own_kernel_wrapper(tmp_path, wrapper, fixable, monkeypatch):
    monkeypatch.setitem(globals(), "KERNEL", "ops:topk_length")  # a **kwargs signature decides nothing alone
    site = verdict(tmp_path, {"ops.py": "from sgl_kernel.flash_mla import flash_mla_sparse_fwd as _k\n\n\n" + wrapper},
                   backend=WRAPPED)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("where", ["subclass", "base"])
@pytest.mark.parametrize("replay,fixable", [
    ("self.forward_metadata = DSAMetadata()", False),
    ("self.forward_metadata.dsa_cache_seqlens_int32 = seq_lens", False),
    # a base's hook may select a record; a subclass of another file giving the holder one decides what the
    # module's proof read (round Z: metadata_overrides)
    ("self.forward_metadata = self.graph_metadata[bs]", "base"),
    ("self.forward_metadata.dsa_cache_seqlens_int32.copy_(seq_lens.clamp(max=INDEX_TOPK))", True),
    ("self.forward_metadata.dsa_cache_seqlens_int32.copy_(seq_lens)", False),  # in place, but not clipped
])
def test_cuda_graph_replay_in_another_file(tmp_path, where, replay, fixable):
    method = f"    def init_forward_metadata_replay_cuda_graph(self, bs, seq_lens):\n        {replay}\n"
    if where == "subclass":
        files = {"graphs.py": "from engine.backend import Backend, DSAMetadata\n\n\nclass GraphBackend(Backend):\n" + method}
        backend = BACKEND
    else:
        files = {"engine/graphs.py": "class GraphMixin:\n" + method}
        backend = BACKEND.replace("class Backend:", "from engine.graphs import GraphMixin\n\n\nclass Backend(GraphMixin):")
    site = verdict(tmp_path, files, backend=backend)
    fixable = fixable == where if isinstance(fixable, str) else fixable
    assert (site.status is Status.FIXABLE) is fixable, site.reason
    assert fixable or "replay" in site.reason or "not provably the seqlens clipped" in site.reason \
        or "hand-on to `super()`" in site.reason


def test_another_base_of_a_subclass_that_defines_the_helper(tmp_path):
    site = verdict(tmp_path, {"old_impl.py": "class Legacy:\n    def _forward_flashmla_sparse(self, q, kv, idx, scale):\n"
                                             "        return q\n",
                              "mixed.py": "from engine.backend import Backend\nfrom old_impl import Legacy\n\n\n"
                                          "class Mixed(Legacy, Backend):\n    pass\n"})
    assert site.status is Status.MANUAL and "Legacy._forward_flashmla_sparse at old_impl.py:2" in site.reason, site.reason


def test_a_module_the_backend_imports_and_hands_its_class(tmp_path):
    """A file that names nothing of the backend but is imported by it, and patches what it is handed."""
    backend = BACKEND.replace("class Backend:", "import patches\n\n\nclass Backend:") + "\npatches.install(Backend)\n"
    site = verdict(tmp_path, {"engine/patches.py": "def install(cls):\n    setattr(cls, '_forward_fl' + 'ashmla_sparse', None)\n"},
                   backend=backend.replace("import patches", "from engine import patches"))
    assert site.status is Status.MANUAL and "patches.py:2" in site.reason, site.reason


@pytest.mark.parametrize("patch", ["fm.flash_mla_sparse_fwd = legacy", "setattr(fm, 'flash_mla_sparse_fwd', legacy)"])
def test_the_kernel_module_patched_while_the_call_reads_it_through_self(tmp_path, patch):
    """Found by the generator (seed 93): the call is `self.flash_mla.flash_mla_sparse_fwd(...)` and the module
    `fm` it holds gets another function for the kernel's name at import time."""
    backend = ("import sgl_kernel.flash_mla as fm\n\n\ndef legacy(q, kv, idx, scale):\n    return q\n\n\n"
               f"{patch}\n\n\nclass Backend:\n    def __init__(self):\n        self.flash_mla = fm\n\n"
               "    def forward(self, q, kv, idx, metadata):\n"
               "        return self.flash_mla.flash_mla_sparse_fwd(q, kv, idx, 1.0)[0]\n"
               "# metadata.dsa_cache_seqlens_int32\n")
    site = verdict(tmp_path, {}, backend=backend)
    assert site.status is Status.MANUAL and "line 8" in site.reason, site.reason


@pytest.mark.parametrize("patched", [True, False])
def test_the_kernel_module_patched_in_another_file_while_the_call_reads_it_through_self(tmp_path, patched):
    """Found by the generator (seed 1014472558): the call reads `self.flash_mla.flash_mla_sparse_fwd`, where
    `self.flash_mla` is the kernel's module (bound in a subclass's __init__), and a compat file the backend
    imports assigns another function to that module's kernel name."""
    compat = ("import sgl_kernel.flash_mla as _fm\n\n\ndef legacy(q, kv, idx, scale):\n    return q\n\n\n"
              "def install():\n    _fm.flash_mla_sparse_fwd = legacy\n" if patched else "def install():\n    pass\n")
    backend = ("from engine import compat\nimport sgl_kernel.flash_mla as fm\n\ncompat.install()\n\n\n"
               "class Mixin:\n    def _sparse(self, q, kv, idx):\n"
               "        return self.flash_mla.flash_mla_sparse_fwd(q, kv, idx, 1.0)[0]\n\n\n"
               "class Backend(Mixin):\n    def __init__(self):\n        self.flash_mla = fm\n\n"
               "    def forward(self, q, kv, idx, metadata):\n        return self._sparse(q, kv, idx)\n"
               "# metadata.dsa_cache_seqlens_int32\n")
    site = verdict(tmp_path, {"engine/compat.py": compat}, backend=backend)
    if patched:
        assert site.status is Status.MANUAL and "compat.py:9" in site.reason, site.reason
    else:
        assert site.status is Status.FIXABLE, site.reason


GRAPH_BACKEND = BACKEND.replace('''    def forward(self, q, kv, idx):''', '''    def init_forward_metadata_out_graph(self, seq_lens):
        self._apply_graph_metadata(seq_lens)

    def _apply_graph_metadata(self, seq_lens):
        metadata = self.forward_metadata
        {update}

    def forward(self, q, kv, idx):''')


@pytest.mark.parametrize("update,fixable", [
    ("metadata.dsa_cache_seqlens_int32 = torch.clamp(seq_lens, max=INDEX_TOPK).to(torch.int32)", False),
    ("metadata.dsa_cache_seqlens_int32.copy_(torch.clamp(seq_lens, max=INDEX_TOPK))", True),
    ("setattr(metadata, 'dsa_cache_seqlens_int32', torch.clamp(seq_lens, max=INDEX_TOPK).to(torch.int32))", False),
    # a new object built in a method named for the graph: refused all the same (it may be handed on)
    ("m = DSAMetadata()\n        m.dsa_cache_seqlens_int32 = torch.clamp(seq_lens, max=INDEX_TOPK).to(torch.int32)", False),
    # the attribute the callers read the metadata from, given a new object between replays / a stored one
    ("self.forward_metadata = DSAMetadata()", False),
    ("self.forward_metadata = self.graph_metadata[seq_lens.shape[0]]", True),
])
def test_the_field_given_a_new_tensor_where_no_replay_hook_is_named(tmp_path, update, fixable):
    """Found hand-editing sglang 0.5.16, whose CUDA-graph update runs in `_apply_cuda_graph_metadata`: a
    captured graph keeps reading the tensor the field held, so giving an existing metadata object's field a new
    tensor, under any method name, leaves topk_length stale on replay; a new object built there is another one."""
    site = verdict(tmp_path, {}, backend=GRAPH_BACKEND.replace("{update}", update))
    assert (site.status is Status.FIXABLE) is fixable, site.reason
    if not fixable:
        assert ("a new tensor" in site.reason or "a new object" in site.reason) and "copy_" in site.reason, site.reason


def test_a_new_metadata_object_built_outside_the_graph_path_may_be_given_the_field(tmp_path):
    """A local built by a class's constructor is a new object, which no captured graph holds (in a method
    the graph's update does not reach: what that reaches is refused a new field or object, as above)."""
    update = "m = DSAMetadata()\n        m.dsa_cache_seqlens_int32 = torch.clamp(seq_lens, max=INDEX_TOPK).to(torch.int32)"
    backend = GRAPH_BACKEND.replace("{update}", update).replace("def _apply_graph_metadata(self", "def _make(self")
    site = verdict(tmp_path, {}, backend=backend.replace("self._apply_graph_metadata(seq_lens)", "pass"))
    assert site.status is Status.FIXABLE, site.reason
    reached = backend.replace("self._apply_graph_metadata(seq_lens)", "self._make(seq_lens)")
    (tmp_path / "reached").mkdir()
    site = verdict(tmp_path / "reached", {}, backend=reached)
    assert site.status is Status.MANUAL and "`_make` gives" in site.reason, site.reason


@pytest.mark.parametrize("write,fixable", [
    ("def refresh(backend, seq_lens):\n    backend.forward_metadata.dsa_cache_seqlens_int32 = seq_lens.clamp(max=INDEX_TOPK)\n", False),
    ("def refresh(backend, seq_lens):\n    backend.forward_metadata.dsa_cache_seqlens_int32.copy_(seq_lens.clamp(max=INDEX_TOPK))\n", True),
    ("from engine.backend import DSAMetadata\n\n\ndef build(seq_lens):\n    m = DSAMetadata()\n"
     "    m.dsa_cache_seqlens_int32 = seq_lens.clamp(max=INDEX_TOPK)\n    return m\n", True),
    # a keyword whose value reads the field of another object: a new object, given the clipped field
    ("from engine.backend import DSAMetadata\n\n\ndef copy(m):\n"
     "    return DSAMetadata(dsa_cache_seqlens_int32=m.dsa_cache_seqlens_int32)\n", True),
])
def test_the_field_given_a_new_tensor_in_another_file(tmp_path, write, fixable):
    site = verdict(tmp_path, {"engine/graphs.py": write})
    assert (site.status is Status.FIXABLE) is fixable, site.reason
    if not fixable:
        assert "graphs.py:2" in site.reason and "a new tensor" in site.reason, site.reason


@pytest.mark.parametrize("indices,why", [
    ("metadata.page_table_1", "does not say it holds the top-k indices"),  # every KV slot of the row
    ("self.forward_metadata.page_table_1", "does not say it holds the top-k indices"),
    ("self.topk_indices", "read off `self`, the object this method belongs to"),  # round N: setattr, out=, ...
    ("me.topk_indices", "read off `self`, the object this method belongs to"),  # through a local alias of self
    ("forward_batch.topk_indices", None),  # the caller's object, as its parameters are
    ("idx", None),
])
def test_indices_read_from_an_attribute_must_say_they_are_the_top_k(tmp_path, indices, why):
    """Found hand-editing sglang 0.5.16 (a caller handing the helper `metadata.page_table_1`): an attribute
    the indices are read from is taken for the indexer's output only if its name says so (rows.INDEX_NAME),
    and never off the method's own object, which any code holding it may rewrite (red-team round N)."""
    backend = BACKEND.replace("return self._forward_flashmla_sparse(q, kv, idx, 1.0)",
                              f"me = self\n        return self._forward_flashmla_sparse(q, kv, {indices}, 1.0)").replace(
        "def forward(self, q, kv, idx):", "def forward(self, q, kv, idx, forward_batch):")
    site = verdict(tmp_path, {}, backend=backend)
    assert (site.status is Status.FIXABLE) is (why is None), site.reason
    assert why is None or why in site.reason, site.reason


@pytest.mark.parametrize("second_q,fixable", [
    ("q", True),
    ("self.draft_q", False),  # a tensor held elsewhere: rows of its own
    ("q2", False),  # a parameter the first call's q does not come from: what the callers pass for it is unchecked
])
def test_a_second_kernel_call_in_the_helper_takes_q_from_what_the_callers_pass(tmp_path, second_q, fixable):
    """Found hand-editing sglang 0.5.16 (a draft-model call added beside the kernel call in the helper)."""
    backend = BACKEND.replace(
        "    def _forward_flashmla_sparse(self, q, kv, idx, scale):\n        return flash_mla_sparse_fwd(q, kv, idx, scale)[0]\n",
        "    def _forward_flashmla_sparse(self, q, kv, idx, scale, q2=None):\n"
        "        out = flash_mla_sparse_fwd(q, kv, idx, scale)[0]\n"
        f"        return out + flash_mla_sparse_fwd({second_q}, kv, idx, scale)[0]\n")
    assert backend != BACKEND
    (tmp_path / ".git").mkdir()
    path = tmp_path / "backend.py"
    path.write_text(backend)
    first, second = migrate_source(backend, str(path), kernel=KERNEL).sites
    assert first.status is Status.FIXABLE, first.reason
    assert (second.status is Status.FIXABLE) is fixable, second.reason


def test_a_file_over_the_runs_size_limit_is_scanned_not_read(tmp_path, monkeypatch):
    """TOPK_MIGRATE_MAX_BYTES bounds every file a run reads, the project scan's included: a bigger file is only
    scanned for the names, a window at a time. One that names none changes nothing; one that names the helper
    might patch it, so the site is manual and the reason names the limit to raise."""
    from topk_migrate import discover

    reads = []
    real = discover.read_regular
    monkeypatch.setattr("topk_migrate.codemods.pass_topk_length.reach.read_regular", lambda p, limit=None: (reads.append(limit), real(p, limit))[1])
    monkeypatch.setenv("TOPK_MIGRATE_MAX_BYTES", "20000")
    big = "x = 1\n" * 5000  # 30 kB: over the limit, under the scan's own 8 MiB
    assert verdict(tmp_path, {"vendored/table.py": big}).status is Status.FIXABLE
    assert reads and all(limit == 20000 for limit in reads)
    (tmp_path / "patched").mkdir()
    patch = "from engine.backend import Backend\nBackend._forward_flashmla_sparse = None\n"
    site = verdict(tmp_path / "patched", {"vendored/table.py": big + patch})
    assert site.status is Status.MANUAL
    assert "vendored/table.py is over the 20000-byte read limit (raise TOPK_MIGRATE_MAX_BYTES to read it)" in site.reason
    monkeypatch.setenv("TOPK_MIGRATE_MAX_BYTES", "40000")
    (tmp_path / "read").mkdir()
    site = verdict(tmp_path / "read", {"vendored/table.py": big + patch})
    assert site.status is Status.MANUAL and "table.py:5002" in site.reason, site.reason


def test_the_project_scan_holds_its_files_within_the_memory_bound(tmp_path, monkeypatch):
    """The scan keeps every file's text for the run; past TOPK_MIGRATE_MAX_MEMORY together it stops, and
    what it did not read keeps the site manual."""
    monkeypatch.setenv("TOPK_MIGRATE_MAX_MEMORY", "1")
    chunk = "x = 1\n" * 50_000  # 300 kB each: four of them are over 1 MiB
    site = verdict(tmp_path, {f"pkg/m{i}.py": chunk for i in range(4)})
    assert site.status is Status.MANUAL
    assert "holds more than 1 MiB of Python files (the memory bound, TOPK_MIGRATE_MAX_MEMORY)" in site.reason


IMPORTS_EVERYWHERE = """\
import a.b
import c as d
from . import e
from ..f import g as h
from star import *
if x:
    import i
else:
    from j import k
try:
    import l
except E:
    from m import n
finally:
    import o
for p in q:
    import r
else:
    import s
while t:
    from u import v
with w:
    import x2
class C:
    import y
    def f(self):
        import z
        lam = lambda: None
        async def g():
            async with aa:
                import bb
            async for cc in dd:
                from ee import ff
"""


def test_a_files_imports_are_those_of_every_statement():
    """_File reads imports from the statements (no expression holds one): the same tables as a walk of every node,
    on every fixture and on imports nested in every kind of block."""
    import ast
    from pathlib import Path

    from topk_migrate.codemods.pass_topk_length.reach import _File

    def walked(tree):
        modules, froms = {}, {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    modules[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
            elif isinstance(node, ast.ImportFrom):
                for a in node.names:
                    if a.name != "*":
                        froms[a.asname or a.name] = ("." * node.level + (node.module or ""), a.name)
        return modules, froms

    root = Path(__file__).resolve().parent.parent
    sources = [IMPORTS_EVERYWHERE] + [p.read_text() for p in sorted((root / "fixtures").rglob("*.py"))]
    for text in sources:
        tree = ast.parse(text)
        f = _File("m.py", tree, lambda path, mod: None)
        assert (f.modules, f.froms) == walked(tree)
    assert len(walked(ast.parse(IMPORTS_EVERYWHERE))[0]) + len(walked(ast.parse(IMPORTS_EVERYWHERE))[1]) == 17


# -- receivers of a declared type (issue 34 item 2): vivienfanghuagood/sglang's model_config.py:89,
# `def handle_rope_parameters(config: PretrainedConfig): ... setattr(config, k, v)`, refused nsa_backend.py:1221 ----
HF_CONFIG = """\
from typing import Any, Optional

from transformers import PretrainedConfig

from engine.backend import Backend


class BaseBackend:
    pass


def handle(config: {annotation}):
    for k, v in config.rope_scaling.items():
        setattr(config, k, v)
"""


@pytest.mark.parametrize("annotation,fixable", [
    ("PretrainedConfig", True),  # a class from outside the project: an instance of it is no backend, no module
    ("Optional[PretrainedConfig]", True),
    ("PretrainedConfig | None", True),
    ("'PretrainedConfig'", True),
    # what may still be the backend, its class, its module or the kernel's: anything
    ("Backend", False), ("Optional[Backend]", False), ("Union[PretrainedConfig, Backend]", False),
    ("Any", False), ("object", False), ("type", False), ("dict", False), ("T", False),
])
def test_a_setattr_on_a_parameter_of_a_declared_unrelated_class_rebinds_nothing(tmp_path, annotation, fixable):
    config = HF_CONFIG.format(annotation=annotation).replace("import Any, Optional", "import Any, Optional, Union")
    site = verdict(tmp_path, {"engine/config.py": config})
    assert (site.status is Status.FIXABLE) is fixable, site.reason
    assert fixable or "engine/config.py:14" in site.reason, site.reason


def test_an_unannotated_or_rebound_parameter_is_still_anything(tmp_path):
    for head in ("def handle(config):\n", "def handle(config: PretrainedConfig):\n    config = pick()\n"):
        config = HF_CONFIG.replace("def handle(config: {annotation}):\n", head)
        (tmp_path / str(len(head))).mkdir()
        site = verdict(tmp_path / str(len(head)), {"engine/config.py": config})
        assert site.status is Status.MANUAL and "engine/config.py" in site.reason, (head, site.reason)


def test_an_annotated_class_in_the_helpers_hierarchy_may_be_the_backend(tmp_path):
    """An instance declared as a base of the helper's class, or as a class some subclass of it also derives
    from (`class Mixed(PretrainedConfig, Backend)`), may be a backend: it may rebind the helper."""
    backend = BACKEND.replace("class Backend:", "from engine.bases import BaseBackend\n\n\nclass Backend(BaseBackend):")
    bases = "class BaseBackend:\n    pass\n"
    config = ("from engine.backend import Backend  # (read: it names the backend)\nfrom engine.bases import BaseBackend\n\n\n"
              "def handle(b: BaseBackend, k, v):\n    setattr(b, k, v)\n")
    (tmp_path / "base").mkdir(), (tmp_path / "diamond").mkdir()
    site = verdict(tmp_path / "base", {"engine/bases.py": bases, "engine/config.py": config}, backend=backend)
    assert site.status is Status.MANUAL and "engine/config.py:6" in site.reason, site.reason
    mixed = ("from transformers import PretrainedConfig\nfrom engine.backend import Backend\n\n\n"
             "class Mixed(PretrainedConfig, Backend):\n    pass\n")
    site = verdict(tmp_path / "diamond", {"engine/mixed.py": mixed, "engine/config.py": HF_CONFIG.format(
        annotation="PretrainedConfig")})
    assert site.status is Status.MANUAL and "engine/config.py:14" in site.reason, site.reason


@pytest.mark.parametrize("value,fixable", [
    ("PretrainedConfig()", True), ("Thing()", True),  # a constructor of an unrelated class: its instance
    ("Backend()", False), ("make()", False), ("PretrainedConfig() if flag else Backend()", False),
])
def test_a_local_bound_to_a_constructor_is_an_instance_of_that_class(tmp_path, value, fixable):
    config = ("from transformers import PretrainedConfig\nfrom engine.backend import Backend\nfrom other import Thing\n\n\n"
              f"def handle(flag, k, v):\n    cfg = {value}\n    setattr(cfg, k, v)\n    return cfg\n")
    site = verdict(tmp_path, {"engine/config.py": config, "other.py": "class Thing:\n    pass\n"})
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("owner,fixable", [
    ("class Registry:", True),  # spec_info.py's SpeculativeAlgorithm.register: `setattr(cls, name, algorithm)`
    ("class Registry(Backend):", False),  # cls may be the backend's class (a subclass of it)
])
def test_a_classmethods_cls_is_its_class_or_one_deriving_from_it(tmp_path, owner, fixable):
    registry = (f"from engine.backend import Backend\n\n\n{owner}\n    @classmethod\n"
                "    def register(cls, name, value):\n        setattr(cls, name.upper(), value)\n")
    site = verdict(tmp_path, {"engine/registry.py": registry})
    assert (site.status is Status.FIXABLE) is fixable, site.reason


def test_self_in_a_method_of_a_base_class_may_be_the_backend(tmp_path):
    """A method the helper's class inherits runs on its instances: `setattr(self, name, fn)` there may shadow
    the helper (before, only the related classes' own methods counted, and this was fixable)."""
    backend = BACKEND.replace("class Backend:", "from engine.bases import Patchable\n\n\nclass Backend(Patchable):")
    bases = "class Patchable:\n    def patch(self, name, fn):\n        setattr(self, name, fn)\n"
    site = verdict(tmp_path, {"engine/bases.py": bases}, backend=backend)
    assert site.status is Status.MANUAL and "engine/bases.py:3" in site.reason, site.reason


# -- default-deny for declared receivers (red team A: 19 forks where apply rewrote although another file rebinds
# the helper or the kernel with the old signature): a receiver is unrelated only where that is proven ------------
WRAP = "def wrap(f):\n    return lambda q, kv, idx, scale: f(q, kv, idx, scale)\n\n\n"


def manual_at(site, where):
    return site.status is Status.MANUAL and where in site.reason


@pytest.mark.parametrize("base,fixable", [
    ("from fakesgl.attn import SparseBase\n\n\nclass Backend(SparseBase):", False),  # its bases are not known
    ("from abc import ABC\n\n\nclass Backend(ABC):", True),  # ABC adds no unknown base (sglang's AttentionBackend)
    ("class Backend:", True),
])
def test_an_outside_class_is_related_where_the_helpers_hierarchy_has_an_outside_base(tmp_path, base, fixable):
    tool = ("from fakesgl.attn import AttentionBase\n\n" + WRAP +
            "def use(b: AttentionBase):\n    b._forward_flashmla_sparse = wrap(b._forward_flashmla_sparse)\n")
    site = verdict(tmp_path, {"engine/tool.py": tool}, backend=BACKEND.replace("class Backend:", base))
    assert (site.status is Status.FIXABLE) is fixable, site.reason
    assert fixable or "engine/tool.py:8" in site.reason


@pytest.mark.parametrize("protocol", ["Protocol", "typing.Protocol", "SupportsForward"])
def test_a_structural_type_is_related_to_everything(tmp_path, protocol):
    """A Protocol (directly, or a class deriving from one) describes any object with its members, the backend
    and a module too: a receiver declared as one may be either."""
    tool = ("import typing\nfrom typing import Protocol\n\n\nclass SupportsForward(Protocol):\n    pass\n\n\n"
            f"class P({protocol}):\n    pass\n\n\n" + WRAP +
            "def use(b: P):\n    b._forward_flashmla_sparse = wrap(b._forward_flashmla_sparse)\n\n\n"
            "def table(b: P, name):\n    setattr(b, name, None)\n\n\n"
            "def kernel(ops: P):\n    ops.flash_mla_sparse_fwd = None\n")
    site = verdict(tmp_path, {"engine/tool.py": tool})
    assert manual_at(site, "engine/tool.py:"), site.reason


def test_a_class_something_registers_with_is_related_to_everything(tmp_path):
    """`AttnBase.register(Backend)`: under ABCMeta `isinstance(b, AttnBase)` holds for the backend. A class
    defining its own `register` (a registry) is not ABCMeta's."""
    tool = ("from abc import ABC\n\n\nclass AttnBase(ABC):\n    pass\n\n\n" + WRAP +
            "def use(b: AttnBase):\n    b._forward_flashmla_sparse = wrap(b._forward_flashmla_sparse)\n")
    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    site = verdict(tmp_path / "a", {"engine/tool.py": tool, "engine/wiring.py": (
        "from engine.backend import Backend\nfrom engine.tool import AttnBase\n\nAttnBase.register(Backend)\n")})
    assert manual_at(site, "engine/tool.py:13"), site.reason
    own = tool.replace("class AttnBase(ABC):\n    pass", "class AttnBase:\n    @classmethod\n    def register(cls, x):\n"
                       "        return x")
    site = verdict(tmp_path / "b", {"engine/tool.py": own, "engine/wiring.py": (
        "from engine.backend import Backend\nfrom engine.tool import AttnBase\n\nAttnBase.register(Backend)\n")})
    assert site.status is Status.FIXABLE, site.reason


def test_a_class_name_its_file_also_imports_is_not_decided(tmp_path):
    tool = ("class Backend:  # the fallback\n    pass\n\n\ntry:\n    from engine.backend import Backend  # noqa\n"
            "except ImportError:\n    pass\n\n\n" + WRAP +
            "def use(b: Backend):\n    b._forward_flashmla_sparse = wrap(b._forward_flashmla_sparse)\n")
    site = verdict(tmp_path, {"engine/tool.py": tool})
    assert manual_at(site, "engine/tool.py:16"), site.reason


def test_cls_in_a_metaclass_of_the_helpers_class_is_related(tmp_path):
    meta = ("class Meta(type):\n    def __init__(cls, name, bases, ns):\n        super().__init__(name, bases, ns)\n"
            "        cls._forward_flashmla_sparse = ns.get('_forward_flashmla_sparse')\n")
    backend = BACKEND.replace("class Backend:", "from engine.meta import Meta\n\n\nclass Backend(metaclass=Meta):")
    site = verdict(tmp_path, {"engine/meta.py": meta}, backend=backend)
    assert manual_at(site, "engine/meta.py:4") or "made by the metaclass `Meta`" in site.reason, site.reason


@pytest.mark.parametrize("use,fixable", [
    ("Tuner.install(b)", False),  # self is b
    ("f = Tuner.install", False),
    ("type(t).install(b)", False),
    ("graft(b, Tuner)", False),  # the project's code holds the class: it may take any method
    ("vars(Tuner)", False),
    ("Tuner().install()", True),
    ("field(default_factory=Tuner)", True),  # an outside function: it constructs it
])
def test_self_is_an_instance_only_where_no_method_is_taken_from_the_class(tmp_path, use, fixable):
    tool = ("from dataclasses import field\n\nfrom engine.graft import graft\n\n\n" + WRAP +
            "class Tuner:\n    def install(self):\n        self._forward_flashmla_sparse = wrap(self._forward_flashmla_sparse)\n"
            "\n\nclass Sub(Tuner):\n    def __init__(self):\n        Tuner.__init__(self)\n\n\n"
            f"def run(b, t):\n    {use}\n")
    graft = "def graft(target, ext):\n    return target, ext\n"
    site = verdict(tmp_path, {"engine/tool.py": tool, "engine/graft.py": graft})
    assert (site.status is Status.FIXABLE) is fixable, site.reason
    assert fixable or "engine/tool.py:12" in site.reason


@pytest.mark.parametrize("cls,fixable", [
    ("class Handle:\n    def __init__(self, t):\n        object.__setattr__(self, 't', t)\n\n"
     "    def __setattr__(self, name, value):\n        pass\n", False),  # a write may be handed on
    ("class Handle:\n    def __init__(self, t):\n        self.t = t\n", True),
])
def test_an_instance_of_a_class_with_attribute_hooks_may_forward_a_write(tmp_path, cls, fixable):
    tool = (WRAP + "def use(b):\n    h = Handle(b)\n    h._forward_flashmla_sparse = wrap(h._forward_flashmla_sparse)\n")
    site = verdict(tmp_path, {"engine/handle.py": cls, "engine/tool.py": "from engine.handle import Handle\n\n\n" + tool})
    assert (site.status is Status.FIXABLE) is fixable, site.reason


def test_self_of_a_class_deriving_from_an_outside_class_may_be_a_proxy(tmp_path):
    tool = ("import wrapt\n\n\n" + WRAP + "class Traced(wrapt.ObjectProxy):\n    def enable(self):\n"
            "        self._forward_flashmla_sparse = wrap(self._forward_flashmla_sparse)\n")
    site = verdict(tmp_path, {"engine/tool.py": tool})
    assert manual_at(site, "engine/tool.py:10"), site.reason


@pytest.mark.parametrize("files,where", [
    ({"engine/runtime.py": "attn_backend = None\n", "engine/tool.py": (
        "from engine import runtime\n\n\ndef use():\n    runtime.attn_backend._forward_flashmla_sparse = None\n")},
     "engine/tool.py:5"),  # a module's global holding an instance
    ({"engine/kernels.py": "import sgl_kernel.flash_mla as fm\n", "engine/tool.py": (
        "from engine.kernels import fm\n\nfm.flash_mla_sparse_fwd = None\n")}, "engine/tool.py:3"),  # the kernel's module
    ({"engine/kernels.py": "from sgl_kernel import flash_mla\n", "engine/tool.py": (
        "import engine.kernels\n\nengine.kernels.flash_mla.flash_mla_sparse_fwd = None\n")}, "engine/tool.py:3"),
])
def test_a_name_another_module_binds_is_followed_to_what_it_binds(tmp_path, files, where):
    site = verdict(tmp_path, files)
    assert manual_at(site, where), site.reason


@pytest.mark.parametrize("write", [
    "object.__setattr__(b, '_forward_flashmla_sparse', None)",
    "b.__setattr__('_forward_flashmla_sparse', None)",
    "builtins.setattr(b, '_forward_flashmla_sparse', None)",
    "b.__dict__.update(_forward_flashmla_sparse=None)",
    "vars(b).update({'_forward_flashmla_sparse': None})",
    "d = vars(b); d[name] = None",  # an alias of a namespace: written through where it is read
    "d = b.__dict__; d.update({name: None})",
    "s = setattr",
    "object.__setattr__(b, name, None)",
])
def test_reflective_writes_through_other_spellings(tmp_path, write):
    tool = f"import builtins\n\n\ndef use(b, name):\n    {write}\n"
    site = verdict(tmp_path, {"engine/tool.py": tool, "engine/caller.py": "from engine import backend, tool\n"},
                   backend=BACKEND.replace("import torch\n", "import torch\n\nfrom engine import tool\n"))
    assert manual_at(site, "engine/tool.py:5"), site.reason


@pytest.mark.parametrize("bases,fixable", [("(cls,)", False), ("bases", False), ("(Other,)", True)])
def test_a_class_made_by_type_from_a_related_base_is_an_override_no_file_spells(tmp_path, bases, fixable):
    tool = ("class Other:\n    pass\n\n\ndef ref(self, q, kv, idx, scale):\n    return q\n\n\n"
            f"def with_reference(cls, bases=()):\n    return type('Ref', {bases}, {{'_forward_flashmla_sparse': ref}})\n")
    site = verdict(tmp_path, {"engine/tool.py": tool},
                   backend=BACKEND.replace("import torch\n", "import torch\n\nfrom engine import tool\n"))
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("importer,fixable", [
    ("engine/patches.py", False),  # runtime code imports it: it is the project's code
    ("tests/test_patches.py", True),  # only a test imports it
    (None, True),
])
def test_a_module_named_like_a_test_that_the_project_imports_is_read(tmp_path, importer, fixable):
    files = {"experiments/ab_test.py": WRAP + "def install(b):\n    b._forward_flashmla_sparse = wrap(b._forward_flashmla_sparse)\n"}
    if importer:
        files[importer] = "from experiments import ab_test\n"
    site = verdict(tmp_path, files)
    assert (site.status is Status.FIXABLE) is fixable, site.reason
    assert fixable or "experiments/ab_test.py:6" in site.reason


@pytest.mark.parametrize("patch,fixable", [
    # click's globals.py: a module global made by an outside call of constants, its namespace written (by a
    # computed key: a literal one that names nothing that matters is harmless whatever the receiver)
    ("from threading import local\n_local = local()\n\ndef push(ctx):  # _forward_flashmla_sparse\n"
     "    _local.__dict__.setdefault(ctx.key, []).append(ctx)\n", True),
    ("import threading\n_local = threading.local()\n\ndef push(ctx):  # _forward_flashmla_sparse\n"
     "    vars(_local).update({ctx.key: [ctx]})\n", True),
    # the same global handed a project object, rebound by a function, or bound to what a parameter gives
    ("from threading import local\nfrom engine.backend import Backend\n_local = local(Backend)\n\n"
     "def push(ctx):  # _forward_flashmla_sparse\n    _local.__dict__.setdefault(ctx.key, []).append(ctx)\n", False),
    ("from threading import local\n_local = local()\n\ndef swap(b):\n    global _local\n    _local = b\n\n"
     "def push(ctx):  # _forward_flashmla_sparse\n    _local.__dict__.setdefault(ctx.key, []).append(ctx)\n", False),
    ("_local = None\n\ndef push(ctx):  # _forward_flashmla_sparse\n"
     "    _local.__dict__.setdefault(ctx.key, []).append(ctx)\n", False),
])
def test_a_global_made_by_an_outside_call_of_constants_is_no_object_of_the_project(tmp_path, patch, fixable):
    site = verdict(tmp_path, {"ctx.py": patch})
    assert (site.status is Status.FIXABLE) is fixable, site.reason


# -- red-team round E: what a computed import, a test double or a hand-off can do to the kernel ----------------

REGISTRY = """\
import importlib


def override(path):
    module_name, _, attr = path.rpartition(".")

    def install(fn):
        module = importlib.import_module(module_name)
        setattr(module, attr, fn)
        return fn

    return install
"""


@pytest.mark.parametrize("target,fixable", [
    ("sgl_kernel.flash_mla.flash_mla_sparse_fwd", False),  # a string of the code names the kernel
    ("sgl_kernel.flash_mla:flash_mla_sparse_fwd", False),  # (an entry point's spelling)
    ("triton.language.semantic", True),  # no string of the code can name it: only data could (assumed not)
])
def test_a_registry_writing_a_module_imported_by_a_computed_name(tmp_path, target, fixable):
    """The registry's file names neither the kernel nor its module: `import_module(m)` then `setattr(module,
    attr, fn)` may reach the kernel's module where a string of the project's code names it (default-deny on
    the write; the names a run-time name can be built from are the code's)."""
    plugin = f"from engine.registry import override\n\n\n@override({target!r})\ndef fwd(*a, **k):\n    return None\n"
    site = verdict(tmp_path, {"engine/registry.py": REGISTRY, "engine/plugin.py": plugin})
    assert (site.status is Status.FIXABLE) is fixable, site.reason
    assert fixable or "`module` is a module got at run time" in site.reason, site.reason


@pytest.mark.parametrize("head,spelled,fixable", [
    ('f"triton.{sub}"', True, True),  # every module it may import begins `triton.`: not the kernel's, not this one
    ('"triton." + sub', True, True),
    ('f"sgl_kernel.{sub}"', False, False),  # may be sgl_kernel.flash_mla
    ('f"{pkg}.{sub}"', True, False),  # anything, and a string of the code names the kernel's module
    ('f"{pkg}.{sub}"', False, True),  # anything, but only data could name the kernel's module (assumed not)
])
def test_a_computed_import_is_proven_another_module_by_its_literal_head(tmp_path, head, spelled, fixable):
    registry = (f"import importlib\n\n\ndef install(sub, fn, pkg='x'):\n    module = importlib.import_module({head})\n"
                "    setattr(module, fn.__name__, fn)\n")
    files = {"engine/registry.py": registry}
    if spelled:
        files["engine/profiled.py"] = 'PROFILED = ["sgl_kernel.flash_mla"]\n'
    site = verdict(tmp_path, files)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("test,fixable", [
    ('fullname == "triton" or fullname.startswith("triton.")', True),  # sglang's _triton_stub.py, in short
    ('fullname.startswith("sgl_")', False),
    ('fullname.endswith(".language")', False),  # nothing known of its head (a string of the code names the kernel)
])
def test_a_module_name_tested_for_its_head_is_proven_another(tmp_path, test, fixable):
    stub = ("import sys\n\n\ndef find_spec(fullname, mod):\n"
            f"    if {test}:\n        parent_name, child_name = fullname.rsplit('.', 1)\n"
            "        parent = sys.modules.get(parent_name)\n        if parent is not None:\n"
            "            setattr(parent, child_name, mod)\n")
    site = verdict(tmp_path, {"engine/stub.py": stub, "engine/profiled.py": 'PROFILED = ["flash_mla"]\n'})
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("target,fixable", [
    ("TARGET", False),
    ("f'{CLOCK}.perf_counter'", True),  # the module is computed, the attribute is not the kernel
    ("CLOCK + '.perf_counter'", True),
    ("f'{CLOCK}.{NAME}'", False),
])
def test_a_mock_patch_of_a_computed_target_in_code_that_runs(tmp_path, target, fixable):
    hooks = ("from unittest import mock\n\nTARGET = 'sgl_kernel.flash_mla.flash_mla_sparse_fwd'\nCLOCK = 'time'\n"
             f"NAME = 'x'\n\n\ndef install(fn):\n    mock.patch({target}, fn).start()\n")
    site = verdict(tmp_path, {"engine/debug_hooks.py": hooks})
    if fixable:
        assert site.status is Status.FIXABLE, site.reason
    else:
        assert site.status is Status.MANUAL and "`mock.patch` with a computed target" in site.reason, site.reason


@pytest.mark.parametrize("use,fixable", [
    ("instrument(fm)", False),  # handed to a function that may rebind every `*_fwd` of it
    ("KERNELS = [fm]", False),
    ("assert fm is not None and getattr(fm, '__file__', None)", True),
    ("if not fm:\n    raise ImportError('no kernel')", True),
    ("import logging\nlogging.getLogger(__name__).info('sparse MLA kernel from %s', fm)", True),
])
def test_the_kernels_module_handed_on(tmp_path, use, fixable):
    imports = "from engine.profiler import instrument\n" if "instrument" in use else ""
    backend = BACKEND.replace("from sgl_kernel.flash_mla import flash_mla_sparse_fwd\n",
                              "import sgl_kernel.flash_mla as fm\n" + imports + "\n"
                              + use + "\n").replace("return flash_mla_sparse_fwd(", "return fm.flash_mla_sparse_fwd(")
    profiler = "def instrument(module):\n    for n in dir(module):\n        module.__setattr__(n, None)\n"
    site = verdict(tmp_path, {"engine/profiler.py": profiler}, backend=backend)
    if fixable:
        assert site.status is Status.FIXABLE, site.reason
    else:
        assert site.status is Status.MANUAL and "is handed on" in site.reason, site.reason


DERIVED_BACKEND = """\
import torch
from sgl_kernel.flash_mla import flash_mla_sparse_fwd
{extra}

def attend(q, kv, idx, scale):
    return flash_mla_sparse_fwd(q, kv, idx, scale)
"""


@pytest.mark.parametrize("extra,files", [
    ("from engine.devshim import *\n", {"engine/devshim.py": "torch = None\n"}),
    ("", {"engine/platform_patch.py": "import sys\n\nfor _n, _m in list(sys.modules.items()):\n"
                                       "    if getattr(_m, 'torch', None) is not None:\n        _m.torch = None\n"}),
    ("", {"engine/other.py": "from engine import backend\n\nbackend.torch = None\n"}),
    ("\n\ndef use_device_torch():\n    global torch\n    import compat_torch\n    torch = compat_torch.torch\n", {}),
    ("", {}),
])
def test_no_swap_of_the_modules_torch_reaches_the_derived_lengths(tmp_path, extra, files):
    """A shim put in place of the module's `torch` (a star import, another file assigning it on this module or
    on every module, a `global torch`) changes nothing: the derived lengths read the indices' methods alone
    (rounds E and F had one detector per route; now there is no name to reach)."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'fork'\n")
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    path = tmp_path / "engine" / "backend.py"
    path.parent.mkdir(exist_ok=True)
    source = DERIVED_BACKEND.format(extra=extra)
    path.write_text(source)
    migration = migrate_source(source, str(path), kernel=KERNEL, lengths="derived")
    (site,) = migration.sites
    assert site.status is Status.FIXABLE, site.reason
    (call,) = [n for n in ast.walk(ast.parse(migration.new_source)) if isinstance(n, ast.Call)
               and any(k.arg == "topk_length" for k in n.keywords)]
    value = next(k.value for k in call.keywords if k.arg == "topk_length")
    assert {n.id for n in ast.walk(value) if isinstance(n, ast.Name)} == {"idx"}


@pytest.mark.parametrize("line,fixable", [
    # a literal value's text, or the environment's with such a default (round F's s08): runs no code of ours
    ('CHUNK = eval(os.environ.get("ATTN_CHUNK", "4096"))', True),
    ('CHUNK = eval("(4096, 8)")', True),
    ('CHUNK = eval(os.environ["ATTN_CHUNK"])', True),
    # code, or text the project builds: anything
    ('eval("setattr(Backend, \'forward\', None)")', False),
    ('eval(os.environ.get("ATTN_CHUNK", "__import__(\'sys\')"))', False),
    ('eval(open("chunk.txt").read())', False),
    ('CHUNK = eval(os.environ.get("ATTN_CHUNK", "4096"), vars(engine.backend))', False),
    ('exec(SOURCE)', False),
])
def test_eval_of_a_literal_or_of_the_environment_in_an_importer(tmp_path, line, fixable):
    launcher = f"import os\n\nimport engine.backend\nfrom engine.backend import Backend\n\nSOURCE = ''\n{line}\n"
    site = verdict(tmp_path, {"launcher.py": launcher})
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("probe,fixable", [
    # the module handed to a function of the file that only reads it (round F's s07, an availability probe)
    ("def has(module):\n    return 'topk_length' in str(getattr(module, '__version__', ''))\n\n\nHAS = has(fm)\n", True),
    ("def has(module, name):\n    return hasattr(module, name)\n\n\nHAS = has(fm, 'x')\n", True),
    # ... that keeps it, hands it on, or rebinds the parameter: anything
    ("KEPT = []\n\n\ndef has(module):\n    KEPT.append(module)\n\n\nhas(fm)\n", False),
    ("def has(module):\n    instrument(module)\n\n\nhas(fm)\n", False),
    ("def has(module):\n    module = wrap(module)\n    return module\n\n\nhas(fm)\n", False),
    ("def has(module):\n    return lambda: module\n\n\nhas(fm)\n", False),
    ("def has(*modules):\n    return modules\n\n\nhas(fm)\n", False),
])
def test_the_kernel_module_handed_to_a_function_that_only_reads_it(tmp_path, probe, fixable):
    backend = BACKEND.replace("from sgl_kernel.flash_mla import flash_mla_sparse_fwd\n",
                              "from sgl_kernel import flash_mla as fm\n").replace(
        "return flash_mla_sparse_fwd(", "return fm.flash_mla_sparse_fwd(") + "\n\n" + probe
    site = verdict(tmp_path, {}, backend=backend)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


_TRACED = """\
import functools
import time

import sgl_kernel.flash_mla as fm

TIMINGS = []


def traced(fn):
    \"\"\"Time every call.\"\"\"
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        t0 = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            TIMINGS.append(time.perf_counter() - t0)
    return wrapper


fm.flash_mla_sparse_fwd = traced(fm.flash_mla_sparse_fwd)
"""


@pytest.mark.parametrize("edit,fixable", [
    (None, True),  # a pass-through profiler wrapping the kernel in place (round F's s05)
    (("        t0 = time.perf_counter()\n", ""), True),
    (("return fn(*args, **kwargs)", "return fn(*args)"), False),  # drops the keywords: topk_length lost
    (("return fn(*args, **kwargs)", "return fn(*args, **{k: v for k, v in kwargs.items() if k != 'x'})"), False),
    (("def wrapper(*args, **kwargs):", "def wrapper(q, kv, indices, sm_scale, d_v=512, attn_sink=None, **kwargs):"),
     False),
    (("        t0 = time.perf_counter()\n", "        args = args[::-1]\n"), False),
    (("        finally:\n", "        except TypeError:\n            return None\n        finally:\n"), False),
    (("fm.flash_mla_sparse_fwd = traced(fm.flash_mla_sparse_fwd)", "fm.flash_mla_sparse_fwd = traced(fm.other)"), False),
    (("@functools.wraps(fn)", "@functools.lru_cache"), False),
])
def test_the_kernel_wrapped_in_place_by_a_pass_through_decorator(tmp_path, edit, fixable):
    tracing = _TRACED if edit is None else _TRACED.replace(*edit)
    site = verdict(tmp_path, {"tracing.py": tracing, "engine/__init__.py": "import tracing\n"})
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("write,fixable", [
    # every way a file gives the field a value (round J1): a positional argument, a `**` mapping, `_make`,
    # `object.__setattr__` and a literal setattr, a copy into an alias of it or through `torch.Tensor.copy_`
    ("m = DSAMetadata(batch.seq_lens.to(torch.int32))", False),
    ("m = DSAMetadata(batch.seq_lens.clamp(max=INDEX_TOPK))", True),
    ("m = DSAMetadata(**{'dsa_cache_seqlens_int32': batch.seq_lens})", False),
    ("m = DSAMetadata(**batch.fields)", False),
    ("m = DSAMetadata(*batch.fields)", False),
    ("m = DSAMetadata._make([batch.seq_lens])", False),
    ("m = DSAMetadata()\n    object.__setattr__(m, 'dsa_cache_seqlens_int32', batch.seq_lens)", False),
    ("m = DSAMetadata()\n    object.__setattr__(m, 'dsa_cache_seqlens_int32', batch.seq_lens.clamp(max=INDEX_TOPK))", True),
    ("m = batch.meta\n    setattr(m, 'dsa_cache_seqlens_int32', batch.seq_lens.clamp(max=INDEX_TOPK))", False),  # graph
    ("m = batch.meta\n    buf = m.dsa_cache_seqlens_int32\n    buf.copy_(batch.seq_lens)", False),
    ("m = batch.meta\n    buf = m.dsa_cache_seqlens_int32\n    buf.copy_(batch.seq_lens.clamp(max=INDEX_TOPK))", True),
    ("m = batch.meta\n    buf = m.dsa_cache_seqlens_int32\n    buf.add_(1)", False),
    ("m = batch.meta\n    torch.Tensor.copy_(m.dsa_cache_seqlens_int32, batch.seq_lens)", False),
    ("m = batch.meta\n    getattr(m, 'dsa_cache_seqlens_int32').copy_(batch.seq_lens)", False),
])
def test_every_way_another_file_gives_the_field_a_value(tmp_path, write, fixable):
    site = verdict(tmp_path, {"builder.py": "import torch\nfrom engine.backend import DSAMetadata\n\n\n"
                                            f"def build(batch):\n    {write}\n    return m\n"})
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("extra,fixable", [
    ("", True),
    # round J1: a same-named override in a class a factory function defines, a base of another file placed
    # before the helper's class in a subclass of this module, a metaclass rewriting the class's namespace
    ("def make():\n    class Fast(Backend):\n        def _forward_flashmla_sparse(self, q, kv, idx, scale):\n"
     "            return q\n    return Fast()\n", False),
    ("from fastpath import FastAttend\n\n\nclass FastBackend(FastAttend, Backend):\n    pass\n", False),
    ("from fastpath import Plain\n\n\nclass FastBackend(Plain, Backend):\n    pass\n", True),
    ("class Meta(type):\n    pass\n\n\nclass Sub(Backend, metaclass=Meta):\n    pass\n", False),
])
def test_what_else_of_the_module_callers_may_reach_for_the_helper(tmp_path, extra, fixable):
    fast = ("class FastAttend:\n    def _forward_flashmla_sparse(self, q, kv, idx, scale):\n        return q\n\n\n"
            "class Plain:\n    def other(self):\n        return 1\n")
    site = verdict(tmp_path, {"fastpath.py": fast}, backend=BACKEND + "\n\n" + extra)
    assert (site.status is Status.FIXABLE) is fixable, site.reason
