"""``llmbench.files.tool_output.run_tool`` on real processes (bash): what a tool prints is
read as bytes up to a bound, a tool past its time limit is stopped with every process it
started, and each way of ending is named in one phrase."""

from __future__ import annotations

import os
import time
from pathlib import Path

from llmbench.files.tool_output import run_tool
from tests.bad_inputs.fake_tools import alive


def bash(script: str) -> list[str]:
    return ["bash", "-c", script]


def test_output_exit_code_and_first_line() -> None:
    ok = run_tool(bash("echo one; echo two >&2"), 10)
    assert (ok.ending, ok.problem, ok.text) == ("ok", None, "one\ntwo\n")
    failed = run_tool(bash("printf '\\n  NVIDIA-SMI has failed\\nmore\\n'; exit 9"), 10)
    assert failed.ending == "exit" and failed.exit_code == 9
    assert failed.problem == "bash -c printf '\\n  NVIDIA-SMI has failed\\nmore\\n'; exit 9: " \
        "exit code 9: NVIDIA-SMI has failed"  # fmt: skip


def test_stderr_can_be_kept_apart_and_dropped() -> None:
    run = run_tool(bash("echo out; echo err >&2"), 10, stderr=False)
    assert run.text == "out\n" and run.ending == "ok"


def test_a_missing_tool_is_named() -> None:
    run = run_tool(["no-such-tool-llmbench"], 10)
    assert run.ending == "missing" and run.problem == "no-such-tool-llmbench: not installed"


def test_undecodable_bytes_are_replaced_not_raised() -> None:
    run = run_tool(bash("printf 'GPU 0: \\xff\\xfe ok\\n'"), 10)
    assert run.ending == "ok" and run.text == "GPU 0: \ufffd\ufffd ok\n"


def test_a_hung_tool_is_stopped_with_what_it_started(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    script = f"sleep 987654 & echo $! > {pids}; echo $$ >> {pids}; echo started; wait"
    started = time.monotonic()
    run = run_tool(bash(script), 5)
    assert time.monotonic() - started < 30
    assert run.ending == "timeout" and run.text == "started\n"
    assert run.problem is not None and run.problem.endswith("timed out after 5 s (stopped)")
    # the kill is sent at once; on a loaded machine a process goes when it is next scheduled
    for _ in range(50):
        left = [p for p in map(int, pids.read_text().split()) if alive(p)]
        if not left:
            break
        time.sleep(0.1)
    assert not left


def test_a_tool_that_ignores_sigterm_is_killed(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    run = run_tool(bash(f"trap '' TERM; echo $$ > {pid_file}; while :; do sleep 1; done"), 1)
    assert run.ending == "timeout" and not alive(int(pid_file.read_text()))


def test_endless_output_is_stopped_at_the_bound() -> None:
    run = run_tool(["yes", "GPU 0: NVIDIA H100"], 60, max_bytes=1 << 16)
    assert run.ending == "overflow" and len(run.text.encode()) <= 1 << 16
    assert run.problem == "yes GPU 0: NVIDIA H100: printed more than 65,536 bytes (stopped; " \
        "a healthy node prints far less)"  # fmt: skip


def test_what_a_tool_leaves_behind_is_ended(tmp_path: Path) -> None:
    """A tool that exits at once but leaves a process in its group holding nothing open."""
    pid_file = tmp_path / "pid"
    run = run_tool(bash(f"sleep 987654 >/dev/null 2>&1 & echo $! > {pid_file}; echo done"), 10)
    assert run.ending == "ok" and run.text == "done\n"
    pid = int(pid_file.read_text())
    for _ in range(50):  # the kill is sent; the process goes once it is reaped
        if not alive(pid):
            break
        time.sleep(0.1)
    assert not alive(pid), os.system(f"kill {pid}")
