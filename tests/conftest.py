"""Shared fixtures and CI's test groups. ``finished_sweep`` runs the real workflow once per
test session; the builders tests share are in tests/helpers.py."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import TWO_RUN_CONFIG, Sweep, missing_prerequisite, snakemake, write_config


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "prerequisite(available, reason): skip when not available (fail under CI=true)",
    )


SHARED_SWEEP_FILES = (
    "tests/kubernetes/test_workflow_kubernetes.py",
    "tests/report/test_report_chromium.py",
    "tests/workflow/test_embedded_sweep.py",
    "tests/workflow/test_telemetry_workflow.py",
)
"""The test files that use ``finished_sweep`` (kept true by tests/test_prerequisites.py)."""


SCOPE_DIRS = ("tests/nemo/",)
"""Folders whose tests share a session fixture: the NeMo venv (built once; two workers
building it into one folder at once would spoil it)."""

SLURM_SCOPES = {
    "slurm": (
        "test_faults.py",
        "test_workflow_slurm.py",
        "test_srun_embedded.py",
        "test_allocation.py",
    ),
    "slurm-2": ("test_recovery.py", "test_preflight_slurm.py"),
}
"""The Slurm suite in two groups of about equal length: each xdist worker that runs one
starts its own local cluster (other ports, tests/slurm/conftest.py), so the two run at
once, mostly waiting on the scheduler. A file not listed goes to ``slurm``."""

LONGEST_SCOPES = (
    "slurm",
    "slurm-2",
    "tests/nemo/",
    "sweep",
    "tests/workflow/test_history_sweeps.py",
    "tests/job/test_run_limits.py",
    "tests/parsers/test_parse_properties.py",
)
"""The groups that take longest in CI, longest first (``--durations``): queued before the
rest, so that no long group starts last and keeps one worker busy after the other is done.
The two Slurm groups come first, one on each worker, and the CPU-bound groups fill in
around them (kept true by tests/test_prerequisites.py)."""


def xdist_scope(nodeid: str) -> str:
    """The group of tests one pytest-xdist worker runs (CI): a half of the Slurm suite
    (``SLURM_SCOPES``); the NeMo tests (``SCOPE_DIRS``); the users of the shared sweep (it
    runs once); else one test file (its module fixtures are built once)."""
    path = nodeid.split("::")[0]
    if path.startswith("tests/slurm/"):
        name = path.removeprefix("tests/slurm/")
        return next((scope for scope, files in SLURM_SCOPES.items() if name in files), "slurm")
    for folder in SCOPE_DIRS:
        if path.startswith(folder):
            return folder
    return "sweep" if path in SHARED_SWEEP_FILES else path


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """``--dist loadgroup`` as ``xdist_scope`` groups; xdist's own reads ``xdist_group``
    marks from node ids, which pytest 9 no longer lets it rewrite."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling  # optional: only under pytest-xdist

    class ScopeScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return xdist_scope(nodeid)

    config.option.loadscopereorder = False  # collection order: the longest groups first
    return ScopeScheduling(config, log)


def queue_rank(nodeid: str) -> int:
    """Where a test's group goes in the xdist queue: ``LONGEST_SCOPES`` in their order,
    then every other group in collection order."""
    scope = xdist_scope(nodeid)
    return LONGEST_SCOPES.index(scope) if scope in LONGEST_SCOPES else len(LONGEST_SCOPES)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under xdist the longest groups are queued first, the Slurm groups before all, so
    that they run alongside the CPU-bound tests instead of after them."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        items.sort(key=lambda item: queue_rank(item.nodeid))  # stable


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
