"""A sweep ends with a short summary and the paths to its tables (issue 44: a run ended
with no summary or path to the tables), printed by the workflow's ``onsuccess`` and
``onerror`` handlers through ``llmbench.workflow.finish``."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from llmbench.workflow.finish import print_summary, summary_lines
from tests.helpers import Sweep

RUNS = ["a_perf", "b_perf", "c_perf"]


@pytest.mark.workflow
def test_a_finished_sweep_prints_its_outcomes_and_paths(finished_sweep: Sweep) -> None:
    err = finished_sweep.first_run.stderr
    lines = [line for line in err.splitlines() if line.startswith("llmbench: ")]
    assert lines[-3] == "llmbench: sweep done: 2 runs: 2 success", lines
    assert "results/tables/runs.html" in lines[-2] and "results/result.json" in lines[-2]
    assert "results/tables/why_slower.html" in lines[-2]
    assert lines[-1].endswith("snakemake --report results/report.html")


def write_summaries(results: Path, statuses: dict[str, str]) -> None:
    for run, status in statuses.items():
        (results / "runs" / run).mkdir(parents=True)
        (results / "runs" / run / "summary.json").write_text(json.dumps({"status": status}))


def test_a_stopped_sweep_counts_what_has_a_result(tmp_path: Path) -> None:
    write_summaries(tmp_path, {"a_perf": "success", "b_perf": "failed"})
    lines = summary_lines(RUNS, succeeded=False, results=tmp_path)
    assert lines[0] == (
        "sweep stopped by failed jobs (their logs are named above): 2 of 3 runs have a "
        "result (1 success, 1 failed); 1 run without, e.g. c_perf"
    )
    assert lines[1].startswith("the same command again continues it")
    assert len(lines) == 2  # no tables yet: no paths to them


def test_a_done_sweep_reads_the_judged_outcomes(tmp_path: Path) -> None:
    write_summaries(tmp_path, dict.fromkeys(RUNS, "success"))
    statuses = {"a_perf": "success", "b_perf": "implausible", "c_perf": "success"}
    runs = [{"run_id": run, "status": status} for run, status in statuses.items()]
    (tmp_path / "result.json").write_text(json.dumps({"runs": runs}))
    lines = summary_lines(RUNS, succeeded=True, results=tmp_path)
    assert lines[0] == "sweep done: 3 runs: 2 success, 1 implausible"
    one = summary_lines(["a_perf"], succeeded=True, results=tmp_path)[0]
    assert one == "sweep done: 1 run: 1 success"


@pytest.mark.parametrize("damage", [b"{", b"[1, 2]", b'{"runs": "x"}', b'{"runs": [3]}'])
def test_a_damaged_result_file_never_fails_the_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damage: bytes
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "result.json").write_bytes(damage)
    out = io.StringIO()
    try:
        print_summary(RUNS, True, out=out)
    finally:  # the session's check of every results/result.json would read it next
        (tmp_path / "results" / "result.json").unlink()
    assert out.getvalue().splitlines()[0] == "llmbench: sweep done: 3 runs"
