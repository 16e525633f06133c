"""Loading, validating and expanding the sweep config into run specs.

Every bad value stops here, before anything runs or is submitted, with one line that
names the key, the bad value and what is allowed.
"""

from __future__ import annotations

import copy
import math
import os
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema

from llmbench.core import embedded_workload
from llmbench.core.catalog import load_catalog
from llmbench.core.catalog.load import parse_package_yaml
from llmbench.core.catalog.parity import built_vocab, reference_image, resolve_parity
from llmbench.core.images import parse_image
from llmbench.core.launchers import launcher_traits
from llmbench.core.limits import RunLimits, resolve_limits
from llmbench.core.profiling import default_profile, parse_ranks
from llmbench.core.release_notes import release_notes
from llmbench.core.runspec import (
    DEFAULT_RELEASE,
    ModelFields,
    Parallelism,
    ProfileSettings,
    RunSpec,
    reference_time_limit_min,
)
from llmbench.core.site_file import (  # noqa: F401  (importers of config)
    SITE_KEYS,
    merge_config,
    site_keys_in,
    site_keys_warning,
)
from llmbench.core.stage import checkpoint_source, needs_venv, venv_requirements_path
from llmbench.core.value_checks import (
    check_credentials,
    check_platform_runs,
    check_values,
    dotted_key,
)
from llmbench.core.yamlfile import check_size, read_yaml_file
from llmbench.errors import ConfigError, LaunchError, one_line

# CPU ranks x threads per rank a `launcher: local` run may start per core of this machine:
# a few times oversubscribed still trains (slowly); more is a typo, not a benchmark.
LOCAL_RANKS_PER_CORE = 8
REFERENCE_SUFFIXES = (".parquet", ".csv", ".yaml", ".yml")


def _is_integer(_checker: Any, value: Any) -> bool:
    # JSON Schema calls 50.0 an integer; a step count or scale of 50.0 is a typo here.
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(_checker: Any, value: Any) -> bool:
    # Bounds never fail for NaN (every comparison is false): refuse it as a type.
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


@cache
def _schema_regex(pattern: str) -> re.Pattern[str]:
    # JSON Schema patterns are ECMA-262 regexes, whose `$` matches only at the end of the
    # value; Python's `$` also matches before a final newline ("ns\n" would pass).
    return re.compile(re.sub(r"(?<!\\)\$$", r"\\Z", pattern))


def _pattern(
    validator: Any, pattern: str, instance: Any, _schema: Any
) -> Iterator[jsonschema.ValidationError]:
    if validator.is_type(instance, "string") and not _schema_regex(pattern).search(instance):
        yield jsonschema.ValidationError(f"{instance!r} does not match {pattern!r}")


_Validator = jsonschema.validators.extend(
    jsonschema.Draft202012Validator,
    validators={"pattern": _pattern},
    type_checker=jsonschema.Draft202012Validator.TYPE_CHECKER.redefine_many(
        {"integer": _is_integer, "number": _is_number}
    ),
)


@cache
def config_schema() -> dict[str, Any]:
    text = resources.files("llmbench.core").joinpath("schemas/config.schema.yaml").read_text()
    return parse_package_yaml(text, "config.schema.yaml")


def _schema_error_line(err: jsonschema.ValidationError) -> str:
    where = dotted_key(err.absolute_path)
    value = err.instance
    if err.validator == "type" and isinstance(value, float) and not math.isfinite(value):
        return f"{where}: {value} is not a finite number; allowed: {_allowed_type(err)}"
    types = _types(err) if err.validator == "type" else []
    if isinstance(value, float) and "integer" in types and "number" not in types:
        return f"{where}: {value!r} is not a whole number; allowed: {_allowed_type(err)}"
    if types == ["string"] and isinstance(value, (int, float)) and not isinstance(value, bool):
        return f'{where}: {value!r} is a number, not text; allowed: a string (quoted: "{value}")'
    if err.validator == "enum":
        allowed = ", ".join(map(str, err.validator_value))
        return f"{where}: {err.instance!r} is not allowed; allowed: {allowed}"
    if err.validator == "additionalProperties":
        allowed = ", ".join(sorted(err.schema.get("properties", {})))
        return f"{where}: {err.message}; allowed keys: {allowed}"
    return f"{where}: {err.message}"


def _types(err: jsonschema.ValidationError) -> list[str]:
    types = err.validator_value
    return [types] if isinstance(types, str) else list(types)


def _allowed_type(err: jsonschema.ValidationError) -> str:
    bounds = [f"{word} {err.schema[key]}" for key, word in _BOUNDS if key in err.schema]
    kind = " or ".join("a whole number" if t == "integer" else t for t in _types(err))
    return " ".join([kind, " and ".join(bounds)]).strip()


_BOUNDS = (
    ("minimum", ">="),
    ("exclusiveMinimum", ">"),
    ("maximum", "<="),
    ("exclusiveMaximum", "<"),
)


def _with_defaults(instance: Any, schema: Mapping[str, Any]) -> Any:
    """Fill ``default`` values from the schema (objects and arrays of objects)."""
    if isinstance(instance, dict) and "properties" in schema:
        for key, sub in schema["properties"].items():
            if key not in instance and "default" in sub:
                instance[key] = copy.deepcopy(sub["default"])
            if key in instance:
                instance[key] = _with_defaults(instance[key], sub)
    elif isinstance(instance, list) and isinstance(schema.get("items"), dict):
        return [_with_defaults(item, schema["items"]) for item in instance]
    return instance


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
    validator = _Validator(config_schema())
    err = jsonschema.exceptions.best_match(validator.iter_errors(config))
    if err is not None:
        raise ConfigError(f"{source}: {_schema_error_line(err)}")
    config = _with_defaults(config, config_schema())
    _check_images(config, source)
    check_values(config, source)
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
    seen: dict[str, int] = {}
    specs = []
    for index, spec in _expand(config, source):
        if spec.run_id in seen:
            first = seen[spec.run_id]
            raise ConfigError(
                f"{source}: sweeps[{index}]: run {spec.run_id} is already in sweeps[{first}]"
            )
        seen[spec.run_id] = index
        specs.append(spec)
    return config, specs


def load_config(path: str | Path, base_dirs: Sequence[str | Path] | None = None) -> dict[str, Any]:
    """Read a YAML config file and validate it (``check_config``)."""
    return check_config(read_yaml_file(path), str(path), base_dirs)[0]


def workflow_config(
    overrides: Mapping[str, Any],
    path: str | Path,
    base_dirs: Sequence[str | Path] | None = None,
    warn: Callable[[str], None] | None = None,
) -> tuple[dict[str, Any], list[RunSpec]]:
    """The workflow's config: the experiment file ``path`` (what to measure) with
    Snakemake's ``--configfile``/``--config`` values (``overrides``: the profile's site
    file, where to run) merged over it key by key, as Snakemake's own ``configfile:``
    would; then ``check_config``. Site keys in the experiment file itself go to ``warn``."""
    raw: Any = {}
    if Path(path).exists() or Path(path).is_symlink() or not overrides:
        raw = read_yaml_file(path)
    return check_experiment(raw, overrides, str(path), base_dirs, warn)


def check_experiment(
    experiment: Any,
    site: Mapping[str, Any],
    source: str,
    base_dirs: Sequence[str | Path] | None = None,
    warn: Callable[[str], None] | None = None,
) -> tuple[dict[str, Any], list[RunSpec]]:
    """``check_config`` of an experiment with the site values merged over it; site keys
    in the experiment itself and what runs across releases will get (``release_notes``)
    go to ``warn`` (``workflow_config`` and ``llmbench plan``)."""
    checked = check_config(merge_config(experiment, site), source, base_dirs)
    moved = site_keys_warning(experiment, source)
    if warn is not None:  # after the check: a refused config gets one line only
        for line in [moved] if moved else []:
            warn(line)
        for line in release_notes(checked[1]):
            warn(f"{source}: {line}")
    return checked


def default_base_dirs() -> list[Path]:
    """Where relative setup files are looked up: the working directory, then the
    workflow's folder (this package's source checkout), as the workflow does."""
    checkout = Path(__file__).resolve().parents[3]
    return [Path.cwd(), *([checkout] if (checkout / "Snakefile").is_file() else [])]


def check_config(
    raw: Any, source: str = "config", base_dirs: Sequence[str | Path] | None = None
) -> tuple[dict[str, Any], list[RunSpec]]:
    """The one validation of a config that is about to run: ``validate_and_expand`` and
    the checks that look beyond the config's own values (the files it names, this
    machine's cores, the ckpt-save run a ckpt-load run needs). ``llmbench plan`` and the
    workflow both call this, so they accept and refuse exactly the same configs."""
    try:
        config, specs = validate_and_expand(raw, source)
        _check_sweep(config, specs, source, base_dirs or default_base_dirs())
    except ConfigError as err:
        raise ConfigError(one_line(str(err))) from None
    return config, specs


def _check_sweep(
    config: Mapping[str, Any], specs: list[RunSpec], source: str, base_dirs: Sequence[str | Path]
) -> None:

    runs = {spec.run_id for spec in specs}
    sources = {s.run_id: checkpoint_source(s) for s in specs}
    missing = sorted(run for run, src in sources.items() if src is not None and src not in runs)
    if missing and not os.environ.get("LOAD_CHECKPOINT_PATH"):
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
    reference = config["reference"].get("file")
    if reference is not None:
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
    check_platform_runs(specs, source)
    cores = os.cpu_count() or 1
    for spec in local_cpu_runs(specs):
        threads = spec.gpus * spec.threads_per_rank  # local: every rank on this machine
        if threads > cores * LOCAL_RANKS_PER_CORE:
            raise ConfigError(
                f"{source}: run {spec.run_id}: {spec.gpus} CPU ranks x "
                f"threads_per_rank={spec.threads_per_rank} on launcher: local; allowed: at "
                f"most {LOCAL_RANKS_PER_CORE} x {cores} cores = {cores * LOCAL_RANKS_PER_CORE}"
            )


def local_cpu_runs(specs: Sequence[RunSpec]) -> list[RunSpec]:
    """The runs whose check counts this machine's cores: CPU ranks started here."""
    return [
        spec
        for spec in specs
        if launcher_traits(spec.launcher).on_this_machine and spec.gpu_type == "cpu"
    ]


def _check_images(config: Mapping[str, Any], source: str) -> None:
    """Every ``images`` value is an image reference, whichever ``container`` is set."""

    for workload, image in config["images"].items():
        try:
            parse_image(image)
        except LaunchError as err:
            raise ConfigError(f"{source}: images.{workload}: {err}") from None


def _expand(config: Mapping[str, Any], source: str) -> Iterator[tuple[int, RunSpec]]:
    for index, sweep in enumerate(config["sweeps"]):
        where = f"{source}: sweeps[{index}]"
        if "release" in sweep:  # " V26.08" is v26.08: the catalog's one rule
            try:
                sweep["release"] = load_catalog().release_name(sweep["release"])
            except ConfigError as err:
                raise ConfigError(f"{where}.{err}") from None
        for size in sweep["sizes"]:
            for dtype in sweep["dtypes"]:
                for gpus in sweep["scales"]:
                    for variant in sweep["variants"]:
                        yield index, _resolve(config, sweep, size, dtype, gpus, variant, where)


def run_specs(config: Mapping[str, Any]) -> list[RunSpec]:
    """Every run of a validated config, in config order."""
    return [spec for _, spec in _expand(config, "config")]


def _resolve(
    config: Mapping[str, Any],
    sweep: Mapping[str, Any],
    size: str,
    dtype: str,
    gpus: int,
    variant: str,
    where: str,
) -> RunSpec:
    if sweep["workload"] == embedded_workload.WORKLOAD:
        return _resolve_tiny(config, sweep, size, dtype, gpus, variant, where)
    return _resolve_catalog(config, sweep, size, dtype, gpus, variant, where)


def _check_choice(where: str, key: str, value: Any, allowed: Any) -> None:
    if value not in allowed:
        raise ConfigError(
            f"{where}.{key}: {value!r} is not allowed for this workload; "
            f"allowed: {', '.join(map(str, allowed))}"
        )


def _resolve_tiny(
    config: Mapping[str, Any],
    sweep: Mapping[str, Any],
    size: str,
    dtype: str,
    gpus: int,
    variant: str,
    where: str,
) -> RunSpec:
    _check_choice(where, "sizes", size, tuple(embedded_workload.SIZES))
    _check_choice(where, "dtypes", dtype, embedded_workload.DTYPES)
    _check_choice(where, "gpu_type", sweep["gpu_type"], embedded_workload.GPU_TYPES)
    _check_choice(where, "variants", variant, ("perf",))
    _check_choice(where, "scaling", sweep["scaling"], ("weak",))
    _check_choice(where, "release", sweep.get("release", DEFAULT_RELEASE), (DEFAULT_RELEASE,))
    shape = embedded_workload.SIZES[size]
    ga = embedded_workload.GRAD_ACCUMULATION
    per_node = min(config["ranks_per_node"] or gpus, gpus)
    if gpus % per_node:
        raise ConfigError(
            f"{where}.scales: {gpus} ranks cannot be spread evenly over nodes of "
            f"ranks_per_node={per_node}; allowed: multiples of {per_node}"
        )
    return RunSpec(
        workload=embedded_workload.WORKLOAD,
        framework=embedded_workload.FRAMEWORK,
        size=size,
        dtype=dtype,
        gpu_type=sweep["gpu_type"],
        gpus=gpus,
        nodes=gpus // per_node,
        gpus_per_node=per_node,
        variant=variant,
        scaling=sweep["scaling"],
        steps=config["steps"],
        window=tuple(config["window"]),
        seq_len=shape.seq_len,
        micro_batch_size=embedded_workload.MICRO_BATCH_SIZE,
        global_batch_size=embedded_workload.global_batch_size(gpus),
        parallelism=Parallelism(tp=1, pp=1, cp=1, dp=gpus, ga=ga),
        model=ModelFields(flops_formula="llama", **shape.__dict__),
        launcher=config["launcher"],
        platform=_site_block(config),
        container="none",  # the embedded workload has no image: it runs in llmbench's Python
        threads_per_rank=config["threads_per_rank"],
        limits=_limits(config, sweep, embedded_workload.FRAMEWORK, variant, {}),
    )


def _resolve_catalog(
    config: Mapping[str, Any],
    sweep: Mapping[str, Any],
    size: str,
    dtype: str,
    gpus: int,
    variant: str,
    where: str,
) -> RunSpec:
    """A spec workload's run: the catalog row for that scale, validated there."""
    catalog = load_catalog()
    try:
        row = catalog.row(
            sweep["workload"],
            size,
            dtype,
            sweep["gpu_type"],
            gpus,
            sweep["scaling"],
            release=sweep.get("release", DEFAULT_RELEASE),
        )
    except ConfigError as err:
        raise ConfigError(f"{where}: {err}") from None
    shape = row.model_shape
    image = _image(config, row.workload, row.source, row.gpu_type)
    try:
        parse_image(image)
    except LaunchError as err:
        raise ConfigError(f"{where}: images.{row.workload}: {err}") from None
    # the row's columns of the same names (Parallelism lists them, in the row's order)
    parallelism = Parallelism(**{key: getattr(row, key) for key in Parallelism.__annotations__})
    gpus_per_node = catalog.gpu(row.gpu_type).gpus_per_node
    parity = resolve_parity(
        row.workload,
        row.source,
        size=size,
        dtype=dtype,
        precision=row.precision,
        gpu_type=row.gpu_type,
        nodes=row.nodes,
        gpus_per_node=gpus_per_node,
        parallelism=parallelism,
        launcher=config["launcher"],
        image=image,
        in_image=config["container"] == "enroot" or launcher_traits(config["launcher"]).platform,
        telemetry=config["telemetry"]["enabled"],
    )
    model = ModelFields(flops_formula=row.model.flops_family, source=row.source, **shape.__dict__)
    if row.model.extras.as_dict():
        model["extras"] = row.model.extras.as_dict()
    model["vocab"] = built_vocab(parity, parallelism["tp"] or 1) or model["vocab"]  # as built
    return RunSpec(
        workload=row.workload,
        framework=row.framework,
        size=size,
        dtype=dtype,
        gpu_type=row.gpu_type,
        gpus=gpus,
        nodes=row.nodes,
        gpus_per_node=gpus_per_node,
        variant=variant,
        scaling=row.scaling,
        steps=config["steps"],
        window=tuple(config["window"]),
        seq_len=row.seq_len,
        micro_batch_size=row.mbs,
        global_batch_size=row.gbs,
        parallelism=parallelism,
        model=model,
        launcher=config["launcher"],
        platform=_site_block(config),
        container=config["container"],
        threads_per_rank=config["threads_per_rank"],
        image=image,
        profile=_profile_settings(config, row.source, gpus, where) if variant == "profile" else {},
        limits=_limits(config, sweep, row.framework, variant, parity),
        parity=parity,
        release=row.release,
        precision=row.precision if row.release != DEFAULT_RELEASE else "",
    )


def _image(config: Mapping[str, Any], workload: str, document: str, gpu_type: str) -> str:
    """The image a catalog run's ranks run in: a platform's site image (``kubernetes.image``,
    ``runai.image``), else the config's ``images`` entry for the workload, else the image
    the reference runs the document in on that GPU type (``catalog/parity.yaml``)."""
    site = _site_block(config)
    if site.get("image"):
        return str(site["image"])
    return config["images"].get(workload) or reference_image(workload, document, gpu_type) or ""


def _site_block(config: Mapping[str, Any]) -> dict[str, Any]:
    """The launcher's own site values (``kubernetes:``, ``runai:``; none for the others),
    with the site's ``hf_home`` for the pods' HF_HOME (``launch.pods.pod_environment``)."""
    block = launcher_traits(config["launcher"]).site_block
    if not block:
        return {}
    values = dict(config.get(block) or {})
    if config.get("hf_home"):
        values["hf_home"] = config["hf_home"]
    return values


def _limits(
    config: Mapping[str, Any], sweep: Mapping[str, Any], framework: str, variant: str, parity: Any
) -> RunLimits:
    """A sweep's own ``runtime_min``, else the top-level one, else the reference's."""
    watchdog, runtime_min = config["watchdog"], sweep.get("runtime_min") or config["runtime_min"]
    reference = reference_time_limit_min(dict(parity))
    return resolve_limits(
        framework, variant, reference, runtime_min, watchdog["startup_s"], watchdog["stall_s"]
    )


def _profile_settings(
    config: Mapping[str, Any], source: str, gpus: int, where: str
) -> ProfileSettings:
    """Nsight steps, ranks and GPU metrics of a profile run: each config key that is set,
    else the recipe document's default (``llmbench.core.profiling.default_profile``)."""
    settings = default_profile(source, config["window"][1], config["steps"])
    settings.update({k: v for k, v in config["profile"].items() if v is not None})
    steps = list(settings["steps"])
    if steps[0] > steps[1]:
        raise ConfigError(
            f"{where}: profile.steps: {steps} must be [first, last] with first <= last"
        )
    parse_ranks(settings["ranks"], gpus, where=f"{where}: profile.ranks")
    settings["steps"] = steps
    return settings
