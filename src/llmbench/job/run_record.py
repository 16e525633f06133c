"""Reading run records (``run.json``) and the training logs they point to."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from llmbench.errors import ParseError
from llmbench.parsers import ParsedLog, parse_log
from llmbench.parsers.summary import no_data_summary
from llmbench.parsers.transport import TransportReport, debug_files, read_transport
from llmbench.parsers.vocabulary import Reason

TRANSPORT_FILE = "transport.json"
"""Beside run.json: what NCCL's debug output of the reported attempt says
(``llmbench.parsers.transport``), written by the train job."""


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
    """The transport report of the reported attempt's NCCL debug files; a run that spans
    nodes carried its network traffic between them."""
    attempt_dir = run_dir / record.get("attempt_dir", "")
    files = debug_files(attempt_dir) if record.get("attempt_dir") else []
    inter_node = int(record.get("spec", {}).get("nodes", 1)) > 1
    return read_transport(files, inter_node=inter_node, base=run_dir)


def read_run_transport(run_dir: Path, record: Mapping[str, Any]) -> dict[str, Any]:
    """The run's ``transport.json`` when it describes the reported attempt, else the
    attempt's files read now (runs recorded before the train job wrote the file)."""
    try:
        with open(run_dir / TRANSPORT_FILE) as fh:
            data = json.load(fh)
        if data.get("attempt") == record.get("attempt"):
            return data
    except (OSError, ValueError, AttributeError):
        pass
    return {"attempt": record.get("attempt"), **attempt_transport(run_dir, record).as_dict()}
