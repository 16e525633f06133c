"""A deleted run folder is redone by the next invocation (docs/failures.md: "redoes ...
the missing ones"), and the tables, ``result.json`` and ``explain`` then hold the new
run's numbers, not the deleted ones. Snakemake regenerates a missing file only for a
target or for a job that runs anyway, so every run's record is a target of ``rule all``.
A sweep of its own (a copy of another would move the stage path, a param of every run)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from llmbench.cli import main as cli_main
from tests.helpers import TWO_RUN_CONFIG, snakemake, write_config

pytestmark = pytest.mark.workflow

RUN = "tiny-llama_tiny_fp32_cpux2_perf"
KEPT = "tiny-llama_tiny_fp32_cpux1_perf"


def started(results: Path) -> dict[str, pd.Timestamp]:
    runs = pd.read_parquet(results / "tables/runs.parquet")
    return dict(zip(runs.run_id, map(pd.Timestamp, runs.started_at), strict=True))


def test_a_deleted_run_folder_is_redone_and_replaces_its_numbers(tmp_path: Path, capsys) -> None:
    work = tmp_path
    write_config(work, TWO_RUN_CONFIG)
    first = snakemake(work, "--cores", "2")
    assert first.returncode == 0, first.stderr[-3000:]
    results = work / "results"
    before = started(results)
    shutil.rmtree(results / "runs" / RUN)

    proc = snakemake(work, "--cores", "2")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Nothing to be done" not in proc.stdout + proc.stderr
    assert (results / "runs" / RUN / "attempt-1" / "train.log").is_file()
    after = started(results)
    assert after[KEPT] == before[KEPT]  # the other run was not redone
    assert after[RUN] != before[RUN]  # the tables hold the redone run's numbers
    record = json.loads((results / "runs" / RUN / "run.json").read_text())
    assert pd.Timestamp(record["started_at"]) == after[RUN]
    result = json.loads((results / "result.json").read_text())
    (row,) = [r for r in result["runs"] if r["run_id"] == RUN]
    assert pd.Timestamp(row["provenance"]["started_at"]) == after[RUN]
    # explain reads the rebuilt tables: the redone run, one answer
    assert cli_main(["explain", "--results", str(results), RUN, "--format", "json"]) == 0
    (explained,) = json.loads(capsys.readouterr().out)
    assert explained["run_id"] == RUN
    again = snakemake(work, "--cores", "2", "-n")
    assert "Nothing to be done" in again.stdout + again.stderr
