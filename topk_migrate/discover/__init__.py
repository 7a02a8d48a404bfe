"""Which files a run looks at, and which of them can hold a kernel call at all.

Only the standard library is imported here: this runs before anything is parsed, on every file of a tree,
and must stay cheap. `reads`: regular files only, bounded; `ignore`: gitignore-style patterns in linear time;
`bytescan`: the prefilter, the bytes that may hold a call; `source`: the tree a walk reads (the file system,
or a listed tree: a git commit's files); `walk`: the walk itself.

A walk never leaves the directory it was given: an entry whose real path lies outside it (a symlink to
elsewhere) is skipped, symlinked directories inside it are followed only on request and each directory is
walked once (never into a loop), and a file reached by several paths is looked at once. The walk is a loop,
not a recursion, so no depth of tree can overflow the stack.

This module is the layer's surface: what the rest of the tool uses.
"""
from .bytescan import (
           Prefilter,
           declares_other_codec,
           file_may_hold_site,
           may_hold_site,
           prefilter_for,
)
from .ignore import WILD_PATTERNS, PatternSet, compile_patterns
from .reads import PROJECT_FILE_LIMIT, SCAN_WINDOW, Note, NotRegularFile, open_regular, read_regular
from .source import DISK, DiskTree, ListedTree
from .walk import NO_PYTHON_FILES, SplitWalk, iter_python_files

__all__ = ["DISK", "NO_PYTHON_FILES", "DiskTree", "ListedTree", "PROJECT_FILE_LIMIT", "SCAN_WINDOW", "WILD_PATTERNS", "Note", "NotRegularFile", "PatternSet", "Prefilter",
           "SplitWalk", "compile_patterns", "declares_other_codec", "file_may_hold_site", "iter_python_files", "may_hold_site",
           "open_regular", "prefilter_for", "read_regular"]
