"""The newcomer's path to a cluster, as dry runs of the real workflow: the Exemplar
config's own command (``--profile profiles/slurm --configfile configs/...``) reaches the
Slurm site although Snakemake drops the profile's ``configfile:`` for the command line's;
a sweep the site cannot start (a framework workload on launcher local, or without its
container or a venv that carries it, or without the Hugging Face cache its recipe
reads) is refused in one line before anything is planned or submitted."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from tests.helpers import REPO, snakemake

pytestmark = pytest.mark.workflow

EXEMPLAR = REPO / "configs" / "exemplar-v26.08.yaml"


def header_command() -> list[str]:
    """The command the Exemplar config's header tells a person to run."""
    (line,) = [
        line.lstrip("# ").strip()
        for line in EXEMPLAR.read_text().splitlines()
        if re.match(r"#\s+snakemake ", line)
    ]
    return shlex.split(line)


def as_in_workdir(words: list[str]) -> list[str]:
    """The header's snakemake arguments with the repository's relative paths absolute,
    for ``tests.helpers.snakemake`` (which runs in a scratch folder)."""
    return [str(REPO / w) if (REPO / w).exists() and "/" in w else w for w in words[1:]]


def checked_specs(workdir: Path) -> list[dict]:
    """The run specs the main process checked (what every job reads back)."""
    lines = (workdir / ".snakemake/llmbench/specs.json").read_text().splitlines()
    return json.loads(lines[1])["specs"]


def test_the_exemplar_header_command_reaches_the_slurm_site(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("HF_HOME", "/shared/hf")
    words = header_command()
    assert words[:3] == ["snakemake", "--profile", "profiles/slurm"] and "--configfile" in words
    proc = snakemake(tmp_path, "-n", *as_in_workdir(words))
    assert proc.returncode == 0, proc.stderr[-3000:]
    specs = checked_specs(tmp_path)
    assert len(specs) == 38
    assert {(s["launcher"], s["container"]) for s in specs} == {("srun", "enroot")}
    assert proc.stdout.count("rule import_image:") == 2  # the release's image, x86 and arm
    assert proc.stdout.count("rule train:") == 38


def test_a_framework_sweep_on_launcher_local_is_refused_before_planning(tmp_path: Path) -> None:
    """The same config without a site (the default profile only): launcher local."""
    proc = snakemake(tmp_path, "-n", "--configfile", str(EXEMPLAR))
    assert proc.returncode != 0
    errors = [line for line in proc.stderr.splitlines() if "error" in line.lower()]
    assert len(errors) == 1 and errors[0].startswith("llmbench: error: "), proc.stderr[-2000:]
    assert "launcher local starts framework torch or megatron-core" in errors[0]
    assert "not framework megatron-bridge, nodes 128" in errors[0]
    assert "profiles/slurm/site.yaml" in errors[0] and "(37 more runs alike)" in errors[0]
    assert "rule train" not in proc.stdout and not (tmp_path / "results").exists()


def test_a_framework_run_without_its_container_is_refused(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("HF_HOME", "/shared/hf")
    site = ("--config", "launcher=srun", "container=none")
    proc = snakemake(tmp_path, "-n", "--configfile", str(EXEMPLAR), *site)
    assert proc.returncode != 0
    (line,) = [line for line in proc.stderr.splitlines() if line.startswith("llmbench: error")]
    assert "framework megatron-bridge with container none runs in the stage venv" in line
    assert "does not install megatron-bridge" in line and "container: enroot" in line
    assert "rule train" not in proc.stdout
    # a venv that carries the framework runs it
    (tmp_path / "mbridge.txt").write_text("-r base.txt\nmegatron_bridge==0.1.0rc3  # pin\n")
    (tmp_path / "base.txt").write_text("nemo-toolkit[llm]==2.7.3\n")
    venv = ("setup={'venv_requirements': 'mbridge.txt'}",)
    proc = snakemake(tmp_path, "-n", "--configfile", str(EXEMPLAR), *site, *venv)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.count("rule train:") == 38


def test_a_recipe_reading_the_hf_cache_needs_hf_home(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("HF_HOME", raising=False)
    site = ("--config", "launcher=srun", "container=enroot")
    proc = snakemake(tmp_path, "-n", "--configfile", str(EXEMPLAR), *site)
    assert proc.returncode != 0
    (line,) = [line for line in proc.stderr.splitlines() if line.startswith("llmbench: error")]
    assert "HF_HUB_OFFLINE=1" in line and "hf_home" in line and "HF_HOME" in line
    # the site's hf_home, or HF_HOME in the environment, is enough
    proc = snakemake(tmp_path, "-n", "--configfile", str(EXEMPLAR), *site, "hf_home=/shared/hf")
    assert proc.returncode == 0, proc.stderr[-3000:]
    monkeypatch.setenv("HF_HOME", "/shared/hf")
    assert snakemake(tmp_path, "-n", "--configfile", str(EXEMPLAR), *site).returncode == 0
