"""The real workflow on a 2-run embedded sweep: real torch training, real snakemake."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from llmbench.aggregate.result_file import validate
from tests.helpers import REPO, TINY_STEPS, Sweep, snakemake, write_config

pytestmark = pytest.mark.workflow

RUN_IDS = {"tiny-llama_tiny_fp32_cpux1_perf", "tiny-llama_tiny_fp32_cpux2_perf"}


def test_runs_table_is_typed_with_one_row_per_run(finished_sweep: Sweep) -> None:
    schema = pq.read_schema(finished_sweep.results / "tables/runs.parquet")
    assert schema.field("gpus").type == "int64"
    assert schema.field("step_time_mean_s").type == "double"
    assert schema.field("tokens_per_s").type == "double"
    assert str(schema.field("started_at").type).startswith("timestamp[ms")
    runs = pd.read_parquet(finished_sweep.results / "tables/runs.parquet")
    assert set(runs.run_id) == RUN_IDS
    assert len(runs) == 2
    assert (runs.status == "success").all(), runs[["run_id", "status", "reason"]]
    assert (runs.step_time_mean_s > 0).all()
    assert (runs.step_time_std_s >= 0).all()
    expected = runs.seq_len * runs.global_batch_size / runs.step_time_mean_s
    pd.testing.assert_series_equal(runs.tokens_per_s, expected, check_names=False)
    assert ((runs.mfu > 0) & (runs.mfu < 1)).all(), runs.mfu
    assert runs.peak_source.str.startswith("measured").all()
    assert (runs.global_batch_size == runs.micro_batch_size * runs.dp * runs.ga).all()


def test_result_file_and_records_fit_their_schemas(finished_sweep: Sweep) -> None:
    """results/result.json and every run.json of the sweep validate (docs/results.md); a
    CPU sweep has no NCCL output, so no socket fallback and no transport."""
    result = json.loads((finished_sweep.results / "result.json").read_text())
    validate(result, "result")
    assert result["status"] == "success" and result["counts"]["runs"] == 2
    assert {r["run_id"] for r in result["runs"]} == RUN_IDS
    for run in result["runs"]:
        assert run["transport"] == {"net_transport": "", "gdr": "", "nvls": "", "collnet": "",
                                    "nccl_plugin": "", "nccl_version": "",
                                    "socket_fallback": False}  # fmt: skip
        assert run["reference"]["verdict"] == "no_reference" and run["explanation"] is not None
        assert (finished_sweep.results / run["files"]["log"]).is_file()
    records = sorted(finished_sweep.results.glob("runs/*/run.json"))
    records += sorted(finished_sweep.results.glob("runs/*/attempt-*/run.json"))
    assert len(records) == 4
    for path in records:
        validate(json.loads(path.read_text()), "run", str(path))


def test_tables_read_with_duckdb(finished_sweep: Sweep) -> None:
    import duckdb

    tables = finished_sweep.results / "tables"
    runs = duckdb.sql(
        f"select run_id, gpus, tokens_per_s, status from '{tables / 'runs.parquet'}' order by gpus"
    ).fetchall()
    assert [r[1] for r in runs] == [1, 2] and all(r[3] == "success" for r in runs)
    ((count,),) = duckdb.sql(
        f"select count(*) from '{tables / 'steps.parquet'}' where in_window"
    ).fetchall()
    assert count == 2 * 10


def test_steps_table_has_every_iteration_and_loss_falls(finished_sweep: Sweep) -> None:
    steps = pd.read_parquet(finished_sweep.results / "tables/steps.parquet")
    for run_id, part in steps.groupby("run_id"):
        assert list(part.iteration) == list(range(TINY_STEPS)), run_id
        assert part.in_window.sum() == 10
        assert (part.step_time_s > 0).all()
        first, last = part.loss.iloc[:5].mean(), part.loss.iloc[-5:].mean()
        assert last < first - 0.3, (run_id, first, last)


def test_window_mean_in_table_matches_steps(finished_sweep: Sweep) -> None:
    runs = pd.read_parquet(finished_sweep.results / "tables/runs.parquet").set_index("run_id")
    steps = pd.read_parquet(finished_sweep.results / "tables/steps.parquet")
    window = steps[steps.in_window].groupby("run_id").step_time_s
    pd.testing.assert_series_equal(
        runs.step_time_mean_s.sort_index(), window.mean().sort_index(), check_names=False
    )
    pd.testing.assert_series_equal(
        runs.step_time_std_s.sort_index(), window.std(ddof=0).sort_index(), check_names=False
    )


def test_run_folder_holds_launch_log_and_provenance(finished_sweep: Sweep) -> None:
    for run_id in RUN_IDS:
        run_dir = finished_sweep.results / "runs" / run_id
        record = json.loads((run_dir / "run.json").read_text())
        attempt = run_dir / record["attempt_dir"]
        assert (attempt / "launch.sh").read_text().startswith("#!/usr/bin/env bash")
        assert "llmbench.ranks.embedded.train" in (attempt / "launch.sh").read_text()
        log = (attempt / "train.log").read_text()
        assert log.count("train_step_timing in s:") == TINY_STEPS
        assert record["exit_code"] == 0
        assert record["spec"]["run_id"] == run_id
        prov = record["provenance"]
        for key in (
            "llmbench_version",
            "python_version",
            "torch_version",
            "transformers_version",
            "host",
        ):
            assert prov[key], key
        assert record["started_at"] < record["finished_at"]


def test_plots_and_csv_twin_exist(finished_sweep: Sweep) -> None:
    plots = finished_sweep.results / "plots" / "tiny-llama_tiny_cpu_weak"
    for name in ("step_time", "tokens_per_s", "mfu"):
        assert (plots / f"{name}.svg").read_text().lstrip().startswith("<?xml")
        assert (plots / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    csv = pd.read_csv(finished_sweep.results / "tables/runs.csv")
    assert set(csv.run_id) == RUN_IDS


def test_second_invocation_has_nothing_to_do(finished_sweep: Sweep) -> None:
    proc = snakemake(finished_sweep.workdir, "--cores", "2")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Nothing to be done" in proc.stdout + proc.stderr


def test_report_renders_plots_and_runs_table(finished_sweep: Sweep) -> None:
    report = finished_sweep.results / "report.html"
    proc = snakemake(finished_sweep.workdir, "--report", str(report))
    assert proc.returncode == 0, proc.stderr[-3000:]
    html = report.read_text()
    assert len(html) > 10_000
    for needle in ("step_time.svg", "tokens_per_s.svg", "mfu.svg", "runs.html", "Scaling"):
        assert needle in html, needle


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ({"dtypes": ["fp16"]}, "sweeps[0].dtypes[0]: 'fp16' is not allowed; allowed: fp32"),
        ({"workload": "gpt-9"}, "sweeps[0].workload: 'gpt-9' is not allowed"),
        ({"scales": [0]}, "sweeps[0].scales[0]: 0 is less than the minimum of 1"),
        ({"extra_key": 1}, "'extra_key' was unexpected"),
    ],
)
def test_bad_config_stops_with_one_line(tmp_path, change, needle) -> None:
    config = {**REPO_CONFIG, "sweeps": [{**REPO_CONFIG["sweeps"][0], **change}]}
    write_config(tmp_path, config)
    proc = snakemake(tmp_path, "--cores", "1", "-n")
    assert proc.returncode != 0
    error_lines = [line for line in proc.stderr.splitlines() if "llmbench: error" in line]
    assert len(error_lines) == 1 and needle in error_lines[0], proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "results").exists()


def test_too_few_steps_is_refused(tmp_path) -> None:
    write_config(tmp_path, {**REPO_CONFIG, "steps": 44})
    proc = snakemake(tmp_path, "--cores", "1", "-n")
    assert proc.returncode != 0
    assert "steps: 44 must be at least 45" in proc.stderr
    assert "Traceback" not in proc.stderr


import yaml  # noqa: E402

REPO_CONFIG = yaml.safe_load((REPO / "config.yaml").read_text())


def test_the_file_tree_is_the_layouts(finished_sweep: Sweep) -> None:
    """The paths the workflow leaves, as they were before the layout modules named them
    (tests/fixtures/embedded_sweep_tree.txt, a listing of such a sweep); a samples file is
    named after its node. Reports other tests write into the shared sweep are left out."""
    expected = set((REPO / "tests/fixtures/embedded_sweep_tree.txt").read_text().splitlines())
    found = {
        re.sub(r"/telemetry-[^/]+\.(csv|json)$", r"/telemetry-<node>.\1", str(path))
        for path in finished_sweep.results.rglob("*")
        if not path.name.startswith("report")
    }
    found = {str(Path(p).relative_to(finished_sweep.workdir)) for p in found}
    assert found | {"results"} == expected
