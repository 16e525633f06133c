"""The history on object storage: pyarrow's real S3 client against a loopback S3
stand-in server (moto's), through a URL as a user would give it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

import pytest
from moto.server import ThreadedMotoServer

from llmbench.cli import main
from llmbench.history.store import add_sweep, open_history, sweep_index
from tests.history.results import write_results


@pytest.fixture
def s3_stand_in(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A history URL on a local S3 stand-in (bucket created on first write)."""
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(key, "stand-in")
    port = server._server.server_port  # the port the OS picked
    yield (
        f"s3://llmbench-history/prod?endpoint_override=127.0.0.1:{port}&scheme=http"
        "&region=us-east-1&allow_bucket_creation=true"
    )
    server.stop()


def test_add_list_and_compare_on_s3(s3_stand_in: str, tmp_path: Path, capsys) -> None:
    for i, day in enumerate((1, 2)):
        slow = (lambda run: 1.5 if "fp8_h100x8" in run else 1.0) if i else (lambda run: 1.0)
        when = datetime(2026, 3, day, tzinfo=timezone.utc)
        write_results(tmp_path / f"r{i}", "eos", when, factor=slow, seed=i)
        assert main(["history", "add", str(tmp_path / f"r{i}"), "--history", s3_stand_in]) == 0
    assert "added to llmbench-history/prod/cluster=eos/date=2026-03-01" in capsys.readouterr().out
    history = open_history(s3_stand_in)
    again = add_sweep(history, tmp_path / "r0")
    assert not again.new
    assert len(sweep_index(history)) == 2
    assert main(["history", "list", "--history", s3_stand_in, "--format", "json"]) == 0
    assert [s["date"] for s in json.loads(capsys.readouterr().out)] == ["2026-03-01", "2026-03-02"]
    rc = main(["compare", "latest~1", "latest", "--history", s3_stand_in, "--format", "json"])
    keys = json.loads(capsys.readouterr().out)["keys"]
    assert rc == 1
    assert [(k["dtype"], k["gpus"]) for k in keys if k["verdict"] == "slower"] == [("fp8", 8)]
