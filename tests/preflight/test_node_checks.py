"""The node checks operators run (``llmbench.preflight.checks``), each on real files under
a node root folder or on the real output of the tools (tests/fixtures/node-checks/,
sources in its README), and the gate that turns them into excluded nodes and warnings.

Stand-ins print what the real tools print: ``nvidia-smi``, ``all_reduce_perf`` and
``alltoall_perf`` below answer only their exact arguments, with the published samples."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from llmbench.core.preflight_settings import PreflightSettings
from llmbench.errors import LlmbenchError
from llmbench.preflight.checks import (
    cpu_governor_check,
    ecc_check,
    fabric_devices,
    imex_check,
    node_checks,
    node_root,
    nvlink_links_check,
    pmix_check,
    read_kernel_log,
    xid_check,
)
from llmbench.preflight.gate import nodes_table
from llmbench.preflight.gpu import HEALTH_FIELDS
from llmbench.preflight.node import fabric_job, node_preflight

SAMPLES = Path(__file__).parents[1] / "fixtures" / "node-checks"
ALL_REDUCE = Path(__file__).parent / "fixtures" / "all_reduce_perf.txt"


def blocks(name: str) -> dict[str, str]:
    """A sample file's blocks by source URL (each after its own ``# source:`` line)."""
    out: dict[str, list[str]] = {}
    current = ""
    for line in (SAMPLES / name).read_text().splitlines():
        if line.startswith("# source: "):
            current = line.removeprefix("# source: ").split()[0]
            out[current] = []
        elif current and not line.startswith("# "):
            out[current].append(line)
    return {url: "\n".join(lines) + "\n" for url, lines in out.items()}


def kernel_log(root: Path, lines: list[str]) -> Path:
    """``<root>/dev/kmsg`` holding ``lines``' NVRM messages as the kernel's records
    (``<prio>,<seq>,<usec>,<flags>;<message>``): the message text as the samples show it."""
    (root / "dev").mkdir(parents=True, exist_ok=True)
    records = [
        f"4,{seq},{seq * 1000},-;{line[line.index('NVRM:') :]}"
        for seq, line in enumerate(lines, start=100)
        if "NVRM:" in line
    ]
    (root / "dev/kmsg").write_text("\n".join(records) + "\n")
    return root


XID_LINES = (SAMPLES / "xid-kernel-log-lines.txt").read_text().splitlines()


def xid_lines(code: str) -> list[str]:
    return [line for line in XID_LINES if f"): {code}, " in line]


def test_xid_severity_follows_nvidia_action(tmp_path: Path) -> None:
    cases = {"79": "exclude", "13": "warn", "63": "pass", "145": "warn", "149": "exclude",
             "48": "exclude", "45": "warn"}  # fmt: skip
    for code, status in cases.items():
        root = kernel_log(tmp_path / code, xid_lines(code))
        lines, why = read_kernel_log(root)
        assert why == "" and lines
        check = xid_check(lines)
        assert check.status == status, (code, check)
        assert f"Xid {code}" in check.detail
    fell = xid_check(read_kernel_log(tmp_path / "79")[0]).detail
    assert "RESTART_BM" in fell and "GPU has fallen off the bus" in fell
    assert "Xid 13 x3" in xid_check(xid_lines("13")).detail  # counted per GPU
    assert xid_check([]).status == "pass"


def test_unreadable_kernel_log_warns(tmp_path: Path) -> None:
    lines, why = read_kernel_log(tmp_path)
    assert lines is None and "dev/kmsg" in why
    check = xid_check(lines, why)
    assert check.status == "warn" and "not readable" in check.detail


def test_ecc_and_remapped_rows_from_nvidia_smi_q() -> None:
    a100, pending = blocks("nvidia-smi-q_ecc-remapped-rows.txt").values()
    first = ecc_check(a100)
    assert first.status == "exclude"  # Pending: Yes, a reset is due
    assert "row remapping pending" in first.detail and "ECC" not in first.detail
    no_pending = ecc_check(a100.replace("Pending                           : Yes", "Pending : No"))
    assert no_pending.status == "pass"  # correctable errors only
    volatile = a100.replace(
        "DRAM Uncorrectable            : 0", "DRAM Uncorrectable            : 2", 1
    )
    assert ecc_check(volatile.replace("Yes", "No")).status == "exclude"
    assert ecc_check("").status == "skipped"
    # the published fragment, under the GPU line nvidia-smi -q prints before each GPU's fields
    reset_due = ecc_check("GPU 00000000:1B:00.0\n" + pending)
    assert reset_due.status == "exclude" and "4 rows remapped" in reset_due.detail


def test_cpu_governor(tmp_path: Path) -> None:
    def governors(*names: str) -> Path:
        root = tmp_path / "-".join(names or ("none",))
        for n, name in enumerate(names):
            folder = root / f"sys/devices/system/cpu/cpu{n}/cpufreq"
            folder.mkdir(parents=True)
            (folder / "scaling_governor").write_text(name + "\n")
        return root

    assert cpu_governor_check(governors("performance", "performance")).status == "pass"
    slow = cpu_governor_check(governors("performance", "powersave"))
    assert slow.status == "warn" and "1 cores powersave" in slow.detail
    assert cpu_governor_check(governors()).status == "pass"  # no cpufreq: not judged


def test_imex_nvlink_pmix_and_fabric(tmp_path: Path) -> None:
    (tmp_path / "dev/nvidia-caps-imex-channels").mkdir(parents=True)
    assert imex_check(tmp_path, "gb200").status == "exclude"
    (tmp_path / "dev/nvidia-caps-imex-channels/channel0").touch()
    assert imex_check(tmp_path, "gb200").detail == "channel0"
    assert imex_check(tmp_path, "h100").status == "skipped"
    h100, v100 = blocks("nvidia-smi-nvlink-s.txt").values()
    tray = "\n".join(f"GPU {g}: NVIDIA GB200\n" + "".join(
        f"         Link {k}: 50 GB/s\n" for k in range(18)) for g in range(4))  # fmt: skip
    assert nvlink_links_check(tray, "gb200").status == "pass"
    assert nvlink_links_check(v100, "gb200").detail == "4 of 72 NVLink links up"
    assert nvlink_links_check(h100, "h100").status == "skipped"
    gcp, prrte, executorlib = blocks("srun-mpi-list.txt").values()
    assert pmix_check(gcp, needed=True).status == "pass"
    assert pmix_check(prrte, needed=True).status == "exclude"
    assert pmix_check(prrte, needed=False).status == "skipped"
    assert pmix_check(executorlib, needed=True).status == "pass"  # listed: what srun says
    ib = tmp_path / "sys/class/infiniband/mlx5_0/device"
    ib.mkdir(parents=True)
    os.symlink("../../../../bus/pci/drivers/mlx5_core", ib / "driver")
    assert fabric_devices(tmp_path) == ("ib", ["mlx5_0"])
    efa = tmp_path / "sys/class/infiniband/rdmap16s27/device"
    efa.mkdir(parents=True)
    os.symlink("../../../../bus/pci/drivers/efa", efa / "driver")
    assert fabric_devices(tmp_path)[0] == "efa"
    assert fabric_devices(tmp_path / "none") == ("none", [])


def test_root_names_the_node(tmp_path: Path) -> None:
    assert node_root(f"{tmp_path}/%n", "n2") == tmp_path / "n2"
    checks = node_checks(kernel_log(tmp_path / "n2", xid_lines("79")), "cpu")
    assert [c.name for c in checks] == ["xid", "cpu_governor", "fabric"]  # CPU node


STAND_IN = """#!/usr/bin/env bash
# STAND-IN for {tool} on a node without GPUs: answers only preflight's exact arguments
# with the published output of the real tool (tests/fixtures/node-checks/README.md)
case "$*" in
{cases}
  *) echo "unexpected arguments: $*" >&2; exit 2 ;;
esac
"""


def stand_in(folder: Path, tool: str, answers: dict[str, Path]) -> None:
    cases = "\n".join(f'  "{args}") cat "{path}" ;;' for args, path in answers.items())
    script = folder / tool
    script.write_text(STAND_IN.format(tool=tool, cases=cases))
    script.chmod(0o755)


def test_gpu_node_preflight_through_its_script(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """preflight.sh run by bash against stand-in tools printing real output: the node's
    ECC state (a pending row remap) excludes it, its alltoall is read, Xid 13 warns."""
    bin_dir, out = tmp_path / "bin", tmp_path / "out"
    bin_dir.mkdir()
    out.mkdir()
    health = out / "health.csv"
    health.write_text(
        "index, name, pci.bus_id, ecc.errors.uncorrected.volatile.total, retired_pages.pending, "
        "clocks.current.sm [MHz], clocks.max.sm [MHz], pcie.link.width.current, "
        "pcie.link.width.max\n"
        + "".join(f"{i}, NVIDIA H100 80GB HBM3, 0:{i}, 0, No, 1980 MHz, 1980 MHz, 16, 16\n"
                  for i in range(4))
    )  # fmt: skip
    ecc = out / "ecc.txt"
    ecc.write_text(next(iter(blocks("nvidia-smi-q_ecc-remapped-rows.txt").values())))
    nvlink = out / "nvlink.txt"
    nvlink.write_text(next(iter(blocks("nvidia-smi-nvlink-s.txt").values())))
    alltoall = out / "alltoall.txt"
    alltoall.write_text(next(iter(blocks("nccl-tests_alltoall_perf.txt").values())))
    stand_in(bin_dir, "nvidia-smi", {
        f"--query-gpu={','.join(HEALTH_FIELDS)} --format=csv": health,
        "-q -d ECC,ROW_REMAPPER": ecc, "nvlink --status": nvlink,
    })  # fmt: skip
    stand_in(bin_dir, "all_reduce_perf", {f"-b 8 -e {8 << 30} -f 2 -g 4": ALL_REDUCE})
    stand_in(bin_dir, "alltoall_perf", {f"-b 8 -e {8 << 30} -f 2 -g 4": alltoall})
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    kernel_log(tmp_path / "roots/gpu-01", xid_lines("13"))
    settings = PreflightSettings(True, ("gpu-01",), "h100", 4, 1, 8 << 30, 0.7, 5,
                                 f"{tmp_path}/roots/%n")  # fmt: skip
    result = node_preflight("gpu-01", settings, tmp_path / "node")
    assert "unexpected arguments" not in (tmp_path / "node/preflight.log").read_text()
    assert result["problems"] == [] and result["busbw_gbps"] == 392.45
    assert result["alltoall_busbw_gbps"] == 334.90
    status = {c["name"]: c["status"] for c in result["node_checks"]}
    assert status == {"xid": "warn", "cpu_governor": "pass", "ecc": "exclude",
                      "imex_channel": "skipped", "nvlink_links": "skipped", "pmix": "skipped",
                      "fabric": "pass"}  # fmt: skip
    table = nodes_table([result], settings)
    row = table.iloc[0]
    assert row["status"] == "excluded" and "row remapping pending" in row["reason"]
    assert "Xid 13" in row["warnings"] and "ecc exclude" in row["node_checks"]


def test_gate_excludes_a_node_below_the_best_alltoall() -> None:
    settings = PreflightSettings(True, ("a", "b"), "cpu", 2, 1, 4 << 20, 0.7, 5)
    passed = {"status": "pass", "detail": ""}
    results = [
        {"node": "a", "busbw_gbps": 1.0, "alltoall_busbw_gbps": 0.8, "problems": [],
         "node_checks": [{"name": "xid", **passed}]},
        {"node": "b", "busbw_gbps": 1.0, "alltoall_busbw_gbps": 0.2, "problems": [],
         "node_checks": [{"name": "cpu_governor", "status": "warn",
                          "detail": "2 cores powersave"}]},
    ]  # fmt: skip
    table = nodes_table(results, settings).set_index("node")
    assert table.loc["a", "status"] == "ok"
    assert table.loc["b", "status"] == "excluded"
    assert table.loc["b", "reason"] == (
        "alltoall bus bandwidth 0.2 GB/s below 70% of the best node's 0.8 GB/s"
    )
    assert table.loc["b", "warnings"] == "2 cores powersave"
    assert table.loc["a", "alltoall_threshold_gbps"] == pytest.approx(0.56)


def test_fabric_job_writes_a_passing_fabric_and_stops_on_a_slow_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """fabric.sh run by bash against a stand-in srun (the multi-node all_reduce_perf it
    starts printing the published table): 45.10 GB/s passes h100's 70 % of 50 GB/s and is
    written; 20 GB/s stops the sweep with one line and writes nothing."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    command = (
        "--nodes=2 --ntasks-per-node=8 --mpi=pmix --container-image=nvcr.io/nvidia/nemo:25.04 "
        f"--no-container-mount-home all_reduce_perf -b 8 -e {8 << 30} -f 2 -g 1"
    )
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("LLMBENCH_IMAGE", raising=False)
    settings = PreflightSettings(True, ("gpu-01", "gpu-02"), "h100", 8, 2, 8 << 30, 0.7, 5, "/")
    for name, busbw in (("ok", "45.10"), ("slow", "20.00")):
        printed = tmp_path / f"{name}.txt"
        printed.write_text(ALL_REDUCE.read_text().replace("392.45", busbw))
        stand_in(bin_dir, "srun", {command: printed})
        (tmp_path / name).mkdir()
        output = tmp_path / name / "fabric.json"
        if name == "ok":
            fabric_job(settings, output, "nvcr.io/nvidia/nemo:25.04")
            assert json.loads(output.read_text())["busbw_gbps"] == 45.10
            continue
        with pytest.raises(LlmbenchError) as stopped:
            fabric_job(settings, output, "nvcr.io/nvidia/nemo:25.04")
        assert str(stopped.value) == (
            "preflight: multi-node all-reduce bus bandwidth 20 GB/s below 70% of the "
            "expected 50 GB/s"
        )
        assert not output.exists()
        assert (tmp_path / name / "fabric" / "fabric.log").is_file()
