"""Which files a run looks at, and which of them can hold a kernel call at all."""
from __future__ import annotations

import os
from typing import Iterator, Tuple, Union

# Every spelling the resolver knows ends in one of these names; a file without
# any of them cannot hold a site and is never parsed.
NEEDLES = (b"flash_mla_sparse_fwd", b"flash_mla_sparse_prefill", b"sparse_prefill_fwd")


def may_hold_site(data: bytes) -> bool:
    return any(n in data for n in NEEDLES)


def iter_python_files(paths) -> Iterator[Tuple[str, Union[str, None]]]:
    """Yield (path, error) for every file to look at; error is a one-line reason or None."""
    for p in paths:
        if not os.path.exists(p):
            yield p, "no such file or directory"
        elif os.path.isdir(p):
            for root, dirs, files in os.walk(p):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                for f in sorted(files):
                    if f.endswith(".py"):
                        yield os.path.join(root, f), None
        else:
            yield p, None
