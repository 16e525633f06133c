"""The kit's step 2: the GPU preflight's single-node checks on this machine.

On GPUs: the preflight's health query (ECC, retired pages, PCIe width, SM clocks),
``nvidia-smi nvlink --status``, an all-reduce across every GPU present and
``dcgmi diag -r 1``, in that order, each with its own time limit, so that a slow
diagnostic cannot cost the bandwidth figure. The all-reduce is nccl-tests'
``all_reduce_perf`` where it is installed, else a torch.distributed NCCL all-reduce, one
process per GPU (``llmbench.preflight.allreduce``). The outputs are judged by the
preflight's own ``gpu_result``. On a machine without GPUs (the kit's dry mode): the
preflight's CPU check, a gloo all-reduce and alltoall between two local ranks; the GPU checks are
listed as skipped, with why. Every tool runs as the preflight runs it
(``llmbench.preflight.sections``): its output read as bytes up to a bound, stopped with what
it started at its limit, and a tool that fails, hangs or prints garbage is a problem named
in ``node.json``.

With one GPU an all-reduce crosses no link: its bus bandwidth, algbw x 2 (n - 1) / n, is 0
by definition and is not reported; the run still shows that NCCL starts and completes a
collective on the GPU.
"""

from __future__ import annotations

import math
import shutil
import socket
from pathlib import Path
from typing import Any

from llmbench.core.devices import embedded_kind
from llmbench.core.preflight_settings import PreflightSettings
from llmbench.files.atomic import write_json_atomic
from llmbench.files.tool_output import run_tool
from llmbench.preflight.allreduce import measure_allreduce
from llmbench.preflight.gpu import (
    NCCL_TESTS_BINARY,
    dcgm_command,
    health_command,
    nccl_single_node_command,
    nvlink_command,
)
from llmbench.preflight.node import cpu_preflight, gpu_result, message_sizes
from llmbench.preflight.sections import SECTION, endings, run_section, sections
from llmbench.telemetry.nvidia_smi import field_name

NODE_FILE = "node.json"
LOG_FILE = "preflight.log"
QUERY_TIMEOUT_S = 10
ALLREDUCE_TIMEOUT_S = 30
DCGM_TIMEOUT_S = 20
"""Each check's limit: together within the kit's node step (75 s), with the processes'
start; a diagnostic that takes longer is listed as not completed, not as a fault."""
DCGM_CHECK = "dcgmi diag -r 1"
GPU_MAX_MESSAGE_BYTES = 256 << 20
"""Largest all-reduce message on GPUs: near the bus's plateau and seconds to run."""
CPU_MAX_MESSAGE_BYTES = 1 << 20
ITERATIONS = 5
TORCH_NCCL_CHECK = "torch.distributed NCCL all-reduce"
NCCL_TESTS_CHECK = "nccl-tests all_reduce_perf"
ALLTOALL_CHECK = "nccl-tests alltoall_perf"


def gpu_count() -> tuple[int, str]:
    """(GPUs ``nvidia-smi -L`` lists, why none where it lists none)."""
    if shutil.which("nvidia-smi") is None:
        return 0, "nvidia-smi is not installed"
    run = run_tool(["nvidia-smi", "-L"], QUERY_TIMEOUT_S)
    count = sum(1 for line in run.text.splitlines() if line.startswith("GPU "))
    if count:
        return count, ""
    return 0, run.problem or "nvidia-smi -L lists none"


def gpu_table(health_text: str) -> list[dict[str, str]]:
    """Each GPU of the health query's CSV: index, name, SM clock now and at most (the
    header names the current clock ``clocks.current.sm``)."""
    rows, fields = [], []
    for line in health_text.splitlines():
        cells = [c.strip() for c in line.split(",")]
        if cells[0] == "index":
            fields = [field_name(c) for c in cells]
        elif fields and len(cells) == len(fields):
            row = dict(zip(fields, cells, strict=True))
            rows.append(
                {
                    "index": row.get("index", ""),
                    "name": row.get("name", ""),
                    "sm_clock": row.get("clocks.current.sm", row.get("clocks.sm", "")),
                    "max_sm_clock": row.get("clocks.max.sm", ""),
                }
            )
    return rows


def _settings(gpu_type: str, ranks: int, max_bytes: int) -> PreflightSettings:
    return PreflightSettings(
        enabled=True,
        nodes=(socket.gethostname().split(".")[0],),
        gpu_type=gpu_type,
        ranks=ranks,
        nodes_needed=1,
        max_message_bytes=max_bytes,
        min_fraction=0.7,
        iterations=ITERATIONS,
    )


def _nccl_points(settings: PreflightSettings) -> tuple[list[dict[str, Any]], str | None]:
    try:
        points = measure_allreduce(
            settings.nodes[0],
            settings.ranks,
            message_sizes(settings.max_message_bytes),
            settings.iterations,
            timeout_s=ALLREDUCE_TIMEOUT_S,
            backend="nccl",
        )
    except (RuntimeError, OSError) as exc:
        return [], f"{TORCH_NCCL_CHECK} failed: {exc}"
    return [p.as_dict() for p in points], None


def gpu_checks(folder: Path, gpus: int) -> dict[str, Any]:
    """Every check on this machine's ``gpus`` GPUs (see the module docstring)."""
    settings = _settings(embedded_kind(gpus=True), gpus, GPU_MAX_MESSAGE_BYTES)
    outputs: dict[str, str] = {}
    problems: list[str] = []
    skipped: list[str] = []
    points: list[dict[str, Any]] = []
    for name, command in (("health", health_command()), ("nvlink", nvlink_command())):
        outputs[name] = run_section(name, command, QUERY_TIMEOUT_S)
    has_nccl_tests = shutil.which(NCCL_TESTS_BINARY) is not None
    if has_nccl_tests:
        command = nccl_single_node_command(gpus, settings.max_message_bytes)
        outputs["nccl"] = run_section("nccl", command, ALLREDUCE_TIMEOUT_S)
    else:
        skipped.append(f"{NCCL_TESTS_CHECK}: not installed; {TORCH_NCCL_CHECK} instead")
        points, problem = _nccl_points(settings)
        problems += [problem] if problem else []
    not_judged = []
    if shutil.which("dcgmi") is None:
        outputs["dcgm"] = f"{SECTION}dcgm\ndcgmi not installed\n"
        skipped.append(f"{DCGM_CHECK}: dcgmi not installed")
    else:
        outputs["dcgm"] = run_section("dcgm", dcgm_command(), DCGM_TIMEOUT_S)
        if endings(outputs["dcgm"]).get("dcgm", ("",))[0] == "timeout":
            not_judged.append("dcgm")  # a slow diagnostic is not a fault (module docstring)
            skipped.append(f"{DCGM_CHECK}: not completed within the kit's {DCGM_TIMEOUT_S} s")
    text = "".join(outputs.values())
    (folder / LOG_FILE).write_text(text)
    result = gpu_result(settings.nodes[0], settings, text, not_judged)
    if not has_nccl_tests:  # the preflight judged an empty nccl-tests section
        result["checks"] = [c for c in result["checks"] if c != NCCL_TESTS_CHECK]
        result["checks"].append(TORCH_NCCL_CHECK)
        result["problems"] = [p for p in result["problems"] if "all_reduce_perf" not in p]
        result["points"] = points
        result["busbw_gbps"] = points[-1]["busbw_gbps"] if points else None
    # the kit measures the all-reduce only: preflight's alltoall_perf is not run here
    result["checks"] = [c for c in result["checks"] if c != ALLTOALL_CHECK]
    skipped.append(f"{ALLTOALL_CHECK}: not run by the kit (preflight runs it)")
    if not_judged:
        result["checks"] = [c for c in result["checks"] if c != DCGM_CHECK]
    result["problems"] += problems
    result["gpus"] = gpu_table(sections(text).get("health", ""))
    return {**result, "skipped": skipped, **_bandwidth_note(result, gpus)}


def _bandwidth_note(result: dict[str, Any], ranks: int) -> dict[str, Any]:
    """The bandwidth figure as the summary reports it: none for a single rank."""
    points = result.get("points") or []
    largest = max(points, key=lambda p: p["size_bytes"], default=None)
    out: dict[str, Any] = {
        "ranks": ranks,
        "algbw_gbps": largest["algbw_gbps"] if largest else None,
        "max_message_bytes": int(largest["size_bytes"]) if largest else None,
    }
    if ranks == 1:
        out["busbw_gbps"] = None
        out["busbw_note"] = (
            "1 GPU: an all-reduce crosses no link, so its bus bandwidth "
            "(algbw x 2(n-1)/n) is 0 by definition; the collective ran"
            + (" and completed" if largest else " but gave no result")
        )
    return out


def cpu_checks() -> dict[str, Any]:
    """The preflight's CPU check (gloo between two local ranks) and the GPU checks as
    skipped."""
    settings = _settings(embedded_kind(gpus=False), 2, CPU_MAX_MESSAGE_BYTES)
    result = cpu_preflight(settings.nodes[0], settings)
    skipped = [
        "nvidia-smi health, clocks and NVLink: no NVIDIA GPU",
        "dcgmi diag -r 1: no NVIDIA GPU",
        "NCCL all-reduce: no NVIDIA GPU; gloo between 2 CPU ranks instead",
    ]
    return {**result, "skipped": skipped, **_bandwidth_note(result, settings.ranks)}


def node_checks(folder: Path, gpu: bool) -> dict[str, Any]:
    """Run the checks for this machine's GPUs (``gpu``; none found is a problem), else
    the CPU's; write ``node.json`` into ``folder`` and return it, with ``status`` ``ok``
    or ``problems``."""
    folder.mkdir(parents=True, exist_ok=True)
    gpus, why_none = gpu_count() if gpu else (0, "")
    if gpus:
        result = gpu_checks(folder, gpus)
    elif gpu:
        problem = f"no NVIDIA GPU: {why_none}"
        result = {"checks": [], "skipped": [], "points": [], "problems": [problem]}
    else:
        result = cpu_checks()
    busbw = result.get("busbw_gbps")
    if busbw is not None and not (math.isfinite(busbw) and busbw > 0):
        result["problems"].append(
            f"all-reduce bus bandwidth {busbw!r} GB/s is not a positive number"
        )
    result["status"] = "problems" if result["problems"] else "ok"
    write_json_atomic(folder / NODE_FILE, result)
    return result
