"""Run a bump over files and directories: the signature diff, then a verdict per call site."""
from __future__ import annotations

import os
import re
import shutil
import tempfile
import unicodedata
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

from topk_migrate import api
from topk_migrate import rules as registry
from topk_migrate.discover import Prefilter
from topk_migrate.model import Finding, InputError, Site, exit_code, internal_error
from topk_migrate.run_context import in_run

from .bind import BREAKS, FAILING, SEVERITY, UNCHANGED, CallArgs, compare, match, reach, settle
from .context import Context
from .diff import Change, diff
from .signatures import Release


@dataclass
class BumpReport:
    old: Release
    new: Release
    changes: List[Change]
    sites: List[Site] = field(default_factory=list)
    errors: List[Tuple[str, str]] = field(default_factory=list)  # (path, one-line cause)
    files: int = 0

    def counts(self) -> Dict[str, int]:
        return {v: sum(s.status == v for s in self.sites) for v in SEVERITY}

    def exit_code(self) -> int:
        """2 errors, 1 a call breaks or rebinds, 0 otherwise (model.exit_code)."""
        return exit_code(self.sites, bool(self.errors), FAILING)


@in_run
def run(paths: Sequence[str], old: Release, new: Release, follow_links: bool = False,
        rev: Optional[str] = None, jobs: Optional[int] = None) -> BumpReport:
    """Every call of the releases' entry points under `paths`, on disk or in git commit `rev` (read as
    `audit --rev` reads it: laid out in a temporary directory, never through the work tree). Files are
    found by audit's walk and scanners and analysed in its worker processes, in one run (run_context)."""
    from topk_migrate import audit  # noqa: PLC0415 - light: not for `bump --help`

    report = BumpReport(old, new, diff(old, new))
    candidate = _Candidate(old, new)
    jobs = jobs or os.cpu_count() or 1
    runner = audit.Runner(jobs, task=analyse_file, eager=jobs >= audit.EAGER_FROM)
    tally, tmp, back = audit.Tally(), None, os.getcwd()
    try:
        if rev is None:
            try:
                audit.scan_disk(audit.WalkOptions(paths, follow_links=follow_links),
                                audit.RunState(runner.jobs, tally, audit.Progress(False)),
                                lambda path: runner.submit(path, path, old, new),
                                scan=audit.ScanFor(Prefilter(candidate.needles)))  # the releases' entry-point names
            except audit.AuditError as e:  # the walk cannot start (a project's configuration): one line
                report.errors.append((", ".join(paths), str(e)))
        else:
            tmp = os.path.realpath(tempfile.mkdtemp(prefix="topk-migrate-bump-rev-"))
            try:
                _, top, _, laid = audit.lay_out_rev(audit.RevLayout(paths, rev, (), tmp), tally,
                                                    audit.Progress(False), keep=candidate)
            except audit.AuditError as e:
                report.errors.append((", ".join(paths), str(e)))
                laid = []
            for dest in laid:  # reasons name files relative to the repository, as audit --rev's do
                shown = os.path.relpath(os.path.join(top, dest[len(tmp) + 1:]), back)
                runner.submit(shown, os.path.relpath(dest, tmp), old, new, tmp)
        for shown, sites, err in runner.results(audit.Progress(False)):
            report.sites += sites
            if err:
                report.errors.append((shown, err))
    finally:
        runner.close()
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
    report.files = tally.files
    report.errors += [(os.path.relpath(p, back) if rev else p, e) for p, e in tally.errors]
    report.sites.sort(key=lambda s: (s.path, s.line, s.column))
    return report


class _Candidate:
    """Whether a file's bytes may hold a call of the releases' entry points: one of their names, and an
    import of one of their root modules as a whole name (`import flash_mla`, `from sgl_kernel.flash_mla
    import ...`), without which no call resolves to the wrapper. Picklable: it travels to the workers."""

    def __init__(self, old: Release, new: Release):
        self.names = sorted(set(old.entry_points) | set(new.entry_points))
        self.roots = sorted(set(old.import_roots()) | set(new.import_roots()))
        self.needles = [n.encode() for n in self.names]
        self.root_re = re.compile(rb"(?<![\w.])(?:" + b"|".join(re.escape(r.encode()) for r in self.roots)
                                  + rb")(?!\w)")

    def __call__(self, data: bytes) -> bool:
        if any(n in data for n in self.needles) and self.root_re.search(data) is not None:
            return True
        if data.isascii():
            return False
        # names Python reads in NFKC form (PEP 3131): a fullwidth `f` in `flash_mla` still imports it
        from topk_migrate.files import python_text  # noqa: PLC0415 - light: not for --help

        read = unicodedata.normalize("NFKC", python_text(data)).encode("utf-8", "surrogateescape")
        return read != data and any(n in read for n in self.needles) and self.root_re.search(read) is not None


def analyse_file(shown: str, path: str, old: Release, new: Release,
                 cwd: Optional[str] = None) -> Tuple[str, List[Site], Optional[str]]:
    """(shown, sites, error line) of the file read at `path` (relative to `cwd`, when given) and
    reported as `shown`; never raises (it runs in audit's worker processes)."""
    back = os.getcwd() if cwd else None
    try:
        if cwd:
            os.chdir(cwd)
        return shown, _file_sites(path, _Candidate(old, new), old, new, shown), None
    except _FileError as e:
        return shown, [], str(e)
    except Exception as e:  # a bug of ours: this file's error line, not a lost run
        return shown, [], internal_error(e)
    finally:
        if back:
            os.chdir(back)


class _FileError(Exception):
    pass


def _file_sites(path: str, candidate: _Candidate, old: Release, new: Release, shown: str) -> List[Site]:
    """The sites of one file (read at `path`, reported as `shown`)."""
    import libcst as cst  # noqa: PLC0415 - libcst: in bump's workers only

    from topk_migrate import guard, narrow, spelling  # noqa: PLC0415 - light: not for --help
    from topk_migrate.config import config_for  # noqa: PLC0415 - light: not for `bump --help`
    from topk_migrate.cst.resolve import collect  # noqa: PLC0415 - libcst: in bump's workers only
    from topk_migrate.files import decode_source, input_error, read_candidate  # noqa: PLC0415 - light: not for --help

    try:
        got = read_candidate(path, Prefilter(candidate.needles))  # a file over max_bytes() is scanned in windows
    except OSError as e:
        raise _FileError(str(input_error(e, path))) from None
    except InputError as e:  # too large, and names an entry point
        raise _FileError(str(e)) from None
    if got is None or not candidate(got[0]):
        return []
    raw, st = got
    try:
        # identifiers as Python reads them (NFKC); columns come back in the file's own characters
        spelled = spelling.normal_form(decode_source(path, raw, st).text)
        text = spelled.text
        # the nesting LibCST is exposed to is measured on what it parses: the narrowed text, when it is one
        tree = guard.parse_checked(text, path, measure=False)
        # the call statements and the imports of their callees, on their own lines (narrow.py)
        narrowed = narrow.narrow(text, tree, tuple(candidate.names), calls_only=True) if narrow.enabled() else None
        if narrowed == narrow.NOTHING:
            return []
        guard.for_libcst(tree, text, narrowed, path)
        module = cst.parse_module(text if narrowed is None else narrowed)
    except InputError as e:
        raise _FileError(str(e)) from None
    except cst.ParserSyntaxError as e:
        raise _FileError(f"syntax error: {e.message}") from None
    facts = collect(module)
    cfg = config_for(os.path.dirname(os.path.abspath(path)))
    rules = [registry.load(r.id) for r in registry.enabled(cfg.enable, cfg.disable, everything=True) if r.has_bump]
    site_rules: Dict[str, dict] = {}

    def rule_sites(rule_id: str) -> dict:
        """The site rules' verdicts on this file under the new pin (one run for all of them)."""
        if not site_rules:
            site_rules.update(_site_rule_verdicts(path, new.pin, raw, tree))
        return site_rules.get(rule_id, {"error": site_rules["error"]} if "error" in site_rules else {})

    out = []
    bindings: Dict[str, List[str]] = {}
    for c in facts.calls:
        if c.callee.rpartition(".")[2] not in candidate.names:
            continue
        if not bindings:
            bindings.update(_bindings(module) or {"": []})
        got = _entry(c, bindings, candidate, old, new)
        if got is None:
            continue
        callee, entry, old_ep, new_ep, findings = got
        args = CallArgs.of(c.node, module)
        line = c.range.start.line
        col = spelled.column(line, c.range.start.column + 1)
        if findings is None:
            findings = compare(old_ep, new_ep, args, old, new)
            ctx = Context(shown, line, col, entry, args, old, new, old_ep, new_ep, rule_sites)
            for rule in rules:
                findings += rule.bump(ctx)
        out.append(settle(shown, line, col, callee, entry, findings))
    return out


def _entry(c, bindings: Dict[str, List[str]], candidate: "_Candidate", old: Release, new: Release):
    """(callee, entry point, old and new entry point, findings or None to bind) for a call whose resolved
    name names an entry point under a wrapper's root; None when it is not a kernel call after all. The
    resolver keeps a name's first import in the file; the name's other imports (`from sgl_kernel import f`
    on one branch, `from sgl_kernel.flash_mla import f` on another) are tried after it, and the first
    that reaches an entry point of either release is the call's."""
    from topk_migrate.cst.resolve import dotted  # noqa: PLC0415 - libcst: in bump's workers only

    spelled = dotted(c.node.func) or ""
    root, _, rest = spelled.partition(".")
    tried = [c.callee] + [q + ("." + rest if rest else "") for q in bindings.get(root, [])]
    missed = None
    for callee in dict.fromkeys(tried):
        entry = match(callee, candidate.names, candidate.roots)
        if entry is None:
            continue
        o, why_old = reach(old, callee)
        n, why_new = reach(new, callee)
        old_ep = old.entry_points[o] if o else None
        new_ep = new.entry_points[n] if n else None
        if o and not n and why_new:
            return callee, entry, old_ep, None, [Finding(BREAKS, f"`{callee}` does not reach `{entry}` under "
                                                                 f"{new.label}: {why_new} (ImportError)")]
        if o or n:
            return callee, o or n, old_ep, new_ep, None
        if missed is None and (why_old or why_new):
            missed = (callee, entry, why_old or why_new)
    if missed is None:
        return None
    callee, entry, why = missed
    return callee, entry, None, None, [Finding(UNCHANGED, f"neither release provides `{callee}`: {why} in either "
                                                          "(an ImportError under both); the call does not reach "
                                                          "this kernel's wrapper, so the bump changes nothing here")]


def _bindings(module) -> Dict[str, List[str]]:
    """Every import of each local name in the module, in order (as resolve.collect spells them)."""
    import libcst as cst  # noqa: PLC0415 - libcst: in bump's workers only

    from topk_migrate.cst.resolve import dotted  # noqa: PLC0415 - libcst: in bump's workers only

    out: Dict[str, List[str]] = {}

    class Imports(cst.CSTVisitor):
        def visit_Import(self, node: cst.Import) -> None:
            for alias in node.names:
                full = dotted(alias.name)
                if full is None:
                    continue
                name = getattr(getattr(alias.asname, "name", None), "value", None)
                if name:
                    out.setdefault(name, []).append(full)
                else:
                    out.setdefault(full.split(".")[0], []).append(full.split(".")[0])

        def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
            if isinstance(node.names, cst.ImportStar):
                return
            base = "." * len(node.relative) + (dotted(node.module) if node.module else "")
            for alias in node.names:
                name = getattr(alias.name, "value", None)
                if not isinstance(name, str):
                    continue
                local = getattr(getattr(alias.asname, "name", None), "value", None) or name
                out.setdefault(local, []).append(f"{base}.{name}" if base and not base.endswith(".") else base + name)

    module.visit(Imports())
    return {k: list(dict.fromkeys(v)) for k, v in out.items()}


def _site_rule_verdicts(path: str, pin: Optional[str], raw: bytes, tree) -> dict:
    """Every site rule's verdicts on this file under the new pin: rule id -> {(line, column): Site}, or
    {"error": line}: the file as `audit` reads it (narrowed, the project's [tool.topk-migrate] applied),
    from the bytes and CPython's AST of them this run already has."""
    outcome = api.process_file(path, kernel=pin, narrowed=True, data=raw, parsed=tree)
    if outcome.error:
        return {"error": outcome.error}
    out: Dict[str, dict] = {}
    for s in outcome.sites:
        out.setdefault(s.rule, {})[(s.line, s.column)] = s
    return out
