"""Telemetry of one run attempt: start and stop its sampler (what it left is read by
``llmbench.telemetry.results``, with pandas; this module needs neither numpy nor pandas,
so a train job starts its ranks without loading them).

An attempt folder holds ``telemetry-<node>.csv`` (+ ``.json``, the sources' status) per
sampled node and ``step_clock.csv`` (iteration, start and end in Unix seconds) written by
the trainer's rank 0. Where the ranks start through ``srun`` on GPU nodes the launch
script starts one sampler per node (``llmbench.launch.srun``); otherwise the runner starts
one beside the launch command, on its own node.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llmbench.core.run_folder import SAMPLER_LOG, SAMPLES_PATTERN
from llmbench.telemetry.sampler import DEFAULT_PERIOD_MS

STOP_TIMEOUT_S = 20.0


@dataclass(frozen=True)
class TelemetrySettings:
    """The config's ``telemetry`` block."""

    enabled: bool = True
    period_ms: int = DEFAULT_PERIOD_MS
    root: str = "/"

    @classmethod
    def from_config(cls, block: Mapping[str, Any] | None) -> TelemetrySettings:
        block = block or {}
        return cls(
            enabled=bool(block.get("enabled", True)),
            period_ms=int(block.get("period_ms", DEFAULT_PERIOD_MS)),
            root=str(block.get("root", "/")),
        )


def sampler_command(
    settings: TelemetrySettings, out: str, gpu: bool, python: str = sys.executable
) -> list[str]:
    """The sampler's command line (``out`` may hold ``%n``, the node's name)."""
    command = [
        python, "-m", "llmbench.telemetry.sampler", "--out", out,
        "--period-ms", str(settings.period_ms), "--root", settings.root,
    ]  # fmt: skip
    return [*command, "--gpu"] if gpu else command


@contextlib.contextmanager
def sampling(
    attempt_dir: Path,
    settings: TelemetrySettings | None,
    gpu: bool,
    env: Mapping[str, str] | None = None,
) -> Iterator[subprocess.Popen[bytes] | None]:
    """Run the sampler on this node for the duration of the block (none when disabled),
    in ``env`` when given (the runner adds the attempt's mark)."""
    if settings is None or not settings.enabled:
        yield None
        return
    command = sampler_command(settings, str(attempt_dir / SAMPLES_PATTERN), gpu)
    with open(attempt_dir / SAMPLER_LOG, "wb") as log:
        proc = subprocess.Popen(
            command,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=dict(env) if env is not None else None,
        )
    try:
        yield proc
    finally:
        proc.terminate()  # the sampler takes a last sample and exits
        try:
            proc.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
