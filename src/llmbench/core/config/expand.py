"""A checked config expanded into its runs: every combination of a sweep entry's sizes,
dtypes, scales and variants resolved into one ``RunSpec``, the embedded workload's from
``llmbench.core.embedded_workload`` and every other from its catalog row, built by one
constructor (``_build``) from what all runs share and what the workload adds."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

from llmbench.core import embedded_workload
from llmbench.core.catalog import load_catalog
from llmbench.core.catalog.parity import built_vocab, reference_image, resolve_parity
from llmbench.core.devices import embedded_kinds
from llmbench.core.images import parse_image
from llmbench.core.launchers import launcher_traits
from llmbench.core.limits import RunLimits, resolve_limits
from llmbench.core.parity_settings import NO_PARITY, ParitySettings
from llmbench.core.profiling import default_profile, parse_ranks
from llmbench.core.runspec import (
    DEFAULT_RELEASE,
    ProfileSettings,
    RunSpec,
    model_fields,
    reference_time_limit_min,
)
from llmbench.errors import ConfigError, LaunchError


@dataclass(frozen=True)
class _Combination:
    """One run a sweep entry asks for: the config, the entry, one value of each of its
    lists, and where it is (for messages)."""

    config: Mapping[str, Any]
    sweep: Mapping[str, Any]
    size: str
    dtype: str
    gpus: int
    variant: str
    where: str


def expand(config: Mapping[str, Any], source: str) -> Iterator[tuple[int, RunSpec]]:
    """(sweep entry index, run) of every run of a schema-checked config, in config order."""
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
                        run = _Combination(config, sweep, size, dtype, gpus, variant, where)
                        yield index, _resolve(run)


def run_specs(config: Mapping[str, Any]) -> list[RunSpec]:
    """Every run of a validated config, in config order."""
    return [spec for _, spec in expand(config, "config")]


def _resolve(run: _Combination) -> RunSpec:
    if run.sweep["workload"] == embedded_workload.WORKLOAD:
        return _resolve_tiny(run)
    return _resolve_catalog(run)


def _build(
    run: _Combination, framework: str, parity: ParitySettings = NO_PARITY, **workload: Any
) -> RunSpec:
    """The one ``RunSpec`` of ``run``: what every run takes from its config and sweep entry
    (steps, window, launcher and its site values, threads, limits), and what its resolver
    found for the workload (``framework``, ``parity`` and the rest by field name)."""
    config = run.config
    return RunSpec(
        framework=framework,
        size=run.size,
        dtype=run.dtype,
        gpus=run.gpus,
        variant=run.variant,
        steps=config["steps"],
        window=tuple(config["window"]),
        launcher=config["launcher"],
        platform=_site_block(config),
        threads_per_rank=config["threads_per_rank"],
        limits=_limits(config, run.sweep, framework, run.variant, parity),
        parity=parity,
        **workload,
    )


def _check_choice(where: str, key: str, value: Any, allowed: Any) -> None:
    if value not in allowed:
        raise ConfigError(
            f"{where}.{key}: {value!r} is not allowed for this workload; "
            f"allowed: {', '.join(map(str, allowed))}"
        )


def _resolve_tiny(run: _Combination) -> RunSpec:
    where, sweep, gpus = run.where, run.sweep, run.gpus
    _check_choice(where, "sizes", run.size, tuple(embedded_workload.SIZES))
    _check_choice(where, "dtypes", run.dtype, embedded_workload.DTYPES)
    _check_choice(where, "gpu_type", sweep["gpu_type"], embedded_kinds())
    _check_choice(where, "variants", run.variant, ("perf",))
    _check_choice(where, "scaling", sweep["scaling"], ("weak",))
    _check_choice(where, "release", sweep.get("release", DEFAULT_RELEASE), (DEFAULT_RELEASE,))
    shape = embedded_workload.SIZES[run.size]
    per_node = min(run.config["ranks_per_node"] or gpus, gpus)
    if gpus % per_node:
        raise ConfigError(
            f"{where}.scales: {gpus} ranks cannot be spread evenly over nodes of "
            f"ranks_per_node={per_node}; allowed: multiples of {per_node}"
        )
    ga = embedded_workload.GRAD_ACCUMULATION
    return _build(
        run,
        embedded_workload.FRAMEWORK,
        workload=embedded_workload.WORKLOAD,
        gpu_type=sweep["gpu_type"],
        nodes=gpus // per_node,
        gpus_per_node=per_node,
        scaling=sweep["scaling"],
        seq_len=shape.seq_len,
        micro_batch_size=embedded_workload.MICRO_BATCH_SIZE,
        global_batch_size=embedded_workload.global_batch_size(gpus),
        parallelism={"tp": 1, "pp": 1, "cp": 1, "dp": gpus, "ga": ga},
        model=model_fields("llama", shape),
        container="none",  # the embedded workload has no image: it runs in llmbench's Python
    )


def _resolve_catalog(run: _Combination) -> RunSpec:
    """A spec workload's run: the catalog row for that scale, validated there."""
    config, sweep = run.config, run.sweep
    catalog = load_catalog()
    try:
        row = catalog.row(
            sweep["workload"],
            run.size,
            run.dtype,
            sweep["gpu_type"],
            run.gpus,
            sweep["scaling"],
            release=sweep.get("release", DEFAULT_RELEASE),
        )
    except ConfigError as err:
        raise ConfigError(f"{run.where}: {err}") from None
    shape = row.model_shape
    image = _image(config, row.workload, row.source, row.gpu_type)
    try:
        parse_image(image)
    except LaunchError as err:
        raise ConfigError(f"{run.where}: images.{row.workload}: {err}") from None
    parallelism = row.parallelism_fields()
    gpus_per_node = catalog.gpu(row.gpu_type).gpus_per_node
    parity = resolve_parity(
        row.workload,
        row.source,
        size=run.size,
        dtype=run.dtype,
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
    vocab = built_vocab(parity.tokenizer, row.tp or 1) or shape.vocab  # as built
    extras = row.model.extras.as_dict()
    model = model_fields(row.model.flops_family, replace(shape, vocab=vocab), row.source, extras)
    profile = run.variant == "profile"
    return _build(
        run,
        row.framework,
        parity,
        workload=row.workload,
        gpu_type=row.gpu_type,
        nodes=row.nodes,
        gpus_per_node=gpus_per_node,
        scaling=row.scaling,
        seq_len=row.seq_len,
        micro_batch_size=row.mbs,
        global_batch_size=row.gbs,
        parallelism=parallelism,
        model=model,
        container=config["container"],
        image=image,
        profile=_profile_settings(config, row.source, run.gpus, run.where) if profile else {},
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
    config: Mapping[str, Any],
    sweep: Mapping[str, Any],
    framework: str,
    variant: str,
    parity: ParitySettings,
) -> RunLimits:
    """A sweep's own ``runtime_min``, else the top-level one, else the reference's."""
    watchdog, runtime_min = config["watchdog"], sweep.get("runtime_min") or config["runtime_min"]
    reference = reference_time_limit_min(parity)
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
