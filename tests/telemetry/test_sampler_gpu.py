"""The sampler's GPU side against a stand-in nvidia-smi (no GPU here): the stand-in
checks the exact arguments and prints CSV in nvidia-smi's own layout until stopped."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from llmbench.telemetry.frames import read_samples
from llmbench.telemetry.nvidia_smi import query_command
from llmbench.telemetry.sampler import gpu_raw_path
from llmbench.telemetry.sampling import TelemetrySettings, sampler_command

HEADER = (
    "timestamp, index, power.draw [W], clocks.current.sm [MHz], clocks.current.memory [MHz], "
    "temperature.gpu, utilization.gpu [%]"
)
STAND_IN = """#!/usr/bin/env bash
# stand-in for nvidia-smi: only the sampler's exact query is answered
[[ "$*" == "{args}" ]] || {{ echo "unexpected arguments: $*" >&2; exit 2; }}
trap 'exit 0' TERM
echo "{header}"
while true; do
    now=$(date '+%Y/%m/%d %H:%M:%S.%3N')
    echo "$now, 0, 301.50 W, 1980 MHz, 2619 MHz, 41, 97 %"
    echo "$now, 1, [N/A], 1980 MHz, 2619 MHz, 40, [N/A]"
    sleep 0.05
done
"""


def test_gpu_sampler_reads_nvidia_smi_csv(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    stand_in = bin_dir / "nvidia-smi"
    stand_in.write_text(STAND_IN.format(args=" ".join(query_command(50)[1:]), header=HEADER))
    stand_in.chmod(0o755)
    out = tmp_path / "telemetry-g1.csv"
    settings = TelemetrySettings(period_ms=50)
    command = [
        *sampler_command(settings, str(out), gpu=True, python=sys.executable),
        "--node",
        "g1",
    ]
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    proc = subprocess.Popen(command, env=env)
    deadline = time.monotonic() + 60
    raw = gpu_raw_path(out)
    while time.monotonic() < deadline and (
        not raw.exists() or len(raw.read_text().splitlines()) < 8
    ):
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 0
    assert "unexpected arguments" not in raw.read_text()
    samples = read_samples([out])
    gpu = samples[samples.source == "nvidia-smi"]
    power = gpu[gpu.metric == "power_w"]
    assert set(power.device) == {"gpu0", "gpu1"}
    assert (power[power.device == "gpu0"].value == 301.5).all()
    assert power[power.device == "gpu1"].value.isna().all()  # [N/A]
    util = gpu[(gpu.metric == "util") & (gpu.device == "gpu0")]
    assert (util.value == 0.97).all()
    assert abs(power.time_unix_s.max() - time.time()) < 60  # local time read as local
    status = json.loads(out.with_suffix(".json").read_text())
    assert status["sources"]["nvidia-smi"] == "ok"
