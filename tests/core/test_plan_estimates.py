"""``llmbench plan`` budgets a suite whose rows have no published number at their scale
(issue 44: every 512-GPU row of configs/exemplar-v26.08.yaml showed "-"): an estimate
from the nearest published row of the same model (spec.plan's rule), marked as such,
and the suite's total GPU-hours."""

from __future__ import annotations

import json
import math

import pytest
import yaml

from llmbench.cli import main
from llmbench.core.catalog import load_catalog
from llmbench.core.catalog.published import reference_results
from llmbench.core.config import check_config
from llmbench.core.plan import PUBLISHED, estimate_step, plan_summary, plan_table, published_steps
from tests.helpers import HERE, REPO

STEPS = published_steps(reference_results())
PEAKS = {g: load_catalog().gpu(g).peak_tflops for g in ("gb300", "b200")}


def spec(workload: str, size: str, dtype: str, gpu_type: str, gpus: int, release="v26.08"):
    entry = {"workload": workload, "release": release, "sizes": [size], "dtypes": [dtype],
             "gpu_type": gpu_type, "scales": [gpus]}  # fmt: skip
    (run,) = check_config({"sweeps": [entry]}, "config.yaml", host=HERE)[1]
    return run


def published(workload, size, dtype, gpu_type, gpus):
    (row,) = [s for s in STEPS if s[:5] == (workload, size, dtype, gpu_type, gpus)
              and s.release == "v26.08"]  # fmt: skip
    return row


def test_the_same_gpu_and_dtype_keep_tokens_per_gpu_at_another_scale() -> None:
    run = spec("llama3.1-mbridge", "70b", "fp8", "gb300", 512)
    base = published("llama3.1-mbridge", "70b", "fp8", "gb300", 64)
    step_s, basis = estimate_step(run, STEPS)
    assert basis == "estimated from fp8 gb300x64 GBS 256"
    # GBS 2048 on 512 GPUs at the 64-GPU row's tokens/s/GPU (GBS 256): the same step time
    per_gpu = run.seq_len * base.gbs / base.step_time_s / base.gpus
    assert step_s == pytest.approx(run.seq_len * run.global_batch_size / (per_gpu * 512))
    assert step_s == pytest.approx(base.step_time_s * (2048 / 256) / (512 / 64))


def test_a_lower_peak_lowers_the_estimate_and_a_higher_one_never_raises_it() -> None:
    b200 = spec("llama3.1-mbridge", "70b", "fp8", "b200", 512)
    step_s, basis = estimate_step(b200, STEPS)
    assert basis.startswith("estimated from fp8 ") and "x64 GBS 256" in basis
    source = basis.split()[3].split("x")[0]
    base = published("llama3.1-mbridge", "70b", "fp8", source, 64)
    ratio = load_catalog().gpu(source).peak_tflops["fp8"] / PEAKS["b200"]["fp8"]
    assert step_s == pytest.approx(base.step_time_s * max(ratio, 1.0))
    # NVFP4 DeepSeek on GB300 has no published row: from FP8 there, never faster
    fp4 = estimate_step(spec("deepseek-v3-mbridge", "671b", "nvfp4", "gb300", 512), STEPS)
    fp8 = estimate_step(spec("deepseek-v3-mbridge", "671b", "fp8", "gb300", 512), STEPS)
    assert fp4 == (fp8[0], "estimated from fp8 gb300x256 GBS 4096")


def test_another_dtype_on_the_gpu_type_comes_before_the_dtype_elsewhere() -> None:
    _, basis = estimate_step(spec("qwen3-mbridge", "235b-a22b", "bf16", "gb300", 512), STEPS)
    assert basis == "estimated from fp8 gb300x256 GBS 8192"
    bf16, basis = estimate_step(spec("qwen3-mbridge", "235b-a22b", "bf16", "gb300", 256), STEPS)
    fp8 = published("qwen3-mbridge", "235b-a22b", "fp8", "gb300", 256).step_time_s
    assert bf16 == pytest.approx(fp8 * PEAKS["gb300"]["fp8"] / PEAKS["gb300"]["bf16"])


def test_a_published_row_is_used_as_it_is_and_the_cpu_gets_none() -> None:
    run = spec("llama3.1-nemo", "8b", "bf16", "h100", 8, "dgxc-2025")
    step_s, basis = estimate_step(run, STEPS)
    assert (step_s, basis) == (12.27, PUBLISHED)
    tiny = check_config({"sweeps": [{"workload": "tiny-llama", "sizes": ["tiny"],
                                     "dtypes": ["fp32"], "gpu_type": "cpu", "scales": [1]}]},
                        "config.yaml", host=HERE)[1]  # fmt: skip
    plan = plan_table(tiny, STEPS)
    assert math.isnan(plan.est_gpu_hours[0]) and plan.estimate[0].startswith("no published")
    assert plan_summary(plan)["runs_without_estimate"] == 1


def test_the_exemplar_plan_estimates_every_row_and_prints_the_total(capsys) -> None:
    config = REPO / "configs/exemplar-v26.08.yaml"
    assert main(["plan", "--config", str(config), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    runs, summary = data["runs"], data["summary"]
    assert len(runs) == 38 and all(r["est_gpu_hours"] > 0 for r in runs)
    assert all(r["estimate"].startswith("estimated from ") for r in runs)
    assert summary["est_gpu_hours"] == pytest.approx(sum(r["est_gpu_hours"] for r in runs))
    assert (summary["runs_estimated"], summary["runs_without_estimate"]) == (38, 0)
    assert main(["plan", "--config", str(config)]) == 0
    out = capsys.readouterr().out.splitlines()
    table = [line.split() for line in out if line.strip().startswith(("deepseek", "llama", "qwen"))]
    # run_id ... reference_step_time_s est_step_time_s est_runtime_min est_gpu_hours estimate
    assert len(table) == 38 and all(float(row[12]) > 0 and row[15] == "estimated" for row in table)
    assert out[-1] == (
        f"38 runs, up to 128 nodes: {summary['est_gpu_hours']:,.1f} GPU-hours in all (0 at a "
        "published step time; 38 estimated from another scale, GBS, dtype or GPU type; "
        "docs/metrics.md); images to import: none"
    )
    assert yaml.safe_load(config.read_text())["sweeps"]  # the file the header names
