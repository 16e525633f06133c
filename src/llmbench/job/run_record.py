"""Reading run records (``run.json``) and the training logs they point to."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from llmbench.errors import ParseError
from llmbench.files.regular_file import read_regular
from llmbench.parsers import ParsedLog, parse_log
from llmbench.parsers.summary import no_data_summary
from llmbench.parsers.transport import TransportReport, debug_files, read_transport
from llmbench.parsers.vocabulary import Reason

TRANSPORT_FILE = "transport.json"
"""Beside run.json: what NCCL's debug output of the reported attempt says
(``llmbench.parsers.transport``), written by the train job."""
MAX_TRANSPORT_BYTES = 16 << 20
"""A transport.json is a few kilobytes; anything far larger is not one."""


def read_record(path: str | Path) -> dict[str, Any]:
    with open(path) as fh:
        return json.load(fh)


def summarize_record(record_path: str | Path) -> tuple[dict[str, Any], ParsedLog]:
    """The parsed summary of a record's log, tagged with the run and attempt it describes
    (so a summary left from an earlier attempt is never mistaken for the current one)."""
    record_path = Path(record_path)
    record = read_record(record_path)
    parsed = parse_attempt_log(record_path.parent, record)
    summary = {"run_id": record["run_id"], "attempt": record["attempt"]}
    summary.update(parsed.summary.as_dict())
    return summary, parsed


def parse_attempt_log(run_dir: Path, record: Mapping[str, Any]) -> ParsedLog:
    """Parse the training log of the attempt ``record`` describes, with its run's window
    and number of steps. A log that is gone (deleted during the run) or cannot be read is
    the attempt's outcome, ``no_data`` with ``log_missing`` or ``unreadable``, not an
    error: the record stands and the next invocation redoes the run."""
    spec = record["spec"]
    try:
        return parse_log(
            run_dir / record["log"],
            window=tuple(spec["window"]),
            expected_steps=spec["steps"],
        )
    except ParseError as err:
        missing = isinstance(err.__cause__, FileNotFoundError)
        return ParsedLog(
            no_data_summary(Reason.LOG_MISSING if missing else Reason.UNREADABLE, str(err))
        )


def attempt_transport(run_dir: Path, record: Mapping[str, Any]) -> TransportReport:
    """The transport report of the reported attempt's NCCL debug files, with the run's
    node count (the site's fabric is the aggregate's to apply)."""
    attempt_dir = run_dir / record.get("attempt_dir", "")
    files = debug_files(attempt_dir) if record.get("attempt_dir") else []
    try:
        nodes: int | None = int(record.get("spec", {}).get("nodes", 1))
    except (TypeError, ValueError):
        nodes = None
    return read_transport(files, nodes=nodes, base=run_dir)


def read_run_transport(run_dir: Path, record: Mapping[str, Any]) -> dict[str, Any]:
    """The run's ``transport.json`` (either layout, docs/transport.md) when it describes
    the reported attempt, else the attempt's files read now (runs recorded before the
    train job wrote the file, or whose file is gone or damaged)."""
    try:
        data = json.loads(read_regular(run_dir / TRANSPORT_FILE, MAX_TRANSPORT_BYTES))
        if isinstance(data, dict) and data.get("attempt") == record.get("attempt"):
            return data
    except (OSError, ValueError):
        pass
    return {"attempt": record.get("attempt"), **attempt_transport(run_dir, record).as_dict()}
