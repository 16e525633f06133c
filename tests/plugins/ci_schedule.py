"""CI's test groups: which tests one pytest-xdist worker runs together, and in which order
the groups are queued (``--dist loadgroup``, set by .ci/run). Loaded by tests/conftest.py."""

from __future__ import annotations

import os

import pytest

SHARED_SWEEP_FILES = (
    "tests/bad_inputs/test_probe4_workflow_faults.py",
    "tests/kubernetes/test_workflow_kubernetes.py",
    "tests/proof/test_summary_survives.py",
    "tests/report/test_report_chromium.py",
    "tests/workflow/test_embedded_sweep.py",
    "tests/workflow/test_sweep_end.py",
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
    "sweep",
    "tests/workflow/test_history_sweeps.py",
    "tests/job/test_run_limits.py",
    "tests/parsers/test_parse_properties.py",
    "tests/nemo/",
)
"""The groups that take longest in CI, longest first (``--durations``): queued before the
rest, so that no long group starts last and keeps one worker busy after the others are
done. The two Slurm groups come first, one on each of two workers, and the CPU-bound
groups fill in around them on the others. The NeMo group comes after the other long
ones: CI builds its venv in the background meanwhile (tests/nemo/venvs.py). Kept true
by tests/test_prerequisites.py."""


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
