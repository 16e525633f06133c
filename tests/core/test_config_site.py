"""Where to run comes from the profile: the site keys of an experiment config."""

from __future__ import annotations

import pytest
import yaml

from llmbench.core.config import SITE_KEYS, check_config, site_keys_in, workflow_config
from tests.helpers import HERE, REPO, tiny_config


def test_site_keys_are_found_at_any_depth_and_only_there() -> None:
    raw = {
        **tiny_config(),
        "stage_path": "/shared",
        "setup": {"run_on": "slurm", "venv_requirements": "x.txt"},
        "history": {"add": True, "cluster": "a"},
    }
    assert site_keys_in(raw) == ["stage_path", "setup.run_on", "history.cluster"]
    assert site_keys_in(tiny_config()) == []
    assert site_keys_in(None) == []


def test_every_site_key_is_a_config_key() -> None:
    defaults, _ = check_config(tiny_config(), "config", host=HERE)
    for key in SITE_KEYS:
        node = defaults
        for part in key.split("."):
            assert part in node, key
            node = node[part]


@pytest.mark.parametrize("profile", ["slurm", "kubernetes", "runai"])
def test_profile_site_files_hold_only_site_keys(profile: str) -> None:
    site = yaml.safe_load((REPO / "profiles" / profile / "site.yaml").read_text())
    top = {key.split(".")[0] for key in SITE_KEYS}
    assert site and set(site) <= top, set(site) - top


def test_the_shipped_experiment_says_only_what_to_measure() -> None:
    assert site_keys_in(yaml.safe_load((REPO / "config.yaml").read_text())) == []


def test_workflow_warns_once_for_site_keys_in_the_experiment_only(tmp_path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump({**tiny_config(), "container": "none"}))
    lines: list[str] = []
    config, _ = workflow_config({"launcher": "local"}, path, [REPO], warn=lines.append, host=HERE)
    assert config["container"] == "none" and config["launcher"] == "local"
    assert len(lines) == 1 and lines[0].startswith(f"{path}: container: where to run")
    # the same key from the profile's site file (Snakemake's --configfile): no warning
    path.write_text(yaml.safe_dump(tiny_config()))
    lines.clear()
    config, _ = workflow_config({"container": "none"}, path, [REPO], warn=lines.append, host=HERE)
    assert lines == [] and config["container"] == "none"
