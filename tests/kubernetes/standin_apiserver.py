"""A STAND-IN for the Kubernetes API server and the Run:ai control plane, for tests only:
neither can run here. It listens on 127.0.0.1 and implements just what llmbench's clients
call, answering with the JSON shapes of the real APIs, so the real clients are exercised:

- Kubernetes (the ``kubernetes`` client): create/get/delete a custom object, list pods by
  label, read a pod's log;
- Run:ai (``llmbench.launch.runai``, under ``/api/v1``): ``POST /token`` (checks the
  Application id and secret), ``GET /org-unit/projects``, ``POST /workloads/distributed``,
  ``GET /workloads/{id}``, ``GET /workloads/{id}/pods``, ``DELETE
  /workloads/distributed/{id}``; the pods' logs through the Kubernetes routes.

Each created workload follows a scripted scenario, chosen per run id in creation order:

- ``succeed``: pending, then running: the stand-in acts as the kubelet of node 0 and runs
  the manifest's own container command on this machine (so the log served is a real log
  of the embedded trainer), then Succeeded/Failed by that process's exit status;
- ``evicted``: pending, running, then the pod is Failed with reason Evicted;
- ``oomkilled``: the container terminated with reason OOMKilled;
- ``imagepull``: the pod waits in ImagePullBackOff;
- ``deadline``: the job fails with reason DeadlineExceeded.
"""

from __future__ import annotations

import json
import os
import shlex
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import yaml

LABEL = "llmbench.io/workload"
RUN_LABEL = "llmbench.io/run-id"
RUNAI_TOKEN = "standin-access-token"
RUNAI_PROJECT = {"name": "bench", "id": "1001", "clusterId": "c0ffee00-0000-4000-8000-000000000001"}
RUNAI_NAMESPACE = "runai-bench"


@dataclass
class Workload:
    obj: dict[str, Any]
    scenario: str
    polls: int = 0
    proc: subprocess.Popen | None = None
    log_path: Path | None = None
    deleted: bool = False
    log: str = ""

    @property
    def name(self) -> str:
        return self.obj["metadata"]["name"] if "metadata" in self.obj else self.obj["name"]

    @property
    def runai(self) -> bool:
        return "metadata" not in self.obj


@dataclass
class StandInApiServer:
    """Start with ``start()``; ``kubeconfig(path)`` writes a kubeconfig pointing here."""

    workdir: Path
    scenarios: Mapping[str, list[str]] = field(default_factory=dict)
    pending_polls: int = 1
    runai_app: tuple[str, str] = ("", "")
    """(Application id, secret) that ``POST /token`` accepts."""
    workloads: dict[str, Workload] = field(default_factory=dict)
    requests: list[tuple[str, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self) -> StandInApiServer:
        handler = type("Handler", (_Handler,), {"server_state": self})
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        for w in self.workloads.values():
            if w.proc is not None and w.proc.poll() is None:
                w.proc.kill()
                w.proc.wait()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def kubeconfig(self, path: Path) -> Path:
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "standin", "cluster": {"server": self.url}}],
            "users": [{"name": "standin", "user": {"token": "standin-token"}}],
            "contexts": [{"name": "standin", "context": {"cluster": "standin", "user": "standin"}}],
            "current-context": "standin",
        }
        path.write_text(yaml.safe_dump(config))
        return path

    # --- the scripted cluster ---------------------------------------------------------

    def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        run_id = _run_id_of(obj)
        with self.lock:
            queue = self.scenarios.get(run_id, [])
            done = sum(1 for w in self.workloads.values() if _run_id(w) == run_id)
            scenario = queue[done] if done < len(queue) else "succeed"
            if "metadata" in obj:
                obj["metadata"]["uid"] = f"uid-{len(self.workloads)}"
                obj["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00Z"
            else:
                obj["id"] = f"0000{len(self.workloads):04d}-0000-4000-8000-000000000000"
            self.workloads[Workload(obj, scenario).name] = Workload(obj, scenario)
        return obj

    def advance(self, w: Workload) -> None:
        """One step of the scenario per GET of the workload."""
        w.polls += 1
        if w.polls <= self.pending_polls or w.deleted:
            return
        if w.scenario == "succeed" and w.proc is None:
            self._run_node0(w)

    def _run_node0(self, w: Workload) -> None:
        container, env = _node0(w.obj)
        bindir = self.workdir / "bin"
        bindir.mkdir(exist_ok=True)
        python3 = bindir / "python3"
        if not python3.exists():
            # A script, not a symlink: a symlinked venv interpreter loses its venv (Python
            # finds pyvenv.cfg beside the path it was started by), and with it llmbench.
            python3.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} "$@"\n')
            python3.chmod(0o755)
        port = _free_port()
        env.update(
            PATH=f"{bindir}{os.pathsep}{os.environ['PATH']}",
            PYTHONPATH=os.environ.get("PYTHONPATH", ""),
            TMPDIR=tempfile.mkdtemp(dir=self.workdir),
            PET_NODE_RANK="0",
            PET_MASTER_ADDR="127.0.0.1",
            PET_MASTER_PORT=str(port),
            MASTER_ADDR="127.0.0.1",
            MASTER_PORT=str(port),
            RANK="0",
        )
        w.log_path = self.workdir / f"{w.name}.log"
        with open(w.log_path, "wb") as out:
            w.proc = subprocess.Popen(
                container["command"], stdout=out, stderr=subprocess.STDOUT, env=env
            )

    def object_status(self, w: Workload) -> dict[str, Any]:
        ok = "Complete" if w.obj["kind"] == "TrainJob" else "Succeeded"
        phase = self.pod_phase(w)
        if phase == "Succeeded":
            return {"conditions": [_cond(ok, "Completed")]}
        if phase == "Failed" or (w.scenario == "deadline" and w.polls > self.pending_polls):
            reason = "DeadlineExceeded" if w.scenario == "deadline" else "Failed"
            return {"conditions": [_cond("Failed", reason, f"job failed: {reason}")]}
        return {"conditions": [_cond("Created", "Created")]}

    def pod_phase(self, w: Workload) -> str:
        if w.polls <= self.pending_polls or w.scenario in ("imagepull", "deadline"):
            return "Pending"
        if w.scenario in ("evicted", "oomkilled"):
            return "Failed" if w.polls > self.pending_polls + 1 else "Running"
        if w.proc is None or w.proc.poll() is None:
            return "Running"
        return "Succeeded" if w.proc.returncode == 0 else "Failed"

    def pods(self, selector: str) -> list[dict[str, Any]]:
        key, _, value = selector.partition("=")
        out = []
        for w in list(self.workloads.values()):
            if key != LABEL or value != w.name or w.polls == 0 or w.deleted:
                continue
            out.append(self.pod(w))
        return out

    def pod(self, w: Workload) -> dict[str, Any]:
        phase = self.pod_phase(w)
        status: dict[str, Any] = {"phase": phase}
        state: dict[str, Any] = {"running": {}}
        if w.scenario == "imagepull":
            state = {"waiting": {"reason": "ImagePullBackOff", "message": "back-off pulling"}}
        elif w.scenario == "evicted" and phase == "Failed":
            status.update(reason="Evicted", message="The node was low on resource: memory.")
        elif w.scenario == "oomkilled" and phase == "Failed":
            state = {"terminated": {"reason": "OOMKilled", "exitCode": 137}}
        elif phase in ("Succeeded", "Failed") and w.proc is not None:
            state = {"terminated": {"exitCode": w.proc.returncode, "reason": "Completed"}}
        container, _ = _node0(w.obj)
        status["containerStatuses"] = [
            {
                "name": container["name"],
                "image": container["image"],
                "imageID": "",
                "ready": phase == "Running",
                "restartCount": 0,
                "state": state,
            }
        ]
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"{w.name}-master-0" if w.runai else f"{w.name}-node-0-0",
                "namespace": RUNAI_NAMESPACE if w.runai else w.obj["metadata"]["namespace"],
                "labels": {LABEL: w.name},
                "annotations": {"batch.kubernetes.io/job-completion-index": "0"},
            },
            "spec": {"containers": [{"name": container["name"], "image": container["image"]}]},
            "status": status,
        }

    def runai_workload(self, w: Workload) -> dict[str, Any]:
        """``GET /workloads/{id}``: the Run:ai phase and message of the scenario."""
        phase = {"Pending": "Pending", "Running": "Running", "Succeeded": "Completed"}.get(
            self.pod_phase(w), "Failed"
        )
        message = ""
        if phase == "Failed":
            message = {
                "evicted": "Pod was evicted: the node was low on resource: memory",
                "oomkilled": "container pytorch terminated: OOMKilled",
            }.get(w.scenario, "job failed")
        if w.scenario == "deadline" and w.polls > self.pending_polls:
            phase, message = "Failed", "Job was active longer than specified deadline"
        return {"id": w.obj["id"], "name": w.name, "phase": phase, "phaseMessage": message,
                "projectName": RUNAI_PROJECT["name"], "namespace": RUNAI_NAMESPACE}  # fmt: skip

    def runai_pods(self, w: Workload) -> dict[str, Any]:
        if w.polls == 0 or w.deleted:
            return {"pods": []}
        pod = self.pod(w)
        waiting = pod["status"]["containerStatuses"][0]["state"].get("waiting", {})
        return {"pods": [{"name": pod["metadata"]["name"], "namespace": RUNAI_NAMESPACE,
                          "workloadId": w.obj["id"], "k8sPhase": pod["status"]["phase"],
                          "status": waiting.get("reason", pod["status"]["phase"])}]}  # fmt: skip

    def by_id(self, workload_id: str) -> Workload | None:
        return next((w for w in self.workloads.values() if w.obj.get("id") == workload_id), None)

    def pod_log(self, w: Workload) -> str:
        if w.log_path is None or not w.log_path.exists():
            return "" if self.pod_phase(w) != "Pending" else None  # type: ignore[return-value]
        return w.log_path.read_text(errors="replace")


def _run_id_of(obj: Mapping[str, Any]) -> str:
    if "metadata" in obj:
        return obj["metadata"]["labels"][RUN_LABEL]
    env = {e["name"]: e["value"] for e in obj["spec"]["environmentVariables"]}
    return json.loads(env["LLMBENCH_RUN_SPEC"])["run_id"]


def _run_id(w: Workload) -> str:
    return _run_id_of(w.obj)


def _cond(kind: str, reason: str, message: str = "") -> dict[str, str]:
    return {"type": kind, "status": "True", "reason": reason, "message": message}


def _node0(obj: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """(container, env) of node 0, with the variables the operator would inject."""
    if "metadata" not in obj:  # a Run:ai payload: command "bash", args "-c <script>"
        spec = obj["spec"]
        command = [spec["command"], *shlex.split(spec["args"])]
        env = {e["name"]: e["value"] for e in spec["environmentVariables"]}
        return {"name": obj["name"], "image": spec["image"], "command": command}, env
    if obj["kind"] == "TrainJob":
        trainer = obj["spec"]["trainer"]
        container = {"name": "node", **trainer}
        env = {e["name"]: e["value"] for e in trainer.get("env", [])}
        env.update(
            PET_NNODES=str(trainer["numNodes"]), PET_NPROC_PER_NODE=str(trainer["numProcPerNode"])
        )
        return container, env
    master = obj["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]
    return dict(master), {e["name"]: e["value"] for e in master.get("env", [])}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _Handler(BaseHTTPRequestHandler):
    server_state: StandInApiServer

    def log_message(self, *_: object) -> None:  # quiet
        pass

    def _send(self, code: int, body: Any, content_type: str = "application/json") -> None:
        data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _not_found(self, what: str) -> None:
        self._send(404, {"kind": "Status", "status": "Failure", "reason": "NotFound",
                         "message": f"{what} not found", "code": 404})  # fmt: skip

    def _route(self) -> tuple[list[str], dict[str, list[str]]]:
        url = urlparse(self.path)
        self.server_state.requests.append((self.command, url.path))
        return url.path.strip("/").split("/"), parse_qs(url.query)

    def _runai_authorized(self) -> bool:
        if self.headers.get("Authorization") == f"Bearer {RUNAI_TOKEN}":
            return True
        self._send(401, {"code": 401, "message": "unauthorized"})
        return False

    def do_POST(self) -> None:
        parts, _ = self._route()
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        state = self.server_state
        if parts == ["api", "v1", "token"]:
            app = (body.get("appId"), body.get("appSecret"))
            if body.get("grantType") != "app_token" or app != state.runai_app:
                return self._send(401, {"code": 401, "message": "invalid application"})
            return self._send(200, {"accessToken": RUNAI_TOKEN})
        if parts == ["api", "v1", "workloads", "distributed"]:
            if not self._runai_authorized():
                return None
            if body.get("projectId") != RUNAI_PROJECT["id"]:
                return self._send(400, {"code": 400, "message": "unknown project"})
            w = state.create(body)
            return self._send(202, {"workloadId": w["id"], "name": w["name"],
                                    "actualPhase": "Creating"})  # fmt: skip
        if len(parts) == 6 and parts[0] == "apis" and parts[3] == "namespaces":
            self._send(201, self.server_state.create(body))
        else:
            self._not_found("/".join(parts))

    def do_GET(self) -> None:
        state = self.server_state
        parts, query = self._route()
        if parts[:3] == ["api", "v1", "org-unit"] or parts[:3] == ["api", "v1", "workloads"]:
            if not self._runai_authorized():
                return None
            if parts[2] == "org-unit":
                return self._send(200, {"projects": [RUNAI_PROJECT]})
            w = state.by_id(parts[3]) if len(parts) > 3 else None
            if w is None or w.deleted:
                return self._not_found("/".join(parts))
            if len(parts) == 5 and parts[4] == "pods":
                return self._send(200, state.runai_pods(w))
            state.advance(w)
            return self._send(200, state.runai_workload(w))
        if len(parts) == 7 and parts[0] == "apis":
            w = state.workloads.get(parts[6])
            if w is None or w.deleted:
                return self._not_found(parts[6])
            state.advance(w)
            return self._send(200, {**w.obj, "status": state.object_status(w)})
        if parts[:2] == ["api", "v1"] and len(parts) == 5 and parts[4] == "pods":
            items = state.pods(query.get("labelSelector", [""])[0])
            return self._send(
                200, {"apiVersion": "v1", "kind": "PodList", "metadata": {}, "items": items}
            )
        if parts[:2] == ["api", "v1"] and len(parts) == 7 and parts[6] == "log":
            for w in state.workloads.values():
                if parts[5] == state.pod(w)["metadata"]["name"]:
                    text = state.pod_log(w)
                    if text is None:
                        waiting = {"kind": "Status", "code": 400, "message": "waiting to start"}
                        return self._send(400, waiting)
                    return self._send(200, text, "text/plain")
        return self._not_found("/".join(parts))

    def do_DELETE(self) -> None:
        parts, _ = self._route()
        if parts[:4] == ["api", "v1", "workloads", "distributed"] and not self._runai_authorized():
            return None
        if parts[0] == "apis":
            w = self.server_state.workloads.get(parts[-1])
        else:
            w = self.server_state.by_id(parts[-1])
        if w is None or w.deleted:
            return self._not_found(parts[-1])
        w.deleted = True
        if w.proc is not None and w.proc.poll() is None:
            w.proc.terminate()
        return self._send(200, {"kind": "Status", "apiVersion": "v1", "status": "Success"})
