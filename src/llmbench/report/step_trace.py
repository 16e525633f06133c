"""The step trace figure: per-iteration step time of every run of a scaling group, the
averaging window shaded. Beyond ``TRACE_MAX_RUNS`` runs the median and min-max range per
dtype and scale instead; beyond ``TRACE_MAX_LABELS`` lines the colour says the scale (a
colour bar) and the line style the dtype (a legend) instead of a label at each line's end.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import matplotlib

matplotlib.use("Agg")  # files only; never a display
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from matplotlib.cm import ScalarMappable
from matplotlib.collections import LineCollection
from matplotlib.colors import BoundaryNorm, ListedColormap
from matplotlib.lines import Line2D

from llmbench.report.figures import END_LABEL, end_label, subplots, title_figure
from llmbench.report.log_axis import log_y as readable_log_y

# Up to this many runs the step trace has a line per run; beyond, a line and band per
# configuration (thousands of overlapping lines show nothing and take seconds to draw).
TRACE_MAX_RUNS = 100
# Above this many points the trace's lines are one embedded image in the SVG (text and
# axes stay vector), so that long runs do not make a file of many megabytes.
TRACE_VECTOR_POINTS = 20_000


def positions(ids: pd.Series, keys: pd.Series) -> np.ndarray:
    """The position in ``keys`` of each of ``ids`` (the first, where a key repeats), -1
    where absent: hashed by Arrow, without a Python string per step."""
    found = pc.index_in(pa.array(ids, pa.large_string()),
                        value_set=pa.array(keys, pa.large_string()))  # fmt: skip
    return found.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)


def _trace_lines(order: pd.DataFrame, steps: pd.DataFrame) -> tuple[list[np.ndarray], np.ndarray]:
    """(iteration, step time) of each run of ``order`` that has steps, in ``order``'s order,
    and each line's position in ``order``: one sort, not one selection per run."""
    rank = positions(steps["run_id"], order["run_id"])
    keep = np.flatnonzero(rank >= 0)
    keep = keep[np.argsort(rank[keep], kind="stable")]  # each run's steps together, in order
    rank = rank[keep]
    xy = np.column_stack([steps["iteration"].to_numpy(float)[keep],
                          steps["step_time_s"].to_numpy(float)[keep]])  # fmt: skip
    if not len(xy):
        return [], rank
    starts = np.flatnonzero(np.diff(rank)) + 1
    return np.split(xy, starts), rank[np.r_[0, starts]]


TRACE_MAX_LABELS = 20
"""Up to this many lines (runs, or configurations) the step trace labels each: spread one
line height apart, 20 fit the axes' height. Beyond, a line's colour says its scale and its
style its dtype (``_keyed_by_scale``)."""


def _colours(count: int) -> Callable[[int], tuple[float, ...]]:
    """Colour of line ``i`` of ``count`` labelled lines: 10 distinct, or 20 (in pairs of a
    dark and a light shade) for more."""
    cmap = plt.get_cmap("tab10" if count <= 10 else "tab20")
    return lambda i: cmap(i % cmap.N)


DTYPE_STYLES = ("solid", "dashed", "dotted")
"""Line style of each dtype (the schema allows three) where colours mean scales."""


def _keyed_by_scale(
    ax: plt.Axes, dtypes: Sequence[str], gpus: Sequence[int], unit: str
) -> tuple[list[tuple[float, ...]], list[str]]:
    """Colour and line style of each line (of ``dtypes[i]`` at ``gpus[i]``) when there are
    too many lines to label: the colour is the scale, from a sequential map whose colour
    bar names every scale, and the style is the dtype, named by a legend over the axes. A
    sweep of 2 dtypes at 11 scales stays readable this way, where 22 distinct colours
    would repeat and 22 labels would not fit."""
    scales = sorted(set(gpus))
    kinds = list(dict.fromkeys(dtypes))
    # viridis without its last, pale yellow seventh: every scale's line shows on white
    cmap = ListedColormap(matplotlib.colormaps["viridis"](np.linspace(0.0, 0.85, len(scales))))
    bar = ax.get_figure().colorbar(
        ScalarMappable(BoundaryNorm(np.arange(len(scales) + 1) - 0.5, cmap.N), cmap),
        ax=ax, use_gridspec=False, label=f"scale ({unit})",
    )  # fmt: skip
    bar.set_ticks(range(len(scales)), labels=[str(s) for s in scales])
    bar.minorticks_off()
    style = {d: DTYPE_STYLES[k % len(DTYPE_STYLES)] for k, d in enumerate(kinds)}
    handles = [Line2D([], [], color="0.25", linestyle=style[d], label=d) for d in kinds]
    ax.legend(handles=handles, loc="lower left", bbox_to_anchor=(0.0, 1.0), ncols=len(kinds),
              frameon=False, fontsize="small", borderaxespad=0.2)  # fmt: skip
    colour = {s: cmap(k) for k, s in enumerate(scales)}
    return [colour[g] for g in gpus], [style[d] for d in dtypes]


def _draw_runs(ax: plt.Axes, order: pd.DataFrame, steps: pd.DataFrame, unit: str) -> None:
    segments, positions = _trace_lines(order, steps)
    at = positions.tolist()
    if len(order) <= TRACE_MAX_LABELS:
        colours = _colours(len(order))
        seg_colours, seg_styles = [colours(i) for i in at], ["solid"]
        for xy, i, colour in zip(segments, at, seg_colours, strict=True):
            dtype, gpus = order["dtype"].iat[i], order["gpus"].iat[i]
            end_label(ax, xy[:, 0], xy[:, 1], f"{dtype} x{gpus}", colour)
    else:
        run_colours, run_styles = _keyed_by_scale(
            ax, order["dtype"].astype(str).tolist(), order["gpus"].astype(int).tolist(), unit
        )
        seg_colours, seg_styles = [run_colours[i] for i in at], [run_styles[i] for i in at]
    raster = sum(len(xy) for xy in segments) > TRACE_VECTOR_POINTS
    ax.add_collection(LineCollection(segments, colors=seg_colours, linestyles=seg_styles,
                                     linewidths=1.2, rasterized=raster))  # fmt: skip


def _draw_bands(ax: plt.Axes, order: pd.DataFrame, steps: pd.DataFrame, unit: str) -> None:
    """Median and min-max of step time per iteration of each (dtype, scale)."""
    rank = positions(steps["run_id"], order["run_id"])
    keep = rank >= 0
    # ``order`` is sorted by dtype and scale, so configuration codes follow that order
    codes, labels = pd.factorize(order["dtype"].astype(str) + " x" + order["gpus"].astype(str))
    if len(labels) <= TRACE_MAX_LABELS:
        colours = [_colours(len(labels))(k) for k in range(len(labels))]
        styles = ["solid"] * len(labels)
    else:
        first = order.iloc[np.unique(codes, return_index=True)[1]]  # one row per code
        colours, styles = _keyed_by_scale(
            ax, first["dtype"].astype(str).tolist(), first["gpus"].astype(int).tolist(), unit
        )
    frame = pd.DataFrame({
        "config": codes[rank[keep]],
        "run": rank[keep],
        "iteration": steps["iteration"].to_numpy()[keep],
        "t": steps["step_time_s"].to_numpy(float)[keep],
    })  # fmt: skip
    runs_per_config = frame.groupby("config")["run"].nunique()
    stats = frame.groupby(["config", "iteration"], sort=True)["t"].agg(["median", "min", "max"])
    for code, part in stats.groupby(level="config", sort=True):
        x = part.index.get_level_values("iteration").to_numpy(float)
        colour = colours[int(code)]
        ax.fill_between(x, part["min"].to_numpy(), part["max"].to_numpy(), color=colour,
                        alpha=0.25, linewidth=0)  # fmt: skip
        median = part["median"].to_numpy()
        ax.plot(x, median, color=colour, linestyle=styles[int(code)], linewidth=1.2)
        if len(labels) <= TRACE_MAX_LABELS:
            n = int(runs_per_config[code])
            text = f"{labels[code]} ({n} run{'' if n == 1 else 's'})"
            end_label(ax, x, median, text, colour)


def trace_figure(runs: pd.DataFrame, steps: pd.DataFrame, title: str, unit: str) -> plt.Figure:
    fig, ax = subplots((7.2, 4.4))
    order = runs.sort_values(["dtype", "gpus"], kind="stable").reset_index(drop=True)
    many = len(order) > TRACE_MAX_RUNS
    (_draw_bands if many else _draw_runs)(ax, order, steps, unit)
    ax.autoscale()
    lo, hi = int(order["window_first"].min()), int(order["window_last"].max())
    ax.axvspan(lo - 0.5, hi + 0.5, color="#1f77b4", alpha=0.12, lw=0)
    ax.text((lo + hi) / 2, 0.98, f"averaging window {lo}-{hi}", transform=ax.get_xaxis_transform(),
            ha="center", va="top", fontsize="small")  # fmt: skip
    readable_log_y(ax)
    labelled = any(t.get_gid() == END_LABEL for t in ax.texts)
    ax.margins(x=0.12 if labelled else 0.03)  # room on the right for the end labels
    ax.set_xlabel("iteration (as the framework numbers it)")
    ax.set_ylabel("step time (s, log)")
    what = "median and range per configuration" if many else "one line per run"
    title_figure(fig, title, f"step time per iteration, {what}")
    ax.grid(True, alpha=0.3)
    return fig
