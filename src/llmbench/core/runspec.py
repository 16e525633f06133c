"""The resolved specification of one run: everything needed to launch it and read it back."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, TypedDict

from llmbench.core.limits import RunLimits, default_limits

_NAME = r"[a-z0-9][a-z0-9.-]*"
DEFAULT_RELEASE = "spec"
"""The release of a run whose sweep entry names none (the spec's documents): its ids carry
no release; another release's ids end their scale (group) part with ``-<release>``."""
_RELEASE = r"(?:-v[0-9]{2}\.[0-9]{2})?"
RUN_ID_PATTERN = (
    rf"{_NAME}_{_NAME}_(?:fp32|bf16|fp8|nvfp4)_[a-z0-9][a-z0-9-]*x[0-9]+(?:-strong)?{_RELEASE}"
    r"_(?:perf|profile|nccltrace|ckpt-save|ckpt-load)"
)
"""The shape of every ``run_id``: a short regex for Snakemake's wildcard constraint (a list
of 10,000 ids would be substituted into every file pattern and make the DAG quadratic)."""
GROUP_ID_PATTERN = rf"{_NAME}_{_NAME}_[a-z0-9][a-z0-9-]*_(?:weak|strong){_RELEASE}"
"""The shape of every ``group_id``."""


def parity_settings(parity: dict[str, Any], kind: str) -> dict[str, Any]:
    """``{name: value}`` of one kind of a run's reference settings (``RunSpec.parity``), in
    the data's order. Here, not in the catalog: entry points run inside a container with
    the standard library only. A setting still marked ``requires`` waits for the
    container's framework versions (``llmbench.ranks.entrypoints.common.decide_requirements``)."""
    return {
        s["name"]: s["value"]
        for s in parity.get("settings", [])
        if s["kind"] == kind and "requires" not in s
    }


def reference_time_limit_min(parity: dict[str, Any]) -> int | None:
    """The reference's time limit of a run in minutes (``kind: limit`` in its parity data),
    None without one."""
    value = parity_settings(parity, "limit").get("time_limit_min")
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


class Parallelism(TypedDict, total=False):
    """How a run splits its model and batch (a catalog row's columns; the embedded
    workload sets tp, pp, cp, dp and ga only). None: the recipe leaves it unset."""

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


class ModelFields(TypedDict, total=False):
    """The model a run builds: ``llmbench.core.flops.ModelShape``'s fields (the row's layers
    and sequence length, the vocabulary as built), its FLOPs formula family, for a catalog
    workload the recipe document it comes from, and for a model with experts, latent
    attention or MTP its ``extras`` (``llmbench.core.flops.ModelExtras``, set fields only)."""

    flops_formula: str
    source: str
    layers: int
    hidden: int
    ffn_hidden: int
    heads: int
    query_groups: int
    vocab: int
    seq_len: int
    extras: dict[str, int]


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
    parallelism: Parallelism = field(default_factory=Parallelism)
    model: ModelFields = field(default_factory=ModelFields)
    launcher: str = "local"
    container: str = "none"
    threads_per_rank: int = 1
    image: str = ""
    profile: ProfileSettings = field(default_factory=ProfileSettings)
    """``profile`` variant only (else empty), resolved from config and document."""
    parity: dict[str, Any] = field(default_factory=dict)
    """The reference's launch settings for this run, with sources (``catalog/parity.yaml``
    resolved by ``llmbench.core.catalog.parity``); empty for the embedded workload."""
    platform: dict[str, Any] = field(default_factory=dict)
    """Site values of a platform launcher (``kubernetes:`` or ``runai:`` in the config)."""
    limits: RunLimits | None = None
    """Time limit and watchdog allowances (``llmbench.core.limits``); None takes the defaults
    (the reference's time limit from ``parity``)."""
    release: str = DEFAULT_RELEASE
    """The reference release the run's recipe row belongs to (``catalog/releases.yaml``)."""
    precision: str = ""
    """The precision recipe the GEMMs run in (``catalog.records.PRECISIONS``) of a later
    release's run; empty for a spec run, whose dtype and document say it
    (``catalog.records.precision_of``)."""

    def __post_init__(self) -> None:
        if self.limits is None:
            reference = reference_time_limit_min(self.parity)
            limits = default_limits(self.framework, self.variant, reference)
            object.__setattr__(self, "limits", limits)

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
        data["window"] = list(self.window)
        for name in ("parallelism", "model"):
            data[name] = dict(data[name])
        data["profile"] = {
            k: list(v) if isinstance(v, (list, tuple)) else v for k, v in self.profile.items()
        }
        # RunLimits holds plain numbers: its fields' copy is the whole copy
        data["limits"] = dict(vars(self.limits)) if self.limits is not None else None
        data["run_id"] = self.run_id
        if self.release == DEFAULT_RELEASE:  # a spec run's files stay as they were
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
        return cls(**fields)
