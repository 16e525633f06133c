"""Typed, frozen records of the catalog: documents, workloads, GPU types, model specs,
recipe rows. Types only: the rules that check them are ``llmbench.core.catalog.rules``."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from llmbench.core.flops import NO_EXTRAS, ModelExtras, ModelShape
from llmbench.core.runspec import DEFAULT_RELEASE, Parallelism
from llmbench.errors import ConfigError

FRAMEWORKS = ("nemo2", "megatron-bridge", "maxtext")
DTYPES = ("bf16", "fp8", "nvfp4")
"""What a sweep asks the GEMMs to run in, in the recipes' own words: BF16, FP8 or NVFP4
(4-bit floats with 16-element block scales). How FP8 scales is the row's ``precision``."""
PRECISIONS = ("bf16", "fp8-delayed", "fp8-current", "fp8-blockwise", "mxfp8", "nvfp4")
"""The precision recipe a row trains with: FP8 with delayed (amax history), current
(per tensor) or blockwise scaling, MXFP8 (FP8 with 32-element block scales), NVFP4."""
PEAK_DTYPE = {"fp8-delayed": "fp8", "fp8-current": "fp8", "fp8-blockwise": "fp8", "mxfp8": "fp8"}
"""The tensor-core rate a precision runs at, where it is not its own name (MXFP8 runs at
the FP8 rate: no GPU type lists it apart)."""


def precision_of(dtype: str, fp8_recipe: str) -> str:
    """The precision recipe of ``dtype`` under a document's (or row's) FP8 scaling:
    ``fp8`` with ``current`` is ``fp8-current``, with ``mx`` it is ``mxfp8``."""
    if dtype != "fp8":
        return dtype
    return "mxfp8" if fp8_recipe == "mx" else f"fp8-{fp8_recipe}"


SCALINGS = ("weak", "strong")


@dataclass(frozen=True)
class GpuType:
    """One GPU type: GPUs per node, node CPU architecture, peak dense TFLOPS per dtype."""

    gpu_type: str
    name: str
    gpus_per_node: int
    arch: str
    peak_tflops: dict[str, float] = field(hash=False)
    source: str

    def supports(self, dtype: str) -> bool:
        """Whether the spec gives a peak (hence support) for ``dtype`` on this GPU type."""
        return dtype in self.peak_tflops

    def peak_flops(self, dtype: str) -> float:
        """Peak dense FLOP/s per GPU for ``dtype`` (TFLOPS * 1e12)."""
        if dtype not in self.peak_tflops:
            allowed = ", ".join(sorted(self.peak_tflops))
            raise ConfigError(
                f"dtype={dtype} is not supported on {self.gpu_type}; allowed: {allowed}"
            )
        return self.peak_tflops[dtype] * 1e12


@dataclass(frozen=True)
class ModelSpec:
    """A model's shape with the FLOPs formula family one document uses for it; ``extras``
    what a dense grouped-query shape does not say (experts, latent attention, MTP)."""

    model_id: str
    name: str
    shape: ModelShape
    flops_family: str
    source: str
    printed_flops_per_sample: float | None = None
    extras: ModelExtras = NO_EXTRAS

    @property
    def experts(self) -> int:
        """Routed experts (0 for a dense model)."""
        return self.extras.experts


@dataclass(frozen=True)
class Checkpoint:
    """Checkpoint size and the scales a document says save / load work at."""

    workload: str
    size: str
    size_label: str
    size_gb: float
    save_scale_min: int | None
    save_scale_max: int | None
    save_min_scale_by_gpu: dict[str, int] = field(hash=False)
    load_min_scale_by_gpu: dict[str, int] = field(hash=False)
    source: str = ""


@dataclass(frozen=True)
class Profiling:
    """Nsight profiling defaults a document states (steps inclusive)."""

    start_step: int
    stop_step: int
    total_steps: int
    ranks: str | None
    source: str


@dataclass(frozen=True)
class Document:
    """One reference document: a spec document, or a release of NVIDIA's recipes read as
    one. Its age rank (newer wins within a release), the release it belongs to and its tag
    of the recipe repository, the FP8 scaling its rows train with, the timing method and
    the profiling defaults."""

    name: str
    rank: int
    framework: str
    train_steps: int
    step_time_unit: str
    timing_method: str
    timing_iterations: tuple[int, int] | None
    profiling: Profiling | None
    release: str = DEFAULT_RELEASE
    tag: str = ""
    fp8_recipe: str = ""


@dataclass(frozen=True)
class Release:
    """A reference release: the documents whose rows, parity settings and published numbers
    belong to it, the recipe repository's tag and the container its recipes pin."""

    release: str
    title: str
    source: str
    date: str
    container: str
    documents: tuple[str, ...]
    note: str = ""


@dataclass(frozen=True)
class Workload:
    """A workload: framework, sizes (-> model ids) and checkpoint facts. Its reference
    images are per spec document and GPU type (``catalog/parity.yaml``)."""

    workload: str
    framework: str
    sizes: dict[str, str] = field(hash=False)
    checkpoints: tuple[Checkpoint, ...] = ()


ROW_FIELDS = (
    "workload", "framework", "size", "dtype", "gpu_type", "gpus", "nodes", "seq_len", "layers",
    "tp", "pp", "cp", "ep", "etp", "dp", "vp", "fsdp", "mbs", "gbs", "ga", "cuda_graphs",
    "recompute_layers", "offload_layers", "scaling", "precision", "release", "source",
)  # fmt: skip
"""The columns of a recipe row, in table order (``RecipeRow.as_dict``)."""

OVERRIDABLE = (
    "dtype", "gpus", "seq_len", "tp", "pp", "cp", "ep", "etp", "dp", "vp", "fsdp", "mbs",
    "gbs", "ga", "cuda_graphs", "recompute_layers", "offload_layers",
)  # fmt: skip
"""Fields ``with_overrides`` accepts; the rest name the recipe or are derived (nodes)."""


@dataclass(frozen=True)
class RecipeRow(Parallelism):
    """One runnable configuration: a workload, size, dtype, GPU type and scale, and how it
    splits its model and batch (the ``Parallelism`` columns it inherits).

    ``dp`` is the data-parallel size; on Megatron-Bridge it includes FSDP sharding, on
    MaxText it is the DP beside ``fsdp`` (an int there: FSDP x DP = GPUs). ``vp``, ``ep``
    and ``etp`` are None where the document says NA. ``formulas`` keeps the document's
    ``GPUs`` formulas (field -> string) for rows that came from a scale range, and
    ``scale_range`` that range; ``listed_scales`` are the scales the document lists.
    ``release`` is the document's release; ``precision`` the recipe the GEMMs run in
    (``PRECISIONS``): the dtype with the FP8 scaling of the document or the row.
    """

    workload: str
    framework: str
    size: str
    dtype: str
    gpu_type: str
    gpus: int
    nodes: int
    seq_len: int
    layers: int
    mbs: int
    gbs: int
    scaling: str
    source: str
    release: str = DEFAULT_RELEASE
    precision: str = ""
    superseded_by: str | None = None
    formulas: tuple[tuple[str, str], ...] = ()
    scale_range: tuple[int, int] | None = None
    listed_scales: tuple[int, ...] = ()
    model: ModelSpec | None = field(default=None, compare=False, repr=False)
    gpu: GpuType | None = field(default=None, compare=False, repr=False)

    @property
    def model_shape(self) -> ModelShape:
        """The model's shape with this row's layers and sequence length (proxies differ)."""
        if self.model is None:
            raise ConfigError(f"{self.label()}: row has no model spec")
        return dataclasses.replace(self.model.shape, layers=self.layers, seq_len=self.seq_len)

    @property
    def fsdp_size(self) -> int:
        """MaxText's FSDP degree (1 elsewhere: there FSDP shards inside DP)."""
        return self.fsdp if self.framework == "maxtext" and not isinstance(self.fsdp, bool) else 1

    @property
    def data_parallel_total(self) -> int:
        """Replicas a global batch is split over: DP (x FSDP on MaxText)."""
        return self.dp * self.fsdp_size

    def label(self) -> str:
        """``llama3.1-nemo 8b bf16 on h100 at 8 GPUs`` (for messages)."""
        return (
            f"{self.workload} {self.size} {self.dtype} on {self.gpu_type} at {self.gpus} GPUs"
            + (" (strong scaling)" if self.scaling == "strong" else "")
        )

    def as_dict(self) -> dict[str, Any]:
        """The table columns (``ROW_FIELDS``) as a plain dict."""
        return {name: getattr(self, name) for name in ROW_FIELDS}

    def sweep_entry(self, **extra: Any) -> dict[str, Any]:
        """This row as one ``sweeps`` entry of a config (``extra``: e.g. ``variants``); the
        release is named where it is not the default."""
        release = {} if self.release == DEFAULT_RELEASE else {"release": self.release}
        return {
            "workload": self.workload,
            "sizes": [self.size],
            "dtypes": [self.dtype],
            "gpu_type": self.gpu_type,
            "scales": [self.gpus],
            "scaling": self.scaling,
            **release,
            **extra,
        }
