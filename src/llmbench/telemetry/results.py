"""What one run attempt's telemetry left (``llmbench.telemetry.sampling`` starts and stops its
sampler): the samples tagged with the run, the step clock, the window energy, and the
sweep-wide samples table. pandas and numpy: read once the ranks have run."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from llmbench.core.run_folder import ENERGY as ENERGY_FILE
from llmbench.core.run_folder import SAMPLES_GLOB, TELEMETRY
from llmbench.core.run_folder import STEP_CLOCK as STEP_CLOCK_FILE
from llmbench.telemetry.energy import WindowEnergy, window_energy
from llmbench.telemetry.frames import read_samples
from llmbench.telemetry.sampler import status_path


def read_step_clock(attempt_dir: Path) -> pd.DataFrame:
    columns = ["iteration", "start_unix_s", "end_unix_s"]
    try:
        clock = pd.read_csv(attempt_dir / STEP_CLOCK_FILE, on_bad_lines="skip")
    except (OSError, pd.errors.EmptyDataError):
        return pd.DataFrame(columns=columns)
    if list(clock.columns) != columns:
        return pd.DataFrame(columns=columns)
    return clock.apply(pd.to_numeric, errors="coerce").dropna()


def source_reasons(attempt_dir: Path) -> dict[str, str]:
    """Per source, "ok" when any node's sampler read it, else the first node's reason."""
    reasons: dict[str, str] = {}
    for csv in sorted(attempt_dir.glob(SAMPLES_GLOB)):
        try:
            status = json.loads(status_path(csv).read_text())
        except (OSError, ValueError):
            continue
        for source, why in status.get("sources", {}).items():
            if reasons.get(source) != "ok":
                reasons[source] = why
    return reasons


def run_telemetry(
    run_dir: Path, record: Mapping[str, Any], gpu: bool
) -> tuple[pd.DataFrame, WindowEnergy]:
    """(samples tagged with run and attempt, energy figures) of the reported attempt;
    ``gpu``: its GPUs were sampled by nvidia-smi."""
    attempt_dir = run_dir / record.get("attempt_dir", "")
    spec = record["spec"]
    samples = read_samples(sorted(attempt_dir.glob(SAMPLES_GLOB)))
    reasons = source_reasons(attempt_dir) if record.get("attempt_dir") else {}
    if samples.empty and not reasons:
        energy = WindowEnergy(energy_reason="no telemetry: sampling off or no sampler output")
    else:
        energy = window_energy(
            samples,
            read_step_clock(attempt_dir),
            spec["window"],
            spec["global_batch_size"] * spec["seq_len"],
            spec["gpus"],
            spec["nodes"],
            gpu,
            reasons,
        )
    tagged = samples.assign(run_id=record["run_id"], attempt=record.get("attempt"))
    return tagged, energy


def read_energy(run_dir: Path) -> dict[str, Any]:
    """The run's ``energy.json`` (written by the train job), or NaN figures saying why not."""
    try:
        return json.loads((run_dir / ENERGY_FILE).read_text())
    except (OSError, ValueError):
        return WindowEnergy(energy_reason=f"no {ENERGY_FILE} beside the run record").as_dict()


def sweep_samples(run_dirs: list[Path]) -> pd.DataFrame:
    """Every run's ``telemetry.parquet``, one table (the sweep-wide telemetry table)."""
    frames = [pd.read_parquet(d / TELEMETRY) for d in run_dirs if (d / TELEMETRY).exists()]
    frames = [f for f in frames if len(f)]
    if not frames:
        return read_samples([]).assign(
            run_id=pd.Series(dtype="object"), attempt=pd.Series(dtype="Int64")
        )
    return pd.concat(frames, ignore_index=True)
