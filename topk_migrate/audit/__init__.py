"""`topk-migrate audit`: classify every kernel call site of a whole tree, fast.

A tree of tens of thousands of files holds a handful of calls, so the work is
arranged around not parsing: scanner processes read each file a window at a time
and keep it only if its bytes contain a kernel name (the run's Prefilter, handed to them: ScanFor):
memory stays flat, and no list of contents is held. One directory given is walked
by the scanners themselves, in parts (discover.SplitWalk); otherwise this process
lists the files (honouring .gitignore and --exclude) and hands them over a chunk
at a time. Scanners never import the engine. The candidates go, as soon as they come
back, to the engine, each narrowed first to what the engine reads of it
(narrow.py), in worker processes: at the first candidate one process (the
zygote) starts importing LibCST and forks the workers from itself, while the scan
goes on; a worker that dies costs the file it held (one error line) and is
replaced; a scanner that dies has its chunk scanned here. This process never
imports libcst or torch. With -j 1 all of it runs in this one process.

With --rev, files are read from a git commit (ls-tree + one cat-file --batch)
without touching the work tree; the candidates and the files the kernel gate and
config read (pyproject.toml, setup.cfg, setup.py, requirements*, dist-info
METADATA/RECORD) are laid out in a temporary directory and analysed there. The
commit may be an attacker's: a path with a `..`, `.`, `.git`, empty or absolute
component or a backslash is refused (unsafe_path), and every file is created new,
under the temporary directory's real path, never through a symlink (_lay_out).

results: what a run returns; pool: the engine's workers; scan: the scanners; rev: `--rev`; run: audit();
command: the click command. This module is the layer's surface: what the rest of the tool uses.
"""
from ..progress import Progress
from .command import FORMATS, audit_command
from .pool import EAGER_FROM, Runner, analyse, classify_without_engine
from .results import AuditError, AuditResult, Tally, display_root
from .rev import RevLayout, lay_out_rev, unsafe_path
from .run import audit
from .scan import RunState, ScanFor, WalkOptions, scan_disk

__all__ = ["EAGER_FROM", "FORMATS", "AuditError", "AuditResult", "Progress", "RevLayout", "RunState", "Runner", "ScanFor", "Tally",
           "WalkOptions", "analyse", "audit", "audit_command", "classify_without_engine", "display_root", "lay_out_rev", "scan_disk", "unsafe_path"]
