"""Reading run records (``run.json``) and the training logs they point to."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from llmbench.parsers import ParsedLog, parse_log


def read_record(path: str | Path) -> dict[str, Any]:
    with open(path) as fh:
        return json.load(fh)


def parse_record(record_path: str | Path) -> ParsedLog:
    """Parse the training log of the attempt a ``run.json`` reports."""
    record_path = Path(record_path)
    record = read_record(record_path)
    spec = record["spec"]
    return parse_log(
        record_path.parent / record["log"],
        window=tuple(spec["window"]),
        expected_steps=spec["steps"],
    )
