"""What a sweep will cost before it is submitted: runs, nodes, GPUs, GPU-hours, images.

A run's step time comes from the published numbers (the spec's tables, NVIDIA's
performance-summary rows), in this order:

1. **published**: a published step time for the same (workload, size, dtype, GPU type,
   GPUs, release, GBS).
2. **estimated** from the nearest published row of the same model (workload, size) in
   the same release: first one on the same GPU type in the same dtype, then the same GPU
   type in another dtype, then the same dtype on another GPU type, then any; among
   those the nearest dense peak (the most alike GPU type), the nearest scale (in powers
   of two of GPUs), then the nearest GBS. The rule
   keeps that row's tokens/s per GPU, so step time = seq x GBS / (its tokens/s/GPU x
   GPUs), lowered (never raised) by the run's dense peak over the row's where the run's
   precision or GPU type has the lower peak. Erring toward more GPU-hours: the larger
   scale's extra communication and a faster precision's gain are not counted.
3. no estimate: no published row of the model in that release (the embedded workload).

GPU-hours = steps x step time x GPUs / 3600. The ``estimate`` column says which row an
estimate came from.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

import pandas as pd

from llmbench.core.catalog import load_catalog
from llmbench.core.runspec import RunSpec
from llmbench.core.stage import image_import

PLAN_COLUMNS = (
    "run_id",
    "workload",
    "size",
    "dtype",
    "gpu_type",
    "gpus",
    "nodes",
    "variant",
    "release",
    "steps",
    "runtime_limit_min",
    "reference_step_time_s",
    "est_step_time_s",
    "est_runtime_min",
    "est_gpu_hours",
    "estimate",
    "image",
)
PUBLISHED = "published"


class PublishedStep(NamedTuple):
    """One published step time and what it was measured at."""

    workload: str
    size: str
    dtype: str
    gpu_type: str
    gpus: int
    release: str
    gbs: int
    step_time_s: float


def published_steps(published: Iterable[Any]) -> list[PublishedStep]:
    """The spec's table rows and the performance-summary rows as ``PublishedStep``s (a
    table row first where both give the same key)."""
    out: dict[tuple[Any, ...], PublishedStep] = {}
    for row in published:
        if row.kind in ("table", "summary") and row.step_time_s > 0:
            step = PublishedStep(*row.key(), row.release, row.gbs, float(row.step_time_s))
            out.setdefault(step[:7], step)
    return list(out.values())


TIER_WEIGHTS = ((2, "gpu_type"), (1, "dtype"))
"""A published row unlike the run in GPU type ranks below one unlike it in dtype."""


def _peak(gpu_type: str, dtype: str) -> float | None:
    """Dense peak TFLOPS of a catalog GPU type (None for the CPU and the proof kit's)."""
    catalog = load_catalog()
    if gpu_type not in catalog.gpu_types():
        return None
    return catalog.gpu(gpu_type).peak_tflops.get(dtype)


def _nearest(spec: RunSpec, rows: Sequence[PublishedStep]) -> PublishedStep | None:
    """The row an estimate of ``spec`` starts from (module docstring, rule 2)."""
    same = [r for r in rows if (r.workload, r.size, r.release) ==
            (spec.workload, spec.size, spec.release)]  # fmt: skip

    run_peak = _peak(spec.gpu_type, spec.dtype)

    def rank(r: PublishedStep) -> tuple[int, float, float, float]:
        # same GPU type and dtype, same GPU type, same dtype, neither; then the nearest
        # peak (the most alike GPU type), scale and GBS
        tier = sum(w * (getattr(r, f) != getattr(spec, f)) for w, f in TIER_WEIGHTS)
        peak = _peak(r.gpu_type, r.dtype)
        alike = abs(math.log(peak / run_peak)) if peak and run_peak else math.inf
        scale = abs(math.log2(r.gpus / spec.gpus))
        return tier, alike, scale, abs(math.log2(r.gbs / spec.global_batch_size))

    return min(same, key=rank, default=None)


def estimate_step(spec: RunSpec, rows: Sequence[PublishedStep]) -> tuple[float, str]:
    """The run's step time (s) and where it comes from: ``published``, the row an
    estimate came from, or NaN and why not."""
    for r in rows:
        if (r.workload, r.size, r.dtype, r.gpu_type, r.gpus, r.release, r.gbs) == (
            spec.workload, spec.size, spec.dtype, spec.gpu_type, spec.gpus, spec.release,
            spec.global_batch_size,
        ):  # fmt: skip
            return r.step_time_s, PUBLISHED
    base = _nearest(spec, rows)
    if base is None:
        return math.nan, f"no published step time of {spec.workload} {spec.size}"
    tokens_per_s_per_gpu = spec.seq_len * base.gbs / base.step_time_s / base.gpus
    run_peak, base_peak = _peak(spec.gpu_type, spec.dtype), _peak(base.gpu_type, base.dtype)
    if run_peak and base_peak and run_peak < base_peak:
        tokens_per_s_per_gpu *= run_peak / base_peak
    step_s = spec.seq_len * spec.global_batch_size / (tokens_per_s_per_gpu * spec.gpus)
    return step_s, f"estimated from {base.dtype} {base.gpu_type}x{base.gpus} GBS {base.gbs}"


def plan_table(specs: Iterable[RunSpec], published: Sequence[PublishedStep]) -> pd.DataFrame:
    """One row per run with its estimate and the image the workflow imports for it
    (``llmbench.core.stage.image_import``; empty when the run uses no container)."""
    rows = []
    for spec in specs:
        imported = image_import(spec)
        step_s, basis = estimate_step(spec, published)
        runtime_min = spec.steps * step_s / 60
        rows.append(
            {
                "run_id": spec.run_id,
                "workload": spec.workload,
                "size": spec.size,
                "dtype": spec.dtype,
                "gpu_type": spec.gpu_type,
                "gpus": spec.gpus,
                "nodes": spec.nodes,
                "variant": spec.variant,
                "release": spec.release,
                "steps": spec.steps,
                "runtime_limit_min": spec.limits.time_limit_s // 60,
                "reference_step_time_s": step_s if basis == PUBLISHED else math.nan,
                "est_step_time_s": step_s,
                "est_runtime_min": runtime_min,
                "est_gpu_hours": runtime_min / 60 * spec.gpus,
                "estimate": basis,
                "image": imported.image if imported else "",
            }
        )
    return pd.DataFrame(rows, columns=list(PLAN_COLUMNS))


def plan_summary(plan: pd.DataFrame) -> dict[str, Any]:
    """Totals a person checks before submitting."""
    known = plan.est_gpu_hours.notna()
    published = plan.estimate.eq(PUBLISHED)
    return {
        "runs": len(plan),
        "max_nodes": int(plan.nodes.max()) if len(plan) else 0,
        "total_gpus_requested": int(plan.gpus.sum()),
        "est_gpu_hours": float(plan.est_gpu_hours[known].sum()),
        "runs_published": int(published.sum()),
        "runs_estimated": int((known & ~published).sum()),
        "runs_without_estimate": int((~known).sum()),
        "images": sorted(i for i in plan.image.unique() if i),
    }
