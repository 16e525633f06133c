"""Telemetry samples read back into one long frame (``llmbench.telemetry.samples``)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from llmbench.telemetry.samples import COLUMNS


def empty_frame() -> pd.DataFrame:
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
