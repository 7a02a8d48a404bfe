"""Test-only stand-in for a vendored FlashMLA build older than topk_length."""
from sgl_kernel.flash_mla import legacy_fwd as flash_mla_sparse_fwd  # noqa: F401
