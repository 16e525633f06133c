#!/usr/bin/env bash
# llmbench 0.1.0: run tiny-llama_tiny_fp32_cpux2_perf
# Exactly what this attempt executed; rerun by hand with: bash launch.sh
set -euo pipefail
cd "$(dirname "$0")"
export OMP_NUM_THREADS=1
PYTHON="${LLMBENCH_PYTHON:-python3}"
exec "$PYTHON" -m torch.distributed.run --standalone --nnodes=1 --nproc-per-node=2 -m llmbench.ranks.embedded.train --spec run_spec.json
