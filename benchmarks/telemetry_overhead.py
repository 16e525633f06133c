"""Sampler overhead: the embedded run's step time with and without telemetry.

Two methods, both through the real runner (``llmbench.job.runner.run_attempt``) on the default
embedded run (tiny Llama, fp32, 2 gloo ranks):

``toggle`` (the default, the figure to report on a shared machine): one long run with
telemetry; while it trains, the sampler process is paused (SIGSTOP) and resumed (SIGCONT)
in alternating blocks of ``--block-s`` seconds. Each step is classed by the trainer's step
clock as sampled (the whole step in a running block) or not (the whole step in a paused
block); steps that straddle a switch are dropped. The ratio is mean(sampled) /
mean(paused) over many interleaved blocks of the same run, so a drift in machine load
hits both sides alike. A paused sampler costs nothing, so this is exactly what sampling
takes from the ranks; the trainer's step clock (one buffered line per step) is on in both.

``pairs``: whole runs in pairs, one with the sampler (and the step clock) and one without,
the order alternating; the ratio is best(with) / best(without) and the median of the
per-pair ratios is printed beside it. Honest but run-to-run noise on a loaded machine can
exceed 2 % by far.

    python benchmarks/telemetry_overhead.py                      # toggle, 600 steps
    python benchmarks/telemetry_overhead.py --method pairs --pairs 6

Target: |ratio - 1| < 0.02. The sampler's own CPU use is printed too: the CPU seconds of a
sampler running 12 s minus one running 2 s (its start-up), per second of sampling, as a
fraction of one core.
"""

from __future__ import annotations

import argparse
import bisect
import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

from llmbench.core.config import validate_and_expand
from llmbench.job.runner import run_attempt
from llmbench.parsers import parse_log
from llmbench.telemetry.results import read_step_clock
from llmbench.telemetry.sampling import TelemetrySettings, sampler_command

TARGET = 0.02


def step_time(spec, folder: Path, telemetry: TelemetrySettings | None) -> float:
    record = run_attempt(spec, folder, telemetry=telemetry)
    summary = parse_log(folder / record["log"]).summary
    if summary.status != "success":
        raise SystemExit(f"run failed: {summary.status} {summary.reason}")
    return float(summary.step_time_mean_s)


def sampler_cpu_s(seconds: float, period_ms: int) -> float:
    """CPU seconds (user + system) of one sampler process that samples for ``seconds``."""
    settings = TelemetrySettings(period_ms=period_ms)
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.Popen(sampler_command(settings, f"{tmp}/telemetry-%n.csv", gpu=False))
        time.sleep(seconds)
        proc.send_signal(signal.SIGTERM)
        _, _, usage = os.wait4(proc.pid, 0)
    return usage.ru_utime + usage.ru_stime


def sampler_core_fraction(period_ms: int) -> float:
    """Steady-state share of one core the sampler uses (start-up cost left out)."""
    return (sampler_cpu_s(12, period_ms) - sampler_cpu_s(2, period_ms)) / 10


def sampler_process() -> psutil.Process | None:
    """The sampler the runner started (a descendant of this process), once it is up."""
    for child in psutil.Process().children(recursive=True):
        try:
            if "llmbench.telemetry.sampler" in child.cmdline():
                return child
        except psutil.Error:
            continue
    return None


def toggle_sampler(done: threading.Event, block_s: float, switches: list) -> None:
    """Pause and resume the sampler every ``block_s`` until ``done``; ``switches`` gets
    (unix time, running) at each switch, starting with the first pause."""
    proc = None
    while proc is None and not done.is_set():
        proc = sampler_process()
        time.sleep(0.05)
    running = True
    while proc is not None and not done.wait(block_s):
        try:
            proc.send_signal(signal.SIGCONT if not running else signal.SIGSTOP)
        except psutil.Error:
            break
        running = not running
        switches.append((time.time(), running))
    if proc is not None and not running:
        with contextlib.suppress(psutil.Error):
            proc.send_signal(signal.SIGCONT)  # the runner stops it with SIGTERM


def classify_steps(clock, switches: list, first: int) -> tuple[list[float], list[float]]:
    """(sampled, paused) step times of iterations >= ``first`` that lie within one block."""
    sampled, paused = [], []
    edges = [t for t, _ in switches]
    for row in clock.itertuples():
        block = bisect.bisect_right(edges, row.start_unix_s)  # switches at or before the start
        if row.iteration < first or block == 0:
            continue  # start-up, or before the first switch
        if block < len(edges) and edges[block] < row.end_unix_s:
            continue  # straddles the next switch
        seconds = row.end_unix_s - row.start_unix_s
        (sampled if switches[block - 1][1] else paused).append(seconds)
    return sampled, paused


def toggle_method(spec, settings: TelemetrySettings, block_s: float, tmp: str) -> dict:
    done, switches = threading.Event(), []
    toggler = threading.Thread(target=toggle_sampler, args=(done, block_s, switches))
    toggler.start()
    folder = Path(tmp) / "toggle"
    try:
        record = run_attempt(spec, folder, telemetry=settings)
    finally:
        done.set()
        toggler.join()
    summary = parse_log(folder / record["log"]).summary
    if summary.status != "success":
        raise SystemExit(f"run failed: {summary.status} {summary.reason}")
    clock = read_step_clock(folder / record["attempt_dir"])
    sampled, paused = classify_steps(clock, switches, first=spec.window[0])
    if len(sampled) < 20 or len(paused) < 20:
        raise SystemExit(f"too few classed steps: {len(sampled)} sampled, {len(paused)} paused")
    ratio = statistics.fmean(sampled) / statistics.fmean(paused)
    return {
        "blocks": len(switches),
        "steps_sampled": len(sampled),
        "steps_paused": len(paused),
        "step_time_sampled_s": statistics.fmean(sampled),
        "step_time_paused_s": statistics.fmean(paused),
        "median_ratio": statistics.median(sampled) / statistics.median(paused),
        "ratio": ratio,
    }


def pairs_method(spec, settings: TelemetrySettings, pairs: int, tmp: str) -> dict:
    with_t, without = [], []
    for pair in range(pairs):
        order = [True, False] if pair % 2 == 0 else [False, True]
        for sampled in order:
            folder = Path(tmp) / f"{'with' if sampled else 'without'}-{pair}"
            value = step_time(spec, folder, settings if sampled else None)
            (with_t if sampled else without).append(value)
    return {
        "pairs": pairs,
        "step_time_with_s": with_t,
        "step_time_without_s": without,
        "ratio": min(with_t) / min(without),
        "paired_median_ratio": statistics.median(
            w / o for w, o in zip(with_t, without, strict=True)
        ),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--method", choices=("toggle", "pairs"), default="toggle")
    parser.add_argument("--pairs", type=int, default=4, help="pairs: runs per side")
    parser.add_argument("--block-s", type=float, default=0.5, help="toggle: block length")
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--period-ms", type=int, default=250)
    parser.add_argument(
        "--steps",
        type=int,
        default=None,
        help="steps per run (toggle 600, pairs 50); the window is all but the first 10",
    )
    parser.add_argument("--json", action="store_true", help="one JSON line instead of text")
    args = parser.parse_args()
    steps = args.steps or (600 if args.method == "toggle" else 50)
    sweep = {"workload": "tiny-llama", "sizes": ["tiny"], "dtypes": ["fp32"]}
    config = {
        "sweeps": [{**sweep, "gpu_type": "cpu", "scales": [args.ranks]}],
        "steps": steps,
        "window": [35, 44] if steps == 50 else [10, steps - 1],
        "runtime_min": 60,
    }
    _, (spec,) = validate_and_expand(config)
    settings = TelemetrySettings(period_ms=args.period_ms)
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="llmbench-telemetry-bench-") as tmp:
        if args.method == "toggle":
            result = toggle_method(spec, settings, args.block_s, tmp)
        else:
            result = pairs_method(spec, settings, args.pairs, tmp)
    result.update(
        method=args.method,
        period_ms=args.period_ms,
        load_1min=[load_before, os.getloadavg()[0]],
        sampler_core_fraction=sampler_core_fraction(args.period_ms),
        target_abs_diff=TARGET,
    )
    result["ok"] = abs(result["ratio"] - 1) < TARGET
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key}: {value}")
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
