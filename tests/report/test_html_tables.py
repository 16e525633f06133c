"""HTML pages of the runs table: a row per run in table order, cells formatted from the
values (nulls empty, text escaped), rows classed by status, empty tables said so."""

from __future__ import annotations

import html
import re

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from llmbench.report.html_tables import (
    RUNS_HTML_COLUMNS,
    failures_html,
    profiles_html,
    references_html,
    runs_html,
    table_html,
)
from tests.helpers import nemo_8b, sweep_tables


def rows_of(page: str) -> list[tuple[str, list[str]]]:
    """(class, cell texts) of each body row."""
    body = page.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    return [
        (cls, [html.unescape(c) for c in re.findall(r"<td>(.*?)</td>", cells)])
        for cls, cells in re.findall(r'<tr class="([^"]*)">(.*?)</tr>', body)
    ]


def runs_with_odd_values() -> pd.DataFrame:
    runs, _ = sweep_tables(nemo_8b(variants=("perf", "profile")),
                           outcome=lambda s: ("failed", "oom <&>") if s["gpus"] == 16 else (
                               "success", ""))  # fmt: skip
    return runs


def test_runs_page_has_a_row_per_run_with_formatted_cells() -> None:
    runs = runs_with_odd_values()
    rows = rows_of(runs_html(runs))
    assert [cls for cls, _ in rows] == runs.status.tolist()
    columns = [c for c in RUNS_HTML_COLUMNS if c in runs.columns]
    for (_, cells), run in zip(rows, runs.itertuples(index=False), strict=True):
        value = dict(zip(columns, cells, strict=True))
        assert value["run_id"] == run.run_id and value["gpus"] == str(run.gpus)
        assert value["reason"] == run.reason  # escaped in the page, the same text read back
        if np.isnan(run.mfu):
            assert value["mfu"] == "" and value["tokens_per_s"] == ""
        else:
            assert float(value["mfu"].rstrip("%")) == round(100 * run.mfu, 2)
            assert int(value["tokens_per_s"].replace(",", "")) == round(run.tokens_per_s)
    assert "oom <&>" not in runs_html(runs)


def test_reference_failure_and_profile_pages_select_their_rows() -> None:
    runs = runs_with_odd_values()
    refs = rows_of(references_html(runs, 0.05))
    assert [cls for cls, _ in refs] == [("" if pd.isna(v) else v) for v in runs.verdict]
    failed = rows_of(failures_html(runs))
    assert len(failed) == int((runs.status != "success").sum())
    assert len(rows_of(profiles_html(runs))) == int((runs.variant != "perf").sum())
    none_failed = runs[runs.status == "success"]
    assert "<table" not in failures_html(none_failed) and "every run succeeded" in failures_html(
        none_failed
    )


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.one_of(st.none(), st.text(alphabet=st.sampled_from("a&<>\"' ;#x\u00e9"))),
             min_size=1, max_size=8),
    st.lists(st.one_of(st.none(), st.floats(), st.sampled_from([0.0, -0.0, 1e6])), min_size=1,
             max_size=8),
)  # fmt: skip
def test_cells_are_the_escaped_text_and_the_formatted_number(texts, numbers) -> None:
    n = min(len(texts), len(numbers))
    frame = pd.DataFrame({
        "status": pd.Series(texts[:n], dtype="string"),
        "reason": pd.Series(texts[:n], dtype="string"),
        "mfu": pd.Series(numbers[:n], dtype="float64"),
        "gpus": pd.Series(numbers[:n], dtype="float64"),
    })  # fmt: skip
    page = table_html(frame, ("reason", "mfu", "gpus"), "t", "i")
    body = page.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    expected = "".join(
        f'<tr class="{esc(t)}"><td>{esc(t)}</td><td>{"" if x is None or x != x else f"{x:.2%}"}'
        f"</td><td>{'' if x is None or x != x else str(x)}</td></tr>"
        for t, x in zip(texts[:n], numbers[:n], strict=True)
    )
    assert body == expected


def esc(text: str | None) -> str:
    return "" if text is None else html.escape(text)
