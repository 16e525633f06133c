"""The GPU proof kit's dry mode end to end, as CI runs it: ``run.sh --dry`` checks the
wheel list and the scripts, runs the embedded sweep through the real workflow on the CPU
(tiny steps) with its report, the preflight's CPU check, Megatron-Core's GPTModel as far
as the CPU allows, and the summary, which it prints last. Nothing is written outside the
output folder."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.helpers import REPO

pytestmark = pytest.mark.workflow

STEPS = ["wheels", "environment", "workflow", "node", "framework", "summary"]


def _git_status() -> str:
    return subprocess.run(
        ["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=all"],
        capture_output=True,
        text=True,
    ).stdout


def test_dry_mode_proves_every_step_on_the_cpu(tmp_path: Path) -> None:
    out, scratch, home = tmp_path / "proof", tmp_path / "tmp", tmp_path / "home"
    scratch.mkdir()
    home.mkdir()
    before = _git_status()
    proc = subprocess.run(
        ["bash", str(REPO / "benchmarks/gpu_proof/run.sh"), "--dry", str(out)],
        capture_output=True,
        text=True,
        timeout=1200,
        env=dict(os.environ, TMPDIR=str(scratch), HOME=str(home)),
    )
    summary_text = (out / "summary.txt").read_text()
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    assert proc.stdout.endswith(summary_text) and summary_text.endswith("PASS\n")
    assert (out / "run.log").read_text() == proc.stdout + proc.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["ok"] is True
    steps = [json.loads(p.read_text()) for p in sorted((out / "steps").glob("*.json"))]
    assert [s["step"] for s in steps] == STEPS and all(s["rc"] == 0 for s in steps)

    # 1. the embedded sweep through the workflow, in the kit's tables, with the report
    runs = summary["runs"]
    assert summary["runs_table"] == "tables/runs.parquet"
    assert sorted((r["framework"], r["dtype"]) for r in runs) == [
        ("torch", "bf16"),
        ("torch", "fp32"),
    ]
    for run in runs:
        assert run["status"] == "success" and run["gpu_type"] == "cpu"
        assert run["tokens_per_s"] > 0 and 0 < run["mfu"] <= 1
        assert run["joules_per_token"] > 0 or run["energy_reason"]
    assert (out / "workflow/report.html").stat().st_size > 0
    assert any((out / "workflow/results/plots").rglob("*.svg"))
    # 2. the node checks: gloo between two CPU ranks, the GPU checks skipped with why
    node = summary["node"]
    assert node["status"] == "ok" and node["checks"] == ["gloo all-reduce", "gloo alltoall"]
    assert node["busbw_gbps"] > 0 and len(node["skipped"]) == 3
    # 3. Megatron-Core: the GPTModel built in the shape the FLOPs formula counts; trained
    # on the CPU only where the framework's step runs there
    framework = summary["framework"]
    check = framework["check"]
    assert check["built"] and check["parameters"] == check["expected_parameters"]
    if framework["status"] == "built":
        assert framework["reason"].startswith("not trained on the CPU: ")
        assert not (out / "framework/results").exists()
    else:
        assert framework["status"] == "trained" and check["cpu_step"] == "ok"
    # everything under the output folder: the repository, the temporary folder and the
    # home folder as before
    assert _git_status() == before
    assert list(scratch.iterdir()) == [] and list(home.iterdir()) == []
