"""Names of the scaling plots' files: what the workflow expects, without matplotlib (the
Snakefile is evaluated again in every cluster job, so it imports only light modules)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

FIGURES = (
    "step_time", "tokens_per_s", "mfu", "efficiency", "reference", "step_trace", "status",
)  # fmt: skip
FORMATS = ("svg", "png")


def plot_files(out_dir: Path, names: Sequence[str] = FIGURES) -> list[Path]:
    """The files of figures ``names`` in ``out_dir`` (``plots.plot_group`` writes a subset)."""
    return [out_dir / f"{name}.{fmt}" for name in names for fmt in FORMATS]
