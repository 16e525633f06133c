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
the figure's, and never wider than it.
Only successful ``perf`` runs are drawn in the metric figures. The same tables give the
same bytes (no dates, fixed SVG ids). SVG text is text (``<text>`` in DejaVu Sans, else
the viewer's sans-serif), not glyph outlines.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; never a display
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from matplotlib.cm import ScalarMappable
from matplotlib.collections import LineCollection
from matplotlib.colors import BoundaryNorm, ListedColormap
from matplotlib.layout_engine import ConstrainedLayoutEngine
from matplotlib.lines import Line2D
from matplotlib.ticker import FixedLocator, NullLocator

from llmbench.core.devices import scale_unit
from llmbench.report.log_axis import log_y as readable_log_y

FIGURES = (
    "step_time", "tokens_per_s", "mfu", "efficiency", "reference", "step_trace", "status",
)  # fmt: skip
FORMATS = ("svg", "png")
PNG_DPI = 110
"""Also the figures' own dpi: the layout then measures text at the PNG's resolution, and
the PNG's draw finds every text extent already measured."""
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


END_LABEL = "end-label"
"""The ``gid`` of a line's label at its last point (``lay_out`` moves these apart)."""


def _end_label(ax: plt.Axes, x: Sequence[float], y: Sequence[float], text: str,
               colour: str) -> None:  # fmt: skip
    ax.annotate(text, (x[-1], y[-1]), xytext=(6, 0), textcoords="offset points", gid=END_LABEL,
                color=colour, va="center", fontsize="small", fontweight="bold")  # fmt: skip


def _spread_end_labels(ax: plt.Axes) -> None:
    """Move the end labels of lines that end close together apart vertically, so that they
    do not print over each other: labels keep their order, each run of labels that would
    touch is centred on its lines' ends, one line height apart, and all stay within the
    axes' height (so inside the space the layout gave them)."""
    to_points = 72 / ax.get_figure().dpi
    ends = [(t, ax.transData.transform(t.xy)[1] * to_points) for t in ax.texts
            if t.get_gid() == END_LABEL]  # fmt: skip
    ends = [(t, y) for t, y in ends if np.isfinite(y)]  # a NaN end is not drawn at all
    if len(ends) < 2:
        return
    labels, anchors = [t for t, _ in ends], [y for _, y in ends]
    order = sorted(range(len(labels)), key=anchors.__getitem__)
    gap = 1.2 * max(label.get_fontsize() for label in labels)
    runs: list[list[int]] = []  # runs of touching labels, bottom to top
    for i in order:
        runs.append([i])
        while len(runs) > 1 and _run_start(runs[-2], anchors, gap) + len(runs[-2]) * gap > (
            _run_start(runs[-1], anchors, gap)
        ):
            runs[-2:] = [runs[-2] + runs[-1]]
    placed = [p for run in runs for p in _run_positions(run, anchors, gap)]
    bottom, top = (v * to_points for v in (ax.bbox.y0, ax.bbox.y1))
    count = len(placed)
    for k in range(count):  # inside the axes from the top down, then from the bottom up
        placed[k] = min(placed[k], top - (count - k - 0.5) * gap)
    for k in range(count):
        placed[k] = max(placed[k], bottom + (k + 0.5) * gap)
    for i, position in zip(order, placed, strict=True):
        labels[i].xyann = (labels[i].xyann[0], position - anchors[i])


def _run_start(run: list[int], anchors: list[float], gap: float) -> float:
    """Position of the lowest label of ``run`` when the run is centred on its anchors."""
    return sum(anchors[i] for i in run) / len(run) - (len(run) - 1) * gap / 2


def _run_positions(run: list[int], anchors: list[float], gap: float) -> list[float]:
    start = _run_start(run, anchors, gap)
    return [start + k * gap for k in range(len(run))]


def lay_out(fig: plt.Figure) -> None:
    """The layout every figure is saved with: constrained, once (a figure that keeps a
    layout engine is laid out again by every savefig, a quarter of the plotting time),
    then the lines' end labels moved apart where they would overlap."""
    ConstrainedLayoutEngine().execute(fig)
    for ax in fig.axes:
        _spread_end_labels(ax)


def _save(fig: plt.Figure, out_dir: Path, name: str) -> list[Path]:
    lay_out(fig)  # then one draw per format
    written = []
    with plt.rc_context({**SAME_BYTES, **SVG_TEXT}):
        for fmt in FORMATS:
            path = out_dir / f"{name}.{fmt}"
            fig.savefig(path, metadata=figure_metadata(fmt), **SAVE_OPTIONS[fmt])
            written.append(path)
    plt.close(fig)
    return written


# zlib level 1 for the PNGs: the same pixels, a tenth larger files, a third less time in
# compressing them (3-4 ms of a figure's 100-200 ms)
SAVE_OPTIONS = {"svg": {}, "png": {"dpi": PNG_DPI, "pil_kwargs": {"compress_level": 1}}}

# The same data gives the same bytes: no creation date, and SVG ids (clip paths, glyphs)
# hashed with a fixed salt instead of a random one per file.
SAME_BYTES = {"svg.hashsalt": "llmbench"}

# SVG text as <text> elements (font family DejaVu Sans, then sans-serif), not as glyph
# outlines: searchable and selectable in the report, files a third the size, and a third
# less time per SVG. The PNG is drawn from the same glyphs as before.
SVG_TEXT = {"svg.fonttype": "none"}


# Figures are built with these: no axis uses an offset text (each tick label says its
# whole value).
_FIGURE_RC = {"axes.formatter.useoffset": False}


def _subplots(figsize: tuple[float, float]) -> tuple[plt.Figure, plt.Axes]:
    with plt.rc_context(_FIGURE_RC):
        return plt.subplots(figsize=figsize, dpi=PNG_DPI, layout="none")


TITLE_MARGIN_IN = 0.1
"""Space kept free on either side of a figure's title (inches)."""


def _title(fig: plt.Figure, group: str, what: str) -> None:
    """``group: what`` centred over the figure (not over the axes, which the y labels push
    to the right), on two lines (the group, then what) when one would be wider than the
    figure; a figure narrower than the longer line is widened to fit it. A long group
    name then never runs off the figure's edges, where it would be cut off."""
    text = fig.suptitle(f"{group}: {what}")
    if _width_in(text) + 2 * TITLE_MARGIN_IN > fig.get_figwidth():
        text.set_text(f"{group}\n{what}")
        fig.set_figwidth(max(fig.get_figwidth(), _width_in(text) + 2 * TITLE_MARGIN_IN))


def _width_in(text: plt.Text) -> float:
    """Width of ``text`` (its longest line) in inches, measured at the figure's dpi."""
    fig = text.get_figure()
    return text.get_window_extent(fig.canvas.get_renderer()).width / fig.dpi


def figure_metadata(fmt: str) -> dict[str, str | None]:
    return {"Date": None} if fmt == "svg" else {"Software": "llmbench"}


def _line_figure(ok: pd.DataFrame, title: str, unit: str, column: str, ylabel: str,
                 scale: float = 1.0, log_y: bool = False, ideal: bool = False,
                 zero: bool = False) -> plt.Figure:  # fmt: skip
    fig, ax = _subplots((6.4, 4.2))
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
        readable_log_y(ax)
    if zero:
        ax.set_ylim(bottom=0, top=ax.get_ylim()[1] * 1.1)
    ax.margins(x=0.15)
    ax.set_ylabel(ylabel)
    _title(fig, title, ylabel.split(" (")[0])
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
    fig, ax = _subplots((6.4, 4.2))
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
    _title(fig, title, "measured vs reference step time")
    return fig


# Up to this many runs the step trace has a line per run; beyond, a line and band per
# configuration (thousands of overlapping lines show nothing and take seconds to draw).
TRACE_MAX_RUNS = 100
# Above this many points the trace's lines are one embedded image in the SVG (text and
# axes stay vector), so that long runs do not make a file of many megabytes.
TRACE_VECTOR_POINTS = 20_000


def _positions(ids: pd.Series, keys: pd.Series) -> np.ndarray:
    """The position in ``keys`` of each of ``ids`` (the first, where a key repeats), -1
    where absent: hashed by Arrow, without a Python string per step."""
    found = pc.index_in(pa.array(ids, pa.large_string()),
                        value_set=pa.array(keys, pa.large_string()))  # fmt: skip
    return found.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)


def _trace_lines(order: pd.DataFrame, steps: pd.DataFrame) -> tuple[list[np.ndarray], np.ndarray]:
    """(iteration, step time) of each run of ``order`` that has steps, in ``order``'s order,
    and each line's position in ``order``: one sort, not one selection per run."""
    rank = _positions(steps["run_id"], order["run_id"])
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
            _end_label(ax, xy[:, 0], xy[:, 1], f"{dtype} x{gpus}", colour)
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
    rank = _positions(steps["run_id"], order["run_id"])
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
            _end_label(ax, x, median, text, colour)


def _trace_figure(runs: pd.DataFrame, steps: pd.DataFrame, title: str, unit: str) -> plt.Figure:
    fig, ax = _subplots((7.2, 4.4))
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
    _title(fig, title, f"step time per iteration, {what}")
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
    fig, ax = _subplots((max(4.5, 1.3 * len(scales) + 3), max(2.2, 0.6 * len(configs) + 1.6)))
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
    _title(fig, title, "run status")
    return fig


def plot_group(
    runs: pd.DataFrame, steps: pd.DataFrame | None, title: str, out_dir: Path
) -> list[Path]:
    """Write every figure of one scaling group that has data; return the files written."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for name, fig in group_figures(runs, steps, title):
        written += _save(fig, out_dir, name)
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
        traced = steps[_positions(steps["run_id"], runs["run_id"]) >= 0]
        if not traced.empty:
            yield "step_trace", _trace_figure(runs, traced, title, unit)
    yield "status", _status_figure(runs, title, unit)


TRACE_COLUMNS = ("run_id", "iteration", "step_time_s")
"""The steps table's columns the figures use."""
RUN_COLUMNS = (
    "run_id", "workload", "size", "dtype", "gpu_type", "gpus", "variant", "attempt", "status",
    "reason", "window_first", "window_last", "step_time_mean_s", "tokens_per_s",
    "tokens_per_s_per_gpu", "mfu", "reference_step_time_s",
)  # fmt: skip
"""The runs table's columns the figures use (a group's job reads only these)."""


def read_group(
    runs_path: str | Path, steps_path: str | Path, run_ids: Sequence[str]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The rows of ``run_ids`` in the runs and steps tables (Parquet). Of the steps only
    ``TRACE_COLUMNS``, filtered while reading: a group's job need not load every step of
    the sweep (millions of rows for a large one). The steps file is sorted by group
    (``llmbench.aggregate.runs_and_steps.RUN_ORDER``), so only the row groups whose
    statistics admit the group's workloads, sizes and GPU types are read."""
    wanted = pa.array(list(run_ids), pa.string())  # typed: an empty list has no type
    runs = _read_runs(runs_path, wanted)
    values = {key: {str(v) for v in runs[key].unique().tolist()} for key in _GROUP_KEYS}
    return runs, _read_steps(steps_path, wanted, values)


_GROUP_KEYS = ("workload", "size", "gpu_type")
"""Group keys the steps table has (scaling is in the runs table only)."""


def _row_groups(file: pq.ParquetFile, values: dict[str, set[str]]) -> list[int]:
    """Row groups whose min-max statistics of every key in ``values`` admit one of its
    values (all of them where a statistic is missing)."""
    names = file.schema_arrow.names
    chosen = []
    for i in range(file.metadata.num_row_groups):
        group = file.metadata.row_group(i)
        admits = True
        for key, wanted in values.items():
            stats = group.column(names.index(key)).statistics
            if stats is not None and stats.has_min_max:
                admits &= any(stats.min <= v <= stats.max for v in wanted)
        if admits:
            chosen.append(i)
    return chosen


def _read_runs(path: str | Path, run_ids: pa.Array) -> pd.DataFrame:
    # The whole columns read, then filtered by one hash lookup per run: a third less time
    # than a dataset filter (read_parquet's filters), the same frame.
    table = pq.read_table(path, columns=list(RUN_COLUMNS))
    ids = table.column("run_id")
    table = table.filter(pc.is_in(ids, value_set=run_ids.cast(ids.type)))
    return table.to_pandas()


def _read_steps(path: str | Path, run_ids: pa.Array, values: dict[str, set[str]]) -> pd.DataFrame:
    # Run ids are read dictionary-encoded, as Parquet stores them, and matched once per
    # distinct id of each row group: 3x faster than a filter that compares every step's.
    file = pq.ParquetFile(path, read_dictionary=["run_id"])
    table = file.read_row_groups(_row_groups(file, values), columns=list(TRACE_COLUMNS))
    ids = table.column("run_id")
    keep = [pc.take(pc.is_in(chunk.dictionary, value_set=run_ids), chunk.indices)
            for chunk in ids.chunks]  # fmt: skip
    table = table.filter(pa.chunked_array(keep, pa.bool_()))
    at = table.schema.get_field_index("run_id")
    table = table.set_column(at, "run_id", pc.cast(table.column("run_id"), pa.string()))
    return table.to_pandas(types_mapper={pa.string(): pd.StringDtype("pyarrow")}.get)


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
