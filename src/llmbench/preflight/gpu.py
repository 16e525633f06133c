"""GPU node checks: the commands a GPU node's preflight runs, and parsers of their output.

- Health: ``nvidia-smi --query-gpu=<HEALTH_FIELDS> --format=csv`` (CSV as
  ``llmbench.telemetry.nvidia_smi`` describes): GPU count, uncorrected ECC errors,
  pending retired pages, SM clock against its maximum, PCIe link width against its
  maximum. (The link *generation* drops at idle to save power, so only the width is
  judged.)
- NVLink: ``nvidia-smi nvlink --status``: per GPU a ``GPU <i>: <name> (UUID: ...)`` line,
  then one ``Link <k>: <speed> GB/s`` line per link (``<inactive>`` for a link that is
  down). GPUs of one node are judged against each other: fewer active links than the
  node's best GPU, or a link slower than the node's fastest, is a problem. (Boards wired
  with fewer links, such as PCIe cards with bridges, are uniform and pass.)
- DCGM where installed: ``dcgmi diag -r 1`` (the quick run level); a ``Fail`` in its
  report fails the node.
- Bandwidth: nccl-tests ``all_reduce_perf -b 8 -e <max> -f 2 -g <gpus>`` on the node (one
  process driving every GPU), and across the sweep's largest allocation with one task per
  GPU under srun. Its table rows: size, count, type, redop, root, then time (us), algbw,
  busbw (GB/s) and #wrong out of place, then the same in place; ``# Avg bus bandwidth``
  closes the output.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

from llmbench.core.yamlfile import load_yaml_text
from llmbench.telemetry.nvidia_smi import field_name, value_number

HEALTH_FIELDS = (
    "index",
    "name",
    "pci.bus_id",
    "ecc.errors.uncorrected.volatile.total",
    "retired_pages.pending",
    "clocks.sm",
    "clocks.max.sm",
    "pcie.link.width.current",
    "pcie.link.width.max",
)
NCCL_TESTS_BINARY = "all_reduce_perf"
ALLTOALL_BINARY = "alltoall_perf"


def health_command() -> list[str]:
    return ["nvidia-smi", f"--query-gpu={','.join(HEALTH_FIELDS)}", "--format=csv"]


def nvlink_command() -> list[str]:
    return ["nvidia-smi", "nvlink", "--status"]


_GPU_LINE = re.compile(r"^GPU (\d+):")
_LINK_LINE = re.compile(r"^\s*Link (\d+):\s*(.+?)\s*$")


def parse_nvlink_status(text: str) -> tuple[int, list[str]]:
    """(links seen, problems) of ``nvidia-smi nvlink --status`` output (see above)."""
    links: dict[str, list[float]] = {}  # GPU -> speed of each link in GB/s, 0 when down
    gpu = None
    for line in text.splitlines():
        if match := _GPU_LINE.match(line):
            gpu = f"GPU {match.group(1)}"
            links[gpu] = []
        elif gpu is not None and (match := _LINK_LINE.match(line)):
            speed = value_number(match.group(2).removesuffix("GB/s"))
            links[gpu].append(0.0 if math.isnan(speed) else speed)
    seen = sum(len(speeds) for speeds in links.values())
    if not seen:
        return 0, []
    most_active = max(sum(1 for v in speeds if v > 0) for speeds in links.values())
    fastest = max(max(speeds, default=0.0) for speeds in links.values())
    problems = []
    for gpu, speeds in links.items():
        active = [v for v in speeds if v > 0]
        if len(active) < most_active:
            problems.append(f"{gpu}: NVLink {len(active)} of {most_active} links active")
        if active and min(active) < fastest:
            problems.append(f"{gpu}: NVLink at {min(active):g} GB/s of {fastest:g}")
    return seen, problems


def dcgm_command() -> list[str]:
    return ["dcgmi", "diag", "-r", "1"]


def nccl_single_node_command(gpus: int, max_bytes: int) -> list[str]:
    """nccl-tests on one node: one process, ``gpus`` GPUs, 8 B to ``max_bytes``."""
    return [NCCL_TESTS_BINARY, "-b", "8", "-e", str(max_bytes), "-f", "2", "-g", str(gpus)]


def alltoall_single_node_command(gpus: int, max_bytes: int) -> list[str]:
    """nccl-tests' alltoall on one node, like ``nccl_single_node_command``: its busbw is
    algbw x (n - 1) / n, and its table has the same columns (``redop none``, ``root -1``)."""
    return [ALLTOALL_BINARY, "-b", "8", "-e", str(max_bytes), "-f", "2", "-g", str(gpus)]


def nccl_multi_node_command(nodes: int, gpus_per_node: int, max_bytes: int) -> list[str]:
    """nccl-tests across ``nodes`` nodes: one srun task (MPI rank) per GPU, run with
    ``-g 1`` (each rank drives its own GPU); container options go after ``--mpi``."""
    return [
        "srun", f"--nodes={nodes}", f"--ntasks-per-node={gpus_per_node}", "--mpi=pmix",
        NCCL_TESTS_BINARY, "-b", "8", "-e", str(max_bytes), "-f", "2", "-g", "1",
    ]  # fmt: skip


@dataclass(frozen=True)
class HealthReport:
    gpus: int
    problems: list[str] = field(default_factory=list)
    names: list[str] = field(default_factory=list)


def parse_health_csv(lines: Iterable[str], expected_gpus: int) -> HealthReport:
    """Judge the health query's output: every problem found, one phrase each."""
    rows: list[dict[str, str]] = []
    fields: list[str] = []
    for line in lines:
        cells = [c.strip() for c in line.strip().split(",")]
        if not line.strip():
            continue
        if cells[0] == "index":
            fields = [field_name(c) for c in cells]
        elif fields and len(cells) == len(fields):
            rows.append(dict(zip(fields, cells, strict=True)))
    problems = []
    if len(rows) != expected_gpus:
        problems.append(f"{len(rows)} of {expected_gpus} GPUs visible")
    for row in rows:
        gpu = f"GPU {row.get('index', '?')}"
        ecc = value_number(row.get("ecc.errors.uncorrected.volatile.total", ""))
        if ecc > 0:
            problems.append(f"{gpu}: {int(ecc)} uncorrected ECC errors")
        if row.get("retired_pages.pending", "").lower() == "yes":
            problems.append(f"{gpu}: retired pages pending (reset needed)")
        width = value_number(row.get("pcie.link.width.current", ""))
        widest = value_number(row.get("pcie.link.width.max", ""))
        if width < widest:
            problems.append(f"{gpu}: PCIe link x{int(width)} of x{int(widest)}")
    return HealthReport(len(rows), problems, [row.get("name", "") for row in rows])


DCGM_RESULTS = ("pass", "fail", "warn", "skip")
"""The words a ``dcgmi diag`` test result starts with (its table's second column)."""


def dcgm_results(text: str) -> list[tuple[str, str]]:
    """(test, result) of each row of ``dcgmi diag``'s table (``| <test> | <result> |``);
    none in an empty or unreadable report."""
    rows = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 2 and cells[1].lower().startswith(DCGM_RESULTS):
            rows.append((cells[0], cells[1]))
    return rows


def dcgm_failures(text: str) -> list[str]:
    """Tests ``dcgmi diag`` reports as failed (its table: ``| <test> | Fail ... |``)."""
    return [test for test, result in dcgm_results(text) if result.lower().startswith("fail")]


_ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+\S+\s+\S+\s+-?\d+\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)")
_AVG = re.compile(r"#\s*Avg bus bandwidth\s*:\s*([0-9.]+)")


@dataclass(frozen=True)
class NcclTestResult:
    points: list[dict[str, float]]  # size_bytes, time_s, algbw_gbps, busbw_gbps (out of place)
    avg_busbw_gbps: float
    wrong: int


def parse_nccl_tests(text: str) -> NcclTestResult:
    """The out-of-place columns of an ``all_reduce_perf`` table and its average."""
    points, wrong = [], 0
    for line in text.splitlines():
        match = _ROW.match(line)
        if not match:
            continue
        size, _, time_us, algbw, busbw, errors = match.groups()
        points.append(
            {
                "size_bytes": float(size),
                "time_s": value_number(time_us) / 1e6,
                "algbw_gbps": value_number(algbw),
                "busbw_gbps": value_number(busbw),
            }
        )
        wrong += int(errors) if errors.isdigit() else 1
    avg = _AVG.search(text)
    return NcclTestResult(points, float(avg.group(1)) if avg else math.nan, wrong)


@cache
def expected_bandwidth() -> dict[str, dict[str, Any]]:
    """Expected bus bandwidth per GPU type (``expected.yaml``, with its sources)."""
    text = resources.files("llmbench").joinpath("preflight/expected.yaml").read_text()
    return load_yaml_text(text, "expected.yaml", fast=True)
