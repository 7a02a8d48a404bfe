"""Which bytes can hold a kernel call at all: the prefilter every scan runs before anything is parsed.

A Prefilter is a value: the scan that needs one builds it (prefilter_for, or Prefilter(needles)) and hands it
to what reads the files (audit's scanners and workers, bump's, the rule's project scan). No module state
decides what a scan looks for; may_hold_site and file_may_hold_site are the rules on by default, check's."""
from __future__ import annotations

import codecs
import functools
import os
import re
import unicodedata
from typing import List, Optional, Sequence, Tuple

from .reads import SCAN_WINDOW, open_regular


class Prefilter:
    """Bytes that cannot hold a call of any needle are never parsed.

    Every spelling the resolver knows ends in a needle (an entry point of an enabled rule).
    The needles are covered by a few shared fragments (`sparse_` for the prefill names): one
    scan per fragment rules out most files, and the needles are searched only where one is.

    Python reads identifiers in their NFKC form (PEP 3131): the name spelled with U+FB02 (the fl
    ligature) or U+FF46 (a fullwidth f) is flash_mla_sparse_fwd when the code runs. Bytes with none
    of the needles are looked at again only where they are not all ASCII (`_spelled`): decoded as
    Python decodes them, NFKC-normalized, and searched for the needles. A file of ASCII bytes costs
    one more scan at memory speed (bytes.isascii), nothing else.
    """

    def __init__(self, needles: Sequence[bytes]):
        self.needles = tuple(sorted(set(needles)))
        self.groups = _cover(self.needles)  # (fragment, needles holding it)
        self.words = tuple(n.decode("ascii", "replace") for n in self.needles)
        # kept across windows: a name across the cut is still seen, however spelled (a letter Python reads
        # as ASCII takes at most 4 bytes of UTF-8)
        self.carry = _MAX_UTF8 * max(map(len, self.needles), default=1) - 1

    def matches(self, data) -> bool:
        return self.find(data, len(data))

    def matches_file(self, path: str, buf: Optional[bytearray] = None) -> bool:
        """matches() of a file, read a window at a time into `buf` (a SCAN_WINDOW-byte buffer a caller
        reuses from file to file), so a scan allocates nothing per file and its memory stays flat however
        large a file is. OSError, as read_regular, for what is not a regular file (never blocks on a FIFO)
        or cannot be read."""
        fd, st = open_regular(path)
        try:
            if buf is None:
                buf = bytearray(SCAN_WINDOW)
            view = memoryview(buf)
            have = total = 0  # bytes carried over at the start of buf; bytes read so far
            foreign = None  # the file's codec is not UTF-8: known from its first window
            while True:
                want = len(buf) - have
                got = os.readv(fd, [view[have:]])
                total += got
                end = have + got
                if foreign is None and got:
                    foreign = declares_other_codec(view[:end])
                if got and self.find(buf, end, foreign):
                    return True
                if got < want and total >= st.st_size or not got:
                    return False  # the end (a short read at or past the size fstat gave)
                have = min(self.carry, end, len(buf) // 2)  # (a small test buffer still reads on)
                view[:have] = bytes(view[end - have:end])
        finally:
            os.close(fd)

    def find(self, buf, end: int, foreign: Optional[bool] = None) -> bool:
        """Whether buf[:end] may hold a needle. foreign: whether the file declares a codec other than
        UTF-8 (declares_other_codec of its first window); None: buf is the file's start, read it there."""
        if any(buf.find(frag, 0, end) >= 0 and any(buf.find(n, 0, end) >= 0 for n in group)
               for frag, group in self.groups):
            return True
        return self._spelled(buf, end, foreign)

    def _spelled(self, buf, end: int, foreign: Optional[bool]) -> bool:
        """A needle Python reads in buf[:end] spelled with non-ASCII characters (NFKC-equal to it)."""
        data = buf if end == len(buf) else bytes(memoryview(buf)[:end])
        if data.isascii():
            return False
        if foreign is None:
            foreign = declares_other_codec(data)
        if foreign:
            return True  # its non-ASCII bytes are other characters than UTF-8 says: the engine decodes them
        text = bytes(data).decode("utf-8", "surrogateescape")  # bytes Python cannot decode run nowhere
        if unicodedata.is_normalized("NFKC", text):
            return False  # read as written: the byte search said it all
        text = unicodedata.normalize("NFKC", text)
        return any(w in text for w in self.words)


_MAX_UTF8 = 4  # bytes of the longest UTF-8 character
_TWO_LINES = re.compile(rb"[^\r\n]*(?:\r\n|\r|\n)?[^\r\n]*")
_CODING = re.compile(rb"coding[:=][ \t]*([-\w.]+)")


def declares_other_codec(data) -> bool:
    """Whether the first two lines of `data` (a file's start) may hold a PEP 263 cookie naming a codec
    other than UTF-8 (a codec Python does not know included): over-approximated, any `coding:` or
    `coding=` in them counts, in a comment or not."""
    for m in _CODING.finditer(data, 0, _TWO_LINES.match(data).end()):
        try:
            if codecs.lookup(m.group(1).decode("ascii")).name != "utf-8":
                return True
        except (LookupError, UnicodeDecodeError):
            return True
    return False


def _cover(needles: Sequence[bytes], shortest: int = 6) -> List[Tuple[bytes, Tuple[bytes, ...]]]:
    """Greedy: the longest substring (of at least `shortest` bytes) shared by the most needles
    not yet covered, until every needle is; a needle no other shares is its own fragment."""
    left, out = list(needles), []
    while left:
        best, holders = left[0], [left[0]]
        for n in left:
            for i in range(len(n)):
                for j in range(i + shortest, len(n) + 1):
                    frag = n[i:j]
                    have = [m for m in left if frag in m]
                    if (len(have), len(frag)) > (len(holders), len(best)):
                        best, holders = frag, have
        out.append((best, tuple(holders)))
        left = [n for n in left if n not in holders]
    return out


@functools.lru_cache(maxsize=None)
def prefilter_for(enable: Tuple[str, ...] = (), everything: bool = False) -> Prefilter:
    """The prefilter of the site rules on by default plus `enable` (everything: of every site rule)."""
    from ..rules import site_needles  # noqa: PLC0415 - self-contained: files, model, discover read alone (test_unreadable_file)

    return Prefilter(site_needles(enable, everything))


def may_hold_site(data: bytes) -> bool:
    """Whether `data` may hold a call of a site rule on by default (prefilter_for()): what check reads for.
    A scan that looks for other names (audit: every site rule's; bump: two releases') hands its own
    Prefilter down and asks it (Prefilter.matches, matches_file)."""
    return prefilter_for().matches(data)


def file_may_hold_site(path: str, buf: Optional[bytearray] = None) -> bool:
    """may_hold_site() of a file: prefilter_for().matches_file(path, buf)."""
    return prefilter_for().matches_file(path, buf)

