"""An experiment with the profile's site values merged over it, checked: what the
workflow (``workflow_config``) and ``llmbench plan`` (``check_experiment``) run. The
config says what to measure; the site file where (``llmbench.core.site_file``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from llmbench.core.config.check import Host, check_config
from llmbench.core.release_notes import release_notes
from llmbench.core.runspec import RunSpec
from llmbench.core.site_file import merge_config, site_keys_warning
from llmbench.core.yamlfile import read_yaml_file


def workflow_config(
    overrides: Mapping[str, Any],
    path: str | Path,
    base_dirs: Sequence[str | Path] | None = None,
    warn: Callable[[str], None] | None = None,
    *,
    host: Host,
) -> tuple[dict[str, Any], list[RunSpec]]:
    """The workflow's config: the experiment file ``path`` (what to measure) with
    Snakemake's ``--configfile``/``--config`` values (``overrides``: the profile's site
    file, where to run) merged over it key by key, as Snakemake's own ``configfile:``
    would; then ``check_config``. Site keys in the experiment file itself go to ``warn``."""
    raw: Any = {}
    if Path(path).exists() or Path(path).is_symlink() or not overrides:
        raw = read_yaml_file(path)
    return check_experiment(raw, overrides, str(path), base_dirs, warn, host=host)


def check_experiment(
    experiment: Any,
    site: Mapping[str, Any],
    source: str,
    base_dirs: Sequence[str | Path] | None = None,
    warn: Callable[[str], None] | None = None,
    *,
    host: Host,
) -> tuple[dict[str, Any], list[RunSpec]]:
    """``check_config`` of an experiment with the site values merged over it; site keys
    in the experiment itself and what runs across releases will get (``release_notes``)
    go to ``warn`` (``workflow_config`` and ``llmbench plan``)."""
    checked = check_config(merge_config(experiment, site), source, base_dirs, host=host)
    moved = site_keys_warning(experiment, source)
    if warn is not None:  # after the check: a refused config gets one line only
        for line in [moved] if moved else []:
            warn(line)
        for line in release_notes(checked[1]):
            warn(f"{source}: {line}")
    return checked
