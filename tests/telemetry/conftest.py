"""A node's proc/ and sys/ trees as real folders, with the files the kernel exposes."""

from __future__ import annotations

import os
from pathlib import Path

PROC_STAT = "cpu  100 0 50 800 50 0 0 0 0 0\ncpu0 100 0 50 800 50 0 0 0 0 0\n"


def node_tree(root: Path, packages: int = 1, energy_uj: int = 1_000_000) -> Path:
    """``root`` with proc/stat and ``packages`` RAPL package zones (plus a core sub-zone
    each, which must not be counted)."""
    (root / "proc").mkdir(parents=True, exist_ok=True)
    (root / "proc/stat").write_text(PROC_STAT)
    for n in range(packages):
        zone = root / f"sys/class/powercap/intel-rapl:{n}"
        zone.mkdir(parents=True, exist_ok=True)
        (zone / "name").write_text(f"package-{n}\n")
        (zone / "energy_uj").write_text(f"{energy_uj}\n")
        (zone / "max_energy_range_uj").write_text("262143328850\n")
        sub = root / f"sys/class/powercap/intel-rapl:{n}:0"
        sub.mkdir(parents=True, exist_ok=True)
        (sub / "name").write_text("core\n")
        (sub / "energy_uj").write_text("5\n")
    return root


def write_counter(path: Path, microjoules: int) -> None:
    """Replace the counter's value at once, as a read of the kernel's file never sees
    half a number."""
    tmp = path.with_name(".energy_uj.tmp")
    tmp.write_text(f"{microjoules}\n")
    os.replace(tmp, path)
