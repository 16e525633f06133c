"""Retry tokens: exactly the runs that did not succeed get a new token."""

import json

import pytest

from llmbench.files.atomic import write_json_atomic
from llmbench.job.attempts import reported_status, retry_token, salvage_record
from llmbench.job.runner import new_attempt_dir


def attempt(run_dir, exit_code, status=None, write_summary=True):
    number, folder = new_attempt_dir(run_dir)
    (folder / "train.log").write_text("log\n")
    record = {"run_id": "r", "attempt": number, "exit_code": exit_code}
    write_json_atomic(folder / "run.json", record)
    write_json_atomic(run_dir / "run.json", record)
    if write_summary:
        write_json_atomic(run_dir / "summary.json", {"attempt": number, "status": status})
    return number


@pytest.mark.parametrize("keep_failed", [False, True])
def test_fresh_run_has_token_zero(tmp_path, keep_failed) -> None:
    assert retry_token(tmp_path / "run", keep_failed) == 0


def test_success_keeps_the_token_it_ran_with(tmp_path) -> None:
    run = tmp_path / "run"
    attempt(run, 0, "success")
    assert reported_status(run) == (1, "success")
    assert retry_token(run, keep_failed=False) == 0  # unchanged: nothing to redo


def test_failure_changes_the_token_then_success_settles_it(tmp_path) -> None:
    run = tmp_path / "run"
    attempt(run, 1, "failed")
    assert retry_token(run, keep_failed=False) == 1  # changed: redo
    assert retry_token(run, keep_failed=True) == 0  # kept as the answer
    assert retry_token(str(run), keep_failed=False) == 1  # the workflow passes a string
    attempt(run, 0, "success")
    assert retry_token(run, keep_failed=False) == 1  # what attempt 2 ran with
    assert (run / "attempt-1" / "train.log").exists()


@pytest.mark.parametrize("status", ["incomplete", "invalid", "no_data", "failed"])
def test_every_non_success_is_redone(tmp_path, status) -> None:
    run = tmp_path / "run"
    attempt(run, 0, status)
    assert retry_token(run, keep_failed=False) == 1


def test_nonzero_exit_with_a_full_log_is_not_a_success(tmp_path) -> None:
    run = tmp_path / "run"
    attempt(run, 3, "success")
    assert reported_status(run) == (1, "failed")


def test_stale_summary_of_an_earlier_attempt_is_ignored(tmp_path) -> None:
    run = tmp_path / "run"
    attempt(run, 0, "success")
    attempt(run, 2, write_summary=False)  # killed before it was parsed
    assert reported_status(run) == (2, "failed")


def test_killed_attempt_without_record_is_salvaged_and_retried(tmp_path) -> None:
    run = tmp_path / "run"
    number, folder = new_attempt_dir(run)
    (folder / "train.log").write_text("Training epoch 0, iteration 3/49 |\n")
    assert retry_token(run, keep_failed=False) == 1
    record = salvage_record(run, {"run_id": "r"}, "TIMEOUT", "time_limit")
    assert record["attempt"] == number and record["killed"] is True
    assert record["scheduler_state"] == "TIMEOUT" and record["exit_code"] is None
    assert record["failure_reason"] == "time_limit"
    assert json.loads((folder / "run.json").read_text()) == record
    assert salvage_record(run, {"run_id": "r"}) is None  # the attempt has its record now


def test_infra_retry_within_an_invocation_does_not_trigger_a_rerun(tmp_path) -> None:
    run = tmp_path / "run"
    new_attempt_dir(run)  # killed by a node failure, retried at once
    salvage_record(run, {"run_id": "r"}, "NODE_FAIL", "node_failure", retried=True)
    assert retry_token(run, keep_failed=False) == 0  # what the invocation ran with
    attempt(run, 0, "success")
    assert retry_token(run, keep_failed=False) == 0


def test_repeated_failures_raise_the_token_each_time(tmp_path) -> None:
    run = tmp_path / "run"
    tokens = [retry_token(run, False)]
    for _ in range(2):
        attempt(run, 1, "failed")
        tokens.append(retry_token(run, False))
    attempt(run, 0, "success")
    tokens.append(retry_token(run, False))
    assert tokens == [0, 1, 2, 2]
