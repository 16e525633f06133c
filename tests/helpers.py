"""What tests share: the embedded workload's configs, the real snakemake CLI on this repo,
and runs and steps tables of a small sweep built by the real table code (no logs, no
workflow), for the tests of what is drawn and printed from them."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import numpy as np
import pandas as pd
import pytest
import yaml

from llmbench.aggregate.reference import builtin_references, compare
from llmbench.aggregate.run_facts import Peak, peak_for
from llmbench.aggregate.runs_and_steps import (
    SUMMARY_COLUMNS,
    runs_table_from_frames,
    spec_columns,
    steps_table_from_frame,
)
from llmbench.core.catalog import load_catalog
from llmbench.core.catalog.records import RecipeRow
from llmbench.core.catalog.rules import RULES
from llmbench.core.config import Host, run_specs, validate_config

REPO = Path(__file__).resolve().parents[1]
IN_CI = os.environ.get("CI") == "true"
HERE = Host(cores=os.cpu_count() or 1, environ=os.environ)
"""This machine, as the workflow and ``llmbench plan`` hand it to the config check."""


def missing_prerequisite(reason: str) -> NoReturn:
    """Skip a test whose outside prerequisite is missing; under ``CI=true`` fail it
    instead, so CI cannot be green with a whole test group skipped."""
    if IN_CI:
        pytest.fail(f"CI=true and a prerequisite is missing: {reason}", pytrace=False)
    pytest.skip(reason)


def tiny_sweep(scales: tuple[int, ...] = (1, 2), dtypes: tuple[str, ...] = ("fp32",)) -> dict:
    """A sweep entry of the embedded workload (tiny Llama on the CPU) at ``scales`` ranks."""
    return {
        "workload": "tiny-llama",
        "sizes": ["tiny"],
        "dtypes": list(dtypes),
        "gpu_type": "cpu",
        "scales": list(scales),
    }


WORKFLOW_CONFIGS = REPO / "tests" / "workflow" / "configs"
"""The workflow tests' experiments, as files a person can run: ``snakemake -n --configfile``."""


def workflow_config(name: str) -> dict:
    """``tests/workflow/configs/<name>.yaml``, a fresh copy."""
    return yaml.safe_load((WORKFLOW_CONFIGS / f"{name}.yaml").read_text())


TINY_STEPS = workflow_config("two-runs")["steps"]
TINY_WINDOW = workflow_config("two-runs")["window"]
"""The tests' runs (configs/two-runs.yaml): fewer steps than the default run's 50."""


def tiny_config(scales: tuple[int, ...] = (1, 2), **top: object) -> dict:
    """The embedded workload in fp32 at ``scales`` ranks, ``TINY_STEPS`` steps."""
    return {"sweeps": [tiny_sweep(scales)], "steps": TINY_STEPS, "window": TINY_WINDOW, **top}


TWO_RUN_CONFIG = workflow_config("two-runs")


@dataclass(frozen=True)
class Sweep:
    workdir: Path
    config: dict
    first_run: subprocess.CompletedProcess

    @property
    def results(self) -> Path:
        return self.workdir / "results"


def snakemake_command(workdir: Path, *args: str) -> list[str]:
    """The real snakemake CLI on this repo's Snakefile, working in ``workdir``."""
    return [
        sys.executable,
        "-m",
        "snakemake",
        "--snakefile",
        str(REPO / "Snakefile"),
        "--directory",
        str(workdir),
        *args,
    ]


def snakemake(workdir: Path, *args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    """Run ``snakemake_command`` to the end."""
    return subprocess.run(
        snakemake_command(workdir, *args),
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=dict(os.environ, PYTHONUNBUFFERED="1"),
    )


def write_config(workdir: Path, config: dict) -> Path:
    path = workdir / "config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


STEPS = 50


def step_time_s(spec: Mapping) -> float:
    """A plausible step time that grows a little with scale (weak scaling)."""
    return 12.0 * (1 + 0.02 * np.log2(spec["gpus"])) * (0.6 if spec["dtype"] == "fp8" else 1.0)


def sweep_tables(
    sweeps: list[dict],
    outcome: Callable[[Mapping], tuple[str, str]] = lambda spec: ("success", ""),
    train_tokens: float = 1e12,
    cpu_peak: Mapping | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(runs, steps) of ``sweeps`` (config entries). ``outcome(spec)`` gives each run's
    (status, reason); a run that did not succeed has no step time and 10 logged steps, and
    a failed one exit code 1."""
    specs = [s.to_dict() for s in run_specs(validate_config({"sweeps": sweeps}))]
    rows, summaries, steps = [], [], []
    for spec in specs:
        status, reason = outcome(spec)
        ok = status == "success"
        record = {
            "run_id": spec["run_id"],
            "attempt": 1,
            "exit_code": 1 if status == "failed" else 0,
            "log": "attempt-1/train.log",
            "started_at": "2026-01-01T00:00:00.000+00:00",
            "finished_at": "2026-01-01T00:10:00.000+00:00",
            "spec": spec,
        }
        rows.append(spec_row(record, peak_for(spec, cpu_peak)))
        t = step_time_s(spec)
        summaries.append({
            "status": status, "reason": reason,
            "step_time_mean_s": t if ok else np.nan, "step_time_std_s": 0.0 if ok else np.nan,
            "step_time_last_s": t, "n_iterations": STEPS if ok else 10,
            "max_iteration": (STEPS if ok else 10) - 1, "tflops_per_gpu_mean": np.nan,
        })  # fmt: skip
        n = STEPS if ok else 10
        steps.append(pd.DataFrame({
            "run_id": spec["run_id"], "iteration": np.arange(n),
            "step_time_s": np.full(n, t) * np.where(np.arange(n) < 2, 3.0, 1.0),
            "loss": np.linspace(11, 6, n), "tflops_per_gpu": np.nan,
        }))  # fmt: skip
    spec_frame = pd.DataFrame(rows)
    runs = runs_table_from_frames(spec_frame, pd.DataFrame(summaries), train_tokens)
    runs = compare(runs, builtin_references())
    return runs, steps_table_from_frame(spec_frame, pd.concat(steps, ignore_index=True))


def nemo_8b(dtypes=("bf16", "fp8"), scales=(8, 16, 32), variants=("perf",)) -> list[dict]:
    """Llama 3.1 8B on H100 (NeMo 2): peaks in the catalog, published references."""
    return [{"workload": "llama3.1-nemo", "sizes": ["8b"], "dtypes": list(dtypes),
             "gpu_type": "h100", "scales": list(scales), "variants": list(variants)}]  # fmt: skip


def tiny_cpu(scales=(1, 2, 4)) -> list[dict]:
    """The embedded CPU workload: no peak without calibration, no reference."""
    return [tiny_sweep(scales)]


def runs_table_from_records(
    parts: Iterable[tuple[Mapping[str, Any], Mapping[str, Any], Peak | None]],
    train_tokens: float,
) -> pd.DataFrame:
    """The runs table of (run record, log summary, peak) triples: a handful of runs through
    ``spec_columns`` and ``runs_table_from_frames``. Summary keys
    left out (``reason``, ``tflops_per_gpu_mean`` ...) read as empty or NaN."""
    records, summaries, peaks = [], [], []
    for record, summary, peak in parts:
        records.append(record)
        summaries.append(summary)
        peaks.append(peak)
    none = [None] * len(records)
    return runs_table_from_frames(
        pd.DataFrame(spec_columns(records, peaks, none, none)),
        pd.DataFrame(summaries, columns=list(SUMMARY_COLUMNS)),
        train_tokens,
    )


def release_runs(release: str, **config: object) -> list:
    """One perf run per catalog row of ``release``, srun + enroot (the reference's image),
    with any other top-level config keys."""
    rows = load_catalog().rows(release=release)
    base = {"sweeps": [r.sweep_entry() for r in rows], "launcher": "srun", "container": "enroot"}
    return run_specs(validate_config({**base, **config}))


def violations(row: RecipeRow) -> list[str]:
    """Every rule the row breaks, one message each (empty when valid)."""
    return [msg for rule in RULES if (msg := rule(row)) is not None]


def spec_row(
    record: Mapping[str, Any],
    peak: Peak | None,
    history: tuple[int, str] | None = None,
    nodelist: str | None = None,
) -> dict[str, Any]:
    """The per-run facts known before parsing: keys, configuration, peak, provenance;
    ``history`` is (attempts so far, earlier attempts' outcomes) from
    ``llmbench.job.attempts.attempt_history``; ``nodelist`` the attempt's Slurm nodes. One
    run's row of ``spec_columns``."""
    columns = spec_columns([record], [peak], [history], [nodelist])
    return {name: values[0] for name, values in columns.items()}
