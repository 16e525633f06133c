"""The sampler process: started beside a run's ranks on each node, stopped after them.

    python -m llmbench.telemetry.sampler --out telemetry-<node>.csv --period-ms 250

Every period it appends CPU utilisation (``/proc/stat``) and the RAPL energy counters
(where readable) to ``--out``; with ``--gpu`` it runs nvidia-smi's own loop beside it and
converts that output when stopped (SIGTERM or SIGINT). ``<out>.json`` says which sources
gave data and, for each one that did not, why.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from types import FrameType

from llmbench.telemetry import cpu, nvidia_smi
from llmbench.telemetry.samples import Sample, write_samples

DEFAULT_PERIOD_MS = 250


def status_path(out: Path) -> Path:
    return out.with_suffix(".json")


def gpu_raw_path(out: Path) -> Path:
    """nvidia-smi's own output, beside (not matching) the samples' ``telemetry-*.csv``."""
    return out.with_name(f"nvidia-smi-{out.stem}.csv")


class Sampler:
    """Samples CPU sources into ``out`` until ``stop`` is set."""

    def __init__(self, out: Path, period_ms: int, root: Path, node: str, gpu: bool) -> None:
        self.out, self.period_s, self.root, self.node = out, period_ms / 1000, root, node
        self.gpu = gpu
        self.stop = threading.Event()
        self.rapl = cpu.rapl_reader(root)
        self.sources: dict[str, str] = {}

    def _cpu_rows(
        self, now: float, before: cpu.CpuTimes | None
    ) -> tuple[list[Sample], cpu.CpuTimes | None]:
        rows = []
        times = cpu.read_cpu_times(self.root)
        if times is not None and before is not None:
            util = cpu.utilisation(before, times)
            rows.append(Sample(now, self.node, "proc_stat", "cpu", "util", util))
        for zone, joules in self.rapl.read_j().items():
            rows.append(Sample(now, self.node, "rapl", zone, "energy_j", joules))
        return rows, times

    def run(self) -> None:
        self.sources["proc_stat"] = (
            "ok" if cpu.read_cpu_times(self.root) else f"{self.root / cpu.PROC_STAT} not readable"
        )
        self.sources["rapl"] = "ok" if self.rapl.zones else self.rapl.reason
        gpu_proc = self._start_gpu() if self.gpu else None
        self._write_status()
        with open(self.out, "a", newline="") as fh:
            writer = csv.writer(fh)
            before = cpu.read_cpu_times(self.root)
            next_at = time.monotonic()
            while True:
                rows, before = self._cpu_rows(time.time(), before)
                write_samples(rows, writer)
                fh.flush()
                if self.stop.is_set():
                    break
                next_at += self.period_s
                self.stop.wait(max(0.0, next_at - time.monotonic()))
            if gpu_proc is not None:
                self._stop_gpu(gpu_proc, writer)
        self._write_status()

    def _start_gpu(self) -> subprocess.Popen[bytes] | None:
        if shutil.which("nvidia-smi") is None:
            self.sources["nvidia-smi"] = "nvidia-smi not found on PATH"
            return None
        raw = open(gpu_raw_path(self.out), "wb")  # noqa: SIM115 - closed with the process
        command = nvidia_smi.query_command(int(self.period_s * 1000))
        proc = subprocess.Popen(command, stdout=raw, stderr=subprocess.STDOUT)
        raw.close()
        self.sources["nvidia-smi"] = "ok"
        return proc

    def _stop_gpu(self, proc: subprocess.Popen[bytes], writer: csv.writer) -> None:  # type: ignore[valid-type]
        proc.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=10)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        with open(gpu_raw_path(self.out)) as fh:
            rows = list(nvidia_smi.parse_query_csv(fh, self.node))
        if not rows:
            self.sources["nvidia-smi"] = f"nvidia-smi printed no sample (exit {proc.returncode})"
        write_samples(rows, writer)

    def _write_status(self) -> None:
        status = {
            "node": self.node,
            "period_ms": int(self.period_s * 1000),
            "sources": self.sources,
        }
        status_path(self.out).write_text(json.dumps(status, indent=2, sort_keys=True) + "\n")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", required=True, type=Path, help="CSV file of samples")
    parser.add_argument("--period-ms", type=int, default=DEFAULT_PERIOD_MS)
    parser.add_argument("--root", type=Path, default=Path("/"), help="where /proc and /sys are")
    parser.add_argument("--node", default=None, help="node name (default: this node's)")
    parser.add_argument("--gpu", action="store_true", help="also sample GPUs with nvidia-smi")
    stopping = threading.Event()

    def stop(signum: int, frame: FrameType | None) -> None:
        stopping.set()

    # First: a run shorter than this process's start still gets a clean stop.
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    args = parser.parse_args(argv)
    out = Path(str(args.out).replace("%n", args.node or cpu.node_name()))
    sampler = Sampler(out, args.period_ms, args.root, args.node or cpu.node_name(), args.gpu)
    sampler.stop = stopping
    sampler.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
