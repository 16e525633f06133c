"""Parquet and CSV tables written atomically (``llmbench.files.atomic.write_atomic``). Apart
from ``llmbench.files.atomic`` because these need numpy, pandas and pyarrow, which a train job
loads only after its ranks started."""

from __future__ import annotations

import csv
import functools
import io
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from llmbench.files.atomic import write_atomic, write_text_atomic


def write_parquet_atomic(
    frame: pd.DataFrame, path: str | Path, row_group_size: int | None = None
) -> None:
    """``frame.to_parquet(path, index=False)`` (the same table and pandas metadata, so
    ``pd.read_parquet`` gives the frame back), except that float columns are not
    dictionary-encoded: measured values are nearly all distinct, so Parquet's dictionary
    hashes every value only to give up on it (40 % of the write time of a steps table of 5
    million rows, and a fifth larger a file). ``row_group_size``: rows per row group
    (pyarrow's default when None); smaller groups let a reader that filters on sorted keys
    skip more of the file."""
    table = pa.Table.from_pandas(frame, preserve_index=False)
    columns = _dictionary_columns(table.schema)
    write_atomic(
        path,
        lambda tmp: pq.write_table(
            table, tmp, row_group_size=row_group_size, use_dictionary=columns
        ),
    )


def _dictionary_columns(schema: pa.Schema) -> list[str]:
    """Columns worth a Parquet dictionary: all but floats (and nested types, which
    pyarrow's list of names cannot address)."""
    return [
        field.name
        for field in schema
        if not pa.types.is_floating(field.type) and not pa.types.is_nested(field.type)
    ]


def write_csv_atomic(frame: pd.DataFrame, path: str | Path) -> None:
    write_text_atomic(csv_text(frame), path)


def csv_text(frame: pd.DataFrame) -> str:
    """``frame.to_csv(index=False)``, byte for byte, built column by column: every column is
    turned into its CSV fields in bulk (strings and repeated values formatted once per
    distinct value, integers and most floats by Arrow) and the rows joined by Arrow.
    pandas formats and writes a value at a time: for a runs table of 100,000 rows this is
    8x faster. A frame with a column type not listed here is written by pandas."""
    fields = [_csv_fields(frame[name]) for name in frame.columns] if frame.shape[1] > 1 else []
    if not fields or any(f is None for f in fields):
        return _pandas_csv(frame)
    header = ",".join(_quoted(str(name)) for name in frame.columns)
    if not len(frame):
        return header + "\n"
    rows = pc.binary_join_element_wise(*fields, ",")
    return header + "\n" + "\n".join(rows.to_pylist()) + "\n"


def _pandas_csv(frame: pd.DataFrame) -> str:
    # floats and UTC times turned into text first in bulk (pandas formats those a value at
    # a time)
    columns = {}
    for name in frame.columns:
        col = frame[name]
        if col.dtype == "float64":
            col = _float_text(col)
        elif _is_utc(col):
            col = _utc_text(col)
        columns[name] = col
    return pd.DataFrame(columns, index=frame.index).to_csv(index=False)


def _is_utc(col: pd.Series) -> bool:
    return isinstance(col.dtype, pd.DatetimeTZDtype) and str(col.dtype.tz) == "UTC"


@functools.cache
def _quote_pattern() -> str:
    """A regex class of the ASCII characters for which this Python's ``csv`` writer (as
    pandas calls it: minimal quoting, lines ended by a newline) quotes a field; no other
    character can make it quote."""
    found = []
    for code in range(128):
        buffer = io.StringIO()
        csv.writer(buffer, lineterminator="\n").writerow([chr(code), "x"])
        if buffer.getvalue().startswith('"'):
            found.append(re.escape(chr(code)))
    return "[" + "".join(found) + "]"


def _quoted(text: str) -> str:
    """``text`` as one field among several, as the ``csv`` writer writes it."""
    if not text or not re.search(_quote_pattern(), text):
        return text
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerow([text, ""])
    return buffer.getvalue()[:-2]  # less the empty second field and the newline


def _by_value(col: pd.Series, text: Callable[[Any], str]) -> pa.Array:
    """``text`` of each distinct non-null value, gathered per row ("" for nulls)."""
    codes, uniques = pd.factorize(col, use_na_sentinel=True)
    texts = pa.array([*(text(v) for v in uniques.tolist()), ""], pa.string())
    return texts.take(pa.array(np.where(codes < 0, len(uniques), codes)))


def _csv_fields(col: pd.Series) -> pa.Array | None:
    """The CSV field of every value of ``col`` (an Arrow string array without nulls), as
    pandas writes it; None for a type not handled here."""
    dtype = col.dtype
    if dtype == "float64":
        return _float_fields(col.to_numpy())
    if dtype == "int64" or isinstance(dtype, pd.Int64Dtype):
        return pc.fill_null(pc.cast(pa.array(col, pa.int64()), pa.string()), "")
    if isinstance(dtype, pd.StringDtype):
        strings = pc.fill_null(pa.array(col, pa.large_string()), "")
        special = pc.match_substring_regex(strings, _quote_pattern())
        if pc.any(special).as_py():
            strings = pa.array([_quoted(v) for v in strings.to_pylist()], pa.large_string())
        return strings.cast(pa.string())
    if dtype == "bool" or isinstance(dtype, pd.BooleanDtype):
        return _by_value(col, str)
    if _is_utc(col):
        return pa.array(_utc_text(col).fillna(""), pa.string())
    return None


# Arrow writes a float with the same shortest round-trip digits as Python's repr, and in
# the same notation for 1e-4 <= |x| < 1e10 but for whole numbers ("12" where repr writes
# "12.0"); outside that range (and for 0) the notations differ ("1e-5" and "1e-05").
_ARROW_SAME = (1e-4, 1e10)


def _float_fields(values: np.ndarray) -> pa.Array:
    """``repr`` of every float ("" for NaN), as pandas writes them: Arrow's text inside
    ``_ARROW_SAME`` (".0" added to whole numbers), ``repr`` of each distinct value
    outside it (-0.0 is not 0.0). A tenth of the time of a ``repr`` per value."""
    magnitude = np.abs(values)
    arrow = (magnitude >= _ARROW_SAME[0]) & (magnitude < _ARROW_SAME[1])  # False for NaN
    text = pc.cast(pa.array(values), pa.string())
    whole = arrow & (values == np.trunc(values))
    if whole.any():
        text = pc.if_else(whole, pc.binary_join_element_wise(text, ".0", ""), text)
    if arrow.all():
        return text
    rest = ~arrow
    codes, uniques = pd.factorize(values[rest].view(np.int64))
    floats = uniques.view(np.float64).tolist()
    texts = pa.array(["" if v != v else repr(v) for v in floats], pa.string())
    return pc.replace_with_mask(text, rest, texts.take(pa.array(codes)))


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
