"""Telemetry of one run attempt: start and stop its sampler, and read what it left.

An attempt folder holds ``telemetry-<node>.csv`` (+ ``.json``, the sources' status) per
sampled node and ``step_clock.csv`` (iteration, start and end in Unix seconds) written by
the trainer's rank 0. Where the ranks start through ``srun`` on GPU nodes the launch
script starts one sampler per node (``llmbench.launch.srun``); otherwise the runner starts
one beside the launch command, on its own node.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from llmbench.step_clock import STEP_CLOCK_FILE
from llmbench.telemetry.energy import WindowEnergy, window_energy
from llmbench.telemetry.frames import read_samples
from llmbench.telemetry.sampler import DEFAULT_PERIOD_MS, status_path

SAMPLES_GLOB = "telemetry-*.csv"
STOP_TIMEOUT_S = 20.0


@dataclass(frozen=True)
class TelemetrySettings:
    """The config's ``telemetry`` block."""

    enabled: bool = True
    period_ms: int = DEFAULT_PERIOD_MS
    root: str = "/"

    @classmethod
    def from_config(cls, block: Mapping[str, Any] | None) -> TelemetrySettings:
        block = block or {}
        return cls(
            enabled=bool(block.get("enabled", True)),
            period_ms=int(block.get("period_ms", DEFAULT_PERIOD_MS)),
            root=str(block.get("root", "/")),
        )


def sampler_command(
    settings: TelemetrySettings, out: str, gpu: bool, python: str = sys.executable
) -> list[str]:
    """The sampler's command line (``out`` may hold ``%n``, the node's name)."""
    command = [
        python, "-m", "llmbench.telemetry.sampler", "--out", out,
        "--period-ms", str(settings.period_ms), "--root", settings.root,
    ]  # fmt: skip
    return [*command, "--gpu"] if gpu else command


def runner_samples(spec: Mapping[str, Any]) -> bool:
    """The runner samples its own node unless the launch script starts samplers on every
    node (``srun`` on GPU nodes)."""
    return not (spec["launcher"] == "srun" and spec["gpu_type"] != "cpu")


@contextlib.contextmanager
def sampling(
    attempt_dir: Path, settings: TelemetrySettings | None, gpu: bool
) -> Iterator[subprocess.Popen[bytes] | None]:
    """Run the sampler on this node for the duration of the block (none when disabled)."""
    if settings is None or not settings.enabled:
        yield None
        return
    command = sampler_command(settings, str(attempt_dir / "telemetry-%n.csv"), gpu)
    with open(attempt_dir / "telemetry.log", "wb") as log:
        proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    try:
        yield proc
    finally:
        proc.terminate()  # the sampler takes a last sample and exits
        try:
            proc.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


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


def run_telemetry(run_dir: Path, record: Mapping[str, Any]) -> tuple[pd.DataFrame, WindowEnergy]:
    """(samples tagged with run and attempt, energy figures) of the reported attempt."""
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
            spec["gpu_type"],
            reasons,
        )
    tagged = samples.assign(run_id=record["run_id"], attempt=record.get("attempt"))
    return tagged, energy


ENERGY_FILE = "energy.json"


def read_energy(run_dir: Path) -> dict[str, Any]:
    """The run's ``energy.json`` (written by the train job), or NaN figures saying why not."""
    try:
        return json.loads((run_dir / ENERGY_FILE).read_text())
    except (OSError, ValueError):
        return WindowEnergy(energy_reason=f"no {ENERGY_FILE} beside the run record").as_dict()


def sweep_samples(run_dirs: list[Path]) -> pd.DataFrame:
    """Every run's ``telemetry.parquet``, one table (the sweep-wide telemetry table)."""
    frames = [
        pd.read_parquet(d / "telemetry.parquet")
        for d in run_dirs
        if (d / "telemetry.parquet").exists()
    ]
    frames = [f for f in frames if len(f)]
    if not frames:
        return read_samples([]).assign(
            run_id=pd.Series(dtype="object"), attempt=pd.Series(dtype="Int64")
        )
    return pd.concat(frames, ignore_index=True)
