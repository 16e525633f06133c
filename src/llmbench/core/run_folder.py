"""The names of the files in a run folder and in each of its attempt folders, once.

A run folder (``results/runs/<run id>/``, ``llmbench.core.results_layout``) holds what
the train job reports for its run: the reported attempt's record, its parsed log, steps,
samples and energy. Each try of the run is an attempt folder ``attempt-<n>/`` inside it,
holding what the launch wrote and what the ranks and their samplers left. Standard
library only: the ranks import it (they write the step clock).
"""

from __future__ import annotations

import re

# -- the run folder: what the train job reports for the run
RECORD = "run.json"
"""The run's record (also each attempt's, which the run folder's copies)."""
SUMMARY = "summary.json"
"""The reported attempt's log, parsed."""
STEPS = "steps.parquet"
"""One row per iteration of the reported attempt."""
TELEMETRY = "telemetry.parquet"
"""The reported attempt's samples, tagged with the run."""
ENERGY = "energy.json"
"""The measured window's energy (or why there is none)."""

# -- an attempt folder: one try of the run
ATTEMPT_PREFIX = "attempt-"
ATTEMPT_DIR = re.compile(rf"{ATTEMPT_PREFIX}[0-9]+")
"""An attempt folder's name, ``attempt-<n>``."""
SPEC = "run_spec.json"
"""The run spec the ranks read."""
LAUNCH = "launch.sh"
JOB = "job.json"
"""The job around the ranks: scheduler, nodes, times."""
LOG = "train.log"
TRANSPORT = "transport.json"
"""What NCCL's debug output says about the transport."""
STEP_CLOCK = "step_clock.csv"
"""Rank 0's wall clock at each step (telemetry's window)."""
SAMPLES_PREFIX = "telemetry-"
SAMPLES_GLOB = f"{SAMPLES_PREFIX}*.csv"
"""One samples file per node, ``telemetry-<node>.csv`` (+ ``.json``, its sources)."""
SAMPLES_PATTERN = f"{SAMPLES_PREFIX}%n.csv"
"""The sampler's ``--out``: ``%n`` is its node's name."""
SAMPLER_LOG = "telemetry.log"
NCCL_DEBUG_PREFIX = "nccl-debug."
NCCL_DEBUG_SUFFIX = ".log"
NCCL_DEBUG_PATTERN = f"{NCCL_DEBUG_PREFIX}%h.%p{NCCL_DEBUG_SUFFIX}"
"""``NCCL_DEBUG_FILE``: one file per process, ``%h`` its host and ``%p`` its pid."""
MANIFEST = "manifest.yaml"
"""The Kubernetes or Run:ai objects submitted."""
PLATFORM = "platform.json"
"""What the platform said about the run (its pods, nodes, end)."""
PLATFORM_LOG = "platform.log"
"""The platform watcher's progress lines."""
PAYLOAD = "payload.json"
"""The Run:ai workload submitted."""
ENTRY_CONFIG = "entry_config.json"
"""What a framework's entry point builds from the spec (``llmbench render`` writes it)."""
RANK_WRAPPER = "nsys_ranks.sh"
"""The profile variant's wrapper: Nsight Systems on the chosen ranks only."""
NSYS_REPORT_PATTERN = "profile_%q{SLURM_JOB_ID}_%q{SLURM_NODEID}_%q{SLURM_LOCALID}"
"""One report per rank; nsys expands ``%q{VAR}`` from each task's own environment."""
PGLE_DIR = "pgle"
"""MaxText's profile pass (rank 0's report and the ranks' logs)."""
STACK_PREFIX = "stack-"
STACK_GLOB = f"{STACK_PREFIX}*.txt"
RANK_STACK_GLOB = f"{STACK_PREFIX}rank*.txt"
"""Stacks of a hung run: ``stack-rank<r>.txt`` (a rank's own) or ``stack-pid<p>.txt``
(py-spy's, of a process)."""


def attempt_name(number: int) -> str:
    """The folder of attempt ``number`` (1 is the first try)."""
    return f"{ATTEMPT_PREFIX}{number}"


def rank_stack_name(rank: int) -> str:
    return f"{STACK_PREFIX}rank{rank}.txt"


def pid_stack_name(pid: int) -> str:
    return f"{STACK_PREFIX}pid{pid}.txt"


def is_nccl_debug_file(name: str) -> bool:
    """A file ``NCCL_DEBUG_PATTERN`` names."""
    return name.startswith(NCCL_DEBUG_PREFIX) and name.endswith(NCCL_DEBUG_SUFFIX)
