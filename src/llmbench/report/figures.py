"""What every figure of the report shares: the scale axis, a line's label at its end
(moved apart from its neighbours by ``lay_out``), the title over the figure, and saving it
as SVG and PNG with the same bytes for the same data (no dates, fixed SVG ids), SVG text as
text (``<text>`` in DejaVu Sans, else the viewer's sans-serif), not glyph outlines.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; never a display
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.layout_engine import ConstrainedLayoutEngine
from matplotlib.ticker import FixedLocator, NullLocator

FORMATS = ("svg", "png")
PNG_DPI = 110
"""Also the figures' own dpi: the layout then measures text at the PNG's resolution, and
the PNG's draw finds every text extent already measured."""


def scale_axis(ax: plt.Axes, scales: Sequence[int], unit: str) -> None:
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


def end_label(ax: plt.Axes, x: Sequence[float], y: Sequence[float], text: str,
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


def save_figure(fig: plt.Figure, out_dir: Path, name: str) -> list[Path]:
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


def subplots(figsize: tuple[float, float]) -> tuple[plt.Figure, plt.Axes]:
    with plt.rc_context(_FIGURE_RC):
        return plt.subplots(figsize=figsize, dpi=PNG_DPI, layout="none")


TITLE_MARGIN_IN = 0.1
"""Space kept free on either side of a figure's title (inches)."""


def title_figure(fig: plt.Figure, group: str, what: str) -> None:
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
