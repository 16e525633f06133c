#!/usr/bin/env bash
# llmbench 0.1.0: run tiny-llama_tiny_fp32_cpux2_perf
# Exactly what this attempt executed; rerun by hand with: bash launch.sh (inside a Slurm allocation)
set -euo pipefail
cd "$(dirname "$0")"
export OMP_NUM_THREADS=1
PYTHON="${LLMBENCH_PYTHON:-python3}"
# The executor plugin keeps only SLURM_JOB_ID in a rule's shell (it strips SLURM_*),
# so the allocation's nodes come from the controller.
: "${SLURM_JOB_ID:?launcher srun runs inside a Slurm allocation}"
NODELIST="$(squeue -h -j "$SLURM_JOB_ID" -o %N)"
# LLMBENCH_MASTER_ADDR overrides where node names do not resolve (docs/slurm.md).
export MASTER_ADDR="${LLMBENCH_MASTER_ADDR:-$(scontrol show hostnames "$NODELIST" | sed -n 1p)}"
export MASTER_PORT="${LLMBENCH_MASTER_PORT:-$((20000 + SLURM_JOB_ID % 20000))}"
# HF_TOKEN, if needed, comes from the caller's environment, by name only.
exec srun --nodes=2 --ntasks-per-node=1 --kill-on-bad-exit=1 \
    "$PYTHON" -m llmbench.ranks.embedded.train --spec run_spec.json
