"""The telemetry sample table: one row per (time, node, source, device, metric).

Long, not wide: sources differ in what they measure (RAPL an energy counter, nvidia-smi
power and clocks, /proc/stat utilisation), and a NaN in a wide table could not tell "not
measured" from "measured nothing".

Metrics (units in names): ``energy_j`` (cumulative, unwrapped counter), ``power_w``,
``sm_clock_mhz``, ``mem_clock_mhz``, ``temperature_c``, ``util`` (a fraction).
"""

from __future__ import annotations

import csv
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:  # the sampler process stays light: pandas only where tables are read
    import pandas as pd

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


def empty_frame() -> pd.DataFrame:
    import pandas as pd

    return pd.DataFrame(
        {
            "time_unix_s": pd.Series(dtype="float64"),
            **{c: pd.Series(dtype="object") for c in COLUMNS[1:5]},
            "value": pd.Series(dtype="float64"),
        }
    )


def read_samples(paths: Iterable[Path]) -> pd.DataFrame:
    """The samples of every CSV file in ``paths`` (the sampler's output), one frame; a
    file cut short by a kill loses only its last, partial row."""
    import pandas as pd

    frames = []
    for path in paths:
        try:
            frame = pd.read_csv(
                path, names=list(COLUMNS), header=None, on_bad_lines="skip", dtype={"node": str}
            )
        except (OSError, pd.errors.EmptyDataError):
            continue
        frame["time_unix_s"] = pd.to_numeric(frame["time_unix_s"], errors="coerce")
        frame["value"] = pd.to_numeric(frame["value"], errors="coerce")
        frames.append(frame.dropna(subset=["time_unix_s"]))
    if not frames:
        return empty_frame()
    return pd.concat(frames, ignore_index=True).sort_values("time_unix_s", kind="stable")
