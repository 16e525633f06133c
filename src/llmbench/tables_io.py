"""Writing tables atomically: a reader never sees half a Parquet or CSV file."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd


def _tmp(path: Path) -> Path:
    return path.with_name(f".{path.name}.tmp{os.getpid()}")


def write_parquet_atomic(frame: pd.DataFrame, path: str | Path) -> None:
    path = Path(path)
    tmp = _tmp(path)
    frame.to_parquet(tmp, index=False)
    os.replace(tmp, path)


def write_text_atomic(text: str, path: str | Path) -> None:
    path = Path(path)
    tmp = _tmp(path)
    tmp.write_text(text)
    os.replace(tmp, path)


def write_csv_atomic(frame: pd.DataFrame, path: str | Path) -> None:
    write_text_atomic(frame.to_csv(index=False), path)
