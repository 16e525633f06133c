"""An explanation of why a run missed its reference, as ``llmbench explain`` prints it and
``result.json`` holds it: the facts its evidence functions read (``RunFacts``), its items
(``Item``), ranked (``rank``), and its text and strict JSON forms. The evidence itself is
``llmbench.aggregate.explain``."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from llmbench.core.results_layout import run_dir, run_file
from llmbench.text import counted, effect_words

EXPLAINED_VERDICTS = ("slower", "no_reference", "not_comparable", None)
"""Verdicts whose runs get an explanation in the report (None: no verdict at all)."""
ORDER = ("transport", "node_health", "telemetry", "step_spread", "launch", "reference_row")


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
    telemetry: pd.DataFrame | None = None  # its telemetry samples, read when throttled
    # what could not be read, by what needed it (record, transport, nodes, steps,
    # telemetry, reference_row): one line naming the file and why
    unread: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # more lines for "checked"

    @property
    def run_id(self) -> str:
        return str(self.row["run_id"])

    @property
    def run_dir(self) -> Path:
        return self.results / run_dir(self.run_id)

    def path(self, name: str) -> str:
        """A file of the run, relative to results/."""
        return run_file(self.run_id, name)


@dataclass
class Explanation:
    run_id: str
    verdict: str | None
    verdict_reason: str | None
    deviation_pct: float | None
    items: list[Item]
    checked: list[str]

    @property
    def summary(self) -> str:
        if not self.items:
            return "no known cause found"
        return f"{counted(len(self.items), 'known cause')}; first: {self.items[0].title}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "verdict": self.verdict,
            "verdict_reason": self.verdict_reason,
            "deviation_pct": self.deviation_pct,
            "summary": self.summary,
            "items": [i.as_dict() for i in self.items],
            "checked": list(self.checked),
        }


def row_value(row: Mapping[str, Any], name: str) -> Any:
    value = row.get(name)
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return None
    return value


def rank(items: Sequence[Item]) -> list[Item]:
    """Items with a number first, largest upper bound first; then the rest by kind."""
    return sorted(
        items,
        key=lambda i: (
            i.effect_pct is None,
            -(i.effect_pct[1] if i.effect_pct else 0),
            ORDER.index(i.kind),
        ),
    )


def as_text(explanation: Explanation) -> str:
    """The explanation as ``llmbench explain`` prints it."""
    e = explanation
    verdict = e.verdict or "none"
    deviation = (
        f" ({e.deviation_pct:+.1f} % against the reference)" if e.deviation_pct is not None else ""
    )
    lines = [f"{e.run_id}: verdict {verdict}{deviation}"]
    if e.verdict_reason:
        lines.append(f"  {e.verdict_reason}")
    if not e.items:
        lines.append("no known cause found")
    for n, item in enumerate(e.items, start=1):
        effect = ""
        if item.effect_pct is not None:
            effect = f" [{effect_words(*item.effect_pct)}]"
        lines.append(f"{n}. {item.kind}: {item.title}{effect}")
        lines.append(f"   {item.detail}")
        if item.effect_source:
            lines.append(f"   source: {item.effect_source}")
        if item.evidence:
            lines.append(f"   evidence: {', '.join(item.evidence)}")
    lines.append("checked:")
    lines += [f"  - {c}" for c in e.checked]
    return "\n".join(lines) + "\n"


def as_json(explanations: Sequence[Explanation]) -> str:
    """Strict JSON (RFC 8259): a number that is not finite (a deviation of +inf %) is
    null, as in result.json."""
    return (
        json.dumps(_finite([e.as_dict() for e in explanations]), indent=2, allow_nan=False) + "\n"
    )


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value
