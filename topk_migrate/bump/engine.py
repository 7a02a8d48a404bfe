"""Run a bump over files and directories: the signature diff, then a verdict per call site."""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

from .bind import FAILING, SEVERITY, BumpSite, CallArgs, compare, match
from .diff import Change, diff
from .context import Context
from .signatures import Release


@dataclass
class BumpReport:
    old: Release
    new: Release
    changes: List[Change]
    sites: List[BumpSite] = field(default_factory=list)
    errors: List[Tuple[str, str]] = field(default_factory=list)  # (path, one-line cause)
    files: int = 0

    def counts(self) -> Dict[str, int]:
        return {v: sum(s.verdict == v for s in self.sites) for v in SEVERITY}

    def exit_code(self) -> int:
        """2 errors, 1 a call breaks or rebinds, 0 otherwise."""
        if self.errors:
            return 2
        return 1 if any(s.verdict in FAILING for s in self.sites) else 0


def run(paths: Sequence[str], old: Release, new: Release, follow_links: bool = False,
        rev: Optional[str] = None) -> BumpReport:
    """Every call of the releases' entry points under `paths`, on disk or in git commit `rev` (read as
    `audit --rev` reads it: laid out in a temporary directory, never through the work tree)."""
    report = BumpReport(old, new, diff(old, new))
    names = sorted(set(old.entry_points) | set(new.entry_points))
    needles = [n.encode() for n in names]
    roots = sorted(set(old.import_roots()) | set(new.import_roots()))
    # A call resolves to the wrapper only through an import of its root module, where the root is
    # a whole name (`import flash_mla`, `from sgl_kernel.flash_mla import ...`): files without one
    # are left before any parse.
    root_re = re.compile(rb"(?<![\w.])(?:" + b"|".join(re.escape(r.encode()) for r in roots) + rb")(?!\w)")

    def candidate(data: bytes) -> bool:
        return any(n in data for n in needles) and root_re.search(data) is not None

    def one(path: str, shown: str) -> None:
        try:
            report.sites += _file_sites(path, candidate, names, roots, old, new, shown)
        except _FileError as e:
            report.errors.append((shown, str(e)))

    if rev is not None:
        _run_rev(paths, rev, report, candidate, one)
        return report
    from topk_migrate import audit
    from topk_migrate.discover import Prefilter, scanning_for

    # audit's walk and parallel scanners, looking for the releases' entry-point names
    tally, found = audit._Tally(), []
    with scanning_for(Prefilter(needles)):
        audit.scan_disk(paths, (), True, os.cpu_count() or 1, tally, audit._Progress(False), found.append,
                        follow_links)
    report.files, report.errors = tally.files, list(tally.errors)
    for path in found:
        one(path, path)
    return report


def _run_rev(paths, rev, report: BumpReport, candidate, one) -> None:
    import shutil
    import tempfile

    from topk_migrate import audit

    tmp = os.path.realpath(tempfile.mkdtemp(prefix="topk-migrate-bump-rev-"))
    tally, back = audit._Tally(), os.getcwd()
    try:
        _, top, _, laid = audit.lay_out_rev(paths, rev, (), tally, audit._Progress(False), tmp, keep=candidate)
        os.chdir(tmp)  # reasons name files relative to the repository, as audit --rev's do
        for dest in laid:
            one(os.path.relpath(dest, tmp), os.path.relpath(os.path.join(top, dest[len(tmp) + 1:]), back))
    except audit.AuditError as e:
        report.errors.append((", ".join(paths), str(e)))
    finally:
        os.chdir(back)
        shutil.rmtree(tmp, ignore_errors=True)
    report.files = tally.files
    report.errors += [(os.path.relpath(p, back), e) for p, e in tally.errors]


class _FileError(Exception):
    pass


def _file_sites(path: str, candidate, names, roots, old: Release, new: Release, shown: str) -> List[BumpSite]:
    """The sites of one file (read at `path`, reported as `shown`)."""
    import libcst as cst

    from topk_migrate import guard, rules as registry
    from topk_migrate.config import config_for
    from topk_migrate.discover import read_regular
    from topk_migrate.files import decode_source, input_error
    from topk_migrate.model import InputError
    from topk_migrate.resolve import collect

    try:
        raw, st = read_regular(path)
    except OSError as e:
        raise _FileError(str(input_error(e, path))) from None
    if not candidate(raw):
        return []
    try:
        text = decode_source(path, raw, st).text
        tree = guard.parse_checked(text, path)
        module = cst.parse_module(_narrowed(text, tree, set(names)) if tree is not None else text)
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
            site_rules.update(_site_rule_verdicts(path, new.pin))
        return site_rules.get(rule_id, {"error": site_rules["error"]} if "error" in site_rules else {})

    out = []
    for c in facts.calls:
        entry = match(c.callee, names, roots)
        if entry is None:
            continue
        args = CallArgs.of(c.node, module)
        old_ep, new_ep = old.entry_points.get(entry), new.entry_points.get(entry)
        line, col = c.range.start.line, c.range.start.column + 1
        site = BumpSite(shown, line, col, c.callee, entry, findings=compare(old_ep, new_ep, args, old, new))
        ctx = Context(shown, line, col, entry, args, old, new, old_ep, new_ep, rule_sites)
        for rule in rules:
            site.findings += rule.bump(ctx)
        site.settle()
        out.append(site)
    return out


NARROW_FROM = 32 * 1024  # bytes: smaller files are parsed whole


def _narrowed(text: str, tree, names: set) -> str:
    """`text` with each function or class that neither calls one of `names` nor imports anything
    replaced by `pass` and blank lines: every kept line keeps its number and columns, and every
    import binding (function-local ones too) is kept, which is all the resolver reads for calls."""
    import ast

    if len(text) < NARROW_FROM:
        return text

    def needed(node) -> bool:
        for n in ast.walk(node):
            if isinstance(n, (ast.Import, ast.ImportFrom)):
                return True
            if isinstance(n, ast.Call):
                f = n.func
                if (f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)) in names:
                    return True
        return False

    lines = text.splitlines(keepends=True)
    cut = False

    def prune(body) -> None:
        nonlocal cut
        for node in body:
            if isinstance(node, ast.ClassDef) and needed(node):
                prune(node.body)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and not needed(node):
                first = min([node.lineno] + [d.lineno for d in node.decorator_list]) - 1
                lines[first] = " " * node.col_offset + "pass\n"
                for i in range(first + 1, node.end_lineno):
                    lines[i] = "\n"
                cut = True

    prune(tree.body)
    return "".join(lines) if cut else text


def _site_rule_verdicts(path: str, pin: Optional[str]) -> dict:
    """Every site rule's verdicts on this file under the new pin: rule id -> {(line, column): Site}, or
    {"error": line}: the file as `audit` reads it (narrowed, the project's [tool.topk-migrate] applied)."""
    from topk_migrate import api

    outcome = api.process_file(path, kernel=pin, narrowed=True)
    if outcome.error:
        return {"error": outcome.error}
    out: Dict[str, dict] = {}
    for s in outcome.sites:
        out.setdefault(s.rule, {})[(s.line, s.column)] = s
    return out
