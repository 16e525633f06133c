"""Where to run: the site values a profile adds to an experiment config.

An experiment config says what to measure; a profile's ``site.yaml`` says where
(launcher, container, stage folder, Slurm extras; docs/profiles.md). A profile names its
site file twice, because Snakemake lets a command-line option replace the profile's
value of the same option: ``configfile: site.yaml`` (kept when a person passes
``--config``) and ``config: {site_file: ...}`` (kept when a person passes their own
``--configfile``, as ``configs/exemplar-v26.08.yaml``'s header does). llmbench reads the
file ``site_file`` names itself, so either way the site reaches the sweep.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from llmbench.core.yamlfile import read_yaml_file
from llmbench.errors import ConfigError

SITE_FILE_KEY = "site_file"
"""The Snakemake config key a profile names its site file with (``config:``)."""

# Where to run, not what to measure: these come from the profile's site file, so one
# experiment config runs unchanged on two clusters. In the experiment file itself they
# still work for this release, with a warning.
SITE_KEYS = (
    "launcher",
    "container",
    "stage_path",
    "registry",
    "master_addr",
    "fabric",
    "hf_home",
    "slurm",
    "kubernetes",
    "runai",
    "setup.run_on",
    "setup.partition",
    "preflight.nodes",
    "preflight.partition",
    "history.path",
    "history.cluster",
)
_ABSENT = object()


def merge_config(base: Any, overrides: Mapping[str, Any]) -> Any:
    """``base`` with ``overrides`` merged in, mappings key by key (Snakemake's rule)."""
    if not isinstance(base, Mapping):
        return copy.deepcopy(dict(overrides)) if overrides else base
    merged = copy.deepcopy(dict(base))
    for key, value in overrides.items():
        old = merged.get(key)
        both = isinstance(old, Mapping) and isinstance(value, Mapping)
        merged[key] = merge_config(old, value) if both else copy.deepcopy(value)
    return merged


def read_site_files(paths: Sequence[str | Path]) -> dict[str, Any]:
    """The site files ``paths`` merged in order (``llmbench plan --site``)."""
    site: dict[str, Any] = {}
    for path in paths:
        values = read_yaml_file(path)
        if values is not None and not isinstance(values, Mapping):
            raise ConfigError(
                f"{path}: a site file is a mapping of site values, not a "
                f"{type(values).__name__}; allowed: e.g. launcher: srun"
            )
        site = merge_config(site, values or {})
    return site


def with_site_file(
    snakemake_config: Mapping[str, Any], base_dirs: Sequence[str | Path]
) -> dict[str, Any]:
    """Snakemake's config values with the site file that ``site_file`` names merged
    below them: the command line's ``--configfile``/``--config`` values win over the
    profile's site, as they win over the profile's other settings. A relative path is
    looked up in ``base_dirs`` (the working directory, then the workflow's folder)."""
    values = {k: v for k, v in snakemake_config.items() if k != SITE_FILE_KEY}
    name = snakemake_config.get(SITE_FILE_KEY)
    if name is None:
        return values
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(
            f"{SITE_FILE_KEY}: {name!r} is not a file name; allowed: the path of a "
            "profile's site file, e.g. profiles/slurm/site.yaml"
        )
    candidates = [Path(name)] if Path(name).is_absolute() else [Path(d, name) for d in base_dirs]
    found = next((path for path in candidates if path.is_file()), None)
    if found is None:
        raise ConfigError(
            f"{SITE_FILE_KEY}: {name!r} does not exist (looked in "
            f"{', '.join(str(p.parent) for p in candidates)}); allowed: the path of a "
            "profile's site file, e.g. profiles/slurm/site.yaml"
        )
    return merge_config(read_site_files([found]), values)


def site_keys_in(raw: Any) -> list[str]:
    """The ``SITE_KEYS`` that ``raw`` (a config mapping as read) sets, dotted."""
    found = []
    for key in SITE_KEYS:
        node = raw
        for part in key.split("."):
            node = node.get(part, _ABSENT) if isinstance(node, Mapping) else _ABSENT
        if node is not _ABSENT:
            found.append(key)
    return found


def site_keys_warning(raw: Any, source: str) -> str | None:
    """One line when the experiment config ``raw`` sets site keys (docs/profiles.md)."""
    keys = site_keys_in(raw)
    if not keys:
        return None
    return (
        f"{source}: {', '.join(keys)}: where to run belongs in the profile's site file "
        "(profiles/<name>/site.yaml, e.g. profiles/slurm/site.yaml; docs/profiles.md), "
        "not in the experiment config; read from here for this release only"
    )
