"""What ``explain`` reads of a results folder, through one checked reader.

``explain`` is what a person runs when something already went wrong, so it must read a
half-broken or older results folder. Every file it opens goes through ``read_json`` or
``read_table``: a file that is not a regular file is refused without being opened (a
FIFO would block), its size is bounded, JSON must be an object of the shape its writer
gives it (a run record against ``core/schemas/run.schema.json`` where it names that version),
and a table must hold the columns the evidence needs (when not, the message names the
llmbench version ``tables/sweep.json`` says wrote the tables). What cannot be read is one
line naming the file and why; the evidence that needed it says so in its ``checked``
line, and the rest of the run is still explained. Only a runs table that cannot be read
at all stops ``llmbench explain`` (one line, exit 2).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from llmbench import __version__
from llmbench.aggregate.explain import explain
from llmbench.aggregate.explanation import EXPLAINED_VERDICTS, Explanation, RunFacts
from llmbench.aggregate.result_file import schema_version, validate
from llmbench.core import run_folder
from llmbench.core.results_layout import NODES_TABLE, RUNS_TABLE, STEPS_TABLE, SWEEP, run_file
from llmbench.core.results_layout import run_dir as run_dir_of
from llmbench.errors import ConfigError
from llmbench.files.regular_file import regular_file_problem, why_unreadable
from llmbench.job.run_record import ATTEMPT_DIR, read_record, run_transport

MAX_TABLE_BYTES = 4 << 30
"""A table file larger than this is not one of a sweep's (a 100,000-run steps table is a
few hundred MB)."""
RUNS_COLUMNS = ("run_id",)
STEPS_COLUMNS = ("run_id", "step_time_s", "in_window")
NODES_COLUMNS = ("node", "status")
TELEMETRY_COLUMNS = ("node", "device", "metric", "value")
REFERENCE_COLUMNS = ("workload", "size", "dtype", "gpu_type", "gpus", "global_batch_size")
"""What each kind of evidence needs of each table."""


@dataclass(frozen=True)
class Read:
    """A file's content, or why there is none (``why``: one line naming the file)."""

    data: Any = None
    why: str = ""
    missing: bool = False


def read_json(results: Path, relative: str) -> Read:
    """A JSON object of ``results/relative`` (bounded, regular file only)."""
    try:
        data = read_record(results / relative)
    except FileNotFoundError:
        return Read(why=f"{relative}: missing", missing=True)
    except OSError as err:
        return Read(why=f"{relative}: cannot be read ({why_unreadable(err)})")
    except ValueError as err:
        return Read(why=f"{relative}: not JSON, truncated or damaged ({str(err)[:80]})")
    if not isinstance(data, dict):
        return Read(why=f"{relative}: not a JSON object but {type(data).__name__}")
    return Read(data)


def writer(results: Path) -> str:
    """Which llmbench wrote the tables, as messages name it."""
    sweep = read_json(results, SWEEP).data or {}
    version = sweep.get("llmbench_version")
    if not isinstance(version, str):
        return f"no {SWEEP} names the llmbench that wrote it; this is {__version__}"
    return f"{SWEEP} names llmbench {version}; this is {__version__}"


def read_table(
    results: Path,
    relative: str,
    needed: Sequence[str],
    filters: list[tuple[str, str, Any]] | None = None,
) -> Read:
    """A Parquet table of ``results/relative`` holding the columns ``needed``."""
    path = results / relative
    problem = regular_file_problem(path, MAX_TABLE_BYTES)
    if problem:
        return Read(why=f"{relative}: {problem}", missing=problem == "missing")
    try:
        names = pq.read_schema(path).names
        lacking = [c for c in needed if c not in names]
        if lacking:
            return Read(
                why=f"{relative}: no column {', '.join(lacking)} (a table of another llmbench: "
                f"{writer(results)}; run the aggregate step again to rebuild it)"
            )
        return Read(pd.read_parquet(path, filters=filters))
    except (pa.ArrowException, OSError, ValueError) as err:
        first = (str(err).strip().splitlines() or [type(err).__name__])[0][:120]
        return Read(why=f"{relative}: not a readable Parquet file ({first})")


def runs_table(results: Path) -> pd.DataFrame:
    """The runs table ``llmbench explain`` explains: one line (``ConfigError``) when it
    cannot be read, since nothing can be explained without it."""
    relative = RUNS_TABLE
    read = read_table(results, relative, RUNS_COLUMNS)
    if read.missing:
        raise ConfigError(
            f"--results: {str(results / relative)!r} does not exist; allowed: a results "
            "folder the workflow's aggregate step wrote"
        )
    if read.why:
        raise ConfigError(
            f"--results: {results / read.why}; allowed: a runs table the aggregate step "
            "wrote (run it again to rebuild it)"
        )
    return read.data


def record_problem(record: Mapping[str, Any]) -> str | None:
    """What keeps a run record from being read, by the version that wrote it: the run
    schema for a record of this version, the fields explain uses for an older one."""
    version = record.get("schema_version")
    if version is not None and version != schema_version("run"):
        return f"schema_version {version!r} (this llmbench reads {schema_version('run')})"
    if version is not None:
        try:
            validate(record, "run", run_folder.RECORD)
        except ConfigError as err:
            return str(err).removeprefix(f"{run_folder.RECORD}: ")
        return None
    spec, attempt_dir = record.get("spec", {}), record.get("attempt_dir", "")
    if not isinstance(spec, Mapping):
        return f"spec: {str(spec)[:40]!r} is not an object"
    if not isinstance(attempt_dir, str) or (attempt_dir and not ATTEMPT_DIR.fullmatch(attempt_dir)):
        return f"attempt_dir: {str(attempt_dir)[:40]!r} is not an attempt folder of the run"
    return None


def run_facts(
    results: Path, row: Mapping[str, Any], nodes: Read, steps: pd.DataFrame | None, unread: dict
) -> RunFacts:
    """The facts of one run of ``results``: its record and transport report through the
    checked reader, and why what could not be read was not (``RunFacts.unread``)."""
    run_id = str(row["run_id"])
    unread = dict(unread)
    if nodes.why and not nodes.missing:
        unread["nodes"] = nodes.why
    run_dir = results / run_dir_of(run_id)
    read = read_json(results, run_file(run_id, run_folder.RECORD))
    record: dict[str, Any] = {}
    if read.why:
        unread["record"] = read.why
    elif problem := record_problem(read.data):
        unread["record"] = f"{run_file(run_id, run_folder.RECORD)}: {problem}"
    else:
        record = read.data
    transport: dict[str, Any] = {}
    if record:
        transport, why = run_transport(run_dir, record)
        if why:
            unread["transport"] = f"{run_file(run_id, run_folder.TRANSPORT)}: {why}"
    telemetry = None
    if row.get("clock_throttled") is True:
        tele = read_table(results, run_file(run_id, run_folder.TELEMETRY), TELEMETRY_COLUMNS)
        telemetry = tele.data
        if tele.why:
            unread["telemetry"] = tele.why
    facts = RunFacts(row, results, record, transport, nodes.data, steps)
    facts.unread, facts.telemetry = unread, telemetry
    return facts


def explain_runs(
    results: Path,
    runs: pd.DataFrame,
    steps: pd.DataFrame | None,
    only_unexplained: bool = True,
    steps_unread: str = "",
) -> list[Explanation]:
    """An explanation per run of ``runs`` (the runs whose verdict is slower or missing,
    unless ``only_unexplained`` is False); ``steps_unread``: why the steps table could
    not be read. A run listed twice is explained once (its last row), and says so."""
    nodes = read_table(results, NODES_TABLE, NODES_COLUMNS)
    counts = runs["run_id"].astype(str).value_counts()
    rows = [
        row
        for row in runs.drop_duplicates("run_id", keep="last").to_dict("records")
        if not only_unexplained or _verdict(row) in EXPLAINED_VERDICTS
    ]
    by_run: dict[Any, pd.DataFrame] = {}
    if steps is not None and not steps.empty and rows:
        wanted = steps[steps["run_id"].isin([row["run_id"] for row in rows])]
        by_run = dict(tuple(wanted.groupby("run_id", sort=False, observed=True)))
    lacking = [c for c in REFERENCE_COLUMNS if c not in runs.columns]
    unread = {"steps": steps_unread} if steps_unread else {}
    if lacking:
        unread["reference_row"] = (
            f"{RUNS_TABLE}: no column {', '.join(lacking)} (a table of another "
            f"llmbench: {writer(results)})"
        )
    out = []
    for row in rows:
        facts = run_facts(results, row, nodes, by_run.get(row["run_id"]), unread)
        if counts[str(row["run_id"])] > 1:
            facts.notes.append(
                f"{RUNS_TABLE} holds {counts[str(row['run_id'])]} rows for this run; "
                "the last is explained"
            )
        out.append(explain(facts))
    return out


def _verdict(row: Mapping[str, Any]) -> Any:
    value = row.get("verdict")
    return None if value is None or value is pd.NA or value != value else value


def explain_results(results: Path, run_ids: Sequence[str], every: bool) -> list[Explanation]:
    """``llmbench explain``: the runs ``run_ids`` of ``results`` (``every``: all the runs
    slower or without verdict, when no id is given); one line (``ConfigError``) for an
    unreadable runs table or an unknown run id."""
    table = results / RUNS_TABLE
    runs = runs_table(results)
    known = set(runs["run_id"].astype(str))
    unknown = [r for r in run_ids if r not in known]
    if unknown:
        ids = sorted(known)
        shown = ", ".join(ids[:5]) + (f" ... ({len(ids)} runs)" if len(ids) > 5 else "")
        raise ConfigError(f"RUN: {unknown[0]!r} is not in {table}; allowed: {shown}")
    chosen = runs if every and not run_ids else runs[runs["run_id"].astype(str).isin(run_ids)]
    ids = sorted(set(chosen["run_id"].astype(str)))
    steps = Read()
    if ids:  # only the chosen runs' rows of a large table
        filters = [("run_id", "in", ids)]
        steps = read_table(results, STEPS_TABLE, STEPS_COLUMNS, filters)
    return explain_runs(results, chosen, steps.data, only_unexplained=every, steps_unread=steps.why)
