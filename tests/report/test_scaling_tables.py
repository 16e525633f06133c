"""Scaling tables in the spec's layout (rows: step time, tokens/s, MFU, days to train the
token budget; columns: scales), numbers read back from the cells and compared with the
runs table, failed scales shown as such, and the Markdown and HTML renderings agreeing."""

from __future__ import annotations

from html.parser import HTMLParser

import pandas as pd
import pytest

from llmbench.report.scaling_tables import scaling_html, scaling_markdown, scaling_tables
from tests.helpers import nemo_8b, sweep_tables, tiny_cpu

SCALES = (8, 16, 32)
STRONG_340B = [{"workload": "nemotron4-nemo", "sizes": ["340b"], "dtypes": ["bf16"],
                "gpu_type": "b200", "scaling": "strong", "scales": [128, 256]}]  # fmt: skip


def fp8_at_32_fails(spec) -> tuple[str, str]:
    return ("failed", "cuda_oom") if (spec["dtype"], spec["gpus"]) == ("fp8", 32) else (
        "success", "")  # fmt: skip


@pytest.fixture(scope="module")
def runs() -> pd.DataFrame:
    """BF16 and FP8 perf runs at 8-32 GPUs (FP8 out of memory at 32), profile runs beside."""
    runs, _ = sweep_tables(nemo_8b(scales=SCALES, variants=("perf", "profile")),
                           outcome=fp8_at_32_fails)  # fmt: skip
    return runs


def perf_run(runs: pd.DataFrame, dtype: str, gpus: int) -> pd.Series:
    (row,) = runs[(runs.dtype == dtype) & (runs.gpus == gpus) & (runs.variant == "perf")].index
    return runs.loc[row]


def test_one_table_per_curve_with_a_column_per_scale(runs) -> None:
    tables = scaling_tables(runs)
    assert [t.key[2] for t in tables] == ["bf16", "fp8"]
    for t in tables:
        assert t.key == ("llama3.1-nemo", "8b", t.key[2], "h100", "weak")
        assert "8b" in t.title and t.key[2].upper() in t.title
        assert len(t.headers) == len(SCALES)  # profile runs add no column
        for header, gpus in zip(t.headers, SCALES, strict=True):
            assert header.startswith(f"{gpus}x") and "H100" in header


def test_rows_are_the_spec_metrics_in_order(runs) -> None:
    labels = [label.lower() for label, _ in scaling_tables(runs)[0].rows]
    assert len(labels) == 4
    assert "step time" in labels[0] and "second" in labels[0]
    assert "tokens per second" in labels[1]
    assert "flops utilization" in labels[2]
    assert "1t tokens" in labels[3] and "days" in labels[3]


def test_the_token_budget_names_the_last_row() -> None:
    runs, _ = sweep_tables(nemo_8b(dtypes=("bf16",)), train_tokens=2.5e12)
    label, _ = scaling_tables(runs)[0].rows[3]
    assert "2.5T tokens" in label


def test_cells_hold_the_runs_table_numbers(runs) -> None:
    for table in scaling_tables(runs):
        dtype = table.key[2]
        (_, step), (_, tokens), (_, mfu), (_, days) = table.rows
        for i, gpus in enumerate(SCALES):
            run = perf_run(runs, dtype, gpus)
            if run.status != "success":
                continue
            assert float(step[i]) == pytest.approx(run.step_time_mean_s, abs=0.005)
            assert int(tokens[i]) == round(run.tokens_per_s)
            assert mfu[i].endswith("%")
            assert float(mfu[i][:-1]) == pytest.approx(100 * run.mfu, abs=0.005)
            assert float(days[i]) == pytest.approx(run.days_to_train, abs=0.005)


def test_a_failed_scale_shows_its_status_and_reason_in_every_row(runs) -> None:
    fp8 = next(t for t in scaling_tables(runs) if t.key[2] == "fp8")
    column = SCALES.index(32)
    for _, cells in fp8.rows:
        assert "failed" in cells[column] and "cuda_oom" in cells[column]
        assert all(c[0].isdigit() for i, c in enumerate(cells) if i != column)


def test_the_latest_attempt_at_a_scale_is_shown(runs) -> None:
    again = perf_run(runs, "bf16", 8).copy()
    again["attempt"] = 2
    again["step_time_mean_s"] = 99.0
    later = pd.concat([runs, again.to_frame().T.astype(runs.dtypes)], ignore_index=True)
    bf16 = scaling_tables(later)[0]
    assert len(bf16.headers) == len(SCALES)
    assert float(bf16.rows[0][1][0]) == 99.0


def test_strong_scaling_and_cpu_ranks_are_named() -> None:
    strong, _ = sweep_tables(STRONG_340B)
    (table,) = scaling_tables(strong)
    assert table.key[4] == "strong" and "strong" in table.title
    assert [h.split("x")[0] for h in table.headers] == ["128", "256"]
    cpu, _ = sweep_tables(tiny_cpu(scales=(1, 2)))
    (table,) = scaling_tables(cpu)
    assert all("CPU ranks" in h for h in table.headers)
    # no peak without calibration: MFU cells say so rather than print a number
    assert table.rows[2][1] == ["n/a", "n/a"]


class _Tables(HTMLParser):
    """Each <table>'s rows of cell texts, headers included."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[list[list[str]]] = []
        self.cell: list[str] | None = None

    def handle_starttag(self, tag, attrs) -> None:
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self.cell = []

    def handle_endtag(self, tag) -> None:
        if tag in ("td", "th") and self.cell is not None:
            self.tables[-1][-1].append("".join(self.cell))
            self.cell = None

    def handle_data(self, data) -> None:
        if self.cell is not None:
            self.cell.append(data)


def markdown_tables(text: str) -> list[list[list[str]]]:
    tables: list[list[list[str]]] = []
    previous = ""
    for line in text.splitlines():
        if line.startswith("|") and not line.startswith("|---"):
            if not previous.startswith("|"):
                tables.append([])
            cells = line.strip("|").replace("\\|", "\0").split("|")
            tables[-1].append([c.strip().replace("\0", "|") for c in cells])
        previous = line
    return tables


def test_markdown_and_html_show_the_same_tables(runs) -> None:
    mixed = pd.concat([runs, sweep_tables(STRONG_340B)[0]], ignore_index=True)
    parser = _Tables()
    parser.feed(scaling_html(mixed))
    md = markdown_tables(scaling_markdown(mixed))
    assert md == parser.tables
    tables = scaling_tables(mixed)
    assert len(md) == len(tables)
    for rows, table in zip(md, tables, strict=True):
        assert rows[0] == [table.title, *table.headers]
        assert rows[1:] == [[label, *cells] for label, cells in table.rows]


def test_no_perf_runs_no_tables(runs) -> None:
    profiles = runs[runs.variant != "perf"]
    assert scaling_tables(profiles) == []
    assert markdown_tables(scaling_markdown(profiles)) == []
    assert "<table" not in scaling_html(profiles)
