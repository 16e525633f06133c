"""Preflight settings from the config, and the real gloo all-reduce test with and without
a slowed node."""

from __future__ import annotations

import pytest

from llmbench.core.config import validate_and_expand
from llmbench.core.preflight_settings import resolve_preflight
from llmbench.errors import ConfigError
from llmbench.launch.launchers import LAUNCHERS
from llmbench.preflight.allreduce import bus_factor, measure_allreduce
from llmbench.preflight.node import message_sizes
from tests.helpers import tiny_config

LOCAL = LAUNCHERS["local"]


def specs(**top):
    return validate_and_expand(tiny_config((1, 2), **top))[1]


def test_off_by_default_for_the_embedded_workload_on_when_asked() -> None:
    assert resolve_preflight(None, specs(), list_nodes=LOCAL.nodes).enabled is False
    on = resolve_preflight(True, specs(), list_nodes=LOCAL.nodes)
    assert on.enabled and len(on.nodes) == 1 and on.gpu_type == "cpu"
    assert on.ranks == 2 and on.nodes_needed == 1 and on.max_message_bytes == 4 << 20
    listed = resolve_preflight({"nodes": ["n1", "n2"], "enabled": True}, specs())
    assert listed.nodes == ("n1", "n2")


def test_on_by_default_for_gpu_sweeps() -> None:
    config = tiny_config((8, 16), launcher="srun")
    config["sweeps"][0].update(
        workload="llama3.1-nemo", sizes=["8b"], dtypes=["bf16"], gpu_type="h100"
    )
    gpu_specs = validate_and_expand(config)[1]
    settings = resolve_preflight({"nodes": ["g1", "g2"]}, gpu_specs)
    assert settings.enabled and settings.gpu_type == "h100"
    assert settings.ranks == 8 and settings.nodes_needed == 2
    assert settings.max_message_bytes == 8 << 30


def test_config_schema_takes_the_block_and_rejects_bad_keys() -> None:
    config, _ = validate_and_expand(tiny_config(preflight={"min_fraction": 0.5}))
    assert config["preflight"]["min_fraction"] == 0.5
    with pytest.raises(ConfigError, match="preflight"):
        validate_and_expand(tiny_config(preflight={"min_fraction": 2}))
    with pytest.raises(ConfigError, match="preflight"):
        validate_and_expand(tiny_config(preflight={"node": ["n1"]}))


def test_bad_node_name_is_one_line() -> None:
    with pytest.raises(ConfigError, match="is not a node name"):
        resolve_preflight({"enabled": True, "nodes": ["n1;rm"]}, specs())


def test_message_sizes_and_bus_factor() -> None:
    assert message_sizes(4096) == [8, 64, 512, 4096]
    assert message_sizes(100) == [8, 64, 100]
    assert bus_factor(2) == 1.0 and bus_factor(8) == 2 * 7 / 8


def test_slowed_node_measures_far_less(monkeypatch: pytest.MonkeyPatch) -> None:
    """Real gloo all-reduces between two processes; the fault slows only its node."""
    monkeypatch.setenv("LLMBENCH_FAULT", "slow@0:preflight_slow-node")
    sizes = [8, 1 << 20]
    fast = measure_allreduce("fast-node", 2, sizes, iterations=3)
    slow = measure_allreduce("slow-node", 2, sizes, iterations=3)
    assert [p.size_bytes for p in fast] == sizes
    assert all(p.busbw_gbps > 0 and p.time_s > 0 for p in fast + slow)
    assert slow[-1].time_s >= 0.1  # SLOW_STEP_S inside every timed call
    assert slow[-1].busbw_gbps < fast[-1].busbw_gbps / 2
