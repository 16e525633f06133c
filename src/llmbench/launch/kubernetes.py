"""The ``kubernetes`` launcher: one distributed PyTorch job per run attempt.

Rendering (pure): ``render_manifest`` turns a ``RunSpec`` and the profile's site values
(``kubernetes:`` in the config) into a Kubeflow Trainer ``TrainJob``
(trainer.kubeflow.org/v1alpha1) or, for clusters on the older operator, a ``PyTorchJob``
(kubeflow.org/v1). The manifest is written into the attempt folder; ``launch.sh`` there runs
``python -m llmbench.launch.kubernetes``, which submits it, waits for a terminal state,
copies the rank-0 pod's log to its stdout (the attempt's ``train.log``) and writes
``platform.json`` (workload id, state, llmbench failure reason).

The API is reached with the official ``kubernetes`` Python client (not ``kubectl``): it
reads the same kubeconfig, needs no binary on the submit host, and returns structured
conditions and pod statuses that map onto llmbench's reasons without parsing text.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from llmbench.core.launchers import LAUNCHER_TRAITS
from llmbench.core.run_folder import MANIFEST as MANIFEST_FILE
from llmbench.core.run_folder import PLATFORM as PLATFORM_FILE
from llmbench.core.run_folder import PLATFORM_LOG as PROGRESS_FILE
from llmbench.core.runspec import RunSpec
from llmbench.core.yamlfile import load_yaml_text
from llmbench.errors import LaunchError
from llmbench.launch.entry import SPEC_FILE, entry_module, omp_threads, rank_environment
from llmbench.launch.shell import join

APIS = {
    "trainjob": ("trainer.kubeflow.org", "v1alpha1", "trainjobs", "TrainJob"),
    "pytorchjob": ("kubeflow.org", "v1", "pytorchjobs", "PyTorchJob"),
}
"""``kubernetes.api`` -> (group, version, plural, kind)."""
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
RUN_LABEL = "llmbench.io/workload"
"""On the workload and its pods: the workload name, unique per run attempt."""
CONTAINER = "node"
"""The trainer container: the name the Trainer's torch runtimes give it (patches match it)."""
SPEC_ENV = "LLMBENCH_RUN_SPEC"
"""The run spec travels in the manifest (this env value); the pod writes it to a file."""


@dataclass(frozen=True)
class Pvc:
    name: str
    claim: str
    path: str


@dataclass(frozen=True)
class KubernetesSite:
    """The profile's site values (``kubernetes:`` in the config, see docs/kubernetes.md)."""

    namespace: str = "default"
    api: str = "trainjob"
    runtime: str = "torch-distributed"
    image: str = ""
    queue: str = ""
    shm_gi: int = 64
    pvcs: tuple[Pvc, ...] = ()
    node_selector: dict[str, str] = field(default_factory=dict)
    tolerations: tuple[dict[str, Any], ...] = ()
    gpu_resource: str = "nvidia.com/gpu"
    llmbench_src: str = ""
    keep: bool = False
    poll_s: float = LAUNCHER_TRAITS["kubernetes"].poll_s
    context: str = ""

    @classmethod
    def from_config(cls, data: Mapping[str, Any]) -> KubernetesSite:
        values = dict(data)
        api = values.get("api", cls.api)
        if api not in APIS:
            raise LaunchError(f"kubernetes.api={api!r}: allowed: {', '.join(APIS)}")
        pvcs = parse_pvcs(values.pop("pvcs", []) or [], "kubernetes")
        values["tolerations"] = tuple(values.get("tolerations") or ())
        values["node_selector"] = dict(values.get("node_selector") or {})
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(values) - known)
        if unknown:
            raise LaunchError(f"kubernetes.{unknown[0]}: unknown key; allowed: {sorted(known)}")
        return cls(pvcs=pvcs, **values)


def parse_pvcs(entries: list[str], key: str) -> tuple[Pvc, ...]:
    """``name:/mount/path:claimName`` entries (the spec's RUN_CONF_MOUNTS form)."""
    pvcs = []
    for entry in entries:
        parts = str(entry).split(":")
        if len(parts) != 3 or not all(parts) or not parts[1].startswith("/"):
            raise LaunchError(f"{key}.pvcs: {entry!r}; allowed: name:/mount/path:claimName")
        pvcs.append(Pvc(name=parts[0], path=parts[1], claim=parts[2]))
    return tuple(pvcs)


def workload_name(spec: RunSpec, attempt: int) -> str:
    """A DNS-1035 label (<= 63 chars): lower case, '-' only; unique per run and attempt."""
    base = spec.run_id.replace("_", "-").replace(".", "-")
    suffix = f"-a{attempt}"
    return (base[: 63 - len(suffix)].rstrip("-") + suffix).lower()


def image_for(spec: RunSpec, site: KubernetesSite) -> str:
    """The workload's container image; the embedded workload runs in the site's image."""
    image = site.image or spec.image
    if not image:
        raise LaunchError(
            f"run {spec.run_id}: kubernetes.image is not set and the workload names no "
            "image; allowed: a registry image with Python, torch and llmbench"
        )
    return image


def node_command(spec: RunSpec, llmbench_src: str, launcher: str) -> list[str]:
    """What each node's container runs: write the spec, then torchrun over the node's
    ranks. ``launcher`` is the torchrun part, shell words already quoted: the Trainer
    sets PET_* variables that torchrun reads; a PyTorchJob sets MASTER_ADDR, MASTER_PORT
    and RANK (the pod index). Every value from the profile is quoted (``join``)."""
    lines = [
        "set -euo pipefail",
        'cd "$(mktemp -d)"',
        f'printf "%s" "${SPEC_ENV}" > {SPEC_FILE}',
    ]
    threads = omp_threads(spec)
    if threads is not None:
        lines.append(f"export OMP_NUM_THREADS={threads}")
    if llmbench_src:
        lines.append(f'export PYTHONPATH={join([llmbench_src])}"${{PYTHONPATH:+:$PYTHONPATH}}"')
    lines.append(f"exec {launcher} {join(['-m', entry_module(spec), '--spec', SPEC_FILE])}")
    script = "\n".join(lines)
    return ["bash", "-c", script]


def spec_json(spec: RunSpec) -> str:
    return json.dumps(spec.to_dict(), sort_keys=True, separators=(",", ":"))


def pod_environment(spec: RunSpec) -> list[dict[str, str]]:
    """The container's environment: the run spec, then the reference's environment for
    the ranks (the same list srun's ranks get, ``rank_environment``)."""
    env = [(SPEC_ENV, spec_json(spec)), *rank_environment(spec)]
    return [{"name": name, "value": value} for name, value in env]


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
    if spec.gpu_type == "cpu":  # the embedded workload: CPU ranks, no GPU request
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
    env = pod_environment(spec)
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


def explicit_torchrun(spec: RunSpec) -> str:
    """torchrun for a PyTorch operator's pods: MASTER_ADDR, MASTER_PORT and RANK (the pod
    index) come from the operator."""
    head = ["python3", "-m", "torch.distributed.run", f"--nnodes={spec.nodes}"]
    head.append(f"--nproc-per-node={spec.gpus_per_node}")
    node = ' --node-rank="$RANK" --master-addr="$MASTER_ADDR" --master-port="$MASTER_PORT"'
    return join(head) + node


def render_pytorchjob(spec: RunSpec, site: KubernetesSite, name: str) -> dict[str, Any]:
    torchrun = explicit_torchrun(spec)
    volumes, mounts = _volumes(site)
    metadata = _metadata(spec, site, name)

    def replica(count: int) -> dict[str, Any]:
        container = {
            "name": "pytorch",  # the operator looks the training container up by this name
            "image": image_for(spec, site),
            "command": node_command(spec, site.llmbench_src, torchrun),
            "env": pod_environment(spec),
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
        "llmbench.launch.kubernetes",
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


# --- outcomes: pod and job conditions -> llmbench reasons ---------------------------------

IMAGE_ERRORS = frozenset(
    {"ImagePullBackOff", "ErrImagePull", "InvalidImageName", "ErrImageNeverPull"}
)
INFRA_POD_REASONS = {"Evicted": "preempted", "Preempting": "preempted", "NodeLost": "node_failure"}


@dataclass(frozen=True)
class Verdict:
    """Where a workload stands: ``state`` pending | running | succeeded | failed, and for a
    failure the llmbench reason (``attempts.INFRA_REASONS`` ones are retried)."""

    state: str
    reason: str = ""
    detail: str = ""


def job_verdict(obj: Mapping[str, Any], pods: Sequence[Mapping[str, Any]]) -> Verdict:
    """The state of a TrainJob or PyTorchJob from its conditions and its pods' statuses.

    Pod facts win over the job's generic Failed: an evicted or OOM-killed pod names the
    cause. A pod that cannot pull its image never ends by itself, so it is a failure at once.
    """
    for pod in pods:
        status = pod.get("status") or {}
        reason = status.get("reason") or ""
        if status.get("phase") == "Failed" and reason in INFRA_POD_REASONS:
            return Verdict("failed", INFRA_POD_REASONS[reason], status.get("message", reason))
        for cs in status.get("containerStatuses") or []:
            state = cs.get("state") or {}
            waiting = (state.get("waiting") or {}).get("reason", "")
            if waiting in IMAGE_ERRORS:
                return Verdict("failed", "container_error", waiting)
            terminated = state.get("terminated") or {}
            if terminated.get("reason") == "OOMKilled":
                return Verdict("failed", "host_oom", "OOMKilled")
    conditions = {
        c.get("type"): c
        for c in (obj.get("status") or {}).get("conditions") or []
        if c.get("status") == "True"
    }
    for kind in ("Failed",):
        if kind in conditions:
            cond = conditions[kind]
            why = cond.get("reason", "")
            if why == "DeadlineExceeded" or "deadline" in cond.get("message", "").lower():
                return Verdict("failed", "time_limit", cond.get("message", why))
            return Verdict("failed", "job_failed", cond.get("message", why))
    if "Complete" in conditions or "Succeeded" in conditions:
        return Verdict("succeeded")
    if any((p.get("status") or {}).get("phase") == "Running" for p in pods):
        return Verdict("running")
    return Verdict("pending")


def rank0_pod(pods: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The pod of node 0: the Trainer's job completion index 0, or PyTorchJob's master."""

    def key(pod: Mapping[str, Any]) -> tuple[int, str]:
        meta = pod.get("metadata") or {}
        labels, annotations = meta.get("labels") or {}, meta.get("annotations") or {}
        index = annotations.get("batch.kubernetes.io/job-completion-index") or labels.get(
            "batch.kubernetes.io/job-completion-index"
        )
        master = labels.get("training.kubeflow.org/replica-type", "").lower() == "master"
        rank = 0 if master or index == "0" else 1
        return rank, meta.get("name", "")

    return min(pods, key=key) if pods else None


# --- submit and wait (the real API, through the kubernetes client) ------------------------


def pod_log(core: Any, name: str, namespace: str, **options: Any) -> str:
    """A pod's whole log as text: the raw response body, decoded here (the client's own
    deserialisation of a log turns bytes into their repr on some versions)."""
    response = core.read_namespaced_pod_log(name, namespace, _preload_content=False, **options)
    return response.data.decode("utf-8", "replace")


class _Watcher:
    def __init__(self, manifest: dict[str, Any], context: str | None) -> None:
        # the kubernetes client loads slowly: only the submitting job needs it
        from kubernetes import client, config

        settings = client.Configuration()  # not the process-wide default: one per watcher
        # KUBECONFIG read now: the client reads it once, at import
        config.load_kube_config(
            config_file=os.environ.get("KUBECONFIG"),
            context=context or None,
            client_configuration=settings,
        )
        self.api = client.ApiClient(settings)
        self.custom = client.CustomObjectsApi(self.api)
        self.core = client.CoreV1Api(self.api)
        self.manifest = manifest
        meta = manifest["metadata"]
        self.name, self.namespace = meta["name"], meta["namespace"]
        group, version = manifest["apiVersion"].split("/")
        plural = {k[3]: k[2] for k in APIS.values()}[manifest["kind"]]
        self.target = (group, version, self.namespace, plural)
        self.selector = f"{RUN_LABEL}={meta['labels'][RUN_LABEL]}"
        self.log_chars = 0

    def submit(self) -> None:
        self.custom.create_namespaced_custom_object(*self.target, self.manifest)

    def get(self) -> dict[str, Any]:
        return self.custom.get_namespaced_custom_object(*self.target, self.name)

    def pods(self) -> list[dict[str, Any]]:
        listed = self.core.list_namespaced_pod(self.namespace, label_selector=self.selector)
        return [self.api.sanitize_for_serialization(p) for p in listed.items]

    def copy_log(self, pod: Mapping[str, Any] | None) -> None:
        """Append what the rank-0 pod logged since the last call to stdout."""
        if pod is None:
            return
        # the kubernetes client loads slowly: only the submitting job needs it
        from kubernetes.client.rest import ApiException

        try:
            text = pod_log(
                self.core, pod["metadata"]["name"], self.namespace, container=_container_name(pod)
            )
        except ApiException:
            return  # not started yet, or gone
        if len(text) > self.log_chars:
            sys.stdout.write(text[self.log_chars :])
            sys.stdout.flush()
            self.log_chars = len(text)

    def delete(self) -> None:
        # the kubernetes client loads slowly: only the submitting job needs it
        from kubernetes.client.rest import ApiException

        with contextlib.suppress(ApiException):  # already gone
            self.custom.delete_namespaced_custom_object(*self.target, self.name)


def _container_name(pod: Mapping[str, Any]) -> str:
    names = [c.get("name") for c in (pod.get("spec") or {}).get("containers") or []]
    return "pytorch" if "pytorch" in names else (names[0] if names else CONTAINER)


def submit_and_wait(
    manifest: dict[str, Any],
    record: Path,
    progress: Path,
    poll_s: float,
    keep: bool = False,
    context: str | None = None,
) -> int:
    """Submit, wait with back-off polling, copy the rank-0 log; 0 when it succeeded."""
    watcher = _Watcher(manifest, context)
    workload_id = f"{watcher.namespace}/{watcher.name}"
    with open(progress, "a") as out:

        def note(text: str) -> None:
            out.write(f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} {text}\n")
            out.flush()

        def stop(signum: int, _frame: object) -> None:
            note(f"signal {signum}: deleting {workload_id}")
            watcher.delete()
            raise SystemExit(128 + signum)

        signal.signal(signal.SIGTERM, stop)
        watcher.submit()
        note(f"submitted {manifest['kind']} {workload_id}")
        write_record(record, {"workload_id": workload_id, "state": "submitted"})
        delay, state = min(2.0, poll_s), ""
        while True:
            verdict = job_verdict(watcher.get(), pods := watcher.pods())
            if verdict.state != state:
                note(f"state {verdict.state} {verdict.reason} {verdict.detail}".rstrip())
                state, delay = verdict.state, min(2.0, poll_s)
            if verdict.state in ("running", "succeeded", "failed"):
                watcher.copy_log(rank0_pod(pods))
            if verdict.state in ("succeeded", "failed"):
                break
            time.sleep(delay)
            delay = min(delay * 1.5, poll_s)  # back off while nothing changes
        write_record(
            record,
            {
                "workload_id": workload_id,
                "state": verdict.state,
                "failure_reason": verdict.reason,
                "detail": verdict.detail,
            },
        )
        if not keep:
            watcher.delete()
            note(f"deleted {workload_id}")
    return 0 if verdict.state == "succeeded" else 1


def write_record(path: Path, data: Mapping[str, Any]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(dict(data), indent=2, sort_keys=True) + "\n")
    tmp.replace(path)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m llmbench.launch.kubernetes")
    parser.add_argument("--manifest", type=Path, required=True)
    parser.add_argument("--record", type=Path, required=True)
    parser.add_argument("--progress", type=Path, required=True)
    parser.add_argument("--poll-s", type=float, default=10.0)
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--context", default="")
    args = parser.parse_args(argv)
    manifest = load_yaml_text(args.manifest.read_text(), str(args.manifest))
    return submit_and_wait(
        manifest, args.record, args.progress, args.poll_s, args.keep, args.context
    )


if __name__ == "__main__":
    sys.exit(main())
