"""Submit a ``kubernetes`` launcher's manifest and wait for it: what its ``launch.sh`` runs
(``python -m llmbench.launch.kubernetes_watch``). It submits the manifest, waits for a
terminal state, copies the rank-0 pod's log to its stdout (the attempt's ``train.log``) and
writes ``platform.json`` (workload id, state, llmbench failure reason).

The API is reached with the official ``kubernetes`` Python client (not ``kubectl``): it
reads the same kubeconfig, needs no binary on the submit host, and returns structured
conditions and pod statuses that map onto llmbench's reasons without parsing text.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llmbench.core.platform_site import APIS
from llmbench.core.yamlfile import load_yaml_text
from llmbench.launch.kubernetes import CONTAINER, RUN_LABEL, WATCH_MODULE
from llmbench.launch.pods import pod_log, write_record

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


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {WATCH_MODULE}")
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
