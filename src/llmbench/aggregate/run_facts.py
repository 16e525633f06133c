"""What a run's spec says about its numbers before any log is read: its model FLOPs per
sample, the peak FLOP/s its MFU is taken against (and the BF16 one), its precision recipe
and model id. The runs table (``runs_and_steps.spec_columns``) and ``llmbench calc`` both
take them from here: one answer for a run and for a row."""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from llmbench.core import metrics
from llmbench.core.catalog import load_catalog
from llmbench.core.catalog.records import precision_of
from llmbench.core.devices import device
from llmbench.core.flops import ModelExtras, ModelShape, model_flops_per_sample


@dataclass(frozen=True)
class Peak:
    """Peak dense FLOP/s of one device for one dtype, and where the number came from."""

    flops_per_s: float
    source: str


def peak_for(spec: Mapping[str, Any], cpu_peak: Mapping[str, Any] | None) -> Peak | None:
    """Peak FLOP/s per device: measured once per machine for the CPU (the calibration
    rule's output), from the catalog's datasheet table for GPUs."""
    source = device(spec["gpu_type"]).peak
    if source == "node-datasheet":  # which GPU is known on the node only
        return None
    if source == "measured":
        if cpu_peak is None:
            return None
        flops = cpu_peak["peak_flops_per_device"][spec["dtype"]]
        return Peak(flops, f"measured: {cpu_peak['method']}, {cpu_peak['threads']} thread(s)")
    return _datasheet_peak(spec["gpu_type"], spec["dtype"])


@functools.cache
def _datasheet_peak(gpu_type: str, dtype: str) -> Peak:
    # once per GPU type and dtype, not once per run
    flops = load_catalog().gpu(gpu_type).peak_flops(dtype)
    return Peak(flops, f"datasheet: {gpu_type} dense {dtype}")


def bf16_peak_tflops(gpu_type: str) -> float:
    """The datasheet BF16 peak of a catalog GPU type; NaN for a device without one."""
    if device(gpu_type).peak != "datasheet":
        return math.nan
    return _datasheet_peak(gpu_type, "bf16").flops_per_s / metrics.FLOPS_PER_TFLOPS


def run_precision(spec: Mapping[str, Any]) -> str:
    """The run's precision recipe: a later release's run records it; a dgxc-2025 run's follows
    from its dtype and document (the embedded workload's is its dtype)."""
    if spec.get("precision"):
        return str(spec["precision"])
    document = (spec.get("model") or {}).get("source")
    if not document:
        return str(spec["dtype"])
    return precision_of(spec["dtype"], load_catalog().document(document).fp8_recipe)


@functools.cache
def run_model(workload: str, size: str) -> str:
    """The catalog's model id of a workload's size (``llama3.1-70b``); for the embedded
    workload its own name."""
    catalog = load_catalog()
    if workload not in catalog.workloads(release=None):
        return f"{workload}-{size}"
    return catalog.workload(workload).sizes[size]


_SHAPE_FIELDS = tuple(ModelShape.__dataclass_fields__)


def model_flops(model: Mapping[str, Any]) -> float:
    """Model FLOPs per sample for a run spec's ``model`` mapping."""
    shape = tuple(model[k] for k in _SHAPE_FIELDS)
    extras = tuple(sorted((model.get("extras") or {}).items()))
    return _model_flops(model.get("flops_formula", "llama"), shape, extras)


@functools.lru_cache(maxsize=4096)
def _model_flops(
    formula: str, shape: tuple[int, ...], extras: tuple[tuple[str, int], ...]
) -> float:
    # Cached: the exact (Fraction) arithmetic costs ~40 us, and a sweep repeats few models.
    return model_flops_per_sample(
        formula,
        ModelShape(**dict(zip(_SHAPE_FIELDS, shape, strict=True))),
        ModelExtras.from_dict(dict(extras)),
    )
