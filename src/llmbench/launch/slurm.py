"""Everything llmbench asks of Slurm: every job's resources (training, setup, preflight's
node checks and fabric test), a partition's nodes, and what the controller knows about a
running or ended job (its nodes, its state, its step tasks on this node).

Resources: as snakemake-executor-plugin-slurm reads them.

The plugin maps ``nodes`` + ``tasks_per_node`` + ``mpi="srun"`` to a multi-node
allocation (it refuses ``mpi`` with one task per node, so one rank per node asks for
``nodes`` + ``tasks`` instead), ``gres`` to ``--gres`` (per node), ``runtime`` (minutes) to
``-t``, and appends ``slurm_extra`` to sbatch's arguments through a shell: the site extras
from the config are quoted one by one, so no value can break out. Constraint and QoS are
the plugin's own resources (set in the profile), which it quotes itself.
"""

from __future__ import annotations

import math
import re
import shlex
import shutil
from collections.abc import Mapping
from typing import Any

import psutil

from llmbench.core.devices import device
from llmbench.core.limits import RunLimits
from llmbench.core.preflight_settings import NODE_PATTERN, ListedNodes
from llmbench.core.runspec import RunSpec
from llmbench.errors import ConfigError
from llmbench.files.tool_output import first_line, run_tool

EXTRA_OPTIONS = ("reservation", "nodelist", "exclude", "segment")
JOB_OVERHEAD_MIN = 5
"""Added to a run's time limit for its Slurm job: Snakemake's start inside the job, the log
parse. The run's own limit (``llmbench.core.limits``) is the one answer to how long it may take."""


def job_time_min(limits: RunLimits) -> int:
    """The Slurm job's time limit in whole minutes (``sbatch -t``)."""
    return math.ceil(limits.time_limit_s / 60) + JOB_OVERHEAD_MIN


def slurm_extra(extras: Mapping[str, Any]) -> str:
    """sbatch options for the site extras, each value shell-quoted."""
    words = [f"--{key}={extras[key]}" for key in EXTRA_OPTIONS if extras.get(key) is not None]
    if extras.get("exclusive"):
        words.append("--exclusive")
    return shlex.join(words)


CPU_RUN_MEM_MB_PER_CPU = 1000
"""The embedded workload's memory per CPU (what the Slurm profile asks by default)."""

SBATCH_ENVIRONMENT = {"SBATCH_MEM_PER_NODE": "0"}
"""sbatch's environment for the whole sweep. The executor plugin rejects ``--mem`` in
``slurm_extra``, so a training job that asks all of a node's memory (the reference's
``--mem=0``) names no memory on sbatch's command line (``mem_mb`` and ``mem_mb_per_cpu``
0) and sbatch takes it from here; every other job names its memory on the command line,
which takes precedence over the environment."""


def slurm_resources(
    spec: RunSpec,
    extras: Mapping[str, Any],
    threads_per_rank: int,
) -> dict[str, Any]:
    """Resources of one training job: one task per GPU (per rank on CPUs).

    GPU runs are allocated as the reference allocates them (``catalog/parity.yaml``, kind
    sbatch): ``--exclusive``, all of the node's memory and no ``--cpus-per-task`` (the
    node's CPUs are shared by its ranks; ``-1`` makes the plugin leave the option out),
    ``--segment`` on NVL72 racks where the reference sets it.
    """
    mpi = spec.gpus_per_node > 1
    sbatch = spec.parity.sbatch
    extras = dict(extras)
    if sbatch.get("exclusive"):
        extras["exclusive"] = True
    if sbatch.get("segment") and extras.get("segment") is None:
        extras["segment"] = sbatch["segment"]
    all_memory = sbatch.get("mem") == "0"
    if not device(spec.gpu_type).has_gpus:
        cpus = threads_per_rank
    else:
        cpus = -1 if "cpus_per_task" in sbatch and sbatch["cpus_per_task"] is None else 1
    resources: dict[str, Any] = {
        "nodes": spec.nodes,
        # falsy values are left out of sbatch's arguments by the plugin
        "tasks_per_node": spec.gpus_per_node if mpi else 0,
        "tasks": 0 if mpi else spec.gpus,
        "mpi": "srun" if mpi else "",
        "cpus_per_task": cpus,
        "mem_mb": 0,
        "mem_mb_per_cpu": 0 if all_memory else CPU_RUN_MEM_MB_PER_CPU,
        # the run's own limit (enforced by llmbench) plus the job's overhead
        "runtime": job_time_min(spec.limits),
        "slurm_extra": slurm_extra(extras),
    }
    resources["gres"] = _gres(spec.gpus_per_node, cpu=not device(spec.gpu_type).has_gpus)
    return resources


def _gres(gpus_per_node: int, cpu: bool) -> str:
    # CPU ranks ask for no GPUs: an empty gres is left out of sbatch's arguments.
    return "" if cpu else f"gpu:{gpus_per_node}"


def excluding(extras: Mapping[str, Any], *nodes: str | None) -> dict[str, Any]:
    """``extras`` with ``nodes`` (comma-separated lists; empty ones skipped) added to its
    ``exclude``: the nodes the preflight gate rejected, those a failed try hit."""
    extras = dict(extras)
    if any(nodes):
        extras["exclude"] = ",".join(filter(None, [extras.get("exclude"), *nodes]))
    return extras


SETUP_JOB = {"runtime": 120, "cpus_per_task": 4, "mem_mb": 16000}
"""A setup job (image import, venv build): a few cores and no GPU, two hours."""
CHECK_JOB_TIME_MIN = 30
"""Preflight's node check and fabric test: minutes, far above what they take."""
NODE_CHECK_CPUS = 8
"""The CPUs a GPU node's check asks for (a CPU node's asks one per rank)."""


def setup_resources(partition: str | None) -> dict[str, Any]:
    """A setup job's resources, on the site's CPU partition where it names one."""
    return {**SETUP_JOB, **({"slurm_partition": partition} if partition else {})}


def node_check_resources(ranks: int, cpu: bool) -> dict[str, Any]:
    """One node's preflight check, on that node (``node_check_extra``): its CPU ranks, or
    its GPUs."""
    return {
        "nodes": 1,
        "tasks": 1,
        "cpus_per_task": ranks if cpu else NODE_CHECK_CPUS,
        "gres": _gres(ranks, cpu),
        "runtime": CHECK_JOB_TIME_MIN,
    }


def node_check_extra(node: str) -> str:
    """sbatch's options that put a node's check on that node."""
    return slurm_extra({"nodelist": node})


def fabric_resources(nodes: int, gpus_per_node: int) -> dict[str, Any]:
    """The all-reduce across the sweep's largest allocation: as many nodes and GPUs."""
    return {
        "nodes": nodes,
        "tasks_per_node": gpus_per_node,
        "mpi": "srun",
        "gres": _gres(gpus_per_node, cpu=False),
        "runtime": CHECK_JOB_TIME_MIN,
    }


def exclude_extra(nodes: list[str]) -> str:
    """sbatch's options that keep a job off ``nodes`` (none: no option)."""
    return slurm_extra({"exclude": ",".join(nodes)}) if nodes else ""


# --- what the controller knows about a job ------------------------------------------------

SLURM_FAILURE_STATES = {
    "CANCELLED": "cancelled",
    "TIMEOUT": "time_limit",
    "NODE_FAIL": "node_failure",
    "PREEMPTED": "preempted",
    "OUT_OF_MEMORY": "host_oom",
    "BOOT_FAIL": "boot_fail",
    "DEADLINE": "time_limit",
    "FAILED": "nonzero_exit",
}
"""Slurm job states that end a job badly, and the parser's reason for each."""

QUERY_TIMEOUT_S = 30
QUERY_MAX_BYTES = 1 << 20
"""A job's state, node list or the controller's config: kilobytes."""
NODE_LIST_MAX_BYTES = 4 << 20
"""A partition's node names from sinfo, one per line: some 300,000 names, ten times the
largest clusters' node counts; a longer listing is read that far (the nodes checked are
capped far below it)."""


def _lines(cmd: list[str], max_bytes: int = QUERY_MAX_BYTES) -> list[str] | None:
    """The non-empty output lines of a Slurm command (stdout, read as bytes up to
    ``max_bytes``, undecodable bytes replaced); None when it is missing, fails or hangs."""
    if shutil.which(cmd[0]) is None:
        return None
    run = run_tool(cmd, QUERY_TIMEOUT_S, max_bytes, stderr=False)
    if run.ending != "ok":
        return None
    return [line.strip() for line in run.text.splitlines() if line.strip()]


def partition_nodes(partition: str | None) -> ListedNodes | None:
    """The node names sinfo lists for a partition (the default one when None); None
    where Slurm cannot be asked (no sinfo, or it fails or hangs: the preflight gate then
    stops the sweep with one line). A name that is not a node name stops the sweep here
    with one line naming sinfo, not a config key."""
    command = ["sinfo", "-h", "-N", "-o", "%N"] + (["-p", partition] if partition else [])
    if shutil.which("sinfo") is None:
        return None
    run = run_tool(command, QUERY_TIMEOUT_S, NODE_LIST_MAX_BYTES, stderr=False)
    if run.ending not in ("ok", "overflow"):
        return None
    lines = run.text.splitlines()
    note = ""
    if run.overflowed:
        lines = lines[:-1]  # the last name may be cut
        note = (
            f"{shlex.join(command)} printed more than {NODE_LIST_MAX_BYTES:,} bytes; the "
            f"{len(lines):,} names before that were read"
        )
    names = sorted({line.strip() for line in lines if line.strip()})
    node = re.compile(NODE_PATTERN)
    for name in names:
        if not node.fullmatch(name):
            raise ConfigError(
                f"preflight: {shlex.join(command)} printed {first_line(name)!r}, which is not "
                "a node name (a broken Slurm, or not sinfo); allowed: names of letters, "
                "digits, '.', '_' and '-', or preflight.nodes listing the nodes to check"
            )
    return ListedNodes(tuple(names), shlex.join(command), note)


def job_state(job_id: str) -> str | None:
    """The job's state word (e.g. ``CANCELLED``), from squeue while Slurm still lists the
    job (MinJobAge), else from sacct where accounting runs; None when neither knows."""
    lines = _lines(["squeue", "-h", "-j", job_id, "-t", "all", "-o", "%T"])
    if not lines:
        lines = _lines(["sacct", "-n", "-X", "-j", job_id, "-o", "State%30"])
    return lines[0].split()[0].upper() if lines else None


def job_nodelist(job_id: str | None) -> str | None:
    """The allocation's nodes (Slurm's compact form); the executor plugin strips
    SLURM_JOB_NODELIST from a rule's environment, so ask the controller."""
    if not job_id:
        return None
    lines = _lines(["squeue", "-h", "-j", job_id, "-o", "%N"])
    return lines[0] if lines else None


def cluster_name() -> str | None:
    """Slurm's ``ClusterName`` (``scontrol show config``); None where Slurm is absent."""
    for line in _lines(["scontrol", "show", "config"]) or []:
        key, sep, value = line.partition("=")
        if sep and key.strip() == "ClusterName" and value.strip():
            return value.strip()
    return None


def step_task_pids(job_id: str) -> list[int]:
    """PIDs of the job's step tasks on this node (``scontrol listpids``): srun starts the
    ranks under slurmstepd, outside the process tree of the srun that asked for them.
    The batch script's processes are left out, and so are this process and its parents."""
    lines = _lines(["scontrol", "listpids", job_id]) or []
    me = psutil.Process()
    mine = {me.pid, *(p.pid for p in me.parents())}
    rows = [line.split() for line in lines[1:]]  # a header first
    return [
        int(row[0])
        for row in rows
        if len(row) >= 5 and row[0].isdigit() and row[2] != "batch" and row[4].isdigit()
        and int(row[0]) not in mine
    ]  # fmt: skip


_HOSTLIST_PART = re.compile(r"([^,\[]*)(?:\[([^\]]*)\])?([^,\[]*)")


def expand_nodelist(text: str | None) -> list[str]:
    """Node names of a Slurm node list in its compact form (``gpu-[001-003,7],login1``);
    one bracket group per name, as ``squeue -o %N`` prints them."""
    names: list[str] = []
    rest = (text or "").strip()
    while rest:
        match = _HOSTLIST_PART.match(rest)
        if match is None or not match.group(0):
            break
        head, ranges, tail = match.groups()
        if ranges is None:
            names.append(head + tail)
        else:
            for part in ranges.split(","):
                first, _, last = part.partition("-")
                width = len(first)
                for n in range(int(first), int(last or first) + 1):
                    names.append(f"{head}{n:0{width}d}{tail}")
        rest = rest[match.end() :].lstrip(",")
    return [n for n in names if n]
