"""Attempt folders are never reused, and records are written atomically."""

import json
import threading

from llmbench.files.atomic import write_json_atomic
from llmbench.job.runner import attempt_numbers, new_attempt_dir


def test_attempts_count_up_and_keep_earlier_ones(tmp_path) -> None:
    first = new_attempt_dir(tmp_path / "run")
    (first[1] / "train.log").write_text("first attempt")
    second = new_attempt_dir(tmp_path / "run")
    assert (first[0], second[0]) == (1, 2)
    assert (first[1] / "train.log").read_text() == "first attempt"
    assert attempt_numbers(tmp_path / "run") == [1, 2]


def test_concurrent_claims_get_distinct_folders(tmp_path) -> None:
    claimed: list[int] = []
    threads = [
        threading.Thread(target=lambda: claimed.append(new_attempt_dir(tmp_path)[0]))
        for _ in range(8)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(claimed) == list(range(1, 9))


def test_foreign_folders_are_not_attempts(tmp_path) -> None:
    (tmp_path / "attempt-x").mkdir()
    (tmp_path / "attempt-7").mkdir()
    assert attempt_numbers(tmp_path) == [7]
    assert new_attempt_dir(tmp_path)[0] == 8


def test_json_written_atomically_leaves_no_temp_files(tmp_path) -> None:
    target = tmp_path / "run.json"
    write_json_atomic(target, {"a": 1})
    write_json_atomic(target, {"a": 2})
    assert json.loads(target.read_text()) == {"a": 2}
    assert [p.name for p in tmp_path.iterdir()] == ["run.json"]
