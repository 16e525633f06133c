"""What a launcher adds to an attempt beyond ``launch.sh``: the platform's files (a
manifest) before the run, and after it the cluster type, the platform's workload id and
a failure reason only the platform knows (eviction, OOM kill, image pull, deadline)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from llmbench.errors import ConfigError, LaunchError
from llmbench.launch.kubernetes import MANIFEST_FILE, KubernetesSite, render_manifest_yaml
from llmbench.launch.runai import PAYLOAD_FILE, RunaiSite, render_payload_json
from llmbench.spec.runspec import RunSpec
from llmbench.spec.value_checks import PLATFORM_LAUNCHERS

__all__ = [
    "PLATFORM_LAUNCHERS",
    "check_platforms",
    "missing_secret",
    "platform_files",
    "platform_outcome",
]

CLUSTER_TYPES = {"local": "local", "srun": "slurm", "kubernetes": "kubernetes", "runai": "runai"}
"""``launcher`` -> the runs table's ``cluster_type``."""
GENERIC_REASONS = frozenset({"", "job_failed"})
"""Platform verdicts that add nothing to what the log and exit code say."""


def platform_files(spec: RunSpec, attempt: int) -> dict[str, str]:
    """File name -> text, written into the attempt folder beside ``launch.sh``."""
    if spec.launcher == "kubernetes":
        site = KubernetesSite.from_config(spec.platform)
        return {MANIFEST_FILE: render_manifest_yaml(spec, site, attempt)}
    if spec.launcher == "runai":
        return {
            PAYLOAD_FILE: render_payload_json(spec, RunaiSite.from_config(spec.platform), attempt)
        }
    return {}


def platform_outcome(spec: RunSpec, attempt_dir: Path, slurm_job_id: str | None) -> dict[str, Any]:
    """Record fields: ``cluster_type``, ``workload_id`` and, where the platform names a
    cause, ``failure_reason`` (read from the ``platform.json`` the submit script wrote)."""
    out: dict[str, Any] = {
        "cluster_type": CLUSTER_TYPES.get(spec.launcher, spec.launcher),
        "workload_id": slurm_job_id if spec.launcher == "srun" else None,
    }
    try:
        platform = json.loads((attempt_dir / "platform.json").read_text())
    except (OSError, ValueError):
        return out
    out["workload_id"] = platform.get("workload_id")
    out["platform_state"] = platform.get("state")
    reason = platform.get("failure_reason") or ""
    if reason not in GENERIC_REASONS:
        out["failure_reason"] = reason
        out["end_detail_platform"] = platform.get("detail", "")
    return out


def check_platforms(specs: list[RunSpec], source: str) -> None:
    """A platform launcher's site values and each run's workload, checked before anything
    is submitted (the workflow and ``llmbench plan`` call it after the config check)."""
    for spec in specs:
        try:
            platform_files(spec, attempt=1)
        except LaunchError as err:
            raise ConfigError(f"{source}: {err}") from None


def missing_secret(specs: Iterable[RunSpec], environ: Mapping[str, str] = os.environ) -> str | None:
    """One line when a Run:ai run's Application secret variable (``runai.secret_env``) is
    empty in ``environ``: the train jobs run where the sweep starts and read it from there,
    so a sweep without it would fail every run at its first API call."""
    for spec in specs:
        if spec.launcher == "runai":
            name = RunaiSite.from_config(spec.platform).secret_env
            if not environ.get(name):
                return (
                    f"runai.secret_env: ${name} is not set in this environment; allowed: "
                    f"export {name}=<the Run:ai Application secret> in the shell that starts "
                    "the sweep (read by name, never written)"
                )
    return None
