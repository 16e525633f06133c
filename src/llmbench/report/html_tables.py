"""HTML renderings of tables for people (the Snakemake report shows HTML inline)."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from llmbench.text import counted, effect_words

RUNS_HTML_COLUMNS = (
    "run_id",
    "status",
    "reason",
    "attempt",
    "dtype",
    "gpus",
    "global_batch_size",
    "step_time_mean_s",
    "step_time_std_s",
    "tokens_per_s",
    "tokens_per_s_per_gpu",
    "mfu",
    "days_to_train",
    "peak_tflops_per_gpu",
    "peak_source",
    "net_transport",
    "socket_fallback",
    "verdict",
)
REFERENCE_HTML_COLUMNS = (
    "run_id",
    "workload",
    "size",
    "release",
    "precision",
    "gpu_type",
    "gpus",
    "status",
    "step_time_mean_s",
    "reference_step_time_s",
    "deviation_pct",
    "verdict",
    "verdict_basis",
    "verdict_note",
    "reference_stack",
    "verdict_reason",
    "reference_source",
)
FAILURE_HTML_COLUMNS = (
    "run_id",
    "workload",
    "size",
    "dtype",
    "gpu_type",
    "gpus",
    "variant",
    "attempt",
    "status",
    "reason",
    "exit_code",
    "n_iterations",
    "max_iteration",
    "log_path",
)
PROFILE_HTML_COLUMNS = (
    "run_id",
    "workload",
    "size",
    "dtype",
    "gpu_type",
    "gpus",
    "variant",
    "status",
    "reason",
    "step_time_mean_s",
    "log_path",
)

_FORMATS = {
    "step_time_mean_s": "{:.4f}",
    "step_time_std_s": "{:.4f}",
    "tokens_per_s": "{:,.0f}",
    "tokens_per_s_per_gpu": "{:,.0f}",
    "mfu": "{:.2%}",
    "days_to_train": "{:,.2f}",
    "peak_tflops_per_gpu": "{:.3f}",
    "reference_step_time_s": "{:.4g}",
    "deviation_pct": "{:+.1f}%",
}

_STYLE = """<style>
body{font-family:system-ui,sans-serif;margin:1em}
table{border-collapse:collapse;font-size:13px}
th,td{border:1px solid #ccc;padding:3px 8px;text-align:right}
th{background:#f0f0f0} td:first-child,td:nth-child(2),td:nth-child(3){text-align:left}
tr.failed td,tr.invalid td,tr.incomplete td,tr.no_data td{background:#fde8e8}
tr.faster td{background:#e6f4ea} tr.slower td{background:#fff4e0}
p.none{font-style:italic}
</style>"""


def html_page(title: str, body: str, style: str = _STYLE) -> str:
    """A standalone HTML page: ``title`` as its title and heading, ``style`` (a ``<style>``
    element) and ``body`` (every page of the report: this module and scaling_tables)."""
    esc = html.escape(title)
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{esc}</title>"
        f"{style}</head><body><h1>{esc}</h1>{body}</body></html>\n"
    )


def _cell(column: str, value: object) -> str:
    if value is None or value is pd.NA or (isinstance(value, float) and value != value):
        return ""
    fmt = _FORMATS.get(column)
    return html.escape(fmt.format(value) if fmt else str(value))


def _cells(column: str, values: pd.Series) -> pa.Array:
    """``_cell`` of every value of one column (an Arrow string array), each distinct value
    formatted once; strings escaped by Arrow (as ``html.escape``: ``&`` first)."""
    if values.dtype == "float64":  # a number needs no escaping; -0.0 is not 0.0
        fmt = _FORMATS.get(column, "{}")
        codes, uniques = pd.factorize(values.to_numpy().view(np.int64))
        floats = uniques.view(np.float64).tolist()
        return pa.array(["" if v != v else fmt.format(v) for v in floats], pa.string()).take(
            pa.array(codes)
        )
    if isinstance(values.dtype, pd.StringDtype) and column not in _FORMATS:
        text = pc.fill_null(pa.array(values, pa.large_string()), "")
        for char, entity in _ENTITIES:
            text = pc.replace_substring(text, char, entity)
        return text.cast(pa.string())
    if values.dtype == object:  # mixed types: 1 and True would share a code
        return pa.array([_cell(column, v) for v in values.tolist()], pa.string())
    codes, uniques = pd.factorize(values)  # nulls get code -1: the "" appended last
    texts = pa.array([*(_cell(column, v) for v in uniques.tolist()), ""], pa.string())
    return texts.take(pa.array(np.where(codes < 0, len(uniques), codes)))


_ENTITIES = (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"), ('"', "&quot;"), ("'", "&#x27;"))
"""What ``html.escape`` replaces, in its order."""


def _rows(frame: pd.DataFrame, columns: list[str], classes: pa.Array) -> str:
    """``<tr class=...><td>...</td>...</tr>`` for every row, built column by column: the
    cells' texts per column, then every row's markup joined by Arrow."""
    if not len(frame):
        return ""
    parts: list[Any] = ['<tr class="', classes, '">']
    for column in columns:
        parts += ["<td>", _cells(column, frame[column]), "</td>"]
    rows = pc.binary_join_element_wise(*parts, "</tr>", "")
    return "".join(rows.to_pylist())


def runs_html(runs: pd.DataFrame, title: str = "llmbench runs") -> str:
    """A standalone HTML page with one row per run; failed rows are shaded."""
    cols = [c for c in RUNS_HTML_COLUMNS if c in runs.columns]
    head = "".join(f"<th>{html.escape(c)}</th>" for c in cols)
    codes, uniques = pd.factorize(runs["status"], use_na_sentinel=False)
    classes = pa.array([html.escape(str(v)) for v in uniques.tolist()], pa.string())
    classes = classes.take(pa.array(codes))
    return html_page(
        title,
        f"<p>{counted(len(runs), 'run')}; step time is the mean over the averaging window; "
        f"MFU = GBS &times; model FLOPs / step time / GPUs / peak.</p>"
        f"<table><thead><tr>{head}</tr></thead><tbody>{_rows(runs, cols, classes)}</tbody>"
        "</table>",
    )


def table_html(
    frame: pd.DataFrame,
    columns: tuple[str, ...],
    title: str,
    intro: str,
    row_class: str = "status",
    empty: str = "none",
) -> str:
    """A standalone HTML page with one table; an empty frame gives a page saying ``empty``."""
    cols = [c for c in columns if c in frame.columns]
    head = "".join(f"<th>{html.escape(c)}</th>" for c in cols)
    classes = (
        _cells(row_class, frame[row_class])
        if row_class in frame.columns
        else pa.array([""] * len(frame), pa.string())
    )
    table = (
        f"<table><thead><tr>{head}</tr></thead><tbody>{_rows(frame, cols, classes)}</tbody></table>"
        if len(frame)
        else f'<p class="none">{html.escape(empty)}</p>'
    )
    return html_page(title, f"<p>{intro}</p>{table}")


def references_html(runs: pd.DataFrame, tolerance: float) -> str:
    """Measured against reference step time, one row per run (``llmbench.aggregate.reference``)."""
    return table_html(
        runs,
        REFERENCE_HTML_COLUMNS,
        "llmbench: measured vs reference step time",
        "deviation = (measured &minus; reference) / reference &times; 100; verdict within "
        f"&plusmn;{100 * tolerance:g}%, faster / slower beyond it, no_reference where no "
        "published or user reference has the run's (workload, size, dtype, GPU type, GPUs, "
        "scaling), not_comparable where its inter-node traffic went over TCP sockets on a "
        "cluster with IB or EFA (verdict_reason; the Why slower page lists the evidence); "
        "empty where the run has no step time. reference_stack false: the run's image is "
        "not the one the reference ran, so the comparison includes the software stack.",
        row_class="verdict",
    )


def failures_html(runs: pd.DataFrame) -> str:
    """Runs that did not succeed, with the reason the parser or the exit code gave."""
    failed = runs[runs["status"] != "success"]
    return table_html(
        failed,
        FAILURE_HTML_COLUMNS,
        "llmbench: failed runs",
        f"{len(failed)} of {counted(len(runs), 'run')} did not succeed (status and reason from the "
        "training log and the exit code).",
        empty="none: every run succeeded",
    )


def profiles_html(runs: pd.DataFrame) -> str:
    """Runs of a profiling variant (anything but ``perf``), with where their logs are."""
    prof = runs[runs["variant"] != "perf"]
    return table_html(
        prof,
        PROFILE_HTML_COLUMNS,
        "llmbench: profiling runs",
        "Runs of a profiling variant (Nsight Systems, NCCL trace ...); their profiles lie in "
        "each run's attempt folder next to the log.",
        empty="none: this sweep has no profiling variant",
    )


def overview_html(runs: pd.DataFrame) -> str:
    """One row per scaling group: runs, successes, failures and reference verdicts."""
    keys = ["workload", "size", "gpu_type", "scaling"]
    rows = []
    for key, part in runs.groupby(keys, sort=True):
        verdicts = part["verdict"].value_counts() if "verdict" in part.columns else {}
        rows.append({
            **dict(zip(keys, key, strict=True)),
            "dtypes": ", ".join(sorted(part["dtype"].astype(str).unique())),
            "scales": ", ".join(str(g) for g in sorted(part["gpus"].unique())),
            "runs": len(part),
            "success": int((part["status"] == "success").sum()),
            "not_success": int((part["status"] != "success").sum()),
            **{v: int(verdicts.get(v, 0)) for v in ("within", "faster", "slower",
                                                     "no_reference", "not_comparable")},
        })  # fmt: skip
    frame = pd.DataFrame(rows)
    frame["status"] = ["failed" if r["not_success"] else "success" for r in rows]
    columns = (*keys, "dtypes", "scales", "runs", "success", "not_success", "within",
               "faster", "slower", "no_reference", "not_comparable")  # fmt: skip
    return table_html(
        frame,
        columns,
        "llmbench: sweep overview",
        f"{counted(len(runs), 'run')} in {counted(len(rows), 'scaling group')}; "
        f"{int((runs.status == 'success').sum())} succeeded. Step time is the mean over the "
        "averaging window.",
        empty="no runs",
    )


def _effect_text(effect: Mapping[str, float] | None) -> str:
    if not effect:
        return effect_words(None, None)
    return effect_words(effect["low"], effect["high"])


def why_slower_html(explanations: Sequence[Mapping[str, Any]]) -> str:
    """The report's "Why slower" page: for every run whose verdict is slower or missing,
    the evidence ranked by how much of its step time it could explain
    (``llmbench.aggregate.explain``), or "no known cause found" and what was checked."""
    parts = [
        "<p>Runs whose verdict is slower, not_comparable or missing, with the evidence "
        "llmbench holds about them, largest possible effect first (percent of the step "
        "time, with its source); <code>llmbench explain RUN</code> prints the same. "
        "Evidence paths are under <code>results/</code>.</p>"
    ]
    if not explanations:
        parts.append('<p class="none">none: every run is within or faster than its reference</p>')
    for e in explanations:
        deviation = e.get("deviation_pct")
        shown = f", {deviation:+.1f} %" if deviation is not None else ""
        parts.append(
            f"<h2>{html.escape(str(e['run_id']))}</h2><p>verdict "
            f"{html.escape(str(e.get('verdict') or 'none'))}{shown}"
            + (f": {html.escape(str(e['verdict_reason']))}" if e.get("verdict_reason") else "")
            + "</p>"
        )
        if not e["items"]:
            parts.append("<p><b>no known cause found</b></p>")
        else:
            rows = "".join(
                f"<li><b>{html.escape(i['kind'])}: {html.escape(i['title'])}</b> "
                f"({html.escape(_effect_text(i.get('effect_pct')))})<br>"
                f"{html.escape(i['detail'])}"
                + (
                    f"<br><small>source: {html.escape(i['effect_source'])}</small>"
                    if i.get("effect_source")
                    else ""
                )
                + (
                    f"<br><small>evidence: {html.escape(', '.join(i['evidence']))}</small>"
                    if i.get("evidence")
                    else ""
                )
                + "</li>"
                for i in e["items"]
            )
            parts.append(f"<ol>{rows}</ol>")
        checked = "".join(f"<li>{html.escape(c)}</li>" for c in e["checked"])
        parts.append(f"<details><summary>checked</summary><ul>{checked}</ul></details>")
    return html_page("llmbench: why slower", "".join(parts))
