"""Summary of an embedded ``local-cuda`` sweep: step time, MFU against the GPU's datasheet
peak, joules per token.

    python -m llmbench.report.cuda_summary results/tables/runs.parquet [--gpu-name NAME]

The GPU's name comes from ``nvidia-smi --query-gpu=name --format=csv,noheader`` unless
given; the peaks are the catalog's (``catalog/devices.yaml``, ``gpu_models``).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Sequence

import pandas as pd

from llmbench.core.devices import datasheet_peak


def gpu_name() -> str:
    out = subprocess.run(
        ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.splitlines()[0].strip()


def summary(runs: pd.DataFrame, name: str) -> pd.DataFrame:
    rows = []
    for run in runs.itertuples():
        peak, source = datasheet_peak(name, run.dtype)
        rows.append(
            {
                "run_id": run.run_id,
                "status": run.status,
                "step_time_s": run.step_time_mean_s,
                "tflops_per_gpu": run.achieved_tflops_per_gpu,
                "peak_tflops": peak,
                "mfu_pct": 100 * run.achieved_tflops_per_gpu / peak,
                "joules_per_token": run.joules_per_token,
                "mean_power_w_per_gpu": run.mean_power_w_per_gpu,
                "clock_throttled": run.clock_throttled,
                "energy_reason": run.energy_reason,
                "peak_source": source,
            }
        )
    return pd.DataFrame(rows)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", help="results/tables/runs.parquet of a local-cuda sweep")
    parser.add_argument("--gpu-name", default=None)
    args = parser.parse_args(argv)
    name = args.gpu_name or gpu_name()
    table = summary(pd.read_parquet(args.runs), name)
    print(f"GPU: {name}")
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(table.to_string(index=False))
    return 0 if (table["status"] == "success").all() else 1


if __name__ == "__main__":
    sys.exit(main())
