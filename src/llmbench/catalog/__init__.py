"""The spec's workloads and configurations as validated data.

Data lives in this folder as YAML (``gpus.yaml``, ``models.yaml``, ``documents.yaml``,
``workload.<id>.yaml``, ``published.yaml``); this module loads it into frozen records and
checks every row with ``llmbench.parallelism``. See docs/catalog.md.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import yaml

from llmbench.catalog.formulas import evaluate, is_formula, parse_range, power_of_two_scales
from llmbench.catalog.records import (
    DTYPES,
    FRAMEWORKS,
    ROW_FIELDS,
    SCALINGS,
    Checkpoint,
    GpuType,
    ModelSpec,
    Profiling,
    RecipeRow,
)
from llmbench.errors import ConfigError
from llmbench.flops import ModelShape

__all__ = [
    "DTYPES",
    "FRAMEWORKS",
    "ROW_FIELDS",
    "SCALINGS",
    "Catalog",
    "Checkpoint",
    "Document",
    "GpuType",
    "ModelSpec",
    "Profiling",
    "RecipeRow",
    "Workload",
    "load_catalog",
    "published_results",
]

ROW_DEFAULTS: dict[str, Any] = {
    "ep": None,
    "etp": None,
    "vp": None,
    "fsdp": False,
    "cuda_graphs": False,
    "recompute_layers": 0,
    "offload_layers": 0,
}
"""Values of columns a document's table leaves out."""


def _read_yaml(name: str) -> Any:
    text = resources.files(__name__).joinpath(name).read_text(encoding="utf-8")
    return yaml.safe_load(text)


def _allowed(kind: str, value: object, allowed: Iterable[str], context: str = "") -> ConfigError:
    where = f" of {context}" if context else ""
    return ConfigError(f"{kind}={value} is not a {kind}{where}; allowed: {', '.join(allowed)}")


@dataclass(frozen=True)
class Document:
    """One spec document: its age rank (newer wins), timing method and profiling defaults."""

    name: str
    rank: int
    framework: str
    train_steps: int
    step_time_unit: str
    timing_method: str
    timing_iterations: tuple[int, int] | None
    profiling: Profiling | None


@dataclass(frozen=True)
class Workload:
    """A workload: framework, image, sizes (-> model ids) and checkpoint facts."""

    workload: str
    framework: str
    image: str
    image_is_placeholder: bool
    sizes: dict[str, str] = field(hash=False)
    checkpoints: tuple[Checkpoint, ...] = ()


def _na(value: Any) -> Any:
    return None if value == "NA" else value


class Catalog:
    """Every workload, size, dtype, GPU type and scale of the spec, validated."""

    def __init__(
        self,
        documents: Mapping[str, Document],
        gpus: Mapping[str, GpuType],
        models: Mapping[str, tuple[ModelSpec, ...]],
        workloads: Mapping[str, Workload],
        rows: Iterable[RecipeRow],
    ) -> None:
        self._documents = dict(documents)
        self._gpus = dict(gpus)
        self._models = dict(models)
        self._workloads = dict(workloads)
        self._rows = list(rows)

    # --- names -----------------------------------------------------------------------
    def workloads(self) -> list[str]:
        """Workload ids, sorted."""
        return sorted(self._workloads)

    def workload(self, workload: str) -> Workload:
        """The workload record; ConfigError naming the allowed ids."""
        if workload not in self._workloads:
            raise _allowed("workload", workload, self.workloads())
        return self._workloads[workload]

    def gpu_types(self) -> list[str]:
        """GPU type ids, sorted."""
        return sorted(self._gpus)

    def gpu(self, gpu_type: str) -> GpuType:
        """GPUs per node, CPU arch and peak TFLOPS of ``gpu_type``."""
        if gpu_type not in self._gpus:
            raise _allowed("gpu_type", gpu_type, self.gpu_types())
        return self._gpus[gpu_type]

    def image(self, workload: str) -> str:
        """Container image reference (a placeholder for NeMo 2 / Megatron-Bridge)."""
        return self.workload(workload).image

    def document(self, source: str) -> Document:
        """One spec document's record."""
        if source not in self._documents:
            raise _allowed("source", source, sorted(self._documents))
        return self._documents[source]

    def profiling(self, row: RecipeRow) -> Profiling | None:
        """Nsight defaults of the document the row comes from (None: it states none)."""
        return self.document(row.source).profiling

    def checkpoints(self, workload: str, size: str | None = None) -> list[Checkpoint]:
        """Checkpoint facts of a workload (all documents), optionally for one size."""
        return [c for c in self.workload(workload).checkpoints if size in (None, c.size)]

    # --- models ----------------------------------------------------------------------
    def model(self, workload: str, size: str, source: str | None = None) -> ModelSpec:
        """Shape + FLOPs family for a workload's size: the newest document's unless
        ``source`` names another document that gives one."""
        sizes = self.workload(workload).sizes
        if size not in sizes:
            raise _allowed("size", size, sorted(sizes), workload)
        specs = self._models[sizes[size]]
        if source is None:
            return specs[0]
        for spec in specs:
            if spec.source == source:
                return spec
        return specs[0]

    # --- rows ------------------------------------------------------------------------
    def rows(
        self,
        workload: str | None = None,
        size: str | None = None,
        dtype: str | None = None,
        gpu_type: str | None = None,
        scaling: str | None = None,
        include_superseded: bool = False,
    ) -> list[RecipeRow]:
        """Catalog rows matching every given filter (superseded rows only on request)."""
        return list(self._rows_cached(workload, size, dtype, gpu_type, scaling, include_superseded))

    @functools.lru_cache(maxsize=4096)  # noqa: B019 - the catalog lives as long as the process
    def _rows_cached(
        self,
        workload: str | None,
        size: str | None,
        dtype: str | None,
        gpu_type: str | None,
        scaling: str | None,
        include_superseded: bool,
    ) -> tuple[RecipeRow, ...]:
        # A 10,000-run sweep looks rows up once per run: a scan each time adds up.
        self._check_names(workload, size, dtype, gpu_type, scaling)
        wanted = {
            "workload": workload,
            "size": size,
            "dtype": dtype,
            "gpu_type": gpu_type,
            "scaling": scaling,
        }
        return tuple(
            r
            for r in self._rows
            if (include_superseded or r.superseded_by is None)
            and all(v is None or getattr(r, k) == v for k, v in wanted.items())
        )

    def row(
        self,
        workload: str,
        size: str,
        dtype: str,
        gpu_type: str,
        gpus: int,
        scaling: str = "weak",
        source: str | None = None,
    ) -> RecipeRow:
        """The row for one scale; a scale inside a formula range that is not listed is
        derived from the formulas and validated. ``source`` picks a superseded document."""
        candidates = [
            r
            for r in self.rows(workload, size, dtype, gpu_type, scaling, include_superseded=True)
            if (r.source == source if source else r.superseded_by is None)
        ]
        if not candidates:
            raise self._no_rows(workload, size, dtype, gpu_type, scaling, source)
        for r in candidates:
            if r.gpus == gpus:
                return r
        template = candidates[0]
        lo_hi = template.scale_range
        if lo_hi is not None and lo_hi[0] <= gpus <= lo_hi[1]:
            return template.with_overrides(gpus=gpus)
        from llmbench.parallelism import scale_message

        raise ConfigError(f"gpus={gpus} {scale_message(template)}")

    def scales(
        self, workload: str, size: str, dtype: str, gpu_type: str, scaling: str = "weak"
    ) -> list[int]:
        """The listed scales (GPU counts) of one configuration."""
        return sorted({r.gpus for r in self.rows(workload, size, dtype, gpu_type, scaling)})

    def _check_names(
        self,
        workload: str | None,
        size: str | None,
        dtype: str | None,
        gpu_type: str | None,
        scaling: str | None,
    ) -> None:
        if workload is not None:
            sizes = self.workload(workload).sizes
            if size is not None and size not in sizes:
                raise _allowed("size", size, sorted(sizes), workload)
        elif size is not None:
            all_sizes = sorted({s for w in self._workloads.values() for s in w.sizes})
            if size not in all_sizes:
                raise _allowed("size", size, all_sizes)
        if dtype is not None and dtype not in DTYPES:
            raise _allowed("dtype", dtype, DTYPES)
        if gpu_type is not None:
            self.gpu(gpu_type)
        if scaling is not None and scaling not in SCALINGS:
            raise _allowed("scaling", scaling, SCALINGS)

    def _no_rows(
        self,
        workload: str,
        size: str,
        dtype: str,
        gpu_type: str,
        scaling: str,
        source: str | None,
    ) -> ConfigError:
        """Name the first key that has no rows, with the values that do."""
        steps: list[tuple[str, str, dict[str, Any]]] = [
            ("dtype", dtype, {"workload": workload, "size": size}),
            ("gpu_type", gpu_type, {"workload": workload, "size": size, "dtype": dtype}),
            (
                "scaling",
                scaling,
                {"workload": workload, "size": size, "dtype": dtype, "gpu_type": gpu_type},
            ),
        ]
        for key, value, filters in steps:
            have = sorted({getattr(r, key) for r in self.rows(**filters)})
            if value not in have:
                context = " ".join(str(v) for v in filters.values())
                return _allowed(key, value, have, context)
        have = sorted({r.source for r in self.rows(workload, size, dtype, gpu_type, scaling, True)})
        return _allowed("source", source, have, f"{workload} {size} {dtype} {gpu_type}")


# --- loading ---------------------------------------------------------------------------


def _load_documents(raw: Mapping[str, Any]) -> dict[str, Document]:
    docs = {}
    for name, d in raw["documents"].items():
        prof = d.get("profiling")
        timing = d["timing"]
        docs[name] = Document(
            name=name,
            rank=int(d["rank"]),
            framework=d["framework"],
            train_steps=int(d["train_steps"]),
            step_time_unit=d["step_time_unit"],
            timing_method=timing["method"],
            timing_iterations=tuple(timing["iterations"]) if "iterations" in timing else None,
            profiling=Profiling(source=name, **prof) if prof else None,
        )
    return docs


def _load_gpus(raw: Mapping[str, Any]) -> dict[str, GpuType]:
    return {
        key: GpuType(
            gpu_type=key,
            name=g["name"],
            gpus_per_node=int(g["gpus_per_node"]),
            arch=g["arch"],
            peak_tflops={k: float(v) for k, v in g["peak_tflops"].items()},
            source=g["source"],
        )
        for key, g in raw["gpu_types"].items()
    }


def _load_models(
    raw: Mapping[str, Any], documents: Mapping[str, Document]
) -> dict[str, tuple[ModelSpec, ...]]:
    models = {}
    for model_id, m in raw["models"].items():
        shape = ModelShape(**m["shape"])
        specs = [
            ModelSpec(
                model_id=model_id,
                name=m["name"],
                shape=shape,
                flops_family=f["flops_family"],
                source=f["source"],
                printed_flops_per_sample=(
                    float(f["printed_flops_per_sample"])
                    if f.get("printed_flops_per_sample") is not None
                    else None
                ),
                experts=int(m.get("experts", 0)),
            )
            for f in m["formulas"]
        ]
        specs.sort(key=lambda s: -documents[s.source].rank)
        models[model_id] = tuple(specs)
    return models


def _scale_range(value: Any) -> tuple[int, int] | None:
    return parse_range(value) if isinstance(value, str) and "-" in value else None


def _table_rows(
    workload: Workload,
    table: Mapping[str, Any],
    gpu: GpuType,
    models: Mapping[str, tuple[ModelSpec, ...]],
) -> list[RecipeRow]:
    """One document table -> rows: dtypes split, GPU ranges expanded, formulas evaluated."""
    columns = table["columns"]
    fixed = {k: table[k] for k in ("scaling", "superseded_by") if k in table}
    rows: list[RecipeRow] = []
    for values in table["rows"]:
        if len(values) != len(columns):
            raise ConfigError(
                f"{workload.workload}: row {values} has {len(values)} values for "
                f"{len(columns)} columns"
            )
        cells = {c: _na(v) for c, v in zip(columns, values, strict=True)}
        lo, hi = parse_range(cells["gpus"])
        formulas = tuple((k, v) for k, v in cells.items() if is_formula(v))
        size = cells.pop("size")
        if size not in workload.sizes:
            raise _allowed("size", size, sorted(workload.sizes), workload.workload)
        specs = models[workload.sizes[size]]
        spec = next((s for s in specs if s.source == table["source"]), specs[0])
        for dtype in str(cells.pop("dtype")).lower().split("/"):
            for gpus in power_of_two_scales(lo, hi):
                concrete = {
                    k: evaluate(v, gpus, k) if is_formula(v) else v
                    for k, v in cells.items()
                    if k != "gpus"
                }
                fields = {**ROW_DEFAULTS, **concrete, **fixed}
                rows.append(
                    RecipeRow(
                        workload=workload.workload,
                        framework=workload.framework,
                        size=size,
                        dtype=dtype,
                        gpu_type=gpu.gpu_type,
                        gpus=gpus,
                        nodes=max(1, -(-gpus // gpu.gpus_per_node)),
                        scaling=fields.pop("scaling", "weak"),
                        source=table["source"],
                        formulas=formulas,
                        scale_range=_scale_range(cells["gpus"]),
                        model=spec,
                        gpu=gpu,
                        **fields,
                    )
                )
    return rows


def _with_listed_scales(rows: list[RecipeRow]) -> list[RecipeRow]:
    """Give each row the scales listed for its (workload, size, dtype, GPU, scaling, source)."""
    groups: dict[tuple[str, ...], list[int]] = {}
    for r in rows:
        key = (r.workload, r.size, r.dtype, r.gpu_type, r.scaling, r.source)
        groups.setdefault(key, []).append(r.gpus)
    return [
        dataclasses.replace(
            r,
            listed_scales=tuple(
                sorted(groups[(r.workload, r.size, r.dtype, r.gpu_type, r.scaling, r.source)])
            ),
        )
        for r in rows
    ]


def _load_workload(
    raw: Mapping[str, Any],
    gpus: Mapping[str, GpuType],
    models: Mapping[str, tuple[ModelSpec, ...]],
) -> tuple[Workload, list[RecipeRow]]:
    if raw["framework"] not in FRAMEWORKS:
        raise _allowed("framework", raw["framework"], FRAMEWORKS, raw["id"])
    checkpoints = tuple(
        Checkpoint(
            workload=raw["id"],
            size=c["size"],
            size_label=c["size_label"],
            size_gb=float(c["size_gb"]),
            save_scale_min=parse_range(c["save_scales"])[0] if c.get("save_scales") else None,
            save_scale_max=parse_range(c["save_scales"])[1] if c.get("save_scales") else None,
            save_min_scale_by_gpu=dict(c.get("save_min_scale", {})),
            load_min_scale_by_gpu=dict(c.get("load_min_scale", {})),
            source=c["source"],
        )
        for c in raw.get("checkpoints", [])
    )
    workload = Workload(
        workload=raw["id"],
        framework=raw["framework"],
        image=raw["image"]["ref"],
        image_is_placeholder=bool(raw["image"]["placeholder"]),
        sizes={size: s["model"] for size, s in raw["sizes"].items()},
        checkpoints=checkpoints,
    )
    rows: list[RecipeRow] = []
    for table in raw["tables"]:
        rows.extend(_table_rows(workload, table, gpus[table["gpu_type"]], models))
    return workload, rows


WORKLOAD_FILES = (
    "workload.llama3.1-nemo.yaml",
    "workload.nemotron4-nemo.yaml",
    "workload.llama3.1-mbridge.yaml",
    "workload.llama2-maxtext.yaml",
)


@functools.cache
def load_catalog() -> Catalog:
    """Load and validate the packaged catalog (cached; rows are immutable)."""
    from llmbench.parallelism import validate_row

    documents = _load_documents(_read_yaml("documents.yaml"))
    gpus = _load_gpus(_read_yaml("gpus.yaml"))
    models = _load_models(_read_yaml("models.yaml"), documents)
    workloads: dict[str, Workload] = {}
    rows: list[RecipeRow] = []
    for name in WORKLOAD_FILES:
        workload, wl_rows = _load_workload(_read_yaml(name), gpus, models)
        workloads[workload.workload] = workload
        rows.extend(wl_rows)
    rows = _with_listed_scales(rows)
    for r in rows:
        validate_row(r)
    return Catalog(documents, gpus, models, workloads, rows)


def published_results() -> list[Any]:
    """The spec's published results tables (see ``llmbench.catalog.published``)."""
    from llmbench.catalog.published import load_published

    return list(load_published())
