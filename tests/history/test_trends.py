"""Trend data and the report's trend plots."""

from __future__ import annotations

from datetime import date, datetime, timezone
from pathlib import Path

import pandas as pd

from llmbench.aggregate.reference import builtin_references, load_references
from llmbench.history.store import add_sweep, open_history, sweep_index
from llmbench.history.trends import trend_frame, write_sweep_trends
from tests.history.results import write_results


def _history(tmp_path: Path) -> Path:
    history = open_history(tmp_path / "h")
    for i, day in enumerate((1, 10, 25)):
        when = datetime(2026, 3, day, tzinfo=timezone.utc)
        write_results(tmp_path / f"r{i}", "eos", when, seed=i)
        add_sweep(history, tmp_path / f"r{i}")
    return tmp_path / "h"


def test_trend_frame_per_sweep_and_window_of_days(tmp_path: Path) -> None:
    history = open_history(_history(tmp_path))
    all_days = trend_frame(history)
    assert len(all_days) == 3 * 6 and all_days["runs"].eq(1).all()
    assert all_days["created_at"].is_monotonic_increasing
    recent = trend_frame(history, days=20)  # March 6-25: two sweeps
    assert sorted(recent["sweep_id"].unique()) == sorted(all_days["sweep_id"].unique())[1:]
    assert trend_frame(history, days=1, until=date(2026, 3, 2)).empty


def test_sweep_trends_draw_every_key_with_the_reference_band(tmp_path: Path) -> None:
    """Published references exist for the 8B keys: the band is drawn; a sweep not yet in
    the history is drawn too (ringed)."""
    location = _history(tmp_path)
    current = write_results(tmp_path / "now", "eos", datetime(2026, 3, 26, tzinfo=timezone.utc))
    out = tmp_path / "trends"
    written = write_sweep_trends(
        str(location),
        tmp_path / "now" / "tables" / "runs.parquet",
        tmp_path / "now" / "tables" / "sweep.json",
        builtin_references(),
        0.05,
        90,
        out,
    )
    names = sorted(p.name for p in written)
    assert len(names) == 6 and "llama3.1-nemo_8b_bf16_h100x8.svg" in names
    svg = (out / "llama3.1-nemo_8b_bf16_h100x8.svg").read_text()
    assert "reference +-5%" in svg and "this sweep" in svg and "eos" in svg
    assert current["sweep_id"] not in set(sweep_index(open_history(location))["sweep_id"])


def test_trends_without_reference_have_no_band(tmp_path: Path) -> None:
    location = _history(tmp_path)
    refs = tmp_path / "refs.csv"
    other = {"workload": "other", "size": "x", "dtype": "bf16", "gpu_type": "h100", "gpus": 8}
    pd.DataFrame([{**other, "step_time_s": 1.0}]).to_csv(refs, index=False)
    write_results(tmp_path / "now", "eos", datetime(2026, 3, 26, tzinfo=timezone.utc))
    written = write_sweep_trends(
        str(location), tmp_path / "now/tables/runs.parquet", tmp_path / "now/tables/sweep.json",
        load_references(refs), 0.05, 90, tmp_path / "trends",
    )  # fmt: skip
    assert written and all("reference +-" not in p.read_text() for p in written)


def test_trends_of_a_first_sweep_need_no_history_yet(tmp_path: Path) -> None:
    write_results(tmp_path / "now", "eos", datetime(2026, 3, 26, tzinfo=timezone.utc))
    written = write_sweep_trends(
        str(tmp_path / "not-yet"), tmp_path / "now/tables/runs.parquet",
        tmp_path / "now/tables/sweep.json", builtin_references(), 0.05, 90, tmp_path / "t",
    )  # fmt: skip
    assert len(written) == 6
    assert not (tmp_path / "not-yet").exists()  # drawing never creates the history
