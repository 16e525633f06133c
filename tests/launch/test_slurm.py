"""slurm.py: a GPU training job's resources, the setup and preflight jobs', and job
states read from stand-in Slurm commands (executables on PATH that answer only the exact
arguments llmbench must pass)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from llmbench.core.runspec import RunSpec
from llmbench.launch import slurm
from llmbench.launch.slurm import job_state, job_time_min, slurm_resources
from tests.launch.cases import first_scale_specs


def gpu_spec(gpu_type: str) -> RunSpec:
    return next(s for s in first_scale_specs() if s.gpu_type == gpu_type)


@pytest.mark.parametrize("gpu_type", ["h100", "gb300"])
def test_gpu_job_has_one_task_per_gpu_through_srun(gpu_type: str) -> None:
    spec = gpu_spec(gpu_type)
    assert spec.gpus_per_node > 1 and spec.gpus == spec.nodes * spec.gpus_per_node
    res = slurm_resources(spec, {"reservation": "r 1", "exclusive": True}, threads_per_rank=6)
    assert res["nodes"] == spec.nodes
    assert res["tasks_per_node"] == spec.gpus_per_node
    assert res["tasks"] == 0  # falsy: left out, tasks come from nodes x tasks_per_node
    assert res["mpi"] == "srun"
    assert res["gres"] == f"gpu:{spec.gpus_per_node}"
    # as the reference: no --cpus-per-task (-1: the plugin leaves it out), all node memory,
    # whole nodes; threads_per_rank is for CPU ranks only
    assert res["cpus_per_task"] == -1 and res["mem_mb"] == 0
    assert res["slurm_extra"].endswith("--exclusive")
    assert res["runtime"] == job_time_min(spec.limits) > spec.limits.time_limit_s / 60
    # GB300 (4-GPU NVL72 nodes), 32 nodes: the reference's rack segment of 16 nodes
    segment = " --segment=16" if gpu_type == "gb300" else ""
    assert res["slurm_extra"] == f"'--reservation=r 1'{segment} --exclusive"


def test_one_gpu_per_node_asks_for_tasks_without_mpi() -> None:
    spec = gpu_spec("h100")
    spec = dataclasses.replace(spec, nodes=spec.gpus, gpus_per_node=1)
    res = slurm_resources(spec, {}, threads_per_rank=6)
    # the plugin refuses mpi with one task per node
    assert (res["tasks_per_node"], res["tasks"], res["mpi"]) == (0, spec.gpus, "")
    assert res["gres"] == "gpu:1" and res["slurm_extra"] == "--exclusive"  # whole nodes


def test_a_try_excludes_the_sites_the_gates_and_the_last_tries_nodes() -> None:
    spec = gpu_spec("h100")
    extras = slurm.excluding({"exclude": "bad1", "nodelist": "n[1-4]"}, "gate1,gate2", None)
    assert extras == {"exclude": "bad1,gate1,gate2", "nodelist": "n[1-4]"}
    extra = slurm_resources(spec, slurm.excluding({}, "", "hit1"), 1)["slurm_extra"]
    assert extra == "--exclude=hit1 --exclusive"
    assert slurm.excluding({"exclude": None}, "", None) == {"exclude": None}  # nothing added


def test_setup_and_preflight_jobs_ask_slurm_for_what_they_use() -> None:
    assert slurm.setup_resources(None) == slurm.SETUP_JOB
    assert slurm.setup_resources("cpu")["slurm_partition"] == "cpu"
    cpu, gpu = slurm.node_check_resources(4, cpu=True), slurm.node_check_resources(8, cpu=False)
    assert (cpu["cpus_per_task"], cpu["gres"]) == (4, "")  # a CPU node: one CPU per rank
    assert (gpu["cpus_per_task"], gpu["gres"]) == (slurm.NODE_CHECK_CPUS, "gpu:8")
    assert cpu["nodes"] == gpu["nodes"] == cpu["tasks"] == 1
    assert slurm.node_check_extra("gpu-007") == "--nodelist=gpu-007"
    fabric = slurm.fabric_resources(4, 8)
    assert (fabric["nodes"], fabric["tasks_per_node"], fabric["mpi"]) == (4, 8, "srun")
    assert fabric["gres"] == "gpu:8" and fabric["runtime"] == slurm.CHECK_JOB_TIME_MIN
    assert slurm.exclude_extra(["g1", "g2"]) == "--exclude=g1,g2"
    assert slurm.exclude_extra([]) == ""


@pytest.fixture
def stand_in_slurm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Write stand-in ``squeue``/``sacct`` that print ``out`` for exactly ``args``."""

    def install(name: str, args: str, out: str) -> None:
        script = tmp_path / name
        script.write_text(
            f'#!/bin/sh\n[ "$*" = "{args}" ] || {{ echo "bad args: $*" >&2; exit 2; }}\n'
            f"printf '{out}'\n"
        )
        script.chmod(0o755)

    # only the stand-ins: a real Slurm on this machine must not answer (sh builtins suffice)
    monkeypatch.setenv("PATH", str(tmp_path))
    return install


def test_job_state_from_squeue(stand_in_slurm) -> None:
    stand_in_slurm("squeue", "-h -j 42 -t all -o %T", "CANCELLED\n")
    stand_in_slurm("sacct", "-n -X -j 42 -o State%30", "TIMEOUT\n")
    assert job_state("42") == "CANCELLED"
    assert job_state("43") is None  # neither command knows another job


def test_job_state_falls_back_to_sacct(stand_in_slurm) -> None:
    # squeue no longer lists the job (MinJobAge passed): sacct's first word counts
    stand_in_slurm("squeue", "-h -j 7 -t all -o %T", "")
    stand_in_slurm("sacct", "-n -X -j 7 -o State%30", "  cancelled by 0\n")
    assert job_state("7") == "CANCELLED"


def test_job_state_unknown_without_slurm(stand_in_slurm) -> None:
    assert job_state("7") is None
    stand_in_slurm("squeue", "-h -j 7 -t all -o %T", "")
    assert job_state("7") is None
