"""The ``runai`` launcher: one Run:ai distributed PyTorch workload per run attempt, through
the Run:ai REST API (the control plane at ``base_url``, ``https://<host>/api/v1``).

The calls are the ones nemo-run's Run:ai executor (``DGXCloudExecutor``) makes for the
spec's recipes: ``POST /token`` (grant ``app_token`` with the Application's id and
secret), ``GET /org-unit/projects`` (project and cluster ids by project name),
``POST /workloads/distributed``, ``GET /workloads/{id}`` (its ``phase``) and ``DELETE
/workloads/distributed/{id}``. The payload carries the run spec and the node command
itself, so no data-mover workload is needed. The rank-0 log is read from the Kubernetes
API of the Run:ai cluster (the kubeconfig the Run:ai set-up gives), for the pod that
``GET /workloads/{id}/pods`` names.

The Application secret is read from the environment variable the profile names
(``secret_env``) when the token is requested; it is never written to a file, a log line
or an error message.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import signal
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from llmbench.core.devices import device
from llmbench.core.platform_site import DEFAULT_SECRET_ENV, RunaiSite
from llmbench.core.run_folder import PAYLOAD as PAYLOAD_FILE
from llmbench.core.run_folder import PLATFORM as PLATFORM_FILE
from llmbench.core.run_folder import PLATFORM_LOG as PROGRESS_FILE
from llmbench.core.runspec import RunSpec
from llmbench.errors import LaunchError
from llmbench.launch.pods import (
    explicit_torchrun,
    node_command,
    pod_environment,
    pod_log,
    workload_name,
    write_record,
)
from llmbench.launch.shell import join

FAILED_PHASES = frozenset({"Failed", "Stopped"})
DONE_PHASES = frozenset({"Completed", "Succeeded"})
REASON_WORDS = (
    ("evict", "preempted"),
    ("preempt", "preempted"),
    ("oomkilled", "host_oom"),
    ("imagepull", "container_error"),
    ("errimagepull", "container_error"),
    ("deadline", "time_limit"),
    ("node lost", "node_failure"),
)
"""Words of a workload's phase message or a pod's state -> llmbench reason (first wins)."""


def render_payload(spec: RunSpec, site: RunaiSite, attempt: int) -> dict[str, Any]:
    """The body of ``POST /workloads/distributed`` without the project and cluster ids,
    which the submit script resolves by project name."""
    if spec.variant != "perf":
        raise LaunchError(
            f"run {spec.run_id}: variant={spec.variant!r} on launcher runai; allowed: perf"
        )
    image = site.image or spec.image
    if not image:
        raise LaunchError(
            f"run {spec.run_id}: runai.image is not set and the workload names no image; "
            "allowed: a registry image with Python, torch and llmbench"
        )
    _, _, script = node_command(spec, site.llmbench_src, explicit_torchrun(spec))
    compute: dict[str, Any] = {"largeShmRequest": True}
    if not device(spec.gpu_type).has_gpus:
        compute["cpuCoreRequest"] = spec.gpus_per_node * spec.threads_per_rank
    else:
        compute["gpuDevicesRequest"] = spec.gpus_per_node
    return {
        "name": workload_name(spec, attempt),
        "useGivenNameAsPrefix": False,
        "spec": {
            "image": image,
            "command": "bash",
            "args": "-c " + shlex.quote(script),
            "distributedFramework": "PyTorch",
            "minReplicas": spec.nodes,
            "maxReplicas": spec.nodes,
            "numWorkers": spec.nodes - 1,  # plus the master: one pod per node
            "compute": compute,
            "storage": {
                "pvc": [
                    {"name": p.name, "path": p.path, "claimName": p.claim, "existingPvc": True}
                    for p in site.pvcs
                ]
            },
            "environmentVariables": pod_environment(spec, site.hf_home),
        },
    }


def render_payload_json(spec: RunSpec, site: RunaiSite, attempt: int) -> str:
    return json.dumps(render_payload(spec, site, attempt), indent=2) + "\n"


def render_submit_script(header: list[str], site: RunaiSite) -> str:
    """launch.sh: submit ``payload.json``, wait, copy the rank-0 log to stdout."""
    args = ["-m", "llmbench.launch.runai", "--payload", PAYLOAD_FILE]
    args += ["--record", PLATFORM_FILE, "--progress", PROGRESS_FILE]
    # Each profile value one word with its option: a value starting with '-' stays a value.
    args += [f"--base-url={site.base_url}", f"--app-id={site.app_id}"]
    args += [f"--project={site.project}", f"--secret-env={site.secret_env}"]
    args.append(f"--poll-s={site.poll_s:g}")
    if site.keep:
        args.append("--keep")
    if site.context:
        args.append(f"--context={site.context}")
    return "\n".join(
        [
            *header,
            f"# The Application secret is read from ${site.secret_env} (by name; never written).",
            f': "${{{site.secret_env}:?set {site.secret_env} to the Run:ai Application secret}}"',
            f'exec "$PYTHON" {join(args)}',
            "",
        ]
    )


def phase_verdict(
    workload: Mapping[str, Any], pods: Sequence[Mapping[str, Any]]
) -> tuple[str, str]:
    """(state, reason): state pending | running | succeeded | failed."""
    phase = str(workload.get("phase") or workload.get("actualPhase") or "")
    words = " ".join(
        [str(workload.get("phaseMessage", ""))]
        + [json.dumps(c) for c in workload.get("conditions") or []]
        + [json.dumps(p) for p in pods]
    ).lower()
    reason = next((r for word, r in REASON_WORDS if word in words), "")
    if phase in DONE_PHASES:
        return "succeeded", ""
    if phase in FAILED_PHASES:
        return "failed", reason or ("cancelled" if phase == "Stopped" else "job_failed")
    if reason == "container_error":  # an image that cannot be pulled never starts
        return "failed", reason
    return ("running", "") if phase == "Running" else ("pending", "")


class RunaiClient:
    """The Run:ai control-plane calls (stdlib HTTP). The token is kept in memory only."""

    def __init__(self, base_url: str, app_id: str, secret_env: str) -> None:
        self.base_url = base_url.rstrip("/")
        self.app_id = app_id
        self.secret_env = secret_env
        self._token = ""

    def _call(self, method: str, path: str, body: Any = None, auth: bool = True) -> Any:
        data = None if body is None else json.dumps(body).encode()
        headers = {"Accept": "application/json", "Content-Type": "application/json"}
        for attempt in range(2):
            if auth:
                headers["Authorization"] = f"Bearer {self._token or self._new_token()}"
            request = urllib.request.Request(
                self.base_url + path, data=data, method=method, headers=headers
            )
            try:
                with urllib.request.urlopen(request, timeout=60) as response:
                    text = response.read().decode()
                    return json.loads(text) if text.strip() else {}
            except urllib.error.HTTPError as err:
                if err.code == 401 and auth and attempt == 0:
                    self._token = ""  # expired: one new token, once
                    continue
                # the URL and status only: a body could echo what was sent
                raise LaunchError(f"Run:ai {method} {path}: HTTP {err.code}") from None
        raise AssertionError("unreachable")

    def _new_token(self) -> str:
        secret = os.environ.get(self.secret_env, "")
        if not secret:
            raise LaunchError(f"${self.secret_env} is empty; set it to the Application secret")
        body = {"grantType": "app_token", "appId": self.app_id, "appSecret": secret}
        answer = self._call("POST", "/token", body, auth=False)
        self._token = str(answer.get("accessToken") or "")
        if not self._token:
            raise LaunchError("Run:ai POST /token: no accessToken in the answer")
        return self._token

    def project_and_cluster(self, project: str) -> tuple[str, str]:
        for entry in self._call("GET", "/org-unit/projects").get("projects", []):
            if entry.get("name") == project:
                return str(entry["id"]), str(entry["clusterId"])
        raise LaunchError(f"runai.project={project!r}: no such project for this Application")

    def submit(self, payload: Mapping[str, Any]) -> str:
        return str(self._call("POST", "/workloads/distributed", dict(payload))["workloadId"])

    def workload(self, workload_id: str) -> dict[str, Any]:
        return self._call("GET", f"/workloads/{workload_id}")

    def pods(self, workload_id: str) -> list[dict[str, Any]]:
        return list(self._call("GET", f"/workloads/{workload_id}/pods").get("pods", []))

    def delete(self, workload_id: str) -> None:
        with contextlib.suppress(LaunchError):  # already gone
            self._call("DELETE", f"/workloads/distributed/{workload_id}")


def _rank0(pods: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    masters = [p for p in pods if "master" in str(p.get("name", ""))]
    ordered = sorted(masters or pods, key=lambda p: str(p.get("name", "")))
    return ordered[0] if ordered else None


class _LogCopier:
    """Appends what the rank-0 pod logged since the last call to stdout (Kubernetes API)."""

    def __init__(self, context: str) -> None:
        # the kubernetes client loads slowly: only the submitting job needs it
        from kubernetes import client, config

        settings = client.Configuration()
        self.chars = 0
        try:
            config.load_kube_config(
                config_file=os.environ.get("KUBECONFIG"),
                context=context or None,
                client_configuration=settings,
            )
        except (config.ConfigException, OSError) as err:
            self.core = None  # no log; the run is judged by its (empty) log: no_data
            print(f"llmbench: no kubeconfig for the Run:ai cluster: {err}", file=sys.stderr)
            return
        self.core = client.CoreV1Api(client.ApiClient(settings))

    def copy(self, pod: Mapping[str, Any] | None) -> None:
        # the kubernetes client loads slowly: only the submitting job needs it
        from kubernetes.client.rest import ApiException

        if self.core is None or pod is None or not pod.get("namespace"):
            return
        try:
            text = pod_log(self.core, pod["name"], pod["namespace"])
        except ApiException:
            return
        if len(text) > self.chars:
            sys.stdout.write(text[self.chars :])
            sys.stdout.flush()
            self.chars = len(text)


def submit_and_wait(
    payload: dict[str, Any],
    client: RunaiClient,
    project: str,
    record: Path,
    progress: Path,
    poll_s: float,
    keep: bool = False,
    context: str = "",
) -> int:
    """Resolve ids, submit, wait with back-off polling, copy the log; 0 when it succeeded."""
    logs = _LogCopier(context)
    with open(progress, "a") as out:

        def note(text: str) -> None:
            out.write(f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} {text}\n")
            out.flush()

        project_id, cluster_id = client.project_and_cluster(project)
        workload_id = client.submit({**payload, "projectId": project_id, "clusterId": cluster_id})
        note(f"submitted distributed workload {payload['name']} id {workload_id}")
        write_record(record, {"workload_id": workload_id, "state": "submitted"})

        def stop(signum: int, _frame: object) -> None:
            note(f"signal {signum}: deleting {workload_id}")
            client.delete(workload_id)
            raise SystemExit(128 + signum)

        signal.signal(signal.SIGTERM, stop)
        delay, last = min(2.0, poll_s), ""
        while True:
            workload, pods = client.workload(workload_id), client.pods(workload_id)
            state, reason = phase_verdict(workload, pods)
            if state != last:
                note(f"state {state} {reason} (phase {workload.get('phase')})".rstrip())
                last, delay = state, min(2.0, poll_s)
            if state != "pending":
                logs.copy(_rank0(pods))
            if state in ("succeeded", "failed"):
                break
            time.sleep(delay)
            delay = min(delay * 1.5, poll_s)
        detail = str(workload.get("phaseMessage", ""))
        write_record(
            record,
            {
                "workload_id": workload_id,
                "state": state,
                "failure_reason": reason,
                "detail": detail,
            },
        )
        if not keep:
            client.delete(workload_id)
            note(f"deleted {workload_id}")
    return 0 if state == "succeeded" else 1


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m llmbench.launch.runai")
    for name in ("payload", "record", "progress"):
        parser.add_argument(f"--{name}", type=Path, required=True)
    for name in ("base-url", "app-id", "project"):
        parser.add_argument(f"--{name}", required=True)
    parser.add_argument("--secret-env", default=DEFAULT_SECRET_ENV)
    parser.add_argument("--poll-s", type=float, default=30.0)
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--context", default="")
    args = parser.parse_args(argv)
    client = RunaiClient(args.base_url, args.app_id, args.secret_env)
    payload = json.loads(args.payload.read_text())
    return submit_and_wait(
        payload, client, args.project, args.record, args.progress, args.poll_s, args.keep,
        args.context,
    )  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
