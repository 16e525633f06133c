"""False alarms of ``llmbench compare``: identical embedded sweeps compared pairwise.

    python benchmarks/compare_false_alarms.py [--sweeps 20] [--dtypes fp32] [--scales 1 2]
                                              [--tolerance 0.05] [--json PATH] [--keep]

Runs the real workflow (real snakemake, real PyTorch training of the embedded tiny
Llama) ``--sweeps`` times with the same config, each in a fresh folder and each added to
one history (``history.add: true``), then compares every pair of sweeps with the same
code as ``llmbench compare A B`` (both orders would double-count: i < j only). Nothing
changed between the sweeps, so every ``slower`` or ``faster`` verdict is a false alarm.
Prints the verdict counts and the false-alarm rate at the default tolerance; target
<= 5 % (exits 1 above it). Pairs are not independent (each sweep is in 19 pairs), so
the rate is an estimate of the per-comparison rate, not of independent trials.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np
import yaml

from llmbench.history.compare import compare
from llmbench.history.stats import TOLERANCE
from llmbench.history.store import open_history, sweep_index

REPO = Path(__file__).resolve().parents[1]
TARGET = 0.05


def run_sweep(workdir: Path, config: dict) -> float:
    workdir.mkdir(parents=True)
    (workdir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"),
         "--directory", str(workdir), "--cores", "2"],
        cwd=workdir, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if proc.returncode != 0:
        sys.exit(f"sweep in {workdir} failed:\n{proc.stderr[-3000:]}")
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sweeps", type=int, default=20)
    parser.add_argument("--dtypes", nargs="+", default=["fp32"])
    parser.add_argument("--scales", nargs="+", type=int, default=[1, 2])
    parser.add_argument("--tolerance", type=float, default=TOLERANCE)
    parser.add_argument("--json", help="also write the figures here")
    parser.add_argument("--keep", action="store_true", help="keep the sweeps' folders")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="llmbench-false-alarms-"))
    history = root / "history"
    config = {
        "sweeps": [{"workload": "tiny-llama", "sizes": ["tiny"], "dtypes": args.dtypes,
                    "gpu_type": "cpu", "scales": args.scales}],
        "history": {"path": str(history), "add": True, "cluster": "bench"},
    }  # fmt: skip
    try:
        for i in range(args.sweeps):
            took = run_sweep(root / f"sweep-{i:02d}", config)
            print(f"sweep {i + 1}/{args.sweeps}: {took:.0f} s", flush=True)
        store = open_history(history)
        ids = sweep_index(store)["sweep_id"].tolist()
        verdicts: Counter[str] = Counter()
        spreads = []
        for a, b in itertools.combinations(ids, 2):
            result = compare(store, a, b, args.tolerance)
            verdicts.update(result.keys["verdict"])
            spreads.extend(result.keys["run_spread_pct"].dropna())
        total = sum(verdicts.values())
        false = verdicts["slower"] + verdicts["faster"]
        rate = false / total if total else float("nan")
        figures = {
            "sweeps": len(ids), "pairs": len(ids) * (len(ids) - 1) // 2,
            "comparisons": total, "verdicts": dict(verdicts), "tolerance": args.tolerance,
            "false_alarm_rate": rate, "target": TARGET, "cpu_count": os.cpu_count(),
            "median_run_spread_pct": float(np.median(spreads)) if spreads else None,
        }  # fmt: skip
        print(json.dumps(figures, indent=2))
        print(f"false slower/faster: {false} of {total} key comparisons = {rate:.1%} "
              f"(target <= {TARGET:.0%}) at tolerance {args.tolerance:.0%}")  # fmt: skip
        if args.json:
            Path(args.json).write_text(json.dumps(figures, indent=2) + "\n")
        return 0 if rate <= TARGET else 1
    finally:
        if args.keep:
            print(f"kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
