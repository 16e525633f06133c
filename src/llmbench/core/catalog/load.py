"""Loading the catalog's YAML files into validated records.

Data lives in this folder as YAML (``gpus.yaml``, ``models.yaml``, ``documents.yaml``,
``releases.yaml``, ``workload.<id>.yaml``, ``published.yaml``); this module reads it,
expands document tables into one row per scale (formulas evaluated) and checks every row
with ``llmbench.core.catalog.rules``. See docs/catalog.md.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from importlib import resources
from typing import Any

from llmbench.core.catalog.formulas import evaluate, is_formula, parse_range, power_of_two_scales
from llmbench.core.catalog.query import Catalog, not_allowed
from llmbench.core.catalog.records import (
    DEFAULT_RELEASE,
    FRAMEWORKS,
    Checkpoint,
    Document,
    GpuType,
    ModelSpec,
    Profiling,
    RecipeRow,
    Release,
    Workload,
    precision_of,
)
from llmbench.core.catalog.rules import validate_row
from llmbench.core.flops import ModelExtras, ModelShape
from llmbench.core.yamlfile import load_yaml_text
from llmbench.errors import ConfigError

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


def parse_package_yaml(text: str, source: str = "package YAML") -> Any:
    """YAML text shipped with the package (catalog, parity, schema), parsed by the one
    loader (``llmbench.core.yamlfile``) with libyaml's parser."""
    return load_yaml_text(text, source, fast=True)


def read_yaml(name: str) -> Any:
    """One of the catalog's YAML files, parsed."""
    text = resources.files("llmbench.core.catalog").joinpath(name).read_text(encoding="utf-8")
    return parse_package_yaml(text, name)


def _na(value: Any) -> Any:
    return None if value == "NA" else value


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
            release=d.get("release", DEFAULT_RELEASE),
            tag=d.get("tag", ""),
            fp8_recipe=d.get("fp8_recipe", ""),
        )
    return docs


def _load_releases(raw: Mapping[str, Any], documents: Mapping[str, Document]) -> dict[str, Release]:
    releases = {}
    for name, r in raw["releases"].items():
        releases[name] = Release(
            release=name,
            title=r["title"],
            source=r["source"],
            date=str(r["date"]),
            container=r.get("container") or "",
            documents=tuple(d.name for d in documents.values() if d.release == name),
            note=r.get("note", ""),
        )
    for doc in documents.values():
        if doc.release not in releases:
            raise not_allowed("release", doc.release, sorted(releases), doc.name)
    return releases


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
        extras = ModelExtras.from_dict(m.get("extras"))
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
                extras=extras,
            )
            for f in m["formulas"]
        ]

        # the default formula of a model is the newest of the spec's documents that has one
        def newest_spec_first(spec: ModelSpec) -> tuple[bool, int]:
            document = documents[spec.source]
            return document.release != DEFAULT_RELEASE, -document.rank

        specs.sort(key=newest_spec_first)
        models[model_id] = tuple(specs)
    return models


def _scale_range(value: Any) -> tuple[int, int] | None:
    """A table's ``gpus`` range (``128-1024``); None for one scale or a list of scales."""
    return parse_range(value) if isinstance(value, str) and "-" in value else None


def _scales(value: Any) -> list[int]:
    """A table's ``gpus``: a range (its power-of-two scales), one scale, or a list (the
    scales a release's metadata lists, e.g. ``[256, 512]``)."""
    if isinstance(value, list):
        return sorted(int(v) for v in value)
    lo, hi = parse_range(value)
    return power_of_two_scales(lo, hi)


def _table_rows(
    workload: Workload,
    table: Mapping[str, Any],
    gpu: GpuType,
    models: Mapping[str, tuple[ModelSpec, ...]],
    document: Document,
) -> list[RecipeRow]:
    """One document table -> rows: dtypes split, GPU ranges (or lists) expanded, formulas
    evaluated. A row's ``fp8_recipe`` column, else the table's, else the document's, says
    how its FP8 scales."""
    columns = table["columns"]
    fixed = {k: table[k] for k in ("scaling", "superseded_by") if k in table}
    table_fp8 = table.get("fp8_recipe", document.fp8_recipe)
    rows: list[RecipeRow] = []
    for values in table["rows"]:
        if len(values) != len(columns):
            raise ConfigError(
                f"{workload.workload}: row {values} has {len(values)} values for "
                f"{len(columns)} columns"
            )
        cells = {c: _na(v) for c, v in zip(columns, values, strict=True)}
        fp8_recipe = cells.pop("fp8_recipe", None) or table_fp8
        scales = _scales(cells["gpus"])
        formulas = tuple((k, v) for k, v in cells.items() if is_formula(v))
        size = cells.pop("size")
        if size not in workload.sizes:
            raise not_allowed("size", size, sorted(workload.sizes), workload.workload)
        specs = models[workload.sizes[size]]
        spec = next((s for s in specs if s.source == table["source"]), specs[0])
        for dtype in str(cells.pop("dtype")).lower().split("/"):
            for gpus in scales:
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
                        release=document.release,
                        precision=precision_of(dtype, fp8_recipe),
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
    documents: Mapping[str, Document],
) -> tuple[Workload, list[RecipeRow]]:
    if raw["framework"] not in FRAMEWORKS:
        raise not_allowed("framework", raw["framework"], FRAMEWORKS, raw["id"])
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
        sizes={size: s["model"] for size, s in raw["sizes"].items()},
        checkpoints=checkpoints,
    )
    rows: list[RecipeRow] = []
    for table in raw["tables"]:
        document = documents[table["source"]]
        rows.extend(_table_rows(workload, table, gpus[table["gpu_type"]], models, document))
    return workload, rows


WORKLOAD_FILES = (
    "workload.llama3.1-nemo.yaml",
    "workload.nemotron4-nemo.yaml",
    "workload.llama3.1-mbridge.yaml",
    "workload.llama2-maxtext.yaml",
    "workload.qwen3-mbridge.yaml",
    "workload.deepseek-v3-mbridge.yaml",
)


@functools.cache
def load_catalog() -> Catalog:
    """Load and validate the packaged catalog (cached; rows are immutable)."""
    documents = _load_documents(read_yaml("documents.yaml"))
    gpus = _load_gpus(read_yaml("gpus.yaml"))
    models = _load_models(read_yaml("models.yaml"), documents)
    releases = _load_releases(read_yaml("releases.yaml"), documents)
    workloads: dict[str, Workload] = {}
    rows: list[RecipeRow] = []
    for name in WORKLOAD_FILES:
        workload, wl_rows = _load_workload(read_yaml(name), gpus, models, documents)
        workloads[workload.workload] = workload
        rows.extend(wl_rows)
    rows = _with_listed_scales(rows)
    for r in rows:
        validate_row(r)
    return Catalog(documents, gpus, models, workloads, rows, releases)
