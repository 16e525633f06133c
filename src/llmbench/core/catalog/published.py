"""Published results as reference data (``published.yaml``): the spec's tables and
NVIDIA's Megatron-Bridge performance summary rows, the step times references and cost
estimates start from. The file also keeps the documents' worked examples, which only the
tests read (they check the formulas against them).

Every published number says what it is comparable with: the model, GPU type and count,
precision recipe, global batch size and container it was measured with. That every
printed derived number follows from its step time is checked by the tests
(tests/core/published_checks.py; disagreements are listed in docs/spec-errata.md).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from llmbench.core.catalog.load import load_catalog, read_yaml
from llmbench.core.catalog.parity import reference_image
from llmbench.core.catalog.records import PEAK_DTYPE, precision_of
from llmbench.core.runspec import DEFAULT_RELEASE


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
    kind: str = "table"  # table | example | summary
    release: str = DEFAULT_RELEASE
    precision: str = ""
    container: str = ""
    tokens_per_s_per_gpu: float | None = None
    """Printed by a summary row (the tables print tokens/s for all GPUs)."""
    tflops_per_gpu: float | None = None
    """Model TFLOP/s/GPU a summary row prints (the framework's own FLOPs count)."""
    parallelism: dict[str, Any] = field(default_factory=dict, hash=False)
    """mbs, tp, pp, cp, vp, ep, fsdp of a summary row."""

    @property
    def mfu(self) -> float | None:
        """Printed MFU as a fraction."""
        return None if self.mfu_pct is None else self.mfu_pct / 100

    def key(self) -> tuple[str, str, str, str, int]:
        """(workload, size, dtype, gpu_type, gpus)."""
        return (self.workload, self.size, self.dtype, self.gpu_type, self.gpus)


def _opt_float(value: Any) -> float | None:
    return None if value is None else float(value)


def _document_facts(workload: str, source: str, dtype: str, gpu_type: str) -> dict[str, Any]:
    """A spec table's precision (its document's FP8 scaling), release and container (the
    image the reference runs the document in), as a summary row states them."""
    document = load_catalog().document(source)
    return {
        "precision": precision_of(dtype, document.fp8_recipe),
        "release": document.release,
        "container": reference_image(workload, source, gpu_type) or "",
    }


def published_result(
    base: Mapping[str, Any], cells: Mapping[str, Any], kind: str
) -> PublishedResult:
    """One published row: a table's common values (``base``) and one cell column's (a
    worked example has them all in ``base``)."""
    merged = {**base, **cells}
    facts = _document_facts(merged["workload"], merged["source"], merged["dtype"],
                            merged["gpu_type"])  # fmt: skip
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
        **facts,
    )


SUMMARY_COLUMNS = (
    "gpu_type", "gpus", "precision", "gbs", "mbs", "tp", "pp", "cp", "vp", "ep", "fsdp",
    "tokens_per_s_per_gpu", "tflops_per_gpu", "line",
)  # fmt: skip
"""The columns of a ``summaries`` table row (``published.yaml``)."""


def _summary(table: Mapping[str, Any], values: list[Any]) -> PublishedResult:
    """One performance-summary row: its step time from the printed tokens/s/GPU."""
    cells = dict(zip(SUMMARY_COLUMNS, values, strict=True))
    catalog = load_catalog()
    model = catalog.model(table["workload"], table["size"])
    seq_len = model.shape.seq_len
    gbs, gpus, per_gpu = int(cells["gbs"]), int(cells["gpus"]), float(cells["tokens_per_s_per_gpu"])
    precision = str(cells["precision"])
    return PublishedResult(
        source=f"{table['file']}#L{cells['line']}",
        workload=table["workload"],
        size=table["size"],
        dtype=PEAK_DTYPE.get(precision, precision),
        gpu_type=cells["gpu_type"],
        gpus=gpus,
        gbs=gbs,
        step_time_s=gbs * seq_len / (per_gpu * gpus),
        tokens_per_s=per_gpu * gpus,
        mfu_pct=None,
        days_to_train=None,
        total_tokens=None,
        decimals={"tokens_per_s_per_gpu": 0, "tflops_per_gpu": 0},
        seq_len=seq_len,
        kind="summary",
        release=table["release"],
        precision=precision,
        container=table["container"],
        tokens_per_s_per_gpu=per_gpu,
        tflops_per_gpu=float(cells["tflops_per_gpu"]),
        parallelism={k: cells[k] for k in ("mbs", "tp", "pp", "cp", "vp", "ep", "fsdp")},
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
            cells = dict(zip(table["columns"], values, strict=True))
            results.append(published_result(base, cells, "table"))
    return tuple(results)


@functools.cache
def load_summaries() -> tuple[PublishedResult, ...]:
    """Every row of NVIDIA's performance summary the catalog keeps (``summaries``)."""
    return tuple(
        _summary(table, values) for table in _raw()["summaries"] for values in table["rows"]
    )


def reference_results() -> list[PublishedResult]:
    """What a run can be judged against: the spec's tables and the summary rows."""
    return [*load_published(), *load_summaries()]


def published_results() -> list[PublishedResult]:
    """The spec's published results tables, as a list (``load_published``)."""
    return list(load_published())
