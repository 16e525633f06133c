"""What a sweep needs in the stage folder before its first training job.

The stage folder (the spec's STAGE_PATH / LLMB_INSTALL) is shared by every node:
``images/<sqsh>`` once per distinct (image, CPU architecture) of the sweep, ``venv/``
for the framework workloads, ``checkpoints/<run id>/`` for the checkpoint variants.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from llmbench.core.catalog import load_catalog
from llmbench.core.images import sqsh_name
from llmbench.core.runspec import RunSpec
from llmbench.errors import LaunchError

IMAGES_DIR = "images"
VENV_DIR = "venv"
VENV_MARKER = "llmbench-venv.txt"
"""Written last by the venv build: the interpreter, the requirements and ``pip freeze``."""


@dataclass(frozen=True)
class ImageImport:
    """One ``enroot import``: an image reference for one CPU architecture."""

    image: str
    arch: str

    @property
    def file_name(self) -> str:
        return sqsh_name(self.image, self.arch)


def image_arch(spec: RunSpec) -> str:
    """CPU architecture of the nodes the run lands on (Grace nodes are aarch64)."""
    return load_catalog().gpu(spec.gpu_type).arch


def image_import(spec: RunSpec) -> ImageImport | None:
    """The import a run's launch needs; None when it runs without a container."""
    if spec.container != "enroot":
        return None
    if not spec.image:
        raise LaunchError(
            f"run {spec.run_id}: container enroot and no image; allowed: images.{spec.workload}"
        )
    return ImageImport(spec.image, image_arch(spec))


def image_imports(specs: Iterable[RunSpec]) -> dict[str, ImageImport]:
    """``.sqsh`` file name -> import, once per distinct image and architecture."""
    imports: dict[str, ImageImport] = {}
    for spec in specs:
        needed = image_import(spec)
        if needed is not None:
            imports.setdefault(needed.file_name, needed)
    return dict(sorted(imports.items()))


def needs_venv(spec: RunSpec) -> bool:
    """Framework workloads use the stage venv; the embedded one runs in llmbench's own."""
    return spec.framework != "torch"


def image_path(stage: str, imported: ImageImport) -> str:
    return str(PurePosixPath(stage, IMAGES_DIR, imported.file_name))


def venv_requirements_path(
    config: Mapping[str, Any], base_dirs: Sequence[str | Path]
) -> str | None:
    """``setup.venv_requirements`` found in the first of ``base_dirs``; None when absent."""
    name = config["setup"]["venv_requirements"]
    found = (Path(base, name) for base in base_dirs)
    return next((str(p) for p in found if p.is_file()), None)


def venv_marker_path(stage: str) -> str:
    return str(PurePosixPath(stage, VENV_DIR, VENV_MARKER))


def venv_python(stage: str) -> str:
    return str(PurePosixPath(stage, VENV_DIR, "bin", "python"))


def save_run_of(load_run_id: str) -> str:
    """``..._ckpt-load`` -> ``..._ckpt-save``: the run that wrote the checkpoint."""
    return load_run_id.removesuffix("_ckpt-load") + "_ckpt-save"


def checkpoint_source(spec: RunSpec) -> str | None:
    """The ckpt-save run whose checkpoint a ckpt-load run restores (None for other runs)."""
    return save_run_of(spec.run_id) if spec.variant == "ckpt-load" else None


def checkpoint_space_warning(specs: Iterable[RunSpec], free_bytes: int) -> str | None:
    """A one-line warning when the ckpt-save runs' checkpoints (sizes from the spec's
    documents) need more than the stage folder's free space; None when they fit."""
    catalog = load_catalog()
    needed_gb = 0.0
    saving = []
    for spec in specs:
        if spec.variant != "ckpt-save":
            continue
        sizes = [c.size_gb for c in catalog.checkpoints(spec.workload, spec.size)]
        if sizes:
            needed_gb += max(sizes)
            saving.append(spec.run_id)
    free_gb = free_bytes / 1e9
    if not saving or needed_gb <= free_gb:
        return None
    return (
        f"{len(saving)} ckpt-save run(s) need about {needed_gb:,.0f} GB of checkpoints "
        f"(sizes from the spec) but the stage folder has {free_gb:,.0f} GB free"
    )
