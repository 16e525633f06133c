"""Log axes label their ticks as numbers a reader writes (issue 44: a step-time axis
between 0.55 and 0.7 s was labelled ``6x10^-1``): the step trace and the tokens/s figure
drawn by ``plot_group``, read back from the SVG text."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from llmbench.report.log_axis import readable_number
from llmbench.report.scaling_plots import plot_group
from tests.helpers import sweep_tables, tiny_cpu
from tests.report.test_scaling_plots import svg_texts

POWER = re.compile("[\u00d7\u2070-\u209f\u00b9\u00b2\u00b3]")
"""A multiplication sign or a superscript digit: a label written as a power of ten."""


def test_a_narrow_step_time_axis_reads_as_seconds(tmp_path: Path) -> None:
    runs, steps = sweep_tables(tiny_cpu((1, 2)))
    steps = steps.assign(step_time_s=np.linspace(0.55, 0.7, len(steps)))
    plot_group(runs, steps, "narrow", tmp_path)
    texts = svg_texts(tmp_path / "step_trace.svg")
    assert not [t for t in texts if POWER.search(t)], texts
    ticks = [t for t in texts if re.fullmatch(r"[0-9.,]+", t)]
    assert "0.6" in ticks and all(float(t) < 1 for t in ticks if "." in t), ticks


def test_the_tokens_axis_reads_as_whole_numbers(tmp_path: Path) -> None:
    runs, steps = sweep_tables(tiny_cpu((1, 2, 4)))
    plot_group(runs, steps, "tokens", tmp_path)
    texts = svg_texts(tmp_path / "tokens_per_s.svg")
    assert not [t for t in texts if POWER.search(t)], texts


@pytest.mark.parametrize(
    ("value", "text"),
    [(0.6, "0.6"), (0.612345, "0.612"), (2.0, "2"), (40.0, "40"), (1500.0, "1,500"),
     (250_000.0, "250,000"), (0.002, "0.002"), (3e8, "3\u00d710\u2078"), (1e9, "10\u2079"),
     (2e-5, "2\u00d710\u207b\u2075")],
)  # fmt: skip
def test_readable_number(value: float, text: str) -> None:
    assert readable_number(value) == text
