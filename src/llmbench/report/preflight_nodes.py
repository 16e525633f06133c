"""The Cluster page of the report: every node the preflight checked, and how a node passes."""

from __future__ import annotations

import pandas as pd

from llmbench.report.html_tables import table_html
from llmbench.text import counted

NODE_HTML_COLUMNS = (
    "node", "status", "reason", "warnings", "busbw_gbps", "threshold_gbps",
    "expected_busbw_gbps", "expected_source", "alltoall_busbw_gbps", "alltoall_threshold_gbps",
    "node_checks", "fabric", "ranks", "max_message_bytes", "checks", "measured_at",
)  # fmt: skip


def nodes_page(table: pd.DataFrame, min_fraction: float) -> str:
    """The nodes table (``llmbench.preflight.gate.nodes_table``) as an HTML page."""
    intro = (
        f"{counted(len(table), 'node')} checked, {int((table['status'] == 'ok').sum())} passed; "
        "a node "
        f"passes at {min_fraction:.0%} of the expected all-reduce bus bandwidth "
        "and of the best node's alltoall bus bandwidth (GB/s at the largest message), "
        "with no check that excludes it (Xid, ECC, IMEX, NVLink, pmix: docs/preflight.md); "
        "warnings are listed and the node runs."
    )
    return table_html(table, NODE_HTML_COLUMNS, "Cluster: preflight", intro)
