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

from llmbench.launch.srun import MASTER_PORT_SPAN
from tests.helpers import missing_prerequisite, workflow_config

CLUSTER_SH = Path(__file__).parent / "cluster.sh"

SLURM_CONFIG = workflow_config("slurm-two-nodes")
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


PORT_STEP = 10
"""Cluster ``index`` listens on the default ports of cluster.sh plus ``index * PORT_STEP``."""


JOB_ID_STEP = MASTER_PORT_SPAN // 4
"""Cluster ``index`` (up to 4) numbers its jobs from ``1 + index * JOB_ID_STEP``. All
clusters share this host, and a multi-node run's rendezvous port is base + job id mod
``MASTER_PORT_SPAN`` (``llmbench.launch.srun``): two clusters both at job 20 had two runs
bind one port."""


def worker_index() -> int:
    """This pytest-xdist worker's number (``gw1`` -> 1); 0 without xdist."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    return int(worker.removeprefix("gw")) if worker.removeprefix("gw").isdigit() else 0


@contextlib.contextmanager
def local_cluster(index: int = 0) -> Iterator[Path]:
    """The 2-node cluster of cluster.sh, started and stopped; yields its directory.

    Clusters of other ``index`` run beside it (one per xdist worker): their own ports,
    state, munge socket and client commands (``<dir>/bin``, first on PATH while it
    runs); only cluster 0 links /etc/slurm/slurm.conf."""
    # Not under pytest's tmp dir: that is private to root, and munged runs as user munge.
    directory = Path(tempfile.mkdtemp(prefix="llmbench-slurm-"))
    env = dict(
        os.environ,
        LLMBENCH_SLURM_DIR=str(directory),
        LLMBENCH_SLURM_PORT=str(6817 + index * PORT_STEP),
        LLMBENCH_SLURM_NODE_PORT=str(17001 + index * PORT_STEP),
        LLMBENCH_SLURM_LINK_ETC="1" if index == 0 else "0",
        LLMBENCH_SLURM_FIRST_JOB_ID=str(1 + index * JOB_ID_STEP),
    )
    env.pop("SLURM_CONF", None)
    started = time.monotonic()
    path = os.environ.get("PATH", "")
    proc = subprocess.run(
        ["bash", str(CLUSTER_SH), "start"], env=env, capture_output=True, text=True, timeout=120
    )
    try:
        if proc.returncode != 0:
            raise RuntimeError(f"cluster.sh start failed:\n{proc.stdout}\n{proc.stderr}")
        print(f"slurm cluster {index} up in {time.monotonic() - started:.1f} s: {directory}")
        # every Slurm client of this process, of its subprocesses and of their jobs
        os.environ["PATH"] = os.pathsep.join([str(directory / "bin"), path])
        yield directory
    finally:
        os.environ["PATH"] = path
        subprocess.run(["bash", str(CLUSTER_SH), "stop"], env=env, timeout=120, check=False)
        if os.environ.get("LLMBENCH_KEEP_SLURM_DIR") != "1":
            shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture(scope="session")
def slurm_cluster() -> Iterator[Path]:
    """Start the 2-node cluster once for the session (one per xdist worker, so that the
    two Slurm groups of tests/conftest.py run at once); yields its directory."""
    missing = missing_binaries()
    if missing:
        missing_prerequisite(
            f"Slurm not installed ({', '.join(missing)}): run tests/slurm/install.sh"
        )
    if os.geteuid() != 0:
        missing_prerequisite("the local Slurm cluster needs root (SlurmUser=root, /etc/slurm)")
    with local_cluster(worker_index()) as directory:
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
