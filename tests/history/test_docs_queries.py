"""The DuckDB and pandas queries of docs/history.md run as written on a real history."""

from __future__ import annotations

import re
from datetime import datetime, timezone
from pathlib import Path

import duckdb
import pytest

from llmbench.history.store import add_sweep, open_history
from tests.helpers import REPO
from tests.history.results import write_results

DOC = REPO / "docs" / "history.md"


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", DOC.read_text(), flags=re.S)


@pytest.fixture
def history_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``history/`` in the working folder: two clusters, three sweeps; the newest one has
    a column the older ones lack (a later schema)."""
    history = open_history(tmp_path / "history")
    for i, (cluster, day) in enumerate([("eos", 1), ("eos", 20), ("selene", 21)]):
        hook = (lambda runs: runs.assign(power_w=650.0)) if i == 2 else None
        when = datetime(2026, 3, day, 8, tzinfo=timezone.utc)
        write_results(tmp_path / f"r{i}", cluster, when, seed=i, runs_hook=hook)
        add_sweep(history, tmp_path / f"r{i}")
    monkeypatch.chdir(tmp_path)
    return tmp_path / "history"


def test_docs_have_the_queries() -> None:
    assert len(blocks("sql")) == 3 and len(blocks("python")) == 2


def test_duckdb_queries_run_as_written(history_dir: Path) -> None:
    listed, trend, steps = (duckdb.sql(query).fetchall() for query in blocks("sql"))
    assert [row[0] for row in listed] == ["eos", "eos", "selene"]
    assert all(row[3] == 6 for row in listed)
    # 30 days back from the newest (March 21): all three sweeps, six keys each
    assert len(trend) == 18 and {row[0] for row in trend} == {"eos", "selene"}
    assert len(steps) == 3 * 10  # one bf16 x 8 run per sweep, 10 window iterations


def test_pandas_queries_run_as_written(history_dir: Path, capsys) -> None:
    first, second = blocks("python")
    scope: dict = {}
    exec(compile(first, "docs/history.md", "exec"), scope)
    assert len(scope["runs"]) == 18 and set(scope["runs"].cluster) == {"eos", "selene"}
    assert scope["runs"]["power_w"].count() == 6  # null in the older sweeps
    assert len(scope["trend"]) == 18
    exec(compile(second, "docs/history.md", "exec"), {})
    assert "selene" in capsys.readouterr().out
