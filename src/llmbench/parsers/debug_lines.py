"""The lines of a debug file, read within fixed bounds whatever the file holds.

Only a regular file is opened: a named pipe, a device or a folder is refused from its
``stat``, before any ``open`` (a pipe with no writer would block, ``/dev/zero`` never ends).
The file is read in blocks and decoded as it comes (UTF-8, or UTF-16 when it starts with a
byte order mark or with every other byte NUL), so memory stays near ``WINDOW_CHARS`` plus
one block however long a line is: a line longer than the window is handed on in windows of
``WINDOW_CHARS`` characters that overlap by ``OVERLAP_CHARS``, so a record anywhere in it
(a record is far shorter than the overlap) lies whole in some window. Every piece is
cleaned of what a terminal or a crash leaves in it: NUL bytes, ANSI colour and cursor
codes, the carriage return of CRLF.
"""

from __future__ import annotations

import codecs
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from llmbench.files.regular_file import file_kind, open_regular

WINDOW_CHARS = 4096
"""The longest piece of a line handed on at once; longer lines come in windows."""
OVERLAP_CHARS = 1024
"""How far consecutive windows of one long line overlap: longer than any NCCL record."""
BLOCK_BYTES = 1 << 16
UTF16_SNIFF_BYTES = 1024

_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|[@-Z\\-_])|\x1b|\x00|\r")


@dataclass(frozen=True)
class Piece:
    """A line, or one window of a long line, as text."""

    number: int  # the line's number in the file, from 1
    text: str
    cut: bool = False  # the file ends inside this line (no newline after it)


def refusal(path: Path) -> str | None:
    """Why ``path`` is not read (from its ``stat``, without opening it), or None."""
    try:
        info = os.stat(path)
    except OSError as err:
        return err.strerror or str(err)
    if stat.S_ISREG(info.st_mode):
        return None
    return "not a regular file but " + file_kind(info.st_mode)


def clean(text: str) -> str:
    """``text`` without NUL bytes, ANSI escape codes and carriage returns."""
    return _ANSI.sub("", text) if ("\x1b" in text or "\x00" in text or "\r" in text) else text


def _decoder(head: bytes) -> codecs.IncrementalDecoder:
    if head.startswith(codecs.BOM_UTF16_LE) or head.startswith(codecs.BOM_UTF16_BE):
        return codecs.getincrementaldecoder("utf-16")(errors="replace")
    even, odd = head[0::2], head[1::2]
    if len(odd) >= 32:
        if odd.count(0) > 0.9 * len(odd) and even.count(0) < 0.1 * len(even):
            return codecs.getincrementaldecoder("utf-16-le")(errors="replace")
        if even.count(0) > 0.9 * len(even) and odd.count(0) < 0.1 * len(odd):
            return codecs.getincrementaldecoder("utf-16-be")(errors="replace")
    return codecs.getincrementaldecoder("utf-8")(errors="replace")


def _decoded(path: Path) -> Iterator[str]:
    with open_regular(path) as fh:
        head = fh.read(UTF16_SNIFF_BYTES)
        decoder = _decoder(head)
        block = head
        while block:
            yield decoder.decode(block)
            block = fh.read(BLOCK_BYTES)
        yield decoder.decode(b"", final=True)


def pieces(path: Path) -> Iterator[Piece]:
    """The cleaned lines of ``path``, long lines in overlapping windows (module doc).
    Raises ``OSError`` when the file cannot be read (callers check ``refusal`` first)."""
    number, pending = 1, ""
    for chunk in _decoded(path):
        parts = (pending + chunk).split("\n")
        pending = parts.pop()
        for part in parts:
            yield from _windows(number, part, cut=False)
            number += 1
        if len(pending) > WINDOW_CHARS:  # a long line: hand on its windows so far
            start = 0
            while len(pending) - start > WINDOW_CHARS:
                yield Piece(number, clean(pending[start : start + WINDOW_CHARS]))
                start += WINDOW_CHARS - OVERLAP_CHARS
            pending = pending[start:]
    if pending:
        yield from _windows(number, pending, cut=True)


def _windows(number: int, line: str, cut: bool) -> Iterator[Piece]:
    step = WINDOW_CHARS - OVERLAP_CHARS
    start = 0
    while len(line) - start > WINDOW_CHARS:
        yield Piece(number, clean(line[start : start + WINDOW_CHARS]))
        start += step
    yield Piece(number, clean(line[start:]), cut)
