"""The gate rule's body: read the node results, write the tables, decide."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from llmbench.core.preflight_settings import PreflightSettings
from llmbench.files.atomic import write_json_atomic, write_text_atomic
from llmbench.files.atomic_tables import write_parquet_atomic
from llmbench.preflight.gate import gate, nodes_table
from llmbench.report.preflight_nodes import nodes_page


def write_gate(
    result_paths: Iterable[str | Path], settings: PreflightSettings, output: Any
) -> list[str]:
    """Write ``output.nodes`` (Parquet), ``output.nodes_html`` (the Cluster page) and
    ``output.exclude``; raises ``ConfigError`` when too few nodes pass (tables first, so
    the reasons stay readable)."""
    results: list[Mapping[str, Any]] = [json.loads(Path(p).read_text()) for p in result_paths]
    table = nodes_table(list(results), settings)
    write_parquet_atomic(table, output.nodes)
    write_text_atomic(nodes_page(table, settings.min_fraction), output.nodes_html)
    excluded = gate(table, settings.nodes_needed)
    write_json_atomic(Path(output.exclude), {"exclude": excluded, "nodes": list(table["node"])})
    return excluded
