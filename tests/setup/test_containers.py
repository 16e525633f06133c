"""containers.py against a stand-in enroot (tests/fixtures/enroot) that writes a real squashfs."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from llmbench.core.images import parse_image, sqsh_name
from llmbench.errors import LaunchError
from llmbench.setup.containers import import_command, import_image
from tests.helpers import REPO

FIXTURES = REPO / "tests" / "fixtures"
needs_mksquashfs = pytest.mark.prerequisite(
    shutil.which("mksquashfs") is not None, "mksquashfs missing: tests/slurm/install.sh"
)


@pytest.fixture
def fake_enroot(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", f"{FIXTURES}:{Path(shutil.which('bash') or '/bin/bash').parent}")


def test_import_command_x86_and_aarch64() -> None:
    assert import_command("nvidia/jax:maxtext-2024-12-09", "a.sqsh", "x86_64", "reg.test") == [
        "enroot", "import", "-o", "a.sqsh", "docker://reg.test#nvidia/jax:maxtext-2024-12-09"
    ]  # fmt: skip
    assert import_command("reg.test/nvidia/nemo:25.02", "b.sqsh", "aarch64") == [
        "enroot", "import", "-a", "aarch64", "-o", "b.sqsh", "docker://reg.test#nvidia/nemo:25.02"
    ]  # fmt: skip
    assert import_command("nvidia/nemo:25.02", "c", "x86_64")[-1] == "docker://nvidia/nemo:25.02"


@pytest.mark.parametrize(
    "image", ["nemo", "nvidia/nemo", "Nvidia/nemo:1", "nvidia/nemo:", "a b:1", "x/y:1; rm -rf /"]
)
def test_bad_image_reference_is_a_launch_error(image: str) -> None:
    with pytest.raises(LaunchError, match="not a container image reference"):
        parse_image(image)


def test_bad_arch_is_a_launch_error() -> None:
    with pytest.raises(LaunchError, match="allowed: x86_64, aarch64"):
        import_command("nvidia/nemo:1", "o", "arm64")


def test_sqsh_name() -> None:
    assert sqsh_name("reg.test/nvidia/jax:maxtext-1") == "nvidia+jax+maxtext-1.sqsh"


@needs_mksquashfs
@pytest.mark.parametrize("arch", ["x86_64", "aarch64"])
def test_import_image_writes_a_squashfs(
    tmp_path: Path, fake_enroot: None, monkeypatch: pytest.MonkeyPatch, arch: str
) -> None:
    flag = "-a aarch64 " if arch == "aarch64" else ""
    monkeypatch.setenv("FAKE_ENROOT_EXPECT", f"{flag}OUT docker://reg.test#nvidia/jax:mt-1")
    out = import_image("nvidia/jax:mt-1", tmp_path / "images" / "x.sqsh", arch, "reg.test")
    assert out == tmp_path / "images" / "x.sqsh"
    assert out.read_bytes()[:4] == b"hsqs"
    assert [p.name for p in out.parent.iterdir()] == ["x.sqsh"]  # no temp file left


@needs_mksquashfs
def test_wrong_arguments_fail_the_import(
    tmp_path: Path, fake_enroot: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_ENROOT_EXPECT", "OUT docker://other#nvidia/jax:mt-1")
    with pytest.raises(LaunchError, match="failed"):
        import_image("nvidia/jax:mt-1", tmp_path / "x.sqsh", "x86_64", "reg.test")
    assert list(tmp_path.iterdir()) == []


def test_interrupted_import_leaves_nothing_finished(
    tmp_path: Path, fake_enroot: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_ENROOT_EXPECT", "OUT docker://nvidia/jax:mt-1")
    monkeypatch.setenv("FAKE_ENROOT_FAIL", "1")
    with pytest.raises(LaunchError, match="simulated failure"):
        import_image("nvidia/jax:mt-1", tmp_path / "x.sqsh", "x86_64")
    assert list(tmp_path.iterdir()) == []


def test_missing_enroot_is_a_launch_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(LaunchError, match="enroot not found"):
        import_image("nvidia/jax:mt-1", tmp_path / "x.sqsh", "x86_64")
