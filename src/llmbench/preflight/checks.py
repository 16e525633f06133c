"""The node checks operators run before a job, each judged pass, warn or exclude by the
rules of ``checks.yaml`` (docs/preflight.md).

What a check reads of the node comes from two places, so that tests point the same code
at real files: files under a root folder (``preflight.root``, ``/`` on a real node, ``%n``
replaced by the node's name), and the output of commands (``nvidia-smi``, ``srun``) that
``preflight.sh`` runs on GPU nodes:

- Xid events since boot: the kernel's log, ``<root>/dev/kmsg`` (records
  ``<prio>,<seq>,<usec>,<flags>;<text>``), where the driver writes ``NVRM: Xid
  (PCI:<bus>): <code>, [pid=<pid>, name=<name>, ]<text>``; each code's NVIDIA action from
  ``xid.yaml``;
- ECC and row remapping: ``nvidia-smi -q -d ECC,ROW_REMAPPER`` (per GPU ``ECC Errors`` /
  ``Volatile`` and ``Aggregate`` / ``DRAM Uncorrectable`` ..., ``Remapped Rows`` /
  ``Uncorrectable Error``, ``Pending``, ``Remapping Failure Occurred``);
- the CPU frequency governor: ``<root>/sys/devices/system/cpu/cpu*/cpufreq/scaling_governor``;
- on GB200/GB300, the IMEX channel ``<root>/dev/nvidia-caps-imex-channels/channel<N>``
  and the node's NVLink links up (``nvidia-smi nvlink --status``, one ``Link <k>: <speed>
  GB/s`` line per link that is up);
- pmix for srun (``srun --mpi=list``: ``MPI plugin types are...`` then one plugin per
  line) where a launch uses ``--mpi=pmix``;
- the inter-node fabric's devices: ``<root>/sys/class/infiniband/<dev>``, the driver
  under ``device/driver`` (``efa`` for AWS EFA, else IB verbs: InfiniBand or RoCE).
"""

from __future__ import annotations

import errno
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from llmbench.core.devices import device
from llmbench.core.yamlfile import load_yaml_text
from llmbench.files.regular_file import read_regular

STATUSES = ("pass", "warn", "exclude", "skipped")
KMSG = "dev/kmsg"
GOVERNORS = "sys/devices/system/cpu"
IMEX_CHANNELS = "dev/nvidia-caps-imex-channels"
INFINIBAND = "sys/class/infiniband"
GOVERNOR_MAX_BYTES = 4096
"""A governor's name is a word; sysfs files are at most a page."""
KMSG_LIMIT_BYTES = 64 << 20
"""The kernel's ring buffer is a few MiB; a root folder's file is read no further."""

_XID = re.compile(r"NVRM: Xid \(PCI:([0-9a-fA-F:.]+)\): (\d+), (.*)")
_NONFATAL = re.compile(r"\bNonfatal\b")


@dataclass(frozen=True)
class Check:
    """One check's verdict on one node, and why."""

    name: str
    status: str  # pass | warn | exclude | skipped
    detail: str

    def as_dict(self) -> dict[str, str]:
        return asdict(self)


@cache
def rules() -> dict[str, Any]:
    """``checks.yaml``: what each check does with what it finds."""
    text = resources.files("llmbench").joinpath("preflight/checks.yaml").read_text()
    return load_yaml_text(text, "checks.yaml", fast=True)


@cache
def xid_catalog() -> dict[str, Any]:
    """``xid.yaml``: NVIDIA's action per Xid code, with its source."""
    text = resources.files("llmbench").joinpath("preflight/xid.yaml").read_text()
    return load_yaml_text(text, "xid.yaml", fast=True)


def node_root(root: str, node: str) -> Path:
    """The node's root folder: ``preflight.root`` with ``%n`` as the node's name."""
    return Path(root.replace("%n", node))


def worst(statuses: Sequence[str]) -> str:
    order = {"skipped": 0, "pass": 1, "warn": 2, "exclude": 3}
    return max(statuses, key=order.__getitem__, default="pass")


# --- Xid -------------------------------------------------------------------------------


def read_kernel_log(root: Path) -> tuple[list[str] | None, str]:
    """The kernel log since boot from ``<root>/dev/kmsg`` (each read returns one record on
    the real device; a plain file reads whole), and why not where it cannot be read."""
    path = root / KMSG
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as err:
        return None, f"{path}: {err.strerror}"
    chunks, total = [], 0
    try:
        while total < KMSG_LIMIT_BYTES:
            try:
                chunk = os.read(fd, 8192)
            except BlockingIOError:  # the device: no more records
                break
            except OSError as err:
                if err.errno == errno.EPIPE:  # records overwritten while reading: go on
                    continue
                return None, f"{path}: {err.strerror}"
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks).decode("utf-8", errors="replace").splitlines(), ""


@dataclass(frozen=True)
class XidEvent:
    pci: str
    code: int
    text: str


def xid_events(lines: Sequence[str]) -> list[XidEvent]:
    """Every ``NVRM: Xid`` line, wherever it sits in the line (kmsg, dmesg, syslog)."""
    events = []
    for line in lines:
        if match := _XID.search(line):
            events.append(XidEvent(match.group(1), int(match.group(2)), match.group(3).strip()))
    return events


def xid_verdict(event: XidEvent) -> tuple[str, str]:
    """(status, NVIDIA's action) of one Xid by the catalog and ``checks.yaml``."""
    rule = rules()["xid"]
    known = xid_catalog()["codes"].get(event.code)
    action = (known or {}).get("action") or ""
    status = rule["by_action"].get(action, rule["unknown"])
    if status == "exclude" and _NONFATAL.search(event.text):
        status = rule["nonfatal_line"]
    return status, action or "no action listed"


def xid_check(lines: Sequence[str] | None, why_not: str = "") -> Check:
    """Xid events since boot, the worst deciding."""
    if lines is None:
        return Check("xid", rules()["xid"]["unreadable"], f"kernel log not readable ({why_not})")
    events = xid_events(lines)
    if not events:
        return Check("xid", "pass", "no Xid since boot")
    judged = [(e, *xid_verdict(e)) for e in events]
    status = worst([s for _, s, _ in judged])
    seen: dict[tuple[int, str], int] = {}
    for event, _, _ in judged:
        seen[(event.code, event.pci)] = seen.get((event.code, event.pci), 0) + 1
    parts = []
    for (code, pci), count in seen.items():
        event = next(e for e, _, _ in judged if (e.code, e.pci) == (code, pci))
        verdict, action = xid_verdict(event)
        times = f" x{count}" if count > 1 else ""
        parts.append(f"Xid {code}{times} on PCI:{pci} ({action}: {verdict}): {event.text[:80]}")
    return Check("xid", status, "; ".join(parts))


# --- ECC and row remapping (nvidia-smi -q) ----------------------------------------------

_GPU_HEADER = re.compile(r"^GPU ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])\s*$")
_FIELD = re.compile(r"^(\s*)([^:]+?)\s*:\s*(.*?)\s*$")


def ecc_command() -> list[str]:
    return ["nvidia-smi", "-q", "-d", "ECC,ROW_REMAPPER"]


def parse_nvidia_smi_q(text: str) -> dict[str, dict[str, str]]:
    """Per GPU (bus id), its fields as ``Section/Subsection/Field`` -> value, the path
    given by indentation (``ECC Errors/Volatile/DRAM Uncorrectable``)."""
    gpus: dict[str, dict[str, str]] = {}
    current: dict[str, str] | None = None
    stack: list[tuple[int, str]] = []
    for line in text.splitlines():
        if match := _GPU_HEADER.match(line.strip()):
            current = gpus.setdefault(match.group(1), {})
            stack = []
            continue
        if current is None or not line.strip() or line.strip() == "[...]":
            continue
        indent = len(line) - len(line.lstrip())
        while stack and stack[-1][0] >= indent:
            stack.pop()
        match = _FIELD.match(line)
        if match and match.group(3):
            path = "/".join([*(name for _, name in stack), match.group(2).strip()])
            current[path] = match.group(3)
        else:
            stack.append((indent, line.strip().rstrip(":").strip()))
    return gpus


def _count(value: str | None) -> int:
    try:
        return int(str(value).split()[0])
    except (ValueError, IndexError):
        return 0  # N/A: not supported on this GPU


def ecc_check(text: str) -> Check:
    """Uncorrectable ECC errors and row remapping of every GPU (``checks.yaml`` ecc)."""
    rule = rules()["ecc"]
    gpus = parse_nvidia_smi_q(text)
    if not gpus:
        return Check("ecc", "skipped", "nvidia-smi -q printed no GPU")
    found: list[tuple[str, str]] = []
    for bus, fields in gpus.items():
        for scope, key in (
            ("Volatile", "volatile_uncorrectable"),
            ("Aggregate", "aggregate_uncorrectable"),
        ):
            n = sum(
                _count(fields.get(f"ECC Errors/{scope}/{m} Uncorrectable"))
                for m in ("DRAM", "SRAM")
            )
            if n:
                found.append((rule[key], f"GPU {bus}: {n} uncorrectable ECC errors ({scope})"))
        if fields.get("Remapped Rows/Pending", "").lower() == "yes":
            found.append((rule["remapping_pending"], f"GPU {bus}: row remapping pending (reset)"))
        if fields.get("Remapped Rows/Remapping Failure Occurred", "").lower() == "yes":
            found.append((rule["remapping_failure"], f"GPU {bus}: row remapping failed"))
        rows = _count(fields.get("Remapped Rows/Uncorrectable Error"))
        if rows:
            found.append(
                (
                    rule["remapped_uncorrectable"],
                    f"GPU {bus}: {rows} rows remapped for uncorrectable errors",
                )
            )
    if not found:
        return Check(
            "ecc", "pass", f"{len(gpus)} GPUs: no uncorrectable ECC error, no row remapping due"
        )
    return Check("ecc", worst([s for s, _ in found]), "; ".join(d for _, d in found))


# --- CPU governor, IMEX, NVLink, pmix, fabric devices --------------------------------------


def cpu_governor_check(root: Path) -> Check:
    rule = rules()["cpu_governor"]
    base = root / GOVERNORS
    counts: dict[str, int] = {}
    try:
        cpus = [e for e in os.scandir(base) if re.fullmatch(r"cpu\d+", e.name)]
    except OSError:
        cpus = []
    unreadable = 0
    for cpu in cpus:
        try:  # a regular file of a few bytes: a FIFO or device there would block the read
            data = read_regular(Path(cpu.path) / "cpufreq/scaling_governor", GOVERNOR_MAX_BYTES)
        except FileNotFoundError:
            continue
        except OSError:
            unreadable += 1
            continue
        name = data.decode("utf-8", errors="replace").strip() or "(empty)"
        counts[name] = counts.get(name, 0) + 1
    if unreadable:
        counts["unreadable"] = unreadable
    if not counts:
        return Check("cpu_governor", "pass", f"no cpufreq governor under {base} (not judged)")
    shown = ", ".join(f"{n} cores {g}" for g, n in sorted(counts.items()))
    if set(counts) == {rule["expected"]}:
        return Check("cpu_governor", "pass", shown)
    return Check("cpu_governor", rule["otherwise"], f"not all cores {rule['expected']}: {shown}")


def imex_check(root: Path, gpu_type: str) -> Check:
    rule = rules()["imex_channel"]
    if gpu_type not in rule["gpu_types"]:
        return Check("imex_channel", "skipped", f"not a {'/'.join(rule['gpu_types'])} node")
    folder = root / IMEX_CHANNELS
    try:
        channels = sorted(n for n in os.listdir(folder) if re.fullmatch(r"channel\d+", n))
    except OSError:
        channels = []
    if channels:
        return Check("imex_channel", "pass", ", ".join(channels))
    return Check("imex_channel", rule["missing"], f"no IMEX channel in {folder}")


def nvlink_links_check(text: str, gpu_type: str) -> Check:
    expected = rules()["nvlink_links"]["per_node"].get(gpu_type)
    if expected is None:
        return Check("nvlink_links", "skipped", f"no per-node link count for {gpu_type}")
    up = sum(1 for line in text.splitlines() if "GB/s" in line and "Link" in line)
    if up >= expected:
        return Check("nvlink_links", "pass", f"{up} of {expected} NVLink links up")
    return Check(
        "nvlink_links", rules()["nvlink_links"]["fewer"], f"{up} of {expected} NVLink links up"
    )


def pmix_check(text: str | None, needed: bool) -> Check:
    if not needed:
        return Check("pmix", "skipped", "no launch here uses srun --mpi=pmix")
    plugins = [line.strip() for line in (text or "").splitlines() if line.startswith(("\t", " "))]
    if any(p.startswith("pmix") for p in plugins) or "pmix plugin versions" in (text or ""):
        return Check("pmix", "pass", "srun --mpi=list: " + ", ".join(plugins))
    shown = ", ".join(plugins) or "nothing"
    return Check(
        "pmix",
        rules()["pmix"]["missing_when_needed"],
        f"srun --mpi=list lists {shown}, no pmix; preflight's multi-node test runs srun --mpi=pmix",
    )


def fabric_devices(root: Path) -> tuple[str, list[str]]:
    """(``ib``, ``efa`` or ``none``, device names) from ``<root>/sys/class/infiniband``."""
    folder = root / INFINIBAND
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return "none", []
    drivers = []
    for name in names:
        try:
            drivers.append(Path(os.readlink(folder / name / "device/driver")).name)
        except OSError:
            drivers.append("")
    if not names:
        return "none", []
    return ("efa" if "efa" in drivers else "ib"), names


def node_checks(
    root: Path,
    gpu_type: str,
    sections: Mapping[str, str] | None = None,
    pmix_needed: bool = False,
) -> list[Check]:
    """Every check of one node; GPU-only checks read ``sections`` (preflight.sh output)
    and are skipped on CPU nodes."""
    lines, why_not = read_kernel_log(root)
    checks = [xid_check(lines, why_not), cpu_governor_check(root)]
    if device(gpu_type).has_gpus and sections is not None:
        checks.append(ecc_check(sections.get("ecc", "")))
        checks.append(imex_check(root, gpu_type))
        checks.append(nvlink_links_check(sections.get("nvlink", ""), gpu_type))
        checks.append(pmix_check(sections.get("pmix"), pmix_needed))
    fabric, devices = fabric_devices(root)
    detail = f"{fabric}: {', '.join(devices)}" if devices else "no IB or EFA device"
    checks.append(Check("fabric", "pass", detail))
    return checks
