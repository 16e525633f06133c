"""RAPL and /proc/stat read from a real folder tree: readable, missing and refused."""

from __future__ import annotations

from pathlib import Path

from llmbench.telemetry import cpu
from tests.telemetry.conftest import node_tree


def test_rapl_reads_packages_only_and_unwraps(tmp_path: Path) -> None:
    root = node_tree(tmp_path, packages=2, energy_uj=2_000_000)
    reader = cpu.rapl_reader(root)
    assert reader.reason == "" and [z.name for z in reader.zones] == ["package-0", "package-1"]
    assert reader.read_j() == {"package-0": 2.0, "package-1": 2.0}
    zone = root / "sys/class/powercap/intel-rapl:0/energy_uj"
    zone.write_text("500000\n")  # below the last reading: the counter wrapped
    assert reader.read_j()["package-0"] == (500000 + 262143328850) / 1e6


def test_rapl_missing_tree_gives_reason(tmp_path: Path) -> None:
    reader = cpu.rapl_reader(tmp_path)
    assert reader.zones == [] and "does not exist" in reader.reason
    assert reader.read_j() == {}


def test_rapl_unreadable_counter_gives_reason(tmp_path: Path) -> None:
    root = node_tree(tmp_path)
    counter = root / "sys/class/powercap/intel-rapl:0/energy_uj"
    counter.unlink()
    counter.mkdir()  # reading it fails as a refused file does, even for root
    reader = cpu.rapl_reader(root)
    assert reader.zones == []
    assert reader.reason.startswith("RAPL not readable:") and "energy_uj" in reader.reason


def test_proc_stat_utilisation(tmp_path: Path) -> None:
    root = node_tree(tmp_path)
    before = cpu.read_cpu_times(root)
    (root / "proc/stat").write_text("cpu  160 0 70 820 50 0 0 0 0 0\n")
    after = cpu.read_cpu_times(root)
    assert before is not None and after is not None
    assert cpu.utilisation(before, after) == 80 / 100
    assert cpu.read_cpu_times(tmp_path / "nowhere") is None
