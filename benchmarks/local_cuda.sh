#!/usr/bin/env bash
# The embedded default on this machine's NVIDIA GPUs (GPU type local-cuda: one rank per
# GPU, NCCL, fp32 and bf16) with nvidia-smi telemetry, through the same rules; prints step
# time, MFU against the datasheet peak and joules per token per run.
#
#   benchmarks/local_cuda.sh [work-dir]      # default: a new folder under $TMPDIR
#
# Needs nvidia-smi and a CUDA build of torch; GPUS=<n> limits the GPUs used.
set -euo pipefail
REPO="$(cd "$(dirname "$0")/.." && pwd)"
WORK="${1:-$(mktemp -d "${TMPDIR:-/tmp}/llmbench-local-cuda.XXXXXX")}"
GPUS="${GPUS:-$(nvidia-smi -L | grep -c '^GPU ')}"
SCALES="1"
if ((GPUS > 1)); then SCALES="1, $GPUS"; fi
mkdir -p "$WORK"
cat >"$WORK/config.yaml" <<YAML
sweeps:
  - workload: tiny-llama
    sizes: [tiny]
    dtypes: [fp32, bf16]
    gpu_type: local-cuda
    scales: [$SCALES]
steps: 50
window: [35, 44]
telemetry: {period_ms: 100}
YAML
python -m snakemake --snakefile "$REPO/Snakefile" --directory "$WORK" --cores all
python -m llmbench.report.cuda_summary "$WORK/results/tables/runs.parquet"
echo "results: $WORK/results"
