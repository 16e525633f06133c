"""Verdicts against NVIDIA's performance-summary rows: only at the reference's model, GPU
type, precision recipe and GBS; `approximate` where the GPU count or container differs."""

from __future__ import annotations

import pandas as pd
import pytest

from llmbench.aggregate.reference import builtin_references, compare, published_summaries
from llmbench.core.catalog.published import load_summaries
from tests.aggregate.test_reference import SCALES, published_8b_bf16, sweep_table

SUMMARY_405B_GB300_FP8 = next(
    r for r in load_summaries()
    if (r.workload, r.size, r.gpu_type, r.precision) == ("llama3.1-mbridge", "405b", "gb300",
                                                          "fp8-current")
)  # fmt: skip


def bridge_log_at(gbs: int, tflops: float = 2646.0):
    """A Megatron-Bridge 0.5 log writer (its `Step Time` and iteration lines) at ``gbs``."""

    def write(path, step_time_s: float, steps: int = 50) -> None:
        lines = []
        for i in range(1, steps + 1):
            lines.append(
                f"Step Time : {step_time_s:.4f}s GPU utilization: {tflops}MODEL_TFLOP/s/GPU"
            )
            lines.append(
                f" [2026-08-20 10:00:00] iteration {i:8d}/{steps:8d} | consumed samples: "
                f"{gbs * i:12d} | elapsed time per iteration (ms): {step_time_s * 1000:.1f} | "
                f"learning rate: 3.000000E-05 | global batch size: {gbs:5d} | lm loss: 8.1E+00 |"
                " loss scale: 1.0 | grad norm: 0.042 | number of skipped iterations:   0 | "
                "number of nan iterations:   0 |"
            )
        path.write_text("\n".join(lines) + "\n")

    return write


bridge_log = bridge_log_at(1536)


def v2608_runs(tmp_path, step_time_for, scales=(256,), **config) -> pd.DataFrame:
    sweep = {"workload": "llama3.1-mbridge", "release": "v26.08", "sizes": ["405b"],
             "dtypes": ["fp8"], "gpu_type": "gb300", "scales": list(scales)}  # fmt: skip
    return sweep_table(tmp_path, step_time_for, sweep, bridge_log, 4900e12,
                       container="enroot", **config)  # fmt: skip


def published_step(_gpus: int) -> float:
    return SUMMARY_405B_GB300_FP8.step_time_s


def test_the_summary_row_is_the_one_printed() -> None:
    row = SUMMARY_405B_GB300_FP8
    assert (row.gpus, row.gbs, row.tokens_per_s_per_gpu) == (256, 1536, 1048)
    assert row.container == "nvcr.io/nvidia/nemo:26.06"


def test_same_gbs_gpus_and_container_gives_an_exact_verdict(tmp_path) -> None:
    runs = v2608_runs(tmp_path, published_step,
                      images={"llama3.1-mbridge": "nvcr.io/nvidia/nemo:26.06"})  # fmt: skip
    (run,) = compare(runs, builtin_references()).to_dict("records")
    assert (run["release"], run["precision"], run["model"]) == ("v26.08", "fp8-current",
                                                                "llama3.1-405b")  # fmt: skip
    assert (run["verdict"], run["verdict_basis"], run["verdict_note"]) == ("within", "exact", None)
    assert run["reference_tokens_per_s_per_gpu"] == 1048
    assert (run["reference_gbs"], run["reference_gpus"]) == (1536, 256)
    assert run["reference_source"].startswith("published summary (v26.08): MB:docs/performance")
    # the step time printed to 0.1 ms: tokens/s/GPU within 0.001 % of the row's
    assert abs(run["deviation_pct"]) < 1e-3
    assert run["tokens_per_s_per_gpu"] == pytest.approx(1048, rel=1e-5)
    # the framework's printed TFLOPS and ours, side by side
    assert run["logged_tflops_per_gpu_mean"] == 2646.0
    assert run["achieved_tflops_per_gpu"] > 0


@pytest.mark.parametrize(("factor", "verdict"), [(1.1, "slower"), (0.9, "faster")])
def test_the_verdict_is_on_tokens_per_gpu(tmp_path, factor, verdict) -> None:
    runs = v2608_runs(tmp_path, lambda g: published_step(g) * factor,
                      images={"llama3.1-mbridge": "nvcr.io/nvidia/nemo:26.06"})  # fmt: skip
    (run,) = compare(runs, builtin_references()).to_dict("records")
    assert run["verdict"] == verdict
    assert run["deviation_pct"] == pytest.approx((factor - 1) * 100, abs=1e-3)


def test_another_container_gives_an_approximate_verdict_naming_it(tmp_path) -> None:
    """The v26.08 reference image is nemo:26.06.01; the summary row was measured on 26.06."""
    (run,) = compare(v2608_runs(tmp_path, published_step), builtin_references()).to_dict("records")
    assert run["image"] == "nvcr.io/nvidia/nemo:26.06.01"
    assert (run["verdict"], run["verdict_basis"]) == ("within", "approximate")
    assert run["verdict_note"] == (
        "container nvcr.io/nvidia/nemo:26.06.01, reference nvcr.io/nvidia/nemo:26.06"
    )


def test_another_gbs_gives_no_verdict_and_says_why(tmp_path) -> None:
    """At 512 GPUs the recipe's GBS is 3072; the summary has 405B on GB300 at GBS 1536 only."""
    runs = v2608_runs(tmp_path, published_step, scales=(512,))
    (run,) = compare(runs, builtin_references()).to_dict("records")
    assert run["global_batch_size"] == 3072
    assert pd.isna(run["verdict"]) and pd.isna(run["deviation_pct"])
    assert pd.isna(run["verdict_basis"])
    assert run["verdict_reason"] == (
        "no reference at GBS 3072: the published llama3.1-405b fp8-current rows on gb300 "
        "are at GBS 1536"
    )


def test_another_gpu_count_at_the_same_gbs_is_approximate(tmp_path) -> None:
    """A row at the run's GBS but another GPU count (here the 256-GPU row, moved to 128
    GPUs) still judges tokens/s/GPU, marked approximate with the counts named."""
    summaries = published_summaries()
    at = (summaries.model == "llama3.1-405b") & (summaries.gpu_type == "gb300")
    summaries.loc[at, "gpus"] = 128
    runs = v2608_runs(tmp_path, published_step,
                      images={"llama3.1-mbridge": "nvcr.io/nvidia/nemo:26.06"})  # fmt: skip
    (run,) = compare(runs, builtin_references(), summaries=summaries).to_dict("records")
    assert (run["verdict"], run["verdict_basis"]) == ("within", "approximate")
    assert run["verdict_note"] == "GPUs 256, reference 128"
    assert run["reference_step_time_s"] == pytest.approx(published_step(256))


def test_another_precision_has_no_reference(tmp_path) -> None:
    summaries = published_summaries()
    summaries = summaries[summaries.precision != "fp8-current"]
    (run,) = compare(v2608_runs(tmp_path, published_step), builtin_references(),
                     summaries=summaries).to_dict("records")  # fmt: skip
    assert run["verdict"] == "no_reference" and pd.isna(run["verdict_reason"])


@pytest.mark.parametrize(
    ("config", "basis", "note"),
    [
        ({"container": "enroot"}, "exact", None),
        ({}, "approximate", "container none, reference nvcr.io/nvidia/nemo:25.02.01"),
    ],
)
def test_spec_table_references_name_their_container_too(tmp_path, config, basis, note) -> None:
    runs = compare(sweep_table(tmp_path, published_8b_bf16().__getitem__, **config),
                   builtin_references())  # fmt: skip
    assert runs.verdict.tolist() == ["within"] * len(SCALES)
    assert runs.verdict_basis.tolist() == [basis] * len(SCALES)
    assert runs.verdict_note.astype(object).where(runs.verdict_note.notna(), None).tolist() == [
        note
    ] * len(SCALES)
    assert runs.reference_gbs.tolist() == runs.global_batch_size.tolist()
