"""Every ``result.json`` and run record (``run.json``) the test suite produced, checked
against their schemas (``src/llmbench/core/schemas/``, docs/results.md) at the end of each
session by the autouse fixture ``result_files_validate`` (tests/conftest.py).

A ``run.json`` without ``schema_version`` was written by a test as its own input (a
record made up to test a reader), not by llmbench: llmbench writes the field in every
record (tests/aggregate/test_result_schema.py checks the runner's and the salvaged ones). The
shared sweep's folder must hold a ``result.json`` and records, so the check cannot pass
by finding nothing where the workflow ran.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from llmbench.aggregate.result_file import validate
from llmbench.errors import ConfigError


def produced(base: Path) -> tuple[list[Path], list[Path]]:
    """(result.json files, run records) under ``base``."""
    results = sorted(p for p in base.rglob("result.json") if p.parent.name == "results")
    records = sorted(
        p
        for p in base.rglob("run.json")
        if p.parent.name.startswith("attempt-") or p.parent.parent.name == "runs"
    )
    return results, records


def check_files(results: Iterable[Path], records: Iterable[Path]) -> tuple[list[str], int]:
    """(problems, files validated)."""
    problems, checked = [], 0
    for name, paths in (("result", results), ("run", records)):
        for path in paths:
            try:
                data = json.loads(path.read_text())
            except (OSError, ValueError) as exc:
                problems.append(f"{path}: not JSON ({exc})")
                continue
            if name == "run" and "schema_version" not in data:
                continue  # a test's own made-up record (see the module docstring)
            try:
                validate(data, name, str(path))
            except ConfigError as err:
                problems.append(str(err))
            checked += 1
    return problems, checked


def check_session_files(base: Path, sweeps: Iterable[Path]) -> list[str]:
    results, records = produced(base)
    problems, _ = check_files(results, records)
    for workdir in sweeps:
        mine, theirs = produced(workdir)
        if not mine or not [p for p in theirs if "schema_version" in p.read_text()]:
            problems.append(f"{workdir}: the shared sweep left no result.json or run record")
    return problems
