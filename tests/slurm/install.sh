#!/usr/bin/env bash
# Install what the local Slurm test cluster and the container tests need (Debian 12).
# Idempotent: packages already present are left alone and apt is not called at all.
set -euo pipefail

packages=(munge slurmctld slurmd slurm-client squashfs-tools)

missing=()
for pkg in "${packages[@]}"; do
    # dpkg-query prints "install ok installed" only for a fully configured package.
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$pkg")
    fi
done

if ((${#missing[@]} == 0)); then
    echo "install.sh: already installed: ${packages[*]}"
    exit 0
fi

sudo=()
if ((EUID != 0)); then
    sudo=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "install.sh: installed: ${missing[*]}"
