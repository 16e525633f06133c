"""The one check of a config: its schema and values, each run resolved once
(``validate_and_expand``), then what looks beyond the config's own values (the files it
names, the machine's cores, the ckpt-save run a ckpt-load run needs: ``check_config``).

What the check asks of the machine it runs on comes in as a ``Host``: the workflow and
``llmbench plan`` read it where they run; nothing here reads the environment.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llmbench.core.config.expand import expand
from llmbench.core.config.schema import schema_checked
from llmbench.core.devices import device
from llmbench.core.images import parse_image
from llmbench.core.launchers import launcher_traits
from llmbench.core.runspec import RunSpec
from llmbench.core.stage import checkpoint_source, needs_venv, venv_requirements_path
from llmbench.core.value_checks import check_credentials, check_platform_runs, check_values
from llmbench.core.yamlfile import check_size, read_yaml_file
from llmbench.errors import ConfigError, LaunchError, one_line

# CPU ranks x threads per rank a `launcher: local` run may start per core of this machine:
# a few times oversubscribed still trains (slowly); more is a typo, not a benchmark.
LOCAL_RANKS_PER_CORE = 8
REFERENCE_SUFFIXES = (".parquet", ".csv", ".yaml", ".yml")


@dataclass(frozen=True)
class Host:
    """What the check asks of the machine it runs on: its CPU cores (``launcher: local``
    runs start every rank here) and its environment (``LOAD_CHECKPOINT_PATH``)."""

    cores: int
    environ: Mapping[str, str]


def validate_config(raw: Mapping[str, Any], source: str = "config") -> dict[str, Any]:
    """Schema-check ``raw``, fill defaults and check cross-field rules; returns a new dict."""
    return validate_and_expand(raw, source)[0]


def validate_and_expand(
    raw: Mapping[str, Any], source: str = "config"
) -> tuple[dict[str, Any], list[RunSpec]]:
    """``validate_config`` and ``run_specs`` in one pass (each run is resolved once)."""
    if raw is None:
        raise ConfigError(f"{source}: the config is empty; allowed: a mapping with sweeps")
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{source}: the config must be a mapping, got {type(raw).__name__}")
    check_size(raw, source)  # before any walk: YAML aliases may expand without bound
    config = copy.deepcopy(dict(raw))
    check_credentials(config, source)
    config = schema_checked(config, source)
    _check_images(config, source)
    check_values(config, source)
    _check_window(config, source)
    seen: dict[str, int] = {}
    specs = []
    for index, spec in expand(config, source):
        if spec.run_id in seen:
            first = seen[spec.run_id]
            raise ConfigError(
                f"{source}: sweeps[{index}]: run {spec.run_id} is already in sweeps[{first}]"
            )
        seen[spec.run_id] = index
        specs.append(spec)
    return config, specs


def _check_window(config: Mapping[str, Any], source: str) -> None:
    lo, hi = config["window"]
    if lo > hi:
        raise ConfigError(
            f"{source}: window: [{lo}, {hi}] must be [first, last] with first <= last"
        )
    if config["steps"] < hi + 1:
        raise ConfigError(
            f"{source}: steps: {config['steps']} must be at least {hi + 1} "
            f"(the window ends at iteration {hi}, counted from 0)"
        )


def load_config(
    path: str | Path, base_dirs: Sequence[str | Path] | None = None, *, host: Host
) -> dict[str, Any]:
    """Read a YAML config file and validate it (``check_config``)."""
    return check_config(read_yaml_file(path), str(path), base_dirs, host=host)[0]


def default_base_dirs() -> list[Path]:
    """Where relative setup files are looked up: the working directory, then the
    workflow's folder (this package's source checkout), as the workflow does."""
    checkout = Path(__file__).resolve().parents[4]
    return [Path.cwd(), *([checkout] if (checkout / "Snakefile").is_file() else [])]


def check_config(
    raw: Any,
    source: str = "config",
    base_dirs: Sequence[str | Path] | None = None,
    *,
    host: Host,
) -> tuple[dict[str, Any], list[RunSpec]]:
    """The one validation of a config that is about to run: ``validate_and_expand`` and
    the checks that look beyond the config's own values (the files it names, ``host``'s
    cores, the ckpt-save run a ckpt-load run needs). ``llmbench plan`` and the workflow
    both call this, so they accept and refuse exactly the same configs."""
    try:
        config, specs = validate_and_expand(raw, source)
        _check_sweep(config, specs, source, base_dirs or default_base_dirs(), host)
    except ConfigError as err:
        raise ConfigError(one_line(str(err))) from None
    return config, specs


def _check_sweep(
    config: Mapping[str, Any],
    specs: list[RunSpec],
    source: str,
    base_dirs: Sequence[str | Path],
    host: Host,
) -> None:
    runs = {spec.run_id for spec in specs}
    sources = {s.run_id: checkpoint_source(s) for s in specs}
    missing = sorted(run for run, src in sources.items() if src is not None and src not in runs)
    if missing and not host.environ.get("LOAD_CHECKPOINT_PATH"):
        raise ConfigError(
            f"{source}: run {missing[0]} (variant ckpt-load) restores the checkpoint of its "
            "ckpt-save run, which is not in the sweep; allowed: add variant ckpt-save to the "
            "same sweep entry, or set LOAD_CHECKPOINT_PATH"
        )
    if any(map(needs_venv, specs)) and venv_requirements_path(config, base_dirs) is None:
        raise ConfigError(
            f"{source}: setup.venv_requirements: {config['setup']['venv_requirements']!r} "
            "does not exist; allowed: a pinned requirements file (e.g. envs/training-venv.txt)"
        )
    _check_reference_file(config["reference"].get("file"), source)
    check_platform_runs(specs, source)
    cores = host.cores
    for spec in local_cpu_runs(specs):
        threads = spec.gpus * spec.threads_per_rank  # local: every rank on this machine
        if threads > cores * LOCAL_RANKS_PER_CORE:
            raise ConfigError(
                f"{source}: run {spec.run_id}: {spec.gpus} CPU ranks x "
                f"threads_per_rank={spec.threads_per_rank} on launcher: local; allowed: at "
                f"most {LOCAL_RANKS_PER_CORE} x {cores} cores = {cores * LOCAL_RANKS_PER_CORE}"
            )


def _check_reference_file(reference: str | None, source: str) -> None:
    if reference is None:
        return
    if not Path(reference).is_file():
        raise ConfigError(
            f"{source}: reference.file: {reference!r} is not a file; allowed: a "
            f"{', '.join(REFERENCE_SUFFIXES)} file"
        )
    if Path(reference).suffix.lower() not in REFERENCE_SUFFIXES:
        raise ConfigError(
            f"{source}: reference.file: {reference!r} has suffix "
            f"{Path(reference).suffix!r}; allowed: {', '.join(REFERENCE_SUFFIXES)}"
        )


def local_cpu_runs(specs: Sequence[RunSpec]) -> list[RunSpec]:
    """The runs whose check counts this machine's cores: CPU ranks started here."""
    return [
        spec
        for spec in specs
        if launcher_traits(spec.launcher).on_this_machine and not device(spec.gpu_type).has_gpus
    ]


def _check_images(config: Mapping[str, Any], source: str) -> None:
    """Every ``images`` value is an image reference, whichever ``container`` is set."""

    for workload, image in config["images"].items():
        try:
            parse_image(image)
        except LaunchError as err:
            raise ConfigError(f"{source}: images.{workload}: {err}") from None
