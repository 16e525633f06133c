"""The GPU proof kit's parts that run without a GPU: its wheel list, the Megatron-Core
entry point's launch and model, the single-node checks against a stand-in nvidia-smi,
the single-rank all-reduce, the summary's judgement and run.sh's refusal to reuse a
folder. The kit's dry mode end to end: tests/workflow/test_gpu_proof_dry.py."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from benchmarks.gpu_proof.environment import unmet_requirements
from benchmarks.gpu_proof.framework import SIZES, framework_spec, run_framework
from benchmarks.gpu_proof.node import TORCH_NCCL_CHECK, node_checks
from benchmarks.gpu_proof.summary import build_summary, first_error, run_rows, step_results
from benchmarks.gpu_proof.wheels import pin_problems, read_pins, wheel_problems
from llmbench.core.devices import datasheet_peak
from llmbench.core.limits import RunLimits
from llmbench.core.runspec import RUN_ID_PATTERN
from llmbench.launch.launchers import render_launch_script
from llmbench.preflight.allreduce import measure_allreduce
from llmbench.preflight.gpu import HEALTH_FIELDS
from llmbench.ranks.entrypoints.megatron_core import expected_parameters
from tests.helpers import REPO, missing_prerequisite

KIT = REPO / "benchmarks/gpu_proof"
BOX_PACKAGES = ("torch", "pandas", "pyarrow", "matplotlib", "jax", "numpy")
"""What a GPU box has: the kit must never install its own (a CPU torch would replace the
box's CUDA build)."""


def test_wheel_list_is_exact_pins_equal_to_the_requirements() -> None:
    pins, problems = pin_problems(KIT / "wheels.txt", REPO / "envs/requirements.txt")
    assert problems == []
    env_pins, _ = read_pins(REPO / "envs/requirements.txt")
    shared = set(pins) & set(env_pins)
    assert {"snakemake", "snakemake-executor-plugin-slurm", "jsonschema", "py-spy"} <= shared
    test_pins, _ = read_pins(REPO / "envs/test.txt")
    assert pins["megatron-core"] == test_pins["megatron-core"]  # what the dry mode builds
    assert not set(BOX_PACKAGES) & set(pins)


def test_a_loose_or_different_pin_is_named(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels.txt"
    wheels.write_text("# a comment\nsnakemake==9.0.0\njsonschema>=4\nPyYAML==6.0.3\n")
    _, problems = pin_problems(wheels, REPO / "envs/requirements.txt")
    assert len(problems) == 2
    assert "wheels.txt:3: 'jsonschema>=4' is not an exact pin" in problems[0]
    assert "snakemake==9.0.0 differs from requirements.txt's snakemake==9.27.1" in problems[1]


def test_a_wheel_folder_holds_exactly_the_pinned_versions(tmp_path: Path) -> None:
    for name in ("snakemake-9.27.1-py3-none-any.whl", "PyYAML-6.0.2-cp312-cp312-any.whl",
                 "extra_pkg-1.0-py3-none-any.whl"):  # fmt: skip
        (tmp_path / name).touch()
    problems = wheel_problems({"snakemake": "9.27.1", "pyyaml": "6.0.3"}, tmp_path)
    assert problems == [
        f"{tmp_path}: pyyaml==6.0.3 wanted, wheels found: 6.0.2",
        f"{tmp_path}: extra-pkg 1.0 is not in the list",
    ]


def test_box_packages_outside_the_declared_ranges_are_named(tmp_path: Path) -> None:
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(
        '[project]\ndependencies = ["pandas>=999", "pyarrow>=1", "not-installed-here>=1",'
        " \"pyyaml>=999; platform_machine == 'no-such-machine'\"]\n"
    )
    unmet = unmet_requirements(pyproject)
    assert len(unmet) == 1 and unmet[0].startswith("pandas ")
    assert unmet[0].endswith("here; llmbench needs pandas>=999")
    assert unmet_requirements(REPO / "pyproject.toml") == []


def test_megatron_core_runs_launch_locally_through_its_entry_point() -> None:
    limits = RunLimits(55, 55, 60)
    spec = framework_spec("small", "bf16", "local-cuda", 60, (20, 59), limits)
    assert re.fullmatch(RUN_ID_PATTERN, spec.run_id), spec.run_id
    script = render_launch_script(spec)
    assert "torch.distributed.run --standalone --nnodes=1 --nproc-per-node=1" in script
    assert "-m llmbench.ranks.entrypoints.megatron_core --spec run_spec.json" in script
    assert spec.model["hidden"] == SIZES["small"][0].hidden and spec.global_batch_size == 8


def test_megatron_core_builds_the_shape_the_flops_formula_counts(tmp_path: Path) -> None:
    """Real Megatron-Core on the CPU: plain multi-head attention and an odd vocabulary
    (the kit's own sizes use grouped queries; the dry mode checks those)."""
    if importlib.util.find_spec("megatron") is None:
        missing_prerequisite("megatron-core is not installed (envs/test.txt)")
    spec = framework_spec("tiny", "fp32", "cpu", 4, (1, 3), RunLimits(60, 60, 60))
    data = spec.to_dict()
    data["model"].update(heads=4, query_groups=4, vocab=1000)
    (tmp_path / "run_spec.json").write_text(json.dumps(data))
    proc = subprocess.run(
        [sys.executable, "-m", "llmbench.ranks.entrypoints.megatron_core",
         "--spec", "run_spec.json", "--check-only", "check.json"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    check = json.loads((tmp_path / "check.json").read_text())
    assert check["built"] and check["parameters"] == expected_parameters(data["model"])
    assert check["cpu_step"] == "ok" or "megatron/core/" in check["cpu_step"]


def test_a_framework_run_goes_through_the_runner_like_every_run(tmp_path: Path) -> None:
    """The GPU mode's framework step on this machine: the run gets its folder, launch
    script, record and parsed outputs; without a GPU it fails, with Megatron-Core's or
    torch's own error in its log."""
    if importlib.util.find_spec("megatron") is None:
        missing_prerequisite("megatron-core is not installed (envs/test.txt)")
    import torch

    out = run_framework(
        tmp_path, "local-cuda", "tiny", ["fp32"], 4, (1, 3), 100, RunLimits(120, 120, 60)
    )
    run_id = "mcore-gpt_tiny_fp32_local-cudax1_perf"
    run_dir = tmp_path / "results/runs" / run_id
    assert json.loads((tmp_path / "framework.json").read_text()) == out
    assert [r["run_id"] for r in out["runs"]] == [run_id]
    script = (run_dir / "attempt-1/launch.sh").read_text()
    assert "-m llmbench.ranks.entrypoints.megatron_core" in script
    for name in ("run.json", "summary.json", "steps.parquet", "telemetry.parquet", "energy.json"):
        assert (run_dir / name).exists(), name
    if torch.cuda.is_available():
        assert out["status"] == "trained"
    else:
        assert out["status"] == "failed" and out["runs"][0]["reason"] == "python_exception"
        log = (run_dir / "attempt-1/train.log").read_text()
        assert "CUDA" in log and "Traceback" in log


def test_one_rank_all_reduce_opens_a_group_of_one() -> None:
    """One GPU's NCCL check as gloo on the CPU: the collective runs, and moves no bytes
    between ranks (bus bandwidth 0 by definition)."""
    points = measure_allreduce("one-rank", 1, [1024, 1 << 16], iterations=2)
    assert [p.size_bytes for p in points] == [1024, 1 << 16]
    assert all(p.algbw_gbps > 0 and p.busbw_gbps == 0 for p in points)


STAND_IN_SMI = """#!/usr/bin/env bash
# stand-in for nvidia-smi on a 1-GPU box: the kit's exact queries only
case "$*" in
  "-L") echo "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-0)" ;;
  "--query-gpu={fields} --format=csv")
    echo "index, name, pci.bus_id, ecc.errors.uncorrected.volatile.total, \\
retired_pages.pending, clocks.current.sm [MHz], clocks.max.sm [MHz], pcie.link.width.current, \\
pcie.link.width.max"
    echo "0, NVIDIA H100 80GB HBM3, 00000000:18:00.0, 0, No, 345 MHz, 1980 MHz, 16, 16" ;;
  "nvlink --status") ;;
  *) echo "unexpected arguments: $*" >&2; exit 2 ;;
esac
"""


def test_node_checks_on_a_one_gpu_box(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The GPU path against a stand-in nvidia-smi, without DCGM and nccl-tests: health and
    clocks read, both tools listed as skipped, the NCCL all-reduce tried with torch (which
    fails here, without CUDA, and says so), no bus bandwidth for a single GPU."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    smi = bin_dir / "nvidia-smi"
    smi.write_text(STAND_IN_SMI.format(fields=",".join(HEALTH_FIELDS)))
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}/usr/bin{os.pathsep}/bin")
    result = node_checks(tmp_path / "preflight", gpu=True)
    assert json.loads((tmp_path / "preflight/node.json").read_text())["status"] == result["status"]
    assert result["gpus"] == [
        {"index": "0", "name": "NVIDIA H100 80GB HBM3", "sm_clock": "345 MHz",
         "max_sm_clock": "1980 MHz"}
    ]  # fmt: skip
    assert result["checks"] == ["nvidia-smi health", TORCH_NCCL_CHECK]
    assert [s.split(":")[0] for s in result["skipped"]] == [
        "nccl-tests all_reduce_perf",
        "dcgmi diag -r 1",
        "nccl-tests alltoall_perf",
    ]
    assert result["busbw_gbps"] is None and result["busbw_note"].startswith("1 GPU:")
    import torch

    if not torch.cuda.is_available():
        assert result["status"] == "problems"
        assert any(p.startswith(f"{TORCH_NCCL_CHECK} failed") for p in result["problems"])


def _step(outdir: Path, number: int, name: str, rc: int, log_text: str = "") -> None:
    log = f"logs/{number:02d}-{name}.log"
    (outdir / log).write_text(log_text)
    record = {"step": name, "rc": rc, "seconds": 3, "timeout_s": 30, "log": log}
    (outdir / f"steps/{number:02d}-{name}.json").write_text(json.dumps(record))


def test_summary_names_each_failed_or_timed_out_step(tmp_path: Path) -> None:
    (tmp_path / "steps").mkdir()
    (tmp_path / "logs").mkdir()
    _step(tmp_path, 1, "install", 0)
    _step(tmp_path, 2, "workflow", 124, "Building DAG of jobs...\n")
    _step(
        tmp_path, 3, "framework", 1, "Traceback ...\nModuleNotFoundError: No module named 'x'\n\n"
    )
    steps = step_results(tmp_path)
    assert [(s["step"], s["status"], s["reason"]) for s in steps] == [
        ("install", "ok", ""),
        ("workflow", "timed out", "stopped after 30 s"),
        ("framework", "failed", "ModuleNotFoundError: No module named 'x'"),
    ]
    summary = build_summary(tmp_path)
    assert summary["ok"] is False and summary["runs"] == [] and summary["node"] is None


def test_a_failed_run_is_explained_by_its_first_exception(tmp_path: Path) -> None:
    log = tmp_path / "framework/results/runs/r1/attempt-1/train.log"
    log.parent.mkdir(parents=True)
    log.write_text(
        "Traceback (most recent call last):\n  File ...\n"
        "AssertionError: Torch not compiled with CUDA enabled\n"
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n"
    )
    assert first_error(tmp_path, "r1/attempt-1/train.log") == (
        "AssertionError: Torch not compiled with CUDA enabled"
    )
    assert first_error(tmp_path, "r2/attempt-1/train.log") == ""


def test_gpu_runs_are_judged_against_the_datasheet_peak() -> None:
    gpu = "NVIDIA H100 80GB HBM3"
    base = {
        "framework": "megatron-core",
        "gpu_type": "local-cuda",
        "status": "success",
        "reason": "",
        "tokens_per_s": 1e5,
        "joules_per_token": 0.5,
        "energy_reason": "",
    }
    runs = pd.DataFrame(
        [
            {**base, "run_id": "a", "dtype": "bf16", "achieved_tflops_per_gpu": 400.0,
             "step_time_mean_s": 0.03},
            {**base, "run_id": "b", "dtype": "bf16", "achieved_tflops_per_gpu": 1200.0,
             "step_time_mean_s": 0.01},
            {**base, "run_id": "c", "dtype": "fp32", "achieved_tflops_per_gpu": 20.0,
             "step_time_mean_s": 0.0},
        ]
    )  # fmt: skip
    rows = run_rows(runs, gpu)
    bf16_peak, source = datasheet_peak(gpu, "bf16")
    assert rows[0]["peak_tflops_per_gpu"] == bf16_peak and rows[0]["peak_source"] == source
    assert rows[0]["status"] == "success" and math.isclose(rows[0]["mfu"], 400.0 / bf16_peak)
    assert rows[1]["status"] == "implausible" and "above 100 %" in rows[1]["reason"]
    assert rows[2]["status"] == "implausible" and "not a positive number" in rows[2]["reason"]


def test_run_sh_never_writes_into_a_used_folder(tmp_path: Path) -> None:
    used = tmp_path / "out"
    used.mkdir()
    (used / "summary.txt").write_text("an earlier proof\n")
    proc = subprocess.run(
        ["bash", str(KIT / "run.sh"), "--dry", str(used)], capture_output=True, text=True,
        timeout=60,
    )  # fmt: skip
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        f"run.sh: error: OUTDIR {used} is not an empty folder; allowed: a new or empty folder"
    )
    assert (used / "summary.txt").read_text() == "an earlier proof\n"
    assert sorted(p.name for p in used.iterdir()) == ["summary.txt"]
