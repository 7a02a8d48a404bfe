"""The library behind the CLI: classify and migrate files, one engine for every command."""
from __future__ import annotations

import contextlib
import gc
import importlib
import os
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, List, Optional, Sequence

from . import discover, rules
from .model import Capability, InputError, Site, Status, exit_code, internal_error
from .run_context import in_run, per_run

if TYPE_CHECKING:
    import ast

# Everything heavier (libcst, hashlib, tomllib, difflib) is imported only for a file
# that passes the byte prefilter: most files of a tree never get that far.


class KernelGate:
    """callee -> Capability (does the kernel behind it take the rule's parameter) for the calls in
    one file; remembers each decision for the report. The parameter and the first version of each
    distribution that has it are the rule's data."""

    def __init__(self, path: str, kernel: Optional[str] = None, param: str = "", min_versions=None):
        # not at the top: with config ~2.5 ms, which check of a file without the kernel never needs
        from .project import project_root

        self.param, self.min = param, dict(min_versions or {})
        self.path = path
        self.root = project_root(path)
        self.decisions: dict = {}  # callee -> "what decided, from where"
        self.explicit = None
        if kernel:
            from . import kernels

            where = self._declared_in(kernel)
            try:
                if not isinstance(kernel, str):
                    raise ValueError(f"expected a string such as {kernels.EXAMPLE_KERNEL!r}, got {kernel!r}")
                self.explicit = kernels.parse_pin(kernel, where)
            except ValueError as e:
                raise InputError(f"{where}: {e}") from None

    def _declared_in(self, kernel) -> str:
        """--kernel, or the configuration file that supplied this value."""
        from . import kernels  # with config_for: what a file without the kernel never needs
        from .config import config_for

        cfg = config_for(os.path.dirname(os.path.abspath(self.path)))
        if cfg.source and cfg.kernel == kernel:
            return f"{kernels.project_label(cfg.source, self.root)} [tool.topk-migrate] kernel"
        return "--kernel"

    def __call__(self, callee: str) -> Capability:
        cap = self._decide(callee)
        if cap.decision:
            self.decisions[callee] = cap.decision
        return cap

    @property
    def dists(self):
        """Top-level module -> the distributions that can provide it (the rules' INFO.providers)."""
        return rules.providers()

    def _decide(self, callee: str) -> Capability:
        """In order: --kernel NAME==VERSION, the project's pins, an interface vendored in the project, the
        interface the running Python would import (read, never imported), a capability declaration
        (`--kernel flash_mla:topk_length`). A distribution's pin decides only the modules it provides."""
        from . import kernels
        from .installed import Declared, declaration_hint, installed_interface

        param = self.param

        module = callee.split(".")[0]
        # (a relative import's name, `.legacy.f`, is imported too: from a module of this package, not a kernel's)
        imported = "." in callee and module not in ("self", "cls")
        if module in self.dists:
            dists = self.dists[module]
        elif imported:
            dists = ()  # a module no kernel distribution provides: no pin of one decides it
        else:  # a bare name or an attribute of self: whatever kernel the project pins
            dists = tuple(dict.fromkeys(d for ds in self.dists.values() for d in ds))
        declared = self.explicit if isinstance(self.explicit, Declared) else None
        undecided = []
        if self.explicit and not declared and self.explicit.dist in dists:
            ok = kernels.accepts(self.explicit, self.min)
            if ok is not None:
                return self._pinned(ok, (self.explicit,), dists)
            undecided.append(f"{self.explicit} from {self.explicit.source}")
        found = kernels.project_decision(self.path, dists, self.min) if dists else None
        if found is not None:
            if found.accepts is not None:
                return self._pinned(found.accepts, found.pins, dists)
            undecided.append(found.describe())
        memo: dict = {}
        iface = kernels.vendored_interface(self.path, callee, param, memo)
        if iface is None and "." not in callee:
            iface = kernels.read_interface(self.path, callee, param=param, _memo=memo)
        why = kernels.interface_why(memo) if iface is None else None
        if why:  # the project's (or an installed) module binds the name in a way the reader cannot decide
            return Capability(None, f"{callee}: {why}; rewrite by hand once it is one function that takes {param}")
        if iface is not None:
            where = f"interface at {kernels.project_label(iface.path, self.root)}:{iface.line}"
            if param in iface.params:
                return Capability(True, f"{where} takes {param}", iface.params.index(param), where, iface.params)
            if not iface.has_var_kwargs:
                return Capability(False, f"{where} has no {param} parameter", decision=where, params=iface.params)
        # the installed interface decides where no release number can (a FlashMLA source build, a module no
        # kernel distribution provides); where a version pin can, the project's pins stay what decides
        versionless = not dists or dists[0] not in self.min
        installed = installed_interface(callee, param) if imported and module != "torch" and versionless else None
        if installed is not None:
            where = f"the installed interface {module} ({_shown_path(installed.path)}:{installed.line})"
            if param in installed.params:
                return Capability(True, f"{where} takes {param}", installed.params.index(param), where,
                                  installed.params)
            if not installed.has_var_kwargs:
                return Capability(False, f"{where} has no {param} parameter", decision=where, params=installed.params)
        if declared is not None and declared.module == module and declared.param == param:
            said = f"{declared} from {declared.source}"
            return Capability(True, said, decision=said)
        hint = declaration_hint(module, param)
        if not module:  # a relative import's: what reads the project found no def of it
            return Capability(None, f"`{callee.rsplit('.', 1)[0]}` (imported relatively) has no interface in this "
                                    f"project topk-migrate can read; rewrite by hand once its "
                                    f"{callee.rsplit('.', 1)[-1]} takes {param}")
        if imported and not dists:
            told = f" ({declared} from {declared.source} is about {declared.module})" if declared else ""
            return Capability(None, f"`{module}` is not a kernel module topk-migrate knows, and no interface of it is "
                                    f"in this project or importable here{told}; if its "
                                    f"{callee.rsplit('.', 1)[-1]} takes {param}, declare {hint}")
        if undecided:
            what = f"{' and '.join(undecided)} allow{'s' if len(undecided) == 1 else ''} versions both with and without {param}"
        else:
            what = f"no pin of {self._names(dists)}"
            if module in self.dists and (module,) != dists:
                what += f" (the distribution{'s' if len(dists) > 1 else ''} of {module})"
            what += " found"
        decidable = [d for d in dists if self.min.get(d)]
        if imported and dists and dists[0] not in self.min:
            # no release of the first distribution says what it takes (a source build calls itself
            # 1.0.0+<rev> before and after the parameter): only the interface can decide
            alt = f", or pin {decidable[0]}==VERSION if that is what you install" if decidable else ""
            return Capability(None, f"{what}, and {module} is not importable here; a {dists[0]} build's version "
                                    f"does not say whether it takes {param}: if the {callee.rsplit('.', 1)[-1]} your "
                                    f"engine runs takes {param}, declare {hint}{alt}")
        example = f"{(decidable or dists)[0]}==VERSION"
        return Capability(None, f"{what}; {param} needs {self._needs(dists)}; declare the kernel with "
                                f'--kernel {example} or kernel = "{example}" in [tool.topk-migrate]')

    def _pinned(self, ok: bool, pins, dists) -> Capability:
        said = "; ".join(f"{p} from {p.source}" for p in pins)
        if ok:
            return Capability(True, said, decision=said)
        return Capability(False, f"{said} ({self.param} needs {self._needs(dists)})", decision=said)

    def _needs(self, dists) -> str:
        """The first version of each providing distribution that accepts topk_length."""
        known = [f"{d}>={self.min[d]}" for d in dists if self.min.get(d)]
        never = [d for d in dists if d in self.min and self.min[d] is None]
        text = " or ".join(known) or f"a kernel with {self.param}"
        return text + (f", and no {self._names(never)} release has it" if never else "")

    @staticmethod
    def _names(dists) -> str:
        return " or ".join(dists)


def _shown_path(path: str) -> str:
    """An installed file as a reader recognizes it: from its site-packages (or checkout) directory."""
    from .project import project_root

    root = project_root(path)
    return os.path.join(os.path.basename(root), os.path.relpath(path, root)).replace(os.sep, "/")


def kernel_gate(path: str, kernel: Optional[str], rule) -> KernelGate:
    """A function callee -> Capability for calls in the file at `path`: does the kernel take `rule`'s parameter."""
    return KernelGate(path, kernel, rule.param or "", rule.min_kernel)


def quick_sites(source: str, tree: "ast.Module", path: str, kernel: Optional[str] = None, enable: Sequence[str] = (),
                disable: Sequence[str] = ()) -> Optional[list]:
    """The sites of `source` (a narrowed file; `tree` its AST) from the quick classifiers of the rules
    that read it, as the engine reports them; None if one of those rules has none or declines. The kernel gate is the
    one the rule's sites hook gets (its INFO's parameter and first kernel releases)."""
    sites = []
    for s in rules.enabled(enable, disable):
        if not s.has_sites or not any(e in source for e in s.entry_points):
            continue
        if not s.quick:
            return None
        module = importlib.import_module(f"{s.module}.{s.quick}")
        gate = kernel_gate(path, kernel, s)
        found = module.quick_sites(tree, source, path, gate)
        if found is None:
            return None
        sites += [replace(site, rule=s.id, kernel=gate.decisions.get(site.callee, site.kernel)) for site in found]
    sites.sort(key=lambda site: (site.line, site.column))
    return sites


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
    from . import guard, spelling

    spelled = spelling.normal_form(source)  # identifiers as Python reads them (NFKC)
    tree = guard.parse_checked(spelled.text, path)
    m = _migrate_checked(spelled.text, guard.needs_isolation(tree), path, kernel,
                         rules.RuleOptions(tuple(metadata), lengths), (tuple(enable), tuple(disable)))
    if spelled.changed:  # classified as Python reads it; never rewritten from that text
        return Migration(source, source, spelled.sites(m.sites))
    return m


def _migrate_checked(text: str, isolate: bool, path: str, kernel: Optional[str], options: rules.RuleOptions,
                     switches=((), ())) -> Migration:
    """_migrate() on text that passed guard.parse_checked: in a child process if guard calls it risky."""
    from . import guard

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


def _migrate(source: str, path: str, kernel: Optional[str], options: rules.RuleOptions, switches=((), ())) -> Migration:
    """Each enabled site rule classifies the original text (so every site keeps its own line);
    a rule's rewrite is made on top of the rewrites before it."""
    import libcst as cst

    from .cstwalk import fast_visits
    from .files import check_rewrite, syntax_error_message

    new, sites = source, []
    try:
        with _cycles_collected_after(), fast_visits(trivia=False):  # read-only walks: no node rebuilt, no layout
            for spec in rules.enabled(*switches):
                if not spec.has_sites or not any(e in source for e in spec.entry_points):
                    continue
                rule = rules.load(spec.id)
                gate = kernel_gate(path, kernel, rule)
                out, found = rule.sites(source, path, gate, options)
                sites += [replace(s, rule=spec.id, kernel=gate.decisions.get(s.callee, s.kernel)) for s in found]
                if out != source:
                    new = out if new == source else rule.sites(new, path, gate, options)[0]
    except cst.ParserSyntaxError as e:  # CPython's message names the right line and spots Python 2
        raise InputError(syntax_error_message(source, path) or f"syntax error: {e.message}") from None
    if new != source:
        check_rewrite(source, new, path)  # never hand back code that does not parse, not even as a diff
    sites.sort(key=lambda s: (s.line, s.column))
    return Migration(source, new, sites)


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
        import difflib

        before, after, labels = self._diff_of
        self._diff = "".join(difflib.unified_diff(before.splitlines(True), after.splitlines(True), *labels))
        self._diff_of = None
    return self._diff


def _diff_set(self: FileOutcome, value: str) -> None:
    self._diff, self._diff_of = value, None


FileOutcome.diff = property(_diff_made, _diff_set)  # (after @dataclass: its __init__ sets it through the setter)


def _stdin_stat(data: bytes) -> os.stat_result:
    """A stat for bytes that are no file: decode_source records a mode and owner never used."""
    import stat

    return os.stat_result((stat.S_IFREG | 0o644, 0, 0, 1, 0, 0, len(data), 0, 0, 0))


def quick_enabled() -> bool:
    return not os.environ.get("TOPK_MIGRATE_NO_QUICK")


NARROW_BYTES = 512 * 1024  # bigger files are classified on their narrowed text (narrow.py)


@per_run
def _clean_once(directory: str) -> None:
    """Before the run's first write into a directory: remove temp files that a killed run left there."""
    from .files import remove_stale_temps

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
        try:
            if data is not None:
                raw, st = data, _stdin_stat(data)
            else:
                from .files import read_candidate

                got = read_candidate(path)
                if got is None:
                    return out  # over the size bound, and no kernel name in it: nothing to do
                raw, st = got
        except OSError as e:
            from .files import input_error

            raise input_error(e, path) from None
        if not discover.prefilter_for(everything=True).matches(raw):
            return out  # no call any rule reads, whatever a project switches on
        out.parsed = True
        # imported here, not at the top: check of a file without the kernel never needs them
        from . import guard, memory, narrow, spelling
        from .config import config_for
        from .files import decode_source

        src = decode_source(path, raw, st)
        cfg = config_for(os.path.dirname(os.path.abspath(path)))
        out.config = cfg.source
        if write and data is None:
            _clean_once(os.path.dirname(os.path.realpath(path)))
        text, kernel = src.text, kernel or cfg.kernel
        switches = (cfg.enable, cfg.disable)
        if not discover.prefilter_for(tuple(sorted(cfg.enable))).matches(raw):
            return out  # none of the rules this project runs
        site_rules = [r for r in rules.enabled(*switches) if r.has_sites]
        names = tuple(e for r in site_rules for e in r.entry_points)
        memory.check(raw, memory.PARSE_BYTES_PER_TOKEN, "parse")
        # the engine reads each identifier as Python does (NFKC); sites come back in the file's own columns,
        # and a file spelled otherwise is never rewritten from that text (spelling.py)
        spelled = spelling.normal_form(text)
        text = spelled.text
        classify_first = narrowed or len(raw) > NARROW_BYTES
        # the nesting LibCST is exposed to is measured on what it parses: the narrowed text, when it is one
        if parsed is not None and narrowed and data is not None and not spelled.changed:
            tree = parsed
        else:
            tree = guard.parse_checked(text, path, measure=not classify_first)
        if classify_first:
            cut = narrow.narrow(text, tree, names, params=tuple(r.param for r in site_rules))
            if cut == narrow.NOTHING:
                return out
            small = cut or text
            tree = guard.for_libcst(tree, text, cut, path)
        isolate = guard.needs_isolation(tree)
        if classify_first and cut is not None and not isolate and quick_enabled():
            # (before the bound on what LibCST would hold: the quick classifier holds only the parse made)
            found = quick_sites(small, tree, path, kernel, *switches)
            if found is not None:  # compliant and opt-out sites only: nothing to rewrite
                out.sites = spelled.sites(found)
                return out
        if classify_first:
            memory.check(narrow.without_stubs(small), memory.REWRITE_BYTES_PER_TOKEN, "analyse")
        del tree  # not held while LibCST runs
        if not engine:
            out.needs_engine = True
            return out
        if classify_first:
            m = _migrate_checked(small, isolate, path, kernel, cfg.options(lengths), switches)
            out.sites = spelled.sites(m.sites)  # the file's sites, whatever happens to the rewrite below
            if narrowed or not any(s.status is Status.FIXABLE for s in out.sites):
                return out
        # A rewrite is made on the whole text (LibCST must see all of it to write it back).
        memory.check(text, memory.REWRITE_BYTES_PER_TOKEN, "rewrite")
        narrowed_run = None
        if classify_first:
            narrowed_isolate, isolate = isolate, guard.needs_isolation(guard.parse_checked(text, path))
            if small == text and isolate == narrowed_isolate:  # nothing was cut: that run was this one
                narrowed_run = m
        m = narrowed_run or _migrate_checked(text, isolate, path, kernel, cfg.options(lengths), switches)
        out.sites = spelled.sites(m.sites)
        if m.changed and not narrowed and not spelled.changed:
            out._diff_of = (src.text, m.new_source, diff_labels(path))  # the diff, made if it is read
            if data is not None:
                from .files import keep_tail

                try:
                    out.new_bytes = keep_tail(src.text, m.new_source).encode(src.encoding)
                except UnicodeEncodeError as e:
                    raise InputError(f"rewrite cannot be encoded as {src.encoding} ({e.reason})") from None
            elif write:
                from .files import write_source

                write_source(src, m.new_source)
                out.written = True
    except InputError as e:
        out.error = str(e)
    except Exception as e:  # a bug of ours: report it, keep going with the other files
        import traceback

        out.error = internal_error(e) + (f"\n{traceback.format_exc()}" if verbose else "")
    return out


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
        import signal
        import threading

        self.hit, self.old = False, None
        if threading.current_thread() is threading.main_thread() and \
                signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            self.old = signal.signal(signal.SIGINT, self._on_sigint)
        return self

    def _on_sigint(self, signum, frame):
        import signal

        self.hit = True
        signal.signal(signal.SIGINT, self.old)

    def check(self) -> None:
        if self.hit:
            raise KeyboardInterrupt

    def __exit__(self, *exc):
        if self.old is not None:
            import signal

            signal.signal(signal.SIGINT, self.old)


@in_run
def run(  # noqa: PLR0913  (public API: keyword options with defaults)
        paths: Sequence[str], kernel: Optional[str] = None, write: bool = False, verbose: bool = False,
        follow_links: bool = False, note=None, progress: bool = False, lengths: Optional[str] = None) -> Report:
    """check/apply over files and directories; a walked directory honours its [tool.topk-migrate] include/exclude.

    follow_links and note (told what a walk leaves out, and why): as discover.iter_python_files.
    progress: a status line on stderr (progress.Progress) once the run takes a while.
    lengths: rules.LENGTHS, over each project's [tool.topk-migrate] lengths."""
    from . import config  # (as in process_file: importing api stays cheap)
    from .escape import printable
    from .progress import Progress

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
