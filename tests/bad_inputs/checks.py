"""What every bad input must give: one line on stderr naming the key or file and the
value, no traceback, nothing under results/, nothing submitted."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from llmbench.cli import main

PLAN_SUMMARY = re.compile(r"^\d[\d,]* runs?, up to \d[\d,]* nodes?: ", re.M)
"""The last line of ``llmbench plan``'s table: the runs, nodes and GPU-hours."""

SUBMIT_TOOLS = ("sbatch", "srun", "salloc", "enroot", "torchrun")


def one_error_line(stderr: str, *needles: str, prefix: str = "llmbench") -> str:
    """The single line of ``stderr``; it starts with ``prefix`` and holds each needle."""
    assert "Traceback" not in stderr and 'File "' not in stderr, stderr[-2000:]
    lines = stderr.splitlines()
    assert len(lines) == 1, lines[:5]
    line = lines[0]
    assert line.startswith(prefix), line
    for needle in needles:
        assert needle in line, (needle, line[:2000])
    assert len(line) < 1500, len(line)
    return line


def assert_untouched(sandbox: Path) -> None:
    assert not (sandbox / "results").exists(), "something was written under results/"
    assert not (sandbox.parent / "submitted").exists(), "something was submitted"


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """``llmbench`` in this process; a usage error's SystemExit is its exit status."""
    try:
        code = main(argv)
    except SystemExit as exc:
        code = int(exc.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err
