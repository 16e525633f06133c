"""The spec's published results as reference data (``published.yaml``): the step times
references and cost estimates start from, and the documents' worked examples.

That every printed derived number follows from its step time is checked by the tests
(tests/spec/published_checks.py; disagreements are listed in docs/spec-errata.md).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from llmbench.spec.catalog.load import read_yaml


@dataclass(frozen=True)
class PublishedResult:
    """One published measurement (a table cell column) with the numbers printed for it."""

    source: str
    workload: str
    size: str
    dtype: str
    gpu_type: str
    gpus: int
    gbs: int
    step_time_s: float
    tokens_per_s: float | None
    mfu_pct: float | None
    days_to_train: float | None
    total_tokens: float | None
    decimals: dict[str, int] = field(hash=False)
    seq_len: int | None = None
    logged_tflops_per_gpu: float | None = None
    kind: str = "table"  # table | example

    @property
    def mfu(self) -> float | None:
        """Printed MFU as a fraction."""
        return None if self.mfu_pct is None else self.mfu_pct / 100

    def key(self) -> tuple[str, str, str, str, int]:
        """(workload, size, dtype, gpu_type, gpus)."""
        return (self.workload, self.size, self.dtype, self.gpu_type, self.gpus)


def _opt_float(value: Any) -> float | None:
    return None if value is None else float(value)


def _result(base: Mapping[str, Any], cells: Mapping[str, Any], kind: str) -> PublishedResult:
    merged = {**base, **cells}
    return PublishedResult(
        source=merged["source"],
        workload=merged["workload"],
        size=merged["size"],
        dtype=merged["dtype"],
        gpu_type=merged["gpu_type"],
        gpus=int(merged["gpus"]),
        gbs=int(merged["gbs"]),
        step_time_s=float(merged["step_time_s"]),
        tokens_per_s=_opt_float(merged.get("tokens_per_s")),
        mfu_pct=_opt_float(merged.get("mfu_pct")),
        days_to_train=_opt_float(merged.get("days_to_train")),
        total_tokens=_opt_float(merged.get("total_tokens")),
        decimals=dict(merged["decimals"]),
        seq_len=merged.get("seq_len"),
        logged_tflops_per_gpu=_opt_float(merged.get("logged_tflops_per_gpu")),
        kind=kind,
    )


@functools.cache
def _raw() -> dict[str, Any]:
    return dict(read_yaml("published.yaml"))


@functools.cache
def load_published() -> tuple[PublishedResult, ...]:
    """Every cell column of every published results table (``published.yaml``)."""
    results = []
    for table in _raw()["tables"]:
        base = {k: v for k, v in table.items() if k not in ("columns", "rows")}
        for values in table["rows"]:
            results.append(_result(base, dict(zip(table["columns"], values, strict=True)), "table"))
    return tuple(results)


def published_results() -> list[PublishedResult]:
    """The spec's published results tables, as a list (``load_published``)."""
    return list(load_published())


@functools.cache
def load_examples() -> tuple[PublishedResult, ...]:
    """The documents' worked throughput / days / MFU examples."""
    return tuple(_result(e, {}, "example") for e in _raw()["examples"])


def flops_examples() -> list[dict[str, Any]]:
    """The documents' worked FLOPs calculations, as printed."""
    return [dict(e) for e in _raw()["flops_examples"]]
