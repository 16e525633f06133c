"""The ``preflight`` config block, resolved: on or off, which nodes, what to measure."""

from __future__ import annotations

import re
import shutil
import socket
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from llmbench.errors import ConfigError
from llmbench.spec import embedded_workload
from llmbench.spec.launchers import launcher_traits
from llmbench.spec.runspec import RunSpec

NODE_PATTERN = r"[A-Za-z0-9][A-Za-z0-9._-]*"
CPU_MAX_MESSAGE_BYTES = 4 << 20
GPU_MAX_MESSAGE_BYTES = 8 << 30
"""Default largest message: 4 MiB between CPU ranks, 8 GiB (nccl-tests' usual ``-e 8G``)
on GPUs."""


@dataclass(frozen=True)
class PreflightSettings:
    enabled: bool
    nodes: tuple[str, ...]
    gpu_type: str  # of the sweep's largest allocation
    ranks: int  # ranks (GPUs) per node in the bandwidth test
    nodes_needed: int  # nodes of the sweep's largest run
    max_message_bytes: int
    min_fraction: float
    iterations: int
    root: str = "/"  # the node's /dev and /sys for the node checks; %n: the node's name

    @property
    def fabric(self) -> bool:
        """A multi-node all-reduce across the largest allocation runs (GPU clusters)."""
        return (
            self.enabled
            and self.gpu_type not in embedded_workload.GPU_TYPES
            and self.nodes_needed > 1
        )

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "nodes": list(self.nodes)}


def _block(raw: Any) -> dict[str, Any]:
    if isinstance(raw, bool):
        return {"enabled": raw}
    return dict(raw or {})


def partition_nodes(partition: str | None) -> list[str] | None:
    """Node names of a Slurm partition (the default one when None); None without Slurm."""
    if shutil.which("sinfo") is None:
        return None
    command = ["sinfo", "-h", "-N", "-o", "%N"] + (["-p", partition] if partition else [])
    try:
        out = subprocess.run(command, capture_output=True, text=True, timeout=30, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return sorted({line.strip() for line in out.stdout.splitlines() if line.strip()})


def resolve_preflight(
    raw: Any, specs: Iterable[RunSpec], launcher: str, source: str = "config"
) -> PreflightSettings:
    """Settings for ``specs``: on by default when a sweep runs on cluster GPUs, off for
    the embedded workload (on CPUs or ``local-cuda``: one machine, nothing to exclude);
    nodes from ``preflight.nodes``, else the partition (srun),
    else this machine."""
    block = _block(raw)
    specs = list(specs)
    largest = max(specs, key=lambda s: (s.nodes, s.gpus_per_node))
    gpu = any(s.gpu_type not in embedded_workload.GPU_TYPES for s in specs)
    enabled = block.get("enabled")
    enabled = gpu if enabled is None else bool(enabled)
    nodes = block.get("nodes")
    if enabled and not nodes:
        if launcher_traits(launcher).slurm_job:
            # None where Slurm cannot be asked here: the gate then stops the sweep with
            # one line, when (and only when) training is asked for.
            nodes = partition_nodes(block.get("partition")) or []
        else:
            nodes = [socket.gethostname().split(".")[0]]
    for node in nodes or []:
        if not re.fullmatch(NODE_PATTERN, node):
            raise ConfigError(f"{source}: preflight.nodes: {node!r} is not a node name")
    cpu = largest.gpu_type == "cpu"
    default_max = CPU_MAX_MESSAGE_BYTES if cpu else GPU_MAX_MESSAGE_BYTES
    return PreflightSettings(
        enabled=enabled,
        nodes=tuple(nodes or ()),
        gpu_type=largest.gpu_type,
        ranks=max(2, largest.gpus_per_node) if cpu else largest.gpus_per_node,
        nodes_needed=largest.nodes,
        max_message_bytes=int(block.get("max_message_bytes") or default_max),
        min_fraction=float(block.get("min_fraction", 0.7)),
        iterations=int(block.get("iterations", 5)),
        root=str(block.get("root") or "/"),
    )


def settings_from_dict(data: Mapping[str, Any]) -> PreflightSettings:
    return PreflightSettings(**{**data, "nodes": tuple(data["nodes"])})
