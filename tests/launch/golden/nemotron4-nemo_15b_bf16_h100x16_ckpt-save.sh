#!/usr/bin/env bash
# llmbench 0.1.0: run nemotron4-nemo_15b_bf16_h100x16_ckpt-save
# Exactly what this attempt executed; rerun by hand with: bash launch.sh (inside a Slurm allocation)
set -euo pipefail
cd "$(dirname "$0")"
PYTHON="${LLMBENCH_PYTHON:-python3}"
# Image nvcr.io/nvidia/nemo:25.02.01: the reference's (nvcr.io/nvidia/nemo:25.02.01).
: "${LLMBENCH_STAGE_PATH:?set LLMBENCH_STAGE_PATH to the shared stage folder}"
# LLMBENCH_IMAGE overrides the image imported into the stage folder (docs/slurm.md).
IMAGE="${LLMBENCH_IMAGE:-$LLMBENCH_STAGE_PATH/images/nvidia+nemo+25.02.01.sqsh}"
LLMBENCH_SRC="$("$PYTHON" -c 'import llmbench, pathlib; print(pathlib.Path(llmbench.__file__).parents[1])')"
# The executor plugin keeps only SLURM_JOB_ID in a rule's shell (it strips SLURM_*),
# so the allocation's nodes come from the controller.
: "${SLURM_JOB_ID:?launcher srun runs inside a Slurm allocation}"
NODELIST="$(squeue -h -j "$SLURM_JOB_ID" -o %N)"
# LLMBENCH_MASTER_ADDR overrides where node names do not resolve (docs/slurm.md).
export MASTER_ADDR="${LLMBENCH_MASTER_ADDR:-$(scontrol show hostnames "$NODELIST" | sed -n 1p)}"
export MASTER_PORT="${LLMBENCH_MASTER_PORT:-$((20000 + SLURM_JOB_ID % 20000))}"
# Allocation as the reference: sbatch --exclusive, --mem=0 (all of the node's memory), no --cpus-per-task (the node's CPUs shared by its ranks).
# The reference's environment (DGXC nemotron/ @v25.04 (launch.sh, gsw_nemo.patch), NeMo @d2b2155 (scripts/performance/llm/pretrain_nemotron4_*.py, utils.py)); sources: run_spec.json.
export TORCH_NCCL_AVOID_RECORD_STREAMS=1
export NCCL_NVLS_ENABLE=0
export NVTE_FLASH_ATTN=1
export NVTE_FUSED_ATTN=1
export TRANSFORMERS_OFFLINE=1
export TOKENIZERS_PARALLELISM=False
export NEMO_LOG_MEMORY_USAGE=1
export CUDA_DEVICE_MAX_CONNECTIONS=1
export NVTE_FWD_LAYERNORM_SM_MARGIN=16
export NVTE_BWD_LAYERNORM_SM_MARGIN=16
# NCCL's transport choice, one file per process (docs/transport.md).
export NCCL_DEBUG=INFO
export NCCL_DEBUG_SUBSYS=INIT,NET
export NCCL_DEBUG_FILE="$PWD/nccl-debug.%h.%p.log"
# vboost once per node, as the reference; a node that refuses it only logs a warning.
srun --nodes=2 --ntasks-per-node=1 sudo -n nvidia-smi boost-slider --vboost 1 \
    || echo "llmbench: vboost not set (needs passwordless sudo)" >&2
# HF_TOKEN, if needed, comes from the caller's environment, by name only.
# Telemetry (docs/telemetry.md): a sampler per node, stopped after the ranks.
if [[ -n "${LLMBENCH_TELEMETRY:-}" ]]; then
    srun --overlap --nodes=2 --ntasks-per-node=1 --gres=gpu:8 "$PYTHON" -m llmbench.telemetry.sampler --out "$PWD/telemetry-%n.csv" --period-ms "$LLMBENCH_TELEMETRY_PERIOD_MS" --root "$LLMBENCH_TELEMETRY_ROOT" --gpu &
    SAMPLERS=$!
    trap 'kill -TERM "$SAMPLERS" || true; wait "$SAMPLERS" || true' EXIT
fi
srun --nodes=2 --ntasks-per-node=8 --kill-on-bad-exit=1 \
    --container-image="$IMAGE" --container-mounts="$LLMBENCH_SRC:/opt/llmbench/src:ro,$PWD:$PWD,$LLMBENCH_STAGE_PATH:$LLMBENCH_STAGE_PATH" --container-workdir="$PWD" --no-container-mount-home --container-env=HF_TOKEN,TORCH_NCCL_AVOID_RECORD_STREAMS,NCCL_NVLS_ENABLE,NVTE_FLASH_ATTN,NVTE_FUSED_ATTN,TRANSFORMERS_OFFLINE,TOKENIZERS_PARALLELISM,NEMO_LOG_MEMORY_USAGE,CUDA_DEVICE_MAX_CONNECTIONS,NVTE_FWD_LAYERNORM_SM_MARGIN,NVTE_BWD_LAYERNORM_SM_MARGIN,NCCL_DEBUG,NCCL_DEBUG_SUBSYS,NCCL_DEBUG_FILE \
    python3 /opt/llmbench/src/llmbench/ranks/entrypoints/from_source.py llmbench.ranks.entrypoints.nemo2 --spec run_spec.json --save-checkpoint "$LLMBENCH_STAGE_PATH/checkpoints/nemotron4-nemo_15b_bf16_h100x16_ckpt-save"
