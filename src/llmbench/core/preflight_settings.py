"""The ``preflight`` config block, resolved: on or off, which nodes, what to measure."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from llmbench.core.devices import device
from llmbench.core.runspec import RunSpec
from llmbench.errors import ConfigError

NODE_PATTERN = r"[A-Za-z0-9][A-Za-z0-9._-]*"
CPU_MAX_MESSAGE_BYTES = 4 << 20
GPU_MAX_MESSAGE_BYTES = 8 << 30
"""Default largest message: 4 MiB between CPU ranks, 8 GiB (nccl-tests' usual ``-e 8G``)
on GPUs."""
CHECKED_NODES_FLOOR = 64
CHECKED_NODES_PER_NODE_USED = 2
"""Of the nodes a partition lists, preflight checks at most twice the nodes the sweep's
runs use at once (every run in flight), and never fewer than 64: one preflight job per
node, so a listing of thousands of nodes would plan thousands of jobs for a sweep that
uses a few (``checked_nodes_cap``)."""


@dataclass(frozen=True)
class ListedNodes:
    """The nodes a scheduler listed for preflight (``launch.slurm.partition_nodes``),
    the command that listed them, and what was left out of its output, if anything."""

    nodes: tuple[str, ...]
    command: str
    note: str = ""


NodeLister = Callable[[str | None], ListedNodes | None]
"""Lists a partition's nodes (None: the default partition); None where it cannot ask:
the run's launcher answers (``llmbench.launch.launchers.Launcher.nodes``)."""


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
    note: str = ""  # which of the listed nodes are checked, where not all of them

    @property
    def fabric(self) -> bool:
        """A multi-node all-reduce across the largest allocation runs (GPU clusters)."""
        return self.enabled and not device(self.gpu_type).embedded and self.nodes_needed > 1

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "nodes": list(self.nodes)}


def _block(raw: Any) -> dict[str, Any]:
    if isinstance(raw, bool):
        return {"enabled": raw}
    return dict(raw or {})


def checked_nodes_cap(specs: Iterable[RunSpec]) -> int:
    """The most nodes of a listing preflight checks (``CHECKED_NODES_PER_NODE_USED``)."""
    at_once = sum(spec.nodes for spec in specs)
    return max(CHECKED_NODES_FLOOR, CHECKED_NODES_PER_NODE_USED * at_once)


def _capped(listed: ListedNodes, cap: int) -> tuple[list[str], str]:
    """(the nodes checked, a line saying which where not all): the first ``cap`` names."""
    nodes = sorted(set(listed.nodes))
    notes = [listed.note] if listed.note else []
    if len(nodes) > cap:
        notes.append(
            f"{listed.command} lists {len(nodes):,} nodes; preflight checks {cap:,} of them "
            f"({nodes[0]} to {nodes[cap - 1]}, in name order: twice the nodes the sweep's "
            f"runs use at once, at least {CHECKED_NODES_FLOOR}), and train jobs may also run "
            "on the others, unchecked; allowed: preflight.nodes listing the nodes to check, "
            "or preflight.partition naming a smaller partition"
        )
        nodes = nodes[:cap]
    return nodes, "; ".join(notes)


def resolve_preflight(
    raw: Any,
    specs: Iterable[RunSpec],
    source: str = "config",
    list_nodes: NodeLister | None = None,
) -> PreflightSettings:
    """Settings for ``specs``: on by default when a sweep runs on cluster GPUs, off for
    the embedded workload (on CPUs or ``local-cuda``: one machine, nothing to exclude);
    nodes from ``preflight.nodes``, else those the launcher lists (``list_nodes``: a
    Slurm partition's, at most ``checked_nodes_cap`` of them, or this machine)."""
    block = _block(raw)
    specs = list(specs)
    largest = max(specs, key=lambda s: (s.nodes, s.gpus_per_node))
    gpu = any(not device(s.gpu_type).embedded for s in specs)
    enabled = block.get("enabled")
    enabled = gpu if enabled is None else bool(enabled)
    nodes = block.get("nodes")
    note = ""
    for node in nodes or []:
        if not re.fullmatch(NODE_PATTERN, node):
            raise ConfigError(f"{source}: preflight.nodes: {node!r} is not a node name")
    if enabled and not nodes:
        # None where the nodes cannot be listed here (no Slurm): the gate then stops the
        # sweep with one line, when (and only when) training is asked for.
        listed = list_nodes(block.get("partition")) if list_nodes else None
        nodes, note = _capped(listed, checked_nodes_cap(specs)) if listed else ([], "")
    cpu = not device(largest.gpu_type).has_gpus
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
        note=note,
    )


def settings_from_dict(data: Mapping[str, Any]) -> PreflightSettings:
    return PreflightSettings(**{**data, "nodes": tuple(data["nodes"])})
