"""Rendered launch.sh files, pinned. Regenerate: LLMBENCH_UPDATE_GOLDEN=1 pytest tests/launch"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from llmbench.launch.launchers import render_launch_script
from tests.launch.cases import golden_cases

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


def test_golden_cases_cover_every_workload_and_variant() -> None:
    specs = [s for s in CASES.values() if s.framework != "torch"]
    assert {s.workload for s in specs} == {
        "llama3.1-nemo", "nemotron4-nemo", "llama3.1-mbridge", "llama2-maxtext"
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
