"""``step_clock.csv``: when each training step started and ended, in Unix seconds.

Rank 0 of a run with telemetry (``LLMBENCH_TELEMETRY`` set by the runner) writes one line
per step into its working directory, the attempt folder; ``llmbench.telemetry.results``
aligns the samplers' power readings with the step window by it. Standard library only:
the entry points import it inside the training containers.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TextIO

from llmbench.core.run_folder import STEP_CLOCK as STEP_CLOCK_FILE

TELEMETRY_ENV = "LLMBENCH_TELEMETRY"
HEADER = "iteration,start_unix_s,end_unix_s\n"


def open_step_clock(rank: int, folder: str | Path = ".") -> TextIO | None:
    """The clock file, open for writing, on rank 0 of a run with telemetry; else None."""
    if rank != 0 or not os.environ.get(TELEMETRY_ENV):
        return None
    clock = open(Path(folder, STEP_CLOCK_FILE), "w", buffering=1)  # noqa: SIM115 - caller closes
    clock.write(HEADER)
    return clock


def record_step(clock: TextIO, iteration: int, start_s: float, end_s: float) -> None:
    """One line; line-buffered, so a run that dies keeps the steps it finished."""
    clock.write(f"{iteration},{start_s:.6f},{end_s:.6f}\n")
