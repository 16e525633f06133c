#!/usr/bin/env bash
# llmbench 0.1.0: run llama2-maxtext_70b_bf16_h100x64_perf
# Exactly what this attempt executed; rerun by hand with: bash launch.sh (inside a Slurm allocation)
set -euo pipefail
cd "$(dirname "$0")"
PYTHON="${LLMBENCH_PYTHON:-python3}"
# Image ghcr.io/nvidia/jax:maxtext-2024-12-09: the reference's (ghcr.io/nvidia/jax:maxtext-2024-12-09).
: "${LLMBENCH_STAGE_PATH:?set LLMBENCH_STAGE_PATH to the shared stage folder}"
# LLMBENCH_IMAGE overrides the image imported into the stage folder (docs/slurm.md).
IMAGE="${LLMBENCH_IMAGE:-$LLMBENCH_STAGE_PATH/images/nvidia+jax+maxtext-2024-12-09.sqsh}"
LLMBENCH_SRC="$("$PYTHON" -c 'import llmbench, pathlib; print(pathlib.Path(llmbench.__file__).parents[1])')"
# The executor plugin keeps only SLURM_JOB_ID in a rule's shell (it strips SLURM_*),
# so the allocation's nodes come from the controller.
: "${SLURM_JOB_ID:?launcher srun runs inside a Slurm allocation}"
NODELIST="$(squeue -h -j "$SLURM_JOB_ID" -o %N)"
# LLMBENCH_MASTER_ADDR overrides where node names do not resolve (docs/slurm.md).
export MASTER_ADDR="${LLMBENCH_MASTER_ADDR:-$(scontrol show hostnames "$NODELIST" | sed -n 1p)}"
export MASTER_PORT="${LLMBENCH_MASTER_PORT:-$((20000 + SLURM_JOB_ID % 20000))}"
# Allocation as the reference: sbatch --exclusive, --mem=0 (all of the node's memory), no --cpus-per-task (the node's CPUs shared by its ranks).
# The reference's environment (DGXC maxtext/ @v24.11.1 (configure.sh, launch.sh; the same code at v25.01)); sources: run_spec.json.
export XLA_PYTHON_CLIENT_MEM_FRACTION=0.94
export CUDA_DEVICE_MAX_CONNECTIONS=1
export NVTE_FUSED_ATTN=1
export NCCL_IB_SL=1
export XLA_FLAGS='--xla_gpu_enable_triton_gemm=false --xla_gpu_graph_level=0 --xla_gpu_enable_highest_priority_async_stream=true --xla_gpu_all_reduce_combine_threshold_bytes=2147483648 --xla_gpu_all_gather_combine_threshold_bytes=2147483648 --xla_gpu_reduce_scatter_combine_threshold_bytes=33554432 --xla_gpu_enable_pipelined_all_gather=true --xla_gpu_enable_pipelined_reduce_scatter=true --xla_gpu_enable_pipelined_all_reduce=true --xla_gpu_enable_while_loop_double_buffering=true --xla_gpu_enable_triton_softmax_fusion=false --xla_gpu_enable_all_gather_combine_by_dim=false --xla_gpu_enable_reduce_scatter_combine_by_dim=false --xla_disable_hlo_passes=rematerialization --xla_gpu_enable_latency_hiding_scheduler=true'
# NCCL's transport choice, one file per process (docs/transport.md).
export NCCL_DEBUG=INFO
export NCCL_DEBUG_SUBSYS=INIT,NET
export NCCL_DEBUG_FILE="$PWD/nccl-debug.%h.%p.log"
# HF_TOKEN, if needed, comes from the caller's environment, by name only.
# Telemetry (docs/telemetry.md): a sampler per node, stopped after the ranks.
if [[ -n "${LLMBENCH_TELEMETRY:-}" ]]; then
    srun --overlap --nodes=8 --ntasks-per-node=1 --gres=gpu:8 "$PYTHON" -m llmbench.telemetry.sampler --out "$PWD/telemetry-%n.csv" --period-ms "$LLMBENCH_TELEMETRY_PERIOD_MS" --root "$LLMBENCH_TELEMETRY_ROOT" --gpu &
    SAMPLERS=$!
    trap 'kill -TERM "$SAMPLERS" || true; wait "$SAMPLERS" || true' EXIT
fi
srun --nodes=8 --ntasks-per-node=8 --kill-on-bad-exit=1 \
    --container-image="$IMAGE" --container-mounts="$LLMBENCH_SRC:/opt/llmbench/src:ro,$PWD:$PWD,$LLMBENCH_STAGE_PATH:$LLMBENCH_STAGE_PATH" --container-workdir="$PWD" --no-container-mount-home --container-writable --container-env=HF_TOKEN,XLA_PYTHON_CLIENT_MEM_FRACTION,CUDA_DEVICE_MAX_CONNECTIONS,NVTE_FUSED_ATTN,NCCL_IB_SL,XLA_FLAGS,NCCL_DEBUG,NCCL_DEBUG_SUBSYS,NCCL_DEBUG_FILE \
    python3 /opt/llmbench/src/llmbench/ranks/entrypoints/from_source.py llmbench.ranks.entrypoints.maxtext --spec run_spec.json
