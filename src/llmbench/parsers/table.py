"""The steps table of a parsed log (pandas). Apart from ``llmbench.parsers.logfile`` and
not exported by ``llmbench.parsers``: parsing and summarising a log load neither numpy
nor pandas, only the callers that want the table do."""

from __future__ import annotations

import math

import pandas as pd

from llmbench.parsers.logfile import ParsedLog
from llmbench.parsers.steps import STEP_COLUMNS, VALUE_COLUMNS


def steps_table(parsed: ParsedLog) -> pd.DataFrame:
    """One row per unique iteration of ``parsed``; columns ``STEP_COLUMNS``: ``iteration``
    (int64) then float64 values, NaN where not logged."""
    iterations = sorted(parsed.rows)
    data: dict[str, list[float] | list[int]] = {"iteration": iterations}
    for name in VALUE_COLUMNS:
        data[name] = [parsed.rows[i].get(name, math.nan) for i in iterations]
    frame = pd.DataFrame(data, columns=list(STEP_COLUMNS))
    return frame.astype({"iteration": "int64"} | dict.fromkeys(VALUE_COLUMNS, "float64"))
