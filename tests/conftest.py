"""Shared fixtures. ``finished_sweep`` runs the real workflow once per test session; the
builders tests share are in tests/helpers.py, CI's test groups in tests/plugins/ci_schedule.py."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import TWO_RUN_CONFIG, Sweep, missing_prerequisite, snakemake, write_config

pytest_plugins = ["tests.plugins.ci_schedule"]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "prerequisite(available, reason): skip when not available (fail under CI=true)",
    )


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    for mark in item.iter_markers("prerequisite"):
        available, reason = mark.args
        if not available:
            missing_prerequisite(reason)


SWEEPS_RUN: list[Path] = []
"""Work folders of the shared sweep this session ran (its files must be validated)."""


@pytest.fixture(scope="session")
def finished_sweep(tmp_path_factory: pytest.TempPathFactory) -> Sweep:
    """A 2-run embedded sweep (fp32, 1 and 2 ranks, ``TINY_STEPS``) run by the real workflow."""
    workdir = tmp_path_factory.mktemp("sweep")
    write_config(workdir, TWO_RUN_CONFIG)
    proc = snakemake(workdir, "--cores", "2")
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    SWEEPS_RUN.append(workdir)
    return Sweep(workdir, TWO_RUN_CONFIG, proc)


@pytest.fixture(scope="session", autouse=True)
def result_files_validate(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """At the end of the session (of each xdist worker), every ``result.json`` and every
    run record llmbench wrote under this session's temporary folders must validate
    against its schema (tests/result_files.py); the shared sweep's must exist. A failure
    is an error of the session's last test."""
    yield
    from tests.result_files import check_session_files  # only at the session's end

    problems = check_session_files(tmp_path_factory.getbasetemp(), SWEEPS_RUN)
    assert not problems, "result files that do not fit their schema:\n" + "\n".join(problems)
