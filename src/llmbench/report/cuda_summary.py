"""Summary of an embedded ``local-cuda`` sweep: step time, MFU against the GPU's datasheet
peak, joules per token.

    python -m llmbench.report.cuda_summary results/tables/runs.parquet [--gpu-name NAME]

The GPU's name comes from ``nvidia-smi --query-gpu=name --format=csv,noheader`` unless
given. fp32 training runs at torch's default matmul precision (no TF32), so its peak is
the GPU's plain FP32 figure; bf16 uses the dense (no sparsity) tensor-core figure.
"""

from __future__ import annotations

import argparse
import math
import subprocess
import sys
from collections.abc import Sequence

import pandas as pd

DATASHEET_TFLOPS: dict[str, tuple[dict[str, float], str]] = {
    "H100 PCIe": ({"fp32": 51.0, "bf16": 756.0}, "NVIDIA H100 Tensor Core GPU datasheet"),
    "H100 NVL": ({"fp32": 60.0, "bf16": 835.0}, "NVIDIA H100 Tensor Core GPU datasheet"),
    "H100": ({"fp32": 67.0, "bf16": 989.0}, "NVIDIA H100 Tensor Core GPU datasheet (SXM)"),
    "H200": ({"fp32": 67.0, "bf16": 989.0}, "NVIDIA H200 Tensor Core GPU datasheet (SXM)"),
    "A100": ({"fp32": 19.5, "bf16": 312.0}, "NVIDIA A100 Tensor Core GPU datasheet"),
    "B200": ({"bf16": 2250.0}, "NVIDIA DGX B200 datasheet (dense BF16 per GPU)"),
}
"""Dense peak TFLOPS by dtype per GPU model; the first key found in the name wins, so
the more specific names come first. Sparsity figures (2x) are not used."""


def datasheet_peak(gpu_name: str, dtype: str) -> tuple[float, str]:
    """(peak TFLOPS, source) for a GPU name as nvidia-smi prints it; NaN when unknown."""
    for key, (peaks, source) in DATASHEET_TFLOPS.items():
        if key in gpu_name and dtype in peaks:
            return peaks[dtype], source
    return math.nan, f"no datasheet figure for {gpu_name!r} {dtype}"


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
