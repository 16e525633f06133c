"""Devices as traits (``llmbench.core.devices``): every device kind is a catalog row, the
module answers from the rows, and no code outside it decides by a device kind's name."""

from __future__ import annotations

import ast
import math
import re
from pathlib import Path

import pytest

from llmbench.core import devices
from llmbench.core.catalog import load_catalog
from llmbench.errors import ConfigError
from tests.helpers import REPO
from tests.switches import python_files, switches

MODULE = REPO / "src/llmbench/core/devices.py"
"""The only file that may say which device kind is which."""
KINDS = frozenset(devices.kinds())


def _is_gpu_type(node: ast.AST) -> bool:
    """``gpu_type``, ``spec.gpu_type`` or ``run["gpu_type"]``."""
    if isinstance(node, ast.Subscript):
        return isinstance(node.slice, ast.Constant) and node.slice.value == "gpu_type"
    return getattr(node, "id", getattr(node, "attr", None)) == "gpu_type"


def _names_a_kind(node: ast.AST) -> bool:
    """A string, a CONSTANT, or a literal tuple, list or set: a kind written in code."""
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return True
    name = getattr(node, "id", getattr(node, "attr", ""))
    return (isinstance(node, ast.Constant) and isinstance(node.value, str)) or name.isupper()


def device_switches(source: str) -> list[str]:
    """Where ``source`` (Python) decides by a device kind's name: a ``gpu_type`` compared
    (``==``, ``!=``, ``in``) with a kind written in code (a string, a CONSTANT, a literal
    tuple), a ``match`` on it, the literal ``"local-cuda"``, or a table keyed by kinds."""
    return switches(source, _is_gpu_type, _names_a_kind, KINDS, "device kinds", ("local-cuda",))


SMK_SWITCH = re.compile(r"gpu_type\W[^\n]*(==|!=|\bin\b)|local-cuda")


def test_the_check_finds_every_kind_of_switch() -> None:
    # the shapes the code had before the devices module (so the check below can fail)
    assert device_switches('if spec.gpu_type == "cpu":\n    pass')
    assert device_switches('gpu = gpu_type != "cpu"')
    assert device_switches('unit = "CPU ranks" if (runs["gpu_type"] == "cpu").all() else "G"')
    assert device_switches('if gpu_type in ("cpu", "local-cuda"):\n    pass')
    assert device_switches("cuda = spec.gpu_type == CUDA_GPU_TYPE")
    assert device_switches('CUDA_GPU_TYPE = "local-cuda"')
    assert device_switches("cpu = s.gpu_type not in embedded_workload.GPU_TYPES")
    assert device_switches("match spec.gpu_type:\n    case _:\n        pass")
    assert device_switches('T = {"h100": 989.0, "b200": 2250.0}')
    # what is not a switch: a trait, a lookup in data, a config value, one kind's block
    assert not device_switches("gpu = device(spec.gpu_type).has_gpus")
    assert not device_switches('ok = gpu_type not in rule["gpu_types"]')
    assert not device_switches("same = (r.workload, r.gpu_type) == key")
    assert not device_switches('sweep = {"workload": "tiny-llama", "gpu_type": "cpu"}')
    assert not device_switches('limits = {"cpu": str(cpus)}')


@pytest.mark.parametrize("path", python_files({MODULE}), ids=lambda p: str(p.relative_to(REPO)))
def test_no_code_outside_the_devices_module_branches_on_a_device(path: Path) -> None:
    assert device_switches(path.read_text()) == []


def test_the_rule_file_check_finds_a_switch() -> None:
    assert SMK_SWITCH.search('        gres="gpu" if SWEEP.gpu_type != "cpu" else "",')
    assert SMK_SWITCH.search('        kind="local-cuda",')
    assert not SMK_SWITCH.search("        cpus_per_task=SWEEP.train_resource('cpus_per_task'),")


def test_no_rule_file_branches_on_a_device() -> None:
    for path in [REPO / "Snakefile", *sorted((REPO / "workflow").rglob("*.smk"))]:
        hits = [line for line in path.read_text().splitlines() if SMK_SWITCH.search(line)]
        assert hits == [], path


def test_every_gpu_type_of_the_catalog_is_a_device_with_its_node_size() -> None:
    catalog = load_catalog()
    for kind in catalog.gpu_types():
        d = devices.device(kind)
        assert (d.has_gpus, d.nccl, d.sampled_by, d.peak) == (True, True, "nvidia-smi", "datasheet")
        assert d.gpus_per_node == catalog.gpu(kind).gpus_per_node
        assert d.unit == f"{kind.upper()} GPUs" and not d.embedded
    assert set(devices.kinds()) == {*catalog.gpu_types(), "cpu", "local-cuda"}


def test_the_embedded_kinds_cpu_ranks_and_this_machines_gpus() -> None:
    cpu, cuda = devices.device("cpu"), devices.device("local-cuda")
    assert (cpu.has_gpus, cpu.nccl, cpu.nvidia_smi, cpu.peak) == (False, False, False, "measured")
    assert (cuda.has_gpus, cuda.nccl, cuda.nvidia_smi) == (True, True, True)
    assert cuda.peak == "node-datasheet" and cpu.gpus_per_node is cuda.gpus_per_node is None
    assert cpu.unit == "CPU ranks"
    assert devices.embedded_kinds() == ("cpu", "local-cuda")
    assert devices.embedded_kind(gpus=False) == "cpu"
    assert devices.embedded_kind(gpus=True) == "local-cuda"


def test_a_scale_axis_counts_gpus_when_any_run_has_them() -> None:
    assert devices.scale_unit(["cpu", "cpu"]) == "CPU ranks"
    assert devices.scale_unit(["cpu", "h100"]) == "GPUs"
    assert devices.scale_unit(["local-cuda"]) == "GPUs"


def test_an_unknown_kind_is_a_one_line_error_naming_the_allowed() -> None:
    with pytest.raises(ConfigError, match=r"gpu_type=a100 is not a gpu_type; allowed: cpu, "):
        devices.device("a100")


def test_a_bad_row_is_refused_naming_the_trait() -> None:
    good = {"has_gpus": True, "nccl": True, "sampled_by": "nvidia-smi", "peak": "datasheet",
            "unit": "X GPUs", "embedded": False}  # fmt: skip
    assert devices._device("x", good, 8).gpus_per_node == 8
    with pytest.raises(ConfigError, match="sampled_by=dcgm is not a sampled_by"):
        devices._device("x", {**good, "sampled_by": "dcgm"}, 8)
    with pytest.raises(ConfigError, match="traits"):
        devices._device("x", {**good, "colour": "green"}, 8)
    with pytest.raises(ConfigError, match="peak datasheet if and only if"):
        devices._device("x", good, None)


def test_datasheet_peaks_by_nvidia_smi_name_are_the_catalogs() -> None:
    # the specific names first: a PCIe or NVL H100 is not judged against the SXM figure
    assert devices.datasheet_peak("NVIDIA H100 PCIe", "bf16") == (
        756.0,
        "NVIDIA H100 Tensor Core GPU datasheet",
    )
    assert devices.datasheet_peak("NVIDIA H100 NVL", "fp32")[0] == 60.0
    # an SXM H100's bf16 figure is the h100 GPU type's, written once in gpus.yaml
    h100 = load_catalog().gpu("h100").peak_tflops["bf16"]
    assert devices.datasheet_peak("NVIDIA H100 80GB HBM3", "bf16")[0] == h100 == 989.0
    assert devices.datasheet_peak("NVIDIA H100 80GB HBM3", "fp32")[0] == 67.0
    assert devices.datasheet_peak("NVIDIA A100-SXM4-80GB", "fp32")[0] == 19.5
    assert devices.datasheet_peak("NVIDIA B200", "bf16")[0] == 2250.0
    assert math.isnan(devices.datasheet_peak("NVIDIA B200", "fp32")[0])
    assert math.isnan(devices.datasheet_peak("Tesla T4", "bf16")[0])


def test_the_highest_peak_is_the_highest_row_of_the_catalog() -> None:
    catalog = load_catalog()
    cluster = max(v for g in catalog.gpu_types() for v in catalog.gpu(g).peak_tflops.values())
    assert devices.max_peak_tflops() == cluster == 14700.0
