"""plot_group with real matplotlib on real tables: which figures it writes, that a figure
without data is not drawn, and what the files hold (SVG that parses, with the group's
title, axis labels and scales; valid, non-blank PNGs; the same bytes for the same data)."""

from __future__ import annotations

import struct
import xml.etree.ElementTree as ET
import zlib
from pathlib import Path
from typing import NamedTuple

import matplotlib.image
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from llmbench.core.catalog import load_catalog
from llmbench.core.config import run_specs, validate_config
from llmbench.report.figures import END_LABEL, lay_out
from llmbench.report.group_tables import TRACE_COLUMNS, read_group
from llmbench.report.scaling_plots import group_figures, plot_files, plot_group
from tests.helpers import nemo_8b, sweep_tables, tiny_cpu, tiny_sweep

# The figures the module documents, each written as SVG and PNG when it has data.
ALL = {"step_time", "tokens_per_s", "mfu", "efficiency", "reference", "step_trace", "status"}
SCALES = (8, 16, 32)


def names(paths: list[Path]) -> set[str]:
    return {p.name for p in paths}


def files(*figures: str) -> set[str]:
    return {f"{f}.{ext}" for f in figures for ext in ("svg", "png")}


SVG = "{http://www.w3.org/2000/svg}"


def svg_texts(path: Path) -> list[str]:
    """Every text drawn in an SVG (each a ``<text>`` element); parsing it also proves the
    file is well-formed XML."""
    root = ET.parse(path).getroot()
    assert root.tag == f"{SVG}svg"
    return ["".join(el.itertext()).strip() for el in root.iter(f"{SVG}text")]


def png_size(path: Path) -> tuple[int, int]:
    """Width and height of a PNG after checking its signature and every chunk's CRC."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks = 8, []
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length : pos + 12 + length])
        assert zlib.crc32(kind + body) == crc, kind
        chunks.append(kind)
        pos += 12 + length
    assert chunks[0] == b"IHDR" and chunks[-1] == b"IEND" and b"IDAT" in chunks
    return struct.unpack(">II", data[16:24])


def fp8_at_32_fails(spec) -> tuple[str, str]:
    return ("failed", "cuda_oom") if (spec["dtype"], spec["gpus"]) == ("fp8", 32) else (
        "success", "")  # fmt: skip


class Plotted(NamedTuple):
    runs: pd.DataFrame
    steps: pd.DataFrame
    out: Path
    written: list[Path]


@pytest.fixture(scope="module")
def nemo(tmp_path_factory) -> Plotted:
    """Llama 3.1 8B, BF16 and FP8 at 8-32 GPUs, FP8 out of memory at 32, plotted once."""
    runs, steps = sweep_tables(nemo_8b(scales=SCALES), outcome=fp8_at_32_fails)
    out = tmp_path_factory.mktemp("plots") / "llama3.1-nemo_8b_h100_weak"
    return Plotted(runs, steps, out, plot_group(runs, steps, "Llama 3.1 8B on H100", out))


def test_a_group_with_data_gets_every_figure_in_both_formats(nemo) -> None:
    out, written = nemo.out, nemo.written
    assert names(written) == files(*ALL)
    assert {p.name for p in out.iterdir()} == names(written)
    assert set(written) <= set(plot_files(out))
    assert all(p.stat().st_size > 0 for p in written)


def test_svgs_parse_and_name_the_group_axes_and_scales(nemo) -> None:
    runs, out = nemo.runs, nemo.out
    for svg in out.glob("*.svg"):
        texts = svg_texts(svg)
        assert any(t.startswith("Llama 3.1 8B on H100") for t in texts), svg.name
    for name in ("step_time", "tokens_per_s", "mfu", "efficiency", "reference", "status"):
        texts = svg_texts(out / f"{name}.svg")
        assert "scale (GPUs)" in texts, name
        assert {str(g) for g in SCALES} <= set(texts), name
    step_time = svg_texts(out / "step_time.svg")
    assert any("step time" in t and "(s" in t for t in step_time)  # y label with its unit
    assert any("MFU" in t for t in svg_texts(out / "mfu.svg"))
    assert any("tokens/s" in t for t in svg_texts(out / "tokens_per_s.svg"))
    assert any("iteration" in t for t in svg_texts(out / "step_trace.svg"))
    # every dtype with a successful run labels its line
    for dtype in runs.dtype.unique():
        assert any(t.startswith(dtype) for t in step_time), dtype


def test_the_step_trace_labels_each_run_with_its_dtype_and_scale(nemo) -> None:
    runs, out = nemo.runs, nemo.out
    texts = svg_texts(out / "step_trace.svg")
    window = runs.window_first.iloc[0], runs.window_last.iloc[0]
    assert any(all(str(w) in t for w in window) for t in texts)  # the shaded window's note
    for dtype, gpus in runs[["dtype", "gpus"]].itertuples(index=False):
        assert any(t.startswith(dtype) and t.endswith(str(gpus)) for t in texts), (dtype, gpus)


def test_a_group_of_many_runs_gets_a_band_per_configuration(tmp_path, monkeypatch) -> None:
    runs, steps = sweep_tables(nemo_8b(scales=SCALES), outcome=fp8_at_32_fails)
    monkeypatch.setattr("llmbench.report.step_trace.TRACE_MAX_RUNS", len(runs) - 1)
    plot_group(runs, steps, "g", tmp_path)
    texts = svg_texts(tmp_path / "step_trace.svg")
    root = ET.parse(tmp_path / "step_trace.svg").getroot()
    bands = [
        el
        for el in root.iter()
        if el.get("id", "").startswith(("PolyCollection", "FillBetweenPolyCollection"))
    ]
    assert len(bands) == len(runs)  # one per (dtype, scale): each has a single run here
    for dtype, gpus in runs[["dtype", "gpus"]].itertuples(index=False):
        assert any(t.startswith(f"{dtype} x{gpus}") and "(1 run)" in t for t in texts)


def test_the_status_matrix_shows_each_outcome(nemo) -> None:
    runs, out = nemo.runs, nemo.out
    texts = svg_texts(out / "status.svg")
    failed = runs[runs.status != "success"]
    assert len(failed) == 1
    assert {"failed", "cuda_oom", "success"} <= set(texts)
    assert texts.count("success") == int((runs.status == "success").sum())
    for dtype, variant in runs[["dtype", "variant"]].drop_duplicates().itertuples(index=False):
        assert any(dtype in t and variant in t for t in texts), (dtype, variant)


def test_svg_text_is_text_in_a_sans_serif_font_not_glyph_outlines(nemo) -> None:
    for svg in nemo.out.glob("*.svg"):
        root = ET.parse(svg).getroot()
        titles = [t for t in root.iter(f"{SVG}text") if "Llama 3.1 8B on H100" in (t.text or "")]
        assert len(titles) == 1, svg.name
        assert "sans-serif" in titles[0].get("style", ""), svg.name
        # no glyph outlines: matplotlib defines those as paths with ids after the font
        glyphs = [el for el in root.iter(f"{SVG}path") if "DejaVu" in el.get("id", "")]
        assert glyphs == [], svg.name


def test_pngs_are_valid_images_with_content(nemo) -> None:
    for png in nemo.out.glob("*.png"):
        width, height = png_size(png)
        assert width > 100 and height > 100, png.name
        pixels = matplotlib.image.imread(png)
        assert pixels.shape[:2] == (height, width)
        assert len(np.unique(pixels.reshape(-1, pixels.shape[-1]), axis=0)) > 2, png.name


def test_the_same_tables_give_the_same_bytes(nemo, tmp_path) -> None:
    again = plot_group(nemo.runs, nemo.steps, "Llama 3.1 8B on H100", tmp_path)
    assert names(again) == names(nemo.written)
    for path in nemo.written:
        assert (tmp_path / path.name).read_bytes() == path.read_bytes(), path.name


def test_cpu_group_without_peak_or_reference_has_no_mfu_or_reference_figure(tmp_path) -> None:
    runs, steps = sweep_tables(tiny_cpu(scales=(1, 2, 4)))
    assert runs.mfu.isna().all() and runs.reference_step_time_s.isna().all()
    written = plot_group(runs, steps, "tiny", tmp_path)
    assert names(written) == files(*(ALL - {"mfu", "reference"}))
    assert "scale (CPU ranks)" in svg_texts(tmp_path / "step_time.svg")


def test_one_scale_has_no_efficiency_and_no_steps_no_trace(tmp_path) -> None:
    runs, _ = sweep_tables(nemo_8b(dtypes=("bf16",), scales=(8,)))
    written = plot_group(runs, None, "one scale", tmp_path)
    assert names(written) == files(*(ALL - {"efficiency", "step_trace"}))


def test_steps_of_other_runs_draw_no_trace(tmp_path) -> None:
    runs, _ = sweep_tables(nemo_8b(dtypes=("bf16",)))
    _, other_steps = sweep_tables(tiny_cpu())
    written = plot_group(runs, other_steps, "g", tmp_path)
    assert "step_trace.svg" not in names(written) and "step_time.svg" in names(written)


def test_only_successful_perf_runs_are_drawn_as_metrics(tmp_path) -> None:
    sweeps = nemo_8b(dtypes=("bf16",)) + nemo_8b(dtypes=("fp8",), variants=("profile",))
    runs, steps = sweep_tables(sweeps)
    plot_group(runs, steps, "g", tmp_path)
    for name in ("step_time", "tokens_per_s", "mfu", "efficiency", "reference"):
        texts = svg_texts(tmp_path / f"{name}.svg")
        assert any(t.startswith("bf16") for t in texts), name
        assert not any("fp8" in t for t in texts), name
    assert any("fp8" in t for t in svg_texts(tmp_path / "status.svg"))


def test_a_group_that_only_failed_gets_only_the_status_figure(tmp_path) -> None:
    runs, steps = sweep_tables(nemo_8b(), outcome=lambda spec: ("no_data", "no_step_lines"))
    steps = steps.iloc[0:0]
    written = plot_group(runs, steps, "g", tmp_path)
    assert names(written) == files("status")
    assert "no_step_lines" in svg_texts(tmp_path / "status.svg")


def test_no_runs_write_nothing(tmp_path) -> None:
    runs, steps = sweep_tables(tiny_cpu())
    assert plot_group(runs.iloc[0:0], steps, "g", tmp_path / "empty") == []
    assert list((tmp_path / "empty").iterdir()) == []


def test_many_points_make_the_svg_trace_an_image(tmp_path, monkeypatch) -> None:
    runs, steps = sweep_tables(nemo_8b(dtypes=("bf16",)))
    plot_group(runs, steps, "g", tmp_path / "vector")
    monkeypatch.setattr("llmbench.report.step_trace.TRACE_VECTOR_POINTS", len(steps) - 1)
    plot_group(runs, steps, "g", tmp_path / "raster")
    image = f"{SVG}image"
    for kind, images in (("vector", 0), ("raster", 1)):
        root = ET.parse(tmp_path / kind / "step_trace.svg").getroot()
        assert len(list(root.iter(image))) == images, kind
    # the labels stay text either way
    assert svg_texts(tmp_path / "vector" / "step_trace.svg") == svg_texts(
        tmp_path / "raster" / "step_trace.svg"
    )


def test_read_group_reads_only_the_groups_rows(tmp_path) -> None:
    runs, steps = sweep_tables(nemo_8b() + tiny_cpu())
    runs.to_parquet(tmp_path / "runs.parquet")
    steps.to_parquet(tmp_path / "steps.parquet")
    members = runs.run_id[runs.workload == "tiny-llama"].tolist()
    got_runs, got_steps = read_group(tmp_path / "runs.parquet", tmp_path / "steps.parquet",
                                     members)  # fmt: skip
    assert sorted(got_runs.run_id) == sorted(members)
    assert list(got_steps.columns) == list(TRACE_COLUMNS)
    expected = steps.loc[steps.run_id.isin(members), list(TRACE_COLUMNS)]
    pd.testing.assert_frame_equal(got_steps.reset_index(drop=True),
                                  expected.reset_index(drop=True))  # fmt: skip
    none_runs, none_steps = read_group(tmp_path / "runs.parquet", tmp_path / "steps.parquet", [])
    assert none_runs.empty and none_steps.empty


def test_no_figure_runs_off_its_edges_even_with_the_catalogs_longest_group_name() -> None:
    """Titles (the group name) wider than the axes, or than the figure, are the risk: what
    leaves the figure is cut off in both files. Every figure, laid out as it is saved,
    keeps all it draws inside its edges."""
    catalog = load_catalog()
    sweeps = [row.sweep_entry(variants=["perf"]) for w in catalog.workloads()
              for row in catalog.rows(w)]  # fmt: skip
    longest = max((spec.group_id for spec in run_specs(validate_config({"sweeps": sweeps}))),
                  key=len)  # fmt: skip
    assert len(longest) >= 30, longest
    runs, steps = sweep_tables(nemo_8b(scales=SCALES), outcome=fp8_at_32_fails)
    drawn = set()
    for name, fig in group_figures(runs, steps, longest):
        lay_out(fig)
        box = fig.get_tightbbox()  # inches, everything drawn (the title too)
        width, height = fig.get_size_inches()
        assert box.x0 >= 0 and box.y0 >= 0 and box.x1 <= width and box.y1 <= height, name
        drawn.add(name)
        plt.close(fig)
    assert drawn == ALL


def test_lines_that_end_close_together_get_labels_that_do_not_overlap() -> None:
    """bf16 and its ideal line end at nearly the same throughput, and the step trace's
    runs of one dtype at nearly the same step time: their labels are moved apart."""
    runs, steps = sweep_tables(nemo_8b(scales=SCALES), outcome=fp8_at_32_fails)
    labelled = 0
    for name, fig in group_figures(runs, steps, "g"):
        lay_out(fig)
        renderer = fig.canvas.get_renderer()
        labels = [t for t in fig.axes[0].texts if t.get_gid() == END_LABEL]
        boxes = [t.get_window_extent(renderer) for t in labels]
        for i, box in enumerate(boxes):
            for j in range(i):
                assert not box.overlaps(boxes[j]), (
                    name,
                    labels[i].get_text(),
                    labels[j].get_text(),
                )
        labelled += len(labels)
        plt.close(fig)
    assert labelled >= 2 * len(runs)  # every run of the trace, each line of the others


def fp32_bf16_trace(scales, bands: bool, monkeypatch) -> tuple[pd.DataFrame, plt.Figure]:
    """The runs of fp32 and bf16 at ``scales`` and their step trace, laid out: a line per
    run, or (``bands``) a band per configuration."""
    runs, steps = sweep_tables([tiny_sweep(tuple(scales), dtypes=("fp32", "bf16"))])
    if bands:
        monkeypatch.setattr("llmbench.report.step_trace.TRACE_MAX_RUNS", len(runs) - 1)
    trace = dict(group_figures(runs, steps, "tiny-llama_tiny_cpu_weak"))["step_trace"]
    lay_out(trace)
    return runs, trace


@pytest.mark.parametrize("bands", [False, True], ids=["a line per run", "a band per config"])
def test_fourteen_configurations_each_get_a_label_and_a_colour_of_their_own(
    bands, monkeypatch
) -> None:
    """The catalog's largest group (Nemotron4 15B on H100) has 14 configurations: more
    than 10 colours, and each needs its own label."""
    try:
        runs, trace = fp32_bf16_trace(range(1, 8), bands, monkeypatch)
        assert len(runs) == 14
        labels = [t for t in trace.axes[0].texts if t.get_gid() == END_LABEL]
        assert len(labels) == 14
        assert trace.axes[0].margins()[0] > 0.1  # room for them on the right
        assert len({t.get_color() for t in labels}) == 14
        assert all(t.get_text().endswith("(1 run)") == bands for t in labels)
    finally:
        plt.close("all")


def test_a_line_that_ends_without_a_value_leaves_the_other_labels_apart() -> None:
    runs, steps = sweep_tables(nemo_8b(scales=SCALES), outcome=fp8_at_32_fails)
    last_bf16 = (runs["dtype"] == "bf16") & (runs["gpus"] == max(SCALES))
    runs.loc[last_bf16, "tokens_per_s"] = np.nan
    try:
        figure = dict(group_figures(runs, steps, "g"))["tokens_per_s"]
        lay_out(figure)
        renderer = figure.canvas.get_renderer()
        labels = [t for t in figure.axes[0].texts if t.get_gid() == END_LABEL]
        drawn = [t for t in labels if np.isfinite(t.xy[1])]  # matplotlib skips a NaN end
        assert len(labels) == 4
        assert sorted(t.get_text() for t in drawn) == ["bf16 ideal", "fp8", "fp8 ideal"]
        boxes = [t.get_window_extent(renderer) for t in drawn]
        assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[:i])
    finally:
        plt.close("all")


@pytest.mark.parametrize("bands", [False, True], ids=["a line per run", "a band per config"])
def test_more_configurations_than_labels_get_a_colour_per_scale_and_a_style_per_dtype(
    bands, monkeypatch
) -> None:
    """2 dtypes at 11 scales (1 to 1024) are 22 lines, more than can be labelled or told
    apart by 20 colours: the colour is the scale, named by a colour bar, and the line style
    the dtype, named by a legend; all of it inside the figure."""
    scales = [2**k for k in range(11)]
    try:
        runs, trace = fp32_bf16_trace(scales, bands, monkeypatch)
        assert len(runs) == 22
        ax, bar = trace.axes
        assert not [t for t in ax.texts if t.get_gid() == END_LABEL]
        assert ax.margins()[0] < 0.05  # no room kept for labels that are not there
        assert [t.get_text() for t in bar.get_yticklabels()] == [str(s) for s in scales]
        assert bar.get_ylabel() == "scale (CPU ranks)"
        assert sorted(t.get_text() for t in ax.get_legend().get_texts()) == ["bf16", "fp32"]
        order = runs.sort_values(["dtype", "gpus"], kind="stable")
        if bands:  # one median line per configuration, in that order
            colours = [tuple(line.get_color()) for line in ax.get_lines()]
            styles = [line.get_linestyle() for line in ax.get_lines()]
        else:  # one segment per run, in that order
            lines = ax.collections[0]
            colours = [tuple(c) for c in lines.get_colors()]
            styles = [str(s) for s in lines.get_linestyles()]
        assert len(colours) == len(styles) == 22
        colour_of = dict(zip(order["gpus"], colours, strict=False))
        assert len(set(colour_of.values())) == 11
        assert colours == [colour_of[g] for g in order["gpus"]]
        style_of = dict(zip(order["dtype"], styles, strict=False))
        assert len(set(style_of.values())) == 2
        assert styles == [style_of[d] for d in order["dtype"]]
        box, (width, height) = trace.get_tightbbox(), trace.get_size_inches()
        assert box.x0 >= 0 and box.y0 >= 0 and box.x1 <= width and box.y1 <= height
    finally:
        plt.close("all")
