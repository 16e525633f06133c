"""Reading a file that must be a regular file. It is opened without blocking and checked
before the first read: a named pipe with no writer would block ``open`` or ``read``
forever, a device can be endless, and a folder is never what was meant."""

from __future__ import annotations

import errno
import os
import stat
from typing import BinaryIO

_KINDS = {
    stat.S_IFIFO: "a named pipe",
    stat.S_IFSOCK: "a socket",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFDIR: "a folder",
}


def file_kind(mode: int) -> str:
    """What a file that is not a regular one is ("a named pipe", ...), from its mode."""
    return _KINDS.get(stat.S_IFMT(mode), "a special file")


class NotRegularFile(OSError):
    """``path`` exists but is not a regular file; ``strerror`` says what it is."""


class TooLarge(OSError):
    """A regular file larger than the reader allows."""


def open_regular(path: str | os.PathLike[str], max_bytes: int | None = None) -> BinaryIO:
    """``path`` opened for reading in binary mode, or ``NotRegularFile``/``TooLarge``
    (both ``OSError``, as a missing or unreadable file is)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = file_kind(info.st_mode)
            raise NotRegularFile(errno.EINVAL, f"not a regular file but {kind}", os.fspath(path))
        if max_bytes is not None and info.st_size > max_bytes:
            raise TooLarge(
                errno.EFBIG, f"{info.st_size} bytes, more than {max_bytes}", os.fspath(path)
            )
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return open(fd, "rb")


def read_regular(path: str | os.PathLike[str], max_bytes: int | None = None) -> bytes:
    """The bytes of the regular file ``path`` (``open_regular``)."""
    with open_regular(path, max_bytes) as fh:
        return fh.read()


def regular_file_problem(path: str | os.PathLike[str], max_bytes: int | None = None) -> str | None:
    """Why ``path`` is not a regular file of at most ``max_bytes`` ("missing", "not a
    regular file but a named pipe", "N bytes, more than M"), found without opening it;
    None when it is one."""
    try:
        info = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):  # below a file: not there either
        return "missing"
    except OSError as err:
        return why_unreadable(err)
    if not stat.S_ISREG(info.st_mode):
        return f"not a regular file but {file_kind(info.st_mode)}"
    if max_bytes is not None and info.st_size > max_bytes:
        return f"{info.st_size} bytes, more than {max_bytes}"
    return None


def why_unreadable(err: OSError) -> str:
    """The reason an ``OSError`` of reading gives, without the path (callers name it)."""
    return err.strerror or str(err) or type(err).__name__
