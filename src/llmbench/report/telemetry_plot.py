"""The telemetry plot of one run group: what each run's node drew over time, its step
window shaded.

Per run one line: GPU power summed over its GPUs (nvidia-smi), else package power from
the RAPL counters (the counter's increase over each sample interval), else CPU
utilisation (%, ``/proc/stat``), with the figure's unit in the axis label. Time is seconds
from the run's first sample.
"""

from __future__ import annotations

import html
from collections.abc import Iterable
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd

from llmbench.report.figures import SAME_BYTES, figure_metadata


def run_series(samples: pd.DataFrame) -> tuple[pd.Series, str]:
    """(value by time, label) of one run's samples: the best figure it has."""
    gpu = samples[(samples["source"] == "nvidia-smi") & (samples["metric"] == "power_w")]
    if gpu["value"].notna().any():
        return gpu.groupby("time_unix_s")["value"].sum(min_count=1), "GPU power (W, all GPUs)"
    rapl = samples[(samples["source"] == "rapl") & (samples["metric"] == "energy_j")]
    if len(rapl) > 2:
        total = rapl.groupby("time_unix_s")["value"].sum().sort_index()
        watts = total.diff() / pd.Series(total.index, index=total.index).diff()
        return watts.dropna(), "package power (W, RAPL)"
    util = samples[(samples["source"] == "proc_stat") & (samples["metric"] == "util")]
    return util.set_index("time_unix_s")["value"].sort_index() * 100, "CPU utilisation (%)"


def plot_group_telemetry(samples: pd.DataFrame, runs: pd.DataFrame, title: str, out: Path) -> int:
    """Write ``out`` (SVG) and return how many runs it draws; with none, the SVG says why
    (the runs' ``energy_reason``: telemetry off, or no source on these nodes)."""
    fig, ax = plt.subplots(figsize=(8, 4.5))
    labels = set()
    drawn = 0
    for row in runs.sort_values(["dtype", "gpus"]).itertuples():
        own = samples[samples["run_id"] == row.run_id]
        if own.empty:
            continue
        series, label = run_series(own)
        if series.empty:
            continue
        start = float(own["time_unix_s"].min())
        (line,) = ax.plot(series.index - start, series.to_numpy(), label=f"{row.dtype} x{row.gpus}")
        # a runs table written before the window columns existed has none to shade
        first = getattr(row, "window_start_unix_s", None)
        last = getattr(row, "window_end_unix_s", None)
        if pd.notna(first) and pd.notna(last):
            ax.axvspan(
                first - start,
                last - start,
                color=line.get_color(),
                alpha=0.12,
            )
        labels.add(label)
        drawn += 1
    if not drawn:
        plt.close(fig)
        reasons = "; ".join(sorted(set(runs["energy_reason"].dropna()))) or "no samples"
        out.write_text(
            '<svg xmlns="http://www.w3.org/2000/svg" width="900" height="40">'
            f'<text x="5" y="25">{html.escape(title)}: no telemetry samples '
            f"({html.escape(reasons)})</text></svg>\n"
        )
        return 0
    ax.set_xlabel("seconds from the run's first sample (step window shaded)")
    ax.set_ylabel(" / ".join(sorted(labels)))
    ax.set_title(title)
    ax.legend(fontsize="small")
    fig.tight_layout()
    with plt.rc_context(SAME_BYTES):
        fig.savefig(out, metadata=figure_metadata("svg"))
    plt.close(fig)
    return drawn


def of_runs(table: pd.DataFrame, run_ids: Iterable[str]) -> pd.DataFrame:
    """The rows of ``table`` whose ``run_id`` is one of ``run_ids``."""
    return table[table["run_id"].isin(list(run_ids))]


def plot_group_telemetry_files(
    samples_path: Path, runs_path: Path, run_ids: Iterable[str], title: str, out: Path
) -> int:
    """The telemetry rule's body: the plot of one group's runs (``run_ids``) from the
    sweep's samples and runs tables (Parquet), as ``plot_group_telemetry``."""
    run_ids = list(run_ids)
    samples = of_runs(pd.read_parquet(samples_path), run_ids)
    runs = of_runs(pd.read_parquet(runs_path), run_ids)
    return plot_group_telemetry(samples, runs, title, out)
