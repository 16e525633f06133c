"""A run whose NCCL output shows a fallback to TCP sockets, through the real pieces: the
train job's body (``attempts.train_job``: runner, the rendered ``launch.sh``, the
supervisor) and its outputs, then the real workflow (Snakemake) for the tables, the "Why
slower" page and ``result.json``, then ``llmbench explain``.

No NCCL runs on this machine, so the framework the launch starts is a stand-in
(tests/fixtures/standin-framework/standin_framework_python, in place of the framework's
interpreter, ``LLMBENCH_PYTHON``): each of its ranks writes the NCCL records of a public
4-node log where the EFA plugin failed and NCCL used sockets (NCCL 2.27.3) to the
``NCCL_DEBUG_FILE`` the launch set, and it prints a public NeMo 2 training log. The site
declares an EFA fabric: the runs table flags the socket fallback, the verdict against a
reference that the run is 26 % slower than is withheld with the reason, and explain
puts the fallback first."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from llmbench.aggregate.reference import SOCKET_FALLBACK_REASON
from llmbench.aggregate.result_file import validate
from llmbench.core.config import run_specs, validate_config
from llmbench.job.attempts import train_job
from llmbench.job.runner import RECORD_FILE
from llmbench.job.train_outputs import write_train_outputs
from llmbench.workflow.rule_values import launch_env
from tests.helpers import REPO, snakemake, workflow_config, write_config

pytestmark = pytest.mark.workflow

FIXTURES = REPO / "tests/fixtures"
STAND_IN = FIXTURES / "standin-framework/standin_framework_python"
NCCL_LOG = FIXTURES / "nccl-debug/eks-g6e-efa-failed-socket-fallback-4nodes_2.27.3.log"
TRAIN_LOG = FIXTURES / "real-logs/nemo2-resiliency-baseline.out"
"""20 iterations; mean step time 7.5789 s over iterations 10-19 (manifest.yaml)."""
REFERENCE_S = 6.0
CONFIG = workflow_config("transport")
RUN = "tiny-llama_tiny_fp32_local-cudax2_perf"


def train_with_stand_in(workdir: Path) -> dict:
    """The train rule's body for the sweep's one run, as common.smk gives it its
    parameters, with the stand-in as the framework's interpreter."""
    (spec,) = run_specs(validate_config(CONFIG))
    run = {
        "spec": spec.to_dict(),
        "env": {**launch_env(spec, "results/stage", None), "LLMBENCH_PYTHON": str(STAND_IN)},
        "telemetry": {},
    }
    record_path = workdir / "results/runs" / RUN / RECORD_FILE
    record = train_job(run, record_path, job_attempt=1, infra_retries=0)
    outputs = {
        name: record_path.with_name(file)
        for name, file in (("record", "run.json"), ("summary", "summary.json"),
                           ("steps", "steps.parquet"), ("telemetry", "telemetry.parquet"),
                           ("energy", "energy.json"))
    }  # fmt: skip
    write_train_outputs(record, outputs)
    return record


def test_socket_fallback_is_flagged_withheld_and_explained_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("STANDIN_NCCL_LOG", str(NCCL_LOG))
    monkeypatch.setenv("STANDIN_TRAIN_LOG", str(TRAIN_LOG))
    write_config(tmp_path, CONFIG)
    (tmp_path / "reference.csv").write_text(
        "workload,size,dtype,gpu_type,gpus,step_time_s\n"
        f"tiny-llama,tiny,fp32,local-cuda,2,{REFERENCE_S}\n"
    )
    record = train_with_stand_in(tmp_path)
    attempt = tmp_path / "results/runs" / RUN / record["attempt_dir"]
    launch = (attempt / "launch.sh").read_text()
    assert 'export NCCL_DEBUG_FILE="$PWD/nccl-debug.%h.%p.log"' in launch
    debug = sorted(attempt.glob("nccl-debug.*.log"))
    assert len(debug) == 2  # one file per rank process, named by host and pid
    assert len({p.name for p in debug}) == 2

    # the real workflow builds the tables from the run folder (training is not redone);
    # the site's fabric comes from the command line, as from a profile's site file
    proc = snakemake(
        tmp_path, "results/tables/runs.parquet", "results/result.json",
        "results/tables/why_slower.html", "--cores", "2", "--config", "fabric=efa",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    assert "rule aggregate:" in proc.stderr and "rule train:" not in proc.stderr
    row = pd.read_parquet(tmp_path / "results/tables/runs.parquet").set_index("run_id").loc[RUN]
    assert row["status"] == "success"
    assert row["step_time_mean_s"] == pytest.approx(7.5789)
    assert row["socket_fallback"]
    assert row["net_transport"] == "socket" and row["gdr"] == "off"
    assert row["nccl_plugin"] == "failed: Libfabric"
    assert row["nccl_version"] == "2.27.3"
    assert row["deviation_pct"] == pytest.approx((7.5789 - REFERENCE_S) / REFERENCE_S * 100)
    assert row["verdict"] == "not_comparable"  # slower by 26 %, but not comparable
    assert row["verdict_reason"] == SOCKET_FALLBACK_REASON

    result = json.loads((tmp_path / "results/result.json").read_text())
    validate(result, "result")
    (entry,) = result["runs"]
    assert entry["reference"]["verdict"] == "not_comparable"
    assert entry["transport"]["socket_fallback"] is True
    assert entry["explanation"]["items"][0]["title"] == "inter-node traffic over TCP sockets"
    page = (tmp_path / "results/tables/why_slower.html").read_text()
    assert RUN in page and "inter-node traffic over TCP sockets" in page

    explained = subprocess.run(
        [sys.executable, "-m", "llmbench.cli", "explain", RUN, "--format", "json"],
        cwd=tmp_path, capture_output=True, text=True, env=dict(os.environ), check=False,
    )  # fmt: skip
    assert explained.returncode == 0, explained.stderr
    (explanation,) = json.loads(explained.stdout)
    first = explanation["items"][0]
    assert (first["kind"], first["title"]) == ("transport", "inter-node traffic over TCP sockets")
    assert first["effect_pct"] == {"low": 20.0, "high": 25.0}
    assert "exemplar-performance/pull/39" in first["effect_source"]
    # the evidence names the lines of the rank's own debug file that show it
    shown = [e.split(":")[0] for e in first["evidence"]]
    assert all(Path(tmp_path / "results" / s).is_file() for s in shown)
    assert any("nccl-debug." in s for s in shown)
