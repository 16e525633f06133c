"""The kit's first look at the machine: what it runs with, and whether everything the
other steps import is importable (from the box's own packages and the kit's wheels)."""

from __future__ import annotations

import importlib
import platform
import subprocess
from typing import Any

REQUIRED = (
    "snakemake", "snakemake_executor_plugin_slurm", "jsonschema", "yaml", "psutil",
    "pandas", "pyarrow", "matplotlib", "torch", "transformers", "megatron.core",
)  # fmt: skip
"""What the steps import; the optional ones (hyperscan) are recorded, not required."""
OPTIONAL = ("hyperscan",)
NVIDIA_SMI_FIELDS = "name,driver_version,memory.total"


def _module(name: str) -> dict[str, Any]:
    try:
        module = importlib.import_module(name)
    except Exception as exc:  # an import can fail with anything (a missing .so, a bad wheel)
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    return {"ok": True, "version": str(getattr(module, "__version__", "")), "file": module.__file__}


def _torch() -> dict[str, Any]:
    # heavy optional dependency (the embedded extra): imported only here
    import torch

    cuda = torch.cuda.is_available()
    info: dict[str, Any] = {
        "version": torch.__version__,
        "cuda_build": torch.version.cuda,
        "cuda_available": cuda,
        "devices": [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
        if cuda
        else [],
    }
    if cuda:
        info["nccl"] = ".".join(map(str, torch.cuda.nccl.version()))
        info["bf16_supported"] = torch.cuda.is_bf16_supported()
    return info


def _nvidia_smi() -> list[str]:
    command = ["nvidia-smi", f"--query-gpu={NVIDIA_SMI_FIELDS}", "--format=csv,noheader"]
    try:
        out = subprocess.run(command, capture_output=True, text=True, timeout=30, check=True)
    except (OSError, subprocess.SubprocessError):
        return []
    return [line.strip() for line in out.stdout.splitlines() if line.strip()]


def environment(gpu: bool) -> dict[str, Any]:
    """Versions, GPUs and imports; ``problems`` lists what the steps will miss (on a GPU
    box, also a torch without CUDA)."""
    modules = {name: _module(name) for name in (*REQUIRED, *OPTIONAL)}
    problems = [f"import {n}: {modules[n]['error']}" for n in REQUIRED if not modules[n]["ok"]]
    info: dict[str, Any] = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "host": platform.node(),
        "modules": modules,
        "nvidia_smi": _nvidia_smi(),
    }
    if modules["torch"]["ok"]:
        info["torch"] = _torch()
        if gpu and not info["torch"]["cuda_available"]:
            problems.append(f"torch {info['torch']['version']} sees no CUDA GPU")
    if gpu and not info["nvidia_smi"]:
        problems.append("nvidia-smi lists no GPU (not installed, or no driver)")
    info["problems"] = problems
    return info
