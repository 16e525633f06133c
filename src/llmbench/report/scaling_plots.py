"""Scaling plots (SVG and PNG) of one scaling group from the runs and steps tables.

Figures, each only when it has data (a figure with nothing to show is not written):
- ``step_time``: step time (mean over the averaging window) vs scale, one line per dtype
- ``tokens_per_s``: tokens/s vs scale on log-log axes, dashed ideal linear scaling from
  the smallest scale
- ``mfu``: MFU (%) vs scale
- ``efficiency``: scaling efficiency = tokens/s per GPU / tokens/s per GPU at the smallest
  scale x 100 (%), when a dtype has two scales or more
- ``reference``: measured vs reference step time, when a run has a reference
- ``step_trace``: per-iteration step time of every run, averaging window shaded; beyond
  ``TRACE_MAX_RUNS`` runs the median and min-max range per dtype and scale instead; beyond
  ``TRACE_MAX_LABELS`` lines the colour says the scale (a colour bar) and the line style
  the dtype (a legend) instead of a label at each line's end
- ``status``: scale x configuration matrix coloured by status / failure reason

Lines carry their label at their last point (moved apart where lines end close together),
so no legend needs to be looked up. The title (the group, then what the figure shows) is
the figure's, and never wider than it. Only successful ``perf`` runs are drawn in the
metric figures. What every figure shares (axes, labels, title, saving with the same bytes
for the same tables) is ``report.figures``; the step trace is ``report.step_trace``; the
group's rows are read by ``report.group_tables``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; never a display
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.colors import ListedColormap

from llmbench.core.devices import scale_unit
from llmbench.report.figures import (
    FORMATS,
    end_label,
    save_figure,
    scale_axis,
    subplots,
    title_figure,
)
from llmbench.report.group_tables import read_group
from llmbench.report.log_axis import log_y as readable_log_y
from llmbench.report.step_trace import positions, trace_figure

FIGURES = (
    "step_time", "tokens_per_s", "mfu", "efficiency", "reference", "step_trace", "status",
)  # fmt: skip
STATUS_COLOURS = {
    "success": "#4caf50", "incomplete": "#ffb300", "invalid": "#8e24aa", "failed": "#e53935",
    "no_data": "#9e9e9e",
}  # fmt: skip


def plot_files(out_dir: Path, names: Sequence[str] = FIGURES) -> list[Path]:
    """The files of figures ``names`` in ``out_dir`` (``plot_group`` writes a subset)."""
    return [out_dir / f"{name}.{fmt}" for name in names for fmt in FORMATS]


def _line_figure(ok: pd.DataFrame, title: str, unit: str, column: str, ylabel: str,
                 scale: float = 1.0, log_y: bool = False, ideal: bool = False,
                 zero: bool = False) -> plt.Figure:  # fmt: skip
    fig, ax = subplots((6.4, 4.2))
    for dtype, part in ok.groupby("dtype", sort=True):
        x, y = part["gpus"].to_numpy(float), part[column].to_numpy(float) * scale
        (line,) = ax.plot(x, y, marker="o")
        end_label(ax, x, y, str(dtype), line.get_color())
        if ideal:
            ideal_y = y[0] * x / x[0]
            ax.plot(x, ideal_y, linestyle="--", color=line.get_color(), alpha=0.5)
            end_label(ax, x, ideal_y, f"{dtype} ideal", line.get_color())
    scale_axis(ax, list(ok["gpus"]), unit)
    if log_y:
        readable_log_y(ax)
    if zero:
        ax.set_ylim(bottom=0, top=ax.get_ylim()[1] * 1.1)
    ax.margins(x=0.15)
    ax.set_ylabel(ylabel)
    title_figure(fig, title, ylabel.split(" (")[0])
    return fig


def _efficiency(ok: pd.DataFrame) -> pd.DataFrame:
    """tokens/s per GPU relative to the smallest scale of the same dtype, in percent."""
    parts = []
    for _, part in ok.groupby("dtype", sort=True):
        if part["gpus"].nunique() < 2:
            continue
        base = part["tokens_per_s_per_gpu"].iloc[0]
        parts.append(part.assign(efficiency_pct=part["tokens_per_s_per_gpu"] / base * 100))
    return pd.concat(parts) if parts else ok.iloc[0:0].assign(efficiency_pct=[])


def _reference_figure(ok: pd.DataFrame, title: str, unit: str) -> plt.Figure:
    fig, ax = subplots((6.4, 4.2))
    for dtype, part in ok.groupby("dtype", sort=True):
        x = part["gpus"].to_numpy(float)
        (line,) = ax.plot(x, part["step_time_mean_s"].to_numpy(float), marker="o")
        end_label(ax, x, part["step_time_mean_s"].to_numpy(float), f"{dtype} measured",
                   line.get_color())  # fmt: skip
        ref = part["reference_step_time_s"].to_numpy(float)
        has = np.isfinite(ref)
        if has.any():
            ax.plot(x[has], ref[has], marker="s", linestyle=":", color=line.get_color())
            end_label(ax, x[has], ref[has], f"{dtype} reference", line.get_color())
    scale_axis(ax, list(ok["gpus"]), unit)
    ax.set_ylim(bottom=0, top=ax.get_ylim()[1] * 1.1)
    ax.margins(x=0.2)
    ax.set_ylabel("step time (s)")
    title_figure(fig, title, "measured vs reference step time")
    return fig


def _status_figure(runs: pd.DataFrame, title: str, unit: str) -> plt.Figure:
    config = runs["dtype"].astype(str) + " / " + runs["variant"].astype(str)
    frame = runs.assign(config=config).sort_values(["gpus", "attempt"])
    frame = frame.drop_duplicates(["config", "gpus"], keep="last")
    configs = sorted(frame["config"].unique())
    scales = sorted(frame["gpus"].unique())
    names = list(STATUS_COLOURS)
    grid = np.full((len(configs), len(scales)), np.nan)
    fig, ax = subplots((max(4.5, 1.3 * len(scales) + 3), max(2.2, 0.6 * len(configs) + 1.6)))
    for row in frame.itertuples(index=False):
        i, j = configs.index(row.config), scales.index(row.gpus)
        status = str(row.status)
        grid[i, j] = names.index(status) if status in names else names.index("failed")
        reason = "" if pd.isna(row.reason) else str(row.reason)
        text = status + (f"\n{reason}" if reason and status != "success" else "")
        ax.text(j, i, text, ha="center", va="center", fontsize="small", color="white",
                fontweight="bold")  # fmt: skip
    cmap = ListedColormap([STATUS_COLOURS[n] for n in names])
    ax.imshow(np.ma.masked_invalid(grid), cmap=cmap, vmin=-0.5, vmax=len(names) - 0.5,
              aspect="auto")  # fmt: skip
    ax.set_xticks(range(len(scales)), [str(s) for s in scales])
    ax.set_yticks(range(len(configs)), configs)
    ax.set_xlabel(f"scale ({unit})")
    ax.set_ylabel("dtype / variant")
    title_figure(fig, title, "run status")
    return fig


def plot_group(
    runs: pd.DataFrame, steps: pd.DataFrame | None, title: str, out_dir: Path
) -> list[Path]:
    """Write every figure of one scaling group that has data; return the files written."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for name, fig in group_figures(runs, steps, title):
        written += save_figure(fig, out_dir, name)
    return written


def group_figures(
    runs: pd.DataFrame, steps: pd.DataFrame | None, title: str
) -> Iterator[tuple[str, plt.Figure]]:
    """(name, figure) of every figure of one scaling group that has data, built one at a
    time (the caller saves and closes each before the next is drawn)."""
    if runs.empty:
        return
    unit = scale_unit(runs["gpu_type"])
    ok = runs[(runs["status"] == "success") & (runs["variant"] == "perf")]
    ok = ok.sort_values(["dtype", "gpus", "attempt"]).drop_duplicates(["dtype", "gpus"],
                                                                       keep="last")  # fmt: skip
    if not ok.empty:
        yield "step_time", _line_figure(ok, title, unit, "step_time_mean_s",
                                        "step time (s, mean over window)", zero=True)  # fmt: skip
        yield "tokens_per_s", _line_figure(ok, title, unit, "tokens_per_s", "throughput (tokens/s)",
                                           log_y=True, ideal=True)  # fmt: skip
        if ok["mfu"].notna().any():
            yield "mfu", _line_figure(ok, title, unit, "mfu", "MFU (%)", scale=100, zero=True)
        eff = _efficiency(ok)
        if not eff.empty:
            yield "efficiency", _line_figure(eff, title, unit, "efficiency_pct",
                                             "scaling efficiency (% of smallest scale per GPU)",
                                             zero=True)  # fmt: skip
        if "reference_step_time_s" in ok.columns and ok["reference_step_time_s"].notna().any():
            yield "reference", _reference_figure(ok, title, unit)
    if steps is not None and not steps.empty:
        traced = steps[positions(steps["run_id"], runs["run_id"]) >= 0]
        if not traced.empty:
            yield "step_trace", trace_figure(runs, traced, title, unit)
    yield "status", _status_figure(runs, title, unit)


def plot_group_files(
    runs_path: str | Path,
    steps_path: str | Path,
    run_ids: Sequence[str],
    title: str,
    out_dir: Path,
) -> list[Path]:
    """The plot_scaling rule: the figures of one group (``run_ids``) from the runs and
    steps tables (Parquet); returns the files written."""
    runs, steps = read_group(runs_path, steps_path, run_ids)
    return plot_group(runs, steps, title, out_dir)
