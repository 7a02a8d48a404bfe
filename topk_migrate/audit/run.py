"""One audit run: the scan, the engine's results as they come back, the result."""
from __future__ import annotations

import os
import shutil
import tempfile
import time
from dataclasses import dataclass, replace
from typing import List, Optional, Sequence

from ..model import CHECK_STATUSES, Site
from ..progress import Progress
from ..run_context import in_run
from .pool import Runner
from .results import AuditResult, Tally, display_root, rel_to
from .rev import RevLayout, scan_rev
from .scan import WalkOptions, rules_scan, scan_into_runner


@in_run
def audit(  # noqa: PLR0913  (public API: keyword options with defaults)
    paths: Sequence[str],
    rev: Optional[str] = None,
    exclude: Sequence[str] = (),
    kernel: Optional[str] = None,
    jobs: Optional[int] = None,
    gitignore: bool = True,
    progress: bool = False,
    follow_links: bool = False,
    note=None,
    relative_to: Optional[str] = None,
) -> AuditResult:
    """Classify every site under `paths` (in the work tree, or in commit `rev`), in one run
    (run_context: what it reads of the tree, its scanners and workers inherit; the next run reads afresh).

    follow_links and note (told what a walk leaves out, and why): as discover.iter_python_files.
    relative_to: the directory reported paths are relative to (default: display_root of the paths; for
    `--rev`, the work tree's place of them)."""
    t0 = time.perf_counter()
    prog = Progress(progress)
    scan = rules_scan(paths)  # what the scanners, the workers and the --rev layout look for, handed to each
    runner = Runner(jobs or os.cpu_count() or 1)
    tally = Tally()
    tmp = commit = top = None
    try:
        if rev is None:
            root = display_root(paths)
            scan_into_runner(WalkOptions(paths, exclude, gitignore, follow_links, note), kernel, runner, tally, prog,
                             scan=scan)
        else:
            tmp = os.path.realpath(tempfile.mkdtemp(prefix="topk-migrate-rev-"))
            root, top, commit = scan_rev(RevLayout(paths, rev, exclude, tmp), kernel, runner, tally, prog, scan)
        if relative_to is not None:
            root = os.path.abspath(relative_to)
        sites: List[Site] = []
        for path, got, err in runner.results(prog):
            if tmp:  # from the temporary layout back to the work tree's paths
                path = os.path.join(top, path[len(tmp) + 1 :])
                err = err and err.replace(tmp + os.sep, "")
            if err:
                tally.errors.append((path, err))
            for s in got:
                reason = s.reason.replace(tmp + os.sep, "") if tmp else s.reason
                p = path if tmp else s.path
                sites.append(replace(s, path=rel_to(p, root), reason=reason))
    finally:
        runner.close()
        prog.close()
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
    return result_of(sites, tally, root, rev, commit, t0)


@dataclass(frozen=True)
class SinceOptions:
    """audit()'s options that the audit of --new-since's ref is run with too."""

    exclude: Sequence[str] = ()
    kernel: Optional[str] = None
    jobs: Optional[int] = None
    gitignore: bool = True
    relative_to: Optional[str] = None


def only_new_since(now: AuditResult, paths, ref, options: SinceOptions) -> AuditResult:
    """now's sites less those commit `ref` had (baseline.py), its summary counted again."""
    from ..baseline import only_new  # noqa: PLC0415 - on demand: baseline only for --new-since

    exclude, kernel, jobs, gitignore = options.exclude, options.kernel, options.jobs, options.gitignore
    relative_to = options.relative_to
    root = os.path.abspath(relative_to) if relative_to is not None else display_root(paths)
    then = audit(paths, rev=ref, exclude=exclude, kernel=kernel, jobs=jobs, gitignore=gitignore, relative_to=root)
    sites = only_new(now.sites, root, then.sites, then.summary["commit"])
    summary = {**now.summary, "sites": len(sites),
               "by_status": {st.value: sum(s.status is st for s in sites) for st in CHECK_STATUSES}}
    return AuditResult(sites, now.errors, summary)


def result_of(sites, tally, root, rev, commit, t0) -> AuditResult:
    sites.sort(key=lambda s: (s.path, s.line, s.column))
    # a path that does not exist is named as given: relative to root it would name something else
    errors = sorted((rel_to(p, root) if rev or os.path.lexists(p) else p, e) for p, e in tally.errors)
    summary = {
        "files": tally.files,
        "parsed": tally.candidates,
        "sites": len(sites),
        "by_status": {st.value: sum(s.status is st for s in sites) for st in CHECK_STATUSES},
        "errors": len(errors),
        "seconds": round(time.perf_counter() - t0, 3),
        "rev": rev,
        "commit": commit,
    }
    return AuditResult(sites, errors, summary)
