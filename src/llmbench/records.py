"""Reading run records (``run.json``) and the training logs they point to."""

from __future__ import annotations

import json
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
    parsed = _parse(record_path.parent, record)
    summary = {"run_id": record["run_id"], "attempt": record["attempt"]}
    summary.update(parsed.summary.as_dict())
    return summary, parsed


def parse_record(record_path: str | Path) -> ParsedLog:
    """Parse the training log of the attempt a ``run.json`` reports."""
    record_path = Path(record_path)
    return _parse(record_path.parent, read_record(record_path))


def _parse(run_dir: Path, record: dict[str, Any]) -> ParsedLog:
    spec = record["spec"]
    return parse_log(
        run_dir / record["log"],
        window=tuple(spec["window"]),
        expected_steps=spec["steps"],
    )
