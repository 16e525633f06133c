#!/usr/bin/env bash
# llmbench GPU node preflight: health, ECC, NVLink, DCGM, one-node bandwidth.
set -uo pipefail
echo '### llmbench preflight: health'
nvidia-smi --query-gpu=index,name,pci.bus_id,ecc.errors.uncorrected.volatile.total,retired_pages.pending,clocks.sm,clocks.max.sm,pcie.link.width.current,pcie.link.width.max --format=csv
echo '### llmbench preflight: ecc'
nvidia-smi -q -d ECC,ROW_REMAPPER || true
echo '### llmbench preflight: nvlink'
nvidia-smi nvlink --status || true
echo '### llmbench preflight: dcgm'
if command -v dcgmi >/dev/null; then dcgmi diag -r 1; else echo 'dcgmi not installed'; fi
echo '### llmbench preflight: pmix'
srun --mpi=list 2>&1 || true
echo '### llmbench preflight: nccl'
srun --ntasks=1 --gpus-per-task=8 --container-image="${LLMBENCH_IMAGE:-nvcr.io/nvidia/nemo:25.04}" --no-container-mount-home all_reduce_perf -b 8 -e 8589934592 -f 2 -g 8
echo '### llmbench preflight: alltoall'
srun --ntasks=1 --gpus-per-task=8 --container-image="${LLMBENCH_IMAGE:-nvcr.io/nvidia/nemo:25.04}" --no-container-mount-home alltoall_perf -b 8 -e 8589934592 -f 2 -g 8 || true
