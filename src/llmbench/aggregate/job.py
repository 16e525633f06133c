"""The aggregate job: a sweep's run folders -> its tables and pages, written atomically.

``aggregate_sweep`` is what ``workflow/scripts/aggregate.py`` calls: ``read_sweep`` reads
every run's record, attempt history, log summary and parsed steps, and
``write_sweep_tables`` builds the runs and steps tables
(``llmbench.aggregate.runs_and_steps``), compares them with the references and writes
the Parquet, CSV, Markdown and HTML files.
``benchmarks/aggregate.py`` times ``write_sweep_tables`` itself, on 100,000 runs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pandas as pd

from llmbench.aggregate.arrow_memory import table_building_pool
from llmbench.aggregate.explain_inputs import explain_runs
from llmbench.aggregate.reference import compare, references_for
from llmbench.aggregate.result_file import result_document, validate
from llmbench.aggregate.run_facts import peak_for
from llmbench.aggregate.runs_and_steps import (
    attempt_nodelist,
    runs_table_from_frames,
    site_fabric,
    spec_columns,
    steps_table_from_frame,
)
from llmbench.core import run_folder
from llmbench.files.atomic import write_json_atomic, write_text_atomic
from llmbench.files.atomic_tables import write_csv_atomic, write_parquet_atomic
from llmbench.job.attempts import attempt_history
from llmbench.job.run_record import read_record, read_run_transport
from llmbench.report.html_tables import (
    failures_html,
    overview_html,
    profiles_html,
    references_html,
    runs_html,
    why_slower_html,
)
from llmbench.report.scaling_tables import scaling_html, scaling_markdown
from llmbench.telemetry.results import read_energy

T = TypeVar("T")

STEPS_ROW_GROUP = 65_536
"""Rows per row group of steps.parquet (a 100,000-run sweep's has about 5 million rows)."""

OUTPUTS = (
    "sweep", "runs", "runs_csv", "steps", "scaling_md", "overview_html", "runs_html",
    "scaling_html", "references_html", "failures_html", "profiles_html",
)  # fmt: skip
"""The files ``write_sweep_tables`` writes, by the aggregate rule's output names."""
RESULT_OUTPUTS = ("why_slower_html", "result")
"""The files ``write_result`` writes after them: every output of the aggregate rule is
``OUTPUTS + RESULT_OUTPUTS``."""


@dataclass
class SweepInputs:
    """What the aggregate job reads, one entry per run in the same order: run records,
    (attempts, earlier outcomes) from ``attempt_history``, Slurm node lists, the log
    summaries (a frame), every run's parsed steps (one long frame with ``run_id``) and
    its window energy (a frame, ``llmbench.telemetry.results.read_energy``; None: not read),
    its NCCL transport report (``llmbench.job.run_record.read_run_transport``; None: not read)
    and the cluster's fabric (``llmbench.aggregate.runs_and_steps.site_fabric``)."""

    records: list[dict[str, Any]]
    histories: list[tuple[int, str]]
    nodelists: list[str | None]
    summaries: pd.DataFrame
    steps: pd.DataFrame
    cpu_peak: dict[str, Any] | None = None
    energy: pd.DataFrame | None = None
    transport: pd.DataFrame | None = None
    fabric: str | None = None


def read_sweep(
    record_paths: Sequence[str | Path],
    cpu_peak: str | Path | None,
    fabric: str | None = None,
    nodes: str | Path | None = None,
) -> SweepInputs:
    """Read the run folders of ``record_paths`` (each run's ``run.json``; its
    ``summary.json``, ``steps.parquet``, ``energy.json`` and ``transport.json`` lie beside
    it); ``fabric`` is the site's value, ``nodes`` the preflight's nodes table (where it
    ran), which tells the fabric where the site does not."""
    run_dirs = [Path(path).parent for path in record_paths]
    records = [read_record(path) for path in record_paths]
    steps = [
        pd.read_parquet(run_dir / run_folder.STEPS).assign(run_id=rec["run_id"])
        for rec, run_dir in zip(records, run_dirs, strict=True)
    ]
    return SweepInputs(
        records=records,
        histories=[attempt_history(run_dir) for run_dir in run_dirs],
        nodelists=[
            attempt_nodelist(run_dir, rec) for rec, run_dir in zip(records, run_dirs, strict=True)
        ],
        summaries=pd.DataFrame([read_record(run_dir / run_folder.SUMMARY) for run_dir in run_dirs]),
        steps=pd.concat(steps, ignore_index=True),
        cpu_peak=read_record(cpu_peak) if cpu_peak else None,
        energy=pd.DataFrame([read_energy(run_dir) for run_dir in run_dirs]),
        transport=pd.DataFrame(
            [read_run_transport(d, rec) for rec, d in zip(records, run_dirs, strict=True)]
        ),
        fabric=site_fabric(fabric, pd.read_parquet(nodes) if nodes else None),
    )


def _run(_name: str, fn: Callable[[], T]) -> T:
    return fn()


def write_sweep_tables(
    inputs: SweepInputs,
    sweep: Mapping[str, Any],
    references: pd.DataFrame,
    tolerance: float,
    train_tokens: float,
    outputs: Mapping[str, str | Path],
    run_step: Callable[[str, Callable[[], Any]], Any] = _run,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Build the runs and steps tables of ``inputs`` and write every file of ``OUTPUTS``
    to ``outputs[name]``; returns both tables. ``run_step(name, fn)`` runs each step
    (a benchmark passes a timer)."""
    records = inputs.records

    def spec_rows() -> pd.DataFrame:
        peaks = [peak_for(rec["spec"], inputs.cpu_peak) for rec in records]
        columns = spec_columns(records, peaks, inputs.histories, inputs.nodelists)
        return pd.DataFrame(columns).assign(sweep_id=sweep["sweep_id"])

    def steps_table() -> pd.DataFrame:
        steps = steps_table_from_frame(specs, inputs.steps)
        # sorted by group (RUN_ORDER) in row groups: a plot job reads its group's only
        write_parquet_atomic(steps, outputs["steps"], row_group_size=STEPS_ROW_GROUP)
        return steps

    def write_tables() -> None:
        write_json_atomic(outputs["sweep"], dict(sweep))
        write_parquet_atomic(runs, outputs["runs"])
        write_csv_atomic(runs, outputs["runs_csv"])

    def write_pages() -> None:
        pages = {
            "overview_html": lambda: overview_html(runs),
            "runs_html": lambda: runs_html(runs),
            "scaling_md": lambda: scaling_markdown(runs),
            "scaling_html": lambda: scaling_html(runs),
            "references_html": lambda: references_html(runs, tolerance),
            "failures_html": lambda: failures_html(runs),
            "profiles_html": lambda: profiles_html(runs),
        }
        for name, page in pages.items():
            write_text_atomic(page(), outputs[name])

    # The steps table and its Parquet are mostly Arrow and numpy work, which release the
    # GIL: built on a second thread while this one builds the runs table, its CSV and the
    # pages, which are mostly Python (the aggregate rule asks for two cores).
    with table_building_pool(), ThreadPoolExecutor(max_workers=1) as background:
        specs = run_step("spec_rows", spec_rows)
        steps_done = background.submit(steps_table)
        runs = run_step(
            "runs_table",
            lambda: runs_table_from_frames(
                specs,
                inputs.summaries,
                train_tokens,
                inputs.energy,
                inputs.transport,
                inputs.fabric,
            ),
        )
        runs = run_step("reference_compare", lambda: compare(runs, references, tolerance))
        run_step("write_parquet_csv", write_tables)
        run_step("html_markdown_tables", write_pages)
        steps = run_step("steps_table_wait", steps_done.result)  # what the others did not hide
    return runs, steps


def aggregate_sweep(
    inputs: Mapping[str, Any],
    outputs: Mapping[str, str | Path],
    sweep: Mapping[str, Any],
    train_tokens: float,
    tolerance: float,
    fabric: str | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The aggregate rule: read the sweep's run folders (``inputs["records"]``, the
    ``run.json`` files; optional ``cpu_peak``, ``reference`` and preflight ``nodes``
    files; ``fabric`` the site's), write its tables
    and pages. ``sweep`` is this invocation's identity
    (``llmbench.history.sweep.stamp_sweep``): the invocation that builds the tables is a
    sweep of its own (docs/history.md). Returns the runs and steps tables."""
    runs, steps = write_sweep_tables(
        read_sweep(inputs["records"], inputs.get("cpu_peak"), fabric, inputs.get("nodes")),
        sweep,
        references_for(inputs.get("reference")),
        tolerance,
        train_tokens,
        outputs,
    )
    records = [Path(p) for p in inputs["records"]]
    results = records[0].parents[2] if records else Path(outputs["result"]).parent
    write_result(runs, steps, sweep, outputs, results)
    return runs, steps


def write_result(
    runs: pd.DataFrame,
    steps: pd.DataFrame,
    sweep: Mapping[str, Any],
    outputs: Mapping[str, str | Path],
    results: Path,
) -> None:
    """The "Why slower" page (``outputs["why_slower_html"]``) and ``result.json``
    (``outputs["result"]``, checked against its schema before it is written) of the
    results folder ``results`` (which holds ``runs/`` and ``tables/``)."""
    explanations = explain_runs(results, runs, steps)
    write_text_atomic(
        why_slower_html([e.as_dict() for e in explanations]), outputs["why_slower_html"]
    )
    document = result_document(runs, sweep, explanations)
    validate(document, "result", str(outputs["result"]))
    write_json_atomic(outputs["result"], document)
