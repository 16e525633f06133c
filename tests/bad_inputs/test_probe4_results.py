"""The fourth bad-input probe's result.json cases (RJ*) and round 3's AR10, re-checked.

RJ2: a run record that makes the aggregate job refuse result.json is one line, and the
sweep's previous tables stay as they were (the aggregate rule's outputs are Snakemake
``update()`` files, put back when the job fails). RJ3, RJ4, RJ7: ``history add`` and
``archive --verify`` read result.json against its schema; ``archive`` keeps a damaged one
as it is and says so."""

from __future__ import annotations

import json
import os
import shutil
from datetime import datetime, timezone
from pathlib import Path

import pytest

from tests.aggregate.test_explain import build_results
from tests.bad_inputs.checks import one_error_line, run_cli
from tests.bad_inputs.test_probe3_history import TOKEN, files_under
from tests.helpers import snakemake, tiny_config, write_config
from tests.history.results import write_results
from tests.history.test_archive import members

WHEN = datetime(2026, 11, 21, 8, 28, tzinfo=timezone.utc)


@pytest.fixture(scope="module")
def valid_result(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """A result.json the aggregate job wrote (and checked)."""
    results = build_results(tmp_path_factory.mktemp("rj"), throttled_gpu=None, reference_s=6.0)
    return (results / "result.json").read_bytes()


@pytest.fixture
def r1(sandbox: Path, valid_result: bytes) -> Path:
    """A results folder history add and archive take, with a valid result.json."""
    write_results(sandbox / "r1", "vm", WHEN)
    (sandbox / "r1/result.json").write_bytes(valid_result)
    return sandbox / "r1"


def damaged(valid: bytes, case: str) -> bytes:
    document = json.loads(valid)
    if case == "RJ3":
        return valid[: len(valid) // 2]
    if case == "RJ7":
        document["schema_version"] = "99.0.0"
    document["runs"][0]["metrics"]["step_time_mean_s"] = "12.3"  # RJ7, RJ7-same
    return json.dumps(document).encode()


RESULT_WORDS = {
    "RJ3": "not JSON, truncated or damaged",
    "RJ7": "schema_version '99.0.0'; allowed: 1.1.0 or older",
    "RJ7-same": "runs/0/metrics/step_time_mean_s: '12.3' is not of type",
}


@pytest.mark.parametrize("case", sorted(RESULT_WORDS))
def test_history_add_refuses_a_damaged_result_file(case: str, r1: Path, valid_result, capsys):
    (r1 / "result.json").write_bytes(damaged(valid_result, case))
    code, out, err = run_cli(["history", "add", "r1", "--history", "hist"], capsys)
    assert code == 2 and out == ""
    one_error_line(err, "r1/result.json", RESULT_WORDS[case], prefix="llmbench history: error: ")
    assert not (r1.parent / "hist").exists() or not list((r1.parent / "hist").rglob("*.parquet"))


def test_history_add_takes_a_valid_or_missing_result_file(r1: Path, capsys) -> None:
    code, out, err = run_cli(["history", "add", "r1", "--history", "hist"], capsys)
    assert code == 0 and "added to" in out, err
    write_results(r1.parent / "r2", "vm", WHEN.replace(day=22))  # an older llmbench's: none
    code, out, err = run_cli(["history", "add", "r2", "--history", "hist"], capsys)
    assert code == 0 and "added to" in out, err


@pytest.mark.parametrize("case", sorted(RESULT_WORDS))
def test_archive_keeps_a_damaged_result_file_and_verify_names_it(
    case: str, r1: Path, valid_result: bytes, capsys
) -> None:
    """RJ4: archived as it is (with a warning), and --verify, which finds every member's
    bytes as the manifest says, refuses its content in one line."""
    (r1 / "result.json").write_bytes(damaged(valid_result, case))
    code, out, err = run_cli(["archive", "r1", "-o", "rj4.tar.zst"], capsys)
    assert code == 0 and "members" in out
    one_error_line(err, "r1/result.json", RESULT_WORDS[case], "archived as it is",
                   prefix="llmbench archive: warning: ")  # fmt: skip
    code, out, err = run_cli(["archive", "--verify", "rj4.tar.zst"], capsys)
    assert code == 2 and out == ""
    one_error_line(err, "result.json", RESULT_WORDS[case], prefix="llmbench archive: error: ")


def test_archive_of_a_valid_result_file_keeps_it_whole(r1: Path, valid_result, capsys) -> None:
    """The result file (and a run's energy.json) goes in unchanged: its measurements
    named after tokens (``joules_per_token``) are not secrets, and redacting them made
    the archived JSON invalid; and it verifies."""
    energy = r1 / "runs/r/energy.json"
    energy.parent.mkdir(parents=True)
    energy.write_text(
        json.dumps({"joules_per_token": 0.037, "tokens_per_kwh": 9.7e7}, indent=1)
        + json.dumps({"joules_per_token": None, "energy_per_step_j": None}, indent=1)
    )  # a figure, and none (no energy source): both go in as they are
    assert b'"joules_per_token": ' in valid_result
    code, _, err = run_cli(["archive", "r1", "-o", "ok.tar.zst"], capsys)
    assert code == 0 and err == ""
    got = members(r1.parent / "ok.tar.zst")
    assert next(v for k, v in got.items() if k.endswith("/result.json")) == valid_result
    assert next(v for k, v in got.items() if k.endswith("/energy.json")) == energy.read_bytes()
    code, out, err = run_cli(["archive", "--verify", "ok.tar.zst"], capsys)
    assert code == 0 and "members verified" in out, err


def test_ar10_the_token_after_a_nul_byte_is_in_no_member(r1: Path, capsys) -> None:
    """Round 3's AR10 re-checked: a NUL byte first in train.log, an HF token later, in
    every form (assigned, exported, bare after more NULs), and in a JSON record and a
    binary file beside it: the archive comes out (exit 0) and the token is in no member,
    the manifest included."""
    attempt = r1 / "runs" / "r" / "attempt-1"
    attempt.mkdir(parents=True)
    (attempt / "train.log").write_bytes(
        b"\0" + b"step 1 | train_step_timing in s: 1.0\n" * 100 + f"HF_TOKEN={TOKEN}\n".encode()
        + f"export HUGGING_FACE_HUB_TOKEN='{TOKEN}'\n".encode() + b"\0\0 bare " + TOKEN.encode()
    )  # fmt: skip
    (attempt / "run.json").write_text(json.dumps({"environment": {"HF_TOKEN": TOKEN}}))
    (attempt / "blob.bin").write_bytes(b"\0\xff" * 64 + TOKEN.encode() + b"\0" * 8)
    code, _, err = run_cli(["archive", "r1", "-o", "ar10.tar.zst"], capsys)
    assert code == 0, err
    got = members(r1.parent / "ar10.tar.zst")
    assert any(name.endswith("MANIFEST.json") for name in got)
    assert [name for name, data in got.items() if TOKEN.encode() in data] == []
    assert TOKEN.encode() not in (r1.parent / "ar10.tar.zst").read_bytes()


TABLES = ("tables/runs.parquet", "tables/runs.csv", "tables/steps.parquet", "tables/scaling.md",
          "tables/sweep.json", "tables/why_slower.html", "result.json")  # fmt: skip


@pytest.mark.workflow
def test_rj2_a_refused_result_file_is_one_line_and_the_tables_stay(tmp_path: Path) -> None:
    """RJ2: a finished sweep whose run record was edited to a scaling the result schema
    does not allow: the aggregate job says so in one line (which run, which record), the
    previous tables and result.json are as they were; the record put back, the next
    invocation completes."""
    work = tmp_path / "work"
    work.mkdir()
    write_config(work, tiny_config((1,)))
    first = snakemake(work, "--cores", "2")
    assert first.returncode == 0, first.stderr[-3000:]
    try:
        results = work / "results"
        before = {name: (results / name).read_bytes() for name in TABLES}
        run_id = sorted(p.name for p in (results / "runs").iterdir())[0]
        record = results / "runs" / run_id / "run.json"
        original = record.read_bytes()
        data = json.loads(original)
        data["spec"]["scaling"] = "diagonal"
        record.write_text(json.dumps(data))
        proc = snakemake(work, "--cores", "2")
        assert proc.returncode == 1, proc.stderr[-3000:]
        log = (results / "logs/aggregate.log").read_text()
        assert "Traceback" not in log, log[-3000:]
        line = one_error_line(log, "result.json: runs/", "scaling: 'diagonal' is not one of",
                              f"(run {run_id}, from runs/{run_id}/run.json)")  # fmt: skip
        assert line in proc.stderr
        assert {name: (results / name).read_bytes() for name in TABLES} == before
        os.utime(record)  # the record put back (newer than the tables): aggregated again
        record.write_bytes(original)
        again = snakemake(work, "--cores", "2")
        assert again.returncode == 0, again.stderr[-3000:]
        assert json.loads((results / "result.json").read_text())["status"]
        assert files_under(results / "tables")  # rebuilt
    finally:
        shutil.rmtree(work)
