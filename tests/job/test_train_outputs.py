"""The train job's outputs (``llmbench.job.train_outputs``) written from a real attempt
folder, and a record whose log is gone or unreadable (``llmbench.job.run_record``)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

from llmbench.job.run_record import summarize_record
from llmbench.job.train_outputs import write_train_outputs
from tests.aggregate.test_runs_and_steps import record
from tests.parsers.test_parse_formats import nemo_lines

OUTPUT_FILES = {
    "summary": "summary.json",
    "steps": "steps.parquet",
    "telemetry": "telemetry.parquet",
    "energy": "energy.json",
}


def attempt_folder(tmp_path: Path, log: list[str] | None) -> tuple[dict, dict[str, Path]]:
    """A run folder with ``run.json`` and its attempt's log (none when ``log`` is None),
    and the train rule's output paths in it."""
    rec = record(gpus=1)
    run_dir = tmp_path / rec["run_id"]
    (run_dir / "attempt-1").mkdir(parents=True)
    if log is not None:
        (run_dir / rec["log"]).write_text("\n".join(log) + "\n")
    (run_dir / "run.json").write_text(json.dumps(rec))
    outputs = {"record": run_dir / "run.json"}
    outputs.update({name: run_dir / file for name, file in OUTPUT_FILES.items()})
    return rec, outputs


def test_the_train_outputs_of_an_attempt(tmp_path: Path) -> None:
    rec, outputs = attempt_folder(tmp_path, nemo_lines())
    write_train_outputs(rec, outputs)
    summary = json.loads(outputs["summary"].read_text())
    assert (summary["run_id"], summary["attempt"]) == (rec["run_id"], 1)
    assert (summary["status"], summary["n_iterations"]) == ("success", 50)
    steps = pd.read_parquet(outputs["steps"])
    assert list(steps["iteration"]) == list(range(50))
    assert set(steps["step_time_s"]) == {10.5, 11.5}
    assert pd.read_parquet(outputs["telemetry"]).empty  # sampling was off
    energy = json.loads(outputs["energy"].read_text())
    assert math.isnan(energy["energy_j"]) and energy["energy_reason"].startswith("no telemetry")


def test_a_log_deleted_during_the_run_is_its_outcome_not_an_error(tmp_path: Path) -> None:
    rec, outputs = attempt_folder(tmp_path, None)
    summary, _ = summarize_record(outputs["record"])
    assert (summary["status"], summary["reason"]) == ("no_data", "log_missing")
    assert summary["run_id"] == rec["run_id"]
    write_train_outputs(rec, outputs)  # every output still written: the record stands
    assert pd.read_parquet(outputs["steps"]).empty
    assert json.loads(outputs["summary"].read_text())["reason"] == "log_missing"


def test_a_log_that_cannot_be_read_is_unreadable(tmp_path: Path) -> None:
    rec, outputs = attempt_folder(tmp_path, None)
    (outputs["record"].parent / rec["log"]).mkdir()  # a folder where the log should be
    summary, _ = summarize_record(outputs["record"])
    assert (summary["status"], summary["reason"]) == ("no_data", "unreadable")
