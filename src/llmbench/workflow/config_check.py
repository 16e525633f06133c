"""The workflow's full config check: what the main Snakemake process runs before anything
is submitted, and what a process inside a job falls back to when the checked config it
reads back (``llmbench.workflow.spec_cache``) is not there or no longer matches."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from llmbench.core.config import Host, local_cpu_runs, workflow_config
from llmbench.core.site_fit import site_refusal
from llmbench.errors import ConfigError
from llmbench.launch.launchers import check_platforms
from llmbench.workflow.spec_cache import Checked, write_specs


def check_workflow_config(
    overrides: Mapping[str, Any],
    path: str | Path,
    base_dirs: Sequence[str | Path],
    warn: Callable[[str], None] | None = None,
    cache: str | Path | None = None,
) -> Checked:
    """``llmbench.core.config.workflow_config`` and the platform launchers' site values, as
    ``llmbench plan`` checks them, then whether the site can run every run
    (``llmbench.core.site_fit``: plan only warns); raises ``ConfigError`` (one line).
    With ``cache`` (the main process), the result is stored there for the processes
    inside jobs."""
    here = Host(cores=os.cpu_count() or 1, environ=os.environ)
    checked = workflow_config(overrides, path, base_dirs, warn=warn, host=here)
    check_platforms(checked[1], source=str(path))  # named as `llmbench plan` names it
    refused = site_refusal(checked[1], checked[0], base_dirs, os.environ)
    if refused:
        raise ConfigError(f"{path}: {refused}")
    if cache is not None:
        cores_checked = bool(local_cpu_runs(checked[1]))
        write_specs(cache, path, overrides, base_dirs, checked, cores_checked=cores_checked)
    return checked
