"""The real ``kubernetes`` client against the API stand-in: submit, wait, log, delete,
and how each platform outcome is reported."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from llmbench.core.config import run_specs, validate_config
from llmbench.core.runspec import RunSpec
from llmbench.launch.kubernetes import render_manifest_yaml
from llmbench.launch.kubernetes_watch import submit_and_wait
from llmbench.parsers import parse_log
from tests.kubernetes.standin_apiserver import StandInApiServer


def embedded_spec(api: str = "trainjob", ranks: int = 1) -> RunSpec:
    config = validate_config(
        {
            "sweeps": [{"workload": "tiny-llama", "sizes": ["tiny"], "dtypes": ["fp32"],
                        "gpu_type": "cpu", "scales": [ranks]}],
            "steps": 12,
            "window": [5, 10],
            "launcher": "kubernetes",
            "kubernetes": {"image": "example/llmbench:test", "api": api, "poll_s": 0.2},
        }
    )  # fmt: skip
    (spec,) = run_specs(config)
    return spec


def submit(standin: StandInApiServer, tmp_path: Path, spec: RunSpec, monkeypatch) -> tuple:
    monkeypatch.setenv("KUBECONFIG", str(standin.kubeconfig(tmp_path / "kubeconfig")))
    site = spec.site
    manifest = yaml.safe_load(render_manifest_yaml(spec, site, attempt=1))
    record, progress = tmp_path / "platform.json", tmp_path / "platform.log"
    code = submit_and_wait(manifest, record, progress, poll_s=0.2, keep=False)
    return code, json.loads(record.read_text()), manifest


@pytest.mark.parametrize(
    ("scenario", "reason"),
    [
        ("evicted", "preempted"),
        ("oomkilled", "host_oom"),
        ("imagepull", "container_error"),
        ("deadline", "time_limit"),
    ],
)
def test_platform_failures_map_to_llmbench_reasons(
    standin, tmp_path, monkeypatch, capsys, scenario, reason
) -> None:
    spec = embedded_spec()
    standin.scenarios = {spec.run_id: [scenario]}
    code, record, manifest = submit(standin, tmp_path, spec, monkeypatch)
    assert code == 1
    assert record["state"] == "failed" and record["failure_reason"] == reason, record
    name = manifest["metadata"]["name"]
    assert record["workload_id"] == f"default/{name}"
    assert (
        "DELETE",
        f"/apis/trainer.kubeflow.org/v1alpha1/namespaces/default/trainjobs/{name}",
    ) in standin.requests


@pytest.mark.parametrize("api", ["trainjob", "pytorchjob"])
def test_a_successful_workload_prints_the_complete_rank0_log(
    standin, tmp_path, monkeypatch, capsys, api
) -> None:
    spec = embedded_spec(api, ranks=2)
    code, record, _ = submit(standin, tmp_path, spec, monkeypatch)
    assert code == 0 and record["state"] == "succeeded", record
    log = tmp_path / "train.log"
    log.write_text(capsys.readouterr().out)
    served = next(iter(standin.workloads.values())).log_path
    assert log.read_text() == served.read_text()  # complete, in order, nothing added
    summary = parse_log(log).summary
    assert (summary.n_iterations, summary.max_iteration) == (12, 11), summary
    methods = {m for m, _ in standin.requests}
    assert methods == {"POST", "GET", "DELETE"}


def test_a_stopped_submit_script_deletes_its_workload(standin, tmp_path) -> None:
    """llmbench's time limit or Snakemake ends launch.sh with SIGTERM: the workload goes too."""
    spec = embedded_spec()
    standin.pending_polls = 10**6  # it never leaves the queue
    (tmp_path / "manifest.yaml").write_text(render_manifest_yaml(spec, spec.site, attempt=1))
    env = dict(os.environ, KUBECONFIG=str(standin.kubeconfig(tmp_path / "kubeconfig")))
    args = ["--manifest", "manifest.yaml", "--record", "platform.json"]
    args += ["--progress", "platform.log", "--poll-s=0.2"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "llmbench.launch.kubernetes_watch", *args], cwd=tmp_path, env=env
    )
    deadline = time.monotonic() + 60
    while not any(w.polls > 1 for w in standin.workloads.values()):
        assert time.monotonic() < deadline and proc.poll() is None, "never submitted"
        time.sleep(0.1)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 128 + signal.SIGTERM
    (workload,) = standin.workloads.values()
    assert workload.deleted
    assert "deleting" in (tmp_path / "platform.log").read_text()
