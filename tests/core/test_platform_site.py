"""A platform launcher's site values are a typed value of the run (``RunSpec.site``), parsed
once from the block the run records; the launchers consume it, run_spec.json keeps the
block as written."""

from __future__ import annotations

import json

import pytest

from llmbench.core.config import run_specs, validate_config
from llmbench.core.platform_site import KubernetesSite, Pvc, RunaiSite
from llmbench.core.runspec import RunSpec
from llmbench.errors import LaunchError
from llmbench.launch.launchers import launcher_for
from tests.helpers import tiny_config

KUBERNETES = {"namespace": "bench", "image": "registry.example/llmbench:1",
              "pvcs": ["work:/workspace:claim"]}  # fmt: skip
RUNAI = {"base_url": "https://runai.example/api/v1", "app_id": "app", "project": "bench",
         "image": "registry.example/llmbench:1"}  # fmt: skip


def _spec(launcher: str, **config: object) -> RunSpec:
    return run_specs(validate_config(tiny_config((1,), launcher=launcher, **config)))[0]


def test_a_kubernetes_run_parses_its_site_once_and_records_the_block() -> None:
    spec = _spec("kubernetes", kubernetes=KUBERNETES)
    site = spec.site
    assert isinstance(site, KubernetesSite) and site.namespace == "bench"
    assert site.pvcs == (Pvc(name="work", claim="claim", path="/workspace"),)
    launcher = launcher_for(spec)
    launcher.render(spec)
    launcher.files(spec, attempt=1)
    assert spec.site is site  # the launcher asked the parsed value, not the block again
    record = json.loads(spec.to_json())
    assert "site" not in record and record["platform"] == KUBERNETES
    back = RunSpec.from_dict(record)
    assert back == spec and back.site == site


def test_a_runai_run_has_its_site_and_the_others_none() -> None:
    spec = _spec("runai", runai=RUNAI)
    assert isinstance(spec.site, RunaiSite) and spec.site.project == "bench"
    missing = launcher_for(spec).missing_before_start(spec, {})
    assert missing is not None and spec.site.secret_env in missing
    assert _spec("local").site is None and _spec("srun").site is None


def test_a_bad_site_value_names_its_key_when_first_asked() -> None:
    spec = RunSpec.from_dict({**_spec("local").to_dict(), "launcher": "kubernetes",
                              "platform": {"namespce": "bench"}})  # fmt: skip
    with pytest.raises(LaunchError, match=r"^kubernetes.namespce: unknown key; allowed: "):
        _ = spec.site
