"""Test-only stand-in for sgl_kernel (see tests/stubs/README.md)."""
from .flash_mla import flash_mla_sparse_fwd, flash_mla_with_kvcache  # noqa: F401
