"""The "Why slower" page says the same evidence the same way (issue 44: step-time spread
was "(no published figure)" on one run and "could explain 0-0.5 %" on the next, as its
slow steps added nothing or a little to the mean), and counts read as English ("1 known
cause"). Read as a person reads it too: in real headless Chromium."""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from llmbench.aggregate.explain import RunFacts, explain
from llmbench.report.html_tables import why_slower_html

CHROMIUM = shutil.which("chromium")


def facts(run_id: str, window: list[float]) -> RunFacts:
    steps = pd.DataFrame(
        {"run_id": run_id, "iteration": np.arange(len(window)), "step_time_s": window,
         "in_window": True}
    )  # fmt: skip
    row = {"run_id": run_id, "verdict": None, "deviation_pct": None, "workload": "tiny-llama",
           "size": "tiny", "dtype": "fp32", "gpu_type": "cpu", "gpus": 1, "nodes": 1,
           "global_batch_size": 8, "release": "dgxc-2025"}  # fmt: skip
    return RunFacts(row, Path("results"), steps=steps)


# Both spread well over 5 %: the first's mean lies below its median (its slow steps add
# nothing to the mean), the second's above it.
SPREADS = {
    "mean_below_median": [1.0, 1.0, 1.0, 1.3, 1.3, 1.3, 1.3, 0.5, 0.5, 1.3],
    "mean_above_median": [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.6, 1.6, 1.0],
}


def page() -> str:
    return why_slower_html(
        [explain(facts(run, window)).as_dict() for run, window in SPREADS.items()]
    )


def spread_labels(text: str) -> list[str]:
    return re.findall(r"step_spread: step time varies across the window(?:</b>)? \(([^)]*)\)", text)


def test_the_same_evidence_is_labelled_the_same_way() -> None:
    labels = spread_labels(page())
    assert len(labels) == 2, labels
    assert labels[0] == "could explain 0 % of the step time"
    assert re.fullmatch(r"could explain 0-\d+(\.\d+)? % of the step time", labels[1]), labels
    assert "no published figure" not in page()


def test_counts_read_as_english() -> None:
    (one,) = [explain(facts("r", SPREADS["mean_above_median"]))]
    assert one.summary.startswith("1 known cause; first: ")


@pytest.mark.chromium
@pytest.mark.prerequisite(CHROMIUM is not None, "Debian's chromium is not installed")
def test_chromium_shows_the_page_with_one_wording(tmp_path: Path) -> None:
    path = tmp_path / "why_slower.html"
    path.write_text(page())
    with tempfile.TemporaryDirectory() as profile:
        dom = subprocess.run(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             f"--user-data-dir={profile}", "--dump-dom", path.resolve().as_uri()],
            capture_output=True, text=True, timeout=180,
        )  # fmt: skip
    assert dom.returncode == 0, dom.stderr[-2000:]
    labels = spread_labels(dom.stdout)
    assert len(labels) == 2 and all(label.startswith("could explain ") for label in labels)
    assert "no published figure" not in dom.stdout and "cause(s)" not in dom.stdout
