"""Stack dumps of stuck ranks: each rank llmbench starts can be asked for its stacks.

A rank registers ``faulthandler`` for ``STACK_SIGNAL`` with a file of its own in its
working folder (the attempt folder), so the runner's watchdog can get the Python stacks of
a stuck rank even where py-spy may not attach (no ptrace rights on a cluster node). A
process that did not register is never sent the signal: the watchdog reads which signals
a process catches first (``catches_stack_signal``), since the default action would kill it.
"""

from __future__ import annotations

import faulthandler
import signal
from pathlib import Path
from typing import IO

from llmbench.core.run_folder import STACK_GLOB as STACK_FILE_GLOB
from llmbench.core.run_folder import rank_stack_name as rank_stack_file

STACK_SIGNAL = signal.SIGUSR1


def register_stack_dump(rank: int, folder: Path = Path(".")) -> IO[str]:
    """Dump every thread's stack to ``stack-rank<rank>.txt`` on ``STACK_SIGNAL``; the
    returned file stays open for the life of the process (faulthandler writes to its fd)."""
    out = open(folder / rank_stack_file(rank), "w")  # noqa: SIM115
    faulthandler.register(STACK_SIGNAL, file=out, all_threads=True)
    return out


def catches_stack_signal(pid: int) -> bool:
    """True when the process has a handler for ``STACK_SIGNAL`` (``SigCgt`` in
    ``/proc/<pid>/status``); False when it does not or is gone."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    for line in status.splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) >> (STACK_SIGNAL - 1) & 1)
    return False


def drop_empty_stack_files(folder: Path) -> None:
    """Ranks create their stack file at start; only files with a dump in them are kept."""
    for path in folder.glob(STACK_FILE_GLOB):
        if path.is_file() and path.stat().st_size == 0:
            path.unlink()
