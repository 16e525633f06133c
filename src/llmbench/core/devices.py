"""Every question about a device kind (a run's ``gpu_type``), answered from the catalog's
rows: ``catalog/devices.yaml`` (the traits of every kind, the datasheets of the GPU models
a ``local-cuda`` node may hold) and ``catalog/gpus.yaml`` (a cluster GPU type's GPUs per
node and peaks). Code asks a trait, never which kind a run has: a new kind is a row.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from llmbench.core.catalog import load_catalog
from llmbench.core.catalog.load import read_yaml
from llmbench.core.catalog.query import not_allowed
from llmbench.errors import ConfigError

SAMPLERS = ("nvidia-smi", "cpu-sampler")
PEAK_SOURCES = ("measured", "node-datasheet", "datasheet")
TRAITS = ("has_gpus", "nccl", "sampled_by", "peak", "unit", "embedded")


@dataclass(frozen=True)
class Device:
    """One device kind and its traits (``catalog/devices.yaml`` says what each means)."""

    kind: str
    has_gpus: bool
    nccl: bool
    sampled_by: str
    peak: str
    unit: str
    embedded: bool
    gpus_per_node: int | None
    """Fixed by the node type for a cluster GPU; None where the run says (CPU, local)."""

    @property
    def nvidia_smi(self) -> bool:
        """launch.sh starts nvidia-smi samplers beside the ranks on every node."""
        return self.sampled_by == "nvidia-smi"


@dataclass(frozen=True)
class GpuModel:
    """A GPU model's dense datasheet peaks, by the name nvidia-smi prints."""

    match: str
    peak_tflops: Mapping[str, float]
    source: str


def _device(kind: str, row: Mapping[str, Any], gpus_per_node: int | None) -> Device:
    where = f"devices.yaml: {kind}"
    if sorted(row) != sorted(TRAITS):
        raise ConfigError(f"{where}: traits {sorted(row)}; allowed: exactly {', '.join(TRAITS)}")
    if row["sampled_by"] not in SAMPLERS:
        raise not_allowed("sampled_by", row["sampled_by"], SAMPLERS, where)
    if row["peak"] not in PEAK_SOURCES:
        raise not_allowed("peak", row["peak"], PEAK_SOURCES, where)
    if (row["peak"] == "datasheet") != (gpus_per_node is not None):
        raise ConfigError(f"{where}: peak datasheet if and only if gpus.yaml has the kind")
    return Device(kind=kind, gpus_per_node=gpus_per_node, **row)


@functools.cache
def _devices() -> dict[str, Device]:
    catalog = load_catalog()
    rows = read_yaml("devices.yaml")["devices"]
    missing = sorted(set(catalog.gpu_types()) - set(rows))
    if missing:
        raise ConfigError(f"devices.yaml: no row for GPU type(s) {', '.join(missing)}")
    gpus = {k: catalog.gpu(k).gpus_per_node for k in catalog.gpu_types()}
    return {kind: _device(kind, row, gpus.get(kind)) for kind, row in rows.items()}


@functools.cache
def _gpu_models() -> tuple[GpuModel, ...]:
    catalog = load_catalog()
    models = []
    for row in read_yaml("devices.yaml")["gpu_models"]:
        peaks = dict(catalog.gpu(row["gpu_type"]).peak_tflops) if "gpu_type" in row else {}
        peaks.update({k: float(v) for k, v in row["peak_tflops"].items()})
        models.append(GpuModel(row["match"], peaks, row["source"]))
    return tuple(models)


def kinds() -> tuple[str, ...]:
    """Every device kind a sweep may name, in the catalog's order."""
    return tuple(_devices())


def device(kind: str) -> Device:
    """The traits of ``kind`` (a run's ``gpu_type``); a clear error for an unknown one."""
    found = _devices().get(kind)
    if found is None:
        raise not_allowed("gpu_type", kind, kinds())
    return found


def embedded_kinds() -> tuple[str, ...]:
    """The kinds the embedded workload runs on."""
    return tuple(k for k, d in _devices().items() if d.embedded)


def embedded_kind(gpus: bool) -> str:
    """The embedded workload's kind on this machine's GPUs (``gpus``) or on its CPUs."""
    return next(k for k, d in _devices().items() if d.embedded and d.has_gpus == gpus)


def scale_unit(kinds_of_runs: Iterable[str]) -> str:
    """A scale axis's unit for runs on these kinds: CPU ranks when no run has GPUs."""
    return "GPUs" if any(device(k).has_gpus for k in set(kinds_of_runs)) else "CPU ranks"


def datasheet_peak(gpu_name: str, dtype: str) -> tuple[float, str]:
    """(dense peak TFLOPS, source) of a GPU model as nvidia-smi names it; NaN when unknown."""
    for model in _gpu_models():
        if model.match in gpu_name and dtype in model.peak_tflops:
            return model.peak_tflops[dtype], model.source
    return math.nan, f"no datasheet figure for {gpu_name!r} {dtype}"


def max_peak_tflops() -> float:
    """The highest dense peak of any device and dtype llmbench knows (a ceiling no logged
    figure can pass)."""
    catalog = load_catalog()
    cluster = (v for g in catalog.gpu_types() for v in catalog.gpu(g).peak_tflops.values())
    models = (v for m in _gpu_models() for v in m.peak_tflops.values())
    return max(*cluster, *models)
