#!/usr/bin/env bash
# llmbench 0.1.0: run deepseek-v3-mbridge_671b_fp8_gb300x128-v26.08_perf
# Exactly what this attempt executed; rerun by hand with: bash launch.sh (inside a Slurm allocation)
set -euo pipefail
cd "$(dirname "$0")"
PYTHON="${LLMBENCH_PYTHON:-python3}"
# Image nvcr.io/nvidia/nemo:26.06.01: the reference's (nvcr.io/nvidia/nemo:26.06.01).
: "${LLMBENCH_STAGE_PATH:?set LLMBENCH_STAGE_PATH to the shared stage folder}"
# LLMBENCH_IMAGE overrides the image imported into the stage folder (docs/slurm.md).
IMAGE="${LLMBENCH_IMAGE:-$LLMBENCH_STAGE_PATH/images/nvidia+nemo+26.06.01.aarch64.sqsh}"
LLMBENCH_SRC="$("$PYTHON" -c 'import llmbench, pathlib; print(pathlib.Path(llmbench.__file__).parents[1])')"
# The executor plugin keeps only SLURM_JOB_ID in a rule's shell (it strips SLURM_*),
# so the allocation's nodes come from the controller.
: "${SLURM_JOB_ID:?launcher srun runs inside a Slurm allocation}"
NODELIST="$(squeue -h -j "$SLURM_JOB_ID" -o %N)"
# LLMBENCH_MASTER_ADDR overrides where node names do not resolve (docs/slurm.md).
export MASTER_ADDR="${LLMBENCH_MASTER_ADDR:-$(scontrol show hostnames "$NODELIST" | sed -n 1p)}"
export MASTER_PORT="${LLMBENCH_MASTER_PORT:-$((20000 + SLURM_JOB_ID % 20000))}"
# Allocation as the reference: sbatch --exclusive, --mem=0 (all of the node's memory), no --cpus-per-task (the node's CPUs shared by its ranks), --segment=16.
# The reference's environment (EP deepseek_v3/pretrain/megatron_bridge @v26.08.00 (launch.sh, metadata.yaml), MB @b50da4c (scripts/performance/configs/deepseek, utils/, perf_plugins.py), image nemo:26.06.01); sources: run_spec.json.
export TORCH_NCCL_HIGH_PRIORITY=1
export TRANSFORMERS_OFFLINE=1
export TOKENIZERS_PARALLELISM=False
export NCCL_NVLS_ENABLE=0
export HF_HUB_OFFLINE=1
export NVTE_FWD_LAYERNORM_SM_MARGIN=20
export NVTE_BWD_LAYERNORM_SM_MARGIN=20
export NUM_OF_TOKENS_PER_CHUNK_COMBINE_API=128
export NCCL_GRAPH_REGISTER=0
export NVLINK_DOMAIN_SIZE=72
export USE_MNNVL=1
export NUM_OF_HYBRID_EP_RANKS_PER_NVLINK_DOMAIN=32
export NVTE_ALLOW_NONDETERMINISTIC_ALGO=0
export CUDA_DEVICE_MAX_CONNECTIONS=32
export NVTE_NORM_FWD_USE_CUDNN=1
export NVTE_NORM_BWD_USE_CUDNN=1
export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True,graph_capture_record_stream_reuse:True
export TORCH_NCCL_AVOID_RECORD_STREAMS=0
export NVTE_CUTEDSL_FUSED_GROUPED_MLP=1
export CUDNNFE_CLUSTER_OVERLAP_MARGIN=8
# NCCL's transport choice, one file per process (docs/transport.md).
export NCCL_DEBUG=INFO
export NCCL_DEBUG_SUBSYS=INIT,NET
export NCCL_DEBUG_FILE="$PWD/nccl-debug.%h.%p.log"
# HF_TOKEN, if needed, comes from the caller's environment, by name only.
# HF_HOME: the site's hf_home, else the caller's (docs/slurm.md).
: "${HF_HOME:?set hf_home in the site file or HF_HOME: the Hugging Face cache holding the model config this recipe reads offline}"
# Telemetry (docs/telemetry.md): a sampler per node, stopped after the ranks.
if [[ -n "${LLMBENCH_TELEMETRY:-}" ]]; then
    srun --overlap --nodes=32 --ntasks-per-node=1 --gres=gpu:4 "$PYTHON" -m llmbench.telemetry.sampler --out "$PWD/telemetry-%n.csv" --period-ms "$LLMBENCH_TELEMETRY_PERIOD_MS" --root "$LLMBENCH_TELEMETRY_ROOT" --gpu &
    SAMPLERS=$!
    trap 'kill -TERM "$SAMPLERS" || true; wait "$SAMPLERS" || true' EXIT
fi
srun --nodes=32 --ntasks-per-node=4 --kill-on-bad-exit=1 \
    --container-image="$IMAGE" --container-mounts="$LLMBENCH_SRC:/opt/llmbench/src:ro,$PWD:$PWD,$LLMBENCH_STAGE_PATH:$LLMBENCH_STAGE_PATH,$HF_HOME:$HF_HOME" --container-workdir="$PWD" --no-container-mount-home --container-writable --container-env=HF_TOKEN,HF_HOME,TORCH_NCCL_HIGH_PRIORITY,TRANSFORMERS_OFFLINE,TOKENIZERS_PARALLELISM,NCCL_NVLS_ENABLE,HF_HUB_OFFLINE,NVTE_FWD_LAYERNORM_SM_MARGIN,NVTE_BWD_LAYERNORM_SM_MARGIN,NUM_OF_TOKENS_PER_CHUNK_COMBINE_API,NCCL_GRAPH_REGISTER,NVLINK_DOMAIN_SIZE,USE_MNNVL,NUM_OF_HYBRID_EP_RANKS_PER_NVLINK_DOMAIN,NVTE_ALLOW_NONDETERMINISTIC_ALGO,CUDA_DEVICE_MAX_CONNECTIONS,NVTE_NORM_FWD_USE_CUDNN,NVTE_NORM_BWD_USE_CUDNN,PYTORCH_CUDA_ALLOC_CONF,TORCH_NCCL_AVOID_RECORD_STREAMS,NVTE_CUTEDSL_FUSED_GROUPED_MLP,CUDNNFE_CLUSTER_OVERLAP_MARGIN,NCCL_DEBUG,NCCL_DEBUG_SUBSYS,NCCL_DEBUG_FILE \
    bash -c 'exec numactl --cpunodebind=$((SLURM_LOCALID / 2)) --membind=$((SLURM_LOCALID / 2)) "$@"' numactl \
    python3 /opt/llmbench/src/llmbench/ranks/entrypoints/from_source.py llmbench.ranks.entrypoints.megatron_bridge --spec run_spec.json
