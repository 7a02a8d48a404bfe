"""The library behind the CLI: classify and migrate files, one engine for every command."""
from __future__ import annotations

import contextlib
import gc
import importlib
import os
import stat
import threading
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, List, Optional, Sequence, Tuple, Union

from . import discover, rules
from .escape import printable
from .gate import FROM_OPTION, KernelGate, KernelOption
from .model import InputError, Site, Status, exit_code, internal_error
from .run_context import in_run, per_run

if TYPE_CHECKING:
    import ast

# Everything heavier (libcst, hashlib, tomllib, difflib) is imported only for a file
# that passes the byte prefilter: most files of a tree never get that far.


def _declared_in(path: str, kernel: Any, cfg) -> str:
    """Where `kernel` was declared, named in each decision its pin makes: the project's configuration where it
    holds this value, else --kernel. Told by the caller that read the configuration, so the gate never reads it."""
    if not (kernel and cfg.source and cfg.kernel == kernel):
        return FROM_OPTION
    from . import kernels  # noqa: PLC0415 - on demand: kernels (packaging) only where a project declares the kernel
    from .project import project_root  # noqa: PLC0415 - light: not for importing the CLI

    return f"{kernels.project_label(cfg.source, project_root(path))} [tool.topk-migrate] kernel"


def _kernel_option(kernel: Any) -> KernelOption:
    """A kernel as migrate_source and quick_sites are given it: its source named when a gate first needs it."""
    return kernel if isinstance(kernel, KernelOption) else KernelOption(kernel, None)


def kernel_gate(path: str, kernel: Any, rule) -> KernelGate:
    """A function callee -> Capability for calls in the file at `path`: does the kernel take `rule`'s parameter."""
    kernel = _kernel_option(kernel)
    if kernel.source is None:
        kernel = KernelOption(kernel.value, _source_of(path, kernel.value))
    return KernelGate(path, kernel, rule.param or "", rule.min_kernel)


def _source_of(path: str, kernel: Any) -> str:
    """_declared_in for a caller that has not read the configuration (migrate_source): read once a file has a call
    to decide, as a file without one never needs it."""
    if not kernel:
        return FROM_OPTION
    from .config import config_for  # noqa: PLC0415 - light: not for importing the CLI

    return _declared_in(path, kernel, config_for(os.path.dirname(os.path.abspath(path))))


def _reads(spec, source: str) -> bool:
    """Whether a site rule has anything to read in `source`: one of its entry points is spelled there."""
    return spec.has_sites and any(e in source for e in spec.entry_points)


def _attributed(found: Sequence[Site], rule_id: str, gate: KernelGate) -> List[Site]:
    """A rule's sites as the engine reports them: with the rule's id and what decided each kernel."""
    return [replace(s, rule=rule_id, kernel=gate.decisions.get(s.callee, s.kernel)) for s in found]


def _in_order(sites: List[Site]) -> List[Site]:
    sites.sort(key=lambda s: (s.line, s.column))
    return sites


def quick_sites(source: str, tree: "ast.Module", path: str, kernel: Optional[str] = None, enable: Sequence[str] = (),
                disable: Sequence[str] = ()) -> Optional[list]:
    """The sites of `source` (a narrowed file; `tree` its AST) from the quick classifiers of the rules
    that read it, as the engine reports them; None if one of those rules has none or declines. The kernel gate is the
    one the rule's sites hook gets (its INFO's parameter and first kernel releases)."""
    return _quick_sites(source, tree, path, _kernel_option(kernel), (enable, disable))


def _quick_sites(source: str, tree: "ast.Module", path: str, kernel: KernelOption, switches) -> Optional[list]:
    """quick_sites with the kernel's source named: process_file's, which read the configuration already."""
    sites: List[Site] = []
    for s in rules.enabled(*switches):
        if not _reads(s, source):
            continue
        if not s.quick:
            return None
        module = importlib.import_module(f"{s.module}.{s.quick}")
        gate = kernel_gate(path, kernel, s)
        found = module.quick_sites(tree, source, path, gate)
        if found is None:
            return None
        sites += _attributed(found, s.id, gate)
    return _in_order(sites)


@dataclass
class Migration:
    source: str
    new_source: str
    sites: List[Site]

    @property
    def changed(self) -> bool:
        return self.new_source != self.source


@in_run
def migrate_source(  # noqa: PLR0913  (public API: keyword options with defaults)
        source: str, path: str = "<string>", kernel: Optional[str] = None, metadata: Sequence[str] = (),
        enable: Sequence[str] = (), disable: Sequence[str] = (), lengths: str = "reference") -> Migration:
    """Classify every kernel call in `source` with the enabled rules; new_source has the fixable ones rewritten.

    Raises InputError (one line) for source that LibCST must not see (guard.py)."""
    from . import guard, spelling  # noqa: PLC0415 - analysis only: after the byte prefilter

    spelled = spelling.normal_form(source)  # identifiers as Python reads them (NFKC)
    tree = guard.parse_checked(spelled.text, path)
    m = _migrate_checked(spelled.text, guard.needs_isolation(tree), path, _kernel_option(kernel),
                         rules.RuleOptions(tuple(metadata), lengths), (tuple(enable), tuple(disable)))
    if spelled.changed:  # classified as Python reads it; never rewritten from that text
        return Migration(source, source, spelled.sites(m.sites))
    return m


def _migrate_checked(text: str, isolate: bool, path: str, kernel: KernelOption, options: rules.RuleOptions,
                     switches=((), ())) -> Migration:
    """_migrate() on text that passed guard.parse_checked: in a child process if guard calls it risky."""
    from . import guard  # noqa: PLC0415 - analysis only: after the byte prefilter

    if isolate:
        return guard.isolated(_migrate, text, path, kernel, options, switches)
    return _migrate(text, path, kernel, options, switches)


@contextlib.contextmanager
def _cycles_collected_after():
    """Python's cycle collector off while one file's trees are built and analysed, on again after (what it
    finds is collected then). A parse and its analyses allocate a few hundred thousand objects that live
    until the file is done, so each collection the allocations trigger walks them all again and frees
    nothing: a tenth to a sixth of check's time on a real backend, with the same peak memory
    (results/check-profile.md)."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _migrate(source: str, path: str, kernel: KernelOption, options: rules.RuleOptions, switches=((), ())) -> Migration:
    """Each enabled site rule classifies the original text (so every site keeps its own line), all of them
    handed one parse of it (rule_context); a rule's rewrite is made on top of the rewrites before it, on a
    parse of the text they made."""
    import libcst as cst  # noqa: PLC0415 - libcst: only for a file the prefilter and quick classifiers leave

    from .cst.cstwalk import fast_visits  # noqa: PLC0415 - libcst: only for a file the prefilter and quick classifiers leave
    from .files import check_rewrite, syntax_error_message  # noqa: PLC0415 - light: not for importing the CLI
    from .rule_context import Parsed, RuleContext  # noqa: PLC0415 - libcst: only for a file the prefilter and quick classifiers leave

    new, sites, reading = source, [], []
    parsed = latest = Parsed(source)  # the original text's parse, and that of the rewrites' text once made
    try:
        with _cycles_collected_after(), fast_visits(trivia=False):  # read-only walks: no node rebuilt, no layout
            for spec in rules.enabled(*switches):
                if not _reads(spec, source):
                    continue
                rule = rules.load(spec.id)
                gate = kernel_gate(path, kernel, rule)
                out, found = rule.sites(RuleContext(path, parsed, gate, options))
                sites += _attributed(found, spec.id, gate)
                reading.append((spec.id, rule, gate))
                if out != source and new == source:
                    new = out
                elif out != source:  # on top of the rewrites before it: a parse of their text, made once
                    latest = latest if latest.source == new else Parsed(new)
                    new = rule.sites(RuleContext(path, latest, gate, options))[0]
            if len(reading) > 1 and new != source:
                new = _settled(new, reading, path, options)
    except cst.ParserSyntaxError as e:  # CPython's message names the right line and spots Python 2
        raise InputError(syntax_error_message(source, path) or f"syntax error: {e.message}") from None
    parsed = latest = None  # the trees go before the rewrite is compiled, as each rule's own went when it returned
    if new != source:
        check_rewrite(source, new, path)  # never hand back code that does not parse, not even as a diff
    return Migration(source, new, _in_order(sites))


SETTLE_PASSES = 3  # passes of the rewriting rules over each other's text before a file is refused as unsettled


def _settled(text: str, rewriting: list, path: str, options: rules.RuleOptions) -> str:
    """A rewrite where two rules or more read the file: run them again over the text made until a pass
    changes nothing (one rule's rewrite may make work for another that ran before it), at most SETTLE_PASSES
    times; a file whose rewrites do not settle is an error, never half of a fix."""
    from .rule_context import Parsed, RuleContext  # noqa: PLC0415 - libcst: only for a file the prefilter and quick classifiers leave

    parsed = Parsed(text)
    for _ in range(SETTLE_PASSES):
        before = text
        for _, rule, gate in rewriting:
            parsed = parsed if parsed.source == text else Parsed(text)  # (one parse per text, shared)
            text = rule.sites(RuleContext(path, parsed, gate, options))[0]
        if text == before:
            return text
    ids = ", ".join(rule_id for rule_id, _, _ in rewriting)
    raise InputError(f"the rewrites of {ids} still change each other's text after {SETTLE_PASSES} passes; "
                     "apply one rule at a time (--enable / --disable) and report it to the rules' authors")


@dataclass
class FileOutcome:
    path: str
    sites: List[Site] = field(default_factory=list)
    error: Optional[str] = None
    diff: str = ""  # the rewrite as a unified diff: made when first read (_diff_of)
    written: bool = False
    new_bytes: Optional[bytes] = None  # the rewrite of source given as bytes (standard input)
    needs_engine: bool = False  # process_file(engine=False) stopped where LibCST would start
    config: Optional[str] = None  # the pyproject.toml whose [tool.topk-migrate] applied (-v names it)
    parsed: bool = False  # its bytes hold a name a rule reads, so it was analysed (a report's "parsed")
    # (source, rewrite, labels) of a diff not made yet: check and apply never read it, and difflib's matching
    # is N x N in a file of N alike rewritten functions (2,000 of them: 11 s of check's 62 s)
    _diff_of: Optional[tuple] = field(default=None, init=False, repr=False, compare=False)


def _diff_made(self: FileOutcome) -> str:
    if self._diff_of is not None:
        import difflib  # noqa: PLC0415 - on demand: difflib only when a diff is read

        before, after, labels = self._diff_of
        self._diff = "".join(difflib.unified_diff(before.splitlines(True), after.splitlines(True), *labels))
        self._diff_of = None
    return self._diff


def _diff_set(self: FileOutcome, value: str) -> None:
    self._diff, self._diff_of = value, None


FileOutcome.diff = property(_diff_made, _diff_set)  # (after @dataclass: its __init__ sets it through the setter)


def _stdin_stat(data: bytes) -> os.stat_result:
    """A stat for bytes that are no file: decode_source records a mode and owner never used."""
    return os.stat_result((stat.S_IFREG | 0o644, 0, 0, 1, 0, 0, len(data), 0, 0, 0))


def quick_enabled() -> bool:
    return not os.environ.get("TOPK_MIGRATE_NO_QUICK")


NARROW_BYTES = 512 * 1024  # bigger files are classified on their narrowed text (narrow.py)


@per_run
def _clean_once(directory: str) -> None:
    """Before the run's first write into a directory: remove temp files that a killed run left there."""
    from .files import remove_stale_temps  # noqa: PLC0415 - light: not for importing the CLI

    remove_stale_temps(directory)


def _diff_name(path: str) -> str:
    """path relative to the top of the git work tree holding it (else the current directory),
    with `/`: how `git apply` and `patch -p1` from there name the file, whatever form was given
    (./x, ../x, absolute, through a symlinked directory). A file outside both is named from
    the file system's root, as `git diff --no-index` does."""
    real = os.path.realpath(path)
    top = d = os.path.dirname(real)
    while not os.path.exists(os.path.join(d, ".git")):
        if os.path.dirname(d) == d:
            top = os.path.realpath(os.getcwd())
            break
        d = os.path.dirname(d)
    else:
        top = d
    name = os.path.relpath(real, top)
    if name == os.pardir or name.startswith(os.pardir + os.sep):
        name = os.path.splitdrive(real)[1].lstrip(os.sep)
    return name.replace(os.sep, "/")


def diff_labels(path: str):
    name = _diff_name(path)
    return f"a/{name}", f"b/{name}"


@dataclass(frozen=True)
class _Request:
    """What process_file was asked, carried through the stages as one value."""

    kernel: Optional[str] = None
    write: bool = False
    narrowed: bool = False
    data: Optional[bytes] = None
    engine: bool = True
    parsed: Optional["ast.Module"] = None
    lengths: Optional[str] = None


@dataclass(frozen=True)
class _Read:
    """A candidate's bytes and their stat (a made-up one for standard input)."""

    raw: bytes
    stat: os.stat_result


@dataclass(frozen=True)
class _Opened:
    """The decoded file and its project's configuration."""

    source: Any  # files.SourceFile: the text as read and its encoding, for the write
    config: Any  # config.Config


@dataclass(frozen=True)
class _Text:
    """What the engine reads of a file: its text as Python reads it (spelling.py) and what runs over it."""

    source: Any  # files.SourceFile
    size: int  # of the bytes read: over NARROW_BYTES, the text is narrowed first
    spelled: Any  # spelling.Spelling
    kernel: KernelOption
    options: rules.RuleOptions
    switches: tuple  # (enable, disable)
    names: tuple  # the site rules' entry points: what narrowing keeps
    params: tuple  # and their parameters

    @property
    def text(self) -> str:
        return self.spelled.text


@dataclass(frozen=True)
class _Answered:
    """A file answered before LibCST: its sites (none where narrowing kept nothing a rule reads)."""

    sites: tuple = ()


@dataclass(frozen=True)
class _Plan:
    """What LibCST reads first. first: the narrowed text, classified alone before LibCST reads the whole
    text (only for a rewrite); else the whole text, whose one run classifies and rewrites. whole: the text
    is the file's whole text, so a first run is the rewrite's too."""

    text: str
    isolate: bool  # parse it in a child process (guard.py)
    first: bool
    whole: bool


@in_run
def process_file(  # noqa: PLR0913  (public API: keyword options with defaults)
        path: str, kernel: Optional[str] = None, write: bool = False, verbose: bool = False,
        narrowed: bool = False, data: Optional[bytes] = None, engine: bool = True,
        parsed: Optional[Any] = None, lengths: Optional[str] = None) -> FileOutcome:
    """Read, classify and (if write) rewrite one file; every expected failure becomes `error`.

    narrowed: classify only (audit), on the text narrow.py cuts down to what the engine reads.
    Files over NARROW_BYTES are classified that way too; LibCST reads one whole only to
    rewrite it. Every stage is first estimated against the memory bound (memory.py).
    data: the source's bytes (standard input), named `path` for pins, config and
    reporting; never written; the rewrite is kept in new_bytes, encoded as the source was.
    A narrowed text the enabled rules' quick classifiers answer for (quick_sites) is
    classified without LibCST. engine=False: stop where LibCST would be needed, with
    needs_engine set (audit's scanners, which never import it). parsed: with narrowed and
    data, CPython's AST of those bytes, made by a caller that read them (bump): not made again.
    lengths: rules.LENGTHS, over the project's [tool.topk-migrate] lengths.
    """
    out = FileOutcome(path)
    try:
        _pipeline(out, _Request(kernel, write, narrowed, data, engine, parsed, lengths))
    except InputError as e:
        out.error = str(e)
    except Exception as e:  # a bug of ours: report it, keep going with the other files
        import traceback  # noqa: PLC0415 - on demand: traceback only for an internal error

        out.error = internal_error(e) + (f"\n{traceback.format_exc()}" if verbose else "")
    return out


def _pipeline(out: FileOutcome, req: _Request) -> None:
    """read -> classify -> rewrite -> write. Each stage's result is recorded in `out` as it comes, so an
    error in a later stage keeps what the earlier ones found."""
    read = _read(out.path, req.data)
    if read is None:
        return
    out.parsed = True
    opened = _open(out.path, read)
    out.config = opened.config.source
    if req.write and req.data is None:
        _clean_once(os.path.dirname(os.path.realpath(out.path)))
    text = _engine_text(out.path, read, opened, req)
    if text is not None:
        _classify_and_rewrite(out, text, req)


def _classify_and_rewrite(out: FileOutcome, text: _Text, req: _Request) -> None:
    """The stages after the read, each result recorded in `out`: the plan (or the quick answer), the
    narrowed run, the rewrite, the write."""
    plan = _plan(out.path, text, req)
    if isinstance(plan, _Answered):
        out.sites = list(plan.sites)
        return
    if not req.engine:
        out.needs_engine = True  # audit's scanners stop where LibCST would start
        return
    first = _classify(out.path, plan, text) if plan.first else None
    if first is not None:
        out.sites = text.spelled.sites(first.sites)  # the file's sites, whatever happens to the rewrite below
        if not _rewrite_wanted(out.sites, req):
            return
    m = _rewrite(out.path, plan, first, text)
    out.sites = text.spelled.sites(m.sites)
    if m.changed and not text.spelled.changed:  # a file spelled otherwise is never rewritten from that text
        out._diff_of = (text.source.text, m.new_source, diff_labels(out.path))  # the diff, made if it is read
        out.new_bytes, out.written = _write(text.source, m.new_source, req)


def _rewrite_wanted(sites: List[Site], req: _Request) -> bool:
    """After a narrowed run: LibCST reads the whole file only for a fixable site, and never for audit."""
    return not req.narrowed and any(s.status is Status.FIXABLE for s in sites)


def _read(path: str, data: Optional[bytes]) -> Optional[_Read]:
    """The file's bytes; None where no rule reads anything in them (over the size bound without a kernel name,
    or no name any rule reads, whatever a project switches on: the byte prefilter)."""
    read = _Read(data, _stdin_stat(data)) if data is not None else _read_file(path)
    if read is None or not discover.prefilter_for(everything=True).matches(read.raw):
        return None
    return read


def _read_file(path: str) -> Optional[_Read]:
    from .files import input_error, read_candidate  # noqa: PLC0415 - light: not for importing the CLI

    try:
        got = read_candidate(path)
    except OSError as e:
        raise input_error(e, path) from None
    return None if got is None else _Read(*got)


def _open(path: str, read: _Read) -> _Opened:
    from .config import config_for  # noqa: PLC0415 - light: not for importing the CLI
    from .files import decode_source  # noqa: PLC0415 - light: not for importing the CLI

    source = decode_source(path, read.raw, read.stat)
    return _Opened(source, config_for(os.path.dirname(os.path.abspath(path))))


def _engine_text(path: str, read: _Read, opened: _Opened, req: _Request) -> Optional[_Text]:
    """What the engine reads and runs over it; None where none of the rules this project runs reads the file.
    Identifiers are read as Python does (NFKC): sites come back in the file's own columns (spelling.py)."""
    from . import memory, spelling  # noqa: PLC0415 - analysis only: after the byte prefilter

    cfg = opened.config
    if not discover.prefilter_for(tuple(sorted(cfg.enable))).matches(read.raw):
        return None
    switches = (cfg.enable, cfg.disable)
    site_rules = [r for r in rules.enabled(*switches) if r.has_sites]
    memory.check(read.raw, memory.PARSE_BYTES_PER_TOKEN, "parse")
    kernel = req.kernel or cfg.kernel
    return _Text(opened.source, len(read.raw), spelling.normal_form(opened.source.text),
                 KernelOption(kernel, _declared_in(path, kernel, cfg)), cfg.options(req.lengths), switches,
                 tuple(e for r in site_rules for e in r.entry_points), tuple(r.param for r in site_rules))


def _plan(path: str, text: _Text, req: _Request) -> Union[_Plan, _Answered]:
    """What LibCST reads first. A file over NARROW_BYTES, and any narrowed run, is cut to what the engine reads
    first (narrow.py); LibCST reads a file whole only to rewrite it."""
    if req.narrowed or text.size > NARROW_BYTES:
        return _narrowed_plan(path, text, req)
    from . import guard  # noqa: PLC0415 - analysis only: after the byte prefilter

    return _Plan(text.text, guard.needs_isolation(guard.parse_checked(text.text, path)), first=False, whole=True)


def _narrowed_plan(path: str, text: _Text, req: _Request) -> Union[_Plan, _Answered]:
    """The narrowed text and how to parse it, or the quick classifiers' answer where they give one. The nesting
    LibCST is exposed to is measured on what it parses: the narrowed text, when it is one."""
    from . import guard, memory, narrow  # noqa: PLC0415 - analysis only: after the byte prefilter

    tree = req.parsed if _parsed_reusable(text, req) else guard.parse_checked(text.text, path, measure=False)
    cut = narrow.narrow(text.text, tree, text.names, params=text.params)
    if cut == narrow.NOTHING:
        return _Answered()
    small = cut or text.text
    tree = guard.for_libcst(tree, text.text, cut, path)
    isolate = guard.needs_isolation(tree)
    if cut is not None and not isolate and quick_enabled():
        # (before the bound on what LibCST would hold: the quick classifier holds only the parse made)
        found = _quick_sites(small, tree, path, text.kernel, text.switches)
        if found is not None:  # compliant and opt-out sites only: nothing to rewrite
            return _Answered(tuple(text.spelled.sites(found)))
    memory.check(narrow.without_stubs(small), memory.REWRITE_BYTES_PER_TOKEN, "analyse")
    return _Plan(small, isolate, first=True, whole=small == text.text)


def _parsed_reusable(text: _Text, req: _Request) -> bool:
    """The caller's AST (bump's, of the bytes it handed in) is the text's: the same bytes, spelled alike."""
    return req.parsed is not None and req.narrowed and req.data is not None and not text.spelled.changed


def _classify(path: str, plan: _Plan, text: _Text) -> Migration:
    """The engine's run over the narrowed text: the file's sites, and the rewrite where nothing was cut."""
    return _migrate_checked(plan.text, plan.isolate, path, text.kernel, text.options, text.switches)


def _rewrite(path: str, plan: _Plan, first: Optional[Migration], text: _Text) -> Migration:
    """The engine's run over the whole text (LibCST must see all of it to write it back). A first run that read
    the whole text is this run: a file is classified twice only where narrowing cut something from it."""
    from . import guard, memory  # noqa: PLC0415 - analysis only: after the byte prefilter

    memory.check(text.text, memory.REWRITE_BYTES_PER_TOKEN, "rewrite")
    if plan.whole and first is not None:
        return first
    isolate = plan.isolate if plan.whole else guard.needs_isolation(guard.parse_checked(text.text, path))
    return _migrate_checked(text.text, isolate, path, text.kernel, text.options, text.switches)


def _write(source, new_text: str, req: _Request) -> Tuple[Optional[bytes], bool]:
    """(new_bytes, written): standard input's rewrite encoded as its bytes were (never written), or the file
    rewritten in place (apply); neither for check."""
    from . import files  # noqa: PLC0415 - light: not for importing the CLI

    if req.data is not None:
        try:
            return files.keep_tail(source.text, new_text).encode(source.encoding), False
        except UnicodeEncodeError as e:
            raise InputError(f"rewrite cannot be encoded as {source.encoding} ({e.reason})") from None
    if req.write:
        files.write_source(source, new_text)
        return None, True
    return None, False


@dataclass
class Report:
    files: List[FileOutcome]

    @property
    def sites(self) -> List[Site]:
        return [s for f in self.files for s in f.sites]

    @property
    def errors(self) -> List[FileOutcome]:
        return [f for f in self.files if f.error]

    def count(self, status: Status) -> int:
        return sum(s.status is status for s in self.sites)

    def exit_code(self, wrote: bool = False) -> int:
        """0 nothing left to do, 1 rewrote something or sites remain, 2 errors (model.exit_code)."""
        left = {Status.MANUAL} if wrote else {Status.FIXABLE, Status.MANUAL}
        return exit_code(self.sites, bool(self.errors), left, rewrote=wrote and any(f.written for f in self.files))


class _StopBetweenFiles:
    """The first Ctrl-C stops the run after the file in hand; a second one stops it at once.

    A KeyboardInterrupt raised inside LibCST can surface as another exception (a
    KeyError from its metadata), which would be reported as that file's error while
    the run went on. Only installed where SIGINT still has Python's default handler.
    """

    def __enter__(self):
        import signal  # noqa: PLC0415 - light: not for importing the CLI

        self.hit, self.old = False, None
        if threading.current_thread() is threading.main_thread() and \
                signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            self.old = signal.signal(signal.SIGINT, self._on_sigint)
        return self

    def _on_sigint(self, signum, frame):
        import signal  # noqa: PLC0415 - light: not for importing the CLI

        self.hit = True
        signal.signal(signal.SIGINT, self.old)

    def check(self) -> None:
        if self.hit:
            raise KeyboardInterrupt

    def __exit__(self, *exc):
        if self.old is not None:
            import signal  # noqa: PLC0415 - light: not for importing the CLI

            signal.signal(signal.SIGINT, self.old)


@in_run
def run(  # noqa: PLR0913  (public API: keyword options with defaults)
        paths: Sequence[str], kernel: Optional[str] = None, write: bool = False, verbose: bool = False,
        follow_links: bool = False, note=None, progress: bool = False, lengths: Optional[str] = None) -> Report:
    """check/apply over files and directories; a walked directory honours its [tool.topk-migrate] include/exclude.

    follow_links and note (told what a walk leaves out, and why): as discover.iter_python_files.
    progress: a status line on stderr (progress.Progress) once the run takes a while.
    lengths: rules.LENGTHS, over each project's [tool.topk-migrate] lengths."""
    from . import config  # noqa: PLC0415 - light: not for importing the CLI
    from .progress import Progress  # noqa: PLC0415 - light: not for importing the CLI

    outcomes: List[FileOutcome] = []
    shown, sites = Progress(progress), 0
    with _StopBetweenFiles() as stop:
        try:
            for path, error in config.project_files(paths, follow_links=follow_links, note=note):
                shown.show(f"{len(outcomes)} file(s), {sites} site(s): {printable(path)}")
                outcomes.append(FileOutcome(path, error=error) if error else process_file(path, kernel, write, verbose, lengths=lengths))
                sites += len(outcomes[-1].sites)
                stop.check()
        except InputError as e:  # a directory's configuration
            outcomes.append(FileOutcome(getattr(e, "path", ", ".join(paths)), error=str(e)))
        finally:
            shown.close()
    return Report(outcomes)
