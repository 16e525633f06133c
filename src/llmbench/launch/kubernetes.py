"""The ``kubernetes`` launcher: one distributed PyTorch job per run attempt, rendered.

``render_manifest`` (pure) turns a ``RunSpec`` and the profile's site values
(``kubernetes:`` in the config) into a Kubeflow Trainer ``TrainJob``
(trainer.kubeflow.org/v1alpha1) or, for clusters on the older operator, a ``PyTorchJob``
(kubeflow.org/v1). The manifest is written into the attempt folder; ``launch.sh`` there
(``render_submit_script``) runs ``python -m llmbench.launch.kubernetes_watch``, which
submits it and waits (``launch.kubernetes_watch``). The pod's command and environment are
the ones Run:ai's pods get too (``launch.pods``).
"""

from __future__ import annotations

import sys
from typing import Any

import yaml

from llmbench.core.devices import device
from llmbench.core.platform_site import KubernetesSite
from llmbench.core.run_folder import MANIFEST as MANIFEST_FILE
from llmbench.core.run_folder import PLATFORM as PLATFORM_FILE
from llmbench.core.run_folder import PLATFORM_LOG as PROGRESS_FILE
from llmbench.core.runspec import RunSpec
from llmbench.errors import LaunchError
from llmbench.launch.pods import (
    explicit_torchrun,
    node_command,
    pod_environment,
    workload_name,
)
from llmbench.launch.shell import join

WATCH_MODULE = "llmbench.launch.kubernetes_watch"
"""What launch.sh runs: submit the manifest, wait, copy the rank-0 log."""
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
RUN_LABEL = "llmbench.io/workload"
"""On the workload and its pods: the workload name, unique per run attempt."""
CONTAINER = "node"
"""The trainer container: the name the Trainer's torch runtimes give it (patches match it)."""


def image_for(spec: RunSpec, site: KubernetesSite) -> str:
    """The workload's container image; the embedded workload runs in the site's image."""
    image = site.image or spec.image
    if not image:
        raise LaunchError(
            f"run {spec.run_id}: kubernetes.image is not set and the workload names no "
            "image; allowed: a registry image with Python, torch and llmbench"
        )
    return image


def _volumes(site: KubernetesSite) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(volumes, mounts): a memory-backed /dev/shm (NCCL and data loaders need more than
    the runtime's 64 MiB) and the profile's PVCs."""
    volumes: list[dict[str, Any]] = [
        {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": f"{site.shm_gi}Gi"}}
    ]
    mounts: list[dict[str, Any]] = [{"name": "dshm", "mountPath": "/dev/shm"}]
    for pvc in site.pvcs:
        volumes.append({"name": pvc.name, "persistentVolumeClaim": {"claimName": pvc.claim}})
        mounts.append({"name": pvc.name, "mountPath": pvc.path})
    return volumes, mounts


def _resources(spec: RunSpec, site: KubernetesSite) -> dict[str, Any]:
    if not device(spec.gpu_type).has_gpus:  # CPU ranks: no GPU request
        cpus = spec.gpus_per_node * spec.threads_per_rank
        return {"requests": {"cpu": str(cpus)}, "limits": {"cpu": str(cpus)}}
    gpus = str(spec.gpus_per_node)
    return {"requests": {site.gpu_resource: gpus}, "limits": {site.gpu_resource: gpus}}


def _metadata(spec: RunSpec, site: KubernetesSite, name: str) -> dict[str, Any]:
    labels = {RUN_LABEL: name, "llmbench.io/run-id": spec.run_id}
    if site.queue:
        labels[QUEUE_LABEL] = site.queue
    return {"name": name, "namespace": site.namespace, "labels": labels}


def _pod_scheduling(site: KubernetesSite) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if site.node_selector:
        out["nodeSelector"] = dict(site.node_selector)
    if site.tolerations:
        out["tolerations"] = [dict(t) for t in site.tolerations]
    return out


def _deadline_s(spec: RunSpec) -> int:
    assert spec.limits is not None
    return int(spec.limits.time_limit_s)


def render_trainjob(spec: RunSpec, site: KubernetesSite, name: str) -> dict[str, Any]:
    torchrun = "python3 -m torch.distributed.run"  # reads PET_NNODES, PET_NODE_RANK, ...
    volumes, mounts = _volumes(site)
    env = pod_environment(spec, site.hf_home)
    pod_spec = {
        **_pod_scheduling(site),
        "volumes": volumes,
        "containers": [{"name": CONTAINER, "volumeMounts": mounts}],
    }
    metadata = _metadata(spec, site, name)
    patch = {
        "manager": "llmbench",
        "trainingRuntimeSpec": {
            "template": {
                "spec": {
                    "replicatedJobs": [
                        {
                            "name": CONTAINER,
                            "template": {
                                "spec": {
                                    "template": {
                                        "metadata": {"labels": {RUN_LABEL: name}},
                                        "spec": pod_spec,
                                    }
                                }
                            },
                        }
                    ]
                }
            }
        },
    }
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": metadata,
        "spec": {
            "runtimeRef": {"name": site.runtime},
            "activeDeadlineSeconds": _deadline_s(spec),
            "trainer": {
                "image": image_for(spec, site),
                "command": node_command(spec, site.llmbench_src, torchrun),
                "env": env,
                "numNodes": spec.nodes,
                "numProcPerNode": spec.gpus_per_node,
                "resourcesPerNode": _resources(spec, site),
            },
            "runtimePatches": [patch],
        },
    }


def render_pytorchjob(spec: RunSpec, site: KubernetesSite, name: str) -> dict[str, Any]:
    torchrun = explicit_torchrun(spec)
    volumes, mounts = _volumes(site)
    metadata = _metadata(spec, site, name)

    def replica(count: int) -> dict[str, Any]:
        container = {
            "name": "pytorch",  # the operator looks the training container up by this name
            "image": image_for(spec, site),
            "command": node_command(spec, site.llmbench_src, torchrun),
            "env": pod_environment(spec, site.hf_home),
            "resources": _resources(spec, site),
            "volumeMounts": mounts,
        }
        return {
            "replicas": count,
            "restartPolicy": "Never",
            "template": {
                "metadata": {"labels": {RUN_LABEL: name}},
                "spec": {**_pod_scheduling(site), "volumes": volumes, "containers": [container]},
            },
        }

    replicas = {"Master": replica(1)}
    if spec.nodes > 1:
        replicas["Worker"] = replica(spec.nodes - 1)
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": metadata,
        "spec": {
            "runPolicy": {
                "activeDeadlineSeconds": _deadline_s(spec),
                "backoffLimit": 0,  # llmbench decides about retries
                "cleanPodPolicy": "None",  # pods stay until their logs are copied
            },
            "nprocPerNode": str(spec.gpus_per_node),
            "pytorchReplicaSpecs": replicas,
        },
    }


def render_manifest(spec: RunSpec, site: KubernetesSite, attempt: int) -> dict[str, Any]:
    """The workload object of one attempt (see the module docstring)."""
    if spec.container not in ("none", "enroot"):
        raise LaunchError(f"container={spec.container!r}: allowed: none, enroot")
    if spec.variant not in ("perf",):
        raise LaunchError(
            f"run {spec.run_id}: variant={spec.variant!r} on launcher kubernetes; allowed: perf"
        )
    if spec.nodes < 1 or spec.gpus != spec.nodes * spec.gpus_per_node:
        raise LaunchError(
            f"run {spec.run_id}: gpus={spec.gpus} is not nodes={spec.nodes} x "
            f"gpus_per_node={spec.gpus_per_node}"
        )
    name = workload_name(spec, attempt)
    if site.api == "pytorchjob":
        return render_pytorchjob(spec, site, name)
    return render_trainjob(spec, site, name)


class _Dumper(yaml.SafeDumper):
    """Multi-line strings (the node script) as readable literal blocks."""


_Dumper.add_representer(
    str,
    lambda dumper, text: dumper.represent_scalar(
        "tag:yaml.org,2002:str", text, style="|" if "\n" in text else None
    ),
)


def render_manifest_yaml(spec: RunSpec, site: KubernetesSite, attempt: int) -> str:
    manifest = render_manifest(spec, site, attempt)
    return yaml.dump(manifest, Dumper=_Dumper, sort_keys=False, width=100)


def render_submit_script(header: list[str], site: KubernetesSite) -> str:
    """launch.sh: submit ``manifest.yaml``, wait, copy the rank-0 log to stdout."""
    args = [
        "-m",
        WATCH_MODULE,
        "--manifest",
        MANIFEST_FILE,
        "--record",
        PLATFORM_FILE,
        "--progress",
        PROGRESS_FILE,
        f"--poll-s={site.poll_s:g}",
    ]
    if site.keep:
        args.append("--keep")
    if site.context:  # one word with its option: a context starting with '-' stays a value
        args.append(f"--context={site.context}")
    lines = [
        *header,
        "# Submits manifest.yaml with the kubernetes client (KUBECONFIG or ~/.kube/config),",
        "# waits for a terminal state, prints the rank-0 pod's log, writes platform.json.",
        f'exec "$PYTHON" {join(args)}',
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":  # a launch.sh written before the watcher had its own module
    sys.exit(f"llmbench: the submit-and-wait entry is python -m {WATCH_MODULE} (same options)")
