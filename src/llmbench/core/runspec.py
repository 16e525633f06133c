"""The resolved specification of one run: everything needed to launch it and read it back."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from functools import cached_property
from typing import Any, TypedDict

from llmbench.core.flops import ModelShape
from llmbench.core.limits import RunLimits, default_limits
from llmbench.core.parity_settings import NO_PARITY, ParitySettings
from llmbench.core.platform_site import Site, parse_site

_NAME = r"[a-z0-9][a-z0-9.-]*"
DEFAULT_RELEASE = "dgxc-2025"
"""The release of a run whose sweep entry names none (the spec's five documents, tags
v24.11.1-v25.12 of dgxc-benchmarking): its ids carry no release; another release's ids end
their scale (group) part with ``-<release>``."""
FORMER_RELEASE_NAMES = {"spec": DEFAULT_RELEASE}
"""Former name -> release: a config, a command line or a stored file of an older llmbench
may still say ``spec``, which is dgxc-2025."""


def current_release(name: str) -> str:
    """``name`` under its release's current name (``spec`` is dgxc-2025): the one mapping
    the release normaliser and the readers of stored runs use."""
    return FORMER_RELEASE_NAMES.get(name, name)


_RELEASE = r"(?:-v[0-9]{2}\.[0-9]{2})?"
RUN_ID_PATTERN = (
    rf"{_NAME}_{_NAME}_(?:fp32|bf16|fp8|nvfp4)_[a-z0-9][a-z0-9-]*x[0-9]+(?:-strong)?{_RELEASE}"
    r"_(?:perf|profile|nccltrace|ckpt-save|ckpt-load)"
)
"""The shape of every ``run_id``: a short regex for Snakemake's wildcard constraint (a list
of 10,000 ids would be substituted into every file pattern and make the DAG quadratic)."""
GROUP_ID_PATTERN = rf"{_NAME}_{_NAME}_[a-z0-9][a-z0-9-]*_(?:weak|strong){_RELEASE}"
"""The shape of every ``group_id``."""


def reference_time_limit_min(parity: ParitySettings) -> int | None:
    """The reference's time limit of a run in minutes (``kind: limit`` in its parity data),
    None without one."""
    value = parity.limit.get("time_limit_min")
    return int(value) if value else None


def version_numbers(version: str) -> tuple[int, ...]:
    """The leading release numbers of a version string: ``"0.15.3rc1"`` -> (0, 15, 3)."""
    match = re.match(r"\d+(?:\.\d+)*", version.strip())
    return tuple(int(part) for part in match.group(0).split(".")) if match else ()


def meets_requirement(version: str, requirement: str) -> bool:
    """``requirement`` is ``>=X.Y`` or ``<X.Y`` (parity.yaml ``requires``), compared on the
    release numbers (``0.15.0rc1`` counts as 0.15.0)."""
    op, bound = (">=", requirement[2:]) if requirement.startswith(">=") else ("<", requirement[1:])
    have, want = version_numbers(version), version_numbers(bound)
    width = max(len(have), len(want))
    have, want = have + (0,) * (width - len(have)), want + (0,) * (width - len(want))
    return have >= want if op == ">=" else have < want


@dataclass(frozen=True)
class Parallelism:
    """How a run splits its model and batch: the parallelism columns of a catalog row
    (``llmbench.core.catalog.records.RecipeRow`` has them), declared here once. None: the
    recipe leaves it unset (NA). A ``RunSpec`` carries them by name
    (``parallelism_fields``); the embedded workload sets tp, pp, cp, dp and ga only."""

    tp: int
    pp: int
    cp: int
    ep: int | None
    etp: int | None
    dp: int
    vp: int | None
    fsdp: bool | int
    ga: int
    cuda_graphs: bool
    recompute_layers: int
    offload_layers: int

    def parallelism_fields(self) -> dict[str, Any]:
        """``{name: value}`` of the fields above, in their order: ``RunSpec.parallelism``."""
        return {name: getattr(self, name) for name in PARALLELISM_FIELDS}


PARALLELISM_FIELDS = tuple(f.name for f in fields(Parallelism))


def model_fields(
    flops_formula: str,
    shape: ModelShape,
    source: str = "",
    extras: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """``RunSpec.model``, the model a run builds: its FLOPs formula family, for a catalog
    workload the recipe document it comes from, ``ModelShape``'s fields (the row's layers
    and sequence length, the vocabulary as built) and, for a model with experts, latent
    attention or MTP, its ``extras`` (``llmbench.core.flops.ModelExtras``, set fields
    only)."""
    model: dict[str, Any] = {"flops_formula": flops_formula}
    if source:
        model["source"] = source
    model.update(shape.__dict__)
    if extras:
        model["extras"] = dict(extras)
    return model


class ProfileSettings(TypedDict, total=False):
    """Nsight settings of a ``profile`` run (empty for other variants): inclusive
    ``steps`` [start, stop], ``ranks`` (a rank set such as ``"0-8"``, or ``"all"``) and
    whether to sample GPU metrics."""

    steps: list[int]
    ranks: str
    gpu_metrics: bool


@dataclass(frozen=True)
class RunSpec:
    workload: str
    framework: str
    size: str
    dtype: str
    gpu_type: str
    gpus: int
    nodes: int
    gpus_per_node: int
    variant: str
    scaling: str
    steps: int
    window: tuple[int, int]
    seq_len: int
    micro_batch_size: int
    global_batch_size: int
    parallelism: dict[str, Any] = field(default_factory=dict)
    """``Parallelism``'s fields by name (``Parallelism.parallelism_fields``)."""
    model: dict[str, Any] = field(default_factory=dict)
    """What ``model_fields`` gives: the formula family, document, shape and extras."""
    launcher: str = "local"
    container: str = "none"
    threads_per_rank: int = 1
    image: str = ""
    profile: ProfileSettings = field(default_factory=ProfileSettings)
    """``profile`` variant only (else empty), resolved from config and document."""
    parity: ParitySettings = NO_PARITY
    """The reference's launch settings for this run, with sources (``catalog/parity.yaml``
    resolved by ``llmbench.core.catalog.parity``); empty for the embedded workload."""
    platform: dict[str, Any] = field(default_factory=dict)
    """Site values of a platform launcher (``kubernetes:`` or ``runai:`` in the config), as
    recorded; ``site`` is them parsed."""
    limits: RunLimits | None = None
    """Time limit and watchdog allowances (``llmbench.core.limits``); None takes the defaults
    (the reference's time limit from ``parity``)."""
    release: str = DEFAULT_RELEASE
    """The reference release the run's recipe row belongs to (``catalog/releases.yaml``)."""
    precision: str = ""
    """The precision recipe the GEMMs run in (``catalog.records.PRECISIONS``) of a later
    release's run; empty for a dgxc-2025 run, whose dtype and document say it
    (``catalog.records.precision_of``)."""

    def __post_init__(self) -> None:
        if self.limits is None:
            reference = reference_time_limit_min(self.parity)
            limits = default_limits(self.framework, self.variant, reference)
            object.__setattr__(self, "limits", limits)

    @cached_property
    def site(self) -> Site | None:
        """The platform's site values as a typed value (``llmbench.core.platform_site``),
        parsed once, when first asked; None for a launcher without a site block. A bad
        value raises a ``LaunchError`` naming the key."""
        return parse_site(self.launcher, self.platform)

    @property
    def run_id(self) -> str:
        """Readable, stable id, e.g. ``tiny-llama_tiny_bf16_cpux2_perf`` or
        ``nemotron4-nemo_340b_fp8_gb200x128-strong_perf``."""
        scale = f"{self.gpu_type}x{self.gpus}" + ("-strong" if self.scaling == "strong" else "")
        return f"{self.workload}_{self.size}_{self.dtype}_{scale}{self._release_tag}_{self.variant}"

    @property
    def _release_tag(self) -> str:
        return "" if self.release == DEFAULT_RELEASE else f"-{self.release}"

    @property
    def group_id(self) -> str:
        """Runs that form one scaling curve differ only in scale and dtype."""
        return f"{self.workload}_{self.size}_{self.gpu_type}_{self.scaling}{self._release_tag}"

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON data; nested mappings are copies. Field by field, not
        ``dataclasses.asdict`` (a recursive deep copy): a 10,000-run sweep's DAG asks for
        every run's (benchmarks/dry_run.py)."""
        data = dict(self.__dict__)
        data.pop("site", None)  # parsed from ``platform``, which is recorded
        data["window"] = list(self.window)
        for name in ("parallelism", "model"):
            data[name] = dict(data[name])
        data["profile"] = {
            k: list(v) if isinstance(v, (list, tuple)) else v for k, v in self.profile.items()
        }
        # RunLimits holds plain numbers: its fields' copy is the whole copy
        data["limits"] = dict(vars(self.limits)) if self.limits is not None else None
        data["parity"] = self.parity.to_dict()
        data["run_id"] = self.run_id
        if self.release == DEFAULT_RELEASE:  # a default-release run's files stay as they were
            del data["release"], data["precision"]
        return data

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunSpec:
        fields = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        fields["window"] = tuple(fields["window"])
        if isinstance(fields.get("limits"), dict):
            fields["limits"] = RunLimits(**fields["limits"])
        fields["parity"] = ParitySettings.from_dict(fields.get("parity"))
        if isinstance(fields.get("release"), str):  # an older run's file may say ``spec``
            fields["release"] = current_release(fields["release"])
        return cls(**fields)
