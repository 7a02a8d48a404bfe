"""Red-team round AS: the engine locked in a TOML lock (uv.lock's `[[package]]` name and version), and the lengths a
file of the fork stores on a batch view read off another field, a parameter or a global (not these rows' own)."""
import pytest

from test_kernel_gate import site_in
from test_soundness import ANNOTATED_HOLDER, _files_site
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
