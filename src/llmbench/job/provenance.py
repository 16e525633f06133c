"""Where a number came from: versions, source revision, host and scheduler ids."""

from __future__ import annotations

import os
import platform
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any

from llmbench import __version__

PACKAGES = ("torch", "transformers", "snakemake", "pandas")


def _package_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def git_revision(source_dir: str | Path) -> str | None:
    """HEAD of the checkout holding ``source_dir``, with ``-dirty`` for local changes."""
    try:
        sha = subprocess.run(
            ["git", "-C", str(source_dir), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
            timeout=10,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(source_dir), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            check=True,
            timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return sha + ("-dirty" if dirty else "")


def collect(source_dir: str | Path | None = None) -> dict[str, Any]:
    """Provenance of this process's environment."""
    info: dict[str, Any] = {
        "llmbench_version": __version__,
        "git_sha": git_revision(source_dir) if source_dir is not None else None,
        "python_version": platform.python_version(),
        "host": platform.node(),
        "platform": platform.platform(),
        "slurm_job_id": os.environ.get("SLURM_JOB_ID"),
    }
    for name in PACKAGES:
        info[f"{name}_version"] = _package_version(name)
    return info
