"""Results folders of synthetic sweeps, built by the real table and sweep-record code."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import numpy as np
import pandas as pd

from llmbench.files.atomic import write_json_atomic
from llmbench.history.sweep import stamp_sweep
from tests.helpers import nemo_8b, sweep_tables


def ar1(n: int, rng: np.random.Generator, phi: float, sigma: float) -> np.ndarray:
    """Autocorrelated relative noise, as per-iteration step times show."""
    e = np.empty(n)
    e[0] = rng.normal(0, sigma)
    for i in range(1, n):
        e[i] = phi * e[i - 1] + rng.normal(0, sigma * np.sqrt(1 - phi**2))
    return e


def write_results(
    root: Path,
    cluster: str,
    when: datetime,
    factor: Callable[[str], float] = lambda run_id: 1.0,
    seed: int = 0,
    noise: float = 0.01,
    host: str = "node1",
    runs_hook: Callable[[pd.DataFrame], pd.DataFrame] | None = None,
) -> dict:
    """``root/tables/{runs,steps}.parquet`` and ``sweep.json`` of a Llama 3.1 8B sweep
    (bf16, fp8 x 8, 16, 32 GPUs) whose step times carry AR(1) noise, each run's times
    multiplied by ``factor(run_id)``. Returns the sweep record."""
    runs, steps = sweep_tables(nemo_8b())
    rng = np.random.default_rng(seed)
    for run_id, idx in steps.groupby("run_id").groups.items():
        base = steps.loc[idx, "step_time_s"].to_numpy()
        noisy = base * (1 + ar1(len(idx), rng, 0.5, noise)) * factor(str(run_id))
        steps.loc[idx, "step_time_s"] = noisy
    means = steps[steps["in_window"]].groupby("run_id")["step_time_s"].mean()
    runs["step_time_mean_s"] = runs["run_id"].map(means).astype(float)
    record = stamp_sweep("0" * 64, cluster, now=when)
    runs["sweep_id"] = record["sweep_id"]
    runs["host"] = host
    runs["started_at"] = pd.Timestamp(when).floor("ms")  # each sweep ran its runs anew
    if runs_hook is not None:
        runs = runs_hook(runs)
    tables = root / "tables"
    tables.mkdir(parents=True)
    runs.to_parquet(tables / "runs.parquet", index=False)
    steps.to_parquet(tables / "steps.parquet", index=False)
    write_json_atomic(tables / "sweep.json", record)
    return record
