"""The telemetry sample table: one row per (time, node, source, device, metric).

Long, not wide: sources differ in what they measure (RAPL an energy counter, nvidia-smi
power and clocks, /proc/stat utilisation), and a NaN in a wide table could not tell "not
measured" from "measured nothing". Reading them into a frame is
``llmbench.telemetry.frames`` (pandas), so the sampler process stays light.

Metrics (units in names): ``energy_j`` (cumulative, unwrapped counter), ``power_w``,
``sm_clock_mhz``, ``mem_clock_mhz``, ``temperature_c``, ``util`` (a fraction).
"""

from __future__ import annotations

import csv
from collections.abc import Iterable
from typing import NamedTuple

COLUMNS = ("time_unix_s", "node", "source", "device", "metric", "value")


class Sample(NamedTuple):
    time_unix_s: float
    node: str
    source: str
    device: str
    metric: str
    value: float


def write_samples(rows: Iterable[Sample], writer: csv.writer) -> None:  # type: ignore[valid-type]
    for row in rows:
        writer.writerow((f"{row.time_unix_s:.3f}", *row[1:5], repr(float(row.value))))
