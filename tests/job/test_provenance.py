"""provenance.collect: versions, the source revision (dirty or not), host, Slurm job id."""

from __future__ import annotations

import platform
import subprocess
from importlib import metadata
from pathlib import Path

import pytest

import llmbench
from llmbench.job.provenance import PACKAGES, collect


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip


def test_collect_names_the_commit_and_marks_local_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    git(tmp_path, "init", "-q")
    (tmp_path / "a.txt").write_text("1\n")
    git(tmp_path, "add", "a.txt")
    git(tmp_path, "commit", "-q", "-m", "one")
    head = git(tmp_path, "rev-parse", "HEAD")
    monkeypatch.setenv("SLURM_JOB_ID", "4242")

    info = collect(tmp_path / ".")
    assert info["git_sha"] == head and len(head) == 40
    assert info["slurm_job_id"] == "4242"
    assert info["llmbench_version"] == llmbench.__version__
    assert info["python_version"] == platform.python_version()
    assert info["host"] == platform.node()
    for name in PACKAGES:
        assert info[f"{name}_version"] == metadata.version(name)

    (tmp_path / "untracked.txt").write_text("not part of the source\n")
    assert collect(tmp_path)["git_sha"] == head
    (tmp_path / "a.txt").write_text("2\n")
    assert collect(tmp_path)["git_sha"] == head + "-dirty"


def test_collect_without_a_checkout_or_a_job(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    assert collect(tmp_path)["git_sha"] is None  # not a git checkout
    info = collect()
    assert info["git_sha"] is None and info["slurm_job_id"] is None
