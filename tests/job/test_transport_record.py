"""A transport.json as the train job writes it (either layout) is used as it is: its shape
check must accept what the reader writes, or every run would be read again and explained
as damaged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llmbench.job.run_record import TRANSPORT_FILE, run_transport, transport_problem
from llmbench.parsers.transport import read_transport

CORPUS = sorted((Path(__file__).parents[1] / "fixtures" / "nccl-debug").glob("*.log"))


@pytest.mark.parametrize("log", CORPUS[:12], ids=lambda p: p.name[:40])
def test_what_the_reader_writes_passes_the_shape_check(log: Path, tmp_path: Path) -> None:
    report = {"attempt": 1, **read_transport([log], nodes=2).as_dict()}
    written = json.loads(json.dumps(report))
    assert transport_problem(written) is None
    (tmp_path / TRANSPORT_FILE).write_text(json.dumps(written))
    data, why = run_transport(tmp_path, {"attempt": 1, "attempt_dir": "attempt-1"})
    assert why == ""
    assert data == written


def test_a_field_without_its_quotes_is_named() -> None:
    report = json.loads(json.dumps({"attempt": 1, **read_transport(CORPUS[:1]).as_dict()}))
    report["fields"]["gdr"] = "on"
    assert transport_problem(report) == "fields.gdr: not a value with its quoted lines"
