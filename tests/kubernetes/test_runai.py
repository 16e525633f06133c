"""Run:ai: the golden payload of the 340B 256-GPU run, and llmbench's REST client against
the stand-in (token, project, submit, phases, log, delete); the secret never leaves."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from llmbench.core.config import run_specs, validate_config
from llmbench.core.runspec import RunSpec
from llmbench.errors import ConfigError
from llmbench.launch.launchers import check_platforms, render_launch_script
from llmbench.launch.runai import RunaiClient, render_payload_json, submit_and_wait
from llmbench.parsers import parse_log
from tests.kubernetes.standin_apiserver import RUNAI_PROJECT, StandInApiServer

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("LLMBENCH_UPDATE_GOLDEN") == "1"
SECRET = "rUnAi-StAnDiN-5ecret-0d9f"
"""A made-up Application secret; tests assert it is found nowhere it was not put."""


def site(base_url: str = "https://runai.example.com/api/v1", **extra: object) -> dict:
    return {"base_url": base_url, "app_id": "llmb-bench", "project": "bench",
            "secret_env": "LLMB_TEST_RUNAI_SECRET", **extra}  # fmt: skip


def spec_for(sweep: dict, runai: dict, **top: object) -> RunSpec:
    config = validate_config({"sweeps": [sweep], "launcher": "runai", "runai": runai, **top})
    (spec,) = run_specs(config)
    check_platforms([spec], source="config")  # as the workflow and `llmbench plan` do
    return spec


def test_340b_256_gpu_payload_matches_golden() -> None:
    sweep = {"workload": "nemotron4-nemo", "sizes": ["340b"], "dtypes": ["fp8"],
             "gpu_type": "h100", "scales": [256]}  # fmt: skip
    pvcs = ["workspace:/nemo2-workspace:nemo2-workspace-project"]
    spec = spec_for(sweep, site(pvcs=pvcs, llmbench_src="/nemo2-workspace/llmbench/src"))
    text = render_payload_json(spec, spec.site, attempt=1)
    path = GOLDEN / f"{spec.run_id}_runai.json"
    if UPDATE:
        path.write_text(text)
    assert text == path.read_text(), f"payload changed; diff against {path}"
    payload = json.loads(text)["spec"]
    assert (payload["minReplicas"], payload["maxReplicas"], payload["numWorkers"]) == (32, 32, 31)
    assert payload["compute"] == {"largeShmRequest": True, "gpuDevicesRequest": 8}
    assert payload["storage"]["pvc"][0]["claimName"] == "nemo2-workspace-project"
    launch = render_launch_script(spec)
    assert "LLMB_TEST_RUNAI_SECRET" in launch and "--secret-env" in launch
    # The reference's Run:ai executor: its env (executors.py@1f422a1 L168-176) and
    # PerfEnvPlugin's; the Slurm executor's allocator setting is not among them.
    env = {e["name"]: e["value"] for e in payload["environmentVariables"]}
    assert json.loads(env.pop("LLMBENCH_RUN_SPEC")) == spec.to_dict()
    assert env == {
        "TORCH_NCCL_AVOID_RECORD_STREAMS": "1", "NCCL_NVLS_ENABLE": "0",
        "NVTE_FLASH_ATTN": "1", "NVTE_FUSED_ATTN": "1", "TRANSFORMERS_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "False", "NEMO_LOG_MEMORY_USAGE": "1",
        "TORCH_NCCL_HIGH_PRIORITY": "1", "CUDA_DEVICE_MAX_CONNECTIONS": "1",
        "NVTE_FWD_LAYERNORM_SM_MARGIN": "16", "NVTE_BWD_LAYERNORM_SM_MARGIN": "16",
        "NCCL_P2P_NET_CHUNKSIZE": "2097152",
    }  # fmt: skip
    assert spec.image == payload["image"] == "nvcr.io/nvidia/nemo:25.09.00"
    assert spec.parity.stack.reference_stack is True
    site_image = spec_for(sweep, site(image="example/llmbench:test"))
    assert site_image.parity.stack.reference_stack is False


def test_missing_site_values_fail_in_one_line_before_submission() -> None:
    sweep = {"workload": "tiny-llama", "sizes": ["tiny"], "dtypes": ["fp32"], "gpu_type": "cpu",
             "scales": [1]}  # fmt: skip
    with pytest.raises(ConfigError, match=r"runai\.project is not set"):
        spec_for(sweep, {k: v for k, v in site().items() if k != "project"})


def embedded(standin: StandInApiServer) -> RunSpec:
    sweep = {"workload": "tiny-llama", "sizes": ["tiny"], "dtypes": ["fp32"], "gpu_type": "cpu",
             "scales": [2]}  # fmt: skip
    runai = site(standin.url + "/api/v1", image="example/llmbench:test", poll_s=0.2)
    return spec_for(sweep, runai, steps=12, window=[5, 10])


def run(standin, tmp_path, monkeypatch, spec: RunSpec) -> tuple[int, dict, Path]:
    standin.runai_app = ("llmb-bench", SECRET)
    monkeypatch.setenv("LLMB_TEST_RUNAI_SECRET", SECRET)
    monkeypatch.setenv("KUBECONFIG", str(standin.kubeconfig(tmp_path / "kubeconfig")))
    site_values = spec.site
    payload = json.loads(render_payload_json(spec, site_values, attempt=1))
    client = RunaiClient(site_values.base_url, site_values.app_id, site_values.secret_env)
    record, progress = tmp_path / "platform.json", tmp_path / "platform.log"
    code = submit_and_wait(payload, client, "bench", record, progress, poll_s=0.2)
    return code, json.loads(record.read_text()), progress


@pytest.mark.parametrize(
    ("scenario", "reason"),
    [("evicted", "preempted"), ("oomkilled", "host_oom"), ("imagepull", "container_error"),
     ("deadline", "time_limit")],
)  # fmt: skip
def test_runai_failures_map_to_llmbench_reasons(
    standin, tmp_path, monkeypatch, scenario, reason
) -> None:
    spec = embedded(standin)
    standin.scenarios = {spec.run_id: [scenario]}
    code, record, _ = run(standin, tmp_path, monkeypatch, spec)
    assert code == 1 and record["failure_reason"] == reason, record
    workload_id = record["workload_id"]
    assert ("DELETE", f"/api/v1/workloads/distributed/{workload_id}") in standin.requests


def test_runai_success_copies_the_log_and_never_writes_the_secret(
    standin, tmp_path, monkeypatch, capsys
) -> None:
    spec = embedded(standin)
    code, record, progress = run(standin, tmp_path, monkeypatch, spec)
    assert code == 0 and record["state"] == "succeeded", record
    assert "state succeeded" in progress.read_text()
    (tmp_path / "train.log").write_text(capsys.readouterr().out)
    (served,) = standin.workloads.values()
    assert served.obj["projectId"] == RUNAI_PROJECT["id"]
    assert served.obj["clusterId"] == RUNAI_PROJECT["clusterId"]
    assert (tmp_path / "train.log").read_text() == served.log_path.read_text()
    summary = parse_log(tmp_path / "train.log").summary
    assert (summary.n_iterations, summary.max_iteration) == (12, 11)
    for path in tmp_path.rglob("*"):
        if path.is_file() and path.parent.name != "standin":
            assert SECRET not in path.read_text(errors="replace"), path


def test_a_wrong_secret_is_refused_without_echoing_it(standin, tmp_path, monkeypatch) -> None:
    spec = embedded(standin)
    standin.runai_app = ("llmb-bench", "the-right-one")
    monkeypatch.setenv("LLMB_TEST_RUNAI_SECRET", SECRET)
    client = RunaiClient(standin.url + "/api/v1", "llmb-bench", "LLMB_TEST_RUNAI_SECRET")
    with pytest.raises(Exception, match="POST /token: HTTP 401") as err:
        client.project_and_cluster("bench")
    assert SECRET not in str(err.value)
    assert spec.launcher == "runai"
