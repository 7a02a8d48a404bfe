"""Test-only stand-in for a vendored FlashMLA build older than topk_length: a plain def without the
parameter, as such a build's interface is (read by the gate as it would read the real one)."""
from sgl_kernel import flash_mla as _stub


def flash_mla_sparse_fwd(q, kv, indices, sm_scale, d_v=512, attn_sink=None):
    return _stub.legacy_fwd(q, kv, indices, sm_scale, d_v, attn_sink)
