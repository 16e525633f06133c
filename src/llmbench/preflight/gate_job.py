"""The gate rule's body: read the node results, write the tables, decide."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from llmbench.files.atomic import write_json_atomic, write_text_atomic
from llmbench.files.atomic_tables import write_parquet_atomic
from llmbench.preflight.gate import gate, nodes_table
from llmbench.report.html_tables import table_html
from llmbench.spec.preflight_settings import PreflightSettings

NODE_HTML_COLUMNS = (
    "node", "status", "reason", "warnings", "busbw_gbps", "threshold_gbps",
    "expected_busbw_gbps", "expected_source", "alltoall_busbw_gbps", "alltoall_threshold_gbps",
    "node_checks", "fabric", "ranks", "max_message_bytes", "checks", "measured_at",
)  # fmt: skip


def write_gate(
    result_paths: Iterable[str | Path], settings: PreflightSettings, output: Any
) -> list[str]:
    """Write ``output.nodes`` (Parquet), ``output.nodes_html`` (the Cluster page) and
    ``output.exclude``; raises ``ConfigError`` when too few nodes pass (tables first, so
    the reasons stay readable)."""
    results: list[Mapping[str, Any]] = [json.loads(Path(p).read_text()) for p in result_paths]
    table = nodes_table(list(results), settings)
    write_parquet_atomic(table, output.nodes)
    intro = (
        f"{len(table)} nodes checked, {int((table['status'] == 'ok').sum())} passed; a node "
        f"passes at {settings.min_fraction:.0%} of the expected all-reduce bus bandwidth "
        f"and of the best node's alltoall bus bandwidth (GB/s at the largest message), "
        "with no check that excludes it (Xid, ECC, IMEX, NVLink, pmix: docs/preflight.md); "
        "warnings are listed and the node runs."
    )
    write_text_atomic(
        table_html(table, NODE_HTML_COLUMNS, "Cluster: preflight", intro), output.nodes_html
    )
    excluded = gate(table, settings.nodes_needed)
    write_json_atomic(Path(output.exclude), {"exclude": excluded, "nodes": list(table["node"])})
    return excluded
