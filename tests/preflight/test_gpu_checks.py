"""GPU node checks: health query, DCGM report and nccl-tests output as the tools print
them; the rendered preflight script."""

from __future__ import annotations

import math
from pathlib import Path

from llmbench.core.preflight_settings import PreflightSettings
from llmbench.preflight.gpu import dcgm_failures, parse_health_csv, parse_nccl_tests
from llmbench.preflight.node import fabric_result, gpu_result, render_fabric, render_gpu_preflight
from tests.helpers import REPO

HEALTH = """\
index, name, pci.bus_id, ecc.errors.uncorrected.volatile.total, retired_pages.pending, \
clocks.current.sm [MHz], clocks.max.sm [MHz], pcie.link.width.current, pcie.link.width.max
0, NVIDIA H100 80GB HBM3, 00000000:18:00.0, 0, No, 1980 MHz, 1980 MHz, 16, 16
1, NVIDIA H100 80GB HBM3, 00000000:2A:00.0, 2, No, 1980 MHz, 1980 MHz, 8, 16
2, NVIDIA H100 80GB HBM3, 00000000:3A:00.0, [N/A], Yes, 1980 MHz, 1980 MHz, 16, 16
"""

# all_reduce_perf's output layout (nccl-tests): out-of-place, then in-place columns; the
# figures are an example, not a measurement.
NCCL = (Path(__file__).parent / "fixtures/all_reduce_perf.txt").read_text()


def test_health_finds_each_problem() -> None:
    report = parse_health_csv(HEALTH.splitlines(), expected_gpus=4)
    assert report.gpus == 3
    assert report.problems == [
        "3 of 4 GPUs visible",
        "GPU 1: 2 uncorrected ECC errors",
        "GPU 1: PCIe link x8 of x16",
        "GPU 2: retired pages pending (reset needed)",
    ]


def test_nccl_tests_out_of_place_columns_and_average() -> None:
    result = parse_nccl_tests(NCCL)
    assert [p["size_bytes"] for p in result.points] == [8, 67108864, 134217728]
    assert result.points[-1]["busbw_gbps"] == 392.45
    assert result.points[-1]["time_s"] == 598.5e-6
    assert result.avg_busbw_gbps == 249.013 and result.wrong == 0
    assert max(p["busbw_gbps"] for p in result.points) == 392.45
    assert math.isnan(parse_nccl_tests("no table").avg_busbw_gbps)


def test_dcgm_failures() -> None:
    text = "| Deployment   | Pass |\n| GPU Memory   | Fail - GPU 3 |\n| PCIe | Pass |\n"
    assert dcgm_failures(text) == ["GPU Memory"]


def settings(root: Path | str = "/") -> PreflightSettings:
    return PreflightSettings(True, ("gpu-01",), "h100", 8, 2, 8 << 30, 0.7, 5, str(root))


def test_gpu_preflight_script_is_pinned() -> None:
    """Golden file: the nccl-tests command runs in the workload's image through pyxis."""
    text = render_gpu_preflight(settings(), "nvcr.io/nvidia/nemo:25.04")
    golden = REPO / "tests/preflight/golden/preflight_h100.sh"
    assert text == golden.read_text()


def test_gpu_result_from_script_output(tmp_path: Path) -> None:
    healthy = (
        HEALTH.splitlines()[0]
        + "\n"
        + "\n".join(
            f"{i}, NVIDIA H100 80GB HBM3, 0:{i}, 0, No, 1980 MHz, 1980 MHz, 16, 16"
            for i in range(8)
        )
    )
    output = (
        "### llmbench preflight: health\n" + healthy + "\n"
        "### llmbench preflight: dcgm\ndcgmi not installed\n"
        "### llmbench preflight: nccl\n" + NCCL
    )
    result = gpu_result("gpu-01", settings(tmp_path), output)
    assert result["problems"] == [] and result["busbw_gbps"] == 392.45
    assert result["checks"] == [
        "nvidia-smi health", "nccl-tests all_reduce_perf", "nccl-tests alltoall_perf"
    ]  # fmt: skip
    assert result["alltoall_busbw_gbps"] is None  # no alltoall section: not measured
    broken = gpu_result("gpu-01", settings(tmp_path), output.replace(NCCL, ""))
    assert broken["problems"] == ["all_reduce_perf printed no result"]


def test_fabric_script_is_pinned_and_judged_against_the_network_figure() -> None:
    text = render_fabric(settings(), "nvcr.io/nvidia/nemo:25.04")
    assert text == (REPO / "tests/preflight/golden/fabric_h100.sh").read_text()
    ok = fabric_result(settings(), NCCL.replace("392.45", "45.10"))
    assert ok["problems"] == [] and ok["busbw_gbps"] == 45.10
    assert ok["expected_busbw_gbps"] == 50 and "ConnectX-7" in ok["expected_source"]
    slow = fabric_result(settings(), NCCL.replace("392.45", "20.00"))
    assert slow["problems"] == [
        "multi-node all-reduce bus bandwidth 20 GB/s below 70% of the expected 50 GB/s"
    ]
