"""The telemetry plot of a run group, and the local-cuda summary's datasheet peaks."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pandas as pd

from llmbench.core.config import validate_and_expand
from llmbench.core.devices import datasheet_peak
from llmbench.core.preflight_settings import resolve_preflight
from llmbench.core.runspec import GROUP_ID_PATTERN, RUN_ID_PATTERN
from llmbench.launch.launchers import render_launch_script
from llmbench.report.telemetry_plot import plot_group_telemetry, plot_group_telemetry_files
from tests.helpers import tiny_config


def runs(reason: str = "") -> pd.DataFrame:
    return pd.DataFrame(
        {
            "run_id": ["r1"],
            "dtype": ["fp32"],
            "gpus": [2],
            "window_start_unix_s": [101.0],
            "window_end_unix_s": [104.0],
            "energy_reason": [reason],
        }
    )


def test_plot_draws_rapl_power_and_the_window(tmp_path: Path) -> None:
    times = np.arange(100.0, 106.0, 0.25)
    samples = pd.DataFrame(
        {
            "time_unix_s": times,
            "node": "n1",
            "source": "rapl",
            "device": "package-0",
            "metric": "energy_j",
            "value": 30.0 * (times - 100),
            "run_id": "r1",
        }
    )
    out = tmp_path / "g.svg"
    assert plot_group_telemetry(samples, runs(), "g", out) == 1
    text = out.read_text()
    assert "<svg" in text and "package power (W, RAPL)" in text


def test_the_group_plot_draws_only_its_own_runs_of_the_sweep_tables(tmp_path: Path) -> None:
    """The telemetry rule's body reads the sweep's tables and draws the group's runs only:
    r2 of another group, with samples in the same tables, is not drawn."""
    times = np.arange(100.0, 106.0, 0.25)
    one = pd.DataFrame(
        {
            "time_unix_s": times,
            "node": "n1",
            "source": "rapl",
            "device": "package-0",
            "metric": "energy_j",
            "value": np.arange(len(times)) * 50.0,
        }
    )
    pd.concat([one.assign(run_id="r1"), one.assign(run_id="r2")]).to_parquet(tmp_path / "s.pq")
    other = runs().assign(run_id="r2", dtype="bf16", gpus=4)
    pd.concat([runs(), other]).to_parquet(tmp_path / "r.pq")
    out = tmp_path / "g.svg"
    drawn = plot_group_telemetry_files(tmp_path / "s.pq", tmp_path / "r.pq", ["r1"], "g", out)
    assert drawn == 1
    assert "fp32 x2" in out.read_text() and "bf16 x4" not in out.read_text()


def test_plot_without_samples_says_why(tmp_path: Path) -> None:
    out = tmp_path / "g.svg"
    empty = pd.DataFrame(columns=["time_unix_s", "node", "source", "device", "metric", "value"])
    assert plot_group_telemetry(empty.assign(run_id=[]), runs("no RAPL: x"), "g", out) == 0
    assert "no telemetry samples (no RAPL: x)" in out.read_text()


def test_datasheet_peaks_by_nvidia_smi_name() -> None:
    assert datasheet_peak("NVIDIA H100 80GB HBM3", "bf16")[0] == 989.0
    assert datasheet_peak("NVIDIA H100 PCIe", "fp32")[0] == 51.0
    assert datasheet_peak("NVIDIA H200", "fp32")[0] == 67.0
    assert math.isnan(datasheet_peak("Tesla T4", "bf16")[0])


def test_local_cuda_runs_on_this_machine_one_rank_per_gpu() -> None:
    config = tiny_config((2,))
    config["sweeps"][0].update(gpu_type="local-cuda", dtypes=["bf16"])
    (spec,) = validate_and_expand(config)[1]
    assert spec.run_id == "tiny-llama_tiny_bf16_local-cudax2_perf"
    assert re.fullmatch(RUN_ID_PATTERN, spec.run_id)
    assert re.fullmatch(GROUP_ID_PATTERN, spec.group_id)  # the plots' wildcard
    script = render_launch_script(spec)
    assert "--nproc-per-node=2" in script
    # the trainer is told its device (NCCL on the local GPUs); CPU ranks are told nothing
    assert script.rstrip().endswith("--spec run_spec.json --cuda")
    (cpu,) = validate_and_expand(tiny_config((2,)))[1]
    assert "--cuda" not in render_launch_script(cpu)
    assert not resolve_preflight(None, [spec]).enabled  # one box: nothing to exclude
