"""The adversarial backends: one per way a fork could make a naive rewrite go wrong.

Every module defines entry(inputs) (see harness.Inputs) and marks each line that holds a
kernel use with `# SITE`. Hazard classes follow issue 8; "control" variants are the
row-preserving shapes real engines use, which must stay fixable (over-refusal is measured too).
"""
from __future__ import annotations

import textwrap
from typing import List

from .harness import Variant

HEAD = '"""Adversarial DSA backend; metadata.dsa_cache_seqlens_int32 holds seqlens clipped to topk."""\n'
IMPORT = "from sgl_kernel.flash_mla import flash_mla_sparse_fwd\n"
REQ_OLD = (("requirements.txt", "sglang-kernel==0.4.2.post2\n"),)


def _src(body: str, imports: str = "import torch\n" + IMPORT) -> str:
    return HEAD + imports + "\n\n" + textwrap.dedent(body).lstrip("\n")


VARIANTS: List[Variant] = []


def add(name: str, hazard: str, body: str, imports: str = "import torch\n" + IMPORT, **kw) -> None:
    VARIANTS.append(Variant(name, hazard, _src(body, imports), **kw))


# --- the reference shape and the row-preserving steps real engines use (must stay fixable) ------

# (name, lines before the call that build q_input from q_all, line after the call)
ROW_PRESERVING = [
    ("plain", "q_input = q_all", ""),
    ("head_padding", "num_tokens, num_heads, head_dim = q_all.shape\n"
                     "q_input = q_all.new_zeros((num_tokens, 4, head_dim))\n"
                     "q_input[:, :num_heads] = q_all", "out = out[:, :num_heads]"),
    ("view_keep_rows", "q_input = q_all.view(q_all.shape[0], -1, q_all.shape[-1])", ""),
    ("reshape_keep_rows", "q_input = q_all.reshape(-1, q_all.shape[1], q_all.shape[2])", ""),
    ("unsqueeze_keep_rows", "q_input = q_all.flatten(1).unsqueeze(1).view(q_all.shape)", ""),
    ("cat_last_dim", "q_nope, q_rope = q_all.split([12, 4], dim=-1)\n"
                     "q_input = torch.cat([q_nope, q_rope], dim=-1)", ""),
    ("contiguous", "q_input = q_all.transpose(1, 2).transpose(1, 2).contiguous()", ""),
    ("chained", "q_input = q_all.contiguous().view(q_all.shape[0], -1, q_all.shape[2])\n"
                "q_input = q_input.reshape(q_input.shape[0], q_input.shape[1], -1)", ""),
]


def _ind(text: str, n: int) -> str:
    return textwrap.indent(text, " " * n) if text else ""


def helper_shape(prep: str, post: str) -> str:
    """SGLang's shape: the kernel in a helper, the metadata held by its callers."""
    return f'''
class Backend:
    def __init__(self, metadata):
        self.forward_metadata = metadata

    def forward(self, q, kv, indices, scale):
        metadata = self.forward_metadata
        return self._forward_flashmla_sparse(q_all=q, kv_cache=kv, indices=indices, sm_scale=scale)

    def _forward_flashmla_sparse(self, q_all, kv_cache, indices, sm_scale):
{_ind(prep, 8)}
        out, _, _ = flash_mla_sparse_fwd(  # SITE
            q=q_input,
            kv=kv_cache,
            indices=indices,
            sm_scale=sm_scale,
        )
{_ind(post, 8)}
        return out


def entry(inp):
    return Backend(inp.metadata).forward(inp.q, inp.kv, inp.indices, inp.sm_scale)
'''


def in_call_shape(prep: str, post: str) -> str:
    """The metadata bound in the function that calls the kernel."""
    return f'''
def attend(q_all, kv, indices, scale, metadata):
{_ind(prep, 4)}
    out, _, _ = flash_mla_sparse_fwd(q_input, kv, indices, scale)  # SITE
{_ind(post, 4)}
    return out


def entry(inp):
    return attend(inp.q, inp.kv, inp.indices, inp.sm_scale, inp.metadata)
'''


for _name, _prep, _post in ROW_PRESERVING:
    add(f"control_helper_{_name}", "control", helper_shape(_prep, _post), expect="fixable")
    add(f"control_in_call_{_name}", "control", in_call_shape(_prep, _post), expect="fixable")

_PLAIN = helper_shape("q_input = q_all", "")
for _name, _imports, _spelling in [
    ("module_alias", "import torch\nimport sgl_kernel.flash_mla as fm\n", "fm.flash_mla_sparse_fwd("),
    ("from_package", "import torch\nfrom sgl_kernel import flash_mla_sparse_fwd as sparse_fwd\n", "sparse_fwd("),
    ("package_attr", "import torch\nimport sgl_kernel\n", "sgl_kernel.flash_mla_sparse_fwd("),
]:
    add(f"control_import_{_name}", "control", _PLAIN.replace("flash_mla_sparse_fwd(", _spelling), imports=_imports,
        expect="fixable")
add("control_import_submodule_from_package", "control", _PLAIN.replace("flash_mla_sparse_fwd(", "flash_mla.flash_mla_sparse_fwd("),
    imports="import torch\nfrom sgl_kernel import flash_mla\n", expect="fixable")
add("control_local_import", "control", _PLAIN.replace(
    "        q_input = q_all\n", "        from sgl_kernel.flash_mla import flash_mla_sparse_fwd\n\n        q_input = q_all\n"),
    imports="import torch\n", expect="fixable")
add("control_nsa_name", "control", _PLAIN.replace("class Backend", "# older trees: metadata.nsa_cache_seqlens_int32\nclass Backend"),
    expect="fixable")
add("control_module_functions", "control", '''
def sparse_helper(q, kv, indices, scale):
    o, _, _ = flash_mla_sparse_fwd(q, kv, indices, scale)  # SITE
    return o


def forward(inp):
    metadata = inp.metadata
    return sparse_helper(inp.q, inp.kv, inp.indices, inp.sm_scale)


def entry(inp):
    return forward(inp)
''', expect="fixable")
add("metadata_bound_in_if_and_else", "2 metadata", '''
def entry(inp):
    q = inp.q
    if inp.flags.get("decode"):
        metadata = inp.metadata
    else:
        metadata = inp.metadata
    o, _, _ = flash_mla_sparse_fwd(q, inp.kv, inp.indices, inp.sm_scale)  # SITE
    return o
''')  # bound on every path: fixing it is fine, refusing it is over-cautious but sound

add("control_engine_like_page_table", "control", '''
class Backend:
    """The example backend's flow: top-k positions -> kv slots through a page table, head padding."""

    def __init__(self, metadata, kv_pool):
        self.forward_metadata = metadata
        self.kv_pool = kv_pool

    def _pad_topk_indices(self, topk_indices, num_rows):
        missing = num_rows - topk_indices.shape[0]
        if missing == 0:
            return topk_indices
        return torch.cat([topk_indices, topk_indices.new_full((missing, topk_indices.shape[1]), -1)])

    def _topk_to_kv_slots(self, topk_indices, page_table):
        slots = torch.gather(page_table, 1, topk_indices.clamp(min=0).long()).to(torch.int32)
        return slots.masked_fill(topk_indices < 0, -1)

    def forward_extend(self, q, num_heads, head_dim, topk_indices, sm_scale):
        metadata = self.forward_metadata
        q_all = q.contiguous().view(-1, num_heads, head_dim)
        topk_indices = self._pad_topk_indices(topk_indices, q_all.shape[0])
        page_table = torch.arange(self.kv_pool.shape[0]).expand(q_all.shape[0], -1)
        page_table_1 = self._topk_to_kv_slots(topk_indices, page_table)
        return self._forward_flashmla_sparse(q_all=q_all, kv_cache=self.kv_pool, page_table_1=page_table_1, sm_scale=sm_scale)

    def _forward_flashmla_sparse(self, q_all, kv_cache, page_table_1, sm_scale):
        num_tokens, num_heads, head_dim = q_all.shape
        padded = num_heads % 4 != 0
        if padded:
            q_input = q_all.new_zeros((num_tokens, 4, head_dim))
            q_input[:, :num_heads] = q_all
        else:
            q_input = q_all
        out, _, _ = flash_mla_sparse_fwd(  # SITE
            q=q_input,
            kv=kv_cache,
            indices=page_table_1.unsqueeze(1),
            sm_scale=sm_scale,
        )
        if padded:
            out = out[:, :num_heads]
        return out


def entry(inp):
    q2d = inp.q.flatten(1)
    backend = Backend(inp.metadata, inp.kv)
    return backend.forward_extend(q2d, inp.q.shape[1], inp.q.shape[2], inp.indices[:, 0, :], inp.sm_scale)
''', expect="fixable")

# --- 1 placement and scope ----------------------------------------------------------------------
add("lambda_parameter_q", "1 placement", '''
def entry(inp):
    metadata = inp.metadata
    attend = lambda qq, ii: flash_mla_sparse_fwd(qq, inp.kv, ii, inp.sm_scale)[0]  # SITE
    return attend(inp.q, inp.indices)
''')
add("lambda_parameter_shadows_q", "1 placement", '''
def entry(inp):
    metadata = inp.metadata
    q, idx = inp.q, inp.indices
    attend = lambda q, i: flash_mla_sparse_fwd(q, inp.kv, i, inp.sm_scale)[0]  # SITE
    return attend(q[:4], idx[:4]), attend(q[4:], idx[4:])
''')
add("comprehension_variable", "1 placement", '''
def entry(inp):
    metadata = inp.metadata
    pairs = zip(inp.q.split(4), inp.indices.split(4))
    outs = [flash_mla_sparse_fwd(qc, inp.kv, ic, inp.sm_scale)[0] for qc, ic in pairs]  # SITE
    return torch.cat(outs)
''')
add("comprehension_shadows_outer_q", "1 placement", '''
def entry(inp):
    metadata = inp.metadata
    qc = inp.q
    pairs = zip(qc.split(4), inp.indices.split(4))
    outs = [flash_mla_sparse_fwd(qc, inp.kv, ic, inp.sm_scale)[0] for qc, ic in pairs]  # SITE
    return torch.cat(outs)
''')
add("semicolon_slice_then_call", "1 placement", '''
def entry(inp):
    metadata = inp.metadata
    q, kv, idx = inp.q, inp.kv, inp.indices
    n = 5
    q = q[:n]; o, _, _ = flash_mla_sparse_fwd(q, kv, idx[:n], inp.sm_scale)  # SITE
    return o
''')
add("two_calls_one_statement", "1 placement", '''
def entry(inp):
    metadata = inp.metadata
    qa, ia = inp.q[:4], inp.indices[:4]
    qb, ib = inp.q, inp.indices
    oa, ob = flash_mla_sparse_fwd(qa, inp.kv, ia, inp.sm_scale)[0], flash_mla_sparse_fwd(qb, inp.kv, ib, inp.sm_scale)[0]  # SITE
    return oa, ob
''')
add("two_calls_one_statement_reversed", "1 placement", '''
def entry(inp):
    metadata = inp.metadata
    qa, ia = inp.q[:4], inp.indices[:4]
    qb, ib = inp.q, inp.indices
    ob, oa = flash_mla_sparse_fwd(qb, inp.kv, ib, inp.sm_scale)[0], flash_mla_sparse_fwd(qa, inp.kv, ia, inp.sm_scale)[0]  # SITE
    return oa, ob
''')
add("two_lambdas_share_topk_length", "1 placement", '''
def entry(inp):
    metadata = inp.metadata
    q_half, i_half = inp.q[:4], inp.indices[:4]
    q_full, i_full = inp.q, inp.indices
    first = lambda: flash_mla_sparse_fwd(q_half, inp.kv, i_half, inp.sm_scale)[0]  # SITE
    second = lambda: flash_mla_sparse_fwd(q_full, inp.kv, i_full, inp.sm_scale)[0]  # SITE
    return first(), second()
''')
add("walrus_binds_q_in_statement", "1 placement", '''
def entry(inp):
    metadata = inp.metadata
    o = flash_mla_sparse_fwd(qq, inp.kv, ii, inp.sm_scale)[0] if (qq := inp.q[:4]) is not None and (ii := inp.indices[:4]) is not None else None  # SITE
    return o
''')
add("closure_q_rebound_between_calls", "1 placement", '''
def entry(inp):
    metadata = inp.metadata
    q, idx = inp.q, inp.indices

    def attend():
        return flash_mla_sparse_fwd(q, inp.kv, idx, inp.sm_scale)[0]  # SITE

    first = attend()
    order = torch.arange(q.shape[0] - 1, -1, -1)
    q, idx = q[order], idx[order]
    return first, attend()
''')
add("nested_def_called_with_chunks", "1 placement", '''
def entry(inp):
    metadata = inp.metadata

    def attend(qq, ii):
        return flash_mla_sparse_fwd(qq, inp.kv, ii, inp.sm_scale)[0]  # SITE

    return torch.cat([attend(inp.q[:4], inp.indices[:4]), attend(inp.q[4:], inp.indices[4:])])
''')
add("call_in_one_line_if_suite_after_slice", "1 placement", '''
def entry(inp):
    metadata = inp.metadata
    q, idx = inp.q, inp.indices
    if q.shape[0] > 4: q = q[:4]; idx = idx[:4]; return flash_mla_sparse_fwd(q, inp.kv, idx, inp.sm_scale)[0]  # SITE
    return None
''')

add("loop_rotates_q_each_step", "1 placement", '''
def entry(inp):
    metadata = inp.metadata
    q, idx = inp.q, inp.indices
    outs = []
    for _ in range(2):
        q, idx = torch.roll(q, 1, 0), torch.roll(idx, 1, 0)
        o, _, _ = flash_mla_sparse_fwd(q, inp.kv, idx, inp.sm_scale)  # SITE
        outs.append(o)
    return outs
''')

add("lambda_closure_q_rebound_after", "1 placement", '''
def entry(inp):
    metadata = inp.metadata
    q, idx = inp.q, inp.indices
    attend = lambda: flash_mla_sparse_fwd(q, inp.kv, idx, inp.sm_scale)[0]  # SITE
    first = attend()
    q, idx = q.flip(0), idx.flip(0)
    return first, attend()
''')
add("helper_with_star_args", "1 placement", '''
class Backend:
    def forward(self, inp):
        metadata = inp.metadata
        return self._sparse(inp.q, inp.kv, inp.indices, inp.sm_scale, "prefill")

    def _sparse(self, q, kv, indices, scale, *tags):
        o, _, _ = flash_mla_sparse_fwd(q, kv, indices, scale)  # SITE
        return o, len(tags)


def entry(inp):
    return Backend().forward(inp)[0]
''')

add("call_in_while_condition", "1 placement", '''
def entry(inp):
    metadata = inp.metadata
    q, idx = inp.q, inp.indices
    n = q.shape[0]
    while flash_mla_sparse_fwd(q, inp.kv, idx, inp.sm_scale)[0].shape[0] > 4:  # SITE
        n //= 2
        q, idx = q[:n], idx[:n]
    return q
''')

add("call_in_conditional_expression_q_may_be_none", "1 placement", '''
def attend(q, kv, indices, scale, metadata):
    o = flash_mla_sparse_fwd(q, kv, indices, scale)[0] if q is not None else None  # SITE
    return o


def entry(inp):
    return attend(None, inp.kv, inp.indices, inp.sm_scale, inp.metadata), attend(inp.q, inp.kv, inp.indices, inp.sm_scale, inp.metadata)
''')

# --- 2 metadata availability --------------------------------------------------------------------
add("metadata_bound_only_in_if", "2 metadata", '''
def entry(inp):
    q = inp.q
    if inp.flags.get("decode"):
        metadata = inp.metadata
    o, _, _ = flash_mla_sparse_fwd(q, inp.kv, inp.indices, inp.sm_scale)  # SITE
    return o
''')
add("caller_metadata_only_in_if", "2 metadata", '''
class Backend:
    def forward(self, inp):
        if inp.flags.get("decode"):
            metadata = inp.metadata
        return self._sparse(inp.q, inp.kv, inp.indices, inp.sm_scale)

    def _sparse(self, q, kv, indices, scale):
        o, _, _ = flash_mla_sparse_fwd(q, kv, indices, scale)  # SITE
        return o


def entry(inp):
    return Backend().forward(inp)
''')
add("metadata_none_default", "2 metadata", '''
def attend(q, kv, indices, scale, metadata=None):
    o, _, _ = flash_mla_sparse_fwd(q, kv, indices, scale)  # SITE
    return o


def entry(inp):
    return attend(inp.q, inp.kv, inp.indices, inp.sm_scale)
''')
add("caller_metadata_none_default", "2 metadata", '''
def sparse(q, kv, indices, scale):
    o, _, _ = flash_mla_sparse_fwd(q, kv, indices, scale)  # SITE
    return o


def forward(q, kv, indices, scale, metadata=None):
    return sparse(q, kv, indices, scale)


def entry(inp):
    return forward(inp.q, inp.kv, inp.indices, inp.sm_scale)
''')
add("optional_metadata_none_at_runtime", "2 metadata", '''
class Backend:
    forward_metadata = None  # set only once CUDA graphs are captured

    def forward(self, q, kv, indices, scale):
        metadata = self.forward_metadata
        o, _, _ = flash_mla_sparse_fwd(q, kv, indices, scale)  # SITE
        return o


def entry(inp):
    return Backend().forward(inp.q, inp.kv, inp.indices, inp.sm_scale)
''')
add("optional_field_none_in_call", "2 metadata", '''
def attend(q, kv, indices, scale, metadata):
    o, _, _ = flash_mla_sparse_fwd(q, kv, indices, scale)  # SITE
    return o


def entry(inp):
    return attend(inp.q, inp.kv, inp.indices, inp.sm_scale, inp.Meta(None))
''')
add("optional_field_none_via_helper", "2 metadata", '''
def sparse(q, kv, indices, scale):
    o, _, _ = flash_mla_sparse_fwd(q, kv, indices, scale)  # SITE
    return o


def forward(inp, metadata):
    return sparse(inp.q, inp.kv, inp.indices, inp.sm_scale)


def entry(inp):
    return forward(inp, inp.Meta(None))
''')
add("metadata_rebound_to_none", "2 metadata", '''
def entry(inp):
    metadata = inp.metadata
    q, idx = inp.q, inp.indices
    assert metadata.page_table_1.shape[0] == q.shape[0]
    metadata = None  # released: the rest of the step does not need it
    o, _, _ = flash_mla_sparse_fwd(q, inp.kv, idx, inp.sm_scale)  # SITE
    return o
''')
add("metadata_rebound_to_other_type", "2 metadata", '''
def entry(inp):
    metadata = inp.metadata
    q = inp.q
    metadata = metadata.page_table_1  # the name now holds the page table
    o, _, _ = flash_mla_sparse_fwd(q, inp.kv, inp.indices, inp.sm_scale)  # SITE
    return o
''')
add("metadata_deleted_before_call", "2 metadata", '''
def entry(inp):
    metadata = inp.metadata
    q = inp.q
    del metadata
    o, _, _ = flash_mla_sparse_fwd(q, inp.kv, inp.indices, inp.sm_scale)  # SITE
    return o
''')
add("metadata_bound_in_try", "2 metadata", '''
def lookup(inp):
    raise KeyError("no metadata on the eager path")


def entry(inp):
    q = inp.q
    try:
        metadata = lookup(inp)
    except KeyError:
        pass
    o, _, _ = flash_mla_sparse_fwd(q, inp.kv, inp.indices, inp.sm_scale)  # SITE
    return o
''')
add("metadata_bound_by_empty_loop", "2 metadata", '''
def entry(inp):
    q = inp.q
    for metadata in inp.flags.get("per_layer", []):
        pass
    o, _, _ = flash_mla_sparse_fwd(q, inp.kv, inp.indices, inp.sm_scale)  # SITE
    return o
''')
add("metadata_loop_var_other_batch", "2 metadata", '''
def entry(inp):
    q, idx = inp.q, inp.indices
    outs = []
    for metadata in (inp.metadata_for(slice(4, 8)), inp.metadata_for(slice(0, 4))):
        qq = q[:4]
        outs.append(flash_mla_sparse_fwd(qq, inp.kv, idx[:4], inp.sm_scale)[0])  # SITE
    return outs
''')

add("metadata_conditionally_set_none", "2 metadata", '''
def entry(inp):
    metadata = inp.metadata
    if not inp.flags.get("keep_metadata"):
        metadata = None
    q = inp.q
    o, _, _ = flash_mla_sparse_fwd(q, inp.kv, inp.indices, inp.sm_scale)  # SITE
    return o
''')
add("metadata_getattr_default_none", "2 metadata", '''
class Backend:
    def forward(self, q, kv, indices, scale):
        metadata = getattr(self, "forward_metadata", None)
        o, _, _ = flash_mla_sparse_fwd(q, kv, indices, scale)  # SITE
        return o


def entry(inp):
    return Backend().forward(inp.q, inp.kv, inp.indices, inp.sm_scale)
''')
add("metadata_object_lacks_field", "2 metadata", '''
import types


class DSAMetadata:
    dsa_cache_seqlens_int32: torch.Tensor


class Backend:
    """Shared by DSA and plain MLA models: the latter's metadata has no clipped seqlens."""

    def __init__(self, metadata):
        self.forward_metadata = metadata

    def forward(self, q, kv, indices, scale):
        metadata = self.forward_metadata
        o, _, _ = flash_mla_sparse_fwd(q, kv, indices, scale)  # SITE
        return o


def entry(inp):
    return Backend(types.SimpleNamespace(page_table_1=inp.metadata.page_table_1)).forward(inp.q, inp.kv, inp.indices, inp.sm_scale)
''')

add("metadata_module_global_none", "2 metadata", '''
metadata = None  # installed by init_forward_metadata on the graph path only


def forward(q, kv, indices, scale):
    global metadata
    o, _, _ = flash_mla_sparse_fwd(q, kv, indices, scale)  # SITE
    return o


def entry(inp):
    return forward(inp.q, inp.kv, inp.indices, inp.sm_scale)
''')
add("metadata_rebound_to_other_micro_batch", "2 metadata", '''
def attend(q, kv, indices, scale, inp):
    metadata = inp.metadata_for(slice(0, 4))
    lens0 = metadata.dsa_cache_seqlens_int32.sum()
    metadata = inp.metadata_for(slice(4, 8))  # the name now holds the other micro-batch
    o, _, _ = flash_mla_sparse_fwd(q, kv, indices, scale)  # SITE
    return o, lens0


def entry(inp):
    return attend(inp.q[:4], inp.kv, inp.indices[:4], inp.sm_scale, inp)
''')

add("metadata_from_context_manager_none", "2 metadata", '''
import contextlib


@contextlib.contextmanager
def graph_metadata(inp):
    yield None  # eager mode: no captured metadata


def entry(inp):
    q = inp.q
    with graph_metadata(inp) as metadata:
        o, _, _ = flash_mla_sparse_fwd(q, inp.kv, inp.indices, inp.sm_scale)  # SITE
    return o
''')
add("metadata_name_is_a_dict", "2 metadata", '''
class DSAMetadata:
    dsa_cache_seqlens_int32: torch.Tensor  # (used by the indexer, elsewhere)


def attend(q, kv, indices, scale, metadata: dict):
    o, _, _ = flash_mla_sparse_fwd(q, kv, indices, scale * metadata["scale_mult"])  # SITE
    return o


def entry(inp):
    return attend(inp.q, inp.kv, inp.indices, inp.sm_scale, {"scale_mult": 1.0})
''')

add("metadata_from_method_returning_none", "2 metadata", '''
class Backend:
    def _metadata_for(self, inp):
        return inp.metadata if inp.flags.get("dsa") else None  # plain MLA layers have none

    def forward(self, inp):
        metadata = self._metadata_for(inp)
        q = inp.q
        o, _, _ = flash_mla_sparse_fwd(q, inp.kv, inp.indices, inp.sm_scale)  # SITE
        return o, self._log(metadata)

    def _log(self, metadata):
        return metadata is None


def entry(inp):
    return Backend().forward(inp)
''')
add("metadata_from_dict_get", "2 metadata", '''
class Backend:
    def __init__(self):
        self.metadata_by_layer = {}

    def forward(self, inp, layer_id=0):
        metadata = self.metadata_by_layer.get(layer_id)
        q = inp.q
        o, _, _ = flash_mla_sparse_fwd(q, inp.kv, inp.indices, inp.sm_scale)  # SITE
        return o


def entry(inp):
    return Backend().forward(inp)
''')
add("metadata_attribute_none_in_base_class", "2 metadata", '''
from adv_base_attention import AttentionBackend


class DSABackend(AttentionBackend):
    def forward(self, inp):
        metadata = self.forward_metadata
        q = inp.q
        o, _, _ = flash_mla_sparse_fwd(q, inp.kv, inp.indices, inp.sm_scale)  # SITE
        return o


def entry(inp):
    return DSABackend().forward(inp)
''', files=(("requirements.txt", "sglang-kernel==0.4.6\n"), ("adv_base_attention.py", '''\
class AttentionBackend:
    def __init__(self):
        self.forward_metadata = None  # set by init_forward_metadata
''')))
add("metadata_param_passed_none", "2 metadata", '''
def attend(q, kv, indices, scale, metadata):
    o, _, _ = flash_mla_sparse_fwd(q, kv, indices, scale)  # SITE
    return o


def entry(inp):
    return attend(inp.q, inp.kv, inp.indices, inp.sm_scale, None)
''')
add("caller_metadata_from_dict_get", "2 metadata", '''
class Backend:
    metadata_by_layer = {}

    def forward(self, inp, layer_id=0):
        metadata = self.metadata_by_layer.get(layer_id)
        return self._sparse(inp.q, inp.kv, inp.indices, inp.sm_scale)

    def _sparse(self, q, kv, indices, scale):
        o, _, _ = flash_mla_sparse_fwd(q, kv, indices, scale)  # SITE
        return o


def entry(inp):
    return Backend().forward(inp)
''')

add("metadata_declared_type_but_none_from_base", "2 metadata", '''
from adv_base_backend2 import AttentionBackend


class DSAMetadata:
    dsa_cache_seqlens_int32: torch.Tensor


class DSABackend(AttentionBackend):
    forward_metadata: DSAMetadata  # set by init_forward_metadata; the base class starts it at None

    def forward(self, inp):
        metadata = self.forward_metadata
        q = inp.q
        o, _, _ = flash_mla_sparse_fwd(q, inp.kv, inp.indices, inp.sm_scale)  # SITE
        return o, self._describe(metadata)

    def _describe(self, metadata):
        return "warmup" if metadata is None else "serving"


def entry(inp):
    return DSABackend().forward(inp)[0]  # a warmup step, before any metadata
''', files=(("requirements.txt", "sglang-kernel==0.4.6\n"), ("adv_base_backend2.py", '''\
class AttentionBackend:
    def __init__(self):
        self.forward_metadata = None
''')))

add("metadata_declared_type_none_handled_elsewhere", "2 metadata", '''
from adv_base_backend3 import AttentionBackend, describe


class DSAMetadata:
    dsa_cache_seqlens_int32: torch.Tensor


class DSABackend(AttentionBackend):
    forward_metadata: DSAMetadata  # set by init_forward_metadata; the base class starts it at None

    def forward(self, inp):
        metadata = self.forward_metadata
        q = inp.q
        o, _, _ = flash_mla_sparse_fwd(q, inp.kv, inp.indices, inp.sm_scale)  # SITE
        return o, describe(metadata)


def entry(inp):
    return DSABackend().forward(inp)[0]  # a warmup step, before any metadata
''', files=(("requirements.txt", "sglang-kernel==0.4.6\n"), ("adv_base_backend3.py", '''\
class AttentionBackend:
    def __init__(self):
        self.forward_metadata = None


def describe(metadata):
    return "warmup" if metadata is None else "serving"
''')))

# --- 3 name hygiene -----------------------------------------------------------------------------
add("module_global_width_read_in_helper", "3 names", '''
topk_length = 16  # the indexer's width


class Backend:
    def forward(self, inp):
        metadata = inp.metadata
        return self._sparse(inp.q, inp.kv, inp.indices, inp.sm_scale)

    def _sparse(self, q, kv, indices, scale):
        indices = indices[..., :topk_length]
        o, _, _ = flash_mla_sparse_fwd(q, kv, indices, scale)  # SITE
        return o


def entry(inp):
    return Backend().forward(inp)
''')
add("closure_width_read_in_helper", "3 names", '''
def entry(inp):
    topk_length = 16
    metadata = inp.metadata

    def sparse(q, kv, indices, scale):
        o, _, _ = flash_mla_sparse_fwd(q, kv, indices[..., :topk_length], scale)  # SITE
        return o

    return sparse(inp.q, inp.kv, inp.indices, inp.sm_scale)
''')
add("existing_int_param_passed_by_keyword", "3 names", '''
class Backend:
    index_topk = 16

    def forward(self, inp):
        metadata = inp.metadata
        return self._sparse(inp.q, inp.kv, inp.indices, inp.sm_scale, topk_length=self.index_topk)

    def _sparse(self, q, kv, indices, scale, topk_length: int = 2048):
        o, _, _ = flash_mla_sparse_fwd(q, kv, indices[..., :topk_length], scale)  # SITE
        return o


def entry(inp):
    return Backend().forward(inp)
''')
add("existing_int_param_passed_positionally", "3 names", '''
class Backend:
    index_topk = 16

    def forward(self, inp):
        metadata = inp.metadata
        return self._sparse(inp.q, inp.kv, inp.indices, inp.sm_scale, self.index_topk)

    def _sparse(self, q, kv, indices, scale, topk_length=None):
        width = topk_length or indices.shape[-1]
        o, _, _ = flash_mla_sparse_fwd(q, kv, indices[..., :width], scale)  # SITE
        return o


def entry(inp):
    return Backend().forward(inp)
''')
add("existing_kwonly_int_param_not_passed", "3 names", '''
def sparse(q, kv, indices, scale, *, topk_length=16):
    o, _, _ = flash_mla_sparse_fwd(q, kv, indices[..., :topk_length], scale)  # SITE
    return o


def forward(inp):
    metadata = inp.metadata
    return sparse(inp.q, inp.kv, inp.indices, inp.sm_scale)


def entry(inp):
    return forward(inp)
''')
add("global_read_before_inserted_assignment", "3 names", '''
topk_length = 16


def entry(inp):
    metadata = inp.metadata
    width = topk_length
    q = inp.q
    o, _, _ = flash_mla_sparse_fwd(q, inp.kv, inp.indices[..., :width], inp.sm_scale)  # SITE
    return o
''')
add("global_function_named_topk_length", "3 names", '''
def topk_length(indices):
    return indices.shape[-1]


def entry(inp):
    metadata = inp.metadata
    width = topk_length(inp.indices)
    q = inp.q
    o, _, _ = flash_mla_sparse_fwd(q, inp.kv, inp.indices[..., :width], inp.sm_scale)  # SITE
    return o
''')
add("imported_width_read_in_helper", "3 names", '''
from adv_names_cfg import topk_length


def sparse(q, kv, indices, scale):
    o, _, _ = flash_mla_sparse_fwd(q, kv, indices[..., :topk_length], scale)  # SITE
    return o


def forward(inp):
    metadata = inp.metadata
    return sparse(inp.q, inp.kv, inp.indices, inp.sm_scale)


def entry(inp):
    return forward(inp)
''', files=(("requirements.txt", "sglang-kernel==0.4.6\n"), ("adv_names_cfg.py", "topk_length = 16\n")))
add("global_statement_in_helper", "3 names", '''
topk_length = 16


def sparse(q, kv, indices, scale):
    global topk_length
    topk_length = indices.shape[-1]
    o, _, _ = flash_mla_sparse_fwd(q, kv, indices, scale)  # SITE
    return o


def forward(inp):
    metadata = inp.metadata
    return sparse(inp.q, inp.kv, inp.indices, inp.sm_scale)


def entry(inp):
    return forward(inp)
''')
add("self_attribute_topk_length", "3 names", '''
class Backend:
    topk_length = 16

    def forward(self, inp):
        metadata = inp.metadata
        q = inp.q
        o, _, _ = flash_mla_sparse_fwd(q, inp.kv, inp.indices[..., : self.topk_length], inp.sm_scale)  # SITE
        return o


def entry(inp):
    return Backend().forward(inp)
''')

add("global_read_after_call", "3 names", '''
topk_length = 16


def entry(inp):
    metadata = inp.metadata
    q = inp.q
    o, _, _ = flash_mla_sparse_fwd(q, inp.kv, inp.indices, inp.sm_scale)  # SITE
    return o, inp.indices[..., :topk_length]
''')
add("nested_reader_of_global_width", "3 names", '''
topk_length = 16


def entry(inp):
    metadata = inp.metadata

    def clip(indices):
        return indices[..., :topk_length]

    q = inp.q
    o, _, _ = flash_mla_sparse_fwd(q, inp.kv, clip(inp.indices), inp.sm_scale)  # SITE
    return o
''')

add("star_import_provides_width", "3 names", '''
def entry(inp):
    metadata = inp.metadata
    width = topk_length
    q = inp.q
    o, _, _ = flash_mla_sparse_fwd(q, inp.kv, inp.indices[..., :width], inp.sm_scale)  # SITE
    return o
''', imports="import torch\n" + IMPORT + "from adv_width_cfg import *  # noqa: F403\n",
    files=(("requirements.txt", "sglang-kernel==0.4.6\n"), ("adv_width_cfg.py", "topk_length = 16\n")))

# --- 4 callee identity --------------------------------------------------------------------------
_LEGACY_DEF = '''
def _legacy_sparse_fwd(q, kv, indices, sm_scale, d_v=512):
    """The pre-topk_length wrapper this fork keeps for its old path."""
    from sgl_kernel.flash_mla import legacy_fwd

    return legacy_fwd(q, kv, indices, sm_scale, d_v)
'''
_IN_CALL = '''
def entry(inp):
    metadata = inp.metadata
    q = inp.q
    o, _, _ = flash_mla_sparse_fwd(q, inp.kv, inp.indices, inp.sm_scale)  # SITE
    return o
'''
add("rebound_at_module_level", "4 callee", _LEGACY_DEF + "\n\nflash_mla_sparse_fwd = _legacy_sparse_fwd\n\n" + _IN_CALL)
add("rebound_under_env_flag", "4 callee", "import os\n" + _LEGACY_DEF + '''

if os.environ.get("ADV_LEGACY_MLA") == "1":
    flash_mla_sparse_fwd = _legacy_sparse_fwd

''' + _IN_CALL, env=(("ADV_LEGACY_MLA", "1"),))
add("rebound_locally", "4 callee", _LEGACY_DEF + '''

def entry(inp):
    metadata = inp.metadata
    flash_mla_sparse_fwd = _legacy_sparse_fwd
    q = inp.q
    o, _, _ = flash_mla_sparse_fwd(q, inp.kv, inp.indices, inp.sm_scale)  # SITE
    return o
''')
add("local_param_shadows_kernel", "4 callee", _LEGACY_DEF + '''

def attend(q, kv, indices, scale, metadata, flash_mla_sparse_fwd=_legacy_sparse_fwd):
    o, _, _ = flash_mla_sparse_fwd(q, kv, indices, scale)  # SITE
    return o


def entry(inp):
    return attend(inp.q, inp.kv, inp.indices, inp.sm_scale, inp.metadata)
''')
add("param_shadows_module_alias", "4 callee", '''
import types


def attend(fm, q, kv, indices, scale, metadata):
    o, _, _ = fm.flash_mla_sparse_fwd(q, kv, indices, scale)  # SITE
    return o


def entry(inp):
    from sgl_kernel.flash_mla import legacy_fwd

    return attend(types.SimpleNamespace(flash_mla_sparse_fwd=legacy_fwd), inp.q, inp.kv, inp.indices, inp.sm_scale, inp.metadata)
''', imports="import torch\nimport sgl_kernel.flash_mla as fm\n")
add("try_except_fallback_module", "4 callee", _IN_CALL, imports='''import torch

try:
    from sgl_kernel.flash_mla import flash_mla_sparse_fwd
except ImportError:
    from flash_mla import flash_mla_sparse_fwd
''', hide=("sgl_kernel", "sgl_kernel.flash_mla"))
add("try_except_fallback_def", "4 callee", _IN_CALL, imports='''import torch

try:
    from sgl_kernel.flash_mla import flash_mla_sparse_fwd
except ImportError:
    from flash_mla import flash_mla_sparse_fwd as _vendored

    def flash_mla_sparse_fwd(q, kv, indices, sm_scale, d_v=512):
        return _vendored(q, kv, indices, sm_scale, d_v)
''', hide=("sgl_kernel", "sgl_kernel.flash_mla"))
add("star_import_shadows_kernel", "4 callee", _IN_CALL,
    imports="import torch\n" + IMPORT + "from adv_star_compat import *  # noqa: F403\n",
    files=(("requirements.txt", "sglang-kernel==0.4.6\n"), ("adv_star_compat.py", textwrap.dedent(_LEGACY_DEF).lstrip()
           + "\n\nflash_mla_sparse_fwd = _legacy_sparse_fwd\n")))
add("star_import_of_kernel_module", "4 callee", _IN_CALL, imports="import torch\nfrom sgl_kernel.flash_mla import *  # noqa: F403\n")
add("nested_function_with_helper_name", "4 callee", _LEGACY_DEF + '''

def sparse(q, kv, indices, scale):
    o, _, _ = flash_mla_sparse_fwd(q, kv, indices, scale)  # SITE
    return o


def forward(inp):
    metadata = inp.metadata

    def sparse(q, kv, indices, scale):  # this path's own variant, fixed signature
        return _legacy_sparse_fwd(q, kv, indices, scale)[0]

    return sparse(inp.q, inp.kv, inp.indices, inp.sm_scale)


def entry(inp):
    return forward(inp), sparse(inp.q, inp.kv, inp.indices, inp.sm_scale)
''')
add("other_class_inherits_helper_name", "4 callee", '''
from adv_base_backend import BaseBackend


class SparseBackend:
    def _forward_flashmla_sparse(self, q, kv, indices, scale):
        o, _, _ = flash_mla_sparse_fwd(q, kv, indices, scale)  # SITE
        return o

    def forward(self, inp):
        return self._forward_flashmla_sparse(inp.q, inp.kv, inp.indices, inp.sm_scale)


class LegacyBackend(BaseBackend):
    def forward(self, inp):
        metadata = inp.metadata
        return self._forward_flashmla_sparse(inp.q, inp.kv, inp.indices, inp.sm_scale)


def entry(inp):
    return SparseBackend().forward(inp), LegacyBackend().forward(inp)
''', files=(("requirements.txt", "sglang-kernel==0.4.6\n"), ("adv_base_backend.py", '''\
from sgl_kernel.flash_mla import legacy_fwd


class BaseBackend:
    def _forward_flashmla_sparse(self, q, kv, indices, scale):
        return legacy_fwd(q, kv, indices, scale)[0]
''')))
add("other_class_same_method_in_module", "4 callee", _LEGACY_DEF + '''

class SparseBackend:
    def _forward_flashmla_sparse(self, q, kv, indices, scale):
        o, _, _ = flash_mla_sparse_fwd(q, kv, indices, scale)  # SITE
        return o


class LegacyBackend:
    def _forward_flashmla_sparse(self, q, kv, indices, scale):
        return _legacy_sparse_fwd(q, kv, indices, scale)[0]

    def forward(self, inp):
        metadata = inp.metadata
        return self._forward_flashmla_sparse(inp.q, inp.kv, inp.indices, inp.sm_scale)


def entry(inp):
    return LegacyBackend().forward(inp), SparseBackend()._forward_flashmla_sparse(inp.q, inp.kv, inp.indices, inp.sm_scale)
''')
add("fixed_signature_decorator", "4 callee", '''
def fixed(fn):
    def wrapper(q, kv, indices, scale):
        return fn(q, kv, indices, scale)
    return wrapper


@fixed
def sparse(q, kv, indices, scale):
    o, _, _ = flash_mla_sparse_fwd(q, kv, indices, scale)  # SITE
    return o


def forward(inp):
    metadata = inp.metadata
    return sparse(inp.q, inp.kv, inp.indices, inp.sm_scale)


def entry(inp):
    return forward(inp)
''')
add("helper_defined_in_two_branches", "4 callee", "import os\n" + _LEGACY_DEF + '''

if os.environ.get("ADV_FAST_SPARSE") == "1":
    def sparse(q, kv, indices, scale):
        o, _, _ = flash_mla_sparse_fwd(q, kv, indices, scale)  # SITE
        return o
else:
    def sparse(q, kv, indices, scale):
        return _legacy_sparse_fwd(q, kv, indices, scale)[0]


def forward(inp):
    metadata = inp.metadata
    return sparse(inp.q, inp.kv, inp.indices, inp.sm_scale)


def entry(inp):
    return forward(inp)
''', env=(("ADV_FAST_SPARSE", "0"),))
add("method_named_like_kernel", "4 callee", _LEGACY_DEF + '''

class Backend:
    def flash_mla_sparse_fwd(self, q, kv, indices, sm_scale):
        return _legacy_sparse_fwd(q, kv, indices, sm_scale)

    def forward(self, inp):
        metadata = inp.metadata
        q = inp.q
        o, _, _ = self.flash_mla_sparse_fwd(q, inp.kv, inp.indices, inp.sm_scale)  # SITE
        return o


def entry(inp):
    return Backend().forward(inp)
''')
add("module_alias_rebound_under_env_flag", "4 callee", '''
import os
import types

import sgl_kernel.flash_mla as fm

if os.environ.get("ADV_LEGACY_MLA") == "1":
    fm = types.SimpleNamespace(flash_mla_sparse_fwd=fm.legacy_fwd)


def entry(inp):
    metadata = inp.metadata
    q = inp.q
    o, _, _ = fm.flash_mla_sparse_fwd(q, inp.kv, inp.indices, inp.sm_scale)  # SITE
    return o
''', imports="import torch\n", env=(("ADV_LEGACY_MLA", "1"),))

add("project_wrapper_fixed_signature", "4 callee", '''
def entry(inp):
    metadata = inp.metadata
    q = inp.q
    o, _, _ = flash_mla_sparse_fwd(q, inp.kv, inp.indices, inp.sm_scale)  # SITE
    return o
''', imports="import torch\nfrom adv_ops import flash_mla_sparse_fwd\n", files=(
    ("requirements.txt", "sglang-kernel==0.4.6\n"),
    ("adv_ops.py", "from sgl_kernel.flash_mla import legacy_fwd\n\n\n"
                   "def flash_mla_sparse_fwd(q, kv, indices, sm_scale, d_v=512):\n"
                   "    return legacy_fwd(q, kv, indices, sm_scale, d_v)\n")))
add("attribute_module_is_legacy", "4 callee", '''
import types


class Backend:
    def __init__(self, kernels):
        self.fm = kernels

    def forward(self, inp):
        metadata = inp.metadata
        q = inp.q
        o, _, _ = self.fm.flash_mla_sparse_fwd(q, inp.kv, inp.indices, inp.sm_scale)  # SITE
        return o


def entry(inp):
    from sgl_kernel.flash_mla import legacy_fwd

    return Backend(types.SimpleNamespace(flash_mla_sparse_fwd=legacy_fwd)).forward(inp)
''')
add("subclass_override_without_param", "4 callee", '''
class Base:
    def _sparse(self, q, kv, indices, scale):
        o, _, _ = flash_mla_sparse_fwd(q, kv, indices, scale)  # SITE
        return o

    def forward(self, inp):
        metadata = inp.metadata
        return self._sparse(inp.q, inp.kv, inp.indices, inp.sm_scale)


class Child(Base):
    def _sparse(self, q, kv, indices, scale):
        return super()._sparse(q, kv, indices, scale)


def entry(inp):
    return Child().forward(inp), Base().forward(inp)
''')
add("staticmethod_helper", "4 callee", '''
class Backend:
    @staticmethod
    def _sparse(q, kv, indices, scale):
        o, _, _ = flash_mla_sparse_fwd(q, kv, indices, scale)  # SITE
        return o

    def forward(self, inp):
        metadata = inp.metadata
        return self._sparse(inp.q, inp.kv, inp.indices, inp.sm_scale)


def entry(inp):
    return Backend().forward(inp)
''')

add("helper_wrapped_by_assignment", "4 callee", '''
def fixed(fn):
    def wrapper(q, kv, indices, scale):
        return fn(q, kv, indices, scale)
    return wrapper


def sparse(q, kv, indices, scale):
    o, _, _ = flash_mla_sparse_fwd(q, kv, indices, scale)  # SITE
    return o


sparse = fixed(sparse)


def forward(inp):
    metadata = inp.metadata
    return sparse(inp.q, inp.kv, inp.indices, inp.sm_scale)


def entry(inp):
    return forward(inp)
''')
add("helper_method_replaced_on_class", "4 callee", _LEGACY_DEF + '''

class Backend:
    def _sparse(self, q, kv, indices, scale):
        o, _, _ = flash_mla_sparse_fwd(q, kv, indices, scale)  # SITE
        return o

    def forward(self, inp):
        metadata = inp.metadata
        return self._sparse(inp.q, inp.kv, inp.indices, inp.sm_scale)


def _legacy_method(self, q, kv, indices, scale):
    return _legacy_sparse_fwd(q, kv, indices, scale)[0]


Backend._sparse = _legacy_method  # this fork's old path


def entry(inp):
    return Backend().forward(inp)
''')
add("helper_shadowed_by_instance_attribute", "4 callee", _LEGACY_DEF + '''

class Backend:
    def __init__(self, legacy):
        if legacy:
            self._sparse = lambda q, kv, indices, scale: _legacy_sparse_fwd(q, kv, indices, scale)[0]

    def _sparse(self, q, kv, indices, scale):
        o, _, _ = flash_mla_sparse_fwd(q, kv, indices, scale)  # SITE
        return o

    def forward(self, inp):
        metadata = inp.metadata
        return self._sparse(inp.q, inp.kv, inp.indices, inp.sm_scale)


def entry(inp):
    return Backend(legacy=True).forward(inp)
''')
add("method_defined_in_two_branches", "4 callee", "import os\n" + _LEGACY_DEF + '''

class Backend:
    if os.environ.get("ADV_FAST_SPARSE") == "1":
        def _sparse(self, q, kv, indices, scale):
            o, _, _ = flash_mla_sparse_fwd(q, kv, indices, scale)  # SITE
            return o
    else:
        def _sparse(self, q, kv, indices, scale):
            return _legacy_sparse_fwd(q, kv, indices, scale)[0]

    def forward(self, inp):
        metadata = inp.metadata
        return self._sparse(inp.q, inp.kv, inp.indices, inp.sm_scale)


def entry(inp):
    return Backend().forward(inp)
''', env=(("ADV_FAST_SPARSE", "0"),))
add("helper_no_grad_decorator", "4 callee", '''
class Backend:
    def forward(self, inp):
        metadata = inp.metadata
        return self._sparse(inp.q, inp.kv, inp.indices, inp.sm_scale)

    @torch.no_grad()
    def _sparse(self, q, kv, indices, scale):
        o, _, _ = flash_mla_sparse_fwd(q, kv, indices, scale)  # SITE
        return o


def entry(inp):
    return Backend().forward(inp)
''')

add("module_alias_rebound_locally", "4 callee", '''
import types


class Backend:
    def __init__(self):
        from sgl_kernel.flash_mla import legacy_fwd

        self.kernels = types.SimpleNamespace(flash_mla_sparse_fwd=legacy_fwd)

    def forward(self, inp):
        metadata = inp.metadata
        fm = self.kernels  # this fork's kernel table
        q = inp.q
        o, _, _ = fm.flash_mla_sparse_fwd(q, inp.kv, inp.indices, inp.sm_scale)  # SITE
        return o


def entry(inp):
    return Backend().forward(inp)
''', imports="import torch\nimport sgl_kernel.flash_mla as fm\n")
add("local_try_except_fallback", "4 callee", '''
def entry(inp):
    try:
        from sgl_kernel.flash_mla import flash_mla_sparse_fwd
    except ImportError:
        from flash_mla import flash_mla_sparse_fwd
    metadata = inp.metadata
    q = inp.q
    o, _, _ = flash_mla_sparse_fwd(q, inp.kv, inp.indices, inp.sm_scale)  # SITE
    return o
''', imports="import torch\n", hide=("sgl_kernel", "sgl_kernel.flash_mla"))
add("type_checking_import_else_compat", "4 callee", _IN_CALL, imports='''from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from sgl_kernel.flash_mla import flash_mla_sparse_fwd
else:
    from flash_mla import flash_mla_sparse_fwd  # the vendored build this fork ships
''')

add("kernel_module_attribute_monkeypatched", "4 callee", _LEGACY_DEF + '''

fm.flash_mla_sparse_fwd = _legacy_sparse_fwd  # pin this fork to the old kernel path


def entry(inp):
    metadata = inp.metadata
    q = inp.q
    o, _, _ = fm.flash_mla_sparse_fwd(q, inp.kv, inp.indices, inp.sm_scale)  # SITE
    return o
''', imports="import torch\nimport sgl_kernel.flash_mla as fm\n")

add("caller_local_rebinds_helper_name", "4 callee", _LEGACY_DEF + '''

def sparse(q, kv, indices, scale):
    o, _, _ = flash_mla_sparse_fwd(q, kv, indices, scale)  # SITE
    return o


def forward(inp):
    metadata = inp.metadata
    sparse = lambda q, kv, indices, scale: _legacy_sparse_fwd(q, kv, indices, scale)[0]  # the eager path
    return sparse(inp.q, inp.kv, inp.indices, inp.sm_scale)


def entry(inp):
    return forward(inp), sparse(inp.q, inp.kv, inp.indices, inp.sm_scale)
''')

add("subclass_in_other_module_overrides_helper", "4 callee", '''
class Backend:
    def _sparse(self, q, kv, indices, scale):
        o, _, _ = flash_mla_sparse_fwd(q, kv, indices, scale)  # SITE
        return o

    def forward(self, inp):
        metadata = inp.metadata
        return self._sparse(inp.q, inp.kv, inp.indices, inp.sm_scale)


def entry(inp):
    from adv_fork_backend import ForkBackend

    return ForkBackend().forward(inp)
''', files=(("requirements.txt", "sglang-kernel==0.4.6\n"), ("adv_fork_backend.py", '''\
from backend import Backend
from sgl_kernel.flash_mla import legacy_fwd


class ForkBackend(Backend):
    """This fork's override, in its own file: the old signature."""

    def _sparse(self, q, kv, indices, scale):
        return legacy_fwd(q, kv, indices, scale)[0]
''')))

# --- 5 row alignment: q's rows reordered or selected while the metadata covers other rows -------
# (name, how q_sel/idx_sel are made from q/idx: the counts match, the rows do not)
REORDERINGS = [
    ("permutation_index", "order = torch.tensor([3, 0, 6, 1, 7, 2, 5, 4])\nq_sel, idx_sel = q[order], idx[order]"),
    ("flip", "q_sel, idx_sel = q.flip(0), idx.flip(0)"),
    ("roll", "q_sel, idx_sel = torch.roll(q, 1, 0), torch.roll(idx, 1, 0)"),
    ("mask_partition", "mask = torch.arange(q.shape[0]) % 2 == 0\n"
                       "q_sel, idx_sel = torch.cat([q[mask], q[~mask]]), torch.cat([idx[mask], idx[~mask]])"),
    ("index_select", "order = torch.arange(q.shape[0] - 1, -1, -1)\n"
                     "q_sel, idx_sel = q.index_select(0, order), idx.index_select(0, order)"),
    ("gather_rows", "order = torch.arange(q.shape[0]).roll(3)\n"
                    "q_sel = torch.gather(q, 0, order.view(-1, 1, 1).expand_as(q))\n"
                    "idx_sel = torch.gather(idx, 0, order.view(-1, 1, 1).expand_as(idx))"),
    ("cat_rows", "q_sel, idx_sel = torch.cat([q[5:], q[:5]], dim=0), torch.cat([idx[5:], idx[:5]], dim=0)"),
    ("split_swap", "qa, qb = q.split([3, 5])\nia, ib = idx.split([3, 5])\n"
                   "q_sel, idx_sel = torch.cat([qb, qa]), torch.cat([ib, ia])"),
    ("chunk_reversed", "q_sel = torch.cat(list(reversed(q.chunk(2))))\nidx_sel = torch.cat(list(reversed(idx.chunk(2))))"),
    ("interleave_step_slices", "q_sel = torch.cat([q[::2], q[1::2]])\nidx_sel = torch.cat([idx[::2], idx[1::2]])"),
    ("sorted_by_length", "order = metadata.dsa_cache_seqlens_int32.argsort(stable=True)\nq_sel, idx_sel = q[order], idx[order]"),
    ("stack_in_order", "order = [7, 6, 5, 4, 3, 2, 1, 0]\nq_sel = torch.stack([q[i] for i in order])\nidx_sel = torch.stack([idx[i] for i in order])"),
    ("unflatten_flip_flatten", "q_sel = q.unflatten(0, (2, 4)).flip(0).flatten(0, 1)\nidx_sel = idx.unflatten(0, (2, 4)).flip(0).flatten(0, 1)"),
    ("view_transpose_reshape", "q_sel = q.view(2, 4, q.shape[1], q.shape[2]).transpose(0, 1).reshape(-1, q.shape[1], q.shape[2])\n"
                               "idx_sel = idx.view(2, 4, idx.shape[1], idx.shape[2]).transpose(0, 1).reshape(-1, idx.shape[1], idx.shape[2])"),
    ("new_zeros_scatter_rows", "order = torch.arange(q.shape[0]).flip(0)\nq_sel = q.new_zeros(q.shape)\nq_sel[order] = q\n"
                               "idx_sel = idx.new_zeros(idx.shape)\nidx_sel[order] = idx"),
    ("new_zeros_assign_flipped", "num_tokens, num_heads, head_dim = q.shape\nq_sel = q.new_zeros((num_tokens, 4, head_dim))\n"
                                 "q_sel[:, :num_heads] = q.flip(0)\nidx_sel = idx.flip(0)"),
    ("cat_last_dim_of_flipped_parts", "q_nope, q_rope = q.split([12, 4], dim=-1)\n"
                                      "q_sel = torch.cat([q_nope.flip(0), q_rope.flip(0)], dim=-1)\nidx_sel = idx.flip(0)"),
    ("where_mixes_rows", "swap = (torch.arange(q.shape[0]) % 2 == 0)\nq_sel = torch.where(swap[:, None, None], q, q.roll(1, 0))\n"
                         "idx_sel = torch.where(swap[:, None, None], idx, idx.roll(1, 0))"),
    ("take_along_dim", "order = torch.arange(q.shape[0]).flip(0)\n"
                       "q_sel = torch.take_along_dim(q, order[:, None, None], dim=0)\n"
                       "idx_sel = torch.take_along_dim(idx, order[:, None, None], dim=0)"),
    ("tuple_subscript_permutation", "order = torch.arange(q.shape[0]).roll(2)\nq_sel, idx_sel = q[order, :, :], idx[order, ...]"),
    ("index_select_function_form", "order = torch.arange(q.shape[0]).flip(0)\n"
                                   "q_sel, idx_sel = torch.index_select(q, 0, order), torch.index_select(idx, 0, order)"),
    ("unbind_reversed_stack", "q_sel = torch.stack(list(reversed(q.unbind(0))))\nidx_sel = torch.stack(list(reversed(idx.unbind(0))))"),
    ("flip_function_form", "q_sel, idx_sel = torch.flip(q, dims=[0]), torch.flip(idx, dims=(0,))"),
    ("roll_keyword_form", "q_sel, idx_sel = q.roll(shifts=3, dims=0), idx.roll(shifts=3, dims=0)"),
    ("cat_rows_positional_dim", "q_sel, idx_sel = torch.cat([q[5:], q[:5]], 0), torch.cat([idx[5:], idx[:5]], 0)"),
    ("cat_rows_negative_dim", "q_sel, idx_sel = torch.cat([q[5:], q[:5]], dim=-3), torch.cat([idx[5:], idx[:5]], dim=-3)"),
    ("flip_negative_dim", "q_sel, idx_sel = q.flip(-3), idx.flip(-3)"),
    ("unsqueeze_then_flip", "q_sel = q.unsqueeze(0).flip(1).squeeze(0)\nidx_sel = idx.unsqueeze(0).flip(1).squeeze(0)"),
    ("out_keyword", "order = torch.arange(q.shape[0]).flip(0)\nq_sel, idx_sel = torch.empty_like(q), torch.empty_like(idx)\n"
                    "torch.index_select(q, 0, order, out=q_sel)\ntorch.index_select(idx, 0, order, out=idx_sel)"),
    ("index_copy_in_place", "order = torch.arange(q.shape[0]).flip(0)\nq_sel, idx_sel = torch.zeros_like(q), torch.zeros_like(idx)\n"
                            "q_sel.index_copy_(0, order, q)\nidx_sel.index_copy_(0, order, idx)"),
    ("flipud", "q_sel, idx_sel = torch.flipud(q), torch.flipud(idx)"),
    ("view_split_then_flip_dim1", "q_sel = q.view(2, 4, q.shape[1], q.shape[2]).flip(1).reshape(q.shape)\n"
                                  "idx_sel = torch.flip(idx.view(2, 4, idx.shape[1], idx.shape[2]), [1]).reshape(idx.shape)"),
    ("permutation_matrix_einsum", "perm = torch.eye(q.shape[0]).roll(1, 0)\n"
                                  "q_sel = torch.einsum(\"ij,jhd->ihd\", perm, q)\n"
                                  "idx_sel = torch.einsum(\"ij,jht->iht\", perm, idx.float()).to(torch.int32)"),
    ("in_place_copy_on_q", "q_sel, idx_sel = q.clone(), idx.clone()\nq_sel.copy_(q_sel.flip(0).clone())\nidx_sel.copy_(idx_sel.flip(0).clone())"),
    ("in_place_permutation", "q_sel, idx_sel = q.clone(), idx.clone()\nq_sel[:] = q.flip(0)\nidx_sel.copy_(idx.flip(0))"),
]


def reorder_in_call(make: str) -> str:
    return f'''
def entry(inp):
    metadata = inp.metadata
    q, idx = inp.q, inp.indices
{_ind(make, 4)}
    out, _, _ = flash_mla_sparse_fwd(q_sel, inp.kv, idx_sel, inp.sm_scale)  # SITE
    return out
'''


def reorder_via_helper(make: str) -> str:
    return f'''
class Backend:
    def forward(self, inp):
        metadata = inp.metadata
        q, idx = inp.q, inp.indices
{_ind(make, 8)}
        return self._forward_flashmla_sparse(q_all=q_sel, kv=inp.kv, indices=idx_sel, scale=inp.sm_scale)

    def _forward_flashmla_sparse(self, q_all, kv, indices, scale):
        out, _, _ = flash_mla_sparse_fwd(q_all, kv, indices, scale)  # SITE
        return out


def entry(inp):
    return Backend().forward(inp)
'''


for _name, _make in REORDERINGS:
    add(f"rows_{_name}_in_call", "5 rows", reorder_in_call(_make))
for _name, _make in REORDERINGS[::2]:
    add(f"rows_{_name}_via_helper", "5 rows", reorder_via_helper(_make))
add("rows_reordered_inline_in_caller_argument", "5 rows", '''
class Backend:
    def forward(self, inp):
        metadata = inp.metadata
        order = torch.arange(inp.q.shape[0] - 1, -1, -1)
        return self._sparse(inp.q[order], inp.kv, inp.indices[order], inp.sm_scale)

    def _sparse(self, q, kv, indices, scale):
        out, _, _ = flash_mla_sparse_fwd(q, kv, indices, scale)  # SITE
        return out


def entry(inp):
    return Backend().forward(inp)
''')
add("rows_other_micro_batch", "5 rows", '''
def entry(inp):
    metadata = inp.metadata_for(slice(0, 4))  # micro-batch 0 of a two-batch overlap
    q_b, idx_b = inp.q[4:], inp.indices[4:]  # ... but this is micro-batch 1
    out, _, _ = flash_mla_sparse_fwd(q_b, inp.kv, idx_b, inp.sm_scale)  # SITE
    return out
''')
add("rows_other_micro_batch_via_helper", "5 rows", '''
def sparse(q, kv, indices, scale):
    out, _, _ = flash_mla_sparse_fwd(q, kv, indices, scale)  # SITE
    return out


def forward_micro_batches(inp):
    metadata = inp.metadata_for(slice(0, 4))
    first = sparse(inp.q[:4], inp.kv, inp.indices[:4], inp.sm_scale)
    second = sparse(inp.q[4:], inp.kv, inp.indices[4:], inp.sm_scale)
    return first, second


def entry(inp):
    return forward_micro_batches(inp)
''')
add("rows_q_rebound_to_permutation_same_name", "5 rows", '''
def entry(inp):
    metadata = inp.metadata
    q, idx = inp.q, inp.indices
    q, idx = q.flip(0), idx.flip(0)
    out, _, _ = flash_mla_sparse_fwd(q, inp.kv, idx, inp.sm_scale)  # SITE
    return out
''')

add("rows_q_permuted_in_place_same_name", "5 rows", '''
def entry(inp):
    metadata = inp.metadata
    q, idx = inp.q.clone(), inp.indices.clone()
    q[:] = q.flip(0).clone()
    idx[:] = idx.flip(0).clone()
    out, _, _ = flash_mla_sparse_fwd(q, inp.kv, idx, inp.sm_scale)  # SITE
    return out
''')
add("rows_helper_param_permuted_in_place", "5 rows", '''
class Backend:
    def forward(self, inp):
        metadata = inp.metadata
        return self._sparse(inp.q.clone(), inp.kv, inp.indices.clone(), inp.sm_scale)

    def _sparse(self, q, kv, indices, scale):
        q.copy_(q.flip(0).clone())
        indices.copy_(indices.flip(0).clone())
        out, _, _ = flash_mla_sparse_fwd(q, kv, indices, scale)  # SITE
        return out


def entry(inp):
    return Backend().forward(inp)
''')
add("indices_truncated_to_narrower_topk", "5 rows", '''
class Backend:
    effective_topk = 8  # this fork attends over fewer tokens than the indexer keeps

    def forward(self, inp):
        metadata = inp.metadata
        return self._sparse(inp.q, inp.kv, inp.indices, inp.sm_scale)

    def _sparse(self, q, kv, indices, scale):
        indices = indices[..., : self.effective_topk]
        out, _, _ = flash_mla_sparse_fwd(q, kv, indices, scale)  # SITE
        return out


def entry(inp):
    return Backend().forward(inp)
''')
add("indices_masked_after_topk", "5 rows", '''
def entry(inp):
    metadata = inp.metadata
    q = inp.q
    evicted = inp.indices % 3 == 0  # tokens evicted from the cache since the indexer ran
    idx = inp.indices.masked_fill(evicted, -1)
    out, _, _ = flash_mla_sparse_fwd(q, inp.kv, idx, inp.sm_scale)  # SITE
    return out
''')

add("rows_opaque_module_function", "5 rows", '''
def reorder(x):
    """Puts decode rows first (this fork's scheduler wants them there)."""
    return x.flip(0)


def entry(inp):
    metadata = inp.metadata
    q_sel, idx_sel = reorder(inp.q), reorder(inp.indices)
    out, _, _ = flash_mla_sparse_fwd(q_sel, inp.kv, idx_sel, inp.sm_scale)  # SITE
    return out
''')
add("rows_opaque_method", "5 rows", '''
class Backend:
    def _reorder(self, x):
        return x.roll(2, 0)

    def forward(self, inp):
        metadata = inp.metadata
        q = self._reorder(inp.q)
        idx = self._reorder(inp.indices)
        out, _, _ = flash_mla_sparse_fwd(q, inp.kv, idx, inp.sm_scale)  # SITE
        return out


def entry(inp):
    return Backend().forward(inp)
''')

add("rows_external_function_reorder", "5 rows", '''
from adv_scheduler import decode_rows_first


def entry(inp):
    metadata = inp.metadata
    q_sel, idx_sel = decode_rows_first(inp.q), decode_rows_first(inp.indices)
    out, _, _ = flash_mla_sparse_fwd(q_sel, inp.kv, idx_sel, inp.sm_scale)  # SITE
    return out
''', files=(("requirements.txt", "sglang-kernel==0.4.6\n"), ("adv_scheduler.py", '''\
def decode_rows_first(x):
    """This fork's scheduler keeps decode rows first (here: reversed)."""
    return x.flip(0)
''')))
add("indices_where_masks_entries", "5 rows", '''
def entry(inp):
    metadata = inp.metadata
    q = inp.q
    evicted = inp.indices % 3 == 0  # tokens evicted from the cache since the indexer ran
    idx = torch.where(evicted, torch.full_like(inp.indices, -1), inp.indices)
    out, _, _ = flash_mla_sparse_fwd(q, inp.kv, idx, inp.sm_scale)  # SITE
    return out
''')
add("indices_masked_by_self_helper", "5 rows", '''
class Backend:
    def _drop_evicted(self, indices):
        return indices.masked_fill(indices % 3 == 0, -1)

    def forward(self, inp):
        metadata = inp.metadata
        q = inp.q
        idx = self._drop_evicted(inp.indices)
        out, _, _ = flash_mla_sparse_fwd(q, inp.kv, idx, inp.sm_scale)  # SITE
        return out


def entry(inp):
    return Backend().forward(inp)
''')

# --- 6 pins -------------------------------------------------------------------------------------
add("pins_markers_give_old_kernel_elsewhere", "6 pins", _IN_CALL, legacy_kernel=True, files=((
    "requirements.txt",
    'sglang-kernel==0.4.6; platform_machine == "x86_64"\n'
    'sglang-kernel==0.4.2.post2; platform_machine != "x86_64"\n'),))
add("pins_pyproject_markers", "6 pins", _IN_CALL, legacy_kernel=True, files=((
    "pyproject.toml",
    '[project]\nname = "fork"\nversion = "0"\ndependencies = [\n'
    '    "sglang-kernel==0.4.6; sys_platform == \'linux\'",\n'
    '    "sglang-kernel==0.4.2.post2; sys_platform != \'linux\'",\n]\n'),))
add("pins_commented_out_new_pin", "6 pins", _IN_CALL, legacy_kernel=True, files=((
    "requirements.txt", "# sglang-kernel==0.4.6  (after the CUDA 12.8 upgrade)\nsglang-kernel==0.4.2.post2\n"),))
add("pins_include_r_old", "6 pins", _IN_CALL, legacy_kernel=True, files=(
    ("requirements.txt", "-r reqs/kernel.txt\ntorch>=2.4  # sglang-kernel==0.4.6 needs torch 2.8\n"),
    ("reqs/kernel.txt", "sglang-kernel==0.4.2.post2\n")))
add("pins_constraint_file_old", "6 pins", _IN_CALL, legacy_kernel=True, files=(
    ("requirements.txt", "sglang-kernel>=0.4.0\n-c constraints.txt\n"),
    ("constraints.txt", "sglang-kernel==0.4.2.post2\n")))
add("pins_compatible_release_old", "6 pins", _IN_CALL, legacy_kernel=True, files=((
    "requirements.txt", "sglang-kernel~=0.4.1\n"),))
add("pins_upper_bound_old", "6 pins", _IN_CALL, legacy_kernel=True, files=((
    "requirements.txt", "sglang-kernel>=0.4.0,<0.4.3\n"),))
add("pins_old_dist_with_false_marker_new", "6 pins", _IN_CALL, legacy_kernel=True, files=((
    "requirements.txt", 'sgl-kernel==0.3.21\nsglang-kernel==0.4.6; python_version < "3.0"\n'),))
add("pins_old_pin_exact_legacy_kernel", "6 pins", _IN_CALL, legacy_kernel=True, files=REQ_OLD)
add("pins_other_kernel_module_unpinned", "6 pins", _IN_CALL, legacy_kernel=True,
    imports="import torch\nfrom flash_mla import flash_mla_sparse_fwd\n")
add("pins_setup_cfg_markers", "6 pins", _IN_CALL, legacy_kernel=True, files=((
    "setup.cfg", "[options]\ninstall_requires =\n    sglang-kernel==0.4.6; platform_machine == 'x86_64'\n"
                 "    sglang-kernel==0.4.2.post2; platform_machine == 'aarch64'\n"),))
add("pins_two_requirement_files_disagree", "6 pins", _IN_CALL, legacy_kernel=True, files=(
    ("requirements-gpu.txt", "sglang-kernel==0.4.6\n"), ("requirements.txt", "sglang-kernel==0.4.2.post2\n")))
add("pins_both_kernel_distributions", "6 pins", _IN_CALL, legacy_kernel=True, files=((
    "requirements.txt", "sglang-kernel==0.4.6\nsgl-kernel==0.3.21  # the old wheel also ships sgl_kernel\n"),))
add("pins_direct_url_old", "6 pins", _IN_CALL, legacy_kernel=True, files=((
    "requirements.txt", "sglang-kernel @ https://example.invalid/sglang_kernel-0.4.2.post2-cp310-abi3-manylinux2014_x86_64.whl\n"
                        "# sglang-kernel==0.4.6 is what upstream uses\n"),))
add("pins_hash_continuation_old", "6 pins", _IN_CALL, legacy_kernel=True, files=((
    "requirements.txt", "torch==2.8.0 \\\n    --hash=sha256:00\nsglang-kernel==0.4.2.post2 \\\n    --hash=sha256:0406\n"),))
add("pins_uppercase_name_old", "6 pins", _IN_CALL, legacy_kernel=True, files=((
    "requirements.txt", "SGLang_Kernel==0.4.2.post2\n"),))
add("pins_extras_and_marker_new", "6 pins", _IN_CALL, files=((
    "requirements.txt", 'sglang-kernel[cu128]==0.4.6 ; python_version >= "3.9"\n'),))
add("pins_minimum_new", "control", _IN_CALL, expect="fixable", files=((
    "requirements.txt", "sglang-kernel>=0.4.3\n"),))
add("pins_compatible_release_new", "6 pins", _IN_CALL, files=((
    "requirements.txt", "sglang-kernel ~= 0.4.3  # fused MoE fixes\n"),))

# --- 7 annotations ------------------------------------------------------------------------------
_ANNOTATED_HELPER = '''
class Backend:
    def forward(self, inp):
        metadata = inp.metadata
        return self._forward_flashmla_sparse(inp.q, inp.kv, inp.indices, inp.sm_scale)

    def _forward_flashmla_sparse(self, q, kv, indices, sm_scale: float):
        out, _, _ = flash_mla_sparse_fwd(q, kv, indices, sm_scale)  # SITE
        return out


def entry(inp):
    return Backend().forward(inp)
'''
add("annotations_torch_only_type_checking", "7 annotations", _ANNOTATED_HELPER, imports='''from typing import TYPE_CHECKING, Optional

from sgl_kernel.flash_mla import flash_mla_sparse_fwd

if TYPE_CHECKING:
    import torch
''')
add("annotations_optional_only_type_checking", "7 annotations", _ANNOTATED_HELPER, imports='''from typing import TYPE_CHECKING

import torch
from sgl_kernel.flash_mla import flash_mla_sparse_fwd

if TYPE_CHECKING:
    from typing import Optional
''')
add("annotations_typing_module_type_checking", "7 annotations", _ANNOTATED_HELPER, imports='''import typing

from sgl_kernel.flash_mla import flash_mla_sparse_fwd

if typing.TYPE_CHECKING:
    import torch
''')
add("annotations_nested_helper_type_checking", "7 annotations", '''
def forward(inp):
    metadata = inp.metadata

    def sparse(q, kv, indices, scale: float):
        out, _, _ = flash_mla_sparse_fwd(q, kv, indices, scale)  # SITE
        return out

    return sparse(inp.q, inp.kv, inp.indices, inp.sm_scale)


def entry(inp):
    return forward(inp)
''', imports='''from typing import TYPE_CHECKING, Optional

from sgl_kernel.flash_mla import flash_mla_sparse_fwd

if TYPE_CHECKING:
    import torch
''')
add("annotations_only_torch_submodule_alias", "7 annotations", _ANNOTATED_HELPER, imports='''from typing import Optional

import torch.nn.functional as F
from sgl_kernel.flash_mla import flash_mla_sparse_fwd
''')
add("annotations_tensor_imported_by_name", "7 annotations", _ANNOTATED_HELPER, imports='''from torch import Tensor

from sgl_kernel.flash_mla import flash_mla_sparse_fwd
''')
add("annotations_optional_shadowed_in_module", "7 annotations", _ANNOTATED_HELPER, imports='''import torch
from sgl_kernel.flash_mla import flash_mla_sparse_fwd

Optional = None  # this module's own sentinel, not typing.Optional
''')
add("annotations_torch_imported_in_function", "control", _ANNOTATED_HELPER.replace(
    "        out, _, _", "        import torch\n\n        out, _, _"), imports=IMPORT, expect="fixable")
add("annotations_torch_alias", "control", _ANNOTATED_HELPER, imports="from typing import Optional\n\nimport torch as th\n" + IMPORT,
    expect="fixable")
add("annotations_future_with_type_checking", "control", _ANNOTATED_HELPER, imports='''from __future__ import annotations

from typing import TYPE_CHECKING

from sgl_kernel.flash_mla import flash_mla_sparse_fwd

if TYPE_CHECKING:
    import torch
''', expect="fixable")
add("annotations_typing_module_alias", "control", _ANNOTATED_HELPER, imports="import typing as t\n\nimport torch\n" + IMPORT,
    expect="fixable")

# --- 8 discovery: the kernel used as a value must be reported (manual, with the reason) ---------
add("discovery_functools_partial", "8 discovery", '''
import functools


def entry(inp):
    metadata = inp.metadata
    attend = functools.partial(flash_mla_sparse_fwd, sm_scale=inp.sm_scale)  # a local partial: its call is the kernel's
    return attend(inp.q, inp.kv, inp.indices)[0]  # SITE
''', expect="fixable")
add("discovery_partial_module_attr", "8 discovery", '''
from functools import partial


def entry(inp):
    metadata = inp.metadata
    attend = partial(fm.flash_mla_sparse_fwd, sm_scale=inp.sm_scale)  # a local partial: its call is the kernel's
    return attend(inp.q, inp.kv, inp.indices)[0]  # SITE
''', imports="import torch\nimport sgl_kernel.flash_mla as fm\n", expect="fixable")
add("discovery_getattr_module", "8 discovery", '''
def entry(inp):
    metadata = inp.metadata
    kernel = getattr(fm, "flash_mla_sparse_fwd")  # SITE
    return kernel(inp.q, inp.kv, inp.indices, inp.sm_scale)[0]
''', imports="import torch\nimport sgl_kernel.flash_mla as fm\n", expect="reported")
add("discovery_stored_in_attribute", "8 discovery", '''
class Backend:
    def __init__(self):
        self.kernel = flash_mla_sparse_fwd  # held in self: its call is the kernel's (self-attribute)

    def forward(self, inp):
        metadata = inp.metadata
        return self.kernel(inp.q, inp.kv, inp.indices, inp.sm_scale)[0]  # SITE


def entry(inp):
    return Backend().forward(inp)
''', expect="fixable")
add("discovery_passed_as_value", "8 discovery", '''
def run_attention(kernel, q, kv, indices, scale):
    return kernel(q, kv, indices, scale)[0]


def entry(inp):
    metadata = inp.metadata
    return run_attention(flash_mla_sparse_fwd, inp.q, inp.kv, inp.indices, inp.sm_scale)  # SITE
''', expect="reported")
add("discovery_conditional_choice", "8 discovery", _LEGACY_DEF + '''

def entry(inp):
    metadata = inp.metadata
    kernel = flash_mla_sparse_fwd if inp.flags.get("fast", True) else _legacy_sparse_fwd  # SITE
    return kernel(inp.q, inp.kv, inp.indices, inp.sm_scale)[0]
''', expect="reported")
add("discovery_dispatch_table", "8 discovery", '''
KERNELS = {"sparse": flash_mla_sparse_fwd}  # SITE


def entry(inp):
    metadata = inp.metadata
    return KERNELS["sparse"](inp.q, inp.kv, inp.indices, inp.sm_scale)[0]
''', expect="reported")
add("discovery_module_level_alias", "8 discovery", '''
sparse_attn = flash_mla_sparse_fwd  # SITE


def entry(inp):
    metadata = inp.metadata
    q = inp.q
    return sparse_attn(q, inp.kv, inp.indices, inp.sm_scale)[0]
''', expect="reported")
add("discovery_import_module_call", "8 discovery", '''
import importlib


def entry(inp):
    metadata = inp.metadata
    q = inp.q
    return importlib.import_module("sgl_kernel.flash_mla").flash_mla_sparse_fwd(q, inp.kv, inp.indices, inp.sm_scale)[0]  # SITE
''', expect="reported")
add("discovery_getattr_package", "8 discovery", '''
def entry(inp):
    metadata = inp.metadata
    q = inp.q
    return getattr(sgl_kernel, "flash_mla_sparse_fwd")(q, inp.kv, inp.indices, inp.sm_scale)[0]  # SITE
''', imports="import torch\nimport sgl_kernel\n", expect="reported")

add("discovery_torch_compile_wrapped", "8 discovery", '''
compiled_sparse = torch.compiler.disable(flash_mla_sparse_fwd)  # SITE


def entry(inp):
    metadata = inp.metadata
    q = inp.q
    return compiled_sparse(q, inp.kv, inp.indices, inp.sm_scale)[0]
''', expect="reported")

add("discovery_local_alias", "8 discovery", '''
def entry(inp):
    metadata = inp.metadata
    kernel = flash_mla_sparse_fwd  # a local alias: the call through it is the kernel's, fixed (issue 39)
    q = inp.q
    return kernel(q, inp.kv, inp.indices, inp.sm_scale)[0]  # SITE
''', expect="fixable")
add("discovery_default_argument", "8 discovery", '''
def attend(q, kv, indices, scale, kernel=flash_mla_sparse_fwd):  # SITE
    return kernel(q, kv, indices, scale)[0]


def entry(inp):
    metadata = inp.metadata
    return attend(inp.q, inp.kv, inp.indices, inp.sm_scale)
''', expect="reported")
add("discovery_returned_from_factory", "8 discovery", '''
def get_kernel():
    return flash_mla_sparse_fwd  # SITE


def entry(inp):
    metadata = inp.metadata
    q = inp.q
    return get_kernel()(q, inp.kv, inp.indices, inp.sm_scale)[0]
''', expect="reported")

# -- issue 34 item 2: a write that cannot run before the call is off its path (FluentLLM's dsa_backend.py: an
# `elif` after the branch that returns the helper's call); one that can, in a loop or a branch that falls
# through to the call, is still refused: run, the reversal puts the valid entries last, and lengths cut them.
_OFF_PATH = '''
class Backend:
    def __init__(self, metadata):
        self.forward_metadata = metadata

    def forward(self, q, kv, indices, scale, impls):
        metadata = self.forward_metadata
{body}

    def _sparse(self, q_all, kv_cache, indices, sm_scale):
        out, _, _ = flash_mla_sparse_fwd(q_all, kv_cache, indices, sm_scale)  # SITE
        return out

    def _decode(self, q_all, kv_cache, indices):
        kv_cache.mul_(1.0)  # writes a parameter of its own: not a def that writes none
        return q_all + indices.unsqueeze(1).sum()


def entry(inp):
    return Backend(inp.metadata).forward(inp.q, inp.kv, inp.indices, inp.sm_scale, {impls})
'''
_REVERSE = "indices.copy_(indices.flip(-1))"
for _name, _hazard, _impls, _body in [
    ("control_off_path_elif_after_returned_call", "control", '["prefill"]',
     "if impls[0] == 'prefill':\n    return self._sparse(q, kv, indices, scale)\n"
     "elif impls[0] == 'decode':\n    o = self._decode(q, kv, indices)\n    return o\nraise ValueError(impls)"),
    ("indices_reversed_in_elif_of_a_loop", "5 rows", '["reverse", "prefill"]',
     f"out = None\nfor impl in impls:\n    if impl == 'prefill':\n        out = self._sparse(q, kv, indices, scale)\n"
     f"    elif impl == 'reverse':\n        {_REVERSE}\nreturn out"),
    ("indices_reversed_in_branch_falling_through", "5 rows", '["reverse"]',
     f"if impls[0] == 'reverse':\n    {_REVERSE}\nreturn self._sparse(q, kv, indices, scale)"),
    ("indices_reversed_in_the_calls_branch", "5 rows", '["prefill"]',
     f"if impls[0] == 'prefill':\n    {_REVERSE}\n    return self._sparse(q, kv, indices, scale)\nreturn q"),
    ("indices_reversed_by_nested_def_called_first", "5 rows", '["prefill"]',
     f"def undo():\n    {_REVERSE}\n\nif impls[0] == 'prefill':\n    undo()\n    return self._sparse(q, kv, indices, scale)\nreturn q"),
    ("indices_reversed_after_an_inner_return", "5 rows", '["reverse"]',
     f"if impls[0] == 'reverse':\n    if not impls:\n        return q\n    {_REVERSE}\nreturn self._sparse(q, kv, indices, scale)"),
]:
    add(_name, _hazard, _OFF_PATH.format(body=textwrap.indent(_body, " " * 8), impls=_impls),
        expect="fixable" if _hazard == "control" else "reported")

# A write in another branch than the call, or after it, runs before the call the next time forward runs, and
# the indices it reverses are the ones that call reads (the layers share them): once it took such a write for
# off the call's path (issue 34), so the first forward's reversal put the second's valid entries last.
_NEXT_CALL = ("\n\ndef entry(inp):\n    backend = Backend(inp.metadata)\n"
              "    first = backend.forward(inp.q, inp.kv, inp.indices, inp.sm_scale, ['decode'])\n"
              "    return first, backend.forward(inp.q, inp.kv, inp.indices, inp.sm_scale, ['prefill'])\n")
for _name, _body in [
    ("indices_reversed_in_other_branch_before_the_next_call",
     f"if impls[0] == 'prefill':\n    return self._sparse(q, kv, indices, scale)\n{_REVERSE}\nreturn q"),
    ("indices_reversed_after_the_call_before_the_next_call",
     f"out = self._sparse(q, kv, indices, scale) if impls[0] == 'prefill' else q\n{_REVERSE}\nreturn out"),
]:
    _two_calls = _OFF_PATH.format(body=textwrap.indent(_body, " " * 8), impls="[]")
    add(_name, "5 rows", _two_calls[:_two_calls.index("\n\ndef entry(inp):")] + _NEXT_CALL, expect="reported")

# -- issue 34 item 2: a receiver of a declared type (vivienfanghuagood/sglang's `setattr(config, k, v)` on a
# `config: PretrainedConfig`): an instance of an unrelated class rebinds nothing of the backend; one declared
# as a class the backend derives from may be the backend, and here is: the helper is swapped for one
# without topk_length.
_DECLARED = '''
from argparse import Namespace

from adv_declared_{tag} import {base}handle


class Backend{parent}:
    def __init__(self, metadata):
        self.forward_metadata = metadata

    def forward(self, q, kv, indices, scale):
        metadata = self.forward_metadata
        return self._sparse(q, kv, indices, scale)

    def _sparse(self, q_all, kv_cache, indices, sm_scale):
        out, _, _ = flash_mla_sparse_fwd(q_all, kv_cache, indices, sm_scale)  # SITE
        return out


def entry(inp):
    backend = Backend(inp.metadata)
    handle({target}, "_sp" + "arse")
    return backend.forward(inp.q, inp.kv, inp.indices, inp.sm_scale)
'''
_LEGACY = "def legacy(q_all, kv_cache, indices, sm_scale):\n    return q_all\n\n\n"
add("control_setattr_on_a_declared_unrelated_class", "control",
    _DECLARED.format(tag="ns", base="", parent="", target="Namespace()"),
    files=(("requirements.txt", "sglang-kernel==0.4.6\n"), ("adv_declared_ns.py", "from argparse import Namespace\n\n\n"
           + _LEGACY + "def handle(cfg: Namespace, name):\n    setattr(cfg, name, legacy)\n")), expect="fixable")
add("helper_swapped_through_a_parameter_declared_as_its_base", "4 callee",
    _DECLARED.format(tag="base", base="Patchable, ", parent="(Patchable)", target="backend"),
    files=(("requirements.txt", "sglang-kernel==0.4.6\n"), ("adv_declared_base.py", "class Patchable:\n    pass\n\n\n"
           + _LEGACY + "def handle(obj: Patchable, name):\n    setattr(obj, name, legacy)\n")), expect="reported")

HAZARDS = ["1 placement", "2 metadata", "3 names", "4 callee", "5 rows", "6 pins", "7 annotations", "8 discovery"]

# -- round S: what the proof rests on besides the metadata's field (identity, recipes, constructions, order) ------
_ROUND_S = helper_shape("q_input = q_all", "")
_REQ = ("requirements.txt", "sglang-kernel==0.4.6\n")
add("recipe_named_by_its_suffix_only", "6 pins", _ROUND_S, legacy_kernel=True,
    files=(_REQ, ("docker/gpu.Dockerfile", "FROM base\nRUN pip install sglang-kernel==0.4.2.post2\n")))
add("recipe_in_a_python_bootstrap", "6 pins", _ROUND_S, legacy_kernel=True, files=(_REQ, (
    "tools/bootstrap.py", 'import subprocess, sys\nWANT = {"old": "sglang-kernel==0.4.2.post2"}\n'
    'subprocess.check_call([sys.executable, "-m", "pip", "install", WANT[sys.argv[1]]])\n')))
_SHIM = ("fork_ops/__init__.py", ""), ("fork_ops/compat.py", '''
def flash_mla_sparse_fwd(q, kv, indices, sm_scale, d_v=512, attn_sink=None, topk_length=None):
    assert topk_length is None, "this build reads every slot"
    return q[:, :, :d_v] * 0, None, None
''')
add("fallback_shim_that_refuses_the_lengths", "4 callee", _ROUND_S, imports='''import torch

try:
    from sgl_kernel.flash_mla import flash_mla_sparse_fwd
except ImportError:
    from fork_ops.compat import flash_mla_sparse_fwd
''', files=(_REQ, *_SHIM), hide=("sgl_kernel.flash_mla",))
add("control_kernel_reexported_by_a_package", "control", _ROUND_S,
    imports="import torch\nfrom fork_ops import flash_mla_sparse_fwd\n",
    files=(_REQ, ("fork_ops/__init__.py", "from sgl_kernel.flash_mla import flash_mla_sparse_fwd  # noqa: F401\n")),
    expect="fixable")

_BUILT = '''
import functools
import types
from dataclasses import dataclass


@dataclass
class StepMeta:
    cache_seqlens_int32: torch.Tensor
    dsa_cache_seqlens_int32: torch.Tensor
{extra}

def batch_of(inp, shift=0):
    width = inp.indices.shape[2]
    return types.SimpleNamespace(seq_lens=torch.where(inp.lengths == width, inp.lengths + 37, inp.lengths).roll(shift, 0))


class Backend:
    def __init__(self, dsa_index_topk):
        self.dsa_index_topk = dsa_index_topk
{init}
    def init_forward_metadata(self, forward_batch):
        seq_lens = forward_batch.seq_lens
        clipped = forward_batch.seq_lens.clamp(max=self.dsa_index_topk).to(torch.int32)
        {build}

    def forward(self, q, kv, indices, scale, forward_batch):
{bind}
        return self._forward_flashmla_sparse(q, kv, indices, scale)

    def _forward_flashmla_sparse(self, q_all, kv_cache, indices, sm_scale):
        out, _, _ = flash_mla_sparse_fwd(q_all, kv_cache, indices, sm_scale)  # SITE
        return out


def entry(inp):
    backend = Backend(inp.indices.shape[2])
    backend.init_forward_metadata(batch_of(inp, shift=1))  # the step before
    return backend.forward(inp.q, inp.kv, inp.indices, inp.sm_scale, batch_of(inp))
'''
_BIND = "        metadata = self.forward_metadata"
_REFRESH = "        self.init_forward_metadata(forward_batch)"
_KEYWORDS = "self.forward_metadata = StepMeta(cache_seqlens_int32=seq_lens, dsa_cache_seqlens_int32=clipped)"
_CLASSMETHOD = "\n    @classmethod\n    def of(cls, raw, clipped):\n        return cls(clipped, raw)\n"
_PARTIAL = "        self.new_meta = functools.partial(StepMeta)\n"
for _name, _extra, _init, _build, _bind, _expect in [
    ("control_refreshed_then_read", "", "", _KEYWORDS, _REFRESH + "\n" + _BIND, "fixable"),
    ("read_then_refreshed", "", "", _KEYWORDS, _BIND + "\n" + _REFRESH, "sound"),
    ("built_through_a_partial_positionally", "", _PARTIAL, "self.forward_metadata = self.new_meta(clipped, seq_lens)",
     _REFRESH + "\n" + _BIND, "sound"),
    ("built_by_cls_positionally", _CLASSMETHOD, "", "self.forward_metadata = StepMeta.of(seq_lens, clipped)",
     _REFRESH + "\n" + _BIND, "sound"),
]:
    add(_name, "control" if _expect == "fixable" else "2 metadata",
        _BUILT.format(extra=_extra, init=_init, build=_build, bind=_bind), expect=_expect)

# -- round T: a project wrapper that hands **kwargs on: the kernel it imports decides ---------------------------
_KWARGS_WRAPPER = '''
from {module} import flash_mla_sparse_fwd as _sparse_fwd


def flash_mla_sparse_fwd(q, kv, indices, sm_scale, **kwargs):
    """One place to hang profiling ranges on the sparse kernel."""
    return _sparse_fwd(q, kv, indices, sm_scale, **kwargs)
'''
add("control_kwargs_wrapper_of_the_kernel", "control", _ROUND_S,
    imports="import torch\nfrom fork_ops.sparse import flash_mla_sparse_fwd\n", expect="fixable",
    files=(_REQ, ("fork_ops/__init__.py", ""), ("fork_ops/sparse.py", _KWARGS_WRAPPER.format(module="sgl_kernel.flash_mla"))))
add("kwargs_wrapper_of_an_older_kernel", "4 callee", _ROUND_S,
    imports="import torch\nfrom fork_ops.sparse import flash_mla_sparse_fwd\n",
    files=(_REQ, ("fork_ops/__init__.py", ""), ("fork_ops/sparse.py", _KWARGS_WRAPPER.format(module="flash_mla"))))
