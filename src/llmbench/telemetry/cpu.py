"""CPU-side sources: utilisation from ``/proc/stat`` and energy from the RAPL counters
the kernel's powercap framework exposes.

Facts used (Linux kernel documentation, Documentation/power/powercap/powercap.rst and
Documentation/filesystems/proc.rst):

- ``/proc/stat``'s ``cpu`` line holds cumulative times in USER_HZ ticks: user nice system
  idle iowait irq softirq steal guest guest_nice (guest time is already in user/nice);
  busy = total - idle - iowait over an interval.
- ``/sys/class/powercap/intel-rapl:<n>/`` is a top-level RAPL zone (``name`` is
  ``package-<n>``; AMD CPUs expose theirs under the same names), ``energy_uj`` its
  cumulative energy in microjoules, wrapping at ``max_energy_range_uj``. Sub-zones
  (``intel-rapl:<n>:<m>``: core, uncore, dram) are left out: core and uncore are part of
  the package's count, and summing them would count them twice.
- Since Linux 5.10 ``energy_uj`` is readable by root only (CVE-2020-8694).

Every path is under a root folder (``/`` on a real node), so tests point the same code at
a real folder tree with the files the kernel exposes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

POWERCAP = "sys/class/powercap"
PROC_STAT = "proc/stat"


@dataclass(frozen=True)
class CpuTimes:
    busy: int
    total: int


def read_cpu_times(root: Path) -> CpuTimes | None:
    """Busy and total ticks of all CPUs from ``<root>/proc/stat``; None when unreadable."""
    try:
        with open(root / PROC_STAT) as fh:
            first = fh.readline().split()
    except OSError:
        return None
    if not first or first[0] != "cpu":
        return None
    try:
        ticks = [int(v) for v in first[1:9]]  # up to steal; guest is inside user
    except ValueError:
        return None
    ticks += [0] * (8 - len(ticks))
    idle = ticks[3] + ticks[4]
    total = sum(ticks)
    return CpuTimes(total - idle, total)


def utilisation(before: CpuTimes, after: CpuTimes) -> float:
    """Busy fraction of all CPUs between two readings; NaN when no tick passed."""
    total = after.total - before.total
    return (after.busy - before.busy) / total if total > 0 else float("nan")


@dataclass(frozen=True)
class RaplZone:
    name: str  # package-0
    energy_file: Path
    max_range_uj: int


@dataclass
class RaplReader:
    """Readable top-level RAPL zones and, when none is, why (``reason``)."""

    zones: list[RaplZone] = field(default_factory=list)
    reason: str = ""
    _last: dict[str, int] = field(default_factory=dict)
    _wraps: dict[str, int] = field(default_factory=dict)

    def read_j(self) -> dict[str, float]:
        """Unwrapped cumulative energy per zone, in joules (zones that fail are left out)."""
        out = {}
        for zone in self.zones:
            raw = _read_int(zone.energy_file)
            if raw is None:
                continue
            last = self._last.get(zone.name)
            if last is not None and raw < last:  # the counter wrapped
                self._wraps[zone.name] = self._wraps.get(zone.name, 0) + 1
            self._last[zone.name] = raw
            out[zone.name] = (raw + self._wraps.get(zone.name, 0) * zone.max_range_uj) / 1e6
        return out


def _read_int(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def _read_error(path: Path) -> str:
    try:
        int(path.read_text().strip())
    except OSError as exc:
        return exc.strerror or type(exc).__name__
    except ValueError:
        return "not an integer"
    return ""


def rapl_reader(root: Path) -> RaplReader:
    """The top-level RAPL zones under ``<root>/sys/class/powercap`` whose counter can be
    read now; with none, ``reason`` says what was missing or refused."""
    base = root / POWERCAP
    if not base.is_dir():
        return RaplReader(reason=f"no RAPL: {base} does not exist")
    zones, refused = [], []
    for path in sorted(base.glob("intel-rapl:*")):
        if path.name.count(":") != 1:  # a sub-zone
            continue
        name = (_read_text(path / "name") or path.name).strip()
        error = _read_error(path / "energy_uj")
        if error:
            refused.append(f"{path / 'energy_uj'}: {error}")
            continue
        max_range = _read_int(path / "max_energy_range_uj") or 0
        zones.append(RaplZone(name, path / "energy_uj", max_range))
    if zones:
        return RaplReader(zones)
    if refused:
        return RaplReader(reason=f"RAPL not readable: {refused[0]}")
    return RaplReader(reason=f"no RAPL zone (intel-rapl:<n>) under {base}")


def _read_text(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


def node_name() -> str:
    """This node's name as Slurm knows it, else the host name."""
    return os.environ.get("SLURMD_NODENAME") or os.uname().nodename
