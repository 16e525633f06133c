"""One node's preflight: what the ``preflight_node`` job runs on that node.

CPU nodes: the gloo all-reduce and alltoall tests between local ranks (``allreduce``).
GPU nodes: the health query, ECC and row remapping, NVLink, ``dcgmi diag -r 1`` where
DCGM is installed, ``srun --mpi=list`` where a launch needs pmix, nccl-tests
``all_reduce_perf`` and ``alltoall_perf`` in the workload's image through pyxis where the
sweep uses one. Each tool runs under its own time limit (``CHECK_LIMITS_S``) with its
output read as bytes up to a bound (``llmbench.files.tool_output``); its output and how it
ended go to ``preflight.log`` (``llmbench.preflight.sections``), which ``gpu_result``
judges: a tool that hangs, fails or prints too much is a problem on the node, never a
crash of the check. The same commands are written to ``preflight.sh`` beside it, with the
same limits, to run again by hand. Both node kinds run the node checks of ``checks``
(Xid, CPU governor, IMEX, fabric devices ...).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Collection, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from llmbench.core.devices import device
from llmbench.core.preflight_settings import PreflightSettings
from llmbench.errors import LlmbenchError
from llmbench.files.atomic import write_json_atomic
from llmbench.files.tool_output import MAX_OUTPUT_BYTES, run_tool
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
    dcgm_results,
    expected_bandwidth,
    health_command,
    nccl_multi_node_command,
    nccl_single_node_command,
    nvlink_command,
    parse_health_csv,
    parse_nccl_tests,
    parse_nvlink_status,
)
from llmbench.preflight.sections import SECTION, endings, run_section, sections

CHECK_LIMITS_S = {
    "health": 60,
    "ecc": 60,
    "nvlink": 60,
    "dcgm": 180,
    "pmix": 60,
    "nccl": 600,
    "alltoall": 600,
}
"""Each GPU check's time limit: a query answers in seconds, ``dcgmi diag -r 1`` (the quick
level) in well under a minute, nccl-tests up to 8 GiB in a few minutes; together with the
job's start, within the preflight_node job's 30 minutes."""
EXIT_JUDGED = frozenset({"health", "ecc", "dcgm", "nccl"})
"""Checks whose exit status other than 0 is a problem; NVLink's status query, pmix's list
and alltoall_perf (absent from some images) are judged by what they print."""
FABRIC_TIMEOUT_S = 1680
"""The multi-node all-reduce's limit, within the fabric job's 30 minutes."""
DCGM_MISSING = "dcgmi not installed"


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


def _image_argument(image: str) -> list[Word]:
    """``_container`` as the job runs it: the image ``LLMBENCH_IMAGE`` names, else the sweep's."""
    return [
        f"--container-image={os.environ.get('LLMBENCH_IMAGE') or image}",
        "--no-container-mount-home",
    ]


def gpu_commands(
    settings: PreflightSettings,
    image: str | None,
    container: Callable[[str], list[Word]] = _image_argument,
) -> dict[str, list[Word]]:
    """The GPU checks' commands by section name, in the order they run; ``container``
    words the image (``_container`` in the script)."""
    commands: dict[str, list[Word]] = {
        "health": [*health_command()],
        "ecc": [*ecc_command()],
        "nvlink": [*nvlink_command()],
        "dcgm": [*dcgm_command()],
    }
    if settings.fabric:
        commands["pmix"] = ["srun", "--mpi=list"]
    tests = {
        "nccl": nccl_single_node_command(settings.ranks, settings.max_message_bytes),
        "alltoall": alltoall_single_node_command(settings.ranks, settings.max_message_bytes),
    }
    for name, command in tests.items():
        commands[name] = [*command]
        if image:
            srun = ["srun", "--ntasks=1", f"--gpus-per-task={settings.ranks}"]
            commands[name] = [*srun, *container(image), *command]
    return commands


def render_gpu_preflight(settings: PreflightSettings, image: str | None) -> str:
    """``preflight.sh`` of a GPU node: the commands the node's preflight runs, each under
    its time limit (``timeout``: the command and what it started are stopped), written
    beside its result to run again by hand."""
    lines = [
        "#!/usr/bin/env bash",
        "# llmbench GPU node preflight: health, ECC, NVLink, DCGM, one-node bandwidth.",
        "# What the preflight_node job ran, each check under its own time limit.",
        "set -uo pipefail",
    ]
    for name, command in gpu_commands(settings, image, _container).items():
        limited = f"timeout -k 5 {CHECK_LIMITS_S[name]} {join(command)}"
        if name == "dcgm":
            limited = (
                f"if command -v dcgmi >/dev/null; then {limited}; else echo '{DCGM_MISSING}'; fi"
            )
        lines += [f"echo '{SECTION}{name}'", limited]
    return "\n".join([*lines, ""])


def run_gpu_checks(settings: PreflightSettings, image: str | None) -> str:
    """Run each GPU check (``gpu_commands``) under its limit; ``preflight.log``'s text."""
    out = []
    for name, command in gpu_commands(settings, image).items():
        if name == "dcgm" and shutil.which("dcgmi") is None:
            out.append(f"{SECTION}{name}\n{DCGM_MISSING}\n")
            continue
        out.append(run_section(name, command, CHECK_LIMITS_S[name]))
    return "".join(out)


def ending_problems(output: str, not_judged: Collection[str] = ()) -> list[str]:
    """The checks whose tool timed out, printed too much, or (``EXIT_JUDGED``) failed or
    was missing, each in one phrase naming the command."""
    problems = []
    for name, (ending, phrase) in endings(output).items():
        if name in not_judged or ending == "ok":
            continue
        if ending in ("timeout", "overflow") or name in EXIT_JUDGED:
            problems.append(phrase)
    return problems


def gpu_result(
    node: str, settings: PreflightSettings, output: str, not_judged: Collection[str] = ()
) -> dict[str, Any]:
    """Judge a GPU node from its ``preflight.log`` (``sections`` and how each tool ended;
    ``not_judged``: checks whose ending is not a problem)."""
    parts = sections(output)
    health = parse_health_csv(parts.get("health", "").splitlines(), settings.ranks)
    problems = [*ending_problems(output, not_judged), *health.problems]
    checks = ["nvidia-smi health"]
    links, link_problems = parse_nvlink_status(parts.get("nvlink", ""))
    if links:
        checks.append("nvidia-smi nvlink --status")
        problems += link_problems
    dcgm = parts.get("dcgm", "")
    if DCGM_MISSING not in dcgm:
        checks.append("dcgmi diag -r 1")
        problems += [f"DCGM {test}: Fail" for test in dcgm_failures(dcgm)]
        if not dcgm_results(dcgm) and "dcgm" not in not_judged:
            problems.append("dcgmi diag -r 1 printed no test result")
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
    if not device(settings.gpu_type).has_gpus:
        return cpu_preflight(node, settings)
    (folder / "preflight.sh").write_text(render_gpu_preflight(settings, image))
    output = run_gpu_checks(settings, image)
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
    """Run ``fabric.sh`` in the allocation and judge it."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "fabric.sh"
    script.write_text(render_fabric(settings, image))
    run = run_tool(["bash", str(script)], FABRIC_TIMEOUT_S, MAX_OUTPUT_BYTES)
    (folder / "fabric.log").write_text(run.text)
    result = fabric_result(settings, run.text)
    if run.ending in ("timeout", "overflow"):
        result["problems"].insert(0, run.problem)
    return result


def fabric_stop(result: Mapping[str, Any]) -> str | None:
    """The line that stops the sweep before its largest run starts (the fabric's problems:
    that run cannot run well here); None when the fabric passes."""
    problems = result["problems"]
    return f"preflight: {'; '.join(problems)}" if problems else None


def fabric_job(settings: PreflightSettings, output: Path, image: str | None) -> dict[str, Any]:
    """The fabric rule's body: run and judge the check in the folder named ``output``
    without its suffix, then write the result to ``output``; a fabric that fails raises
    ``LlmbenchError`` (``fabric_stop``'s line) and writes no result."""
    result = fabric_preflight(settings, output.with_suffix(""), image)
    stop = fabric_stop(result)
    if stop:
        raise LlmbenchError(stop)
    write_json_atomic(output, result)
    return result
