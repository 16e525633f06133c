"""The log interval from the configuration a framework printed, for logs whose step lines
cannot tell it (docs/log-formats.md, "Log interval and windows").

The real logs are in tests/fixtures/real-logs/ (the Megatron-Bridge case is in its
manifest); the other logs here are written by hand around lines of those real logs."""

from __future__ import annotations

from pathlib import Path

import pytest

from llmbench.parsers import Reason, Status, parse_log, read_facts
from llmbench.parsers.printed_config import printed_interval
from llmbench.parsers.vocabulary import Framework
from llmbench.parsers.window import cadence_is_clear, printed_interval_fits

REAL = Path(__file__).parents[1] / "fixtures" / "real-logs"
ARGUMENTS = "  log_interval .................................... {n}"
BRIDGE = "  log_interval: {n}"
ITERATION = (
    " [2025-10-06 03:27:07] iteration {i:>8}/{last:>8} | consumed samples: 5120 | "
    "elapsed time per iteration (ms): {ms} | learning rate: 1.5E-06 | "
    "global batch size:   512 | lm loss: 9.7638E+00 |"
)
NEMO = (
    "Training epoch 0, iteration {i}/99 | lr: 7.5e-06 | global_step: {i} | "
    "reduced_train_loss: 11.0 | train_step_timing in s: 1.5"
)


def write(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "log.out"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def iterations(*numbers: int, last: int = 200) -> list[str]:
    return [ITERATION.format(i=i, last=last, ms=400.0 + i) for i in numbers]


def test_megatron_lm_log_cut_after_its_first_iteration_line(tmp_path: Path) -> None:
    # the real tp2 run (Megatron-LM core_r0.5.0, --log-interval 10) as if the job had been
    # killed right after its first iteration line: its line 670
    lines = (REAL / "megatron-lm-gpt2-345m-tp2.out").read_text(encoding="utf-8").splitlines()
    assert " iteration       10/     200 |" in lines[669]
    s = parse_log(write(tmp_path, lines[:670]), "1-20").summary
    assert s.log_interval == 10
    assert s.extra["log_interval_from"] == (
        "Megatron arguments: 'log_interval .................................... 10'"
    )
    # 10 and 20 are the cadence's points in 1-20: one of two was logged
    assert (s.status, s.reason) == (Status.INCOMPLETE.value, Reason.WINDOW_INCOMPLETE.value)
    assert s.detail.endswith("1 of 2 window points logged")


def test_megatron_bridge_config_dump_with_one_iteration_line() -> None:
    s = parse_log(REAL / "megatron-bridge-llama32-1b-one-iteration.out", "1-10").summary
    assert s.log_interval == 10
    assert s.extra["log_interval_from"] == "Megatron-Bridge config: 'log_interval: 10'"
    assert (s.status, s.reason) == (Status.INCOMPLETE.value, Reason.WINDOW_TOO_SPARSE.value)


def test_two_lines_straddling_a_missing_one_read_at_the_printed_cadence(tmp_path: Path) -> None:
    path = write(tmp_path, [ARGUMENTS.format(n=10), *iterations(10, 30)])
    s = parse_log(path, "10-30").summary
    assert s.log_interval == 10  # the lines alone say 20
    assert s.detail.endswith("2 of 3 window points logged")


def test_the_lines_decide_when_they_show_their_cadence(tmp_path: Path) -> None:
    # gap 10 seen twice: the lines tell, a printed 5 (another run's?) is not consulted
    path = write(tmp_path, [ARGUMENTS.format(n=5), *iterations(10, 20, 30)])
    s = parse_log(path, "10-30").summary
    assert s.log_interval == 10
    assert "log_interval_from" not in s.extra
    assert read_facts(path).printed_interval is None  # the head was not even searched


def test_a_printed_interval_the_lines_contradict_is_not_used(tmp_path: Path) -> None:
    path = write(tmp_path, [BRIDGE.format(n=10), *iterations(10, 15)])
    s = parse_log(path, "10-15").summary
    assert s.log_interval == 5
    assert "log_interval_from" not in s.extra


@pytest.mark.parametrize(
    "config",
    [
        ["  tensorboard_log_interval: 1"],  # another setting ending in log_interval
        ["  indexer_log_interval ............................ 1000"],
        ["cfg.logger.log_interval: 10"],  # a dotted name is not the config's own key
        ["  log_interval: 1[default3]:> building dataset", "0"],  # another rank glued in
        ["  log_interval: 10 # comment"],
        ["  log_interval: 0"],
        [ARGUMENTS.format(n=10), BRIDGE.format(n=20)],  # two configurations disagree
    ],
    ids=["tensorboard", "indexer", "dotted", "glued", "trailing", "zero", "disagree"],
)
def test_lines_that_are_not_one_printed_interval(tmp_path: Path, config: list[str]) -> None:
    s = parse_log(write(tmp_path, [*config, *iterations(10)]), "1-10").summary
    assert s.log_interval == 1
    assert "log_interval_from" not in s.extra


@pytest.mark.parametrize(
    "line",
    [
        "[default0]:  log_interval .................................... 10",
        "0: " + BRIDGE.format(n=10),
        "\x1b[32m" + BRIDGE.format(n=10) + "\x1b[0m",
        BRIDGE.format(n=10) + "\r",
        "log_interval: 10",
    ],
    ids=["torchrun-prefix", "srun-prefix", "ansi", "crlf", "column-0"],
)
def test_prefixed_or_coloured_printed_interval(tmp_path: Path, line: str) -> None:
    s = parse_log(write(tmp_path, [line, *iterations(10)]), "1-10").summary
    assert s.log_interval == 10
    quoted = s.extra["log_interval_from"]
    assert "log_interval" in quoted and "10'" in quoted
    assert "\x1b" not in quoted and "\r" not in quoted


def test_only_megatron_logs_are_read_for_it(tmp_path: Path) -> None:
    # NeMo 2 prints iteration lines at its strategy's progress_interval; a log_interval
    # line in its log is some other component's
    s = parse_log(write(tmp_path, [BRIDGE.format(n=10), NEMO.format(i=9)]), "0-9").summary
    assert (s.framework, s.log_interval) == ("nemo2", 1)
    assert printed_interval(b"  log_interval: 10\n", Framework.MAXTEXT) is None


def test_only_the_head_of_the_log_is_searched() -> None:
    data = b"x" * 100 + b"\n" + BRIDGE.format(n=10).encode() + b"\n"
    assert printed_interval(data, Framework.MEGATRON).value == 10
    assert printed_interval(data, Framework.MEGATRON, head_bytes=100) is None


def test_a_huge_line_holding_the_key_stays_bounded(tmp_path: Path) -> None:
    line = b"  log_interval: " + b"1" * (1 << 20)
    path = tmp_path / "log.out"
    path.write_bytes(line + b"\n" + "\n".join(iterations(10)).encode() + b"\n")
    s = parse_log(path, "1-10").summary
    assert s.log_interval == 1  # the value is cut by the line cap, not read as a number


def test_step_time_lines_numbered_by_the_reader_do_not_take_it(tmp_path: Path) -> None:
    step_time = "Step Time : 4.65s GPU utilization: 598.5MODEL_TFLOP/s/GPU"
    s = parse_log(write(tmp_path, [BRIDGE.format(n=10), step_time]), "1-1").summary
    assert (s.framework, s.log_interval) == ("megatron", 1)


@pytest.mark.parametrize(
    ("logged", "printed", "clear", "fits"),
    [
        ([10], 10, False, True),
        ([], 10, False, True),
        ([10, 30], 10, False, True),
        ([10, 20, 40], 10, False, True),  # gaps 10 and 20, each once
        ([10, 15], 10, False, False),  # a gap the printed cadence cannot make
        ([10, 20, 30], 10, True, False),  # the lines tell
        ([10], 0, False, False),
    ],
)
def test_printed_interval_fits(logged: list[int], printed: int, clear: bool, fits: bool) -> None:
    assert cadence_is_clear(logged) is clear
    assert printed_interval_fits(logged, printed) is fits
