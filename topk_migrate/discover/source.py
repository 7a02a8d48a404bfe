"""Where the walk reads a tree: the file system (DISK), or a tree known by the list of its files (a git commit's
blobs: ListedTree). The walk (walk.py) asks a source only these questions, so one walker, with one set of
rules (what is a Python file, hidden folders, --exclude, ignore files, symlinks, each file once), serves both;
reading a file's bytes is the caller's (on disk the scanners; for a commit audit.rev, bounded, from git).

A source's paths are this machine's: a ListedTree is read at the place of a directory (`root`), so a walk of
it yields the paths the same walk on disk would, and --exclude and the config's include/exclude read alike."""
from __future__ import annotations

import os
from typing import Dict, Iterable, List, Optional, Set

from .reads import why_unreadable


def _name(entry) -> str:
    return entry.name


class DiskTree:
    """The file system. Ignore files (.gitignore, .git/info/exclude) are read and git is asked which files it
    tracks (walk.Tracked); what the walk meets is os.scandir's entries."""

    ignore_files = True
    realpath = staticmethod(os.path.realpath)
    isdir = staticmethod(os.path.isdir)
    isfile = staticmethod(os.path.isfile)
    why_unreadable = staticmethod(why_unreadable)

    @staticmethod
    def dir_key(d: str) -> tuple:
        """What tells one directory from another however reached (a bind mount, a symlink): OSError if none."""
        st = os.stat(d)
        return st.st_dev, st.st_ino

    @staticmethod
    def entries(d: str) -> list:
        """The directory's entries, sorted by name; OSError if it cannot be listed."""
        with os.scandir(d) as it:
            return sorted(it, key=_name)


DISK = DiskTree()


class _Entry:
    """A ListedTree's entry, as the walk reads an os.DirEntry: never a symlink, a directory or a regular file."""

    __slots__ = ("name", "path", "_dir")

    def __init__(self, name: str, path: str, is_dir: bool):
        self.name, self.path, self._dir = name, path, is_dir

    def is_dir(self) -> bool:
        return self._dir

    def is_file(self) -> bool:
        return not self._dir

    def is_symlink(self) -> bool:
        return False


class _Dir:
    __slots__ = ("path", "prefix", "subdirs", "files")

    def __init__(self, path: str):
        self.path: str = path
        self.prefix = _prefix(path)  # its path and a separator: what its entries' paths begin with
        self.subdirs: Dict[str, "_Dir"] = {}
        self.files: Set[str] = set()


def _prefix(path: str) -> str:
    return path if path.endswith(os.sep) else path + os.sep  # (os.path.join's, for a path and one name)


class ListedTree:
    """A tree known by the list of its files, '/'-separated and relative to its top, read at the place of the
    directory `root` (a git commit's blobs, read where the work tree holds them: audit.rev).

    Its files are regular files (the walk yields them; their bytes are read by whoever listed them). `opaque`
    paths (a commit's symlinks: a path string, not a file to read) make their directories, but are no entry
    of them, and named on their own they are nothing, not an error. A path the tree does not hold is the
    error line `missing`. Every file of a commit is tracked: no ignore file applies (ignore_files is False).

    Built in time linear in the listing's characters whatever its depth (each path is split once and
    followed down a tree of dicts; a directory's path is joined once, when it is first met). A walk costs
    the depth of each directory it enters (its path, its components): with `max_depth`, a file more
    directories deep is left out of the tree (kept in `beyond`, for the caller), so that no listing makes
    the walk quadratic in its size (a commit's tree has no depth limit; a file system's path has PATH_MAX)."""

    ignore_files = False

    def __init__(self, root: str, files: Iterable[str], opaque: Iterable[str] = (),
                 missing: str = "no such file or directory", max_depth: Optional[int] = None):
        self.root = os.path.normpath(os.path.abspath(root))
        self.missing = missing
        top = _Dir(self.root)
        self._dirs: Dict[str, _Dir] = {self.root: top}
        self._files: Set[str] = set()
        self._opaque: Set[str] = set()
        self.beyond: List[str] = []  # files more than max_depth directories deep, not in the tree
        deep = (lambda rel: rel.count("/") > max_depth) if max_depth is not None else (lambda rel: False)
        for rel in files:
            if deep(rel):
                self.beyond.append(rel)
                continue
            node, name = self._parent(top, rel)
            node.files.add(name)
            self._files.add(node.prefix + name)
        for rel in opaque:
            if deep(rel):
                continue  # (nothing to read there either)
            node, name = self._parent(top, rel)
            self._opaque.add(node.prefix + name)

    def _parent(self, node: _Dir, rel: str):
        parts = rel.split("/")
        for c in parts[:-1]:
            sub = node.subdirs.get(c)
            if sub is None:
                sub = node.subdirs[c] = _Dir(node.prefix + c)
                self._dirs[sub.path] = sub
            node = sub
        return node, parts[-1]

    @staticmethod
    def realpath(path: str) -> str:
        return os.path.normpath(os.path.abspath(path))  # nothing is a symlink to follow

    def isdir(self, path: str) -> bool:
        return self.realpath(path) in self._dirs

    def isfile(self, path: str) -> bool:
        return self.realpath(path) in self._files

    def why_unreadable(self, path: str) -> Optional[str]:
        """`missing` for a path the tree does not hold; None for an opaque one (nothing to read, no error)."""
        return None if self.realpath(path) in self._opaque else self.missing

    def dir_key(self, d: str) -> str:
        d = self.realpath(d)
        if d not in self._dirs:
            raise FileNotFoundError(2, self.missing)
        return d

    def entries(self, d: str) -> List[_Entry]:
        node = self._dirs.get(d) or self._dirs.get(self.realpath(d))  # (the walk asks by the paths it was given)
        if node is None:
            raise FileNotFoundError(2, self.missing)
        pre = _prefix(d)
        out = [_Entry(n, pre + n, True) for n in node.subdirs]
        out += [_Entry(n, pre + n, False) for n in node.files]
        return sorted(out, key=_name)
