"""The fourth bad-input probe's preflight cases: what a sick node's tools print.

The stand-ins of ``tests/bad_inputs/fake_tools.py`` answer as a healthy H100 node or print
garbage, random bytes, nothing or 200 MB, fail, or hang. The GPU proof kit's node step
(PF*, ``python -m benchmarks.gpu_proof node``) and the workflow's preflight_node body (PFW*,
``llmbench.preflight.node.node_preflight``) must each write a result with a problem per
fault, naming the tool and what it did, and stop a hung tool with everything it started;
the node checks under ``preflight.root`` (NC*) must not block on a FIFO; the node list
sinfo gives the workflow (PFS*) is read bounded, a name that is not a node name is one
line naming sinfo, and the preflight jobs planned are capped by what the sweep uses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import benchmarks.gpu_proof.node as kit_node
import llmbench.preflight.node as workflow_node
from benchmarks.gpu_proof.__main__ import main as proof_main
from llmbench.core.config import validate_and_expand
from llmbench.core.preflight_settings import (
    CHECKED_NODES_FLOOR,
    PreflightSettings,
    resolve_preflight,
)
from llmbench.errors import ConfigError
from llmbench.launch.launchers import LAUNCHERS
from llmbench.launch.slurm import NODE_LIST_MAX_BYTES
from llmbench.preflight.gate import nodes_table
from llmbench.preflight.node import node_preflight
from llmbench.report.preflight_nodes import nodes_page
from tests.bad_inputs import fake_tools
from tests.helpers import REPO, snakemake, tiny_config

SRUN = LAUNCHERS["srun"]

LIMIT_S = 2
"""The time limits of the checks in the hang cases (their own are 10 s to 10 min)."""
SMI_FAILED = "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."


@pytest.fixture
def fakes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The stand-ins first on PATH, short check limits; hung stand-ins ended by PID after."""
    bin_dir = fake_tools.install(tmp_path / "fake-bin")
    pid_file = tmp_path / "hung.pids"
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_PIDS", str(pid_file))
    for name in ("FAKE_SMI", "FAKE_L", "FAKE_DCGM", "FAKE_NCCL", "FAKE_SINFO", "FAKE_GPUS"):
        monkeypatch.delenv(name, raising=False)
    for name in ("QUERY_TIMEOUT_S", "DCGM_TIMEOUT_S", "ALLREDUCE_TIMEOUT_S"):
        monkeypatch.setattr(kit_node, name, LIMIT_S)
    monkeypatch.setattr(
        workflow_node, "CHECK_LIMITS_S", dict.fromkeys(workflow_node.CHECK_LIMITS_S, LIMIT_S)
    )
    yield pid_file
    fake_tools.end(fake_tools.hung_pids(pid_file))


def kit_node_step(folder: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict, str]:
    """``python -m benchmarks.gpu_proof node FOLDER`` in this process: (exit, node.json,
    last line)."""
    code = proof_main(["node", str(folder)])
    out = capsys.readouterr()
    assert "Traceback" not in out.err + out.out, out.err[-2000:]
    result = json.loads((folder / "node.json").read_text())
    return code, result, out.out.strip().splitlines()[-1]


def assert_stopped(pid_file: Path) -> None:
    pids = fake_tools.hung_pids(pid_file)
    assert pids, "no stand-in hung"
    assert not [p for p in pids if fake_tools.alive(p)], "a hung tool was left running"


KIT_BAD = {  # case: (environment, words of a problem in node.json)
    "PF1": ({"FAKE_SMI": "garbage"}, ("0 of 1 GPUs visible",)),
    "PF3": ({"FAKE_SMI": "exit1"}, ("nvidia-smi --query-gpu=", "exit code 9", SMI_FAILED)),
    "PF4": ({"FAKE_SMI": "hang"}, ("nvidia-smi --query-gpu=", f"timed out after {LIMIT_S} s")),
    "PF5": ({"FAKE_L": "hang"}, ("no NVIDIA GPU: nvidia-smi -L: timed out after",)),
    "PF6": ({"FAKE_L": "exit1"}, ("no NVIDIA GPU: nvidia-smi -L: exit code 9", SMI_FAILED)),
    "PF7": ({"FAKE_L": "binary"}, ("no NVIDIA GPU: nvidia-smi -L lists none",)),
    "PF8": ({"FAKE_SMI": "huge"}, ("nvidia-smi --query-gpu=", "printed more than 4,194,304 bytes")),
    "PF10": ({"FAKE_DCGM": "garbage"}, ("DCGM Memory: Fail",)),
    "PF12": ({"FAKE_DCGM": "empty"}, ("dcgmi diag -r 1 printed no test result",)),
    "PF13": ({"FAKE_DCGM": "huge"}, ("dcgmi diag -r 1: printed more than 4,194,304 bytes",)),
    "PF11": ({"FAKE_DCGM": "exit1"}, ("dcgmi diag -r 1: exit code 255",)),
    "PF14": ({"FAKE_NCCL": "hang"}, ("all_reduce_perf -b 8", "timed out after")),
    "PF2": ({"FAKE_SMI": "empty"}, ("0 of 1 GPUs visible",)),
}


@pytest.mark.parametrize("case", sorted(KIT_BAD))
def test_kit_node_step_names_each_fault(
    case: str, fakes: Path, tmp_path: Path, monkeypatch, capsys
) -> None:
    """PF1-PF14: node.json is written with the fault named, the step exits 1 with its
    verdict line, and a hung tool is stopped with what it started."""
    env, words = KIT_BAD[case]
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    code, result, last = kit_node_step(tmp_path / "node", capsys)
    assert code == 1 and result["status"] == "problems", result
    problem = next((p for p in result["problems"] if words[0] in p), None)
    assert problem is not None, result["problems"]
    assert all(word in problem for word in words), problem
    assert last.startswith("node: ") and words[0] in last
    log = tmp_path / "node/preflight.log"
    assert not log.exists() or log.stat().st_size < 3 * 4_194_304  # bounded
    if "hang" in env.values():
        assert_stopped(fakes)


def test_kit_node_step_passes_a_healthy_node_and_a_slow_dcgm(
    fakes: Path, tmp_path: Path, monkeypatch, capsys
) -> None:
    """The control, and PF9: a diagnostic that does not finish in the kit's limit is
    listed as not completed (skipped), not as a fault; it is stopped all the same."""
    code, result, _ = kit_node_step(tmp_path / "ok", capsys)
    assert code == 0 and result["problems"] == [], result
    assert "dcgmi diag -r 1" in result["checks"]
    monkeypatch.setenv("FAKE_DCGM", "hang")
    code, result, _ = kit_node_step(tmp_path / "slow", capsys)
    assert code == 0 and result["problems"] == [], result
    assert "dcgmi diag -r 1" not in result["checks"]
    assert any("not completed within" in s for s in result["skipped"])
    assert_stopped(fakes)


def h100_node(root: Path) -> PreflightSettings:
    return PreflightSettings(True, ("gpu-001",), "h100", 8, 1, 8 << 30, 0.7, 5, str(root))


@pytest.mark.parametrize(
    "case, env, words",
    [
        ("PFW1", {"FAKE_SMI": "hang"}, ("nvidia-smi --query-gpu=", f"timed out after {LIMIT_S} s")),
        ("PFW3", {"FAKE_SMI": "garbage"}, ("0 of 8 GPUs visible",)),
        ("PFW3-ecc", {"FAKE_SMI": "binary"}, ("0 of 8 GPUs visible",)),
    ],
)
def test_workflow_node_body_names_each_fault(
    case: str, env: dict, words: tuple, fakes: Path, tmp_path: Path, monkeypatch
) -> None:
    """PFW1-PFW3: the preflight_node job's body judges the node (no traceback), each tool
    under its own limit, a hung one stopped (PFW2) and named as timed out."""
    monkeypatch.setenv("FAKE_GPUS", "8")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    result = node_preflight("gpu-001", h100_node(tmp_path / "root"), tmp_path / "out")
    problem = next((p for p in result["problems"] if words[0] in p), None)
    assert problem is not None and all(w in problem for w in words), result["problems"]
    log = (tmp_path / "out/preflight.log").read_text()
    assert "### llmbench preflight end: health" in log
    if case == "PFW1":
        assert_stopped(fakes)  # PFW2: nothing of the hung nvidia-smi is left


def test_workflow_node_body_passes_a_healthy_node(fakes: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("FAKE_GPUS", "8")
    result = node_preflight("gpu-001", h100_node(tmp_path / "root"), tmp_path / "out")
    assert result["problems"] == [] and result["busbw_gbps"] == 469.77, result
    assert "dcgmi diag -r 1" in result["checks"]
    script = (tmp_path / "out/preflight.sh").read_text()
    assert f"timeout -k 5 {LIMIT_S} nvidia-smi --query-gpu=" in script  # to rerun by hand


def test_nc3_a_fifo_governor_does_not_block_the_node_checks(tmp_path: Path) -> None:
    """NC3: a FIFO where the CPU governor should be is read without blocking and named."""
    cpufreq = tmp_path / "n/sys/devices/system/cpu/cpu0/cpufreq"
    cpufreq.mkdir(parents=True)
    os.mkfifo(cpufreq / "scaling_governor")
    (tmp_path / "n/dev").mkdir()
    code = (
        "from pathlib import Path; from llmbench.preflight.checks import node_checks; "
        "import sys; c = {x.name: x for x in node_checks(Path(sys.argv[1]), 'h100', {})}; "
        "print(c['cpu_governor'].status, c['cpu_governor'].detail)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "n")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "warn not all cores performance: 1 cores unreadable"


def gpu_specs(scales: tuple[int, ...] = (8,)):
    config = tiny_config(scales, launcher="srun")
    config["sweeps"][0].update(
        workload="llama3.1-nemo", sizes=["8b"], dtypes=["bf16"], gpu_type="h100"
    )
    return validate_and_expand(config)[1]


def test_pfs1_junk_names_from_sinfo_are_one_line_naming_sinfo(fakes: Path, monkeypatch) -> None:
    """PFS1, PFS1b: a name sinfo prints that is not a node name (a 0xff byte, `$(id)`,
    `; touch`) is one line naming sinfo, not a config key; nothing is run."""
    for mode in ("garbage", "garbage2"):
        monkeypatch.setenv("FAKE_SINFO", mode)
        with pytest.raises(ConfigError) as err:
            resolve_preflight(None, gpu_specs(), list_nodes=SRUN.nodes)
        line = str(err.value)
        assert line.startswith("preflight: sinfo -h -N -o %N printed ") and "\n" not in line
        assert "not a node name" in line and "preflight.nodes" in line
        assert "config" not in line
    assert not Path(f"{fakes}.INJECTED").exists()


def test_pfs5_millions_of_nodes_are_read_bounded_and_capped(fakes: Path, monkeypatch) -> None:
    """PFS5: 2,000,000 names: read up to the bound, and the nodes checked are capped at
    what the sweep uses (at least the floor), with a line saying so."""
    monkeypatch.setenv("FAKE_SINFO", "huge")
    settings = resolve_preflight(None, gpu_specs(), list_nodes=SRUN.nodes)
    assert len(settings.nodes) == CHECKED_NODES_FLOOR
    assert settings.nodes[:2] == ("gpu-0000001", "gpu-0000002")
    assert f"printed more than {NODE_LIST_MAX_BYTES:,} bytes" in settings.note
    assert f"preflight checks {CHECKED_NODES_FLOOR} of them" in settings.note
    assert "train jobs may also run on the others, unchecked" in settings.note


def test_pfs_good_listings_plan_as_before(fakes: Path, monkeypatch) -> None:
    """PFS2-PFS4, PFS6: nothing listed, a failing or hung sinfo: no node (the gate stops
    the sweep at run time); duplicates and padding: each node once; a small partition:
    every node, no note."""
    for mode in ("empty", "exit1", "hang"):
        monkeypatch.setenv("FAKE_SINFO", mode)
        monkeypatch.setattr("llmbench.launch.slurm.QUERY_TIMEOUT_S", LIMIT_S)
        assert resolve_preflight(None, gpu_specs(), list_nodes=SRUN.nodes).nodes == ()
    assert_stopped(fakes)
    monkeypatch.setenv("FAKE_SINFO", "dupes")
    settings = resolve_preflight(None, gpu_specs(), list_nodes=SRUN.nodes)
    assert settings.nodes == ("gpu-001", "gpu-002") and settings.note == ""


def dry_run(tmp_path: Path, config: dict) -> subprocess.CompletedProcess[str]:
    work = tmp_path / "work"
    work.mkdir()
    (work / "config.yaml").write_text(yaml.safe_dump(config))
    return snakemake(work, "-n", "--cores", "1", timeout=300)


@pytest.mark.workflow
@pytest.mark.parametrize("case", ["PFS1", "PFS5"])
def test_workflow_dag_with_a_hostile_sinfo(
    case: str, fakes: Path, tmp_path: Path, monkeypatch
) -> None:
    """The real `snakemake -n` of a GPU sweep on launcher srun with the hostile sinfo:
    PFS1 one llmbench line naming sinfo; PFS5 the DAG is planned with the capped number
    of preflight jobs and the warning."""
    monkeypatch.setenv("FAKE_SINFO", "garbage" if case == "PFS1" else "huge")
    config = tiny_config((8,), launcher="srun", container="enroot")
    config["sweeps"][0].update(
        workload="llama3.1-nemo", sizes=["8b"], dtypes=["bf16"], gpu_type="h100"
    )
    proc = dry_run(tmp_path, config)
    ours = [line for line in proc.stderr.splitlines() if line.startswith("llmbench")]
    assert "Traceback" not in proc.stderr and "UnicodeDecodeError" not in proc.stderr
    if case == "PFS1":
        assert proc.returncode == 1
        errors = [line for line in ours if line.startswith("llmbench: error:")]
        assert len(errors) == 1 and errors[0].startswith("llmbench: error: preflight: sinfo"), ours
    else:
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert any("preflight checks 64 of them" in line for line in ours), ours
        jobs = [
            line.split() for line in proc.stdout.splitlines() if line.startswith("preflight_node ")
        ]
        assert jobs and int(jobs[0][1]) == CHECKED_NODES_FLOOR, proc.stdout[-3000:]
    assert not (REPO / "INJECTED").exists()


def test_a_timed_out_tool_excludes_the_node_with_its_reason_on_the_cluster_page(
    fakes: Path, tmp_path: Path, monkeypatch
) -> None:
    """What the gate makes of PFW1: the node excluded, the timed-out query its reason in
    nodes.parquet and on the Cluster page."""
    monkeypatch.setenv("FAKE_GPUS", "8")
    monkeypatch.setenv("FAKE_SMI", "hang")
    settings = h100_node(tmp_path / "root")
    result = node_preflight("gpu-001", settings, tmp_path / "out")
    row = nodes_table([result], settings).iloc[0]
    assert row["status"] == "excluded" and f"timed out after {LIMIT_S} s" in row["reason"]
    assert f"timed out after {LIMIT_S} s" in nodes_page(nodes_table([result], settings), 0.7)


def kmsg_root(tmp_path: Path) -> Path:
    root = tmp_path / "n"
    (root / "dev").mkdir(parents=True)
    return root


@pytest.mark.parametrize("case", ["NC1", "NC2", "NC4", "NC5"])
def test_node_checks_under_a_hostile_root_stay_good(case: str, tmp_path: Path) -> None:
    """NC1 kmsg a link to /dev/zero (read bounded); NC2 Xid codes 10^24 and -5 (warn, an
    unknown code); NC4 5 MB of binary then Xid 79 (found: exclude); NC5 kmsg a FIFO and
    IB devices whose driver links dangle (no hang; fabric ib). In a process of its own:
    a hang fails the test instead of stopping it."""
    root = kmsg_root(tmp_path)
    kmsg = root / "dev/kmsg"
    xid = "6,1,1,-;NVRM: Xid (PCI:0000:18:00): {code}, pid=1, name=x, GPU has fallen off the bus."
    if case == "NC1":
        kmsg.symlink_to("/dev/zero")
    elif case == "NC2":
        kmsg.write_text("\n".join(xid.format(code=c) for c in (10**24, -5)) + "\n")
    elif case == "NC4":
        kmsg.write_bytes(os.urandom(5 << 20) + b"\n" + xid.format(code=79).encode() + b"\n")
    else:
        os.mkfifo(kmsg)
        for dev in ("mlx5_0", "mlx5_1"):
            (root / "sys/class/infiniband" / dev / "device").mkdir(parents=True)
            (root / "sys/class/infiniband" / dev / "device/driver").symlink_to(
                "/nonexistent/mlx5_core"
            )
    code = (
        "import json, sys; from pathlib import Path; from llmbench.preflight.checks import "
        "node_checks; print(json.dumps({c.name: [c.status, c.detail] for c in "
        "node_checks(Path(sys.argv[1]), 'h100', {})}))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(root)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    checks = json.loads(proc.stdout)
    status, detail = checks["xid"]
    expected = {"NC1": "pass", "NC2": "warn", "NC4": "exclude", "NC5": "pass"}[case]
    assert status == expected, checks
    if case == "NC4":
        assert "Xid 79" in detail and "RESTART_BM" in detail
    if case == "NC5":
        assert checks["fabric"] == ["pass", "ib: mlx5_0, mlx5_1"]
