"""Runs end under load: the distributed embedded run, N times, with every core busy.

Each run goes through the real runner (``llmbench.job.runner.run_attempt``: launch.sh,
torchrun, 2 gloo ranks, the supervisor's time limit and watchdog) while one busy-looping
process per core competes for the CPU. Prints how many runs succeeded, hung, timed out or
were ended after finishing (``teardown_hang``), and the wall time.

    python benchmarks/stress.py            # 30 runs, 2 ranks, the default 50 steps
    python benchmarks/stress.py --runs 5 --json

Target: 0 hangs in 30 runs, and it finishes.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import sys
import tempfile
import time
from collections import Counter
from datetime import datetime
from pathlib import Path

from llmbench.core.config import validate_and_expand
from llmbench.job.attempts import attempt_outcome
from llmbench.job.runner import run_attempt


def _busy() -> None:
    while True:
        pass


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--load", type=int, default=os.cpu_count() or 1, help="busy processes")
    parser.add_argument("--json", action="store_true", help="one JSON line instead of text")
    args = parser.parse_args()
    config = {
        "sweeps": [
            {
                "workload": "tiny-llama",
                "sizes": ["tiny"],
                "dtypes": ["fp32"],
                "gpu_type": "cpu",
                "scales": [args.ranks],
            }
        ]
    }
    (spec,) = validate_and_expand(config)[1]
    hogs = [multiprocessing.Process(target=_busy, daemon=True) for _ in range(args.load)]
    for hog in hogs:
        hog.start()
    counts: Counter[str] = Counter()
    walls = []
    start = time.monotonic()
    try:
        with tempfile.TemporaryDirectory(prefix="llmbench-stress-") as tmp:
            run_dir = Path(tmp) / spec.run_id
            for i in range(args.runs):
                record = run_attempt(spec, run_dir)
                status, reason = attempt_outcome(run_dir, record)
                counts[reason if reason == "teardown_hang" else status] += 1
                walls.append(record_wall_s(record))
                if not args.json:
                    print(f"run {i + 1}/{args.runs}: {status} {reason} {walls[-1]:.1f} s")
    finally:
        for hog in hogs:  # ours, by PID
            hog.terminate()
        for hog in hogs:
            hog.join()
    named = ("success", "hang", "timeout", "teardown_hang")
    result = {
        "runs": args.runs,
        "ranks": args.ranks,
        "load_processes": args.load,
        "success": counts["success"],
        "hang": counts["hang"],
        "timeout": counts["timeout"],
        "teardown_hang": counts["teardown_hang"],
        "other": args.runs - sum(counts[k] for k in named),
        "wall_s": round(time.monotonic() - start, 1),
        "run_wall_s_max": round(max(walls), 1) if walls else None,
    }
    print(json.dumps(result) if args.json else "\n".join(f"{k}: {v}" for k, v in result.items()))
    ok = result["success"] == args.runs
    return 0 if ok else 1


def record_wall_s(record: dict) -> float:
    started = datetime.fromisoformat(record["started_at"])
    finished = datetime.fromisoformat(record["finished_at"])
    return (finished - started).total_seconds()


if __name__ == "__main__":
    sys.exit(main())
