"""Red-team round AS: the engine locked in a TOML lock (uv.lock's `[[package]]` name and version), and the lengths a
file of the fork stores on a batch view read off another field, a parameter or a global (not these rows' own)."""
import pytest

from test_kernel_gate import site_in
from test_soundness import ANNOTATED_HOLDER, HANDED_INDICES, _files_site
from topk_migrate.model import Status

UV_LOCK = ('version = 1\n\n[[package]]\nname = "fork-serve"\nversion = "0.1.0"\nsource = { editable = "." }\n\n'
           '[[package]]\nname = "sglang"\nversion = "{R}"\nsource = {S}\n')


@pytest.mark.parametrize("release, source, fixable", [
    ("0.4.9.post2", '{ registry = "https://pypi.org/simple" }', False),
    ("0.4.9.post2", '{ git = "https://github.com/sgl-project/sglang?subdirectory=python&rev=v0.4.9.post2#6f3b" }', False),
    ("0.5.18", '{ registry = "https://pypi.org/simple" }', True)])
def test_round_as_the_engine_a_lock_pins(tmp_path, release, source, fixable):
    (tmp_path / ".git").mkdir()
    (tmp_path / "requirements.txt").write_text("sglang-kernel==0.4.6\n")
    site = site_in(tmp_path, {"uv.lock": UV_LOCK.replace("{R}", release).replace("{S}", source)})
    assert (site.status is Status.FIXABLE) is fixable, site.reason


_VIEW = "import copy\n\n_LENS = None\n\n\ndef plan(backend, batch, n, lens=None):\n    view = copy.copy(batch)\n    {store}\n" \
        "    backend.init_forward_metadata(view)\n"


@pytest.mark.parametrize("store, fixable", [
    # another field, a parameter (by `=` or a literal setattr), a global another function sets: not these lengths
    ("view.seq_lens = batch.kv_lens", False),
    ("view.seq_lens = lens", False),
    ('setattr(view, "seq_lens", lens)', False),
    ("view.seq_lens = _LENS", False),
    ("view.seq_lens = batch.seq_lens", True)])
def test_round_as_the_lengths_a_view_is_given(tmp_path, store, fixable):
    src = ANNOTATED_HOLDER.format(extend="DSAMetadata(dsa_cache_seqlens_int32=forward_batch.seq_lens.clamp("
                                         "max=self.dsa_index_topk).to(torch.int32))")
    site = _files_site(tmp_path, {"verify.py": _VIEW.replace("{store}", store)}, src)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


_RUNNER = ("from records import Step\n{rebind}\n\nclass Runner:\n    def __init__(self, backend):\n"
           "        self.backend = backend\n\n    def run(self, step):\n"
           "        return self.backend.forward(step.q, step.kv, step.indices, step.scale)\n\n"
           "    def serve(self, q, kv, indices, scale):\n        return self.run(Step(q, kv, indices, scale))\n")
_RECORD = ("import torch\n\nfrom zig import zigzag_init\n\n\nclass Step:\n    {decorator}def __init__(self, q, kv, indices, scale):\n"
           "        self.q = q\n        self.kv = kv\n        self.indices = indices\n        self.scale = scale\n{more}")


@pytest.mark.parametrize("rebind, decorator, more, fixable", [
    # round AS (s2): a record made in a call's arguments is read through only where the class and the initializer
    # that run are the ones read: not an initializer bound under an `if` or by assignment, a store hook bound by
    # assignment, a decorated `__init__`, a name the calling file binds again
    ("", "", "\n    if torch.cuda.device_count() > 1:\n        __init__ = zigzag_init\n", False),
    ("", "", "\n    __setattr__ = object.__setattr__\n", False),
    ("", "@torch.no_grad()\n    ", "", False),
    ("\nif torch.cuda.device_count() > 1:\n    from zig import ZigStep as Step\n", "", "", False),
    ("", "", "", True)])
def test_round_as_a_record_read_through_runs_what_was_read(tmp_path, rebind, decorator, more, fixable):
    files = {"records.py": _RECORD.replace("{decorator}", decorator).replace("{more}", more),
             "zig.py": "class ZigStep:\n    pass\n\n\ndef zigzag_init(self, q, kv, indices, scale):\n    pass\n",
             "runner.py": _RUNNER.replace("{rebind}", rebind)}
    site = _files_site(tmp_path, files, HANDED_INDICES)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


# Round AT: a lock's engine in JSON and YAML and Nix; the operand's name read whole and off the batch itself; a
# planner whose body a plain call does not run; the indices through `.item()`/`.tolist()` and a starred join; a
# caller's mangled spelling and keywords the traced function does not take.
@pytest.mark.parametrize("files", [
    {"Pipfile.lock": '{\n    "default": {\n        "sglang": {"extras": ["srt"], "version": "==0.4.9.post2"}\n    }\n}\n'},
    {"conda-lock.yml": "package:\n  - name: sglang\n    version: 0.4.9.post2\n    manager: pip\n"},
    {"shell.nix": 'buildPythonPackage rec {\n  pname = "sglang";\n  version = "0.4.9.post2";\n}\n'}])
def test_round_at_the_engine_kept_as_a_name_and_a_version(tmp_path, files):
    (tmp_path / ".git").mkdir()
    (tmp_path / "requirements.txt").write_text("sglang-kernel==0.4.6\n")
    site = site_in(tmp_path, files)
    assert site.status is Status.MANUAL, site.reason


@pytest.mark.parametrize("operand, fixable", [
    ("forward_batch.kv_seq_lens", False), ("forward_batch.seq_lens_with_lookahead", False),
    ("forward_batch.spec_info.seq_lens", False), ("forward_batch.seq_lens", True)])
def test_round_at_the_operand_is_the_batchs_own_seq_lens(tmp_path, operand, fixable):
    src = ANNOTATED_HOLDER.format(extend=f"DSAMetadata(dsa_cache_seqlens_int32={operand}.clamp("
                                         "max=self.dsa_index_topk).to(torch.int32))")
    site = _files_site(tmp_path, {}, src)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("indices, fixable", [
    ("self.ring.item(0)", False), ("indices.new_tensor(self.history.tolist()[-1])", False),
    ("torch.cat([*(indices, indices), indices.new_full((indices.shape[0], 4), -1)], dim=-1)", False),
    ("indices.contiguous()", True)])
def test_round_at_the_indices_read_through_their_entries(tmp_path, indices, fixable):
    src = HANDED_INDICES.replace("    def _forward_flashmla_sparse(self, q, kv, indices, sm_scale):\n",
                                 "    def _forward_flashmla_sparse(self, q, kv, indices, sm_scale):\n"
                                 f"        indices = {indices}\n").replace(
        "from sgl_kernel.flash_mla import flash_mla_sparse_fwd\n", "import torch\nfrom sgl_kernel.flash_mla import "
                                                                   "flash_mla_sparse_fwd\n")
    site = _files_site(tmp_path, {}, src)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("runner, fixable", [
    ("class Runner:\n    def __attend(self, backend, q, kv, idx, s):\n        return backend.forward(q, kv, idx, s)\n\n\n"
     "class CP(Runner):\n    def step(self, backend, q, kv, idx, s):\n        order = idx[:, 0].argsort()\n"
     "        return self._Runner__attend(backend, q[order], kv, idx[order], s)\n", False),
    ("def layer(backend, q, kv, idx, s):\n    order = idx[:, 0].argsort()\n"
     "    return backend.forward(q_nope_rope=q[order], kv=kv, topk=idx[order], scale=s)\n", False)])
def test_round_at_a_callers_spelling_the_walk_reads(tmp_path, runner, fixable):
    site = _files_site(tmp_path, {"runner.py": runner}, HANDED_INDICES)
    assert (site.status is Status.FIXABLE) is fixable, site.reason
