"""HTML renderings of tables for people (the Snakemake report shows HTML inline)."""

from __future__ import annotations

import html

import pandas as pd

RUNS_HTML_COLUMNS = (
    "run_id", "status", "reason", "attempt", "dtype", "gpus", "global_batch_size",
    "step_time_mean_s", "step_time_std_s", "tokens_per_s", "tokens_per_s_per_gpu", "mfu",
    "days_to_train", "peak_tflops_per_gpu", "peak_source",
)

_FORMATS = {
    "step_time_mean_s": "{:.4f}", "step_time_std_s": "{:.4f}", "tokens_per_s": "{:,.0f}",
    "tokens_per_s_per_gpu": "{:,.0f}", "mfu": "{:.2%}", "days_to_train": "{:,.2f}",
    "peak_tflops_per_gpu": "{:.3f}",
}

_STYLE = """<style>
body{font-family:system-ui,sans-serif;margin:1em}
table{border-collapse:collapse;font-size:13px}
th,td{border:1px solid #ccc;padding:3px 8px;text-align:right}
th{background:#f0f0f0} td:first-child,td:nth-child(2),td:nth-child(3){text-align:left}
tr.failed td,tr.invalid td,tr.incomplete td,tr.no_data td{background:#fde8e8}
</style>"""


def _cell(column: str, value: object) -> str:
    if value is None or value is pd.NA or (isinstance(value, float) and value != value):
        return ""
    fmt = _FORMATS.get(column)
    return html.escape(fmt.format(value) if fmt else str(value))


def runs_html(runs: pd.DataFrame, title: str = "llmbench runs") -> str:
    """A standalone HTML page with one row per run; failed rows are shaded."""
    cols = [c for c in RUNS_HTML_COLUMNS if c in runs.columns]
    head = "".join(f"<th>{html.escape(c)}</th>" for c in cols)
    body = []
    for row in runs.itertuples(index=False):
        cells = "".join(f"<td>{_cell(c, getattr(row, c))}</td>" for c in cols)
        body.append(f'<tr class="{html.escape(str(row.status))}">{cells}</tr>')
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"{_STYLE}</head><body><h1>{html.escape(title)}</h1>"
        f"<p>{len(runs)} runs; step time is the mean over the averaging window; "
        f"MFU = GBS &times; model FLOPs / step time / GPUs / peak.</p>"
        f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
        "</body></html>\n"
    )
