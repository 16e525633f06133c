"""What a sweep needs in the stage folder: images per arch, checkpoint links and space."""

from __future__ import annotations

import shutil
from pathlib import Path

from llmbench.core.config import run_specs, validate_config
from llmbench.core.stage import (
    checkpoint_source,
    checkpoint_space_warning,
    image_imports,
    needs_venv,
)
from llmbench.files.disk_space import free_bytes
from tests.helpers import tiny_sweep

IMAGE = "nvidia/nemo:25.07"


def specs(*sweeps: dict, **top) -> list:
    return run_specs(validate_config({"sweeps": list(sweeps), **top}))


def nemo_8b(**changes) -> dict:
    return {
        "workload": "llama3.1-nemo",
        "sizes": ["8b"],
        "dtypes": ["bf16"],
        "gpu_type": "h100",
        "scales": [16],
        **changes,
    }


def test_one_import_per_image_and_arch() -> None:
    mbridge = {
        "workload": "llama3.1-mbridge",
        "sizes": ["8b"],
        "dtypes": ["fp8"],
        "gpu_type": "gb200",
        "scales": [8],
    }
    images = {"llama3.1-nemo": IMAGE, "llama3.1-mbridge": IMAGE}
    runs = specs(nemo_8b(dtypes=["bf16", "fp8"]), mbridge, container="enroot", images=images)
    imports = image_imports(runs)
    assert {(i.image, i.arch) for i in imports.values()} == {
        (IMAGE, "x86_64"),
        (IMAGE, "aarch64"),
    }
    assert sorted(imports) == ["nvidia+nemo+25.07.aarch64.sqsh", "nvidia+nemo+25.07.sqsh"]
    assert image_imports(specs(nemo_8b())) == {}  # container: none imports nothing


def test_only_framework_workloads_need_the_venv() -> None:
    tiny = tiny_sweep((1,))
    assert [needs_venv(s) for s in specs(tiny, nemo_8b())] == [False, True]


def test_ckpt_load_restores_its_save_run() -> None:
    save, load = specs(nemo_8b(variants=["ckpt-save", "ckpt-load"]))
    assert checkpoint_source(load) == save.run_id
    assert checkpoint_source(save) is None


def test_checkpoint_space_warning_uses_the_spec_sizes() -> None:
    runs = specs(nemo_8b(variants=["perf", "ckpt-save"]))
    # The spec gives 105 GB for an 8B checkpoint.
    assert checkpoint_space_warning(runs, free_bytes=int(200e9)) is None
    warning = checkpoint_space_warning(runs, free_bytes=int(50e9))
    assert warning is not None and "105 GB" in warning and "50 GB free" in warning
    assert checkpoint_space_warning(specs(nemo_8b()), free_bytes=0) is None


def test_free_bytes_of_a_folder_not_made_yet(tmp_path: Path, monkeypatch) -> None:
    asked = []
    real = shutil.disk_usage

    def disk_usage(path):
        asked.append(Path(path))
        return real(path)

    monkeypatch.setattr(shutil, "disk_usage", disk_usage)
    assert free_bytes(str(tmp_path / "not" / "yet")) > 0
    assert asked == [tmp_path.resolve()]  # the nearest folder that exists
