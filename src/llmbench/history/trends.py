"""Step time per key over sweeps: the history's trend query and the report's plots.

A point is one sweep's step time for one key (the mean over its successful ``perf`` runs
of ``step_time_mean_s``), at the sweep's time (its id starts with it), one line per
cluster. The band is the reference step time (published, or the configured reference
file) +- the tolerance, where the key has a reference.
"""

from __future__ import annotations

import sys
from datetime import date, timedelta
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; never a display
import matplotlib.pyplot as plt
import pandas as pd
import pyarrow.dataset as ds

from llmbench.aggregate.reference import REFERENCE_KEYS
from llmbench.history.read import SweepReader
from llmbench.history.store import History, open_history, sweep_index
from llmbench.history.sweep import read_sweep

TREND_KEYS = ("workload", "size", "dtype", "gpu_type", "gpus", "scaling", "variant")
TREND_COLUMNS = (*TREND_KEYS, "status", "step_time_mean_s", "sweep_id")


def key_name(workload: str, size: str, dtype: str, gpu_type: str, gpus: int, scaling: str) -> str:
    """``tiny-llama_tiny_fp32_cpux2`` (``-strong`` appended under strong scaling)."""
    strong = "-strong" if scaling == "strong" else ""
    return f"{workload}_{size}_{dtype}_{gpu_type}x{gpus}{strong}"


def sweep_time(sweep_ids: pd.Series) -> pd.Series:
    """The UTC time a sweep id starts with."""
    return pd.to_datetime(sweep_ids.str.slice(0, 16), format="%Y%m%dT%H%M%SZ", utc=True)


def per_sweep(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per (cluster, sweep, key): mean step time of its successful perf runs."""
    ok = runs[runs["status"].eq("success") & runs["variant"].eq("perf")]
    ok = ok[ok["step_time_mean_s"].gt(0)]
    out = (
        ok.groupby(["cluster", "sweep_id", *TREND_KEYS], observed=True, dropna=False)[
            "step_time_mean_s"
        ]
        .agg(step_time_s="mean", runs="size")
        .reset_index()
    )
    out["created_at"] = sweep_time(out["sweep_id"].astype("string"))
    return out.sort_values(["created_at", "cluster", *TREND_KEYS], ignore_index=True)


def trend_frame(
    history: History,
    days: int | None = None,
    until: date | None = None,
    reader: SweepReader | None = None,
) -> pd.DataFrame:
    """Step time per (cluster, sweep, key) over the ``days`` up to ``until`` (default: the
    newest sweep's date), read from the history's runs tables; damaged sweeps are left
    out (and kept in ``reader.skipped``)."""
    reader = reader or SweepReader(history)
    index = sweep_index(history)
    if days is not None and len(index):
        last = until or date.fromisoformat(str(index["date"].max()))
        first = (last - timedelta(days=days - 1)).isoformat()
        index = index[(index["date"] >= first) & (index["date"] <= last.isoformat())]
    wanted = (ds.field("status") == "success") & (ds.field("variant") == "perf")
    runs = reader.read(index, "runs", TREND_COLUMNS, filter=wanted)
    return per_sweep(runs)


def plot_trend(
    points: pd.DataFrame,
    title: str,
    reference: tuple[float, str] | None,
    tolerance: float,
    current: str | None,
    path: Path,
) -> Path:
    """One key's step time over sweeps (``per_sweep`` rows), one line per cluster."""
    fig, ax = plt.subplots(figsize=(7, 3.6), layout="constrained")
    if reference is not None:
        value, source = reference
        ax.axhspan(value * (1 - tolerance), value * (1 + tolerance), color="#9e9e9e", alpha=0.25,
                   label=f"reference +-{tolerance:.0%} ({source})")  # fmt: skip
        ax.axhline(value, color="#616161", linestyle=":", linewidth=1)
    for cluster, part in points.groupby("cluster", sort=True):
        x = part["created_at"].dt.tz_convert(None)
        ax.plot(x, part["step_time_s"], marker="o", markersize=4, label=str(cluster))
        mine = part["sweep_id"].eq(current).to_numpy()
        if mine.any():
            ax.plot(x[mine], part["step_time_s"][mine], "o", markersize=10, fillstyle="none",
                    color="black", label="this sweep")  # fmt: skip
    ax.set_title(title, fontsize="medium")
    ax.set_ylabel("step time (s)")
    ax.set_xlabel("sweep time (UTC)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small", loc="best")
    fig.autofmt_xdate()
    with plt.rc_context({"svg.hashsalt": "llmbench"}):  # same data, same bytes
        fig.savefig(path, metadata={"Date": None})
    plt.close(fig)
    return path


def _reference_lookup(references: pd.DataFrame) -> dict[tuple, tuple[float, str]]:
    keys = references.loc[:, list(REFERENCE_KEYS)].itertuples(index=False, name=None)
    values = references["step_time_s"].astype(float).tolist()
    sources = references["source"].astype(str).tolist()
    return {key: (v, src) for key, v, src in zip(keys, values, sources, strict=True)}


def write_sweep_trends(
    history_location: str,
    runs_path: str | Path,
    sweep_path: str | Path,
    references: pd.DataFrame,
    tolerance: float,
    days: int,
    out_dir: str | Path,
) -> list[Path]:
    """The report's trend plots: for every key of this sweep, its step time over the
    history's sweeps of the last ``days`` (this sweep included even if not yet added). A
    damaged sweep of the history is left out, with a line on stderr (the job's log)."""
    sweep = read_sweep(sweep_path)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    current = pd.read_parquet(runs_path).assign(cluster=sweep["cluster"])
    mine = per_sweep(current)
    stored = open_history(history_location)
    reader = SweepReader(stored)
    history = trend_frame(stored, days, date.fromisoformat(sweep["date"]), reader)
    for skipped in reader.skipped.values():
        print(f"llmbench: warning: {skipped.line()}", file=sys.stderr)
    points = pd.concat(
        [history[~history["sweep_id"].eq(sweep["sweep_id"])], mine], ignore_index=True
    ).sort_values(["created_at", "cluster"], ignore_index=True)
    lookup = _reference_lookup(references)
    keys = list(REFERENCE_KEYS)  # the trend keys but variant (always perf here)
    this_sweep = set(mine.loc[:, keys].itertuples(index=False, name=None))
    written = []
    for key, part in points.groupby(keys, sort=True):
        if key in this_sweep:
            name = key_name(*key)
            path = out / f"{name}.svg"
            reference = lookup.get(key)
            written.append(plot_trend(part, name, reference, tolerance, sweep["sweep_id"], path))
    return written
