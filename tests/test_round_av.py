"""Red-team round AV: the engine installed by routes no reader read (another registry's tag, a registry spelled by a
variable, a clone checked out later, git options, a tag's archive, TOML block tables), a method defined under a
class body's `match`, and a capitalised maker bound below module level or read off a project module."""
import pytest

from test_kernel_gate import site_in
from test_round_au import _SELECTED
from test_soundness import ANNOTATED_HOLDER, HANDED_INDICES, _files_site
from topk_migrate.model import Status

_REQ = {".git/HEAD": "ref: refs/heads/main\n", "requirements.txt": "sglang-kernel==0.4.6\n"}
_OLD, _NEW = "v0.4.9.post2", "v0.5.18"


@pytest.mark.parametrize("path, text, fixable", [
    # another registry's tag is its own release (NVIDIA's `25.01-py3`), not the engine's: decides nothing
    ("docker/Dockerfile", "FROM nvcr.io/nvidia/sglang:25.01-py3\n", None),
    ("deploy/values.yaml", "image:\n  repository: nvcr.io/nvidia/sglang\n  tag: 25.01-py3\n", None),
    # a registry spelled by a variable or a template, the engine's tag after it
    ("docker/Dockerfile", "ARG REGISTRY=mirror.local\nFROM ${REGISTRY}/sglang:{R}-cu124\n", False),
    ("deploy/pod.yaml", 'image: "{{ .Values.registry }}/sglang:{R}-cu124"\n', False),
    # a clone checked out at a tag later, git's own options before `clone`
    ("docker/Dockerfile", "RUN git clone https://github.com/sgl-project/sglang.git /opt/sglang && "
                          "cd /opt/sglang && git checkout {R} && pip install -e python\n", False),
    ("scripts/setup.sh", "git -c advice.detachedHead=false clone -b {R} https://github.com/sgl-project/sglang\n", False),
    # a tag's archive, and a directory named by its release
    ("docker/Dockerfile", 'RUN pip install "https://github.com/sgl-project/sglang/archive/refs/tags/{R}.zip'
                          '#subdirectory=python"\n', False),
    # a TOML table of its own for the engine
    ("pyproject.toml", '[project]\nname = "fork"\nversion = "0.1"\ndependencies = ["sglang[srt]"]\n\n'
                       '[tool.uv.sources.sglang]\ngit = "https://github.com/sgl-project/sglang"\ntag = "{R}"\n', False)])
@pytest.mark.parametrize("release", [_OLD, _NEW])
def test_round_av_the_engine_installed_by_other_routes(tmp_path, path, text, fixable, release):
    site = site_in(tmp_path, {**_REQ, path: text.replace("{R}", release)})
    want = Status.FIXABLE if fixable is not None and (fixable or release == _NEW) else Status.MANUAL
    assert site.status is want, site.reason


_MATCHED = ("import sys\n\n\nclass Runner:\n    def __init__(self, backend):\n        self.backend = backend\n\n"
            "    def run(self, q, kv, topk_indices, scale, order):\n        return self.step({args})\n\n"
            "    match sys.platform:\n        case 'linux':\n            def step(self, q, kv, topk_indices, scale):\n"
            "                return self.backend.forward(q=q, kv=kv, topk_indices=topk_indices, scale=scale)\n")


@pytest.mark.parametrize("args, fixable", [
    # a method under a class body's `match` takes its object first: its callers' rows are read at their places
    ("q[order], kv, topk_indices[order], scale", False),
    ("q, kv, topk_indices, scale", True)])
def test_round_av_a_method_under_a_match(tmp_path, args, fixable):
    site = _files_site(tmp_path, {"runner.py": _MATCHED.format(args=args)}, HANDED_INDICES)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


_POOL = ("import types\n\n_BY_SIZE = {}\n\n\ndef StaticMetadata(**fields):\n"
         "    return _BY_SIZE.setdefault(len(fields), types.SimpleNamespace(**fields))\n")
_CLIP = "(dsa_cache_seqlens_int32=forward_batch.seq_lens.clamp(max=self.dsa_index_topk).to(torch.int32))"


@pytest.mark.parametrize("signature, maker, fixable", [
    # a pool's maker spelled like a class: read off a project module, a parameter's default, a local
    ("", "graph_records.StaticMetadata", False),
    (", Maker=graph_records.StaticMetadata", "Maker", False),
    # a library's class read off its module, and the module's own record class
    ("", "types.SimpleNamespace", True),
    ("", "DSAMetadata", True)])
def test_round_av_a_capitalised_maker(tmp_path, signature, maker, fixable):
    src = "import types\n\nimport graph_records\n" + ANNOTATED_HOLDER.format(extend=maker + _CLIP).replace(
        "def init_forward_metadata(self, forward_batch):", f"def init_forward_metadata(self, forward_batch{signature}):")
    site = _files_site(tmp_path, {"graph_records.py": _POOL}, src)
    assert (site.status is Status.FIXABLE) is fixable, site.reason


_SHAPED = _SELECTED.replace("{select}", "{step}")


@pytest.mark.parametrize("step, fixable", [
    # an axis after the entries' (each entry a row of one: the kernel's width 1)
    ("        kept = topk_indices[:, 0, :].unsqueeze(-1)\n", False),
    ("        kept = topk_indices[:, 0, :][..., None]\n", False),
    ("        kept = topk_indices[:, 0, :].unsqueeze(1)\n", True),
    ("        kept = topk_indices[:, 0, :][:, None]\n", True),
    # the same tensor under another expression: `+t` is t, a list repeated holds it n times (written in place)
    ("        work = +topk_indices\n        work.masked_fill_(work >= 40, -1)\n        kept = topk_indices\n", False),
    ("        steps = [topk_indices] * 2\n        steps[-1].masked_fill_(steps[-1] >= 40, -1)\n"
     "        kept = topk_indices\n", False),
    ("        work = topk_indices + 0\n        work.masked_fill_(work >= 40, -1)\n        kept = topk_indices\n", True)])
def test_round_av_the_indices_shape_and_identity(tmp_path, step, fixable):
    site = _files_site(tmp_path, {}, _SHAPED.replace("{step}", step))
    assert (site.status is Status.FIXABLE) is fixable, site.reason


@pytest.mark.parametrize("block, fixable", [
    # the helper defined under a block of its class's body: where it is not bound, a base's method runs
    ("    if FUSED:\n", False),
    ("    try:\n        import fused_ext  # noqa: F401\n    except ImportError:\n        pass\n    else:\n", False),
    ("", True)])
def test_round_av_a_helper_under_a_block_of_its_class(tmp_path, block, fixable):
    body = HANDED_INDICES.split("    def _forward_flashmla_sparse", 1)
    indent = "    " if block else ""
    helper = "".join(indent + line if line.strip() else line
                     for line in ("    def _forward_flashmla_sparse" + body[1]).splitlines(keepends=True))
    src = body[0].replace("class Backend:", "FUSED = True\n\n\nclass Backend:") + block.replace("fused_ext", "os") + helper
    site = _files_site(tmp_path, {}, src)
    assert (site.status is Status.FIXABLE) is fixable, site.reason
