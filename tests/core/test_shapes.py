"""Each shape is declared once: a catalog row's parallelism columns are ``Parallelism``'s,
and a run spec's model carries ``ModelShape``'s fields through ``model_fields``."""

from __future__ import annotations

import dataclasses

from llmbench.core.catalog import load_catalog
from llmbench.core.catalog.records import RecipeRow
from llmbench.core.flops import ModelShape
from llmbench.core.runspec import PARALLELISM_FIELDS, Parallelism
from tests.helpers import release_runs

SHAPE_FIELDS = tuple(f.name for f in dataclasses.fields(ModelShape))


def test_a_recipe_row_declares_no_parallelism_field_of_its_own() -> None:
    assert issubclass(RecipeRow, Parallelism)
    assert set(RecipeRow.__annotations__) & set(PARALLELISM_FIELDS) == set()
    assert set(PARALLELISM_FIELDS) <= {f.name for f in dataclasses.fields(RecipeRow)}


def test_every_run_carries_its_rows_parallelism_and_model_shape() -> None:
    catalog = load_catalog()
    for spec in release_runs("dgxc-2025") + release_runs("v26.08"):
        row = catalog.row(spec.workload, spec.size, spec.dtype, spec.gpu_type, spec.gpus,
                          spec.scaling, release=spec.release)  # fmt: skip
        assert tuple(spec.parallelism) == PARALLELISM_FIELDS, spec.run_id
        assert spec.parallelism == {name: getattr(row, name) for name in PARALLELISM_FIELDS}
        keys = ("flops_formula", "source", *SHAPE_FIELDS)
        assert tuple(spec.model)[: len(keys)] == keys, spec.run_id
        shape = ModelShape(**{name: spec.model[name] for name in SHAPE_FIELDS})
        assert dataclasses.replace(shape, vocab=row.model_shape.vocab) == row.model_shape
        assert spec.model.get("extras", {}) == row.model.extras.as_dict(), spec.run_id
