"""The gate: thresholds against the expected bandwidth, reasons, and the node count."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pandas as pd
import pytest

from llmbench.core.preflight_settings import PreflightSettings
from llmbench.errors import ConfigError
from llmbench.preflight.gate import gate, nodes_table
from llmbench.preflight.gate_job import write_gate
from llmbench.preflight.gpu import expected_bandwidth


def settings(gpu_type: str = "cpu", needed: int = 1) -> PreflightSettings:
    return PreflightSettings(True, ("a", "b", "c"), gpu_type, 2, needed, 4 << 20, 0.7, 5)


def result(node: str, busbw: float | None, problems: list[str] | None = None) -> dict:
    return {"node": node, "busbw_gbps": busbw, "problems": problems or [], "checks": ["x"]}


def test_cpu_nodes_against_the_best_node() -> None:
    table = nodes_table([result("a", 1.0), result("b", 0.75), result("c", 0.1)], settings())
    by = table.set_index("node")
    assert list(by.status) == ["ok", "ok", "excluded"]
    assert by.loc["c", "reason"] == (
        "all-reduce bus bandwidth 0.1 GB/s below 70% of the expected 1 GB/s"
    )
    assert by.loc["a", "threshold_gbps"] == pytest.approx(0.7)
    assert gate(table, 2) == ["c"]


def test_failed_checks_and_missing_figures_exclude() -> None:
    table = nodes_table(
        [result("a", 1.0), result("b", 2.0, ["GPU 3: PCIe link x8 of x16"]), result("c", None)],
        settings(),
    )
    by = table.set_index("node")
    assert by.loc["b", "status"] == "excluded" and "PCIe" in by.loc["b", "reason"]
    assert by.loc["c", "reason"] == "no bus bandwidth measured"
    assert by.loc["a", "expected_busbw_gbps"] == 1.0  # b's figure does not count: it failed


def test_gpu_types_use_the_catalog_figure_with_its_source() -> None:
    h100 = expected_bandwidth()["h100"]
    table = nodes_table([result("a", 400.0), result("b", 200.0)], settings("h100"))
    by = table.set_index("node")
    assert by.loc["a", "expected_busbw_gbps"] == h100["intra_node_busbw_gbps"]
    assert by.loc["a", "expected_source"] == h100["source"] and "datasheet" in h100["source"]
    assert list(by.status) == ["ok", "excluded"]


def test_too_few_nodes_is_one_line() -> None:
    table = nodes_table([result("a", 1.0), result("b", 0.1)], settings(needed=2))
    with pytest.raises(ConfigError) as err:
        gate(table, 2)
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith("preflight: 1 of 2 nodes passed but the sweep's largest run needs 2")
    assert "b: all-reduce bus bandwidth" in message


def test_no_node_to_check_is_one_line() -> None:
    with pytest.raises(ConfigError, match="no node to check"):
        gate(nodes_table([], settings()), 1)


def test_the_gate_job_writes_the_tables_before_it_refuses(tmp_path) -> None:
    """The gate rule's body: the nodes table, the Cluster page and the exclude list; when
    too few nodes pass it still writes the tables (their reasons say why) and refuses."""
    paths = []
    for res in (result("a", 1.0), result("b", 0.1)):
        paths.append(tmp_path / f"{res['node']}.json")
        paths[-1].write_text(json.dumps(res))
    out = SimpleNamespace(
        nodes=tmp_path / "nodes.parquet",
        nodes_html=tmp_path / "nodes.html",
        exclude=tmp_path / "exclude.json",
    )
    assert write_gate(paths, settings(needed=1), out) == ["b"]
    assert list(pd.read_parquet(out.nodes)["status"]) == ["ok", "excluded"]
    page = out.nodes_html.read_text()
    assert "2 nodes checked, 1 passed" in page and "70% of the expected" in page
    assert "below 70% of the expected 1 GB/s" in page  # b's reason, in its row
    assert json.loads(out.exclude.read_text()) == {"exclude": ["b"], "nodes": ["a", "b"]}
    out.exclude.unlink()
    with pytest.raises(ConfigError, match="1 of 2 nodes passed"):
        write_gate(paths, settings(needed=2), out)
    assert out.nodes_html.exists() and not out.exclude.exists()
