"""Per-run values of the workflow's rules, as plain functions (``workflow.sweep`` calls them).

Snakemake evaluates a rule's resource, param and input callables at least once per job; in
a 10,000-run dry run that is much of the time it spends. So a value every run shares is
handed over as a constant (``per_run``) and a per-run answer is computed once (the
``Sweep`` caches by run id).
"""

from __future__ import annotations

import functools
import importlib.util
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from llmbench.core.devices import scale_unit
from llmbench.core.launchers import is_platform
from llmbench.core.runspec import RunSpec
from llmbench.core.stage import needs_venv, venv_python
from llmbench.job.attempts import nodes_to_avoid
from llmbench.launch.slurm import excluding, slurm_resources
from llmbench.setup.venv import source_root


def per_run(
    values: Mapping[str, Any], of_run: Callable[[str, int], Any], varies: bool = False
) -> Any:
    """The one value when every run of ``values`` (run id -> value of its first try) has
    the same and it cannot change on a retry (``varies``), else a Snakemake callable
    ``(wildcards, attempt)`` giving ``of_run(run, attempt)``: always the callable when
    ``values`` is empty (a process that has no table of every run's)."""
    distinct = set(values.values())
    if len(distinct) == 1 and not varies:
        return distinct.pop()

    def value(wildcards: Any, attempt: int) -> Any:
        return of_run(wildcards.run, attempt)

    return value


def train_resources(
    spec: RunSpec,
    run_dir: Path,
    attempt: int,
    extras: Mapping[str, Any],
    threads_per_rank: int,
    preflight_exclude: str = "",
) -> dict[str, Any]:
    """Slurm resources of one try of a run's training job: never on the nodes the
    preflight gate rejected (``preflight_exclude``, comma-separated), and a retry
    (``attempt`` > 1) avoids the nodes an infrastructure failure of the last attempt hit."""
    avoid = nodes_to_avoid(run_dir) if attempt > 1 else None
    return slurm_resources(spec, excluding(extras, preflight_exclude, avoid), threads_per_rank)


@functools.cache
def _absolute(path: str) -> str:
    return str(Path(path).resolve())  # once per sweep, not once per run


def launch_env(
    spec: RunSpec, stage: str, master_addr: str | None, hf_home: str | None = None
) -> dict[str, str]:
    """Launch settings the run's ``launch.sh`` reads from its environment (a
    ``PYTHONPATH`` here goes before the job's own: ``llmbench.job.runner``); the site's
    ``hf_home`` as HF_HOME (without it the job keeps the caller's HF_HOME)."""
    env = {"LLMBENCH_STAGE_PATH": _absolute(stage)}
    if hf_home:
        env["HF_HOME"] = hf_home
    if needs_venv(spec):
        env["LLMBENCH_PYTHON"] = _absolute(venv_python(stage))
        if spec.container == "none":
            # The stage venv's .pth names the checkout that built it, which may since have
            # moved or be another user's: the entry point imports this workflow's source.
            env["PYTHONPATH"] = str(source_root())
    if master_addr:
        env["LLMBENCH_MASTER_ADDR"] = master_addr
    return env


def label_values(specs: Iterable[RunSpec]) -> dict[str, str]:
    """The report's labels of a set of runs: workloads, sizes, dtypes, GPU types, scales."""
    specs = list(specs)
    scales = sorted({spec.gpus for spec in specs})
    unit = scale_unit(s.gpu_type for s in specs)
    return {
        "workload": ", ".join(sorted({s.workload for s in specs})),
        "size": ", ".join(sorted({s.size for s in specs})),
        "dtype": ", ".join(sorted({s.dtype for s in specs})),
        "GPU type": ", ".join(sorted({s.gpu_type for s in specs})),
        "scale": f"{scales[0]}-{scales[-1]} {unit}" if scales else "",
    }


def run_groups(specs: Iterable[RunSpec]) -> dict[str, list[str]]:
    """Scaling group id -> its run ids, in sweep order."""
    groups: dict[str, list[str]] = {}
    for spec in specs:
        groups.setdefault(spec.group_id, []).append(spec.run_id)
    return groups


EMBEDDED_MODULES = ("torch",)
"""What the embedded workload trains with, in llmbench's own Python (pyproject's
``embedded`` extra)."""


def missing_embedded_packages(
    specs: Iterable[RunSpec], modules: Iterable[str] = EMBEDDED_MODULES
) -> str | None:
    """One line naming what to install when a run of the embedded workload would start in
    this Python without the packages it trains with (a plain ``pip install .``); None when
    nothing is missing or no such run starts here (a platform's ranks run in its image)."""
    if not any(s.framework == "torch" and not is_platform(s.launcher) for s in specs):
        return None
    missing = [name for name in modules if importlib.util.find_spec(name) is None]
    if not missing:
        return None
    return (
        f"the embedded workload (tiny-llama) needs {', '.join(missing)}, not installed in this "
        "Python; allowed: install llmbench with its `embedded` extra, pip install '.[embedded]' "
        "(torch==2.13.0, a CPU build)"
    )
