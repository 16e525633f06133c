"""The kit's combined tables: the embedded workflow's runs and the framework runs, read
and written by the aggregate rule's own code (``llmbench.aggregate.job.aggregate_sweep``) into
``<outdir>/tables/``, one row per run in the same columns."""

from __future__ import annotations

import json
from pathlib import Path

from llmbench.aggregate.job import aggregate_sweep
from llmbench.history.sweep import stamp_sweep
from llmbench.job.runner import RECORD_FILE

WORKFLOW_RESULTS = Path("workflow/results")
FRAMEWORK_RESULTS = Path("framework/results")
TABLES = Path("tables")
TABLE_FILES = {
    "sweep": "sweep.json", "runs": "runs.parquet", "runs_csv": "runs.csv",
    "steps": "steps.parquet", "scaling_md": "scaling.md", "overview_html": "overview.html",
    "runs_html": "runs.html", "scaling_html": "scaling.html",
    "references_html": "references.html", "failures_html": "failures.html",
    "profiles_html": "profiles.html", "why_slower_html": "why_slower.html",
    "result": "result.json",
}  # fmt: skip
"""The aggregate rule's outputs, by name, as files of ``tables/`` (``OUTPUTS +
RESULT_OUTPUTS`` of ``llmbench.aggregate.job``: a test holds them equal)."""
TRAIN_TOKENS = 1.0e12
TOLERANCE = 0.05


def run_records(outdir: Path) -> list[Path]:
    """Every run's ``run.json``: the workflow's, then the framework step's."""
    return [
        path
        for results in (WORKFLOW_RESULTS, FRAMEWORK_RESULTS)
        for path in sorted((outdir / results / "runs").glob(f"*/{RECORD_FILE}"))
    ]


def combined_tables(outdir: Path) -> Path | None:
    """Write ``tables/`` for every run found; its ``runs.parquet``, or None when no run
    left a record. The sweep's identity is the workflow's, where it wrote one."""
    records = run_records(outdir)
    if not records:
        return None
    inputs: dict[str, object] = {"records": records}
    cpu_peak = outdir / WORKFLOW_RESULTS / "calibration/cpu_peak.json"
    if cpu_peak.exists():
        inputs["cpu_peak"] = cpu_peak
    sweep_file = outdir / WORKFLOW_RESULTS / "tables/sweep.json"
    sweep = (
        json.loads(sweep_file.read_text())
        if sweep_file.exists()
        else stamp_sweep("", source_dir=Path(__file__).parent)
    )
    (outdir / TABLES).mkdir(parents=True, exist_ok=True)
    outputs = {name: outdir / TABLES / file for name, file in TABLE_FILES.items()}
    aggregate_sweep(inputs, outputs, sweep, TRAIN_TOKENS, TOLERANCE)
    return outputs["runs"]
