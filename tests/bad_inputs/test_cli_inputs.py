"""Bad command-line arguments: exit 2 and one line naming the option and the value."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.bad_inputs.checks import assert_untouched, one_error_line, run_cli

CALC = ["calc", "--workload", "llama3.1-nemo", "--size", "8b", "--dtype", "bf16"]
CALC_ROW = [*CALC, "--gpu-type", "h100", "--gpus", "8"]
LONG = "y" * 100_000

CASES: list[tuple[str, list[str], tuple[str, ...]]] = [
    ("no-command", [], ("required",)),
    ("unknown-command", ["bake"], ("'bake'",)),
    ("unknown-option", ["plan", "--colour"], ("--colour",)),
    ("long-command", [LONG], ("[100002 chars]",)),
    ("plan-format", ["plan", "--format", "xml"], ("--format", "'xml'")),
    ("plan-format-long", ["plan", "--format", LONG], ("--format", "[100002 chars]")),
    ("plan-config-missing", ["plan", "--config", "nope.yaml"], ("nope.yaml", "No such file")),
    ("plan-config-folder", ["plan", "--config", "."], (".", "not a regular file")),
    ("plan-config-empty-name", ["plan", "--config", ""], ("not a regular file",)),
    ("recipes-format", ["recipes", "--format", "pdf"], ("--format", "'pdf'")),
    ("calc-missing", ["calc", "--workload", "x"], ("--size",)),
    ("calc-step-word", [*CALC_ROW, "--step-time", "fast"], ("--step-time", "'fast'")),
    ("calc-step-nan", [*CALC_ROW, "--step-time", "nan"], ("step_time=nan",)),
    ("calc-step-inf", [*CALC_ROW, "--step-time", "inf"], ("step_time=inf",)),
    ("calc-step-zero", [*CALC_ROW, "--step-time", "0"], ("step_time=0.0",)),
    ("calc-step-negative", [*CALC_ROW, "--step-time", "-5"], ("step_time=-5.0",)),
    ("calc-step-tiny", [*CALC_ROW, "--step-time", "1e-300"], ("step_time=1e-300", "100 % MFU")),
    ("calc-step-huge", [*CALC_ROW, "--step-time", "1e308"], ("step_time=1e+308", "86400")),
    ("calc-step-day", [*CALC_ROW, "--step-time", "100000"], ("step_time=100000.0", "86400")),
    ("calc-mfu-above", [*CALC_ROW, "--step-time", "0.001"], ("step_time=0.001", "MFU")),
    ("calc-mfu-just-above", [*CALC_ROW, "--step-time", "7"], ("step_time=7.0", "peak")),
    (
        "calc-gpus-word",
        [*CALC, "--gpu-type", "h100", "--gpus", "8.0", "--step-time", "9"],
        ("--gpus", "'8.0'"),
    ),
    (
        "calc-gpus-odd",
        [*CALC, "--gpu-type", "h100", "--gpus", "7", "--step-time", "9"],
        ("gpus=7",),
    ),
    (
        "calc-gpu-type",
        [*CALC, "--gpu-type", "a100", "--gpus", "8", "--step-time", "9"],
        ("a100",),
    ),
    (
        "calc-workload",
        [
            "calc",
            "--workload",
            "gpt5",
            "--size",
            "8b",
            "--dtype",
            "bf16",
            "--gpu-type",
            "h100",
            "--gpus",
            "8",
            "--step-time",
            "9",
        ],
        ("gpt5",),
    ),
    (
        "calc-workload-long",
        [
            "calc",
            "--workload",
            LONG,
            "--size",
            "8b",
            "--dtype",
            "bf16",
            "--gpu-type",
            "h100",
            "--gpus",
            "8",
            "--step-time",
            "9",
        ],
        ("workload=", "[100009 chars]"),
    ),
    ("calc-tokens-nan", [*CALC_ROW, "--step-time", "9", "--tokens", "nan"], ("tokens=nan",)),
    ("calc-tokens-negative", [*CALC_ROW, "--step-time", "9", "--tokens", "-1"], ("tokens=-1",)),
    ("calc-gbs-word", [*CALC_ROW, "--step-time", "9", "--gbs", "many"], ("--gbs", "'many'")),
    (
        "calc-scaling",
        [*CALC_ROW, "--step-time", "9", "--scaling", "diagonal"],
        ("--scaling", "'diagonal'"),
    ),
    ("parse-window-word", ["parse", "--window", "middle"], ("--window", "middle")),
    ("parse-window-reversed", ["parse", "--window", "44-35"], ("--window", "44-35")),
    ("parse-window-last-zero", ["parse", "--window", "last:0"], ("--window", "last:0")),
    ("parse-peak-nan", ["parse", "--peak-tflops", "nan"], ("--peak-tflops", "'nan'")),
    ("parse-peak-negative", ["parse", "--peak-tflops", "-1"], ("--peak-tflops", "'-1'")),
    ("parse-missing", ["parse", "no-such-folder"], ("'no-such-folder'", "does not exist")),
    ("parse-format", ["parse", "--format", "xls"], ("--format", "'xls'")),
]


@pytest.mark.parametrize(("argv", "needles"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_arguments(argv: list[str], needles: tuple[str, ...], sandbox: Path, capsys) -> None:
    code, out, err = run_cli(argv, capsys)
    assert code == 2 and out == ""
    one_error_line(err, *needles)
    assert_untouched(sandbox)


def test_a_real_process_prints_one_line(sandbox: Path) -> None:
    """The installed entry point, not only main(): no traceback from the interpreter."""
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-m", "llmbench.cli", *CALC_ROW, "--step-time", "0.001"],
        capture_output=True,
        text=True,
        env=dict(os.environ),
        timeout=120,
    )
    assert proc.returncode == 2 and proc.stdout == ""
    one_error_line(proc.stderr, "step_time=0.001", "--allow-implausible")
    assert_untouched(sandbox)
