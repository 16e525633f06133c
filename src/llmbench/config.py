"""Loading, validating and expanding the sweep config into run specs.

Every bad value stops here, before anything runs or is submitted, with one line that
names the key, the bad value and what is allowed.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from llmbench.catalog import load_catalog
from llmbench.catalog.parity import built_vocab, resolve_parity
from llmbench.embedded import workload as tiny
from llmbench.errors import ConfigError, LaunchError
from llmbench.images import parse_image
from llmbench.limits import RunLimits, resolve_limits
from llmbench.profiling import default_profile, parse_ranks
from llmbench.runspec import RunSpec


@cache
def config_schema() -> dict[str, Any]:
    text = resources.files("llmbench").joinpath("schemas/config.schema.yaml").read_text()
    return yaml.safe_load(text)


def _path(parts: Any) -> str:
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def _schema_error_line(err: jsonschema.ValidationError) -> str:
    where = _path(err.absolute_path)
    if err.validator == "enum":
        allowed = ", ".join(map(str, err.validator_value))
        return f"{where}: {err.instance!r} is not allowed; allowed: {allowed}"
    if err.validator == "additionalProperties":
        allowed = ", ".join(sorted(err.schema.get("properties", {})))
        return f"{where}: {err.message}; allowed keys: {allowed}"
    return f"{where}: {err.message}"


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
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{source}: the config must be a mapping, got {type(raw).__name__}")
    config = copy.deepcopy(dict(raw))
    validator = jsonschema.Draft202012Validator(config_schema())
    err = jsonschema.exceptions.best_match(validator.iter_errors(config))
    if err is not None:
        raise ConfigError(f"{source}: {_schema_error_line(err)}")
    config = _with_defaults(config, config_schema())
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


def load_config(path: str | Path) -> dict[str, Any]:
    """Read a YAML config file and validate it."""
    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"{path}: cannot read: {str(exc).splitlines()[0]}") from None
    return validate_config(raw or {}, source=str(path))


def _expand(config: Mapping[str, Any], source: str) -> Iterator[tuple[int, RunSpec]]:
    for index, sweep in enumerate(config["sweeps"]):
        where = f"{source}: sweeps[{index}]"
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
    if sweep["workload"] == tiny.WORKLOAD:
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
    _check_choice(where, "sizes", size, tuple(tiny.SIZES))
    _check_choice(where, "dtypes", dtype, tiny.DTYPES)
    _check_choice(where, "gpu_type", sweep["gpu_type"], tiny.GPU_TYPES)
    _check_choice(where, "variants", variant, ("perf",))
    _check_choice(where, "scaling", sweep["scaling"], ("weak",))
    shape = tiny.SIZES[size]
    ga = tiny.GRAD_ACCUMULATION
    per_node = min(config["ranks_per_node"] or gpus, gpus)
    if gpus % per_node:
        raise ConfigError(
            f"{where}.scales: {gpus} ranks cannot be spread evenly over nodes of "
            f"ranks_per_node={per_node}; allowed: multiples of {per_node}"
        )
    return RunSpec(
        workload=tiny.WORKLOAD,
        framework=tiny.FRAMEWORK,
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
        micro_batch_size=tiny.MICRO_BATCH_SIZE,
        global_batch_size=tiny.global_batch_size(gpus),
        parallelism={"tp": 1, "pp": 1, "cp": 1, "dp": gpus, "ga": ga},
        model={"flops_formula": "llama", **shape.__dict__},
        launcher=config["launcher"],
        platform=dict(config.get(config["launcher"]) or {}),
        container="none",  # the embedded workload has no image: it runs in llmbench's Python
        threads_per_rank=config["threads_per_rank"],
        limits=_limits(config, tiny.FRAMEWORK, size, variant),
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
        row = catalog.row(sweep["workload"], size, dtype, sweep["gpu_type"], gpus, sweep["scaling"])
    except ConfigError as err:
        raise ConfigError(f"{where}: {err}") from None
    shape = row.model_shape
    image = config["images"].get(row.workload) or catalog.image(row.workload)
    if config["container"] == "enroot":
        if (
            row.workload not in config["images"]
            and catalog.workload(row.workload).image_is_placeholder
        ):
            raise ConfigError(
                f"{where}: images.{row.workload} is not set and the spec names no image tag "
                "for this workload; allowed: a [registry/]namespace/name:tag reference"
            )
        try:
            parse_image(image)
        except LaunchError as err:
            raise ConfigError(f"{where}: images.{row.workload}: {err}") from None
    parallelism = {
        key: getattr(row, key)
        for key in (
            "tp",
            "pp",
            "cp",
            "ep",
            "etp",
            "dp",
            "vp",
            "fsdp",
            "ga",
            "cuda_graphs",
            "recompute_layers",
            "offload_layers",
        )
    }
    gpus_per_node = catalog.gpu(row.gpu_type).gpus_per_node
    parity = resolve_parity(
        row.workload,
        row.source,
        size=size,
        dtype=dtype,
        gpu_type=row.gpu_type,
        nodes=row.nodes,
        gpus_per_node=gpus_per_node,
        parallelism=parallelism,
    )
    model = {"flops_formula": row.model.flops_family, "source": row.source, **shape.__dict__}
    # FLOPs and MFU count the embedding the model is really built with (padded vocabulary).
    model["vocab"] = built_vocab(parity, parallelism["tp"] or 1) or model["vocab"]
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
        platform=dict(config.get(config["launcher"]) or {}),
        container=config["container"],
        threads_per_rank=config["threads_per_rank"],
        image=image,
        profile=_profile_settings(config, row.source, gpus, where) if variant == "profile" else {},
        limits=_limits(config, row.framework, size, variant),
        parity=parity,
    )


def _limits(config: Mapping[str, Any], framework: str, size: str, variant: str) -> RunLimits:
    watchdog = config["watchdog"]
    return resolve_limits(
        framework, size, variant, config["runtime_min"], watchdog["startup_s"], watchdog["stall_s"]
    )


def _profile_settings(
    config: Mapping[str, Any], source: str, gpus: int, where: str
) -> dict[str, Any]:
    """Nsight steps, ranks and GPU metrics of a profile run: each config key that is set,
    else the recipe document's default (``llmbench.profiling.default_profile``)."""
    settings = default_profile(source, config["window"][1], config["steps"])
    settings.update({k: v for k, v in config["profile"].items() if v is not None})
    steps = list(settings["steps"])
    if steps[0] > steps[1]:
        raise ConfigError(
            f"{where}: profile.steps: {steps} must be [first, last] with first <= last"
        )
    parse_ranks(settings["ranks"], gpus, where=f"{where}: profile.ranks")
    return {**settings, "steps": steps}
