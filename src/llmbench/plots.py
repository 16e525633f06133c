"""Scaling plots (SVG and PNG) from the runs table: one figure per metric and scaling
group, one line per dtype. Only successful performance runs are drawn."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; never a display
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.ticker import FixedLocator, NullLocator  # noqa: E402


@dataclass(frozen=True)
class ScalingMetric:
    name: str
    column: str
    ylabel: str
    log_y: bool = False
    ideal: bool = False


SCALING_METRICS: tuple[ScalingMetric, ...] = (
    ScalingMetric("step_time", "step_time_mean_s", "step time (s, mean over window)"),
    ScalingMetric("tokens_per_s", "tokens_per_s", "throughput (tokens/s)", log_y=True, ideal=True),
    ScalingMetric("mfu", "mfu", "MFU (%)"),
)
FORMATS = ("svg", "png")


def plot_files(out_dir: Path) -> list[Path]:
    """Every file ``plot_scaling`` writes into ``out_dir``."""
    return [out_dir / f"{m.name}.{fmt}" for m in SCALING_METRICS for fmt in FORMATS]


def _scale_axis(ax: plt.Axes, scales: Sequence[int], unit: str) -> None:
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(FixedLocator(sorted(set(scales))))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xticklabels([str(s) for s in sorted(set(scales))])
    ax.set_xlabel(f"scale ({unit})")
    ax.grid(True, which="both", alpha=0.3)


def plot_scaling(runs: pd.DataFrame, title: str, out_dir: Path) -> list[Path]:
    """Draw step time, tokens/s (with the ideal linear line) and MFU against scale."""
    out_dir.mkdir(parents=True, exist_ok=True)
    ok = runs[(runs.status == "success") & (runs.variant == "perf")].sort_values("gpus")
    unit = "CPU ranks" if (runs.gpu_type == "cpu").all() else "GPUs"
    written = []
    for metric in SCALING_METRICS:
        fig, ax = plt.subplots(figsize=(6.4, 4.2), layout="constrained")
        for dtype, part in ok.groupby("dtype", sort=True):
            y = part[metric.column] * (100 if metric.name == "mfu" else 1)
            (line,) = ax.plot(part.gpus, y, marker="o", label=str(dtype))
            if metric.ideal and len(part) > 0:
                base = part.iloc[0]
                ideal = base[metric.column] * part.gpus / base.gpus
                ax.plot(part.gpus, ideal, linestyle="--", color=line.get_color(), alpha=0.6,
                        label=f"{dtype} ideal (linear)")
        if ok.empty:
            ax.text(0.5, 0.5, "no successful runs: see the runs table", ha="center",
                    va="center", transform=ax.transAxes)
        else:
            _scale_axis(ax, list(ok.gpus), unit)
            ax.legend(title="dtype", fontsize="small")
        if metric.log_y and not ok.empty:
            ax.set_yscale("log")
        if metric.name == "step_time" and not ok.empty:
            ax.set_ylim(bottom=0)
        ax.set_ylabel(metric.ylabel)
        ax.set_title(f"{title}: {metric.ylabel.split(' (')[0]}")
        for fmt in FORMATS:
            path = out_dir / f"{metric.name}.{fmt}"
            fig.savefig(path, dpi=120 if fmt == "png" else None, metadata=_metadata(fmt))
            written.append(path)
        plt.close(fig)
    return written


def _metadata(fmt: str) -> dict[str, str | None]:
    # No creation dates in the files: the same data gives the same bytes.
    return {"Date": None} if fmt == "svg" else {"Software": "llmbench"}
