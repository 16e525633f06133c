"""Profiling a subset of ranks: rank sets, config errors, and the wrapper run by real bash."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from llmbench.core.profiling import parse_ranks
from llmbench.errors import ConfigError
from llmbench.launch.variants import RANK_WRAPPER, variant_parts
from tests.launch.cases import profile_spec


@pytest.mark.parametrize(
    ("text", "world", "expected"),
    [
        ("all", 4, (0, 1, 2, 3)),
        ("0-8", 16, tuple(range(9))),
        ("0-8", 8, tuple(range(8))),  # a range past the last rank stops there
        ("3,0-1,1", 8, (0, 1, 3)),
    ],
)
def test_parse_ranks(text: str, world: int, expected: tuple[int, ...]) -> None:
    assert parse_ranks(text, world) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [("9-3", "ends before it starts"), ("64", "selects no rank"), ("0-", "not a rank set")],
)
def test_bad_rank_sets_name_the_value(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as err:
        parse_ranks(text, 16)
    assert text in str(err.value) and "\n" not in str(err.value)


def test_config_rejects_a_rank_set_outside_the_job() -> None:
    with pytest.raises(ConfigError, match=r"profile.ranks: '16-20' selects no rank of a 8-rank"):
        profile_spec("llama3.1-nemo", "8b", "h100", 8, ranks="16-20")


def test_config_rejects_reversed_steps() -> None:
    with pytest.raises(ConfigError, match=r"profile.steps: \[12, 10\]"):
        profile_spec("llama3.1-nemo", "8b", "h100", 8, steps=[12, 10])


def test_document_defaults_and_overrides_reach_the_spec() -> None:
    spec = profile_spec("nemotron4-nemo", "340b", "gb200", 128)
    assert spec.profile == {"steps": [45, 50], "ranks": "0-8", "gpu_metrics": False}
    every = profile_spec("llama3.1-nemo", "8b", "h100", 8)
    assert every.profile["ranks"] == "all" and every.profile["steps"] == [20, 25]
    assert variant_parts(every).prefix[0] == "nsys"  # no wrapper when every rank is profiled


def test_wrapper_profiles_exactly_the_selected_ranks(tmp_path: Path) -> None:
    spec = profile_spec("llama3.1-nemo", "8b", "h100", 16, ranks="0,8-9", gpu_metrics=True)
    parts = variant_parts(spec)
    assert parts.prefix == ["bash", RANK_WRAPPER]
    # launch.sh's own lines write the wrapper; a stand-in nsys reports what it was given.
    subprocess.run(["bash", "-c", "\n".join(parts.setup_lines)], cwd=tmp_path, check=True)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "nsys"
    fake.write_text('#!/usr/bin/env bash\necho "NSYS $*"\n')
    fake.chmod(0o755)
    profiled = []
    for rank in range(spec.gpus):
        out = subprocess.run(
            ["bash", RANK_WRAPPER, "echo", "train", "rank"],
            cwd=tmp_path,
            env={
                **os.environ,
                "PATH": f"{bin_dir}:{os.environ['PATH']}",
                "SLURM_PROCID": str(rank),
            },
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        assert out.endswith("echo train rank") or out == "train rank"
        if out.startswith("NSYS "):
            assert "--gpu-metrics-devices=all" in out and "profile_%q{SLURM_JOB_ID}" in out
            profiled.append(rank)
    assert profiled == [0, 8, 9]
