"""Scaling tables in the spec's own layout, as Markdown and HTML.

One table per (workload, size, dtype, gpu_type, scaling) of ``perf`` runs; rows are the
spec's four metrics, columns the scales (as in e.g. llama31-nemo2-h100.txt):

    Llama 3.1 8b BF16 | 8x H100 GPUs | 16x H100 GPUs | ...
    Training step time (seconds per step) | 12.27 | 12.3 | ...
    Throughput in tokens per second | 85459 | 170500 | ...
    Model flops utilization | 62.47% | 62.31% | ...
    Time to train 1T tokens in days | 135.43 | 67.88 | ...

A scale whose run did not succeed shows its status and reason instead of numbers.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd

from llmbench.core.devices import device
from llmbench.report.html_tables import html_page

TABLE_KEYS = ("workload", "size", "dtype", "gpu_type", "scaling")


@dataclass(frozen=True)
class ScalingTable:
    """One table: a title, the scale headers and the rows of formatted cells."""

    key: tuple[str, str, str, str, str]
    title: str
    headers: list[str]
    rows: list[tuple[str, list[str]]]


def _sig(value: float) -> str:
    """Step times: 2 decimals from 1 s up (as the spec prints), 4 significant digits below."""
    if abs(value) >= 1:
        return f"{value:.2f}".rstrip("0").rstrip(".")
    return f"{value:.4g}"


def _tokens_label(tokens: float) -> str:
    for unit, size in (("T", 1e12), ("B", 1e9), ("M", 1e6)):
        if tokens >= size:
            return f"{tokens / size:g}{unit}"
    return f"{tokens:g}"


def _metric_rows(train_tokens: float) -> list[tuple[str, str, Callable[[float], str]]]:
    return [
        ("Training step time (seconds per step)", "step_time_mean_s", _sig),
        ("Throughput in tokens per second", "tokens_per_s", lambda v: f"{v:.0f}"),
        ("Model flops utilization", "mfu", lambda v: f"{100 * v:.2f}%"),
        (
            f"Time to train {_tokens_label(train_tokens)} tokens in days",
            "days_to_train",
            lambda v: f"{v:.2f}",
        ),
    ]


def _cell(status: str, reason: object, value: object, fmt: Callable[[float], str]) -> str:
    """A formatted number, or the run's status (and reason) when it did not succeed."""
    if status != "success":
        return status + (f" ({reason})" if isinstance(reason, str) and reason else "")
    if value is None or value is pd.NA or not math.isfinite(float(value)):
        return "n/a"
    return fmt(float(value))


def scaling_tables(runs: pd.DataFrame) -> list[ScalingTable]:
    """The spec-layout tables of the runs table's ``perf`` runs, sorted by key; of several
    runs at one scale the latest attempt is shown."""
    metrics = [column for _, column, _ in _metric_rows(1e12)]
    columns = [*TABLE_KEYS, "gpus", "attempt", "status", "reason", "train_tokens", *metrics]
    # Only the columns shown and one sort for all tables, not a sort of every column per table
    perf = runs.loc[runs["variant"] == "perf", columns]
    perf = perf.sort_values([*TABLE_KEYS, "gpus", "attempt"], kind="stable")
    perf = perf.drop_duplicates([*TABLE_KEYS, "gpus"], keep="last")
    tables = []
    for key, part in perf.groupby(list(TABLE_KEYS), sort=True):
        workload, size, dtype, gpu_type, scaling = (str(k) for k in key)
        unit = device(gpu_type).unit
        headers = [f"{int(g)}x {unit}" for g in part["gpus"]]
        tokens = part["train_tokens"].dropna()
        scale_runs = list(part.itertuples(index=False))
        rows = [
            (label, [_cell(r.status, r.reason, getattr(r, column), fmt) for r in scale_runs])
            for label, column, fmt in _metric_rows(float(tokens.iloc[0]) if len(tokens) else 1e12)
        ]
        title = f"{workload} {size} {dtype.upper()}" + (
            " (strong scaling)" if scaling == "strong" else ""
        )
        tables.append(ScalingTable((workload, size, dtype, gpu_type, scaling), title, headers,
                                   rows))  # fmt: skip
    return tables


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|")


def scaling_markdown(runs: pd.DataFrame) -> str:
    """All scaling tables as Markdown, one section per table."""
    tables = scaling_tables(runs)
    if not tables:
        return "# Scaling tables\n\nNo performance runs.\n"
    parts = ["# Scaling tables\n"]
    for t in tables:
        parts.append(f"## {_md_cell(t.title)} ({t.key[3]}, {t.key[4]} scaling)\n")
        parts.append("| " + " | ".join([_md_cell(t.title), *t.headers]) + " |")
        parts.append("|" + "---|" * (len(t.headers) + 1))
        for label, cells in t.rows:
            parts.append("| " + " | ".join([label, *map(_md_cell, cells)]) + " |")
        parts.append("")
    return "\n".join(parts)


_STYLE = """<style>
body{font-family:system-ui,sans-serif;margin:1em}
table{border-collapse:collapse;font-size:13px;margin-bottom:1.5em}
th,td{border:1px solid #ccc;padding:3px 8px;text-align:right}
th{background:#f0f0f0} td:first-child,th:first-child{text-align:left}
td.bad{background:#fde8e8;text-align:center}
</style>"""


def scaling_html(runs: pd.DataFrame, title: str = "llmbench scaling tables") -> str:
    """All scaling tables as one standalone HTML page."""
    esc = html.escape
    body = []
    for t in scaling_tables(runs):
        head = "".join(f"<th>{esc(h)}</th>" for h in [t.title, *t.headers])
        rows = []
        for label, cells in t.rows:
            tds = "".join(
                f'<td class="bad">{esc(c)}</td>' if not c[:1].isdigit() and c != "n/a"
                else f"<td>{esc(c)}</td>"
                for c in cells
            )  # fmt: skip
            rows.append(f"<tr><td>{esc(label)}</td>{tds}</tr>")
        body.append(
            f"<h2>{esc(t.title)} &mdash; {esc(t.key[3])}, {esc(t.key[4])} scaling</h2>"
            f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
        )
    if not body:
        body.append("<p>No performance runs.</p>")
    return html_page(
        title,
        "<p>Step time: mean over the averaging window; throughput = sequence length &times; "
        "GBS / step time; MFU = GBS &times; model FLOPs / step time / GPUs / peak; "
        "days = token budget / throughput / 86400.</p>" + "".join(body),
        _STYLE,
    )
