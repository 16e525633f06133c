"""One interface for every way a run's ranks start, and the registry of them.

A ``Launcher`` answers, for one run: the ``launch.sh`` it renders, the platform's files
written beside it, how the train job waits on it (the ranks it may reach outside its own
process tree), whether the train job samples its own node, what the platform must be
given before a sweep starts, and what it adds to the attempt's record (cluster type,
workload id, a failure reason only the platform knows); for a sweep, the nodes its runs
may land on (``nodes``: what preflight checks). What each launcher *is* (where
its ranks run, its profile block) is its ``llmbench.core.launchers`` record.

Adding a launcher: its record in ``core.launchers.LAUNCHER_TRAITS``, the schema's enum, a
subclass here with its ``render``, and one module for the outside system it talks to.
No code elsewhere branches on a launcher's name (``tests/launch/test_launchers.py``).
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from llmbench.core import run_folder
from llmbench.core.devices import device
from llmbench.core.launchers import LAUNCHER_TRAITS, LauncherTraits
from llmbench.core.platform_site import KubernetesSite, RunaiSite, Site
from llmbench.core.preflight_settings import ListedNodes
from llmbench.core.runspec import RunSpec
from llmbench.errors import ConfigError, LaunchError
from llmbench.launch import kubernetes, runai, script
from llmbench.launch.slurm import partition_nodes, step_task_pids

GENERIC_REASONS = frozenset({"", "job_failed"})
"""Platform verdicts that add nothing to what the log and exit code say."""


class Launcher:
    """Where and how one run's ranks start; one instance per launcher, no state."""

    traits: LauncherTraits

    def render(self, spec: RunSpec) -> str:
        """The attempt's ``launch.sh``: stdout and stderr become the train log."""
        raise NotImplementedError

    def files(self, spec: RunSpec, attempt: int) -> dict[str, str]:
        """File name -> text written beside ``launch.sh`` (a manifest, a payload)."""
        return {}

    def outside_pids(self, slurm_job_id: str | None) -> Callable[[], list[int]] | None:
        """The ranks' processes outside ``launch.sh``'s own tree, for the supervisor."""
        return None

    def runner_samples(self, spec: RunSpec) -> bool:
        """Whether the train job samples its own node (else ``launch.sh`` does, or nobody
        can: the ranks run elsewhere)."""
        return True

    def missing_before_start(self, spec: RunSpec, environ: Mapping[str, str]) -> str | None:
        """One line naming what the sweep's environment lacks for this run, else None."""
        return None

    def outcome(self, attempt_dir: Path, slurm_job_id: str | None) -> dict[str, Any]:
        """Record fields: ``cluster_type``, ``workload_id`` and any platform verdict."""
        return {"cluster_type": self.traits.cluster_type, "workload_id": None}

    def nodes(self, partition: str | None) -> ListedNodes | None:
        """The nodes a sweep's runs may land on, for preflight to check (``partition``:
        the site's, None for the default); None where they cannot be listed from here.
        Unless a launcher lists its own: this machine, where the train jobs start."""
        return ListedNodes((socket.gethostname().split(".")[0],), "hostname")


class LocalLauncher(Launcher):
    """torchrun on the train job's own machine (the embedded workload, the proof kit)."""

    traits = LAUNCHER_TRAITS["local"]

    def render(self, spec: RunSpec) -> str:
        return script.render_local(spec)


class SrunLauncher(Launcher):
    """srun inside the train job's Slurm allocation, in a pyxis container or the venv."""

    traits = LAUNCHER_TRAITS["srun"]

    def render(self, spec: RunSpec) -> str:
        return script.render_srun(spec)

    def outside_pids(self, slurm_job_id: str | None) -> Callable[[], list[int]] | None:
        # srun's tasks run under slurmstepd, not under launch.sh
        return (lambda: step_task_pids(slurm_job_id)) if slurm_job_id else None

    def runner_samples(self, spec: RunSpec) -> bool:
        return not device(spec.gpu_type).nvidia_smi  # else launch.sh samples every node

    def nodes(self, partition: str | None) -> ListedNodes | None:
        return partition_nodes(partition)  # sinfo: the partition's nodes

    def outcome(self, attempt_dir: Path, slurm_job_id: str | None) -> dict[str, Any]:
        return {"cluster_type": self.traits.cluster_type, "workload_id": slurm_job_id}


class PlatformLauncher(Launcher):
    """A platform runs the ranks in its pods; the train job submits, copies the rank-0
    log and waits. Its submit script writes ``platform.json``."""

    def runner_samples(self, spec: RunSpec) -> bool:
        return False  # nothing of the run is on this machine

    def outcome(self, attempt_dir: Path, slurm_job_id: str | None) -> dict[str, Any]:
        out: dict[str, Any] = {"cluster_type": self.traits.cluster_type, "workload_id": None}
        try:
            platform = json.loads((attempt_dir / run_folder.PLATFORM).read_text())
        except (OSError, ValueError):
            return out
        out["workload_id"] = platform.get("workload_id")
        out["platform_state"] = platform.get("state")
        reason = platform.get("failure_reason") or ""
        if reason not in GENERIC_REASONS:
            out["failure_reason"] = reason
            out["end_detail_platform"] = platform.get("detail", "")
        return out


def _site(spec: RunSpec, kind: type[Site]) -> Any:
    """The run's parsed site values (``RunSpec.site``), of the launcher's own kind."""
    site = spec.site
    if not isinstance(site, kind):
        raise LaunchError(f"run {spec.run_id}: no {kind.block}: site values")
    return site


class KubernetesLauncher(PlatformLauncher):
    """A Kubeflow TrainJob or PyTorchJob through the Kubernetes API."""

    traits = LAUNCHER_TRAITS["kubernetes"]

    def render(self, spec: RunSpec) -> str:
        header = script.header(spec, "bash launch.sh (with the same kubeconfig)")
        return kubernetes.render_submit_script(header, _site(spec, KubernetesSite))

    def files(self, spec: RunSpec, attempt: int) -> dict[str, str]:
        site = _site(spec, KubernetesSite)
        return {kubernetes.MANIFEST_FILE: kubernetes.render_manifest_yaml(spec, site, attempt)}


class RunaiLauncher(PlatformLauncher):
    """A Run:ai distributed training workload through its REST API."""

    traits = LAUNCHER_TRAITS["runai"]

    def render(self, spec: RunSpec) -> str:
        header = script.header(spec, "bash launch.sh (with the same environment)")
        return runai.render_submit_script(header, _site(spec, RunaiSite))

    def files(self, spec: RunSpec, attempt: int) -> dict[str, str]:
        site = _site(spec, RunaiSite)
        return {runai.PAYLOAD_FILE: runai.render_payload_json(spec, site, attempt)}

    def missing_before_start(self, spec: RunSpec, environ: Mapping[str, str]) -> str | None:
        # The train jobs run where the sweep starts and read the secret from there: a
        # sweep without it would fail every run at its first API call.
        name = _site(spec, RunaiSite).secret_env
        if environ.get(name):
            return None
        return (
            f"runai.secret_env: ${name} is not set in this environment; allowed: export "
            f"{name}=<the Run:ai Application secret> in the shell that starts the sweep "
            "(read by name, never written)"
        )


LAUNCHERS: dict[str, Launcher] = {
    launcher.traits.name: launcher
    for launcher in (LocalLauncher(), SrunLauncher(), KubernetesLauncher(), RunaiLauncher())
}
"""Every launcher by name: the same names as ``LAUNCHER_TRAITS`` (a test says so)."""


def launcher_for(spec: RunSpec) -> Launcher:
    """The launcher of ``spec``; a ``LaunchError`` naming the allowed ones otherwise."""
    try:
        return LAUNCHERS[spec.launcher]
    except KeyError:
        allowed = ", ".join(LAUNCHERS)
        raise LaunchError(f"launcher={spec.launcher!r}: allowed: {allowed}") from None


def render_launch_script(spec: RunSpec) -> str:
    """The bash script run in the attempt folder; stdout and stderr become the train log."""
    return launcher_for(spec).render(spec)


def check_platforms(specs: Iterable[RunSpec], source: str) -> None:
    """Every run's launcher files render (a platform's site values and each run's
    workload), checked before anything is submitted: the workflow and ``llmbench plan``
    call it after the config check."""
    for spec in specs:
        try:
            launcher_for(spec).files(spec, attempt=1)
        except LaunchError as err:
            raise ConfigError(f"{source}: {err}") from None


def missing_before_start(
    specs: Iterable[RunSpec], environ: Mapping[str, str] = os.environ
) -> str | None:
    """The first thing a sweep about to run lacks in ``environ`` (a Run:ai secret)."""
    for spec in specs:
        missing = launcher_for(spec).missing_before_start(spec, environ)
        if missing:
            return missing
    return None
