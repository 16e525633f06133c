"""``llmbench explain`` and the evidence behind it (``llmbench.aggregate.explain``), on a run folder
built as a train job leaves it: a real NeMo 2 log (tests/fixtures/real-logs), the GPU
telemetry a sampler writes with one GPU's SM clock dropping in the step window (the
telemetry fixture below), the job's parsed outputs (``write_train_outputs``) and the
aggregate job's tables (``aggregate_sweep``)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from llmbench.aggregate.explain import RunFacts, explain, rank, transport
from llmbench.aggregate.job import OUTPUTS, RESULT_OUTPUTS, aggregate_sweep
from llmbench.aggregate.result_file import validate
from llmbench.cli import main
from llmbench.core.config import run_specs, validate_config
from llmbench.job.runner import RECORD_SCHEMA_VERSION
from llmbench.job.train_outputs import write_train_outputs
from llmbench.parsers.transport import read_transport
from tests.helpers import REPO

LOG = REPO / "tests/fixtures/real-logs/nemo2-resiliency-baseline.out"
"""20 iterations, 7.5789 s mean over 10-19 (manifest.yaml): as an 8B fp8 run on 8 H100s,
an MFU of about 0.5."""
CONFIG = {
    "sweeps": [{"workload": "llama3.1-nemo", "sizes": ["8b"], "dtypes": ["fp8"],
                "gpu_type": "h100", "scales": [8]}],
    "steps": 20, "window": [10, 19], "launcher": "srun",
}  # fmt: skip
T0, STEP_S = 1_000_000.0, 7.5
LOW_MHZ, HIGH_MHZ = 1200.0, 1980.0


def telemetry_fixture(attempt: Path, throttled_gpu: int | None) -> None:
    """What a GPU node's sampler and rank 0 leave: nvidia-smi samples of 8 GPUs every
    second (SM clock, power), ``throttled_gpu`` at ``LOW_MHZ`` during the step window and
    ``HIGH_MHZ`` before it, and the step clock of 20 iterations."""
    rows = []
    first, last = T0 + 10 * STEP_S, T0 + 20 * STEP_S
    for second in range(int(T0) - 5, int(last) + 5):
        for gpu in range(8):
            low = gpu == throttled_gpu and first <= second <= last
            rows.append(
                f"{second}.000,n1,nvidia-smi,gpu{gpu},sm_clock_mhz,{LOW_MHZ if low else HIGH_MHZ}"
            )
            rows.append(f"{second}.000,n1,nvidia-smi,gpu{gpu},power_w,650.0")
    (attempt / "telemetry-n1.csv").write_text("\n".join(rows) + "\n")
    (attempt / "telemetry-n1.json").write_text(json.dumps({"sources": {"nvidia-smi": "ok"}}))
    clock = ["iteration,start_unix_s,end_unix_s"] + [
        f"{i},{T0 + i * STEP_S:.6f},{T0 + (i + 1) * STEP_S:.6f}" for i in range(20)
    ]
    (attempt / "step_clock.csv").write_text("\n".join(clock) + "\n")


def table_file(output: str) -> str:
    """The aggregate rule's file name of one of its outputs (workflow/rules/aggregate.smk)."""
    special = {"sweep": "sweep.json", "runs": "runs.parquet", "runs_csv": "runs.csv",
               "steps": "steps.parquet", "scaling_md": "scaling.md"}  # fmt: skip
    return special.get(output, output.removesuffix("_html") + ".html")


def build_results(
    root: Path, throttled_gpu: int | None, reference_s: float, config: dict = CONFIG
) -> Path:
    """results/ with one finished run of ``config`` and the sweep's tables."""
    (spec,) = run_specs(validate_config(config))
    results = root / "results"
    run_dir = results / "runs" / spec.run_id
    attempt = run_dir / "attempt-1"
    attempt.mkdir(parents=True)
    shutil.copy(LOG, attempt / "train.log")
    (attempt / "run_spec.json").write_text(spec.to_json())
    telemetry_fixture(attempt, throttled_gpu)
    record = {
        "schema_version": RECORD_SCHEMA_VERSION, "run_id": spec.run_id, "attempt": 1,
        "attempt_dir": "attempt-1", "log": "attempt-1/train.log",
        "launch_script": "attempt-1/launch.sh", "started_at": "2026-01-01T00:00:00.000+00:00",
        "finished_at": "2026-01-01T00:03:00.000+00:00", "exit_code": 0, "ended_by": "",
        "end_detail": "", "stack_dumps": [], "leftover_processes": 0,
        "ended_before_start": [], "overlap": [], "spec": spec.to_dict(),
        "provenance": {"host": "n1"}, "cluster_type": "slurm", "workload_id": "42",
    }  # fmt: skip
    outputs = {
        name: run_dir / file
        for name, file in (("record", "run.json"), ("summary", "summary.json"),
                           ("steps", "steps.parquet"), ("telemetry", "telemetry.parquet"),
                           ("energy", "energy.json"))
    }  # fmt: skip
    (run_dir / "run.json").write_text(json.dumps(record))
    write_train_outputs(record, outputs)
    tables = results / "tables"
    tables.mkdir()
    reference = root / "reference.csv"
    reference.write_text(
        f"workload,size,dtype,gpu_type,gpus,step_time_s\nllama3.1-nemo,8b,fp8,h100,8,{reference_s}\n"
    )
    names = {n: tables / table_file(n) for n in OUTPUTS + RESULT_OUTPUTS}
    names["result"] = results / "result.json"
    sweep = {"sweep_id": "s1", "created_at": "2026-01-01T00:05:00.000+00:00"}
    aggregate_sweep(
        {"records": [str(run_dir / "run.json")], "reference": str(reference)},
        names, sweep, 1e12, 0.05,
    )  # fmt: skip
    return results


def explain_json(results: Path, *runs: str, capsys: pytest.CaptureFixture[str]) -> list[dict]:
    capsys.readouterr()
    assert main(["explain", *runs, "--results", str(results), "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


RUN = "llama3.1-nemo_8b_fp8_h100x8_perf"


def test_parity_difference_and_throttled_clocks_are_both_listed_ranked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = build_results(tmp_path, throttled_gpu=7, reference_s=6.0)
    row = pd.read_parquet(results / "tables/runs.parquet").set_index("run_id").loc[RUN]
    assert row["verdict"] == "slower" and bool(row["clock_throttled"])
    (got,) = explain_json(results, RUN, capsys=capsys)
    kinds = [i["kind"] for i in got["items"]]
    assert kinds[0] == "telemetry"  # the item with a number comes first
    clocks = got["items"][0]
    assert "n1 gpu7: 1200 of 1980 MHz" in clocks["detail"]
    assert clocks["effect_pct"] == {"low": 0.0, "high": round((1 - LOW_MHZ / HIGH_MHZ) * 100, 1)}
    assert f"runs/{RUN}/energy.json" in clocks["evidence"]
    launch = [i for i in got["items"] if i["kind"] == "launch"]
    assert "deliberate difference: srun --mpi=pmix" in [i["title"] for i in launch]
    assert kinds.index("launch") > kinds.index("telemetry")
    assert got["summary"].startswith(f"{len(kinds)} known causes; first: ")
    result = json.loads((results / "result.json").read_text())
    validate(result, "result")
    assert result["runs"][0]["explanation"]["items"][0]["kind"] == "telemetry"
    assert "GPU clocks throttled" in (results / "tables/why_slower.html").read_text()


def test_a_run_without_evidence_says_so_and_what_was_checked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = build_results(tmp_path, throttled_gpu=None, reference_s=6.0)
    row = pd.read_parquet(results / "tables/runs.parquet").iloc[0].to_dict()
    facts = RunFacts({**row, "workload": "tiny-llama"}, results)  # no launch to compare
    found = explain(facts)
    assert [i.kind for i in found.items] == []
    assert found.summary == "no known cause found"
    assert [c.split(":")[0] for c in found.checked] == [
        "transport", "node health", "telemetry", "step times", "launch", "published row",
    ]  # fmt: skip
    capsys.readouterr()
    assert main(["explain", "--all", "--results", str(results)]) == 0
    text = capsys.readouterr().out
    assert text.startswith(f"{RUN}: verdict slower (+26.3 % against the reference)")


def test_a_run_within_its_reference_is_not_explained_by_all(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = build_results(tmp_path, throttled_gpu=7, reference_s=7.6)
    assert explain_json(results, "--all", capsys=capsys) == []  # within: nothing to explain
    (one,) = explain_json(results, RUN, capsys=capsys)  # asked by name: explained anyway
    assert one["verdict"] == "within" and one["items"]
    assert json.loads((results / "result.json").read_text())["runs"][0]["explanation"] is None


def test_bad_input_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "x", "--results", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("llmbench explain: error: --results: ") and "\n" not in err
    results = build_results(tmp_path, throttled_gpu=None, reference_s=6.0)
    assert main(["explain", "nope", "--results", str(results)]) == 2
    assert (
        f"'nope' is not in {results}/tables/runs.parquet; allowed: {RUN}" in capsys.readouterr().err
    )


def test_socket_fallback_outranks_every_other_item(tmp_path: Path) -> None:
    sample = REPO / "tests/fixtures/nccl-debug/eks-g6e-efa-failed-socket-fallback-4nodes_2.27.3.log"
    report = {"attempt": 1, **read_transport([sample], base=sample.parent).as_dict()}
    facts = RunFacts({"run_id": "r", "nodes": 4, "socket_fallback": True}, tmp_path, {}, report)
    (item,), _ = transport(facts)
    clocks = item.__class__("telemetry", "GPU clocks throttled", "", (0.0, 15.0))
    spread = item.__class__("step_spread", "step time varies", "", (0.0, 30.0))
    assert [i.kind for i in rank([clocks, item, spread])] == [
        "step_spread",
        "transport",
        "telemetry",
    ]
    assert item.effect_pct == (20.0, 25.0)
    unflagged = RunFacts(
        {"run_id": "r", "nodes": 4, "socket_fallback": False}, tmp_path, {}, report
    )
    (plain,), _ = transport(unflagged)  # sockets, but no IB/EFA declared: no number
    assert plain.effect_pct is None and "declares no IB or EFA" in plain.detail


def test_node_health_steps_and_published_row(tmp_path: Path) -> None:
    """The other kinds of evidence on their own inputs: the preflight nodes table of the
    run's Slurm nodes, the window's step times, the published row of its key."""
    nodes = pd.DataFrame([
        {"node": "gpu-002", "status": "excluded", "reason": "Xid 79 on PCI:0000:2b:00",
         "warnings": ""},
        {"node": "gpu-003", "status": "ok", "reason": "", "warnings": "2 cores powersave"},
        {"node": "gpu-009", "status": "excluded", "reason": "not this run's", "warnings": ""},
    ])  # fmt: skip
    row = {"run_id": "r", "nodelist": "gpu-[001-003]", "workload": "llama3.1-nemo",
           "size": "8b", "dtype": "bf16", "gpu_type": "h100", "gpus": 8,
           "global_batch_size": 256, "overlap": "q/attempt-1: 2 processes at start"}  # fmt: skip
    times = [1.0] * 8 + [3.0, 3.0]
    steps = pd.DataFrame({"run_id": "r", "in_window": True, "step_time_s": times})
    found = explain(RunFacts(row, tmp_path, {}, {}, nodes, steps))
    titles = [i.title for i in found.items]
    assert titles[0] == "step time varies across the window"  # the one with a number
    assert found.items[0].effect_pct == (0.0, round((sum(times) / 10 / 1.0 - 1) * 100, 1))
    assert "node gpu-002 failed preflight" in titles and "node gpu-003 preflight warnings" in titles
    assert not any("gpu-009" in t for t in titles)
    assert "other runs' processes on the host" in titles
    gbs = next(i for i in found.items if i.kind == "reference_row")
    assert gbs.title == "global batch size differs from the published row"
    assert "GBS 256 here, 128 in" in gbs.detail
    no_row = explain(RunFacts({**row, "gpus": 24, "global_batch_size": 128}, tmp_path))
    (scale,) = [i for i in no_row.items if i.kind == "reference_row"]
    assert scale.title == "GPU count differs from every published row"


def test_gpudirect_rdma_off_between_nodes(tmp_path: Path) -> None:
    sample = REPO / "tests/fixtures/nccl-debug/nvidia-nccl-1537_roce-gdr-disabled_2.19-2.21.log"
    report = read_transport([sample], nodes=2, base=sample.parent).as_dict()
    items, _ = transport(RunFacts({"run_id": "r", "nodes": 2}, tmp_path, {}, report))
    (gdr,) = items
    assert gdr.title == "no GPUDirect RDMA between nodes" and gdr.effect_pct is None
    assert "nccl/issues/214" in gdr.effect_source
    assert gdr.evidence and all(e.startswith("runs/r/nvidia-nccl-1537") for e in gdr.evidence)


def test_a_transport_json_of_the_first_layout_is_still_explained(tmp_path: Path) -> None:
    """Runs recorded before schema 2: flat values, facts named by the line they came from."""
    first = {
        "attempt": 1,
        "files": ["attempt-1/nccl-debug.a.1.log"],
        "net_transport": "socket", "gdr": "", "nvls": "", "collnet": "",
        "nccl_plugin": "failed: Libfabric (v10) - NET/OFI aws-ofi-nccl initialization failed",
        "nccl_version": "2.27.3", "communicators": 1, "inter_node_networks": ["socket"],
        "socket_inter_node": True, "socket_any": True, "max_nodes": 2,
        "evidence": [
            {"fact": "network Socket", "file": "attempt-1/nccl-debug.a.1.log", "line": 7,
             "text": "a:1:2 [0] NCCL INFO Using network Socket"},
            {"fact": "NCCL version", "file": "attempt-1/nccl-debug.a.1.log", "line": 1,
             "text": "a:1:2 [0] NCCL INFO NCCL version 2.27.3"},
        ],
    }  # fmt: skip
    facts = RunFacts({"run_id": "r", "nodes": 2, "socket_fallback": True}, tmp_path, {}, first)
    (item,), _ = transport(facts)
    assert item.title == "inter-node traffic over TCP sockets"
    assert item.evidence == ("runs/r/attempt-1/nccl-debug.a.1.log:7",)


def test_a_plugin_loaded_but_unused_is_named(tmp_path: Path) -> None:
    """The HPC-X plugin loaded on a node without its device, traffic inside one node."""
    sample = REPO / (
        "tests/fixtures/nccl-debug/gcp-a3-high-gvnic-hpcx-plugin-unused-sockets-2nodes_2.22.3.log"
    )
    lines = sample.read_text().splitlines(keepends=True)
    one_node = tmp_path / "one-node.log"
    one_node.write_text("".join(line for line in lines if "nNodes" not in line
                                and "via NET/" not in line))  # fmt: skip
    report = read_transport([one_node], nodes=1, base=tmp_path).as_dict()
    assert report["nccl_plugin"] == "loaded but unused: IBext_v8"
    items, _ = transport(RunFacts({"run_id": "r", "nodes": 1}, tmp_path, {}, report))
    (item,) = items
    assert item.title == "network plugin unused" and item.detail == report["nccl_plugin"]
    assert item.evidence and item.evidence[0].startswith("runs/r/one-node.log:")


def test_an_image_other_than_the_references_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = "nvcr.io/nvidia/nemo:25.04"
    config = {**CONFIG, "container": "enroot", "images": {"llama3.1-nemo": other}}
    results = build_results(tmp_path, throttled_gpu=None, reference_s=6.0, config=config)
    (got,) = explain_json(results, RUN, capsys=capsys)
    (stack,) = [i for i in got["items"] if i["title"] == "a stack that is not the reference's"]
    assert stack["detail"].startswith(f"image {other}; the reference's nvcr.io")
    assert "framework from a venv" not in json.dumps(got)
