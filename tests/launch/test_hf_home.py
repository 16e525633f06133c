"""HF_HOME reaches the job: a recipe that reads the model's Hugging Face config offline
(the v26.08 Megatron-Bridge runs) gets the site's ``hf_home`` (or the caller's HF_HOME)
in its environment, passed into the container by name and mounted at the same path.
The attempt runs for real (``runner.run_attempt`` renders launch.sh and runs it) with
srun, squeue, scontrol and the interpreter replaced by a recorder of their argv and
environment (Slurm and pyxis cannot run here)."""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path

import pytest

from llmbench.core.config import check_config
from llmbench.core.site_fit import needs_hf_home
from llmbench.job.runner import run_attempt
from llmbench.workflow.rule_values import launch_env
from tests.helpers import HERE

RECORDER = """import json, os, sys
argv = sys.argv[1:]
with open(os.environ["LLMBENCH_TEST_RECORD"], "a") as out:
    out.write(json.dumps({"argv": argv, "env": dict(os.environ)}) + "\\n")
if argv[1:2] == ["-c"]:  # launch.sh asks the interpreter where llmbench is
    os.execv(sys.executable, [sys.executable, *argv[1:]])
"""
TOOLS = ("srun", "squeue", "scontrol", "sudo", "numactl", "python")
V2608 = {
    "workload": "llama3.1-mbridge", "release": "v26.08", "sizes": ["70b"], "dtypes": ["fp8"],
    "gpu_type": "gb300", "scales": [64],
}  # fmt: skip


@pytest.fixture
def recorder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (tmp_path / "recorder.py").write_text(RECORDER)
    tool = f'#!/bin/bash\nexec {shlex.quote(sys.executable)} {tmp_path / "recorder.py"} "$0" "$@"\n'
    for name in TOOLS:
        (bin_dir / name).write_text(tool)
        (bin_dir / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("SLURM_JOB_ID", "42")
    monkeypatch.delenv("HF_HOME", raising=False)
    monkeypatch.delenv("LLMBENCH_IMAGE", raising=False)
    return bin_dir / "python"


def attempt(tmp_path: Path, python: Path, hf_home: str | None) -> tuple[dict, list[dict]]:
    config = {"sweeps": [V2608], "launcher": "srun", "container": "enroot"}
    (spec,) = check_config(config, "config.yaml", host=HERE)[1]
    assert needs_hf_home(spec)
    record = tmp_path / "record.jsonl"
    record.unlink(missing_ok=True)
    env = {
        **launch_env(spec, str(tmp_path / "stage"), None, hf_home),
        "LLMBENCH_PYTHON": str(python),
        "LLMBENCH_TEST_RECORD": str(record),
    }
    outcome = run_attempt(spec, tmp_path / "runs" / spec.run_id, env=env)
    calls = [json.loads(line) for line in record.read_text().splitlines()]
    return outcome, calls


def srun_step(calls: list[dict]) -> dict:
    (step,) = [
        c for c in calls if c["argv"][0].endswith("srun") and "--kill-on-bad-exit=1" in c["argv"]
    ]
    return step


def test_the_sites_hf_home_is_passed_and_mounted(recorder: Path, tmp_path: Path) -> None:
    outcome, calls = attempt(tmp_path, recorder, "/shared/hf")
    assert outcome["exit_code"] == 0
    step = srun_step(calls)
    assert step["env"]["HF_HOME"] == "/shared/hf"
    options = {a.split("=", 1)[0]: a.split("=", 1)[1] for a in step["argv"] if "=" in a}
    assert "/shared/hf:/shared/hf" in options["--container-mounts"].split(",")
    assert "HF_HOME" in options["--container-env"].split(",")


def test_the_callers_hf_home_is_used_without_a_site_value(recorder, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("HF_HOME", "/home/me/hf")
    step = srun_step(attempt(tmp_path, recorder, None)[1])
    assert step["env"]["HF_HOME"] == "/home/me/hf"
    assert "/home/me/hf:/home/me/hf" in " ".join(step["argv"])


def test_launch_sh_stops_in_one_line_without_hf_home(recorder: Path, tmp_path: Path) -> None:
    """The config check refuses such a sweep first; launch.sh says the same if the job's
    environment lost it, before any rank starts."""
    outcome, calls = attempt(tmp_path, recorder, None)
    assert outcome["exit_code"] != 0
    assert not [c for c in calls if c["argv"][0].endswith("srun")]
    log = tmp_path / "runs" / outcome["run_id"] / outcome["attempt_dir"] / "train.log"
    assert "HF_HOME: set hf_home in the site file or HF_HOME" in log.read_text()
