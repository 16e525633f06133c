"""The sampler as a process: samples from a real folder tree, stopped by SIGTERM."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from llmbench.telemetry.frames import read_samples
from llmbench.telemetry.sampling import TelemetrySettings, sampler_command
from tests.telemetry.conftest import node_tree, write_counter


def run_sampler(root: Path, out: Path, rows: int, feed=None) -> None:
    """Run the sampler until ``out`` holds ``rows`` lines (a minute at most)."""
    settings = TelemetrySettings(period_ms=50, root=str(root))
    command = [
        *sampler_command(settings, str(out), gpu=False, python=sys.executable),
        "--node",
        "nodeA",
    ]
    proc = subprocess.Popen(command)
    stop = threading.Event()
    thread = threading.Thread(target=feed, args=(stop,)) if feed else None
    if thread:
        thread.start()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if out.exists() and len(out.read_text().splitlines()) >= rows:
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=20) == 0
    stop.set()
    if thread:
        thread.join()


def test_sampler_reads_rapl_and_proc_stat(tmp_path: Path) -> None:
    root = node_tree(tmp_path / "root")
    counter = root / "sys/class/powercap/intel-rapl:0/energy_uj"

    def kernel(stop: threading.Event) -> None:  # the counter grows as the kernel's does
        uj = 1_000_000
        while not stop.wait(0.02):
            uj += 1_000_000
            write_counter(counter, uj)

    out = tmp_path / "telemetry-nodeA.csv"
    run_sampler(root, out, 12, kernel)
    samples = read_samples([out])
    energy = samples[samples.metric == "energy_j"]
    assert len(energy) >= 5 and set(energy.device) == {"package-0"}  # no sub-zone
    assert energy.value.is_monotonic_increasing and energy.value.iloc[-1] > energy.value.iloc[0]
    assert set(samples.node) == {"nodeA"}
    status = json.loads(out.with_suffix(".json").read_text())
    assert status["sources"] == {"proc_stat": "ok", "rapl": "ok"}


def test_sampler_without_rapl_says_why(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "proc").mkdir(parents=True)
    (root / "proc/stat").write_text(Path("/proc/stat").read_text())
    out = tmp_path / "telemetry-nodeA.csv"
    run_sampler(root, out, 3)
    status = json.loads(out.with_suffix(".json").read_text())
    assert status["sources"]["proc_stat"] == "ok"
    assert status["sources"]["rapl"].startswith("no RAPL:")
    assert "energy_j" not in set(read_samples([out]).metric)
