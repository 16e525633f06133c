"""The embedded sweep run twice into one history, the second time with one run slowed
on purpose (the trainer's ``slow`` fault): compare flags exactly that key; the report has
a History section; the sweep archives and verifies."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from tests.helpers import TINY_WINDOW, snakemake, snakemake_command, tiny_config, write_config

pytestmark = pytest.mark.workflow

SLOW_RUN = "tiny-llama_tiny_fp32_cpux2_perf"
SLOW_STEP_S = 4.0
"""Added to each step of the slowed run: ~80x a tiny CPU step on an idle machine, and still
over 4x the slowest step CI's load has given the 2-rank run (0.57 s, with four test
workers on two cores), so the slowed run is flagged whatever the load of either sweep."""
SLOW_FROM = TINY_WINDOW[0]
"""Slowed from the first step of the averaging window: compare reads only the window's
steps, and the steps before it need not take a second more each."""
TOLERANCE = 0.95
"""compare's widest tolerance: only a run almost 2x slower is flagged, which load alone
rarely does to a one-rank run and the slowed run always does (over 5x)."""


def llmbench(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "llmbench.cli", *args],
        cwd=cwd, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip


@pytest.fixture(scope="module")
def two_sweeps(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path], list[str]]:
    root = tmp_path_factory.mktemp("history-sweeps")
    history = root / "history"
    config = tiny_config(history={"path": str(history), "add": True, "cluster": "ci"})
    workdirs, ids = [], []
    for i, fault in enumerate(("", f"slow={SLOW_STEP_S}@{SLOW_FROM}:{SLOW_RUN}")):
        workdir = root / f"sweep{i}"
        workdir.mkdir()
        write_config(workdir, config)
        proc = subprocess.run(
            snakemake_command(workdir, "--cores", "2"),
            cwd=workdir, capture_output=True, text=True, timeout=900,
            env=dict(os.environ, PYTHONUNBUFFERED="1", LLMBENCH_FAULT=fault),
        )  # fmt: skip
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        workdirs.append(workdir)
        ids.append(json.loads((workdir / "results/tables/sweep.json").read_text())["sweep_id"])
    return history, workdirs, ids


def test_both_sweeps_are_in_the_history(two_sweeps) -> None:
    history, workdirs, ids = two_sweeps
    for workdir, sweep_id in zip(workdirs, ids, strict=True):
        runs = pd.read_parquet(workdir / "results/tables/runs.parquet")
        assert set(runs["sweep_id"]) == {sweep_id}
        stored = list(history.glob(f"cluster=ci/date=*/sweep={sweep_id}/*.parquet"))
        assert sorted(p.name for p in stored) == ["runs.parquet", "steps.parquet", "sweep.parquet"]
    listed = llmbench("history", "list", "--format", "json", cwd=workdirs[0])
    assert listed.returncode == 0, listed.stderr
    assert [s["sweep_id"] for s in json.loads(listed.stdout)] == ids


def test_compare_flags_exactly_the_slowed_key(two_sweeps) -> None:
    """With two sweeps the history cannot yet tell a key's run-to-run spread, and a shared
    machine's load can slow a CPU run severalfold between two sweeps minutes apart, so the
    tolerance is wide and the slowdown wider (benchmarks/compare_false_alarms.py measures
    the default tolerance)."""
    _, workdirs, ids = two_sweeps
    args = ("compare", ids[0], ids[1], "--tolerance", str(TOLERANCE), "--format", "json")
    proc = llmbench(*args, cwd=workdirs[1])
    assert proc.returncode == 1, proc.stdout + proc.stderr  # a regression: non-zero
    keys = {f"{k['workload']}_{k['size']}_{k['dtype']}_{k['gpu_type']}x{k['gpus']}_perf": k
            for k in json.loads(proc.stdout)["keys"]}  # fmt: skip
    assert set(keys) == {SLOW_RUN, "tiny-llama_tiny_fp32_cpux1_perf"}
    assert keys[SLOW_RUN]["verdict"] == "slower", keys[SLOW_RUN]
    assert keys[SLOW_RUN]["ci_low"] > 1 + TOLERANCE
    other = keys["tiny-llama_tiny_fp32_cpux1_perf"]
    if other["verdict"] == "slower":
        # Really slower: CI's other tests can load the 2 cores several times as much during
        # the second sweep as during the first (3.8x seen with four test workers). Load
        # moves a tiny step by well under a second; the fault adds SLOW_STEP_S to each
        # step of one run only, and that is what sets the two keys apart.
        slowed = keys[SLOW_RUN]
        added = (slowed["step_time_b_s"] - slowed["step_time_a_s"]) - (
            other["step_time_b_s"] - other["step_time_a_s"]
        )
        assert added > SLOW_STEP_S / 2, (other, slowed)
    else:
        assert other["verdict"] in ("same", "insufficient data"), other


def test_report_has_a_history_category_with_trends(two_sweeps) -> None:
    _, workdirs, _ = two_sweeps
    trends = sorted(p.name for p in (workdirs[1] / "results/history/trends").glob("*.svg"))
    assert trends == ["tiny-llama_tiny_fp32_cpux1.svg", "tiny-llama_tiny_fp32_cpux2.svg"]
    report = workdirs[1] / "results" / "report.html"
    proc = snakemake(workdirs[1], "--report", str(report))
    assert proc.returncode == 0, proc.stderr[-3000:]
    html = report.read_text()
    assert "History" in html and "tiny-llama_tiny_fp32_cpux2.svg" in html


def test_sweep_archive_verifies(two_sweeps) -> None:
    _, workdirs, ids = two_sweeps
    out = workdirs[1] / f"{ids[1]}.tar.zst"
    made = llmbench("archive", "results", "-o", out.name, cwd=workdirs[1])
    assert made.returncode == 0, made.stderr
    checked = llmbench("archive", "--verify", out.name, cwd=workdirs[1])
    assert checked.returncode == 0 and "members verified" in checked.stdout, checked.stderr


def test_history_add_without_path_is_refused(tmp_path: Path) -> None:
    write_config(tmp_path, tiny_config(history={"add": True}))
    proc = snakemake(tmp_path, "--cores", "1", "-n")
    assert proc.returncode != 0
    assert "history.add: true needs history.path" in proc.stderr
    assert "Traceback" not in proc.stderr
