"""Bad training logs through `llmbench parse`: a step time that is not a time is never a
success, a file that is not a log is its own row (one warning line) and parse goes on."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.bad_inputs.checks import assert_untouched, one_error_line, run_cli

LINES = {
    "nemo2": "Training epoch 0, iteration {i}/49 | reduced_train_loss: 11.0 | "
    "train_step_timing in s: {t} | TFLOPS_per_GPU: 100",
    "megatron": "[2025-12-22 15:18:33] iteration {i:>8}/      50 | consumed samples: 6400 | "
    "elapsed time per iteration (ms): {t} | throughput per GPU (TFLOP/s/GPU): 100 | "
    "lm loss: 1.0 | loss scale: 1.0 | grad norm: 1.0 | number of skipped iterations: 0 | "
    "number of nan iterations: 0 |",
    "maxtext": "completed step: {i}, seconds: {t}, TFLOP/s/device: 100, "
    "Tokens/s/device: 1035.970, total_weights: 524288, loss: 1.0",
}
GOOD = {"nemo2": "2.0", "megatron": "2000.0", "maxtext": "2.0"}
BAD_TIMES = ["nan", "NaN", "-nan", "inf", "-inf", "1e999", "-2.0", "0.0", "0", "-0.0", "1e308"]


def write_log(path: Path, framework: str, bad: str | None, at: int = 40) -> Path:
    first = 1 if framework == "megatron" else 0
    lines = [
        LINES[framework].format(i=i, t=bad if i == at and bad is not None else GOOD[framework])
        for i in range(first, 50 + first)
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


def parse_json(argv: list[str], capsys) -> tuple[int, dict, str]:
    code, out, err = run_cli(["parse", *argv, "--format", "json"], capsys)
    return code, json.loads(out), err


@pytest.mark.parametrize("framework", sorted(LINES))
@pytest.mark.parametrize("bad", BAD_TIMES)
def test_a_step_time_that_is_not_a_time_is_invalid(
    framework: str, bad: str, sandbox: Path, capsys
) -> None:
    log = write_log(sandbox / "exp" / "log-run.out", framework, bad)
    code, result, err = parse_json([str(log)], capsys)
    (row,) = result["results"]
    assert row["framework"] == framework
    assert row["status"] == "invalid" and row["reason"] == "bad_step_time", row
    assert "iteration 40" in row["detail"] or "iteration 41" in row["detail"], row
    assert code == 1 and err == "" and result["summary"]["success_experiments"] == 0
    assert_untouched(sandbox)


@pytest.mark.parametrize("framework", sorted(LINES))
def test_the_same_log_without_the_bad_step_succeeds(framework: str, sandbox: Path, capsys) -> None:
    """The control: the cases above fail because of the one bad step, nothing else."""
    log = write_log(sandbox / "exp" / "log-run.out", framework, None)
    code, result, _ = parse_json([str(log)], capsys)
    assert code == 0 and result["results"][0]["status"] == "success"


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _loop(path: Path) -> None:
    path.symlink_to(path)


def _dangling(path: Path) -> None:
    path.symlink_to(path.parent / "gone")


def _folder(path: Path) -> None:
    path.mkdir()


def _binary(path: Path) -> None:
    path.write_bytes(bytes(range(256)) * 4000)


NOT_LOGS = {
    "fifo": (_fifo, "named pipe"),
    "symlink-loop": (_loop, "log-bad.out"),
    "dangling-link": (_dangling, "log-bad.out"),
}


@pytest.mark.parametrize("kind", sorted(NOT_LOGS))
def test_a_file_that_is_not_a_log_is_its_own_row(kind: str, sandbox: Path, capsys) -> None:
    make, needle = NOT_LOGS[kind]
    root = sandbox / "exp"
    write_log(root / "log-good.out", "nemo2", None)
    make(root / "log-bad.out")
    code, result, err = parse_json([str(root)], capsys)
    rows = {r["filename"]: r for r in result["results"]}
    assert rows["good"]["status"] == "success" and code == 0
    assert rows["bad"]["status"] == "no_data" and rows["bad"]["reason"] == "unreadable"
    one_error_line(err, "log-bad.out", needle, prefix="llmbench parse: warning: ")
    assert_untouched(sandbox)


@pytest.mark.parametrize(
    ("make", "status"), [(_binary, "no_data"), (_folder, None)], ids=["binary", "folder"]
)
def test_binary_and_folder_named_like_logs(make, status, sandbox: Path, capsys) -> None:
    """A binary `.out` has no step lines (no_data); a folder called `x.out` is not a log."""
    root = sandbox / "exp"
    write_log(root / "log-good.out", "nemo2", None)
    make(root / "log-bad.out")
    code, result, err = parse_json([str(root)], capsys)
    rows = {r["filename"]: r for r in result["results"]}
    assert code == 0 and rows["good"]["status"] == "success" and err == ""
    assert (rows["bad"]["status"] if "bad" in rows else None) == status


@pytest.mark.parametrize("argv", [["fifo.out"], ["loop.out"]], ids=["fifo", "loop"])
def test_one_bad_file_named_on_the_command_line(argv: list[str], sandbox: Path, capsys) -> None:
    os.mkfifo(sandbox / "fifo.out")
    (sandbox / "loop.out").symlink_to(sandbox / "loop.out")
    code, result, err = parse_json(argv, capsys)
    assert code == 1 and result["results"][0]["status"] == "no_data"
    one_error_line(err, argv[0], prefix="llmbench parse: warning: ")


def test_a_log_file_argument_is_parsed(sandbox: Path, capsys) -> None:
    log = write_log(sandbox / "log-run.out", "maxtext", None)
    code, result, err = parse_json([str(log)], capsys)
    assert code == 0 and err == "" and result["results"][0]["filename"] == "run"


def test_an_empty_folder_says_no_log_was_found(sandbox: Path, capsys) -> None:
    (sandbox / "exp").mkdir()
    (sandbox / "exp" / "notes.txt").write_text("no logs here\n")
    code, result, err = parse_json(["exp"], capsys)
    assert code == 1 and result["results"] == []
    one_error_line(err, "'exp'", "no training log found", prefix="llmbench parse: ")
