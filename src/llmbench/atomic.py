"""Writing files atomically (JSON, text, Parquet, CSV): via a temporary file in the same
folder and a rename, so a reader never sees half a file."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd


def _tmp(path: Path) -> Path:
    return path.with_name(f".{path.name}.tmp{os.getpid()}")


def write_parquet_atomic(
    frame: pd.DataFrame, path: str | Path, row_group_size: int | None = None
) -> None:
    """``row_group_size``: rows per row group (pyarrow's default when None); smaller
    groups let a reader that filters on sorted keys skip more of the file."""
    path = Path(path)
    tmp = _tmp(path)
    frame.to_parquet(tmp, index=False, row_group_size=row_group_size)
    os.replace(tmp, path)


def write_text_atomic(text: str, path: str | Path) -> None:
    path = Path(path)
    tmp = _tmp(path)
    tmp.write_text(text)
    os.replace(tmp, path)


def write_json_atomic(path: str | Path, data: Any) -> None:
    """``data`` as indented JSON with sorted keys (run records, summaries)."""
    write_text_atomic(json.dumps(data, indent=2, sort_keys=True) + "\n", path)


def write_csv_atomic(frame: pd.DataFrame, path: str | Path) -> None:
    write_text_atomic(csv_text(frame), path)


def csv_text(frame: pd.DataFrame) -> str:
    """``frame.to_csv(index=False)``, byte for byte, but with float and UTC timestamp
    columns turned into text first in bulk (pandas formats those a value at a time: for a
    runs table of 100,000 rows this halves the time)."""
    columns = {}
    for name in frame.columns:
        col = frame[name]
        if col.dtype == "float64":
            col = _float_text(col)
        elif isinstance(col.dtype, pd.DatetimeTZDtype) and str(col.dtype.tz) == "UTC":
            col = _utc_text(col)
        columns[name] = col
    return pd.DataFrame(columns, index=frame.index).to_csv(index=False)


def _float_text(col: pd.Series) -> pd.Series:
    # pandas writes numpy's shortest round-trip repr, which is Python's repr(float)
    values = col.to_numpy()
    text = np.array([repr(v) for v in values.tolist()], dtype=object)
    text[np.isnan(values)] = None
    return pd.Series(text, index=col.index, dtype=object)


def _utc_text(col: pd.Series) -> pd.Series:
    # pandas writes a UTC column as the naive one (seconds, or the finer unit some value
    # needs) plus "+00:00"; but where every value is midnight the naive one is dates only
    naive = col.dt.tz_convert(None)
    text = naive.astype(str)
    valid = naive.dropna()
    if len(valid) and (valid == valid.dt.normalize()).all():
        text = text + " 00:00:00"
    return (text + "+00:00").where(col.notna())
