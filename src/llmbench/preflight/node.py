"""One node's preflight: what the ``preflight_node`` job runs on that node.

CPU nodes: the gloo all-reduce and alltoall tests between local ranks (``allreduce``).
GPU nodes: a rendered ``preflight.sh`` (health query, ECC and row remapping, NVLink,
``dcgmi diag -r 1`` where DCGM is installed, ``srun --mpi=list`` where a launch needs
pmix, nccl-tests ``all_reduce_perf`` and ``alltoall_perf`` in the workload's image
through pyxis where the sweep uses one), whose sections are parsed into the same result.
Both run the node checks of ``checks`` (Xid, CPU governor, IMEX, fabric devices ...).
"""

from __future__ import annotations

import subprocess
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from llmbench.launch.shell import Raw, Word, join
from llmbench.preflight.allreduce import measure_allreduce
from llmbench.preflight.checks import (
    ecc_command,
    fabric_devices,
    node_checks,
    node_root,
)
from llmbench.preflight.gpu import (
    alltoall_single_node_command,
    dcgm_command,
    dcgm_failures,
    expected_bandwidth,
    health_command,
    nccl_multi_node_command,
    nccl_single_node_command,
    nvlink_command,
    parse_health_csv,
    parse_nccl_tests,
    parse_nvlink_status,
)
from llmbench.spec.preflight_settings import PreflightSettings

SECTION = "### llmbench preflight: "
SCRIPT_TIMEOUT_S = 1800


def message_sizes(max_bytes: int, factor: int = 8) -> list[int]:
    sizes, size = [], 8
    while size < max_bytes:
        sizes.append(size)
        size *= factor
    return [*sizes, max_bytes]


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _checked(
    node: str, settings: PreflightSettings, sections: dict[str, str] | None
) -> dict[str, Any]:
    """The node checks' part of a result: each check, and the fabric found."""
    root = node_root(settings.root, node)
    checks = node_checks(root, settings.gpu_type, sections, pmix_needed=settings.fabric)
    return {"node_checks": [c.as_dict() for c in checks], "fabric": fabric_devices(root)[0]}


def cpu_preflight(node: str, settings: PreflightSettings) -> dict[str, Any]:
    sizes = message_sizes(settings.max_message_bytes)
    result: dict[str, Any] = {
        "node": node,
        "checks": ["gloo all-reduce", "gloo alltoall"],
        "measured_at": _now(),
        **_checked(node, settings, None),
    }
    try:
        points = measure_allreduce(node, settings.ranks, sizes, settings.iterations)
        alltoall = measure_allreduce(
            node, settings.ranks, sizes, settings.iterations, collective="alltoall"
        )
    except (RuntimeError, OSError) as exc:
        return {**result, "problems": [f"all-reduce test failed: {exc}"], "points": []}
    return {
        **result,
        "problems": [],
        "points": [p.as_dict() for p in points],
        "busbw_gbps": points[-1].busbw_gbps,
        "alltoall_points": [p.as_dict() for p in alltoall],
        "alltoall_busbw_gbps": alltoall[-1].busbw_gbps,
    }


def _container(image: str) -> list[Word]:
    """pyxis options: nccl-tests ship in the NGC framework images."""
    return [
        Raw(f'--container-image="${{LLMBENCH_IMAGE:-{image}}}"'),
        "--no-container-mount-home",
    ]


def render_gpu_preflight(settings: PreflightSettings, image: str | None) -> str:
    """``preflight.sh`` of a GPU node: each check's output under its own section line."""
    tests = {
        "nccl": nccl_single_node_command(settings.ranks, settings.max_message_bytes),
        "alltoall": alltoall_single_node_command(settings.ranks, settings.max_message_bytes),
    }
    commands: dict[str, list[Word]] = {}
    for name, command in tests.items():
        commands[name] = [*command]
        if image:
            srun = ["srun", "--ntasks=1", f"--gpus-per-task={settings.ranks}"]
            commands[name] = [*srun, *_container(image), *command]
    pmix = [f"echo '{SECTION}pmix'", "srun --mpi=list 2>&1 || true"] if settings.fabric else []
    return "\n".join(
        [
            "#!/usr/bin/env bash",
            "# llmbench GPU node preflight: health, ECC, NVLink, DCGM, one-node bandwidth.",
            "set -uo pipefail",
            f"echo '{SECTION}health'",
            join(health_command()),
            f"echo '{SECTION}ecc'",
            f"{join(ecc_command())} || true",
            f"echo '{SECTION}nvlink'",
            f"{join(nvlink_command())} || true",
            f"echo '{SECTION}dcgm'",
            f"if command -v dcgmi >/dev/null; then {join(dcgm_command())}; "
            "else echo 'dcgmi not installed'; fi",
            *pmix,
            f"echo '{SECTION}nccl'",
            join(commands["nccl"]),
            f"echo '{SECTION}alltoall'",
            f"{join(commands['alltoall'])} || true",
            "",
        ]
    )


def sections(text: str) -> dict[str, str]:
    out: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        if line.startswith(SECTION):
            current = line[len(SECTION) :].strip()
            out[current] = []
        elif current is not None:
            out[current].append(line)
    return {name: "\n".join(lines) for name, lines in out.items()}


def gpu_result(node: str, settings: PreflightSettings, output: str) -> dict[str, Any]:
    """Judge a GPU node from its ``preflight.sh`` output."""
    parts = sections(output)
    health = parse_health_csv(parts.get("health", "").splitlines(), settings.ranks)
    problems = list(health.problems)
    checks = ["nvidia-smi health"]
    links, link_problems = parse_nvlink_status(parts.get("nvlink", ""))
    if links:
        checks.append("nvidia-smi nvlink --status")
        problems += link_problems
    dcgm = parts.get("dcgm", "")
    if "dcgmi not installed" not in dcgm:
        checks.append("dcgmi diag -r 1")
        problems += [f"DCGM {test}: Fail" for test in dcgm_failures(dcgm)]
    nccl = parse_nccl_tests(parts.get("nccl", ""))
    checks.append("nccl-tests all_reduce_perf")
    if not nccl.points:
        problems.append("all_reduce_perf printed no result")
    if nccl.wrong:
        problems.append(f"all_reduce_perf: {nccl.wrong} wrong results")
    largest = max(nccl.points, key=lambda p: p["size_bytes"], default=None)
    alltoall = parse_nccl_tests(parts.get("alltoall", ""))
    checks.append("nccl-tests alltoall_perf")
    widest = max(alltoall.points, key=lambda p: p["size_bytes"], default=None)
    if alltoall.wrong:
        problems.append(f"alltoall_perf: {alltoall.wrong} wrong results")
    return {
        "node": node,
        "checks": checks,
        "problems": problems,
        "points": nccl.points,
        "busbw_gbps": largest["busbw_gbps"] if largest else None,
        "avg_busbw_gbps": nccl.avg_busbw_gbps,
        "alltoall_points": alltoall.points,
        "alltoall_busbw_gbps": widest["busbw_gbps"] if widest else None,
        "gpu_names": health.names,
        "measured_at": _now(),
        **_checked(node, settings, parts),
    }


def node_preflight(
    node: str, settings: PreflightSettings, folder: Path, image: str | None = None
) -> dict[str, Any]:
    """Run this node's checks (the rule's body); its files go to ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    if settings.gpu_type == "cpu":
        return cpu_preflight(node, settings)
    script = folder / "preflight.sh"
    script.write_text(render_gpu_preflight(settings, image))
    output = _run_script(script)
    (folder / "preflight.log").write_text(output)
    return gpu_result(node, settings, output)


def render_fabric(settings: PreflightSettings, image: str | None) -> str:
    """``fabric.sh``: nccl-tests across the sweep's largest allocation (its nodes come
    from the job: the gate's excluded nodes are left out of it)."""
    command: list[Word] = [
        *nccl_multi_node_command(settings.nodes_needed, settings.ranks, settings.max_message_bytes)
    ]
    if image:
        command = [*command[:4], *_container(image), *command[4:]]
    return "\n".join(
        [
            "#!/usr/bin/env bash",
            "# llmbench preflight: all-reduce across the sweep's largest allocation.",
            "set -uo pipefail",
            join(command),
            "",
        ]
    )


def fabric_result(settings: PreflightSettings, output: str) -> dict[str, Any]:
    """Judge the multi-node all-reduce against the GPU type's network figure."""
    nccl = parse_nccl_tests(output)
    known = expected_bandwidth().get(settings.gpu_type, {})
    expected = float(known.get("inter_node_busbw_gbps", "nan"))
    largest = max(nccl.points, key=lambda p: p["size_bytes"], default=None)
    busbw = largest["busbw_gbps"] if largest else None
    problems = []
    if busbw is None:
        problems.append("multi-node all_reduce_perf printed no result")
    elif nccl.wrong:
        problems.append(f"multi-node all_reduce_perf: {nccl.wrong} wrong results")
    elif busbw < settings.min_fraction * expected:
        problems.append(
            f"multi-node all-reduce bus bandwidth {busbw:.3g} GB/s below "
            f"{settings.min_fraction:.0%} of the expected {expected:.3g} GB/s"
        )
    return {
        "nodes": settings.nodes_needed,
        "busbw_gbps": busbw,
        "expected_busbw_gbps": expected,
        "expected_source": known.get("source", ""),
        "points": nccl.points,
        "problems": problems,
        "measured_at": _now(),
    }


def fabric_preflight(
    settings: PreflightSettings, folder: Path, image: str | None
) -> dict[str, Any]:
    """Run ``fabric.sh`` in the allocation and judge it (the fabric rule's body)."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "fabric.sh"
    script.write_text(render_fabric(settings, image))
    output = _run_script(script)
    (folder / "fabric.log").write_text(output)
    return fabric_result(settings, output)


def _run_script(script: Path) -> str:
    try:
        proc = subprocess.run(
            ["bash", str(script)], capture_output=True, text=True, timeout=SCRIPT_TIMEOUT_S
        )
    except subprocess.TimeoutExpired:
        return ""
    return proc.stdout + proc.stderr
