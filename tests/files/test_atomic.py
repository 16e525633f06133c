"""The CSV twin is exactly what pandas writes, whatever the floats and UTC times hold; the
Parquet file gives the frame back, its float columns without a dictionary."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
from hypothesis import given, settings
from hypothesis import strategies as st

from llmbench.files.atomic_tables import csv_text, write_csv_atomic, write_parquet_atomic

FLOATS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, 1e16, 1e-5, 1e-4, 0.1 + 0.2, 123456789.125, 5e-324]),
    # where Arrow's notation and repr's meet: 1e-4 and 1e10, whole numbers in between
    st.sampled_from([1e10, 9999999999.0, 9999999999.999998, 1e-4 * (1 - 2**-52), 12.0, -3.0]),
)
# milliseconds since 1970, with whole seconds and midnights drawn often
MILLIS = st.one_of(
    st.integers(min_value=0, max_value=4_000_000_000_000),
    st.integers(min_value=0, max_value=4_000_000_000).map(lambda s: s * 1000),
    st.integers(min_value=0, max_value=40_000).map(lambda d: d * 86_400_000),
)


def utc_ms(values: list[int | None]) -> pd.Series:
    return pd.Series(
        pd.to_datetime([math.nan if v is None else v for v in values], unit="ms", utc=True)
    ).astype("datetime64[ms, UTC]")


@settings(max_examples=300, deadline=None)
@given(
    st.lists(FLOATS, min_size=1, max_size=6),
    st.lists(st.one_of(st.none(), MILLIS), min_size=1, max_size=6),
    st.lists(st.one_of(st.none(), st.text(max_size=5)), min_size=1, max_size=6),
    st.lists(st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1)), min_size=1, max_size=6),
    st.lists(st.one_of(st.none(), st.booleans()), min_size=1, max_size=6),
    st.text(max_size=3),
)
def test_csv_text_is_pandas_to_csv(floats, millis, texts, ints, flags, name) -> None:
    n = min(len(floats), len(millis), len(texts), len(ints), len(flags))
    frame = pd.DataFrame({
        "x": pd.Series(floats[:n], dtype="float64"),
        "t": utc_ms(millis[:n]),
        "s": pd.Series(texts[:n], dtype="string"),
        "i": range(n),
        "n": pd.Series(ints[:n], dtype="Int64"),
        "b": pd.Series(flags[:n], dtype="boolean"),
        f"{name}?": [bool(f) for f in flags[:n]],
    })  # fmt: skip
    assert csv_text(frame) == frame.to_csv(index=False)
    for columns in (["s"], [], ["x", "s"]):  # one column (an empty field is quoted), none
        assert csv_text(frame[columns]) == frame[columns].to_csv(index=False)
    assert csv_text(frame.iloc[0:0]) == frame.iloc[0:0].to_csv(index=False)


def test_floats_of_every_magnitude_are_written_as_repr() -> None:
    rng = np.random.default_rng(0)
    values = rng.normal(size=200_000) * 10.0 ** rng.integers(-320, 300, 200_000)
    values = np.concatenate([values, np.round(values, 3), np.trunc(values), [math.inf, -0.0]])
    expected = [repr(v) for v in values.tolist()]
    written = csv_text(pd.DataFrame({"x": values, "i": 0})).splitlines()[1:]
    assert [line.removesuffix(",0") for line in written] == expected


def test_only_midnights_and_only_nulls() -> None:
    midnights = utc_ms([0, 86_400_000])
    frame = pd.DataFrame({"t": midnights, "u": utc_ms([None, None]), "x": [math.nan] * 2})
    assert csv_text(frame) == frame.to_csv(index=False)
    assert "1970-01-01 00:00:00+00:00" in csv_text(frame)


def test_writes_leave_no_temporary_file(tmp_path) -> None:
    frame = pd.DataFrame({"x": [1.5], "t": utc_ms([1_500])})
    write_csv_atomic(frame, tmp_path / "a.csv")
    write_parquet_atomic(frame, tmp_path / "a.parquet")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.csv", "a.parquet"]
    assert (tmp_path / "a.csv").read_text() == frame.to_csv(index=False)
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "a.parquet"), frame)


def test_parquet_dictionary_encodes_all_but_float_columns(tmp_path) -> None:
    frame = pd.DataFrame({
        "run_id": pd.Series(["a", "a", "b"], dtype="string"), "gpus": [8, 8, 16],
        "step_time_s": [1.25, 1.5, 2.75], "t": utc_ms([0, 1, 2]),
    })  # fmt: skip
    write_parquet_atomic(frame, tmp_path / "a.parquet")
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "a.parquet"), frame)
    group = pq.ParquetFile(tmp_path / "a.parquet").metadata.row_group(0)
    dictionary = {group.column(i).path_in_schema: "RLE_DICTIONARY" in group.column(i).encodings
                  for i in range(group.num_columns)}  # fmt: skip
    assert dictionary == {"run_id": True, "gpus": True, "step_time_s": False, "t": True}
