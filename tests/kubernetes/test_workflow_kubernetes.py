"""The real workflow with ``--profile profiles/kubernetes`` and ``--profile profiles/runai``
against the API stand-in: the same experiment config as the default profile, the real
clients, real logs of the embedded trainer (the stand-in runs the workload's own command
as node 0). The first attempt of the 2-rank run is evicted and retried."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest
import yaml

from llmbench.parsers import parse_log
from tests.helpers import (
    REPO,
    TINY_STEPS,
    TINY_WINDOW,
    TWO_RUN_CONFIG,
    Sweep,
    snakemake,
    write_config,
)
from tests.kubernetes.standin_apiserver import StandInApiServer
from tests.kubernetes.test_runai import SECRET

pytestmark = pytest.mark.workflow

TWO = "tiny-llama_tiny_fp32_cpux2_perf"


def run_profile(
    name: str, site: dict, standin: StandInApiServer, tmp_path: Path, monkeypatch
) -> tuple[Path, subprocess.CompletedProcess]:
    """A copy of profiles/<name> with ``site`` added, run on the default sweep's config."""
    profile = tmp_path / "profile"
    shutil.copytree(REPO / "profiles" / name, profile)
    platform = yaml.safe_load((profile / "site.yaml").read_text())
    platform[name].update(site)
    (profile / "site.yaml").write_text(yaml.safe_dump(platform))
    standin.scenarios = {TWO: ["evicted", "succeed"]}
    monkeypatch.setenv("KUBECONFIG", str(standin.kubeconfig(tmp_path / "kubeconfig")))
    workdir = tmp_path / "work"
    workdir.mkdir()
    write_config(workdir, TWO_RUN_CONFIG)  # the default sweep's config, unchanged
    proc = snakemake(workdir, "--profile", str(profile), "--cores", "2")
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    return workdir, proc


def check_tables(workdir: Path, standin: StandInApiServer, default: Sweep, cluster: str) -> None:
    runs = pd.read_parquet(workdir / "results/tables/runs.parquet").set_index("run_id")
    columns = pd.read_parquet(default.results / "tables/runs.parquet").columns
    assert list(runs.reset_index().columns) == list(columns)
    assert (runs.status == "success").all(), runs[["status", "reason"]]
    assert (runs.cluster_type == cluster).all()
    assert runs.loc[TWO, "attempts"] == 2 and runs.loc[TWO, "attempt"] == 2
    assert "preempted" in runs.loc[TWO, "earlier_attempts"], runs.loc[TWO, "earlier_attempts"]
    assert sorted(w.name for w in standin.workloads.values()) == [
        "tiny-llama-tiny-fp32-cpux1-perf-a1",
        "tiny-llama-tiny-fp32-cpux2-perf-a1",
        "tiny-llama-tiny-fp32-cpux2-perf-a2",
    ]
    assert all(w.deleted for w in standin.workloads.values())  # keep: false
    for run_id, row in runs.iterrows():
        run_dir = workdir / "results/runs" / run_id
        record = json.loads((run_dir / "run.json").read_text())
        attempt = run_dir / record["attempt_dir"]
        assert row.workload_id == record["workload_id"]
        summary = parse_log(attempt / "train.log", tuple(TINY_WINDOW)).summary
        assert row.n_iterations == summary.n_iterations == TINY_STEPS
        assert row.step_time_mean_s == pytest.approx(summary.step_time_mean_s)
        served = standin.workloads[row.workload_id.split("/")[-1]] if cluster == "kubernetes" else (
            next(w for w in standin.workloads.values() if w.obj.get("id") == row.workload_id)
        )  # fmt: skip
        assert (attempt / "train.log").read_text() == served.log_path.read_text()


def test_sweep_on_kubernetes(standin, tmp_path, monkeypatch, finished_sweep: Sweep) -> None:
    site = {"image": "example/llmbench:test", "poll_s": 0.5}
    workdir, _ = run_profile("kubernetes", site, standin, tmp_path, monkeypatch)
    check_tables(workdir, standin, finished_sweep, "kubernetes")
    runs = pd.read_parquet(workdir / "results/tables/runs.parquet").set_index("run_id")
    assert runs.loc[TWO, "workload_id"] == "default/tiny-llama-tiny-fp32-cpux2-perf-a2"
    attempt = workdir / "results/runs" / TWO / "attempt-2"
    assert yaml.safe_load((attempt / "manifest.yaml").read_text())["kind"] == "TrainJob"
    assert "llmbench.launch.kubernetes_watch" in (attempt / "launch.sh").read_text()


def test_sweep_on_runai_never_writes_the_secret(
    standin, tmp_path, monkeypatch, finished_sweep: Sweep
) -> None:
    standin.runai_app = ("llmb-bench", SECRET)
    monkeypatch.setenv("RUNAI_APP_SECRET", SECRET)
    site = {"base_url": standin.url + "/api/v1", "app_id": "llmb-bench", "project": "bench",
            "image": "example/llmbench:test", "poll_s": 0.5}  # fmt: skip
    workdir, proc = run_profile("runai", site, standin, tmp_path, monkeypatch)
    check_tables(workdir, standin, finished_sweep, "runai")
    attempt = workdir / "results/runs" / TWO / "attempt-2"
    assert json.loads((attempt / "payload.json").read_text())["spec"]["minReplicas"] == 1
    assert SECRET not in proc.stdout + proc.stderr
    checked = 0
    for path in [*workdir.rglob("*"), *(tmp_path / "profile").rglob("*")]:
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path
            checked += 1
    assert checked > 20  # results, logs, launch scripts, payloads, tables, report
