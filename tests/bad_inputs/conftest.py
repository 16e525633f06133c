"""The bad-input suite's working folder, with stand-ins for the tools that submit."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from tests.bad_inputs.checks import SUBMIT_TOOLS


@pytest.fixture
def sandbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working folder with stand-ins for every tool that submits or launches: each one
    records that it was called (and fails), so a test can assert none was."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in SUBMIT_TOOLS:
        script = bin_dir / tool
        script.write_text(f'#!/bin/sh\necho "$0 $*" >> "{tmp_path}/submitted"\nexit 1\n')
        script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.delenv("LOAD_CHECKPOINT_PATH", raising=False)  # a ckpt-load case needs it unset
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    return work
