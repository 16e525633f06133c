"""The config check asks the machine it runs on through the ``Host`` it is handed (the
workflow and ``llmbench plan`` read it where they run): the cores a local CPU sweep may
use and the environment's LOAD_CHECKPOINT_PATH, never this process's own."""

from __future__ import annotations

import pytest

from llmbench.core.catalog import load_catalog
from llmbench.core.config import LOCAL_RANKS_PER_CORE, Host, check_config
from llmbench.errors import ConfigError
from tests.helpers import tiny_config


def test_the_cores_counted_are_the_hosts() -> None:
    config = tiny_config((4,), threads_per_rank=4)  # 16 threads on launcher local
    assert check_config(config, host=Host(cores=2, environ={}))[1]
    with pytest.raises(ConfigError) as info:
        check_config(config, host=Host(cores=1, environ={}))
    cap = LOCAL_RANKS_PER_CORE
    assert str(info.value).endswith(f"allowed: at most {cap} x 1 cores = {cap}")


def test_load_checkpoint_path_is_read_from_the_hosts_environment() -> None:
    row = load_catalog().rows("llama3.1-nemo")[0]
    config = {"sweeps": [row.sweep_entry(variants=["ckpt-load"])], "launcher": "srun"}
    with pytest.raises(ConfigError, match=r"or set LOAD_CHECKPOINT_PATH$"):
        check_config(config, host=Host(cores=1, environ={}))
    elsewhere = Host(cores=1, environ={"LOAD_CHECKPOINT_PATH": "/ckpt"})
    (spec,) = check_config(config, host=elsewhere)[1]
    assert spec.variant == "ckpt-load"
