"""A comparison as a text table, CSV, JSON or a standalone HTML page."""

from __future__ import annotations

import html
import json
import math
from typing import Any

import pandas as pd

from llmbench.history.compare import Comparison
from llmbench.history.stats import MIN_ITERATIONS

FORMATS = ("table", "csv", "json", "html")
_SHOWN = (
    "workload", "size", "dtype", "gpu_type", "gpus", "scaling", "runs_a", "runs_b",
    "step_time_a_s", "step_time_b_s", "run_spread_pct", "change_pct", "ci_low", "ci_high",
    "verdict", "changed",
)  # fmt: skip
VERDICT_COLOURS = {
    "slower": "#ffcdd2", "faster": "#c8e6c9", "same": "#ffffff", "insufficient data": "#fff9c4",
}  # fmt: skip


def method_text(comparison: Comparison) -> str:
    tol, conf = comparison.tolerance, comparison.confidence
    return (
        f"ratio = step time B / step time A (mean over the averaging window); {conf:.0%} "
        "interval: circular block bootstrap of the per-iteration step times, runs resampled "
        "first where a side has several, a side of one run widened by the key's run-to-run "
        f"spread in the history (run_spread_pct); verdict at tolerance {tol:.1%}: slower when the "
        f"whole interval is above {1 + tol:.3f}, faster below {1 - tol:.3f}, same inside "
        f"[{1 - tol:.3f}, {1 + tol:.3f}], else insufficient data (also with fewer than "
        f"{MIN_ITERATIONS} iterations on a side)"
    )


def _summary(comparison: Comparison) -> str:
    counts = comparison.keys["verdict"].value_counts()
    parts = [f"{counts[v]} {v}" for v in ("slower", "faster", "same", "insufficient data")
             if v in counts]  # fmt: skip
    return f"{len(comparison.keys)} keys: " + (", ".join(parts) or "none")


def _cell(name: str, value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if name == "change_pct":
        return f"{value:+.1f}%"
    if name == "run_spread_pct":
        return f"{value:.1f}%"
    if name in ("ci_low", "ci_high"):
        return f"{value:.3f}"
    if name.startswith("step_time"):
        return f"{value:.4g}"
    return str(value)


def as_table(comparison: Comparison) -> str:
    frame = comparison.keys.loc[:, list(_SHOWN)]
    shown = pd.DataFrame({c: [_cell(c, v) for v in frame[c]] for c in frame.columns})
    lines = [
        f"A: {comparison.a}",
        f"B: {comparison.b}",
        shown.to_string(index=False) if len(shown) else "(no keys)",
        "",
        _summary(comparison),
        *_check_lines(comparison),
        *_provenance_lines(comparison),
        method_text(comparison),
    ]
    return "\n".join(lines) + "\n"


def _provenance_lines(comparison: Comparison) -> list[str]:
    if not comparison.provenance:
        return ["provenance: nothing changed" if "published" not in (comparison.a, comparison.b)
                else "provenance: not compared (published references)"]  # fmt: skip
    return ["provenance changed:"] + [
        f"  {c['field']}: {', '.join(c['a']) or '-'} -> {', '.join(c['b']) or '-'}"  # type: ignore[arg-type]
        for c in comparison.provenance
    ]


def _check_lines(comparison: Comparison) -> list[str]:
    """Which sweeps were left out as damaged, which were read without checksums, and
    which keys the published references have no step time for."""
    lines = [f"left out: {line}" for line in comparison.skipped]
    if comparison.unchecked:
        lines.append(
            f"read unchecked (stored without checksums): {', '.join(comparison.unchecked)}"
        )
    if comparison.unpublished:
        lines.append(f"no published step time for: {'; '.join(comparison.unpublished)}")
    return lines


def as_csv(comparison: Comparison) -> str:
    return comparison.keys.to_csv(index=False)


def as_json(comparison: Comparison) -> str:
    keys = json.loads(comparison.keys.to_json(orient="records"))
    data = {
        "a": comparison.a,
        "b": comparison.b,
        "tolerance": comparison.tolerance,
        "confidence": comparison.confidence,
        "method": method_text(comparison),
        "regressions": comparison.regressions,
        "keys": keys,
        "provenance": comparison.provenance,
        "skipped": comparison.skipped,
        "unchecked": comparison.unchecked,
        "unpublished": comparison.unpublished,
    }
    return json.dumps(data, indent=2) + "\n"


def as_html(comparison: Comparison) -> str:
    esc = html.escape
    head = "".join(f"<th>{esc(c)}</th>" for c in _SHOWN)
    body = []
    for row in comparison.keys.loc[:, list(_SHOWN)].to_dict("records"):
        colour = VERDICT_COLOURS.get(str(row["verdict"]), "#ffffff")
        cells = "".join(f"<td>{esc(_cell(c, row[c]))}</td>" for c in _SHOWN)
        body.append(f'<tr style="background:{colour}">{cells}</tr>')
    notes = [*_check_lines(comparison), *_provenance_lines(comparison)]
    prov = "".join(f"<li>{esc(line.strip())}</li>" for line in notes)
    return (
        '<!DOCTYPE html>\n<html><head><meta charset="utf-8">'
        f"<title>llmbench compare {esc(comparison.a)} {esc(comparison.b)}</title>"
        "<style>body{font-family:sans-serif}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:2px 6px;font-size:small}</style></head><body>"
        f"<h1>llmbench compare</h1><p>A: <code>{esc(comparison.a)}</code><br>"
        f"B: <code>{esc(comparison.b)}</code></p><p>{esc(_summary(comparison))}</p>"
        f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
        f"<h2>Provenance</h2><ul>{prov}</ul><p>{esc(method_text(comparison))}</p>"
        "</body></html>\n"
    )


def render(comparison: Comparison, fmt: str) -> str:
    return {"table": as_table, "csv": as_csv, "json": as_json, "html": as_html}[fmt](comparison)
