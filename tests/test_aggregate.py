"""Run rows: derived metrics by hand, and a non-zero exit is never a success."""

import math

import pytest

from llmbench.aggregate import Peak, outcome, run_row, runs_table
from llmbench.config import run_specs, validate_config


def record(exit_code=0, gpus=2):
    cfg = validate_config(
        {
            "sweeps": [
                {
                    "workload": "tiny-llama",
                    "sizes": ["tiny"],
                    "dtypes": ["fp32"],
                    "gpu_type": "cpu",
                    "scales": [gpus],
                }
            ]
        }
    )
    (spec,) = run_specs(cfg)
    return {
        "run_id": spec.run_id,
        "attempt": 1,
        "exit_code": exit_code,
        "log": "attempt-1/train.log",
        "started_at": "2026-01-01T00:00:00.000+00:00",
        "finished_at": "2026-01-01T00:00:30.500+00:00",
        "spec": spec.to_dict(),
        "provenance": {"host": "h", "llmbench_version": "0"},
    }


SUMMARY = {
    "status": "success",
    "reason": "",
    "step_time_mean_s": 0.5,
    "step_time_std_s": 0.01,
    "step_time_last_s": 0.5,
    "n_iterations": 50,
    "max_iteration": 49,
    "tflops_per_gpu_mean": math.nan,
}


def test_derived_metrics_by_hand() -> None:
    rec = record()
    row = run_row(rec, SUMMARY, Peak(1e11, "measured"), 1e12)
    spec = rec["spec"]
    seq, gbs = spec["seq_len"], spec["global_batch_size"]
    shape = spec["model"]
    s, L, h, f, a, g, V = (
        shape[k]
        for k in ("seq_len", "layers", "hidden", "ffn_hidden", "heads", "query_groups", "vocab")
    )
    flops = s * (12 * L * h * h * (1 + g / a + s / h) + 18 * L * f * h + 6 * V * h)
    assert row["model_flops_per_sample"] == pytest.approx(flops)
    assert row["tokens_per_s"] == pytest.approx(seq * gbs / 0.5)
    assert row["tokens_per_s_per_gpu"] == pytest.approx(seq * gbs / 0.5 / 2)
    assert row["days_to_train"] == pytest.approx(1e12 / (seq * gbs / 0.5) / 86400)
    assert row["mfu"] == pytest.approx(gbs * flops / 0.5 / 2 / 1e11)
    assert row["achieved_tflops_per_gpu"] == pytest.approx(gbs * flops / 0.5 / 2 / 1e12)
    assert row["duration_s"] == pytest.approx(30.5)


def test_nonzero_exit_is_failed_even_with_a_full_log() -> None:
    assert outcome(1, SUMMARY) == ("failed", "exit_code_1")
    assert outcome(0, SUMMARY) == ("success", "")
    assert outcome(137, {"status": "failed", "reason": "cuda_oom"}) == ("failed", "cuda_oom")
    killed = {"status": "incomplete", "reason": "window_incomplete"}
    assert outcome(None, killed, "time_limit") == ("failed", "time_limit")


def test_runs_without_step_time_have_no_metrics_but_a_row() -> None:
    summary = {
        **SUMMARY,
        "status": "no_data",
        "step_time_mean_s": math.nan,
        "n_iterations": 0,
        "max_iteration": -1,
    }
    table = runs_table([run_row(record(exit_code=1), summary, None, 1e12)])
    assert len(table) == 1
    assert table.status.iloc[0] == "failed"
    assert math.isnan(table.tokens_per_s.iloc[0]) and math.isnan(table.mfu.iloc[0])
    assert str(table.gpus.dtype) == "int64"
