"""The runs whose launch.sh the golden files pin."""

from __future__ import annotations

import dataclasses

from llmbench.catalog import load_catalog
from llmbench.config import run_specs, validate_config
from llmbench.launch.variants import VARIANTS
from llmbench.runspec import RunSpec


def first_scale_specs() -> list[RunSpec]:
    """First size/dtype/GPU type/scale of every catalog workload, srun + enroot, all variants."""
    catalog = load_catalog()
    specs = []
    for workload in catalog.workloads():
        row = catalog.rows(workload)[0]
        scale = catalog.scales(workload, row.size, row.dtype, row.gpu_type)[0]
        config = validate_config(
            {
                "sweeps": [
                    {
                        "workload": workload,
                        "sizes": [row.size],
                        "dtypes": [row.dtype],
                        "gpu_type": row.gpu_type,
                        "scales": [scale],
                    }
                ],
                "launcher": "srun",
                "container": "enroot",
            }
        )
        (spec,) = run_specs(config)
        specs += [dataclasses.replace(spec, variant=v) for v in VARIANTS]
    return specs


def embedded_spec(launcher: str, nodes: int = 1) -> RunSpec:
    """The embedded workload at scale 2, 45 steps (srun: one rank per node)."""
    config = validate_config(
        {
            "sweeps": [
                {
                    "workload": "tiny-llama",
                    "sizes": ["tiny"],
                    "dtypes": ["fp32"],
                    "gpu_type": "cpu",
                    "scales": [2],
                }
            ],
            "steps": 45,
            "launcher": launcher,
        }
    )
    (spec,) = run_specs(config)
    return dataclasses.replace(spec, nodes=nodes, gpus_per_node=spec.gpus // nodes)


def golden_cases() -> dict[str, RunSpec]:
    """Golden file stem -> spec."""
    cases = {spec.run_id: spec for spec in first_scale_specs()}
    cases["embedded_local"] = embedded_spec("local")
    cases["embedded_srun_2nodes"] = embedded_spec("srun", nodes=2)
    return cases
