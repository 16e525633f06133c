"""The Kubernetes API stand-in, started per test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.kubernetes.standin_apiserver import StandInApiServer


@pytest.fixture
def standin(tmp_path: Path) -> Iterator[StandInApiServer]:
    folder = tmp_path / "standin"
    folder.mkdir()
    server = StandInApiServer(folder).start()
    try:
        yield server
    finally:
        server.stop()
