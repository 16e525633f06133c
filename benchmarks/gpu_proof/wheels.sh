#!/usr/bin/env bash
# Download the wheels the GPU proof kit installs on an offline GPU box (docs/gpu-proof.md):
# exactly what llmbench needs beyond what such a box has (CPython 3.12 with a CUDA build
# of PyTorch, pandas, pyarrow, matplotlib and JAX), pinned in wheels.txt beside this file.
#
#   benchmarks/gpu_proof/wheels.sh [DEST]     # default: benchmarks/gpu_proof/wheels/
#
# Binary wheels for CPython $GPU_PROOF_PYTHON (default 3.12) on manylinux x86-64 up to glibc
# 2.28 (CUDA 12 needs a newer glibc anyway); the one package published only as source
# (connection_pool, pure Python) is built into a wheel here. Checks that the list installs
# offline from DEST alone, for that interpreter and platform, and that the total stays under
# $GPU_PROOF_LIMIT_MIB (default 40) MiB; prints every wheel and the total.
# GPU_PROOF_CHECK_PYTHON=<a Python like the box's> also installs the wheels for it into a
# temporary folder (--no-deps) and runs the kit's environment check there: every import
# the kit needs, and the box's versions against pyproject.toml.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
DEST="${1:-$HERE/wheels}"
PY_VERSION="${GPU_PROOF_PYTHON:-3.12}"
LIMIT_MIB="${GPU_PROOF_LIMIT_MIB:-40}"
LIST="$HERE/wheels.txt"
SDIST_ONLY="connection-pool"
PLATFORMS=(manylinux1_x86_64 manylinux2010_x86_64 manylinux2014_x86_64)
for minor in 5 12 17 24 27 28; do PLATFORMS+=("manylinux_2_${minor}_x86_64"); done
platform_args=()
for p in "${PLATFORMS[@]}"; do platform_args+=(--platform "$p"); done
# The requirement lines of the list, without comments and blank lines.
requirements() { sed -e 's/#.*//' -e 's/[[:space:]]*$//' "$LIST" | grep -v '^$'; }

mkdir -p "$DEST"
rm -f "$DEST"/*.whl # exactly the list: no wheel left from an earlier one
binary="$(mktemp)"
check="$(mktemp -d)"
trap 'rm -rf "$binary" "$check"' EXIT
requirements | grep -v -i "^${SDIST_ONLY}==" >"$binary"
# No constraint file of this machine applies: the pins are the list's.
export PIP_CONSTRAINT=""
python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version "$PY_VERSION" \
  --implementation cp "${platform_args[@]}" --dest "$DEST" -r "$binary"
requirements | grep -i "^${SDIST_ONLY}==" | while read -r pin; do
  python3 -m pip wheel --quiet --no-deps --no-binary=:all: --wheel-dir "$DEST" "$pin"
done

# Every pin installs offline from DEST alone, for the target interpreter and platform.
python3 -m pip install --quiet --dry-run --ignore-installed --no-index --find-links "$DEST" \
  --no-deps --only-binary=:all: --python-version "$PY_VERSION" --implementation cp \
  "${platform_args[@]}" --target "$DEST/.dry-run" -r <(requirements)
rmdir "$DEST/.dry-run" 2>/dev/null || true

count=$(requirements | wc -l)
wheels=$(find "$DEST" -maxdepth 1 -name '*.whl' | wc -l)
if ((wheels != count)); then
  echo "wheels.sh: error: $wheels wheels in $DEST for $count pins in $LIST" >&2
  exit 1
fi
find "$DEST" -maxdepth 1 -name '*.whl' -printf '%s\t%f\n' | sort -n |
  awk -F'\t' '{printf "%9.2f MiB  %s\n", $1 / 1048576, $2}'
total=$(find "$DEST" -maxdepth 1 -name '*.whl' -printf '%s\n' | awk '{s += $1} END {print s}')
total_mib=$(awk -v b="$total" 'BEGIN {printf "%.2f", b / 1048576}')
echo "total: $total_mib MiB in $wheels wheels (limit $LIMIT_MIB MiB), in $DEST"
if awk -v t="$total" -v l="$LIMIT_MIB" 'BEGIN {exit !(t > l * 1048576)}'; then
  echo "wheels.sh: error: $total_mib MiB is over the $LIMIT_MIB MiB limit" >&2
  exit 1
fi

if [[ -n "${GPU_PROOF_CHECK_PYTHON:-}" ]]; then
  "$GPU_PROOF_CHECK_PYTHON" -m pip install --quiet --no-index --find-links "$DEST" --no-deps \
    --target "$check/site" -r <(requirements)
  PYTHONPATH="$REPO/src:$REPO:$check/site" "$GPU_PROOF_CHECK_PYTHON" -m benchmarks.gpu_proof environment \
    "$check/environment.json" --pyproject "$REPO/pyproject.toml" | tail -n 1
fi
