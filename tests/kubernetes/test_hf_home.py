"""The site's hf_home reaches a platform's pods as HF_HOME, as srun passes it, where the
recipe reads the Hugging Face cache offline; a cache on none of the pods' volumes is
refused before anything is submitted."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from llmbench.core.catalog import load_catalog
from llmbench.core.config import check_experiment
from llmbench.core.platform_site import KubernetesSite, RunaiSite
from llmbench.core.runspec import RunSpec
from llmbench.core.site_fit import needs_hf_home
from llmbench.errors import ConfigError
from llmbench.launch.kubernetes import render_manifest_yaml
from llmbench.launch.runai import render_payload_json
from tests.helpers import HERE

ROW = next(r for r in load_catalog().rows(release="v26.08") if r.gpu_type == "h100")
"""A later release's run: its recipe reads the model's config offline (HF_HUB_OFFLINE=1)."""
PVCS = ["workspace:/workspace:bench-workspace"]
BLOCKS = {
    "kubernetes": {"pvcs": PVCS},
    "runai": {"base_url": "https://runai.example/api/v1", "app_id": "bench", "project": "p",
              "pvcs": PVCS},
}  # fmt: skip


def spec(launcher: str, hf_home: str | None) -> RunSpec:
    config: dict[str, Any] = {"sweeps": [ROW.sweep_entry()], "launcher": launcher}
    config[launcher] = BLOCKS[launcher]
    if hf_home is not None:
        config["hf_home"] = hf_home
    (first, *_) = check_experiment(config, {}, "config", host=HERE)[1]
    return first


def pod_env(run: RunSpec) -> dict[str, str]:
    if run.launcher == "runai":
        payload = json.loads(render_payload_json(run, RunaiSite.from_config(run.platform), 1))
        env = payload["spec"]["environmentVariables"]
    else:
        manifest = yaml.safe_load(
            render_manifest_yaml(run, KubernetesSite.from_config(run.platform), 1)
        )
        env = manifest["spec"]["trainer"]["env"]
    return {e["name"]: e["value"] for e in env}


@pytest.mark.parametrize("launcher", ["kubernetes", "runai"])
def test_the_pods_get_the_sites_hf_home(launcher: str) -> None:
    assert pod_env(spec(launcher, "/workspace"))["HF_HOME"] == "/workspace"  # the volume itself
    run = spec(launcher, "/workspace/hf")
    assert needs_hf_home(run)
    env = pod_env(run)
    assert env["HF_HOME"] == "/workspace/hf" and env["HF_HUB_OFFLINE"] == "1"
    assert "HF_HOME" not in pod_env(spec(launcher, None))


@pytest.mark.parametrize("launcher", ["kubernetes", "runai"])
@pytest.mark.parametrize("hf_home", ["/shared/hf", "/workspacex/hf", "/work"])
def test_a_cache_on_no_volume_of_the_pods_is_refused(launcher: str, hf_home: str) -> None:
    with pytest.raises(ConfigError) as caught:
        spec(launcher, hf_home)
    message = str(caught.value)
    assert "\n" not in message
    assert f"hf_home: {hf_home!r} is on none of the {launcher} pods' volumes" in message
    assert f"(/workspace); allowed: a folder under a mount path of {launcher}.pvcs" in message
