"""The ``images:`` override names any catalog workload, of any release: the config's
image is the one the run uses (issue 44: qwen3-mbridge and deepseek-v3-mbridge were
refused)."""

from __future__ import annotations

import pytest

from llmbench.core.catalog import load_catalog
from llmbench.core.config import check_config, config_schema
from llmbench.errors import ConfigError
from tests.helpers import HERE

CATALOG = load_catalog()


def test_the_images_keys_are_the_catalogs_workloads() -> None:
    properties = config_schema()["properties"]
    keys = properties["images"]["propertyNames"]["enum"]
    assert sorted(keys) == CATALOG.workloads(release=None)


@pytest.mark.parametrize("workload", CATALOG.workloads(release="v26.08"))
def test_a_release_workloads_image_is_overridden(workload: str) -> None:
    row = CATALOG.rows(workload=workload, release="v26.08")[0]
    image = "registry.example.com/team/nemo:26.06-site"
    config = {"sweeps": [row.sweep_entry()], "container": "enroot", "images": {workload: image}}
    (spec,) = check_config(config, "config.yaml", host=HERE)[1]
    assert spec.image == image and spec.release == "v26.08"
    assert spec.parity.stack.reference_stack is False  # said in the runs table


def test_an_unknown_images_key_is_one_line_naming_the_allowed() -> None:
    config = {"sweeps": [CATALOG.rows(workload="qwen3-mbridge", release="v26.08")[0].sweep_entry()],
              "images": {"qwen3": "a/b:c"}}  # fmt: skip
    with pytest.raises(ConfigError) as err:
        check_config(config, "config.yaml", host=HERE)
    assert "\n" not in str(err.value) and "'qwen3'" in str(err.value)
    assert "qwen3-mbridge" in str(err.value) and "deepseek-v3-mbridge" in str(err.value)
