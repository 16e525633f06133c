"""Where space ran out, in one line.

A sweep on a full disk first fails where Snakemake writes its lock and its own log, before
any job of ours runs; Snakemake then prints logging tracebacks we cannot change. The
workflow looks at the free space of its working folder and ``results/`` when it is read
(``low_space``) and stops with one line below ``MIN_FREE_BYTES``. A job of ours that runs
out of space meanwhile says which file it was writing (``llmbench.files.job_log``).
"""

from __future__ import annotations

import errno
import os
import shutil
from collections.abc import Iterable
from pathlib import Path

MIN_FREE_BYTES = 64 << 20
"""Below 64 MiB free a sweep cannot be expected to finish: Snakemake's lock, metadata and
log, every run's log, record and steps, the tables and the plots are written there (one
embedded run writes about 1 MiB, a framework run's log can take tens of MiB)."""
DISK_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
_DISK_FULL_TEXT = ("No space left on device", "Disk quota exceeded")  # Arrow's errors


def free_bytes(path: str | Path) -> int:
    """Free space where ``path`` is (or will be: its nearest existing parent)."""
    where = Path(path).resolve()
    while not where.exists() and where != where.parent:
        where = where.parent
    return shutil.disk_usage(where).free


def low_space(folders: Iterable[str | Path]) -> str | None:
    """One line naming the first of ``folders`` with less than ``MIN_FREE_BYTES`` free;
    None when each has enough."""
    for folder in folders:
        free = free_bytes(folder)
        if free < MIN_FREE_BYTES:
            return (
                f"{folder}: {free:,} bytes free on its filesystem; a sweep needs at least "
                f"{MIN_FREE_BYTES >> 20} MiB there (Snakemake's lock and log, the runs' "
                "logs and tables): free space and run the same command again"
            )
    return None


def not_writable(folders: Iterable[str | Path]) -> str | None:
    """One line naming the first of ``folders`` (or, where it does not exist yet, the
    folder it would be made in) that cannot be written: a read-only file system or no
    write permission; None when each can be."""
    for folder in folders:
        where = Path(folder)
        while not where.exists() and where != where.parent:
            where = where.parent
        try:
            read_only = bool(os.statvfs(where).f_flag & os.ST_RDONLY)
        except OSError:
            read_only = False
        if read_only or not os.access(where, os.W_OK):
            why = "a read-only file system" if read_only else "no write permission"
            return (
                f"{folder}: cannot be written ({why} at {where}); the sweep has jobs to run "
                "that write there; allowed: a folder this user can write (run the sweep "
                "where it can, or make it writable)"
            )
    return None


def disk_full_error(error: BaseException) -> OSError | None:
    """The OSError behind ``error`` (itself, its cause or context) that says the disk or
    the quota is full; None when none does."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and (
            current.errno in DISK_FULL_ERRNOS or any(t in str(current) for t in _DISK_FULL_TEXT)
        ):
            return current
        current = current.__cause__ or current.__context__
    return None
