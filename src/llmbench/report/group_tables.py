"""The rows of one scaling group in the runs and steps tables (Parquet), read with only
the columns and row groups the figures use.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

TRACE_COLUMNS = ("run_id", "iteration", "step_time_s")
"""The steps table's columns the figures use."""
RUN_COLUMNS = (
    "run_id", "workload", "size", "dtype", "gpu_type", "gpus", "variant", "attempt", "status",
    "reason", "window_first", "window_last", "step_time_mean_s", "tokens_per_s",
    "tokens_per_s_per_gpu", "mfu", "reference_step_time_s",
)  # fmt: skip
"""The runs table's columns the figures use (a group's job reads only these)."""


def read_group(
    runs_path: str | Path, steps_path: str | Path, run_ids: Sequence[str]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The rows of ``run_ids`` in the runs and steps tables (Parquet). Of the steps only
    ``TRACE_COLUMNS``, filtered while reading: a group's job need not load every step of
    the sweep (millions of rows for a large one). The steps file is sorted by group
    (``llmbench.aggregate.runs_and_steps.RUN_ORDER``), so only the row groups whose
    statistics admit the group's workloads, sizes and GPU types are read."""
    wanted = pa.array(list(run_ids), pa.string())  # typed: an empty list has no type
    runs = _read_runs(runs_path, wanted)
    values = {key: {str(v) for v in runs[key].unique().tolist()} for key in _GROUP_KEYS}
    return runs, _read_steps(steps_path, wanted, values)


_GROUP_KEYS = ("workload", "size", "gpu_type")
"""Group keys the steps table has (scaling is in the runs table only)."""


def _row_groups(file: pq.ParquetFile, values: dict[str, set[str]]) -> list[int]:
    """Row groups whose min-max statistics of every key in ``values`` admit one of its
    values (all of them where a statistic is missing)."""
    names = file.schema_arrow.names
    chosen = []
    for i in range(file.metadata.num_row_groups):
        group = file.metadata.row_group(i)
        admits = True
        for key, wanted in values.items():
            stats = group.column(names.index(key)).statistics
            if stats is not None and stats.has_min_max:
                admits &= any(stats.min <= v <= stats.max for v in wanted)
        if admits:
            chosen.append(i)
    return chosen


def _read_runs(path: str | Path, run_ids: pa.Array) -> pd.DataFrame:
    # The whole columns read, then filtered by one hash lookup per run: a third less time
    # than a dataset filter (read_parquet's filters), the same frame.
    table = pq.read_table(path, columns=list(RUN_COLUMNS))
    ids = table.column("run_id")
    table = table.filter(pc.is_in(ids, value_set=run_ids.cast(ids.type)))
    return table.to_pandas()


def _read_steps(path: str | Path, run_ids: pa.Array, values: dict[str, set[str]]) -> pd.DataFrame:
    # Run ids are read dictionary-encoded, as Parquet stores them, and matched once per
    # distinct id of each row group: 3x faster than a filter that compares every step's.
    file = pq.ParquetFile(path, read_dictionary=["run_id"])
    table = file.read_row_groups(_row_groups(file, values), columns=list(TRACE_COLUMNS))
    ids = table.column("run_id")
    keep = [pc.take(pc.is_in(chunk.dictionary, value_set=run_ids), chunk.indices)
            for chunk in ids.chunks]  # fmt: skip
    table = table.filter(pa.chunked_array(keep, pa.bool_()))
    at = table.schema.get_field_index("run_id")
    table = table.set_column(at, "run_id", pc.cast(table.column("run_id"), pa.string()))
    return table.to_pandas(types_mapper={pa.string(): pd.StringDtype("pyarrow")}.get)
