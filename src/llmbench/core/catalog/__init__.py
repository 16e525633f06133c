"""Everywhere, pure: the spec's workloads and configurations as checked data.

- ``records``: the typed, frozen records (documents, workloads, GPU types, models, rows)
- ``formulas``: scale ranges and ``GPUs`` formulas as the documents write them
- ``rules``: the parallelism rules every row and every override satisfies
- ``load``: the YAML files -> validated records (``load_catalog``)
- ``query``: ``Catalog``, the questions asked of them
- ``published``: the documents' published results, reproduced with ``llmbench.core.metrics``
- ``parity``: the reference's launch settings as data; ``citations``: every cited line
  range of the data with the quote of its text (checked by ``benchmarks/check_citations.py``)

See docs/catalog.md.
"""

from llmbench.core.catalog.load import load_catalog
from llmbench.core.catalog.published import published_results
from llmbench.core.catalog.query import Catalog
from llmbench.core.catalog.records import (
    DTYPES,
    FRAMEWORKS,
    ROW_FIELDS,
    SCALINGS,
    Checkpoint,
    Document,
    GpuType,
    ModelSpec,
    Profiling,
    RecipeRow,
    Workload,
)
from llmbench.core.catalog.rules import with_overrides

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
    "with_overrides",
]
