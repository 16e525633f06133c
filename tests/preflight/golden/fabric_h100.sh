#!/usr/bin/env bash
# llmbench preflight: all-reduce across the sweep's largest allocation.
set -uo pipefail
srun --nodes=2 --ntasks-per-node=8 --mpi=pmix --container-image="${LLMBENCH_IMAGE:-nvcr.io/nvidia/nemo:25.04}" --no-container-mount-home all_reduce_perf -b 8 -e 8589934592 -f 2 -g 1
