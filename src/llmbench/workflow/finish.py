"""What the person who started a sweep reads at its end: how many runs gave which
outcome, and where the tables, the report and the explanations are.

Called from the workflow's ``onsuccess``/``onerror`` handlers (Snakemake runs them in the
main process only, after a real run, not after a dry run or "Nothing to be done"). It
reads what the sweep wrote: ``result.json`` after a successful sweep (the outcomes as
the tables judge them), each run's ``summary.json`` after one that stopped (the
aggregate step may not have run). It never fails the sweep: a file it cannot read is
counted as a run without a result.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any, TextIO

from llmbench.core.results_layout import RESULT, RUNS_CSV, RUNS_TABLE, STEPS_TABLE, page, run_file
from llmbench.core.results_layout import RESULTS as RESULTS_DIR
from llmbench.core.run_folder import SUMMARY
from llmbench.text import counted

RESULTS = Path(RESULTS_DIR)
MAX_JSON_BYTES = 256 << 20


def _read_json(path: Path) -> Any:
    try:
        if path.is_file() and path.stat().st_size <= MAX_JSON_BYTES:
            return json.loads(path.read_bytes())
    except (OSError, ValueError):
        pass
    return None


def _outcomes(run_ids: Iterable[str], results: Path, succeeded: bool) -> dict[str, str]:
    """Run id -> status, for the runs with a result."""
    if succeeded:
        result = _read_json(results / RESULT)
        runs = result.get("runs") if isinstance(result, dict) else None
        if isinstance(runs, list):
            by_id = {r.get("run_id"): r.get("status") for r in runs if isinstance(r, dict)}
            return {run: str(by_id[run]) for run in run_ids if by_id.get(run)}
    found = {}
    for run in run_ids:
        summary = _read_json(results / run_file(run, SUMMARY))
        if isinstance(summary, dict) and summary.get("status"):
            found[run] = str(summary["status"])
    return found


def _counts(outcomes: dict[str, str]) -> str:
    counts = Counter(outcomes.values())
    first = ["success"] if "success" in counts else []
    order = first + sorted(s for s in counts if s != "success")
    return ", ".join(f"{counts[s]:,} {s}" for s in order)


def summary_lines(run_ids: list[str], succeeded: bool, results: Path = RESULTS) -> list[str]:
    """The lines printed at the end of a sweep."""
    outcomes = _outcomes(run_ids, results, succeeded)
    runs_page = results / page("runs")
    beside = ", ".join(Path(name).name for name in (RUNS_CSV, RUNS_TABLE, STEPS_TABLE))
    where = [
        f"tables: {runs_page} ({beside})",
        f"why slower: {results / page('why_slower')} (llmbench explain RUN)",
        f"for tools: {results / RESULT}",
    ]
    if succeeded:
        done = f"sweep done: {counted(len(run_ids), 'run')}"
        return [
            f"{done}: {_counts(outcomes)}" if outcomes else done,
            "; ".join(where),
            f"one HTML file to send around: snakemake --report {results / 'report.html'}",
        ]
    missing = [run for run in run_ids if run not in outcomes]
    line = (
        f"sweep stopped by failed jobs (their logs are named above): "
        f"{len(outcomes):,} of {counted(len(run_ids), 'run')} have a result"
    )
    if outcomes:
        line += f" ({_counts(outcomes)})"
    if missing:
        line += f"; {counted(len(missing), 'run')} without, e.g. {missing[0]}"
    lines = [line, "the same command again continues it (finished runs are kept)"]
    if runs_page.is_file():
        lines.append("; ".join(where) + " (as the last aggregate step left them)")
    return lines


def print_summary(run_ids: Iterable[str], succeeded: bool, out: TextIO = sys.stderr) -> None:
    """``summary_lines`` on ``out``, each line marked as llmbench's."""
    try:
        lines = summary_lines(list(run_ids), succeeded)
    except Exception as err:  # the summary must never fail a finished sweep
        lines = [f"no summary ({type(err).__name__}: {err})"]
    for line in lines:
        print(f"llmbench: {line}", file=out)
