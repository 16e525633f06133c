"""The kit's first look at the machine: what it runs with, and whether everything the
other steps import is importable (from the box's own packages and the kit's wheels)."""

from __future__ import annotations

import importlib
import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

from packaging.requirements import Requirement

if sys.version_info >= (3, 11):  # the kit's Pythons (3.11, 3.12) have it; 3.10 skips the check
    import tomllib

REQUIRED = (
    "snakemake", "snakemake_executor_plugin_slurm", "jsonschema", "yaml", "psutil",
    "pandas", "pyarrow", "matplotlib", "torch", "megatron.core",
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


def unmet_requirements(pyproject: Path) -> list[str]:
    """llmbench's declared dependencies (``pyproject.toml``) that this Python has in a
    version outside the declared range (an old pandas on the box, say); a missing one is
    the imports' to report."""
    if sys.version_info < (3, 11):
        return []
    declared = tomllib.loads(pyproject.read_text())["project"]["dependencies"]
    unmet = []
    for text in declared:
        req = Requirement(text)
        if req.marker is not None and not req.marker.evaluate():
            continue
        try:
            version = metadata.version(req.name)
        except metadata.PackageNotFoundError:
            continue
        if not req.specifier.contains(version, prereleases=True):
            unmet.append(f"{req.name} {version} here; llmbench needs {req.name}{req.specifier}")
    return unmet


def environment(gpu: bool, pyproject: Path | None = None) -> dict[str, Any]:
    """Versions, GPUs and imports; ``problems`` lists what the steps will miss (on a GPU
    box, also a torch without CUDA), and versions outside ``pyproject``'s ranges."""
    modules = {name: _module(name) for name in (*REQUIRED, *OPTIONAL)}
    problems = [f"import {n}: {modules[n]['error']}" for n in REQUIRED if not modules[n]["ok"]]
    problems += unmet_requirements(pyproject) if pyproject is not None else []
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
