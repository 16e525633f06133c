"""The runs and steps tables: the documented formulas row by row (successes, failures and
runs without data alike), the outcome rules, and the schema's columns and types."""

from __future__ import annotations

import copy
import functools
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmbench.aggregate.run_facts import Peak
from llmbench.aggregate.runs_and_steps import (
    RUN_DTYPES,
    STEP_DTYPES,
    runs_table_from_frames,
    steps_table_from_frame,
)
from llmbench.core.config import run_specs, validate_config
from tests.helpers import REPO, runs_table_from_records, spec_row, tiny_sweep

TRAIN_TOKENS = 1e12


@functools.cache
def tiny_spec(gpus: int) -> dict:
    cfg = validate_config({"sweeps": [tiny_sweep((gpus,))]})
    (spec,) = run_specs(cfg)
    return spec.to_dict()


def record(exit_code=0, gpus=2, run_id=None, failure_reason=None, ended_by=""):
    spec = copy.deepcopy(tiny_spec(gpus))
    return {
        "run_id": run_id or spec["run_id"],
        "attempt": 1,
        "exit_code": exit_code,
        "failure_reason": failure_reason,
        "ended_by": ended_by,
        "log": "attempt-1/train.log",
        "started_at": "2026-01-01T00:00:00.000+00:00",
        "finished_at": "2026-01-01T00:00:30.500+00:00",
        "spec": spec,
        "provenance": {"host": "h", "llmbench_version": "0"},
    }


SUMMARY = {
    "status": "success",
    "reason": "",
    "step_time_mean_s": 0.5,
    "step_time_std_s": 0.01,
    "step_time_last_s": 0.5,
    "n_iterations": 50,
    "max_iteration": 49,
    "tflops_per_gpu_mean": math.nan,
}
NO_DATA = {
    **SUMMARY,
    "status": "no_data",
    "reason": "no_step_lines",
    "step_time_mean_s": math.nan,
    "step_time_std_s": math.nan,
    "step_time_last_s": math.nan,
    "n_iterations": 0,
    "max_iteration": -1,
}


def llama_flops(model: dict) -> float:
    """The Llama formula of docs/catalog.md, written out here independently."""
    s, L, h, f, a, g, V = (
        model[k]
        for k in ("seq_len", "layers", "hidden", "ffn_hidden", "heads", "query_groups", "vocab")
    )
    return s * (12 * L * h * h * (1 + g / a + s / h) + 18 * L * f * h + 6 * V * h)


def expected_row(rec: dict, summary: dict, peak: Peak | None) -> dict:
    """What docs/tables.md says a row holds, computed one run at a time."""
    spec = rec["spec"]
    seq, gbs, gpus = spec["seq_len"], spec["global_batch_size"], spec["gpus"]
    step = summary["step_time_mean_s"]
    measured = math.isfinite(step) and step > 0
    tps = seq * gbs / step if measured else math.nan
    achieved = gbs * llama_flops(spec["model"]) / step / gpus if measured else math.nan
    return {
        "tokens_per_s": tps,
        "tokens_per_s_per_gpu": tps / gpus,
        "days_to_train": TRAIN_TOKENS / tps / 86400 if measured else math.nan,
        "achieved_tflops_per_gpu": achieved / 1e12,
        "mfu": achieved / peak.flops_per_s if peak else math.nan,
        "peak_tflops_per_gpu": peak.flops_per_s / 1e12 if peak else math.nan,
        "model_flops_per_sample": llama_flops(spec["model"]),
        "step_time_mean_s": step,
    }


def assert_same(actual: float, expected: float, what: str) -> None:
    if math.isnan(expected):
        assert pd.isna(actual), (what, actual)
    else:
        assert actual == pytest.approx(expected, rel=1e-12), what


def test_derived_metrics_by_hand() -> None:
    rec = record()
    table = runs_table_from_records([(rec, SUMMARY, Peak(1e11, "measured"))], TRAIN_TOKENS)
    row = table.iloc[0]
    spec = rec["spec"]
    seq, gbs, flops = spec["seq_len"], spec["global_batch_size"], llama_flops(spec["model"])
    assert row["model_flops_per_sample"] == pytest.approx(flops)
    assert row["tokens_per_s"] == pytest.approx(seq * gbs / 0.5)
    assert row["tokens_per_s_per_gpu"] == pytest.approx(seq * gbs / 0.5 / 2)
    assert row["days_to_train"] == pytest.approx(1e12 / (seq * gbs / 0.5) / 86400)
    assert row["mfu"] == pytest.approx(gbs * flops / 0.5 / 2 / 1e11)
    assert row["achieved_tflops_per_gpu"] == pytest.approx(gbs * flops / 0.5 / 2 / 1e12)
    assert row["duration_s"] == pytest.approx(30.5)
    assert row["log_path"] == f"{rec['run_id']}/attempt-1/train.log"
    assert row["peak_source"] == "measured"


def test_a_record_naming_the_release_spec_is_a_dgxc_2025_row() -> None:
    """An older run's record may name the default release by its former name, ``spec``:
    its row says dgxc-2025, as a record that names no release does."""
    old, new = record(gpus=2), record(gpus=4)
    old["spec"]["release"] = "spec"
    assert "release" not in new["spec"]
    table = runs_table_from_records([(old, SUMMARY, None), (new, SUMMARY, None)], TRAIN_TOKENS)
    assert table["release"].tolist() == ["dgxc-2025", "dgxc-2025"]


def test_documented_formulas_hold_for_every_kind_of_row() -> None:
    """Successes at several scales and step times, a failed exit with a full log, no data,
    a zero step time, a killed attempt and an unknown peak, in one table."""
    peak = Peak(2e11, "measured")
    cases = [
        (record(gpus=1, run_id="a"), SUMMARY, peak),
        (record(gpus=2, run_id="b"), {**SUMMARY, "step_time_mean_s": 0.25}, peak),
        (record(gpus=4, run_id="c"), {**SUMMARY, "step_time_mean_s": 1.75}, None),
        (record(gpus=2, run_id="d", exit_code=1), SUMMARY, peak),
        (record(gpus=2, run_id="e", exit_code=1), NO_DATA, peak),
        (record(gpus=2, run_id="f"), {**SUMMARY, "step_time_mean_s": 0.0}, peak),
        (record(gpus=4, run_id="g", exit_code=None, failure_reason="time_limit"),
         {**SUMMARY, "status": "incomplete", "reason": "window_incomplete"}, peak),
    ]  # fmt: skip
    table = runs_table_from_records(cases, TRAIN_TOKENS).set_index("run_id")
    assert len(table) == len(cases)
    for rec, summary, pk in cases:
        row = table.loc[rec["run_id"]]
        for column, value in expected_row(rec, summary, pk).items():
            assert_same(row[column], value, (rec["run_id"], column))
        assert row["train_tokens"] == TRAIN_TOKENS
    assert table.loc["d", "status"] == "failed" and table.loc["d", "reason"] == "exit_code_1"
    # a failed run keeps its measured step time and so its derived numbers (as before)
    assert table.loc["d", "tokens_per_s"] > 0
    assert table.loc["g", "status"] == "timeout" and table.loc["g", "reason"] == "time_limit"
    assert pd.isna(table.loc["g", "exit_code"])
    assert table.loc["c", "peak_source"] == "" and pd.isna(table.loc["c", "mfu"])


STEP_TIMES = st.one_of(
    st.floats(min_value=1e-3, max_value=1e4),
    st.sampled_from([math.nan, 0.0, -1.0, math.inf]),
)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            STEP_TIMES,
            st.sampled_from([1, 2, 4]),
            st.integers(min_value=1, max_value=4096),
            st.sampled_from([None, 1e11, 3.5e12]),
        ),
        min_size=1,
        max_size=8,
    )
)
def test_every_row_follows_the_formulas(rows) -> None:
    """Any mix of step times (NaN, zero, negative, infinite included), scales, batch sizes
    and peaks: each row equals the formulas applied to that run alone."""
    cases = []
    for i, (step, gpus, gbs, peak_flops) in enumerate(rows):
        rec = record(gpus=gpus, run_id=f"run{i}")
        rec["spec"]["global_batch_size"] = gbs
        peak = Peak(peak_flops, "p") if peak_flops else None
        cases.append((rec, {**SUMMARY, "step_time_mean_s": step}, peak))
    table = runs_table_from_records(cases, TRAIN_TOKENS).set_index("run_id")
    for rec, summary, peak in cases:
        row = table.loc[rec["run_id"]]
        for column, value in expected_row(rec, summary, peak).items():
            assert_same(row[column], value, column)


PARTIAL = {**SUMMARY, "status": "incomplete", "reason": "window_incomplete"}


@pytest.mark.parametrize(
    ("exit_code", "summary", "killed", "ended_by", "status", "reason"),
    [
        (1, SUMMARY, None, "", "failed", "exit_code_1"),
        (0, SUMMARY, None, "", "success", ""),
        (None, SUMMARY, None, "", "success", ""),
        (137, {**SUMMARY, "status": "failed", "reason": "cuda_oom"}, None, "", "failed",
         "cuda_oom"),
        (None, PARTIAL, "time_limit", "", "timeout", "time_limit"),
        (None, PARTIAL, "cancelled", "", "failed", "cancelled"),
        (0, {**SUMMARY, "status": "invalid", "reason": "nan_loss"}, None, "", "invalid",
         "nan_loss"),
        # ended by llmbench's own limits: before the log was complete, and after
        (-15, PARTIAL, None, "timeout", "timeout", "time_limit"),
        (-15, PARTIAL, None, "hang", "hang", "no_progress"),
        (-9, SUMMARY, None, "hang", "success", "teardown_hang"),
        (-15, SUMMARY, None, "timeout", "success", "teardown_hang"),
        (None, SUMMARY, "time_limit", "", "success", "teardown_hang"),
    ],
)  # fmt: skip
def test_outcome_follows_the_log_and_how_the_run_ended(
    exit_code, summary, killed, ended_by, status, reason
) -> None:
    rec = record(exit_code=exit_code, failure_reason=killed, ended_by=ended_by)
    table = runs_table_from_records([(rec, summary, None)], TRAIN_TOKENS)
    assert (table.status.iloc[0], table.reason.iloc[0]) == (status, reason)


def test_runs_without_step_time_have_no_metrics_but_a_row() -> None:
    table = runs_table_from_records([(record(exit_code=1), NO_DATA, None)], TRAIN_TOKENS)
    assert len(table) == 1
    assert table.status.iloc[0] == "failed"
    assert math.isnan(table.tokens_per_s.iloc[0]) and math.isnan(table.mfu.iloc[0])
    assert math.isnan(table.days_to_train.iloc[0])


def test_columns_and_types_are_the_schema() -> None:
    summary = {k: v for k, v in SUMMARY.items() if k not in ("reason", "tflops_per_gpu_mean")}
    table = runs_table_from_records([(record(), summary, None)], TRAIN_TOKENS)
    assert list(table.columns) == list(RUN_DTYPES)
    assert {c: str(t) for c, t in table.dtypes.items()} == {
        c: str(pd.Series(dtype=t).dtype) for c, t in RUN_DTYPES.items()
    }
    assert table.reason.iloc[0] == "" and math.isnan(table.logged_tflops_per_gpu_mean.iloc[0])
    empty = runs_table_from_records([], TRAIN_TOKENS)
    assert empty.empty and list(empty.columns) == list(RUN_DTYPES)


def documented_columns(section: str) -> list[str]:
    """The columns a section of docs/tables.md lists, row by row."""
    text = (REPO / "docs" / "tables.md").read_text()
    body = text.split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in body.splitlines() if line.startswith("| ")][1:]  # the header
    return [name.strip() for row in rows for name in row.split("|")[1].split(",")]


@pytest.mark.parametrize(("section", "dtypes"), [("runs", RUN_DTYPES), ("steps", STEP_DTYPES)])
def test_docs_tables_lists_every_column_once(section: str, dtypes: dict) -> None:
    """docs/tables.md is the one place a column is documented: it lists each column of
    the schema, once, and nothing else."""
    documented = documented_columns(section)
    assert sorted(documented) == sorted(dtypes)


def test_frames_must_have_one_summary_per_run() -> None:
    specs = pd.DataFrame([spec_row(record(), None)])
    with pytest.raises(ValueError, match="1 spec rows but 2 summary rows"):
        runs_table_from_frames(specs, pd.DataFrame([SUMMARY, SUMMARY]), TRAIN_TOKENS)


def test_runs_are_sorted_by_keys() -> None:
    cases = [(record(gpus=g, run_id=f"r{g}"), SUMMARY, None) for g in (4, 1, 2)]
    table = runs_table_from_records(cases, TRAIN_TOKENS)
    assert table.gpus.tolist() == [1, 2, 4]


def steps_of(run_id: str, iterations: range) -> pd.DataFrame:
    n = len(iterations)
    return pd.DataFrame({
        "run_id": run_id,
        "iteration": list(iterations),
        "step_time_s": np.linspace(1.0, 2.0, n),
        "loss": np.linspace(10.0, 5.0, n),
        "tflops_per_gpu": np.full(n, np.nan),
    })  # fmt: skip


def test_steps_table_tags_every_step_with_its_run() -> None:
    one, two = record(gpus=1), record(gpus=2)
    two["attempt"] = 3
    specs = pd.DataFrame([spec_row(one, None), spec_row(two, None)])
    lo, hi = one["spec"]["window"]
    # steps of two runs, interleaved and in no particular order
    long = pd.concat([steps_of(two["run_id"], range(0, 50)), steps_of(one["run_id"], range(1, 51)),
                      steps_of(two["run_id"], range(50, 52))], ignore_index=True)  # fmt: skip
    steps = steps_table_from_frame(specs, long)
    assert list(steps.columns) == list(STEP_DTYPES)
    assert {c: str(t) for c, t in steps.dtypes.items()} == {
        c: str(pd.Series(dtype=t).dtype) for c, t in STEP_DTYPES.items()
    }
    # runs in the runs table's order (one GPU before two), each run's steps as given
    expected = pd.concat([long[long.run_id == one["run_id"]], long[long.run_id == two["run_id"]]])
    assert steps.run_id.tolist() == expected.run_id.tolist()
    assert steps.iteration.tolist() == expected.iteration.tolist()
    assert steps.step_time_s.tolist() == expected.step_time_s.tolist()
    for rec in (one, two):
        part = steps[steps.run_id == rec["run_id"]]
        assert (part.gpus == rec["spec"]["gpus"]).all()
        assert (part.attempt == rec["attempt"]).all()
        assert (part.dtype == rec["spec"]["dtype"]).all()
        assert part.in_window.tolist() == [lo <= i <= hi for i in part.iteration]


def test_steps_of_an_unknown_run_are_refused() -> None:
    specs = pd.DataFrame([spec_row(record(), None)])
    with pytest.raises(ValueError, match="'ghost'"):
        steps_table_from_frame(specs, steps_of("ghost", range(3)))


def test_no_steps_give_an_empty_typed_table() -> None:
    specs = pd.DataFrame([spec_row(record(), None)])
    steps = steps_table_from_frame(specs, steps_of("x", range(0)))
    assert steps.empty and list(steps.columns) == list(STEP_DTYPES)
    assert str(steps.in_window.dtype) == "bool"


def test_log_interval_and_restarts_come_from_the_summary() -> None:
    given = {**SUMMARY, "reason": "restarted", "log_interval": 10, "restarts": 2}
    table = runs_table_from_records([(record(), given, None)], TRAIN_TOKENS)
    assert (table.log_interval.iloc[0], table.restarts.iloc[0]) == (10, 2)
    assert table.reason.iloc[0] == "restarted"
    # a summary.json written before the columns existed reads as every step, no restart
    specs = pd.DataFrame([spec_row(record(), None)])
    old = runs_table_from_frames(specs, pd.DataFrame([SUMMARY]), TRAIN_TOKENS)
    assert (old.log_interval.iloc[0], old.restarts.iloc[0]) == (1, 0)
