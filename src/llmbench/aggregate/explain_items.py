"""The items ``llmbench.aggregate.explain`` ranks and the facts its evidence functions read
about one run (docs/explain.md)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd


@dataclass(frozen=True)
class Item:
    """One piece of evidence: what, how much it could explain (percent of the step time,
    low-high, None where no number exists) and where it is (paths under results/)."""

    kind: str
    title: str
    detail: str
    effect_pct: tuple[float, float] | None = None
    effect_source: str = ""
    evidence: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["effect_pct"] = (
            None
            if self.effect_pct is None
            else {"low": self.effect_pct[0], "high": self.effect_pct[1]}
        )
        out["evidence"] = list(self.evidence)
        return out


@dataclass
class RunFacts:
    """What the evidence functions read about one run."""

    row: Mapping[str, Any]  # its runs-table row
    results: Path  # the results/ folder
    record: Mapping[str, Any] = field(default_factory=dict)
    transport: Mapping[str, Any] = field(default_factory=dict)
    nodes: pd.DataFrame | None = None  # the preflight nodes table, where preflight ran
    steps: pd.DataFrame | None = None  # the run's rows of the steps table

    @property
    def run_id(self) -> str:
        return str(self.row["run_id"])

    @property
    def run_dir(self) -> Path:
        return self.results / "runs" / self.run_id

    def path(self, name: str) -> str:
        """A file of the run, relative to results/."""
        return f"runs/{self.run_id}/{name}"


def row_value(row: Mapping[str, Any], name: str) -> Any:
    """A runs-table cell, None where it is missing, NA or NaN."""
    value = row.get(name)
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return None
    return value
