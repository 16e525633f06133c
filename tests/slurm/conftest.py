"""A real local Slurm cluster for the session (tests/slurm/cluster.sh), stopped at the end."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterable, Iterator
from datetime import datetime
from pathlib import Path

import pytest

from tests.conftest import missing_prerequisite, tiny_config

CLUSTER_SH = Path(__file__).parent / "cluster.sh"

SLURM_CONFIG = tiny_config(ranks_per_node=1)  # the 2-rank run spans both fake nodes
"""The local workflow tests' experiment with one rank per node: profiles/slurm adds
``launcher: srun`` (its site.yaml), the test cluster's own site values come below."""
SLURM_TEST_OVERRIDES = (
    "--config",
    "master_addr=127.0.0.1",  # the fake nodes' names do not resolve
    "--default-resources",
    "slurm_partition=debug",
    "runtime=10",
    "mem_mb_per_cpu=1000",
    # the plugin adds 10 s to its poll interval after each poll that saw no job end and
    # resets it to this when one ended: short, so the next job of the DAG starts sooner
    "--slurm-init-seconds-before-status-checks",
    "2",
    "--latency-wait",
    "5",
    "--jobs",
    "4",
)
"""What the test cluster needs on top of profiles/slurm (its partition, short polling)."""
BINARIES = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "sinfo")


def missing_binaries() -> list[str]:
    search = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])
    return [b for b in BINARIES if shutil.which(b, path=search) is None]


@contextlib.contextmanager
def local_cluster() -> Iterator[Path]:
    """The 2-node cluster of cluster.sh, started and stopped; yields its directory."""
    # Not under pytest's tmp dir: that is private to root, and munged runs as user munge.
    directory = Path(tempfile.mkdtemp(prefix="llmbench-slurm-"))
    env = dict(os.environ, LLMBENCH_SLURM_DIR=str(directory))
    started = time.monotonic()
    proc = subprocess.run(
        ["bash", str(CLUSTER_SH), "start"], env=env, capture_output=True, text=True, timeout=120
    )
    try:
        if proc.returncode != 0:
            raise RuntimeError(f"cluster.sh start failed:\n{proc.stdout}\n{proc.stderr}")
        print(f"slurm cluster up in {time.monotonic() - started:.1f} s: {directory}")
        yield directory
    finally:
        subprocess.run(["bash", str(CLUSTER_SH), "stop"], env=env, timeout=120, check=False)
        if os.environ.get("LLMBENCH_KEEP_SLURM_DIR") != "1":
            shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture(scope="session")
def slurm_cluster() -> Iterator[Path]:
    """Start the 2-node cluster once for the session; yields its directory (config, logs)."""
    missing = missing_binaries()
    if missing:
        missing_prerequisite(
            f"Slurm not installed ({', '.join(missing)}): run tests/slurm/install.sh"
        )
    if os.geteuid() != 0:
        missing_prerequisite("the local Slurm cluster needs root (SlurmUser=root, /etc/slurm)")
    with local_cluster() as directory:
        yield directory


# the main scheduler logs "sched: Allocate", the backfill scheduler "... Started"
ALLOCATE = re.compile(r"^\[(\S+)\] sched(?:: Allocate|/backfill: _start_job: Started) JobId=(\d+) ")
COMPLETE = re.compile(r"^\[(\S+)\] _job_complete: JobId=(\d+) done")


def allocations(cluster: Path) -> dict[str, tuple[datetime, datetime]]:
    """Each job's allocation (start, end), as the controller logged it (slurmctld.log)."""
    start: dict[str, datetime] = {}
    end: dict[str, datetime] = {}
    for line in (cluster / "log/slurmctld.log").read_text().splitlines():
        for pattern, seen in ((ALLOCATE, start), (COMPLETE, end)):
            match = pattern.match(line)
            if match:
                seen[match[2]] = datetime.fromisoformat(match[1])
    return {job: (start[job], end[job]) for job in start if job in end}


def most_at_once(intervals: Iterable[tuple[datetime, datetime]]) -> int:
    """The largest number of intervals that hold at one instant."""
    events = sorted(e for a, b in intervals for e in ((a, 1), (b, -1)))  # ends sort first
    best = now = 0
    for _, step in events:
        now += step
        best = max(best, now)
    return best
