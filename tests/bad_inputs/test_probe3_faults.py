"""The third bad-input probe's log cases: a number is read whole or not at all, a step time
below a millisecond is not a time, a log in another encoding or with CR line ends says so,
a window of too many points says how many are allowed."""

from __future__ import annotations

from pathlib import Path

import pytest

from llmbench.parsers import parse_log
from tests.bad_inputs.checks import assert_untouched, one_error_line, run_cli
from tests.bad_inputs.test_log_inputs import GOOD, LINES, parse_json, write_log

MALFORMED = {  # the step time as the probe wrote it, per framework (Megatron logs ms)
    "PA9": {"nemo2": "12\x00.3", "megatron": "2000\x00.5", "maxtext": "12\x00.3"},
    "PA11": {"nemo2": "12,3", "megatron": "2000,5", "maxtext": "12,3"},
}


def write_every_step(path: Path, framework: str, time: str) -> Path:
    first = 1 if framework == "megatron" else 0
    lines = [LINES[framework].format(i=i, t=time) for i in range(first, 50 + first)]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(("\n".join(lines) + "\n").encode())
    return path


@pytest.mark.parametrize("framework", sorted(LINES))
@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_a_number_cut_short_by_its_field_is_not_read(
    case: str, framework: str, sandbox: Path, capsys
) -> None:
    """PA9, PA11: `12\\x00.3` and `12,3` are not 12: the run is invalid, naming the field."""
    bad = MALFORMED[case][framework]
    log = write_every_step(sandbox / "exp" / "log-run.out", framework, bad)
    code, result, err = parse_json([str(log)], capsys)
    (row,) = result["results"]
    assert row["status"] == "invalid" and row["reason"] == "malformed_number", row
    assert row["time_mean_seconds"] is None, row  # no number made of a prefix
    assert row["detail"].startswith("iteration "), row
    assert repr(bad.encode())[2:-1] in row["detail"], row  # the field as logged, escaped
    assert code == 1 and err == ""
    assert_untouched(sandbox)


@pytest.mark.parametrize("framework", sorted(LINES))
def test_one_malformed_step_time_in_the_window_is_named(
    framework: str, sandbox: Path, capsys
) -> None:
    bad = MALFORMED["PA11"][framework]
    log = write_log(sandbox / "exp" / "log-run.out", framework, bad, at=40)
    _, result, _ = parse_json([str(log)], capsys)
    (row,) = result["results"]
    assert row["reason"] == "malformed_number" and "iteration 40" in row["detail"], row


def test_a_malformed_value_outside_the_window_is_counted_not_judged(tmp_path: Path) -> None:
    """The window's numbers are whole: the run stands; the bad field is not a number."""
    lines = [
        f"Training epoch 0, iteration {i}/49 | lr: {'1,5' if i == 3 else '1.5'} | "
        f"reduced_train_loss: 2.0 | train_step_timing in s: 2.0"
        for i in range(50)
    ]
    (tmp_path / "log.out").write_text("\n".join(lines) + "\n")
    parsed = parse_log(tmp_path / "log.out")
    assert parsed.summary.status == "success" and parsed.summary.extra["malformed_values"] == 1
    assert parsed.rows[3]["lr"] != parsed.rows[3]["lr"]  # NaN: not read as 1
    assert parsed.rows[4]["lr"] == 1.5


def test_a_malformed_loss_anywhere_is_invalid(tmp_path: Path) -> None:
    line = "Training epoch 0, iteration {}/49 | reduced_train_loss: {} | train_step_timing in s: 2"
    lines = [line.format(i, "2\x00.0" if i == 2 else "2.0") for i in range(50)]
    (tmp_path / "log.out").write_text("\n".join(lines) + "\n")
    summary = parse_log(tmp_path / "log.out").summary
    assert (summary.status, summary.reason) == ("invalid", "malformed_number")
    assert summary.detail.startswith("iteration 2: 'reduced_train_loss: 2\\x00.0'")


@pytest.mark.parametrize("framework", sorted(LINES))
@pytest.mark.parametrize("seconds", [1e-300, 1e-9, 0.0009])
def test_a_step_time_below_a_millisecond_is_invalid(
    framework: str, seconds: float, sandbox: Path, capsys
) -> None:
    """PA13: a step time below the floor (1e-300 s) is invalid, never a success."""
    logged = seconds * 1000 if framework == "megatron" else seconds
    log = write_log(sandbox / "exp" / "log-run.out", framework, repr(logged), at=40)
    code, result, _ = parse_json([str(log)], capsys)
    (row,) = result["results"]
    assert row["status"] == "invalid" and row["reason"] == "bad_step_time", row
    assert "iteration 40" in row["detail"] and "below the floor of 0.001 s" in row["detail"]
    assert code == 1


@pytest.mark.parametrize("framework", sorted(LINES))
def test_a_fast_step_above_the_floor_is_a_time(framework: str, sandbox: Path, capsys) -> None:
    """The control: 2 ms steps (a small model on a GPU) are measurements."""
    logged = "2.0" if framework == "megatron" else "0.002"
    log = write_every_step(sandbox / "exp" / "log-run.out", framework, logged)
    code, result, _ = parse_json([str(log)], capsys)
    assert code == 0 and result["results"][0]["status"] == "success"
    assert result["results"][0]["time_mean_seconds"] == pytest.approx(0.002)


@pytest.mark.parametrize("framework", sorted(LINES))
def test_cr_only_line_ends_are_line_ends(framework: str, sandbox: Path, capsys) -> None:
    """PA5: a progress-bar style log (CR only) has a line per step, not one line."""
    log = write_log(sandbox / "exp" / "log-run.out", framework, None)
    log.write_bytes(log.read_bytes().replace(b"\n", b"\r"))
    code, result, _ = parse_json([str(log)], capsys)
    row = result["results"][0]
    assert code == 0 and row["status"] == "success", row
    assert row["time_mean_seconds"] == pytest.approx(
        float(GOOD[framework]) / (1000 if framework == "megatron" else 1)
    )


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-be", "utf-16-le"])
def test_a_utf16_log_says_so(encoding: str, sandbox: Path, capsys) -> None:
    """PA6, PA7: a UTF-16 log says it is UTF-16, not that it holds no steps."""
    log = write_log(sandbox / "exp" / "log-run.out", "nemo2", None)
    log.write_bytes(log.read_text().encode(encoding))
    code, result, _ = parse_json([str(log)], capsys)
    row = result["results"][0]
    assert code == 1 and (row["status"], row["reason"]) == ("no_data", "unreadable"), row
    assert "UTF-16" in row["detail"] and "iconv" in row["detail"]


def test_nul_bytes_are_not_taken_for_utf16(sandbox: Path, capsys) -> None:
    (sandbox / "exp").mkdir()
    (sandbox / "exp" / "log-run.out").write_bytes(b"\0" * (1 << 20))
    _, result, _ = parse_json(["exp"], capsys)
    assert result["results"][0]["reason"] == "no_step_lines"


def test_a_window_of_too_many_points_says_how_many_are_allowed(sandbox: Path, capsys) -> None:
    """PA19: `last:<20 digits>` is too large (with the limit), not malformed."""
    log = write_log(sandbox / "exp" / "log-run.out", "nemo2", None)
    code, _, err = run_cli(["parse", str(log), "--window", "last:99999999999999999999"], capsys)
    assert code == 2
    one_error_line(err, "last:99999999999999999999", "at most 9,999,999", prefix="llmbench parse")
