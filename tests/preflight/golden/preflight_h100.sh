#!/usr/bin/env bash
# llmbench GPU node preflight: health, ECC, NVLink, DCGM, one-node bandwidth.
# What the preflight_node job ran, each check under its own time limit.
set -uo pipefail
echo '### llmbench preflight: health'
timeout -k 5 60 nvidia-smi --query-gpu=index,name,pci.bus_id,ecc.errors.uncorrected.volatile.total,retired_pages.pending,clocks.sm,clocks.max.sm,pcie.link.width.current,pcie.link.width.max --format=csv
echo '### llmbench preflight: ecc'
timeout -k 5 60 nvidia-smi -q -d ECC,ROW_REMAPPER
echo '### llmbench preflight: nvlink'
timeout -k 5 60 nvidia-smi nvlink --status
echo '### llmbench preflight: dcgm'
if command -v dcgmi >/dev/null; then timeout -k 5 180 dcgmi diag -r 1; else echo 'dcgmi not installed'; fi
echo '### llmbench preflight: pmix'
timeout -k 5 60 srun --mpi=list
echo '### llmbench preflight: nccl'
timeout -k 5 600 srun --ntasks=1 --gpus-per-task=8 --container-image="${LLMBENCH_IMAGE:-nvcr.io/nvidia/nemo:25.04}" --no-container-mount-home all_reduce_perf -b 8 -e 8589934592 -f 2 -g 8
echo '### llmbench preflight: alltoall'
timeout -k 5 600 srun --ntasks=1 --gpus-per-task=8 --container-image="${LLMBENCH_IMAGE:-nvcr.io/nvidia/nemo:25.04}" --no-container-mount-home alltoall_perf -b 8 -e 8589934592 -f 2 -g 8
