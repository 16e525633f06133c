"""What a sweep needs in the stage folder before its first training job.

The stage folder (the spec's STAGE_PATH / LLMB_INSTALL) is shared by every node:
``images/<sqsh>`` once per distinct (image, CPU architecture) of the sweep, ``venv/``
for the framework workloads, ``checkpoints/<run id>/`` for the checkpoint variants.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import PurePosixPath

from llmbench.containers import sqsh_name
from llmbench.runspec import RunSpec

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
    from llmbench.catalog import load_catalog

    return load_catalog().gpu(spec.gpu_type).arch


def image_import(spec: RunSpec) -> ImageImport | None:
    """The import a run's launch needs; None when it runs without a container."""
    if spec.container != "enroot":
        return None
    from llmbench.catalog import load_catalog

    return ImageImport(spec.image or load_catalog().image(spec.workload), image_arch(spec))


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


def venv_marker_path(stage: str) -> str:
    return str(PurePosixPath(stage, VENV_DIR, VENV_MARKER))


def venv_python(stage: str) -> str:
    return str(PurePosixPath(stage, VENV_DIR, "bin", "python"))
