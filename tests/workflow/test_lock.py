"""Two invocations on one results folder: the second is refused and nothing is corrupted."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.helpers import snakemake, snakemake_command, workflow_config, write_config

pytestmark = pytest.mark.workflow

CONFIG = workflow_config("one-run")


def test_second_invocation_is_refused_while_the_first_runs(tmp_path) -> None:
    write_config(tmp_path, CONFIG)
    env = dict(os.environ, LLMBENCH_FAULT="hang@2")  # keeps the first invocation busy
    first = subprocess.Popen(
        snakemake_command(tmp_path, "--cores", "1"),
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        log = tmp_path / "results/runs/tiny-llama_tiny_fp32_cpux1_perf/attempt-1/train.log"
        deadline = time.monotonic() + 120
        while not (log.exists() and "iteration 1/" in log.read_text()):
            assert time.monotonic() < deadline and first.poll() is None, "first never ran"
            time.sleep(0.5)
        second = snakemake(tmp_path, "--cores", "1")
        assert second.returncode != 0
        assert "lock" in second.stderr.lower(), second.stderr[-2000:]
        assert first.poll() is None  # the first invocation was not disturbed
        assert "iteration 1/" in log.read_text()
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.wait(timeout=60)
        kill_processes_under(tmp_path)


def kill_processes_under(folder) -> None:
    """torchrun starts its workers in sessions of their own: find them by working dir."""
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if Path(os.readlink(proc / "cwd")).is_relative_to(folder):
                os.kill(int(proc.name), signal.SIGKILL)
        except (OSError, ValueError):
            continue
