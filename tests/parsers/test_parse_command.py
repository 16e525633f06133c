"""`llmbench parse` over experiment folders laid out as the spec describes."""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path

import pytest

from llmbench.cli import main

STEP = (
    "Training epoch 0, iteration {i}/49 | reduced_train_loss: 11.0 | "
    "train_step_timing in s: {t} | TFLOPS_per_GPU: {tf}"
)


def nemo_log(path: Path, steps: int = 50) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [STEP.format(i=i, t=2.0 + i % 2, tf=100 + 10 * (i % 2)) for i in range(steps)]
    path.write_text("\n".join(lines) + "\n")


@pytest.fixture
def experiments(tmp_path: Path) -> Path:
    root = tmp_path / "experiments"
    run = root / "pretrain_a" / "pretrain_a_17" / "pretrain_a"
    nemo_log(run / "log-pretrain_a.out")
    (run / "sbatch_pretrain_a.out").write_text("srun: job started\n")
    nemo_log(root / "pretrain_b" / "pretrain_b_nccltrace" / "log-pretrain_b.out")
    nemo_log(root / "runs" / "r1" / "attempt-1" / "train.log", steps=20)
    return root


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["parse", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_csv_header_rows_and_skips(experiments: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli([str(experiments), "--format=csv"], capsys)
    rows = list(csv.reader(io.StringIO(out)))
    assert rows[0] == [
        "filename", "status", "time_mean_seconds", "time_std_dev_seconds",
        "tflops_per_gpu_mean", "tflops_per_gpu_std_dev", "max_iteration", "framework", "reason",
        "log_interval", "restarts", "flags",
    ]  # fmt: skip
    by_name = {r[0]: r for r in rows[1:]}
    assert set(by_name) == {"pretrain_a", "r1/attempt-1"}  # nccltrace and sbatch skipped
    assert by_name["pretrain_a"][1:7] == ["success", "2.5", "0.5", "105.0", "5.0", "49"]
    assert by_name["pretrain_a"][9:] == ["1", "0", ""]
    assert by_name["r1/attempt-1"][1] == "incomplete"
    assert code == 0


def test_json_summary(experiments: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli([str(experiments), "--format", "json", "--full-names"], capsys)
    doc = json.loads(out)
    assert doc["summary"] == {
        "success_experiments": 1,
        "failed_experiments": 1,
        "success_rate": 0.5,
    }
    names = sorted(r["filename"] for r in doc["results"])
    assert names[0].endswith("log-pretrain_a.out") and "/" in names[0]
    assert code == 0


def test_table_and_exit_one_without_success(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    nemo_log(tmp_path / "log-x.out", steps=10)
    code, out, _ = run_cli([str(tmp_path), "--window", "0-4"], capsys)
    assert "iterations 0-4" in out and "x" in out
    assert code == 1


@pytest.mark.parametrize("window", ["44-35", "last:1", "last:", "35", "first:3", "x" * 500])
def test_usage_errors_exit_two(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], window: str
) -> None:
    code, _, err = run_cli([str(tmp_path / "missing")], capsys)
    assert code == 2 and err.count("\n") == 1 and "missing" in err
    code, _, err = run_cli([str(tmp_path), "--window", window], capsys)
    assert code == 2 and "--window" in err and "last:N" in err and err.count("\n") == 1
    assert len(err) < 300  # a long bad value is cut short


def test_window_last_n_and_peak_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    nemo_log(tmp_path / "log-x.out")  # times alternate 2 and 3 s, TFLOPS 100 and 110
    code, out, _ = run_cli([str(tmp_path), "--window", "last:4", "--format", "json"], capsys)
    row = json.loads(out)["results"][0]
    # iterations 46-49: 2, 3, 2, 3 s
    assert (row["status"], row["time_mean_seconds"], row["time_std_dev_seconds"]) == (
        "success", 2.5, 0.5,
    )  # fmt: skip
    assert row["flags"] == "" and code == 0
    code, out, _ = run_cli([str(tmp_path), "--format=json", "--peak-tflops", "105"], capsys)
    assert json.loads(out)["results"][0]["flags"] == "tflops_above_peak"
    with pytest.raises(SystemExit):
        run_cli([str(tmp_path), "--peak-tflops", "nan"], capsys)


def test_a_file_argument_parses_that_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    nemo_log(tmp_path / "some.log")
    code, out, err = run_cli([str(tmp_path / "some.log"), "--format", "csv"], capsys)
    rows = list(csv.reader(io.StringIO(out)))
    assert [r[:2] for r in rows[1:]] == [["some", "success"]]
    assert code == 0 and err == ""


def test_an_empty_folder_says_no_log_was_found(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "notes.txt").write_text("no logs here\n")
    code, out, err = run_cli([str(tmp_path), "--format", "csv"], capsys)
    assert "no training log found" in err and str(tmp_path) in err and err.count("\n") == 1
    assert out.count("\n") == 1  # the header only
    assert code == 1


def test_bad_files_get_their_own_row_and_the_rest_is_parsed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    nemo_log(tmp_path / "log-good.out")
    os.mkfifo(tmp_path / "log-pipe.out")  # nobody writes: opening it to read would block
    (tmp_path / "log-loop.out").symlink_to(tmp_path / "log-loop.out")
    unreadable = tmp_path / "log-secret.out"
    nemo_log(unreadable)
    unreadable.chmod(0)
    code, out, err = run_cli([str(tmp_path), "--format", "json"], capsys)
    rows = {r["filename"]: r for r in json.loads(out)["results"]}
    assert rows["good"]["status"] == "success"
    assert (rows["pipe"]["status"], rows["pipe"]["reason"]) == ("no_data", "unreadable")
    assert "named pipe" in rows["pipe"]["detail"]
    assert (rows["loop"]["status"], rows["loop"]["reason"]) == ("no_data", "unreadable")
    if os.geteuid() != 0:  # root reads a mode-000 file anyway
        assert rows["secret"]["reason"] == "unreadable"
    assert "log-pipe.out" in err and "log-loop.out" in err
    assert code == 0
    code, out, _ = run_cli([str(tmp_path / "log-pipe.out"), "--format", "csv"], capsys)
    assert out.splitlines()[1].startswith("pipe,no_data,") and code == 1
