"""What a sweep will cost before it is submitted: runs, nodes, GPUs, GPU-hours, images.

GPU-hours are estimated from the published step time for the same (workload, size,
dtype, GPU type, GPUs, release, GBS) where one exists (the spec's tables, NVIDIA's
performance-summary rows): steps x step time x GPUs.
Runs without a reference get no estimate rather than a guess.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

from llmbench.spec.runspec import RunSpec
from llmbench.spec.stage import image_import

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
    "est_runtime_min",
    "est_gpu_hours",
    "image",
)


PlanKey = tuple[str, str, str, str, int, str, int]
"""(workload, size, dtype, gpu_type, GPUs, release, GBS): a run's published counterpart."""


def reference_step_times(published: Iterable[Any]) -> dict[PlanKey, float]:
    """Published step times by ``PlanKey``: the spec's tables, then the performance
    summary rows (a table row wins where both have one)."""
    out: dict[PlanKey, float] = {}
    for row in published:
        if row.kind in ("table", "summary"):
            key = (*row.key(), row.release, row.gbs)
            out.setdefault(key, row.step_time_s)
    return out


def plan_table(specs: Iterable[RunSpec], references: Mapping[PlanKey, float]) -> pd.DataFrame:
    """One row per run with its estimate and the image the workflow imports for it
    (``llmbench.spec.stage.image_import``; empty when the run uses no container)."""
    rows = []
    for spec in specs:
        imported = image_import(spec)
        key = (spec.workload, spec.size, spec.dtype, spec.gpu_type, spec.gpus, spec.release,
               spec.global_batch_size)  # fmt: skip
        step_s = references.get(key, math.nan)
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
                "reference_step_time_s": step_s,
                "est_runtime_min": runtime_min,
                "est_gpu_hours": runtime_min / 60 * spec.gpus,
                "image": imported.image if imported else "",
            }
        )
    return pd.DataFrame(rows, columns=list(PLAN_COLUMNS))


def plan_summary(plan: pd.DataFrame) -> dict[str, Any]:
    """Totals a person checks before submitting."""
    known = plan.est_gpu_hours.notna()
    return {
        "runs": len(plan),
        "max_nodes": int(plan.nodes.max()) if len(plan) else 0,
        "total_gpus_requested": int(plan.gpus.sum()),
        "est_gpu_hours": float(plan.est_gpu_hours[known].sum()),
        "runs_without_estimate": int((~known).sum()),
        "images": sorted(i for i in plan.image.unique() if i),
    }
