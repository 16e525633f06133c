"""Rendered Kubernetes manifests: pinned by golden files and valid against the official
CRD schemas (tests/kubernetes/crds/SOURCE.md). Regenerate the golden files with
LLMBENCH_UPDATE_GOLDEN=1 pytest tests/kubernetes"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from llmbench.core.catalog.parity import resolve_parity
from llmbench.core.config import run_specs, validate_config
from llmbench.core.platform_site import KubernetesSite
from llmbench.core.runspec import RunSpec
from llmbench.errors import ConfigError, LaunchError
from llmbench.launch.kubernetes import render_manifest, render_manifest_yaml
from llmbench.launch.launchers import render_launch_script

HERE = Path(__file__).parent
GOLDEN = HERE / "golden"
UPDATE = os.environ.get("LLMBENCH_UPDATE_GOLDEN") == "1"
SCHEMAS = {"TrainJob": "trainjob-v1alpha1.json", "PyTorchJob": "pytorchjob-v1.json"}

SITE = {
    "namespace": "llm-bench",
    "queue": "h100-queue",
    "shm_gi": 256,
    "pvcs": ["workspace:/workspace:bench-workspace", "datasets:/data:shared-datasets"],
    "node_selector": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"},
    "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
    "llmbench_src": "/workspace/llmbench/src",
}
"""Example site values of a 32-node H100 cluster (no real site)."""


def closed(schema: Any) -> Any:
    """The schema with ``additionalProperties: false`` on every object that lists its
    properties: what the API server's strict field validation does (unknown fields are
    errors rather than silently pruned), so a misspelt key fails the test."""
    if isinstance(schema, list):
        return [closed(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: closed(v) for k, v in schema.items()}
    if (
        "properties" in out
        and "additionalProperties" not in out
        and not out.get("x-kubernetes-preserve-unknown-fields")
    ):
        out["additionalProperties"] = False
    return out


def validate(manifest: dict[str, Any]) -> None:
    schema = json.loads((HERE / "crds" / SCHEMAS[manifest["kind"]]).read_text())
    jsonschema.Draft7Validator(closed(schema)).validate(manifest)


def spec_340b(api: str) -> RunSpec:
    config = validate_config(
        {
            "sweeps": [
                {
                    "workload": "nemotron4-nemo",
                    "sizes": ["340b"],
                    "dtypes": ["fp8"],
                    "gpu_type": "h100",
                    "scales": [256],
                }
            ],
            "launcher": "kubernetes",
            "kubernetes": {**SITE, "api": api},
        }
    )
    (spec,) = run_specs(config)
    return spec


@pytest.mark.parametrize("api", ["trainjob", "pytorchjob"])
def test_340b_256_gpu_manifest_matches_golden_and_schema(api: str) -> None:
    spec = spec_340b(api)
    assert (spec.nodes, spec.gpus_per_node) == (32, 8)
    text = render_manifest_yaml(spec, spec.site, attempt=1)
    path = GOLDEN / f"{spec.run_id}_{api}.yaml"
    if UPDATE:
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(text)
    assert text == path.read_text(), f"manifest changed; diff against {path}"
    manifest = yaml.safe_load(text)
    validate(manifest)
    labels = manifest["metadata"]["labels"]
    assert labels["kueue.x-k8s.io/queue-name"] == "h100-queue"
    assert "nvcr.io/nvidia/nemo:25.09.00" in text  # the reference's image for H100
    assert "256Gi" in text and "bench-workspace" in text


def _container(manifest: dict[str, Any]) -> dict[str, Any]:
    if manifest["kind"] == "TrainJob":
        return manifest["spec"]["trainer"]
    return manifest["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]


@pytest.mark.parametrize("api", ["trainjob", "pytorchjob"])
def test_pods_carry_the_reference_environment_srun_ranks_get(api: str) -> None:
    spec = spec_340b(api)
    manifest = render_manifest(spec, spec.site, attempt=1)
    env = {e["name"]: e["value"] for e in _container(manifest)["env"]}
    assert json.loads(env.pop("LLMBENCH_RUN_SPEC")) == spec.to_dict()
    # the same list srun's ranks get: Kubernetes has no executor of its own in the
    # reference, so the pods get the Slurm executor's environment
    srun_spec = dataclasses.replace(spec, launcher="srun", parity=resolve_parity(
        spec.workload, spec.model["source"], size=spec.size, dtype=spec.dtype,
        gpu_type=spec.gpu_type, nodes=spec.nodes, gpus_per_node=spec.gpus_per_node,
        parallelism=spec.parallelism, launcher="srun", image=spec.image))  # fmt: skip
    exported = dict(re.findall(r"^export (\w+)=(\S*)$", render_launch_script(srun_spec), re.M))
    # NCCL's debug output is per launcher (srun: a file per process in the attempt folder)
    assert env == {k: v for k, v in exported.items() if not k.startswith(("MASTER_", "NCCL_DEBUG"))}
    assert env["CUDA_DEVICE_MAX_CONNECTIONS"] == "1" and env["NEMO_LOG_MEMORY_USAGE"] == "1"
    assert env["PYTORCH_CUDA_ALLOC_CONF"] == "expandable_segments:True"
    assert "OMP_NUM_THREADS" not in json.dumps(manifest)  # torchrun's own default


def test_pytorchjob_has_one_master_and_31_workers() -> None:
    manifest = render_manifest(
        spec_340b("pytorchjob"), KubernetesSite.from_config({**SITE, "api": "pytorchjob"}), 1
    )
    replicas = manifest["spec"]["pytorchReplicaSpecs"]
    assert (replicas["Master"]["replicas"], replicas["Worker"]["replicas"]) == (1, 31)
    limits = replicas["Worker"]["template"]["spec"]["containers"][0]["resources"]["limits"]
    assert limits == {"nvidia.com/gpu": "8"}


def test_schema_check_catches_a_misspelt_field() -> None:
    manifest = render_manifest(spec_340b("trainjob"), KubernetesSite.from_config(SITE), 1)
    manifest["spec"]["trainer"]["numNode"] = manifest["spec"]["trainer"].pop("numNodes")
    with pytest.raises(jsonschema.ValidationError):
        validate(manifest)


def test_launch_script_submits_the_manifest_and_names_no_machine_path() -> None:
    text = render_launch_script(spec_340b("trainjob"))
    assert "llmbench.launch.kubernetes_watch --manifest manifest.yaml" in text
    assert str(Path.cwd()) not in text and str(Path.home()) not in text


def test_a_launch_sh_of_the_former_entry_fails_with_the_new_one(tmp_path: Path) -> None:
    """A launch.sh written before the watcher had its own module fails saying where it
    went, rather than exiting 0 with nothing submitted."""
    args = ["--manifest", "manifest.yaml", "--record", "platform.json"]
    done = subprocess.run(
        [sys.executable, "-m", "llmbench.launch.kubernetes", *args],
        cwd=tmp_path, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        "llmbench: the submit-and-wait entry is python -m llmbench.launch.kubernetes_watch "
        "(same options)"
    ]
    assert not list(tmp_path.iterdir())


def test_bad_site_values_fail_before_submission() -> None:
    with pytest.raises(ConfigError, match="kubernetes"):
        validate_config(
            {"sweeps": [{"workload": "tiny-llama", "sizes": ["tiny"], "dtypes": ["fp32"],
                         "gpu_type": "cpu", "scales": [1]}],
             "launcher": "kubernetes", "kubernetes": {"api": "mpijob"}}
        )  # fmt: skip
    with pytest.raises(LaunchError, match=r"kubernetes\.pvcs"):
        KubernetesSite.from_config({"pvcs": ["workspace:relative:claim"]})
