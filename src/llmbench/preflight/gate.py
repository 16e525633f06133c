"""The gate: from every node's preflight result, the nodes table and who is excluded.

A node is excluded when a check failed (GPU health, DCGM, an all-reduce that did not
finish or had wrong results), a node check says exclude (``checks.yaml``: an Xid that
needs a reset or a reboot, uncorrectable ECC errors, a missing IMEX channel ...), its
all-reduce bus bandwidth at the largest message is below ``min_fraction`` of the
expected figure (the GPU type's, ``expected.yaml``, or, for CPU nodes that have none,
the best node's of the set), or its alltoall bus bandwidth is below ``min_fraction`` of
the best node's (no published per-node alltoall figure exists). Warnings are listed and
the node runs. The sweep stops, with one line, when fewer nodes pass than its largest
run needs.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

from llmbench.core.preflight_settings import PreflightSettings
from llmbench.errors import ConfigError
from llmbench.preflight.gpu import expected_bandwidth

NODE_DTYPES = {
    "node": "string",
    "gpu_type": "string",
    "status": "string",  # ok | excluded
    "reason": "string",
    "ranks": "int64",
    "max_message_bytes": "int64",
    "busbw_gbps": "float64",
    "expected_busbw_gbps": "float64",
    "expected_source": "string",
    "threshold_gbps": "float64",
    "alltoall_busbw_gbps": "float64",
    "alltoall_threshold_gbps": "float64",
    "warnings": "string",
    "checks": "string",
    "node_checks": "string",
    "fabric": "string",
    "measured_at": "string",
}
"""``results/tables/nodes.parquet`` (docs/preflight.md)."""


def expected_for(gpu_type: str, results: Iterable[Mapping[str, Any]]) -> tuple[float, str]:
    """(expected bus bandwidth GB/s, its source) for the node set."""
    known = expected_bandwidth().get(gpu_type)
    if known is not None:
        return float(known["intra_node_busbw_gbps"]), str(known["source"])
    measured = [
        r["busbw_gbps"] for r in results if _number(r.get("busbw_gbps")) and not r.get("problems")
    ]
    best = max(measured, default=math.nan)
    return best, "best node of this preflight (no datasheet figure for this type)"


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and math.isfinite(value) and value > 0


def best_alltoall(results: Iterable[Mapping[str, Any]]) -> float:
    """The best alltoall bus bandwidth of the nodes without a failed test (GB/s)."""
    measured = [
        r["alltoall_busbw_gbps"]
        for r in results
        if _number(r.get("alltoall_busbw_gbps")) and not r.get("problems")
    ]
    return max(measured, default=math.nan)


def _check_text(checks: Iterable[Mapping[str, str]]) -> str:
    return ", ".join(f"{c['name']} {c['status']}" for c in checks)


def nodes_table(results: list[Mapping[str, Any]], settings: PreflightSettings) -> pd.DataFrame:
    """One row per node: its figures, ok or excluded, and why."""
    expected, source = expected_for(settings.gpu_type, results)
    threshold = settings.min_fraction * expected
    alltoall_threshold = settings.min_fraction * best_alltoall(results)
    rows = []
    for result in sorted(results, key=lambda r: r["node"]):
        problems = list(result.get("problems", []))
        checks = list(result.get("node_checks", []))
        problems += [c["detail"] for c in checks if c["status"] == "exclude"]
        warnings = [c["detail"] for c in checks if c["status"] == "warn"]
        busbw = result.get("busbw_gbps")
        alltoall = result.get("alltoall_busbw_gbps")
        if not problems and not _number(busbw):
            problems.append("no bus bandwidth measured")
        elif _number(busbw) and busbw < threshold:
            problems.append(
                f"all-reduce bus bandwidth {busbw:.3g} GB/s below {settings.min_fraction:.0%} "
                f"of the expected {expected:.3g} GB/s"
            )
        if not _number(alltoall):
            warnings.append("alltoall bus bandwidth not measured")
        elif alltoall < alltoall_threshold:
            problems.append(
                f"alltoall bus bandwidth {alltoall:.3g} GB/s below {settings.min_fraction:.0%} "
                f"of the best node's {alltoall_threshold / settings.min_fraction:.3g} GB/s"
            )
        rows.append(
            {
                "node": result["node"],
                "gpu_type": settings.gpu_type,
                "status": "excluded" if problems else "ok",
                "reason": "; ".join(problems),
                "ranks": settings.ranks,
                "max_message_bytes": settings.max_message_bytes,
                "busbw_gbps": busbw if _number(busbw) else math.nan,
                "expected_busbw_gbps": expected,
                "expected_source": source,
                "threshold_gbps": threshold,
                "alltoall_busbw_gbps": alltoall if _number(alltoall) else math.nan,
                "alltoall_threshold_gbps": alltoall_threshold,
                "warnings": "; ".join(warnings),
                "checks": ", ".join(result.get("checks", [])),
                "node_checks": _check_text(checks),
                "fabric": result.get("fabric") or "",
                "measured_at": result.get("measured_at", ""),
            }
        )
    frame = pd.DataFrame(rows, columns=list(NODE_DTYPES))
    return frame.astype(NODE_DTYPES)


def gate(table: pd.DataFrame, needed: int) -> list[str]:
    """The nodes to exclude; raises (one line) when fewer than ``needed`` pass."""
    if table.empty:
        raise ConfigError(
            "preflight: no node to check (sinfo listed none); allowed: preflight.nodes: "
            "[node, ...], or preflight: false"
        )
    ok = table[table["status"] == "ok"]["node"].tolist()
    excluded = table[table["status"] != "ok"]
    if len(ok) < needed:
        why = "; ".join(
            f"{n}: {r}" for n, r in zip(excluded["node"], excluded["reason"], strict=True)
        )
        raise ConfigError(
            f"preflight: {len(ok)} of {len(table)} nodes passed but the sweep's largest run "
            f"needs {needed}; excluded: {why or 'none'}"
        )
    return excluded["node"].tolist()
