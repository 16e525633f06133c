"""Time limits as parity data (the reference's, cited, or llmbench's own with its reason),
and llmbench's additions to every launch listed among each run's declared differences."""

from __future__ import annotations

import pytest

from llmbench.core.catalog import load_catalog
from llmbench.core.catalog import parity as parity_data
from llmbench.core.config import run_specs, validate_config
from llmbench.core.runspec import RunSpec
from llmbench.launch.launchers import render_launch_script
from tests.helpers import release_runs

CATALOG = load_catalog()


V2608 = release_runs("v26.08")
SPEC = release_runs("dgxc-2025")


# --- time limits ----------------------------------------------------------------------


def _reference_minutes(spec: RunSpec) -> int:
    """The reference's launch.sh time limit (v26.08: EP deepseek_v3 launch.sh L80-84,
    qwen3 launch.sh L66-70, llama3.1 launch.sh L90-95), or llmbench's own declared one."""
    if spec.workload == "deepseek-v3-mbridge":
        return 90 if spec.gpu_type == "h100" else 45
    if spec.workload == "qwen3-mbridge":
        return 120 if spec.size == "235b-a22b" else 60
    if spec.workload == "llama2-maxtext":
        return 60  # the DGXC v24.11.1 sbatch script's --time=1:00:00
    return 120 if spec.size in ("405b", "405b-proxy", "340b") else 30


def test_every_catalog_run_gets_the_reference_time_limit() -> None:
    assert len(V2608) == 143 and len(SPEC) > 100
    for spec in V2608 + SPEC:
        limits = [s for s in spec.parity.settings if s.kind == "limit"]
        assert [s.name for s in limits] == ["time_limit_min"], spec.run_id
        assert spec.limits.time_limit_s == _reference_minutes(spec) * 60, spec.run_id
        assert limits[0].source, spec.run_id


def test_the_235b_h100_run_gets_two_hours_and_deepseek_on_h100_ninety_minutes() -> None:
    by_id = {s.run_id: s for s in V2608}
    assert by_id["qwen3-mbridge_235b-a22b_bf16_h100x256-v26.08_perf"].limits.time_limit_s == 7200
    assert by_id["deepseek-v3-mbridge_671b_fp8_h100x1024-v26.08_perf"].limits.time_limit_s == 5400
    assert by_id["deepseek-v3-mbridge_671b_fp8_gb300x256-v26.08_perf"].limits.time_limit_s == 2700
    assert by_id["qwen3-mbridge_30b-a3b_fp8_gb300x8-v26.08_perf"].limits.time_limit_s == 3600


def test_a_sweep_entry_time_limit_still_wins() -> None:
    row = CATALOG.row("deepseek-v3-mbridge", "671b", "fp8", "h100", 1024, release="v26.08")
    entry = row.sweep_entry(runtime_min=200)
    (spec,) = run_specs(validate_config({"sweeps": [entry], "launcher": "srun"}))
    assert spec.limits.time_limit_s == 200 * 60
    (spec,) = run_specs(validate_config({"sweeps": [row.sweep_entry()], "runtime_min": 7}))
    assert spec.limits.time_limit_s == 7 * 60


def test_a_time_limit_that_is_not_the_references_is_a_declared_difference() -> None:
    for spec in V2608 + SPEC:
        (limit,) = (s for s in spec.parity.settings if s.kind == "limit")
        declared = [d for d in spec.parity.differences if d["name"] == "limit time_limit_min"]
        if limit.addition is not None:  # 405B / 340B of the spec's documents: longer than theirs
            assert spec.size in ("405b", "405b-proxy", "340b"), spec.run_id
            (diff,) = declared
            assert diff["llmbench"] == "120" and diff["reason"].startswith("llmbench's own")
            assert diff["reference"] in ("30 min", "25 min (35 min strong scaling)")
        else:
            assert declared == [], spec.run_id


def test_a_spec_without_limits_takes_the_reference_one_from_its_parity() -> None:
    spec = next(s for s in V2608 if s.workload == "deepseek-v3-mbridge")
    rebuilt = RunSpec.from_dict({**spec.to_dict(), "limits": None})
    assert rebuilt.limits == spec.limits and rebuilt.limits.time_limit_s == 2700


# --- llmbench's additions -------------------------------------------------------------


def _named(spec: RunSpec, word: str) -> list[dict[str, object]]:
    return [d for d in spec.parity.differences if word in str(d["name"])]


def test_nccl_debug_and_the_telemetry_sampler_are_declared_additions() -> None:
    for spec in V2608 + SPEC:
        (nccl,) = _named(spec, "NCCL_DEBUG")
        (sampler,) = _named(spec, "telemetry sampler")
        for diff in (nccl, sampler):
            assert str(diff["reason"]).startswith("llmbench's addition: "), spec.run_id
        script = render_launch_script(spec)
        exported = {line.split("=")[0][len("export ") :] for line in script.splitlines()
                    if line.startswith("export NCCL_DEBUG")}  # fmt: skip
        assert exported and all(name in str(nccl["name"]) for name in exported), spec.run_id
        assert "llmbench.telemetry.sampler" in script


def test_the_additions_follow_the_launch() -> None:
    row = CATALOG.row("qwen3-mbridge", "30b-a3b", "fp8", "gb300", 8, release="v26.08")
    off = validate_config({"sweeps": [row.sweep_entry()], "launcher": "srun",
                           "telemetry": {"enabled": False}})  # fmt: skip
    (spec,) = run_specs(off)
    assert _named(spec, "NCCL_DEBUG") and not _named(spec, "telemetry sampler")
    site = {"namespace": "bench", "pvcs": ["workspace:/workspace:claim"],
            "llmbench_src": "/workspace/llmbench/src"}  # fmt: skip
    k8s = validate_config({"sweeps": [row.sweep_entry()], "launcher": "kubernetes",
                           "kubernetes": site})  # fmt: skip
    (spec,) = run_specs(k8s)
    assert not _named(spec, "NCCL_DEBUG") and not _named(spec, "telemetry sampler")
    assert "NCCL_DEBUG" not in spec.parity.env


@pytest.mark.parametrize("item", parity_data.additions(), ids=lambda a: a["name"][:20])
def test_every_addition_says_why(item: dict[str, object]) -> None:
    assert item["reference"] and item["llmbench"]
    assert str(item["reason"]).startswith("llmbench's addition: ")
