"""The kit's summary step survives an implausible run (issue 44: CI failed with
``KeyError: 'why_slower_html'`` when the dry mode's bf16 MFU came out 147 %, and the
combined tables were never written): the combined tables hold every output of the
aggregate rule, and a run whose MFU cannot be true is reported ``implausible`` with its
reason in ``summary.txt``, never a success and never a crash."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.gpu_proof.tables import TABLE_FILES
from llmbench.aggregate.job import OUTPUTS, RESULT_OUTPUTS
from tests.helpers import REPO, Sweep


def test_the_kit_writes_every_output_of_the_aggregate_rule() -> None:
    assert sorted(TABLE_FILES) == sorted(OUTPUTS + RESULT_OUTPUTS)


def summary_step(out: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "benchmarks.gpu_proof", "summary", str(out)],
        capture_output=True, text=True, timeout=300, cwd=REPO,
    )  # fmt: skip


@pytest.mark.workflow
@pytest.mark.parametrize("peak_factor", [1.0, 1 / 50])
def test_the_summary_survives_an_implausible_run(
    finished_sweep: Sweep, tmp_path: Path, peak_factor: float
) -> None:
    """The session's sweep as the kit's workflow step left it; a CPU peak 50 times too low
    (as one measured under load was) makes every run's MFU impossible."""
    out = tmp_path / "proof"
    shutil.copytree(finished_sweep.results, out / "workflow/results", symlinks=True)
    peak_file = out / "workflow/results/calibration/cpu_peak.json"
    peak = json.loads(peak_file.read_text())
    peak["peak_flops_per_device"] = {
        dtype: flops * peak_factor for dtype, flops in peak["peak_flops_per_device"].items()
    }
    peak_file.write_text(json.dumps(peak))
    proc = summary_step(out)
    assert "Traceback" not in proc.stderr + proc.stdout
    assert "combined tables not written" not in proc.stdout, proc.stdout
    summary = json.loads((out / "summary.json").read_text())
    assert summary["runs_table"] == "tables/runs.parquet"
    assert (out / "tables/why_slower.html").is_file() and (out / "tables/result.json").is_file()
    text = (out / "summary.txt").read_text()
    statuses = {run["status"] for run in summary["runs"]}
    if peak_factor == 1.0:
        assert statuses == {"success"} and all(0 < r["mfu"] <= 1 for r in summary["runs"])
    else:
        assert statuses == {"implausible"} and proc.returncode == 1
        assert all("is above 100 %" in r["reason"] for r in summary["runs"])
        assert "implausible" in text and "is above 100 %" in text
        assert text.endswith("FAIL: see the steps and runs above\n")
