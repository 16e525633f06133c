"""Reading run records (``run.json``) and the training logs they point to."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from llmbench.parsers import ParsedLog, parse_log


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
    and number of steps."""
    spec = record["spec"]
    return parse_log(
        run_dir / record["log"],
        window=tuple(spec["window"]),
        expected_steps=spec["steps"],
    )
