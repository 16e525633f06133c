"""Scaling plots (SVG and PNG) of one scaling group from the runs and steps tables.

Figures, each only when it has data (a figure with nothing to show is not written):
- ``step_time``: step time (mean over the averaging window) vs scale, one line per dtype
- ``tokens_per_s``: tokens/s vs scale on log-log axes, dashed ideal linear scaling from
  the smallest scale
- ``mfu``: MFU (%) vs scale
- ``efficiency``: scaling efficiency = tokens/s per GPU / tokens/s per GPU at the smallest
  scale x 100 (%), when a dtype has two scales or more
- ``reference``: measured vs reference step time, when a run has a reference
- ``step_trace``: per-iteration step time of every run, averaging window shaded
- ``status``: scale x configuration matrix coloured by status / failure reason

Lines carry their label at their last point, so no legend needs to be looked up.
Only successful ``perf`` runs are drawn in the metric figures.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; never a display
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.collections import LineCollection
from matplotlib.colors import ListedColormap
from matplotlib.ticker import FixedLocator, NullLocator

FIGURES = (
    "step_time", "tokens_per_s", "mfu", "efficiency", "reference", "step_trace", "status",
)  # fmt: skip
FORMATS = ("svg", "png")
STATUS_COLOURS = {
    "success": "#4caf50", "incomplete": "#ffb300", "invalid": "#8e24aa", "failed": "#e53935",
    "no_data": "#9e9e9e",
}  # fmt: skip


def plot_files(out_dir: Path, names: Sequence[str] = FIGURES) -> list[Path]:
    """The files of figures ``names`` in ``out_dir`` (``plot_group`` writes a subset)."""
    return [out_dir / f"{name}.{fmt}" for name in names for fmt in FORMATS]


def _scale_axis(ax: plt.Axes, scales: Sequence[int], unit: str) -> None:
    ticks = sorted(set(int(s) for s in scales))
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xticklabels([str(s) for s in ticks])
    ax.set_xlabel(f"scale ({unit})")
    ax.grid(True, which="both", alpha=0.3)
    if len(ticks) == 1:
        ax.set_xlim(ticks[0] / 1.5, ticks[0] * 1.5)


def _end_label(ax: plt.Axes, x: Sequence[float], y: Sequence[float], text: str,
               colour: str) -> None:  # fmt: skip
    ax.annotate(text, (x[-1], y[-1]), xytext=(6, 0), textcoords="offset points",
                color=colour, va="center", fontsize="small", fontweight="bold")  # fmt: skip


def _save(fig: plt.Figure, out_dir: Path, name: str) -> list[Path]:
    written = []
    for fmt in FORMATS:
        path = out_dir / f"{name}.{fmt}"
        fig.savefig(path, dpi=110 if fmt == "png" else None, metadata=_metadata(fmt))
        written.append(path)
    plt.close(fig)
    return written


def _metadata(fmt: str) -> dict[str, str | None]:
    # No creation dates in the files: the same data gives the same bytes.
    return {"Date": None} if fmt == "svg" else {"Software": "llmbench"}


def _line_figure(ok: pd.DataFrame, title: str, unit: str, column: str, ylabel: str,
                 scale: float = 1.0, log_y: bool = False, ideal: bool = False,
                 zero: bool = False) -> plt.Figure:  # fmt: skip
    fig, ax = plt.subplots(figsize=(6.4, 4.2), layout="constrained")
    for dtype, part in ok.groupby("dtype", sort=True):
        x, y = part["gpus"].to_numpy(float), part[column].to_numpy(float) * scale
        (line,) = ax.plot(x, y, marker="o")
        _end_label(ax, x, y, str(dtype), line.get_color())
        if ideal:
            ideal_y = y[0] * x / x[0]
            ax.plot(x, ideal_y, linestyle="--", color=line.get_color(), alpha=0.5)
            _end_label(ax, x, ideal_y, f"{dtype} ideal", line.get_color())
    _scale_axis(ax, list(ok["gpus"]), unit)
    if log_y:
        ax.set_yscale("log")
    if zero:
        ax.set_ylim(bottom=0, top=ax.get_ylim()[1] * 1.1)
    ax.margins(x=0.15)
    ax.set_ylabel(ylabel)
    ax.set_title(f"{title}: {ylabel.split(' (')[0]}")
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
    fig, ax = plt.subplots(figsize=(6.4, 4.2), layout="constrained")
    for dtype, part in ok.groupby("dtype", sort=True):
        x = part["gpus"].to_numpy(float)
        (line,) = ax.plot(x, part["step_time_mean_s"].to_numpy(float), marker="o")
        _end_label(ax, x, part["step_time_mean_s"].to_numpy(float), f"{dtype} measured",
                   line.get_color())  # fmt: skip
        ref = part["reference_step_time_s"].to_numpy(float)
        has = np.isfinite(ref)
        if has.any():
            ax.plot(x[has], ref[has], marker="s", linestyle=":", color=line.get_color())
            _end_label(ax, x[has], ref[has], f"{dtype} reference", line.get_color())
    _scale_axis(ax, list(ok["gpus"]), unit)
    ax.set_ylim(bottom=0, top=ax.get_ylim()[1] * 1.1)
    ax.margins(x=0.2)
    ax.set_ylabel("step time (s)")
    ax.set_title(f"{title}: measured vs reference step time")
    return fig


def _trace_figure(runs: pd.DataFrame, steps: pd.DataFrame, title: str) -> plt.Figure:
    fig, ax = plt.subplots(figsize=(7.2, 4.4), layout="constrained")
    order = runs.sort_values(["dtype", "gpus"])
    colours = plt.get_cmap("tab10")
    by_run = dict(tuple(steps.groupby("run_id", sort=False)))
    segments, seg_colours = [], []
    for i, row in enumerate(order.itertuples(index=False)):
        part = by_run.get(row.run_id)
        if part is None or part.empty:
            continue
        x = part["iteration"].to_numpy(float)
        y = part["step_time_s"].to_numpy(float)
        colour = colours(i % 10)
        segments.append(np.column_stack([x, y]))
        seg_colours.append(colour)
        if len(order) <= 12:
            _end_label(ax, x, y, f"{row.dtype} x{row.gpus}", colour)
    ax.add_collection(LineCollection(segments, colors=seg_colours, linewidths=1.2))
    ax.autoscale()
    lo, hi = int(order["window_first"].min()), int(order["window_last"].max())
    ax.axvspan(lo - 0.5, hi + 0.5, color="#1f77b4", alpha=0.12, lw=0)
    ax.text((lo + hi) / 2, 0.98, f"averaging window {lo}-{hi}", transform=ax.get_xaxis_transform(),
            ha="center", va="top", fontsize="small")  # fmt: skip
    ax.set_yscale("log")
    ax.margins(x=0.12)
    ax.set_xlabel("iteration (as the framework numbers it)")
    ax.set_ylabel("step time (s, log)")
    ax.set_title(f"{title}: step time per iteration, one line per run")
    ax.grid(True, alpha=0.3)
    return fig


def _status_figure(runs: pd.DataFrame, title: str, unit: str) -> plt.Figure:
    config = runs["dtype"].astype(str) + " / " + runs["variant"].astype(str)
    frame = runs.assign(config=config).sort_values(["gpus", "attempt"])
    frame = frame.drop_duplicates(["config", "gpus"], keep="last")
    configs = sorted(frame["config"].unique())
    scales = sorted(frame["gpus"].unique())
    names = list(STATUS_COLOURS)
    grid = np.full((len(configs), len(scales)), np.nan)
    fig, ax = plt.subplots(
        figsize=(max(4.5, 1.3 * len(scales) + 3), max(2.2, 0.6 * len(configs) + 1.6)),
        layout="constrained",
    )
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
    ax.set_title(f"{title}: run status")
    return fig


def plot_group(
    runs: pd.DataFrame, steps: pd.DataFrame | None, title: str, out_dir: Path
) -> list[Path]:
    """Write every figure of one scaling group that has data; return the files written."""
    out_dir.mkdir(parents=True, exist_ok=True)
    if runs.empty:
        return []
    unit = "CPU ranks" if (runs["gpu_type"] == "cpu").all() else "GPUs"
    ok = runs[(runs["status"] == "success") & (runs["variant"] == "perf")]
    ok = ok.sort_values(["dtype", "gpus", "attempt"]).drop_duplicates(["dtype", "gpus"],
                                                                       keep="last")  # fmt: skip
    written: list[Path] = []
    if not ok.empty:
        written += _save(_line_figure(ok, title, unit, "step_time_mean_s",
                                      "step time (s, mean over window)", zero=True),
                         out_dir, "step_time")  # fmt: skip
        written += _save(_line_figure(ok, title, unit, "tokens_per_s", "throughput (tokens/s)",
                                      log_y=True, ideal=True), out_dir, "tokens_per_s")  # fmt: skip
        if ok["mfu"].notna().any():
            written += _save(_line_figure(ok, title, unit, "mfu", "MFU (%)", scale=100,
                                          zero=True), out_dir, "mfu")  # fmt: skip
        eff = _efficiency(ok)
        if not eff.empty:
            written += _save(_line_figure(eff, title, unit, "efficiency_pct",
                                          "scaling efficiency (% of smallest scale per GPU)",
                                          zero=True), out_dir, "efficiency")  # fmt: skip
        if "reference_step_time_s" in ok.columns and ok["reference_step_time_s"].notna().any():
            written += _save(_reference_figure(ok, title, unit), out_dir, "reference")
    if steps is not None and not steps.empty:
        traced = steps[steps["run_id"].isin(runs["run_id"])]
        if not traced.empty:
            written += _save(_trace_figure(runs, traced, title), out_dir, "step_trace")
    written += _save(_status_figure(runs, title, unit), out_dir, "status")
    return written


def plot_scaling(runs: pd.DataFrame, title: str, out_dir: Path) -> list[Path]:
    """Figures of one group from the runs table alone (no step trace)."""
    return plot_group(runs, None, title, out_dir)
