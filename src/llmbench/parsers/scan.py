"""Find the few interesting lines of a huge log without a Python loop over every line.

The file is read in large windows (``mmap`` where possible, else ``read``). Only regular
files are read: a named pipe or a device would block or never end. The active
needles are located over the whole window in one pass of Hyperscan (a SIMD multi-pattern
matcher) when it is installed, else with one ``bytes.find`` pass per needle (C speed, but
a pass each). Only the line around a hit is copied out, capped at ``CONTEXT_BYTES`` on
each side of the needle, so a 2 GB line never sits in memory whole; a line ends at LF or
at CR. Memory is bounded by
the window size.
"""

from __future__ import annotations

import mmap
import os
import re
import stat
import threading
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cache
from typing import Any, BinaryIO

try:  # optional accelerator; the bytes.find path gives the same hits
    import hyperscan
except ImportError:  # pragma: no cover - depends on the platform's wheels
    hyperscan = None

WINDOW_BYTES = 16 << 20
SCAN_THREADS = max(1, min(4, os.cpu_count() or 1))
"""Hyperscan releases the GIL, so mapped windows are scanned this many at a time."""
CONTEXT_BYTES = 8 << 10  # line text kept either side of a needle; a multiple of the page size


_ANSI = re.compile(rb"\x1b(?:\[[0-?]*[ -/]*[@-~]|[@-Z\\-_])")


def plain_line(line: bytes) -> bytes:
    """The line without ANSI colour and cursor codes (only lines that carry ESC pay)."""
    return _ANSI.sub(b"", line) if b"\x1b" in line else line


class NotRegularFileError(OSError):
    """The path is a named pipe, socket, device or folder, not a log file."""

    def __init__(self, kind: str) -> None:
        super().__init__(f"not a regular file ({kind})")
        self.kind = kind


_FILE_KINDS = {
    stat.S_IFIFO: "named pipe",
    stat.S_IFSOCK: "socket",
    stat.S_IFCHR: "character device",
    stat.S_IFBLK: "block device",
    stat.S_IFDIR: "folder",
}


@dataclass(frozen=True)
class Needle:
    """A literal that marks an interesting line, and the kind of line it marks."""

    text: bytes
    kind: str
    tail_only: bool = False  # only searched in the last ``tail_bytes`` of the file


@dataclass(frozen=True)
class Hit:
    kind: str
    line: bytes
    offset: int  # file offset of the (possibly capped) line start


class LineScanner:
    """Yields the hits of one window at a time, in file order.

    ``needles`` may be replaced between windows (the caller narrows it once it knows the
    framework), which is why ``scan`` reads it afresh for every window.
    """

    def __init__(
        self,
        needles: Sequence[Needle],
        tail_bytes: int,
        window_bytes: int = WINDOW_BYTES,
        context_bytes: int = CONTEXT_BYTES,
    ) -> None:
        self.needles = list(needles)
        self.tail_bytes = tail_bytes
        self.window_bytes = max(window_bytes, context_bytes)
        self.context_bytes = context_bytes

    def scan_file(self, path: str | os.PathLike[str]) -> Iterator[list[Hit]]:
        """Hits of a regular file; ``NotRegularFileError`` for anything else. Opened
        without blocking, so a named pipe with no writer is refused, not waited on."""
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            os.close(fd)
            raise NotRegularFileError(_FILE_KINDS.get(stat.S_IFMT(info.st_mode), "special file"))
        with open(fd, "rb", buffering=0) as fh:
            size = info.st_size
            aligned = (self.window_bytes % mmap.ALLOCATIONGRANULARITY == 0) and (
                self.context_bytes % mmap.ALLOCATIONGRANULARITY == 0
            )
            if not aligned:
                yield from self._scan_stream(fh)
            elif size > 0:
                yield from self._scan_mapped(fh, size)

    def scan_bytes(self, data: bytes) -> Iterator[list[Hit]]:
        """Same as ``scan_file`` over an in-memory log (tests, small inputs)."""
        size = len(data)
        for core_start in range(0, size, self.window_bytes):
            core_end = min(core_start + self.window_bytes, size)
            lo = max(0, core_start - self.context_bytes)
            hi = min(size, core_end + self.context_bytes)
            view = data[lo:hi]
            yield self._window_hits(view, lo, core_start - lo, core_end - lo, size)

    def _scan_mapped(self, fh: BinaryIO, size: int) -> Iterator[list[Hit]]:
        starts = range(0, size, self.window_bytes)
        threads = SCAN_THREADS if hyperscan is not None else 1
        if threads == 1:
            for core_start in starts:
                yield self._mapped_window(fh, size, core_start, tuple(self.needles))
            return
        # Windows are submitted with the needles known at that moment and yielded in file
        # order; at most `threads + 1` windows are mapped at once, so memory stays bounded.
        with ThreadPoolExecutor(max_workers=threads) as pool:
            pending: deque = deque()
            for core_start in starts:
                job = pool.submit(self._mapped_window, fh, size, core_start, tuple(self.needles))
                pending.append(job)
                if len(pending) > threads:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()

    def _mapped_window(
        self, fh: BinaryIO, size: int, core_start: int, needles: tuple[Needle, ...]
    ) -> list[Hit]:
        core_end = min(core_start + self.window_bytes, size)
        # window_bytes and context_bytes are page multiples, so `lo` is aligned
        lo = max(0, core_start - self.context_bytes)
        hi = min(size, core_end + self.context_bytes)
        try:
            view = mmap.mmap(fh.fileno(), hi - lo, access=mmap.ACCESS_READ, offset=lo)
        except (OSError, ValueError):  # e.g. a file that shrank under us
            return []
        with view:
            return self._window_hits(view, lo, core_start - lo, core_end - lo, size, needles)

    def _scan_stream(self, fh: BinaryIO) -> Iterator[list[Hit]]:
        """Windows that mmap cannot map (sizes not a multiple of its granularity): the
        same windows, built from ``read``."""
        context = b""
        pending = b""
        offset = 0  # file offset of context[0]
        while True:
            chunk = fh.read(self.window_bytes)
            eof = not chunk
            data = context + pending + chunk
            core_start = len(context)
            core_end = len(data) if eof else max(core_start, len(data) - self.context_bytes)
            if core_end > core_start:
                # the file size is not used here: tail needles stay active throughout
                yield self._window_hits(data, offset, core_start, core_end, None)
            if eof:
                return
            keep_from = max(0, core_end - self.context_bytes)
            context, pending = data[keep_from:core_end], data[core_end:]
            offset += keep_from

    def _window_hits(
        self,
        buf: bytes | mmap.mmap,
        buf_offset: int,
        core_start: int,
        core_end: int,
        file_size: int | None,
        needles: tuple[Needle, ...] | None = None,
    ) -> list[Hit]:
        """Hits whose needle starts in ``buf[core_start:core_end]``, sorted by position."""
        in_tail = file_size is None or buf_offset + core_end > file_size - self.tail_bytes
        needles = tuple(self.needles) if needles is None else needles
        active = tuple(n for n in needles if in_tail or not n.tail_only)
        ctx = self.context_bytes
        found: dict[tuple[int, str], Hit] = {}
        line_end: dict[bytes, int] = {}  # further hits of a needle inside one line add nothing
        for pos, needle in needle_positions(buf, core_start, core_end, active):
            if pos < line_end.get(needle.text, -1):
                continue
            floor = max(0, pos - ctx)
            start = buf.rfind(b"\n", floor, pos) + 1 or floor
            # a lone CR ends a line too (progress bars, CR-only logs); searched within the
            # line only, so a log without CRs pays for no more than its line
            start = buf.rfind(b"\r", start, pos) + 1 or start
            end = buf.find(b"\n", pos, min(len(buf), pos + ctx))
            if end == -1:
                end = min(len(buf), pos + ctx)
            if (cr := buf.find(b"\r", pos, end)) != -1:
                end = cr
            line_end[needle.text] = max(end, pos + 1)
            found.setdefault(
                (start, needle.kind), Hit(needle.kind, bytes(buf[start:end]), buf_offset + start)
            )
        return [found[key] for key in sorted(found)]


def needle_positions(
    buf: bytes | mmap.mmap, core_start: int, core_end: int, needles: tuple[Needle, ...]
) -> list[tuple[int, Needle]]:
    """(start offset, needle) of every needle occurrence starting in the core, by offset."""
    if not needles:
        return []
    if hyperscan is not None:
        return _hyperscan_positions(buf, core_start, core_end, needles)
    return _find_positions(buf, core_start, core_end, needles)


def _find_positions(
    buf: bytes | mmap.mmap, core_start: int, core_end: int, needles: tuple[Needle, ...]
) -> list[tuple[int, Needle]]:
    out = []
    for needle in needles:
        stop = core_end + len(needle.text) - 1
        pos = buf.find(needle.text, core_start, stop)
        while pos != -1 and pos < core_end:
            out.append((pos, needle))
            pos = buf.find(needle.text, pos + 1, stop)
    out.sort(key=lambda item: item[0])
    return out


@cache
def _hyperscan_database(texts: tuple[bytes, ...]) -> Any:
    database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    patterns = [_literal_pattern(text) for text in texts]
    database.compile(
        expressions=patterns,
        ids=list(range(len(texts))),
        elements=len(texts),
        flags=[0] * len(texts),
    )
    return database


_THREAD = threading.local()


def _scratch(database: Any) -> Any:
    """Hyperscan scratch space is per thread and per database."""
    scratches = _THREAD.__dict__.setdefault("scratches", {})
    if id(database) not in scratches:
        scratches[id(database)] = hyperscan.Scratch(database)
    return scratches[id(database)]


def _literal_pattern(text: bytes) -> bytes:
    """A Hyperscan expression matching ``text`` literally (every byte as a hex escape)."""
    return b"".join(b"\\x%02x" % byte for byte in text)


def _hyperscan_positions(
    buf: bytes | mmap.mmap, core_start: int, core_end: int, needles: tuple[Needle, ...]
) -> list[tuple[int, Needle]]:
    longest = max(len(n.text) for n in needles)
    stop = min(len(buf), core_end + longest - 1)
    out: list[tuple[int, Needle]] = []

    def on_match(index: int, _from: int, to: int, _flags: int, _ctx: object) -> None:
        pos = core_start + to - len(needles[index].text)
        if pos < core_end:
            out.append((pos, needles[index]))

    database = _hyperscan_database(tuple(n.text for n in needles))
    with memoryview(buf) as view:  # no copy of the window; released before unmapping
        database.scan(
            view[core_start:stop], match_event_handler=on_match, scratch=_scratch(database)
        )
    out.sort(key=lambda item: item[0])
    return out
