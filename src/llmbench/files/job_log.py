"""A workflow job's stderr, sent to its rule's log, and its last word when the disk is full.

Without this, a job that runs out of space writes its traceback into a log that cannot be
flushed either: the job dies with exit status 120 and an empty log, and nothing says where
the space ran out. With ``job_log``, a write that fails for lack of space (ENOSPC, EDQUOT)
anywhere in the job ends it with one line naming the file (or the job's first output when
the error does not name one) and the free bytes there, on the stderr Snakemake shows and in
the log as far as it still takes it; exit status 1. Other errors keep their traceback.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Sequence
from types import TracebackType

from llmbench.files.disk_space import disk_full_error, free_bytes


def job_log(log_path: str, outputs: Sequence[str] = ()) -> None:
    """Send this process's stderr to ``log_path`` and say a full disk in one line."""
    sys.stderr = open(log_path, "w")  # noqa: SIM115 (it lives as long as the job)
    previous = sys.excepthook

    def hook(kind: type[BaseException], error: BaseException, tb: TracebackType | None) -> None:
        full = disk_full_error(error)
        if full is None:
            previous(kind, error, tb)
            return
        where = full.filename or (outputs[0] if outputs else ".")
        line = (
            f"llmbench: error: no space left on device writing {where} "
            f"({_free(where)} bytes free there); free space and run the same command again"
        )
        log, sys.stderr = sys.stderr, sys.__stderr__
        with contextlib.suppress(OSError):
            print(line, file=log)
            log.close()  # its unflushed text would fail again at exit (status 120)
        print(line, file=sys.stderr)

    sys.excepthook = hook


def _free(path: str) -> str:
    try:
        return f"{free_bytes(path):,}"
    except OSError:
        return "?"
