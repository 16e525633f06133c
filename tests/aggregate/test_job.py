"""The aggregate job (``llmbench.aggregate.job``) on real run folders: every output file written,
one row per run, and the same tables as the column-wise functions give."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest

from llmbench.aggregate.job import (
    OUTPUTS,
    RESULT_OUTPUTS,
    aggregate_sweep,
    read_sweep,
    write_sweep_tables,
)
from llmbench.aggregate.reference import references_for
from llmbench.aggregate.runs_and_steps import (
    runs_table_from_frames,
    steps_table_from_frame,
)
from tests.aggregate.test_runs_and_steps import NO_DATA, SUMMARY, TRAIN_TOKENS, record, steps_of
from tests.helpers import spec_row


def write_run(root, rec, summary, steps):
    run_dir = root / rec["run_id"]
    (run_dir / "attempt-1").mkdir(parents=True)
    (run_dir / "run.json").write_text(json.dumps(rec))
    summary = {"run_id": rec["run_id"], "attempt": rec["attempt"], **summary}
    (run_dir / "summary.json").write_text(json.dumps(summary))
    steps.drop(columns="run_id").to_parquet(run_dir / "steps.parquet")
    return run_dir / "run.json"


GOOD, EMPTY = record(gpus=1), record(gpus=2, exit_code=1)
"""A run with 50 steps and one that failed without any."""


def two_run_folders(root) -> tuple[list[str], dict[str, pd.DataFrame], dict[str, Path]]:
    """The run.json paths of GOOD and EMPTY, their steps, and an output path per name."""
    steps = {GOOD["run_id"]: steps_of(GOOD["run_id"], range(50)),
             EMPTY["run_id"]: steps_of(EMPTY["run_id"], range(0))}  # fmt: skip
    paths = [
        write_run(root / "runs", GOOD, SUMMARY, steps[GOOD["run_id"]]),
        write_run(root / "runs", EMPTY, NO_DATA, steps[EMPTY["run_id"]]),
    ]
    (root / "tables").mkdir()
    outputs = {name: root / "tables" / name for name in OUTPUTS + RESULT_OUTPUTS}
    outputs["result"] = root / "result.json"
    return [str(p) for p in paths], steps, outputs


def test_aggregate_sweep_writes_every_output_from_the_run_folders(tmp_path) -> None:
    good, empty = GOOD, EMPTY
    paths, steps, outputs = two_run_folders(tmp_path)
    sweep = {"sweep_id": "s1", "created_at": "2026-01-01T00:00:00.000+00:00"}
    _, steps_table = aggregate_sweep({"records": paths}, outputs, sweep, TRAIN_TOKENS, 0.05)
    assert all(outputs[name].stat().st_size > 0 for name in OUTPUTS + RESULT_OUTPUTS)
    assert json.loads(outputs["sweep"].read_text()) == sweep
    result = json.loads(outputs["result"].read_text())
    assert [r["run_id"] for r in result["runs"]] == sorted([good["run_id"], empty["run_id"]])
    assert result["status"] == "partial" and result["sweep"]["sweep_id"] == "s1"
    written = pd.read_parquet(outputs["runs"])
    assert sorted(written.run_id) == sorted([good["run_id"], empty["run_id"]])
    assert set(written.sweep_id) == {"s1"}
    by_run = written.set_index("run_id")
    assert by_run.loc[good["run_id"], "status"] == "success"
    assert by_run.loc[empty["run_id"], "status"] != "success"
    assert pd.isna(by_run.loc[empty["run_id"], "tokens_per_s"])
    # the same numbers as the column-wise functions on the same inputs
    specs = pd.DataFrame([spec_row(good, None, (1, "")), spec_row(empty, None, (1, ""))])
    summaries = pd.DataFrame([SUMMARY, NO_DATA])
    expected = runs_table_from_frames(specs.assign(sweep_id="s1"), summaries, TRAIN_TOKENS)
    pd.testing.assert_series_equal(written.tokens_per_s, expected.tokens_per_s)
    assert written.run_id.tolist() == expected.run_id.tolist()
    long = pd.concat(steps.values(), ignore_index=True)
    assert len(steps_table) == len(steps_table_from_frame(specs, long)) == 50
    assert pd.read_parquet(outputs["steps"]).run_id.tolist() == [good["run_id"]] * 50
    assert good["run_id"] in outputs["runs_html"].read_text()


@pytest.mark.skipif(sys.platform != "linux", reason="pyarrow's Linux wheels bundle jemalloc")
def test_every_stage_of_the_tables_allocates_arrow_memory_from_jemalloc(tmp_path) -> None:
    """llmbench.aggregate.arrow_memory: the pool that keeps the steps table's string columns off
    freshly zeroed huge pages, for the whole job and only for it."""
    paths, _, outputs = two_run_folders(tmp_path)
    pools: dict[str, str] = {}

    def run_step(name, fn):
        pools[name] = pa.default_memory_pool().backend_name
        return fn()

    before = pa.default_memory_pool().backend_name
    write_sweep_tables(read_sweep(paths, None), {"sweep_id": "s1"}, references_for(None), 0.05,
                       TRAIN_TOKENS, outputs, run_step=run_step)  # fmt: skip
    assert {"spec_rows", "runs_table", "steps_table_wait"} <= set(pools)
    assert set(pools.values()) == {"jemalloc"}
    assert pa.default_memory_pool().backend_name == before
