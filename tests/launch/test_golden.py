"""Rendered launch.sh files, pinned. Regenerate: LLMBENCH_UPDATE_GOLDEN=1 pytest tests/launch"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from llmbench.cli.commands.render import entry_config
from llmbench.launch.launchers import render_launch_script
from tests.launch.cases import golden_cases, release_specs

GOLDEN = Path(__file__).parent / "golden"
CASES = golden_cases()
UPDATE = os.environ.get("LLMBENCH_UPDATE_GOLDEN") == "1"


@pytest.mark.parametrize("name", sorted(CASES))
def test_launch_script_matches_golden(name: str) -> None:
    text = render_launch_script(CASES[name])
    path = GOLDEN / f"{name}.sh"
    if UPDATE:
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(text)
    assert path.exists(), f"{path} missing; run with LLMBENCH_UPDATE_GOLDEN=1"
    assert text == path.read_text(), f"{name}: launch.sh changed; diff against {path}"


def test_every_golden_file_has_a_case() -> None:
    """A stale golden file (a case renamed or dropped) is an error, not dead weight."""
    assert sorted(p.stem for p in GOLDEN.glob("*.sh")) == sorted(CASES)
    assert sorted(p.name.removesuffix(".entry.json") for p in GOLDEN.glob("*.entry.json")) == (
        sorted(RELEASE_CASES)
    )


RELEASE_CASES = {spec.run_id: spec for spec in release_specs()}


@pytest.mark.parametrize("name", sorted(RELEASE_CASES))
def test_release_entry_config_matches_golden(name: str) -> None:
    """What the entry point builds for a later release's row (``llmbench render``'s
    entry_config.json: the release's recipe function, precision, communication overlap,
    overrides), pinned for each new family and precision."""
    config = entry_config(RELEASE_CASES[name])
    text = json.dumps(config, indent=2, sort_keys=True, default=str) + "\n"
    path = GOLDEN / f"{name}.entry.json"
    if UPDATE:
        path.write_text(text)
    assert path.exists(), f"{path} missing; run with LLMBENCH_UPDATE_GOLDEN=1"
    assert text == path.read_text(), f"{name}: entry config changed; diff against {path}"


def test_release_cases_cover_each_new_family_and_precision() -> None:
    pairs = {(s.workload, s.precision) for s in RELEASE_CASES.values()}
    assert pairs == {
        ("llama3.1-mbridge", "bf16"), ("llama3.1-mbridge", "fp8-current"),
        ("llama3.1-mbridge", "mxfp8"), ("llama3.1-mbridge", "nvfp4"),
        ("qwen3-mbridge", "bf16"), ("qwen3-mbridge", "mxfp8"),
        ("deepseek-v3-mbridge", "bf16"), ("deepseek-v3-mbridge", "mxfp8"),
        ("deepseek-v3-mbridge", "nvfp4"), ("deepseek-v3-mbridge", "fp8-blockwise"),
    }  # fmt: skip
    assert {s.release for s in RELEASE_CASES.values()} == {"v26.08"}


def test_golden_cases_cover_every_workload_and_variant() -> None:
    specs = [s for s in CASES.values() if s.framework != "torch"]
    assert {s.workload for s in specs} == {
        "llama3.1-nemo", "nemotron4-nemo", "llama3.1-mbridge", "llama2-maxtext",
        "qwen3-mbridge", "deepseek-v3-mbridge",
    }  # fmt: skip
    assert {s.variant for s in specs} == {"perf", "profile", "nccltrace", "ckpt-save", "ckpt-load"}


@pytest.mark.parametrize("name", sorted(CASES))
def test_rendered_script_is_valid_bash_without_machine_paths(name: str) -> None:
    text = render_launch_script(CASES[name])
    subprocess.run(["bash", "-n"], input=text, text=True, check=True)
    assert str(Path.cwd()) not in text and str(Path.home()) not in text
    # Absolute paths only where they are fixed conventions of the container or system.
    for path in re.findall(r"(?<![\w$}])/[\w.+-]+(?:/[\w.+-]+)*", text):
        assert path.startswith(("/opt/llmbench/src", "/usr/bin/env")), path
    assert "HF_TOKEN=" not in text  # passed by name only
