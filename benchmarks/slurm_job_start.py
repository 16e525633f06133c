"""Time each Slurm training job spends inside its allocation before the run starts, with a
1,000-run sweep in the DAG (Snakemake evaluates the Snakefile again inside every job).

    python -m benchmarks.slurm_job_start [--runs 1000] [--json out.json] [--no-fail]
                                         [--no-bytecode]

Needs root and Slurm + munge (tests/slurm/install.sh): it starts the local 2-node test
cluster (tests/slurm/cluster.sh). The sweep holds ``--runs`` embedded-workload runs
(fp32 and bf16 at scales 1..runs/2, srun, one rank per node); three of them are run
through ``profiles/slurm`` (two on one node, one on both). A baseline sweep of 4 runs
(scales 1 and 2) is timed on the same cluster, so the ratio shows what the big DAG adds.
Per job: from the controller's allocation (slurmctld log) to the attempt's start
(``started_at`` in run.json, written by the runner before it launches the ranks).
Target: every job <= 5 s.

Each job's seconds are also split at its steps: the batch script's Snakemake up (its
log header), the job handed to the jobstep executor, the second Snakemake that executor
starts up, the rule started (these four from the job's Slurm log, whole seconds), the train
script in its attempt folder (``job.json``) and the ranks launched (``run.json``).

llmbench's bytecode (``__pycache__``) is written first, as the first job of a checkout
writes it for the later ones and a package install does at install time: where
PYTHONDONTWRITEBYTECODE is set and the checkout has none, each of the three Python
processes of every job would compile llmbench's modules again (about 0.1 s each on a
loaded 2-core machine), which Snakemake's own installed modules never do.
``--no-bytecode`` measures that case.

The floor: three jobs of a one-rule Snakefile whose script only notes the time, with the
training rule's resource names, through the same profile on the same cluster: what
Snakemake, the executor plugin and Slurm take before any of llmbench's code runs.

The seconds in the allocation are wall-clock seconds on a shared machine: three jobs start
at once, each running two Snakemake processes, so they move with everything else running
there. What the size of the sweep costs each in-job Snakemake process is told apart by its
CPU seconds: after the sweeps, the job step's own command (``--target-jobs``, ``--mode
remote``, the profile's site config; as a dry run, so no rank starts) runs here outside
Slurm for one train job of the big sweep, of the baseline and of the floor, in turns,
``CPU_TRIES`` times each; the least CPU seconds of each (its children included) is printed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
from datetime import datetime
from pathlib import Path

import yaml

from tests.helpers import REPO, snakemake, tiny_config, tiny_sweep
from tests.slurm.conftest import SLURM_TEST_OVERRIDES, allocations, local_cluster

TARGET_S = 5.0
BASELINE_RUNS = 4
TARGETS = (
    "tiny-llama_tiny_fp32_cpux1_perf",
    "tiny-llama_tiny_bf16_cpux1_perf",
    "tiny-llama_tiny_fp32_cpux2_perf",
)


def compile_bytecode() -> None:
    """Write the bytecode of llmbench's modules (py_compile writes it whatever
    PYTHONDONTWRITEBYTECODE says)."""
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(REPO / "src" / "llmbench")], check=True
    )


CPU_TRIES = 3
"""Turns of the in-job CPU measurement; the least of each is reported (load only adds)."""

SCALES_PER_SWEEP = 100
"""The schema's most scales in one sweep entry: a bigger sweep takes several entries."""


def sweep_config(runs: int) -> dict:
    """``runs`` embedded runs (fp32 and bf16 per scale), 10 steps each, on the test cluster."""
    scales = range(1, max(runs // 2, 2) + 1)
    config = tiny_config(
        launcher="srun",
        ranks_per_node=1,  # the 2-rank run spans both fake nodes
        master_addr="127.0.0.1",
        steps=10,
        window=[5, 9],
    )
    config["sweeps"] = [
        tiny_sweep(tuple(scales[i : i + SCALES_PER_SWEEP]), dtypes=("fp32", "bf16"))
        for i in range(0, len(scales), SCALES_PER_SWEEP)
    ]
    return config


def in_allocation_s(cluster: Path, workdir: Path, runs: int) -> dict[str, dict[str, float]]:
    """Run the TARGETS of a ``runs``-run sweep through Slurm; per job, ``steps_s``."""
    workdir.mkdir()
    (workdir / "config.yaml").write_text(yaml.safe_dump(sweep_config(runs), sort_keys=False))
    targets = [f"results/runs/{run}/run.json" for run in TARGETS]
    proc = snakemake(
        workdir, "--profile", str(REPO / "profiles/slurm"), *SLURM_TEST_OVERRIDES, *targets,
        timeout=1200,
    )  # fmt: skip
    if proc.returncode != 0:
        sys.exit(f"sweep of {runs} runs failed:\n{proc.stderr[-4000:]}")
    held = allocations(cluster)
    seconds = {}
    for run in TARGETS:
        record = json.loads((workdir / "results/runs" / run / "run.json").read_text())
        job_id = record["provenance"]["slurm_job_id"]
        allocated, _ = held[job_id]
        seconds[run] = steps_s(workdir, run, job_id, record, allocated)
    return seconds


FLOOR_SNAKEFILE = """
rule floor:
    output:
        "floor/{job}.json",
    log:
        "logs/floor/{job}.log",
    resources:
        # the training rule's names and a one-rank run's values (llmbench.launch.slurm): with
        # `mpi` the jobstep executor starts the job's Snakemake as it does for training
        nodes=1,
        tasks=1,
        cpus_per_task=1,
        mpi="",
        mem_mb_per_cpu=1000,
    script:
        "floor.py"
"""
FLOOR_SCRIPT = """
import json, os
from datetime import datetime, timezone

started = datetime.now(timezone.utc).isoformat(timespec="milliseconds")
with open(snakemake.output[0], "w") as out:
    json.dump({"started_at": started, "slurm_job_id": os.environ["SLURM_JOB_ID"]}, out)
"""


def floor_s(cluster: Path, workdir: Path) -> list[float]:
    """Seconds from the allocation to the floor rule's script, per job (three at once)."""
    workdir.mkdir()
    (workdir / "Snakefile").write_text(FLOOR_SNAKEFILE)
    (workdir / "floor.py").write_text(FLOOR_SCRIPT)
    outputs = [f"floor/{job}.json" for job in range(len(TARGETS))]
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "--snakefile", str(workdir / "Snakefile"),
         "--directory", str(workdir), "--profile", str(REPO / "profiles/slurm"),
         *SLURM_TEST_OVERRIDES, *outputs],
        cwd=workdir, capture_output=True, text=True, timeout=600,
        env=dict(os.environ, PYTHONUNBUFFERED="1"),
    )  # fmt: skip
    if proc.returncode != 0:
        sys.exit(f"floor jobs failed:\n{proc.stderr[-4000:]}")
    held = allocations(cluster)
    seconds = []
    for output in outputs:
        noted = json.loads((workdir / output).read_text())
        allocated, _ = held[noted["slurm_job_id"]]
        seconds.append((_local(noted["started_at"]) - allocated).total_seconds())
    return seconds


def in_job_command(workdir: Path, target_job: str, rule: str, snakefile: Path) -> list[str]:
    """The job step's Snakemake for ``target_job`` as the executor plugin runs it in the
    job (its profile's site config and overrides), as a dry run."""
    return [
        sys.executable, "-m", "snakemake", "--snakefile", str(snakefile),
        "--directory", str(workdir), "--target-jobs", target_job, "--allowed-rules", rule,
        "--mode", "remote", "--nolock", "--force", "--dry-run", "--cores", "all",
        "--scheduler", "greedy", "--configfiles", str(REPO / "profiles/slurm/site.yaml"),
        "--config", "master_addr=127.0.0.1",
    ]  # fmt: skip


def cpu_s(command: list[str], workdir: Path) -> float:
    """CPU seconds (user + system, its children included) ``command`` takes to the end."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(command, cwd=workdir, capture_output=True, text=True, timeout=600)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        sys.exit(f"in-job dry run failed: {' '.join(command)}\n{proc.stderr[-4000:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def in_job_cpu_s(tmp: Path) -> dict[str, float]:
    """Least CPU seconds over CPU_TRIES turns of the job step's Snakemake for the first
    target's train job of the big sweep (``runs``) and of the baseline, and for a floor job."""
    train = f"train:run={TARGETS[0]}"
    commands = {
        "runs": in_job_command(tmp / "big", train, "train", REPO / "Snakefile"),
        "baseline": in_job_command(tmp / "small", train, "train", REPO / "Snakefile"),
        "floor": in_job_command(tmp / "floor", "floor:job=0", "floor", tmp / "floor/Snakefile"),
    }
    workdirs = {"runs": tmp / "big", "baseline": tmp / "small", "floor": tmp / "floor"}
    seconds: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(CPU_TRIES):
        for name, command in commands.items():
            seconds[name].append(cpu_s(command, workdirs[name]))
    return {name: min(values) for name, values in seconds.items()}


# Snakemake's log: a header per process ("Date:", when its workflow is made, before the
# Snakefile is read), then a stamp per job it starts; whole seconds, local time.
HEADER = re.compile(r"^\s*Date: (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)$", re.M)
JOB_STAMP = re.compile(r"^\[(\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4})\]$", re.M)
STEPS = ("snakemake up", "job handed on", "job snakemake up", "rule started", "train script")


def _local(stamp: str) -> datetime:
    """A run record's time (with its zone) in local time, as the controller logs."""
    return datetime.fromisoformat(stamp).astimezone().replace(tzinfo=None)


def steps_s(
    workdir: Path, run: str, job_id: str, record: dict, allocated: datetime
) -> dict[str, float]:
    """Seconds from the allocation to each step of the job (STEPS), and to the ranks'
    start (``total``): the time the target is about."""
    log = (workdir / ".snakemake/slurm_logs/rule_train" / run / f"{job_id}.log").read_text()
    headers = [datetime.fromisoformat(d) for d in HEADER.findall(log)]
    stamps = [datetime.strptime(d, "%a %b %d %H:%M:%S %Y") for d in JOB_STAMP.findall(log)]
    attempt = workdir / "results/runs" / run / record["attempt_dir"] / "job.json"
    marks = [headers[0], stamps[0], headers[1], stamps[1]]
    marks += [_local(json.loads(attempt.read_text())["started_at"]), _local(record["started_at"])]
    names = [*STEPS, "total"]
    return {name: (t - allocated).total_seconds() for name, t in zip(names, marks, strict=True)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--no-fail", action="store_true", help="exit 0 even above target")
    parser.add_argument(
        "--no-bytecode", action="store_true", help="leave llmbench's __pycache__ as it is"
    )
    args = parser.parse_args()
    if not args.no_bytecode:
        compile_bytecode()

    with local_cluster() as cluster, tempfile.TemporaryDirectory() as tmp:
        # the baseline first: the big sweep then finds the cluster warm too
        small = in_allocation_s(cluster, Path(tmp) / "small", BASELINE_RUNS)
        floor = floor_s(cluster, Path(tmp) / "floor")
        big = in_allocation_s(cluster, Path(tmp) / "big", args.runs)
        cpu = in_job_cpu_s(Path(tmp))
    big_s = {run: steps["total"] for run, steps in big.items()}
    small_s = {run: steps["total"] for run, steps in small.items()}
    ratio = statistics.mean(big_s.values()) / statistics.mean(small_s.values())
    result = {
        "runs": args.runs,
        "in_allocation_s": big_s,
        "baseline_in_allocation_s": small_s,
        "steps_s": big,
        "baseline_steps_s": small,
        "max_s": max(big_s.values()),
        "ratio_mean_vs_baseline": ratio,
        "floor_s": floor,
        "in_job_cpu_s": cpu,
        "target_s": TARGET_S,
        "bytecode_compiled": not args.no_bytecode,
    }
    for run, s in big_s.items():
        print(f"{run}: {s:.2f} s in allocation before the run started "
              f"({small_s[run]:.2f} s with {BASELINE_RUNS} runs)")  # fmt: skip
        for name, steps in ((f"{args.runs} runs", big[run]), (f"{BASELINE_RUNS} runs", small[run])):
            print(f"  {name}: " + ", ".join(f"{step} {t:.1f}" for step, t in steps.items()))
    print("floor (Snakemake, executor plugin, Slurm; no llmbench code): "
          + ", ".join(f"{s:.2f}" for s in floor) + " s")  # fmt: skip
    print(f"in-job Snakemake CPU, job step dry run outside Slurm (least of {CPU_TRIES}): "
          f"{cpu['runs']:.2f} s with {args.runs} runs, {cpu['baseline']:.2f} s with "
          f"{BASELINE_RUNS} runs, {cpu['floor']:.2f} s floor")  # fmt: skip
    print(f"max {result['max_s']:.2f} s (target <= {TARGET_S} s); mean ratio "
          f"{args.runs} runs / {BASELINE_RUNS} runs: {ratio:.2f}")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    if result["max_s"] > TARGET_S and not args.no_fail:
        sys.exit(1)


if __name__ == "__main__":
    main()
