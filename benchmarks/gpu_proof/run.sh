#!/usr/bin/env bash
# The GPU proof kit (docs/gpu-proof.md): one command that proves llmbench's GPU paths on a
# single GPU box, offline, in at most 8 minutes, everything it writes under OUTDIR.
#
#   benchmarks/gpu_proof/run.sh OUTDIR         # on the GPU box, from the repository root
#   benchmarks/gpu_proof/run.sh --dry OUTDIR   # anywhere: the same steps on the CPU
#
# Steps, each under its own time limit, each recorded in OUTDIR/steps/ with its exit code
# and log, none stopping the others:
#   install      the wheels of wheels.txt from benchmarks/gpu_proof/wheels/ (wheels.sh)
#                into a temporary folder (GPU mode; the dry mode checks the list instead)
#   environment  versions, GPUs and imports (environment.json)
#   workflow     the embedded sweep through the real workflow (local-cuda, fp32 and bf16,
#                1 GPU, telemetry every 100 ms), its tables and plots, snakemake --report
#   node         the preflight's single-node checks (preflight/node.json)
#   framework    Megatron-Core's GPTModel trained through llmbench's entry point
#   summary      tables of every run (tables/), summary.json and summary.txt, printed last
# Exit code: 0 when every step passed, 1 otherwise, 2 for bad arguments.
# GPU_PROOF_WHEELS=<folder> takes the wheels from elsewhere; PYTHON=<interpreter>.
set -uo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"

usage() {
  echo "usage: benchmarks/gpu_proof/run.sh [--dry] OUTDIR" >&2
  exit 2
}
DRY=0
if [[ "${1:-}" == "--dry" ]]; then
  DRY=1
  shift
fi
[[ $# -eq 1 && -n "$1" && "$1" != -* ]] || usage
if [[ -e "$1" && ! -d "$1" ]] || [[ -d "$1" && -n "$(ls -A "$1")" ]]; then
  echo "run.sh: error: OUTDIR $1 is not an empty folder; allowed: a new or empty folder" >&2
  exit 2
fi
# One line, not mkdir's, where OUTDIR cannot be made (a read-only file system, a file on
# its path): the reason is what the system said after the last ": ".
if ! made="$(mkdir -p "$1/logs" "$1/steps" 2>&1)"; then
  echo "run.sh: error: OUTDIR $1 cannot be written (${made##*: }); allowed: a new or empty folder this user can write" >&2
  exit 2
fi
OUT="$(cd "$1" && pwd)"
if ! WORK="$(mktemp -d "${TMPDIR:-/tmp}/llmbench-gpu-proof.XXXXXX" 2>&1)" || ! made="$(mkdir "$WORK/tmp" 2>&1)"; then
  echo "run.sh: error: no temporary folder under ${TMPDIR:-/tmp} (${WORK##*: }${made:+, ${made##*: }}); allowed: TMPDIR a folder this user can write" >&2
  exit 2
fi
trap 'rm -rf "$WORK"' EXIT
# What this script prints is kept too (run.log), the summary last.
exec > >(tee "$OUT/run.log") 2>&1

export PY="${PYTHON:-python3}" OUT REPO HERE DRY WORK
# Nothing outside OUTDIR: caches and the installed wheels go to $WORK, which is removed at
# the end, and no bytecode is written (the box's packages and the wheels, which pip
# compiles as it installs them, keep their own); nothing is fetched from the network.
# $REPO for the kit's own steps (python -m benchmarks.gpu_proof), $REPO/src for llmbench.
export PYTHONPATH="$REPO/src:$REPO${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
export PYTHONDONTWRITEBYTECODE=1 MPLCONFIGDIR="$WORK/matplotlib"
export XDG_CACHE_HOME="$WORK/cache" TMPDIR="$WORK/tmp" TRITON_CACHE_DIR="$WORK/triton"
export CUDA_CACHE_PATH="$WORK/nv" HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
export PIP_CONSTRAINT="" PIP_DISABLE_PIP_VERSION_CHECK=1

STEP=0
# run_step NAME LIMIT_S COMMAND...: the command under `timeout`, its output in logs/.
run_step() {
  local name=$1 limit=$2 start=$SECONDS rc log
  shift 2
  STEP=$((STEP + 1))
  log="logs/$(printf %02d "$STEP")-$name.log"
  echo "== step $STEP: $name (at most $limit s)"
  timeout --kill-after=5 "$limit" "$@" >"$OUT/$log" 2>&1
  rc=$?
  printf '{"step": "%s", "rc": %d, "seconds": %d, "timeout_s": %d, "log": "%s"}\n' \
    "$name" "$rc" $((SECONDS - start)) "$limit" "$log" >"$OUT/steps/$(printf %02d "$STEP")-$name.json"
  echo "   exit code $rc after $((SECONDS - start)) s; log: $log"
  if ((rc != 0)); then tail -n 5 "$OUT/$log" | sed 's/^/   | /'; fi
  return 0
}

check_kit() { # dry mode: the wheel list's pins, the scripts parse, the GPU sweep's DAG
  local gpu="$WORK/gpu-workflow"
  "$PY" -m benchmarks.gpu_proof wheels --list "$HERE/wheels.txt" --pins "$REPO/envs/requirements.txt" \
    ${GPU_PROOF_WHEELS:+--wheels "$GPU_PROOF_WHEELS"} || return 1
  bash -n "$HERE/wheels.sh" && bash -n "$HERE/run.sh" && echo "wheels.sh and run.sh parse" || return 1
  mkdir -p "$gpu" && workflow_config gpu >"$gpu/config.yaml" || return 1
  "$PY" -m snakemake --snakefile "$REPO/Snakefile" --directory "$gpu" --cores 16 --dry-run --quiet &&
    echo "the GPU sweep's config is valid and its workflow plans"
}

install_wheels() {
  local wheels="${GPU_PROOF_WHEELS:-$HERE/wheels}"
  if ! "$PY" -m pip --version; then
    echo "$PY has no pip: the kit installs its wheels with pip"
    return 1
  fi
  if [[ ! -d "$wheels" ]]; then
    echo "no wheels in $wheels: run benchmarks/gpu_proof/wheels.sh on a machine with network and copy the folder along"
    return 1
  fi
  "$PY" -m pip install --quiet --no-index --find-links "$wheels" --no-deps \
    --target "$WORK/site" -r "$HERE/wheels.txt" && ls "$WORK/site"
}

workflow_config() { # workflow_config gpu|cpu: the embedded sweep (on the CPU: tiny steps)
  if [[ "$1" == cpu ]]; then
    printf 'sweeps:\n  - {workload: tiny-llama, sizes: [tiny], dtypes: [fp32, bf16], gpu_type: cpu, scales: [1]}\n'
    printf 'steps: 12\nwindow: [4, 11]\n'
  else
    printf 'sweeps:\n  - {workload: tiny-llama, sizes: [tiny], dtypes: [fp32, bf16], gpu_type: local-cuda, scales: [1]}\n'
    printf 'steps: 300\nwindow: [100, 299]\nruntime_min: 1\n'
  fi
  printf 'telemetry: {period_ms: 100}\nwatchdog: {startup_s: 90, stall_s: 30}\n'
}

workflow_step() {
  local dir="$OUT/workflow" rc=0 cores
  cores=$( ((DRY)) && echo 2 || nproc)
  mkdir -p "$dir" && workflow_config "$( ((DRY)) && echo cpu || echo gpu)" >"$dir/config.yaml" &&
    cd "$dir" || return 1
  cat config.yaml
  "$PY" -m snakemake --snakefile "$REPO/Snakefile" --directory "$dir" --cores "$cores" || rc=1
  "$PY" -m snakemake --snakefile "$REPO/Snakefile" --directory "$dir" --cores 1 \
    --report "$dir/report.html" || rc=1
  return "$rc"
}
export -f check_kit install_wheels workflow_config workflow_step

if ((DRY)); then
  run_step wheels 60 bash -c check_kit
  run_step environment 120 "$PY" -m benchmarks.gpu_proof environment "$OUT/environment.json" \
    --pyproject "$REPO/pyproject.toml"
  run_step workflow 420 bash -c workflow_step
  run_step node 120 "$PY" -m benchmarks.gpu_proof node "$OUT/preflight" --cpu
  run_step framework 180 "$PY" -m benchmarks.gpu_proof framework "$OUT/framework" \
    --gpu-type cpu --size tiny --steps 6 --window 2 5
  run_step summary 120 "$PY" -m benchmarks.gpu_proof summary "$OUT"
else
  # At most 8 minutes: the limits add up to 445 s, and each kill takes 5 s more at most.
  run_step install 35 bash -c install_wheels
  export PYTHONPATH="$REPO/src:$REPO:$WORK/site${PYTHONPATH#"$REPO/src:$REPO"}" PATH="$WORK/site/bin:$PATH"
  run_step environment 35 "$PY" -m benchmarks.gpu_proof environment "$OUT/environment.json" \
    --pyproject "$REPO/pyproject.toml" --gpu
  run_step workflow 160 bash -c workflow_step
  run_step node 75 "$PY" -m benchmarks.gpu_proof node "$OUT/preflight"
  run_step framework 110 "$PY" -m benchmarks.gpu_proof framework "$OUT/framework" \
    --gpu-type local-cuda --size small --steps 60 --window 20 59 --time-limit-s 50
  run_step summary 30 "$PY" -m benchmarks.gpu_proof summary "$OUT"
fi

echo
if [[ -s "$OUT/summary.txt" ]]; then
  cat "$OUT/summary.txt"
  grep -qx PASS "$OUT/summary.txt" && exit 0
else
  echo "no summary.txt; the steps' records:" && cat "$OUT"/steps/*.json
fi
exit 1
