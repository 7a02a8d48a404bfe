"""`[tool.topk-migrate]` in the pyproject.toml of the project being migrated, and the files a command
reads under the paths it is given, as their projects' include/exclude filter them."""
from __future__ import annotations

import functools
import keyword
import os
import stat
import unicodedata
from dataclasses import dataclass
from typing import Callable, Dict, Iterable, Iterator, Optional, Sequence, Tuple

from .discover import PROJECT_FILE_LIMIT, WILD_PATTERNS, Note, compile_patterns, iter_python_files, read_regular
from .model import InputError
from .project import is_site_dir, listing, planted, project_root
from .rules import LENGTHS, RuleOptions, check_ids
from .run_context import per_run


@dataclass(frozen=True)
class Config:
    kernel: Optional[str] = None  # "NAME==VERSION", like --kernel
    metadata: Tuple[str, ...] = ()  # extra dotted names known to hold clipped seqlens
    include: Tuple[str, ...] = ()
    exclude: Tuple[str, ...] = ()
    enable: Tuple[str, ...] = ()  # rule ids to run besides those on by default
    disable: Tuple[str, ...] = ()  # rule ids not to run
    source: Optional[str] = None  # the pyproject.toml it came from
    lengths: str = "reference"  # rules.LENGTHS: "derived" opts in to lengths computed at the call

    def options(self, lengths: Optional[str] = None) -> RuleOptions:
        """What the rules are told for a file of this project (`lengths`: the command line's, first)."""
        return RuleOptions(self.metadata, lengths or self.lengths)


KEYS = ("kernel", "metadata", "include", "exclude", "enable", "disable", "lengths")


def is_dotted_name(text: str) -> bool:
    """`name(.attr)*`, each part an identifier and no keyword, spelled as Python reads it (NFKC)."""
    return unicodedata.normalize("NFKC", text) == text and all(
        part.isidentifier() and not keyword.iskeyword(part) for part in text.split("."))


def _shown(value) -> str:
    """A value for a one-line error: repr keeps control characters escaped; long ones are cut."""
    r = repr(value)
    return r if len(r) <= 60 else r[:57] + "..."


def _strings(table: dict, key: str, where: str) -> Tuple[str, ...]:
    value = table.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InputError(f"{where} {key}: expected a list of strings, got {_shown(value)}")
    return tuple(value)


@per_run
def _load(pyproject: str) -> Optional[Config]:
    """[tool.topk-migrate] of one pyproject.toml, every key checked; InputError (one line) otherwise.

    Configuration is data, never code: `metadata` entries are inserted into source
    files, so only dotted names are accepted; `kernel` must parse as a requirement.
    """
    from . import bounded  # noqa: PLC0415 - on demand: bounded only for a pyproject.toml that needs parsing

    try:
        raw, st = read_regular(pyproject, PROJECT_FILE_LIMIT)
        if planted(pyproject, st):  # another user's file in a directory anyone can write to
            return None
        doc = bounded.toml(raw.decode("utf-8"))
    except OSError as e:
        raise InputError(f"{pyproject}: cannot read: {(e.strerror or str(e)).lower()}") from None
    except UnicodeDecodeError as e:
        raise InputError(f"{pyproject}: not valid UTF-8 (byte {e.start})") from None
    except ValueError as e:
        raise InputError(f"{pyproject}: cannot read [tool.topk-migrate]: {e}") from None
    tool = doc.get("tool", {})
    if not isinstance(tool, dict):
        raise InputError(f"{pyproject}: tool: expected a table, got {_shown(tool)}")
    table = tool.get("topk-migrate")
    if table is None:
        return None
    where = f"{pyproject}: [tool.topk-migrate]"
    if not isinstance(table, dict):
        raise InputError(f"{pyproject}: tool.topk-migrate: expected a table, got {_shown(table)}")
    unknown = set(table) - set(KEYS)
    if unknown:
        raise InputError(f"{where}: unknown key(s): {', '.join(map(_shown, sorted(unknown)))}")
    kernel = table.get("kernel")
    if kernel is not None:
        from .kernels import parse_pin  # noqa: PLC0415 - on demand: kernels (packaging) only for a configured kernel

        if not isinstance(kernel, str):
            raise InputError(f"{where} kernel: expected a string such as \"sglang-kernel==0.4.6\", got {_shown(kernel)}")
        try:
            parse_pin(kernel, pyproject)
        except ValueError as e:
            raise InputError(f"{where} kernel: {e}") from None
    metadata = _strings(table, "metadata", where)
    for m in metadata:
        if not is_dotted_name(m):
            raise InputError(f"{where} metadata: {_shown(m)} is not a dotted name (name.attr...); "
                             "only names are inserted into source")
    lengths = table.get("lengths", "reference")
    if lengths not in LENGTHS:
        raise InputError(f"{where} lengths: expected one of {', '.join(map(repr, LENGTHS))}, got {_shown(lengths)}")
    switched = {}
    for key in ("enable", "disable"):
        switched[key] = _strings(table, key, where)
        try:
            check_ids(switched[key], f"{where} {key}")
        except ValueError as e:
            raise InputError(str(e)) from None
    return Config(kernel, metadata, _strings(table, "include", where), _strings(table, "exclude", where),
                  switched["enable"], switched["disable"], pyproject, lengths)


@per_run
def config_for(directory: str) -> Config:
    """[tool.topk-migrate] of the project `directory` belongs to (empty if none).

    Only the pyproject.toml at the project root counts (project.project_root): one in a
    directory above the project, or above the revision `audit --rev` lays out, never does.
    An installed distribution has none (docs/project.md): a pyproject.toml at the top of
    site-packages is no distribution's settings, and governs none of them.
    """
    root = project_root(directory)
    if is_site_dir(listing(root)):
        return Config()
    candidate = os.path.join(root, "pyproject.toml")
    try:
        regular = stat.S_ISREG(os.stat(candidate).st_mode)  # a FIFO would block the read
    except OSError:
        regular = False
    return (_load(candidate) if regular else None) or Config()


@dataclass
class PathFilter:
    """include/exclude of one [tool.topk-migrate] (gitignore syntax, relative to its pyproject.toml)."""

    base: str = ""
    include: object = None
    exclude: object = None

    @classmethod
    def for_dir(cls, directory: str) -> "PathFilter":
        cfg = config_for(directory)
        if not cfg.source or not (cfg.include or cfg.exclude):
            return cls()
        include, exclude = compile_patterns(cfg.include), compile_patterns(cfg.exclude)
        for key, spec in (("include", include), ("exclude", exclude)):
            if spec is not None and spec.wild > WILD_PATTERNS:  # each file would be matched against them all
                raise InputError(f"{cfg.source}: [tool.topk-migrate] {key}: {spec.wild} wildcard patterns to match "
                                 f"each path against (at most {WILD_PATTERNS}; patterns with a literal name, start "
                                 f"or end are not counted)")
        return cls(os.path.dirname(os.path.abspath(cfg.source)), include, exclude)

    def keeps(self, abspath: str) -> bool:
        if not self.base or not abspath.startswith(self.base + os.sep):
            return True
        rel = abspath[len(self.base) + 1 :].replace(os.sep, "/")
        if self.include is not None and not self.include.match_file(rel):
            return False
        return not (self.exclude is not None and self.exclude.match_file(rel))


def dir_filters(dirs: Iterable[str]) -> Dict[str, PathFilter]:
    """The include/exclude of each directory a command is given that has one, by absolute path.
    InputError when one's configuration cannot be read; its `path` names that directory."""
    out: Dict[str, PathFilter] = {}
    for d in dirs:
        try:
            f = PathFilter.for_dir(d)
        except InputError as e:
            e.path = d
            raise
        if f.base:
            out[os.path.abspath(d)] = f
    return out


def kept(filters: Dict[str, PathFilter], path: str) -> bool:
    """Whether the filter of the given directory `path` came from keeps it (the innermost such
    directory; a file named on the command line is under none and always kept)."""
    a = os.path.abspath(path)
    best = None
    for d, f in filters.items():
        if a.startswith(d + os.sep) and (best is None or len(d) > len(best[0])):
            best = (d, f)
    return best is None or best[1].keeps(a)


def project_files(
    paths: Sequence[str], exclude: Sequence[str] = (), gitignore: bool = True,
    follow_links: bool = False, note: Optional[Note] = None,
) -> Iterator[Tuple[str, Optional[str]]]:
    """The files every command reads under `paths` (check, apply, audit, bump): discover.iter_python_files,
    each once, less what the [tool.topk-migrate] include/exclude of a directory given leaves out
    (a file named on the command line is always read). InputError: a directory's configuration
    cannot be read (its `path` names the directory)."""
    keeps = project_filter(paths)
    for path, err in iter_python_files(paths, exclude, gitignore, follow_links, note):
        if keeps is None or keeps(path):
            yield path, err


def project_filter(paths: Sequence[str]) -> Optional[Callable[[str], bool]]:
    """Whether the [tool.topk-migrate] include/exclude of the directories given keeps a file walked;
    None where none has any. InputError as project_files."""
    filters = dir_filters(p for p in paths if os.path.isdir(p))
    return functools.partial(kept, filters) if filters else None
