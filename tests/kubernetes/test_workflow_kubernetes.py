"""The real workflow with ``--profile profiles/kubernetes`` against the API stand-in: the
same experiment config as the default profile, the real kubernetes client, real logs of
the embedded trainer (the stand-in runs the manifest's own command as node 0)."""

from __future__ import annotations

import json
import shutil

import pandas as pd
import pytest
import yaml

from llmbench.parsers import parse_log
from tests.conftest import REPO, TWO_RUN_CONFIG, Sweep, snakemake, write_config

pytestmark = pytest.mark.workflow

TWO = "tiny-llama_tiny_fp32_cpux2_perf"


def test_sweep_on_kubernetes_matches_its_logs_and_the_default_columns(
    standin, tmp_path, monkeypatch, finished_sweep: Sweep
) -> None:
    profile = tmp_path / "profile"
    shutil.copytree(REPO / "profiles/kubernetes", profile)
    platform = yaml.safe_load((profile / "platform.yaml").read_text())
    platform["kubernetes"].update(image="example/llmbench:test", poll_s=0.5)
    (profile / "platform.yaml").write_text(yaml.safe_dump(platform))
    standin.scenarios = {TWO: ["evicted", "succeed"]}  # the first attempt is evicted
    monkeypatch.setenv("KUBECONFIG", str(standin.kubeconfig(tmp_path / "kubeconfig")))
    workdir = tmp_path / "work"
    workdir.mkdir()
    write_config(workdir, TWO_RUN_CONFIG)  # the default sweep's config, unchanged

    proc = snakemake(workdir, "--profile", str(profile), "--cores", "2")
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]

    runs = pd.read_parquet(workdir / "results/tables/runs.parquet").set_index("run_id")
    default = pd.read_parquet(finished_sweep.results / "tables/runs.parquet")
    assert list(runs.reset_index().columns) == list(default.columns)
    assert (runs.status == "success").all(), runs[["status", "reason"]]
    assert (runs.cluster_type == "kubernetes").all()
    assert runs.loc[TWO, "attempts"] == 2 and runs.loc[TWO, "attempt"] == 2
    assert "preempted" in runs.loc[TWO, "earlier_attempts"], runs.loc[TWO, "earlier_attempts"]
    created = [w.name for w in standin.workloads.values()]
    assert sorted(created) == [
        "tiny-llama-tiny-fp32-cpux1-perf-a1",
        "tiny-llama-tiny-fp32-cpux2-perf-a1",
        "tiny-llama-tiny-fp32-cpux2-perf-a2",
    ]
    assert runs.loc[TWO, "workload_id"] == "default/tiny-llama-tiny-fp32-cpux2-perf-a2"
    assert all(w.deleted for w in standin.workloads.values())  # keep: false

    for run_id, row in runs.iterrows():
        run_dir = workdir / "results/runs" / run_id
        record = json.loads((run_dir / "run.json").read_text())
        attempt = run_dir / record["attempt_dir"]
        manifest = yaml.safe_load((attempt / "manifest.yaml").read_text())
        assert manifest["kind"] == "TrainJob"
        assert "llmbench.launch.kubernetes" in (attempt / "launch.sh").read_text()
        summary = parse_log(attempt / "train.log").summary
        assert row.n_iterations == summary.n_iterations == 45
        assert row.step_time_mean_s == pytest.approx(summary.step_time_mean_s)
        served = next(
            w for w in standin.workloads.values() if w.name == manifest["metadata"]["name"]
        )
        assert (attempt / "train.log").read_text() == served.log_path.read_text()
