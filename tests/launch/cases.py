"""The runs whose launch.sh the golden files pin."""

from __future__ import annotations

import dataclasses

from llmbench.core.catalog import RecipeRow, load_catalog
from llmbench.core.config import run_specs, validate_config
from llmbench.core.runspec import RunSpec
from llmbench.launch.variants import VARIANTS
from tests.helpers import tiny_config

EXAMPLE_IMAGES = {
    "llama3.1-nemo": "nvidia/nemo:25.07",
    "nemotron4-nemo": "nvidia/nemo:25.07",
    "llama3.1-mbridge": "nvidia/nemo:25.09",
}
"""Site images that override the catalog's (the reference's) images: not the reference's
stack. The golden cases run the reference's images."""


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
    """The embedded workload at scale 2, 45 steps (srun: one rank per node); the golden
    files pin these steps, whatever the workflow tests' runs take."""
    config = validate_config(tiny_config((2,), launcher=launcher, steps=45, window=[35, 44]))
    (spec,) = run_specs(config)
    return dataclasses.replace(spec, nodes=nodes, gpus_per_node=spec.gpus // nodes)


def profile_spec(workload: str, size: str, gpu_type: str, scale: int, **profile) -> RunSpec:
    """A profile run of one catalog scale, with optional ``profile`` config keys."""
    config = validate_config(
        {
            "sweeps": [
                {
                    "workload": workload,
                    "sizes": [size],
                    "dtypes": ["fp8"],
                    "gpu_type": gpu_type,
                    "scales": [scale],
                    "variants": ["profile"],
                }
            ],
            "launcher": "srun",
            "container": "enroot",
            "profile": profile,
        }
    )
    (spec,) = run_specs(config)
    return spec


def release_specs(release: str = "v26.08") -> list[RunSpec]:
    """A later release's first row of each (workload, precision recipe), a perf run with
    srun + enroot in the release's image: every new family and precision once."""
    firsts: dict[tuple[str, str], RecipeRow] = {}
    for row in load_catalog().rows(release=release):
        firsts.setdefault((row.workload, row.precision), row)
    config = validate_config(
        {
            "sweeps": [row.sweep_entry() for row in firsts.values()],
            "launcher": "srun",
            "container": "enroot",
        }
    )
    return run_specs(config)


def golden_cases() -> dict[str, RunSpec]:
    """Golden file stem -> spec."""
    cases = {spec.run_id: spec for spec in first_scale_specs()}
    cases |= {spec.run_id: spec for spec in release_specs()}
    # The 340B document profiles ranks 0-8 only: the rank-selecting wrapper.
    cases["profile_ranks_from_document"] = profile_spec("nemotron4-nemo", "340b", "gb200", 128)
    cases["profile_config_override"] = profile_spec(
        "llama3.1-nemo", "8b", "h100", 16, steps=[10, 12], ranks="0,8-9", gpu_metrics=True
    )
    cases["embedded_local"] = embedded_spec("local")
    cases["embedded_srun_2nodes"] = embedded_spec("srun", nodes=2)
    return cases
