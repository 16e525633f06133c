"""The setup rules in the real DAG: image imports (stand-in enroot) and the training venv."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from llmbench.core.stage import VENV_MARKER
from tests.helpers import REPO, snakemake, workflow_config, write_config

pytestmark = pytest.mark.workflow

FIXTURES = REPO / "tests" / "fixtures"
CONFIG = workflow_config("enroot-setup")
IMAGE = CONFIG["images"]["llama3.1-nemo"]
SQSH = {
    "x86_64": "results/stage/images/nvidia+nemo+25.07.sqsh",
    "aarch64": "results/stage/images/nvidia+nemo+25.07.aarch64.sqsh",
}
MARKER = f"results/stage/venv/{VENV_MARKER}"


def job_counts(dry_run_stdout: str) -> dict[str, int]:
    """Snakemake's "Job stats" table of a dry run."""
    lines = dry_run_stdout.split("Job stats:", 1)[1].splitlines()[3:]
    counts = {}
    for line in lines:
        parts = line.split()
        if len(parts) != 2 or not parts[1].isdigit():
            break
        counts[parts[0]] = int(parts[1])
    return counts


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    write_config(tmp_path, CONFIG)
    # One requirement that a new venv already has: a real pip run, no download.
    (tmp_path / "requirements.txt").write_text("pip\n")
    monkeypatch.setenv("PATH", f"{FIXTURES}:{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_ENROOT_CALLS", str(tmp_path / "enroot-calls"))
    monkeypatch.setenv(
        "FAKE_ENROOT_EXPECT", f"OUT docker://{IMAGE}\n-a aarch64 OUT docker://{IMAGE}"
    )
    return tmp_path


def test_dag_imports_each_image_once_per_arch_and_builds_one_venv(workdir: Path) -> None:
    proc = snakemake(workdir, "-n")
    assert proc.returncode == 0, proc.stderr[-3000:]
    counts = job_counts(proc.stdout)
    assert counts["import_image"] == 2 and counts["training_venv"] == 1
    assert counts["train"] == 5
    for path in (*SQSH.values(), MARKER):
        assert path in proc.stdout


@pytest.mark.prerequisite(shutil.which("mksquashfs") is not None, "needs squashfs-tools")
def test_setup_rules_run_for_real_and_only_once(workdir: Path) -> None:
    proc = snakemake(workdir, "--cores", "2", *SQSH.values(), MARKER)
    assert proc.returncode == 0, proc.stderr[-3000:]
    for path in SQSH.values():
        assert (workdir / path).read_bytes()[:4] == b"hsqs"  # a real squashfs
    calls = (workdir / "enroot-calls").read_text().splitlines()
    assert sorted(calls) == sorted([f"OUT docker://{IMAGE}", f"-a aarch64 OUT docker://{IMAGE}"])
    assert not list((workdir / "results/stage/images").glob(".*partial"))
    marker = (workdir / MARKER).read_text()
    assert f"requirements: {workdir / 'requirements.txt'} sha256=" in marker  # found in the workdir
    assert any(line.startswith("pip==") for line in marker.splitlines())
    venv_python = workdir / "results/stage/venv/bin/python"
    check = entry_point_file(venv_python)
    assert check == str(REPO / "src" / "llmbench" / "ranks" / "entrypoints" / "nemo2.py")
    again = snakemake(workdir, "-n")
    counts = job_counts(again.stdout)
    assert "import_image" not in counts and "training_venv" not in counts
    # New pins rebuild the venv (and only the venv).
    (workdir / "requirements.txt").write_text("pip\nsetuptools\n")
    counts = job_counts(snakemake(workdir, "-n").stdout)
    assert counts.get("training_venv") == 1 and "import_image" not in counts


def entry_point_file(python: Path) -> str:
    """The entry point module as the venv's interpreter finds it (via the .pth file)."""
    out = subprocess.run(
        [str(python), "-c", "import llmbench.ranks.entrypoints.nemo2 as m; print(m.__file__)"],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip()


def test_failed_import_leaves_no_file(workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_ENROOT_FAIL", "1")
    proc = snakemake(workdir, "--cores", "1", SQSH["x86_64"])
    assert proc.returncode != 0
    images = workdir / "results/stage/images"
    assert not images.exists() or not list(images.iterdir())  # no partial, no .sqsh
    log = (workdir / "results/logs/import_image/nvidia+nemo+25.07.sqsh.log").read_text()
    assert "simulated failure" in log or "simulated failure" in proc.stderr


CKPT_SWEEP = {
    "workload": "llama3.1-nemo",
    "sizes": ["8b"],
    "dtypes": ["bf16"],
    "gpu_type": "h100",
    "scales": [16],
}


def test_ckpt_load_waits_for_its_save_run(tmp_path: Path) -> None:
    write_config(tmp_path, {"sweeps": [{**CKPT_SWEEP, "variants": ["ckpt-save", "ckpt-load"]}]})
    proc = snakemake(tmp_path, "-n", "--config", "launcher=srun", "container=enroot")
    assert proc.returncode == 0, proc.stderr[-3000:]
    load = "results/runs/llama3.1-nemo_8b_bf16_h100x16_ckpt-load/run.json"
    (block,) = [b for b in proc.stdout.split("\n\n") if f"output: {load}" in b]
    (inputs,) = [line for line in block.splitlines() if line.strip().startswith("input:")]
    # The load job waits for the save run's record.
    assert "results/runs/llama3.1-nemo_8b_bf16_h100x16_ckpt-save/run.json" in inputs


def test_ckpt_load_without_its_save_run_is_one_line(tmp_path: Path) -> None:
    write_config(tmp_path, {"sweeps": [{**CKPT_SWEEP, "variants": ["ckpt-load"]}]})
    env_free = {k: v for k, v in os.environ.items() if k != "LOAD_CHECKPOINT_PATH"}
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "-n", "--snakefile", str(REPO / "Snakefile")],
        cwd=tmp_path,
        env=env_free,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode != 0
    (line,) = [x for x in proc.stderr.splitlines() if x.startswith("llmbench: error")]
    assert "ckpt-load" in line and "LOAD_CHECKPOINT_PATH" in line
